"""Reciprocal rank fusion (Cormack, Clarke & Büttcher 2009, "Reciprocal rank fusion outperforms Condorcet and
individual rank learning methods", SIGIR): ``RRFscore(d) = sum over lanes l of w_l / (k + r_l(d))``, with ``r_l(d)``
the 1-based rank of ``d`` in lane ``l`` (a lane that does not return ``d`` adds nothing), ``k = 60`` as the paper
fixes it and ``w_l = 1`` unless weights are given (a weighted variant, as Elasticsearch and Vespa offer).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import TypeVar

T = TypeVar("T", bound=Hashable)

DEFAULT_K = 60
"""Cormack et al. 2009's constant."""


def rrf(lanes: Sequence[Sequence[T]], k: float = DEFAULT_K, weights: Sequence[float] | None = None
        ) -> list[tuple[T, float]]:
    """The fused ranking of ``lanes`` (each a ranked list of items, best first), as ``(item, score)`` best first.

    An item repeated within a lane counts at its first rank. Equal fused scores keep the order in which the items
    were first met, lane by lane (deterministic: the first lane's order wins a tie).

    Example: lanes ``[a, b, c]`` and ``[c, a, d]``, k = 60: a = 1/61 + 1/62, c = 1/63 + 1/61, b = 1/62, d = 1/63.

    Raises:
        ValueError: ``k <= 0`` (or not a finite number), weights of another length than the lanes, or a negative or
            non-finite weight.
    """
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k) or k <= 0:
        raise ValueError(f"RRF k must be a number > 0, got {k!r}")
    w = [1.0] * len(lanes) if weights is None else list(weights)
    if len(w) != len(lanes):
        raise ValueError(f"{len(w)} RRF weights for {len(lanes)} lanes")
    if any(isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0 for x in w):
        raise ValueError(f"RRF weights must be finite numbers >= 0, got {list(w)!r}")
    score: dict[T, float] = {}
    for lane, wl in zip(lanes, w):
        seen: set[T] = set()
        for rank, item in enumerate(lane, start=1):
            if item in seen:
                continue
            seen.add(item)
            score[item] = score.get(item, 0.0) + wl / (k + rank)
    items = list(score)  # first-met order
    ranked = sorted(range(len(items)), key=lambda i: (-score[items[i]], i))
    return [(items[i], score[items[i]]) for i in ranked]
