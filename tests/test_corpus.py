import json

import pytest

from ingestaudit.corpus import CorpusError, discover
from ingestaudit.truth import TruthError, load_truth


def write(path, text="x"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_ids_classes_and_truth_files(tmp_path):
    write(tmp_path / "docs/invoices/2024/a.pdf")
    write(tmp_path / "docs/web/b.html")
    write(tmp_path / "docs/web/.DS_Store")
    write(tmp_path / "truth/invoices/2024/a.txt", "ref")
    write(tmp_path / "truth/web/b.json", json.dumps({"language": "eng", "class": "news"}))
    c = discover(tmp_path)
    assert [d.doc_id for d in c.documents] == ["invoices/2024/a", "web/b"]
    assert [d.doc_class for d in c.documents] == ["invoices", "web"]
    assert c.problems == ()
    a, b = c.documents
    assert load_truth(a, c.root).text == "ref"
    tb = load_truth(b, c.root)
    assert tb.language == "en" and tb.doc_class == "news" and tb.text is None
    assert c.classes() == {"invoices": 1, "web": 1}


def test_layout_problems_name_the_file(tmp_path):
    write(tmp_path / "docs/loose.pdf")
    write(tmp_path / "docs/c/a.pdf")
    write(tmp_path / "docs/c/a.html")
    write(tmp_path / "truth/c/ghost.txt")
    write(tmp_path / "truth/c/a.yaml")
    problems = {p.file: p.message for p in discover(tmp_path).problems}
    assert "class folder" in problems["docs/loose.pdf"]
    assert "same document id" in problems["docs/c/a.pdf"]
    assert "no document" in problems["truth/c/ghost.txt"]
    assert "unknown truth file type" in problems["truth/c/a.yaml"]


def test_not_a_corpus(tmp_path):
    with pytest.raises(CorpusError, match="no docs/ folder"):
        discover(tmp_path)


def test_fingerprint_changes_with_any_byte_and_not_otherwise(tmp_path):
    write(tmp_path / "docs/c/a.txt", "hello")
    write(tmp_path / "truth/c/a.txt", "hello")
    f1 = discover(tmp_path).fingerprint()
    assert f1 == discover(tmp_path).fingerprint()
    write(tmp_path / "truth/c/a.txt", "hellO")
    assert discover(tmp_path).fingerprint() != f1


def test_truth_errors_name_file_and_field(tmp_path):
    write(tmp_path / "docs/c/a.txt", "hello")
    write(tmp_path / "truth/c/a.txt", "hello")
    write(tmp_path / "truth/c/a.json", json.dumps({
        "colour": "red",
        "checks": [{"type": "present", "text": "x"}, {"type": "order", "before": "a"}],
        "pii": [{"start": 2, "end": 9, "type": "PERSON"}],
        "language": "xx-bogus",
    }))
    c = discover(tmp_path)
    with pytest.raises(TruthError) as err:
        load_truth(c.documents[0], c.root)
    found = {(p.file, p.field) for p in err.value.problems}
    assert ("truth/c/a.json", "colour") in found
    assert ("truth/c/a.json", "checks[1].after") in found
    assert ("truth/c/a.json", "language") in found


def test_span_outside_text_is_named(tmp_path):
    write(tmp_path / "docs/c/a.txt", "hello")
    write(tmp_path / "truth/c/a.json", json.dumps({"text": "hello", "pii": [{"start": 2, "end": 9, "type": "P"}]}))
    c = discover(tmp_path)
    with pytest.raises(TruthError) as err:
        load_truth(c.documents[0], c.root)
    assert [(p.field, "outside the text" in p.message) for p in err.value.problems] == [("pii[0]", True)]


def test_invalid_json_is_a_problem_not_a_crash(tmp_path):
    write(tmp_path / "docs/c/a.txt")
    write(tmp_path / "truth/c/a.json", "{not json")
    c = discover(tmp_path)
    with pytest.raises(TruthError, match="invalid JSON"):
        load_truth(c.documents[0], c.root)
