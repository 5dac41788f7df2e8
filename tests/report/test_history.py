"""Run history in DuckDB: appending runs, trend tables, the accepted baseline that catches slow drift, and bad
history files (another schema, not DuckDB, locked by another process)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from _reportkit import build, cer_rows, write
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.report.history import (HistoryError, accept, append_run, list_runs, load_report, sparkline,
                                        trends)
from _rows import measurements


def nightly(cer: float, n: int = 30):
    return build(cer_rows("pymupdf", "invoices", [cer] * n) + cer_rows("pymupdf", "letters", [cer / 2] * n))


def test_append_and_reload_a_run(tmp_path):
    db = tmp_path / "h.duckdb"
    report = nightly(0.1)
    assert append_run(db, report, label="abc123", time="2026-01-01T00:00:00+00:00") == 1
    assert append_run(db, nightly(0.11), label="def456", time="2026-01-02T00:00:00+00:00") == 2
    runs = list_runs(db)
    assert [(r.run_id, r.label, r.accepted) for r in runs] == [(1, "abc123", True), (2, "def456", False)]
    loaded, info = load_report(db)  # the last accepted run
    assert info.run_id == 1
    assert loaded.summary == report.summary and measurements(loaded) == measurements(report)
    assert loaded.corpus == report.corpus and loaded.config == report.config


def test_trends_and_the_history_command(tmp_path):
    db = tmp_path / "h.duckdb"
    for night, cer in enumerate([0.10, 0.11, 0.12, 0.125]):
        append_run(db, nightly(cer), label=f"c{night}", time=f"2026-01-0{night + 1}T00:00:00+00:00")
    runs, series = trends(db, metric="extraction.cer", doc_class="invoices")
    assert [t.values for t in series] == [[pytest.approx(v) for v in (0.10, 0.11, 0.12, 0.125)]]
    assert sparkline([0.1, 0.2, None, 0.3]) == "▁▅ █"
    result = CliRunner().invoke(app, ["history", str(db), "--class", "invoices"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("4 runs, oldest first; * = the gate's baseline (the last accepted run)")
    assert next(line for line in lines if line.startswith("series")).split()[:5] == ["series", "c0*", "c1", "c2", "c3"]
    row = next(line for line in lines if "invoices" in line)
    assert "pymupdf · invoices · extraction.cer ↓" in row and row.rstrip().endswith("+0.025")
    assert all(len(line) <= 100 for line in lines)
    narrow = CliRunner().invoke(app, ["history", str(db), "--metric", "extraction"], env={"COLUMNS": "60"})
    assert narrow.exit_code == 0 and all(len(line) <= 60 for line in narrow.stdout.splitlines())


def test_after_accepting_a_second_run_only_the_baseline_is_starred(tmp_path):
    """``history --accept`` (``--force`` for a failed run) keeps the earlier accepted run in the control bands, but
    only the gate's baseline, the last accepted run, is starred: two stars read as two baselines."""
    db = tmp_path / "h.duckdb"
    for night, cer in enumerate([0.10, 0.11, 0.12]):
        append_run(db, nightly(cer), label=f"c{night}", time=f"2026-01-0{night + 1}T00:00:00+00:00")
    assert CliRunner().invoke(app, ["history", str(db), "--accept", "c1", "--force"]).exit_code == 0
    lines = CliRunner().invoke(app, ["history", str(db), "--class", "invoices"], env={"COLUMNS": "100"}).stdout
    heads = next(line for line in lines.splitlines() if line.startswith("series")).split()
    assert heads[:4] == ["series", "c0+", "c1*", "c2"] and " ".join(heads).count("*") == 1
    assert load_report(db)[1].run_id == 2  # the starred run is the one the gate reads


