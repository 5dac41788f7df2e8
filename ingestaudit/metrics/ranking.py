"""Per-question ranking metrics of a retriever: hit@k, recall@k, precision@k, reciprocal rank, nDCG@k, average
precision, R-precision and span recall@k. Pure functions, no I/O.

Input shapes (shared by every function):

``ranked``
    The retriever's results for one question, best first: a sequence whose ``i``-th element (rank ``i + 1``) is the
    collection of **evidence item ids** that result holds (empty when it holds none). Ties in the retriever's
    scores are not seen here: the caller's order is kept as given (the TREC reader in ``ingestaudit.trec`` applies
    trec_eval's tie-break before calling these functions).
``grades``
    Every evidence item of the question, ``{item id: grade}``, grade an ``int >= 1`` (default 1 in
    questions.jsonl). Items that no result holds are still in the denominators. An id in ``ranked`` that is not in
    ``grades`` is a caller error (``ValueError``).
``k``
    The cutoff, an ``int >= 1``. Positions ``1..k`` are the top k; when fewer than ``k`` results were returned the
    missing positions are misses (they count in precision's denominator).

Policies (the retrieval auditor prints them in every report, ``config.auditors.retrieval.conventions``, and in
docs/metrics.md):

* **One evidence item counts once** however many results hold it: it is *found* at the first rank that holds it.
* A **relevant position** is a result that holds at least one evidence item (already found or not).
* A question the retriever returned **nothing** for scores 0 on every metric and stays in every denominator.
* A question **without evidence** (``grades`` empty) has no defined value: every function returns a `Rate` with
  ``value=None`` and ``state="no_reference"`` (:data:`NO_REFERENCE`), never 0 and never an exception, so the caller
  records the state instead of dropping or zero-filling the question.
* **A result holding several evidence items** (a chunk that holds two spans) credits every item it holds that no
  earlier result held, at its rank, in every metric: recall counts each; AP adds precision@r once per such item
  (precision counts relevant *positions*, so it stays <= 1); nDCG adds each item's gain. The one bound kept from
  trec_eval, where every relevant document occupies a rank of its own: the ``j``-th item found (in rank order, a
  result's items best grade first) is discounted at rank ``max(r, j)``, never above its place in the ideal ranking.
  So ``DCG <= ideal DCG`` and nDCG stays in [0, 1], and when every result holds at most one item (TREC data: one
  document, one judgement) ``r >= j`` always holds and the value is exactly trec_eval's. Worked example:
  ``ranked = [{a, b}]``, both grade 1, k = 5: recall 1, AP (1 + 1) / 2 = 1, DCG = 1/log2(2) + 1/log2(3) = ideal
  DCG, nDCG 1; at k = 1 only one item fits a rank-1 cut, DCG@1 = 1 = ideal DCG@1, nDCG@1 1 (recall@1 is 1).
  ``ranked = [{}, {a, b}]``: recall 1, AP (1/2 + 1/2) / 2 = 0.5, DCG = 2/log2(3) (both at rank 2), nDCG 0.774.

Every function returns an ``ingestaudit.metrics.rates.Rate`` holding its two terms so that micro averages
(``sum numerators / sum denominators`` over questions) are possible; for hit@k and rr the denominator is 1, so the
micro average equals the macro mean (MRR for rr). MAP, MRR and mean nDCG are the **macro** means of ``ap``, ``rr``
and ``ndcg@k`` over questions (Manning, Raghavan & Schütze, *Introduction to Information Retrieval*, 2008, ch. 8).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ingestaudit.metrics.rates import Rate

NO_REFERENCE = "no_reference"
"""State of a metric for a question without evidence items (``Rate.value is None``)."""

_NO_REF_REASON = "the question has no evidence items"

Ranked = Sequence[Collection[Hashable]]
"""One question's results, best first: the evidence item ids each result holds."""


def _check_k(k: int | None, allow_none: bool = False) -> None:
    if k is None and allow_none:
        return
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"cutoff k must be an int >= 1, got {k!r}")


