"""The progress display of ``ingestaudit run`` (issue 27 point 2): on stderr, only when stderr is a terminal and
``--quiet`` is not given; never in a report file (it writes to the console only, and clears itself at the end).

One row per pipeline: documents done / total, the run's current step, elapsed time and ETA (rich's estimate from
the recent rate). The runner reports through the callback protocol of `ingestaudit.runner.run`'s ``progress``:
``progress(total)`` once with the number of document tasks (documents x pipelines), returning ``tick``;
``tick(pipeline)`` after each task of that pipeline; ``tick(None, step)`` when the run moves on to a step after the
documents (a pipeline's retrieval, the summary).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

DOCUMENT_STEP = "parse..audit"
"""The step shown while documents are parsed, cleaned, chunked, embedded and audited (short: at 80 columns a long
label left no room for the counts)."""


class RunProgress:
    """A rich `Progress` over ``console`` with one task per pipeline (see the module docstring).

    Args:
        console: a rich Console on stderr.
        pipelines: the pipeline names, in report order.
        enabled: False draws nothing (``--quiet``); the display is also off when ``console`` is not a terminal.
    """

    def __init__(self, console: Any, pipelines: list[str], enabled: bool = True) -> None:
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)

        self.pipelines = list(pipelines)
        self.enabled = bool(enabled) and bool(console.is_terminal)
        # names and steps as plain text (markup=False): a pipeline named "[/bold]" is a name, not a style tag
        self.bar = Progress(TextColumn("{task.description}", markup=False), BarColumn(bar_width=20),
                            MofNCompleteColumn(), TextColumn("{task.fields[step]}", markup=False),
                            TimeElapsedColumn(), TextColumn("ETA"),
                            TimeRemainingColumn(), console=console, transient=True, disable=not self.enabled)
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> "RunProgress":
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.bar.__exit__(*exc)

    def __call__(self, total: int) -> Callable[..., None]:
        """Start the rows: ``total`` tasks shared evenly by the pipelines; returns ``tick``."""
        per = total // max(len(self.pipelines), 1)
        for name in self.pipelines:
            self.tasks[name] = self.bar.add_task(name, total=per, step=DOCUMENT_STEP)
        return self.tick

    def tick(self, pipeline: str | None = None, step: str | None = None) -> None:
        """One task of ``pipeline`` done; or (``pipeline`` None) the run's current ``step`` shown on every row."""
        if pipeline is not None and pipeline in self.tasks:
            self.bar.advance(self.tasks[pipeline])
        if step is not None:
            for task in self.tasks.values():
                self.bar.update(task, step=step)
