"""The index step (issue 24 point 1): each index is built once per pipeline and vector set, and a run with the index
and retrieval stages builds one exact and one approximate index per pipeline (timings.json says so)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.pipeline import make_pipeline
from ingestaudit.stages.index_step import IndexStep


def _vectors(n: int, d: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_an_index_is_built_once_per_vector_set_and_settings():
    step = IndexStep.for_pipeline(make_pipeline("p", {"index": {"use": "hnsw", "m": 8}}), seed=3)
    assert (step.settings.kind, step.settings.m, step.settings.seed, step.normalise) == ("hnsw", 8, 3, True)
    x = _vectors(50, 4, 0)
    first = step.ann(x)
    again = step.ann(x.copy())  # another array, the same bytes: the same index
    assert again is first and step.builds == {"exact": 0, "approximate": 1}
    other = step.ann(_vectors(50, 4, 1))  # another vector set: another index, counted
    assert other is not first and step.builds == {"exact": 0, "approximate": 2}
    assert step.exact(x, "cosine") is step.exact(x.copy(), "cosine")
    assert step.builds == {"exact": 1, "approximate": 2}
    t = step.timings()
    assert t["index_builds"] == {"exact": 1, "approximate": 2}
    assert len(t["build_seconds"]["approximate"]) == 2 and len(t["build_seconds"]["exact"]) == 1
    # the served search is the index's: a vector's own row is its nearest neighbour on a flat index
    _, ids = step.exact(x, "cosine").search(x[7:8], 2)
    assert ids[0, 0] == 7


def test_bad_index_options_are_kept_and_raised_to_each_auditor_that_asks():
    step = IndexStep.for_pipeline(make_pipeline("p", {"index": {"use": "hnsw", "ef_serch": 8}}), seed=0)
    assert step.settings is None
    for _ in range(2):
        with pytest.raises(ValueError, match="unknown option.*ef_serch"):
            step.pipeline_settings()
    with pytest.raises(ValueError, match="ef_serch"):
        step.ann(_vectors(5, 2, 0))
    assert step.builds == {"exact": 0, "approximate": 0}


def _write(path: Path, data: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data, encoding="utf-8")


@pytest.mark.slow
def test_a_run_with_index_and_retrieval_builds_each_index_once_per_pipeline(tmp_path):
    """Acceptance (issue 24): two pipelines, both pipeline-level stages; each pipeline's index step builds one
    exact and one approximate index, and the retrieval timings name the very build the index audit timed."""
    corpus, outputs = tmp_path / "corpus", tmp_path / "outputs"
    texts = {name: " ".join(f"Sentence {i} of {name} tells about topic {i % 5}." for i in range(12))
             for name in ("a", "b", "c")}
    for name, text in texts.items():
        _write(corpus / "docs" / "c" / f"{name}.txt", "source\n")
        _write(corpus / "truth" / "c" / f"{name}.txt", text)
        chunks = [{"text": text[p:p + 60], "start": p, "end": min(p + 60, len(text))} for p in range(0, len(text), 60)]
        for pipe in ("one", "two"):
            _write(outputs / pipe / "c" / f"{name}.json", json.dumps({"text": text, "chunks": chunks}))
    questions = [{"id": f"q{n}", "question": f"What does sentence {n} of {name} tell?",
                  "relevant": [{"doc": f"c/{name}"}]} for n, name in enumerate(("a", "b", "c"))]
    _write(corpus / "questions.jsonl", "\n".join(json.dumps(q) for q in questions) + "\n")
    _write(tmp_path / "run.toml",
           f'[run]\nexecutor = "serial"\ncache_dir = "{tmp_path / "cache"}"\n\n'
           '[pipelines.one]\nembedder = { use = "_chain_stubs:HashEmbedder" }\nindex = { use = "hnsw", m = 8 }\n\n'
           '[pipelines.two]\nembedder = { use = "_chain_stubs:HashEmbedder" }\nindex = { use = "ivf", nlist = 2 }\n')
    def run(out: Path, *stages: str) -> tuple[dict, dict]:
        args = [a for st in stages for a in ("--stage", st)]
        res = CliRunner().invoke(app, ["run", str(corpus), "--outputs", str(outputs), "--config",
                                       str(tmp_path / "run.toml"), *args, "--out", str(out)])
        assert res.exit_code == 0, res.output
        return (json.loads((out / "timings.json").read_text()), json.loads((out / "report.json").read_text()))

    timings, report = run(tmp_path / "both", "index", "retrieval")
    assert sorted(timings) == ["(run)", "one", "two"]  # "(run)": the run's step_seconds and wall time (issue 27)
    for pipe in ("one", "two"):
        t = timings[pipe]
        assert t["steps"]["index"]["index_builds"] == {"exact": 1, "approximate": 1}
        (built,) = t["steps"]["index"]["build_seconds"]["approximate"]
        assert t["index"]["build_seconds"] == built == t["retrieval"]["index_build_s"]["approximate"]
        assert t["retrieval"]["index_build_s"]["exact"] == t["steps"]["index"]["build_seconds"]["exact"][0]
    # the retrieval numbers on the shared index are those of a run of retrieval alone
    alone_t, alone = run(tmp_path / "alone", "retrieval")
    assert alone_t["one"]["steps"]["index"]["index_builds"] == {"exact": 1, "approximate": 1}

    def retrieval_rows(rep: dict) -> list[dict]:
        return [r for r in rep["summary"] if r["stage"] == "retrieval"]

    assert retrieval_rows(report) == retrieval_rows(alone)
    recall = [r for r in retrieval_rows(report) if r["metric"] == "retrieval.recall@10" and r["doc_class"] == "__all__"]
    assert sorted((r["pipeline"], r["denominator"]) for r in recall) == [("one", 3.0), ("two", 3.0)]
