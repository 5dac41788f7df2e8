"""Child processes that steps start (Tesseract's OCR runs) and the temporary folders they use, tracked so that an
executor can end them on a time-out, a SIGTERM or a Dask worker's end without knowing which step started them
(DESIGN.md: executors only place steps; issue 24 point 4).

Each child runs in its own session (process group) through `run_process`; `end_all` kills every running group and
removes the registered folders, `end_thread_children` only those a given thread started (a Dask worker runs tasks in
threads), and `cleanup_on_sigterm` makes a SIGTERM do `end_all` first while a block runs.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

_RUNNING: dict[int, subprocess.Popen] = {}  # pid (= its process group) -> a child running now
_STARTED_BY: dict[int, int] = {}  # pid -> the thread that started it (a Dask worker runs tasks in threads)
TEMP_DIRS: set[str] = set()  # temporary folders a step uses now (OCR page images)
_STARTING = [0]  # `run_process` calls between starting a child and registering it (a SIGTERM may come in between)


def _kill_group(proc: subprocess.Popen, wait_s: float = 5.0) -> None:
    """SIGKILL the process group led by ``proc`` (its own session), then reap ``proc``."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        pass


def run_process(argv: Sequence[str], *, timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run ``argv`` in a new session (its own process group), capturing stdout and stderr.

    On every exit other than its normal end (``timeout`` seconds passed, an exception, KeyboardInterrupt, SystemExit)
    the whole process group is killed and reaped before the exception propagates, so no child outlives its parser.

    Raises:
        subprocess.TimeoutExpired: ``timeout`` passed (the group is killed). OSError: ``argv[0]`` does not run.
    """
    _STARTING[0] += 1
    try:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        _RUNNING[proc.pid] = proc
        _STARTED_BY[proc.pid] = threading.get_ident()
    finally:
        _STARTING[0] -= 1
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        _kill_group(proc)
        raise
    finally:
        _RUNNING.pop(proc.pid, None)
        _STARTED_BY.pop(proc.pid, None)
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


def _unregistered_sessions() -> set[int]:
    """The children of this process that lead their own session (how `run_process` starts them), read from
    ``/proc``: a child started a moment ago whose registration a signal interrupted (empty without ``/proc``)."""
    me, found = os.getpid(), set()
    try:
        entries = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return found
    for pid in entries:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 3 and int(fields[1]) == me and int(fields[3]) == int(pid):  # ppid, session id
            found.add(int(pid))
    return found


def end_all() -> None:
    """Kill every running child group and remove the registered temporary folders (safe in a signal handler: no
    waiting). While a `run_process` call is between starting its child and registering it, this process's
    session-leading children are killed too, so a SIGTERM in that instant leaves no orphan."""
    groups = {proc.pid for proc in list(_RUNNING.values())}
    if _STARTING[0]:
        groups |= _unregistered_sessions()
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for folder in list(TEMP_DIRS):
        shutil.rmtree(folder, ignore_errors=True)


def end_thread_children(thread_id: int) -> int:
    """Kill the child groups (Tesseract runs) that thread ``thread_id`` started (a task over its budget on a shared Dask worker,
    whose thread cannot be stopped: its parse then fails at once and its ``with`` block removes its temporary
    folder). Returns how many groups were killed."""
    killed = 0
    for pid, proc in list(_RUNNING.items()):
        if _STARTED_BY.get(pid) == thread_id:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
    return killed


@contextmanager
def cleanup_on_sigterm() -> Iterator[None]:
    """While the block runs (in the main thread), SIGTERM first calls `end_all`, then what it did before (the
    pool's worker handler exits at once with ``os._exit``, which skips every ``finally``)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum: int, frame: Any) -> None:
        end_all()
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:  # the default action: end the process
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
