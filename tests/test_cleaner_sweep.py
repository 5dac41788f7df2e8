"""A cleaner that cannot handle a document (`UnsupportedInput`) passes its text through unchanged with a warning
(`ingestaudit.chain`): a cleaner sweep's pipelines index the same documents and are compared on the same questions."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from _rows import load_report, measurements
from ingestaudit.chain import run_chain
from ingestaudit.cli import app
from ingestaudit.model import ParsedDocument
from ingestaudit.stages.chunkers.recursive import RecursiveChunker
from ingestaudit.stages.cleaners import load_cleaner

TEXT = {"d1": "Invoices are due within thirty days.", "d2": "Refunds take five working days.",
        "d3": "Passwords rotate every ninety days.", "d4": "The office opens at nine in the morning."}
QUESTIONS = {"d1": "When are invoices due?", "d2": "How long do refunds take?",
             "d3": "How often do passwords rotate?", "d4": "When does the office open?"}


def test_an_unsupported_cleaner_passes_the_text_through_with_a_warning():
    parsed = ParsedDocument(text=TEXT["d1"])
    out = run_chain(parsed, doc_id="c/d1", doc_class="c", reference=TEXT["d1"], metadata=None,
                    cleaner=load_cleaner("trafilatura"), chunker=RecursiveChunker(), embedder=None, evidence=(),
                    min_span_coverage=0.5)
    assert out.cleaned == TEXT["d1"] and [c.text for c in out.chunks] == [TEXT["d1"]]
    assert out.clean_to_parsed.project(0, len(TEXT["d1"])) == (0, len(TEXT["d1"]))  # the identity map
    assert out.passed_through.startswith("cleaner trafilatura cannot handle this document (trafilatura: needs the "
                                         "raw HTML")


def test_a_cleaner_sweep_compares_every_pipeline_on_the_same_questions(tmp_path: Path):
    root = tmp_path / "corpus"
    for d, text in TEXT.items():
        for sub in ("docs", "truth"):
            (root / sub / "c").mkdir(parents=True, exist_ok=True)
            (root / sub / "c" / f"{d}.txt").write_text(text, encoding="utf-8")
    (root / "questions.jsonl").write_text("".join(json.dumps({"id": f"q{d}", "question": q,
                                                             "relevant": [{"doc": f"c/{d}"}]}) + "\n"
                                                  for d, q in QUESTIONS.items()), encoding="utf-8")
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(f'[run]\nexecutor = "serial"\ncache_dir = "{tmp_path / "cache"}"\n\n[pipelines.p]\n'
                   'parser = "reference"\nembedder = "_chain_stubs:WordEmbedder"\n', encoding="utf-8")
    res = CliRunner().invoke(app, ["run", str(root), "--config", str(cfg), "--out", str(tmp_path / "r"),
                                   "--sweep", "cleaner.use=none,trafilatura", "--stage", "retrieval"])
    assert res.exit_code == 0, res.output
    report = load_report(tmp_path / "r")
    names = [p["name"] for p in report["pipelines"]]
    assert len(names) == 2
    rr = {(r["pipeline"], r["item"]): (r["state"], r["value"]) for r in measurements(report)
          if r["metric"] == "retrieval.rr"}
    # trafilatura reads raw HTML only: on these .txt documents it passes the text through, so both pipelines
    # index the same 4 chunks with the same vectors and rank alike: every question ok in both, the same values
    for q in ("qd1", "qd2", "qd3", "qd4"):
        assert rr[names[0], q] == rr[names[1], q] and rr[names[0], q][0] == "ok"
    assert not [f for f in report["failures"] if f["pipeline"]]
    warned = {(w["pipeline"], w["item"]) for w in report["parse_warnings"]}
    assert warned == {(names[1], f"c/{d}") for d in TEXT}
