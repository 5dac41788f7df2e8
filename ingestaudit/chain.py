"""The stage chain after parsing, for one document and one pipeline: clean -> chunk -> embed, with offset maps.

Runs in the worker next to the parser. It returns a `DocChunks`: the compact artefact the corpus-level retrieval and
index stages receive (chunk texts, true pages and sections, filterable metadata, vectors, and for every evidence item
of the questions how much of it survived parsing, cleaning and which chunks hold it). Offsets compose as DESIGN.md
says: chunk (cleaned text) -> parsed text (the cleaner's map) -> reference text (the extraction alignment).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ingestaudit.measurement import State
from ingestaudit.model import Chunk, ParsedDocument

DEFAULT_MIN_SPAN_COVERAGE = 0.5
"""A chunk holds an evidence span when it covers at least this share of the span's characters (DESIGN.md)."""


@dataclass(frozen=True)
class EvidenceRef:
    """One evidence item of one question, as a document's worker sees it (``key`` = ``(question id, item index)``)."""

    key: tuple[str, int]
    kind: str  # span | section | page | doc
    start: int | None = None
    end: int | None = None
    section: str | None = None
    page: int | None = None


@dataclass
class EvidenceTrace:
    """How far one evidence item got through this document's chain.

    Attributes:
        parsed: share of the item's reference characters that survive in the parsed text (identical characters of
            the extraction alignment); 1.0 or 0.0 for section, page and document items (found or not).
        cleaned: the same share in the cleaned text.
        holding: chunk indexes that hold the item (span: coverage >= ``min_span_coverage``; section: the chunk's
            section path ends with the heading; page: the chunk starts on the page; doc: every chunk).
        best_chunk_coverage: the largest single-chunk coverage of a span (1.0/0.0 for other kinds).
        covered: per chunk index touching a span, the covered reference intervals (for span recall).
    """

    parsed: float
    cleaned: float
    holding: list[int] = field(default_factory=list)
    best_chunk_coverage: float = 0.0
    covered: dict[int, list[tuple[int, int]]] = field(default_factory=dict)


@dataclass
class DocChunks:
    """What the chain hands to corpus-level stages for one document x pipeline.

    ``state`` is ``ok`` when chunks exist; otherwise the document contributes no chunk and ``reason`` says why.
    ``vectors`` is float32 (n_chunks, dim), L2-normalised, or None when no embedding ran.
    """

    doc_id: str
    doc_class: str
    state: State
    reason: str = ""
    texts: list[str] = field(default_factory=list)
    pages: list[int | None] = field(default_factory=list)
    sections: list[tuple[str, ...]] = field(default_factory=list)
    metadata: list[dict[str, Any]] = field(default_factory=list)
    vectors: np.ndarray | None = None
    evidence: dict[tuple[str, int], EvidenceTrace] = field(default_factory=dict)
    tokens: list[int] = field(default_factory=list)
    embed_stats: dict[str, Any] = field(default_factory=dict)
    intervals: list[tuple[int, int] | None] = field(default_factory=list)  # located [start, end) in the cleaned text


@dataclass
class ChainOutput:
    """Everything the chunking auditor reads: the cleaned text and its maps, the chunks and their checks."""

    cleaned: str
    clean_to_parsed: Any  # OffsetMap
    to_reference: Any | None  # OffsetMap cleaned -> reference, None without reference text
    layout: Any  # TextLayout in cleaned coordinates
    chunks: list[Chunk]
    located: list[tuple[int, int] | None]
    normalises_whitespace: bool
    tokens: list[int]
    max_tokens: int | None
    doc: DocChunks
    min_span_coverage: float = DEFAULT_MIN_SPAN_COVERAGE
    special_tokens: int = 0  # word pieces the embedder adds to every input ([CLS] and [SEP] for BERT models)
    embed_sentences: Any = None  # texts -> L2-normalised vectors with the pipeline's embedder


def _covered_runs(positions: np.ndarray) -> list[tuple[int, int]]:
    """Sorted distinct positions -> maximal runs ``[(start, end)]``."""
    if positions.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(positions) != 1)
    starts = np.concatenate(([positions[0]], positions[breaks + 1]))
    ends = np.concatenate((positions[breaks] + 1, [positions[-1] + 1]))
    return [(int(s), int(e)) for s, e in zip(starts, ends)]


