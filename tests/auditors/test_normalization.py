"""NormalizationAuditor: rows, units and states on hand-made outputs."""

from __future__ import annotations

from ingestaudit.auditors.base import ItemArtefacts
from ingestaudit.auditors.normalization import METRICS, NormalizationAuditor
from ingestaudit.measurement import State
from ingestaudit.auditors import metric_catalog as specs
from ingestaudit.model import ParsedDocument
from ingestaudit.truth import Truth


def run(text):
    return {s.metric: s for s in NormalizationAuditor().audit(ItemArtefacts.of(Truth(), ParsedDocument(text=text)))}


def test_specs_registered_with_units():
    for spec in METRICS:
        assert specs.get(spec.name) == spec and spec.unit in ("docs", "chars", "tokens")
    assert specs.get("normalization.nfkc_differs").ci == "wilson"


def test_cafe_nfd_counts_one_non_nfc_sequence():
    r = run("cafe\u0301")  # 5 code points
    s = r["normalization.non_nfc_sequences"]
    assert (s.numerator, s.denominator) == (1, 5)
    assert r["normalization.nfkc_differs"].value == 0.0  # NFC(text) == NFKC(text)


def test_counts_and_denominators():
    # 4 tokens: "e" U+FB03 "cient" (7 code points), "infor" U+00AD "mation" (12), "Рhobos" with a Cyrillic Р (6),
    # U+FFFD (1); with 3 spaces: 29 code points
    text = "e\ufb03cient infor\u00admation Рhobos \ufffd"
    n = len(text)
    assert n == 29
    r = run(text)
    assert r["normalization.nfkc_differs"].value == 1.0 and r["normalization.nfkc_differs"].denominator == 1
    assert (r["normalization.ligatures"].numerator, r["normalization.ligatures"].denominator) == (1, n)
    assert r["normalization.nfkc_changed_chars"].numerator == 1  # only the ligature; NFKC keeps U+00AD
    assert r["normalization.invisible_chars"].numerator == 1
    assert r["normalization.replacement_chars"].numerator == 1
    mixed = r["normalization.mixed_script_tokens"]
    assert (mixed.numerator, mixed.denominator) == (1, 4) and mixed.detail["examples"] == ["Рhobos"]
    assert r["normalization.mojibake_suspects"].numerator == 0


def test_mojibake_detail():
    s = run("Caf\u00c3\u00a9")["normalization.mojibake_suspects"]
    assert s.numerator == 1 and s.detail["fix_encoding_changes"] is True


def test_empty_output_is_no_prediction():
    for text in ("", " \n "):
        rows = NormalizationAuditor().audit(ItemArtefacts.of(Truth(), ParsedDocument(text=text)))
        assert len(rows) == len(METRICS)
        assert all(s.state is State.NO_PREDICTION and s.value is None for s in rows)


def test_needs_no_truth_and_row_order():
    a = NormalizationAuditor()
    assert a.applies(Truth()) and a.options() == {}
    rows = a.audit(ItemArtefacts.of(Truth(), ParsedDocument(text="plain")))
    assert [s.metric for s in rows] == [m.name for m in METRICS]
