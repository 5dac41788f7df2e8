"""The retrieve step's artefact: the chunk table a pipeline's rankings index into (`ChunkTable`) and the ranked
results per question (`Retrieved`), as the retrieval auditor reads them. Plain data, no FAISS, no model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ingestaudit.measurement import State


@dataclass
class ChunkTable:
    """Every embedded chunk of one pipeline, one row each, in corpus order (a document's chunks in chunk order).

    Attributes:
        rows: row -> ``(doc id, chunk index)``.
        meta: row -> the chunk's metadata (truth and chunker metadata a question's filter tests).
        vectors: ``(n, d)`` float32 chunk vectors as the embedder gave them (``(0, 1)`` when there is none; None for
            a table built without vectors, for a retriever that reads texts only).
        row_of: ``(doc id, chunk index)`` -> row.
        labelled: doc id -> the labelled values of the metadata fields its pipeline's metadata step changed
            (`ingestaudit.chain.DocChunks.labelled`; None: the truth has no such field); documents without one absent.
    """

    rows: list[tuple[str, int]]
    meta: list[dict[str, Any]]
    vectors: np.ndarray | None
    row_of: dict[tuple[str, int], int] = field(default_factory=dict)
    labelled: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.row_of:
            self.row_of = {r: j for j, r in enumerate(self.rows)}

    @classmethod
    def of(cls, docs: list[Any], with_vectors: bool = True) -> "ChunkTable":
        """The table of ``docs`` (`ingestaudit.chain.DocChunks`): the chunks of every ``ok`` document that has
        vectors; with ``with_vectors`` False, of every ``ok`` document, and ``vectors`` None (a retriever that reads
        texts only: the chunks were not embedded)."""
        rows, vectors, meta, labelled = [], [], [], {}
        for d in docs:
            if getattr(d, "labelled", None):
                labelled[d.doc_id] = dict(d.labelled)
            if d.state is State.OK and (d.vectors is not None or not with_vectors):
                for i in range(len(d.texts)):
                    rows.append((d.doc_id, i))
                    meta.append(d.metadata[i] if i < len(d.metadata) else {})
                if with_vectors:
                    vectors.append(np.asarray(d.vectors, dtype=np.float32))
        if not with_vectors:
            return cls(rows, meta, None, labelled=labelled)
        return cls(rows, meta, np.concatenate(vectors) if vectors else np.zeros((0, 1), dtype=np.float32),
                   labelled=labelled)

    def passes_as_labelled(self, flt: dict[str, Any] | None, row: int) -> bool:
        """True when chunk ``row`` would pass the filter with its document's labelled metadata in place of the values
        the metadata step extracted (a field the truth lacks is absent); False when nothing was changed."""
        from ingestaudit.questions import filter_passes

        changed = self.labelled.get(self.rows[row][0])
        if not changed or not flt:
            return False
        meta = {**self.meta[row], **{k: v for k, v in changed.items() if v is not None}}
        for k, v in changed.items():
            if v is None:
                meta.pop(k, None)
        return filter_passes(flt, meta)

    @property
    def fields(self) -> set[str]:
        """Every metadata field some chunk carries, and ``a.b`` for each key ``b`` of a table-valued field ``a``
        (``entities.ORG``: `ingestaudit.questions.filter_passes` reads it)."""
        out: set[str] = set()
        for m in self.meta:
            out.update(m)
            out.update(f"{k}.{sub}" for k, v in m.items() if isinstance(v, dict) for sub in v)
        return out

    def allowed(self, flt: dict[str, Any] | None) -> np.ndarray | None:
        """The rows a question's metadata filter lets through (sorted int64), or None when it has no filter."""
        from ingestaudit.questions import filter_passes

        if not flt:
            return None
        return np.array([j for j, m in enumerate(self.meta) if filter_passes(flt, m)], dtype=np.int64)


Rank = tuple[Any, Any, "float | None"]
"""One question's results: ``(served rows, exact rows, top-1 score)``. The served rows are what the pipeline
returns (the approximate index, a user's retriever or ``retrieval.jsonl``), best first; the exact rows are exact
search's (the served ones again when exact and approximate cannot be told apart); the score is the first served
result's (None when absent). A question whose results could not be had carries the message (a string) in both
row places."""


@dataclass
class Retrieved:
    """The ranked results of one pipeline's questions (the retrieve step, `ingestaudit.stages.retrieve_step`).

    Attributes:
        table: the chunk table the rows index into.
        ranks: one `Rank` per question, in question order.
        latencies_ms: per searched query, milliseconds (NaN: a filter let nothing through, no search ran).
        timings: wall-clock facts (retriever, metric, build seconds, memory...), for ``timings.json``.
        failures: pipeline-wide problems (a retriever that failed to load, an unreadable ``retrieval.jsonl``,
            lines naming no question), each reported once.
        embedding: the question embedder's counter increments (``calls``, ``misses``, ``hits``,
            ``tokens_embedded``).
        questions_embedded: question texts embedded for this ranking.
        higher_is_closer: False when the top-1 score is an L2 distance (lower is closer).
        scores: per question (question order; empty: not recorded), the served results' scores in served order
            (None for a result without one, a user's line may omit it), or None for a question without results.
        embedding_calls: per question (question order; empty: not recorded), the query embeddings computed for it
            in this ranking: 1 when its vector was computed, 0 when it came from the cache, repeated an earlier
            question's text, or no embedding was needed (a lexical retriever, a user's results).
    """

    table: ChunkTable
    ranks: list[Rank]
    latencies_ms: list[float] = field(default_factory=list)
    timings: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    embedding: dict[str, int] = field(default_factory=dict)
    questions_embedded: int = 0
    higher_is_closer: bool = True
    scores: list[list[float | None] | None] = field(default_factory=list)
    embedding_calls: list[int] = field(default_factory=list)
