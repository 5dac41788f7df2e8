"""PiiAuditor (stage "pii"): the issue's hand-worked acceptance values as report rows, label map, extraction losses,
negative documents, leakage, the four scrubber kinds, gold validation, and the CLI end to end (a born-digital PDF
whose text layer drops a labelled e-mail address)."""

from __future__ import annotations

import json

import pytest
import requests  # noqa: F401  imported at collection: urllib3's import-time IPv6 probe opens a local socket
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ingestaudit.auditors.base import ItemArtefacts
from ingestaudit.steps import audit_corpus, audit_document
from ingestaudit.auditors.pii import (METRICS, PiiAuditor, parse_entities, parse_label_map, validate_pii_gold)
from ingestaudit.measurement import State
from ingestaudit.auditors import metric_catalog as specs
from ingestaudit.model import ParsedDocument
from ingestaudit.truth import Span as TruthSpan
from ingestaudit.truth import Truth
from _rows import load_report, measurements

# "Call Ana Lima at 555-0100": "Ana" [5,8), "Lima" [9,13), "Ana Lima" [5,13), "555-0100" [17,25)
TEXT1 = "Call Ana Lima at 555-0100"
GOLD1 = [(5, 13, "PERSON"), (17, 25, "PHONE_NUMBER")]
PRED1 = [(5, 8, "PERSON"), (9, 13, "PERSON"), (17, 25, "PHONE_NUMBER")]
# "Ana Lima and Bo Chen": "Ana Lima" [0,8), "Bo Chen" [13,20), whole text [0,20)
TEXT2 = "Ana Lima and Bo Chen"
GOLD2 = [(0, 8, "PERSON"), (13, 20, "PERSON")]
PRED2 = [(0, 20, "PERSON")]
# negative document: 4 whitespace tokens, "Monday" = [18, 24)
TEXT3 = "Meeting notes for Monday"
PRED3 = [(18, 24, "DATE_TIME")]


def truth(text, gold, **kw):
    return Truth(text=text, pii=tuple(TruthSpan(start=a, end=b, type=t) for a, b, t in gold), **kw)


def parsed(text, pred=None, **extras):
    if pred is not None:
        extras["pii"] = [{"start": a, "end": b, "type": t} for a, b, t in pred]
    return ParsedDocument(text=text, extras=extras)


def rows(text, gold, pred, out_text=None, **options):
    options.setdefault("scrubber", "precomputed")
    scores = audit_document(PiiAuditor(**options), truth(text, gold), parsed(text if out_text is None else out_text, pred))
    return {(s.metric, s.label): s for s in scores}


def frac(score):
    return (score.numerator, score.denominator)


class CannedDetector:
    """A user detector (duck-typed, loaded as "module:Class") returning canned predictions per text."""

    CANNED = {TEXT1: PRED1, TEXT2: PRED2, TEXT3: PRED3}

    def detect(self, text):
        return [{"start": a, "end": b, "type": t} for a, b, t in self.CANNED.get(text, [])]

    def supported_types(self):
        return ["DATE_TIME", "EMAIL_ADDRESS", "LOCATION", "PERSON", "PHONE_NUMBER"]


class FailingDetector:
    def detect(self, text):
        if "boom" in text:
            raise RuntimeError("detector crashed")
        return []


# ------------------------------------------------------------------------------------------------ the specs


def test_specs_registered():
    names = {s.name for s in METRICS}
    assert names == {"pii.precision", "pii.recall", "pii.f1", "pii.f2", "pii.lost_in_extraction",
                     "pii.residual_leakage", "pii.fp_per_1k_tokens", "pii.unlabelled_type_predictions"}
    for n in names:
        assert specs.get(n).stage == "pii"
    assert specs.get("pii.precision").ci == "wilson" and specs.get("pii.recall").ci == "wilson"
    assert specs.get("pii.fp_per_1k_tokens").high is None and not specs.get("pii.fp_per_1k_tokens").higher_is_better
    assert "'<policy>/<TYPE>'" in specs.get("pii.recall").description  # the label scheme is stated


# ------------------------------------------------------------------------------------- acceptance, as rows


