"""Truth ``pii_types`` (issue 15, "honest states"): predictions of entity types a corpus never labelled are set apart
(``pii.unlabelled_type_predictions``), not counted as false positives; without ``pii_types`` the old behaviour stays,
named by the option ``without_pii_types`` in the report.

The hand-worked case. A corpus that labels PERSON and EMAIL_ADDRESS only; what Presidio 2.2 with en_core_web_sm 3.8
predicts on its two documents (recorded below and checked against the real detector in the slow test):

- A = "Please reply to Bo Chen at bo.chen@example.com before Friday.", gold PERSON [16,23) "Bo Chen", EMAIL_ADDRESS
  [27,46); predicted PERSON [16,23), URL [27,32) "bo.ch", EMAIL_ADDRESS [27,46), URL [35,46) "example.com",
  DATE_TIME [54,60) "Friday".
- B = "Dear Maria Garcia, the meeting moved to 4 June 2024.", gold PERSON [5,17); predicted PERSON [5,17), DATE_TIME
  [40,51) "4 June 2024".

With ``pii_types = ["PERSON", "EMAIL_ADDRESS"]`` (exact policy): judged predictions A 2 (both right), B 1 (right):
precision 3/3, recall 3/3, F1 1; set apart A 3 of 5 (URL 2, DATE_TIME 1), B 1 of 2 (DATE_TIME): unlabelled share
4/7, URL 2/7, DATE_TIME 2/7. Without ``pii_types`` (judge_all): fp = 3 + 1, precision 3/7, recall 3/3,
F1 = 2·3 / (2·3 + 0 + 4) = 0.6, and exact/URL precision 0/2, exact/DATE_TIME 0/2.
"""

from __future__ import annotations

import json
import re

import pytest
import requests  # noqa: F401  imported at collection: urllib3's import-time IPv6 probe opens a local socket
from typer.testing import CliRunner

from ingestaudit.auditors.base import ItemArtefacts
from ingestaudit.steps import audit_corpus, audit_document
from ingestaudit.auditors.pii import RESERVED_TYPES, PiiAuditor
from ingestaudit.cli import app
from ingestaudit.measurement import State
from ingestaudit.model import ParsedDocument
from ingestaudit.truth import RESERVED_PII_TYPES, Span, Truth

A = "Please reply to Bo Chen at bo.chen@example.com before Friday."
GOLD_A = [(16, 23, "PERSON"), (27, 46, "EMAIL_ADDRESS")]
PRED_A = [(16, 23, "PERSON"), (27, 32, "URL"), (27, 46, "EMAIL_ADDRESS"), (35, 46, "URL"), (54, 60, "DATE_TIME")]
B = "Dear Maria Garcia, the meeting moved to 4 June 2024."
GOLD_B = [(5, 17, "PERSON")]
PRED_B = [(5, 17, "PERSON"), (40, 51, "DATE_TIME")]
LABELLED = ["PERSON", "EMAIL_ADDRESS"]
UNLABELLED = "pii.unlabelled_type_predictions"


def item(doc_id, text, gold, pred, pii_types=None):
    t = Truth(text=text, pii=tuple(Span(start=a, end=b, type=c) for a, b, c in gold), pii_labelled=True,
              pii_types=None if pii_types is None else tuple(pii_types))
    extras = {} if pred is None else {"pii": [{"start": a, "end": b, "type": c} for a, b, c in pred]}
    return ItemArtefacts(doc_id, doc_id.split("/")[0], t, ParsedDocument(text=text, extras=extras))


def doc_rows(result):
    return {(d, s.metric, s.label): s for d, s in result.doc_scores}


def terms(s):
    return (s.numerator, s.denominator)


def test_reserved_type_names_agree():
    assert tuple(RESERVED_PII_TYPES) == tuple(RESERVED_TYPES)


