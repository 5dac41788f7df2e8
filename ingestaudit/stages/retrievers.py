"""The retriever plug point: what ranks a pipeline's chunks for a question.

Built-in retrievers: ``dense`` searches the pipeline's index (exact and approximate FAISS, `ingestaudit.stages.index`)
with the question's embedding (the retrieve step runs it itself, `ingestaudit.stages.retrieve_step`); ``bm25``
ranks by BM25 over the chunk texts (the ``bm25s`` library, `ingestaudit.stages.bm25_retriever`); ``hybrid`` fuses
named lanes (``dense``, ``bm25`` or any other retriever) by reciprocal rank fusion
(`ingestaudit.stages.hybrid_retriever`). ``--sweep retriever.use=dense,bm25,hybrid`` audits each on the same
questions (a bake-off the verdict's paired tests compare). A user retriever (a reranker, a
call into a production store's client) registers in the entry-point group ``ingestaudit.retrievers`` (or is given as
``"module:Class"`` on the command line or in a ``--config`` file) and is chosen per pipeline with
``retriever = "name"`` or ``retriever = { use = "name", option = value }``. Its ranking is audited as the pipeline's:
a miss is ``missed_by_ranking`` (the waterfall cannot tell an approximate-index miss inside a retriever it does not
see). A retriever that fails to load or to index makes every question of its pipeline an ``error`` row (one failure
names it); one that raises in `Retriever.search`, returns an unknown row or a non-finite top score, makes that
question an ``error``. Results that break the question's filter are audited as returned and counted
(``retrieval.filter_violation``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ingestaudit.errors import RetrievalError
from ingestaudit.plugins import PluginUnavailable, UnknownPlugin, entry_points_of, instantiate, plugin_class, plugin_names

GROUP = "ingestaudit.retrievers"
DENSE = "dense"

BUILTIN: dict[str, str] = {
    "bm25": "ingestaudit.stages.bm25_retriever:BM25Retriever",
    "hybrid": "ingestaudit.stages.hybrid_retriever:HybridRetriever",
}
"""Built-in retrievers besides ``dense`` (name -> ``module:Class``); a user entry point of one of these names is
ignored (the built-in wins)."""


class UnknownRetriever(UnknownPlugin, ValueError):
    """No retriever is registered under that name (the message lists the known ones)."""


class RetrieverUnavailable(RetrievalError, PluginUnavailable):
    """A retriever's module does not import; the message says which."""


@dataclass(frozen=True)
class ChunkView:
    """One chunk as a retriever sees it: its row (the id a retriever returns), document, text, page, section path
    and metadata."""

    row: int
    doc: str
    text: str
    page: int | None
    section: tuple[str, ...]
    metadata: dict[str, Any]


class Retriever(ABC):
    """Ranks chunks for questions. Options come in through ``__init__`` and are returned by `settings`."""

    name: ClassVar[str]
    needs_vectors: ClassVar[bool] = True
    """False when the retriever reads chunk texts only (``bm25``): a pipeline whose only vector consumer is such a
    retriever does not embed its chunks nor its questions (`retriever_needs_vectors`)."""

    def uses_vectors(self) -> bool:
        """Whether this instance reads chunk and question vectors (default: the class's `needs_vectors`; a hybrid
        answers for its lanes)."""
        return self.needs_vectors

    def index(self, chunks: Sequence[ChunkView], vectors: np.ndarray | None) -> None:
        """Called once per pipeline with every chunk (rows ``0..n-1``) and their L2-normalised vectors (float32,
        ``(n, d)``) or None. The default keeps them in ``self.chunks`` and ``self.vectors``."""
        self.chunks, self.vectors = list(chunks), vectors

    @abstractmethod
    def search(self, question: str, vector: np.ndarray | None, k: int,
               allowed: np.ndarray | None) -> list[tuple[int, float]]:
        """The top ``k`` chunks for one question, best first, as ``(row, score)``; only rows in ``allowed`` (the
        question's metadata filter) when it is not None. ``k`` is the auditor's ``depth`` (default: its largest
        cutoff). The order is kept as returned (ties are not re-sorted); a higher score means more relevant (the
        top-1 score is the question's confidence in ``retrieval.abstention_auroc``). Rows outside ``0..n-1`` make
        the question an ``error``."""

    def settings(self) -> dict[str, Any]:
        """Every option that changes the ranking, JSON-serialisable."""
        return {}

    def version(self) -> str:
        """The version of the retriever's library."""
        return "unknown"


def retriever_names() -> list[str]:
    """``dense``, the other built-ins (`BUILTIN`), then the entry-point retrievers (sorted)."""
    return plugin_names(GROUP, [DENSE, *BUILTIN])


def retriever_needs_vectors(use: str, options: dict[str, Any] | None = None) -> bool:
    """Whether the retriever ``use`` with ``options`` reads chunk vectors (``dense``: yes); one that cannot be built
    is taken to need them (its error is reported by the start-up check, never hidden here)."""
    if use == DENSE:
        return True
    try:
        return load_retriever(use, options).uses_vectors()
    except Exception:
        return True


def load_retriever(name: str, options: dict[str, Any] | None = None) -> Retriever:
    """Instantiate the retriever ``name`` (a built-in of `BUILTIN`, an entry point or ``"module:Class"``) with keyword
    ``options``.

    Raises:
        UnknownRetriever: nothing registered under ``name``, or not a `Retriever`.
        RetrieverUnavailable: its module does not import.
        ValueError: an option it does not take.
    """
    if name == DENSE:
        raise UnknownRetriever("the dense retriever is the retrieve step's own FAISS search, not a plug-in")
    cls = plugin_class(GROUP, name, BUILTIN, what="retriever", base=Retriever, entry_points=lambda: entry_points_of(GROUP),
                       known=retriever_names, unknown=UnknownRetriever, unavailable=RetrieverUnavailable)
    return instantiate(cls, options, f"retriever {name!r}")
