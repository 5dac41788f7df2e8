"""The gate's rules one at a time: budgets (declared, [gate], --budget; absolute and relative), Tarone's family with
Holm, pairing by content hash, added/removed items, the waterfall's directions, and bad input (exit 2, file or flag
named, nothing written)."""

from __future__ import annotations

import json

import pytest
from _reportkit import Row, build, cer_rows, write
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.auditors import metric_catalog as specs
from ingestaudit.report.compare import (Budget, GateError, compare_reports, parse_budget, render_comparison,
                                        resolve_budgets)
from ingestaudit.report.stats import family_adjust, underpowered


def run_cli(*args):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "120"})


# --- budgets ---------------------------------------------------------------------------------------------------------

def test_budget_parsing_absolute_and_relative():
    assert parse_budget(0.02, "x") == Budget(0.02, False, "x")
    assert parse_budget("5%", "x") == Budget(0.05, True, "x")
    assert Budget(0.05, True).allowed(0.8) == pytest.approx(0.04)
    assert Budget(0.05, True).text() == "5%" and Budget(0.01).text() == "0.01"
    for bad in ("-0.1", "abc", "nan", "inf", True):
        with pytest.raises(GateError, match="budget"):
            parse_budget(bad, "--budget m=x")


def test_declared_default_budgets():
    assert specs.get("extraction.cer").default_budget == 0.01  # an edit rate, unbounded but near [0, 1]
    assert specs.get("tables.teds").default_budget == 0.01
    assert specs.get("pii.fp_per_1k_tokens").default_budget == "5%"  # an unbounded rate


def test_flags_override_the_config_table_and_unknown_metrics_are_named():
    budgets = resolve_budgets({"extraction.cer": 0.05, "tables.teds": "10%"}, ["extraction.cer=0.02"])
    assert budgets["extraction.cer"].value == 0.02 and budgets["extraction.cer"].source == "--budget extraction.cer=0.02"
    assert budgets["tables.teds"] == Budget(0.1, True, "[gate] tables.teds")
    assert "retrieval.recall@20" in resolve_budgets({}, ["retrieval.recall@20=0.03"])  # a cutoff of a known family
    with pytest.raises(GateError, match=r"--budget extraction.cre=0.1: unknown metric 'extraction.cre'"):
        resolve_budgets({}, ["extraction.cre=0.1"])
    with pytest.raises(GateError, match=r"cfg.toml \[gate\] nope.metric: unknown metric"):
        resolve_budgets({"nope.metric": 0.1}, [], config_source="cfg.toml [gate]")
    with pytest.raises(GateError, match="expected METRIC=X"):
        resolve_budgets({}, ["extraction.cer"])


def test_a_relative_budget_scales_with_the_baseline_value():
    base = build(cer_rows("p", "c", [0.40] * 20))
    head = build(cer_rows("p", "c", [0.43] * 20))  # worse by 0.03 = 7.5 % of 0.40
    assert compare_reports(base, head, budgets=resolve_budgets({}, ["extraction.cer=10%"])).regressions == []
    regs = compare_reports(base, head, budgets=resolve_budgets({}, ["extraction.cer=5%"])).regressions
    assert [r.doc_class for r in regs] == ["c"] and regs[0].budget == "5%" and regs[0].allowed == pytest.approx(0.02)


def test_the_head_reports_gate_table_sets_budgets_for_compare(tmp_path):
    base = write(build(cer_rows("p", "c", [0.40] * 20)), tmp_path / "b.json")
    head = write(build(cer_rows("p", "c", [0.43] * 20), gate={"extraction.cer": 0.05}), tmp_path / "h.json")
    assert run_cli("compare", str(base), str(head)).exit_code == 0
    assert run_cli("compare", str(base), str(head), "--budget", "extraction.cer=0.02").exit_code == 1


def test_higher_is_better_metrics_regress_downwards():
    rows = lambda v: [Row(f"c/d{i:02d}", "c", "p", "tables.teds", v) for i in range(20)]  # noqa: E731
    assert compare_reports(build(rows(0.9)), build(rows(0.95))).regressions == []
    (reg,) = compare_reports(build(rows(0.9)), build(rows(0.85))).regressions
    assert reg.test.startswith("Wilcoxon") and reg.diff == pytest.approx(-0.05) and reg.worse == pytest.approx(0.05)


