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
