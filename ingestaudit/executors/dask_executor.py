"""``dask``: tasks run on a ``dask.distributed`` cluster.

With a scheduler address the executor uses that cluster (one that does not complete the whole handshake, the
connection and the client's identity exchange, within `CONNECT_TIMEOUT_S` is an `ExecutorError`: `_connect`);
without, it starts a ``LocalCluster`` bound to 127.0.0.1 with one single-threaded worker process per worker and no
dashboard, and closes it on exit.

Tasks go to the cluster in batches (`batch_size`: up to `MAX_BATCH` consecutive tasks, fewer when there are few
tasks; one at a time on a user's cluster), so that a small task does not pay Dask's per-task cost (about 10 ms of
client, scheduler and worker work here, against a few ms for a precomputed document). Up to `QUEUE_DEPTH` batches
per live worker thread are in flight (the thread count is asked of the scheduler at most every `_THREADS_S`, so a
worker that died and is restarting does not count): while one runs, the next already waits on the worker. The
budget stays per task and counts from the task's own start: the worker reports the start of each batch on the
`START_TOPIC` event topic, and a watchdog thread of the batch (`_call`) reports a task that runs past its budget on
`OVER_TOPIC` (a report per task start, as before, cost more scheduler and client work than the tasks themselves:
55 s against 40 s of streaming for 10,000 precomputed documents). A task over its budget is that task's failure
only: the batch is stopped as below and its other tasks (those done before it too: their results were in the
batch's lost answer) are submitted again. A batch that no report stops (a task holding the interpreter in C code
starves the watchdog) ends at a backstop: its task count x the budget plus `_BACKSTOP_S` after its start, or
`QUEUE_DEPTH` times that plus `_START_S` after submission when no start was reported (such a batch is submitted
once more before it is failed: it may have waited behind the task holding its worker). A single task is then the
timeout failure; a larger batch is split into single tasks, submitted again. A batch whose worker died is split the
same way. A single task whose worker died runs once more alone, with nothing else on the cluster: it may have
waited behind the task that ended the worker, or have finished just before the worker died, its result unsent. If
its worker dies again, alone, it is the cause: the ``worker process died`` failure, as on the other executors. A
finished batch whose result its worker does not send within `_GATHER_S` (a later task holds that worker) is asked
for again later: once the worker is ended, Dask computes the lost result again. Tasks are deterministic, so running
one again changes no result.

A task over its budget is cancelled. What happens to the thread still running it depends on whose cluster it is:

* The local cluster (ours): the worker process is ended, after it has killed its Tesseract process groups and
  removed their temporary folders (`_exit_worker`), and its nanny starts a fresh one. A worker that does not answer
  within `CLOSE_TIMEOUT_S` (its task holds the interpreter lock in C code, so its event loop cannot run) is ended by
  SIGTERM, then SIGKILL (`_end_pids`); a task that waited in its queue without starting is submitted again. Each
  of its workers also limits its address space (``memory_mb``), ignores SIGINT (this process stops the cluster on
  Ctrl-C), and kills its Tesseract groups when it closes or gets SIGTERM (`WorkerSetup`). A task whose worker dies
  is not retried (``allowed-failures`` 0) and becomes a failure.
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
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ingestaudit.executors.base import (MAX_BATCH, QUEUE_DEPTH, Executor, ExecutorError, TaskFailure,
                                        apply_memory_limit, batch_size, died_message, raise_if_stopped,
                                        raised_message, run_in_order, timeout_message)
from ingestaudit.warning_lines import install as install_warning_lines

__all__ = ["MAX_BATCH", "OVER_TOPIC", "QUEUE_DEPTH", "START_TOPIC", "DaskExecutor", "batch_size"]

CONNECT_TIMEOUT_S = 5
START_TOPIC = "ingestaudit-batch-start"  # the event ``[batch key]`` a worker logs as it starts a batch
OVER_TOPIC = "ingestaudit-task-over-budget"  # the event ``[batch key, position]`` of a task past its budget
_BACKSTOP_S = 1.0  # added to a started batch's backstop: the watchdog's report comes first
_GATHER_S = 2.0  # a finished batch's result not fetched by then is asked for again on a later pass
_START_S = 30.0  # added to the backstop of a batch that reported no start: a restarted worker imports first
_POLL_S = 0.2
_THREADS_S = 0.5  # the cluster's live thread count is asked of the scheduler at most this often
CLOSE_TIMEOUT_S = 2  # a local worker that does not stop within this is killed
_INITIALISED = False  # per worker process

try:
    from distributed.diagnostics.plugin import WorkerPlugin as _WorkerPlugin
except ImportError:  # dask is an optional extra: the class is only registered when it is installed
    _WorkerPlugin = object  # type: ignore[assignment,misc]


def _call(fn: Callable[[Any], Any], initializer: Callable[[], None] | None, workers: int, tasks: list[Any],
          key: str, memory_mb: int | None, timeout_s: float) -> list[Any]:
    """Runs on a worker: the executor's initializer once per worker process, then the batch's start report
    (`START_TOPIC`) and each task in order, while a watchdog thread reports a task past ``timeout_s`` seconds
    (`OVER_TOPIC`, once per task); a task that raises is its `TaskFailure`, the others still run."""
    global _INITIALISED
    if not _INITIALISED:
        os.environ["INGESTAUDIT_POOL_WORKERS"] = str(workers)
        install_warning_lines()  # the package's warnings as one `warning:` line, as the command line prints them
        if initializer is not None:
            initializer()
        _INITIALISED = True
    try:
        from distributed import get_worker

        log = get_worker().log_event
    except Exception:  # no reports: the client stops the batch at its backstop
        log = None
    current = [(0, time.monotonic())]  # (position, start) of the running task, replaced in one assignment
    done = threading.Event()
    if log is not None:
        log(START_TOPIC, [key])
        threading.Thread(target=_watch, args=(log, key, current, done, timeout_s), daemon=True).start()

    def mark(pos: int) -> None:
        current[0] = (pos, time.monotonic())

    try:
        return run_in_order(fn, tasks, memory_mb, mark)
    finally:
        done.set()


def _watch(log: Callable[[str, Any], None], key: str, current: list[tuple[int, float]], done: threading.Event,
           timeout_s: float) -> None:
    """A batch's watchdog: sleeps until the running task's budget ends, and reports it once if it still runs (then
    looks once a second, as a cancelled task on a user's cluster may keep its thread for long)."""
    reported = -1
    while True:
        pos, at = current[0]
        if done.wait(max(0.05, at + timeout_s - time.monotonic() if pos != reported else 1.0)):
            return
        if current[0] == (pos, at) and pos != reported and time.monotonic() - at >= timeout_s:
            log(OVER_TOPIC, [key, pos])
            reported = pos


@dataclass
class _Batch:
    indices: list[int]  # task indices, in order
    alone: bool = False  # run with nothing else in flight (a single task whose worker died)
    unstarted: bool = False  # submitted again once already: its backstop came without any start reported


def _end_children() -> None:
    """Kill every child group (Tesseract runs) of this worker process and remove their temporary folders."""
    from ingestaudit.children import end_all

    end_all()


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
    from ingestaudit.children import end_thread_children

    threads = [tid for tid, k in dict(dask_worker.active_threads).items() if k == key]
    return sum(end_thread_children(tid) for tid in threads)


def _still_running(keys: list[str], dask_worker: Any = None) -> list[str]:
    """Runs on a shared worker: which of ``keys`` (cancelled tasks) a thread still runs."""
    busy = set(dict(dask_worker.active_threads).values())
    return [k for k in keys if k in busy]


def _run_briefly(client: Any, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[bool, Any]:
    """``client.run(fn, *args, **kwargs)`` given up after `CLOSE_TIMEOUT_S`: ``(answered, value)``. A worker whose
    task holds the interpreter lock in C code (a catastrophic regular expression) never answers, and ``run`` has no
    timeout of its own, even with ``wait=False``; the call is left in a daemon thread."""
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            box["value"] = client.run(fn, *args, **kwargs)
        except Exception as exc:  # a worker gone, a closed connection: answered, with nothing
            box["value"] = exc

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(CLOSE_TIMEOUT_S)
    return "value" in box, box.get("value")


def _connect(address: str, timeout_s: float) -> Any:
    """A ``distributed.Client`` of the scheduler at ``address``, the whole handshake bounded by ``timeout_s``.

    ``Client(address, timeout=...)`` bounds the connection, but not everything after it: a listener that accepts and
    never answers, or an HTTP server, left the client waiting for ever (issue 30). The client is built in a daemon
    thread; when it is not ready within ``timeout_s`` it is closed (which ends its wait, at most `CLOSE_TIMEOUT_S`
    more) and `TimeoutError` is raised.

    Raises:
        TimeoutError: no complete handshake within ``timeout_s`` seconds.
        Exception: what ``Client`` raised (a refused connection...).
    """
    from distributed import Client

    box: dict[str, Any] = {}

    class _Tracked(Client):  # holds on to the client as it starts, so that a hung handshake can be closed
        def start(self, **kwargs: Any) -> Any:
            box["client"] = self
            return super().start(**kwargs)

    def connect() -> None:
        try:
            box["ready"] = _Tracked(address, timeout=f"{timeout_s}s")
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=connect, name="ingestaudit-dask-connect", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if "ready" in box:
        return box["ready"]
    if "error" in box:
        raise box["error"]
    if "client" in box:  # closing it ends the handshake's wait; a close that hangs too is left in its thread
        closer = threading.Thread(target=_close_quietly, args=(box["client"],), daemon=True)
        closer.start()
        closer.join(CLOSE_TIMEOUT_S)
    raise TimeoutError(f"no complete handshake within {timeout_s:g} s")


def _close_quietly(client: Any) -> None:
    try:
        client.close(timeout=CLOSE_TIMEOUT_S)
    except Exception:  # best effort: the connection is given up either way
        pass


def _worker_pid(dask_scheduler: Any, address: str) -> int | None:
    ws = dask_scheduler.workers.get(address)
    return getattr(ws, "pid", None) if ws is not None else None


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
    from distributed.deploy.spec import SpecCluster

    try:
        cluster.close(timeout=CLOSE_TIMEOUT_S)
    except BaseException:
        pass
    _end_pids(pids + _worker_pids(cluster))
    SpecCluster._instances.discard(cluster)


def _end_pids(pids: list[int]) -> None:
    """SIGTERM to each live process of ``pids`` (a local worker's handler kills its Tesseract groups first) and, to
    any still alive a second later (one whose task holds the interpreter lock never runs its handler), SIGKILL."""
    import signal

    pids = [p for p in pids if _alive(p)]
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


class DaskExecutor(Executor):
    name = "dask"

    def __init__(self, workers: int = 1, initializer: Callable[[], None] | None = None, *,
                 scheduler: str | None = None, memory_mb: int | None = None, batch: int | None = None) -> None:
        """``batch``: tasks per batch on the local cluster (default `batch_size`); a user's cluster gets 1."""
        super().__init__(workers, initializer, memory_mb=memory_mb if scheduler is None else None)
        self.scheduler = scheduler
        self.batch = batch
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
                self._client = _connect(self.scheduler, CONNECT_TIMEOUT_S)
            except Exception as exc:
                what = (f"the Dask scheduler did not answer within {CONNECT_TIMEOUT_S} s" if isinstance(exc, OSError)
                        else "the Dask handshake failed (is it a Dask scheduler?)")  # an HTTP server answers so
                raise ExecutorError(f"--scheduler {self.scheduler}: {what} ({type(exc).__name__}: {exc})") from None
            return
        from distributed.deploy.spec import SpecCluster

        os.environ["INGESTAUDIT_POOL_WORKERS"] = str(self.workers)
        before = set(SpecCluster._instances)
        try:
            # no work stealing: this executor queues each worker's batches itself, and the scheduler moving them
            # between workers cost 5 s of 44 s of streaming 10,000 precomputed documents
            with dask.config.set({"distributed.scheduler.allowed-failures": 0,
                                  "distributed.scheduler.work-stealing": False}):
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
            # an interrupted run: the OCR children go first, then the workers have nothing left to wait for
            _run_briefly(client, _end_children_now, wait=False)
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
        threads = {"n": sum(client.nthreads().values()), "at": time.monotonic()}
        size = 1 if self.shared else (self.batch or batch_size(len(tasks), threads["n"]))
        pending = [_Batch(list(range(i, min(i + size, len(tasks))))) for i in range(0, len(tasks), size)][::-1]
        running: dict[Any, tuple[_Batch, float]] = {}  # future -> (batch, submission time)
        alone: list[_Batch] = []  # single tasks to run once more, each with nothing else in flight
        begun: dict[str, float] = {}  # batch key -> when its start was reported
        over: dict[str, int] = {}  # batch key -> position of its task reported over its budget
        serial = iter(range(1 << 62))

        def on_start(event: Any) -> None:  # on the client's event-loop thread, as `on_over`
            begun.setdefault(event[1][0], time.monotonic())

        def on_over(event: Any) -> None:
            key, pos = event[1]
            over.setdefault(key, int(pos))

        def deadline(fut: Any, batch: _Batch, submitted: float) -> float:
            if fut.key in over:
                return 0.0
            span = len(batch.indices) * timeout_s  # the backstop
            return (begun[fut.key] + span + _BACKSTOP_S if fut.key in begun
                    else submitted + QUEUE_DEPTH * span + _START_S)

        def send(batch: _Batch) -> None:
            key = f"ingestaudit-{run_id}-{next(serial)}"
            fut = client.submit(_call, fn, self.initializer, self.workers, [tasks[i] for i in batch.indices], key,
                                self.memory_mb, timeout_s, pure=False, key=key)
            running[fut] = (batch, time.monotonic())

        def submit() -> None:
            if any(b.alone for b, _ in running.values()):
                return  # a task running alone: nothing joins it
            if alone:
                if not running:  # the cluster has drained: the next lone task
                    send(alone.pop())
                return
            now = time.monotonic()
            if pending and now - threads["at"] >= _THREADS_S:
                threads["n"], threads["at"] = sum(client.nthreads().values()), now  # live threads now
            slots = max(1, QUEUE_DEPTH * (threads["n"] - self._busy_zombies())) if pending else 0
            while pending and len(running) < slots:  # at least one batch, even when no thread is free
                send(pending.pop())

        client.subscribe_topic(START_TOPIC, on_start)
        client.subscribe_topic(OVER_TOPIC, on_over)
        try:
            submit()
            while running or alone or pending:
                if not running:
                    submit()
                    continue
                nearest = min(deadline(f, b, t) for f, (b, t) in running.items())
                try:
                    wait(list(running), timeout=max(0.01, min(_POLL_S, nearest - time.monotonic())),
                         return_when="FIRST_COMPLETED")
                except TimeoutError:
                    pass
                raise_if_stopped()
                for fut in [f for f in running if f.done()]:
                    batch, _ = running.pop(fut)
                    begun.pop(fut.key, None)
                    over.pop(fut.key, None)
                    values = None
                    if fut.status == "finished":
                        try:
                            values = fut.result(timeout=_GATHER_S)
                        except TimeoutError:  # its worker does not answer: a task of its next batch holds the
                            # interpreter lock. Once that worker is ended (its backstop), Dask computes the lost
                            # result again: a fresh start, and a fresh backstop from now
                            running[fut] = (batch, time.monotonic())
                            continue
                    if values is not None:
                        yield from zip(batch.indices, values)
                    elif len(batch.indices) > 1:  # its worker died: each task again on its own
                        pending.extend(_Batch([i]) for i in reversed(batch.indices))
                    elif _died(fut) and not batch.alone:
                        alone.append(_Batch(batch.indices, alone=True))  # maybe taken down by a neighbour
                    else:
                        yield batch.indices[0], _outcome(fut, self.memory_mb)
                now = time.monotonic()
                stopped: set[str] = set()  # workers ended in this pass
                for fut in [f for f, (b, t) in running.items() if deadline(f, b, t) <= now and not f.done()]:
                    addr = self._address(fut)
                    if fut.done():  # it ended meanwhile (its worker was just ended): the next pass takes it
                        continue
                    batch, _ = running.pop(fut)
                    started = begun.pop(fut.key, None) is not None
                    pos = over.pop(fut.key, None)
                    if pos is None and not started and (addr is None or addr in stopped or not batch.unstarted):
                        # no start reported: it may have waited behind the task holding its worker's interpreter
                        # lock (which also holds back the start reports and results). The worker is ended, once,
                        # and the batch submitted once more; a second time it is the cause
                        if addr is not None and addr not in stopped:
                            self._stop(fut, addr)
                            stopped.add(addr)
                        else:
                            fut.cancel(force=True)
                        pending.append(_Batch(batch.indices, unstarted=True))
                        continue
                    self._stop(fut, addr)
                    if addr is not None:
                        stopped.add(addr)
                    if pos is None and len(batch.indices) > 1:  # the backstop: which task is unknown
                        pending.extend(_Batch([i]) for i in reversed(batch.indices))
                        continue
                    pos = pos or 0
                    yield batch.indices[pos], TaskFailure(timeout_message(timeout_s))
                    rest = batch.indices[:pos] + batch.indices[pos + 1:]
                    if rest:
                        pending.append(_Batch(rest))
                submit()
        finally:
            try:
                client.unsubscribe_topic(START_TOPIC)
                client.unsubscribe_topic(OVER_TOPIC)
            except Exception:
                pass
            if running:  # interrupted or abandoned: nothing more runs for this map
                client.cancel(list(running), force=True)

    def _address(self, fut: Any) -> str | None:
        """The address of the worker processing (or holding in its queue) a future's task, asked of the scheduler."""
        try:
            return self._client.run_on_scheduler(_processing_on, key=fut.key)
        except Exception:
            return None

    def _stop(self, fut: Any, addr: str | None) -> None:
        """Cancel a task over its budget, processed on the worker at ``addr``; on the local cluster, restart that
        worker; on a user's cluster, kill the task's Tesseract groups and count its thread as busy until it
        returns."""
        client = self._client
        if addr is not None and self.shared:
            _run_briefly(client, _end_task_children, fut.key, workers=[addr])
        fut.cancel(force=True)
        if addr is None:
            return
        if self.shared:
            self._zombies[fut.key] = addr
            return
        try:
            pid = client.run_on_scheduler(_worker_pid, address=addr)
        except Exception:
            pid = None
        # ends the worker process from its event loop; its nanny starts a fresh one. A worker that cannot answer
        # (its task holds the interpreter lock) is ended by signal: its Tesseract groups, if any, are left to end
        answered, _ = _run_briefly(client, _exit_worker, workers=[addr], wait=False)
        if not answered and pid:
            _end_pids([int(pid)])

    def _busy_zombies(self) -> int:
        """How many cancelled tasks still hold a thread of a user's cluster (asked of their workers)."""
        if not self._zombies:
            return 0
        by_worker: dict[str, list[str]] = {}
        for key, addr in self._zombies.items():
            by_worker.setdefault(addr, []).append(key)
        still: dict[str, str] = {}
        for addr, keys in by_worker.items():
            answered, answer = _run_briefly(self._client, _still_running, keys, workers=[addr])
            if not answered:  # its task holds the interpreter lock: the thread is still held
                still.update({k: addr for k in keys})
                continue
            if isinstance(answer, Exception):  # the worker is gone: its threads are gone too
                continue
            still.update({k: addr for k in answer.get(addr, [])})
        self._zombies = still
        return len(still)


def _died(fut: Any) -> bool:
    """The task's worker died under it (or it was cancelled with it), as opposed to a result or a raised error."""
    from distributed import KilledWorker

    return fut.status == "cancelled" or (fut.status == "error" and isinstance(fut.exception(), KilledWorker))


def _outcome(fut: Any, memory_mb: int | None = None) -> Any:
    """The failure of a single-task batch that did not finish."""
    from distributed import KilledWorker

    if fut.status == "cancelled":
        return TaskFailure(died_message(None, memory_mb))
    exc = fut.exception()
    if isinstance(exc, KilledWorker):
        return TaskFailure(died_message(None, memory_mb))
    return TaskFailure(raised_message(exc, memory_mb))