def test_the_waterfalls_retrieved_share_is_better_higher_and_its_losses_lower():
    def report(got: str):
        rows = []
        for q in range(20):
            for o in ("lost_in_parsing", "retrieved"):
                rows.append(Row(f"q{q:02d}", "c", "p", "retrieval.outcome@10", float(o == got), float(o == got), 1.0,
                                label=o, kind="question"))
        return build(rows)

    comparison = compare_reports(report("retrieved"), report("lost_in_parsing"))
    assert sorted(r.label for r in comparison.regressions) == ["lost_in_parsing", "retrieved"]
    assert compare_reports(report("lost_in_parsing"), report("retrieved")).regressions == []


# --- multiplicity ----------------------------------------------------------------------------------------------------

def test_tarone_leaves_out_tests_that_cannot_reach_the_level_and_holm_adjusts_the_rest():
    # two tests with 10 moved items (min p 0.00195) and three with 2 moved (min p 0.5): K = 2, family of two
    k, adjusted = family_adjust([0.001, 0.01, 0.5, 1.0, 0.5], [2 * 0.5 ** 10, 2 * 0.5 ** 10, 0.5, 0.5, 0.5])
    assert k == 2
    assert adjusted == [pytest.approx(0.002), pytest.approx(0.01), None, None, None]
    # one-sided (the gate): 0.5 ** n > alpha / K; two-sided (the bake-off): 2 * 0.5 ** n > alpha / K
    assert underpowered(4, 1) and not underpowered(5, 1) and underpowered(5, 2)
    assert underpowered(5, 1, sides=2) and not underpowered(6, 1, sides=2) and underpowered(6, 2, sides=2)


def test_holm_over_many_moved_rows_can_turn_a_small_class_underpowered():
    # 30 classes whose 6 documents all got worse: one-sided min p 1/64 = 0.0156 each and 0.5**180 for __all__;
    # Tarone's K = 4 (only __all__ reaches 0.05/4 = 0.0125): no test on 6 pairs reaches the bar, so each class row
    # is underpowered and the budget alone decides
    base = build([r for c in range(30) for r in cer_rows("p", f"c{c:02d}", [0.1] * 6)])
    head = build([r for c in range(30) for r in cer_rows("p", f"c{c:02d}", [0.2] * 6)])
    comparison = compare_reports(base, head, min_items=6)  # 6 items may fail on the budget alone
    classes = [r for r in comparison.regressions if r.doc_class != "__all__"]
    assert len(classes) == 30 and all(r.underpowered for r in classes)
    overall = next(r for r in comparison.rows if r.doc_class == "__all__")
    assert overall.status == "regression" and not overall.underpowered and overall.p_holm < 0.05


# --- items -----------------------------------------------------------------------------------------------------------

def test_items_pair_by_content_hash_and_added_removed_changed_are_listed(tmp_path):
    base_rows = cer_rows("p", "c", [0.1] * 20)
    head_rows = cer_rows("p", "c", [0.1] * 19) + [Row("c/new", "c", "p", "extraction.cer", 0.9, 90, 100)]
    hashes = {r.item: "h-" + r.item for r in base_rows}
    head_hashes = {r.item: "h-" + r.item for r in head_rows} | {"c/d03": "edited"}
    head_rows = [Row(r.item, r.doc_class, r.pipeline, r.metric, 0.8, 80, 100) if r.item == "c/d03" else r
                 for r in head_rows]
    comparison = compare_reports(build(base_rows, hashes=hashes), build(head_rows, hashes=head_hashes))
    assert comparison.items["added"] == ["c/new"] and comparison.items["removed"] == ["c/d19"]
    assert comparison.items["changed"] == ["c/d03"]
    (row,) = comparison.rows
    assert row.n_pairs == 18 and row.status == "unchanged"  # d03 (edited), d19 (removed) and new are not paired
    text = render_comparison(comparison)
    assert "items not paired: 1 added (c/new); 1 removed (c/d19); 1 changed (c/d03)" in text


def test_a_stage_that_newly_fails_as_a_whole_is_a_hard_regression():
    from ingestaudit.report.schema import Failure

    rows = cer_rows("p", "c", [0.1] * 5)
    head = build(rows, failures=[Failure(item="", pipeline="p", stage="dedup", message="MemoryError")])
    comparison = compare_reports(build(rows), head)
    assert comparison.failed and [(h.item, h.stages) for h in comparison.hard] == [("", ["dedup"])]


