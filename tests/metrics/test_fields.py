"""Metadata field comparison: exact match, normalised Levenshtein similarity, dates as dates."""

import pytest
from rapidfuzz.distance import Levenshtein

from ingestaudit.metrics.fields import (DEFAULT_FIELD_PROFILE, compare_field, levenshtein_similarity,
                                        parse_date)


def test_title_annual_report_by_hand():
    c = compare_field("title", "Annual Report 2023", "Annual report, 2023")
    # field-v1 folds case: "annual report 2023" (18) vs "annual report, 2023" (19): one insertion (the comma)
    assert c.profile == DEFAULT_FIELD_PROFILE == "field-v1"
    assert c.exact_match == 0
    assert c.similarity == pytest.approx(1 - 1 / 19, abs=1e-15)
    # case kept: "R" -> "r" is one more substitution: 1 - 2/19
    assert compare_field("title", "Annual Report 2023", "Annual report, 2023", "field-cased").similarity == \
        pytest.approx(1 - 2 / 19, abs=1e-15)


def test_similarity_agrees_with_rapidfuzz_normalized_similarity():
    for a, b in [("kitten", "sitting"), ("", "abc"), ("abc", "abc"), ("Straße", "strasse")]:
        assert levenshtein_similarity(a, b) == pytest.approx(Levenshtein.normalized_similarity(a, b), abs=1e-15)
    assert levenshtein_similarity("", "") == 1.0
    assert levenshtein_similarity("kitten", "sitting") == pytest.approx(1 - 3 / 7)


def test_profiles_case_whitespace_unicode_form():
    assert compare_field("title", "ﬁle  Name\n", "FILE name").exact_match == 1  # NFKC ligature, case, spaces
    assert compare_field("title", "ﬁle", "file", "none").exact_match == 0
    with pytest.raises(KeyError, match="unknown field profile 'x'"):
        compare_field("title", "a", "a", "x")


def test_authors_compared_as_a_set():
    c = compare_field("authors", ["Ann Lee", "Bo Chen"], ["bo chen", "Ann Lee"])
    assert c.exact_match == 1 and c.truth == "ann lee; bo chen"


def test_dates_compared_as_dates_and_parse_failures_counted():
    assert parse_date("3 May 2023") == "2023-05-03"
    assert parse_date("May 2023") == "2023-05"
    assert parse_date("2023") == "2023"
    assert parse_date("sometime") is None and parse_date("May 3") is None
    same = compare_field("date", "2023-05-03", "May 3, 2023")
    assert (same.exact_match, same.similarity, same.parse_failure) == (1, 1.0, False)
    other = compare_field("date", "2023-05-03", "2023-05-04")
    assert (other.exact_match, other.similarity) == (0, 0.0)  # a day off is wrong: no partial credit (was 0.9)
    failed = compare_field("date", "2023-05-03", "last spring")
    assert (failed.exact_match, failed.similarity, failed.parse_failure) == (0, None, True)
    with pytest.raises(ValueError, match="labelled value 'soon' is not a date"):
        compare_field("date", "soon", "2023")


def test_a_wrong_year_is_similarity_0_not_a_character_distance():
    # "2021" vs "2023": Levenshtein 1 of 4 characters would give 0.75; a year is right or wrong
    wrong = compare_field("year", 2023, "2021")
    assert (wrong.exact_match, wrong.similarity) == (0, 0.0)
    right = compare_field("year", 2023, "2023")  # a number and a string of the same year
    assert (right.exact_match, right.similarity) == (1, 1.0)
    assert compare_field("title", "2023", "2021").similarity == pytest.approx(0.75)  # other fields keep it


def test_metadata_headline_is_the_title_exact_match_rate():
    from ingestaudit.report.tables import choose_keys

    fields = [("metadata.exact_match", f) for f in ("authors", "date", "title", "year")]
    sims = [("metadata.similarity", f) for f in ("authors", "date", "title", "year")]
    assert choose_keys(fields + sims)["metadata"] == ("metadata.exact_match", "title")  # not "authors" (by name)
    # no title labelled anywhere: the first valued field by name
    assert choose_keys(fields, valued={("metadata.exact_match", "date")})["metadata"] == ("metadata.exact_match",
                                                                                          "date")
