"""The regression gate of nightly jobs (DESIGN.md, "The regression gate and history"): ``compare`` and
``run --baseline``.

Pairing. Pipelines pair by name, or as ``--map OLD=NEW`` says; two reports with no pipeline in common are a usage
error. Items pair by id and content hash (`CorpusInfo.item_hashes`: a document or question whose content changed
is listed as changed, never compared with its old self; a report without hashes pairs by id). A summary row of the
baseline is gated against the head's row of the same (mapped) pipeline, class, metric and label.

Per gated row, on the items ``ok`` on both sides (`ingestaudit.report.stats`): the head's and the baseline's
headline values over those items (micro when the rows carry counts, else the mean), their difference with a paired
bootstrap interval, and the **worsening**: the difference oriented so that positive is worse
(`ingestaudit.report.stats.Orientation`: the metric's declared direction or ideal; the ``retrieved`` share of the
loss waterfall is better higher, its loss shares better lower). The test is of that number in that direction,
one-sided: for a micro value the paired bootstrap over items (numerators and denominators of both reports
resampled together; p = the share of resamples in which the head is not worse), for a macro value the Wilcoxon
signed-rank test of the per-item worsenings.

Verdict per row:

* ``not comparable``: the definition fingerprints differ (the metric's declaration, the stage options that change
  its numbers, the run settings that change it: `ingestaudit.report.schema.definition_inputs`; library versions of
  the stage under audit and run-time budgets are not part of it); never a regression;
* ``regression``: worsening > budget **and** significant: Holm-adjusted one-sided p < alpha (0.05) within Tarone's
  family (`ingestaudit.report.stats.family_adjust`: the rows whose test could reach alpha / K);
* ``regression`` marked **underpowered**: worsening > budget on a row so small that no test on its pairs could
  reach alpha / K (``0.5 ** pairs > alpha / K``, `ingestaudit.report.stats.underpowered`): the budget alone
  decides, and the row says so;
* ``regression`` marked **budget only**: a corpus-level value (one number per class, no items to pair);
* ``budget_warning``: a row the budget alone would fail (underpowered, or budget only) with fewer than
  ``[gate] min_items`` items (default `MIN_ITEMS`): one document's change is a warning, never a failure;
* ``within noise``: worsening > budget but not significant (the three that moved most are named, with their
  items); ``within budget``; ``improved``; ``unchanged``.

**Budget**: the largest worsening tolerated, absolute (``0.01``) or relative to the baseline value on the paired
items (``"5%"``): each metric's declared default (`MetricSpec.default_budget`, listed in docs/metrics.md),
overridden by ``[gate]`` in the config, overridden by ``--budget METRIC=X``. The ``[gate]`` keys without a dot
are settings, not budgets (`GateSettings`: ``min_items``, ``band_window``, ``bands``).

**Seeds.** Each metric declares whether its value depends on the run's seed (`MetricSpec.seeded`). Two rows whose
definition fingerprints differ only by the seed an auditor was given (recomputed from each report's config, they
are the stored ones, and agree once the seed is taken out) are compared, unless the metric is seeded: those rows
alone are not comparable.

Besides rows: an item that was ``ok`` in the baseline and is ``error`` or ``no_prediction`` in the head is a
**hard regression** (as is a whole stage that newly failed); a row the baseline has and the head lacks (a metric,
a stage or a class no longer reported for a paired pipeline) is **missing**, and fails the gate like a hard
regression: a measurement that silently disappears is never a pass. One exception, by one rule (`not_run`): a
measurement that needs an optional run input (`MetricSpec.needs`, e.g. ``--events`` for index freshness) which the
head was not given was not run, not lost: its baseline rows are listed as **not run in the head** and do not fail
the gate, just as embedding drift (measured between two runs' kept vectors, ``--keep-vectors``) is never a row a
later run could miss. A head given the input that reports none of its rows still fails. Items added, removed,
changed or no longer measured are listed. The gate fails (exit 1) on any regression, hard regression or missing row.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ingestaudit.auditors import metric_catalog as specs
from ingestaudit.errors import IngestAuditError
from ingestaudit.report.changes import config_changes, corpus_change
from ingestaudit.report.rows import item_keys, row_count, store_file
from ingestaudit.report.schema import ALL_CLASSES, Report, SummaryRow
from ingestaudit.report.stats import (ALPHA, Pairs, attainable_p, compare_pairs, family_adjust, family_size,
                                      orientation_of, pairs_of, resamples_for_family, row_seed, underpowered)
from ingestaudit.report.tables import direction, g4, measurement_rows

HARD_STATES = ("error", "no_prediction")
MAX_LISTED = 10  # regressions printed before "... and N more"
MOVED_SHOWN = 3  # items named per regression
NOISE_SHOWN = 3  # rows within noise named (those that moved most beyond their budget)


class GateError(IngestAuditError):
    """A usage problem of the gate (bad ``--budget`` or ``--map``, no pipeline in common): exit 2, message names
    the flag or file."""


# --- settings --------------------------------------------------------------------------------------------------------

MIN_ITEMS = 10
"""Items a row needs before its budget alone (no significant test) fails the gate; below it is a warning."""


class GateSettings(BaseModel):
    """The ``[gate]`` keys that are settings, not metric budgets (a metric name always holds a dot)."""

    model_config = ConfigDict(extra="forbid", strict=True)  # "10", true or 1e9 is no count

    min_items: int = Field(default=MIN_ITEMS, ge=1, description="items a row needs for its budget alone (no "
                           "significant test) to fail the gate; below: a budget warning")
    band_window: int = Field(default=20, ge=5, description="accepted runs of the history a control band is drawn "
                             "from (the last N; at least 5 needed)")
    bands: Literal["warn", "fail"] = Field(default="warn", description="a head value outside its control band: a "
                                           "warning, or a gate failure")


def gate_settings(config_gate: Mapping[str, Any] | None, source: str = "[gate]") -> GateSettings:
    """The settings among ``config_gate``'s keys (`GateSettings`; the keys without a dot).

    Raises:
        GateError: an unknown setting or a bad value, naming ``source`` and the key.
    """
    from ingestaudit.report.schema import validation_message

    raw = {k: v for k, v in (config_gate or {}).items() if "." not in k}
    unknown = sorted(set(raw) - set(GateSettings.model_fields))
    if unknown:
        raise GateError(f"{source} {unknown[0]}: unknown setting; a budget is named by its metric (stage.metric), "
                        f"the settings are {', '.join(GateSettings.model_fields)}")
    try:
        return GateSettings.model_validate(raw)
    except ValidationError as exc:
        raise GateError(f"{source}: {validation_message(exc)}") from None


# --- budgets ---------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Budget:
    """A budget: ``value`` absolute, or a fraction of the baseline value when ``relative``; ``source`` says where
    it was set (printed with it)."""

    value: float
    relative: bool = False
    source: str = "default"

    def allowed(self, base: float | None) -> float:
        """The worsening tolerated from a baseline value ``base``."""
        if not self.relative:
            return self.value
        return self.value * abs(base) if base is not None else 0.0

    def text(self) -> str:
        """``0.01`` or ``5%``."""
        return f"{self.value * 100:.4g}%" if self.relative else f"{self.value:.4g}"


def parse_budget(value: Any, where: str) -> Budget:
    """``0.01`` / ``"0.01"`` (absolute) or ``"5%"`` (relative to the baseline value).

    Raises:
        GateError: not a finite number >= 0 or a percentage (``where`` names the flag or file).
    """
    text = str(value).strip()
    relative = text.endswith("%")
    try:
        if isinstance(value, bool):
            raise ValueError
        number = float(text[:-1] if relative else text)
    except ValueError:
        raise GateError(f"{where}: budget {value!r} is not a number (0.01) or a percentage (\"5%\")") from None
    if not math.isfinite(number) or number < 0:
        raise GateError(f"{where}: budget {value!r} must be a finite number >= 0")
    return Budget(number / 100 if relative else number, relative, where)


def known_metric(name: str, extra: Sequence[str] = ()) -> bool:
    """A registered metric, one a report holds (``extra``), or a cutoff of a registered family (``@K``)."""
    if name in extra:
        return True
    try:
        specs.get(name)
        return True
    except KeyError:
        pass
    family = name.split("@", 1)[0] + "@"
    return "@" in name and any(s.name.startswith(family) for s in specs.all_specs())


def resolve_budgets(config_gate: Mapping[str, Any] | None, flags: Sequence[str], *, config_source: str = "[gate]",
                    report_metrics: Sequence[str] = ()) -> dict[str, Budget]:
    """Budgets set by the config's ``[gate]`` table and by ``--budget METRIC=X`` flags (flags win).

    Raises:
        GateError: a malformed flag or value, or a metric no registry or report knows.
    """
    out: dict[str, Budget] = {}
    for metric, value in (config_gate or {}).items():
        if "." not in metric:
            continue  # a setting (`gate_settings`)
        where = f"{config_source} {metric}"
        if not known_metric(metric, report_metrics):
            raise GateError(f"{where}: unknown metric {metric!r} (see docs/metrics.md)")
        out[metric] = parse_budget(value, where)
    for flag in flags:
        metric, eq, value = flag.partition("=")
        metric = metric.strip()
        where = f"--budget {flag}"
        if not eq or not metric or not value.strip():
            raise GateError(f"{where}: expected METRIC=X, e.g. --budget extraction.cer=0.02 or tables.teds=5%")
        if not known_metric(metric, report_metrics):
            raise GateError(f"{where}: unknown metric {metric!r} (see docs/metrics.md)")
        out[metric] = parse_budget(value.strip(), where)
    return out


def budget_for(metric: str, budgets: Mapping[str, Budget]) -> Budget:
    """The budget of ``metric``: set, else declared, else 0.01."""
    if metric in budgets:
        return budgets[metric]
    try:
        declared = specs.get(metric).default_budget
    except KeyError:
        declared = 0.01
    return parse_budget(declared, "default")


def badness(metric: str, label: str, value: float) -> float:
    """How bad ``value`` is (larger is worse): `ingestaudit.report.stats.orientation_of` the metric."""
    return float(orientation_of(metric, label).badness(value))


# --- result objects --------------------------------------------------------------------------------------------------

@dataclass
class MovedItem:
    """One paired item's change (``worse`` > 0 means it got worse)."""

    item: str
    base: float
    head: float
    worse: float


