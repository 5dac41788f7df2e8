"""Issue 30, points 1, 6 and 8: what a user's own files can do to a run.

1. Every file read from outside the corpus goes through `ingestaudit.inputs.read_input_bytes`: a FIFO, a device or a
   folder is refused by ``stat`` (never opened, so never waited on nor read without end), a file over its
   ``[limits]`` size is refused, each naming the file; a user file that was found but cannot be used is an error,
   never replaced by the tool's own stage, and report.json names the source of every replaced stage.
6. JSON lines split on "\\n" only; a repeated evidence item counts once; a page past the document's pages is a
   label error; the reference parser refuses page evidence with a reason.
8. An index of zero vectors gives ``error`` rows, never recall 1.

Every reproduction is rebuilt under other names and sizes; a call that could block runs in a thread joined with a
60 s guard (the test fails instead of hanging)."""

from __future__ import annotations

import json
import os
import threading
import tracemalloc
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from typer.testing import CliRunner

from ingestaudit.auditors.base import PipelineContext
from ingestaudit.stages.retrieve_step import with_index_steps
from ingestaudit.auditors.index import IndexAuditor, UserIndexError, read_ann_results
from ingestaudit.auditors.retrieval import RetrievalAuditor
from ingestaudit.chain import DocChunks
from ingestaudit.cli import app
from ingestaudit.config import ConfigError, Limits, load_config
from ingestaudit.document import Document
from ingestaudit.inputs import InputFileError, read_input_bytes
from ingestaudit.measurement import State
from ingestaudit.parsers.base import NoOutput, ParserError
from ingestaudit.parsers.precomputed import PrecomputedParser
from ingestaudit.pipeline import make_pipeline
from ingestaudit.questions import Question, load_questions
from ingestaudit.truth import Truth
from _rows import load_report, measurements

KIT = Path(__file__).resolve().parent / "auditors"
GUARD_S = 60  # no call here may take longer: a blocked open would hang the suite


