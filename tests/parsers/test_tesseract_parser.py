"""The tesseract parser: OCR of clean rendered text (exact), PDF rendering at a recorded DPI, TIFF frames, failures."""

from __future__ import annotations

import shutil
from pathlib import Path

import pymupdf
import pytest
from PIL import Image

from ingestaudit.document import Document
from ingestaudit.parsers.base import ParserError, ParserUnavailable, UnsupportedFormat
from ingestaudit.parsers.tesseract_parser import TesseractParser, language_package

pytestmark = pytest.mark.skipif(shutil.which("tesseract") is None,
                                reason="tesseract binary missing: apt-get install tesseract-ocr tesseract-ocr-eng")

LINE = "The quick brown fox jumps"


def doc(path: Path) -> Document:
    return Document(doc_id=f"scan/{path.stem}", doc_class="scan", path=path)


def text_page(text: str, width: int = 520, height: int = 120) -> pymupdf.Document:
    """A page with one line of 30 pt Helvetica at (20, 70) pt: large and clean enough for error-free OCR."""
    pdf = pymupdf.open()
    pdf.new_page(width=width, height=height).insert_text((20, 70), text, fontsize=30)
    return pdf


def render_png(text: str, path: Path, dpi: int = 150) -> Path:
    pix = text_page(text)[0].get_pixmap(dpi=dpi)
    pix.set_dpi(dpi, dpi)
    pix.save(path)
    return path


def image_only_pdf(png: Path, path: Path) -> Path:
    """A PDF whose only page is the picture of a text line: no text layer at all."""
    pdf = pymupdf.open()
    pdf.new_page(width=520, height=120).insert_image(pymupdf.Rect(0, 0, 520, 120), filename=str(png))
    pdf.save(path)
    return path


def test_clean_png_is_read_exactly(tmp_path):
    parsed = TesseractParser().parse(doc(render_png(LINE, tmp_path / "line.png")))
    assert parsed.text == LINE
    assert parsed.pages == (LINE + "\n",)  # Tesseract's own txt output, page separator disabled
    assert [b.text for b in parsed.blocks] == [LINE]
    assert parsed.parser == "tesseract"


def test_image_only_pdf_rendered_at_the_recorded_dpi(tmp_path):
    png = render_png(LINE, tmp_path / "line.png")
    pdf = image_only_pdf(png, tmp_path / "scan.pdf")
    assert pymupdf.open(pdf)[0].get_text() == ""  # no text layer to fall back on
    parsed = TesseractParser(dpi=200).parse(doc(pdf))
    assert parsed.text == LINE
    assert parsed.settings["dpi"] == 200
    assert parsed.settings["renderer"] == f"pymupdf {pymupdf.VersionBind}"
    # the paragraph box is converted from pixels to points (x 72/200): the text starts at x = 20 pt
    x0, y0, x1, y1 = parsed.blocks[0].bbox
    assert 18 <= x0 <= 22 and y0 < 70 < y1 <= 80


def test_settings_record_every_option():
    parser = TesseractParser(dpi=300, lang="eng", psm=7, pdf_pages="image_only")
    assert parser.settings() == {
        "dpi": 300, "lang": "eng", "psm": 7, "pdf_pages": "image_only",
        "config": "--psm 7 -c tessedit_create_tsv=1 -c page_separator=",
        "renderer": f"pymupdf {pymupdf.VersionBind}", "page_separator": "\n\n",
        "heading_source": "none", "list_source": "none",  # plain OCR: layout heading rows are no_prediction
    }


def test_multipage_tiff_gives_one_page_per_frame(tmp_path):
    first = Image.open(render_png("First page text", tmp_path / "a.png"))
    second = Image.open(render_png("Second page text", tmp_path / "b.png")).convert("L")
    path = tmp_path / "two.tiff"
    first.save(path, save_all=True, append_images=[second], dpi=(150, 150))
    parsed = TesseractParser().parse(doc(path))
    assert [p.rstrip("\n") for p in parsed.pages] == ["First page text", "Second page text"]
    assert parsed.text == "First page text\n\nSecond page text"
    assert [b.page for b in parsed.blocks] == [1, 2]


def test_image_only_mode_keeps_text_layers(tmp_path):
    pdf = text_page("Typed text layer")
    pdf.save(tmp_path / "typed.pdf")
    parsed = TesseractParser(pdf_pages="image_only").parse(doc(tmp_path / "typed.pdf"))
    assert parsed.text == "Typed text layer"
    assert parsed.warnings == ("pages with a text layer, not OCRed: 1",)


def test_failures_name_the_file(tmp_path):
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 10)
    with pytest.raises(ParserError, match=r"empty\.png: zero-byte file"):
        TesseractParser().parse(doc(empty))
    with pytest.raises(ParserError, match=r"broken\.png: corrupt or unreadable image"):
        TesseractParser().parse(doc(broken))
    locked = text_page("x")
    locked.save(tmp_path / "locked.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="u", owner_pw="o")
    with pytest.raises(ParserError, match=r"locked\.pdf: encrypted"):
        TesseractParser().parse(doc(tmp_path / "locked.pdf"))
    gif = tmp_path / "anim.gif"
    gif.write_bytes(b"GIF89a")
    with pytest.raises(UnsupportedFormat):
        TesseractParser().parse(doc(gif))


def test_missing_binary_and_language(monkeypatch, tmp_path):
    import pytesseract

    assert TesseractParser(lang="eng").available()[0] is True
    with pytest.raises(ParserUnavailable, match="apt-get install tesseract-ocr-xyz"):
        TesseractParser(lang="eng+xyz").version()
    monkeypatch.setattr(pytesseract.pytesseract, "tesseract_cmd", str(tmp_path / "no-tesseract"))
    ok, message = TesseractParser().available()
    assert ok is False
    assert "apt-get install tesseract-ocr tesseract-ocr-eng" in message
    with pytest.raises(ParserError, match="apt-get install tesseract-ocr tesseract-ocr-eng"):
        TesseractParser().parse(doc(render_png(LINE, tmp_path / "line.png")))


def test_language_package_names():
    assert language_package("eng") == "tesseract-ocr-eng"
    assert language_package("chi_sim") == "tesseract-ocr-chi-sim"


@pytest.mark.parametrize("kwargs", [{"dpi": 0}, {"dpi": 1201}, {"dpi": 300.0}, {"psm": 14}, {"psm": -1},
                                    {"pdf_pages": "some"}, {"lang": ""}, {"lang": "eng+"}])
def test_bad_options(kwargs):
    with pytest.raises(ValueError):
        TesseractParser(**kwargs)
