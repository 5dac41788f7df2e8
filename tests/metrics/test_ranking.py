import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestaudit.metrics.ranking import (
    NO_REFERENCE,
    average_precision,
    hit_at_k,
    ndcg_at_k,
    precision_at_k,
    r_precision,
    ranking_metrics,
    recall_at_k,
    reciprocal_rank,
    span_recall_at_k,
)


def as_ranked(docs, relevant):
    """A document ranking as the evidence ids each position holds (one item per relevant document)."""
    return [(d,) if d in relevant else () for d in docs]


# The worked example (binary relevance).
WORKED_RELEVANT = {"q1": {"d3"}, "q2": {"d7", "d2"}, "q3": {"d11"}, "q4": {"d5"}}
WORKED_RANKINGS = {
    "q1": "d8 d3 d1 d4 d2 d9 d6 d10 d12 d13".split(),
    "q2": "d2 d6 d4 d7 d1 d3 d8 d11 d5 d9".split(),
    "q3": "d11 d2 d3 d4 d1 d6 d7 d8 d10 d12".split(),
    "q4": "d1 d2 d3 d6 d8 d9 d10 d12 d13 d14".split(),
}


def _mean(fn, *args):
    values = []
    for q, docs in WORKED_RANKINGS.items():
        grades = {d: 1 for d in WORKED_RELEVANT[q]}
        values.append(fn(as_ranked(docs, grades), grades, *args).value)
    return sum(values) / len(values)


def test_worked_example_macro_means():
    assert _mean(recall_at_k, 5) == pytest.approx(0.750, abs=5e-4)
    assert _mean(reciprocal_rank) == pytest.approx(0.625, abs=1e-12)
    assert _mean(ndcg_at_k, 5) == pytest.approx(0.627, abs=5e-4)
    assert _mean(average_precision) == pytest.approx(0.5625, abs=1e-12)
    assert _mean(precision_at_k, 5) == pytest.approx(0.2, abs=1e-12)
    assert _mean(hit_at_k, 5) == pytest.approx(0.75, abs=1e-12)


def test_worked_example_agrees_with_pytrec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels = {q: {d: 1 for d in rel} for q, rel in WORKED_RELEVANT.items()}
    run = {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in WORKED_RANKINGS.items()}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"map", "recip_rank", "ndcg_cut.5", "P.5", "recall.5"}).evaluate(run)
    for q, docs in WORKED_RANKINGS.items():
        grades = {d: 1 for d in WORKED_RELEVANT[q]}
        ranked = as_ranked(docs, grades)
        assert average_precision(ranked, grades).value == pytest.approx(ref[q]["map"], abs=1e-12)
        assert reciprocal_rank(ranked, grades).value == pytest.approx(ref[q]["recip_rank"], abs=1e-12)
        assert ndcg_at_k(ranked, grades, 5).value == pytest.approx(ref[q]["ndcg_cut_5"], abs=1e-12)
        assert precision_at_k(ranked, grades, 5).value == pytest.approx(ref[q]["P_5"], abs=1e-12)
        assert recall_at_k(ranked, grades, 5).value == pytest.approx(ref[q]["recall_5"], abs=1e-12)


def test_three_relevant_items_two_found_at_ranks_2_and_4():
    grades = {"a": 1, "b": 1, "c": 1}
    ranked = [(), ("a",), (), ("b",), ()]  # relevance 0 1 0 1 0
    ndcg = ndcg_at_k(ranked, grades, 5)
    assert ndcg.numerator == pytest.approx(1 / math.log2(3) + 1 / math.log2(5))
    assert ndcg.numerator == pytest.approx(1.062, abs=5e-4)
    assert ndcg.denominator == pytest.approx(2.131, abs=5e-4)
    assert ndcg.value == pytest.approx(0.498, abs=5e-4)
    recall = recall_at_k(ranked, grades, 5)
    assert (recall.numerator, recall.denominator) == (2, 3)
    assert recall.value == pytest.approx(2 / 3)
    precision = precision_at_k(ranked, grades, 5)
    assert (precision.numerator, precision.denominator, precision.value) == (2, 5, 0.4)
    assert reciprocal_rank(ranked, grades).value == 0.5
    assert hit_at_k(ranked, grades, 1).value == 0 and hit_at_k(ranked, grades, 2).value == 1


def test_mrr_of_first_relevant_at_1_3_none_2():
    grades = {"x": 1}
    rankings = [[("x",)], [(), (), ("x",)], [(), (), ()], [(), ("x",)]]
    rrs = [reciprocal_rank(r, grades).value for r in rankings]
    assert rrs == [1.0, 1 / 3, 0.0, 0.5]
    assert sum(rrs) / 4 == pytest.approx(0.458, abs=5e-4)


