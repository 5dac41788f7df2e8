"""Entities, metadata and relations auditors (issue 28) read the enrichment steps' artefacts: values worked by hand
(the sentence of tests/metrics/test_entities.py), offsets carried onto the reference text, bad labels as errors."""

from __future__ import annotations

import json

import pytest

from ingestaudit.auditors.base import ItemArtefacts
from ingestaudit.auditors.entities import EntitiesAuditor
from ingestaudit.auditors.metadata import MetadataAuditor
from ingestaudit.auditors.relations import RelationsAuditor
from ingestaudit.corpus import discover
from ingestaudit.measurement import State
from ingestaudit.model import Block, ParsedDocument
from ingestaudit.pipeline import make_pipeline
from ingestaudit.steps import audit_corpus
from ingestaudit.truth import Relation, Span, Truth, TruthError, load_truth


def item(doc_id, doc_class, truth, parsed, state=State.OK, reason=""):
    """One document as a corpus-scope auditor receives it, before its step runs."""
    return ItemArtefacts.of(truth, parsed, doc_id=doc_id, doc_class=doc_class, state=state, reason=reason)

TEXT = "John Smith met Mary Jones of Acme Corp in Paris on 3 May 2023 at Google."
GOLD = [(0, 10, "PER"), (15, 25, "PER"), (29, 38, "ORG"), (42, 47, "LOC"), (51, 61, "DATE"), (65, 71, "ORG")]
PRED = [(0, 10, "PERSON"), (15, 25, "ORG"), (29, 33, "ORG"), (53, 61, "GPE"), (11, 14, "PERSON"), (65, 71, "PRODUCT")]
TYPE_MAP = "PERSON=PER GPE=LOC"


def truth(gold=GOLD, text=TEXT, **kw):
    return Truth(text=text, entities=tuple(Span(start=a, end=b, type=c) for a, b, c in gold), entities_labelled=True,
                 **kw)


def parsed(pred=PRED, text=TEXT, **extras):
    return ParsedDocument(text=text, extras={"entities": [{"start": a, "end": b, "type": c} for a, b, c in pred],
                                             **extras})


def rows(result):
    return {(d, s.metric, s.label): s for d, s in result.doc_scores}


def test_entity_rows_by_hand_from_precomputed_spans():
    result = audit_corpus(EntitiesAuditor(type_map=TYPE_MAP), [item("c/a", "c", truth(), parsed())])
    r = rows(result)
    # hand-worked in tests/metrics/test_entities.py: ACT 5, POS 6; strict COR 1, partial COR 2 + PAR 2
    assert (r["c/a", "entities.precision", "strict/micro"].numerator,
            r["c/a", "entities.precision", "strict/micro"].denominator) == (1, 5)
    assert r["c/a", "entities.recall", "partial/micro"].value == pytest.approx(3 / 6)
    assert r["c/a", "entities.f1", "ent_type/micro"].value == pytest.approx(2 * 2 / (5 + 6))
    assert r["c/a", "entities.f1", "strict/micro"].detail["missed"] == 2
    assert r["c/a", "entities.precision", "strict/PER"].value == pytest.approx(1 / 2)
    assert r["c/a", "entities.recall", "exact/ORG"].value == pytest.approx(0.0)  # Acme partial, Google unmapped
    assert r["c/a", "entities.unmapped_predictions", "*"].value == pytest.approx(1 / 6)
    assert r["c/a", "entities.unmapped_predictions", "*"].detail["types"] == {"PRODUCT": 1}
    macro = {(c, s.metric, s.label): s for c, s, _ in result.corpus_scores}
    assert macro["__all__", "entities.recall", "strict/macro"].value == pytest.approx(1 / 8)
    assert result.details["entities"]["counts"]["strict"]["micro"]["incorrect"] == 3


