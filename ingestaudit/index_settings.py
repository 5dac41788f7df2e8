"""The index step's data types, with no FAISS: how the approximate index under audit is built and searched
(`IndexSettings`), the error for vectors no index takes (`IndexInputError`) and the check every vector array passes
(`check_vectors`). The FAISS side is `ingestaudit.stages.index` (which re-exports these); auditors read these types
without loading it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ingestaudit.errors import IndexingError

KINDS = ("hnsw", "ivf", "flat")
"""Index kinds: FAISS ``IndexHNSWFlat`` (default), ``IndexIVFFlat``, ``IndexFlat`` (exact; its recall is 1)."""
METRICS = ("cosine", "ip", "l2")
FAISS_EF_SEARCH_DEFAULT = 16
"""FAISS's own HNSW efSearch default (``faiss::HNSW::efSearch``), for reference; `IndexSettings` uses 64."""
FAISS_EF_CONSTRUCTION_DEFAULT = 40
"""FAISS's own HNSW efConstruction default (``faiss::HNSW::efConstruction``)."""
EXACT_BATCH = 1024
"""Queries per exact-search call: FAISS's brute-force kNN holds one query block's results at a time."""


class IndexInputError(IndexingError, ValueError):
    """Vectors or queries that no index may be built or searched on: NaN or infinity, a dimension mismatch, an empty
    base, a non-2-D array, bad ``k``. The message names what is wrong, where (``name``) and the first bad row."""


@dataclass(frozen=True)
class IndexSettings:
    """How the approximate index under audit is built and searched.

    Attributes:
        kind: ``"hnsw"`` (default), ``"ivf"`` or ``"flat"``.
        metric: ``"cosine"`` (default; inner product on caller-normalised vectors), ``"ip"`` or ``"l2"``.
        m: HNSW neighbours per node (FAISS ``M``), default 32.
        ef_construction: HNSW build beam, default 40 (FAISS's default).
        ef_search: HNSW search beam, default 64 (FAISS's default is 16; see `ingestaudit.stages.index`).
        nlist: IVF lists; None = ``round(sqrt(n))`` clamped to ``[1, n]``.
        nprobe: IVF lists visited per query, default 1 (FAISS's default).
        seed: seeds the HNSW level generator and IVF k-means.
        build_threads: OpenMP threads while adding vectors; 1 (default) gives the same graph on every run, None
            uses FAISS's default (all cores; faster, not reproducible for HNSW).

    Raises:
        ValueError: an unknown kind or metric, or a parameter out of range.
    """

    kind: str = "hnsw"
    metric: str = "cosine"
    m: int = 32
    ef_construction: int = FAISS_EF_CONSTRUCTION_DEFAULT
    ef_search: int = 64
    nlist: int | None = None
    nprobe: int = 1
    seed: int = 0
    build_threads: int | None = 1

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown index kind {self.kind!r}; known: {', '.join(KINDS)}")
        if self.metric not in METRICS:
            raise ValueError(f"unknown index metric {self.metric!r}; known: {', '.join(METRICS)}")
        for name in ("m", "ef_construction", "ef_search", "nprobe"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"index option {name} must be an integer >= 1, got {v!r}")
        if self.nlist is not None and (isinstance(self.nlist, bool) or not isinstance(self.nlist, int)
                                       or self.nlist < 1):
            raise ValueError(f"index option nlist must be an integer >= 1, got {self.nlist!r}")
        if self.build_threads is not None and (not isinstance(self.build_threads, int) or self.build_threads < 1):
            raise ValueError(f"index option build_threads must be an integer >= 1 or absent, got "
                             f"{self.build_threads!r}")

    @classmethod
    def from_options(cls, kind: str, options: Mapping[str, Any] | None = None,
                     ignore: Sequence[str] = ("normalise",)) -> "IndexSettings":
        """Settings from a pipeline's index stage: ``kind`` is its implementation name (``hnsw``, ``ivf``, ``flat``)
        and ``options`` its table; ``M`` is accepted for ``m``, ``efSearch``/``efConstruction`` for the snake-case
        names; keys in ``ignore`` (options of the stage that are not index settings) are skipped.

        Raises:
            ValueError: unknown kind, an unknown option (the message lists the known ones), a bad value.
        """
        alias = {"M": "m", "efSearch": "ef_search", "efConstruction": "ef_construction", "efsearch": "ef_search",
                 "efconstruction": "ef_construction"}
        fields = {f for f in cls.__dataclass_fields__} - {"kind"}
        kw = {alias.get(k, k): v for k, v in (options or {}).items() if k not in ignore}
        unknown = sorted(set(kw) - fields)
        if unknown:
            raise ValueError(f"index {kind!r}: unknown option(s) {', '.join(unknown)}; known: "
                             f"{', '.join(sorted(fields))}")
        return cls(kind=kind, **kw)

    def options(self) -> dict[str, Any]:
        """Every setting, JSON-serialisable (printed in the report)."""
        return asdict(self)

    def resolved_nlist(self, n: int) -> int:
        """The IVF list count for ``n`` vectors: ``nlist`` or ``round(sqrt(n))``, clamped to ``[1, n]``."""
        want = self.nlist if self.nlist is not None else int(round(math.sqrt(n)))
        return max(1, min(want, n))

    @property
    def knob(self) -> str | None:
        """The search-time parameter a sweep varies: ``"ef_search"`` (HNSW), ``"nprobe"`` (IVF), None (flat)."""
        return {"hnsw": "ef_search", "ivf": "nprobe"}.get(self.kind)

    @property
    def higher_is_closer(self) -> bool:
        """True for inner-product scores (cosine, ip), False for L2 distances."""
        return self.metric != "l2"


