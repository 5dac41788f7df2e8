"""The on-disk step cache (issue 27, "pay for what is used"): a document's parse by a built-in parser and its
language detection, kept on disk so that a second run over unchanged documents (a chunking change, a nightly job)
reads them instead of OCR-ing every page again or building lingua's models.

A result is read back only when everything that can change it is the same; its key is the sha256 of the canonical
JSON of its **identity**:

- ``kind`` (``parse``, ``language``, ``sentences``) and the step's own identity (``step``): a parser's name,
  version and settings (`ingestaudit.parsers.base.Parser.cache_identity`), a step's options, candidate languages and
  library version; and what it reads: the source file's path, suffix and sha256 of its bytes (parse), the sha256 of
  the texts the step reads (language, sentences);
- ``environment`` (`environment_identity`): ingestaudit's version and a hash of its own source files, and every
  installed distribution's name and version (the ``*.dist-info`` names on ``sys.path``), so a code change or a
  library upgrade never reuses a result.

Only steps that are deterministic and whose whole identity is known are cached (the built-in parsers
``pymupdf``, ``unstructured`` and ``tesseract``; the ``language`` step with ``lingua``); plug-ins are never
cached. A value is written only when it reads back equal to itself (`StepCache.put`), so a read result is the
computed one, field for field.

Layout: ``<folder>/<kind>/<key>.json`` = ``{"format": 1, "identity": {...}, "value": {...}}``, written to a
temporary file and renamed into place (atomic; worker processes write without a lock). The folder is
``<cache folder>/steps`` (`step_cache_folder`: ``[run] cache_dir``, else ``$INGESTAUDIT_CACHE``, else
``~/.cache/ingestaudit/embeddings``). ``[run] step_cache = false``, ``run --no-step-cache`` or
``INGESTAUDIT_STEP_CACHE=off`` turn it off (nothing read or written).

A cache file that is not a regular file, is larger than `MAX_ENTRY_BYTES`, does not parse, or records another
identity is never used: the step runs again, ONE `StepCacheWarning` per file and run names it and why
(`ingestaudit.warning_lines.first_in_run`, across worker processes), and the file is renamed ``unused-<name>`` so
the next run does not warn again. A folder that cannot be written gives one warning per run; the run goes on
uncached.

Counts per thread (`take_counts`, keys ``<kind>.hit`` / ``<kind>.miss``) go with each task's result into
``timings.json`` (``step_cache``).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ingestaudit.errors import IngestAuditError
from ingestaudit.warning_lines import first_in_run

FORMAT = 1
MAX_ENTRY_BYTES = 256 * 2**20
"""A cache file larger than this (256 MiB) is not read (a parse of that size is not one a run wrote)."""
ENV = "INGESTAUDIT_STEP_CACHE"
"""Environment switch: ``off`` (or ``0``, ``false``, ``no``) turns the step cache off; a value that is neither on nor
off turns it off too, with a warning (`env_problem`)."""
UNUSED_PREFIX = "unused-"


class StepCacheWarning(IngestAuditError, UserWarning):
    """A step cache file was not used (see the module docstring) or the folder cannot be written; the step runs
    again. Issued with `warnings.warn`, never raised; the message names the file or folder."""


ON_VALUES = ("", "on", "1", "true", "yes")
OFF_VALUES = ("off", "0", "false", "no")


def enabled_by_env() -> bool:
    """True when `ENV` is unset or one of `ON_VALUES` (any case, white space trimmed); False otherwise: one of
    `OFF_VALUES`, or any other value (`env_problem` names it; a value meant to turn the cache off never leaves it
    on)."""
    return os.environ.get(ENV, "").strip().lower() in ON_VALUES


def env_problem() -> str:
    """The message for a `ENV` value that is neither on nor off (the cache is then off), else ``""``."""
    value = os.environ.get(ENV, "")
    if value.strip().lower() in ON_VALUES + OFF_VALUES:
        return ""
    return (f"{ENV}={value!r} is neither on ({', '.join(v for v in ON_VALUES if v)}) nor off "
            f"({', '.join(OFF_VALUES)}): the step cache is off")


def step_cache_folder(cache_dir: str | None) -> Path:
    """``<cache folder>/steps`` of the ``[run] cache_dir`` setting (None: ``$INGESTAUDIT_CACHE`` or the default,
    as the embedding cache's `ingestaudit.stages.embedders.cache.default_cache_folder`)."""
    from ingestaudit.stages.embedders.cache import default_cache_folder

    return default_cache_folder(cache_dir) / "steps"


def canonical(obj: Any) -> str:
    """Compact ASCII JSON with sorted keys (the identity's hashed form; a lone surrogate is escaped). Raises
    TypeError/ValueError for a value JSON cannot hold (NaN included)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def text_hash(text: str | None) -> str | None:
    """The embedding cache's `ingestaudit.stages.embedders.cache.text_key` of ``text`` (sha256 hex of its UTF-8
    bytes), None for None."""
    from ingestaudit.stages.embedders.cache import text_key

    return None if text is None else text_key(text)


def file_hash(path: Path) -> str:
    """sha256 hex of the file's bytes, read in 1 MiB blocks. Raises OSError as reading does."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


