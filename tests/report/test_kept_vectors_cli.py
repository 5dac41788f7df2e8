"""``run --keep-vectors``, ``run --baseline`` and ``compare`` with kept vectors (embedding drift), and ``--events``
(index freshness), end to end on a four-document precomputed corpus with a model-free embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app

DOCS = ("a", "b", "c", "d")


def _outputs(outputs: Path, rechunk: str = "") -> None:
    for name in DOCS:
        text = " ".join(f"Sentence {i} of {name} tells about topic {i % 5}." for i in range(30))
        size = 70 if name == rechunk else 50
        chunks = [{"text": text[p:p + size], "start": p, "end": min(p + size, len(text))}
                  for p in range(0, len(text), size)]
        (outputs / "monitor" / "c").mkdir(parents=True, exist_ok=True)
        (outputs / "monitor" / "c" / f"{name}.json").write_text(json.dumps({"text": text, "chunks": chunks}))


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("kept")
    corpus = root / "corpus"
    (corpus / "docs" / "c").mkdir(parents=True)
    for name in DOCS:
        (corpus / "docs" / "c" / f"{name}.txt").write_text("source\n")
    _outputs(root / "same")
    _outputs(root / "rechunked", rechunk="d")
    (root / "run.toml").write_text(
        f'[run]\nexecutor = "serial"\ncache_dir = "{root / "cache"}"\n\n'
        '[pipelines.monitor]\nembedder = { use = "_chain_stubs:HashEmbedder" }\nindex = { use = "hnsw", m = 8 }\n')
    return root, corpus


def _run(setup, out: str, outputs: str, *extra: str):
    root, corpus = setup
    res = CliRunner().invoke(app, ["run", str(corpus), "--outputs", str(root / outputs), "--config",
                                   str(root / "run.toml"), "--stage", "index", "--out", str(root / out), *extra],
                             env={"COLUMNS": "120"})
    return res, root / out


@pytest.fixture(scope="module")
def kept(setup):
    res, out = _run(setup, "kept", "same", "--keep-vectors")
    assert res.exit_code == 0, res.output
    return out


def test_keep_vectors_writes_the_files_and_a_note_and_nothing_else_changes(setup, kept):
    names = sorted(p.name for p in kept.iterdir() if p.name.startswith("vectors"))
    assert names == ["vectors-0-questions.npy", "vectors-0.npy", "vectors-keys.parquet", "vectors.json"]
    import numpy as np

    vecs = np.load(kept / "vectors-0.npy", mmap_mode="r")
    assert vecs.dtype == np.float32 and vecs.shape[1] == 8
    rep = json.loads((kept / "report.json").read_text())
    notes = [d for d in rep["details"] if d["stage"] == "embedding"]
    assert [n["name"] for n in notes] == ["kept_vectors"] and notes[0]["data"]["rows"] == vecs.shape[0]
    res, plain = _run(setup, "plain", "same")
    assert res.exit_code == 0, res.output
    assert not any(p.name.startswith("vectors") for p in plain.iterdir())
    # without the switch: the report is the kept run's minus its note (the rows never changed)
    rep["details"] = [d for d in rep["details"] if d["stage"] != "embedding"]
    text = (plain / "report.json").read_text()
    assert json.loads(text) == rep and '"embedding"' not in text
    # a report folder holding kept vectors is still a report folder: a later run replaces it and drops them
    res, again = _run(setup, "kept", "same")
    assert res.exit_code == 0, res.output
    assert not any(p.name.startswith("vectors") for p in again.iterdir())
    res, _ = _run(setup, "kept", "same", "--keep-vectors")
    assert res.exit_code == 0, res.output


def test_baseline_with_identical_vectors_is_stable_and_rechunking_is_seen(setup, kept, tmp_path):
    res, same = _run(setup, "same-run", "same", "--keep-vectors", "--baseline", str(kept / "report.json"))
    assert res.exit_code == 0, res.output
    drift = [d for d in json.loads((same / "report.json").read_text())["details"] if d["name"] == "drift"][0]["data"]
    assert drift[0]["state"] == "ok" and drift[0]["nn_stability"] == 1.0
    assert drift[0]["mmd"]["p_value"] >= 0.05 and abs(drift[0]["cosine_unchanged"]["mean"] - 1.0) < 1e-6
    assert "embedding drift" in res.output and "embedding.nn_stability@10 = 1" in res.output
    md = (same / "report.md").read_text()
    assert "## Embedding drift" in md and "B = 500 permutations" in md
    assert "Embedding drift" in (same / "report.html").read_text()

    res, moved = _run(setup, "moved-run", "rechunked", "--keep-vectors", "--baseline", str(kept / "report.json"))
    assert res.exit_code in (0, 1), res.output
    drift = [d for d in json.loads((moved / "report.json").read_text())["details"] if d["name"] == "drift"][0]["data"]
    assert drift[0]["nn_stability"] < 1.0
    assert drift[0]["least_stable"][0]["stability"] < 1.0
    assert "d[" in " ".join(drift[0]["least_stable"][0]["head"] + drift[0]["least_stable"][0]["base"])
    cmp = CliRunner().invoke(app, ["compare", str(kept / "report.json"), str(moved / "report.json"), "--json"])
    assert cmp.exit_code in (0, 1), cmp.output
    got = json.loads(cmp.output)["embedding_drift"]
    assert got[0]["nn_stability"] == drift[0]["nn_stability"]


def test_baseline_of_another_model_is_not_comparable(setup, kept):
    root, _ = setup
    text = (root / "run.toml").read_text().replace("HashEmbedder", "WordEmbedder")
    (root / "words.toml").write_text(text)
    res = CliRunner().invoke(app, ["run", str(setup[1]), "--outputs", str(root / "same"), "--config",
                                   str(root / "words.toml"), "--stage", "index", "--out", str(root / "words"),
                                   "--keep-vectors", "--baseline", str(kept / "report.json")])
    drift = [d for d in json.loads((root / "words" / "report.json").read_text())["details"]
             if d["name"] == "drift"][0]["data"]
    assert drift[0]["state"] == "not_comparable" and "dimension 8 in the baseline, 4 in this run" in drift[0]["reason"]
    assert "metrics" not in drift[0]


def test_events_give_freshness_rows_and_name_bad_lines(setup, tmp_path):
    lines = [{"doc": "c/a", "committed_at": "2026-01-01T00:00:00Z", "indexed_at": "2026-01-01T00:00:10Z"},
             {"doc": "c/b", "committed_at": "2026-01-01T00:00:00Z", "indexed_at": "2026-01-01T00:00:20Z"},
             {"doc": "c/c", "committed_at": "2026-01-01T00:00:00+00:00", "indexed_at": "2026-01-01T00:00:30Z"},
             {"doc": "c/d", "committed_at": "2026-01-01T00:00:00Z", "indexed_at": "2026-01-01T00:00:40Z"},
             {"doc": "c/a", "committed_at": "2026-01-01T01:00:00Z", "indexed_at": "2026-01-01T01:16:40Z"},
             {"doc": "c/a", "committed_at": "yesterday", "indexed_at": "2026-01-01T00:00:40Z"},
             {"doc": "c/b", "committed_at": "2026-01-01T00:01:00Z", "indexed_at": "2026-01-01T00:00:00Z"},
             {"doc": "c/zzz", "committed_at": "2026-01-01T00:00:00Z", "indexed_at": "2026-01-01T00:00:01Z"},
             {"query_at": "2026-01-01T01:05:00Z", "doc": "c/a"},
             {"query_at": "2026-01-01T02:00:00Z", "doc": "c/a"}]
    events = tmp_path / "events.jsonl"
    events.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    res, out = _run(setup, "fresh", "same", "--events", str(events))
    assert res.exit_code == 0, res.output
    rep = json.loads((out / "report.json").read_text())
    rows = {(r["metric"], r["label"], r["doc_class"]): r for r in rep["summary"]
            if r["metric"].startswith(("index.freshness", "index.stale"))}
    assert rows[("index.freshness_lag", "p50", "__all__")]["micro"] == 30.0  # lags 10, 20, 30, 40, 1000
    assert rows[("index.freshness_lag", "p99", "__all__")]["micro"] == 1000.0
    share = rows[("index.stale_query_share", "", "__all__")]
    assert (share["numerator"], share["denominator"], share["micro"]) == (1, 2, 0.5)
    bad = {(f["item"], f["message"].split(":")[0]) for f in rep["failures"] if f["stage"] == "events"}
    assert bad == {(f"{events}:6", "committed_at"), (f"{events}:7", "indexed_at"), (f"{events}:8", "doc")}
    detail = [d for d in rep["details"] if d["name"] == "freshness"][0]["data"]
    assert detail["problems"] == 3 and detail["problem_kinds"] == {
        "indexed_before_committed": 1, "unknown_document": 1, "unparseable_time": 1}


def test_a_missing_events_file_is_refused_before_the_audit(setup, tmp_path):
    res, out = _run(setup, "no-events", "same", "--events", str(tmp_path / "absent.jsonl"))
    assert res.exit_code == 2 and "--events" in res.output and "cannot be read (No such file or directory)" in res.output
    assert not (out / "report.json").exists()
