"""The truth schema (pydantic models) and the loader that reads a document's labels from ``truth/``.

Shapes follow DESIGN.md, "Truth file fields". Unknown keys are errors naming the file and the key. Offsets are Unicode
code points, end exclusive.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator,
                      model_validator)

from ingestaudit.document import Document
from ingestaudit.jsonlimits import loads_limited


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Span(_Strict):
    """A labelled character span ``[start, end)`` in code points of the text it refers to (integers: ``true`` or
    ``12.0`` are not offsets)."""

    start: StrictInt = Field(ge=0)
    end: StrictInt = Field(ge=0)
    type: str = Field(min_length=1)

    @model_validator(mode="after")
    def _ordered(self) -> "Span":
        if self.end < self.start:
            raise ValueError(f"end ({self.end}) is before start ({self.start})")
        return self


class Heading(_Strict):
    """A heading in document order; ``level`` 1 is the top level (1..9), ``text`` non-blank."""

    level: StrictInt = Field(ge=1, le=9)
    text: str = Field(min_length=1)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("heading text is blank")
        return v


def _list_items(v: list[str]) -> list[str]:
    """A labelled list: at least one item, every item non-blank (the item texts in order)."""
    if not v:
        raise ValueError("a list needs at least one item")
    for k, item in enumerate(v):
        if not item.strip():
            raise ValueError(f"item {k} is blank")
    return v


ListLabel = Annotated[list[str], AfterValidator(_list_items)]
"""One labelled list (truth ``lists``): its item texts in reading order; a nested list is a list of its own."""


class TextCheck(_Strict):
    """olmOCR-style assertion: ``text`` is present (or absent) in the output within ``max_diffs`` edits."""

    type: Literal["present", "absent"]
    text: str = Field(min_length=1)
    max_diffs: StrictInt = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _tolerance(self) -> "TextCheck":
        if self.max_diffs >= len(self.text):
            raise ValueError(f"max_diffs ({self.max_diffs}) must be below the length of text ({len(self.text)})")
        return self


class OrderCheck(_Strict):
    """olmOCR-style assertion: ``before`` occurs before ``after`` in the output, each within ``max_diffs`` edits."""

    type: Literal["order"]
    before: str = Field(min_length=1)
    after: str = Field(min_length=1)
    max_diffs: StrictInt = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _tolerance(self) -> "OrderCheck":
        if self.max_diffs >= min(len(self.before), len(self.after)):
            raise ValueError(f"max_diffs ({self.max_diffs}) must be below the length of before and after")
        return self


Check = Annotated[Union[TextCheck, OrderCheck], Field(discriminator="type")]


class Boilerplate(_Strict):
    """Boilerplate labels: spans on a given ``text``, and/or segments that must survive (``with``) or be removed
    (``without``), as in trafilatura's evaluation data, and/or the hand-cleaned ``main_text``."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    text: str | None = None
    spans: list[Span] = []
    with_: list[str] = Field(default=[], alias="with")
    without: list[str] = []
    main_text: str | None = None  # hand-cleaned main content, compared with the cleaner's output by bag of shingles

    @model_validator(mode="after")
    def _spans_need_text(self) -> "Boilerplate":
        if self.spans and self.text is None:
            raise ValueError("'spans' need the 'text' they refer to")
        return self


def normalize_language(tag: str) -> str:
    """Map an ISO 639-1, ISO 639-3 or BCP 47 tag to its ISO 639-1 code (or ISO 639-3 when no 2-letter code exists),
    using ``langcodes``.

    Raises:
        ValueError: the tag is not a valid language tag.
    """
    import langcodes

    try:
        lang = langcodes.Language.get(tag)
    except (ValueError, LookupError) as exc:
        raise ValueError(f"{tag!r} is not a language tag ({exc})") from None
    if not lang.language or lang.language == "und" or not lang.is_valid():
        raise ValueError(f"{tag!r} is not a known language tag")
    return lang.language


