"""Where a report's items come from and where it may be written: per-item content hashes (the gate pairs items by
id *and* content, so an edited document or question is never compared with its old self), and the rule that
``--out`` only ever replaces an ingestaudit report folder."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

REPORT_FILES = ("report.json", "report.md", "report.html", "timings.json", "measurements.parquet")
"""The files ``ingestaudit run`` writes into ``--out``."""


class OutFolderError(Exception):
    """``--out`` names a folder that ingestaudit must not write into; the message says why and what to do."""


def _file_digest(path: Path | None, h: "hashlib._Hash") -> None:
    if path is None:
        h.update(b"-\0")
        return
    try:
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError as exc:
        h.update(f"unreadable:{exc.errno}".encode())
    h.update(b"\0")


def item_hashes(corpus: Any) -> dict[str, str]:
    """SHA-256 (hex) per item of a discovered `ingestaudit.corpus.Corpus`.

    A document's hash covers its source file and every truth file (text, JSON, PAGE/ALTO/tables), each preceded by
    its kind, so a relabelled document counts as changed. A question's hash is that of its JSON object (keys
    sorted) in ``questions.jsonl``; lines that are not JSON objects with a string ``id`` are left out (the run
    lists them as problems).
    """
    out: dict[str, str] = {}
    for doc in corpus.documents:
        h = hashlib.sha256()
        for kind, path in (("doc", doc.path), ("txt", doc.truth_txt), ("json", doc.truth_json),
                           *(("extra", p) for p in doc.truth_extra)):
            h.update(kind.encode() + b"\0")
            _file_digest(path, h)
        out[doc.doc_id] = h.hexdigest()
    if getattr(corpus, "questions", None) is not None:
        try:
            lines = corpus.questions.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            lines = []
        for line in lines:
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and isinstance(obj.get("id"), str) and obj["id"] not in out:
                text = json.dumps(obj, sort_keys=True, ensure_ascii=True)
                out[obj["id"]] = hashlib.sha256(b"question\0" + text.encode()).hexdigest()
    return dict(sorted(out.items()))


def check_out_folder(out: Path, fingerprint: str | None = None) -> str:
    """Refuse an ``--out`` folder that holds anything but an ingestaudit report; return a warning (``""`` if none)
    when it holds the report of a different corpus (``fingerprint`` differs), which the run will replace.

    A folder is an ingestaudit report folder when it is absent or empty, or when its ``report.json`` is a JSON
    object with ``tool.name == "ingestaudit"``; its other entries must be files `REPORT_FILES` lists or hidden
    files (the temporary files of an interrupted write).

    Raises:
        OutFolderError: ``out`` is a file, or a folder of other files.
    """
    if not out.exists():
        return ""
    if not out.is_dir():
        raise OutFolderError(f"--out {out}: exists and is not a folder")
    entries = sorted(p.name for p in out.iterdir())
    if not entries:
        return ""
    report = out / "report.json"
    raw: Any = None
    if report.is_file():
        try:
            raw = json.loads(report.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            raw = None
    is_report = isinstance(raw, dict) and isinstance(raw.get("tool"), dict) and raw["tool"].get("name") == "ingestaudit"
    foreign = [e for e in entries if e not in REPORT_FILES and not e.startswith(".")]
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