def trace_evidence(ev: EvidenceRef, *, parsed_to_ref: Any | None, cleaned_to_ref: Any | None,
                   chunk_positions: list[np.ndarray], chunk_sections: list[tuple[str, ...]],
                   chunk_pages: list[int | None], parsed_layout: Any, cleaned_text: str, parsed: ParsedDocument,
                   min_span_coverage: float) -> EvidenceTrace:
    """Where one evidence item survives. Span items are measured in reference code points through the composed
    offset maps; a section item survives parsing when the parser emitted that heading (exact text after white-space
    collapse and case folding), a page item when the parsed document has that page, a document item when the parsed
    text is not empty; such items survive cleaning when the cleaned text is not empty."""
    if ev.kind == "span":
        if parsed_to_ref is None or cleaned_to_ref is None:
            return EvidenceTrace(0.0, 0.0)
        length = ev.end - ev.start  # type: ignore[operator]
        parsed_share = parsed_to_ref.covered(0, parsed_to_ref.source.size, ev.start, ev.end) / length
        cleaned_share = cleaned_to_ref.covered(0, cleaned_to_ref.source.size, ev.start, ev.end) / length
        trace = EvidenceTrace(parsed_share, cleaned_share)
        for i, pos in enumerate(chunk_positions):
            inside = pos[(pos >= ev.start) & (pos < ev.end)]
            if inside.size:
                trace.covered[i] = _covered_runs(inside)
                share = inside.size / length
                trace.best_chunk_coverage = max(trace.best_chunk_coverage, share)
                if share >= min_span_coverage:
                    trace.holding.append(i)
        return trace
    if ev.kind == "section":
        want = _norm(ev.section or "")
        found = any(_norm(h.text) == want for h in parsed_layout.headings)
        alive = 1.0 if found else 0.0
        trace = EvidenceTrace(alive, alive if cleaned_text.strip() else 0.0)
        trace.holding = [i for i, path in enumerate(chunk_sections) if path and _norm(path[-1]) == want]
    elif ev.kind == "page":
        alive = 1.0 if ev.page is not None and ev.page <= max(len(parsed.pages), 1) else 0.0
        trace = EvidenceTrace(alive, alive if cleaned_text.strip() else 0.0)
        trace.holding = [i for i, p in enumerate(chunk_pages) if p == ev.page]
    else:
        alive = 1.0 if parsed.text.strip() else 0.0
        trace = EvidenceTrace(alive, alive if cleaned_text.strip() else 0.0)
        trace.holding = list(range(len(chunk_positions)))
    trace.best_chunk_coverage = 1.0 if trace.holding else 0.0
    return trace


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


class ChunkOutputError(ValueError):
    """A chunker returned output no audit can be computed on (a non-chunk, empty text, offsets outside the text or
    reversed); the message names the first such chunk. The document gets ``error`` rows for this pipeline."""


def check_chunks(chunks: list[Any], n: int) -> None:
    """Reject impossible chunker output for a cleaned text of ``n`` code points (a wrong but possible pointer, such
    as a first-occurrence search's, is measured by ``chunking.attribution`` instead).

    Raises:
        ChunkOutputError: see the class.
    """
    for i, c in enumerate(chunks):
        if not isinstance(c, Chunk):
            raise ChunkOutputError(f"chunk {i} is a {type(c).__name__}, not a Chunk")
        if not c.text.strip():
            raise ChunkOutputError(f"chunk {i} is empty")
        for name in ("start", "end"):
            v = getattr(c, name)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0 or v > n):
                raise ChunkOutputError(f"chunk {i}: {name} {v!r} is outside the text ({n} code points)")
        if c.start is not None and c.end is not None and c.end < c.start:
            raise ChunkOutputError(f"chunk {i}: end {c.end} is before start {c.start}")


def _clean(cleaner: Any, parsed: ParsedDocument) -> str:
    """The pipeline cleaner's output; the ``precomputed`` cleaner without a ``clean_text`` keeps the parsed text."""
    from ingestaudit.stages.cleaners.base import CleanerInput

    inp = CleanerInput.from_parsed(parsed)
    if cleaner.name == "precomputed" and not isinstance(inp.extras.get("clean_text"), str):
        return parsed.text
    return cleaner.clean(inp).text


