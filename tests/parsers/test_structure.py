"""Parsers emit structure: PyMuPDF headings (outline, fontstats-v1) and list items, the tagged parser's structure tree
(built PDFs: fine, cyclic, broken, untagged), and the demo corpus's headings and two-column reading order."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ingestaudit.auditors.base import ItemArtefacts
from ingestaudit.auditors.layout import HEADING_METRICS, HEADING_SOURCES, LIST_SOURCES, LayoutAuditor
from ingestaudit.corpus import discover
from ingestaudit.document import Document
from ingestaudit.model import ParsedDocument
from ingestaudit.parsers.base import NoOutput, ParserError
from ingestaudit.parsers.pymupdf_parser import PyMuPDFParser
from ingestaudit.measurement import State
from ingestaudit.parsers.pymupdf_structure import (BULLETS, NUMBERED, HeadingRules, Line, classify_lines, font_stats,
                                                   is_list_start)
from ingestaudit.parsers.registry import load_parser
from ingestaudit.parsers.structtree import MAX_DEPTH, Glyph, join_glyphs
from ingestaudit.parsers.tagged_parser import TaggedPDFParser
from ingestaudit.truth import Heading, Truth, load_truth
from _rows import load_report, measurements

pymupdf = pytest.importorskip("pymupdf")
pikepdf = pytest.importorskip("pikepdf")

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "demo"


def _doc(path: Path) -> Document:
    return Document(path.stem, "test", path)


def _heads(parsed: ParsedDocument) -> list[tuple[int | None, str]]:
    return [(b.level, b.text) for b in parsed.blocks if b.kind == "heading"]


# --- PyMuPDF: font statistics, outline, lists -----------------------------------------------------------------------

def _font_pdf(path: Path, toc: list | None = None) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = 72.0

    def put(text: str, size: float, font: str, gap: float) -> None:
        nonlocal y
        page.insert_text((72, y), text, fontsize=size, fontname=font)
        y += gap

    put("Quarterly Water Report", 20, "hebo", 34)
    put("Sampling sites", 13, "hebo", 24)
    for k in range(6):
        put(f"Body line {k} describes the sampling of the river at one more site.", 11, "helv", 14)
    y += 10
    put("- Nitrate stayed below the limit", 11, "helv", 14)
    put("2. Phosphate rose after the rain", 11, "helv", 24)
    put("Next steps", 11, "hebo", 24)
    for k in range(4):
        put(f"Another body line {k} tells what the team will do in the next quarter.", 11, "helv", 14)
    if toc:
        doc.set_toc(toc)
    doc.save(path)
    return path


def test_pymupdf_headings_from_font_statistics_with_levels_and_list_items(tmp_path: Path):
    parsed = PyMuPDFParser().parse(_doc(_font_pdf(tmp_path / "fonts.pdf")))
    assert _heads(parsed) == [(1, "Quarterly Water Report"), (2, "Sampling sites"), (3, "Next steps")]
    items = [b.text.strip() for b in parsed.blocks if b.kind == "list_item"]
    assert items == ["- Nitrate stayed below the limit", "2. Phosphate rose after the rain"]
    how = parsed.settings["headings"]
    assert how["source"] == "font statistics" and how["rule"] == "fontstats-v1" and how["body_size"] == 11.0
    assert [(s["size"], s["bold"], s["level"]) for s in how["styles"]] == [(20.0, True, 1), (13.0, True, 2),
                                                                           (11.0, True, 3)]
    assert parsed.settings["structure"]["font_rule"]["size_ratio"] == 1.15
    # every heading block's text is in the parsed text (the structural chunker locates them there)
    for _, text in _heads(parsed):
        assert text in parsed.text


def test_pymupdf_outline_wins_over_fonts_and_missing_entries_are_counted(tmp_path: Path):
    toc = [[1, "Quarterly Water Report", 1], [2, "Next steps", 1], [2, "Not on the page", 1]]
    parsed = PyMuPDFParser().parse(_doc(_font_pdf(tmp_path / "outline.pdf", toc)))
    assert _heads(parsed) == [(1, "Quarterly Water Report"), (2, "Next steps")]  # "Sampling sites" not in outline
    how = parsed.settings["headings"]
    assert how["source"] == "outline (get_toc)" and (how["outline_entries"], how["outline_not_found"]) == (3, 1)
    assert any("outline entries not found" in w for w in parsed.warnings)
    fonts_only = PyMuPDFParser(headings="fonts").parse(_doc(tmp_path / "outline.pdf"))
    assert len(_heads(fonts_only)) == 3
    none = PyMuPDFParser(headings="none", lists=False).parse(_doc(tmp_path / "outline.pdf"))
    assert not _heads(none) and not any(b.kind == "list_item" for b in none.blocks)
    assert none.text == parsed.text  # structure never changes the text
    with pytest.raises(ValueError):
        PyMuPDFParser(headings="guess")


def test_pymupdf_declares_its_heading_and_list_sources_and_records_the_list_patterns(tmp_path: Path):
    path = _font_pdf(tmp_path / "fonts.pdf")
    fonts = PyMuPDFParser().parse(_doc(path))
    assert (fonts.settings["heading_source"], fonts.settings["list_source"]) == ("font_heuristic", "marker_patterns")
    outline = PyMuPDFParser().parse(_doc(_font_pdf(tmp_path / "toc.pdf", [[1, "Quarterly Water Report", 1]])))
    assert outline.settings["heading_source"] == "outline"
    off = PyMuPDFParser(headings="none", lists=False).parse(_doc(path))
    assert (off.settings["heading_source"], off.settings["list_source"]) == ("none", "none")
    assert off.settings["structure"]["list_items"] is False
    # "outline" only, on a document without one: this parser cannot give it headings
    assert PyMuPDFParser(headings="outline").parse(_doc(path)).settings["heading_source"] == "none"
    assert PyMuPDFParser(headings="auto").settings()["heading_source"] == "outline, else font_heuristic"
    rule = fonts.settings["structure"]["list_items"]
    assert rule["rule"] == "markers-v1" and rule["numbered_pattern"] == NUMBERED.pattern
    assert rule["bullets"][0] == "U+2022" and len(rule["bullets"]) == len(BULLETS)
    assert re.compile(rule["bullet_pattern"]).match("\u2022 Item") and not re.compile(
        rule["bullet_pattern"]).match("-5 degrees")
    assert fonts.settings["structure"]["font_rule"] == {"rule": "fontstats-v1", "size_ratio": 1.15,
                                                       "bold_min_delta": 0.25, "max_style_share": 0.3,
                                                       "max_chars": 150, "max_level": 6}


def test_every_built_in_parser_declares_sources_from_the_auditors_vocabulary():
    from ingestaudit.parsers.tesseract_parser import TesseractParser
    from ingestaudit.parsers.unstructured_parser import UnstructuredParser

    declared = {
        "pymupdf": PyMuPDFParser(headings="fonts").settings(), "tagged": TaggedPDFParser().settings(),
        "tesseract": TesseractParser().settings(), "unstructured": UnstructuredParser().settings()}
    assert {k: (v["heading_source"], v["list_source"]) for k, v in declared.items()} == {
        "pymupdf": ("font_heuristic", "marker_patterns"), "tagged": ("structure_tree", "structure_tree"),
        "tesseract": ("none", "none"), "unstructured": ("title_elements", "list_elements")}
    for v in declared.values():
        assert v["heading_source"] in HEADING_SOURCES and v["list_source"] in LIST_SOURCES


def test_pymupdf_on_an_image_only_pdf_is_no_prediction_not_zero():
    doc, truth = _demo("scanned/allotment_minutes")
    parsed = PyMuPDFParser().parse(doc)
    assert not parsed.text.strip() and [b.kind for b in parsed.blocks] == ["image"]
    rows = {s.metric: s for s in LayoutAuditor().audit(ItemArtefacts.of(truth, parsed))}
    for m in (*HEADING_METRICS, "layout.order_discordance", "layout.order_located"):
        assert rows[m].state is State.NO_PREDICTION, m
    assert rows["layout.heading_f1"].detail["reason"] == "the parser pymupdf produced no text"
    assert rows["layout.order_discordance"].detail["reason"] == "the parser produced no text"


def test_fontstats_rules_on_lines():
    body = [Line("body text line " * 3, 10.0, False, 40, (0, 0, 1, 1)) for _ in range(20)]
    big = Line("Big Title", 16.0, False, 8, (0, 0, 1, 1))
    bold = Line("Bold Heading", 10.0, True, 11, (0, 0, 1, 1))
    rules = HeadingRules()
    stats = font_stats(body + [big, bold], rules)
    assert stats.body_size == 10.0 and stats.levels == {(16.0, False): 1, (10.0, True): 2}
    # a bold line inside a paragraph is not a heading; opening its block it is
    pieces = classify_lines([body[0], bold, body[1]], stats, rules)
    assert [p.kind for p in pieces] == ["paragraph"]
    pieces = classify_lines([bold, body[0]], stats, rules)
    assert [(p.kind, p.level) for p in pieces] == [("heading", 2), ("paragraph", None)]
    # a style holding more than 30 % of the characters is body text, not headings
    stats = font_stats([Line("x" * 40, 10.0, False, 40, (0, 0, 1, 1)),
                        Line("y" * 30, 12.0, False, 30, (0, 0, 1, 1))], rules)
    assert stats.levels == {}


@pytest.mark.parametrize("text, expected", [
    ("• Item", True), ("- item", True), ("1. First", True), ("a) nested", True), ("(iv) fourth", True),
    ("1.2. Sub", True), ("1.5 litres", False), ("e.g. this", False), ("-5 degrees", False),
    ("- - - - x", False), ("The end.", False)])
def test_list_item_patterns(text: str, expected: bool):
    assert is_list_start(text) is expected


def test_pymupdf_page_with_ten_thousand_tiny_spans(tmp_path: Path):
    pdf = pikepdf.Pdf.new()
    page = pdf.add_blank_page(page_size=(595, 842))
    font = pdf.make_indirect(pikepdf.Dictionary(Type=pikepdf.Name.Font, Subtype=pikepdf.Name.Type1,
                                                BaseFont=pikepdf.Name.Helvetica))
    page.Resources = pikepdf.Dictionary(Font=pikepdf.Dictionary(F1=font))
    ops = [b"BT /F1 14 Tf 40 810 Td (A real heading) Tj ET"]
    for k in range(10_000):
        x, y = 20 + (k % 100) * 5.5, 780 - (k // 100) * 7.5
        ops.append(b"BT /F1 %d Tf %.1f %.1f Td (%c) Tj ET" % (2 + k % 3, x, y, 97 + k % 26))
    page.Contents = pdf.make_stream(b"\n".join(ops))
    path = tmp_path / "tiny.pdf"
    pdf.save(path)
    parsed = PyMuPDFParser(tables=False).parse(_doc(path))
    # every glyph survives: the 10,000 tiny letters plus the heading's 12
    assert sum(ch.isalpha() for ch in parsed.text) == 10_012
    # the font rule takes the tiny sizes as the body (3 pt) and finds the one 14 pt line, and nothing else
    assert parsed.settings["headings"]["source"] == "font statistics"
    assert parsed.settings["headings"]["body_size"] == 3.0
    assert _heads(parsed) == [(1, "A real heading")]
    # MuPDF groups the letters into 100 text blocks (one per row of 100 letters): all paragraphs, no list item
    kinds = [b.kind for b in parsed.blocks]
    assert kinds == ["heading"] + ["paragraph"] * 100
    truth = Truth(headings=(Heading(level=1, text="A real heading"),))
    rows = {s.metric: s for s in LayoutAuditor().audit(ItemArtefacts.of(truth, parsed))}
    assert (rows["layout.heading_precision"].value, rows["layout.heading_recall"].value) == (1.0, 1.0)


# --- the tagged parser -----------------------------------------------------------------------------------------------

def _tagged_pdf(path: Path, *, cyclic: bool = False, no_s: bool = False, untagged: bool = False) -> Path:
    """A one-page PDF whose content is marked (MCID 0-4) and, unless ``untagged``, a structure tree
    Document[H1, P, H2, L[LI, LI]] with an artifact running header outside the tree."""
    from pikepdf import Array, Dictionary, Name

    pdf = pikepdf.Pdf.new()
    font = pdf.make_indirect(Dictionary(Type=Name.Font, Subtype=Name.Type1, BaseFont=Name.Helvetica,
                                        Encoding=Name.WinAnsiEncoding))
    page = pdf.add_blank_page(page_size=(595, 842))
    page.Resources = Dictionary(Font=Dictionary(F1=font))
    page.Contents = pdf.make_stream(b"""/Artifact BMC BT /F1 8 Tf 72 800 Td (Running header) Tj ET EMC
