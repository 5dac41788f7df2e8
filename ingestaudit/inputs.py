"""Reading a user's own files (issue 30): the one reader of every file that comes from outside the corpus.

A ``--outputs`` folder's files (per-document outputs, ``retrieval.jsonl``, ``ann_results.jsonl``, ``vectors.npy``,
``vector_ids.json``), a report and its measurement store read back, a configuration, a TREC qrels or run file:
`read_input_bytes` / `read_input_text` / `open_input_file` refuse, by ``stat`` through links and before any open,
what is not a regular file (a FIFO would block the open for ever, a link to ``/dev/urandom`` would be read without
end) and a file over its size limit; the file is opened without blocking and read up to the limit only (a file that
grows, or reports a size of 0 as ``/proc`` files do, is still bounded). Every refusal is an `InputFileError` whose
message starts with the path and says what the file is. This module imports nothing of the package (any layer may
read a user's file).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from ingestaudit.errors import IngestAuditError


def describe(exc: OSError) -> str:
    """``exc``'s reason in words (``No space left on device``), without the path."""
    return exc.strerror or (errno.errorcode.get(exc.errno or 0, "") if exc.errno else "") or str(exc)


_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder"))


def file_kind(mode: int) -> str | None:
    """What a file of ``st_mode`` ``mode`` is when it is not a regular file (``"a named pipe (FIFO)"``, ``"a
    character device"``, ``"a folder"``...), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


class InputFileError(IngestAuditError):
    """A user's file (named, or found where the tool looks for one) that cannot be used: not a regular file, over
    its size limit, unreadable or not UTF-8. The message starts with the path; ``limit`` names the size limit that
    refused it (``limits.results_bytes``; else ``""``); ``oserror`` is the error of a file that could not be
    stat'ed, opened or read (missing, no permission), else None; ``kind`` what a file that is not a regular file is
    (`file_kind`), else None. The caller makes it an error, never a silent fallback."""

    def __init__(self, path: Path | str, reason: str, limit: str = "", oserror: OSError | None = None,
                 kind: str | None = None) -> None:
        self.path, self.reason, self.limit, self.oserror, self.kind = str(path), reason, limit, oserror, kind
        super().__init__(f"{path}: {reason}")

    @property
    def cause(self) -> str:
        """What went wrong, without the path: the OS error's own text (``No such file or directory``) when there is
        one, else the reason."""
        if self.oserror is not None:
            return str(self.oserror.strerror or self.oserror)
        return self.reason


def _refuse(path: Path | str, st: os.stat_result, max_bytes: int, limit: str) -> None:
    kind = file_kind(st.st_mode)
    if kind is not None:
        via = f" (through the link {os.readlink(path)!r})" if os.path.islink(path) else ""
        raise InputFileError(path, f"{kind}{via}, not a regular file: not read", kind=kind)
    if st.st_size > max_bytes:
        raise InputFileError(path, f"{st.st_size} bytes, over {limit} = {max_bytes}: not read", limit)


def check_input_file(path: Path | str, *, max_bytes: int, limit: str) -> int:
    """Refuse ``path`` unless it is a regular file (itself or through links) of at most ``max_bytes`` bytes, by
    ``stat`` only (never opened: a FIFO cannot block). Returns its size in bytes.

    Args:
        max_bytes: the size limit in bytes; ``limit``: its name as the message shows it (``limits.output_bytes``).

    Raises:
        InputFileError: missing, a broken link, not a regular file (what it is named: a FIFO, a device, a folder),
            or over the limit.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputFileError(path, f"cannot be read ({describe(exc)})", oserror=exc) from None
    _refuse(path, st, max_bytes, limit)
    return st.st_size


