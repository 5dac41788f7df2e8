"""The ``reference`` parser: returns the document's reference text from its truth, unchanged, with the labelled
structure as layout blocks.

Running a later stage (language, PII, dedup, chunking) on the reference text gives its *component-level* number,
free of parsing errors; running it on a real parser's output gives the *end-to-end* number. The difference is what
parsing costs that stage. Extraction metrics of this parser are trivially perfect (CER 0), a sanity check.

Blocks (`reference_blocks`): the truth ``headings`` (kind ``heading``, with their levels), ``lists`` (one
``list_item`` block per item) and ``tables`` (one ``table`` block each), located in the reference text by
`ingestaudit.labelled_structure.locate_structure`, and the text between them as ``paragraph`` blocks (one per
blank-line-separated paragraph), all in text order so that the blocks tile the text and every consumer locates each
block exactly where it was found. So the ``structural`` chunker sees the labelled sections, tables and lists at
component level, and the chunk pointers' section paths are the labelled ones. A document without such labels gets
paragraph blocks only; the text is one page (a reference text has no page breaks).
"""

from __future__ import annotations

import re

from ingestaudit import __version__
from ingestaudit.document import Document
from ingestaudit.model import Block, ParsedDocument
from ingestaudit.parsers.base import NoOutput, Parser, ParserError

_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n")


def reference_blocks(text: str, headings=(), lists=(), tables=()) -> tuple[Block, ...]:
    """Layout blocks of a reference text from its labelled structure (see the module docstring).

    Structural items (headings, list items, tables) are taken in text order; one that overlaps an earlier kept item
    is left out (a list item that is also a heading's text stays a heading). Each block's text is the exact slice of
    ``text`` it was located at; the paragraphs between items are the gaps split at blank lines, stripped, empty
    ones dropped. ``order`` numbers the blocks 0.. in text order; every block is on page 1 without a box.
    """
    from ingestaudit.labelled_structure import locate_structure

    found = locate_structure(text, headings, lists, tables)
    items: list[tuple[int, int, str, int | None]] = [(h.start, h.end, "heading", h.level) for h in found.headings]
    items += [(s, e, "list_item", None) for run in found.list_items for s, e in run]
    items += [(s, e, "table", None) for s, e in found.tables]
    kept: list[tuple[int, int, str, int | None]] = []
    for item in sorted(items, key=lambda it: (it[0], -it[1])):
        if not kept or item[0] >= kept[-1][1]:
            kept.append(item)
    spans: list[tuple[int, int, str, int | None]] = []
    cursor = 0
    for start, end, kind, level in [*kept, (len(text), len(text), "", None)]:
        pos = cursor
        for m in [*_PARAGRAPH_BREAK.finditer(text, cursor, start), None]:
            stop = m.start() if m else start
            piece = text[pos:stop]
            if piece.strip():
                lead = len(piece) - len(piece.lstrip())
                spans.append((pos + lead, pos + len(piece.rstrip()), "paragraph", None))
            pos = m.end() if m else start
        if kind:
            spans.append((start, end, kind, level))
        cursor = end
    return tuple(Block(text=text[s:e], kind=kind, level=level, order=k) for k, (s, e, kind, level) in enumerate(spans))


class NoReferenceText(NoOutput):
    """The document has no reference text; the runner records ``no_prediction`` for this parser."""


class ReferenceParser(Parser):
    """Reads ``truth/<id>.txt`` (or the truth JSON ``text``, or a PAGE XML / ALTO ground truth) as the parsed text."""

    name = "reference"
    extensions = frozenset()  # any file type: the source document itself is never read

    def supports(self, document: Document) -> bool:
        """Always True: the reference text does not depend on the source format."""
        return True

    def parse(self, document: Document) -> ParsedDocument:
        """The reference text as a one-page `ParsedDocument` with `reference_blocks`.

        Raises:
            NoReferenceText: the document has no reference text.
            ParserError: its reference text does not load: a truth file is unusable as a whole, or its ``text`` key
                is bad (message lists the problems); a problem in another key leaves the text usable.
        """
        from ingestaudit.truth import TruthError, load_truth

        if document.corpus_root is None:
            raise ParserError(f"{document.doc_id}: the reference parser needs a discovered corpus document")
        try:
            truth = load_truth(document, document.corpus_root)
        except TruthError as exc:  # a bad label elsewhere (headings, pii) leaves the reference text usable
            if exc.partial is None or exc.partial.text is None:
                raise ParserError(f"{document.doc_id}: truth does not load: {exc}") from None
            truth = exc.partial
        if truth.text is None:
            raise NoReferenceText(f"{document.doc_id}: no reference text")
        blocks = reference_blocks(truth.text, truth.headings, truth.lists, truth.tables)
        return ParsedDocument(text=truth.text, pages=(truth.text,), blocks=blocks, tables=truth.tables,
                              parser=self.name, parser_version=__version__,
                              settings={"blocks": "truth headings, lists and tables located in the reference text; "
                                                  "paragraphs between them"})

    def version(self) -> str:
        """ingestaudit's own version (the text comes from the corpus)."""
        return __version__
