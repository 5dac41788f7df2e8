"""The gate tests the number it gates, in the direction that is worse: the reviewer's three measured cases (a real
regression missed, a false one raised, a significant improvement called a regression), the paired statistics worked
by hand, rows that vanish from the head, hard regressions to no_prediction, what is and is not a definition change,
the declared budgets, and the order and wrapping of what the gate prints."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _reportkit import Row, build, cer_rows, write
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.auditors import metric_catalog as specs
from ingestaudit.report.compare import compare_reports, render_comparison
from ingestaudit.report.stats import (Orientation, Pairs, attainable_p, bootstrap_p, compare_pairs,
                                      resamples_for_family, wilcoxon_p)


def rows(values, dens, metric="extraction.cer", cls="c"):
    return [Row(f"{cls}/d{i:02d}", cls, "p", metric, v, v * d, d) for i, (v, d) in enumerate(zip(values, dens))]


def compare_cli(tmp_path, base, head, *args):
    b = write(base, tmp_path / "base" / "report.json")
    h = write(head, tmp_path / "head" / "report.json")
    return CliRunner().invoke(app, ["compare", str(b), str(h), *args], env={"COLUMNS": "120"})


# --- the three measured cases of the review --------------------------------------------------------------------------

def test_a_micro_regression_hidden_by_many_small_improvements_is_caught(tmp_path):
    # 15 long documents (1000 chars) double their CER 0.10 -> 0.20, 15 tiny ones (10 chars) go to 0: the micro CER
    # rises by (1500 - 15) / 15150 = +0.098. A sign test saw 15 up, 15 down and let it pass.
    dens = [1000.0] * 15 + [10.0] * 15
    base, head = build(rows([0.10] * 30, dens)), build(rows([0.20] * 15 + [0.0] * 15, dens))
    result = compare_cli(tmp_path, base, head)
    assert result.exit_code == 1, result.output
    (reg,) = json.loads(compare_cli(tmp_path, base, head, "--json").stdout)["regressions"]
    assert reg["diff"] == pytest.approx(3000 / 15150 - 1515 / 15150)
    assert reg["test"].startswith("paired bootstrap") and reg["p_value"] == pytest.approx(1 / 1001)
    assert reg["diff_low"] > 0.09  # every resample holds long documents: the interval is far from 0


def test_a_worsening_whose_interval_straddles_zero_is_not_a_regression(tmp_path):
    # 20 tiny documents each +1 error, one long document 0.1 -> 0.4, another 0.4 -> 0.12: micro +0.018 beyond the
    # 0.01 budget, but the bootstrap interval is about [-0.26, +0.29]: about a third of the resamples are not worse.
    # A sign test (21 of 22 items up) called it a regression at p = 1e-5.
    dens = [10.0] * 20 + [1000.0, 1000.0]
    base = build(rows([0.1] * 20 + [0.1, 0.4], dens))
    head = build(rows([0.2] * 20 + [0.4, 0.12], dens))
    result = compare_cli(tmp_path, base, head)
    assert result.exit_code == 0, result.output
    (row,) = json.loads(compare_cli(tmp_path, base, head, "--json").stdout)["rows"]
    # micro over 2200 characters: (20 + 100 + 400) errors -> (40 + 400 + 120)
    assert row["status"] == "within_noise" and row["worse"] == pytest.approx(40 / 2200)
    assert row["diff_low"] < 0 < row["diff_high"] and 0.25 < row["p_value"] < 0.45
    # the row that moved beyond its budget is named, with the document that moved most
    assert "- p · c · extraction.cer ↓  0.2364 -> 0.2545" in result.stdout
    assert "moved most: c/d20 0.1 -> 0.4" in result.stdout


def test_a_significant_improvement_of_most_items_is_not_a_regression(tmp_path):
    # TEDS (a mean, higher is better): 20 tables improve by 0.001, one drops 0.9 -> 0.4; the mean falls by 0.0229.
    # The two-sided Wilcoxon test was significant (p = 2e-4), in the improving direction, and the gate called it a
    # regression; one-sided in the worsening direction W+ = 21 of 231: p close to 1.
    base = build([Row(f"c/d{i:02d}", "c", "p", "tables.teds", 0.9) for i in range(21)])
    head = build([Row(f"c/d{i:02d}", "c", "p", "tables.teds", 0.901 if i < 20 else 0.4) for i in range(21)])
    result = compare_cli(tmp_path, base, head)
    assert result.exit_code == 0, result.output
    (row,) = json.loads(compare_cli(tmp_path, base, head, "--json").stdout)["rows"]
    assert row["status"] == "within_noise" and row["test"].startswith("Wilcoxon")
    assert row["worse"] == pytest.approx(0.5 / 21 - 0.02 / 21) and row["p_value"] > 0.99
    assert "moved most: c/d20 0.9 -> 0.4" in result.stdout


def test_the_same_worsening_on_every_table_is_a_regression_of_a_mean():
    base = build([Row(f"c/d{i:02d}", "c", "p", "tables.teds", 0.9) for i in range(21)])
    head = build([Row(f"c/d{i:02d}", "c", "p", "tables.teds", 0.9 - 0.001 * (i + 20)) for i in range(21)])
    (reg,) = compare_reports(base, head).regressions
    assert reg.p_value == pytest.approx(0.5 ** 21)  # exact Wilcoxon: every item worse, W+ = 231 of 231


# --- the statistics, by hand -----------------------------------------------------------------------------------------

def test_micro_bootstrap_with_unequal_denominators_by_hand():
    # A: 100 chars, CER 0.1 -> 0.2; B: 10 chars, 0.5 -> 0. Micro: 15/110 -> 20/110 (+0.0455, worse), while the mean of
    # the per-item changes is (+0.1 - 0.5) / 2 = -0.2 (better). Resamples of two items: {A,A} +0.1 (1/4), {B,B} -0.5
    # (1/4), {A,B} +5/110 (1/2): 95% interval [-0.5, +0.1], P(not worse) = 1/4, P(not better) = 3/4.
    p = Pairs(("A", "B"), (0.1, 0.5), (0.2, 0.0), (10.0, 5.0), (100.0, 10.0), (20.0, 0.0), (100.0, 10.0))
    r = compare_pairs(p, Orientation(lower_is_better=True), seed=3, n_resamples=4000)
    assert r.diff == pytest.approx(5 / 110) and r.worse == pytest.approx(5 / 110)
    assert (r.low, r.high) == (pytest.approx(-0.5), pytest.approx(0.1))
    assert r.p_worse == pytest.approx(0.25, abs=0.03) and r.p_better == pytest.approx(0.75, abs=0.03)
    assert r.resamples == 4000
    # higher is better (a recall with the same counts): the same resamples, the other way round
    up = compare_pairs(p, Orientation(lower_is_better=False), seed=3, n_resamples=4000)
    assert up.worse == pytest.approx(-5 / 110) and up.p_worse == pytest.approx(r.p_better)


def test_bootstrap_p_counts_resamples_not_worse_plus_one():
    w = np.array([0.1, -0.2, 0.0, 0.3, np.nan])  # NaN: a resample without a micro value, dropped
    assert bootstrap_p(w) == (pytest.approx((1 + 2) / (1 + 4)), pytest.approx((1 + 3) / (1 + 4)), 4)


def test_one_sided_wilcoxon_by_hand():
    # 5 worsenings, distinct sizes: W+ = 15, the largest of 2^5 sign patterns: p_worse = 1/32; p_better = 1
    assert wilcoxon_p([0.1, 0.2, 0.3, 0.4, 0.5]) == (pytest.approx(1 / 32), pytest.approx(1.0), 15.0)
    # 4 of 5 up, the smallest down: W+ = 14, P(W+ >= 14) = 2/32
    assert wilcoxon_p([-0.1, 0.2, 0.3, 0.4, 0.5])[0] == pytest.approx(2 / 32)
    assert wilcoxon_p([0.0, 0.0]) == (1.0, 1.0, 0.0)


def test_attainable_p_and_the_resamples_a_family_needs():
    assert attainable_p(30, 1, micro=False) == 0.5  # Wilcoxon on one moved item
    assert attainable_p(30, 1, micro=True) == 0.5 ** 30  # the bootstrap: no sharper than an exact test on 30 pairs
    assert attainable_p(30, 0, micro=True) == 1.0
    assert attainable_p(4, 4, micro=False, sides=2) == 0.125
    assert resamples_for_family(1, 0.05, 1000) == 1000 and resamples_for_family(92, 0.05, 1000) == 36800


# --- missing rows, hard regressions, definitions ---------------------------------------------------------------------

def test_a_metric_stage_or_class_missing_in_the_head_fails_and_is_printed(tmp_path):
    teds = [Row(f"c/d{i:02d}", "c", "p", "tables.teds", 0.9) for i in range(30)]
    letters = cer_rows("p", "letters", [0.1] * 5)
    base = build(cer_rows("p", "c", [0.1] * 30) + teds + letters)
    head = build(cer_rows("p", "c", [0.1] * 30))
    result = compare_cli(tmp_path, base, head)
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "gate FAILED: 3 item rows missing in the head (1 summary rows compared)"
    assert "missing in the head (3 item rows): the baseline measured them, the head does not report them" in lines
    assert "  p · stage tables: every row (2; classes c, __all__)" in lines
    assert "  p · extraction.cer: classes letters" in lines
    data = json.loads(compare_cli(tmp_path, base, head, "--json").stdout)
    assert data["verdict"] == "fail" and data["counts"]["missing_rows"] == 3
    assert [(m["what"], m["name"]) for m in data["missing_in_head"]] == [("stage", "tables"),
                                                                       ("metric", "extraction.cer")]


def test_a_whole_class_missing_is_one_line():
    base = build(cer_rows("p", "c", [0.1] * 6) + [Row(f"gone/d{i}", "gone", "p", m, 0.5) for i in range(3)
                                                  for m in ("tables.teds", "layout.heading_f1")])
    head = build(cer_rows("p", "c", [0.1] * 6))
    c = compare_reports(base, head)
    assert [(m.what, m.name, m.rows) for m in c.missing] == [("stage", "layout", 2), ("stage", "tables", 2)]
    base = build(cer_rows("p", "c", [0.1] * 6) + cer_rows("p", "gone", [0.1] * 3)
                 + [Row(f"gone/d{i:02d}", "gone", "p", "tables.teds", 0.5) for i in range(3)]
                 + [Row(f"c/d{i:02d}", "c", "p", "tables.teds", 0.5) for i in range(6)])
    head = build(cer_rows("p", "c", [0.1] * 6) + [Row(f"c/d{i:02d}", "c", "p", "tables.teds", 0.5) for i in range(6)])
    c = compare_reports(base, head)
    assert [(m.what, m.name, m.rows) for m in c.missing] == [("class", "gone", 2)]
    assert "  p · class gone: every row (2)" in render_comparison(c).splitlines()


def test_an_item_from_ok_to_no_prediction_is_a_hard_regression(tmp_path):
    rows_ = cer_rows("pymupdf", "invoices", [0.1] * 10)
    head = build([Row(r.item, r.doc_class, r.pipeline, r.metric, None, state="no_prediction",
                      reason="the parser returned no text") if r.item == "invoices/d07" else r for r in rows_])
    result = compare_cli(tmp_path, build(rows_), head)
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[0].startswith("gate FAILED: 1 hard regression")
    assert ("  pymupdf · invoices/d07 · extraction: ok -> no_prediction: the parser returned no text"
            in result.stdout.splitlines())


def test_a_new_cleaner_version_is_gated_and_a_new_char_profile_is_not_comparable(tmp_path):
    def opts(trafilatura="2.3.1", budget=30.0):
        return {"extraction": {"char_profile": "text-v1", "word_profile": "words-v1"},
                "tables": {"th_as_td": False, "budget": {"max_nodes": 2000, "time_s": budget}},
                "boilerplate": {"shingle_size": 4, "cleaner_versions": {"trafilatura": trafilatura}}}

    def report(f1, auditors):
        return build([Row(f"web/d{i:02d}", "web", "p", "boilerplate.f1", f1, f1 * 100, 100) for i in range(30)]
                     + cer_rows("p", "web", [0.1] * 30), auditors=auditors)

    base = report(0.9, opts())
    upgraded = opts(trafilatura="2.4.0", budget=60.0)
    same = compare_reports(base, report(0.9, upgraded))
    assert not same.failed and same.count("not_comparable") == 0 and same.count("unchanged") == 2
    worse = compare_reports(base, report(0.8, upgraded))  # the upgrade made cleaning worse: a regression
    assert [(r.metric, r.status) for r in worse.regressions] == [("boilerplate.f1", "regression")]
    new_profile = opts()
    new_profile["extraction"]["char_profile"] = "nfkc-casefold"
    result = compare_cli(tmp_path, base, report(0.9, new_profile))
    assert result.exit_code == 0, result.output
    assert ('not comparable (1 row, not gated): extraction options changed (char_profile: "text-v1" -> '
            '"nfkc-casefold")') in result.stdout


# --- budgets ---------------------------------------------------------------------------------------------------------

def test_each_metric_declares_its_budget_and_the_docs_list_it():
    assert specs.get("normalization.replacement_chars").default_budget == 0.001  # a defect share of characters
    assert specs.get("chunking.truncated_tokens").default_budget == 0.001
    assert specs.get("extraction.cer").default_budget == 0.01
    assert specs.get("dedup.largest_cluster").default_budget == "5%"
    from ingestaudit.report.metric_docs import metrics_markdown

    md = metrics_markdown()
    assert "| metric | best | range | unit | interval | budget | definition |" in md
    assert "| `normalization.replacement_chars` | lower | [0, 1] | chars | bootstrap | 0.001 |" in md
    assert "| `pii.fp_per_1k_tokens` | lower | [0, ∞] |" in md and "| 5% |" in md


def test_a_declared_budget_gates_a_small_rise_of_a_rare_defect():
    def report(v):
        return build([Row(f"c/d{i:02d}", "c", "p", "normalization.replacement_chars", v, v * 1000, 1000)
                      for i in range(30)])

    (reg,) = compare_reports(report(0.0), report(0.005)).regressions  # 5 in 1000 characters: beyond 0.001
    assert reg.budget == "0.001"


# --- what the gate prints --------------------------------------------------------------------------------------------

def test_significant_regressions_come_before_underpowered_ones_of_the_same_severity():
    # both rows are 5 budgets worse; float noise makes the 3-document row's raw severity the larger
    base = build(cer_rows("p", "big", [0.2] * 30) + cer_rows("p", "tiny", [0.5] * 3))
    head = build(cer_rows("p", "big", [0.25] * 30) + cer_rows("p", "tiny", [0.55] * 3))
    regs = [r for r in compare_reports(base, head, min_items=3).regressions if r.doc_class != "__all__"]
    raw = {r.doc_class: r.worse / r.allowed for r in regs}
    assert raw["tiny"] > raw["big"]  # without rounding the underpowered row would be listed first
    assert [(r.doc_class, r.underpowered) for r in regs] == [("big", False), ("tiny", True)]


def test_gate_lines_wrap_at_the_width_instead_of_being_cut():
    base = build(cer_rows("a-rather-long-pipeline-name", "a-long-class-of-invoices", [0.1] * 30))
    head = build(cer_rows("a-rather-long-pipeline-name", "a-long-class-of-invoices", [0.2] * 30))
    text = render_comparison(compare_reports(base, head), width=60)
    assert all(len(line) <= 60 for line in text.splitlines()), text
    assert "…" not in text
    flat = " ".join(text.split())
    assert "budget 0.01 p_holm 0.000999 (bootstrap, 1000 resamples, 30 pairs, 30 moved)" in flat
    assert "moved most: a-long-class-of-invoices/d00 0.1 -> 0.2," in flat


def test_a_corpus_level_value_that_is_gone_in_the_head_fails():
    from ingestaudit.report.schema import SummaryRow

    def corpus_row(value, state):
        return SummaryRow(pipeline="p", doc_class="c", stage="dedup", metric="dedup.pairwise_f1", label="", n_docs=6,
                          micro=value, macro=None, ci_low=None, ci_high=None, ci_method="none", states={state: 1},
                          level="corpus")

    rows = cer_rows("p", "c", [0.1] * 6)
    base = build(rows, extra_summary=[corpus_row(0.9, "ok")])
    head = build(rows, extra_summary=[corpus_row(None, "error")])
    c = compare_reports(base, head)
    assert c.failed and [(m.what, m.name, m.classes) for m in c.missing] == [("metric", "dedup.pairwise_f1", ["c"])]
    assert not compare_reports(base, build(rows, extra_summary=[corpus_row(0.9, "ok")])).failed
