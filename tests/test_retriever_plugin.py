"""A user retriever plugs in and is audited the same way; one that raises or returns unknown rows gives error rows
for that question only (issue 10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from _rows import load_report, measurements

pytestmark = pytest.mark.slow

PLUGIN = '''
from ingestaudit.stages.retrievers import Retriever


class Keyword(Retriever):
    name = "keyword"

    def search(self, question, vector, k, allowed):
        if "explode" in question:
            raise RuntimeError("boom")
        if "nonsense" in question:
            return [(999, 1.0)]
        words = set(question.lower().split())
        scored = [(len(words & set(c.text.lower().split())), c.row) for c in self.chunks
                  if allowed is None or c.row in set(allowed.tolist())]
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [(row, float(s)) for s, row in scored[:k]]
'''


def _run(tmp_path: Path, texts: dict[str, str], qs: list[dict], retriever: str):
    """``ingestaudit run`` of the retrieval stage on a corpus of class ``c`` (one document per text, precomputed
    outputs holding the text) with pipeline ``p``'s ``retriever`` given as TOML."""
    root = tmp_path / "corpus"
    for name, text in texts.items():
        (root / "docs" / "c").mkdir(parents=True, exist_ok=True)
        (root / "docs" / "c" / f"{name}.txt").write_text("x\n")
        (root / "truth" / "c").mkdir(parents=True, exist_ok=True)
        (root / "truth" / "c" / f"{name}.txt").write_text(text)
        out = tmp_path / "out" / "p" / "c"
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{name}.json").write_text(json.dumps({"text": text}))
    (root / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in qs) + "\n")
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(f"[pipelines.p]\nretriever = {retriever}\n")
    return CliRunner().invoke(app, ["run", str(root), "--outputs", str(tmp_path / "out"), "--config", str(cfg),
                                    "--out", str(tmp_path / "r"), "--stage", "retrieval"])


def test_a_keyword_retriever_is_audited_and_its_failures_stay_per_question(tmp_path: Path, monkeypatch):
    (tmp_path / "plug").mkdir()
    (tmp_path / "plug" / "kwplug.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path / "plug"))
    texts = {"a": "Invoices are due within thirty days.", "b": "The office opens at nine."}
    qs = [{"id": "q1", "question": "when does the office open", "relevant": [{"doc": "c/b"}]},
          {"id": "q2", "question": "explode please", "relevant": [{"doc": "c/a"}]},
          {"id": "q3", "question": "nonsense", "relevant": [{"doc": "c/a"}]}]
    res = _run(tmp_path, texts, qs, '"kwplug:Keyword"')
    assert res.exit_code == 0, res.output
    report = load_report(tmp_path / "r")
    assert report["pipelines"][0]["stages"]["retriever"]["implementation"] == "kwplug:Keyword"
    rr = {r["item"]: r for r in measurements(report) if r["metric"] == "retrieval.rr"}
    assert rr["q1"]["state"] == "ok" and rr["q1"]["value"] == 1.0
    assert rr["q2"]["state"] == "error" and "boom" in rr["q2"]["detail"]["reason"]
    assert rr["q3"]["state"] == "error" and "unknown chunk row 999" in rr["q3"]["detail"]["reason"]


def test_a_bm25_pipeline_is_audited_without_embedding_its_chunks(tmp_path: Path):
    """issue 29: the bm25 retriever reads texts only, so the run embeds neither chunks nor questions; the report
    names its variant, k1, b and tokenizer."""
    texts = {"a": "Invoices are due within thirty days.", "b": "The office opens at nine.",
             "c": "Parking permits come from the facilities desk."}
    qs = [{"id": "q1", "question": "when does the office open", "relevant": [{"doc": "c/b"}]},
          {"id": "q2", "question": "which invoices are due", "relevant": [{"doc": "c/a"}]},
          {"id": "q3", "question": "thirty days", "relevant": [{"doc": "c/c"}]}]
    res = _run(tmp_path, texts, qs, '{ use = "bm25", k1 = 1.2, b = 0.5 }')
    assert res.exit_code == 0, res.output
    report = load_report(tmp_path / "r")
    stage = report["pipelines"][0]["stages"]["retriever"]
    assert stage["implementation"] == "bm25"
    assert {k: stage["settings"][k] for k in ("method", "k1", "b")} == {"method": "lucene", "k1": 1.2, "b": 0.5}
    assert stage["settings"]["tokenizer"]["function"] == "bm25s.tokenize"
    rr = {r["item"]: r["value"] for r in measurements(report) if r["metric"] == "retrieval.rr"}
    assert rr == {"q1": 1.0, "q2": 1.0, "q3": 0.0}  # q3's words are in c/a only: c/c shares none, never returned
    timings = json.loads((tmp_path / "r" / "timings.json").read_text())["p"]["retrieval"]
    assert (timings["embedding"]["chunk_texts"], timings["embedding"]["question_texts"]) == (0, 0)
