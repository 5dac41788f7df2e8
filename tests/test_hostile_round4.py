"""A hostile-input trial of issues 26, 28 and 29 (entity/metadata, lexical/hybrid retrieval, embedding drift,
filtered ANN, freshness): each finding as a test with the behaviour it must have (exit code, the file and field
named)."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def one_doc_corpus(root: Path, config: str = "") -> Path:
    (root / "docs" / "a").mkdir(parents=True)
    (root / "docs" / "a" / "x.txt").write_text("hello world", encoding="utf-8")
    if config:
        (root / "ingestaudit.toml").write_text(config, encoding="utf-8")
    return root


# --- 1. output files that are not regular files; --junit onto the run's own files ------------------------------------

def test_check_output_file_refuses_fifo_link_and_device(tmp_path):
    from ingestaudit.io import OutputError, check_output_file

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "real.xml").write_text("x")
    os.symlink(tmp_path / "real.xml", tmp_path / "link.xml")
    for target, what in ((tmp_path / "fifo", "is a named pipe (FIFO), not a regular file"),
                         (tmp_path / "link.xml", "is a symbolic link"),
                         (Path("/dev/null"), "is a character device, not a regular file")):
        with pytest.raises(OutputError) as exc:
            check_output_file(target, flag="--junit")
        assert str(exc.value).startswith(f"--junit {target}: {what}")
    check_output_file(tmp_path / "real.xml", flag="--junit")  # a regular file, or a new one, is fine
    check_output_file(tmp_path / "new.xml", flag="--junit")


def test_write_atomic_never_replaces_a_fifo_or_a_link(tmp_path):
    from ingestaudit.io import OutputError, write_atomic

    os.mkfifo(tmp_path / "fifo")
    os.symlink(tmp_path / "elsewhere.txt", tmp_path / "link")
    for target in (tmp_path / "fifo", tmp_path / "link"):
        with pytest.raises(OutputError, match="not a regular file; not written"):
            write_atomic(target, "text")
    assert (tmp_path / "fifo").is_fifo() and (tmp_path / "link").is_symlink()
    assert not (tmp_path / "elsewhere.txt").exists()


@pytest.mark.parametrize("name", ["gate.json", "report.json", "report.md", "report.html"])
def test_junit_onto_the_runs_own_file_is_refused_before_the_audit(tmp_path, name):
    c = one_doc_corpus(tmp_path / "c")
    out = tmp_path / "out"
    r = run("run", str(c), "--out", str(out), "--baseline", f"history:{tmp_path / 'h.duckdb'}",
            "--junit", str(out / name))
    assert r.exit_code == 2
    assert f"--junit {out / name}: is {name}, a file this command writes itself" in r.output
    assert not out.exists()  # nothing audited, nothing written


def test_junit_onto_a_fifo_is_refused_before_the_audit(tmp_path):
    c = one_doc_corpus(tmp_path / "c")
    os.mkfifo(tmp_path / "fifo")
    r = run("run", str(c), "--out", str(tmp_path / "out"), "--baseline", f"history:{tmp_path / 'h.duckdb'}",
            "--junit", str(tmp_path / "fifo"))
    assert r.exit_code == 2
    assert f"--junit {tmp_path / 'fifo'}: is a named pipe (FIFO), not a regular file" in r.output


def test_report_views_and_compare_junit_refuse_what_is_not_theirs_to_write(tmp_path):
    c = one_doc_corpus(tmp_path / "c")
    out = tmp_path / "out"
    assert run("run", str(c), "--out", str(out), "--stage", "extraction").exit_code == 0
    os.mkfifo(tmp_path / "fifo")
    os.symlink(tmp_path / "elsewhere.md", tmp_path / "link.md")
    for flag, target, what in (("--md", tmp_path / "fifo", "is a named pipe (FIFO), not a regular file"),
                               ("--html", tmp_path / "link.md", "is a symbolic link"),
                               ("--md", Path("/dev/null"), "is a character device, not a regular file")):
        r = run("report", str(out / "report.json"), flag, str(target))
        assert r.exit_code == 2 and f"{flag} {target}: {what}" in " ".join(r.output.split()), r.output
    assert (tmp_path / "fifo").is_fifo() and not (tmp_path / "elsewhere.md").exists()
    own = out / "gate.json"  # compare writes it beside HEAD
    r = run("compare", str(out / "report.json"), str(out / "report.json"), "--junit", str(own))
    assert r.exit_code == 2 and f"--junit {own}: is gate.json, a file this command writes itself" in r.output
    assert not (out / "gate.json").exists()


# --- 2, 3, 5. damaged kept vectors: embedding drift is not_comparable naming the side, the file and the field -------

EMB = {"implementation": "minilm", "version": "1", "settings": {"model": "m"}}


def _kept(folder: Path) -> Path:
    from ingestaudit.chain import DocChunks
    from ingestaudit.kept_vectors import VectorKeeper
    from ingestaudit.measurement import State

    vectors = np.eye(3, dtype=np.float32)[:2] + np.float32(0.1)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    keeper = VectorKeeper(folder)
    keeper.add(0, "p", [DocChunks("a", "c1", State.OK, vectors=vectors, intervals=[(0, 10), (10, 20)])], ["q1"],
               np.array([[1.0, 0.0, 0.0]], np.float32), EMB)
    keeper.finish()
    return folder


def _keys(folder: Path, **columns) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(folder / "vectors-keys.parquet").to_pydict() | columns
    pq.write_table(pa.table({k: v for k, v in table.items() if v is not None}), folder / "vectors-keys.parquet")


def _manifest(folder: Path, **fields) -> None:
    raw = json.loads((folder / "vectors.json").read_text())
    raw.update({k: v for k, v in fields.items() if k != "entry"})
    raw["pipelines"][0].update(fields.get("entry", {}))
    (folder / "vectors.json").write_text(json.dumps(raw))


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


DAMAGE = {  # name -> (damage the head folder, what the reason says after "this run's kept vectors are unusable: ")
    "other width": (lambda h: np.save(h / "vectors-0.npy", np.zeros((2, 4), np.float32)),
                    "vectors-0.npy (pipelines[0].chunks): (2, 4) float32, expected float32 (2, 3)"),
    "more keys than rows": (lambda h: _keys(h, pipeline=[0, 0, 0], row=[0, 1, 2], doc=["a"] * 3, chunk=[0, 1, 2],
                                            start=[0, 10, 20], end=[10, 20, 30]),
                            "vectors-0.npy (pipelines[0].chunks): (2, 3) float32, expected float32 (3, 3)"),
    "key column missing": (lambda h: _keys(h, start=None), "vectors-keys.parquet: column 'start' missing"),
    "key column of strings": (lambda h: _keys(h, start=["0", "10"]),
                              "vectors-keys.parquet: column 'start': string, integer expected"),
    "nested manifest": (lambda h: (h / "vectors.json").write_text("[" * 100_000 + "]" * 100_000),
                        "vectors.json: <file>: JSON nested too deeply"),
    "0-byte npy": (lambda h: (h / "vectors-0.npy").write_bytes(b""),
                   "vectors-0.npy (pipelines[0].chunks): not a NumPy array file (EOFError"),
    "NaN in chunks": (lambda h: np.save(h / "vectors-0.npy", np.array([[1, 0, 0], [0, np.nan, 0]], np.float32)),
                      "vectors-0.npy (pipelines[0].chunks): row 1 holds NaN or infinity"),
    "inf in questions": (lambda h: np.save(h / "vectors-0-questions.npy", np.array([[np.inf, 0, 0]], np.float32)),
                         "vectors-0-questions.npy (pipelines[0].questions): row 0 holds NaN or infinity"),
    "negative row": (lambda h: _keys(h, row=[-1, 0]), "vectors-keys.parquet: column 'row': pipeline 0's rows are "
                                                      "not 0..1 once each (row -1"),
    "duplicate row": (lambda h: _keys(h, row=[0, 0]), "vectors-keys.parquet: column 'row': pipeline 0's rows are "
                                                      "not 0..1 once each (row 0"),
    "negative offset": (lambda h: _keys(h, start=[-5, 10]), "vectors-keys.parquet: columns 'start', 'end': [-5, 10)"
                                                            " (pipeline 0, row 0) is neither -1, -1"),
    "version 99": (lambda h: _manifest(h, version=99), "vectors.json: version: 99, this ingestaudit reads version 1"),
    "manifest a FIFO": (lambda h: _fifo(h / "vectors.json"), "vectors.json: a named pipe (FIFO), not a regular file"),
    "traversal": (lambda h: _manifest(h, entry={"chunks": "../vectors-0.npy"}),
                  "vectors.json: pipelines[0].chunks: '../vectors-0.npy' is not a kept-vector file name"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_kept_vectors_are_not_comparable_naming_file_and_field(tmp_path, damage):
    from ingestaudit.embedding_drift import compare_kept

    base, head = _kept(tmp_path / "base"), _kept(tmp_path / "head")
    spoil, said = DAMAGE[damage]
    spoil(head)
    (res,) = compare_kept(base, head, [("p", "p")], k=1, permutations=10)
    assert res["state"] == "not_comparable" and "metrics" not in res
    assert res["reason"].startswith(f"this run's kept vectors are unusable: {head}/{said}"), res["reason"]


def test_nan_in_the_baselines_vectors_is_blamed_on_the_baseline(tmp_path):
    from ingestaudit.embedding_drift import compare_kept

    base, head = _kept(tmp_path / "base"), _kept(tmp_path / "head")
    np.save(base / "vectors-0.npy", np.array([[1, 0, 0], [np.inf, 0, 0]], np.float32))
    (res,) = compare_kept(base, head, [("p", "p")], k=1, permutations=10)
    assert res["reason"] == (f"the baseline's kept vectors are unusable: {base}/vectors-0.npy (pipelines[0].chunks): "
                             "row 1 holds NaN or infinity")


# --- 4. bm25 k1 / b / delta: NaN, infinity and negative values refused at the start-up check ---------------------------

@pytest.mark.parametrize("option, said", [
    ("k1 = nan", "bm25 option 'k1' must be a number finite and >= 0, got nan"),
    ("k1 = inf", "bm25 option 'k1' must be a number finite and >= 0, got inf"),
    ("k1 = -1.0", "bm25 option 'k1' must be a number finite and >= 0, got -1.0"),
    ("b = nan", "bm25 option 'b' must be a number finite, in [0, 1], got nan"),
    ("b = -inf", "bm25 option 'b' must be a number finite, in [0, 1], got -inf"),
    ("delta = inf", "bm25 option 'delta' must be a number finite and >= 0, got inf"),
])
def test_bm25_non_finite_or_negative_options_are_refused(tmp_path, option, said):
    c = one_doc_corpus(tmp_path / "c", f'[pipelines.p]\nparser = "reference"\n'
                                       f'retriever = {{ use = "bm25", {option} }}\n')
    r = run("validate", str(c))
    assert r.exit_code == 2 and f"pipeline 'p', retriever: {said}" in r.output, r.output
    lane = one_doc_corpus(tmp_path / "h", f'[pipelines.p]\nparser = "reference"\nretriever = {{ use = "hybrid", '
                                          f'lanes = ["dense", {{ use = "bm25", {option} }}] }}\n')
    r = run("run", str(lane), "--out", str(tmp_path / "out"))
    assert r.exit_code == 2 and said in r.output and "pipeline 'p', retriever" in r.output, r.output
    assert not (tmp_path / "out").exists()


# --- 6. a bad embedder path: validate refuses it as run does, both naming the pipeline and embedder.path -------------

def test_validate_and_run_refuse_a_bad_embedder_path_alike(tmp_path):
    c = one_doc_corpus(tmp_path / "c")
    cfg = tmp_path / "cfg.toml"  # a path is taken from a --config file only, never from the corpus's own toml
    missing = tmp_path / "no-model"
    cfg.write_text(f'[pipelines.p]\nparser = "reference"\n'
                   f'embedder = {{ use = "sentence-transformers", path = "{missing}" }}\n')
    said = (f"pipeline 'p', embedder: embedder 'sentence-transformers': embedder.path: {missing} is not a folder "
            "(no such file or folder)")
    r = run("validate", str(c), "--config", str(cfg))
    assert r.exit_code == 2 and said in " ".join(r.output.split()), r.output
    r = run("run", str(c), "--config", str(cfg), "--out", str(tmp_path / "out"))
    assert r.exit_code == 2 and said in " ".join(r.output.split()), r.output
    assert not (tmp_path / "out").exists()


# --- 7. [gate]: strict types, and no budget for a cutoff the run does not measure -----------------------------------

@pytest.mark.parametrize("entry, said", [
    ('"retrieval.recall@10" = true', "gate: Value error, [gate] retrieval.recall@10: True is neither a budget"),
    ("min_items = true", "gate: Value error, [gate] min_items: True is neither a budget"),
    ('min_items = "10"', "ingestaudit.toml [gate]: min_items: Input should be a valid integer"),
    ("min_items = 1e9", "ingestaudit.toml [gate]: min_items: Input should be a valid integer"),
    ("band_window = 6.0", "ingestaudit.toml [gate]: band_window: Input should be a valid integer"),
    ('"retrieval.recall@7" = 0.01', "ingestaudit.toml [gate] retrieval.recall@7: no such cutoff is measured by this "
                                    "run; measured: retrieval.recall@1, retrieval.recall@3, retrieval.recall@5, "
                                    "retrieval.recall@10"),
])
def test_gate_section_is_strict(tmp_path, entry, said):
    c = one_doc_corpus(tmp_path / "c", f"[gate]\n{entry}\n")
    r = run("validate", str(c))
    assert r.exit_code == 2 and said in " ".join(r.output.split()), r.output
    r = run("run", str(c), "--out", str(tmp_path / "out"))
    assert r.exit_code == 2 and said in " ".join(r.output.split()), r.output


def test_gate_values_that_are_fine_stay_as_written(tmp_path):
    c = one_doc_corpus(tmp_path / "c", '[auditor_options.retrieval]\nk = [7]\n\n[gate]\nmin_items = 3\n'
                                       '"retrieval.recall@7" = "5%"\n"extraction.cer" = 0.02\n')
    r = run("validate", str(c))
    assert r.exit_code == 0, r.output
    from ingestaudit.config import load_config

    assert load_config(c / "ingestaudit.toml", trusted=True).gate == {"min_items": 3, "retrieval.recall@7": "5%",
                                                                      "extraction.cer": 0.02}


# --- 8. `questions`: one bad line of questions/<pipeline>.jsonl is named (file:line) and skipped ---------------------

def test_questions_command_survives_a_bad_line(tmp_path):
    folder = tmp_path / "report" / "questions"
    folder.mkdir(parents=True)
    good = [{"id": f"q{i}", "question": f"question {i}", "class": "a", "pipeline": "p",
             "results": [{"rank": 1, "doc": "a/x", "chunk": 0, "start": 0, "end": 5, "hit": i == 1}]} for i in (1, 2)]
    half = {"id": "q8", "results": [{"rank": 1, "doc": "a/x", "start": 3, "hit": False}]}  # KeyError 'end' before
    lines = [json.dumps(good[0]), "{not json", json.dumps({"id": "q9", "results": [{"rank": "1"}]}),
             json.dumps(good[1]), json.dumps(half)]
    (folder / "p.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = run("questions", str(tmp_path / "report"))
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())
    assert f"warning: {folder / 'p.jsonl'}:2: not JSON (Expecting property name enclosed in double quotes)" in said
    assert f"warning: {folder / 'p.jsonl'}:3: results[0]: an object with rank (a whole number), hit (true/false) " \
           "and doc expected; skipped" in said
    assert f"warning: {folder / 'p.jsonl'}:5: results[0]: start and end both whole numbers, or both null; " \
           "skipped" in said
    # lines 1 and 4 listed: q1 hit at rank 1, q2 missed -> 1 of 2 questions with a hit
    assert "q1 [a] question 1" in said and "q2 [a] question 2" in said and "q9" not in said and "q8" not in said
    assert "p: 1 of 2 questions with a hit in the top results (misses: 1)" in said


# --- 9. routing problems: one line and one count each; run names the config file; " txt " refused --------------------

ROUTES = '[pipelines.p]\nparser = { " txt " = "reference", "a b" = "reference", pdf = "nope" }\n'


def test_validate_lists_each_routing_problem_on_its_own_line(tmp_path):
    c = one_doc_corpus(tmp_path / "c", ROUTES)
    r = run("validate", str(c))
    assert r.exit_code == 2
    assert "\\x0a" not in r.output
    lines = [line for line in r.output.splitlines() if line.startswith("ingestaudit.toml: [pipelines.p] parser")]
    assert lines == [
        "ingestaudit.toml: [pipelines.p] parser, key ' txt ': white space around the extension; write 'txt'",
        "ingestaudit.toml: [pipelines.p] parser, key 'a b': not a file extension (letters, digits, _ + -, optionally "
        "after one dot) nor 'default' (valid parsers: pymupdf, reference, tagged, tesseract, unstructured)",
        "ingestaudit.toml: [pipelines.p] parser, key 'pdf': unknown parser 'nope'; valid parsers: pymupdf, reference,"
        " tagged, tesseract, unstructured"]
    assert f"3problem(s)in{c}" in "".join(r.output.split())  # the terminal may wrap a long temporary path


def test_runs_routing_error_names_the_config_file(tmp_path):
    c = one_doc_corpus(tmp_path / "c", '[pipelines.p]\nparser = { " txt " = "reference" }\n')
    r = run("run", str(c), "--out", str(tmp_path / "out"))
    assert r.exit_code == 2
    assert (f"error: {c / 'ingestaudit.toml'}: [pipelines.p] parser, key ' txt ': white space around the extension; "
            "write 'txt'") in r.output


# --- 10. --events that is a FIFO, a device or a folder: said what it is, before the audit ----------------------------

def test_events_path_that_is_not_a_regular_file_says_what_it_is(tmp_path):
    c = one_doc_corpus(tmp_path / "c")
    os.mkfifo(tmp_path / "fifo")
    for path, what in ((tmp_path / "fifo", "a named pipe (FIFO)"), (Path("/dev/null"), "a character device"),
                       (tmp_path, "a folder")):
        r = run("run", str(c), "--out", str(tmp_path / "out"), "--events", str(path))
        assert r.exit_code == 2
        assert f"error: --events {path}: {what}, not a regular file: not read" in r.output, r.output
        assert not (tmp_path / "out").exists()


# --- 11. metadata truth values: a year 1e400 (infinity) and a date 2026-02-30 are label errors naming file and field -

def _metadata_corpus(root: Path) -> Path:
    one_doc_corpus(root)
    (root / "truth" / "a").mkdir(parents=True)
    (root / "truth" / "a" / "x.txt").write_text("Annual Report\nhello world\n", encoding="utf-8")
    (root / "truth" / "a" / "x.json").write_text(
        '{"metadata": {"title": "Annual Report", "year": 1e400, "date": "2026-02-30", "lang": NaN}}', encoding="utf-8")
    return root


def test_metadata_truth_values_that_are_no_value_are_label_errors(tmp_path):
    from ingestaudit.corpus import discover
    from ingestaudit.truth import TruthError, load_truth

    c = _metadata_corpus(tmp_path / "c")
    found = discover(c)
    with pytest.raises(TruthError) as exc:
        load_truth(found.documents[0], found.root)
    assert [str(p) for p in exc.value.problems] == [
        "truth/a/x.json: metadata.year: inf is not a finite number",
        "truth/a/x.json: metadata.date: '2026-02-30' is not a date (ISO 8601 such as 2026-02-28, or a text dateutil "
        "reads, with its year)",
        "truth/a/x.json: metadata.lang: nan is not a finite number"]
    assert exc.value.partial.metadata == {"title": "Annual Report"}  # the other fields are still labels
    r = run("validate", str(c))
    assert r.exit_code == 2 and "truth/a/x.json: metadata.year: inf is not a finite number" in r.output


def test_a_document_with_a_bad_metadata_value_is_audited_for_its_other_fields(tmp_path):
    from _rows import load_report, measurements

    c = _metadata_corpus(tmp_path / "c")
    r = run("run", str(c), "--out", str(tmp_path / "out"), "--stage", "metadata", "--parser", "reference")
    assert r.exit_code == 0, r.output
    rows = {(m["metric"], m["label"]): m["state"] for m in measurements(tmp_path / "out") if m["stage"] == "metadata"}
    assert rows == {("metadata.exact_match", "title"): "ok", ("metadata.similarity", "title"): "ok"}
    failures = [f["message"] for f in load_report(tmp_path / "out")["failures"] if f["stage"] == "truth"]
    assert "truth/a/x.json: metadata.year: inf is not a finite number" in failures
    assert any(f.startswith("truth/a/x.json: metadata.date: '2026-02-30' is not a date") for f in failures)


# --- 12. hybrid weights all 0 refused; freshness rows say what N counts -------------------------------------------

def test_hybrid_weights_all_zero_are_refused(tmp_path):
    c = one_doc_corpus(tmp_path / "c", '[pipelines.p]\nparser = "reference"\n'
                                       'retriever = { use = "hybrid", lanes = ["dense", "bm25"], weights = [0, 0] }\n')
    r = run("validate", str(c))
    assert r.exit_code == 2
    assert ("pipeline 'p', retriever: hybrid option 'weights' needs at least one weight > 0, got [0, 0]"
            in " ".join(r.output.split())), r.output
    from ingestaudit.stages.hybrid_retriever import HybridRetriever

    assert HybridRetriever(lanes=["dense", "bm25"], weights=[0, 1]).weights == [0.0, 1.0]  # one positive is enough


def test_freshness_rows_count_events_and_queries_not_documents(tmp_path):
    from ingestaudit.events import freshness_rows
    from ingestaudit.report.tables import cell

    events = tmp_path / "ev.jsonl"
    # two documents, five index events (a has three versions) and two served queries
    lines = [{"doc": d, "committed_at": f"2026-01-01T00:00:{c:02d}Z", "indexed_at": f"2026-01-01T00:00:{i:02d}Z"}
             for d, c, i in (("a", 0, 10), ("a", 20, 40), ("a", 41, 50), ("b", 0, 30), ("b", 31, 59))]
    lines += [{"query_at": "2026-01-01T00:00:45Z", "doc": "a"}, {"query_at": "2026-01-01T00:00:55Z", "doc": "b"}]
    events.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    summary, _, failures = freshness_rows(events, ["p"], {"a": "c1", "b": "c1"})
    assert failures == []
    notes = {(r.metric, r.label): cell(r).extra for r in summary if r.doc_class == "__all__"}
    assert notes[("index.freshness_lag", "p50")].endswith("corpus of 5 events")
    assert notes[("index.freshness_lag", "p99")].endswith("corpus of 5 events")
    assert notes[("index.stale_query_share", "")].endswith("corpus of 2 queries")


def test_a_pipeline_named_like_the_timings_run_entry_is_refused(tmp_path):
    """'(run)' is timings.json's entry of the whole run: a pipeline of that name lost its own timings (trial)."""
    c = one_doc_corpus(tmp_path / "c", '[pipelines."(run)"]\nparser = "reference"\n')
    for command in (("validate", str(c)), ("run", str(c), "--out", str(tmp_path / "out"))):
        r = run(*command)
        assert r.exit_code == 2 and "the name (run) is reserved" in " ".join(r.output.split()), r.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("rel", ["questions/reference.jsonl", "runs/reference.trec", "measurements.parquet",
                                 "vectors.json"])
