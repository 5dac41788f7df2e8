"""docling's PDF test data (../shared/data/docling-pdf): import it, audit PyMuPDF and docling's frozen Markdown (as a
precomputed parser, not as truth) end to end, and check the LaTeX-derived truth of 2305.03393v1-pg9.

The check outcomes are recomputed here independently: text straight from PyMuPDF (``page.get_text()``) or from the
Markdown file, a normalization written from the documented text-v1 rules (ligatures spelled out, curly quotes and
dashes folded, NFC, white space collapsed), and plain substring search (every check of this page has max_diffs 0).
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.importers import import_corpus
from ingestaudit.truth import TruthFile
from _rows import measurements

PG9 = "docling/2305.03393v1-pg9"

_TABLE = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
                        "\ufb05": "st", "\ufb06": "st", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                        "\u2010": "-", "\u2011": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-", "\u00ad": "",
                        "\u200b": "", "\ufeff": ""})


def norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text.translate(_TABLE)).split())


def passes(check: dict, output: str) -> bool:
    assert check["max_diffs"] == 0
    if check["type"] == "order":
        b, a = output.find(norm(check["before"])), output.rfind(norm(check["after"]))
        return b != -1 and a != -1 and b < a
    found = norm(check["text"]) in output
    return found if check["type"] == "present" else not found


def pymupdf_text(pdf: Path) -> str:
    import pymupdf

    with pymupdf.open(pdf) as doc:
        return "\n\n".join(page.get_text().rstrip("\n") for page in doc)


@pytest.fixture(scope="module")
def src(shared_dataset) -> Path:
    return shared_dataset("docling-pdf")


@pytest.fixture(scope="module")
def imported(src: Path, tmp_path_factory):
    dest = tmp_path_factory.mktemp("docling") / "corpus"
    return dest, import_corpus("docling", src, dest)


def test_import_layout_and_latex_truth(src, imported):
    dest, summary = imported
    names = sorted(p.stem for p in (src / "sources").glob("*.pdf"))
    assert summary.documents == tuple(f"docling/{n}" for n in names)
    assert summary.outputs == {"docling": len(names)}
    for n in names:
        assert (dest / "docs/docling" / f"{n}.pdf").resolve() == (src / "sources" / f"{n}.pdf").resolve()
        # docling's frozen Markdown is a parser output, never truth
        assert (dest / "outputs/docling/docling" / f"{n}.md").resolve() == (src / "groundtruth" / f"{n}.md").resolve()
    assert sorted(p.relative_to(dest / "truth").as_posix() for p in (dest / "truth").rglob("*")
                  if p.is_file()) == [f"{PG9}.json"]
    truth = json.loads((dest / "truth" / f"{PG9}.json").read_text())
    TruthFile.model_validate(truth)
    # the headings are the \subsection titles of section 5 that fall on page 9
    tex = (src / "latex/sources/2305.03393/main.tex").read_text()
    subsections = re.findall(r"\\subsection\{([^}]*)\}", tex)
    assert [h["text"] for h in truth["headings"]] == ["Hyper Parameter Optimization", "Quantitative Results"]
    assert all(h["text"] in subsections and h["level"] == 2 for h in truth["headings"])
    assert summary.imported == {"headings": 2, "order": 2, "present": 7, "tables": 1}
    # every data cell of the transcribed Table 1 is a number of the LaTeX tabular (label tab:HPO)
    table_env = next(t for t in re.findall(r"\\begin\{table\}.*?\\end\{table\}", tex, re.S) if "tab:HPO" in t)
    for cell in re.findall(r"<td[^>]*>([\d.]+)</td>", truth["tables"][0]):
        assert re.search(rf"(?<![\d.]){re.escape(cell)}(?![\d.])", table_env), cell


def test_end_to_end_contract_and_latex_checks(src, imported, tmp_path):
    from ingestaudit.cli import app

    dest, summary = imported
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["run", str(dest), "--parser", "pymupdf", "--outputs", str(dest / "outputs"),
                                 "--out", str(out), "--workers", "2"])
    assert r.exit_code == 0, r.output

    def no_constant(name: str):
        raise AssertionError(f"report.json contains {name}")

    text = (out / "report.json").read_text(encoding="utf-8")
    report = json.loads(text, parse_constant=no_constant)
    assert "NaN" not in text and "Infinity" not in text
    assert [p["name"] for p in report["pipelines"]] == ["pymupdf", "docling"]
    rows = measurements(out)
    for parser in ("pymupdf", "docling"):
        assert {m["item"] for m in rows if m["pipeline"] == parser} == set(summary.documents)
    for m in rows:
        assert (m["value"] is None) == (m["state"] != "ok")
        if m["state"] != "ok":
            assert m["detail"].get("reason"), m
    for f in report["failures"]:  # empty, or each explained
        assert f["message"] and f["item"] in summary.documents

    # checks from the LaTeX, recomputed independently for both parsers
    checks = json.loads((dest / "truth" / f"{PG9}.json").read_text())["checks"]
    texts = {"pymupdf": norm(pymupdf_text(dest / "docs" / f"{PG9}.pdf")),
             "docling": norm((dest / "outputs/docling" / f"{PG9}.md").read_text(encoding="utf-8"))}
    by_key = {(m["pipeline"], m["label"]): m for m in rows
              if m["item"] == PG9 and m["metric"] == "extraction.checks_pass"}
    for parser, output in texts.items():
        outcome = [(c["type"], passes(c, output)) for c in checks]
        for label in ("", "present", "order"):
            mine = [ok for t, ok in outcome if label in ("", t)]
            row = by_key[(parser, label)]
            assert (row["numerator"], row["denominator"]) == (sum(mine), len(mine)), (parser, label)
        assert by_key[(parser, "absent")]["state"] == "no_reference"
    # worked by reading the PDF text: PyMuPDF sets "difficult" with U+FB03, which text-v1 expands, so all 9 pass
    assert "di\ufb03cult" in pymupdf_text(dest / "docs" / f"{PG9}.pdf")
    assert by_key[("pymupdf", "")]["value"] == 1.0
    # documents without truth have extraction rows in state no_reference, not missing rows
    for doc in summary.documents:
        if doc != PG9:
            states = {m["state"] for m in rows if m["item"] == doc and m["stage"] == "extraction"}
            assert states == {"no_reference"}, doc


def test_import_refuses_a_latex_source_that_does_not_match_the_transcription(src, tmp_path):
    from ingestaudit.importers import SourceLayoutError

    fake = tmp_path / "src"
    (fake / "latex/sources/2305.03393").mkdir(parents=True)
    (fake / "sources").symlink_to(src / "sources")
    (fake / "groundtruth").symlink_to(src / "groundtruth")
    tex = (src / "latex/sources/2305.03393/main.tex").read_text()
    bad = fake / "latex/sources/2305.03393/main.tex"
    bad.write_text(tex.replace("\\subsection{Quantitative Results}", "\\subsection{Results}"))
    with pytest.raises(SourceLayoutError, match=r"main\.tex: no \\subsection\{Quantitative Results\}"):
        import_corpus("docling", fake, tmp_path / "a")
    bad.write_text(tex.replace("& 0.969  & 0.927", "& 0.969  & 0.928"))  # one number of Table 1 changed
    with pytest.raises(SourceLayoutError, match=r"main\.tex: the data rows of Table 1 differ"):
        import_corpus("docling", fake, tmp_path / "b")
    bad.unlink()
    with pytest.raises(SourceLayoutError, match=r"main\.tex: expected the LaTeX source"):
        import_corpus("docling", fake, tmp_path / "c")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]
