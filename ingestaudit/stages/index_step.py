"""The index step of one pipeline: the exact (flat) FAISS index and the approximate index under audit, each built
once per pipeline and vector set, and the search callables the index and retrieval auditors read them through.

One `IndexStep` serves every auditor of a pipeline in a run (`ingestaudit.stages.retrieve_step.with_index_steps`):
an index is keyed by the bytes of the vectors it holds and its settings, so two auditors asking for the same index
over the same vectors get the one built first (the retrieval auditor and the index audit both index the run's chunk
vectors). A different vector set (a user's ``vectors.npy``, or vectors the index audit L2-normalised because some
were not unit norm) is another index, built and counted apart: `timings` says how many times each kind was built
(``timings.json``: ``timings[<pipeline>]["steps"]["index"]["index_builds"]``).

Brute-force exact search (`IndexStep.knn`, FAISS ``knn``) builds no index and is not counted. FAISS loads on the
first build or search, never at import.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ingestaudit.index_settings import IndexSettings, check_vectors
from ingestaudit.step_times import timed


@dataclass
class ExactIndex:
    """An exact FAISS index (``IndexFlatIP`` for cosine and ip, ``IndexFlatL2`` for l2) over one vector set, rows
    ``0..n-1``, with its build wall time in seconds."""

    index: Any
    build_seconds: float

    def search(self, queries: np.ndarray, k: int, allowed: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, ids)``, each ``(q, k)``, best first, ``-1`` padded (`ingestaudit.stages.index.search`);
        ``allowed``: the rows every query may return (a filter applied inside the search), or None.

        Raises:
            IndexInputError: bad queries or ``k``, allowed rows out of range.
        """
        from ingestaudit.stages.index import search

        return search(self.index, queries, k, allowed=allowed)


