"""Corpus-level steps and the auditors that read them, as the runner sees them (DESIGN.md: auditors only read).

A corpus-level step works per document in the worker and once per pipeline over the corpus (the dedup step:
MinHash signatures per document, LSH clustering per pipeline); its auditor reads the step's output. `with_step`
pairs a `CorpusAuditor` with its pipeline's step as one `CorpusAuditor` (`StepAudit`), so the runner's corpus-level
path (artefact in the worker, `stow` as artefacts arrive, `audit_artefacts` once per pipeline) runs the step where
it runs the auditor, and the auditor itself never loads a step. An auditor without a step is returned as it is.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ingestaudit.auditors.base import ArtefactItem, CorpusAuditor, CorpusResult
from ingestaudit.measurement import State
from ingestaudit.model import ParsedDocument
from ingestaudit.pipeline import Pipeline
from ingestaudit.truth import Truth

STEP_OF_STAGE = {"dedup": "dedup"}
"""Audited stage -> the corpus-level step whose output its auditor reads (one of
`ingestaudit.pipeline.DETECTION_STEPS`; the per-document ones are `ingestaudit.steps`')."""

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
    """``auditor`` paired with ``pipeline``'s step of its stage (`StepAudit`, built once per process), or
    ``auditor`` itself when its stage reads no step.

    Raises:
        ValueError: the pipeline's step cannot be built (as `build_step`).
    """
    step_name = STEP_OF_STAGE.get(getattr(auditor, "stage", ""))
    if step_name is None:
        return auditor
    choice = pipeline.step(step_name)  # None: the pipeline does not name it (the auditor's options alone)
    key = (id(auditor), repr(choice))
    unit = _UNITS.get(key)
    if unit is None or unit.auditor is not auditor:
        unit = _UNITS[key] = StepAudit(auditor, build_step(auditor.stage, choice, auditor.step_options()))
    return unit


class StepAudit(CorpusAuditor):
    """A corpus-level auditor and the step it reads, as one `CorpusAuditor`: the artefact of a document is the pair
    ``(auditor's artefact, step's per-document output)``; `audit_artefacts` runs the step once over the documents
    with output (``corpus_step.run``) and hands its output to ``auditor.audit_step``.

    Args:
        auditor: the auditor (``stage``, ``metrics``, ``artefact``, ``audit_step``).
        step: the step (``document(parsed)``, ``stow(doc, folder)``, ``run([(doc_id, doc)])`` returning an output
            with ``close()``).
    """

    def __init__(self, auditor: Any, step: Any) -> None:
        self.auditor = auditor
        self.corpus_step = step
        self.stage = auditor.stage
        self.metrics = auditor.metrics

    def applies(self, truth: Truth) -> bool:
        """As the auditor."""
        return self.auditor.applies(truth)

    def corpus_values(self, truth: Truth) -> tuple[str, ...]:
        """As the auditor."""
        return self.auditor.corpus_values(truth)

    def options(self) -> dict[str, Any]:
        """The auditor's options."""
        return self.auditor.options()

    def artefact(self, truth: Truth, parsed: ParsedDocument | None, context: tuple[str, ...]) -> tuple[Any, Any]:
        """``(auditor artefact, step document)``; the step's part is None without ``parsed``."""
        return (self.auditor.artefact(truth, parsed, context),
                None if parsed is None else self.corpus_step.document(parsed))

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
