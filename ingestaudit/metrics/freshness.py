"""Index freshness: how long a committed document version takes to become retrievable, and how many served queries
saw a stale index. Pure functions over times in seconds (POSIX, float); reading the events file is
`ingestaudit.events`'s job.

Definitions:

- **lag** of one event: ``indexed_at - committed_at`` in seconds, >= 0 (an event whose indexed time precedes its
  commit is a bad input, never a negative lag).
- **percentile by nearest rank** (NIST/Hyndman & Fan 1996 definition 1 with the ceiling rule, as trec_eval and the
  index audit's latency percentiles use): for ``n`` sorted values ``v_1 <= ... <= v_n`` and ``0 < q <= 100``,
  ``P_q = v_r`` with ``r = ceil(q / 100 * n)``. Lags 10, 20, 30, 40, 1000 s give P50 = v_3 = 30 and P99 = v_5 = 1000.
- **stale query**: a served query at time ``t`` that retrieved document ``d`` is stale when some event of ``d`` has
  ``committed_at <= t < indexed_at``: a newer committed version existed and was not yet indexed.
  ``index.stale_query_share`` = stale queries / queries (a proportion, Wilson interval).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence


def nearest_rank(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile of ``values`` by nearest rank (module docstring); None for no values.

    Raises:
        ValueError: ``q`` outside (0, 100].
    """
    if not 0 < q <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {q}")
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return float(ordered[rank - 1])


def lags(events: Iterable[tuple[float, float]]) -> list[float]:
    """``indexed - committed`` (seconds) of each ``(committed, indexed)`` pair.

    Raises:
        ValueError: an indexed time before its commit (the reader rejects these first; a negative lag is never
            returned).
    """
    out = []
    for committed, indexed in events:
        if indexed < committed:
            raise ValueError(f"indexed at {indexed} before committed at {committed}")
        out.append(float(indexed - committed))
    return out


def is_stale(query_at: float, windows: Iterable[tuple[float, float]]) -> bool:
    """True when ``query_at`` falls in some ``[committed, indexed)`` window of the retrieved document."""
    return any(c <= query_at < i for c, i in windows)


def stale_count(queries: Iterable[tuple[float, str]], windows: Mapping[str, Sequence[tuple[float, float]]]
                ) -> tuple[int, int]:
    """``(stale, total)`` over served queries ``(query_at, doc)``; ``windows[doc]`` are the document's
    ``(committed, indexed)`` events (a document without events is never stale)."""
    stale = total = 0
    for t, doc in queries:
        total += 1
        stale += is_stale(t, windows.get(doc, ()))
    return stale, total
