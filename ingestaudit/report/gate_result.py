"""The gate's result as data (issue 26): the ``gate`` object of report.json, ``gate.json`` in the report folder,
and JUnit XML for CI systems (``--junit PATH``).

`GateResult` is built from an `ingestaudit.report.compare.Comparison` and the control bands
(`ingestaudit.report.bands`): ``verdict`` is ``pass``, ``fail`` or ``first_run`` (``run --baseline history:DB`` on
a history with no run yet: nothing to gate against). ``message`` holds the first lines a person reads (the verdict
sentence, what changed in the configuration and the corpus).

JUnit: one ``testsuite`` per class (``__all__`` included), one ``testcase`` per key metric x pipeline the gate
compared (`key_rows`: never a pipeline only in the head or a not comparable row) and per regressed row, with a ``failure`` element (its message the
row's change, interval, budget and test) for each regression; hard regressions and rows missing in the head are
testcases of a ``gate`` suite, each failed. Attributes follow the JUnit schema CI systems read (Jenkins'
junit-10.xsd): ``testsuites``/``testsuite`` carry ``name``, ``tests``, ``failures``, ``errors``, ``skipped``;
``testcase`` carries ``name`` and ``classname``; ``failure`` carries ``message`` and ``type``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ingestaudit.report.gate_schema import BandRow, ConfigChange, GateResult, GateRow

GATE_FILE = "gate.json"
"""The gate result's file in the report folder."""


def _row(r: Any, kind: str) -> GateRow:
    from ingestaudit.report.tables import g4

    base = r.base_paired if r.base_paired is not None else r.base
    head = r.head_paired if r.head_paired is not None else r.head
    ci = f" [{g4(r.diff_low, True)}, {g4(r.diff_high, True)}]" if r.diff_low is not None else ""
    test = {"significant": f"p_holm {g4(r.p_holm)} ({r.n_pairs} pairs)", "budget_alone": "budget alone",
            "budget_warning": "budget alone, too few items: warning"}.get(kind, "")
    message = (f"{r.pipeline} · {r.doc_class} · {r.name}: {g4(base)} -> {g4(head)}, Δ {g4(r.diff, True)}{ci}, "
               f"budget {r.budget}" + (f", {test}" if test else "") + (f": {r.reason}" if r.reason else ""))
    return GateRow(pipeline=r.pipeline, base_pipeline=r.base_pipeline, doc_class=r.doc_class, metric=r.metric,
                   label=r.label, kind=kind, base=base, head=head, diff=r.diff, diff_low=r.diff_low,
                   diff_high=r.diff_high, budget=r.budget, p_holm=r.p_holm, n=r.n_pairs, reason=r.reason,
                   message=message)


@dataclass(frozen=True)
class BandCheck:
    """A head value against its band: ``side`` is ``"worse"`` or ``"better"`` when outside (by the metric's
    direction), ``""`` inside."""

    pipeline: str
    doc_class: str
    metric: str
    label: str
    value: float
    band: Any  # ingestaudit.report.bands.Band
    side: str


def check_bands(history: Any, head: Any, window: int) -> list[BandCheck]:
    """Each key metric x pipeline x class of ``head`` (`ingestaudit.report.tables.headline_keys`) with a headline
    value, against the band of its last ``window`` accepted runs in ``history`` (keys with fewer than `MIN_RUNS`
    values are left out). Sorted: outside first, then by pipeline, class, metric.

    Raises:
        ingestaudit.report.history.HistoryError: the history cannot be read.
    """
    from ingestaudit.report.bands import xmr_band
    from ingestaudit.report.history import accepted_series
    from ingestaudit.report.stats import orientation_of
    from ingestaudit.report.tables import all_headline_keys, headline_value

    keys = set(all_headline_keys(head.summary))
    series = accepted_series(history, window, sorted(keys))
    out = []
    for r in head.summary:
        value = headline_value(r)
        band = xmr_band(series.get((r.pipeline, r.doc_class, r.metric, r.label), []))
        if (r.metric, r.label) not in keys or value is None or band is None:
            continue
        side = ""
        if band.outside(value):
            orient = orientation_of(r.metric, r.label)
            side = "worse" if orient.badness(value) > orient.badness(band.center) else "better"
        out.append(BandCheck(r.pipeline, r.doc_class, r.metric, r.label, value, band, side))
    return sorted(out, key=lambda c: (not c.side, c.pipeline, c.doc_class, c.metric, c.label))


