"""Run history in one embedded DuckDB file: every audited run's summary rows, for trend tables and plots and as
a baseline for the gate (``run --history DB --label L``, ``ingestaudit history DB``, ``--baseline history:DB``).

Tables (schema `SCHEMA`, recorded in ``ingestaudit_meta``):

* ``runs``: ``run_id``, ``time`` (UTC, ISO 8601), ``label`` (e.g. a commit), ``corpus_fingerprint``,
  ``corpus_path``, ``tool_version``, ``pipelines`` (JSON: every stage's implementation, version and settings),
  ``accepted``, ``report`` (the report's JSON without measurements and summary) and ``verdict`` (the gate's:
  ``pass``, ``fail``, ``first_run``, or NULL for a run not gated; a history written before the column existed gets
  it, NULL for its runs, the first time a run is appended to it, and reads as it is until then);
* ``summary``: one row per run x pipeline x class x metric x label (n, micro, macro, headline value, interval,
  states as JSON, definition fingerprint);
* ``measurements``: one row per run x item x pipeline x metric x label (what the gate pairs).

**Accepted runs.** The gate's history baseline is the last *accepted* run. The first run recorded is accepted (it
starts the history); later ones are recorded as not accepted until a person accepts one
(``ingestaudit history DB --accept LABEL``). A baseline that only moves when someone accepts it catches slow drift:
five nights each 0.004 worse pass a 0.01 budget one by one, but not against the accepted run.

**Items.** ``ingestaudit history DB --items --metric M`` queries the ``measurements`` table for one metric's
per-item values across runs, the items that moved most since the accepted run first (`item_trends`): which
documents a slow drift comes from. A run's rows are read through `ingestaudit.report.tables.measurement_rows`, the
one place to change when rows move out of report.json into ``measurements.parquet``. That file is plain Parquet;
DuckDB reads it as it is, e.g. ``duckdb.sql("SELECT item, value FROM 'out/measurements.parquet' WHERE metric =
'extraction.cer'")``, for a question these tables do not answer.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ingestaudit.errors import IngestAuditError
from ingestaudit.report.schema import MeasurementRow, Report, SummaryRow
from ingestaudit.report.tables import measurement_rows

SCHEMA = "ingestaudit-history-1"
HISTORY_PREFIX = "history:"

_DDL = (
    "CREATE TABLE ingestaudit_meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
    """CREATE TABLE runs (run_id INTEGER PRIMARY KEY, time VARCHAR NOT NULL, label VARCHAR NOT NULL,
       corpus_fingerprint VARCHAR, corpus_path VARCHAR, tool_version VARCHAR, pipelines VARCHAR,
       accepted BOOLEAN NOT NULL, report VARCHAR NOT NULL, verdict VARCHAR)""",
    """CREATE TABLE summary (run_id INTEGER NOT NULL, pipeline VARCHAR, doc_class VARCHAR, stage VARCHAR,
       metric VARCHAR, label VARCHAR, level VARCHAR, n INTEGER, micro DOUBLE, macro DOUBLE, headline DOUBLE,
       ci_low DOUBLE, ci_high DOUBLE, ci_method VARCHAR, states VARCHAR, numerator DOUBLE, denominator DOUBLE,
       definition VARCHAR)""",
    """CREATE TABLE measurements (run_id INTEGER NOT NULL, item VARCHAR, item_kind VARCHAR, doc_class VARCHAR,
       pipeline VARCHAR, stage VARCHAR, metric VARCHAR, label VARCHAR, value DOUBLE, numerator DOUBLE,
       denominator DOUBLE, state VARCHAR, detail VARCHAR)""",
)


class HistoryError(IngestAuditError):
    """The history file cannot be used (not a DuckDB file, damaged, another schema, locked by another process, no
    such run); the message names the file."""


class EmptyHistory(HistoryError):
    """An empty DuckDB file: no run recorded yet."""


class HistoryLocked(HistoryError):
    """Another process held the history's lock for longer than `LOCK_WAIT_S`."""


LOCK_WAIT_S = 10.0
"""How long opening a history waits for another process's lock (two jobs appending at once hold it a moment
each), retrying with a pause growing from 0.05 to 0.5 s, before it gives up with `HistoryLocked`."""

_LOCKED = "Could not set lock on file"  # DuckDB's message when another process holds the file
_DUCKDB_MAGIC = (8, b"DUCK")  # every DuckDB database file has these bytes at this offset
_SQLITE_MAGIC = b"SQLite format 3\x00"