class TruthFile(_Strict):
    """The JSON truth file ``truth/<class>/<name>.json``; every key optional.

    ``headings``: ``[{"level": int 1..9, "text": non-blank str}, ...]`` in document order. ``lists``: labelled lists,
    ``[["first item", "second item"], ...]``, each list its item texts in reading order (a nested list is listed
    as a list of its own); read by ``layout.list_integrity``."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    text: str | None = None
    tables: list[str] = []
    headings: list[Heading] = []
    lists: list[ListLabel] = []  # labelled lists, each its item texts in order (layout.list_integrity)
    checks: list[Check] = []
    boilerplate: Boilerplate | None = None
    pii: list[Span] = []
    language: str | None = None
    dup_group: str | None = None
    sections: list[dict[str, Any]] = []
    metadata: dict[str, str | int | float | bool] = {}  # key/value pairs a retrieval filter may test
    class_: str | None = Field(default=None, alias="class")

    @field_validator("class_")
    @classmethod
    def _class(cls, v: str | None) -> str | None:
        if v is not None and (not v or v == "__all__" or "/" in v):
            raise ValueError(f"{v!r} cannot be a class name ('__all__' is reserved for the overall rows)")
        return v

    @field_validator("language")
    @classmethod
    def _language(cls, v: str | None) -> str | None:
        return None if v is None else normalize_language(v)


@dataclass(frozen=True)
class Problem:
    """One label error: the file, the field path inside it (``""`` for the whole file) and what is wrong."""

    file: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field or '<file>'}: {self.message}"


class TruthError(Exception):
    """A document's truth could not be loaded; ``problems`` lists every error with its file and field."""

    def __init__(self, problems: list[Problem]):
        super().__init__("; ".join(map(str, problems)))
        self.problems = problems


@dataclass(frozen=True)
class Truth:
    """Every label of one document, merged from its truth files.

    ``text`` is the reference text (from ``.txt``, the JSON ``text`` key, or a PAGE XML / ALTO ground-truth file);
    None when there is none. The other fields are as in `TruthFile`.
    """

    text: str | None = None
    tables: tuple[str, ...] = ()
    headings: tuple[Heading, ...] = ()
    lists: tuple[tuple[str, ...], ...] = ()
    checks: tuple[TextCheck | OrderCheck, ...] = ()
    boilerplate: Boilerplate | None = None
    pii: tuple[Span, ...] = ()
    language: str | None = None
    dup_group: str | None = None
    sections: tuple[dict[str, Any], ...] = ()
    metadata: dict[str, Any] | None = None  # the truth JSON's ``metadata`` (filters of questions test it)
    doc_class: str | None = None
    pii_labelled: bool = False  # the truth JSON has a "pii" key: "pii": [] declares a document without PII


