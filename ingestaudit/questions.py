"""Labelled questions: ``questions.jsonl`` at the corpus root (DESIGN.md, "Questions").

One JSON object per line: ``id``, ``question``, ``relevant`` (evidence items), optional ``filter``, ``class`` and
``answerable``. An evidence item names a document and one of: a span of its reference text (``start``/``end``, code
points, end exclusive), a ``section`` (a heading's text), a ``page`` (1-based), or nothing (the whole document); each
may carry ``grade`` (int >= 1, default 1). Every problem is reported with the file, the line number and the field, and
a bad line never hides the valid ones.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError, model_validator

from ingestaudit.truth import Problem, Truth

Scalar = StrictStr | StrictInt | float | StrictBool


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Evidence(_Strict):
    """One evidence item; ``kind`` is ``span``, ``section``, ``page`` or ``doc`` by the keys it carries."""

    doc: StrictStr = Field(min_length=1)
    start: StrictInt | None = Field(default=None, ge=0)
    end: StrictInt | None = Field(default=None, ge=0)
    section: StrictStr | None = Field(default=None, min_length=1)
    page: StrictInt | None = Field(default=None, ge=1)
    grade: StrictInt = Field(default=1, ge=1)

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

    id: StrictStr = Field(min_length=1)
    question: StrictStr = Field(min_length=1)
    relevant: list[Evidence] = []
    filter: dict[str, Scalar | list[Scalar]] | None = None
    class_: StrictStr | None = Field(default=None, alias="class", min_length=1)
    answerable: StrictBool = True

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
    """The valid questions of a corpus (file order) and every problem found, each with file, line and field."""

    questions: tuple[Question, ...] = ()
    problems: tuple[Problem, ...] = ()

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
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + ("class" if part == "class_" else str(part))
    return out


def load_questions(path: Path, rel: str, truths: Mapping[str, Truth]) -> QuestionSet:
    """Read and validate ``questions.jsonl``.

    Args:
        path: the file.
        rel: its name as shown in problems (relative to the corpus root).
        truths: every document's truth by id (spans are checked against the reference text).

    Checks, each a `Problem` with ``field`` = ``line N: <field path>``: invalid JSON or a non-object line, schema
    errors (unknown keys, wrong types: ``true`` or ``12.0`` are not offsets), duplicate ids, an unknown document, a span
    on a document without reference text, a span outside the reference text. A question with a problem is left out;
    the others are kept. Blank lines are skipped.

    Raises:
        OSError: the file cannot be read (the caller names it).
    """
    questions: list[Question] = []
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    with path.open(encoding="utf-8", errors="strict", newline="") as fh:
        try:
            lines = fh.read().splitlines()
        except UnicodeDecodeError as exc:
            return QuestionSet((), (Problem(rel, "", f"not UTF-8 ({exc.reason} at byte {exc.start})"),))
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"line {n}"
        try:
            raw = json.loads(line)
        except (ValueError, RecursionError) as exc:
            problems.append(Problem(rel, where, f"invalid JSON ({exc})"))
            continue
        if not isinstance(raw, dict):
            problems.append(Problem(rel, where, f"must be a JSON object, not {type(raw).__name__}"))
            continue
        try:
            q = Question.model_validate(raw)
        except ValidationError as exc:
            for err in exc.errors():
                msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
                problems.append(Problem(rel, f"{where}: {_field(err['loc']) or '<line>'}", msg))
            continue
        bad = _evidence_problems(q, truths, rel, where)
        if q.id in seen:
            bad.append(Problem(rel, f"{where}: id", f"duplicate id {q.id!r} (first on line {seen[q.id]})"))
        else:
            seen[q.id] = n
        problems += bad
        if not bad:
            questions.append(q)
    return QuestionSet(tuple(questions), tuple(problems))


def _evidence_problems(q: Question, truths: Mapping[str, Truth], rel: str, where: str) -> list[Problem]:
    out = []
    for i, ev in enumerate(q.relevant):
        field = f"{where}: relevant[{i}]"
        truth = truths.get(ev.doc)
        if truth is None:
            out.append(Problem(rel, f"{field}.doc", f"unknown document {ev.doc!r} (no docs/{ev.doc}.*)"))
            continue
        if ev.kind != "span":
            continue
        if truth.text is None:
            out.append(Problem(rel, field, f"a span needs the reference text of {ev.doc!r} (truth/{ev.doc}.txt)"))
        elif ev.end > len(truth.text):  # type: ignore[operator]
            out.append(Problem(rel, field, f"span [{ev.start}, {ev.end}) is outside the reference text of "
                                           f"{ev.doc!r} ({len(truth.text)} code points)"))
    return out


def filter_passes(flt: Mapping[str, Any] | None, metadata: Mapping[str, Any]) -> bool:
    """True when ``metadata`` satisfies every field of the hard filter ``flt`` (a value, or a list of accepted
    values); a field missing from the metadata fails. None or an empty filter passes everything."""
    if not flt:
        return True
    for key, want in flt.items():
        if key not in metadata:
            return False
        accepted = want if isinstance(want, list) else [want]
        if metadata[key] not in accepted:
            return False
    return True
