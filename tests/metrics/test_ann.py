"""ANN recall metrics (ingestaudit.metrics.ann): hand-worked values and the acceptance values of issue 11."""

from __future__ import annotations

import numpy as np
import pytest

from ingestaudit.metrics import ann

A, B, C = 0, 1, 2
IP_BASE = np.array([[1, 0], [10, 10], [0.9, 0.1]], dtype=np.float32)


# --- intersection recall ---------------------------------------------------------------------------------------------

def test_ties_intersection_recall_counts_ids_and_a_repeat_once():
    exact = np.array([[A, B]])
    assert ann.intersection_recall(np.array([[A, C]]), exact, 2, 3).tolist() == [0.5]
    assert ann.intersection_recall(np.array([[A, A]]), exact, 2, 3).tolist() == [0.5]  # a repeat never counts twice
    assert ann.intersection_recall(np.array([[B, A]]), exact, 2, 3).tolist() == [1.0]  # order inside top-k is free


def test_padding_is_dropped_and_the_denominator_is_min_k_n():
    exact = np.array([[1, 0, 2, -1, -1]])
    assert ann.intersection_hits(exact, exact, 5).tolist() == [3]
    assert ann.intersection_recall(exact, exact, 5, 3).tolist() == [1.0]  # 3/3, not 3/5
    # -1 on both sides is not a match, and -1 is never used as an index (it would wrap to the last id)
    assert ann.intersection_hits(np.array([[-1, -1, 2]]), np.array([[-1, 5, 2]]), 3).tolist() == [1]
    assert ann.intersection_recall(np.array([[-1, -1, -1]]), np.array([[4, 5, 6]]), 3, 10).tolist() == [0.0]


def test_columns_beyond_k_are_ignored_and_per_query_n():
    ann_ids = np.array([[0, 9, 1], [3, 4, 5]])
    exact = np.array([[0, 1, 2], [3, 4, 5]])
    assert ann.intersection_hits(ann_ids, exact, 2).tolist() == [1, 2]
    assert ann.intersection_recall(ann_ids, exact, 2, np.array([1, 5])).tolist() == [1.0, 1.0]


def test_no_candidate_is_an_error_not_a_value():
    with pytest.raises(ValueError, match="no candidate"):
        ann.intersection_recall(np.array([[-1]]), np.array([[-1]]), 1, 0)
    with pytest.raises(ValueError, match="integer"):
        ann.intersection_hits(np.array([[0.5]]), np.array([[0]]), 1)


# --- tie-aware recall ------------------------------------------------------------------------------------------------

def test_ties_tie_aware_recall_credits_the_equally_close_id():
    # distances to the query: a 0.1, b 0.2, c 0.2; exact top-2 [a, b]
    dist = {A: 0.1, B: 0.2, C: 0.2}
    exact_ids = np.array([[A, B]])
    kth = ann.kth_scores(np.array([[dist[A], dist[B]]]), exact_ids, 2, higher_is_closer=False)
    assert kth.tolist() == [0.2]
    ac = np.array([[A, C]])
    assert ann.tie_aware_recall(ac, np.array([[dist[A], dist[C]]]), kth, 2, 3, higher_is_closer=False).tolist() == [1.0]
    aa = np.array([[A, A]])
    assert ann.tie_aware_recall(aa, np.array([[dist[A], dist[A]]]), kth, 2, 3, higher_is_closer=False).tolist() == [0.5]


def test_tie_aware_tolerance_is_relative_1e5_and_direction_follows_the_metric():
    kth = np.array([0.2])
    ids = np.array([[7]])
    assert ann.tie_aware_hits(ids, np.array([[0.2 * (1 + 0.9e-5)]]), kth, 1, higher_is_closer=False).tolist() == [1]
    assert ann.tie_aware_hits(ids, np.array([[0.2 * (1 + 1.1e-5)]]), kth, 1, higher_is_closer=False).tolist() == [0]
    # similarities: a larger score beats the k-th, a smaller one within 1e-5 ties
    kth_s = np.array([0.8])
    assert ann.tie_aware_hits(ids, np.array([[0.9]]), kth_s, 1, higher_is_closer=True).tolist() == [1]
    assert ann.tie_aware_hits(ids, np.array([[0.8 * (1 - 0.9e-5)]]), kth_s, 1, higher_is_closer=True).tolist() == [1]
    assert ann.tie_aware_hits(ids, np.array([[0.79]]), kth_s, 1, higher_is_closer=True).tolist() == [0]
    # padding never counts, even with a good-looking score
    assert ann.tie_aware_hits(np.array([[-1]]), np.array([[0.0]]), kth, 1, higher_is_closer=False).tolist() == [0]


