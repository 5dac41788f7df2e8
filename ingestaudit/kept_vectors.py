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
    """True when ``folder`` holds a kept-vector manifest."""
    return (Path(folder) / MANIFEST).is_file()


def read_kept(folder: Path, limits: Any = None) -> dict[str, KeptRun]:
    """The kept vectors of the report in ``folder``, by pipeline name; every file through
    `ingestaudit.inputs` (regular files only, each within ``limits.vectors_bytes`` / ``limits.results_bytes``;
    default limits `ingestaudit.config.Limits`).

    Raises:
        KeptVectorsError: a missing, oversized or malformed file, or an array whose shape disagrees with its
            manifest (the message names the file).
    """
    import pyarrow.parquet as pq

    from ingestaudit.config import Limits
    from ingestaudit.inputs import InputFileError, check_input_file, read_input_text

    limits = limits if limits is not None else Limits()
    folder = Path(folder)
    try:
        manifest = json.loads(read_input_text(folder / MANIFEST, max_bytes=limits.results_bytes,
                                              limit="limits.results_bytes"))
        entries = manifest["pipelines"]
        check_input_file(folder / KEYS, max_bytes=limits.results_bytes, limit="limits.results_bytes")
        keys = pq.read_table(folder / KEYS).to_pydict()
    except InputFileError as exc:
        raise KeptVectorsError(str(exc)) from None
    except (ValueError, KeyError, TypeError, OSError) as exc:
        raise KeptVectorsError(f"{folder / MANIFEST}: unreadable kept vectors ({type(exc).__name__}: {exc})") from None
    by_pipe: dict[int, list[tuple[int, tuple[str, int, int]]]] = {}
    for p, r, d, c, s, e in zip(keys["pipeline"], keys["row"], keys["doc"], keys["chunk"], keys["start"],
                                keys["end"]):
        key = (str(d), int(s), int(e)) if s >= 0 else (str(d), -1, -1 - int(c))
        by_pipe.setdefault(int(p), []).append((int(r), key))
    out: dict[str, KeptRun] = {}
    for entry in entries:
        try:
            p = int(re.fullmatch(r"vectors-(\d+)\.npy", entry["chunks"]).group(1))
            arrays = []
            for name in (entry["chunks"], entry["questions"]):
                if not KEPT_NAME.match(name):
                    raise ValueError(f"file name {name!r} is not a kept-vector file")
                check_input_file(folder / name, max_bytes=limits.vectors_bytes, limit="limits.vectors_bytes")
                arrays.append(np.load(folder / name, mmap_mode="r", allow_pickle=False))
        except InputFileError as exc:
            raise KeptVectorsError(str(exc)) from None
        except (ValueError, KeyError, TypeError, AttributeError, OSError) as exc:
            raise KeptVectorsError(f"{folder / MANIFEST}: pipeline entry unusable ({type(exc).__name__}: {exc})"
                                   ) from None
        vectors, questions = arrays
        rows = [k for _, k in sorted(by_pipe.get(p, []))]
        if vectors.ndim != 2 or vectors.dtype != np.float32 or len(rows) != vectors.shape[0]:
            raise KeptVectorsError(f"{folder / entry['chunks']}: {vectors.shape} {vectors.dtype}, expected float32 "
                                   f"({len(rows)}, d) as {KEYS} lists")
        if questions.ndim != 2 or questions.shape[0] != len(entry.get("question_ids", [])):
            raise KeptVectorsError(f"{folder / entry['questions']}: {questions.shape} does not match the manifest's "
                                   f"{len(entry.get('question_ids', []))} question ids")
        out[str(entry["pipeline"])] = KeptRun(str(entry["pipeline"]), vectors, rows, list(entry["question_ids"]),
                                              questions, dict(entry.get("embedder") or {}),
                                              int(entry.get("dimension", vectors.shape[1])))
    return out
