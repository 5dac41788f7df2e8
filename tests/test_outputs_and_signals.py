"""Outputs, interrupts and escaping (issue 15, scope 4 and 5; issue 14, "Bad input"): where a report may be written,
that its files are replaced all together or not at all, that Ctrl-C and SIGTERM stop a run at once and leave no
process, folder or half-written report behind, and that no view prints markup or a control character from a name."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.io import (STAGING_PREFIX, OutputError, StagedOutput, check_output_file, check_output_folder,
                            folder_ids, inside)
from ingestaudit.report.escape import md_code, md_text, safe_for_terminal, terminal_text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "report"))  # _reportkit: hand-built reports

LOCALHOST = pytest.mark.allow_hosts(["127.0.0.1"])
POSIX_PROC = pytest.mark.skipif(not Path("/proc").is_dir() or os.name != "posix", reason="needs /proc and signals")


def cli(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


def said(result) -> str:
    """The command's output with its line wrapping undone."""
    return " ".join(result.output.split())


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def small_corpus(root: Path, names: tuple[str, ...] = ("a", "b")) -> Path:
    for name in names:
        write(root / f"docs/c/{name}.txt", f"hello {name}\n")
        write(root / f"truth/c/{name}.txt", f"hello {name}\n")
    return root


MARKER_PARSER = '''
import os
from ingestaudit.model import ParsedDocument
from ingestaudit.parsers.base import Parser


class MarkerParser(Parser):
    """Appends each document it parses to $MARKER_LOG: a test sees whether any document was audited."""

    name = "marker"
    extensions = frozenset({".txt"})

    def parse(self, document):
        with open(os.environ["MARKER_LOG"], "a") as fh:
            fh.write(document.doc_id + "\\n")
        return ParsedDocument(text=document.path.read_text(), parser=self.name)

    def version(self):
        return "0"
'''


@pytest.fixture
def marker(tmp_path, monkeypatch) -> Path:
    """A parser plug-in ``marker_parser:MarkerParser`` (serial runs in this process) and the log it writes."""
    write(tmp_path / "plugins/marker_parser.py", MARKER_PARSER)
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    log = tmp_path / "parsed.log"
    monkeypatch.setenv("MARKER_LOG", str(log))
    return log


def run_serial(corpus: Path, out: Path, *extra: str):
    return cli("run", corpus, "-p", "marker_parser:MarkerParser", "--stage", "extraction", "--executor", "serial",
               "--out", out, *extra)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# --- where outputs may go ---------------------------------------------------------------------------------------

def test_an_out_path_below_a_file_exits_2_before_any_document_is_audited(tmp_path, marker):
    c = small_corpus(tmp_path / "c")
    write(tmp_path / "afile", "x")
    r = run_serial(c, tmp_path / "afile" / "sub")
    assert r.exit_code == 2, r.output
    assert "--out" in said(r) and "afile" in said(r) and "not a folder" in said(r)
    assert not marker.exists(), "a document was audited before the output folder was checked"


def test_an_out_folder_inside_the_corpus_by_path_is_refused(tmp_path, marker):
    c = small_corpus(tmp_path / "c")
    r = run_serial(c, c / "docs" / "rep")
    assert r.exit_code == 2 and "inside the corpus" in said(r)
    assert not (c / "docs" / "rep").exists() and not marker.exists()


def test_inside_compares_device_and_inode_of_every_ancestor(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "docs" / "a").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "deep").mkdir(parents=True)
    ids = folder_ids(corpus)
    st = (corpus / "docs" / "a").stat()
    assert (st.st_dev, st.st_ino) in ids and len(ids) == 3  # corpus, docs, docs/a
    assert not inside(elsewhere / "deep" / "rep", corpus, ids)
    # what a bind mount of docs/a at `elsewhere` looks like: the same (device, inode) under another path
    st = elsewhere.stat()
    assert inside(elsewhere / "deep" / "rep" / "x", corpus, ids | {(st.st_dev, st.st_ino)})
    assert inside(corpus / "docs" / "new" / "rep", corpus, ids)


def _mount(*args: str) -> bool:
    return os.geteuid() == 0 and subprocess.run(["mount", *args], capture_output=True).returncode == 0


