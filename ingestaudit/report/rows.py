"""Reading a report's measurement rows: the one function every view, the gate, the history and the tests use.

A report of schema 2.1 names its store (``report.json["measurements"] = {"file", "sha256", "rows"}``, the rows in
``measurements.parquet`` beside it); reports of schema 1.x and 2.0, and reports built in memory, hold the rows
inline. `measurement_rows` reads either, in canonical order, streaming the store in batches with the filters
applied while reading, so a caller that keeps only what it needs never holds every row. The store's SHA-256 is
checked once per file (size and modification time cached) before any row is read: a store that does not match
its report is a `ReportError`, never rows of another run.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from ingestaudit.report.schema import MeasurementRow, Report, ReportError, StoreRef

_VERIFIED: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256 already checked

_FIELDS = ("item", "item_kind", "doc_class", "pipeline", "stage", "metric", "label", "value", "numerator",
           "denominator", "state", "parser")


def store_file(report: Report) -> Path | None:
    """The report's store, checked against its SHA-256; None when the rows are inline.

    Raises:
        ReportError: the store is missing, unreadable or does not match the report's SHA-256 (or row count).
    """
    ref = report.measurements
    if not isinstance(ref, StoreRef):
        return None
    path = report.store_path
    if path is None:
        raise ReportError(f"the report names its measurement store {ref.file!r} but not where it is (read it with "
                          "read_report, which finds it beside report.json)")
    from ingestaudit.inputs import InputFileError, check_input_file, describe
    from ingestaudit.report.schema import STORE_BYTES

    try:  # a device (a link to /dev/zero), FIFO or folder, or over the size: never hashed or opened
        check_input_file(path, max_bytes=STORE_BYTES, limit="STORE_BYTES")
        st = path.stat()
    except InputFileError as exc:
        why = describe(exc.oserror) if exc.oserror is not None else exc.reason
        raise ReportError(f"{path}: the measurement store of this report cannot be read ({why}); keep "
                          "measurements.parquet beside report.json") from None
    except OSError as exc:
        raise ReportError(f"{path}: the measurement store of this report cannot be read ({describe(exc)}); keep "
                          "measurements.parquet beside report.json") from None
    key = (str(path), st.st_size, st.st_mtime_ns)
    if _VERIFIED.get(key) != ref.sha256:
        from ingestaudit.store import sha256_of

        try:
            digest = sha256_of(path)
        except OSError as exc:
            raise ReportError(f"{path}: cannot read the measurement store ({exc.strerror or exc})") from None
        if digest != ref.sha256:
            raise ReportError(f"{path}: SHA-256 {digest[:12]}... does not match the report's measurements.sha256 "
                              f"{ref.sha256[:12]}...: this store belongs to another run")
        _VERIFIED[key] = digest
    return path


def remember_verified(path: Path, sha256: str) -> None:
    """Record that ``path`` (as it is now: size, modification time) holds the store with ``sha256``: a file this
    process just wrote or renamed, so readers need not hash it again."""
    try:
        st = Path(path).stat()
    except OSError:
        return
    _VERIFIED[(str(path), st.st_size, st.st_mtime_ns)] = sha256


def _filter(metrics: Collection[str] | None, states: Collection[str] | None, item_kind: str | None,
            items: Collection[str] | None, pipelines: Collection[str] | None,
            stages: Collection[str] | None) -> dict[str, Collection[str]]:
    """The `ingestaudit.store.iter_batches` filter (column -> accepted values) of `measurement_rows`' arguments."""
    out: dict[str, Collection[str]] = {}
    for column, values in (("metric", metrics), ("state", states), ("item", items), ("pipeline", pipelines),
                           ("stage", stages)):
        if values is not None:
            out[column] = values
    if item_kind is not None:
        out["item_kind"] = (item_kind,)
    return out


