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


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """The command in a child process: a hang is a failed test (TimeoutExpired), not a stalled suite."""
    return subprocess.run([sys.executable, "-m", "ingestaudit.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ))


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
@pytest.mark.parametrize("answer", [b"", b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot here\n"],
                         ids=["silent", "http"])
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
    assert ("did not answer within 5 s" in err) if not answer else ("handshake failed" in err
                                                                      or "did not answer within 5 s" in err)
    assert "Traceback" not in r.stderr and not (tmp_path / "out" / "report.json").exists()