def test_empty_result_list_scores_zero_and_stays_defined():
    grades = {"a": 2}
    metrics = ranking_metrics([], grades, [1, 5])
    assert all(r.state == "ok" and r.value == 0 for r in metrics.values())
    assert metrics["recall@5"].denominator == 1  # the question stays in the micro denominator
    assert metrics["precision@5"].denominator == 5


def test_question_without_evidence_is_no_reference():
    for rate in [hit_at_k([("a",)], {}, 5), recall_at_k([], {}, 5), precision_at_k([], {}, 5),
                 reciprocal_rank([], {}), ndcg_at_k([], {}, 5), average_precision([], {}), r_precision([], {}),
                 *ranking_metrics([()], {}, [5]).values()]:
        assert rate.value is None and rate.state == NO_REFERENCE and rate.reason


def test_unfilled_positions_are_precision_misses():
    assert precision_at_k([("a",)], {"a": 1}, 10).value == 0.1


def test_an_item_counts_once_however_many_results_hold_it():
    grades = {"a": 1, "b": 1}
    ranked = [("a",), ("a",), ("b",)]
    assert recall_at_k(ranked, grades, 2).value == 0.5
    assert precision_at_k(ranked, grades, 2).value == 1.0  # both positions hold evidence
    # AP: a found at 1 (P=1), b found at 3 (P=3/3): (1 + 1) / 2
    assert average_precision(ranked, grades).value == 1.0
    # nDCG: rank 2 re-holds a, credited already: 1 + 1/log2(4) over 1 + 1/log2(3)
    assert ndcg_at_k(ranked, grades, 3).value == pytest.approx((1 + 0.5) / (1 + 1 / math.log2(3)))


def test_a_chunk_holding_two_items_credits_both_in_recall_ap_and_ndcg():
    grades = {"a": 1, "b": 1}
    ranked = [("a", "b")]
    assert recall_at_k(ranked, grades, 5).value == 1.0
    assert average_precision(ranked, grades).value == 1.0  # (1 + 1) / 2
    ndcg = ndcg_at_k(ranked, grades, 5)
    # a at rank 1, b (the 2nd item found) discounted at rank max(1, 2) = 2: DCG = 1 + 1/log2(3) = the ideal
    assert ndcg.numerator == pytest.approx(1 + 1 / math.log2(3)) and ndcg.value == pytest.approx(1.0)
    # at k = 1 only one item fits the cut, as in the ideal ranking: DCG@1 = 1 = ideal DCG@1
    one = ndcg_at_k(ranked, grades, 1)
    assert (one.numerator, one.denominator, recall_at_k(ranked, grades, 1).value) == (1.0, 1.0, 1.0)


def test_a_two_item_chunk_at_rank_2_credits_both_items_at_rank_2():
    grades = {"a": 1, "b": 1}
    ranked = [(), ("a", "b")]
    assert recall_at_k(ranked, grades, 5).value == 1.0
    assert average_precision(ranked, grades).value == pytest.approx(0.5)  # (1/2 + 1/2) / 2
    ndcg = ndcg_at_k(ranked, grades, 5)
    assert ndcg.numerator == pytest.approx(2 / math.log2(3))  # both discounted at rank max(2, j) = 2
    assert ndcg.value == pytest.approx(0.774, abs=5e-4)
    assert ranking_metrics(ranked, grades, [5])["ndcg@5"] == ndcg


def test_a_multi_item_chunk_credits_the_better_grade_first():
    grades = {"a": 1, "b": 3}
    ranked = [("a", "b"), ("a",)]
    ndcg = ndcg_at_k(ranked, grades, 2)
    assert ndcg.numerator == pytest.approx(3 + 1 / math.log2(3))  # b (grade 3) at rank 1, a at rank 2
    assert ndcg.value == pytest.approx(1.0)
    assert ndcg_at_k(ranked, grades, 1).value == pytest.approx(1.0)  # 3 / 3
    assert ranking_metrics(ranked, grades, [1, 2])["ndcg@2"] == ndcg


def test_graded_ndcg_uses_linear_gain_and_ideal_over_all_items():
    grades = {"a": 3, "b": 1, "c": 2}
    ranked = [("b",), ("a",)]
    dcg = 1 + 3 / math.log2(3)
    ideal = 3 + 2 / math.log2(3)
    assert ndcg_at_k(ranked, grades, 2).value == pytest.approx(dcg / ideal)
    assert ndcg_at_k(ranked, grades, None).denominator == pytest.approx(3 + 2 / math.log2(3) + 1 / math.log2(4))