@dataclass(frozen=True)
class RunInfo:
    """One recorded run."""

    run_id: int
    time: str
    label: str
    corpus_fingerprint: str
    accepted: bool
    verdict: str | None = None  # the gate's verdict (pass, fail, first_run); None: not gated


def _narrow(where: list[str], args: list[Any], **equal: str | None) -> None:
    """Add ``column = ?`` to a query's conditions for each given (not None, not empty) column value."""
    for column, value in equal.items():
        if value:
            where.append(f"{column} = ?")
            args.append(value)


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def _sniff(path: Path) -> None:
    """Refuse, before DuckDB opens it, what is not a regular file or not a DuckDB database (a SQLite file would
    make DuckDB reach for its SQLite extension). An empty file is left to DuckDB, which refuses it without writing
    (`_open` says so), since it may be a history another process is creating this instant."""
    from ingestaudit.inputs import InputFileError, open_input_file

    try:  # the shared reader for a user's files: stat first, a FIFO or device is never opened (issue 30)
        with open_input_file(path, max_bytes=sys.maxsize, limit="") as f:
            head = f.read(16)
    except InputFileError as exc:
        if exc.kind == "a folder":
            raise HistoryError(f"{path}: is a folder, not a history file") from None
        if exc.kind is not None:
            raise HistoryError(f"{path}: not a regular file, so not a history file ({exc.reason})") from None
        raise HistoryError(f"{path}: cannot be read ({exc.cause})") from None
    offset, magic = _DUCKDB_MAGIC
    if not head or head[offset:offset + len(magic)] == magic:
        return
    what = "a SQLite database" if head.startswith(_SQLITE_MAGIC) else "no DuckDB header"
    raise HistoryError(f"{path}: not a DuckDB history file ({what}); nothing was changed")


def _open(path: Path, read_only: bool) -> Any:
    """A connection (`ingestaudit.db.connect`: offline), retried while another process holds the lock."""
    import duckdb

    from ingestaudit.db import connect

    deadline = time.monotonic() + LOCK_WAIT_S
    pause = 0.05
    while True:
        try:
            return connect(str(path), read_only=read_only)
        except duckdb.Error as exc:
            if _LOCKED not in str(exc):
                empty = path.exists() and path.stat().st_size == 0
                what = "an empty file; remove it and the next run starts the history" if empty else _first_line(exc)
                raise HistoryError(f"{path}: not a {'' if empty else 'readable '}DuckDB history file ({what}); "
                                   "nothing was changed") from None
            left = deadline - time.monotonic()
            if left <= 0:
                raise HistoryLocked(f"{path}: locked by another process ({_first_line(exc)}); waited "
                                    f"{LOCK_WAIT_S:g} s; try again when it finishes") from None
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.5)


@contextmanager
def _connect(path: Path, *, create: bool, read_only: bool = False) -> Iterator[Any]:
    """An open history (its schema checked, created when ``create`` and new); every DuckDB error while it is used
    (a damaged block read by a query) is a `HistoryError` naming the file."""
    import duckdb

    if not path.exists() and not create:
        raise HistoryError(f"{path}: no such history file")
    if path.exists():
        _sniff(path)
    con = _open(path, read_only=read_only and path.exists())
    try:
        _check_schema(con, path, create=create and not read_only)
        yield con
    except duckdb.Error as exc:  # reading a damaged block, or a table this ingestaudit does not expect
        damaged = isinstance(exc, duckdb.IOException) or "Corrupt" in str(exc)
        raise HistoryError(f"{path}: {'a damaged DuckDB history file' if damaged else 'cannot be used as a history'}"
                           f" ({_first_line(exc)})") from None
    finally:
        con.close()


def _check_schema(con: Any, path: Path, *, create: bool) -> None:
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if "ingestaudit_meta" not in tables:
        if tables:
            raise HistoryError(f"{path}: a DuckDB database but not an ingestaudit history (tables "
                               f"{', '.join(sorted(tables)[:5])}); nothing was changed")
        if not create:
            raise EmptyHistory(f"{path}: an empty database, no run recorded yet")
        con.execute("BEGIN TRANSACTION")
        for ddl in _DDL:
            con.execute(ddl)
        con.execute("INSERT INTO ingestaudit_meta VALUES ('schema', ?)", [SCHEMA])
        con.execute("COMMIT")
        return
    row = con.execute("SELECT value FROM ingestaudit_meta WHERE key = 'schema'").fetchone()
    if row is None or row[0] != SCHEMA:
        raise HistoryError(f"{path}: history schema {row[0] if row else '(none)'!r}; this ingestaudit reads "
                           f"{SCHEMA!r}; nothing was changed")


