"""Labelled questions: ``questions.jsonl`` at the corpus root (DESIGN.md, "Questions").

One JSON object per line: ``id``, ``question``, ``relevant`` (evidence items), optional ``filter``, ``class`` and
``answerable``. An evidence item names a document and one of: a span of its reference text (``start``/``end``, code
points, end exclusive), a ``section`` (a heading's text), a ``page`` (1-based), or nothing (the whole document); each
may carry ``grade`` (int >= 1, default 1). Every problem is reported with the file, the line number and the field, and
a bad line never hides the valid ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError, model_validator

from ingestaudit.document import Document
from ingestaudit.schema_keys import PAGES, unknown_key
from ingestaudit.truth import Problem, Truth

Scalar = StrictStr | StrictInt | float | StrictBool


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Evidence(_Strict):
    """One evidence item; ``kind`` is ``span``, ``section``, ``page`` or ``doc`` by the keys it carries."""

    doc: StrictStr = Field(min_length=1, description="the document id, `<class>/<name>` (as under docs/)")
    start: StrictInt | None = Field(default=None, ge=0, description="a span of the document's reference text: its "
                                                                    "first code point (with end)")
    end: StrictInt | None = Field(default=None, ge=0, description="the span's end, exclusive (after start, inside "
                                                                  "the reference text)")
    section: StrictStr | None = Field(default=None, min_length=1, description="a heading's text: the section under "
                                                                              "it (instead of a span); one of the "
                                                                              "document's labelled headings, white "
                                                                              "space and case aside")
    page: StrictInt | None = Field(default=None, ge=1, description="a page, 1-based (instead of a span or a "
                                   "section), of a paged document: past a PDF's page count or on a format without "
                                   "pages (.txt, .html...) it is a label error; the reference parser cannot check "
                                   "it (such a question is skipped there)")
    grade: StrictInt = Field(default=1, ge=1, description="graded relevance (the gain of graded metrics such as nDCG)")

    @model_validator(mode="after")
    def _one_kind(self) -> "Evidence":
        if (self.start is None) != (self.end is None):
            raise ValueError("a span needs both 'start' and 'end'")
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise ValueError(f"span [{self.start}, {self.end}) is empty or reversed")
        kinds = sum(x is not None for x in (self.start, self.section, self.page))
        if kinds > 1:
            raise ValueError("an evidence item is a span, a section or a page, not several")
        return self

    @property
    def kind(self) -> str:
        """``span``, ``section``, ``page`` or ``doc``."""
        if self.start is not None:
            return "span"
        if self.section is not None:
            return "section"
        if self.page is not None:
            return "page"
        return "doc"


class Question(_Strict):
    """One labelled question. ``filter`` maps a metadata field to a value or a list of accepted values."""

    id: StrictStr = Field(min_length=1, description="unique in the file")
    question: StrictStr = Field(min_length=1, description="the question's text, as a user would ask it")
    relevant: list[Evidence] = Field(default=[], description="the evidence that answers it (required when "
                                                             "answerable, empty when not)")
    filter: dict[str, Scalar | list[Scalar]] | None = Field(
        default=None, description="a hard metadata filter applied before retrieval: field → value or list of "
                                  "accepted values, tested against each chunk's metadata (the truth's metadata, the "
                                  "fields of the pipeline's metadata step, the chunker's, and with an entities step "
                                  "'entities': {TYPE: [texts]}); a dotted field reads into a table ('entities.ORG'), "
                                  "a list value passes when one item is accepted; a field no chunk carries makes the "
                                  "question an error")
    class_: StrictStr | None = Field(default=None, alias="class", min_length=1,
                                     description="the question's stratum (default: the class of its first relevant "
                                                 "document; not '__all__')")
    answerable: StrictBool = Field(default=True, description="false marks an out-of-scope question (no relevant "
                                                             "evidence)")

    @model_validator(mode="after")
    def _evidence_matches_answerable(self) -> "Question":
        if self.answerable and not self.relevant:
            raise ValueError("an answerable question needs 'relevant' evidence (or set \"answerable\": false)")
        if not self.answerable and self.relevant:
            raise ValueError("an out-of-scope question (\"answerable\": false) has no 'relevant' evidence")
        if self.class_ == "__all__":
            raise ValueError("'__all__' is reserved for the overall rows")
        return self


@dataclass(frozen=True)
class QuestionSet:
    """The valid questions of a corpus (file order) and every problem found, each with file, line and field.

    ``rejected``: the well-formed questions left out for their evidence (unknown document, span outside the reference
    text), each with its problems as ``"file: line N: field: message"``, so a stage can give them ``error`` rows
    instead of letting them leave its denominators unsaid (a question whose id repeats an earlier one is not here:
    its rows would be the earlier question's)."""

    questions: tuple[Question, ...] = ()
    problems: tuple[Problem, ...] = ()
    rejected: tuple[tuple[Question, str], ...] = ()
    lines: Mapping[str, int] = field(default_factory=dict)  # question id -> its 1-based line

    def question_class(self, q: Question, doc_classes: Mapping[str, str]) -> str:
        """A question's stratum: its ``class``, else the class of its first relevant document, else ``"unanswerable"``
        for an out-of-scope question without one."""
        if q.class_:
            return q.class_
        if q.relevant:
            return doc_classes.get(q.relevant[0].doc, q.relevant[0].doc.split("/", 1)[0])
        return "unanswerable"


def _field(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        name = "class" if part == "class_" else str(part)
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + name
    return out


def load_questions(path: Path, rel: str, truths: Mapping[str, Truth], limits: Any = None,
                   documents: Mapping[str, Document] | None = None) -> QuestionSet:
    """Read and validate ``questions.jsonl``.

    Args:
        path: the file.
        rel: its name as shown in problems (relative to the corpus root).
        truths: every document's truth by id (spans are checked against the reference text).
        limits: the size limits (`ingestaudit.config.Limits`, default its defaults): a file over
            ``questions_bytes`` is one problem and is never read; a line longer than ``question_line_chars`` or
            nested deeper than ``json_depth`` is a problem of that line (``limit`` set), its question left out.
        documents: the corpus's documents by id: page items are checked against their page count (`page_count`);
            None checks no page.

    Lines are split on ``"\n"`` only (`ingestaudit.jsonlimits.jsonl_lines`): a U+2028 or U+0085 inside a string
    is not a line break. Checks, each a `Problem` with ``field`` = ``line N: <field path>``: invalid JSON or a
    non-object line, schema errors (unknown keys, wrong types: ``true`` or ``12.0`` are not offsets), duplicate ids,
    an unknown document, a span on a document without reference text, a span outside the reference text, a section
    on a document without labelled headings or that is none of them, a page past the document's page count or on a
    document without pages (a ``.txt``). A question with such a problem is left out; the others are kept. An
    evidence item repeated in one question (the same item twice) is a problem too, but its question is kept with
    the item once: repeats never add weight to a question. Blank lines are skipped.

    Raises:
        OSError: the file cannot be read (the caller names it).
    """
    from ingestaudit.config import Limits
    from ingestaudit.jsonlimits import jsonl_lines, loads_limited
    from ingestaudit.truth import over_size

    limits = limits or Limits()
    pages: dict[str, int | None] = {}  # doc id -> `page_count`, counted once per document
    questions: list[Question] = []
    problems: list[Problem] = []
    rejected: list[tuple[Question, str]] = []
    seen: dict[str, int] = {}
    big = over_size(path, rel, limits.questions_bytes, "questions_bytes")
    if big is not None:
        return QuestionSet((), (big,))
    with path.open(encoding="utf-8-sig", errors="strict", newline="") as fh:  # a leading byte-order mark is not a line
        try:
            lines = jsonl_lines(fh.read())
        except UnicodeDecodeError as exc:
            return QuestionSet((), (Problem(rel, "", f"not UTF-8 ({exc.reason} at byte {exc.start})"),))
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"line {n}"
        if len(line) > limits.question_line_chars:
            problems.append(Problem(rel, where, f"{len(line)} code points, over limits.question_line_chars = "
                                                f"{limits.question_line_chars}: not read", limit="question_line_chars"))
            continue
        try:
            raw, past = loads_limited(line, max_depth=limits.json_depth)
        except (ValueError, RecursionError) as exc:
            problems.append(Problem(rel, where, f"invalid JSON ({exc})"))
            continue
        if past:
            problems += [Problem(rel, f"{where}: {p.field or '<line>'}", p.message + (
                f" (limits.json_depth = {limits.json_depth})" if p.kind == "depth" else ""),
                limit="json_depth" if p.kind == "depth" else "") for p in past]
            continue
        if not isinstance(raw, dict):
            problems.append(Problem(rel, where, f"must be a JSON object, not {type(raw).__name__}"))
            continue
        try:
            q = Question.model_validate(raw)
        except ValidationError as exc:
            problems += _schema_problems(exc, rel, where)
            continue
        q, repeats = _once(q, rel, where)
        problems += repeats
        bad = _evidence_problems(q, truths, rel, where) + _page_problems(q, documents, pages, limits, rel, where)
        if q.id in seen:
            bad.append(Problem(rel, f"{where}: id", f"duplicate id {q.id!r} (first on line {seen[q.id]})"))
        else:
            seen[q.id] = n
            if bad:
                rejected.append((q, "; ".join(f"{p.file}: {p.field}: {p.message}" for p in bad)))
        problems += bad
        if not bad:
            questions.append(q)
    return QuestionSet(tuple(questions), tuple(problems), tuple(rejected), dict(seen))


FILTER_VALUE = "must be a string, a number or a boolean, or a list of them"
"""What a ``filter`` field accepts (the message of every wrong filter value)."""


def _schema_problems(exc: ValidationError, rel: str, where: str) -> list[Problem]:
    """One problem per schema error: an unknown key, a wrong type or value with its field path; the alternatives
    pydantic tries for one ``filter`` value become one problem (`FILTER_VALUE`); a rule between fields names the
    field it is about (``relevant`` for the answerable rule, ``class`` for the reserved name)."""
    out: list[Problem] = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        msg = (unknown_key(Question, loc, PAGES["questions"]) if err["type"] == "extra_forbidden"
               else err["msg"].removeprefix("Value error, "))
        if len(loc) >= 2 and loc[0] == "filter" and err["type"] != "extra_forbidden":
            field, msg = _field(loc[:2]), FILTER_VALUE
        elif not loc:
            field = "relevant" if "'relevant'" in msg else ("class" if "'__all__'" in msg else "<line>")
        else:
            field = _field(loc)
        problem = Problem(rel, f"{where}: {field}", msg)
        if problem not in out:
            out.append(problem)
    return out


def section_key(text: str) -> str:
    """How validation matches a ``section`` evidence item to a labelled heading of its document's truth: white-space
    runs collapsed to one space, ends stripped, case folded (``"  Fees\nand  Charges"`` matches ``"fees and
    charges"``). The stage chain matches it to a parser's headings fuzzily (`ingestaudit.chain.section_matches`)."""
    return " ".join(text.split()).casefold()


def _section_problem(section: str, truth: Truth) -> str | None:
    """Why a section item names no labelled heading of its document, or None. The document must label its
    ``headings`` (as a span needs the reference text): a section that no label confirms could only ever be scored
    against a parser's guess, and with ``--parser reference`` it would always be lost."""
    want = section_key(section)
    if not truth.headings:
        return "a section item needs the document's labelled headings (truth JSON \"headings\")"
    if any(section_key(h.text) == want for h in truth.headings):
        return None
    shown = ", ".join(repr(h.text) for h in truth.headings[:5]) + (", ..." if len(truth.headings) > 5 else "")
    return f"section {section!r} is none of the document's {len(truth.headings)} labelled headings ({shown})"


def _evidence_problems(q: Question, truths: Mapping[str, Truth], rel: str, where: str) -> list[Problem]:
    out = []
    for i, ev in enumerate(q.relevant):
        field = f"{where}: relevant[{i}]"
        truth = truths.get(ev.doc)
        if truth is None:
            out.append(Problem(rel, f"{field}.doc", f"unknown document {ev.doc!r} (no docs/{ev.doc}.*)"))
            continue
        if ev.kind == "section":
            why = _section_problem(ev.section or "", truth)
            if why is not None:
                out.append(Problem(rel, f"{field}.section", f"{why}: {ev.doc!r}"))
            continue
        if ev.kind != "span":
            continue
        if truth.text is None:
            out.append(Problem(rel, f"{field}.start", f"a span needs the reference text of {ev.doc!r} "
                                                      f"(truth/{ev.doc}.txt)"))
        elif ev.end > len(truth.text):  # type: ignore[operator]
            out.append(Problem(rel, f"{field}.end", f"span [{ev.start}, {ev.end}) is outside the reference text of "
                                                    f"{ev.doc!r} ({len(truth.text)} code points)"))
    return out


def _once(q: Question, rel: str, where: str) -> tuple[Question, list[Problem]]:
    """``q`` with each repeated evidence item kept once (its first place), and one problem per repeat naming both
    places: 50,000 copies of one item must not outweigh every other question in micro recall."""
    first: dict[Evidence, int] = {}
    problems = []
    for i, ev in enumerate(q.relevant):
        if ev in first:
            problems.append(Problem(rel, f"{where}: relevant[{i}]", f"repeats relevant[{first[ev]}] (the same "
                                    "evidence item): counted once"))
        else:
            first[ev] = i
    if not problems:
        return q, []
    return q.model_copy(update={"relevant": list(first)}), problems


TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".rst", ".html", ".htm", ".xml", ".json", ".jsonl", ".csv",
                           ".tsv", ".eml"})
