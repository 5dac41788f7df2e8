"""The baseline a run or ``compare`` is gated against: a report.json, or ``history:DB`` (the history's last accepted
run, `ingestaudit.report.history.HISTORY_PREFIX`)."""

from __future__ import annotations

from pathlib import Path

from ingestaudit.report.schema import Report


def read_baseline(spec: str, first_night: bool = False) -> tuple[Report | None, str]:
    """The baseline ``spec`` names and its label: ``(report, label)``; the label is ``spec`` for a report.json and
    ``"DB run N (LABEL)"`` for a history's run. With ``first_night`` a history file that does not exist yet or holds
    no run gives ``(None, "")`` (the run is not gated).

    Raises:
        ingestaudit.report.history.HistoryError: ``history:DB`` is not a usable history (or has no accepted run).
        ingestaudit.report.schema.ReportError: the report.json is unreadable, invalid, or its store or summary
            does not check (`ingestaudit.report.integrity.read_checked_report`).
    """
    from ingestaudit.report.history import HISTORY_PREFIX, is_empty, load_report
    from ingestaudit.report.integrity import read_checked_report

    if spec.startswith(HISTORY_PREFIX):
        path = Path(spec[len(HISTORY_PREFIX):])
        if first_night and is_empty(path):
            return None, ""
        rep, info = load_report(path)
        return rep, f"{path} run {info.run_id}" + (f" ({info.label})" if info.label else "")
    return read_checked_report(Path(spec)), spec  # its store and summary checked too


def pipeline_names(report: Report) -> list[str]:
    """The pipelines of a baseline report: those it lists, else (an older report) those of its summary rows,
    sorted."""
    return [p.name for p in report.pipelines] or sorted({r.pipeline for r in report.summary})
