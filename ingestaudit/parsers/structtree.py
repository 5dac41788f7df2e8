"""Read a tagged PDF's logical structure tree and the text of its marked content (ISO 32000-1, section 14.7-14.8).

Two well-kept libraries, one job each:

- the **tree** (``/StructTreeRoot``, its ``/RoleMap`` and the structure elements' ``/S``, ``/K``, ``/Pg``,
  ``/ActualText``, ``/A``) is read with **pikepdf** (qpdf), walking ``/K`` depth first in document order;
- the **text of each marked-content item** (the characters shown between ``BDC`` ... ``EMC`` with an ``/MCID``) is
  read with **pdfminer.six**: a layout-free device records, for every character, the MCID of the innermost
  enclosing marked-content sequence that has one (the method pdfplumber uses for its ``mcid`` attribute).

Characters of one structure element are joined in content order; a space is inserted where two consecutive characters
are further apart than `WORD_GAP` x the character height, or on different lines (vertical centres more than half a
character height apart), unless one side is already white space; white-space runs then collapse to one space.

Element types go through the ``/RoleMap`` (followed to its end, at most `MAX_ROLE_HOPS` steps), so ``/Title`` mapped
to ``/H1`` is a level-1 heading and ``/Text body`` mapped to ``/P`` is a paragraph.

Failures, per document: a structure element reached again from inside itself (a cycle), a tree deeper than
`MAX_DEPTH`, a structure element without ``/S``, or a ``/StructTreeRoot`` that is not a dictionary raise
`StructTreeError` naming the object; a document without ``/StructTreeRoot`` raises `NotTagged`. Content items on
pages the file does not hold (a page extracted from a longer tagged document keeps the whole tree), items in form
XObject streams (``/Stm``) and object references (``/OBJR``) to annotations or XObjects are counted and left out
(an ``/OBJR`` whose ``/Obj`` is a structure element is read as that element); an element
reached twice from different parents is read once and counted.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingestaudit.errors import IngestAuditError

WORD_GAP = 0.1
"""Horizontal gap between two characters, in units of the character height, above which a space is inserted
(pdfminer's default ``word_margin``)."""
MAX_DEPTH = 256
"""Deepest structure tree read; deeper is an error (a real document nests a few levels, a broken one forever)."""
MAX_ROLE_HOPS = 10
"""Longest ``/RoleMap`` chain followed."""

HEADING_TYPES = {"H1": 1, "H2": 2, "H3": 3, "H4": 4, "H5": 5, "H6": 6}
GROUPING_TYPES = frozenset({"Document", "DocumentFragment", "Part", "Art", "Sect", "Div", "NonStruct", "Private",
                            "L", "TOC", "Aside", "Index", "THead", "TBody", "TFoot"})
"""Types that hold blocks; their direct inline content becomes paragraphs of its own."""
BLOCK_KINDS = {"P": "paragraph", "BlockQuote": "paragraph", "Note": "paragraph", "FENote": "paragraph",
               "BibEntry": "paragraph", "TOCI": "paragraph", "Title": "paragraph", "Lbl": "paragraph",
               "LBody": "paragraph", "Caption": "caption", "Code": "code", "Formula": "formula", "Figure": "image",
               "Form": "other", "Artifact": "other"}
"""Block-level types (besides headings, ``LI`` and ``Table``) and their `ingestaudit.model.Block` kind; every other
type (``Span``, ``Link``, ``Quote``, ``Em``, ``Reference``, custom types not mapped...) is inline."""


class StructTreeError(IngestAuditError, ValueError):
    """The structure tree is broken (cycle, too deep, an element without a type...); the message names the object."""


class NotTagged(IngestAuditError, ValueError):
    """The PDF has no ``/StructTreeRoot``: it carries no logical structure."""


@dataclass(frozen=True)
class ContentRef:
    """A marked-content item: ``page`` (0-based index in the file) and ``mcid``."""

    page: int
    mcid: int


@dataclass
class Element:
    """One structure element.

    Attributes:
        type: standard type after the role map (``"H1"``, ``"P"``, ``"LI"``...).
        raw: type as written in ``/S`` (without the slash).
        children: `Element` and `ContentRef` in ``/K`` order.
        actual_text: ``/ActualText`` when given (replaces the text of the element's content).
        attributes: ``/A`` attribute dictionaries merged (later ones win), values as Python scalars.
    """

    type: str
    raw: str
    children: list["Element | ContentRef"] = field(default_factory=list)
    actual_text: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)

    def walk(self) -> Iterator["Element"]:
        """This element and its descendants, depth first in document order."""
        stack: list[Element] = [self]
        while stack:
            e = stack.pop()
            yield e
            stack.extend(c for c in reversed(e.children) if isinstance(c, Element))


