"""A run's kept vectors (``ingestaudit run --keep-vectors``): each pipeline's chunk and question vectors beside
report.json, so that a later ``compare`` or ``run --baseline`` can measure embedding drift between the two runs
(`ingestaudit.embedding_drift`).

Files in the report folder (flat, so that `ingestaudit.io.write_report` commits them with the report):

- ``vectors.json``: the manifest ``{"version": 1, "pipelines": [entry...]}``, one entry per pipeline in report order:
  ``{"pipeline", "chunks": "vectors-<p>.npy", "questions": "vectors-<p>-questions.npy", "rows", "question_ids",
  "dimension", "embedder": {"implementation", "version", "settings"}}`` (``<p>`` the pipeline's position).
- ``vectors-<p>.npy``: float32 ``(rows, dimension)``, the chunk vectors in corpus order (L2-normalised, as the run's
  index held them), read back memory-mapped.
- ``vectors-<p>-questions.npy``: float32 ``(len(question_ids), dimension)``, the questions embedded by the
  pipeline's embedder.
- ``vectors-keys.parquet``: one row per chunk vector, columns ``pipeline`` (position), ``row``, ``doc``, ``chunk``
  (its ordinal in the document), ``start``, ``end``: the chunk's located ``[start, end)`` in the document's cleaned
  text (``-1, -1`` when it was not located; read back, such a chunk's key is ``(doc, -1, -1 - chunk)``, so it is
  named by its ordinal instead).

Nothing here is a measurement: report.json gains a ``details`` entry (stage ``embedding``, name ``kept_vectors``) per
pipeline only when the switch is on, so a report without it is byte for byte what it was.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ingestaudit.errors import IngestAuditError
from ingestaudit.report.provenance import KEPT_VECTOR_FILE

MANIFEST = "vectors.json"
KEYS = "vectors-keys.parquet"
KEPT_NAME = KEPT_VECTOR_FILE


def is_kept_file(name: str) -> bool:
    """True for a kept-vector file name (`KEPT_NAME`)."""
    return bool(KEPT_NAME.match(name))


def kept_files(folder: Path) -> list[str]:
    """The kept-vector file names present in ``folder`` (sorted; none when it does not exist)."""
    try:
        return sorted(n for n in (p.name for p in Path(folder).iterdir()) if is_kept_file(n))
    except OSError:
        return []


class KeptVectorsError(IngestAuditError, ValueError):
    """A baseline's kept vectors cannot be used; the message names the file and why."""


class VectorKeeper:
    """Writes the kept vectors of one run into ``folder`` (the run's private folder; `ingestaudit.io.write_report`
    moves the files beside report.json). `add` once per pipeline, then `finish`."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.entries: list[dict[str, Any]] = []
        self.keys: dict[str, list] = {"pipeline": [], "row": [], "doc": [], "chunk": [], "start": [], "end": []}

    def add(self, p: int, name: str, docs: Sequence[Any], question_ids: Sequence[str], question_vectors: Any,
            embedder: dict[str, Any]) -> dict[str, Any]:
        """Write pipeline ``p``'s chunk vectors (``docs``: `ingestaudit.chain.DocChunks`, those with vectors, in
        corpus order) and question vectors; returns its manifest entry.

        Raises:
            ValueError: the vectors have several dimensions (nothing of this pipeline is kept).
        """
        with_vectors = [d for d in docs if d.vectors is not None and len(d.vectors)]
        rows = sum(len(d.vectors) for d in with_vectors)
        dims = {int(d.vectors.shape[1]) for d in with_vectors}
        qv = np.asarray(question_vectors, dtype=np.float32) if question_vectors is not None else None
        if qv is not None and qv.ndim == 2 and qv.shape[0]:
            dims.add(int(qv.shape[1]))
        if len(dims) > 1:
            raise ValueError(f"pipeline {name!r}: vectors of several dimensions {sorted(dims)}; none kept")
        dim = dims.pop() if dims else 0
        chunks, questions = f"vectors-{p}.npy", f"vectors-{p}-questions.npy"
        out = np.lib.format.open_memmap(self.folder / chunks, mode="w+", dtype=np.float32, shape=(rows, dim))
        at = 0
        for d in with_vectors:
            n = len(d.vectors)
            out[at:at + n] = d.vectors
            for i in range(n):
                span = d.intervals[i] if i < len(d.intervals) else None
                self.keys["pipeline"].append(p)
                self.keys["row"].append(at + i)
                self.keys["doc"].append(d.doc_id)
                self.keys["chunk"].append(i)
                self.keys["start"].append(span[0] if span else -1)
                self.keys["end"].append(span[1] if span else -1)
            at += n
        out.flush()
        del out
        np.save(self.folder / questions, qv if qv is not None and qv.size else np.zeros((0, dim), np.float32))
        entry = {"pipeline": name, "chunks": chunks, "questions": questions, "rows": rows,
                 "question_ids": list(question_ids) if qv is not None and qv.size else [], "dimension": dim,
                 "embedder": embedder}
        self.entries.append(entry)
        return entry

    def finish(self) -> list[str]:
        """Write the key table and the manifest; returns every file written."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table({"pipeline": pa.array(self.keys["pipeline"], pa.int32()),
                          "row": pa.array(self.keys["row"], pa.int64()),
                          "doc": pa.array(self.keys["doc"], pa.string()),
                          "chunk": pa.array(self.keys["chunk"], pa.int64()),
                          "start": pa.array(self.keys["start"], pa.int64()),
                          "end": pa.array(self.keys["end"], pa.int64())})
        pq.write_table(table, self.folder / KEYS)
        (self.folder / MANIFEST).write_text(json.dumps({"version": 1, "pipelines": self.entries}, indent=1,
                                                       sort_keys=True) + "\n", encoding="utf-8")
        return [MANIFEST, KEYS] + [f for e in self.entries for f in (e["chunks"], e["questions"])]


