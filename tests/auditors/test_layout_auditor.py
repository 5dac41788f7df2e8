"""Layout auditor: the issue's acceptance values through the auditor, states, options, and bad heading labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.auditors.layout import HEADING_METRICS, METRICS, LayoutAuditor
from ingestaudit.auditors.registry import stage_names
from ingestaudit.measurement import State
from ingestaudit.model import Block, ParsedDocument
from ingestaudit.truth import Heading, Truth


def _heads(*pairs: tuple[int | None, str]) -> tuple[Block, ...]:
    return tuple(Block(text=t, kind="heading", level=lv, order=k) for k, (lv, t) in enumerate(pairs))


def _rows(truth: Truth, parsed: ParsedDocument, **opts) -> dict:
    return {s.metric: s for s in LayoutAuditor(**opts).audit(truth, parsed)}


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
    truth = Truth(headings=(Heading(level=1, text="Scope"), Heading(level=2, text="Terms")))
    r = _rows(truth, ParsedDocument(text="Scope\nTerms", blocks=()))
    assert all(r[m].state is State.NO_PREDICTION for m in HEADING_METRICS)
    r = _rows(truth, ParsedDocument(text="Scope", blocks=(Block(text="Scope"),)))
    assert r["layout.heading_precision"].state is State.NO_PREDICTION  # 0 predicted headings
    assert r["layout.heading_recall"].value == 0.0 and r["layout.heading_f1"].value == 0.0
    assert r["layout.heading_similarity"].state is State.NO_PREDICTION
    assert r["layout.hierarchy"].value == 0.0


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
