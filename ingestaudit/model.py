"""The data that flows between stages: a parser's `ParsedDocument` and its `Block`s (see DESIGN.md, "What flows through")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

BLOCK_KINDS = (
    "heading", "paragraph", "table", "header", "footer", "list_item", "caption",
    "page_number", "image", "formula", "code", "other",
)


@dataclass(frozen=True)
class Block:
    """One layout block of a parsed document.

    Attributes:
        text: the block's text as the parser emitted it.
        page: 1-based page number (1 for formats without pages).
        bbox: ``(x0, y0, x1, y1)`` in PDF points (1/72 inch) from the page's top-left corner, or None when the parser
            gives no geometry (HTML, plain text).
        kind: one of `BLOCK_KINDS`.
        level: heading level (1 = top) for ``kind == "heading"`` when known, else None.
        order: 0-based position of the block in the parser's reading order over the whole document.
    """

    text: str
    page: int = 1
    bbox: tuple[float, float, float, float] | None = None
    kind: str = "paragraph"
    level: int | None = None
    order: int = 0


@dataclass(frozen=True)
class ParsedDocument:
    """What a parser produced for one document.

    Attributes:
        text: the full extracted text (pages joined by the parser's own convention, usually a blank line).
        pages: per-page text; ``len(pages)`` is the page count (1 for formats without pages).
        blocks: layout blocks in reading order (may be empty when the parser gives none).
        tables: tables as HTML strings (one ``<table>`` each) in reading order.
        parser: registered parser name, e.g. ``"pymupdf"``.
        parser_version: version of the underlying library (e.g. PyMuPDF's), recorded in the report.
        settings: every option that changes the output (text flags, sort order, DPI, strategy...), JSON-serialisable.
        elapsed_s: wall time of parsing in seconds (kept out of report.json so reports stay byte-identical).
        warnings: non-fatal problems the parser reported (MuPDF's own messages on a damaged PDF included), in the
            order raised; the report keeps them per document (``report.json`` ``parse_warnings``) and counts the
            documents that have any.
        extras: later-stage outputs supplied by a precomputed pipeline (``clean_text``, ``language``, ``pii``,
            ``dup_cluster``, ``chunks``), keyed by those names.
        source_path: the source document's path, set by the runner, so that stages that need the raw source
            (an HTML main-content extractor) can read it; None for documents made by hand.
    """

    text: str
    pages: tuple[str, ...] = ()
    blocks: tuple[Block, ...] = ()
    tables: tuple[str, ...] = ()
    parser: str = ""
    parser_version: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    elapsed_s: float = 0.0
    warnings: tuple[str, ...] = ()
    extras: dict[str, Any] = field(default_factory=dict)
    source_path: str | None = None


@dataclass(frozen=True)
class Chunk:
    """One chunk a chunker emitted, with its source pointer (DESIGN.md, "Pipelines and the stage chain").

    Attributes:
        text: the chunk's text as the chunker emitted it (what gets embedded).
        start, end: the pointer: code-point offsets ``[start, end)`` into the cleaned text the chunker read, or None
            when the chunker gave none (a ``missing`` pointer for the attribution audit).
        page: 1-based page holding ``start`` as the chunker claims it, or None.
        section: the heading path at ``start`` (outermost first) as the chunker claims it, or None when not given.
        metadata: key/value pairs the chunker or the document's truth ``metadata`` attach (retrieval filters test
            them).
    """

    text: str
    start: int | None = None
    end: int | None = None
    page: int | None = None
    section: tuple[str, ...] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def parsed_to_json(parsed: ParsedDocument) -> dict[str, Any]:
    """``parsed`` as JSON-able data (`parsed_from_json` reads it back equal; ``source_path`` is left out: it names
    where the document was read, not what the parser produced). Used by the step cache (`ingestaudit.step_cache`).

    Raises:
        TypeError: ``settings`` or ``extras`` hold a value JSON cannot (the caller does not cache then).
    """
    return {"text": parsed.text, "pages": list(parsed.pages), "tables": list(parsed.tables),
            "blocks": [[b.text, b.page, None if b.bbox is None else list(b.bbox), b.kind, b.level, b.order]
                       for b in parsed.blocks],
            "parser": parsed.parser, "parser_version": parsed.parser_version, "settings": parsed.settings,
            "elapsed_s": parsed.elapsed_s, "warnings": list(parsed.warnings), "extras": parsed.extras}


def parsed_from_json(data: dict[str, Any]) -> ParsedDocument:
    """The `ParsedDocument` of `parsed_to_json`'s data (``source_path`` None).

    Raises:
        KeyError, TypeError, ValueError: data of another shape.
    """
    strings = [data["text"], *data["pages"], *data["tables"], *data["warnings"], data["parser"],
               data["parser_version"]]
    if not all(isinstance(s, str) for s in strings) or not isinstance(data["settings"], dict) \
            or not isinstance(data["extras"], dict):
        raise TypeError("a parsed document's text, pages, tables, warnings and parser are strings; its settings "
                        "and extras objects")
    blocks = tuple(Block(text, page, None if bbox is None else tuple(bbox), kind, level, order)
                   for text, page, bbox, kind, level, order in data["blocks"])
    return ParsedDocument(text=data["text"], pages=tuple(data["pages"]), blocks=blocks, tables=tuple(data["tables"]),
                          parser=data["parser"], parser_version=data["parser_version"], settings=data["settings"],
                          elapsed_s=data["elapsed_s"], warnings=tuple(data["warnings"]), extras=data["extras"])