def finishes(fn: Callable[[], Any]) -> Any:
    """``fn()`` run in a daemon thread; fails the test (instead of hanging it) when it has not returned in
    `GUARD_S` seconds. Returns its result or re-raises its exception."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the test
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(GUARD_S)
    assert not t.is_alive(), f"still blocked after {GUARD_S} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def ctx(pipe: Any, docs: list[DocChunks], questions: list[Question] = (), embed: Any = None,
        limits: Limits | None = None) -> PipelineContext:
    return with_index_steps(PipelineContext(pipe, docs, list(questions), {q.id: "c" for q in questions}, embed, 0.5, 0,
                                            [], limits))


def chunks(doc_id: str, vectors: np.ndarray) -> DocChunks:
    n = len(vectors)
    return DocChunks(doc_id, doc_id.split("/")[0], State.OK, texts=[f"t{i}" for i in range(n)], pages=[1] * n,
                     sections=[()] * n, metadata=[{} for _ in range(n)], vectors=np.asarray(vectors, np.float32))


# --- point 1: one reader for the user's files ------------------------------------------------------------------------

def test_point1_reader_refuses_special_files_and_sizes_by_stat_naming_the_file(tmp_path):
    fifo = tmp_path / "answers.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(InputFileError, match=r"answers\.jsonl: a named pipe \(FIFO\), not a regular file: not read"):
        finishes(lambda: read_input_bytes(fifo, max_bytes=100, limit="limits.results_bytes"))
    dev = tmp_path / "zeros.bin"
    dev.symlink_to("/dev/zero")
    with pytest.raises(InputFileError, match=r"zeros\.bin: a character device \(through the link '/dev/zero'\)"):
        read_input_bytes(dev, max_bytes=100, limit="limits.results_bytes")
    with pytest.raises(InputFileError, match=r"a folder, not a regular file: not read"):
        read_input_bytes(tmp_path, max_bytes=100, limit="limits.results_bytes")
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"x" * 101)
    with pytest.raises(InputFileError, match=r"big\.jsonl: 101 bytes, over limits\.results_bytes = 100: not read"):
        read_input_bytes(big, max_bytes=100, limit="limits.results_bytes")
    big.write_bytes(b"x" * 100)
    assert read_input_bytes(big, max_bytes=100, limit="limits.results_bytes") == b"x" * 100


def test_point1_ann_results_linked_to_urandom_is_refused_without_reading(tmp_path):
    """Reproduction: ann_results.jsonl -> /dev/urandom grew memory at about 300 MB/s. Now it is refused by stat:
    the peak traced memory of the whole audit stays under 1 GB (it is a few MB: nothing is read)."""
    folder = tmp_path / "store7"
    folder.mkdir()
    vectors = np.eye(6, 5, dtype=np.float32) + 0.1
    np.save(folder / "vectors.npy", vectors)
    (folder / "vector_ids.json").write_text(json.dumps([f"k/doc#{i}" for i in range(6)]))
    (folder / "ann_results.jsonl").symlink_to("/dev/urandom")
    pipe = make_pipeline("store7", {"index": {"use": "flat"}}, precomputed_root=tmp_path)
    tracemalloc.start()
    try:
        res = finishes(lambda: IndexAuditor(k_list=(1,)).audit_pipeline(ctx(pipe, [chunks("k/doc", vectors)])))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 30
    states = {s.state for _, s, _ in res.corpus_scores}
    assert states == {State.ERROR}
    reason = res.corpus_scores[0][1].detail["reason"]
    assert f"{folder / 'ann_results.jsonl'}: a character device (through the link '/dev/urandom')" in reason


def test_point1_fifo_ann_results_does_not_block(tmp_path):
    path = tmp_path / "ann_results.jsonl"
    os.mkfifo(path)
    with pytest.raises(UserIndexError, match=r"ann_results\.jsonl: a named pipe \(FIFO\), not a regular file"):
        finishes(lambda: read_ann_results(path))


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_point1_special_vectors_npy_is_an_error_never_the_runs_own_vectors(tmp_path, kind):
    folder = tmp_path / "vecstore"
    folder.mkdir()
    if kind == "fifo":
        os.mkfifo(folder / "vectors.npy")
    else:
        (folder / "vectors.npy").symlink_to("/dev/zero")
    (folder / "vector_ids.json").write_text(json.dumps(["k/doc#0", "k/doc#1", "k/doc#2"]))
    pipe = make_pipeline("vecstore", {"index": {"use": "flat"}}, precomputed_root=tmp_path)
    auditor = IndexAuditor(k_list=(1,))
    assert auditor.needs_chunk_vectors(pipe) is False  # the user's file was found: it is the one audited
    run_vectors = np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32)  # would give recall 1 if silently used
    res = finishes(lambda: auditor.audit_pipeline(ctx(pipe, [chunks("k/doc", run_vectors)])))
    assert {s.state for _, s, _ in res.corpus_scores} == {State.ERROR}
    what = "a named pipe (FIFO)" if kind == "fifo" else "a character device (through the link '/dev/zero')"
    assert res.corpus_scores[0][1].detail["reason"] == (f"UserIndexError: {folder / 'vectors.npy'}: {what}, not a "
                                                        "regular file: not read")
    # listed once among the run's failures, as a bad retrieval.jsonl is (hostile-input trial: it was not)
    assert res.failures == [res.corpus_scores[0][1].detail["reason"]]


def test_point1_ann_results_without_vectors_is_an_error_never_the_runs_own_hnsw(tmp_path):
    folder = tmp_path / "answers_only"
    folder.mkdir()
    (folder / "ann_results.jsonl").write_text('{"query": "k/doc#0", "results": ["k/doc#1"]}\n')
    pipe = make_pipeline("answers_only", {"index": {"use": "flat"}}, precomputed_root=tmp_path)
    run_vectors = np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32)
    res = IndexAuditor(k_list=(1,)).audit_pipeline(ctx(pipe, [chunks("k/doc", run_vectors)]))
    assert {s.state for _, s, _ in res.corpus_scores} == {State.ERROR}
    assert res.corpus_scores[0][1].detail["reason"] == (
        f"UserIndexError: {folder / 'ann_results.jsonl'}: needs the vectors it answers on, {folder / 'vectors.npy'} "
        "and vector_ids.json (its result ids name their rows); without them the user's answers cannot be audited")


@pytest.mark.parametrize("kind", ["fifo", "device", "over"])
def test_point1_unusable_retrieval_jsonl_makes_every_question_an_error_never_the_dense_search(tmp_path, kind):
    folder = tmp_path / "svc"
    folder.mkdir()
    path = folder / "retrieval.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/urandom")
    else:
        path.write_text('{"question": "q1", "results": [{"doc": "k/doc", "chunk": 0}]}\n')  # 62 bytes
    pipe = make_pipeline("svc", {"index": {"use": "flat"}}, precomputed_root=tmp_path)
    qs = [Question(id="q1", question="a", relevant=[{"doc": "k/doc"}]),
          Question(id="q2", question="b", relevant=[{"doc": "k/doc"}])]
    docs = [chunks("k/doc", np.array([[1, 0], [0, 1]]))]
    embed = lambda texts: np.array([[1, 0]] * len(texts), np.float32)  # noqa: E731
    res = finishes(lambda: RetrievalAuditor(k=(1,)).audit_pipeline(ctx(pipe, docs, qs, embed,
                                                                       Limits(results_bytes=50))))
    rr = {item: s for item, _, _, s in res.item_scores if s.metric == "retrieval.rr"}
    why = {"fifo": "a named pipe (FIFO), not a regular file: not read",
           "device": "a character device (through the link '/dev/urandom'), not a regular file: not read",
           "over": "62 bytes, over limits.results_bytes = 50: not read"}[kind]
    assert {q: (s.state, s.detail["reason"]) for q, s in rr.items()} == {
        q: (State.ERROR, f"{path}: {why}") for q in ("q1", "q2")}
    assert res.failures == [f"{path}: {why}"]  # once, for the run's failures


def test_point1_special_or_oversized_output_file_is_that_documents_error_not_a_missing_output(tmp_path):
    folder = tmp_path / "ocr"
    (folder / "k").mkdir(parents=True)
    os.mkfifo(folder / "k" / "piped.txt")
    (folder / "k" / "large.md").write_text("y" * 33)
    parser = PrecomputedParser(tmp_path, "ocr", max_bytes=32)
    doc = lambda name: Document(f"k/{name}", "k", tmp_path / f"{name}.pdf")  # noqa: E731
    with pytest.raises(ParserError, match=r"piped\.txt: a named pipe \(FIFO\), not a regular file: not read"):
        finishes(lambda: parser.parse(doc("piped")))
    with pytest.raises(ParserError, match=r"large\.md: 33 bytes, over limits\.output_bytes = 32: not read"):
        parser.parse(doc("large"))
    with pytest.raises(NoOutput):  # truly absent: still no_prediction
        parser.parse(doc("absent"))


def test_point1_fifo_config_is_an_error_for_validate_and_run_never_ignored(tmp_path):
    """Reproduction: a FIFO ingestaudit.toml was skipped, so the corpus's lowered limits were not applied."""
    root = tmp_path / "lab"
    (root / "docs" / "m").mkdir(parents=True)
    (root / "docs" / "m" / "note.txt").write_text("hello\n")
    os.mkfifo(root / "ingestaudit.toml")
    want = f"{root / 'ingestaudit.toml'}: a named pipe (FIFO), not a regular file: not read"
    for args in (["validate", str(root)], ["run", str(root), "--out", str(tmp_path / "o"), "--executor", "serial"]):
        res = finishes(lambda: CliRunner().invoke(app, args))
        assert res.exit_code == 2, res.output
        assert want.replace(" ", "") in "".join(res.output.split())  # the terminal may wrap the long path
    assert not (tmp_path / "o").exists()
    cfg = tmp_path / "conf.toml"
    cfg.write_text("# " + "z" * (1 << 20) + "\n")
    with pytest.raises(ConfigError, match=r"conf\.toml: 1048579 bytes, over CONFIG_BYTES = 1048576: not read"):
        load_config(cfg, trusted=True)


