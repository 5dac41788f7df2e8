"""The index's headline key is tie-aware recall (issue 11: "recall that ties, duplicates and normalisation cannot
fool"): on a corpus of repeated chunks (exact duplicate vectors) intersection recall counts an equally close copy as a
miss, tie-aware recall does not. The headline, the gate's key rows (bands, JUnit) and the verdict read the tie-aware
row; ``index.recall@10`` stays in the full tables."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.report.schema import read_report
from ingestaudit.report.tables import choose_keys, headlines


def test_choose_keys_prefers_tie_aware_recall_and_falls_back_by_family():
    both = [("index.recall@10", ""), ("index.recall_tie_aware@10", ""), ("index.duplicate_vectors", "")]
    assert choose_keys(both)["index"] == ("index.recall_tie_aware@10", "")
    other_k = [("index.recall@5", ""), ("index.recall_tie_aware@1", ""), ("index.recall_tie_aware@5", "")]
    assert choose_keys(other_k)["index"] == ("index.recall_tie_aware@5", "")
    assert choose_keys([("index.recall@5", ""), ("index.recall@1", "")])["index"] == ("index.recall@5", "")


@pytest.mark.slow
def test_repeated_chunks_headline_is_tie_aware_and_the_gate_holds(tmp_path):
    """5 documents of 9 chunks, each the same 3 sentences repeated: 45 vectors, 3 distinct (42 duplicates). Each of
    the 45 sampled chunk queries has 14 other copies at distance 0, so any 10 of them are an exact top 10: tie-aware
    recall@10 is 450/450 = 1 by hand, while intersection recall counts the copies HNSW returns that are not exact
    search's first 10 by id as misses (below 1)."""
    corpus, outputs = tmp_path / "corpus", tmp_path / "outputs"
    (corpus / "docs" / "c").mkdir(parents=True)
    (outputs / "monitor" / "c").mkdir(parents=True)
    for name in "abcde":
        (corpus / "docs" / "c" / f"{name}.txt").write_text("source\n")
        chunks, text = [], ""
        for j in range(9):
            t = f"Repeated boilerplate chunk number {j % 3} for all docs."
            chunks.append({"text": t, "start": len(text), "end": len(text) + len(t)})
            text += t + " "
        (outputs / "monitor" / "c" / f"{name}.json").write_text(json.dumps({"text": text, "chunks": chunks}))
    (tmp_path / "run.toml").write_text(
        f'[run]\nexecutor = "serial"\ncache_dir = "{tmp_path / "cache"}"\n\n'
        '[pipelines.monitor]\nembedder = { use = "_chain_stubs:HashEmbedder" }\nindex = { use = "hnsw", m = 8 }\n')
    out = tmp_path / "r1"
    res = CliRunner().invoke(app, ["run", str(corpus), "--outputs", str(outputs), "--config", str(tmp_path / "run.toml"),
                                   "--stage", "index", "--out", str(out)])
    assert res.exit_code == 0, res.output
    summ = {s["metric"]: s for s in json.loads((out / "report.json").read_text())["summary"]
            if s["doc_class"] == "__all__" and s["label"] == ""}
    assert summ["index.duplicate_vectors"]["micro"] == 42.0
    tie, plain = summ["index.recall_tie_aware@10"], summ["index.recall@10"]
    assert (tie["numerator"], tie["denominator"]) == (450.0, 450.0)
    assert plain["denominator"] == 450.0 and plain["micro"] < 1.0  # ties counted as misses: still in the tables
    head = [h for h in headlines(read_report(out / "report.json")) if h.doc_class == "__all__"][0]
    assert [(r.metric, r.cells[0].value, r.cells[0].n) for r in head.rows] == [("index.recall_tie_aware@10", 1.0, 45)]
    assert "recall_tie_" in res.stdout and "index.recall@10" not in res.stdout  # the terminal headline too
    md = (out / "report.md").read_text()
    assert "index.recall@10" in md  # the full tables keep intersection recall
    # 45 counts vectors (duplicates) and queries (recall), never documents (the corpus has 5)
    assert "corpus of 45 vectors" in md and "corpus of 45 queries" in md and "corpus of 45 docs" not in md
    gate = CliRunner().invoke(app, ["compare", str(out / "report.json"), str(out / "report.json"), "--junit",
                                    str(tmp_path / "junit.xml")])
    assert gate.exit_code == 0, gate.output
    junit = (tmp_path / "junit.xml").read_text()
    assert "index.recall_tie_aware@10" in junit and "index.recall@10" not in junit  # the key row is the testcase
