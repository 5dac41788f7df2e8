"""CER / WER: hand-worked cases, jiwer cross-checks and properties against a naive Levenshtein DP."""

from __future__ import annotations

import unicodedata

import jiwer
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestaudit.metrics.edit import align, cer, tokenize, wer
from ingestaudit.metrics.normalize import normalize


def naive_levenshtein(a: list[str], b: list[str]) -> int:
    """Textbook O(nm) dynamic programme, independent of rapidfuzz/jiwer."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j - 1] + (x != y), prev[j] + 1, cur[j - 1] + 1)
        prev = cur
    return prev[-1]


MARS_REF = "Mars has two moons, Phobos and Deimos."
MARS_HYP = "Mars has two m00ns, Phobos and Deirnos."


def test_seed_worked_example_cer():
    # Reference: 4+1+3+1+3+1+6+1+6+1+3+1+7 = 38 code points.
    # "moons" -> "m00ns": 2 substitutions; "Deimos" -> "Deirnos": m -> r (substitution) + n (insertion).
    # S = 3, D = 0, I = 1 -> CER = 4 / 38 = 0.10526
    c = align(MARS_REF, MARS_HYP, "char")
    assert (c.substitutions, c.deletions, c.insertions) == (3, 0, 1)
    assert c.ref_len == 38 and c.errors == 4
    assert round(cer(MARS_REF, MARS_HYP), 3) == 0.105
    assert cer(MARS_REF, MARS_HYP) == pytest.approx(jiwer.cer(MARS_REF, MARS_HYP))


def test_seed_worked_example_wer():
    # 7 reference words; "moons," -> "m00ns," and "Deimos." -> "Deirnos." are 2 substitutions: 2 / 7 = 0.28571
    c = align(MARS_REF, MARS_HYP, "word")
    assert (c.substitutions, c.deletions, c.insertions, c.ref_len) == (2, 0, 0, 7)
    assert round(wer(MARS_REF, MARS_HYP), 3) == 0.286
    assert wer(MARS_REF, MARS_HYP) == pytest.approx(jiwer.wer(MARS_REF, MARS_HYP))


def test_empty_reference_is_no_reference_not_jiwers_unbounded_number():
    assert jiwer.cer("", "abcde") == 5  # upstream: the insertion count, an unbounded "rate"
    c = align("", "abcde")
    assert c.state == "no_reference" and c.rate is None and c.message
    assert c.insertions == 5 and c.ref_len == 0
    assert cer("", "abcde") is None
    assert wer("   \n", "a b") is None


def test_empty_output_is_all_deletions_and_flagged():
    # 3 reference characters, no output: D = 3, CER = 3 / 3 = 1.0
    for hyp in ("", "  \n "):
        c = align("abc", hyp)
        assert (c.deletions, c.substitutions, c.insertions, c.hits) == (3, 0, 0, 0)
        assert c.rate == 1.0 and c.empty_output and c.state == "ok"
    assert align("a b", "", "word").rate == 1.0
    assert not align("abc", "x").empty_output


def test_cafe_nfc_vs_nfd():
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    assert unicodedata.normalize("NFD", nfc) == nfd
    # code points: c a f é (4) vs c a f e U+0301 (5): é -> e substitution + U+0301 insertion = 2 / 4
    assert cer(nfc, nfd) == 0.5
    assert cer(normalize(nfc), normalize(nfd)) == 0.0


def test_ligature_ffi():
    # "efficient" (9) vs "e" U+FB03 "cient" (7): f -> U+FB03 substitution, f and i deleted: 3 / 9
    assert cer("efficient", "e\ufb03cient") == pytest.approx(1 / 3)
    assert cer(normalize("efficient"), normalize("e\ufb03cient")) == 0.0


def test_soft_hyphen():
    ref, hyp = "information", "infor\u00admation"
    assert cer(ref, hyp) == pytest.approx(1 / 11)  # one inserted U+00AD over 11 reference code points
    assert "\u00ad" in unicodedata.normalize("NFKC", hyp)  # NFKC alone keeps the soft hyphen...
    assert cer(ref, unicodedata.normalize("NFKC", hyp)) == pytest.approx(1 / 11)
    assert cer(normalize(ref), normalize(hyp)) == 0.0  # ...the profile removes it
    assert cer(normalize(ref), normalize("infor\u00ad\nmation")) == 0.0  # and rejoins it across a line break


def test_duplicated_heading():
    # "HEADING\nHEADING" vs "HEADING": 7 hits, 8 insertions ("\n" + "HEADING") -> 8 / 7
    c = align("HEADING", "HEADING\nHEADING")
    assert (c.hits, c.insertions, c.ref_len) == (7, 8, 7)
    assert cer("HEADING", "HEADING\nHEADING") == pytest.approx(8 / 7)


def test_corpus_micro_example_counts():
    # doc 1: 10 words, identical output -> 0 / 10; doc 2: "x" vs "y" -> 1 substitution / 1 word
    d1 = align("a b c d e f g h i j", "a b c d e f g h i j", "word")
    d2 = align("x", "y", "word")
    assert (d1.errors, d1.ref_len) == (0, 10)
    assert (d2.errors, d2.ref_len) == (1, 1)
    # what the report's aggregator does with these counts: micro = sum/sum, macro = mean of rates
    assert (d1.errors + d2.errors) / (d1.ref_len + d2.ref_len) == pytest.approx(1 / 11)
    assert (d1.rate + d2.rate) / 2 == 0.5


def test_words_split_on_any_white_space_unlike_jiwer_default():
    # jiwer's wer_default only splits on " " after collapsing runs of 2+ white-space characters: "a\nb" is one word
    assert jiwer.wer("a b", "a\nb") == 1.0
    assert wer("a b", "a\nb") == 0.0
    assert tokenize("a\u00a0b\tc\n\nd", "word") == ["a", "b", "c", "d"]


def test_char_tokens_strip_ends_like_jiwer():
    assert tokenize("  ab c\n", "char") == ["a", "b", " ", "c"]
    assert cer(" abc ", "abc") == 0.0 == jiwer.cer(" abc ", "abc")


def test_grapheme_unit():
    # NFD "café" is 4 grapheme clusters (e + U+0301 is one): one substitution / 4 = 0.25 (code points: 0.5)
    assert tokenize("cafe\u0301", "grapheme") == ["c", "a", "f", "e\u0301"]
    assert cer("caf\u00e9", "cafe\u0301", unit="grapheme") == 0.25


def test_unknown_unit():
    with pytest.raises(ValueError, match="unknown unit"):
        align("a", "b", "byte")  # type: ignore[arg-type]


text = st.text(alphabet="ab c\n\u00e9", max_size=25)


@settings(max_examples=300, deadline=None)
@given(text, text)
def test_counts_agree_with_naive_dp(ref, hyp):
    for unit in ("char", "word", "grapheme"):
        r, h = tokenize(ref, unit), tokenize(hyp, unit)
        c = align(ref, hyp, unit)
        assert c.hyp_len == len(h) == c.hits + c.substitutions + c.insertions
        if not r:
            assert c.state == "no_reference" and c.rate is None
            continue
        assert c.ref_len == len(r)
        assert c.errors == naive_levenshtein(r, h)
        assert c.rate >= 0
        assert abs(len(r) - len(h)) <= c.errors <= max(len(r), len(h))


JIWER_WORDS = jiwer.Compose([jiwer.RemoveWhiteSpace(replace_by_space=True), jiwer.RemoveMultipleSpaces(),
                             jiwer.Strip(), jiwer.ReduceToListOfListOfWords()])


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abc \n\t\u00e9", max_size=30), st.text(alphabet="abc \n\t\u00e9", max_size=30))
def test_counts_equal_jiwers(ref, hyp):
    """align() makes jiwer's rapidfuzz call itself; its counts must be jiwer's (white space here is ASCII, which is
    all jiwer's RemoveWhiteSpace knows)."""
    if ref.strip():
        j = jiwer.process_characters(ref, hyp)
        c = align(ref, hyp, "char")
        assert (c.substitutions, c.deletions, c.insertions, c.hits) == \
            (j.substitutions, j.deletions, j.insertions, j.hits)
    if ref.split():
        j = jiwer.process_words(ref, hyp, JIWER_WORDS, JIWER_WORDS)
        c = align(ref, hyp, "word")
        assert (c.substitutions, c.deletions, c.insertions, c.hits) == \
            (j.substitutions, j.deletions, j.insertions, j.hits)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_identity_is_perfect(s):
    for unit in ("char", "word", "grapheme"):
        c = align(s, s, unit)
        assert c.rate in (0.0, None)
        assert (c.rate is None) == (not tokenize(s, unit))
