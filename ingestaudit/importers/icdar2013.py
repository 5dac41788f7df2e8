"""Import the ICDAR 2013 Table Competition data set (Göbel, Hassan, Oro and Orsi, ICDAR 2013, pp. 1449-1453) as a
corpus for the tables audit: the PDFs are the documents, the human cell structure (``*-str.xml``) the truth.

Source layout: any folder under which ``<name>.pdf`` and ``<name>-str.xml`` sit side by side (the competition's
``competition-dataset-us`` / ``competition-dataset-eu`` folders, or the folder holding them, as in
``../shared/data/icdar2013-tables``). ``<name>`` starts with the region (``us-001``, ``eu-014a``).

Corpus written (class = the region prefix of the name: ``us`` or ``eu``)::

    docs/<region>/<name>.pdf      symbolic link to the PDF
    truth/<region>/<name>.json    {"tables": [...]}: every table of <name>-str.xml, in file order, converted by
                                  `ingestaudit.metrics.table_html.icdar2013_to_html` (spans from start/end row and
                                  column; uncovered grid positions as empty cells; no header rows: the format has
                                  no header information, so every cell is a td in one tbody)

Not imported, each listed in `ImportSummary.unsupported` with its reason: a structure file without its PDF (in the
shared copy: us-011b, us-031b, us-035b), a structure file that does not convert (malformed XML, overlapping cells),
a table without any cell. The table regions (``*-reg.xml``) are not needed for TEDS and are not read; the ``*.json``
files of the shared copy are tabula-java's test expectations, not truth, and are ignored.
"""

from __future__ import annotations

import re
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
from ingestaudit.metrics.table_html import icdar2013_to_html

KIND = "icdar2013"
STRUCTURE_SUFFIX = "-str.xml"
_REGION = re.compile(r"^([a-z]+)-")


def import_icdar2013(src: Path, dest: Path) -> ImportSummary:
    """Build the corpus described in the module docstring from the ICDAR 2013 table data at ``src``.

    Args:
        src: a folder holding (possibly in sub-folders) ``<name>.pdf`` and ``<name>-str.xml`` pairs.
        dest: the corpus folder to create (absent or empty).

    Returns:
        `ImportSummary`; ``imported["tables"]`` counts the reference tables written.

    Raises:
        SourceLayoutError: ``src`` is not a folder, holds no ``*-str.xml``, or the same name occurs twice.
        DestinationNotEmpty: ``dest`` exists and is not empty.
    """
    src = require_dir(Path(src).absolute(), "the ICDAR 2013 table data (PDFs and *-str.xml)")
    structures: dict[str, Path] = {}
    for path in sorted(src.rglob(f"*{STRUCTURE_SUFFIX}")):
        name = path.name[: -len(STRUCTURE_SUFFIX)]
        if name in structures:
            raise SourceLayoutError(f"{path}: {name} also at {structures[name]}; one name, one document")
        structures[name] = path
    if not structures:
        raise SourceLayoutError(f"{src}: no *{STRUCTURE_SUFFIX} structure files")
    unsupported: list[Unsupported] = []
    docs: list[str] = []
    n_tables = 0
    with staged_corpus(dest) as w:
        for name, xml in structures.items():
            rel = xml.relative_to(src).as_posix()
            pdf = xml.with_name(f"{name}.pdf")
            if not pdf.is_file():
                unsupported.append(Unsupported(name, "table", "structure file without its PDF", rel))
                continue
            try:
                tables = icdar2013_to_html(xml.read_bytes())
            except ValueError as exc:
                unsupported.append(Unsupported(name, "table", f"structure file does not convert ({exc})", rel))
                continue
            kept = []
            for k, html in enumerate(tables):
                if html == "<table></table>":
                    unsupported.append(Unsupported(f"{name} table {k + 1}", "table", "table without any cell", rel))
                else:
                    kept.append(html)
            if not kept:
                unsupported.append(Unsupported(name, "document", "no table with cells: nothing to audit", rel))
                continue
            m = _REGION.match(name)
            doc_class = m.group(1) if m else "icdar2013"
            doc_id = f"{doc_class}/{name}"
            w.link(f"docs/{doc_id}.pdf", pdf)
            w.json(f"truth/{doc_id}.json", {"tables": kept})
            docs.append(doc_id)
            n_tables += len(kept)
        docs.sort()
        notes = ["truth tables have no header rows (the ICDAR 2013 format has no header information): every cell "
                 "is a td in one tbody; cell text is the <content> text with its line breaks",
                 "*-reg.xml (table regions) and tabula-java's *.json expectations are not used"]
        summary = ImportSummary(
            kind=KIND, source=str(src), dest=str(Path(dest).absolute()), documents=tuple(docs),
            classes=class_counts(docs), truth_files=len(docs), outputs={}, imported={"tables": n_tables},
            unsupported=tuple(unsupported), notes=tuple(notes + w.copy_notes()))
        return finish(w, summary)
