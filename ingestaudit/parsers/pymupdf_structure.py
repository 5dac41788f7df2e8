"""Headings and list items for the ``pymupdf`` parser: the document outline, else font statistics (``fontstats-v1``).

PyMuPDF gives text blocks, lines and spans with their font size and flags, but no notion of a heading. This module
turns them into `Block` kinds, with two sources, in this order:

1. **Outline** (``Document.get_toc()``), when the document has one: each entry ``[level, title, page]`` is looked for
   among the lines of its page (a line, or two consecutive lines of one block joined by a space) with the heading
   similarity of `ingestaudit.metrics.layout.similarity` >= `OUTLINE_MIN_SIMILARITY`; the lines found become a
   heading of the entry's level. An entry not found on its page (or without a page) is counted, not emitted: a block
   stands for text on the page. The font rule is then not applied: the outline is the author's own statement.
2. **Font statistics** (``fontstats-v1``, `HeadingRules`), otherwise:

   - every text line gets a *style*: its dominant font size (the size of the most characters, rounded to 0.5 pt)
     and whether it is bold (every non-space character in a span with PyMuPDF's bold flag, bit 16, or a font name
     containing Bold, Black, Heavy, Semibold or Demi);
   - the *body size* is the size that holds the most non-space characters of the document (ties: the smaller);
   - a style is a *heading style* when its size >= ``size_ratio`` x body size, or when it is bold, at least the
     body size (``bold_min_delta`` pt below it at most) and the body text is not bold; and it holds at most
     ``max_style_share`` of the document's characters (a style that common is body text);
   - a line is a heading line when its style is a heading style and it has at most ``max_chars`` characters; a
     bold-only heading line (not larger than ``size_ratio`` x body) must also open its block (only heading lines
     before it), so a bold sentence inside a paragraph is not taken for a heading;
   - levels: heading styles sorted by size (descending), bold before regular at one size; the k-th style is level
     k (at most ``max_level``); consecutive heading lines of one level in one block form one heading (joined by a
     space: MuPDF splits "5.1" and "Hyper Parameter Optimization" into two lines); a heading without a letter
     (a bold figure in a table) is text.

List items (both sources): a line that is not a heading and starts with a bullet (`BULLETS`, then optional space)
or a dash, asterisk or en/em dash followed by a space, or with a number, a lower-case letter or a lower-case roman
numeral followed by ``.`` or ``)`` and a space (`NUMBERED`; ``1.``, ``2)``, ``a)``, ``(iv)``, ``1.2.``) starts a list
item; the following lines of its block up to the next list start or heading continue it. Other lines form
paragraphs, kept as MuPDF's block when the block holds nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ingestaudit.metrics.layout import similarity

OUTLINE_MIN_SIMILARITY = 0.8
"""An outline title matches a line of its page at this heading similarity or more."""
BULLETS = "\u2022\u25e6\u25aa\u25ab\u2023\u2043\u2219\u00b7\u25cf\u25cb\u25a0\u25a1\u27a2\u2794\uf0b7\uf0a7\uf0d8\uf076"
"""Bullet characters (bullet, white bullet, squares, triangular bullet, hyphen bullet, middle dots, circles, arrows,
and the private-use glyphs of the Symbol and Wingdings fonts that Word writes for bullets)."""
NUMBERED = re.compile(r"^\(?(?:\d{1,3}(?:\.\d{1,3})*|[a-z]|[ivxlc]{1,6})[.)]\s+\S")
_BULLET = re.compile("^(?:[" + re.escape(BULLETS) + r"]\s*\S|[-*\u2013\u2014]\s+\S)")
_BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demi", re.I)
BOLD_FLAG = 16
"""PyMuPDF span flag bit for bold (``TEXT_FONT_BOLD``)."""


@dataclass(frozen=True)
class HeadingRules:
    """Thresholds of the ``fontstats-v1`` heading rule (module docstring); all recorded in the parser settings.

    Attributes:
        size_ratio: a style at least this many times the body size is a heading style (1.15).
        bold_min_delta: a bold style may be this many points below the body size and still count (0.25).
        max_style_share: a style holding more than this share of the document's non-space characters is not a
            heading style (0.3).
        max_chars: a heading line has at most this many characters (150).
        max_level: levels beyond this are clipped to it (6).
    """

    size_ratio: float = 1.15
    bold_min_delta: float = 0.25
    max_style_share: float = 0.3
    max_chars: int = 150
    max_level: int = 6

    name = "fontstats-v1"

    def describe(self) -> dict[str, Any]:
        """The rule's name and thresholds, JSON-serialisable."""
        return {"rule": self.name, **asdict(self)}


