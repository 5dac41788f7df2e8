"""Cleaner discovery: ingestaudit's built-in cleaners by dotted path, and user cleaners through the entry-point group
``ingestaudit.cleaners`` (lazy: a cleaner's module is imported only when that cleaner is asked for)."""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from ingestaudit.stages.cleaners.base import Cleaner, CleanerUnavailable

GROUP = "ingestaudit.cleaners"

BUILTIN: dict[str, str] = {
    "trafilatura": "ingestaudit.stages.cleaners.trafilatura_cleaner:TrafilaturaCleaner",
    "unstructured": "ingestaudit.stages.cleaners.unstructured_cleaner:UnstructuredCleaner",
    "repeated-lines": "ingestaudit.stages.cleaners.repeated_lines:RepeatedLinesCleaner",
    "none": "ingestaudit.stages.cleaners.simple:NoneCleaner",
    "precomputed": "ingestaudit.stages.cleaners.simple:PrecomputedCleaner",
}
"""Built-in cleaner name -> ``module:Class``. A user entry point with one of these names is ignored (the built-in
wins)."""


class UnknownCleaner(ValueError):
    """No cleaner is registered under that name; the message lists the known ones."""


def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def cleaner_names() -> list[str]:
    """Built-in cleaners (in `BUILTIN` order), then entry-point cleaners (sorted)."""
    return list(BUILTIN) + sorted(n for n in _entry_points() if n not in BUILTIN)


def load_cleaner(name: str, options: dict[str, Any] | None = None) -> Cleaner:
    """Instantiate the cleaner ``name`` (built-in, entry point, or ``"module:Class"``) with keyword ``options``.

    Raises:
        UnknownCleaner: nothing is registered under ``name``, or ``"module:Class"`` does not load.
        CleanerUnavailable: an entry point's module does not import (the message names it).
        ValueError: an option the cleaner does not take or rejects.
    """
    if name in BUILTIN or ":" in name:
        target = BUILTIN.get(name, name)
        module, _, attr = target.partition(":")
        try:
            cls = getattr(import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise UnknownCleaner(f"cannot load cleaner {name!r}: {exc}") from exc
    else:
        eps = _entry_points()
        if name not in eps:
            raise UnknownCleaner(f"unknown cleaner {name!r}; known: {', '.join(cleaner_names())}")
        try:
            cls = eps[name].load()
        except ImportError as exc:
            raise CleanerUnavailable(f"cleaner {name!r} could not be imported ({exc}); install its package") from exc
    if not (isinstance(cls, type) and issubclass(cls, Cleaner)):
        raise UnknownCleaner(f"cleaner {name!r} is {cls!r}, not a subclass of ingestaudit's Cleaner")
    try:
        return cls(**(options or {}))
    except TypeError as exc:
        raise ValueError(f"cleaner {name!r}: bad option ({exc})") from exc
