"""The executor interface and the failure messages every executor shares."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

EXECUTORS = ("serial", "process", "dask")


class ExecutorError(ValueError):
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


def died_message(exitcode: int | None = None) -> str:
    return "worker process died" + (f" (exit code {exitcode})" if exitcode is not None else "")


def raised_message(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class Executor(ABC):
    """Maps a picklable module-level function over tasks, ``workers`` at a time; a context manager that releases
    its workers (and a cluster it started) on exit."""

    name = ""

    def __init__(self, workers: int = 1, initializer: Callable[[], None] | None = None) -> None:
        self.workers = workers
        self.initializer = initializer

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
