"""Paired statistics shared by the regression gate (base vs head) and the bake-off (pipeline a vs pipeline b).

Items are the sampling unit. For one summary row, the items measured (state ``ok``) on both sides form pairs, and:

* the **difference** of the headline value, ``b - a``: for a micro row ``Σ num_b / Σ den_b - Σ num_a / Σ den_a``
  over the paired items, for a macro row the mean of the per-item differences; the **worsening** is that
  difference oriented so that positive is worse (`Orientation`: lower is better, higher is better, or the distance
  to an ideal value), ``badness(value_b) - badness(value_a)``;
* its **interval**: a seeded percentile bootstrap over the paired items, an item's numerators and denominators
  of both sides resampled together (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 13);
* a **one-sided test** of the gated number in each direction:

  - micro rows: the same paired bootstrap. ``p_worse`` = the share of resamples in which ``b`` is **not** worse
    than ``a`` (worsening <= 0), with the usual +1 in numerator and denominator so that p is never 0: ``p = (1 +
    #{worsening* <= 0}) / (1 + B)`` (Davison & Hinkley, *Bootstrap Methods and their Application*, 1997, eq.
    4.11). ``p_better`` is the mirror image (worsening* >= 0). Resamples whose denominator sum is 0 on either side
    have no micro value and are dropped;
  - macro rows (a plain mean): the Wilcoxon signed-rank test on the per-item worsenings, one-sided
    (``scipy.stats.wilcoxon(..., alternative="greater")`` for ``p_worse``, ``"less"`` for ``p_better``), unchanged
    items dropped first (Wilcoxon's ``zero_method="wilcox"``); scipy's ``method="auto"`` makes it exact without
    tied ranks and an exact permutation test with ties up to 13 pairs, and uses the normal approximation with a
    continuity correction above that (Wilcoxon, Biometrics Bulletin 1:80-83, 1945);

  the bake-off, which has no direction fixed in advance, uses the two-sided ``p = min(1, 2 * min(p_worse,
  p_better))``;
* **power**: no test of "b is worse" on ``n`` pairs can reach below ``0.5 ** n`` (one-sided) without assuming more
  than that each pair's sign is equally likely either way; a macro row's Wilcoxon test reaches at best ``0.5 **
  moved``. The micro bootstrap is taken to be no sharper than an exact test on its pairs (`attainable_p`);
* **multiplicity**: `family_adjust` applies Tarone's rule (a test that cannot reach ``alpha / K`` is left out of
  the family of ``K``) and Holm's step-down correction within the family; a row whose pairs could never reach the
  family's level is `underpowered`.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from operator import attrgetter
from typing import Any

from ingestaudit.metrics.significance import holm

ALPHA = 0.05
"""Family-wise significance level of the gate and of the bake-off's ``significant`` flags."""

BOOTSTRAP_METHOD = ("paired bootstrap over items (numerators and denominators of both sides resampled together), "
                    "one-sided: p = (1 + resamples not worse) / (1 + B)")
WILCOXON_METHOD = "Wilcoxon signed-rank on per-item worsenings (one-sided, zero_method=wilcox, scipy method=auto)"
CHUNK = 2_000_000  # resampled indices held in memory at once


@dataclass(frozen=True)
class Orientation:
    """Which way a value is worse: ``badness(v) = |v - ideal|`` when ``ideal`` is set, else ``v`` when lower is
    better and ``-v`` when higher is better (larger badness is worse)."""

    lower_is_better: bool = True
    ideal: float | None = None

    def badness(self, value: Any) -> Any:
        """Badness of a float or a numpy array (same shape)."""
        if self.ideal is not None:
            return abs(value - self.ideal)
        return value if self.lower_is_better else -value


def orientation_of(metric: str, label: str = "") -> Orientation:
    """The orientation of a metric from its declaration (`ingestaudit.metrics.specs`); the loss waterfall's
    ``retrieved`` share is better higher (its loss shares lower); an unregistered metric is taken as better
    higher."""
    from ingestaudit.auditors import metric_catalog as specs

    if metric.startswith("retrieval.outcome@"):
        return Orientation(lower_is_better=label != "retrieved")
    try:
        spec = specs.get(metric)
    except KeyError:
        return Orientation(lower_is_better=False)
    return Orientation(lower_is_better=not spec.higher_is_better, ideal=spec.ideal)


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

    @cached_property
    def micro(self) -> bool:
        """True when the difference is of micro values (every item has counts on both sides); computed once."""
        return self.num_a is not None and self.n > 0 and sum(self.den_a) > 0 and sum(self.den_b) > 0  # type: ignore[arg-type]

    @cached_property
    def moved(self) -> int:
        """Items whose value changed (computed once: the gate reads it several times per row)."""
        return sum(1 for x, y in zip(self.a, self.b) if x != y)

    def value(self, side: str) -> float:
        """The headline value of one side (``"a"`` or ``"b"``) over the pairs: micro, else the mean."""
        if self.micro:
            return sum(getattr(self, f"num_{side}")) / sum(getattr(self, f"den_{side}"))
        vals = getattr(self, side)
        return sum(vals) / len(vals)


