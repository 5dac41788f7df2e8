"""``dask``: tasks run on a ``dask.distributed`` cluster.

With a scheduler address the executor uses that cluster (one that does not answer within `CONNECT_TIMEOUT_S` is an
`ExecutorError`); without, it starts a ``LocalCluster`` bound to 127.0.0.1 with one single-threaded worker process
per worker and no dashboard, and closes it on exit.

At most as many tasks are in flight as the cluster has live worker threads at the moment of submission (asked of the
scheduler each time, so a worker that died and is restarting does not count): a task starts when it is submitted,
its budget is counted from then, and a task is never queued on a worker behind another one, where a neighbour that
kills the worker would take it down too.

A task over its budget is cancelled. What happens to the thread still running it depends on whose cluster it is:

* The local cluster (ours): the worker process is ended, after it has killed its Tesseract process groups and
  removed their temporary folders (`_exit_worker`), and its nanny starts a fresh one. Each of its workers also
  limits its address space (``memory_mb``), ignores SIGINT (this process stops the cluster on Ctrl-C), and kills
  its Tesseract groups when it closes or gets SIGTERM (`WorkerSetup`). A task whose worker dies is not retried
  (``allowed-failures`` 0) and becomes a failure.
* A user's cluster (``--scheduler``) is shared, so its workers are never ended, limited or given signal handlers:
  the task's own Tesseract groups are killed (which ends an OCR task at once), and any other task keeps its thread
  until it returns by itself. Until then that thread is not counted as free; while every thread of the cluster is
  held so, one task is submitted anyway (the run never stalls) and its budget runs while it waits. A task that
  kills its worker is retried as the cluster's ``distributed.scheduler.allowed-failures`` says (default 3) before
  it becomes the same ``worker process died`` failure. The cluster's workers need ingestaudit (and the parsers'
  packages) installed, and must see the corpus at the same paths as this process: tasks carry paths, not bytes.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ingestaudit.executors.base import (Executor, ExecutorError, TaskFailure, apply_memory_limit, died_message,
                                        raise_if_stopped, raised_message, timeout_message)

CONNECT_TIMEOUT_S = 5
_POLL_S = 0.2
CLOSE_TIMEOUT_S = 2  # a local worker that does not stop within this is killed
_INITIALISED = False  # per worker process

try:
    from distributed.diagnostics.plugin import WorkerPlugin as _WorkerPlugin
except ImportError:  # dask is an optional extra: the class is only registered when it is installed
    _WorkerPlugin = object  # type: ignore[assignment,misc]


def _call(fn: Callable[[Any], Any], initializer: Callable[[], None] | None, workers: int, task: Any) -> Any:
    """Runs on a worker: the executor's initializer once per worker process, then the task."""
    global _INITIALISED
    if not _INITIALISED:
        os.environ["INGESTAUDIT_POOL_WORKERS"] = str(workers)
        if initializer is not None:
            initializer()
        _INITIALISED = True
    return fn(task)


def _end_children() -> None:
    """Kill every Tesseract group of this worker process and remove their temporary folders."""
    from ingestaudit.parsers.tesseract_parser import _end_running

    _end_running()


async def _end_children_now() -> None:
    """`_end_children` from a worker's event loop (a coroutine: the client does not wait for it)."""
    _end_children()


async def _exit_worker() -> None:
    """Runs in a local worker's event loop (a coroutine, so the client need not wait for an answer that never
    comes): its Tesseract children first (``os._exit`` skips every ``finally``), then the process."""
    _end_children()
    os._exit(1)


def _end_task_children(key: str, dask_worker: Any = None) -> int:
    """Runs on a shared worker: kill the Tesseract groups of the thread running task ``key``, if any."""
    from ingestaudit.parsers.tesseract_parser import end_thread_children

    threads = [tid for tid, k in dict(dask_worker.active_threads).items() if k == key]
    return sum(end_thread_children(tid) for tid in threads)


