import pytest
from scipy.stats import wilcoxon

from ingestaudit.metrics.intervals import wilson
from ingestaudit.metrics.significance import holm, min_attainable_p, sign_test, sign_test_paired


def test_sign_test_five_wins_no_loss():
    result = sign_test(5, 0)
    assert result.p_value == pytest.approx(2 * 0.5 ** 5) and result.p_value == pytest.approx(0.0625)
    assert sign_test(0, 5).p_value == result.p_value  # two-sided


def test_sign_test_hand_values():
    # 8 wins, 2 losses: 2 * P(W <= 2), W ~ Bin(10, 1/2) = 2 * (1 + 10 + 45) / 1024
    assert sign_test(8, 2).p_value == pytest.approx(2 * 56 / 1024)
    assert sign_test(5, 5).p_value == 1.0
    assert sign_test(0, 0, ties=7).p_value == 1.0


def test_sign_test_paired_drops_ties():
    result = sign_test_paired([0.1, 0.5, 0.5, 0.2, 0.0, 0.3, 0.7], [0.4, 0.9, 0.5, 0.6, 1.0, 0.8, 0.7])
    assert (result.wins, result.losses, result.ties) == (5, 0, 2)
    assert result.p_value == pytest.approx(0.0625)
    with pytest.raises(ValueError):
        sign_test_paired([1.0], [1.0, 2.0])
    with pytest.raises(ValueError):
        sign_test(-1, 2)


def test_holm_hand_worked():
    # sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> max so far 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_holm_is_capped_monotone_and_keeps_order():
    ps = [0.5, 0.01, 0.2, 0.2, 0.9]
    adj = holm(ps)
    # sorted: 0.01*5=0.05, 0.2*4=0.8, 0.2*3=0.6 -> 0.8, 0.5*2=1.0, 0.9*1 -> 1.0 (monotone)
    assert adj == pytest.approx([1.0, 0.05, 0.8, 0.8, 1.0])
    order = sorted(range(len(ps)), key=ps.__getitem__)
    assert all(adj[order[i]] <= adj[order[i + 1]] for i in range(len(ps) - 1))
    assert all(a >= p for a, p in zip(adj, ps))
    assert holm([]) == []
    with pytest.raises(ValueError):
        holm([0.5, 1.2])
    with pytest.raises(ValueError):
        holm([float("nan")])


@pytest.mark.parametrize("n", range(1, 13))
def test_min_attainable_p_matches_the_exact_tests(n):
    p = min_attainable_p(n)
    assert p == min(1.0, 2 * 0.5 ** n)
    assert sign_test(n, 0).p_value == pytest.approx(p)
    diffs = [float(i) for i in range(1, n + 1)]  # all one sign, no ties: the most extreme outcome
    assert wilcoxon(diffs, zero_method="wilcox", method="exact").pvalue == pytest.approx(p)


def test_min_attainable_p_flags_underpowered_sizes():
    assert min_attainable_p(0) == 1.0
    assert min_attainable_p(5) == 0.0625 >= 0.05  # five questions can never be significant at 0.05
    assert min_attainable_p(6) == 0.03125 < 0.05
    with pytest.raises(ValueError):
        min_attainable_p(-1)


@pytest.mark.parametrize(("k", "n", "low", "high"), [
    (5, 10, 0.237, 0.763),
    (10, 10, 0.722, 1.000),
    (0, 10, 0.0, 0.278),
])
def test_wilson_for_hit_rates(k, n, low, high):
    ci = wilson(k, n)
    assert ci.low == pytest.approx(low, abs=5e-4)
    assert ci.high == pytest.approx(high, abs=5e-4)
