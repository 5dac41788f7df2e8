"""The ``pymupdf`` parser: text layer extraction with PyMuPDF (MuPDF's ``fz_stext`` text device).

Two choices change the numbers and are recorded in `PyMuPDFParser.settings`:

- **Text flags** (``TEXT_*`` bit flags of ``Page.get_text``). PyMuPDF's default for ``"text"`` is
  ``TEXTFLAGS_TEXT`` = ``TEXT_PRESERVE_LIGATURES | TEXT_PRESERVE_WHITESPACE | TEXT_MEDIABOX_CLIP |
  TEXT_CID_FOR_UNKNOWN_UNICODE`` (PyMuPDF 1.24 to 2.0): ligatures such as U+FB03 "ﬃ" are kept as one character, so
  "efficient" set with a ligature glyph comes out as "eﬃcient" (raw CER 2/9 against "efficient" per ligature).
- **Ordering**: ``sort=False`` (default) keeps MuPDF's order, i.e. the content-stream order of the text blocks;
  ``sort=True`` sorts by vertical then horizontal position, which on a two-column page interleaves the columns line
  by line (PyMuPDF 2.0 pads the gap between the columns with spaces on one output line).

Tables (``tables=True``, the default) come from PyMuPDF's table finder, written as HTML with spans where merged
cells are detected (`ingestaudit.parsers.pymupdf_tables`); the finder settings are in ``settings()["tables"]``, and
every `ParsedDocument` says whether tables were looked for (``settings["table_extraction"]``, read by the tables
auditor: found none -> TEDS 0; not looked for -> ``no_prediction``).

Reference: PyMuPDF documentation, "TextPage" and "Text Extraction Flags Defaults"
(https://pymupdf.readthedocs.io/en/latest/vars.html#text-extraction-flags).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ingestaudit.document import Document
from ingestaudit.model import Block, ParsedDocument
from ingestaudit.parsers.base import Parser, ParserError, ParserUnavailable, UnsupportedFormat
from ingestaudit.parsers.pymupdf_flags import canonical_flag, flag_names
from ingestaudit.parsers.pymupdf_structure import (OUTLINE_MIN_SIMILARITY, FontStats, HeadingRules, Line,
                                                   classify_lines, font_stats, line_of, list_rule, match_outline)

#: How page texts are joined into `ParsedDocument.text` (each page's trailing newlines removed first).
PAGE_SEPARATOR = "\n\n"
#: Values of the ``headings`` option: outline else font statistics, outline only, font statistics only, none.
HEADING_SOURCES = ("auto", "outline", "fonts", "none")


def check_source(path: Path) -> None:
    """Fail early on a missing, unreadable or zero-byte source file.

    Raises:
        ParserError: naming the file and the cause.
    """
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ParserError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if size == 0:
        raise ParserError(f"{path}: zero-byte file")


def open_document(path: Path, password: str | None) -> Any:
    """Open ``path`` with PyMuPDF, authenticating with ``password`` when the file is encrypted.

    Raises:
        ParserError: zero-byte, corrupt (MuPDF cannot open or repair it), encrypted without (the right) password, or
            no pages; the message names the file.
    """
    import pymupdf

    check_source(path)
    try:
        doc = pymupdf.open(path)
    except pymupdf.EmptyFileError:
        raise ParserError(f"{path}: zero-byte file") from None
    except (RuntimeError, ValueError) as exc:  # pymupdf.FileDataError is a RuntimeError
        raise ParserError(f"{path}: corrupt or not a {path.suffix.lstrip('.').upper() or 'document'} file "
                          f"({exc})") from None
    if doc.needs_pass:
        if password is None or not doc.authenticate(password):
            doc.close()
            reason = "needs a password" if password is None else "the configured password is wrong"
            raise ParserError(f"{path}: encrypted; {reason}")
    if doc.page_count == 0:
        doc.close()
        raise ParserError(f"{path}: the document has no pages")
    return doc


def mupdf_warnings(pymupdf: Any) -> list[str]:
    """MuPDF's accumulated warnings (repairs, broken streams...) since the last call, de-duplicated, in order."""
    raw = pymupdf.TOOLS.mupdf_warnings(reset=True) or ""
    return list(dict.fromkeys(line for line in raw.splitlines() if line.strip()))