@contextmanager
def open_input_file(path: Path | str, *, max_bytes: int, limit: str) -> Iterator[BinaryIO]:
    """``path`` opened for binary reading after `check_input_file`; the open does not block (``O_NONBLOCK``: a file
    swapped for a FIFO after the ``stat`` is refused by ``fstat``, not waited on). The caller reads at most
    ``max_bytes`` (`read_input_bytes` does).

    Raises:
        InputFileError: as `check_input_file`, or the open fails.
    """
    check_input_file(path, max_bytes=max_bytes, limit=limit)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputFileError(path, f"cannot be read ({describe(exc)})", oserror=exc) from None
    try:
        _refuse(path, os.fstat(fd), max_bytes, limit)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        yield fh


def read_input_bytes(path: Path | str, *, max_bytes: int, limit: str) -> bytes:
    """The bytes of a user's file, read through `open_input_file`, never more than ``max_bytes`` (a file that grew
    past it while read is refused, not truncated).

    Raises:
        InputFileError: see `check_input_file`; also an I/O error while reading.
    """
    with open_input_file(path, max_bytes=max_bytes, limit=limit) as fh:
        try:
            data = fh.read(max_bytes + 1)
        except OSError as exc:
            raise InputFileError(path, f"cannot be read ({describe(exc)})", oserror=exc) from None
    if len(data) > max_bytes:
        raise InputFileError(path, f"more than {max_bytes} bytes, over {limit} = {max_bytes}: not read", limit)
    return data


def read_input_text(path: Path | str, *, max_bytes: int, limit: str, bom: bool = False) -> str:
    """The UTF-8 text of a user's file (`read_input_bytes`), line ends as written; ``bom``: a leading byte-order mark
    is dropped (it is not text).

    Raises:
        InputFileError: see `read_input_bytes`, or the bytes are not UTF-8 (the byte offset named).
    """
    data = read_input_bytes(path, max_bytes=max_bytes, limit=limit)
    try:
        return data.decode("utf-8-sig" if bom else "utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(path, f"not UTF-8 ({exc.reason} at byte {exc.start})") from None


LINK_ROOTS_ENV = "INGESTAUDIT_LINK_ROOTS"
"""Folders outside a corpus that its links may point into (``os.pathsep``-separated)."""


def allowed_link_roots(extra: Iterable[Path | str] = ()) -> tuple[Path, ...]:
    """The folders outside a corpus that its links may point into: ``extra`` and those in ``$INGESTAUDIT_LINK_ROOTS``
    (resolved; empty entries ignored)."""
    listed = [*extra, *os.environ.get(LINK_ROOTS_ENV, "").split(os.pathsep)]
    return tuple(Path(p).resolve() for p in listed if str(p))


def unsafe_reason(path: Path, root: Path, allowed: Iterable[Path] = ()) -> str | None:
    """Why ``path`` must not be read as a corpus file, or None when it may be: it is not a regular file (a FIFO, a
    socket or a device, itself or through a link), or its resolved path is neither under ``root`` nor under one of
    ``allowed`` (both resolved). Only ``stat`` is called: the file is never opened, so a FIFO cannot block.
    """
    try:
        st = path.stat()
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    kind = file_kind(st.st_mode)
    if kind is not None:
        return f"{kind}, not a regular file: not read"
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:  # a link loop
        return f"cannot be resolved ({exc})"
    if real.is_relative_to(root) or any(real.is_relative_to(a) for a in allowed):
        return None
    return (f"resolves outside the corpus (to {real}): not read; a link out of the corpus is followed only into a "
            f"folder listed in ${LINK_ROOTS_ENV}")


def set_aside(path: Path, prefix: str = "unused-") -> str:
    """Rename a cache file that must not be used to ``<prefix><name>`` beside it (no later run reads it or warns
    about it again; it stays for inspection). Returns what happened, for the warning: ``moved to <new name>``, or
    ``left in place (<error type>)`` when it cannot be renamed (a read-only cache, or another process moved it
    first). Never raises."""
    aside = path.with_name(prefix + path.name)
    try:
        os.replace(path, aside)
    except OSError as exc:
        return f"left in place ({type(exc).__name__})"
    return f"moved to {aside.name}"