@dataclass
class StructTree:
    """A document's structure tree: ``roots`` (the ``/K`` of ``/StructTreeRoot``) and what was left out.

    Attributes:
        roots: top-level elements in order.
        pages: number of pages in the file.
        foreign: content items on pages the file does not hold.
        streams: content items in form XObject streams (``/Stm``), not read.
        objrefs: object references (``/OBJR``), not text.
        repeated: elements reached a second time from another parent (read once).
        role_map: the ``/RoleMap`` as read, raw type -> mapped type.
    """

    roots: list[Element]
    pages: int
    foreign: int = 0
    streams: int = 0
    objrefs: int = 0
    repeated: int = 0
    role_map: dict[str, str] = field(default_factory=dict)

    def elements(self) -> Iterator[Element]:
        """Every element, depth first in document order."""
        for r in self.roots:
            yield from r.walk()


def _name(obj: Any) -> str:
    return str(obj).lstrip("/")


def _scalar(v: Any) -> Any:
    """A pikepdf attribute value as a JSON-friendly Python value (names without slash, reals as float)."""
    import decimal

    import pikepdf

    if isinstance(v, pikepdf.Name):
        return _name(v)
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def read_tree(path: Path) -> StructTree:
    """Read the structure tree of the PDF at ``path`` with pikepdf (see the module docstring).

    Raises:
        NotTagged: no ``/StructTreeRoot``.
        StructTreeError: a cycle, a tree deeper than `MAX_DEPTH`, an element without ``/S``, or a root that is not
            a dictionary; the message names the object (``obj N G``).
        pikepdf.PdfError: the file cannot be opened (the caller turns it into a parser error).
    """
    import pikepdf

    with pikepdf.open(path) as pdf:
        root = pdf.Root.get("/StructTreeRoot")
        if root is None:
            raise NotTagged(f"{path}: not a tagged PDF (no /StructTreeRoot)")
        if not isinstance(root, pikepdf.Dictionary):
            raise StructTreeError(f"{path}: /StructTreeRoot is not a dictionary")
        role_map: dict[str, str] = {}
        rm = root.get("/RoleMap")
        if isinstance(rm, pikepdf.Dictionary):
            role_map = {_name(k): _name(v) for k, v in rm.items() if isinstance(v, pikepdf.Name)}
        page_index = {p.obj.objgen: i for i, p in enumerate(pdf.pages)}
        tree = StructTree([], len(pdf.pages), role_map=role_map)
        seen: set[tuple[int, int]] = set()

        def std(raw: str) -> str:
            t, hops = raw, 0
            while t in role_map and role_map[t] != t and hops < MAX_ROLE_HOPS:
                t, hops = role_map[t], hops + 1
            return t

        def page_of(obj: Any, default: int | None) -> int | None:
            pg = obj.get("/Pg") if isinstance(obj, pikepdf.Dictionary) else None
            if pg is None:
                return default
            return page_index.get(pg.objgen, -1)

        def add_ref(parent: Element, page: int | None, mcid: int) -> None:
            if page is None or page < 0:
                tree.foreign += 1
                return
            parent.children.append(ContentRef(page, int(mcid)))

        def kids(node: Any, parent: Element, page: int | None, ancestors: tuple[tuple[int, int], ...],
                 depth: int) -> None:
            items = list(node) if isinstance(node, pikepdf.Array) else [node]
            for k in items:
                if isinstance(k, int) and not isinstance(k, bool):
                    add_ref(parent, page, k)
                elif isinstance(k, pikepdf.Dictionary):
                    if "/Obj" in k and "/S" not in k:  # an object reference (OBJR)
                        target = k.get("/Obj")
                        if isinstance(target, pikepdf.Dictionary) and "/S" in target:  # a structure element
                            child = element(target, page_of(k, page), ancestors, depth + 1)
                            if child is not None:
                                parent.children.append(child)
                        else:  # an annotation or XObject: no text of its own here
                            tree.objrefs += 1
                    elif "/MCID" in k and "/S" not in k:  # a marked-content reference
                        if "/Stm" in k:
                            tree.streams += 1
                        else:
                            add_ref(parent, page_of(k, page), int(k.MCID))
                    else:
                        child = element(k, page, ancestors, depth + 1)
                        if child is not None:
                            parent.children.append(child)
                # anything else (null, a string) carries no content

        def element(obj: Any, page: int | None, ancestors: tuple[tuple[int, int], ...], depth: int) -> Element | None:
            og = obj.objgen
            if og != (0, 0):
                if og in ancestors:
                    raise StructTreeError(f"{path}: cyclic structure tree: obj {og[0]} {og[1]} contains itself")
                if og in seen:
                    tree.repeated += 1
                    return None
                seen.add(og)
                ancestors = ancestors + (og,)
            if depth > MAX_DEPTH:
                raise StructTreeError(f"{path}: structure tree deeper than {MAX_DEPTH} levels")
            s = obj.get("/S")
            if not isinstance(s, pikepdf.Name):
                where = f"obj {og[0]} {og[1]}" if og != (0, 0) else "a direct structure element"
                raise StructTreeError(f"{path}: structure element {where} has no /S (type)")
            raw = _name(s)
            el = Element(std(raw), raw)
            at = obj.get("/ActualText")
            if at is not None:
                el.actual_text = str(at)
            attrs = obj.get("/A")
            for a in (list(attrs) if isinstance(attrs, pikepdf.Array) else [attrs] if attrs is not None else []):
                if isinstance(a, pikepdf.Dictionary):
                    el.attributes.update({_name(key): _scalar(v) for key, v in a.items()})
            k = obj.get("/K")
            if k is not None:
                kids(k, el, page_of(obj, page), ancestors, depth)
            return el

        top = Element("StructTreeRoot", "StructTreeRoot")
        k = root.get("/K")
        if k is not None:
            kids(k, top, None, (), 0)
        tree.roots = [c for c in top.children if isinstance(c, Element)]
        return tree


