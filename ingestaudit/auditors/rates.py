"""Turning a metric's `Rate` into a report row (`Score`), shared by the PII, dedup and language auditors."""

from __future__ import annotations

from typing import Any

from ingestaudit.measurement import Score, State
from ingestaudit.metrics.rates import Rate


def score_from_rate(metric: str, rate: Rate, *, label: str = "", detail: dict[str, Any] | None = None) -> Score:
    """The row of ``rate`` for ``metric``: never a fake 0, and the rate's own state is kept (``no_prediction`` stays
    ``no_prediction``).

    Defined (``rate.value`` set): ``Score(metric, value, numerator, denominator, OK, label, detail)``. Undefined:
    value ``None`` in state ``State(rate.state)``, the two terms kept (so micro aggregation still sums them), and
    ``detail`` plus ``"reason"`` (the rate's reason, ``"undefined"`` if it has none).

    Raises:
        ValueError: ``rate.state`` is not a `State` value, or `Score` refuses the row (a non-finite term, an ``ok``
            rate without a value).
    """
    detail = {} if detail is None else detail
    if rate.value is None:
        return Score(metric, None, rate.numerator, rate.denominator, State(rate.state), label,
                     {**detail, "reason": rate.reason or "undefined"})
    return Score(metric, rate.value, rate.numerator, rate.denominator, State.OK, label, detail)
