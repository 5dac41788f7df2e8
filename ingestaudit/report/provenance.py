"""Where a report's items come from and where it may be written: per-item content hashes (the gate pairs items by
id *and* content, so an edited document or question is never compared with its old self), and the rule that
``--out`` only ever replaces an ingestaudit report folder."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from ingestaudit.errors import IngestAuditError

REPORT_FILES = ("report.json", "report.md", "report.html", "timings.json", "measurements.parquet", "gate.json")
"""The files ``ingestaudit run`` writes into ``--out``."""

KEPT_VECTOR_FILE = re.compile(r"^vectors(-\d+(-questions)?\.npy|\.json|-keys\.parquet)$")
"""Names of the files ``ingestaudit run --keep-vectors`` adds to ``--out`` (`ingestaudit.kept_vectors`)."""


def is_report_file(name: str) -> bool:
    """True for a file name a report folder may hold: `REPORT_FILES`, or a kept-vector file."""
    return name in REPORT_FILES or bool(KEPT_VECTOR_FILE.match(name))


REPORT_DIRS = ("questions", "runs")
"""The folders ``ingestaudit run`` writes into ``--out`` (one file per pipeline: `ingestaudit.report.questions`)."""


def report_owned(target: Path, folder: Path) -> bool:
    """True when ``target`` (absolute) is, or would be, a file of the report folder ``folder``: one of its
    `is_report_file` names, or anything in its `REPORT_DIRS` (paths compared resolved)."""
    parent, root = Path(target).parent.resolve(), Path(folder).resolve()
    if parent == root:
        return is_report_file(Path(target).name)
    return parent.parent == root and parent.name in REPORT_DIRS

STAGING_PREFIX = ".ingestaudit-tmp-"
"""Name prefix of the staging folders `ingestaudit.io` writes a report into before renaming it into place (hidden, so
`check_out_folder` tolerates them)."""


class OutFolderError(IngestAuditError):
    """``--out`` names a folder that ingestaudit must not write into; the message says why and what to do."""


def item_hashes(corpus: Any, limits: Any = None) -> dict[str, str]:
    """SHA-256 (hex, its first `ingestaudit.report.schema.ITEM_HASH_DIGITS` digits) per item of a discovered
    `ingestaudit.corpus.Corpus`.

    A document's hash covers its source file and every truth file (text, JSON, PAGE/ALTO/tables), each preceded by
    its kind, so a relabelled document counts as changed; a file over its size limit (``limits``, an
    `ingestaudit.config.Limits`; default: the limits the run hashed the corpus with, else the defaults) is never
    read, its size stands for its bytes (`ingestaudit.corpus.Corpus.content_digests`, which the run's fingerprint
    shares). A question's hash is that of its JSON object (keys sorted) in ``questions.jsonl``; lines that are not
    JSON objects with a string ``id``, or that are past a limit (``questions_bytes``, ``question_line_chars``,
    ``json_depth``), are left out (the run lists them as problems). Never raises for a bad corpus file.
    """
    from ingestaudit.config import Limits
    from ingestaudit.jsonlimits import jsonl_lines, loads_limited

    if limits is None:
        cached = getattr(corpus, "_digests", None)
        limits = Limits.model_validate_json(next(iter(cached))) if cached else Limits()
    out = dict(corpus.content_digests(limits)[1])
    questions = getattr(corpus, "questions", None)
    lines: list[str] = []
    if questions is not None:
        try:
            if questions.stat().st_size <= limits.questions_bytes:
                lines = jsonl_lines(questions.read_text(encoding="utf-8"))  # as load_questions splits them
        except (OSError, UnicodeDecodeError):
            lines = []
    for line in lines:
        if len(line) > limits.question_line_chars or not line.strip():
            continue
        try:
            obj, past = loads_limited(line, max_depth=limits.json_depth)
        except (ValueError, RecursionError):
            continue
        if past:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("id"), str) and obj["id"] not in out:
            text = json.dumps(obj, sort_keys=True, ensure_ascii=True)
            out[obj["id"]] = hashlib.sha256(b"question\0" + text.encode()).hexdigest()
    from ingestaudit.report.schema import ITEM_HASH_DIGITS

    return {k: v[:ITEM_HASH_DIGITS] for k, v in sorted(out.items())}


def check_out_folder(out: Path, fingerprint: str | None = None) -> str:
    """Refuse an ``--out`` folder that holds anything but an ingestaudit report; return a warning (``""`` if none)
    when it holds the report of a different corpus (``fingerprint`` differs), which the run will replace.

    A folder is an ingestaudit report folder when it is absent or empty, or when its ``report.json`` is a JSON
    object with ``tool.name == "ingestaudit"``; its other entries must be files `REPORT_FILES` lists, folders
    `REPORT_DIRS` lists or hidden files (the temporary files of an interrupted write).

    Raises:
        OutFolderError: ``out`` is a file, or a folder of other files.
    """
    if not out.exists():
        return ""
    if not out.is_dir():
        raise OutFolderError(f"--out {out}: exists and is not a folder")
    entries = sorted(p.name for p in out.iterdir() if not p.name.startswith(STAGING_PREFIX))  # a run's own folders
    if not entries:
        return ""
    report = out / "report.json"
    raw: Any = None
    if report.is_file():
        from ingestaudit.inputs import InputFileError, read_input_text
        from ingestaudit.report.schema import REPORT_BYTES

        try:
            raw = json.loads(read_input_text(report, max_bytes=REPORT_BYTES, limit="REPORT_BYTES"))
        except (InputFileError, ValueError, RecursionError):
            raw = None
    is_report = isinstance(raw, dict) and isinstance(raw.get("tool"), dict) and raw["tool"].get("name") == "ingestaudit"
    foreign = [e for e in entries if not is_report_file(e) and not e.startswith(".")
               and not (e in REPORT_DIRS and (out / e).is_dir() and not (out / e).is_symlink())]
    if not is_report or foreign:
        shown = ", ".join(foreign[:3] or entries[:3]) + (" ..." if len(foreign or entries) > 3 else "")
        raise OutFolderError(f"--out {out}: not an ingestaudit report folder (holds {shown}); nothing was written. "
                             "Choose an empty or new folder")
    corpus = raw.get("corpus") if isinstance(raw.get("corpus"), dict) else {}
    old = corpus.get("fingerprint")
    if fingerprint is not None and old and old != fingerprint:
        return (f"--out {out}: replacing the report of a different corpus ({corpus.get('path', '?')}, fingerprint "
                f"{str(old)[:12]}; this corpus: {fingerprint[:12]})")
    return ""
