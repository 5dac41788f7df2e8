import pytest

from ingestaudit.metrics.intervals import bootstrap_ratio, wilson


@pytest.mark.parametrize(("k", "n", "low", "high"), [
    (5, 10, 0.237, 0.763),  # the seed's worked values
    (10, 10, 0.722, 1.0),
    (0, 10, 0.0, 0.2775),
])
def test_wilson_worked_values(k, n, low, high):
    ci = wilson(k, n)
    assert ci.low == pytest.approx(low, abs=5e-4)
    assert ci.high == pytest.approx(high, abs=5e-4)


def test_wilson_bounds_are_exact_at_the_edges():
    assert wilson(0, 10).low == 0.0  # exactly, not a tiny positive or negative number
    assert wilson(10, 10).high == 1.0


def test_wilson_without_trials_gives_no_interval():
    assert wilson(0, 0) is None


@pytest.mark.parametrize(("k", "n"), [(11, 10), (-1, 10), (1.5, 10)])
def test_wilson_rejects_bad_counts(k, n):
    with pytest.raises(ValueError):
        wilson(k, n)


def test_bootstrap_is_seeded_and_brackets_the_micro_ratio():
    num, den = [10, 30, 5, 0], [100, 200, 50, 40]
    a = bootstrap_ratio(num, den, seed=7, n_resamples=500)
    b = bootstrap_ratio(num, den, seed=7, n_resamples=500)
    assert a == b
    assert a.low <= sum(num) / sum(den) <= a.high
    assert 0.0 <= a.low and a.high <= 0.15 + 1e-12  # no resample exceeds the largest per-document ratio


def test_bootstrap_needs_two_documents():
    assert bootstrap_ratio([1.0], None, seed=0) is None


def test_bootstrap_of_constant_values_is_a_point():
    ci = bootstrap_ratio([0.5, 0.5, 0.5], None, seed=0)
    assert (ci.low, ci.high) == (0.5, 0.5)


def test_wilson_in_closed_form_agrees_with_scipys_binomtest_wilson():
    """The closed form (no scipy import at run time) against scipy's own Wilson interval as an oracle, over counts
    and confidence levels; scipy's bounds are clipped to [0, 1] and pinned at k = 0 and k = n as wilson's are."""
    from scipy.stats import binomtest

    worst = 0.0
    for n in (1, 2, 3, 7, 10, 37, 100, 1001):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            for conf in (0.5, 0.9, 0.95, 0.99, 0.999):
                got = wilson(k, n, conf)
                ci = binomtest(k, n).proportion_ci(confidence_level=conf, method="wilson")
                low = 0.0 if k == 0 else max(0.0, ci.low)
                high = 1.0 if k == n else min(1.0, ci.high)
                worst = max(worst, abs(got.low - low), abs(got.high - high))
    assert worst < 1e-12
