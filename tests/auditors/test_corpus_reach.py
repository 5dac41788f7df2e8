"""Corpus-level metrics count only the documents that reached their stage (issue 15, DESIGN.md "Five states"); the
others are counted by state in the rows' ``states`` and a class none of whose documents reached the stage has no
value. Language confusion and PII macro rows here; dedup in test_dedup_auditor.py."""

from __future__ import annotations

from ingestaudit.auditors.base import ItemArtefacts
from ingestaudit.auditors.language import LanguageAuditor
from ingestaudit.steps import audit_corpus
from ingestaudit.auditors.pii import PiiAuditor
from ingestaudit.auditors.reach import count_states, describe, dominant_state, unreached_rows
from ingestaudit.measurement import Score, State
from ingestaudit.model import ParsedDocument
from ingestaudit.report.aggregate import corpus_summary_row
from ingestaudit.report.tables import cell
from ingestaudit.truth import Span, Truth


def test_count_states_per_class_and_overall():
    got = count_states([("a", State.ERROR), ("a", State.NO_PREDICTION), ("b", State.NO_PREDICTION)])
    assert got == {"a": {"error": 1, "no_prediction": 1}, "b": {"no_prediction": 1},
                   "__all__": {"error": 1, "no_prediction": 2}}
    assert count_states([]) == {}
    assert dominant_state({"error": 1, "no_prediction": 2}) is State.NO_PREDICTION
    assert dominant_state({"error": 1, "skipped": 1}) is State.ERROR  # tie: the first in State order
    assert describe({"error": 1, "no_prediction": 2}) == "2 no_prediction, 1 error"
    rows = unreached_rows(["dedup.ari"], {"skipped": 3}, label="x")
    assert [(r.state, r.label, r.detail["reason"]) for r in rows] == \
        [(State.SKIPPED, "x", "no document reached this stage (3 skipped)")]


def test_corpus_summary_row_counts_documents_in_its_states():
    # the docstring's example: a rate over 4 parsed documents of a class of 10 whose other 6 have no output
    row = corpus_summary_row(Score.ratio("dedup.missed_merge_rate", 1, 4), pipeline="p", doc_class="c", n_docs=4,
                             unreached={"no_prediction": 6})
    assert (row.n_docs, row.micro) == (4, 0.25)
    assert row.states == {"ok": 4, "no_reference": 0, "no_prediction": 6, "error": 0, "skipped": 0}
    assert cell(row).extra.endswith("corpus of 4 docs; 6 no_prediction")
    # an undefined value over nothing keeps its state once
    empty = corpus_summary_row(Score.missing("index.recall@10", State.ERROR, "boom"), pipeline="p", doc_class="c",
                               n_docs=0)
    assert empty.states["error"] == 1 and sum(empty.states.values()) == 1


def lang_item(doc_id, lang, predicted=None, parsed=True, state=State.OK):
    p = ParsedDocument(text="text", extras={"language": predicted}) if parsed else None
    return ItemArtefacts(doc_id, doc_id.split("/")[0], Truth(text="text", language=lang), p, state=state, reason="why")


def by(result):
    return {(c, s.metric, s.label): (s, n) for c, s, n in result.corpus_scores}


def test_language_rows_count_the_scored_documents_and_name_the_others():
    items = [lang_item("en/a", "en", "en"), lang_item("en/b", "en", "de"), lang_item("en/c", "en", parsed=False),
             lang_item("de/a", "de", parsed=False), lang_item("de/b", "de", parsed=False, state=State.ERROR)]
    result = audit_corpus(LanguageAuditor(mixed=False), items)
    rows = by(result)
    acc, n = rows["en", "language.accuracy", ""]
    assert (acc.numerator, acc.denominator, n) == (1, 2, 2)  # en/c (no output) is not a miss
    for m in ("language.macro_f1", "language.accuracy", "language.coverage"):
        s, n = rows["de", m, ""]  # no document of class de was scored: no value, not 0
        assert (s.value, s.state, n) == (None, State.NO_PREDICTION, 0)
        assert s.detail["reason"] == "no document reached this stage (1 no_prediction, 1 error)"
    assert ("de", "language.f1", "de") not in rows
    acc_all, n_all = rows["__all__", "language.accuracy", ""]
    assert (acc_all.numerator, acc_all.denominator, n_all) == (1, 2, 2)
    assert result.unreached == {"de": {"error": 1, "no_prediction": 1}, "en": {"no_prediction": 1},
                                "__all__": {"error": 1, "no_prediction": 2}}


def test_language_with_nothing_scored_anywhere_is_in_the_parsers_state():
    result = audit_corpus(LanguageAuditor(mixed=False), [lang_item("en/a", "en", parsed=False)])
    s, n = by(result)["__all__", "language.accuracy", ""]
    assert (s.state, n) == (State.NO_PREDICTION, 0)


def pii_item(doc_id, parsed=True):
    text = "Call Ana Lima"
    truth = Truth(text=text, pii=(Span(start=5, end=13, type="PERSON"),))
    p = ParsedDocument(text=text, extras={"pii": [{"start": 5, "end": 13, "type": "PERSON"}]}) if parsed else None
    return ItemArtefacts(doc_id, doc_id.split("/")[0], truth, p, state=State.OK if parsed else State.SKIPPED,
                         reason="too big")


def test_pii_macro_rows_of_a_class_without_output_have_no_value():
    result = audit_corpus(PiiAuditor(scrubber="precomputed"),
        [pii_item("a/1"), pii_item("b/1", parsed=False), pii_item("b/2", parsed=False)])
    rows = by(result)
    s, n = rows["a", "pii.precision", "exact/macro"]
    assert (s.value, n) == (1.0, 1)
    s, n = rows["b", "pii.precision", "exact/macro"]
    assert (s.value, s.state, n) == (None, State.SKIPPED, 0)
    s, n = rows["__all__", "pii.recall", "token/macro"]
    assert (s.value, n) == (1.0, 1)
    assert result.unreached == {"b": {"skipped": 2}, "__all__": {"skipped": 2}}
