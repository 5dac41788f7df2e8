"""The ``hybrid`` retriever: named lanes fused by reciprocal rank fusion (`ingestaudit.stages.fusion.rrf`).

``retriever = { use = "hybrid", lanes = ["dense", "bm25"], k = 60, weights = [1.0, 1.0], lane_depth = 100 }``: each
lane is a retriever name (``dense``: the pipeline's approximate FAISS index, searched by the retrieve step; ``bm25``;
any registered retriever) or a table ``{ use = "bm25", k1 = 1.2 }`` with that retriever's options. Each lane returns
its ``max(lane_depth, depth)`` best chunks among those the question's filter lets through; the fused list is cut to
the auditor's depth. The top-1 score is the fused RRF score.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from ingestaudit.stages.fusion import DEFAULT_K, rrf
from ingestaudit.stages.retrievers import DENSE, ChunkView, Retriever, UnknownRetriever, load_retriever

DEFAULT_LANES = (DENSE, "bm25")
DEFAULT_LANE_DEPTH = 100

DenseSearch = Callable[[np.ndarray, int, "np.ndarray | None"], list[tuple[int, float]]]
"""The retrieve step's dense search: ``(question vector (d,), k, allowed rows or None) -> [(row, score)]``."""


class DenseLane(Retriever):
    """The ``dense`` lane of a hybrid: the pipeline's approximate index, searched through the function the retrieve
    step binds (`bind`); it builds nothing itself."""

    name: ClassVar[str] = DENSE

    def __init__(self) -> None:
        self._search: DenseSearch | None = None

    def bind(self, search: DenseSearch) -> None:
        """Use ``search`` (the retrieve step's FAISS search over this pipeline's chunk vectors)."""
        self._search = search

    def search(self, question: str, vector: np.ndarray | None, k: int,
               allowed: np.ndarray | None) -> list[tuple[int, float]]:
        """The approximate index's top ``k`` among ``allowed``.

        Raises:
            RuntimeError: no search was bound (the lane runs inside the retrieve step only), or no question vector.
        """
        if self._search is None or vector is None:
            raise RuntimeError("the dense lane searches the pipeline's index: it runs inside the retrieve step")
        return self._search(vector, k, allowed)

    def version(self) -> str:
        """faiss-cpu's version."""
        from ingestaudit.plugins import package_version

        return package_version("faiss-cpu") or "not installed"

    def settings(self) -> dict[str, Any]:
        """What the lane searches."""
        return {"searches": "the pipeline's approximate index (its index stage), question embedded by its embedder"}


