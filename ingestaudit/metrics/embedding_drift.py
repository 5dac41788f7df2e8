"""Embedding drift between two runs (base and head) of one pipeline: nearest-neighbour stability, squared maximum
mean discrepancy with a permutation p-value, and per-item cosines. Pure functions over arrays and key lists; the
searches that produce the neighbour lists are the caller's (`ingestaudit.embedding_drift`).

Definitions (base vectors ``X``, head vectors ``Y``, rows of the same items in the same order, ``m`` rows each):

- **nearest-neighbour stability** of one probe: ``J(N_b, N_h) = |N_b ∩ N_h| / |N_b ∪ N_h|`` (Jaccard 1901), where
  ``N_b`` and ``N_h`` are the probe's top-k neighbour sets in base and head, each neighbour named by its key
  (document, start, end), so a re-chunked document's neighbours no longer match; ``embedding.nn_stability@k`` is the
  mean over probes (a probe with two empty sets is left out: 0/0).
- **squared MMD** (Gretton, Borgwardt, Rasch, Schölkopf & Smola 2012, "A kernel two-sample test", JMLR 13, eq. 5,
  the biased V-statistic ``MMD_b²``): ``mean K(X, X) + mean K(Y, Y) - 2 mean K(X, Y)``, each mean over all ``m²``
  pairs (diagonals included), so identical sets give exactly 0 and the value is never negative.
  Kernel: RBF ``k(x, y) = exp(-||x - y||² / (2 σ²))`` with the **median heuristic** as named here: ``med`` = median
  of the squared Euclidean distances over all unordered pairs ``i < j`` of the pooled ``2m`` vectors, and
  ``σ² = med / 2`` (so ``k(x, y) = exp(-||x - y||² / med)``). When ``med`` is 0 (over half the pooled pairs coincide)
  ``med`` is the mean of the positive squared distances instead (``bandwidth_rule`` says which), and when every
  pooled vector is the same point the kernel is constant, MMD² = 0 and p = 1.
- **permutation p-value** (two-sample permutation test; Gretton et al. 2012 §7 use the same bootstrap of the null):
  the pooled rows are relabelled ``B`` times by a seeded ``numpy.random.default_rng(seed).permutation``, MMD_b² is
  recomputed with the same kernel matrix, and ``p = (1 + #{b : MMD²_b >= MMD²_obs}) / (1 + B)`` (Phipson & Smyth
  2010: never 0). Identical sets give p = 1.
- **cosine** of one item: ``<x, y> / (||x|| ||y||)`` in float64; a zero vector gives NaN (undefined), counted apart.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

BANDWIDTH_RULE = ("median heuristic: med = median squared Euclidean distance over pooled pairs i < j, sigma^2 = "
                  "med / 2, k(x, y) = exp(-||x - y||^2 / med)")
"""The bandwidth rule in words (printed with every MMD value)."""


def neighbour_jaccard(base: Iterable[Hashable], head: Iterable[Hashable]) -> float | None:
    """Jaccard similarity ``|A ∩ B| / |A ∪ B|`` of one probe's base and head neighbour keys (in [0, 1]); None when
    both are empty (0/0)."""
    a, b = set(base), set(head)
    union = len(a | b)
    return len(a & b) / union if union else None


def nn_stability(pairs: Iterable[tuple[Iterable[Hashable], Iterable[Hashable]]]) -> tuple[float | None, list[float | None]]:
    """Mean neighbour Jaccard over probes: ``(mean, per-probe values)``; the mean leaves out probes whose value is
    None and is None when none is defined. Range [0, 1]; 1.0 when every probe has the same neighbour set."""
    per = [neighbour_jaccard(b, h) for b, h in pairs]
    defined = [v for v in per if v is not None]
    return (sum(defined) / len(defined) if defined else None), per


def squared_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise squared Euclidean distances ``(len(a), len(b))`` in float64, ``||a||² + ||b||² - 2 a·b`` clipped at
    0 (rounding)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    d = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * (a @ b.T)
    np.maximum(d, 0.0, out=d)
    return d


def median_bandwidth(sq: np.ndarray) -> tuple[float, str]:
    """The median heuristic on a pooled matrix of squared distances ``sq`` (n, n): ``(med, rule)`` where ``med`` is
    the median over pairs ``i < j`` (``rule`` ``"median"``), or, when that is 0, the mean of the positive ones
    (``"mean of positive (median 0)"``); ``med`` is 0 only when every distance is 0 (``"all points equal"``).

    Raises:
        ValueError: fewer than 2 points.
    """
    n = sq.shape[0]
    if n < 2:
        raise ValueError("the median heuristic needs at least 2 points")
    upper = sq[np.triu_indices(n, 1)]
    med = float(np.median(upper))
    if med > 0:
        return med, "median"
    positive = upper[upper > 0]
    if positive.size:
        return float(positive.mean()), "mean of positive (median 0)"
    return 0.0, "all points equal"


MIN_MMD_ITEMS = 2
"""Rows per side below which the MMD test is not computable: with one row per side every relabelling gives the
observed MMD (p = 1 whatever the vectors)."""


@dataclass(frozen=True)
class MMDResult:
    """Squared MMD of base against head and its permutation test.

    Attributes:
        mmd2: MMD_b² (module docstring), >= 0.
        p_value: permutation p-value in (0, 1].
        permutations: B, the number of relabellings.
        seed: the permutation generator's seed.
        n: rows per side (``m``).
        median_sq: the bandwidth's ``med`` (squared distance); ``sigma2`` = med / 2.
        bandwidth_rule: how ``med`` was found (`median_bandwidth`).
    """

    mmd2: float
    p_value: float
    permutations: int
    seed: int
    n: int
    median_sq: float
    sigma2: float
    bandwidth_rule: str

    def to_dict(self) -> dict:
        """JSON-ready fields, plus the rule in words (`BANDWIDTH_RULE`)."""
        return {"mmd2": self.mmd2, "p_value": self.p_value, "permutations": self.permutations, "seed": self.seed,
                "n": self.n, "median_sq": self.median_sq, "sigma2": self.sigma2,
                "bandwidth_rule": self.bandwidth_rule, "kernel": BANDWIDTH_RULE}


def _mmd2_from_weights(kernel: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``wᵀ K w`` per column of ``w`` (n, B): with ``w = +1/m`` on X rows and ``-1/m`` on Y rows this is MMD_b²."""
    return np.einsum("ib,ib->b", w, kernel @ w)


