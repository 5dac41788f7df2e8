"""Import dinglehopper's OCR test data (qurator-spk/dinglehopper, ``src/dinglehopper/tests/data``) as a corpus.

Each ground-truth page (PAGE XML) becomes one document; the OCR results of that page (Tesseract, Calamari, as PAGE
XML or ALTO) become precomputed parser outputs, one parser per OCR engine, so ``ingestaudit run DEST --outputs
DEST/outputs`` reports CER/WER of every engine against the ground truth.

Documents (fixed table `PAGES`, paths relative to the source folder; every file must exist)::

    historical/actevedef_718448162_00000024   OCR-D GT page (German Fraktur print) vs Calamari and Tesseract
    historical/brochrnx_73075507X_00000139    OCR-D GT page vs Tesseract
    historical/test_page2018                  a real historical GT page vs ``fake-ocr``: a copy of that GT with two
                                              injected errors and one ligature spelled out (dinglehopper's test data,
                                              not a real OCR engine)
    scan/lorem-ipsum-scan                     GT of an image-only scanned PDF vs Tesseract (ALTO)
    scan/lorem-ipsum-scan-bad                 same text, degraded scan, vs Tesseract (ALTO)

Corpus written::

    docs/scan/<name>.pdf              symbolic link to the scanned PDF (image only: a text parser finds no text; OCR
                                      parsers such as ``tesseract`` can run on it)
    docs/historical/<name>.xml        no page image ships with the data, so the document placeholder is a link to
                                      the GT PAGE XML itself; the built-in parsers skip it (``skipped`` rows,
                                      unsupported format): audit these documents through ``--outputs``
    truth/<class>/<name>.page.xml     symbolic link to the GT PAGE XML (the reference text)
    outputs/<engine>-shipped/<class>/<name>.page.xml or .alto.xml   symbolic link to the engine's output
                                      (parsers ``calamari-shipped``, ``tesseract-shipped``, and ``fake-ocr``)

The summary's ``extra["published"]`` maps every pair of ``expected_cer_wer_dinglehopper-0.11.0.json`` and of
``expected_from_dinglehopper_tests.json`` (when present) to its document id and parser, with the published values.
Not imported (noted): ``line_dirs/`` (line-level text files, not pages).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingestaudit.importers import (
    ImportSummary,
    SourceLayoutError,
    Unsupported,
    class_counts,
    finish,
    require_dir,
    require_file,
    staged_corpus,
)

KIND = "dinglehopper"
PUBLISHED = "expected_cer_wer_dinglehopper-0.11.0.json"
UPSTREAM_TESTS = "expected_from_dinglehopper_tests.json"


@dataclass(frozen=True)
class Page:
    """One ground-truth page and its OCR results.

    Attributes:
        doc_class, name: the document id is ``<doc_class>/<name>``.
        gt: the GT PAGE XML, relative to the source folder.
        scan: the scanned PDF of the page (relative), or None when the data set has no image of it.
        ocr: engine name (the parser name in the report) -> OCR output file (relative).
    """

    doc_class: str
    name: str
    gt: str
    scan: str | None
    ocr: tuple[tuple[str, str], ...]

    @property
    def doc_id(self) -> str:
        """``<doc_class>/<name>``."""
        return f"{self.doc_class}/{self.name}"


PAGES: tuple[Page, ...] = (
    Page("historical", "actevedef_718448162_00000024", "actevedef_718448162/OCR-D-GT-PAGE/00000024.page.xml", None,
         (("calamari-shipped", "actevedef_718448162/OCR-D-OCR-CALAMARI/OCR-D-OCR-CALAMARI_0001.xml"),
          ("tesseract-shipped", "actevedef_718448162/OCR-D-OCR-TESS/OCR-D-OCR-TESS_0001.xml"))),
    Page("historical", "brochrnx_73075507X_00000139", "brochrnx_73075507X/00000139.gt.page.xml", None,
         (("tesseract-shipped", "brochrnx_73075507X/00000139.ocrd-tess.ocr.page.xml"),)),
    Page("historical", "test_page2018", "test-gt.page2018.xml", None,
         (("fake-ocr", "test-fake-ocr.page2018.xml"),)),
    Page("scan", "lorem-ipsum-scan", "lorem-ipsum/lorem-ipsum-scan.gt.page.xml", "lorem-ipsum/lorem-ipsum-scan.pdf",
         (("tesseract-shipped", "lorem-ipsum/lorem-ipsum-scan.ocr.tesseract.alto.xml"),)),
    Page("scan", "lorem-ipsum-scan-bad", "lorem-ipsum/lorem-ipsum-scan-bad.gt.page.xml",
         "lorem-ipsum/lorem-ipsum-scan-bad.pdf",
         (("tesseract-shipped", "lorem-ipsum/lorem-ipsum-scan-bad.ocr.tesseract.alto.xml"),)),
)
"""The pages imported. A parser is named after the engine that wrote the output, with ``-shipped`` (the output ships
with the data set), so that it never collides with ingestaudit's own ``tesseract`` parser: ``ingestaudit run DEST
--parser tesseract --outputs DEST/outputs`` compares a fresh Tesseract run with the shipped one."""


def ocr_format(path: Path) -> str:
    """``"page"`` or ``"alto"`` from the XML root element's local name (``PcGts`` / ``alto``).

    Raises:
        SourceLayoutError: not well-formed XML, or neither PAGE nor ALTO (the file is named).
    """
    from lxml import etree

    try:
        root = etree.parse(str(path)).getroot()
    except (etree.XMLSyntaxError, OSError) as exc:
        raise SourceLayoutError(f"{path}: not readable XML ({exc})") from None
    local = etree.QName(root).localname
    if local == "PcGts":
        return "page"
    if local.lower() == "alto":
        return "alto"
    raise SourceLayoutError(f"{path}: root element <{local}> is neither PAGE XML (PcGts) nor ALTO (alto)")


def _published(src: Path, by_pair: dict[tuple[str, str], tuple[str, str]]
               ) -> tuple[dict[str, Any], list[Unsupported], list[str]]:
    """Published values per pair key (with the pair's document id and parser), pairs not matched, and notes."""
    out: dict[str, Any] = {}
    unmatched: list[Unsupported] = []
    notes: list[str] = []
    path = src / PUBLISHED
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise SourceLayoutError(f"{path}: invalid JSON ({exc.msg})") from None
        for key, value in data.items():
            if key.startswith("_") or not isinstance(value, dict):
                continue
            gt = str(value.get("gt", "")).removeprefix("dinglehopper/")
            ocr = str(value.get("ocr", "")).removeprefix("dinglehopper/")
            match = by_pair.get((gt, ocr))
            if match is None:
                unmatched.append(Unsupported(key, "published_pair", f"{gt} vs {ocr} is not among the imported pages",
                                             PUBLISHED))
                continue
            out[key] = {"doc_id": match[0], "parser": match[1], "source": PUBLISHED,
                        **{k: v for k, v in value.items() if k not in ("gt", "ocr")}}
    else:
        notes.append(f"{PUBLISHED} not found: no published values recorded")
    path = src / UPSTREAM_TESTS
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise SourceLayoutError(f"{path}: invalid JSON ({exc.msg})") from None
        for key, value in data.items():
            gt, sep, ocr = key.partition(" vs ")
            match = by_pair.get((gt.strip(), ocr.strip())) if sep else None
            if match is not None and isinstance(value, dict):
                out[key] = {"doc_id": match[0], "parser": match[1], "source": UPSTREAM_TESTS, **value}
    return dict(sorted(out.items())), unmatched, notes


def import_dinglehopper(src: Path, dest: Path) -> ImportSummary:
    """Build a corpus from dinglehopper's test data at ``src`` into ``dest`` (see the module docstring).

    Args:
        src: the folder holding dinglehopper's ``tests/data`` files (as in ``../shared/data/dinglehopper``).
        dest: the corpus folder to create (absent or empty).

    Returns:
        `ImportSummary`; ``outputs`` counts the OCR outputs per engine; ``extra["published"]`` holds the published
        CER/WER of each pair with its document id and parser; ``extra["pairs"]`` maps ``doc_id -> {parser: source
        file}``.

    Raises:
        SourceLayoutError: a file of `PAGES` is missing or an OCR file is neither PAGE XML nor ALTO (named).
        DestinationNotEmpty: ``dest`` exists and is not empty.
    """
    src = Path(src).absolute()
    require_dir(src, "dinglehopper test data")
    plan: list[tuple[Page, Path, Path | None, list[tuple[str, Path, str]]]] = []
    for page in PAGES:
        gt = require_file(src / page.gt, f"the ground-truth PAGE XML of {page.doc_id}")
        if ocr_format(gt) != "page":
            raise SourceLayoutError(f"{gt}: the ground truth of {page.doc_id} must be PAGE XML")
        scan = require_file(src / page.scan, f"the scanned PDF of {page.doc_id}") if page.scan else None
        outs = []
        for engine, rel in page.ocr:
            path = require_file(src / rel, f"the {engine} output of {page.doc_id}")
            outs.append((engine, path, ocr_format(path)))
        plan.append((page, gt, scan, outs))

    by_pair = {(p.gt, rel): (p.doc_id, engine) for p in PAGES for engine, rel in p.ocr}
    published, unmatched, notes = _published(src, by_pair)
    if (src / "line_dirs").is_dir():
        notes.append("line_dirs/ not imported: line-level text files, not pages")
    notes.append("historical/* documents have no page image in the data set: docs/ holds a link to the GT PAGE XML "
                 "as a placeholder; audit them with --outputs only")
    notes.append("fake-ocr is dinglehopper's test copy of the GT with injected errors, not a real OCR engine")

    outputs: dict[str, int] = {}
    pairs: dict[str, dict[str, str]] = {}
    with staged_corpus(dest) as w:
        for page, gt, scan, outs in plan:
            if scan is not None:
                w.link(f"docs/{page.doc_id}.pdf", scan)
            else:
                w.link(f"docs/{page.doc_id}.xml", gt)
            w.link(f"truth/{page.doc_id}.page.xml", gt)
            for engine, path, fmt in outs:
                w.link(f"outputs/{engine}/{page.doc_id}.{fmt}.xml", path)
                outputs[engine] = outputs.get(engine, 0) + 1
                pairs.setdefault(page.doc_id, {})[engine] = path.relative_to(src).as_posix()
        notes += w.copy_notes()
        doc_ids = sorted(p.doc_id for p in PAGES)
        summary = ImportSummary(
            kind=KIND, source=str(src), dest=str(Path(dest).absolute()), documents=tuple(doc_ids),
            classes=class_counts(doc_ids), truth_files=len(PAGES), outputs=dict(sorted(outputs.items())),
            imported={"reference_pages": len(PAGES), "ocr_outputs": sum(outputs.values())},
            unsupported=tuple(unmatched),
            notes=tuple(notes), extra={"pairs": pairs, "published": published})
        finish(w, summary)
    return summary
