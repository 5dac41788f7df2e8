"""What the retrieved context costs: span precision, IoU and recall of the top-k chunks, and span recall within a
context budget of characters (issue 25). Pure functions, no I/O.

Definitions follow Chroma's evaluator (``BaseEvaluation._scores_from_dataset_and_retrievals`` in
brandonstarxel/chunking_evaluation; Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval", Chroma
technical report, 2024), per question and cutoff ``k``:

* covered = evidence characters inside some top-k chunk, each character once (the union of the overlaps);
* recall = covered / evidence characters;
* precision = covered / characters of the top-k chunks, **summed** (a character read twice, in two overlapping
  chunks, costs twice: the model reads both; a chunk of another document costs its length too);
* IoU = covered / (characters of the top-k chunks summed + evidence characters not covered).

The one convention that differs from Chroma is named ``evidence_overlap``: ``"union"`` (default) counts a character
inside two overlapping evidence spans once, in recall's denominator and in IoU's uncovered part; ``"sum"`` counts it
once per span, as Chroma does (its recall denominator sums the reference lengths, and its uncovered part is each
reference's own remainder), which reproduces Chroma's values on such questions.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from ingestaudit.metrics.ranking import NO_REFERENCE, Interval, _check_k, _overlap, _union
from ingestaudit.metrics.rates import Rate

EVIDENCE_OVERLAP = ("union", "sum")
"""Values of the ``evidence_overlap`` convention (module docstring)."""

Piece = tuple[Hashable, int, int, int]
"""``(document id, start, end, offset)``: reference code points ``[start, end)`` a chunk covers, the first of them
``offset`` characters into the chunk (so a chunk cut to its first ``m`` characters keeps ``[start, start + m -
offset)`` of it, character for character inside the run)."""


@dataclass(frozen=True)
class RankedChunk:
    """One ranked result as the context metrics see it.

    Attributes:
        chars: the chunk's length in characters as the model reads it (int >= 0).
        covered: the evidence runs it covers (`Piece`); empty for a chunk that covers none (another document's
            chunk, or text outside the evidence).
    """

    chars: int
    covered: tuple[Piece, ...] = ()


def _check_overlap(evidence_overlap: str) -> None:
    if evidence_overlap not in EVIDENCE_OVERLAP:
        raise ValueError(f"evidence_overlap must be one of {EVIDENCE_OVERLAP}, got {evidence_overlap!r}")


def _covered_parts(got: dict[Hashable, list[tuple[int, int]]], ev: dict[Hashable, list[tuple[int, int]]]) -> int:
    return sum(_overlap(spans, got[doc]) for doc, spans in ev.items() if doc in got)


def _evidence_terms(evidence: Sequence[Interval], got: dict[Hashable, list[tuple[int, int]]],
                    evidence_overlap: str) -> tuple[int, int, int]:
    """``(covered, evidence characters, uncovered)`` under the overlap convention."""
    _check_overlap(evidence_overlap)
    ev = _union(evidence)
    covered = _covered_parts(got, ev)
    if evidence_overlap == "union":
        total = sum(e - s for spans in ev.values() for s, e in spans)
        return covered, total, total - covered
    total = uncovered = 0
    for doc, s, e in evidence:  # each span on its own: an overlap of two spans counts twice
        total += e - s
        uncovered += (e - s) - _covered_parts(got, {doc: [(s, e)]} if e > s else {})
    return covered, total, uncovered


def _no_ref(name: str) -> Rate:
    return Rate(value=None, numerator=0, denominator=0, state=NO_REFERENCE,
                reason="the question has no evidence characters", name=name)


def _rate(num: float, den: float, name: str) -> Rate:
    if den == 0:
        return Rate(value=None, numerator=num, denominator=0, state=NO_REFERENCE, reason="denominator is 0",
                    name=name)
    return Rate(value=num / den, numerator=num, denominator=den, name=name)


def context_scores(results: Sequence[RankedChunk], evidence: Iterable[Interval], k: int, *,
                   evidence_overlap: str = "union") -> dict[str, Rate]:
    """Span recall, span precision, IoU and context characters of the top ``k`` results (module docstring).

    Args:
        results: the ranked results, best first (`RankedChunk`); fewer than ``k`` is fine.
        evidence: the question's evidence spans ``(doc, start, end)`` in reference code points.
        k: cutoff, int >= 1.
        evidence_overlap: ``"union"`` or ``"sum"`` (Chroma's).

    Returns:
        ``{"recall", "precision", "iou", "chars"}`` as `Rate`: recall = covered / evidence characters, precision =
        covered / top-k characters summed, iou = covered / (top-k characters + uncovered evidence characters), all
        in [0, 1]; chars = top-k characters / 1. Recall and IoU are ``no_reference`` without evidence characters;
        precision is ``no_reference`` when the top k hold no character (nothing returned).

    Raises:
        ValueError: ``k`` not an int >= 1; a bad interval (`ingestaudit.metrics.ranking.span_recall_at_k`); an
            unknown ``evidence_overlap``; a negative ``chars``.
    """
    _check_k(k)
    evidence = list(evidence)
    top = list(results[:k])
    if any(r.chars < 0 for r in top):
        raise ValueError("a ranked chunk's chars must be >= 0")
    got = _union((d, s, e) for r in top for d, s, e, _ in r.covered)
    covered, total, uncovered = _evidence_terms(evidence, got, evidence_overlap)
    chars = sum(r.chars for r in top)
    out = {"chars": _rate(chars, 1, f"context_chars@{k}"), "precision": _rate(covered, chars, f"span_precision@{k}")}
    if total == 0:
        out["recall"], out["iou"] = _no_ref(f"span_recall@{k}"), _no_ref(f"iou@{k}")
    else:
        out["recall"] = _rate(covered, total, f"span_recall@{k}")
        out["iou"] = _rate(covered, chars + uncovered, f"iou@{k}")
    return out


def budget_cut(lengths: Sequence[int], budget: int) -> list[int]:
    """Characters kept of each ranked result when results are taken in rank order until ``budget`` characters are
    spent, the last one cut to what fits: ``[800, 1200, 600]`` at 1,500 keeps ``[800, 700, 0]``.

    Raises:
        ValueError: ``budget`` not an int >= 1, or a negative length.
    """
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"a context budget must be an int >= 1, got {budget!r}")
    kept, left = [], budget
    for n in lengths:
        if n < 0:
            raise ValueError(f"a result length must be >= 0, got {n}")
        take = min(n, left)
        kept.append(take)
        left -= take
    return kept


def budget_recall(results: Sequence[RankedChunk], evidence: Iterable[Interval], budget: int, *,
                  evidence_overlap: str = "union") -> Rate:
    """span_recall@<budget>ch: evidence characters inside the context built by `budget_cut` / evidence characters.

    A result cut to its first ``m`` characters keeps, of each `Piece` ``(doc, s, e, offset)``, the reference
    characters ``[s, min(e, s + m - offset))`` (none when ``offset >= m``). Returns a `Rate` in [0, 1]
    (``no_reference`` without evidence characters); the denominator follows ``evidence_overlap`` as in
    `context_scores`.

    Raises:
        ValueError: as `budget_cut` and `context_scores`.
    """
    kept = budget_cut([r.chars for r in results], budget)
    pieces: list[Interval] = []
    for r, m in zip(results, kept):
        for d, s, e, off in r.covered:
            if m >= r.chars:
                pieces.append((d, s, e))
            elif off < m:
                pieces.append((d, s, min(e, s + m - off)))
    covered, total, _ = _evidence_terms(list(evidence), _union(pieces), evidence_overlap)
    name = f"span_recall@{budget}ch"
    return _no_ref(name) if total == 0 else _rate(covered, total, name)
