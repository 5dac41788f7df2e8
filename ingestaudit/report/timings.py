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
        timings = json.loads(read_input_text(path, max_bytes=REPORT_BYTES, limit="REPORT_BYTES"))
    except (InputFileError, ValueError, RecursionError) as exc:
        return f"{path}: not read ({exc}); the timings are not shown"
    problem = shape_problem(timings)
    if problem:
        return f"{path}: not read ({problem}); the timings are not shown"
    report.timings = timings
    return ""


def shape_problem(timings: Any) -> str:
    """Why ``timings`` (a parsed timings.json) is not the shape the report reads, or ``""``: an object of objects
    (a pipeline's or the run's entry); a pipeline's ``index`` and ``retrieval`` entries objects, the index's
    ``cells`` a list of objects and the retrieval's ``latency_by_question_ms`` an object of numbers. A hand-edited
    file (``{"p": 5}``) made ``report`` fail with a traceback (the hostile trial)."""
    if not isinstance(timings, dict):
        return "an object of pipelines expected"
    for name, entry in timings.items():
        if not isinstance(entry, dict):
            return f"{name}: an object expected"
        for key in ("index", "retrieval"):
            if key in entry and not isinstance(entry[key], dict):
                return f"{name}.{key}: an object expected"
        cells = (entry.get("index") or {}).get("cells", [])
        if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
            return f"{name}.index.cells: a list of objects expected"
        latency = (entry.get("retrieval") or {}).get("latency_by_question_ms", {})
        if not isinstance(latency, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                    for v in latency.values()):
            return f"{name}.retrieval.latency_by_question_ms: an object of numbers expected"
    return ""
