"""Import olmOCR-Bench (allenai/olmocr, ``olmocr/bench``; its ``sample_data`` or the full bench) as a corpus.

Source layout (as in the olmocr repository's ``bench/sample_data``)::

    SRC/pdfs/**/<name>.pdf            the test documents (one page each in the bench; more are accepted)
    SRC/*.jsonl                       unit tests, one JSON object per line (blank lines allowed)
    SRC/olmocr_pipeline/<stem>_pg<P>_repeat<R>.md   optional: olmOCR's own Markdown output per page

Corpus written (one class, ``olmocr``: the sample mixes kinds without a kind field, so no class split is invented)::

    docs/olmocr/<name>.pdf            symbolic link to the PDF (nested folders under pdfs/ stay in the name)
    truth/olmocr/<name>.json          {"checks": [...]} in test-file order, for documents with at least one check
    outputs/olmocr/olmocr/<name>.md   olmOCR's Markdown of a single-page document (a link)
    outputs/olmocr/olmocr/<name>.json ... of a multi-page document: ``{"pages": [<page 1 Markdown>, ...]}`` (the
                                      precomputed parser joins the pages with a blank line)

Test translation (olmOCR ``olmocr/bench/tests.py`` semantics, commit f7cfe4c of the sample):

* ``present`` / ``absent`` with ``text`` -> `TextCheck` (``max_diffs`` kept, default 0);
* ``order`` with ``before`` / ``after`` -> `OrderCheck` (``max_diffs`` kept);
* not expressible in the truth schema, listed in `ImportSummary.unsupported` with the reason: ``table`` (cell
  neighbour relations), ``math`` (KaTeX-rendered formula matching), ``baseline`` (output length / repetition limits),
  ``format``, ``footnote``, any other type; ``present``/``absent`` with ``case_sensitive: false`` or a
  ``first_n``/``last_n`` window; tests marked ``checked: "rejected"``; tests with keys this importer does not know
  (their meaning could change the result); tests whose page is outside the PDF; invalid fields (empty text, negative
  ``max_diffs``).

Differences from olmOCR's scoring that remain (stated in the summary notes): olmOCR scores ``present``/``absent`` with
``rapidfuzz.fuzz.partial_ratio >= 1 - max_diffs/len(text)`` and ``order`` with ``fuzzysearch`` (Levenshtein distance
<= ``max_diffs``), both after its own text normalisation; ingestaudit's extraction auditor applies its own definition
of "within ``max_diffs`` edits" and normalisation profile. A test of page P of a multi-page PDF is checked against the
whole document's text here (olmOCR checks that page only).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ingestaudit.importers import (
    ImportSummary,
    SourceLayoutError,
    Unsupported,
    class_counts,
    finish,
    require_dir,
    staged_corpus,
)
from ingestaudit.truth import OrderCheck, TextCheck

KIND = "olmocr-bench"
DOC_CLASS = "olmocr"
PARSER = "olmocr"
PIPELINE_DIR = "olmocr_pipeline"

_COMMON_KEYS = frozenset({"pdf", "page", "id", "type", "max_diffs", "checked", "url"})
_TEXT_KEYS = _COMMON_KEYS | {"text", "case_sensitive", "first_n", "last_n"}
_ORDER_KEYS = _COMMON_KEYS | {"before", "after"}
_WHY_NOT = {
    "table": "table cell-neighbour relations (up/down/left/right/headings) have no equivalent in the truth schema",
    "math": "formula matching by KaTeX rendering has no equivalent in the truth schema",
    "baseline": "output length and repetition limits have no equivalent in the truth schema",
    "format": "heading/bold/italic formatting tests have no equivalent in the truth schema",
    "footnote": "footnote marker tests have no equivalent in the truth schema",
}
_PIPELINE_NAME = re.compile(r"^(?P<stem>.+)_pg(?P<page>\d+)_repeat(?P<repeat>\d+)\.md$")


def _page_count(pdf: Path) -> int | None:
    """Number of pages of ``pdf`` (PyMuPDF), or None when it cannot be opened."""
    import pymupdf

    try:
        with pymupdf.open(pdf) as doc:
            return doc.page_count
    except Exception:  # a damaged PDF is still imported: auditing it is the parsers' business
        return None


def _read_tests(src: Path) -> list[tuple[str, dict[str, Any]]]:
    """Every test of every top-level ``*.jsonl`` (sorted by file name, then line), with ``file:line``.

    Raises:
        SourceLayoutError: no ``*.jsonl`` file, invalid JSON, a line that is not an object or lacks ``pdf``/``id``/
            ``type``, or a duplicate test id (each naming the file and line).
    """
    files = sorted(src.glob("*.jsonl"))
    if not files:
        raise SourceLayoutError(f"{src}: expected olmOCR-Bench test files *.jsonl (none found)")
    tests: list[tuple[str, dict[str, Any]]] = []
    seen: dict[str, str] = {}
    for f in files:
        for lineno, line in enumerate(f.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{f.name}:{lineno}"
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SourceLayoutError(f"{f}:{lineno}: invalid JSON ({exc.msg})") from None
            if not isinstance(data, dict):
                raise SourceLayoutError(f"{f}:{lineno}: a test must be a JSON object")
            for key in ("pdf", "id", "type"):
                if not isinstance(data.get(key), str) or not data[key]:
                    raise SourceLayoutError(f"{f}:{lineno}: test without a {key!r} string")
            if data["id"] in seen:
                raise SourceLayoutError(f"{f}:{lineno}: duplicate test id {data['id']!r} (first at {seen[data['id']]})")
            seen[data["id"]] = where
            tests.append((where, data))
    return tests


def _translate(test: dict[str, Any], n_pages: int | None) -> tuple[dict[str, Any] | None, str]:
    """The truth-schema check for one olmOCR test, or ``(None, reason)`` when it cannot be expressed."""
    ttype = test["type"]
    if ttype in ("present", "absent"):
        allowed = _TEXT_KEYS
    elif ttype == "order":
        allowed = _ORDER_KEYS
    else:
        return None, _WHY_NOT.get(ttype, f"test type {ttype!r} has no equivalent in the truth schema")
    unknown = sorted(set(test) - allowed)
    if unknown:
        return None, f"unknown key(s) {', '.join(unknown)}: their meaning could change the result"
    if test.get("checked") == "rejected":
        return None, "rejected in the data set's human review (checked: rejected)"
    page = test.get("page", 1)
    if not isinstance(page, int) or page < 1 or (n_pages is not None and page > n_pages):
        return None, f"page {page!r} is not a page of the PDF ({n_pages} page(s))"
    if ttype in ("present", "absent"):
        if test.get("case_sensitive", True) is not True:
            return None, "case_sensitive: false (case-insensitive matching) has no equivalent in the truth schema"
        if test.get("first_n") is not None or test.get("last_n") is not None:
            return None, "first_n/last_n (match only within the first/last N characters) has no equivalent"
        raw: dict[str, Any] = {"type": ttype, "text": test.get("text"), "max_diffs": test.get("max_diffs", 0)}
        model: type = TextCheck
        texts = [raw["text"]]
    else:
        raw = {"type": "order", "before": test.get("before"), "after": test.get("after"),
               "max_diffs": test.get("max_diffs", 0)}
        model = OrderCheck
        texts = [raw["before"], raw["after"]]
    if any(isinstance(t, str) and not t.strip() for t in texts):
        return None, "empty search text"
    try:
        check = model.model_validate(raw)
    except ValidationError as exc:
        return None, "invalid test: " + "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
    return check.model_dump(mode="json"), ""


def _pipeline_outputs(folder: Path, stems: dict[str, str]) -> tuple[dict[str, dict[int, Path]], list[str]]:
    """olmOCR Markdown files per document name and page (lowest repeat kept), and notes on files not used."""
    found: dict[str, dict[int, tuple[int, Path]]] = {}
    notes: list[str] = []
    unmatched: list[str] = []
    extra_repeats = 0
    for path in sorted(folder.glob("*.md")):
        m = _PIPELINE_NAME.match(path.name)
        if m is None or m["stem"] not in stems:
            unmatched.append(path.name)
            continue
        name, page, repeat = stems[m["stem"]], int(m["page"]), int(m["repeat"])
        pages = found.setdefault(name, {})
        if page in pages:
            extra_repeats += 1
            if repeat >= pages[page][0]:
                continue
        pages[page] = (repeat, path)
    if unmatched:
        notes.append(f"{PIPELINE_DIR}: {len(unmatched)} file(s) match no PDF and were not imported: "
                     + ", ".join(unmatched))
    if extra_repeats:
        notes.append(f"{PIPELINE_DIR}: {extra_repeats} extra repeat(s) ignored (the lowest repeat number is used)")
    return {n: {p: v[1] for p, v in pages.items()} for n, pages in found.items()}, notes


def import_olmocr_bench(src: Path, dest: Path) -> ImportSummary:
    """Build a corpus from olmOCR-Bench data at ``src`` into ``dest`` (see the module docstring for the mapping).

    Args:
        src: the bench folder (``pdfs/``, ``*.jsonl``, optional ``olmocr_pipeline/``).
        dest: the corpus folder to create (absent or empty).

    Returns:
        `ImportSummary`; ``imported`` counts the checks per type, ``unsupported`` lists every test not imported.

    Raises:
        SourceLayoutError: ``src/pdfs`` missing or without PDFs, no ``*.jsonl``, a malformed test line, or a test
            naming a PDF that is not under ``pdfs/`` (the file and line are named).
        DestinationNotEmpty: ``dest`` exists and is not empty.
    """
    src = Path(src).absolute()
    pdf_dir = require_dir(src / "pdfs", "olmOCR-Bench PDFs under pdfs/")
    pdfs = {p.relative_to(pdf_dir).with_suffix("").as_posix(): p for p in sorted(pdf_dir.rglob("*.pdf"))}
    if not pdfs:
        raise SourceLayoutError(f"{pdf_dir}: no *.pdf files")
    tests = _read_tests(src)
    pages = {name: _page_count(path) for name, path in pdfs.items()}

    checks: dict[str, list[dict[str, Any]]] = {name: [] for name in pdfs}
    check_ids: dict[str, list[str]] = {name: [] for name in pdfs}
    imported: dict[str, int] = {"present": 0, "absent": 0, "order": 0}
    unsupported: list[Unsupported] = []
    widened: list[str] = []
    for where, test in tests:
        name = test["pdf"][:-4] if test["pdf"].lower().endswith(".pdf") else test["pdf"]
        if name not in pdfs:
            raise SourceLayoutError(f"{src / where.split(':')[0]}:{where.split(':')[1]}: test {test['id']!r} names "
                                    f"{test['pdf']!r}, which is not under {pdf_dir}")
        check, reason = _translate(test, pages[name])
        if check is None:
            unsupported.append(Unsupported(test["id"], test["type"], reason, where))
            continue
        checks[name].append(check)
        check_ids[name].append(test["id"])
        imported[check["type"]] += 1
        if (pages[name] or 1) > 1:
            widened.append(test["id"])

    notes = [
        "present/absent/order keep olmOCR's max_diffs, but are scored by ingestaudit's extraction auditor "
        "(its normalization profile and edit tolerance), not by olmOCR's partial_ratio/fuzzysearch matching",
    ]
    if widened:
        notes.append(f"{len(widened)} page-specific test(s) of multi-page PDFs are checked against the whole "
                     f"document's text: {', '.join(widened)}")
    unknown_pages = sorted(n for n, p in pages.items() if p is None)
    if unknown_pages:
        notes.append("PDFs PyMuPDF could not open (page numbers not checked): " + ", ".join(unknown_pages))

    pipeline: dict[str, dict[int, Path]] = {}
    pipeline_dir = src / PIPELINE_DIR
    if pipeline_dir.is_dir():
        stems = {Path(name).name: name for name in pdfs}
        pipeline, pipe_notes = _pipeline_outputs(pipeline_dir, stems)
        notes += pipe_notes

    doc_ids = [f"{DOC_CLASS}/{name}" for name in pdfs]
    n_truth = 0
    n_outputs = 0
    incomplete: list[str] = []
    with staged_corpus(dest) as w:
        for name, pdf in pdfs.items():
            w.link(f"docs/{DOC_CLASS}/{name}.pdf", pdf)
            if checks[name]:
                w.json(f"truth/{DOC_CLASS}/{name}.json", {"checks": checks[name]})
                n_truth += 1
            got = pipeline.get(name)
            if not got:
                continue
            want = range(1, (pages[name] or max(got)) + 1)
            if any(p not in got for p in want):
                incomplete.append(name)
                continue
            rel = f"outputs/{PARSER}/{DOC_CLASS}/{name}"
            if len(want) == 1:
                w.link(rel + ".md", got[1])
            else:  # olmOCR writes one file per page: a precomputed JSON output with the pages in order
                w.json(rel + ".json", {"pages": [got[p].read_text(encoding="utf-8") for p in want]})
            n_outputs += 1
        if incomplete:
            notes.append(f"{PIPELINE_DIR}: pages missing for {', '.join(incomplete)}; no olmocr output written "
                         "for them (the report shows no_prediction)")
        notes += w.copy_notes()
        summary = ImportSummary(
            kind=KIND, source=str(src), dest=str(Path(dest).absolute()), documents=tuple(sorted(doc_ids)),
            classes=class_counts(doc_ids), truth_files=n_truth, outputs={PARSER: n_outputs} if n_outputs else {},
            imported=imported, unsupported=tuple(unsupported), notes=tuple(notes),
            extra={"check_ids": {f"{DOC_CLASS}/{n}": ids for n, ids in check_ids.items() if ids},
                   "pages": {f"{DOC_CLASS}/{n}": p for n, p in pages.items()}})
        finish(w, summary)
    return summary