@dataclass
class RowResult:
    """One gated row and its verdict (see the module docstring for ``status``)."""

    pipeline: str  # the head's pipeline name
    base_pipeline: str
    doc_class: str
    stage: str
    metric: str
    label: str
    status: str
    base: float | None  # summary headline values, as the two reports print them
    head: float | None
    base_paired: float | None = None  # the headline values over the paired items (what is gated)
    head_paired: float | None = None
    n_pairs: int = 0
    moved: int = 0
    diff: float | None = None  # head - base on the paired items
    diff_low: float | None = None
    diff_high: float | None = None
    worse: float | None = None  # diff oriented so that positive is worse
    budget: str = ""
    allowed: float | None = None
    test: str = ""
    p_value: float | None = None  # one-sided: evidence that the head is worse
    p_holm: float | None = None
    resamples: int = 0  # bootstrap resamples behind a micro row's p
    underpowered: bool = False
    budget_only: bool = False  # corpus-level value: no items to pair
    reason: str = ""  # not comparable: what changed
    moved_most: list[MovedItem] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.metric + (f"[{self.label}]" if self.label else "")

    @property
    def severity(self) -> float:
        """Worsening in budgets (infinite for a zero budget), to 3 significant digits so that rows equally far
        beyond their budgets tie and the tie goes to the significant ones (float noise never decides the order)."""
        if self.worse is None:
            return 0.0
        if not self.allowed:
            return math.inf if self.worse > 0 else 0.0
        return float(f"{self.worse / self.allowed:.3g}")


@dataclass
class HardRegression:
    """An item (``item`` ``""``: a whole stage) that was ``ok`` and now fails."""

    pipeline: str
    item: str
    stages: list[str]
    state: str
    message: str


@dataclass
class MissingRows:
    """Rows of the baseline that the head no longer reports, for one paired pipeline: ``what`` is ``"stage"``
    (every row of a stage), ``"class"`` (every row of a class) or ``"metric"`` (one metric[label] in the listed
    classes)."""

    pipeline: str
    what: str
    name: str
    classes: list[str]
    rows: int


