"""Which documents reached a corpus-level stage, and the rows of a class none of whose documents did.

DESIGN.md, "Five states": a corpus-level metric counts only the items that reached its stage (a document a parser
skipped is not a missed duplicate). The others are not dropped silently: a corpus auditor returns them, counted by
state per class (`ingestaudit.auditors.base.CorpusResult.unreached`), and the runner adds them to the ``states`` of
that class's corpus rows (`ingestaudit.report.aggregate.corpus_summary_row`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from typing import Any

from ingestaudit.auditors.base import ArtefactItem, ItemArtefacts
from ingestaudit.measurement import Score, State

ALL = "__all__"


def parse_state(item: ItemArtefacts | ArtefactItem) -> State:
    """The state of a document the parser produced nothing for: its own state, ``no_prediction`` if it says ``ok``."""
    return item.state if item.state is not State.OK else State.NO_PREDICTION


def count_states(pairs: Iterable[tuple[str, State]]) -> dict[str, dict[str, int]]:
    """``(doc_class, state)`` of every document that did not reach the stage -> ``class -> {state: count}``, plus
    ``"__all__"`` over every class; states with a zero count are left out, classes and states sorted by name.
    Empty input gives ``{}``."""
    by_class: dict[str, Counter] = {}
    total: Counter = Counter()
    for cls, state in pairs:
        by_class.setdefault(cls, Counter())[state.value] += 1
        total[state.value] += 1
    out = {cls: dict(sorted(c.items())) for cls, c in sorted(by_class.items())}
    if total:
        out[ALL] = dict(sorted(total.items()))
    return out


def reached(item: Any) -> bool:
    """Whether a document reached the stage: an `ItemArtefacts` with a parsed document, an
    `ingestaudit.auditors.base.ArtefactItem` in state ``ok``."""
    return item.state is State.OK if isinstance(item, ArtefactItem) else item.parsed is not None


def unreached_counts(items: Sequence[Any]) -> dict[str, dict[str, int]]:
    """`count_states` of the items without parser output (see `reached`), each in its `parse_state`."""
    return count_states((i.doc_class, parse_state(i)) for i in items if not reached(i))


def dominant_state(counts: dict[str, int]) -> State:
    """The most frequent state of ``counts`` (ties: the first in `State` order); ``no_prediction`` when empty."""
    if not counts:
        return State.NO_PREDICTION
    order = [s.value for s in State]
    best = max(counts.items(), key=lambda kv: (kv[1], -order.index(kv[0])))[0]
    return State(best)


def describe(counts: dict[str, int]) -> str:
    """``"2 no_prediction, 1 error"`` (most frequent first, ties in `State` order)."""
    order = [s.value for s in State]
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda kv: (-kv[1], order.index(kv[0]))))


def unreached_rows(metrics: Sequence[str], counts: dict[str, int], *, label: str = "") -> list[Score]:
    """One row per metric, without a value, for a class none of whose documents reached the stage: state
    `dominant_state` of ``counts``, reason naming the counts (the caller gives ``n`` = 0)."""
    state = dominant_state(counts)
    why = (f"no document reached this stage ({describe(counts)})" if counts
           else "no document reached this stage")
    return [Score.missing(m, state, why, label=label) for m in metrics]
