"""The package's own warnings as ``warning: <message>`` lines, each named once per run, in every process of the run.

A warning of an `ingestaudit.errors.IngestAuditError` family (the embedding cache's, whose message names its file)
is printed as one ``warning: <message>`` line, without Python's ``file.py:195: Category:`` prefix and the source
line under it (`format_warning`). The command line installs that format in its own process (`ingestaudit.cli`) and
each worker of a pool installs it too (`install`, called by the executors' worker set-up): a worker's warnings reach
the terminal through its own stderr, formatted by its own `warnings.formatwarning`.

`first_in_run` says whether a message key is new in this run, across processes: the command line opens a run scope
(`run_scope`: a temporary folder named by ``$INGESTAUDIT_WARNED_DIR``, which worker processes inherit), and the first
process to create the key's marker file there (``O_CREAT | O_EXCL``, atomic on a local file system) is the one that
warns. Without a scope (a script calling the runner) a key is new once per process.

Imports nothing of the package but `ingestaudit.errors`: any layer may use it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from ingestaudit.errors import IngestAuditError

WARNED_ENV = "INGESTAUDIT_WARNED_DIR"
_SEEN: set[tuple[str, str]] = set()  # (scope folder, key) already named by this process
_SEEN_LOCK = threading.Lock()


def format_warning(previous):
    """A `warnings.formatwarning` that prints a warning of the package's error families (an
    `ingestaudit.errors.IngestAuditError` subclass such as the embedding cache's, whose message names its file) as
    one ``warning: <message>`` line, without Python's source file and line; any other warning as ``previous`` does."""

    def fmt(message, category, filename, lineno, line=None):
        if isinstance(category, type) and issubclass(category, IngestAuditError):
            return f"warning: {message}\n"
        return previous(message, category, filename, lineno, line)

    fmt.ingestaudit_format = True  # type: ignore[attr-defined]
    return fmt


def install() -> None:
    """Make this process print the package's warnings as ``warning:`` lines (`format_warning` over the current
    formatter); a second call changes nothing. Called once in each worker process of a pool."""
    if not getattr(warnings.formatwarning, "ingestaudit_format", False):
        warnings.formatwarning = format_warning(warnings.formatwarning)


def first_in_run(key: str) -> bool:
    """True the first time ``key`` (e.g. ``"cache-write:<folder>"``) is asked for in this run, in any of its processes
    (see the module docstring), else False. A marker that cannot be written (the scope folder removed) answers True:
    a warning named twice beats a warning lost."""
    folder = os.environ.get(WARNED_ENV, "")
    with _SEEN_LOCK:
        if (folder, key) in _SEEN:
            return False
        _SEEN.add((folder, key))
    if not folder:
        return True
    marker = os.path.join(folder, hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32])
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    except OSError:
        return True
    return True


@contextmanager
def run_scope() -> Iterator[str]:
    """A run's warning scope: a new temporary folder set as ``$INGESTAUDIT_WARNED_DIR`` (so worker processes started
    inside share it); on exit the folder is removed and the variable restored."""
    saved = os.environ.get(WARNED_ENV)
    folder = tempfile.mkdtemp(prefix="ingestaudit-warned-")
    os.environ[WARNED_ENV] = folder
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if saved is None:
            os.environ.pop(WARNED_ENV, None)
        else:
            os.environ[WARNED_ENV] = saved
