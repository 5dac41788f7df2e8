"""The chunking auditor (``chunking.*``): what the chunker hands to the index, per document x pipeline.

It reads the chain's output (`ingestaudit.chain.ChainOutput`): the cleaned text, the chunks with their pointers, the
offset maps to the reference text, the parser's heading layout, and the embedder's token counts. Definitions are in
`ingestaudit.metrics.chunking`; each metric's spec below says what is counted.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ingestaudit.auditors.base import CHAIN, Auditor, ItemArtefacts
from ingestaudit.measurement import Score, State
from ingestaudit.metrics.specs import MetricSpec, register
from ingestaudit.truth import Truth

BOUNDARY_KINDS = ("sentence", "table", "list", "section")
"""Boundary-split kinds from the chunker's input: sentences (spaCy's sentencizer on the cleaned text) and the parser's
table blocks, list-item runs and numbered sections."""

LABELLED_KINDS = ("labelled_table", "labelled_list", "labelled_section")
"""Boundary-split kinds from the reference text's labelled structure (truth ``tables``, ``lists``, numbered
``headings``; `ingestaudit.labelled_structure`), mapped into the cleaned text through the offset maps."""

METRICS = (
    MetricSpec("chunking.attribution", "chunks whose source pointer verifies / chunks (issue 9; the pointer failures "
               "LangChain and LlamaIndex first-occurrence offset searches produce on repeated text). A pointer "
               "verifies when start and end exist, the cleaned text at [start, end) equals the chunk text (after "
               "white-space collapse when the chunker declares normalises_whitespace), start is not before the "
               "previous chunk's start (out_of_order), the claimed page holds start and the claimed section path "
               "equals the parser's heading path at start (headings compared after white-space collapse). A chunk "
               "that claims no page or no section passes that check and is counted in the detail "
               "(no_page_claimed, no_section_claimed); the detail also gives the chunk size distribution (min, "
               "median, nearest-rank p95, max in characters and in embedder tokens)", True, ci="wilson",
               unit="chunks"),
    MetricSpec("chunking.coherence", "mean cosine of all sentence pairs within a chunk minus mean cosine of the "
               "adjacent sentence pairs straddling a chunk boundary, on L2-normalised sentence embeddings of the "
               "pipeline's embedder (issue 9; sentences: spaCy's rule-based sentencizer, a blank line also ending "
               "one; a sentence cut by a boundary counts for the chunk holding most of its characters, ties to the "
               "earlier chunk)", True, low=-2.0, high=2.0, unit="cosine"),
    MetricSpec("chunking.coherence_gain", "coherence minus the mean coherence of coherence_draws seeded random splits "
               "(numpy default_rng(seed)) of the same sentences into as many contiguous chunks as the chunker's "
               "chunks that own a sentence; > 0: the chunker beats chance", True, low=-4.0, high=4.0, unit="cosine",
               seeded=True),
    MetricSpec("chunking.boundary_splits", "chunk boundaries strictly inside a unit of the label's kind / chunk "
               "boundaries (issue 9; a boundary is a located chunk's start or end, where two chunks meet one "
               "boundary, a white-space gap between chunks closed first). Kinds from the chunker's input: sentence "
               "(spaCy sentencizer), table and list (the parser's table blocks and runs of list-item blocks), "
               "section (a parser heading starting with a number such as '4.2 ', up to the next heading); from the "
               "reference text when labelled: labelled_table, labelled_list, labelled_section (truth tables, lists "
               "and numbered headings located in the reference text, mapped into the cleaned text through the "
               "offset maps)", False, ci="wilson", unit="boundaries"),
    MetricSpec("chunking.hierarchy", "chunks whose own section path (the one the chunker claims; the parser's "
               "heading path at the chunk's start when it claims none) equals the labelled headings' path at the "
               "chunk's first character that maps to the reference text (through the cleaner's map and the "
               "extraction alignment) / chunks that map to the reference text; the others are counted apart in the "
               "detail (unmapped). Paths: nearest heading at or before, then each nearest earlier heading of a "
               "strictly smaller level; a heading without a level has no parent and is no one's parent (the "
               "layout.hierarchy rule); heading texts compared after NFC, case folding and white-space collapse",
               True, ci="wilson", unit="chunks"),
    MetricSpec("chunking.over_max_tokens", "chunks longer than the embedder's max_seq_length / chunks (word pieces of "
               "the embedder's own tokenizer plus its special tokens, as sentence-transformers truncates: 254 + 2 "
               "for all-MiniLM-L6-v2)", False, ci="wilson", unit="chunks"),
    MetricSpec("chunking.truncated_tokens", "word pieces the embedder silently drops (beyond max_seq_length minus "
               "the special tokens) / word pieces of all chunks", False, unit="tokens"),
    MetricSpec("chunking.evidence_held", "evidence spans of the questions of which one chunk holds at least "
               "min_span_coverage (a run setting, default 0.5) of the characters, counted in reference code points "
               "through the composed offset maps / evidence spans present in the chunker's input; a span of which "
               "less than min_span_coverage survives parsing or cleaning is counted apart (lost_before_chunking), "
               "every split span is named in the detail", True, ci="wilson", unit="spans"),
)
register(*METRICS)

CONVENTIONS: dict[str, str] = {
    "min_span_coverage": "a chunk holds an evidence span when it covers at least min_span_coverage of the span's "
                         "characters ([run] min_span_coverage, default 0.5, printed beside the numbers), counted in "
                         "reference code points through the composed offset maps; "
                         "ingestaudit.metrics.chunking.evidence_coverage is the one definition (retrieval uses it too)",
    "offset_maps": "cleaned -> parsed: the identity when the cleaner changed nothing, the exact map of the pieces a "
                   "line- or block-removal cleaner kept (repeated-lines, unstructured), else a Levenshtein alignment "
                   "(RapidFuzz opcodes: a rewriting cleaner such as trafilatura); parsed -> reference: the extraction "
                   "alignment (identical characters only)",
    "lost_span": "a span of which less than min_span_coverage survives parsing or cleaning is counted apart "
                 "(lost_before_chunking, with the stage), not in evidence_held's denominator",
    "located_chunks": "coverage, coherence and boundaries use each chunk's located interval: its pointer when the "
                      "cleaned text there equals the chunk text (exactly or after white-space collapse), else the "
                      "first occurrence of its text at or after the previous located chunk, else anywhere; a chunk "
                      "not found holds nothing and is counted in the details",
    "out_of_order": "a pointer that starts before the previous chunk's start (a first-occurrence search on repeated "
                    "text) is an attribution failure, never an error",
    "overlapping_nonsense": "a chunk sharing more code points with the previous one than its chunker declares "
                            "(Chunker.max_overlap: the overlap in characters of recursive, fixed and structural, 0 "
                            "for semantic, a precomputed pipeline's max_overlap option) makes the document an error "
                            "row for that pipeline, as do empty chunks and offsets outside the text; a chunker that "
                            "declares no bound is not checked",
    "unclaimed_pointer_fields": "a chunk that claims no page or no section passes that attribution check; the "
                                "detail counts such chunks (no_page_claimed, no_section_claimed)",
    "sentences": "spaCy's rule-based sentencizer on a blank English pipeline; a blank line also ends a sentence; a "
                 "sentence cut by a boundary counts for the chunk holding most of its characters (ties: the earlier)",
    "random_split": "coherence_gain's baseline: coherence_draws (default 20) seeded splits (numpy "
                    "default_rng(seed)) of the sentences into as many contiguous chunks as the chunker's chunks "
                    "that own a sentence, cut points uniform without replacement; undefined draws are left out",
    "boundary": "a boundary is a distinct start or end of a located chunk, a white-space gap between consecutive "
                "chunks given to the earlier one (one cut, one boundary); it splits a unit [s, e) when s < p < e",
    "numbered_section": "a heading whose text starts with a number (4, 4.2, 4.2., IV., B.) opens a numbered "
                        "section, up to the next heading",
    "labelled_units": "labelled tables (first to last cell), lists (first item's marker to last item) and numbered "
                      "headings are located in order in the reference text (ingestaudit.labelled_structure) and "
                      "moved into the cleaned text as the smallest interval holding what maps into them; labels not "
                      "found or lost before chunking are counted in the row's detail",
    "hierarchy_claim": "a chunk is judged on the section path it claims; one that claims none on the parser's "
                       "heading path at its start (counted as claimed_by_layout)",
    "hierarchy_position": "the labelled path is read at the reference position of the chunk's first character that "
                          "maps to the reference text; a chunk none of whose characters maps is counted apart "
                          "(unmapped), not in the denominator",
    "heading_without_level": "a heading without a level has no parent and is no one's parent, in section paths as "
                             "in layout.hierarchy (ingestaudit.metrics.layout.parents)",
    "heading_text": "heading texts compared after NFC, case folding and white-space collapse (layout's "
                    "nfc-casefold-ws processor)",
    "token_window": "a chunk is over when its word pieces (the embedder's own tokenizer, special tokens excluded) "
                    "exceed max_seq_length minus the special tokens: 254 for all-MiniLM-L6-v2, where "
                    "sentence-transformers cuts",
    "size_percentile": "sizes: median of the middle values, p95 the nearest-rank ceil(0.95 n)-th smallest",
}
"""Every convention that changes a chunking number, by name (docs/metrics.md and ``config.auditors.chunking``)."""


class ChunkingAuditor(Auditor):
    """Audits one document's chunks (see the module docstring and `METRICS`).

    Args:
        coherence_draws: random splits averaged for ``coherence_gain`` (>= 1).
        max_failures_listed: failing chunks listed in the attribution detail.
        seed: seeds the random splits (the run's seed by default).
    """

    stage = "chunking"
    metrics = METRICS
    reads = frozenset({CHAIN})
    conventions = CONVENTIONS

    def __init__(self, coherence_draws: int = 20, max_failures_listed: int = 5, seed: int = 0):
        if coherence_draws < 1:
            raise ValueError("coherence_draws must be >= 1")
        self.coherence_draws = coherence_draws
        self.max_failures_listed = max_failures_listed
        self.seed = seed

    def options(self) -> dict[str, Any]:
        """The options that change the numbers (``coherence_gain``'s random splits); the run setting
        ``min_span_coverage`` is printed beside them."""
        return {"coherence_draws": self.coherence_draws, "seed": self.seed, "conventions": dict(CONVENTIONS)}

    def audit(self, item: ItemArtefacts) -> list[Score]:
        """Scores for one document x pipeline from its chain output (``item.chain``, an
        `ingestaudit.chain.ChainOutput`) and the questions' evidence items in it (``item.evidence``)."""
        from ingestaudit.metrics.chunking import size_stats, verify_pointers

        truth, chain, evidence = item.truth, item.chain, item.evidence
        chunks = chain.chunks
        if not chunks:
            return [Score.missing(s.name, State.NO_PREDICTION, "the chunker returned no chunk", label=label)
                    for s in METRICS
                    for label in (BOUNDARY_KINDS + LABELLED_KINDS if s.name == "chunking.boundary_splits" else ("",))]
        att = verify_pointers(chain.cleaned, chunks, chain.layout, normalises_whitespace=chain.normalises_whitespace)
        sizes = {"chars": size_stats([len(c.text) for c in chunks])}
        if chain.tokens:
            sizes["tokens"] = size_stats(chain.tokens)
        detail = {"failures": att.counts, "first_failing": att.first_failing[:self.max_failures_listed],
                  "no_page_claimed": sum(c.page is None for c in chunks),
                  "no_section_claimed": sum(c.section is None for c in chunks),
                  "section_claims_unchecked": att.section_unchecked, "sizes": sizes, "chunks": len(chunks)}
        out = [Score.ratio("chunking.attribution", att.verified, att.total, detail=detail)]
        from ingestaudit.sentences import sentence_spans

        sentences = sentence_spans(chain.cleaned)  # once: both measures read the same split
        out += self._coherence(chain, sentences)
        out += self._boundaries(chain, truth, sentences)
        out.append(self._hierarchy(chain, truth))
        out += self._tokens(chain)
        out.append(self._evidence(chain, evidence))
        return out

    def _coherence(self, chain: Any, spans: list[tuple[int, int]]) -> list[Score]:
        from ingestaudit.metrics.chunking import assign_sentences, coherence, random_split_baseline

        names = ("chunking.coherence", "chunking.coherence_gain")
        intervals = [loc for loc in chain.located if loc is not None]
        if len(intervals) < 2 or len(spans) < 2:
            return [Score.missing(n, State.NO_REFERENCE, "needs at least two located chunks and two sentences")
                    for n in names]
        if chain.embed_sentences is None:
            return [Score.missing(n, State.NO_REFERENCE, "no embedder in this pipeline") for n in names]
        owner = assign_sentences(spans, intervals)
        keep = [i for i, o in enumerate(owner) if o is not None]
        vectors = np.asarray(chain.embed_sentences([chain.cleaned[spans[i][0]:spans[i][1]] for i in keep]))
        result = coherence(vectors, [owner[i] for i in keep])
        if result.coherence is None:
            return [Score.missing(n, State.NO_REFERENCE, result.reason) for n in names]
        n_chunks = len(set(owner[i] for i in keep))
        baseline = random_split_baseline(vectors, n_chunks, seed=self.seed, n_draws=self.coherence_draws)
        detail = {"within": result.within, "across": result.across, "within_pairs": result.within_pairs,
                  "across_pairs": result.across_pairs, "sentences": len(keep), "chunks_located": len(intervals),
                  "chunks_with_sentences": n_chunks, "random_split_mean": baseline,
                  "random_split_draws": self.coherence_draws, "seed": self.seed}
        out = [Score("chunking.coherence", result.coherence, detail=detail)]
        if baseline is None:
            out.append(Score.missing("chunking.coherence_gain", State.NO_REFERENCE,
                                     "no random split is defined (fewer than two chunks, or every chunk a sentence)"))
        else:
            out.append(Score("chunking.coherence_gain", result.coherence - baseline, detail=detail))
        return out

    def _boundaries(self, chain: Any, truth: Truth, sentences: list[tuple[int, int]]) -> list[Score]:
        from ingestaudit.metrics.chunking import boundary_splits

        located = [loc for loc in chain.located if loc is not None]
        intervals = _close_gaps(chain.cleaned, located)
        units: dict[str, list[tuple[int, int]]] = {"sentence": sentences}
        units.update(block_units(chain.cleaned, chain.block_spans, chain.layout.headings))
        labelled, why = labelled_units(chain, truth)
        units.update(labelled)
        result = boundary_splits(intervals, units)
        unlocated = len(chain.located) - len(located)
        out = []
        for kind in BOUNDARY_KINDS + LABELLED_KINDS:
            if not units.get(kind):
                reason = why.get(kind) or f"no {kind} unit in the parser's output"
                out.append(Score.missing("chunking.boundary_splits", State.NO_REFERENCE, reason, label=kind))
                continue
            detail = {"units": len(units[kind]), "examples": result.examples.get(kind, [])[:3],
                      "chunks_unlocated": unlocated}
            if kind in why:
                detail["labels"] = why[kind]
            out.append(Score.ratio("chunking.boundary_splits", result.splits.get(kind, 0), result.boundaries,
                                   label=kind, detail=detail))
        return out

    def _hierarchy(self, chain: Any, truth: Truth) -> Score:
        from ingestaudit.metrics.layout import process
        from ingestaudit.textlayout import TextLayout

        if not truth.headings or truth.text is None or chain.to_reference is None:
            return Score.missing("chunking.hierarchy", State.NO_REFERENCE,
                                 "needs labelled headings and a reference text")
        ref_layout = TextLayout.from_reference_headings(truth.text, truth.headings)
        if not ref_layout.headings:
            return Score.missing("chunking.hierarchy", State.NO_REFERENCE,
                                 "no labelled heading is found in the reference text")
        matched = total = from_layout = 0
        wrong: list[dict[str, Any]] = []
        unmapped: list[int] = []
        for i, (chunk, loc) in enumerate(zip(chain.chunks, chain.located)):
            pos = chain.to_reference.covered_positions(loc[0], loc[1]) if loc is not None else None
            if pos is None or pos.size == 0:
                unmapped.append(i)
                continue
            total += 1
            if chunk.section is None:
                from_layout += 1
                claimed = tuple(chain.layout.section_path_at(loc[0]))
            else:
                claimed = tuple(chunk.section)
            want = tuple(ref_layout.section_path_at(int(pos[0])))
            if tuple(map(process, want)) == tuple(map(process, claimed)):
                matched += 1
            elif len(wrong) < self.max_failures_listed:
                wrong.append({"chunk": i, "expected": list(want), "claimed": list(claimed),
                              "reference_position": int(pos[0])})
        detail = {"chunks": len(chain.chunks), "unmapped": len(unmapped), "unmapped_chunks": unmapped[:20],
                  "claimed_by_layout": from_layout, "first_wrong": wrong, "labelled_headings": len(truth.headings),
                  "labelled_headings_not_found": ref_layout.headings_not_found}
        if not total:
            return Score.missing("chunking.hierarchy", State.NO_PREDICTION, "no chunk maps to the reference text",
                                 detail=detail)
        return Score.ratio("chunking.hierarchy", matched, total, detail=detail)

    def _tokens(self, chain: Any) -> list[Score]:
        names = ("chunking.over_max_tokens", "chunking.truncated_tokens")
        if not chain.tokens or not chain.max_tokens:
            return [Score.missing(n, State.NO_REFERENCE, "no embedder tokenizer in this pipeline") for n in names]
        room = chain.max_tokens - chain.special_tokens
        over = [i for i, t in enumerate(chain.tokens) if t > room]
        dropped = sum(max(0, t - room) for t in chain.tokens)
        detail = {"max_seq_length": chain.max_tokens, "special_tokens": chain.special_tokens,
                  "content_tokens_kept": room, "over": over[:20], "tokens_dropped": dropped}
        return [Score.ratio(names[0], len(over), len(chain.tokens), detail=detail),
                Score.ratio(names[1], dropped, sum(chain.tokens), detail=detail)]

    def _evidence(self, chain: Any, evidence: tuple) -> Score:
        spans = [ev for ev in evidence if ev.kind == "span"]
        if not spans:
            return Score.missing("chunking.evidence_held", State.NO_REFERENCE, "no evidence span in this document")
        held, present, lost, split = 0, 0, [], []
        threshold = chain.min_span_coverage
        for ev in spans:
            trace = chain.doc.evidence[ev.key]
            if trace.parsed < threshold or trace.cleaned < threshold:
                lost.append({"question": ev.key[0], "item": ev.key[1], "span": [ev.start, ev.end],
                             "stage": "parsing" if trace.parsed < threshold else "cleaning",
                             "survived": round(trace.parsed if trace.parsed < threshold else trace.cleaned, 6)})
                continue
            present += 1
            if trace.holding:
                held += 1
            else:
                split.append({"question": ev.key[0], "item": ev.key[1], "span": [ev.start, ev.end],
                              "best_chunk_coverage": round(trace.best_chunk_coverage, 6),
                              "chunks": sorted(trace.covered)})
        detail = {"min_span_coverage": threshold, "n_split": len(split), "split": split, "n_lost": len(lost),
                  "lost_before_chunking": lost}
        if not present:
            return Score.missing("chunking.evidence_held", State.NO_PREDICTION,
                                 f"every evidence span ({len(lost)}) was lost before chunking", detail=detail)
        return Score.ratio("chunking.evidence_held", held, present, detail=detail)


def _close_gaps(text: str, intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Chunks whose texts were stripped of surrounding white space leave white-space gaps between them; a gap is
    given to the chunk before it, so that one cut between two chunks is one boundary, not two."""
    iv = sorted(intervals)
    out = []
    for k, (s, e) in enumerate(iv):
        if k + 1 < len(iv) and e < iv[k + 1][0] and not text[e:iv[k + 1][0]].strip():
            e = iv[k + 1][0]
        out.append((s, e))
    return out


NUMBERED = re.compile(r"^\s*(\d+(\.\d+)*\.?|[IVXLC]+\.|[A-Z]\.)\s")
"""A numbered heading: "4 ", "4.2 ", "4.2. ", "IV. ", "B. " before its title."""

_LIST_GAP = " \t\r\n-•*"


def block_units(text: str, block_spans: Any, headings: Any) -> dict[str, list[tuple[int, int]]]:
    """Units a boundary should not cut, from the chunker's input (cleaned-text coordinates): each ``table`` block,
    each run of consecutive ``list_item`` blocks (only white space or bullet characters between them), and each
    numbered section (a heading matching `NUMBERED`, up to the next heading's start or the end of the text).

    Args:
        text: the cleaned text.
        block_spans: ``(start, end, kind)`` of the parser's blocks located in ``text`` (the chunker's
            `ChunkerInput.block_spans`: located in order, moved through the cleaner's map).
        headings: the located headings (objects with ``start`` and ``text``), sorted by start.

    A kind with no unit is absent from the result.
    """
    out: dict[str, list[tuple[int, int]]] = {}
    prev_kind = None
    for s, e, kind in sorted(block_spans):
        if kind not in ("table", "list_item") or e <= s:
            prev_kind = None
            continue
        unit = "table" if kind == "table" else "list"
        runs = out.setdefault(unit, [])
        if unit == "list" and prev_kind == "list_item" and runs and not text[runs[-1][1]:s].strip(_LIST_GAP):
            runs[-1] = (runs[-1][0], max(runs[-1][1], e))
        else:
            runs.append((s, e))
        prev_kind = kind
    heads = list(headings)
    numbered = [(h.start, heads[i + 1].start if i + 1 < len(heads) else len(text))
                for i, h in enumerate(heads) if NUMBERED.match(h.text)]
    if numbered:
        out["section"] = numbered
    return out


def labelled_units(chain: Any, truth: Truth) -> tuple[dict[str, list[tuple[int, int]]], dict[str, Any]]:
    """The `LABELLED_KINDS` units in cleaned-text coordinates, and per kind either the reason it has none or counts.

    The truth tables, lists and headings are located in the reference text (`ingestaudit.labelled_structure`); a
    numbered labelled section runs from a numbered heading (`NUMBERED`) to the next labelled heading. Each reference
    interval moves into the cleaned text as the smallest interval holding every cleaned character that maps into it
    (`OffsetMap.preimage` of the composed cleaned -> reference map); one none of whose characters survive is lost.

    Returns:
        ``(units, why)``: ``units[kind]`` the intervals (kinds without any absent); ``why[kind]`` a reason string
        for a kind without units, else ``{"labelled", "not_found", "lost_before_chunking"}`` counts.
    """
    from ingestaudit.labelled_structure import locate_structure

    if truth.text is None or chain.to_reference is None:
        return {}, {k: "needs a reference text" for k in LABELLED_KINDS}
    found = locate_structure(truth.text, truth.headings, truth.lists, truth.tables)
    heads = found.headings
    numbered = [(h.start, heads[i + 1].start if i + 1 < len(heads) else len(truth.text))
                for i, h in enumerate(heads) if NUMBERED.match(h.text)]
    n_numbered = sum(bool(NUMBERED.match(h.text)) for h in truth.headings)
    ref_units = {"labelled_table": (list(found.tables), len(truth.tables), found.not_found["tables"], "tables"),
                 "labelled_list": (list(found.list_runs), len(truth.lists),
                                   len(truth.lists) - len(found.list_items), "lists"),
                 "labelled_section": (numbered, n_numbered, n_numbered - len(numbered), "numbered headings")}
    units: dict[str, list[tuple[int, int]]] = {}
    why: dict[str, Any] = {}
    for kind, (spans, labelled, not_found, what) in ref_units.items():
        if not labelled:
            why[kind] = f"no labelled {what} in the truth"
            continue
        moved = [iv for iv in (chain.to_reference.preimage(s, e) for s, e in spans) if iv is not None]
        counts = {"labelled": labelled, "not_found": not_found, "lost_before_chunking": len(spans) - len(moved)}
        if not moved:
            why[kind] = (f"none of the {labelled} labelled {what} is in the chunker's input ({not_found} not found in "
                         f"the reference text, {len(spans) - len(moved)} lost in parsing or cleaning)")
            continue
        units[kind], why[kind] = moved, counts
    return units, why