@dataclass
class KeptRun:
    """One pipeline's kept vectors read back.

    Attributes:
        pipeline: its name; vectors: float32 (rows, d), memory-mapped; keys: ``(doc, start, end)`` per row
        (``(doc, -1, -1 - ordinal)`` for a chunk that was not located);
        question_ids / questions: the question vectors (q, d); embedder: the manifest's embedder identity;
        dimension: d.
    """

    pipeline: str
    vectors: np.ndarray
    keys: list[tuple[str, int, int]]
    question_ids: list[str]
    questions: np.ndarray
    embedder: dict[str, Any]
    dimension: int


def has_kept_vectors(folder: Path) -> bool:
    """True when ``folder`` holds something named like a kept-vector manifest (a FIFO or a link included: it is then
    read, and refused by name, not taken for "no vectors kept")."""
    import os

    return os.path.lexists(Path(folder) / MANIFEST)


VERSION = 1
"""The manifest's ``version`` this module writes and reads."""

_KEY_TYPES = {"pipeline": "integer", "row": "integer", "doc": "string", "chunk": "integer", "start": "integer",
              "end": "integer"}
_FINITE_BLOCK = 65536  # rows checked for NaN/infinity at a time (bounded memory on a memory-mapped file)


def _manifest(path: Path, limits: Any) -> list[dict[str, Any]]:
    """The manifest's pipeline entries, its version and shape checked; `KeptVectorsError` naming the field."""
    from ingestaudit.inputs import read_input_text
    from ingestaudit.jsonlimits import loads_limited

    try:
        raw, problems = loads_limited(read_input_text(path, max_bytes=limits.results_bytes,
                                                      limit="limits.results_bytes"))
    except RecursionError:
        raise KeptVectorsError(f"{path}: <file>: JSON nested too deeply") from None
    except ValueError as exc:
        raise KeptVectorsError(f"{path}: not JSON ({exc})") from None
    if problems:
        raise KeptVectorsError(f"{path}: {problems[0].field or '<file>'}: {problems[0].message}")
    if not isinstance(raw, dict):
        raise KeptVectorsError(f"{path}: <file>: a JSON object expected, not {type(raw).__name__}")
    if raw.get("version") != VERSION or isinstance(raw.get("version"), bool):
        raise KeptVectorsError(f"{path}: version: {raw.get('version')!r}, this ingestaudit reads version {VERSION}")
    entries = raw.get("pipelines")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise KeptVectorsError(f"{path}: pipelines: a list of objects expected")
    return entries


