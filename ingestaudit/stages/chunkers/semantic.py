"""The ``semantic`` chunker: breakpoints where the embeddings of adjacent sentences drift apart (percentile method).

Definition (LangChain ``langchain_experimental.text_splitter.SemanticChunker`` with
``breakpoint_threshold_type="percentile"``; Greg Kamradt's "5 Levels of Text Splitting"; LlamaIndex's
``SemanticSplitterNodeParser`` uses the same rule with ``breakpoint_percentile_threshold=95``):

1. Sentences s_0..s_{n-1} (`ingestaudit.metrics.chunking.sentence_spans`: spaCy's blank ``"en"`` pipeline with the
   rule-based ``sentencizer``, plus a paragraph break always ending a sentence; the same segmenter the chunking
   audit uses).
2. Each sentence is embedded together with its ``buffer_size`` neighbours on each side (LangChain's
   ``combine_sentences``: the texts joined by one space; default 0 here, each sentence alone, see
   `DEFAULT_BUFFER_SIZE`), giving unit vectors v_0..v_{n-1}.
3. Distance d_i = 1 - cos(v_i, v_{i+1}) for i = 0..n-2; threshold T = ``numpy.percentile(d, percentile)`` (linear
   interpolation, as LangChain calls it).
4. A chunk ends after sentence i for every i with d_i > T (strictly). A chunk is the interval from its first
   sentence's start to its last sentence's end in the text (white space between its sentences included).

Optional ``size`` cap (an extension): a chunk longer than ``size`` is re-packed greedily from its sentences
(LangChain's merge rule, `RecursiveSplitter.merge`), and a single sentence longer than ``size`` is split by the
recursive splitter. One sentence or none: one chunk or none.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ingestaudit.model import Chunk
from ingestaudit.stages.chunkers.base import (
    Chunker,
    ChunkerError,
    ChunkerInput,
    ChunkerUnavailable,
    TokenCounter,
    check_size,
    length_function,
)
from ingestaudit.stages.chunkers.splitting import RecursiveSplitter

DEFAULT_PERCENTILE = 95.0
DEFAULT_BUFFER_SIZE = 0
"""Each sentence is embedded alone by default (the distance is between adjacent sentences themselves). LangChain and
LlamaIndex default to 1 (a sentence with one neighbour on each side); with 1 a topic change at sentence k shows up as
the largest distance between windows k-1..k+1 and k..k+2, which moved the break one sentence late on the hand test in
tests/stages/test_embedder.py, so 1 is an option, not the default."""


def breakpoints(vectors: np.ndarray, percentile: float) -> tuple[list[int], np.ndarray, float]:
    """``(indices i with d_i > T, distances d, threshold T)`` for unit row vectors (module docstring, steps 3-4).

    ``vectors`` has shape (n, d) with n >= 2; rows are re-normalised (a zero row stays zero, its cosine 0)."""
    v = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    v = np.divide(v, norms, out=np.zeros_like(v), where=norms > 0)
    dist = 1.0 - np.einsum("ij,ij->i", v[:-1], v[1:])
    threshold = float(np.percentile(dist, percentile))
    return [int(i) for i in np.flatnonzero(dist > threshold)], dist, threshold


class SemanticChunker(Chunker):
    """Percentile-breakpoint semantic chunking (see the module docstring).

    Options:
        percentile: the breakpoint percentile of adjacent-sentence distances, 0 < percentile <= 100 (default 95).
        buffer_size: neighbours on each side embedded with a sentence (default 0; LangChain's default is 1).
        size: optional cap on a chunk's length in ``unit`` (None: no cap, the default).
        unit: ``"chars"`` (default) or ``"tokens"`` for ``size``.

    Needs the pipeline's embedder (the ``tokens`` argument of `chunk` must have ``embed``).
    """

    name: ClassVar[str] = "semantic"

    def __init__(self, *, percentile: float = DEFAULT_PERCENTILE, buffer_size: int = DEFAULT_BUFFER_SIZE,
                 size: int | None = None, unit: str = "chars") -> None:
        if isinstance(percentile, bool) or not isinstance(percentile, (int, float)) or not 0 < percentile <= 100:
            raise ValueError(f"percentile must be a number in (0, 100], got {percentile!r}")
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or buffer_size < 0:
            raise ValueError(f"buffer_size must be an integer >= 0, got {buffer_size!r}")
        if size is not None:
            check_size(size, 0, unit)
        elif unit not in ("chars", "tokens"):
            raise ValueError(f"unit must be chars or tokens, got {unit!r}")
        self.percentile = float(percentile)
        self.buffer_size = buffer_size
        self.size = size
        self.unit = unit

    def chunk(self, inp: ChunkerInput, tokens: TokenCounter | None = None) -> list[Chunk]:
        """Semantic chunks of ``inp.text`` in text order.

        Raises:
            ChunkerError: no embedder (``tokens`` without ``embed``), or the embedder returned the wrong shape.
            ChunkerUnavailable: spaCy is not installed.
        """
        if tokens is None or not hasattr(tokens, "embed"):
            raise ChunkerError("semantic: needs the pipeline's embedder to embed sentences, and there is none")
        try:
            from ingestaudit.metrics.chunking import sentence_spans
            sents = sentence_spans(inp.text)
        except ImportError as exc:
            raise ChunkerUnavailable(f"semantic: spaCy is needed for sentence segmentation ({exc}); "
                                     "run `bash scripts/setup.sh`") from exc
        if not sents:
            return []
        groups = [(0, len(sents) - 1)]
        if len(sents) > 1:
            texts = [inp.text[s:e] for s, e in sents]
            b = self.buffer_size
            combined = [" ".join(texts[max(0, i - b):i + b + 1]) for i in range(len(texts))]
            vectors = np.asarray(tokens.embed(combined))
            if vectors.ndim != 2 or vectors.shape[0] != len(combined):
                raise ChunkerError(f"semantic: the embedder returned shape {vectors.shape} for {len(combined)} texts")
            cuts, _, _ = breakpoints(vectors, self.percentile)
            groups, first = [], 0
            for i in cuts:
                groups.append((first, i))
                first = i + 1
            groups.append((first, len(sents) - 1))
        spans = [(sents[a][0], sents[z][1]) for a, z in groups]
        if self.size is not None:
            spans = self._cap(inp.text, spans, sents, tokens)
        return [inp.chunk_at(s, e) for s, e in spans]

    def _cap(self, text: str, spans: list[tuple[int, int]], sents: list[tuple[int, int]],
             tokens: TokenCounter | None) -> list[tuple[int, int]]:
        lengths = length_function(self.unit, tokens, self.name)
        splitter = RecursiveSplitter(text, size=self.size, overlap=0, lengths=lengths)  # type: ignore[arg-type]
        sizes = lengths([text[s:e] for s, e in spans])
        out: list[tuple[int, int]] = []
        for (s, e), n in zip(spans, sizes):
            if n <= self.size:  # type: ignore[operator]
                out.append((s, e))
                continue
            inner = [(a, z) for a, z in sents if s <= a and z <= e]
            # each sentence with the white space after it, so the merged intervals are contiguous
            pieces = [(a, inner[k + 1][0] if k + 1 < len(inner) else z) for k, (a, z) in enumerate(inner)]
            piece_sizes = lengths([text[a:z] for a, z in pieces])
            good: list[tuple[int, int, int]] = []
            for (a, z), m in zip(pieces, piece_sizes):
                if m <= self.size:  # type: ignore[operator]
                    good.append((a, z, m))
                    continue
                out.extend(splitter.merge(good))
                good = []
                out.extend(splitter.split(a, z))
            out.extend(splitter.merge(good))
        return out

    def max_overlap(self) -> int | None:
        """0: semantic chunks (and the pieces of a capped one) never overlap."""
        return 0

    def version(self) -> str:
        """ingestaudit's version and spaCy's (the sentence segmenter).

        Raises:
            ChunkerUnavailable: spaCy is not installed.
        """
        from importlib.metadata import PackageNotFoundError, version

        try:
            spacy_version = version("spacy")
        except PackageNotFoundError:
            raise ChunkerUnavailable("semantic: spaCy is not installed; run `bash scripts/setup.sh`") from None
        return f"{super().version()}; spaCy {spacy_version}"

    def settings(self) -> dict[str, Any]:
        """percentile, buffer_size, size, unit, and the segmenter and threshold rule."""
        return {"percentile": self.percentile, "buffer_size": self.buffer_size, "size": self.size, "unit": self.unit,
                "sentences": "spaCy blank('en') + sentencizer; paragraph breaks end sentences",
                "threshold": "numpy.percentile of 1 - cos(adjacent combined sentences), split where d > T"}
