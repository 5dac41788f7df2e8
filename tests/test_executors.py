"""Executors (issue 14): serial, process and dask give the same results and reports; a task over its budget or one
that kills its worker is a failure of that task only; the Dask cluster stays on 127.0.0.1 and is cleaned up."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.config import Config, ConfigError, load_config
from ingestaudit.executors import ExecutorError, TaskFailure, make_executor, timeout_message
from _rows import load_report, measurements

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo"
EXECUTORS = ("serial", "process", "dask")
LOCALHOST = pytest.mark.allow_hosts(["127.0.0.1"])  # the local Dask cluster: no other host, ever


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ingestaudit.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def write(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the interface, in process -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["serial", "process", pytest.param("dask", marks=LOCALHOST)])
def test_map_yields_every_index_and_times_out_only_the_slow_task(name):
    tasks = [0.0, 0.01, 30.0, 0.0]
    t0 = time.monotonic()
    with make_executor(name, 2, len(tasks)) as ex:
        out = dict(ex.map(time.sleep, tasks, 1.5))
    assert time.monotonic() - t0 < 25
    assert sorted(out) == [0, 1, 2, 3]
    assert out[2] == TaskFailure(timeout_message(1.5))
    assert all(out[i] is None for i in (0, 1, 3))


@pytest.mark.parametrize("name", ["process", pytest.param("dask", marks=LOCALHOST)])
def test_a_task_that_kills_its_worker_is_a_failure_of_that_task(name):
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Dask workers cannot import this test module
    try:
        with make_executor(name, 2, 3) as ex:
            out = dict(ex.map(_exit_or_echo, [7, -1, 7], 30))
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert isinstance(out[0], TaskFailure) and "worker process died" in out[0].message
    assert isinstance(out[2], TaskFailure)
    assert out[1] == -1


def _exit_or_echo(x: int) -> int:
    if x >= 0:
        os._exit(x)
    return x


def _batch_task(x: int) -> int:
    """Task 5 sleeps past the budget, task 9 kills its worker, task 13 raises; the others echo."""
    if x == 5:
        time.sleep(60)
    if x == 9:
        os._exit(3)
    if x == 13:
        raise ValueError("thirteen")
    return x


def _holds_the_lock(x: int) -> int:
    """Task 1 runs a catastrophic regular expression: C code that never releases the interpreter lock."""
    import re

    if x == 1:
        time.sleep(0.5)  # as a parser would do some work first: the batch's start report gets out
        re.match(r"(a+)+$", "a" * 40 + "b")
    return x


@pytest.mark.parametrize("name", ["process", pytest.param("dask", marks=LOCALHOST)])
def test_a_task_holding_the_interpreter_lock_past_its_budget_is_stopped(name):
    """Regression (Dask): the worker's event loop cannot run while a task holds the lock, so neither the watchdog's
    report, nor the request to end the worker, nor the fetch of task 0's result (finished on that one worker just
    before) was ever answered, and the run hung; the worker is now ended by signal after its batch's backstop (task
    count x budget + 1 s) and task 0 computed again. The process executor checks from the main process."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Dask workers cannot import this test module
    try:
        t0 = time.monotonic()
        with make_executor(name, 1, 4) as ex:  # one worker: task 0's result waits on the worker task 1 holds
            out = dict(ex.map(_holds_the_lock, [0, 1, 2, 3], 2.0))
        took = time.monotonic() - t0
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert out == {0: 0, 1: TaskFailure(timeout_message(2.0)), 2: 2, 3: 3}
    assert took < 60