def pairs_of(items: Sequence[str], a_rows: Sequence[Any], b_rows: Sequence[Any]) -> Pairs:
    """`Pairs` from aligned measurement rows (``value``, ``numerator``, ``denominator``; all in state ok); counts
    are kept only when every row of both sides has them."""
    counts = bool(items) and all(r.numerator is not None and r.denominator is not None
                                 for r in (*a_rows, *b_rows))

    def col(rows: Sequence[Any], name: str) -> tuple[float, ...]:
        return tuple(map(float, map(attrgetter(name), rows)))

    return Pairs(tuple(items), col(a_rows, "value"), col(b_rows, "value"),
                 *((col(a_rows, "numerator"), col(a_rows, "denominator"), col(b_rows, "numerator"),
                    col(b_rows, "denominator")) if counts else (None, None, None, None)))


@dataclass(frozen=True)
class PairedResult:
    """Difference ``b - a`` with its interval, the worsening of ``b`` and one-sided p-values in both directions.

    ``p_worse``: evidence that ``b`` is worse than ``a`` (small = strong); ``p_better``: that ``b`` is better;
    ``resamples``: bootstrap resamples behind the micro p-values (0 for the Wilcoxon test)."""

    n_pairs: int
    moved: int
    diff: float | None
    low: float | None
    high: float | None
    worse: float | None
    p_worse: float
    p_better: float
    method: str
    statistic: float = 0.0
    resamples: int = 0

    @property
    def p_two_sided(self) -> float:
        """``min(1, 2 * min(p_worse, p_better))``."""
        return min(1.0, 2.0 * min(self.p_worse, self.p_better))


def row_seed(seed: int, *key: str) -> int:
    """A seed for one row's bootstrap from the run seed (``[run] seed``) and the row's key, so a row's interval does
    not depend on which other rows exist. Callers pass the class, metric and label, never a pipeline's name:
    identical data in two pipelines (or under a renamed pipeline) gives identical intervals and p-values."""
    return (seed * 1_000_003 + zlib.crc32("\0".join(key).encode())) % 2**32


def difference(p: Pairs) -> float | None:
    """The headline difference ``b - a`` on the paired items (None without pairs)."""
    if not p.n:
        return None
    if p.micro:
        return p.value("b") - p.value("a")
    return sum(y - x for x, y in zip(p.a, p.b)) / p.n