def check_history(path: Path) -> None:
    """Check a history file before a run spends time on the audit: a new path in an existing folder, or a readable
    ingestaudit history, opened read-only (nothing is written) and its tables' key columns read through, which
    finds most damage (a truncated file) before the audit rather than after it.

    Raises:
        HistoryError: see the class.
    """
    if not path.exists():
        if not path.parent.is_dir():
            raise HistoryError(f"{path}: the folder {path.parent} does not exist")
        return
    try:
        with _connect(path, create=False, read_only=True) as con:
            for probe in _PROBES:
                con.execute(probe).fetchall()
    except EmptyHistory:  # a DuckDB file without tables: the run creates them
        pass


_PROBES = ("SELECT max(run_id), max(time), max(label), max(corpus_fingerprint), bool_and(accepted) FROM runs",
           "SELECT max(run_id), max(metric), max(headline), max(states) FROM summary",
           "SELECT max(metric), max(value), max(state) FROM measurements WHERE run_id IN "
           "(SELECT max(run_id) FROM runs UNION SELECT max(run_id) FROM runs WHERE accepted)")
"""Queries that read the columns the commands read (a count alone is answered without reading the data): every run
and summary row, and the rows of the last and the accepted run (the baseline; older runs' rows are read only by
``history --items``)."""


def _headline(r: SummaryRow) -> float | None:
    return r.micro if r.micro is not None else r.macro


def _has_verdict(con: Any) -> bool:
    """Whether the ``runs`` table has the ``verdict`` column (a history written before it existed has not)."""
    return bool(con.execute("SELECT COUNT(*) FROM information_schema.columns WHERE table_name = 'runs' AND "
                            "column_name = 'verdict'").fetchone()[0])


def append_run(path: Path, report: Report, *, label: str = "", time: str | None = None,
               accepted: bool | None = None, verdict: str | None = None) -> int:
    """Record ``report`` as a new run; returns its ``run_id``.

    Args:
        label: the user's label (a commit, a date); ``""`` is allowed.
        time: ISO 8601 time (default: now, UTC, to the second).
        accepted: default: True for the first run of the file, else False (see the module docstring).
        verdict: the gate's verdict of this run (``pass``, ``fail``, ``first_run``), None when it was not gated.

    Raises:
        HistoryError: see the class.
    """
    stamp = time or datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    slim = report.model_dump(mode="json", exclude={"measurements", "summary", "gate"})
    with _connect(path, create=True) as con:
        if not _has_verdict(con):  # an older history: the column is added, NULL for the runs it holds
            con.execute("ALTER TABLE runs ADD COLUMN verdict VARCHAR")
        con.execute("BEGIN TRANSACTION")
        try:
            run_id, first = con.execute("SELECT COALESCE(MAX(run_id), 0) + 1, COUNT(*) = 0 FROM runs").fetchone()
            con.execute("INSERT INTO runs (run_id, time, label, corpus_fingerprint, corpus_path, tool_version, "
                        "pipelines, accepted, report, verdict) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [run_id, stamp, label, report.corpus.fingerprint, report.corpus.path, report.tool.version,
                         json.dumps([p.model_dump(mode="json") for p in report.pipelines], sort_keys=True),
                         bool(first) if accepted is None else accepted,
                         json.dumps(slim, sort_keys=True, allow_nan=False), verdict])
            con.executemany("INSERT INTO summary VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            [[run_id, r.pipeline, r.doc_class, r.stage, r.metric, r.label, r.level, r.n_docs,
                              r.micro, r.macro, _headline(r), r.ci_low, r.ci_high, r.ci_method,
                              json.dumps(r.states, sort_keys=True), r.numerator, r.denominator, r.definition]
                             for r in report.summary])
            from ingestaudit.report.rows import store_file

            store = store_file(report)  # its SHA-256 checked
            if store is not None:  # DuckDB reads the store itself, in row groups
                con.execute("INSERT INTO measurements SELECT ?, item, item_kind, \"class\", pipeline, stage, metric, "
                            "label, value, numerator, denominator, state, detail FROM read_parquet(?)",
                            [run_id, str(store)])
            else:
                rows = list(measurement_rows(report))
                if rows:
                    _insert_measurements(con, run_id, rows)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return int(run_id)


