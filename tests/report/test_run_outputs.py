"""``ingestaudit run`` end to end on a two-document corpus: the output folder (report.json, report.md,
report.html), the terminal headline and ``--verbose``, ``--history`` / ``--label`` / ``--baseline history:DB``,
and bad input refused before the audit (exit 2, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _reportkit import build, cer_rows, write
from _rows import measurements
from typer.testing import CliRunner

from ingestaudit.cli import app

TEXTS = {"notes/hello": "Hello world, this is a tiny note.", "letters/dear": "Dear reader, thank you for the letter."}


def make_corpus(root: Path) -> Path:
    import pymupdf

    for doc_id, text in TEXTS.items():
        (root / "docs" / doc_id).parent.mkdir(parents=True, exist_ok=True)
        (root / "truth" / doc_id).parent.mkdir(parents=True, exist_ok=True)
        pdf = pymupdf.open()
        pdf.new_page().insert_text((72, 72), text)
        pdf.save(root / "docs" / f"{doc_id}.pdf")
        (root / "truth" / f"{doc_id}.txt").write_text(text + "\n", encoding="utf-8")
    return root


def run(*args: str, columns: int = 100):
    return CliRunner().invoke(app, ["run", *args], env={"COLUMNS": str(columns)})


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return make_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def first_run(corpus, tmp_path_factory):
    work = tmp_path_factory.mktemp("work")
    out = work / "out"
    result = run(str(corpus), "--parser", "pymupdf", "--out", str(out), "--history", str(work / "h.duckdb"),
                 "--label", "commit-1", "--stage", "extraction", columns=80)
    assert result.exit_code == 0, result.output
    return work, out, result


def test_run_writes_json_markdown_and_html_and_prints_the_headline(first_run):
    work, out, result = first_run
    assert sorted(p.name for p in out.iterdir()) == ["measurements.parquet", "report.html", "report.json", "report.md",
                                                      "timings.json"]  # every run's step times (issue 27)
    lines = result.stdout.splitlines()
    assert "class: letters — 1 document" in lines and "class: notes — 1 document" in lines
    assert any(line.startswith("  extraction.cer_norm ↓") and "n=1" in line for line in lines)
    assert f"full report: {out / 'report.html'} (also report.json, report.md, measurements.parquet, timings.json); --verbose prints every row" in \
        " ".join(result.stdout.split())
    assert all(len(line) <= 80 for line in lines)
    assert len(lines) < 30
    raw = json.loads((out / "report.json").read_text())
    assert sorted(raw["corpus"]["item_hashes"]) == ["letters/dear", "notes/hello"]
    assert all(len(r["definition"]) == 16 for r in raw["summary"])
    page = (out / "report.html").read_text()
    assert "Content-Security-Policy" in page and "<script" not in page
    # one pipeline that reads each text exactly: every key metric is one value (cer 0, interval [0, 0]), and a plot
    # whose values are all equal is not drawn (issue 27); the plots of a bake-off are tests/report/test_light_report's
    assert "extraction.cer_norm" in page and '<img class="plot"' not in page


def test_report_rerenders_with_verbose_printing_every_row(first_run, tmp_path):
    work, out, _ = first_run
    result = CliRunner().invoke(app, ["report", str(out / "report.json"), "--verbose"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    raw = json.loads((out / "report.json").read_text())
    metrics = {r["metric"] for r in raw["summary"]}
    for m in metrics:
        assert m in result.stdout
    headline = CliRunner().invoke(app, ["report", str(out / "report.json")], env={"COLUMNS": "120"})
    assert len(headline.stdout.splitlines()) < len(result.stdout.splitlines())
    html = tmp_path / "again.html"
    again = CliRunner().invoke(app, ["report", str(out / "report.json"), "--html", str(html), "--history",
                                     str(work / "h.duckdb")])  # the history holds the first run only, as then
    assert again.exit_code == 0 and html.read_text() == (out / "report.html").read_text()


def test_history_records_the_run_and_the_gate_uses_it_as_baseline(first_run, corpus):
    work, _, _ = first_run
    db = work / "h.duckdb"
    result = run(str(corpus), "--parser", "pymupdf", "--out", str(work / "out2"), "--history", str(db),
                 "--label", "commit-2", "--stage", "extraction", "--baseline", f"history:{db}")
    assert result.exit_code == 0, result.output
    assert "gate held: no regression in" in result.stdout
    # the verdict first, then where the run was recorded (the history line came above the headline and verdict)
    said = result.output
    assert said.index("gate held: no regression in") < said.index("history: run ") < said.index("appended to")
    table = CliRunner().invoke(app, ["history", str(db)], env={"COLUMNS": "120"})
    assert table.exit_code == 0, table.output
    assert table.stdout.splitlines()[1].split()[:3] == ["series", "commit-1*", "commit-2"]
    page = (work / "out2" / "report.html").read_text()
    # the two runs read the same corpus alike: the trend is a flat line, said in one line instead of drawn (issue 27)
    assert ('<p class="muted flat">extraction.cer_norm ↓: 0 in each of the last 2 runs (a flat line: not drawn)</p>'
            in page) and 'alt="trend extraction.cer_norm"' not in page


def test_bad_history_baseline_budget_or_out_folder_stop_before_the_audit(corpus, tmp_path):
    out = tmp_path / "out"
    foreign = tmp_path / "notes.duckdb"
    foreign.write_text("not a database")
    other = write(build(cer_rows("unstructured", "notes", [0.1])), tmp_path / "other.json")
    cases = [
        (["--baseline", str(other)], f"--baseline {other}: no pipeline in common: the baseline has unstructured; "
                                     "this run has pymupdf"),
        (["--history", str(foreign)], f"{foreign}: not a DuckDB history file"),
        (["--baseline", str(tmp_path / "missing.json")], "missing.json: not a readable JSON report"),
        # a missing history is the first night (a warning, see below); one that is not a history is an error
        (["--baseline", f"history:{foreign}"], f"--baseline: {foreign}: not a DuckDB history file"),
        (["--budget", "extraction.nope=0.1"], "--budget extraction.nope=0.1: unknown metric"),
    ]
    for extra, message in cases:
        result = run(str(corpus), "--parser", "pymupdf", "--out", str(out), *extra, columns=300)
        assert result.exit_code == 2, (extra, result.output)
        assert message in result.output.replace("\n", ""), (extra, result.output)
        assert not out.exists()
    assert foreign.read_text() == "not a database"


def test_out_refuses_a_folder_of_other_files_and_warns_for_another_corpus(corpus, first_run, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("precious")
    result = run(str(corpus), "--parser", "pymupdf", "--out", str(mine), columns=300)
    assert result.exit_code == 2 and "not an ingestaudit report folder" in result.output
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]

    _, out, _ = first_run
    other = make_corpus(tmp_path / "other")
    (other / "docs" / "notes" / "extra.pdf").write_bytes((corpus / "docs" / "notes" / "hello.pdf").read_bytes())
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "report.json").write_text((out / "report.json").read_text())
    result = run(str(other), "--parser", "pymupdf", "--out", str(copy), "--stage", "extraction", columns=300)
    assert result.exit_code == 0, result.output
    assert "replacing the report of a different corpus" in result.output


# --- the gate and the history through `run` --------------------------------------------------------------------------

def imperfect_corpus(root: Path) -> Path:
    """The two-document corpus, but the letter's reference text has a word the PDF lacks: its CER is 5/43."""
    make_corpus(root)
    (root / "truth" / "letters" / "dear.txt").write_text("Dear reader, thank you for the long letter.\n",
                                                         encoding="utf-8")
    return root


