"""Import pdfplumber's tagged test PDFs (jsvine/pdfplumber ``tests/pdfs``) as a corpus whose truth is their structure.

Source layout (``../shared/data/pdfplumber-tagged``)::

    SRC/pdfs/<name>.pdf          tagged PDFs (Word 365, LibreOffice, a municipal proces-verbal, a SCOTUS transcript
                                 page) and one untagged table PDF
    SRC/comparisons/*.txt        pdfplumber's expected layout text: a tool's output, not truth (not imported)
    SRC/expected_structure_trees_from_pdfplumber_tests.json
                                 what pdfplumber's own tests expect it to read from each tree (used by the tests as an
                                 oracle for the tree reading, not imported)

Corpus written (one class, ``tagged``)::

    docs/tagged/<name>.pdf       symbolic link to each tagged PDF
    truth/tagged/<name>.json     from the document's own structure tree (`ingestaudit.parsers.structtree`):
                                 ``headings`` (H1-H6 elements: level, text), ``lists`` (the items of each L element,
                                 nested lists apart), ``tables`` (Table/TR/TH/TD as HTML), ``text`` (every structure
                                 block's text in tree order, one block per line, a table one cell per line)

The structure tree is the author's statement of headings, lists, tables and reading order: that is the truth imported.
Its text is read from the marked content the tree points at (pdfminer.six), so ``text`` is the PDF's own text in
the author's order, not a human transcription: it judges reading order and structure, and the ``tagged`` parser,
which reads the same tree, scores (close to) perfectly by construction; it is the baseline the others are measured
against. Keys with nothing to hold are left out (a document without headings has no ``headings`` key: its heading
rows are ``no_reference``). An untagged PDF has no structure to import (listed as unsupported), nor has a PDF whose
structure tree is broken or cyclic (listed with the cause; the other PDFs are imported); figure alternate
texts (``/Alt``) are not page text (listed); content items the tree puts on pages the file does not hold (a page cut
from a longer document keeps the whole tree) are counted in the notes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ingestaudit.importers import (
    ImportSummary,
    SourceLayoutError,
    Unsupported,
    class_counts,
    finish,
    require_dir,
    staged_corpus,
)
from ingestaudit.truth import TruthFile

KIND = "pdfplumber-tagged"
DOC_CLASS = "tagged"


def structure_truth(pdf: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """The truth JSON of one tagged PDF and facts about its tree.

    Returns:
        ``(truth, facts)``: truth keys ``text``, ``headings``, ``lists``, ``tables`` (each only when non-empty);
        facts ``foreign`` (content items on pages the file lacks), ``figures_with_alt``.

    Raises:
        ingestaudit.parsers.structtree.NotTagged: no structure tree.
        ingestaudit.parsers.structtree.StructTreeError: a broken tree.
    """
    from ingestaudit.parsers import structtree as st

    tree = st.read_tree(pdf)
    found = st.blocks(tree, st.marked_content(pdf))
    truth: dict[str, Any] = {}
    if found:
        truth["text"] = "\n".join(b.text for b in found) + "\n"
    heads = [{"level": b.level, "text": b.text} for b in found if b.kind == "heading"]
    if heads:
        truth["headings"] = heads
    lists = st.lists_of(found)
    if lists:
        truth["lists"] = lists
    tables = [b.html for b in found if b.kind == "table" and b.html]
    if tables:
        truth["tables"] = tables
    return truth, {"foreign": tree.foreign, "figures_with_alt": _alt_figures(pdf)}


def _alt_figures(pdf: Path) -> int:
    """Number of Figure structure elements carrying ``/Alt`` (read directly: Alt is not an attribute object)."""
    import pikepdf

    n = 0
    with pikepdf.open(pdf) as doc:
        root = doc.Root.get("/StructTreeRoot")
        stack = [root.get("/K")] if root is not None else []
        seen: set[tuple[int, int]] = set()
        while stack:
            node = stack.pop()
            if isinstance(node, pikepdf.Array):
                stack.extend(node)
            elif isinstance(node, pikepdf.Dictionary):
                og = node.objgen
                if og != (0, 0):
                    if og in seen:
                        continue
                    seen.add(og)
                if "/S" in node and "/Alt" in node and str(node.S) == "/Figure":
                    n += 1
                if "/K" in node:
                    stack.append(node.K)
    return n


def import_pdfplumber_tagged(src: Path, dest: Path) -> ImportSummary:
    """Build a corpus from pdfplumber's tagged test PDFs at ``src`` into ``dest`` (see the module docstring).

    Args:
        src: the folder with ``pdfs/``.
        dest: the corpus folder to create (absent or empty).

    Returns:
        `ImportSummary`: ``imported`` counts headings, lists, list items, tables and reference texts.

    Raises:
        SourceLayoutError: ``pdfs/`` missing, without PDFs, or without any readable tagged PDF. A PDF whose
            structure tree is broken (cyclic, too deep, an element without a type) or that cannot be read is listed
            as unsupported (``broken_structure_tree``, ``unreadable_pdf``, with the cause) and the others are imported.
        DestinationNotEmpty: ``dest`` exists and is not empty.
    """
    from ingestaudit.parsers import structtree as st

    src = Path(src).absolute()
    pdf_dir = require_dir(src / "pdfs", "the tagged PDFs under pdfs/")
    pdfs = sorted(pdf_dir.glob("*.pdf"))
    if not pdfs:
        raise SourceLayoutError(f"{pdf_dir}: no *.pdf files")
    truths: dict[str, dict[str, Any]] = {}
    unsupported: list[Unsupported] = []
    foreign: dict[str, int] = {}
    for pdf in pdfs:
        try:
            truth, facts = structure_truth(pdf)
        except st.NotTagged:
            unsupported.append(Unsupported(pdf.stem, "untagged_pdf", "no /StructTreeRoot: no author structure to "
                                           "import", f"pdfs/{pdf.name}"))
            continue
        except (st.StructTreeError, RecursionError) as exc:  # one broken tree: named, the others imported
            why = str(exc) if isinstance(exc, st.StructTreeError) else f"{pdf}: structure tree too deep to read"
            unsupported.append(Unsupported(pdf.stem, "broken_structure_tree", why, f"pdfs/{pdf.name}"))
            continue
        except Exception as exc:  # noqa: BLE001 - pikepdf or pdfminer cannot read this one file
            unsupported.append(Unsupported(pdf.stem, "unreadable_pdf", f"{pdf}: {type(exc).__name__}: {exc}",
                                           f"pdfs/{pdf.name}"))
            continue
        TruthFile.model_validate(truth)  # what is written obeys the truth schema
        truths[pdf.stem] = truth
        if facts["foreign"]:
            foreign[pdf.stem] = facts["foreign"]
        if facts["figures_with_alt"]:
            unsupported.append(Unsupported(pdf.stem, "figure_alt_text", "alternate text of a Figure is not page "
                                           "text; the truth schema has no key for it", f"pdfs/{pdf.name}"))
    if not truths:
        raise SourceLayoutError(f"{pdf_dir}: no readable tagged PDF ("
                                + "; ".join(f"{u.source}: {u.kind}" for u in unsupported) + ")")
    notes = ["truth = each PDF's own structure tree (headings, lists, tables, reading order); 'text' is the PDF's "
             "text in tree order read by pdfminer.six, not a human transcription: the tagged parser reads the same "
             "tree and is the baseline, not a contestant",
             "comparisons/ (pdfplumber's layout text output) and expected_structure_trees_from_pdfplumber_tests.json "
             "(pdfplumber's test expectations) are tool outputs: not imported"]
    for name, n in sorted(foreign.items()):
        notes.append(f"{name}: {n} content item(s) of the structure tree lie on pages this file does not hold "
                     "(a page cut from a longer document): left out")
    imported = {"headings": sum(len(t.get("headings", [])) for t in truths.values()),
                "lists": sum(len(t.get("lists", [])) for t in truths.values()),
                "list_items": sum(len(x) for t in truths.values() for x in t.get("lists", [])),
                "tables": sum(len(t.get("tables", [])) for t in truths.values()),
                "texts": sum("text" in t for t in truths.values())}
    doc_ids = [f"{DOC_CLASS}/{n}" for n in truths]
    with staged_corpus(dest) as w:
        for pdf in pdfs:
            if pdf.stem in truths:
                w.link(f"docs/{DOC_CLASS}/{pdf.name}", pdf)
                w.json(f"truth/{DOC_CLASS}/{pdf.stem}.json", truths[pdf.stem])
        notes += w.copy_notes()
        summary = ImportSummary(
            kind=KIND, source=str(src), dest=str(Path(dest).absolute()), documents=tuple(sorted(doc_ids)),
            classes=class_counts(doc_ids), truth_files=len(truths), outputs={},
            imported=dict(sorted(imported.items())), unsupported=tuple(unsupported), notes=tuple(notes),
            extra={"headings_per_document": {f"{DOC_CLASS}/{n}": len(t.get("headings", []))
                                             for n, t in sorted(truths.items())}})
        finish(w, summary)
    return summary
