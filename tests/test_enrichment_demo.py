"""The enrichment demo (fixtures/enrichment, issue 28) through the command line: values worked by hand.

Truth (7 entities): ORG Harbour Lane Cooperative, LOC Rivermouth, DATE "4 March 2023", PER Imogen Vale, ORG
Rivermouth Council, ORG Tidewater Credit Union, PER Tomas Reyes. Predictions after PERSON=PER GPE=LOC (ORDINAL
excluded, 7 judged): four exact (Harbour Lane, Rivermouth, Imogen Vale, Tidewater), DATE "March 2023" (shorter, same
type), LOC "Rivermouth" inside ORG Rivermouth Council, ORG "Tomas Reyes" (labelled PER).

- strict: COR 4, INC 3 -> P = R = F1 = 4/7
- exact: COR 5 (Tomas's boundaries are exact), INC 2 -> 5/7
- partial: COR 5, PAR 2 -> (5 + 1) / 7 = 6/7
- ent_type: COR 5 (the DATE overlaps with its type), INC 2 -> 5/7

Relations: located_in(Harbour Lane, Rivermouth), member_of(Imogen Vale, Harbour Lane), member_of(Tomas Reyes,
Harbour Lane), all predicted; strict fails the third (Tomas typed ORG): tp 2, fp 1, fn 1 -> 2/3; boundaries 3/3.

Metadata (field-v1): title "Annual Report 2023" vs "Annual report, 2023" exact 0, similarity 1 - 1/19; date
2023-03-04 vs "4 March 2023" exact 1; authors exact 1; year 2023 vs 2022 exact 0, similarity 3/4.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from _rows import load_report, measurements

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "enrichment"


def test_enrichment_demo_values(tmp_path):
    out = tmp_path / "report"
    res = CliRunner().invoke(app, ["run", str(FIXTURE / "corpus"), "--outputs", str(FIXTURE / "outputs"),
                                   "--stage", "entities", "--stage", "relations", "--stage", "metadata",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    rows = {(r["metric"], r["label"]): r for r in measurements(load_report(out))}
    for scheme, value in (("strict", 4 / 7), ("exact", 5 / 7), ("partial", 6 / 7), ("ent_type", 5 / 7)):
        for rate in ("precision", "recall", "f1"):
            assert rows[f"entities.{rate}", f"{scheme}/micro"]["value"] == pytest.approx(value), (scheme, rate)
    assert rows["entities.f1", "strict/micro"]["detail"]["excluded"] == {"ORDINAL": 1}
    assert rows["entities.unmapped_predictions", "*"]["value"] == 0.0
    assert rows["relations.f1", "strict/micro"]["value"] == pytest.approx(2 / 3)
    assert rows["relations.f1", "boundaries/micro"]["value"] == 1.0
    assert rows["metadata.exact_match", "title"]["value"] == 0.0
    assert rows["metadata.similarity", "title"]["value"] == pytest.approx(1 - 1 / 19)
    assert rows["metadata.similarity", "title"]["detail"]["profile"] == "field-v1"
    assert rows["metadata.exact_match", "date"]["value"] == 1.0
    assert rows["metadata.exact_match", "authors"]["value"] == 1.0
    assert rows["metadata.similarity", "year"]["value"] == 0.0  # a wrong year: exact only (was 0.75)


def test_metadata_from_a_real_pdfs_document_info(tmp_path):
    """Issue 28 point 4: a PDF written here with PyMuPDF, its document information set (title, author with two
    names, creationDate), parsed by pymupdf and read by the metadata step's parser extractor (pdf_info): title,
    authors, year exact; the labelled date 2023-05-04 against the PDF's 2023-05-03 exact 0, similarity 0 (dates are
    exact only)."""
    import json

    import pymupdf

    root = tmp_path / "corpus"
    (root / "docs" / "r").mkdir(parents=True)
    (root / "truth" / "r").mkdir(parents=True)
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Harbour Lane Cooperative: results of the year.")
    doc.set_metadata({"title": "Annual Report 2023", "author": "Ann Lee; Bo Chen",
                      "creationDate": "D:20230503120000+00'00'"})
    doc.save(str(root / "docs" / "r" / "annual.pdf"))
    doc.close()
    (root / "truth" / "r" / "annual.json").write_text(json.dumps({"metadata": {
        "title": "Annual Report 2023", "authors": ["Ann Lee", "Bo Chen"], "date": "2023-05-04", "year": 2023}}))
    (root / "ingestaudit.toml").write_text('[pipelines.pdf]\nparser = "pymupdf"\nmetadata = "parser"\n')
    res = CliRunner().invoke(app, ["run", str(root), "--out", str(tmp_path / "out"), "--stage", "metadata",
                                   "--executor", "serial"])
    assert res.exit_code == 0, res.output
    got = {(r["metric"], r["label"]): (r["value"], r["detail"]["source"], r["detail"]["extracted"])
           for r in measurements(load_report(tmp_path / "out"))}
    assert got[("metadata.exact_match", "title")] == (1.0, "pdf_info", "annual report 2023")
    assert got[("metadata.exact_match", "authors")][:2] == (1.0, "pdf_info")
    assert got[("metadata.exact_match", "year")][:2] == (1.0, "pdf_info")
    assert got[("metadata.exact_match", "date")] == (0.0, "pdf_info", "2023-05-03")
    assert got[("metadata.similarity", "date")][0] == 0.0  # a day off: dates are exact only (was 0.9)
