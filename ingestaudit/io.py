"""File output: where ingestaudit may write, and writing a report's files together (issue 15). (Reading a user's
files: `ingestaudit.inputs`.)

* `check_output_folder` / `check_output_file`, before any work: the target is a folder (or can be created), is
  writable (probed with a temporary file), and is not inside the corpus, by path or by device and inode (a bind
  mount of the corpus or of a folder inside it resolves to another path, but it is the same folder).
* `StagedOutput`: every file of a report is written into a hidden staging folder inside the output folder, then
  renamed into place, ``report.json`` last (it names the measurement store's SHA-256, so it is the commit mark).
  A failure while staging (a full disk, ENOSPC) or an interrupt leaves the previous report untouched; a failure
  while renaming restores the previous files from hard links kept in the staging folder. The staging folder of
  an interrupted run (its process gone) is removed by the next run into the same folder.
* `write_atomic`: one file through a temporary file and ``os.replace``.

Renames within one folder need no free space, so after staging only an I/O error of the file system can stop a
commit; SIGINT and SIGTERM are held back during the renames (a few microseconds each).
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ingestaudit.errors import WritingError
from ingestaudit.inputs import describe, file_kind  # describe: callers import it from here too
from ingestaudit.report.provenance import REPORT_FILES, STAGING_PREFIX, report_owned


class OutputError(WritingError):
    """An output cannot be written where it was asked for; the message names the path and the reason."""


def not_a_regular_file(path: Path) -> str | None:
    """Why an existing ``path`` must not be replaced by an output file, or None (absent, or a regular file): a
    symbolic link (replacing it would cut the link; writing through it would write elsewhere), a FIFO, a device
    (``/dev/null`` included: replacing a device file removes the device), a socket or a folder. ``lstat`` only."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be examined ({describe(exc)})"
    if stat.S_ISLNK(st.st_mode):
        return f"is a symbolic link (to {os.readlink(path)!r}), not a regular file"
    kind = file_kind(st.st_mode)
    return None if kind is None else f"is {kind}, not a regular file"


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file in the same folder and ``os.replace``.

    Raises:
        OutputError: ``path`` exists and is not a regular file (`not_a_regular_file`): never replaced.
        OSError: the folder cannot be created or written.
    """
    refused = not_a_regular_file(path)
    if refused is not None:
        raise OutputError(f"{path}: {refused}; not written")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp creates 0600; a report is as readable as any file the user writes
        # backslashreplace: a lone surrogate (from a file name or a plug-in's text) must not lose the whole report
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- where outputs may go -------------------------------------------------------------------------------------------

def folder_ids(root: Path) -> set[tuple[int, int]]:
    """``(st_dev, st_ino)`` of ``root`` and of every folder below it (symbolic links not followed).

    A folder is the same folder under any path, a bind mount included, so an output folder whose own id or an
    ancestor's id is in this set is inside ``root``. Unreadable sub-folders are left out.
    """
    ids: set[tuple[int, int]] = set()
    try:
        st = root.stat()
    except OSError:
        return ids
    ids.add((st.st_dev, st.st_ino))
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            est = entry.stat(follow_symlinks=False)
                            ids.add((est.st_dev, est.st_ino))
                            stack.append(entry.path)
                    except OSError:
                        continue
        except OSError:
            continue
    return ids


def _existing_ancestor(path: Path) -> Path:
    for p in (path, *path.parents):
        if os.path.lexists(p):
            return p
    return Path(path.anchor or "/")


def inside(path: Path, root: Path, root_ids: set[tuple[int, int]] | None = None) -> bool:
    """Whether ``path`` (absent or present) lies in ``root``: by resolved path, or because ``path`` or one of its
    existing ancestors is ``root`` or a folder inside it (``root_ids``, from `folder_ids`: bind mounts)."""
    real_root = root.resolve()
    real = path.resolve()
    if real == real_root or real_root in real.parents:
        return True
    ids = root_ids if root_ids is not None else folder_ids(real_root)
    start = _existing_ancestor(real)
    for p in (start, *start.parents):
        try:
            st = p.stat()
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in ids:
            return True
    return False


def _probe_writable(folder: Path, flag: str) -> None:
    try:
        fd, probe = tempfile.mkstemp(prefix=".ingestaudit-probe-", dir=folder)
    except OSError as exc:
        raise OutputError(f"{flag} {folder}: cannot write there ({describe(exc)}); nothing was audited") from None
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass


def check_output_folder(out: Path, *, corpus_root: Path | None = None, flag: str = "--out",
                        root_ids: set[tuple[int, int]] | None = None, within: str = "corpus") -> None:
    """Refuse an output folder that cannot receive the report, before any work.

    ``out`` must be a folder, or absent with a creatable path (its nearest existing ancestor a writable folder; no
    folder is created here); it must be writable (a temporary file is created and removed); and it must not lie in
    ``corpus_root`` (see `inside`). Which files an existing folder may hold is checked by
    `ingestaudit.report.provenance.check_out_folder`. ``within`` names ``corpus_root`` in the message.

    Raises:
        OutputError: the path and the reason.
    """
    out = Path(os.path.abspath(out))
    if corpus_root is not None and inside(out, corpus_root, root_ids):
        raise OutputError(f"{flag} {out}: inside the {within} {corpus_root} (by path or as the same folder through "
                          f"a mount); the {within} is never written to. Choose a folder outside the {within}")
    if os.path.lexists(out):
        if not out.is_dir():
            raise OutputError(f"{flag} {out}: exists and is not a folder")
        _probe_writable(out, flag)
        return
    base = _existing_ancestor(out.parent)
    if not base.is_dir():
        raise OutputError(f"{flag} {out}: cannot be created: {base} is not a folder")
    _probe_writable(base, flag)


def _same_file(a: Path, b: Path) -> bool:
    """``a`` and ``b`` name one file: the same resolved path (either may be absent), or the same inode."""
    if Path(a).resolve() == Path(b).resolve():
        return True
    return os.path.lexists(a) and os.path.lexists(b) and os.path.samefile(a, b)


def check_output_file(target: Path, *, corpus_root: Path | None = None, flag: str,
                      root_ids: set[tuple[int, int]] | None = None, never: Iterable[Path] = (),
                      own: Iterable[Path] = (), report_folders: Iterable[Path] = ()) -> None:
    """Refuse a single output file (``report --html FILE``, ``--md FILE``, ``--history DB``, ``--junit FILE``)
    before writing: not a folder, nothing else that exists and is not a regular file (a symbolic link, a FIFO, a
    device such as ``/dev/null``, a socket: `not_a_regular_file`), not inside ``corpus_root`` (see `inside`), not
    one of ``never`` (the input being read) nor of ``own`` (the files this command writes itself, such as the run's
    report.json or gate.json; compared by resolved path, so an absent one counts), not a file of one of
    ``report_folders`` (`ingestaudit.report.provenance.report_owned`: its report files, kept vectors, questions/
    and runs/), in a folder that exists or can be created and is writable.

    Raises:
        OutputError: the path and the reason.
    """
    target = Path(os.path.abspath(target))
    if target.is_dir() and not target.is_symlink():
        raise OutputError(f"{flag} {target}: is a folder; give a file name (e.g. {target / 'report.html'})")
    refused = not_a_regular_file(target)
    if refused is not None:
        raise OutputError(f"{flag} {target}: {refused}; give the path of a regular file (or of a new one)")
    for other in never:
        if os.path.lexists(target) and os.path.lexists(other) and os.path.samefile(target, other):
            raise OutputError(f"{flag} {target}: is the file being read; choose another name")
    for other in own:
        if _same_file(target, Path(other)):
            raise OutputError(f"{flag} {target}: is {Path(other).name}, a file this command writes itself; "
                              "choose another name")
    for folder in report_folders:
        if report_owned(target, Path(folder)):
            raise OutputError(f"{flag} {target}: is a file of the report folder {folder}, which this command reads "
                              "or writes; choose another name")
    if corpus_root is not None and inside(target, corpus_root, root_ids):
        raise OutputError(f"{flag} {target}: inside the corpus {corpus_root} (by path or as the same folder "
                          "through a mount); the corpus is never written to. Choose a file outside the corpus")
    base = _existing_ancestor(target.parent)
    if not base.is_dir():
        raise OutputError(f"{flag} {target}: cannot be created: {base} is not a folder")
    _probe_writable(base, flag)


# --- writing a report's files together ------------------------------------------------------------------------------

def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_staging(out: Path) -> list[str]:
    """Remove the staging folders in ``out`` left by runs whose process is gone (an interrupt, a crash, a kill);
    returns their names. A staging folder of a live process is left alone."""
    removed = []
    try:
        entries = list(os.scandir(out))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(STAGING_PREFIX) or not entry.is_dir(follow_symlinks=False):
            continue
        pid_text = entry.name[len(STAGING_PREFIX):].split("-", 1)[0]
        if pid_text.isdigit() and _pid_alive(int(pid_text)) and int(pid_text) != os.getpid():
            continue
        if os.path.abspath(entry.path) in _ACTIVE_RUN_FOLDERS:  # this process's run, still in progress
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(entry.name)
    return removed


@contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back (delivered when the block ends) in the main thread of a POSIX process."""
    held = {signal.SIGINT, signal.SIGTERM}
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class StagedOutput:
    """The files of one report, staged in ``OUT/.ingestaudit-tmp-<pid>-<random>/`` and committed together.

    Use as a context manager: write each file with `write_text` or into `path` (for writers that take a path),
    then `commit`. Leaving the block without a commit (an exception, an interrupt) removes the staging folder and
    leaves ``OUT`` as it was.

    Args:
        out: the output folder (created if absent, with its parents).
        managed: every file name a report may hold; a previous file of this set that the new report does not write
            is removed at commit (so no file of an older run is left beside the new report).

    Raises:
        OutputError: (on entry) the folder cannot be created or written; (from the methods) a file cannot be
            written or committed: the message names the final path and the reason, and says the previous report is
            unchanged.
    """

    def __init__(self, out: Path, managed: Iterable[str]) -> None:
        self.out = Path(out)
        self.managed = tuple(managed)
        self.stage: Path | None = None
        self.staged: list[str] = []

    def __enter__(self) -> StagedOutput:
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            remove_stale_staging(self.out)
            self.stage = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=self.out))
        except OSError as exc:
            raise OutputError(self._unchanged(self.out, exc)) from None
        return self

    def __exit__(self, *exc: object) -> None:
        if self.stage is not None:
            shutil.rmtree(self.stage, ignore_errors=True)
            self.stage = None

    def _unchanged(self, path: Path, exc: OSError) -> str:
        return f"cannot write {path} ({describe(exc)}); the previous report in {self.out} is unchanged"

    def path(self, name: str) -> Path:
        """Where to write file ``name`` (in the staging folder); it is committed with the others."""
        assert self.stage is not None, "StagedOutput used outside its with block"
        if name not in self.staged:
            self.staged.append(name)
        if "/" in name:  # a file of a report folder (`ingestaudit.report.provenance.REPORT_DIRS`)
            (self.stage / name).parent.mkdir(parents=True, exist_ok=True)
        return self.stage / name

    def write_text(self, name: str, text: str) -> None:
        """Stage file ``name`` with ``text`` (UTF-8, ``\\n`` line ends)."""
        target = self.path(name)
        try:
            with open(target, "w", encoding="utf-8", errors="backslashreplace", newline="\n") as fh:
                fh.write(text)
        except OSError as exc:
            raise OutputError(self._unchanged(self.out / name, exc)) from None

    def failed(self, name: str, exc: OSError) -> OutputError:
        """The `OutputError` for a writer of file ``name`` (see `path`) that raised ``exc``."""
        return OutputError(self._unchanged(self.out / name, exc))

    def commit(self, last: str = "report.json") -> list[str]:
        """Rename every staged file into ``OUT``, ``last`` after all the others, and remove the managed files the
        new report does not have. Returns the file names written, in commit order.

        Raises:
            OutputError: a rename failed; the previous files are restored.
        """
        assert self.stage is not None, "StagedOutput used outside its with block"
        order = [n for n in self.staged if n != last] + [n for n in self.staged if n == last]
        stale = [n for n in self.managed if n not in self.staged and os.path.lexists(self.out / n)]
        backup = self.stage / ".previous"
        with _signals_held():
            kept: dict[str, bool] = {}  # name -> a previous version is kept in backup
            try:
                backup.mkdir()
                for name in {*order, *stale}:
                    if os.path.lexists(self.out / name):
                        (backup / name).parent.mkdir(parents=True, exist_ok=True)
                        os.link(self.out / name, backup / name, follow_symlinks=False)
                        kept[name] = True
            except OSError:
                kept = {}  # no hard links here (some file systems): commit without a way back
            done: list[str] = []
            current = last
            try:
                for name in stale:
                    current = name
                    os.unlink(self.out / name)
                    done.append(name)
                for name in order:
                    current = name
                    if "/" in name:
                        (self.out / name).parent.mkdir(parents=True, exist_ok=True)
                    os.replace(self.stage / name, self.out / name)
                    done.append(name)
            except OSError as exc:
                for name in reversed(done):  # put the previous report back as it was
                    try:
                        if kept.get(name):
                            os.replace(backup / name, self.out / name)
                        else:
                            os.unlink(self.out / name)
                    except OSError:
                        pass
                raise OutputError(f"cannot write {self.out / current} ({describe(exc)}); the previous report in "
                                  f"{self.out} " + ("was restored" if kept or not done else "may be incomplete")
                                  ) from None
        return order


