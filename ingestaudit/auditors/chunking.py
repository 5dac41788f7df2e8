"""The chunking auditor (``chunking.*``): what the chunker hands to the index, per document x pipeline.

It reads the chain's output (`ingestaudit.chain.ChainOutput`): the cleaned text, the chunks with their pointers, the
offset maps to the reference text, the parser's heading layout, and the embedder's token counts. Definitions are in
`ingestaudit.metrics.chunking`; each metric's spec below says what is counted.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ingestaudit.auditors.base import ChainAuditor
from ingestaudit.measurement import Score, State
from ingestaudit.metrics.specs import MetricSpec, register
from ingestaudit.model import ParsedDocument
from ingestaudit.truth import Truth

BOUNDARY_KINDS = ("sentence", "table", "list", "section")

METRICS = (
    MetricSpec("chunking.attribution", "chunks whose pointer verifies / chunks: the pointer exists, the cleaned text at "
               "[start, end) equals the chunk text (after white-space collapse when the chunker declares that it "
               "normalises white space), start is not before the previous chunk's start, the claimed page holds start "
               "and the claimed section path is the parser's heading path at start", True, ci="wilson",
               unit="chunks"),
    MetricSpec("chunking.coherence", "mean cosine of sentence pairs within a chunk minus mean cosine of the sentence "
               "pairs straddling each chunk boundary, on L2-normalised sentence embeddings of the pipeline's embedder "
               "(sentences: spaCy's rule-based sentencizer; a cut sentence counts for the chunk holding most of it)",
               True, low=-2.0, high=2.0, unit="cosine"),
    MetricSpec("chunking.coherence_gain", "coherence minus the mean coherence of seeded random splits of the same "
               "sentences into the same number of contiguous chunks (> 0: the chunker beats chance)", True,
               low=-4.0, high=4.0, unit="cosine"),
    MetricSpec("chunking.boundary_splits", "chunk boundaries that fall strictly inside a unit of the label's kind "
               "(sentence; table and list runs and numbered sections from the parser's blocks) / chunk boundaries",
               False, ci="wilson", unit="boundaries"),
    MetricSpec("chunking.hierarchy", "chunks whose section path (from the parser's headings) equals the labelled "
               "headings' path at the chunk's start mapped to the reference text / chunks mapped to the reference",
               True, ci="wilson", unit="chunks"),
    MetricSpec("chunking.over_max_tokens", "chunks longer than the embedder's max_seq_length (word pieces with the "
               "special tokens, as sentence-transformers truncates) / chunks", False, ci="wilson", unit="chunks"),
    MetricSpec("chunking.truncated_tokens", "word pieces the embedder silently drops (beyond max_seq_length) / word "
               "pieces of all chunks", False, unit="tokens"),
    MetricSpec("chunking.evidence_held", "evidence spans of the questions of which one chunk holds at least "
               "min_span_coverage of the characters (in reference coordinates through the offset maps) / evidence "
               "spans present in the chunker's input (spans lost in parsing or cleaning are counted apart, in the "
               "detail)", True, ci="wilson", unit="spans"),
)
register(*METRICS)


class ChunkingAuditor(ChainAuditor):
    """Audits one document's chunks (see the module docstring and `METRICS`).

    Args:
        coherence_draws: random splits averaged for ``coherence_gain`` (>= 1).
        max_failures_listed: failing chunks listed in the attribution detail.
        seed: seeds the random splits (the run's seed by default).
    """

    stage = "chunking"
    metrics = METRICS

    def __init__(self, coherence_draws: int = 20, max_failures_listed: int = 5, seed: int = 0):
        if coherence_draws < 1:
            raise ValueError("coherence_draws must be >= 1")
        self.coherence_draws = coherence_draws
        self.max_failures_listed = max_failures_listed
        self.seed = seed

    def options(self) -> dict[str, Any]:
        return {"coherence_draws": self.coherence_draws, "seed": self.seed}

    def audit_chain(self, truth: Truth, parsed: ParsedDocument, chain: Any, evidence: tuple) -> list[Score]:
        from ingestaudit.metrics.chunking import size_stats, verify_pointers

        chunks = chain.chunks
        if not chunks:
            return [Score.missing(s.name, State.NO_PREDICTION, "the chunker returned no chunk") for s in METRICS]
        att = verify_pointers(chain.cleaned, chunks, chain.layout, normalises_whitespace=chain.normalises_whitespace)
        sizes = {"chars": size_stats([len(c.text) for c in chunks])}
        if chain.tokens:
            sizes["tokens"] = size_stats(chain.tokens)
        out = [Score.ratio("chunking.attribution", att.verified, att.total,
                           detail={"failures": att.counts, "first_failing": att.first_failing[:self.max_failures_listed],
                                   "sizes": sizes, "chunks": len(chunks)})]
        out += self._coherence(chain)
        out += self._boundaries(chain, parsed)
        out.append(self._hierarchy(chain, truth))
        out += self._tokens(chain)
        out.append(self._evidence(chain, evidence))
        return out

    def _coherence(self, chain: Any) -> list[Score]:
        from ingestaudit.metrics.chunking import (assign_sentences, coherence, random_split_baseline,
                                                   sentence_spans)

        names = ("chunking.coherence", "chunking.coherence_gain")
        spans = sentence_spans(chain.cleaned)
        intervals = [loc for loc in chain.located if loc is not None]
        if len(intervals) < 2 or len(spans) < 2:
            return [Score.missing(n, State.NO_REFERENCE, "needs at least two located chunks and two sentences")
                    for n in names]
        owner = assign_sentences(spans, intervals)
        keep = [i for i, o in enumerate(owner) if o is not None]
        vectors = np.asarray(chain.embed_sentences([chain.cleaned[spans[i][0]:spans[i][1]] for i in keep]))
        result = coherence(vectors, [owner[i] for i in keep])
        if result.coherence is None:
            return [Score.missing(n, State.NO_REFERENCE, result.reason) for n in names]
        n_chunks = len(set(owner[i] for i in keep))
        baseline = random_split_baseline(vectors, n_chunks, seed=self.seed, n_draws=self.coherence_draws)
        detail = {"within": result.within, "across": result.across, "sentences": len(keep),
                  "random_split_mean": baseline}
        out = [Score("chunking.coherence", result.coherence, detail=detail)]
        if baseline is None:
            out.append(Score.missing("chunking.coherence_gain", State.NO_REFERENCE, "no random split possible"))
        else:
            out.append(Score("chunking.coherence_gain", result.coherence - baseline, detail=detail))
        return out

    def _boundaries(self, chain: Any, parsed: ParsedDocument) -> list[Score]:
        from ingestaudit.metrics.chunking import boundary_splits, sentence_spans

        intervals = _close_gaps(chain.cleaned, [loc for loc in chain.located if loc is not None])
        units: dict[str, list[tuple[int, int]]] = {"sentence": sentence_spans(chain.cleaned)}
        units.update(_block_units(chain, parsed))
        result = boundary_splits(intervals, units)
        out = []
        for kind in BOUNDARY_KINDS:
            if kind not in units:
                out.append(Score.missing("chunking.boundary_splits", State.NO_REFERENCE,
                                         f"no {kind} units in the parser's output", label=kind))
                continue
            out.append(Score.ratio("chunking.boundary_splits", result.splits.get(kind, 0), result.boundaries,
                                   label=kind, detail={"examples": result.examples.get(kind, [])[:3]}))
        return out

    def _hierarchy(self, chain: Any, truth: Truth) -> Score:
        from ingestaudit.textlayout import TextLayout

        if not truth.headings or truth.text is None or chain.to_reference is None:
            return Score.missing("chunking.hierarchy", State.NO_REFERENCE,
                                 "needs labelled headings and a reference text")
        ref_layout = TextLayout.from_reference_headings(truth.text, [(h.level, h.text) for h in truth.headings])
        matched = total = 0
        wrong = []
        for i, loc in enumerate(chain.located):
            if loc is None:
                continue
            pos = chain.to_reference.covered_positions(loc[0], loc[1])
            if pos.size == 0:
                continue
            total += 1
            want = tuple(_norm(h) for h in ref_layout.section_path_at(int(pos[0])))
            got = tuple(_norm(h) for h in chain.layout.section_path_at(loc[0]))
            if want == got:
                matched += 1
            elif len(wrong) < 3:
                wrong.append({"chunk": i, "expected": list(want), "found": list(got)})
        return Score.ratio("chunking.hierarchy", matched, total, detail={"first_wrong": wrong})

    def _tokens(self, chain: Any) -> list[Score]:
        names = ("chunking.over_max_tokens", "chunking.truncated_tokens")
        if not chain.tokens or not chain.max_tokens:
            return [Score.missing(n, State.NO_REFERENCE, "no embedder tokenizer in this pipeline") for n in names]
        room = chain.max_tokens - chain.special_tokens
        over = [i for i, t in enumerate(chain.tokens) if t > room]
        dropped = sum(max(0, t - room) for t in chain.tokens)
        detail = {"max_seq_length": chain.max_tokens, "content_tokens_kept": room, "over": over[:10]}
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
                lost.append({"question": ev.key[0], "item": ev.key[1],
                             "stage": "parsing" if trace.parsed < threshold else "cleaning"})
                continue
            present += 1
            if trace.holding:
                held += 1
            else:
                split.append({"question": ev.key[0], "item": ev.key[1], "span": [ev.start, ev.end],
                              "best_chunk_coverage": round(trace.best_chunk_coverage, 6)})
        return Score.ratio("chunking.evidence_held", held, present,
                           detail={"split": split[:10], "lost_before_chunking": lost[:10], "n_lost": len(lost),
                                   "min_span_coverage": threshold})


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


_NUMBERED = re.compile(r"^\s*(\d+(\.\d+)*|[IVXLC]+\.|[A-Z]\.)\s")


def _block_units(chain: Any, parsed: ParsedDocument) -> dict[str, list[tuple[int, int]]]:
    """Units a boundary should not cut, in cleaned-text coordinates: each table block, each run of consecutive list
    items, and each numbered section (a heading whose text starts with a number such as ``4.2 ``, up to the next
    heading). Blocks are located in order in the parsed text (a block not found is skipped) and moved to the cleaned
    text with the cleaner's offset map; a kind the parser emitted no block of is absent."""
    parsed_units: dict[str, list[tuple[int, int]]] = {}
    cursor = 0
    prev_kind, prev_end = None, 0
    for block in parsed.blocks:
        text = block.text.strip()
        if block.kind not in ("table", "list_item") or not text:
            continue
        at = parsed.text.find(text, cursor)
        if at < 0:
            continue
        cursor, end = at + len(text), at + len(text)
        kind = "table" if block.kind == "table" else "list"
        runs = parsed_units.setdefault(kind, [])
        if kind == "list" and prev_kind == "list" and runs and not parsed.text[prev_end:at].strip("\n -•*\t"):
            runs[-1] = (runs[-1][0], end)
        else:
            runs.append((at, end))
        prev_kind, prev_end = kind, end
    headings = list(chain.layout.headings)
    numbered = [(h.start, headings[i + 1].start if i + 1 < len(headings) else len(chain.cleaned))
                for i, h in enumerate(headings) if _NUMBERED.match(h.text)]
    out = {kind: [iv for iv in (_to_output(chain.clean_to_parsed, s, e) for s, e in spans) if iv]
           for kind, spans in parsed_units.items()}
    if numbered:
        out["section"] = numbered
    return out


def _to_output(offset_map: Any, start: int, end: int) -> tuple[int, int] | None:
    """The cleaned-text interval whose characters come from parsed ``[start, end)``, or None when none does."""
    src = offset_map.source
    hits = np.flatnonzero((src >= start) & (src < end))
    return (int(hits[0]), int(hits[-1]) + 1) if hits.size else None


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()
