"""Schemas of the precomputed outputs that are not one JSON object per document (DESIGN.md, "Pipelines"): a user's
retrieval results (``DIR/<pipeline>/retrieval.jsonl``), embeddings (``vectors.npy`` + ``vector_ids.json``) and
vector-store answers (``ann_results.jsonl``).

The loaders (`ingestaudit.auditors.retrieval`, `ingestaudit.auditors.index`) take their valid keys from these models
and `ingestaudit.reference_docs` generates ``docs/outputs.md`` from them, so the page and the code name the same keys.
The per-document JSON output is `ingestaudit.parsers.precomputed.OutputFile`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ChunkPointer(_Strict):
    """A chunk named by its offsets: the ``start`` and ``end`` of one of the run's chunks of that document (code
    points of the cleaned text, end exclusive)."""

    start: StrictInt = Field(ge=0, description="the chunk's start offset, as the chunker reported it")
    end: StrictInt = Field(ge=0, description="the chunk's end offset (exclusive)")


class RetrievedChunk(_Strict):
    """One result of a question, best first."""

    doc: StrictStr = Field(min_length=1, description="document id, `<class>/<name>` (as under docs/)")
    chunk: StrictInt | ChunkPointer = Field(
        description="the chunk: its index among the document's chunks in this run (0-based), or a "
                    "`ChunkPointer` {\"start\", \"end\"}")
    score: StrictFloat | StrictInt | None = Field(
        default=None, description="the retriever's score (the first result's is kept as the question's top score)")


class RetrievalLine(_Strict):
    """One line of ``retrieval.jsonl``: a question and the chunks the user's retriever returned for it. Each question
    at most once; a question without a line has no results (every evidence item missed by ranking), unless some line
    cannot be read at all: it may have been that question's, so the question is an error. A bad line that still
    names its question makes that question an error; the other lines are audited."""

    question: StrictStr = Field(min_length=1, description="the question's id in questions.jsonl")
    results: list[RetrievedChunk] = Field(description="the retrieved chunks, best first")
    latency_ms: StrictFloat | StrictInt | None = Field(
        default=None, ge=0, description="the search's wall-clock latency in milliseconds (reported with the timings)")


class AnnResultsLine(_Strict):
    """One line of ``ann_results.jsonl``: the vector store's answer to one query, best first. Ask the store for
    ``k + 1`` results on self queries: the query's own id is dropped. A bad line makes its query an error (the
    other lines are audited); a line whose query cannot be told makes every question without a line an error."""

    query: StrictStr = Field(min_length=1, description="a question id (the question embedded with the pipeline's "
                                                       "embedder), or a vector id (a self query: that vector)")
    results: list[StrictStr] = Field(description="ids of vector_ids.json, as the store returned them, best first")


VECTOR_FILES = (
    ("vectors.npy", "a 2-D float array (n vectors x d dimensions) saved with numpy.save; read with "
                    "numpy.load(allow_pickle=False); no NaN or infinity"),
    ("vector_ids.json", "a JSON list of n unique non-empty strings, one per row of vectors.npy, each "
                        "`<doc id>#<chunk index>` naming a chunk of this run"),
)
"""The user's own embeddings, ``DIR/<pipeline>/vectors.npy`` + ``vector_ids.json`` (both needed); they replace the
run's vectors in the ``index`` audit (`ingestaudit.auditors.index.read_user_vectors`)."""


def check_retrieval_keys(record: dict) -> None:
    """Check the keys of one parsed ``retrieval.jsonl`` line (types are the loader's business).

    Raises:
        TypeError: a key `RetrievalLine`, `RetrievedChunk` or `ChunkPointer` does not have; the message names the
            place (``results[2].chunk``), the valid keys and the reference page.
    """
    from ingestaudit.schema_keys import PAGES, anchor, keys_of, unknown_keys

    def check(obj: object, model: type[BaseModel], where: str) -> None:
        if isinstance(obj, dict):
            extra = [k for k in obj if k not in keys_of(model)]
            if extra:
                raise TypeError(where + unknown_keys(extra, keys_of(model), f"{PAGES['outputs']}#{anchor(model)}"))

    check(record, RetrievalLine, "")
    results = record.get("results")
    for j, r in enumerate(results if isinstance(results, list) else []):
        check(r, RetrievedChunk, f"results[{j}]: ")
        if isinstance(r, dict):
            check(r.get("chunk"), ChunkPointer, f"results[{j}].chunk: ")
