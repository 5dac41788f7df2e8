"""Layout auditor: the issue's acceptance values through the auditor, states, options, and bad heading labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.auditors.base import ItemArtefacts
from ingestaudit.auditors.layout import HEADING_METRICS, METRICS, LayoutAuditor
from ingestaudit.auditors.registry import stage_names
from ingestaudit.measurement import State
from ingestaudit.model import Block, ParsedDocument
from ingestaudit.truth import Heading, Problem, Truth
from _rows import load_report, measurements


def _heads(*pairs: tuple[int | None, str]) -> tuple[Block, ...]:
    return tuple(Block(text=t, kind="heading", level=lv, order=k) for k, (lv, t) in enumerate(pairs))


def _rows(truth: Truth, parsed: ParsedDocument, **opts) -> dict:
    return {s.metric: s for s in LayoutAuditor(**opts).audit(ItemArtefacts.of(truth, parsed))}


def test_registered_after_tables_with_every_metric():
    names = stage_names()
    assert names.index("layout") == names.index("tables") + 1
    assert {m.name for m in METRICS} >= set(HEADING_METRICS) | {"layout.order_discordance", "layout.list_integrity"}


def test_issue_heading_example_through_the_auditor():
    truth = Truth(headings=(Heading(level=1, text="Scope"), Heading(level=2, text="Terms"),
                            Heading(level=2, text="Fees"), Heading(level=1, text="Annex")))
    parsed = ParsedDocument(text="x", blocks=_heads((1, "Scope"), (3, "Terms"), (1, "Annex"), (2, "Contact")),
                            parser="demo", settings={"headings": {"source": "test"}})
    r = _rows(truth, parsed)
    assert (r["layout.heading_precision"].numerator, r["layout.heading_precision"].denominator) == (3, 4)
    assert r["layout.heading_precision"].value == 0.75
    assert r["layout.heading_recall"].value == 0.75
    assert r["layout.heading_f1"].value == 0.75
    assert (r["layout.heading_level"].numerator, r["layout.heading_level"].denominator) == (2, 3)
    assert r["layout.heading_level"].value == pytest.approx(2 / 3)
    assert (r["layout.hierarchy"].numerator, r["layout.hierarchy"].denominator) == (1, 2)
    assert r["layout.hierarchy"].value == 0.5
    assert r["layout.heading_similarity"].value == 1.0
    assert r["layout.heading_exact"].value == 0.75  # 3 exact of 4 labelled
    d = r["layout.heading_recall"].detail
    assert d["unmatched_labelled"] == ["Fees"] and d["unmatched_predicted"] == ["Contact"]
    assert d["processor"] == "nfc-casefold-ws" and d["threshold"] == 0.8
    assert d["parser_headings"] == {"source": "test"}


def test_case_and_numbering_through_the_auditor():
    truth = Truth(headings=(Heading(level=1, text="Introduction"), Heading(level=2, text="2.1 Methods")))
    parsed = ParsedDocument(text="x", blocks=_heads((1, "INTRODUCTION"), (2, "Methods")))
    r = _rows(truth, parsed)
    assert r["layout.heading_recall"].value == 0.5  # "Methods" is 0.6364 from "2.1 Methods": below 0.8
    assert r["layout.heading_exact"].value == 0.5
    r = _rows(truth, parsed, threshold=0.6)
    assert r["layout.heading_similarity"].value == pytest.approx((1.0 + 7 / 11) / 2)
    assert r["layout.heading_exact"].value == 0.5


def test_no_headings_truth_gives_no_reference_never_zero():
    parsed = ParsedDocument(text="some text", blocks=_heads((1, "A heading")))
    r = _rows(Truth(text="some text here\n"), parsed)
    for m in HEADING_METRICS:
        assert r[m].state is State.NO_REFERENCE and r[m].value is None, m
    assert r["layout.list_integrity"].state is State.NO_REFERENCE
    assert not LayoutAuditor().applies(Truth())


def test_parser_without_blocks_or_without_headings():
    """A parser that declares nothing is judged by its blocks: none at all -> no_prediction; blocks without a
    heading -> it could have emitted one, so recall and F1 are 0."""
    truth = Truth(headings=(Heading(level=1, text="Scope"), Heading(level=2, text="Terms")))
    r = _rows(truth, ParsedDocument(text="Scope\nTerms", blocks=()))
    assert all(r[m].state is State.NO_PREDICTION for m in HEADING_METRICS)
    assert r["layout.heading_f1"].detail["reason"] == ("the parser ? emits no layout blocks and declares no "
                                                       "heading_source")
    r = _rows(truth, ParsedDocument(text="Scope", blocks=(Block(text="Scope"),)))
    assert r["layout.heading_precision"].state is State.NO_PREDICTION  # 0 predicted headings
    assert r["layout.heading_recall"].value == 0.0 and r["layout.heading_f1"].value == 0.0
    assert r["layout.heading_similarity"].state is State.NO_PREDICTION
    assert r["layout.hierarchy"].value == 0.0


def test_declared_heading_source_none_is_no_prediction_and_a_capable_parser_that_finds_none_is_zero():
    truth = Truth(text="Scope\nThe scope of the agreement is wide.\nTerms\n",
                  headings=(Heading(level=1, text="Scope"), Heading(level=2, text="Terms")))
    paragraphs = (Block(text="Scope"), Block(text="The scope of the agreement is wide.", order=1),
                  Block(text="Terms", order=2))
    ocr = ParsedDocument(text=truth.text, blocks=paragraphs, parser="tesseract",
                         settings={"heading_source": "none", "list_source": "none"})
    r = _rows(truth, ocr)
    for m in HEADING_METRICS:
        assert r[m].state is State.NO_PREDICTION and r[m].value is None, m
        assert r[m].detail == {"reason": "the parser tesseract does not emit headings for this document "
                                         "(heading_source = none)", "heading_source": "none"}
    assert r["layout.order_located"].value == 1.0  # the order rows do not depend on headings
    fonts = ParsedDocument(text=truth.text, blocks=paragraphs, parser="pymupdf",
                           settings={"heading_source": "font_heuristic"})
    r = _rows(truth, fonts)
    assert (r["layout.heading_recall"].numerator, r["layout.heading_recall"].denominator) == (0, 2)
    assert r["layout.heading_f1"].value == 0.0 and r["layout.hierarchy"].value == 0.0
    assert r["layout.heading_f1"].detail["heading_source"] == "font_heuristic"
    assert r["layout.heading_precision"].state is State.NO_PREDICTION  # no predicted heading to be right


def test_a_parser_that_produced_no_text_is_no_prediction_everywhere():
    """PyMuPDF on an image-only PDF: a font heuristic that had no text to look at, and no text to order."""
    truth = Truth(text="First paragraph of the scanned page.\nSecond paragraph of the scanned page.\n",
                  headings=(Heading(level=1, text="Minutes"),), lists=(("one item", "two items"),))
    image_only = ParsedDocument(text="", blocks=(Block(text="", kind="image"),), parser="pymupdf",
                                settings={"heading_source": "font_heuristic", "list_source": "marker_patterns"})
    r = _rows(truth, image_only)
    assert {m: r[m].state for m in r} == {m: State.NO_PREDICTION for m in r} and len(r) == 10
    assert r["layout.heading_recall"].detail["reason"] == "the parser pymupdf produced no text"
    assert r["layout.list_integrity"].detail["reason"] == "the parser pymupdf produced no text"


def test_list_source_none_is_no_prediction():
    truth = Truth(lists=(("Bring a lead for dogs", "Close the gates"),))
    parsed = ParsedDocument(text="Bring a lead for dogs\nClose the gates", blocks=(Block(text="x"),),
                            parser="tesseract", settings={"list_source": "none"})
    li = _rows(truth, parsed)["layout.list_integrity"]
    assert li.state is State.NO_PREDICTION and "list_source = none" in li.detail["reason"]


def test_headings_without_any_level_give_no_prediction_for_level_and_hierarchy():
    """unstructured's fast PDF strategy: Title elements without category_depth."""
    truth = Truth(headings=(Heading(level=1, text="Scope"), Heading(level=2, text="Terms")))
    parsed = ParsedDocument(text="x", blocks=_heads((None, "Scope"), (None, "Terms")), parser="unstructured",
                            settings={"heading_source": "title_elements"})
    r = _rows(truth, parsed)
    assert r["layout.heading_recall"].value == 1.0 and r["layout.heading_f1"].value == 1.0
    for m in ("layout.heading_level", "layout.hierarchy"):
        assert r[m].state is State.NO_PREDICTION, m
        assert r[m].detail["reason"] == "the parser unstructured gave no level for any of its 2 heading(s)"
    # one level given: the other unknown level counts as wrong
    r = _rows(truth, ParsedDocument(text="x", blocks=_heads((1, "Scope"), (None, "Terms"))))
    assert (r["layout.heading_level"].numerator, r["layout.heading_level"].denominator) == (1, 2)
    assert (r["layout.hierarchy"].numerator, r["layout.hierarchy"].denominator) == (0, 1)


