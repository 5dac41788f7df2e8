"""The bake-off verdict (ingestaudit.report.verdict): the deciding sign test, Holm over the family, the trade-off
check, untestable comparisons, and the lines the views open with (issue 25)."""

from __future__ import annotations

import json

import pytest

from _reportkit import Row, build
from ingestaudit.auditors.retrieval import RetrievalAuditor
from ingestaudit.report.schema import Report
from ingestaudit.report.tables import STAGE_ORDER
from ingestaudit.report.verdict import build_verdict, verdict_lines

RetrievalAuditor()  # registers the retrieval specs (directions)


def _q(i, pipe, metric, value, cls="c", den=1.0):
    return Row(f"q{i}", cls, pipe, metric, value, value * den, den, kind="question")


def _verdict(rows, pipelines=("A", "B"), keys=(("retrieval.rr", ""),)):
    report = build(rows, pipelines=list(pipelines), auditors={})
    return report, build_verdict(report.measurements, list(pipelines), list(keys))


def test_seed_chapter_example_is_no_decision():
    # B ranks the evidence first on 5 questions where A ranks it second: rr 1 vs 0.5 on each
    rows = [_q(i, "A", "retrieval.rr", 0.5) for i in range(5)] + [_q(i, "B", "retrieval.rr", 1.0) for i in range(5)]
    _, verdict = _verdict(rows)
    assert [v.doc_class for v in verdict] == ["c", "__all__"]
    v = verdict[-1]
    assert (v.best, v.runner_up, v.metric, v.direction) == ("B", "A", "retrieval.rr", "higher")
    assert v.p_holm == pytest.approx(0.0625, abs=1e-12)  # 2 * 0.5**5; the __all__ test is class c's, once in the family
    assert (v.diff, v.diff_low, v.diff_high) == (0.5, 0.5, 0.5)
    assert (v.n_shared, v.n_items, v.decided, v.reason) == (5, 5, False, "differences within noise")
    assert verdict_lines(verdict, STAGE_ORDER) == [
        "no decision [c]: B vs A (retrieval.rr +0.50 [+0.50, +0.50], Holm p 0.0625, 5/5 questions; differences "
        "within noise)",
        "no decision: B vs A (retrieval.rr +0.50 [+0.50, +0.50], Holm p 0.0625, 5/5 questions; differences within "
        "noise)"]


def test_twelve_of_twelve_decides_and_holm_counts_the_family():
    # 12 questions all better in B: sign test p = 2 * 0.5**12 = 0.000488; two classes of 6 -> each 2 * 0.5**6 =
    # 0.03125. Family: c1, c2, __all__ (3 distinct tests): Holm sorted 0.000488 * 3, then 0.03125 * 2 twice
    rows = [_q(i, "A", "retrieval.rr", 0.5, cls="c1" if i < 6 else "c2") for i in range(12)]
    rows += [_q(i, "B", "retrieval.rr", 1.0, cls="c1" if i < 6 else "c2") for i in range(12)]
    _, verdict = _verdict(rows)
    by = {v.doc_class: v for v in verdict}
    assert by["__all__"].p_holm == pytest.approx(3 * 2 * 0.5 ** 12, abs=1e-15) and by["__all__"].decided
    assert by["c1"].p_holm == pytest.approx(2 * 2 * 0.5 ** 6, abs=1e-15) == by["c2"].p_holm
    assert not by["c1"].decided and by["c1"].reason == "differences within noise"
    line = verdict_lines(verdict, STAGE_ORDER)[-1]
    assert line == "verdict: B (retrieval.rr +0.50 [+0.50, +0.50], Holm p 0.00146, 12/12 questions)"


def test_the_best_significantly_worse_on_another_key_metric_is_not_decided():
    # B better on rr on 12 questions, A better on hit@10 on the same 12: a trade-off, no decision
    rows = [_q(i, "A", "retrieval.rr", 0.5) for i in range(12)] + [_q(i, "B", "retrieval.rr", 1.0) for i in range(12)]
    rows += [_q(i, "A", "retrieval.hit@10", 1.0) for i in range(12)]
    rows += [_q(i, "B", "retrieval.hit@10", 0.0) for i in range(12)]
    _, verdict = _verdict(rows, keys=(("retrieval.rr", ""), ("retrieval.hit@10", "")))
    rr = next(v for v in verdict if v.doc_class == "__all__" and v.metric == "retrieval.rr")
    assert rr.best == "B" and not rr.decided
    assert rr.reason.startswith("B is significantly worse on retrieval.hit@10 (Holm p ")


