"""Language auditor: per-document rows, corpus rows per class, mixed documents, candidates, and the CLI end to end
(component level with ``--parser reference``, end to end with a real parser) on the demo corpus.

(Named ``test_language_auditor.py``: a second ``test_language.py`` in tests/stages would collide at collection,
tests/ having no ``__init__.py`` files.)
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.auditors.base import ItemArtefacts
from ingestaudit.auditors.language import LanguageAuditor
from ingestaudit.cli import app
from ingestaudit.measurement import State
from ingestaudit.model import ParsedDocument
from ingestaudit.stages.language import LanguageDetector, Segment
from ingestaudit.stages.language_step import LanguageStep
from ingestaudit.steps import audit_corpus
from ingestaudit.truth import Truth
from _rows import load_report, measurements

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "demo"


class TableDetector(LanguageDetector):
    """A scripted user detector: the prediction of each text is looked up in `PRED`; a text holding "|" is split
    there into an English and a German segment (German confirmed); anything else is one segment."""

    name = "table"
    PRED = {"EN one": "en", "EN two": "es", "EN three": None, "DE one": "de", "DE two": "en", "FR one": "fr",
            "reference-only": "en"}
    built: list[tuple[str, ...] | None] = []

    def __init__(self, languages=None):
        super().__init__(languages)
        TableDetector.built.append(self.languages)

    def detect(self, text):
        return self.PRED.get(text)

    def segments(self, text):
        if "|" in text:
            cut = text.index("|")
            return [Segment("en", 0, cut), Segment("de", cut + 1, len(text))]
        return [Segment(self.PRED.get(text) or "en", 0, len(text))]

    def confidences(self, text):
        return {"en": 0.02, "de": 0.98}

    def version(self):
        return "1"


STUB = f"{__name__}:TableDetector"


def item(doc_id, language, text, *, reference=None, extras=None, state=State.OK, parsed=True):
    cls = doc_id.split("/")[0]
    truth = Truth(text=reference if reference is not None else text, language=language)
    pd = ParsedDocument(text=text, extras=extras or {}) if parsed else None
    return ItemArtefacts(doc_id, cls, truth, pd, state=state, reason="" if parsed else "no output file")


def corpus():
    return [
        item("c1/a", "en", "EN one"),  # en -> en
        item("c1/b", "en", "EN two"),  # en -> es
        item("c1/c", "en", "EN three"),  # en -> abstained
        item("c1/d", "de", "DE one"),  # de -> de
        item("c2/e", "de", "DE two"),  # de -> en
        item("c2/f", "fr", "", extras={"language": "fra"}),  # precomputed ISO 639-3 tag -> fr
        item("c2/g", "fr", "", extras={"language": "not a tag!"}),  # invalid precomputed tag -> error
        item("c2/h", "de", "", state=State.NO_PREDICTION, parsed=False),  # no stage output
        item("c2/i", None, "EN one"),  # no label
        # mixed on its *reference* text (English | German, 9 vs 11 non-space characters), single on the parser's
        item("c2/j", "en", "reference-only", reference="aaaa bbbb|cccc ddddddd"),
    ]


@pytest.fixture(scope="module")
def result():
    TableDetector.built.clear()
    return audit_corpus(LanguageAuditor(detector=STUB, n_resamples=200), corpus())


def rows(res, doc_id):
    return {s.metric: s for d, s in res.doc_scores if d == doc_id}


def corpus_row(res, cls, metric, label=""):
    (hit,) = [(s, n) for c, s, n in res.corpus_scores if (c, s.metric, s.label) == (cls, metric, label)]
    return hit


def test_per_document_rows(result):
    a = rows(result, "c1/a")
    assert (a["language.correct"].value, a["language.abstained"].value) == (1.0, 0.0)
    assert a["language.correct"].detail == {"true": "en", "predicted": "en", "source": "table"}
    b = rows(result, "c1/b")
    assert (b["language.correct"].value, b["language.correct"].detail["predicted"]) == (0.0, "es")
    c = rows(result, "c1/c")
    assert (c["language.correct"].value, c["language.abstained"].value) == (0.0, 1.0)  # abstention: wrong
    f = rows(result, "c2/f")
    assert f["language.correct"].value == 1.0 and f["language.correct"].detail["source"] == "precomputed"
    g = rows(result, "c2/g")
    assert g["language.correct"].state is State.ERROR and "precomputed language" in g["language.correct"].detail[
        "reason"]
    h = rows(result, "c2/h")  # no stage output: every row in the parser's state, the mixed flag included
    assert {s.state for s in h.values()} == {State.NO_PREDICTION}
    i = rows(result, "c2/i")
    assert {s.state for s in i.values()} == {State.NO_REFERENCE}
    for doc in ("c1/a", "c1/b", "c1/c", "c1/d", "c2/e", "c2/f"):
        assert rows(result, doc)["language.mixed"].value == 0.0


def test_an_unconfirmed_second_language_does_not_make_a_document_mixed(result):
    j = rows(result, "c2/j")
    # reference "aaaa bbbb|cccc ddddddd": en = "aaaa bbbb" (8 non-space), de = "cccc ddddddd" (11): de is the main
    # language, en the second with 8/19 = 0.42 >= 0.25; re-scored, the en segments give p(en) / (p(de) + p(en)) =
    # 0.02 / (0.98 + 0.02) = 0.02 < 0.9: not confirmed, not mixed
    mixed = j["language.mixed"]
    assert mixed.value == 0.0
    assert mixed.detail["text"] == "reference"
    assert mixed.detail["shares"] == [["de", round(11 / 19, 4)], ["en", round(8 / 19, 4)]]
    assert mixed.detail["confirmation"] == 0.02
    assert j["language.correct"].value == 1.0  # scored on the parser's text "reference-only" -> en


def test_corpus_rows_over_all_classes(result):
    # scored pairs: (en,en) (en,es) (en,None) (de,de) (de,en) (fr,fr) (en,en: c2/j) -> 7 documents
    # en: tp 2 (c1/a, c2/j), fp 1 (c2/e "DE two"), fn 2 (c1/b -> es, c1/c abstained)
    p, n = corpus_row(result, "__all__", "language.precision", "en")
    assert (p.numerator, p.denominator, n) == (2, 3, 7)
    r, _ = corpus_row(result, "__all__", "language.recall", "en")
    assert (r.numerator, r.denominator) == (2, 4)
    f1, _ = corpus_row(result, "__all__", "language.f1", "en")
    assert (f1.numerator, f1.denominator) == (4, 4 + 1 + 2)  # 2tp / (2tp + fp + fn) = 4/7
    es, _ = corpus_row(result, "__all__", "language.precision", "es")
    assert (es.value, es.numerator, es.denominator) == (0.0, 0, 1)
    es_r, _ = corpus_row(result, "__all__", "language.recall", "es")
    assert es_r.state is State.NO_REFERENCE  # never labelled
    macro, _ = corpus_row(result, "__all__", "language.macro_f1")
    # de: tp 1, fn 1 -> 2/3; en: 4/7; fr: 1 -> (2/3 + 4/7 + 1)/3 = (14/21 + 12/21 + 21/21)/3 = 47/63
    assert Fraction(macro.value).limit_denominator(1000) == Fraction(47, 63)
    assert macro.detail["labels"] == ["de", "en", "fr"]
    assert "bootstrap" in macro.detail["ci"]["method"]
    acc, _ = corpus_row(result, "__all__", "language.accuracy")
    assert (acc.numerator, acc.denominator) == (4, 7)
    cov, _ = corpus_row(result, "__all__", "language.coverage")
    assert (cov.numerator, cov.denominator) == (6, 7)
    assert acc.detail["ci"]["method"].startswith("wilson")


def test_corpus_rows_per_class(result):
    # c1: (en,en) (en,es) (en,None) (de,de): en P 1/1, R 1/3, F1 2/4; de F1 2/2; macro (1/2 + 1)/2 = 3/4
    assert corpus_row(result, "c1", "language.precision", "en")[0].value == 1.0
    assert corpus_row(result, "c1", "language.f1", "en")[0].value == 0.5
    assert corpus_row(result, "c1", "language.macro_f1")[0].value == 0.75
    assert corpus_row(result, "c1", "language.accuracy")[1] == 4
    # c2: (de,en) (fr,fr) (en,en: c2/j): de F1 0/1, en P 1/2 R 1/1 F1 2/3, fr 1 -> macro (0 + 2/3 + 1)/3 = 5/9
    assert corpus_row(result, "c2", "language.f1", "de")[0].value == 0.0
    assert corpus_row(result, "c2", "language.macro_f1")[0].value == pytest.approx(5 / 9, abs=1e-12)
    acc, n = corpus_row(result, "c2", "language.accuracy")
    assert (acc.numerator, acc.denominator, n) == (2, 3, 3)


def test_details(result):
    d = result.details
    assert d["candidates"]["languages"] == ["de", "en", "fr"]  # the labels of the corpus
    assert TableDetector.built == [("de", "en", "fr")]  # built once, with only those candidates
    assert d["top_confusions"] == [{"true": "de", "predicted": "en", "count": 1},
                                   {"true": "en", "predicted": "es", "count": 1}]
    assert d["abstentions_by_label"] == {"en": 1}
    table = d["confusion_matrix"]["__all__"]
    assert table["rows"] == ["de", "en", "fr"] and table["columns"][-1] == "__abstained__"
    assert table["counts"][1] == [0, 2, 1, 0, 1]  # en: 2 right, 1 -> es, 1 abstained
    assert d["unscored"] == {"error": 1, "no_prediction": 1}
    assert d["selective_accuracy"]["__all__"]["value"] == pytest.approx(4 / 6)
    json.dumps(d)  # JSON-serialisable


def test_mixed_document_is_excluded_and_listed():
    TableDetector.PRED["mixed-parser-text"] = "de"
    items = [item("c/a", "en", "EN one"), item("c/b", "de", "DE one"),
             item("c/m", "en", "mixed-parser-text", reference="aaaa bbbb cccc dd|eeee ffff")]
    # reference: en "aaaa bbbb cccc dd" (14 non-space) vs de "eeee ffff" (8): en main, de second 8/22 = 0.36,
    # confirmed: p(de) / (p(en) + p(de)) = 0.98 >= 0.9
    res = audit_corpus(LanguageAuditor(detector=STUB, n_resamples=50), items)
    m = rows(res, "c/m")
    assert m["language.mixed"].value == 1.0
    assert m["language.mixed"].detail["second_share"] == round(8 / 22, 4)
    assert m["language.correct"].state is State.SKIPPED and "mixed-language" in m["language.correct"].detail["reason"]
    assert m["language.correct"].detail["predicted"] == "de"
    (listed,) = res.details["mixed_documents"]
    assert (listed["doc_id"], listed["true"], listed["predicted"], listed["predicted_in_found"]) == ("c/m", "en", "de",
                                                                                                   True)
    acc, n = corpus_row(res, "__all__", "language.accuracy")
    assert (acc.numerator, acc.denominator, n) == (2, 2, 2)  # the mixed document is not a single-label error
    # on the parser's text ("mixed-parser-text", one segment) it is not mixed, so it is scored, and wrong
    res = audit_corpus(LanguageAuditor(detector=STUB, mixed_text="input", n_resamples=50), items)
    assert rows(res, "c/m")["language.correct"].value == 0.0
    # and with the analysis off every labelled document is scored
    res = audit_corpus(LanguageAuditor(detector=STUB, mixed=False, n_resamples=50), items)
    assert rows(res, "c/m")["language.mixed"].state is State.SKIPPED
    assert corpus_row(res, "__all__", "language.accuracy")[0].denominator == 3


def test_precomputed_can_be_ignored_and_a_broken_detector_gives_error_rows():
    items = [item("c/a", "en", "EN one", extras={"language": "de"}), item("c/b", "de", "DE one")]
    res = audit_corpus(LanguageAuditor(detector=STUB, use_precomputed=False, mixed=False, n_resamples=50), items)
    assert rows(res, "c/a")["language.correct"].value == 1.0  # the detector's "en", not the tag
    res = audit_corpus(LanguageAuditor(detector="no_such_module:Nope", n_resamples=50), items)
    b = rows(res, "c/b")
    assert {s.state for s in b.values()} == {State.ERROR}
    assert "could not be built" in b["language.correct"].detail["reason"]
    # c/a carries its own (wrong) tag: scored without a detector; only its mixed flag needs one
    a = rows(res, "c/a")
    assert (a["language.correct"].value, a["language.mixed"].state) == (0.0, State.ERROR)
    acc, n = corpus_row(res, "__all__", "language.accuracy")
    assert (acc.numerator, acc.denominator, n) == (0, 1, 1)


def test_candidate_sets_for_lingua_without_loading_models():
    a = LanguageStep()  # the candidates are the language step's now (issue 24): the auditor loads no detector
    chosen, info = a.candidates({"en", "de", "gd"})  # Scottish Gaelic: lingua does not know it
    assert chosen == ("de", "en") and info["unsupported"] == ["gd"] and info["notes"]
    chosen, info = a.candidates({"en"})  # one language: a one-candidate detector is always right
    assert chosen is not None and len(chosen) == 75 and "every lingua language" in info["notes"][0]
    chosen, _ = LanguageStep(languages=["eng", "de-AT", "fr"]).candidates({"en"})
    assert chosen == ("de", "en", "fr")


def test_bad_options_are_refused():
    for kwargs in ({"languages": "some"}, {"min_relative_distance": 1.2}, {"mixed_share": 0.7},
                   {"mixed_text": "both"}, {"detector": STUB, "min_relative_distance": 0.1},
                   {"languages": ["zz-not-a-tag"]}):
        with pytest.raises(ValueError):
            LanguageAuditor(**kwargs)
    assert LanguageAuditor(min_relative_distance=0.25).options()["min_relative_distance"] == 0.25


# ------------------------------------------------------------------------------------------ CLI, real lingua

def write_doc(root: Path, doc_id: str, text: str, language: str) -> None:
    (root / "docs" / doc_id).parent.mkdir(parents=True, exist_ok=True)
    (root / "truth" / doc_id).parent.mkdir(parents=True, exist_ok=True)
    (root / "docs" / f"{doc_id}.txt").write_text(text + "\n", encoding="utf-8")
    (root / "truth" / f"{doc_id}.json").write_text(json.dumps({"text": text, "language": language}), encoding="utf-8")


def summary(report: dict, parser: str, metric: str, label: str = "", cls: str = "__all__") -> dict:
    (row,) = [s for s in report["summary"] if (s["pipeline"], s["doc_class"], s["metric"], s["label"])
              == (parser, cls, metric, label)]
    return row


def test_cli_with_lingua_and_a_minimum_relative_distance(tmp_path):
    root = tmp_path / "corpus"
    write_doc(root, "notes/hello", "Hello", "en")
    write_doc(root, "notes/stamp", "2023-01-01 12:00", "en")
    write_doc(root, "notes/english", "The committee will publish its final report on the new railway line next "
              "Thursday morning.", "en")
    write_doc(root, "notes/german", "Die Stadtbibliothek bleibt wegen Umbauarbeiten bis Ende des Monats am Samstag "
              "geschlossen.", "de")
    write_doc(root, "notes/french", "Nous avons visité le musée avec nos enfants pendant les vacances d'été.", "fra")
    write_doc(root, "notes/spanish", "¿Dónde está la estación de tren más cercana a la plaza mayor?", "es-ES")
    (root / "ingestaudit.toml").write_text("[auditor_options.language]\nmin_relative_distance = 0.25\n")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["run", str(root), "--parser", "reference", "--stage", "language", "--out",
                                   str(out), "--workers", "1"])
    assert res.exit_code == 0, res.output
    report = load_report(out)
    # "Hello" and the time stamp abstain; the four full sentences are right: accuracy 4/6, coverage 4/6
    assert summary(report, "reference", "language.accuracy")["micro"] == pytest.approx(4 / 6)
    assert summary(report, "reference", "language.coverage")["micro"] == pytest.approx(4 / 6)
    # en: 1 of 3 found, never wrongly predicted: P 1/1, R 1/3, F1 2/(2+0+2) = 1/2
    assert summary(report, "reference", "language.precision", "en")["micro"] == 1.0
    assert summary(report, "reference", "language.recall", "en")["micro"] == pytest.approx(1 / 3)
    assert summary(report, "reference", "language.f1", "en")["micro"] == 0.5
    assert summary(report, "reference", "language.abstained")["micro"] == pytest.approx(2 / 6)
    (cand,) = [d for d in report["details"] if d["name"] == "candidates"]
    assert cand["data"]["languages"] == ["de", "en", "es", "fr"]  # BCP 47 / ISO 639-3 labels mapped
    assert report["config"]["auditors"]["language"]["min_relative_distance"] == 0.25
    abstained = {m["item"] for m in measurements(report) if m["metric"] == "language.abstained"
                 and m["value"] == 1.0}
    assert abstained == {"notes/hello", "notes/stamp"}


def _demo_report(tmp_path: Path, parsers: list[str]) -> dict:
    out = tmp_path / "out"
    args = ["run", str(DEMO), "--stage", "language", "--out", str(out), "--workers", "2"]
    for p in parsers:
        args += ["--parser", p]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    return load_report(out)


def _correct(report: dict, parser: str) -> dict[str, tuple]:
    return {m["item"]: (m["state"], m["value"], m["detail"].get("predicted"))
            for m in measurements(report) if m["pipeline"] == parser and m["metric"] == "language.correct"}


def test_demo_component_level_and_end_to_end(tmp_path):
    report = _demo_report(tmp_path, ["reference", "pymupdf"])
    # component level: lingua on the 10 reference texts (9 English, 1 German): all right
    ref = _correct(report, "reference")
    assert len(ref) == 10 and all(v == ("ok", 1.0, "de" if "stadtbibliothek" in d else "en") for d, v in ref.items())
    assert summary(report, "reference", "language.macro_f1")["micro"] == 1.0
    assert summary(report, "reference", "language.f1", "de")["micro"] == 1.0
    # end to end with PyMuPDF: 3 born-digital PDFs right; the image-only PDF has no text layer, so its rows are
    # no_prediction (no text: nothing to detect, not scored; it scored 0 as an abstention before stop 34); PNG and
    # HTML files are skipped by PyMuPDF (no stage output, not scored)
    e2e = _correct(report, "pymupdf")
    assert e2e["scanned/allotment_minutes"] == ("no_prediction", None, None)
    assert {d for d, v in e2e.items() if v == ("ok", 1.0, "en")} == {
        "born_digital/bylaw_quiet_hours", "born_digital/lab_notes_right_first", "born_digital/pump_field_note"}
    assert {d for d, v in e2e.items() if v[0] == "skipped"} == {
        "scanned/bylaw_quiet_hours_scan", "scanned/notice_water_main", "scanned/recipe_card_degraded",
        "web/kettle_faq", "web/stadtbibliothek_oeffnungszeiten", "web/trail_guide"}
    # 3 scored: accuracy 3/3 and coverage 3/3; en: P 3/3, R 3/3, F1 1 (= macro F1: en is the only language scored)
    assert summary(report, "pymupdf", "language.accuracy")["micro"] == 1.0
    assert summary(report, "pymupdf", "language.coverage")["micro"] == 1.0
    assert summary(report, "pymupdf", "language.f1", "en")["micro"] == 1.0
    assert summary(report, "pymupdf", "language.macro_f1")["micro"] == 1.0
    assert summary(report, "pymupdf", "language.macro_f1", cls="scanned")["states"]["no_prediction"] == 1
    # the mixed flag reads the reference texts of the documents each parser produced text for: none is mixed
    for parser, n in (("reference", 10), ("pymupdf", 3)):
        row = summary(report, parser, "language.mixed")
        assert (row["n_docs"], row["micro"]) == (n, 0.0)
    skipped = [m for m in measurements(report) if m["pipeline"] == "pymupdf" and m["stage"] == "language"
               and m["item"] == "scanned/notice_water_main"]
    assert len(skipped) == 3 and {m["state"] for m in skipped} == {"skipped"}


@pytest.mark.slow
def test_demo_german_end_to_end_through_unstructured(tmp_path):
    report = _demo_report(tmp_path, ["reference", "unstructured"])
    e2e = _correct(report, "unstructured")
    assert e2e["web/stadtbibliothek_oeffnungszeiten"] == ("ok", 1.0, "de")
    assert e2e["scanned/allotment_minutes"] == ("no_prediction", None, None)  # no text layer: nothing to detect
    # 6 documents scored: 5 English right, 1 German right: F1 1 for both, macro 1, accuracy 6/6 (the empty parse,
    # scored as an abstention before stop 34, made en's F1 10/11, macro 21/22, accuracy 6/7)
    assert summary(report, "unstructured", "language.macro_f1")["micro"] == 1.0
    assert summary(report, "unstructured", "language.accuracy")["micro"] == 1.0