@pytest.fixture
def mounts():
    """Mount points made by a test, unmounted afterwards; a test skips when it cannot mount (not root)."""
    made: list[Path] = []
    yield made
    for point in reversed(made):
        subprocess.run(["umount", "-l", str(point)], capture_output=True)


@pytest.mark.parametrize("what", ["corpus", "docs/a"])
def test_an_out_folder_through_a_bind_mount_of_the_corpus_is_refused(tmp_path, marker, mounts, what):
    c = small_corpus(tmp_path / "c", ("a",))
    (c / "docs" / "a").mkdir()
    bind = tmp_path / "bind"
    bind.mkdir()
    if not _mount("--bind", str(c if what == "corpus" else c / "docs" / "a"), str(bind)):
        pytest.skip("cannot bind-mount here (needs root)")
    mounts.append(bind)
    r = run_serial(c, bind / "rep")
    assert r.exit_code == 2, r.output
    assert "inside the corpus" in said(r) and "mount" in said(r)
    assert not marker.exists()
    assert sorted(p.name for p in (c / "docs").iterdir()) == ["a", "c"]  # nothing written into the corpus


def test_a_read_only_out_folder_exits_2_before_any_document_is_audited(tmp_path, marker, mounts):
    c = small_corpus(tmp_path / "c")
    ro = tmp_path / "ro"
    ro.mkdir()
    if os.geteuid() != 0:
        ro.chmod(0o500)
    elif _mount("-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(ro)):
        mounts.append(ro)
    else:
        pytest.skip("root ignores permissions and cannot mount a read-only file system here")
    r = run_serial(c, ro / "rep")
    assert r.exit_code == 2, r.output
    assert "cannot write there" in said(r) and str(ro) in said(r)
    assert not marker.exists()


def test_check_output_file_refuses_folders_the_input_and_the_corpus(tmp_path):
    corpus = small_corpus(tmp_path / "c")
    with pytest.raises(OutputError, match="is a folder"):
        check_output_file(tmp_path, flag="--html")
    with pytest.raises(OutputError, match="inside the corpus"):
        check_output_file(corpus / "docs" / "c" / "evil.html", corpus_root=corpus, flag="--html")
    src = write(tmp_path / "r.json", "{}")
    with pytest.raises(OutputError, match="the file being read"):
        check_output_file(src, flag="--md", never=[src])
    check_output_file(tmp_path / "new" / "view.html", corpus_root=corpus, flag="--html")  # fine: nothing raised
    check_output_folder(tmp_path / "new" / "out", corpus_root=corpus)
    assert not (tmp_path / "new").exists(), "a check created a folder"


def test_report_refuses_to_write_into_its_corpus_and_names_a_folder_target(tmp_path, marker):
    c = small_corpus(tmp_path / "c")
    out = tmp_path / "out"
    assert run_serial(c, out).exit_code == 0
    evil = c / "docs" / "c" / "evil.html"
    r = cli("report", out / "report.json", "--html", evil)
    assert r.exit_code == 2 and "inside the corpus" in said(r)
    assert not evil.exists()
    r = cli("report", out / "report.json", "--md", c / "truth" / "c" / "x.md")
    assert r.exit_code == 2 and not (c / "truth" / "c" / "x.md").exists()
    r = cli("report", out / "report.json", "--html", tmp_path)
    assert r.exit_code == 2 and "is a folder" in said(r) and "Traceback" not in r.output
    before = (out / "report.json").read_bytes()
    r = cli("report", out / "report.json", "--html", out / "report.json")
    assert r.exit_code == 2 and "being read" in said(r)
    assert (out / "report.json").read_bytes() == before
    r = cli("report", out / "report.json", "--html", tmp_path / "views" / "r.html", "--md", tmp_path / "r.md")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "views" / "r.html").read_text().startswith("<!doctype html>")


# --- the report files are written together ------------------------------------------------------------------------

def _full_disk_on(monkeypatch, name: str) -> None:
    """Writing file ``name`` into the staging folder fails with ENOSPC, as on a full disk."""
    import ingestaudit.io as io_mod

    real_open = open

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def write(self, text):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

    def fake_open(path, *args, **kwargs):
        fh = real_open(path, *args, **kwargs)
        return Full(fh) if Path(path).name == name else fh

    monkeypatch.setattr(io_mod, "open", fake_open, raising=False)