def _key_rows(path: Path, limits: Any) -> dict[int, list[tuple[str, int, int]]]:
    """The key table by pipeline position, rows in order; `KeptVectorsError` naming the column: a column missing,
    of the wrong type or with nulls; a pipeline's ``row`` values not exactly 0..n-1 (negative, duplicate, missing);
    a ``start``/``end`` pair neither ``-1, -1`` nor ``0 <= start <= end``; a negative ``chunk``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ingestaudit.inputs import check_input_file

    check_input_file(path, max_bytes=limits.results_bytes, limit="limits.results_bytes")
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, ValueError, OSError) as exc:
        raise KeptVectorsError(f"{path}: not a Parquet key table ({type(exc).__name__}: {exc})") from None
    for name, kind in _KEY_TYPES.items():
        if name not in table.column_names:
            raise KeptVectorsError(f"{path}: column {name!r} missing (the key table has {', '.join(_KEY_TYPES)})")
        col = table.column(name)
        ok = pa.types.is_integer(col.type) if kind == "integer" else \
            (pa.types.is_string(col.type) or pa.types.is_large_string(col.type))
        if not ok:
            raise KeptVectorsError(f"{path}: column {name!r}: {col.type}, {kind} expected")
        if col.null_count:
            raise KeptVectorsError(f"{path}: column {name!r}: {col.null_count} null value(s)")
    keys = table.to_pydict()
    by_pipe: dict[int, list[tuple[int, tuple[str, int, int]]]] = {}
    for p, r, d, c, s, e in zip(keys["pipeline"], keys["row"], keys["doc"], keys["chunk"], keys["start"],
                                keys["end"]):
        if c < 0:
            raise KeptVectorsError(f"{path}: column 'chunk': {c} (pipeline {p}, row {r}) is negative")
        if not ((s == -1 and e == -1) or 0 <= s <= e):
            raise KeptVectorsError(f"{path}: columns 'start', 'end': [{s}, {e}) (pipeline {p}, row {r}) is neither "
                                   "-1, -1 (not located) nor 0 <= start <= end")
        by_pipe.setdefault(int(p), []).append((int(r), (str(d), int(s), int(e)) if s >= 0 else (str(d), -1, -1 - c)))
    out = {}
    for p, rows in by_pipe.items():
        rows.sort()
        if [r for r, _ in rows] != list(range(len(rows))):
            bad = next(r for i, (r, _) in enumerate(rows) if r != i)
            raise KeptVectorsError(f"{path}: column 'row': pipeline {p}'s rows are not 0..{len(rows) - 1} once each "
                                   f"(row {bad}: negative, given twice or out of order)")
        out[p] = [k for _, k in rows]
    return out


def _array(path: Path, field: str, rows: int, dim: int, limits: Any) -> np.ndarray:
    """The float32 ``(rows, dim)`` array at ``path``, memory-mapped, every value finite; `KeptVectorsError` naming
    the file and the manifest field that lists it."""
    from ingestaudit.inputs import check_input_file

    check_input_file(path, max_bytes=limits.vectors_bytes, limit="limits.vectors_bytes")
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise KeptVectorsError(f"{path} ({field}): not a NumPy array file ({type(exc).__name__}: {exc})") from None
    if not isinstance(arr, np.ndarray) or arr.dtype != np.float32 or arr.shape != (rows, dim):
        raise KeptVectorsError(f"{path} ({field}): {getattr(arr, 'shape', '?')} {getattr(arr, 'dtype', '?')}, "
                               f"expected float32 ({rows}, {dim}) as the manifest and {KEYS} say")
    for at in range(0, rows, _FINITE_BLOCK):
        bad = np.flatnonzero(~np.isfinite(arr[at:at + _FINITE_BLOCK]).all(axis=1))
        if bad.size:
            raise KeptVectorsError(f"{path} ({field}): row {at + int(bad[0])} holds NaN or infinity")
    return arr


def read_kept(folder: Path, limits: Any = None) -> dict[str, KeptRun]:
    """The kept vectors of the report in ``folder``, by pipeline name; every file through
    `ingestaudit.inputs` (regular files only, each within ``limits.vectors_bytes`` / ``limits.results_bytes``;
    default limits `ingestaudit.config.Limits`).

    Raises:
        KeptVectorsError: the message names the file and the field: a missing, oversized, non-regular or malformed
            file; a manifest of another ``version``, too deeply nested, or whose ``pipelines[i].chunks`` /
            ``.questions`` is not a kept-vector file name of this folder (``../`` refused); a key table with a
            column missing, mistyped or null, rows not 0..n-1, or offsets neither -1, -1 nor 0 <= start <= end; an
            array that is not float32 of the shape its manifest and key table give; a NaN or an infinity in one.
    """
    from ingestaudit.config import Limits
    from ingestaudit.inputs import InputFileError

    limits = limits if limits is not None else Limits()
    folder = Path(folder)
    try:
        entries = _manifest(folder / MANIFEST, limits)
        by_pipe = _key_rows(folder / KEYS, limits)
        out: dict[str, KeptRun] = {}
        for i, entry in enumerate(entries):
            field = f"{folder / MANIFEST}: pipelines[{i}]"
            chunks, questions, qids = entry.get("chunks"), entry.get("questions"), entry.get("question_ids", [])
            m = re.fullmatch(r"vectors-(\d+)\.npy", chunks) if isinstance(chunks, str) else None
            if m is None:
                raise KeptVectorsError(f"{field}.chunks: {chunks!r} is not a kept-vector file name (vectors-<p>.npy)")
            p = int(m.group(1))
            if questions != f"vectors-{p}-questions.npy":
                raise KeptVectorsError(f"{field}.questions: {questions!r}, expected 'vectors-{p}-questions.npy'")
            if not isinstance(entry.get("pipeline"), str):
                raise KeptVectorsError(f"{field}.pipeline: a pipeline name expected")
            if not isinstance(qids, list) or not all(isinstance(q, str) for q in qids):
                raise KeptVectorsError(f"{field}.question_ids: a list of question ids expected")
            dim = entry.get("dimension")
            if not isinstance(dim, int) or isinstance(dim, bool) or dim < 0:
                raise KeptVectorsError(f"{field}.dimension: {dim!r}, a whole number >= 0 expected")
            rows = by_pipe.get(p, [])
            vectors = _array(folder / chunks, f"pipelines[{i}].chunks", len(rows), dim, limits)
            qv = _array(folder / questions, f"pipelines[{i}].questions", len(qids), dim, limits)
            out[entry["pipeline"]] = KeptRun(entry["pipeline"], vectors, rows, list(qids), qv,
                                             dict(entry.get("embedder") or {}) if isinstance(entry.get("embedder"),
                                                                                             dict) else {}, dim)
    except InputFileError as exc:
        raise KeptVectorsError(str(exc)) from None
    return out