def test_spans_on_a_parser_text_are_carried_onto_the_reference():
    shifted = "Page 1\n" + TEXT.replace("Acme Corp", "Acme  Corp")  # 7 characters before, one space inserted
    pred = [(a + 7 + (1 if a > 33 else 0), b + 7 + (1 if b > 33 else 0), t) for a, b, t in PRED]
    direct = rows(audit_corpus(EntitiesAuditor(type_map=TYPE_MAP), [item("c/a", "c", truth(), parsed())]))
    mapped = rows(audit_corpus(EntitiesAuditor(type_map=TYPE_MAP),
                               [item("c/a", "c", truth(), parsed(pred, shifted))]))
    for key, row in direct.items():
        assert (mapped[key].numerator, mapped[key].denominator) == (row.numerator, row.denominator), key


def _corpus_truth(tmp_path, labels):
    (tmp_path / "docs/c").mkdir(parents=True)
    (tmp_path / "docs/c/a.txt").write_text(TEXT, encoding="utf-8")
    (tmp_path / "truth/c").mkdir(parents=True)
    (tmp_path / "truth/c/a.json").write_text(json.dumps({"text": TEXT, **labels}), encoding="utf-8")
    c = discover(tmp_path)
    with pytest.raises(TruthError) as err:
        load_truth(c.documents[0], c.root)
    return err.value.partial


def test_bad_labels_are_that_documents_error_and_others_are_audited(tmp_path):
    bad = _corpus_truth(tmp_path, {"entities": [{"start": 60, "end": 90, "type": "ORG"}]})
    result = audit_corpus(EntitiesAuditor(type_map=TYPE_MAP), [item("c/bad", "c", bad, parsed()),
                                                                item("c/a", "c", truth(), parsed())])
    r = rows(result)
    err = r["c/bad", "entities.f1", "strict/micro"]
    assert err.state is State.ERROR and "entities[0]: span [60, 90) is outside the text" in err.detail["reason"]
    assert r["c/a", "entities.f1", "strict/micro"].state is State.OK


def test_unlabelled_document_is_no_reference_and_missing_prediction_is_named():
    result = audit_corpus(EntitiesAuditor(), [item("c/x", "c", Truth(text=TEXT), parsed()),
                                              item("c/a", "c", truth(), ParsedDocument(text=TEXT))],
                          make_pipeline("p", {"entities": {"use": "precomputed"}}))
    r = rows(result)
    assert r["c/x", "entities.precision", "strict/micro"].state is State.NO_REFERENCE
    row = r["c/a", "entities.precision", "strict/micro"]
    assert row.state is State.NO_PREDICTION and row.detail["reason"] == "the output carries no entities"


@pytest.mark.slow
def test_spacy_extractor_on_the_sentence():
    """en_core_web_sm 3.8.0 on TEXT finds PERSON John Smith, PERSON Mary Jones, ORG Acme Corp, GPE Paris, DATE 3 May
    2023 and ORG Google (recorded): with PERSON=PER GPE=LOC all six are correct under every scheme."""
    result = audit_corpus(EntitiesAuditor(type_map=TYPE_MAP), [item("c/a", "c", truth(),
                                                                          ParsedDocument(text=TEXT))])
    r = rows(result)
    assert r["c/a", "entities.f1", "strict/micro"].value == pytest.approx(1.0)
    assert r["c/a", "entities.f1", "strict/micro"].detail["source"].startswith("spacy (spacy 3.8")


