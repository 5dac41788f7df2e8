"""Executors: one interface that maps per-item tasks to results under a per-item time budget (issue 14).

``serial`` runs tasks in this process (the budget is a ``SIGALRM`` timer in the main thread), ``process`` in a pebble
process pool (the default) and ``dask`` on a ``dask.distributed`` cluster (``--scheduler ADDR``, or a local cluster
bound to 127.0.0.1). Every executor yields ``(index, result)`` as tasks finish, and a task that exceeds its budget
or kills its worker yields ``(index, TaskFailure(message))`` with the same message on every executor, so reports do
not depend on the executor.
"""

from __future__ import annotations

from collections.abc import Callable

from ingestaudit.executors.base import (EXECUTORS, Executor, ExecutorError, TaskFailure, TaskTimeout,
                                        default_worker_memory_mb, died_message, timeout_message)

__all__ = ["EXECUTORS", "Executor", "ExecutorError", "TaskFailure", "TaskTimeout", "default_worker_memory_mb",
           "died_message", "make_executor", "timeout_message"]


def make_executor(name: str, workers: int, n_tasks: int, *, scheduler: str | None = None,
                  initializer: Callable[[], None] | None = None, memory_mb: int | None = None) -> Executor:
    """The executor ``name`` with ``workers`` workers, capped by the number of tasks (at least one).

    Args:
        initializer: run once in each worker process before its first task (not by ``serial``).
        memory_mb: address-space limit of each worker process in MB (`ingestaudit.executors.base.
            apply_memory_limit`): None takes `default_worker_memory_mb` of the capped worker count, 0 sets none.
            Applied by ``process`` and by ``dask`` on the local cluster it starts; ``serial`` runs in this process
            and a user's cluster is shared, so neither is limited.

    Raises:
        ExecutorError: unknown executor, or ``scheduler`` given to an executor other than ``dask``.
    """
    workers = max(1, min(workers, n_tasks))
    if memory_mb is None:
        memory_mb = default_worker_memory_mb(workers)
    if scheduler is not None and name != "dask":
        raise ExecutorError(f"--scheduler {scheduler}: only the dask executor uses a scheduler (--executor dask)")
    if name == "serial":
        from ingestaudit.executors.serial import SerialExecutor

        return SerialExecutor(1, initializer)
    if name == "process":
        from ingestaudit.executors.process import ProcessExecutor

        return ProcessExecutor(workers, initializer, memory_mb=memory_mb or None)
    if name == "dask":
        from ingestaudit.executors.dask_executor import DaskExecutor

        return DaskExecutor(workers, initializer, scheduler=scheduler,
                            memory_mb=(memory_mb or None) if scheduler is None else None)
    raise ExecutorError(f"unknown executor {name!r}; known: {', '.join(EXECUTORS)}")