def test_acceptance_case_1_rows():
    r = rows(TEXT1, GOLD1, PRED1)
    # PERSON exact: neither [5,8) nor [9,13) equals [5,13): precision 0/2, recall 0/1
    assert frac(r["pii.precision", "exact/PERSON"]) == (0, 2) and r["pii.precision", "exact/PERSON"].value == 0.0
    assert frac(r["pii.recall", "exact/PERSON"]) == (0, 1)
    # PERSON token: gold touches {Ana, Lima}, predictions touch {Ana} and {Lima}: 2/2 and 2/2
    assert frac(r["pii.precision", "token/PERSON"]) == (2, 2) and r["pii.precision", "token/PERSON"].value == 1.0
    assert frac(r["pii.recall", "token/PERSON"]) == (2, 2)
    # PERSON overlap@0.5: IoU([5,13),[9,13)) = 4/8 = 0.5 matched, IoU([5,13),[5,8)) = 3/8 unmatched: 1/2 and 1/1
    assert frac(r["pii.precision", "overlap@0.5/PERSON"]) == (1, 2)
    assert frac(r["pii.recall", "overlap@0.5/PERSON"]) == (1, 1)
    # PHONE_NUMBER: 1.0 under every policy, every rate
    for pol in ("exact", "overlap@0.5", "token"):
        for m in ("precision", "recall", "f1", "f2"):
            assert r[f"pii.{m}", f"{pol}/PHONE_NUMBER"].value == 1.0
    # all types, exact: tp 1 (phone), fp 2, fn 1 -> P 1/3, R 1/2, F1 2/(2+1+2) = 0.4, F2 5/(5+4+2) = 5/11
    assert frac(r["pii.precision", "exact"]) == (1, 3) and frac(r["pii.recall", "exact"]) == (1, 2)
    assert frac(r["pii.f1", "exact"]) == (2, 5) and r["pii.f2", "exact"].value == pytest.approx(5 / 11)
    assert r["pii.recall", "exact"].detail["tp"] == 1 and r["pii.recall", "exact"].detail["fn"] == 1


def test_acceptance_case_2_rows():
    r = rows(TEXT2, GOLD2, PRED2)
    # exact: nothing matches
    assert frac(r["pii.precision", "exact/PERSON"]) == (0, 1) and frac(r["pii.recall", "exact/PERSON"]) == (0, 2)
    # overlap@0.5: IoU 8/20 = 0.40 and 7/20 = 0.35, both below 0.5
    assert frac(r["pii.precision", "overlap@0.5/PERSON"]) == (0, 1)
    assert frac(r["pii.recall", "overlap@0.5/PERSON"]) == (0, 2)
    # token: gold tokens {Ana, Lima, Bo, Chen}, predicted all 5 tokens: P 4/5 = 0.8, R 4/4 = 1.0
    assert frac(r["pii.precision", "token/PERSON"]) == (4, 5) and r["pii.precision", "token/PERSON"].value == 0.8
    assert frac(r["pii.recall", "token/PERSON"]) == (4, 4)
    # under no policy (and no label) precision = recall = 1
    for pol in ("exact", "overlap@0.5", "token"):
        for label in (pol, f"{pol}/*", f"{pol}/PERSON"):
            assert not (r["pii.precision", label].value == 1.0 and r["pii.recall", label].value == 1.0)


def test_type_agnostic_rows_catch_a_wrong_type():
    # gold PERSON predicted as LOCATION: typed recall 0, type-agnostic ("caught at all") recall 1
    r = rows(TEXT1, [(5, 13, "PERSON")], [(5, 13, "LOCATION")])
    assert frac(r["pii.recall", "exact/PERSON"]) == (0, 1)
    assert frac(r["pii.precision", "exact/LOCATION"]) == (0, 1)
    assert frac(r["pii.recall", "exact/*"]) == (1, 1) and frac(r["pii.precision", "exact/*"]) == (1, 1)
    assert r["pii.recall", "exact/LOCATION"].state is State.NO_REFERENCE  # no LOCATION label: recall undefined
    assert r["pii.precision", "exact/PERSON"].state is State.NO_PREDICTION  # no PERSON prediction