def perfect_baseline(corpus: Path, path: Path) -> Path:
    """A baseline report of pipeline pymupdf in which both documents had CER 0, with the run's own extraction
    options and item hashes (so that its rows pair with, and are comparable to, a run on ``corpus``)."""
    from _reportkit import Row

    from ingestaudit.auditors.extraction import ExtractionAuditor
    from ingestaudit.corpus import discover
    from ingestaudit.report.provenance import item_hashes

    rows = [Row("letters/dear", "letters", "pymupdf", "extraction.cer", 0.0, 0.0, 43.0),
            Row("notes/hello", "notes", "pymupdf", "extraction.cer", 0.0, 0.0, 33.0)]
    base = build(rows, auditors={"extraction": ExtractionAuditor().options()},
                 hashes=item_hashes(discover(corpus)))
    return write(base, path)


@pytest.mark.slow
def test_run_baseline_exits_1_on_a_regression_and_a_history_lock_does_not_hide_it(tmp_path, monkeypatch):
    import subprocess
    import sys

    corpus = imperfect_corpus(tmp_path / "corpus")
    baseline = perfect_baseline(corpus, tmp_path / "base" / "report.json")
    db = tmp_path / "h.duckdb"
    cfg = tmp_path / "gate.toml"
    cfg.write_text("[gate]\nmin_items = 1\n")  # one-document classes may fail on the budget alone (issue 26)
    result = run(str(corpus), "--parser", "pymupdf", "--out", str(tmp_path / "out"), "--stage", "extraction",
                 "--baseline", str(baseline), "--history", str(db), "--label", "n1", "--config", str(cfg),
                 columns=120)
    assert result.exit_code == 1, result.output
    assert "gate FAILED: 2 regressions (0 significant, 2 on the budget alone)" in result.stdout
    assert "pymupdf · letters · extraction.cer ↓  0 -> 0.1163" in result.stdout  # 5 / 43
    from ingestaudit.report.history import list_runs

    assert [r.label for r in list_runs(db)] == ["n1"]  # a failed gate is still recorded
    # the history is locked by another process after the pre-audit check: the report is kept, the failed gate
    # decides the exit code (1, not 4) and the lost history is said
    monkeypatch.setattr("ingestaudit.report.history.check_history", lambda path: None)
    monkeypatch.setattr("ingestaudit.report.history.LOCK_WAIT_S", 0.3)
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(db)!r}); "
                               "print('ready', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        locked = run(str(corpus), "--parser", "pymupdf", "--out", str(tmp_path / "out2"), "--stage", "extraction",
                     "--baseline", str(baseline), "--history", str(db), "--label", "n2", "--config", str(cfg),
                     columns=300)
    finally:
        holder.kill()
        holder.wait()
    assert locked.exit_code == 1, locked.output
    assert "gate FAILED: 2 regressions" in locked.stdout  # the verdict is printed
    assert ("locked by another process" in locked.output
            and (f"the run was not recorded in the history; its report in {tmp_path / 'out2'} was written; the gate "
                 "FAILED: exit 1") in " ".join(locked.output.split()))
    assert (tmp_path / "out2" / "report.json").is_file()
    assert [r.label for r in list_runs(db)] == ["n1"]


