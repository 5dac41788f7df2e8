"""The chunker plug point: cleaned text (with where its pages, headings and layout blocks lie) in, `Chunk` list out.

A chunker is registered under the entry-point group ``ingestaudit.chunkers`` (name -> ``module:Class``), or given as
``"module:Class"``; ingestaudit's own chunkers are listed in `ingestaudit.stages.chunkers.registry.BUILTIN`.
Construction is cheap and validates the options (a bad value raises ``ValueError``); heavy libraries are imported in
`Chunker.chunk`. A chunker that fails raises `ChunkerError` (or `ChunkerUnavailable`), of the family
`ingestaudit.errors.ChunkingError` under the package's one root `ingestaudit.errors.IngestAuditError`.

Pointer convention (DESIGN.md, "Pipelines and the stage chain"; issue 9): every chunk carries ``start``/``end``,
code-point offsets ``[start, end)`` into `ChunkerInput.text` (end exclusive), such that
``text[start:end] == chunk.text``; ``page`` is the 1-based page holding ``start``; ``section`` is the heading path at
``start`` (outermost first, `ingestaudit.textlayout.TextLayout.section_path_at`). The built-in chunkers compute
offsets from the split itself and never search the text for a chunk (a first-occurrence search points at the wrong
copy of repeated text: langchain-ai/langchain issue 21475).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Protocol, runtime_checkable

from ingestaudit.errors import ChunkingError
from ingestaudit.model import Block, Chunk, ParsedDocument
from ingestaudit.plugins import PluginUnavailable

UNITS = ("chars", "tokens")
"""Units of a chunker's ``size`` and ``overlap``: ``chars`` = Unicode code points; ``tokens`` = word pieces of the
pipeline embedder's tokenizer, special tokens excluded (`TokenCounter.count_tokens`)."""


class ChunkerError(ChunkingError):
    """A chunker failed on one input; the runner turns it into ``error`` rows for that document and pipeline."""


class ChunkerUnavailable(ChunkerError, PluginUnavailable):
    """The chunker's library is missing or does not import; the message says what to install."""


@runtime_checkable
class TokenCounter(Protocol):
    """What a chunker may ask of the pipeline's embedder (an `ingestaudit.stages.embedders.base.Embedder` is one).

    ``count_tokens(texts)``: word pieces of each text without special tokens (list of ints, same length).
    ``token_offsets(text)``: the ``(start, end)`` code-point interval of every word piece of ``text`` in order
    (the fast tokenizer's offset mapping; special tokens excluded).
    ``embed(texts)``: float32 array ``(len(texts), d)`` of L2-normalised vectors (the ``semantic`` chunker only).
    """

    def count_tokens(self, texts: Sequence[str]) -> list[int]: ...

    def token_offsets(self, text: str) -> list[tuple[int, int]]: ...


def _normalise_page_starts(starts: Sequence[int]) -> tuple[int, ...]:
    """Page starts with page 1 first: a tuple already starting at 0 is kept (the `TextLayout` form); otherwise it is
    read as the starts of pages 2.. and 0 is prepended."""
    out = tuple(int(s) for s in starts)
    if not out or out[0] != 0:
        out = (0,) + out
    return out


def _heading_tuple(h: Any) -> tuple[int, int, int | None, str]:
    """A heading as ``(start, end, level, text)`` from a tuple or an object with those attributes (`HeadingPos`);
    a level that is not an int >= 1 becomes None (unknown: `ingestaudit.textlayout` says how paths treat it)."""
    if hasattr(h, "start") and hasattr(h, "text"):
        start, end, level, text = h.start, h.end, h.level, h.text
    else:
        start, end, level, text = h
    known = isinstance(level, int) and not isinstance(level, bool) and level >= 1
    return int(start), int(end), int(level) if known else None, str(text)


