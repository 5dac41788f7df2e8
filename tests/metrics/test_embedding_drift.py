"""Embedding drift metrics: MMD worked by hand, permutation p-value, neighbour Jaccard, cosines."""

import math

import numpy as np
import pytest

from ingestaudit.metrics.embedding_drift import (least_stable, median_bandwidth, mmd_test, neighbour_jaccard,
                                                 nn_stability, row_cosines, squared_distances)


def test_mmd_two_plus_two_points_by_hand():
    # X = {0, 1}, Y = {2, 3}: pooled squared distances 1, 1, 1, 4, 4, 9 -> median 2.5, k = exp(-d^2 / 2.5)
    # MMD_b^2 = (2 + e^-0.4 - 2 e^-1.6 - e^-3.6) / 2
    res = mmd_test(np.array([[0.0], [1.0]]), np.array([[2.0], [3.0]]), permutations=10, seed=0)
    assert res.median_sq == 2.5 and res.sigma2 == 1.25 and res.bandwidth_rule == "median"
    expected = (2 + math.exp(-0.4) - 2 * math.exp(-1.6) - math.exp(-3.6)) / 2
    assert abs(res.mmd2 - expected) < 1e-12


def test_mmd_permutation_p_value_counts_relabellings_by_hand():
    # of the three 2+2 splits the observed one ({0,1}|{2,3}) has the largest MMD (1.1196 against 0.1828 and 0.4766),
    # so a relabelling reaches it exactly when its first two points are {0, 1} or {2, 3}
    B, seed = 300, 7
    res = mmd_test(np.array([[0.0], [1.0]]), np.array([[2.0], [3.0]]), permutations=B, seed=seed)
    rng = np.random.default_rng(seed)
    hits = sum(set(rng.permutation(4)[:2].tolist()) in ({0, 1}, {2, 3}) for _ in range(B))
    assert res.p_value == (1 + hits) / (1 + B)
    assert res.permutations == B and 0.25 < res.p_value < 0.42  # about 1/3


def test_mmd_identical_sets_is_zero_with_p_one():
    x = np.random.default_rng(0).normal(size=(50, 8))
    res = mmd_test(x, x.copy(), permutations=200, seed=1)
    assert res.mmd2 == 0.0 and res.p_value == 1.0


def test_mmd_agrees_with_naive_loops():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(6, 3)), rng.normal(loc=0.5, size=(6, 3))
    pooled = np.vstack([x, y])
    d = [float(((a - b) ** 2).sum()) for i, a in enumerate(pooled) for b in pooled[i + 1:]]
    med = float(np.median(d))
    k = lambda a, b: math.exp(-float(((a - b) ** 2).sum()) / med)  # noqa: E731
    naive = (sum(k(a, b) for a in x for b in x) + sum(k(a, b) for a in y for b in y)
             - 2 * sum(k(a, b) for a in x for b in y)) / 36
    assert abs(mmd_test(x, y, permutations=5).mmd2 - naive) < 1e-12


def test_mmd_shifted_sets_are_significant():
    rng = np.random.default_rng(5)
    res = mmd_test(rng.normal(size=(40, 4)), rng.normal(loc=1.0, size=(40, 4)), permutations=199, seed=0)
    assert res.p_value == 1 / 200


def test_median_bandwidth_zero_median_and_all_equal():
    pts = np.array([[0.0], [0.0], [0.0], [2.0]])  # 3 zero pairs of 6 -> median (0 + 4) / 2 = 2
    assert median_bandwidth(squared_distances(pts, pts)) == (2.0, "median")
    pts = np.array([[0.0], [0.0], [0.0], [0.0], [2.0]])  # 6 zero pairs of 10 -> median 0; positive: four 4s
    assert median_bandwidth(squared_distances(pts, pts)) == (4.0, "mean of positive (median 0)")
    same = np.ones((3, 2))
    res = mmd_test(same[:2], same[1:], permutations=3)
    assert (res.mmd2, res.p_value, res.bandwidth_rule) == (0.0, 1.0, "all points equal")
    with pytest.raises(ValueError):
        mmd_test(np.ones((2, 2)), np.ones((3, 2)))


def test_neighbour_jaccard_and_stability():
    assert neighbour_jaccard(["a", "b", "c"], ["b", "c", "d"]) == 2 / 4
    assert neighbour_jaccard([], []) is None
    mean, per = nn_stability([(["a"], ["a"]), (["a", "b"], ["c", "d"]), ([], [])])
    assert per == [1.0, 0.0, None] and mean == 0.5
    assert least_stable([1.0, 0.0, None, 0.5], n=2) == [1, 3]


def test_row_cosines():
    a = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    b = np.array([[2.0, 0.0], [1.0, -1.0], [1.0, 0.0]])
    got = row_cosines(a, b)
    assert got[0] == 1.0 and got[1] == 0.0 and math.isnan(got[2])


def test_mmd_with_one_row_per_side_is_refused():
    # two distinct points: both relabellings give MMD = 2 - 2 exp(-1) with p = 1 whatever the points; no answer
    with pytest.raises(ValueError, match="m >= 2"):
        mmd_test(np.array([[0.0]]), np.array([[5.0]]), permutations=10)