@pytest.mark.slow
def test_the_first_night_has_no_history_warns_and_runs_ungated(tmp_path):
    corpus = make_corpus(tmp_path / "corpus")
    db = tmp_path / "runs.duckdb"
    args = [str(corpus), "--parser", "pymupdf", "--stage", "extraction", "--history", str(db),
            "--baseline", f"history:{db}"]
    first = run(*args, "--out", str(tmp_path / "n1"), "--label", "n1", columns=300)
    assert first.exit_code == 0, first.output
    assert (f"warning: --baseline history:{db}: no run recorded yet, so this run is not gated (exit 0 unless it "
            "fails otherwise); it starts the history and is accepted as its first baseline") in first.output
    assert "gate held" not in first.stdout and "gate FAILED" not in first.stdout  # (gate.json is listed)
    assert json.loads((tmp_path / "n1" / "gate.json").read_text())["verdict"] == "first_run"
    second = run(*args, "--out", str(tmp_path / "n2"), "--label", "n2", columns=300)
    assert second.exit_code == 0, second.output
    assert "no run recorded yet" not in second.output and "gate held: no regression in" in second.stdout
    from ingestaudit.report.history import list_runs

    assert [(r.label, r.accepted, r.verdict) for r in list_runs(db)] == [("n1", True, "first_run"),
                                                                          ("n2", False, "pass")]


