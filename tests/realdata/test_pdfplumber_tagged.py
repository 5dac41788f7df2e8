"""pdfplumber's tagged PDFs (../shared/data/pdfplumber-tagged): the structure-tree reader against pdfplumber's own
test expectations and against PyMuPDF's structure reading, the importer, and ``ingestaudit run`` end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingestaudit.importers import DestinationNotEmpty, import_corpus
from ingestaudit.parsers import structtree as st

EXPECTED = "expected_structure_trees_from_pdfplumber_tests.json"


@pytest.fixture(scope="module")
def src(shared_dataset) -> Path:
    return shared_dataset("pdfplumber-tagged")


@pytest.fixture(scope="module")
def corpus(src: Path, tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("tagged") / "corpus"
    import_corpus("pdfplumber-tagged", src, dest)
    return dest


def _skeleton(e: st.Element) -> dict | None:
    """Type, direct MCIDs and children of an element with content on the file's pages (pdfplumber's shape)."""
    kids = [k for k in (_skeleton(c) for c in e.children if isinstance(c, st.Element)) if k is not None]
    mcids = [c.mcid for c in e.children if isinstance(c, st.ContentRef)]
    if not kids and not mcids:
        return None
    out: dict = {"type": e.type}
    if mcids:
        out["mcids"] = mcids
    if kids:
        out["children"] = kids
    return out


def _theirs(e: dict) -> dict:
    out: dict = {"type": e["type"]}
    if e.get("mcids"):
        out["mcids"] = e["mcids"]
    if e.get("children"):
        out["children"] = [_theirs(c) for c in e["children"]]
    return out


def test_tree_reader_agrees_with_pdfplumbers_expected_trees(src: Path):
    expected = json.loads((src / EXPECTED).read_text(encoding="utf-8"))
    docs = [k for k in expected if not k.startswith("_")]
    assert len(docs) == 5
    for rel in docs:
        tree = st.read_tree(src / rel)
        mine = [k for k in (_skeleton(r) for r in tree.roots) if k is not None]
        assert mine == [_theirs(e) for e in expected[rel]], rel


def _pymupdf_headings(path: Path) -> list[tuple[int, str]]:
    """H1-H6 structure elements as PyMuPDF (MuPDF's own structure-tree reader, TEXT_COLLECT_STRUCTURE) sees them."""
    import pymupdf

    out: list[tuple[int, str]] = []

    def text(b: dict) -> str:
        if b.get("type") == 0:
            return " ".join("".join(s["text"] for s in ln["spans"]) for ln in b["lines"])
        return " ".join(text(c) for c in b.get("blocks", []))

    def walk(blocks: list) -> None:
        for b in blocks:
            if b.get("type") == 2:
                if b["std"] in ("H1", "H2", "H3", "H4", "H5", "H6"):
                    out.append((int(b["std"][1]), " ".join(text(b).split())))
                else:
                    walk(b.get("blocks", []))

    with pymupdf.open(path) as doc:
        for page in doc:
            walk(page.get_text("dict", flags=pymupdf.TEXTFLAGS_TEXT | pymupdf.TEXT_COLLECT_STRUCTURE)["blocks"])
    return out


def test_heading_truth_agrees_with_mupdfs_structure_reading(src: Path, corpus: Path):
    checked = 0
    for truth_file in sorted((corpus / "truth" / "tagged").glob("*.json")):
        truth = json.loads(truth_file.read_text(encoding="utf-8"))
        mine = [(h["level"], h["text"]) for h in truth.get("headings", [])]
        assert mine == _pymupdf_headings(src / "pdfs" / f"{truth_file.stem}.pdf"), truth_file.name
        checked += bool(mine)
    assert checked == 2


def test_importer_writes_structure_truth(src: Path, corpus: Path):
    summary = json.loads((corpus / "import.json").read_text(encoding="utf-8"))
    assert summary["classes"] == {"tagged": 6}
    assert summary["imported"] == {"headings": 4, "list_items": 14, "lists": 9, "tables": 2, "texts": 6}
    assert summary["unsupported_counts"] == {"figure_alt_text": 1, "untagged_pdf": 1}
    truth = json.loads((corpus / "truth" / "tagged" / "pdf_structure.json").read_text(encoding="utf-8"))
    assert truth["headings"] == [{"level": 1, "text": "Titre 1"}, {"level": 2, "text": "Titre 2"},
                                 {"level": 3, "text": "Tableau"}]
    assert truth["lists"][1] == ["a) Énumération imbriquée"]  # the nested list is a list of its own
    assert truth["tables"] == ["<table><tr><th>Chose</th><th>Truc</th></tr><tr><td>Chose 1</td><td>Truc 1</td></tr>"
                               "<tr><td>Chose 2</td><td>Truc 2</td></tr></table>"]
    word = json.loads((corpus / "truth" / "tagged" / "word365_structure.json").read_text(encoding="utf-8"))
    assert word["headings"] == [{"level": 1, "text": "Titre"}]  # /Title role-mapped to /H1
    assert "headings" not in json.loads((corpus / "truth" / "tagged" / "2023-06-20-PV.json").read_text("utf-8"))
    assert (corpus / "docs" / "tagged" / "pdf_structure.pdf").is_symlink()
    with pytest.raises(DestinationNotEmpty):
        import_corpus("pdfplumber-tagged", src, corpus)


@pytest.mark.slow
def test_ingestaudit_run_end_to_end(corpus: Path, tmp_path: Path):
    from typer.testing import CliRunner

    from ingestaudit.cli import app

    out = tmp_path / "report"
    res = CliRunner().invoke(app, ["run", str(corpus), "--parser", "tagged", "--parser", "pymupdf",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    summary = {(row.get("pipeline", row.get("parser")), row["metric"]): row for row in report["summary"]
               if row.get("doc_class", row.get("class")) == "__all__" and row.get("label", "") == ""}
    tagged = {m: summary[("tagged", m)] for p, m in summary if p == "tagged"}
    # the tagged parser reads the tree the truth comes from: the baseline
    for m in ("layout.heading_recall", "layout.heading_precision", "layout.heading_level", "layout.hierarchy",
              "layout.list_integrity", "layout.order_located"):
        assert tagged[m]["micro"] == 1.0, m
    assert tagged["layout.order_discordance"]["micro"] == 0.0
    assert tagged["layout.heading_recall"]["states"]["no_reference"] == 4  # 4 documents have no heading
    pm = {m: summary[("pymupdf", m)] for p, m in summary if p == "pymupdf"}
    # PyMuPDF: pdf_structure's outline gives its 3 headings; word365's title by font size; plus one false heading
    # (a bold table header row)
    assert pm["layout.heading_recall"]["micro"] == 1.0
    assert pm["layout.heading_precision"]["micro"] == pytest.approx(4 / 5)
    assert pm["layout.order_discordance"]["micro"] == 0.0
