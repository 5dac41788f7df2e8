"""Where the pages and headings of a document lie in a text: the page and section path at any offset.

A `TextLayout` answers, for a code-point offset into one text (the parsed text, a cleaned text, or the reference
text), which 1-based page holds it and which heading path (outermost first) it falls under. It is built from a
parser's `ParsedDocument` (its per-page texts and heading blocks, located in order in ``parsed.text``) or from the
labelled truth headings of a reference text, and carried into another text's coordinates through an
`ingestaudit.metrics.offsets.OffsetMap` (for example parsed -> cleaned text, for the chunker and the attribution audit).

Section path rule (DESIGN.md, issue 9): the nearest heading that starts at or before the offset, then its ancestors —
repeatedly the nearest earlier heading with a strictly smaller level — listed outermost first. With headings
H1 "A", H3 "B", H2 "C" in that order, the path after "B" is ("A", "B") and after "C" is ("A", "C"). A heading whose
level is unknown (None: a parser that marks headings without levels) has no parent and is no one's parent, the rule of
``layout.hierarchy`` (`ingestaudit.metrics.layout.parents`): with H1 "A", "X" (no level), H2 "B", the path after "X"
is ("X",) and after "B" is ("A", "B").
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ingestaudit.metrics.offsets import OffsetMap
from ingestaudit.model import ParsedDocument


@dataclass(frozen=True)
class HeadingPos:
    """One heading located in a text.

    Attributes:
        start, end: code-point interval ``[start, end)`` of the heading in the text (end exclusive).
        level: 1 = top level; larger is deeper (>= 1); None when the source gives no level (see the module
            docstring: such a heading has no parent and is no one's parent).
        text: the heading's label (the parser block's or the truth heading's text, stripped).
    """

    start: int
    end: int
    level: int | None
    text: str


def find_text(text: str, needle: str, start: int = 0) -> tuple[int, int] | None:
    """First occurrence of ``needle`` in ``text`` at or after ``start``: exactly, else with any run of white space in
    ``needle`` matching any non-empty run of white space in ``text``; ``(begin, end)`` or None. The needle is stripped
    first; an empty needle is never found."""
    needle = needle.strip()
    if not needle:
        return None
    at = text.find(needle, start)
    if at >= 0:
        return at, at + len(needle)
    words = needle.split()
    m = re.compile(r"\s+".join(map(re.escape, words))).search(text, start)
    return (m.start(), m.end()) if m else None


def _stands_alone(text: str, begin: int, end: int) -> bool:
    """Whether ``text[begin:end]`` is a line of its own: only white space or Markdown heading marks (``#``) before it
    on its line, only white space after it."""
    line_start = text.rfind("\n", 0, begin) + 1
    line_end = text.find("\n", end)
    return not text[line_start:begin].strip(" \t#") and not text[end:len(text) if line_end < 0 else line_end].strip()


def find_heading(text: str, needle: str, start: int = 0) -> tuple[int, int] | None:
    """Where a heading ``needle`` lies in ``text`` at or after ``start``: the first occurrence (as `find_text`) that
    stands on a line of its own (`_stands_alone`), else the first occurrence; ``(begin, end)`` or None. A heading's
    words often appear in a sentence before the heading itself ("the Results below ..." before "Results")."""
    first = find_text(text, needle, start)
    hit = first
    while hit is not None:
        if _stands_alone(text, *hit):
            return hit
        hit = find_text(text, needle, hit[0] + 1)
    return first


def _paths(headings: tuple[HeadingPos, ...]) -> tuple[tuple[str, ...], ...]:
    """The section path of each heading (itself last), by the stack rule of the module docstring (a heading without
    a level is its own whole path and never enters the stack of possible parents)."""
    stack: list[HeadingPos] = []
    out = []
    for h in headings:
        if h.level is None:
            out.append((h.text,))
            continue
        while stack and stack[-1].level >= h.level:  # type: ignore[operator]
            stack.pop()
        stack.append(h)
        out.append(tuple(s.text for s in stack))
    return tuple(out)


def _level(level: Any) -> int | None:
    """A heading level as an int >= 1, or None when unknown (None, or not a positive number)."""
    return int(level) if isinstance(level, int) and not isinstance(level, bool) and level >= 1 else None


@dataclass(frozen=True)
class TextLayout:
    """Page starts and located headings of one text.

    Attributes:
        page_starts: code-point offset where each page starts, non-decreasing, ``page_starts[0] == 0``; page k
            (1-based) holds ``[page_starts[k-1], page_starts[k])``, the last page runs to the end of the text.
            An empty page starts where the next one does and so holds no offset.
        headings: located headings sorted by ``start``.
        headings_not_found: headings that could not be located (skipped).
        pages_not_found: pages (after the first) whose text could not be located; each is taken to start where the
            previous located page ended.
    """

    page_starts: tuple[int, ...] = (0,)
    headings: tuple[HeadingPos, ...] = ()
    headings_not_found: int = 0
    pages_not_found: int = 0
    _heading_starts: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _heading_paths: tuple[tuple[str, ...], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        starts = tuple(int(p) for p in self.page_starts) or (0,)
        if starts[0] != 0 or any(b < a for a, b in zip(starts, starts[1:])):
            raise ValueError(f"page_starts must start at 0 and be non-decreasing, got {starts}")
        heads = tuple(sorted(self.headings, key=lambda h: (h.start, h.end)))
        object.__setattr__(self, "page_starts", starts)
        object.__setattr__(self, "headings", heads)
        object.__setattr__(self, "_heading_starts", tuple(h.start for h in heads))
        object.__setattr__(self, "_heading_paths", _paths(heads))

    # ----- constructors -------------------------------------------------------------------------------------------

    @classmethod
    def from_parsed(cls, parsed: ParsedDocument) -> "TextLayout":
        """Locate each page text and each heading block (``kind == "heading"``; a level of None stays unknown, see
        the module docstring) in ``parsed.text``, in order.

        Pages: page 1 starts at 0; page k > 1 starts where its stripped text is found (`find_text`) at or after the end
        of page k-1's located text, so it does not matter how the parser joined the pages. A blank page starts where
        the previous page ended (and so holds no offset); a page whose whole text is not found is located by its first
        non-empty line, else counted in ``pages_not_found`` and taken to start where the previous page ended.

        Blocks: every block with text, in the parser's reading order, is searched (`find_text`) from a cursor at the
        end of the previous located block and no earlier than the start of the block's page. Non-heading blocks only
        advance the cursor (so a table-of-contents line holding a heading's text is passed over), and only when found
        before their page ends; a heading not found from its page start is searched from the cursor alone, and one not
        found at all is skipped and counted in ``headings_not_found``.
        """
        text = parsed.text or ""
        starts = [0]
        cursor = 0
        pages_missing = 0
        for k, page in enumerate(parsed.pages):
            if k == 0:
                hit = find_text(text, page, 0)
                cursor = hit[1] if hit else 0
                continue
            if not page.strip():
                starts.append(max(starts[-1], cursor))
                continue
            hit = find_text(text, page, cursor)
            if hit is None:  # the page text differs from its slice of parsed.text: try its first non-empty line
                hit = find_text(text, next(line for line in page.splitlines() if line.strip()), cursor)
            if hit is None:
                pages_missing += 1
                starts.append(max(starts[-1], cursor))
                continue
            starts.append(max(starts[-1], hit[0]))
            cursor = hit[1]
        heads: list[HeadingPos] = []
        missing = 0
        cursor = 0
        for block in parsed.blocks:
            if not block.text.strip():
                continue
            is_heading = block.kind == "heading"
            hit = None
            if 1 <= block.page <= len(starts):
                page_end = starts[block.page] if block.page < len(starts) else len(text)
                hit = find_text(text, block.text, max(cursor, starts[block.page - 1]))
                if hit is not None and not is_heading and hit[0] >= page_end:
                    hit = None  # an anchor found past the end of its own page is not trusted
            if hit is None and is_heading:
                hit = find_text(text, block.text, cursor)
            if hit is None:
                missing += int(is_heading)
                continue
            if is_heading:
                heads.append(HeadingPos(hit[0], hit[1], _level(block.level), block.text.strip()))
            cursor = hit[1]
        return cls(tuple(starts), tuple(heads), missing, pages_missing)

    @classmethod
    def from_reference_headings(cls, reference_text: str, headings: Iterable[Any]) -> "TextLayout":
        """Locate labelled truth headings in the reference text, in order (one page).

        Args:
            reference_text: the reference text.
            headings: ``(level, text)`` pairs, or objects with ``level`` and ``text`` attributes, in document order;
                level None stays unknown (truth headings always carry one).

        Each heading is searched (`find_heading`: its first occurrence on a line of its own, else its first
        occurrence) from the end of the previous located one; one not found is skipped and counted in
        ``headings_not_found``.
        """
        heads: list[HeadingPos] = []
        missing = 0
        cursor = 0
        for item in headings:
            level, label = (item.level, item.text) if hasattr(item, "text") else item
            hit = find_heading(reference_text, label, cursor)
            if hit is None:
                missing += 1
                continue
            heads.append(HeadingPos(hit[0], hit[1], _level(level), label.strip()))
            cursor = hit[1]
        return cls((0,), tuple(heads), missing, 0)

    # ----- queries ------------------------------------------------------------------------------------------------

    @property
    def n_pages(self) -> int:
        """Number of pages (>= 1)."""
        return len(self.page_starts)

    def page_at(self, offset: int) -> int:
        """The 1-based page holding code-point ``offset`` (offsets past the text belong to the last page).

        Raises:
            ValueError: ``offset < 0``.
        """
        if offset < 0:
            raise ValueError(f"offset must be >= 0, got {offset}")
        return bisect_right(self.page_starts, offset)

    def heading_at(self, offset: int) -> HeadingPos | None:
        """The nearest heading whose start is <= ``offset``, or None."""
        i = bisect_right(self._heading_starts, offset)
        return self.headings[i - 1] if i else None

    def section_path_at(self, offset: int) -> tuple[str, ...]:
        """Heading texts of the section path at ``offset``, outermost first (the module docstring's rule); ``()``
        before the first heading."""
        i = bisect_right(self._heading_starts, offset)
        return self._heading_paths[i - 1] if i else ()

    # ----- change of coordinates ----------------------------------------------------------------------------------

    def through(self, offset_map: OffsetMap) -> "TextLayout":
        """This layout in the coordinates of another text whose ``offset_map`` maps it (output) into this layout's text
        (input), e.g. the cleaned text's map to the parsed text.

        A page starts at the first output position that comes from at or after its input start
        (`OffsetMap.output_at_or_after`; page 1 stays at 0). A heading moves to the smallest output interval holding
        the characters that come from it (`OffsetMap.preimage`); a heading none of whose characters survive is dropped
        and counted in ``headings_not_found``. Labels are unchanged.

        Raises:
            ValueError: ``offset_map`` is not an `OffsetMap`.
        """
        if not isinstance(offset_map, OffsetMap):
            raise ValueError("through() takes an OffsetMap (output -> this layout's text)")
        moved = offset_map.outputs_at_or_after(self.page_starts[1:]).tolist()
        starts = [0]
        for p in moved:
            starts.append(max(starts[-1], int(p)))
        heads = []
        dropped = 0
        for h in self.headings:
            iv = offset_map.preimage(h.start, h.end)
            if iv is None:
                dropped += 1
                continue
            heads.append(HeadingPos(iv[0], iv[1], h.level, h.text))
        return TextLayout(tuple(starts), tuple(heads), self.headings_not_found + dropped, self.pages_not_found)
