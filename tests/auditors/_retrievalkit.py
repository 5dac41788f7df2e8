"""Hand-built inputs for the retrieval auditor's tests: chunk artefacts with chosen vectors and evidence traces, a
pipeline context around them, and a tiny deterministic bag-of-words embedder (no model: end-to-end runs in seconds)."""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ingestaudit.auditors.base import PipelineContext
from ingestaudit.chain import DocChunks, EvidenceTrace
from ingestaudit.measurement import State
from ingestaudit.pipeline import Pipeline, StageChoice
from ingestaudit.questions import Question
from ingestaudit.stages.embedders.base import Embedder
from ingestaudit.stages.retrieve_step import with_index_steps


def unit(deg: float) -> list[float]:
    """The 2-d unit vector at ``deg`` degrees (cosine between two of them = cos of the angle between)."""
    r = np.deg2rad(deg)
    return [float(np.cos(r)), float(np.sin(r))]


def doc(doc_id: str, angles: Sequence[float] = (), *, state: State = State.OK, metadata: dict | None = None,
        evidence: dict[tuple[str, int], EvidenceTrace] | None = None) -> DocChunks:
    """A document's chunk artefact: one chunk per angle (its vector ``unit(angle)``), all with ``metadata``."""
    n = len(angles)
    return DocChunks(doc_id, doc_id.split("/", 1)[0], state, "" if state is State.OK else "no chunk",
                     texts=[f"{doc_id} chunk {i}" for i in range(n)], pages=[1] * n, sections=[()] * n,
                     metadata=[dict(metadata or {}) for _ in range(n)],
                     vectors=np.array([unit(a) for a in angles], dtype=np.float32).reshape(n, 2) if n else None,
                     evidence=dict(evidence or {}), tokens=[3] * n, intervals=[(i * 10, i * 10 + 9) for i in range(n)])


def held(*chunks: int, parsed: float = 1.0, cleaned: float = 1.0) -> EvidenceTrace:
    """An evidence trace: survived parsing and cleaning by these shares, held by these chunk indexes."""
    return EvidenceTrace(parsed, cleaned, list(chunks), 1.0 if chunks else 0.0)


def question(qid: str, docs: Sequence[str] = (), **extra: Any) -> Question:
    """A question with one whole-document evidence item per doc (or ``relevant=[...]`` given)."""
    raw = {"id": qid, "question": f"text of {qid}", "relevant": [{"doc": d} for d in docs], **extra}
    if not raw["relevant"]:
        raw.pop("relevant")
        raw.setdefault("answerable", False)
    return Question.model_validate(raw)


def pipeline(index: str = "flat", retriever: str = "dense", folder: Path | None = None, **index_opts: Any
             ) -> Pipeline:
    """A pipeline whose index and retriever stages are as given (the others at their defaults)."""
    stages = {"parser": StageChoice("precomputed"), "cleaner": StageChoice("none"),
              "chunker": StageChoice("recursive"), "embedder": StageChoice("minilm"),
              "index": StageChoice(index, tuple(sorted(index_opts.items()))), "retriever": StageChoice(retriever)}
    return Pipeline("p", tuple(stages.items()), precomputed_root=folder.parent if folder else None,
                    source=folder.name if folder else "")


def context(docs: list[DocChunks], questions: list[Question], angles: dict[str, float], *,
            pipe: Pipeline | None = None, rejected: list | None = None, stats: Any = None) -> PipelineContext:
    """A pipeline context whose question embedder maps each question id's text to ``unit(angles[id])``."""
    by_text = {q.question: angles.get(q.id, 0.0) for q in questions}

    def embed(texts: list[str]) -> np.ndarray:
        return np.array([unit(by_text[t]) for t in texts], dtype=np.float32)

    if stats is not None:
        embed.stats = stats  # type: ignore[attr-defined]
    return with_index_steps(PipelineContext(pipe or pipeline(), docs, questions, {q.id: "c" for q in questions},
                                            embed, 0.5, 0, list(rejected or ())))


def rows(result: Any, metric: str, label: str = "") -> dict[str, Any]:
    """``question id -> Score`` of one metric (and label) in a `PipelineResult`."""
    return {item: s for item, _, _, s in result.item_scores if s.metric == metric and s.label == label}


class BagEmbedder(Embedder):
    """Hashed bag of words, L2-normalised, 64 dimensions: questions sharing words with a chunk land near it."""

    name = "bag"

    def model_id(self) -> str:
        return "tests/bag-of-words@1"

    def dimension(self) -> int:
        return 64

    def max_seq_length(self) -> int:
        return 512

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(t.split()) for t in texts]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                out[i, zlib.crc32(w.encode()) % 64] += 1.0
            norm = float(np.linalg.norm(out[i]))
            if norm:
                out[i] /= norm
            else:
                out[i, 0] = 1.0
        return out

    def version(self) -> str:
        return "1"
