"""A report read from disk, checked before anything is rendered or gated (``report``, ``compare``, ``run
--baseline``, ``--baseline history:DB``): report.json against its contract (`ingestaudit.report.schema`, pydantic:
the five states, counts >= 0, no NaN or infinity), its measurement store against its SHA-256
(`ingestaudit.report.rows.store_file`), then:

* the store against its schema (`check_store`): a Parquet file whose columns have the names and types of
  `ingestaudit.store.COLUMNS` (pyarrow), with as many rows as ``measurements.rows`` says, and rows that follow the
  contract (every key column set, a state among the five, an ``ok`` row with a value, values finite, denominators
  >= 0, ``detail`` a JSON object): a DuckDB scan naming the first bad row;
* the summary against the rows (`check_summary`): every summary value within its metric's declared range
  (`ingestaudit.metrics.specs`), and each document-level summary row's state counts, ``n_docs``,
  ``numerator``, ``denominator``, ``micro`` and ``macro`` are those of its rows (`ingestaudit.report.aggregate`:
  ``n_docs`` the ok rows, ``micro = Σ numerator / Σ denominator``, ``macro`` their mean, to a relative 1e-9), and
  every pipeline x class x metric x label the rows hold has a summary row. So a store emptied under a matching SHA,
  or a summary edited by hand, is refused rather than gated.

Every problem is a `ReportError` naming the file (and the row or field); the CLI makes it exit 2.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ingestaudit.report.schema import ALL_CLASSES, STATES, Report, ReportError, StoreRef, SummaryRow, read_report

REL_TOL = 1e-9
"""Relative tolerance between a summary's number and the one recomputed from its rows (summation order differs)."""

_KEYS = ("item", "item_kind", "class", "pipeline", "stage", "metric", "label", "state")
_STATE_LIST = ", ".join(f"'{s}'" for s in STATES)


def read_checked_report(path: Path) -> Report:
    """`read_report`, then its store's SHA-256, schema and rows (`check_store`) and its summary (`check_summary`).

    Raises:
        ReportError: any problem, the file named.
    """
    from ingestaudit.report.rows import store_file

    report = read_report(path)
    store = store_file(report)  # its SHA-256 checked first: a store of another run is named as such
    if store is not None:
        check_store(store, report.measurements.rows, report.schema_version)  # type: ignore[union-attr]
    check_summary(report, path)
    return report