def test_accept_refuses_a_number_that_is_one_runs_id_and_another_runs_label(tmp_path):
    """``history --accept 1`` silently took the run labelled "1" (run 2) over run 1: now it is refused, naming both;
    ``#1`` is always the run id."""
    db = tmp_path / "h.duckdb"
    append_run(db, nightly(0.10), label="a", time="2026-01-01T00:00:00+00:00")
    append_run(db, nightly(0.11), label="1", time="2026-01-02T00:00:00+00:00")
    append_run(db, nightly(0.12), label="c", time="2026-01-03T00:00:00+00:00")
    res = CliRunner().invoke(app, ["history", str(db), "--accept", "1"], env={"COLUMNS": "200"})
    assert res.exit_code == 2
    msg = " ".join(res.output.split())
    assert "'1' is both run 1 (a) and the label of run 2: ambiguous, nothing accepted" in msg
    assert [r.accepted for r in list_runs(db)] == [True, False, False]  # unchanged
    assert CliRunner().invoke(app, ["history", str(db), "--accept", "#2"]).exit_code == 0
    assert [r.accepted for r in list_runs(db)] == [True, True, False]
    assert CliRunner().invoke(app, ["history", str(db), "--accept", "3"]).exit_code == 0  # id 3, no label "3"
    assert [r.accepted for r in list_runs(db)] == [True, True, True]


def test_history_at_80_columns_shows_every_run_of_six(tmp_path):
    """Columns were 10 wide whatever they held: at COLUMNS=80 the stacked view fit (80 - 2 - 20) // 10 = 5 of 6 runs
    and dropped run 2. A column is now as wide as its widest cell (``0.0825``: 6) + 2 = 8: (80 - 2 - 18) // 8 = 7."""
    db = tmp_path / "h.duckdb"
    for i, cer in enumerate([0.10, 0.11, 0.12, 0.13, 0.12, 0.11]):
        append_run(db, nightly(cer), label=f"nightly-2026-01-0{i + 1}", time=f"2026-01-0{i + 1}T00:00:00+00:00")
    res = CliRunner().invoke(app, ["history", str(db)], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert next(line for line in lines if "trend" in line).split()[:6] == ["#1*", "#2", "#3", "#4", "#5", "#6"]
    legend = " ".join(" ".join(lines).split())
    assert all(f"#{i} nightly-2026-01-0{i}" in legend for i in range(1, 7))  # full labels, never cut


def test_the_accepted_baseline_catches_slow_drift(tmp_path):
    db = tmp_path / "h.duckdb"
    append_run(db, nightly(0.100), label="night0")  # the first run is accepted
    for night, cer in enumerate([0.104, 0.108], start=1):
        append_run(db, nightly(cer), label=f"night{night}")
    head = write(nightly(0.112), tmp_path / "night3" / "report.json")
    previous = write(nightly(0.108), tmp_path / "night2" / "report.json")
    step = CliRunner().invoke(app, ["compare", str(previous), str(head)])
    assert step.exit_code == 0, step.output  # night to night: 0.004, within the 0.01 budget
    drift = CliRunner().invoke(app, ["compare", f"history:{db}", str(head)])
    assert drift.exit_code == 1, drift.output  # against the accepted night0: 0.012 > 0.01
    assert "· invoices · extraction.cer ↓  0.1 -> 0.112" in drift.stdout
    accept(db, "night2")
    assert CliRunner().invoke(app, ["compare", f"history:{db}", str(head)]).exit_code == 0
    result = CliRunner().invoke(app, ["history", str(db), "--accept", "night1"])
    assert result.exit_code == 0 and "accepted run 2 (night1)" in result.stdout


def test_accepting_a_run_whose_gate_failed_needs_force(tmp_path):
    db = tmp_path / "h.duckdb"
    append_run(db, nightly(0.100), label="good", verdict="pass")
    append_run(db, nightly(0.200), label="bad", verdict="fail")
    refused = CliRunner().invoke(app, ["history", str(db), "--accept", "last"])
    assert refused.exit_code == 2
    said = " ".join(refused.output.split())
    assert "run 2 (bad) failed its gate" in said and "add --force to accept it anyway" in said
    assert [r.accepted for r in list_runs(db)] == [True, False]  # nothing changed
    forced = CliRunner().invoke(app, ["history", str(db), "--accept", "last", "--force"])
    assert forced.exit_code == 0 and "accepted run 2 (bad)" in forced.stdout and "gate FAILED" in forced.stdout
    assert [r.accepted for r in list_runs(db)] == [True, True]
    with pytest.raises(HistoryError, match="failed its gate"):
        accept(db, "bad")  # the library refuses too


def test_a_file_of_another_schema_is_refused_and_left_alone(tmp_path):
    import duckdb

    foreign = tmp_path / "other.duckdb"
    con = duckdb.connect(str(foreign))
    con.execute("CREATE TABLE sales (x INTEGER)")
    con.close()
    before = foreign.read_bytes()
    with pytest.raises(HistoryError, match="not an ingestaudit history"):
        append_run(foreign, nightly(0.1))
    assert foreign.read_bytes() == before
    text = tmp_path / "notes.duckdb"
    text.write_text("hello")
    with pytest.raises(HistoryError, match="not a DuckDB history file"):
        append_run(text, nightly(0.1))
    old = tmp_path / "old.duckdb"
    con = duckdb.connect(str(old))
    con.execute("CREATE TABLE ingestaudit_meta (key VARCHAR, value VARCHAR)")
    con.execute("INSERT INTO ingestaudit_meta VALUES ('schema', 'ingestaudit-history-0')")
    con.close()
    result = CliRunner().invoke(app, ["history", str(old)])
    assert result.exit_code == 2 and "history schema 'ingestaudit-history-0'" in result.output.replace("\n", " ")


def test_a_history_locked_by_another_process_is_exit_2(tmp_path, monkeypatch):
    monkeypatch.setattr("ingestaudit.report.history.LOCK_WAIT_S", 0.3)  # the lock is retried that long
    db = tmp_path / "h.duckdb"
    append_run(db, nightly(0.1))
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(db)!r}); "
                               "print('ready', flush=True); time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(HistoryError, match="locked by another process"):
            append_run(db, nightly(0.1))
        result = CliRunner().invoke(app, ["history", str(db)], env={"COLUMNS": "200"})
        assert result.exit_code == 2 and "locked by another process" in result.output
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)
    assert len(list_runs(db)) == 1  # nothing was added