class PyMuPDFParser(Parser):
    """Per-page text and layout blocks from a document's text layer, with PyMuPDF.

    Args:
        sort: PyMuPDF's ``sort`` option (see the module docstring); False keeps content-stream order.
        flags: text flags by name (``"TEXT_PRESERVE_LIGATURES"`` or ``"preserve_ligatures"``). None uses PyMuPDF's
            default ``TEXTFLAGS_TEXT``. A list of plain names is the exact set; a list whose every entry starts with
            ``+``/``-`` adds to / removes from the default (e.g. ``["-TEXT_PRESERVE_LIGATURES"]``).
        password: password for encrypted PDFs (never written to the report).
        tables: run the table finder on every page (False: no tables, and the documents declare that tables were
            not extracted).
        headings: ``"auto"`` (outline when the document has one, else font statistics), ``"outline"``, ``"fonts"``
            or ``"none"`` (no heading blocks).
        lists: emit list items (bullet and numbering patterns) as ``list_item`` blocks.
        heading_size_ratio: ``size_ratio`` of the ``fontstats-v1`` rule (default 1.15).
        table_strategy, table_layout, table_refine: ``strategy``, ``use_layout`` and ``refine`` of
            ``Page.find_tables`` (see `ingestaudit.parsers.pymupdf_tables.TableFinderSettings`; defaults
            ``"lines"``, False, False).

    Output: ``pages[i]`` is ``page.get_text("text", flags, sort)``; ``text`` joins the pages with `PAGE_SEPARATOR`
    after removing each page's trailing newlines. Blocks come from ``page.get_text("blocks")`` with the same flags
    plus ``TEXT_PRESERVE_IMAGES``, image blocks kind ``"image"`` with empty text; text blocks are split into headings
    (with levels), list items and paragraphs by `ingestaudit.parsers.pymupdf_structure` (outline when present, else
    the ``fontstats-v1`` font rule; lines from ``get_text("dict")``); a text block with nothing but paragraph text
    keeps MuPDF's block text. ``bbox`` in PDF points from the top-left corner; ``order`` counts over the document.
    ``settings["headings"]`` says, per document, where the headings came from (outline entries found and missed,
    or the body size and the heading styles with their levels).
    ``tables``: per page, per table PyMuPDF found, one ``<table>`` (`ingestaudit.parsers.pymupdf_tables`), in page
    order. A page whose table finder fails adds a warning, and the document then declares
    ``settings["table_extraction"] = False`` unless some table was found elsewhere.

    Raises:
        ValueError: (at construction) an unknown flag name, or mixed absolute and ``+``/``-`` entries; an unknown
            table strategy or a non-boolean table option.
    """

    name = "pymupdf"
    extensions = frozenset({".pdf", ".xps", ".oxps", ".epub"})

    def __init__(self, sort: bool = False, flags: list[str] | None = None, password: str | None = None,
                 tables: bool = True, table_strategy: str = "lines", table_layout: bool = False,
                 table_refine: bool = False, headings: str = "auto", lists: bool = True,
                 heading_size_ratio: float = HeadingRules.size_ratio):
        from ingestaudit.parsers.pymupdf_tables import TableFinderSettings

        if headings not in HEADING_SOURCES:
            raise ValueError(f"headings must be one of {', '.join(HEADING_SOURCES)}, not {headings!r}")
        if not isinstance(lists, bool):
            raise ValueError(f"lists must be true or false, not {lists!r}")
        if isinstance(heading_size_ratio, bool) or not isinstance(heading_size_ratio, (int, float)) \
                or not heading_size_ratio > 1.0:
            raise ValueError(f"heading_size_ratio must be a number above 1, not {heading_size_ratio!r}")
        self.headings = headings
        self.lists = lists
        self.heading_rules = HeadingRules(size_ratio=float(heading_size_ratio))

        if not isinstance(tables, bool):
            raise ValueError(f"tables must be true or false, not {tables!r}")
        self.tables = tables
        self.table_finder = TableFinderSettings(strategy=table_strategy, use_layout=table_layout,
                                                refine=table_refine)
        self.sort = bool(sort)
        self.password = password
        self._add: tuple[str, ...] = ()
        self._remove: tuple[str, ...] = ()
        self._exact: tuple[str, ...] | None = None
        if flags is not None:
            if isinstance(flags, str):
                raise ValueError("flags must be a list of flag names, not a string")
            signed = [f.strip().startswith(("+", "-")) for f in flags]
            if flags and all(signed):
                self._add = tuple(sorted({canonical_flag(f.strip()[1:]) for f in flags if f.strip()[0] == "+"}))
                self._remove = tuple(sorted({canonical_flag(f.strip()[1:]) for f in flags if f.strip()[0] == "-"}))
            elif any(signed):
                raise ValueError("flags: use either names (the exact set) or only +NAME/-NAME (changes to the "
                                 f"default), not both: {flags!r}")
            else:
                self._exact = tuple(sorted({canonical_flag(f) for f in flags}))

    def flag_value(self) -> int:
        """The ``flags`` integer passed to ``get_text``.

        Raises:
            ParserUnavailable: PyMuPDF is missing, or lacks one of the configured flags.
        """
        pymupdf = _import()
        if self._exact is None:
            value = pymupdf.TEXTFLAGS_TEXT
            names: tuple[str, ...] = self._add + self._remove
        else:
            value, names = 0, self._exact
        bits = {}
        for name in names:
            bit = getattr(pymupdf, name, None)
            if not isinstance(bit, int):
                raise ParserUnavailable(f"PyMuPDF {pymupdf.VersionBind} has no text flag {name}")
            bits[name] = bit
        if self._exact is not None:
            for bit in bits.values():
                value |= bit
        else:
            for name in self._add:
                value |= bits[name]
            for name in self._remove:
                value &= ~bits[name]
        return value

    def cache_identity(self) -> dict[str, Any]:
        """PyMuPDF's version, `settings` and the sha256 of ``password`` (None without one; the password itself is
        never written: `settings` leaves it out, yet it decides whether an encrypted file opens)
        (`Parser.builtin_identity`): the step cache's parser identity.

        Raises:
            ParserUnavailable: as `version`.
        """
        import hashlib

        secret = None if self.password is None else hashlib.sha256(self.password.encode("utf-8", "surrogatepass"))
        return self.builtin_identity(password_sha256=None if secret is None else secret.hexdigest())

    def version(self) -> str:
        """PyMuPDF's version (``pymupdf.VersionBind``, e.g. ``"2.0"``).

        Raises:
            ParserUnavailable: PyMuPDF is not installed.
        """
        return str(_import().VersionBind)

    def settings(self) -> dict[str, Any]:
        """``flags`` (sorted canonical names actually used), ``flags_source`` (``"pymupdf default TEXTFLAGS_TEXT"``,
        ``"default with changes"`` or ``"configured"``), ``sort``, ``page_separator``, ``mupdf`` (MuPDF's version),
        ``tables`` (False, or the table finder's settings and HTML conventions), ``structure`` (heading source,
        the ``fontstats-v1`` thresholds, the outline match threshold, the list-item patterns or False),
        ``heading_source`` and ``list_source`` (what the layout auditor reads; per document, `parse` replaces the
        heading source by the one used: ``"outline"``, ``"font_heuristic"`` or ``"none"``)."""
        out: dict[str, Any] = {"sort": self.sort, "page_separator": PAGE_SEPARATOR,
                               "tables": self.table_finder.describe() if self.tables else False,
                               "structure": {
                                   "headings": self.headings,
                                   "heading_sources": "outline (get_toc) when present, else font statistics"
                                   if self.headings == "auto" else self.headings,
                                   "font_rule": self.heading_rules.describe(),
                                   "outline_min_similarity": OUTLINE_MIN_SIMILARITY,
                                   "list_items": list_rule() if self.lists else False,
                               },
                               "heading_source": {"auto": "outline, else font_heuristic", "outline": "outline",
                                                  "fonts": "font_heuristic", "none": "none"}[self.headings],
                               "list_source": "marker_patterns" if self.lists else "none"}
        if self._exact is not None:
            out["flags_source"] = "configured"
        elif self._add or self._remove:
            out["flags_source"] = "default with changes"
        else:
            out["flags_source"] = "pymupdf default TEXTFLAGS_TEXT"
        try:
            pymupdf = _import()
            out["flags"] = flag_names(self.flag_value(), pymupdf)
            out["mupdf"] = str(pymupdf.VersionFitz)
        except ParserUnavailable as exc:
            out["flags"] = f"unknown ({exc})"
        return out

    def parse(self, document: Document) -> ParsedDocument:
        """Extract per-page text and blocks; see the class docstring.

        Raises:
            UnsupportedFormat: the suffix is not one of `extensions`.
            ParserError: PyMuPDF (or a configured flag) is missing; zero-byte, corrupt, encrypted (without the right
                password) or page-less file; or every page failed. A page that alone fails becomes ``""`` with a
                warning.
        """
        if not self.supports(document):
            raise UnsupportedFormat(f"{document.path}: pymupdf does not read {document.suffix or 'extensionless'} "
                                    "files")
        try:
            pymupdf = _import()
            flags = self.flag_value()
        except ParserUnavailable as exc:
            raise ParserError(f"{document.path}: {exc}") from None
        mupdf_warnings(pymupdf)  # drop warnings left over from earlier documents
        start = time.perf_counter()
        doc = open_document(document.path, self.password)
        pages: list[str] = []
        blocks: list[Block] = []
        tables: list[str] = []
        warnings: list[str] = []
        failed = 0
        tables_failed = 0
        page_blocks: list[list[tuple[Any, list[Line] | None]]] = []  # per page: (raw block, its lines) pairs
        with doc:
            toc = self._outline(doc, warnings)
            for number, page in enumerate(doc, start=1):
                try:
                    text = page.get_text("text", flags=flags, sort=self.sort)
                    raw_blocks = page.get_text("blocks", flags=flags | pymupdf.TEXT_PRESERVE_IMAGES, sort=self.sort)
                    lines = self._page_lines(page, flags, raw_blocks, number, warnings)
                except (RuntimeError, ValueError) as exc:
                    failed += 1
                    warnings.append(f"page {number}: text extraction failed ({exc})")
                    pages.append("")
                    page_blocks.append([])
                    continue
                pages.append(text)
                page_blocks.append(list(zip(raw_blocks, lines)))
                if self.tables:
                    tables_failed += self._page_tables(page, number, tables, warnings)
        headings_info = self._structure(page_blocks, toc, blocks, warnings)
        if failed == len(pages):
            raise ParserError(f"{document.path}: text extraction failed on every page ({warnings[0]})")
        warnings += [f"mupdf: {w}" for w in mupdf_warnings(pymupdf)]
        settings = self.settings()
        settings["headings"] = headings_info
        settings["heading_source"] = {"outline (get_toc)": "outline", "font statistics": "font_heuristic"}.get(
            headings_info["source"], "none")
        settings["table_extraction"] = self.tables and (tables_failed == 0 or bool(tables))
        if not self.tables:
            settings["table_extraction_note"] = "pymupdf parser option tables = false"
        elif not settings["table_extraction"]:
            settings["table_extraction_note"] = f"the table finder failed on {tables_failed} page(s)"
        return ParsedDocument(
            text=PAGE_SEPARATOR.join(p.rstrip("\n") for p in pages),
            pages=tuple(pages),
            blocks=tuple(blocks),
            tables=tuple(tables),
            parser=self.name,
            parser_version=str(pymupdf.VersionBind),
            settings=settings,
            elapsed_s=time.perf_counter() - start,
            warnings=tuple(warnings),
        )


    def _outline(self, doc: Any, warnings: list[str]) -> list[tuple[int, str, int]] | None:
        """The outline as ``(level, title, page)`` entries when headings may come from it, else None."""
        if self.headings not in ("auto", "outline"):
            return None
        try:
            toc = doc.get_toc(simple=True)
        except (RuntimeError, ValueError) as exc:
            warnings.append(f"outline unreadable ({exc}); headings from font statistics")
            return None
        return [(int(lv), str(title), int(page)) for lv, title, page, *_ in toc] or None

    def _page_lines(self, page: Any, flags: int, raw_blocks: list[Any], number: int,
                    warnings: list[str]) -> list[list[Line] | None]:
        """Per raw block, its `Line`s (None for image blocks, or for every block when the structure pass is off or
        its blocks do not line up with the ``"blocks"`` output, with a warning)."""
        if self.headings == "none" and not self.lists:
            return [None] * len(raw_blocks)
        images = _import().TEXT_PRESERVE_IMAGES
        n_text = sum(1 for b in raw_blocks if b[6] == 0)
        # text-only first (cheap); images can split text blocks, so when the counts differ, the same flags as the
        # "blocks" call (the image blocks then carry their bytes: slower, only on such pages)
        info = page.get_text("dict", flags=flags & ~images, sort=self.sort)
        texts = [b for b in info.get("blocks", ()) if b.get("type", 0) == 0]
        if len(texts) != n_text and n_text != len(raw_blocks):
            info = page.get_text("dict", flags=flags | images, sort=self.sort)
            texts = [b for b in info.get("blocks", ()) if b.get("type", 0) == 0]
        if len(texts) != n_text:
            warnings.append(f"page {number}: {len(texts)} text blocks in the dict output vs {n_text} in the blocks "
                            "output; no headings or list items on this page")
            return [None] * len(raw_blocks)
        it = iter(texts)
        return [[line_of(ln) for ln in next(it).get("lines", ())] if b[6] == 0 else None for b in raw_blocks]

    def _structure(self, page_blocks: list[list[tuple[Any, list[Line] | None]]],
                   toc: list[tuple[int, str, int]] | None, blocks: list[Block], warnings: list[str]) -> dict:
        """Fill ``blocks`` with the kinds of `ingestaudit.parsers.pymupdf_structure`; return the per-document
        account for ``settings["headings"]``."""
        rules = self.heading_rules
        info: dict[str, Any] = {"source": "none"}
        outline: dict[tuple[int, int, int], int] | None = None
        stats = FontStats(None, False, {}, {})
        if toc is not None:
            outline, missing = {}, 0
            for number, items in enumerate(page_blocks, start=1):
                entries = [(lv, title) for lv, title, pg in toc if pg == number]
                if not entries:
                    continue
                found, miss = match_outline(entries, [lines or [] for _, lines in items])
                missing += miss
                outline.update({(number, b, k): lv for (b, k), lv in found.items()})
            missing += sum(1 for _, _, pg in toc if not 1 <= pg <= len(page_blocks))
            if missing:
                warnings.append(f"{missing} of {len(toc)} outline entries not found on their page (not emitted)")
            info = {"source": "outline (get_toc)", "outline_entries": len(toc), "outline_not_found": missing,
                    "outline_min_similarity": OUTLINE_MIN_SIMILARITY}
        elif self.headings in ("auto", "fonts"):
            stats = font_stats([ln for items in page_blocks for _, lines in items for ln in (lines or ())], rules)
            info = {"source": "font statistics", **rules.describe(), **stats.describe()}
        use_fonts = outline is None and self.headings in ("auto", "fonts")
        for number, items in enumerate(page_blocks, start=1):
            for b, ((x0, y0, x1, y1, btext, _no, btype), lines) in enumerate(items):
                bbox = (float(x0), float(y0), float(x1), float(y1))
                if btype == 1:
                    blocks.append(Block(text="", page=number, bbox=bbox, kind="image", order=len(blocks)))
                    continue
                pieces = None
                if lines:
                    levels = ({k: outline[(number, b, k)] for k in range(len(lines)) if (number, b, k) in outline}
                              if outline is not None else None)
                    if outline is not None or use_fonts or self.lists:
                        pieces = classify_lines(lines, stats if use_fonts else FontStats(None, False, {}, {}),
                                                rules, levels)
                if not pieces or (len(pieces) == 1 and pieces[0].kind == "paragraph"):
                    blocks.append(Block(text=btext, page=number, bbox=bbox, kind="paragraph", order=len(blocks)))
                    continue
                for piece in pieces:
                    kind = piece.kind if (piece.kind != "list_item" or self.lists) else "paragraph"
                    sel = [lines[k] for k in piece.lines]
                    sep = " " if kind == "heading" else "\n"
                    text = sep.join(ln.text.strip() if kind == "heading" else ln.text for ln in sel)
                    if kind != "heading":
                        text += "\n"
                    box = (min(ln.bbox[0] for ln in sel), min(ln.bbox[1] for ln in sel),
                           max(ln.bbox[2] for ln in sel), max(ln.bbox[3] for ln in sel))
                    blocks.append(Block(text=text, page=number, bbox=box, kind=kind, level=piece.level,
                                        order=len(blocks)))
        info["option"] = self.headings
        return info

    def _page_tables(self, page: Any, number: int, tables: list[str], warnings: list[str]) -> int:
        """Append the page's tables (HTML) to ``tables``; 1 when the table finder failed on it (with a warning)."""
        from ingestaudit.parsers.pymupdf_tables import page_tables

        try:
            found, notes = page_tables(page, self.table_finder)
        except Exception as exc:  # noqa: BLE001 - the finder failing must not lose the page's text
            warnings.append(f"page {number}: table extraction failed ({type(exc).__name__}: {exc})")
            return 1
        tables += found
        warnings += [f"page {number}: {n}" for n in notes]
        return 0


def _import() -> Any:
    try:
        import pymupdf
    except ImportError as exc:
        raise ParserUnavailable(f"PyMuPDF is not installed ({exc}); pip install pymupdf") from None
    return pymupdf
