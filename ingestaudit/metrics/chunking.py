"""Chunk metrics (issue 9, DESIGN.md "Pipelines and the stage chain"): pure functions over texts, chunks and vectors.

* `verify_pointers` — does each chunk's source pointer (offsets, page, section) tell the truth?
* `locate_chunks` — the cleaned-text interval each chunk occupies (its pointer when true, else a search).
* `evidence_coverage` — does one chunk hold at least ``min_span_coverage`` of an evidence span?
* `coherence`, `random_split_baseline`, `assign_sentences` — do chunks hold whole thoughts, better than chance?
* `boundary_splits` — do chunk boundaries cut sentences, tables, list runs or sections?
* `size_stats`, `sentence_spans` — size distribution and sentence segmentation.

All offsets are Unicode code points, intervals ``[start, end)`` with ``end`` exclusive.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from ingestaudit.model import Chunk

FAILURE_KINDS = ("missing", "out_of_range", "text_mismatch", "out_of_order", "page_wrong", "section_wrong")
"""Pointer failure kinds of `verify_pointers`, in the order they are checked."""

DEFAULT_MIN_SPAN_COVERAGE = 0.5
"""A chunk holds an evidence span when it covers at least this share of the span's characters (DESIGN.md)."""


def _collapse(text: str) -> str:
    """Runs of white space -> one space, ends stripped."""
    return " ".join(text.split())