def test_history_items_names_the_documents_behind_a_drift(tmp_path):
    from _reportkit import Row

    db = tmp_path / "h.duckdb"
    for night, extra in enumerate([0.0, 0.01, 0.02]):  # d03 drifts up by 0.01 a night; d05 fails on the last night
        rows = [Row(f"invoices/d{i:02d}", "invoices", "pymupdf", "extraction.cer", 0.1 + extra * (i == 3),
                    (0.1 + extra * (i == 3)) * 100, 100) for i in range(6) if not (night == 2 and i == 5)]
        if night == 2:
            rows.append(Row("invoices/d05", "invoices", "pymupdf", "extraction.cer", None, state="error"))
        append_run(db, build(rows), label=f"n{night}", time=f"2026-01-0{night + 1}T00:00:00+00:00")
    result = CliRunner().invoke(app, ["history", str(db), "--items", "--metric", "extraction.cer"],
                                env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert " ".join(" ".join(lines[:2]).split()).startswith("extraction.cer ↓ per item over 3 runs; * = the gate's baseline, + = "
                                          "accepted earlier; change = last run - run 1 (n0)")
    head = next(i for i, line in enumerate(lines) if line.startswith("item"))
    assert lines[head].split() == ["item", "n0*", "n1", "n2", "change"]
    assert lines[head + 1].split() == ["pymupdf", "·", "invoices/d05", "0.1", "0.1", "error"]  # failed: first
    assert lines[head + 2].split() == ["pymupdf", "·", "invoices/d03", "0.1", "0.11", "0.12", "+0.02"]
    assert lines[head + 3].split()[-1] == "0"
    bad = CliRunner().invoke(app, ["history", str(db), "--items"])
    assert bad.exit_code == 2 and "--items needs --metric" in bad.output


def test_series_without_any_value_are_left_out_of_the_trends(tmp_path):
    from _reportkit import Row

    db = tmp_path / "h.duckdb"
    rows = cer_rows("p", "c", [0.1] * 3) + [Row(f"c/d{i:02d}", "c", "p", "tables.teds", None, state="no_reference")
                                            for i in range(3)]
    append_run(db, build(rows))
    _, series = trends(db)
    assert {t.metric for t in series} == {"extraction.cer"}
