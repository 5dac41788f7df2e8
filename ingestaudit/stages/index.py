"""The index stage: exact and approximate (ANN) FAISS indexes over a pipeline's vectors, filtered search, exact ground
truth in bounded memory, and single-threaded latency measurement.

FAISS (faiss-cpu) is imported inside the functions, never at module import. Metrics:

- ``"cosine"``: inner product (``METRIC_INNER_PRODUCT``: ``IndexFlatIP``, ``IndexHNSWFlat(d, M, IP)``,
  ``IndexIVFFlat(..., IP)``) on vectors the CALLER has L2-normalised; FAISS has no cosine of its own, so on
  unnormalised vectors this is plain inner product (FAISS issues #812 and #1119: scores around 400);
- ``"ip"``: inner product on the vectors as given;
- ``"l2"``: squared Euclidean distance (``METRIC_L2``), lower is closer.

Scores are FAISS's: higher is closer for ``cosine``/``ip``, lower for ``l2``. Positions FAISS could not fill (fewer
candidates than ``k``, or a filter that leaves fewer) carry id ``-1`` and score ``-inf`` (similarities) or ``+inf``
(distances); callers must test the id, never use ``-1`` as an index.

Defaults, checked against faiss-cpu 1.15.1: ``IndexHNSWFlat(d, M)`` requires M (32 is the default of the base
``faiss::IndexHNSW`` constructor); a new index has ``efConstruction`` = 40 and ``efSearch`` = 16. `IndexSettings`
keeps M = 32 and efConstruction = 40 but searches with efSearch = 64 by default (not FAISS's 16): set ``ef_search``
to the value your vector store serves with, and read the sweep for the others. ``IndexIVFFlat``: nlist =
round(sqrt(n)) by default (the FAISS wiki's "Guidelines to choose an index" suggests 4·sqrt(n) to 16·sqrt(n) lists
for large n; sqrt(n) leaves enough training points per list on small corpora), nprobe = 1 (FAISS's default),
k-means seeded with the settings' seed.

Determinism: the HNSW level generator is seeded with the settings' seed, and vectors are added single-threaded by
default (``build_threads = 1``): a multi-threaded HNSW build may link the graph differently from run to run, which
would make recall change between identical runs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from ingestaudit.index_settings import (  # noqa: F401  (the data types of this stage, re-exported)
    EXACT_BATCH, FAISS_EF_CONSTRUCTION_DEFAULT, FAISS_EF_SEARCH_DEFAULT, KINDS, METRICS, IndexInputError, IndexSettings,
    check_vectors, higher_is_closer)


def faiss_metric(metric: str) -> int:
    """The FAISS metric constant of ``metric`` (cosine and ip -> ``METRIC_INNER_PRODUCT``, l2 -> ``METRIC_L2``)."""
    import faiss

    return faiss.METRIC_L2 if not higher_is_closer(metric) else faiss.METRIC_INNER_PRODUCT


def l2_normalise(vectors: np.ndarray, *, inplace: bool = False) -> np.ndarray:
    """``vectors`` with every row scaled to unit L2 norm (FAISS ``normalize_L2``); a zero row stays zero.

    Args:
        inplace: False (default): a float32 copy, the input is untouched. True: when ``vectors`` is already a
            C-contiguous float32 array it is normalised IN PLACE and returned (no second copy of a large base; for a
            caller that owns the array); otherwise one float32 copy is made and normalised.

    Raises:
        IndexInputError: as `check_vectors`.
    """
    import faiss

    out = check_vectors(vectors, allow_empty=True)  # the input itself when already float32 and C-contiguous
    if not inplace and isinstance(vectors, np.ndarray) and np.may_share_memory(out, vectors):
        out = out.copy()
    if out.shape[0]:
        faiss.normalize_L2(out)
    return out


@contextmanager
def omp_threads(n: int | None) -> Iterator[None]:
    """Run the block with FAISS's OpenMP thread count set to ``n`` (None: unchanged), restoring it afterwards."""
    import faiss

    if n is None:
        yield
        return
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(int(n))
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def build_exact(vectors: np.ndarray, metric: str) -> Any:
    """An exact FAISS index (``IndexFlatIP`` for cosine and ip, ``IndexFlatL2`` for l2) holding ``vectors`` with ids
    ``0..n-1``. Over ``[[1, 0], [10, 10], [0.9, 0.1]]`` with inner product the query ``[1, 0]`` ranks 1, 0, 2; after
    L2 normalisation of both sides 0, 2, 1.

    Raises:
        IndexInputError: as `check_vectors`.
        ValueError: unknown metric.
    """
    import faiss

    x = check_vectors(vectors)
    index = faiss.IndexFlatL2(x.shape[1]) if not higher_is_closer(metric) else faiss.IndexFlatIP(x.shape[1])
    index.add(x)
    return index


