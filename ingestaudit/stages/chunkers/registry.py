"""Chunker discovery: ingestaudit's built-in chunkers by dotted path, and user chunkers through the entry-point group
``ingestaudit.chunkers`` (lazy: a chunker's module is imported only when that chunker is asked for). The loading
itself is `ingestaudit.plugins`."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from typing import Any

from ingestaudit.plugins import UnknownPlugin, entry_points_of, instantiate, plugin_class, plugin_names
from ingestaudit.stages.chunkers.base import Chunker, ChunkerUnavailable

GROUP = "ingestaudit.chunkers"

BUILTIN: dict[str, str] = {
    "recursive": "ingestaudit.stages.chunkers.recursive:RecursiveChunker",
    "fixed": "ingestaudit.stages.chunkers.fixed:FixedChunker",
    "structural": "ingestaudit.stages.chunkers.structural:StructuralChunker",
    "semantic": "ingestaudit.stages.chunkers.semantic:SemanticChunker",
    "precomputed": "ingestaudit.stages.chunkers.precomputed:PrecomputedChunker",
}
"""Built-in chunker name -> ``module:Class``. A user entry point with one of these names is ignored (the built-in
wins)."""


class UnknownChunker(UnknownPlugin, ValueError):
    """No chunker is registered under that name (the message lists the known ones), a path does not load, or the
    class is not a `Chunker`."""


def _entry_points() -> dict[str, EntryPoint]:
    return entry_points_of(GROUP)


def chunker_names() -> list[str]:
    """Built-in chunkers (in `BUILTIN` order), then entry-point chunkers (sorted)."""
    return plugin_names(GROUP, BUILTIN, entry_points=_entry_points)


def load_chunker(name: str, options: dict[str, Any] | None = None) -> Chunker:
    """Instantiate the chunker ``name`` (built-in, entry point, or ``"module:Class"``) with keyword ``options``.

    Raises:
        UnknownChunker: nothing is registered under ``name``, ``"module:Class"`` (or a built-in) does not load, or
            the class is not a `Chunker`.
        ChunkerUnavailable: an entry point's module does not import (the message names it).
        ValueError: an option the chunker does not take (`ingestaudit.plugins.PluginOptionError`) or rejects.
    """
    cls = plugin_class(GROUP, name, BUILTIN, what="chunker", base=Chunker, entry_points=_entry_points,
                       known=chunker_names, unknown=UnknownChunker, unavailable=ChunkerUnavailable,
                       unimportable=UnknownChunker)
    return instantiate(cls, options, f"chunker {name!r}")
