"""Normalization transforms and named profiles: each step by hand, the registry, and idempotence."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestaudit.metrics import normalize as nz
from ingestaudit.metrics.normalize import PROFILES, Profile, get_profile, normalize, register_profile


def test_rejoin_soft_hyphens():
    assert nz.rejoin_soft_hyphens("infor\u00ad\nmation") == "information"
    assert nz.rejoin_soft_hyphens("infor\u00ad \r\n  mation") == "information"
    # a soft hyphen without a line break is left for remove_invisible; the space is not eaten
    assert nz.rejoin_soft_hyphens("infor\u00ad mation") == "infor\u00ad mation"
    assert nz.rejoin_soft_hyphens("a-\nb") == "a-\nb"  # hard hyphens are real content


def test_remove_invisible():
    s = "a\u00adb\u200bc\u200cd\u200de\u2060f\ufeffg\u202eh\ufe0fi"
    assert nz.remove_invisible(s) == "abcdefghi"
    assert nz.remove_invisible("a\u00a0b") == "a\u00a0b"  # NBSP is white space, not invisible


def test_expand_ligatures():
    assert nz.expand_ligatures("\ufb00 \ufb01 \ufb02 \ufb03 \ufb04 \ufb05 \ufb06") == "ff fi fl ffi ffl st st"
    assert nz.expand_ligatures("\u00b2 \uff21") == "\u00b2 \uff21"  # other compatibility characters stay


def test_fold_quotes_and_dashes():
    assert nz.fold_quotes("\u2018a\u2019 \u201cb\u201d \u201ec\u201f") == "'a' \"b\" \"c\""
    assert nz.fold_quotes("\u00abd\u00bb") == "\u00abd\u00bb"  # guillemets stay
    assert nz.fold_dashes("a\u2010b\u2011c\u2012d\u2013e\u2014f\u2015g\u2212h") == "a-b-c-d-e-f-g-h"


def test_collapse_whitespace():
    assert nz.collapse_whitespace("  a \t\n b\u00a0\u2003c\u3000 ") == "a b c"


def test_text_v1_end_to_end():
    s = "  \u201cE\ufb03cient\u201d infor\u00ad\nmation \u2014 cafe\u0301\u200b  \n"
    assert normalize(s, "text-v1") == "\"Efficient\" information - caf\u00e9"


def test_words_v1_folds_case_and_punctuation():
    assert normalize("Well-Known \u2018Stra\u00dfe\u2019,\n ok.", "words-v1") == "wellknown strasse ok"
    assert normalize(" -- ", "words-v1") == ""


def test_nfc_runs_after_ligature_expansion():
    # U+FB00 + combining dot above: after expansion "f" + U+0307 composes to U+1E1F; a second pass changes nothing
    once = normalize("\ufb00\u0307")
    assert once == "f\u1e1f"
    assert normalize(once) == once


def test_registry():
    assert {"none", "nfc", "text-v1", "words-v1"} <= set(PROFILES)
    assert get_profile("none")("a\u00ad b") == "a\u00ad b"
    assert get_profile("text-v1").steps[0] == "rejoin_soft_hyphens"
    with pytest.raises(KeyError, match="known: .*text-v1"):
        get_profile("text-v9")
    with pytest.raises(ValueError, match="new name"):
        register_profile(Profile("text-v1", (nz.nfc,)))
    register_profile(get_profile("text-v1"))  # re-registering the same profile is harmless


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30))
def test_profiles_are_idempotent(s):
    for name in ("text-v1", "words-v1", "nfc"):
        p = get_profile(name)
        assert p(p(s)) == p(s)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_text_v1_output_is_nfc_without_invisibles_or_ligatures(s):
    out = normalize(s)
    assert unicodedata.is_normalized("NFC", out)
    assert not any(c in out for c in "\u00ad\u200b\u200c\u200d\u2060\ufeff\ufb00\ufb01\ufb02\ufb03\ufb04")
    assert out == out.strip() and "  " not in out