def check_store(path: Path, rows: int, schema_version: str | None = None) -> None:
    """``path`` is a measurement store of ``rows`` rows that follow the contract (see the module docstring); a
    column added after the report's ``schema_version`` (`ingestaudit.store.ADDED_IN`; None: the current schema, so
    every column) may be missing.

    Raises:
        ReportError: not Parquet, another schema, another row count, or the first row that breaks the contract.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ingestaudit.store import ADDED_COLUMNS, ADDED_IN, store_schema

    try:
        with pq.ParquetFile(path) as f:
            schema, count = f.schema_arrow, f.metadata.num_rows
    except (pa.ArrowException, OSError) as exc:
        raise ReportError(f"{path}: not a Parquet measurement store ({exc})") from None
    want = store_schema()
    have = {f.name: f.type for f in schema}
    for field in want:
        if field.name not in have and field.name in ADDED_COLUMNS and _older(schema_version, ADDED_IN[field.name]):
            continue  # a store of an older schema: read with the column's default
        if field.name not in have:
            raise ReportError(f"{path}: the measurement store has no column {field.name!r}")
        if have[field.name] != field.type:
            raise ReportError(f"{path}: column {field.name!r} holds {have[field.name]}; a measurement store's holds "
                              f"{field.type}")
    extra = [name for name in have if name not in want.names]
    if extra:
        raise ReportError(f"{path}: the measurement store has columns it should not ({', '.join(extra)})")
    if count != rows:
        raise ReportError(f"{path}: the store has {count} rows; report.json's measurements.rows says {rows}")
    bad = _query(path, f"""SELECT file_row_number, item, pipeline, metric, state, value, numerator, denominator,
        {' OR '.join(f'"{k}" IS NULL' for k in _KEYS)} AS key_null, json_valid(detail) AS json_ok,
        json_type(detail) AS json_kind
        FROM read_parquet(?, file_row_number = true)
        WHERE {' OR '.join(f'"{k}" IS NULL' for k in _KEYS)} OR state NOT IN ({_STATE_LIST})
           OR (state = 'ok' AND value IS NULL) OR NOT isfinite(value) OR NOT isfinite(numerator)
           OR NOT isfinite(denominator) OR denominator < 0
           OR detail IS NULL OR NOT json_valid(detail) OR json_type(detail) <> 'OBJECT'
        ORDER BY file_row_number LIMIT 1""")
    if bad:
        raise ReportError(f"{path}: {_row_problem(*bad[0])}")


def _older(schema_version: str | None, added: tuple[int, int]) -> bool:
    """True when report schema ``schema_version`` (``"2.1"``) comes before ``added``; False for None or a version
    that does not parse (the current schema's rules apply)."""
    try:
        major, minor = (int(x) for x in (schema_version or "").split(".")[:2])
    except ValueError:
        return False
    return (major, minor) < added


def _row_problem(n: int, item: Any, pipeline: Any, metric: Any, state: Any, value: Any, num: Any, den: Any,
                 key_null: bool, json_ok: Any, json_kind: Any) -> str:
    """What is wrong with one store row (the first the scan found), and which row it is."""
    where = f"row {n + 1} (item {item!r}, pipeline {pipeline!r}, metric {metric!r})"
    if key_null:
        return f"{where}: a key column ({', '.join(_KEYS)}) is empty"
    if state not in STATES:
        return f"{where}: state {state!r} is not one of {', '.join(STATES)}"
    if state == "ok" and value is None:
        return f"{where}: a row in state ok has no value"
    for name, x in (("value", value), ("numerator", num), ("denominator", den)):
        if x is not None and not math.isfinite(x):
            return f"{where}: {name} {x} is not a finite number"
    if den is not None and den < 0:
        return f"{where}: denominator {den:g} is negative"
    return f"{where}: detail is not a JSON object ({'JSON ' + str(json_kind) if json_ok else 'not JSON'})"


def _query(source: Any, sql: str) -> list[tuple]:
    """Run ``sql`` on an offline DuckDB connection (`ingestaudit.db.connect`): its ``?`` is the store's path, or
    ``_rows`` names ``source``, a pyarrow table."""
    import duckdb

    from ingestaudit.db import connect

    con = connect()
    try:
        con.execute("SET threads = 1")
        if isinstance(source, Path):
            return con.execute(sql, [str(source)]).fetchall()
        con.register("_rows", source)
        return con.execute(sql).fetchall()
    except duckdb.Error as exc:
        where = source if isinstance(source, Path) else "the report's rows"
        raise ReportError(f"{where}: cannot be read as a measurement store ({str(exc).splitlines()[0]})") from None
    finally:
        con.close()


_GROUPS = """SELECT pipeline, "class", metric, label, state, count(*), count(numerator), count(denominator),
    fsum(value), fsum(numerator), fsum(denominator)
    FROM {src} GROUP BY GROUPING SETS ((pipeline, "class", metric, label, state), (pipeline, metric, label, state))"""


def _inline_table(report: Report) -> Any:
    import pyarrow as pa

    rows = report.measurements
    text = ("pipeline", "class", "metric", "label", "state")
    cols = {c: pa.array([getattr(r, "doc_class" if c == "class" else c) for r in rows], pa.string()) for c in text}
    cols.update({c: pa.array([getattr(r, c) for r in rows], pa.float64()) for c in ("value", "numerator",
                                                                                     "denominator")})
    return pa.table(cols)


def check_summary(report: Report, path: Path) -> None:
    """Each document-level summary row agrees with the rows behind it, and every group of rows has a summary row
    (see the module docstring); ``path`` is the report's file, named in the message.

    Raises:
        ReportError: the first summary row that disagrees, or a group of rows without one.
    """
    if isinstance(report.measurements, StoreRef):
        found = _query(report.store_path, _GROUPS.format(src="read_parquet(?)"))
        where = f"{report.store_path}"
    else:
        found = _query(_inline_table(report), _GROUPS.format(src="_rows"))
        where = "its rows"
    groups: dict[tuple[str, str, str, str], dict[str, tuple]] = {}
    for pipeline, cls, metric, label, state, n, n_num, n_den, v, num, den in found:
        key = (pipeline, ALL_CLASSES if cls is None else cls, metric, label)
        groups.setdefault(key, {})[state] = (n, n_num, n_den, v, num, den)
    summarised: dict[tuple[str, str, str, str], int] = {}
    listed = {p.name for p in report.pipelines}
    for i, row in enumerate(report.summary):
        key = (row.pipeline, row.doc_class, row.metric, row.label)
        problem = ""
        if key in summarised:
            problem = f"repeats summary[{summarised[key]}]"
        elif listed and row.pipeline not in listed:
            problem = f"pipeline {row.pipeline!r} is not among the report's pipelines ({', '.join(sorted(listed))})"
        elif row.ci_low is not None and row.ci_high is not None and row.ci_low > row.ci_high:
            problem = f"its interval is reversed (ci_low {row.ci_low:g} > ci_high {row.ci_high:g})"
        summarised.setdefault(key, i)
        problem = problem or _out_of_range(row)
        if not problem and row.level == "document":
            problem = _disagreement(row, groups.get(key, {}))
        if problem:
            name = row.metric + (f"[{row.label}]" if row.label else "")
            raise ReportError(f"{path}: summary[{i}] ({row.pipeline} · {row.doc_class} · {name}): {problem} in "
                              f"{where}; the summary does not describe these rows")
    lost = sorted(k for k in groups if k[1] != ALL_CLASSES and k not in summarised)
    if lost:  # (reports of schema 1 have no __all__ rows, so only the classes are required)
        p, c, m, lab = lost[0]
        raise ReportError(f"{path}: {where} hold(s) {len(lost)} pipeline x class x metric group(s) the summary lacks "
                          f"(first: {p} · {c} · {m}{f'[{lab}]' if lab else ''})")


def _out_of_range(row: SummaryRow) -> str:
    """Why a summary row's values leave its metric's declared range (`ingestaudit.metrics.specs`: an F1 of 7);
    "" when they do not, or the registry does not know the metric."""
    from ingestaudit.auditors import metric_catalog as specs

    try:
        spec = specs.get(row.metric)
    except KeyError:
        return ""
    low = -math.inf if spec.low is None else spec.low - 1e-9
    high = math.inf if spec.high is None else spec.high + 1e-9
    for name in ("micro", "macro", "ci_low", "ci_high"):
        value = getattr(row, name)
        if value is not None and not low <= value <= high:
            top = "inf" if spec.high is None else f"{spec.high:g}"
            return f"{name} {value:.12g} is outside {row.metric}'s range [{spec.low:g}, {top}]"
    return ""


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)