# --- marked-content text ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Glyph:
    """One character shown inside a marked-content item: its text and box (PDF points, origin top-left)."""

    text: str
    x0: float
    top: float
    x1: float
    bottom: float

    @property
    def height(self) -> float:
        return max(self.bottom - self.top, 1e-6)


def marked_content(path: Path) -> dict[tuple[int, int], list[Glyph]]:
    """Characters of every marked-content item of the PDF at ``path``, keyed by ``(page index, mcid)``, in content
    order (pdfminer.six, no layout analysis). Characters outside any item with an MCID (artifacts, untagged content)
    are not returned; MCIDs opened inside a form XObject are not read (the form's own items would clash with the
    page's), the form's characters belong to the enclosing page item.

    Raises:
        Exception: what pdfminer raises on a file it cannot read (the caller turns it into a parser error).
    """
    from pdfminer.converter import PDFLayoutAnalyzer
    from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
    from pdfminer.pdfpage import PDFPage
    from pdfminer.pdftypes import resolve1

    out: dict[tuple[int, int], list[Glyph]] = {}

    class Device(PDFLayoutAnalyzer):
        def __init__(self, rsrc: Any) -> None:
            super().__init__(rsrc, pageno=1, laparams=None)
            self.page_index = 0
            self.height = 0.0
            self.stack: list[tuple[int | None, int]] = []  # (mcid or None, form depth when opened)
            self.form_depth = 0

        def begin_page(self, page: Any, ctm: Any) -> None:
            super().begin_page(page, ctm)
            x0, y0, x1, y1 = page.mediabox
            self.height = float(y1)
            self.stack = []
            self.form_depth = 0

        def begin_figure(self, name: str, bbox: Any, matrix: Any) -> None:
            super().begin_figure(name, bbox, matrix)
            self.form_depth += 1

        def end_figure(self, name: str) -> None:
            super().end_figure(name)
            self.form_depth = max(0, self.form_depth - 1)

        def begin_tag(self, tag: Any, props: Any = None) -> None:
            mcid = None
            props = resolve1(props)
            if isinstance(props, dict) and "MCID" in props:
                value = resolve1(props["MCID"])
                if isinstance(value, int) and not isinstance(value, bool):
                    mcid = value
            self.stack.append((mcid, self.form_depth))

        def end_tag(self) -> None:
            if self.stack:
                self.stack.pop()

        def current(self) -> int | None:
            for mcid, depth in reversed(self.stack):
                if mcid is not None and (depth == 0 or self.form_depth == 0):
                    return mcid
            return None

        def render_char(self, *args: Any, **kwargs: Any) -> float:
            adv = super().render_char(*args, **kwargs)
            mcid = self.current()
            if mcid is not None:
                ch = self.cur_item._objs[-1]
                out.setdefault((self.page_index, mcid), []).append(
                    Glyph(ch.get_text(), float(ch.x0), self.height - float(ch.y1), float(ch.x1),
                          self.height - float(ch.y0)))
            return adv

        def receive_layout(self, ltpage: Any) -> None:
            return None

    rsrc = PDFResourceManager()
    device = Device(rsrc)
    interp = PDFPageInterpreter(rsrc, device)
    with open(path, "rb") as fh:
        for i, page in enumerate(PDFPage.get_pages(fh)):
            device.page_index = i
            interp.process_page(page)
    return out