def _check_grades(grades: Mapping[Hashable, int]) -> None:
    for item, g in grades.items():
        if isinstance(g, bool) or not isinstance(g, int) or g < 1:
            raise ValueError(f"evidence item {item!r} has grade {g!r}; grades are ints >= 1")


def _no_reference(name: str) -> Rate:
    return Rate(value=None, numerator=0, denominator=0, state=NO_REFERENCE, reason=_NO_REF_REASON, name=name)


def _rate(numerator: float, denominator: float, name: str) -> Rate:
    return Rate(value=numerator / denominator, numerator=numerator, denominator=denominator, name=name)


def _dcg_discount(rank: int) -> float:
    """The discount of 1-based ``rank``: ``log2(rank + 1)`` (Järvelin & Kekäläinen 2002 as in trec_eval 10)."""
    return math.log2(rank + 1)


@dataclass(frozen=True)
class _Scan:
    """One pass over the top ``depth`` positions of a ranking (internal; every metric reads it)."""

    depth: int  # positions scanned: min(len(ranked), limit)
    relevant_cum: list[int]  # relevant_cum[r] = relevant positions among ranks 1..r (index 0 = 0)
    found_cum: list[int]  # distinct items found among ranks 1..r
    ap_cum: list[float]  # sum over items first found at ranks <= r of precision at that rank
    first_relevant: int  # rank of the first relevant position, 0 if none within depth
    credit_rank: list[int]  # per item found, in order: the rank it is discounted at, max(r, j) (nondecreasing)
    dcg_cum: list[float]  # dcg_cum[j] = DCG of the first j items found (index 0 = 0.0)

    def dcg(self, k: int | None) -> float:
        """DCG of the items credited at ranks <= ``k`` (every item found when ``k`` is None)."""
        if k is None:
            return self.dcg_cum[-1]
        return self.dcg_cum[bisect_right(self.credit_rank, k)]


def _scan(ranked: Ranked, grades: Mapping[Hashable, int], limit: int | None) -> _Scan:
    depth = len(ranked) if limit is None else min(len(ranked), limit)
    relevant_cum = [0] * (depth + 1)
    found_cum = [0] * (depth + 1)
    ap_cum = [0.0] * (depth + 1)
    credit_rank: list[int] = []
    dcg_cum = [0.0]
    found: set[Hashable] = set()
    first = 0
    rel = 0
    ap = 0.0
    dcg = 0.0
    for i in range(depth):
        items = ranked[i]
        r = i + 1
        if items:
            for item in items:
                if item not in grades:
                    raise ValueError(f"rank {r} holds {item!r}, which is not an evidence item of the question")
            rel += 1
            if not first:
                first = r
            new = [item for item in dict.fromkeys(items) if item not in found]
            if new:
                precision = rel / r
                for item in sorted(new, key=lambda it: -grades[it]):  # a result's items best grade first
                    found.add(item)
                    ap += precision
                    v = max(r, len(found))  # the j-th item found is never discounted above rank j
                    dcg += grades[item] / _dcg_discount(v)
                    credit_rank.append(v)
                    dcg_cum.append(dcg)
        relevant_cum[r] = rel
        found_cum[r] = len(found)
        ap_cum[r] = ap
    return _Scan(depth, relevant_cum, found_cum, ap_cum, first, credit_rank, dcg_cum)


def _ideal_dcg(grades: Mapping[Hashable, int], k: int | None) -> float:
    ordered = sorted(grades.values(), reverse=True)
    if k is not None:
        ordered = ordered[:k]
    total = 0.0
    for i, g in enumerate(ordered):
        total += g / _dcg_discount(i + 1)
    return total


# ----------------------------------------------------------------------------------------------- per-question


