"""Boilerplate metrics: span precision/recall by hand, the alignment that locates removed characters, trafilatura's
segment rule and the Scrapinghub bag-of-shingles scores."""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestaudit.metrics.boilerplate import (
    align_removal,
    normalize_segment,
    segment_counts,
    shingle_counts,
    shingles,
    span_counts,
)

TEXT = "Home | About\nReal content here.\nPage 1 of 2"


def span(start, end, type_="boilerplate"):
    return SimpleNamespace(start=start, end=end, type=type_)


SPANS = [span(0, 12, "nav"), span(32, 43, "page_number")]


def kept_text(source: str, output: str) -> str:
    r = align_removal(source, output)
    return "".join(c for i, c in enumerate(source) if r.kept[i])


# --- the acceptance cases ------------------------------------------------------------------------------------------
# TEXT has 34 non-whitespace characters: "Home|About" 10, "Realcontenthere." 16, "Page1of2" 8.
# Labelled (non-whitespace inside the spans): 10 + 8 = 18.

def test_spans_index_the_labelled_strings():
    assert TEXT[0:12] == "Home | About" and TEXT[32:43] == "Page 1 of 2"


def test_removing_exactly_the_boilerplate_is_perfect():
    c = span_counts(TEXT, "Real content here.", SPANS)
    # removed = the 18 labelled characters, all of them labelled
    assert (c.total, c.removed, c.labelled, c.removed_labelled, c.inserted) == (34, 18, 18, 18, 0)
    assert c.precision == 1.0 and c.recall == 1.0 and c.f1 == 1.0
    assert c.leaked == () and c.wrongly_removed == ()


def test_unchanged_text_has_zero_recall_and_undefined_precision():
    c = span_counts(TEXT, TEXT, SPANS)
    assert c.removed == 0 and c.recall == 0.0
    assert c.precision is None  # nothing removed: undefined, never 0
    assert c.f1 == 0.0  # 2·0 / (0 + 18)
    assert [(s["start"], s["end"], s["kept_chars"], s["chars"]) for s in c.leaked] == [(0, 12, 10, 10),
                                                                                       (32, 43, 8, 8)]


def test_cutting_into_the_content_costs_precision_only():
    c = span_counts(TEXT, "content here.", SPANS)
    # removed = 18 labelled + "Real" (4) = 22; all 18 labelled removed
    assert (c.removed, c.removed_labelled, c.labelled) == (22, 18, 18)
    assert Fraction(c.removed_labelled, c.removed) == Fraction(18, 22) and c.precision == 18 / 22
    assert c.recall == 1.0
    assert c.f1 == 2 * 18 / (22 + 18)
    assert c.wrongly_removed == ({"start": 13, "end": 17, "text": "Real", "chars": 4},)


# --- more hand-worked cases ----------------------------------------------------------------------------------------

def test_whitespace_changes_remove_nothing():
    c = span_counts(TEXT, "Home | About Real content here.   Page 1 of 2\n\n", SPANS)
    assert c.removed == 0 and c.inserted == 0


def test_empty_output_removes_everything():
    c = span_counts(TEXT, "", SPANS)
    # 34 removed, 18 of them labelled: P = 18/34, R = 1
    assert (c.removed, c.removed_labelled) == (34, 18)
    assert c.precision == 18 / 34 and c.recall == 1.0


def test_a_rewritten_character_counts_as_removed_and_inserted():
    # "here." -> "here!": the "." is not in the output (removed, unlabelled); "!" is inserted
    c = span_counts(TEXT, "Real content here!", SPANS)
    assert (c.removed, c.removed_labelled, c.inserted) == (19, 18, 1)
    assert c.wrongly_removed[0]["text"] == "."