@pytest.mark.parametrize("failing", ["report.md", "report.html", "report.json", "measurements.parquet"])
def test_a_full_disk_exits_2_naming_the_file_and_the_previous_report_is_intact(tmp_path, marker, monkeypatch,
                                                                               failing):
    c = small_corpus(tmp_path / "c")
    out = tmp_path / "out"
    assert run_serial(c, out).exit_code == 0
    before = snapshot(out)
    # timings.json: every run has step times (issue 27)
    assert set(before) == {"report.json", "report.md", "report.html", "measurements.parquet", "timings.json"}
    write(c / "docs/c/a.txt", "changed\n")  # the new report would differ
    if failing == "measurements.parquet":
        import pyarrow.parquet as pq

        def full(self, *a, **k):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(pq.ParquetWriter, "write_table", full)
    else:
        _full_disk_on(monkeypatch, failing)
    r = run_serial(c, out)
    assert r.exit_code == 2, r.output
    message = " ".join(r.output.split())
    assert f"cannot write {out / failing} (No space left on device)" in message
    assert "previous report" in message and "unchanged" in message
    assert snapshot(out) == before
    assert not [p for p in out.iterdir() if p.name.startswith(".")], "a staging folder or temporary file is left"


def test_a_failed_rename_restores_every_previous_file(tmp_path, monkeypatch):
    out = tmp_path / "out"
    write(out / "report.json", "old json")
    write(out / "report.md", "old md")
    write(out / "timings.json", "old timings")
    import ingestaudit.io as io_mod

    real_replace = os.replace
    calls = []

    def flaky(src, dst):
        calls.append(Path(dst).name)
        if Path(dst).parent == out and Path(dst).name == "report.json" and Path(src).parent.name != ".previous":
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_replace(src, dst)

    monkeypatch.setattr(io_mod.os, "replace", flaky)
    with pytest.raises(OutputError, match="cannot write .*report.json .*Input/output error.*was restored"):
        with StagedOutput(out, ["report.json", "report.md", "report.html", "timings.json"]) as stage:
            stage.write_text("report.md", "new md")
            stage.write_text("report.html", "new html")
            stage.write_text("report.json", "new json")
            stage.commit()
    assert calls[:3] == ["report.md", "report.html", "report.json"]  # report.json last
    assert snapshot(out) == {"report.json": b"old json", "report.md": b"old md", "timings.json": b"old timings"}
    assert sorted(p.name for p in out.iterdir()) == ["report.json", "report.md", "timings.json"]


def test_a_commit_replaces_every_file_and_removes_those_of_the_older_run(tmp_path):
    out = tmp_path / "out"
    write(out / "report.json", "old")
    write(out / "timings.json", "old timings")
    with StagedOutput(out, ["report.json", "report.md", "timings.json"]) as stage:
        stage.write_text("report.md", "md")
        stage.write_text("report.json", "json")
        assert stage.commit() == ["report.md", "report.json"]
    assert snapshot(out) == {"report.json": b"json", "report.md": b"md"}
    assert sorted(p.name for p in out.iterdir()) == ["report.json", "report.md"]


def test_an_interrupted_runs_staging_folder_is_removed_by_the_next_run(tmp_path, marker):
    c = small_corpus(tmp_path / "c")
    out = tmp_path / "out"
    assert run_serial(c, out).exit_code == 0
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left = write(out / f"{STAGING_PREFIX}{dead.stdout.strip()}-abc" / "report.json", "half")
    assert run_serial(c, out).exit_code == 0
    assert not left.parent.exists()
    assert json.loads((out / "report.json").read_text())["tool"]["name"] == "ingestaudit"


def test_an_interrupt_while_writing_leaves_the_previous_report(tmp_path, marker, monkeypatch):
    c = small_corpus(tmp_path / "c")
    out = tmp_path / "out"
    assert run_serial(c, out).exit_code == 0
    before = snapshot(out)
    import ingestaudit.report.render as render

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(render, "render_html", interrupted)
    r = run_serial(c, out)
    assert r.exit_code == 130, r.output
    assert "interrupted" in said(r) and "previous report" in said(r)
    assert snapshot(out) == before
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


