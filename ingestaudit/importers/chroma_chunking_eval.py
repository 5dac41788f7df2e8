"""Import Chroma's chunking evaluation data (brandonstarxel/chunking_evaluation) as a corpus with questions.

Source layout (as in ``../shared/data/chroma-chunking-eval``)::

    SRC/corpora/<corpus>.md     one plain-text/Markdown document per corpus, UTF-8
    SRC/questions_df.csv        columns question, references, corpus_id; references is a JSON list of
                                {"content": str, "start_index": int, "end_index": int}: code-point offsets (end
                                exclusive) into corpora/<corpus_id>.md

Corpus written (one class per corpus, each with one document)::

    docs/<corpus>/<corpus>.txt    symbolic link to corpora/<corpus>.md (read as plain text: the ``unstructured``
                                  and ``reference`` parsers read .txt; pymupdf does not)
    truth/<corpus>/<corpus>.txt   the corpus text, unchanged: the reference the evidence spans index
    truth/<corpus>/<corpus>.json  {"metadata": {"corpus": <corpus>}} (for retrieval filters)
    questions.jsonl               one question per CSV row: id ``chroma-<row>`` (0-based data row of the CSV), the
                                  question, and one span evidence item per reference
    ingestaudit.toml              parsers = ["reference", "unstructured"]

Every reference span is checked (``corpus[start_index:end_index] == content``) before anything is written; a single
mismatch, an unknown corpus or a malformed row fails the import (`SourceLayoutError`), nothing is dropped quietly.
Corpora that no question references are still imported (they are part of the retrieval haystack).

``max_questions`` (``--limit`` on the command line) keeps N questions: the first N rows, or, with ``seed``, a seeded
random sample of N rows (kept in CSV order, ids unchanged). The spans of every row are verified either way.

Chroma's own metrics differ from ingestaudit's: its recall is the share of reference *characters* covered by the
retrieved chunks, and its precision sums retrieved chunk lengths without a union. ingestaudit judges a chunk relevant
to a span when it holds ``min_span_coverage`` of the span's characters (DESIGN.md, "Questions"); the summary notes say
so, so numbers are not compared with the published ones by mistake.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from typing import Any

from ingestaudit.importers import (
    ImportSummary,
    SourceLayoutError,
    class_counts,
    finish,
    require_dir,
    require_file,
    staged_corpus,
)

KIND = "chroma-chunking-eval"
QUESTIONS_CSV = "questions_df.csv"
CORPORA_DIR = "corpora"
ID_PREFIX = "chroma-"
COLUMNS = ("question", "references", "corpus_id")
CONFIG = """\
# Written by 'ingestaudit import chroma-chunking-eval': retrieval questions over three plain-text corpora.
# The documents are .txt files: pymupdf (the default parser) does not read them; unstructured does, and the
# reference parser gives the parsing-free (component-level) numbers.
[run]
parsers = ["reference", "unstructured"]
"""


def _read_corpus(path: Path) -> str:
    """The corpus text exactly as stored (no newline translation): the offsets are code points of this text."""
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            text = fh.read()
    except UnicodeDecodeError as exc:
        raise SourceLayoutError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if text.startswith("\ufeff"):
        raise SourceLayoutError(f"{path}: starts with a byte-order mark; the reference offsets would be ambiguous")
    return text


def _read_rows(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise SourceLayoutError(f"{path}: missing column(s) {', '.join(missing)} "
                                        f"(found {', '.join(reader.fieldnames or [])})")
            return list(reader)
    except UnicodeDecodeError as exc:
        raise SourceLayoutError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise SourceLayoutError(f"{path}: malformed CSV ({exc})") from None


def _references(row: dict[str, str], where: str) -> list[dict[str, Any]]:
    try:
        refs = json.loads(row["references"])
    except (ValueError, TypeError) as exc:
        raise SourceLayoutError(f"{where}: 'references' is not JSON ({exc})") from None
    if not isinstance(refs, list) or not refs:
        raise SourceLayoutError(f"{where}: 'references' must be a non-empty JSON list")
    for k, ref in enumerate(refs):
        ok = (isinstance(ref, dict) and isinstance(ref.get("content"), str)
              and all(type(ref.get(key)) is int for key in ("start_index", "end_index")))
        if not ok:
            raise SourceLayoutError(f"{where}: references[{k}] must be {{content: str, start_index: int, "
                                    f"end_index: int}}, not {ref!r}"[:300])
    return refs


def import_chroma_chunking_eval(src: Path, dest: Path, limit: int | None = None, *,
                                max_questions: int | None = None, seed: int | None = None) -> ImportSummary:
    """Build a corpus from Chroma's chunking evaluation data at ``src`` into ``dest`` (see the module docstring).

    Args:
        src: folder with ``corpora/<corpus>.md`` and ``questions_df.csv``.
        dest: the corpus folder to create (absent or empty).
        limit: same as ``max_questions`` (the name the CLI's ``--limit`` passes).
        max_questions: keep at most this many questions (all by default).
        seed: with a limit, sample the kept rows at random with this seed instead of taking the first N.

    Returns:
        `ImportSummary`; ``imported`` counts documents, questions, evidence spans and multi-passage questions;
        ``extra["questions_per_class"]`` counts questions per corpus and ``extra["rows"]`` lists the CSV rows kept.

    Raises:
        SourceLayoutError: a missing file or column, a malformed row, a question on an unknown corpus, or a reference
            whose ``content`` differs from ``corpus[start_index:end_index]`` (every mismatch is named, up to 20).
        DestinationNotEmpty: ``dest`` exists and is not empty.
        ValueError: ``limit`` and ``max_questions`` disagree, or a limit below 1.
    """
    if limit is not None and max_questions is not None and limit != max_questions:
        raise ValueError(f"limit ({limit}) and max_questions ({max_questions}) disagree")
    n_max = max_questions if max_questions is not None else limit
    if n_max is not None and n_max < 1:
        raise ValueError(f"max_questions must be at least 1, not {n_max}")
    src = Path(src).absolute()
    require_dir(src, "Chroma chunking evaluation data")
    csv_path = require_file(src / QUESTIONS_CSV, "the questions (questions_df.csv)")
    corpora_dir = require_dir(src / CORPORA_DIR, "the corpora (corpora/<name>.md)")
    corpora = {p.stem: p for p in sorted(corpora_dir.glob("*.md")) if p.is_file()}
    if not corpora:
        raise SourceLayoutError(f"{corpora_dir}: no <corpus>.md file")
    bad_names = [n for n in corpora if not n or n.startswith(".") or n == "__all__" or "/" in n]
    if bad_names:
        raise SourceLayoutError(f"{corpora_dir}: corpus name(s) {bad_names} cannot be class names")
    texts = {name: _read_corpus(path) for name, path in corpora.items()}

    rows = _read_rows(csv_path)
    records: list[tuple[int, dict[str, Any]]] = []
    mismatches: list[str] = []
    for i, row in enumerate(rows):
        where = f"{csv_path.name} data row {i} (question {ID_PREFIX}{i})"
        question = (row.get("question") or "").strip()
        corpus_id = row.get("corpus_id") or ""
        if not question:
            raise SourceLayoutError(f"{where}: empty question")
        if corpus_id not in texts:
            raise SourceLayoutError(f"{where}: corpus_id {corpus_id!r} has no {CORPORA_DIR}/{corpus_id}.md "
                                    f"(known: {', '.join(texts)})")
        text = texts[corpus_id]
        doc_id = f"{corpus_id}/{corpus_id}"
        relevant = []
        for k, ref in enumerate(_references(row, where)):
            start, end, content = ref["start_index"], ref["end_index"], ref["content"]
            if not 0 <= start < end <= len(text):
                mismatches.append(f"{where}: references[{k}] [{start}, {end}) is empty or outside "
                                  f"{corpus_id}.md ({len(text)} code points)")
            elif text[start:end] != content:
                mismatches.append(f"{where}: references[{k}] content differs from {corpus_id}.md[{start}:{end}] "
                                  f"({text[start:end][:40]!r} vs {content[:40]!r})")
            relevant.append({"doc": doc_id, "start": start, "end": end})
        records.append((i, {"id": f"{ID_PREFIX}{i}", "question": row["question"], "relevant": relevant}))
    if mismatches:
        shown = "\n  ".join(mismatches[:20])
        more = f"\n  ... and {len(mismatches) - 20} more" if len(mismatches) > 20 else ""
        raise SourceLayoutError(f"{len(mismatches)} reference span(s) do not match their corpus text:\n  {shown}{more}")
    if not records:
        raise SourceLayoutError(f"{csv_path}: no question rows")

    total = len(records)
    if n_max is not None and n_max < total:
        if seed is None:
            records = records[:n_max]
        else:
            keep = set(random.Random(seed).sample(range(total), n_max))
            records = [r for r in records if r[0] in keep]

    doc_ids = sorted(f"{name}/{name}" for name in texts)
    per_class: dict[str, int] = {name: 0 for name in sorted(texts)}
    for _, rec in records:
        per_class[rec["relevant"][0]["doc"].split("/", 1)[0]] += 1
    n_spans = sum(len(rec["relevant"]) for _, rec in records)
    notes = [
        "offsets are Unicode code points into the corpus text (truth/<corpus>/<corpus>.txt), end exclusive; every "
        "reference span was checked against its content before writing",
        "documents are .txt: run with --parser reference and/or --parser unstructured (pymupdf does not read "
        "plain text); ingestaudit.toml in the corpus selects both",
        "Chroma's published recall/IoU are character-coverage measures over retrieved chunks; ingestaudit counts a "
        "chunk relevant when it holds min_span_coverage of a span, so the numbers are not the same quantity",
    ]
    if n_max is not None and n_max < total:
        how = f"a random sample (seed {seed})" if seed is not None else "the first rows"
        notes.append(f"{len(records)} of {total} questions kept ({how}); ids keep their CSV row number")
    with staged_corpus(dest) as w:
        for name in sorted(texts):
            w.link(f"docs/{name}/{name}.txt", corpora[name])
            w.text(f"truth/{name}/{name}.txt", texts[name])
            w.json(f"truth/{name}/{name}.json", {"metadata": {"corpus": name}})
        w.text("questions.jsonl", "".join(json.dumps(rec, ensure_ascii=False) + "\n" for _, rec in records))
        w.text("ingestaudit.toml", CONFIG)
        notes += w.copy_notes()
        summary = ImportSummary(
            kind=KIND, source=str(src), dest=str(Path(dest).absolute()), documents=tuple(doc_ids),
            classes=class_counts(doc_ids), truth_files=2 * len(doc_ids), outputs={},
            imported={"documents": len(doc_ids), "questions": len(records), "evidence_spans": n_spans,
                      "multi_passage_questions": sum(len(rec["relevant"]) > 1 for _, rec in records)},
            notes=tuple(notes),
            extra={"questions_per_class": per_class, "questions_in_source": total,
                   "rows": [i for i, _ in records]})
        finish(w, summary)
    return summary
