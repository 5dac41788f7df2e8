"""Import CoNLL-2003-format named-entity files (Tjong Kim Sang & De Meulder 2003) as a corpus for the ``entities``
stage.

Source format: one token per line, white-space separated columns with the token first and its NER tag last
(``EU NNP B-NP B-ORG``); a blank line ends a sentence; a line whose first column is ``-DOCSTART-`` starts a new
document (a file without one is one document). Tags are ``O``, ``B-TYPE`` or ``I-TYPE`` under one of two schemes:

``iob1``  (the CoNLL-2003 files as distributed) ``I-X`` continues an entity of type X or starts one; ``B-X`` starts a
          new entity (used where two entities of one type touch).
``iob2``  every entity starts with ``B-X``; an ``I-X`` that does not continue an entity of type X is an error.

An entity never crosses a sentence boundary. IOB2 tags decode to the same spans under ``iob1`` (the default, also
from the command line); ``iob2`` only adds the check.

Corpus written (one class per source file: the file's stem; documents numbered in file order)::

    docs/<class>/doc-<i>.txt     the document's text: tokens joined by one space, sentences by a line break
    truth/<class>/doc-<i>.json   {"text", "entities": [{"start", "end", "type"}], "entity_types": every type of the
                                 source files, sorted}
    ingestaudit.toml             [run] parsers = ["reference"]; [auditor_options.entities] type_map from spaCy's
                                 OntoNotes labels to the CoNLL types (`SPACY_TYPE_MAP`)

Not imported (listed in ``import.json`` with file and line): a document with a malformed tag, or with an ``I-`` tag
that does not continue its entity under ``iob2``; an empty document.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingestaudit.importers import ImportSummary, SourceLayoutError, Unsupported, class_counts, finish, staged_corpus

KIND = "conll2003"
SCHEMES = ("iob1", "iob2")

SPACY_TYPE_MAP: dict[str, str | None] = {
    "PERSON": "PER", "ORG": "ORG", "GPE": "LOC", "LOC": "LOC", "FAC": "LOC", "NORP": "MISC", "EVENT": "MISC",
    "PRODUCT": "MISC", "WORK_OF_ART": "MISC", "LANGUAGE": "MISC", "LAW": "MISC", "DATE": None, "TIME": None,
    "MONEY": None, "PERCENT": None, "QUANTITY": None, "ORDINAL": None, "CARDINAL": None}
"""spaCy en_core_web_* (OntoNotes 5) labels -> CoNLL-2003 types; the numeric and temporal labels, which CoNLL-2003
does not annotate, are excluded on purpose (counted apart by the auditor)."""


@dataclass
class _Doc:
    line: int  # first line of the document in its file (1-based)
    text: list[str] = field(default_factory=list)
    spans: list[dict[str, Any]] = field(default_factory=list)
    problem: str = ""


def _decode(path: Path, scheme: str) -> list[_Doc]:
    """The documents of one CoNLL file (see the module docstring); a bad tag sets the document's ``problem``."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceLayoutError(f"{path}: not a readable UTF-8 text file ({exc})") from None
    docs = [_Doc(0)]  # the text before any -DOCSTART- (line 0: dropped when empty)
    sentence: list[tuple[str, str, int]] = []

    def flush() -> None:
        doc = docs[-1]
        if sentence and not doc.problem:
            offset = sum(len(s) + 1 for s in doc.text)  # the sentences so far, each followed by "\n"
            pos = offset
            open_: list[Any] = []  # [start, end, type] of the entity being read
            words = []
            for token, tag, lineno in sentence:
                kind, _, typ = tag.partition("-")
                if tag != "O" and (kind not in ("B", "I") or not typ):
                    doc.problem = f"line {lineno}: tag {tag!r} is not O, B-TYPE or I-TYPE"
                    return
                continues = bool(open_) and open_[2] == typ and kind == "I"
                if kind == "I" and not continues and scheme == "iob2":
                    doc.problem = f"line {lineno}: {tag} does not continue an entity of type {typ} (iob2)"
                    return
                if open_ and not continues:
                    doc.spans.append({"start": open_[0], "end": open_[1], "type": open_[2]})
                    open_ = []
                if tag != "O":
                    open_ = [open_[0], pos + len(token), typ] if continues else [pos, pos + len(token), typ]
                words.append(token)
                pos += len(token) + 1
            if open_:
                doc.spans.append({"start": open_[0], "end": open_[1], "type": open_[2]})
            doc.text.append(" ".join(words))
        sentence.clear()

    for lineno, line in enumerate(lines, 1):
        cols = line.split()
        if not cols:
            flush()
        elif cols[0] == "-DOCSTART-":
            flush()
            docs.append(_Doc(lineno))
        elif len(cols) < 2:
            docs[-1].problem = docs[-1].problem or f"line {lineno}: a token without a tag"
        else:
            sentence.append((cols[0], cols[-1], lineno))
    flush()
    return [d for d in docs if d.text or d.problem or d.line > 0]


