"""Parser routing (issue 24, point 3): a pipeline's ``parser`` as a table keyed by file extension, the ``parser``
column of the store, the routes in report.json, ``error`` (never ``skipped``) for a document no route reads, and the
bad routing tables that stop a run before any document is read."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.document import Document
from ingestaudit.pipeline import PipelineError, Sweep, expand, make_pipeline
from ingestaudit.report.rows import iter_store_rows

VALID = "valid parsers: pymupdf, reference, tagged, tesseract, unstructured"
PDF_TRUTH = "Routing sends each file to its parsers"
PDF_TEXT = "Routing sends each file to its parser"  # one deletion: CER 1/38


def _corpus(root, files, toml):
    """A corpus under ``root``: ``files`` maps ``name -> (source bytes or None for a PDF of PDF_TEXT, truth)``."""
    import fitz

    (root / "docs" / "mixed").mkdir(parents=True)
    (root / "truth" / "mixed").mkdir(parents=True)
    for name, (data, truth) in files.items():
        path = root / "docs" / "mixed" / name
        if data is None:
            pdf = fitz.open()
            pdf.new_page().insert_text((72, 72), PDF_TEXT)
            pdf.save(path)
        else:
            path.write_bytes(data)
        if truth is not None:
            (root / "truth" / "mixed" / (path.stem + ".txt")).write_text(truth + "\n", encoding="utf-8")
    (root / "ingestaudit.toml").write_text(toml, encoding="utf-8")
    return root


ACCEPTANCE = {"report.pdf": (None, PDF_TRUTH),
              "page.html": (b"<html><body><p>An HTML page read by unstructured.</p></body></html>",
                            "An HTML page read by unstructured."),
              "notes.txt": (b"Plain notes, read as their reference text.\n",
                            "Plain notes, read as their reference text.")}
ROUTED = '[pipelines.mixed]\nparser = { pdf = "pymupdf", html = "unstructured", txt = "reference" }\n'


@pytest.fixture(scope="module")
def routed_run(tmp_path_factory):
    root = _corpus(tmp_path_factory.mktemp("corpus"), ACCEPTANCE, ROUTED)
    out = tmp_path_factory.mktemp("out")
    r = CliRunner().invoke(app, ["run", str(root), "--pipeline", "mixed", "--stage", "extraction", "--out", str(out),
                                 "--executor", "serial"])
    assert r.exit_code == 0, r.output
    return out


def test_each_document_is_read_by_its_route_and_no_row_is_skipped(routed_run):
    rows = list(iter_store_rows(routed_run / "measurements.parquet"))
    assert rows and {r.state for r in rows} <= {"ok", "no_reference"}  # no skipped, no error
    assert {(r.item, r.parser) for r in rows} == {("mixed/report", "pymupdf"), ("mixed/page", "unstructured"),
                                                  ("mixed/notes", "reference")}
    assert "parser" in pq.read_schema(routed_run / "measurements.parquet").names


def test_the_pdf_cer_is_one_deletion_over_38_characters(routed_run):
    import jiwer

    cer = {r.item: r for r in iter_store_rows(routed_run / "measurements.parquet") if r.metric == "extraction.cer"}
    pdf = cer["mixed/report"]
    assert (pdf.state, pdf.numerator, pdf.denominator) == ("ok", 1.0, 38.0)  # the trailing "s" of "parsers"
    assert pdf.value == pytest.approx(1 / 38) == pytest.approx(jiwer.cer(PDF_TRUTH, PDF_TEXT))
    assert cer["mixed/notes"].value == 0.0  # the reference parser returns the truth itself


def test_report_json_lists_the_routing_table_with_versions(routed_run):
    from importlib.metadata import version

    from ingestaudit import __version__

    report = json.loads((routed_run / "report.json").read_text(encoding="utf-8"))
    (pipe,) = report["pipelines"]
    assert pipe["stages"]["parser"] == {"implementation": "routed", "version": __version__, "settings": {}}
    assert [(r["extension"], r["implementation"]) for r in pipe["routes"]] == [
        ("pdf", "pymupdf"), ("html", "unstructured"), ("txt", "reference")]
    versions = {r["implementation"]: r["version"] for r in pipe["routes"]}
    assert versions["unstructured"] == version("unstructured") and versions["reference"] == __version__
    assert report["config"]["run"]["parsers"] == ["pymupdf", "unstructured", "reference"]
    assert report["failures"] == []
    md = (routed_run / "report.md").read_text(encoding="utf-8")
    assert f"  - parser route `html`: `unstructured` {version('unstructured')} " in md
    assert "<td>parser route txt</td><td>reference</td>" in (routed_run / "report.html").read_text(encoding="utf-8")


UNREAD = {"report.pdf": (None, PDF_TRUTH), "table.csv": (b"a,b\n1,2\n", "a,b 1,2"),
          "scan.png": (b"not read", "scan text"), "notes.txt": (b"notes\n", "notes")}
UNREAD_TOML = '[pipelines.routed]\nparser = { PDF = "pymupdf", ".png" = "pymupdf", txt = "reference" }\n'


@pytest.fixture(scope="module")
def unread_run(tmp_path_factory):
    root = _corpus(tmp_path_factory.mktemp("corpus"), UNREAD, UNREAD_TOML)
    out = tmp_path_factory.mktemp("out")
    r = CliRunner().invoke(app, ["run", str(root), "--pipeline", "routed", "--parser", "pymupdf", "--stage",
                                 "extraction", "--stage", "dedup", "--out", str(out), "--executor", "serial"])
    assert r.exit_code == 0, r.output
    return out


def test_validate_warns_of_the_documents_a_routed_pipeline_cannot_read(tmp_path):
    """New-user trial: ``validate`` passed a routing table whose run then had error rows; it now names each
    extension a routed pipeline cannot read (no route, or a parser that does not read it), with a document and the
    count, as a warning (the run goes on with those documents' errors)."""
    root = _corpus(tmp_path / "c", UNREAD, UNREAD_TOML)
    r = CliRunner().invoke(app, ["validate", str(root)])
    assert r.exit_code == 0, r.output
    routes = "routes: pdf -> pymupdf, png -> pymupdf, txt -> reference"
    warned = [line for line in r.output.splitlines() if line.startswith("warning: pipeline 'routed'")]
    assert warned == [
        f"warning: pipeline 'routed' cannot read 1 document(s) of extension csv: no route and no default route "
        f"(mixed/table); they will be errors of that pipeline ({routes})",
        f"warning: pipeline 'routed' cannot read 1 document(s) of extension png: routed to 'pymupdf', which does "
        f"not read it (mixed/scan); they will be errors of that pipeline ({routes})"]
    assert r.output.splitlines()[-1].endswith("; 2 warnings above")  # not a bare "ok" under them


def _cer_rows(out):
    return {(r.item, r.pipeline): r for r in iter_store_rows(out / "measurements.parquet")
            if r.metric == "extraction.cer"}


def test_a_document_no_route_reads_is_an_error_naming_pipeline_extension_and_routes(unread_run):
    rows = _cer_rows(unread_run)
    csv = rows[("mixed/table", "routed")]
    assert (csv.state, csv.value, csv.parser) == ("error", None, "")
    assert csv.detail["reason"] == ("pipeline 'routed' cannot read table.csv: no route for extension csv and no "
                                    "default route; its routes: pdf -> pymupdf, png -> pymupdf, txt -> reference")
    png = rows[("mixed/scan", "routed")]
    assert (png.state, png.parser) == ("error", "pymupdf")
    assert png.detail["reason"] == ("pipeline 'routed' cannot read scan.png: extension png is routed to parser "
                                    "'pymupdf', which does not read it (it reads: epub, oxps, pdf, xps); its routes: "
                                    "pdf -> pymupdf, png -> pymupdf, txt -> reference")
    assert (rows[("mixed/report", "routed")].state, rows[("mixed/report", "routed")].parser) == ("ok", "pymupdf")
    report = json.loads((unread_run / "report.json").read_text(encoding="utf-8"))
    listed = [(f["item"], f["pipeline"], f["stage"]) for f in report["failures"] if f["pipeline"] == "routed"]
    assert sorted(listed) == [("mixed/scan", "routed", "parse"), ("mixed/table", "routed", "parse")]  # once each


def test_corpus_level_rows_name_the_parser_of_their_document_too(unread_run):
    dedup = {(r.item, r.pipeline): r.parser for r in iter_store_rows(unread_run / "measurements.parquet")
             if r.stage == "dedup" and r.item_kind == "document"}
    assert dedup[("mixed/report", "routed")] == "pymupdf" and dedup[("mixed/notes", "routed")] == "reference"
    assert dedup[("mixed/table", "routed")] == "" and dedup[("mixed/notes", "pymupdf")] == "pymupdf"


def test_plain_parser_pipelines_keep_skipped_only_when_another_parser_reads_the_file(unread_run):
    rows = _cer_rows(unread_run)
    notes = rows[("mixed/notes", "pymupdf")]  # the routed pipeline reads it (reference): pymupdf skips it
    assert (notes.state, notes.parser) == ("skipped", "pymupdf")
    assert rows[("mixed/notes", "routed")].state == "ok"
    for item, suffix in (("mixed/table", ".csv"), ("mixed/scan", ".png")):  # no parser of the run reads them
        row = rows[(item, "pymupdf")]
        assert row.state == "error"
        assert row.detail["reason"] == (f"unsupported file type {suffix}: no parser of this run reads "
                                        f"{item.split('/')[1]}{suffix}")
    report = json.loads((unread_run / "report.json").read_text(encoding="utf-8"))
    assert sum(f["item"] == "mixed/table" and "pymupdf" in (f["pipelines"] or [f["pipeline"]])
               for f in report["failures"]) == 1


BAD_TABLES = [
    ('{ pdf = "pymupdf", html = "nosuch" }', "key 'html': unknown parser 'nosuch'"),
    ("{}", "empty routing table"),
    ('{ pdf = 3 }', "key 'pdf': 3 is not a parser name"),
    ('{ pdf = ["pymupdf"] }', "key 'pdf': ['pymupdf'] is not a parser name"),
    ('{ pdf = "pymupdf", PDF = "tagged" }', "key 'PDF': extension 'pdf' given twice ('pdf' and 'PDF'"),
    ('{ ".pdf" = "pymupdf", pdf = "tagged" }', "key 'pdf': extension 'pdf' given twice ('.pdf' and 'pdf'"),
    ('{ "tar.gz" = "pymupdf" }', "key 'tar.gz': not a file extension"),
    ('{ ".default" = "pymupdf" }', "key '.default': the fallback route is 'default', without a dot"),  # hostile trial
]


def test_every_bad_key_of_a_routing_table_is_named_at_once():
    """Hostile-input trial: a table with three bad keys was reported one key per run."""
    with pytest.raises(PipelineError) as caught:
        make_pipeline("m", {"parser": {"tar.gz": "pymupdf", "*": "unstructured", "pdf": "nosuch", "html": 5,
                                       "txt": "unstructured"}})
    lines = str(caught.value).splitlines()
    assert [line.split(": ", 1)[0] for line in lines] == [f"[pipelines.m] parser, key {k!r}"
                                                          for k in ("tar.gz", "*", "pdf", "html")]


@pytest.mark.parametrize("table, message", BAD_TABLES)
def test_a_bad_routing_table_exits_2_before_any_document_is_read(tmp_path, table, message):
    root = _corpus(tmp_path / "c", {"notes.txt": (b"notes\n", "notes")}, f"[pipelines.mixed]\nparser = {table}\n")
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["run", str(root), "--pipeline", "mixed", "--out", str(out)])
    assert r.exit_code == 2
    text = " ".join(r.output.split())
    assert "[pipelines.mixed] parser" in text and message in text and VALID in text
    assert not out.exists()  # stopped before the output folder, let alone a document
    v = CliRunner().invoke(app, ["validate", str(root)])
    assert v.exit_code == 2
    vtext = " ".join(v.output.split())
    assert "ingestaudit.toml: [pipelines.mixed] parser" in vtext and message in vtext and VALID in vtext


