"""End to end: the README's main job on the bundled demo corpus, and the report contract."""

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.report.schema import read_report
from ingestaudit.report.rows import measurement_rows

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo"
PARSERS = ["pymupdf", "unstructured", "tesseract"]


def run(out: Path, *extra: str, parsers=PARSERS) -> CliRunner:
    args = ["run", str(DEMO), "--out", str(out), *[a for p in parsers for a in ("--parser", p)], *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return result


def _corpus_snapshot() -> dict:
    return {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in DEMO.rglob("*")}


CORPUS_BEFORE_RUN: dict = {}  # taken by the fixture BEFORE its run, for test_corpus_is_never_written


@pytest.fixture(scope="module")
def three_parsers(tmp_path_factory):
    CORPUS_BEFORE_RUN.update(_corpus_snapshot())
    out = tmp_path_factory.mktemp("demo")
    result = run(out)
    return out, result


def _reject_constant(name):
    raise AssertionError(f"{name} in report.json")


def test_main_job_writes_both_files_and_prints_a_table_per_class(three_parsers):
    out, result = three_parsers
    assert (out / "report.json").is_file() and (out / "report.md").is_file()
    for cls in ("born_digital", "scanned", "web", "__all__"):
        assert f"class: {cls}" in result.stdout
    md = (out / "report.md").read_text()
    assert "| metric | pymupdf | unstructured | tesseract |" in md


def test_main_command_prints_the_chunking_stage_for_every_pipeline(three_parsers):
    """The README's main command on the demo corpus (its questions.jsonl turns the chunking stage on): the terminal
    headline has a value of chunking's key, boundary_splits[sentence] (issue 25: evidence_held is 1 for every
    pipeline, so it was replaced as the key), for each of the three pipelines over all classes, and the
    min_span_coverage convention is printed next to it (and in report.md and under report.html's headline)."""
    out, result = three_parsers
    block = result.stdout.split("class: __all__", 1)[1].split("\n\n", 1)[0]
    row = next(line for line in block.splitlines() if line.strip().startswith("chunking.boundary_"))
    assert row.count("n=") == len(PARSERS), block  # a value (with its n) in every pipeline's column
    said = " ".join(result.stdout.split())
    assert "convention (chunking" in said and "min_span_coverage = 0.5: a chunk holds an evidence span" in said
    assert re.search(r"convention \(chunking.*min\\?_span\\?_coverage = 0\.5", (out / "report.md").read_text())
    assert ('<p class="muted convention">convention (chunking, retrieval): min_span_coverage = 0.5: a chunk holds'
            in (out / "report.html").read_text())  # beside the HTML headline too, not only in its settings
    report = read_report(out / "report.json")
    held = {s.pipeline for s in report.summary if s.metric == "chunking.evidence_held" and s.doc_class == "__all__"
            and s.n_docs > 0}
    assert held == set(PARSERS)


def test_report_contract(three_parsers):
    out, _ = three_parsers
    raw = json.loads((out / "report.json").read_text(), parse_constant=_reject_constant)  # no NaN / Infinity
    for key in ("schema_version", "tool", "corpus", "config", "environment", "pipelines", "measurements", "summary",
                "failures"):
        assert key in raw
    report = read_report(out / "report.json")
    rows = list(measurement_rows(report))
    assert [p.name for p in report.pipelines] == PARSERS
    assert report.corpus.documents == {"born_digital": 3, "scanned": 4, "web": 3}
    assert report.config["run"]["parsers"] == PARSERS
    # every document x parser has extraction rows, each with a value or a state
    docs = {m.item for m in rows if m.item_kind == "document"}
    assert len(docs) == 10
    assert len({m.item for m in rows if m.item_kind == "question"}) == 16  # questions.jsonl
    for doc in docs:
        for parser in PARSERS:
            found = [m for m in rows if (m.item, m.pipeline, m.metric) == (doc, parser, "extraction.cer")]
            assert len(found) == 1
            r = found[0]
            assert (r.state == "ok") == (r.value is not None)
            if r.state != "ok":
                assert r.detail.get("reason")
    # pymupdf does not read images: skipped with its reason, never a zero
    png = [m for m in rows if m.pipeline == "pymupdf" and m.item.endswith("notice_water_main")]
    assert {m.state for m in png if m.stage == "extraction"} == {"skipped"}
    assert {m.state for m in png} <= {"skipped", "no_reference", "no_prediction"}
    # summary: per class and overall, micro equals the sum of counts of ok rows
    for s in (s for s in report.summary if s.level == "document"):
        ok = [m for m in rows if m.pipeline == s.pipeline and m.metric == s.metric and m.label == s.label
              and m.state == "ok" and (s.doc_class == "__all__" or m.doc_class == s.doc_class)]
        assert s.n_docs == len(ok)
        if s.micro is not None:
            assert s.micro == pytest.approx(sum(m.numerator for m in ok) / sum(m.denominator for m in ok))


def test_report_rerenders_from_json(three_parsers, tmp_path):
    out, _ = three_parsers
    result = CliRunner().invoke(app, ["report", str(out / "report.json"), "--html", str(tmp_path / "r.html"),
                                      "--md", str(tmp_path / "r.md")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "r.md").read_text() == (out / "report.md").read_text()
    assert "<table>" in (tmp_path / "r.html").read_text()


def test_corpus_is_never_written(three_parsers):
    run_dir = three_parsers[0]
    assert run_dir.exists() and CORPUS_BEFORE_RUN  # the snapshot was taken before the fixture's run
    assert _corpus_snapshot() == CORPUS_BEFORE_RUN


def test_compare_with_itself_holds_the_gate(three_parsers):
    out, _ = three_parsers
    report = str(out / "report.json")
    result = CliRunner().invoke(app, ["compare", report, report])
    assert result.exit_code == 0
    assert "no regression" in result.stdout


def test_the_demo_page_is_light_and_draws_no_flat_plot(three_parsers):
    """Issue 27: the demo's report.html is at most 1 MB (1,087,377 bytes before; 894,960 after, measured on this
    run's report; 987,556 by issue 25's additions, 900,552 once the drill-down shows a question's waterfall outcomes
    at the waterfall's k only) and draws a class's key-metric plot only when its values are not all equal."""
    from ingestaudit.report.plots import constant
    from ingestaudit.report.tables import headlines

    out, _ = three_parsers
    page = (out / "report.html").read_text()
    assert len(page.encode("utf-8")) <= 1_000_000
    report = read_report(out / "report.json")
    flat = []
    for h in headlines(report):  # a panel per key metric, drawn when its values differ; no panel, no plot
        varying = [not constant(x for c in r.cells for x in (c.value, c.low, c.high)) for r in h.rows]
        drawn = f'alt="key metrics of {h.doc_class} with intervals"' in page
        assert drawn == any(varying), h.doc_class
        flat += [h.doc_class] * (not drawn)
    assert flat == ["unanswerable"]  # index.recall@10 is 1 for all three pipelines, retrieval has no value
