"""Tables from the pymupdf parser: PDFs with ruled tables drawn here, the grid and span reconstruction, the cell
text rules, the settings and the table_extraction declaration."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestaudit.auditors.base import ItemArtefacts
from ingestaudit.auditors.tables import TablesAuditor
from ingestaudit.document import Document
from ingestaudit.measurement import State
from ingestaudit.metrics.teds import teds
from ingestaudit.parsers.pymupdf_parser import PyMuPDFParser
from ingestaudit.parsers.pymupdf_tables import (EDGE_TOLERANCE_PT, Grid, GridCell, TableFinderSettings, cell_texts,
                                                cells_to_grid, grid_html)
from ingestaudit.truth import Truth

# The issue's span example: "Region" (rowspan 2) + "Sales" (colspan 2) / "Q1 | Q2" / "North | 10 | 20".
SPANS = ('<table><tbody><tr><td rowspan="2">Region</td><td colspan="2">Sales</td></tr>'
         "<tr><td>Q1</td><td>Q2</td></tr><tr><td>North</td><td>10</td><td>20</td></tr></tbody></table>")
SECOND = ("<table><tbody><tr><td>Margin of\nerror (±)</td><td>a &lt; b &amp; c</td></tr>"
          "<tr><td>x</td><td>y</td></tr></tbody></table>")


def doc(path: Path) -> Document:
    return Document(doc_id=f"pdf/{path.stem}", doc_class="pdf", path=path)


def _line(page, a, b):
    page.draw_line(a, b, color=(0, 0, 0), width=0.8)


@pytest.fixture(scope="module")
def ruled(tmp_path_factory) -> Path:
    """Page 1: the SPANS table drawn with ruling lines (no line through the merged cells) and a 2 x 2 table with a
    two-line cell and '<', '&' in text; page 2: text only."""
    pdf = pymupdf.open()
    page = pdf.new_page(width=612, height=792)
    # rows at y = 100, 120, 140, 160; columns at x = 72, 172, 272, 372
    _line(page, (72, 100), (372, 100))
    _line(page, (172, 120), (372, 120))  # not through "Region": rowspan 2
    _line(page, (72, 140), (372, 140))
    _line(page, (72, 160), (372, 160))
    for x in (72, 172, 372):
        _line(page, (x, 100), (x, 160))
    _line(page, (272, 120), (272, 160))  # not through "Sales": colspan 2
    for x, y, text in [(76, 114, "Region"), (176, 114, "Sales"), (176, 134, "Q1"), (276, 134, "Q2"),
                       (76, 154, "North"), (176, 154, "10"), (276, 154, "20")]:
        page.insert_text((x, y), text, fontsize=10)
    for y in (300, 340, 360):
        _line(page, (72, y), (372, y))
    for x in (72, 222, 372):
        _line(page, (x, 300), (x, 360))
    page.insert_text((76, 314), "Margin of", fontsize=10)
    page.insert_text((76, 330), "error (±)", fontsize=10)
    page.insert_text((226, 314), "a < b & c", fontsize=10)
    page.insert_text((76, 354), "x", fontsize=10)
    page.insert_text((226, 354), "y", fontsize=10)
    pdf.new_page().insert_text((72, 72), "no table here", fontsize=10)
    path = tmp_path_factory.mktemp("pdf") / "ruled.pdf"
    pdf.save(path)
    pdf.close()
    return path


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> Path:
    pdf = pymupdf.open()
    pdf.new_page().insert_text((72, 72), "Only a paragraph, no table.", fontsize=11)
    path = tmp_path_factory.mktemp("pdf") / "plain.pdf"
    pdf.save(path)
    pdf.close()
    return path


def test_ruled_tables_become_html_with_spans(ruled):
    parsed = PyMuPDFParser().parse(doc(ruled))
    assert parsed.tables == (SPANS, SECOND)
    assert parsed.settings["table_extraction"] is True
    assert parsed.warnings == ()
    # the text layer is unchanged by the table finder
    assert parsed.pages[1].strip() == "no table here"


def test_ruled_table_scores_one_and_the_issue_span_values(ruled):
    parsed = PyMuPDFParser().parse(doc(ruled))
    rows = TablesAuditor().audit(ItemArtefacts.of(Truth(tables=(SPANS,)), parsed))
    by = {(s.metric, s.label): s for s in rows}
    # one reference table, two predicted: pair = SPANS (1.0); P = 1/2, R = 1/1
    assert by["tables.teds", ""].value == 1.0
    assert (by["tables.precision", ""].value, by["tables.recall", ""].value) == (0.5, 1.0)
    # the issue: the same table with both span attributes removed scores 0.818182 against the spanned one
    flat = SPANS.replace(' rowspan="2"', "").replace(' colspan="2"', "")
    assert round(teds(parsed.tables[0], flat), 6) == 0.818182


def test_page_without_table_declares_extraction_and_scores_zero(plain):
    parsed = PyMuPDFParser().parse(doc(plain))
    assert parsed.tables == () and parsed.settings["table_extraction"] is True
    by = {(s.metric, s.label): s for s in TablesAuditor().audit(ItemArtefacts.of(Truth(tables=(SPANS,)), parsed))}
    assert by["tables.teds", ""].value == 0.0 and by["tables.recall", ""].value == 0.0
    assert by["tables.precision", ""].state is State.NO_PREDICTION


def test_tables_off(ruled):
    parser = PyMuPDFParser(tables=False)
    parsed = parser.parse(doc(ruled))
    assert parsed.tables == ()
    assert parsed.settings["table_extraction"] is False
    assert "tables = false" in parsed.settings["table_extraction_note"]
    assert parser.settings()["tables"] is False
    rows = TablesAuditor(missing_table="skip").audit(ItemArtefacts.of(Truth(tables=(SPANS,)), parsed))
    assert all(s.state is State.NO_PREDICTION for s in rows)
    by = {(s.metric, s.label): s for s in TablesAuditor().audit(ItemArtefacts.of(Truth(tables=(SPANS,)), parsed))}
    assert by["tables.teds", ""].value == 0.0  # missing_table = zero: the table it did not extract counts 0


def test_settings_record_the_finder():
    s = PyMuPDFParser().settings()["tables"]
    assert (s["finder"], s["strategy"], s["use_layout"], s["refine"]) == ("pymupdf Page.find_tables", "lines",
                                                                        False, False)
    assert s["edge_tolerance_pt"] == EDGE_TOLERANCE_PT
    assert "layout_analyzer" not in s
    s = PyMuPDFParser(table_strategy="text", table_layout=True, table_refine=True).settings()["tables"]
    assert (s["strategy"], s["use_layout"], s["refine"]) == ("text", True, True)
    assert s["layout_analyzer"].startswith(("pymupdf_layout ", "not installed"))


@pytest.mark.parametrize("options", [{"table_strategy": "grid"}, {"table_layout": "yes"}, {"table_refine": 1},
                                     {"tables": "no"}])
def test_bad_table_options(options):
    with pytest.raises(ValueError):
        PyMuPDFParser(**options)


def test_finder_failure_keeps_the_text_and_declares_no_extraction(ruled, monkeypatch):
    from ingestaudit.parsers import pymupdf_tables

    def boom(page, finder):
        raise RuntimeError("finder exploded")

    monkeypatch.setattr(pymupdf_tables, "page_tables", boom)
    parsed = PyMuPDFParser().parse(doc(ruled))
    assert parsed.tables == () and "Region" in parsed.text
    assert parsed.settings["table_extraction"] is False
    assert "failed on 2 page(s)" in parsed.settings["table_extraction_note"]
    assert any("finder exploded" in w for w in parsed.warnings)


# ------------------------------------------------------------------------------------------ grid reconstruction


def test_cells_to_grid_worked_example():
    # boxes (0,0,20,10) and (0,10,10,20), (10,10,20,20): xs (0,10,20), ys (0,10,20);
    # the first cell spans both columns of row 0
    grid = cells_to_grid([(10, 10, 20, 20), (0, 0, 20, 10), (0, 10, 10, 20)])
    assert (grid.n_rows, grid.n_cols, grid.xs, grid.ys, grid.dropped) == (2, 2, (0, 10, 20), (0, 10, 20), 0)
    assert [(g.row, g.col, g.rowspan, g.colspan) for g in grid.cells] == [(0, 0, 1, 2), (1, 0, 1, 1), (1, 1, 1, 1)]
    assert grid_html(grid, ["Total", "1", "2"]) == (
        '<table><tbody><tr><td colspan="2">Total</td></tr><tr><td>1</td><td>2</td></tr></tbody></table>')


def test_edges_within_tolerance_are_one_line():
    grid = cells_to_grid([(0, 0, 10, 10), (10.4, 0.3, 20, 10.2)])
    assert (grid.n_rows, grid.n_cols) == (1, 2)
    assert grid.xs[1] == pytest.approx(10.2)  # mean of 10 and 10.4


def test_a_frame_around_cells_loses_to_the_cells():
    # a box covering both cells of the row (a frame PyMuPDF also reports) overlaps them: left out, counted;
    # the box of width 0.5 has both edges on one grid line (5 and 5.5 -> 5.25): degenerate, left out; the grid is
    # then rebuilt from the two cells kept, so 5.25 is no column line
    grid = cells_to_grid([(0, 0, 20, 10), (0, 0, 10, 10), (10, 0, 20, 10), (5, 0, 5.5, 10)])
    assert [(g.col, g.colspan) for g in grid.cells] == [(0, 1), (1, 1)]
    assert (grid.xs, grid.dropped) == ((0, 10, 20), 2)


def test_holes_become_empty_cells_and_empty_input_an_empty_table():
    grid = cells_to_grid([(0, 0, 10, 10), (10, 10, 20, 20)])
    assert grid_html(grid, ["a", "b"]) == ("<table><tbody><tr><td>a</td><td></td></tr>"
                                           "<tr><td></td><td>b</td></tr></tbody></table>")
    assert grid_html(cells_to_grid([]), []) == "<table><tbody></tbody></table>"
    with pytest.raises(ValueError):
        grid_html(grid, ["a"])


def _chars(text: str, x: float, y0: float, y1: float, width: float = 5.0):
    return [(c, (x + i * width, y0, x + (i + 1) * width, y1)) for i, c in enumerate(text)]


def test_cell_text_rules():
    grid = Grid((GridCell(0, 0, 1, 1, (0, 0, 100, 40)), GridCell(0, 1, 1, 1, (100, 0, 200, 40))), 1, 2,
                (0.0, 100.0, 200.0), (0.0, 40.0))
    lines = [
        _chars("Total ", 5, 2, 12),           # cell 0, first visual line (trailing space stripped)
        _chars("and", 50, 3, 11),             # cell 0, same visual line (centre 7 vs 7), after "Total"
        _chars("more", 5, 20, 30),             # cell 0, second visual line
        _chars("ab", 95, 2, 12),               # 'a' centre 97.5 -> cell 0, 'b' centre 102.5 -> cell 1
        _chars("zz", 300, 2, 12),              # outside the grid: ignored
        _chars("   ", 120, 20, 30),            # white space only: no line
    ]
    # visual line 1 ordered by x: "Total" (x 5), "and" (x 50), "a" (x 95)
    assert cell_texts(grid, lines) == ["Total and a\nmore", "b"]


@st.composite
def partitions(draw):
    """A random partition of an R x C grid into rectangles, as jittered boxes in random order."""
    n_rows, n_cols = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    free = {(r, c) for r in range(n_rows) for c in range(n_cols)}
    rects = []
    for r in range(n_rows):
        for c in range(n_cols):
            if (r, c) not in free:
                continue
            h, w = draw(st.integers(1, n_rows - r)), draw(st.integers(1, n_cols - c))
            while not all((rr, cc) in free for rr in range(r, r + h) for cc in range(c, c + w)):
                h, w = max(1, h - 1), max(1, w - 1)
            free -= {(rr, cc) for rr in range(r, r + h) for cc in range(c, c + w)}
            rects.append((r, c, h, w))
    jitter = st.floats(-0.3, 0.3)
    boxes = [(c * 20 + draw(jitter), r * 15 + draw(jitter), (c + w) * 20 + draw(jitter), (r + h) * 15 + draw(jitter))
             for r, c, h, w in rects]
    return draw(st.permutations(boxes))


@settings(max_examples=80, deadline=None)
@given(partitions())
def test_a_partition_is_recovered_exactly(boxes):
    grid = cells_to_grid(boxes)
    assert grid.dropped == 0 and len(grid.cells) == len(boxes)
    # a partition stays a partition: the placed cells tile the grid
    assert sum(g.rowspan * g.colspan for g in grid.cells) == grid.n_rows * grid.n_cols
    for g in grid.cells:
        x0, y0, x1, y1 = g.bbox
        assert abs(grid.xs[g.col] - x0) < EDGE_TOLERANCE_PT and abs(grid.xs[g.col + g.colspan] - x1) < EDGE_TOLERANCE_PT
        assert abs(grid.ys[g.row] - y0) < EDGE_TOLERANCE_PT and abs(grid.ys[g.row + g.rowspan] - y1) < EDGE_TOLERANCE_PT
    # and its HTML parses into exactly one td per cell, each row with the full grid width
    html = grid_html(grid, ["x"] * len(grid.cells))
    assert html.count("<td") == len(grid.cells) and teds(html, html) == 1.0


def test_finder_settings_validation():
    assert TableFinderSettings().describe()["strategy"] == "lines"
    with pytest.raises(ValueError, match="table_strategy"):
        TableFinderSettings(strategy="stream")


def test_finder_kwargs_pass_the_options_explicitly(monkeypatch):
    # Page.find_tables(**kwargs) hides the options; PyMuPDF 2.0's default use_layout=True must be overridden
    import pymupdf.table

    from ingestaudit.parsers.pymupdf_tables import finder_kwargs

    page = pymupdf.open().new_page()
    assert finder_kwargs(page, TableFinderSettings()) == {"strategy": "lines", "use_layout": False, "refine": False}

    def old_find_tables(page, clip=None, strategy=None):  # an older PyMuPDF without use_layout / refine
        return None

    monkeypatch.setattr(pymupdf.table, "find_tables", old_find_tables)
    assert finder_kwargs(page, TableFinderSettings()) == {"strategy": "lines"}
    with pytest.raises(RuntimeError, match="refine"):
        finder_kwargs(page, TableFinderSettings(refine=True))
