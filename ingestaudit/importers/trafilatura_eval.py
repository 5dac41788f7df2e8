"""Import trafilatura's evaluation data (adbar/trafilatura ``tests/evaldata.json`` + the archived pages) as a corpus.

Source layout (as in ``../shared/data/trafilatura-eval``, or a trafilatura checkout's ``tests/`` folder)::

    SRC/evaldata_subset.json, evaldata_full.json or evaldata.json   annotations, the first found in that order:
        {url: {"file": <page file name>, "with": [segments that must be in the main text],
               "without": [segments that must not be], ...metadata labels}}
    SRC/html/<file>, SRC/cache/<file> or SRC/eval/<file>             the archived HTML pages (first found)

Corpus written (one class, ``web``; one document per annotated page whose HTML is present)::

    docs/web/<file stem>.html       symbolic link to the page
    truth/web/<file stem>.json      {"boilerplate": {"with": [...], "without": [...]}}
    ingestaudit.toml                stages = ["boilerplate"], one pipeline per cleaner (unstructured parses)

The ``with``/``without`` segments are copied unchanged; the boilerplate auditor scores them as trafilatura's
evaluation does (whitespace-normalized substring, `ingestaudit.metrics.boilerplate.segment_counts`). The summary's
``extra["urls"]`` maps each document id to its page URL.

Not imported, each listed in the summary with its reason: annotations whose page is absent (the shared copy ships
60 of the 990 pages), and the metadata labels (``title``, ``author``, ``date``, ``description``, ``categories``,
``tags``, ``sitename``, ``license``, ``region``, ``comments``), which the truth schema has no place for.
A segment that trafilatura's own validation would reject (empty after whitespace normalization, or a ``without``
segment inside a ``with`` segment) is imported unchanged and named in the notes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ingestaudit.importers import (
    ImportSummary,
    SourceLayoutError,
    Unsupported,
    class_counts,
    finish,
    require_dir,
    staged_corpus,
)
from ingestaudit.metrics.boilerplate import normalize_segment

KIND = "trafilatura-eval"
DOC_CLASS = "web"
ANNOTATION_FILES = ("evaldata_subset.json", "evaldata_full.json", "evaldata.json")
"""Annotation files looked for, in order of preference (the first present is read)."""
PAGE_DIRS = ("html", "cache", "eval")
"""Folders searched for the pages, in order."""
CONFIG = """\
# Written by 'ingestaudit import trafilatura-eval': boilerplate removal on real web pages, end to end.
# One pipeline per cleaner (trafilatura on the raw HTML, none and unstructured on the parser's text), each
# named after its cleaner. Remove a pipeline to leave its cleaner out.
[run]
parsers = ["unstructured"]
stages = ["boilerplate"]
[pipelines.none]
parser = "unstructured"
cleaner = "none"
[pipelines.trafilatura]
parser = "unstructured"
cleaner = "trafilatura"
[pipelines.unstructured]
parser = "unstructured"
cleaner = "unstructured"
"""


def _annotations(src: Path) -> tuple[Path, dict[str, Any]]:
    for name in ANNOTATION_FILES:
        path = src / name
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise SourceLayoutError(f"{path}: not valid UTF-8 JSON ({exc})") from None
            if not isinstance(data, dict):
                raise SourceLayoutError(f"{path}: expected a JSON object {{url: annotation}}")
            return path, data
    raise SourceLayoutError(f"{src}: expected one of {', '.join(ANNOTATION_FILES)} (file missing)")


def _segments(item: dict[str, Any], key: str, url: str, source: str) -> list[str]:
    value = item.get(key, [])
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise SourceLayoutError(f"{source}: {url}: {key!r} must be a list of strings")
    return value


def import_trafilatura_eval(src: Path, dest: Path) -> ImportSummary:
    """Build a corpus from trafilatura's evaluation data at ``src`` into ``dest`` (see the module docstring).

    Args:
        src: folder with an annotation file (`ANNOTATION_FILES`) and the pages (`PAGE_DIRS`).
        dest: the corpus folder to create (absent or empty).

    Returns:
        `ImportSummary`; ``imported`` counts documents and ``with``/``without`` segments; ``extra["urls"]`` maps
        document id -> URL; ``extra["annotations"]`` names the annotation file read.

    Raises:
        SourceLayoutError: no annotation file, malformed annotations, no page folder, or two pages with one name.
        DestinationNotEmpty: ``dest`` exists and is not empty.
    """
    src = Path(src).absolute()
    require_dir(src, "trafilatura evaluation data")
    ann_path, data = _annotations(src)
    rel_ann = ann_path.name
    page_dirs = [src / d for d in PAGE_DIRS if (src / d).is_dir()]
    if not page_dirs:
        raise SourceLayoutError(f"{src}: expected a page folder ({', '.join(PAGE_DIRS)})")

    plan: list[tuple[str, str, Path, list[str], list[str]]] = []
    unsupported: list[Unsupported] = []
    suspicious: list[str] = []
    seen: dict[str, str] = {}
    for url, item in data.items():
        if not isinstance(item, dict) or not isinstance(item.get("file"), str) or not item["file"]:
            raise SourceLayoutError(f"{ann_path}: {url}: missing 'file'")
        name = item["file"]
        with_ = _segments(item, "with", url, rel_ann)
        without = _segments(item, "without", url, rel_ann)
        page = next((d / name for d in page_dirs if (d / name).is_file()), None)
        if page is None:
            unsupported.append(Unsupported(url, "page", f"HTML file {name} not found under "
                                           f"{', '.join(d.name for d in page_dirs)}", rel_ann))
            continue
        stem = Path(name).stem if Path(name).suffix.lower() in (".html", ".htm") else name
        doc_id = f"{DOC_CLASS}/{stem}"
        if doc_id in seen:
            raise SourceLayoutError(f"{ann_path}: pages {seen[doc_id]} and {url} both map to {doc_id}")
        seen[doc_id] = url
        for key in sorted(k for k in item if k not in ("file", "with", "without")):
            unsupported.append(Unsupported(url, f"metadata.{key}", "metadata extraction label: the truth schema "
                                           "has no field for it", rel_ann))
        withs = [normalize_segment(w) for w in with_]
        for seg in with_ + without:
            if not normalize_segment(seg):
                suspicious.append(f"{doc_id}: empty segment {seg!r} (not scored)")
        for seg in without:
            if normalize_segment(seg) and any(normalize_segment(seg) in w for w in withs):
                suspicious.append(f"{doc_id}: 'without' segment {seg[:50]!r} occurs inside a 'with' segment")
        plan.append((doc_id, url, page, with_, without))

    plan.sort(key=lambda p: p[0])
    notes = [f"annotations read from {rel_ann}; segments scored as in trafilatura's evaluation (whitespace-"
             "normalized substring)",
             "trafilatura reads the raw HTML (its numbers do not depend on the parser); none and unstructured clean "
             "the parser's text"]
    notes += suspicious
    with staged_corpus(dest) as w:
        for doc_id, _url, page, with_, without in plan:
            w.link(f"docs/{doc_id}{page.suffix.lower()}", page)
            w.json(f"truth/{doc_id}.json", {"boilerplate": {"with": with_, "without": without}})
        w.text("ingestaudit.toml", CONFIG)
        notes += w.copy_notes()
        doc_ids = [p[0] for p in plan]
        summary = ImportSummary(
            kind=KIND, source=str(src), dest=str(Path(dest).absolute()), documents=tuple(doc_ids),
            classes=class_counts(doc_ids), truth_files=len(plan), outputs={},
            imported={"documents": len(plan), "with_segments": sum(len(p[3]) for p in plan),
                      "without_segments": sum(len(p[4]) for p in plan)},
            unsupported=tuple(unsupported), notes=tuple(notes),
            extra={"annotations": rel_ann, "urls": {p[0]: p[1] for p in plan}})
        finish(w, summary)
    return summary