def test_nothing_predicted_is_no_prediction_not_zero():
    r = rows(TEXT1, GOLD1, [])
    p = r["pii.precision", "exact"]
    assert p.state is State.NO_PREDICTION and p.value is None
    assert frac(r["pii.recall", "exact"]) == (0, 2) and r["pii.recall", "exact"].value == 0.0
    assert r["pii.f1", "exact"].value == 0.0  # F is defined: every gold span missed


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.sampled_from(["PERSON", "LOCATION", "EMAIL_ADDRESS"])),
                min_size=1, max_size=5, unique_by=lambda x: x[0]))
def test_identity_is_perfect_under_every_policy(words):
    # ten 3-letter words; gold = predictions = some whole words: every rate is 1 under every policy and label
    text = " ".join(f"w{i:02d}" for i in range(10))
    gold = [(4 * i, 4 * i + 3, t) for i, t in words]
    r = rows(text, gold, gold)
    for (metric, label), s in r.items():
        if metric in ("pii.precision", "pii.recall", "pii.f1", "pii.f2"):
            assert s.value == 1.0, (metric, label)
    # and the scrubbed text leaks nothing
    assert r["pii.residual_leakage", "*"].value == 0.0


# ------------------------------------------------------------------------------------------------ label map


def test_label_map_and_unmapped_types():
    text = "Ana Lima lives at 12 Rue Haute in Lisbon, age 42."
    # "Ana Lima" [0,8) PERSON; "12 Rue Haute" [18,30) STREET_ADDRESS; "Lisbon" [34,40) GPE; "42" [46,48) AGE
    gold = [(0, 8, "PERSON"), (18, 30, "STREET_ADDRESS"), (34, 40, "GPE"), (46, 48, "AGE")]
    pred = [(0, 8, "PERSON"), (34, 40, "LOCATION"), (46, 48, "PERSON")]
    r = rows(text, gold, pred, entities=["PERSON", "LOCATION"],
             label_map={"GPE": "LOCATION", "STREET_ADDRESS": "LOCATION"})
    # LOCATION gold = street [18,30) + Lisbon [34,40); only Lisbon predicted: 1/1 precision, 1/2 recall
    assert frac(r["pii.precision", "exact/LOCATION"]) == (1, 1)
    assert frac(r["pii.recall", "exact/LOCATION"]) == (1, 2)
    # AGE is not in the detector's vocabulary: unmapped, listed, left out of typed rows (PERSON [46,48) is then an
    # fp of PERSON), but counted in the type-agnostic rows, where [46,48) catches it
    assert ("pii.recall", "exact/AGE") not in r
    assert r["pii.recall", "exact"].detail["unmapped"] == {"AGE": 1}
    assert frac(r["pii.precision", "exact/PERSON"]) == (1, 2)
    assert frac(r["pii.recall", "exact/*"]) == (3, 4)
    assert frac(r["pii.precision", "exact/*"]) == (3, 3)
    # the label map also names lost/leakage rows by the mapped type; AGE keeps its own
    assert frac(r["pii.lost_in_extraction", "LOCATION"]) == (0, 2) and ("pii.lost_in_extraction", "AGE") in r


def test_label_map_string_form_and_exclusion():
    assert parse_label_map("GPE=LOCATION, STREET_ADDRESS=LOCATION TITLE=") == \
        {"GPE": "LOCATION", "STREET_ADDRESS": "LOCATION", "TITLE": None}
    assert parse_label_map({"A": "B"}) == {"A": "B"} and parse_label_map(None) == {}
    assert parse_entities("PERSON, LOCATION") == ["PERSON", "LOCATION"] and parse_entities(None) is None
    with pytest.raises(ValueError):
        parse_label_map("GPE")
    with pytest.raises(ValueError):
        parse_label_map("A=B A=C")
    # TITLE mapped to None: excluded everywhere (not a miss, not in '*', not leaked)
    text = "Dr. Ana Lima"  # "Dr." [0,3) TITLE, "Ana Lima" [4,12) PERSON
    r = rows(text, [(0, 3, "TITLE"), (4, 12, "PERSON")], [(4, 12, "PERSON")], label_map="TITLE=")
    assert frac(r["pii.recall", "exact/*"]) == (1, 1)
    assert r["pii.recall", "exact"].detail["excluded_types"] == ["TITLE"]
    assert frac(r["pii.residual_leakage", "*"]) == (0, 1)


# ------------------------------------------------------------------------------------ extraction losses


