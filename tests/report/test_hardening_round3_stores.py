"""Issue 30, points 4 and 5: history files and report stores a user hands back to the tool. Each reproduction of the
hostile-input trial, rebuilt under other names and sizes: the exit code, the message naming the file, the file left
as it was, no traceback, no connection attempt."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from _reportkit import build, cer_rows, write
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.report.history import append_run, list_runs
from ingestaudit.report.schema import StoreRef
from ingestaudit.store import write_measurements

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "400"})


def flat(result) -> str:
    return " ".join(result.output.split())


def nightly(cer: float, n: int = 7):
    return build(cer_rows("tess", "scans", [cer] * n) + cer_rows("tess", "memos", [cer / 2] * (n + 2)))


def snapshot(folder: Path) -> dict[str, str]:
    """Every file of ``folder`` with its SHA-256: a file changed, added or removed shows."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


# --- point 4: history files ------------------------------------------------------------------------------------------

def sqlite_file(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE runs (id INTEGER, label TEXT)")
    con.execute("INSERT INTO runs VALUES (1, 'n1')")
    con.commit()
    con.close()
    return path


def test_every_duckdb_connection_is_opened_by_one_offline_function():
    from ingestaudit.db import connect

    con = connect()
    try:
        settings = con.execute("SELECT current_setting('autoinstall_known_extensions'), "
                               "current_setting('autoload_known_extensions'), "
                               "current_setting('allow_community_extensions')").fetchone()
    finally:
        con.close()
    assert settings == (False, False, False)
    import ast

    opened = []  # calls duckdb.connect / sql / query / execute anywhere in the package
    for path in sorted((ROOT / "ingestaudit").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "duckdb"
                    and node.func.attr in ("connect", "sql", "query", "execute", "read_parquet")):
                opened.append(f"{path.relative_to(ROOT)}:{node.func.attr}")
    assert opened == ["ingestaudit/db.py:connect"]


def test_a_sqlite_file_as_the_history_is_exit_2_and_duckdb_never_reaches_the_network(tmp_path):
    db = sqlite_file(tmp_path / "nightly-runs.sqlite3")
    before = snapshot(tmp_path)
    for args in (["history", str(db)], ["history", str(db), "--accept", "last"], ["compare", f"history:{db}", str(db)]):
        result = cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert f"{db}: not a DuckDB history file (a SQLite database); nothing was changed" in flat(result), args
        assert "Traceback" not in result.output and "download" not in result.output
    # DuckDB itself, given the file behind the sniff's back: an "install it first" error, not a download
    import duckdb

    from ingestaudit.db import connect

    with pytest.raises(duckdb.Error, match="Install it first"):
        connect(str(db))
    assert snapshot(tmp_path) == before


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")
def test_no_connection_attempt_under_strace_for_a_sqlite_history(tmp_path):
    db = sqlite_file(tmp_path / "runs.db")
    log = tmp_path / "connects.txt"
    script = ("import sys\nfrom ingestaudit.db import connect\ntry:\n    connect(sys.argv[1])\nexcept Exception as e:\n"
              "    print('duckdb:', str(e).splitlines()[0])\n"
              "from ingestaudit.cli import main\nsys.argv = ['ingestaudit', 'history', sys.argv[1]]\nmain()\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "400"}
    proc = subprocess.run(["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(log), sys.executable, "-c", script,
                           str(db)], capture_output=True, text=True, env=env, timeout=120)
    if not log.exists() or "ptrace" in proc.stderr.lower():
        pytest.skip(f"strace cannot trace here: {proc.stderr[:200]}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "duckdb: IO Error: Extension" in proc.stdout and "sqlite_scanner.duckdb_extension\" not found" in proc.stdout
    assert f"{db}: not a DuckDB history file (a SQLite database)" in " ".join(proc.stderr.split())
    calls = log.read_text().splitlines()
    network = [c for c in calls if "AF_INET" in c]  # AF_INET and AF_INET6 (a DNS lookup would show as AF_INET)
    assert network == [], network


def damaged_copies(folder: Path) -> dict[str, Path]:
    """A real history (3 runs) and copies of it: truncated to a third, a bit flipped in every 997th byte past the
    header, a Parquet file, an empty file, a text file."""
    folder.mkdir()
    good = folder / "good.duckdb"
    for night in range(3):
        append_run(good, nightly(0.1 + night / 100, n=40), label=f"c{night}")
    data = good.read_bytes()
    flipped = bytearray(data)
    for i in range(3 * 4096, len(flipped), 997):
        flipped[i] ^= 0xFF
    out = {"truncated": data[: len(data) // 3], "bitflips": bytes(flipped), "empty": b"",
           "text": b"runs: 3\nlast: c2\n"}
    paths = {name: folder / f"{name}-history.duckdb" for name in out}
    for name, raw in out.items():
        paths[name].write_bytes(raw)
    import pyarrow as pa
    import pyarrow.parquet as pq

    paths["parquet"] = folder / "parquet-history.duckdb"
    pq.write_table(pa.table({"run_id": [1, 2]}), paths["parquet"])
    good.unlink()
    return paths


@pytest.mark.parametrize("kind, message", [
    ("truncated", "a damaged DuckDB history file (IO Error: Could not read enough bytes"),
    ("bitflips", "not a readable DuckDB history file (Corrupt database file: computed checksum"),
    ("empty", "not a DuckDB history file (an empty file; remove it and the next run starts the history)"),
    ("text", "not a DuckDB history file (no DuckDB header)"),
    ("parquet", "not a DuckDB history file (no DuckDB header)"),
])
def test_a_damaged_or_foreign_history_is_named_as_such_not_locked_and_left_alone(tmp_path, kind, message):
    folder = tmp_path / "hist"
    db = damaged_copies(folder)[kind]
    before = snapshot(folder)
    head = write(nightly(0.1), tmp_path / "head" / "report.json")
    for args in (["history", str(db)], ["history", str(db), "--items", "--metric", "extraction.cer"],
                 ["history", str(db), "--accept", "last"], ["compare", f"history:{db}", str(head)],
                 ["report", str(head), "--history", str(db)]):
        result = cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert f"{db}: {message}" in flat(result), (args, result.output)
        assert "locked" not in result.output and "Traceback" not in result.output
    assert snapshot(folder) == before  # the file untouched, no .wal beside it


def test_run_refuses_a_damaged_history_before_the_audit(tmp_path):
    from test_run_outputs import make_corpus

    corpus = make_corpus(tmp_path / "corpus")
    folder = tmp_path / "hist"
    db = damaged_copies(folder)["truncated"]
    before = snapshot(folder)
    out = tmp_path / "out"
    result = cli("run", str(corpus), "--parser", "pymupdf", "--stage", "extraction", "--out", str(out),
                 "--history", str(db))
    assert result.exit_code == 2, result.output
    assert f"{db}: a damaged DuckDB history file" in flat(result)
    assert not out.exists() and snapshot(folder) == before


def holder(db: Path, seconds: float) -> subprocess.Popen:
    """Another process holding ``db``'s lock for ``seconds`` (it prints ``ready`` once it holds it)."""
    proc = subprocess.Popen([sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(db)!r}); "
                             f"print('ready', flush=True); time.sleep({seconds}); c.close()"],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_a_lock_held_for_a_moment_is_waited_for(tmp_path, monkeypatch):
    monkeypatch.setattr("ingestaudit.report.history.LOCK_WAIT_S", 60.0)
    db = tmp_path / "shared.duckdb"
    append_run(db, nightly(0.2), label="first")
    other = holder(db, 1.0)
    try:
        assert append_run(db, nightly(0.3), label="second") == 2  # waited, then appended
    finally:
        other.kill()
        other.wait()
    assert [r.label for r in list_runs(db)] == ["first", "second"]


def test_a_run_that_loses_the_history_lock_after_the_audit_keeps_its_report_and_exits_4(tmp_path, monkeypatch):
    from test_run_outputs import make_corpus

    from ingestaudit.report import history

    corpus = make_corpus(tmp_path / "corpus")
    db = tmp_path / "runs.duckdb"
    append_run(db, nightly(0.1), label="n0")
    monkeypatch.setattr(history, "LOCK_WAIT_S", 0.4)
    check = history.check_history
    taken: list[subprocess.Popen] = []

    def check_then_lose_the_lock(path: Path) -> None:
        check(path)  # the check before the audit passes; then another process takes the lock for good
        taken.append(holder(path, 120))

    monkeypatch.setattr(history, "check_history", check_then_lose_the_lock)
    out = tmp_path / "nightly-out"
    try:
        result = cli("run", str(corpus), "--parser", "pymupdf", "--stage", "extraction", "--out", str(out),
                     "--history", str(db), "--label", "n1")
    finally:
        for proc in taken:
            proc.kill()
            proc.wait()
    assert len(taken) == 1
    assert result.exit_code == 4, result.output
    text = flat(result)
    assert f"{db}: locked by another process" in text and "waited 0.4 s" in text
    assert f"the run was not recorded in the history; its report in {out} was written" in text
    assert (out / "report.json").is_file() and (out / "measurements.parquet").is_file()
    assert [r.label for r in list_runs(db)] == ["n0"]


APPENDER = """
import sys
import time
sys.path.insert(0, {kit!r})
from pathlib import Path
from _reportkit import build, cer_rows
from ingestaudit.report.history import append_run
db, who, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
print("ready", flush=True)
while not go.exists():  # both processes start appending at the same moment
    time.sleep(0.01)
for night in range(4):
    report = build(cer_rows("tess", "scans", [0.1 + night / 100] * 23))
    verdict = "pass" if (who == "east") == (night % 2 == 0) else "fail"
    append_run(db, report, label=f"{{who}}-{{night}}", verdict=verdict)
"""


def test_two_processes_appending_to_one_history_lose_no_row(tmp_path):
    """Each run is appended with its gate verdict (east: pass on even nights, west on odd ones): every row and every
    verdict is stored."""
    db = tmp_path / "shared.duckdb"
    script = APPENDER.format(kit=str(Path(__file__).parent))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", script, str(db), who, str(go)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for who in ("east", "west")]
    assert [p.stdout.readline().strip() for p in procs] == ["ready", "ready"]
    go.touch()
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    runs = list_runs(db)
    assert sorted(r.label for r in runs) == sorted(f"{w}-{n}" for w in ("east", "west") for n in range(4))
    assert [r.run_id for r in runs] == list(range(1, 9))
    assert {r.label: r.verdict for r in runs} == {f"{w}-{n}": "pass" if (w == "east") == (n % 2 == 0) else "fail"
                                                 for w in ("east", "west") for n in range(4)}
    from ingestaudit.db import connect

    con = connect(str(db), read_only=True)
    try:
        per_run = con.execute("SELECT run_id, count(*) FROM measurements GROUP BY run_id ORDER BY run_id").fetchall()
        summary = con.execute("SELECT count(DISTINCT run_id), count(*) FROM summary").fetchone()
    finally:
        con.close()
    assert per_run == [(i, 23) for i in range(1, 9)]  # 23 rows of every run, none lost, none doubled
    assert summary == (8, 16)  # per run: scans and __all__ of extraction.cer


# --- point 5: stores and reports as input ----------------------------------------------------------------------------

def stored_report(folder: Path, n: int = 9) -> Path:
    """A schema-2.1 report.json with its measurements.parquet beside it: ``n`` scans and ``n + 3`` memos."""
    report = build(cer_rows("tess", "scans", [0.05 * (i % 4) for i in range(n)])
                   + cer_rows("tess", "memos", [0.2] * (n + 3), den=[40.0 + i for i in range(n + 3)]))
    folder.mkdir(parents=True)
    rows = report.measurements
    sha = write_measurements(rows, folder / "measurements.parquet")
    report.measurements = StoreRef(file="measurements.parquet", sha256=sha, rows=len(rows))
    return write(report, folder / "report.json")


def replace_store(report_json: Path, table_or_bytes, *, rows: int | None = None) -> None:
    """Put another store beside ``report_json`` and give report.json its SHA-256 (and ``rows`` when given), as a
    user who edits both would."""
    import pyarrow.parquet as pq

    store = report_json.parent / "measurements.parquet"
    if isinstance(table_or_bytes, bytes):
        store.write_bytes(table_or_bytes)
    else:
        pq.write_table(table_or_bytes, store)
    raw = json.loads(report_json.read_text())
    raw["measurements"]["sha256"] = hashlib.sha256(store.read_bytes()).hexdigest()
    if rows is not None:
        raw["measurements"]["rows"] = rows
    report_json.write_text(json.dumps(raw))


def store_table(report_json: Path):
    import pyarrow.parquet as pq

    return pq.read_table(report_json.parent / "measurements.parquet")


def gated_both_ways(tmp_path: Path, bad: Path) -> list:
    """``compare`` with the bad report as the baseline and as the head, and ``report`` of it."""
    good = stored_report(tmp_path / "good-night")
    return [cli("compare", str(bad), str(good)), cli("compare", str(good), str(bad)), cli("report", str(bad))]


def assert_refused(results: list, *fragments: str) -> None:
    for result in results:
        assert result.exit_code == 2, result.output
        text = flat(result)
        for fragment in fragments:
            assert fragment in text, (fragment, result.output)
        assert "Traceback" not in result.output


def test_a_zero_row_store_with_a_matching_sha_never_passes_the_gate(tmp_path):
    bad = stored_report(tmp_path / "emptied", n=11)
    empty = store_table(bad).slice(0, 0)
    replace_store(bad, empty)  # rows still says 25
    store = bad.parent / "measurements.parquet"
    assert_refused(gated_both_ways(tmp_path, bad),
                   f"{store}: the store has 0 rows; report.json's measurements.rows says 25")
    replace_store(bad, empty, rows=0)  # and the row count edited too: the summary no longer describes the rows
    assert_refused(gated_both_ways(tmp_path / "again", bad),
                   f"{bad}: summary[0] (tess · memos · extraction.cer): state counts differ (summary vs rows: ok 14 "
                   f"vs 0) in {store}")
    raw = json.loads(bad.read_text())
    raw["summary"] = []  # a consistent but empty baseline: nothing to gate against, never a pass
    bad.write_text(json.dumps(raw))
    result = cli("compare", str(bad), str(stored_report(tmp_path / "head")))
    assert result.exit_code == 2, result.output
    assert f"{bad}: nothing to gate against: the baseline has no summary row for tess (and 0 measurement rows)" in \
        flat(result)


def test_a_store_whose_value_column_holds_strings_is_exit_2(tmp_path):
    import pyarrow as pa

    bad = stored_report(tmp_path / "strings", n=5)
    table = store_table(bad)
    values = pa.array([f"{v:.2f}" for v in table.column("value").to_pylist()], pa.string())
    replace_store(bad, table.set_column(table.schema.get_field_index("value"), "value", values))
    store = bad.parent / "measurements.parquet"
    assert_refused(gated_both_ways(tmp_path, bad),
                   f"{store}: column 'value' holds string; a measurement store's holds double")


def test_a_store_that_is_not_parquet_is_exit_2(tmp_path):
    bad = stored_report(tmp_path / "notparquet", n=6)
    replace_store(bad, b"item,value\nscans/d00,0.1\n" * 50)
    store = bad.parent / "measurements.parquet"
    assert_refused(gated_both_ways(tmp_path, bad), f"{store}: not a Parquet measurement store")


@pytest.mark.parametrize("column, value, fragment", [
    ("state", "great", "state 'great' is not one of ok, no_reference, no_prediction, error, skipped"),
    ("denominator", -3.0, "denominator -3 is negative"),
    ("value", float("inf"), "value inf is not a finite number"),
    ("detail", "[1, 2]", "detail is not a JSON object (JSON ARRAY)"),
])
def test_a_store_row_outside_the_contract_is_named_by_its_row(tmp_path, column, value, fragment):
    import pyarrow as pa

    bad = stored_report(tmp_path / "edited", n=8)
    table = store_table(bad)
    cells = table.column(column).to_pylist()
    cells[5] = value  # row 6 in file order: a memo (memos sort before scans)
    at = table.schema.get_field_index(column)
    replace_store(bad, table.set_column(at, column, pa.array(cells, table.schema.field(column).type)))
    store = bad.parent / "measurements.parquet"
    assert_refused(gated_both_ways(tmp_path, bad),
                   f"{store}: row 6 (item 'memos/d05', pipeline 'tess', metric 'extraction.cer'): {fragment}")


@pytest.mark.parametrize("field, value, fragment", [
    ("n_docs", -5, "summary.0.n_docs: Input should be greater than or equal to 0"),
    ("micro", "1e999", "summary.0.micro: Input should be a finite number"),
    ("denominator", -1.0, "summary.0.denominator: Input should be greater than or equal to 0"),
    ("states", {"ok": 14, "great": 1}, "summary.0.states.great.[key]: Value error, state 'great' is not one of"),
])
def test_a_summary_outside_the_contract_is_exit_2(tmp_path, field, value, fragment):
    bad = stored_report(tmp_path / "summary", n=10)
    raw = json.loads(bad.read_text())
    raw["summary"][0][field] = "@@" if value == "1e999" else value
    bad.write_text(json.dumps(raw).replace('"@@"', "1e999"))  # a JSON number too large for a float
    assert_refused(gated_both_ways(tmp_path, bad), f"{bad}: {fragment}")


def test_a_summary_that_does_not_describe_its_store_is_exit_2(tmp_path):
    bad = stored_report(tmp_path / "boasting", n=6)
    store = bad.parent / "measurements.parquet"
    raw = json.loads(bad.read_text())
    row = raw["summary"][1]  # tess · scans · extraction.cer: 6 rows of 0, 0.05, 0.1, 0.15, 0, 0.05 (den 100)
    assert (row["doc_class"], row["micro"], row["n_docs"]) == ("scans", pytest.approx(0.35 / 6), 6)
    row["micro"] = 0.01  # a better number than the rows give
    bad.write_text(json.dumps(raw))
    assert_refused(gated_both_ways(tmp_path, bad), f"{bad}: summary[1] (tess · scans · extraction.cer): micro is "
                   f"0.01 but the rows give 0.0583333333333 in {store}")
    row["micro"], row["n_docs"] = 0.35 / 6, 60
    bad.write_text(json.dumps(raw))
    assert_refused(gated_both_ways(tmp_path / "n", bad), f"{bad}: summary[1] (tess · scans · extraction.cer): "
                   f"n_docs is 60 but 6 rows are ok in {store}")


def test_an_inline_report_with_a_sixth_state_or_a_negative_denominator_is_exit_2(tmp_path):
    raw = json.loads(nightly(0.1, n=3).to_json())
    raw["schema_version"] = "2.0"  # rows inline
    raw["measurements"][1]["state"] = "fine"
    bad = tmp_path / "inline" / "report.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps(raw))
    assert_refused(gated_both_ways(tmp_path, bad), f"{bad}: measurements.1.state: Value error, "
                                                   "state 'fine' is not one of")
    raw["measurements"][1]["state"] = "ok"
    raw["measurements"][2]["denominator"] = -100.0
    bad.write_text(json.dumps(raw))
    assert_refused(gated_both_ways(tmp_path / "den", bad),
                   f"{bad}: measurements.2.denominator: Input should be greater than or equal to 0")


def test_run_baseline_refuses_an_emptied_store_before_the_audit(tmp_path):
    from test_run_outputs import make_corpus

    corpus = make_corpus(tmp_path / "corpus")
    bad = stored_report(tmp_path / "base", n=4)
    replace_store(bad, store_table(bad).slice(0, 0), rows=0)
    out = tmp_path / "out"
    result = cli("run", str(corpus), "--parser", "pymupdf", "--stage", "extraction", "--out", str(out),
                 "--baseline", str(bad))
    assert result.exit_code == 2, result.output
    assert f"{bad}: summary[0] (tess · memos · extraction.cer): state counts differ" in flat(result)
    assert not out.exists()


def test_run_baseline_with_nothing_measured_is_refused_before_the_audit(tmp_path):
    """Hostile-input trial: a consistent but empty baseline (no summary row, no measurement row) was found only by
    the gate, after the audit had replaced the report, yet exit 2 says the previous report is unchanged."""
    from test_run_outputs import make_corpus

    corpus = make_corpus(tmp_path / "corpus")
    (corpus / "ingestaudit.toml").write_text('[pipelines.tess]\nparser = "pymupdf"\n', encoding="utf-8")
    bad = stored_report(tmp_path / "base", n=4)
    replace_store(bad, store_table(bad).slice(0, 0), rows=0)
    raw = json.loads(bad.read_text())
    raw["summary"] = []
    bad.write_text(json.dumps(raw))
    out = tmp_path / "out"
    result = cli("run", str(corpus), "--stage", "extraction", "--out", str(out), "--baseline", str(bad))
    assert result.exit_code == 2, result.output
    assert (f"--baseline {bad}: nothing to gate against: the baseline has no summary row for tess; nothing was "
            "audited") in flat(result)
    assert not out.exists()


@pytest.mark.parametrize("edit, fragment", [
    ("DELETE FROM measurements WHERE run_id = 1 AND doc_class = 'scans'",
     "{db} run 1: summary[1] (tess · scans · extraction.cer): state counts differ (summary vs rows: ok 12 vs 0)"),
    ("UPDATE measurements SET state = 'superb' WHERE item = 'memos/d03'",
     "{db}: run 1 does not load as a report (measurements.3.state: Value error, state 'superb' is not one of ok, "
     "no_reference, no_prediction, error, skipped)"),
    ("UPDATE measurements SET detail = '{{not json' WHERE item = 'scans/d01'",
     "{db}: run 1 does not load as a report (Expecting property name enclosed in double quotes"),
    ("UPDATE summary SET n = 99 WHERE doc_class = '__all__'",
     "{db} run 1: summary[2] (tess · __all__ · extraction.cer): n_docs is 99 but 26 rows are ok"),
])
def test_a_history_run_edited_in_the_file_is_not_gated_against(tmp_path, edit, fragment):
    from ingestaudit.db import connect

    db = tmp_path / "edited.duckdb"
    append_run(db, nightly(0.1, n=12), label="n1")
    con = connect(str(db))
    try:
        con.execute(edit)
    finally:
        con.close()
    head = write(nightly(0.1, n=12), tmp_path / "head" / "report.json")
    result = cli("compare", f"history:{db}", str(head))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert fragment.format(db=db) in flat(result), result.output


def test_a_fifo_given_as_a_report_or_a_history_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "nightly.pipe"
    os.mkfifo(fifo)
    good = stored_report(tmp_path / "good")
    for args, message in ((["report", str(fifo)], f"{fifo}: not a regular file, so not a report.json"),
                          (["compare", str(good), str(fifo)], f"{fifo}: not a regular file, so not a report.json"),
                          (["history", str(fifo)], f"{fifo}: not a regular file, so not a history file"),
                          (["compare", f"history:{fifo}", str(good)], f"{fifo}: not a regular file")):
        result = cli(*args)  # opening the FIFO would wait for a writer for ever
        assert result.exit_code == 2, (args, result.output)
        assert message in flat(result), (args, result.output)


def test_a_summary_repeating_a_row_reversing_an_interval_or_naming_an_unlisted_pipeline_is_exit_2(tmp_path):
    """Hostile-input trial: each of these passed ``report`` and ``compare`` (exit 0)."""
    bad = stored_report(tmp_path / "odd", n=4)
    raw = json.loads(bad.read_text())
    fine = json.dumps(raw)
    raw["summary"].append(dict(raw["summary"][1]))  # summary[3] is summary[1] again
    bad.write_text(json.dumps(raw))
    assert_refused(gated_both_ways(tmp_path / "dup", bad), f"{bad}: summary[3] (tess · scans · extraction.cer): "
                   "repeats summary[1]")
    raw = json.loads(fine)
    raw["summary"][0]["ci_low"], raw["summary"][0]["ci_high"] = 0.3, 0.1
    bad.write_text(json.dumps(raw))
    assert_refused(gated_both_ways(tmp_path / "ci", bad), f"{bad}: summary[0] (tess · memos · extraction.cer): its "
                   "interval is reversed (ci_low 0.3 > ci_high 0.1)")
    raw = json.loads(fine)
    raw["pipelines"][0]["name"] = "ocr"  # the summary and the rows still say tess
    bad.write_text(json.dumps(raw))
    assert_refused(gated_both_ways(tmp_path / "pipe", bad), f"{bad}: summary[0] (tess · memos · extraction.cer): "
                   "pipeline 'tess' is not among the report's pipelines (ocr)")


def test_a_summary_value_outside_its_metric_range_is_exit_2(tmp_path):
    bad = stored_report(tmp_path / "ari", n=5)
    raw = json.loads(bad.read_text())
    corpus_row = {**raw["summary"][0], "stage": "dedup", "metric": "dedup.ari", "level": "corpus", "micro": 3.0,
                  "macro": None, "numerator": None, "denominator": None, "n_docs": 13,
                  "states": {"ok": 13, "no_reference": 0, "no_prediction": 0, "error": 0, "skipped": 0}}
    raw["summary"].append(corpus_row)  # an adjusted Rand index is at most 1
    bad.write_text(json.dumps(raw))
    assert_refused(gated_both_ways(tmp_path, bad),
                   f"{bad}: summary[3] (tess · memos · dedup.ari): micro 3 is outside dedup.ari's range [-1, 1]")


@pytest.mark.parametrize("config, fragment", [
    ({"run": 5}, "config.run: Input should be a valid dictionary"),
    ({"report": {"bootstrap_resamples": 10**9, "confidence": 0.95}},
     "config: Value error, report.bootstrap_resamples: Input should be less than or equal to 100000"),
    ({"report": {"bootstrap_resamples": 1000, "confidence": 1.5}},
     "config: Value error, report.confidence: Input should be less than 1"),
])
def test_a_report_config_the_renderers_or_the_gate_cannot_use_is_exit_2(tmp_path, config, fragment):
    bad = stored_report(tmp_path / "config", n=4)
    raw = json.loads(bad.read_text())
    raw["config"].update(config)  # 10^9 bootstrap resamples would keep compare busy for hours
    bad.write_text(json.dumps(raw))
    assert_refused(gated_both_ways(tmp_path, bad), f"{bad}: {fragment}")
