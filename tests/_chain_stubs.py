"""User stages for end-to-end tests, loaded by ``module:Class`` path (tests/ is on sys.path under pytest): two
embedders that need no model and a chunker that raises on one document."""

from __future__ import annotations

import zlib

import numpy as np

from ingestaudit.stages.chunkers.base import Chunker, ChunkerError
from ingestaudit.stages.chunkers.recursive import RecursiveChunker
from ingestaudit.stages.embedders.base import Embedder
from ingestaudit.stages.embedders.cache import text_key


class WordEmbedder(Embedder):
    """Deterministic unit vectors from a CRC of the text (dimension 4); one token per word; a 64-piece window."""

    name = "words"

    def model_id(self):
        return "test-words@1"

    def dimension(self):
        return 4

    def max_seq_length(self):
        return 64

    def count_tokens(self, texts):
        return [len(t.split()) for t in texts]

    def embed(self, texts):
        out = np.array([np.random.default_rng(zlib.crc32(t.encode())).normal(size=4) for t in texts],
                       dtype=np.float32).reshape(len(texts), 4)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def version(self):
        return "1"


class HashEmbedder(Embedder):
    """Deterministic unit vectors of dimension 8 seeded by a text's cache key (no model); one token per word."""

    name = "hash8"

    def model_id(self):
        return "hash8-v1"

    def dimension(self):
        return 8

    def max_seq_length(self):
        return 512

    def count_tokens(self, texts):
        return [len(t.split()) for t in texts]

    def embed(self, texts):
        out = np.array([np.random.default_rng(int(text_key(t)[:12], 16)).normal(size=8) for t in texts],
                       dtype=np.float32).reshape(len(texts), 8)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def version(self):
        return "0"


class BoomChunker(Chunker):
    """The recursive chunker, except that it raises on a text holding the word BOOM."""

    name = "boom"

    def chunk(self, inp, tokens=None):
        if "BOOM" in inp.text:
            raise ChunkerError("boom: this chunker cannot split a text holding BOOM")
        return RecursiveChunker(size=60).chunk(inp, tokens)
