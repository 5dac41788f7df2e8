"""The parser plug point: one abstract class, its errors, and the result type it returns.

A parser is registered under the entry-point group ``ingestaudit.parsers`` (name -> ``module:Class``); ingestaudit's
own parsers register the same way in its ``pyproject.toml``, so a user's parser plugs in without editing ingestaudit.

A parser that fails raises `ParserError` (one document: an ``error`` row), `NoOutput` or `UnsupportedFormat` (see
each); a missing library is `ParserUnavailable`. All derive from `ingestaudit.errors.IngestAuditError` (`ParserError`
through the parser family, `ingestaudit.errors.ParsingError`), so one raised outside a document (at start-up, in
``available()``) ends the command with exit 2 and its message, never a traceback.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from ingestaudit.document import Document
from ingestaudit.errors import ParsingError
from ingestaudit.model import ParsedDocument
from ingestaudit.plugins import PluginUnavailable


class ParserError(ParsingError):
    """A parser failed on one document (corrupt, encrypted, empty file...). The message names the cause; the runner
    turns it into an ``error`` row for that document and goes on."""


class NoOutput(ParserError):
    """There is nothing to parse for this document with this parser (no precomputed output file, no reference
    text): the runner records ``no_prediction``, not an error."""


class UnsupportedFormat(ParserError):
    """The parser does not handle this file type at all; the runner records a ``skipped`` row, not an error."""


class ParserUnavailable(PluginUnavailable):
    """The parser's library or binary is missing. The message says what to install. (A `PluginUnavailable`, not a
    `ParserError`: it is about the installation, not one document.)"""


class Parser(ABC):
    """Turns a source document into a `ParsedDocument`.

    Subclasses set ``name`` and ``extensions`` (lower-case suffixes with dot), and implement `parse`. Construction must
    be cheap: import heavy libraries inside `parse`/`version`, never at module import time.
    """

    name: ClassVar[str]
    extensions: ClassVar[frozenset[str]]

    def supports(self, document: Document) -> bool:
        """True when this parser handles ``document``'s file type."""
        return document.suffix in self.extensions

    @abstractmethod
    def parse(self, document: Document) -> ParsedDocument:
        """Parse one document.

        Raises:
            UnsupportedFormat: the file type is not handled by this parser.
            ParserError: the document could not be parsed (message names the file and the cause).
        """

    @abstractmethod
    def version(self) -> str:
        """Version of the underlying library or binary, e.g. ``"1.26.3"``.

        Raises:
            ParserUnavailable: the library or binary is not installed.
        """

    def settings(self) -> dict[str, Any]:
        """Every option that changes this parser's output, JSON-serialisable; printed in the report."""
        return {}

    def cache_identity(self) -> dict[str, Any] | None:
        """What this parser's output depends on besides the file's bytes and suffix, for the step cache
        (`ingestaudit.step_cache`), or None: never cached (the default, so a plug-in is always run). A built-in
        deterministic parser returns its name, version and settings (and anything else its output reads).

        Raises:
            ParserUnavailable: as `version`.
        """
        return None

    def builtin_identity(self, **extra: Any) -> dict[str, Any]:
        """``{"parser": name, "version": version(), "settings": settings(), **extra}``, computed once per instance:
        the `cache_identity` of a built-in parser whose output depends on nothing else.

        Raises:
            ParserUnavailable: as `version`.
        """
        memo = self.__dict__.get("_cache_identity")
        if memo is None:
            memo = {"parser": self.name, "version": self.version(), "settings": self.settings(), **extra}
            self.__dict__["_cache_identity"] = memo
        return memo

    def available(self) -> tuple[bool, str]:
        """``(True, version)`` when usable here, else ``(False, what to install)``."""
        try:
            return True, self.version()
        except ParserUnavailable as exc:
            return False, str(exc)