def run_chain(parsed: ParsedDocument, *, doc_id: str, doc_class: str, reference: str | None,
              metadata: dict[str, Any] | None, cleaner: Any, chunker: Any, embedder: Any | None,
              evidence: tuple[EvidenceRef, ...], min_span_coverage: float) -> ChainOutput:
    """Clean, chunk and embed one parsed document, and trace its evidence items.

    Args:
        parsed: the parser's output.
        reference: the document's reference text (None without one: no span can be traced).
        metadata: the truth ``metadata`` attached to every chunk (chunk metadata of the chunker wins on a clash).
        cleaner, chunker: stage implementations (`Cleaner`, `Chunker`).
        embedder: an `Embedder` (with its cache) or None when no stage needs vectors or token counts.
        evidence: the questions' evidence items in this document.
        min_span_coverage: share of a span's characters one chunk must cover to hold it.

    Raises:
        whatever the cleaner, chunker or embedder raise (the runner turns it into ``error`` rows for this document
        and pipeline).
    """
    from ingestaudit.metrics.alignment import align_chars
    from ingestaudit.metrics.chunking import locate_chunks
    from ingestaudit.metrics.offsets import OffsetMap
    from ingestaudit.stages.chunkers.base import ChunkerInput, block_spans_from_parsed
    from ingestaudit.textlayout import TextLayout

    cleaned = _clean(cleaner, parsed)
    clean_map = (OffsetMap.identity(len(cleaned)) if cleaned == parsed.text
                 else OffsetMap.from_alignment(cleaned, parsed.text))
    parsed_to_ref = to_ref = None
    if reference is not None:
        parsed_to_ref = OffsetMap.from_char_alignment(align_chars(reference, parsed.text))
        to_ref = clean_map.compose(parsed_to_ref)
    parsed_layout = TextLayout.from_parsed(parsed)
    layout = parsed_layout.through(clean_map)
    inp = ChunkerInput(text=cleaned, page_starts=tuple(layout.page_starts),
                       headings=tuple((h.start, h.end, h.level, h.text) for h in layout.headings),
                       block_spans=tuple(block_spans_from_parsed(parsed, cleaned, clean_map)),
                       extras=dict(parsed.extras))
    if getattr(chunker, "fallback", None) is not None and not isinstance(parsed.extras.get("chunks"), list):
        chunker = chunker.fallback  # an output without chunks: the default chunker runs on it
    chunks = list(chunker.chunk(inp, embedder))
    check_chunks(chunks, len(cleaned))
    located = locate_chunks(cleaned, chunks)
    texts = [c.text for c in chunks]
    pages = [layout.page_at(loc[0]) if loc else None for loc in located]
    sections = [tuple(layout.section_path_at(loc[0])) if loc else () for loc in located]
    meta = [{**(metadata or {}), **dict(c.metadata)} for c in chunks]
    positions = [to_ref.covered_positions(loc[0], loc[1]) if (loc and to_ref is not None)
                 else np.zeros(0, dtype=np.int64) for loc in located]
    doc = DocChunks(doc_id, doc_class, State.OK if chunks else State.NO_PREDICTION,
                    "" if chunks else "the chunker returned no chunk", texts, pages, sections, meta,
                    intervals=list(located))
    tokens: list[int] = []
    if embedder is not None and texts:
        tokens = list(embedder.count_tokens(texts))
        doc.vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
        doc.tokens = tokens
    for ev in evidence:
        doc.evidence[ev.key] = trace_evidence(
            ev, parsed_to_ref=parsed_to_ref, cleaned_to_ref=to_ref, chunk_positions=positions,
            chunk_sections=sections, chunk_pages=pages, parsed_layout=parsed_layout, cleaned_text=cleaned,
            parsed=parsed, min_span_coverage=min_span_coverage)
    return ChainOutput(cleaned, clean_map, to_ref, layout, chunks, located,
                       bool(getattr(chunker, "normalises_whitespace", False)), tokens,
                       embedder.max_seq_length() if embedder is not None else None, doc, min_span_coverage,
                       embedder.special_tokens() if embedder is not None else 0,
                       embedder.embed if embedder is not None else None)