def test_invalid_headings_truth_gives_error_rows_with_the_message():
    problem = Problem("truth/a/x.json", "headings[0].level", "Input should be greater than or equal to 1")
    truth = Truth(text="Scope of the agreement, which is wide.\nTerms of the agreement, which are short.\n",
                  problems=(problem,))
    assert LayoutAuditor().applies(Truth(problems=(problem,)))
    parsed = ParsedDocument(text=truth.text, blocks=_heads((1, "Scope")))
    r = _rows(truth, parsed)
    for m in HEADING_METRICS:
        assert r[m].state is State.ERROR and r[m].value is None, m
        assert r[m].detail["reason"] == ("the headings truth is invalid: truth/a/x.json: headings[0].level: "
                                         "Input should be greater than or equal to 1")
        assert r[m].detail["label_problems"] == [str(problem)]
    assert r["layout.order_discordance"].value == 0.0  # the text truth is still audited
    assert r["layout.list_integrity"].state is State.NO_REFERENCE  # a headings problem is not a lists problem


def test_truth_error_keeps_the_valid_keys_as_a_partial_truth(tmp_path: Path):
    from ingestaudit.corpus import discover
    from ingestaudit.truth import TruthError, load_truth

    def load(name: str, payload: str, text: str | None = "Scope\nThe scope of it.\n"):
        (tmp_path / name / "docs" / "a").mkdir(parents=True)
        (tmp_path / name / "docs" / "a" / "x.txt").write_text("x", encoding="utf-8")
        (tmp_path / name / "truth" / "a").mkdir(parents=True)
        (tmp_path / name / "truth" / "a" / "x.json").write_text(payload, encoding="utf-8")
        if text is not None:
            (tmp_path / name / "truth" / "a" / "x.txt").write_text(text, encoding="utf-8")
        corpus = discover(tmp_path / name)
        with pytest.raises(TruthError) as err:
            load_truth(corpus.documents[0], corpus.root)
        return err.value

    err = load("heads", json.dumps({"headings": [{"level": 0, "text": "Scope"}], "language": "en",
                                    "lists": [["one", "two"]]}))
    part = err.partial
    assert part is not None and part.text == "Scope\nThe scope of it.\n"
    assert (part.headings, part.language, part.lists) == ((), "en", (("one", "two"),))
    assert [(p.file, p.field) for p in part.problems] == [("truth/a/x.json", "headings[0].level")]
    # a pii span outside the text: pii is left out, and the document no longer declares itself labelled for pii
    err = load("pii", json.dumps({"pii": [{"start": 0, "end": 99, "type": "P"}], "headings": [
        {"level": 1, "text": "Scope"}]}))
    assert err.partial is not None and err.partial.pii == () and err.partial.pii_labelled is False
    assert [h.text for h in err.partial.headings] == ["Scope"]
    # whole-file problems: nothing is kept
    assert load("dup", '{"language": "en", "language": "de"}').partial is None
    assert load("json", "{not json").partial is None
    assert load("twice", json.dumps({"text": "again"})).partial is None  # text in .txt and in the JSON