@pytest.mark.parametrize("name", ["process", pytest.param("dask", marks=LOCALHOST)])
def test_batches_keep_each_tasks_budget_and_failure_its_own(name):
    """Tasks travel in batches of 8; a task over its budget, one that kills its worker and one that raises are each
    their own failure, with the messages of the other executors, and every other task of their batches is a result
    (those before the failure in its batch too: the batch is run again without it)."""
    import cloudpickle

    from ingestaudit.executors.base import batch_size
    from ingestaudit.executors.dask_executor import DaskExecutor
    from ingestaudit.executors.process import ProcessExecutor

    assert (batch_size(10, 2), batch_size(100, 2), batch_size(10_000, 2)) == (1, 3, 16)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Dask workers cannot import this test module
    try:
        with (DaskExecutor if name == "dask" else ProcessExecutor)(2, batch=8) as ex:
            t0 = time.monotonic()
            out = dict(ex.map(_batch_task, list(range(20)), 4.0))
            took = time.monotonic() - t0
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    # the sleeper is stopped at its own budget (4 s), not at its batch's backstop (8 x 4 s + 1 s = 33 s); the margin
    # leaves room for a loaded machine (two test processes on two cores took 16 s with a 2 s budget)
    assert took < 30
    assert sorted(out) == list(range(20))
    assert out[5] == TaskFailure(timeout_message(4.0))
    assert isinstance(out[9], TaskFailure) and "worker process died" in out[9].message
    assert out[13] == TaskFailure("ValueError: thirteen")
    assert {i: out[i] for i in out if i not in (5, 9, 13)} == {i: i for i in range(20) if i not in (5, 9, 13)}


@LOCALHOST
def test_dask_local_cluster_is_on_localhost_and_closed_on_exit():
    import psutil

    with make_executor("dask", 8, 2) as ex:  # capped by the number of tasks
        assert dict(ex.map(abs, [-1, -2], 30)) == {0: 1, 1: 2}
        client = ex._client
        workers = client.scheduler_info()["workers"]
        assert len(workers) == 2
        assert all(addr.startswith("tcp://127.0.0.1:") for addr in workers)
        assert client.scheduler.address.startswith("tcp://127.0.0.1:")
        pids = list(client.run(os.getpid).values())
    assert ex._client is None and ex._cluster is None
    deadline = time.monotonic() + 10
    while any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids):
        assert time.monotonic() < deadline, "dask workers still running after close"
        time.sleep(0.1)


def test_unknown_executor_and_misplaced_scheduler_are_errors():
    with pytest.raises(ExecutorError, match="unknown executor 'nope'"):
        make_executor("nope", 1, 1)
    with pytest.raises(ExecutorError, match="only the dask executor"):
        make_executor("process", 1, 1, scheduler="tcp://127.0.0.1:1")


def test_executor_settings_are_config_but_not_for_an_untrusted_corpus(tmp_path):
    assert Config().run.executor == "process" and Config().run.scheduler is None
    toml = tmp_path / "c.toml"
    toml.write_text('[run]\nexecutor = "dask"\nscheduler = "tcp://127.0.0.1:8786"\n')
    assert load_config(toml, trusted=True).run.executor == "dask"
    with pytest.raises(ConfigError, match="run.scheduler"):
        load_config(toml)
    toml.write_text('[run]\nexecutor = "spark"\n')
    with pytest.raises(ConfigError, match="run.executor"):
        load_config(toml)
    # regression: a corpus could switch the memory limit off (serial) or start a worker per document
    toml.write_text('[run]\nexecutor = "serial"\n')
    assert load_config(toml, trusted=True).run.executor == "serial"
    with pytest.raises(ConfigError, match="run.executor"):
        load_config(toml)
    toml.write_text(f'[run]\nworkers = {(os.cpu_count() or 1) + 1}\n')
    with pytest.raises(ConfigError, match="run.workers"):
        load_config(toml)
    toml.write_text('[report]\nbootstrap_resamples = 100000000\n')  # a run that never ends
    with pytest.raises(ConfigError, match="bootstrap_resamples"):
        load_config(toml, trusted=True)


