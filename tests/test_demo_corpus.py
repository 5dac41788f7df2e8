"""The demo corpus in fixtures/demo: it is exactly what scripts/make_demo_corpus.py generates, its truth files are
valid, and each tricky document really has the property it is there to exercise (checked on the files themselves
with PyMuPDF and pdfminer, independently of ingestaudit's parsers and auditors)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ingestaudit.truth import TextCheck, read_truth_file

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo"
SCRIPT = ROOT / "scripts" / "make_demo_corpus.py"
TEXT_SUFFIXES = {".txt", ".json", ".html", ".jsonl"}
LIGATURE_CHARS = "\ufb00\ufb01\ufb02\ufb03\ufb04"
SHY = "\u00ad"


def _files(root: Path) -> dict[str, Path]:
    """Every generated file: docs/, truth/ and questions.jsonl (not MANIFEST.json nor the README)."""
    files = {p.relative_to(root).as_posix(): p for sub in ("docs", "truth") for p in sorted((root / sub).rglob("*"))
             if p.is_file()}
    if (root / "questions.jsonl").is_file():
        files["questions.jsonl"] = root / "questions.jsonl"
    return files


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _manifest(root: Path) -> dict:
    return json.loads((root / "MANIFEST.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def truth_files() -> dict[str, object]:
    return {rel: read_truth_file(p, rel) for rel, p in _files(DEMO).items() if rel.endswith(".json")}


def _pdf_text(path: Path, sort: bool = False) -> str:
    import pymupdf

    with pymupdf.open(path) as doc:
        return "".join(page.get_text(sort=sort) for page in doc)


# --- the committed fixtures are the script's output ------------------------------------------------------------------

def test_regenerated_file_set_matches_committed_and_manifest(regenerated: Path) -> None:
    committed = set(_files(DEMO))
    assert set(_files(regenerated)) == committed
    assert set(_manifest(DEMO)["files"]) == committed


def test_committed_files_match_their_manifest_hashes() -> None:
    # A hand edit of any fixture (binary ones included) shows up here even when the PDF/PNG bytes cannot be
    # compared with a fresh run because the library versions differ.
    for rel, digest in _manifest(DEMO)["files"].items():
        assert hashlib.sha256((DEMO / rel).read_bytes()).hexdigest() == digest, rel


def test_regenerated_text_files_are_byte_identical(regenerated: Path) -> None:
    # Truth files and HTML are pure Python output: identical with any library version.
    committed = _files(DEMO)
    text_rels = [rel for rel in committed if Path(rel).suffix in TEXT_SUFFIXES]
    assert len(text_rels) == 24  # 10 documents x (.txt + .json) + 3 HTML pages + questions.jsonl
    for rel in text_rels:
        assert (regenerated / rel).read_bytes() == committed[rel].read_bytes(), rel


def test_regenerated_binaries_are_byte_identical(regenerated: Path) -> None:
    recorded = _manifest(DEMO)["versions"]
    current = _manifest(regenerated)["versions"]
    if recorded != current:
        pytest.skip(f"PDF/PNG bytes depend on library versions: fixtures made with {recorded}, this run has "
                    f"{current}; content is compared by the other tests (regenerate to refresh)")
    assert (regenerated / "MANIFEST.json").read_bytes() == (DEMO / "MANIFEST.json").read_bytes()
    for rel, path in _files(DEMO).items():
        assert (regenerated / rel).read_bytes() == path.read_bytes(), rel


def test_regenerated_pdfs_have_the_same_text_layer(regenerated: Path) -> None:
    for rel in (r for r in _files(DEMO) if r.endswith(".pdf")):
        assert _pdf_text(regenerated / rel) == _pdf_text(DEMO / rel), rel


def test_regenerated_images_have_the_same_size_and_nearly_the_same_pixels(regenerated: Path) -> None:
    import numpy as np
    from PIL import Image

    for rel in (r for r in _files(DEMO) if r.endswith(".png")):
        a = np.asarray(Image.open(DEMO / rel), dtype=np.int16)
        b = np.asarray(Image.open(regenerated / rel), dtype=np.int16)
        assert a.shape == b.shape, rel
        assert float(np.abs(a - b).mean()) <= 2.0, rel  # grey levels; 0.0 with the recorded versions


def test_corpus_stays_small() -> None:
    total = sum(p.stat().st_size for p in _files(DEMO).values())
    assert total < 2 * 1024 * 1024


# --- truth ----------------------------------------------------------------------------------------------------------

def test_every_document_has_a_valid_txt_and_json_truth(truth_files: dict) -> None:
    files = _files(DEMO)
    docs = sorted(rel.removeprefix("docs/").rsplit(".", 1)[0] for rel in files if rel.startswith("docs/"))
    assert len(docs) == 10
    assert {d.split("/")[0] for d in docs} == {"born_digital", "scanned", "web"}
    for doc_id in docs:
        assert f"truth/{doc_id}.txt" in files, doc_id
        assert f"truth/{doc_id}.json" in truth_files, doc_id
    truth_ids = {rel.removeprefix("truth/").rsplit(".", 1)[0] for rel in files if rel.startswith("truth/")}
    assert truth_ids == set(docs)  # no orphan truth file


def test_truth_languages_dup_groups_and_tables(truth_files: dict) -> None:
    langs = {rel: tf.language for rel, tf in truth_files.items()}
    assert langs.pop("truth/web/stadtbibliothek_oeffnungszeiten.json") == "de"
    assert set(langs.values()) == {"en"}
    groups = {rel: tf.dup_group for rel, tf in truth_files.items() if tf.dup_group}
    assert groups == {"truth/born_digital/bylaw_quiet_hours.json": "larkspur-bylaw-2023-14",
                      "truth/scanned/bylaw_quiet_hours_scan.json": "larkspur-bylaw-2023-14"}
    a = (DEMO / "truth/born_digital/bylaw_quiet_hours.txt").read_bytes()
    assert (DEMO / "truth/scanned/bylaw_quiet_hours_scan.txt").read_bytes() == a
    tables = {rel: tf.tables for rel, tf in truth_files.items() if tf.tables}
    assert set(tables) == {"truth/born_digital/bylaw_quiet_hours.json", "truth/scanned/bylaw_quiet_hours_scan.json",
                           "truth/web/kettle_faq.json"}
    assert tables["truth/web/kettle_faq.json"][0].startswith(
        "<table><thead><tr><th>Property</th><th>Value</th></tr></thead><tbody>")


def test_checks_hold_on_the_reference_text(truth_files: dict) -> None:
    n = 0
    for rel, tf in truth_files.items():
        ref = _collapse((DEMO / rel).with_suffix(".txt").read_text(encoding="utf-8"))
        for check in tf.checks:
            n += 1
            if isinstance(check, TextCheck):
                assert (check.text in ref) == (check.type == "present"), (rel, check)
            else:
                assert 0 <= ref.find(check.before) < ref.find(check.after), (rel, check)
    assert n >= 30


def test_reference_text_has_no_ligatures_or_soft_hyphens() -> None:
    for rel, path in _files(DEMO).items():
        if rel.startswith("truth/") and rel.endswith(".txt"):
            text = path.read_text(encoding="utf-8")
            assert not any(c in text for c in LIGATURE_CHARS + SHY), rel
            assert text.endswith("\n") and "\r" not in text, rel


# --- each document exercises what it is there for ---------------------------------------------------------------------

def test_born_digital_text_layer_has_ligatures_soft_hyphen_and_running_header() -> None:
    pump = _pdf_text(DEMO / "docs/born_digital/pump_field_note.pdf")
    assert "con\ufb01guration" in pump and "E\ufb03ciency" in pump and "di\ufb00erent" in pump
    assert "\ufb02uoro\u00ad\nelastomer" in pump  # soft hyphen at a line break, as in the case
    assert pump.count("Halvorsen Instruments · Field Note FN-07") == 2  # running header on both pages
    assert "Page 1 of 2" in pump and "Page 2 of 2" in pump
    ref = (DEMO / "truth/born_digital/pump_field_note.txt").read_text(encoding="utf-8")
    assert "configuration" in ref and "fluoroelastomer" in ref


def test_off_page_text_is_in_the_file_but_outside_the_page() -> None:
    # The absent check's text is really in the content stream (pdfminer extracts it) but below the media box, where
    # PyMuPDF clips it: the check separates the two behaviours.
    from pdfminer.high_level import extract_text

    path = DEMO / "docs/born_digital/pump_field_note.pdf"
    assert "Proof slug: job 4471" in extract_text(str(path))
    assert "Proof slug" not in _pdf_text(path)


@pytest.mark.parametrize("sort", [False, True], ids=["content-stream", "line-interleaved"])
def test_right_first_page_fails_its_order_check_in_stream_and_interleaved_order(truth_files: dict,
                                                                              sort: bool) -> None:
    tf = truth_files["truth/born_digital/lab_notes_right_first.json"]
    check = next(c for c in tf.checks if c.type == "order" and c.before == "clear standing water from the")
    text = _collapse(_pdf_text(DEMO / "docs/born_digital/lab_notes_right_first.pdf", sort=sort))
    before, after = text.find(check.before), text.find(check.after)
    assert before >= 0 and after >= 0  # both snippets survive; only their order is wrong
    assert after < before


def test_normal_two_column_page_passes_in_stream_order_and_fails_interleaved(truth_files: dict) -> None:
    tf = truth_files["truth/born_digital/pump_field_note.json"]
    check = next(c for c in tf.checks if c.type == "order" and c.before == "speed for two minutes with water")
    path = DEMO / "docs/born_digital/pump_field_note.pdf"
    stream, interleaved = _collapse(_pdf_text(path)), _collapse(_pdf_text(path, sort=True))
    assert 0 <= stream.find(check.before) < stream.find(check.after)
    assert 0 <= interleaved.find(check.after) < interleaved.find(check.before)


def test_scans_are_images_and_the_image_only_pdf_has_no_text_layer() -> None:
    import pymupdf
    from PIL import Image

    sizes = {}
    for name in ("bylaw_quiet_hours_scan", "notice_water_main", "recipe_card_degraded"):
        with Image.open(DEMO / f"docs/scanned/{name}.png") as im:
            assert im.mode == "L"
            sizes[name] = (im.size, round(im.info["dpi"][0]))
    # A4 at 150 DPI: 595 x 842 pt * 150 / 72 = 1240 x 1754.2 (MuPDF rounds the edge up); A5 at 200 and 150 DPI.
    assert sizes == {"bylaw_quiet_hours_scan": ((1240, 1755), 150), "notice_water_main": ((1167, 1653), 200),
                     "recipe_card_degraded": ((875, 1240), 150)}
    with pymupdf.open(DEMO / "docs/scanned/allotment_minutes.pdf") as doc:
        assert doc.page_count == 1
        assert doc[0].get_text().strip() == ""
        assert len(doc[0].get_images()) == 1


def test_web_pages_hide_what_the_absent_checks_name(truth_files: dict) -> None:
    # Each absent text is in the HTML source (script, comment or hidden element), so the check has teeth.
    n = 0
    for rel, tf in truth_files.items():
        if not rel.startswith("truth/web/"):
            continue
        source = (DEMO / rel.replace("truth/", "docs/", 1)).with_suffix(".html").read_text(encoding="utf-8")
        for check in tf.checks:
            if check.type == "absent":
                n += 1
                assert check.text in source, (rel, check.text)
        assert tf.boilerplate is not None and tf.boilerplate.without and tf.boilerplate.with_
    assert n == 8


# --- questions.jsonl ------------------------------------------------------------------------------------------------

def test_questions_are_valid_and_cover_every_evidence_kind() -> None:
    import pymupdf

    from ingestaudit.corpus import discover
    from ingestaudit.questions import filter_passes, load_questions
    from ingestaudit.truth import load_truth

    corpus = discover(DEMO)
    truths = {d.doc_id: load_truth(d, corpus.root) for d in corpus.documents}
    qs = load_questions(DEMO / "questions.jsonl", "questions.jsonl", truths)
    assert qs.problems == ()
    assert 12 <= len(qs.questions) <= 16
    kinds = [ev.kind for q in qs.questions for ev in q.relevant]
    assert kinds.count("span") >= 10 and kinds.count("section") >= 2 and kinds.count("page") >= 1
    for q in qs.questions:
        for ev in q.relevant:
            truth = truths[ev.doc]
            if ev.kind == "span":  # a span starts and ends on word boundaries of the reference text
                assert truth.text[ev.start:ev.end].strip() == truth.text[ev.start:ev.end], q.id
                assert ev.start == 0 or not truth.text[ev.start - 1].isalnum(), q.id
                assert ev.end == len(truth.text) or not truth.text[ev.end].isalnum(), q.id
            elif ev.kind == "section":
                assert ev.section in [h.text for h in truth.headings], q.id
            elif ev.kind == "page":
                with pymupdf.open(DEMO / f"docs/{ev.doc}.pdf") as doc:
                    assert doc.page_count > 1 and ev.page <= doc.page_count, q.id
    by_id = {q.id: q for q in qs.questions}
    assert [ev.grade for ev in by_id["demo-06"].relevant] == [2, 1]  # a multi-passage question, graded
    assert [q.id for q in qs.questions if not q.answerable] == ["demo-16"]
    filtered = {q.id: [filter_passes(q.filter, truths[ev.doc].metadata or {}) for ev in q.relevant]
                for q in qs.questions if q.filter}
    assert filtered == {"demo-12": [True], "demo-13": [True], "demo-14": [False]}  # demo-14: a false exclusion
