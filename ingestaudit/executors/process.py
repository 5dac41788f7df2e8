"""``process``: a pebble process pool; pebble's per-task timeout kills a hung worker and starts a new one."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures import as_completed
from typing import Any

from ingestaudit.executors.base import Executor, TaskFailure, died_message, raised_message, timeout_message


class ProcessExecutor(Executor):
    name = "process"

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any], timeout_s: float) -> Iterator[tuple[int, Any]]:
        from pebble import ProcessPool

        os.environ["INGESTAUDIT_POOL_WORKERS"] = str(self.workers)  # read by the workers (torch threads per worker)
        pool = ProcessPool(max_workers=self.workers, initializer=self.initializer)
        futures = {pool.schedule(fn, args=(t,), timeout=timeout_s): i for i, t in enumerate(tasks)}
        finished = False
        try:
            for fut in as_completed(futures):
                yield futures[fut], _outcome(fut, timeout_s)
            finished = True
        finally:
            if finished:
                pool.close()
            else:  # interrupted or abandoned: stop the workers now, never wait for the remaining tasks
                for fut in futures:
                    fut.cancel()
                pool.stop()
            pool.join()


def _outcome(fut: Any, timeout_s: float) -> Any:
    from pebble import ProcessExpired

    try:
        return fut.result()
    except FutureTimeout:
        return TaskFailure(timeout_message(timeout_s))
    except ProcessExpired as exc:
        return TaskFailure(died_message(exc.exitcode))
    except Exception as exc:
        return TaskFailure(raised_message(exc))
