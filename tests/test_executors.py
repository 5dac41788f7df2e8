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


def test_cli_rejects_unknown_executor_and_scheduler_without_dask(tmp_path):
    r = CliRunner().invoke(app, ["run", str(DEMO), "--executor", "ray", "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "unknown executor" in r.output
    r = CliRunner().invoke(app, ["run", str(DEMO), "--executor", "serial", "--scheduler", "tcp://127.0.0.1:1",
                                 "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "only the dask executor" in r.output
    assert not (tmp_path / "o").exists()


# --- the CLI end to end ---------------------------------------------------------------------------------------------

def _reports(corpus: Path, tmp_path: Path, *extra: str) -> dict[str, bytes]:
    """report.json of the same run on each executor (in this process: the Dask workers are processes of their own)."""
    out = {}
    for name, workers in (("serial", "1"), ("process", "2"), ("dask", "2")):
        r = CliRunner().invoke(app, ["run", str(corpus), *extra, "--executor", name, "--workers", workers, "--out",
                                     str(tmp_path / name)])
        assert r.exit_code == 0, (name, r.output)
        out[name] = (tmp_path / name / "report.json").read_bytes()
    return out


@pytest.mark.slow
@LOCALHOST
def test_reports_are_byte_identical_across_executors_on_the_demo(tmp_path):
    reports = _reports(DEMO, tmp_path, "--parser", "pymupdf", "--stage", "extraction", "--stage", "normalization")
    assert reports["process"] == reports["serial"]
    assert reports["dask"] == reports["serial"]
    config = json.loads(reports["serial"])["config"]["run"]
    assert not {"workers", "executor", "scheduler"} & set(config)


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
    report = json.loads(reports["serial"])
    states = {m["item"]: m["state"] for m in report["measurements"] if m["metric"] == "extraction.cer"}
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
    monkeypatch.syspath_prepend(str(plugins))  # this process and the forked pool workers
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")]))  # Dask's
    t0 = time.monotonic()
    reports = _reports(root, tmp_path / "o", "--parser", "sleepy_parser:SleepyParser")
    assert time.monotonic() - t0 < 60
    assert reports["process"] == reports["serial"] == reports["dask"]
    report = json.loads(reports["serial"])
    cer = {m["item"]: m for m in report["measurements"] if m["metric"] == "extraction.cer"}
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
