"""Each broken or hostile input a tester found, as a test with the behaviour it must have."""

import json
import os
import stat
from pathlib import Path

from typer.testing import CliRunner

from ingestaudit.cli import app
from _rows import load_report, measurements


def corpus(root: Path, docs: dict[str, str], truth: dict[str, str] | None = None) -> Path:
    for rel, text in docs.items():
        (root / "docs" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / rel).write_text(text, encoding="utf-8")
    for rel, text in (truth or {}).items():
        (root / "truth" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "truth" / rel).write_bytes(text.encode("utf-8", "surrogatepass"))
    return root


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_deeply_nested_truth_json_is_a_problem_not_a_crash(tmp_path):
    c = corpus(tmp_path / "c", {"a/good.txt": "hello world"}, {"a/good.json": "[" * 100_000 + "]" * 100_000})
    r = run("validate", str(c))
    assert r.exit_code == 2
    assert "truth/a/good.json: <file>: JSON nested too deeply" in r.stdout


def test_lone_surrogate_in_truth_is_named_by_validate(tmp_path):
    c = corpus(tmp_path / "c", {"a/s.txt": "x"}, {"a/s.json": '{"text": "Hello \\ud800 world"}'})
    r = run("validate", str(c))
    assert r.exit_code == 2
    assert "truth/a/s.json" in r.stdout and "surrogate" in r.stdout


def test_duplicate_json_key_is_named(tmp_path):
    c = corpus(tmp_path / "c", {"a/s.txt": "x"}, {"a/s.json": '{"language": "en", "language": "de"}'})
    r = run("validate", str(c))
    assert r.exit_code == 2
    assert "truth/a/s.json: language: key given twice" in r.stdout


def test_check_tolerance_as_long_as_its_text_is_rejected(tmp_path):
    c = corpus(tmp_path / "c", {"a/s.txt": "x"},
               {"a/s.json": json.dumps({"checks": [{"type": "present", "text": "abc", "max_diffs": 3}]})})
    r = run("validate", str(c))
    assert r.exit_code == 2
    assert "checks[0]: max_diffs (3) must be below the length of text (3)" in r.stdout


def test_crlf_truth_text_keeps_the_offsets_of_the_file(tmp_path):
    from ingestaudit.corpus import discover
    from ingestaudit.truth import load_truth

    c = corpus(tmp_path / "c", {"a/s.txt": "x"})
    (c / "truth/a").mkdir(parents=True)
    (c / "truth/a/s.txt").write_bytes(b"Call\r\nAna Lima")
    (c / "truth/a/s.json").write_text(json.dumps({"pii": [{"start": 6, "end": 14, "type": "PERSON"}]}))
    found = discover(c)
    truth = load_truth(found.documents[0], found.root)
    span = truth.pii[0]
    assert truth.text[span.start:span.end] == "Ana Lima"  # universal newlines would shift it to "na Lima"


def test_class_named_all_is_reserved(tmp_path):
    c = corpus(tmp_path / "c", {"__all__/x.txt": "a", "b/y.txt": "b"},
               {"b/y.json": json.dumps({"class": "__all__"})})
    r = run("validate", str(c))
    assert r.exit_code == 2
    assert "docs/__all__/x.txt" in r.stdout and "reserved" in r.stdout
    assert "truth/b/y.json: class:" in r.stdout


def test_layout_problems_reach_the_report_failures(tmp_path):
    c = corpus(tmp_path / "c", {"a/d.txt": "hello", "a/d.pdf": "not a pdf"}, {"a/d.txt": "hello"})
    os.symlink(tmp_path / "nowhere.pdf", c / "docs/a/dangling.pdf")
    r = run("run", str(c), "-p", "reference", "--out", str(tmp_path / "o"))
    assert r.exit_code == 0, r.output
    failures = load_report(tmp_path / "o")["failures"]
    corpus_failures = {f["item"]: f["message"] for f in failures if f["stage"] == "corpus"}
    assert "same document id" in corpus_failures["docs/a/d.txt"]
    assert corpus_failures["docs/a/dangling.pdf"] == "broken symbolic link"


def test_out_inside_the_corpus_or_on_a_file_is_refused_before_auditing(tmp_path):
    c = corpus(tmp_path / "c", {"a/x.txt": "hello"}, {"a/x.txt": "hello"})
    before = sorted(p.relative_to(c) for p in c.rglob("*"))
    r = run("run", str(c), "-p", "reference", "--out", str(c / "docs/a"))
    assert r.exit_code == 2 and "corpus is never written" in r.output
    (tmp_path / "afile").write_text("x")
    assert run("run", str(c), "-p", "reference", "--out", str(tmp_path / "afile")).exit_code == 2
    assert sorted(p.relative_to(c) for p in c.rglob("*")) == before


def test_same_parser_twice_is_a_usage_error(tmp_path):
    c = corpus(tmp_path / "c", {"a/x.txt": "hello"}, {"a/x.txt": "hello"})
    r = run("run", str(c), "-p", "reference", "-p", "reference", "--out", str(tmp_path / "o"))
    assert r.exit_code == 2 and "named twice" in r.output