def test_cli_rejects_unknown_executor_and_scheduler_without_dask(tmp_path):
    r = CliRunner().invoke(app, ["run", str(DEMO), "--executor", "ray", "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "unknown executor" in r.output
    r = CliRunner().invoke(app, ["run", str(DEMO), "--executor", "serial", "--scheduler", "tcp://127.0.0.1:1",
                                 "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "only the dask executor" in r.output
    assert not (tmp_path / "o").exists()


# --- the CLI end to end ---------------------------------------------------------------------------------------------

EXECUTORS_COMPARED = (("serial", "1"), ("process", "2"), ("dask", "2"))


def _reports(corpus: Path, tmp_path: Path, *extra: str, configs=EXECUTORS_COMPARED) -> dict[str, bytes]:
    """report.json of the same run on each executor (in this process: the Dask workers are processes of their own);
    the measurement stores and report.md are byte-identical too (asserted here; report.html may plot timings)."""
    out = {}
    stores = {}
    markdown = {}
    for name, workers in configs:
        key = name if name != "process" or workers == "2" else f"{name}{workers}"
        r = CliRunner().invoke(app, ["run", str(corpus), *extra, "--executor", name, "--workers", workers, "--out",
                                     str(tmp_path / key)])
        assert r.exit_code == 0, (name, r.output)
        out[key] = (tmp_path / key / "report.json").read_bytes()
        stores[key] = (tmp_path / key / "measurements.parquet").read_bytes()
        markdown[key] = (tmp_path / key / "report.md").read_bytes()
    first = next(iter(stores.values()))
    assert all(data == first for data in stores.values()), "measurements.parquet differs between executors"
    assert len(set(markdown.values())) == 1, "report.md differs between executors"
    return out


@pytest.mark.slow
@LOCALHOST
def test_reports_are_byte_identical_across_executors_with_the_chain_stages(tmp_path):
    """Every default stage of the demo (its questions turn chunking, retrieval, the waterfall and the ANN audit on)
    for two pipelines (so the paired tests run too), embeddings with a fixed torch thread count
    (`ingestaudit.runner.EMBED_THREADS`): the same report.json and measurements.parquet bytes on serial (one
    worker, in this process), process with 2 workers and dask with 2; the report's config names no executor
    setting."""
    reports = _reports(DEMO, tmp_path, "--parser", "pymupdf", "--parser", "reference")
    assert reports["serial"] == reports["process"] == reports["dask"]
    report = json.loads(reports["serial"])
    assert not {"workers", "executor", "scheduler", "worker_memory_mb"} & set(report["config"]["run"])
    assert report["paired_tests"]
    rows = measurements(tmp_path / "serial")
    assert {r["stage"] for r in rows} >= {"extraction", "normalization", "layout", "chunking", "retrieval"}
    assert any(r["stage"] == "retrieval" and r["state"] == "ok" for r in rows)  # real numbers were compared


@pytest.fixture
def broken_corpus(tmp_path):
    import pymupdf

    root = tmp_path / "corpus"
    good = pymupdf.open()
    good.new_page().insert_text((72, 72), "Hello world")
    write(root / "docs/pdf/good.pdf", good.tobytes())
    write(root / "docs/pdf/zero.pdf", b"")
    write(root / "docs/pdf/corrupt.pdf", b"%PDF-1.7\n garbage without objects")
    write(root / "docs/misc/unknown.xyz", b"\x00\x01")
    for name in ("good", "zero", "corrupt"):
        write(root / f"truth/pdf/{name}.txt", "Hello world")
    write(root / "truth/misc/unknown.txt", "anything")
    return root


@pytest.mark.slow
@LOCALHOST
def test_reports_are_byte_identical_across_executors_with_broken_files(broken_corpus, tmp_path):
    reports = _reports(broken_corpus, tmp_path / "o", "--parser", "pymupdf")
    assert reports["process"] == reports["serial"] == reports["dask"]
    states = {m["item"]: m["state"] for m in measurements(tmp_path / "o" / "serial") if m["metric"] == "extraction.cer"}
    assert states == {"pdf/good": "ok", "pdf/zero": "error", "pdf/corrupt": "error", "misc/unknown": "error"}


SLEEPY = '''
import time
from ingestaudit.model import ParsedDocument
from ingestaudit.parsers.base import Parser


class SleepyParser(Parser):
    """Sleeps far past any budget on documents whose name contains 'hang'."""

    name = "sleepy"
    extensions = frozenset({".txt"})

    def parse(self, document):
        if "hang" in document.path.name:
            time.sleep(120)
        return ParsedDocument(text=document.path.read_text(), parser=self.name)

    def version(self):
        return "0"
'''


@pytest.mark.slow
@LOCALHOST
def test_a_task_over_its_budget_is_an_error_row_on_every_executor(tmp_path, monkeypatch):
    plugins = tmp_path / "plugins"
    write(plugins / "sleepy_parser.py", SLEEPY)
    root = tmp_path / "corpus"
    for name in ("fine", "hang", "also_fine"):
        write(root / f"docs/t/{name}.txt", "abc")
        write(root / f"truth/t/{name}.txt", "abc")
    write(root / "ingestaudit.toml", "[run]\ndoc_timeout_s = 2\n")
    monkeypatch.syspath_prepend(str(plugins))  # this process and the pool workers (the fork server passes sys.path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")]))  # Dask's
    t0 = time.monotonic()
    reports = _reports(root, tmp_path / "o", "--parser", "sleepy_parser:SleepyParser")
    assert time.monotonic() - t0 < 60
    assert reports["process"] == reports["serial"] == reports["dask"]
    report = json.loads(reports["serial"])
    cer = {m["item"]: m for m in measurements(tmp_path / "o" / "serial") if m["metric"] == "extraction.cer"}
    assert cer["t/fine"]["state"] == cer["t/also_fine"]["state"] == "ok"
    assert cer["t/hang"]["state"] == "error"
    assert "time budget of 2 s" in cer["t/hang"]["detail"]["reason"]
    assert [(f["item"], f["stage"]) for f in report["failures"]] == [("t/hang", "parse")]


@LOCALHOST
def test_an_unreachable_scheduler_exits_2_within_seconds(tmp_path):
    addr = f"tcp://127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    r = cli("run", str(DEMO), "--parser", "pymupdf", "--stage", "extraction", "--scheduler", addr,
            "--out", str(tmp_path / "o"), timeout=60)
    assert r.returncode == 2, r.stderr
    assert time.monotonic() - t0 < 20
    assert addr in r.stderr and "did not answer" in r.stderr
    assert not (tmp_path / "o" / "report.json").exists()


def test_process_workers_embed_after_torch_ran_in_this_process(tmp_path: Path):
    """Regression: a forked worker hung forever in torch when this process had already run torch (its OpenMP pool
    is not copied by fork); a run after an earlier one in the same interpreter timed every document out."""
    import torch

    torch.ones(512, 512) @ torch.ones(512, 512)  # start this process's intra-op threads, as a first run does
    root = tmp_path / "corpus"
    write(root / "docs" / "c" / "a.txt", "x\n")
    write(root / "truth" / "c" / "a.txt", "The pump runs at forty litres per hour. It stops at night.\n")
    cfg = tmp_path / "cfg.toml"
    cfg.write_text("[run]\ndoc_timeout_s = 60\n")
    res = CliRunner().invoke(app, ["run", str(root), "-p", "reference", "--stage", "chunking", "--config", str(cfg),
                                   "--out", str(tmp_path / "r"), "--executor", "process"])
    assert res.exit_code == 0, res.output
    rows = measurements(tmp_path / "r")
    att = [r for r in rows if r["metric"] == "chunking.attribution"]
    assert [(r["state"], r["value"]) for r in att] == [("ok", 1.0)]


# --- issue 14 sketch A and issue 15: start first, a pool that cannot start, caps, memory, a user's cluster ---------

@LOCALHOST
def test_a_dead_scheduler_is_an_error_before_any_truth_file_is_read(tmp_path, monkeypatch):
    import ingestaudit.runner as runner

    def never(*a, **k):
        raise AssertionError("truth files were read before the scheduler was asked")

    monkeypatch.setattr(runner, "load_truths", never)
    addr = f"tcp://127.0.0.1:{free_port()}"
    r = CliRunner().invoke(app, ["run", str(DEMO), "-p", "pymupdf", "--stage", "extraction", "--scheduler", addr,
                                 "--out", str(tmp_path / "o")])
    assert r.exit_code == 2, r.output
    assert "did not answer" in " ".join(r.output.split())
    assert not (tmp_path / "o").exists()


NO_MAIN_GUARD = """
import sys
from ingestaudit.cli import main

sys.argv = ["ingestaudit", "run", {corpus!r}, "-p", "reference", "--stage", "extraction", "--executor", "process",
            "--workers", "2", "--out", {out!r}]
main()  # no `if __name__ == "__main__":`: every forkserver worker runs this script again as it starts
"""


def test_a_script_without_a_main_guard_is_one_executor_error_not_n_error_rows(tmp_path):
    root = tmp_path / "corpus"
    for name in ("a", "b", "c"):
        write(root / f"docs/t/{name}.txt", "abc")
        write(root / f"truth/t/{name}.txt", "abc")
    script = tmp_path / "audit.py"
    script.write_text(NO_MAIN_GUARD.format(corpus=str(root), out=str(tmp_path / "o")))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 2, r.stderr[-3000:]
    said = " ".join(r.stderr.split())
    assert "error: the process pool's workers all ended before running any task" in said
    assert 'if __name__ == "__main__":' in said
    assert not (tmp_path / "o" / "report.json").exists()


def _pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def test_the_process_executor_starts_no_more_workers_than_tasks():
    with make_executor("process", 64, 3) as ex:
        assert ex.workers == 3
        pids = {pid for _, pid in ex.map(_pid_after, [0.5, 0.5, 0.5], 60)}
    assert 1 <= len(pids) <= 3
    assert make_executor("serial", 8, 2).workers == 1


def _env_value(name: str) -> str | None:
    return os.environ.get(name)


def test_process_workers_see_the_environment_as_it_is_when_the_pool_starts(monkeypatch):
    """Regression (forkserver): the fork server keeps the environment of its start; the workers of a later pool
    must see this process's environment of now (a PATH or a variable set since)."""
    with make_executor("process", 1, 1) as ex:
        assert dict(ex.map(_env_value, ["INGESTAUDIT_TEST_LATE"], 60)) == {0: None}
    monkeypatch.setenv("INGESTAUDIT_TEST_LATE", "set after the first pool")
    with make_executor("process", 1, 1) as ex:
        assert dict(ex.map(_env_value, ["INGESTAUDIT_TEST_LATE"], 60)) == {0: "set after the first pool"}


def test_the_default_worker_memory_limit_is_half_the_machine_over_the_workers(monkeypatch):
    import ingestaudit.executors.base as base

    monkeypatch.setattr(base, "total_memory_mb", lambda: 32_000)
    assert base.default_worker_memory_mb(2) == 8_000  # 0.5 x 32000 / 2
    assert base.default_worker_memory_mb(16) == base.MIN_WORKER_MEMORY_MB == 4096  # floor: 1000 < 4096
    monkeypatch.setattr(base, "total_memory_mb", lambda: None)
    assert base.default_worker_memory_mb(2) is None
    assert make_executor("process", 2, 2, memory_mb=0).memory_mb is None  # 0: no limit
    assert make_executor("process", 2, 2, memory_mb=1500).memory_mb == 1500
    assert make_executor("dask", 2, 2, scheduler="tcp://127.0.0.1:1", memory_mb=1500).memory_mb is None  # shared
    msg = base.raised_message(MemoryError("Unable to allocate 8.00 GiB"), 1500)
    assert msg == ("MemoryError: Unable to allocate 8.00 GiB (out of memory: the worker memory limit is 1500 MB of "
                   "address space ([run] worker_memory_mb))")


def test_a_corpus_toml_may_not_set_the_memory_limit(tmp_path):
    toml = tmp_path / "ingestaudit.toml"
    toml.write_text("[run]\nworker_memory_mb = 0\n")
    assert load_config(toml, trusted=True).run.worker_memory_mb == 0
    with pytest.raises(ConfigError, match="run.worker_memory_mb"):
        load_config(toml)
    toml.write_text("[run]\nworker_memory_mb = -5\n")
    with pytest.raises(ConfigError, match="worker_memory_mb"):
        load_config(toml, trusted=True)


HOG = '''
import numpy as np
from ingestaudit.model import ParsedDocument
from ingestaudit.parsers.base import Parser


class HogParser(Parser):
    """Asks for 64 GiB on documents whose name contains 'hog' (reserved, never touched: harmless without a limit,
    where the test then fails); parses the others."""

    name = "hog"
    extensions = frozenset({".txt"})

    def parse(self, document):
        if "hog" in document.path.name:
            big = np.empty(64 << 30, dtype=np.uint8)
            return ParsedDocument(text=f"allocated {big.nbytes} bytes", parser=self.name)
        return ParsedDocument(text=document.path.read_text(), parser=self.name)

    def version(self):
        return "0"
'''


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["process", pytest.param("dask", marks=LOCALHOST)])
def test_an_item_over_the_worker_memory_limit_is_an_error_row_naming_it(tmp_path, monkeypatch, executor):
    plugins = tmp_path / "plugins"
    write(plugins / "hog_parser.py", HOG)
    root = tmp_path / "corpus"
    for name in ("fine", "hog", "also_fine"):
        write(root / f"docs/t/{name}.txt", "abc")
        write(root / f"truth/t/{name}.txt", "abc")
    cfg = tmp_path / "cfg.toml"
    cfg.write_text("[run]\nworker_memory_mb = 3000\ndoc_timeout_s = 120\n")
    monkeypatch.syspath_prepend(str(plugins))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")]))  # Dask's
    r = CliRunner().invoke(app, ["run", str(root), "-p", "hog_parser:HogParser", "--stage", "extraction",
                                 "--config", str(cfg),
                                 "--executor", executor, "--workers", "2", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    report = load_report(tmp_path / "o")
    cer = {m["item"]: m for m in measurements(report) if m["metric"] == "extraction.cer"}
    assert cer["t/fine"]["state"] == cer["t/also_fine"]["state"] == "ok"
    assert cer["t/hog"]["state"] == "error"
    reason = cer["t/hog"]["detail"]["reason"]
    assert reason.startswith("MemoryError: Unable to allocate 64.0 GiB")
    assert "the worker memory limit is 3000 MB" in reason
    assert [(f["item"], f["stage"]) for f in report["failures"]] == [("t/hog", "parse")]
    assert "worker_memory_mb" not in report["config"]["run"]  # like workers: never part of the report's config


def _sleep_or_echo(x: float) -> float:
    time.sleep(x)
    return x


@LOCALHOST
def test_a_users_cluster_keeps_its_workers_when_a_task_runs_over_its_budget():
    """On a cluster the user gave (--scheduler), a task over its budget is cancelled and reported as timed out; the
    shared worker is not ended (its thread finishes the task by itself) and the other tasks run."""
    import cloudpickle
    from distributed import LocalCluster

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the cluster's workers cannot import this module
    cluster = LocalCluster(host="127.0.0.1", dashboard_address=None, n_workers=1, threads_per_worker=2,
                           processes=True)
    try:
        with make_executor("dask", 2, 4, scheduler=cluster.scheduler_address) as ex:
            ex.start()
            before = set(ex._client.run(os.getpid).values())
            out = dict(ex.map(_sleep_or_echo, [6.0, 0.0, 0.1, 0.2], 1.5))
            after = set(ex._client.run(os.getpid).values())
        assert out[0] == TaskFailure(timeout_message(1.5))
        assert [out[i] for i in (1, 2, 3)] == [0.0, 0.1, 0.2]
        assert before == after, "the user's worker was ended"
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
        cluster.close()


@pytest.mark.slow
@LOCALHOST
def test_a_run_on_a_live_scheduler_given_by_address_matches_serial(tmp_path):
    from distributed import LocalCluster

    cluster = LocalCluster(host="127.0.0.1", dashboard_address=None, n_workers=1, threads_per_worker=2,
                           processes=True)
    try:
        outs = {}
        runs = (("serial", ["--executor", "serial"]), ("remote", ["--scheduler", cluster.scheduler_address]))
        for name, extra in runs:
            r = CliRunner().invoke(app, ["run", str(DEMO), "--parser", "pymupdf", "--stage", "extraction",
                                         "--workers", "2", *extra, "--out", str(tmp_path / name)])
            assert r.exit_code == 0, (name, r.output)
            outs[name] = (tmp_path / name / "report.json").read_bytes()
        assert outs["remote"] == outs["serial"]
    finally:
        cluster.close()


@pytest.mark.slow
@LOCALHOST
@pytest.mark.skipif(not Path("/proc").is_dir() or os.name != "posix", reason="needs /proc and process groups")
def test_a_timed_out_tesseract_on_the_local_dask_cluster_leaves_no_process_and_no_folder(tmp_path, monkeypatch):
    """The over-budget local worker is ended with os._exit, which skips every finally: it kills its Tesseract
    process groups and removes their temporary folders first."""
    pytest.importorskip("pytesseract")
    from test_hardening import corpus, fake_tesseract, png, wait_dead, wait_for_log

    folder, log = fake_tesseract(tmp_path)
    png(tmp_path / "c/docs/scan/page.png")
    c = corpus(tmp_path / "c", {}, {"scan/page.txt": "hello"}, toml="[run]\ndoc_timeout_s = 3\n")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_TESSERACT_LOG", str(log))
    r = CliRunner().invoke(app, ["run", str(c), "-p", "tesseract", "--stage", "extraction", "--executor", "dask",
                                 "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    failures = load_report(tmp_path / "o")["failures"]
    assert any("time budget of 3 s" in f["message"] for f in failures)
    pids, temp = wait_for_log(log, within=1)
    assert wait_dead(pids) == [], "an orphan tesseract is left"
    assert not Path(temp).exists()


def test_a_folder_named_ingestaudit_where_the_command_runs_does_not_shadow_the_workers_package(tmp_path):
    """Regression (new-user trial): run from the folder holding a clone (``./ingestaudit/`` with no
    ``__init__.py``), the fork server, started as ``python -c`` with the current folder first on its path, imported
    that folder as an empty namespace package and every process worker failed to start (exit 2)."""
    import shutil

    from typer.testing import CliRunner

    from ingestaudit.cli import app

    exe = shutil.which("ingestaudit")
    if exe is None:
        pytest.skip("the ingestaudit console script is not on PATH")
    (tmp_path / "ingestaudit").mkdir()  # what `git clone .../ingestaudit` leaves beside the user
    assert CliRunner().invoke(app, ["init", str(tmp_path / "c")]).exit_code == 0
    done = subprocess.run([exe, "run", "c", "--stage", "extraction", "-p", "reference", "--executor", "process",
                           "--out", "out"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    cer = {r["doc_class"]: (r["micro"], r["states"]["ok"]) for r in report["summary"] if r["metric"] == "extraction.cer"}
    assert cer == {"reports": (0.0, 1), "__all__": (0.0, 1)} and report["failures"] == []  # the reference reads itself


def test_a_temporary_folder_too_long_for_the_fork_servers_socket_is_named(tmp_path):
    """Regression: a long TMPDIR (a pytest-xdist tmp_path was enough) made the fork server's Unix socket path too
    long (at most 107 bytes); the run stopped with "cannot write <its work folder> (AF_UNIX path too long)", which
    named the wrong folder. It is now exit 2 naming TMPDIR and what to do."""
    from typer.testing import CliRunner

    from ingestaudit.cli import app

    long_tmp = tmp_path / ("t" * 120)
    long_tmp.mkdir()
    assert CliRunner().invoke(app, ["init", str(tmp_path / "c")]).exit_code == 0
    done = subprocess.run([sys.executable, "-m", "ingestaudit", "run", str(tmp_path / "c"), "--stage", "extraction",
                           "-p", "reference", "--executor", "process", "--out", str(tmp_path / "out")],
                          env={**os.environ, "TMPDIR": str(long_tmp)}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert f"its socket is made in the temporary folder {long_tmp} (TMPDIR)" in said
    assert "set TMPDIR to a shorter folder, or use --executor serial" in said
    assert not (tmp_path / "out").exists()