@dataclass
class AnnIndex:
    """The approximate index under audit (``settings``) over one vector set, rows ``0..n-1``.

    Attributes:
        index: the FAISS index.
        settings: the `IndexSettings` it was built with.
        build_seconds: training + adding wall time (seconds).
        memory_bytes: its data structures' bytes (`ingestaudit.stages.index.index_memory_bytes`).
    """

    index: Any
    settings: IndexSettings
    build_seconds: float
    memory_bytes: int

    def search(self, queries: np.ndarray, k: int, allowed: Sequence[np.ndarray | None] | None = None,
               params: Mapping[str, int] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One query at a time on one thread, timed: ``(scores (q, k), ids (q, k), latencies_ms (q,))``
        (`ingestaudit.stages.index.timed_search`). ``allowed``: one entry per query (its allowed rows, or None);
        ``params``: ``{"ef_search": v}`` (HNSW) or ``{"nprobe": v}`` (IVF) for this search only.

        Raises:
            IndexInputError: bad queries or ``k``; ``allowed`` of the wrong length.
            ValueError: a parameter the index kind does not take.
        """
        from ingestaudit.stages.index import timed_search

        return timed_search(self.index, queries, k, allowed=allowed, params=params)

    @contextmanager
    def count_distances(self) -> Iterator[dict[str, int | None]]:
        """The distance computations of the searches run inside the block (``"distances"`` on exit; None for a
        flat index), as `ingestaudit.stages.index.distance_counter`."""
        from ingestaudit.stages.index import distance_counter

        with distance_counter(self.index) as counted:
            yield counted


def _digest(x: np.ndarray) -> str:
    return hashlib.blake2b(memoryview(x).cast("B"), digest_size=16).hexdigest()


@dataclass
class IndexStep:
    """One pipeline's index step: builds each index once and searches it (module docstring).

    Attributes:
        settings: the pipeline's index settings (`IndexSettings.from_options` of its ``index`` stage and the run's
            seed), or None when they are bad: then ``settings_error`` holds the exception and `pipeline_settings`
            raises it, so that each auditor reports it as it did before.
        normalise: the pipeline's ``normalise`` option of the index stage (default True).
        builds: ``{"exact": n, "approximate": n}``: indexes built so far.
    """

    settings: IndexSettings | None = None
    normalise: bool = True
    settings_error: Exception | None = None
    builds: dict[str, int] = field(default_factory=lambda: {"exact": 0, "approximate": 0})
    _built: dict[tuple, Any] = field(default_factory=dict, repr=False)
    _seconds: dict[str, list[float]] = field(default_factory=lambda: {"exact": [], "approximate": []}, repr=False)

    @classmethod
    def for_pipeline(cls, pipeline: Any, seed: int) -> "IndexStep":
        """The step of ``pipeline`` (`ingestaudit.pipeline.Pipeline`): its ``index`` stage's implementation and
        options (``normalise`` apart), seeded with the run's ``seed``. Never raises: bad settings are kept as
        ``settings_error``."""
        choice = pipeline.stage("index")
        opts = choice.kwargs()
        normalise = bool(opts.pop("normalise", True))
        try:
            return cls(IndexSettings.from_options(choice.use, {"seed": seed, **opts}), normalise)
        except Exception as exc:  # kept: each auditor that asks reports it (an error of that stage)
            return cls(None, normalise, exc)

    def pipeline_settings(self) -> IndexSettings:
        """``settings``.

        Raises:
            ValueError: the pipeline's index options are bad (what `IndexSettings.from_options` raised).
        """
        if self.settings is None:
            raise self.settings_error or ValueError("no index settings")
        return self.settings

    @staticmethod
    def normalised(vectors: np.ndarray, *, inplace: bool = False) -> np.ndarray:
        """``vectors`` with unit-L2 rows (`ingestaudit.stages.index.l2_normalise`; ``inplace`` as there)."""
        from ingestaudit.stages.index import l2_normalise

        return l2_normalise(vectors, inplace=inplace)

    @staticmethod
    def knn(base: np.ndarray, queries: np.ndarray, k: int, metric: str, *,
            allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Exact brute-force k nearest neighbours with ``metric``, no index built
        (`ingestaudit.stages.index.exact_search`): ``(scores, ids)``, each ``(q, k)``, ``-1`` padded."""
        from ingestaudit.stages.index import exact_search

        return exact_search(base, queries, k, metric, allowed=allowed)

    def exact(self, vectors: np.ndarray, metric: str) -> ExactIndex:
        """The exact index over ``vectors`` with ``metric``, built on the first call for these vectors.

        Raises:
            IndexInputError: as `ingestaudit.index_settings.check_vectors`.
        """
        x = check_vectors(vectors)
        key = ("exact", metric, x.shape, _digest(x))
        if key not in self._built:
            import faiss  # noqa: F401  (imported before the clock starts: its import is no build time)

            from ingestaudit.stages.index import build_exact

            t0 = time.perf_counter()
            with timed("index"):
                index = build_exact(x, metric)
            self._built[key] = ExactIndex(index, time.perf_counter() - t0)
            self._count("exact", self._built[key].build_seconds)
        return self._built[key]

    def ann(self, vectors: np.ndarray, settings: IndexSettings | None = None) -> AnnIndex:
        """The approximate index over ``vectors`` with ``settings`` (default: the pipeline's), built on the first
        call for these vectors and settings.

        Raises:
            IndexInputError: as `ingestaudit.index_settings.check_vectors`.
            ValueError: the pipeline's index options are bad (``settings`` not given).
        """
        settings = settings if settings is not None else self.pipeline_settings()
        x = check_vectors(vectors)
        key = ("approximate", settings, x.shape, _digest(x))
        if key not in self._built:
            import faiss  # noqa: F401

            from ingestaudit.stages.index import build_ann

            with timed("index"):
                index, seconds, memory = build_ann(x, settings)
            self._built[key] = AnnIndex(index, settings, seconds, memory)
            self._count("approximate", seconds)
        return self._built[key]

    def _count(self, kind: str, seconds: float) -> None:
        self.builds[kind] += 1
        self._seconds[kind].append(seconds)

    def timings(self) -> dict[str, Any]:
        """``{"index_builds": {"exact": n, "approximate": n}, "build_seconds": {"exact": [s...], "approximate":
        [s...]}}``: how many indexes this step built for its pipeline (1 each when every auditor read the same
        vectors; 0 for a kind nobody asked for) and each build's wall time."""
        return {"index_builds": dict(self.builds), "build_seconds": {k: list(v) for k, v in self._seconds.items()}}