def test_span_lost_in_extraction_is_not_a_detector_miss():
    ref = "Name: Ana Lima\nE-mail: ana.lima@example.com\nPhone: 212-555-0188\n"
    out = "Name: Ana Lima\nE-mail: \nPhone: 212-555-0188\n"  # the parser dropped the address
    gold = [(ref.index("Ana"), ref.index("Ana") + 8, "PERSON"),
            (ref.index("ana.lima"), ref.index("ana.lima") + 20, "EMAIL_ADDRESS"),
            (ref.index("212"), ref.index("212") + 12, "PHONE_NUMBER")]
    pred = [(out.index("Ana"), out.index("Ana") + 8, "PERSON")]  # the detector finds the name only
    r = rows(ref, gold, pred, out_text=out)
    assert frac(r["pii.lost_in_extraction", "*"]) == (1, 3)
    assert frac(r["pii.lost_in_extraction", "EMAIL_ADDRESS"]) == (1, 1)
    assert r["pii.lost_in_extraction", "*"].detail["lost"][0]["text"] == "ana.lima@example.com"
    # recall counts 2 gold spans (name, phone), not 3: the phone is the only detector miss
    rec = r["pii.recall", "exact"]
    assert frac(rec) == (1, 2) and rec.detail["lost_in_extraction"] == 1
    assert [m["type"] for m in rec.detail["missed"]] == ["PHONE_NUMBER"]
    assert ("pii.recall", "exact/EMAIL_ADDRESS") not in r
    # nothing of the address reaches the index: it does not leak either
    assert frac(r["pii.residual_leakage", "EMAIL_ADDRESS"]) == (0, 1)
    assert frac(r["pii.residual_leakage", "PHONE_NUMBER"]) == (1, 1)


def test_projected_spans_follow_the_extracted_text():
    ref = "Call Ana Lima at 555-0100"
    out = "Page 1\n\nCall Ana\nLima at 555-0100"  # shifted by 8, a line break inside the name
    pred = [(out.index("Ana"), out.index("Lima") + 4, "PERSON")]
    r = rows(ref, GOLD1, pred, out_text=out)
    assert frac(r["pii.precision", "exact/PERSON"]) == (1, 1) and frac(r["pii.lost_in_extraction", "*"]) == (0, 2)


# -------------------------------------------------------------------------------------- negative documents


def test_negative_documents_fp_per_1k_tokens():
    aud = PiiAuditor(scrubber="precomputed", negative_documents="no_spans")
    items = [ItemArtefacts("a", "c", truth(TEXT1, GOLD1), parsed(TEXT1, PRED1)),
             ItemArtefacts("n", "c", truth(TEXT3, []), parsed(TEXT3, PRED3))]
    res = audit_corpus(aud, items)
    neg = {s.label: s for d, s in res.doc_scores if d == "n" and s.metric == "pii.fp_per_1k_tokens"}
    # 1 DATE_TIME prediction over 4 tokens: 1000 * 1 / 4 = 250 per 1,000 tokens; numerator 1, denominator 4/1000
    assert neg["DATE_TIME"].value == 250.0 and frac(neg["DATE_TIME"]) == (1, 0.004)
    assert neg["*"].value == 250.0
    # every type of the vocabulary (predicted anywhere in the corpus) gets its row, 0 when not predicted here
    assert neg["PERSON"].value == 0.0 and neg["PHONE_NUMBER"].value == 0.0
    pos = [s for d, s in res.doc_scores if d == "a" and s.metric == "pii.fp_per_1k_tokens"]
    assert [s.state for s in pos] == [State.NO_REFERENCE]
    # the negative document's prediction is also a false positive in precision
    nprec = {s.label: s for d, s in res.doc_scores if d == "n" and s.metric == "pii.precision"}
    assert frac(nprec["exact/DATE_TIME"]) == (0, 1)
    assert nprec["exact"].state is State.OK and {s.state for d, s in res.doc_scores
                                                  if d == "n" and s.metric == "pii.recall"} == {State.NO_REFERENCE}


