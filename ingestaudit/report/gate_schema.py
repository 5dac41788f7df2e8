"""The gate result's data contract (issue 26): the ``gate`` object of report.json and ``gate.json``; built and
written by `ingestaudit.report.gate_result`. Depends on pydantic only, so that the report's schema can hold it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class GateRow(_Model):
    """One gated row in the result: what, base -> head on the paired items, the difference and its interval, the
    budget, the test; ``kind`` says why it is listed."""

    pipeline: str
    base_pipeline: str
    doc_class: str
    metric: str
    label: str
    kind: Literal["significant", "budget_alone", "budget_warning", "improved", "not_comparable"]
    base: float | None = None
    head: float | None = None
    diff: float | None = None
    diff_low: float | None = None
    diff_high: float | None = None
    budget: str = ""
    p_holm: float | None = None
    n: int = 0
    reason: str = ""
    message: str = ""


class ConfigChange(_Model):
    """A configuration difference: a dotted ``path`` (``chunker.size``), its values, the head's pipeline (``""``
    for a run setting)."""

    path: str
    base: Any = None
    head: Any = None
    pipeline: str = ""


class BandRow(_Model):
    """A key value against its control band (`ingestaudit.report.bands`); ``outside`` is ``worse``, ``better``
    or ``""``; ``fails`` when it fails the gate (``[gate] bands = "fail"`` and outside on the worse side)."""

    pipeline: str
    doc_class: str
    metric: str
    label: str
    head: float
    center: float
    mean_moving_range: float
    low: float
    high: float
    runs: int
    outside: str = ""
    fails: bool = False


class GateResult(_Model):
    """The gate's result (see the module docstring)."""

    verdict: Literal["pass", "fail", "first_run"]
    base: str
    head: str
    message: list[str] = []
    regressions: list[GateRow] = []
    improvements: list[GateRow] = []
    not_comparable: list[GateRow] = []
    config_changes: list[ConfigChange] = []
    corpus: dict[str, Any] = {}
    budgets: list[GateRow] = []
    bands: list[BandRow] = []
    bands_note: str = ""  # why no band was checked (the history could not be read), else empty
    hard_regressions: list[dict[str, Any]] = []
    missing_in_head: list[dict[str, Any]] = []
    not_run_in_head: list[dict[str, Any]] = []  # baseline rows of measurements the head did not run (not gated)
    min_items: int = 0

    def to_json(self) -> str:
        """Indented JSON, as gate.json is written."""
        import json

        return json.dumps(self.model_dump(mode="json"), indent=1, ensure_ascii=False, allow_nan=False) + "\n"