def test_metadata_title_by_hand_and_parser_first_heading():
    gold = Truth(text=TEXT, metadata={"title": "Annual Report 2023", "date": "2023-05-03", "authors": ["Ann Lee"]})
    out = ParsedDocument(text=TEXT, extras={"metadata": {"title": "Annual report, 2023", "date": "3rd of May 2023"}})
    r = rows(audit_corpus(MetadataAuditor(), [item("c/a", "c", gold, out)]))
    title = r["c/a", "metadata.similarity", "title"]
    assert r["c/a", "metadata.exact_match", "title"].value == 0.0
    assert title.value == pytest.approx(1 - 1 / 19) and title.detail["profile"] == "field-v1"
    assert r["c/a", "metadata.exact_match", "date"].value == 1.0  # dates compared as dates
    assert r["c/a", "metadata.exact_match", "authors"].detail["missing"] is True
    assert r["c/a", "metadata.similarity", "authors"].value == 0.0  # "" vs "ann lee"
    heading = ParsedDocument(text="x", blocks=(Block(text="Intro", kind="heading", level=2),
                                               Block(text="Annual Report 2023", kind="heading", level=1)))
    r2 = rows(audit_corpus(MetadataAuditor(fields="title"), [item("c/a", "c", gold, heading)]))
    assert r2["c/a", "metadata.exact_match", "title"].value == 1.0
    assert r2["c/a", "metadata.exact_match", "title"].detail["source"] == "first_heading"


def test_metadata_language_field_comes_from_the_pipelines_language_step():
    """Issue 28 point 1: with a language step in the pipeline the metadata step's artefact gains ``language`` (here
    the output's precomputed tag, which the language step reads), audited like the other fields; without one the
    labelled field is missing."""
    gold = Truth(text=TEXT, metadata={"language": "de", "title": "Annual Report 2023"})
    out = ParsedDocument(text=TEXT, extras={"metadata": {"title": "Annual Report 2023"}, "language": "de"})
    with_lang = rows(audit_corpus(MetadataAuditor(), [item("c/a", "c", gold, out)],
                                  make_pipeline("p", {"metadata": "precomputed", "language": "lingua"})))
    lang = with_lang["c/a", "metadata.exact_match", "language"]
    assert (lang.value, lang.detail["extracted"], lang.detail["source"]) == (1.0, "de", "language step (precomputed)")
    assert with_lang["c/a", "metadata.similarity", "language"].value == 1.0
    assert with_lang["c/a", "metadata.exact_match", "title"].value == 1.0
    english = ParsedDocument(text=TEXT, extras={"metadata": {}, "language": "en"})
    wrong = rows(audit_corpus(MetadataAuditor(), [item("c/a", "c", gold, english)],
                              make_pipeline("p", {"metadata": "precomputed", "language": "lingua"})))
    assert wrong["c/a", "metadata.exact_match", "language"].value == 0.0
    assert wrong["c/a", "metadata.similarity", "language"].value == 0.0  # "en" vs "de": 2 edits of 2
    without = rows(audit_corpus(MetadataAuditor(), [item("c/a", "c", gold, out)],
                                make_pipeline("p", {"metadata": "precomputed"})))
    assert without["c/a", "metadata.exact_match", "language"].detail["missing"] is True
    assert without["c/a", "metadata.exact_match", "language"].value == 0.0


def test_chunk_entities_by_hand():
    from ingestaudit.enrichment import chunk_entities

    text = "Acme hired Ann Lee and Acme paid Ann."
    spans = [(0, 4, "ORG"), (11, 18, "PER"), (23, 27, "ORG"), (33, 36, "PER"), None]
    # chunk 1 [0, 15) holds Acme and half of Ann Lee; chunk 2 [15, 37) the rest; chunk 3 was not placed
    assert chunk_entities(spans, text, [(0, 15), (15, 37), None, (4, 11)]) == [
        {"ORG": ["Acme"], "PER": ["Ann Lee"]}, {"ORG": ["Acme"], "PER": ["Ann Lee", "Ann"]}, None, {}]


def test_metadata_date_parse_failure_and_bad_label():
    out = ParsedDocument(text=TEXT, extras={"metadata": {"date": "last spring"}})
    result = audit_corpus(MetadataAuditor(), [item("c/a", "c", Truth(text=TEXT, metadata={"date": "2023-05-03"}),
                                                         out),
                                              item("c/b", "c", Truth(text=TEXT, metadata={"date": "soon"}), out)])
    r = rows(result)
    assert r["c/a", "metadata.exact_match", "date"].value == 0.0
    assert r["c/a", "metadata.similarity", "date"].state is State.NO_PREDICTION
    assert result.details["metadata"]["date_parse_failures"] == {"date": 1}
    bad = r["c/b", "metadata.exact_match", "date"]
    assert bad.state is State.ERROR and bad.detail["reason"] == "field 'date': labelled value 'soon' is not a date"