def test_point1_report_json_that_is_a_fifo_is_exit_2_naming_it(tmp_path):
    report = tmp_path / "report.json"
    os.mkfifo(report)
    res = finishes(lambda: CliRunner().invoke(app, ["report", str(report)]))
    assert res.exit_code == 2
    assert f"{report}: not a regular file, so not a report.json".replace(" ", "") in "".join(res.output.split())


def test_point1_eval_refuses_a_fifo_qrels_file_naming_it(tmp_path):
    from ingestaudit.trec import TrecFormatError, read_qrels

    qrels = tmp_path / "judged.qrels"
    os.mkfifo(qrels)
    with pytest.raises(TrecFormatError, match=r"judged\.qrels: a named pipe \(FIFO\), not a regular file: not read"):
        finishes(lambda: read_qrels(qrels))
    with pytest.raises(FileNotFoundError):  # a missing file stays an OSError: `eval` says "cannot read"
        read_qrels(tmp_path / "absent.qrels")


@pytest.fixture
def outputs_corpus(tmp_path: Path, monkeypatch) -> tuple[Path, Path, Path]:
    """Two documents, two precomputed pipelines: ``svc`` with a valid retrieval.jsonl, ``pipe`` with a FIFO one."""
    monkeypatch.syspath_prepend(str(KIT))
    monkeypatch.setenv("INGESTAUDIT_CACHE", str(tmp_path / "cache"))
    texts = {"alpha": "Deliveries arrive each Monday morning.", "beta": "Refunds take ten working days."}
    root = tmp_path / "lab"
    outputs = tmp_path / "outs"
    for name, text in texts.items():
        for folder, body in ((root / "docs" / "g", "g\n"), (root / "truth" / "g", text)):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{name}.txt").write_text(body)
        for pipe in ("svc", "pipe"):
            (outputs / pipe / "g").mkdir(parents=True, exist_ok=True)
            (outputs / pipe / "g" / f"{name}.json").write_text(json.dumps({"text": text}))
    qs = [{"id": "r1", "question": "when do deliveries arrive", "relevant": [{"doc": "g/alpha"}]},
          {"id": "r2", "question": "how long do refunds take", "relevant": [{"doc": "g/beta"}]}]
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    (outputs / "svc" / "retrieval.jsonl").write_text(
        "".join(json.dumps({"question": q, "results": [{"doc": d, "chunk": 0}]}) + "\n"
                for q, d in (("r1", "g/alpha"), ("r2", "g/alpha"))))
    os.mkfifo(outputs / "pipe" / "retrieval.jsonl")
    cfg = tmp_path / "cfg.toml"  # the precomputed pipelines' later stages: a test embedder, no model
    cfg.write_text("".join(f'[pipelines.{p}]\nembedder = "_retrievalkit:BagEmbedder"\n' for p in ("svc", "pipe")))
    return root, outputs, cfg