def _disagreement(row: SummaryRow, by_state: dict[str, tuple]) -> str:
    """Why a document-level summary row does not describe its rows' counts (``by_state``: state -> (rows, rows
    with a numerator, rows with a denominator, Σ value, Σ numerator, Σ denominator)); "" when it does."""
    counts = {s: by_state.get(s, (0,))[0] for s in STATES}
    claimed = {s: row.states.get(s, 0) for s in STATES}
    if claimed != counts:
        diff = ", ".join(f"{s} {claimed[s]} vs {counts[s]}" for s in STATES if claimed[s] != counts[s])
        return f"state counts differ (summary vs rows: {diff})"
    n, n_num, n_den, vsum, num, den = by_state.get("ok", (0, 0, 0, None, None, None))
    if row.n_docs != n:
        return f"n_docs is {row.n_docs} but {n} rows are ok"
    counted = n > 0 and n_num == n and n_den == n
    checks = [("macro", row.macro, vsum / n if n else None),
              ("numerator", row.numerator, num if counted else None),
              ("denominator", row.denominator, den if counted else None),
              ("micro", row.micro, num / den if counted and den else None)]
    for name, claim, actual in checks:
        if claim is not None and (actual is None or not _close(claim, actual)):
            return f"{name} is {claim:.12g} but the rows give {'no value' if actual is None else f'{actual:.12g}'}"
    return ""

