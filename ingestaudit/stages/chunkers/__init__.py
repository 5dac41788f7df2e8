"""Chunkers under audit: one interface (`base.Chunker`: a `base.ChunkerInput` with the cleaned text, its page starts,
headings and block spans in; `ingestaudit.model.Chunk` objects with verified-by-construction pointers out), the
built-in chunkers ``recursive``, ``fixed``, ``structural``, ``semantic`` and ``precomputed``, and user chunkers
through the entry-point group ``ingestaudit.chunkers`` (`registry`). Modules of the built-ins are imported only when
used."""

from ingestaudit.stages.chunkers.base import (
    UNITS,
    Chunker,
    ChunkerError,
    ChunkerInput,
    ChunkerUnavailable,
    TokenCounter,
    block_spans_from_parsed,
)
from ingestaudit.stages.chunkers.registry import GROUP, UnknownChunker, chunker_names, load_chunker

__all__ = ["UNITS", "Chunker", "ChunkerError", "ChunkerInput", "ChunkerUnavailable", "TokenCounter",
           "block_spans_from_parsed", "GROUP", "UnknownChunker", "chunker_names", "load_chunker"]
