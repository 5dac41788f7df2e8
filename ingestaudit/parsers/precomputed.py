"""The ``precomputed`` parser: reads what an external pipeline already wrote to disk (DESIGN.md, "What flows through").

Layout: ``<root>/<name>/<doc id><ext>``, where ``<doc id>`` is ``<class>/<name>`` (deeper folders kept) and ``<ext>``
is, in order of precedence, ``.json``, ``.txt``, ``.md``, ``.page.xml``, ``.alto.xml``, ``.xml``. When several exist
the first is read and the others are named in the warnings. The runner makes one instance per subfolder of
``--outputs DIR``; each is a parser in the report named after its folder. It is not an entry point.

- ``.json``: `OutputFile` (the `ParsedDocument` fields plus later-stage outputs), unknown keys are errors. A
  ``tables`` key, even an empty list, declares that the pipeline extracts tables (``settings["table_extraction"]``:
  the tables auditor then scores an empty list as every table dropped); without it the tables are not scored.
- ``.txt`` / ``.md``: UTF-8 text, read as is (Markdown syntax is kept).
- PAGE XML / ALTO: the page text as `ingestaudit.ocrxml.read_ocr_xml` reads it (region-level PAGE text).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, ValidationError, model_validator

from ingestaudit.config import Limits
from ingestaudit.document import Document
from ingestaudit.inputs import InputFileError, read_input_bytes, read_input_text
from ingestaudit.jsonlimits import loads_limited
from ingestaudit.model import BLOCK_KINDS, Block, ParsedDocument
from ingestaudit.parsers.base import NoOutput, Parser, ParserError
from ingestaudit.schema_keys import PAGES, unknown_key

#: Output file endings, in order of precedence.
OUTPUT_SUFFIXES = (".json", ".txt", ".md", ".page.xml", ".alto.xml", ".xml")
#: Default of the largest output file read, in bytes: the ``[limits] output_bytes`` default.
OUTPUT_BYTES: int = Limits.model_fields["output_bytes"].default
#: How ``pages`` are joined into ``text`` when a JSON output gives pages but no text.
PAGE_SEPARATOR = "\n\n"


class MissingOutput(NoOutput):
    """The pipeline wrote no output for this document; the runner records ``no_prediction``."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_Coord = StrictInt | StrictFloat
"""A coordinate: a JSON number, never a boolean."""


class OutputBlock(_Strict):
    """A layout block as in `ingestaudit.model.Block`; ``order`` defaults to the block's position in the list. Integers
    are JSON integers (``true`` or ``5.0`` are not a page), coordinates JSON numbers (not booleans)."""

    text: str = Field(description="the block's text")
    page: StrictInt = Field(default=1, ge=1, description="its page, 1-based")
    bbox: tuple[_Coord, _Coord, _Coord, _Coord] | None = Field(
        default=None, description="[x0, y0, x1, y1] in PDF points (1/72 inch) from the page's top-left corner")
    kind: Literal[BLOCK_KINDS] = Field(default="paragraph", description="what the block is")  # type: ignore[valid-type]
    level: StrictInt | None = Field(default=None, ge=1, description="heading level (1 = top) of a heading block")
    order: StrictInt | None = Field(default=None, ge=0, description="0-based position in reading order over the "
                                                                    "document (default: its place in the list)")


class OutputSpan(_Strict):
    """A PII or named-entity span ``[start, end)`` in code points of the output's own ``text`` (JSON integers: ``true`` or ``5.0`` are
    not offsets)."""

    start: StrictInt = Field(ge=0, description="first code point of the span in the output's text")
    end: StrictInt = Field(ge=0, description="end of the span, exclusive (not before start, inside the text)")
    type: str = Field(min_length=1, description="the entity type, in your detector's vocabulary")

    @model_validator(mode="after")
    def _ordered(self) -> "OutputSpan":
        if self.end < self.start:
            raise ValueError(f"end ({self.end}) is before start ({self.start})")
        return self


