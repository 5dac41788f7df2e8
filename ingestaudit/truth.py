"""The truth schema (pydantic models) and the loader that reads a document's labels from ``truth/``.

Shapes follow DESIGN.md, "Truth file fields". Unknown keys are errors naming the file and the key. Offsets are Unicode
code points, end exclusive.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator,
                      model_validator)

from ingestaudit.document import Document
from ingestaudit.errors import TruthFileError
from ingestaudit.jsonlimits import loads_limited
from ingestaudit.schema_keys import PAGES, unknown_key

if TYPE_CHECKING:
    from ingestaudit.config import Limits


RESERVED_PII_TYPES = ("*", "macro")
"""Entity-type names the PII report's labels use (``exact/*``, ``exact/macro``; `ingestaudit.auditors.pii`)."""

RESERVED_ENTITY_TYPES = ("micro", "macro", "unmapped")
"""Entity-type names the entity report's labels use (``strict/micro``; `ingestaudit.auditors.entities`)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Span(_Strict):
    """A labelled character span ``[start, end)`` in code points of the text it refers to (integers: ``true`` or
    ``12.0`` are not offsets)."""

    start: StrictInt = Field(ge=0, description="first code point of the span")
    end: StrictInt = Field(ge=0, description="end of the span, exclusive (not before start)")
    type: str = Field(min_length=1, description="the span's label: a PII or named-entity type (PERSON, ORG...); "
                                                 "for boilerplate spans a free name")

    @model_validator(mode="after")
    def _ordered(self) -> "Span":
        if self.end < self.start:
            raise ValueError(f"end ({self.end}) is before start ({self.start})")
        return self


class Relation(_Strict):
    """A labelled relation: ``head`` and ``tail`` index the same file's ``entities`` (from 0), ``type`` names it."""

    head: StrictInt = Field(ge=0, description="index of the relation's first argument in 'entities'")
    tail: StrictInt = Field(ge=0, description="index of the relation's second argument in 'entities'")
    type: str = Field(min_length=1, description="the relation's type (works_for, located_in...)")


def _type_names(v: list[str] | None, reserved: tuple[str, ...]) -> list[str] | None:
    """A declared list of entity types: names without surrounding white space, none reserved, none twice."""
    if v is None:
        return v
    for k, typ in enumerate(v):
        if not typ.strip() or typ != typ.strip():
            raise ValueError(f"item {k}: {typ!r} is not an entity type name (blank, or white space around it)")
        if typ in reserved:
            raise ValueError(f"item {k}: {typ!r} is reserved by the report's label scheme")
    twice = sorted({t for t in v if v.count(t) > 1})
    if twice:
        raise ValueError(f"type(s) given twice: {', '.join(twice)}")
    return v


class Heading(_Strict):
    """A heading in document order; ``level`` 1 is the top level (1..9), ``text`` non-blank."""

    level: StrictInt = Field(ge=1, le=9, description="heading level, 1 the top level")
    text: str = Field(min_length=1, description="the heading's text as it reads (not blank)")

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

    type: Literal["present", "absent"] = Field(description="the assertion: the text is present, or absent")
    text: str = Field(min_length=1, description="the text looked for")
    max_diffs: StrictInt = Field(default=0, ge=0, description="edits allowed in a match (below the text's length)")

    @model_validator(mode="after")
    def _tolerance(self) -> "TextCheck":
        if self.max_diffs >= len(self.text):
            raise ValueError(f"max_diffs ({self.max_diffs}) must be below the length of text ({len(self.text)})")
        return self