def build_ann(vectors: np.ndarray, settings: IndexSettings) -> tuple[Any, float, int]:
    """Build the approximate index described by ``settings`` over ``vectors`` (ids ``0..n-1``).

    Returns:
        ``(index, build_seconds, memory_bytes)``: build wall time (training + adding, ``time.perf_counter``) and the
        index's memory (`index_memory_bytes`).

    Raises:
        IndexInputError: as `check_vectors`.
    """
    import faiss

    x = check_vectors(vectors)
    n, d = x.shape
    metric = faiss_metric(settings.metric)
    t0 = time.perf_counter()
    if settings.kind == "flat":
        index = faiss.IndexFlat(d, metric)
        index.add(x)
    elif settings.kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, settings.m, metric)
        index.hnsw.efConstruction = settings.ef_construction
        index.hnsw.efSearch = settings.ef_search
        index.hnsw.rng = faiss.RandomGenerator(int(settings.seed))
        with omp_threads(settings.build_threads):
            index.add(x)
    else:
        nlist = settings.resolved_nlist(n)
        quantizer = faiss.IndexFlat(d, metric)
        index = faiss.IndexIVFFlat(quantizer, d, nlist, metric)
        index.cp.seed = int(settings.seed)
        index.cp.verbose = False
        with omp_threads(settings.build_threads):
            index.train(x)
            index.add(x)
        index.nprobe = min(settings.nprobe, nlist)
        index.referenced_objects = [quantizer]  # keep the quantizer alive with the index
    seconds = time.perf_counter() - t0
    return index, seconds, index_memory_bytes(index)


def index_memory_bytes(index: Any) -> int:
    """Bytes the index's data structures hold: vectors (``ntotal x code_size``) plus, for HNSW, the neighbour table
    (int32), offsets (uint64), levels (int32) and level tables; for IVF, the coarse centroids plus per stored vector
    its code and its int64 id. Equal to the length of ``faiss.serialize_index`` up to its headers (a few hundred
    bytes); other index types fall back to that length.
    """
    import faiss

    idx = faiss.downcast_index(index)
    if isinstance(idx, faiss.IndexHNSW):
        st = faiss.downcast_index(idx.storage)
        h = idx.hnsw
        return int(st.ntotal * st.code_size + h.neighbors.size() * 4 + h.offsets.size() * 8 + h.levels.size() * 4
                   + h.assign_probas.size() * 8 + h.cum_nneighbor_per_level.size() * 4)
    if isinstance(idx, faiss.IndexIVF):
        q = faiss.downcast_index(idx.quantizer)
        stored = sum(idx.invlists.list_size(i) for i in range(idx.nlist))
        return int(q.ntotal * q.code_size + stored * (idx.code_size + 8))
    if isinstance(idx, faiss.IndexFlat):
        return int(idx.ntotal * idx.code_size)
    return int(len(faiss.serialize_index(index)))


def _index_kind(index: Any) -> str:
    import faiss

    idx = faiss.downcast_index(index)
    if isinstance(idx, faiss.IndexHNSW):
        return "hnsw"
    if isinstance(idx, faiss.IndexIVF):
        return "ivf"
    return "flat"


def search_parameters(index: Any, params: Mapping[str, int] | None = None,
                      allowed: np.ndarray | None = None) -> tuple[Any, list[Any]]:
    """FAISS ``SearchParameters`` for ``index``: ``params`` may set ``ef_search`` (HNSW) or ``nprobe`` (IVF);
    ``allowed`` (row ids) becomes an ``IDSelectorBatch`` applied INSIDE the search, as a vector store's pre-filter
    does (HNSW walks the whole graph but only allowed ids enter the results).

    Returns:
        ``(params or None, keep)``: ``keep`` holds the selector; it must stay referenced while the search runs.

    Raises:
        ValueError: a parameter the index kind does not take.
    """
    import faiss

    kind = _index_kind(index)
    params = dict(params or {})
    unknown = set(params) - {"hnsw": {"ef_search"}, "ivf": {"nprobe"}, "flat": set()}[kind]
    if unknown:
        raise ValueError(f"search parameter(s) {sorted(unknown)} do not apply to a {kind} index")
    keep: list[Any] = []
    kw: dict[str, Any] = {}
    if allowed is not None:
        sel = faiss.IDSelectorBatch(np.ascontiguousarray(allowed, dtype=np.int64))
        keep.append(sel)
        kw["sel"] = sel
    if kind == "hnsw":
        kw["efSearch"] = int(params.get("ef_search", faiss.downcast_index(index).hnsw.efSearch))
        p = faiss.SearchParametersHNSW(**kw)
    elif kind == "ivf":
        kw["nprobe"] = int(params.get("nprobe", faiss.downcast_index(index).nprobe))
        p = faiss.SearchParametersIVF(**kw)
    elif kw:
        p = faiss.SearchParameters(**kw)
    else:
        p = None
    return p, keep


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise IndexInputError(f"k must be an integer >= 1, got {k!r}")
    return int(k)