def test_untestable_comparisons_fold_into_one_count_and_a_lower_is_better_metric():
    rows = [_q(i, "A", "retrieval.rr", 0.5) for i in range(4)] + [_q(i, "B", "retrieval.rr", 0.5) for i in range(4)]
    _, verdict = _verdict(rows)
    assert all(v.p_holm is None and not v.decided for v in verdict)
    assert verdict_lines(verdict, STAGE_ORDER) == [
        "no decision: 2 classes untestable (identical values on every shared item)"]
    # extraction.cer: lower is better; A is better on 8 of 8 documents -> A best, diff negative
    docs = [Row(f"c/d{i}", "c", "A", "extraction.cer", 0.1, 10, 100) for i in range(8)]
    docs += [Row(f"c/d{i}", "c", "B", "extraction.cer", 0.3, 30, 100) for i in range(8)]
    _, v2 = _verdict(docs, keys=(("extraction.cer", ""),))
    assert (v2[-1].best, v2[-1].direction, v2[-1].n_shared) == ("A", "lower", 8)
    assert v2[-1].diff == pytest.approx(-0.2) and v2[-1].p_holm == pytest.approx(2 * 0.5 ** 8)


def test_items_one_pipeline_failed_count_in_n_items_not_n_shared():
    # q5 failed in B only: in n_items, not n_shared; q8 failed in both and q9 has no reference: in neither
    rows = [_q(i, "A", "retrieval.rr", 0.5) for i in range(6)] + [_q(i, "B", "retrieval.rr", 1.0) for i in range(5)]
    rows.append(Row("q5", "c", "B", "retrieval.rr", None, state="error", kind="question"))
    rows += [Row("q8", "c", p, "retrieval.rr", None, state="error", kind="question") for p in ("A", "B")]
    rows.append(Row("q9", "c", "A", "retrieval.rr", None, state="no_reference", kind="question"))
    _, verdict = _verdict(rows)
    assert (verdict[-1].n_shared, verdict[-1].n_items) == (5, 6)


def test_report_json_carries_the_verdict_only_with_two_pipelines():
    one = build([_q(0, "A", "retrieval.rr", 0.5)], pipelines=["A"], auditors={})
    assert "verdict" not in json.loads(one.to_json())
    rows = [_q(i, "A", "retrieval.rr", 0.5) for i in range(5)] + [_q(i, "B", "retrieval.rr", 1.0) for i in range(5)]
    report, verdict = _verdict(rows)
    report.verdict = verdict
    data = json.loads(report.to_json())
    assert list(data["verdict"][-1]) == ["class", "metric", "direction", "best", "runner_up", "diff", "diff_low",
                                         "diff_high", "p_holm", "n_shared", "n_items", "decided", "reason"]
    assert Report.model_validate(data).verdict == verdict


def test_terminal_and_markdown_open_with_the_verdict():
    from ingestaudit.report.render import render_markdown, render_terminal_text

    rows = [_q(i, "A", "retrieval.rr", 0.5) for i in range(5)] + [_q(i, "B", "retrieval.rr", 1.0) for i in range(5)]
    report, verdict = _verdict(rows)
    report.verdict = verdict
    text = render_terminal_text(report, width=200)
    assert text.splitlines()[0].startswith("no decision [c]: B vs A (retrieval.rr +0.50 [+0.50, +0.50], Holm p "
                                           "0.0625, 5/5 questions")
    assert "exact two-sided sign test on per-item values" in text
    md = render_markdown(report)
    assert md.startswith("# ingestaudit report\n\n## Verdict\n\n- no decision \\[c\\]: B vs A") or \
        md.startswith("# ingestaudit report\n\n## Verdict\n\n- no decision [c]: B vs A"), md[:200]
    from ingestaudit.report.render import render_html

    html = render_html(report)
    assert html.index('<section id="verdict" class="lead"><h2>Verdict</h2>') < html.index("<nav>") \
        < html.index('<section id="headline">')
    assert "no decision [c]: B vs A (retrieval.rr +0.50" in html
    one = build([_q(0, "A", "retrieval.rr", 0.5)], pipelines=["A"], auditors={})
    assert 'id="verdict"' not in render_html(one)
    assert "verdict" not in render_terminal_text(one, width=200).splitlines()[0]
    assert "## Verdict" not in render_markdown(one)


def test_retrieval_headline_is_budget_recall_when_chunking_differs():
    from ingestaudit.report.schema import PipelineInfo, StageInfo
    from ingestaudit.report.tables import headline_keys

    rows = []
    for p in ("A", "B"):
        rows += [_q(i, p, m, 0.5) for i in range(3) for m in ("retrieval.recall@10", "retrieval.span_recall@2000ch",
                                                               "retrieval.span_recall@500ch")]
    report = build(rows, pipelines=["A", "B"], auditors={})

    def info(name, size):
        return PipelineInfo(name=name, kind="configured", stages={
            "chunker": StageInfo(implementation="recursive", version="1", settings={"size": size})})

    assert headline_keys(report.summary)["retrieval"] == ("retrieval.recall@10", "")
    assert headline_keys(report.summary, [info("A", 500), info("B", 500)])["retrieval"] == ("retrieval.recall@10", "")
    assert headline_keys(report.summary, [info("A", 500), info("B", 4000)])["retrieval"] == (
        "retrieval.span_recall@2000ch", "")