def test_predictions_outside_entities_are_set_aside_and_counted():
    aud = PiiAuditor(scrubber="precomputed", negative_documents="no_spans", entities="PERSON")
    res = audit_corpus(aud, [ItemArtefacts("n", "c", truth(TEXT3, []), parsed(TEXT3, PRED3))])
    fp = {s.label: s for _, s in res.doc_scores if s.metric == "pii.fp_per_1k_tokens"}
    assert set(fp) == {"*", "PERSON"} and fp["*"].value == 0.0  # the DATE_TIME prediction is not audited...
    assert res.details["ignored_predicted_types"] == {"DATE_TIME": 1}  # ...but counted


def test_negative_declaration_modes():
    empty = truth(TEXT3, [])
    assert not PiiAuditor().applies(empty)  # default: needs the truth to say "pii": [] explicitly
    assert PiiAuditor(negative_documents="no_spans").applies(empty)
    assert not PiiAuditor(negative_documents="no_spans").applies(Truth())  # no reference text

    from dataclasses import dataclass

    @dataclass(frozen=True)
    class LabelledTruth(Truth):  # what the truth loader gives once it records that the key was present
        pii_labelled: bool = True

    assert PiiAuditor().applies(LabelledTruth(text=TEXT3)) and PiiAuditor().is_negative(LabelledTruth(text=TEXT3))
    assert PiiAuditor().applies(truth(TEXT1, GOLD1))


def test_documents_without_labels_or_output_get_state_rows():
    aud = PiiAuditor(scrubber="precomputed")
    items = [ItemArtefacts("none", "c", Truth(text="x"), parsed("x", [])),
             ItemArtefacts("failed", "c", truth(TEXT1, GOLD1), None, state=State.ERROR, reason="parser crashed"),
             ItemArtefacts("nopii", "c", truth(TEXT1, GOLD1), parsed(TEXT1))]
    res = audit_corpus(aud, items)
    states = {(d, s.metric): (s.state, s.detail.get("reason")) for d, s in res.doc_scores}
    assert states["none", "pii.recall"][0] is State.NO_REFERENCE
    assert states["failed", "pii.recall"] == (State.ERROR, "parser crashed")
    assert states["nopii", "pii.recall"][0] is State.NO_PREDICTION
    assert len(res.doc_scores) == 3 * len(METRICS)


# ------------------------------------------------------------------------------------- leakage, scrubbers


def test_residual_leakage_of_the_scrubbed_output():
    # the detector finds the name only: the scrubbed text is "Call <PERSON> at 555-0100"; PERSON 0/1,
    # PHONE_NUMBER 1/1, all 1/2
    r = rows(TEXT1, GOLD1, [(5, 13, "PERSON")])
    assert frac(r["pii.residual_leakage", "PERSON"]) == (0, 1)
    assert frac(r["pii.residual_leakage", "PHONE_NUMBER"]) == (1, 1)
    assert frac(r["pii.residual_leakage", "*"]) == (1, 2)
    assert r["pii.residual_leakage", "*"].detail["leaked"] == [{"type": "PHONE_NUMBER", "value": "555-0100"}]


def test_redacted_text_audited_from_the_output_side():
    out = parsed(TEXT1, clean_text="Call <PERSON> at 555-0100")
    aud = PiiAuditor(scrubber="redacted")
    r = {(s.metric, s.label): s for s in audit_document(aud, truth(TEXT1, GOLD1), out)}
    assert frac(r["pii.precision", "exact/PERSON"]) == (1, 1) and frac(r["pii.recall", "exact/PERSON"]) == (1, 1)
    assert frac(r["pii.recall", "exact/PHONE_NUMBER"]) == (0, 1)
    assert frac(r["pii.residual_leakage", "PHONE_NUMBER"]) == (1, 1)
    assert r["pii.recall", "exact"].detail["scrubber"] == "redacted (anchored)"
    # the output's text itself is the redacted reference ("text" field): same numbers
    r2 = {(s.metric, s.label): s for s in audit_document(PiiAuditor(scrubber="redacted", redacted_field="text"),
        truth(TEXT1, GOLD1), parsed("Call <PERSON> at 555-0100"))}
    assert frac(r2["pii.recall", "exact"]) == (1, 2)
    # no redacted text: no_prediction
    r3 = audit_document(PiiAuditor(scrubber="redacted"), truth(TEXT1, GOLD1), parsed(TEXT1))
    assert {s.state for s in r3} == {State.NO_PREDICTION}


