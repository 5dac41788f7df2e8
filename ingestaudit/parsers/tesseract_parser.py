"""The ``tesseract`` parser: OCR with the Tesseract engine (through pytesseract) of images and of PDF pages.

PDF pages are rendered with PyMuPDF at a fixed resolution (``dpi``, recorded in the settings) to RGB PNGs that
carry that resolution, and each page image goes through one ``tesseract`` run that writes both its plain
text (``txt``) and its word table (``tsv``). Images (PNG, JPEG, TIFF including multi-page TIFF, BMP) are read with
Pillow, one page per frame.

Tesseract runs in its own session (process group) through `ingestaudit.children.run_process`: on a time-out, an exception or Ctrl-C its
whole group is killed, and while a page is OCRed a SIGTERM (how the process pool ends a worker past the per-document
budget) first kills every running Tesseract group and removes the page images' temporary folder, then ends the worker
as before (issue 15: no orphan Tesseract, no ``ingestaudit-tess-*`` folder left behind).

Reference: Tesseract OCR (https://github.com/tesseract-ocr/tesseract), command-line options ``-l``, ``--psm`` and the
``txt``/``tsv`` output configs; pytesseract (https://github.com/madmaze/pytesseract).
"""

from __future__ import annotations

import csv
import io
import shlex
import tempfile
import time
from pathlib import Path
from typing import Any

from ingestaudit.children import TEMP_DIRS, cleanup_on_sigterm, run_process
from ingestaudit.document import Document
from ingestaudit.model import Block, ParsedDocument
from ingestaudit.parsers.base import Parser, ParserError, ParserUnavailable, UnsupportedFormat
from ingestaudit.parsers.pymupdf_parser import PAGE_SEPARATOR, check_source, open_document

IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp"})
PDF_PAGES = ("all", "image_only")
INSTALL_HINT = "apt-get install tesseract-ocr tesseract-ocr-eng"


def _pytesseract() -> Any:
    try:
        import pytesseract
    except ImportError as exc:
        raise ParserUnavailable(f"pytesseract is not installed ({exc}); pip install pytesseract") from None
    return pytesseract


def language_package(lang: str) -> str:
    """Debian package holding Tesseract's traineddata for ``lang`` (``"chi_sim"`` -> ``tesseract-ocr-chi-sim``)."""
    return "tesseract-ocr-" + lang.lower().replace("_", "-")