def test_json_output_is_data(tmp_path):
    base = write(build(cer_rows("p", "c", [0.1] * 30)), tmp_path / "b.json")
    head = write(build(cer_rows("p", "c", [0.2] * 30)), tmp_path / "h.json")
    result = run_cli("compare", str(base), str(head), "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["verdict"] == "fail" and data["counts"]["regression"] == 1
    (reg,) = data["regressions"]
    assert (reg["pipeline"], reg["doc_class"], reg["metric"], reg["base"], reg["head"]) == ("p", "c",
                                                                                          "extraction.cer", 0.1, 0.2)
    assert [m["item"] for m in reg["moved_most"]] == ["c/d00", "c/d01", "c/d02"]


def test_the_items_that_moved_most_come_first():
    base = build(cer_rows("p", "c", [0.1] * 30))
    head = build(cer_rows("p", "c", [0.1 + 0.01 * (i % 7) + 0.05 for i in range(30)]))
    (reg,) = compare_reports(base, head).regressions
    assert [m.item for m in reg.moved_most] == ["c/d06", "c/d13", "c/d20"]


# --- bad input -------------------------------------------------------------------------------------------------------

def test_a_truncated_or_foreign_report_is_exit_2_naming_the_file(tmp_path):
    good = write(build(cer_rows("p", "c", [0.1] * 3)), tmp_path / "good.json")
    truncated = tmp_path / "truncated.json"
    truncated.write_text(good.read_text()[:200])
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"name": "something else", "version": 3}))
    for bad, why in ((truncated, "not a readable JSON report"), (foreign, "schema_version ''")):
        result = run_cli("compare", str(good), str(bad))
        assert result.exit_code == 2
        assert f"error: {bad}: {why}" in result.output.replace("\n", "")


def test_bad_budget_and_bad_map_flags_are_exit_2_naming_the_flag(tmp_path):
    good = write(build(cer_rows("p", "c", [0.1] * 3)), tmp_path / "good.json")
    result = run_cli("compare", str(good), str(good), "--budget", "extraction.cre=0.1")
    assert result.exit_code == 2 and "--budget extraction.cre=0.1: unknown metric" in result.output
    result = run_cli("compare", str(good), str(good), "--map", "nope=p")
    assert result.exit_code == 2 and "--map nope=p: the baseline has no pipeline 'nope'" in result.output


def _stored(report, folder):
    """``report`` with its rows moved into a measurements.parquet store in ``folder`` (as a run writes it)."""
    from ingestaudit.report.schema import StoreRef
    from ingestaudit.store import write_measurements

    folder.mkdir(parents=True)
    rows = report.measurements
    sha = write_measurements(rows, folder / "measurements.parquet")
    report.measurements = StoreRef(file="measurements.parquet", sha256=sha, rows=len(rows))
    from ingestaudit.report.schema import read_report

    return read_report(write(report, folder / "report.json"))


def test_the_gate_reads_a_store_column_wise_with_the_same_result_as_inline_rows(tmp_path):
    """The gate's index of a store (column-wise `Cell` s, issue 26 performance) gives the comparison the inline rows
    give: a regression in one class, a hard regression quoting its row's reason, an item no longer measured and an
    item whose content changed."""
    import hashlib

    def report(cer, last_state, last_reason=""):
        rows = cer_rows("tess", "scans", cer) + cer_rows("tess", "memos", [0.2] * 12)
        rows += [Row("memos/x1", "memos", "tess", "extraction.cer", 0.1 if last_state == "ok" else None,
                     10.0 if last_state == "ok" else None, 100.0 if last_state == "ok" else None, last_state,
                     reason=last_reason),
                 Row("memos/x2", "memos", "tess", "extraction.cer", 0.1 if last_state == "ok" else None,
                     10.0 if last_state == "ok" else None, 100.0 if last_state == "ok" else None,
                     "ok" if last_state == "ok" else "skipped", reason="" if last_state == "ok" else "too big")]
        items = sorted({r.item for r in rows})
        hashes = {i: hashlib.sha256(i.encode()).hexdigest() for i in items}
        return build(rows, hashes=hashes)

    base = report([0.10] * 12, "ok")
    head = report([0.15] * 12, "error", "parser raised ValueError: bad xref")
    head.corpus.item_hashes["memos/d00"] = "0" * 64  # its content changed: never paired
    inline = compare_reports(base, head)
    stored = compare_reports(_stored(base, tmp_path / "base"), _stored(head, tmp_path / "head"))
    assert stored.to_dict() == inline.to_dict()
    assert [(r.doc_class, r.status) for r in stored.regressions] == [("scans", "regression"), ("__all__", "regression")]
    assert [(h.item, h.state, h.message) for h in stored.hard] == [
        ("memos/x1", "error", "parser raised ValueError: bad xref")]
    assert stored.items["no_longer_measured"] == ["tess memos/x2 extraction: ok -> skipped"]
    assert stored.items["changed"] == ["memos/d00"]
    memos = next(r for r in stored.rows if r.doc_class == "memos")
    assert memos.n_pairs == 11  # 12 memos less the changed one (x1 and x2 are not ok in the head)