@pytest.mark.slow  # an end-to-end run (a few seconds: imports and the HTML plots)
def test_point1_run_names_the_users_retrieval_file_as_the_retriever_and_errors_on_a_fifo(outputs_corpus,
                                                                                         tmp_path):
    root, outputs, cfg = outputs_corpus
    out = tmp_path / "rep"
    res = finishes(lambda: CliRunner().invoke(app, [
        "run", str(root), "--outputs", str(outputs), "--config", str(cfg), "--out", str(out), "--stage", "retrieval",
        "--executor", "serial"]))
    assert res.exit_code == 0, res.output
    report = load_report(out)
    stages = {p["name"]: p["stages"] for p in report["pipelines"]}
    assert stages["svc"]["retriever"] == {"implementation": "precomputed", "version": "external",
                                          "settings": {"source": "svc/retrieval.jsonl"}}
    assert stages["pipe"]["retriever"]["settings"] == {"source": "pipe/retrieval.jsonl"}
    rr = {(r["pipeline"], r["item"]): r for r in measurements(report) if r["metric"] == "retrieval.rr"}
    fifo = f"{outputs / 'pipe' / 'retrieval.jsonl'}: a named pipe (FIFO), not a regular file: not read"
    assert {q: (rr[("pipe", q)]["state"], rr[("pipe", q)]["detail"]["reason"]) for q in ("r1", "r2")} == {
        "r1": ("error", fifo), "r2": ("error", fifo)}
    assert (rr[("svc", "r1")]["state"], rr[("svc", "r1")]["value"]) == ("ok", 1.0)
    assert (rr[("svc", "r2")]["state"], rr[("svc", "r2")]["value"]) == ("ok", 0.0)  # g/alpha for a g/beta question
    assert [f["message"] for f in report["failures"] if f["pipeline"] == "pipe"] == [fifo]
    # `report` reads timings.json beside it as a user file: a FIFO is named in a warning, never waited on
    (out / "timings.json").unlink(missing_ok=True)
    os.mkfifo(out / "timings.json")
    res = finishes(lambda: CliRunner().invoke(app, ["report", str(out / "report.json")]))
    assert res.exit_code == 0, res.output
    assert (f"warning: {out / 'timings.json'}: not read ({out / 'timings.json'}: a named pipe (FIFO), not a regular "
            "file: not read); the timings are not shown").replace(" ", "") in "".join(res.output.split())


