"""The ``structural`` chunker: one chunk per section under the parser's headings, tables and list runs kept whole,
long sections split recursively, the section path on every chunk.

A section runs from a heading's start to the next heading's start (the text before the first heading is a section
with the empty path); every heading starts a new chunk, whatever its level, and is part of that chunk. A section whose
length is at most ``size`` is one chunk; a longer one is split by the recursive splitter
(`ingestaudit.stages.chunkers.splitting`, LangChain's rule) inside the section, never across its bounds, and never
inside a table block or a run of list-item blocks (`ChunkerInput.block_spans`; consecutive list items with only white
space between them form one run), nor between a heading and the first character after it (so a heading is never a
chunk of its own when its section has text). A table or list run longer than ``size`` stays one chunk (longer than
``size``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ingestaudit.model import Chunk
from ingestaudit.stages.chunkers.base import (
    Chunker,
    ChunkerInput,
    TokenCounter,
    check_size,
    length_function,
    strip_span,
)
from ingestaudit.stages.chunkers.splitting import DEFAULT_SEPARATORS, RecursiveSplitter

DEFAULT_SIZE = 1000
DEFAULT_KEEP_WHOLE = ("table", "list_item")


def whole_spans(text: str, block_spans: tuple[tuple[int, int, str], ...], kinds: tuple[str, ...]
                ) -> list[tuple[int, int]]:
    """Intervals never to be cut: each block of a kind in ``kinds``, consecutive ``list_item`` blocks separated by
    white space only merged into one run."""
    out: list[tuple[int, int]] = []
    last_kind = None
    for s, e, kind in sorted(block_spans):
        if kind not in kinds or e <= s:
            last_kind = None
            continue
        if kind == "list_item" and last_kind == "list_item" and out and not text[out[-1][1]:s].strip():
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
        last_kind = kind
    return out


def heading_glue(text: str, headings: tuple[tuple[int, int, int, str], ...]) -> list[tuple[int, int]]:
    """For each heading, the interval from its start to the first non-space character after it (inclusive), so the
    recursive split never leaves a heading alone in a chunk: it stays with the start of its section's text."""
    out = []
    for start, end, _, _ in headings:
        pos = end
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if 0 <= start < pos < len(text):
            out.append((start, pos + 1))
    return out


class StructuralChunker(Chunker):
    """Section-per-chunk splitting (see the module docstring).

    Options:
        size: maximum section length kept as one chunk, and the recursive splitter's size for longer sections, in
            ``unit`` (the recursive chunker's definition: code points, or summed word pieces). Default 1000 chars.
        overlap: overlap of the recursive split inside a long section (never across sections). Default 0.
        unit: ``"chars"`` (default) or ``"tokens"``.
        keep_whole: block kinds never cut (default ``("table", "list_item")``; list items form runs).
    """

    name: ClassVar[str] = "structural"

    def __init__(self, *, size: int = DEFAULT_SIZE, overlap: int = 0, unit: str = "chars",
                 keep_whole: list[str] | tuple[str, ...] = DEFAULT_KEEP_WHOLE) -> None:
        self.size, self.overlap, self.unit = check_size(size, overlap, unit)
        if isinstance(keep_whole, str) or not all(isinstance(k, str) for k in keep_whole):
            raise ValueError(f"keep_whole must be a list of block kinds, got {keep_whole!r}")
        self.keep_whole = tuple(keep_whole)

    def chunk(self, inp: ChunkerInput, tokens: TokenCounter | None = None) -> list[Chunk]:
        """One chunk per section (several for a section longer than ``size``), in text order.

        Raises:
            ChunkerError: ``unit == "tokens"`` without a tokenizer.
        """
        text = inp.text
        lengths = length_function(self.unit, tokens, self.name)
        bounds = sorted({0, *(h[0] for h in inp.headings if 0 <= h[0] < len(text))})
        sections = [(a, b) for a, b in zip(bounds, [*bounds[1:], len(text)])]
        protected = whole_spans(text, inp.block_spans, self.keep_whole) + heading_glue(text, inp.headings)
        splitter = RecursiveSplitter(text, size=self.size, overlap=self.overlap, lengths=lengths,
                                     separators=DEFAULT_SEPARATORS, protected=protected)
        spans = [kept for kept in (strip_span(text, a, b) for a, b in sections) if kept is not None]
        sizes = lengths([text[a:b] for a, b in spans])
        out: list[Chunk] = []
        for (a, b), n in zip(spans, sizes):
            pieces = [(a, b)] if n <= self.size else splitter.split(a, b)
            out.extend(inp.chunk_at(s, e) for s, e in pieces)
        return out

    def max_overlap(self) -> int | None:
        """``overlap`` in chars (only pieces of one long section overlap); None in tokens."""
        return self.overlap if self.unit == "chars" else None

    def settings(self) -> dict[str, Any]:
        """size, overlap, unit, keep_whole."""
        return {"size": self.size, "overlap": self.overlap, "unit": self.unit, "keep_whole": list(self.keep_whole),
                "section_boundary": "every heading"}