@dataclass(frozen=True)
class Line:
    """One text line of a MuPDF text block.

    Attributes:
        text: its spans' texts joined (as MuPDF emits the line).
        size: dominant font size in points, rounded to 0.5.
        bold: every non-space character is in a bold span.
        chars: number of non-space characters.
        bbox: ``(x0, y0, x1, y1)`` in PDF points, origin top-left.
    """

    text: str
    size: float
    bold: bool
    chars: int
    bbox: tuple[float, float, float, float]

    @property
    def style(self) -> tuple[float, bool]:
        """``(size, bold)``."""
        return (self.size, self.bold)


def line_of(raw: dict[str, Any]) -> Line:
    """A `Line` from one line of PyMuPDF's ``get_text("dict")`` output (its ``spans`` with ``text``, ``size``,
    ``flags``, ``font``, and its ``bbox``)."""
    weight: dict[float, int] = {}
    bold = True
    chars = 0
    texts = []
    for span in raw.get("spans", ()):
        t = span.get("text", "")
        texts.append(t)
        n = sum(1 for ch in t if not ch.isspace())
        if not n:
            continue
        chars += n
        size = round(float(span.get("size", 0.0)) * 2) / 2
        weight[size] = weight.get(size, 0) + n
        if not (int(span.get("flags", 0)) & BOLD_FLAG or _BOLD_NAME.search(str(span.get("font", "")))):
            bold = False
    size = max(weight.items(), key=lambda kv: (kv[1], -kv[0]))[0] if weight else 0.0
    x0, y0, x1, y1 = raw.get("bbox", (0.0, 0.0, 0.0, 0.0))
    return Line("".join(texts), size, bold and chars > 0, chars, (float(x0), float(y0), float(x1), float(y1)))


def list_rule() -> dict[str, Any]:
    """The list-item patterns as recorded in the parser settings (`BULLETS`, the dash rule, `NUMBERED`), with the
    rule's name ``markers-v1``: the exact characters and regular expressions that decide what a list item is."""
    return {"rule": "markers-v1", "bullets": [f"U+{ord(ch):04X}" for ch in BULLETS], "bullet_pattern": _BULLET.pattern,
            "numbered_pattern": NUMBERED.pattern,
            "first_character": "letter, digit, opening quote or bracket after the marker",
            "continuation": "following lines of the block up to the next list start or heading"}


def is_list_start(text: str) -> bool:
    """True when ``text`` opens a list item (a bullet or a numbering pattern, see the module docstring).

    Examples: "• Item", "- item", "1. First", "a) nested", "(iv) fourth" -> True; "1.5 litres", "e.g. this",
    "-5 degrees", "- - - x" (a rule of dashes: the first character after the marker must be a letter, a digit, an
    opening quote or bracket) -> False.
    """
    t = text.lstrip()
    m = _BULLET.match(t) or NUMBERED.match(t)
    return bool(m) and (t[m.end() - 1].isalnum() or t[m.end() - 1] in "\"'\u201c\u2018\u00ab([")


@dataclass(frozen=True)
class FontStats:
    """What the font rule found in one document: ``body_size`` (None without text), ``levels`` (heading style ->
    level), ``chars`` per style."""

    body_size: float | None
    body_bold: bool
    levels: dict[tuple[float, bool], int]
    chars: dict[tuple[float, bool], int]

    def describe(self) -> dict[str, Any]:
        """JSON-serialisable summary for ``ParsedDocument.settings["headings"]``."""
        return {"body_size": self.body_size, "body_bold": self.body_bold,
                "styles": [{"size": s, "bold": b, "level": lv, "chars": self.chars.get((s, b), 0)}
                           for (s, b), lv in sorted(self.levels.items(), key=lambda kv: kv[1])]}


def font_stats(lines: Sequence[Line], rules: HeadingRules) -> FontStats:
    """Body size and heading styles with their levels, over all ``lines`` of a document (see the module docstring)."""
    by_size: dict[float, int] = {}
    by_style: dict[tuple[float, bool], int] = {}
    total = 0
    for ln in lines:
        if not ln.chars:
            continue
        total += ln.chars
        by_size[ln.size] = by_size.get(ln.size, 0) + ln.chars
        by_style[ln.style] = by_style.get(ln.style, 0) + ln.chars
    if not total:
        return FontStats(None, False, {}, {})
    body = max(by_size.items(), key=lambda kv: (kv[1], -kv[0]))[0]
    body_bold = by_style.get((body, True), 0) > by_style.get((body, False), 0)
    heading = []
    for (size, bold), n in by_style.items():
        if n > rules.max_style_share * total:
            continue
        larger = size >= rules.size_ratio * body
        bold_ok = bold and not body_bold and size >= body - rules.bold_min_delta
        if larger or bold_ok:
            heading.append((size, bold))
    heading.sort(key=lambda s: (-s[0], not s[1]))
    levels = {s: min(k + 1, rules.max_level) for k, s in enumerate(heading)}
    return FontStats(body, body_bold, levels, {s: by_style[s] for s in heading})


