"""Import docling's PDF test data (docling-project/docling, ``tests/data/pdf`` and ``tests/data/latex``) as a corpus.

Source layout::

    SRC/sources/<name>.pdf            the PDFs
    SRC/groundtruth/<name>.md         docling's frozen Markdown output per PDF: a *parser's* output, NOT human truth
    SRC/latex/sources/2305.03393/main.tex   the authors' LaTeX of arXiv 2305.03393 (page 9 = 2305.03393v1-pg9.pdf)

Corpus written (one class, ``docling``)::

    docs/docling/<name>.pdf                 symbolic link to the PDF
    outputs/docling/docling/<name>.md       symbolic link to docling's Markdown: audited as the parser ``docling``
                                            (``--outputs DEST/outputs``), side by side with pymupdf & co.
    truth/docling/2305.03393v1-pg9.json     the only human truth: headings, present/order checks and Table 1,
                                            transcribed by hand from the LaTeX (table `PG9_TRUTH`, with main.tex line
                                            numbers) and verified against main.tex at import time

The other ``groundtruth/`` files (``*.doctags.txt``, ``*.pages.meta.json``, ``*.json``) are docling's internal
formats, not imported (noted in the summary).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ingestaudit.importers import (
    ImportSummary,
    SourceLayoutError,
    Unsupported,
    class_counts,
    finish,
    require_dir,
    require_file,
    staged_corpus,
)
from ingestaudit.truth import TruthFile

KIND = "docling"
DOC_CLASS = "docling"
PARSER = "docling"
LATEX = "latex/sources/2305.03393/main.tex"
PG9 = "2305.03393v1-pg9"

# Truth of 2305.03393v1-pg9.pdf (page 9 of "Optimized Table Tokenization for Table Structure Recognition", Lysak et
# al. 2023), transcribed from the authors' LaTeX (main.tex of the docling snapshot). The page holds the end of section
# 5's introduction (main.tex l.173-174), subsection 5.1 with Table 1 (l.176-205) and the start of subsection 5.2
# (l.207-209, 229). Texts are the LaTeX sentences with markup removed (\textit{..} -> its text, ~ -> space); sentences
# with \cite are avoided (their rendered form "[9]" is not in the source). Heading texts are the \subsection titles;
# the numbers "5.1"/"5.2" are added by LaTeX at rendering and are not part of the title. Level 2 = \subsection.
# The running head (the paper title) and the page number are on the page but are not body text; no check is made
# about them (whether they belong in extracted text is a boilerplate policy, not a fact of the source).
PG9_TRUTH: dict[str, Any] = {
    "headings": [
        {"level": 2, "text": "Hyper Parameter Optimization"},  # l.176 \subsection{Hyper Parameter Optimization}
        {"level": 2, "text": "Quantitative Results"},  # l.207 \subsection{Quantitative Results}
    ],
    "checks": [
        # l.174
        {"type": "present", "max_diffs": 0, "text": "Inference timing results for all experiments were obtained "
                                                    "from the same machine on a single core with AMD EPYC 7763 CPU "
                                                    "@2.45 GHz."},
        {"type": "present", "max_diffs": 0, "text": "Hyper Parameter Optimization"},  # l.176
        # l.178
        {"type": "present", "max_diffs": 0, "text": "We have chosen the PubTabNet data set to perform HPO, since it "
                                                    "includes a highly diverse set of tables."},
        # l.178, "\textit{2x speed up}"
        {"type": "present", "max_diffs": 0, "text": "However OTSL yields a 2x speed up in the inference runtime over "
                                                    "HTML."},
        {"type": "present", "max_diffs": 0, "text": "Quantitative Results"},  # l.207
        # l.209 (the PDF sets "difficult" with the ffi ligature U+FB03)
        {"type": "present", "max_diffs": 0, "text": "keeping high TEDs and mAP scores even on difficult financial "
                                                    "tables (FinTabNet) that contain sparse and large tables."},
        # l.229
        {"type": "present", "max_diffs": 0, "text": "Finally, OTSL achieves faster inference due to fewer decoding "
                                                    "steps which is a result of the reduced sequence representation."},
        # reading order: l.176 before l.207, and l.178 before l.209
        {"type": "order", "max_diffs": 0, "before": "Hyper Parameter Optimization", "after": "Quantitative Results"},
        {"type": "order", "max_diffs": 0, "before": "We have chosen the PubTabNet data set to perform HPO",
         "after": "then independently trained and evaluated it on three publicly available data sets"},
    ],
    # l.187-203: Table 1 (tabular with \multirow / \multicolumn; \textbf dropped, "\#\\ enc-layers" -> "# enc-layers",
    # \makecell line breaks -> a space). The LaTeX does not mark header cells, so every cell is a <td>.
    "tables": [
        "<table>"
        "<tr><td rowspan=\"2\"># enc-layers</td><td rowspan=\"2\"># dec-layers</td><td rowspan=\"2\">Language</td>"
        "<td colspan=\"3\">TEDs</td><td rowspan=\"2\">mAP (0.75)</td><td rowspan=\"2\">Inference time (secs)</td></tr>"
        "<tr><td>simple</td><td>complex</td><td>all</td></tr>"
        "<tr><td rowspan=\"2\">6</td><td rowspan=\"2\">6</td><td>OTSL</td><td>0.965</td><td>0.934</td><td>0.955</td>"
        "<td>0.88</td><td>2.73</td></tr>"
        "<tr><td>HTML</td><td>0.969</td><td>0.927</td><td>0.955</td><td>0.857</td><td>5.39</td></tr>"
        "<tr><td rowspan=\"2\">4</td><td rowspan=\"2\">4</td><td>OTSL</td><td>0.938</td><td>0.904</td><td>0.927</td>"
        "<td>0.853</td><td>1.97</td></tr>"
        "<tr><td>HTML</td><td>0.952</td><td>0.909</td><td>0.938</td><td>0.843</td><td>3.77</td></tr>"
        "<tr><td rowspan=\"2\">2</td><td rowspan=\"2\">4</td><td>OTSL</td><td>0.923</td><td>0.897</td><td>0.915</td>"
        "<td>0.859</td><td>1.91</td></tr>"
        "<tr><td>HTML</td><td>0.945</td><td>0.901</td><td>0.931</td><td>0.834</td><td>3.81</td></tr>"
        "<tr><td rowspan=\"2\">4</td><td rowspan=\"2\">2</td><td>OTSL</td><td>0.952</td><td>0.92</td><td>0.942</td>"
        "<td>0.857</td><td>1.22</td></tr>"
        "<tr><td>HTML</td><td>0.944</td><td>0.903</td><td>0.931</td><td>0.824</td><td>2</td></tr>"
        "</table>"
    ],
}

_TABLE_ENV = re.compile(r"\\begin\{table\}.*?\\end\{table\}", re.S)


def latex_plain(tex: str) -> str:
    """LaTeX source reduced to plain text for verifying `PG9_TRUTH`: ``\\textit{x}``/``\\textbf{x}``/``\\emph{x}``
    -> ``x``, ``~`` -> space, ``\\#`` -> ``#``, ``\\label{..}`` removed, white space collapsed. Not a LaTeX renderer."""
    text = re.sub(r"\\label\{[^}]*\}", "", tex)
    for _ in range(3):  # nested emphasis
        text = re.sub(r"\\(?:textit|textbf|emph)\{([^{}]*)\}", r"\1", text)
    text = text.replace("~", " ").replace("\\#", "#")
    return re.sub(r"\s+", " ", text)