class OutputChunk(_Strict):
    """A chunk: its text and its pointer (offsets in code points of the cleaned text the chunker read: the output's
    ``clean_text`` when given, else its ``text``; end exclusive). Pointers are not checked here, so a bad one never
    rejects the file (the document's extraction is still audited): the chunking stage checks them, an offset that
    is negative, past the text or reversed gives that document's chunking ``error`` rows with the chunk named, and
    a wrong but possible pointer is a measured failure (``chunking.attribution``)."""

    text: str = Field(description="the chunk's text, as it is embedded")
    start: Any = Field(default=None, description="offset of the chunk in the cleaned text, an integer (any other "
                                                 "JSON value is that document's chunking error, not a rejected file)")
    end: Any = Field(default=None, description="end offset, exclusive (an integer)")
    page: StrictInt | None = Field(default=None, ge=1, description="the page the chunk starts on, 1-based")
    section: str | list[str] | None = Field(default=None, description="the section path: the headings above the "
                                                                      "chunk, outermost first (or one heading)")
    metadata: dict[str, str | int | float | bool] = Field(default={}, description="metadata a question's filter "
                                                                                  "may test")


class OutputRelation(_Strict):
    """A relation your extractor found: ``head`` and ``tail`` index the output's ``entities`` (from 0)."""

    head: StrictInt = Field(ge=0, description="index of the first argument in the output's 'entities'")
    tail: StrictInt = Field(ge=0, description="index of the second argument in the output's 'entities'")
    type: str = Field(min_length=1, description="the relation's type, as the truth names it")


class OutputFile(_Strict):
    """A JSON output file. ``text`` or ``pages`` is required (``text`` defaults to the pages joined by a blank line).

    Later-stage outputs (``clean_text``, ``language``, ``pii``, ``entities``, ``relations``, ``metadata``,
    ``dup_cluster``, ``chunks``) go to `ParsedDocument.extras` as plain JSON values; ``pii`` and ``entities`` spans
    must lie inside ``text`` and relations must index ``entities`` (chunk offsets are
    checked by the chunking stage, see `OutputChunk`).
    """

    text: str | None = Field(default=None, description="the parsed text (or give pages)")
    pages: list[str] = Field(default=[], description="the text page by page")
    blocks: list[OutputBlock] = Field(default=[], description="layout blocks, in reading order")
    tables: list[str] = Field(default=[], description="one HTML table per table found; the key, even [], declares "
                                                      "that the pipeline extracts tables (without it tables are not "
                                                      "scored)")
    parser_version: str = Field(default="", description="your parser's version, shown in the report")
    settings: dict[str, Any] = Field(default={}, description="your pipeline's settings, shown in the report")
    warnings: list[str] = Field(default=[], description="your parser's warnings for this document")
    clean_text: str | None = Field(default=None, description="the cleaner's output (chunk offsets refer to it; "
                                                             "the redacted text for scrubber = \"redacted\")")
    language: str | None = Field(default=None, description="the detected language tag (null or \"\": abstained); "
                                                           "audited instead of running the detector")
    pii: list[OutputSpan] | None = Field(default=None, description="your PII detector's spans on text; audited "
                                                                   "instead of running the scrubber")
    entities: list[OutputSpan] | None = Field(default=None, description="your entity extractor's spans on text "
                                                                        "(types in its vocabulary, renamed by the "
                                                                        "entities step's type_map); audited instead "
                                                                        "of running spaCy")
    relations: list[OutputRelation] | None = Field(default=None, description="your relation extractor's triples "
                                                                             "over 'entities'")
    metadata: dict[str, str | int | float | bool | list[str]] | None = Field(
        default=None, description="your metadata extractor's fields (title, authors, date...); audited instead of "
                                  "the parser's metadata")
    dup_cluster: str | int | None = Field(default=None, description="your deduplicator's cluster id (compared as "
                                                                    "a string; none: in no cluster)")
    chunks: list[OutputChunk] | None = Field(default=None, description="your chunker's chunks; without them the "
                                                                       "default chunker runs")

    @model_validator(mode="after")
    def _consistent(self) -> "OutputFile":
        if self.text is None and not self.pages:
            raise ValueError("needs 'text' or 'pages'")
        n = len(self.full_text)
        for key in ("pii", "entities"):
            for i, span in enumerate(getattr(self, key) or []):
                if span.end > n:
                    raise ValueError(f"{key}[{i}]: span [{span.start}, {span.end}) is outside the text ({n} code "
                                     "points)")
        n_ents = len(self.entities or [])
        for i, rel in enumerate(self.relations or []):
            if max(rel.head, rel.tail) >= n_ents:
                raise ValueError(f"relations[{i}]: head/tail must index 'entities' ({n_ents} spans)")
        return self

    @property
    def full_text(self) -> str:
        """``text``, or the pages joined with `PAGE_SEPARATOR` when ``text`` is absent."""
        return self.text if self.text is not None else PAGE_SEPARATOR.join(self.pages)


