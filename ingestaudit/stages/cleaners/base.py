"""The cleaner plug point: a boilerplate remover takes a parsed document (or raw HTML) and returns its main content.

A cleaner is registered under the entry-point group ``ingestaudit.cleaners`` (name -> ``module:Class``), or given as
``"module:Class"``; ingestaudit's own cleaners are listed in `ingestaudit.stages.cleaners.registry.BUILTIN`.
Construction is cheap; heavy libraries are imported in `Cleaner.clean`. A cleaner that fails raises `CleanerError`
(or `UnsupportedInput`, `CleanerUnavailable`), of the family `ingestaudit.errors.CleaningError` under the package's
one root `ingestaudit.errors.IngestAuditError`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ingestaudit.errors import CleaningError
from ingestaudit.model import Block, ParsedDocument
from ingestaudit.plugins import PluginUnavailable

HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
"""Source files whose raw bytes an HTML cleaner reads."""

TEXT_PAGE_SEPARATOR = "\f"
"""Page separator of a plain-text input (`CleanerInput.from_text`): a form feed starts a new page."""

PARSED_PAGE_SEPARATOR = "\n\n"
"""How a paged cleaner joins the pages of a `ParsedDocument` in its output (the parsers' usual convention)."""


class CleanerError(CleaningError):
    """A cleaner failed on one input; the auditor turns it into ``error`` rows for that cleaner and goes on."""


class CleanerUnavailable(CleanerError, PluginUnavailable):
    """The cleaner's library is missing or does not import; the message says what to install."""


class UnsupportedInput(CleanerError):
    """The input lacks what the cleaner reads (raw HTML, layout blocks, pages); see `Cleaner.supports`."""


@dataclass(frozen=True)
class CleanerInput:
    """What a cleaner reads.

    Attributes:
        text: the text to clean (a parser's output, or a labelled boilerplate text).
        pages: the text per page; ``len(pages)`` is the page count (``(text,)`` for one page).
        page_separator: how a paged cleaner joins its cleaned pages.
        blocks: layout blocks with kinds (see `ingestaudit.model.Block`), empty when the source gives none.
        parser: name of the parser that produced ``text`` (``""`` for a plain text).
        html: raw HTML (bytes or str) when given directly, else None.
        source_path: the source document's path (an HTML cleaner reads it when ``html`` is None), or None.
        extras: later-stage outputs of a precomputed pipeline (``clean_text``...).
    """

    text: str
    pages: tuple[str, ...] = ()
    page_separator: str = PARSED_PAGE_SEPARATOR
    blocks: tuple[Block, ...] = ()
    parser: str = ""
    html: bytes | str | None = None
    source_path: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_parsed(cls, parsed: ParsedDocument) -> "CleanerInput":
        """A parser's output (text, pages, blocks, extras and the source path)."""
        return cls(text=parsed.text or "", pages=tuple(parsed.pages) or (parsed.text or "",),
                   page_separator=PARSED_PAGE_SEPARATOR, blocks=tuple(parsed.blocks), parser=parsed.parser,
                   source_path=parsed.source_path, extras=dict(parsed.extras))

    @classmethod
    def from_text(cls, text: str, extras: dict[str, Any] | None = None) -> "CleanerInput":
        """A plain text; a form feed (`TEXT_PAGE_SEPARATOR`) starts a new page."""
        return cls(text=text, pages=tuple(text.split(TEXT_PAGE_SEPARATOR)), page_separator=TEXT_PAGE_SEPARATOR,
                   extras=dict(extras or {}))

    @classmethod
    def from_html(cls, html: bytes | str) -> "CleanerInput":
        """Raw HTML only (no parser ran): only HTML cleaners support it."""
        return cls(text="", pages=("",), html=html)

    def has_html(self) -> bool:
        """True when raw HTML is given or the source path is an HTML file (`HTML_SUFFIXES`)."""
        return self.html is not None or (self.source_path is not None
                                         and Path(self.source_path).suffix.lower() in HTML_SUFFIXES)

    def raw_html(self) -> bytes | str:
        """The raw HTML: ``html``, or the bytes of ``source_path``.

        Raises:
            UnsupportedInput: no HTML is given and the source is not an HTML file.
            CleanerError: the source file cannot be read.
        """
        if self.html is not None:
            return self.html
        if not self.has_html():
            raise UnsupportedInput(f"no raw HTML: the source is {self.source_path or 'not given'}")
        try:
            return Path(self.source_path).read_bytes()  # type: ignore[arg-type]
        except OSError as exc:
            raise CleanerError(f"{self.source_path}: unreadable ({exc.strerror or exc})") from None


Piece = tuple[int, int, int]
"""``(out_start, in_start, length)``: output ``[out_start, out_start + length)`` is input
``[in_start, in_start + length)`` character for character (`ingestaudit.metrics.offsets.OffsetMap.from_pieces`)."""


@dataclass(frozen=True)
class CleanResult:
    """A cleaner's output.

    Attributes:
        text: the main content.
        detail: JSON-serialisable diagnostics (what was removed and why), copied into the report rows.
        pieces: the exact offset map of a cleaner that keeps and drops spans of ``CleanerInput.text`` (a line- or
            block-removal cleaner): the `Piece` runs of the output it kept, in output order; output characters in no
            piece (a separator it inserted) come from nowhere. None for a cleaner that rewrites its input
            (trafilatura reads the raw HTML): the chain then aligns the output with the input
            (`ingestaudit.metrics.offsets.OffsetMap.from_alignment`), which on repeated text may pick the wrong copy.
    """

    text: str
    detail: dict[str, Any] = field(default_factory=dict)
    pieces: tuple[Piece, ...] | None = None


def join_kept(segments: Iterable[tuple[str, int | None]], source: str) -> tuple[str, tuple[Piece, ...]]:
    """Concatenate a cleaner's output segments and record where each came from in ``source`` (its input text).

    Args:
        segments: ``(text, in_start)`` in output order; ``in_start`` is where the segment was kept from in
            ``source``, or None for text the cleaner inserted.
        source: the cleaner's input text.

    Each kept segment maps character for character as far as it equals ``source`` from ``in_start`` (its longest
    common prefix with ``source[in_start:]``); the rest of it maps nowhere, so a piece never claims a character the
    input does not hold there. Pieces contiguous in both texts are merged.

    Returns:
        ``(output text, pieces)`` (see `CleanResult.pieces`).
    """
    parts: list[str] = []
    pieces: list[list[int]] = []
    out = 0
    for text, at in segments:
        if at is not None and 0 <= at <= len(source):
            n = 0
            limit = min(len(text), len(source) - at)
            while n < limit and text[n] == source[at + n]:
                n += 1
            if n:
                if pieces and pieces[-1][0] + pieces[-1][2] == out and pieces[-1][1] + pieces[-1][2] == at:
                    pieces[-1][2] += n
                else:
                    pieces.append([out, at, n])
        parts.append(text)
        out += len(text)
    return "".join(parts), tuple((a, b, c) for a, b, c in pieces)


def locate_in_order(source: str, texts: Sequence[str]) -> list[int] | None:
    """Where each of ``texts`` starts in ``source``, searched in order, each at or after the end of the previous one
    (exact `str.find` of the text stripped of surrounding white space, moved back by the white space stripped from
    its front); None when one is not found (the caller then gives no exact map)."""
    out: list[int] = []
    cursor = 0
    for text in texts:
        core = text.strip()
        if not core:
            out.append(cursor)
            continue
        at = source.find(core, cursor)
        if at < 0:
            return None
        out.append(at - (len(text) - len(text.lstrip())))
        cursor = at + len(core)
    return out


class Cleaner(ABC):
    """Removes boilerplate (navigation, running headers and footers, page numbers...) and returns the main content.

    Subclasses set ``name`` and ``reads`` (what they use: ``"text"``, ``"pages"``, ``"blocks"``, ``"html"`` or
    ``"extras"``), and implement `clean` and `version`. Options that change the output come in through ``__init__``
    and are returned by `settings`.
    """

    name: ClassVar[str]
    reads: ClassVar[str] = "text"

    def supports(self, inp: CleanerInput) -> str | None:
        """None when the cleaner can run on ``inp``, else the reason it cannot (the default: always runs). In a
        pipeline, a document the cleaner cannot handle is chunked unchanged, with a warning (`ingestaudit.chain`)."""
        return None

    @abstractmethod
    def clean(self, inp: CleanerInput) -> CleanResult:
        """The main content of ``inp``.

        Raises:
            UnsupportedInput: `supports` gives a reason.
            CleanerUnavailable: the library is missing.
            CleanerError: the cleaner failed on this input.
        """

    @abstractmethod
    def version(self) -> str:
        """Version of the underlying library (from package metadata, without importing it).

        Raises:
            CleanerUnavailable: the library is not installed.
        """

    def settings(self) -> dict[str, Any]:
        """Every option that changes the output, JSON-serialisable; printed in the report."""
        return {}

    def available(self) -> tuple[bool, str]:
        """``(True, version)`` when installed, else ``(False, what to install)``."""
        try:
            return True, self.version()
        except CleanerUnavailable as exc:
            return False, str(exc)

    def _check(self, inp: CleanerInput) -> None:
        reason = self.supports(inp)
        if reason is not None:
            raise UnsupportedInput(f"{self.name}: {reason}")
