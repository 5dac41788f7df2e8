"""Dedup metrics (pairwise, B-cubed, ARI, chained pairs, removals), LSH banding theory and exact Jaccard.

Hand-worked values are in the comments; scikit-learn and datasketch are the independent implementations the
property tests compare against.
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestaudit.measurement import State
from ingestaudit.metrics.dedup import (
    adjusted_rand_index,
    bcubed_precision,
    bcubed_recall,
    chained_pair_rate,
    chained_pairs,
    cluster_agreement,
    false_merge_rate,
    missed_merge_rate,
    pairwise_f1,
    pairwise_precision,
    pairwise_recall,
    partition_from_clusters,
    removal_counts,
)
from ingestaudit.metrics.jaccard import exact_jaccard, jaccard_counts, near_duplicate_pairs, word_ngrams
from ingestaudit.metrics.lsh import (
    binomial_acceptance_region,
    candidate_probability,
    candidate_rate_by_bucket,
    lsh_params,
)

ITEMS = "abcdef"
# Gold groups {a,b,c}, {d,e}, {f}; predicted clusters {a,b}, {c,d,e}, {f}.
GOLD = partition_from_clusters([{"a", "b", "c"}, {"d", "e"}], ITEMS)  # f in no group
PRED = partition_from_clusters([{"a", "b"}, {"c", "d", "e"}, {"f"}], ITEMS)


def _pairs_of(partition):
    """Brute force: the set of unordered pairs sharing a (non-None) label."""
    return {frozenset((x, y)) for x, y in combinations(partition, 2)
            if partition[x] is not None and partition[x] == partition[y]}


def test_hand_example_pairs():
    # predicted pairs: ab, cd, ce, de; gold pairs: ab, ac, bc, de; common: ab, de.
    assert _pairs_of(PRED) == {frozenset(p) for p in ("ab", "cd", "ce", "de")}
    assert _pairs_of(GOLD) == {frozenset(p) for p in ("ab", "ac", "bc", "de")}
    c = cluster_agreement(GOLD, PRED)
    assert (c.n_items, c.predicted_pairs, c.gold_pairs, c.true_pairs) == (6, 4, 4, 2)
    assert (c.false_merges, c.missed_merges) == (2, 2)  # cd, ce wrongly merged; ac, bc missed


def test_hand_example_rates():
    c = cluster_agreement(GOLD, PRED)
    fmr = false_merge_rate(c)  # (P - T) / P = (4 - 2) / 4
    assert (fmr.numerator, fmr.denominator, fmr.value, fmr.state) == (2, 4, 0.5, State.OK)
    mmr = missed_merge_rate(c)  # (G - T) / G = (4 - 2) / 4
    assert (mmr.numerator, mmr.denominator, mmr.value) == (2, 4, 0.5)
    assert pairwise_precision(c).value == 0.5  # T / P = 2/4
    assert pairwise_recall(c).value == 0.5  # T / G = 2/4
    f1 = pairwise_f1(c)  # 2T / (P + G) = 4 / 8
    assert (f1.numerator, f1.denominator, f1.value) == (4, 8, 0.5)


def test_hand_example_bcubed():
    # B-cubed (Bagga & Baldwin 1998; uniform item weights as in Amigó et al. 2009):
    #   precision(i) = |C(i) ∩ G(i)| / |C(i)|, recall(i) = |C(i) ∩ G(i)| / |G(i)|, each averaged over the n = 6 items.
    #   item  C(i)     G(i)     C∩G     precision  recall
    #   a     {a,b}    {a,b,c}  {a,b}   2/2        2/3
    #   b     {a,b}    {a,b,c}  {a,b}   2/2        2/3
    #   c     {c,d,e}  {a,b,c}  {c}     1/3        1/3
    #   d     {c,d,e}  {d,e}    {d,e}   2/3        2/2
    #   e     {c,d,e}  {d,e}    {d,e}   2/3        2/2
    #   f     {f}      {f}      {f}     1/1        1/1
    #   sums: precision (1+1+1) + (1/3+2/3+2/3) = 3 + 5/3 = 14/3; recall (2/3+2/3+1/3) + (1+1+1) = 5/3 + 3 = 14/3
    #   B-cubed precision = (14/3)/6 = 7/9 ≈ 0.7778; recall = (14/3)/6 = 7/9 (equal here by coincidence: the
    #   example is symmetric, splitting c off {a,b,c} costs recall what merging c into {d,e} costs precision)
    c = cluster_agreement(GOLD, PRED)
    assert c.bcubed_precision_sum == Fraction(14, 3)
    assert c.bcubed_recall_sum == Fraction(14, 3)
    p, r = bcubed_precision(c), bcubed_recall(c)
    assert p.value == pytest.approx(7 / 9, abs=1e-15) and p.denominator == 6
    assert r.value == pytest.approx(7 / 9, abs=1e-15) and r.denominator == 6
    # an asymmetric case to tell precision from recall: predicted {a,b,c,d,e}, {f}
    #   precision: a,b,c: |{a,b,c}|/5 = 3/5 each; d,e: 2/5 each; f: 1 -> 9/5 + 4/5 + 1 = 18/5 -> 18/5/6 = 3/5
    #   recall: every item's gold group is inside its predicted cluster -> 1 each -> 6/6 = 1
    wide = cluster_agreement(GOLD, partition_from_clusters([set("abcde")], ITEMS))
    assert (wide.bcubed_precision_sum, wide.bcubed_recall_sum) == (Fraction(18, 5), Fraction(6))
    assert bcubed_precision(wide).value == pytest.approx(0.6) and bcubed_recall(wide).value == 1.0


def test_hand_example_ari():
    # Contingency rows gold {abc},{de},{f}; columns pred {ab},{cde},{f}: [[2,1,0],[0,2,0],[0,0,1]].
    # T = C(2,2)+C(2,2) = 2; G = C(3,2)+C(2,2) = 4; P = C(2,2)+C(3,2) = 4; C(6,2) = 15.
    # E = G·P / 15 = 16/15; M = (G + P)/2 = 4; ARI = (2 - 16/15) / (4 - 16/15) = (14/15) / (44/15) = 7/22.
    from sklearn.metrics import adjusted_rand_score

    ari = adjusted_rand_index(cluster_agreement(GOLD, PRED))
    assert ari.value == pytest.approx(7 / 22, abs=1e-15)
    assert ari.numerator == pytest.approx(14 / 15) and ari.denominator == pytest.approx(44 / 15)
    gold_labels = [str(GOLD[i]) if GOLD[i] is not None else f"single-{i}" for i in ITEMS]
    assert ari.value == pytest.approx(adjusted_rand_score(gold_labels, [PRED[i] for i in ITEMS]), abs=1e-12)
    c = cluster_agreement(GOLD, PRED)
    assert (c.largest_predicted_cluster, c.merged_clusters, c.largest_gold_group) == (3, 2, 3)


def test_no_predicted_pairs_is_undefined_not_zero():
    gold = {"a": "g", "b": "g", "c": None}
    pred = {"a": None, "b": None, "c": None}  # nothing merged
    c = cluster_agreement(gold, pred)
    fmr = false_merge_rate(c)
    assert fmr.value is None and fmr.state is State.NO_PREDICTION and "no predicted" in fmr.reason
    assert pairwise_precision(c).value is None
    assert missed_merge_rate(c).value == 1.0  # the one gold pair ab is missed: 1/1
    assert pairwise_recall(c).value == 0.0  # 0/1 is a real zero
    assert pairwise_f1(c).value == 0.0  # 2·0 / (0 + 1)


def test_no_gold_pairs_is_undefined():
    gold = {"a": None, "b": None, "c": None}
    pred = {"a": 0, "b": 0, "c": None}
    c = cluster_agreement(gold, pred)
    mmr = missed_merge_rate(c)
    assert mmr.value is None and mmr.state is State.NO_REFERENCE and "no gold" in mmr.reason
    assert pairwise_recall(c).value is None
    assert false_merge_rate(c).value == 1.0  # ab merged, not a gold pair: 1/1


def test_nothing_anywhere():
    items = {str(i): None for i in range(10)}
    c = cluster_agreement(items, dict(items))
    for rate in (false_merge_rate(c), missed_merge_rate(c), pairwise_f1(c), adjusted_rand_index(c)):
        assert rate.value is None and rate.state is not State.OK and rate.reason
    # every item is alone on both sides: |C ∩ G| / |C| = 1/1 for each item
    assert bcubed_precision(c).value == 1.0 and bcubed_recall(c).value == 1.0
    empty = cluster_agreement({}, {})
    assert bcubed_precision(empty).value is None and adjusted_rand_index(empty).value is None


def test_item_mismatch_and_bad_clusters_raise():
    with pytest.raises(ValueError, match="differ in items"):
        cluster_agreement({"a": None, "b": None}, {"a": None, "c": None})
    with pytest.raises(ValueError, match="more than one cluster"):
        partition_from_clusters([{"a", "b"}, {"b"}], "ab")
    with pytest.raises(ValueError, match="not one of the items"):
        partition_from_clusters([{"a", "z"}], "ab")


partitions = st.integers(min_value=0, max_value=14).flatmap(
    lambda n: st.tuples(st.lists(st.one_of(st.none(), st.integers(0, 4)), min_size=n, max_size=n),
                        st.lists(st.one_of(st.none(), st.integers(0, 4)), min_size=n, max_size=n)))


@given(partitions)
@settings(max_examples=200, deadline=None)
def test_properties_against_brute_force_and_sklearn(pair):
    from sklearn.metrics import adjusted_rand_score

    g_labels, p_labels = pair
    gold = dict(enumerate(g_labels))
    pred = dict(enumerate(p_labels))
    c = cluster_agreement(gold, pred)
    gp, pp = _pairs_of(gold), _pairs_of(pred)
    assert (c.gold_pairs, c.predicted_pairs, c.true_pairs) == (len(gp), len(pp), len(gp & pp))
    for rate in (pairwise_precision(c), pairwise_recall(c), pairwise_f1(c), false_merge_rate(c),
                 missed_merge_rate(c), bcubed_precision(c), bcubed_recall(c)):
        assert (rate.value is None) == (rate.state is not State.OK)
        assert rate.value is None or 0.0 <= rate.value <= 1.0
    if pp:
        assert false_merge_rate(c).value + pairwise_precision(c).value == pytest.approx(1.0)
    # symmetry: swapping gold and predicted swaps precision and recall
    s = cluster_agreement(pred, gold)
    assert s.bcubed_precision_sum == c.bcubed_recall_sum and s.bcubed_recall_sum == c.bcubed_precision_sum
    for swapped, original in ((pairwise_precision(s), pairwise_recall(c)), (false_merge_rate(s), missed_merge_rate(c))):
        assert (swapped.numerator, swapped.denominator, swapped.value) == \
            (original.numerator, original.denominator, original.value)
    ari = adjusted_rand_index(c)
    if ari.value is not None:
        singles = [f"s{i}" if v is None else v for i, v in enumerate(g_labels)]
        psingles = [f"s{i}" if v is None else v for i, v in enumerate(p_labels)]
        assert ari.value == pytest.approx(adjusted_rand_score([str(x) for x in singles],
                                                              [str(x) for x in psingles]), abs=1e-9)


@given(st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=2, max_size=12))
@settings(max_examples=100, deadline=None)
def test_identity_is_perfect(labels):
    gold = dict(enumerate(labels))
    c = cluster_agreement(gold, dict(gold))
    assert bcubed_precision(c).value == 1.0 and bcubed_recall(c).value == 1.0
    if c.gold_pairs:
        assert pairwise_f1(c).value == 1.0 and false_merge_rate(c).value == 0.0
        assert missed_merge_rate(c).value == 0.0
    ari = adjusted_rand_index(c)
    assert ari.value is None or ari.value == pytest.approx(1.0)


def test_chained_pairs_hand_example():
    # one predicted cluster {a, b, c, d}; exact similarities below; threshold 0.8.
    # pairs: ab .9, ac .85, ad .3, bc .95, bd .82, cd .5 -> below 0.8: ad, cd -> 2 chained of C(4,2) = 6.
    sims = {frozenset("ab"): .9, frozenset("ac"): .85, frozenset("ad"): .3, frozenset("bc"): .95,
            frozenset("bd"): .82, frozenset("cd"): .5}
    pred = {"a": 0, "b": 0, "c": 0, "d": 0, "e": None, "f": 1}
    result = chained_pairs(pred, lambda x, y: sims[frozenset((x, y))], 0.8)
    assert (result.within_cluster_pairs, result.chained, result.state) == (6, 2, State.OK)
    assert result.examples == (("a", "d", 0.3), ("c", "d", 0.5))
    rate = chained_pair_rate(result)
    assert (rate.numerator, rate.denominator, rate.value) == (2, 6, pytest.approx(1 / 3))
    skipped = chained_pairs(pred, lambda x, y: 1.0, 0.8, max_pairs=5)
    assert skipped.state is State.SKIPPED and skipped.chained is None and chained_pair_rate(skipped).value is None
    nothing = chained_pair_rate(chained_pairs({"a": None, "b": 1}, lambda x, y: 1.0, 0.8))
    assert nothing.value is None and nothing.state is State.NO_PREDICTION
    with pytest.raises(ValueError):
        chained_pairs(pred, lambda x, y: 1.5, 0.8)


def test_removal_counts_hand_example():
    # classes: a, b, c -> "x"; d, e, f -> "y". Keep rule: first member in input order.
    # predicted {a,b}: keep a, remove b (gold b = gold a: right). {c,d,e}: keep c, remove d and e (gold differs:
    # both wrong). Gold {a,b,c}: keep a, b and c removable; {d,e}: keep d, e removable.
    # x: n 3, removed 1 (b), wrongly 0, gold removable 2 (b, c). y: n 3, removed 2 (d, e), wrongly 2, removable 1.
    classes = {"a": "x", "b": "x", "c": "x", "d": "y", "e": "y", "f": "y"}
    counts = removal_counts(GOLD, PRED, classes)
    assert list(counts) == ["x", "y"]
    assert (counts["x"].n_items, counts["x"].removed, counts["x"].wrongly_removed, counts["x"].gold_removable) \
        == (3, 1, 0, 2)
    assert (counts["y"].n_items, counts["y"].removed, counts["y"].wrongly_removed, counts["y"].gold_removable) \
        == (3, 2, 2, 1)


# --- LSH banding -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("threshold", "b", "r"), [(0.8, 9, 13), (0.5, 25, 5), (0.9, 5, 25)])
def test_lsh_params_acceptance(threshold, b, r):
    from datasketch import MinHashLSH

    p = lsh_params(threshold, 128)
    assert (p.b, p.r) == (b, r)
    lsh = MinHashLSH(threshold=threshold, num_perm=128)
    assert (lsh.b, lsh.r) == (b, r)
    if threshold == 0.8:
        assert p.hash_values_used == 117  # 9 x 13 of the 128 values


@pytest.mark.parametrize("num_perm", [16, 64, 256])
@pytest.mark.parametrize("threshold", [0.3, 0.7, 0.85, 0.95])
@pytest.mark.parametrize("weights", [(0.5, 0.5), (0.3, 0.7)])
def test_lsh_params_match_datasketch(num_perm, threshold, weights):
    from datasketch import MinHashLSH

    try:
        lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, weights=weights)
    except ValueError:  # datasketch refuses b < 2 (e.g. t=0.95 with 16 permutations): so must lsh_params
        with pytest.raises(ValueError, match="< 2 bands"):
            lsh_params(threshold, num_perm, weights)
        return
    p = lsh_params(threshold, num_perm, weights)
    assert (p.b, p.r) == (lsh.b, lsh.r)
    assert p.false_positive_area >= 0 and p.false_negative_area >= 0


def test_lsh_params_refuses_what_datasketch_refuses():
    from datasketch import MinHashLSH

    # threshold 1.0: FN area is 0 for every (b, r), so the optimum is the smallest FP area, b = 1 -> refused.
    with pytest.raises(ValueError, match="b=1 < 2"):
        lsh_params(1.0, 128)
    with pytest.raises(ValueError):
        MinHashLSH(threshold=1.0, num_perm=128)
    for bad in [(1.1, 128), (0.5, 1)]:
        with pytest.raises(ValueError):
            lsh_params(*bad)
    with pytest.raises(ValueError):
        lsh_params(0.5, 128, (0.6, 0.6))


def test_candidate_probability_acceptance():
    # P(J) = 1 - (1 - J^13)^9:
    #   J=0.7: 0.7^13 = 0.0096889; (1 - 0.0096889)^9 = exp(9·ln 0.9903111) = exp(-0.0876250) = 0.916104 -> 0.0839
    #   J=0.8: 0.8^13 = 0.0549756; 0.9450244^9 = exp(9·(-0.0565453)) = exp(-0.508908) = 0.601156 -> 0.3988
    #   J=0.9: 0.9^13 = 0.2541866; 0.7458134^9 = exp(9·(-0.293258)) = exp(-2.639322) = 0.071402 -> 0.9286
    got = [round(candidate_probability(j, 9, 13), 3) for j in (0.7, 0.8, 0.9)]
    assert got == [0.084, 0.399, 0.929]
    assert candidate_probability(0.8, 9, 13) == pytest.approx(0.398844, abs=1e-6)
    assert lsh_params(0.8, 128).candidate_probability(0.9) == candidate_probability(0.9, 9, 13)


@given(st.floats(0, 1), st.floats(0, 1), st.integers(1, 64), st.integers(1, 64))
def test_candidate_probability_properties(j1, j2, b, r):
    lo, hi = sorted((j1, j2))
    assert 0.0 <= candidate_probability(lo, b, r) <= candidate_probability(hi, b, r) <= 1.0
    assert candidate_probability(lo, b, r) == pytest.approx(1 - (1 - lo ** r) ** b, abs=1e-12)
    assert candidate_probability(0.0, b, r) == 0.0 and candidate_probability(1.0, b, r) == 1.0


def test_binomial_acceptance_region_hand_example():
    # X ~ Bin(10, 1/2), 90 %: P(X <= 1) = 11/1024 = 0.011 < 0.05 <= P(X <= 2) = 56/1024 = 0.055 -> low 2;
    # P(X <= 7) = 968/1024 = 0.945 < 0.95 <= P(X <= 8) = 1013/1024 = 0.989 -> high 8.
    assert binomial_acceptance_region(0.5, 10, 0.9) == (2, 8)
    with pytest.raises(ValueError):
        binomial_acceptance_region(0.5, 0)


def test_candidate_rate_by_bucket_hand_example():
    # buckets [0, .5), [.5, 1]: pairs (J, candidate) = (.2, F), (.6, T), (.6, F), (1.0, T)
    # bucket 1: 0/1; bucket 2: 2/3, theoretical mean (P(.6) + P(.6) + P(1)) / 3 at b=2, r=1:
    #   P(.6) = 1 - .4^2 = .84, P(1) = 1 -> (0.84 + 0.84 + 1) / 3 = 0.893333...
    out = candidate_rate_by_bucket([0.2, 0.6, 0.6, 1.0], [False, True, False, True], 2, 1, edges=(0, 0.5, 1))
    assert [(x.pairs, x.candidates) for x in out] == [(1, 0), (3, 2)]
    assert out[1].empirical.value == pytest.approx(2 / 3) and out[1].theoretical == pytest.approx(2.68 / 3)
    assert out[0].theoretical == pytest.approx(1 - 0.8 ** 2)
    empty = candidate_rate_by_bucket([], [], 2, 1, edges=(0, 1))[0]
    assert empty.empirical.value is None and empty.theoretical is None and empty.interval is None


# --- exact Jaccard and the controlled pair generator ---------------------------------------------------------------

def test_exact_jaccard():
    assert exact_jaccard({1, 2, 3}, {2, 3, 4}) == 0.5  # |{2,3}| / |{1,2,3,4}|
    assert jaccard_counts({1, 2, 3}, {2, 3, 4}) == (2, 4)
    assert exact_jaccard(set(), set()) is None  # 0/0, where MinHash would say 1.0
    assert exact_jaccard({1}, set()) == 0.0
    assert word_ngrams("a b  c", 2) == {"a b", "b c"}


@pytest.mark.parametrize("n", [1, 2, 3, 5])
@pytest.mark.parametrize("target", [Fraction(4, 5), Fraction(7, 10), Fraction(9, 10), Fraction(0), Fraction(1)])
def test_generator_hits_exact_jaccard(n, target):
    pairs = near_duplicate_pairs(20, target, n=n, seed=7)
    for p in pairs:
        a, b = word_ngrams(p.text_a, n), word_ngrams(p.text_b, n)
        assert Fraction(len(a & b), len(a | b)) == target == p.jaccard
        assert len(a | b) == 250
    # different pairs share no word, so no cross-pair n-gram
    words = [set(p.text_a.split()) | set(p.text_b.split()) for p in pairs]
    assert sum(map(len, words)) == len(set().union(*words))


def test_generator_is_seeded_and_validates():
    assert near_duplicate_pairs(3, 0.8, seed=1) == near_duplicate_pairs(3, 0.8, seed=1)
    assert near_duplicate_pairs(3, 0.8, seed=1) != near_duplicate_pairs(3, 0.8, seed=2)
    with pytest.raises(ValueError, match="not an integer"):
        near_duplicate_pairs(1, 0.801)
    with pytest.raises(ValueError):
        near_duplicate_pairs(1, 1.5)
    assert math.isclose(float(near_duplicate_pairs(1, "0.8")[0].jaccard), 0.8)


def test_lsh_error_areas_are_the_integrals_scipy_quad_gives():
    """`_areas` integrates the S-curve's polynomials exactly with Gauss-Legendre nodes; datasketch (and the
    previous version of lsh_params) used scipy's adaptive quad: every 5th pair at t = 0.8, h = 128 agrees to 1e-12,
    and so do the areas of the chosen (9, 13)."""
    from scipy.integrate import quad

    from ingestaudit.metrics.lsh import _areas

    areas = _areas(0.8, 128)
    assert len(areas) == sum(128 // b for b in range(1, 129))
    for (b, r), (fp, fn) in list(areas.items())[::5] + [((9, 13), areas[(9, 13)])]:
        assert fp == pytest.approx(quad(lambda s: 1 - (1 - s ** r) ** b, 0.0, 0.8)[0], abs=1e-12)
        assert fn == pytest.approx(quad(lambda s: (1 - s ** r) ** b, 0.8, 1.0)[0], abs=1e-12)
    p = lsh_params(0.8, 128)
    assert (p.false_positive_area, p.false_negative_area) == areas[(9, 13)]
