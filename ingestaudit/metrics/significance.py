"""Paired significance for pipeline comparisons over questions: the exact sign test, Holm's step-down correction
for a family of tests, and the smallest p-value a paired test on ``n`` pairs can reach (to flag comparisons that
cannot be significant whatever the data: underpowered). Pure functions, no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SignTest:
    """Result of an exact two-sided sign test.

    Attributes:
        wins: pairs where B beat A (positive difference ``b - a``).
        losses: pairs where A beat B (negative difference).
        ties: pairs with equal values (dropped from the test).
        p_value: two-sided p in (0, 1]; 1.0 when ``wins + losses == 0``.
        method: how it was computed (printed in the report).
    """

    wins: int
    losses: int
    ties: int
    p_value: float
    method: str


SIGN_TEST_METHOD = "exact two-sided sign test (binomial, p=0.5, ties dropped)"


def sign_test(wins: int, losses: int, ties: int = 0) -> SignTest:
    """Exact two-sided sign test of ``wins`` against ``losses`` (ties dropped).

    Under H0 each non-tied pair is a win with probability 1/2; ``p = P(|W - n/2| >= |wins - n/2|)`` for
    ``W ~ Binomial(n = wins + losses, 1/2)``, computed by ``scipy.stats.binomtest(wins, n, 0.5,
    alternative="two-sided")`` (for p = 1/2 the two tails are symmetric, so this is ``min(1, 2 * P(W <= min(wins,
    losses)))``). Worked value: 5 wins, 0 losses -> ``2 * 0.5**5 = 0.0625``.
    Source: Conover, *Practical Nonparametric Statistics*, 3rd ed. (1999), ch. 3, "The sign test" (ties
    discarded).

    Returns:
        `SignTest`; ``p_value = 1.0`` when there are no non-tied pairs (no evidence of a difference).

    Raises:
        ValueError: a count that is negative or not an int.
    """
    for name, v in (("wins", wins), ("losses", losses), ("ties", ties)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{name} must be an int >= 0, got {v!r}")
    n = wins + losses
    if n == 0:
        p = 1.0
    else:
        from scipy.stats import binomtest

        p = min(1.0, float(binomtest(wins, n, 0.5, alternative="two-sided").pvalue))
    return SignTest(wins, losses, ties, p, SIGN_TEST_METHOD)


def sign_test_paired(a: Sequence[float], b: Sequence[float]) -> SignTest:
    """Sign test on paired values: wins where ``b[i] > a[i]``, losses where ``b[i] < a[i]``, ties otherwise.

    Raises:
        ValueError: lengths differ or a value is NaN (its sign is undefined).
    """
    if len(a) != len(b):
        raise ValueError(f"paired values differ in length: {len(a)} and {len(b)}")
    wins = losses = ties = 0
    for x, y in zip(a, b):
        if x != x or y != y:
            raise ValueError("a paired value is NaN")
        if y > x:
            wins += 1
        elif y < x:
            losses += 1
        else:
            ties += 1
    return sign_test(wins, losses, ties)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order.

    With the ``m`` p-values sorted ascending ``p_(1) <= ... <= p_(m)``, the adjusted value of ``p_(i)`` is
    ``max_{j <= i} min(1, (m - j + 1) * p_(j))``: monotone in the sorted order and capped at 1. Rejecting every
    hypothesis whose adjusted p is below alpha controls the family-wise error rate at alpha. Equal p-values get
    equal adjusted values. Matches R's ``p.adjust(method = "holm")``.
    Source: Holm, "A simple sequentially rejective multiple test procedure", Scand. J. Statist. 6:65-70 (1979).

    Returns:
        A new list of the same length (empty for empty input).

    Raises:
        ValueError: a p-value outside [0, 1] or NaN.
    """
    m = len(p_values)
    for p in p_values:
        if not 0.0 <= p <= 1.0:  # also rejects NaN
            raise ValueError(f"p-values must lie in [0, 1], got {p!r}")
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(p_values[i])))
        adjusted[i] = running
    return adjusted


def min_attainable_p(n: int) -> float:
    """The smallest two-sided p-value an exact sign test or exact Wilcoxon signed-rank test on ``n`` non-tied pairs
    can reach: ``min(1, 2 * 0.5**n)``.

    Sign test: the most extreme outcome (all ``n`` pairs one way) has probability ``0.5**n`` per tail. Wilcoxon
    (exact null distribution, no ties or zero differences): the extreme statistic ``n(n+1)/2`` is reached by one of
    the ``2**n`` equally likely sign patterns, so again ``2 / 2**n`` two-sided (``scipy.stats.wilcoxon`` on 5
    positive differences gives 0.0625). A comparison with ``min_attainable_p(n) >= alpha`` (``n <= 5`` at 0.05)
    cannot be significant whatever the data: report it as underpowered, not as "no difference". With Holm over a
    family of ``m`` tests the bar is ``alpha / m`` for the smallest p.
    Source: Conover (1999), ch. 3 (sign test); Wilcoxon, "Individual comparisons by ranking methods",
    Biometrics Bulletin 1:80-83 (1945) (signed-rank test, exact null distribution of the signs).

    Raises:
        ValueError: ``n`` negative or not an int. ``n == 0`` gives 1.0.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    return min(1.0, 2.0 * 0.5 ** n)
