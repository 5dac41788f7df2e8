"""TablesAuditor: document and per-table TEDS, detection, the states, options, truth splitting, and the CLI path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ingestaudit.auditors.base import ItemArtefacts
from ingestaudit.auditors.registry import load_auditor
from ingestaudit.auditors.tables import METRICS, TABLE_EXTRACTION, TablesAuditor, reference_tables, split_tables
from ingestaudit.measurement import State
from ingestaudit.auditors import metric_catalog as specs
from ingestaudit.model import ParsedDocument
from ingestaudit.truth import Truth
from _rows import load_report, measurements

# The ground truth: thead "Name | Qty", tbody "apple | 3", all td; n = 8 element nodes under <table>.
GT = "<table><thead><tr><td>Name</td><td>Qty</td></tr></thead><tbody><tr><td>apple</td><td>3</td></tr></tbody></table>"
GT_TH = GT.replace("<td>Name</td><td>Qty</td>", "<th>Name</th><th>Qty</th>")  # 2 renames of 8 -> 0.75
ONE_TBODY = "<table><tbody><tr><td>Name</td><td>Qty</td></tr><tr><td>apple</td><td>3</td></tr></tbody></table>"  # 0.625
SMALL = "<table><tbody><tr><td>x</td></tr></tbody></table>"  # n = 3


def audit(refs, preds, declared=True, **options):
    settings_ = {} if declared is None else {TABLE_EXTRACTION: declared}
    parsed = ParsedDocument(text="", tables=tuple(preds), parser="p", settings=settings_)
    rows = TablesAuditor(**options).audit(ItemArtefacts.of(Truth(tables=tuple(refs)), parsed))
    keys = [(s.metric, s.label) for s in rows]
    assert len(keys) == len(set(keys)), "one row per metric and label"
    return {k: s for k, s in zip(keys, rows)}


def test_registered_specs():
    assert {s.name for s in METRICS} == {"tables.teds", "tables.teds_s", "tables.precision", "tables.recall",
                                         "tables.f1"}
    assert specs.get("tables.precision").ci == specs.get("tables.recall").ci == "wilson"
    assert specs.get("tables.teds").ci == specs.get("tables.f1").ci == "bootstrap"
    assert all(specs.get(s.name).higher_is_better for s in METRICS)


def test_applies_only_with_a_non_blank_reference_table():
    a = TablesAuditor()
    assert not a.applies(Truth())
    assert not a.applies(Truth(tables=("", "  \n")))
    assert a.applies(Truth(tables=(GT,)))


def test_identical_table_scores_one_everywhere():
    r = audit([GT], [GT])
    for m in ("tables.teds", "tables.teds_s", "tables.precision", "tables.recall", "tables.f1"):
        assert r[m, ""].state is State.OK and r[m, ""].value == 1.0, m
    assert (r["tables.teds", ""].numerator, r["tables.teds", ""].denominator) == (1.0, 1)
    row = r["tables.teds", "table/0"]
    assert row.value == 1.0 and row.detail["matched"] and row.detail["predicted_index"] == 0
    assert (row.detail["n_nodes_reference"], row.detail["edit_distance"]) == (8, 0.0)


def test_dropped_table_counts_zero_in_the_document_value():
    # refs GT, SMALL; one prediction equal to GT: pair (0, 0) = 1.0, SMALL unmatched = 0
    # -> document TEDS (1 + 0) / 2 = 0.5; TP = 1: P = 1/1, R = 1/2, F1 = 2*1 / (2 + 1) = 2/3
    r = audit([GT, SMALL], [GT])
    doc = r["tables.teds", ""]
    assert (doc.value, doc.numerator, doc.denominator) == (0.5, 1.0, 2)
    assert doc.detail["unmatched_reference"] == [1] and doc.detail["pairs"] == {"0": 0}
    assert r["tables.teds", "table/1"].value == 0.0 and r["tables.teds", "table/1"].detail == {"matched": False}
    assert r["tables.teds_s", "table/1"].value == 0.0
    assert (r["tables.precision", ""].numerator, r["tables.precision", ""].denominator) == (1, 1)
    assert (r["tables.recall", ""].numerator, r["tables.recall", ""].denominator) == (1, 2)
    assert (r["tables.f1", ""].numerator, r["tables.f1", ""].denominator) == (2, 3)
    assert r["tables.f1", ""].value == pytest.approx(2 / 3)


def test_pairs_follow_the_optimal_assignment_not_the_order():
    # Cross pairs score <= 3/8 (SMALL has n = 3 against n = 8, so d >= 5); the assignment takes GT<->GT_TH (0.75)
    # and SMALL<->SMALL (1.0): document TEDS (0.75 + 1) / 2 = 0.875; TEDS-S ignores only content, th != td stays:
    # also (0.75 + 1) / 2.
    r = audit([GT, SMALL], [SMALL, GT_TH])
    assert r["tables.teds", ""].value == pytest.approx(0.875)
    assert r["tables.teds_s", ""].value == pytest.approx(0.875)
    assert r["tables.teds", "table/0"].detail["predicted_index"] == 1
    assert r["tables.teds", "table/1"].detail["predicted_index"] == 0
    assert r["tables.teds", "table/0"].value == pytest.approx(0.75)


def test_extra_prediction_lowers_precision_only():
    # pairs: GT<->GT (1.0); SMALL unmatched on the predicted side: P = 1/2, R = 1/1, F1 = 2 / (1 + 2) = 2/3
    r = audit([GT], [SMALL, GT])
    assert r["tables.teds", ""].value == 1.0
    assert r["tables.precision", ""].value == 0.5 and r["tables.recall", ""].value == 1.0
    assert r["tables.f1", ""].value == pytest.approx(2 / 3)
    assert r["tables.teds", ""].detail["unmatched_predicted"] == [0]


def test_detection_threshold_is_an_option():
    # ONE_TBODY scores 0.625 against GT (d = 3 of n = 8): detected at 0.5, not at 0.7
    r = audit([GT], [ONE_TBODY])
    assert r["tables.teds", ""].value == pytest.approx(0.625)
    assert r["tables.recall", ""].value == 1.0 and r["tables.recall", ""].detail["threshold"] == 0.5
    r = audit([GT], [ONE_TBODY], detection_threshold=0.7)
    assert r["tables.teds", ""].value == pytest.approx(0.625)  # TEDS itself does not move
    assert (r["tables.recall", ""].value, r["tables.precision", ""].value, r["tables.f1", ""].value) == (0, 0, 0)
    assert TablesAuditor(detection_threshold=0.7).options()["detection_threshold"] == 0.7


def test_parser_that_looked_and_found_nothing_scores_zero():
    r = audit([GT, SMALL], [], declared=True)
    for m in ("tables.teds", "tables.teds_s", "tables.recall", "tables.f1"):
        assert r[m, ""].state is State.OK and r[m, ""].value == 0.0, m
    assert r["tables.teds", ""].denominator == 2 and r["tables.f1", ""].denominator == 2
    assert r["tables.precision", ""].state is State.NO_PREDICTION and r["tables.precision", ""].value is None
    assert r["tables.teds", "table/1"].value == 0.0


@pytest.mark.parametrize("declared", [False, None])
def test_parser_that_cannot_extract_tables_counts_zero_or_no_prediction_under_skip(declared):
    settings_ = {TABLE_EXTRACTION: False, "table_extraction_note": "fast strategy"} if declared is False else {}
    parsed = ParsedDocument(text="x", parser="unstructured", settings=settings_)
    # missing_table = zero (default): both reference tables dropped, TEDS (0 + 0) / 2 = 0 (issue 25: it used to be
    # no_prediction, so a pipeline that extracts no table could not lose a table comparison)
    r = {(s.metric, s.label): s for s in TablesAuditor().audit(ItemArtefacts.of(Truth(tables=(GT, SMALL)), parsed))}
    for m in ("tables.teds", "tables.teds_s", "tables.recall", "tables.f1"):
        assert r[m, ""].state is State.OK and r[m, ""].value == 0.0, m
    assert r["tables.teds", ""].denominator == 2 and r["tables.teds", "table/1"].value == 0.0
    assert r["tables.precision", ""].state is State.NO_PREDICTION
    note = r["tables.teds", ""].detail["note"]
    assert "unstructured" in note and note.endswith("every reference table counts 0 (missing_table = zero)")
    assert ("fast strategy" in note) if declared is False else ("does not declare" in note)
    rows = TablesAuditor(missing_table="skip").audit(ItemArtefacts.of(Truth(tables=(GT, SMALL)), parsed))
    assert len(rows) == 5 + 2 * 2
    assert all(s.state is State.NO_PREDICTION and s.value is None for s in rows)
    reason = rows[0].detail["reason"]
    assert "unstructured" in reason and reason.endswith("missing_table = skip")
    assert ("fast strategy" in reason) if declared is False else ("does not declare" in reason)


ROW3 = "<table><tbody><tr><td>a</td><td>b</td><td>c</td></tr></tbody></table>"  # n = tbody + tr + 3 td = 5
ROW3_X = ROW3.replace("<td>c</td>", "<td>x</td>")  # one cell renamed (content c -> x, cost 1): TEDS 1 - 1/5 = 0.8
TWO_ROWS = "<table><tbody><tr><td>p</td></tr><tr><td>q</td></tr></tbody></table>"  # TEDS 0 against ROW3_X


def test_missing_table_convention_zero_or_skip():
    """Truth with 2 tables, the pipeline extracts 1 (TEDS 0.8 against its match): mean TEDS 0.4 under zero,
    0.8 under skip."""
    zero = audit([ROW3, TWO_ROWS], [ROW3_X])
    assert zero["tables.teds", "table/0"].value == pytest.approx(0.8)
    # (0.8 + 0) / 2 reference tables
    assert zero["tables.teds", ""].value == pytest.approx(0.4) and zero["tables.teds", ""].denominator == 2
    assert zero["tables.teds", "table/1"].value == 0.0
    skip = audit([ROW3, TWO_ROWS], [ROW3_X], missing_table="skip")
    # 0.8 / 1 matched reference table; the unmatched one left out
    assert skip["tables.teds", ""].value == pytest.approx(0.8) and skip["tables.teds", ""].denominator == 1
    assert skip["tables.teds", "table/1"].state is State.NO_PREDICTION
    assert skip["tables.teds", ""].detail["missing_table"] == "skip"
    # detection is the same under both: TP 1 (0.8 >= 0.5) of 2 reference tables
    assert zero["tables.recall", ""].value == skip["tables.recall", ""].value == 0.5
    # a parser that looked and found nothing: 0 under zero, no value under skip
    assert audit([ROW3], [], missing_table="skip")["tables.teds", ""].state is State.NO_PREDICTION
    assert TablesAuditor(missing_table="skip").options()["missing_table"] == "skip"
    with pytest.raises(ValueError, match=r"\[auditor_options.tables\] missing_table must be one of 'zero', 'skip', "
                                         r"not 'none'"):
        TablesAuditor(missing_table="none")


def test_blank_predicted_strings_are_not_tables():
    r = audit([GT], ["", "  "], declared=True)
    assert r["tables.teds", ""].value == 0.0 and r["tables.teds", ""].detail["blank_predicted_strings"] == 2


@pytest.mark.parametrize("bad", ["<p>no table here</p>", '<table><tr><td colspan="x">a</td></tr></table>'])
def test_unscorable_prediction_is_an_error_row_never_an_exception(bad):
    r = audit([GT], [bad])
    for m in ("tables.teds", "tables.teds_s"):
        assert r[m, ""].state is State.ERROR and r[m, ""].value is None
        assert "prediction" in r[m, ""].detail["reason"]
        assert r[m, "table/0"].state is State.ERROR and r[m, "table/0"].detail["reason"]
    for m in ("tables.precision", "tables.recall", "tables.f1"):
        assert r[m, ""].state is State.ERROR and "unknown" in r[m, ""].detail["reason"]


@pytest.mark.parametrize("preds", [[], [SMALL], [GT, SMALL]])
def test_unusable_reference_table_is_an_error_whatever_the_prediction(preds):
    # reference 1 has a colspan int() rejects: its rows and the document rows are errors (never 0 or a guess),
    # whether it is unmatched (no or one prediction) or paired (two predictions)
    broken = '<table><tbody><tr><td colspan="two">a</td></tr></tbody></table>'
    r = audit([GT, broken], preds)
    assert r["tables.teds", "table/1"].state is State.ERROR
    assert "reference table 1" in r["tables.teds", "table/1"].detail["reason"]
    for m in ("tables.teds", "tables.teds_s", "tables.recall", "tables.f1"):
        assert r[m, ""].state is State.ERROR, m
    if GT in preds:
        assert r["tables.teds", "table/0"].value == 1.0  # the usable table keeps its own value


def test_reference_table_over_the_budget_is_skipped_even_when_nothing_was_found():
    r = audit([GT], [], max_nodes=4)
    row = r["tables.teds", "table/0"]
    assert row.state is State.SKIPPED and "max_nodes=4" in row.detail["reason"]
    assert r["tables.teds", ""].state is State.SKIPPED and r["tables.recall", ""].state is State.SKIPPED


def test_unescaped_markup_is_scored_with_a_note():
    # "a < b" with a bare "<" is read as text by the HTML parser; the pair is scored and the note is kept
    table = "<table><tbody><tr><td>a < b</td></tr></tbody></table>"
    r = audit([table], [table])
    assert r["tables.teds", ""].value == 1.0
    assert "unescaped" in r["tables.teds", "table/0"].detail["message"]


def test_over_the_node_budget_is_skipped_with_sizes():
    r = audit([GT], [GT_TH], max_nodes=5)
    row = r["tables.teds", "table/0"]
    assert row.state is State.SKIPPED and "max_nodes=5" in row.detail["reason"]
    assert r["tables.teds", ""].state is State.SKIPPED
    assert r["tables.recall", ""].state is State.SKIPPED


def test_deviations_are_options_printed_with_the_numbers():
    wrong_header = GT_TH.replace("Name", "Nope")
    # published TEDS ignores th text: 1.0; th_as_td compares it: "Name" vs "Nope" differ in a/o and m/p:
    # Levenshtein 2 of 4 -> rename 1/2, d = 1/2, n = 8 -> 1 - (1/2)/8 = 0.9375
    assert audit([GT_TH], [wrong_header])["tables.teds", ""].value == 1.0
    r = audit([GT_TH], [wrong_header], th_as_td=True)
    assert r["tables.teds", ""].value == pytest.approx(1 - 0.5 / 8)
    assert r["tables.teds", ""].detail["deviations"] == "deviations: th_as_td"
    opts = TablesAuditor(th_as_td=True, unicode="NFKC").options()
    assert opts["deviations"] == "deviations: th_as_td, unicode=NFKC"
    assert opts["th_as_td"] is True and opts["unicode"] == "NFKC" and opts["wrap_bare_rows"] is False
    default = TablesAuditor().options()
    assert default["deviations"] == "published (PubTabNet reference)"
    assert default["budget"] == {"max_nodes": 2000, "time_s": 30.0, "max_tables": 500}
    json.dumps(default)


def test_wrap_bare_rows_option():
    bare = "<table><tr><td>x</td></tr></table>"
    # published: pred has a tbody the truth lacks: d = 1, n = max(2, 3) = 3 -> 2/3; wrapped, they are identical
    assert audit([bare], [SMALL])["tables.teds", ""].value == pytest.approx(2 / 3)
    assert audit([bare], [SMALL], wrap_bare_rows=True)["tables.teds", ""].value == 1.0


@pytest.mark.parametrize("options", [{"detection_threshold": 1.5}, {"detection_threshold": True},
                                     {"max_nodes": 0}, {"time_s": -1}, {"time_s": float("inf")},
                                     {"unicode": "NFD"}, {"th_as_td": "yes"}])
def test_bad_options_are_rejected(options):
    with pytest.raises(ValueError):
        TablesAuditor(**options)


def test_unknown_option_names_the_table():
    with pytest.raises(ValueError, match=r"auditor_options\.tables"):
        load_auditor("tables", {"threshold": 0.5})


def test_split_tables_keeps_single_tables_unchanged_and_splits_several():
    doc = f"<html><body>{GT}<p>between</p>{SMALL.replace('x', 'a &lt; b &amp; c')}</body></html>"
    assert split_tables(GT) == [GT]
    assert split_tables("<p>no table</p>") == ["<p>no table</p>"]
    parts = split_tables(doc)
    assert parts == [GT, "<table><tbody><tr><td>a &lt; b &amp; c</td></tr></tbody></table>"]
    nested = "<table><tr><td><table><tr><td>in</td></tr></table></td></tr></table>"
    assert split_tables(nested) == [nested]


def test_tables_html_truth_file_with_two_tables(tmp_path):
    from ingestaudit.corpus import discover
    from ingestaudit.truth import load_truth

    (tmp_path / "docs/web").mkdir(parents=True)
    (tmp_path / "truth/web").mkdir(parents=True)
    (tmp_path / "docs/web/page.html").write_text("<html><body><p>x</p></body></html>", encoding="utf-8")
    (tmp_path / "truth/web/page.tables.html").write_text(
        f"<html><body>\n{GT}\n<h2>Second</h2>\n{SMALL}\n</body></html>\n", encoding="utf-8")
    corpus = discover(tmp_path)
    truth = load_truth(corpus.documents[0], corpus.root)
    assert truth.tables == (GT, SMALL)  # truth.py splits the file into its tables
    assert reference_tables(truth) == [GT, SMALL]
    parsed = ParsedDocument(text="", tables=(SMALL,), settings={TABLE_EXTRACTION: True})
    r = TablesAuditor().audit(ItemArtefacts.of(truth, parsed))
    assert r[0].metric == "tables.teds" and r[0].value == 0.5 and r[0].denominator == 2


# ------------------------------------------------------------------------------------------ properties

_cell = st.text(alphabet="ab 1", max_size=3)


@st.composite
def grids(draw):
    rows = draw(st.lists(st.lists(_cell, min_size=1, max_size=3), min_size=1, max_size=3))
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tbody>{body}</tbody></table>"


@settings(max_examples=40, deadline=None)
@given(st.lists(grids(), min_size=1, max_size=4, unique=True), st.randoms(use_true_random=False))
def test_predicting_the_reference_tables_in_any_order_scores_one(refs, rnd):
    preds = list(refs)
    rnd.shuffle(preds)
    r = audit(refs, preds)
    for m in ("tables.teds", "tables.teds_s", "tables.precision", "tables.recall", "tables.f1"):
        assert r[m, ""].value == pytest.approx(1.0), m


@settings(max_examples=40, deadline=None)
@given(st.lists(grids(), min_size=1, max_size=3), st.lists(grids(), max_size=3))
def test_document_values_are_bounded_and_structure_bounds_content(refs, preds):
    r = audit(refs, preds)
    for key, s in r.items():
        assert s.state in (State.OK, State.NO_PREDICTION), key
        if s.state is State.OK:
            assert 0.0 <= s.value <= 1.0, key
    for k in [""] + [f"table/{i}" for i in range(len(refs))]:
        assert r["tables.teds_s", k].value >= r["tables.teds", k].value - 1e-12


# ------------------------------------------------------------------------------------------ end to end


def _corpus(root: Path, docs: dict[str, dict], outputs: dict[str, dict], toml: str = "") -> Path:
    for doc_id, truth in docs.items():
        (root / "docs" / doc_id).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / f"{doc_id}.txt").write_text("source\n", encoding="utf-8")
        (root / "truth" / doc_id).parent.mkdir(parents=True, exist_ok=True)
        (root / "truth" / f"{doc_id}.json").write_text(json.dumps(truth), encoding="utf-8")
    for doc_id, out in outputs.items():
        path = root / "outputs" / "pipe" / f"{doc_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out), encoding="utf-8")
    if toml:
        (root / "ingestaudit.toml").write_text(toml, encoding="utf-8")
    return root


@pytest.mark.parametrize("value", ["skip", "none"])
def test_cli_missing_table_convention_printed_and_validated(tmp_path, value):
    """``[auditor_options.tables] missing_table``: printed in the conventions line; a bad value is exit 2 naming the
    key. Truth with 2 tables, the pipeline extracts 1 (TEDS 0.8): 0.8 under skip."""
    from ingestaudit.cli import app

    root = _corpus(tmp_path / "c", {"a/one": {"tables": [ROW3, TWO_ROWS]}},
                   {"a/one": {"text": "", "tables": [ROW3_X]}},
                   toml=f'[auditor_options.tables]\nmissing_table = "{value}"\n')
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["run", str(root), "--outputs", str(root / "outputs"), "--stage", "tables",
                                   "--executor", "serial", "--out", str(out)])
    if value == "none":
        assert res.exit_code == 2
        assert "[auditor_options.tables] missing_table must be one of 'zero', 'skip', not 'none'" in " ".join(
            res.output.split())
        return
    assert res.exit_code == 0, res.output
    line = ("convention (tables): missing_table = skip: a reference table the pipeline did not extract counts TEDS "
            "0 (zero) or is left out of the document's mean (skip)")
    assert line in " ".join(res.output.split())
    assert "- " + line.replace("_", "\\_") in (out / "report.md").read_text("utf-8")
    report = load_report(out)
    assert report["config"]["auditors"]["tables"]["missing_table"] == "skip"
    rows = {(m["item"], m["metric"], m["label"]): m for m in measurements(report)}
    assert rows["a/one", "tables.teds", ""]["value"] == pytest.approx(0.8)  # 0.8 / 1 matched table


def test_cli_micro_macro_states_and_options(tmp_path):
    from ingestaudit.cli import app

    root = _corpus(tmp_path / "c", {
        "a/one": {"tables": [GT]},                 # predicted exactly: 1/1
        "a/three": {"tables": [GT, SMALL, GT_TH]},  # only SMALL predicted: (0 + 1 + 0) / 3
        "b/none": {"tables": [GT]},                # tables: [] -> the pipeline looked: 0/1
        "b/undeclared": {"tables": [GT]},          # no tables key -> no_prediction
        "b/plain": {"text": "no tables here"},     # no reference table -> no_reference
    }, {
        "a/one": {"text": "", "tables": [GT]},
        "a/three": {"text": "", "tables": [SMALL]},
        "b/none": {"text": "", "tables": []},
        "b/undeclared": {"text": "x"},
        "b/plain": {"text": "no tables here"},
    }, toml="[auditor_options.tables]\nth_as_td = true\n")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["run", str(root), "--outputs", str(root / "outputs"), "--stage", "tables",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    report = load_report(out)
    assert report["config"]["auditors"]["tables"]["deviations"] == "deviations: th_as_td"
    rows = {(m["item"], m["metric"], m["label"]): m for m in measurements(report)}
    assert rows["a/three", "tables.teds", ""]["value"] == pytest.approx(1 / 3)
    assert rows["a/three", "tables.teds", "table/1"]["value"] == 1.0
    assert rows["b/none", "tables.teds", ""]["value"] == 0.0
    assert rows["b/none", "tables.precision", ""]["state"] == "no_prediction"
    assert rows["b/undeclared", "tables.teds", ""]["value"] == 0.0  # missing_table = zero: a dropped table is 0
    assert rows["b/plain", "tables.teds", ""]["state"] == "no_reference"
    summary = {(s["doc_class"], s["metric"], s["label"]): s for s in report["summary"] if s["pipeline"] == "pipe"}
    # class a: micro (1 + 1) / (1 + 3) = 0.5, macro (1 + 1/3) / 2 = 2/3
    a = summary["a", "tables.teds", ""]
    assert (a["micro"], a["n_docs"]) == (0.5, 2) and a["macro"] == pytest.approx(2 / 3)
    # all classes: micro (1 + 1 + 0 + 0) / (1 + 3 + 1 + 1) = 1/3 over 4 ok documents; 1 no_reference
    every = summary["__all__", "tables.teds", ""]
    assert every["micro"] == pytest.approx(1 / 3) and every["n_docs"] == 4
    assert (every["states"].get("no_prediction", 0), every["states"]["no_reference"]) == (0, 1)
    # recall: TP 1 + 1 + 0 + 0 of 1 + 3 + 1 + 1 reference tables
    assert summary["__all__", "tables.recall", ""]["micro"] == pytest.approx(2 / 6)
    # per reference table: "table/0" over the 4 scored documents: 1 (a/one) + 0 (a/three, GT unmatched) + 0 + 0
    assert summary["__all__", "tables.teds", "table/0"]["micro"] == pytest.approx(1 / 4)
    for m in measurements(report):
        assert (m["value"] is None) == (m["state"] != "ok")


# ------------------------------------------------------------------------------------------ real parsers


def test_demo_bylaw_table_from_pymupdf():
    """The demo corpus's ruled table: PyMuPDF gets every cell text right, so TEDS equals TEDS-S (all loss is
    structural: the truth writes the header row with th and the rows without a tbody, PyMuPDF writes td in a tbody)."""
    from ingestaudit.corpus import discover
    from ingestaudit.parsers.pymupdf_parser import PyMuPDFParser
    from ingestaudit.truth import load_truth

    root = Path(__file__).resolve().parents[2] / "fixtures" / "demo"
    corpus = discover(root)
    document = next(d for d in corpus.documents if d.doc_id == "born_digital/bylaw_quiet_hours")
    truth = load_truth(document, corpus.root)
    parsed = PyMuPDFParser().parse(document)
    assert len(parsed.tables) == 1

    def cells(html):
        from lxml import html as lxml_html

        return [c.text_content() for c in lxml_html.fromstring(html).iter("td", "th")]

    assert cells(parsed.tables[0]) == cells(truth.tables[0])
    by = {(s.metric, s.label): s for s in TablesAuditor().audit(ItemArtefacts.of(truth, parsed))}
    assert by["tables.teds", ""].value == by["tables.teds_s", ""].value
    assert 0.5 < by["tables.teds", ""].value < 1.0 and by["tables.recall", ""].value == 1.0
    # with the truth in the fixture today (rows directly under <table>, header cells th): n_true = 4 tr + 16 cells
    # = 20, n_pred = 1 tbody + 4 tr + 16 td = 21; insert the tbody (1) and rename 4 th -> td (4): 1 - 5/21
    if truth.tables[0].startswith("<table><tr><th>"):
        assert by["tables.teds", ""].value == pytest.approx(1 - 5 / 21)


@pytest.mark.slow
def test_unstructured_declares_where_it_extracts_tables(tmp_path):
    from ingestaudit.document import Document
    from ingestaudit.parsers.unstructured_parser import UnstructuredParser

    parser = UnstructuredParser()
    ok, why = parser.available()
    if not ok:
        pytest.skip(why)
    table = "<table><thead><tr><th>A</th><th>B</th></tr></thead><tbody><tr><td>1</td><td>2</td></tr></tbody></table>"
    html = tmp_path / "page.html"
    html.write_text(f"<html><body><h1>Prices</h1><p>Some text here.</p>{table}</body></html>", encoding="utf-8")
    txt = tmp_path / "page.txt"
    txt.write_text("A B\n1 2\n", encoding="utf-8")
    parsed = parser.parse(Document("web/page", "web", html))
    assert parsed.settings[TABLE_EXTRACTION] is True and parsed.tables == (table,)
    by = {(s.metric, s.label): s for s in TablesAuditor().audit(ItemArtefacts.of(Truth(tables=(table,)), parsed))}
    assert by["tables.teds", ""].value == 1.0
    parsed = parser.parse(Document("text/page", "text", txt))
    assert parsed.settings[TABLE_EXTRACTION] is False and parsed.tables == ()
    rows = TablesAuditor(missing_table="skip").audit(ItemArtefacts.of(Truth(tables=(table,)), parsed))
    assert all(s.state is State.NO_PREDICTION for s in rows)
    assert "partition_text" in rows[0].detail["reason"]
    by = {(s.metric, s.label): s for s in TablesAuditor().audit(ItemArtefacts.of(Truth(tables=(table,)), parsed))}
    assert by["tables.teds", ""].value == 0.0 and "partition_text" in by["tables.teds", ""].detail["note"]
