"""Corpus discovery (DESIGN.md, "Corpus layout"): documents under ``docs/<class>/``, labels under ``truth/<class>/``.

The corpus is only read, never written.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from ingestaudit.document import Document
from ingestaudit.truth import Problem

TRUTH_TEXT = ".txt"
TRUTH_JSON = ".json"
TRUTH_EXTRA = (".page.xml", ".alto.xml", ".tables.html")  # PAGE XML / ALTO reference text, table HTML
QUESTIONS = "questions.jsonl"  # labelled questions at the corpus root (DESIGN.md, "Questions")


class CorpusError(Exception):
    """The folder is not a corpus (no ``docs/``) or cannot be read: nothing can be audited (CLI exit 2)."""


@dataclass(frozen=True)
class Corpus:
    """A discovered corpus.

    Attributes:
        root: the corpus folder.
        documents: every document, sorted by id.
        problems: layout problems (orphan truth files, ambiguous ids...), each naming its file.
        files: every document and truth file (sorted), and ``questions.jsonl``: the input of `fingerprint`.
        questions: the corpus's ``questions.jsonl``, or None when it has none.
    """

    root: Path
    documents: tuple[Document, ...]
    problems: tuple[Problem, ...] = ()
    files: tuple[Path, ...] = field(default=(), repr=False)
    questions: Path | None = None

    def classes(self) -> dict[str, int]:
        """Document count per folder class, sorted by class name."""
        counts: dict[str, int] = {}
        for d in self.documents:
            counts[d.doc_class] = counts.get(d.doc_class, 0) + 1
        return dict(sorted(counts.items()))

    def fingerprint(self) -> str:
        """SHA-256 (hex) over the relative path and bytes of every document and truth file, in sorted path order."""
        h = hashlib.sha256()
        for path in self.files:
            h.update(os.fsencode(path.relative_to(self.root)) + b"\0")  # any file name, even one not in UTF-8
            try:
                with path.open("rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        h.update(hashlib.sha256(chunk).digest())
            except OSError as exc:  # an unreadable file changes the fingerprint; its parser reports the error
                h.update(f"unreadable:{exc.errno}".encode())
            h.update(b"\1")
        return h.hexdigest()


def _visible_files(folder: Path, problems: list[Problem]) -> list[Path]:
    """Regular files under ``folder`` (hidden ones skipped); what cannot be audited is added to ``problems``."""
    if not folder.is_dir():
        return []
    out = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder.parent).as_posix()
        if any(part.startswith(".") for part in p.relative_to(folder).parts):
            continue
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            problems.append(Problem(os.fsencode(p.relative_to(folder.parent)).decode("utf-8", "backslashreplace"),
                                    "", "file name is not valid UTF-8: rename it"))
            continue
        if p.is_symlink() and not p.exists():
            problems.append(Problem(rel, "", "broken symbolic link"))
        elif p.is_symlink() and p.is_dir():
            problems.append(Problem(rel, "", "linked folder is not followed: link its files instead"))
        elif p.is_dir() and not os.access(p, os.R_OK | os.X_OK):
            problems.append(Problem(rel, "", "folder cannot be read"))
        elif p.is_file():
            out.append(p)
    return out


def _truth_key(rel: str) -> tuple[str, str] | None:
    """Split a truth file's relative path into (doc id, kind) where kind is its truth suffix."""
    for suffix in TRUTH_EXTRA + (TRUTH_TEXT, TRUTH_JSON):
        if rel.endswith(suffix):
            return rel[: -len(suffix)], suffix
    return None


def discover(root: Path | str) -> Corpus:
    """Find every document and its truth files under ``root``.

    The document id is ``docs/``-relative path without the extension (``<class>/<name>``; deeper folders stay in the
    id); the class is the first folder under ``docs/``.

    Raises:
        CorpusError: ``root`` or ``root/docs`` is missing.
    """
    root = Path(root).resolve()
    docs_dir = root / "docs"
    if not root.is_dir():
        raise CorpusError(f"{root}: no such folder")
    if not docs_dir.is_dir():
        raise CorpusError(f"{root}: not a corpus (no docs/ folder); 'ingestaudit init {root}' writes the layout")
    problems: list[Problem] = []
    by_id: dict[str, Path] = {}
    for path in _visible_files(docs_dir, problems):
        rel = path.relative_to(docs_dir)
        if len(rel.parts) < 2:
            problems.append(Problem(f"docs/{rel.as_posix()}", "", "documents must sit in a class folder: docs/<class>/"))
            continue
        if rel.parts[0] == "__all__":
            problems.append(Problem(f"docs/{rel.as_posix()}", "", "'__all__' is reserved for the overall rows: "
                                    "rename the class folder"))
            continue
        doc_id = rel.with_suffix("").as_posix()
        if doc_id in by_id:
            problems.append(Problem(f"docs/{rel.as_posix()}", "",
                                    f"same document id {doc_id!r} as docs/{by_id[doc_id].relative_to(docs_dir).as_posix()}"))
            continue
        by_id[doc_id] = path

    truth_dir = root / "truth"
    truth: dict[str, dict[str, Path]] = {}
    truth_files: list[Path] = []
    for path in _visible_files(truth_dir, problems):
        rel = path.relative_to(truth_dir).as_posix()
        key = _truth_key(rel)
        if key is None:
            problems.append(Problem(f"truth/{rel}", "", "unknown truth file type (expected .txt, .json, "
                                    + ", ".join(TRUTH_EXTRA) + ")"))
            continue
        doc_id, kind = key
        if doc_id not in by_id:
            problems.append(Problem(f"truth/{rel}", "", f"no document docs/{doc_id}.* for this truth file"))
            continue
        truth.setdefault(doc_id, {})[kind] = path
        truth_files.append(path)

    documents = []
    for doc_id, path in sorted(by_id.items()):
        t = truth.get(doc_id, {})
        documents.append(Document(
            doc_id=doc_id, doc_class=doc_id.split("/", 1)[0], path=path,
            truth_txt=t.get(TRUTH_TEXT), truth_json=t.get(TRUTH_JSON),
            truth_extra=tuple(t[k] for k in TRUTH_EXTRA if k in t), corpus_root=root))
    questions = root / QUESTIONS if (root / QUESTIONS).is_file() else None
    files = tuple(sorted([*by_id.values(), *truth_files, *([questions] if questions else [])]))
    return Corpus(root, tuple(documents), tuple(problems), files, questions)
