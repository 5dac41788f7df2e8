"""Bad chunker output and failing chunkers give error rows for that document and pipeline only (issue 9)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.chain import ChunkOutputError, check_chunks
from ingestaudit.cli import app
from ingestaudit.model import Chunk
from _rows import load_report, measurements


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
    """Offsets past the text, negative or reversed: chunking error rows naming the chunk, for that document only;
    the output file is not rejected, so the document's extraction is still audited."""
    texts = {"good": "The pump runs at forty litres per hour.", "past": "The valve opens slowly.",
             "negative": "The seal is rubber.", "reversed": "The gauge reads low.", "boolean": "The tap drips.",
             "listed": "The hose is green."}
    bad = {"past": (0, 500), "negative": (-1, 7), "reversed": (9, 2), "boolean": (False, 7), "listed": ([3], 7)}
    root = tmp_path / "corpus"
    for name, text in texts.items():
        (root / "docs" / "c").mkdir(parents=True, exist_ok=True)
        (root / "docs" / "c" / f"{name}.txt").write_text("x\n")
        (root / "truth" / "c").mkdir(parents=True, exist_ok=True)
        (root / "truth" / "c" / f"{name}.txt").write_text(text)
        start, end = bad.get(name, (0, len(text)))
        out = tmp_path / "out" / "p" / "c"
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{name}.json").write_text(json.dumps({"text": text, "chunks": [
            {"text": text if name == "good" else text[:7], "start": start, "end": end}]}))
    report_dir = tmp_path / "report"
    res = CliRunner().invoke(app, ["run", str(root), "--outputs", str(tmp_path / "out"), "--out", str(report_dir),
                                   "--stage", "chunking", "--stage", "extraction"])
    assert res.exit_code == 0, res.output
    report = load_report(report_dir)
    rows = measurements(report)
    att = {r["item"]: r for r in rows if r["metric"] == "chunking.attribution"}
    assert att["c/good"]["state"] == "ok" and att["c/good"]["value"] == 1.0
    assert att["c/past"]["state"] == "error" and "chunk 0: end 500 is outside the text" in att["c/past"]["detail"]["reason"]
    assert "chunk 0: start -1 is outside the text" in att["c/negative"]["detail"]["reason"]
    assert "chunk 0: end 2 is before start 9" in att["c/reversed"]["detail"]["reason"]
    assert "precomputed chunk 0: 'start' must be an integer or null, got False" in \
        att["c/boolean"]["detail"]["reason"]  # not JSON's integer: still not a rejected file
    assert "precomputed chunk 0: 'start' must be an integer or null, got [3]" in att["c/listed"]["detail"]["reason"]
    assert sorted(f["item"] for f in report["failures"] if f["stage"] == "chunking") == [
        "c/boolean", "c/listed", "c/negative", "c/past", "c/reversed"]
    cer = {r["item"]: (r["state"], r["value"]) for r in rows if r["metric"] == "extraction.cer"}
    assert cer == {f"c/{name}": ("ok", 0.0) for name in texts}


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


# --- overlapping nonsense, a raising chunker, a missing model or tokenizer (end to end with user stages) -----------

def test_overlap_beyond_the_declared_bound_is_rejected_and_a_backwards_pointer_is_left_to_attribution():
    check_chunks([Chunk("abcdefghij", 0, 10), Chunk("fghijklmno", 5, 15)], 20, max_overlap=5)  # shares 5: fine
    with pytest.raises(ChunkOutputError, match=r"chunk 1 \[5, 15\) shares 5 code points with chunk 0 \[0, 10\), "
                                               r"more than the chunker's declared overlap of 4"):
        check_chunks([Chunk("abcdefghij", 0, 10), Chunk("fghijklmno", 5, 15)], 20, max_overlap=4)
    with pytest.raises(ChunkOutputError, match="chunk 2 .* shares 3 code points with chunk 1"):
        check_chunks([Chunk("ab", 0, 2), Chunk("cdef", 2, 6), Chunk("def", 3, 6)], 10, max_overlap=0)
    # a chunk going back (a first-occurrence search on repeated text) is chunking.attribution's out_of_order
    check_chunks([Chunk("A.", 0, 2), Chunk("B.", 3, 5), Chunk("A.", 0, 2)], 11, max_overlap=0)
    check_chunks([Chunk("abcdefghij", 0, 10), Chunk("bcd", 1, 4)], 20)  # no declared bound: nested is left alone


@pytest.mark.parametrize("name, options", [
    ("recursive", {"size": 40, "overlap": 12}), ("recursive", {"size": 25}), ("fixed", {"size": 30, "overlap": 9,
                                                                                        "unit": "chars"}),
    ("structural", {"size": 30, "overlap": 10}), ("precomputed", {"max_overlap": 3}),
])
def test_the_built_in_chunkers_declare_the_overlap_they_keep(name, options):
    from ingestaudit.stages.chunkers import ChunkerInput, load_chunker

    text = ("Alpha beta gamma. Delta epsilon zeta eta. Theta iota kappa.\n\nLambda mu nu xi omicron. Pi rho "
            "sigma tau upsilon.\nPhi chi psi omega. ") * 3
    chunker = load_chunker(name, options)
    declared = {"recursive": options.get("overlap", 0), "fixed": 9, "structural": 10, "precomputed": 3}[name]
    assert chunker.max_overlap() == declared
    if name != "precomputed":
        check_chunks(chunker.chunk(ChunkerInput(text)), len(text), max_overlap=chunker.max_overlap())
    assert load_chunker("fixed", {"size": 30, "overlap": 9}).max_overlap() is None  # 9 tokens: no fixed length
    assert load_chunker("recursive", {"size": 30, "unit": "tokens"}).max_overlap() is None


