"""One broken document never stops the run: corrupt, encrypted, empty, unsupported and hanging inputs."""

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.model import ParsedDocument
from ingestaudit.parsers.base import Parser
from _rows import load_report, measurements


class SlowParser(Parser):
    """Hangs on documents whose name contains 'hang'; returns the file's text otherwise."""

    name = "slow"
    extensions = frozenset({".txt"})

    def parse(self, document):
        if "hang" in document.path.name:
            time.sleep(60)
        return ParsedDocument(text=document.path.read_text(), parser=self.name)

    def version(self):
        return "0"


def write(path: Path, data: bytes | str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())


@pytest.fixture
def broken_corpus(tmp_path):
    import pymupdf

    root = tmp_path / "corpus"
    good = pymupdf.open()
    good.new_page().insert_text((72, 72), "Hello world")
    good_bytes = good.tobytes()
    write(root / "docs/pdf/good.pdf", good_bytes)
    write(root / "docs/pdf/zero.pdf", b"")
    write(root / "docs/pdf/corrupt.pdf", b"%PDF-1.7\n garbage without objects")
    enc = pymupdf.open()
    enc.new_page().insert_text((72, 72), "Secret")
    write(root / "docs/pdf/encrypted.pdf",
          enc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="u", owner_pw="o"))
    write(root / "docs/misc/unknown.xyz", b"\x00\x01")
    for name in ("good", "zero", "corrupt", "encrypted"):
        write(root / f"truth/pdf/{name}.txt", "Hello world")
    write(root / "truth/misc/unknown.txt", "anything")
    return root


def test_broken_files_become_rows_and_the_run_goes_on(broken_corpus, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(broken_corpus), "--parser", "pymupdf", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = load_report(out)
    cer = {m["item"]: m for m in measurements(report) if m["metric"] == "extraction.cer"}
    assert cer["pdf/good"]["state"] == "ok" and cer["pdf/good"]["value"] == 0.0
    for doc in ("pdf/zero", "pdf/corrupt", "pdf/encrypted"):
        assert cer[doc]["state"] == "error", doc
        assert cer[doc]["value"] is None
    assert "encrypt" in cer["pdf/encrypted"]["detail"]["reason"].lower()
    assert cer["misc/unknown"]["state"] == "error"  # no parser of the run reads .xyz: an unsupported file
    assert "unsupported file type .xyz" in cer["misc/unknown"]["detail"]["reason"]
    failed = {(f["item"], f["stage"]) for f in report["failures"]}
    assert {("pdf/zero", "parse"), ("pdf/corrupt", "parse"), ("pdf/encrypted", "parse"),
            ("misc/unknown", "parse")} <= failed


def test_strict_exits_3_when_a_document_failed(broken_corpus, tmp_path):
    result = CliRunner().invoke(app, ["run", str(broken_corpus), "--parser", "pymupdf", "--strict",
                                      "--out", str(tmp_path / "o")])
    assert result.exit_code == 3


def test_a_hang_becomes_an_error_row_within_the_budget(tmp_path):
    root = tmp_path / "corpus"
    write(root / "docs/t/fine.txt", "abc")
    write(root / "docs/t/hang.txt", "abc")
    write(root / "truth/t/fine.txt", "abc")
    write(root / "truth/t/hang.txt", "abc")
    write(root / "ingestaudit.toml", "[run]\ndoc_timeout_s = 2\n")
    t0 = time.monotonic()
    result = CliRunner().invoke(app, ["run", str(root), "--parser", f"{__name__}:SlowParser",
                                      "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert time.monotonic() - t0 < 40
    report = load_report(tmp_path / "o")
    cer = {m["item"]: m for m in measurements(report) if m["metric"] == "extraction.cer"}
    assert cer["t/fine"]["state"] == "ok"
    assert cer["t/hang"]["state"] == "error"
    assert "time budget of 2 s" in cer["t/hang"]["detail"]["reason"]


def test_unknown_parser_is_a_usage_error(tmp_path, broken_corpus):
    result = CliRunner().invoke(app, ["run", str(broken_corpus), "--parser", "nope", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "unknown parser 'nope'" in result.output
    assert not (tmp_path / "o").exists()