def join_glyphs(glyphs: list[Glyph]) -> str:
    """The text of consecutive glyphs: spaces inserted at word gaps and line changes (module docstring), white
    space collapsed, ends stripped."""
    parts: list[str] = []
    prev: Glyph | None = None
    for g in glyphs:
        if prev is not None and not prev.text.isspace() and not g.text.isspace():
            h = max(prev.height, g.height)
            new_line = abs((prev.top + prev.bottom) / 2 - (g.top + g.bottom) / 2) > h / 2
            if new_line or g.x0 - prev.x1 > WORD_GAP * h:
                parts.append(" ")
        parts.append(g.text)
        prev = g
    return " ".join("".join(parts).split())


# --- blocks ----------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StructBlock:
    """One block read from the tree.

    Attributes:
        kind: `ingestaudit.model.Block` kind (heading, paragraph, list_item, table, caption, image, ...).
        level: heading level (1-6) for headings, else None.
        text: the block's text (table: one cell per line, row by row).
        page: 1-based page of its first character (1 when it has none).
        bbox: union of its characters' boxes on that page, or None.
        type: the element's standard type.
        list_id: for list items, the number of their ``L`` element in document order, else None.
        html: for tables, the ``<table>`` built from TR/TH/TD (RowSpan/ColSpan attributes kept), else None.
    """

    kind: str
    level: int | None
    text: str
    page: int
    bbox: tuple[float, float, float, float] | None
    type: str
    list_id: int | None = None
    html: str | None = None


def _glyphs(node: Element | ContentRef, marked: dict[tuple[int, int], list[Glyph]], skip_lists: bool = False
            ) -> list[tuple[int, Glyph]]:
    """``(page, glyph)`` of every content item under ``node``, in order (nested ``L`` left out with
    ``skip_lists``). An element with ``/ActualText`` gives that text as one glyph-less run."""
    if isinstance(node, ContentRef):
        return [(node.page, g) for g in marked.get((node.page, node.mcid), [])]
    out: list[tuple[int, Glyph]] = []
    for c in node.children:
        if isinstance(c, Element) and skip_lists and c.type == "L":
            continue
        out += _glyphs(c, marked, skip_lists)
    if node.actual_text is not None:
        first = out[0] if out else None
        page = first[0] if first else -1
        box = first[1] if first else Glyph("", 0.0, 0.0, 0.0, 0.0)
        return [(page, Glyph(node.actual_text, box.x0, box.top, box.x1, box.bottom))]
    return out


def _text_of(items: list[tuple[int, Glyph]]) -> str:
    runs: list[str] = []
    cur: list[Glyph] = []
    page = None
    for p, g in items:
        if page is not None and p != page:
            runs.append(join_glyphs(cur))
            cur = []
        cur.append(g)
        page = p
    if cur:
        runs.append(join_glyphs(cur))
    return " ".join(r for r in runs if r)


def _where(items: list[tuple[int, Glyph]]) -> tuple[int, tuple[float, float, float, float] | None]:
    real = [(p, g) for p, g in items if p >= 0 and g.x1 > g.x0]
    if not real:
        page = next((p for p, _ in items if p >= 0), 0)
        return page + 1, None
    page = real[0][0]
    gs = [g for p, g in real if p == page]
    return page + 1, (min(g.x0 for g in gs), min(g.top for g in gs), max(g.x1 for g in gs), max(g.bottom for g in gs))