def band_rows(checks: Sequence[Any], mode: str) -> list[BandRow]:
    """`ingestaudit.report.bands.BandCheck` s as result rows; with ``mode`` ``"fail"`` a value outside on the
    worse side fails the gate."""
    return [BandRow(pipeline=c.pipeline, doc_class=c.doc_class, metric=c.metric, label=c.label, head=c.value,
                    center=c.band.center, mean_moving_range=c.band.mr, low=c.band.low, high=c.band.high,
                    runs=c.band.runs, outside=c.side, fails=mode == "fail" and c.side == "worse") for c in checks]


def gate_result(c: Any, bands: Sequence[BandRow] = (), message: Sequence[str] = ()) -> GateResult:
    """The result of comparison ``c`` (`ingestaudit.report.compare.Comparison`) with its ``bands``: ``fail`` when
    the comparison failed or a band fails."""
    from dataclasses import asdict

    regs = [_row(r, "budget_alone" if r.underpowered or r.budget_only else "significant") for r in c.regressions]
    improved = sorted((r for r in c.rows if r.status == "improved"),
                      key=lambda r: (r.pipeline, r.doc_class, r.metric, r.label))
    nc = sorted((r for r in c.rows if r.status == "not_comparable"),
                key=lambda r: (r.pipeline, r.doc_class, r.metric, r.label))
    failed = c.failed or any(b.fails for b in bands)
    return GateResult(verdict="fail" if failed else "pass", base=c.base_label, head=c.head_label,
                      message=list(message), regressions=regs, improvements=[_row(r, "improved") for r in improved],
                      not_comparable=[_row(r, "not_comparable") for r in nc],
                      config_changes=[ConfigChange(**ch) for ch in c.changes], corpus=dict(c.corpus),
                      budgets=[_row(r, "budget_warning") for r in c.budget_warnings], bands=list(bands),
                      hard_regressions=[asdict(h) for h in c.hard], missing_in_head=[asdict(m) for m in c.missing],
                      not_run_in_head=list(c.not_run),
                      min_items=c.min_items)


def first_run_result(base: str, head: str) -> GateResult:
    """The result of a run that starts its history: nothing to gate against."""
    return GateResult(verdict="first_run", base=base, head=head,
                      message=[f"first run: {base} holds no run yet, so this run is not gated"])


def junit_xml(result: GateResult, key_rows: Sequence[tuple[str, str, str, str]]) -> str:
    """The result as JUnit XML (see the module docstring). ``key_rows``: the gated key rows, ``(pipeline, class,
    metric, label)``, each a testcase; a regressed row that is not among them gets its own."""
    import xml.etree.ElementTree as ET

    from ingestaudit.report.schema import ALL_CLASSES

    failing = {(r.pipeline, r.doc_class, r.metric, r.label): r for r in result.regressions}
    cases: dict[str, dict[tuple[str, str, str, str], GateRow | None]] = {}
    for key in [*key_rows, *failing]:
        cases.setdefault(key[1], {})[key] = failing.get(key)
    root = ET.Element("testsuites", name="ingestaudit gate")
    total = fails = 0
    for cls in sorted(cases, key=lambda k: (k == ALL_CLASSES, k)):
        suite = ET.SubElement(root, "testsuite", name=cls)
        n_fail = 0
        for (pipe, _, metric, label), reg in sorted(cases[cls].items(), key=lambda kv: kv[0]):
            case = ET.SubElement(suite, "testcase", name=f"{pipe} · {metric}" + (f"[{label}]" if label else ""),
                                 classname=f"ingestaudit.{cls}")
            if reg is not None:
                ET.SubElement(case, "failure", message=reg.message, type=f"regression ({reg.kind})").text = \
                    reg.message
                n_fail += 1
        _counts(suite, len(cases[cls]), n_fail)
        total, fails = total + len(cases[cls]), fails + n_fail
    other = [(f"{h['pipeline']} · {h['item'] or '(whole stage)'} · {', '.join(h['stages'])}",
              f"ok -> {h['state']}: {h['message']}", "hard regression") for h in result.hard_regressions]
    other += [(f"{m['pipeline']} · {m['what']} {m['name']}", f"{m['rows']} rows missing in the head",
               "missing in the head") for m in result.missing_in_head]
    other += [(f"{b.pipeline} · {b.doc_class} · {b.metric}", f"{b.head:.4g} outside its band "
               f"[{b.low:.4g}, {b.high:.4g}]", "band") for b in result.bands if b.fails]
    if other:
        suite = ET.SubElement(root, "testsuite", name="gate")
        for name, message, kind in other:
            case = ET.SubElement(suite, "testcase", name=name, classname="ingestaudit.gate")
            ET.SubElement(case, "failure", message=message, type=kind).text = message
        _counts(suite, len(other), len(other))
        total, fails = total + len(other), fails + len(other)
    _counts(root, total, fails)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _counts(element: Any, tests: int, failures: int) -> None:
    element.set("tests", str(tests))
    element.set("failures", str(failures))
    element.set("errors", "0")
    element.set("skipped", "0")