def _resample(p: Pairs, orient: Orientation, seed: int, n_draws: int) -> tuple[Any, Any]:
    """``(diff*, worse*)`` for ``n_draws`` seeded resamples of the pairs (micro: ratio of resampled sums, else the
    mean of resampled differences); resamples without a micro value are NaN. Drawn in chunks; the first ``m``
    resamples are the same whatever ``n_draws`` is."""
    import numpy as np

    rng = np.random.default_rng(seed)
    per_chunk = max(1, CHUNK // max(1, p.n))
    diffs, worses = [], []
    if n_draws <= 0:
        return np.zeros(0), np.zeros(0)
    if p.micro:
        cols = [np.asarray(c, float) for c in (p.num_a, p.den_a, p.num_b, p.den_b)]
    else:
        a, b = np.asarray(p.a, float), np.asarray(p.b, float)
    done = 0
    while done < n_draws:
        size = min(per_chunk, n_draws - done)
        idx = rng.integers(0, p.n, size=(size, p.n))
        if p.micro:
            na, da, nb, db = (c[idx].sum(1) for c in cols)
            keep = (da > 0) & (db > 0)
            va = np.where(keep, na / np.where(keep, da, 1), np.nan)
            vb = np.where(keep, nb / np.where(keep, db, 1), np.nan)
        else:
            va, vb = a[idx].mean(1), b[idx].mean(1)
        diffs.append(vb - va)
        worses.append(orient.badness(vb) - orient.badness(va))
        done += size
    return np.concatenate(diffs), np.concatenate(worses)


def bootstrap_difference(p: Pairs, *, seed: int, n_resamples: int = 1000,
                         confidence: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap interval of `difference` over the paired items; None with fewer than 2 pairs or no
    resample with a micro value."""
    import numpy as np

    if p.n < 2:
        return None
    diffs, _ = _resample(p, Orientation(), seed, n_resamples)
    diffs = diffs[~np.isnan(diffs)]
    if not diffs.size:
        return None
    tail = (1 - confidence) / 2
    low, high = np.quantile(diffs, [tail, 1 - tail])
    return float(low), float(high)


def bootstrap_p(worse_star: Any) -> tuple[float, float, int]:
    """``(p_worse, p_better, B)`` from resampled worsenings (NaN = no micro value, dropped): ``p_worse = (1 +
    #{w <= 0}) / (1 + B)``, ``p_better = (1 + #{w >= 0}) / (1 + B)``."""
    import numpy as np

    w = worse_star[~np.isnan(worse_star)]
    b = int(w.size)
    return (1 + int((w <= 0).sum())) / (1 + b), (1 + int((w >= 0).sum())) / (1 + b), b


def wilcoxon_p(worse: Sequence[float]) -> tuple[float, float, float]:
    """``(p_worse, p_better, W+)``: one-sided Wilcoxon signed-rank tests of per-item worsenings (zeros dropped;
    ``W+`` is the rank sum of the worsened items). Without a non-zero worsening both p are 1."""
    d = [x for x in worse if x != 0]
    if not d:
        return 1.0, 1.0, 0.0
    from scipy.stats import wilcoxon

    up = wilcoxon(d, alternative="greater")
    down = wilcoxon(d, alternative="less")
    return min(1.0, float(up.pvalue)), min(1.0, float(down.pvalue)), float(up.statistic)


def compare_pairs(p: Pairs, orient: Orientation = Orientation(), *, seed: int, n_resamples: int = 1000,
                  confidence: float = 0.95, interval: bool = True, test_resamples: int | None = None,
                  refine_below: float = ALPHA) -> PairedResult:
    """Difference, interval (when ``interval``), worsening and one-sided p-values for one row's pairs.

    Micro rows are tested with ``n_resamples`` bootstrap resamples; when either p is below ``refine_below`` and
    ``test_resamples`` is larger, the test is redone with ``test_resamples`` (the same seed, so the first
    ``n_resamples`` are the same resamples: the interval does not change), so that a small p is resolved finely
    enough for Holm's bar ``alpha / K``."""
    import numpy as np

    moved = p.moved
    if not p.n:
        return PairedResult(0, 0, None, None, None, None, 1.0, 1.0, "none (no pairs)")
    diff = difference(p)
    worse = float(orient.badness(p.value("b")) - orient.badness(p.value("a")))
    need = n_resamples if (interval and p.n >= 2) else 0
    statistic, resamples = 0.0, 0
    if p.micro:
        if moved == 0 and p.num_a == p.num_b and p.den_a == p.den_b:
            p_worse = p_better = 1.0  # the same counts on both sides: every resample is unchanged
            diffs = np.zeros(need)
        else:
            diffs, worses = _resample(p, orient, seed, max(need, n_resamples))
            p_worse, p_better, resamples = bootstrap_p(worses)
            if test_resamples and test_resamples > n_resamples and min(p_worse, p_better) < refine_below:
                _, worses = _resample(p, orient, seed, test_resamples)
                p_worse, p_better, resamples = bootstrap_p(worses)
        method = BOOTSTRAP_METHOD
    else:
        p_worse, p_better, statistic = wilcoxon_p([float(orient.badness(y) - orient.badness(x))
                                                   for x, y in zip(p.a, p.b)])
        diffs = _resample(p, orient, seed, need)[0] if need else np.zeros(0)
        method = WILCOXON_METHOD
    low = high = None
    if need:
        kept = diffs[~np.isnan(diffs)][:n_resamples]
        if kept.size:
            tail = (1 - confidence) / 2
            low, high = (float(v) for v in np.quantile(kept, [tail, 1 - tail]))
    return PairedResult(p.n, moved, diff, low, high, worse, p_worse, p_better, method, statistic, resamples)


def attainable_p(n_pairs: int, moved: int, micro: bool, sides: int = 1) -> float:
    """The smallest p a row's test is taken to reach: ``sides * 0.5 ** moved`` for the Wilcoxon test (unchanged
    items are dropped), ``sides * 0.5 ** n_pairs`` for the micro bootstrap (no sharper than an exact test on its
    pairs), 1 when nothing moved; capped at 1."""
    if moved == 0:
        return 1.0
    return min(1.0, sides * 0.5 ** (n_pairs if micro else moved))


def resamples_for_family(k: int, alpha: float = ALPHA, n_resamples: int = 1000) -> int:
    """Bootstrap resamples for the micro tests of a family of ``K``: at least ``n_resamples``, and enough that
    the smallest bootstrap p, ``1 / (1 + B)``, is 20 times below Holm's first bar ``alpha / K``."""
    return max(n_resamples, math.ceil(20 * max(1, k) / alpha))


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
    k = family_size(min_ps, alpha)
    family = [i for i in range(len(p_values)) if min_ps[i] <= alpha / k]
    out: list[float | None] = [None] * len(p_values)
    for i, adj in zip(family, holm([p_values[i] for i in family])):
        out[i] = adj
    return k, out


def family_size(min_ps: Sequence[float], alpha: float = ALPHA) -> int:
    """Tarone's ``K`` (see `family_adjust`), known before any test is run."""
    k = 1
    while sum(1 for q in min_ps if q <= alpha / k) > k:
        k += 1
    return k


def underpowered(n_pairs: int, k: int, alpha: float = ALPHA, sides: int = 1) -> bool:
    """True when even ``n_pairs`` items all moving the same way could not reach the family's level ``alpha / k``:
    ``sides * 0.5 ** n_pairs > alpha / k`` (one-sided at alpha 0.05 and K = 1: four pairs or fewer; two-sided:
    five or fewer)."""
    return sides * 0.5 ** n_pairs > alpha / k
