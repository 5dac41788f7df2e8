"""Metadata fields (title, authors, date...): exact match and normalised Levenshtein similarity after a named profile.

For one field of one document, with ``a`` the labelled value and ``b`` the extracted one, both after the field
profile ``f`` (a named pipeline of case, white-space and Unicode-form steps, printed with every number):

    exact_match(a, b) = 1 if f(a) == f(b) else 0
    similarity(a, b)  = 1 - lev(f(a), f(b)) / max(|f(a)|, |f(b)|)   (1 when both are empty)

``lev`` is the Levenshtein distance with unit costs over code points (``rapidfuzz.distance.Levenshtein``), the
"normalised Levenshtein similarity" of Yujian & Bo (2007, eq. 1's simple form); range [0, 1].

A list value (``authors``) is compared as the ``"; "``-joined, sorted list of its normalised items, so order does
not count. A date field is compared as a date: both sides are parsed and written as ISO 8601 at the precision the
text gives (``2023``, ``2023-05``, ``2023-05-03``); an extracted date that does not parse is a *parse failure*
(exact match 0, no similarity) and counted; a labelled date that does not parse is bad input (ValueError).

Dates and years (`EXACT_ONLY_FIELDS`) are right or wrong: their similarity is their exact match, 1 or 0. A
character distance means nothing for them (``2023`` against ``2021`` would be 0.75 similar, a day off 0.9, while a
wrong year excludes the document from every filter on it).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from dateutil import parser as date_parser
from rapidfuzz.distance import Levenshtein

from ingestaudit.metrics.normalize import casefold, collapse_whitespace

DATE_FIELDS = frozenset({"date"})
"""Fields compared as dates."""

EXACT_ONLY_FIELDS = DATE_FIELDS | {"year"}
"""Fields whose similarity is their exact match (1 or 0), never a partial score (module docstring)."""


def _nfkc(text: str) -> str:
    """Unicode compatibility composition (NFKC)."""
    return unicodedata.normalize("NFKC", text)


@dataclass(frozen=True)
class FieldProfile:
    """A named normalisation of field values: ``profile(value)`` applies ``steps`` left to right.

    Attributes:
        name: printed next to every number computed after it (``"field-v1"``).
        steps: the transforms, each ``str -> str``.
        description: one line for the report and docs.
    """

    name: str
    steps: tuple[Callable[[str], str], ...]
    description: str

    def __call__(self, value: str) -> str:
        for step in self.steps:
            value = step(value)
        return value


FIELD_PROFILES: dict[str, FieldProfile] = {p.name: p for p in (
    FieldProfile("none", (), "the values as given"),
    FieldProfile("field-v1", (_nfkc, casefold, collapse_whitespace),
                 "Unicode NFKC, case folded, white space collapsed and stripped"),
    FieldProfile("field-cased", (_nfkc, collapse_whitespace), "Unicode NFKC, white space collapsed; case kept"),
)}
"""The named field profiles."""

DEFAULT_FIELD_PROFILE = "field-v1"
"""The profile used unless another is named."""


def get_field_profile(name: str) -> FieldProfile:
    """The profile called ``name``. Raises KeyError naming the known profiles."""
    try:
        return FIELD_PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown field profile {name!r}; known: {', '.join(sorted(FIELD_PROFILES))}") from None


def levenshtein_similarity(a: str, b: str) -> float:
    """1 - lev(a, b) / max(|a|, |b|) in [0, 1] over code points; 1.0 when both are empty."""
    longest = max(len(a), len(b))
    return 1.0 if longest == 0 else 1.0 - Levenshtein.distance(a, b) / longest


_DEFAULTS = (datetime(2000, 1, 1), datetime(2001, 2, 2))


def parse_date(text: str) -> str | None:
    """``text`` as ISO 8601 at the precision it gives (``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD``), or ``None``.

    Parsed with ``dateutil.parser.parse`` twice with two different default dates: a component that changes with
    the default was not in the text, which sets the precision; a text without a year does not parse. Times are
    dropped.
    """
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        one, two = (date_parser.parse(text, default=d) for d in _DEFAULTS)
    except (ValueError, OverflowError):
        return None
    if one.year != two.year:
        return None
    if one.month != two.month:
        return f"{one.year:04d}"
    if one.day != two.day:
        return f"{one.year:04d}-{one.month:02d}"
    return one.date().isoformat()


@dataclass(frozen=True)
class FieldComparison:
    """One field of one document.

    Attributes:
        field: the field name.
        truth, extracted: the compared forms (after the profile, or ISO dates); ``extracted`` is ``None`` on a
            date parse failure.
        exact_match: 1 or 0.
        similarity: in [0, 1], ``None`` on a date parse failure; 1 or 0 for a date or year (`EXACT_ONLY_FIELDS`).
        parse_failure: the extracted date did not parse.
        profile: the profile's name.
    """

    field: str
    truth: str
    extracted: str | None
    exact_match: int
    similarity: float | None
    parse_failure: bool
    profile: str


def _as_text(value: object, profile: FieldProfile, field: str) -> str:
    if isinstance(value, str):
        return profile(value)
    if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        return "; ".join(sorted(profile(v) for v in value))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return profile(str(value))
    raise ValueError(f"field {field!r}: value {value!r} is not a string, number or list of strings")


def compare_field(field: str, truth: object, extracted: object,
                  profile: str = DEFAULT_FIELD_PROFILE) -> FieldComparison:
    """Compare one field's labelled and extracted values (see the module docstring).

    Raises:
        ValueError: a value of another shape, or a labelled date that does not parse (the message names it).
        KeyError: unknown profile.
    """
    prof = get_field_profile(profile)
    if field in DATE_FIELDS:
        gold = parse_date(truth) if isinstance(truth, str) else None
        if gold is None:
            raise ValueError(f"field {field!r}: labelled value {truth!r} is not a date")
        got = parse_date(extracted) if isinstance(extracted, str) else None
        if got is None:
            return FieldComparison(field, gold, None, 0, None, True, prof.name)
        return FieldComparison(field, gold, got, int(gold == got), float(gold == got), False, prof.name)
    gold, got = _as_text(truth, prof, field), _as_text(extracted, prof, field)
    similarity = float(gold == got) if field in EXACT_ONLY_FIELDS else levenshtein_similarity(gold, got)
    return FieldComparison(field, gold, got, int(gold == got), similarity, False, prof.name)
