"""ExtractionAuditor: the cases that must hold, the flags, checks per type, and the row contract."""

from __future__ import annotations

import math

import pytest

from ingestaudit.auditors.base import ItemArtefacts
from ingestaudit.auditors.extraction import METRICS, ExtractionAuditor
from ingestaudit.measurement import State
from ingestaudit.auditors import metric_catalog as specs
from ingestaudit.model import ParsedDocument
from ingestaudit.truth import OrderCheck, TextCheck, Truth


def run(reference, output, checks=(), **options):
    item = ItemArtefacts.of(Truth(text=reference, checks=tuple(checks)), ParsedDocument(text=output))
    rows = ExtractionAuditor(**options).audit(item)
    return {(s.metric, s.label): s for s in rows}


def test_registered_specs():
    names = {s.name for s in METRICS}
    assert names == {"extraction.cer", "extraction.wer", "extraction.cer_norm", "extraction.wer_norm",
                     "extraction.completeness", "extraction.checks_pass"}
    assert all(specs.get(n) for n in names)
    assert specs.get("extraction.checks_pass").ci == "wilson"
    assert specs.get("extraction.cer").high is None  # CER is unbounded above


def test_seed_example():
    r = run("Mars has two moons, Phobos and Deimos.", "Mars has two m00ns, Phobos and Deirnos.")
    assert (r["extraction.cer", ""].numerator, r["extraction.cer", ""].denominator) == (4, 38)
    assert round(r["extraction.cer", ""].value, 3) == 0.105
    assert round(r["extraction.wer", ""].value, 3) == 0.286
    # words-v1 drops the punctuation: "moons" vs "m00ns" and "deimos" vs "deirnos" are still 2 / 7
    assert (r["extraction.wer_norm", ""].numerator, r["extraction.wer_norm", ""].denominator) == (2, 7)


def test_empty_output_scores_all_deletions_and_is_flagged():
    r = run("Some reference text.", "")
    cer = r["extraction.cer", ""]
    assert cer.state is State.OK and cer.value == 1.0 and cer.detail["empty_output"] is True
    assert cer.detail["missing_lines"] == ["Some reference text."]
    assert r["extraction.wer", ""].value == 1.0 and r["extraction.wer", ""].detail["empty_output"]
    assert r["extraction.cer_norm", ""].value == 1.0
    comp = r["extraction.completeness", ""]
    assert comp.value == 0.0 and comp.detail["empty_output"]


def test_empty_or_missing_reference_is_no_reference():
    r = run("", "abcde")
    for m in ("extraction.cer", "extraction.wer", "extraction.cer_norm", "extraction.wer_norm",
              "extraction.completeness"):
        assert r[m, ""].state is State.NO_REFERENCE and r[m, ""].value is None
    r = ExtractionAuditor().audit(ItemArtefacts.of(Truth(checks=(TextCheck(type="present", text="abc"),)),
                                                   ParsedDocument(text="abc")))
    states = {(s.metric, s.label): s.state for s in r}
    assert states["extraction.cer", ""] is State.NO_REFERENCE
    assert states["extraction.checks_pass", ""] is State.OK


def test_cafe_nfc_vs_nfd():
    r = run("caf\u00e9", "cafe\u0301")
    assert r["extraction.cer", ""].value == 0.5  # 1 substitution + 1 insertion over 4 code points
    assert r["extraction.cer_norm", ""].value == 0.0


def test_ffi_ligature():
    r = run("efficient", "e\ufb03cient")
    assert r["extraction.cer", ""].value == pytest.approx(1 / 3)  # 1 substitution + 2 deletions over 9
    assert r["extraction.cer_norm", ""].value == 0.0
    assert r["extraction.wer_norm", ""].value == 0.0


def test_soft_hyphen():
    r = run("information", "infor\u00admation")
    assert r["extraction.cer", ""].value == pytest.approx(1 / 11)
    assert r["extraction.cer_norm", ""].value == 0.0


def test_duplicated_heading():
    r = run("HEADING", "HEADING\nHEADING")
    cer = r["extraction.cer", ""]
    assert (cer.numerator, cer.denominator) == (8, 7)  # "\nHEADING" inserted
    assert cer.detail["duplicate_layer"] is True and cer.detail["duplicated_lines"] == ["HEADING"]
    comp = r["extraction.completeness", ""]
    # 14 non-white-space characters out / 7 in
    assert comp.value == pytest.approx(2.0) and comp.detail["duplication"] is True


def test_duplicate_flag_ignores_short_lines_and_repeats_the_reference_has():
    assert run("Total\n0\n0", "Total\n0\n0")["extraction.cer", ""].detail["duplicate_layer"] is False
    assert run("Ha ha\nHa ha", "Ha ha\nHa ha")["extraction.cer", ""].detail["duplicate_layer"] is False
    assert run("A heading\nbody", "A heading\n\nA heading\nbody")["extraction.cer", ""].detail["duplicate_layer"]


def test_corpus_micro_example_per_document_counts():
    a = run("a b c d e f g h i j", "a b c d e f g h i j")["extraction.wer", ""]
    b = run("x", "y")["extraction.wer", ""]
    assert (a.numerator, a.denominator, a.value) == (0, 10, 0.0)
    assert (b.numerator, b.denominator, b.value) == (1, 1, 1.0)


