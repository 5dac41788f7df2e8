"""Issue 30 (hardening, round 3), points 2, 3 and 7: sizes that grew without a cap (sweeps, pipelines, paired
tests), a Dask scheduler that never answers, and a configuration that ``validate`` and ``run`` judged differently.

Each reproduction is rebuilt under other names and sizes; commands that could hang run in a child process with a
60 s timeout, so a hang fails the test instead of stalling the suite.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

LOCALHOST = pytest.mark.allow_hosts(["127.0.0.1"])  # a listener of this test on 127.0.0.1, no other host


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def small_corpus(root: Path, toml: str | None = None, docs: int = 1) -> Path:
    for i in range(docs):
        write(root / "docs" / "memo" / f"n{i}.txt", f"Note {i}. The valve closes at dusk.\n")
        write(root / "truth" / "memo" / f"n{i}.txt", f"Note {i}. The valve closes at dusk.\n")
    if toml is not None:
        write(root / "ingestaudit.toml", toml)
    return root


def cli(*args: str, timeout: float = 60, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The command in a child process: a hang is a failed test (TimeoutExpired), not a stalled suite."""
    return subprocess.run([sys.executable, "-m", "ingestaudit.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def flat(text: str) -> str:
    return " ".join(text.split())


# --- 3. a Dask scheduler that accepts and never answers -----------------------------------------------------------

class _Listener:
    """A TCP listener on 127.0.0.1 that accepts every connection and then writes ``answer`` (or nothing) and never
    closes it, until the test ends."""

    def __init__(self, answer: bytes = b"") -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.address = f"tcp://127.0.0.1:{self.sock.getsockname()[1]}"
        self.answer, self.conns, self.accepted = answer, [], 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed by the test
                return
            self.accepted += 1
            self.conns.append(conn)
            if self.answer:
                conn.sendall(self.answer)

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


@LOCALHOST
@pytest.mark.parametrize("answer", [b"", b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot here\n",
                                    (2 ** 31).to_bytes(8, "little") + b"\x01" * 64],
                         ids=["silent", "http", "a-2-GiB-frame-announced"])
def test_a_scheduler_that_never_completes_the_handshake_is_exit_2(tmp_path, answer):
    c = small_corpus(tmp_path / "silo")
    listener = _Listener(answer)
    try:
        r = cli("run", str(c), "-p", "reference", "--stage", "extraction", "--executor", "dask", "--scheduler",
                listener.address, "--out", str(tmp_path / "out"))
    finally:
        listener.close()
    assert listener.accepted >= 1  # the client did reach it
    assert r.returncode == 2, r.stderr
    err = flat(r.stderr)
    assert f"--scheduler {listener.address}:" in err
    # a silent listener times out; garbage fails the handshake or times out (an announced 2 GiB frame never comes)
    assert ("did not answer within 5 s" in err) if not answer else ("handshake failed" in err
                                                                      or "did not answer within 5 s" in err)
    assert "Traceback" not in r.stderr and not (tmp_path / "out" / "report.json").exists()


# --- 2. sizes that grew without a cap: sweeps, pipelines, paired tests -------------------------------------------

# VmHWM, not ru_maxrss: Linux carries the forking process's peak into ru_maxrss across exec, so a child of a large
# test process (a pytest-xdist worker holding torch) would report its parent's peak; VmHWM is this process's own
PEAK = ("import re, sys\nfrom pathlib import Path\nfrom ingestaudit.cli import app\ntry:\n"
        "    app(sys.argv[1:], prog_name='ingestaudit')\nfinally:\n"
        "    hwm = re.search(r'VmHWM:\\s+(\\d+) kB', Path('/proc/self/status').read_text()).group(1)\n"
        "    sys.stderr.write(f'\\npeak_kb={hwm}\\n')\n")


def cli_peak(*args: str) -> tuple[subprocess.CompletedProcess, int]:
    """The command in a child process, with its own peak resident memory in KiB (``VmHWM``)."""
    r = subprocess.run([sys.executable, "-c", PEAK, *args], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ))
    return r, int(r.stderr.rsplit("peak_kb=", 1)[1].split()[0])


def test_a_sweep_past_the_pipeline_limit_is_refused_before_it_is_expanded(tmp_path):
    c = small_corpus(tmp_path / "grid")
    values = ",".join(str(v) for v in range(1, 41))
    r, peak_kb = cli_peak("run", str(c), "-p", "reference", "-p", "pymupdf", "--out", str(tmp_path / "out"),
                          "--sweep", f"chunker.size={values}", "--sweep", f"chunker.overlap={values}",
                          "--sweep", f"index.m={values}", "--sweep", f"index.ef_search={values}")
    assert r.returncode == 2, r.stderr
    # 2 pipelines x 40^4 values = 5,120,000 variants, counted, never built (the trial saw 3.8 GB and rising)
    assert ("5,120,000 pipelines to audit (2 pipelines x 40 (chunker.size) x 40 (chunker.overlap) x 40 (index.m) "
            "x 40 (index.ef_search)): over [limits] pipelines = 64") in flat(r.stderr)
    assert peak_kb < 1 << 20  # under 1 GiB
    assert not (tmp_path / "out").exists()


def test_the_pipeline_limit_counts_variants_exactly():
    from ingestaudit.pipeline import PipelineError, Sweep, expand, make_pipeline

    pipes = [make_pipeline(n, {"parser": "reference"}) for n in ("north", "south")]
    sweep = Sweep.parse("chunker.size=" + ",".join(str(v) for v in range(100, 132)))  # 32 values
    assert len(expand(pipes, [sweep], limit=64)) == 64  # 2 x 32: at the limit
    with pytest.raises(PipelineError, match=r"^66 pipelines to audit \(2 pipelines x 33 \(chunker.size\)\): over "
                                            r"\[limits\] pipelines = 64"):
        expand(pipes, [Sweep.parse("chunker.size=" + ",".join(str(v) for v in range(100, 133)))], limit=64)


SWEEP_OF_MANY = """
from ingestaudit.pipeline import PipelineError, Sweep, expand, make_pipeline

values = ",".join(map(str, range(200_000)))
sweep = Sweep.parse("chunker.size=" + values)
print(len(sweep.values))
try:
    expand([make_pipeline("solo", {"parser": "reference"})], [sweep], limit=64)
except PipelineError as exc:
    print(exc)
try:
    Sweep.parse("chunker.size=" + values + ",7")
except PipelineError as exc:
    print(str(exc)[-80:])
"""


def test_a_sweep_of_many_values_is_checked_in_linear_time():
    # the repeated-value check counted each value against every other: 200,000 values were 4e10 comparisons
    r = subprocess.run([sys.executable, "-c", SWEEP_OF_MANY], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    count, limit, twice = r.stdout.splitlines()
    assert count == "200000"
    assert limit.startswith("200,000 pipelines to audit (1 pipeline x 200000 (chunker.size)): over [limits] "
                            "pipelines = 64")
    assert twice.endswith("value given twice: 7 (each variant is a pipeline named after its value)")


def _many_pipelines(n: int) -> str:
    return "".join(f'[pipelines.variant-{i:03d}]\nparser = "reference"\n'
                   f'chunker = {{ use = "fixed", size = {100 + i} }}\n' for i in range(n))


def test_a_corpus_toml_with_too_many_pipelines_is_refused_by_run_and_validate(tmp_path):
    c = small_corpus(tmp_path / "many", toml=_many_pipelines(70))
    r = cli("run", str(c), "--out", str(tmp_path / "out"))
    assert r.returncode == 2, r.stderr
    assert "70 pipelines to audit (70 pipelines): over [limits] pipelines = 64" in flat(r.stderr)
    v = cli("validate", str(c))
    assert v.returncode == 2, v.stdout + v.stderr
    assert "70 pipelines to audit (70 pipelines): over [limits] pipelines = 64" in flat(v.stdout)


def test_a_corpus_may_lower_the_pipeline_limit(tmp_path):
    c = small_corpus(tmp_path / "low", toml="[limits]\npipelines = 2\n")
    r = cli("run", str(c), "-p", "reference", "--sweep", "chunker.size=200,300,400", "--out", str(tmp_path / "out"))
    assert r.returncode == 2, r.stderr
    assert "3 pipelines to audit (1 pipeline x 3 (chunker.size)): over [limits] pipelines = 2" in flat(r.stderr)


def test_the_same_option_swept_twice_is_refused(tmp_path):
    c = small_corpus(tmp_path / "twice")
    r = cli("run", str(c), "-p", "reference", "--sweep", "chunker.overlap=0,10", "--sweep", "index.m=8,16",
            "--sweep", "chunker.overlap=20", "--out", str(tmp_path / "out"))
    assert r.returncode == 2, r.stderr
    assert "--sweep chunker.overlap: the same option swept twice" in flat(r.stderr)
    assert not (tmp_path / "out").exists()


def _cer_row(item: str, pipeline: str, value: float, doc_class: str = "c"):
    from ingestaudit.report.schema import MeasurementRow

    return MeasurementRow(item=item, item_kind="document", doc_class=doc_class, pipeline=pipeline,
                          stage="extraction", metric="extraction.cer", label="", value=value, numerator=None,
                          denominator=None, state="ok", detail={})


def test_paired_tests_grow_with_the_pipelines_not_their_square():
    from ingestaudit.report.paired import paired_tests
    from ingestaudit.report.tables import significant_best

    base = {"p0": 0.30, "p1": 0.25, "p2": 0.20, "p3": 0.05, "p4": 0.15, "p5": 0.40}  # p3 has the lowest CER
    rows = [_cer_row(f"d{i}", p, b + 0.001 * i * (k + 1)) for k, (p, b) in enumerate(base.items()) for i in range(8)]
    tests = paired_tests(rows, list(base), keys=[("extraction.cer", "")])
    mine = [t for t in tests if t.doc_class == "c"]
    # 6 pipelines: 5 tests (the best, p3, against each other one), not 15; __all__ holds the same items: copies
    assert [(t.pipeline_a, t.pipeline_b) for t in mine] == [("p0", "p3"), ("p1", "p3"), ("p2", "p3"), ("p3", "p4"),
                                                            ("p3", "p5")]
    assert len(tests) == 10 and all(t.n_pairs == 8 for t in tests)
    # every difference has one sign: exact two-sided Wilcoxon p = 2 / 2^8; the family is the 5 class tests (Holm x5)
    assert all(t.p_value == pytest.approx(2 / 256) for t in mine)
    assert all(t.p_holm == pytest.approx(5 * 2 / 256) and t.better == "p3" for t in mine)
    assert significant_best(tests, list(base), "extraction.cer", "", "c") == "p3"
    assert "the class's best pipeline against each other one" in mine[0].method


def test_a_pipeline_that_beats_the_best_alone_gets_no_star():
    from ingestaudit.report.schema import PairedTest
    from ingestaudit.report.tables import significant_best

    def test(a: str, b: str, better: str) -> PairedTest:
        return PairedTest(doc_class="c", metric="extraction.cer", label="", pipeline_a=a, pipeline_b=b, n_pairs=9,
                          mean_diff=0.0, median_diff=0.0, statistic=0.0, p_value=0.001, significant=True,
                          method="m", p_holm=0.002, better=better)

    # oak is the best by its value; elm beats oak on their paired items but was never compared with ash
    tests = [test("ash", "oak", "oak"), test("oak", "elm", "elm")]
    assert significant_best(tests, ["ash", "oak", "elm"], "extraction.cer", "", "c") is None
    assert significant_best([test("ash", "oak", "oak"), test("oak", "elm", "oak")], ["ash", "oak", "elm"],
                            "extraction.cer", "", "c") == "oak"


def test_question_tests_compare_the_best_pipeline_with_each_other_one():
    from ingestaudit.pipeline_tests import paired_question_tests
    from ingestaudit.report.schema import MeasurementRow

    hits = {"w": [1] * 3 + [0] * 9, "x": [1] * 11 + [0], "y": [1] * 6 + [0] * 6, "z": [1] * 2 + [0] * 10}
    rows = [MeasurementRow(item=f"q{i}", item_kind="question", doc_class="c", pipeline=p, stage="retrieval",
                           metric="retrieval.hit@5", label="", value=h, numerator=h, denominator=1, state="ok",
                           detail={}) for p, hs in hits.items() for i, h in enumerate(hs)]
    tests = paired_question_tests(rows, list(hits), ["retrieval.hit@5"])
    assert [(t["class"], t["pipeline_a"], t["pipeline_b"]) for t in tests] == [
        ("c", "w", "x"), ("c", "x", "y"), ("c", "x", "z"),
        ("__all__", "w", "x"), ("__all__", "x", "y"), ("__all__", "x", "z")]  # 3 per class for 4 pipelines, not 6
    # x against z: x wins 9 questions, loses none: sign p = 2 * 0.5^9
    assert tests[2]["sign_p"] == pytest.approx(2 * 0.5 ** 9) and tests[2]["wins_b"] == 0


# --- 7. validate and run judge a configuration the same way -------------------------------------------------------

@pytest.mark.parametrize("toml, expected", [
    ('[gate]\n"tables.tedss" = 0.02\n', "ingestaudit.toml [gate] tables.tedss: unknown metric 'tables.tedss'"),
    ('[gate]\n"extraction.cer" = "two percent"\n',
     "ingestaudit.toml [gate] extraction.cer: budget 'two percent' is not a number"),
    ("[auditor_options.tables]\nmax_tables = 7\n", "[auditor_options.tables] max_tables: the tables per document "
                                                   "are limited by [limits] tables; set it there"),
], ids=["misspelt-gate-metric", "bad-budget", "max-tables-outside-limits"])
def test_validate_and_run_refuse_the_same_config(tmp_path, toml, expected):
    c = small_corpus(tmp_path / "same", toml=toml)
    v = cli("validate", str(c))
    r = cli("run", str(c), "-p", "reference", "--stage", "extraction", "--out", str(tmp_path / "out"))
    assert (v.returncode, r.returncode) == (2, 2), v.stdout + r.stderr
    assert expected in flat(v.stdout) and expected in flat(r.stderr)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("stage, table, valid", [
    ("chunker", '"recursve"', "known: recursive, fixed, structural, semantic, precomputed"),
    ("cleaner", '{ use = "repeated_lines" }', "known: trafilatura, unstructured, repeated-lines, none, precomputed"),
    ("embedder", '"mini-lm"', "known: minilm, sentence-transformers"),
    ("index", '"hnsw2"', "known: hnsw, ivf, flat"),
    ("retriever", '"bm25x"', "known: dense"),
])
def test_an_unknown_step_implementation_is_exit_2_at_start_up(tmp_path, stage, table, valid):
    toml = f'[pipelines.coarse-grid]\nparser = "reference"\n{stage} = {table}\n'
    c = small_corpus(tmp_path / "steps", toml=toml, docs=3)
    r = cli("run", str(c), "--out", str(tmp_path / "out"))
    assert r.returncode == 2, r.stderr  # was exit 0 with every document an error row
    err = flat(r.stderr)
    assert f"pipeline 'coarse-grid', {stage}: unknown" in err and valid in err
    assert not (tmp_path / "out").exists()
    v = cli("validate", str(c))
    assert v.returncode == 2 and f"pipeline 'coarse-grid', {stage}: unknown" in flat(v.stdout)


def test_a_bad_step_option_is_named_with_every_pipeline_using_it(tmp_path):
    c = small_corpus(tmp_path / "opts")
    r = cli("run", str(c), "-p", "reference", "--sweep", "chunker.sizes=100,200", "--out", str(tmp_path / "out"))
    assert r.returncode == 2, r.stderr
    err = flat(r.stderr)
    assert "pipeline 'reference/sizes=100', chunker: chunker 'recursive': bad option" in err
    assert "pipeline 'reference/sizes=200', chunker:" in err  # each variant's own options


def test_a_huge_corpus_toml_is_refused_before_it_is_parsed(tmp_path):
    c = small_corpus(tmp_path / "huge")
    with open(c / "ingestaudit.toml", "w", encoding="utf-8") as fh:  # 1 MiB + a little of valid TOML
        fh.write("# padding\n" * ((1 << 20) // 10 + 10))
    for args in (("run", str(c), "-p", "reference", "--out", str(tmp_path / "out")), ("validate", str(c))):
        r = cli(*args)
        assert r.returncode == 2, r.stdout + r.stderr
        size = (c / "ingestaudit.toml").stat().st_size  # the shared reader's words (ingestaudit.inputs)
        assert f"{c / 'ingestaudit.toml'}: {size} bytes, over CONFIG_BYTES = 1048576: not read" in flat(r.stdout + r.stderr)
    small = c / "ingestaudit.toml"
    small.write_text("# a comment\n" * 1000, encoding="utf-8")  # 12 kB: read
    assert cli("validate", str(c)).returncode == 0


FAILING_CHUNKER = """
from ingestaudit.stages.chunkers.recursive import RecursiveChunker


class Snap(RecursiveChunker):
    def chunk(self, inp, tokens=None):
        raise RuntimeError("the chunker snapped")
"""


def test_the_headline_counts_errors_where_a_row_has_only_errors(tmp_path):
    write(tmp_path / "plugins" / "snapping.py", FAILING_CHUNKER)
    c = small_corpus(tmp_path / "snap", docs=3)
    cfg = write(tmp_path / "cfg.toml", '[pipelines.snappy]\nparser = "reference"\nchunker = "snapping:Snap"\n')
    r = cli("run", str(c), "--config", str(cfg), "--stage", "extraction", "--stage", "chunking", "--executor",
            "serial", "--out", str(tmp_path / "out"), env={"PYTHONPATH": os.pathsep.join(
                [str(tmp_path / "plugins"), os.environ.get("PYTHONPATH", "")])})
    assert r.returncode == 0, r.stderr
    assert "no value in this class" not in r.stdout  # was: "no value in this class: chunking.evidence_held"
    held = [ln for ln in r.stdout.splitlines() if ln.strip().startswith("chunking.boundary_")]  # key (issue 25)
    assert len(held) == 2 and all(ln.split()[-3:] == ["—", "3", "err"] for ln in held)  # class memo and __all__
