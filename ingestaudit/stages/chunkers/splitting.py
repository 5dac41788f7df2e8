"""LangChain's recursive character splitting, on code-point intervals instead of strings, so every chunk's offsets
come from the split itself.

Definition (langchain-text-splitters, ``RecursiveCharacterTextSplitter._split_text`` and ``TextSplitter._merge_splits``,
``langchain_text_splitters/character.py`` and ``base.py``):

1. Take the first separator of the list that occurs in the span (``""`` always does: single characters) and cut the
   span at every occurrence (an occurrence at the span's very start or end cuts nothing); the separator stays in a
   piece (``keep_separator``: ``"end"`` appends it to the piece before the cut, ``"start"`` prepends it to the piece
   after). Empty pieces are dropped. The pieces partition the span, so any run of consecutive pieces is one
   contiguous interval of the text.
2. A piece whose length is ``< size`` is "good"; a longer one is split again with the separators after the one used
   (or kept whole when none is left), after the good pieces gathered so far have been merged.
3. Merging walks the good pieces, adding each to the current chunk while the summed length stays ``<= size``; when a
   piece does not fit, the current chunk is emitted and pieces are dropped from its front while the remaining length
   is ``> overlap`` (or the next piece still would not fit), so consecutive chunks share up to ``overlap``.
4. An emitted chunk is stripped of surrounding white space (``strip_whitespace=True``); one that is only white space
   is dropped.

Lengths are those of the pieces (summed, as LangChain does: the length function is never applied to the merged text),
in code points or in tokenizer word pieces. Extension: ``protected`` intervals (tables, list runs) are never cut: a
cut position strictly inside one is ignored, and at the character level a protected interval is one piece.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence

from ingestaudit.stages.chunkers.base import strip_span

Lengths = Callable[[list[str]], list[int]]
"""``lengths(texts) -> list[int]``: the length of each text in the chunker's unit."""

DEFAULT_SEPARATORS: tuple[str, ...] = ("\n\n", "\n", ". ", " ", "")
"""Paragraph, line, sentence, word, character (LangChain's default list is ``["\\n\\n", "\\n", " ", ""]``; the
sentence separator ``". "`` is added here)."""

KEEP_SEPARATOR = ("end", "start")


def merge_protected(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, non-overlapping union of non-empty intervals (touching ones stay apart)."""
    out: list[list[int]] = []
    for s, e in sorted((int(s), int(e)) for s, e in spans if e > s):
        if out and s < out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


class RecursiveSplitter:
    """Splits intervals of one text the way LangChain's ``RecursiveCharacterTextSplitter`` does (module docstring).

    Args:
        text: the whole text; intervals index into it.
        size: maximum chunk length in the unit of ``lengths`` (>= 1).
        overlap: maximum length shared by consecutive chunks of one merge run (0 <= overlap < size).
        lengths: the length function, applied to lists of piece texts.
        separators: tried in order; ``""`` means single characters.
        keep_separator: ``"end"`` (a separator ends the piece before the cut; default here) or ``"start"``
            (LangChain's default: it starts the piece after).
        protected: intervals that are never cut (merged with `merge_protected`).
    """

    def __init__(self, text: str, *, size: int, overlap: int, lengths: Lengths,
                 separators: Sequence[str] = DEFAULT_SEPARATORS, keep_separator: str = "end",
                 protected: Sequence[tuple[int, int]] = ()) -> None:
        self.text = text
        self.size = size
        self.overlap = overlap
        self.lengths = lengths
        self.separators = tuple(separators)
        self.keep_separator = keep_separator
        self.protected = merge_protected(protected)
        self._pstarts = [s for s, _ in self.protected]
        self._patterns = {s: re.compile(re.escape(s)) for s in self.separators if s}

    # ----- cutting ------------------------------------------------------------------------------------------------

    def _inside_protected(self, pos: int) -> bool:
        i = bisect_right(self._pstarts, pos) - 1
        return i >= 0 and self.protected[i][0] < pos < self.protected[i][1]

    def _cuts(self, start: int, end: int, sep: str) -> list[int]:
        """Allowed cut positions strictly inside ``(start, end)`` for separator ``sep``."""
        cuts = []
        for m in self._patterns[sep].finditer(self.text, start, end):
            pos = m.end() if self.keep_separator == "end" else m.start()
            if start < pos < end and not self._inside_protected(pos):
                cuts.append(pos)
        return cuts

    def _characters(self, start: int, end: int) -> list[tuple[int, int]]:
        """Single code points, a protected interval (clipped to the span) being one piece."""
        pieces = []
        pos = start
        i = max(bisect_right(self._pstarts, start) - 1, 0)
        while pos < end:
            while i < len(self.protected) and self.protected[i][1] <= pos:
                i += 1
            if i < len(self.protected) and self.protected[i][0] <= pos < self.protected[i][1]:
                stop = min(self.protected[i][1], end)
                pieces.append((pos, stop))
                pos = stop
            else:
                nxt = self.protected[i][0] if i < len(self.protected) else end
                stop = min(nxt, end)
                pieces.extend((p, p + 1) for p in range(pos, stop))
                pos = stop
        return pieces

    # ----- LangChain's algorithm ----------------------------------------------------------------------------------

    def split(self, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
        """Chunk intervals of ``text[start:end]`` in text order (stripped, none empty)."""
        end = len(self.text) if end is None else end
        if end <= start:
            return []
        return self._split(start, end, self.separators)

    def _split(self, start: int, end: int, separators: tuple[str, ...]) -> list[tuple[int, int]]:
        rest: tuple[str, ...] = ()
        pieces: list[tuple[int, int]] | None = None
        for i, sep in enumerate(separators):
            if sep == "":
                pieces = self._characters(start, end)
                break
            if self._patterns[sep].search(self.text, start, end):  # LangChain: the first separator that occurs
                bounds = [start, *self._cuts(start, end, sep), end]
                pieces = [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]
                rest = separators[i + 1:]
                break
        if pieces is None:  # no separator occurs (and "" is not in the list): the span is one piece
            pieces = [(start, end)]
        lengths = self.lengths([self.text[a:b] for a, b in pieces])
        out: list[tuple[int, int]] = []
        good: list[tuple[int, int, int]] = []
        for (a, b), n in zip(pieces, lengths):
            if n < self.size:
                good.append((a, b, n))
                continue
            if good:
                out.extend(self.merge(good))
                good = []
            if rest:
                out.extend(self._split(a, b, rest))
            else:
                kept = strip_span(self.text, a, b)
                if kept is not None:
                    out.append(kept)
        if good:
            out.extend(self.merge(good))
        return out

    def merge(self, pieces: Sequence[tuple[int, int, int]]) -> list[tuple[int, int]]:
        """LangChain's ``_merge_splits`` with an empty separator, on consecutive ``(start, end, length)`` pieces:
        chunk intervals (stripped, whitespace-only ones dropped)."""
        out: list[tuple[int, int]] = []
        current: list[tuple[int, int, int]] = []
        total = 0
        first = 0  # index into current of the first piece still held (avoids popping from the front)
        for piece in pieces:
            n = piece[2]
            if total + n > self.size and len(current) > first:
                self._emit(current[first][0], current[-1][1], out)
                while len(current) > first and (total > self.overlap or total + n > self.size):
                    total -= current[first][2]
                    first += 1
            current.append(piece)
            total += n
        if len(current) > first:
            self._emit(current[first][0], current[-1][1], out)
        return out

    def _emit(self, start: int, end: int, out: list[tuple[int, int]]) -> None:
        kept = strip_span(self.text, start, end)
        if kept is not None:
            out.append(kept)
