"""The on-disk embedding cache: a vector per (model identity, text hash), so a nightly run re-embeds only what changed.

The model identity is the embedder's `Embedder.model_id` (its name and a hash of the model files) and the versions
of the libraries that compute the vectors (`Embedder.library_versions`, read from package metadata): both are known
without loading the model or importing torch, so a run whose every text is cached never pays for either.

Layout under the cache folder (``<dir>`` = `cache_dir_name`: sha256 of the model id and the versions, 16 hex)::

    <folder>/<dir>/model.json          {"model_id": ..., "versions": {...}, "dimension": d}
    <folder>/<dir>/shard-<unique>.npz  keys: sha256 hex of each text (U64), vectors: float32 (n, d),
                                       model_id: str, versions: JSON str (the identity that wrote the shard)

A shard is used only when it is a regular file, loads whole, its vectors are ``(len(keys), d)`` with ``d`` the
model.json's dimension, finite and none all zeros, and the identity it records is the one asked for: a truncated
shard, or one of another model or another library version (copied in, or written by an older ingestaudit that
recorded no identity), is never used; its texts are embedded again and ONE `EmbeddingCacheWarning`
per run (across its processes: `ingestaudit.warning_lines.first_in_run`) names the file and the reason
(`EmbeddingCache.ignored` keeps them). The shard is then renamed
``unused-shard-...npz`` (`UNUSED_PREFIX`), so the next run neither reads it nor warns again.

Each `EmbeddingCache.put` writes one new shard, written to a temporary file in the same folder and renamed into place
(``os.replace``, atomic on POSIX), so a reader never sees a partial shard and several worker processes can write at
once without a lock (a key written twice is harmless: both copies hold the same vector). Readers index every shard's
keys and rescan the folder for shards written since, when asked for a key they do not know.

Folder: the ``folder`` argument, else ``$INGESTAUDIT_CACHE``, else ``~/.cache/ingestaudit/embeddings``
(`default_cache_folder`).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import time
import uuid
import warnings
import zipfile
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ingestaudit.errors import EmbeddingError
from ingestaudit.stages.embedders.base import Embedder, EmbedderError, as_unit_float32
from ingestaudit.warning_lines import first_in_run

CACHE_ENV = "INGESTAUDIT_CACHE"
DEFAULT_FOLDER = Path("~/.cache/ingestaudit/embeddings")
_LOADED_SHARDS = 64  # shards whose vectors are kept in memory (least recently used dropped first)
UNUSED_PREFIX = "unused-"
"""A shard found unusable is renamed ``unused-shard-...npz`` in its folder: out of the ``shard-*.npz`` scan."""


class EmbeddingCacheWarning(EmbeddingError, UserWarning):
    """A cache shard was not used (truncated, of another model or of another library version); its texts are
    embedded again. Issued with `warnings.warn`, never raised; the message names the file. Of the embedder family
    (`ingestaudit.errors.EmbeddingError`) so that ``-W error::ingestaudit.errors.IngestAuditError`` makes it fatal."""


def _recorded_dimension(mdir: Path) -> int | None:
    """The ``dimension`` the folder's model.json records (written with its first shard), or None when it cannot be
    read (then a shard's dimension is not checked against it)."""
    try:
        value = json.loads((mdir / "model.json").read_text(encoding="utf-8")).get("dimension")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def versions_text(versions: dict[str, str] | None) -> str:
    """The library versions as the cache records them: compact JSON with sorted keys (``"{}"`` for none)."""
    return json.dumps(dict(versions or {}), sort_keys=True, separators=(",", ":"))


def cache_dir_name(model_id: str, versions: dict[str, str] | None = None) -> str:
    """The folder name of one model identity: the first 16 hex digits of sha256(model_id), or of
    ``model_id + "\\0" + versions_text(versions)`` when ``versions`` is not empty."""
    text = model_id if not versions else f"{model_id}\0{versions_text(versions)}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def default_cache_folder(folder: str | os.PathLike[str] | None = None) -> Path:
    """``folder`` if given, else ``$INGESTAUDIT_CACHE`` if set and non-empty, else ``~/.cache/ingestaudit/embeddings``
    (user-expanded)."""
    if folder is not None and str(folder) != "":
        return Path(folder).expanduser()
    env = os.environ.get(CACHE_ENV, "")
    return Path(env).expanduser() if env else DEFAULT_FOLDER.expanduser()


def text_key(text: str) -> str:
    """sha256 hex digest of the text's UTF-8 bytes (lone surrogates passed through), 64 characters."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def write_atomically(path: Path, write, sync: bool = True) -> None:
    """``write(file_object)`` into a temporary file beside ``path``, fsync (when ``sync``), then ``os.replace`` onto
    ``path`` (a reader never sees a partial file). Raises OSError as writing does (the temporary file is removed)."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            if sync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class EmbeddingCache:
    """Vectors on disk keyed by (model id, library versions, `text_key`); see the module docstring.

    Args:
        folder: the cache folder (created on first write); None = `default_cache_folder`.
    """

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        self.folder = default_cache_folder(folder)
        self._index: dict[str, dict[str, tuple[str, int]]] = {}  # model dir -> key -> (shard, row)
        self._seen: dict[str, set[str]] = {}  # model dir -> shard names indexed
        self._dimensions: dict[str, int] = {}  # model dir -> the dimension its model.json records (once read)
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self.shards_written = 0
        self.ignored: dict[str, str] = {}  # shard path -> why it was not used (warned once each)

    def model_dir(self, model_id: str, versions: dict[str, str] | None = None) -> Path:
        """The folder holding the shards of ``model_id`` computed with the library ``versions`` (`cache_dir_name`)."""
        return self.folder / cache_dir_name(model_id, versions)

    def _ignore(self, path: Path, why: str) -> None:
        """Record a shard that is not used, move it aside (`UNUSED_PREFIX`: no later run reads it, warns about it
        or embeds its texts again because of it; it stays for inspection) and warn once per run, in all its processes
        (`EmbeddingCacheWarning`, `ingestaudit.warning_lines.first_in_run`) naming it and where it went. A shard
        that cannot be moved (a read-only cache) stays and is named again by the next run."""
        if str(path) in self.ignored:
            return
        self.ignored[str(path)] = why
        from ingestaudit.inputs import set_aside

        where = set_aside(path, UNUSED_PREFIX)
        if not first_in_run(f"cache-shard:{path}"):  # another process of this run (or this one) named it already
            return
        warnings.warn(f"embedding cache: {path}: {why}; not used ({where}), its texts are embedded again",
                      EmbeddingCacheWarning, stacklevel=4)

    def _read_shard(self, path: Path, model_id: str, versions: dict[str, str] | None) -> np.ndarray | None:
        """The keys of a usable shard (its vectors kept in memory), else None after `_ignore` says why. Only a
        regular file is opened (`lstat` first: a FIFO would block the run forever, a link could point anywhere)."""
        from ingestaudit.inputs import file_kind

        try:
            mode = os.lstat(path).st_mode
        except OSError as exc:
            self._ignore(path, f"cannot be examined ({type(exc).__name__}: {exc})")
            return None
        if stat.S_ISLNK(mode) or not stat.S_ISREG(mode):
            self._ignore(path, f"is {'a symbolic link' if stat.S_ISLNK(mode) else file_kind(mode)}, not a regular "
                               "file")
            return None
        try:
            with np.load(path, allow_pickle=False) as npz:
                keys, vectors = npz["keys"], np.asarray(npz["vectors"], dtype=np.float32)
                written_by = str(npz["model_id"]) if "model_id" in npz.files else None
                written_with = str(npz["versions"]) if "versions" in npz.files else None
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            self._ignore(path, f"unreadable, truncated or corrupt ({type(exc).__name__}: {exc})")
            return None
        if vectors.ndim != 2 or keys.ndim != 1 or len(keys) != len(vectors):
            self._ignore(path, f"{len(keys)} keys for vectors of shape {vectors.shape} (truncated or corrupt)")
            return None
        dimension = self._dimensions.get(path.parent.name)
        if dimension is None:  # read once per folder (not per shard); absent until the folder's first shard
            dimension = _recorded_dimension(path.parent)
            if dimension is not None:
                self._dimensions[path.parent.name] = dimension
        if dimension is not None and vectors.shape[1] != dimension:
            self._ignore(path, f"vectors of dimension {vectors.shape[1]}, the model's is {dimension} (model.json)")
            return None
        if not np.isfinite(vectors).all() or (len(vectors) and not np.any(vectors, axis=1).all()):
            self._ignore(path, "it holds a NaN, an infinity or an all-zero vector (no embedding is)")
            return None
        if written_by is None or written_with is None:
            self._ignore(path, "it records no model identity (written by an older ingestaudit)")
            return None
        if written_by != model_id:
            self._ignore(path, f"written by another model ({written_by}, not {model_id})")
            return None
        if written_with != versions_text(versions):
            self._ignore(path, f"written with other library versions ({written_with}, not "
                               f"{versions_text(versions)})")
            return None
        self._remember(path.parent.name, path.name, vectors)
        return keys

    def _remember(self, dir_name: str, shard: str, vectors: np.ndarray) -> None:
        self._vectors[(dir_name, shard)] = vectors
        self._vectors.move_to_end((dir_name, shard))
        while len(self._vectors) > _LOADED_SHARDS:
            self._vectors.popitem(last=False)

    def _refresh(self, mdir: Path, model_id: str, versions: dict[str, str] | None) -> dict[str, tuple[str, int]]:
        """Index the keys of shards not indexed yet (a shard that is not usable is ignored with a warning)."""
        name = mdir.name
        index = self._index.setdefault(name, {})
        seen = self._seen.setdefault(name, set())
        if not mdir.is_dir():
            return index
        for shard in sorted(p.name for p in mdir.glob("shard-*.npz")):
            if shard in seen:
                continue
            seen.add(shard)
            keys = self._read_shard(mdir / shard, model_id, versions)
            if keys is None:
                continue
            for row, key in enumerate(keys.tolist()):
                index.setdefault(key, (shard, row))
        return index

    def _shard_vectors(self, mdir: Path, shard: str) -> np.ndarray:
        slot = (mdir.name, shard)
        if slot in self._vectors:
            self._vectors.move_to_end(slot)
            return self._vectors[slot]
        with np.load(mdir / shard, allow_pickle=False) as npz:  # checked whole when indexed (`_read_shard`)
            vectors = np.asarray(npz["vectors"], dtype=np.float32)
        self._remember(mdir.name, shard, vectors)
        return vectors

    def get_many(self, model_id: str, keys: Sequence[str],
                 versions: dict[str, str] | None = None) -> dict[str, np.ndarray]:
        """The cached vectors among ``keys`` (text hashes) of the identity (``model_id``, ``versions``), as
        ``key -> float32 (d,)``; absent keys are left out, and so are the keys of a shard that is not usable (see
        the module docstring: one `EmbeddingCacheWarning` names it)."""
        mdir = self.model_dir(model_id, versions)
        index = self._index.get(mdir.name)
        if index is None or any(k not in index for k in keys):
            index = self._refresh(mdir, model_id, versions)
        out: dict[str, np.ndarray] = {}
        for key in keys:
            hit = index.get(key)
            if hit is not None and key not in out:
                out[key] = self._shard_vectors(mdir, hit[0])[hit[1]]
        return out

    def put(self, model_id: str, keys: Sequence[str], vectors: np.ndarray,
            versions: dict[str, str] | None = None) -> Path | None:
        """Store ``vectors[i]`` under ``keys[i]`` as one new shard of the identity (``model_id``, ``versions``),
        written atomically with that identity inside; returns its path (None when ``keys`` is empty).

        Raises:
            EmbedderError: ``len(keys) != len(vectors)`` or vectors are not 2-D.
            OSError: the folder cannot be written.
        """
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(keys) != vectors.shape[0]:
            raise EmbedderError(f"cache: {len(keys)} keys for vectors of shape {vectors.shape}")
        if not keys:
            return None
        mdir = self.model_dir(model_id, versions)
        mdir.mkdir(parents=True, exist_ok=True)
        meta = mdir / "model.json"
        if not meta.exists():
            payload = json.dumps({"model_id": model_id, "versions": dict(versions or {}),
                                  "dimension": int(vectors.shape[1])}).encode("utf-8")
            write_atomically(meta, lambda fh: fh.write(payload))
        shard = mdir / f"shard-{time.time_ns()}-{os.getpid()}-{uuid.uuid4().hex[:8]}.npz"
        key_array = np.asarray(list(keys), dtype="U64")
        write_atomically(shard, lambda fh: np.savez(fh, keys=key_array, vectors=vectors, model_id=np.str_(model_id),
                                                     versions=np.str_(versions_text(versions))))
        self.shards_written += 1
        index = self._index.setdefault(mdir.name, {})
        self._seen.setdefault(mdir.name, set()).add(shard.name)
        for row, key in enumerate(key_array.tolist()):
            index.setdefault(key, (shard.name, row))
        self._remember(mdir.name, shard.name, vectors)
        return shard


class CachedEmbedder(Embedder):
    """An `Embedder` that answers from an `EmbeddingCache` and embeds only the texts it has not seen.

    Everything but `embed` is delegated to the wrapped embedder. `embed` hashes each text (`text_key`), takes the
    cached vectors of ``(embedder.model_id(), embedder.library_versions(), key)`` (neither loads the model), embeds
    the distinct missing texts in ONE call of the wrapped embedder (so its own length-sorted batching applies to all
    of them), stores them as one shard, and returns the vectors in input order.

    Counters (`stats`): ``texts`` requested, ``hits`` (texts answered from the cache), ``misses`` (distinct texts
    embedded), ``calls`` (calls of the wrapped embedder), ``tokens_embedded`` (word pieces the model read for the
    missed texts: ``min(count_tokens, max_seq_length - special_tokens)`` each, special tokens excluded),
    ``cache_write_errors`` (shards that could not be written: the vectors are still returned; ``last_cache_error``
    says why, and ONE `EmbeddingCacheWarning` per folder per run names the folder and the OS error).
    """

    def __init__(self, embedder: Embedder, cache: EmbeddingCache) -> None:
        self.inner = embedder
        self.cache = cache
        self.name = embedder.name  # type: ignore[misc]
        self._model_id: str | None = None
        self._versions: dict[str, str] | None = None
        self.counts = {"texts": 0, "hits": 0, "misses": 0, "calls": 0, "tokens_embedded": 0, "cache_write_errors": 0}
        self.last_cache_error: str | None = None

    def model_id(self) -> str:
        if self._model_id is None:
            self._model_id = self.inner.model_id()
        return self._model_id

    def library_versions(self) -> dict[str, str]:
        if self._versions is None:
            self._versions = dict(self.inner.library_versions())
        return self._versions

    def dimension(self) -> int:
        return self.inner.dimension()

    def max_seq_length(self) -> int:
        return self.inner.max_seq_length()

    def special_tokens(self) -> int:
        return self.inner.special_tokens()

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.inner.count_tokens(texts)

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        return self.inner.token_offsets(text)

    def check(self) -> None:
        self.inner.check()

    def preflight(self) -> None:
        self.inner.preflight()

    def version(self) -> str:
        return self.inner.version()

    def settings(self) -> dict[str, Any]:
        """The wrapped embedder's settings plus ``cache: "on"`` (the folder is machine-specific and left out)."""
        return {**self.inner.settings(), "cache": "on"}

    def stats(self) -> dict[str, int]:
        """A copy of the counters (see the class docstring)."""
        return dict(self.counts)

    def would_compute(self, texts: Sequence[str]) -> list[int]:
        """Per text, 1 when `embed` of ``texts`` would compute its vector now (the first occurrence of a text not in
        the cache), else 0 (a cache hit or a repeat); reads the cache only, embeds nothing."""
        keys = [text_key(t) for t in texts]
        found = self.cache.get_many(self.model_id(), keys, self.library_versions())  # embed's identity
        seen: set[str] = set()
        out = []
        for key in keys:
            out.append(0 if key in found or key in seen else 1)
            seen.add(key)
        return out

    def _warn_unwritable(self, exc: OSError) -> None:
        """ONE `EmbeddingCacheWarning` per cache folder per run (in all its processes: `first_in_run`) naming the
        folder and the OS error of the first shard that could not be written; the run goes on uncached."""
        folder = self.cache.folder
        if first_in_run(f"cache-write:{folder}"):
            why = f"{type(exc).__name__}: {exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else "")
            warnings.warn(f"embedding cache: {folder}: cannot be written ({why}); vectors are computed but not "
                          "cached, so the next run embeds them again", EmbeddingCacheWarning, stacklevel=3)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 ``(len(texts), d)`` unit vectors, from the cache where possible (see the class docstring).

        Raises:
            EmbedderError: a text is not a string, or the wrapped embedder returned the wrong shape.
            EmbedderUnavailable: the model does not load (only when something is missing from the cache).
        """
        texts = list(texts)
        if not all(isinstance(t, str) for t in texts):
            raise EmbedderError(f"{self.name}: every input must be a string")
        d = self.dimension()
        self.counts["texts"] += len(texts)
        if not texts:
            return np.zeros((0, d), dtype=np.float32)
        keys = [text_key(t) for t in texts]
        mid = self.model_id()
        versions = self.library_versions()
        found = self.cache.get_many(mid, keys, versions)
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts):
            if key not in found and key not in missing:
                missing[key] = text
        self.counts["hits"] += sum(1 for k in keys if k in found)
        if missing:
            new_texts = list(missing.values())
            new = as_unit_float32(self.inner.embed(new_texts), len(new_texts), d, self.name)
            self.counts["calls"] += 1
            self.counts["misses"] += len(new_texts)
            room = max(self.max_seq_length() - self.special_tokens(), 0)
            self.counts["tokens_embedded"] += sum(min(n, room) for n in self.count_tokens(new_texts))
            try:
                self.cache.put(mid, list(missing), new, versions)
            except OSError as exc:  # an unwritable cache slows later runs but does not change any vector
                self.counts["cache_write_errors"] += 1
                self.last_cache_error = f"{self.cache.folder}: {exc.strerror or exc}"
                self._warn_unwritable(exc)
            found.update(zip(missing, new))
        out = np.empty((len(texts), d), dtype=np.float32)
        for i, key in enumerate(keys):
            out[i] = found[key]
        return out
