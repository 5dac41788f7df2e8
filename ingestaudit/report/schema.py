"""The versioned JSON contract of ``report.json`` (DESIGN.md, "Report contract").

Fixed keys are model fields; user-supplied names (parsers, classes, labels) only ever appear as values, never as
keys, except in the ``states`` count map whose keys are the fixed state names.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from typing import Annotated, Literal

from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, NonNegativeInt, PrivateAttr, ValidationError,
                      field_validator, model_validator)

from ingestaudit.errors import IngestAuditError
from ingestaudit.measurement import State
from ingestaudit.report.gate_schema import GateResult

SCHEMA_VERSION = "2.2"  # 2.2: pipelines[].routes and the store's parser column (parser routing)
READABLE_MAJORS = ("1", "2")  # version-1 reports are read and migrated (parser -> pipeline, doc_id -> item)
ALL_CLASSES = "__all__"
MAX_FAILURES_LISTED = 1000
"""``report.json["failures"]`` lists at most this many failures (canonical order; ``failures_total`` counts them
all); ``failure_groups`` groups every one by cause, and each item's rows stay in the measurement store."""
MAX_GROUP_EXAMPLES = 5
"""Failures kept as examples of each failure group."""
ITEM_HASH_DIGITS = 16
"""Hex digits kept of each item's content SHA-256 in ``corpus.item_hashes`` (64 bits: an edited document collides
with its old self with probability 2^-64; 50,000 items take about 2 MB of report.json instead of 4.4 MB)."""


STATES = tuple(s.value for s in State)
"""The five states a row (and a summary's state counts) may name: ok, no_reference, no_prediction, error, skipped."""


def _known_state(value: str) -> str:
    if value not in STATES:
        raise ValueError(f"state {value!r} is not one of {', '.join(STATES)}")
    return value


StateName = Annotated[str, AfterValidator(_known_state)]
Count = Annotated[float, Field(ge=0)]
"""A denominator (characters, words, items...): a finite number >= 0."""


class _Model(BaseModel):
    # allow_inf_nan=False: a report holds no NaN or infinity (``1e999`` in report.json reads as infinity)
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class ToolInfo(_Model):
    name: str
    version: str


class CorpusInfo(_Model):
    path: str
    fingerprint: str
    documents: dict[str, NonNegativeInt]  # class -> document count
    questions: NonNegativeInt = 0  # labelled questions read from questions.jsonl
    item_hashes: dict[str, str] = {}  # item id -> SHA-256 of its content (document + truth files, or question): the
    # first `ITEM_HASH_DIGITS` hex digits since schema 2.1, all 64 before (readers compare the common prefix)


class StageInfo(_Model):
    """One stage of a pipeline: its implementation, the library version and every setting that changes output."""

    implementation: str
    version: str
    settings: dict[str, Any]


class ParserRoute(_Model):
    """One route of a pipeline whose parser is routed by file extension: the extension (lower case, no dot) or
    ``"default"``, and the parser's name, version and settings."""

    extension: str
    implementation: str
    version: str
    settings: dict[str, Any]


class PipelineInfo(_Model):
    """A pipeline of the run: ``kind`` is ``"configured"`` (built from stage implementations) or ``"precomputed"``
    (a folder of ``--outputs``); ``stages`` maps stage name (parser, cleaner, chunker, embedder, index) to its
    `StageInfo`. A parser routed by extension is ``stages["parser"].implementation == "routed"`` with its table in
    ``routes`` (schema 2.2; empty for one parser)."""

    name: str
    kind: str
    stages: dict[str, StageInfo]
    routes: list[ParserRoute] = []
    documents_with_warnings: int = 0  # documents whose parse raised warnings (`Report.parse_warnings` lists them)


class MeasurementRow(_Model):
    """One item x pipeline x metric x label measurement. ``item`` is a document id (``item_kind`` ``"document"``)
    or a question id (``"question"``). ``parser``: the parser the pipeline routed the document to (schema 2.2;
    ``""`` for a question, a document no route reads, and rows of older reports)."""

    item: str
    item_kind: str
    doc_class: str
    pipeline: str
    stage: str
    metric: str
    label: str
    value: float | None
    numerator: float | None
    denominator: Count | None
    state: StateName
    detail: dict[str, Any]
    parser: str = ""

    @model_validator(mode="after")
    def _ok_has_a_value(self) -> MeasurementRow:
        if self.state == "ok" and self.value is None:
            raise ValueError("a row in state ok has no value")
        return self


