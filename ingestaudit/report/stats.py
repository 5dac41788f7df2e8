"""Paired statistics shared by the regression gate (base vs head) and the bake-off (pipeline a vs pipeline b).

Items are the sampling unit. For one summary row, the items measured (state ``ok``) on both sides form pairs, and:

* the **difference** of the headline value, ``b - a``: for a micro row ``Σ num_b / Σ den_b - Σ num_a / Σ den_a``
  over the paired items, for a macro row the mean of the per-item differences;
* its **interval**: a seeded percentile bootstrap over the paired items, an item's numerators and denominators
  of both sides resampled together (Efron & Tibshirani 1993, ch. 13);
* a **test** of "no difference": for a micro row the exact two-sided sign test on the per-item values (a micro
  value weighs items by their denominators, so per-item magnitudes are not comparable; only the direction of each
  item's change is used: `ingestaudit.metrics.significance.sign_test`); for a macro row (a plain mean) the
  two-sided Wilcoxon signed-rank test on the per-item differences (``scipy.stats.wilcoxon``,
  ``zero_method="wilcox"``, exact below 50 non-zero differences without ties). Both drop unchanged items, so both
  reach at best ``p = 2 * 0.5 ** moved`` (`ingestaudit.metrics.significance.min_attainable_p`);
* **multiplicity**: `family_adjust` applies Tarone's rule (a test that cannot reach ``alpha / K`` is left out of
  the family of ``K``) and Holm's step-down correction within the family.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ingestaudit.metrics.significance import holm, min_attainable_p, sign_test

ALPHA = 0.05
"""Family-wise significance level of the gate and of the bake-off's ``significant`` flags."""

SIGN_METHOD = "sign test (exact, two-sided) on per-item changes"
WILCOXON_METHOD = "Wilcoxon signed-rank (two-sided, zero_method=wilcox) on per-item differences"


@dataclass(frozen=True)
class Pairs:
    """Aligned per-item values of two sides (``a`` the baseline or first pipeline, ``b`` the other).

    ``num_*``/``den_*`` are None unless every paired item carries counts (then the row's headline is micro)."""

    items: tuple[str, ...]
    a: tuple[float, ...]
    b: tuple[float, ...]
    num_a: tuple[float, ...] | None = None
    den_a: tuple[float, ...] | None = None
    num_b: tuple[float, ...] | None = None
    den_b: tuple[float, ...] | None = None

    @property
    def n(self) -> int:
        return len(self.items)

    @property
    def micro(self) -> bool:
        """True when the difference is of micro values (every item has counts on both sides)."""
        return self.num_a is not None and self.n > 0 and sum(self.den_a) > 0 and sum(self.den_b) > 0  # type: ignore[arg-type]

    @property
    def moved(self) -> int:
        """Items whose value changed."""
        return sum(1 for x, y in zip(self.a, self.b) if x != y)


def pairs_of(items: Sequence[str], a_rows: Sequence[Any], b_rows: Sequence[Any]) -> Pairs:
    """`Pairs` from aligned measurement rows (``value``, ``numerator``, ``denominator``; all in state ok); counts
    are kept only when every row of both sides has them."""
    counts = bool(items) and all(r.numerator is not None and r.denominator is not None
                                 for r in (*a_rows, *b_rows))

    def col(rows: Sequence[Any], name: str) -> tuple[float, ...]:
        return tuple(float(getattr(r, name)) for r in rows)

    return Pairs(tuple(items), col(a_rows, "value"), col(b_rows, "value"),
                 *((col(a_rows, "numerator"), col(a_rows, "denominator"), col(b_rows, "numerator"),
                    col(b_rows, "denominator")) if counts else (None, None, None, None)))


@dataclass(frozen=True)
class PairedResult:
    """Difference ``b - a`` with its interval and a test of no difference."""

    n_pairs: int
    moved: int
    diff: float | None
    low: float | None
    high: float | None
    p_value: float
    min_p: float  # the smallest p this test could give with ``moved`` changed items
    method: str
    statistic: float = 0.0


def row_seed(seed: int, *key: str) -> int:
    """A seed for one row's bootstrap from the run seed and the row's key, so a row's interval does not depend on
    which other rows exist (as in `ingestaudit.report.aggregate`)."""
    return (seed * 1_000_003 + zlib.crc32("\0".join(key).encode())) % 2**32


