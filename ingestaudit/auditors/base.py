"""The auditor plug point (DESIGN.md: auditors only read).

One interface: an `Auditor` declares its ``scope`` (`Scope`: one document, the corpus of one pipeline, or the
pipeline's chunks, vectors and questions) and the artefacts it ``reads`` (``"parsed"``, ``"chain"``, or the name
of a pipeline step such as ``"language"``, ``"pii"``, ``"dedup"``); the runner hands it those artefacts, computed
once per (pipeline, document) by `ingestaudit.document_steps`, and dispatches on these two declarations only.

- ``Scope.DOCUMENT``: `Auditor.audit` on one `ItemArtefacts` (in the worker).
- ``Scope.CORPUS``: `Auditor.artefact` on one `ItemArtefacts` (in the worker: a compact, picklable summary), then
  `Auditor.audit_artefacts` over every document's `ArtefactItem` (main process, once per pipeline).
- ``Scope.PIPELINE``: `Auditor.audit_pipeline` on a `PipelineContext` (main process, once per pipeline).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, ClassVar

from ingestaudit.measurement import Score, State
from ingestaudit.metrics.specs import MetricSpec
from ingestaudit.model import ParsedDocument
from ingestaudit.truth import Truth


class Scope(Enum):
    """What one call of an auditor sees: one document (``DOCUMENT``), every document of one pipeline through
    compact per-document artefacts (``CORPUS``), or one pipeline's chunks, vectors, index and questions
    (``PIPELINE``)."""

    DOCUMENT = "document"
    CORPUS = "corpus"
    PIPELINE = "pipeline"


PARSED = "parsed"
"""`Auditor.reads` entry: the parser's `ParsedDocument` (`ItemArtefacts.parsed`)."""
CHAIN = "chain"
"""`Auditor.reads` entry: the clean -> chunk -> embed output (`ItemArtefacts.chain`, an
`ingestaudit.chain.ChainOutput`)."""
CLEAN = "clean"
"""`Auditor.reads` entry: the pipeline's clean step alone (``ItemArtefacts.steps["clean"]``, an
`ingestaudit.chain.Cleaning`: the cleaner's result on the parsed document and on a labelled text the auditor names
with ``labelled_text``); the step runs without chunking or embedding when no auditor reads the chain."""


@dataclass(frozen=True)
class ItemArtefacts:
    """Everything the steps of one pipeline produced for one document, and its truth: what an auditor reads.

    Attributes:
        doc_id, doc_class: the document and its stratum.
        truth: its labels (`ingestaudit.truth.Truth`).
        parsed: the parser's output; None when the pipeline produced nothing for it (``state`` and ``reason``
            say why: ``no_prediction``, ``error``, ``skipped``).
        chain: the clean -> chunk -> embed output (`ingestaudit.chain.ChainOutput`), None when the chain did not
            run.
        evidence: the questions' evidence items in this document (`ingestaudit.chain.EvidenceRef`).
        steps: step name -> that step's artefact for this document (``"language"``: an
            `ingestaudit.detections.LanguageDetection`; ``"pii"``: a `PiiDetection`; ``"dedup"``: the dedup
            step's per-document part); a step absent from it did not run for this document.
        state, reason: ``ok``, or why there is no ``parsed``.
    """

    doc_id: str
    doc_class: str
    truth: Truth
    parsed: ParsedDocument | None = None
    chain: Any = None
    evidence: tuple = ()
    steps: Mapping[str, Any] = field(default_factory=dict)
    state: State = State.OK
    reason: str = ""

    @classmethod
    def of(cls, truth: Truth, parsed: ParsedDocument | None = None, *, chain: Any = None, evidence: tuple = (),
           steps: Mapping[str, Any] | None = None, doc_id: str = "doc", doc_class: str = "doc",
           state: State = State.OK, reason: str = "") -> ItemArtefacts:
        """An item from hand-made artefacts (tests, notebooks); ``doc_id`` and ``doc_class`` default to ``"doc"``."""
        return cls(doc_id, doc_class, truth, parsed, chain, tuple(evidence), dict(steps or {}), state, reason)

    def without_output(self) -> ItemArtefacts:
        """This item with no stage output (no parsed document, chain or step artefact): what an auditor takes from
        the truth alone."""
        return replace(self, parsed=None, chain=None, steps={})