class SummaryRow(_Model):
    """One aggregate. ``level`` is ``"document"`` for aggregates of per-document rows, ``"corpus"`` for values that
    exist only over a set of documents (pairwise dedup rates, per-language F1), where ``micro`` holds the value and
    ``macro`` is None."""

    pipeline: str
    doc_class: str
    stage: str
    metric: str
    label: str
    n_docs: NonNegativeInt  # items (documents or questions) aggregated (state ok)
    micro: float | None  # sum(numerator) / sum(denominator) over ok rows
    macro: float | None  # mean of per-document values over ok rows
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    states: dict[StateName, NonNegativeInt]
    level: Literal["document", "corpus"] = "document"
    numerator: float | None = None  # Σ numerator behind micro (None when rows carry no counts)
    denominator: Count | None = None
    definition: str = ""  # fingerprint of the metric's declaration and its stage's options (`definition_fingerprint`)


class StageDetail(_Model):
    """A table too rich for rows (a confusion matrix, a parameter sweep, a waterfall) from one stage for one
    pipeline."""

    pipeline: str
    stage: str
    name: str
    data: Any


class PairedTest(_Model):
    """A paired test between two pipelines on the items both measured (``diff = pipeline_b - pipeline_a``)."""

    doc_class: str
    metric: str
    label: str
    pipeline_a: str
    pipeline_b: str
    n_pairs: NonNegativeInt
    mean_diff: float
    median_diff: float
    statistic: float
    p_value: float
    significant: bool  # Holm-adjusted p < alpha (version-1 reports: the raw p, uncorrected)
    method: str
    p_holm: float | None = None  # Holm-adjusted over the family; None when the test could not reach alpha / K
    underpowered: bool = False  # no outcome on n_pairs pairs reaches the family's level (see report.paired)
    diff: float | None = None  # headline difference b - a on the paired items (micro or mean)
    diff_low: float | None = None  # its paired bootstrap interval
    diff_high: float | None = None
    better: str | None = None  # the pipeline significantly better (Holm; the test's side and diff agree), "" if none
    # (None: a report written before this field, whose renderers fall back on the sign of diff)


