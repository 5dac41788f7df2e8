"""Approximate-nearest-neighbour (ANN) recall against exact search, and the vector facts that explain a loss.

Pure numpy, no I/O, no imports from the rest of the package. Conventions shared by every function:

- ``ids`` arrays are ``(q, >= k)`` int64, one row per query, best first, as FAISS returns them; ``-1`` is FAISS's
  padding ("no result at this position") and is dropped, never used as an index.
- a result list that repeats an id counts that id once (VectorDBBench counts it twice, and ann-benchmarks once gave
  100 % to ten copies of the nearest neighbour, its issue #519; here a repeat is never a second hit).
- ``n`` is the number of candidates a query could have been answered from (the base size; the base size minus one
  when the query is itself a base vector that may not count as its own neighbour; the number of rows that pass a
  filter), an int or a ``(q,)`` array. A query's denominator is ``min(k, n)``: with fewer candidates than ``k``, a
  perfect answer returns them all and scores 1.
- "higher is closer" is True for inner-product scores (cosine on L2-normalised vectors, raw inner product) and False
  for (squared) L2 distances.

Definitions and their sources (checked against faiss-cpu 1.15.1 and ann-benchmarks' ``plotting/metrics.py``):

- intersection recall: FAISS's ``knn_intersection_measure`` (``faiss/contrib/evaluation.py``) is
  ``Σ_q |I_ann[q] ∩ I_exact[q]| / (nq · k)`` with ``numpy.intersect1d`` (so a repeated id counts once, and a ``-1``
  on both sides counts as a match). Here a query's denominator is ``min(k, n)`` and ``-1`` never matches; with no
  padding (n > k everywhere) the two are equal (a test uses FAISS's function as the oracle);
- 1-recall@R: FAISS's benchmarks (``faiss/benchs/bench_hnsw.py``, "1-R@1"): the share of queries whose exact
  nearest neighbour is among the first R results;
- tie-aware recall: the distance-threshold recall of ann-benchmarks (Aumüller, Bernhardsson & Faithfull 2020,
  "ANN-Benchmarks", Information Systems 87). Its ``knn`` recall counts a returned point when its distance is
  ``<= d_k + 1e-3`` (ADDITIVE: ``knn_threshold`` returns ``data[count - 1] + epsilon``); its separate ``epsilon``
  recall uses ``d_k * (1 + 1e-3)``. Here the tolerance is RELATIVE, ``|d - d_k| <= 1e-5 · |d_k|`` on float64 scores
  recomputed from the vectors (`DEFAULT_RTOL`): an absolute 1e-3 is large against cosine scores in [-1, 1];
- the percentile by nearest rank (Hyndman & Fan 1996, definition 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

DEFAULT_RTOL = 1e-5
"""Relative tolerance of tie-aware recall: a result ties the k-th exact score when within ``1e-5 * |k-th score|``."""
DOMINATION_RTOL = 1e-5
"""Relative tolerance of `ip_dominated_flags`: ``v`` is dominated when another ``u`` has ``<u, v> > (1 + 1e-5)·<v, v>``
(the same 1e-5 as tie-aware recall), so float32 rounding of L2-normalised near-duplicates is not a domination."""
UNIT_NORM_TOL = 1e-3
"""`norm_stats`: a vector counts as unit norm when ``| ||v|| - 1 | <= 1e-3``."""


def _ids2(ids: np.ndarray, k: int, name: str) -> np.ndarray:
    a = np.asarray(ids)
    if a.ndim != 2:
        raise ValueError(f"{name} must be a (queries, results) array, got shape {a.shape}")
    if not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name} must hold integer ids, got dtype {a.dtype}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return a[:, :k].astype(np.int64, copy=False)


def _n_array(n: int | np.ndarray | Sequence[int], q: int) -> np.ndarray:
    arr = np.broadcast_to(np.asarray(n, dtype=np.int64), (q,))
    if (arr < 0).any():
        raise ValueError("the number of candidates n must be >= 0")
    return arr


def _distinct_valid(ids: np.ndarray) -> np.ndarray:
    """Each row sorted, with -1 and repeats replaced by distinct negative sentinels (< -1) that match nothing."""
    s = np.sort(ids, axis=1)
    dup = np.zeros_like(s, dtype=bool)
    dup[:, 1:] = s[:, 1:] == s[:, :-1]
    bad = dup | (s < 0)
    out = s.copy()
    # sentinel -2 - position: unique within a row, and never equal to a valid id (>= 0)
    out[bad] = (-2 - np.broadcast_to(np.arange(s.shape[1]), s.shape))[bad]
    return out


def denominators(k: int, n: int | np.ndarray | Sequence[int], q: int) -> np.ndarray:
    """``min(k, n)`` per query: the most hits a perfect answer can have, shape ``(q,)`` int64."""
    return np.minimum(k, _n_array(n, q))


def intersection_hits(ann_ids: np.ndarray, exact_ids: np.ndarray, k: int) -> np.ndarray:
    """Per query, the number of distinct valid ids in both the ANN top-k and the exact top-k.

    Args:
        ann_ids, exact_ids: ``(q, >= k)`` integer ids, best first; columns after ``k`` are ignored; ``-1`` dropped;
            an id repeated in a row counts once.
        k: cut-off, >= 1.

    Returns:
        ``(q,)`` int64 counts in ``[0, k]``.

    Raises:
        ValueError: shapes or dtypes that do not fit, ``k < 1``, different numbers of queries.
    """
    a = _distinct_valid(_ids2(ann_ids, k, "ann_ids"))
    e = _distinct_valid(_ids2(exact_ids, k, "exact_ids"))
    if a.shape[0] != e.shape[0]:
        raise ValueError(f"ann_ids has {a.shape[0]} queries, exact_ids {e.shape[0]}")
    # ANN sentinels are made distinct from the exact ones by an offset, so that only valid ids can match
    a = np.where(a < 0, a - a.shape[1] - e.shape[1], a)
    return (a[:, :, None] == e[:, None, :]).any(axis=2).sum(axis=1).astype(np.int64)


def intersection_recall(ann_ids: np.ndarray, exact_ids: np.ndarray, k: int,
                        n: int | np.ndarray | Sequence[int]) -> np.ndarray:
    """Intersection recall per query: ``|ANN top-k ∩ exact top-k| / min(k, n)``; its mean over queries equals FAISS's
    ``knn_intersection_measure`` (``faiss/contrib/evaluation.py``) when every query has more than ``k`` candidates.

    ``-1`` padding is dropped and an id repeated in the ANN list counts once (see the module docstring). Worked
    example: exact top-2 ``[a, b]``, ANN ``[a, c]`` -> 0.5; ANN ``[a, a]`` -> 0.5; three candidates, k = 5, exact
    against itself -> 3/3 = 1.0.

    Args:
        n: candidates per query (int or ``(q,)``).

    Returns:
        ``(q,)`` float64 in ``[0, 1]``.

    Raises:
        ValueError: as `intersection_hits`, or a query with ``min(k, n) == 0`` (no candidate: recall is undefined,
            never 0 or 1).
    """
    hits = intersection_hits(ann_ids, exact_ids, k)
    den = denominators(k, n, hits.shape[0])
    if (den == 0).any():
        raise ValueError("a query has no candidate (n == 0): its recall is undefined")
    return hits / den


def true_scores(base: np.ndarray, queries: np.ndarray, ids: np.ndarray, metric: str) -> np.ndarray:
    """The exact score of every returned id, recomputed in float64 from the vectors (never the score an ANN index
    reported, which may be approximate or quantised).

    Args:
        base: ``(n, d)`` vectors as indexed.
        queries: ``(q, d)`` query vectors.
        ids: ``(q, r)`` ids into ``base``; ``-1`` gives NaN at that position.
        metric: ``"ip"`` / ``"cosine"`` (inner product; cosine expects vectors normalised by the caller) or
            ``"l2"`` (squared Euclidean distance, as FAISS reports it).

    Returns:
        ``(q, r)`` float64.

    Raises:
        ValueError: unknown metric, shapes that do not fit, an id outside ``[-1, n)``.
    """
    if metric not in ("ip", "cosine", "l2"):
        raise ValueError(f"unknown metric {metric!r}; known: cosine, ip, l2")
    ids = np.asarray(ids, dtype=np.int64)
    if ids.ndim != 2 or queries.ndim != 2 or ids.shape[0] != queries.shape[0]:
        raise ValueError(f"ids {ids.shape} and queries {queries.shape} do not fit")
    if base.ndim != 2 or base.shape[1] != queries.shape[1]:
        raise ValueError(f"base {base.shape} and queries {queries.shape} differ in dimension")
    if ids.size and (ids.min() < -1 or ids.max() >= base.shape[0]):
        raise ValueError(f"an id is outside [-1, {base.shape[0]})")
    out = np.full(ids.shape, np.nan)
    step = max(1, 2048 // max(1, ids.shape[1]))  # a gathered (step, r, d) float64 block of about 6 MB at d=384
    for s in range(0, ids.shape[0], step):
        blk = ids[s:s + step]
        valid = blk >= 0
        vec = base[np.where(valid, blk, 0)].astype(np.float64)  # (b, r, d)
        qv = queries[s:s + step].astype(np.float64)[:, None, :]
        val = ((vec - qv) ** 2).sum(axis=2) if metric == "l2" else (vec * qv).sum(axis=2)
        out[s:s + step] = np.where(valid, val, np.nan)
    return out


def kth_scores(exact_true: np.ndarray, exact_ids: np.ndarray, k: int, *, higher_is_closer: bool) -> np.ndarray:
    """Per query, the worst true score among the valid ids of the exact top-k (the k-th exact score, or the
    ``min(k, n)``-th when fewer candidates exist). NaN for a query without any valid exact id.

    Args:
        exact_true: ``(q, >= k)`` true scores of ``exact_ids`` (`true_scores`).
        exact_ids: ``(q, >= k)`` exact ids (``-1`` ignored).
    """
    ids = _ids2(exact_ids, k, "exact_ids")
    s = np.asarray(exact_true, dtype=np.float64)[:, :k]
    valid = ids >= 0
    fill = np.inf if higher_is_closer else -np.inf
    masked = np.where(valid, s, fill)
    worst = masked.min(axis=1) if higher_is_closer else masked.max(axis=1)
    return np.where(valid.any(axis=1), worst, np.nan)


def tie_aware_hits(ann_ids: np.ndarray, ann_true: np.ndarray, kth_exact: np.ndarray, k: int, *,
                   higher_is_closer: bool, rtol: float = DEFAULT_RTOL) -> np.ndarray:
    """Per query, the distinct valid ids of the ANN top-k whose TRUE score ties or beats the k-th exact score.

    With higher-is-closer scores an id counts when ``s >= kth - rtol * |kth|``; with distances when
    ``s <= kth + rtol * |kth|``: ann-benchmarks' ``knn`` threshold recall (Aumüller et al. 2020), whose threshold is
    additive (``kth + 1e-3``), with a relative tolerance instead (see the module docstring). A query whose
    ``kth_exact`` is NaN (no exact neighbour) has 0 hits.

    Args:
        ann_ids: ``(q, >= k)`` ANN ids.
        ann_true: ``(q, >= k)`` true scores of ``ann_ids`` (`true_scores`), aligned with ``ann_ids``.
        kth_exact: ``(q,)`` from `kth_scores`.

    Returns:
        ``(q,)`` int64 counts in ``[0, k]``.
    """
    ids = _ids2(ann_ids, k, "ann_ids")
    s = np.asarray(ann_true, dtype=np.float64)[:, :k]
    if s.shape != ids.shape:
        raise ValueError(f"ann_true {np.shape(ann_true)} does not fit ann_ids {np.shape(ann_ids)}")
    kth = np.asarray(kth_exact, dtype=np.float64)[:, None]
    if kth.shape[0] != ids.shape[0]:
        raise ValueError("kth_exact needs one value per query")
    if rtol < 0:
        raise ValueError("rtol must be >= 0")
    tol = rtol * np.abs(kth)
    with np.errstate(invalid="ignore"):
        ok = (s >= kth - tol) if higher_is_closer else (s <= kth + tol)
    ok &= (ids >= 0) & np.isfinite(s) & np.isfinite(kth)
    order = np.argsort(ids, axis=1, kind="stable")
    sid = np.take_along_axis(ids, order, axis=1)
    sok = np.take_along_axis(ok, order, axis=1)
    first = np.ones_like(sid, dtype=bool)
    first[:, 1:] = sid[:, 1:] != sid[:, :-1]
    # an id counts once: it is a hit when any of its occurrences is (all occurrences have the same true score)
    return (sok & first).sum(axis=1).astype(np.int64)


def tie_aware_recall(ann_ids: np.ndarray, ann_true: np.ndarray, kth_exact: np.ndarray, k: int,
                     n: int | np.ndarray | Sequence[int], *, higher_is_closer: bool,
                     rtol: float = DEFAULT_RTOL) -> np.ndarray:
    """Tie-aware recall per query: `tie_aware_hits` / ``min(k, n)``, so an id whose true score equals the k-th
    exact score is not a miss just because exact search broke the tie the other way. Worked example: distances
    a 0.1, b 0.2, c 0.2, exact top-2 ``[a, b]``, ANN ``[a, c]`` -> 1.0 (intersection recall 0.5). Always at least
    the intersection recall when ``kth_exact`` comes from the same exact answer.

    Returns:
        ``(q,)`` float64 in ``[0, 1]``.

    Raises:
        ValueError: shapes that do not fit, ``rtol < 0``, or a query with ``min(k, n) == 0``.
    """
    hits = tie_aware_hits(ann_ids, ann_true, kth_exact, k, higher_is_closer=higher_is_closer, rtol=rtol)
    den = denominators(k, n, hits.shape[0])
    if (den == 0).any():
        raise ValueError("a query has no candidate (n == 0): its recall is undefined")
    return np.minimum(hits, den) / den


def one_recall_at(ann_ids: np.ndarray, exact_nn: np.ndarray, r: int) -> np.ndarray:
    """1-recall@R per query (FAISS's benchmarks, ``faiss/benchs/bench_hnsw.py``: "1-R@1"): 1.0 when the exact nearest
    neighbour's id is among the first ``r`` ANN ids, else 0.0. The exact nearest neighbour is one id (exact search's
    first result); an ANN answer holding a different id with the same score is a miss here (tie-aware recall
    credits it).

    Args:
        ann_ids: ``(q, >= r)`` ANN ids (``-1`` never matches).
        exact_nn: ``(q,)`` the exact top-1 id per query.

    Raises:
        ValueError: ``r < 1``, shapes that do not fit, or an ``exact_nn`` of -1 (a query without candidates).
    """
    ids = _ids2(ann_ids, r, "ann_ids")
    nn = np.asarray(exact_nn, dtype=np.int64).reshape(-1)
    if nn.shape[0] != ids.shape[0]:
        raise ValueError("exact_nn needs one id per query")
    if (nn < 0).any():
        raise ValueError("a query has no exact nearest neighbour (-1): 1-recall is undefined")
    return (ids == nn[:, None]).any(axis=1).astype(np.float64)


def drop_self(ids: np.ndarray, self_rows: np.ndarray, k: int) -> np.ndarray:
    """Remove each query's own row from its result list and keep the first ``k`` of the rest (``-1`` padded).

    Used when the queries are base vectors: ask the index for ``k + 1`` results and drop the query's own id (by id,
    not by value: an exact duplicate of the query is another vector and stays a valid neighbour). When the own id is
    not among the results (an ANN miss, or more exact duplicates than ``k + 1``), the first ``k`` are kept: they are
    then the top-k of the other rows.

    Args:
        ids: ``(q, r)`` ids, ``r >= k``.
        self_rows: ``(q,)`` each query's own row.

    Returns:
        ``(q, k)`` int64.
    """
    a = np.asarray(ids, dtype=np.int64)
    rows = np.asarray(self_rows, dtype=np.int64).reshape(-1, 1)
    if a.ndim != 2 or rows.shape[0] != a.shape[0]:
        raise ValueError(f"ids {a.shape} and self_rows {rows.shape} do not fit")
    keep = a != rows
    order = np.argsort(~keep, axis=1, kind="stable")  # kept entries first, in their order
    out = np.take_along_axis(np.where(keep, a, -1), order, axis=1)[:, :k]
    if out.shape[1] < k:
        out = np.pad(out, ((0, 0), (0, k - out.shape[1])), constant_values=-1)
    return out


def vector_groups(vectors: np.ndarray, *, block: int = 2048) -> np.ndarray:
    """For every row, the index of the first row with the same bytes (itself when it is the first): exact equality of
    the stored bytes, so ``0.0`` and ``-0.0`` differ.

    A 64-bit multiplicative hash of each row's bits finds candidate groups (vectorised, ``block`` rows at a time, no
    copy of the array); rows sharing a hash are then compared byte for byte, so a hash collision never merges
    different rows.

    Returns:
        ``(n,)`` int64.

    Raises:
        ValueError: ``vectors`` is not 2-D.
    """
    x = np.ascontiguousarray(vectors)
    if x.ndim != 2:
        raise ValueError(f"vectors must be 2-D, got shape {x.shape}")
    n = x.shape[0]
    groups = np.arange(n, dtype=np.int64)
    if n < 2:
        return groups
    width = x.dtype.itemsize * x.shape[1]
    raw = x.view(np.uint8).reshape(n, width)
    mult = None
    h = np.empty(n, dtype=np.uint64)
    for s in range(0, n, block):
        chunk = raw[s:s + block]
        pad = (-width) % 4
        words = (np.pad(chunk, ((0, 0), (0, pad))) if pad else np.ascontiguousarray(chunk)).view(np.uint32)
        if mult is None:
            mult = np.random.default_rng(0x5EED).integers(1, 2 ** 62, size=words.shape[1], dtype=np.uint64) * 2 + 1
        h[s:s + block] = (words.astype(np.uint64) * mult).sum(axis=1)
    order = np.argsort(h, kind="stable")
    hs = h[order]
    starts = np.flatnonzero(np.r_[True, hs[1:] != hs[:-1]])
    sizes = np.diff(np.r_[starts, n])
    void = np.dtype((np.void, width))
    for st, sz in zip(starts[sizes > 1], sizes[sizes > 1]):
        members = np.sort(order[st:st + sz])
        keys = np.ascontiguousarray(raw[members]).view(void).ravel()
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        groups[members] = members[first][inverse.reshape(-1)]
    return groups


def duplicate_vectors(vectors: np.ndarray, **kw) -> int:
    """``n - (number of distinct rows)``: the vectors that repeat an earlier one byte for byte (`vector_groups`).
    50 distinct vectors each present 40 times -> 1950.

    Raises:
        ValueError: ``vectors`` is not 2-D.
    """
    groups = vector_groups(vectors, **kw)
    return int(groups.size - np.unique(groups).size)


def norm_stats(vectors: np.ndarray, *, tol: float = UNIT_NORM_TOL, block: int = 4096) -> dict[str, float]:
    """L2-norm statistics: ``min``, ``median``, ``max``, ``unit_share`` (share of vectors with
    ``| ||v|| - 1 | <= tol``, default 1e-3), ``zero`` (vectors of norm 0, which no normalisation makes unit),
    ``not_unit_nonzero`` (vectors of non-zero norm outside the tolerance: what a cosine claim must not have) and ``n``.
    Norms computed in float64, ``block`` rows at a time. ``[[3, 4], [1, 0], [0, 0]]`` -> min 0, median 1, max 5,
    unit_share 1/3, zero 1, not_unit_nonzero 1.

    Raises:
        ValueError: ``vectors`` is not 2-D or has no rows.
    """
    x = np.asarray(vectors)
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"vectors must be a non-empty 2-D array, got shape {x.shape}")
    norms = np.concatenate([np.sqrt((x[s:s + block].astype(np.float64) ** 2).sum(axis=1))
                            for s in range(0, x.shape[0], block)])
    return {"min": float(norms.min()), "median": float(np.median(norms)), "max": float(norms.max()),
            "unit_share": float((np.abs(norms - 1.0) <= tol).mean()), "unit_tol": tol, "zero": int((norms == 0).sum()),
            "not_unit_nonzero": int(((np.abs(norms - 1.0) > tol) & (norms > 0)).sum()), "n": int(x.shape[0])}


def ip_dominated_flags(vectors: np.ndarray, sample_ids: np.ndarray | Sequence[int], *,
                       rtol: float = DOMINATION_RTOL, block: int = 65536) -> np.ndarray:
    """For each sampled row v: True when some OTHER row u (a different index; an identical copy has an equal, not
    larger, product) has ``<u, v> > (1 + rtol)·<v, v>``. Such a v is never its own best inner-product match, the
    reason parts of an HNSW graph over inner product are unreachable (milvus #51821).

    ``rtol`` (default `DOMINATION_RTOL` = 1e-5, relative to ``<v, v> = ||v||²``) keeps float32 rounding out: on
    L2-normalised vectors ``<v, v>`` is ``1 ± 1e-7`` and a near-duplicate u has ``<u, v>`` just below 1, so with
    ``rtol = 0`` rounding alone makes about half of such pairs "dominated". ``rtol = 0`` is the strict comparison.

    Exact up to that threshold. A float32 BLAS pass (blocks of rows) bounds every product: a float32 dot product of
    length d is within ``γ = (d + 2)·2^-23`` times ``|u|·|v|`` of the true value (Higham 2002, §3.1, with a factor 2
    to spare), and ``|u|`` is bounded by the block's largest norm. Samples whose answer the bounds settle are decided
    there; for the others (copies, near-copies) a float64 pass picks every row that may reach the threshold and each
    is decided with ``math.fsum`` of the products (products of float32 values are exact in float64 and fsum rounds
    the exact sum correctly): by the exact sign of ``Σ u_i v_i - Σ v_i v_i`` when ``rtol = 0``, otherwise by
    ``fsum(u·v) > (1 + rtol)·fsum(v·v)`` (one float64 rounding of the threshold).

    Args:
        vectors: ``(n, d)`` float vectors as indexed.
        sample_ids: rows to decide, each in ``[0, n)``.
        rtol: relative tolerance, >= 0.

    Returns:
        ``(len(sample_ids),)`` bool.

    Raises:
        ValueError: ``vectors`` not 2-D, a sample id outside ``[0, n)``, or ``rtol < 0``.
    """
    import math

    x = np.asarray(vectors)
    ids = np.asarray(sample_ids, dtype=np.int64).reshape(-1)
    if x.ndim != 2:
        raise ValueError(f"vectors must be 2-D, got shape {x.shape}")
    if not rtol >= 0:
        raise ValueError(f"rtol must be >= 0, got {rtol}")
    n, d = x.shape
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        raise ValueError(f"a sample id is outside [0, {n})")
    if ids.size == 0:
        return np.zeros(0, dtype=bool)
    s32 = np.ascontiguousarray(x[ids], dtype=np.float32)
    s64 = s32.astype(np.float64)
    own = (s64 ** 2).sum(axis=1)
    thr = own * (1 + rtol)  # the product another row must exceed
    snorm = np.sqrt(own)
    gamma = (d + 2) * 2.0 ** -23
    best = np.full(ids.size, -np.inf)  # max over other rows u of the float32 product
    slack = np.zeros(ids.size)  # max over the blocks of gamma * max|u| * |v|: bounds the error of best
    step = max(1, min(block, (8 << 20) // (4 * ids.size)))  # a (step, samples) float32 block of at most 8 MiB
    for st in range(0, n, step):
        blk = np.asarray(x[st:st + step], dtype=np.float32)
        prod = blk @ s32.T  # (b, s)
        inside = np.flatnonzero((ids >= st) & (ids < st + blk.shape[0]))
        prod[ids[inside] - st, inside] = -np.inf  # a vector is not "another vector" of itself
        best = np.maximum(best, prod.max(axis=0).astype(np.float64))
        umax = float(np.sqrt(np.einsum("ij,ij->i", blk, blk).max())) * 1.001
        slack = np.maximum(slack, gamma * umax * snorm)
    low, high = best - slack, best + slack
    flags = low > thr * (1 + 1e-12)  # own is a float64 sum: 1e-12 covers its rounding
    unsure = np.flatnonzero(~flags & (high >= thr * (1 - 1e-12)))
    if unsure.size:
        gamma64 = (d + 2) * 2.0 ** -52
        v64 = s64[unsure]
        own_exact = [math.fsum((v * v).tolist()) for v in v64]
        settled = np.zeros(unsure.size, dtype=bool)
        for st in range(0, n, 2048):
            blk = x[st:st + 2048].astype(np.float64)
            prod = blk @ v64.T
            err = 2 * gamma64 * np.sqrt((blk ** 2).sum(axis=1))[:, None] * snorm[unsure][None, :]
            cand = (prod + err >= thr[unsure][None, :]) & ~settled[None, :]
            cand &= ids[unsure][None, :] != np.arange(st, st + blk.shape[0])[:, None]
            for r, j in zip(*np.nonzero(cand)):
                if settled[j]:
                    continue
                if rtol == 0:
                    terms = np.concatenate([blk[r] * v64[j], -(v64[j] * v64[j])])
                    above = math.fsum(terms.tolist()) > 0
                else:
                    above = math.fsum((blk[r] * v64[j]).tolist()) > (1 + rtol) * own_exact[j]
                if above:
                    settled[j] = True
        flags[unsure[settled]] = True
    return flags


def ip_dominated(vectors: np.ndarray, sample_ids: np.ndarray | Sequence[int], **kw) -> float:
    """Share of the sampled vectors for which another vector has a larger inner product with them than their own,
    beyond the relative tolerance ``rtol`` (`ip_dominated_flags`, default 1e-5). Base ``[[1, 0], [10, 10],
    [0.9, 0.1]]``, every row sampled -> 2/3 (rows 0 and 2 each have a larger product with row 1 than with
    themselves: 10 > 1 and 10 > 0.82).

    Raises:
        ValueError: an empty sample (the share is undefined), or as `ip_dominated_flags`.
    """
    flags = ip_dominated_flags(vectors, sample_ids, **kw)
    if flags.size == 0:
        raise ValueError("ip_dominated needs at least one sampled vector")
    return float(flags.mean())


def nearest_rank(values: Sequence[float] | np.ndarray, p: float) -> float:
    """The p-th percentile by nearest rank: the ``ceil(p/100 * n)``-th smallest value (the smallest for p = 0),
    always an observed value (Hyndman & Fan 1996, definition 1). p50 of [1, 2, 3, 4] -> 2; p95 of 1..20 -> 19.

    Raises:
        ValueError: no values, or ``p`` outside [0, 100].
    """
    v = np.sort(np.asarray(values, dtype=np.float64).reshape(-1))
    if v.size == 0:
        raise ValueError("nearest_rank needs at least one value")
    if not 0 <= p <= 100:
        raise ValueError(f"p must be in [0, 100], got {p}")
    rank = max(1, int(np.ceil(p / 100 * v.size - 1e-12)))
    return float(v[rank - 1])
