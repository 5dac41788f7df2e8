"""A parse that returned no text is ``no_prediction`` for the language audit, not an abstention scored against the
language (the demo's scanned PDF under PyMuPDF read ``language.macro_f1`` 0 where every other stage said "no pred";
the new-user trial)."""

from __future__ import annotations

from ingestaudit.auditors.base import ItemArtefacts, artefact_item
from ingestaudit.auditors.language import NO_TEXT, LanguageAuditor
from ingestaudit.detections import LanguageDetection
from ingestaudit.measurement import State
from ingestaudit.model import ParsedDocument
from ingestaudit.truth import Truth


def test_an_empty_parse_is_left_out_as_no_prediction():
    cand = {"requested": "labels", "languages": ["de", "en"], "unsupported": [], "notes": []}
    lang = LanguageAuditor(n_resamples=50, mixed=False)
    context = ("de", "en")
    items = []
    for doc_id, label, predicted, text in (("c/a", "en", "en", "hello there"), ("c/b", "de", "de", "guten Tag"),
                                           ("c/e", "en", None, " \n\t")):
        detection = LanguageDetection("stub", False, cand, True, predicted, "stub")
        item = ItemArtefacts(doc_id, "c", Truth(language=label), ParsedDocument(text=text), steps={"language": detection})
        items.append(artefact_item(lang, item, context)[0])
    res = lang.audit_artefacts(items, context)
    rows = {(d, s.metric): s for d, s in res.doc_scores}
    for metric in ("language.correct", "language.abstained"):
        assert rows["c/e", metric].state is State.NO_PREDICTION and rows["c/e", metric].value is None
        assert NO_TEXT in str(rows["c/e", metric].detail)
    corpus = {(c, s.metric, s.label): s for c, s, _ in res.corpus_scores}
    # scored: c/a en -> en, c/b de -> de: F1 1 for both, macro 1, coverage 2/2. Counted as an abstention, c/e made
    # en's recall 1/2 (F1 2/3), macro (2/3 + 1) / 2 = 5/6 and coverage 2/3
    assert corpus["__all__", "language.macro_f1", ""].value == 1.0
    assert (corpus["__all__", "language.coverage", ""].numerator, corpus["__all__", "language.coverage", ""]
            .denominator) == (2, 2)
    assert res.unreached["__all__"] == {"no_prediction": 1}


def test_a_precomputed_tag_on_an_empty_parse_is_still_scored():
    cand = {"requested": "labels", "languages": ["en"], "unsupported": [], "notes": []}
    lang = LanguageAuditor(n_resamples=50, mixed=False)
    detection = LanguageDetection("stub", False, cand, True, "en", "precomputed")
    item = ItemArtefacts("c/a", "c", Truth(language="en"), ParsedDocument(text=""), steps={"language": detection})
    res = lang.audit_artefacts([artefact_item(lang, item, ("en",))[0]], ("en",))
    rows = {(d, s.metric): s for d, s in res.doc_scores}
    assert rows["c/a", "language.correct"].state is State.OK and rows["c/a", "language.correct"].value == 1