def hit_at_k(ranked: Ranked, grades: Mapping[Hashable, int], k: int) -> Rate:
    """hit@k (trec_eval ``success_k``): 1 if some position among the top ``k`` holds an evidence item, else 0.

    Returns ``Rate(value in {0, 1}, numerator=0|1, denominator=1)``; ``no_reference`` without evidence.
    Raises ValueError: bad ``k`` or grades, or an id in ``ranked`` that is not an evidence item.
    Source: trec_eval 10 ``m_success.c``.
    """
    _check_k(k)
    name = f"hit@{k}"
    if not grades:
        return _no_reference(name)
    _check_grades(grades)
    s = _scan(ranked, grades, k)
    hit = 1 if s.first_relevant else 0
    return _rate(hit, 1, name)


def recall_at_k(ranked: Ranked, grades: Mapping[Hashable, int], k: int) -> Rate:
    """recall@k: distinct evidence items held by the top ``k`` positions / evidence items of the question.

    An item counts once however many results hold it. Returns ``Rate(numerator=items found (int),
    denominator=items (int))`` in [0, 1]; ``no_reference`` without evidence. Raises as `hit_at_k`.
    Source: trec_eval 10 ``recall_k`` (relevant retrieved in the top k / relevant).
    """
    _check_k(k)
    name = f"recall@{k}"
    if not grades:
        return _no_reference(name)
    _check_grades(grades)
    s = _scan(ranked, grades, k)
    return _rate(s.found_cum[s.depth], len(grades), name)


def precision_at_k(ranked: Ranked, grades: Mapping[Hashable, int], k: int) -> Rate:
    """precision@k: positions among the top ``k`` that hold at least one evidence item / ``k``.

    Positions the retriever left unfilled (fewer than ``k`` results) are misses. Returns ``Rate(numerator=relevant
    positions (int), denominator=k)`` in [0, 1]; ``no_reference`` without evidence. Raises as `hit_at_k`.
    Source: trec_eval 10 ``P_k`` (``m_P.c``: relevant retrieved in the top k / k).
    """
    _check_k(k)
    name = f"precision@{k}"
    if not grades:
        return _no_reference(name)
    _check_grades(grades)
    s = _scan(ranked, grades, k)
    return _rate(s.relevant_cum[s.depth], k, name)


def reciprocal_rank(ranked: Ranked, grades: Mapping[Hashable, int]) -> Rate:
    """rr: ``1 / rank`` of the first position holding an evidence item, 0 when no position does (whole list).

    Returns ``Rate(value=numerator=1/rank or 0.0, denominator=1)``, so the micro and macro means are both MRR;
    ``no_reference`` without evidence. Raises as `hit_at_k`. Source: Voorhees, TREC-8 QA track report (1999);
    trec_eval 10 ``recip_rank``.
    """
    name = "rr"
    if not grades:
        return _no_reference(name)
    _check_grades(grades)
    s = _scan(ranked, grades, None)
    rr = 1.0 / s.first_relevant if s.first_relevant else 0.0
    return _rate(rr, 1, name)


def ndcg_at_k(ranked: Ranked, grades: Mapping[Hashable, int], k: int | None) -> Rate:
    """nDCG@k: ``DCG@k / ideal DCG@k`` with linear gain (the grade) and discount ``log2(rank + 1)``.

    ``DCG@k = sum over the items e found, j-th in order, with max(r_e, j) <= k, of grade(e) / log2(max(r_e, j) + 1)``
    where ``r_e`` is the first rank that holds ``e`` (module docstring: a result's items are credited best grade
    first; with one item per result this is each item at its first rank, trec_eval's DCG). Ideal DCG@k: all evidence
    items sorted by grade, best first, one per rank, cut at ``k``. ``k=None``: no cut (the whole list; the ideal over
    all items; trec_eval ``ndcg``).

    Returns ``Rate(numerator=DCG, denominator=ideal DCG)`` (floats) in [0, 1]; ``no_reference`` without evidence.
    Raises as `hit_at_k`. Source: Järvelin & Kekäläinen, ACM TOIS 20(4):422-446 (2002); trec_eval 10
    ``ndcg_cut`` / ``ndcg`` (gain = judgement value; rank discount log2(rank + 1)).
    """
    _check_k(k, allow_none=True)
    name = "ndcg" if k is None else f"ndcg@{k}"
    if not grades:
        return _no_reference(name)
    _check_grades(grades)
    s = _scan(ranked, grades, k)
    return _rate(s.dcg(k), _ideal_dcg(grades, k), name)