def test_missing_baseline_fails_before_the_audit(tmp_path):
    c = corpus(tmp_path / "c", {"a/x.txt": "hello"}, {"a/x.txt": "hello"})
    r = run("run", str(c), "-p", "reference", "--out", str(tmp_path / "o"), "--baseline", str(tmp_path / "no.json"))
    assert r.exit_code == 2
    assert not (tmp_path / "o").exists()


def test_report_files_are_readable_by_others(tmp_path):
    c = corpus(tmp_path / "c", {"a/x.txt": "hello"}, {"a/x.txt": "hello"})
    old = os.umask(0o022)
    try:
        assert run("run", str(c), "-p", "reference", "--out", str(tmp_path / "o")).exit_code == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "o/report.json").stat().st_mode) == 0o644


def test_nan_in_a_report_is_rejected_by_compare(tmp_path):
    c = corpus(tmp_path / "c", {"a/x.txt": "hello"}, {"a/x.txt": "hello"})
    assert run("run", str(c), "-p", "reference", "--out", str(tmp_path / "o")).exit_code == 0
    good = tmp_path / "o/report.json"
    raw = json.loads(good.read_text())
    raw["summary"][0]["micro"] = float("nan")
    bad = tmp_path / "nan.json"
    bad.write_text(json.dumps(raw))  # json.dumps writes NaN
    r = run("compare", str(good), str(bad))
    assert r.exit_code == 2 and "NaN is not a number a report may hold" in r.output


def test_markup_in_a_file_name_is_printed_not_interpreted(tmp_path):
    c = corpus(tmp_path / "c", {"a/x.txt": "hello"}, {"a/x.txt": "hello", "[/x].txt": "orphan"})
    r = run("run", str(c), "-p", "reference", "--out", str(tmp_path / "o"))
    assert r.exit_code == 0, r.output
    assert "truth/[/x].txt" in r.output


class ExitingParser:
    """A plug-in parser that calls sys.exit on every document."""

    name = "exiting"
    extensions = frozenset({".txt"})

    def supports(self, document):
        return True

    def parse(self, document):
        raise SystemExit(3)

    def version(self):
        return "0"

    def settings(self):
        return {}

    def available(self):
        return True, "0"


def test_a_plugin_calling_sys_exit_becomes_an_error_row(tmp_path):
    c = corpus(tmp_path / "c", {"a/x.txt": "hello"}, {"a/x.txt": "hello"})
    r = run("run", str(c), "-p", f"{__name__}:ExitingParser", "--out", str(tmp_path / "o"))
    assert r.exit_code == 0, r.output
    report = load_report(tmp_path / "o")
    cer = [m for m in measurements(report) if m["metric"] == "extraction.cer"][0]
    assert cer["state"] == "error" and cer["detail"]["reason"] == "SystemExit: 3"


def test_bad_auditor_option_value_is_a_usage_error_and_validate_sees_it(tmp_path):
    c = corpus(tmp_path / "c", {"a/x.txt": "hello"}, {"a/x.txt": "hello"})
    (c / "ingestaudit.toml").write_text('[auditor_options.extraction]\nchar_profile = "nope"\n')
    r = run("run", str(c), "-p", "reference", "--out", str(tmp_path / "o"))
    assert r.exit_code == 2 and "[auditor_options.extraction]" in r.output and "nope" in r.output
    v = run("validate", str(c))
    assert v.exit_code == 2 and "nope" in v.stdout


def test_byte_order_mark_is_not_part_of_the_reference_text(tmp_path):
    from ingestaudit.corpus import discover
    from ingestaudit.truth import load_truth

    c = corpus(tmp_path / "c", {"a/s.txt": "x"})
    (c / "truth/a").mkdir(parents=True)
    (c / "truth/a/s.txt").write_bytes(b"\xef\xbb\xbfAna Lima")
    (c / "truth/a/s.json").write_text(json.dumps({"pii": [{"start": 0, "end": 8, "type": "PERSON"}]}))
    found = discover(c)
    truth = load_truth(found.documents[0], found.root)
    assert truth.text[truth.pii[0].start:truth.pii[0].end] == "Ana Lima"


def test_deeply_nested_precomputed_output_names_the_file(tmp_path):
    c = corpus(tmp_path / "c", {"a/x.txt": "hello"}, {"a/x.txt": "hello"})
    out = tmp_path / "outputs/pipe/a"
    out.mkdir(parents=True)
    (out / "x.json").write_text("[" * 100_000 + "]" * 100_000)
    r = run("run", str(c), "--outputs", str(tmp_path / "outputs"), "--out", str(tmp_path / "o"))
    assert r.exit_code == 0, r.output
    failures = load_report(tmp_path / "o")["failures"]
    assert any("x.json: JSON nested too deeply" in f["message"] for f in failures)
