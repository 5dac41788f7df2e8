"""Bad chunker output and failing chunkers give error rows for that document and pipeline only (issue 9)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.chain import ChunkOutputError, check_chunks
from ingestaudit.cli import app
from ingestaudit.model import Chunk


@pytest.mark.parametrize("chunk, message", [
    (Chunk("abc", 0, 99), "end 99 is outside the text"),
    (Chunk("   ", 0, 3), "chunk 0 is empty"),
    (Chunk("abc", 5, 2), "end 2 is before start 5"),
    (Chunk("abc", True, 3), "start True is outside the text"),
])
def test_impossible_chunks_are_rejected_with_the_chunk_named(chunk, message):
    with pytest.raises(ChunkOutputError, match=message):
        check_chunks([chunk], 10)


def test_a_wrong_but_possible_pointer_is_left_to_the_attribution_audit():
    check_chunks([Chunk("abc", 0, 3), Chunk("abc", 0, 3), Chunk("x")], 10)  # repeated and missing pointers


@pytest.mark.slow
def test_one_bad_output_is_error_rows_for_that_document_only(tmp_path: Path):
    root = tmp_path / "corpus"
    for name, text in (("good", "The pump runs at forty litres per hour."), ("bad", "The valve opens slowly.")):
        (root / "docs" / "c").mkdir(parents=True, exist_ok=True)
        (root / "docs" / "c" / f"{name}.txt").write_text("x\n")
        (root / "truth" / "c").mkdir(parents=True, exist_ok=True)
        (root / "truth" / "c" / f"{name}.txt").write_text(text)
        chunks = [{"text": text, "start": 0, "end": len(text)}] if name == "good" else [
            {"text": "The valve", "start": 0, "end": 500}]
        out = tmp_path / "out" / "p" / "c"
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{name}.json").write_text(json.dumps({"text": text, "chunks": chunks}))
    report_dir = tmp_path / "report"
    res = CliRunner().invoke(app, ["run", str(root), "--outputs", str(tmp_path / "out"), "--out", str(report_dir),
                                   "--stage", "chunking"])
    assert res.exit_code == 0, res.output
    report = json.loads((report_dir / "report.json").read_text())
    att = {r["item"]: r for r in report["measurements"] if r["metric"] == "chunking.attribution"}
    assert att["c/good"]["state"] == "ok" and att["c/good"]["value"] == 1.0
    assert att["c/bad"]["state"] == "error" and "end 500 is outside the text" in att["c/bad"]["detail"]["reason"]
    assert [f["item"] for f in report["failures"] if f["stage"] == "chunking"] == ["c/bad"]


def test_an_unknown_embedder_is_one_clear_error_before_any_document(tmp_path: Path):
    root = tmp_path / "corpus"
    (root / "docs" / "c").mkdir(parents=True)
    (root / "docs" / "c" / "a.txt").write_text("x\n")
    cfg = tmp_path / "cfg.toml"
    cfg.write_text('[pipelines.p]\nparser = "reference"\nembedder = "no-such-model"\n')
    res = CliRunner().invoke(app, ["run", str(root), "--config", str(cfg), "--out", str(tmp_path / "r"),
                                   "--stage", "chunking"])
    assert res.exit_code == 2
    assert "no-such-model" in res.output
    assert not (tmp_path / "r" / "report.json").exists()