_ENVIRONMENT: dict[str, Any] = {}


def environment_identity() -> dict[str, Any]:
    """``{"ingestaudit": version, "source": sha256 of ingestaudit's .py files (path and bytes, sorted by path),
    "distributions": sha256 of the sorted ``*.dist-info``/``*.egg-info`` names on ``sys.path``}``; computed once per
    process (about 20 ms)."""
    if not _ENVIRONMENT:
        import ingestaudit

        root = Path(ingestaudit.__file__).resolve().parent
        source = hashlib.sha256()
        for path in sorted(root.rglob("*.py")):
            source.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
        names: set[str] = set()
        for entry in sys.path:
            try:
                with os.scandir(entry or ".") as it:
                    names.update(e.name for e in it if e.name.endswith((".dist-info", ".egg-info")))
            except OSError:
                continue
        dists = hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest()
        _ENVIRONMENT.update(ingestaudit=ingestaudit.__version__, source=source.hexdigest(), distributions=dists)
    return dict(_ENVIRONMENT)


class _Local(threading.local):
    def __init__(self) -> None:
        self.cache: StepCache | None = None
        self.counts: dict[str, int] = {}


_LOCAL = _Local()
_CACHES: dict[str, StepCache] = {}
_LOCK = threading.Lock()


@contextmanager
def active(folder: str | None) -> Iterator[StepCache | None]:
    """Within the block, this thread's steps use the step cache in ``folder`` (None: no cache); one `StepCache`
    per folder and process (its warnings are given once)."""
    cache = None
    if folder is not None and enabled_by_env():
        with _LOCK:
            cache = _CACHES.setdefault(folder, StepCache(Path(folder)))
    before, _LOCAL.cache = _LOCAL.cache, cache
    try:
        yield cache
    finally:
        _LOCAL.cache = before


def current() -> StepCache | None:
    """The step cache of this thread's running task (`active`), or None."""
    return _LOCAL.cache


def count(key: str) -> None:
    """Add 1 to this thread's count ``key`` (``<kind>.hit``, ``<kind>.miss``)."""
    _LOCAL.counts[key] = _LOCAL.counts.get(key, 0) + 1


def take_counts() -> dict[str, int]:
    """This thread's counts since the last call, and reset them."""
    out, _LOCAL.counts = _LOCAL.counts, {}
    return out


def cached(kind: str, identity: Callable[[], dict[str, Any] | None], compute: Callable[[], Any],
           encode: Callable[[Any], Any], decode: Callable[[Any], Any],
           still_valid: Callable[[dict[str, Any]], bool] | None = None) -> Any:
    """``compute()``, or its result read from this thread's step cache: looked up by ``identity()`` (called only
    when a cache is active; None: not cacheable, always computed and not counted) under ``kind``, written after
    computing unless ``still_valid(identity)`` says the input changed meanwhile (a file rewritten while it was
    parsed). ``encode``/``decode`` turn a result into JSON-able data and back. Raises what ``compute`` raises
    (nothing is written then)."""
    cache = current()
    own = identity() if cache is not None else None
    if own is None:
        return compute()
    full = {"kind": kind, "step": own, "environment": environment_identity()}
    hit = cache.get(kind, full, decode)
    if hit is not None:
        count(f"{kind}.hit")
        return hit[0]
    count(f"{kind}.miss")
    value = compute()
    if still_valid is None or still_valid(own):
        cache.put(kind, full, value, encode, decode)
    return value