def measurement_rows(report: Report, *, metrics: Collection[str] | None = None,
                     states: Collection[str] | None = None, item_kind: str | None = None,
                     items: Collection[str] | None = None, pipelines: Collection[str] | None = None,
                     stages: Collection[str] | None = None, detail: bool = True) -> Iterator[MeasurementRow]:
    """The report's rows in canonical order (item kind, item, pipeline in report order, stage, metric, label), as
    `MeasurementRow`s, keeping only those whose metric, state, item kind, item, pipeline and stage are among the
    given ones (None: any).

    Args:
        detail: parse each row's ``detail`` JSON (False: every row's ``detail`` is ``{}``, which saves the parse
            when a reader needs values and states only).

    Raises:
        ReportError: the store is missing or does not match the report (`store_file`).
    """
    path = store_file(report)
    if path is None:
        for r in report.measurements:  # type: ignore[union-attr]
            if ((metrics is None or r.metric in metrics) and (states is None or r.state in states)
                    and (item_kind is None or r.item_kind == item_kind) and (items is None or r.item in items)
                    and (pipelines is None or r.pipeline in pipelines) and (stages is None or r.stage in stages)):
                yield r
        return
    yield from iter_store_rows(path, metrics=metrics, states=states, item_kind=item_kind, items=items,
                               pipelines=pipelines, stages=stages, detail=detail)


def iter_store_rows(path: Path, *, metrics: Collection[str] | None = None, states: Collection[str] | None = None,
                    item_kind: str | None = None, items: Collection[str] | None = None,
                    pipelines: Collection[str] | None = None, stages: Collection[str] | None = None,
                    detail: bool = True) -> Iterator[MeasurementRow]:
    """`measurement_rows` of a store file (no SHA-256 check: the caller wrote it, or checked it)."""
    from ingestaudit.store import iter_batches

    columns = ["item", "item_kind", "class", "pipeline", "stage", "metric", "label", "value", "numerator",
               "denominator", "state", "parser"] + (["detail"] if detail else [])
    construct = MeasurementRow.model_construct
    for batch in iter_batches(path, columns, _filter(metrics, states, item_kind, items, pipelines, stages)):
        cols = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        details = cols[12] if detail else None
        for k, values in enumerate(zip(*cols[:12])):
            yield construct(**dict(zip(_FIELDS, values)),
                            detail=json.loads(details[k]) if details is not None else {})


def row_count(report: Report) -> int:
    """How many rows the report has (the store's count, or the inline list's length)."""
    ref = report.measurements
    return ref.rows if isinstance(ref, StoreRef) else len(ref)


def distinct(report: Report, column: str, **filters: Any) -> list[str]:
    """The sorted distinct values of one text column (``item``, ``stage``, ``metric``, ``doc_class``...) over the
    rows `measurement_rows` selects with ``filters``."""
    values: set[str] = set()
    path = store_file(report)
    if path is None:
        values = {getattr(r, column) for r in measurement_rows(report, detail=False, **filters)}
        return sorted(values)
    from ingestaudit.store import iter_batches

    name = "class" if column == "doc_class" else column
    filt = _filter(filters.get("metrics"), filters.get("states"), filters.get("item_kind"), filters.get("items"),
                   filters.get("pipelines"), filters.get("stages"))
    for batch in iter_batches(path, [name], filt):
        values.update(batch.column(0).unique().to_pylist())
    return sorted(values)


def item_keys(report: Report, *, with_class: bool = False) -> Iterator[tuple[str, ...]]:
    """Each item's ``(item_kind, item)`` once, in canonical order (the rows are sorted by them), reading two columns
    only; with ``with_class``, ``(item_kind, item, doc_class)`` (three columns)."""
    path = store_file(report)
    last = None
    if path is None:
        for r in report.measurements:  # type: ignore[union-attr]
            if (r.item_kind, r.item) != last:
                last = (r.item_kind, r.item)
                yield (*last, r.doc_class) if with_class else last
        return
    from ingestaudit.store import iter_batches

    for batch in iter_batches(path, ["item_kind", "item", *(["class"] * with_class)]):
        columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        for row in zip(*columns):
            if row[:2] != last:
                last = row[:2]
                yield row