def _files(src: Path) -> list[Path]:
    if src.is_file():
        return [src]
    if not src.is_dir():
        raise SourceLayoutError(f"{src}: no such file or folder (expected CoNLL-2003-format files)")
    files = sorted(p for p in src.iterdir() if p.is_file() and not p.name.startswith("."))
    if not files:
        raise SourceLayoutError(f"{src}: no files")
    return files


def _config_toml() -> str:
    pairs = ", ".join(f"{k}={v or ''}" for k, v in sorted(SPACY_TYPE_MAP.items()))
    return ("# Written by `ingestaudit import conll2003`: audit entity extraction on the reference text.\n"
            "[run]\n"
            'parsers = ["reference"]\n'
            "\n"
            "[auditor_options.entities]\n"
            "# spaCy (OntoNotes) labels -> CoNLL-2003 types; an empty target excludes the label on purpose\n"
            f'type_map = "{pairs}"\n')


def import_conll2003(src: Path, dest: Path, *, scheme: str = "iob1") -> ImportSummary:
    """Build an ``entities`` corpus from CoNLL-2003-format files (see the module docstring).

    Args:
        src: one file, or a folder whose files (not hidden) are each one class.
        dest: the corpus folder to create (absent or empty).
        scheme: ``"iob1"`` (CoNLL-2003 as distributed) or ``"iob2"``.

    Returns:
        `ImportSummary`: ``imported`` counts documents, sentences and entities per type.

    Raises:
        SourceLayoutError: no files, an unreadable file, or no usable document.
        DestinationNotEmpty: ``dest`` exists and is not empty.
        ValueError: an unknown scheme.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")
    src = Path(src).absolute()
    plan: list[tuple[str, _Doc]] = []
    unsupported: list[Unsupported] = []
    types: Counter[str] = Counter()
    sentences = 0
    for path in _files(src):
        cls = path.stem
        rel = path.name
        docs = _decode(path, scheme)
        width = max(4, len(str(max(len(docs) - 1, 0))))
        for i, doc in enumerate(docs):
            item = f"{rel} document {i} (line {max(doc.line, 1)})"
            if doc.problem:
                unsupported.append(Unsupported(item, "document", doc.problem, rel))
            elif not doc.text:
                unsupported.append(Unsupported(item, "document", "no tokens", rel))
            else:
                plan.append((f"{cls}/doc-{i:0{width}d}", doc))
                types.update(s["type"] for s in doc.spans)
                sentences += len(doc.text)
    if not plan:
        raise SourceLayoutError(f"{src}: no usable document")
    vocabulary = sorted(types)
    with staged_corpus(dest) as w:
        for doc_id, doc in plan:
            text = "\n".join(doc.text)
            w.text(f"docs/{doc_id}.txt", text)
            w.json(f"truth/{doc_id}.json", {"text": text, "entities": doc.spans, "entity_types": vocabulary})
        w.text("ingestaudit.toml", _config_toml())
        doc_ids = [d for d, _ in plan]
        summary = ImportSummary(
            kind=KIND, source=str(src), dest=str(Path(dest).absolute()), documents=tuple(doc_ids),
            classes=class_counts(doc_ids), truth_files=len(plan), outputs={},
            imported={"documents": len(plan), "sentences": sentences,
                      **{f"entity:{t}": n for t, n in sorted(types.items())}},
            unsupported=tuple(unsupported),
            notes=(f"tags read as {scheme}", "text: tokens joined by one space, sentences by a line break",
                   "ingestaudit.toml maps spaCy's labels to the CoNLL types (type_map)"),
            extra={"scheme": scheme, "entity_types": vocabulary, "type_map": SPACY_TYPE_MAP})
        finish(w, summary)
    return summary
