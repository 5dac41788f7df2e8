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
"""Audited stage -> the pipeline step whose output its auditor reads (a key of `ingestaudit.pipeline.STAGES`)."""

_UNITS: dict[tuple[int, str], "StepAudit"] = {}  # per process: (auditor, step choice) -> its StepAudit


def build_step(stage: str, choice: Any, defaults: dict[str, Any]) -> Any:
    """The step object of audited ``stage`` for a pipeline's ``choice`` (`ingestaudit.pipeline.StageChoice`) over
    the auditor's ``defaults`` (the step keys of ``[auditor_options.STAGE]``).

    Raises:
        ValueError: an unknown implementation or a bad option (the message names the step).
    """
    from ingestaudit.stages.dedup_step import DedupStep

    return DedupStep.of(choice.use, choice.kwargs(), defaults)


def with_step(auditor: Any, pipeline: Pipeline) -> Any:
    """``auditor`` paired with ``pipeline``'s step of its stage (`StepAudit`, built once per process), or
    ``auditor`` itself when its stage reads no step.

    Raises:
        ValueError: the pipeline's step cannot be built (as `build_step`).
    """
    step_name = STEP_OF_STAGE.get(getattr(auditor, "stage", ""))
    if step_name is None:
        return auditor
    choice = pipeline.stage(step_name)
    key = (id(auditor), repr(choice))
    unit = _UNITS.get(key)
    if unit is None or unit.auditor is not auditor:
        unit = _UNITS[key] = StepAudit(auditor, build_step(auditor.stage, choice, auditor.step_defaults))
    return unit


class StepAudit(CorpusAuditor):
    """A corpus-level auditor and the step it reads, as one `CorpusAuditor`: the artefact of a document is the pair
    ``(auditor's artefact, step's per-document output)``; `audit_artefacts` runs the step once over the documents
    with output (``step.run``) and hands its output to ``auditor.audit_step``.

    Args:
        auditor: the auditor (``stage``, ``metrics``, ``artefact``, ``audit_step``).
        step: the step (``document(parsed)``, ``stow(doc, folder)``, ``run([(doc_id, doc)])`` returning an output
            with ``close()``).
    """

    def __init__(self, auditor: Any, step: Any) -> None:
        self.auditor = auditor
        self.step = step
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
                None if parsed is None else self.step.document(parsed))

    def stow(self, artefact: tuple[Any, Any], folder: Any) -> tuple[Any, Any]:
        """The step moves its part's bulk to ``folder`` (`ingestaudit.stages.dedup_step.DedupStep.stow`)."""
        own, doc = artefact
        return (own, None if doc is None else self.step.stow(doc, folder))

    def audit_artefacts(self, items: list[ArtefactItem], context: tuple[str, ...] = ()) -> CorpusResult:
        """Run the step over the items with output (state ``ok``), then the auditor over every item and the step's
        output."""
        output = self.step.run([(i.doc_id, i.artefact[1]) for i in items if i.state is State.OK])
        try:
            return self.auditor.audit_step([replace(i, artefact=i.artefact[0]) for i in items], output)
        finally:
            output.close()