class TesseractParser(Parser):
    """OCR text of images and PDF pages with Tesseract.

    Args:
        dpi: resolution (dots per inch, 1 to 1200) at which PDF pages are rendered; also sets the PNG's resolution
            that Tesseract reads. Images are OCRed at their own pixel size.
        lang: Tesseract language(s), ``"eng"`` or ``"eng+deu"``; each needs its traineddata installed.
        psm: page segmentation mode 0-13 passed as ``--psm``; None keeps Tesseract's default (3, fully automatic).
        pdf_pages: ``"all"`` OCRs every PDF page; ``"image_only"`` OCRs only pages without a text layer (empty
            ``get_text()``) and takes the other pages' text layer with PyMuPDF (default flags), as ``ocrmypdf
            --skip-text`` would; the pages that were not OCRed are listed in the warnings.

    Output: ``pages[i]`` is Tesseract's ``txt`` output for page/frame i (``page_separator`` empty); ``text`` joins
    pages with `PAGE_SEPARATOR` after removing each page's trailing newlines. One block per Tesseract paragraph
    (``block_num``, ``par_num`` of the ``tsv``), kind ``"paragraph"``, words joined by spaces and lines by newlines,
    ``bbox`` in PDF points (pixels x 72 / dpi; for images the file's own DPI, or None when the file states none).

    Raises:
        ValueError: (at construction) ``dpi`` outside 1-1200, ``psm`` outside 0-13, unknown ``pdf_pages``, empty
            ``lang``.
    """

    name = "tesseract"
    extensions = IMAGE_EXTENSIONS | {".pdf"}

    def __init__(self, dpi: int = 300, lang: str = "eng", psm: int | None = None, pdf_pages: str = "all"):
        if isinstance(dpi, bool) or not isinstance(dpi, int) or not 1 <= dpi <= 1200:
            raise ValueError(f"dpi must be an integer in 1..1200, not {dpi!r}")
        if psm is not None and (isinstance(psm, bool) or not isinstance(psm, int) or not 0 <= psm <= 13):
            raise ValueError(f"psm must be an integer in 0..13 or None, not {psm!r}")
        if pdf_pages not in PDF_PAGES:
            raise ValueError(f"pdf_pages must be one of {PDF_PAGES}, not {pdf_pages!r}")
        if not isinstance(lang, str) or not lang.strip() or any(not part for part in lang.split("+")):
            raise ValueError(f"lang must look like 'eng' or 'eng+deu', not {lang!r}")
        self.dpi, self.lang, self.psm, self.pdf_pages = dpi, lang.strip(), psm, pdf_pages
        self._version: str | None = None  # checked once per instance, on the first parse

    def version(self) -> str:
        """Tesseract's version, e.g. ``"5.3.0"``, after checking that every language in ``lang`` is installed.

        Raises:
            ParserUnavailable: pytesseract or the ``tesseract`` binary or a language's traineddata is missing (the
                message names the apt package).
        """
        pt = _pytesseract()
        try:
            version = str(pt.get_tesseract_version())
            installed = set(pt.get_languages(config=""))
        except pt.TesseractNotFoundError:
            raise ParserUnavailable(f"the tesseract binary was not found; {INSTALL_HINT}") from None
        except (OSError, RuntimeError) as exc:
            raise ParserUnavailable(f"tesseract does not run ({exc}); {INSTALL_HINT}") from None
        missing = [part for part in self.lang.split("+") if part not in installed]
        if missing:
            pkgs = " ".join(language_package(m) for m in missing)
            raise ParserUnavailable(f"tesseract has no traineddata for {'+'.join(missing)}; apt-get install {pkgs}")
        return version

    def cache_identity(self) -> dict[str, Any]:
        """Tesseract's version, `settings` (the rasterizer's version included) and each ``lang`` model file's size and
        modification time in Tesseract's tessdata folder (`Parser.builtin_identity`): the step cache's parser
        identity.

        Raises:
            ParserUnavailable: as `version`.
        """
        return self.builtin_identity(traineddata=self._traineddata())

    def _traineddata(self) -> dict[str, Any]:
        """``{lang: [size, mtime_ns]}`` of the ``<lang>.traineddata`` files in the folder ``tesseract --list-langs``
        names (``{"folder": None}`` when it names none)."""
        import re
        import subprocess

        pt = _pytesseract()
        out = subprocess.run([pt.pytesseract.tesseract_cmd, "--list-langs"], capture_output=True, text=True,
                             timeout=60, check=False)
        found = re.search(r'"([^"]+)"', (out.stdout + out.stderr).splitlines()[0] if out.stdout + out.stderr else "")
        if found is None:
            return {"folder": None}
        folder = Path(found.group(1))
        files: dict[str, Any] = {"folder": str(folder)}
        for part in self.lang.split("+"):
            try:
                st = (folder / f"{part}.traineddata").stat()
                files[part] = [st.st_size, st.st_mtime_ns]
            except OSError:
                files[part] = None
        return files

    def config(self) -> str:
        """The Tesseract command-line options used besides ``-l`` (psm, tsv output, empty page separator)."""
        psm = f"--psm {self.psm} " if self.psm is not None else ""
        return f"{psm}-c tessedit_create_tsv=1 -c page_separator="

    def settings(self) -> dict[str, Any]:
        """``dpi``, ``lang``, ``psm`` (None = Tesseract's default 3), ``pdf_pages``, ``config`` (options passed),
        ``renderer`` (PyMuPDF version used to rasterize PDF pages), ``page_separator``; ``heading_source`` and
        ``list_source`` ``"none"``: plain OCR gives paragraph blocks only, so the layout auditor's heading and list
        rows are ``no_prediction``, not 0."""
        try:
            import pymupdf

            renderer = f"pymupdf {pymupdf.VersionBind}"
        except ImportError:
            renderer = "pymupdf (not installed)"
        return {"dpi": self.dpi, "lang": self.lang, "psm": self.psm, "pdf_pages": self.pdf_pages,
                "config": self.config(), "renderer": renderer, "page_separator": PAGE_SEPARATOR,
                "heading_source": "none", "list_source": "none"}

    def parse(self, document: Document) -> ParsedDocument:
        """OCR every page (or frame) of ``document``; see the class docstring.

        Raises:
            UnsupportedFormat: the suffix is not an image or PDF suffix.
            ParserError: the tesseract binary or a language is missing (message says what to install); zero-byte,
                corrupt or encrypted file; or Tesseract failed on a page (message names the file and page).
        """
        if not self.supports(document):
            raise UnsupportedFormat(f"{document.path}: tesseract does not read {document.suffix or 'extensionless'} "
                                    "files")
        try:
            version = self._version or self.version()
        except ParserUnavailable as exc:
            raise ParserError(f"{document.path}: {exc}") from None
        self._version = version
        start = time.perf_counter()
        check_source(document.path)
        pages: list[str] = []
        blocks: list[Block] = []
        warnings: list[str] = []
        with cleanup_on_sigterm(), tempfile.TemporaryDirectory(prefix="ingestaudit-tess-",
                                                                       ignore_cleanup_errors=True) as tmp:
            TEMP_DIRS.add(tmp)  # removed by the SIGTERM handler too; the with statement removes it on other exits
            try:
                if document.suffix == ".pdf":
                    sources = self._pdf_pages(document.path, Path(tmp), warnings)
                else:
                    sources = self._image_pages(document.path, Path(tmp), warnings)
                for number, (item, points_per_px) in enumerate(sources, start=1):
                    if isinstance(item, str):  # text layer kept (pdf_pages="image_only")
                        pages.append(item)
                        continue
                    text, tsv = self._ocr(item, document.path, number)
                    pages.append(text)
                    blocks += _blocks(tsv, number, points_per_px, len(blocks))
            finally:
                TEMP_DIRS.discard(tmp)
        return ParsedDocument(
            text=PAGE_SEPARATOR.join(p.rstrip("\n") for p in pages),
            pages=tuple(pages),
            blocks=tuple(blocks),
            parser=self.name,
            parser_version=version,
            settings=self.settings(),
            elapsed_s=time.perf_counter() - start,
            warnings=tuple(warnings),
        )

    def _pdf_pages(self, path: Path, tmp: Path, warnings: list[str]):
        import pymupdf

        doc = open_document(path, None)
        kept: list[int] = []
        with doc:
            for number, page in enumerate(doc, start=1):
                if self.pdf_pages == "image_only":
                    layer = page.get_text("text")
                    if layer.strip():
                        kept.append(number)
                        yield layer, None
                        continue
                try:
                    pix = page.get_pixmap(dpi=self.dpi, alpha=False, colorspace=pymupdf.csRGB)
                except (RuntimeError, ValueError) as exc:
                    raise ParserError(f"{path}: page {number}: cannot render ({exc})") from None
                pix.set_dpi(self.dpi, self.dpi)
                png = tmp / f"page-{number:05d}.png"
                pix.save(png)
                yield png, 72.0 / self.dpi
        if kept:
            warnings.append(f"pages with a text layer, not OCRed: {', '.join(map(str, kept))}")

    def _image_pages(self, path: Path, tmp: Path, warnings: list[str]):
        from PIL import Image, ImageSequence, UnidentifiedImageError

        try:
            img = Image.open(path)
            img.load()
        except Image.DecompressionBombError as exc:
            raise ParserError(f"{path}: image too large for Pillow's safety limit ({exc})") from None
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
            raise ParserError(f"{path}: corrupt or unreadable image ({exc})") from None
        with img:
            dpi = _valid_dpi(img.info.get("dpi"))
            if dpi is None and img.info.get("dpi") is not None:  # a TIFF with resolution 0/0 reads as (nan, nan)
                warnings.append(f"{path.name}: resolution {img.info['dpi']!r} is not a valid DPI (finite, above 0): OCR "
                                "without it, blocks without coordinates")
            for number, frame in enumerate(ImageSequence.Iterator(img), start=1):
                try:
                    page = frame.convert("RGB") if frame.mode not in ("1", "L", "RGB") else frame.copy()
                except (OSError, ValueError) as exc:
                    raise ParserError(f"{path}: frame {number}: cannot decode ({exc})") from None
                png = tmp / f"frame-{number:05d}.png"
                page.save(png, format="PNG", **({"dpi": dpi} if dpi else {}))
                yield png, (72.0 / dpi[0] if dpi else None)

    def _ocr(self, png: Path, source: Path, number: int) -> tuple[str, str]:
        pt = _pytesseract()
        base = png.with_suffix("")
        # the command pytesseract.run_tesseract builds, run by run_process (own process group, killed on any exit)
        argv = [pt.pytesseract.tesseract_cmd, str(png), str(base), "-l", self.lang, *shlex.split(self.config()), "txt"]
        try:
            done = run_process(argv)
        except FileNotFoundError:
            raise ParserError(f"{source}: the tesseract binary was not found; {INSTALL_HINT}") from None
        except OSError as exc:
            raise ParserError(f"{source}: page {number}: tesseract does not run ({exc})") from None
        if done.returncode:
            message = " ".join(done.stderr.decode("utf-8", "replace").splitlines()).strip()
            raise ParserError(f"{source}: page {number}: tesseract failed ({message})")
        try:
            text = base.with_suffix(".txt").read_text(encoding="utf-8")
            tsv = base.with_suffix(".tsv").read_text(encoding="utf-8")
        except OSError as exc:
            raise ParserError(f"{source}: page {number}: tesseract wrote no output ({exc})") from None
        return text, tsv


