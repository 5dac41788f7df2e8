"""Chroma's chunking evaluation data (../shared/data/chroma-chunking-eval): import the three corpora and their 319
questions, and check that the corpus validates and every evidence span is the upstream reference text.

Fast on purpose: import and validation only, no parsing, chunking or retrieval. The spans are re-checked here
against the CSV independently of the importer (``corpus[start_index:end_index] == content``, code points).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.corpus import discover
from ingestaudit.importers import DestinationNotEmpty, SourceLayoutError, import_corpus
from ingestaudit.importers.chroma_chunking_eval import import_chroma_chunking_eval
from ingestaudit.questions import load_questions
from ingestaudit.truth import load_truth

CLASSES = {"pubmed": 99, "state_of_the_union": 76, "wikitexts": 144}  # questions per corpus in the shared subset


@pytest.fixture(scope="module")
def src(shared_dataset) -> Path:
    return shared_dataset("chroma-chunking-eval")


@pytest.fixture(scope="module", autouse=True)
def link_roots(src: Path):
    """The documents are links into the data set folder: let discovery follow them there."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("INGESTAUDIT_LINK_ROOTS", str(src.resolve()))
        yield


@pytest.fixture(scope="module")
def imported(src: Path, tmp_path_factory):
    dest = tmp_path_factory.mktemp("chroma") / "corpus"
    return dest, import_corpus("chroma-chunking-eval", src, dest)


@pytest.fixture(scope="module")
def loaded(imported):
    dest, _ = imported
    corpus = discover(dest)
    truths = {d.doc_id: load_truth(d, corpus.root) for d in corpus.documents}
    return corpus, truths, load_questions(corpus.questions, "questions.jsonl", truths)


def test_counts(imported, loaded):
    dest, summary = imported
    corpus, _, qs = loaded
    assert corpus.classes() == {name: 1 for name in CLASSES}
    assert summary.documents == tuple(f"{n}/{n}" for n in sorted(CLASSES))
    assert summary.imported == {"documents": 3, "questions": 319, "evidence_spans": 539,
                                "multi_passage_questions": 319 - 188}
    assert summary.extra["questions_per_class"] == CLASSES
    assert qs.problems == ()
    assert len(qs.questions) == 319
    assert sum(len(q.relevant) for q in qs.questions) == 539
    assert all(ev.kind == "span" for q in qs.questions for ev in q.relevant)
    classes = {q.id: qs.question_class(q, {d.doc_id: d.doc_class for d in corpus.documents}) for q in qs.questions}
    assert {c: list(classes.values()).count(c) for c in CLASSES} == CLASSES
    assert json.loads((dest / "import.json").read_text(encoding="utf-8"))["kind"] == "chroma-chunking-eval"


def test_documents_are_links_and_truth_is_the_corpus_text(src: Path, imported, loaded):
    dest, _ = imported
    corpus, truths, _ = loaded
    for name in CLASSES:
        doc = dest / "docs" / name / f"{name}.txt"
        assert doc.is_symlink() and doc.resolve() == (src / "corpora" / f"{name}.md").resolve()
        original = (src / "corpora" / f"{name}.md").read_bytes().decode("utf-8")
        assert truths[f"{name}/{name}"].text == original
        assert truths[f"{name}/{name}"].metadata == {"corpus": name}


def test_every_span_is_the_upstream_reference(src: Path, loaded):
    _, truths, qs = loaded
    with (src / "questions_df.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    by_id = {q.id: q for q in qs.questions}
    assert set(by_id) == {f"chroma-{i}" for i in range(len(rows))}
    for i, row in enumerate(rows):
        q = by_id[f"chroma-{i}"]
        assert q.question == row["question"]
        refs = json.loads(row["references"])
        assert len(q.relevant) == len(refs)
        for ev, ref in zip(q.relevant, refs):
            assert ev.doc == f"{row['corpus_id']}/{row['corpus_id']}"
            assert truths[ev.doc].text[ev.start:ev.end] == ref["content"]


def test_cli_validate_exits_0(imported):
    dest, _ = imported
    result = CliRunner().invoke(app, ["validate", str(dest)])
    assert result.exit_code == 0, result.output


def test_cli_limit_keeps_the_first_questions(src: Path, tmp_path: Path):
    result = CliRunner().invoke(app, ["import", "chroma-chunking-eval", str(src), str(tmp_path / "c"), "--limit", "5"])
    assert result.exit_code == 0, result.output
    lines = (tmp_path / "c" / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["id"] for x in lines] == [f"chroma-{i}" for i in range(5)]


def test_seeded_sample_is_reproducible(src: Path, tmp_path: Path):
    a = import_chroma_chunking_eval(src, tmp_path / "a", max_questions=20, seed=7)
    b = import_chroma_chunking_eval(src, tmp_path / "b", max_questions=20, seed=7)
    assert a.extra["rows"] == b.extra["rows"] and len(a.extra["rows"]) == 20
    assert a.extra["rows"] != list(range(20))
    assert (tmp_path / "a" / "questions.jsonl").read_bytes() == (tmp_path / "b" / "questions.jsonl").read_bytes()


def test_a_wrong_span_fails_loudly_and_writes_nothing(src: Path, tmp_path: Path):
    bad = tmp_path / "src"
    (bad / "corpora").mkdir(parents=True)
    for p in (src / "corpora").glob("*.md"):
        (bad / "corpora" / p.name).symlink_to(p)
    with (src / "questions_df.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    refs = json.loads(rows[3]["references"])
    refs[0]["start_index"] += 1
    rows[3]["references"] = json.dumps(refs)
    with (bad / "questions_df.csv").open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["question", "references", "corpus_id"])
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(SourceLayoutError, match=r"(?s)1 reference span.*data row 3 "):
        import_corpus("chroma-chunking-eval", bad, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_refuses_a_non_empty_destination(src: Path, imported):
    dest, _ = imported
    with pytest.raises(DestinationNotEmpty):
        import_corpus("chroma-chunking-eval", src, dest)
