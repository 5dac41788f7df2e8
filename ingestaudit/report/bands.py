"""Control bands from the run history (issue 26): Shewhart's individuals and moving-range (X-mR) chart per key
metric x pipeline x class, drawn from the last ``[gate] band_window`` accepted runs.

For values x_1..x_n (oldest first): center = mean(x), mean moving range MR = mean(|x_i - x_(i-1)|), limits =
center +/- `XMR_FACTOR` x MR, where 2.66 = 3 / d2 and d2 = 1.128 is the expected range of two normal values in
standard deviations (Montgomery, *Introduction to Statistical Quality Control*, the individuals chart). A band
needs `MIN_RUNS` values. Worked example (tests): 0.80, 0.82, 0.81, 0.79, 0.80 give center 0.804, MR 0.015 and
limits 0.804 +/- 0.0399 = [0.7641, 0.8439]: a head value of 0.75 is outside, 0.78 inside.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

XMR_FACTOR = 2.66
"""3 / d2 with d2 = 1.128 (two-point moving ranges)."""

MIN_RUNS = 5
"""Accepted runs a band needs; with fewer the key is not banded."""


@dataclass(frozen=True)
class Band:
    """An X-mR band: ``center`` (mean), ``mr`` (mean moving range), ``low`` and ``high`` (the control limits) over
    ``runs`` values."""

    center: float
    mr: float
    low: float
    high: float
    runs: int

    def outside(self, value: float) -> bool:
        """True when ``value`` lies strictly outside ``[low, high]``."""
        return value < self.low or value > self.high


def xmr_band(values: Sequence[float]) -> Band | None:
    """The individuals chart of ``values`` (oldest first; see the module docstring), None below `MIN_RUNS`."""
    if len(values) < MIN_RUNS:
        return None
    center = sum(values) / len(values)
    ranges = [abs(b - a) for a, b in zip(values, values[1:])]
    mr = sum(ranges) / len(ranges)
    return Band(center, mr, center - XMR_FACTOR * mr, center + XMR_FACTOR * mr, len(values))
