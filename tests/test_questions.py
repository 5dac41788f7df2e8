"""questions.jsonl: every problem is named with its file, line and field, and a bad line never hides the good ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.questions import FILTER_VALUE, filter_passes, load_questions, unknown_filter_fields
from ingestaudit.truth import Heading, Truth
from _rows import load_report, measurements

GOOD = {"id": "ok", "question": "What is the fee?", "relevant": [{"doc": "c/a", "start": 11, "end": 21}]}
LINES = [
    json.dumps(GOOD),
    json.dumps({"id": "q2", "question": "Where?", "relevant": [{"doc": "c/nope"}]}),
    json.dumps({"id": "q3", "question": "Span out?", "relevant": [{"doc": "c/a", "start": 5, "end": 99}]}),
    json.dumps({"id": "ok", "question": "Again?", "relevant": [{"doc": "c/a"}]}),
    json.dumps({"id": "q5", "question": "No text?", "relevant": [{"doc": "c/b", "start": 0, "end": 3}]}),
    '{"id": "q6", "question": broken json',
    json.dumps({"id": "q7", "question": "Grade?", "relevant": [{"doc": "c/a", "grade": 0}]}),
    json.dumps({"id": "q8", "question": "Filter?", "relevant": [{"doc": "c/a"}], "filter": {"year": {"gte": 2020}}}),
    json.dumps({"id": "q9", "question": "Out of scope?", "answerable": False, "relevant": [{"doc": "c/a"}]}),
    "",
    json.dumps({"id": "q11", "question": "Offset?", "relevant": [{"doc": "c/a", "start": True, "end": 3}]}),
    json.dumps({"id": "q12", "question": "Grade type?", "relevant": [{"doc": "c/a", "grade": "high"}]}),
    json.dumps({"id": "q13", "question": "Sections?", "relevant": [{"doc": "c/a", "section": "Fees", "page": 2}]}),
    json.dumps({"id": "q14", "question": "Nothing?", "relevant": []}),
    json.dumps({"id": "q15", "question": "Extra?", "relevant": [{"doc": "c/a"}], "answer": "32"}),
    json.dumps(["not", "an", "object"]),
]
EXPECTED = [
    "questions.jsonl: line 2: relevant[0].doc: unknown document 'c/nope' (no docs/c/nope.*)",
    "questions.jsonl: line 3: relevant[0].end: span [5, 99) is outside the reference text of 'c/a' (22 code points)",
    "questions.jsonl: line 4: id: duplicate id 'ok' (first on line 1)",
    "questions.jsonl: line 5: relevant[0].start: a span needs the reference text of 'c/b' (truth/c/b.txt)",
    "questions.jsonl: line 6: invalid JSON (Expecting value: line 1 column 26 (char 25))",
    "questions.jsonl: line 7: relevant[0].grade: Input should be greater than or equal to 1",
    f"questions.jsonl: line 8: filter.year: {FILTER_VALUE}",
    "questions.jsonl: line 9: relevant: an out-of-scope question (\"answerable\": false) has no 'relevant' evidence",
    "questions.jsonl: line 11: relevant[0].start: Input should be a valid integer",
    "questions.jsonl: line 12: relevant[0].grade: Input should be a valid integer",
    "questions.jsonl: line 13: relevant[0]: an evidence item is a span, a section or a page, not several",
    "questions.jsonl: line 14: relevant: an answerable question needs 'relevant' evidence (or set \"answerable\": "
    "false)",
    "questions.jsonl: line 15: answer: unknown key 'answer'; valid keys: id, question, relevant, filter, class, "
    "answerable (see docs/questions.md)",
    "questions.jsonl: line 16: must be a JSON object, not list",
]
TRUTHS = {"c/a": Truth(text="The fee is 32 dollars."), "c/b": Truth()}


def write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_every_problem_is_named_with_file_line_and_field_and_the_good_question_is_kept(tmp_path):
    qs = load_questions(write(tmp_path, LINES), "questions.jsonl", TRUTHS)
    assert [str(p) for p in qs.problems] == EXPECTED
    assert [q.id for q in qs.questions] == ["ok"]
    assert qs.questions[0].relevant[0].kind == "span"


def test_validate_prints_each_problem_and_exits_2(tmp_path):
    root = tmp_path / "corpus"
    (root / "docs" / "c").mkdir(parents=True)
    (root / "truth" / "c").mkdir(parents=True)
    for name in ("a", "b"):
        (root / "docs" / "c" / f"{name}.txt").write_text("x\n")
    (root / "truth" / "c" / "a.txt").write_text("The fee is 32 dollars.")
    write(root, LINES)
    res = CliRunner().invoke(app, ["validate", str(root)])
    assert res.exit_code == 2
    printed = " ".join(res.output.split())
    for line in EXPECTED:
        assert " ".join(line.split()) in printed, line
    assert f"{len(EXPECTED)} problem(s)" in printed


@pytest.mark.slow
def test_a_run_names_the_bad_line_in_its_failures_and_audits_the_good_questions(tmp_path):
    root = tmp_path / "corpus"
    (root / "docs" / "c").mkdir(parents=True)
    (root / "truth" / "c").mkdir(parents=True)
    (root / "docs" / "c" / "a.txt").write_text("x\n")
    (root / "truth" / "c" / "a.txt").write_text("The fee is 32 dollars.")
    write(root, [json.dumps(GOOD), '{"id": "bad", "question": "?", "relevant": [{"doc": "c/a", "start": 3}]}'])
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(f'[run]\nexecutor = "serial"\ncache_dir = "{tmp_path / "cache"}"\n\n[pipelines.p]\n'
                   'parser = "reference"\nembedder = "_chain_stubs:WordEmbedder"\n')
    res = CliRunner().invoke(app, ["run", str(root), "--config", str(cfg), "--out", str(tmp_path / "r"),
                                   "--stage", "chunking"])
    assert res.exit_code == 0, res.output
    report = load_report(tmp_path / "r")
    assert [(f["item"], f["stage"], f["message"]) for f in report["failures"]] == [
        ("questions.jsonl", "questions", "line 2: relevant[0]: a span needs both 'start' and 'end'")]
    held = [m for m in measurements(report) if m["metric"] == "chunking.evidence_held"]
    assert [(m["item"], m["state"], m["value"]) for m in held] == [("c/a", "ok", 1.0)]


def test_filter_passes_a_value_or_a_list_and_fails_a_missing_field():
    assert filter_passes({"year": [2023, 2024]}, {"year": 2024})
    assert not filter_passes({"year": 2023}, {"year": 2024})
    assert not filter_passes({"year": 2023}, {})
    assert filter_passes(None, {}) and filter_passes({}, {"a": 1})


def test_filter_passes_a_dotted_field_into_a_table_and_a_list_holding_an_accepted_value():
    chunk = {"year": 2023, "entities": {"ORG": ["Acme", "Globex"], "PER": ["Ann Lee"]}, "authors": ["Ann Lee"]}
    assert filter_passes({"entities.ORG": "Globex"}, chunk)  # one of the type's texts
    assert filter_passes({"entities.ORG": ["Initech", "Acme"], "year": 2023}, chunk)
    assert not filter_passes({"entities.ORG": "Ann Lee"}, chunk)  # another type's text
    assert not filter_passes({"entities.GPE": "Paris"}, chunk)  # a type the chunk does not carry
    assert not filter_passes({"year.month": 5}, chunk)  # not a table
    assert filter_passes({"authors": "Ann Lee"}, chunk) and not filter_passes({"authors": "Bob"}, chunk)
    assert filter_passes({"a.b": 1}, {"a.b": 1})  # a key that holds a dot itself is read first


def test_a_section_item_must_name_a_labelled_heading(tmp_path):
    truths = {"c/h": Truth(text="Fees and charges\nThe fee is 32.", headings=(Heading(level=1, text="Fees and charges"),
                                                                          Heading(level=2, text="Refunds"))),
              "c/t": Truth(text="Fees and charges\nThe fee is 32.")}
    lines = [json.dumps({"id": f"q{i}", "question": "?", "relevant": [{"doc": d, "section": sec}]})
             for i, (d, sec) in enumerate([("c/h", "  FEES and\ncharges "), ("c/h", "Fess"),
                                           ("c/t", "Fees and charges")], start=1)]
    qs = load_questions(write(tmp_path, lines), "questions.jsonl", truths)
    assert [str(p) for p in qs.problems] == [
        "questions.jsonl: line 2: relevant[0].section: section 'Fess' is none of the document's 2 labelled headings "
        "('Fees and charges', 'Refunds'): 'c/h'",
        # without labels the heading can only be a parser's guess (and --parser reference would always lose it)
        "questions.jsonl: line 3: relevant[0].section: a section item needs the document's labelled headings "
        "(truth JSON \"headings\"): 'c/t'"]
    assert [q.id for q in qs.questions] == ["q1"]  # white space and case do not matter
    assert [q.id for q, _ in qs.rejected] == ["q2", "q3"]  # a run gives them error rows


def test_a_filter_field_no_truth_metadata_has_is_a_validate_warning(tmp_path):
    truths = {"c/a": Truth(metadata={"tenant": "acme"}), "c/b": Truth(metadata={"year": 2020})}
    lines = [json.dumps({"id": "q1", "question": "?", "relevant": [{"doc": "c/a"}],
                         "filter": {"tenant": "acme", "yeer": 2020}})]
    qs = load_questions(write(tmp_path, lines), "questions.jsonl", truths)
    assert [str(p) for p in unknown_filter_fields(qs, truths, "questions.jsonl")] == [
        "questions.jsonl: line 1: filter.yeer: question 'q1': no document's truth metadata has the field 'yeer'"]
    root = tmp_path / "corpus"
    (root / "docs" / "c").mkdir(parents=True)
    (root / "docs" / "c" / "a.txt").write_text("x\n")
    write(root, lines)
    res = CliRunner().invoke(app, ["validate", str(root)])
    assert res.exit_code == 0, res.output  # a precomputed pipeline's chunks may carry it: a warning
    assert "warning: questions.jsonl: line 1: filter.tenant: question 'q1': no document's truth metadata has the" \
        in " ".join(res.output.split())
    assert "ok: 1 document (c: 1), 1 question (questions.jsonl)" in res.output  # the questions are counted too
