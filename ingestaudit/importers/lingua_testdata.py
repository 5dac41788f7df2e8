"""Import lingua's language test data (pemistahl/lingua-py ``language-testdata/sentences``) as a corpus.

Source layout::

    SRC/sentences/<code>.txt          one sentence per line; the label is the file name (ISO 639-1 code)
    SRC/average-accuracy-values.csv   published accuracy of six detectors (a baseline to compare with, not truth)

Corpus written (one class, ``sentences``; **one document per sentence**)::

    docs/sentences/<code>/<NNNN>.txt      the sentence (line NNNN of <code>.txt, 1-based, zero-padded), plus "\\n"
    truth/sentences/<code>/<NNNN>.json    {"text": the sentence, "language": <code>}
    ingestaudit.toml                      parsers = ["reference"], stages = ["language"], mixed = false

Why one document per sentence: a sentence is the unit lingua's test data labels and the unit its published accuracy
counts, so per-language precision, recall and F1 over 150 sentences per language are comparable with it. One
document per *file* would give 75 documents whose text is 150 sentences of one language: every detector gets every
one right, and per-language F1 over one document each says nothing. The cost is in the runner (one task per
document); ``limit_per_language`` imports the first N sentences of each file for quick runs and tests (measured in
benchmarks/README.md).

Why ``mixed = false`` in the corpus's ``ingestaudit.toml``: each document is one sentence that the data set labels
with one language, and multi-language detection on single sentences mostly finds close languages inside one
language (Bosnian/Croatian, Indonesian/Malay); excluding those sentences would also make the numbers incomparable
with lingua's published accuracy, which scores every sentence.

Labels keep the file name; the truth schema maps them with langcodes, which turns ``tl`` (Tagalog) into ``fil``:
the report's label for Tagalog is ``fil`` (noted in the summary).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ingestaudit.importers import (
    ImportSummary,
    SourceLayoutError,
    Unsupported,
    class_counts,
    finish,
    require_dir,
    staged_corpus,
)

KIND = "lingua-testdata"
DOC_CLASS = "sentences"
BASELINE_CSV = "average-accuracy-values.csv"
CONFIG = """\
# Written by 'ingestaudit import lingua-testdata': a language-identification corpus.
# Component level: the detector reads the reference text (one sentence per document).
[run]
parsers = ["reference"]
stages = ["language"]

[auditor_options.language]
# One sentence per document, labelled with one language by the data set: no mixed-language exclusion, so that every
# sentence is scored, as in lingua's published accuracy.
mixed = false
"""


def read_sentences(path: Path) -> list[str]:
    """The lines of one sentences file (UTF-8, line ends removed, empty lines kept as "" so numbering follows the
    file).

    Raises:
        SourceLayoutError: the file is not UTF-8 (named).
    """
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise SourceLayoutError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None


def import_lingua_testdata(src: Path, dest: Path, *, limit_per_language: int | None = None,
                           languages: Sequence[str] | None = None) -> ImportSummary:
    """Build a corpus from lingua's sentences at ``src`` into ``dest`` (see the module docstring).

    Args:
        src: the folder holding ``sentences/<code>.txt``.
        dest: the corpus folder to create (absent or empty).
        limit_per_language: import only the first N lines of each file (None = all); N >= 1.
        languages: import only these file names (codes); None = every file.

    Returns:
        `ImportSummary`; ``imported`` counts sentences per language code; ``extra`` has ``languages`` (code ->
        sentences), ``label_map`` (file codes the truth schema maps to another code), ``limit_per_language`` and
        ``baseline_csv`` (path of the published accuracy table, or None).

    Raises:
        SourceLayoutError: ``sentences/`` missing or without ``.txt`` files, a requested language missing, a file
            not UTF-8, or ``limit_per_language < 1``.
        DestinationNotEmpty: ``dest`` exists and is not empty.
    """
    from ingestaudit.truth import normalize_language

    src = Path(src).absolute()
    sent_dir = require_dir(src / "sentences", "lingua's sentences/<code>.txt files")
    files = {p.stem: p for p in sorted(sent_dir.glob("*.txt"))}
    if not files:
        raise SourceLayoutError(f"{sent_dir}: no *.txt files")
    if limit_per_language is not None and limit_per_language < 1:
        raise SourceLayoutError(f"limit_per_language must be >= 1, got {limit_per_language}")
    if languages is not None:
        missing = sorted(set(languages) - set(files))
        if missing:
            raise SourceLayoutError(f"{sent_dir}: no file for {', '.join(missing)}")
        files = {c: files[c] for c in sorted(set(languages))}

    unsupported: list[Unsupported] = []
    label_map: dict[str, str] = {}
    per_lang: dict[str, int] = {}
    docs: list[tuple[str, str, str]] = []  # (doc id, code, sentence)
    for code, path in files.items():
        try:
            mapped = normalize_language(code)
        except ValueError as exc:
            unsupported.append(Unsupported(code, "language", f"file name is not a language code ({exc})",
                                           f"sentences/{path.name}"))
            continue
        if mapped != code:
            label_map[code] = mapped
        lines = read_sentences(path)
        if limit_per_language is not None:
            lines = lines[:limit_per_language]
        width = max(4, len(str(len(lines))))
        for i, line in enumerate(lines, 1):
            if not line.strip():
                unsupported.append(Unsupported(f"{code}:{i}", "sentence", "empty line",
                                               f"sentences/{path.name}:{i}"))
                continue
            docs.append((f"{DOC_CLASS}/{code}/{i:0{width}d}", code, line))
            per_lang[code] = per_lang.get(code, 0) + 1

    notes = ["one document per sentence (the unit the data set labels and lingua's published accuracy counts)",
             "ingestaudit.toml: parsers = ['reference'], stages = ['language'], mixed-language exclusion off"]
    if limit_per_language is not None:
        notes.append(f"only the first {limit_per_language} line(s) of each language file were imported")
    for code, mapped in sorted(label_map.items()):
        notes.append(f"label {code!r} (file {code}.txt) is read as {mapped!r}: the truth schema maps language tags "
                     "with langcodes")
    baseline = src / BASELINE_CSV
    if baseline.is_file():
        notes.append(f"{BASELINE_CSV}: published accuracy of six detectors on the full upstream files (averaged over "
                     "sentences, word pairs and single words): a baseline, not truth; not imported")
    doc_ids = [d for d, _, _ in docs]
    with staged_corpus(dest) as w:
        for doc_id, code, sentence in docs:
            w.text(f"docs/{doc_id}.txt", sentence + "\n")
            w.json(f"truth/{doc_id}.json", {"text": sentence, "language": code})
        w.text("ingestaudit.toml", CONFIG)
        notes += w.copy_notes()
        summary = ImportSummary(
            kind=KIND, source=str(src), dest=str(Path(dest).absolute()), documents=tuple(sorted(doc_ids)),
            classes=class_counts(doc_ids), truth_files=len(docs), outputs={},
            imported=dict(sorted(per_lang.items())), unsupported=tuple(unsupported), notes=tuple(notes),
            extra={"languages": dict(sorted(per_lang.items())), "label_map": dict(sorted(label_map.items())),
                   "limit_per_language": limit_per_language,
                   "baseline_csv": str(baseline) if baseline.is_file() else None})
        finish(w, summary)
    return summary
