"""Issue 27 point 4, "light reports": report.html draws no empty or constant plot, writes its plots' coordinates
with two decimals, and grows with classes x pipelines, not with the corpus (the drill-down opens at most
`DRILL_PER_CLASS` items of each class; every row stays in measurements.parquet)."""

from __future__ import annotations

import base64
import re

from _reportkit import Row, build

from ingestaudit.report import plots
from ingestaudit.report.render import DRILL_PER_CLASS, render_html

VARYING = ("cer ↓", "↓", [("a", 0.1, 0.05, 0.15, True), ("b", 0.2, 0.15, 0.25, False)])
FLAT = ("flat ↓", "↓", [("a", 0.3, 0.3, 0.3, False), ("b", 0.3, None, None, False)])


def _svgs(page: str) -> dict[str, str]:
    return {alt: base64.b64decode(uri).decode("utf-8")
            for alt, uri in re.findall(r'<img class="plot" alt="([^"]+)" src="data:image/svg\+xml;base64,([^"]+)"', page)}


def _corpus(n_per_class: int, constant_class: str = "") -> list[Row]:
    """Two pipelines over three classes of ``n_per_class`` documents; pipeline b is 0.05 worse everywhere, except in
    ``constant_class`` where both score 0.2 on every document."""
    rows = []
    for cls in ("invoices", "memos", "scans"):
        for i in range(n_per_class):
            for pipe in ("a", "b"):
                v = 0.2 if cls == constant_class else 0.02 + 0.001 * (i % 50) + 0.05 * (pipe == "b")
                rows.append(Row(f"{cls}/d{i:04d}", cls, pipe, "extraction.cer_norm", v, v * 100, 100))
    return rows


def test_constant_means_at_most_one_distinct_finite_value():
    assert plots.constant([0.3, 0.3, None]) and plots.constant([]) and plots.constant([float("nan"), 1.0])
    assert not plots.constant([0.3, 0.30001])


def test_a_constant_panel_or_series_is_not_drawn():
    both = plots.interval_plot("c", [VARYING, FLAT])
    assert "cer ↓" in both and "flat" not in both  # the flat panel is left out, the other drawn
    assert plots.interval_plot("c", [FLAT]) == ""
    flat = [("a", [(1, 0.9, None, None), (2, 0.9, None, None)]), ("b", [(1, 0.9, 0.9, 0.9)])]
    assert plots.curve_plot("t", "x", "y", flat) == ""  # one value everywhere: a flat line says nothing
    assert plots.curve_plot("t", "x", "y", [("a", [(1, 0.9, None, None), (2, 0.8, None, None)])]) != ""
    assert plots.waterfall_plot("w", [("a", [("retrieved", 0.0)])]) == ""  # no share: nothing to stack


def test_coordinates_are_rounded_and_text_kept():
    svg = plots.curve_plot("t 0.123456", "x", "y", [("a", [(1, 0.123456, None, None), (2, 0.8, None, None)])])
    geometry = " ".join(re.findall(r' (?:d|x|y|transform)="([^"]*)"', svg))
    assert geometry and not re.search(r"\d\.\d{3}", geometry)  # matplotlib wrote six decimals
    assert "t 0.123456" in svg  # a title's number is text, kept as written


def test_a_class_whose_values_are_all_equal_has_no_interval_plot():
    page = render_html(build(_corpus(12, constant_class="memos"), pipelines=["a", "b"]))
    drawn = _svgs(page)
    assert "key metrics of invoices with intervals" in drawn and "key metrics of scans with intervals" in drawn
    assert "key metrics of memos with intervals" not in drawn


def test_the_page_grows_with_classes_and_pipelines_not_with_documents():
    small, large = (render_html(build(_corpus(n), pipelines=["a", "b"])) for n in (12, 120))
    for page, n in ((small, 12), (large, 120)):
        items = page[page.index('<section id="items"'):]
        shown = re.findall(r"<details><summary><code>([^<]+)</code>", items)
        assert len(shown) == 3 * DRILL_PER_CLASS == 24  # 8 of each class, whatever the corpus's size
        assert {s.split("/")[0] for s in shown} == {"invoices", "memos", "scans"}
        assert (f"{3 * n} items; each opens to its rows per pipeline (failing items first, at most 8 per class); "
                f"24 are shown, {3 * n - 24} more in measurements.parquet") in items
    # ten times the documents: the same tables, plots and drill-down; only numbers differ in their digits
    assert abs(len(large) - len(small)) < 0.02 * len(small), (len(small), len(large))
