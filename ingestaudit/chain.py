"""The stage chain after parsing, for one document and one pipeline: clean -> chunk -> embed, with offset maps.

Runs in the worker next to the parser. It returns a `DocChunks`: the compact artefact the corpus-level retrieval and
index stages receive (chunk texts, true pages and sections, filterable metadata, vectors, and for every evidence item
of the questions how much of it survived parsing, cleaning and which chunks hold it). Offsets compose as DESIGN.md
says: chunk (cleaned text) -> parsed text (the cleaner's map) -> reference text (the extraction alignment).

The clean step (`clean_step`) runs first and on its own: its artefact `Cleaning` (what the pipeline's cleaner made
of the parsed output and of the truth's ``boilerplate.text``) is what the boilerplate auditor reads, also when only
that stage runs (no chunk, no embedding) or a later step fails.

**A cleaner that cannot handle a document** (it raises `UnsupportedInput`, the reason of `Cleaner.supports`:
``trafilatura`` without raw HTML, ``repeated-lines`` on one page) does not apply to it: the chain chunks the parsed
text unchanged (identity offset map) and says so (`ChainOutput.passed_through`, a warning of the document in the
report). So every pipeline of a cleaner sweep indexes the same documents and answers the same questions; a smaller
index (the document's chunks missing) would make retrieval easier and that pipeline look best. The boilerplate
auditor still reports the cleaner ``skipped`` there. Any other exception of the cleaner is the document's ``error``.
"""

from __future__ import annotations

import re

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ingestaudit.errors import ChunkingError
from ingestaudit.measurement import State
from ingestaudit.metrics.chunking import DEFAULT_MIN_SPAN_COVERAGE, evidence_coverage
from ingestaudit.metrics.layout import DEFAULT_THRESHOLD as DEFAULT_HEADING_THRESHOLD
from ingestaudit.metrics.layout import heading_matches
from ingestaudit.model import Chunk, ParsedDocument
from ingestaudit.step_times import timed