def _still_running(keys: list[str], dask_worker: Any = None) -> list[str]:
    """Runs on a shared worker: which of ``keys`` (cancelled tasks) a thread still runs."""
    busy = set(dict(dask_worker.active_threads).values())
    return [k for k in keys if k in busy]


def _processing_on(dask_scheduler: Any, key: str) -> str | None:
    ts = dask_scheduler.tasks.get(key)
    return ts.processing_on.address if ts is not None and ts.processing_on is not None else None


class WorkerSetup(_WorkerPlugin):  # type: ignore[misc,valid-type]
    """Set-up of the local cluster's workers: the memory limit, SIGINT ignored and SIGTERM first killing the
    Tesseract groups (both in the worker's main thread, where its event loop runs), and the Tesseract groups killed
    when the worker closes."""

    idempotent = True
    name = "ingestaudit-worker-setup"

    def __init__(self, memory_mb: int | None) -> None:
        self.memory_mb = memory_mb

    def setup(self, worker: Any) -> None:
        import atexit
        import signal
        import threading

        apply_memory_limit(self.memory_mb)
        atexit.register(_end_children)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            previous = signal.getsignal(signal.SIGTERM)

            def on_term(signum: int, frame: Any) -> None:
                _end_children()
                if callable(previous):
                    previous(signum, frame)
                else:
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    os.kill(os.getpid(), signal.SIGTERM)

            signal.signal(signal.SIGTERM, on_term)

    def teardown(self, worker: Any) -> None:
        _end_children()


def _worker_pids(cluster: Any) -> list[int]:
    """The process ids of a local cluster's worker processes (each nanny's child)."""
    pids = []
    for nanny in list(getattr(cluster, "workers", {}).values()):
        pid = getattr(getattr(getattr(nanny, "process", None), "process", None), "pid", None)
        if pid:
            pids.append(int(pid))
    return pids


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:  # a zombie has ended (its nanny reaps it)
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True


