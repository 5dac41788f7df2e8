"""The ``repeated-lines`` cleaner: running headers, running footers and page numbers of paged documents.

The rule, for a document of ``n >= 2`` pages (a parser's pages, or a plain text split at form feeds):

1. **Edge zone.** On each page, the first ``edge_lines`` and the last ``edge_lines`` non-blank lines (default 3
   each; they overlap on short pages). Only lines in an edge zone are ever removed.
2. **Line key.** NFKC, case folded, every run of digits (Unicode ``\\d``) replaced by ``#``, whitespace runs
   collapsed to one space, ends stripped. "Page 3 of 12" and "PAGE 4 of 12" have the same key ``page # of #``,
   and a bare page number has the key ``#``.
3. **Repeated.** A key is repeated when it occurs in the edge zones of at least ``max(2, ⌈min_share · n⌉)`` pages
   (default ``min_share = 0.5``), or of at least ``max(2, ⌈min_share · n_p⌉)`` of the ``n_p`` pages of one
   parity (odd or even page numbers: books alternate their running heads). A page counts once per key. Only keys
   with a letter, and the bare-number key ``#`` (folios), can be repeated: numeric lines such as table cells at
   the foot of pages ("5,391" -> ``#,#``) never are.
4. **Page number.** An edge line whose whole text (ends stripped) matches `PAGE_NUMBER` is removed even if its key
   is not repeated: "Page 3", "Seite 3 von 10", "3 of 10", "3/10", "- 3 -" (Arabic or Roman numerals). A bare
   number ("3") is removed only through rule 3, since a lone number at a page edge may be content (a year, a
   total).

Every edge line whose key is repeated (rule 3) or that is a page number (rule 4) is removed with its line break;
other lines are kept verbatim, and the pages are joined with the input's page separator. The detail lists the
removed lines with their page, position (``top``/``bottom``) and rule. The result carries the exact offset map
(`CleanResult.pieces`: each kept line maps to its own place in the input text, so a running head kept on one page
maps to that page's copy); it is None, and the chain aligns instead, when a page's text cannot be found in the input
text in order.

Design of the rule: running heads and folios are the classic "repeated at the same place on most pages" signal
used by PDF-to-text cleaners; this implementation is ingestaudit's own and is documented here so its numbers can be
reproduced by hand.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from typing import Any

from ingestaudit import __version__
from ingestaudit.stages.cleaners.base import Cleaner, CleanerInput, CleanResult, join_kept, locate_in_order

_N = r"(?:\d{1,5}|(?=[mdclxvi])m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3}))"
_OF = r"(?:of|/|von|de|di|sur|z|av|af)"
_WORD = r"(?:page|p\.|pg\.?|seite|s\.|pagina|página|pág\.?|strona|sida|side)"
_DECOR = r"[\s|•·\[\]()]*"
PAGE_NUMBER = re.compile(
    rf"{_DECOR}(?:{_WORD}\s*{_N}(?:\s*{_OF}\s*{_N})?|{_N}\s*{_OF}\s*{_N}|[-–—]\s*{_N}\s*[-–—]){_DECOR}",
    re.IGNORECASE)
"""Page-number lines (whole line, case-insensitive): a page word (English, German, Spanish, Italian, French
"page", Polish, Swedish, Norwegian/Danish) with a number and an optional "of N"; "N of/von/de/di/sur/z/av/af/ N";
or "- N -"; N is 1-5 Arabic digits or a Roman numeral."""

_DIGITS = re.compile(r"\d+")
_LETTER = re.compile(r"[^\W\d_]")
_SPACE = re.compile(r"\s+")

MAX_LISTED = 20
"""At most this many removed lines are listed in the detail."""


def line_key(line: str) -> str:
    """The comparison key of a line (rule 2 of the module docstring)."""
    key = unicodedata.normalize("NFKC", line).casefold()
    return _SPACE.sub(" ", _DIGITS.sub("#", key)).strip()


def is_page_number(line: str) -> bool:
    """True when the stripped line is a page number by `PAGE_NUMBER` (rule 4)."""
    return PAGE_NUMBER.fullmatch(line.strip()) is not None


class RepeatedLinesCleaner(Cleaner):
    """Removes running headers, footers and page numbers from the edge lines of pages (see the module docstring).

    Args:
        edge_lines: non-blank lines per page top and per page bottom examined, >= 1.
        min_share: share of pages (overall, or of one parity) a key must reach to be repeated, in (0, 1].

    Raises:
        ValueError: (at construction) an option out of range.
    """

    name = "repeated-lines"
    reads = "pages"

    def __init__(self, edge_lines: int = 3, min_share: float = 0.5):
        if not isinstance(edge_lines, int) or isinstance(edge_lines, bool) or edge_lines < 1:
            raise ValueError(f"repeated-lines: edge_lines must be an integer >= 1, not {edge_lines!r}")
        if not isinstance(min_share, (int, float)) or isinstance(min_share, bool) or not 0 < min_share <= 1:
            raise ValueError(f"repeated-lines: min_share must be in (0, 1], not {min_share!r}")
        self.edge_lines = edge_lines
        self.min_share = float(min_share)

    def supports(self, inp: CleanerInput) -> str | None:
        """Runs on paged inputs (two pages or more)."""
        if len(inp.pages) < 2:
            return f"not a paged document ({len(inp.pages)} page); the rule compares page tops and bottoms"
        return None

    def version(self) -> str:
        """ingestaudit's version (the rule is ingestaudit's own)."""
        return __version__

    def settings(self) -> dict[str, Any]:
        """``edge_lines``, ``min_share`` and the page-number pattern."""
        return {"edge_lines": self.edge_lines, "min_share": self.min_share, "page_number_pattern": PAGE_NUMBER.pattern}

    def _edges(self, lines: list[str]) -> dict[int, str]:
        """Line index -> ``"top"``/``"bottom"`` for the edge zone of one page's lines."""
        nonblank = [i for i, line in enumerate(lines) if line.strip()]
        k = self.edge_lines
        zone = {i: "bottom" for i in nonblank[-k:]}
        zone.update({i: "top" for i in nonblank[:k]})
        return zone

    def clean(self, inp: CleanerInput) -> CleanResult:
        """The pages without their repeated edge lines and page numbers, joined by ``inp.page_separator``.

        Raises:
            UnsupportedInput: fewer than two pages.
        """
        self._check(inp)
        pages = [p.splitlines(keepends=True) for p in inp.pages]
        edges = [self._edges(lines) for lines in pages]
        n = len(pages)
        count: Counter[str] = Counter()
        parity: Counter[tuple[str, int]] = Counter()
        for p, (lines, zone) in enumerate(zip(pages, edges)):
            for key in {line_key(lines[i]) for i in zone}:
                count[key] += 1
                parity[key, p % 2] += 1
        n_par = (math.ceil(n / 2), n // 2)
        need_all = max(2, math.ceil(self.min_share * n))
        need_par = tuple(max(2, math.ceil(self.min_share * m)) for m in n_par)

        def repeated(key: str) -> bool:
            if not (key == "#" or _LETTER.search(key)):
                return False
            return count[key] >= need_all or any(parity[key, q] >= need_par[q] for q in (0, 1))

        starts = locate_in_order(inp.text, inp.pages)  # where each page lies in inp.text, for the exact map
        segments: list[tuple[str, int | None]] = []
        removed = []
        for p, (lines, zone) in enumerate(zip(pages, edges)):
            if p:
                prev_end = starts[p - 1] + len(inp.pages[p - 1]) if starts else None
                sep = inp.page_separator
                segments.append((sep, prev_end if prev_end is not None and starts[p] == prev_end + len(sep)
                                 else None))
            at = starts[p] if starts else None
            for i, line in enumerate(lines):
                rule = None
                if i in zone:
                    if repeated(line_key(line)):
                        rule = "repeated"
                    elif is_page_number(line):
                        rule = "page_number"
                if rule is None:
                    segments.append((line, at))
                else:
                    removed.append({"page": p + 1, "where": zone[i], "rule": rule, "text": line.strip()[:80]})
                if at is not None:
                    at += len(line)
        text, pieces = join_kept(segments, inp.text)
        rules = Counter(r["rule"] for r in removed)
        return CleanResult(text, {
            "pages": n, "removed_lines": len(removed), "by_rule": dict(sorted(rules.items())),
            "removed": removed[:MAX_LISTED],
            "thresholds": {"pages": need_all, "odd_pages": need_par[0], "even_pages": need_par[1]},
        }, pieces if starts is not None else None)