def test_point1_report_names_the_users_vectors_and_answers_as_the_index(tmp_path):
    from ingestaudit.config import Config
    from ingestaudit.report.schema import StageInfo
    from ingestaudit.pipeline_provenance import user_sources as _user_sources

    folder = tmp_path / "store"
    folder.mkdir()
    (folder / "vectors.npy").write_bytes(b"")
    pipe = make_pipeline("store", {}, precomputed_root=tmp_path)
    cfg = Config.model_validate({"run": {"stages": ["index", "retrieval"]}})
    base = {"embedder": StageInfo(implementation="minilm", version="1", settings={"batch": 8}),
            "index": StageInfo(implementation="hnsw", version="1", settings={"m": 32})}
    got = _user_sources(pipe, cfg, base)
    assert (got["embedder"].settings, got["index"].implementation, got["index"].settings) == (
        {"batch": 8, "chunk_vectors": "store/vectors.npy"}, "hnsw", {"m": 32, "vectors": "store/vectors.npy"})
    assert "retriever" not in got
    os.mkfifo(folder / "ann_results.jsonl")  # named as the source even when unreadable: its rows say why
    got = _user_sources(pipe, cfg, base)
    assert (got["index"].implementation, got["index"].settings) == (
        "precomputed", {"source": "store/ann_results.jsonl", "vectors": "store/vectors.npy"})


# --- point 6: questions -----------------------------------------------------------------------------------------------

def _truths(**texts: str) -> dict[str, Truth]:
    return {doc: Truth(text=t) for doc, t in texts.items()}


def test_point6_json_lines_split_on_newline_only_so_line_numbers_hold(tmp_path):
    qpath = tmp_path / "questions.jsonl"
    first = {"id": "u1", "question": "line\u2028separator and next\u0085line and\u000bvtab",
             "relevant": [{"doc": "d/one"}]}
    lines = [json.dumps(first, ensure_ascii=False), '{"id": "u2", "question": "bad", "relevant": [{"doc": "d/zz"}]}']
    qpath.write_text("\n".join(lines) + "\n", encoding="utf-8")
    qset = load_questions(qpath, "questions.jsonl", _truths(**{"d/one": "some text"}))
    assert [q.question for q in qset.questions] == [first["question"]]
    assert [(p.field, p.message) for p in qset.problems] == [
        ("line 2: relevant[0].doc", "unknown document 'd/zz' (no docs/d/zz.*)")]
    ann = tmp_path / "ann_results.jsonl"
    ann.write_text(json.dumps({"query": "k\u2028ey", "results": ["a\u0085b"]}, ensure_ascii=False)
                   + "\nnot json\n", encoding="utf-8")
    got = read_ann_results(ann)
    assert dict(got) == {"k\u2028ey": ["a\u0085b"]}
    assert got.unreadable == [f"{ann} line 2: invalid JSON (Expecting value)"]
    folder = tmp_path / "svc"
    folder.mkdir()
    (folder / "retrieval.jsonl").write_text(
        json.dumps({"question": "w1", "results": [{"doc": "d/one", "chunk": 0}], "note\u2029": 1},
                   ensure_ascii=False) + "\n" + json.dumps({"question": "w2", "results": "x\u0085"},
                                                           ensure_ascii=False) + "\n", encoding="utf-8")
    pipe = make_pipeline("svc", {"index": {"use": "flat"}}, precomputed_root=tmp_path)
    qs = [Question(id="w1", question="a", relevant=[{"doc": "d/one"}]),
          Question(id="w2", question="b", relevant=[{"doc": "d/one"}])]
    res = RetrievalAuditor(k=(1,)).audit_pipeline(ctx(pipe, [chunks("d/one", np.array([[1, 0]]))], qs))
    rr = {item: s.detail.get("reason", "") for item, _, _, s in res.item_scores if s.metric == "retrieval.rr"}
    assert rr["w1"] == (f"{folder / 'retrieval.jsonl'}: line 1: unknown key 'note\\u2029'; valid keys: question, "
                        "results, latency_ms (see docs/outputs.md#retrievalline)")  # shown escaped
    assert rr["w2"] == (f"{folder / 'retrieval.jsonl'}: line 2: 'question' must be a string and 'results' a list")