def average_precision(ranked: Ranked, grades: Mapping[Hashable, int], k: int | None = None) -> Rate:
    """ap: average precision over **all** evidence items.

    ``AP = (sum over evidence items e found within the list of precision@rank(e)) / number of evidence items``,
    where ``rank(e)`` is the first rank that holds ``e`` and precision@r counts relevant positions (module
    docstring). Items never found contribute 0. With ``k`` only the top ``k`` positions are read (trec_eval
    ``map_cut_k``); the denominator stays all evidence items.

    Returns ``Rate(numerator=sum of precisions (float), denominator=items (int))`` in [0, 1]; ``no_reference``
    without evidence. Raises as `hit_at_k`. Source: trec_eval 10 ``m_map.c`` (Buckley & Voorhees 2005, "Retrieval
    system evaluation", in *TREC*, MIT Press).
    """
    _check_k(k, allow_none=True)
    name = "ap" if k is None else f"ap@{k}"
    if not grades:
        return _no_reference(name)
    _check_grades(grades)
    s = _scan(ranked, grades, k)
    return _rate(s.ap_cum[s.depth], len(grades), name)


def r_precision(ranked: Ranked, grades: Mapping[Hashable, int]) -> Rate:
    """R-precision: precision@R with ``R`` = the number of evidence items.

    Returns ``Rate(numerator=relevant positions in the top R, denominator=R)``; ``no_reference`` without evidence.
    Raises as `hit_at_k`. Source: trec_eval 10 ``Rprec``.
    """
    name = "r_precision"
    if not grades:
        return _no_reference(name)
    _check_grades(grades)
    r = len(grades)
    s = _scan(ranked, grades, r)
    return _rate(s.relevant_cum[s.depth], r, name)


def ranking_metrics(ranked: Ranked, grades: Mapping[Hashable, int], ks: Iterable[int]) -> dict[str, Rate]:
    """Every per-question metric in one pass: ``hit@k``, ``recall@k``, ``precision@k``, ``ndcg@k``, ``ap@k`` for
    each ``k`` in ``ks``, plus ``rr``, ``ap`` (whole list), ``ndcg`` (no cut) and ``r_precision``.

    Values are identical to the single-metric functions (same arithmetic). Without evidence every entry is
    ``no_reference``. Raises as `hit_at_k`.
    """
    ks = list(dict.fromkeys(ks))
    for k in ks:
        _check_k(k)
    names = ["rr", "ap", "ndcg", "r_precision"] + [f"{m}@{k}" for k in ks
                                                   for m in ("hit", "recall", "precision", "ndcg", "ap")]
    if not grades:
        return {n: _no_reference(n) for n in names}
    _check_grades(grades)
    s = _scan(ranked, grades, None)
    n_items = len(grades)
    out: dict[str, Rate] = {}
    out["rr"] = _rate(1.0 / s.first_relevant if s.first_relevant else 0.0, 1, "rr")
    out["ap"] = _rate(s.ap_cum[s.depth], n_items, "ap")
    out["ndcg"] = _rate(s.dcg(None), _ideal_dcg(grades, None), "ndcg")
    rd = min(n_items, s.depth)
    out["r_precision"] = _rate(s.relevant_cum[rd], n_items, "r_precision")
    for k in ks:
        d = min(k, s.depth)
        hit = 1 if s.first_relevant and s.first_relevant <= k else 0
        out[f"hit@{k}"] = _rate(hit, 1, f"hit@{k}")
        out[f"recall@{k}"] = _rate(s.found_cum[d], n_items, f"recall@{k}")
        out[f"precision@{k}"] = _rate(s.relevant_cum[d], k, f"precision@{k}")
        out[f"ndcg@{k}"] = _rate(s.dcg(k), _ideal_dcg(grades, k), f"ndcg@{k}")
        out[f"ap@{k}"] = _rate(s.ap_cum[d], n_items, f"ap@{k}")
    return out