def _verify_pg9(tex_path: Path) -> None:
    """Check that every heading, check text and table number of `PG9_TRUTH` occurs in the LaTeX source.

    Raises:
        SourceLayoutError: a transcribed string is not in ``tex_path`` (the file and the string are named).
    """
    tex = tex_path.read_text(encoding="utf-8")
    plain = latex_plain(tex)
    for h in PG9_TRUTH["headings"]:
        if "\\subsection{" + h["text"] + "}" not in tex:
            raise SourceLayoutError(f"{tex_path}: no \\subsection{{{h['text']}}} (expected for {PG9})")
    for c in PG9_TRUTH["checks"]:
        for t in ([c["text"]] if c["type"] != "order" else [c["before"], c["after"]]):
            if t not in plain:
                raise SourceLayoutError(f"{tex_path}: text {t!r} not found (expected for {PG9})")
    table1 = next((t for t in _TABLE_ENV.findall(tex) if "\\label{tab:HPO}" in t), None)
    if table1 is None:
        raise SourceLayoutError(f"{tex_path}: Table 1 (table environment with \\label{{tab:HPO}}) not found "
                                f"(expected for {PG9})")
    if latex_data_rows(table1) != html_data_rows(PG9_TRUTH["tables"][0]):
        raise SourceLayoutError(f"{tex_path}: the data rows of Table 1 differ from the transcription in {__name__}")


def latex_data_rows(tabular: str) -> list[list[str]]:
    """Data rows of a LaTeX table (rows split on ``\\\\``, cells on ``&``; a row is data when every cell is a number,
    empty, or a language name OTSL/HTML): ``\\multirow{n}{*}{x}``/``\\textbf{x}`` -> ``x``, empty cells (continued
    multirow) dropped. Enough for Table 1 of 2305.03393; not a LaTeX parser."""
    body = re.sub(r"\\(?:begin|end)\{tabular\}(\{[^}]*\})?", "", tabular)
    rows = []
    for raw in re.split(r"\\\\", body):
        raw = re.sub(r"\\(?:hline|cline\{[^}]*\})", "", raw)
        raw = re.sub(r"\\multirow\{\d+\}\{\*\}\{([^{}]*)\}", r"\1", raw)
        raw = re.sub(r"\\textbf\{([^{}]*)\}", r"\1", raw)
        cells = [c.strip() for c in raw.split("&")]
        if len(cells) > 1 and all(re.fullmatch(r"[\d.]*|OTSL|HTML", c) for c in cells):
            rows.append([c for c in cells if c])
    return rows


