"""Per-document state of a run kept on disk instead of in memory (issue 14: memory flat in corpus size).

* `TruthSpill`: every document's loaded truth, pickled once into one file in corpus order and read back when its
  tasks are built (a `Mapping` from document id to `ingestaudit.truth.Truth`), so the main process holds about 20
  bytes per document (its offset and size) instead of every reference text and label.
* `VectorSpill`: a pipeline's chunk vectors as they arrive from the workers (arrival order), rewritten once into
  corpus order in one float32 file and handed to the index and retrieval stages as memory-mapped views
  (`numpy.memmap`, copy-on-write: a stage that normalises in place gets its own pages).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np


class TruthSpill(Mapping[str, Any]):
    """Document id -> truth, pickled to ``path`` (`add`) and unpickled on each read.

    A truth that cannot be pickled (a label nested too deeply) stays in memory and `add` returns why: its tasks
    cannot be sent to a worker either, and the runner makes them ``error`` rows.
    """

    def __init__(self, path: Path) -> None:
        from array import array

        self.path = Path(path)
        self._fh = open(self.path, "w+b")
        self._ids: list[str] = []  # in the order added (corpus order: sorted, so a lookup is a bisection)
        self._off = array("q")
        self._size = array("q")
        self._sorted = True
        self._index: dict[str, int] | None = None  # only when ids come unsorted
        self._kept: dict[str, Any] = {}
        self._dirty = False

    def add(self, doc_id: str, truth: Any) -> str:
        """Store one document's truth; returns ``""``, or ``"Type: message"`` when it does not pickle."""
        try:
            data = pickle.dumps(truth, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # RecursionError, PicklingError, TypeError, AttributeError...
            self._kept[doc_id] = truth
            return f"{type(exc).__name__}: {exc}"
        if self._ids and doc_id <= self._ids[-1]:
            self._sorted = False
        self._off.append(self._fh.seek(0, os.SEEK_END))
        self._size.append(len(data))
        self._fh.write(data)
        self._ids.append(doc_id)
        self._index = None
        self._dirty = True
        return ""

    def _find(self, doc_id: str) -> int:
        if self._sorted:
            from bisect import bisect_left

            i = bisect_left(self._ids, doc_id)
            if i < len(self._ids) and self._ids[i] == doc_id:
                return i
            raise KeyError(doc_id)
        if self._index is None:
            self._index = {d: i for i, d in enumerate(self._ids)}
        return self._index[doc_id]

    def __getitem__(self, doc_id: str) -> Any:
        if doc_id in self._kept:
            return self._kept[doc_id]
        i = self._find(doc_id)
        if self._dirty:
            self._fh.flush()
            self._dirty = False
        return pickle.loads(os.pread(self._fh.fileno(), self._size[i], self._off[i]))

    def __iter__(self) -> Iterator[str]:
        yield from self._ids
        yield from self._kept

    def __len__(self) -> int:
        return len(self._ids) + len(self._kept)

    def __contains__(self, doc_id: object) -> bool:
        if doc_id in self._kept:
            return True
        try:
            self._find(doc_id)  # type: ignore[arg-type]
        except (KeyError, TypeError):
            return False
        return True

    def close(self) -> None:
        """Close the file (the folder it is in is removed with the run's private folder)."""
        self._fh.close()


class VectorSpill:
    """One pipeline's chunk vectors (`ingestaudit.chain.DocChunks.vectors`) on disk.

    `add` writes a document's vectors to ``folder/<name>.arrival.f32`` as they arrive and returns its `DocChunks`
    without them; `canonical` writes them again in corpus order into ``folder/<name>.f32`` and returns every
    document's `DocChunks` with its vectors as a view of that one memory-mapped file, so the stages read one
    contiguous array in the order of the corpus whatever the order the workers finished in. A document whose vectors
    have another width or dtype than the first keeps them in memory.
    """

    def __init__(self, folder: Path, name: str) -> None:
        self.folder = Path(folder)
        self.name = name
        self.folder.mkdir(parents=True, exist_ok=True)
        self.arrival = self.folder / f"{name}.arrival.f32"
        self._fh: Any = None
        self.dim: int | None = None
        self.rows = 0
        self._at: dict[int, tuple[int, int]] = {}  # document index -> (first row in the arrival file, rows)

    def add(self, index: int, doc: Any) -> Any:
        """Spill the vectors of document ``index`` (position in the corpus); returns ``doc`` without them."""
        v = doc.vectors
        if v is None:
            return doc
        arr = np.asarray(v)
        if arr.ndim != 2 or arr.dtype != np.float32 or (self.dim is not None and arr.shape[1] != self.dim):
            return doc  # not the shape the others have: stays in memory
        if self.dim is None:
            self.dim = int(arr.shape[1])
        if self._fh is None:
            self._fh = open(self.arrival, "wb")
        self._fh.write(np.ascontiguousarray(arr).tobytes())
        self._at[index] = (self.rows, int(arr.shape[0]))
        self.rows += int(arr.shape[0])
        return replace(doc, vectors=None)

    def canonical(self, docs: list[tuple[int, Any]]) -> list[Any]:
        """``docs`` (``(index, DocChunks)``, any order) in corpus order, with their spilled vectors back as views of
        one memory-mapped float32 file in that order."""
        ordered = sorted(docs, key=lambda t: t[0])
        if self._fh is None:
            return [d for _, d in ordered]
        self._fh.close()
        self._fh = None
        if not self.rows:
            return [d for _, d in ordered]
        path = self.folder / f"{self.name}.f32"
        out = np.memmap(path, dtype=np.float32, mode="w+", shape=(self.rows, self.dim))
        src = np.memmap(self.arrival, dtype=np.float32, mode="r", shape=(self.rows, self.dim))
        place: dict[int, tuple[int, int]] = {}
        row = 0
        for index, _ in ordered:
            if index in self._at:
                first, n = self._at[index]
                out[row:row + n] = src[first:first + n]
                place[index] = (row, n)
                row += n
        out.flush()
        del out, src
        self.arrival.unlink(missing_ok=True)
        view = np.memmap(path, dtype=np.float32, mode="c", shape=(self.rows, self.dim))
        return [replace(d, vectors=view[place[i][0]:place[i][0] + place[i][1]]) if i in place else d
                for i, d in ordered]