def test_ap_cut_and_r_precision():
    grades = {"a": 1, "b": 1, "c": 1}
    ranked = [("a",), (), ("b",), (), ("c",)]
    assert average_precision(ranked, grades, 3).value == pytest.approx((1 + 2 / 3) / 3)
    assert average_precision(ranked, grades).value == pytest.approx((1 + 2 / 3 + 3 / 5) / 3)
    rp = r_precision(ranked, grades)
    assert (rp.numerator, rp.denominator) == (2, 3)


def test_caller_order_is_kept():
    grades = {"a": 1}
    assert reciprocal_rank([(), ("a",)], grades).value == 0.5
    assert reciprocal_rank([("a",), ()], grades).value == 1.0


@pytest.mark.parametrize("k", [0, -1, 1.5, True, None])
def test_bad_cutoff(k):
    with pytest.raises(ValueError):
        recall_at_k([("a",)], {"a": 1}, k)


@pytest.mark.parametrize("grade", [0, -1, 1.5, True])
def test_bad_grade(grade):
    with pytest.raises(ValueError):
        ndcg_at_k([("a",)], {"a": grade}, 5)


def test_unknown_evidence_id_is_an_error():
    with pytest.raises(ValueError, match="not an evidence item"):
        recall_at_k([("zz",)], {"a": 1}, 5)


# ----------------------------------------------------------------------------------------------- properties

_items = st.sampled_from(["a", "b", "c", "d", "e"])
_grades = st.dictionaries(_items, st.integers(1, 3), min_size=1)
_ranked = st.lists(st.frozensets(_items, max_size=3), max_size=8)


@settings(max_examples=300, deadline=None)
@given(_grades, _ranked, st.integers(1, 9))
def test_ranges_and_one_pass_equals_single_functions(grades, ranked, k):
    ranked = [frozenset(i for i in pos if i in grades) for pos in ranked]
    all_metrics = ranking_metrics(ranked, grades, [k])
    singles = {
        f"hit@{k}": hit_at_k(ranked, grades, k), f"recall@{k}": recall_at_k(ranked, grades, k),
        f"precision@{k}": precision_at_k(ranked, grades, k), f"ndcg@{k}": ndcg_at_k(ranked, grades, k),
        f"ap@{k}": average_precision(ranked, grades, k), "rr": reciprocal_rank(ranked, grades),
        "ap": average_precision(ranked, grades), "ndcg": ndcg_at_k(ranked, grades, None),
        "r_precision": r_precision(ranked, grades),
    }
    for name, rate in singles.items():
        assert all_metrics[name] == rate, name
        assert 0.0 <= rate.value <= 1.0 + 1e-12, name


# ----------------------------------------------------------------------------------------------- span recall


def test_span_recall_counts_the_union_of_overlapping_chunks_once():
    evidence = [("d", 0, 100)]
    covered = [[("d", 0, 60)], [("d", 40, 80)], [("d", 90, 200)], [("d", 80, 90)]]
    r3 = span_recall_at_k(covered, evidence, 3)
    assert (r3.numerator, r3.denominator) == (90, 100)  # summing per chunk would claim 110 of 100
    assert span_recall_at_k(covered, evidence, 2).value == 0.8
    assert span_recall_at_k(covered, evidence, 4).value == 1.0


def test_span_recall_per_document_and_overlapping_evidence():
    evidence = [("d1", 10, 20), ("d1", 15, 30), ("d2", 0, 10)]  # d1: 20 characters, d2: 10
    covered = [[("d2", 0, 5), ("d1", 25, 40)], [("other", 0, 100)]]
    rate = span_recall_at_k(covered, evidence, 5)
    assert (rate.numerator, rate.denominator) == (5 + 5, 30)


def test_span_recall_edge_cases():
    assert span_recall_at_k([], [("d", 0, 10)], 5).value == 0  # nothing retrieved: 0, still defined
    for evidence in ([], [("d", 3, 3)]):
        rate = span_recall_at_k([[("d", 0, 10)]], evidence, 5)
        assert rate.value is None and rate.state == NO_REFERENCE
    with pytest.raises(ValueError):
        span_recall_at_k([[("d", 5, 2)]], [("d", 0, 10)], 5)
    with pytest.raises(ValueError):
        span_recall_at_k([], [("d", 0, 10)], 0)
