"""Ground-truth table formats -> HTML tables that TEDS reads (pure functions on text and dicts, no I/O).

- ICDAR 2013 Table Competition structure files (``*-str.xml``; Göbel, Hassan, Oro and Orsi, "ICDAR 2013 Table
  Competition", ICDAR 2013, pp. 1449-1453): ``document > table > region > cell`` with ``start-row``,
  ``start-col`` and optional ``end-row``/``end-col`` (inclusive, 0-based), ``<content>`` text, and per region a
  ``row-increment``/``col-increment`` added to its cells' rows/columns (tables split over several regions).
- PubTabNet annotations (Zhong et al. 2020; ``html.structure.tokens`` and ``html.cells[k].tokens``, as in
  ``PubTabNet_Examples.jsonl`` and the dataset's jsonl files).

Both return ``<table>...</table>`` strings (no ``<html><body>``; `ingestaudit.metrics.teds` accepts either).
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from lxml import etree

__all__ = ["icdar2013_to_html", "pubtabnet_to_html"]


def _int_attr(cell: etree._Element, *names: str) -> int | None:
    for name in names:
        raw = cell.get(name)
        if raw is not None:
            try:
                return int(raw)
            except ValueError:
                raise ValueError(f"cell id={cell.get('id')!r}: {name}={raw!r} is not an integer") from None
    return None


def icdar2013_to_html(xml_text: str | bytes, header_rows: int = 0) -> list[str]:
    """Convert an ICDAR 2013 ``*-str.xml`` document into one HTML table per ``<table>``, in document order.

    Grid: a cell spans rows ``start-row + row-increment .. end-row + row-increment`` (``end-row`` defaults to
    ``start-row``) and likewise columns; ``rowspan = end-row - start-row + 1``, ``colspan = end-col - start-col + 1``
    (attributes written only when > 1). Rows and columns are shifted so that the smallest used index is 0 (some
    files number from 1 or -1). Grid positions that no cell covers become empty ``<td></td>`` so every row has the
    full width (ICDAR lists only non-empty cells). The misspelt attributes ``col-end``/``row-end`` found in the
    US set (us-002) are read as ``end-col``/``end-row``.

    Cell text: the ``<content>`` text as is (line breaks kept), HTML-escaped. No header information exists in
    the format: the first ``header_rows`` grid rows go into ``<thead>``, the rest into ``<tbody>``.

    Args:
        xml_text: the XML document (text or bytes).
        header_rows: grid rows to put in ``<thead>`` (default 0: a single ``<tbody>``).

    Returns:
        List of ``<table>...</table>`` strings (empty list when the document has no table).

    Raises:
        ValueError: malformed XML, a missing or non-integer ``start-row``/``start-col``, an end before its start,
            or two cells covering the same grid position.
    """
    data = xml_text.encode("utf-8") if isinstance(xml_text, str) else xml_text
    try:
        root = etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True))
    except etree.XMLSyntaxError as exc:
        raise ValueError(f"not well-formed XML: {exc}") from None
    tables: list[str] = []
    for table in root.iter("table"):
        cells = []
        for region in table.iter("region"):
            row_inc = _int_attr(region, "row-increment") or 0
            col_inc = _int_attr(region, "col-increment") or 0
            for cell in region.iter("cell"):
                r0, c0 = _int_attr(cell, "start-row"), _int_attr(cell, "start-col")
                if r0 is None or c0 is None:
                    raise ValueError(f"table {table.get('id')!r}: a cell lacks start-row or start-col")
                r1 = _int_attr(cell, "end-row", "row-end")
                c1 = _int_attr(cell, "end-col", "col-end")
                r1 = r0 if r1 is None else r1
                c1 = c0 if c1 is None else c1
                if r1 < r0 or c1 < c0:
                    raise ValueError(f"table {table.get('id')!r}, cell id={cell.get('id')!r}: end before start")
                content = cell.findtext("content") or ""
                cells.append((r0 + row_inc, c0 + col_inc, r1 + row_inc, c1 + col_inc, content, cell.get("id")))
        tables.append(_grid_html(cells, header_rows, table.get("id")))
    return tables


def _grid_html(cells: list[tuple[int, int, int, int, str, str | None]], header_rows: int, table_id: str | None) -> str:
    if not cells:
        return "<table></table>"
    row_shift = min(c[0] for c in cells)
    col_shift = min(c[1] for c in cells)
    starts: dict[tuple[int, int], tuple[int, int, str]] = {}
    covered: dict[tuple[int, int], str | None] = {}
    n_rows = n_cols = 0
    for r0, c0, r1, c1, content, cid in cells:
        r0, r1, c0, c1 = r0 - row_shift, r1 - row_shift, c0 - col_shift, c1 - col_shift
        for r in range(r0, r1 + 1):
            for c in range(c0, c1 + 1):
                if (r, c) in covered:
                    raise ValueError(
                        f"table {table_id!r}: cells id={covered[r, c]!r} and id={cid!r} both cover row {r}, column {c}"
                    )
                covered[r, c] = cid
        starts[r0, c0] = (r1 - r0 + 1, c1 - c0 + 1, content)
        n_rows, n_cols = max(n_rows, r1 + 1), max(n_cols, c1 + 1)
    rows: list[str] = []
    for r in range(n_rows):
        parts: list[str] = []
        for c in range(n_cols):
            if (r, c) in starts:
                rowspan, colspan, content = starts[r, c]
                attrs = f' colspan="{colspan}"' if colspan > 1 else ""
                attrs += f' rowspan="{rowspan}"' if rowspan > 1 else ""
                parts.append(f"<td{attrs}>{escape(content, quote=False)}</td>")
            elif (r, c) not in covered:
                parts.append("<td></td>")
        rows.append("<tr>" + "".join(parts) + "</tr>")
    head = "".join(rows[:header_rows])
    body = "".join(rows[header_rows:])
    head = f"<thead>{head}</thead>" if head else ""
    body = f"<tbody>{body}</tbody>" if body else ""
    return f"<table>{head}{body}</table>"


def pubtabnet_to_html(annotation: Mapping[str, Any]) -> str:
    """Convert a PubTabNet annotation into an HTML table.

    The structure tokens are written in order; the k-th cell's tokens are inserted right after the k-th cell
    opening (``<td>``, or ``<td`` + attribute tokens + ``>``). Cell tokens of one character are HTML-escaped
    (``<``, ``>`` and ``&`` occur as text), longer tokens are PubTabNet's inline tags (``<b>``, ``</i>``,
    ``<sup>``...) and are written as markup. Parsing the result with `ingestaudit.metrics.table_tree` gives back
    exactly these cell tokens.

    Args:
        annotation: a record (``{"filename": ..., "html": {...}}``) or its ``"html"`` dict, holding
            ``structure.tokens`` (list of str) and ``cells`` (or ``cell``; list of ``{"tokens": [str]}``).

    Returns:
        ``<table>...</table>``.

    Raises:
        ValueError: missing keys, or a number of cells different from the number of cell openings.
    """
    html_part = annotation.get("html", annotation)
    try:
        structure = list(html_part["structure"]["tokens"])
        cells = html_part["cells"] if "cells" in html_part else html_part["cell"]
    except (KeyError, TypeError):
        raise ValueError("expected a PubTabNet annotation with html.structure.tokens and html.cells") from None
    out: list[str] = ["<table>"]
    k = 0
    opening = False

    def content() -> str:
        nonlocal k
        if k >= len(cells):
            raise ValueError(f"more cell openings in the structure than the {len(cells)} cells")
        tokens = cells[k].get("tokens", [])
        k += 1
        return "".join(escape(t, quote=False) if len(t) == 1 else t for t in tokens)

    for tok in structure:
        out.append(tok)
        if tok == "<td>":
            out.append(content())
        elif tok == "<td":
            opening = True
        elif opening and tok == ">":
            out.append(content())
            opening = False
    if k != len(cells):
        raise ValueError(f"{len(cells)} cells but {k} cell openings in the structure")
    out.append("</table>")
    return "".join(out)


def split_tables(html: str) -> list[str]:
    """The top-level tables of one HTML string, each as its own string.

    A string holding at most one top-level ``<table>`` (or one lxml cannot parse) is returned unchanged, so the
    metric sees exactly the input; a string holding several (a ``.tables.html`` truth file with several tables, a
    pipeline that wrote several tables in one string) is split into ``lxml.html.tostring`` of each top-level
    ``<table>`` element (nested tables stay inside their parent), in document order. Tokens TEDS compares are kept:
    re-serialisation escapes ``<`` and ``&`` in text, which the HTML parser reads back as the same characters.

    Args:
        html: HTML text (fragment or document).

    Returns:
        One string per top-level table, or ``[html]``. Never raises.
    """
    if html.lower().count("<table") < 2:  # at most one table: unchanged, without parsing
        return [html]
    from lxml import etree
    from lxml import html as lxml_html

    try:
        doc = etree.fromstring(html, etree.HTMLParser(remove_comments=True))
        tables = doc.xpath("//table[not(ancestor::table)]") if doc is not None else []
    except (ValueError, etree.LxmlError):
        return [html]
    if len(tables) < 2:
        return [html]
    return [lxml_html.tostring(t, encoding="unicode", with_tail=False) for t in tables]