# ----------------------------------------------------------------------------------------------- span recall

Interval = tuple[Hashable, int, int]
"""``(document id, start, end)``: code points ``[start, end)`` of that document's reference text."""


def _union(intervals: Iterable[Interval]) -> dict[Hashable, list[tuple[int, int]]]:
    by_doc: dict[Hashable, list[tuple[int, int]]] = {}
    for doc, start, end in intervals:
        if isinstance(start, bool) or isinstance(end, bool) or not isinstance(start, int) or not isinstance(end, int):
            raise ValueError(f"interval ({doc!r}, {start!r}, {end!r}) needs int offsets")
        if start < 0 or end < start:
            raise ValueError(f"interval ({doc!r}, {start}, {end}) needs 0 <= start <= end")
        if end > start:
            by_doc.setdefault(doc, []).append((start, end))
    merged: dict[Hashable, list[tuple[int, int]]] = {}
    for doc, spans in by_doc.items():
        spans.sort()
        out = [spans[0]]
        for s, e in spans[1:]:
            if s <= out[-1][1]:
                if e > out[-1][1]:
                    out[-1] = (out[-1][0], e)
            else:
                out.append((s, e))
        merged[doc] = out
    return merged


def _overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    """Length of the intersection of two sorted, disjoint interval lists."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def span_recall_at_k(covered: Sequence[Iterable[Interval]], evidence: Iterable[Interval], k: int) -> Rate:
    """span_recall@k: evidence characters covered by the union of the top-``k`` results / evidence characters.

    Args:
        covered: per ranked result (best first), the reference intervals ``(doc, start, end)`` that result covers
            (already mapped to reference coordinates by the caller, e.g. through ``OffsetMap``); empty for a result
            that covers no reference text.
        evidence: the question's evidence spans ``(doc, start, end)``.
        k: cutoff, ``int >= 1``.

    Both sides are unions per document before counting: a character covered by two overlapping results counts
    once, and so does a character inside two overlapping evidence spans. Returns ``Rate(numerator=covered evidence
    characters (int), denominator=evidence characters (int))`` in [0, 1]; with no evidence characters (no spans, or
    only empty ones) ``no_reference``. A question with no results scores 0.

    Against Chroma's evaluator (``BaseEvaluation._scores_from_dataset_and_retrievals`` in
    brandonstarxel/chunking_evaluation): its recall numerator is the same union (``union_ranges`` of the
    chunk-reference intersections, each character once); its recall denominator is the *sum* of the reference
    ranges' lengths (two overlapping references count their overlap twice; here once, so on such questions this
    value is higher); it counts Python ``str`` indices of the corpus (code points, as here) with each chunk located
    by a fuzzy text search, where this takes the covered reference intervals from the offset maps. Its precision
    and IoU denominators sum the retrieved chunks' lengths without a union; they are not computed here.

    Raises:
        ValueError: ``k`` not an int >= 1; an interval with non-int offsets or ``start > end`` or ``start < 0``.

    Source: the token-level recall of Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval" (Chroma
    technical report, 2024), counted in code points and over the true union of retrieved ranges.
    """
    _check_k(k)
    name = f"span_recall@{k}"
    ev = _union(evidence)
    total = sum(e - s for spans in ev.values() for s, e in spans)
    if total == 0:
        return Rate(value=None, numerator=0, denominator=0, state=NO_REFERENCE,
                    reason="the question has no evidence characters", name=name)
    got = _union(iv for res in covered[:k] for iv in res)
    hit = sum(_overlap(spans, got[doc]) for doc, spans in ev.items() if doc in got)
    return _rate(hit, total, name)