def html_data_rows(table: str) -> list[list[str]]:
    """Rows of an HTML table string whose cells are all numbers or a language name (OTSL/HTML), as cell texts."""
    rows = []
    for tr in re.findall(r"<tr>(.*?)</tr>", table):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", tr)
        if all(re.fullmatch(r"[\d.]+|OTSL|HTML", c) for c in cells):
            rows.append(cells)
    return rows


def import_docling(src: Path, dest: Path) -> ImportSummary:
    """Build a corpus from docling's PDF test data at ``src`` into ``dest`` (see the module docstring).

    Args:
        src: the folder with ``sources/``, ``groundtruth/`` and (optional) ``latex/``.
        dest: the corpus folder to create (absent or empty).

    Returns:
        `ImportSummary`; ``outputs`` counts docling's Markdown files; ``imported`` counts the LaTeX-derived labels.

    Raises:
        SourceLayoutError: ``sources/`` missing or without PDFs, ``groundtruth/`` missing, or the LaTeX source present
            but not matching the hand transcription (named).
        DestinationNotEmpty: ``dest`` exists and is not empty.
    """
    src = Path(src).absolute()
    sources = require_dir(src / "sources", "docling's test PDFs under sources/")
    gt_dir = require_dir(src / "groundtruth", "docling's frozen outputs under groundtruth/")
    pdfs = {p.stem: p for p in sorted(sources.glob("*.pdf"))}
    if not pdfs:
        raise SourceLayoutError(f"{sources}: no *.pdf files")
    mds = {p.name[:-3]: p for p in sorted(gt_dir.glob("*.md"))}
    notes = ["outputs/docling is docling's own frozen output (a parser's output, not human truth): it is audited "
             "like any other parser"]
    unsupported: list[Unsupported] = []
    orphans = sorted(set(mds) - set(pdfs))
    for name in orphans:
        unsupported.append(Unsupported(name, "docling_output", "no PDF of that name under sources/",
                                       f"groundtruth/{name}.md"))
    no_output = sorted(set(pdfs) - set(mds))
    if no_output:
        notes.append("no docling output for: " + ", ".join(no_output) + " (the report shows no_prediction)")
    other = sorted(p.name for p in gt_dir.iterdir() if p.is_file() and not p.name.endswith(".md"))
    if other:
        notes.append(f"groundtruth/: {len(other)} file(s) in docling's internal formats (doctags, page meta, "
                     "DoclingDocument JSON) not imported")

    truth: dict[str, dict[str, Any]] = {}
    tex = src / LATEX
    if tex.is_file() and PG9 in pdfs:
        _verify_pg9(tex)
        TruthFile.model_validate(PG9_TRUTH)  # the transcription obeys the truth schema
        truth[PG9] = PG9_TRUTH
    elif PG9 in pdfs:
        require_file(tex, f"the LaTeX source of {PG9}")  # raises: the only human truth of this data set
    else:
        notes.append(f"{PG9}.pdf not in sources/: the LaTeX-derived truth is not written")

    imported: dict[str, int] = {}
    for t in truth.values():
        for c in t.get("checks", []):
            imported[c["type"]] = imported.get(c["type"], 0) + 1
        imported["headings"] = imported.get("headings", 0) + len(t.get("headings", []))
        imported["tables"] = imported.get("tables", 0) + len(t.get("tables", []))
    doc_ids = [f"{DOC_CLASS}/{n}" for n in pdfs]
    n_out = 0
    with staged_corpus(dest) as w:
        for name, pdf in pdfs.items():
            w.link(f"docs/{DOC_CLASS}/{name}.pdf", pdf)
            if name in mds:
                w.link(f"outputs/{PARSER}/{DOC_CLASS}/{name}.md", mds[name])
                n_out += 1
            if name in truth:
                w.json(f"truth/{DOC_CLASS}/{name}.json", truth[name])
        notes += w.copy_notes()
        summary = ImportSummary(
            kind=KIND, source=str(src), dest=str(Path(dest).absolute()), documents=tuple(sorted(doc_ids)),
            classes=class_counts(doc_ids), truth_files=len(truth), outputs={PARSER: n_out} if n_out else {},
            imported=dict(sorted(imported.items())), unsupported=tuple(unsupported), notes=tuple(notes),
            extra={"truth_from_latex": {f"{DOC_CLASS}/{n}": LATEX for n in truth}})
        finish(w, summary)
    return summary