def test_user_detector_precomputed_preference_and_failures():
    name = f"{__name__}:CannedDetector"
    aud = PiiAuditor(scrubber=name)
    r = {(s.metric, s.label): s for s in audit_document(aud, truth(TEXT1, GOLD1), parsed(TEXT1))}
    assert frac(r["pii.precision", "exact/PERSON"]) == (0, 2) and r["pii.recall", "exact"].detail["scrubber"] == name
    # an output carrying its own pii spans is audited as is (prefer_precomputed)
    r = {(s.metric, s.label): s for s in audit_document(aud, truth(TEXT1, GOLD1), parsed(TEXT1, GOLD1))}
    assert r["pii.recall", "exact"].value == 1.0 and r["pii.recall", "exact"].detail["scrubber"] == "precomputed"
    # a detector crash on one document gives error rows for that document only
    aud = PiiAuditor(scrubber=f"{__name__}:FailingDetector", negative_documents="no_spans")
    res = audit_corpus(aud, [ItemArtefacts("ok", "c", truth("fine", []), parsed("fine")),
                            ItemArtefacts("bad", "c", truth("boom", []), parsed("boom"))])
    by = {d: {s.state for dd, s in res.doc_scores if dd == d} for d in ("ok", "bad")}
    assert by["bad"] == {State.ERROR} and State.ERROR not in by["ok"]
    # a missing spaCy model: error rows whose reason names the set-up script
    res = audit_document(PiiAuditor(spacy_model="xx_no_such_pipeline_sm"), truth(TEXT1, GOLD1), parsed(TEXT1))
    assert {s.state for s in res} == {State.ERROR}
    assert "bash scripts/setup.sh" in res[0].detail["reason"]


def test_options_and_bad_options():
    o = PiiAuditor(label_map={"GPE": "LOCATION"}).options()
    json.dumps(o)
    assert o["policies"] == ["exact", "overlap@0.5", "token"]
    assert o["presidio"]["spacy_model"] == "en_core_web_sm" and o["presidio"]["spacy_model_version"] == "3.8.0"
    assert PiiAuditor(iou_threshold=0.3).options()["policies"][1] == "overlap@0.3"
    for bad in ({"iou_threshold": 0}, {"min_kept": 0}, {"negative_documents": "x"}, {"redacted_field": "x"},
                {"placeholder": "<X>"}, {"leakage_normalization": "alnum"}, {"score_threshold": 2},
                {"label_map": {"A": 3}}):
        with pytest.raises(ValueError):
            PiiAuditor(**bad)


# ------------------------------------------------------------------------------------------ gold validation


def test_validate_gold_luhn():
    # Luhn: 4111111111111111, 2221000000000009 and 6011577631711174 pass; 1234-5678-1234-5678 (sum 68) fails
    cards = ["4111111111111111", "2221000000000009", "6011577631711174", "1234-5678-1234-5678"]
    text = " ".join(cards)
    spans, pos = [], 0
    for c in cards:
        spans.append({"start": pos, "end": pos + len(c), "type": "CREDIT_CARD"})
        pos += len(c) + 1
    problems = validate_pii_gold(text, spans)
    assert [(p.index, p.kind, p.severity) for p in problems] == [(3, "luhn", "warning")]
    assert "1234-5678-1234-5678" in problems[0].message
    # the auditor counts such labels next to the misses they may explain
    r = rows(text, [(s["start"], s["end"], s["type"]) for s in spans], [])
    assert r["pii.recall", "exact"].detail["gold_failing_luhn"] == 1


def test_validate_gold_offsets_overlaps_reserved():
    text = "Call Ana Lima at 555-0100"  # 25 code points
    spans = [TruthSpan(start=5, end=13, type="PERSON"), TruthSpan(start=9, end=13, type="PERSON"),
             TruthSpan(start=20, end=30, type="PHONE_NUMBER"), TruthSpan(start=3, end=3, type="PERSON"),
             TruthSpan(start=0, end=4, type="*")]
    got = [(p.index, p.kind, p.severity, p.other) for p in validate_pii_gold(text, spans)]
    assert got == [(1, "overlap", "warning", 0), (2, "offsets", "error", None), (3, "offsets", "error", None),
                   (4, "reserved_type", "error", None)]
    assert str(validate_pii_gold(text, spans)[1]).startswith("pii[2]: error: span [20, 30) PHONE_NUMBER is outside")
    assert validate_pii_gold(TEXT1, [TruthSpan(start=a, end=b, type=t) for a, b, t in GOLD1]) == []


