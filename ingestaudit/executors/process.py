"""``process``: a pebble process pool; pebble's per-task timeout kills a hung worker and starts a new one.

Workers come from a ``forkserver``, never from a plain ``fork`` of this process: once this process has run torch (the
question embeddings of a previous run, a notebook), a forked child that calls torch again waits forever on the
parent's OpenMP thread pool, which the fork did not copy. The fork server is a fresh interpreter with
`ingestaudit.runner` imported, so a new worker starts in milliseconds. It was started by the first pool of this
process, so each worker takes this process's environment as it is when the pool starts (`_init_worker`). As with any
``spawn`` or ``forkserver`` pool, a script that calls `ingestaudit.runner.run` must do so under
``if __name__ == "__main__":``; without it every worker dies as it starts, which is one `ExecutorError`.

Each worker limits its own address space (``memory_mb``, `ingestaudit.executors.base.apply_memory_limit`) and
ignores SIGINT (pebble's workers do): on Ctrl-C or SIGTERM this process stops the pool, which sends each worker
SIGTERM; a worker running Tesseract first kills its process group and removes its temporary folder
(`ingestaudit.parsers.tesseract_parser`).

Tasks go to the pool in batches (`ingestaudit.executors.base.batch_size`: up to `MAX_BATCH` consecutive tasks; one
per batch in a small run), so that a small task does not pay pebble's per-task cost in this process (about 0.8 ms
of scheduling, timer and result threads per task, measured on 2 cores, against about 4 ms of work for a
precomputed document). At most `QUEUE_DEPTH` batches per worker are scheduled at a time, so the results already
yielded are not held by the pool. The budget stays per task: before each task a worker writes the task's position
and start time into its batch's slot of a shared array (`_run_batch`; one 64-bit store, no message), and this
process, looking every `_POLL_S`, cancels a batch whose running task is over its budget, which makes pebble stop
that worker. The task is that failure; the other tasks of the batch (those done before it too: their results were
in the batch's lost answer) are scheduled again. Pebble's own timeout of a batch, its task count x the budget plus
a second, is only a backstop. A batch whose worker died is split into single tasks, scheduled again; a single task
whose worker died is the ``worker process died`` failure. Tasks are deterministic, so running one again changes no
result.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, wait
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from ingestaudit.executors.base import (MAX_BATCH, QUEUE_DEPTH, Executor, ExecutorError, TaskFailure,
                                        apply_memory_limit, batch_size, died_message, raise_if_stopped,
                                        raised_message, run_in_order, timeout_message)
from ingestaudit.warning_lines import install as install_warning_lines

__all__ = ["MAX_BATCH", "QUEUE_DEPTH", "ProcessExecutor"]

_POLL_S = 0.2
"""How often a waiting map looks for a stop request (`raise_if_stopped`) and for a task over its budget."""
_BACKSTOP_S = 1.0
"""Added to pebble's timeout of a batch (task count x budget): this process stops an over-budget task first."""
_TAG_BITS, _MS_BITS, _POS_BITS = 20, 38, 5  # a slot: batch tag | ms since the map started | position in the batch

NO_WORKER_STARTED = ("the process pool's workers all ended before running any task (a worker that cannot start: a "
                     "script that calls ingestaudit without an `if __name__ == \"__main__\":` guard, as the "
                     "forkserver start method requires, or a failing worker set-up; see the log above)")

_STARTS: Any = None  # in a worker: its pool's shared start slots (`_init_worker`)


