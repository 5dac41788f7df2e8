"""Issue 15 (hardening), with the hostile inputs themselves: a corpus is untrusted input.

Trust boundary (a corpus's own ingestaudit.toml never loads code by module path; links out of the corpus, FIFOs and
devices are never read), label values (booleans and floats are not offsets, a 5,000-digit integer or 600 levels of
nesting are a problem of their file and field), and Tesseract (killed with its process group, temp folder removed).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.config import ConfigError, load_config
from ingestaudit.corpus import LINK_ROOTS_ENV, discover
from _rows import load_report, measurements


def corpus(root: Path, docs: dict[str, str], truth: dict[str, str] | None = None, toml: str | None = None) -> Path:
    for rel, text in docs.items():
        (root / "docs" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / rel).write_text(text, encoding="utf-8")
    for rel, text in (truth or {}).items():
        (root / "truth" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "truth" / rel).write_text(text, encoding="utf-8")
    if toml is not None:
        (root / "ingestaudit.toml").write_text(toml, encoding="utf-8")
    return root


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


def cli_process(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The command in a child process: a hang fails the test instead of stalling the suite."""
    return subprocess.run([sys.executable, "-m", "ingestaudit.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def report_text(out: Path) -> str:
    return (out / "report.json").read_text(encoding="utf-8") + (out / "report.md").read_text(encoding="utf-8")


# --- 1. trust boundary: module paths -----------------------------------------------------------------------------

def _marker_toml(marker: Path, where: str) -> str:
    if where == "parser":
        return f'[run]\nparsers = ["os:system"]\n\n[parser_options."os:system"]\ncommand = "touch {marker}"\n'
    return (f'[auditor_options.pii]\nscrubber = "os:system"\n'
            f'detector_options = {{ command = "touch {marker}" }}\n')


@pytest.mark.parametrize("where, field", [("parser", "run.parsers[0]"), ("scrubber", "auditor_options.pii.scrubber")])
def test_a_corpus_toml_naming_a_module_path_runs_nothing(tmp_path, where, field):
    marker = tmp_path / "MARKER"
    c = corpus(tmp_path / "c", {"a/x.txt": "hello"}, {"a/x.txt": "hello", "a/x.json": '{"pii": []}'},
               toml=_marker_toml(marker, where))
    r = cli("run", str(c), "--out", str(tmp_path / "o"))
    assert r.exit_code == 2, r.output
    assert field in r.output.replace("\n", "") and "module path" in r.output
    assert not marker.exists() and not (tmp_path / "o").exists()
    r = cli("run", str(c), "-p", "reference", "--out", str(tmp_path / "o"))  # a --parser does not bypass it
    assert r.exit_code == 2 and not marker.exists()
    v = cli("validate", str(c))
    assert v.exit_code == 2, v.output
    assert field in v.output and "module path" in v.output and "Traceback" not in v.output
    assert not marker.exists()


def test_every_plugin_name_field_is_checked_and_a_passed_config_is_trusted(tmp_path):
    path = tmp_path / "cfg.toml"
    path.write_text(textwrap.dedent("""\
        [run]
        parsers = ["pymupdf"]
        cache_dir = "somewhere"
        [pipelines.p]
        parser = "a.b:Parser"
        cleaner = { use = "a.b:Cleaner" }
        chunker = "recursive"
        embedder = { use = "minilm", model = "docs/evil-model" }
        [auditor_options.dedup]
        detector = "a.b:Dedup"
        [auditor_options.language]
        detector = "a.b:Lang"
        """), encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(path)  # untrusted by default
    msg = str(err.value)
    for field in ("run.cache_dir", "pipelines.p.parser", "pipelines.p.cleaner.use", "pipelines.p.embedder.model",
                  "auditor_options.dedup.detector", "auditor_options.language.detector"):
        assert f"{path}: {field}:" in msg, field
    assert "pipelines.p.chunker" not in msg and "run.parsers" not in msg
    cfg = load_config(path, trusted=True)  # the user's own --config: module paths allowed
    assert cfg.pipelines["p"]["parser"] == "a.b:Parser"


def test_registered_names_in_a_corpus_toml_are_fine(tmp_path):
    path = tmp_path / "ingestaudit.toml"
    path.write_text('[run]\nparsers = ["reference"]\n[auditor_options.pii]\nscrubber = "presidio"\n'
                    '[pipelines.p]\nchunker = { use = "recursive", size = 300 }\n', encoding="utf-8")
    assert load_config(path).auditor_options["pii"]["scrubber"] == "presidio"


# --- 2. trust boundary: files --------------------------------------------------------------------------------------

SECRET = "TOP-SECRET-7f3a9c"


def test_a_truth_file_linked_out_of_the_corpus_is_never_read(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text(f"root:x:0:0\nAPI_KEY={SECRET}\n", encoding="utf-8")
    c = corpus(tmp_path / "c", {"a/good.txt": "x", "a/leak.txt": "x"}, {"a/good.txt": "hello world"})
    os.symlink(outside, c / "truth/a/leak.txt")
    inside = c / "truth/a/good.txt"
    os.symlink(inside, c / "docs/a/linked.txt")  # a link that stays inside the corpus is fine

    found = discover(c)
    problems = {p.file: p.message for p in found.problems}
    assert "resolves outside the corpus" in problems["truth/a/leak.txt"]
    assert all(c / "truth/a/leak.txt" != f for f in found.files)
    assert "a/linked" in [d.doc_id for d in found.documents]

    v = cli("validate", str(c))
    assert v.exit_code == 2 and "truth/a/leak.txt" in v.output and SECRET not in v.output

    out = tmp_path / "o"
    r = cli("run", str(c), "-p", "reference", "--out", str(out))
    assert r.exit_code == 0, r.output
    assert SECRET not in report_text(out) and SECRET not in r.output
    rep = load_report(out)
    assert any(f["item"] == "truth/a/leak.txt" and "outside the corpus" in f["message"] for f in rep["failures"])
    assert any(m["item"] == "a/good" and m["state"] == "ok" for m in measurements(rep))  # the others audited

    # a folder the user trusts (an import's data set) may be linked into
    assert "truth/a/leak.txt" not in {p.file for p in discover(c, link_roots=[tmp_path]).problems}
    os.environ[LINK_ROOTS_ENV] = str(tmp_path)
    try:
        assert "truth/a/leak.txt" not in {p.file for p in discover(c).problems}
    finally:
        del os.environ[LINK_ROOTS_ENV]


def test_a_document_linked_out_of_the_corpus_and_questions_too(tmp_path):
    outside = tmp_path / "outside.jsonl"
    outside.write_text(json.dumps({"id": SECRET, "question": SECRET, "relevant": [{"doc": "a/x"}]}) + "\n")
    c = corpus(tmp_path / "c", {"a/x.txt": "x"}, {"a/x.txt": "hello"})
    os.symlink(outside, c / "docs/a/evil.txt")
    os.symlink(outside, c / "questions.jsonl")
    found = discover(c)
    problems = {p.file: p.message for p in found.problems}
    assert "outside the corpus" in problems["docs/a/evil.txt"] and "outside the corpus" in problems["questions.jsonl"]
    assert found.questions is None and [d.doc_id for d in found.documents] == ["a/x"]
    v = cli("validate", str(c))
    assert v.exit_code == 2 and SECRET not in v.output


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_in_docs_or_truth_is_reported_and_never_opened(tmp_path):
    c = corpus(tmp_path / "c", {"a/x.txt": "x"}, {"a/x.txt": "hello world"})
    os.mkfifo(c / "docs/a/pipe.txt")
    os.mkfifo(c / "truth/a/x.json")
    os.symlink("/dev/zero", c / "docs/a/zero.txt")
    problems = {p.file: p.message for p in discover(c).problems}
    assert "named pipe (FIFO)" in problems["docs/a/pipe.txt"]
    assert "named pipe (FIFO)" in problems["truth/a/x.json"]
    assert "character device" in problems["docs/a/zero.txt"]
    v = cli_process("validate", str(c), timeout=60)
    assert v.returncode == 2 and "docs/a/pipe.txt" in v.stdout and "Traceback" not in v.stderr
    r = cli_process("run", str(c), "-p", "reference", "--out", str(tmp_path / "o"), timeout=120)
    assert r.returncode == 0, r.stderr
    failures = load_report(tmp_path / "o")["failures"]
    assert {"docs/a/pipe.txt", "truth/a/x.json", "docs/a/zero.txt"} <= {f["item"] for f in failures}


# --- 3. label values --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["true", "12.0", '"12"'])
def test_offsets_must_be_integers(tmp_path, value):
    c = corpus(tmp_path / "c", {"a/x.txt": "x"},
               {"a/x.txt": "Call Ana Lima today", "a/x.json": '{"pii": [{"start": %s, "end": 13, "type": "PERSON"}],'
                                                             ' "headings": [{"level": %s, "text": "H"}]}'
                                                             % (value, value)})
    v = cli("validate", str(c))
    assert v.exit_code == 2
    assert "truth/a/x.json: pii[0].start: Input should be a valid integer" in v.output
    assert "truth/a/x.json: headings[0].level: Input should be a valid integer" in v.output


def test_a_5000_digit_integer_is_a_problem_of_its_file_and_field(tmp_path):
    big = "9" * 5000
    c = corpus(tmp_path / "c", {"a/big.txt": "x", "a/good.txt": "x"},
               {"a/big.txt": "hello", "a/big.json": '{"language": "en", "pii": [{"start": %s, "end": 1, "type": "X"}]}'
                % big, "a/good.txt": "hello world"})
    v = cli("validate", str(c))
    assert v.exit_code == 2 and "Traceback" not in v.output and isinstance(v.exception, SystemExit)
    assert "truth/a/big.json: pii[0].start: integer of 5000 digits" in v.output
    out = tmp_path / "o"
    r = cli("run", str(c), "-p", "reference", "--stage", "extraction", "--out", str(out))
    assert r.exit_code == 0, r.output
    rep = load_report(out)
    assert any(f["item"] == "a/big" and "pii[0].start" in f["message"] for f in rep["failures"])
    assert any(m["item"] == "a/good" and m["state"] == "ok" for m in measurements(rep))
    assert big not in report_text(out)


def test_truth_nested_600_deep_is_a_problem_and_the_run_finishes(tmp_path):
    deep = '{"sections": [' + '{"children": [' * 300 + "]}" * 300 + "]}"  # 600 levels: json.loads reads it
    c = corpus(tmp_path / "c", {"a/deep.txt": "x", "a/good.txt": "x"},
               {"a/deep.txt": "hello", "a/deep.json": deep, "a/good.txt": "hello world"})
    v = cli("validate", str(c))
    assert v.exit_code == 2 and "truth/a/deep.json: sections[0].children" in v.output
    assert "nested more than 100 levels deep" in v.output
    r = cli_process("run", str(c), "-p", "reference", "--out", str(tmp_path / "o"), timeout=120)
    assert r.returncode == 0, r.stderr
    failures = load_report(tmp_path / "o")["failures"]
    assert any(f["item"] == "a/deep" and "nested more than" in f["message"] for f in failures)
    rows = measurements(tmp_path / "o")
    assert any(m["item"] == "a/good" and m["state"] == "ok" for m in rows)


def test_validate_never_prints_a_traceback_on_odd_option_types(tmp_path):
    c = corpus(tmp_path / "c", {"a/x.txt": "x"}, {"a/x.txt": "hello"},
               toml="[auditor_options.pii]\nlabel_map = 5\nentities = 7\n")
    v = cli("validate", str(c))
    assert "Traceback" not in v.output and v.exit_code == 2, v.output


# --- 4. Tesseract -----------------------------------------------------------------------------------------------------

def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_dead(pids: list[int], within: float = 10.0) -> list[int]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


@pytest.mark.skipif(not Path("/proc").is_dir() or os.name != "posix", reason="needs /proc and process groups")
def test_run_process_kills_the_whole_group_on_timeout(tmp_path):
    from ingestaudit.children import run_process

    pidfile = tmp_path / "pids"
    with pytest.raises(subprocess.TimeoutExpired):
        run_process(["sh", "-c", f'sleep 300 & echo $$ $! > {pidfile}; wait'], timeout=1)
    pids = [int(p) for p in pidfile.read_text().split()]
    assert wait_dead(pids) == []
    done = run_process(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (done.returncode, done.stdout, done.stderr) == (3, b"out\n", b"err\n")


FAKE_TESSERACT = """#!/bin/sh
case "$1" in
  --version) echo "tesseract 5.3.0"; exit 0;;
  --list-langs) printf 'List of available languages in "/fake/" (1):\\neng\\n'; exit 0;;
esac
sleep 300 &
echo "$$ $! $(dirname "$1")" >> "$FAKE_TESSERACT_LOG"
wait
"""


def fake_tesseract(tmp_path: Path) -> tuple[Path, Path]:
    """A `tesseract` that answers --version and --list-langs, then hangs on a page with a child of its own."""
    folder = tmp_path / "bin"
    folder.mkdir()
    exe = folder / "tesseract"
    exe.write_text(FAKE_TESSERACT)
    exe.chmod(0o755)
    return folder, tmp_path / "tess.log"


def png(path: Path) -> Path:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("L", (40, 20), 255).save(path)
    return path


def wait_for_log(log: Path, within: float = 30.0) -> tuple[list[int], str]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if log.is_file() and log.read_text().strip():
            leader, child, folder = log.read_text().split()[:3]
            return [int(leader), int(child)], folder
        time.sleep(0.05)
    raise AssertionError("the fake tesseract never ran")


@pytest.mark.skipif(not Path("/proc").is_dir() or os.name != "posix", reason="needs /proc and process groups")
def test_a_sigterm_before_the_child_is_registered_still_kills_its_group(tmp_path, monkeypatch):
    """Regression (a loaded machine): SIGTERM came after Tesseract started but before `run_process` registered it,
    so the handler's `end_all` found nothing and the group outlived the worker. `end_all` now also kills this
    process's session-leading children while a start is under way; the handler is called at that instant here."""
    import subprocess as sp

    from ingestaudit import children

    pidfile = tmp_path / "pids"
    real_popen = sp.Popen
    seen = {}

    def popen_then_signal(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        deadline = time.monotonic() + 10
        while not pidfile.is_file() and time.monotonic() < deadline:  # the child is up, with a child of its own
            time.sleep(0.02)
        seen["pids"] = [int(p) for p in pidfile.read_text().split()]
        seen["registered"] = proc.pid in children._RUNNING
        children.end_all()  # what the SIGTERM handler does, before run_process registers the child
        return proc

    monkeypatch.setattr(children.subprocess, "Popen", popen_then_signal)
    done = children.run_process(["sh", "-c", f'sleep 300 & echo $$ $! > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; '
                                               "wait"], timeout=60)
    assert seen["registered"] is False
    assert done.returncode == -signal.SIGKILL
    assert wait_dead(seen["pids"]) == []
    assert children._STARTING == [0] and children._RUNNING == {}


@pytest.mark.skipif(not Path("/proc").is_dir() or os.name != "posix", reason="needs /proc and process groups")
def test_sigterm_during_ocr_kills_tesseract_and_removes_the_temp_folder(tmp_path):
    pytest.importorskip("pytesseract")
    folder, log = fake_tesseract(tmp_path)
    image = png(tmp_path / "docs/scan/page.png")
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        signal.signal(signal.SIGTERM, lambda *a: os._exit(1))  # what a pebble worker does on SIGTERM
        from ingestaudit.document import Document
        from ingestaudit.parsers.tesseract_parser import TesseractParser
        TesseractParser().parse(Document(doc_id="scan/page", doc_class="scan", path=Path({str(image)!r})))
        """)
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "FAKE_TESSERACT_LOG": str(log)}
    proc = subprocess.Popen([sys.executable, "-c", script], env=env)
    try:
        pids, temp = wait_for_log(log)
        assert Path(temp).is_dir() and Path(temp).name.startswith("ingestaudit-tess-")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
    assert wait_dead(pids) == [], "tesseract or its child outlived the worker"
    assert not Path(temp).exists()


@pytest.mark.skipif(not Path("/proc").is_dir() or os.name != "posix", reason="needs /proc and process groups")
def test_a_timed_out_tesseract_in_a_run_leaves_no_process_and_no_folder(tmp_path, monkeypatch):
    pytest.importorskip("pytesseract")
    folder, log = fake_tesseract(tmp_path)
    png(tmp_path / "c/docs/scan/page.png")
    c = corpus(tmp_path / "c", {}, {"scan/page.txt": "hello"}, toml="[run]\ndoc_timeout_s = 2\n")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_TESSERACT_LOG", str(log))
    r = cli("run", str(c), "-p", "tesseract", "--out", str(tmp_path / "o"))
    assert r.exit_code == 0, r.output
    failures = load_report(tmp_path / "o")["failures"]
    assert any("time budget" in f["message"] for f in failures)
    pids, temp = wait_for_log(log, within=1)
    assert wait_dead(pids) == [], "an orphan tesseract is left"
    assert not Path(temp).exists()


# --- 5. precomputed outputs ---------------------------------------------------------------------------------------

def test_precomputed_json_nested_600_deep_is_an_error_row_naming_the_file(tmp_path):
    c = corpus(tmp_path / "c", {"a/deep.txt": "x", "a/ok.txt": "x"}, {"a/deep.txt": "hello", "a/ok.txt": "hello"})
    outputs = tmp_path / "outputs/ext/a"
    outputs.mkdir(parents=True)
    (outputs / "deep.json").write_text('{"text": "hello", "settings": {"x": ' + "[" * 600 + "]" * 600 + "}}")
    (outputs / "ok.json").write_text('{"text": "hello"}')
    r = cli_process("run", str(c), "--outputs", str(tmp_path / "outputs"), "--out", str(tmp_path / "o"), timeout=120)
    assert r.returncode == 0, r.stderr
    rep = load_report(tmp_path / "o")
    messages = [f["message"] for f in rep["failures"] if f["item"] == "a/deep"]
    assert messages and all("worker process died" not in m for m in messages)
    assert any("deep.json" in m and "settings.x" in m and "nested more than 100" in m for m in messages), messages
    assert not any(f["item"] == "a/ok" for f in rep["failures"])
    assert any(m["item"] == "a/ok" and m["state"] == "ok" for m in measurements(rep))


def test_a_huge_integer_in_a_precomputed_json_names_the_file(tmp_path):
    from ingestaudit.parsers.base import ParserError
    from ingestaudit.parsers.precomputed import read_output_json

    path = tmp_path / "x.json"
    path.write_text('{"text": "hi", "pii": [{"start": %s, "end": 1, "type": "X"}]}' % ("1" * 5000))
    with pytest.raises(ParserError, match=r"x\.json: pii\[0\]\.start: integer of 5000 digits"):
        read_output_json(path)


# --- 6. acceptance (issue 15, part G1): the serious failures, each with its hostile input ---------------------------

def _every_output_text(out: Path) -> str:
    """Every byte of every file in ``out`` (decoded leniently) plus every string value of measurements.parquet
    (whose pages may be compressed, so its raw bytes alone prove nothing)."""
    import pyarrow.parquet as pq

    parts = [p.read_bytes().decode("utf-8", "replace") for p in sorted(out.iterdir()) if p.is_file()]
    table = pq.read_table(out / "measurements.parquet")
    parts += [str(v) for col in table.columns for v in col.to_pylist()]
    return "\n".join(parts)


def test_acceptance_no_byte_of_a_linked_file_in_any_output(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text(f"root:x:0:0\nAPI_KEY={SECRET}\n", encoding="utf-8")
    outside_q = tmp_path / "outside.jsonl"
    outside_q.write_text(json.dumps({"id": SECRET, "question": SECRET, "relevant": [{"doc": "a/good"}]}) + "\n")
    c = corpus(tmp_path / "c", {"a/good.txt": "x", "a/leak.txt": "x"}, {"a/good.txt": "hello world"})
    os.symlink(outside, c / "truth/a/leak.txt")
    os.symlink(outside, c / "docs/a/evil.txt")
    os.symlink(outside_q, c / "questions.jsonl")
    out = tmp_path / "o"
    r = cli_process("run", str(c), "-p", "reference", "--stage", "extraction", "--out", str(out), timeout=120)
    assert r.returncode == 0, r.stderr
    assert {"report.json", "report.md", "report.html", "measurements.parquet"} <= {p.name for p in out.iterdir()}
    assert SECRET not in _every_output_text(out) and SECRET not in r.stdout + r.stderr
    rep = load_report(out)
    named = {f["item"]: f["message"] for f in rep["failures"]}
    assert {"truth/a/leak.txt", "docs/a/evil.txt", "questions.jsonl"} <= set(named)
    assert all("outside the corpus" in named[k] for k in ("truth/a/leak.txt", "docs/a/evil.txt", "questions.jsonl"))
    assert any(m["item"] == "a/good" and m["metric"] == "extraction.cer" and m["state"] == "ok"
               for m in measurements(rep))


UNPICKLABLE_RUN = """
import sys
import ingestaudit.truth_pass as truth_pass
from ingestaudit.cli import app
from ingestaudit.truth import Truth

deep = {}
node = deep
for _ in range(100_000):
    node["children"] = [{}]
    node = node["children"][0]
real = truth_pass.load_truth

def with_deep(doc, root, limits=None):
    truth = real(doc, root, limits)
    return Truth(text=truth.text, sections=(deep,)) if doc.doc_id == "a/deep" else truth

truth_pass.load_truth = with_deep
sys.argv = ["ingestaudit", *sys.argv[1:]]
app()
"""


def test_acceptance_a_task_the_pool_cannot_send_is_an_error_row_and_the_run_ends(tmp_path):
    """Before: RecursionError while pickling in pebble's scheduler thread, and the run waited forever (the time budget
    never fired). Now the task is an error of its document; the child process's timeout only guards against a hang."""
    c = corpus(tmp_path / "c", {"a/deep.txt": "x", "a/ok.txt": "x"}, {"a/deep.txt": "hello", "a/ok.txt": "hello"},
               toml="[run]\ndoc_timeout_s = 5\n")
    out = tmp_path / "o"
    r = subprocess.run([sys.executable, "-c", UNPICKLABLE_RUN, "run", str(c), "-p", "reference", "--stage",
                        "extraction", "--executor", "process", "--workers", "2", "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rep = load_report(out)
    cer = {m["item"]: m["state"] for m in measurements(rep) if m["metric"] == "extraction.cer"}
    assert cer == {"a/deep": "error", "a/ok": "ok"}
    assert [f["message"].split(" (")[0] for f in rep["failures"]] == [
        "a/deep: the task cannot be sent to a worker process"]


def test_acceptance_20000_one_cell_tables_are_skipped_not_paired(tmp_path):
    """Before: a 20000 x 20000 TEDS matrix (17 GB in one worker) and a 522 MB report. Now the document's tables rows
    are skipped with the limit named, before any table is parsed or paired, and the other documents are audited."""
    table = "<table><tr><td>1</td></tr></table>"
    c = corpus(tmp_path / "c", {"a/many.txt": "x", "a/ok.txt": "x"},
               {"a/many.txt": "hello", "a/many.json": json.dumps({"tables": [table]}),
                "a/ok.txt": "hello", "a/ok.json": json.dumps({"tables": [table]})})
    outputs = tmp_path / "outputs/ext/a"
    outputs.mkdir(parents=True)
    (outputs / "many.json").write_text(json.dumps({"text": "hello", "tables": [table] * 20_000}))
    (outputs / "ok.json").write_text(json.dumps({"text": "hello", "tables": [table]}))
    out = tmp_path / "o"
    r = cli("run", str(c), "--outputs", str(tmp_path / "outputs"), "--stage", "tables", "--executor", "serial",
            "--out", str(out))
    assert r.exit_code == 0, r.output
    rep = load_report(out)
    many = [m for m in measurements(rep) if m["item"] == "a/many"]
    assert {m["state"] for m in many} == {"skipped"} and len(many) == 7  # 5 document rows + 2 for reference table 0
    assert {m["detail"]["reason"] for m in many} == {"20000 predicted tables, over limits.tables = 500: not compared"}
    ok = {m["metric"]: m["value"] for m in measurements(rep) if m["item"] == "a/ok" and m["label"] == ""}
    assert ok["tables.teds"] == 1.0 and ok["tables.f1"] == 1.0
    assert (out / "report.json").stat().st_size < 200_000