/H1 <</MCID 0>> BDC BT /F1 18 Tf 72 740 Td (Annual Report) Tj ET EMC
/P <</MCID 1>> BDC BT /F1 11 Tf 72 710 Td (The first paragraph starts the text.) Tj ET EMC
/H2 <</MCID 2>> BDC BT /F1 14 Tf 72 680 Td (Results) Tj ET EMC
/LI <</MCID 3>> BDC BT /F1 11 Tf 72 650 Td (1. Sales rose) Tj ET EMC
/LI <</MCID 4>> BDC BT /F1 11 Tf 72 635 Td (2. Costs fell) Tj ET EMC
""")
    if not untagged:
        pg = page.obj
        root = pdf.make_indirect(Dictionary(Type=Name.StructTreeRoot))
        doc = pdf.make_indirect(Dictionary(Type=Name.StructElem, S=Name.Document, P=root))

        def el(s: str, parent, k):
            return pdf.make_indirect(Dictionary(Type=Name.StructElem, S=Name(s), P=parent, Pg=pg, K=k))

        h1, p, h2 = el("/H1", doc, 0), el("/P", doc, 1), el("/H2", doc, 2)
        lst = el("/L", doc, Array([]))
        li1, li2 = el("/LI", lst, 3), el("/LI", lst, 4)
        lst.K = Array([li1, li2, doc]) if cyclic else Array([li1, li2])
        if no_s:
            del p["/S"]
        doc.K = Array([h1, p, h2, lst])
        root.K = doc
        pdf.Root.StructTreeRoot = root
        pdf.Root.MarkInfo = Dictionary(Marked=True)
    pdf.save(path)
    return path


def test_tagged_parser_reads_headings_paragraphs_and_list_items(tmp_path: Path):
    parsed = TaggedPDFParser().parse(_doc(_tagged_pdf(tmp_path / "ok.pdf")))
    assert [(b.kind, b.level, b.text) for b in parsed.blocks] == [
        ("heading", 1, "Annual Report"), ("paragraph", None, "The first paragraph starts the text."),
        ("heading", 2, "Results"), ("list_item", None, "1. Sales rose"), ("list_item", None, "2. Costs fell")]
    assert parsed.text == "Annual Report\nThe first paragraph starts the text.\nResults\n1. Sales rose\n2. Costs fell"
    assert "Running header" not in parsed.text  # an artifact is not structure content
    assert parsed.settings["headings"]["headings"] == 2
    top = parsed.blocks[0].bbox
    assert top is not None and 80 < top[1] < 102 < top[3] < 110  # baseline at 842 - 740 = 102 from the top


def test_tagged_parser_errors_per_document(tmp_path: Path):
    with pytest.raises(ParserError, match=r"cyclic structure tree: obj \d+ 0 contains itself"):
        TaggedPDFParser().parse(_doc(_tagged_pdf(tmp_path / "cyclic.pdf", cyclic=True)))
    with pytest.raises(ParserError, match=r"structure element obj \d+ 0 has no /S"):
        TaggedPDFParser().parse(_doc(_tagged_pdf(tmp_path / "nos.pdf", no_s=True)))
    with pytest.raises(NoOutput, match="not a tagged PDF"):
        TaggedPDFParser().parse(_doc(_tagged_pdf(tmp_path / "plain.pdf", untagged=True)))
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.7\nthis is not a pdf")
    with pytest.raises(ParserError):
        TaggedPDFParser().parse(_doc(tmp_path / "broken.pdf"))


def test_tagged_tree_deeper_than_max_depth_is_an_error_naming_the_file(tmp_path: Path):
    from pikepdf import Array, Dictionary, Name

    path = _tagged_pdf(tmp_path / "deep.pdf")
    with pikepdf.open(path, allow_overwriting_input=True) as pdf:
        root = pdf.Root.StructTreeRoot
        node = root.K  # Document: wrap it in MAX_DEPTH + 10 nested Div elements
        for _ in range(MAX_DEPTH + 10):
            node = pdf.make_indirect(Dictionary(Type=Name.StructElem, S=Name.Div, K=Array([node])))
        root.K = node
        pdf.save(path)
    with pytest.raises(ParserError, match=rf"deep.pdf: structure tree deeper than {MAX_DEPTH} levels"):
        TaggedPDFParser().parse(_doc(path))


def test_a_broken_tagged_pdf_gives_error_rows_with_the_message_and_the_run_goes_on(tmp_path: Path):
    import json

    from typer.testing import CliRunner

    from ingestaudit.cli import app

    root = tmp_path / "corpus"
    (root / "docs" / "t").mkdir(parents=True)
    (root / "truth" / "t").mkdir(parents=True)
    truth = {"headings": [{"level": 1, "text": "Annual Report"}, {"level": 2, "text": "Results"}],
             "lists": [["1. Sales rose", "2. Costs fell"]]}
    for name, opts in (("fine", {}), ("cyclic", {"cyclic": True}), ("nos", {"no_s": True})):
        _tagged_pdf(root / "docs" / "t" / f"{name}.pdf", **opts)
        (root / "truth" / "t" / f"{name}.json").write_text(json.dumps(truth), encoding="utf-8")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["run", str(root), "--parser", "tagged", "--stage", "layout", "--executor",
                                   "serial", "--out", str(out)])
    assert res.exit_code == 0, res.output
    report = load_report(out)
    rows = {(m["item"], m["metric"]): m for m in measurements(report)}
    for item, cause in (("t/cyclic", r"cyclic structure tree: obj \d+ 0 contains itself"),
                        ("t/nos", r"structure element obj \d+ 0 has no /S \(type\)")):
        for m in (*HEADING_METRICS, "layout.list_integrity"):
            assert rows[(item, m)]["state"] == "error", (item, m)
            assert re.search(rf"{item.split('/')[1]}\.pdf: {cause}", rows[(item, m)]["detail"]["reason"]), item
        assert [f["stage"] for f in report["failures"] if f["item"] == item] == ["parse"]  # reported once
    for m in ("layout.heading_recall", "layout.heading_precision", "layout.hierarchy", "layout.list_integrity"):
        assert rows[("t/fine", m)]["state"] == "ok" and rows[("t/fine", m)]["value"] == 1.0, m


def test_importer_lists_a_broken_tree_as_unsupported_and_imports_the_others(tmp_path: Path):
    import json

    from ingestaudit.importers import import_corpus

    src = tmp_path / "src"
    (src / "pdfs").mkdir(parents=True)
    _tagged_pdf(src / "pdfs" / "fine.pdf")
    _tagged_pdf(src / "pdfs" / "cyclic.pdf", cyclic=True)
    _tagged_pdf(src / "pdfs" / "plain.pdf", untagged=True)
    summary = import_corpus("pdfplumber-tagged", src, tmp_path / "corpus")
    assert summary.documents == ("tagged/fine",)
    assert summary.unsupported_counts() == {"broken_structure_tree": 1, "untagged_pdf": 1}
    broken = next(u for u in summary.unsupported if u.kind == "broken_structure_tree")
    assert (broken.item, broken.source) == ("cyclic", "pdfs/cyclic.pdf")
    assert re.fullmatch(r".*cyclic\.pdf: cyclic structure tree: obj \d+ 0 contains itself", broken.reason)
    truth = json.loads((tmp_path / "corpus" / "truth" / "tagged" / "fine.json").read_text(encoding="utf-8"))
    assert truth["headings"] == [{"level": 1, "text": "Annual Report"}, {"level": 2, "text": "Results"}]


def test_tagged_parser_is_registered():
    assert isinstance(load_parser("tagged"), TaggedPDFParser)


def test_join_glyphs_spaces_at_gaps_and_line_changes():
    def g(t: str, x: float, top: float = 0.0) -> Glyph:
        return Glyph(t, x, top, x + 5, top + 10)

    assert join_glyphs([g("a", 0), g("b", 5), g("c", 20)]) == "ab c"  # gap 10 > 0.1 x 10
    assert join_glyphs([g("a", 0), g("b", 0, top=20)]) == "a b"  # next line
    assert join_glyphs([g("a", 0), g(" ", 5), g("b", 30)]) == "a b"  # a space glyph is not doubled


# --- the demo corpus ---------------------------------------------------------------------------------------------------

def _demo(doc_id: str):
    corpus = discover(DEMO)
    doc = next(d for d in corpus.documents if d.doc_id == doc_id)
    return doc, load_truth(doc, corpus.root)


@pytest.mark.parametrize("doc_id", ["born_digital/pump_field_note", "born_digital/bylaw_quiet_hours",
                                    "born_digital/lab_notes_right_first"])
def test_demo_pdf_headings_with_pymupdf(doc_id: str):
    doc, truth = _demo(doc_id)
    rows = {s.metric: s for s in LayoutAuditor().audit(ItemArtefacts.of(truth, PyMuPDFParser().parse(doc)))}
    for m in ("layout.heading_precision", "layout.heading_recall", "layout.heading_level", "layout.hierarchy"):
        assert rows[m].value == 1.0, (doc_id, m, rows[m])


@pytest.mark.parametrize("doc_id", ["born_digital/pump_field_note", "born_digital/bylaw_quiet_hours"])
def test_two_column_demo_order_zero_in_column_order_and_non_zero_interleaved(doc_id: str):
    doc, truth = _demo(doc_id)
    def rows(sort: bool) -> dict:
        return {s.metric: s for s in LayoutAuditor().audit(ItemArtefacts.of(truth, PyMuPDFParser(sort=sort).parse(doc)))}

    by_column, interleaved = rows(False), rows(True)
    assert by_column["layout.order_discordance"].value == 0.0
    assert by_column["layout.order_located"].value == 1.0
    o = interleaved["layout.order_discordance"]
    # sort=True interleaves the columns line by line: pump_field_note 23 of C(20, 2) = 190 pairs swapped (0.1211),
    # the bylaw 5 of C(13, 2) = 78 (0.0641)
    assert (o.numerator, o.denominator) == {"born_digital/pump_field_note": (23, 190),
                                            "born_digital/bylaw_quiet_hours": (5, 78)}[doc_id]
    assert interleaved["layout.order_located"].value == 1.0  # found by their heads, not lost


def test_right_column_first_content_stream_is_discordant():
    doc, truth = _demo("born_digital/lab_notes_right_first")
    rows = {s.metric: s for s in LayoutAuditor().audit(ItemArtefacts.of(truth, PyMuPDFParser(sort=False).parse(doc)))}
    o = rows["layout.order_discordance"]
    assert (o.numerator, o.denominator) == (9, 45)  # the right column's paragraphs first: 9 of C(10, 2) pairs


def test_demo_untagged_pdf_gives_no_output_with_the_tagged_parser():
    doc, _ = _demo("born_digital/pump_field_note")
    with pytest.raises(NoOutput):
        TaggedPDFParser().parse(doc)


TESSERACT_SAMPLE = ("scanned/allotment_minutes", "web/kettle_faq")


@pytest.mark.slow
def test_demo_headings_with_every_parser():
    """Every parser on every demo document: heading rows are ok or in a named state, never a silent 0 for a parser
    that cannot emit headings (tesseract) or produced no text (pymupdf on a scan); the values below are what each
    parser does with the demo's headings."""
    corpus = discover(DEMO)
    auditor = LayoutAuditor()
    recall: dict[str, dict[str, object]] = {}
    for name in ("pymupdf", "unstructured", "tesseract", "tagged", "reference"):
        parser = load_parser(name)
        # OCR takes about two minutes on the whole demo; one scan and one page shows what it declares
        docs = [d for d in corpus.documents if name != "tesseract" or d.doc_id in TESSERACT_SAMPLE]
        for doc in docs:
            truth = load_truth(doc, corpus.root)
            assert truth.headings, doc.doc_id  # every demo document is labelled
            try:
                parsed = parser.parse(doc)
            except (ParserError,) as exc:
                recall.setdefault(name, {})[doc.doc_id] = type(exc).__name__
                continue
            rows = {s.metric: s for s in auditor.audit(ItemArtefacts.of(truth, parsed))}
            r = rows["layout.heading_recall"]
            recall.setdefault(name, {})[doc.doc_id] = r.value if r.value is not None else r.state.value
    born = ("born_digital/pump_field_note", "born_digital/bylaw_quiet_hours", "born_digital/lab_notes_right_first")
    assert all(recall["pymupdf"][d] == 1.0 for d in born)
    assert recall["pymupdf"]["scanned/allotment_minutes"] == "no_prediction"  # image only: no text at all
    assert recall["pymupdf"]["web/kettle_faq"] == "UnsupportedFormat"
    assert all(recall["unstructured"][d] == 1.0 for d in ("web/kettle_faq", "web/trail_guide",
                                                          "web/stadtbibliothek_oeffnungszeiten"))
    assert recall["unstructured"]["born_digital/bylaw_quiet_hours"] == pytest.approx(1 / 7)  # "1. Purpose"... as lists
    # plain OCR declares heading_source = none: no_prediction, not a 0 that reads as "tried and missed"
    assert recall["tesseract"] == {"scanned/allotment_minutes": "no_prediction", "web/kettle_faq": "UnsupportedFormat"}
    assert all(recall["tagged"][d] == "NoOutput" for d in born)  # the demo PDFs are untagged
    assert set(recall["reference"].values()) == {1.0}  # the reference parser emits the labelled headings
