"""The detection and enrichment steps of a pipeline (``language``, ``pii``, ``entities``, ``metadata``,
``relations``, ``dedup``; DESIGN.md "Pipelines and the stage chain"): which options each pipeline's step runs with,
running it on one document, what the report says about it, and the corpus-level step plumbing (dedup).

A per-document detection step (``language``, ``pii``) runs in the worker, once per document x pipeline, when its
stage is audited (the corpus has its labels, or ``--stage``), and only on the documents its auditor applies to; the
auditor then reads its artefact (`ingestaudit.detections`, in `ingestaudit.auditors.base.ItemArtefacts.steps`) and
never loads a detector.

A corpus-level step works per document in the worker and once per pipeline over the corpus (the dedup step:
MinHash signatures per document, LSH clustering per pipeline); its auditor reads the step's output. `with_step`
pairs the auditor with its pipeline's step as one corpus-scope auditor (`StepAudit`), so the runner's corpus-level
path (artefact in the worker, `stow` as artefacts arrive, `audit_artefacts` once per pipeline) runs the step where
it runs the auditor, and the auditor itself never loads a step.

**Options rule.** A step's options are, from lowest to highest precedence: the step's defaults
(`ingestaudit.detections.LANGUAGE_STEP_DEFAULTS`, `ingestaudit.detections.PII_STEP_DEFAULTS`: today's auditor
defaults); the detector options of ``[auditor_options.<stage>]`` (e.g. ``[auditor_options.language]
min_relative_distance``: backward compatible, they apply to every pipeline); the pipeline's own table
(``[pipelines.x] language = { use = "lingua", ... }``, ``pii = { use = "presidio", score_threshold = 0.5 }``, and
``--sweep pii.<option>=...``), option by option; its ``use`` replaces the auditor's ``detector`` (language) or
``scrubber`` (pii).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ingestaudit.auditors.base import ArtefactItem, Auditor, CorpusResult, ItemArtefacts, Scope, artefact_item
from ingestaudit.measurement import State
from ingestaudit.pipeline import Pipeline
from ingestaudit.truth import Truth

STEP_OF_STAGE = {"language": "language", "pii": "pii", "entities": "entities", "metadata": "metadata",
                 "relations": "relations"}
"""Audited stage -> the per-document detection or enrichment step whose artefact its auditor reads."""

CORPUS_STEP_OF_STAGE = {"dedup": "dedup"}
"""Audited stage -> the corpus-level step whose output its auditor reads (one of
`ingestaudit.pipeline.DETECTION_STEPS`)."""

USE_OPTION = {"language": "detector", "pii": "scrubber", "entities": "extractor", "metadata": "extractor",
              "relations": "extractor"}
"""The step option a pipeline's ``use`` sets (the auditor option of the same meaning)."""


def step_options(pipeline: Pipeline, step: str, defaults: dict[str, Any]) -> dict[str, Any]:
    """The options ``pipeline`` runs step ``step`` with: ``defaults`` (the auditor's detector options, see the
    module's rule) overridden by the pipeline's own table; its ``use`` is the ``detector`` option."""
    opts = dict(defaults)
    choice = pipeline.step(step)
    if choice is not None:
        opts.update(choice.kwargs())
        if choice.use:
            opts[USE_OPTION[step]] = choice.use
    return opts


_BUILT: dict[tuple[str, str], Any] = {}  # per process: (step, options) -> LanguageStep | PiiStep | EntitiesStep...


def _built(step: str, options: dict[str, Any]) -> Any:
    """The step object of ``options``, built once per process (a step loads its detector on first use and keeps it).

    Raises:
        ValueError: bad options.
    """
    key = (step, repr(sorted(options.items())))
    if key not in _BUILT:
        if step == "language":
            from ingestaudit.stages.language_step import LanguageStep

            _BUILT[key] = LanguageStep(**options)
        elif step in ("entities", "relations"):
            from ingestaudit.stages.entities_step import EntitiesStep, RelationsStep

            _BUILT[key] = (EntitiesStep if step == "entities" else RelationsStep)(**options)
        elif step == "metadata":
            from ingestaudit.stages.metadata_step import MetadataStep

            _BUILT[key] = MetadataStep(**options)
        else:
            from ingestaudit.stages.pii_step import PiiStep

            _BUILT[key] = PiiStep(**options)
    return _BUILT[key]