def test_routing_keys_are_lower_case_without_the_dot_and_default_comes_last():
    p = make_pipeline("m", {"parser": {"default": "unstructured", ".PDF": "pymupdf", "htm": "unstructured",
                                       "html": "unstructured"}})
    choice = p.stage("parser")
    assert (choice.use, choice.options) == ("routed", ())
    assert choice.routes == (("pdf", "pymupdf"), ("htm", "unstructured"), ("html", "unstructured"),
                             ("default", "unstructured"))
    assert p.parsers() == ["pymupdf", "unstructured"]
    assert make_pipeline("m", {"parser": {"use": "pymupdf", "sort": True}}).stage("parser").routes == ()


def test_a_route_is_taken_by_extension_else_default():
    from pathlib import Path

    from ingestaudit.parsers.routing import parser_spec

    spec = parser_spec(make_pipeline("m", {"parser": {"pdf": "pymupdf", "default": "unstructured"}}),
                       {"pymupdf": {"sort": True}})
    assert spec.route_label(Document("c/a", "c", Path("/x/a.PDF"))) == "pymupdf"
    assert spec.route(Document("c/a", "c", Path("/x/a.PDF"))).options == {"sort": True}
    assert spec.route_label(Document("c/b", "c", Path("/x/b.htm"))) == "unstructured"
    assert spec.route_label(Document("c/b", "c", Path("/x/README"))) == "unstructured"
    no_default = parser_spec(make_pipeline("m", {"parser": {"pdf": "pymupdf"}}), {})
    assert no_default.route(Document("c/b", "c", Path("/x/b.html"))) is None
    single = parser_spec(make_pipeline("pymupdf", {"parser": "pymupdf"}), {})
    assert single.route_label(Document("c/b", "c", Path("/x/b.html"))) == "pymupdf"


