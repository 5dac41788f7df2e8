"""A source document of a corpus: its id, class and the files that belong to it (DESIGN.md, "Corpus layout")."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Document:
    """One source document.

    Attributes:
        doc_id: ``<class>/<name>`` (deeper folders stay in the id), with ``/`` separators and no extension.
        doc_class: the first folder under ``docs/`` (or the truth file's ``class`` override).
        path: absolute path of the source file under ``docs/``.
        truth_txt: ``truth/<id>.txt`` when it exists, else None.
        truth_json: ``truth/<id>.json`` when it exists, else None.
        truth_extra: other truth files of this document (PAGE XML, ALTO, ``.tables.html``), sorted.
        corpus_root: the corpus folder the document was discovered in (None for documents made by hand).
    """

    doc_id: str
    doc_class: str
    path: Path
    truth_txt: Path | None = None
    truth_json: Path | None = None
    truth_extra: tuple[Path, ...] = ()
    corpus_root: Path | None = None

    @property
    def suffix(self) -> str:
        """Lower-case file extension of the source with its dot, e.g. ``".pdf"``."""
        return self.path.suffix.lower()
