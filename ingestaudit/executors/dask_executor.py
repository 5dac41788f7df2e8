"""``dask``: tasks run on a ``dask.distributed`` cluster.

With a scheduler address the executor uses that cluster (one that does not answer within `CONNECT_TIMEOUT_S` is an
`ExecutorError`); without, it starts a ``LocalCluster`` bound to 127.0.0.1 with one single-threaded worker process
per worker and no dashboard, and closes it on exit.

At most as many tasks are in flight as the cluster has worker threads, so a task starts when it is submitted and its
budget is counted from then. A task over its budget is cancelled and the worker running it restarted (a thread cannot
be stopped); a task whose worker dies is not retried on a local cluster (``allowed-failures`` 0) and becomes a
failure.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ingestaudit.executors.base import (Executor, ExecutorError, TaskFailure, died_message, raised_message,
                                        timeout_message)

CONNECT_TIMEOUT_S = 5
_POLL_S = 0.2
_INITIALISED = False  # per worker process


def _call(fn: Callable[[Any], Any], initializer: Callable[[], None] | None, workers: int, task: Any) -> Any:
    """Runs on a worker: the executor's initializer once per worker process, then the task."""
    global _INITIALISED
    if not _INITIALISED:
        os.environ["INGESTAUDIT_POOL_WORKERS"] = str(workers)
        if initializer is not None:
            initializer()
        _INITIALISED = True
    return fn(task)


async def _exit_worker() -> None:
    """Runs in a worker's event loop (a coroutine, so the client need not wait for an answer that never comes)."""
    os._exit(1)


def _processing_on(dask_scheduler: Any, key: str) -> str | None:
    ts = dask_scheduler.tasks.get(key)
    return ts.processing_on.address if ts is not None and ts.processing_on is not None else None


class DaskExecutor(Executor):
    name = "dask"

    def __init__(self, workers: int = 1, initializer: Callable[[], None] | None = None, *,
                 scheduler: str | None = None) -> None:
        super().__init__(workers, initializer)
        self.scheduler = scheduler
        self._client: Any = None
        self._cluster: Any = None

    def start(self) -> None:
        """Connect to the scheduler, or start the local cluster.

        Raises:
            ExecutorError: the scheduler does not answer, or the local cluster does not start.
        """
        if self._client is not None:
            return
        import dask
        from distributed import Client, LocalCluster

        if self.scheduler is not None:
            try:
                self._client = Client(self.scheduler, timeout=f"{CONNECT_TIMEOUT_S}s")
            except Exception as exc:
                raise ExecutorError(f"--scheduler {self.scheduler}: the Dask scheduler did not answer within "
                                    f"{CONNECT_TIMEOUT_S} s ({type(exc).__name__}: {exc})") from None
            return
        os.environ["INGESTAUDIT_POOL_WORKERS"] = str(self.workers)
        try:
            with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
                self._cluster = LocalCluster(host="127.0.0.1", dashboard_address=None, n_workers=self.workers,
                                             threads_per_worker=1, processes=True, silence_logs=logging.ERROR)
            self._client = Client(self._cluster)
        except Exception as exc:
            self.close()
            raise ExecutorError(f"the local Dask cluster did not start ({type(exc).__name__}: {exc})") from None

    def close(self) -> None:
        client, cluster, self._client, self._cluster = self._client, self._cluster, None, None
        for thing in (client, cluster):
            if thing is not None:
                try:
                    thing.close()
                except Exception:  # closing is best effort: the run's results are already in hand
                    pass

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any], timeout_s: float) -> Iterator[tuple[int, Any]]:
        from distributed import wait

        self.start()
        client = self._client
        slots = max(1, sum(client.nthreads().values()))
        run_id = uuid.uuid4().hex
        pending = list(range(len(tasks)))[::-1]
        running: dict[Any, tuple[int, float]] = {}  # future -> (index, deadline)

        def submit() -> None:
            while pending and len(running) < slots:
                i = pending.pop()
                fut = client.submit(_call, fn, self.initializer, self.workers, tasks[i], pure=False,
                                    key=f"ingestaudit-{run_id}-{i}")
                running[fut] = (i, time.monotonic() + timeout_s)

        try:
            submit()
            while running:
                nearest = min(d for _, d in running.values())
                try:
                    wait(list(running), timeout=max(0.01, min(_POLL_S, nearest - time.monotonic())),
                         return_when="FIRST_COMPLETED")
                except TimeoutError:
                    pass
                for fut in [f for f in running if f.done()]:
                    i, _ = running.pop(fut)
                    yield i, _outcome(fut)
                now = time.monotonic()
                for fut in [f for f, (_, d) in running.items() if d <= now and not f.done()]:
                    i, _ = running.pop(fut)
                    self._stop(fut)
                    yield i, TaskFailure(timeout_message(timeout_s))
                submit()
        finally:
            if running:  # interrupted or abandoned: nothing more runs for this map
                client.cancel(list(running), force=True)

    def _stop(self, fut: Any) -> None:
        """Cancel a task over its budget and restart the worker still running it."""
        client = self._client
        try:
            addr = client.run_on_scheduler(_processing_on, key=fut.key)
        except Exception:
            addr = None
        fut.cancel(force=True)
        if addr is not None:
            try:  # ends the worker process from its event loop; its nanny starts a fresh one
                client.run(_exit_worker, workers=[addr], wait=False)
            except Exception:  # best effort: without a nanny the thread finishes the task and is freed
                pass


def _outcome(fut: Any) -> Any:
    from distributed import KilledWorker

    if fut.status == "finished":
        try:
            return fut.result()
        except Exception as exc:
            return TaskFailure(raised_message(exc))
    if fut.status == "cancelled":
        return TaskFailure(died_message())
    exc = fut.exception()
    if isinstance(exc, KilledWorker):
        return TaskFailure(died_message())
    return TaskFailure(raised_message(exc))