def test_bad_heading_truth_keeps_the_documents_other_labels_in_a_run(tmp_path: Path):
    from ingestaudit.cli import app

    root = tmp_path / "corpus"
    text = "Scope\nThe scope of this text is wide enough.\nTerms\nThe terms of this text are short too.\n"
    for name in ("bad", "good"):
        (root / "docs" / "a").mkdir(parents=True, exist_ok=True)
        (root / "docs" / "a" / f"{name}.txt").write_text(text, encoding="utf-8")
        (root / "truth" / "a").mkdir(parents=True, exist_ok=True)
        (root / "truth" / "a" / f"{name}.txt").write_text(text, encoding="utf-8")
    heads = [{"level": 1, "text": "Scope"}, {"level": 2, "text": "Terms"}]
    (root / "truth" / "a" / "good.json").write_text(json.dumps({"headings": heads}), encoding="utf-8")
    (root / "truth" / "a" / "bad.json").write_text(json.dumps({
        "headings": [{"level": 0, "text": "Scope"}, {"level": 2}], "language": "en"}), encoding="utf-8")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["run", str(root), "--parser", "reference", "--stage", "extraction",
                                   "--stage", "layout", "--executor", "serial", "--out", str(out)])
    assert res.exit_code == 0, res.output
    report = load_report(out)
    rows = {(m["item"], m["metric"]): m for m in measurements(report)}
    message = ("the headings truth is invalid: truth/a/bad.json: headings[0].level: Input should be greater than or "
               "equal to 1; truth/a/bad.json: headings[1].text: Field required")
    for m in HEADING_METRICS:
        assert rows[("a/bad", m)]["state"] == "error" and rows[("a/bad", m)]["detail"]["reason"] == message, m
    # the good document is audited as usual (the reference parser emits its labelled headings as blocks)
    assert rows[("a/good", "layout.heading_recall")]["value"] == 1.0
    assert rows[("a/good", "layout.hierarchy")]["value"] == 1.0
    # the bad document's text truth still counts: extraction and reading order are audited
    assert rows[("a/bad", "extraction.cer")]["state"] == "ok" and rows[("a/bad", "extraction.cer")]["value"] == 0.0
    assert rows[("a/bad", "layout.order_discordance")]["value"] == 0.0
    # each label problem is reported once, under the truth stage, not again per pipeline and stage
    bad = [(f["stage"], f["message"]) for f in report["failures"] if f["item"] == "a/bad"]
    assert bad == [("truth", "truth/a/bad.json: headings[0].level: Input should be greater than or equal to 1"),
                   ("truth", "truth/a/bad.json: headings[1].text: Field required")]