class Verdict(_Model):
    """One comparison of the bake-off's verdict (`ingestaudit.report.verdict`): in class ``class`` (``__all__``:
    every item) on key metric ``metric`` (its label, if any, in brackets), the best pipeline against the runner-up
    over the items both measured (``n_shared`` of the ``n_items`` items any pipeline measured with a reference).
    ``diff = best - runner_up`` (micro, else the mean) with its 95 % paired bootstrap interval; ``p_holm`` the
    deciding test's p, Holm-adjusted over the verdict's family (None: untestable); ``decided`` true only when that
    is below alpha, the per-item majority agrees, and no other key metric of the best is significantly worse than
    the runner-up's; ``reason`` says why in words."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, populate_by_name=True)

    doc_class: str = Field(alias="class")
    metric: str
    direction: str
    best: str
    runner_up: str
    diff: float | None
    diff_low: float | None
    diff_high: float | None
    p_holm: float | None
    n_shared: NonNegativeInt
    n_items: NonNegativeInt
    decided: bool
    reason: str


class Failure(_Model):
    """A failed item and stage, once, with its message (``item`` is ``""`` for a whole stage, ``pipeline`` ``""``
    for a problem of the corpus or its labels). The same failure of one item in several pipelines (the sweep
    variants of one parser, two parsers failing on a missing file) is one failure: ``pipeline`` is the first of
    them in report order and ``pipelines`` lists them all (empty when there is one)."""

    item: str
    pipeline: str
    stage: str
    message: str
    pipelines: list[str] = []


class FailureGroup(_Model):
    """Failures that share a cause (the message with what varies per item blanked out,
    `ingestaudit.report.tables.failure_cause`): ``count`` distinct (item, pipeline, message) triples (failures
    without an item count once each), the stages and pipelines they hit, and the first `MAX_GROUP_EXAMPLES`
    failures in canonical order. Each item's rows stay queryable in the measurement store (state ``error``, the
    message in ``detail.reason``)."""

    cause: str
    count: NonNegativeInt
    stages: list[str]
    pipelines: list[str]
    examples: list[Failure]


class StoreRef(_Model):
    """Where the measurement rows are (schema 2.1): ``file`` beside report.json, its SHA-256 and its row count."""

    file: str
    sha256: str
    rows: NonNegativeInt


class ParseWarning(_Model):
    """The warnings a pipeline's parser raised on one document that it did parse (MuPDF's own messages on a damaged
    PDF, a precomputed output's ``warnings``...), in the order raised, after the chain's own note when the
    pipeline's cleaner could not handle the document and passed its text through (`ingestaudit.chain`): at most
    ``MAX_PARSE_WARNINGS`` messages (each at most ``MAX_WARNING_CHARS`` characters); ``count`` is how many there
    were in all."""

    item: str
    pipeline: str
    count: NonNegativeInt
    messages: list[str]


MAX_PARSE_WARNINGS = 20
MAX_WARNING_CHARS = 500


class Report(_Model):
    """The whole report. ``summary`` and the rows are sorted, so the same run gives the same bytes.

    ``measurements`` names the measurement store (`StoreRef`, schema 2.1: the rows are in ``measurements.parquet``
    beside report.json) or, in reports of schema 1.x and 2.0 and reports built in memory, holds the rows. Read the
    rows with `ingestaudit.report.rows.measurement_rows`, which handles both. ``failures`` lists the first
    `MAX_FAILURES_LISTED` failures (``failures_total`` counts every one, None in older reports: the list is
    complete) and ``failure_groups`` groups them all by cause (empty in older reports).
    """

    schema_version: str = SCHEMA_VERSION
    tool: ToolInfo
    corpus: CorpusInfo
    config: dict[str, dict[str, Any]]  # the run's effective config: one table per section ([run], [report]...)
    environment: dict[str, Any]
    pipelines: list[PipelineInfo]
    measurements: StoreRef | list[MeasurementRow]
    summary: list[SummaryRow]
    failures: list[Failure]
    failures_total: NonNegativeInt | None = None
    failure_groups: list[FailureGroup] = []
    details: list[StageDetail] = []
    paired_tests: list[PairedTest] = []
    verdict: list[Verdict] | None = None  # only when the run has two pipelines or more (absent from report.json else)
    parse_warnings: list[ParseWarning] = []  # sorted by item, then pipeline in report order
    gate: GateResult | None = None  # the gate's result (run --baseline, compare); left out of report.json when None
    measurements_store: dict[str, str] | None = Field(default=None, exclude=True)  # read from 2.0 reports of the
    # development tree (rows inline and the store named beside them); never written
    _timings: dict[str, Any] = PrivateAttr(default_factory=dict)
    _store_path: Path | None = PrivateAttr(default=None)  # where `measurements` (a StoreRef) is on disk
    _store_owned: bool = PrivateAttr(default=False)  # the store is the run's private file (it may be moved)
    _kept_vectors: Path | None = PrivateAttr(default=None)  # --keep-vectors: the folder of the run's kept vectors

    @field_validator("config")
    @classmethod
    def _interval_settings(cls, config: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """The ``[report]`` settings the gate reuses (bootstrap resamples, confidence) within the bounds a config
        may set (`ingestaudit.config.ReportConfig`): a report.json asking for 10^9 resamples is refused, not run."""
        from ingestaudit.config import ReportConfig

        settings = config.get("report", {})
        used = {k: settings[k] for k in ReportConfig.model_fields if k in settings}
        try:
            ReportConfig.model_validate(used)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ValueError(f"report.{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
        return config

    def model_post_init(self, __context: Any) -> None:
        """Give every summary row without one its definition fingerprint (rows of older reports, rows built by
        hand), from this report's own config."""
        cache: dict[tuple[str, str], str] = {}
        for row in self.summary:
            if not row.definition:
                key = (row.metric, row.stage)
                if key not in cache:
                    cache[key] = definition_fingerprint(row.metric, row.stage, self.config)
                row.definition = cache[key]

    @property
    def store_path(self) -> Path | None:
        """The measurement store's file when ``measurements`` is a `StoreRef` (beside the report.json it was read
        from, or the run's own store), else None (the rows are inline)."""
        return self._store_path

    @store_path.setter
    def store_path(self, value: Path | None) -> None:
        self._store_path = value

    @property
    def store_owned(self) -> bool:
        """Whether the store at `store_path` is the run's own private file, which writing the report may move."""
        return self._store_owned

    @store_owned.setter
    def store_owned(self, value: bool) -> None:
        self._store_owned = value

    @property
    def kept_vectors(self) -> Path | None:
        """The folder holding the run's kept vectors (``--keep-vectors``, `ingestaudit.kept_vectors`), which
        `ingestaudit.io.write_report` moves beside report.json; None without the switch."""
        return self._kept_vectors

    @kept_vectors.setter
    def kept_vectors(self, value: Path | None) -> None:
        self._kept_vectors = value

    @property
    def timings(self) -> dict[str, Any]:
        """Wall-clock numbers of the run (query latency, index build time) per pipeline and stage: written to
        ``timings.json`` beside the report, never into ``report.json``, which stays byte-identical across runs."""
        return self._timings

    @timings.setter
    def timings(self, value: dict[str, Any]) -> None:
        self._timings = value

    def to_json(self) -> str:
        """Serialise as indented JSON; raises ValueError if a NaN or infinity slipped in (``allow_nan=False``)."""
        # a report not gated, or of one pipeline: the same bytes as before these fields
        exclude = {name for name in ("gate", "verdict") if getattr(self, name) is None} or None
        data = self.model_dump(mode="json", by_alias=True, exclude=exclude)
        return json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


