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
            documents of that class (pairwise dedup rates, per-language F1...), with ``n_docs`` documents behind it
            (only documents that reached the stage).
        details: JSON-serialisable tables too rich for rows (confusion matrices, sweeps), keyed by name.
        unreached: ``doc_class or "__all__" -> {state: count}``: documents the stage applies to that did not reach
            it (no parser output...), by state; the runner adds them to the ``states`` of that class's corpus rows
            (`ingestaudit.auditors.reach`).
    """

    doc_scores: list[tuple[str, Score]] = field(default_factory=list)
    corpus_scores: list[tuple[str, Score, int]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    unreached: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ArtefactItem:
    """One document as a corpus-level auditor sees it in a run, for one pipeline: the compact artefact its worker
    computed (`CorpusAuditor.artefact`: signatures, a predicted label, counts), never the parsed document.

    ``state`` is ``ok`` when the pipeline produced output for the document and its artefact was computed from it;
    otherwise (``no_prediction``, ``error``, ``skipped``) ``reason`` says why, and ``artefact`` holds only what the
    auditor takes from the document's truth (``artefact(truth, None, context)``).
    """

    doc_id: str
    doc_class: str
    artefact: Any
    state: State = State.OK
    reason: str = ""


class CorpusAuditor(Auditor):
    """An auditor that needs every document of a pipeline at once (near-duplicate detection, language confusion,
    PII macro averages).

    In a run the work is split so that no process holds the parsed corpus (DESIGN.md, "Executors and scale"):

    1. `corpus_values` (main process, before any task): what each document's truth contributes to a corpus-wide
       context (the labelled languages, the gold PII types); the context is the sorted union, the same for every
       document;
    2. `artefact` (in the worker, per document x pipeline): a compact, picklable summary of the parsed document
       and its truth;
    3. `audit_artefacts` (main process, once per pipeline): the rows and details from every document's artefact, in
       corpus order.

    `audit_corpus` runs the three steps in this process on `CorpusItem`s (parsed documents at hand: tests, notebooks);
    it gives the same result as a run. `audit` is not used for these auditors.
    """

    step: ClassVar[str] = ""
    """The pipeline step whose artefact `artefact` receives instead of the parsed document (``"language"``: an
    `ingestaudit.detections.LanguageDetection`, None where the step did not run); ``""``: the parsed document.
    Such an auditor loads no detector: `ingestaudit.steps` runs the step (`ingestaudit.steps.audit_corpus` runs
    step and auditor on parsed documents)."""

    def audit(self, truth: Truth, parsed: ParsedDocument) -> list[Score]:  # pragma: no cover - not called
        raise NotImplementedError("corpus-level auditors implement artefact and audit_artefacts")

    def step_options(self) -> dict[str, Any]:
        """The options of this auditor that configure its `step` (the defaults of every pipeline's step, under a
        pipeline's own table); ``{}`` by default."""
        return {}

    def corpus_values(self, truth: Truth) -> tuple[str, ...]:
        """Strings one document's truth adds to the corpus-wide context (default: none)."""
        return ()

    @abstractmethod
    def artefact(self, truth: Truth, parsed: ParsedDocument | None, context: tuple[str, ...]) -> Any:
        """The compact, picklable artefact of one document (``parsed`` None: the pipeline produced nothing for it,
        and the artefact holds what the audit needs from the truth). Runs in the worker; may raise for a document
        the stage cannot handle (the runner turns that into an ``error`` item of this stage)."""

    def stow(self, artefact: Any, folder: Any) -> Any:
        """Called in the main process as each artefact arrives: may move its bulky parts to files in ``folder``
        (one private folder per stage and pipeline, removed with the run) and returns what stays in memory
        (default: the artefact itself)."""
        return artefact

    @abstractmethod
    def audit_artefacts(self, items: list[ArtefactItem], context: tuple[str, ...]) -> CorpusResult:
        """Audit one pipeline's output over the whole corpus from its documents' artefacts (corpus order). Must not
        raise for bad stage output."""

    def audit_corpus(self, items: list[CorpusItem]) -> CorpusResult:
        """`audit_artefacts` over ``items`` (parsed documents), with the artefacts computed here; the same result as
        a run of the same documents. A document whose artefact raises is an ``error`` item with the message.

        Raises:
            TypeError: the auditor reads a pipeline step (`step`): `ingestaudit.steps.audit_corpus` runs the step
                first.
        """
        if self.step:
            raise TypeError(f"the {self.stage} auditor reads the {self.step!r} step's artefacts: use "
                            "ingestaudit.steps.audit_corpus(auditor, items) on parsed documents")
        context = tuple(sorted({v for i in items for v in self.corpus_values(i.truth)}))
        return self.audit_artefacts([artefact_item(self, i.doc_id, i.doc_class, i.truth, i.parsed, i.state, i.reason,
                                                   context)[0] for i in items], context)


def artefact_item(auditor: CorpusAuditor, doc_id: str, doc_class: str, truth: Truth, parsed: ParsedDocument | None,
                  state: State, reason: str, context: tuple[str, ...]) -> tuple[ArtefactItem, str]:
    """The `ArtefactItem` of one document, and the message when computing its artefact from ``parsed`` raised (the
    item is then an ``error`` with the truth-only artefact; ``""`` otherwise)."""
    if parsed is not None:
        try:
            return ArtefactItem(doc_id, doc_class, auditor.artefact(truth, parsed, context), state, reason), ""
        except Exception as exc:  # one document the stage cannot handle: an error of that document
            msg = f"{type(exc).__name__}: {exc}"
            return ArtefactItem(doc_id, doc_class, auditor.artefact(truth, None, context), State.ERROR, msg), msg
    return ArtefactItem(doc_id, doc_class, auditor.artefact(truth, None, context),
                        state if state is not State.OK else State.NO_PREDICTION, reason), ""


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
        rejected_questions: ``(question id, stratum, message)`` of each question that failed validation (unknown
            document, span outside the reference text); the message names the file, line and field. The retrieval
            auditor gives them ``error`` rows so that no question leaves the counts unsaid.
        limits: the run's `ingestaudit.config.Limits` (None: the defaults): the size limits of the user's files an
            auditor reads (``retrieval.jsonl``, ``vectors.npy``...).
        index: the pipeline's index step (`ingestaudit.stages.index_step.IndexStep`, or any object with its
            ``pipeline_settings``, ``normalised``, ``knn`` and ``ann`` methods): the index auditor searches the indexes
            it builds (once per pipeline and vector set) and never builds one itself.
        retrieve: the pipeline's retrieve step: ``retrieve(depth, exact_k)`` returns the questions' ranked results
            (`ingestaudit.retrieved.Retrieved`), computed once; the retrieval auditor reads them.
        Both are None until `ingestaudit.stages.retrieve_step.with_index_steps` attaches them (the runner does).
    """

    pipeline: Any
    docs: list[Any]
    questions: list[Any]
    question_classes: dict[str, str]
    embed_questions: Any
    min_span_coverage: float
    seed: int
    rejected_questions: list[tuple[str, str, str]] = field(default_factory=list)
    limits: Any = None
    index: Any = None
    retrieve: Any = None

    def input_limits(self) -> Any:
        """``limits``, or the default `ingestaudit.config.Limits` when None."""
        from ingestaudit.config import Limits

        return self.limits if self.limits is not None else Limits()


@dataclass
class PipelineResult:
    """What a pipeline-level auditor returns.

    Attributes:
        item_scores: ``(item, item_kind, class, Score)`` rows (questions, or documents).
        corpus_scores: ``(class or "__all__", Score, n_items)`` corpus-level values.
        details: JSON-serialisable tables (waterfalls, sweeps, curves), keyed by name; deterministic.
        timings: wall-clock numbers (latency, build time), kept out of the byte-identical report.
        failures: messages of problems that concern the whole pipeline (a retriever that failed to load, a malformed
            results file), each reported once as a failure of the stage; ``error`` rows whose reason is one of them
            get no failure of their own.
    """

    item_scores: list[tuple[str, str, str, Score]] = field(default_factory=list)
    corpus_scores: list[tuple[str, Score, int]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


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