# ------------------------------------------------------------------------------------------- CLI end to end


def write_doc(root, doc_id, text, gold, doc_text=None):
    (root / "docs" / doc_id).parent.mkdir(parents=True, exist_ok=True)
    (root / "truth" / doc_id).parent.mkdir(parents=True, exist_ok=True)
    (root / "docs" / f"{doc_id}.txt").write_text(text if doc_text is None else doc_text, encoding="utf-8")
    (root / "truth" / f"{doc_id}.json").write_text(json.dumps(
        {"text": text, "pii": [{"start": a, "end": b, "type": t} for a, b, t in gold]}), encoding="utf-8")


def run_cli(corpus, out, *args):
    from ingestaudit.cli import app

    res = CliRunner().invoke(app, ["run", str(corpus), "--out", str(out), "--stage", "pii", *args])
    assert res.exit_code == 0, res.output
    return load_report(out)


def summary(report, metric, label, parser="reference", cls="__all__"):
    got = [s for s in report["summary"] if (s["pipeline"], s["doc_class"], s["metric"], s["label"]) ==
           (parser, cls, metric, label)]
    assert len(got) == 1, (metric, label, got)
    return got[0]


def test_cli_corpus_micro_and_macro(tmp_path):
    corpus = tmp_path / "corpus"
    write_doc(corpus, "notes/a", TEXT1, GOLD1)
    write_doc(corpus, "notes/b", TEXT2, GOLD2)
    write_doc(corpus, "notes/n", TEXT3, [])
    config = tmp_path / "pii.toml"  # a module path loads only from a --config the user passes, not the corpus's toml
    config.write_text(
        f'[auditor_options.pii]\nscrubber = "{__name__}:CannedDetector"\nnegative_documents = "no_spans"\n',
        encoding="utf-8")
    rep = run_cli(corpus, tmp_path / "out", "--parser", "reference", "--config", str(config))
    # exact PERSON over a, b: tp 0; fp 2 + 1; fn 1 + 2
    s = summary(rep, "pii.precision", "exact/PERSON")
    assert (s["micro"], s["n_docs"]) == (0.0, 2)
    # token PERSON: a tp 2 fp 0 fn 0; b tp 4 fp 1 fn 0 -> P 6/7, R 6/6
    assert summary(rep, "pii.precision", "token/PERSON")["micro"] == pytest.approx(6 / 7)
    assert summary(rep, "pii.recall", "token/PERSON")["micro"] == 1.0
    # overlap PERSON: a tp 1 fp 1 fn 0; b tp 0 fp 1 fn 2 -> P 1/3, R 1/3
    assert summary(rep, "pii.precision", "overlap@0.5/PERSON")["micro"] == pytest.approx(1 / 3)
    assert summary(rep, "pii.recall", "overlap@0.5/PERSON")["micro"] == pytest.approx(1 / 3)
    # all types, exact precision: phone 1 tp of a's 3 predictions, b 0/1, negative n 0/1 -> 1/5
    assert summary(rep, "pii.precision", "exact")["micro"] == pytest.approx(1 / 5)
    # macro over types at corpus level (overlap): P = (PERSON 1/3 + PHONE 1 + DATE_TIME 0) / 3 = 4/9;
    # R = (PERSON 1/3 + PHONE 1) / 2 = 2/3 (DATE_TIME has no gold: recall undefined, left out and listed)
    mp = summary(rep, "pii.precision", "overlap@0.5/macro")
    assert mp["level"] == "corpus" and mp["micro"] == pytest.approx(4 / 9)
    assert summary(rep, "pii.recall", "overlap@0.5/macro")["micro"] == pytest.approx(2 / 3)
    # negative document: 1 DATE_TIME over 4 tokens = 250 per 1,000 tokens
    assert summary(rep, "pii.fp_per_1k_tokens", "DATE_TIME")["micro"] == pytest.approx(250.0)
    assert summary(rep, "pii.fp_per_1k_tokens", "PERSON")["micro"] == 0.0
    # options and details in the report
    cfg = rep["config"]["auditors"]["pii"]
    assert cfg["scrubber"].endswith(":CannedDetector") and cfg["policies"] == ["exact", "overlap@0.5", "token"]
    names = {d["name"] for d in rep["details"] if d["stage"] == "pii"}
    assert {"label_map", "type_confusion", "scrubber_by_document", "lost_in_extraction"} <= names