@dataclass
class Comparison:
    """Everything the gate found."""

    base_label: str
    head_label: str
    rows: list[RowResult]
    hard: list[HardRegression]
    pipelines: dict[str, Any]
    items: dict[str, list[str]]
    missing: list[MissingRows] = field(default_factory=list)
    not_run: list[dict[str, Any]] = field(default_factory=list)  # `_not_run_rows`: exempt, listed, never a failure
    changes: list[dict[str, Any]] = field(default_factory=list)  # `ingestaudit.report.changes.config_changes`
    corpus: dict[str, Any] = field(default_factory=dict)  # fingerprints and item counts (`corpus_change`)
    min_items: int = MIN_ITEMS
    alpha: float = ALPHA
    family: int = 0  # K, the size bound of Tarone's family
    same_corpus: bool = True
    confidence: float = 0.95  # of the difference intervals

    @property
    def regressions(self) -> list[RowResult]:
        """Rows that regressed, most severe first."""
        regs = [r for r in self.rows if r.status == "regression"]
        return sorted(regs, key=lambda r: (-r.severity, r.underpowered or r.budget_only, r.doc_class == ALL_CLASSES,
                                           r.pipeline, r.doc_class, r.metric, r.label))

    @property
    def within_noise(self) -> list[RowResult]:
        """Rows that worsened beyond their budget without being significant, furthest beyond first."""
        rows = [r for r in self.rows if r.status == "within_noise"]
        return sorted(rows, key=lambda r: (-r.severity, r.doc_class == ALL_CLASSES, r.pipeline, r.doc_class,
                                           r.metric, r.label))

    @property
    def budget_warnings(self) -> list[RowResult]:
        """Rows the budget alone would fail but that have fewer than `min_items` items, furthest beyond first."""
        rows = [r for r in self.rows if r.status == "budget_warning"]
        return sorted(rows, key=lambda r: (-r.severity, r.doc_class == ALL_CLASSES, r.pipeline, r.doc_class,
                                           r.metric, r.label))

    @property
    def failed(self) -> bool:
        return bool(self.hard or self.regressions or self.missing)

    def count(self, status: str) -> int:
        return sum(1 for r in self.rows if r.status == status)

    def to_dict(self) -> dict[str, Any]:
        """The same content as the text, as data (``compare --json``)."""
        def row(r: RowResult) -> dict[str, Any]:
            d = asdict(r)
            d["moved_most"] = [asdict(m) for m in r.moved_most]
            return d

        regs = self.regressions
        rest = sorted((r for r in self.rows if r.status != "regression"),
                      key=lambda r: (r.status, r.pipeline, r.doc_class, r.metric, r.label))
        return {"verdict": "fail" if self.failed else "pass", "alpha": self.alpha, "family_size": self.family,
                "base": self.base_label, "head": self.head_label, "same_corpus": self.same_corpus,
                "counts": {s: self.count(s) for s in STATUSES} | {"hard_regressions": len(self.hard),
                                                                   "missing_rows": sum(m.rows for m in self.missing)},
                "hard_regressions": [asdict(h) for h in self.hard], "regressions": [row(r) for r in regs],
                "missing_in_head": [asdict(m) for m in self.missing], "not_run_in_head": self.not_run,
                "rows": [row(r) for r in rest], "pipelines": self.pipelines, "items": self.items,
                "config_changes": self.changes, "corpus": self.corpus, "min_items": self.min_items}


STATUSES = ("regression", "budget_warning", "within_noise", "within_budget", "improved", "unchanged", "not_comparable",
            "no_pairs")


# --- pairing ---------------------------------------------------------------------------------------------------------

def has_summary_for(base: Report, pipelines: Iterable[str]) -> bool:
    """True when ``base`` has a summary row for one of ``pipelines``: else there is nothing to gate against (an empty
    store is never a pass). `gate` raises then; ``run --baseline`` checks it before the audit."""
    wanted = set(pipelines)
    return any(r.pipeline in wanted for r in base.summary)


def pipeline_pairs(base: Report, head: Report, maps: Sequence[str] = ()) -> list[tuple[str, str]]:
    """``(base pipeline, head pipeline)`` pairs: same names, plus ``--map OLD=NEW``.

    Raises:
        GateError: a malformed ``--map``, a name neither report has, or no pipeline in common.
    """
    b_names = [p.name for p in base.pipelines] or sorted({r.pipeline for r in base.summary})
    h_names = [p.name for p in head.pipelines] or sorted({r.pipeline for r in head.summary})
    mapped: dict[str, str] = {}
    for m in maps:
        old, eq, new = m.partition("=")
        old, new = old.strip(), new.strip()
        if not eq or not old or not new:
            raise GateError(f"--map {m}: expected OLD=NEW (a baseline pipeline = a head pipeline)")
        if old not in b_names:
            raise GateError(f"--map {m}: the baseline has no pipeline {old!r} (it has {', '.join(b_names) or 'none'})")
        if new not in h_names:
            raise GateError(f"--map {m}: the head has no pipeline {new!r} (it has {', '.join(h_names) or 'none'})")
        mapped[old] = new
    taken = set(mapped.values())
    pairs = [(b, mapped[b]) for b in b_names if b in mapped]
    pairs += [(b, b) for b in b_names if b not in mapped and b in h_names and b not in taken]
    if not pairs:
        raise GateError(f"no pipeline in common: the baseline has {', '.join(b_names) or 'none'}; the head has "
                        f"{', '.join(h_names) or 'none'}. Pair them with --map BASE=HEAD"
                        + (f" (e.g. --map {b_names[0]}={h_names[0]})" if b_names and h_names else ""))
    return pairs


def _headline(row: SummaryRow | None) -> float | None:
    if row is None:
        return None
    return row.micro if row.micro is not None else row.macro


class Cell(NamedTuple):
    """What the gate reads of one measurement row (`_index`): a tuple, not a `MeasurementRow`, so that two reports of
    a million rows each fit in memory (``detail`` is None except for rows in `HARD_STATES`)."""

    state: str
    value: float | None
    numerator: float | None
    denominator: float | None
    doc_class: str
    stage: str
    detail: dict[str, Any] | None = None


