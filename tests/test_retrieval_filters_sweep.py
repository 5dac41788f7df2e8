"""Retrieval filters (issue 10's acceptance) and pipeline sweeps (issue 9's), end to end with the real embedder and
FAISS indexes over precomputed outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from _rows import load_report, measurements

pytestmark = pytest.mark.slow

META = {"d1": {"tenant": "acme", "locale": "en-US"}, "d2": {"tenant": "acme", "locale": "en-GB"},
        "d3": {"tenant": "globex", "locale": "en-US"}, "d4": {"tenant": "acme", "locale": "en-US"},
        "d5": {"tenant": "acme", "locale": "de-DE"}}
TEXT = {"d1": "Invoices are due within thirty days.", "d2": "Refunds take five working days.",
        "d3": "Passwords rotate every ninety days.", "d4": "The office opens at nine in the morning.",
        "d5": "Die Bibliothek schliesst um acht Uhr."}


def _write(path: Path, data: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data, encoding="utf-8")


def _corpus(tmp_path: Path, questions: list[dict]) -> tuple[Path, Path]:
    root = tmp_path / "corpus"
    for d, text in TEXT.items():
        _write(root / "docs" / "c" / f"{d}.txt", "x\n")
        _write(root / "truth" / "c" / f"{d}.txt", text)
        _write(root / "truth" / "c" / f"{d}.json", json.dumps({"metadata": META[d]}))
        _write(tmp_path / "out" / "p" / "c" / f"{d}.json", json.dumps({"text": text}))
    _write(root / "questions.jsonl", "\n".join(json.dumps(q) for q in questions) + "\n")
    return root, tmp_path / "out"


def test_filters_exclude_evidence_and_recall_keeps_the_original_denominator(tmp_path):
    questions = [
        {"id": "q1", "question": "When are refunds paid?", "relevant": [{"doc": "c/d2"}], "filter": {"locale": "en-US"}},
        {"id": "q2", "question": "When does the office open?", "relevant": [{"doc": "c/d4"}],
         "filter": {"tenant": "acme"}},
        {"id": "q3", "question": "How often do passwords rotate?", "relevant": [{"doc": "c/d3"}],
         "filter": {"tenant": "acme"}},
        {"id": "q4", "question": "Wann schliesst die Bibliothek?", "relevant": [{"doc": "c/d5"}],
         "filter": {"locale": "de-DE"}},
    ]
    root, outputs = _corpus(tmp_path, questions)
    out = tmp_path / "report"
    # the precomputed outputs hold text only: the default recursive chunker and the HNSW index run on them
    res = CliRunner().invoke(app, ["run", str(root), "--outputs", str(outputs), "--out", str(out),
                                   "--stage", "retrieval"])
    assert res.exit_code == 0, res.output
    report = load_report(out)
    summary = {(s["metric"], s["label"]): s for s in report["summary"] if s["doc_class"] == "__all__"}
    assert summary[("retrieval.filter_false_exclusion", "")]["micro"] == 0.5  # q1 and q3
    excluded = {r["item"]: r["value"] for r in measurements(report)
                if r["metric"] == "retrieval.filter_false_exclusion"}
    assert excluded == {"q1": 1.0, "q2": 0.0, "q3": 1.0, "q4": 0.0}
    # no option rebuilds the evidence after filtering: the retrieval options hold no such switch
    options = report["config"]["auditors"]["retrieval"]
    assert set(options) == {"k", "depth", "conventions", "context_budgets", "evidence_overlap"}  # issue 25's two
    assert "no option rebuilds" in options["conventions"]["filter"]
    assert summary[("retrieval.recall@10", "")]["micro"] == 0.5  # never 1.00: the evidence is not rebuilt
    assert summary[("retrieval.outcome@10", "excluded_by_filter")]["micro"] == 0.5
    assert summary[("retrieval.outcome@10", "retrieved")]["micro"] == 0.5


def test_a_sweep_gives_one_report_column_per_value(tmp_path):
    questions = [{"id": "q", "question": "When are invoices due?", "relevant": [{"doc": "c/d1", "start": 0,
                                                                                  "end": 8}]}]
    root, _ = _corpus(tmp_path, questions)
    for d in TEXT:  # plain text documents: the precomputed parser reads them as outputs of a pipeline "txt"
        _write(tmp_path / "out" / "txt" / "c" / f"{d}.txt", TEXT[d])
    out = tmp_path / "report"
    res = CliRunner().invoke(app, ["run", str(root), "--outputs", str(tmp_path / "out"), "--out", str(out),
                                   "--sweep", "chunker.size=128,256", "--stage", "chunking"])
    assert res.exit_code == 0, res.output
    report = load_report(out)
    names = [p["name"] for p in report["pipelines"]]
    assert names == ["p/size=128", "p/size=256", "txt/size=128", "txt/size=256"]
    # outputs without chunks: the default chunker runs, with the swept size
    sizes = {p["name"]: p["stages"]["chunker"]["settings"]["without_chunks"]["size"] for p in report["pipelines"]}
    assert sizes == {"p/size=128": 128, "p/size=256": 256, "txt/size=128": 128, "txt/size=256": 256}
    columns = {s["pipeline"] for s in report["summary"] if s["metric"] == "chunking.attribution"}
    assert columns == set(names)
