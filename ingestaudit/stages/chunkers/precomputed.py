"""The ``precomputed`` chunker: the chunks a user's own pipeline produced, read from the document's precomputed
outputs (``DIR/<pipeline>/<doc id>.json`` key ``chunks``; DESIGN.md "Pipelines and the stage chain") and returned
unchanged, so that the chunking audit checks their pointers as given."""

from __future__ import annotations

from typing import Any, ClassVar

from ingestaudit.model import Chunk
from ingestaudit.stages.chunkers.base import Chunker, ChunkerError, ChunkerInput, TokenCounter

FIELDS = ("text", "start", "end", "page", "section", "metadata")


def _int_or_none(value: Any, where: str, key: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ChunkerError(f"{where}: {key!r} must be an integer or null, got {value!r}")
    return value


def chunk_from_dict(item: Any, index: int) -> Chunk:
    """One precomputed chunk as a `Chunk`, values unchanged.

    ``item`` is a dict with ``text`` (str, required), ``start``/``end``/``page`` (int or null/absent), ``section``
    (a string, taken as a one-heading path; a list of strings, outermost first; or null/absent) and ``metadata``
    (dict, optional). Other keys are ignored.

    Raises:
        ChunkerError: the item is not a dict or a field has the wrong type (the message names chunk ``index``).
    """
    where = f"precomputed chunk {index}"
    if not isinstance(item, dict):
        raise ChunkerError(f"{where}: expected an object with {', '.join(FIELDS)}, got {type(item).__name__}")
    text = item.get("text")
    if not isinstance(text, str):
        raise ChunkerError(f"{where}: 'text' must be a string, got {text!r}")
    section = item.get("section")
    if isinstance(section, str):
        path: tuple[str, ...] | None = (section,)
    elif section is None:
        path = None
    elif isinstance(section, (list, tuple)) and all(isinstance(s, str) for s in section):
        path = tuple(section)
    else:
        raise ChunkerError(f"{where}: 'section' must be a string, a list of strings or null, got {section!r}")
    metadata = item.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ChunkerError(f"{where}: 'metadata' must be an object, got {metadata!r}")
    return Chunk(text, _int_or_none(item.get("start"), where, "start"), _int_or_none(item.get("end"), where, "end"),
                 _int_or_none(item.get("page"), where, "page"), path, dict(metadata))


class PrecomputedChunker(Chunker):
    """Returns ``inp.extras["chunks"]`` as `Chunk` objects, unchanged (see `chunk_from_dict`).

    Options:
        normalises_whitespace: declare that the precomputed chunk texts may differ from the cleaned text by white
            space only (the attribution audit then compares after collapsing white space). Default False.
        max_overlap: declare the most code points a chunk may share with the previous one (the pipeline's chunk
            overlap in characters); output that breaks it is rejected as overlapping nonsense
            (`ingestaudit.chain.check_chunks`). Default None: not declared, not checked.
    """

    name: ClassVar[str] = "precomputed"

    def __init__(self, *, normalises_whitespace: bool = False, max_overlap: int | None = None) -> None:
        if not isinstance(normalises_whitespace, bool):
            raise ValueError(f"normalises_whitespace must be true or false, got {normalises_whitespace!r}")
        if max_overlap is not None and (isinstance(max_overlap, bool) or not isinstance(max_overlap, int)
                                        or max_overlap < 0):
            raise ValueError(f"max_overlap must be an integer >= 0 or absent, got {max_overlap!r}")
        self.normalises_whitespace = normalises_whitespace  # type: ignore[misc]  # per instance on purpose
        self._max_overlap = max_overlap

    def chunk(self, inp: ChunkerInput, tokens: TokenCounter | None = None) -> list[Chunk]:
        """The precomputed chunks, in the order given.

        Raises:
            ChunkerError: the outputs hold no ``chunks`` list, or one item is malformed.
        """
        items = inp.extras.get("chunks")
        if items is None:
            raise ChunkerError("precomputed: the document's outputs have no 'chunks'")
        if not isinstance(items, list):
            raise ChunkerError(f"precomputed: 'chunks' must be a list, got {type(items).__name__}")
        return [chunk_from_dict(item, i) for i, item in enumerate(items)]

    def max_overlap(self) -> int | None:
        """The declared ``max_overlap`` (None: not declared)."""
        return self._max_overlap

    def settings(self) -> dict[str, Any]:
        """normalises_whitespace, max_overlap."""
        return {"normalises_whitespace": self.normalises_whitespace, "max_overlap": self._max_overlap}
