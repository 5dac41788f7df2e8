"""Freshness metrics: nearest-rank percentiles and stale queries, by hand."""

import pytest

from ingestaudit.metrics.freshness import is_stale, lags, nearest_rank, stale_count


def test_nearest_rank_acceptance_values():
    lag = lags([(0, 10), (100, 120), (5, 35), (0, 40), (0, 1000)])
    assert sorted(lag) == [10, 20, 30, 40, 1000]
    assert nearest_rank(lag, 50) == 30  # rank ceil(2.5) = 3
    assert nearest_rank(lag, 99) == 1000  # rank ceil(4.95) = 5
    assert nearest_rank([7.0], 50) == 7.0 and nearest_rank([], 50) is None
    with pytest.raises(ValueError):
        nearest_rank([1.0], 0)


def test_negative_lag_is_refused():
    with pytest.raises(ValueError):
        lags([(10, 5)])


def test_stale_queries():
    windows = {"a": [(100.0, 160.0)], "b": [(0.0, 10.0)]}
    assert is_stale(100.0, windows["a"]) and not is_stale(160.0, windows["a"])
    # a@99 fresh, a@120 stale, b@50 fresh, c (no events) fresh
    assert stale_count([(99.0, "a"), (120.0, "a"), (50.0, "b"), (1.0, "c")], windows) == (1, 4)