def test_order_discordance_one_of_six_through_text():
    paras = ["P1 the first paragraph of the note.", "P2 the second paragraph, about valves.",
             "P3 the third paragraph, about hoses.", "P4 the last paragraph closes it."]
    truth = Truth(text="\n".join(paras) + "\n")
    parsed = ParsedDocument(text="\n\n".join([paras[0], paras[2], paras[1], paras[3]]))
    r = _rows(truth, parsed)
    o = r["layout.order_discordance"]
    assert (o.numerator, o.denominator) == (1, 6) and o.value == pytest.approx(1 / 6)
    assert o.detail["discordant_examples"] == [[paras[1], paras[2]]]
    assert r["layout.order_located"].value == 1.0
    # reference order: 0; one paragraph lost: counted apart, not as discordance
    r = _rows(truth, ParsedDocument(text="\n".join([paras[0], paras[1], paras[3]])))
    assert r["layout.order_discordance"].value == 0.0
    assert (r["layout.order_located"].numerator, r["layout.order_located"].denominator) == (3, 4)
    assert r["layout.order_located"].detail["unlocated_paragraphs"] == [paras[2]]


def test_order_states():
    r = _rows(Truth(), ParsedDocument(text="x"))
    assert r["layout.order_discordance"].state is State.NO_REFERENCE
    r = _rows(Truth(text="A single paragraph that is long enough.\n"), ParsedDocument(text=" "))
    assert r["layout.order_discordance"].state is State.NO_PREDICTION
    r = _rows(Truth(text="A single paragraph that is long enough.\n"), ParsedDocument(text="anything"))
    assert r["layout.order_discordance"].state is State.NO_REFERENCE  # an order needs two paragraphs
    r = _rows(Truth(text="x" * 50 + "\n" + "y" * 50), ParsedDocument(text="z" * 60), max_order_chars=40)
    assert r["layout.order_discordance"].state is State.SKIPPED


def test_list_integrity_through_the_auditor():
    truth = Truth(lists=(("Bring a lead for dogs", "Carry a litre of water", "Close the gates"),))
    blocks = (Block(text="Bring a lead for dogs", kind="list_item"),
              Block(text="Close the gates", kind="list_item", order=1),
              Block(text="Carry a litre of water", kind="list_item", order=2))
    r = _rows(truth, ParsedDocument(text="x", blocks=blocks))
    li = r["layout.list_integrity"]
    assert (li.numerator, li.denominator) == (2, 3) and li.detail["matched"] == 3


def test_options_are_validated_and_reported():
    with pytest.raises(ValueError):
        LayoutAuditor(threshold=1.5)
    with pytest.raises(ValueError):
        LayoutAuditor(paragraphs="sentences")
    with pytest.raises(ValueError):
        LayoutAuditor(min_paragraph_chars=0)
    opts = LayoutAuditor().options()
    assert opts["processor"] == "nfc-casefold-ws" and opts["threshold"] == 0.8 and opts["kendall_ties"] == 0.5


def test_bad_heading_labels_are_named_with_file_and_field(tmp_path: Path):
    from ingestaudit.cli import app

    (tmp_path / "docs" / "a").mkdir(parents=True)
    (tmp_path / "truth" / "a").mkdir(parents=True)
    (tmp_path / "docs" / "a" / "x.txt").write_text("Scope\nThe scope of this text.\n", encoding="utf-8")
    (tmp_path / "truth" / "a" / "x.json").write_text(json.dumps({
        "headings": [{"level": 0, "text": "Scope"}, {"level": 2}, {"level": 1, "text": "  "}],
        "lists": [[], ["ok", " "]]}), encoding="utf-8")
    res = CliRunner().invoke(app, ["validate", str(tmp_path)])
    assert res.exit_code == 2
    out = res.output
    assert "truth/a/x.json: headings[0].level: Input should be greater than or equal to 1" in out
    assert "truth/a/x.json: headings[1].text: Field required" in out
    assert "truth/a/x.json: headings[2].text: heading text is blank" in out
    assert "truth/a/x.json: lists[0]: a list needs at least one item" in out
    assert "truth/a/x.json: lists[1]: item 1 is blank" in out
