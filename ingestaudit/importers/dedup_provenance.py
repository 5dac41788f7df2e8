"""Build a near-duplicate corpus with labelled duplicate groups from ``../shared/data``, by provenance only.

A duplicate group is a set of texts that come from the same source page or document; the group is decided by where
each text comes from (file names and data-set structure), never by comparing texts. Texts of different sources are
in different groups even when they look alike (that is what a false merge is). ``SRC`` is the shared data folder
(``../shared/data``) with the sub-folders named below; every text is written as a ``.txt`` document.

Groups (``dup_group`` in ``truth/<id>.json``) and documents, by class:

``ocr`` (dinglehopper, pages of `ingestaudit.importers.dinglehopper.PAGES`)
    One group per printed page: the ground-truth transcription (PAGE XML) and every OCR engine's output of that page
    (Calamari, Tesseract as PAGE XML / ALTO; dinglehopper's ``fake-ocr`` copy), each read with
    `ingestaudit.ocrxml.read_ocr_xml`. Ids ``ocr/<page>/gt`` and ``ocr/<page>/<engine>``. The two lorem-ipsum scans
    are one source (`SAME_SOURCE`): the same printed text, scanned twice (``-bad`` is the degraded scan), so their
    four texts form one group ``ocr:lorem-ipsum``.
``pdf`` (docling-pdf)
    One group per PDF: docling's frozen Markdown output (``groundtruth/<name>.md``) and the PDF's own text layer
    read with PyMuPDF (``page.get_text("text")`` of every page, joined by a blank line). Ids ``pdf/<name>/docling``
    and ``pdf/<name>/pymupdf``.
``olmocr`` (olmocr-bench-sample)
    One group per PDF page: olmOCR's Markdown of the page (``olmocr_pipeline/<stem>_pg<P>_repeat<R>.md``) and the
    page's text layer read with PyMuPDF. Ids ``olmocr/<stem>-p<P>/olmocr-r<R>`` and ``olmocr/<stem>-p<P>/pymupdf``.
    ``mathfuncs_colswitch.pdf`` is ``mathfuncs.pdf`` with its two columns switched (`SAME_SOURCE`): both pages form
    one group ``olmocr:mathfuncs-p1``.
``templated`` (presidio-synth, the first `PRESIDIO_RECORDS` records)
    Synthetic snippets generated from templates. A record whose template has no slot (no PII span) is a verbatim copy
    of its template: the copies of one template form one group ``presidio:template-<id>``. A record with filled slots
    carries its own fake names, numbers and addresses: it is unique (no group), even beside a sibling of the same
    template; these siblings are the hard negatives that differ only in the facts that matter. Ids
    ``templated/record-<index>``.
``sentences`` (lingua-testdata)
    The first `SENTENCES_PER_LANGUAGE` sentences of each language in `LANGUAGES`, each its own document: unique (no
    group). Ids ``sentences/<lang>-<line>``.
``synthetic`` (`ingestaudit.metrics.jaccard.near_duplicate_pairs`)
    Controlled near-duplicates: for each Jaccard level in `SYNTHETIC_LEVELS`, `SYNTHETIC_PAIRS` pairs whose word
    unigram sets (after ``str.split``) have exactly that Jaccard (union `SYNTHETIC_UNION` words, seed per level).
    Text ``b`` is generated from text ``a`` (a revision of it), so each pair is one group ``synthetic:<level>-<k>``.
    They populate every Jaccard bucket of the S-curve; their exact word Jaccard is listed in ``extra["synthetic"]``
    (a detector using other shingles measures its own Jaccard).
``blank``
    Texts that are empty or only white space after extraction (a scan without a text layer, a blank page, olmOCR's
    output of a blank page): no group, because an empty text carries no content to deduplicate. The detector must
    keep them out of LSH and list them as excluded.

The corpus also gets an ``ingestaudit.toml`` that runs the ``reference`` parser (the texts themselves, i.e. the
component-level number) through the ``dedup`` stage with a ``num_perm`` x ``threshold`` sweep and a missed-merge budget
(`CONFIG`), so ``ingestaudit run DEST`` runs the whole sweep in one command.
"""