# --- Ctrl-C and SIGTERM ---------------------------------------------------------------------------------------------

def ocr_corpus(root: Path, pages: int = 40) -> Path:
    """``pages`` one-page PNG scans of printed text (about a second of Tesseract each here) with their text."""
    from PIL import Image, ImageDraw, ImageFont

    try:
        font = ImageFont.load_default(size=28)
    except TypeError:  # Pillow < 10.1
        font = ImageFont.load_default()
    for n in range(pages):
        lines = [f"Line {i} of page {n}: the quick brown fox jumps." for i in range(4)]
        img = Image.new("L", (900, 260), 255)
        draw = ImageDraw.Draw(img)
        for i, line in enumerate(lines):
            draw.text((40, 30 + i * 50), line, fill=0, font=font)
        (root / "docs/scan").mkdir(parents=True, exist_ok=True)
        img.save(root / f"docs/scan/p{n:02d}.png")
        write(root / f"truth/scan/p{n:02d}.txt", "\n".join(lines) + "\n")
    return root


def tagged_processes(tag: str) -> list[tuple[int, str]]:
    """``(pid, command)`` of every live process whose environment holds ``tag`` (a run and all it started, orphans
    included), from /proc (no psutil)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if tag.encode() not in (entry / "environ").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if state != "Z":
            found.append((int(entry.name), cmd))
    return found


def wait_until(predicate, within: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def previous_report(out: Path) -> dict[str, bytes]:
    """A previous report in ``out`` (enough for the folder check: an ingestaudit report.json)."""
    write(out / "report.json", json.dumps({"tool": {"name": "ingestaudit"}, "corpus": {"path": "x"}}) + "\n")
    write(out / "report.md", "# the previous report\n")
    return snapshot(out)


@pytest.fixture(scope="module")
def ocr_pages(tmp_path_factory) -> Path:
    pytest.importorskip("pytesseract")
    from ingestaudit.parsers.tesseract_parser import TesseractParser
    from ingestaudit.parsers.base import ParserUnavailable

    try:
        TesseractParser().version()
    except ParserUnavailable as exc:
        pytest.skip(str(exc))
    return ocr_corpus(tmp_path_factory.mktemp("ocr") / "corpus")


@pytest.mark.slow
@POSIX_PROC
@LOCALHOST
@pytest.mark.parametrize(("executor", "sig"), [("serial", signal.SIGINT), ("process", signal.SIGINT),
                                               ("process", signal.SIGTERM), ("dask", signal.SIGTERM)],
                         ids=["serial-SIGINT", "process-SIGINT", "process-SIGTERM", "dask-SIGTERM"])
def test_a_signal_3s_into_40_ocr_pages_stops_at_once_and_leaves_nothing(tmp_path, ocr_pages, executor, sig, request):
    """The acceptance test of issue 15: SIGINT (or SIGTERM) to the main process 3 s into the run; it exits within
    5 s with 130 (143) and one line, no Tesseract, worker or temporary folder is left, the previous report is
    untouched and no staging folder remains."""
    tag = f"INGESTAUDIT_TEST_TAG={uuid.uuid4().hex}"
    # the run's temporary folders (ingestaudit-tess-*) go here, apart from other runs'; a short path, since the
    # process pool's fork server makes its Unix socket (at most 107 bytes) in it (tmp_path under xdist is too long)
    tmp = Path(tempfile.mkdtemp(prefix="ia-sig-"))
    request.addfinalizer(lambda: shutil.rmtree(tmp, ignore_errors=True))
    out = tmp_path / "out"
    before = previous_report(out)
    env = {**os.environ, "TMPDIR": str(tmp), tag.split("=")[0]: tag.split("=")[1], "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "ingestaudit.cli", "run", str(ocr_pages), "-p", "tesseract",
                             "--stage", "extraction", "--executor", executor, "--workers", "2", "--out", str(out)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        t_start = time.monotonic()
        ocr_running = wait_until(lambda: any(cmd.split()[0].endswith("tesseract") and str(tmp) in cmd
                                             for _, cmd in tagged_processes(tag)), 60)
        time.sleep(max(0.0, 3 - (time.monotonic() - t_start)))
        assert ocr_running and proc.poll() is None, "the run never reached OCR"
        t0 = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        elapsed = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == (130 if sig == signal.SIGINT else 143), err
    assert elapsed < 5, f"exited {elapsed:.1f} s after the signal"
    last = [line for line in err.splitlines() if line.strip()][-1]
    assert ("interrupted" if sig == signal.SIGINT else "terminated") in last and "unchanged" in last
    assert "Traceback" not in err
    assert wait_until(lambda: not tagged_processes(tag), 10), f"left running: {tagged_processes(tag)}"
    assert not list(tmp.glob("ingestaudit-tess-*")), "an OCR temporary folder is left"
    assert snapshot(out) == before
    assert sorted(p.name for p in out.iterdir()) == ["report.json", "report.md"]


# --- escaping -------------------------------------------------------------------------------------------------------

HOSTILE = ["<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "*_[]()#|`x`!", "\x1b[31mred\x1b[0m",
           "\x1b]0;title\x07", "nul\x00byte", "cr\rline", "c1\x9bcsi", "bidi\u202eevil", "new\nline"]
CONTROL = [chr(c) for c in [*range(0x00, 0x09), *range(0x0b, 0x20), *range(0x7f, 0xa0)]] + ["\u202e"]


def assert_no_control(text: str, where: str) -> None:
    bad = sorted({f"U+{ord(c):04X}" for c in text if c in CONTROL})
    assert not bad, f"{where}: control characters {bad}"


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse_html(html: str) -> _Tags:
    p = _Tags()
    p.feed(html)
    p.close()
    return p


def assert_no_markup(html: str, where: str, allowed: set[str] | None = None) -> str:
    """No script, no event handler, no image but the page's own data: plots, no tag outside ``allowed``; returns
    the text content."""
    page = parse_html(html)
    for tag, attrs in page.tags:
        assert tag != "script", f"{where}: a script element"
        assert not [a for a in attrs if a.startswith("on")], f"{where}: an event handler on <{tag}>"
        if tag == "img":
            assert (attrs.get("src") or "").startswith("data:image/"), f"{where}: an image from {attrs.get('src')}"
        if allowed is not None:
            assert tag in allowed, f"{where}: <{tag}> {attrs}"
    return "".join(page.text)


MD_TAGS = {"h1", "h2", "h3", "p", "ul", "li", "table", "thead", "tbody", "tr", "th", "td", "code", "br", "details",
           "summary"}


def render_md(md: str) -> str:
    mdit = pytest.importorskip("markdown_it")
    return mdit.MarkdownIt("commonmark", {"html": True}).enable("table").render(md)


def test_md_text_and_code_render_to_the_name_and_nothing_else():
    for name in [n for n in HOSTILE if n.isprintable()] + ["doc_1.pdf", "a\\b", "x | y", "`tick`"]:
        for md in (md_text(name), md_code(name)):
            html = render_md(f"- {md}\n\n| c |\n|---|\n| {md} |\n")
            text = assert_no_markup(html, repr(name), MD_TAGS)
            assert text.count(name) == 2, (name, md, html)
    assert md_code("doc_1.pdf") == "`doc_1.pdf`"
    assert md_text("<b>&") == "&lt;b&gt;&amp;"


def test_terminal_text_makes_every_control_character_visible():
    assert terminal_text("a\x1b[31mb\x07\x00\r\x9b\u202e") == "a\\x1b[31mb\\x07\\x00\\x0d\\x9b\\u202e"
    assert terminal_text("one\ntwo\tx", keep_newlines=True) == "one\ntwo\tx"
    assert terminal_text("one\ntwo") == "one\\x0atwo"


def hostile_report():
    """A report whose classes, items, pipelines, labels, failure messages and detail names are hostile."""
    from _reportkit import Row, build

    from ingestaudit.report.schema import Failure, StageDetail

    rows, failures = [], []
    pipes = ["plain", *HOSTILE[:4]]
    for k, name in enumerate(HOSTILE):
        cls = f"k{k}{name}"
        for i in range(3):
            item = f"{cls}/{name}{i}"
            for j, pipe in enumerate(pipes):
                v = 0.01 * (i + j + 1)
                rows.append(Row(item, cls, pipe, "extraction.cer", v, v * 100, 100))
                rows.append(Row(item, cls, pipe, "pii.lost_in_extraction", 0.5, 1, 2, label=f"{name}"))
            failures.append(Failure(item=item, pipeline=pipes[k % len(pipes)], stage="parse", message=f"bad {name}"))
    details = [StageDetail(pipeline=pipes[1], stage="extraction", name=f"detail {HOSTILE[0]}", data={})]
    return build(rows, pipelines=pipes, failures=failures, details=details,
                 auditors={"extraction": {"normalization": HOSTILE[1]}})


@pytest.fixture(scope="module")
def evil_report():
    return hostile_report()


@pytest.mark.parametrize("verbose", [False, True])
def test_terminal_view_of_hostile_names_has_no_control_character(evil_report, verbose):
    from ingestaudit.report.render import render_terminal_text

    text = render_terminal_text(evil_report, width=160, verbose=verbose)
    assert_no_control(text.replace("\n", ""), "terminal")
    assert "\\x1b[31mred" in text  # shown, made visible
    n_lines = len(text.splitlines())
    clean = render_terminal_text(safe_for_terminal(evil_report), width=160, verbose=verbose)
    assert len(clean.splitlines()) == n_lines  # a name's newline forged no line


def test_markdown_view_of_hostile_names_renders_no_markup(evil_report):
    from ingestaudit.report.render import render_markdown

    md = render_markdown(evil_report)
    assert_no_control(md.replace("\n", ""), "markdown")
    for raw in ("<img", "<script", "\x1b"):
        assert raw not in md
    text = assert_no_markup(render_md(md), "markdown", MD_TAGS)
    for name in ("<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "*_[]()#|`x`!"):
        assert name in text, name
    assert "pii.lost_in_extraction[<script>alert(1)</script>]" in text


def test_html_view_of_hostile_names_renders_no_markup_and_no_control(evil_report):
    from ingestaudit.report.render import render_html

    html = render_html(evil_report)
    assert_no_control(html.replace("\n", "").replace("\t", ""), "html")
    text = assert_no_markup(html, "html")
    assert "<img src=x onerror=alert(1)>" in text and "\\x1b[31mred" in text


def hostile_corpus(root: Path) -> Path:
    """Class folders and file names that are markup or terminal escape sequences, and a FIFO named like a title
    escape (a warning names it)."""
    for cls, name in [("<img src=x onerror=alert(1)>", "\x1b[31mred"), ("*_[]()#|", "\x1b]0;title\x07"),
                      ("plain", "cr\rx")]:
        write(root / "docs" / cls / f"{name}.txt", "hello world\n")
        write(root / "truth" / cls / f"{name}.txt", "hello world\n")
    os.mkfifo(root / "docs" / "plain" / "\x1b]0;PWNED\x07.txt")
    return root


@POSIX_PROC
def test_every_command_prints_hostile_names_without_control_characters(tmp_path):
    c = hostile_corpus(tmp_path / "c")
    out, db = tmp_path / "out", tmp_path / "h.duckdb"
    runner = CliRunner()

    def invoke(*args):
        r = runner.invoke(app, [str(a) for a in args])
        assert "Traceback" not in r.output, r.output
        assert_no_control(r.output.replace("\n", "").replace("\t", ""), " ".join(map(str, args[:1])))
        return r

    v = invoke("validate", c)
    assert "\\x1b]0;PWNED\\x07" in v.output  # the FIFO, named visibly
    r = invoke("run", c, "-p", "reference", "--stage", "extraction", "--executor", "serial", "--out", out,
               "--history", db, "--label", "\x1b[2Jwipe")
    assert r.exit_code == 0, r.output
    assert "class: <img src=x onerror=alert(1)>" in r.output and "\\x1b]0;PWNED\\x07" in r.output
    invoke("report", out / "report.json", "--verbose")
    invoke("compare", out / "report.json", out / "report.json", "--verbose")
    cmp_json = invoke("compare", out / "report.json", out / "report.json", "--json")
    json.loads(cmp_json.output)
    invoke("history", db)
    md = (out / "report.md").read_text()
    assert "<img" not in md and "\x1b" not in md
    assert_no_markup(render_md(md), "report.md", MD_TAGS)
    html = (out / "report.html").read_text()
    assert "\x1b" not in html and "\r" not in html
    assert_no_markup(html, "report.html")