_ACTIVE_RUN_FOLDERS: set[str] = set()  # `run_folder`s of this process in use (never removed as stale)


@contextmanager
def run_folder(out: Path) -> Iterator[Path]:
    """A private folder for a run's working files (spilled truths and vectors, the measurement store being
    written), ``OUT/.ingestaudit-tmp-<pid>-run-<random>/``: hidden, so `ingestaudit.report.provenance.check_out_folder`
    tolerates it, on the file system of the report, so the store becomes ``OUT/measurements.parquet`` by a rename,
    and removed on exit (with ``OUT`` itself when the run created it and it is still empty; a stale one of a
    process that is gone is removed by the next run, `remove_stale_staging`).

    Raises:
        OutputError: the folder cannot be created.
    """
    out = Path(out)
    created = not os.path.lexists(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-run-", dir=out))
    except OSError as exc:
        raise OutputError(f"cannot write {out} ({describe(exc)}); nothing was audited") from None
    _ACTIVE_RUN_FOLDERS.add(os.path.abspath(work))
    try:
        yield work
    finally:
        _ACTIVE_RUN_FOLDERS.discard(os.path.abspath(work))
        shutil.rmtree(work, ignore_errors=True)
        if created:
            try:
                out.rmdir()  # only when empty: no report was committed
            except OSError:
                pass


def write_report(out: Path, report: Any, *, trend: Callable[[], Any] | None = None) -> list[str]:
    """Write a run's report into ``out``, all files or none: ``measurements.parquet`` (the run's store copied, or
    written from a report's inline rows, which then become a `StoreRef` naming it), ``report.json`` (which names the
    store with its SHA-256), ``report.md``, ``report.html``, when the report has timings ``timings.json``, when it
    was gated ``gate.json`` (its ``gate``), and with ``--keep-vectors`` the kept-vector files
    (`ingestaudit.kept_vectors`, from `Report.kept_vectors`);
    staged and committed by `StagedOutput` (``report.json`` last). Afterwards ``report.store_path`` is
    ``out/measurements.parquet``.

    Args:
        report: the `ingestaudit.report.schema.Report` of the run.
        trend: called once the JSON and Markdown views are staged (to record the run in a history) and returns the
            trends the HTML view draws, or None.

    Returns the names written. Raises:
        OutputError: a file could not be written or committed (the path and the reason; the previous report in
            ``out`` is unchanged).
    """
    import json

    from ingestaudit.report.schema import StoreRef
    from ingestaudit.step_times import now
    from ingestaudit.store import STORE_NAME, write_measurements

    started = now()

    from ingestaudit.kept_vectors import kept_files
    from ingestaudit.report.provenance import REPORT_DIRS

    folders = [Path(out) / d for d in REPORT_DIRS]
    previous_files = [f"{d.name}/{f.name}" for d in folders if d.is_dir() and not d.is_symlink()
                      for f in sorted(d.iterdir()) if f.is_file() and not f.name.startswith(".")]  # replaced or removed
    # kept vectors of an earlier run are managed too: removed when this report keeps none (or fewer pipelines)
    with StagedOutput(out, (*REPORT_FILES, *kept_files(out), *previous_files)) as stage:
        staged = stage.path(STORE_NAME)
        try:
            if isinstance(report.measurements, StoreRef):
                from ingestaudit.report.rows import remember_verified, store_file

                source = store_file(report)  # checked against its SHA-256 first
                if report.store_owned:  # the run's own store: renamed (its folder is on this file system)
                    try:
                        os.replace(source, staged)
                        report.store_owned = False
                    except OSError:
                        shutil.copyfile(source, staged)
                else:
                    shutil.copyfile(source, staged)
                remember_verified(staged, report.measurements.sha256)
            else:
                rows = list(report.measurements)
                digest = write_measurements(rows, staged)
                report.measurements = StoreRef(file=STORE_NAME, sha256=digest, rows=len(rows))
        except OSError as exc:
            raise stage.failed(STORE_NAME, exc) from None
        previous = report.store_path
        report.store_path = staged  # the views below read the staged copy
        try:
            committed = _write_views(stage, report, trend, json, started)
        except BaseException:
            report.store_path = previous
            raise
        report.store_path = Path(out) / STORE_NAME
        if isinstance(report.measurements, StoreRef):
            from ingestaudit.report.rows import remember_verified

            remember_verified(report.store_path, report.measurements.sha256)  # renamed: the same bytes
        return committed


def _write_views(stage: StagedOutput, report: Any, trend: Callable[[], Any] | None, json: Any,
                 started: float) -> list[str]:
    """`write_report` once the store is staged: report.json, the views, timings.json (with the seconds since
    ``started``, `ingestaudit.step_times.finish_report`), then the commit."""
    from ingestaudit.step_times import finish_report, now

    from ingestaudit.report.render import render_html, render_markdown

    from ingestaudit.report.questions import write_question_files

    stage.write_text("report.json", report.to_json())
    stage.write_text("report.md", render_markdown(report))
    write_question_files(stage, report)
    history = trend() if trend is not None else None
    stage.write_text("report.html", render_html(report, history=history))
    if report.timings:
        finish_report(report.timings, now() - started)
        stage.write_text("timings.json", json.dumps(report.timings, indent=1, sort_keys=True) + "\n")
    if getattr(report, "gate", None) is not None:  # a gated run: its result beside the report (issue 26)
        from ingestaudit.report.gate_result import GATE_FILE

        stage.write_text(GATE_FILE, report.gate.to_json())
    if report.kept_vectors is not None:  # --keep-vectors: moved in (the run's folder is on this file system)
        from ingestaudit.kept_vectors import kept_files

        for name in kept_files(report.kept_vectors):
            try:
                os.replace(report.kept_vectors / name, stage.path(name))
            except OSError:
                try:
                    shutil.copyfile(report.kept_vectors / name, stage.path(name))
                except OSError as exc:
                    raise stage.failed(name, exc) from None
    return stage.commit(last="report.json")