from __future__ import annotations

import json
import re
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

KIND = "dedup-provenance"
PRESIDIO_FILE = "presidio-synth/synth_dataset_v2.first1000.json"
PRESIDIO_RECORDS = 150
LANGUAGES = ("de", "en", "es", "fr", "it")
SENTENCES_PER_LANGUAGE = 8
SYNTHETIC_LEVELS = ("0.5", "0.7", "0.8", "0.9")
SYNTHETIC_PAIRS = 5
SYNTHETIC_UNION = 200
SAME_SOURCE: dict[tuple[str, str], tuple[str, str]] = {
    ("dinglehopper", "lorem-ipsum-scan"): ("lorem-ipsum", "the same printed lorem-ipsum page, clean scan"),
    ("dinglehopper", "lorem-ipsum-scan-bad"): ("lorem-ipsum", "the same printed lorem-ipsum page, degraded scan "
                                                              "(dinglehopper's '-bad' variant)"),
    ("olmocr", "mathfuncs"): ("mathfuncs", "the math-functions page"),
    ("olmocr", "mathfuncs_colswitch"): ("mathfuncs", "the math-functions page with its two columns switched "
                                                     "(olmOCR-Bench's reading-order variant, tests 'mathfuncscol_*')"),
}
"""Sources that the data sets hold twice under different names: ``(data set, name) -> (source, evidence)``."""

CONFIG = """# Written by `ingestaudit import dedup-provenance`: the component-level dedup audit with a parameter sweep.
[run]
parsers = ["reference"]
stages = ["dedup"]

[auditor_options.dedup]
sweep_num_perm = "64,128,256"
sweep_thresholds = "0.3,0.4,0.5,0.6,0.7,0.8,0.9"
missed_merge_budget = 0.1
"""
"""The corpus's ``ingestaudit.toml``."""

_PIPELINE_NAME = re.compile(r"^(?P<stem>.+)_pg(?P<page>\d+)_repeat(?P<repeat>\d+)\.md$")


@dataclass(frozen=True)
class Text:
    """One document of the corpus.

    Attributes:
        doc_id: ``<class>/<source>/<variant>`` (or ``<class>/<name>``).
        text: the text written to ``docs/<doc_id>.txt`` and ``truth/<doc_id>.txt``.
        group: the ``dup_group``, or None for a unique document.
        origin: the source file(s) the text was read from, relative to ``SRC``, and how.
    """

    doc_id: str
    text: str
    group: str | None
    origin: str


def _pdf_pages(path: Path) -> list[str]:
    """Text layer of every page of ``path`` with PyMuPDF (``page.get_text("text")``).

    Raises:
        SourceLayoutError: the PDF does not open.
    """
    import pymupdf

    try:
        with pymupdf.open(path) as doc:
            return [page.get_text("text") for page in doc]
    except Exception as exc:
        raise SourceLayoutError(f"{path}: PyMuPDF cannot open it ({exc})") from None


def _source(dataset: str, name: str) -> str:
    return SAME_SOURCE.get((dataset, name), (name, ""))[0]


def _ocr_texts(src: Path) -> list[Text]:
    from ingestaudit.importers.dinglehopper import PAGES
    from ingestaudit.ocrxml import read_ocr_xml

    base = require_dir(src / "dinglehopper", "dinglehopper's test data")
    out = []
    for page in PAGES:
        group = f"ocr:{_source('dinglehopper', page.name)}"
        files = [("gt", page.gt)] + list(page.ocr)
        for variant, rel in files:
            path = require_file(base / rel, f"the {variant} text of {page.doc_id}")
            try:
                text = read_ocr_xml(path)
            except ValueError as exc:
                raise SourceLayoutError(str(exc)) from None
            out.append(Text(f"ocr/{page.name}/{variant}", text, group, f"dinglehopper/{rel} (read_ocr_xml)"))
    return out


