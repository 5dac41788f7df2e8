"""olmOCR-style present / absent / order checks with a max_diffs edit tolerance."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Levenshtein

from ingestaudit.metrics.checks import (
    absent, fuzzy_ends, fuzzy_starts, order, present, run_check, run_checks, substring_distance,
)
from ingestaudit.truth import OrderCheck, TextCheck


def naive_sellers(pattern: str, text: str) -> dict[int, int]:
    """end -> min over s of Lev(pattern, text[s:end]); textbook O(nm) DP with a free start (Sellers 1980)."""
    m = len(pattern)
    prev = list(range(m + 1))
    ends = {}
    for j, c in enumerate(text, 1):
        cur = [0] + [0] * m
        for i in range(1, m + 1):
            cur[i] = min(prev[i - 1] + (pattern[i - 1] != c), prev[i] + 1, cur[i - 1] + 1)
        ends[j] = cur[m]
        prev = cur
    return ends


def test_present_exact_and_with_tolerance():
    out = "Mars has two m00ns, Phobos and Deirnos."
    assert present(out, "Phobos").passed
    r = present(out, "two moons", 0)
    assert not r.passed and r.distance is None and "'two m00ns'" in r.message  # the nearest window is quoted
    assert substring_distance("two moons", out) == 2  # o -> 0 twice
    r = present(out, "two moons", 2)
    assert r.passed and r.distance == 2
    assert not present(out, "two moons", 1).passed
    assert present(out, "Deimos", 2).passed  # "Deirnos": m -> r + inserted n = 2 edits


def test_absent():
    out = "Page 3 of 10\nBody text."
    assert absent(out, "Downloaded from").passed
    r = absent(out, "Page 3 of 10")
    assert not r.passed and r.distance == 0
    assert not absent(out, "Page 4 of 10", 1).passed  # one substitution away


def test_order():
    out = "Title. First paragraph. Second paragraph."
    assert order(out, "First", "Second").passed
    r = order(out, "Second", "First")
    assert not r.passed and "does not start before" in r.message
    assert not order(out, "Third", "Second").passed
    assert "'after' not found" in order(out, "First", "Fourth").message
    # the rule compares the earliest 'before' start with the latest 'after' start
    assert order("B A B", "B", "A").passed


def test_two_column_page_order_fails_for_stream_and_interleaved_order():
    left = ["The left column opens the article", "and carries its argument", "to a first conclusion."]
    right = ["The right column continues it", "with further evidence", "and ends the article."]
    natural = "\n".join(left + right)
    content_stream = "\n".join(right + left)  # the right column was written first into the PDF content stream
    interleaved = "\n".join(x for pair in zip(left, right) for x in pair)  # sort=True: line by line across columns
    check = OrderCheck(type="order", before="to a first conclusion.", after="The right column continues it")
    assert run_check(check, natural).passed
    assert not run_check(check, content_stream).passed
    assert not run_check(check, interleaved).passed
    # a present check spanning two lines of the left column also breaks with interleaving
    span = TextCheck(type="present", text="and carries its argument to a first conclusion.")
    assert run_check(span, natural).passed and run_check(span, content_stream).passed
    assert not run_check(span, interleaved).passed


def test_olmocr_semantics_differ_from_edit_distance():
    # Query abcdefghij, output with two inner transpositions (cd -> dc, gh -> hg), max_diffs 3.
    # Edit distance: each inner transposition costs 2 -> 4 > 3: fails.
    # olmOCR: partial_ratio = Indel similarity of the best 10-character window "abdcefhgij":
    #   LCS = 8, Indel distance = 10 + 10 - 2 * 8 = 4, ratio = 1 - 4 / 20 = 0.80 >= 1 - 3 / 10 = 0.70: passes.
    out = "zz abdcefhgij zz"
    lev = present(out, "abcdefghij", 3)
    olm = present(out, "abcdefghij", 3, semantics="olmocr")
    assert not lev.passed and substring_distance("abcdefghij", out) == 4
    assert olm.passed and olm.similarity == pytest.approx(0.80)
    # substitutions only: the two agree (one substitution: ratio 1 - 2/20 = 0.9 = threshold 1 - 1/10)
    assert present("abcdeXghij", "abcdefghij", 1).passed
    assert present("abcdeXghij", "abcdefghij", 1, semantics="olmocr").passed


def test_olmocr_length_guard():
    # partial_ratio("a long phrase", " ") is 100 (the lone space matches); olmOCR's guard fails the present check
    # and passes the absent check when the output is shorter than len(query) - max_diffs
    assert not present(" ", "a long phrase", semantics="olmocr").passed
    assert absent(" ", "a long phrase", semantics="olmocr").passed
    assert not present(" ", "a long phrase").passed


def test_validation():
    with pytest.raises(ValueError, match="empty"):
        present("abc", "")
    with pytest.raises(ValueError, match="would match anywhere"):
        present("abc", "xy", 2)
    with pytest.raises(ValueError, match="unknown semantics"):
        present("abc", "ab", semantics="fuzzy")  # type: ignore[arg-type]


def test_run_check_normalizes_both_sides():
    out = "An e\ufb03cient infor\u00ad\nmation \u201cpipeline\u201d"
    assert run_check(TextCheck(type="present", text="efficient information \"pipeline\""), out).passed
    assert not run_check(TextCheck(type="present", text="efficient"), out, profile="none").passed
    assert not run_check(TextCheck(type="present", text="EFFICIENT"), out).passed
    loose = SimpleNamespace(type="present", text="EFFICIENT", max_diffs=0, case_sensitive=False)
    assert run_check(loose, out).passed


def test_run_checks_keeps_invalid_checks_in_place():
    # model_construct: the truth schema rejects this check; the auditor must still defend against it
    checks = [TextCheck(type="present", text="abc"), TextCheck.model_construct(type="absent", text="xy", max_diffs=2),
              OrderCheck(type="order", before="abc", after="def")]
    res = run_checks(checks, "abc def")
    assert res[0].passed
    assert isinstance(res[1], ValueError)  # 2 edits turn "xy" into the empty string: vacuous, rejected
    assert res[2].passed


pattern_st = st.text(alphabet="abc", min_size=1, max_size=7)
text_st = st.text(alphabet="abcd", max_size=30)


@settings(max_examples=400, deadline=None)
@given(pattern_st, text_st, st.integers(0, 6))
def test_myers_agrees_with_naive_dp(pattern, text, k):
    ends = naive_sellers(pattern, text)
    assert substring_distance(pattern, text) == min([len(pattern)] + list(ends.values()))
    if k >= len(pattern):
        return
    assert fuzzy_ends(pattern, text, k) == sorted((e, d) for e, d in ends.items() if d <= k)
    starts = sorted({s for s in range(len(text)) for e in range(s, len(text) + 1)
                     if Levenshtein.distance(pattern, text[s:e]) <= k})
    assert fuzzy_starts(pattern, text, k) == starts


@settings(max_examples=200, deadline=None)
@given(text_st, pattern_st)
def test_present_and_absent_are_complements(text, pattern):
    k = len(pattern) // 2
    assert present(text, pattern, k).passed != absent(text, pattern, k).passed
    assert present(text + pattern + text, pattern).passed  # identity: the exact string is present
