"""The detection and enrichment steps of a pipeline (``language``, ``pii``, ``entities``, ``metadata``,
``relations``; DESIGN.md "Pipelines and the stage chain"): which options each
pipeline's step runs with, running it on one document, and what the report says about it.

A detection step runs in the worker, once per document x pipeline, when its stage is audited (the corpus has its
labels, or ``--stage``), and only on the documents its auditor applies to; the auditor then reads its artefact
(`ingestaudit.detections`) and never loads a detector.

**Options rule.** A step's options are, from lowest to highest precedence: the step's defaults
(`ingestaudit.detections.LANGUAGE_STEP_DEFAULTS`, `ingestaudit.detections.PII_STEP_DEFAULTS`: today's auditor
defaults); the detector options of ``[auditor_options.<stage>]`` (e.g. ``[auditor_options.language]
min_relative_distance``: backward compatible, they apply to every pipeline); the pipeline's own table
(``[pipelines.x] language = { use = "lingua", ... }``, ``pii = { use = "presidio", score_threshold = 0.5 }``, and
``--sweep pii.<option>=...``), option by option; its ``use`` replaces the auditor's ``detector`` (language) or
``scrubber`` (pii).
"""

from __future__ import annotations

from typing import Any

from ingestaudit.pipeline import Pipeline

STEP_OF_STAGE = {"language": "language", "pii": "pii", "entities": "entities", "metadata": "metadata",
                 "relations": "relations"}
"""Audited stage -> the detection step whose artefact its auditor reads."""

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

    Raises:
        ValueError: bad options.
    """
    return _built(step, options).run(parsed, reference, context)


def step_info(step: str, options: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """``(implementation, version, settings)`` of a step for ``report.json["pipelines"][].stages``; nothing loads
    a model. A step whose options are invalid is ``unavailable (...)`` with the options as given."""
    try:
        built = _built(step, options)
    except ValueError as exc:
        return str(options.get(USE_OPTION[step], "")), f"unavailable (ValueError: {exc})", dict(options)
    return built.opts[USE_OPTION[step]], built.version(), built.settings()


def audit_corpus(auditor: Any, items: list[Any], pipeline: Pipeline | None = None) -> Any:
    """A corpus-level auditor's result on parsed documents (`ingestaudit.auditors.base.CorpusItem`), in this process
    (tests, notebooks): for an auditor that reads a step (`STEP_OF_STAGE`), the step runs first on each document with
    ``pipeline``'s options (None: the auditor's), exactly as in a run; other auditors take their ``audit_corpus``."""
    from ingestaudit.auditors.base import ArtefactItem, artefact_item
    from ingestaudit.measurement import State
    from ingestaudit.pipeline import make_pipeline

    step = STEP_OF_STAGE.get(auditor.stage)
    if step is None:
        return auditor.audit_corpus(items)
    pipe = pipeline or make_pipeline("audit")
    opts = step_options(pipe, step, auditor.step_options())
    context = tuple(sorted({v for i in items for v in auditor.corpus_values(i.truth)}))
    out = []
    for i in items:
        detection = (run_step(step, opts, i.parsed, i.truth.text, context) if auditor.applies(i.truth) else None)
        item, _ = artefact_item(auditor, i.doc_id, i.doc_class, i.truth, detection, i.state, i.reason, context)
        if i.parsed is None and item.state is State.OK:
            item = ArtefactItem(item.doc_id, item.doc_class, item.artefact, State.NO_PREDICTION, i.reason)
        out.append(item)
    return auditor.audit_artefacts(out, context)


def audit_document(auditor: Any, truth: Any, parsed: Any, pipeline: Pipeline | None = None) -> list[Any]:
    """The rows of one document (`audit_corpus` over a corpus of one, id ``doc``); convenient in tests."""
    from ingestaudit.auditors.base import CorpusItem

    return [s for _, s in audit_corpus(auditor, [CorpusItem("doc", "doc", truth, parsed)], pipeline).doc_scores]