def _docling_texts(src: Path) -> tuple[list[Text], list[Unsupported]]:
    base = require_dir(src / "docling-pdf", "docling's PDF test data")
    sources = require_dir(base / "sources", "docling's test PDFs")
    gt = require_dir(base / "groundtruth", "docling's frozen outputs")
    out: list[Text] = []
    unsupported: list[Unsupported] = []
    for pdf in sorted(sources.glob("*.pdf")):
        group = f"pdf:{pdf.stem}"
        out.append(Text(f"pdf/{pdf.stem}/pymupdf", "\n\n".join(_pdf_pages(pdf)), group,
                        f"docling-pdf/sources/{pdf.name} (PyMuPDF text of every page)"))
        md = gt / f"{pdf.stem}.md"
        if md.is_file():
            out.append(Text(f"pdf/{pdf.stem}/docling", md.read_text(encoding="utf-8"), group,
                            f"docling-pdf/groundtruth/{md.name}"))
    for md in sorted(gt.glob("*.md")):
        if not (sources / f"{md.stem}.pdf").is_file():
            unsupported.append(Unsupported(md.stem, "docling_output", "no PDF of that name: no provenance group",
                                           f"docling-pdf/groundtruth/{md.name}"))
    return out, unsupported


def _olmocr_texts(src: Path) -> tuple[list[Text], list[Unsupported]]:
    base = require_dir(src / "olmocr-bench-sample", "the olmOCR-Bench sample")
    pdfs = require_dir(base / "pdfs", "olmOCR-Bench PDFs")
    pipeline = require_dir(base / "olmocr_pipeline", "olmOCR's pipeline outputs")
    out: list[Text] = []
    unsupported: list[Unsupported] = []
    outputs: dict[tuple[str, int], list[tuple[int, Path]]] = {}
    for md in sorted(pipeline.glob("*.md")):
        m = _PIPELINE_NAME.match(md.name)
        if m is None or not (pdfs / f"{m['stem']}.pdf").is_file():
            unsupported.append(Unsupported(md.name, "olmocr_output", "file name does not name a PDF page of pdfs/",
                                           f"olmocr-bench-sample/olmocr_pipeline/{md.name}"))
            continue
        outputs.setdefault((m["stem"], int(m["page"])), []).append((int(m["repeat"]), md))
    for pdf in sorted(pdfs.glob("*.pdf")):
        for p, text in enumerate(_pdf_pages(pdf), start=1):
            group = f"olmocr:{_source('olmocr', pdf.stem)}-p{p}"
            out.append(Text(f"olmocr/{pdf.stem}-p{p}/pymupdf", text, group,
                            f"olmocr-bench-sample/pdfs/{pdf.name} page {p} (PyMuPDF text)"))
            for repeat, md in sorted(outputs.pop((pdf.stem, p), [])):
                out.append(Text(f"olmocr/{pdf.stem}-p{p}/olmocr-r{repeat}", md.read_text(encoding="utf-8"), group,
                                f"olmocr-bench-sample/olmocr_pipeline/{md.name}"))
    for (stem, page), mds in sorted(outputs.items()):
        for _, md in mds:
            unsupported.append(Unsupported(md.name, "olmocr_output", f"{stem}.pdf has no page {page}",
                                           f"olmocr-bench-sample/olmocr_pipeline/{md.name}"))
    return out, unsupported


