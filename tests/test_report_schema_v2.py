"""Report schema 2.0: a version-1 report.json is still read (migrated), rendered and gated; a new run writes 2.0."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.report.render import render_markdown
from ingestaudit.report.schema import SCHEMA_VERSION, PipelineInfo, StageInfo, read_report
from _rows import measurements

# A version-1 report as ingestaudit 1.x wrote it: `parsers` with version and settings, rows keyed by `parser` and
# `doc_id`, paired tests by `parser_a` / `parser_b`.
V1_REPORT = {
    "schema_version": "1.0",
    "tool": {"name": "ingestaudit", "version": "0.9.0"},
    "corpus": {"path": "/corpora/demo", "fingerprint": "0123456789abcdef", "documents": {"born": 2}},
    "config": {"run": {"parsers": ["pymupdf"], "stages": ["extraction"], "seed": 0, "workers": 1,
                       "doc_timeout_s": 300.0},
               "auditors": {"extraction": {"normalization": "text-v1"}}},
    "environment": {"python": "3.11.7"},
    "parsers": [
        {"name": "pymupdf", "kind": "registered", "version": "1.24.0", "settings": {"sort": False}},
        {"name": "mypipe", "kind": "precomputed", "version": "mypipe 1.2", "settings": {"folder": "outputs/mypipe"}},
    ],
    "measurements": [
        {"doc_id": "born/a", "doc_class": "born", "parser": "pymupdf", "stage": "extraction",
         "metric": "extraction.cer", "label": "", "value": 0.1, "numerator": 10.0, "denominator": 100.0,
         "state": "ok", "detail": {"normalization": "text-v1"}},
    ],
    "summary": [
        {"parser": "pymupdf", "doc_class": "born", "stage": "extraction", "metric": "extraction.cer", "label": "",
         "n_docs": 1, "micro": 0.1, "macro": 0.1, "ci_low": None, "ci_high": None,
         "ci_method": "none (too few documents)",
         "states": {"ok": 1, "no_reference": 0, "no_prediction": 0, "error": 0, "skipped": 0},
         "level": "document", "numerator": 10.0, "denominator": 100.0},
    ],
    "failures": [{"doc_id": "born/b", "parser": "mypipe", "stage": "parse", "message": "no output file"}],
    "details": [{"parser": "pymupdf", "stage": "extraction", "name": "worst_documents", "data": ["born/a"]}],
    "paired_tests": [
        {"doc_class": "born", "metric": "extraction.cer", "label": "", "parser_a": "pymupdf", "parser_b": "mypipe",
         "n_pairs": 6, "mean_diff": 0.05, "median_diff": 0.04, "statistic": 0.0, "p_value": 0.03125,
         "significant": True, "method": "wilcoxon signed-rank, two-sided, zero_method=wilcox, alpha=0.05"},
    ],
}


@pytest.fixture
def v1_path(tmp_path: Path) -> Path:
    path = tmp_path / "v1" / "report.json"
    path.parent.mkdir()
    path.write_text(json.dumps(V1_REPORT, indent=1), encoding="utf-8")
    return path


def test_version_1_report_is_migrated_on_read(v1_path):
    report = read_report(v1_path)
    assert report.pipelines == [
        PipelineInfo(name="pymupdf", kind="configured",
                     stages={"parser": StageInfo(implementation="pymupdf", version="1.24.0",
                                                 settings={"sort": False})}),
        PipelineInfo(name="mypipe", kind="precomputed",
                     stages={"parser": StageInfo(implementation="mypipe", version="mypipe 1.2",
                                                 settings={"folder": "outputs/mypipe"})}),
    ]
    (m,) = report.measurements
    assert (m.item, m.item_kind, m.doc_class, m.pipeline, m.metric) == ("born/a", "document", "born", "pymupdf",
                                                                       "extraction.cer")
    assert (m.value, m.numerator, m.denominator, m.state, m.detail) == (0.1, 10.0, 100.0, "ok",
                                                                       {"normalization": "text-v1"})
    (s,) = report.summary
    assert (s.pipeline, s.doc_class, s.metric, s.n_docs, s.micro, s.macro) == ("pymupdf", "born", "extraction.cer",
                                                                               1, 0.1, 0.1)
    (f,) = report.failures
    assert (f.item, f.pipeline, f.stage, f.message) == ("born/b", "mypipe", "parse", "no output file")
    (d,) = report.details
    assert (d.pipeline, d.stage, d.name, d.data) == ("pymupdf", "extraction", "worst_documents", ["born/a"])
    (t,) = report.paired_tests
    assert (t.pipeline_a, t.pipeline_b, t.n_pairs, t.p_value, t.significant) == ("pymupdf", "mypipe", 6, 0.03125,
                                                                                 True)
    assert report.config == V1_REPORT["config"]  # values are untouched


def test_version_1_report_is_rendered_by_the_report_command(v1_path, tmp_path):
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    result = CliRunner().invoke(app, ["report", str(v1_path), "--md", str(md), "--html", str(html)])
    assert result.exit_code == 0, result.output
    text = md.read_text(encoding="utf-8")
    assert text == render_markdown(read_report(v1_path))
    assert "pipelines: pymupdf, mypipe" in text
    assert "| metric | pymupdf | mypipe |" in text
    assert "| extraction.cer ↓ | 0.1 (0.1)<br>n=1" in text  # 4 significant digits
    assert "  - parser: `pymupdf` 1.24.0 `{\"sort\": false}`" in text  # the v1 parser version and settings
    assert "| born | extraction.cer | pymupdf | mypipe | 6 | +0.0500 | 0.03125 |" in text
    assert "- `born/b` mypipe parse: no output file" in text
    page = html.read_text(encoding="utf-8")
    assert "<th>pymupdf</th><th>mypipe</th>" in page and "<code>born/b</code> mypipe parse: no output file" in page
    assert "pymupdf" in result.output and "mypipe" in result.output


def test_version_1_report_gated_against_itself_passes(v1_path):
    result = CliRunner().invoke(app, ["compare", str(v1_path), str(v1_path)])
    assert result.exit_code == 0, result.output
    assert "no regression in 1 compared rows" in result.output


@pytest.fixture(scope="module")
def pymupdf_run(tmp_path_factory) -> Path:
    """``ingestaudit run --parser pymupdf`` on one born-digital PDF with its text truth."""
    import pymupdf

    root = tmp_path_factory.mktemp("corpus")
    (root / "docs" / "notes").mkdir(parents=True)
    (root / "truth" / "notes").mkdir(parents=True)
    text = "Hello world, this is a tiny note."
    pdf = pymupdf.open()
    pdf.new_page().insert_text((72, 72), text)
    pdf.save(root / "docs" / "notes" / "hello.pdf")
    (root / "truth" / "notes" / "hello.txt").write_text(text + "\n", encoding="utf-8")
    out = tmp_path_factory.mktemp("out")
    result = CliRunner().invoke(app, ["run", str(root), "--parser", "pymupdf", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out / "report.json"


def test_a_new_run_writes_schema_2(pymupdf_run):
    raw = json.loads(pymupdf_run.read_text(encoding="utf-8"))
    assert raw["schema_version"] == SCHEMA_VERSION == "2.2"
    assert "parsers" not in raw
    assert [p["name"] for p in raw["pipelines"]] == ["pymupdf"]
    assert raw["pipelines"][0]["kind"] == "configured"
    assert raw["pipelines"][0]["stages"]["parser"]["implementation"] == "pymupdf"
    rows = measurements(pymupdf_run)
    assert rows and raw["summary"] and raw["measurements"]["rows"] == len(rows)
    for m in rows:
        assert m["pipeline"] == "pymupdf" and m["item"] == "notes/hello" and m["item_kind"] == "document"
        assert m["parser"] == "pymupdf" and "doc_id" not in m  # schema 2.2: the parser that read the document
    for s in raw["summary"]:
        assert s["pipeline"] == "pymupdf" and "parser" not in s
    cer = [m for m in rows if m["metric"] == "extraction.cer"]
    assert [(m["state"], m["value"]) for m in cer] == [("ok", 0.0)]
    assert raw["failures"] == []
    read_report(pymupdf_run)  # and it validates


def test_a_new_report_gated_against_itself_passes(pymupdf_run):
    result = CliRunner().invoke(app, ["compare", str(pymupdf_run), str(pymupdf_run)])
    assert result.exit_code == 0, result.output
    assert "no regression" in result.output