"""Source formats without pages: a page evidence item on such a document is a label error."""
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp"})
"""Single-page image formats (a TIFF may hold several pages: counted by its frames)."""


def page_count(document: Document, max_bytes: int | None = None) -> int | None:
    """The pages of a source document, for checking page evidence: a PDF's page count (MuPDF), 1 for a
    single-page image, a TIFF's frames (Pillow), 0 for a format without pages (`TEXT_SUFFIXES`); None when it
    cannot be told (another format, a file over ``max_bytes`` (``limits.doc_bytes``) or that does not open, an
    encrypted PDF): such items are not checked here."""
    suffix = document.suffix
    if suffix in TEXT_SUFFIXES:
        return 0
    if suffix in IMAGE_SUFFIXES:
        return 1
    try:
        if max_bytes is not None and document.path.stat().st_size > max_bytes:
            return None
        if suffix == ".pdf":
            import pymupdf

            with pymupdf.open(document.path, filetype="pdf") as doc:
                return None if doc.needs_pass else int(doc.page_count)
        if suffix in (".tif", ".tiff"):
            from PIL import Image

            with Image.open(document.path) as im:
                return int(getattr(im, "n_frames", 1))
    except Exception:  # a file that does not open: its parse reports it; the label is not judged on it
        return None
    return None


