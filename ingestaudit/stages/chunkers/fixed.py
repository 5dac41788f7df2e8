"""The ``fixed`` chunker: fixed windows of N tokens (or characters) with overlap, the baseline every tutorial starts
from (LangChain's ``TokenTextSplitter``, LlamaIndex's ``TokenTextSplitter``), with exact pointers.

Token windows are cut on the tokenizer's own offset mapping (a fast tokenizer's ``return_offsets_mapping``,
`TokenCounter.token_offsets`): window k holds word pieces ``[k*step, k*step + size)`` with ``step = size - overlap``,
and its text is ``text[first_piece_start:last_piece_end]``, the original characters, never decoded ids (decoding
re-serialises the text: lower-cased and with normalised spaces for an uncased BERT tokenizer).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ingestaudit.model import Chunk
from ingestaudit.stages.chunkers.base import (
    Chunker,
    ChunkerError,
    ChunkerInput,
    TokenCounter,
    check_size,
    strip_span,
)

DEFAULT_SIZE = 256
DEFAULT_OVERLAP = 0


class FixedChunker(Chunker):
    """Fixed-size windows (see the module docstring).

    Options:
        size: word pieces per window (``unit="tokens"``, default 256) or code points (``unit="chars"``). In tokens a
            window holds exactly ``size`` word pieces of the whole text's tokenisation (the last one fewer);
            re-tokenising the window's text alone can differ by a piece where a window starts inside a word (its
            first piece was a ``##`` continuation). In chars a window is ``text[k*step : k*step + size]`` stripped of
            surrounding white space, so ``len(chunk.text) <= size``.
        overlap: pieces (or code points) shared by consecutive windows, 0 <= overlap < size. Default 0.
        unit: ``"tokens"`` (default) or ``"chars"``.

    Windows holding only white space are skipped.
    """

    name: ClassVar[str] = "fixed"

    def __init__(self, *, size: int = DEFAULT_SIZE, overlap: int = DEFAULT_OVERLAP, unit: str = "tokens") -> None:
        self.size, self.overlap, self.unit = check_size(size, overlap, unit)

    def chunk(self, inp: ChunkerInput, tokens: TokenCounter | None = None) -> list[Chunk]:
        """Windows over ``inp.text`` in text order.

        Raises:
            ChunkerError: ``unit == "tokens"`` and ``tokens`` has no ``token_offsets`` (no tokenizer in the pipeline).
        """
        step = self.size - self.overlap
        text = inp.text
        spans: list[tuple[int, int]] = []
        if self.unit == "chars":
            for a in range(0, len(text), step):
                kept = strip_span(text, a, min(a + self.size, len(text)))
                if kept is not None:
                    spans.append(kept)
                if a + self.size >= len(text):
                    break
        else:
            if tokens is None or not hasattr(tokens, "token_offsets"):
                raise ChunkerError("fixed: unit='tokens' needs the pipeline embedder's tokenizer offsets, "
                                   "and there is none")
            offsets = [(int(s), int(e)) for s, e in tokens.token_offsets(text) if e > s]
            for k in range(0, len(offsets), step):
                window = offsets[k:k + self.size]
                spans.append((window[0][0], window[-1][1]))
                if k + self.size >= len(offsets):
                    break
        return [inp.chunk_at(s, e) for s, e in spans]

    def max_overlap(self) -> int | None:
        """``overlap`` in chars; in tokens 0 when ``overlap`` is 0 (windows of distinct word pieces share no code
        point), else None (an overlap of word pieces has no fixed length in code points)."""
        if self.unit == "chars" or self.overlap == 0:
            return self.overlap
        return None

    def settings(self) -> dict[str, Any]:
        """size, overlap, unit."""
        return {"size": self.size, "overlap": self.overlap, "unit": self.unit,
                "windows": "token offset mapping" if self.unit == "tokens" else "code points, stripped"}
