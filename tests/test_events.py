"""Reading an --events file: each bad line named by file:line and field, counted by kind, never a negative lag."""

import json

import pytest

from ingestaudit.events import freshness_scores, parse_time, read_events
from ingestaudit.inputs import InputFileError


def test_bad_lines_are_named_and_counted(tmp_path):
    path = tmp_path / "ev.jsonl"
    path.write_text("\n".join([
        "not json",
        "[1, 2]",
        json.dumps({"committed_at": "2026-01-01T00:00:00Z", "indexed_at": "2026-01-01T00:00:05Z"}),
        json.dumps({"doc": "x", "committed_at": "2026-01-01T00:00:00", "indexed_at": "2026-01-01T00:00:05Z"}),
        json.dumps({"doc": "x", "indexed_at": "2026-01-01T00:00:05Z"}),
        json.dumps({"doc": "x", "committed_at": "2026-01-01T00:00:00Z", "indexed_at": "2026-01-01T01:00:05+01:00"}),
        "",
        json.dumps({"query_at": 5, "doc": "x"}),
    ]) + "\n")
    got = read_events(path, ["x"])
    assert [(w.rsplit(":", 1)[1], f) for w, f, _ in got.problems] == [
        ("1", "line"), ("2", "line"), ("3", "doc"), ("4", "committed_at"), ("5", "committed_at"), ("8", "query_at")]
    assert "no UTC offset" in got.problems[3][2]
    assert got.kinds == {"malformed": 4, "unparseable_time": 2}
    assert got.events == [("x", 1767225600.0, 1767225605.0)]  # +01:00 offset honoured: a 5 s lag


def test_no_usable_event_is_no_reference_and_a_missing_file_is_an_input_error(tmp_path):
    from ingestaudit.events import EventsRead

    rows = freshness_scores(EventsRead(), {})
    assert [(c, s.state.value, s.label) for c, s, _ in rows] == [("__all__", "no_reference", "p50"),
                                                                ("__all__", "no_reference", "p99")]
    with pytest.raises(InputFileError):
        read_events(tmp_path / "absent.jsonl", [])
    with pytest.raises(ValueError):
        parse_time(12)