def test_overlapping_spans_count_once_and_by_type():
    spans = [span(0, 12, "nav"), span(7, 12, "menu")]  # "About" labelled twice
    c = span_counts(TEXT, "About\nReal content here.\nPage 1 of 2", spans)
    # labelled non-whitespace: "Home|About" = 10 (not 15); removed: "Home|" = 5, all labelled
    assert (c.labelled, c.removed, c.removed_labelled) == (10, 5, 5)
    assert c.by_type == {"menu": (0, 5), "nav": (5, 10)}
    assert [(s["type"], s["kept_chars"]) for s in c.leaked] == [("nav", 5), ("menu", 5)]


def test_no_spans_means_recall_is_undefined_and_removals_are_false_positives():
    c = span_counts("Hello world", "Hello", [])
    assert (c.labelled, c.removed, c.removed_labelled) == (0, 5, 0)
    assert c.recall is None and c.precision == 0.0 and c.f1 == 0.0


def test_nothing_labelled_nothing_removed_has_no_f1():
    c = span_counts("Hello world", "Hello world", [])
    assert c.precision is None and c.recall is None and c.f1 is None


def test_span_outside_the_text_is_an_error():
    with pytest.raises(ValueError, match="outside"):
        span_counts("abc", "abc", [span(1, 9)])
    with pytest.raises(TypeError):
        align_removal("abc", None)  # type: ignore[arg-type]


# --- where the alignment puts the kept text ------------------------------------------------------------------------

def test_the_alignment_keeps_the_whole_word_not_scattered_letters():
    # A character-level LCS can match "Re" of "Related" and "al" of "Real": the word alignment does not.
    assert kept_text("Related: Real content", "Real content") == "Realcontent"
    r = align_removal("Related: Real content", "Real content")
    assert r.kept[9:13].all() and not r.kept[:8].any()


def test_a_repeated_word_is_kept_next_to_the_kept_text():
    src = "Home the news\nthe real content"
    r = align_removal(src, "the real content")
    assert not r.kept[:13].any()  # "Home the news" removed, including its "the"
    assert r.kept[14:17].all()


def test_a_cut_word_is_aligned_by_characters():
    # "content" -> "ntent": "co" removed, the rest kept
    assert kept_text(TEXT, "ntent here.") == "ntenthere."


def test_difflib_short_cut_falls_back_to_an_exact_lcs():
    # difflib's longest block first would match "ab" at the start and lose the leading "b" of the output;
    # the LCS of "abXab" and "bab" is 3 and every output character is matched
    r = align_removal("abXab", "bab")
    assert r.inserted == 0 and r.removed_count == 2


# --- properties ----------------------------------------------------------------------------------------------------

WORDS = st.lists(st.sampled_from(["the", "a", "news", "Home", "content", "page", "1", "of", "2", "x|y", "été"]),
                 min_size=0, max_size=40)


@settings(max_examples=150, deadline=None)
@given(WORDS, st.data())
def test_whole_word_deletions_are_located_exactly(words, data):
    seps = data.draw(st.lists(st.sampled_from([" ", "\n", "  ", "\t"]), min_size=len(words), max_size=len(words)))
    source = "".join(w + s for w, s in zip(words, seps))
    keep = data.draw(st.lists(st.booleans(), min_size=len(words), max_size=len(words)))
    out_words = [w for w, k in zip(words, keep) if k]
    output = "\n".join(out_words)
    r = align_removal(source, output)
    # every output character is matched, the kept characters spell the output, and only they are kept
    assert r.inserted == 0
    assert kept_text(source, output) == "".join(out_words)
    assert r.removed_count == sum(len(w) for w, k in zip(words, keep) if not k)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="ab c\nXé", max_size=40), st.text(alphabet="ab c\nXé", max_size=40),
       st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=4))
