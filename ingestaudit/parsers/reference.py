"""The ``reference`` parser: returns the document's reference text from its truth, unchanged.

Running a later stage (language, PII, dedup, chunking) on the reference text gives its *component-level* number,
free of parsing errors; running it on a real parser's output gives the *end-to-end* number. The difference is what
parsing costs that stage. Extraction metrics of this parser are trivially perfect (CER 0), a sanity check.
"""

from __future__ import annotations

from ingestaudit import __version__
from ingestaudit.document import Document
from ingestaudit.model import ParsedDocument
from ingestaudit.parsers.base import NoOutput, Parser, ParserError


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
        """The reference text as a one-page `ParsedDocument`.

        Raises:
            NoReferenceText: the document has no reference text.
            ParserError: its truth files do not load (message lists the problems).
        """
        from ingestaudit.truth import TruthError, load_truth

        if document.corpus_root is None:
            raise ParserError(f"{document.doc_id}: the reference parser needs a discovered corpus document")
        try:
            truth = load_truth(document, document.corpus_root)
        except TruthError as exc:
            raise ParserError(f"{document.doc_id}: truth does not load: {exc}") from None
        if truth.text is None:
            raise NoReferenceText(f"{document.doc_id}: no reference text")
        return ParsedDocument(text=truth.text, pages=(truth.text,), tables=truth.tables, parser=self.name,
                              parser_version=__version__)

    def version(self) -> str:
        """ingestaudit's own version (the text comes from the corpus)."""
        return __version__
