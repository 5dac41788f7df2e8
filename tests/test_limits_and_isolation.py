"""Issue 15, part G1: the rest of the trust boundary, input size limits, no quadratic label checks, per-item
isolation and parser warnings, each with its hostile input.

Runs use the ``reference`` parser (it reads the truth text: no PDF library needed) and, where nothing needs a worker
process, the ``serial`` executor, so each test takes a second or two.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.auditors.base import ItemArtefacts
from ingestaudit.cli import app
from ingestaudit.config import ConfigError, Limits, load_config
from ingestaudit.corpus import discover
from _rows import load_report, measurements


def corpus(root: Path, docs: dict[str, str | bytes], truth: dict[str, str] | None = None,
           toml: str | None = None, questions: list[str] | None = None) -> Path:
    for rel, body in docs.items():
        path = root / "docs" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body) if isinstance(body, bytes) else path.write_text(body, encoding="utf-8")
    for rel, text in (truth or {}).items():
        (root / "truth" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "truth" / rel).write_text(text, encoding="utf-8")
    if toml is not None:
        (root / "ingestaudit.toml").write_text(toml, encoding="utf-8")
    if questions is not None:
        (root / "questions.jsonl").write_text("\n".join(questions) + "\n", encoding="utf-8")
    return root


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


def run_report(c: Path, out: Path, *extra: str) -> dict:
    """``run`` with the reference parser, serial, auditing ``extraction`` only unless ``extra`` names stages."""
    stages = () if "--stage" in extra else ("--stage", "extraction")
    r = cli("run", str(c), "-p", "reference", "--executor", "serial", "--out", str(out), *stages, *extra)
    assert r.exit_code == 0, r.output
    return load_report(out)


def states(rep: dict, item: str, metric: str = "extraction.cer") -> set[str]:
    return {m["state"] for m in measurements(rep) if m["item"] == item and m["metric"] == metric}


def reasons(rep: dict, item: str, metric: str = "extraction.cer") -> set[str]:
    return {m["detail"].get("reason", "") for m in measurements(rep) if m["item"] == item and m["metric"] == metric}


# --- 1. trust boundary: write paths and module paths in a plug-in's options ----------------------------------------

def test_a_corpus_toml_cannot_set_a_write_path_or_a_module_path_through_plugin_options(tmp_path):
    marker = tmp_path / "CACHE-MARKER"
    toml = textwrap.dedent(f"""\
        [pipelines.p]
        embedder = {{ use = "minilm", cache_dir = "{marker}" }}
        [parser_options.reference]
        log_file = "{tmp_path / 'LOG-MARKER'}"
        [auditor_options.pii]
        detector_options = {{ factory = "os:system", nested = {{ model_path = "/x" }} }}
        placeholder_pattern = "(?:<x>)"
        [limits]
        doc_bytes = 10000000000000
        """)
    c = corpus(tmp_path / "c", {"a/x.txt": "x"}, {"a/x.txt": "hello"}, toml=toml)
    fields = ["pipelines.p.embedder.cache_dir", "parser_options.reference.log_file",
              "auditor_options.pii.detector_options.factory", "auditor_options.pii.detector_options.nested.model_path",
              "limits.doc_bytes"]
    r = cli("run", str(c), "--stage", "chunking", "--out", str(tmp_path / "o"))
    assert r.exit_code == 2, r.output
    flat = r.output.replace("\n", "")
    assert all(f in flat for f in fields), r.output
    assert "placeholder_pattern" not in flat  # a regular expression holding ':' is no module path
    assert not marker.exists() and not (tmp_path / "LOG-MARKER").exists() and not (tmp_path / "o").exists()
    v = cli("validate", str(c))
    assert v.exit_code == 2 and all(f in v.output.replace("\n", "") for f in fields), v.output
    assert not marker.exists()
    # the same file given by the user (--config) is trusted
    cfg = load_config(c / "ingestaudit.toml", trusted=True)
    assert cfg.pipelines["p"]["embedder"]["cache_dir"] == str(marker) and cfg.limits.doc_bytes == 10 ** 13


def test_values_that_only_look_odd_are_not_refused(tmp_path):
    path = tmp_path / "ingestaudit.toml"
    path.write_text('[parser_options.pymupdf]\npassword = "user:secret"\n[auditor_options.pii]\n'
                    'label_map = "PER=PERSON"\nplaceholder = "[{type}]"\n[limits]\ndoc_bytes = 1000\n',
                    encoding="utf-8")
    cfg = load_config(path)
    assert cfg.parser_options["pymupdf"]["password"] == "user:secret" and cfg.limits.doc_bytes == 1000


def test_every_limit_refuses_a_raise_in_a_corpus_toml(tmp_path):
    path = tmp_path / "ingestaudit.toml"
    defaults = Limits()
    path.write_text("[limits]\n" + "".join(f"{k} = {getattr(defaults, k) + 1}\n" for k in Limits.model_fields))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert all(f"limits.{k}: {getattr(defaults, k) + 1} is above the default" in str(err.value)
               for k in Limits.model_fields)
    path.write_text("[run]\ndoc_timeout_s = 301\n")  # the time budget too
    with pytest.raises(ConfigError, match=r"run.doc_timeout_s: 301 s is above the default 300 s"):
        load_config(path)
    path.write_text("[run]\ndoc_timeout_s = 2\n[limits]\nspans = 10\n")  # lowering is fine
    assert load_config(path).limits.spans == 10


# --- 2. input size limits ---------------------------------------------------------------------------------------------

def test_a_document_over_doc_bytes_is_skipped_never_opened_and_its_hash_covers_its_size(tmp_path, monkeypatch):
    c = corpus(tmp_path / "c", {"a/big.txt": "x" * 2000, "a/ok.txt": "x"},
               {"a/big.txt": "hello", "a/ok.txt": "hello world"}, toml="[limits]\ndoc_bytes = 1000\n")
    big = c / "docs/a/big.txt"
    real_open = Path.open

    def guarded(self, *a, **k):
        assert Path(self).resolve() != big.resolve(), "an over-limit document was opened"
        return real_open(self, *a, **k)

    monkeypatch.setattr(Path, "open", guarded)
    rep = run_report(c, tmp_path / "o")
    assert states(rep, "a/big") == {"skipped"}
    assert reasons(rep, "a/big") == {"docs/a/big.txt: <file>: 2000 bytes, over limits.doc_bytes = 1000: not read"}
    assert {"ok"} == states(rep, "a/ok")
    assert [f["message"] for f in rep["failures"] if f["item"] == "a/big"] == [
        "docs/a/big.txt: <file>: 2000 bytes, over limits.doc_bytes = 1000: not read"]
    assert [f["stage"] for f in rep["failures"] if f["item"] == "a/big"] == ["limits"]
    # the item hash: kind, then the size token instead of the bytes (worked by hand)
    from ingestaudit.report.schema import ITEM_HASH_DIGITS

    h = hashlib.sha256(b"doc\0over-limit:2000\0txt\0hello\0json\0-\0").hexdigest()
    assert rep["corpus"]["item_hashes"]["a/big"] == h[:ITEM_HASH_DIGITS]
    assert rep["config"]["limits"]["doc_bytes"] == 1000
    monkeypatch.undo()
    v = cli("validate", str(c))
    assert v.exit_code == 2 and "docs/a/big.txt: <file>: 2000 bytes, over limits.doc_bytes = 1000" in v.output


def test_item_hashes_and_fingerprint_are_unchanged_for_files_within_the_limits(tmp_path):
    from ingestaudit.report.provenance import item_hashes

    c = corpus(tmp_path / "c", {"a/x.txt": "abc"}, {"a/x.txt": "ref", "a/x.json": '{"language": "en"}'})
    found = discover(c)
    from ingestaudit.report.schema import ITEM_HASH_DIGITS

    expected = hashlib.sha256(b"doc\0abc\0txt\0ref\0json\0" + b'{"language": "en"}' + b"\0").hexdigest()
    assert item_hashes(found) == {"a/x": expected[:ITEM_HASH_DIGITS]}
    fp = hashlib.sha256()
    for rel, body in (("docs/a/x.txt", b"abc"), ("truth/a/x.json", b'{"language": "en"}'), ("truth/a/x.txt", b"ref")):
        fp.update(rel.encode() + b"\0" + hashlib.sha256(body).digest() + b"\1")
    assert found.fingerprint() == fp.hexdigest()


def test_a_sparse_20_gb_document_is_skipped_before_any_read(tmp_path):
    c = corpus(tmp_path / "c", {"a/ok.txt": "x"}, {"a/ok.txt": "hello world", "a/huge.txt": "hello"})
    with open(c / "docs/a/huge.txt", "wb") as fh:
        fh.truncate(20 * 10 ** 9)  # sparse: no disk used
    rep = run_report(c, tmp_path / "o")
    assert states(rep, "a/huge") == {"skipped"}
    assert any("20000000000 bytes, over limits.doc_bytes = 1073741824" in r for r in reasons(rep, "a/huge"))
    assert states(rep, "a/ok") == {"ok"}


@pytest.mark.parametrize("toml, truth, where", [
    ("truth_bytes = 20", {"a/x.txt": "hello world, longer than 20 bytes"},
     "truth/a/x.txt: <file>: 33 bytes, over limits.truth_bytes = 20: not read"),
    ("json_depth = 3", {"a/x.txt": "hello", "a/x.json": '{"sections": [{"children": [{"children": []}]}]}'},
     "truth/a/x.json: sections[0].children: nested more than 3 levels deep (limits.json_depth = 3)"),
    ("spans = 2", {"a/x.txt": "Ana Bo Cy", "a/x.json": json.dumps(
        {"pii": [{"start": 0, "end": 3, "type": "PERSON"}, {"start": 4, "end": 6, "type": "PERSON"},
                 {"start": 7, "end": 9, "type": "PERSON"}]})},
     "truth/a/x.json: pii: 3 spans (pii), over limits.spans = 2"),
    ("tables = 2", {"a/x.txt": "hello", "a/x.json": json.dumps({"tables": ["<table><tr><td>1</td></tr></table>"] * 3})},
     "truth/a/x.json: tables: 3 tables, over limits.tables = 2"),
])
def test_labels_over_a_limit_skip_their_document_and_are_a_problem_of_validate(tmp_path, toml, truth, where):
    c = corpus(tmp_path / "c", {"a/x.txt": "x", "a/ok.txt": "x"}, {**truth, "a/ok.txt": "hello world"},
               toml=f"[limits]\n{toml}\n")
    v = cli("validate", str(c))
    assert v.exit_code == 2 and where in v.output, v.output
    rep = run_report(c, tmp_path / "o")
    assert states(rep, "a/x") == {"skipped"} and reasons(rep, "a/x") == {where}
    assert [(f["stage"], f["message"]) for f in rep["failures"] if f["item"] == "a/x"] == [("limits", where)]
    assert states(rep, "a/ok") == {"ok"}


def test_tables_html_counts_towards_the_tables_limit(tmp_path):
    from ingestaudit.truth import TruthError, load_truth

    table = "<table><tr><td>1</td></tr></table>"
    c = corpus(tmp_path / "c", {"a/x.txt": "x"}, {"a/x.json": json.dumps({"tables": [table]}),
                                                 "a/x.tables.html": table * 2})
    doc = discover(c).documents[0]
    assert len(load_truth(doc, c, Limits(tables=3)).tables) == 3
    with pytest.raises(TruthError) as err:
        load_truth(doc, c, Limits(tables=2))
    assert [(p.file, p.field, p.limit) for p in err.value.problems] == [("truth/a/x.tables.html", "tables", "tables")]
    assert "3 tables in the truth files, over limits.tables = 2" in str(err.value)


def test_questions_over_a_limit_are_problems_of_their_line_and_the_others_are_kept(tmp_path):
    good = json.dumps({"id": "q1", "question": "hello?", "relevant": [{"doc": "a/x"}]})
    long = json.dumps({"id": "q2", "question": "x" * 300, "relevant": [{"doc": "a/x"}]})
    deep = '{"id": "q3", "question": "deep?", "relevant": [{"doc": "a/x"}], "filter": {"a": [[[[1]]]]}}'
    c = corpus(tmp_path / "c", {"a/x.txt": "x"}, {"a/x.txt": "hello world"},
               toml="[limits]\nquestion_line_chars = 200\njson_depth = 4\n", questions=[good, long, deep])
    v = cli("validate", str(c))
    assert v.exit_code == 2
    assert len(long) == 358
    assert "questions.jsonl: line 2: 358 code points, over limits.question_line_chars = 200" in v.output
    assert "questions.jsonl: line 3: filter.a[0][0]: nested more than 4 levels deep (limits.json_depth = 4)" in v.output
    from ingestaudit.questions import load_questions
    from ingestaudit.truth import Truth

    qs = load_questions(c / "questions.jsonl", "questions.jsonl", {"a/x": Truth(text="hello world")},
                        Limits(question_line_chars=200, json_depth=4))
    assert [q.id for q in qs.questions] == ["q1"] and [p.limit for p in qs.problems] == ["question_line_chars",
                                                                                         "json_depth"]
    bom = tmp_path / "bom.jsonl"  # regression: a leading byte-order mark made line 1 invalid JSON
    bom.write_bytes(b"\xef\xbb\xbf" + good.encode() + b"\n")
    assert [q.id for q in load_questions(bom, "bom.jsonl", {"a/x": Truth(text="hello world")}).questions] == ["q1"]
    small = load_questions(c / "questions.jsonl", "questions.jsonl", {}, Limits(questions_bytes=100))
    assert small.questions == () and [str(p) for p in small.problems] == [
        f"questions.jsonl: <file>: {(c / 'questions.jsonl').stat().st_size} bytes, over limits.questions_bytes = 100:"
        " not read"]


def test_predicted_tables_over_the_limit_skip_the_tables_rows_without_comparing(monkeypatch):
    import ingestaudit.auditors.tables as tables_mod
    from ingestaudit.auditors.tables import TablesAuditor
    from ingestaudit.model import ParsedDocument
    from ingestaudit.truth import Truth

    monkeypatch.setattr(tables_mod, "match_tables", lambda *a, **k: pytest.fail("tables compared"))
    one = "<table><tr><td>1</td></tr></table>"
    rows = TablesAuditor(max_tables=100).audit(ItemArtefacts.of(Truth(tables=(one,)),
                                                                ParsedDocument("t", tables=(one,) * 20_000)))
    assert {r.state.value for r in rows} == {"skipped"}
    assert {r.detail["reason"] for r in rows} == {"20000 predicted tables, over limits.tables = 100: not compared"}
    assert sorted({r.label for r in rows}) == ["", "table/0"]  # the reference side is within the limit
    rows = TablesAuditor(max_tables=100).audit(ItemArtefacts.of(Truth(tables=(one * 200,)),
                                                                ParsedDocument("t", tables=(one,))))
    assert {r.label for r in rows} == {""} and len(rows) == 5  # 200 reference tables: no row per table
    assert TablesAuditor(max_tables=7).options()["budget"]["max_tables"] == 7


def test_the_tables_limit_reaches_the_tables_auditor_of_a_run(tmp_path):
    table = "<table><tr><td>1</td></tr></table>"
    c = corpus(tmp_path / "c", {"a/x.txt": "x"}, {"a/x.txt": "hello", "a/x.json": json.dumps({"tables": [table]})},
               toml="[limits]\ntables = 3\n")
    outputs = tmp_path / "outputs/ext/a"
    outputs.mkdir(parents=True)
    (outputs / "x.json").write_text(json.dumps({"text": "hello", "tables": [table] * 4}))
    r = cli("run", str(c), "--outputs", str(tmp_path / "outputs"), "--executor", "serial", "--out", str(tmp_path / "o"))
    assert r.exit_code == 0, r.output
    rep = load_report(tmp_path / "o")
    tables = [m for m in measurements(rep) if m["stage"] == "tables"]
    assert tables and {m["state"] for m in tables} == {"skipped"}
    assert {m["detail"]["reason"] for m in tables} == {"4 predicted tables, over limits.tables = 3: not compared"}
    assert rep["config"]["auditors"]["tables"]["budget"]["max_tables"] == 3
    (c / "ingestaudit.toml").write_text("[auditor_options.tables]\nmax_tables = 10\n")
    r = cli("run", str(c), "--outputs", str(tmp_path / "outputs"), "--executor", "serial", "--out", str(tmp_path / "o"))
    assert r.exit_code == 2 and "set it there" in r.output


# --- 3. no quadratic validation -------------------------------------------------------------------------------------

def test_overlapping_gold_spans_are_counted_with_a_few_examples():
    from ingestaudit.auditors.pii import MAX_OVERLAPS_LISTED, validate_pii_gold

    text = "x" * 10_000
    problems = validate_pii_gold(text, [{"start": 0, "end": 10_000, "type": "PERSON"}] * 3000)
    assert [(p.index, p.kind, p.other) for p in problems] == [(i, "overlap", 0) for i in range(1, 6)] + [
        (6, "overlap_count", None)]
    assert problems[-1].message == f"2999 spans overlap a span that starts before them; the first " \
                                   f"{MAX_OVERLAPS_LISTED} are listed"
    # a chain: [0,4) [3,7) [6,10) [20,25): the second and third overlap the span before them, the fourth nothing
    chain = [{"start": a, "end": b, "type": "X"} for a, b in ((6, 10), (0, 4), (20, 25), (3, 7))]
    assert [(p.index, p.other) for p in validate_pii_gold("y" * 30, chain)] == [(0, 3), (3, 1)]


def test_validate_prints_a_count_not_every_pair(tmp_path):
    spans = [{"start": 0, "end": 5, "type": "PERSON"}] * 3000
    c = corpus(tmp_path / "c", {"a/x.txt": "x"}, {"a/x.txt": "Ana Lima", "a/x.json": json.dumps({"pii": spans})})
    v = cli("validate", str(c))
    assert v.exit_code == 0, v.output
    lines = v.output.splitlines()
    assert len(lines) == 7 and "2999 spans overlap a span that starts before them" in v.output


# --- 4. per-item isolation ------------------------------------------------------------------------------------------

def test_any_exception_while_loading_one_documents_labels_is_that_documents_problem(tmp_path, monkeypatch):
    import ingestaudit.truth_pass as truth_pass

    c = corpus(tmp_path / "c", {"a/bad.txt": "x", "a/ok.txt": "x"}, {"a/bad.txt": "hello", "a/ok.txt": "hello"})
    real = truth_pass.load_truth

    def flaky(doc, root, limits=None):
        if doc.doc_id == "a/bad":
            raise RuntimeError("a loader bug")
        return real(doc, root, limits)

    monkeypatch.setattr(truth_pass, "load_truth", flaky)
    rep = run_report(c, tmp_path / "o")
    assert [(f["stage"], f["message"]) for f in rep["failures"] if f["item"] == "a/bad"] == [
        ("truth", "truth/a/bad.*: RuntimeError: a loader bug")]
    assert states(rep, "a/ok") == {"ok"}


def test_a_questions_line_nested_100000_deep_does_not_stop_the_run(tmp_path):
    good = json.dumps({"id": "q1", "question": "hello?", "relevant": [{"doc": "a/x"}]})
    deep = '{"id": "q2", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    c = corpus(tmp_path / "c", {"a/x.txt": "x"}, {"a/x.txt": "hello world"}, questions=[good, deep],
               toml="[limits]\nquestion_line_chars = 300000\n")
    from ingestaudit.report.provenance import item_hashes

    hashes = item_hashes(discover(c))
    assert set(hashes) == {"a/x", "q1"}
    rep = run_report(c, tmp_path / "o", "--stage", "extraction")
    assert any(f["item"] == "questions.jsonl" and f["message"].startswith("line 2:") for f in rep["failures"])
    assert set(rep["corpus"]["item_hashes"]) == {"a/x", "q1"}


def test_a_task_that_cannot_be_pickled_is_an_error_row_and_the_run_finishes(tmp_path, monkeypatch):
    import ingestaudit.truth_pass as truth_pass
    from ingestaudit.truth import Truth

    c = corpus(tmp_path / "c", {"a/deep.txt": "x", "a/ok.txt": "x"}, {"a/deep.txt": "hello", "a/ok.txt": "hello"})
    deep: dict = {}
    node = deep
    for _ in range(100_000):  # what no truth file can hold any more (json_depth), built by hand
        node["children"] = [{}]
        node = node["children"][0]
    real = truth_pass.load_truth

    def with_deep(doc, root, limits=None):
        truth = real(doc, root, limits)
        return Truth(text=truth.text, sections=(deep,)) if doc.doc_id == "a/deep" else truth

    monkeypatch.setattr(truth_pass, "load_truth", with_deep)
    for executor in ("serial",):  # the process pool: tests/test_hardening.py::test_acceptance_a_task_the_pool_...
        out = tmp_path / executor
        r = cli("run", str(c), "-p", "reference", "--executor", executor, "--out", str(out))
        assert r.exit_code == 0, r.output
        rep = load_report(out)
        assert states(rep, "a/deep") == {"error"} and states(rep, "a/ok") == {"ok"}
        msg = [f["message"] for f in rep["failures"] if f["item"] == "a/deep"]
        assert msg == ["a/deep: the task cannot be sent to a worker process (RecursionError: maximum recursion depth "
                       "exceeded while pickling an object); its labels or options hold a value nested too deeply or "
                       "that cannot be pickled"]


@pytest.mark.parametrize("field, value", [("pii[0].start", "true"), ("pii[0].end", "5.0"),
                                          ("blocks[0].page", "2.0"), ("blocks[0].bbox[0]", "true")])
def test_precomputed_offsets_must_be_json_integers(tmp_path, field, value):
    from ingestaudit.parsers.base import ParserError
    from ingestaudit.parsers.precomputed import read_output_json

    body = {"text": "hello world", "pii": [{"start": 0, "end": 5, "type": "X"}], "chunks": [{"text": "hello"}],
            "blocks": [{"text": "hello", "page": 1, "bbox": [0, 0, 1, 1]}]}
    raw = json.dumps(body)
    raw = {"pii[0].start": raw.replace('"start": 0', f'"start": {value}'),
           "pii[0].end": raw.replace('"end": 5', f'"end": {value}'),
           "chunks[0].start": raw.replace('{"text": "hello"}]', f'{{"text": "hello", "start": {value}}}]'),
           "blocks[0].page": raw.replace('"page": 1', f'"page": {value}'),
           "blocks[0].bbox[0]": raw.replace('"bbox": [0', f'"bbox": [{value}')}[field]
    path = tmp_path / "x.json"
    path.write_text(raw)
    with pytest.raises(ParserError) as err:
        read_output_json(path)
    assert f"{path}: {field}: Input should be a valid" in str(err.value)


def test_a_250_character_document_name_with_a_valid_output_is_audited(tmp_path):
    name = "n" * 250
    c = corpus(tmp_path / "c", {f"a/{name}.txt": "x"}, {f"a/{name}.txt": "hello world"})
    outputs = tmp_path / "outputs/ext/a"
    outputs.mkdir(parents=True)
    (outputs / f"{name}.txt").write_text("hello world")  # 254 bytes: fits; <name>.page.xml would not
    r = cli("run", str(c), "--outputs", str(tmp_path / "outputs"), "--executor", "serial", "--out", str(tmp_path / "o"))
    assert r.exit_code == 0, r.output
    rep = load_report(tmp_path / "o")
    assert states(rep, f"a/{name}") == {"ok"} and rep["failures"] == []
    (outputs / f"{name}.txt").unlink()  # no output at all: no_prediction, not "File name too long"
    r = cli("run", str(c), "--outputs", str(tmp_path / "outputs"), "--executor", "serial", "--out", str(tmp_path / "o"))
    assert r.exit_code == 0, r.output
    rep = load_report(tmp_path / "o")
    assert states(rep, f"a/{name}") == {"no_prediction"} and "too long" not in json.dumps(rep)


def test_a_tiff_with_resolution_0_0_is_ocred_with_a_warning_naming_the_file(tmp_path):
    pytest.importorskip("pytesseract")
    from PIL import Image

    from ingestaudit.document import Document
    from ingestaudit.parsers.base import ParserUnavailable
    from ingestaudit.parsers.tesseract_parser import TesseractParser

    try:
        TesseractParser().version()
    except ParserUnavailable:
        pytest.skip("no tesseract binary")
    from PIL.TiffImagePlugin import IFDRational, ImageFileDirectory_v2

    tags = ImageFileDirectory_v2()
    tags[282], tags[283], tags[296] = IFDRational(0, 0), IFDRational(0, 0), 2  # X/Y resolution 0/0, in inches
    path = tmp_path / "zero.tif"
    Image.new("L", (60, 30), 255).save(path, tiffinfo=tags)
    assert str(Image.open(path).info["dpi"]) == "(nan, nan)"  # what Pillow reads from a resolution of 0/0
    parsed = TesseractParser().parse(Document(doc_id="a/zero", doc_class="a", path=path))
    assert parsed.warnings == ("zero.tif: resolution (nan, nan) is not a valid DPI (finite, above 0): OCR without it, "
                               "blocks without coordinates",)
    assert all(b.bbox is None for b in parsed.blocks)


def test_sockets_fifos_and_device_links_in_docs_are_named_by_validate_and_run(tmp_path):
    c = corpus(tmp_path / "c", {"a/x.txt": "x"}, {"a/x.txt": "hello world"})
    sock_path = c / "docs/a/s.txt"
    if len(os.fsencode(sock_path)) > 100:
        pytest.skip("socket path too long for AF_UNIX here")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(sock_path))
        os.mkfifo(c / "docs/a/p.txt")
        os.symlink("/dev/null", c / "docs/a/null.txt")
        v = cli("validate", str(c))
        assert v.exit_code == 2
        for rel, kind in (("docs/a/s.txt", "a socket"), ("docs/a/p.txt", "a named pipe (FIFO)"),
                          ("docs/a/null.txt", "a character device")):
            assert f"{rel}: <file>: {kind}, not a regular file: not read" in v.output
        rep = run_report(c, tmp_path / "o")
        named = {f["item"]: f["message"] for f in rep["failures"]}
        assert named["docs/a/s.txt"] == "a socket, not a regular file: not read"
        assert {"docs/a/p.txt", "docs/a/null.txt"} <= set(named) and states(rep, "a/x") == {"ok"}
    finally:
        sock.close()


# --- 5. parser warnings ---------------------------------------------------------------------------------------------

def truncated_pdf() -> tuple[bytes, bytes]:
    """A two-page PDF and the same file cut where MuPDF reports 'cannot load content stream'."""
    pymupdf = pytest.importorskip("pymupdf")
    doc = pymupdf.open()
    for i in range(2):
        doc.new_page().insert_text((72, 72), f"Hello page {i} " * 20)
    data = doc.tobytes(deflate=True)
    for cut in range(len(data) // 3, len(data)):
        pymupdf.TOOLS.mupdf_warnings(reset=True)
        try:
            with pymupdf.open(stream=data[:cut], filetype="pdf") as d:
                for page in d:
                    page.get_text()
        except Exception:
            continue
        if "cannot load content stream" in pymupdf.TOOLS.mupdf_warnings(reset=True):
            return data, data[:cut]
    pytest.skip("no cut of this PDF gives 'cannot load content stream' with this MuPDF")


def test_mupdf_warnings_on_a_truncated_pdf_reach_every_view(tmp_path):
    full, cut = truncated_pdf()
    c = corpus(tmp_path / "c", {"a/good.pdf": full, "a/trunc.pdf": cut},
               {"a/good.txt": "Hello page 0", "a/trunc.txt": "Hello page 0"})
    out = tmp_path / "o"
    r = cli("run", str(c), "--executor", "serial", "--stage", "extraction", "--out", str(out))
    assert r.exit_code == 0, r.output
    rep = load_report(out)
    assert [(w["item"], w["pipeline"]) for w in rep["parse_warnings"]] == [("a/trunc", "pymupdf")]
    w = rep["parse_warnings"][0]
    assert "mupdf: cannot load content stream part 1/1" in w["messages"] and w["count"] == len(w["messages"])
    assert [p["documents_with_warnings"] for p in rep["pipelines"]] == [1]
    assert states(rep, "a/trunc") == {"ok"}  # the text that did load is audited
    line = "documents whose parse raised warnings: pymupdf 1 of 2"
    assert line in r.output.replace("\n  ", " ")
    md = (out / "report.md").read_text()
    assert line in md and "## Parser warnings (1 documents)" in md and "cannot load content stream" in md
    html = (out / "report.html").read_text()
    assert "Parser warnings (1 documents)" in html and "cannot load content stream" in html


def test_warnings_are_capped_per_document():
    from ingestaudit.report.schema import MAX_PARSE_WARNINGS, MAX_WARNING_CHARS
    from ingestaudit.document_steps import kept_warnings as _kept_warnings

    kept, count = _kept_warnings(tuple(f"w{i}" for i in range(50)) + ("x" * 1000,))
    assert count == 51 and kept == tuple(f"w{i}" for i in range(MAX_PARSE_WARNINGS))
    kept, _ = _kept_warnings(("y" * 1000,))
    assert len(kept[0]) == MAX_WARNING_CHARS and kept[0].endswith("…")