RUN_SETTINGS_BY_STAGE = {"chunking": ("min_span_coverage",), "retrieval": ("min_span_coverage",)}
"""Run-level settings (``config["run"]``) that change a stage's numbers and so belong to its definition."""


NOT_DEFINITION_OPTIONS = {"boilerplate": ("cleaner_versions",), "tables": ("budget",),
                          "dedup": ("s_curve_sample_pairs",)}
"""Auditor options recorded in the report that never change what a measured value means, so they stay out of the
definition fingerprint: the library versions of the stage under audit (upgrading trafilatura is what the gate must
gate, not hide as "not comparable") and run-time budgets (a table pair over ``max_nodes`` or ``time_s`` becomes
``skipped``, which the gate lists as no longer measured; a measured pair's value is the same), and settings of a
detail only (the dedup S-curve's sample size). Any option whose name ends in ``_versions`` or ``_version`` is left
out too."""


def definition_options(stage: str, options: Any) -> Any:
    """A stage's auditor options without the ones that never change a value (`NOT_DEFINITION_OPTIONS`)."""
    if not isinstance(options, dict):
        return options
    drop = set(NOT_DEFINITION_OPTIONS.get(stage, ()))
    return {k: v for k, v in options.items()
            if k not in drop and not str(k).endswith(("_versions", "_version"))}


def definition_inputs(metric: str, stage: str, config: dict[str, Any]) -> dict[str, Any]:
    """What a metric's value means: its declaration (name, direction, range, unit, ideal; the description's wording
    is left out), the options its stage ran with (``config["auditors"][stage]``: normalisation profile, matching
    policy, k...; without `NOT_DEFINITION_OPTIONS`) and the run settings of `RUN_SETTINGS_BY_STAGE`. Two rows whose
    inputs differ measure different things and are never gated against each other. A metric the registry does not
    know contributes its name only."""
    from ingestaudit.auditors import metric_catalog as specs

    try:
        spec = specs.get(metric)
        declared: dict[str, Any] = {"name": spec.name, "higher_is_better": spec.higher_is_better, "low": spec.low,
                                    "high": spec.high, "unit": spec.unit, "ideal": spec.ideal}
    except (KeyError, ImportError):
        declared = {"name": metric}
    run = config.get("run") if isinstance(config.get("run"), dict) else {}
    auditors = config.get("auditors") if isinstance(config.get("auditors"), dict) else {}
    return {"metric": declared, "options": definition_options(stage, auditors.get(stage, {})),
            "run": {k: run.get(k) for k in RUN_SETTINGS_BY_STAGE.get(stage, ())}}