def test_true_scores_are_recomputed_from_the_vectors():
    base = np.array([[0.0, 0.0], [3.0, 4.0]], dtype=np.float32)
    q = np.array([[0.0, 0.0]], dtype=np.float32)
    l2 = ann.true_scores(base, q, np.array([[1, 0, -1]]), "l2")
    assert l2[0, :2].tolist() == [25.0, 0.0] and np.isnan(l2[0, 2])
    ip = ann.true_scores(IP_BASE, np.array([[1, 0]], dtype=np.float32), np.array([[1, 0, 2]]), "ip")
    assert ip[0].tolist() == pytest.approx([10.0, 1.0, 0.9])
    with pytest.raises(ValueError, match="outside"):
        ann.true_scores(base, q, np.array([[2]]), "l2")


def test_tie_aware_is_at_least_intersection_recall_on_random_answers():
    rng = np.random.default_rng(3)
    base = rng.integers(0, 4, size=(60, 3)).astype(np.float32)  # many exact ties
    q = rng.integers(0, 4, size=(25, 3)).astype(np.float32)
    d = ((q[:, None, :] - base[None]) ** 2).sum(-1)
    exact = np.argsort(d, axis=1, kind="stable")[:, :5]
    answer = rng.integers(-1, 60, size=(25, 5))
    kth = ann.kth_scores(ann.true_scores(base, q, exact, "l2"), exact, 5, higher_is_closer=False)
    tie = ann.tie_aware_recall(answer, ann.true_scores(base, q, answer, "l2"), kth, 5, 60, higher_is_closer=False)
    assert (tie >= ann.intersection_recall(answer, exact, 5, 60)).all()


# --- 1-recall@R, self exclusion, percentiles ---------------------------------------------------------------------

def test_one_recall_at_r():
    ann_ids = np.array([[4, 2, 9], [1, 3, 5], [-1, -1, -1]])
    nn = np.array([2, 7, 0])
    assert ann.one_recall_at(ann_ids, nn, 1).tolist() == [0.0, 0.0, 0.0]
    assert ann.one_recall_at(ann_ids, nn, 2).tolist() == [1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="nearest neighbour"):
        ann.one_recall_at(ann_ids, np.array([2, -1, 0]), 1)


def test_drop_self_removes_the_own_id_only():
    ids = np.array([[5, 3, 8], [3, 5, 9], [1, 2, 4]])
    out = ann.drop_self(ids, np.array([5, 5, 7]), 2)
    # own id first or later is removed; a query whose own id is absent keeps its first k
    assert out.tolist() == [[3, 8], [3, 9], [1, 2]]
    assert ann.drop_self(np.array([[5, -1]]), np.array([5]), 2).tolist() == [[-1, -1]]


def test_nearest_rank_percentiles():
    assert ann.nearest_rank([1, 2, 3, 4], 50) == 2
    assert ann.nearest_rank(list(range(1, 21)), 95) == 19
    assert ann.nearest_rank([3, 1, 2], 100) == 3
    assert ann.nearest_rank([5.0], 0) == 5.0
    with pytest.raises(ValueError):
        ann.nearest_rank([], 50)


# --- vector facts ----------------------------------------------------------------------------------------------------

def test_duplicate_vectors_50_distinct_times_40_is_1950():
    rng = np.random.default_rng(11)
    distinct = rng.standard_normal((50, 32)).astype(np.float32)
    assert ann.duplicate_vectors(np.repeat(distinct, 40, axis=0)) == 1950
    assert ann.duplicate_vectors(distinct) == 0


def test_vector_groups_point_at_the_first_copy():
    x = np.array([[1, 2], [3, 4], [1, 2], [5, 6], [3, 4], [1, 2]], dtype=np.float32)
    assert ann.vector_groups(x).tolist() == [0, 1, 0, 3, 1, 0]
    assert ann.duplicate_vectors(x) == 3


def test_duplicate_vectors_is_byte_equality():
    x = np.array([[0.0, 1.0], [-0.0, 1.0], [0.0, 1.0], [0.0, 1.0000001]], dtype=np.float32)
    assert ann.duplicate_vectors(x) == 1  # -0.0 differs in bytes; rows 0 and 2 are equal