def _index(report: Report) -> dict[tuple[str, str, str], dict[str, Cell]]:
    """Every row by (pipeline, metric, label) and item as a `Cell`; only the rows in `HARD_STATES` keep their detail
    (the gate quotes their message). A store is read column-wise in batches (`ingestaudit.store.iter_batches`),
    its repeated texts kept once."""
    out: dict[tuple[str, str, str], dict[str, Cell]] = defaultdict(dict)
    path = store_file(report)
    if path is None:
        for m in measurement_rows(report):
            out[(m.pipeline, m.metric, m.label)][m.item] = Cell(
                m.state, m.value, m.numerator, m.denominator, m.doc_class, m.stage,
                m.detail if m.state in HARD_STATES else None)
        return out
    from ingestaudit.store import iter_batches

    seen: dict[str, str] = {}
    one = seen.setdefault  # one str object per distinct item, class, stage and state
    columns = ["pipeline", "metric", "label", "item", "state", "value", "numerator", "denominator", "class", "stage"]
    for batch in iter_batches(path, columns):
        pipe, metric, label, item, state, value, num, den, cls, stage = (batch.column(i).to_pylist()
                                                                         for i in range(len(columns)))
        last, rows = None, None
        for k in range(len(item)):
            key = (pipe[k], metric[k], label[k])
            if key != last:
                last, rows = key, out[key]
            rows[one(item[k], item[k])] = Cell(one(state[k], state[k]), value[k], num[k], den[k],
                                               one(cls[k], cls[k]), one(stage[k], stage[k]))
    for m in measurement_rows(report, states=HARD_STATES):
        out[(m.pipeline, m.metric, m.label)][m.item] = Cell(m.state, m.value, m.numerator, m.denominator,
                                                            m.doc_class, m.stage, m.detail)
    return out


def _same_content(item: str, base: Report, head: Report) -> bool:
    """Whether ``item`` has the same content hash in both reports (or either has none); hashes are compared on
    their common prefix (schema 2.1 keeps 16 hex digits, older reports all 64)."""
    hb, hh = base.corpus.item_hashes.get(item), head.corpus.item_hashes.get(item)
    if hb is None or hh is None:
        return True
    n = min(len(hb), len(hh))
    return hb[:n] == hh[:n]


def _changed(base: Report, head: Report) -> frozenset[str]:
    """The items whose content changed between the reports (not `_same_content`), computed once per comparison."""
    both = base.corpus.item_hashes.keys() & head.corpus.item_hashes.keys()
    return frozenset(i for i in both if not _same_content(i, base, head))


def _ok_pairs(b_rows: Mapping[str, Cell], h_rows: Mapping[str, Cell], changed: frozenset[str]
              ) -> list[tuple[str, Cell, Cell]]:
    """The items ``ok`` with a value on both sides and unchanged in content, sorted by item, with their two rows."""
    out = []
    for item in sorted(b_rows.keys() & h_rows.keys()):
        rb, rh = b_rows[item], h_rows[item]
        if rb.state == "ok" and rh.state == "ok" and rb.value is not None and rh.value is not None \
                and item not in changed:
            out.append((item, rb, rh))
    return out


def _pairs(ok: list[tuple[str, Cell, Cell]], doc_class: str) -> Pairs:
    """The `Pairs` of a summary row of ``doc_class`` from its key's `_ok_pairs` (every class for `ALL_CLASSES`)."""
    items = ok if doc_class == ALL_CLASSES else [t for t in ok if t[1].doc_class == doc_class == t[2].doc_class]
    return pairs_of([i for i, _, _ in items], [rb for _, rb, _ in items], [rh for _, _, rh in items])


def _options_change(stage: str, base: Report, head: Report) -> str:
    """What changed in a stage's definition inputs, in words."""
    from ingestaudit.report.schema import definition_options

    def opts(r: Report) -> dict[str, Any]:
        a = r.config.get("auditors") if isinstance(r.config.get("auditors"), dict) else {}
        o = definition_options(stage, a.get(stage, {}))
        return o if isinstance(o, dict) else {"": o}

    def run(r: Report) -> dict[str, Any]:
        return r.config.get("run", {}) if isinstance(r.config.get("run"), dict) else {}

    ob, oh = opts(base), opts(head)
    changes = [f"{k}: {_short(ob.get(k))} -> {_short(oh.get(k))}" for k in sorted(ob.keys() | oh.keys())
               if ob.get(k) != oh.get(k)]
    from ingestaudit.report.schema import RUN_SETTINGS_BY_STAGE

    changes += [f"run.{k}: {_short(run(base).get(k))} -> {_short(run(head).get(k))}"
                for k in RUN_SETTINGS_BY_STAGE.get(stage, ()) if run(base).get(k) != run(head).get(k)]
    if changes:
        return f"{stage} options changed ({'; '.join(changes)})"
    return (f"the definition fingerprints differ while the recorded {stage} options agree: the metric's declaration "
            f"or what its fingerprint covers changed (ingestaudit {base.tool.version} -> {head.tool.version})")