class Auditor:
    """Measures one stage of a pipeline against the truth, from the artefacts the pipeline's steps produced; it
    loads no parser, cleaner, chunker, embedder, index or detector.

    Subclasses set ``stage``, ``metrics`` (their `MetricSpec`s, registered on import), ``scope`` and ``reads``, and
    implement the methods of their scope (see the module docstring); ``applies`` says which documents the stage
    concerns (default: every one). Options that change numbers come in through ``__init__`` and are returned by
    `options` so the report prints them next to the numbers.
    """

    stage: ClassVar[str]
    metrics: ClassVar[tuple[MetricSpec, ...]]
    scope: ClassVar[Scope] = Scope.DOCUMENT
    reads: ClassVar[frozenset[str]] = frozenset({PARSED})

    def options(self) -> dict[str, Any]:
        """Every option that changes this auditor's numbers, JSON-serialisable."""
        return {}

    def applies(self, truth: Truth) -> bool:
        """True when ``truth`` holds what this auditor measures against (default: True, every document)."""
        return True

    def reads_step(self) -> str:
        """The pipeline step this auditor reads (the entry of ``reads`` other than ``parsed`` and ``chain``), or
        ``""``."""
        return next((r for r in sorted(self.reads) if r not in (PARSED, CHAIN)), "")

    # -- Scope.DOCUMENT --------------------------------------------------------------------------------------------

    def audit(self, item: ItemArtefacts) -> list[Score]:
        """Scores for one document (``Scope.DOCUMENT``). Must not raise for bad stage output: return rows in a
        non-``ok`` state instead. The runner turns any exception that escapes into ``error`` rows for this
        stage."""
        raise NotImplementedError(f"the {self.stage} auditor has scope {self.scope.value}, not document")

    # -- Scope.CORPUS ----------------------------------------------------------------------------------------------

    def step_options(self) -> dict[str, Any]:
        """The options of this auditor that configure the step it reads (the defaults of every pipeline's step,
        under a pipeline's own table); ``{}`` by default."""
        return {}

    def corpus_values(self, truth: Truth) -> tuple[str, ...]:
        """Strings one document's truth adds to the corpus-wide context (the labelled languages, the gold PII
        types; the context is their sorted union, computed in the main process before any task); default: none."""
        return ()

    def artefact(self, item: ItemArtefacts, context: tuple[str, ...]) -> Any:
        """The compact, picklable artefact of one document (``Scope.CORPUS``), from what the auditor ``reads`` of
        ``item`` (absent: the pipeline produced nothing for it, and the artefact holds what the audit needs from
        the truth). Runs in the worker; may raise for a document the stage cannot handle (the runner turns that
        into an ``error`` item of this stage)."""
        raise NotImplementedError(f"the {self.stage} auditor has scope {self.scope.value}, not corpus")

    def stow(self, artefact: Any, folder: Any) -> Any:
        """Called in the main process as each artefact arrives: may move its bulky parts to files in ``folder``
        (one private folder per stage and pipeline, removed with the run) and returns what stays in memory
        (default: the artefact itself)."""
        return artefact

    def audit_artefacts(self, items: list[ArtefactItem], context: tuple[str, ...]) -> CorpusResult:
        """Audit one pipeline's output over the whole corpus from its documents' artefacts, corpus order
        (``Scope.CORPUS``). Must not raise for bad stage output."""
        raise NotImplementedError(f"the {self.stage} auditor has scope {self.scope.value}, not corpus")

    # -- Scope.PIPELINE --------------------------------------------------------------------------------------------

    def audit_pipeline(self, ctx: PipelineContext) -> PipelineResult:
        """Audit one pipeline (``Scope.PIPELINE``). Must not raise for bad stage output."""
        raise NotImplementedError(f"the {self.stage} auditor has scope {self.scope.value}, not pipeline")

    def needs_chunk_vectors(self, pipeline: Any) -> bool:
        """Whether this pipeline-level auditor reads the chunk vectors the pipeline's embedder computes (False: a
        pipeline whose only vector consumer reads the user's own vectors is not embedded); default True."""
        return True


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
    computed (`Auditor.artefact`: signatures, a predicted label, counts), never the parsed document.

    ``state`` is ``ok`` when the pipeline produced output for the document and its artefact was computed from it;
    otherwise (``no_prediction``, ``error``, ``skipped``) ``reason`` says why, and ``artefact`` holds only what the
    auditor takes from the document's truth (`Auditor.artefact` of `ItemArtefacts.without_output`).
    """

    doc_id: str
    doc_class: str
    artefact: Any
    state: State = State.OK
    reason: str = ""


def artefact_item(auditor: Auditor, item: ItemArtefacts, context: tuple[str, ...]) -> tuple[ArtefactItem, str]:
    """The `ArtefactItem` of one document for a ``Scope.CORPUS`` auditor, and the message when computing its artefact
    from the item's output raised (the item is then an ``error`` with the truth-only artefact, `Auditor.artefact` of
    `ItemArtefacts.without_output`; ``""`` otherwise). The output is the artefact of the step the auditor reads
    (`Auditor.reads_step`), else the parsed document; without it the artefact is the truth-only one and the state that
    of ``item`` (``no_prediction`` when ``item`` says ``ok``)."""
    step = auditor.reads_step()
    given = item.steps.get(step) if step else item.parsed
    if given is not None:
        try:
            return (ArtefactItem(item.doc_id, item.doc_class, auditor.artefact(item, context), item.state,
                                 item.reason), "")
        except Exception as exc:  # one document the stage cannot handle: an error of that document
            msg = f"{type(exc).__name__}: {exc}"
            return (ArtefactItem(item.doc_id, item.doc_class, auditor.artefact(item.without_output(), context),
                                 State.ERROR, msg), msg)
    return ArtefactItem(item.doc_id, item.doc_class, auditor.artefact(item.without_output(), context),
                        item.state if item.state is not State.OK else State.NO_PREDICTION, item.reason), ""


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