def _page_problems(q: Question, documents: Mapping[str, Document] | None, pages: dict[str, int | None],
                   limits: Any, rel: str, where: str) -> list[Problem]:
    """A problem per page item past its document's page count (`page_count`, cached in ``pages``) or on a
    document without pages: a label error, never a page the parser lost."""
    out = []
    for i, ev in enumerate(q.relevant):
        doc = documents.get(ev.doc) if documents is not None and ev.kind == "page" else None
        if doc is None:
            continue
        if ev.doc not in pages:
            pages[ev.doc] = page_count(doc, limits.doc_bytes)
        n = pages[ev.doc]
        if n == 0:
            out.append(Problem(rel, f"{where}: relevant[{i}].page", f"page {ev.page} of {ev.doc!r}: a "
                                    f"{doc.suffix} document has no pages (give a span, a section or the document)"))
        elif n is not None and ev.page > n:  # type: ignore[operator]
            out.append(Problem(rel, f"{where}: relevant[{i}].page", f"page {ev.page} is past the last page of "
                                    f"{ev.doc!r} ({n} page{'s' if n != 1 else ''})"))
    return out


def unknown_filter_fields(qset: QuestionSet, truths: Mapping[str, Truth], rel: str) -> list[Problem]:
    """One problem per question ``filter`` field that no document's truth ``metadata`` carries (a typo, or a field
    only a chunker's own metadata can carry). ``validate`` shows these as warnings: a precomputed pipeline's chunks
    may carry the field; a run makes such a question an ``error`` for each pipeline none of whose chunks carry it.
    ``field`` is ``"line N: filter.<field>"``."""
    known: set[str] = set()
    for t in truths.values():
        known.update(t.metadata or {})
    return [Problem(rel, f"line {qset.lines.get(q.id, '?')}: filter.{key}",
                    f"question {q.id!r}: no document's truth metadata has the field {key!r}")
            for q in qset.questions for key in (q.filter or {}) if key not in known]


def filter_passes(flt: Mapping[str, Any] | None, metadata: Mapping[str, Any]) -> bool:
    """True when ``metadata`` satisfies every field of the hard filter ``flt`` (a value, or a list of accepted
    values); a field missing from the metadata fails. None or an empty filter passes everything.

    A field ``a.b`` not in the metadata itself reads ``metadata["a"]["b"]`` (the chunk's extracted entities:
    ``entities.ORG``, `ingestaudit.document_steps.attach_entities`); a value that is a list (the texts of one
    entity type, a list of authors) passes when one of its items is accepted.
    """
    if not flt:
        return True
    for key, want in flt.items():
        value = metadata_value(metadata, key)
        if value is _ABSENT:
            return False
        accepted = want if isinstance(want, list) else [want]
        if value not in accepted and not (isinstance(value, list) and any(v in accepted for v in value)):
            return False
    return True


_ABSENT = object()


def metadata_value(metadata: Mapping[str, Any], key: str) -> Any:
    """``metadata[key]``, else for a dotted ``key`` the nested value it names (``a.b``: ``metadata["a"]["b"]``);
    `_ABSENT` when there is none."""
    if key in metadata:
        return metadata[key]
    value: Any = metadata
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _ABSENT
        value = value[part]
    return value
