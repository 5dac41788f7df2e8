"""The versioned JSON contract of ``report.json`` (DESIGN.md, "Report contract").

Fixed keys are model fields; user-supplied names (parsers, classes, labels) only ever appear as values, never as
keys, except in the ``states`` count map whose keys are the fixed state names.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

SCHEMA_VERSION = "1.0"
ALL_CLASSES = "__all__"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolInfo(_Model):
    name: str
    version: str


class CorpusInfo(_Model):
    path: str
    fingerprint: str
    documents: dict[str, int]  # class -> document count


class ParserInfo(_Model):
    name: str
    kind: str  # "registered" or "precomputed"
    version: str
    settings: dict[str, Any]


class MeasurementRow(_Model):
    doc_id: str
    doc_class: str
    parser: str
    stage: str
    metric: str
    label: str
    value: float | None
    numerator: float | None
    denominator: float | None
    state: str
    detail: dict[str, Any]


class SummaryRow(_Model):
    """One aggregate. ``level`` is ``"document"`` for aggregates of per-document rows, ``"corpus"`` for values that
    exist only over a set of documents (pairwise dedup rates, per-language F1), where ``micro`` holds the value and
    ``macro`` is None."""

    parser: str
    doc_class: str
    stage: str
    metric: str
    label: str
    n_docs: int  # documents aggregated (state ok)
    micro: float | None  # sum(numerator) / sum(denominator) over ok rows
    macro: float | None  # mean of per-document values over ok rows
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    states: dict[str, int]
    level: str = "document"
    numerator: float | None = None  # Σ numerator behind micro (None when rows carry no counts)
    denominator: float | None = None


class StageDetail(_Model):
    """A table too rich for rows (a confusion matrix, a parameter sweep) from one stage for one parser."""

    parser: str
    stage: str
    name: str
    data: Any


class PairedTest(_Model):
    """A paired test between two parsers on the documents both measured (``diff = parser_b - parser_a``)."""

    doc_class: str
    metric: str
    label: str
    parser_a: str
    parser_b: str
    n_pairs: int
    mean_diff: float
    median_diff: float
    statistic: float
    p_value: float
    significant: bool
    method: str


class Failure(_Model):
    doc_id: str
    parser: str
    stage: str
    message: str


class Report(_Model):
    """The whole report. ``measurements`` and ``summary`` are sorted, so the same run gives the same bytes."""

    schema_version: str = SCHEMA_VERSION
    tool: ToolInfo
    corpus: CorpusInfo
    config: dict[str, Any]
    environment: dict[str, Any]
    parsers: list[ParserInfo]
    measurements: list[MeasurementRow]
    summary: list[SummaryRow]
    failures: list[Failure]
    details: list[StageDetail] = []
    paired_tests: list[PairedTest] = []

    def to_json(self) -> str:
        """Serialise as indented JSON; raises ValueError if a NaN or infinity slipped in (``allow_nan=False``)."""
        return json.dumps(self.model_dump(mode="json"), indent=1, ensure_ascii=False, allow_nan=False) + "\n"


class ReportError(Exception):
    """A report file could not be read or does not follow the contract; the message names the file and field."""


def read_report(path: Path) -> Report:
    """Load and validate ``report.json``.

    Raises:
        ReportError: unreadable, not JSON, another schema major version, or fields that break the contract.
    """
    def no_constants(name: str) -> float:
        raise ValueError(f"{name} is not a number a report may hold")

    try:
        raw = json.loads(path.read_text(encoding="utf-8"), parse_constant=no_constants)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ReportError(f"{path}: not a readable JSON report ({exc})") from None
    if not isinstance(raw, dict):
        raise ReportError(f"{path}: not a JSON object")
    version = str(raw.get("schema_version", ""))
    if version.split(".")[0] != SCHEMA_VERSION.split(".")[0]:
        raise ReportError(f"{path}: schema_version {version!r}; this ingestaudit reads {SCHEMA_VERSION}")
    try:
        return Report.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ReportError(f"{path}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