def _field_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("TextCheck", "OrderCheck", "present", "absent", "order"):
            continue  # discriminated-union tags pydantic inserts into the location
        else:
            out += ("." if out else "") + ("with" if part == "with_" else str(part))
    return out


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _parse_truth_file(path: Path, rel: str) -> tuple[TruthFile, list[Problem]]:
    """Validate key by key, so one bad key never hides the problems (or the valid labels) of the others; a value past
    a `ingestaudit.jsonlimits` limit (a huge integer, deep nesting) is a problem of its key and field."""
    try:
        raw, limits = loads_limited(path.read_text(encoding="utf-8"), object_pairs_hook=_no_duplicate_keys)
        json.dumps(raw, ensure_ascii=False).encode("utf-8")  # lone surrogates (\ud800) cannot be written back
    except UnicodeDecodeError as exc:
        return TruthFile(), [Problem(rel, "", f"not UTF-8 ({exc.reason} at byte {exc.start})")]
    except UnicodeEncodeError:
        return TruthFile(), [Problem(rel, "", "a string holds a lone surrogate escape (e.g. \\ud800): not Unicode text")]
    except json.JSONDecodeError as exc:
        return TruthFile(), [Problem(rel, "", f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")]
    except _DuplicateKey as exc:
        return TruthFile(), [Problem(rel, str(exc), "key given twice in one object")]
    except RecursionError:
        return TruthFile(), [Problem(rel, "", "JSON nested too deeply to read")]
    except OSError as exc:
        return TruthFile(), [Problem(rel, "", f"unreadable: {exc.strerror}")]
    except ValueError as exc:  # anything else json refuses: the file is named, never a traceback
        return TruthFile(), [Problem(rel, "", f"invalid JSON ({exc})")]
    if not isinstance(raw, dict):
        what = "a too long integer" if raw is None and limits else type(raw).__name__
        return TruthFile(), [Problem(rel, "", f"must be a JSON object, not {what}")]
    problems: list[Problem] = [Problem(rel, p.field, p.message) for p in limits]
    skipped = {_top_key(p.field) for p in limits}  # keys holding a value past a limit: not validated, not used
    valid: dict[str, Any] = {}
    for key, value in raw.items():
        if key in skipped:
            continue
        try:
            TruthFile.model_validate({key: value})
            valid[key] = value
        except ValidationError as exc:
            for err in exc.errors():
                msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
                problems.append(Problem(rel, _field_path(err["loc"]), msg.removeprefix("Value error, ")))
    return TruthFile.model_validate(valid), problems


def _top_key(field: str) -> str:
    """The top-level key of a field path (``pii[3].start`` -> ``pii``)."""
    return re.split(r"[.\[]", field, maxsplit=1)[0]


def read_truth_file(path: Path, rel: str) -> TruthFile:
    """Parse and validate one JSON truth file.

    Args:
        path: the file.
        rel: the path shown in problems (relative to the corpus root).

    Raises:
        TruthError: unreadable file, invalid JSON or schema errors, each with its field path (all of them).
    """
    tf, problems = _parse_truth_file(path, rel)
    if problems:
        raise TruthError(problems)
    return tf


def _read_text(path: Path, rel: str) -> str:
    """The file's text exactly as written: no newline translation, so span offsets counted on the file hold; a
    leading byte-order mark is not text (labelling tools do not count it) and is dropped."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            return fh.read()
    except UnicodeDecodeError as exc:
        raise TruthError([Problem(rel, "", f"not UTF-8 ({exc.reason} at byte {exc.start})")]) from None
    except OSError as exc:
        raise TruthError([Problem(rel, "", f"unreadable: {exc.strerror}")]) from None


def load_truth(document: Document, root: Path) -> Truth:
    """Load and merge every truth file of ``document``; offsets of spans are checked against the text they index.

    Args:
        document: the document whose ``truth_*`` paths are read.
        root: corpus root, used to show relative paths in problems.

    Raises:
        TruthError: with every problem found (file + field), never only the first.
    """
    problems: list[Problem] = []
    tf = TruthFile()
    text: str | None = None
    if document.truth_json is not None:
        tf, problems = _parse_truth_file(document.truth_json, document.truth_json.relative_to(root).as_posix())
    if document.truth_txt is not None:
        rel_txt = document.truth_txt.relative_to(root).as_posix()
        try:
            text = _read_text(document.truth_txt, rel_txt)
        except TruthError as exc:
            problems += exc.problems
        if tf.text is not None:
            problems.append(Problem(rel_txt, "", "reference text given twice (.txt and the JSON 'text' key)"))
    text = tf.text if text is None else text
    tables = list(tf.tables)
    for extra in document.truth_extra:
        rel = extra.relative_to(root).as_posix()
        try:
            if extra.name.endswith(".tables.html"):  # may hold several tables: one entry per table
                from ingestaudit.metrics.table_html import split_tables

                tables.extend(split_tables(_read_text(extra, rel)))
            elif text is None:
                from ingestaudit.ocrxml import read_ocr_xml  # PAGE XML / ALTO reference text

                text = read_ocr_xml(extra)
            else:
                problems.append(Problem(rel, "", "reference text given twice"))
        except TruthError as exc:
            problems += exc.problems
        except ValueError as exc:
            problems.append(Problem(rel, "", str(exc)))
    if document.truth_json is not None and text is not None:
        rel = document.truth_json.relative_to(root).as_posix()
        problems += _span_problems(rel, "pii", tf.pii, text)
    if tf.boilerplate is not None and tf.boilerplate.text is not None:
        rel = document.truth_json.relative_to(root).as_posix()  # type: ignore[union-attr]
        problems += _span_problems(rel, "boilerplate.spans", tf.boilerplate.spans, tf.boilerplate.text)
    if tf.pii and text is None and document.truth_json is not None:
        problems.append(Problem(document.truth_json.relative_to(root).as_posix(), "pii",
                                "pii spans need a reference text (.txt or 'text')"))
    if problems:
        raise TruthError(problems)
    return Truth(text=text, tables=tuple(tables), headings=tuple(tf.headings),
                 lists=tuple(tuple(items) for items in tf.lists), checks=tuple(tf.checks),
                 boilerplate=tf.boilerplate, pii=tuple(tf.pii), language=tf.language, dup_group=tf.dup_group,
                 sections=tuple(tf.sections), metadata=dict(tf.metadata) if tf.metadata else None,
                 doc_class=tf.class_, pii_labelled="pii" in tf.model_fields_set)


def _span_problems(rel: str, name: str, spans: list[Span] | tuple[Span, ...], text: str) -> list[Problem]:
    return [Problem(rel, f"{name}[{i}]", f"span [{s.start}, {s.end}) is outside the text ({len(text)} code points)")
            for i, s in enumerate(spans) if s.end > len(text)]