def _presidio_texts(src: Path) -> tuple[list[Text], list[str]]:
    path = require_file(src / PRESIDIO_FILE, "presidio-research's synthetic PII snippets")
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SourceLayoutError(f"{path}: invalid JSON ({exc.msg})") from None
    if not isinstance(records, list) or len(records) < PRESIDIO_RECORDS:
        raise SourceLayoutError(f"{path}: expected a list of at least {PRESIDIO_RECORDS} records")
    out = []
    width = len(str(PRESIDIO_RECORDS - 1))
    for i, rec in enumerate(records[:PRESIDIO_RECORDS]):
        if not isinstance(rec, dict) or not isinstance(rec.get("full_text"), str) or "template_id" not in rec:
            raise SourceLayoutError(f"{path}: record {i} lacks 'full_text' or 'template_id'")
        slotless = not rec.get("spans")
        group = f"presidio:template-{rec['template_id']}" if slotless else None
        out.append(Text(f"templated/record-{i:0{width}d}", rec["full_text"], group,
                        f"{PRESIDIO_FILE} record {i} (template {rec['template_id']}, "
                        f"{'no slot: a copy of the template' if slotless else 'filled slots: unique'})"))
    texts = [t.text for t in out if t.group is None]
    notes = []
    if len(set(texts)) != len(texts):
        notes.append("presidio: some records with filled slots have the same text as another record; they stay "
                     "unique (different records), so merging them counts as a false merge")
    return out, notes


def _sentence_texts(src: Path) -> list[Text]:
    base = require_dir(src / "lingua-testdata" / "sentences", "lingua's test sentences")
    out = []
    for lang in LANGUAGES:
        path = require_file(base / f"{lang}.txt", f"lingua's {lang} sentences")
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        for n, line in enumerate(lines[:SENTENCES_PER_LANGUAGE], start=1):
            out.append(Text(f"sentences/{lang}-{n:02d}", line, None,
                            f"lingua-testdata/sentences/{lang}.txt non-empty line {n}"))
    return out


def _synthetic_texts() -> tuple[list[Text], list[dict[str, Any]]]:
    from fractions import Fraction

    from ingestaudit.metrics.jaccard import near_duplicate_pairs

    out: list[Text] = []
    facts = []
    for seed, level in enumerate(SYNTHETIC_LEVELS):
        pairs = near_duplicate_pairs(SYNTHETIC_PAIRS, Fraction(level), union_size=SYNTHETIC_UNION, n=1, seed=seed)
        for k, pair in enumerate(pairs, start=1):
            name = f"j{level}-{k:02d}"
            group = f"synthetic:{name}"
            for variant, text in (("a", pair.text_a), ("b", pair.text_b)):
                out.append(Text(f"synthetic/{name}/{variant}", text, group,
                                f"near_duplicate_pairs(n_pairs={SYNTHETIC_PAIRS}, jaccard={level}, "
                                f"union_size={SYNTHETIC_UNION}, n=1, seed={seed}) pair {k}"))
            facts.append({"a": f"synthetic/{name}/a", "b": f"synthetic/{name}/b", "shingles": "word 1-grams",
                          "intersection": pair.intersection, "union": pair.union,
                          "jaccard": float(pair.jaccard)})
    return out, facts


def provenance_texts(src: Path) -> tuple[list[Text], list[Unsupported], list[str], list[dict[str, Any]]]:
    """Every text of the corpus with its group (see the module docstring), without writing anything.

    Texts that are empty or only white space move to the ``blank`` class without a group.

    Returns:
        ``(texts sorted by id, unsupported source files, notes, synthetic pair facts)``.

    Raises:
        SourceLayoutError: a source folder or file is missing or malformed (named).
    """
    src = Path(src).absolute()
    texts = _ocr_texts(src)
    docling, unsupported = _docling_texts(src)
    olm, unsupported_olm = _olmocr_texts(src)
    presidio, notes = _presidio_texts(src)
    synthetic, facts = _synthetic_texts()
    texts += docling + olm + presidio + _sentence_texts(src) + synthetic
    out = []
    for t in texts:
        if t.text.strip():
            out.append(t)
        else:
            cls, rest = t.doc_id.split("/", 1)
            out.append(Text(f"blank/{cls}-{rest.replace('/', '-')}", t.text, None, t.origin + " (empty text)"))
    ids = [t.doc_id for t in out]
    if len(set(ids)) != len(ids):  # pragma: no cover - the naming scheme makes ids unique
        raise SourceLayoutError("two texts got the same document id")
    return sorted(out, key=lambda t: t.doc_id), unsupported + unsupported_olm, notes, facts