def _short(v: Any, limit: int = 40) -> str:
    text = "(unset)" if v is None else json.dumps(v, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_seeded(metric: str) -> bool:
    """`MetricSpec.seeded` of ``metric`` (a cutoff ``@K`` takes its family's declaration; unknown: False)."""
    try:
        return specs.get(metric).seeded
    except KeyError:
        family = metric.split("@", 1)[0] + "@"
        return "@" in metric and any(s.seeded for s in specs.all_specs() if s.name.startswith(family))


def _drop_seed(options: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _drop_seed(v) if isinstance(v, dict) else v for k, v in options.items() if k != "seed"}


def _without_seed(stage: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with the seed taken out of ``stage``'s auditor options (and their nested tables, e.g. a
    bootstrap's), when that auditor is given the run's seed (`ingestaudit.auditors.registry.takes_run_seed`)."""
    from ingestaudit.auditors.registry import takes_run_seed

    auditors = config.get("auditors")
    if not isinstance(auditors, dict) or not isinstance(auditors.get(stage), dict) or not takes_run_seed(stage):
        return dict(config)
    return {**config, "auditors": {**auditors, stage: _drop_seed(auditors[stage])}}


def seed_only_change(b: SummaryRow, h: SummaryRow, base: Report, head: Report) -> bool:
    """Whether two rows' definition fingerprints differ by the run's seed alone: recomputed from each report's
    config they are the ones the rows carry (so the configs explain them), and they agree without the seed."""
    from ingestaudit.report.schema import definition_fingerprint

    if definition_fingerprint(b.metric, b.stage, base.config) != b.definition or \
            definition_fingerprint(h.metric, h.stage, head.config) != h.definition:
        return False
    return definition_fingerprint(b.metric, b.stage, _without_seed(b.stage, base.config)) == \
        definition_fingerprint(h.metric, h.stage, _without_seed(h.stage, head.config))


def _seed(r: Report) -> Any:
    run = r.config.get("run") if isinstance(r.config.get("run"), dict) else {}
    return run.get("seed")


# --- the gate --------------------------------------------------------------------------------------------------------

def compare_reports(base: Report, head: Report, *, budgets: Mapping[str, Budget] | None = None,
                    maps: Sequence[str] = (), alpha: float = ALPHA, base_label: str = "baseline",
                    head_label: str = "head", min_items: int = MIN_ITEMS) -> Comparison:
    """Gate ``head`` against ``base`` (see the module docstring).

    Args:
        budgets: per-metric budgets (`resolve_budgets`); metrics left out take their declared default.
        maps: ``--map OLD=NEW`` flags.
        min_items: items a row needs for its budget alone to fail the gate (`GateSettings.min_items`).

    Raises:
        GateError: bad ``maps``, no pipeline in common, or a baseline with nothing measured for them (an empty
            store is nothing to pass against).
    """
    budgets = budgets or {}
    pairs_of_pipelines = pipeline_pairs(base, head, maps)
    if not has_summary_for(base, (pb for pb, _ in pairs_of_pipelines)):
        raise GateError(f"{base_label}: nothing to gate against: the baseline has no summary row for "
                        f"{', '.join(pb for pb, _ in pairs_of_pipelines)} (and {row_count(base)} measurement rows)")
    b_index, h_index = _index(base), _index(head)
    changed_items = _changed(base, head)
    ok_pairs: dict[tuple[str, str, str], list[tuple[str, Cell, Cell]]] = {}
    h_summary = {(r.pipeline, r.doc_class, r.metric, r.label): r for r in head.summary}
    run_cfg = head.config.get("run") if isinstance(head.config.get("run"), dict) else {}
    seed = run_cfg.get("seed", 0) if isinstance(run_cfg.get("seed", 0), int) else 0
    rep_cfg = head.config.get("report") if isinstance(head.config.get("report"), dict) else {}
    n_resamples = int(rep_cfg.get("bootstrap_resamples", 1000) or 1000)
    confidence = float(rep_cfg.get("confidence", 0.95) or 0.95)

    rows: list[RowResult] = []
    pending: list[tuple[RowResult, Pairs]] = []
    seen_sets: set[tuple[str, str, str, frozenset[str]]] = set()
    seed_only: dict[tuple[str, str], bool] = {}
    b_by_pipeline = {pb: ph for pb, ph in pairs_of_pipelines}
    ordered = sorted((r for r in base.summary if r.pipeline in b_by_pipeline),
                     key=lambda r: (r.doc_class == ALL_CLASSES, r.pipeline, r.doc_class, r.metric, r.label))
    for b in ordered:
        ph = b_by_pipeline[b.pipeline]
        h = h_summary.get((ph, b.doc_class, b.metric, b.label))
        if h is None:
            continue  # listed in `missing`
        res = RowResult(pipeline=ph, base_pipeline=b.pipeline, doc_class=b.doc_class, stage=b.stage, metric=b.metric,
                        label=b.label, status="", base=_headline(b), head=_headline(h))
        budget = budget_for(b.metric, budgets)
        res.budget = budget.text()
        b_rows, h_rows = b_index.get((b.pipeline, b.metric, b.label)), h_index.get((ph, b.metric, b.label))
        per_item = b.level != "corpus" and bool(b_rows) and bool(h_rows)
        pairs = None
        if per_item:  # the ok pairs of a key are found once for its classes and __all__
            key_ok = (b.pipeline, b.metric, b.label)
            if key_ok not in ok_pairs:
                ok_pairs[key_ok] = _ok_pairs(b_rows, h_rows, changed_items)  # type: ignore[arg-type]
            pairs = _pairs(ok_pairs[key_ok], b.doc_class)
        if pairs is not None:
            key = (b.pipeline, b.metric, b.label, frozenset(pairs.items))
            if b.doc_class == ALL_CLASSES and pairs.n and key in seen_sets:
                continue  # the same items as one class's row: the same row, gated once
            seen_sets.add(key)
        if b.definition != h.definition:
            key_seed = (b.metric, b.stage)
            if key_seed not in seed_only:
                seed_only[key_seed] = seed_only_change(b, h, base, head)
            if not seed_only[key_seed] or is_seeded(b.metric):
                res.status = "not_comparable"
                res.reason = (f"seed-dependent metrics, seed changed ({_short(_seed(base))} -> {_short(_seed(head))})"
                              if seed_only[key_seed] else _options_change(b.stage, base, head))
                rows.append(res)
                continue
        if pairs is None:
            _budget_only(res, budget)
            if res.status == "regression" and min(b.n_docs, h.n_docs) < min_items:
                res.status = "budget_warning"
            rows.append(res)
            continue
        res.n_pairs, res.moved = pairs.n, pairs.moved
        if not pairs.n:
            res.status = "no_pairs"
            rows.append(res)
            continue
        res.base_paired, res.head_paired = pairs.value("a"), pairs.value("b")
        res.worse = badness(b.metric, b.label, res.head_paired) - badness(b.metric, b.label, res.base_paired)
        res.allowed = budget.allowed(res.base_paired)
        moved = [MovedItem(i, x, y, badness(b.metric, b.label, y) - badness(b.metric, b.label, x))
                 for i, x, y in zip(pairs.items, pairs.a, pairs.b) if x != y]
        res.moved_most = sorted((m for m in moved if m.worse > 0), key=lambda m: (-m.worse, m.item))[:MOVED_SHOWN]
        rows.append(res)
        pending.append((res, pairs))

    # Tarone's K is known from the pairs alone; it sets how finely the bootstrap p must be resolved
    min_ps = [attainable_p(pairs.n, pairs.moved, pairs.micro) for _, pairs in pending]
    k = family_size(min_ps, alpha)
    n_test = resamples_for_family(k, alpha, n_resamples)
    for res, pairs in pending:
        stat = compare_pairs(pairs, orientation_of(res.metric, res.label),
                             seed=row_seed(seed, res.doc_class, res.metric, res.label),
                             n_resamples=n_resamples, confidence=confidence, interval=pairs.moved > 0,
                             test_resamples=n_test, refine_below=alpha)
        res.diff = stat.diff
        res.diff_low, res.diff_high = (stat.low, stat.high) if pairs.moved else (0.0, 0.0)
        res.test, res.p_value, res.resamples = stat.method, stat.p_worse, stat.resamples
    _, adjusted = family_adjust([r.p_value for r, _ in pending], min_ps, alpha)  # type: ignore[misc]
    for (res, pairs), p_holm in zip(pending, adjusted):
        res.p_holm = p_holm
        res.underpowered = underpowered(pairs.n, k, alpha)
        worse, allowed = res.worse or 0.0, res.allowed or 0.0
        if worse > allowed and p_holm is not None and p_holm < alpha:
            res.status = "regression"
        elif worse > allowed and res.underpowered:
            res.status = "regression" if pairs.n >= min_items else "budget_warning"
        elif worse > allowed:
            res.status = "within_noise"
        elif pairs.moved == 0 and worse == 0:
            res.status = "unchanged"
        elif worse < 0:
            res.status = "improved"
        else:
            res.status = "within_budget"

    b_items, h_items = _items(base), _items(head)
    changed = sorted(i for i in b_items.keys() & h_items.keys() if i in changed_items)
    mapped_b = {pb for pb, _ in pairs_of_pipelines}
    mapped_h = {ph for _, ph in pairs_of_pipelines}
    missing = _missing_rows(base, head, b_by_pipeline)
    items = {"added": sorted(h_items.keys() - b_items.keys()), "removed": sorted(b_items.keys() - h_items.keys()),
             "changed": changed, "no_longer_measured": _no_longer_measured(pairs_of_pipelines, b_index, h_index,
                                                                           changed_items)}
    return Comparison(
        base_label=base_label, head_label=head_label, rows=rows,
        hard=_hard_regressions(base, head, pairs_of_pipelines, b_index, h_index, changed_items),
        pipelines={"paired": [list(p) for p in pairs_of_pipelines],
                   "only_base": [p for p in _names(base) if p not in mapped_b],
                   "only_head": [p for p in _names(head) if p not in mapped_h]},
        items=items,
        missing=missing, not_run=_not_run_rows(base, head, b_by_pipeline), alpha=alpha, family=k,
        same_corpus=base.corpus.fingerprint == head.corpus.fingerprint,
        confidence=confidence, changes=config_changes(base, head, pairs_of_pipelines), min_items=min_items,
        corpus=corpus_change(base, head, items))


def not_run(report: Report) -> dict[str, str]:
    """Metrics ``report``'s run did not measure by choice -> why: a metric whose spec needs an optional run input
    (`MetricSpec.needs`) that the run was not given (no detail of the report holds ``{"input": needs}``). The
    gate's one rule for measurements a head may leave out (module docstring); everything else a head lacks is
    missing."""
    given = {d.data.get("input") for d in report.details if isinstance(d.data, dict)}
    return {s.name: f"the head was run without {s.needs}" for s in specs.all_specs()
            if s.needs and s.needs not in given}


def _not_run_rows(base: Report, head: Report, b_by_pipeline: Mapping[str, str]) -> list[dict[str, Any]]:
    """The baseline's rows with a value of metrics the head did not run (`not_run`): one entry per head pipeline
    and metric, ``{pipeline, metric, rows, reason}``."""
    skipped = not_run(head)
    counts: dict[tuple[str, str], int] = {}
    for r in base.summary:
        if r.pipeline in b_by_pipeline and r.metric in skipped and _headline(r) is not None:
            key = (b_by_pipeline[r.pipeline], r.metric)
            counts[key] = counts.get(key, 0) + 1
    return [{"pipeline": p, "metric": m, "rows": n, "reason": skipped[m]} for (p, m), n in sorted(counts.items())]


def _missing_rows(base: Report, head: Report, b_by_pipeline: Mapping[str, str]) -> list[MissingRows]:
    """Baseline rows with a value whose (mapped) pipeline, class, metric and label the head lacks, or (a
    corpus-level value, which has no items to list as failed or no longer measured) has without a value; grouped:
    a whole stage, a whole class, else one metric[label] with its classes. Rows of metrics the head did not run
    (`not_run`) are not missing."""
    h_rows = {(r.pipeline, r.doc_class, r.metric, r.label): r for r in head.summary}
    h_keys = {k for k, r in h_rows.items() if r.level != "corpus" or _headline(r) is not None}
    skipped = not_run(head)
    out: list[MissingRows] = []
    for pb, ph in b_by_pipeline.items():
        mine = [r for r in base.summary if r.pipeline == pb and _headline(r) is not None and r.metric not in skipped]
        gone = [r for r in mine if (ph, r.doc_class, r.metric, r.label) not in h_keys]
        if not gone:
            continue
        left = {id(r) for r in gone}
        for stage in sorted({r.stage for r in gone}):
            rows = [r for r in mine if r.stage == stage]
            if len(rows) > 1 and all(id(r) in left for r in rows):
                classes = sorted({r.doc_class for r in rows}, key=lambda c: (c == ALL_CLASSES, c))
                out.append(MissingRows(ph, "stage", stage, classes, len(rows)))
                left -= {id(r) for r in rows}
        for cls in sorted({r.doc_class for r in gone if id(r) in left}):
            of_class = [r for r in mine if r.doc_class == cls]
            rest = [r for r in of_class if id(r) in left]
            if len(rest) > 1 and all((ph, cls, r.metric, r.label) not in h_keys for r in of_class):
                out.append(MissingRows(ph, "class", cls, [cls], len(rest)))
                left -= {id(r) for r in rest}
        by_metric: dict[str, list[str]] = {}
        for r in gone:
            if id(r) in left:
                by_metric.setdefault(r.metric + (f"[{r.label}]" if r.label else ""), []).append(r.doc_class)
        out += [MissingRows(ph, "metric", name, sorted(classes), len(classes)) for name, classes in by_metric.items()]
    return sorted(out, key=lambda m: (m.pipeline, ("stage", "class", "metric").index(m.what), m.name))


def _names(r: Report) -> list[str]:
    return [p.name for p in r.pipelines] or sorted({s.pipeline for s in r.summary})


def _items(r: Report) -> dict[str, str]:
    """Item -> its kind, from two columns of the store (`ingestaudit.report.rows.item_keys`)."""
    return {item: kind for kind, item in item_keys(r)}


def _budget_only(res: RowResult, budget: Budget) -> None:
    """A row without paired items (a corpus-level value): the budget alone decides."""
    res.budget_only = True
    res.test = "none (corpus-level value: one number per class, no items to pair)"
    if res.base is None or res.head is None:
        res.status = "no_pairs"
        return
    res.diff = res.head - res.base
    res.worse = badness(res.metric, res.label, res.head) - badness(res.metric, res.label, res.base)
    res.allowed = budget.allowed(res.base)
    if res.worse > res.allowed:
        res.status = "regression"
    elif res.worse == 0:
        res.status = "unchanged"
    else:
        res.status = "improved" if res.worse < 0 else "within_budget"


def _hard_regressions(base: Report, head: Report, pairs: list[tuple[str, str]],
                      b_index: Mapping, h_index: Mapping, changed: frozenset[str]) -> list[HardRegression]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for pb, ph in pairs:
        for (pipe, metric, label), b_rows in b_index.items():
            if pipe != pb:
                continue
            h_rows = h_index.get((ph, metric, label), {})
            for item, rb in b_rows.items():
                rh = h_rows.get(item)
                if rb.state == "ok" and rh is not None and rh.state in HARD_STATES and item not in changed:
                    entry = found.setdefault((ph, item), {"stages": set(), "state": rh.state, "message": ""})
                    entry["stages"].add(rh.stage)
                    if not entry["message"]:
                        entry["message"] = str(rh.detail.get("reason") or rh.detail.get("message") or rh.state)
    messages = {(f.pipeline, f.item): f.message for f in head.failures}
    out = [HardRegression(ph, item, sorted(e["stages"]), e["state"], messages.get((ph, item), e["message"]))
           for (ph, item), e in found.items()]
    b_stage_fail = {(f.pipeline, f.stage) for f in base.failures if not f.item}
    for pb, ph in pairs:
        for f in head.failures:
            if not f.item and f.pipeline == ph and (pb, f.stage) not in b_stage_fail:
                out.append(HardRegression(ph, "", [f.stage], "error", f.message))
    return sorted(out, key=lambda h: (h.pipeline, h.item, h.stages))


def _no_longer_measured(pairs: list[tuple[str, str]], b_index: Mapping, h_index: Mapping,
                        changed: frozenset[str]) -> list[str]:
    """``pipeline item stage: ok -> state`` for items that went from ok to skipped or no_reference."""
    out = set()
    for pb, ph in pairs:
        for (pipe, metric, label), b_rows in b_index.items():
            if pipe != pb:
                continue
            h_rows = h_index.get((ph, metric, label), {})
            for item, rb in b_rows.items():
                rh = h_rows.get(item)
                if rb.state == "ok" and rh is not None and rh.state not in HARD_STATES + ("ok",) \
                        and item not in changed:
                    out.add(f"{ph} {item} {rh.stage}: ok -> {rh.state}")
    return sorted(out)


# --- text ------------------------------------------------------------------------------------------------------------

def _wrap(text: str, width: int, indent: str = "  ", more: str = "    ") -> list[str]:
    """Wrap at spaces (never cut): the first line indented ``indent``, the rest ``indent + more``; a word longer
    than the width (a path) stays whole."""
    import textwrap

    return textwrap.wrap(text, width=max(20, width), initial_indent=indent,
                         subsequent_indent=indent + more, break_long_words=False, break_on_hyphens=False) or [indent]


def _list(names: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", … (+{len(names) - limit})" if len(names) > limit else "")


def verdict_line(c: Comparison) -> str:
    """The verdict in one sentence: held or FAILED, the hard regressions, rows missing in the head, regressions
    (significant ones apart from those on the budget alone), and the underpowered rows only warned."""
    regs = c.regressions
    n_rows = len(c.rows)
    alone = sum(1 for r in regs if r.underpowered or r.budget_only)
    warned = c.budget_warnings
    n_missing = sum(m.rows for m in c.missing)
    if c.failed:
        parts = []
        if c.hard:
            parts.append(f"{len(c.hard)} hard regression{'s' * (len(c.hard) != 1)}")
        if c.missing:
            parts.append(f"{n_missing} item row{'s' * (n_missing != 1)} missing in the head")
        if regs:
            parts.append(f"{len(regs)} regression{'s' * (len(regs) != 1)}"
                         + (f" ({len(regs) - alone} significant, {alone} on the budget alone)" if alone else ""))
        verdict = f"gate FAILED: {', '.join(parts)} ({n_rows} summary rows compared)"
    else:
        verdict = f"gate held: no regression in {n_rows} compared rows"
    if warned:
        verdict += (f"; {len(warned)} underpowered row{'s' * (len(warned) != 1)} with fewer than {c.min_items} "
                    f"items worsened beyond the budget: warning{'s' * (len(warned) != 1)} only")
    return verdict


def render_comparison(c: Comparison, width: int = 100, verbose: bool = False) -> str:
    """The gate's verdict for a person: a verdict line, hard regressions, rows missing in the head, regressions by
    severity (base -> head on the paired items, the difference and its interval, the budget, the test, the three
    items that moved most), then one line each for rows not comparable and items added/removed/changed, the count
    of rows within noise and the three that moved most beyond their budget. Lines wrap at ``width``, never cut.
    Two identical reports give the verdict line alone. ``verbose`` lists every gated row."""
    from ingestaudit.report.changes import change_lines

    regs = c.regressions
    warned = c.budget_warnings
    n_missing = sum(m.rows for m in c.missing)
    lines = _wrap(verdict_line(c), width, "", "  ")
    if c.pipelines.get("paired") and any(a != b for a, b in c.pipelines["paired"]):
        lines += _wrap("pipelines: " + ", ".join(f"{a} -> {b}" for a, b in c.pipelines["paired"]), width, "", "  ")
    for line in change_lines(c.changes, c.corpus):
        lines += _wrap(line, width, "", "  ")
    if c.hard:
        lines.append(f"hard regressions ({len(c.hard)}): items that were ok and now fail")
        for h in c.hard[:MAX_LISTED]:
            what = h.item or "(whole stage)"
            lines += _wrap(f"{h.pipeline} · {what} · {', '.join(h.stages)}: ok -> {h.state}: "
                           f"{' '.join(h.message.split())}", width)
        if len(c.hard) > MAX_LISTED:
            lines.append(f"  … and {len(c.hard) - MAX_LISTED} more (--json lists all)")
    if c.missing:
        lines += _wrap(f"missing in the head ({n_missing} item row{'s' * (n_missing != 1)}): the baseline measured "
                       "them, the head does not report them", width, "", "  ")
        for m in c.missing[:MAX_LISTED]:
            if m.what == "stage":
                text = f"{m.pipeline} · stage {m.name}: every row ({m.rows}; classes {_list(m.classes, 4)})"
            elif m.what == "class":
                text = f"{m.pipeline} · class {m.name}: every row ({m.rows})"
            else:
                text = f"{m.pipeline} · {m.name}: classes {_list(m.classes, 4)}"
            lines += _wrap(text, width)
        if len(c.missing) > MAX_LISTED:
            lines.append(f"  … and {len(c.missing) - MAX_LISTED} more (--json lists all)")
    if c.not_run:
        by_reason: dict[str, list[str]] = {}
        for n in c.not_run:
            by_reason.setdefault(n["reason"], []).append(n["metric"])
        for reason, metrics in sorted(by_reason.items()):
            lines += _wrap(f"not run in the head (not gated): {', '.join(sorted(set(metrics)))}: {reason}", width,
                           "", "  ")
    if regs:
        lines += _wrap(f"regressions, most severe first (head - base on the paired items [{_conf(c)} interval]):",
                       width, "", "  ")
        shown = regs if verbose else regs[:MAX_LISTED]
        for i, r in enumerate(shown, 1):
            lines += _row_lines(f"{i}. ", r, c, width)
        if len(regs) > len(shown):
            lines.append(f"  … and {len(regs) - len(shown)} more regressions (--verbose or --json lists all)")
    if warned:
        lines += _wrap(f"budget warnings (beyond the budget, fewer than {c.min_items} items: [gate] min_items), most "
                       "severe first:", width, "", "  ")
        shown = warned if verbose else warned[:NOISE_SHOWN]
        for r in shown:
            lines += _row_lines("- ", r, c, width)
        if len(warned) > len(shown):
            lines.append(f"  … and {len(warned) - len(shown)} more warnings (--verbose or --json lists all)")
    nc = [r for r in c.rows if r.status == "not_comparable"]
    if nc:
        reasons = sorted({r.reason for r in nc})
        lines += _wrap(f"not comparable ({len(nc)} row{'s' * (len(nc) != 1)}, not gated): {'; '.join(reasons)}",
                       width, "", "  ")
    items = c.items
    if items["added"] or items["removed"] or items["changed"]:
        bits = [f"{len(items[k])} {k} ({_list(items[k])})" for k in ("added", "removed", "changed") if items[k]]
        lines += _wrap("items not paired: " + "; ".join(bits), width, "", "  ")
    if items.get("no_longer_measured"):
        lines += _wrap(f"no longer measured ({len(items['no_longer_measured'])}): "
                       + _list(items["no_longer_measured"], 2), width, "", "  ")
    if c.pipelines["only_base"] or c.pipelines["only_head"]:
        lines += _wrap(f"pipelines not gated: only in the baseline: {', '.join(c.pipelines['only_base']) or '-'};"
                       f" only in the head: {', '.join(c.pipelines['only_head']) or '-'}", width, "", "  ")
    noise, within = c.count("within_noise"), c.count("within_budget")
    improved, unchanged = c.count("improved"), c.count("unchanged")
    if noise or within or improved or (c.failed and unchanged):
        rows_word = "row" if noise + within == 1 else "rows"
        lines += _wrap(f"within noise: {noise + within} {rows_word} ({noise} moved beyond the budget, not "
                       f"significant after Holm at alpha {c.alpha:g} over a family of {c.family}); {improved} "
                       f"improved; {unchanged} unchanged", width, "", "  ")
        moved = c.within_noise
        shown = moved if verbose else moved[:NOISE_SHOWN]
        for r in shown:
            lines += _row_lines("- ", r, c, width)
        if len(moved) > len(shown):
            lines.append(f"  … and {len(moved) - len(shown)} more beyond the budget (--verbose or --json lists all)")
    if verbose:
        lines.append("every compared row:")
        for r in sorted(c.rows, key=lambda r: (STATUSES.index(r.status) if r.status in STATUSES else 99,
                                               r.pipeline, r.doc_class, r.metric, r.label)):
            lines += _wrap(f"{r.status:<14} {r.pipeline} · {r.doc_class} · {r.name}  "
                           f"{g4(_shown_base(r))} -> {g4(_shown_head(r))}  Δ {g4(r.diff, True)}  n={r.n_pairs}"
                           + (f"  p {g4(r.p_value)}" if r.p_value is not None else "")
                           + (f"  p_holm {g4(r.p_holm)}" if r.p_holm is not None else ""), width)
    return "\n".join(lines)


def _conf(c: Comparison) -> str:
    return f"{c.confidence * 100:.4g}%"


def _shown_base(r: RowResult) -> float | None:
    return r.base_paired if r.base_paired is not None else r.base


def _shown_head(r: RowResult) -> float | None:
    return r.head_paired if r.head_paired is not None else r.head


def _test_name(r: RowResult) -> str:
    if r.test.startswith("paired bootstrap"):
        return f"bootstrap, {r.resamples} resamples" if r.resamples else "bootstrap"
    return "Wilcoxon" if r.test.startswith("Wilcoxon") else r.test.split(" (")[0]


def _row_lines(bullet: str, r: RowResult, c: Comparison, width: int) -> list[str]:
    """A gated row in three wrapped parts: what and base -> head (on the paired items; the whole-report values
    too when they differ), the difference, budget and test, and the items that moved most."""
    arrow = direction(r.metric, r.label)
    pipe = r.pipeline if r.pipeline == r.base_pipeline else f"{r.base_pipeline} -> {r.pipeline}"
    b, h = _shown_base(r), _shown_head(r)
    head = f"{bullet}{pipe} · {r.doc_class} · {r.name} {arrow}  {g4(b)} -> {g4(h)}"
    if r.base_paired is not None and (g4(r.base) != g4(b) or g4(r.head) != g4(h)):
        head += f"  (all items: {g4(r.base)} -> {g4(r.head)})"
    ci = f" [{g4(r.diff_low, True)}, {g4(r.diff_high, True)}]" if r.diff_low is not None else ""
    if r.budget_only:
        why = "corpus-level value: budget alone"
    elif r.underpowered:
        why = (f"underpowered ({r.n_pairs} pairs: one-sided p >= {g4(0.5 ** r.n_pairs)}, the bar is "
               f"{g4(c.alpha / c.family)}): budget alone")
    elif r.p_holm is None:
        why = (f"p {g4(r.p_value)} ({_test_name(r)}, {r.n_pairs} pairs, {r.moved} moved): too few moved to reach "
               f"the bar {g4(c.alpha / c.family)}")
    else:
        why = f"p_holm {g4(r.p_holm)} ({_test_name(r)}, {r.n_pairs} pairs, {r.moved} moved)"
    indent = "  " + " " * len(bullet)
    out = _wrap(head, width, "  ", " " * (len(bullet) + 2))
    out += _wrap(f"Δ {g4(r.diff, True)}{ci}  budget {r.budget}  {why}", width, indent, "  ")
    if r.moved_most:
        moved = ", ".join(f"{m.item} {g4(m.base)} -> {g4(m.head)}" for m in r.moved_most)
        out += _wrap(f"moved most: {moved}", width, indent, "  ")
    return out