def test_ip_dominated_of_the_issue_base_is_two_thirds():
    assert ann.ip_dominated(IP_BASE, [0, 1, 2]) == pytest.approx(2 / 3)
    assert ann.ip_dominated_flags(IP_BASE, [0, 1, 2]).tolist() == [True, False, True]


def test_ip_dominated_ignores_identical_copies_and_settles_near_ties_exactly_with_rtol_zero():
    one = np.float32(1.0)
    bigger = np.nextafter(one, np.float32(2))  # 1 + 2^-23
    x = np.array([[1, 0], [1, 0], [bigger, 0]], dtype=np.float32)
    # strict (rtol 0): rows 0 and 1 are copies (equal product, not larger), row 2 has <u, v> = 1 + 2^-23 > 1 with them
    assert ann.ip_dominated_flags(x, [0, 1, 2], rtol=0).tolist() == [True, True, False]
    assert ann.ip_dominated_flags(x[:2], [0, 1], rtol=0).tolist() == [False, False]
    # the default relative tolerance 1e-5 does not count a 1.2e-7 excess
    assert ann.ip_dominated_flags(x, [0, 1, 2]).tolist() == [False, False, False]


def test_ip_dominated_tolerance_is_relative_to_the_own_product():
    v = np.array([0.6, 0.8], dtype=np.float64)  # |v|^2 = 1
    for factor, dominated in ((1 + 2e-5, True), (1 + 0.5e-5, False), (1.5, True)):
        x = np.array([v, v * factor], dtype=np.float32)  # <u, v> = factor * |v|^2 (up to float32 rounding, ~1e-7)
        assert ann.ip_dominated_flags(x, [0]).tolist() == [dominated], factor
    with pytest.raises(ValueError, match="rtol"):
        ann.ip_dominated_flags(x, [0], rtol=-1)


def test_normalised_near_duplicates_are_not_dominated_by_rounding():
    from ingestaudit.stages.index import l2_normalise

    rng = np.random.default_rng(0)
    a = rng.standard_normal((200, 64)).astype(np.float32)
    pairs = l2_normalise(np.vstack([a, a + 1e-4 * rng.standard_normal(a.shape).astype(np.float32)]))
    # strictly, float32 rounding of the unit norms makes a large share of these pairs "dominated" (the defect)
    assert ann.ip_dominated(pairs, np.arange(400), rtol=0) > 0.3
    assert ann.ip_dominated(pairs, np.arange(400)) == 0.0
    assert ann.DOMINATION_RTOL == 1e-5


def test_norm_stats():
    s = ann.norm_stats(np.array([[3, 4], [1, 0], [0, 1.0005]], dtype=np.float32))
    assert s["min"] == pytest.approx(1.0) and s["max"] == pytest.approx(5.0)
    assert s["median"] == pytest.approx(1.0005, abs=1e-6)
    assert s["unit_share"] == pytest.approx(2 / 3)
    z = ann.norm_stats(np.array([[3, 4], [1, 0], [0, 0]], dtype=np.float32))
    assert (z["min"], z["median"], z["max"], z["zero"], z["not_unit_nonzero"]) == (0.0, 1.0, 5.0, 1, 1)
    assert z["unit_share"] == pytest.approx(1 / 3)


def test_intersection_recall_equals_faiss_knn_intersection_measure_without_padding():
    from faiss.contrib.evaluation import knn_intersection_measure

    rng = np.random.default_rng(5)
    exact = np.stack([rng.permutation(50)[:10] for _ in range(30)])
    answer = np.where(rng.random((30, 10)) < 0.7, exact, rng.integers(0, 50, (30, 10)))  # repeats possible
    answer = np.stack([rng.permutation(row) for row in answer])
    ours = ann.intersection_recall(answer, exact, 10, 50).mean()
    assert ours == pytest.approx(knn_intersection_measure(answer, exact))
    # with padding the two differ: FAISS counts -1 on both sides as a match, here it never matches
    pad = np.array([[3, -1, -1]])
    assert knn_intersection_measure(pad, pad) == pytest.approx(2 / 3)
    assert ann.intersection_recall(pad, pad, 3, 1).tolist() == [1.0]  # 1 hit of min(3, n=1)
