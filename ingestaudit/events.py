"""Index freshness from an events file (``ingestaudit run --events FILE``): ``index.freshness_lag`` (p50 and p99 by
nearest rank, seconds) per class and ``index.stale_query_share``.

The file is JSON lines, read through `ingestaudit.inputs.read_input_text` (a regular file within
``limits.results_bytes``). Each line is one object:

- an **index event** ``{"doc": ID, "committed_at": TIME, "indexed_at": TIME}``: a version of document ``ID``
  committed at one time became retrievable at the other; its lag is ``indexed_at - committed_at`` in seconds;
- a **served query** ``{"query_at": TIME, "doc": ID}``: a query served at ``query_at`` retrieved ``ID``.

``TIME`` is an ISO 8601 string with a UTC offset (``2026-01-05T10:00:00Z``, ``...+01:00``;
`datetime.datetime.fromisoformat`). A line that is not a JSON object, a missing or non-string field, a time that
does not parse or has no offset, an ``indexed_at`` before its ``committed_at``, or a document the corpus does not
hold is a **problem**: named by ``file:line`` and field, counted by kind in the ``freshness`` detail, listed among
the run's failures (stage ``events``) and left out; a negative lag is never computed, and the run goes on. The
definitions (nearest rank, stale query) are `ingestaudit.metrics.freshness`'s.

Rows: the events describe the deployed index, not one pipeline, so the same rows are given to every pipeline of the
run (a pipeline column that the report and the gate can key on); a class's rows come from the events (and queries)
of its documents, ``__all__`` from all.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ingestaudit.metrics.freshness import lags, nearest_rank, stale_count
from ingestaudit.metrics.intervals import wilson
from ingestaudit.metrics.specs import MetricSpec, register

ALL = "__all__"
PERCENTILES = (("p50", 50.0), ("p99", 99.0))
INPUT = "--events"
"""The run input the freshness metrics need (`MetricSpec.needs`): a run given it records the ``index``/``freshness``
detail with ``{"input": INPUT}`` (also when the file cannot be read), so the gate tells a run without it from one
that lost its rows."""

METRICS = (
    MetricSpec("index.freshness_lag", "time from a document version's commit to its indexing (indexed_at - "
               "committed_at, seconds) over the --events file's index events, label p50 / p99: percentile by "
               "nearest rank (r = ceil(q/100 n)-th smallest; Hyndman & Fan 1996 definition 1); per class of the "
               "event's document; no interval", False, high=None, unit="seconds", budget="5%", needs=INPUT),
    MetricSpec("index.stale_query_share", "served queries (--events query_at rows) that retrieved a document while "
               "a newer committed version of it was not yet indexed (committed_at <= query_at < indexed_at for "
               "one of its events) / served queries; Wilson over queries", False, ci="wilson", unit="queries",
               needs=INPUT),
)
register(*METRICS)


@dataclass
class EventsRead:
    """The usable lines of an events file and its problems.

    Attributes:
        events: ``(doc, committed, indexed)`` in POSIX seconds, ``indexed >= committed``.
        queries: ``(query_at, doc)`` in POSIX seconds.
        problems: ``(where, field, message)`` with ``where`` = ``file:line``.
        kinds: problem counts by kind (``malformed``, ``unparseable_time``, ``indexed_before_committed``,
            ``unknown_document``).
    """

    events: list[tuple[str, float, float]] = field(default_factory=list)
    queries: list[tuple[float, str]] = field(default_factory=list)
    problems: list[tuple[str, str, str]] = field(default_factory=list)
    kinds: dict[str, int] = field(default_factory=dict)

    def problem(self, where: str, fld: str, message: str, kind: str) -> None:
        """Record one problem of a line."""
        self.problems.append((where, fld, message))
        self.kinds[kind] = self.kinds.get(kind, 0) + 1


def parse_time(value: Any) -> float:
    """An ISO 8601 time with a UTC offset as POSIX seconds.

    Raises:
        ValueError: not a string, unparseable, or without an offset (the message says which).
    """
    if not isinstance(value, str):
        raise ValueError(f"expected an ISO 8601 string, got {type(value).__name__}")
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO 8601 time") from None
    if t.tzinfo is None or t.utcoffset() is None:
        raise ValueError(f"{value!r} has no UTC offset (add Z or +HH:MM)")
    return t.timestamp()


def read_events(path: Path, known_docs: Sequence[str] | Mapping[str, Any], limits: Any = None) -> EventsRead:
    """Read ``path`` (module docstring); ``known_docs``: the corpus's document ids.

    Raises:
        ingestaudit.inputs.InputFileError: the file is missing, not a regular file, over ``limits.results_bytes``
            or not UTF-8 (the caller makes it one failure).
    """
    from ingestaudit.config import Limits
    from ingestaudit.inputs import read_input_text
    from ingestaudit.jsonlimits import jsonl_lines

    limits = limits if limits is not None else Limits()
    text = read_input_text(path, max_bytes=limits.results_bytes, limit="limits.results_bytes")
    known = set(known_docs)
    out = EventsRead()
    for n, line in enumerate(jsonl_lines(text), start=1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            obj = json.loads(line)
        except ValueError as exc:
            out.problem(where, "line", f"not JSON ({exc})", "malformed")
            continue
        if not isinstance(obj, dict):
            out.problem(where, "line", "not a JSON object", "malformed")
            continue
        doc = obj.get("doc")
        if not isinstance(doc, str) or not doc:
            out.problem(where, "doc", "missing or not a non-empty string", "malformed")
            continue
        is_query = "query_at" in obj
        names = ("query_at",) if is_query else ("committed_at", "indexed_at")
        times: list[float] = []
        for name in names:
            if name not in obj:
                out.problem(where, name, "missing", "malformed")
                break
            try:
                times.append(parse_time(obj[name]))
            except ValueError as exc:
                out.problem(where, name, str(exc), "unparseable_time")
                break
        if len(times) != len(names):
            continue
        if doc not in known:
            out.problem(where, "doc", f"{doc!r} is not a document of the corpus", "unknown_document")
            continue
        if is_query:
            out.queries.append((times[0], doc))
        elif times[1] < times[0]:
            out.problem(where, "indexed_at", f"{obj['indexed_at']} is before committed_at {obj['committed_at']}",
                        "indexed_before_committed")
        else:
            out.events.append((doc, times[0], times[1]))
    return out


def freshness_scores(read: EventsRead, doc_classes: Mapping[str, str]) -> list[tuple[str, Any, int]]:
    """``(class or "__all__", Score, n)`` rows of ``read``: ``index.freshness_lag`` p50 and p99 per class with
    events, ``index.stale_query_share`` per class with served queries; with no usable event, ``__all__`` lag rows in
    state ``no_reference``."""
    from ingestaudit.measurement import Score, State

    out: list[tuple[str, Any, int]] = []
    by_class: dict[str, list[tuple[float, float]]] = {}
    for doc, c, i in read.events:
        by_class.setdefault(doc_classes.get(doc, ""), []).append((c, i))
    groups = [(ALL, [e for v in by_class.values() for e in v])] + sorted(by_class.items())
    if not read.events:
        out += [(ALL, Score("index.freshness_lag", None, state=State.NO_REFERENCE, label=label,
                            detail={"reason": "no usable index event in the --events file"}), 0)
                for label, _ in PERCENTILES]
    for cls, pairs in groups if read.events else []:
        lag = lags(pairs)
        for label, q in PERCENTILES:
            rank = max(1, math.ceil(q / 100 * len(lag)))
            out.append((cls, Score("index.freshness_lag", nearest_rank(lag, q), label=label,
                                   detail={"unit": "seconds", "rank": rank, "n": len(lag),
                                           "rule": "nearest rank"}), len(lag)))
    windows: dict[str, list[tuple[float, float]]] = {}
    for doc, c, i in read.events:
        windows.setdefault(doc, []).append((c, i))
    q_by_class: dict[str, list[tuple[float, str]]] = {}
    for t, doc in read.queries:
        q_by_class.setdefault(doc_classes.get(doc, ""), []).append((t, doc))
    for cls, queries in ([(ALL, read.queries)] + sorted(q_by_class.items())) if read.queries else []:
        stale, total = stale_count(queries, windows)
        ci = wilson(stale, total)
        out.append((cls, Score("index.stale_query_share", stale / total, numerator=stale, denominator=total,
                               detail={"ci": {"low": ci.low, "high": ci.high, "method": "wilson"}}), total))
    return out


def freshness_rows(path: Path, pipelines: Sequence[str], doc_classes: Mapping[str, str], limits: Any = None
                   ) -> tuple[list[Any], list[Any], list[Any]]:
    """The run's freshness summary rows, details and failures for ``pipelines`` (module docstring): ``(summary
    rows, StageDetail per pipeline, Failures)``; a file that cannot be read is one failure (stage ``events``), a
    detail with its error and no row (the run was given ``--events``: against a baseline with freshness rows they
    are missing, a failed gate)."""
    from ingestaudit.inputs import InputFileError
    from ingestaudit.report.aggregate import corpus_summary_row
    from ingestaudit.report.schema import Failure, StageDetail

    try:
        read = read_events(path, doc_classes, limits)
    except (InputFileError, UnicodeDecodeError, OSError) as exc:
        details = [StageDetail(pipeline=p, stage="index", name="freshness",
                               data={"input": INPUT, "file": str(path), "error": str(exc)}) for p in pipelines]
        return [], details, [Failure(item=str(path), pipeline="", stage="events", message=str(exc))]
    failures = [Failure(item=where, pipeline="", stage="events", message=f"{fld}: {msg}")
                for where, fld, msg in read.problems]
    scores = freshness_scores(read, doc_classes)
    summary = [corpus_summary_row(sc, pipeline=p, doc_class=cls, n_docs=n) for p in pipelines for cls, sc, n in scores]
    detail = {"input": INPUT, "file": str(path), "events": len(read.events), "queries": len(read.queries),
              "problems": len(read.problems), "problem_kinds": dict(sorted(read.kinds.items()))}
    details = [StageDetail(pipeline=p, stage="index", name="freshness", data=detail) for p in pipelines]
    return summary, details, failures
