"""Bad labelled questions end to end (issue 10, "Bad input"): a question naming an unknown document or a span outside
its reference text is named with file, line and field by `validate` and by `run`, and `run` keeps it in the counts
as `error` rows instead of shrinking the denominators. A bag-of-words test embedder keeps the run to seconds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from _rows import load_report, measurements

KIT = Path(__file__).resolve().parent / "auditors"
QUESTIONS = [
    {"id": "q1", "question": "when are invoices due", "relevant": [{"doc": "x/a"}]},
    {"id": "q2", "question": "when does the office open", "relevant": [{"doc": "x/zz"}]},
    {"id": "q3", "question": "office hours", "relevant": [{"doc": "x/b", "start": 0, "end": 500}]},
    {"id": "q4", "question": "when does the office open", "relevant": [{"doc": "x/b", "start": 4, "end": 10}]},
]
UNKNOWN = "questions.jsonl: line 2: relevant[0].doc: unknown document 'x/zz' (no docs/x/zz.*)"
OUTSIDE = ("questions.jsonl: line 3: relevant[0].end: span [0, 500) is outside the reference text of 'x/b' "
           "(25 code points)")


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch) -> tuple[Path, Path, Path]:
    monkeypatch.syspath_prepend(str(KIT))
    monkeypatch.setenv("INGESTAUDIT_CACHE", str(tmp_path / "cache"))
    texts = {"a": "Invoices are due within thirty days.", "b": "The office opens at nine."}
    root = tmp_path / "corpus"
    for name, text in texts.items():
        for folder, body in ((root / "docs" / "x", "x\n"), (root / "truth" / "x", text)):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{name}.txt").write_text(body)
        out = tmp_path / "out" / "p" / "x"
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{name}.json").write_text(json.dumps({"text": text}))
    (root / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n")
    cfg = tmp_path / "cfg.toml"
    cfg.write_text('[pipelines.p]\nembedder = "_retrievalkit:BagEmbedder"\n')
    return root, tmp_path / "out", cfg


def test_validate_names_file_line_and_field(corpus):
    root, _, _ = corpus
    res = CliRunner().invoke(app, ["validate", str(root)])
    assert res.exit_code == 2
    assert UNKNOWN in res.output and OUTSIDE in res.output


@pytest.mark.slow  # an end-to-end run (about 4 s on an idle machine, most of it imports and the HTML plots)
def test_run_keeps_rejected_questions_as_error_rows_reported_once(corpus, tmp_path):
    root, outputs, cfg = corpus
    out = tmp_path / "report"
    res = CliRunner().invoke(app, ["run", str(root), "--outputs", str(outputs), "--config", str(cfg), "--out",
                                   str(out), "--stage", "retrieval", "--executor", "serial"])
    assert res.exit_code == 0, res.output
    report = load_report(out)
    rr = {r["item"]: r for r in measurements(report) if r["metric"] == "retrieval.rr"}
    assert rr["q1"]["state"] == "ok" and rr["q4"]["state"] == "ok"
    assert (rr["q2"]["state"], rr["q2"]["detail"]["reason"]) == ("error", UNKNOWN)
    assert (rr["q3"]["state"], rr["q3"]["detail"]["reason"]) == ("error", OUTSIDE)
    summary = {(s["metric"], s["doc_class"]): s for s in report["summary"]}
    recall = summary[("retrieval.recall@10", "__all__")]
    assert recall["n_docs"] == 2 and recall["states"]["error"] == 2  # the denominator says what it left out
    # each problem once, under the questions stage, never repeated per question x metric
    msgs = [(f["stage"], f["item"], f["message"]) for f in report["failures"]]
    assert sorted(msgs) == sorted([("questions", "questions.jsonl", UNKNOWN.removeprefix("questions.jsonl: ")),
                                   ("questions", "questions.jsonl", OUTSIDE.removeprefix("questions.jsonl: "))])
    assert "n=2/4" in res.output  # the headline shows 2 of 4 questions scored
    # the header counted the 2 valid questions where the class line counts 4: one N now, the difference labelled
    text = " ".join(res.output.split())
    assert "(x: 2; 4 questions (2 rejected by validation: error rows))" in text
    assert "class: __all__ — 2 documents, 4 questions" in text
    # `ingestaudit questions` lists and counts them: their records carry state and reason
    listed = CliRunner().invoke(app, ["questions", str(out)], env={"COLUMNS": "200"})
    assert listed.exit_code == 0, listed.output
    assert f"error: {UNKNOWN}" in listed.stdout
    assert "2 in error, not measured (4 questions in all)" in listed.stdout
