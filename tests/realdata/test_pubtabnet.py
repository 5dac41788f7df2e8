"""PubTabNet's sample (../shared/data/pubtabnet): import it, run the tables audit on the shipped predictions as a
precomputed parser, and reproduce the published TEDS of PubTabNet's demo notebook end to end (report.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.importers import DestinationNotEmpty, SourceLayoutError, import_corpus
from ingestaudit.truth import TruthFile
from _rows import load_report, measurements


@pytest.fixture(scope="module")
def src(shared_dataset) -> Path:
    return shared_dataset("pubtabnet")


@pytest.fixture(scope="module")
def expected(src: Path) -> dict:
    return json.loads((src / "expected_teds_from_demo_notebook.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def imported(src: Path, tmp_path_factory):
    dest = tmp_path_factory.mktemp("pubtabnet") / "corpus"
    return dest, import_corpus("pubtabnet", src, dest)


def test_import_layout(src, imported):
    dest, summary = imported
    gt = json.loads((src / "src/sample_gt.json").read_text(encoding="utf-8"))
    pred = json.loads((src / "src/sample_pred.json").read_text(encoding="utf-8"))
    stems = sorted(k[:-4] for k in gt)
    examples = [json.loads(line)["filename"][:-4]
                for line in (src / "examples/PubTabNet_Examples.jsonl").read_text(encoding="utf-8").splitlines()
                if line.strip()]
    assert summary.classes == {"pubtabnet": 20, "pubtabnet_examples": len(examples)}
    assert summary.outputs == {"sample_pred": 20} and summary.unsupported == ()
    assert summary.imported == {"tables": 20, "example_tables": len(examples)}
    for stem in stems:
        image = src / "val_mini_images" / f"{stem}.png"
        assert (dest / "docs/pubtabnet" / f"{stem}.png").resolve() == image.resolve()
        truth = json.loads((dest / "truth/pubtabnet" / f"{stem}.json").read_text(encoding="utf-8"))
        TruthFile.model_validate(truth)
        assert truth == {"tables": [gt[f"{stem}.png"]["html"]]}  # byte for byte
        out = json.loads((dest / "outputs/sample_pred/pubtabnet" / f"{stem}.json").read_text(encoding="utf-8"))
        assert out == {"text": "", "tables": [pred[f"{stem}.png"]]}
    for stem in examples:
        truth = json.loads((dest / "truth/pubtabnet_examples" / f"{stem}.json").read_text(encoding="utf-8"))
        assert len(truth["tables"]) == 1 and truth["tables"][0].startswith("<table>")


def test_example_truth_is_the_annotation(src, imported):
    # the first example's first cell is "<b>Variable</b>" in PubTabNet tokens; its HTML keeps the tags as markup
    dest, _ = imported
    first = json.loads((src / "examples/PubTabNet_Examples.jsonl").read_text(encoding="utf-8").splitlines()[0])
    truth = json.loads((dest / "truth/pubtabnet_examples" / f"{first['filename'][:-4]}.json").read_text())
    cell = "".join(first["html"]["cells"][0]["tokens"])
    assert cell == "<b>Variable</b>" and f"<td>{cell}</td>" in truth["tables"][0]


def test_import_refuses_a_wrong_source_and_a_full_destination(src, imported, tmp_path):
    with pytest.raises(SourceLayoutError, match="sample_gt.json"):
        import_corpus("pubtabnet", tmp_path, tmp_path / "x")
    dest, _ = imported
    with pytest.raises(DestinationNotEmpty):
        import_corpus("pubtabnet", src, dest)


def test_report_reproduces_the_published_teds(imported, expected, tmp_path):
    from ingestaudit.cli import app

    dest, _ = imported
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["run", str(dest), "--outputs", str(dest / "outputs"), "--stage", "tables",
                                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    report = load_report(out)
    assert report["config"]["auditors"]["tables"]["deviations"] == "published (PubTabNet reference)"
    rows = {(m["item"], m["metric"], m["label"]): m for m in measurements(report)}
    published = expected["batch_sample_pred_vs_sample_gt"]
    assert len(published) == 20
    for name, value in published.items():
        doc_id = f"pubtabnet/{name[:-4]}"
        row = rows[doc_id, "tables.teds", ""]
        assert row["state"] == "ok" and row["value"] == pytest.approx(value, abs=1e-9), name
        assert (row["numerator"], row["denominator"]) == (pytest.approx(value, abs=1e-9), 1)
        assert rows[doc_id, "tables.teds", "table/0"]["value"] == pytest.approx(value, abs=1e-9)
        assert rows[doc_id, "tables.teds_s", ""]["value"] >= row["value"] - 1e-12
    # the examples have no prediction: no_prediction rows, outside the averages
    assert all(m["state"] == "no_prediction" for m in measurements(report)
               if m["doc_class"] == "pubtabnet_examples")
    summary = {(s["doc_class"], s["metric"], s["label"]): s for s in report["summary"]
               if s["pipeline"] == "sample_pred"}
    mean = sum(published.values()) / 20
    for cls in ("pubtabnet", "__all__"):
        teds_row, teds_s_row = summary[cls, "tables.teds", ""], summary[cls, "tables.teds_s", ""]
        assert teds_row["n_docs"] == 20
        # one table per image: micro (sum / 20 tables) = macro (mean over 20 documents) = the published mean
        assert teds_row["micro"] == pytest.approx(mean, abs=1e-9) and teds_row["macro"] == pytest.approx(mean, abs=1e-9)
        assert round(teds_row["micro"], 6) == 0.899678
        assert round(teds_s_row["micro"], 6) == 0.936100
    # every prediction scores >= 0.6 TEDS, so all 20 are detected at the default threshold 0.5
    assert min(published.values()) > 0.5
    assert summary["pubtabnet", "tables.recall", ""]["micro"] == 1.0
    assert summary["pubtabnet", "tables.precision", ""]["micro"] == 1.0
