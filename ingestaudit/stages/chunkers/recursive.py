"""The ``recursive`` chunker: LangChain's ``RecursiveCharacterTextSplitter`` semantics with exact offsets.

Separators paragraph ``"\\n\\n"``, line ``"\\n"``, sentence ``". "``, word ``" "``, then single characters
(`ingestaudit.stages.chunkers.splitting`, which states the algorithm and cites its source). Why not semchunk:
semchunk (isaacus-dev/semchunk 4.x, ``chunk(..., offsets=True)``) also guarantees ``chunks[i] == text[start:end]``,
but its splitting rule differs (the *longest* run of newlines first, then tabs, then white space preceded by
punctuation, then punctuation characters, with separators removed from the chunks) and its overlap shrinks the
working chunk size to ``min(overlap, size - overlap)``, so it is not LangChain's splitter; and LangChain's own
splitter returns strings whose offsets it recovers by a text search (``add_start_index``: ``text.find`` from the
previous chunk's start plus its length minus the overlap, in ``create_documents``), the kind of pointer this project
audits. So this module implements LangChain's recursion
itself and carries the offsets through it, and the test suite holds it to langchain-text-splitters 1.1.3 as an oracle
(a test dependency, in the ``test`` extra): identical chunk texts on random texts of repeated words, sizes 37-300,
overlaps 0-50, both ``keep_separator`` modes, in characters and with a word-count length function
(`tests/stages/test_chunkers.py`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ingestaudit.model import Chunk
from ingestaudit.stages.chunkers.base import Chunker, ChunkerInput, TokenCounter, check_size, length_function
from ingestaudit.stages.chunkers.splitting import DEFAULT_SEPARATORS, KEEP_SEPARATOR, RecursiveSplitter

DEFAULT_SIZE = 1000
"""Default ``size`` in characters. LangChain's class default is 4000 with overlap 200; 1000 characters (about 200-250
word pieces of English) is chosen so that a default chunk fits all-MiniLM-L6-v2's 256-word-piece window."""

DEFAULT_OVERLAP = 0


class RecursiveChunker(Chunker):
    """LangChain-style recursive splitting (see the module docstring).

    Options:
        size: maximum chunk length, in ``unit``: the sum of the lengths of the pieces a chunk is merged from
            (LangChain's definition). In ``chars`` this is exactly the chunk's length in code points, so
            ``len(chunk.text) <= size`` always holds (a chunk is at least one character). In ``tokens`` it is the
            sum of the pieces' word-piece counts (`TokenCounter.count_tokens`, special tokens excluded); this
            equals the count of the chunk text whenever pieces meet at white space or punctuation (BERT
            pre-tokenisation splits there), and only character-level pieces of an over-long word can make the two
            differ. Default 1000 chars.
        overlap: consecutive chunks of one merge run share up to this length (LangChain's ``chunk_overlap``; supported
            in both units; 0 <= overlap < size). Chunks from different recursion branches do not overlap. Default 0.
        unit: ``"chars"`` (code points, default) or ``"tokens"`` (the pipeline embedder's word pieces).
        separators: the separator list, tried in order (default paragraph, line, sentence, word, character).
        keep_separator: ``"end"`` (default: a separator stays with the text before it, so a sentence keeps its full
            stop) or ``"start"`` (LangChain's default: with the text after it).

    Every chunk is stripped of surrounding white space; its pointer, page and section come from the split.
    """

    name: ClassVar[str] = "recursive"

    def __init__(self, *, size: int = DEFAULT_SIZE, overlap: int = DEFAULT_OVERLAP, unit: str = "chars",
                 separators: list[str] | tuple[str, ...] = DEFAULT_SEPARATORS, keep_separator: str = "end") -> None:
        self.size, self.overlap, self.unit = check_size(size, overlap, unit)
        if isinstance(separators, str) or not all(isinstance(s, str) for s in separators) or not separators:
            raise ValueError(f"separators must be a non-empty list of strings, got {separators!r}")
        if keep_separator not in KEEP_SEPARATOR:
            raise ValueError(f"keep_separator must be one of {', '.join(KEEP_SEPARATOR)}, got {keep_separator!r}")
        self.separators = tuple(separators)
        self.keep_separator = keep_separator

    def chunk(self, inp: ChunkerInput, tokens: TokenCounter | None = None) -> list[Chunk]:
        """Chunks of ``inp.text`` (see the class docstring); [] for a text that is only white space.

        Raises:
            ChunkerError: ``unit == "tokens"`` without a tokenizer.
        """
        lengths = length_function(self.unit, tokens, self.name)
        splitter = RecursiveSplitter(inp.text, size=self.size, overlap=self.overlap, lengths=lengths,
                                     separators=self.separators, keep_separator=self.keep_separator)
        return [inp.chunk_at(s, e) for s, e in splitter.split()]

    def max_overlap(self) -> int | None:
        """``overlap`` in chars (consecutive chunks of one merge run share at most that many code points); None in
        tokens."""
        return self.overlap if self.unit == "chars" else None

    def settings(self) -> dict[str, Any]:
        """size, overlap, unit, separators, keep_separator, and the fixed conventions (stripping, length rule)."""
        return {"size": self.size, "overlap": self.overlap, "unit": self.unit, "separators": list(self.separators),
                "keep_separator": self.keep_separator, "strip_whitespace": True,
                "length": "sum of piece lengths (LangChain RecursiveCharacterTextSplitter)"}