def import_dedup_provenance(src: Path, dest: Path) -> ImportSummary:
    """Build the labelled near-duplicate corpus at ``dest`` from the shared data folder ``src``.

    Writes ``docs/<id>.txt`` and ``truth/<id>.txt`` (the same text: the ``reference`` parser audits the texts
    themselves), ``truth/<id>.json`` = ``{"dup_group": ...}`` for grouped texts, ``ingestaudit.toml`` (`CONFIG`) and
    ``import.json``.

    Returns:
        `ImportSummary`; ``imported`` counts groups of 2 or more, groups of one member (a source with one usable
        text), grouped and unique (no group) documents, and gold duplicate pairs;
        ``extra["groups"]`` lists every group with its members; ``extra["synthetic"]`` the generated pairs with their
        exact word Jaccard; ``extra["origins"]`` maps each document to the file it was read from (as a list).

    Raises:
        SourceLayoutError: a source is missing or malformed (named).
        DestinationNotEmpty: ``dest`` exists and is not empty.
    """
    import pymupdf

    src = Path(src).absolute()
    require_dir(src, "the shared data folder (../shared/data)")
    texts, unsupported, notes, facts = provenance_texts(src)
    groups: dict[str, list[str]] = {}
    for t in texts:
        if t.group is not None:
            groups.setdefault(t.group, []).append(t.doc_id)
    gold_pairs = sum(len(m) * (len(m) - 1) // 2 for m in groups.values())
    notes = [
        "groups come from provenance only (same page / PDF / template / generated pair), never from text similarity; "
        "see the module docstring of ingestaudit.importers.dedup_provenance",
        "same source under two names: " + "; ".join(f"{ds} {name} -> {src_}: {why}"
                                                     for (ds, name), (src_, why) in SAME_SOURCE.items()),
        f"PyMuPDF {pymupdf.VersionBind} extracted the PDF text layers",
        "ingestaudit.toml runs the reference parser through the dedup stage with a num_perm x threshold sweep: "
        "'ingestaudit run DEST' runs it in one command",
        *notes,
    ]
    with staged_corpus(dest) as w:
        for t in texts:
            w.text(f"docs/{t.doc_id}.txt", t.text)
            w.text(f"truth/{t.doc_id}.txt", t.text)
            if t.group is not None:
                w.json(f"truth/{t.doc_id}.json", {"dup_group": t.group})
        w.text("ingestaudit.toml", CONFIG)
        doc_ids = [t.doc_id for t in texts]
        summary = ImportSummary(
            kind=KIND, source=str(src), dest=str(Path(dest).absolute()), documents=tuple(doc_ids),
            classes=class_counts(doc_ids), truth_files=len(texts) + sum(len(m) for m in groups.values()),
            outputs={},
            imported={"groups": sum(len(m) >= 2 for m in groups.values()),
                      "single_member_groups": sum(len(m) == 1 for m in groups.values()),
                      "grouped_docs": sum(len(m) for m in groups.values()),
                      "unique_docs": sum(t.group is None for t in texts), "gold_pairs": gold_pairs},
            unsupported=tuple(unsupported), notes=tuple(notes),
            extra={"groups": [{"group": g, "members": m} for g, m in sorted(groups.items())],
                   "synthetic": facts,
                   "origins": [{"doc_id": t.doc_id, "origin": t.origin} for t in texts]})
        finish(w, summary)
    return summary