def difference(p: Pairs) -> float | None:
    """The headline difference ``b - a`` on the paired items (None without pairs)."""
    if not p.n:
        return None
    if p.micro:
        return sum(p.num_b) / sum(p.den_b) - sum(p.num_a) / sum(p.den_a)  # type: ignore[arg-type]
    return sum(y - x for x, y in zip(p.a, p.b)) / p.n


def bootstrap_difference(p: Pairs, *, seed: int, n_resamples: int = 1000,
                         confidence: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap interval of `difference` over the paired items; None with fewer than 2 pairs.

    Resamples whose denominator sum is 0 on either side are dropped (they have no micro value)."""
    import numpy as np

    if p.n < 2:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, p.n, size=(n_resamples, p.n))
    if p.micro:
        na, da = np.asarray(p.num_a, float)[idx].sum(1), np.asarray(p.den_a, float)[idx].sum(1)
        nb, db = np.asarray(p.num_b, float)[idx].sum(1), np.asarray(p.den_b, float)[idx].sum(1)
        keep = (da > 0) & (db > 0)
        if not keep.any():
            return None
        stats = nb[keep] / db[keep] - na[keep] / da[keep]
    else:
        d = np.asarray(p.b, float) - np.asarray(p.a, float)
        stats = d[idx].mean(1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(stats, [alpha, 1 - alpha])
    return float(low), float(high)


def paired_test(p: Pairs) -> tuple[float, float, str]:
    """``(p_value, statistic, method)``: the sign test for a micro row, Wilcoxon for a macro row (module doc)."""
    if p.micro:
        wins = sum(1 for x, y in zip(p.a, p.b) if y > x)
        losses = sum(1 for x, y in zip(p.a, p.b) if y < x)
        t = sign_test(wins, losses, p.n - wins - losses)
        return t.p_value, float(min(wins, losses)), SIGN_METHOD
    diffs = [y - x for x, y in zip(p.a, p.b)]
    if all(d == 0 for d in diffs):
        return 1.0, 0.0, WILCOXON_METHOD
    from scipy.stats import wilcoxon

    res = wilcoxon(diffs, zero_method="wilcox", alternative="two-sided")
    return min(1.0, float(res.pvalue)), float(res.statistic), WILCOXON_METHOD


def compare_pairs(p: Pairs, *, seed: int, n_resamples: int = 1000, confidence: float = 0.95,
                  interval: bool = True) -> PairedResult:
    """Difference, interval (when ``interval``) and test for one row's pairs."""
    moved = p.moved
    pval, stat, method = paired_test(p) if p.n else (1.0, 0.0, "none (no pairs)")
    ci = bootstrap_difference(p, seed=seed, n_resamples=n_resamples, confidence=confidence) if interval else None
    return PairedResult(p.n, moved, difference(p), ci[0] if ci else None, ci[1] if ci else None, pval,
                        min_attainable_p(moved), method, stat)


def family_adjust(p_values: Sequence[float], min_ps: Sequence[float], alpha: float = ALPHA
                  ) -> tuple[int, list[float | None]]:
    """Tarone's family with Holm's correction inside it.

    ``K`` is the smallest ``k >= 1`` such that at most ``k`` tests have a minimum attainable p ``<= alpha / k``
    (Tarone, "A modified Bonferroni method for discrete data", Biometrics 46:515-522, 1990); the family is those
    tests, and Holm's step-down correction runs over it. A test outside the family could not have been significant
    whatever the data, so leaving it out costs the others nothing and keeps the family-wise error rate at alpha.

    Returns:
        ``(K, adjusted)``: ``adjusted[i]`` is the Holm-adjusted p of test ``i``, or None when it is outside the
        family.
    """
    m = len(p_values)
    k = 1
    while sum(1 for q in min_ps if q <= alpha / k) > k:
        k += 1
    family = [i for i in range(m) if min_ps[i] <= alpha / k]
    out: list[float | None] = [None] * m
    for i, adj in zip(family, holm([p_values[i] for i in family])):
        out[i] = adj
    return k, out


def underpowered(n_pairs: int, k: int, alpha: float = ALPHA) -> bool:
    """True when even ``n_pairs`` items all moving the same way could not reach the family's level ``alpha / k``:
    ``min_attainable_p(n_pairs) > alpha / k`` (at alpha 0.05 and K = 1: five pairs or fewer)."""
    return min_attainable_p(n_pairs) > alpha / k
