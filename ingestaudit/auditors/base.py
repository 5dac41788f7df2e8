"""The auditor plug point: an auditor measures one stage of one document against its truth."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ingestaudit.measurement import Score, State
from ingestaudit.metrics.specs import MetricSpec
from ingestaudit.model import ParsedDocument
from ingestaudit.truth import Truth


class Auditor(ABC):
    """Measures one stage for one (document, parser) pair.

    Subclasses set ``stage`` and ``metrics`` (their `MetricSpec`s, registered on import) and implement `applies` and
    `audit`. Options that change numbers (normalization profile...) come in through ``__init__`` and are returned by
    `options` so the report prints them next to the numbers.
    """

    stage: ClassVar[str]
    metrics: ClassVar[tuple[MetricSpec, ...]]

    def options(self) -> dict[str, Any]:
        """Every option that changes this auditor's numbers, JSON-serialisable."""
        return {}

    @abstractmethod
    def applies(self, truth: Truth) -> bool:
        """True when ``truth`` holds what this auditor measures against (auditors needing no truth return True)."""

    @abstractmethod
    def audit(self, truth: Truth, parsed: ParsedDocument) -> list[Score]:
        """Scores for one document. Must not raise for bad stage output: return rows in a non-``ok`` state instead.
        The runner turns any exception that escapes into ``error`` rows for this stage."""


@dataclass(frozen=True)
class CorpusItem:
    """One document as a corpus-level auditor sees it, for one parser.

    ``parsed`` is None when the parser produced nothing for it; ``state`` and ``reason`` then say why
    (``no_prediction``, ``error``, ``skipped``).
    """

    doc_id: str
    doc_class: str
    truth: Truth
    parsed: ParsedDocument | None
    state: State = State.OK
    reason: str = ""


@dataclass
class CorpusResult:
    """What a corpus-level auditor returns for one parser.

    Attributes:
        doc_scores: per-document rows, as ``(doc_id, Score)``.
        corpus_scores: corpus-level rows as ``(doc_class or "__all__", Score, n_docs)``: a value computed over the
            documents of that class (pairwise dedup rates, per-language F1...), with ``n_docs`` documents behind it.
        details: JSON-serialisable tables too rich for rows (confusion matrices, sweeps), keyed by name.
    """

    doc_scores: list[tuple[str, Score]] = field(default_factory=list)
    corpus_scores: list[tuple[str, Score, int]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


class CorpusAuditor(Auditor):
    """An auditor that needs every document of a parser at once (near-duplicate detection, language confusion).

    The runner collects each parser's `ParsedDocument`s and calls `audit_corpus` once per parser in the main process.
    `audit` is not used for these auditors.
    """

    def audit(self, truth: Truth, parsed: ParsedDocument) -> list[Score]:  # pragma: no cover - not called
        raise NotImplementedError("corpus-level auditors implement audit_corpus")

    @abstractmethod
    def audit_corpus(self, items: list[CorpusItem]) -> CorpusResult:
        """Audit one parser's output over the whole corpus. Must not raise for bad stage output."""


class ChainAuditor(Auditor):
    """A per-document auditor of the stages after parsing (cleaner -> chunker -> embedder), run in the worker on the
    chain's output (`ingestaudit.chain.ChainOutput`). It applies to every document; metrics that need labels give
    ``no_reference`` rows themselves."""

    def applies(self, truth: Truth) -> bool:
        return True

    def audit(self, truth: Truth, parsed: ParsedDocument) -> list[Score]:  # pragma: no cover - not called
        raise NotImplementedError("chain auditors implement audit_chain")

    @abstractmethod
    def audit_chain(self, truth: Truth, parsed: ParsedDocument, chain: Any, evidence: tuple) -> list[Score]:
        """Scores for one document x pipeline from its `ChainOutput` and the questions' evidence items in it."""


@dataclass
class PipelineContext:
    """What a pipeline-level auditor (retrieval, index) receives: one pipeline's compact per-document artefacts.

    Attributes:
        pipeline: the `ingestaudit.pipeline.Pipeline`.
        docs: one `ingestaudit.chain.DocChunks` per document (state says why a document has no chunks).
        questions: the valid labelled questions (`ingestaudit.questions.Question`), file order.
        question_classes: question id -> stratum.
        embed_questions: callable mapping a list of texts to L2-normalised float32 vectors with this pipeline's
            embedder (None when the pipeline has no embedder).
        min_span_coverage: the run's chunk-holds-span threshold.
        seed: the run's seed.
    """

    pipeline: Any
    docs: list[Any]
    questions: list[Any]
    question_classes: dict[str, str]
    embed_questions: Any
    min_span_coverage: float
    seed: int


@dataclass
class PipelineResult:
    """What a pipeline-level auditor returns.

    Attributes:
        item_scores: ``(item, item_kind, class, Score)`` rows (questions, or documents).
        corpus_scores: ``(class or "__all__", Score, n_items)`` corpus-level values.
        details: JSON-serialisable tables (waterfalls, sweeps, curves), keyed by name; deterministic.
        timings: wall-clock numbers (latency, build time), kept out of the byte-identical report.
    """

    item_scores: list[tuple[str, str, str, Score]] = field(default_factory=list)
    corpus_scores: list[tuple[str, Score, int]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)


class PipelineAuditor(Auditor):
    """An auditor over one pipeline's chunks and vectors, in the main process (retrieval on labelled questions, the
    ANN index audit)."""

    def applies(self, truth: Truth) -> bool:
        return True

    def audit(self, truth: Truth, parsed: ParsedDocument) -> list[Score]:  # pragma: no cover - not called
        raise NotImplementedError("pipeline auditors implement audit_pipeline")

    @abstractmethod
    def audit_pipeline(self, ctx: PipelineContext) -> PipelineResult:
        """Audit one pipeline. Must not raise for bad stage output."""