def _insert_measurements(con: Any, run_id: int, rows: Sequence[MeasurementRow]) -> None:
    import pyarrow as pa

    cols: dict[str, list[Any]] = {k: [] for k in ("run_id", "item", "item_kind", "doc_class", "pipeline", "stage",
                                                  "metric", "label", "value", "numerator", "denominator", "state",
                                                  "detail")}
    for m in rows:
        for k in cols:
            if k == "run_id":
                cols[k].append(run_id)
            elif k == "detail":
                cols[k].append(json.dumps(m.detail, sort_keys=True, ensure_ascii=False))
            else:
                cols[k].append(getattr(m, k))
    table = pa.table({"run_id": pa.array(cols["run_id"], pa.int32()),
                      **{k: pa.array(v, pa.float64() if k in ("value", "numerator", "denominator") else pa.string())
                         for k, v in cols.items() if k != "run_id"}})
    con.register("_incoming", table)
    try:
        con.execute("INSERT INTO measurements SELECT * FROM _incoming")
    finally:
        con.unregister("_incoming")


def is_empty(path: Path) -> bool:
    """True when ``path`` does not exist yet or holds no run (the first night of a nightly job).

    Raises:
        HistoryError: it exists but is not a readable ingestaudit history (see the class).
    """
    if not path.exists():
        return True
    try:
        with _connect(path, create=False, read_only=True) as con:
            return con.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
    except EmptyHistory:
        return True


def list_runs(path: Path) -> list[RunInfo]:
    """Every recorded run, oldest first."""
    with _connect(path, create=False, read_only=True) as con:
        verdict = "verdict" if _has_verdict(con) else "NULL"
        rows = con.execute(f"SELECT run_id, time, label, corpus_fingerprint, accepted, {verdict} FROM runs "
                           "ORDER BY run_id").fetchall()
    return [RunInfo(int(r[0]), r[1], r[2], r[3] or "", bool(r[4]), r[5]) for r in rows]


def accepted_series(path: Path, window: int, metrics: Sequence[tuple[str, str]]
                    ) -> dict[tuple[str, str, str, str], list[float]]:
    """The headline values of the last ``window`` accepted runs, oldest first, per (pipeline, class, metric,
    label) among ``metrics`` (``(metric, label)`` pairs); a run without a value for a key adds none to it. A path
    that does not exist yet, or an empty history, gives ``{}``.

    Raises:
        HistoryError: see the class.
    """
    if not path.exists():
        return {}
    wanted = set(metrics)
    try:
        with _connect(path, create=False, read_only=True) as con:
            rows = con.execute("SELECT s.pipeline, s.doc_class, s.metric, s.label, s.headline FROM summary s WHERE "
                               "s.run_id IN (SELECT run_id FROM runs WHERE accepted ORDER BY run_id DESC LIMIT ?) "
                               "AND s.headline IS NOT NULL ORDER BY s.run_id, s.rowid", [window]).fetchall()
    except EmptyHistory:
        return {}
    out: dict[tuple[str, str, str, str], list[float]] = {}
    for pipe, cls, metric, label, value in rows:
        if (metric, label) in wanted:
            out.setdefault((pipe, cls, metric, label), []).append(float(value))
    return out


def accept(path: Path, which: str, *, force: bool = False) -> RunInfo:
    """Mark a run accepted: ``which`` is a run id (``#N`` is always one), a label (its latest run) or ``"last"``; a
    digit string that is one run's id and another run's label is refused as ambiguous (the message names both). A run whose gate failed
    (verdict ``fail``) is refused unless ``force``: accepting it would make its regressions the baseline every
    later run is gated against.

    Raises:
        HistoryError: no such run, or a failed run without ``force`` (the message says how to accept it anyway).
    """
    runs = list_runs(path)
    run = _find(runs, which, path)
    if run.verdict == "fail" and not force:
        raise HistoryError(f"{path}: run {run.run_id} ({run.label or run.time}) failed its gate; accepting it makes "
                           "its regressions the baseline of every later run: not accepted (add --force to accept "
                           "it anyway)")
    with _connect(path, create=False) as con:
        con.execute("UPDATE runs SET accepted = TRUE WHERE run_id = ?", [run.run_id])
    return RunInfo(run.run_id, run.time, run.label, run.corpus_fingerprint, True, run.verdict)