class OrderCheck(_Strict):
    """olmOCR-style assertion: ``before`` occurs before ``after`` in the output, each within ``max_diffs`` edits."""

    type: Literal["order"] = Field(description="the assertion: before occurs before after")
    before: str = Field(min_length=1, description="the text that must come first")
    after: str = Field(min_length=1, description="the text that must come after it")
    max_diffs: StrictInt = Field(default=0, ge=0, description="edits allowed in each match (below both lengths)")

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

    text: str | None = Field(default=None, description="the text the spans refer to (needed with spans)")
    spans: list[Span] = Field(default=[], description="boilerplate spans on text")
    with_: list[str] = Field(default=[], alias="with", description="segments the cleaned output must keep")
    without: list[str] = Field(default=[], description="segments the cleaner must remove")
    main_text: str | None = Field(default=None, description="hand-cleaned main content, compared with the "
                                                            "cleaner's output by bag of shingles")

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

    text: str | None = Field(default=None, description="the reference text, when there is no .txt file (never "
                                                       "both)")
    tables: list[str] = Field(default=[], description="one HTML table per table, in reading order (`<table>` with "
                                                      "`<tr>`, `<th>`, `<td>`), scored by TEDS")
    headings: list[Heading] = Field(default=[], description="the headings in document order")
    lists: list[ListLabel] = Field(default=[], description="labelled lists, each its item texts in reading order "
                                                           "(at least one, none blank; a nested list is a list of its "
                                                           "own), read by layout.list_integrity")
    checks: list[Check] = Field(default=[], description="olmOCR-style assertions on the parsed text: present, "
                                                        "absent, order")
    boilerplate: Boilerplate | None = Field(default=None, description="what a cleaner should keep and remove")
    pii: list[Span] = Field(default=[], description="PII spans on the reference text; \"pii\": [] declares a "
                                                    "document without PII")
    pii_types: list[str] | None = Field(
        default=None, min_length=1,
        description="the PII entity types labelled exhaustively in this document (every span of these types is in "
                    "'pii'); predictions of other types are reported apart (pii.unlabelled_type_predictions), not "
                    "counted as false positives; without it every predicted type is judged")
    language: str | None = Field(default=None, description="the document's language: ISO 639-1, ISO 639-3 or BCP "
                                                           "47 tag (stored as ISO 639-1)")
    dup_group: str | None = Field(default=None, description="near-duplicate group: documents sharing a value are "
                                                            "duplicates; without it a document is unique")
    sections: list[dict[str, Any]] = Field(default=[], description="section labels as JSON objects (kept with the "
                                                                   "truth; no auditor reads them yet)")
    entities: list[Span] = Field(default=[], description="named-entity spans on the reference text (PER, ORG, LOC, "
                                                         "DATE...); at most one span of a type over any character; "
                                                         "\"entities\": [] declares a document without entities")
    entity_types: list[str] | None = Field(
        default=None, min_length=1,
        description="the entity types labelled in this document; a span of another type is an error (without it, "
                    "the types the spans use); not 'micro', 'macro' or 'unmapped'")
    relations: list[Relation] = Field(default=[], description="relations between labelled entities: head and tail "
                                                              "index 'entities'")
    metadata: dict[str, str | int | float | bool | list[str]] = Field(
        default={}, description="key/value pairs a question's filter may test and the metadata auditor compares "
                                "with the extracted fields (title, authors as a list of strings, date, year...); a "
                                "number must be finite (1e400 is infinity) and a date a date (2026-02-30 is not): "
                                "else a problem of metadata.<key>, that key left out, the others kept")
    class_: str | None = Field(default=None, alias="class", description="the document's stratum instead of its "
                                                                        "first folder under docs/ (not '__all__', "
                                                                        "no '/')")

    @field_validator("class_")
    @classmethod
    def _class(cls, v: str | None) -> str | None:
        if v is not None and (not v or v == "__all__" or "/" in v):
            raise ValueError(f"{v!r} cannot be a class name ('__all__' is reserved for the overall rows)")
        return v

    @field_validator("pii_types")
    @classmethod
    def _pii_types(cls, v: list[str] | None) -> list[str] | None:
        return _type_names(v, RESERVED_PII_TYPES)

    @field_validator("entity_types")
    @classmethod
    def _entity_types(cls, v: list[str] | None) -> list[str] | None:
        return _type_names(v, RESERVED_ENTITY_TYPES)

    @field_validator("language")
    @classmethod
    def _language(cls, v: str | None) -> str | None:
        return None if v is None else normalize_language(v)


