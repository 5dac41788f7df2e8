"""Cleaner discovery: ingestaudit's built-in cleaners by dotted path, and user cleaners through the entry-point group
``ingestaudit.cleaners`` (lazy: a cleaner's module is imported only when that cleaner is asked for). The loading
itself is `ingestaudit.plugins`."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from typing import Any

from ingestaudit.plugins import UnknownPlugin, entry_points_of, instantiate, plugin_class, plugin_names
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


class UnknownCleaner(UnknownPlugin, ValueError):
    """No cleaner is registered under that name (the message lists the known ones), a path does not load, or the
    class is not a `Cleaner`."""


def _entry_points() -> dict[str, EntryPoint]:
    return entry_points_of(GROUP)


def cleaner_names() -> list[str]:
    """Built-in cleaners (in `BUILTIN` order), then entry-point cleaners (sorted)."""
    return plugin_names(GROUP, BUILTIN, entry_points=_entry_points)


def load_cleaner(name: str, options: dict[str, Any] | None = None) -> Cleaner:
    """Instantiate the cleaner ``name`` (built-in, entry point, or ``"module:Class"``) with keyword ``options``.

    Raises:
        UnknownCleaner: nothing is registered under ``name``, ``"module:Class"`` (or a built-in) does not load, or
            the class is not a `Cleaner`.
        CleanerUnavailable: an entry point's module does not import (the message names it).
        ValueError: an option the cleaner does not take or rejects.
    """
    cls = plugin_class(GROUP, name, BUILTIN, what="cleaner", base=Cleaner, entry_points=_entry_points,
                       known=cleaner_names, unknown=UnknownCleaner, unavailable=CleanerUnavailable,
                       unimportable=UnknownCleaner)
    return instantiate(cls, options, f"cleaner {name!r}")