def test_counts_are_consistent_and_rates_bounded(source, output, raw_spans):
    spans = [span(min(a, b, len(source)), min(max(a, b), len(source))) for a, b in raw_spans]
    c = span_counts(source, output, spans)
    out_nonspace = sum(not ch.isspace() for ch in output)
    assert 0 <= c.removed_labelled <= min(c.removed, c.labelled)
    assert c.total - c.removed + c.inserted == out_nonspace  # kept + inserted = output characters
    # the kept characters, in order, are a subsequence of the output (the alignment is monotone)
    it = iter(ch for ch in output if not ch.isspace())
    assert all(ch in it for ch in kept_text(source, output))
    for v in (c.precision, c.recall, c.f1):
        assert v is None or 0.0 <= v <= 1.0


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="ab cdX\n", max_size=30), st.text(alphabet="ab cdX\n", max_size=30))
def test_kept_characters_are_a_longest_common_subsequence(source, output):
    # independent check: a textbook LCS dynamic programme over the non-whitespace characters
    a = [ch for ch in source if not ch.isspace()]
    b = [ch for ch in output if not ch.isspace()]
    dp = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a)):
        for j in range(len(b)):
            dp[i + 1][j + 1] = dp[i][j] + 1 if a[i] == b[j] else max(dp[i][j + 1], dp[i + 1][j])
    assert len(a) - align_removal(source, output).removed_count == dp[len(a)][len(b)]


@given(st.text(max_size=60))
def test_identity_removes_nothing(text):
    r = align_removal(text, text)
    assert r.removed_count == 0 and r.inserted == 0


# --- segments ------------------------------------------------------------------------------------------------------

def test_segment_rule_is_whitespace_normalized_substring():
    out = "Intro\n\nDie GEMA dreht\u00a0völlig  am Zeiger!\nImpressum"
    c = segment_counts(out, ["Die GEMA dreht völlig am Zeiger!", "http://www.openpetition.de"],
                       ["31. Mai", "Impressum", "Steuerdarling"])
    # with: first present (NBSP and double space collapse), second missing -> 1/2
    # without: "Impressum" leaked, the two others absent -> 2/3
    assert (c.with_present, c.with_total, c.without_absent, c.without_total) == (1, 2, 2, 3)
    assert c.content_retention == 0.5 and c.removal_recall == 2 / 3
    assert c.missing == ("http://www.openpetition.de",) and c.leaked == ("Impressum",)


def test_segments_are_case_and_punctuation_sensitive_and_empty_ones_ignored():
    c = segment_counts("hello world", ["Hello world", "hello world", "  \n"], [])
    assert (c.with_present, c.with_total) == (1, 2) and c.ignored == ("  \n",)
    assert c.removal_recall is None
    assert normalize_segment("  a\t\nb  ") == "a b"


# --- shingles ------------------------------------------------------------------------------------------------------

def test_shingles_by_hand():
    # reference tokens: a b c d e -> 4-shingles (a b c d), (b c d e)
    # output tokens:    x a b c d -> (x a b c), (a b c d)   ("," and "!" are not tokens)
    c = shingle_counts("x, a b c d!", "a b c d e")
    assert (c.matched, c.output_shingles, c.reference_shingles) == (1, 2, 2)
    assert c.precision == 0.5 and c.recall == 0.5 and c.f1 == 0.5


def test_shingles_are_a_bag():
    # reference "a b a b" with n=1: {a: 2, b: 2}; output "a a a": {a: 3}; matched = min(3, 2) = 2
    c = shingle_counts("a a a", "a b a b", n=1)
    assert (c.matched, c.output_shingles, c.reference_shingles) == (2, 3, 4)


def test_short_and_empty_texts():
    assert shingles("two words", 4) == {("two", "words"): 1}  # fewer than n tokens: one shingle
    assert shingles("  ", 4) == {}
    c = shingle_counts("", "some main text here")
    assert c.precision is None and c.recall == 0.0 and c.f1 == 0.0
    assert shingle_counts("", "").f1 is None
    with pytest.raises(ValueError):
        shingles("a", 0)


@given(st.text(max_size=80))
def test_shingle_identity_is_perfect(text):
    c = shingle_counts(text, text)
    if c.output_shingles:
        assert c.precision == c.recall == c.f1 == 1.0
