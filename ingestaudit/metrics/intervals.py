"""Confidence intervals for aggregates over documents: Wilson score intervals for proportions of counts, and a seeded
percentile bootstrap over documents for everything else."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    """A two-sided confidence interval ``[low, high]`` and how it was computed (printed in the report)."""

    low: float
    high: float
    method: str


def wilson(successes: int, n: int, confidence: float = 0.95) -> Interval | None:
    """Wilson score interval for a binomial proportion ``successes / n``.

    With ``p = k/n`` and ``z`` the ``(1+confidence)/2`` normal quantile, the bounds are
    ``(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)`` (Wilson, 1927, JASA 22:209), as computed by
    ``scipy.stats.binomtest(...).proportion_ci(method="wilson")`` (computed here in closed form, ``z`` from
    ``statistics.NormalDist``, so no scipy import; tests check it against scipy to 1e-12). The bounds are exactly 0
    when ``k == 0`` and exactly 1 when ``k == n``. Worked values at 95 %: 5/10 -> [0.237, 0.763], 10/10 -> [0.722, 1], 0/10 -> [0, 0.2775].

    Returns:
        The interval, or None when ``n == 0`` (no interval exists; callers report a state, never NaN).

    Raises:
        ValueError: ``successes`` outside ``[0, n]``, non-integer counts, or ``confidence`` outside (0, 1).
    """
    import math
    from statistics import NormalDist

    if n == 0:
        return None
    if int(successes) != successes or int(n) != n or not 0 <= successes <= n:
        raise ValueError(f"wilson needs integer counts with 0 <= successes <= n, got {successes}/{n}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    k, n = int(successes), int(n)
    z = NormalDist().inv_cdf((1 + confidence) / 2)
    p = k / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    low = 0.0 if k == 0 else max(0.0, (centre - half) / scale)
    high = 1.0 if k == n else min(1.0, (centre + half) / scale)
    return Interval(low, high, f"wilson({confidence:g})")


BLOCK_VALUES = 1 << 21
"""Resampled indices drawn at a time by `bootstrap_ratio` (16 MB of int64): memory does not grow with the items."""


def bootstrap_ratio(numerators: Sequence[float], denominators: Sequence[float] | None, *, seed: int,
                    n_resamples: int = 1000, confidence: float = 0.95, unit: str = "docs") -> Interval | None:
    """Percentile bootstrap interval over documents (or whatever items ``unit`` names: ``"questions"`` for
    retrieval rows; it is printed in the interval's method).

    Documents are resampled with replacement ``n_resamples`` times (``numpy.random.default_rng(seed)``). With
    ``denominators`` the statistic is the micro ratio ``Σ numerator / Σ denominator`` of the resample (numerator and
    denominator of a document stay paired); without, it is the mean of ``numerators`` (macro). Bounds are the
    ``(1-confidence)/2`` and ``(1+confidence)/2`` quantiles of the resampled statistics (Efron & Tibshirani 1993,
    ch. 13; the same percentile method as ``scipy.stats.bootstrap(method="percentile")``).

    Returns:
        The interval, or None with fewer than 2 documents (a one-document bootstrap says nothing) or when a resample's
        denominator sum is 0.

    Raises:
        ValueError: lengths differ, ``n_resamples < 1`` or ``confidence`` outside (0, 1).
    """
    import numpy as np

    num = np.asarray(numerators, dtype=float)
    if denominators is not None and len(denominators) != len(num):
        raise ValueError("numerators and denominators differ in length")
    if n_resamples < 1 or not 0 < confidence < 1:
        raise ValueError("n_resamples must be >= 1 and confidence in (0, 1)")
    if len(num) < 2:
        return None
    rng = np.random.default_rng(seed)
    den = None if denominators is None else np.asarray(denominators, dtype=float)
    # resamples drawn in blocks of rows (the generator's stream is the same as one (n_resamples, n) draw, and each
    # resample's sum is taken along its own row), so memory stays at about BLOCK_VALUES values whatever n is
    block = max(1, BLOCK_VALUES // len(num))
    parts = []
    for lo in range(0, n_resamples, block):
        idx = rng.integers(0, len(num), size=(min(block, n_resamples - lo), len(num)))
        if den is None:
            parts.append(num[idx].mean(axis=1))
        else:
            den_sums = den[idx].sum(axis=1)
            if (den_sums == 0).any():
                return None
            parts.append(num[idx].sum(axis=1) / den_sums)
    stats = np.concatenate(parts)
    kind = "mean" if den is None else "micro"
    alpha = (1 - confidence) / 2
    low, high = np.quantile(stats, [alpha, 1 - alpha])
    return Interval(float(low), float(high),
                    f"bootstrap-percentile({kind},{unit},n={n_resamples},seed={seed},{confidence:g})")
