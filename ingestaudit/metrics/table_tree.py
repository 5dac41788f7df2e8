"""HTML table -> the ordered labelled tree that TEDS compares (PubTabNet definition), plus named deviations.

Source of the definition: Zhong, ShafieiBavani and Jimeno Yepes, "Image-based table recognition: data, model, and
evaluation", ECCV 2020 (arXiv:1911.10683), section 3, and its reference implementation ``src/metric.py`` in
ibm-aur-nlp/PubTabNet (Apache-2.0; ``TEDS.load_html_tree`` and ``TEDS.tokenize``). This module is an independent
implementation of the same tree; no code is copied.

The tree of one ``<table>`` element (after the options below are applied):

- one node per element, rooted at ``table``; a node's children are its child elements in document order
  (``thead``, ``tbody``, ``tfoot``, ``tr``, ``caption``, ``th``, and also any inline element under a non-``td``
  node, e.g. the ``<b>`` inside a ``<th>``); text outside ``td`` is ignored;
- a ``td`` is a leaf labelled ``(td, colspan, rowspan)`` (``int()`` of the attribute, default 1) carrying its content
  tokens: every character of its text, and each inline element inside it as the tokens ``<tag>`` ... ``</tag>``
  (attributes dropped; the PubTabNet ``unk`` tag has no closing token), with the text after an inner element
  (its tail) included unless that element is itself a ``td``;
- every other node is labelled by its tag alone (so a ``th``'s text and spans are not compared: with the published
  definition a header written as ``th`` with wrong text can score 1.0; see ``th_as_td``).

``n_nodes``, the TEDS denominator of one table, is the reference's ``len(table.xpath(".//*"))``: the number of
element descendants of ``<table>`` (the ``table`` itself excluded, inline elements inside cells included), counted
after the options are applied.

Parsing: lxml's libxml2 HTML parser with comments removed (``etree.HTMLParser(remove_comments=True)``, the parser
``lxml.html`` wraps, as in the reference's current version); a leading XML declaration is dropped before parsing. The table scored is the first
``<table>`` child of ``<body>`` (the reference's ``body/table``), else the first ``<table>`` anywhere (the reference
returns 0.0 there; this is an input convenience, not a change of the metric). Processing instructions are ignored.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from lxml import etree

from ingestaudit.errors import IngestAuditError

UnicodeForm = Literal["NFC", "NFKC"]

_CELL_TAGS = ("td", "th")
_SECTION_TAGS = ("thead", "tbody", "tfoot")
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)
# A '<' that cannot open a tag, comment, doctype or processing instruction: libxml2 reads it as text.
_BARE_LT = re.compile(r"<(?![A-Za-z/!?])")
# A '&' that does not start a complete character reference (named, decimal or hexadecimal, ';'-terminated).
_BARE_AMP = re.compile(r"&(?!#[0-9]+;|#[xX][0-9a-fA-F]+;|[A-Za-z][A-Za-z0-9]*;)")
_VALID_TAG = re.compile(r"^[a-z][a-z0-9]*(?:[-_:.][a-z0-9]+)*$")
_MAX_COLSPAN, _MAX_ROWSPAN = 1000, 65534  # HTML's clamps; used only by the ragged-grid diagnostic


@dataclass(frozen=True)
class TedsOptions:
    """Named deviations from the published TEDS; every one is off by default (= the PubTabNet reference metric).

    Attributes:
        th_as_td: rename every ``th`` to ``td`` before building the tree, so header text and spans are compared
            (the published metric compares only the ``th`` tag).
        strip_inline_tags: unwrap every element inside a ``td``/``th`` (keep its text): ``<b>Name</b>`` reads as
            ``Name``; the unwrapped elements no longer count in ``n_nodes`` (the reference's ``ignore_nodes`` with
            every tag).
        unicode: ``None``, ``"NFC"`` or ``"NFKC"``: Unicode normalisation of every text run inside a cell before it
            is split into characters.
        collapse_whitespace: inside each cell, map every white-space character (``str.isspace``) to U+0020,
            collapse runs to one space (tag tokens between two spaces do not separate them) and drop leading and
            trailing white space (applied after ``unicode``).
        wrap_bare_rows: wrap every run of ``tr`` elements that sit directly under ``table`` in a new ``tbody``
            (libxml2, unlike browsers, does not insert it); the new ``tbody`` counts in ``n_nodes``.

    Order of application: wrap_bare_rows, th_as_td, strip_inline_tags, then per cell unicode, collapse_whitespace.
    """

    th_as_td: bool = False
    strip_inline_tags: bool = False
    unicode: UnicodeForm | None = None
    collapse_whitespace: bool = False
    wrap_bare_rows: bool = False

    def __post_init__(self) -> None:
        """Raises ValueError for a ``unicode`` value other than None, "NFC", "NFKC"."""
        if self.unicode not in (None, "NFC", "NFKC"):
            raise ValueError(f"unicode must be None, 'NFC' or 'NFKC', not {self.unicode!r}")

    @property
    def is_published(self) -> bool:
        """True when no deviation is on (the value is the published PubTabNet TEDS)."""
        return not self.deviations()

    def deviations(self) -> tuple[str, ...]:
        """The names of the deviations that are on, in declaration order (``unicode=NFKC`` style for the form)."""
        names: list[str] = []
        if self.th_as_td:
            names.append("th_as_td")
        if self.strip_inline_tags:
            names.append("strip_inline_tags")
        if self.unicode is not None:
            names.append(f"unicode={self.unicode}")
        if self.collapse_whitespace:
            names.append("collapse_whitespace")
        if self.wrap_bare_rows:
            names.append("wrap_bare_rows")
        return tuple(names)

    def describe(self) -> str:
        """A printable string for reports: ``"published (PubTabNet reference)"`` or
        ``"deviations: th_as_td, unicode=NFKC"``."""
        names = self.deviations()
        return "deviations: " + ", ".join(names) if names else "published (PubTabNet reference)"


class TableHtmlError(IngestAuditError, ValueError):
    """An input that yields no table tree.

    Attributes:
        kind: ``"empty"`` (None, empty or white-space-only text), ``"no_table"`` (parsed, but no ``<table>``
            element), ``"parse"`` (lxml could not parse it), ``"span"`` (a ``td`` colspan/rowspan that ``int()``
            rejects; the reference raises there) or ``"too_large"`` (over the ``max_nodes`` of `parse_table_html`).
    """

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class TableTree:
    """One table as the TEDS tree, nodes in postorder (children before parent, left to right; root last).

    Attributes:
        tags: element tag per node (``"td"`` leaves carry content).
        colspans, rowspans: ``int`` spans of ``td`` nodes, None for other nodes.
        contents: per node, the ``td``'s content tokens (one character each, or an inline tag such as ``"<b>"``),
            None for other nodes.
        parents: postorder index of each node's parent, -1 for the root.
        n_nodes: the TEDS denominator for this table (element descendants of ``<table>``; see module docstring).
        notes: diagnostics worth reporting (ragged grid, unescaped ``<``/``&``, several tables in the input).
    """

    tags: tuple[str, ...]
    colspans: tuple[int | None, ...]
    rowspans: tuple[int | None, ...]
    contents: tuple[tuple[str, ...] | None, ...]
    parents: tuple[int, ...]
    n_nodes: int
    notes: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        """Number of tree nodes (``table`` included); differs from ``n_nodes`` (see module docstring)."""
        return len(self.tags)


def _normalize_text(text: str | None, form: str | None) -> str | None:
    if text is None or form is None:
        return text
    return unicodedata.normalize(form, text)


def _cell_tokens(cell: etree._Element, options: TedsOptions) -> tuple[str, ...]:
    """Content tokens of one ``td`` (the reference's ``tokenize`` minus the cell's own open and close tokens)."""
    form = options.unicode
    tokens: list[str] = []
    text = _normalize_text(cell.text, form)
    if text:
        tokens.extend(text)
    if len(cell) == 0:  # no inner elements (the common case)
        return tuple(_collapse_whitespace(tokens) if options.collapse_whitespace else tokens)
    for event, el in etree.iterwalk(cell, events=("start", "end")):
        if el is cell or not isinstance(el.tag, str):
            continue
        if event == "start":
            tokens.append(f"<{el.tag}>")
            text = _normalize_text(el.text, form)
            if text:
                tokens.extend(text)
        else:
            if el.tag != "unk":
                tokens.append(f"</{el.tag}>")
            if el.tag != "td":
                tail = _normalize_text(el.tail, form)
                if tail:
                    tokens.extend(tail)
    if options.collapse_whitespace:
        tokens = _collapse_whitespace(tokens)
    return tuple(tokens)


def _collapse_whitespace(tokens: list[str]) -> list[str]:
    out: list[str] = []
    last_char_space = True  # drops leading white space
    for tok in tokens:
        if len(tok) == 1 and tok.isspace():
            if not last_char_space:
                out.append(" ")
                last_char_space = True
        else:
            out.append(tok)
            if len(tok) == 1:
                last_char_space = False
    # drop a trailing space (possibly followed by tag tokens)
    for k in range(len(out) - 1, -1, -1):
        tok = out[k]
        if tok == " ":
            del out[k]
            break
        if len(tok) == 1:
            break
    return out


def _span(cell: etree._Element, name: str) -> int:
    raw = cell.get(name, "1")
    try:
        return int(raw)
    except ValueError:
        raise TableHtmlError("span", f"{name}={raw!r} on a <td> is not an integer") from None


def _wrap_bare_rows(table: etree._Element) -> None:
    run: list[etree._Element] = []
    runs: list[list[etree._Element]] = []
    for child in table:
        if child.tag == "tr":
            run.append(child)
        elif run:
            runs.append(run)
            run = []
    if run:
        runs.append(run)
    for rows in runs:
        tbody = table.makeelement("tbody", {})
        rows[0].addprevious(tbody)
        for tr in rows:
            tbody.append(tr)  # moves the row


def _row_widths(table: etree._Element) -> list[int]:
    """Grid width of every row (HTML table model: spans fill the grid; a rowspan stops at its row group)."""
    groups: list[list[etree._Element]] = []
    bare: list[etree._Element] | None = None
    for child in table:
        if child.tag in _SECTION_TAGS:
            groups.append([tr for tr in child if tr.tag == "tr"])
            bare = None
        elif child.tag == "tr":
            if bare is None:
                bare = []
                groups.append(bare)
            bare.append(child)
    widths: list[int] = []
    for rows in groups:
        down: list[int] = []  # per grid column: rows still covered by a rowspan from above (this row included)
        for r, tr in enumerate(rows):
            col = 0
            for cell in tr:
                if cell.tag not in _CELL_TAGS:
                    continue
                cs = _lenient_span(cell, "colspan", _MAX_COLSPAN) if "colspan" in cell.attrib else 1
                rs = _lenient_span(cell, "rowspan", _MAX_ROWSPAN) if "rowspan" in cell.attrib else 1
                if rs == 0:  # HTML: rowspan="0" extends to the end of the row group
                    rs = len(rows) - r
                while col < len(down) and down[col] > 0:
                    col += 1
                if col + cs > len(down):
                    down.extend([0] * (col + cs - len(down)))
                for c in range(col, col + cs):
                    down[c] = max(rs, 1)
                col += cs
            width = len(down)
            while width and down[width - 1] == 0:
                width -= 1
            widths.append(width)
            down = [d - 1 if d > 0 else 0 for d in down]
    return widths


def _lenient_span(cell: etree._Element, name: str, cap: int) -> int:
    try:
        value = int(cell.get(name, "1"))
    except ValueError:
        return 1
    if name == "rowspan" and value == 0:
        return 0
    return min(max(value, 1), cap)


def _markup_notes(text: str, table: etree._Element) -> list[str]:
    notes: list[str] = []
    n_lt = len(_BARE_LT.findall(text))
    if n_lt:
        notes.append(f"{n_lt} unescaped '<' read as text by the HTML parser")
    bad = sorted({el.tag for el in table.iter() if isinstance(el.tag, str) and not _VALID_TAG.match(el.tag)})
    if bad:
        notes.append(
            "malformed markup (likely an unescaped '<' in cell text): lxml's recovery created element(s) "
            + ", ".join(f"<{t}>" for t in bad[:5])
            + "; scored as parsed, as the reference does"
        )
    n_amp = len(_BARE_AMP.findall(text))
    if n_amp:
        notes.append(f"{n_amp} '&' not starting a complete character reference, read as literal text")
    return notes


def parse_table_html(
    text: str | None, options: TedsOptions | None = None, max_nodes: int | None = None
) -> TableTree:
    """Parse one HTML table into its TEDS tree.

    Args:
        text: HTML holding a ``<table>`` (a fragment ``<table>...</table>`` or a full document).
        options: deviations to apply (default: none, the published definition).
        max_nodes: if given, a tree with more nodes raises ``TableHtmlError("too_large")`` before any per-cell
            work (the count is one C-level XPath over the parsed table).

    Returns:
        The `TableTree` (postorder nodes, ``n_nodes`` denominator and diagnostic notes).

    Raises:
        TableHtmlError: ``kind`` "empty", "no_table", "parse", "span" or "too_large" (see `TableHtmlError`).
    """
    options = options or TedsOptions()
    if text is None or not isinstance(text, str) or not text.strip():
        if text is not None and not isinstance(text, str):
            raise TableHtmlError("parse", f"expected HTML text (str), got {type(text).__name__}")
        raise TableHtmlError("empty", "no HTML (empty string)")
    source = _XML_DECL.sub("", text, count=1)
    try:
        # libxml2's HTML parser, as lxml.html uses it (plain etree elements: same tree, no class lookup cost)
        doc = etree.fromstring(source, etree.HTMLParser(remove_comments=True))
    except (etree.LxmlError, ValueError) as exc:
        raise TableHtmlError("parse", f"lxml could not parse the HTML: {exc}") from None
    if doc is None:  # e.g. only control characters
        raise TableHtmlError("parse", "lxml could not parse the HTML: document is empty")
    found = doc.xpath("body/table") or doc.xpath("//table")
    if not found:
        raise TableHtmlError("no_table", f"no <table> element in the HTML (starts {text.strip()[:60]!r})")
    table = found[0]
    notes: list[str] = []
    n_tables = len(doc.xpath("//table[not(ancestor::table)]"))
    if n_tables > 1:
        notes.append(f"the HTML holds {n_tables} tables; the first was scored")
    notes.extend(_markup_notes(source, table))

    if options.wrap_bare_rows:
        _wrap_bare_rows(table)
    if options.th_as_td:
        for th in table.iter("th"):
            th.tag = "td"
    if options.strip_inline_tags:
        for cell in table.iter(*_CELL_TAGS):
            etree.strip_tags(cell, "*")

    if max_nodes is not None:
        # tree nodes = the table + every element not inside a td (td contents are tokens, not nodes)
        size = 1 + int(table.xpath("count(.//*[not(ancestor::td)])"))
        if size > max_nodes:
            raise TableHtmlError("too_large", f"table tree has {size} nodes (max_nodes={max_nodes})")

    widths = _row_widths(table)
    if len(set(widths)) > 1:
        shown = ", ".join(map(str, widths[:12])) + (", ..." if len(widths) > 12 else "")
        notes.append(f"ragged grid: row widths (with spans) {shown}")

    n_nodes = sum(1 for el in table.iterdescendants() if isinstance(el.tag, str))

    tags: list[str] = []
    colspans: list[int | None] = []
    rowspans: list[int | None] = []
    contents: list[tuple[str, ...] | None] = []
    parents: list[int] = []
    # Iterative postorder (no recursion limit on deep markup); children of td are not visited (td is a leaf).
    # Each stack entry: element, expanded?, its children's postorder indices, and its parent's list of those.
    root_kids: list[int] = []
    stack: list[tuple[etree._Element, bool, list[int], list[int]]] = [(table, False, [], root_kids)]
    while stack:
        el, expanded, kids, siblings = stack[-1]
        if not expanded and el.tag != "td":
            stack[-1] = (el, True, kids, siblings)
            for child in reversed([c for c in el if isinstance(c.tag, str)]):
                stack.append((child, False, [], kids))
            continue
        stack.pop()
        index = len(tags)
        tags.append(el.tag)
        parents.append(-1)
        for kid in kids:
            parents[kid] = index
        if el.tag == "td":
            colspans.append(_span(el, "colspan"))
            rowspans.append(_span(el, "rowspan"))
            contents.append(_cell_tokens(el, options))
        else:
            colspans.append(None)
            rowspans.append(None)
            contents.append(None)
        siblings.append(index)
    return TableTree(
        tags=tuple(tags),
        colspans=tuple(colspans),
        rowspans=tuple(rowspans),
        contents=tuple(contents),
        parents=tuple(parents),
        n_nodes=n_nodes,
        notes=tuple(notes),
    )