def test_point6_repeated_evidence_is_a_problem_and_counts_once(tmp_path):
    qpath = tmp_path / "questions.jsonl"
    many = {"id": "rep", "question": "x", "relevant": [{"doc": "d/one", "start": 0, "end": 4}] * 300}
    other = {"id": "solo", "question": "y", "relevant": [{"doc": "d/two"}]}
    qpath.write_text(json.dumps(many) + "\n" + json.dumps(other) + "\n")
    qset = load_questions(qpath, "questions.jsonl", _truths(**{"d/one": "some text", "d/two": "more"}))
    assert [len(q.relevant) for q in qset.questions] == [1, 1]  # kept, each item once
    assert len(qset.problems) == 299
    assert (qset.problems[0].field, qset.problems[0].message) == (
        "line 1: relevant[1]", "repeats relevant[0] (the same evidence item): counted once")
    res = CliRunner().invoke(app, ["validate", str(_corpus_with(tmp_path, qpath))])
    assert res.exit_code == 2 and "line 1: relevant[299]: repeats relevant[0]" in " ".join(res.output.split())
    # micro recall: "rep" missed, "solo" found -> 1 of 2 items, never 1 of 301
    pipe = make_pipeline("p", {"index": {"use": "flat"}})
    docs = [chunks("d/one", np.array([[0, 1]])), chunks("d/two", np.array([[1, 0]]))]
    docs[0].evidence[("rep", 0)] = _trace(holding=[0])
    docs[1].evidence[("solo", 0)] = _trace(holding=[0])
    embed = lambda texts: np.array([[1, 0]] * len(texts), np.float32)  # noqa: E731
    res = RetrievalAuditor(k=(1,)).audit_pipeline(ctx(pipe, docs, list(qset.questions), embed))
    rec = {item: (s.numerator, s.denominator) for item, _, _, s in res.item_scores if s.metric == "retrieval.recall@1"}
    assert rec == {"rep": (0, 1), "solo": (1, 1)}


def _trace(holding: list[int]) -> Any:
    from ingestaudit.chain import EvidenceTrace

    return EvidenceTrace(1.0, 1.0, holding, 1.0)


def _corpus_with(tmp_path: Path, questions: Path) -> Path:
    root = tmp_path / "c6"
    for doc, text in (("d/one", "some text"), ("d/two", "more")):
        (root / "docs" / "d").mkdir(parents=True, exist_ok=True)
        (root / "truth" / "d").mkdir(parents=True, exist_ok=True)
        (root / "docs" / f"{doc}.txt").write_text("x\n")
        (root / "truth" / f"{doc}.txt").write_text(text)
    (root / "questions.jsonl").write_bytes(questions.read_bytes())
    return root


