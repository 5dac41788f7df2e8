"""Per-step wall-clock times of a run (issue 27 point 3): where the seconds went, for ``timings.json`` and
``run --profile``.

`timed(key)` adds the seconds spent in its block to this thread's totals under ``key``, EXCLUSIVE of the blocks
nested in it (the semantic chunker's embedding inside ``chunk`` counts as ``embed``, not twice), so the keys of one
process never overlap and their sum is the time spent in timed blocks. A worker resets its totals before each task
and returns them with the task's result (`take`); the main process sums them per pipeline.

Keys (seconds, float, >= 0; see README "timings.json"):

- ``startup``: the run command from its start to the first document task (config, corpus discovery, truths,
  start-up checks, worker start);
- per document, summed over documents: ``parse``, ``clean``, ``chunk``, ``embed`` (token counting and vectors,
  cache look-ups included), ``step.<name>`` (a detection or enrichment step: ``language``, ``pii``,
  ``entities``, ...), ``auditor.<stage>`` (an auditor scoring one document), ``chain`` (the chain's own
  bookkeeping: offset maps, evidence tracing), ``task`` (the rest of a task);
- per pipeline: ``index`` (building and searching the index), ``retrieve`` (question embedding and retrieval
  scoring), ``auditor.<stage>`` (corpus- and pipeline-scope auditors), ``collect`` (storing the rows as results
  arrive);
- ``summary`` (store, aggregation, bootstrap intervals, paired tests) and ``report`` (writing report.json,
  report.md, report.html and the other files).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class _State(threading.local):
    """Per thread (a Dask worker runs several tasks at once, one per thread): the totals and the open blocks."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}
        self.stack: list[list] = []  # per open block: [start, seconds of nested blocks, key]


_STATE = _State()


@contextmanager
def timed(key: str) -> Iterator[None]:
    """Add the block's wall-clock seconds, minus those of the timed blocks nested in it, to ``key``."""
    begin(key)
    try:
        yield
    finally:
        end(key)


def begin(key: str) -> None:
    """Open a block of ``key`` in this thread (`timed` without a ``with``: close it with `end`)."""
    _STATE.stack.append([time.perf_counter(), 0.0, key])


def end(key: str) -> None:
    """Close this thread's innermost open block of ``key`` and add its exclusive seconds to ``key``. Never raises:
    blocks opened inside it and left open (an exception between a `begin` and its `end`) are closed with it, and
    an ``end`` without its ``begin`` does nothing (timing never changes a run)."""
    stack = _STATE.stack
    if not any(frame[2] == key for frame in stack):
        return
    while stack[-1][2] != key:
        stack.pop()
    start, nested, _ = stack.pop()
    total = time.perf_counter() - start
    _STATE.totals[key] = _STATE.totals.get(key, 0.0) + max(total - nested, 0.0)
    if stack:
        stack[-1][1] += total


def take() -> dict[str, float]:
    """This thread's totals since the last `take`, and reset them (blocks still open keep counting)."""
    out = dict(_STATE.totals)
    _STATE.totals.clear()
    return out


def restore(times: dict[str, float]) -> None:
    """Add ``times`` (an earlier `take`) back to this thread's totals."""
    add(_STATE.totals, times)


def add(into: dict[str, float], times: dict[str, float]) -> dict[str, float]:
    """``into`` with ``times`` added key by key (returned, changed in place)."""
    for key, seconds in times.items():
        into[key] = into.get(key, 0.0) + float(seconds)
    return into


def top(times: dict[str, float], n: int = 10) -> list[tuple[str, float]]:
    """The ``n`` largest ``(key, seconds)``, largest first (ties by key)."""
    return sorted(times.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


RUN_KEY = "(run)"
"""The ``timings.json`` entry of the whole run (the other top-level entries are pipelines; a pipeline named
``(run)`` would share it, so no built-in name uses parentheses)."""

_RUN: dict[str, float] = {}


def now() -> float:
    """`time.perf_counter` (seconds)."""
    return time.perf_counter()


def mark_start() -> None:
    """Mark the start of a run command (``ingestaudit run``, before its config is read): `begin_run` counts
    ``startup`` from here."""
    _RUN["mark"] = time.perf_counter()


def begin_run() -> None:
    """`ingestaudit.runner.run` starts: its start is the `mark_start` mark when one is set (consumed), else now."""
    _RUN["start"] = _RUN.pop("mark", time.perf_counter())


def since_run_start() -> float:
    """Seconds since `begin_run` (0.0 before any)."""
    return time.perf_counter() - _RUN["start"] if "start" in _RUN else 0.0


def with_step_seconds(timings: dict, pipelines: dict[str, dict[str, float]], run: dict[str, float], workers: int,
                      executor: str) -> dict:
    """``timings`` with each pipeline's summed step times under ``[<pipeline>]["step_seconds"]`` and the run's
    entry `RUN_KEY`: ``step_seconds`` (every key summed over pipelines, plus the run-level ``startup``,
    ``collect``, ``summary``; ``report`` and ``wall_s`` are added by `finish_report`), ``workers`` and
    ``executor`` (with more than one worker the document keys add up the workers' time: their sum exceeds the
    wall time)."""
    out = dict(timings)
    total: dict[str, float] = {}
    for name, times in pipelines.items():
        out.setdefault(name, {})["step_seconds"] = {k: round(v, 6) for k, v in sorted(times.items())}
        add(total, times)
    add(total, run)
    out[RUN_KEY] = {"step_seconds": {k: round(v, 6) for k, v in sorted(total.items())}, "workers": int(workers),
                    "executor": str(executor)}
    return out


def finish_report(timings: dict, report_seconds: float) -> None:
    """Add ``report`` (writing the report files, seconds) to the run's ``step_seconds`` and ``wall_s`` (from
    `begin_run` to now) to its entry, in place; nothing when ``timings`` has no `RUN_KEY` entry, or has its
    ``wall_s`` already (timings.json read back by ``ingestaudit report``), or no run began in this process."""
    run = timings.get(RUN_KEY)
    if isinstance(run, dict) and isinstance(run.get("step_seconds"), dict) and "start" in _RUN \
            and "wall_s" not in run:  # once: a report re-rendered later (``ingestaudit report``) keeps its run's
        run["step_seconds"]["report"] = round(report_seconds, 6)
        run["wall_s"] = round(since_run_start(), 6)