@dataclass(frozen=True)
class ChunkerInput:
    """What a chunker reads.

    Attributes:
        text: the cleaned text (the cleaner's output; the parsed text when the cleaner is ``none``). Every offset
            below and in the returned chunks is a code-point offset into it.
        page_starts: offset where each page starts, in page order. Either the `TextLayout` form (page 1 first, so
            ``page_starts[0] == 0``) or only the starts of pages 2.. (page 1 starts at 0); `__post_init__` turns the
            second form into the first. Empty = one page.
        headings: ``(start, end, level, text)`` per located heading, in text order (level 1 = top, None =
            unknown); `HeadingPos` objects are accepted and turned into tuples.
        block_spans: ``(start, end, kind)`` per parser block located in ``text`` (kind from
            `ingestaudit.model.BLOCK_KINDS`), in text order; the ``structural`` chunker keeps ``table`` blocks and
            runs of ``list_item`` blocks whole. Build them with `block_spans_from_parsed`.
        blocks: the parser's blocks themselves (for user chunkers; the built-ins read ``block_spans``).
        extras: precomputed stage outputs of the document (``chunks`` for the ``precomputed`` chunker).
    """

    text: str
    page_starts: tuple[int, ...] = (0,)
    headings: tuple[tuple[int, int, int | None, str], ...] = ()
    block_spans: tuple[tuple[int, int, str], ...] = ()
    blocks: tuple[Block, ...] = ()
    extras: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "page_starts", _normalise_page_starts(self.page_starts))
        object.__setattr__(self, "headings", tuple(_heading_tuple(h) for h in self.headings))
        object.__setattr__(self, "block_spans", tuple((int(s), int(e), str(k)) for s, e, k in self.block_spans))

    @cached_property
    def layout(self) -> Any:
        """The `ingestaudit.textlayout.TextLayout` of ``page_starts`` and ``headings`` (built once)."""
        from ingestaudit.textlayout import HeadingPos, TextLayout

        return TextLayout(self.page_starts, tuple(HeadingPos(s, e, lv, t) for s, e, lv, t in self.headings))

    def chunk_at(self, start: int, end: int, metadata: dict[str, Any] | None = None) -> Chunk:
        """The chunk ``text[start:end]`` with its pointer: page and section path at ``start`` (from `layout`).

        Raises:
            ChunkerError: ``not 0 <= start < end <= len(text)``.
        """
        if not 0 <= start < end <= len(self.text):
            raise ChunkerError(f"bad chunk interval [{start}, {end}) in a text of {len(self.text)} code points")
        return Chunk(self.text[start:end], start, end, self.layout.page_at(start),
                     tuple(self.layout.section_path_at(start)), dict(metadata or {}))

    @classmethod
    def from_text(cls, text: str, extras: dict[str, Any] | None = None) -> "ChunkerInput":
        """A plain text: one page, no heading, no block."""
        return cls(text=text, extras=dict(extras or {}))


def block_spans_from_parsed(parsed: ParsedDocument, text: str | None = None,
                            offset_map: Any | None = None) -> tuple[tuple[int, int, str], ...]:
    """Where each of ``parsed.blocks`` lies, as ``(start, end, kind)`` in the chunker's text.

    Each block's stripped text is located in ``parsed.text`` in reading order
    (`ingestaudit.textlayout.find_text` from the end of the previous located block: exact, else with white-space
    runs matched loosely); a block not found is skipped. With ``offset_map`` (an
    `ingestaudit.metrics.offsets.OffsetMap` from the cleaned text to ``parsed.text``) each interval is moved to the
    cleaned text (`OffsetMap.preimage`: the smallest output interval holding what comes from it); a block the cleaner
    dropped is skipped. ``text`` is unused unless ``offset_map`` is None and ``text`` differs from ``parsed.text``, in
    which case the blocks are located in ``text`` directly.
    """
    from ingestaudit.textlayout import find_text

    target = parsed.text or ""
    if offset_map is None and text is not None:
        target = text
    out: list[tuple[int, int, str]] = []
    cursor = 0
    for block in parsed.blocks:
        if not block.text.strip():
            continue
        hit = find_text(target, block.text, cursor)
        if hit is None:
            continue
        cursor = hit[1]
        if offset_map is not None:
            hit = offset_map.preimage(hit[0], hit[1])
            if hit is None:
                continue
        out.append((int(hit[0]), int(hit[1]), block.kind))
    return tuple(out)