def test_a_parser_sweep_over_a_routed_pipeline_is_refused():
    p = make_pipeline("m", {"parser": {"pdf": "pymupdf"}})
    with pytest.raises(PipelineError, match=r"--sweep parser.sort: pipeline 'm' routes its parser by file extension"):
        expand([p], [Sweep.parse("parser.sort=true,false")])


def test_a_corpus_config_may_not_route_to_a_module_path_and_an_extension_is_no_file_key():
    from ingestaudit.config import Config, untrusted_fields

    cfg = Config.model_validate({"pipelines": {"m": {"parser": {"log": "pymupdf", "pdf": "evil.mod:Parser"}}}})
    assert [f for f, _ in untrusted_fields(cfg)] == ["pipelines.m.parser.pdf"]


def test_a_store_written_before_the_parser_column_reads_with_an_empty_parser(tmp_path):
    """Stores of schema 2.1 have no ``parser`` column: `report`, `compare` and `history` read them through
    `iter_batches`, which adds it empty."""
    from ingestaudit.store import COLUMNS, iter_batches, read_measurements

    old = [c for c in COLUMNS if c != "parser"]
    row = {"item": "c/a", "item_kind": "document", "class": "c", "pipeline": "p", "stage": "extraction",
           "metric": "extraction.cer", "label": "", "value": 0.25, "numerator": 1.0, "denominator": 4.0,
           "state": "ok", "detail": "{}"}
    schema = pa.schema([(c, pa.float64() if c in ("value", "numerator", "denominator") else pa.string())
                        for c in old])
    pq.write_table(pa.Table.from_pylist([row, {**row, "item": "c/b", "state": "error", "value": None}],
                                        schema=schema), tmp_path / "old.parquet")
    (r,) = list(iter_store_rows(tmp_path / "old.parquet", states=("ok",)))
    assert (r.item, r.value, r.parser) == ("c/a", 0.25, "")
    batches = list(iter_batches(tmp_path / "old.parquet", ["parser", "item"], {"parser": [""]}))
    assert [b.to_pylist() for b in batches] == [[{"parser": "", "item": "c/a"}, {"parser": "", "item": "c/b"}]]
    assert [m["parser"] for m in read_measurements(tmp_path / "old.parquet")] == ["", ""]
    from ingestaudit.report.integrity import check_store
    from ingestaudit.report.schema import ReportError

    check_store(tmp_path / "old.parquet", 2, "2.1")  # the integrity check reads a 2.1 store without the column
    with pytest.raises(ReportError, match="no column 'parser'"):  # a 2.2 report's store must have it (hostile trial)
        check_store(tmp_path / "old.parquet", 2, "2.2")
    with pytest.raises(ReportError, match="no column 'detail'"):  # any other missing column is refused
        pq.write_table(pa.Table.from_pylist([row], schema=schema).drop(["detail"]), tmp_path / "bad.parquet")
        check_store(tmp_path / "bad.parquet", 1, "2.1")


