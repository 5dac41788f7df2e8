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
from pathlib import Path

from ingestaudit.report.schema import Report

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


@dataclass(frozen=True)
class BandCheck:
    """A head value against its band: ``side`` is ``"worse"`` or ``"better"`` when outside (by the metric's
    direction), ``""`` inside."""

    pipeline: str
    doc_class: str
    metric: str
    label: str
    value: float
    band: Band
    side: str


def check_bands(history: Path, head: Report, window: int) -> list[BandCheck]:
    """Each key metric x pipeline x class of ``head`` (`ingestaudit.report.tables.headline_keys`) with a headline
    value, against the band of its last ``window`` accepted runs in ``history`` (keys with fewer than `MIN_RUNS`
    values are left out). Sorted: outside first, then by pipeline, class, metric.

    Raises:
        ingestaudit.report.history.HistoryError: the history cannot be read.
    """
    from ingestaudit.report.history import accepted_series
    from ingestaudit.report.stats import orientation_of
    from ingestaudit.report.tables import headline_keys, headline_value

    keys = set(headline_keys(head.summary).values())
    series = accepted_series(history, window, sorted(keys))
    out = []
    for r in head.summary:
        value = headline_value(r)
        band = xmr_band(series.get((r.pipeline, r.doc_class, r.metric, r.label), []))
        if (r.metric, r.label) not in keys or value is None or band is None:
            continue
        side = ""
        if band.outside(value):
            orient = orientation_of(r.metric, r.label)
            side = "worse" if orient.badness(value) > orient.badness(band.center) else "better"
        out.append(BandCheck(r.pipeline, r.doc_class, r.metric, r.label, value, band, side))
    return sorted(out, key=lambda c: (not c.side, c.pipeline, c.doc_class, c.metric, c.label))