def higher_is_closer(metric: str) -> bool:
    """True for ``cosine`` and ``ip`` (similarities), False for ``l2`` (distances).

    Raises:
        ValueError: unknown metric.
    """
    if metric not in METRICS:
        raise ValueError(f"unknown index metric {metric!r}; known: {', '.join(METRICS)}")
    return metric != "l2"


def check_vectors(vectors: Any, *, name: str = "vectors", dim: int | None = None,
                  allow_empty: bool = False) -> np.ndarray:
    """``vectors`` as a C-contiguous float32 ``(n, d)`` array (copied only when needed), after checks.

    Raises:
        IndexInputError: not 2-D or not numeric; no rows (unless ``allow_empty``); zero dimensions; ``d != dim``;
            a NaN or infinite value (the message gives how many rows and the first one).
    """
    a = np.asarray(vectors)
    if a.ndim != 2:
        raise IndexInputError(f"{name}: expected a 2-D (n, d) array, got shape {a.shape}")
    if not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
        raise IndexInputError(f"{name}: expected numbers, got dtype {a.dtype}")
    if a.shape[0] == 0 and not allow_empty:
        raise IndexInputError(f"{name}: empty (no vectors); an index needs at least one vector")
    if a.shape[1] == 0:
        raise IndexInputError(f"{name}: vectors have 0 dimensions")
    if dim is not None and a.shape[1] != dim:
        raise IndexInputError(f"{name}: dimension {a.shape[1]} does not match the index dimension {dim}")
    a = np.ascontiguousarray(a, dtype=np.float32)
    bad = _nonfinite_rows(a)
    if bad.size:
        raise IndexInputError(f"{name}: {bad.size} vector(s) hold NaN or infinity (first: row {int(bad[0])}); "
                              f"no recall is computed on them")
    return a


def _nonfinite_rows(a: np.ndarray, block: int = 8192) -> np.ndarray:
    out = [np.flatnonzero(~np.isfinite(a[s:s + block]).all(axis=1)) + s for s in range(0, a.shape[0], block)]
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)