def test_a_truncated_baseline_stops_run_before_the_audit(corpus, tmp_path):
    good = write(build(cer_rows("pymupdf", "notes", [0.1])), tmp_path / "good.json")
    truncated = tmp_path / "truncated.json"
    truncated.write_text(good.read_text()[:300])
    out = tmp_path / "out"
    result = run(str(corpus), "--parser", "pymupdf", "--out", str(out), "--baseline", str(truncated), columns=300)
    assert result.exit_code == 2
    assert f"{truncated}: not a readable JSON report" in result.output.replace("\n", "")
    assert not out.exists()


def test_measurements_parquet_is_queried_by_duckdb_as_the_history_docstring_says(first_run):
    import duckdb

    _, out, _ = first_run
    rows = duckdb.sql(f"SELECT item, value FROM '{out / 'measurements.parquet'}' WHERE metric = 'extraction.cer' "
                      "ORDER BY item").fetchall()
    assert rows == [(m["item"], m["value"]) for m in sorted(measurements(out), key=lambda m: m["item"])
                    if m["metric"] == "extraction.cer"]
    assert len(rows) == 2


# --- the index sweep plot from a real run ----------------------------------------------------------------------------

@pytest.mark.slow
def test_the_index_sweep_of_a_real_run_is_drawn_against_qps_from_timings_json(tmp_path):
    import base64
    import re

    corpus, outputs = tmp_path / "corpus", tmp_path / "outputs"
    (corpus / "docs" / "c").mkdir(parents=True)
    for name in ("a", "b"):
        (corpus / "docs" / "c" / f"{name}.txt").write_text("source\n")
        text = " ".join(f"Sentence {i} of {name} tells about topic {i % 5}." for i in range(30))
        chunks = [{"text": text[p:p + 50], "start": p, "end": min(p + 50, len(text))} for p in range(0, len(text), 50)]
        (outputs / "monitor" / "c").mkdir(parents=True, exist_ok=True)
        (outputs / "monitor" / "c" / f"{name}.json").write_text(json.dumps({"text": text, "chunks": chunks}))
    (tmp_path / "run.toml").write_text(
        f'[run]\nexecutor = "serial"\ncache_dir = "{tmp_path / "cache"}"\n\n'
        f'[pipelines.monitor]\nembedder = {{ use = "_chain_stubs:HashEmbedder" }}\nindex = {{ use = "hnsw", m = 8 }}\n')
    out = tmp_path / "report"
    res = CliRunner().invoke(app, ["run", str(corpus), "--outputs", str(outputs), "--config",
                                   str(tmp_path / "run.toml"), "--stage", "index", "--out", str(out)],
                             env={"COLUMNS": "100"})
    assert res.exit_code == 0, res.output

    def sweep_svg(page: str) -> str:
        m = re.search(r'<img class="plot" alt="index sweep" src="data:image/svg\+xml;base64,([^"]+)"', page)
        assert m, "no index sweep plot"
        return base64.b64decode(m.group(1)).decode()

    timings = json.loads((out / "timings.json").read_text())
    qps = [c["qps"] for c in timings["monitor"]["index"]["cells"]]
    assert len(qps) >= 2 and all(q > 0 for q in qps)
    svg = sweep_svg((out / "report.html").read_text())
    assert "queries per second, one thread" in svg and "depends on the machine" in svg and "target 0.95" in svg
    # the same report without timings.json beside it: drawn against the search parameter, deterministically
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "report.json").write_text((out / "report.json").read_text())
    (bare / "measurements.parquet").write_bytes((out / "measurements.parquet").read_bytes())  # beside its report
    pages = []
    for name in ("one.html", "two.html"):
        again = CliRunner().invoke(app, ["report", str(bare / "report.json"), "--html", str(tmp_path / name)])
        assert again.exit_code == 0, again.output
        pages.append((tmp_path / name).read_text())
    assert pages[0] == pages[1]
    # against the search parameter alone the recall is one value at every ef_search (two small documents): a flat
    # line is said, not drawn (issue 27); a sweep whose recall varies is drawn (test_render_views)
    assert 'alt="index sweep"' not in pages[0]
    assert re.search(r'<p class="muted flat">index (mean per-query )?recall@\d+: [0-9.]+ at every ef_search \(a flat '
                     r'line: not drawn\)</p>', pages[0])