EXTRAS = ("clean_text", "language", "pii", "entities", "relations", "metadata", "dup_cluster", "chunks")


_FIELDS = frozenset().union(*(m.model_fields for m in (OutputFile, OutputBlock, OutputSpan, OutputChunk,
                                                       OutputRelation)))


def _field_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in _FIELDS or i == 0:  # other parts are pydantic's union member tags ("str", "int", ...)
            out += ("." if out else "") + str(part)
    return out


def read_output_text(path: Path, max_bytes: int = OUTPUT_BYTES) -> str:
    """One output file's UTF-8 text through `ingestaudit.inputs.read_input_text` (line ends as written).

    Raises:
        ParserError: not a regular file (a FIFO, a device, a folder: named), over ``max_bytes``
            (``limits.output_bytes``), unreadable or not UTF-8; the message starts with the path.
    """
    try:
        return read_input_text(path, max_bytes=max_bytes, limit="limits.output_bytes")
    except InputFileError as exc:
        raise ParserError(str(exc)) from None


def read_output_json(path: Path, max_bytes: int = OUTPUT_BYTES) -> OutputFile:
    """Parse and validate one JSON output file (read by `read_output_text`).

    Raises:
        ParserError: not a regular file, over ``max_bytes``, unreadable, not UTF-8, invalid JSON, a value past a
            `ingestaudit.jsonlimits` limit (nesting deeper than its ``MAX_DEPTH``, an integer too long to convert), or
            schema errors; the message names the file and every failing field.
    """
    text = read_output_text(path, max_bytes)
    try:
        raw, limits = loads_limited(text)
    except json.JSONDecodeError as exc:
        raise ParserError(f"{path}: invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise ParserError(f"{path}: JSON nested too deeply to read") from None
    except ValueError as exc:  # anything else json refuses
        raise ParserError(f"{path}: invalid JSON ({exc})") from None
    if limits:  # checked before the schema: a 600-level structure must never reach pickling
        raise ParserError(f"{path}: " + "; ".join(f"{p.field or '<file>'}: {p.message}" for p in limits))
    if not isinstance(raw, dict):
        raise ParserError(f"{path}: must be a JSON object, not {type(raw).__name__}")
    try:
        return OutputFile.model_validate(raw)
    except ValidationError as exc:
        problems: dict[str, list[str]] = {}  # field -> messages (a union field fails once per member type)
        for err in exc.errors():
            msg = (unknown_key(OutputFile, err["loc"], PAGES["outputs"]) if err["type"] == "extra_forbidden"
                   else err["msg"].removeprefix("Value error, "))
            problems.setdefault(_field_path(err["loc"]), []).append(msg)
        text = "; ".join(f"{field}: {' or '.join(msgs)}" if field else " or ".join(msgs)
                         for field, msgs in problems.items())
        raise ParserError(f"{path}: {text}") from None


class PrecomputedParser(Parser):
    """Reads one external pipeline's outputs from ``root / name``.

    Args:
        root: the ``--outputs`` folder.
        name: the subfolder, which is also this parser's name in the report.
        max_bytes: the largest output file read (the run's ``limits.output_bytes``).

    Every document is "supported": whether an output exists is only known when parsing. An output that exists
    but is not a regular file (a FIFO, a device, a folder named like one) is that document's error, never a
    missing output.

    Raises:
        ValueError: (at construction) ``name`` is empty or not a single folder name.
    """

    name = "precomputed"
    extensions: frozenset[str] = frozenset()

    def __init__(self, root: Path, name: str, max_bytes: int = OUTPUT_BYTES):
        if not name or "/" in name or "\\" in name or name in (".", ".."):
            raise ValueError(f"precomputed parser name must be one folder name, not {name!r}")
        self.root = Path(root)
        self.name = name  # type: ignore[misc]  # per instance: the folder name
        self.folder = self.root / name
        self.max_bytes = int(max_bytes)

    def supports(self, document: Document) -> bool:
        """Always True: any source document may have an output."""
        return True

    def version(self) -> str:
        """``"external"``: the producing pipeline's version is unknown here (a JSON output may state its own
        ``parser_version``, which is then copied into the `ParsedDocument`)."""
        return "external"

    def settings(self) -> dict[str, Any]:
        """``outputs_folder`` (the subfolder name) and ``suffixes`` (accepted endings, by precedence)."""
        return {"outputs_folder": self.name, "suffixes": list(OUTPUT_SUFFIXES)}

    def candidates(self, document: Document) -> list[Path]:
        """Existing output files for ``document``, in order of precedence: any entry of that name (a FIFO or a
        broken link too, refused when read, never passed over). A name the file system cannot hold (a 250-character
        document name plus ``.page.xml`` is over the usual 255 bytes: ``ENAMETOOLONG``) is no output."""
        base = self.folder / document.doc_id
        return [p for p in (base.parent / (base.name + suffix) for suffix in OUTPUT_SUFFIXES) if _exists(p)]

    def parse(self, document: Document) -> ParsedDocument:
        """The output written for ``document``.

        Raises:
            MissingOutput: no file for the document's id under this folder.
            ParserError: the file is unreadable, not UTF-8, malformed JSON / XML, or fails the schema (file and field
                named).
        """
        start = time.perf_counter()
        found = self.candidates(document)
        if not found:
            tried = ", ".join(OUTPUT_SUFFIXES)
            raise MissingOutput(f"{self.folder}: no output for {document.doc_id} (looked for {document.doc_id}"
                                f"{{{tried}}})")
        path = found[0]
        warnings = [f"ignored {p.name} (read {path.name})" for p in found[1:]]
        settings = {**self.settings(), "format": _format(path)}
        if path.suffix == ".json":
            out = read_output_json(path, self.max_bytes)
            text = out.full_text
            extras = {k: _plain(getattr(out, k)) for k in EXTRAS if getattr(out, k) is not None}
            blocks = tuple(Block(text=b.text, page=b.page, bbox=None if b.bbox is None else tuple(map(float, b.bbox)),
                                 kind=b.kind, level=b.level,
                                 order=i if b.order is None else b.order) for i, b in enumerate(out.blocks))
            if out.settings:
                settings["pipeline"] = out.settings
            # a "tables" key (even []) says the pipeline looked for tables: none found then scores 0, not no_prediction
            settings["table_extraction"] = "tables" in out.model_fields_set
            return ParsedDocument(text=text, pages=tuple(out.pages) or (text,), blocks=blocks,
                                  tables=tuple(out.tables), parser=self.name, parser_version=out.parser_version,
                                  settings=settings, elapsed_s=time.perf_counter() - start,
                                  warnings=tuple(warnings + out.warnings), extras=extras)
        if path.suffix in (".txt", ".md"):
            text = read_output_text(path, self.max_bytes)
        else:
            from ingestaudit.ocrxml import parse_ocr_xml

            try:
                data = read_input_bytes(path, max_bytes=self.max_bytes, limit="limits.output_bytes")
                text = parse_ocr_xml(data, source=str(path))
            except (InputFileError, ValueError) as exc:
                raise ParserError(str(exc)) from None
        return ParsedDocument(text=text, pages=(text,), parser=self.name, parser_version="", settings=settings,
                              elapsed_s=time.perf_counter() - start, warnings=tuple(warnings))


def _exists(path: Path) -> bool:
    try:
        os.lstat(path)
    except OSError:  # absent; or ENAMETOOLONG and the like: no file of that name can exist
        return False
    return True


def _format(path: Path) -> str:
    name = path.name
    if name.endswith(".page.xml"):
        return "page-xml"
    if name.endswith(".alto.xml"):
        return "alto"
    return {".json": "json", ".txt": "text", ".md": "markdown", ".xml": "ocr-xml"}[path.suffix]


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, BaseModel):
        return value.model_dump()
    return value
