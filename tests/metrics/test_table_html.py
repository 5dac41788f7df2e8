"""ICDAR 2013 ``*-str.xml`` and PubTabNet annotations -> HTML tables."""

from __future__ import annotations

import json

import pytest
from lxml import etree

from ingestaudit.metrics.table_html import icdar2013_to_html, pubtabnet_to_html
from ingestaudit.metrics.table_tree import parse_table_html
from ingestaudit.metrics.teds import compare_tables

ICDAR_SMALL = """<?xml version="1.0" encoding="UTF-8"?>
<document filename="x">
 <table id="1">
  <region id="1" page="1" col-increment="0" row-increment="1">
   <cell id="1" start-row="-1" start-col="0" end-col="1"><content>Head</content></cell>
   <cell id="2" start-row="0" start-col="0" end-row="1"><content>A &amp; B</content></cell>
   <cell id="3" start-row="0" start-col="1"><content>1</content></cell>
   <cell id="4" start-row="1" start-col="2" col-end="2"><content>x&lt;y</content></cell>
  </region>
 </table>
</document>"""


def test_icdar_spans_increments_gaps_and_escaping():
    # After row-increment 1: Head rows 0, cols 0-1 (colspan 2); "A & B" rows 1-2, col 0 (rowspan 2); "1" at
    # (1, 1); "x<y" at (2, 2). Positions no cell covers, (0, 2), (1, 2), (2, 1), become empty cells.
    assert icdar2013_to_html(ICDAR_SMALL) == [
        "<table><tbody>"
        '<tr><td colspan="2">Head</td><td></td></tr>'
        '<tr><td rowspan="2">A &amp; B</td><td>1</td><td></td></tr>'
        "<tr><td></td><td>x&lt;y</td></tr>"
        "</tbody></table>"
    ]


def test_icdar_header_rows_and_bytes_input():
    (html,) = icdar2013_to_html(ICDAR_SMALL.encode("utf-8"), header_rows=1)
    assert html.startswith('<table><thead><tr><td colspan="2">Head</td><td></td></tr></thead><tbody><tr>')


def test_icdar_regions_side_by_side_and_shift_to_zero():
    # Two regions of one table, columns numbered from 1; the second region's col-increment 2 puts its cells in
    # columns 3-4; after the shift to 0: columns 0-3.
    xml = (
        "<document><table id='1'>"
        "<region id='1' col-increment='0' row-increment='0'>"
        "<cell start-row='1' start-col='1'><content>a</content></cell>"
        "<cell start-row='1' start-col='2'><content>b</content></cell></region>"
        "<region id='2' col-increment='2' row-increment='0'>"
        "<cell start-row='1' start-col='1'><content>c</content></cell>"
        "<cell start-row='1' start-col='2'><content>d</content></cell></region>"
        "</table><table id='2'></table></document>"
    )
    assert icdar2013_to_html(xml) == [
        "<table><tbody><tr><td>a</td><td>b</td><td>c</td><td>d</td></tr></tbody></table>",
        "<table></table>",
    ]


@pytest.mark.parametrize(
    ("xml", "fragment"),
    [
        ("<document><table", "not well-formed"),
        ("<document><table><region><cell start-col='0'/></region></table></document>", "lacks start-row"),
        ("<document><table><region><cell start-row='x' start-col='0'/></region></table></document>", "not an integer"),
        (
            "<document><table><region><cell start-row='2' end-row='1' start-col='0'/></region></table></document>",
            "end before start",
        ),
        (
            "<document><table><region><cell id='1' start-row='0' start-col='0' end-col='1'/>"
            "<cell id='2' start-row='0' start-col='1'/></region></table></document>",
            "both cover row 0, column 1",
        ),
    ],
)
def test_icdar_malformed_input_raises(xml, fragment):
    with pytest.raises(ValueError, match=fragment):
        icdar2013_to_html(xml)


def test_icdar_real_us_files(shared_data):
    folder = shared_data / "icdar2013-tables" / "competition-dataset-us"
    files = sorted(folder.glob("*-str.xml"))
    assert len(files) == 43  # the US half (SOURCE.txt: 71 str files in EU + US)
    n_tables = 0
    for path in files:
        data = path.read_bytes()
        tables = icdar2013_to_html(data)
        assert len(tables) == len(etree.fromstring(data).findall(".//table")), path.name
        for html in tables:
            n_cells = sum(1 for t in parse_table_html(html).tags if t == "td")
            assert n_cells > 0, path.name
            result = compare_tables(html, html)
            assert (result.value, result.message) == (1.0, ""), path.name  # rectangular grid: no ragged note
        n_tables += len(tables)
    assert n_tables == 86
    # us-001 table 1, row 0 as the XML states it: Category rows 0-1, 2005 cols 1-4, 2010 cols 5-8,
    # Difference cols 9-10.
    first = icdar2013_to_html((folder / "us-001-str.xml").read_bytes())[0]
    assert first.startswith(
        '<table><tbody><tr><td rowspan="2">Category</td><td colspan="4">2005</td><td colspan="4">2010</td>'
        '<td colspan="2">Difference</td></tr><tr><td>Number</td><td>Margin of\nerror (±)</td>'
    )


PTN = {
    "filename": "x.png",
    "html": {
        "structure": {
            "tokens": [
                "<thead>", "<tr>", "<td", ' colspan="2"', ">", "</td>", "</tr>", "</thead>",
                "<tbody>", "<tr>", "<td>", "</td>", "<td>", "</td>", "</tr>", "</tbody>",
            ]
        },
        "cells": [{"tokens": ["<b>", "H", "</b>"]}, {"tokens": ["1", "<", "2"]}, {"tokens": []}],
    },
}
PTN_HTML = (
    '<table><thead><tr><td colspan="2"><b>H</b></td></tr></thead>'
    "<tbody><tr><td>1&lt;2</td><td></td></tr></tbody></table>"
)


def test_pubtabnet_record_and_inner_dict():
    assert pubtabnet_to_html(PTN) == PTN_HTML
    assert pubtabnet_to_html(PTN["html"]) == PTN_HTML
    legacy = {"structure": PTN["html"]["structure"], "cell": PTN["html"]["cells"]}  # README's key name
    assert pubtabnet_to_html(legacy) == PTN_HTML


def test_pubtabnet_tokens_round_trip():
    tree = parse_table_html(pubtabnet_to_html(PTN))
    assert [c for c in tree.contents if c is not None] == [("<b>", "H", "</b>"), ("1", "<", "2"), ()]


@pytest.mark.parametrize(
    "bad",
    [
        {"html": {"structure": {"tokens": ["<tr>", "<td>", "</td>", "</tr>"]}, "cells": []}},
        {"html": {"structure": {"tokens": ["<tr>", "</tr>"]}, "cells": [{"tokens": ["a"]}]}},
        {"html": {"cells": []}},
        {"nothing": 1},
    ],
)
def test_pubtabnet_malformed_raises(bad):
    with pytest.raises(ValueError):
        pubtabnet_to_html(bad)


def test_pubtabnet_examples_round_trip(shared_data):
    path = shared_data / "pubtabnet" / "examples" / "PubTabNet_Examples.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(records) == 20
    for record in records:
        tree = parse_table_html(pubtabnet_to_html(record))
        cells = [c for c in tree.contents if c is not None]
        assert cells == [tuple(c["tokens"]) for c in record["html"]["cells"]], record["filename"]
