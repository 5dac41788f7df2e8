"""The gate's one rule for measurements a head may leave out (`ingestaudit.report.compare.not_run`): freshness rows of
a baseline run with ``--events`` are not missing in a head run without it; a head given ``--events`` that lost them
still fails."""

from __future__ import annotations

import json

from _reportkit import build, cer_rows

from ingestaudit.events import freshness_rows
from ingestaudit.report.compare import compare_reports, not_run, render_comparison
from ingestaudit.report.gate_result import gate_result


def _events(tmp_path, lines):
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


def _with_events(tmp_path, lines):
    rows = cer_rows("p", "c", [0.1] * 6)
    classes = {f"c/d{i:02d}": "c" for i in range(6)}
    summary, details, failures = freshness_rows(_events(tmp_path, lines), ["p"], classes)
    return build(rows, extra_summary=summary, details=details, failures=failures), rows


EVENTS = [{"doc": "c/d00", "committed_at": "2026-01-05T10:00:00Z", "indexed_at": "2026-01-05T10:00:10Z"},
          {"doc": "c/d01", "committed_at": "2026-01-05T10:00:00Z", "indexed_at": "2026-01-05T10:00:20Z"},
          {"query_at": "2026-01-05T10:00:05Z", "doc": "c/d00"}]


def test_a_head_without_events_does_not_miss_the_baselines_freshness_rows(tmp_path):
    base, rows = _with_events(tmp_path, EVENTS)
    # lags 10 s and 20 s: p50 = 1st smallest (ceil(0.5 * 2) = 1) = 10 s, p99 = 2nd = 20 s; one query at 10:00:05,
    # while c/d00's version committed at 10:00:00 was indexed at 10:00:10: stale share 1/1
    lag = {(r.doc_class, r.label): r.micro for r in base.summary if r.metric == "index.freshness_lag"}
    assert lag == {("__all__", "p50"): 10.0, ("__all__", "p99"): 20.0, ("c", "p50"): 10.0, ("c", "p99"): 20.0}
    head = build(rows)
    assert set(not_run(head)) == {"index.freshness_lag", "index.stale_query_share"}
    assert not_run(base) == {}
    c = compare_reports(base, head)
    assert not c.failed and c.missing == []
    # 4 lag rows (2 labels x {c, __all__}) and 2 stale-share rows (c, __all__): listed, not gated
    assert c.not_run == [{"pipeline": "p", "metric": "index.freshness_lag", "rows": 4,
                          "reason": "the head was run without --events"},
                         {"pipeline": "p", "metric": "index.stale_query_share", "rows": 2,
                          "reason": "the head was run without --events"}]
    assert ("not run in the head (not gated): index.freshness_lag, index.stale_query_share: the head was run "
            "without --events") in render_comparison(c, width=200).splitlines()
    result = gate_result(c, [], [])  # gate.json: a pass that says what it did not gate
    assert result.verdict == "pass" and result.not_run_in_head == c.not_run


def test_a_head_given_events_that_lost_the_rows_still_fails(tmp_path):
    base, rows = _with_events(tmp_path, EVENTS)
    # the head was given an events file it could not use (a directory): a failure and a detail, no row
    summary, details, failures = freshness_rows(tmp_path, ["p"], {})
    assert summary == [] and details[0].data["input"] == "--events" and failures[0].stage == "events"
    head = build(rows, details=details, failures=failures)
    c = compare_reports(base, head)
    assert c.failed and c.not_run == []
    assert sum(m.rows for m in c.missing) == 6
