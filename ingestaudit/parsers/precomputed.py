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
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ingestaudit.document import Document
from ingestaudit.jsonlimits import loads_limited
from ingestaudit.model import BLOCK_KINDS, Block, ParsedDocument
from ingestaudit.parsers.base import NoOutput, Parser, ParserError

#: Output file endings, in order of precedence.
OUTPUT_SUFFIXES = (".json", ".txt", ".md", ".page.xml", ".alto.xml", ".xml")
#: How ``pages`` are joined into ``text`` when a JSON output gives pages but no text.
PAGE_SEPARATOR = "\n\n"


class MissingOutput(NoOutput):
    """The pipeline wrote no output for this document; the runner records ``no_prediction``."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OutputBlock(_Strict):
    """A layout block as in `ingestaudit.model.Block`; ``order`` defaults to the block's position in the list."""

    text: str
    page: int = Field(default=1, ge=1)
    bbox: tuple[float, float, float, float] | None = None
    kind: Literal[BLOCK_KINDS] = "paragraph"  # type: ignore[valid-type]
    level: int | None = Field(default=None, ge=1)
    order: int | None = Field(default=None, ge=0)


class OutputSpan(_Strict):
    """A PII span ``[start, end)`` in code points of the output's own ``text``."""

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    type: str = Field(min_length=1)

    @model_validator(mode="after")
    def _ordered(self) -> "OutputSpan":
        if self.end < self.start:
            raise ValueError(f"end ({self.end}) is before start ({self.start})")
        return self


class OutputChunk(_Strict):
    """A chunk: its text and its pointer (offsets in code points of the cleaned text the chunker read: the output's
    ``clean_text`` when given, else its ``text``; end exclusive). Pointers are not checked here: the chunking audit
    verifies them (``chunking.attribution``) so a bad pointer is a measured failure, not a rejected file."""

    text: str
    start: int | None = Field(default=None, ge=0)
    end: int | None = Field(default=None, ge=0)
    page: int | None = Field(default=None, ge=1)
    section: str | list[str] | None = None
    metadata: dict[str, str | int | float | bool] = {}

    @model_validator(mode="after")
    def _ordered(self) -> "OutputChunk":
        if self.start is not None and self.end is not None and self.end < self.start:
            raise ValueError(f"end ({self.end}) is before start ({self.start})")
        return self


class OutputFile(_Strict):
    """A JSON output file. ``text`` or ``pages`` is required (``text`` defaults to the pages joined by a blank line).

    Later-stage outputs (``clean_text``, ``language``, ``pii``, ``dup_cluster``, ``chunks``) go to
    `ParsedDocument.extras` as plain JSON values; ``pii`` spans and chunk offsets must lie inside ``text``.
    """

    text: str | None = None
    pages: list[str] = []
    blocks: list[OutputBlock] = []
    tables: list[str] = []
    parser_version: str = ""
    settings: dict[str, Any] = {}
    warnings: list[str] = []
    clean_text: str | None = None
    language: str | None = None
    pii: list[OutputSpan] | None = None
    dup_cluster: str | int | None = None
    chunks: list[OutputChunk] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "OutputFile":
        if self.text is None and not self.pages:
            raise ValueError("needs 'text' or 'pages'")
        n = len(self.full_text)
        for i, span in enumerate(self.pii or []):
            if span.end > n:
                raise ValueError(f"pii[{i}]: span [{span.start}, {span.end}) is outside the text ({n} code points)")
        return self

    @property
    def full_text(self) -> str:
        """``text``, or the pages joined with `PAGE_SEPARATOR` when ``text`` is absent."""
        return self.text if self.text is not None else PAGE_SEPARATOR.join(self.pages)


EXTRAS = ("clean_text", "language", "pii", "dup_cluster", "chunks")


_FIELDS = frozenset().union(*(m.model_fields for m in (OutputFile, OutputBlock, OutputSpan, OutputChunk)))


def _field_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in _FIELDS or i == 0:  # other parts are pydantic's union member tags ("str", "int", ...)
            out += ("." if out else "") + str(part)
    return out


def read_output_json(path: Path) -> OutputFile:
    """Parse and validate one JSON output file.

    Raises:
        ParserError: unreadable, not UTF-8, invalid JSON, a value past a `ingestaudit.jsonlimits` limit (nesting
            deeper than its ``MAX_DEPTH``, an integer too long to convert), or schema errors; the message names the
            file and every failing field.
    """
    try:
        raw, limits = loads_limited(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ParserError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ParserError(f"{path}: invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise ParserError(f"{path}: JSON nested too deeply to read") from None
    except OSError as exc:
        raise ParserError(f"{path}: unreadable ({exc.strerror or exc})") from None
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
            msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
            problems.setdefault(_field_path(err["loc"]), []).append(msg)
        text = "; ".join(f"{field}: {' or '.join(msgs)}" if field else " or ".join(msgs)
                         for field, msgs in problems.items())
        raise ParserError(f"{path}: {text}") from None


class PrecomputedParser(Parser):
    """Reads one external pipeline's outputs from ``root / name``.

    Args:
        root: the ``--outputs`` folder.
        name: the subfolder, which is also this parser's name in the report.

    Every document is "supported": whether an output exists is only known when parsing.

    Raises:
        ValueError: (at construction) ``name`` is empty or not a single folder name.
    """

    name = "precomputed"
    extensions: frozenset[str] = frozenset()

    def __init__(self, root: Path, name: str):
        if not name or "/" in name or "\\" in name or name in (".", ".."):
            raise ValueError(f"precomputed parser name must be one folder name, not {name!r}")
        self.root = Path(root)
        self.name = name  # type: ignore[misc]  # per instance: the folder name
        self.folder = self.root / name

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
        """Existing output files for ``document``, in order of precedence."""
        base = self.folder / document.doc_id
        paths = (base.parent / (base.name + suffix) for suffix in OUTPUT_SUFFIXES)
        return [p for p in paths if p.is_file()]

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
            out = read_output_json(path)
            text = out.full_text
            extras = {k: _plain(getattr(out, k)) for k in EXTRAS if getattr(out, k) is not None}
            blocks = tuple(Block(text=b.text, page=b.page, bbox=b.bbox, kind=b.kind, level=b.level,
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
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                raise ParserError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
            except OSError as exc:
                raise ParserError(f"{path}: unreadable ({exc.strerror or exc})") from None
        else:
            from ingestaudit.ocrxml import read_ocr_xml

            try:
                text = read_ocr_xml(path)
            except ValueError as exc:
                raise ParserError(str(exc)) from None
        return ParsedDocument(text=text, pages=(text,), parser=self.name, parser_version="", settings=settings,
                              elapsed_s=time.perf_counter() - start, warnings=tuple(warnings))


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
