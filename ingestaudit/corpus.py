"""Corpus discovery (DESIGN.md, "Corpus layout"): documents under ``docs/<class>/``, labels under ``truth/<class>/``.

The corpus is only read, never written. It is untrusted input (issue 15): a file whose resolved path leaves the corpus
(a symbolic link to ``/etc/passwd``, ``/proc/self/environ``...) and anything that is not a regular file (FIFO, socket,
device) is a problem named here and never read. Links into folders the user trusts are allowed: the ``link_roots``
argument of `discover`, and the folders listed in ``$INGESTAUDIT_LINK_ROOTS`` (separated by ``os.pathsep``), e.g.
the data set folder an ``ingestaudit import`` linked its documents to.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ingestaudit.document import Document
from ingestaudit.errors import IngestAuditError
from ingestaudit.inputs import LINK_ROOTS_ENV, allowed_link_roots, unsafe_reason  # noqa: F401 (LINK_ROOTS_ENV re-exported)
from ingestaudit.truth import Problem, over_size

if TYPE_CHECKING:
    from ingestaudit.config import Limits

TRUTH_TEXT = ".txt"
TRUTH_JSON = ".json"
TRUTH_EXTRA = (".page.xml", ".alto.xml", ".tables.html")  # PAGE XML / ALTO reference text, table HTML
QUESTIONS = "questions.jsonl"  # labelled questions at the corpus root (DESIGN.md, "Questions")


class CorpusError(IngestAuditError):
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
    _digests: dict = field(default_factory=dict, repr=False, compare=False)  # `content_digests`, by limits

    def classes(self) -> dict[str, int]:
        """Document count per folder class, sorted by class name."""
        counts: dict[str, int] = {}
        for d in self.documents:
            counts[d.doc_class] = counts.get(d.doc_class, 0) + 1
        return dict(sorted(counts.items()))

    def fingerprint(self, limits: "Limits | None" = None) -> str:
        """SHA-256 (hex) over the relative path and bytes of every document and truth file and ``questions.jsonl``,
        in sorted path order: per file, its path, the SHA-256 of each 1 MiB chunk, then ``\\1``. A file over its
        size limit (``limits``, default `Limits`: ``doc_bytes``, ``truth_bytes``, ``questions_bytes``) is never
        read: its size stands for its bytes (``over-limit:<size>``). Computed with the item hashes in one pass
        (`content_digests`)."""
        return self.content_digests(limits)[0]

    def over_limits(self, limits: "Limits | None" = None) -> dict[str, Problem]:
        """Documents whose source file is over ``limits.doc_bytes`` (default `Limits`), by id: the problem names the
        file, its size and the limit (``stat`` only; the file is never opened)."""
        from ingestaudit.config import Limits

        lim = limits or Limits()
        out = {}
        for d in self.documents:
            big = over_size(d.path, d.path.relative_to(self.root).as_posix() if d.path.is_relative_to(self.root)
                            else str(d.path), lim.doc_bytes, "doc_bytes")
            if big is not None:
                out[d.doc_id] = big
        return out

    def content_digests(self, limits: "Limits | None" = None) -> tuple[str, dict[str, str]]:
        """``(fingerprint, document hashes)``, reading each file once and no file over its size limit (see
        `fingerprint`; the document hashes are those of `ingestaudit.report.provenance.item_hashes`: per document
        one SHA-256 over each of its files' kind and bytes). Cached per ``limits`` on this object, so the run's
        fingerprint and the report's item hashes share one read of the corpus.

        Hashing runs in the calling (main) process, bounded by the size limits: an item's hash must exist whatever
        happened to its task (a timeout, a dead worker), and it must not depend on the executor.
        """
        from ingestaudit.config import Limits

        lim = limits or Limits()
        key = lim.model_dump_json()
        if key not in self._digests:
            self._digests[key] = _content_digests(self, lim)
        return self._digests[key]


def _read_chunks(path: Path, max_bytes: int, sinks: list) -> bytes:
    """Feed the bytes of ``path`` to every ``sink(chunk)`` in 1 MiB chunks and return the concatenated SHA-256 of
    the chunks (the fingerprint's share of the file). A file over ``max_bytes`` (by ``stat``) is not opened, and an
    unreadable one gives its errno: each feeds a token instead of its bytes."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            token = f"over-limit:{size}".encode()
            for sink in sinks:
                sink(token)
            return token
        digests = []
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                for sink in sinks:
                    sink(chunk)
                digests.append(hashlib.sha256(chunk).digest())
        return b"".join(digests)
    except OSError as exc:  # an unreadable file changes the hashes; its parser reports the error
        token = f"unreadable:{exc.errno}".encode()
        for sink in sinks:
            sink(token)
        return token


def _content_digests(corpus: Corpus, limits: "Limits") -> tuple[str, dict[str, str]]:
    """See `Corpus.content_digests`."""
    shares: dict[Path, bytes] = {}
    items: dict[str, str] = {}
    for doc in corpus.documents:
        h = hashlib.sha256()
        for kind, path in (("doc", doc.path), ("txt", doc.truth_txt), ("json", doc.truth_json),
                           *(("extra", p) for p in doc.truth_extra)):
            h.update(kind.encode() + b"\0")
            if path is None:
                h.update(b"-\0")
                continue
            cap = limits.doc_bytes if kind == "doc" else limits.truth_bytes
            shares[path] = _read_chunks(path, cap, [h.update])
            h.update(b"\0")
        items[doc.doc_id] = h.hexdigest()
    fp = hashlib.sha256()
    for path in corpus.files:
        fp.update(os.fsencode(path.relative_to(corpus.root)) + b"\0")  # any file name, even one not in UTF-8
        if path not in shares:  # questions.jsonl (and any file no document owns)
            cap = limits.questions_bytes if path == corpus.questions else limits.truth_bytes
            shares[path] = _read_chunks(path, cap, [])
        fp.update(shares[path])
        fp.update(b"\1")
    return fp.hexdigest(), items


def _visible_files(folder: Path, problems: list[Problem], root: Path, allowed: tuple[Path, ...] = ()) -> list[Path]:
    """Regular files under ``folder`` (hidden ones skipped), in path order; what cannot be audited is added to
    ``problems``. Folders are listed with ``os.scandir``, whose entries know their type: a regular file that is not
    a link, found by descending real folders from a folder that resolves to itself under the resolved ``root``,
    cannot resolve outside the corpus, so only links and special files go through `unsafe_reason` (a 10,000-document
    corpus has 30,000 files)."""
    if not folder.is_dir():
        return []
    direct = folder.resolve() == folder and folder.is_relative_to(root)  # no link above the files
    found: list[tuple[tuple[str, ...], Path, os.DirEntry]] = []  # (parts under folder, path, entry)
    todo: list[tuple[tuple[str, ...], Path]] = [((), folder)]
    while todo:
        parts, here = todo.pop()
        try:
            with os.scandir(here) as it:
                entries = list(it)
        except OSError:  # an unreadable folder: named below, as its own entry
            continue
        for e in entries:
            if e.name.startswith("."):
                continue  # hidden, with everything under it
            sub = (*parts, e.name)
            found.append((sub, here / e.name, e))
            if e.is_dir(follow_symlinks=False):
                todo.append((sub, here / e.name))
    found.sort(key=lambda f: f[0])  # the order of sorted(folder.rglob("*"))
    out = []
    top = folder.name
    for parts, p, e in found:
        rel = "/".join((top, *parts))
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            problems.append(Problem(os.fsencode(rel).decode("utf-8", "backslashreplace"), "",
                                    "file name is not valid UTF-8: rename it"))
            continue
        if e.is_symlink() and not p.exists():
            problems.append(Problem(rel, "", "broken symbolic link"))
        elif e.is_symlink() and p.is_dir():
            problems.append(Problem(rel, "", "linked folder is not followed: link its files instead"))
        elif e.is_dir(follow_symlinks=False):
            if not os.access(p, os.R_OK | os.X_OK):
                problems.append(Problem(rel, "", "folder cannot be read"))
        elif direct and e.is_file(follow_symlinks=False):  # a regular file, not a link: inside the corpus
            out.append(p)
        elif (why := unsafe_reason(p, root, allowed)) is not None:
            problems.append(Problem(rel, "", why))
        else:
            out.append(p)
    return out


def _truth_key(rel: str) -> tuple[str, str] | None:
    """Split a truth file's relative path into (doc id, kind) where kind is its truth suffix."""
    for suffix in TRUTH_EXTRA + (TRUTH_TEXT, TRUTH_JSON):
        if rel.endswith(suffix):
            return rel[: -len(suffix)], suffix
    return None


def discover(root: Path | str, *, link_roots: Iterable[Path | str] = ()) -> Corpus:
    """Find every document and its truth files under ``root``.

    The document id is ``docs/``-relative path without the extension (``<class>/<name>``; deeper folders stay in the
    id); the class is the first folder under ``docs/``. Files that `unsafe_reason` refuses (not regular files, or
    resolving outside the corpus and outside ``link_roots`` and ``$INGESTAUDIT_LINK_ROOTS``) are problems, left
    out of the corpus, never read.

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
    allowed = allowed_link_roots(link_roots)
    by_id: dict[str, Path] = {}
    for path in _visible_files(docs_dir, problems, root, allowed):
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
    for path in _visible_files(truth_dir, problems, root, allowed):
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
    if os.path.lexists(root / QUESTIONS) and (why := unsafe_reason(root / QUESTIONS, root, allowed)) is not None:
        problems.append(Problem(QUESTIONS, "", why))
        questions = None
    files = tuple(sorted([*by_id.values(), *truth_files, *([questions] if questions else [])]))
    return Corpus(root, tuple(documents), tuple(problems), files, questions)
