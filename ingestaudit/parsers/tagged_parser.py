"""The ``tagged`` parser: a tagged PDF's own logical structure (its author's headings, paragraphs, lists, tables).

A tagged PDF carries a structure tree (``/StructTreeRoot``) written by the authoring tool (Word, LibreOffice,
InDesign...): typed elements (``H1``-``H6``, ``P``, ``L``/``LI``, ``Table``/``TR``/``TH``/``TD``...) in logical reading
order, each pointing at the marked content that draws it. Where a document has one, it is the best structure there
is, and a baseline for the parsers that have to guess (font statistics, layout models). The tree is read with pikepdf
and the marked content's characters with pdfminer.six (`ingestaudit.parsers.structtree`).

Output: one `Block` per structure block in tree order (`ingestaudit.parsers.structtree.blocks`: headings with their
level, one ``list_item`` per ``LI``, one ``table`` per ``Table``, paragraphs, captions, figures with text); ``text`` =
the blocks' texts joined by `BLOCK_SEPARATOR` (a table: one cell per line, row by row), so the text is in the
author's reading order and holds no artifacts (running headers and footers, page numbers marked as artifacts);
``pages[i]`` joins the blocks whose first character is on page i+1; ``tables`` = one ``<table>`` per ``Table``
element (``th``/``td`` as tagged, ``RowSpan``/``ColSpan`` attributes kept). Untagged content is not read.

States: an untagged PDF is ``no_prediction`` (`NoOutput`: the parser has nothing to say about it); a broken or
cyclic tree, or a file pikepdf or pdfminer cannot read, is a `ParserError` naming the document and the cause; a tree
with no text on the file's pages is ``no_prediction``.
"""

from __future__ import annotations

import importlib.metadata
import time
from typing import Any

from ingestaudit.document import Document
from ingestaudit.model import Block, ParsedDocument
from ingestaudit.parsers.base import NoOutput, Parser, ParserError, ParserUnavailable, UnsupportedFormat

BLOCK_SEPARATOR = "\n"
"""Between two blocks in ``text`` (one block per line, as the demo corpus's reference texts)."""


def _versions() -> dict[str, str]:
    out = {}
    for dist in ("pikepdf", "pdfminer.six"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            raise ParserUnavailable(f"{dist} is not installed; pip install {dist}") from None
    return out


class TaggedPDFParser(Parser):
    """Reads a tagged PDF's structure tree into blocks (see the module docstring). Takes no options."""

    name = "tagged"
    extensions = frozenset({".pdf"})

    def version(self) -> str:
        """``"pikepdf X; pdfminer.six Y"``.

        Raises:
            ParserUnavailable: pikepdf or pdfminer.six is not installed.
        """
        return "; ".join(f"{k} {v}" for k, v in _versions().items())

    def settings(self) -> dict[str, Any]:
        """How the tree is read and turned into blocks (every choice that changes the output)."""
        from ingestaudit.parsers import structtree as st

        return {
            "source": "structure tree (/StructTreeRoot), role map followed",
            "tree_reader": "pikepdf", "text_reader": "pdfminer.six marked content (MCID), no layout analysis",
            "word_gap": st.WORD_GAP, "max_depth": st.MAX_DEPTH, "block_separator": BLOCK_SEPARATOR,
            "headings": "H1-H6 -> level 1-6; H -> number of enclosing Sect (at least 1)",
            "list_items": "one per LI (nested L items follow as items of their own)",
            "tables": "Table/TR/TH/TD (THead/TBody/TFoot), RowSpan/ColSpan kept",
            "untagged_content": "not read",
            "heading_source": "structure_tree", "list_source": "structure_tree",
        }

    def parse(self, document: Document) -> ParsedDocument:
        """Read the structure tree and its text.

        Raises:
            UnsupportedFormat: not a ``.pdf``.
            NoOutput: the PDF is not tagged, or its tree has no text on the file's pages.
            ParserError: pikepdf or pdfminer.six missing; an unreadable file; a broken or cyclic structure tree.
        """
        from ingestaudit.parsers import structtree as st
        from ingestaudit.parsers.pymupdf_parser import check_source

        if not self.supports(document):
            raise UnsupportedFormat(f"{document.path}: tagged reads PDF files only, not "
                                    f"{document.suffix or 'extensionless'} files")
        try:
            version = self.version()
        except ParserUnavailable as exc:
            raise ParserError(f"{document.path}: {exc}") from None
        check_source(document.path)
        start = time.perf_counter()
        try:
            tree = st.read_tree(document.path)
        except st.NotTagged as exc:
            raise NoOutput(str(exc)) from None
        except st.StructTreeError as exc:
            raise ParserError(str(exc)) from None
        except RecursionError:
            raise ParserError(f"{document.path}: structure tree too deep to read") from None
        except Exception as exc:  # noqa: BLE001 - pikepdf's errors (PdfError, PasswordError...) are this document's
            raise ParserError(f"{document.path}: pikepdf cannot read the file ({type(exc).__name__}: {exc})") from None
        try:
            marked = st.marked_content(document.path)
        except Exception as exc:  # noqa: BLE001 - any pdfminer failure is this document's error row
            raise ParserError(f"{document.path}: pdfminer.six cannot read the marked content "
                              f"({type(exc).__name__}: {exc})") from None
        found = st.blocks(tree, marked)
        if not found:
            raise NoOutput(f"{document.path}: the structure tree holds no text on this file's pages")
        blocks = tuple(Block(text=b.text, page=b.page, bbox=b.bbox, kind=b.kind, level=b.level, order=k)
                       for k, b in enumerate(found))
        n_pages = max(tree.pages, max(b.page for b in found))
        pages = tuple(BLOCK_SEPARATOR.join(b.text for b in found if b.page == n) for n in range(1, n_pages + 1))
        warnings = []
        if tree.foreign:
            warnings.append(f"{tree.foreign} content item(s) on pages this file does not hold (left out)")
        if tree.streams:
            warnings.append(f"{tree.streams} content item(s) in form XObject streams (not read)")
        if tree.repeated:
            warnings.append(f"{tree.repeated} structure element(s) reached from two parents (read once)")
        counts: dict[str, int] = {}
        for e in tree.elements():
            counts[e.type] = counts.get(e.type, 0) + 1
        settings = self.settings()
        settings["headings"] = {"source": "structure tree", "elements": dict(sorted(counts.items())),
                                "headings": sum(b.kind == "heading" for b in found),
                                "foreign_content_items": tree.foreign}
        settings["table_extraction"] = True
        return ParsedDocument(
            text=BLOCK_SEPARATOR.join(b.text for b in found),
            pages=pages,
            blocks=blocks,
            tables=tuple(b.html for b in found if b.kind == "table" and b.html),
            parser=self.name,
            parser_version=version,
            settings=settings,
            elapsed_s=time.perf_counter() - start,
            warnings=tuple(warnings),
        )