def _corpus(tmp_path: Path, texts: dict[str, str]) -> Path:
    root = tmp_path / "corpus"
    for name, text in texts.items():
        (root / "docs" / "c").mkdir(parents=True, exist_ok=True)
        (root / "docs" / "c" / f"{name}.txt").write_text("x\n")
        (root / "truth" / "c").mkdir(parents=True, exist_ok=True)
        (root / "truth" / "c" / f"{name}.txt").write_text(text)
    return root


def _config(tmp_path: Path, pipeline: str) -> Path:
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(f'[run]\nexecutor = "serial"\ncache_dir = "{tmp_path / "cache"}"\n\n[pipelines.p]\n{pipeline}\n')
    return cfg


def _chunking_rows(report_dir: Path) -> dict[tuple[str, str], dict]:
    report = load_report(report_dir)
    return {(r["item"], r["metric"]): r for r in measurements(report) if r["stage"] == "chunking"}, report


def test_a_chunker_that_raises_is_error_rows_for_that_document_only(tmp_path: Path):
    root = _corpus(tmp_path, {"good": "The pump runs at forty litres per hour. It is quiet.",
                              "bad": "The valve opens BOOM slowly."})
    cfg = _config(tmp_path, 'parser = "reference"\nchunker = "_chain_stubs:BoomChunker"\n'
                            'embedder = "_chain_stubs:WordEmbedder"')
    res = CliRunner().invoke(app, ["run", str(root), "--config", str(cfg), "--out", str(tmp_path / "r"),
                                   "--stage", "chunking"])
    assert res.exit_code == 0, res.output
    rows, report = _chunking_rows(tmp_path / "r")
    assert rows["c/good", "chunking.attribution"]["state"] == "ok"
    assert rows["c/good", "chunking.attribution"]["value"] == 1.0
    bad = [r for (item, _), r in rows.items() if item == "c/bad"]
    assert bad and {r["state"] for r in bad} == {"error"}
    assert all("cannot split a text holding BOOM" in r["detail"]["reason"] for r in bad)
    assert [(f["item"], f["stage"]) for f in report["failures"]] == [("c/bad", "chunking")]


def test_overlapping_nonsense_from_a_pipeline_is_error_rows_for_that_document_only(tmp_path: Path):
    texts = {"good": "The pump runs at forty litres per hour.", "bad": "The valve opens slowly and closes fast."}
    root = _corpus(tmp_path, texts)
    chunks = {"good": [(0, 20), (20, 39)], "bad": [(0, 25), (4, 30)]}  # bad: chunk 1 shares 21 code points
    for name, text in texts.items():
        out = tmp_path / "out" / "p" / "c"
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{name}.json").write_text(json.dumps(
            {"text": text, "chunks": [{"text": text[s:e], "start": s, "end": e} for s, e in chunks[name]]}))
    cfg = _config(tmp_path, 'chunker = { use = "precomputed", max_overlap = 0 }\n'
                            'embedder = "_chain_stubs:WordEmbedder"')
    res = CliRunner().invoke(app, ["run", str(root), "--outputs", str(tmp_path / "out"), "--config", str(cfg),
                                   "--out", str(tmp_path / "r"), "--stage", "chunking"])
    assert res.exit_code == 0, res.output
    rows, report = _chunking_rows(tmp_path / "r")
    assert rows["c/good", "chunking.attribution"]["value"] == 1.0
    reason = rows["c/bad", "chunking.attribution"]["detail"]["reason"]
    assert rows["c/bad", "chunking.attribution"]["state"] == "error"
    assert "chunk 1 [4, 30) shares 21 code points with chunk 0 [0, 25)" in reason and "declared overlap of 0" in reason
    assert [f["item"] for f in report["failures"] if f["stage"] == "chunking"] == ["c/bad"]
    assert report["pipelines"][0]["stages"]["chunker"]["settings"]["max_overlap"] == 0


@pytest.mark.parametrize("files, message", [
    (("modules.json",), "has no tokenizer.json"),  # the tokenizer is missing
    ((), "is not a sentence-transformers model folder (no modules.json)"),  # the model is missing
])
def test_a_missing_tokenizer_or_model_is_one_clear_error_naming_pipeline_and_option(tmp_path: Path, files, message):
    root = _corpus(tmp_path, {"a": "Some text."})
    model = tmp_path / "model"
    model.mkdir()
    for name in files:
        (model / name).write_text("[]")
    cfg = _config(tmp_path, f'parser = "reference"\nembedder = {{ use = "sentence-transformers", model = "{model}" }}')
    res = CliRunner().invoke(app, ["run", str(root), "--config", str(cfg), "--out", str(tmp_path / "r"),
                                   "--stage", "chunking"])
    assert res.exit_code == 2
    said = " ".join(res.output.split())  # the console wraps long lines
    # the start-up check (as `validate`'s): the pipeline, the step and the option named; the setup script, which
    # installs the shipped MiniLM, is no help with the user's own folder
    assert f"pipeline 'p', embedder: embedder 'sentence-transformers': embedder.model: {model} {message}" in said
    assert not (tmp_path / "r" / "report.json").exists()  # before any document