def check_step(pipeline: Pipeline, step: str, defaults: dict[str, Any]) -> None:
    """Build ``pipeline``'s step (no model is loaded) so bad options fail before any document is read.

    Raises:
        ValueError: the options are invalid; the message names the pipeline and the step.
    """
    try:
        _built(step, step_options(pipeline, step, defaults))
    except ValueError as exc:
        raise ValueError(f"[pipelines.{pipeline.name}] {step}: {exc}") from None


def run_step(step: str, options: dict[str, Any], parsed: Any, reference: str | None,
             context: tuple[str, ...]) -> Any:
    """Run step ``step`` with ``options`` on one document (``parsed`` None: the pipeline produced nothing, the step
    only records its settings), ``reference`` the document's reference text (the mixed-language analysis reads it)
    and ``context`` the corpus-wide context of its stage (the labelled languages).

    Returns:
        The step's artefact (`ingestaudit.detections.LanguageDetection`, `ingestaudit.detections.PiiDetection`).

    Each artefact is computed once per document: a step asked again for the same document (the parsed document
    last given, by identity), options, reference and context returns the artefact it computed (an enrichment step
    read by its auditor and by the chunks' metadata runs once).

    Raises:
        ValueError: bad options.
    """
    from ingestaudit.step_times import timed

    if parsed is None:
        return _built(step, options).run(parsed, reference, context)
    if _LAST_DOC.get("parsed") is not parsed or _LAST_DOC.get("reference") is not reference:
        _LAST_DOC.clear()
        _LAST_DOC.update(parsed=parsed, reference=reference, artefacts={})  # held: its id is never reused meanwhile
    key = (step, repr(sorted(options.items())), context)
    artefacts = _LAST_DOC["artefacts"]
    if key not in artefacts:
        built = _built(step, options)
        with timed(f"step.{step}"):
            if getattr(built, "cache_identity", None) is None:
                artefacts[key] = built.run(parsed, reference, context)
            else:  # a deterministic step: the step cache may hold its artefact (`ingestaudit.step_cache`)
                from ingestaudit.step_cache import cached

                artefacts[key] = cached(step, lambda: built.cache_identity(parsed, reference, context),
                                        lambda: built.run(parsed, reference, context), built.encode, built.decode)
    return artefacts[key]


_LAST_DOC: dict[str, Any] = {}
"""Per process: the document `run_step` last ran on and its artefacts by (step, options, context)."""