def test_declared_types_set_unlabelled_predictions_apart():
    result = audit_corpus(PiiAuditor(scrubber="precomputed"),
        [item("c/a", A, GOLD_A, PRED_A, LABELLED), item("c/b", B, GOLD_B, PRED_B, LABELLED)])
    r = doc_rows(result)
    assert terms(r["c/a", "pii.precision", "exact"]) == (2, 2) and terms(r["c/b", "pii.precision", "exact"]) == (1, 1)
    assert terms(r["c/a", "pii.recall", "exact"]) == (2, 2)
    assert terms(r["c/a", "pii.precision", "exact/*"]) == (2, 2)  # the type-agnostic row sets them apart too
    assert ("c/a", "pii.precision", "exact/URL") not in r and ("c/a", "pii.precision", "exact/DATE_TIME") not in r
    assert terms(r["c/a", UNLABELLED, "*"]) == (3, 5) and terms(r["c/b", UNLABELLED, "*"]) == (1, 2)
    assert terms(r["c/a", UNLABELLED, "URL"]) == (2, 5) and terms(r["c/b", UNLABELLED, "URL"]) == (0, 2)
    assert terms(r["c/a", UNLABELLED, "DATE_TIME"]) == (1, 5) and terms(r["c/b", UNLABELLED, "DATE_TIME"]) == (1, 2)
    detail = r["c/a", "pii.precision", "exact"].detail
    assert detail["false_positives_total"] == 0 and detail["unlabelled_type_predictions"] == 3
    assert detail["labelled_types"] == ["EMAIL_ADDRESS", "PERSON"]
    # residual leakage still redacts every prediction: the set-apart URL inside the e-mail changes nothing here
    assert r["c/a", "pii.residual_leakage", "*"].value == 0
    ut = result.details["unlabelled_types"]
    assert (ut["documents_with_pii_types"], ut["documents_without_pii_types"]) == (2, 0)
    assert ut["set_apart"] == {"DATE_TIME": 2, "URL": 2}


def test_without_pii_types_every_type_is_judged_as_before():
    result = audit_corpus(PiiAuditor(scrubber="precomputed"),
        [item("c/a", A, GOLD_A, PRED_A), item("c/b", B, GOLD_B, PRED_B)])
    r = doc_rows(result)
    assert terms(r["c/a", "pii.precision", "exact"]) == (2, 5) and terms(r["c/b", "pii.precision", "exact"]) == (1, 2)
    assert terms(r["c/a", "pii.precision", "exact/URL"]) == (0, 2)
    assert terms(r["c/a", "pii.precision", "exact/DATE_TIME"]) == (0, 1)
    f1 = r["c/a", "pii.f1", "exact"]  # 2·2 / (2·2 + 0 + 3)
    assert terms(f1) == (4, 7)
    assert r["c/a", UNLABELLED, "*"].state is State.NO_REFERENCE
    assert "without_pii_types = judge_all" in r["c/a", UNLABELLED, "*"].detail["reason"]
    assert result.details["unlabelled_types"]["documents_without_pii_types"] == 2


def test_corpus_types_option_takes_the_gold_types_of_the_corpus():
    result = audit_corpus(PiiAuditor(scrubber="precomputed", without_pii_types="corpus_types"),
        [item("c/a", A, GOLD_A, PRED_A), item("c/b", B, GOLD_B, PRED_B)])
    r = doc_rows(result)  # gold types of the corpus: PERSON, EMAIL_ADDRESS -> the same numbers as declaring them
    assert terms(r["c/a", "pii.precision", "exact"]) == (2, 2) and terms(r["c/a", UNLABELLED, "*"]) == (3, 5)
    assert PiiAuditor(without_pii_types="corpus_types", scrubber="precomputed").options()["without_pii_types"] == \
        "corpus_types"
    with pytest.raises(ValueError, match="without_pii_types must be one of judge_all, corpus_types"):
        PiiAuditor(scrubber="precomputed", without_pii_types="ignore")


