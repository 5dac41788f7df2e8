"""The columnar measurement store (issue 14): ``measurements.parquet``, one row per item x pipeline x stage x metric x
label, byte-identical for identical runs (DESIGN.md, "Report contract").

Rows are written as items finish (`StoreWriter.append`: a spill file in arrival order, in row groups of at most
``buffer_rows`` rows, so the run never holds all rows), then sorted into their canonical order under a memory limit
(`StoreWriter.finalize`: DuckDB ``ORDER BY`` with ``memory_limit`` and a temporary folder, streamed back as Arrow
batches) and written with fixed settings (zstd, format 2.6, `ROW_GROUP` rows per group, no stored schema). The
canonical order is ``(item_kind, item, pipeline rank, stage, metric, label)``, ties broken by the producer
(``src``: 0 for a task, then the corpus and pipeline stages in order) and the position in its list (``seq``), which
is exactly the order of a stable sort of the rows as the runner produced them. So the bytes depend only on the rows:
`write_measurements` of the sorted rows gives the same file (a test checks it).

Readers: `iter_batches` (pyarrow batches, optionally filtered, in file order) and `read_measurements` (small
stores, tests).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ingestaudit.errors import IngestAuditError

STORE_NAME = "measurements.parquet"
COLUMNS = ("item", "item_kind", "class", "pipeline", "stage", "metric", "label", "value", "numerator", "denominator",
           "state", "detail", "parser")
ADDED_COLUMNS = {"parser": ""}
"""Columns a store written before them lacks (``parser``: report schema 2.2), and the value `iter_batches` reads there
(a store of an older run is read as it was, never refused)."""
ADDED_IN = {"parser": (2, 2)}
"""The report schema version (major, minor) from which each of `ADDED_COLUMNS` is required in a store."""
ROW_GROUP = 50_000
SPILL_ROWS = 20_000
"""Rows buffered in memory before they are written to the spill file as one row group."""
SORT_MEMORY = ("64MB", "256MB", "1GB")
"""DuckDB's memory limits while sorting the spill file (it spills to its temporary folder beyond them), tried in
turn when a sort runs out of memory (large details need larger sort blocks); the result is the same bytes."""
SORT_KEYS = ("k_kind", "k_item", "k_pipe", "stage", "metric", "label", "src", "seq")


def store_schema() -> Any:
    """The store's pyarrow schema: `COLUMNS`, text columns ``string``, ``value``, ``numerator`` and ``denominator``
    ``double`` (readers check a store against it: `ingestaudit.report.integrity.check_store`)."""
    import pyarrow as pa

    text = pa.string()
    return pa.schema([("item", text), ("item_kind", text), ("class", text), ("pipeline", text), ("stage", text),
                      ("metric", text), ("label", text), ("value", pa.float64()), ("numerator", pa.float64()),
                      ("denominator", pa.float64()), ("state", text), ("detail", text), ("parser", text)])


def _spill_schema() -> Any:
    import pyarrow as pa

    return store_schema().append(pa.field("k_pipe", pa.int32())).append(pa.field("src", pa.int32())).append(
        pa.field("seq", pa.int64()))


def detail_json(detail: Any) -> str:
    """A row's detail as the store holds it: canonical JSON (keys sorted, no spaces, no NaN)."""
    return json.dumps(detail, sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def record(row: Any) -> tuple:
    """One row (`MeasurementRow` or `ingestaudit.measurement.Measurement`) as the store holds it: a tuple in `COLUMNS`
    order, the state as its name and the detail as canonical JSON (`detail_json`). Workers make these, so the main
    process only moves them to the store."""
    state = row.state
    return (row.item, row.item_kind, row.doc_class, row.pipeline, row.stage, row.metric, row.label, row.value,
            row.numerator, row.denominator, state if isinstance(state, str) else state.value, detail_json(row.detail),
            row.parser)


def _record(row: Any) -> dict[str, Any]:
    return dict(zip(COLUMNS, record(row)))


def _writer(path: Path) -> Any:
    import pyarrow.parquet as pq

    return pq.ParquetWriter(path, store_schema(), compression="zstd", version="2.6", write_statistics=True,
                            store_schema=False)


def write_measurements(rows: Iterable[Any], path: Path, *, row_group: int = ROW_GROUP) -> str:
    """Write ``rows`` (`MeasurementRow`s or `ingestaudit.measurement.Measurement`s, already in their canonical
    order) to ``path`` in row groups of ``row_group`` rows, atomically (a temporary file renamed into place), and
    return the file's SHA-256.

    The bytes depend only on the rows (and the pyarrow version, which the file names): no timestamps, a fixed format
    version, compression and row group size.
    """
    import pyarrow as pa

    schema = store_schema()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with _writer(tmp) as writer:
            batch: list[dict[str, Any]] = []
            written = 0
            for row in rows:
                batch.append(_record(row))
                if len(batch) == row_group:
                    writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                    written, batch = written + len(batch), []
            if batch or not written:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return sha256_of(path)


class StoreWriteError(IngestAuditError, OSError):
    """The measurement store (or its spill file) could not be written (a full disk...): the `OSError` it
    re-raises, with its ``errno`` and ``strerror``."""


class StoreWriter:
    """Streams measurement rows to a spill file in arrival order and writes the sorted store at the end.

    Args:
        work_dir: a private folder (the spill file and DuckDB's temporary files go there).
        pipeline_order: the run's pipelines in report order (their rank is a sort key).
        buffer_rows: rows kept in memory before they go to the spill file.

    Memory: at most ``buffer_rows`` rows, plus DuckDB's ``SORT_MEMORY`` while sorting.
    """

    def __init__(self, work_dir: Path, pipeline_order: Sequence[str], *, buffer_rows: int = SPILL_ROWS) -> None:
        self.work_dir = Path(work_dir)
        self.rank = {p: i for i, p in enumerate(pipeline_order)}
        self.buffer_rows = buffer_rows
        self.spill = self.work_dir / "spill.parquet"
        self._cols: list[list[Any]] = [[] for _ in range(len(COLUMNS) + 3)]
        self._writer: Any = None
        self.rows = 0

    def append(self, rows: Iterable[Any], src: int, first: int = 0) -> None:
        """Add the rows of one producer call (one task, or one corpus or pipeline stage over one pipeline) in the
        order it made them; ``src`` names the producer (0 for tasks, then one number per stage, increasing in the
        order the runner calls the stages); ``first``: the position of the first of them in the producer's list
        (a long list may come in several calls)."""
        self.append_records([record(r) for r in rows], src, first)

    def append_records(self, records: Sequence[tuple], src: int, first: int = 0) -> None:
        """`append` for rows already in store form (`record`)."""
        if not records:
            return
        cols = self._cols
        rank = self.rank
        for c, values in zip(cols, zip(*records)):
            c.extend(values)
        n = len(records)
        cols[-3].extend(rank.get(rec[3], len(rank)) for rec in records)
        cols[-2].extend([src] * n)
        cols[-1].extend(range(first, first + n))
        self.rows += n
        if len(cols[0]) >= self.buffer_rows:
            self._flush()

    def _flush(self) -> None:
        try:
            self._write_buffer()
        except StoreWriteError:
            raise
        except OSError as exc:
            raise StoreWriteError(exc.errno, exc.strerror or str(exc)) from exc

    def _write_buffer(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self._cols[0]:
            return
        schema = _spill_schema()
        if self._writer is None:
            self.work_dir.mkdir(parents=True, exist_ok=True)
            self._writer = pq.ParquetWriter(self.spill, schema, compression="snappy")
        arrays = [pa.array(c, type=f.type) for c, f in zip(self._cols, schema)]
        self._writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
        self._cols = [[] for _ in range(len(COLUMNS) + 3)]

    def finalize(self, path: Path, *, row_group: int = ROW_GROUP) -> str:
        """Sort the spilled rows into their canonical order and write the store to ``path`` (atomically); returns
        its SHA-256. The spill file is removed.

        Raises:
            StoreWriteError: the store cannot be written (a full disk...).
        """
        try:
            return self._finalize(path, row_group)
        except StoreWriteError:
            raise
        except OSError as exc:
            raise StoreWriteError(exc.errno, exc.strerror or str(exc)) from exc

    def _finalize(self, path: Path, row_group: int) -> str:
        self._flush()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if not self.rows:
            return write_measurements([], path, row_group=row_group)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        import duckdb

        try:
            for k, limit in enumerate(SORT_MEMORY):
                try:
                    with _writer(tmp) as writer:
                        for table in _sorted_groups(self.spill, self.work_dir, row_group, limit):
                            writer.write_table(table)
                    break
                except duckdb.OutOfMemoryException:
                    if k == len(SORT_MEMORY) - 1:
                        raise
                except duckdb.IOException as exc:  # its temporary files while sorting (a full disk)
                    raise StoreWriteError(errno.EIO, str(exc)) from exc
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
            self.spill.unlink(missing_ok=True)
        return sha256_of(path)


def _sorted_groups(spill: Path, work_dir: Path, row_group: int, memory: str) -> Iterator[Any]:
    """The spill file's rows in canonical order, as tables of exactly ``row_group`` rows (the last one shorter),
    each one contiguous chunk, typed as the store's schema."""
    import pyarrow as pa

    from ingestaudit.db import connect

    schema = store_schema()
    tmp = work_dir / "duckdb-tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    con = connect()
    try:
        con.execute(f"SET memory_limit='{memory}'")
        con.execute("SET threads=1")
        con.execute("SET preserve_insertion_order=true")
        con.execute(f"SET temp_directory='{_sql_text(str(tmp))}'")
        cols = ", ".join(f'"{c}"' for c in COLUMNS)
        order = ", ".join(f'"{k}"' if not k.startswith("k_") else _key_expr(k) for k in SORT_KEYS)
        query = con.sql(f"SELECT {cols} FROM read_parquet('{_sql_text(str(spill))}') ORDER BY {order}")
        reader = query.to_arrow_reader(min(row_group, 8192))
        pending: list[Any] = []
        count = 0
        for batch in reader:
            while batch.num_rows:
                take = min(row_group - count, batch.num_rows)
                pending.append(batch.slice(0, take))
                count += take
                batch = batch.slice(take)
                if count == row_group:
                    yield pa.Table.from_batches(pending).cast(schema).combine_chunks()
                    pending, count = [], 0
        if pending:
            yield pa.Table.from_batches(pending).cast(schema).combine_chunks()
    finally:
        con.close()


def _key_expr(key: str) -> str:
    return {"k_kind": '"item_kind"', "k_item": '"item"', "k_pipe": '"k_pipe"'}[key]


def _sql_text(text: str) -> str:
    return text.replace("'", "''")


def sha256_of(path: Path) -> str:
    """SHA-256 (hex) of a file, read in 1 MB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def iter_batches(path: Path, columns: Sequence[str] | None = None, where: Mapping[str, Any] | None = None,
                 batch_size: int = 8192) -> Iterator[Any]:
    """The store's rows as pyarrow record batches of ``columns`` (default: all), in file (canonical) order, keeping
    the rows whose column ``c`` is in ``where[c]`` (a collection of values) for every key of ``where``.

    Reads with ``pyarrow.parquet.ParquetFile.iter_batches``: one batch at a time (a ``pyarrow.dataset`` scan reads
    ahead and its memory pool keeps about 150 MB for a store of a million rows). A column of `ADDED_COLUMNS` that
    an older store lacks reads as its constant."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    wanted = list(columns) if columns else list(COLUMNS)
    tests = {c: pa.array(sorted(set(v)), type=pa.string()) for c, v in (where or {}).items()}
    read = wanted + [c for c in tests if c not in wanted]
    with pq.ParquetFile(path) as f:
        absent = {c for c in read if c in ADDED_COLUMNS and c not in f.schema_arrow.names}
        present = [c for c in read if c not in absent]
        for batch in f.iter_batches(batch_size=batch_size, columns=present, use_threads=False):
            if absent:
                batch = _with_constants(batch, read, absent)
            if tests:
                mask = None
                for c, values in tests.items():
                    m = pc.is_in(batch.column(read.index(c)), value_set=values)
                    mask = m if mask is None else pc.and_(mask, m)
                batch = batch.filter(mask)
                if not batch.num_rows:
                    continue
            yield batch.select(wanted) if len(read) != len(wanted) else batch


def _with_constants(batch: Any, read: list[str], absent: set[str]) -> Any:
    """``batch`` (an older store's, without the ``absent`` columns of `ADDED_COLUMNS`) with each of them added as
    its constant, columns in ``read`` order."""
    import pyarrow as pa

    cols = dict(zip(batch.schema.names, batch.columns))
    cols.update({c: pa.array([ADDED_COLUMNS[c]] * batch.num_rows, type=pa.string()) for c in absent})
    return pa.RecordBatch.from_arrays([cols[c] for c in read], names=read)


def read_measurements(path: Path) -> list[dict[str, Any]]:
    """Every row of a store as a dict (``detail`` parsed back from JSON); for tests and small stores."""
    import pyarrow.parquet as pq

    out = pq.read_table(path).to_pylist()
    for r in out:
        r["detail"] = json.loads(r["detail"])
        for c, value in ADDED_COLUMNS.items():  # an older store
            r.setdefault(c, value)
    return out