def mmd_test(x: np.ndarray, y: np.ndarray, *, permutations: int = 500, seed: int = 0) -> MMDResult:
    """MMD_b² with the RBF kernel and median-heuristic bandwidth between ``x`` and ``y`` (each (m, d), same m >= 2,
    same d), and its permutation p-value (module docstring). Cost: one (2m)² kernel matrix and ``B`` matrix-vector
    products; subsample large sets first (the caller says so).

    ``m`` = 1 is refused, not answered: the only relabellings of two points swap them and give the same MMD, so the
    p-value would be 1 whatever the vectors (`MIN_MMD_ITEMS`).

    Raises:
        ValueError: shapes differ, fewer than `MIN_MMD_ITEMS` rows per side, or ``permutations`` < 1.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or x.shape != y.shape or x.shape[0] < MIN_MMD_ITEMS:
        raise ValueError(f"mmd_test needs two (m, d) arrays of one shape, m >= {MIN_MMD_ITEMS}; got {x.shape} and "
                         f"{y.shape}")
    if permutations < 1:
        raise ValueError(f"permutations must be >= 1, got {permutations}")
    m = x.shape[0]
    pooled = np.vstack([x, y])
    sq = squared_distances(pooled, pooled)
    med, rule = median_bandwidth(sq)
    if med == 0.0:
        return MMDResult(0.0, 1.0, permutations, seed, m, 0.0, 0.0, rule)
    kernel = np.exp(-sq / med)
    del sq
    signs = np.concatenate([np.full(m, 1.0 / m), np.full(m, -1.0 / m)])
    observed = max(float(_mmd2_from_weights(kernel, signs[:, None])[0]), 0.0)
    rng = np.random.default_rng(seed)
    weights = np.empty((2 * m, permutations))
    for b in range(permutations):
        weights[:, b] = signs[rng.permutation(2 * m)]
    null = _mmd2_from_weights(kernel, weights)
    # a relabelling that reproduces the observed split must count as >=: compare with a rounding tolerance
    exceed = int(np.count_nonzero(null >= observed - 1e-12 * max(1.0, abs(observed))))
    return MMDResult(observed, (1 + exceed) / (1 + permutations), permutations, seed, m, med, med / 2.0, rule)


def row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of each row of ``a`` with the same row of ``b`` (both (m, d)), float64 (m,), in [-1, 1]; NaN where
    either row is zero.

    Raises:
        ValueError: shapes differ.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"row_cosines needs two (m, d) arrays of one shape; got {a.shape} and {b.shape}")
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    dots = np.einsum("ij,ij->i", a, b)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = dots / (na * nb)
    out[(na == 0) | (nb == 0)] = np.nan
    return np.clip(out, -1.0, 1.0)


def least_stable(per_probe: Sequence[float | None], n: int = 10) -> list[int]:
    """Indices of the ``n`` probes with the lowest defined stability, lowest first (ties by index)."""
    defined = [(v, i) for i, v in enumerate(per_probe) if v is not None]
    return [i for _, i in sorted(defined)[:n]]