@dataclass(frozen=True)
class Problem:
    """One label error: the file, the field path inside it (``""`` for the whole file) and what is wrong.

    ``limit`` names the ``[limits]`` setting (`ingestaudit.config.Limits`) when the problem is an input over a size
    limit (``"truth_bytes"``, ``"json_depth"``, ``"spans"``, ``"tables"``...): the run then skips the document
    instead of auditing it with partial labels; ``""`` for every other problem."""

    file: str
    field: str
    message: str
    limit: str = ""

    def __str__(self) -> str:
        return f"{self.file}: {self.field or '<file>'}: {self.message}"


class TruthError(TruthFileError):
    """A document's truth could not be loaded; ``problems`` lists every error with its file and field.

    ``partial``: when every problem lies in one key of the JSON truth file (a bad heading, a span out of range), the
    document's other labels, with those keys left out and ``problems`` set (`Truth.problems`); None when a problem
    concerns a whole file (unreadable, invalid JSON, a key given twice, a reference text given twice).
    """

    def __init__(self, problems: list[Problem], partial: "Truth | None" = None):
        super().__init__("; ".join(map(str, problems)))
        self.problems = problems
        self.partial = partial


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
    pii_types: tuple[str, ...] | None = None  # exhaustively labelled PII types (truth JSON ``pii_types``); None: all
    language: str | None = None
    dup_group: str | None = None
    sections: tuple[dict[str, Any], ...] = ()
    metadata: dict[str, Any] | None = None  # the truth JSON's ``metadata`` (filters of questions test it)
    entities: tuple[Span, ...] = ()
    entity_types: tuple[str, ...] | None = None  # declared entity vocabulary (truth JSON ``entity_types``)
    relations: tuple[Relation, ...] = ()
    entities_labelled: bool = False  # the truth JSON has an "entities" key ("entities": [] = none in the document)
    doc_class: str | None = None
    pii_labelled: bool = False  # the truth JSON has a "pii" key: "pii": [] declares a document without PII
    problems: tuple[Problem, ...] = ()  # label errors of the keys left out (`TruthError.partial`); () if all loaded


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


_DUPLICATE_KEY = "key given twice in one object"  # a whole-file problem although it names a key


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def over_size(path: Path, rel: str, max_bytes: int, name: str) -> Problem | None:
    """A `Problem` (with ``limit`` = ``name``) when the file at ``path`` holds more than ``max_bytes`` bytes, from
    ``stat`` alone (the file is never opened); None when it fits or cannot be stat'ed (its reader reports that)."""
    try:
        size = path.stat().st_size
    except OSError:
        return None
    if size <= max_bytes:
        return None
    return Problem(rel, "", f"{size} bytes, over limits.{name} = {max_bytes}: not read", limit=name)


def _count_problems(raw: dict[str, Any], rel: str, limits: "Limits") -> list[Problem]:
    """The keys of a truth JSON object holding more items than a count limit allows (checked on the raw JSON, before
    the schema builds an object per item): ``pii`` plus ``boilerplate.spans`` against ``spans``, ``tables`` against
    ``tables``."""
    out = []
    bp = raw.get("boilerplate")
    spans = {"pii": raw.get("pii"), "entities": raw.get("entities"),
             "boilerplate.spans": bp.get("spans") if isinstance(bp, dict) else None}
    n_spans = sum(len(v) for v in spans.values() if isinstance(v, list))
    if n_spans > limits.spans:
        where = " + ".join(k for k, v in spans.items() if isinstance(v, list) and v)
        out += [Problem(rel, key, f"{n_spans} spans ({where}), over limits.spans = {limits.spans}", limit="spans")
                for key, v in spans.items() if isinstance(v, list) and v]
    tables = raw.get("tables")
    if isinstance(tables, list) and len(tables) > limits.tables:
        out.append(Problem(rel, "tables", f"{len(tables)} tables, over limits.tables = {limits.tables}",
                           limit="tables"))
    return out


