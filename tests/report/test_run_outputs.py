"""``ingestaudit run`` end to end on a two-document corpus: the output folder (report.json, report.md,
report.html), the terminal headline and ``--verbose``, ``--history`` / ``--label`` / ``--baseline history:DB``,
and bad input refused before the audit (exit 2, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _reportkit import build, cer_rows, write
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
    assert sorted(p.name for p in out.iterdir()) == ["measurements.parquet", "report.html", "report.json", "report.md"]
    lines = result.stdout.splitlines()
    assert "class: letters — 1 document" in lines and "class: notes — 1 document" in lines
    assert any(line.startswith("  extraction.cer_norm ↓") and "n=1" in line for line in lines)
    assert f"full report: {out / 'report.html'} (also report.json, report.md, measurements.parquet); --verbose prints every row" in \
        " ".join(result.stdout.split())
    assert all(len(line) <= 80 for line in lines)
    assert len(lines) < 30
    raw = json.loads((out / "report.json").read_text())
    assert sorted(raw["corpus"]["item_hashes"]) == ["letters/dear", "notes/hello"]
    assert all(len(r["definition"]) == 16 for r in raw["summary"])
    page = (out / "report.html").read_text()
    assert "Content-Security-Policy" in page and "<script" not in page and "data:image/svg+xml;base64," in page


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
    table = CliRunner().invoke(app, ["history", str(db)], env={"COLUMNS": "120"})
    assert table.exit_code == 0, table.output
    assert table.stdout.splitlines()[1].split()[:3] == ["series", "commit-1*", "commit-2"]
    assert 'alt="trend extraction.cer_norm"' in (work / "out2" / "report.html").read_text()


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
        (["--baseline", f"history:{tmp_path / 'none.duckdb'}"], "no such history file"),
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