def _close_local(cluster: Any, pids: list[int]) -> None:
    """Close a local cluster within `CLOSE_TIMEOUT_S`; a worker still alive then (a task thread that does not
    return, a start that was interrupted) gets SIGTERM (its handler kills its Tesseract groups first) and, a second
    later, SIGKILL. The cluster is then taken off distributed's exit-time list, which would otherwise try again for
    10 s and print a traceback about it."""
    import signal

    from distributed.deploy.spec import SpecCluster

    try:
        cluster.close(timeout=CLOSE_TIMEOUT_S)
    except BaseException:
        pass
    pids = [p for p in pids + _worker_pids(cluster) if _alive(p)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + 1.0
        while pids and time.monotonic() < deadline:
            time.sleep(0.05)
            pids = [p for p in pids if _alive(p)]
        if not pids:
            break
    SpecCluster._instances.discard(cluster)


class DaskExecutor(Executor):
    name = "dask"

    def __init__(self, workers: int = 1, initializer: Callable[[], None] | None = None, *,
                 scheduler: str | None = None, memory_mb: int | None = None) -> None:
        super().__init__(workers, initializer, memory_mb=memory_mb if scheduler is None else None)
        self.scheduler = scheduler
        self._client: Any = None
        self._cluster: Any = None
        self._zombies: dict[str, str] = {}  # key -> worker address: cancelled, still running (a user's cluster)

    def start(self) -> None:
        """Connect to the scheduler, or start the local cluster (and set up its workers).

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
        from distributed.deploy.spec import SpecCluster

        os.environ["INGESTAUDIT_POOL_WORKERS"] = str(self.workers)
        before = set(SpecCluster._instances)
        try:
            with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
                # no dashboard; the scheduler's HTTP endpoints (health, metrics) on a free port of 127.0.0.1, not
                # on 8787, which another cluster may hold
                self._cluster = LocalCluster(host="127.0.0.1", dashboard_address=None, n_workers=self.workers,
                                             threads_per_worker=1, processes=True, silence_logs=logging.CRITICAL,
                                             scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
            self._client = Client(self._cluster)
            self._client.register_plugin(WorkerSetup(self.memory_mb))
        except BaseException as exc:  # an interrupt too: a cluster half started is closed, not left to atexit
            self.close()
            for cluster in set(SpecCluster._instances) - before:
                _close_local(cluster, [])
            if not isinstance(exc, Exception):
                raise
            raise ExecutorError(f"the local Dask cluster did not start ({type(exc).__name__}: {exc})") from None

    @property
    def shared(self) -> bool:
        """Whether the cluster is the user's (``--scheduler``): its workers are never ended."""
        return self.scheduler is not None

    def close(self) -> None:
        client, cluster, self._client, self._cluster = self._client, self._cluster, None, None
        pids = _worker_pids(cluster) if cluster is not None else []
        if client is not None and cluster is not None:
            try:  # an interrupted run: the OCR children go first, then the workers have nothing left to wait for
                client.run(_end_children_now, wait=False)
            except Exception:
                pass
        if client is not None:
            try:
                client.close(timeout=CLOSE_TIMEOUT_S)
            except Exception:  # closing is best effort: the run's results are already in hand
                pass
        if cluster is not None:
            _close_local(cluster, pids)

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any], timeout_s: float) -> Iterator[tuple[int, Any]]:
        from distributed import wait

        self.start()
        client = self._client
        run_id = uuid.uuid4().hex
        pending = list(range(len(tasks)))[::-1]
        running: dict[Any, tuple[int, float]] = {}  # future -> (index, deadline)

        def submit() -> None:
            if not pending:
                return
            threads = sum(client.nthreads().values())  # live threads now
            slots = max(1, threads - self._busy_zombies())  # one task waits if none is free
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
                raise_if_stopped()
                for fut in [f for f in running if f.done()]:
                    i, _ = running.pop(fut)
                    yield i, _outcome(fut, self.memory_mb)
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
        """Cancel a task over its budget; on the local cluster, restart the worker still running it; on a user's
        cluster, kill the task's Tesseract groups and count its thread as busy until it returns."""
        client = self._client
        try:
            addr = client.run_on_scheduler(_processing_on, key=fut.key)
        except Exception:
            addr = None
        if addr is not None and self.shared:
            try:
                client.run(_end_task_children, fut.key, workers=[addr])
            except Exception:
                pass
        fut.cancel(force=True)
        if addr is None:
            return
        if self.shared:
            self._zombies[fut.key] = addr
            return
        try:  # ends the worker process from its event loop; its nanny starts a fresh one
            client.run(_exit_worker, workers=[addr], wait=False)
        except Exception:  # best effort: without a nanny the thread finishes the task and is freed
            pass

    def _busy_zombies(self) -> int:
        """How many cancelled tasks still hold a thread of a user's cluster (asked of their workers)."""
        if not self._zombies:
            return 0
        by_worker: dict[str, list[str]] = {}
        for key, addr in self._zombies.items():
            by_worker.setdefault(addr, []).append(key)
        still: dict[str, str] = {}
        for addr, keys in by_worker.items():
            try:
                answer = self._client.run(_still_running, keys, workers=[addr])
            except Exception:  # the worker is gone: its threads are gone too
                continue
            still.update({k: addr for k in answer.get(addr, [])})
        self._zombies = still
        return len(still)


def _outcome(fut: Any, memory_mb: int | None = None) -> Any:
    from distributed import KilledWorker

    if fut.status == "finished":
        try:
            return fut.result()
        except Exception as exc:
            return TaskFailure(raised_message(exc, memory_mb))
    if fut.status == "cancelled":
        return TaskFailure(died_message(None, memory_mb))
    exc = fut.exception()
    if isinstance(exc, KilledWorker):
        return TaskFailure(died_message(None, memory_mb))
    return TaskFailure(raised_message(exc, memory_mb))
