"""Parser discovery through the ``ingestaudit.parsers`` entry-point group (lazy: a parser's module is imported only
when that parser is asked for)."""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points

from ingestaudit.parsers.base import Parser, ParserUnavailable

GROUP = "ingestaudit.parsers"
PRECOMPUTED = "precomputed"


class UnknownParser(KeyError):
    """No parser is registered under that name; the message lists the known ones."""

    def __str__(self) -> str:  # KeyError quotes its argument; show the message as written
        return str(self.args[0])


def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def parser_names() -> list[str]:
    """Names of every registered parser, sorted (``precomputed`` is added by ``--outputs`` and is not listed here)."""
    return sorted(_entry_points())


def load_parser(name: str, options: dict | None = None) -> Parser:
    """Instantiate the parser registered as ``name`` (or given as ``"module:Class"``) with keyword ``options`` (from
    the config's ``[parser_options.NAME]``).

    Raises:
        UnknownParser: nothing is registered under ``name``.
        ParserUnavailable: its module failed to import (the message names the package to install).
    """
    if ":" in name:  # "package.module:Class", a parser that is not registered (handy in tests and experiments)
        module, _, attr = name.partition(":")
        try:
            from importlib import import_module

            cls = getattr(import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise UnknownParser(f"cannot load parser {name!r}: {exc}") from exc
    else:
        eps = _entry_points()
        if name not in eps:
            raise UnknownParser(f"unknown parser {name!r}; registered parsers: {', '.join(sorted(eps)) or 'none'}")
        try:
            cls = eps[name].load()
        except ImportError as exc:
            raise ParserUnavailable(f"parser {name!r} could not be imported ({exc}); install its package") from exc
    try:
        return cls(**(options or {}))
    except TypeError as exc:
        raise ValueError(f"parser {name!r}: bad option in [parser_options.{name}] ({exc})") from exc