__all__ = ["DEFAULT_HEADING_THRESHOLD", "DEFAULT_MIN_SPAN_COVERAGE", "ChainOutput", "ChunkOutputError", "CleanAttempt",
           "Cleaning", "DocChunks", "EvidenceRef", "EvidenceTrace", "check_chunks", "clean_step", "run_chain",
           "numbering", "section_in_reference", "section_matches", "trace_evidence"]


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
        offsets: per chunk index of ``covered``, where each covered interval starts in the chunk (characters from
            the chunk's located start in the cleaned text; a context budget that cuts the chunk keeps what lies
            before the cut: `ingestaudit.metrics.context.budget_recall`).
        label_unmatched: a section item whose label matches no heading of the parsed text nor any line of the
            reference text (`section_in_reference`): the label, not the parser, is at fault (waterfall outcome
            ``label_unmatched``).
    """

    parsed: float
    cleaned: float
    holding: list[int] = field(default_factory=list)
    best_chunk_coverage: float = 0.0
    covered: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    offsets: dict[int, list[int]] = field(default_factory=dict)
    label_unmatched: bool = False


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
    embed_stats: dict[str, Any] = field(default_factory=dict)  # the embedder's counter increments for these chunks
    intervals: list[tuple[int, int] | None] = field(default_factory=list)  # located [start, end) in the cleaned text
    ref_intervals: list[tuple[int, int] | None] = field(default_factory=list)  # the smallest reference interval
    # holding every reference character a chunk reaches (None: not located, or no reference text)
    labelled: dict[str, Any] | None = None  # fields the metadata step changed -> the truth's value (None: unset)


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
    block_spans: tuple[tuple[int, int, str], ...] = ()  # the parser's blocks in cleaned coordinates, as chunked
    passed_through: str = ""  # the cleaner could not handle the document: why (the parsed text was chunked as is)


def _covered_runs(positions: np.ndarray) -> list[tuple[int, int]]:
    """Sorted distinct positions -> maximal runs ``[(start, end)]``."""
    if positions.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(positions) != 1)
    starts = np.concatenate(([positions[0]], positions[breaks + 1]))
    ends = np.concatenate((positions[breaks] + 1, [positions[-1] + 1]))
    return [(int(s), int(e)) for s, e in zip(starts, ends)]


def _run_offsets(runs: list[tuple[int, int]], to_ref: Any, located: tuple[int, int] | None) -> list[int]:
    """Where each reference run starts in a chunk located at ``located`` (cleaned coordinates): the start of the
    run's preimage in the cleaned text minus the chunk's start (0 when the chunk was not located: its runs are then
    empty, since an unlocated chunk covers no reference position)."""
    out = []
    for s, e in runs:
        pre = to_ref.preimage(s, e)
        out.append(max(0, pre[0] - located[0]) if pre is not None and located is not None else 0)
    return out


def numbering(text: str) -> list[str]:
    """A heading's numbering: its word tokens (``\\w+`` runs, lower-cased) that hold a digit or are one character
    long, in order ("5.2 Results" -> ["5", "2"], "Appendix B" -> ["b"])."""
    return [t for t in re.findall(r"\w+", text.lower()) if len(t) == 1 or any(c.isdigit() for c in t)]


def section_matches(label: str, heading: str, threshold: float = DEFAULT_HEADING_THRESHOLD) -> bool:
    """Whether a section evidence label names ``heading``: `ingestaudit.metrics.layout.heading_matches` at
    ``threshold`` (the layout audit's similarity) AND the same `numbering`. Similarity alone matched siblings:
    "5.1 Results" / "5.2 Results" 0.91, "Appendix A" / "Appendix B" 0.9, so a chunk under 5.2 held 5.1's evidence;
    "5.2 Quantitative Results" still matches "5.2 Quantitative results:" (0.96, numbering ["5", "2"] both)."""
    return heading_matches(label, heading, threshold) and numbering(label) == numbering(heading)


def section_in_reference(label: str, reference: str, threshold: float = DEFAULT_HEADING_THRESHOLD) -> bool:
    """Whether a section label matches a heading of the reference text: a line of it (Markdown ``#`` marks and
    white space stripped) that `section_matches` the label at ``threshold``."""
    return any(section_matches(label, line.strip().lstrip("#").strip(), threshold)
               for line in reference.splitlines() if line.strip())


def trace_evidence(ev: EvidenceRef, *, parsed_to_ref: Any | None, cleaned_to_ref: Any | None,
                   chunk_positions: list[np.ndarray], chunk_sections: list[tuple[str, ...]],
                   chunk_pages: list[int | None], parsed_layout: Any, cleaned_text: str, parsed: ParsedDocument,
                   min_span_coverage: float, chunk_intervals: list[tuple[int, int] | None] | None = None,
                   cleaned_layout: Any | None = None, reference: str | None = None,
                   heading_threshold: float = DEFAULT_HEADING_THRESHOLD) -> EvidenceTrace:
    """Where one evidence item survives. Span items are measured in reference code points through the composed
    offset maps, a chunk's share of the span by `ingestaudit.metrics.chunking.evidence_coverage` (the one definition
    of "a chunk holds a span"); a section item survives parsing when the parser emitted a heading that matches its
    label (`section_matches`: the layout audit's similarity at ``heading_threshold``, its threshold, and the same
    numbering), a page item when the parsed document has that page, a document item when the parsed text is not
    empty; such items survive cleaning when the cleaned text is not empty. A section item no parsed heading matches
    is ``label_unmatched`` when no line of the ``reference`` text matches it either (`section_in_reference`).

    A chunk holds a section item when its section path ends with a matching heading (it starts inside the section)
    or its located interval (``chunk_intervals``, cleaned coordinates) contains the start of a matching heading in
    ``cleaned_layout`` (it starts under an earlier heading and runs into the section: one chunk for a whole short
    document holds each of its sections)."""
    if ev.kind == "span":
        if parsed_to_ref is None or cleaned_to_ref is None:
            return EvidenceTrace(0.0, 0.0)
        length = ev.end - ev.start  # type: ignore[operator]
        parsed_share = parsed_to_ref.covered(0, parsed_to_ref.source.size, ev.start, ev.end) / length
        cleaned_share = cleaned_to_ref.covered(0, cleaned_to_ref.source.size, ev.start, ev.end) / length
        trace = EvidenceTrace(parsed_share, cleaned_share)
        cov = evidence_coverage(ev.start, ev.end, chunk_positions, min_span_coverage)  # type: ignore[arg-type]
        trace.best_chunk_coverage = cov.best
        trace.holding = [i for i, share in enumerate(cov.shares) if share >= min_span_coverage]
        for i, share in enumerate(cov.shares):
            if share > 0:
                pos = chunk_positions[i]
                trace.covered[i] = _covered_runs(pos[(pos >= ev.start) & (pos < ev.end)])
                trace.offsets[i] = _run_offsets(trace.covered[i], cleaned_to_ref,
                                                (chunk_intervals or [None] * len(chunk_positions))[i])
        return trace
    if ev.kind == "section":
        label = ev.section or ""

        def want(text: str) -> bool:
            return section_matches(label, text, heading_threshold)

        found = any(want(h.text) for h in parsed_layout.headings)
        alive = 1.0 if found else 0.0
        trace = EvidenceTrace(alive, alive if cleaned_text.strip() else 0.0)
        trace.label_unmatched = not found and reference is not None and not section_in_reference(
            label, reference, heading_threshold)
        starts = [h.start for h in getattr(cleaned_layout, "headings", ()) if want(h.text)]
        intervals = chunk_intervals or [None] * len(chunk_sections)
        trace.holding = [i for i, (path, iv) in enumerate(zip(chunk_sections, intervals))
                         if (path and want(path[-1]))  # starts inside the section
                         or (iv is not None and any(iv[0] <= st < iv[1] for st in starts))]  # runs into it
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


class ChunkOutputError(ChunkingError, ValueError):
    """A chunker returned output no audit can be computed on (a non-chunk, empty text, offsets outside the text or
    reversed, chunks overlapping more than the chunker declares); the message names the first such chunk. The
    document gets ``error`` rows for this pipeline."""


def check_chunks(chunks: list[Any], n: int, max_overlap: int | None = None) -> None:
    """Reject impossible chunker output for a cleaned text of ``n`` code points.

    Impossible: an item that is not a `Chunk`, an empty (white-space only) text, an offset that is not an int in
    ``[0, n]``, ``end < start``, and overlapping nonsense: with ``max_overlap`` declared (`Chunker.max_overlap`, in
    code points), a chunk whose pointer starts at or after the previous pointer's start and shares more than
    ``max_overlap`` code points with it. A wrong but possible pointer is measured by ``chunking.attribution``
    instead, never rejected: a pointer that goes backwards (starts before the previous chunk's start, what a
    first-occurrence search gives on repeated text) is its ``out_of_order`` failure, and a chunker that declares no
    overlap bound has its overlaps left unchecked.

    Raises:
        ChunkOutputError: see the class.
    """
    prev: tuple[int, int, int] | None = None  # (index, start, end) of the previous chunk with a pointer
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
        if c.start is None or c.end is None:
            continue
        if max_overlap is not None and prev is not None and c.start >= prev[1]:
            shared = min(c.end, prev[2]) - c.start
            if shared > max_overlap:
                raise ChunkOutputError(f"chunk {i} [{c.start}, {c.end}) shares {shared} code points with chunk "
                                       f"{prev[0]} [{prev[1]}, {prev[2]}), more than the chunker's declared "
                                       f"overlap of {max_overlap}")
        prev = (i, c.start, c.end)


@dataclass(frozen=True)
class CleanAttempt:
    """One call of the pipeline's cleaner on one input.

    Attributes:
        result: what ``Cleaner.clean`` returned (None when it raised).
        error: the exception it raised, or None.
        unsupported: ``error`` is `UnsupportedInput` (the input lacks what the cleaner reads: `Cleaner.supports`).
        valid: ``result`` is a `CleanResult` whose ``text`` is a string.
    """

    result: Any = None
    error: Exception | None = None
    unsupported: bool = False
    valid: bool = False


@dataclass(frozen=True)
class Cleaning:
    """The clean step's artefact of one document x pipeline: the pipeline's cleaner run once on each input.

    Attributes:
        cleaner: the pipeline's cleaner as the pipeline names it (``none``, ``trafilatura``, ``module:Class``...).
        reads: what the cleaner reads (`Cleaner.reads`: ``text``, ``pages``, ``blocks``, ``html``, ``extras``).
        parsed: the cleaner on the parser's output (`CleanerInput.from_parsed`; an HTML cleaner reads the source's
            raw HTML). The ``precomputed`` cleaner on an output without ``clean_text`` keeps the parsed text
            (result ``CleanResult(parsed.text)``, the chain's input unchanged).
        labelled: the cleaner on the truth's ``boilerplate.text`` when the clean step was given one
            (`CleanerInput.from_text`, with the parsed output's ``extras`` only when the parsed text equals that
            text: a precomputed ``clean_text`` is that text's cleaned form only then); None otherwise.
    """

    cleaner: str
    reads: str
    parsed: CleanAttempt
    labelled: CleanAttempt | None = None


def _attempt(cleaner: Any, inp: Any) -> CleanAttempt:
    from ingestaudit.stages.cleaners.base import CleanResult, UnsupportedInput

    try:
        result = cleaner.clean(inp)
    except Exception as exc:  # kept for the readers; the chain re-raises it (`run_chain`)
        return CleanAttempt(error=exc, unsupported=isinstance(exc, UnsupportedInput))
    return CleanAttempt(result, valid=isinstance(result, CleanResult) and isinstance(result.text, str))


def clean_step(cleaner: Any, parsed: ParsedDocument, *, name: str | None = None,
               labelled_text: str | None = None) -> Cleaning:
    """Run the pipeline's cleaner on the parser's output and, when ``labelled_text`` (the truth's
    ``boilerplate.text``) is given, on that text too. Never raises for the cleaner's failure: `Cleaning` holds
    what it returned or raised.

    Args:
        cleaner: a `ingestaudit.stages.cleaners.base.Cleaner`.
        name: the pipeline's name for the cleaner (default ``cleaner.name``).
    """
    from ingestaudit.stages.cleaners.base import CleanerInput, CleanResult

    with timed("clean"):
        return _clean_step(cleaner, parsed, name, labelled_text, CleanerInput, CleanResult)


def _clean_step(cleaner: Any, parsed: ParsedDocument, name: str | None, labelled_text: str | None,
                CleanerInput: Any, CleanResult: Any) -> Cleaning:
    inp = CleanerInput.from_parsed(parsed)
    if cleaner.name == "precomputed" and not isinstance(inp.extras.get("clean_text"), str):
        on_parsed = CleanAttempt(CleanResult(inp.text, {"kept": "no precomputed clean_text: the parsed text is "
                                                                "kept"}), valid=True)
    else:
        on_parsed = _attempt(cleaner, inp)
    on_labelled = None
    if labelled_text is not None:
        extras = parsed.extras if parsed.text == labelled_text else {}
        on_labelled = _attempt(cleaner, CleanerInput.from_text(labelled_text, extras=extras))
    return Cleaning(name or cleaner.name, getattr(cleaner, "reads", "text"), on_parsed, on_labelled)


def _clean(cleaning: Cleaning, parsed: ParsedDocument) -> tuple[str, Any]:
    """The clean step's output on the parsed text and its offset map to the parsed text.

    The map is the identity when the output equals the parsed text; the exact map of the cleaner's kept pieces
    (`CleanResult.pieces`, a line- or block-removal cleaner) when it gives them; else a Levenshtein alignment of the
    output onto the parsed text (a rewriting cleaner, `OffsetMap.from_alignment`).

    A cleaner that cannot handle the document (`CleanAttempt.unsupported`) passes the parsed text through unchanged
    with the identity map (module docstring).

    Raises:
        whatever else the cleaner raised on the parsed output (`CleanAttempt.error`).
        ValueError: the cleaner's pieces do not fit the texts, or claim characters that differ between them.
    """
    from ingestaudit.metrics.offsets import OffsetMap

    source = parsed.text or ""
    if cleaning.parsed.unsupported:
        return source, OffsetMap.identity(len(source))
    if cleaning.parsed.error is not None:
        raise cleaning.parsed.error
    result = cleaning.parsed.result
    cleaned = result.text
    if cleaned == source:
        return cleaned, OffsetMap.identity(len(cleaned))
    pieces = getattr(result, "pieces", None)
    if pieces is None:
        return cleaned, OffsetMap.from_alignment(cleaned, source)
    try:
        offset_map = OffsetMap.from_pieces(len(cleaned), len(source), pieces)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cleaner {cleaning.cleaner!r}: its offset pieces do not fit the texts ({exc})") from None
    for out_start, in_start, length in pieces:
        if cleaned[out_start:out_start + length] != source[in_start:in_start + length]:
            raise ValueError(f"cleaner {cleaning.cleaner!r}: piece {(out_start, in_start, length)} maps output text "
                             "to different input text")
    return cleaned, offset_map


def run_chain(parsed: ParsedDocument, *, doc_id: str, doc_class: str, reference: str | None,
              metadata: dict[str, Any] | None, cleaner: Any, chunker: Any, embedder: Any | None,
              evidence: tuple[EvidenceRef, ...], min_span_coverage: float,
              embed_chunks: bool = True, cleaning: Cleaning | None = None,
              heading_threshold: float = DEFAULT_HEADING_THRESHOLD) -> ChainOutput:
    """Clean, chunk and embed one parsed document, and trace its evidence items.

    Args:
        parsed: the parser's output.
        reference: the document's reference text (None without one: no span can be traced).
        metadata: the truth ``metadata`` attached to every chunk (chunk metadata of the chunker wins on a clash).
        cleaner, chunker: stage implementations (`Cleaner`, `Chunker`).
        embedder: an `Embedder` (with its cache) or None when no stage needs vectors or token counts.
        evidence: the questions' evidence items in this document.
        min_span_coverage: share of a span's characters one chunk must cover to hold it.
        embed_chunks: False: the chunks are not embedded nor token-counted (``doc.vectors`` stays None) although
            the chunker may still use ``embedder``; for a run whose only vector consumer reads a user's vectors.
        cleaning: the clean step's artefact of this document (`clean_step` with ``cleaner``), when it already ran;
            None runs it here.
        heading_threshold: similarity at which a section item's label matches a heading (`trace_evidence`; the
            layout audit's ``threshold``).

    Raises:
        whatever the cleaner, chunker or embedder raise (the runner turns it into ``error`` rows for this document
        and pipeline).
    """
    with timed("chain"):
        return _run_chain(parsed, doc_id, doc_class, reference, metadata, cleaner, chunker, embedder, evidence,
                          min_span_coverage, embed_chunks, cleaning, heading_threshold)


def _run_chain(parsed: ParsedDocument, doc_id: str, doc_class: str, reference: str | None,
               metadata: dict[str, Any] | None, cleaner: Any, chunker: Any, embedder: Any | None,
               evidence: tuple[EvidenceRef, ...], min_span_coverage: float, embed_chunks: bool,
               cleaning: Cleaning | None, heading_threshold: float) -> ChainOutput:
    """`run_chain`'s body, each step under its `ingestaudit.step_times` key."""
    from ingestaudit.metrics.alignment import align_chars
    from ingestaudit.metrics.chunking import locate_chunks
    from ingestaudit.metrics.offsets import OffsetMap
    from ingestaudit.stages.chunkers.base import ChunkerInput, block_spans_from_parsed
    from ingestaudit.textlayout import TextLayout

    cleaning = cleaning if cleaning is not None else clean_step(cleaner, parsed)
    with timed("clean"):  # the cleaned text's offset map (an alignment for a rewriting cleaner)
        cleaned, clean_map = _clean(cleaning, parsed)
    passed = (f"cleaner {cleaning.cleaner} cannot handle this document ({cleaning.parsed.error}): the parsed text "
              "is chunked unchanged" if cleaning.parsed.unsupported else "")
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
    with timed("chunk"):
        chunks = list(chunker.chunk(inp, embedder))
        declared = getattr(chunker, "max_overlap", None)
        check_chunks(chunks, len(cleaned), max_overlap=declared() if callable(declared) else None)
        located = locate_chunks(cleaned, chunks)
    texts = [c.text for c in chunks]
    pages = [layout.page_at(loc[0]) if loc else None for loc in located]
    sections = [tuple(layout.section_path_at(loc[0])) if loc else () for loc in located]
    meta = [{**(metadata or {}), **dict(c.metadata)} for c in chunks]
    positions = [to_ref.covered_positions(loc[0], loc[1]) if (loc and to_ref is not None)
                 else np.zeros(0, dtype=np.int64) for loc in located]
    doc = DocChunks(doc_id, doc_class, State.OK if chunks else State.NO_PREDICTION,
                    "" if chunks else "the chunker returned no chunk", texts, pages, sections, meta,
                    intervals=list(located),
                    ref_intervals=[to_ref.project(loc[0], loc[1]) if (loc and to_ref is not None) else None
                                   for loc in located])
    tokens: list[int] = []
    if embedder is not None and texts and embed_chunks:
        with timed("embed"):
            tokens = list(embedder.count_tokens(texts))
            stats = getattr(embedder, "stats", None)  # a CachedEmbedder's counters: this document's model work
            before = stats() if stats is not None else {}
            doc.vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
        doc.tokens = tokens
        if stats is not None:
            doc.embed_stats = {k: v - before.get(k, 0) for k, v in stats().items()}
    for ev in evidence:
        doc.evidence[ev.key] = trace_evidence(
            ev, parsed_to_ref=parsed_to_ref, cleaned_to_ref=to_ref, chunk_positions=positions,
            chunk_sections=sections, chunk_pages=pages, parsed_layout=parsed_layout, cleaned_text=cleaned,
            parsed=parsed, min_span_coverage=min_span_coverage, chunk_intervals=located, cleaned_layout=layout,
            reference=reference, heading_threshold=heading_threshold)
    return ChainOutput(cleaned, clean_map, to_ref, layout, chunks, located,
                       bool(getattr(chunker, "normalises_whitespace", False)), tokens,
                       embedder.max_seq_length() if embedder is not None else None, doc, min_span_coverage,
                       embedder.special_tokens() if embedder is not None else 0,
                       embedder.embed if embedder is not None else None, inp.block_spans, passed)