def _pad(scores: np.ndarray, ids: np.ndarray, similarity: bool) -> tuple[np.ndarray, np.ndarray]:
    scores = scores.copy()
    scores[ids < 0] = -np.inf if similarity else np.inf
    return scores, ids.astype(np.int64, copy=False)


def _allowed_rows(allowed: Any, n: int) -> np.ndarray:
    a = np.asarray(allowed, dtype=np.int64).reshape(-1)
    if a.size and (a.min() < 0 or a.max() >= n):
        raise IndexInputError(f"allowed rows must lie in [0, {n}), got {int(a.min())}..{int(a.max())}")
    return np.unique(a)


def search(index: Any, queries: np.ndarray, k: int, allowed: np.ndarray | None = None,
           params: Mapping[str, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Search ``index`` for the ``k`` closest vectors of every query.

    Args:
        index: a FAISS index built by `build_exact` or `build_ann` (ids are rows).
        queries: ``(q, d)`` float vectors (normalised by the caller for cosine).
        k: results per query, >= 1; larger than the index is allowed (padded).
        allowed: None, or the rows a query may return (one filter for all queries), applied inside the search.
        params: ``{"ef_search": int}`` (HNSW) or ``{"nprobe": int}`` (IVF); the index's own settings otherwise.

    Returns:
        ``(scores, ids)``, each ``(q, k)``: float32 FAISS scores and int64 ids, best first; unfilled positions have
        id ``-1`` and score ``-inf`` (similarities) or ``+inf`` (L2).

    Raises:
        IndexInputError: NaN/infinite queries, a dimension mismatch, ``k < 1``, an empty index, allowed rows out of
            range.
    """
    k = _check_k(k)
    if index.ntotal == 0:
        raise IndexInputError("the index is empty: nothing can be searched")
    q = check_vectors(queries, name="queries", dim=index.d, allow_empty=True)
    sim = index.metric_type != _l2()
    sel_rows = None if allowed is None else _allowed_rows(allowed, index.ntotal)
    if sel_rows is not None and sel_rows.size == 0:
        return (np.full((q.shape[0], k), -np.inf if sim else np.inf, dtype=np.float32),
                np.full((q.shape[0], k), -1, dtype=np.int64))
    p, keep = search_parameters(index, params, sel_rows)
    scores, ids = index.search(q, k, params=p) if p is not None else index.search(q, k)
    del keep
    return _pad(scores, ids, sim)


def _l2() -> int:
    import faiss

    return faiss.METRIC_L2


def exact_search(base: np.ndarray, queries: np.ndarray, k: int, metric: str, *,
                 allowed: np.ndarray | None = None,
                 batch_size: int = EXACT_BATCH) -> tuple[np.ndarray, np.ndarray]:
    """Exact k-nearest-neighbour ground truth with the index's own metric, without building an index:
    ``faiss.knn`` (brute force, BLAS) over ``batch_size`` queries at a time, so memory is bounded by one batch's
    results and FAISS's internal blocks whatever the number of queries. The base is not copied, except with
    ``allowed``: then the allowed rows are gathered into one ``(len(allowed), d)`` array for the call.

    Args:
        base: ``(n, d)`` vectors as indexed.
        queries: ``(q, d)``.
        allowed: None, or the rows every query may return (exact filtered search: the search runs among those rows
            only, ids mapped back to base rows).

    Returns:
        ``(scores, ids)`` as `search` (``-1`` padded when fewer than ``k`` candidates).

    Raises:
        IndexInputError: as `search`.
    """
    import faiss

    k = _check_k(k)
    b = check_vectors(base, name="base")
    q = check_vectors(queries, name="queries", dim=b.shape[1], allow_empty=True)
    sim = higher_is_closer(metric)
    rows = None
    if allowed is not None:
        rows = _allowed_rows(allowed, b.shape[0])
        if rows.size == 0:
            return (np.full((q.shape[0], k), -np.inf if sim else np.inf, dtype=np.float32),
                    np.full((q.shape[0], k), -1, dtype=np.int64))
        b = np.ascontiguousarray(b[rows])
    scores = np.empty((q.shape[0], k), dtype=np.float32)
    ids = np.empty((q.shape[0], k), dtype=np.int64)
    kk = min(k, b.shape[0])
    for s in range(0, q.shape[0], batch_size):
        d_, i_ = faiss.knn(q[s:s + batch_size], b, kk, metric=faiss_metric(metric))
        if kk < k:
            d_ = np.pad(d_, ((0, 0), (0, k - kk)))
            i_ = np.pad(i_, ((0, 0), (0, k - kk)), constant_values=-1)
        scores[s:s + batch_size], ids[s:s + batch_size] = d_, i_
    scores, ids = _pad(scores, ids, sim)
    if rows is not None:
        ids = np.where(ids >= 0, rows[np.maximum(ids, 0)], -1)
    return scores, ids


@contextmanager
def distance_counter(index: Any) -> Iterator[dict[str, int]]:
    """Count the distance computations of the searches run inside the block on ``index`` (one thread: FAISS's
    global statistics are not safe across threads). The yielded dict gets ``"distances"`` on exit: for HNSW
    ``faiss.cvar.hnsw_stats.ndis``, for IVF ``faiss.cvar.indexIVF_stats.ndis`` (reset on entry), for a flat index
    None (it computes ``ntotal`` per query by construction). Deterministic for a given index and queries, unlike
    wall-clock time: ann-benchmarks reports the same quantity ("distance computations") as a cost axis.
    """
    import faiss

    kind = _index_kind(index)
    stats = {"hnsw": getattr(faiss.cvar, "hnsw_stats", None),
             "ivf": getattr(faiss.cvar, "indexIVF_stats", None)}.get(kind)
    out: dict[str, int] = {}
    if stats is not None:
        stats.reset()
    try:
        yield out
    finally:
        out["distances"] = int(stats.ndis) if stats is not None else None


def timed_search(index: Any, queries: np.ndarray, k: int, *, allowed: Sequence[np.ndarray | None] | None = None,
                 params: Mapping[str, int] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Search one query at a time with FAISS limited to ONE OpenMP thread (restored afterwards), timing each call:
    the per-query latency a single-threaded serving process would see.

    Only FAISS's ``index.search`` call is timed (``time.perf_counter``); the search parameters and a filtered
    query's ``IDSelectorBatch`` are built before the clock starts.

    Args:
        allowed: None, or one entry per query: None (no filter) or that query's allowed rows.

    Returns:
        ``(scores, ids, latencies_ms)``: as `search`, plus ``(q,)`` float64 milliseconds (NaN for a query whose
        filter lets nothing through: it is not searched).

    Raises:
        IndexInputError: as `search`; ``allowed`` of the wrong length.
    """
    k = _check_k(k)
    if index.ntotal == 0:
        raise IndexInputError("the index is empty: nothing can be searched")
    q = check_vectors(queries, name="queries", dim=index.d, allow_empty=True)
    if allowed is not None and len(allowed) != q.shape[0]:
        raise IndexInputError(f"allowed has {len(allowed)} entries for {q.shape[0]} queries")
    sim = index.metric_type != _l2()
    scores = np.full((q.shape[0], k), -np.inf if sim else np.inf, dtype=np.float32)
    ids = np.full((q.shape[0], k), -1, dtype=np.int64)
    lat = np.zeros(q.shape[0], dtype=np.float64)
    shared = search_parameters(index, params, None)
    with omp_threads(1):
        for i in range(q.shape[0]):
            a = None if allowed is None or allowed[i] is None else _allowed_rows(allowed[i], index.ntotal)
            if a is not None and a.size == 0:
                lat[i] = np.nan  # nothing passes the filter: no search, all positions padded, no latency
                continue
            p, keep = shared if a is None else search_parameters(index, params, a)
            row = q[i:i + 1]
            t0 = time.perf_counter()
            s_, i_ = index.search(row, k, params=p) if p is not None else index.search(row, k)
            lat[i] = (time.perf_counter() - t0) * 1000.0
            del keep
            s_, i_ = _pad(s_, i_, sim)
            scores[i], ids[i] = s_[0], i_[0]
    return scores, ids, lat
