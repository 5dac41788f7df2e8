"""The unstructured parser: category mapping, HTML / text / PDF (fast) outputs, offline guarantees, loud failures.

Runs with pytest-socket's --disable-socket: any network attempt by Unstructured would fail these tests.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pymupdf
import pytest
import urllib3  # noqa: F401 - imported here, outside any test: at import it probes IPv6 support by opening a socket
# bound to ::1 (no network), which pytest-socket would report as "a test tried to use socket.socket"

from ingestaudit.document import Document
from ingestaudit.model import BLOCK_KINDS
from ingestaudit.parsers.base import ParserError, ParserUnavailable, UnsupportedFormat
from ingestaudit.parsers import unstructured_parser as up
from ingestaudit.parsers.unstructured_parser import CATEGORY_KINDS, UnstructuredParser


def doc(path: Path) -> Document:
    return Document(doc_id=f"x/{path.stem}", doc_class="x", path=path)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_category_mapping_is_exhaustive_for_the_installed_unstructured():
    up.set_offline_env()  # before unstructured's first import: it pings its telemetry endpoint at import otherwise
    from unstructured.documents import elements

    element_types = {v for k, v in vars(elements.ElementType).items() if k.isupper() and isinstance(v, str)}
    class_categories = {c.category for _, c in inspect.getmembers(elements, inspect.isclass)
                        if issubclass(c, elements.Element) and isinstance(getattr(c, "category", None), str)}
    assert set(CATEGORY_KINDS) == element_types | class_categories
    assert {k for k in CATEGORY_KINDS.values() if k is not None} <= set(BLOCK_KINDS)
    assert [k for k, v in CATEGORY_KINDS.items() if v is None] == ["PageBreak"]
    with pytest.raises(ParserError, match="'Brand-new'"):
        up.block_kind("Brand-new")


def test_html_elements_blocks_and_tables(tmp_path):
    html = ("<html><body><h1>Annual report</h1><p>The committee reviewed the budget and approved it.</p>"
            "<ul><li>first point</li></ul><table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>"
            "</body></html>")
    parsed = UnstructuredParser().parse(doc(write(tmp_path / "page.html", html)))
    assert [(b.kind, b.text, b.level, b.bbox) for b in parsed.blocks] == [
        ("heading", "Annual report", 1, None),
        ("paragraph", "The committee reviewed the budget and approved it.", None, None),
        ("list_item", "first point", None, None),
        ("table", "a b 1 2", None, None),
    ]
    assert parsed.tables == ("<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>",)
    assert parsed.text == ("Annual report\n\nThe committee reviewed the budget and approved it.\n\nfirst point"
                           "\n\na b 1 2")
    assert parsed.pages == (parsed.text,)


def test_plain_text_and_markdown(tmp_path):
    text = "Quarterly Summary\n\nThe team shipped the new release and fixed many bugs in it.\n\n- a list item\n"
    parsed = UnstructuredParser().parse(doc(write(tmp_path / "notes.txt", text)))
    assert [(b.kind, b.text) for b in parsed.blocks] == [
        ("heading", "Quarterly Summary"),
        ("paragraph", "The team shipped the new release and fixed many bugs in it."),
        ("list_item", "a list item"),  # the bullet is dropped by unstructured
    ]
    md = UnstructuredParser().parse(doc(write(tmp_path / "notes.md", "# Title\n\nSome words here.\n")))
    assert md.text.startswith("# Title")  # Markdown goes through partition_text: syntax kept as text


def test_pdf_fast_strategy(tmp_path):
    pdf = pymupdf.open()
    for n in (1, 2):
        pdf.new_page(width=612, height=792).insert_text(
            (72, 100), f"Page {n} says that the parser reads every word of it.", fontsize=11)
    pdf.save(tmp_path / "two.pdf")
    parsed = UnstructuredParser().parse(doc(tmp_path / "two.pdf"))
    assert parsed.pages == ("Page 1 says that the parser reads every word of it.",
                            "Page 2 says that the parser reads every word of it.")
    assert parsed.text == "\n\n".join(parsed.pages)
    assert [b.page for b in parsed.blocks] == [1, 2]
    x0, y0, x1, y1 = parsed.blocks[0].bbox
    assert x0 == pytest.approx(72.0) and y0 < 100 < y1  # PDF points, origin top-left
    assert parsed.settings["pdf_strategy"] == "fast"


def test_pdf_failures_are_errors_not_empty_outputs(tmp_path):
    # partition_pdf only logs these failures and returns no elements; the adapter must raise.
    garbage = tmp_path / "garbage.pdf"
    garbage.write_bytes(b"%PDF-1.7\nthis is not a PDF body\n%%EOF\n")
    with pytest.raises(ParserError, match=r"garbage\.pdf: unstructured could not extract the PDF's text "
                                          r"\(PDFSyntaxError"):
        UnstructuredParser().parse(doc(garbage))
    locked = pymupdf.open()
    locked.new_page().insert_text((72, 72), "Secret text", fontsize=12)
    locked.save(tmp_path / "locked.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="u", owner_pw="o")
    with pytest.raises(ParserError, match=r"locked\.pdf: .*PDFPasswordIncorrect"):
        UnstructuredParser().parse(doc(tmp_path / "locked.pdf"))
    empty = tmp_path / "empty.html"
    empty.write_bytes(b"")
    with pytest.raises(ParserError, match=r"empty\.html: zero-byte file"):
        UnstructuredParser().parse(doc(empty))


def test_unsupported_suffix(tmp_path):
    with pytest.raises(UnsupportedFormat):
        UnstructuredParser().parse(doc(write(tmp_path / "scan.png", "x")))


def test_missing_spacy_model_is_reported_not_downloaded(monkeypatch, tmp_path):
    monkeypatch.setattr(up, "find_spacy_model", lambda: None)
    ok, message = UnstructuredParser().available()
    assert ok is False and "en_core_web_sm" in message and "pip install" in message
    with pytest.raises(ParserError, match="en_core_web_sm"):
        UnstructuredParser().parse(doc(write(tmp_path / "a.txt", "Some text.")))


def test_runtime_download_is_blocked(monkeypatch, tmp_path):
    # If spaCy cannot load the model, unstructured 0.27 would download it from GitHub; the adapter makes that raise.
    import spacy
    from unstructured.nlp import tokenize

    original_installer = tokenize._install_spacy_model

    def broken_load(*args, **kwargs):
        raise OSError("model files unreadable")

    monkeypatch.setattr(spacy, "load", broken_load)
    tokenize._get_nlp.cache_clear()
    try:
        text = "This unusual sentence about seven purple zebras has enough words for the narrative heuristics.\n"
        with pytest.raises(ParserError, match="tried to download the spaCy model"):
            UnstructuredParser().parse(doc(write(tmp_path / "zebras.txt", text)))
    finally:
        tokenize._get_nlp.cache_clear()
    assert tokenize._install_spacy_model is original_installer  # restored after the call


def test_offline_environment_and_settings(tmp_path):
    parser = UnstructuredParser()
    parser.parse(doc(write(tmp_path / "a.txt", "Hello there.")))
    assert {k: os.environ[k] for k in up.OFFLINE_ENV} == up.OFFLINE_ENV
    settings = parser.settings()
    assert settings["pdf_strategy"] == "fast" and settings["languages"] is None
    assert settings["spacy_model"].startswith("en_core_web_sm")
    assert settings["partitioners"][".html"] == "partition_html"
    assert parser.version() == __import__("importlib.metadata").metadata.version("unstructured")


def test_options_are_validated():
    with pytest.raises(ValueError, match="pdf_strategy"):
        UnstructuredParser(pdf_strategy="hi_res")
    with pytest.raises(ValueError, match="languages"):
        UnstructuredParser(languages="eng")  # type: ignore[arg-type]


OFFLINE_PROBE = """
import socket, sys
attempts = []
def refuse(name):
    def call(*args, **kwargs):
        attempts.append(name)
        raise OSError("network disabled: " + name)
    return call
