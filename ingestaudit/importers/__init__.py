"""Importers: build an ingestaudit corpus (DESIGN.md, "Corpus layout") from a public labelled data set.

Each importer is a function ``import_<kind>(src: Path, dest: Path) -> ImportSummary`` that reads the data set at
``src`` (never writing to it) and writes, at ``dest``:

* ``docs/<class>/<name>.<ext>``: the source documents, as symbolic links with an absolute target (the data is not
  copied; a copy is made only where the file system refuses symbolic links, and the summary says so);
* ``truth/<class>/<name>.json`` / ``.page.xml``: the labels, translated to the truth schema (`ingestaudit.truth`);
* ``outputs/<parser>/<doc id>.<ext>``: outputs of external pipelines shipped with the data set, for
  ``ingestaudit run DEST --outputs DEST/outputs``;
* ``import.json``: the `ImportSummary` (what was imported, what could not be expressed and why).

Nothing is silently dropped: a label the truth schema cannot express is listed in `ImportSummary.unsupported` with its
reason. ``dest`` must be absent or an empty folder; the corpus is built in a temporary sibling folder and moved into
place at the end, so a failed import leaves nothing behind.

Importers are looked up by kind with `get_importer` (lazy import: the CLI imports no importer until one is used).
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ingestaudit.errors import IngestAuditError

IMPORTERS: dict[str, str] = {
    "olmocr-bench": "ingestaudit.importers.olmocr_bench:import_olmocr_bench",
    "dinglehopper": "ingestaudit.importers.dinglehopper:import_dinglehopper",
    "docling": "ingestaudit.importers.docling:import_docling",
    "presidio-synth": "ingestaudit.importers.presidio_synth:import_presidio_synth",
    "conll2003": "ingestaudit.importers.conll2003:import_conll2003",
    "dedup-provenance": "ingestaudit.importers.dedup_provenance:import_dedup_provenance",
    "lingua-testdata": "ingestaudit.importers.lingua_testdata:import_lingua_testdata",
    "trafilatura-eval": "ingestaudit.importers.trafilatura_eval:import_trafilatura_eval",
    "pubtabnet": "ingestaudit.importers.pubtabnet:import_pubtabnet",
    "icdar2013": "ingestaudit.importers.icdar2013:import_icdar2013",
    "pdfplumber-tagged": "ingestaudit.importers.pdfplumber_tagged:import_pdfplumber_tagged",
    "chroma-chunking-eval": "ingestaudit.importers.chroma_chunking_eval:import_chroma_chunking_eval",
}
"""Importer kind (the CLI's ``KIND``) -> ``module:function``."""

MANIFEST = "import.json"


class ImporterError(IngestAuditError):
    """Base error of the importers; the CLI prints it and exits 2 (nothing written)."""


class SourceLayoutError(ImporterError):
    """The source folder does not look like the data set: the message names the missing or malformed file."""


class DestinationNotEmpty(ImporterError):
    """``dest`` exists and is not an empty folder: importers never overwrite."""


class UnknownImporter(ImporterError):
    """No importer of that kind; the message lists the known kinds."""


@dataclass(frozen=True)
class Unsupported:
    """One source label that the truth schema cannot express, kept out of the corpus on purpose.

    Attributes:
        item: the label's identifier in the source (e.g. an olmOCR test id).
        kind: the label's type in the source (e.g. ``"table"``, ``"math"``, ``"baseline"``).
        reason: why it cannot be expressed.
        source: the file (and line) it comes from, relative to the source folder.
    """

    item: str
    kind: str
    reason: str
    source: str


@dataclass(frozen=True)
class ImportSummary:
    """What an importer wrote.

    Attributes:
        kind: importer kind (a key of `IMPORTERS`).
        source: absolute path of the data set read.
        dest: absolute path of the corpus written.
        documents: document ids written, sorted.
        classes: document count per class, sorted by class.
        truth_files: number of truth files written.
        outputs: number of precomputed output files written per parser (folder under ``dest/outputs``).
        imported: number of labels imported per label kind (e.g. check type -> count).
        unsupported: source labels not imported, each with its reason, in source order.
        notes: other facts a user must know to read the numbers (semantics that differ from the source...).
        extra: importer-specific, JSON-serialisable facts (e.g. dinglehopper's pair -> (doc id, parser) map).
    """

    kind: str
    source: str
    dest: str
    documents: tuple[str, ...]
    classes: dict[str, int]
    truth_files: int
    outputs: dict[str, int]
    imported: dict[str, int]
    unsupported: tuple[Unsupported, ...] = ()
    notes: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def unsupported_counts(self) -> dict[str, int]:
        """Number of `unsupported` labels per source kind, sorted by kind."""
        counts: dict[str, int] = {}
        for u in self.unsupported:
            counts[u.kind] = counts.get(u.kind, 0) + 1
        return dict(sorted(counts.items()))

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (the content of ``dest/import.json``)."""
        out = asdict(self)
        out["unsupported_counts"] = self.unsupported_counts()
        return out

    def lines(self) -> list[str]:
        """A short human-readable account, one line per fact, for the command line."""
        classes = ", ".join(f"{c}: {n}" for c, n in self.classes.items())
        out = [f"imported {len(self.documents)} documents ({classes}) into {self.dest}",
               f"truth files: {self.truth_files}"]
        if self.imported:
            out.append("labels imported: " + ", ".join(f"{k} {v}" for k, v in self.imported.items()))
        if self.outputs:
            out.append("precomputed outputs: " + ", ".join(f"{k} {v}" for k, v in self.outputs.items())
                       + f" (use --outputs {Path(self.dest) / 'outputs'})")
        if self.unsupported:
            out.append(f"not imported ({len(self.unsupported)}): "
                       + ", ".join(f"{k} {v}" for k, v in self.unsupported_counts().items())
                       + f"; reasons in {Path(self.dest) / MANIFEST}")
        out += [f"note: {n}" for n in self.notes]
        return out


def importer_names() -> list[str]:
    """The importer kinds, sorted."""
    return sorted(IMPORTERS)


def get_importer(kind: str) -> Callable[[Path, Path], ImportSummary]:
    """The importer function of ``kind`` (imported on first use).

    Raises:
        UnknownImporter: ``kind`` is not a key of `IMPORTERS`.
    """
    target = IMPORTERS.get(kind)
    if target is None:
        raise UnknownImporter(f"unknown import kind {kind!r}; known: {', '.join(importer_names())}")
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)


def import_corpus(kind: str, src: Path, dest: Path) -> ImportSummary:
    """Run the importer of ``kind``: ``get_importer(kind)(src, dest)``. Raises what the importer raises."""
    return get_importer(kind)(Path(src), Path(dest))


# --- helpers shared by the importers -------------------------------------------------------------------------------

def require_dir(path: Path, what: str) -> Path:
    """``path`` if it is a folder.

    Raises:
        SourceLayoutError: naming ``path`` and what was expected there.
    """
    if not path.is_dir():
        raise SourceLayoutError(f"{path}: expected {what} (folder missing)")
    return path


def require_file(path: Path, what: str) -> Path:
    """``path`` if it is a file.

    Raises:
        SourceLayoutError: naming ``path`` and what was expected there.
    """
    if not path.is_file():
        raise SourceLayoutError(f"{path}: expected {what} (file missing)")
    return path


def check_dest(dest: Path) -> None:
    """Refuse a ``dest`` that exists and is not an empty folder.

    Raises:
        DestinationNotEmpty: ``dest`` is a file or a non-empty folder.
    """
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise DestinationNotEmpty(f"{dest} exists and is not empty; importers never overwrite (choose a new folder)")


class CorpusWriter:
    """Writes files under a staging folder; `staged_corpus` moves it to the destination when all went well.

    Attributes:
        root: the staging folder (becomes ``dest``).
        copied: relative paths that had to be copied because a symbolic link could not be made.
    """

    def __init__(self, root: Path):
        self.root = root
        self.copied: list[str] = []
        self.written: list[str] = []

    def link(self, rel: str, target: Path) -> None:
        """Make ``root/rel`` a symbolic link to the absolute path of ``target`` (a copy if links are refused)."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.symlink(target.resolve(), path)
        except OSError:
            shutil.copyfile(target, path)
            self.copied.append(rel)
        self.written.append(rel)

    def text(self, rel: str, text: str) -> None:
        """Write ``text`` as UTF-8 with ``\\n`` line ends to ``root/rel``."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        self.written.append(rel)

    def json(self, rel: str, data: Any) -> None:
        """Write ``data`` as indented JSON (keys in the given order, non-ASCII kept) to ``root/rel``."""
        self.text(rel, json.dumps(data, indent=2, ensure_ascii=False) + "\n")

    def copy_notes(self) -> list[str]:
        """A note for the summary when some links had to be copies, else nothing."""
        if not self.copied:
            return []
        return [f"symbolic links refused by the file system: {len(self.copied)} file(s) copied instead"]


@contextmanager
def staged_corpus(dest: Path) -> Iterator[CorpusWriter]:
    """Yield a `CorpusWriter` on a temporary sibling of ``dest``; on success move it to ``dest``, else delete it.

    Raises:
        DestinationNotEmpty: ``dest`` exists and is not empty (checked before and again just before the move).
    """
    dest = Path(dest).absolute()
    check_dest(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.import-", dir=dest.parent))
    try:
        yield CorpusWriter(tmp)
        check_dest(dest)
        if dest.exists():
            dest.rmdir()
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def class_counts(doc_ids: list[str] | tuple[str, ...]) -> dict[str, int]:
    """Document count per class (the first path part of the id), sorted by class."""
    counts: dict[str, int] = {}
    for d in doc_ids:
        c = d.split("/", 1)[0]
        counts[c] = counts.get(c, 0) + 1
    return dict(sorted(counts.items()))


def finish(writer: CorpusWriter, summary: ImportSummary) -> ImportSummary:
    """Write the summary as ``import.json`` into the staged corpus and return it."""
    writer.json(MANIFEST, summary.to_dict())
    return summary