def definition_fingerprint(metric: str, stage: str, config: dict[str, Any]) -> str:
    """The first 16 hex digits of the SHA-256 of `definition_inputs` as canonical JSON."""
    text = json.dumps(definition_inputs(metric, stage, config), sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _migrate_v1(raw: dict[str, Any]) -> dict[str, Any]:
    """A version-1 report in the version-2 shape: parsers become one-stage pipelines, ``parser`` becomes
    ``pipeline`` and ``doc_id`` becomes ``item`` (every item a document). Values are untouched."""
    def ren(row: Any, pairs: dict[str, str]) -> Any:
        if not isinstance(row, dict):
            return row
        return {pairs.get(k, k): v for k, v in row.items()}

    out = dict(raw)
    out["schema_version"] = SCHEMA_VERSION  # migrated once: a written-back report reads as version 2
    out["pipelines"] = [{"name": p.get("name"), "kind": "precomputed" if p.get("kind") == "precomputed" else "configured",
                         "stages": {"parser": {"implementation": p.get("name"), "version": p.get("version"),
                                               "settings": p.get("settings", {})}}}
                        if isinstance(p, dict) else p for p in out.pop("parsers", [])]
    out["measurements"] = [{**ren(r, {"parser": "pipeline", "doc_id": "item"}), "item_kind": "document"}
                           if isinstance(r, dict) else r for r in out.get("measurements", [])]
    for key in ("summary", "details"):
        out[key] = [ren(r, {"parser": "pipeline"}) for r in out.get(key, [])]
    out["failures"] = [ren(r, {"parser": "pipeline", "doc_id": "item"}) for r in out.get("failures", [])]
    out["paired_tests"] = [ren(r, {"parser_a": "pipeline_a", "parser_b": "pipeline_b"})
                           for r in out.get("paired_tests", [])]
    return out


REPORT_BYTES = 256 << 20
"""Largest report.json read back (``report``, ``compare``, ``--baseline``), in bytes: a fixed limit, as these
commands read it before any configuration (a report of 80 pipelines is about 5 MB)."""
STORE_BYTES = 16 << 30
"""Largest measurement store read back beside a report, in bytes (fixed, as `REPORT_BYTES`); it is read a batch
at a time, never whole."""


class ReportError(IngestAuditError):
    """A report file could not be read or does not follow the contract; the message names the file and field."""


def validation_message(exc: ValidationError) -> str:
    """``field.path: message`` of the validation error to name: the deepest (a bad state in row 7 rather than "not
    a StoreRef", the other branch of ``measurements``), its location without the union's branch name."""
    first = max(exc.errors(), key=lambda e: len(e["loc"]))
    loc = first["loc"]
    if len(loc) > 2 and loc[0] == "measurements":  # ("measurements", "list[MeasurementRow]", 7, "state")
        loc = (loc[0], *loc[2:])
    return f"{'.'.join(map(str, loc))}: {first['msg']}"


def read_report(path: Path) -> Report:
    """Load and validate ``report.json``.

    Raises:
        ReportError: not a regular file (a FIFO would block the read for ever), unreadable, not JSON, another
            schema major version, or fields that break the contract.
    """
    def no_constants(name: str) -> float:
        raise ValueError(f"{name} is not a number a report may hold")

    from ingestaudit.inputs import InputFileError, read_input_text

    try:
        text = read_input_text(path, max_bytes=REPORT_BYTES, limit="REPORT_BYTES")
    except InputFileError as exc:  # a FIFO, a device, a folder, over the size: named (issue 30)
        if exc.kind is not None:
            raise ReportError(f"{path}: not a regular file, so not a report.json ({exc.reason})") from None
        raise ReportError(f"{path}: not a readable JSON report ({exc.cause})") from None
    try:
        raw = json.loads(text, parse_constant=no_constants)
    except (ValueError, RecursionError) as exc:
        raise ReportError(f"{path}: not a readable JSON report ({exc})") from None
    if not isinstance(raw, dict):
        raise ReportError(f"{path}: not a JSON object")
    version = str(raw.get("schema_version", ""))
    if version.split(".")[0] not in READABLE_MAJORS:
        raise ReportError(f"{path}: schema_version {version!r}; this ingestaudit reads "
                          f"{', '.join(m + '.x' for m in READABLE_MAJORS)}")
    if version.split(".")[0] == "1":
        raw = _migrate_v1(raw)
    try:
        report = Report.model_validate(raw)
    except ValidationError as exc:
        raise ReportError(f"{path}: {validation_message(exc)}") from None
    if isinstance(report.measurements, StoreRef):
        name = report.measurements.file
        if not name or "/" in name or "\\" in name or name in (".", ".."):
            raise ReportError(f"{path}: measurements.file: {name!r} is not a file name beside the report")
        report.store_path = path.parent / name
    return report