class StepCache:
    """Step results on disk under ``folder`` (see the module docstring).

    Args:
        folder: the step cache folder (created on the first write).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.ignored: dict[str, str] = {}  # file -> why it was not used (warned once each)
        self.write_error = ""  # the first write failure (warned once)

    def path(self, kind: str, identity: dict[str, Any]) -> Path:
        """The file of ``identity`` (``<folder>/<kind>/<sha256 of its canonical JSON>.json``)."""
        return self.folder / kind / (hashlib.sha256(canonical(identity).encode()).hexdigest() + ".json")

    def _ignore(self, path: Path, why: str) -> None:
        if str(path) in self.ignored:
            return
        self.ignored[str(path)] = why
        from ingestaudit.inputs import set_aside

        where = set_aside(path, UNUSED_PREFIX)
        if first_in_run(f"step-cache:{path}"):  # once per run, whichever worker process meets it first
            warnings.warn(f"step cache: {path}: {why}; not used ({where}), the step runs again", StepCacheWarning,
                          stacklevel=2)

    def get(self, kind: str, identity: dict[str, Any], decode: Callable[[Any], Any]) -> tuple[Any] | None:
        """``(value,)`` read for ``identity``, or None when absent or not usable (warned, moved aside)."""
        from ingestaudit.inputs import file_kind

        try:
            path = self.path(kind, identity)
        except (TypeError, ValueError):
            return None
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in (errno.ENOTDIR, errno.EACCES, errno.ELOOP, errno.ENAMETOOLONG):  # the folder, not the entry
                if first_in_run(f"step-cache-read:{self.folder}"):
                    warnings.warn(f"step cache: {self.folder} cannot be read ({type(exc).__name__}: {exc}); step "
                                  "results are computed again", StepCacheWarning, stacklevel=2)
                return None
            self._ignore(path, f"cannot be examined ({type(exc).__name__}: {exc})")
            return None
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
            what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else file_kind(st.st_mode)
            self._ignore(path, f"is {what}, not a regular file")
            return None
        if st.st_size > MAX_ENTRY_BYTES:
            self._ignore(path, f"{st.st_size} bytes, over the {MAX_ENTRY_BYTES} a cache file may have")
            return None
        try:
            entry = json.loads(path.read_bytes().decode("ascii"))
            if not isinstance(entry, dict) or entry.get("format") != FORMAT:
                raise ValueError(f"not a format-{FORMAT} step cache entry")
            if entry.get("identity") != json.loads(canonical(identity)):
                self._ignore(path, "it records another identity")
                return None
            return (decode(entry["value"]),)
        except (OSError, ValueError, TypeError, AttributeError, LookupError, RecursionError) as exc:
            self._ignore(path, f"unreadable, truncated or corrupt ({type(exc).__name__}: {exc})")
        return None

    def put(self, kind: str, identity: dict[str, Any], value: Any, encode: Callable[[Any], Any],
            decode: Callable[[Any], Any]) -> bool:
        """Write ``value`` for ``identity`` when it reads back equal to itself (``decode(encode(value)) ==
        value``); False when it was not written (not representable, or the folder cannot be written: one
        warning per process)."""
        try:
            data = encode(value)
            text = canonical({"format": FORMAT, "identity": identity, "value": data})
            if len(text) > MAX_ENTRY_BYTES or decode(json.loads(text)["value"]) != value:
                return False  # too large to be read back (`get`), or not representable
        except (TypeError, ValueError, AttributeError, KeyError, RecursionError):
            return False
        path = self.path(kind, identity)
        try:
            from ingestaudit.stages.embedders.cache import write_atomically

            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, lambda fh: fh.write(text.encode("ascii")), sync=False)  # atomic; a result is
            # recomputed if a crash loses it
        except OSError as exc:
            if not self.write_error:
                self.write_error = f"{type(exc).__name__}: {exc}"
                if first_in_run(f"step-cache-write:{self.folder}"):
                    warnings.warn(f"step cache: {self.folder} cannot be written ({self.write_error}); step "
                                  "results are not cached", StepCacheWarning, stacklevel=2)
            return False
        return True


def with_cache_counts(timings: dict, counts: dict[str, dict[str, int]], folder: str | None) -> dict:
    """``timings`` with ``step_cache``: per pipeline ``{"<kind>": {"hits": n, "misses": m}}`` under
    ``[<pipeline>]["step_cache"]``, and the run's ``["(run)"]["step_cache"]`` = ``{"folder": folder or None (off),
    "<kind>": {"hits", "misses"}}`` summed over pipelines. A miss is a result computed and offered to the cache;
    results never cached (a plug-in parser, a detector other than lingua) are not counted."""
    from ingestaudit.step_times import RUN_KEY

    def shaped(flat: dict[str, int]) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for key, n in sorted(flat.items()):
            kind, _, what = key.rpartition(".")
            slot = out.setdefault(kind, {"hits": 0, "misses": 0})
            slot["hits" if what == "hit" else "misses"] += n
        return out

    out = dict(timings)
    total: dict[str, int] = {}
    for name, flat in counts.items():
        out.setdefault(name, {})["step_cache"] = shaped(flat)
        for key, n in flat.items():
            total[key] = total.get(key, 0) + n
    run = dict(out.get(RUN_KEY) or {})
    run["step_cache"] = {"folder": folder, **shaped(total)}
    out[RUN_KEY] = run
    return out


def summary_line(timings: dict) -> str:
    """One line for the terminal when a run read any result from the step cache (``""`` otherwise): how many of
    each kind, the folder, and how to recompute."""
    from ingestaudit.step_times import RUN_KEY

    info = (timings.get(RUN_KEY) or {}).get("step_cache") or {}
    kinds = {kind: c for kind, c in info.items() if isinstance(c, dict)}
    if not any(c.get("hits") for c in kinds.values()):
        return ""
    parts = [f"{c.get('hits', 0)} of {c.get('hits', 0) + c.get('misses', 0)} {kind}"
             for kind, c in sorted(kinds.items(), key=lambda kv: (KIND_ORDER.get(kv[0], 99), kv[0]))]
    return (f"step cache: {', '.join(parts)} results reused from {info.get('folder')} (earlier runs or earlier in "
            "this run; same file bytes or text, settings and library versions; --no-step-cache recomputes them)")


KIND_ORDER = {"parse": 0, "language": 1, "sentences": 2}
"""The order of the kinds in `summary_line`: the steps' order in a pipeline."""