socket.socket.connect = refuse("connect")
socket.getaddrinfo = refuse("getaddrinfo")
socket.create_connection = refuse("create_connection")
from pathlib import Path
from ingestaudit.document import Document
from ingestaudit.parsers.unstructured_parser import UnstructuredParser
parser = UnstructuredParser()
for name in sys.argv[1:]:
    parser.parse(Document(doc_id="x/" + Path(name).stem, doc_class="x", path=Path(name)))
print(attempts)
"""


@pytest.mark.slow
def test_fresh_interpreter_makes_no_network_attempt(tmp_path):
    # A fresh process, so unstructured's import-time telemetry is covered too; every socket entry point records.
    files = [write(tmp_path / "a.txt", "Plain text that is long enough to be classified as narrative text.\n"),
             write(tmp_path / "b.html", "<h1>Title</h1><p>Some paragraph text that goes on for a while.</p>")]
    pdf = pymupdf.open()
    pdf.new_page().insert_text((72, 72), "A line of PDF text for the fast strategy.", fontsize=11)
    pdf.save(tmp_path / "c.pdf")
    files.append(tmp_path / "c.pdf")
    out = subprocess.run([sys.executable, "-c", OFFLINE_PROBE, *map(str, files)], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_module_import_does_not_import_unstructured():
    code = ("import sys, ingestaudit.parsers.unstructured_parser as m; m.UnstructuredParser().settings(); "
            "print(sorted(x for x in ('unstructured', 'spacy', 'torch') if x in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_parser_unavailable_is_not_a_parser_error():
    # The runner catches ParserError per document; a missing library is reported by available() instead.
    assert not issubclass(ParserUnavailable, ParserError)


def test_the_first_parse_loads_no_third_party_spacy_plugin(tmp_path):
    """Unstructured loads its spaCy model with spaCy's third-party factory entry points off (Presidio's would
    import transformers, about 3 s of each worker's start), in a fresh interpreter; the switch is back on after, so
    a step that needs those factories (Presidio) still finds them."""
    root = Path(__file__).resolve().parents[2]
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from ingestaudit.document import Document\n"
        "from ingestaudit.parsers.unstructured_parser import UnstructuredParser\n"
        f"p = Path({str(root / 'fixtures/demo/docs/born_digital/pump_field_note.pdf')!r})\n"
        "out = UnstructuredParser().parse(Document('x', 'born_digital', p))\n"
        "import spacy\n"
        "print(len(out.text) > 1000, 'transformers' in sys.modules, 'presidio_analyzer' in sys.modules,"
        " spacy.util.registry._entry_point_factories.entry_points)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(root)})
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["True", "False", "False", "True"]
