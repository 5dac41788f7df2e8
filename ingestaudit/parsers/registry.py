"""Parser discovery through the ``ingestaudit.parsers`` entry-point group (lazy: a parser's module is imported only
when that parser is asked for). The loading itself is `ingestaudit.plugins`."""

from __future__ import annotations

from importlib.metadata import EntryPoint

from ingestaudit.parsers.base import Parser, ParserUnavailable
from ingestaudit.plugins import UnknownPlugin, entry_points_of, instantiate, plugin_class, plugin_names

GROUP = "ingestaudit.parsers"
PRECOMPUTED = "precomputed"


class UnknownParser(UnknownPlugin, KeyError):
    """No parser is registered under that name (the message lists the known ones), or ``"module:Class"`` does not
    load."""

    def __str__(self) -> str:  # KeyError quotes its argument; show the message as written
        return str(self.args[0])


def _entry_points() -> dict[str, EntryPoint]:
    return entry_points_of(GROUP)


def parser_names() -> list[str]:
    """Names of every registered parser, sorted (``precomputed`` is added by ``--outputs`` and is not listed here)."""
    return plugin_names(GROUP, entry_points=_entry_points)


def load_parser(name: str, options: dict | None = None) -> Parser:
    """Instantiate the parser registered as ``name`` (or given as ``"module:Class"``) with keyword ``options`` (from
    the config's ``[parser_options.NAME]``).

    Raises:
        UnknownParser: nothing is registered under ``name``, or ``"module:Class"`` does not load.
        ParserUnavailable: its module failed to import (the message names the package to install).
        ValueError: an option the parser does not take.
    """
    cls = plugin_class(GROUP, name, what="parser", entry_points=_entry_points, known=parser_names,
                       unknown=UnknownParser, unavailable=ParserUnavailable, unimportable=UnknownParser)
    return instantiate(cls, options, f"parser {name!r}", section=f"[parser_options.{name}]")


def parser_extensions(name: str) -> str:
    """The file extensions parser ``name`` reads, lower case without the dot, sorted and comma-separated (the keys a
    routing table may send to it); ``"any"`` for a parser that never reads the file (``reference``); ``"?"`` with
    the reason when it does not load."""
    try:
        cls = plugin_class(GROUP, name, what="parser", entry_points=_entry_points, known=parser_names,
                           unknown=UnknownParser, unavailable=ParserUnavailable, unimportable=UnknownParser)
    except Exception as exc:  # listed, never fatal
        return f"? ({type(exc).__name__}: {exc})"
    exts = sorted(e.lstrip(".") for e in getattr(cls, "extensions", ()))
    if not exts and getattr(cls, "supports", Parser.supports) is not Parser.supports:
        return "any"
    return ", ".join(exts) or "none"
