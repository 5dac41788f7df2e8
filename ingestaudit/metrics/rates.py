"""`Rate`: one measured ratio with its raw parts, or ``None`` with the reason it is undefined (never NaN, never a fake
0). Shared by the span (PII), classification (language), leakage, dedup and LSH metrics; each keeps its own
conventions for the state type and the number types of the terms (see `Rate.of`)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

OK = "ok"
"""State of a defined rate (equal to ``ingestaudit.measurement.State.OK``, a ``str`` enum)."""


def _quotient(numerator: float | Fraction, denominator: float | Fraction) -> float:
    """``numerator / denominator`` correctly rounded to a float (denominator != 0).

    Two ints or two floats divide directly (IEEE division and CPython's int true division are correctly rounded);
    any other mix (a Fraction, an int with a float) goes through exact `Fraction` arithmetic, so an int above 2**53
    is never rounded before the division.
    """
    if (isinstance(numerator, int) and isinstance(denominator, int)) or (
            isinstance(numerator, float) and isinstance(denominator, float)):
        return numerator / denominator
    return float(Fraction(numerator) / Fraction(denominator))


@dataclass(frozen=True, kw_only=True)
class Rate:
    """One rate with its two terms, or ``value=None`` in a state that says why (keyword-only construction).

    Attributes:
        value: ``numerator / denominator`` for a plain ratio (in [0, 1] for the span, classification, leakage and
            pairwise dedup rates, [-1, 1] for the adjusted Rand index); a producer may scale it (false positives
            per 1,000 tokens is ``1000 · numerator / denominator``, documented there). ``None`` when undefined.
        numerator, denominator: the two terms (counts, sums of per-item fractions...; ``denominator == 0`` gives
            ``value is None`` for a plain ratio).
        state: ``"ok"`` when ``value`` is set; otherwise why not: ``"no_prediction"`` (nothing predicted),
            ``"no_reference"`` (nothing labelled) or ``"skipped"`` (over a budget). A ``str``, or a member of a
            ``str`` enum such as ``ingestaudit.measurement.State`` (the dedup metrics use those).
        reason: why the value is ``None``; ``None`` when ``state`` is ``"ok"``.
        name: the rate's name (``"precision"``, ``"f1"``, ``"leakage"``...), ``""`` where the caller names it.
    """

    value: float | None
    numerator: float
    denominator: float
    state: str = OK
    reason: str | None = None
    name: str = ""

    @classmethod
    def of(cls, numerator: float | Fraction, denominator: float | Fraction, *, if_zero: str, reason: str,
           name: str = "", ok: str = OK, as_float: bool = False) -> Rate:
        """``value = numerator / denominator`` (correctly rounded, exact for Fractions); a zero denominator gives
        ``value=None`` in state ``if_zero`` with ``reason``.

        Args:
            if_zero, reason: the state and reason of an undefined (0/0 or x/0) rate.
            ok: the state of a defined rate (``"ok"``, or ``State.OK`` for callers that keep `State` members).
            as_float: store the terms as floats (required for Fractions); otherwise they are stored as given, so
                integer counts stay integers.
        """
        undefined = denominator == 0
        value = None if undefined else _quotient(numerator, denominator)
        if as_float:
            numerator, denominator = float(numerator), float(denominator)
        return cls(value=value, numerator=numerator, denominator=denominator, state=if_zero if undefined else ok,
                   reason=reason if undefined else None, name=name)
