"""The tests' one way to read a report's measurement rows (issue 14: the rows moved from report.json into
measurements.parquet, which report.json names with its SHA-256).

``load_report(out)`` reads ``out/report.json`` as a dict that remembers where it came from; ``measurements(x)``
gives the rows of such a dict, of an output folder, of a report.json path or of a `Report`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DIR_KEY = "_dir"  # added by load_report: the folder the report was read from (never a report.json key)


def load_report(where: Path | str) -> dict[str, Any]:
    """``report.json`` of an output folder (or the file itself) as a dict, with `DIR_KEY` set to its folder."""
    path = Path(where)
    path = path / "report.json" if path.is_dir() else path
    raw = json.loads(path.read_text(encoding="utf-8"))
    raw[DIR_KEY] = str(path.parent)
    return raw


def measurements(where: Any) -> list[dict[str, Any]]:
    """Every row of a report, as dicts shaped like the inline rows of schema 2.0 (``doc_class``, ``detail`` a
    dict), in canonical order, read through `ingestaudit.report.rows.measurement_rows` (which checks the store's
    SHA-256).

    Args:
        where: a dict from `load_report`, an output folder, a report.json path, or a
            `ingestaudit.report.schema.Report`.
    """
    from ingestaudit.report.rows import measurement_rows
    from ingestaudit.report.schema import Report, read_report

    if isinstance(where, Report):
        report = where
    else:
        path = Path(where[DIR_KEY]) if isinstance(where, dict) else Path(where)
        report = read_report(path / "report.json" if path.is_dir() else path)
    return [r.model_dump(mode="json") for r in measurement_rows(report)]