def step_info(step: str, options: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """``(implementation, version, settings)`` of a step for ``report.json["pipelines"][].stages``; nothing loads
    a model. A step whose options are invalid is ``unavailable (...)`` with the options as given."""
    try:
        built = _built(step, options)
    except ValueError as exc:
        return str(options.get(USE_OPTION[step], "")), f"unavailable (ValueError: {exc})", dict(options)
    return built.opts[USE_OPTION[step]], built.version(), built.settings()


def step_artefact(auditor: Auditor, pipeline: Pipeline, parsed: Any, truth: Truth, context: tuple[str, ...]) -> Any:
    """The artefact of one document of the step ``auditor`` reads (`Auditor.reads_step`) with ``pipeline``'s
    options: a per-document step's detection (on the documents the auditor applies to, else None; ``parsed`` None:
    the step records its settings only), or a corpus-level step's per-document part (None without ``parsed``).

    Raises:
        Exception: whatever the step raises on this document (the caller makes it an error of the document).
    """
    step = auditor.reads_step()
    if step in CORPUS_STEP_OF_STAGE.values():
        from ingestaudit.step_times import timed

        if parsed is None:
            return None
        with timed(f"step.{step}"):
            return with_step(auditor, pipeline).corpus_step.document(parsed)
    if not auditor.applies(truth):
        return None
    if step == "metadata":
        return metadata_extraction(pipeline, step_options(pipeline, step, auditor.step_options()), parsed, truth.text)
    return run_step(step, step_options(pipeline, step, auditor.step_options()), parsed, truth.text, context)


def metadata_extraction(pipeline: Pipeline, options: dict[str, Any], parsed: Any, reference: str | None) -> Any:
    """The ``metadata`` step's artefact (`ingestaudit.enrichment.MetadataExtraction`) of one document with
    ``options``, and, when ``pipeline`` names a ``language`` step, its ``language`` field: the language that step
    detects (or reads from a precomputed output) with the pipeline's options (the mixed-language analysis off: only
    the language is needed; every language of the detector is a candidate), source ``language step (<detector>)``.
    The field is left out when the language step abstains or fails; it replaces a ``language`` the metadata step
    gave.

    Raises:
        ValueError: bad options of either step.
    """
    got = run_step("metadata", options, parsed, reference, ())
    if pipeline.step("language") is None or not got.ran or got.state:
        return got
    lang = run_step("language", {**step_options(pipeline, "language", {}), "mixed": False}, parsed, reference, ())
    if lang.predicted is None:
        return got
    return replace(got, fields={**(got.fields or {}), "language": lang.predicted},
                   source={**(got.source or {}), "language": f"language step ({lang.source})"})


def audit_corpus(auditor: Auditor, items: list[ItemArtefacts], pipeline: Pipeline | None = None) -> CorpusResult:
    """A corpus-scope auditor's result on parsed documents (``items``: `ItemArtefacts` with ``parsed``, and
    ``state``/``reason`` when there is none), in this process (tests, notebooks), exactly as in a run: the step the
    auditor reads runs first on each document with ``pipeline``'s options (None: the auditor's), a step that
    raises makes that document an ``error`` item with the message, and the auditor (paired with its corpus-level
    step, `with_step`) audits the artefacts."""
    from ingestaudit.pipeline import make_pipeline

    pipe = pipeline or make_pipeline("audit")
    unit = with_step(auditor, pipe)
    context = tuple(sorted({v for i in items for v in auditor.corpus_values(i.truth)}))
    step = auditor.reads_step()
    out = []
    for i in items:
        msg = ""
        if step:
            try:
                i = replace(i, steps={**i.steps, step: step_artefact(auditor, pipe, i.parsed, i.truth, context)})
            except Exception as exc:  # as in a run: an error of that document
                msg = f"{type(exc).__name__}: {exc}"
        item, _ = artefact_item(unit, i, context)
        if msg:
            item = ArtefactItem(item.doc_id, item.doc_class, item.artefact, State.ERROR, msg)
        elif i.parsed is None and item.state is State.OK:
            item = ArtefactItem(item.doc_id, item.doc_class, item.artefact, State.NO_PREDICTION, i.reason)
        out.append(item)
    return unit.audit_artefacts(out, context)


def audit_document(auditor: Auditor, truth: Truth, parsed: Any, pipeline: Pipeline | None = None) -> list[Any]:
    """The rows of one document (`audit_corpus` over a corpus of one, id ``doc``); convenient in tests."""
    return [s for _, s in audit_corpus(auditor, [ItemArtefacts.of(truth, parsed)], pipeline).doc_scores]


_UNITS: dict[tuple[int, str], "StepAudit"] = {}  # per process: (auditor, step choice) -> its StepAudit


def build_step(stage: str, choice: Any, defaults: dict[str, Any]) -> Any:
    """The step object of audited ``stage`` for a pipeline's ``choice`` (`ingestaudit.pipeline.StageChoice`; None,
    or a ``use`` of ``""`` (only swept): the auditor's detector) over the auditor's ``defaults`` (the step keys of
    ``[auditor_options.STAGE]``).

    Raises:
        ValueError: an unknown implementation or a bad option (the message names the step).
    """
    from ingestaudit.dedup_settings import DEFAULT_USE
    from ingestaudit.stages.dedup_step import DedupStep

    use = choice.use if choice is not None and choice.use else DEFAULT_USE
    return DedupStep.of(use, choice.kwargs() if choice is not None else {}, defaults)


def with_step(auditor: Any, pipeline: Pipeline) -> Any:
    """``auditor`` paired with ``pipeline``'s corpus-level step of its stage (`StepAudit`, built once per process),
    or ``auditor`` itself when its stage reads no corpus-level step (or it is a `StepAudit` already).

    Raises:
        ValueError: the pipeline's step cannot be built (as `build_step`).
    """
    step_name = CORPUS_STEP_OF_STAGE.get(getattr(auditor, "stage", ""))
    if step_name is None or getattr(auditor, "corpus_step", None) is not None:  # no step, or paired already
        return auditor
    choice = pipeline.step(step_name)  # None: the pipeline does not name it (the auditor's options alone)
    key = (id(auditor), repr(choice))
    unit = _UNITS.get(key)
    if unit is None or unit.auditor is not auditor:
        unit = _UNITS[key] = StepAudit(auditor, build_step(auditor.stage, choice, auditor.step_options()))
    return unit


class StepAudit(Auditor):
    """A corpus-scope auditor and the corpus-level step it reads, as one corpus-scope auditor: the artefact of a
    document is the pair ``(auditor's artefact, step's per-document part)`` (``item.steps[step]``, computed by
    `step_artefact`); `audit_artefacts` runs the step once over the documents with output (``corpus_step.run``)
    and hands its output to ``auditor.audit_step``.

    Args:
        auditor: the auditor (``stage``, ``metrics``, ``reads``, ``artefact``, ``audit_step``).
        step: the step (``document(parsed)``, ``stow(doc, folder)``, ``run([(doc_id, doc)])`` returning an output
            with ``close()``).
    """

    scope = Scope.CORPUS

    def __init__(self, auditor: Any, step: Any) -> None:
        self.auditor = auditor
        self.corpus_step = step
        self.stage = auditor.stage
        self.metrics = auditor.metrics
        self.reads = auditor.reads

    def applies(self, truth: Truth) -> bool:
        """As the auditor."""
        return self.auditor.applies(truth)

    def corpus_values(self, truth: Truth) -> tuple[str, ...]:
        """As the auditor."""
        return self.auditor.corpus_values(truth)

    def options(self) -> dict[str, Any]:
        """The auditor's options."""
        return self.auditor.options()

    def step_options(self) -> dict[str, Any]:
        """The auditor's step options."""
        return self.auditor.step_options()

    def artefact(self, item: ItemArtefacts, context: tuple[str, ...]) -> tuple[Any, Any]:
        """``(auditor artefact, the step's per-document part)``; the step's part is None where it did not run."""
        return self.auditor.artefact(item, context), item.steps.get(self.reads_step())

    def stow(self, artefact: tuple[Any, Any], folder: Any) -> tuple[Any, Any]:
        """The step moves its part's bulk to ``folder`` (`ingestaudit.stages.dedup_step.DedupStep.stow`)."""
        own, doc = artefact
        return (own, None if doc is None else self.corpus_step.stow(doc, folder))

    def audit_artefacts(self, items: list[ArtefactItem], context: tuple[str, ...] = ()) -> CorpusResult:
        """Run the step over the items with output (state ``ok``), then the auditor over every item and the step's
        output."""
        output = self.corpus_step.run([(i.doc_id, i.artefact[1]) for i in items if i.state is State.OK])
        try:
            return self.auditor.audit_step([replace(i, artefact=i.artefact[0]) for i in items], output)
        finally:
            output.close()