def _lane(i: int, spec: Any) -> tuple[str, Retriever]:
    """Lane ``i`` of the ``lanes`` option: its name and retriever.

    Raises:
        ValueError: not a name nor a table with ``use``, a hybrid inside a hybrid, an unknown name (the message lists
            the valid ones), or options the lane's retriever refuses.
    """
    where = f"hybrid option 'lanes'[{i}]"
    if isinstance(spec, str) and spec:
        use, opts = spec, {}
    elif isinstance(spec, dict) and isinstance(spec.get("use"), str) and spec["use"]:
        use, opts = spec["use"], {k: v for k, v in spec.items() if k != "use"}
    else:
        raise ValueError(f"{where}: give a retriever name or a table with 'use', got {spec!r}")
    if use == "hybrid":
        raise ValueError(f"{where}: a hybrid cannot be a lane of a hybrid")
    if use == DENSE:
        if opts:
            raise ValueError(f"{where}: the dense lane takes no options (it searches the pipeline's index stage)")
        return use, DenseLane()
    try:
        return use, load_retriever(use, opts)
    except UnknownRetriever as exc:
        raise UnknownRetriever(f"{where}: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


class HybridRetriever(Retriever):
    """Reciprocal rank fusion of named lanes (module docstring).

    Options:
        lanes: a list of at least one lane, each a retriever name or ``{use = name, option = value}`` (default
            ``["dense", "bm25"]``).
        k: the RRF constant, a number > 0 (default 60, Cormack et al. 2009).
        weights: one finite weight >= 0 per lane, at least one > 0 (default all 1).
        lane_depth: results asked of each lane, an integer >= 1 (default 100; at least the auditor's depth is asked).

    Raises (constructor):
        ValueError: a bad option, naming it (`UnknownRetriever` for an unknown lane name).
    """

    name: ClassVar[str] = "hybrid"

    def __init__(self, *, lanes: Sequence[Any] = DEFAULT_LANES, k: float = DEFAULT_K,
                 weights: Sequence[float] | None = None, lane_depth: int = DEFAULT_LANE_DEPTH) -> None:
        if isinstance(lanes, (str, dict)) or not isinstance(lanes, Sequence) or not lanes:
            raise ValueError(f"hybrid option 'lanes' must be a non-empty list of retriever names or tables, "
                             f"got {lanes!r}")
        self.lanes = [_lane(i, spec) for i, spec in enumerate(lanes)]
        if isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k) or k <= 0:
            raise ValueError(f"hybrid option 'k' (the RRF constant) must be a number > 0, got {k!r}")
        self.k = k
        if weights is not None:
            if isinstance(weights, (str, dict)) or not isinstance(weights, Sequence) or len(weights) != len(lanes):
                raise ValueError(f"hybrid option 'weights' must list one weight per lane ({len(lanes)}: "
                                 f"{', '.join(n for n, _ in self.lanes)}), got {weights!r}")
            if any(isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0
                   for w in weights):
                raise ValueError(f"hybrid option 'weights' must hold finite numbers >= 0, got {list(weights)!r}")
            if not any(w > 0 for w in weights):  # every fused score 0: the ranking would be the tie order alone
                raise ValueError(f"hybrid option 'weights' needs at least one weight > 0, got {list(weights)!r}")
        self.weights = None if weights is None else [float(w) for w in weights]
        if isinstance(lane_depth, bool) or not isinstance(lane_depth, int) or lane_depth < 1:
            raise ValueError(f"hybrid option 'lane_depth' must be an integer >= 1, got {lane_depth!r}")
        self.lane_depth = lane_depth

    def uses_vectors(self) -> bool:
        """True when some lane reads vectors."""
        return any(r.uses_vectors() for _, r in self.lanes)

    def dense_lanes(self) -> list[DenseLane]:
        """The ``dense`` lanes, for the retrieve step to bind to the pipeline's index."""
        return [r for _, r in self.lanes if isinstance(r, DenseLane)]

    def index(self, chunks: Sequence[ChunkView], vectors: np.ndarray | None) -> None:
        """Index every lane but the dense ones (the index step builds the pipeline's index)."""
        self.chunks, self.vectors = list(chunks), vectors
        for _, r in self.lanes:
            if not isinstance(r, DenseLane):
                r.index(chunks, vectors)

    def search(self, question: str, vector: np.ndarray | None, k: int,
               allowed: np.ndarray | None) -> list[tuple[int, float]]:
        """Each lane's ``max(lane_depth, k)`` best among ``allowed``, fused by RRF, cut to ``k``."""
        depth = max(self.lane_depth, k)
        ranked = [[int(row) for row, _ in r.search(question, vector, depth, allowed)] for _, r in self.lanes]
        return rrf(ranked, self.k, self.weights)[:k]

    def settings(self) -> dict[str, Any]:
        """Fusion, k, weights, lane depth and each lane's name, version and settings."""
        return {"fusion": "reciprocal rank fusion, score = sum of w / (k + rank) over lanes (Cormack, Clarke & "
                          "Büttcher 2009)", "k": self.k,
                "weights": self.weights or [1.0] * len(self.lanes), "lane_depth": self.lane_depth,
                "ties": "equal fused scores keep the order first met, lane by lane",
                "lanes": [{"name": n, "version": r.version(), "settings": r.settings()} for n, r in self.lanes]}

    def version(self) -> str:
        """ingestaudit's version (the fusion is its own code; each lane's version is in `settings`)."""
        from ingestaudit import __version__

        return __version__