def evaluate_gate(base: Any, head: Any, *, budgets: Any, settings: Any, base_label: str, head_label: str,
                  maps: Sequence[str] = (), bands_from: Any = None) -> tuple[Any, GateResult]:
    """Gate ``head`` against ``base`` (`ingestaudit.report.compare.compare_reports` with ``settings.min_items``)
    and its key values against their control bands from the history ``bands_from`` (a path, or None for no
    bands). Returns ``(comparison, result)``.

    Raises:
        ingestaudit.report.compare.GateError: as `compare_reports`.
        ingestaudit.report.history.HistoryError: ``bands_from`` cannot be read.
    """
    from ingestaudit.report.changes import change_lines
    from ingestaudit.report.compare import compare_reports, verdict_line

    comparison = compare_reports(base, head, budgets=budgets, maps=maps, base_label=base_label,
                                 head_label=head_label, min_items=settings.min_items)
    from ingestaudit.report.history import HistoryError

    bands: list[BandRow] = []
    note = ""
    try:  # the bands add to the gate: a history locked or damaged now leaves them out, said, not the verdict
        if bands_from is not None:
            bands = band_rows(check_bands(bands_from, head, settings.band_window), settings.bands)
    except HistoryError as exc:
        note = f"control bands not checked: {exc}"
    message = [verdict_line(comparison), *change_lines(comparison.changes, comparison.corpus)]
    result = gate_result(comparison, bands, message)
    result.bands_note = note
    return comparison, result


def band_lines(result: GateResult) -> list[str]:
    """The control bands a head value fell outside, one line each (a failure or a warning), and why none was
    checked when the history could not be read; nothing when all are inside."""
    out = [result.bands_note] if result.bands_note else []
    for b in result.bands:
        if b.outside:
            name = b.metric + (f"[{b.label}]" if b.label else "")
            out.append(f"band {'FAILED' if b.fails else 'warning'}: {b.pipeline} · {b.doc_class} · {name} "
                       f"{b.head:.4g} is outside its control band [{b.low:.4g}, {b.high:.4g}] (center "
                       f"{b.center:.4g}, last {b.runs} accepted runs; {b.outside} than usual)")
    return out


NOT_GATED = ("not_comparable", "no_pairs")
"""`ingestaudit.report.compare.RowResult` statuses of rows that were paired but not gated: no JUnit testcase."""


def key_rows(comparison: Any, head: Any) -> list[tuple[str, str, str, str]]:
    """The head's key metric rows (`ingestaudit.report.tables.headline_keys`) that ``comparison``
    (`ingestaudit.report.compare.Comparison`, or None: nothing was gated) actually gated: JUnit's testcases. A row
    of a pipeline only in the head, a not comparable row, a row without pairs and a row missing in the head are no
    testcase (the last is a failed one of the ``gate`` suite)."""
    from ingestaudit.report.tables import all_headline_keys

    if comparison is None:
        return []
    keys = set(all_headline_keys(head.summary))
    return sorted({(r.pipeline, r.doc_class, r.metric, r.label) for r in comparison.rows
                   if (r.metric, r.label) in keys and r.status not in NOT_GATED})