def test_a_negative_document_declaring_its_types_has_no_false_positive_of_another_type():
    text = "Meeting notes for Monday"  # 4 tokens; DATE_TIME "Monday" [18, 24)
    neg = item("c/n", text, [], [(18, 24, "DATE_TIME")], ["PERSON"])
    r = doc_rows(audit_corpus(PiiAuditor(scrubber="precomputed"), [neg]))
    assert terms(r["c/n", "pii.fp_per_1k_tokens", "*"]) == (0, 4 / 1000)
    assert terms(r["c/n", UNLABELLED, "DATE_TIME"]) == (1, 1)
    same = doc_rows(audit_corpus(PiiAuditor(scrubber="precomputed"), [item("c/n", text, [], [(18, 24, "DATE_TIME")])]))
    assert terms(same["c/n", "pii.fp_per_1k_tokens", "*"]) == (1, 4 / 1000)  # 250 per 1,000 tokens, as before


def test_a_declared_type_counts_under_its_label_map_target():
    text = "Ana moved to Lisbon."  # GPE "Lisbon" [13, 19); the detector says LOCATION
    gold = [(13, 19, "GPE")]
    r = doc_rows(audit_corpus(PiiAuditor(scrubber="precomputed", label_map="GPE=LOCATION"),
        [item("c/l", text, gold, [(13, 19, "LOCATION"), (0, 3, "PERSON")], ["GPE"])]))
    assert terms(r["c/l", "pii.precision", "exact"]) == (1, 1)  # LOCATION judged, PERSON set apart
    assert terms(r["c/l", UNLABELLED, "PERSON"]) == (1, 2)


def test_nothing_predicted_with_declared_types_is_no_prediction():
    r = doc_rows(audit_corpus(PiiAuditor(scrubber="precomputed"),
        [item("c/a", A, GOLD_A, [], LABELLED), item("c/b", B, GOLD_B, PRED_B, LABELLED)]))
    assert r["c/a", UNLABELLED, "*"].state is State.NO_PREDICTION
    assert r["c/a", UNLABELLED, "DATE_TIME"].state is State.NO_PREDICTION  # a row per type set apart anywhere


# --------------------------------------------------------------------------------------------- truth files


def write_doc(root, doc_id, text, gold, pii_types=None):
    for folder in ("docs", "truth"):
        (root / folder / doc_id).parent.mkdir(parents=True, exist_ok=True)
    (root / "docs" / f"{doc_id}.txt").write_text(text, encoding="utf-8")
    body = {"text": text, "pii": [{"start": a, "end": b, "type": t} for a, b, t in gold]}
    if pii_types is not None:
        body["pii_types"] = pii_types
    (root / "truth" / f"{doc_id}.json").write_text(json.dumps(body), encoding="utf-8")


@pytest.mark.parametrize("value, field, message", [
    ([], "pii_types", "at least 1 item"),
    (["PERSON", ""], "pii_types", "item 1: '' is not an entity type name"),
    (["PERSON", "PERSON"], "pii_types", "given twice: PERSON"),
    (["*"], "pii_types", "reserved"),
    ("PERSON", "pii_types", "valid list"),
    (["EMAIL_ADDRESS"], "pii[0].type", "type 'PERSON' is not in pii_types (EMAIL_ADDRESS)"),
])
def test_validate_names_bad_pii_types(tmp_path, value, field, message):
    root = tmp_path / "corpus"
    write_doc(root, "c/b", B, GOLD_B, value)
    res = CliRunner().invoke(app, ["validate", str(root)])
    assert res.exit_code == 2, res.output
    line = next(ln for ln in res.output.splitlines() if "truth/c/b.json" in ln)
    assert f"truth/c/b.json: {field}:" in line and message in line, res.output


