"""The columnar measurement store (issue 14, part 2): ``measurements.parquet``, one row per item x pipeline x stage x
metric x label, byte-identical for identical runs.

Not yet wired into ``run``: naming the store in ``report.json`` (``measurements_store``) needs a field in
`ingestaudit.report.schema.Report`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

STORE_NAME = "measurements.parquet"
COLUMNS = ("item", "item_kind", "class", "pipeline", "stage", "metric", "label", "value", "numerator", "denominator",
           "state", "detail")
ROW_GROUP = 50_000


def _schema() -> Any:
    import pyarrow as pa

    text = pa.string()
    return pa.schema([("item", text), ("item_kind", text), ("class", text), ("pipeline", text), ("stage", text),
                      ("metric", text), ("label", text), ("value", pa.float64()), ("numerator", pa.float64()),
                      ("denominator", pa.float64()), ("state", text), ("detail", text)])


def _record(row: Any) -> dict[str, Any]:
    return {"item": row.item, "item_kind": row.item_kind, "class": row.doc_class, "pipeline": row.pipeline,
            "stage": row.stage, "metric": row.metric, "label": row.label, "value": row.value,
            "numerator": row.numerator, "denominator": row.denominator, "state": row.state,
            "detail": json.dumps(row.detail, sort_keys=True, ensure_ascii=False, allow_nan=False,
                                 separators=(",", ":"))}


def write_measurements(rows: Iterable[Any], path: Path, *, row_group: int = ROW_GROUP) -> str:
    """Write ``rows`` (`MeasurementRow`s, already in their canonical order) to ``path`` in row groups of
    ``row_group`` rows, atomically (a temporary file renamed into place), and return the file's SHA-256.

    The bytes depend only on the rows (and the pyarrow version, which the file names): no timestamps, a fixed format
    version, compression and row group size.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _schema()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with pq.ParquetWriter(tmp, schema, compression="zstd", version="2.6", write_statistics=True,
                              store_schema=False) as writer:
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


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_measurements(path: Path) -> list[dict[str, Any]]:
    """Every row of a store as a dict (``detail`` parsed back from JSON); for tests and small stores."""
    import pyarrow.parquet as pq

    out = pq.read_table(path).to_pylist()
    for r in out:
        r["detail"] = json.loads(r["detail"])
    return out