def _find(runs: Sequence[RunInfo], which: str, path: Path) -> RunInfo:
    if not runs:
        raise HistoryError(f"{path}: no run recorded yet")
    if which == "last":
        return runs[-1]
    if which.startswith("#") and which[1:].isdigit():  # a run id, never a label
        hit = [r for r in runs if r.run_id == int(which[1:])]
        if hit:
            return hit[0]
        raise HistoryError(f"{path}: no run with id {which[1:]}")
    by_label = [r for r in runs if r.label == which]
    by_id = [r for r in runs if which.isdigit() and r.run_id == int(which)]
    if by_label and by_id and by_label[-1].run_id != by_id[0].run_id:
        raise HistoryError(f"{path}: {which!r} is both run {by_id[0].run_id} ({by_id[0].label or by_id[0].time}) "
                           f"and the label of run {by_label[-1].run_id}: ambiguous, nothing accepted (say "
                           f"'#{by_id[0].run_id}' or '#{by_label[-1].run_id}': '#N' is always a run id)")
    if by_label:
        return by_label[-1]
    if by_id:
        return by_id[0]
    raise HistoryError(f"{path}: no run with id or label {which!r}")


def load_report(path: Path, run_id: int | None = None) -> tuple[Report, RunInfo]:
    """A recorded run as a `Report` (summary and measurements included): ``run_id``, else the last accepted run.

    Raises:
        HistoryError: no such run, no accepted run, or a run that breaks the report contract or whose summary its
            rows do not give (`ingestaudit.report.integrity.check_summary`).
    """
    with _connect(path, create=False, read_only=True) as con:
        if run_id is None:
            row = con.execute("SELECT run_id FROM runs WHERE accepted ORDER BY run_id DESC LIMIT 1").fetchone()
            if row is None:
                raise HistoryError(f"{path}: no accepted run to use as a baseline (accept one with "
                                   f"'ingestaudit history {path} --accept LABEL')")
            run_id = int(row[0])
        meta = con.execute("SELECT run_id, time, label, corpus_fingerprint, accepted, report FROM runs "
                           "WHERE run_id = ?", [run_id]).fetchone()
        if meta is None:
            raise HistoryError(f"{path}: no run {run_id}")
        summary = con.execute("SELECT pipeline, doc_class, stage, metric, label, level, n, micro, macro, ci_low, "
                              "ci_high, ci_method, states, numerator, denominator, definition FROM summary "
                              "WHERE run_id = ? ORDER BY rowid", [run_id]).fetchall()
        meas = con.execute("SELECT item, item_kind, doc_class, pipeline, stage, metric, label, value, numerator, "
                           "denominator, state, detail FROM measurements WHERE run_id = ? ORDER BY rowid",
                           [run_id]).fetchall()
    from pydantic import ValidationError

    from ingestaudit.report.integrity import check_summary
    from ingestaudit.report.schema import ReportError, validation_message

    try:  # a value edited in the file (not JSON, a sixth state, a summary its rows do not give) is refused
        raw = json.loads(meta[5])
        raw["summary"] = [{"pipeline": s[0], "doc_class": s[1], "stage": s[2], "metric": s[3], "label": s[4],
                           "level": s[5], "n_docs": s[6], "micro": s[7], "macro": s[8], "ci_low": s[9],
                           "ci_high": s[10], "ci_method": s[11], "states": json.loads(s[12]), "numerator": s[13],
                           "denominator": s[14], "definition": s[15] or ""} for s in summary]
        raw["measurements"] = [{"item": m[0], "item_kind": m[1], "doc_class": m[2], "pipeline": m[3], "stage": m[4],
                                "metric": m[5], "label": m[6], "value": m[7], "numerator": m[8],
                                "denominator": m[9], "state": m[10], "detail": json.loads(m[11] or "{}")}
                               for m in meas]
        report = Report.model_validate(raw)
        check_summary(report, Path(f"{path} run {run_id}"))
    except ReportError as exc:
        raise HistoryError(str(exc)) from None
    except ValidationError as exc:  # a row the current schema rejects
        raise HistoryError(f"{path}: run {run_id} does not load as a report ({validation_message(exc)})") from None
    except Exception as exc:  # not JSON
        raise HistoryError(f"{path}: run {run_id} does not load as a report ({exc})") from None
    return report, RunInfo(int(meta[0]), meta[1], meta[2], meta[3] or "", bool(meta[4]))


