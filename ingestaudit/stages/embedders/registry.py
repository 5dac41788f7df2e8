"""Embedder discovery: ingestaudit's built-in embedders by dotted path, and user embedders through the entry-point
group ``ingestaudit.embedders`` (lazy: an embedder's module is imported only when it is asked for). The loading itself
is `ingestaudit.plugins`."""

from __future__ import annotations

import os
from importlib.metadata import EntryPoint
from typing import Any

from ingestaudit.plugins import UnknownPlugin, entry_points_of, instantiate, plugin_class, plugin_names
from ingestaudit.stages.embedders.base import Embedder, EmbedderUnavailable
from ingestaudit.stages.embedders.cache import CachedEmbedder, EmbeddingCache

GROUP = "ingestaudit.embedders"

BUILTIN: dict[str, str] = {
    "minilm": "ingestaudit.stages.embedders.sentence_transformers_embedder:MiniLMEmbedder",
    "sentence-transformers": "ingestaudit.stages.embedders.sentence_transformers_embedder:SentenceTransformerEmbedder",
}
"""Built-in embedder name -> ``module:Class``. A user entry point with one of these names is ignored (the built-in
wins)."""

DEFAULT = "minilm"


class UnknownEmbedder(UnknownPlugin, ValueError):
    """No embedder is registered under that name (the message lists the known ones), a path does not load, or the
    class is not an `Embedder`."""


def _entry_points() -> dict[str, EntryPoint]:
    return entry_points_of(GROUP)


def embedder_names() -> list[str]:
    """Built-in embedders (in `BUILTIN` order), then entry-point embedders (sorted)."""
    return plugin_names(GROUP, BUILTIN, entry_points=_entry_points)


def load_embedder(name: str = DEFAULT, options: dict[str, Any] | None = None) -> Embedder:
    """Instantiate the embedder ``name`` (built-in, entry point, or ``"module:Class"``) with keyword ``options``.

    Raises:
        UnknownEmbedder: nothing is registered under ``name``, a path does not load, or the class is not an
            `Embedder`.
        EmbedderUnavailable: its packages or model files are missing (the message names ``bash scripts/setup.sh``),
            or an entry point's module does not import.
        ValueError: an option the embedder does not take (`ingestaudit.plugins.PluginOptionError`) or rejects.
    """
    return instantiate(embedder_class(name), options, f"embedder {name!r}")


def embedder_class(name: str) -> type[Embedder]:
    """The embedder class ``name`` names (built-in, entry point, or ``"module:Class"``), not instantiated: no model
    is loaded and no model package is needed (the start-up check of a configuration,
    `ingestaudit.config_check`).

    Raises:
        UnknownEmbedder, EmbedderUnavailable: as `load_embedder`.
    """
    return plugin_class(GROUP, name, BUILTIN, what="embedder", base=Embedder, entry_points=_entry_points,
                        known=embedder_names, unknown=UnknownEmbedder, unavailable=EmbedderUnavailable,
                        unimportable=EmbedderUnavailable)


def load_cached_embedder(name: str = DEFAULT, options: dict[str, Any] | None = None,
                         cache_dir: str | os.PathLike[str] | None = None) -> CachedEmbedder:
    """`load_embedder` wrapped in a `CachedEmbedder` over an `EmbeddingCache`.

    The cache folder is ``options["cache_dir"]`` (taken out of the options the embedder receives), else ``cache_dir``
    (the ``[run] cache_dir`` setting), else ``$INGESTAUDIT_CACHE``, else ``~/.cache/ingestaudit/embeddings``.

    Raises:
        as `load_embedder`.
    """
    opts = dict(options or {})
    folder = opts.pop("cache_dir", None) or cache_dir
    return CachedEmbedder(load_embedder(name, opts), EmbeddingCache(folder))
