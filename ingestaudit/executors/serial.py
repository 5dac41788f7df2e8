"""``serial``: tasks run one after another in this process; the time budget is a ``SIGALRM`` interval timer.

The budget holds only in the main thread of a POSIX process (elsewhere tasks run without one); a task that kills
the process kills the run, so ``process`` (the default) is the executor for untrusted parsers.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ingestaudit.executors.base import (Executor, TaskFailure, TaskTimeout, raise_if_stopped, raised_message,
                                        timeout_message)


def _alarm(signum: int, frame: object) -> None:
    raise TaskTimeout()


class SerialExecutor(Executor):
    name = "serial"

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any], timeout_s: float) -> Iterator[tuple[int, Any]]:
        timed = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGALRM, _alarm) if timed else None
        try:
            for i, task in enumerate(tasks):
                raise_if_stopped()
                result = self._one(fn, task, timeout_s, timed)
                raise_if_stopped()  # a stop that the task's own code swallowed
                yield i, result
        finally:
            if timed:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)

    @staticmethod
    def _one(fn: Callable[[Any], Any], task: Any, timeout_s: float, timed: bool) -> Any:
        try:
            if timed:
                signal.setitimer(signal.ITIMER_REAL, timeout_s)
            try:
                return fn(task)
            finally:
                if timed:
                    signal.setitimer(signal.ITIMER_REAL, 0)
        except TaskTimeout:
            return TaskFailure(timeout_message(timeout_s))
        except Exception as exc:
            return TaskFailure(raised_message(exc))