def _table(el: Element, marked: dict[tuple[int, int], list[Glyph]]) -> tuple[str, str, list[tuple[int, Glyph]]]:
    """``(text, html, glyphs)`` of a Table element: rows from TR (inside THead/TBody/TFoot too), cells TH/TD."""
    rows: list[list[tuple[str, str, dict[str, Any]]]] = []
    everything: list[tuple[int, Glyph]] = []

    def visit(e: Element) -> None:
        for c in e.children:
            if not isinstance(c, Element):
                continue
            if c.type == "TR":
                cells = []
                for cell in c.children:
                    if isinstance(cell, Element) and cell.type in ("TH", "TD"):
                        g = _glyphs(cell, marked)
                        everything.extend(g)
                        cells.append((cell.type.lower(), _text_of(g), cell.attributes))
                rows.append(cells)
            elif c.type in ("THead", "TBody", "TFoot"):
                visit(c)

    visit(el)
    parts = ["<table>"]
    for cells in rows:
        parts.append("<tr>")
        for tag, text, attrs in cells:
            span = ""
            for key, name in (("RowSpan", "rowspan"), ("ColSpan", "colspan")):
                v = attrs.get(key)
                if isinstance(v, (int, float)) and not isinstance(v, bool) and int(v) > 1:
                    span += f' {name}="{int(v)}"'
            parts.append(f"<{tag}{span}>{html.escape(text, quote=False)}</{tag}>")
        parts.append("</tr>")
    parts.append("</table>")
    text = "\n".join(t for cells in rows for _, t, _ in cells if t)
    return text, "".join(parts), everything


def blocks(tree: StructTree, marked: dict[tuple[int, int], list[Glyph]]) -> list[StructBlock]:
    """The tree's blocks in document order (see `BLOCK_KINDS`): H1-H6 headings (``H``: level = number of enclosing
    ``Sect`` elements, at least 1), one list item per ``LI`` (its nested ``L`` items follow as items of their own),
    one table block per ``Table``, one block per other block-level element, and one paragraph per run of inline
    content directly under a grouping element. Blocks without any text are left out."""
    out: list[StructBlock] = []
    list_ids = {id(e): n for n, e in enumerate(e for e in tree.elements() if e.type == "L")}

    def emit(kind: str, level: int | None, items: list[tuple[int, Glyph]], el_type: str,
             list_id: int | None = None, table_html: str | None = None, text: str | None = None) -> None:
        text = _text_of(items) if text is None else text
        if not text.strip():
            return
        page, bbox = _where(items)
        out.append(StructBlock(kind, level, text, page, bbox, el_type, list_id, table_html))

    def visit(el: Element, sects: int, list_id: int | None) -> None:
        t = el.type
        if t in HEADING_TYPES or t == "H":
            emit("heading", HEADING_TYPES.get(t, max(1, sects)), _glyphs(el, marked), t)
        elif t == "LI":
            emit("list_item", None, _glyphs(el, marked, skip_lists=True), t, list_id)
            for d in _nested_lists(el):
                visit(d, sects, list_ids.get(id(d)))
        elif t == "Table":
            text, table_html, items = _table(el, marked)
            emit("table", None, items, t, table_html=table_html, text=text)
        elif t in BLOCK_KINDS:
            emit(BLOCK_KINDS[t], None, _glyphs(el, marked), t)
        else:  # grouping or inline at block level: blocks inside, runs of inline content as paragraphs
            run: list[tuple[int, Glyph]] = []
            grouping = t in GROUPING_TYPES
            for c in el.children:
                if isinstance(c, Element) and (c.type in GROUPING_TYPES or c.type in BLOCK_KINDS or c.type in
                                               HEADING_TYPES or c.type in ("H", "LI", "Table")):
                    emit("paragraph", None, run, t)
                    run = []
                    visit(c, sects + int(t == "Sect"), list_ids.get(id(c)) if c.type == "L" else list_id)
                else:
                    run += _glyphs(c, marked)
            emit("paragraph", None, run, t if not grouping else "P")

    for r in tree.roots:
        visit(r, 0, list_ids.get(id(r)))
    return out


def _nested_lists(li: Element) -> list[Element]:
    """The ``L`` elements inside an ``LI`` (at any depth, not inside another ``L``), in order."""
    found: list[Element] = []

    def go(e: Element) -> None:
        for c in e.children:
            if isinstance(c, Element):
                if c.type == "L":
                    found.append(c)
                else:
                    go(c)

    go(li)
    return found


_WS = re.compile(r"\s+")


def lists_of(items: list[StructBlock]) -> list[list[str]]:
    """The labelled lists of a block sequence: the texts of the list items of each ``L``, in order (a nested list
    is a list of its own), lists in document order of their ``L`` element."""
    by_list: dict[int, list[str]] = {}
    for b in items:
        if b.kind == "list_item" and b.list_id is not None:
            by_list.setdefault(b.list_id, []).append(_WS.sub(" ", b.text).strip())
    return [v for _, v in sorted(by_list.items(), key=lambda kv: kv[0]) if v]
