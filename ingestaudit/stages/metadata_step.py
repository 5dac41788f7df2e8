"""The ``metadata`` step of a pipeline: the document's title, authors and date as the pipeline extracts them.

Runs in the worker, once per document with labelled ``metadata`` x pipeline, after parsing. Its options are
`ingestaudit.enrichment.METADATA_STEP_DEFAULTS`; its artefact, `ingestaudit.enrichment.MetadataExtraction`, is all
the metadata auditor reads.

Extractors:

``parser``       for a PDF, its document information dictionary (PyMuPDF ``Document.metadata``: ``title``, ``author``
                 split at ``;`` into ``authors``, ``creationDate`` ``D:YYYYMMDD...`` as ``date`` ``YYYY-MM-DD`` and
                 ``year``), blank entries left out; then, when there is no title yet, the text of the parsed
                 document's first heading block of the smallest level (``first_heading``).
``precomputed``  the ``metadata`` object of a precomputed output (``--outputs``).

With ``prefer_precomputed`` an output's ``metadata`` is read whatever the extractor. A pipeline that names a
``language`` step also gets the ``language`` field from it (`ingestaudit.steps.metadata_extraction`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ingestaudit.enrichment import MetadataExtraction, check_metadata_options
from ingestaudit.model import ParsedDocument

_PDF_DATE = re.compile(r"^D:(\d{4})(\d{2})?(\d{2})?")


class MetadataStep:
    """One pipeline's metadata extractor with its options (`ingestaudit.enrichment.check_metadata_options`).

    Raises:
        ValueError: bad options.
    """

    def __init__(self, **options: Any):
        self.opts = check_metadata_options(options)

    def settings(self) -> dict[str, Any]:
        """Every option but the extractor (``report.json["pipelines"][].stages``)."""
        return {k: v for k, v in self.opts.items() if k != "extractor"}

    def version(self) -> str:
        """``external`` for precomputed outputs; the package's version for the parser extractor."""
        from ingestaudit.plugins import package_version

        if self.opts["extractor"] == "precomputed":
            return "external"
        return f"ingestaudit {package_version('ingestaudit')}"

    def run(self, parsed: ParsedDocument | None, reference: str | None = None, context: tuple[str, ...] = ()
            ) -> MetadataExtraction:
        """The extracted fields of one document (``parsed`` None: ``ran`` False). Never raises for an extractor
        problem: the state and message are in the artefact."""
        name = self.opts["extractor"]
        if parsed is None:
            return MetadataExtraction(name)
        try:
            given = parsed.extras.get("metadata")
            if name == "precomputed" or (self.opts["prefer_precomputed"] and given is not None):
                if given is None:
                    return MetadataExtraction(name, True, state="no_prediction",
                                              reason="the output carries no metadata")
                return MetadataExtraction(name, True, {k: "precomputed" for k in given}, dict(given))
            fields, source = parser_fields(parsed)
            return MetadataExtraction(name, True, source, fields)
        except Exception as exc:
            return MetadataExtraction(name, True, state="error", reason=f"{type(exc).__name__}: {exc}")


def pdf_info(path: str | Path) -> dict[str, Any]:
    """The fields of a PDF's document information dictionary (see the module docstring); ``{}`` for none.

    Raises:
        whatever PyMuPDF raises for a file it cannot open.
    """
    import pymupdf

    with pymupdf.open(str(path)) as doc:
        info = doc.metadata or {}
    out: dict[str, Any] = {}
    if (info.get("title") or "").strip():
        out["title"] = info["title"].strip()
    authors = [a.strip() for a in (info.get("author") or "").split(";") if a.strip()]
    if authors:
        out["authors"] = authors
    m = _PDF_DATE.match(info.get("creationDate") or "")
    if m:
        out["year"] = int(m.group(1))
        if m.group(3):
            out["date"] = f"{m.group(1)}-{m.group(2)}-{m.group(3)}"
    return out


def parser_fields(parsed: ParsedDocument) -> tuple[dict[str, Any], dict[str, str]]:
    """``(fields, source per field)`` of the ``parser`` extractor (see the module docstring)."""
    fields: dict[str, Any] = {}
    if parsed.source_path and parsed.source_path.lower().endswith(".pdf"):
        fields = pdf_info(parsed.source_path)
    source = {k: "pdf_info" for k in fields}
    if "title" not in fields:
        heads = [b for b in parsed.blocks if b.kind == "heading" and b.text.strip()]
        if heads:
            top = min(b.level or 99 for b in heads)
            fields["title"] = next(b for b in heads if (b.level or 99) == top).text.strip()
            source["title"] = "first_heading"
    return fields, source