def test_missing_lines():
    ref = "First line of the page\nA line the parser dropped entirely\nThird line with one OCR err0r"
    out = "First line of the page\nThird line with one OCR error"
    cer = run(ref, out)["extraction.cer", ""]
    # the line with one wrong character still counts as found (partial_ratio >= 80)
    assert cer.detail["missing_lines"] == ["A line the parser dropped entirely"]
    assert cer.detail["missing_lines_total"] == 1 and cer.detail["reference_lines"] == 3


def test_glued_words_flag():
    # Reference 7 words / 38 chars; the output lost 3 spaces: cer_norm = 3 / 38 = 0.079 <= 0.10,
    # wer_norm: 4 output words (marshas, twomoons, phobosand, deimos) vs 7 -> 6 / 7 >= 0.20, 4 <= 0.9 x 7.
    ref = "Mars has two moons, Phobos and Deimos."
    cer = run(ref, "Marshas twomoons, Phobosand Deimos.")["extraction.cer", ""]
    assert cer.detail["glued_words"] is True
    assert "wer_norm >= 0.2" in cer.detail["glued_words_rule"]
    # random character errors raise CER and WER but keep the word count: not glued
    assert run(ref, "Mars has two m00ns, Phobos and Deirnos.")["extraction.cer", ""].detail["glued_words"] is False


def test_checks_per_type():
    checks = [TextCheck(type="present", text="Phobos"), TextCheck(type="present", text="Europa"),
              TextCheck(type="absent", text="Page 1"), OrderCheck(type="order", before="Phobos", after="Deimos")]
    r = run(None, "Mars has two moons, Phobos and Deimos. Page 1", checks)
    all_ = r["extraction.checks_pass", ""]
    assert (all_.numerator, all_.denominator) == (2, 4)
    assert [f["index"] for f in all_.detail["failing"]] == [1, 2]
    assert (r["extraction.checks_pass", "present"].numerator, r["extraction.checks_pass", "present"].denominator) \
        == (1, 2)
    assert r["extraction.checks_pass", "absent"].value == 0.0
    assert r["extraction.checks_pass", "order"].value == 1.0


def test_check_types_without_checks_are_no_reference():
    r = run("abc", "abc", [TextCheck(type="present", text="abc")])
    assert r["extraction.checks_pass", "present"].value == 1.0
    assert r["extraction.checks_pass", "order"].state is State.NO_REFERENCE
    r = run("abc", "abc")
    assert all(r["extraction.checks_pass", t].state is State.NO_REFERENCE for t in ("", "present", "absent", "order"))


def test_invalid_check_is_listed_not_counted():
    # model_construct: the truth schema rejects this check; the auditor must still defend against it
    r = run(None, "abc", [TextCheck(type="present", text="abc"), TextCheck.model_construct(type="absent", text="xy", max_diffs=2)])
    all_ = r["extraction.checks_pass", ""]
    assert (all_.numerator, all_.denominator) == (1, 1)
    assert all_.detail["invalid_total"] == 1 and "would match anywhere" in all_.detail["invalid"][0]["message"]


def test_two_column_order_through_the_auditor():
    left = ["The left column opens the article", "and carries its argument", "to a first conclusion."]
    right = ["The right column continues it", "with further evidence", "and ends the article."]
    check = [OrderCheck(type="order", before="to a first conclusion.", after="The right column continues it")]
    for text, expected in (("\n".join(left + right), 1.0), ("\n".join(right + left), 0.0),
                           ("\n".join(x for pair in zip(left, right) for x in pair), 0.0)):
        assert run(None, text, check)["extraction.checks_pass", "order"].value == expected


def test_olmocr_semantics_option():
    check = [TextCheck(type="present", text="abcdefghij", max_diffs=3)]
    out = "zz abdcefhgij zz"  # two inner transpositions: 4 edits, but partial_ratio 0.80 >= 0.70
    assert run(None, out, check)["extraction.checks_pass", ""].value == 0.0
    assert run(None, out, check, check_semantics="olmocr")["extraction.checks_pass", ""].value == 1.0
    with pytest.raises(ValueError):
        ExtractionAuditor(check_semantics="fuzzy")
    with pytest.raises(KeyError):
        ExtractionAuditor(char_profile="nope")


def test_options_and_applies():
    a = ExtractionAuditor(word_profile="text-v1")
    assert a.options()["char_profile"] == "text-v1" and a.options()["word_profile"] == "text-v1"
    assert a.applies(Truth(text="x")) and a.applies(Truth(checks=(TextCheck(type="present", text="x"),)))
    assert not a.applies(Truth())


def test_every_row_is_finite_and_named():
    r = run("Some text\nwith lines", "Some text with\u00a0lines \ufb01", [TextCheck(type="absent", text="zzz")])
    assert len(r) == 9
    for s in r.values():
        assert s.metric in {m.name for m in METRICS}
        for v in (s.value, s.numerator, s.denominator):
            assert v is None or math.isfinite(v)