class Chunker(ABC):
    """Splits a cleaned text into chunks, each with its source pointer (see the module docstring).

    Subclasses set ``name`` and ``normalises_whitespace`` (True when a chunk's text may differ from its slice of the
    input by white space only; the attribution audit then compares after collapsing white space), and implement
    `chunk`. Options that change the output come in through ``__init__`` (keyword-only, validated there: a bad value
    raises ``ValueError``) and are returned by `settings`.
    """

    name: ClassVar[str]
    normalises_whitespace: ClassVar[bool] = False

    @abstractmethod
    def chunk(self, inp: ChunkerInput, tokens: TokenCounter | None = None) -> list[Chunk]:
        """The chunks of ``inp.text`` in text order (starts non-decreasing), each with text, pointer, page and section.

        Args:
            inp: the cleaned text and its layout.
            tokens: the pipeline's embedder (its tokenizer and, for the ``semantic`` chunker, its vectors); None when
                the pipeline has none (then a chunker that needs it raises `ChunkerError`).

        Raises:
            ChunkerUnavailable: a library the chunker needs is missing.
            ChunkerError: the chunker failed on this input.
        """

    def version(self) -> str:
        """Version of the implementation (ingestaudit's own for the built-ins, from package metadata)."""
        from ingestaudit import __version__

        return f"ingestaudit {__version__}"

    def settings(self) -> dict[str, Any]:
        """Every option that changes the output, JSON-serialisable; printed in the report."""
        return {}

    def max_overlap(self) -> int | None:
        """The most code points a chunk's pointer interval may share with the previous chunk's, as this chunker
        declares it (its ``overlap`` in characters, 0 for a chunker whose chunks never overlap); None when it declares
        no bound in code points (an overlap in tokens, a user chunker). The chain rejects output that breaks the
        declared bound (`ingestaudit.chain.check_chunks`: "overlapping nonsense")."""
        return None

    def available(self) -> tuple[bool, str]:
        """``(True, version)`` when usable here, else ``(False, what to install)``."""
        try:
            return True, self.version()
        except ChunkerUnavailable as exc:
            return False, str(exc)


# ----- helpers shared by the built-in chunkers ------------------------------------------------------------------


def check_size(size: Any, overlap: Any, unit: Any) -> tuple[int, int, str]:
    """Validate ``size`` (int >= 1), ``overlap`` (int, 0 <= overlap < size) and ``unit`` (one of `UNITS`).

    Raises:
        ValueError: any of them is out of range or of the wrong type.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be an integer >= 1, got {size!r}")
    if isinstance(overlap, bool) or not isinstance(overlap, int) or not 0 <= overlap < size:
        raise ValueError(f"overlap must be an integer with 0 <= overlap < size ({size}), got {overlap!r}")
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
    return size, overlap, unit


def length_function(unit: str, tokens: TokenCounter | None, who: str):
    """``lengths(list_of_texts) -> list[int]`` in ``unit``: code points, or word pieces through ``tokens``.

    Raises:
        ChunkerError: ``unit == "tokens"`` and ``tokens`` is None (the pipeline has no embedder tokenizer).
    """
    if unit == "chars":
        return lambda texts: [len(t) for t in texts]
    if tokens is None or not hasattr(tokens, "count_tokens"):
        raise ChunkerError(f"{who}: unit='tokens' needs the pipeline's embedder tokenizer, and there is none")

    def count(texts: list[str]) -> list[int]:
        return [int(n) for n in tokens.count_tokens(list(texts))] if texts else []

    return count


def strip_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    """``[start, end)`` without leading and trailing white space (``str.strip``'s definition), or None when only
    white space is left."""
    piece = text[start:end]
    left = len(piece) - len(piece.lstrip())
    if left == len(piece):
        return None
    right = len(piece) - len(piece.rstrip())
    return start + left, end - right
