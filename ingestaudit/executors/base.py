"""The executor interface, the failure messages every executor shares, and the per-worker memory limit."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ingestaudit.errors import IngestAuditError

EXECUTORS = ("serial", "process", "dask")

MEMORY_FRACTION = 0.5
"""Default share of the machine's memory that all workers together may map (`default_worker_memory_mb`)."""
MIN_WORKER_MEMORY_MB = 4096
"""Floor of the default limit: a worker that has loaded PyMuPDF, torch, a sentence-transformers model and FAISS maps
about 2.3 GB of address space (measured on Linux x86-64, 2 cores; more threads reserve more), most of it never
touched, so a smaller default would fail documents that fit in memory."""

_MEMORY_LIMIT_MB: int | None = None  # the limit applied in this worker process (`apply_memory_limit`), if any

QUEUE_DEPTH = 2
"""Batches in flight per worker (thread): one running, one waiting on the worker."""
MAX_BATCH = 16
"""Tasks per batch at most (`batch_size`)."""


def batch_size(n_tasks: int, threads: int) -> int:
    """Tasks per batch for ``n_tasks`` tasks over ``threads`` worker threads: enough batches for every thread to
    get `QUEUE_DEPTH` x 8 of them, at most `MAX_BATCH` tasks each; 1 below 32 tasks per thread, so a small run keeps
    one task per batch. Batching only changes how tasks travel: every task keeps its own budget and its own
    result on every executor."""
    return max(1, min(MAX_BATCH, n_tasks // max(1, threads * QUEUE_DEPTH * 8)))


class Interrupted(KeyboardInterrupt):
    """The run was asked to stop by a signal (``signum``: SIGINT for Ctrl-C, SIGTERM); see `request_stop`."""

    def __init__(self, signum: int = 2) -> None:
        super().__init__(signum)
        self.signum = signum


_STOP: list[int] = []  # the signal that asked this process to stop, once one has


def request_stop(signum: int) -> None:
    """Record that ``signum`` asked the run to stop and raise `Interrupted` (from a signal handler).

    Python raises the exception wherever the main thread is, and an exception raised inside a garbage-collector
    callback or a ``__del__`` (dask's GC diagnostics have one) is printed and dropped; the executors therefore also
    poll `raise_if_stopped` between tasks and while they wait, so a stop is never lost.
    """
    if not _STOP:
        _STOP.append(signum)
    raise Interrupted(signum)


def raise_if_stopped() -> None:
    """Raise `Interrupted` if a signal asked the run to stop (`request_stop`)."""
    if _STOP:
        raise Interrupted(_STOP[0])


def clear_stop() -> None:
    """Forget an earlier stop request (a new run in the same process)."""
    _STOP.clear()


class ExecutorError(IngestAuditError, ValueError):
    """The executor cannot start (unknown name, a scheduler that does not answer); nothing was audited."""


class TaskTimeout(BaseException):
    """Raised inside a task run in this process when its time budget is spent (the ``serial`` executor).

    A `BaseException` so that code catching ``Exception`` around a parser does not swallow it; code catching
    ``BaseException`` must re-raise it.
    """


@dataclass(frozen=True)
class TaskFailure:
    """A task that produced no result: it exceeded its budget, killed its worker or raised."""

    message: str


def timeout_message(timeout_s: float) -> str:
    return f"exceeded the per-document time budget of {timeout_s:g} s"


def memory_note(limit_mb: int | None) -> str:
    return (f"the worker memory limit is {limit_mb} MB of address space ([run] worker_memory_mb)"
            if limit_mb else "")


def died_message(exitcode: int | None = None, memory_mb: int | None = None) -> str:
    """The failure of a task whose worker process ended under it; names the memory limit when one was set (a
    library that cannot allocate often aborts the process instead of raising)."""
    note = memory_note(memory_mb)
    return ("worker process died" + (f" (exit code {exitcode})" if exitcode is not None else "")
            + (f"; {note}" if note else ""))


def run_in_order(fn: Callable[[Any], Any], tasks: Sequence[Any], memory_mb: int | None,
                 on_start: Callable[[int], None]) -> list[Any]:
    """A batch's tasks in order on a worker, ``on_start(position)`` just before each (how the executor learns which
    task runs, and since when); a task that raises is its `TaskFailure` (`raised_message`), the others still run.
    Every batching executor runs its batches with this, so a raised error reads the same on each."""
    out = []
    for pos, task in enumerate(tasks):
        on_start(pos)
        try:
            out.append(fn(task))
        except Exception as exc:
            out.append(TaskFailure(raised_message(exc, memory_mb)))
    return out


def raised_message(exc: BaseException, memory_mb: int | None = None) -> str:
    """``Type: message`` of an exception a task raised; a `MemoryError` names the memory limit (``memory_mb``, or
    the one applied in this worker process) when there is one."""
    text = f"{type(exc).__name__}: {exc}"
    limit = memory_mb or _MEMORY_LIMIT_MB
    if isinstance(exc, MemoryError) and limit:
        text += f" (out of memory: {memory_note(limit)})"
    return text


def total_memory_mb() -> int | None:
    """The machine's physical memory in MB (``sysconf``), or None where it is unknown."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
    except (AttributeError, ValueError, OSError):
        return None


def default_worker_memory_mb(workers: int) -> int | None:
    """``max(MIN_WORKER_MEMORY_MB, MEMORY_FRACTION x physical memory / workers)`` in MB; None where the machine's
    memory is unknown (no limit)."""
    total = total_memory_mb()
    if total is None:
        return None
    return max(MIN_WORKER_MEMORY_MB, int(MEMORY_FRACTION * total / max(1, workers)))


def apply_memory_limit(limit_mb: int | None) -> None:
    """Limit this process's address space to ``limit_mb`` MB (``RLIMIT_AS``, soft and hard, never above a hard
    limit already set), so an allocation beyond it raises `MemoryError` in Python and fails in C libraries, instead
    of the kernel's out-of-memory killer ending some process. None or 0: no limit. Called in worker processes
    only: the limit covers the whole process and cannot be raised again.

    ``RLIMIT_AS`` counts mapped address space (shared libraries and reserved but untouched memory included), which
    is more than the resident memory a monitor shows. Where ``resource`` does not exist (Windows) nothing is done.
    """
    global _MEMORY_LIMIT_MB
    if not limit_mb:
        return
    try:
        import resource
    except ImportError:
        return
    want = int(limit_mb) << 20
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    resource.setrlimit(resource.RLIMIT_AS, (want, want))
    _MEMORY_LIMIT_MB = want >> 20


class Executor(ABC):
    """Maps a picklable module-level function over tasks, ``workers`` at a time; a context manager that releases
    its workers (and a cluster it started) on exit."""

    name = ""

    def __init__(self, workers: int = 1, initializer: Callable[[], None] | None = None, *,
                 memory_mb: int | None = None) -> None:
        self.workers = workers
        self.initializer = initializer
        self.memory_mb = memory_mb  # per worker process (`apply_memory_limit`); None: no limit

    def start(self) -> None:
        """Acquire what the executor needs before any task (connect to a scheduler, start a cluster), so that a
        dead scheduler is an error before the corpus is read; a no-op by default, and safe to call twice.

        Raises:
            ExecutorError: the executor cannot start.
        """

    @abstractmethod
    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any], timeout_s: float
            ) -> Iterator[tuple[int, Any]]:
        """Yield ``(index, fn(tasks[index]))`` as tasks finish, or ``(index, TaskFailure)`` for a task that ran
        longer than ``timeout_s`` seconds, killed its worker or raised. Closing the iterator early (or an
        interrupt) cancels the tasks not yet finished."""

    def close(self) -> None:
        """Release workers and any cluster this executor started."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
