"""Paired question tests between pipelines and the sweep curve, on hand-built rows."""

from __future__ import annotations

import pytest

from ingestaudit.pipeline_tests import paired_question_tests, sweep_curves
from ingestaudit.report.schema import MeasurementRow


def _row(q: str, pipeline: str, metric: str, value: float) -> MeasurementRow:
    return MeasurementRow(item=q, item_kind="question", doc_class="c", pipeline=pipeline, stage="retrieval",
                          metric=metric, label="", value=value, numerator=value, denominator=1, state="ok",
                          detail={})


def test_five_wins_and_no_loss_is_p_0_0625_and_underpowered_at_0_05():
    rows = [_row(f"q{i}", "a", "retrieval.hit@5", 0.0) for i in range(5)]
    rows += [_row(f"q{i}", "b", "retrieval.hit@5", 1.0) for i in range(5)]
    rows += [_row("q9", "a", "retrieval.hit@5", 1.0), _row("q9", "b", "retrieval.hit@5", 1.0)]  # a tie
    tests = [t for t in paired_question_tests(rows, ["a", "b"], ["retrieval.hit@5"]) if t["class"] == "c"]
    assert len(tests) == 1
    t = tests[0]
    assert (t["n"], t["wins_b"], t["losses_b"], t["ties"]) == (6, 5, 0, 1)
    assert t["sign_p"] == pytest.approx(2 * 0.5 ** 5)  # 0.0625
    assert t["min_attainable_p"] == pytest.approx(0.0625) and t["underpowered"] and not t["significant"]


def test_holm_family_counts_a_single_class_test_once():
    rows = []
    for metric in ("retrieval.hit@5", "retrieval.rr"):
        rows += [_row(f"q{i}", "a", metric, 0.0) for i in range(10)]
        rows += [_row(f"q{i}", "b", metric, 1.0) for i in range(10)]
    tests = paired_question_tests(rows, ["a", "b"], ["retrieval.hit@5", "retrieval.rr"])
    # class c and __all__ hold the same 10 questions: 2 distinct tests (one per metric), each p = 2 * 0.5**10,
    # reported 4 times; Holm multiplies the smaller by 2 (the family), not by 4
    assert len(tests) == 4
    assert [(t["metric"], t["class"], t.get("same_as")) for t in tests] == [
        ("retrieval.hit@5", "c", None), ("retrieval.hit@5", "__all__", "c"),
        ("retrieval.rr", "c", None), ("retrieval.rr", "__all__", "c")]
    p = 2 * 0.5 ** 10
    assert all(t["sign_p"] == pytest.approx(p) for t in tests)
    assert all(t["sign_p_holm"] == pytest.approx(2 * p) for t in tests)  # Holm: max(2p, 1p) for both
    assert all(t["significant"] for t in tests)


def test_holm_family_with_two_classes_has_the_overall_test_apart():
    rows = []
    for i in range(10):
        cls = "c" if i < 6 else "d"
        for pipe, v in (("a", 0.0), ("b", 1.0)):
            r = _row(f"q{i}", pipe, "retrieval.hit@5", v)
            rows.append(r.model_copy(update={"doc_class": cls}))
    tests = paired_question_tests(rows, ["a", "b"], ["retrieval.hit@5"])
    by = {t["class"]: t for t in tests}
    assert set(by) == {"c", "d", "__all__"} and not any("same_as" in t for t in tests)
    # family of 3: p(c) = 2 * 0.5**6, p(d) = 2 * 0.5**4, p(all) = 2 * 0.5**10; Holm: smallest x3, next x2, last x1
    assert by["__all__"]["sign_p_holm"] == pytest.approx(3 * 2 * 0.5 ** 10)
    assert by["c"]["sign_p_holm"] == pytest.approx(2 * 2 * 0.5 ** 6)
    assert by["d"]["sign_p_holm"] == pytest.approx(2 * 0.5 ** 4)


def test_the_sweep_curve_marks_the_smallest_value_not_significantly_worse():
    rows = []
    recall = {"128": [1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0], "256": [1] * 11 + [0], "512": [1] * 12}
    for value, hits in recall.items():
        rows += [_row(f"q{i}", f"p/size={value}", "retrieval.recall@10", h) for i, h in enumerate(hits)]
    curve, = sweep_curves(rows, ["p/size=128", "p/size=256", "p/size=512"], 10)
    assert curve["best"] == "512"
    # 128 loses 9 questions to 512 (p = 2 * 0.5**9, Holm x2 = 0.0078): worse; 256 loses one (p = 1): not worse
    assert curve["smallest_not_worse"] == "256"
    assert [p["recall"] for p in curve["points"]] == pytest.approx([3 / 12, 11 / 12, 1.0])