@dataclass(frozen=True)
class Trend:
    """One series: a pipeline x class x metric x label's headline value per run (None where the run lacks it)."""

    pipeline: str
    doc_class: str
    metric: str
    label: str
    values: list[float | None]
    n: list[int | None]

    @property
    def name(self) -> str:
        return self.metric + (f"[{self.label}]" if self.label else "")


def trends(path: Path, *, metric: str | None = None, doc_class: str | None = None, pipeline: str | None = None,
           last: int = 20, metrics: Sequence[tuple[str, str]] | None = None) -> tuple[list[RunInfo], list[Trend]]:
    """The last ``last`` runs and the series that match the filters (``metric``: a metric name or a stage prefix;
    ``metrics``: exact ``(metric, label)`` pairs, e.g. the key metrics), ordered by pipeline, class, metric."""
    runs = list_runs(path)[-last:] if last else list_runs(path)
    if not runs:
        return [], []
    ids = [r.run_id for r in runs]
    where, args = ["run_id >= ?"], [ids[0]]
    if metric:
        where.append("(metric = ? OR metric LIKE ?)")
        args += [metric, metric.rstrip(".") + ".%"]
    _narrow(where, args, doc_class=doc_class, pipeline=pipeline)
    with _connect(path, create=False, read_only=True) as con:
        rows = con.execute(f"SELECT run_id, pipeline, doc_class, metric, label, headline, n FROM summary WHERE "
                           f"{' AND '.join(where)}", args).fetchall()
    wanted = set(metrics) if metrics is not None else None
    series: dict[tuple[str, str, str, str], dict[int, tuple[float | None, int | None]]] = {}
    for run_id, pipe, cls, m, lab, value, n in rows:
        if wanted is not None and (m, lab) not in wanted:
            continue
        series.setdefault((pipe, cls, m, lab), {})[int(run_id)] = (value, n)
    from ingestaudit.report.schema import ALL_CLASSES
    from ingestaudit.report.tables import stage_rank

    out = [Trend(p, c, m, lab, [s.get(i, (None, None))[0] for i in ids], [s.get(i, (None, None))[1] for i in ids])
           for (p, c, m, lab), s in series.items()]
    out = [t for t in out if any(v is not None for v in t.values)]  # a series with no value in any run says nothing
    out.sort(key=lambda t: (t.pipeline, t.doc_class == ALL_CLASSES, t.doc_class, stage_rank(t.metric.split(".")[0]),
                            t.metric, t.label))
    return runs, out


SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float | None]) -> str:
    """One character per value, scaled between the series' min and max (a space for a missing value)."""
    present = [v for v in values if v is not None]
    if not present:
        return ""
    lo, hi = min(present), max(present)
    out = []
    for v in values:
        if v is None:
            out.append(" ")
        else:
            out.append(SPARK[0] if hi == lo else SPARK[min(len(SPARK) - 1, int((v - lo) / (hi - lo) * len(SPARK)))])
    return "".join(out)