def _excerpt(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[:n] + "…"


# ----- attribution ----------------------------------------------------------------------------------------------


@dataclass
class AttributionResult:
    """What `verify_pointers` found.

    Attributes:
        verified: chunks whose pointer passes every check, 0..total.
        total: chunks examined.
        section_unchecked: section claims not checked because the layout locates no heading.
        counts: chunks failing each kind of `FAILURE_KINDS` (every kind present, zeros included); one chunk may
            fail several kinds (a wrong page and a wrong section), so the counts may sum to more than
            ``total - verified``.
        first_failing: the first ``max_listed`` failing chunks in chunk order, each
            ``{"chunk": index, "kind": first failing kind, "kinds": [...], "claimed": {...}, "found": {...}}``
            (JSON-serialisable).
    """

    verified: int = 0
    total: int = 0
    section_unchecked: int = 0  # section claims left unchecked: the layout locates no heading
    counts: dict[str, int] = field(default_factory=lambda: {k: 0 for k in FAILURE_KINDS})
    first_failing: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rate(self) -> float | None:
        """verified / total in [0, 1], or None without chunks."""
        return self.verified / self.total if self.total else None


def verify_pointers(cleaned_text: str, chunks: Sequence[Chunk], layout: Any | None,
                    normalises_whitespace: bool = False, max_listed: int = 10) -> AttributionResult:
    """Verify each chunk's source pointer against the text the chunker read (issue 9, ``chunking.attribution``).

    Checks, per chunk i, in this order:

    * ``missing``: ``start`` or ``end`` is None. Nothing else is checked.
    * ``out_of_range``: ``start < 0``, ``end > len(cleaned_text)`` or ``start > end`` (offsets past the text are a
      failure kind of their own, not ``missing``). Nothing else is checked.
    * ``text_mismatch``: ``cleaned_text[start:end] != chunk.text``; when ``normalises_whitespace`` the two are
      compared after collapsing white-space runs to one space and stripping the ends.
    * ``out_of_order``: ``start`` is before the start of the previous chunk with an in-range pointer (what a
      first-occurrence text search produces on repeated text).
    * ``page_wrong``: the chunk claims a page and it is not ``layout.page_at(start)``.
    * ``section_wrong``: the chunk claims a section path and it differs from ``layout.section_path_at(start)``
      (heading texts compared after white-space collapse).

    A chunk verifies when it fails none. With ``layout`` None, page and section claims are not checked; with a
    layout that locates no heading (a parser output without heading blocks), section claims are not checked either
    (there is nothing to check them against; ``section_unchecked`` counts them) rather than all failing.

    Args:
        cleaned_text: the text the chunker read.
        chunks: the chunker's chunks, in emission order.
        layout: a `ingestaudit.textlayout.TextLayout` in ``cleaned_text`` coordinates, or None.
        normalises_whitespace: the chunker declares that its chunk texts normalise white space.
        max_listed: failing chunks kept in ``first_failing`` (>= 0).

    Example (issue 9): text ``"A.\\nB.\\nA.\\nC."`` with chunks "A." [0,2), "B." [3,5), "A." [0,2), "C." [9,11)
    verifies 3 of 4 (the third is ``out_of_order``); with the third at [6,8) all 4 verify.
    """
    res = AttributionResult(total=len(chunks))
    n = len(cleaned_text)
    prev_start: int | None = None
    for i, ch in enumerate(chunks):
        kinds: list[str] = []
        found: dict[str, Any] = {}
        start, end = ch.start, ch.end
        if start is None or end is None:
            kinds.append("missing")
        elif start < 0 or end > n or start > end:
            kinds.append("out_of_range")
        else:
            actual = cleaned_text[start:end]
            same = (_collapse(actual) == _collapse(ch.text)) if normalises_whitespace else (actual == ch.text)
            if not same:
                kinds.append("text_mismatch")
                found["text"] = _excerpt(actual)
            if prev_start is not None and start < prev_start:
                kinds.append("out_of_order")
                found["previous_start"] = prev_start
            prev_start = start
            if layout is not None and ch.page is not None:
                page = layout.page_at(start)
                if page != ch.page:
                    kinds.append("page_wrong")
                    found["page"] = page
            if layout is not None and ch.section is not None and not layout.headings:
                res.section_unchecked += 1  # nothing to check the claim against
            elif layout is not None and ch.section is not None:
                path = tuple(layout.section_path_at(start))
                if tuple(map(_collapse, path)) != tuple(map(_collapse, ch.section)):
                    kinds.append("section_wrong")
                    found["section"] = list(path)
        if not kinds:
            res.verified += 1
            continue
        for k in kinds:
            res.counts[k] += 1
        if len(res.first_failing) < max_listed:
            claimed = {"start": start, "end": end, "text": _excerpt(ch.text), "page": ch.page,
                       "section": list(ch.section) if ch.section is not None else None}
            res.first_failing.append({"chunk": i, "kind": kinds[0], "kinds": kinds, "claimed": claimed,
                                      "found": found})
    return res


# ----- locating chunks ------------------------------------------------------------------------------------------


def _search(text: str, needle: str, start: int) -> tuple[int, int] | None:
    """``needle`` in ``text`` at or after ``start``: exactly, else with white-space runs matching any white space."""
    at = text.find(needle, start)
    if at >= 0:
        return at, at + len(needle)
    words = needle.split()
    if not words:
        return None
    m = re.compile(r"\s+".join(map(re.escape, words))).search(text, start)
    return (m.start(), m.end()) if m else None


def locate_chunks(cleaned_text: str, chunks: Sequence[Chunk]) -> list[tuple[int, int] | None]:
    """The interval of ``cleaned_text`` each chunk occupies, for coverage, coherence and boundary measures.

    Per chunk, in order: its pointer ``(start, end)`` when it is in range and ``cleaned_text[start:end]`` equals the
    chunk text exactly or after white-space collapse; else the first occurrence of the chunk text at or after the
    previous located chunk's start (exactly, then with any white-space run matching any white-space run); else the
    same search from the beginning of the text; else None (unlocated: the caller counts these). A chunk whose text is
    empty or only white space is located only through a valid pointer.

    Returns:
        One ``(start, end)`` or None per chunk, in chunk order.
    """
    out: list[tuple[int, int] | None] = []
    n = len(cleaned_text)
    cursor = 0
    for ch in chunks:
        loc: tuple[int, int] | None = None
        s, e = ch.start, ch.end
        if s is not None and e is not None and 0 <= s <= e <= n:
            actual = cleaned_text[s:e]
            if actual == ch.text or _collapse(actual) == _collapse(ch.text):
                loc = (s, e)
        if loc is None and ch.text.strip():
            needle = ch.text
            loc = _search(cleaned_text, needle, cursor) or (_search(cleaned_text, needle, 0) if cursor else None)
        if loc is not None:
            cursor = loc[0]
        out.append(loc)
    return out


# ----- evidence ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvidenceCoverage:
    """How the chunks cover one evidence span.

    Attributes:
        shares: per chunk, covered reference characters of the span / span length, in [0, 1].
        best: the largest share (0.0 without chunks).
        best_chunk: index of the first chunk with the largest share, or None when no chunk touches the span.
        held: ``best >= min_span_coverage``.
    """

    shares: tuple[float, ...]
    best: float
    best_chunk: int | None
    held: bool


def evidence_coverage(span_start: int, span_end: int, chunk_positions: Sequence[np.ndarray],
                      min_span_coverage: float = DEFAULT_MIN_SPAN_COVERAGE) -> EvidenceCoverage:
    """Best single-chunk coverage of evidence span ``[span_start, span_end)`` in REFERENCE coordinates.

    Args:
        span_start, span_end: the evidence span on the reference text, ``span_start < span_end``.
        chunk_positions: per chunk, its sorted distinct reference positions (``OffsetMap.covered_positions`` of
            the composed cleaned -> reference map over the chunk's located interval).
        min_span_coverage: share one chunk must cover to hold the span, in (0, 1] (DESIGN.md, default 0.5).

    A chunk's share is (number of its reference positions inside the span) / (span_end - span_start).

    Raises:
        ValueError: an empty span or ``min_span_coverage`` outside (0, 1].

    Example (issue 9): on "The fee is 32 dollars. It drops to 8 dollars." (identity maps), span [23, 45), chunks
    [0, 30) and [30, 45): shares 7/22 and 15/22 = 0.682, held at 0.5, split at 0.9.
    """
    if span_end <= span_start:
        raise ValueError(f"empty evidence span [{span_start}, {span_end})")
    if not 0.0 < min_span_coverage <= 1.0:
        raise ValueError(f"min_span_coverage must be in (0, 1], got {min_span_coverage!r}")
    length = span_end - span_start
    shares = []
    for pos in chunk_positions:
        pos = np.asarray(pos)
        lo, hi = np.searchsorted(pos, (span_start, span_end), side="left")
        shares.append(int(hi - lo) / length)
    if not shares or max(shares) == 0.0:
        return EvidenceCoverage(tuple(shares), 0.0, None, False)
    best_chunk = int(np.argmax(shares))
    best = shares[best_chunk]
    return EvidenceCoverage(tuple(shares), best, best_chunk, best >= min_span_coverage)


# ----- coherence -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CoherenceResult:
    """`coherence` of one chunking; unpacks as ``within, across, coherence = result``.

    Attributes:
        within: mean cosine over sentence pairs in the same chunk, in [-1, 1], or None without such a pair.
        across: mean cosine over adjacent sentence pairs in different chunks, in [-1, 1], or None without one.
        coherence: ``within - across`` in [-2, 2], or None when either is None.
        reason: why ``coherence`` is None (for a ``no_reference`` row), else None.
        within_pairs, across_pairs: the numbers of pairs averaged.
    """

    within: float | None
    across: float | None
    coherence: float | None
    reason: str | None = None
    within_pairs: int = 0
    across_pairs: int = 0

    def __iter__(self):
        return iter((self.within, self.across, self.coherence))


def _normalise(vectors: Any) -> np.ndarray:
    """Rows scaled to unit L2 norm (float64); a zero row stays zero (its cosine with anything is 0)."""
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2:
        raise ValueError(f"sentence vectors must have shape (n, dim), got {v.shape}")
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return np.divide(v, norms, out=np.zeros_like(v), where=norms > 0)


def _coherence_normalised(v: np.ndarray, labels: np.ndarray) -> CoherenceResult:
    n = v.shape[0]
    _, idx = np.unique(labels, return_inverse=True)
    idx = idx.reshape(-1)
    counts = np.bincount(idx)
    sums = np.zeros((counts.size, v.shape[1]))
    np.add.at(sums, idx, v)
    # per chunk, the sum over pairs i < j of v_i.v_j = (|sum of v|^2 - sum of |v_i|^2) / 2
    within_sum = (float(np.einsum("ij,ij->", sums, sums)) - float(np.einsum("ij,ij->", v, v))) / 2.0
    within_pairs = int((counts * (counts - 1) // 2).sum())
    cut = np.flatnonzero(labels[1:] != labels[:-1]) if n > 1 else np.zeros(0, dtype=np.int64)
    across_pairs = int(cut.size)
    across_sum = float(np.einsum("ij,ij->", v[cut], v[cut + 1])) if across_pairs else 0.0
    within = within_sum / within_pairs if within_pairs else None
    across = across_sum / across_pairs if across_pairs else None
    if within is None and across is None:
        reason = "no chunk holds two sentences and there is no chunk boundary"
    elif within is None:
        reason = "no chunk holds two sentences (every chunk has one sentence)"
    elif across is None:
        reason = "only one chunk: no boundary between sentences"
    else:
        return CoherenceResult(within, across, within - across, None, within_pairs, across_pairs)
    return CoherenceResult(within, across, None, reason, within_pairs, across_pairs)


def coherence(sentence_vectors: Any, chunk_of_sentence: Sequence[int]) -> CoherenceResult:
    """Coherence of a chunking from sentence embeddings (issue 9, ``chunking.coherence``).

    Args:
        sentence_vectors: shape (n, dim), the sentences in text order; rows are L2-normalised here (a zero row stays
            zero).
        chunk_of_sentence: length n, the chunk label of each sentence (see `assign_sentences`).

    Definitions, on normalised vectors (cosine = dot product):

    * ``within``: mean cosine over ALL pairs i < j of sentences with the same label, pooled over chunks (a chunk of k
      sentences contributes k(k-1)/2 pairs; a chunk of one sentence contributes none).
    * ``across``: mean cosine over the pairs of adjacent sentences (i, i+1) whose labels differ: with contiguous
      labels, the last sentence of each chunk and the first of the next.
    * ``coherence = within - across``; None (with ``reason``) when no pair is within a chunk or when there is only
      one chunk (no boundary) — the caller reports a ``no_reference`` row.

    Raises:
        ValueError: vectors not two-dimensional, or a label count other than n.

    Example (issue 9): (1,0),(1,0) | (0,1),(0,1) gives within 1, across 0, coherence 1; (1,0),(0,1) | (1,0),(0,1)
    gives within 0, across 0, coherence 0.
    """
    v = _normalise(sentence_vectors)
    labels = np.asarray(list(chunk_of_sentence))
    if labels.shape != (v.shape[0],):
        raise ValueError(f"{v.shape[0]} sentence vectors but {labels.size} chunk labels")
    return _coherence_normalised(v, labels)


def random_split_labels(n_sentences: int, n_chunks: int, seed: int, n_draws: int) -> list[np.ndarray]:
    """The random splits of `random_split_baseline`: per draw, chunk labels (int64, shape (n_sentences,)) of a split
    into ``n_chunks`` contiguous non-empty chunks, the ``n_chunks - 1`` cut points drawn uniformly without replacement
    among the ``n_sentences - 1`` gaps (``numpy.random.default_rng(seed)``). Empty when no split exists
    (``n_chunks < 1`` or ``n_chunks > n_sentences``)."""
    if n_chunks < 1 or n_chunks > n_sentences or n_draws < 1:
        return []
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_draws):
        cuts = rng.choice(n_sentences - 1, size=n_chunks - 1, replace=False) if n_chunks > 1 else []
        starts = np.zeros(n_sentences, dtype=np.int64)
        starts[np.asarray(cuts, dtype=np.int64) + 1] = 1
        out.append(np.cumsum(starts))
    return out


def random_split_baseline(sentence_vectors: Any, n_chunks: int, seed: int = 0, n_draws: int = 20) -> float | None:
    """Mean `coherence` over ``n_draws`` seeded random splits of the sentence sequence into ``n_chunks`` contiguous
    chunks (`random_split_labels`); ``chunking.coherence_gain`` is a chunking's coherence minus this.

    Draws whose coherence is undefined (every chunk a single sentence) are left out of the mean. Returns None when no
    draw is defined (``n_chunks < 2``, ``n_chunks >= n_sentences``, no sentences).
    """
    v = _normalise(sentence_vectors)
    values = [r.coherence for r in (_coherence_normalised(v, lab)
                                    for lab in random_split_labels(v.shape[0], n_chunks, seed, n_draws))
              if r.coherence is not None]
    return float(np.mean(values)) if values else None


def assign_sentences(sentence_spans: Sequence[tuple[int, int]],
                     chunk_intervals: Sequence[tuple[int, int]]) -> list[int | None]:
    """Each sentence's chunk: the index of the chunk interval sharing the most characters with it (ties: the lower
    index); None when no chunk overlaps it. A sentence cut by a boundary thus counts for the chunk holding most of it
    (issue 9). Intervals are ``[start, end)`` code points.
    """
    if not sentence_spans:
        return []
    if not chunk_intervals:
        return [None] * len(sentence_spans)
    sent = np.asarray(sentence_spans, dtype=np.int64).reshape(-1, 2)
    chunks = np.asarray(chunk_intervals, dtype=np.int64).reshape(-1, 2)
    out: list[int | None] = []
    batch = max(1, 2_000_000 // max(1, len(chunks)))
    for b in range(0, len(sent), batch):
        s = sent[b:b + batch]
        overlap = (np.minimum(s[:, 1:2], chunks[None, :, 1]) - np.maximum(s[:, 0:1], chunks[None, :, 0])).clip(0)
        best = overlap.argmax(axis=1)
        has = overlap[np.arange(len(s)), best] > 0
        out.extend(int(c) if h else None for c, h in zip(best, has))
    return out


# ----- boundaries ----------------------------------------------------------------------------------------------


@dataclass
class BoundarySplits:
    """What `boundary_splits` found.

    Attributes:
        boundaries: number of chunk boundaries (positions, see `chunk_boundaries`).
        splits: per unit kind, boundaries strictly inside at least one unit of that kind.
        examples: per unit kind, the first few splitting boundaries in text order as
            ``{"boundary": p, "unit": [start, end]}`` (the unit: the first by (start, end) that holds p).
    """

    boundaries: int
    splits: dict[str, int]
    examples: dict[str, list[dict[str, Any]]]


def chunk_boundaries(chunk_intervals: Sequence[tuple[int, int]]) -> list[int]:
    """Distinct boundary positions of a chunking, sorted: with chunks sorted by (start, end), the start of every chunk
    after the first, and the end of every chunk before the last unless the next chunk starts exactly there (where two
    chunks meet there is one boundary, not two). With overlapping windows both the start of the next chunk and the
    end of the previous one cut the text; a position reached twice counts once."""
    iv = sorted((int(s), int(e)) for s, e in chunk_intervals)
    out: list[int] = []
    for k, (s, e) in enumerate(iv):
        if k > 0:
            out.append(s)
        if k < len(iv) - 1 and iv[k + 1][0] != e:
            out.append(e)
    return sorted(set(out))


def boundary_splits(chunk_intervals: Sequence[tuple[int, int]],
                    units: dict[str, Sequence[tuple[int, int]]], max_examples: int = 3) -> BoundarySplits:
    """Chunk boundaries that fall strictly inside a unit, per unit kind (issue 9, ``chunking.boundary_splits``).

    A boundary at position p (`chunk_boundaries`) splits a unit ``[us, ue)`` when ``us < p < ue``: a boundary at a
    unit's first character or just past its last does not split it. Per kind, a boundary counts once even when it is
    inside several (nested) units of that kind.

    Args:
        chunk_intervals: the located chunk intervals ``[start, end)`` in the text the units refer to.
        units: kind (``sentence``, ``table``, ``list``, ``section``...) -> unit intervals ``[start, end)``.
        max_examples: splitting boundaries listed per kind.

    Example: chunks [0,10), [10,20), [15,30) give boundaries 10 (end of the first = start of the second), 15 (start
    of the third) and 20 (end of the second, inside the overlapping third); a sentence [5,12) is split by 10, a table
    [15,25) is not split by 15 but is by 20.
    """
    bounds = np.asarray(chunk_boundaries(chunk_intervals), dtype=np.int64)
    splits: dict[str, int] = {}
    examples: dict[str, list[dict[str, Any]]] = {}
    for kind, spans in units.items():
        arr = np.asarray(sorted((int(s), int(e)) for s, e in spans), dtype=np.int64).reshape(-1, 2)
        if arr.size == 0 or bounds.size == 0:
            splits[kind], examples[kind] = 0, []
            continue
        run_max_end = np.maximum.accumulate(arr[:, 1])
        idx = np.searchsorted(arr[:, 0], bounds, side="left") - 1  # last unit with start < p
        inside = (idx >= 0) & (run_max_end[idx.clip(0)] > bounds)
        splits[kind] = int(inside.sum())
        ex = []
        for p in bounds[inside][:max_examples]:
            j = int(np.flatnonzero((arr[:, 0] < p) & (arr[:, 1] > p))[0])
            ex.append({"boundary": int(p), "unit": [int(arr[j, 0]), int(arr[j, 1])]})
        examples[kind] = ex
    return BoundarySplits(int(bounds.size), splits, examples)


# ----- sizes and sentences ---------------------------------------------------------------------------------------


def size_stats(values: Iterable[float]) -> dict[str, Any]:
    """``{"n", "min", "median", "p95", "max"}`` of sizes (characters or tokens). ``median`` is the usual median (mean
    of the two middle values for even n); ``p95`` is the nearest-rank 95th percentile, the ``ceil(0.95 n)``-th
    smallest value. Without values, n is 0 and the others None."""
    vals = sorted(values)
    n = len(vals)
    if n == 0:
        return {"n": 0, "min": None, "median": None, "p95": None, "max": None}
    mid = n // 2
    median = vals[mid] if n % 2 else (vals[mid - 1] + vals[mid]) / 2
    return {"n": n, "min": vals[0], "median": median, "p95": vals[max(1, math.ceil(0.95 * n)) - 1], "max": vals[-1]}


_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n")


@lru_cache(maxsize=1)
def _sentencizer():
    """spaCy's blank English pipeline with the rule-based ``sentencizer`` (loaded once per process).

    Built without what it does not use (issue 27: 11 of a tiny run's 17 s went here): spaCy is imported with torch
    hidden when torch is not imported yet (thinc, which spaCy imports, loads torch only to offer its optional
    PyTorch layers; the tokenizer and the sentencizer never use them), and the blank pipeline is made without loading
    the third-party ``spacy_factories`` entry points (Presidio registers one that imports transformers). The
    tokenizer and sentencizer, hence every sentence boundary, are spaCy's own.
    """
    with spacy_factories_off(hide_torch=True) as spacy:
        nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.max_length = 10**8
    return nlp


@contextmanager
def spacy_factories_off(hide_torch: bool = False) -> Iterator[Any]:
    """Within the block (which gets the ``spacy`` module), spaCy's third-party factory entry points
    (``spacy_factories``: Presidio registers one that imports transformers, about 3 s) are not loaded, holding
    `SPACY_SETUP_LOCK` (the switch is process-wide). spaCy's own factories, hence every built-in pipeline
    (``en_core_web_sm``), are unchanged. ``hide_torch``: import spaCy with torch hidden when nothing imported it yet
    (`_import_spacy_without_torch`)."""
    with SPACY_SETUP_LOCK:
        if hide_torch:
            spacy = _import_spacy_without_torch()
        else:
            import spacy
        registry = getattr(getattr(spacy, "util").registry, "_entry_point_factories", None)
        lazy = registry is not None and getattr(registry, "entry_points", None) is True
        if lazy:
            registry.entry_points = False
        try:
            yield spacy
        finally:
            if lazy:
                registry.entry_points = True


SPACY_SETUP_LOCK = threading.RLock()
"""Held while `_sentencizer` imports spaCy and builds its blank pipeline with spaCy's third-party factory entry
points switched off (a process-wide switch); a step that loads a spaCy pipeline needing those factories (Presidio's,
the entities step's) holds it too, so that it never runs while they are off (Dask runs two tasks per worker)."""


class _HideTorch:
    """A `sys.meta_path` finder that refuses ``torch`` (and its submodules) to ONE thread, the one importing spaCy
    (`_import_spacy_without_torch`): ``import torch`` there raises ModuleNotFoundError, as with torch not installed,
    while another thread's ``import torch`` goes on normally (``sys.modules["torch"] = None`` hid it from every
    thread). A torch another thread finished importing meanwhile is in ``sys.modules`` and is simply used."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if threading.get_ident() == self.thread and (name == "torch" or name.startswith("torch.")):
            raise ModuleNotFoundError(f"No module named {name!r} (hidden while spaCy is imported)", name=name)
        return None


def _import_spacy_without_torch() -> Any:
    """``import spacy``; when neither torch nor thinc is imported yet, with torch hidden from this thread for that
    import only (`_HideTorch`: thinc then offers no PyTorch layers in this process; torch itself still imports later,
    and meanwhile in other threads, for whoever needs it)."""
    import sys

    if "spacy" in sys.modules or "torch" in sys.modules or "thinc" in sys.modules:
        import spacy

        return spacy
    hide = _HideTorch()
    sys.meta_path.insert(0, hide)  # type: ignore[arg-type]
    try:
        import spacy
    finally:
        sys.meta_path.remove(hide)  # type: ignore[arg-type]
    return spacy


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentences of ``text`` as code-point intervals ``[start, end)`` in text order.

    Segmenter: spaCy's rule-based ``sentencizer`` (a sentence ends after ``.``, ``!``, ``?`` and the other
    punctuation of its default list) on a blank English pipeline (``spacy.blank("en")``), chosen for speed and
    determinism over a statistical parser. Additionally a blank line (a paragraph break) always ends a sentence, so a
    heading or a table row without final punctuation does not merge with the next paragraph. Each sentence is trimmed
    of surrounding white space; empty ones are dropped.
    """
    if not text.strip():
        return []
    paragraphs = []
    pos = 0
    for m in _PARAGRAPH_BREAK.finditer(text):
        paragraphs.append((pos, m.start()))
        pos = m.end()
    paragraphs.append((pos, len(text)))
    paragraphs = [(s, e) for s, e in paragraphs if text[s:e].strip()]
    out: list[tuple[int, int]] = []
    nlp = _sentencizer()
    for (base, end), doc in zip(paragraphs, nlp.pipe(text[s:e] for s, e in paragraphs)):
        for sent in doc.sents:
            s, e = base + sent.start_char, base + sent.end_char
            chunk = text[s:e]
            lead = len(chunk) - len(chunk.lstrip())
            trail = len(chunk) - len(chunk.rstrip())
            if e - trail > s + lead:
                out.append((s + lead, e - trail))
    return out
