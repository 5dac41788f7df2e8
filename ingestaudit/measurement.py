"""Measurement states and rows: the unit of the report (DESIGN.md, "Four states, never a fake zero")."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any


class State(str, Enum):
    """State of one measurement. Aggregates count only ``OK`` rows and always show the counts of all states."""

    OK = "ok"
    NO_REFERENCE = "no_reference"  # no label to measure against
    NO_PREDICTION = "no_prediction"  # the stage produced nothing
    ERROR = "error"  # the stage or the metric failed; the message is kept
    SKIPPED = "skipped"  # over a size or time budget, or a format the parser does not handle


@dataclass(frozen=True)
class Score:
    """One metric value computed by an auditor for one document (the runner adds document and parser).

    Attributes:
        metric: full metric name ``stage.metric``, lower case (e.g. ``extraction.cer``); must be registered in
            `ingestaudit.metrics.specs`.
        value: the per-document value, or None unless ``state`` is ``OK``. Never NaN or infinite.
        numerator, denominator: the raw counts behind ``value`` (``value == numerator / denominator`` for ratio
            metrics), used for micro aggregation; None for metrics that are not ratios.
        state: see `State`.
        label: sub-key for per-label metrics (a PII entity type, a language, a check type); ``""`` otherwise.
        detail: JSON-serialisable diagnostics (missing lines, failing checks, messages).

    Raises:
        ValueError: on a non-finite value or count, or an ``OK`` score without a value.
    """

    metric: str
    value: float | None
    numerator: float | None = None
    denominator: float | None = None
    state: State = State.OK
    label: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("value", "numerator", "denominator"):
            v = getattr(self, name)
            if v is not None and not math.isfinite(v):
                raise ValueError(f"{self.metric}: {name} is {v!r}; non-finite numbers never enter a report")
        if self.state is State.OK and self.value is None:
            raise ValueError(f"{self.metric}: state ok needs a value")
        if self.state is not State.OK and self.value is not None:
            raise ValueError(f"{self.metric}: state {self.state.value} must not carry a value")

    @classmethod
    def ratio(cls, metric: str, numerator: float, denominator: float, *, label: str = "",
              detail: dict[str, Any] | None = None) -> "Score":
        """An ``OK`` ratio ``numerator / denominator``; a zero denominator gives ``NO_REFERENCE`` (never 0 or inf)."""
        if denominator == 0:
            return cls(metric, None, numerator, denominator, State.NO_REFERENCE, label,
                       {**(detail or {}), "reason": "denominator is 0"})
        return cls(metric, numerator / denominator, numerator, denominator, State.OK, label, detail or {})

    @classmethod
    def missing(cls, metric: str, state: State, reason: str, *, label: str = "",
                detail: Mapping[str, Any] | None = None) -> "Score":
        """A row without a value, in ``state`` (not ``OK``), with ``reason`` kept in the detail beside ``detail``."""
        return cls(metric, None, None, None, state, label, {"reason": reason, **(detail or {})})


@dataclass(frozen=True)
class Measurement:
    """One row of ``report.json["measurements"]``: a `Score` placed at item x pipeline (an item is a document or,
    with ``item_kind="question"``, a labelled question). ``parser``: the parser the pipeline routes the document to
    (`ingestaudit.parsers.routing.ParserSpec.route_label`), ``""`` for a question or a document no route reads."""

    item: str
    doc_class: str
    pipeline: str
    stage: str
    metric: str
    label: str
    value: float | None
    numerator: float | None
    denominator: float | None
    state: State
    detail: dict[str, Any]
    item_kind: str = "document"
    parser: str = ""

    @classmethod
    def of(cls, score: Score, *, item: str, doc_class: str, pipeline: str,
           item_kind: str = "document", parser: str = "") -> "Measurement":
        """Place ``score`` at ``item`` (class ``doc_class``) for ``pipeline`` (read by ``parser``); the stage is the
        metric's prefix."""
        return cls(item, doc_class, pipeline, score.metric.split(".", 1)[0], score.metric, score.label,
                   score.value, score.numerator, score.denominator, score.state, score.detail, item_kind, parser)

    def with_state(self, state: State, reason: str) -> "Measurement":
        """A copy without value, in ``state``, with ``reason`` in the detail."""
        return replace(self, value=None, state=state, detail={**self.detail, "reason": reason})