def render_trends(runs: Sequence[RunInfo], series: Sequence[Trend], width: int = 100, band_window: int = 20) -> str:
    """Trend tables for a terminal: one row per series, the last runs as columns (as many as ``width`` allows, the
    last accepted run always among them; a column is as wide as its widest value, verdict or ``#ID`` needs plus 2,
    at least 8, or wide enough for the run labels, up to 10, when that shows as many runs), a sparkline over every run shown, the change from the first to the last
    value, and the series' control band (`ingestaudit.report.bands`, from its last ``band_window`` accepted runs'
    values, when there are enough). A ``gate`` row gives each run's verdict. Run labels are never cut: when one is
    longer than a column, the columns are headed ``#ID`` and a legend lists every run's full label. When the series
    names leave too little room, each name gets its own line above its values."""
    import textwrap

    from ingestaudit.report.bands import xmr_band
    from ingestaudit.report.tables import direction, g4

    if not runs:
        return "no run recorded yet"
    if not series:
        return f"{len(runs)} runs; no series matches the filters"
    names = [f"{t.pipeline} · {t.doc_class} · {t.name} {direction(t.metric, t.label)}".rstrip() for t in series]
    name_w = max(len(n) for n in names) + 2

    def layout(col_w: int) -> tuple[int, bool, int, int]:  # (col_w, stacked, lead, runs that fit)
        tail = 2 + len(runs) + 2 + col_w  # sparkline and change
        stacked = width - name_w - tail < 3 * col_w
        lead = 2 if stacked else name_w
        return col_w, stacked, lead, max(1, (width - lead - tail) // col_w)

    # as wide as the widest value, verdict or #ID needs (labels then in a legend), or wide enough for the labels
    # (up to 10) when that shows as many runs: at 80 columns a run that fits is never dropped for a label
    narrow = layout(max(8, 2 + max(len(x) for x in [*(g4(v) for t in series for v in t.values),
                                                    *(r.verdict or "—" for r in runs),
                                                    *(f"#{r.run_id}*" for r in runs)])))
    labelled = layout(max(narrow[0], min(10, 3 + max(len(r.label or r.time[:10]) for r in runs))))
    col_w, stacked, lead, fit = labelled if min(labelled[3], len(runs)) >= min(narrow[3], len(runs)) else narrow
    shown = list(range(len(runs)))[-fit:]
    accepted = [i for i, r in enumerate(runs) if r.accepted]
    if accepted and accepted[-1] not in shown:  # the gate's baseline stays in view
        shown = sorted([accepted[-1], *shown[len(shown) - fit + 1:]]) if fit > 1 else [accepted[-1]]
    heads, legend = _run_heads(runs, shown, col_w, width)
    lines = textwrap.wrap(f"{len(runs)} runs, oldest first; * = the gate's baseline (the last accepted run); "
                          "+ = accepted earlier; values: micro, else macro", width=width) + legend
    lines.append(("series" if not stacked else "").ljust(lead) + heads + "  " + "trend".ljust(len(runs))
                 + "  change")
    if any(r.verdict for r in runs):
        lines += ["gate verdicts:"] if stacked else []
        lines.append(("gate" if not stacked else "").ljust(lead)
                     + "".join((runs[i].verdict or "—").rjust(col_w) for i in shown))
    for t, name in zip(series, names):
        cells = "".join(g4(t.values[i]).rjust(col_w) for i in shown)
        present = [v for v in t.values if v is not None]
        change = g4(present[-1] - present[0], signed=True) if len(present) >= 2 else ""
        values = cells + "  " + sparkline(t.values).ljust(len(runs)) + "  " + change
        if stacked:
            lines += _wrap(name, width) + [" " * lead + values]
        else:
            lines.append(name.ljust(name_w) + values)
        band = xmr_band([v for i, v in enumerate(t.values) if runs[i].accepted and v is not None][-band_window:])
        if band is not None:
            last = t.values[-1]
            where = "" if last is None else " (last run outside)" if band.outside(last) else " (last run inside)"
            lines.append(" " * min(lead, 4) + f"band [{g4(band.low)}, {g4(band.high)}] center {g4(band.center)} "
                         f"(X-mR, {band.runs} accepted runs){where}")
    return "\n".join(lines)


def _run_heads(runs: Sequence[RunInfo], shown: Sequence[int], col_w: int, width: int) -> tuple[str, list[str]]:
    """The column heads of the runs ``shown`` (their labels; ``*`` marks the gate's baseline, the last accepted
    run, and only it; ``+`` an earlier accepted run, one of the control bands' runs) and, when a label is
    longer than a column, heads ``#ID`` instead and a legend of the full labels wrapped at ``width`` (never cut)."""
    labels = {i: runs[i].label or runs[i].time[:10] for i in shown}
    by_id = any(len(labels[i]) > col_w - 2 for i in shown)
    accepted = [i for i, r in enumerate(runs) if r.accepted]
    base = accepted[-1] if accepted else None
    heads = "".join(((f"#{runs[i].run_id}" if by_id else labels[i])
                     + ("*" if i == base else "+" if runs[i].accepted else "")).rjust(col_w) for i in shown)
    legend = _wrap("runs: " + "; ".join(f"#{runs[i].run_id} {labels[i]}" for i in shown), width) if by_id else []
    return heads, legend


@dataclass(frozen=True)
class ItemTrend:
    """One item's value of one metric per run (None where the run lacks it) and its state per run."""

    pipeline: str
    item: str
    doc_class: str
    values: list[float | None]
    states: list[str | None]


def item_trends(path: Path, metric: str, *, label: str = "", doc_class: str | None = None,
                pipeline: str | None = None, last: int = 20) -> tuple[list[RunInfo], list[ItemTrend], int]:
    """Per item, ``metric[label]``'s value in each of the last ``last`` runs (a DuckDB query of the
    ``measurements`` table), sorted so that the items that got worse the most between the reference run and the
    last run come first (the metric's direction, `ingestaudit.report.stats.orientation_of`; an item that went
    from ok to another state first of all). The reference is the last accepted run among those shown, else the
    first shown; its index in the runs is returned too.

    Returns:
        ``(runs, items, reference index)``.
    """
    from ingestaudit.report.stats import orientation_of

    runs = list_runs(path)[-last:] if last else list_runs(path)
    if not runs:
        return [], [], 0
    ids = [r.run_id for r in runs]
    where, args = ["run_id >= ?", "metric = ?", "label = ?"], [ids[0], metric, label]
    _narrow(where, args, doc_class=doc_class, pipeline=pipeline)
    with _connect(path, create=False, read_only=True) as con:
        rows = con.execute("SELECT run_id, pipeline, item, doc_class, value, state FROM measurements WHERE "
                           f"{' AND '.join(where)}", args).fetchall()
    by: dict[tuple[str, str], dict[int, tuple[float | None, str]]] = {}
    classes: dict[tuple[str, str], str] = {}
    for run_id, pipe, item, cls, value, state in rows:
        by.setdefault((pipe, item), {})[int(run_id)] = (value if state == "ok" else None, state)
        classes[(pipe, item)] = cls
    ref = max((i for i, r in enumerate(runs) if r.accepted), default=0)
    orient = orientation_of(metric, label)

    def worsening(t: ItemTrend) -> tuple[int, float]:
        a, b = t.values[ref], t.values[-1]
        if t.states[ref] == "ok" and t.states[-1] not in (None, "ok"):
            return (0, 0.0)  # was measured, no longer is: first
        if a is None or b is None:
            return (2, 0.0)
        return (1, -float(orient.badness(b) - orient.badness(a)))

    out = [ItemTrend(p, i, classes[(p, i)], [s.get(r, (None, None))[0] for r in ids],
                     [s.get(r, (None, None))[1] for r in ids]) for (p, i), s in by.items()]
    out.sort(key=lambda t: (*worsening(t), t.pipeline, t.item))
    return runs, out, ref


def render_item_trends(runs: Sequence[RunInfo], items: Sequence[ItemTrend], ref: int, metric: str,
                       width: int = 100, limit: int = 20) -> str:
    """Per item, its values in the last runs (as many columns as ``width`` allows; a state other than ok in
    place of a value) and the change from the reference run (``ref``) to the last: the ``limit`` items that
    worsened most first."""
    from ingestaudit.report.tables import direction, g4

    if not runs:
        return "no run recorded yet"
    if not items:
        return f"{len(runs)} runs; no item has a {metric} value (check --metric, --class and --pipeline)"
    ref_run = runs[ref]
    names = [f"{t.pipeline} · {t.item}" for t in items[:limit]]
    col_w = 10
    name_w = min(max(len(n) for n in names) + 2, max(20, width // 2))
    fit = max(1, (width - name_w - col_w - 2) // col_w)
    shown = list(range(len(runs)))[-fit:]
    heads, legend = _run_heads(runs, shown, col_w, width)
    lines = [f"{metric} {direction(metric)} per item over {len(runs)} runs; * = the gate's baseline, + = accepted earlier; "
             f"change = last run - "
             f"run {ref_run.run_id} ({ref_run.label or ref_run.time[:10]}); the items that got worse most first",
             "item".ljust(name_w) + heads + "  change"]
    lines = [w for line in lines[:1] for w in _wrap(line, width)] + legend + lines[1:]
    for t, name in zip(items[:limit], names):
        cells = "".join((g4(t.values[i]) if t.values[i] is not None else (t.states[i] or "—")[:col_w - 1])
                        .rjust(col_w) for i in shown)
        a, b = t.values[ref], t.values[-1]
        change = g4(b - a, signed=True) if a is not None and b is not None else ""
        if len(name) <= name_w - 2:
            lines.append(name.ljust(name_w) + cells + "  " + change)
        else:  # a long id gets a line of its own rather than being cut
            lines += [name, " " * name_w + cells + "  " + change]
    if len(items) > limit:
        lines.append(f"… and {len(items) - limit} more items (--pipeline, --class narrow the list)")
    return "\n".join(lines)


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=max(20, width), break_long_words=False, subsequent_indent="  ") or [""]
