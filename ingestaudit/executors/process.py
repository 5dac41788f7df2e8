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
(`ingestaudit.parsers.tesseract_parser`). At most `WINDOW` x workers tasks are scheduled at a time, so the
results already yielded are not held by the pool.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, wait
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from ingestaudit.executors.base import (Executor, ExecutorError, TaskFailure, apply_memory_limit, died_message,
                                        raise_if_stopped, raised_message, timeout_message)

WINDOW = 4
_POLL_S = 0.2  # how often a waiting map looks for a stop request (`raise_if_stopped`)
"""Tasks scheduled per worker at a time (a task's budget starts when a worker takes it, not when it is queued)."""

NO_WORKER_STARTED = ("the process pool's workers all ended before running any task (a worker that cannot start: a "
                     "script that calls ingestaudit without an `if __name__ == \"__main__\":` guard, as the "
                     "forkserver start method requires, or a failing worker set-up; see the log above)")


class ProcessExecutor(Executor):
    name = "process"

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any], timeout_s: float) -> Iterator[tuple[int, Any]]:
        """See `Executor.map`.

        Raises:
            ExecutorError: every worker ended before any task started (`NO_WORKER_STARTED`).
        """
        from pebble import ProcessPool

        pool = ProcessPool(max_workers=self.workers, initializer=_init_worker,
                           initargs=(self.initializer, self.workers, dict(os.environ), self.memory_mb),
                           context=_context())
        todo = iter(enumerate(tasks))
        futures: dict[Any, int] = {}
        finished = started = False

        def schedule() -> None:
            while len(futures) < WINDOW * self.workers:
                item = next(todo, None)
                if item is None:
                    return
                futures[pool.schedule(fn, args=(item[1],), timeout=timeout_s)] = item[0]

        try:
            schedule()
            while futures:
                done, _ = wait(futures, timeout=_POLL_S, return_when=FIRST_COMPLETED)
                raise_if_stopped()
                for fut in done:
                    i = futures.pop(fut)
                    if not started and isinstance(fut.exception(), BrokenProcessPool):
                        raise ExecutorError(NO_WORKER_STARTED)
                    started = True
                    yield i, _outcome(fut, timeout_s, self.memory_mb)
                schedule()
            finished = True
        finally:
            if finished:
                pool.close()
            else:  # interrupted, abandoned or broken: stop the workers now, never wait for the remaining tasks
                for fut in futures:
                    fut.cancel()
                pool.stop()
            pool.join()


def _context() -> Any:
    """The multiprocessing context of the pool: a fork server that has imported the runner (see the module doc)."""
    import multiprocessing

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["ingestaudit.runner"])
    return ctx


def _init_worker(initializer: Callable[[], None] | None, workers: int, environ: dict[str, str],
                 memory_mb: int | None = None) -> None:
    """Runs first in each worker: this process's environment at pool start (the fork server's is older), the pool
    size (the workers share the cores for torch), the memory limit, then the initializer."""
    os.environ.clear()
    os.environ.update(environ)
    os.environ["INGESTAUDIT_POOL_WORKERS"] = str(workers)
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