@dataclass(frozen=True)
class Piece:
    """A block, or a part of one, with its kind: ``kind`` in {"heading", "list_item", "paragraph"}, ``level`` for
    headings, ``lines`` the indices of its lines in the block."""

    kind: str
    level: int | None
    lines: tuple[int, ...]


def classify_lines(lines: Sequence[Line], stats: FontStats, rules: HeadingRules,
                   outline_levels: dict[int, int] | None = None) -> list[Piece]:
    """Split one MuPDF block's lines into headings, list items and paragraphs (module docstring).

    Args:
        lines: the block's lines in order.
        stats: the document's font statistics (ignored when ``outline_levels`` is given).
        rules: the heading thresholds.
        outline_levels: line index -> level of the lines an outline entry matched; None to use the font rule.

    Returns:
        the block's pieces in line order; a block of one piece of kind ``"paragraph"`` keeps MuPDF's block text.
    """
    tags: list[tuple[str, int | None]] = []
    opening = True  # only heading lines so far in this block
    for k, ln in enumerate(lines):
        level = None
        if outline_levels is not None:
            level = outline_levels.get(k)
        elif ln.style in stats.levels and ln.chars and len(ln.text.strip()) <= rules.max_chars:
            larger = stats.body_size is not None and ln.size >= rules.size_ratio * stats.body_size
            if larger or opening:
                level = stats.levels[ln.style]
        if level is not None:
            tags.append(("heading", level))
            continue
        opening = False
        tags.append(("list_item", None) if is_list_start(ln.text) else ("text", None))
    pieces: list[Piece] = []
    for k, (tag, level) in enumerate(tags):
        last = pieces[-1] if pieces else None
        if tag == "heading":
            if last is not None and last.kind == "heading" and last.level == level:
                pieces[-1] = Piece("heading", level, last.lines + (k,))
            else:
                pieces.append(Piece("heading", level, (k,)))
        elif tag == "list_item":
            pieces.append(Piece("list_item", None, (k,)))
        elif last is not None and last.kind in ("list_item", "paragraph"):
            pieces[-1] = Piece(last.kind, None, last.lines + (k,))
        else:
            pieces.append(Piece("paragraph", None, (k,)))
    # a heading needs a letter: a lone bold number ("5.1" split from its title, a bold table figure) is text
    out: list[Piece] = []
    for piece in pieces:
        if piece.kind == "heading" and not any(ch.isalpha() for k in piece.lines for ch in lines[k].text):
            piece = Piece("paragraph", None, piece.lines)
        if out and piece.kind == "paragraph" and out[-1].kind in ("paragraph", "list_item"):
            out[-1] = Piece(out[-1].kind, None, out[-1].lines + piece.lines)
        else:
            out.append(piece)
    return out


def match_outline(entries: Sequence[tuple[int, str]], page_lines: Sequence[Sequence[Line]],
                  min_similarity: float = OUTLINE_MIN_SIMILARITY) -> tuple[dict[tuple[int, int], int], int]:
    """Find the outline entries of one page among its blocks' lines.

    Args:
        entries: ``(level, title)`` of the page's outline entries, in outline order.
        page_lines: the page's blocks, each its `Line`s.
        min_similarity: minimum heading similarity (`ingestaudit.metrics.layout.similarity`).

    Returns:
        ``(levels, not_found)``: ``(block index, line index) -> level`` for every line an entry matched (one line,
        or two consecutive lines of one block), and the number of entries not found. Each line serves one entry;
        among equally similar candidates the first in page order wins.
    """
    candidates: list[tuple[tuple[tuple[int, int], ...], str]] = []
    for b, lines in enumerate(page_lines):
        for k, ln in enumerate(lines):
            candidates.append((((b, k),), ln.text))
            if k + 1 < len(lines):
                candidates.append((((b, k), (b, k + 1)), ln.text.rstrip() + " " + lines[k + 1].text.lstrip()))
    used: set[tuple[int, int]] = set()
    levels: dict[tuple[int, int], int] = {}
    missing = 0
    for level, title in entries:
        best, best_sim = None, min_similarity
        for keys, text in candidates:
            if any(key in used for key in keys):
                continue
            s = similarity(title, text)
            if s > best_sim or (best is None and s >= best_sim):
                best, best_sim = keys, s
        if best is None:
            missing += 1
            continue
        for key in best:
            used.add(key)
            levels[key] = max(1, int(level))
    return levels, missing
