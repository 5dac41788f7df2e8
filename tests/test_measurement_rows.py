"""Reading a report's rows (issue 14): from the store beside report.json (schema 2.1, its SHA-256 checked) or inline
(schema 2.0 and 1.x); old reports keep being rendered and gated; the HTML drill-down is capped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _rows import measurements
from ingestaudit.cli import app
from ingestaudit.report.rows import distinct, item_keys, measurement_rows, row_count, store_file
from ingestaudit.report.schema import MeasurementRow, ReportError, StoreRef, read_report

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("rows") / "r"
    r = CliRunner().invoke(app, ["run", str(DEMO), "-p", "pymupdf", "--stage", "extraction", "--executor", "serial",
                                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    return out


def _as_v20(out: Path, dest: Path) -> Path:
    """The run of ``out`` as schema 2.0 wrote it (the development tree's last version): rows inline, the store
    named beside them in ``measurements_store``."""
    raw = json.loads((out / "report.json").read_text())
    raw["schema_version"] = "2.0"
    raw["measurements"] = measurements(out)
    raw["measurements_store"] = {"file": "measurements.parquet", "sha256": "0" * 64}
    raw.pop("failures_total")
    raw.pop("failure_groups")
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "report.json").write_text(json.dumps(raw, indent=1))
    return dest / "report.json"


def test_rows_come_from_the_store_in_canonical_order_with_filters(demo_run):
    report = read_report(demo_run / "report.json")
    assert isinstance(report.measurements, StoreRef) and report.store_path == demo_run / "measurements.parquet"
    rows = list(measurement_rows(report))
    assert len(rows) == row_count(report) == report.measurements.rows == 72
    assert [(r.item_kind, r.item, r.stage, r.metric, r.label) for r in rows] == sorted(
        (r.item_kind, r.item, r.stage, r.metric, r.label) for r in rows)
    cer = list(measurement_rows(report, metrics={"extraction.cer"}, states=("ok",)))
    assert [r.item for r in cer] == [r.item for r in rows if r.metric == "extraction.cer" and r.state == "ok"]
    assert all(isinstance(r, MeasurementRow) and r.detail for r in cer)
    assert all(r.detail == {} for r in measurement_rows(report, metrics={"extraction.cer"}, detail=False))
    assert list(measurement_rows(report, items=set())) == []
    assert distinct(report, "stage") == ["extraction"]
    assert [k for _, k in item_keys(report)] == sorted({r.item for r in rows})


def test_a_store_that_does_not_match_its_report_is_an_error_never_rows_of_another_run(demo_run, tmp_path):
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "report.json").write_bytes((demo_run / "report.json").read_bytes())
    with pytest.raises(ReportError, match="cannot be read .*keep measurements.parquet beside report.json"):
        store_file(read_report(copy / "report.json"))
    data = bytearray((demo_run / "measurements.parquet").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (copy / "measurements.parquet").write_bytes(bytes(data))
    with pytest.raises(ReportError, match="does not match the report's measurements.sha256"):
        list(measurement_rows(read_report(copy / "report.json")))
    r = CliRunner().invoke(app, ["report", str(copy / "report.json")])
    assert r.exit_code == 2 and "does not match" in " ".join(r.output.split())
    r = CliRunner().invoke(app, ["compare", str(demo_run / "report.json"), str(copy / "report.json")])
    assert r.exit_code == 2 and "does not match" in " ".join(r.output.split())


def test_a_store_that_is_not_a_regular_file_is_refused_without_reading_it(demo_run, tmp_path):
    """Regression: a store linked to /dev/zero was hashed for ever by `report`."""
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "report.json").write_bytes((demo_run / "report.json").read_bytes())
    (linked / "measurements.parquet").symlink_to("/dev/zero")
    with pytest.raises(ReportError, match="not a regular file"):
        store_file(read_report(linked / "report.json"))
    r = CliRunner().invoke(app, ["report", str(linked / "report.json")])
    assert r.exit_code == 2 and "not a regular file" in " ".join(r.output.split())


def test_a_report_json_names_a_file_beside_it_only(demo_run, tmp_path):
    raw = json.loads((demo_run / "report.json").read_text())
    raw["measurements"]["file"] = "../elsewhere.parquet"
    (tmp_path / "report.json").write_text(json.dumps(raw))
    with pytest.raises(ReportError, match="measurements.file"):
        read_report(tmp_path / "report.json")


def test_a_schema_2_0_report_with_inline_rows_is_read_rendered_and_gated(demo_run, tmp_path):
    old = _as_v20(demo_run, tmp_path / "v20")
    report = read_report(old)
    assert isinstance(report.measurements, list) and store_file(report) is None
    assert [r.model_dump() for r in measurement_rows(report)] == \
        [r.model_dump() for r in measurement_rows(read_report(demo_run / "report.json"))]
    md = tmp_path / "old.md"
    r = CliRunner().invoke(app, ["report", str(old), "--md", str(md)])
    assert r.exit_code == 0, r.output
    # an old report's list is complete: its length is the total (six unread .png/.html files and the scanned PDF
    # pymupdf returns no text for: empty_output, issue 25)
    assert "## Failures (7)" in md.read_text()
    for base, head in ((old, old), (old, demo_run / "report.json"), (demo_run / "report.json", old)):
        r = CliRunner().invoke(app, ["compare", str(base), str(head)])
        assert r.exit_code == 0, r.output
        assert "no regression" in r.output


def test_the_html_drill_down_is_capped_failing_items_first(demo_run, monkeypatch):
    from ingestaudit.report import render

    report = read_report(demo_run / "report.json")
    failing = {f.item for f in report.failures if f.item}
    monkeypatch.setattr(render, "MAX_DRILL_ITEMS", 7)
    items, caption = render._drill_items(report)
    assert len(items) == 7 and {it["item"] for it in items[:len(failing)]} == failing
    assert caption == ("10 items; each opens to its rows per pipeline (failing items first, at most 8 per class); 7 "
                       "are shown, 3 more in measurements.parquet")
