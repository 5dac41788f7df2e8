"""olmOCR-Bench sample (../shared/data/olmocr-bench-sample): import it as a corpus, audit it end to end with PyMuPDF
and olmOCR's own precomputed Markdown, and recompute every check outcome independently of ingestaudit.

The independent recomputation below uses its own code: a small normalization written from the documented text-v1
rules (ligatures U+FB00-FB06 spelled out, curly quotes and dashes folded, NFC, white space collapsed), Sellers'
dynamic programme for approximate substring matching (Sellers 1980, the textbook O(m n) recurrence, not
ingestaudit's bit-parallel Myers search) and the olmOCR order rule (some match of ``before`` starts before some match
of ``after``). Texts come straight from PyMuPDF (``page.get_text()``, the parser's documented defaults) and from the
Markdown files.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.importers import DestinationNotEmpty, SourceLayoutError, get_importer, import_corpus
from _rows import measurements

SRC_NAME = "olmocr-bench-sample"
CHECK_TYPES = ("present", "absent", "order")

# --- independent re-implementation of the checks ---------------------------------------------------------------

_LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st",
              "\ufb06": "st"}
_QUOTES = {"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u02bc": "'",
           "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"'}
_DASHES = {c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"}
_INVISIBLE = {c: "" for c in "\u00ad\u200b\u200c\u200d\u2060\ufeff"}
_TABLE = str.maketrans({**_LIGATURES, **_QUOTES, **_DASHES, **_INVISIBLE})


def norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text.translate(_TABLE)).split())


def sellers_ends(pattern: str, text: str, k: int) -> list[int]:
    """End positions e (exclusive) with min_s Lev(pattern, text[s:e]) <= k (Sellers' column recurrence)."""
    if k == 0:
        ends, p = [], text.find(pattern)
        while p != -1:
            ends.append(p + len(pattern))
            p = text.find(pattern, p + 1)
        return ends
    col = list(range(len(pattern) + 1))
    ends = []
    for j, c in enumerate(text):
        new = [0]
        for i in range(1, len(pattern) + 1):
            new.append(min(col[i] + 1, new[i - 1] + 1, col[i - 1] + (pattern[i - 1] != c)))
        col = new
        if col[-1] <= k:
            ends.append(j + 1)
    return ends


def sellers_starts(pattern: str, text: str, k: int) -> list[int]:
    return sorted(len(text) - e for e in sellers_ends(pattern[::-1], text[::-1], k))


def passes(check: dict, output: str) -> bool:
    k = check.get("max_diffs", 0)
    if check["type"] == "order":
        b = sellers_starts(norm(check["before"]), output, k)
        a = sellers_starts(norm(check["after"]), output, k)
        return bool(b and a and b[0] < a[-1])
    found = bool(sellers_ends(norm(check["text"]), output, k))
    return found if check["type"] == "present" else not found


def pymupdf_text(pdf: Path) -> str:
    import pymupdf

    with pymupdf.open(pdf) as doc:
        return "\n\n".join(page.get_text().rstrip("\n") for page in doc)


def olmocr_text(folder: Path, doc: str) -> str:
    md = folder / f"{doc}.md"
    if md.exists():
        return md.read_text(encoding="utf-8")
    return "\n\n".join(json.loads((folder / f"{doc}.json").read_text(encoding="utf-8"))["pages"])


# --- helpers -------------------------------------------------------------------------------------------------------

def strict_json(path: Path) -> dict:
    def no_constant(name: str):
        raise AssertionError(f"{path} contains {name}")

    return json.loads(path.read_text(encoding="utf-8"), parse_constant=no_constant)


def raw_tests(src: Path) -> list[dict]:
    out = []
    for f in sorted(src.glob("*.jsonl")):
        out += [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out


@pytest.fixture(scope="module")
def src(shared_dataset) -> Path:
    return shared_dataset(SRC_NAME)


@pytest.fixture(scope="module")
def imported(src: Path, tmp_path_factory):
    dest = tmp_path_factory.mktemp("olmocr") / "corpus"
    return dest, import_corpus("olmocr-bench", src, dest)


# --- importer ------------------------------------------------------------------------------------------------------

def test_import_counts_match_the_raw_dataset(src, imported):
    dest, summary = imported
    tests = raw_tests(src)
    # Expected from the raw files, computed here: a present/absent/order test is importable unless it is
    # case-insensitive (case_sensitive: false) or windowed (first_n/last_n); everything else is listed, not dropped.
    importable = [t for t in tests if t["type"] in CHECK_TYPES and t.get("case_sensitive", True)
                  and t.get("first_n") is None and t.get("last_n") is None]
    assert summary.imported == dict(Counter(t["type"] for t in importable))
    assert sum(summary.imported.values()) + len(summary.unsupported) == len(tests)
    # The sample's README counts: present 30, absent 5, order 13, table 20, math 12 (+1 baseline in blanks.jsonl);
    # three present tests of buildingnotes.pdf are case-insensitive.
    assert summary.imported == {"present": 27, "absent": 5, "order": 13}
    assert summary.unsupported_counts() == {"baseline": 1, "math": 12, "present": 3, "table": 20}
    assert all(u.reason and u.source.split(":")[0].endswith(".jsonl") for u in summary.unsupported)
    assert {u.item for u in summary.unsupported if u.kind == "present"} == {
        "building_notes_00", "building_notes_01", "building_notes_02"}

    pdfs = sorted(p.stem for p in (src / "pdfs").glob("*.pdf"))
    assert summary.documents == tuple(f"olmocr/{n}" for n in pdfs)
    for n in pdfs:
        link = dest / "docs" / "olmocr" / f"{n}.pdf"
        assert link.is_symlink() and Path(link.readlink()).is_absolute()
        assert link.resolve() == (src / "pdfs" / f"{n}.pdf").resolve()
    # truth: the checks of each PDF, in file order, with max_diffs kept
    for n in pdfs:
        want = [t for t in importable if t["pdf"] == f"{n}.pdf"]
        truth = dest / "truth" / "olmocr" / f"{n}.json"
        if not want:
            assert not truth.exists()
            continue
        got = json.loads(truth.read_text(encoding="utf-8"))["checks"]
        assert [c["type"] for c in got] == [t["type"] for t in want]
        assert [c["max_diffs"] for c in got] == [t.get("max_diffs", 0) for t in want]
        assert [c.get("text", c.get("before")) for c in got] == [t.get("text", t.get("before")) for t in want]
    assert json.loads((dest / "import.json").read_text())["unsupported_counts"] == summary.unsupported_counts()


def test_import_olmocr_outputs(src, imported):
    dest, summary = imported
    out = dest / "outputs" / "olmocr" / "olmocr"
    assert summary.outputs == {"olmocr": len(list(out.glob("*.*")))} == {"olmocr": 14}
    single = out / "earnings.md"
    assert single.is_symlink()
    assert single.resolve() == (src / "olmocr_pipeline" / "earnings_pg1_repeat1.md").resolve()
    # mattsnotes.pdf has 3 pages: olmOCR's three page files, in page order, as a precomputed JSON output
    pages = [(src / "olmocr_pipeline" / f"mattsnotes_pg{p}_repeat1.md").read_text() for p in (1, 2, 3)]
    assert json.loads((out / "mattsnotes.json").read_text()) == {"pages": pages}
    assert not (out / "mattsnotes.md").exists()
    assert summary.extra["pages"]["olmocr/mattsnotes"] == 3
    assert any("mattsnotes_minediff_03" in n for n in summary.notes)


def test_import_refuses_a_non_empty_destination(src, tmp_path):
    (tmp_path / "keep.txt").write_text("x")
    with pytest.raises(DestinationNotEmpty):
        get_importer("olmocr-bench")(src, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_import_into_an_existing_empty_folder_and_unknown_kind(src, tmp_path):
    from ingestaudit.importers import UnknownImporter

    dest = tmp_path / "empty"
    dest.mkdir()
    summary = import_corpus("olmocr-bench", src, dest)
    assert sorted(p.name for p in dest.iterdir()) == ["docs", "import.json", "outputs", "truth"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]  # the staging folder was moved, not left
    assert "not imported (36): baseline 1, math 12, present 3, table 20" in "\n".join(summary.lines())
    with pytest.raises(UnknownImporter) as err:
        get_importer("olmocr")
    assert all(kind in str(err.value) for kind in ("dinglehopper", "docling", "olmocr-bench"))


def test_import_names_the_missing_or_bad_source_file(src, tmp_path):
    with pytest.raises(SourceLayoutError, match="pdfs"):
        import_corpus("olmocr-bench", tmp_path / "nothing", tmp_path / "a")
    fake = tmp_path / "fake"
    (fake / "pdfs").mkdir(parents=True)
    (fake / "pdfs" / "x.pdf").symlink_to(src / "pdfs" / "earnings.pdf")
    (fake / "t.jsonl").write_text('{"pdf": "x.pdf", "id": "a", "type": "present", "text": "1,136"}\n'
                                  '{"pdf": "y.pdf", "id": "b", "type": "present", "text": "q"}\n')
    with pytest.raises(SourceLayoutError, match=r"t\.jsonl:2: test 'b' names 'y\.pdf'"):
        import_corpus("olmocr-bench", fake, tmp_path / "b")
    assert not (tmp_path / "b").exists()  # nothing is left behind
    (fake / "t.jsonl").write_text('{"pdf": "x.pdf", "id": "a", "type": "present", "text": "1,136"\n')
    with pytest.raises(SourceLayoutError, match=r"t\.jsonl:1: invalid JSON"):
        import_corpus("olmocr-bench", fake, tmp_path / "c")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # staging folders removed


# --- end to end ----------------------------------------------------------------------------------------------------

def test_end_to_end_checks_pass_rate_per_parser_and_type(src, imported, tmp_path):
    from ingestaudit.cli import app

    dest, summary = imported
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["run", str(dest), "--parser", "pymupdf", "--outputs", str(dest / "outputs"),
                                 "--out", str(out), "--workers", "2"])
    assert r.exit_code == 0, r.output
    report = strict_json(out / "report.json")
    assert [p["name"] for p in report["pipelines"]] == ["pymupdf", "olmocr"]
    rows = measurements(out)

    # every document has rows for every parser (a value or a state)
    for parser in ("pymupdf", "olmocr"):
        assert {m["item"] for m in rows if m["pipeline"] == parser} == set(summary.documents)

    # the summary has the check pass rate per parser, per check type, for the class and overall
    summ = {(s["pipeline"], s["doc_class"], s["label"]): s for s in report["summary"]
            if s["metric"] == "extraction.checks_pass"}
    for parser in ("pymupdf", "olmocr"):
        for cls in ("olmocr", "__all__"):
            for label in ("",) + CHECK_TYPES:
                s = summ[(parser, cls, label)]
                assert s["ci_method"].startswith("wilson") or s["n_docs"] == 0

    # independent recomputation of every check of every document, for both parsers
    truth = {d: json.loads((dest / "truth" / f"{d}.json").read_text())["checks"]
             for d in summary.documents if (dest / "truth" / f"{d}.json").exists()}
    texts = {
        "pymupdf": {d: norm(pymupdf_text(dest / "docs" / f"{d}.pdf")) for d in truth},
        "olmocr": {d: norm(olmocr_text(dest / "outputs" / "olmocr", d)) for d in truth},
    }
    ok_rows = {(m["item"], m["pipeline"], m["label"]): m for m in rows
               if m["metric"] == "extraction.checks_pass" and m["state"] == "ok"}
    totals = {p: Counter() for p in texts}
    for parser, by_doc in texts.items():
        for doc, checks in truth.items():
            outcome = [(c["type"], passes(c, by_doc[doc])) for c in checks]
            for label in ("",) + CHECK_TYPES:
                mine = [ok for t, ok in outcome if label in ("", t)]
                if not mine:
                    continue
                row = ok_rows[(doc, parser, label)]
                assert (row["numerator"], row["denominator"]) == (sum(mine), len(mine)), (doc, parser, label)
                totals[parser][label, "pass"] += sum(mine)
                totals[parser][label, "n"] += len(mine)
    for parser in texts:
        for label in ("",) + CHECK_TYPES:
            s = summ[(parser, "__all__", label)]
            assert s["micro"] == pytest.approx(totals[parser][label, "pass"] / totals[parser][label, "n"])

    # documents without any importable check (blank_book_pg1, buildingnotes) are no_reference, not dropped
    for d in set(summary.documents) - set(truth):
        states = {m["state"] for m in rows if m["item"] == d and m["metric"] == "extraction.checks_pass"}
        assert states == {"no_reference"}

    # A worked case, from the PDF by eye: mathfuncs_colswitch.pdf stores section 3 before section 2 in its content
    # stream, so PyMuPDF's default order fails "Pythagorean Theorem" before "The Fundamental Theorem of Calculus"
    # and passes the other two order checks: 2 of 3.
    row = ok_rows[("olmocr/mathfuncs_colswitch", "pymupdf", "order")]
    assert (row["numerator"], row["denominator"]) == (2, 3)
    assert [f["before"] for f in row["detail"]["failing"]] == ["Pythagorean Theorem"]
    assert all(math.isfinite(m["value"]) for m in rows if m["value"] is not None)