def test_relations_strict_and_boundaries():
    ents = ((0, 10, "PER"), (29, 38, "ORG"), (42, 47, "LOC"))
    gold = truth(ents, relations=(Relation(head=0, tail=1, type="works_for"), Relation(head=1, tail=2, type="in")))
    pred = parsed([(0, 10, "PERSON"), (29, 38, "GPE"), (42, 47, "GPE")],
                  relations=[{"head": 0, "tail": 1, "type": "works_for"}, {"head": 1, "tail": 2, "type": "in"}])
    r = rows(audit_corpus(RelationsAuditor(type_map=TYPE_MAP), [item("c/a", "c", gold, pred)]))
    assert r["c/a", "relations.f1", "strict/micro"].value == 0.0  # Acme predicted GPE -> LOC, labelled ORG
    assert r["c/a", "relations.f1", "boundaries/micro"].value == 1.0
    assert r["c/a", "relations.precision", "boundaries/works_for"].detail == {"tp": 1, "fp": 0, "fn": 0}


def test_metadata_filter_only_fields_are_not_audited_by_default():
    """The demo's truth metadata (lang, source) exists for question filters: the stage does not apply to it."""
    filters_only = Truth(text=TEXT, metadata={"lang": "en", "source": "pdf"})
    assert not MetadataAuditor().applies(filters_only)
    assert MetadataAuditor(fields="*").applies(filters_only)
    assert MetadataAuditor().applies(Truth(text=TEXT, metadata={"year": 2023}))


def test_headline_key_of_entities_is_strict_micro_f1():
    from ingestaudit.report.tables import choose_keys

    pairs = [("entities.f1", "ent_type/DATE"), ("entities.f1", "strict/micro"), ("entities.precision", "exact/micro"),
             ("metadata.similarity", "title"), ("metadata.exact_match", "title")]
    assert choose_keys(pairs) == {"entities": ("entities.f1", "strict/micro"),
                                  "metadata": ("metadata.exact_match", "title")}


@pytest.mark.slow
def test_presidio_extractor_is_a_second_implementation():
    """Presidio 2.2 with en_core_web_sm 3.8.0 on TEXT (recorded): PERSON John Smith and Mary Jones, LOCATION Paris,
    DATE_TIME 3 May 2023 (ORG is ignored by Presidio's defaults). With PERSON=PER LOCATION=LOC DATE_TIME=DATE: strict
    COR 4 of 6 truth spans, nothing spurious."""
    result = audit_corpus(EntitiesAuditor(type_map="PERSON=PER LOCATION=LOC DATE_TIME=DATE"),
                          [item("c/a", "c", truth(), ParsedDocument(text=TEXT))],
                          make_pipeline("p", {"entities": {"use": "presidio"}}))
    row = rows(result)["c/a", "entities.recall", "strict/micro"]
    assert row.detail["source"].startswith("presidio (presidio-analyzer 2.2")
    assert (row.detail["correct"], row.detail["spurious"], row.detail["missed"]) == (4, 0, 2)


def test_step_options_are_checked():
    from ingestaudit.enrichment import check_entities_options, check_metadata_options

    with pytest.raises(ValueError, match="unknown entities step option 'colour'; options are extractor, spacy_model"):
        check_entities_options({"colour": 1})
    with pytest.raises(ValueError, match="metadata extractor must be one of parser, precomputed, got 'llm'"):
        check_metadata_options({"extractor": "llm"})
    with pytest.raises(ValueError, match="max_chars must be >= 1"):
        check_entities_options({"max_chars": 0})
