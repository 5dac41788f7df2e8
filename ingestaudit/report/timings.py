"""Reading back a run's ``timings.json`` (wall-clock times of its steps, written beside report.json by
`ingestaudit.io.write_report`, never inside it): what ``ingestaudit report`` attaches to the report it re-renders."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

TIMINGS_NAME = "timings.json"


def timings_path(report_json: Path) -> Path:
    """The ``timings.json`` beside ``report_json`` (it may not exist)."""
    return Path(report_json).parent / TIMINGS_NAME


def attach_timings(report: Any, report_json: Path) -> str:
    """Set ``report.timings`` (`ingestaudit.report.schema.Report.timings`) to the ``timings.json`` beside
    ``report_json``, read as any user file (issue 30: a FIFO or a device is named, never waited on), at most
    `ingestaudit.report.schema.REPORT_BYTES` bytes; the report is left as it is when there is no such file.

    Returns:
        ``""``, or a warning naming the file and the reason when it cannot be used (not a regular file, too large,
        not UTF-8, invalid or too deeply nested JSON): timings are optional, so a bad file never raises.
    """
    from ingestaudit.inputs import InputFileError, read_input_text
    from ingestaudit.report.schema import REPORT_BYTES

    path = timings_path(report_json)
    if not os.path.lexists(path):
        return ""
    try:
        report.timings = json.loads(read_input_text(path, max_bytes=REPORT_BYTES, limit="REPORT_BYTES"))
    except (InputFileError, ValueError, RecursionError) as exc:
        return f"{path}: not read ({exc}); the timings are not shown"
    return ""