def make_contact_pdf(path):
    """A one-page born-digital PDF: four text lines; the e-mail address is then removed from the text layer
    (redaction) and drawn back as an image, so it is visible but not extractable."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    y = 72
    for line in ("Contact sheet", "Name: Ana Lima", "E-mail: ana.lima@example.com", "Phone: 212-555-0188"):
        page.insert_text((72, y), line, fontsize=11)
        y += 20
    rect = page.search_for("ana.lima@example.com")[0]
    page.add_redact_annot(rect)
    page.apply_redactions()
    tmp = pymupdf.open()
    img = tmp.new_page(width=rect.width + 4, height=rect.height + 4)
    img.insert_text((2, rect.height - 1), "ana.lima@example.com", fontsize=11)
    page.insert_image(rect, pixmap=img.get_pixmap(dpi=150))
    doc.save(path)


def test_cli_pdf_dropping_an_email_counts_it_lost_not_missed(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "docs" / "forms").mkdir(parents=True)
    (corpus / "truth" / "forms").mkdir(parents=True)
    make_contact_pdf(corpus / "docs" / "forms" / "contact.pdf")
    ref = "Contact sheet\nName: Ana Lima\nE-mail: ana.lima@example.com\nPhone: 212-555-0188\n"
    gold = [{"start": ref.index("Ana"), "end": ref.index("Ana") + 8, "type": "PERSON"},
            {"start": ref.index("ana.lima"), "end": ref.index("ana.lima") + 20, "type": "EMAIL_ADDRESS"},
            {"start": ref.index("212"), "end": ref.index("212") + 12, "type": "PHONE_NUMBER"}]
    (corpus / "truth" / "forms" / "contact.json").write_text(json.dumps({"text": ref, "pii": gold}))
    # default scrubber: Presidio with en_core_web_sm, on each parser's text
    rep = run_cli(corpus, tmp_path / "out", "--parser", "pymupdf", "--parser", "reference")
    rows = {(m["pipeline"], m["metric"], m["label"]): m for m in measurements(rep)}
    # pymupdf lost the address: 1 of 3 gold spans lost, the e-mail's one of one
    lost = rows["pymupdf", "pii.lost_in_extraction", "*"]
    assert (lost["numerator"], lost["denominator"]) == (1, 3)
    assert lost["detail"]["lost"][0]["text"] == "ana.lima@example.com"
    assert (rows["pymupdf", "pii.lost_in_extraction", "EMAIL_ADDRESS"]["numerator"],
            rows["pymupdf", "pii.lost_in_extraction", "EMAIL_ADDRESS"]["denominator"]) == (1, 1)
    # ... and it is not a detector miss: recall counts the 2 projected spans only, none of them the e-mail
    for pol in ("exact", "overlap@0.5", "token"):
        rec = rows["pymupdf", "pii.recall", pol]
        assert rec["detail"]["lost_in_extraction"] == 1
        if pol != "token":
            assert rec["denominator"] == 2
            assert "EMAIL_ADDRESS" not in [m["type"] for m in rec["detail"]["missed"]]
        assert ("pymupdf", "pii.recall", f"{pol}/EMAIL_ADDRESS") not in rows
    # the reference parser (component level) loses nothing; Presidio finds the e-mail there
    assert rows["reference", "pii.lost_in_extraction", "*"]["numerator"] == 0
    assert rows["reference", "pii.recall", "exact"]["denominator"] == 3
    assert rows["reference", "pii.recall", "exact/EMAIL_ADDRESS"]["value"] == 1.0
    # the report names the spaCy model
    assert rep["config"]["auditors"]["pii"]["presidio"]["spacy_model"] == "en_core_web_sm"
    assert rep["config"]["auditors"]["pii"]["presidio"]["spacy_model_installed"] == "3.8.0"