def test_junit_onto_any_file_of_the_report_folder_is_refused(tmp_path, rel):
    """`run --junit OUT/questions/<p>.jsonl` overwrote the questions file with XML; `compare --junit
    BASE/measurements.parquet` destroyed the baseline's store and exited 0 (the hostile trial)."""
    c = one_doc_corpus(tmp_path / "c")
    out = tmp_path / "out"
    r = run("run", str(c), "--out", str(out), "--baseline", f"history:{tmp_path / 'h.duckdb'}",
            "--junit", str(out / rel))
    said = " ".join(r.output.split())
    assert r.exit_code == 2 and (f"is a file of the report folder {out}" in said  # report.json's own: named so
                                 or "measurements.parquet, a file this command writes itself" in said), r.output
    assert not out.exists()
    base, head = tmp_path / "base", tmp_path / "head"
    for folder in (base, head):
        assert run("run", str(c), "--out", str(folder), "--stage", "extraction").exit_code == 0
    before = (base / "measurements.parquet").read_bytes()
    for folder in (base, head):
        r = run("compare", str(base / "report.json"), str(head / "report.json"), "--junit", str(folder / rel))
        assert r.exit_code == 2 and f"is a file of the report folder {folder}" in " ".join(r.output.split())
    assert (base / "measurements.parquet").read_bytes() == before
    ok = run("compare", str(base / "report.json"), str(head / "report.json"), "--junit", str(tmp_path / "j.xml"))
    assert ok.exit_code == 0 and (tmp_path / "j.xml").read_text().startswith("<?xml")


def test_an_auditor_option_value_refused_names_its_table(tmp_path):
    """`threshold = 2` said "threshold must be in (0, 1], got 2" with no section (the hostile trial)."""
    c = one_doc_corpus(tmp_path / "c", "[auditor_options.layout]\nthreshold = 2\n")
    r = run("validate", str(c))
    assert r.exit_code == 2
    assert "ingestaudit.toml: [auditor_options.layout] threshold must be in (0, 1], got 2" in r.output


def test_questions_on_a_folder_whose_files_are_gone_is_exit_2(tmp_path):
    """It said "no question to show" and exit 0 when questions/*.jsonl had been deleted (the hostile trial)."""
    folder = tmp_path / "report" / "questions"
    folder.mkdir(parents=True)
    r = run("questions", str(tmp_path / "report"))
    assert r.exit_code == 2 and f"{folder}: no <pipeline>.jsonl file" in " ".join(r.output.split()), r.output
