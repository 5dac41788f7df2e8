"""Where a document's labelled structure (truth ``headings``, ``lists`` and ``tables``) lies in its reference text.

The truth labels structure by text, not by offsets; the chunking audit and the ``reference`` parser need intervals.
Each kind is located in document order, independently of the others, by `ingestaudit.textlayout.find_text` (exact,
else with any white-space run matching any white-space run), each search starting at the end of the previous located
item of that kind:

* a heading: its text (`TextLayout.from_reference_headings`); its level is kept;
* a list: each item in order, its interval widened back over a bullet or number marker that opens its line
  (`MARKER`: "- ", "* ", "• ", "3. ", "b) "...); the list's run is ``[first located item start, last located item
  end)``; an item not found is skipped, and a list none of whose items is found is not located;
* a table (HTML): its non-empty cell texts (``<td>``/``<th>`` text content, white space collapsed) in order; the
  table is ``[first cell start, last cell end)`` when every cell is found in order, else it is not located.

Whatever is not located is counted in `LabelledStructure.not_found`, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ingestaudit.textlayout import HeadingPos, TextLayout, find_text


MARKER = re.compile(r"(?:[-*•‣◦·–]|\(?(?:\d{1,3}|[a-zA-Z]|[ivxIVX]{1,4})[.)])[ \t]*")
"""A list-item marker between the start of a line (after indentation) and the item text."""


def _with_marker(text: str, start: int) -> int:
    """``start`` moved back over a marker (`MARKER`) that is all that precedes it on its line (after indentation)."""
    line_start = text.rfind("\n", 0, start) + 1
    head = text[line_start:start]
    body = head.lstrip(" \t")
    if body and MARKER.fullmatch(body):
        return start - len(body)
    return start


@dataclass(frozen=True)
class LabelledStructure:
    """The located structure of one reference text (code-point intervals ``[start, end)``, in text order per kind).

    Attributes:
        headings: the located truth headings (level and label kept).
        list_items: per located list, the intervals of its located items.
        tables: one interval per located table.
        not_found: ``{"headings": n, "list_items": n, "tables": n}``: labels that could not be located.
    """

    headings: tuple[HeadingPos, ...] = ()
    list_items: tuple[tuple[tuple[int, int], ...], ...] = ()
    tables: tuple[tuple[int, int], ...] = ()
    not_found: dict[str, int] = field(default_factory=lambda: {"headings": 0, "list_items": 0, "tables": 0})

    @property
    def list_runs(self) -> tuple[tuple[int, int], ...]:
        """One ``[first item start, last item end)`` interval per located list."""
        return tuple((items[0][0], items[-1][1]) for items in self.list_items if items)


def table_cells(html: str) -> list[str]:
    """The non-empty cell texts of an HTML table in document order (``td`` and ``th`` text content, white-space runs
    collapsed to one space, ends stripped); [] when the HTML does not parse."""
    from lxml import etree, html as lxml_html

    try:
        root = lxml_html.fragment_fromstring(html, create_parent="div")
    except (etree.ParserError, ValueError):
        return []
    cells = (" ".join(c.text_content().split()) for c in root.iter("td", "th"))
    return [c for c in cells if c]


def locate_structure(text: str, headings: Any = (), lists: Any = (), tables: Any = ()) -> LabelledStructure:
    """Locate labelled headings, lists and tables in ``text`` (the module docstring's rules).

    Args:
        text: the reference text.
        headings: ``(level, text)`` pairs or objects with ``level`` and ``text`` (truth ``headings``).
        lists: sequences of item texts (truth ``lists``).
        tables: HTML strings, one table each (truth ``tables``).
    """
    layout = TextLayout.from_reference_headings(text, headings)
    items_out: list[tuple[tuple[int, int], ...]] = []
    missing_items = 0
    cursor = 0
    for items in lists:
        found = []
        for item in items:
            hit = find_text(text, item, cursor)
            if hit is None:
                missing_items += 1
                continue
            found.append((_with_marker(text, hit[0]), hit[1]))
            cursor = hit[1]
        if found:
            items_out.append(tuple(found))
    tables_out: list[tuple[int, int]] = []
    missing_tables = 0
    cursor = 0
    for html in tables:
        cells = table_cells(html)
        at, hits = cursor, []
        for cell in cells:
            hit = find_text(text, cell, at)
            if hit is None:
                break
            hits.append(hit)
            at = hit[1]
        if not cells or len(hits) < len(cells):
            missing_tables += 1
            continue
        tables_out.append((hits[0][0], hits[-1][1]))
        cursor = hits[-1][1]
    return LabelledStructure(layout.headings, tuple(items_out), tuple(tables_out),
                             {"headings": layout.headings_not_found, "list_items": missing_items,
                              "tables": missing_tables})