def _valid_dpi(dpi: Any) -> tuple[float, float] | None:
    """An image's ``(x, y)`` resolution when both are finite numbers above 0, else None (not stated, or a value such
    as the NaN Pillow reads from a TIFF resolution of 0/0)."""
    import math

    try:
        x, y = float(dpi[0]), float(dpi[1])
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    return (x, y) if all(math.isfinite(v) and v > 0 for v in (x, y)) else None


def _blocks(tsv: str, page: int, points_per_px: float | None, first_order: int) -> list[Block]:
    """Paragraph blocks from Tesseract's TSV (levels: 1 page, 2 block, 3 paragraph, 4 line, 5 word)."""
    rows = csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE)
    paras: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        key = (row["block_num"], row["par_num"])
        if row["level"] == "3":
            left, top, w, h = (int(row[k]) for k in ("left", "top", "width", "height"))
            paras[key] = {"box": (left, top, left + w, top + h), "lines": {}}
        elif row["level"] == "5" and key in paras and (row.get("text") or "").strip():
            paras[key]["lines"].setdefault(row["line_num"], []).append(row["text"])
    out = []
    for para in paras.values():
        text = "\n".join(" ".join(words) for words in para["lines"].values())
        if not text:
            continue
        bbox = None
        if points_per_px is not None:
            bbox = tuple(round(v * points_per_px, 3) for v in para["box"])
        out.append(Block(text=text, page=page, bbox=bbox, kind="paragraph", order=first_order + len(out)))
    return out
