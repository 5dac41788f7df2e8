"""`ingestaudit.report.baseline`: what ``--baseline`` and ``compare BASE`` read (the gate itself is tested through the
command line in test_gate_rules.py and test_history.py)."""

from __future__ import annotations

import re

import pytest

from ingestaudit.report.baseline import read_baseline
from ingestaudit.report.history import HistoryError
from ingestaudit.report.schema import ReportError


def test_a_history_not_started_yet_is_no_baseline_on_the_first_night_only(tmp_path):
    spec = f"history:{tmp_path / 'runs.duckdb'}"
    assert read_baseline(spec, first_night=True) == (None, "")
    with pytest.raises(HistoryError):
        read_baseline(spec)
    assert not (tmp_path / "runs.duckdb").exists()  # reading never creates the history


def test_a_report_that_is_not_one_raises_report_error_naming_it(tmp_path):
    bad = tmp_path / "report.json"
    bad.write_text("[]", encoding="utf-8")
    with pytest.raises(ReportError, match=re.escape(str(bad))):
        read_baseline(str(bad))