def test_stages_and_parsers_list_the_extensions_each_parser_reads():
    stages = CliRunner().invoke(app, ["stages"])
    assert stages.exit_code == 0
    assert ("parser (default pymupdf; routes: the extensions each reads): pymupdf (epub, oxps, pdf, xps); "
            "reference (any); tagged (pdf); tesseract (bmp, jpeg, jpg, pdf, png, tif, tiff); unstructured (htm, "
            "html, md, pdf, txt)") in stages.output
    parsers = CliRunner().invoke(app, ["parsers"])
    assert parsers.exit_code == 0
    cols = {line.split("\t")[0]: line.split("\t")[3] for line in parsers.output.splitlines()}
    assert cols["pymupdf"] == "epub, oxps, pdf, xps" and cols["reference"] == "any"


def test_a_routed_bake_off_has_a_verdict_over_every_item(tmp_path):
    """Issue 25: routing makes every pipeline cover every item, so each verdict row pairs all of them."""
    toml = ROUTED + '[pipelines.plain]\nparser = { default = "reference" }\n'
    root = _corpus(tmp_path / "c", ACCEPTANCE, toml)
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["run", str(root), "--pipeline", "mixed", "--pipeline", "plain", "--stage",
                                 "extraction", "--out", str(out), "--executor", "serial"])
    assert r.exit_code == 0, r.output
    verdict = json.loads((out / "report.json").read_text())["verdict"]
    assert {v["class"] for v in verdict} == {"mixed", "__all__"}
    assert all(v["n_shared"] == v["n_items"] == 3 for v in verdict), verdict
    assert all(v["best"] == "plain" for v in verdict if v["metric"] == "extraction.cer_norm")  # the reference text


def test_a_duplicate_extension_lists_the_valid_parsers():
    with pytest.raises(PipelineError) as caught:
        make_pipeline("m", {"parser": {"pdf": "pymupdf", ".PDF": "tagged"}})
    (line,) = str(caught.value).splitlines()
    assert "key '.PDF': extension 'pdf' given twice ('pdf' and '.PDF'" in line
    assert "valid parsers: pymupdf, reference, tagged" in line