def test_cli_report_with_and_without_pii_types(tmp_path):
    root = tmp_path / "corpus"
    write_doc(root, "mail/a", A, GOLD_A, LABELLED)
    write_doc(root, "mail/b", B, GOLD_B, LABELLED)
    assert CliRunner().invoke(app, ["validate", str(root)]).exit_code == 0
    outputs = tmp_path / "outputs"
    for doc_id, text, pred in (("mail/a", A, PRED_A), ("mail/b", B, PRED_B)):
        path = outputs / "presidio-run" / f"{doc_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"text": text, "pii": [{"start": a, "end": b, "type": t} for a, b, t in pred]}))

    def run(out):
        res = CliRunner().invoke(app, ["run", str(root), "--outputs", str(outputs), "--stage", "pii",
                                       "--out", str(out)])
        assert res.exit_code == 0, res.output
        rep = json.loads((out / "report.json").read_text(encoding="utf-8"))
        rows = {(s["metric"], s["label"]): s for s in rep["summary"] if s["doc_class"] == "__all__"}
        md = re.sub(r"\\(.)", r"\1", (out / "report.md").read_text(encoding="utf-8"))  # Markdown escapes undone
        return rep, rows, md

    rep, rows, md = run(tmp_path / "with")
    assert rows["pii.precision", "exact"]["micro"] == 1.0 and rows["pii.recall", "exact"]["micro"] == 1.0
    assert rows["pii.f1", "exact"]["micro"] == 1.0
    assert (rows[UNLABELLED, "*"]["numerator"], rows[UNLABELLED, "*"]["denominator"]) == (4, 7)
    assert rows[UNLABELLED, "URL"]["micro"] == pytest.approx(2 / 7)
    assert rows[UNLABELLED, "DATE_TIME"]["micro"] == pytest.approx(2 / 7)
    assert ("pii.precision", "exact/URL") not in rows
    assert "pii.unlabelled_type_predictions[URL]" in md

    for name in ("a", "b"):  # the same corpus without pii_types: today's numbers, and the report says why
        path = root / "truth" / "mail" / f"{name}.json"
        body = json.loads(path.read_text())
        del body["pii_types"]
        path.write_text(json.dumps(body))
    rep, rows, md = run(tmp_path / "without")
    assert rows["pii.precision", "exact"]["micro"] == pytest.approx(3 / 7)
    assert rows["pii.f1", "exact"]["micro"] == pytest.approx(0.6)
    assert rows["pii.precision", "exact/URL"]["micro"] == 0.0
    assert rows[UNLABELLED, "*"]["states"]["no_reference"] == 2 and rows[UNLABELLED, "*"]["micro"] is None
    opts = rep["config"]["auditors"]["pii"]
    assert opts["without_pii_types"] == "judge_all"
    assert "a prediction of a type the corpus never labels is a false positive" in opts["unlabelled_types"]
    assert '"without_pii_types": "judge_all"' in md  # printed with the stage's options


@pytest.mark.slow
def test_presidio_predicting_date_time_and_url_on_a_person_and_email_corpus(tmp_path):
    """The hand-worked case with the real Presidio (loading spaCy takes a while): its predictions are the recorded
    ones, so the values above hold for it."""
    from ingestaudit.stages.pii import PresidioDetector

    det = PresidioDetector()
    ok, why = det.available()
    if not ok:
        pytest.fail(f"presidio must be installed for this suite: {why}")
    got = [sorted((s.start, s.end, s.type) for s in det.detect(t)) for t in (A, B)]
    assert got == [sorted(PRED_A), sorted(PRED_B)]
    result = audit_corpus(PiiAuditor(scrubber="presidio"),
        [item("c/a", A, GOLD_A, None, LABELLED), item("c/b", B, GOLD_B, None, LABELLED)])
    r = doc_rows(result)
    assert terms(r["c/a", "pii.precision", "exact"]) == (2, 2) and terms(r["c/b", "pii.precision", "exact"]) == (1, 1)
    assert terms(r["c/a", "pii.recall", "exact"]) == (2, 2) and terms(r["c/b", "pii.recall", "exact"]) == (1, 1)
    assert terms(r["c/a", UNLABELLED, "URL"]) == (2, 5) and terms(r["c/b", UNLABELLED, "DATE_TIME"]) == (1, 2)
    before = doc_rows(audit_corpus(PiiAuditor(scrubber="presidio"),
        [item("c/a", A, GOLD_A, None), item("c/b", B, GOLD_B, None)]))
    assert terms(before["c/a", "pii.precision", "exact"]) == (2, 5)
    assert terms(before["c/b", "pii.precision", "exact"]) == (1, 2)
