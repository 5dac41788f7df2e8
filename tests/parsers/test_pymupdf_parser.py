"""The pymupdf parser on PDFs generated here with PyMuPDF: exact text, flags, ordering, blocks, failures."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pymupdf
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestaudit.document import Document
from ingestaudit.parsers.base import ParserError, UnsupportedFormat
from ingestaudit.parsers.pymupdf_flags import canonical_flag, flag_names
from ingestaudit.parsers.pymupdf_parser import PyMuPDFParser

# PyMuPDF documents TEXTFLAGS_TEXT as ligatures + whitespace + mediabox clip + CID for unknown unicode.
DEFAULT_FLAGS = ["TEXT_CID_FOR_UNKNOWN_UNICODE", "TEXT_MEDIABOX_CLIP", "TEXT_PRESERVE_LIGATURES",
                 "TEXT_PRESERVE_WHITESPACE"]


def doc(path: Path) -> Document:
    return Document(doc_id=f"pdf/{path.stem}", doc_class="pdf", path=path)


def save(pdf: pymupdf.Document, path: Path, **kw) -> Path:
    pdf.save(path, **kw)
    pdf.close()
    return path


@pytest.fixture
def two_columns(tmp_path) -> Path:
    """One page, two columns of three lines; the right column is written first in the content stream."""
    pdf = pymupdf.open()
    page = pdf.new_page(width=612, height=792)
    for i, word in enumerate(["one", "two", "three"]):
        page.insert_text((320, 100 + 20 * i), f"Right {word}", fontsize=11)
    for i, word in enumerate(["one", "two", "three"]):
        page.insert_text((72, 100 + 20 * i), f"Left {word}", fontsize=11)
    return save(pdf, tmp_path / "columns.pdf")


@pytest.fixture
def ligatures(tmp_path) -> Path:
    """HTML set by MuPDF's Story with its built-in font: "ffi" is shaped into the U+FB03 glyph; U+FB03 written
    directly stays one glyph."""
    pdf = pymupdf.open()
    page = pdf.new_page(width=612, height=792)
    page.insert_htmlbox(pymupdf.Rect(72, 72, 540, 200), "<p>The efficient o\ufb03ce.</p>")
    return save(pdf, tmp_path / "ligatures.pdf")


def test_content_stream_order_by_default(two_columns):
    parsed = PyMuPDFParser().parse(doc(two_columns))
    assert parsed.text == "Right one\nRight two\nRight three\nLeft one\nLeft two\nLeft three"
    assert parsed.settings["sort"] is False


def test_sort_interleaves_the_columns_line_by_line(two_columns):
    parsed = PyMuPDFParser(sort=True).parse(doc(two_columns))
    lines = [line for line in parsed.text.split("\n") if line.strip()]
    assert [re.split(r" {2,}", line) for line in lines] == [
        ["Left one", "Right one"], ["Left two", "Right two"], ["Left three", "Right three"]]
    assert parsed.settings["sort"] is True


def test_ligatures_are_kept_by_default_and_recorded(ligatures):
    parsed = PyMuPDFParser().parse(doc(ligatures))
    assert parsed.text == "The e\ufb03cient o\ufb03ce."
    assert parsed.settings["flags"] == DEFAULT_FLAGS
    assert parsed.settings["flags_source"] == "pymupdf default TEXTFLAGS_TEXT"


def test_dropping_the_ligature_flag_expands_them(ligatures):
    parser = PyMuPDFParser(flags=["-TEXT_PRESERVE_LIGATURES"])
    parsed = parser.parse(doc(ligatures))
    assert parsed.text == "The efficient office."
    assert parsed.settings["flags"] == [f for f in DEFAULT_FLAGS if f != "TEXT_PRESERVE_LIGATURES"]
    assert parsed.settings["flags_source"] == "default with changes"


def test_exact_flag_set():
    parser = PyMuPDFParser(flags=["preserve_whitespace", "TEXT_DEHYPHENATE"])
    assert parser.flag_value() == pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_DEHYPHENATE  # 2 | 16
    assert parser.settings()["flags"] == ["TEXT_DEHYPHENATE", "TEXT_PRESERVE_WHITESPACE"]
    assert parser.settings()["flags_source"] == "configured"


def test_flag_names_and_errors():
    assert canonical_flag("preserve_ligatures") == "TEXT_PRESERVE_LIGATURES"
    assert canonical_flag("TEXT_CLIP") == "TEXT_MEDIABOX_CLIP"  # PyMuPDF's alias of the same bit
    assert flag_names(pymupdf.TEXTFLAGS_TEXT, pymupdf) == DEFAULT_FLAGS
    assert flag_names(1 | (1 << 30), pymupdf) == ["0x40000000", "TEXT_PRESERVE_LIGATURES"]
    with pytest.raises(ValueError, match="unknown PyMuPDF text flag 'TEXT_BOGUS'"):
        PyMuPDFParser(flags=["TEXT_BOGUS"])
    with pytest.raises(ValueError, match="not both"):
        PyMuPDFParser(flags=["-TEXT_PRESERVE_LIGATURES", "TEXT_DEHYPHENATE"])
    with pytest.raises(ValueError, match="list"):
        PyMuPDFParser(flags="TEXT_DEHYPHENATE")  # type: ignore[arg-type]


def test_pages_text_and_blocks(tmp_path):
    pdf = pymupdf.open()
    for word in ("one", "two"):
        pdf.new_page(width=300, height=300).insert_text((72, 100), f"Page {word}", fontsize=12)
    image = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 8, 8), False)
    image.clear_with(200)
    pdf[1].insert_image(pymupdf.Rect(100, 150, 180, 230), pixmap=image)
    parsed = PyMuPDFParser().parse(doc(save(pdf, tmp_path / "pages.pdf")))
    assert parsed.pages == ("Page one\n", "Page two\n")
    assert parsed.text == "Page one\n\nPage two"  # trailing newlines removed, pages joined by a blank line
    kinds = [(b.page, b.kind, b.text, b.order) for b in parsed.blocks]
    assert kinds == [(1, "paragraph", "Page one\n", 0), (2, "paragraph", "Page two\n", 1), (2, "image", "", 2)]
    assert parsed.blocks[0].bbox[0] == 72.0  # x of the insertion point, in points
    assert parsed.blocks[2].bbox == (100.0, 150.0, 180.0, 230.0)
    assert parsed.parser == "pymupdf" and parsed.parser_version == pymupdf.VersionBind


def test_encrypted_pdf(tmp_path):
    pdf = pymupdf.open()
    pdf.new_page().insert_text((72, 72), "Secret text", fontsize=12)
    path = save(pdf, tmp_path / "encrypted.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="u", owner_pw="o")
    with pytest.raises(ParserError, match=r"encrypted\.pdf: encrypted; needs a password"):
        PyMuPDFParser().parse(doc(path))
    with pytest.raises(ParserError, match="password is wrong"):
        PyMuPDFParser(password="nope").parse(doc(path))
    parsed = PyMuPDFParser(password="u").parse(doc(path))
    assert parsed.text == "Secret text"
    assert "password" not in parsed.settings


def test_zero_byte_and_corrupt_files(tmp_path):
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    garbage = tmp_path / "garbage.pdf"
    garbage.write_bytes(b"%PDF-1.7\nthis is not a PDF body\n%%EOF\n")
    with pytest.raises(ParserError, match=r"empty\.pdf: zero-byte file"):
        PyMuPDFParser().parse(doc(empty))
    with pytest.raises(ParserError, match=r"garbage\.pdf: corrupt or not a PDF file"):
        PyMuPDFParser().parse(doc(garbage))
    with pytest.raises(ParserError, match="cannot read"):
        PyMuPDFParser().parse(doc(tmp_path / "missing.pdf"))


def test_truncated_pdf_is_repaired_with_warnings(two_columns, tmp_path):
    data = two_columns.read_bytes()
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(data[: len(data) // 2])
    parsed = PyMuPDFParser().parse(doc(cut))
    assert any("repair" in w for w in parsed.warnings)
    assert all(w.startswith("mupdf: ") for w in parsed.warnings)


def test_unsupported_suffix(tmp_path):
    path = tmp_path / "notes.docx"
    path.write_bytes(b"PK\x03\x04")
    with pytest.raises(UnsupportedFormat):
        PyMuPDFParser().parse(doc(path))
    assert not PyMuPDFParser().supports(doc(path))


def test_version_and_available():
    assert PyMuPDFParser().version() == pymupdf.VersionBind
    assert PyMuPDFParser().available() == (True, pymupdf.VersionBind)


WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=1, max_size=10)


@settings(max_examples=25, deadline=None)
@given(st.lists(WORD, min_size=1, max_size=8))
def test_single_line_round_trip(words):
    line = " ".join(words)
    with tempfile.TemporaryDirectory() as tmp:
        pdf = pymupdf.open()
        pdf.new_page(width=1200, height=200).insert_text((20, 100), line, fontsize=10)
        parsed = PyMuPDFParser().parse(doc(save(pdf, Path(tmp) / "line.pdf")))
    assert parsed.text == line
