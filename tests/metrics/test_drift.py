"""Normalization drift counts of one text, each worked by hand."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ingestaudit.metrics.drift import drift_counts


def test_cafe_nfd_is_one_non_nfc_sequence():
    c = drift_counts("cafe\u0301")
    assert c.non_nfc_sequences == 1 and c.examples["non_nfc_sequences"] == ["U+0065 U+0301"]
    assert not c.nfkc_differs and c.nfkc_changed_chars == 0  # a canonical difference only
    assert drift_counts("caf\u00e9").non_nfc_sequences == 0
    # two decomposed letters and one canonical singleton (U+212B ANGSTROM SIGN -> U+00C5) = 3 sequences
    assert drift_counts("re\u0301sume\u0301 \u212b").non_nfc_sequences == 3
    # decomposed Hangul jamo L + V form one grapheme cluster that NFC composes into one syllable
    assert drift_counts("\u1100\u1161").non_nfc_sequences == 1


def test_ligatures_and_nfkc():
    c = drift_counts("e\ufb03cient \ufb01ne")
    assert c.ligatures == 2 and c.nfkc_changed_chars == 2 and c.nfkc_differs
    assert c.examples["ligatures"] == ["U+FB01", "U+FB03"]
    # NBSP and a superscript are compatibility characters but neither ligatures nor invisible
    c = drift_counts("10\u00a0m\u00b2")
    assert (c.nfkc_changed_chars, c.ligatures, c.invisible_chars) == (2, 0, 0)


def test_invisible_characters():
    c = drift_counts("infor\u00admation\u200b \u200c\u200d\u2060\ufeffx \u200e")
    assert c.invisible_chars == 6  # U+200E (LRM) is not in the listed set
    assert c.nfkc_changed_chars == 0  # NFKC keeps all of them


def test_replacement_characters():
    assert drift_counts("Stra\ufffde \ufffd\ufffd").replacement_chars == 3


def test_mixed_script_tokens():
    # "Рhobos" starts with U+0420 CYRILLIC CAPITAL LETTER ER, a look-alike of Latin P
    c = drift_counts("Рhobos and Phobos")
    assert c.mixed_script_tokens == 1 and c.examples["mixed_script_tokens"] == ["Рhobos"]
    assert c.n_tokens == 3
    # all-Cyrillic and all-Greek words are not mixed; "Δx": Δ has no Latin look-alike
    assert drift_counts("Москва ΑΒΓ Δx").mixed_script_tokens == 0
    # Cyrillic majority with a Latin M (look-alike of Cyrillic М)
    assert drift_counts("Mосква").mixed_script_tokens == 1


def test_mojibake():
    c = drift_counts("Caf\u00c3\u00a9 au lait")  # UTF-8 "é" decoded as Latin-1/cp1252
    assert c.mojibake_suspects == 1 and c.fix_encoding_changes
    clean = drift_counts("Café au lait \u2014 \u201cquoted\u201d")
    assert clean.mojibake_suspects == 0 and not clean.fix_encoding_changes


def test_empty_text():
    c = drift_counts("")
    assert (c.n_chars, c.n_tokens, c.nfkc_differs, c.non_nfc_sequences, c.mojibake_suspects) == (0, 0, False, 0, 0)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_counts_are_bounded(s):
    c = drift_counts(s)
    for n in (c.nfkc_changed_chars, c.invisible_chars, c.ligatures, c.non_nfc_sequences, c.replacement_chars):
        assert 0 <= n <= c.n_chars
    assert 0 <= c.mixed_script_tokens <= c.n_tokens
    assert c.ligatures <= c.nfkc_changed_chars
    assert c.nfkc_differs == (c.nfkc_changed_chars > 0)
