"""The retrieval auditor's context-cost rows (span_precision@k, iou@k, context_chars@k) and equal-budget recall
(span_recall@<B>ch), on hand-built chunks whose lengths and evidence runs are chosen (issue 25)."""

from __future__ import annotations

import pytest

from _retrievalkit import context, doc, held, question, rows
from ingestaudit.auditors.retrieval import RetrievalAuditor


def _ctx():
    # chunks of 800, 1,200 and 600 characters, ranked in that order (question at angle 0, chunks at 0, 10, 20)
    # evidence: [0, 100) in chunk 0 (offset 0); [1000, 1300) in chunk 1, 200 characters in; [1900, 2000) in
    # chunk 1, 1,100 characters in
    d = doc("c/a", [0, 10, 20], evidence={
        ("q", 0): held(0), ("q", 1): held(1), ("q", 2): held(1)})
    d.texts = ["x" * 800, "y" * 1200, "z" * 600]
    d.evidence[("q", 0)].covered, d.evidence[("q", 0)].offsets = {0: [(0, 100)]}, {0: [0]}
    d.evidence[("q", 1)].covered, d.evidence[("q", 1)].offsets = {1: [(1000, 1300)]}, {1: [200]}
    d.evidence[("q", 2)].covered, d.evidence[("q", 2)].offsets = {1: [(1900, 2000)]}, {1: [1100]}
    q = question("q", relevant=[{"doc": "c/a", "start": 0, "end": 100}, {"doc": "c/a", "start": 1000, "end": 1300},
                                {"doc": "c/a", "start": 1900, "end": 2000}])
    return context([d], [q], {"q": 0.0})


def test_context_cost_rows_and_budget_recall_by_hand():
    result = RetrievalAuditor(k=[1, 3], context_budgets=[1500, 1000]).audit_pipeline(_ctx())
    got = {m: rows(result, f"retrieval.{m}")["q"] for m in ("span_precision@1", "span_precision@3", "iou@3",
                                                          "context_chars@1", "context_chars@3", "span_recall@3",
                                                          "span_recall@1500ch", "span_recall@1000ch")}
    assert (got["span_precision@1"].numerator, got["span_precision@1"].denominator) == (100, 800)
    assert got["span_precision@3"].value == pytest.approx(500 / 2600, abs=1e-12)
    assert got["iou@3"].value == pytest.approx(500 / (2600 + 0), abs=1e-12)  # every evidence character covered
    assert (got["context_chars@1"].value, got["context_chars@3"].value) == (800, 2600)
    assert got["span_recall@3"].value == 1.0
    # budget 1,500: 800 + the first 700 of chunk 1: [0, 100) and [1000, 1300) (starts at 200, ends at 500 <= 700);
    # [1900, 2000) starts 1,100 in: cut off -> 400 / 500
    assert (got["span_recall@1500ch"].numerator, got["span_recall@1500ch"].denominator) == (400, 500)
    # budget 1,000: 800 + the first 200 of chunk 1: [1000, 1300) starts at 200 -> nothing of it; 100 / 500
    assert got["span_recall@1000ch"].value == pytest.approx(100 / 500)


def test_evidence_overlap_option_and_bad_budgets():
    auditor = RetrievalAuditor(k=[3], evidence_overlap="sum")
    assert auditor.options()["evidence_overlap"] == "sum" and auditor.options()["context_budgets"] == [2000]
    for bad in ([0], [-1], ["2000"], [1.5], [], [2**64], [10**9 + 1], [2000, 500, 2000]):
        with pytest.raises(ValueError, match=r"\[run\] context_budgets"):
            RetrievalAuditor(context_budgets=bad)
    assert RetrievalAuditor(context_budgets=[10**9, 1]).options()["context_budgets"] == [1, 10**9]  # the bounds
    with pytest.raises(ValueError, match=r"18446744073709551616 above 1,000,000,000"):
        RetrievalAuditor(context_budgets=[2000, 2**64])
    with pytest.raises(ValueError, match=r"\[2000, 500, 2000\]: 2000 given more than once"):
        RetrievalAuditor(context_budgets=[2000, 500, 2000])
    with pytest.raises(ValueError, match="evidence_overlap"):
        RetrievalAuditor(evidence_overlap="mean")


@pytest.mark.parametrize("value", ["[0]", "[-100]", '["2000"]', "[1.5]", "[]", "2000", "[nan]",
                                   "[18446744073709551616]", "[1000000001]", "[2000, 2000]"])
def test_a_bad_context_budget_is_exit_2_naming_the_field(tmp_path, value):
    import subprocess
    import sys

    root = tmp_path / "c"
    (root / "docs" / "memo").mkdir(parents=True)
    (root / "docs" / "memo" / "n.txt").write_text("The valve closes at dusk.\n", encoding="utf-8")
    (root / "ingestaudit.toml").write_text(f"[run]\ncontext_budgets = {value}\n", encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "ingestaudit.cli", "run", str(root), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "[run] context_budgets" in " ".join(r.stderr.split()) and "ingestaudit.toml" in r.stderr


def test_run_offsets_are_counted_from_the_chunks_located_start():
    from ingestaudit.chain import _run_offsets
    from ingestaudit.metrics.offsets import OffsetMap

    # cleaned text = reference with 5 characters inserted at 55 (they map to nothing): reference 60 is cleaned 65
    source = list(range(55)) + [-1] * 5 + list(range(55, 200))
    to_ref = OffsetMap(source, 200)
    assert _run_offsets([(60, 80), (50, 52)], to_ref, (40, 140)) == [25, 10]
    assert _run_offsets([(60, 80)], to_ref, None) == [0]
