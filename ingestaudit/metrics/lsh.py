"""MinHash LSH banding theory: the (b, r) that datasketch's MinHashLSH picks, the S-curve, and checks against it.

With ``b`` bands of ``r`` rows, two sets of Jaccard similarity ``J`` become LSH candidates (they agree on all ``r``
MinHash values of at least one band) with probability

    P(J) = 1 - (1 - J^r)^b

(Leskovec, Rajaraman & Ullman, *Mining of Massive Datasets*, 3rd ed., §3.4.2), assuming each of the ``b·r`` MinHash
values agrees independently with probability ``J``. The threshold is a soft S-curve, not a cut-off: at b=9, r=13,
``P(0.7) = 0.084``, ``P(0.8) = 0.399``, ``P(0.9) = 0.929``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ingestaudit.measurement import State
from ingestaudit.metrics.dedup import Rate, rate_of
from ingestaudit.metrics.intervals import Interval, wilson


def candidate_probability(jaccard: float, b: int, r: int) -> float:
    """``P(J) = 1 - (1 - J^r)^b``: probability that a pair with Jaccard ``J`` is an LSH candidate.

    Args:
        jaccard: exact Jaccard similarity ``J`` in [0, 1].
        b: number of bands (>= 1). r: rows per band (>= 1).

    Returns:
        A probability in [0, 1]; ``P(0) = 0`` and ``P(1) = 1``.

    Raises:
        ValueError: ``J`` outside [0, 1], or ``b`` / ``r`` below 1.
    """
    if not 0.0 <= jaccard <= 1.0:
        raise ValueError(f"jaccard must be in [0, 1], got {jaccard}")
    if b < 1 or r < 1:
        raise ValueError(f"b and r must be >= 1, got b={b}, r={r}")
    # -expm1(b * log1p(-J^r)) is 1 - (1 - J^r)^b without cancellation when J^r is tiny.
    jr = float(jaccard) ** r
    if jr == 1.0:
        return 1.0
    return -math.expm1(b * math.log1p(-jr))


def _areas(threshold: float, num_perm: int) -> dict[tuple[int, int], tuple[float, float]]:
    """``(b, r) -> (FP, FN)`` for every ``b`` in ``1..h`` and ``r`` in ``1..h // b`` (areas of `LSHParams`).

    Gauss-Legendre quadrature with ``h // 2 + 1`` nodes on each interval: the integrands are polynomials in ``s`` of
    degree ``b·r <= h``, which that rule integrates exactly (up to float rounding), all pairs at once in numpy.
    datasketch integrates them with ``scipy.integrate.quad`` (adaptive, same values to about 1e-12 here; the tests
    check that the chosen ``(b, r)`` is datasketch's over a grid of thresholds, lengths and weights).
    """
    nodes, weights = np.polynomial.legendre.leggauss(num_perm // 2 + 1)
    pairs = [(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)]
    bs = np.array([b for b, _ in pairs], dtype=np.float64)[:, None]
    rs = np.array([r for _, r in pairs], dtype=np.float64)[:, None]

    def integral(low: float, high: float, fn) -> np.ndarray:
        s = (high - low) / 2 * nodes + (high + low) / 2
        return (high - low) / 2 * (fn(s[None, :]) @ weights)

    fp = integral(0.0, threshold, lambda s: 1 - (1 - s ** rs) ** bs)
    fn = integral(threshold, 1.0, lambda s: (1 - s ** rs) ** bs)
    return {pair: (float(a), float(c)) for pair, a, c in zip(pairs, fp, fn)}


@dataclass(frozen=True)
class LSHParams:
    """Banding parameters of a MinHash LSH index.

    Attributes:
        threshold: the Jaccard threshold the parameters were optimised for.
        num_perm: MinHash length ``h`` (number of permutations).
        weights: ``(w_fp, w_fn)``, the weights of the two error areas below.
        b: number of bands. r: rows per band. Only ``b·r <= h`` hash values are used (`hash_values_used`).
        false_positive_area: ``FP = ∫_0^t P(s) ds``, the area under the S-curve below the threshold ``t``.
        false_negative_area: ``FN = ∫_t^1 (1 - P(s)) ds``, the area above the S-curve beyond the threshold.
            These are areas over a uniform Jaccard axis, not rates over any corpus.
    """

    threshold: float
    num_perm: int
    weights: tuple[float, float]
    b: int
    r: int
    false_positive_area: float
    false_negative_area: float

    @property
    def hash_values_used(self) -> int:
        """``b·r``, the number of the ``num_perm`` MinHash values the index reads (117 of 128 at b=9, r=13)."""
        return self.b * self.r

    def candidate_probability(self, jaccard: float) -> float:
        """`candidate_probability` at this index's ``b`` and ``r``."""
        return candidate_probability(jaccard, self.b, self.r)


@lru_cache(maxsize=256)
def lsh_params(threshold: float, num_perm: int, weights: tuple[float, float] = (0.5, 0.5)) -> LSHParams:
    """The ``(b, r)`` that ``datasketch.MinHashLSH(threshold, num_perm, weights)`` chooses, with its error areas.

    Grid search over every ``b`` in ``1..h`` and ``r`` in ``1..floor(h/b)`` minimising
    ``w_fp·FP(t, b, r) + w_fn·FN(t, b, r)`` (areas defined in `LSHParams`, integrated exactly by `_areas`;
    datasketch uses ``scipy.integrate.quad``), keeping the first minimum in that loop order (strict ``<``). This
    re-implements ``datasketch.lsh._optimal_param`` of datasketch 1.5-2.0 (read from its source, not copied), so
    that the report can state ``b`` and ``r`` without building an index; the tests check it against ``MinHashLSH(...).b, .r``.

    Examples (num_perm=128): t=0.5 -> b=25, r=5; t=0.8 -> b=9, r=13 (117 hash values used); t=0.9 -> b=5, r=25.

    Args:
        threshold: Jaccard threshold ``t`` in [0, 1].
        num_perm: ``h >= 2``.
        weights: ``(w_fp, w_fn)``, each in [0, 1], summing to 1.

    Raises:
        ValueError: the same conditions under which ``MinHashLSH`` refuses them, including the optimum having
            ``b < 2`` (for instance ``threshold=1.0``: datasketch cannot index exact duplicates; hash the text).
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError("threshold must be in [0.0, 1.0]")
    if num_perm < 2:
        raise ValueError("Too few permutation functions")
    if any(w < 0.0 or w > 1.0 for w in weights) or sum(weights) != 1.0:
        raise ValueError(f"weights must each be in [0, 1] and sum to 1.0, got {weights}")
    w_fp, w_fn = weights
    best = (math.inf, 0, 0, 0.0, 0.0)
    for (b, r), (fp, fn) in _areas(threshold, num_perm).items():  # loop order: b, then r
        err = fp * w_fp + fn * w_fn
        if err < best[0]:
            best = (err, b, r, fp, fn)
    _, b, r, fp, fn = best
    if b < 2:
        raise ValueError(f"threshold={threshold}, num_perm={num_perm} gives b={b} < 2 bands: MinHashLSH refuses it")
    return LSHParams(threshold, num_perm, tuple(weights), b, r, fp, fn)


def binomial_acceptance_region(p: float, n: int, confidence: float = 0.99) -> tuple[int, int]:
    """Central region of counts ``[k_lo, k_hi]`` holding ``X ~ Binomial(n, p)`` with probability >= ``confidence``.

    ``k_lo`` is the largest ``k`` with ``Pr[X < k] <= (1-confidence)/2`` and ``k_hi`` the smallest with
    ``Pr[X > k] <= (1-confidence)/2``, as ``scipy.stats.binom.interval`` computes them. Used to check an empirical
    candidate count against the theoretical ``P(J)``: if LSH behaves as the S-curve says, the count of candidates
    among ``n`` independent pairs of Jaccard ``J`` lies in this region with at least that probability.

    Raises:
        ValueError: ``p`` outside [0, 1], ``n < 1`` or ``confidence`` outside (0, 1).
    """
    from scipy.stats import binom

    if not 0.0 <= p <= 1.0 or n < 1 or not 0.0 < confidence < 1.0:
        raise ValueError(f"need p in [0, 1], n >= 1, confidence in (0, 1); got p={p}, n={n}, {confidence}")
    lo, hi = binom.interval(confidence, n, p)
    return int(lo), int(hi)


@dataclass(frozen=True)
class BucketRate:
    """Empirical LSH candidate rate of the pairs whose exact Jaccard falls in ``[low, high)`` (the last bucket is
    closed at 1), next to the S-curve.

    Attributes:
        low, high: bucket bounds on the Jaccard axis.
        pairs: pairs in the bucket; candidates: those the index returned as candidates.
        empirical: ``candidates / pairs`` as a `Rate` (``NO_REFERENCE`` for an empty bucket).
        interval: Wilson interval of the empirical rate (`ingestaudit.metrics.intervals.wilson`), None if empty.
        theoretical: mean of ``P(J_i)`` over the bucket's pairs (the expected rate), None if empty.
    """

    low: float
    high: float
    pairs: int
    candidates: int
    empirical: Rate
    interval: Interval | None
    theoretical: float | None


def candidate_rate_by_bucket(jaccards: Sequence[float], is_candidate: Sequence[bool], b: int, r: int,
                             edges: Iterable[float] = tuple(i / 10 for i in range(11)),
                             confidence: float = 0.95) -> tuple[BucketRate, ...]:
    """Empirical candidate rate per Jaccard bucket against the theoretical ``P(J) = 1 - (1 - J^r)^b``.

    Args:
        jaccards: exact Jaccard of each pair, in [0, 1].
        is_candidate: for each pair, whether the LSH index returned it.
        b, r: the index's bands and rows.
        edges: increasing bucket edges covering the values of interest; pairs outside ``[edges[0], edges[-1]]`` are
            ignored.
        confidence: level of the Wilson intervals.

    Raises:
        ValueError: lengths differ, edges are not increasing, or a Jaccard is outside [0, 1].
    """
    import numpy as np

    edges = list(edges)
    if len(jaccards) != len(is_candidate):
        raise ValueError("jaccards and is_candidate differ in length")
    if len(edges) < 2 or any(x >= y for x, y in zip(edges, edges[1:])):
        raise ValueError(f"edges must be at least two increasing values, got {edges}")
    n_buckets = len(edges) - 1
    jac = np.asarray(jaccards, dtype=np.float64).reshape(-1)
    cand = np.asarray(is_candidate, dtype=bool).reshape(-1)
    bad = (jac < 0.0) | (jac > 1.0) | np.isnan(jac)
    if bad.any():
        raise ValueError(f"jaccard {jac[np.flatnonzero(bad)[0]]} outside [0, 1]")
    inside = (jac >= edges[0]) & (jac <= edges[-1])
    jac, cand = jac[inside], cand[inside]
    # the first bucket whose upper edge exceeds J (the last bucket is closed at its upper edge)
    bucket = np.minimum(np.searchsorted(np.asarray(edges[1:], dtype=np.float64), jac, side="right"), n_buckets - 1)
    # P(J) from the scalar definition, once per distinct J; per-bucket sums run in pair order (bincount adds its
    # weights one by one), so the values are those of summing pair by pair
    values, where = np.unique(jac, return_inverse=True)
    prob = np.array([candidate_probability(float(v), b, r) for v in values], dtype=np.float64)[where]
    pairs = np.bincount(bucket, minlength=n_buckets).tolist()
    cands = np.bincount(bucket[cand], minlength=n_buckets).tolist()
    theo = np.bincount(bucket, weights=prob, minlength=n_buckets).tolist() if len(jac) else [0.0] * n_buckets
    out = []
    for k in range(n_buckets):
        rate = rate_of(cands[k], pairs[k], if_zero=State.NO_REFERENCE, reason="no pairs in this Jaccard bucket")
        out.append(BucketRate(edges[k], edges[k + 1], pairs[k], cands[k], rate,
                              wilson(cands[k], pairs[k], confidence), theo[k] / pairs[k] if pairs[k] else None))
    return tuple(out)
