"""Issue 25, scope 4: a parse that returned no text where the reference has some is a failure (``empty_output``,
with the parser's warning and the document), and the headline's extraction cell counts such documents."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.report.schema import read_report
from ingestaudit.report.tables import headlines


def _corpus(root: Path) -> tuple[Path, Path]:
    """Two documents of class ``a``; the precomputed pipeline ``mine`` returns no text for ``one`` (with a warning)
    and the reference text for ``two``."""
    for rel, text in (("one", "Hello world here."), ("two", "Second text.")):
        (root / "c" / "docs" / "a").mkdir(parents=True, exist_ok=True)
        (root / "c" / "truth" / "a").mkdir(parents=True, exist_ok=True)
        (root / "c" / "docs" / "a" / f"{rel}.txt").write_text("x", encoding="utf-8")
        (root / "c" / "truth" / "a" / f"{rel}.txt").write_text(text, encoding="utf-8")
    out = root / "outs" / "mine" / "a"
    out.mkdir(parents=True)
    (out / "one.json").write_text(json.dumps({"text": "  \n", "warnings": ["no text layer on page 1"]}), "utf-8")
    (out / "two.json").write_text(json.dumps({"text": "Second text."}), "utf-8")
    return root / "c", root / "outs"


def test_empty_output_is_a_failure_with_its_warning_and_counted_in_the_headline(tmp_path):
    corpus, outs = _corpus(tmp_path)
    r = CliRunner().invoke(app, ["run", str(corpus), "--outputs", str(outs), "--executor", "serial", "--stage",
                                 "extraction", "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    report = read_report(tmp_path / "out" / "report.json")
    empty = [f for f in report.failures if f.message.startswith("empty_output")]
    assert [(f.item, f.pipeline, f.stage) for f in empty] == [("a/one", "mine", "extraction")]
    assert empty[0].message == ("empty_output: mine returned no text for one.txt (the reference has 17 characters); "
                                "parser warning: no text layer on page 1")
    # cer_norm micro = (17 deletions + 0) / (17 + 12) reference code points = 17/29 = 0.5862
    row = next(r for h in headlines(report) if h.doc_class == "a" for r in h.rows if r.stage == "extraction")
    assert row.metric == "extraction.cer_norm"
    assert row.cells[0].empty == 1 and row.cells[0].text().startswith("0.5862 (1 empty) [")
    assert "0.5862 (1 empty) n=2" in r.output
    md = (tmp_path / "out" / "report.md").read_text("utf-8")
    assert "## Failures (1)" in md and "| 0.5862 (1 empty) \\[0, 1\\] n=2 |" in md
    assert ("- `a/one` mine extraction: empty\\_output: mine returned no text for one.txt (the reference has 17 "
            "characters); parser warning: no text layer on page 1") in md


def test_no_empty_output_failure_without_reference_text_or_with_some_output():
    from ingestaudit.document import Document
    from ingestaudit.document_steps import Task, empty_output_failure
    from ingestaudit.model import ParsedDocument
    from ingestaudit.parsers.routing import ParserSpec
    from ingestaudit.pipeline import Pipeline
    from ingestaudit.truth import Truth

    def task(ref: str | None) -> Task:
        doc = Document(doc_id="a/x", doc_class="a", path=Path("/c/docs/a/x.pdf"))
        return Task(doc, "a", Truth(text=ref), Pipeline("p", ()), ParserSpec("p"), ())

    def parsed(text: str) -> ParsedDocument:
        return ParsedDocument(text=text, parser="p")

    assert empty_output_failure(task(None), parsed("")) == ""  # no reference: nothing was lost
    assert empty_output_failure(task(" \n"), parsed("")) == ""  # an empty reference: nothing to extract
    assert empty_output_failure(task("abc"), parsed(" x ")) == ""
    assert empty_output_failure(task(" abc\n"), parsed("\n\t"), ("w1", "w2")) == (
        "empty_output: p returned no text for x.pdf (the reference has 3 characters); parser warning: w1")


def test_a_zero_byte_txt_is_empty_output_not_a_parse_error(tmp_path):
    """A 0-byte ``.txt`` was the parse error "zero-byte file"; it is a parse with no text: ``empty_output`` (CER 1)
    when the reference has text, and without a reference the rows of a white-space ``.txt`` (no failure)."""
    import pandas as pd

    root = tmp_path / "c"
    (root / "docs" / "a").mkdir(parents=True)
    (root / "truth" / "a").mkdir(parents=True)
    (root / "docs" / "a" / "one.txt").write_bytes(b"")
    (root / "truth" / "a" / "one.txt").write_text("Hello world here.", encoding="utf-8")
    (root / "docs" / "a" / "three.txt").write_bytes(b"")  # no reference
    (root / "docs" / "a" / "five.txt").write_text(" \n", encoding="utf-8")  # no reference, white space only
    r = CliRunner().invoke(app, ["run", str(root), "--parser", "unstructured", "--executor", "serial", "--stage",
                                 "extraction", "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    report = read_report(tmp_path / "out" / "report.json")
    assert [(f.item, f.stage, f.message) for f in report.failures] == [
        ("a/one", "extraction", "empty_output: unstructured returned no text for one.txt (the reference has 17 "
                                "characters); parser warning: one.txt: zero-byte file, no text")]
    rows = pd.read_parquet(tmp_path / "out" / "measurements.parquet")
    cer = rows[(rows.metric == "extraction.cer")].set_index("item")
    assert cer.loc["a/one", "state"] == "ok" and cer.loc["a/one", "value"] == 1.0  # 17 deletions / 17
    states = {item: sorted(zip(g.metric, g.state)) for item, g in rows.groupby("item")}
    assert states["a/three"] == states["a/five"] and {s for _, s in states["a/three"]} == {"no_reference"}