def test_point6_page_past_the_documents_pages_is_a_label_error_and_reference_refuses_pages(tmp_path):
    import pymupdf

    root = tmp_path / "paged"
    (root / "docs" / "s").mkdir(parents=True)
    (root / "truth" / "s").mkdir(parents=True)
    with pymupdf.open() as pdf:
        for text in ("first page", "second page", "third page"):
            pdf.new_page().insert_text((72, 72), text)
        pdf.save(root / "docs" / "s" / "three.pdf")
    (root / "docs" / "s" / "memo.txt").write_text("a memo\n")
    (root / "truth" / "s" / "memo.txt").write_text("a memo\n")
    qs = [{"id": "p1", "question": "far page", "relevant": [{"doc": "s/three", "page": 40}]},
          {"id": "p2", "question": "text page", "relevant": [{"doc": "s/memo", "page": 1}]},
          {"id": "p3", "question": "last page", "relevant": [{"doc": "s/three", "page": 3}]}]
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    res = CliRunner().invoke(app, ["validate", str(root)])
    out = " ".join(res.output.split())
    assert res.exit_code == 2
    assert "line 1: relevant[0].page: page 40 is past the last page of 's/three' (3 pages)" in out
    assert "line 2: relevant[0].page: page 1 of 's/memo': a .txt document has no pages" in out
    assert "line 3" not in out
    from ingestaudit.corpus import discover

    found = discover(root)
    qset = load_questions(found.questions, "questions.jsonl", {d.doc_id: Truth() for d in found.documents}, None,
                          {d.doc_id: d for d in found.documents})
    assert [q.id for q in qset.questions] == ["p3"]
    assert [q.id for q, _ in qset.rejected] == ["p1", "p2"]  # error rows in every pipeline, never lost_in_parsing
    # the reference parser has one page without breaks: page evidence is refused with the reason, never a loss
    pipe = make_pipeline("reference", {"parser": "reference", "index": {"use": "flat"}})
    docs = [chunks("s/three", np.array([[1, 0]]))]
    embed = lambda texts: np.array([[1, 0]] * len(texts), np.float32)  # noqa: E731
    res = RetrievalAuditor(k=(1,)).audit_pipeline(ctx(pipe, docs, list(qset.questions), embed))
    states = {(s.metric, s.label): (s.state, s.detail["reason"]) for item, _, _, s in res.item_scores
              if item == "p3"}
    why = ("relevant[0] is page evidence (page 3), which the reference parser cannot check: the reference text has "
           "no page breaks (give a span or a section to score it with --parser reference)")
    assert states[("retrieval.recall@1", "")] == (State.SKIPPED, why)
    assert states[("retrieval.outcome@1", "lost_in_parsing")] == (State.SKIPPED, why)


# --- point 8: zero vectors ------------------------------------------------------------------------------------------

def test_point8_an_index_of_zero_vectors_gives_error_rows_never_recall_1():
    zeros = np.zeros((9, 3), dtype=np.float32)
    pipe = make_pipeline("z", {"index": {"use": "hnsw", "m": 8}})
    res = IndexAuditor(k_list=(1, 5), n_sample_queries=9).audit_pipeline(ctx(pipe, [chunks("v/blank", zeros)]))
    recall = [(c, s) for c, s, _ in res.corpus_scores if s.metric.startswith(("index.recall", "index.one_recall"))]
    assert recall and all(s.state is State.ERROR for _, s in recall)
    assert all(s.value is None for _, s in recall)
    assert "no defined neighbours (a zero vector" in recall[0][1].detail["reason"]
    why = "every one of the 9 indexed vectors is a zero vector: nearest neighbours are undefined (every score ties)"
    assert res.failures == [f"query 'v/blank#{i}': {why}" for i in range(9)]
    assert res.details["queries"]["undefined_total"] == 9


def test_a_corpus_toml_linked_out_of_the_corpus_is_not_read(tmp_path, monkeypatch):
    """Hostile-input trial: a document's link out of the corpus was refused, its ``ingestaudit.toml``'s was followed
    (the target read, its key names echoed). Now both follow the same rule: only into ``$INGESTAUDIT_LINK_ROOTS``."""
    from typer.testing import CliRunner

    from ingestaudit.cli import app

    monkeypatch.delenv("INGESTAUDIT_LINK_ROOTS", raising=False)
    corpus = tmp_path / "c"
    assert CliRunner().invoke(app, ["init", str(corpus)]).exit_code == 0
    secret = tmp_path / "elsewhere" / "secret.env"
    secret.parent.mkdir()
    secret.write_text('api_token = "s3cr3t"\n', encoding="utf-8")
    (corpus / "ingestaudit.toml").unlink()
    (corpus / "ingestaudit.toml").symlink_to(secret)
    for args in (["validate", str(corpus)], ["run", str(corpus), "--stage", "extraction", "--out", str(tmp_path / "o")]):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 2, r.output
        said = " ".join(r.output.split())
        assert f"{corpus / 'ingestaudit.toml'}: resolves outside the corpus (to {secret.resolve()}): not read" in said
        assert "api_token" not in said
    monkeypatch.setenv("INGESTAUDIT_LINK_ROOTS", str(secret.parent))  # a listed folder: read (and its bad key named)
    r = CliRunner().invoke(app, ["validate", str(corpus)])
    assert r.exit_code == 2 and "api_token: unknown key 'api_token'" in " ".join(r.output.split())