def _parse_truth_file(path: Path, rel: str, limits: "Limits | None" = None) -> tuple[TruthFile, list[Problem]]:
    """Validate key by key, so one bad key never hides the problems (or the valid labels) of the others; a value past
    a `ingestaudit.jsonlimits` limit (a huge integer, deep nesting) is a problem of its key and field, and so is a
    key over a count limit of ``limits`` (default `Limits`); a file over ``limits.truth_bytes`` is never read."""
    from ingestaudit.config import Limits

    limits = limits or Limits()
    big = over_size(path, rel, limits.truth_bytes, "truth_bytes")
    if big is not None:
        return TruthFile(), [big]
    try:
        raw, found = loads_limited(path.read_text(encoding="utf-8"), max_depth=limits.json_depth,
                                   object_pairs_hook=_no_duplicate_keys)
        json.dumps(raw, ensure_ascii=False).encode("utf-8")  # lone surrogates (\ud800) cannot be written back
    except UnicodeDecodeError as exc:
        return TruthFile(), [Problem(rel, "", f"not UTF-8 ({exc.reason} at byte {exc.start})")]
    except UnicodeEncodeError:
        return TruthFile(), [Problem(rel, "", "a string holds a lone surrogate escape (e.g. \\ud800): not Unicode text")]
    except json.JSONDecodeError as exc:
        return TruthFile(), [Problem(rel, "", f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")]
    except _DuplicateKey as exc:
        return TruthFile(), [Problem(rel, str(exc), _DUPLICATE_KEY)]
    except RecursionError:
        return TruthFile(), [Problem(rel, "", "JSON nested too deeply to read")]
    except OSError as exc:
        return TruthFile(), [Problem(rel, "", f"unreadable: {exc.strerror}")]
    except ValueError as exc:  # anything else json refuses: the file is named, never a traceback
        return TruthFile(), [Problem(rel, "", f"invalid JSON ({exc})")]
    if not isinstance(raw, dict):
        what = "a too long integer" if raw is None and found else type(raw).__name__
        return TruthFile(), [Problem(rel, "", f"must be a JSON object, not {what}")]
    problems: list[Problem] = [Problem(rel, p.field, f"{p.message} (limits.json_depth = {limits.json_depth})",
                                       limit="json_depth") if p.kind == "depth" else Problem(rel, p.field, p.message)
                               for p in found]
    problems += _count_problems(raw, rel, limits)
    skipped = {_top_key(p.field) for p in problems}  # keys holding a value past a limit: not validated, not used
    valid: dict[str, Any] = {}
    for key, value in raw.items():
        if key in skipped:
            continue
        try:
            TruthFile.model_validate({key: value})
            valid[key] = value
        except ValidationError as exc:
            for err in exc.errors():
                msg = (unknown_key(TruthFile, err["loc"], PAGES["truth"]) if err["type"] == "extra_forbidden"
                       else err["msg"])
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


def load_truth(document: Document, root: Path, limits: "Limits | None" = None) -> Truth:
    """Load and merge every truth file of ``document``; offsets of spans are checked against the text they index.

    Args:
        document: the document whose ``truth_*`` paths are read.
        root: corpus root, used to show relative paths in problems.
        limits: the size limits (default `ingestaudit.config.Limits`): a file over ``truth_bytes`` is never read,
            a JSON file nested deeper than ``json_depth``, with more spans than ``spans`` or more tables than
            ``tables`` (JSON and ``.tables.html`` together) is a problem whose ``limit`` names the setting.

    Raises:
        TruthError: with every problem found (file + field), never only the first.
    """
    from ingestaudit.config import Limits

    limits = limits or Limits()
    problems: list[Problem] = []
    tf = TruthFile()
    text: str | None = None
    if document.truth_json is not None:
        tf, problems = _parse_truth_file(document.truth_json, document.truth_json.relative_to(root).as_posix(),
                                         limits)
    if document.truth_txt is not None:
        rel_txt = document.truth_txt.relative_to(root).as_posix()
        try:
            big = over_size(document.truth_txt, rel_txt, limits.truth_bytes, "truth_bytes")
            if big is not None:
                raise TruthError([big])
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
            big = over_size(extra, rel, limits.truth_bytes, "truth_bytes")
            if big is not None:
                raise TruthError([big])
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
    if len(tables) > limits.tables and not any(p.limit == "tables" for p in problems):
        where = [p for p in document.truth_extra if p.name.endswith(".tables.html")] + [document.truth_json]
        rel = where[0].relative_to(root).as_posix()  # type: ignore[union-attr]
        problems.append(Problem(rel, "tables", f"{len(tables)} tables in the truth files, over limits.tables = "
                                               f"{limits.tables}", limit="tables"))
    if document.truth_json is not None and text is not None:
        rel = document.truth_json.relative_to(root).as_posix()
        problems += _span_problems(rel, "pii", tf.pii, text)
    if tf.pii_types is not None and document.truth_json is not None:
        rel = document.truth_json.relative_to(root).as_posix()
        problems += [Problem(rel, f"pii[{i}].type", f"type {s.type!r} is not in pii_types ({', '.join(tf.pii_types)})"
                             ": a labelled type must be declared") for i, s in enumerate(tf.pii)
                     if s.type not in tf.pii_types]
    if document.truth_json is not None:
        problems += entity_problems(document.truth_json.relative_to(root).as_posix(), tf, text)
        problems += metadata_problems(document.truth_json.relative_to(root).as_posix(), tf.metadata)
    if tf.boilerplate is not None and tf.boilerplate.text is not None:
        rel = document.truth_json.relative_to(root).as_posix()  # type: ignore[union-attr]
        problems += _span_problems(rel, "boilerplate.spans", tf.boilerplate.spans, tf.boilerplate.text)
    if tf.pii and text is None and document.truth_json is not None:
        problems.append(Problem(document.truth_json.relative_to(root).as_posix(), "pii",
                                "pii spans need a reference text (.txt or 'text')"))
    truth = Truth(text=text, tables=tuple(tables), headings=tuple(tf.headings),
                  lists=tuple(tuple(items) for items in tf.lists), checks=tuple(tf.checks),
                  boilerplate=tf.boilerplate, pii=tuple(tf.pii), language=tf.language, dup_group=tf.dup_group,
                  sections=tuple(tf.sections), metadata=dict(tf.metadata) if tf.metadata else None,
                  doc_class=tf.class_, pii_labelled="pii" in tf.model_fields_set,
                  pii_types=None if tf.pii_types is None else tuple(tf.pii_types),
                  entities=tuple(tf.entities), relations=tuple(tf.relations),
                  entity_types=None if tf.entity_types is None else tuple(tf.entity_types),
                  entities_labelled="entities" in tf.model_fields_set)
    if problems:
        json_rel = document.truth_json.relative_to(root).as_posix() if document.truth_json is not None else None
        raise TruthError(problems, _partial(truth, problems, json_rel))
    return truth


_KEY_FIELDS = {"class": ("doc_class",), "pii": ("pii", "pii_labelled"),
               "entities": ("entities", "entities_labelled", "relations")}  # relations index the entities
"""Truth JSON keys whose `Truth` fields have other names (every other key is its own field)."""


def _partial(truth: Truth, problems: list[Problem], json_rel: str | None) -> Truth | None:
    """``truth`` without the JSON keys the problems name, carrying the problems; None when a problem is not tied to one
    key of the JSON file (see `TruthError`)."""
    if any(p.file != json_rel or not p.field or p.message == _DUPLICATE_KEY for p in problems):
        return None
    from dataclasses import fields, replace

    defaults = {f.name: f.default for f in fields(Truth)}
    cleared: dict[str, Any] = {}
    bad_fields = {p.field[len("metadata."):] for p in problems if p.field.startswith("metadata.")}
    if bad_fields and truth.metadata is not None:  # one bad metadata field: the others are still labels
        kept = {k: v for k, v in truth.metadata.items() if k not in bad_fields}
        cleared["metadata"] = kept or None
    for key in {_top_key(p.field) for p in problems if not p.field.startswith("metadata.")}:
        for name in _KEY_FIELDS.get(key, (key,)):
            if name in defaults and name != "problems":
                cleared[name] = defaults[name]
    return replace(truth, **cleared, problems=tuple(problems))


def _span_problems(rel: str, name: str, spans: list[Span] | tuple[Span, ...], text: str) -> list[Problem]:
    return [Problem(rel, f"{name}[{i}]", f"span [{s.start}, {s.end}) is outside the text ({len(text)} code points)")
            for i, s in enumerate(spans) if s.end > len(text)]


def metadata_problems(rel: str, metadata: dict[str, Any]) -> list[Problem]:
    """One problem per ``metadata`` value no auditor or filter can use, field ``metadata.<key>``: a number that is
    not finite (JSON ``1e400`` is read as infinity, ``NaN`` as NaN) and a date field
    (`ingestaudit.metrics.fields.DATE_FIELDS`) that `ingestaudit.metrics.fields.parse_date` does not read
    (``2026-02-30``); the document keeps its other fields (`_partial`)."""
    import math

    from ingestaudit.metrics.fields import DATE_FIELDS, parse_date

    out = []
    for key, value in (metadata or {}).items():
        if isinstance(value, float) and not math.isfinite(value):
            out.append(Problem(rel, f"metadata.{key}", f"{value!r} is not a finite number"))
        elif key in DATE_FIELDS and (not isinstance(value, str) or parse_date(value) is None):
            out.append(Problem(rel, f"metadata.{key}", f"{value!r} is not a date (ISO 8601 such as 2026-02-28, or "
                                                       "a text dateutil reads, with its year)"))
    return out


def entity_problems(rel: str, tf: TruthFile, text: str | None) -> list[Problem]:
    """The label errors of ``entities`` and ``relations`` that the schema cannot see, each naming its span.

    An entity span must be non-empty, lie inside ``text`` (which must exist), have a type in ``entity_types`` when
    that is given and not a reserved name, and not overlap another span of its type; a relation's head and tail must
    index ``entities``. (A reversed span is a schema error of `Span`.)
    """
    out: list[Problem] = []
    if tf.entities and text is None:
        out.append(Problem(rel, "entities", "entity spans need a reference text (.txt or 'text')"))
    out += _span_problems(rel, "entities", tf.entities, text) if text is not None else []
    declared = tf.entity_types
    for i, s in enumerate(tf.entities):
        where = f"entities[{i}]"
        if s.start == s.end:
            out.append(Problem(rel, where, f"span [{s.start}, {s.end}) is empty"))
        if declared is not None and s.type not in declared:
            out.append(Problem(rel, f"{where}.type", f"span [{s.start}, {s.end}) has type {s.type!r}, not one of "
                                                     f"entity_types ({', '.join(declared)})"))
        elif s.type in RESERVED_ENTITY_TYPES:
            out.append(Problem(rel, f"{where}.type", f"{s.type!r} is reserved by the report's label scheme"))
    reach: dict[str, int] = {}  # type -> index of the span reaching furthest right so far, in start order
    for b in sorted(range(len(tf.entities)), key=lambda k: (tf.entities[k].start, tf.entities[k].end)):
        y = tf.entities[b]
        a = reach.get(y.type)
        if a is not None and y.start < tf.entities[a].end:
            x = tf.entities[a]
            out.append(Problem(rel, f"entities[{b}]", f"span [{y.start}, {y.end}) {y.type} overlaps entities[{a}] "
                                                      f"[{x.start}, {x.end}) of the same type"))
        if a is None or y.end > tf.entities[a].end:
            reach[y.type] = b
    for i, r in enumerate(tf.relations):
        for side in ("head", "tail"):
            if getattr(r, side) >= len(tf.entities):
                out.append(Problem(rel, f"relations[{i}].{side}", f"{getattr(r, side)} is not an index of "
                                                                  f"'entities' ({len(tf.entities)} spans)"))
    return out