class ProcessExecutor(Executor):
    name = "process"

    def __init__(self, workers: int = 1, initializer: Callable[[], None] | None = None, *,
                 memory_mb: int | None = None, batch: int | None = None) -> None:
        """``batch``: tasks per batch (default `ingestaudit.executors.base.batch_size`)."""
        super().__init__(workers, initializer, memory_mb=memory_mb)
        self.batch = batch

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any], timeout_s: float) -> Iterator[tuple[int, Any]]:
        """See `Executor.map`.

        Raises:
            ExecutorError: every worker ended before any task started (`NO_WORKER_STARTED`).
        """
        from pebble import ProcessPool

        ctx = _context()
        in_flight = QUEUE_DEPTH * self.workers
        starts = ctx.Array("q", 2 * in_flight, lock=False)  # twice the batches in flight: a slot rests before reuse
        pool = ProcessPool(max_workers=self.workers, initializer=_init_worker,
                           initargs=(self.initializer, self.workers, dict(os.environ), self.memory_mb, starts),
                           context=ctx)
        size = self.batch or batch_size(len(tasks), self.workers)
        pending = [list(range(i, min(i + size, len(tasks)))) for i in range(0, len(tasks), size)][::-1]
        free = deque(range(len(starts)))
        running: dict[Any, tuple[list[int], int, int]] = {}  # future -> (task indices, slot, tag)
        tags = iter(range(1 << 62))
        t0 = time.monotonic()
        finished = started = False

        def send(indices: list[int]) -> None:
            slot, tag = free.popleft(), next(tags) % (1 << _TAG_BITS)
            starts[slot] = -1
            fut = pool.schedule(_run_batch, args=(fn, [tasks[i] for i in indices], slot, tag, t0, self.memory_mb),
                                timeout=len(indices) * timeout_s + _BACKSTOP_S)
            running[fut] = (indices, slot, tag)

        def position(slot: int, tag: int) -> tuple[int, float] | None:
            """(position, start time) of the task its batch runs now, or None before the first one starts."""
            v = starts[slot]
            if v < 0 or v >> (_MS_BITS + _POS_BITS) != tag:
                return None
            return v & ((1 << _POS_BITS) - 1), t0 + ((v >> _POS_BITS) & ((1 << _MS_BITS) - 1)) / 1000

        def over_budget(indices: list[int], pos: int) -> Iterator[tuple[int, Any]]:
            yield indices[pos], TaskFailure(timeout_message(timeout_s))
            rest = indices[:pos] + indices[pos + 1:]
            if rest:
                pending.append(rest)

        try:
            while pending or running:
                while pending and len(running) < in_flight:
                    send(pending.pop())
                done, _ = wait(running, timeout=_POLL_S, return_when=FIRST_COMPLETED)
                raise_if_stopped()
                for fut in done:
                    indices, slot, tag = running.pop(fut)
                    free.append(slot)
                    exc = fut.exception()
                    if not started and isinstance(exc, BrokenProcessPool):
                        raise ExecutorError(NO_WORKER_STARTED)
                    started = True
                    if exc is None:
                        yield from zip(indices, fut.result())
                    elif isinstance(exc, FutureTimeout):  # the backstop
                        yield from over_budget(indices, (position(slot, tag) or (0, 0.0))[0])
                    elif len(indices) > 1:  # its worker died, or the batch could not travel: each task alone
                        pending.extend([i] for i in reversed(indices))
                    else:
                        yield indices[0], _outcome(fut, timeout_s, self.memory_mb)
                now = time.monotonic()
                for fut, (indices, slot, tag) in list(running.items()):
                    at = position(slot, tag)
                    if at is not None and now - at[1] > timeout_s and fut.cancel():  # pebble stops its worker
                        del running[fut]
                        free.append(slot)
                        yield from over_budget(indices, at[0])
            finished = True
        finally:
            if finished:
                pool.close()
            else:  # interrupted, abandoned or broken: stop the workers now, never wait for the remaining tasks
                for fut in running:
                    fut.cancel()
                pool.stop()
            pool.join()


def _run_batch(fn: Callable[[Any], Any], tasks: list[Any], slot: int, tag: int, t0: float,
               memory_mb: int | None) -> list[Any]:
    """Runs in a worker: a batch (`ingestaudit.executors.base.run_in_order`), each task's position and start time
    written to the batch's slot first (the clock is the system-wide monotonic one, as in the pool's process)."""

    def mark(pos: int) -> None:
        if _STARTS is not None:
            ms = min(int((time.monotonic() - t0) * 1000), (1 << _MS_BITS) - 1)
            _STARTS[slot] = (tag << (_MS_BITS + _POS_BITS)) | (ms << _POS_BITS) | pos

    return run_in_order(fn, tasks, memory_mb, mark)


def _context() -> Any:
    """The multiprocessing context of the pool: a fork server that has imported the runner (see the module doc)."""
    import multiprocessing

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["ingestaudit.runner"])
    _start_fork_server()
    return ctx


def _start_fork_server() -> None:
    """Start the fork server (once per process) with this process's ``ingestaudit`` first on its path and without
    the current folder: it is started as ``python -c``, which puts the current folder first, and Python 3.11's fork
    server does not take the parent's ``sys.path``, so a folder named ``ingestaudit`` where the command was run (the
    folder holding a clone) shadowed the installed package and every worker failed to start."""
    from multiprocessing import forkserver

    import ingestaudit

    root = str(Path(ingestaudit.__file__).resolve().parent.parent)
    saved = {k: os.environ.get(k) for k in ("PYTHONSAFEPATH", "PYTHONPATH")}
    os.environ["PYTHONSAFEPATH"] = "1"  # no current folder on the server's path (Python >= 3.11)
    os.environ["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [saved["PYTHONPATH"]])])
    try:
        forkserver.ensure_running()
    except OSError as exc:  # its Unix socket lives in the temporary folder, whose path may be too long for one
        import tempfile

        raise ExecutorError(f"the process pool cannot start its fork server ({exc}): its socket is made in the "
                            f"temporary folder {tempfile.gettempdir()} (TMPDIR), and a Unix socket's path has at "
                            "most 107 bytes; set TMPDIR to a shorter folder, or use --executor serial") from None
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _init_worker(initializer: Callable[[], None] | None, workers: int, environ: dict[str, str],
                 memory_mb: int | None = None, starts: Any = None) -> None:
    """Runs first in each worker: this process's environment at pool start (the fork server's is older), the pool
    size (the workers share the cores for torch), the one-line warning format, the memory limit, the shared start slots, then the initializer."""
    global _STARTS
    _STARTS = starts
    os.environ.clear()
    os.environ.update(environ)
    os.environ["INGESTAUDIT_POOL_WORKERS"] = str(workers)
    install_warning_lines()  # the package's warnings as one `warning:` line, as the command line prints them
    apply_memory_limit(memory_mb)
    if initializer is not None:
        initializer()


def _outcome(fut: Any, timeout_s: float, memory_mb: int | None = None) -> Any:
    from pebble import ProcessExpired

    try:
        return fut.result()
    except FutureTimeout:
        return TaskFailure(timeout_message(timeout_s))
    except ProcessExpired as exc:
        return TaskFailure(died_message(exc.exitcode, memory_mb))
    except Exception as exc:
        return TaskFailure(raised_message(exc, memory_mb))
