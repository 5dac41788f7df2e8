"""Truth ``entities`` / ``entity_types`` / ``relations`` / list-valued ``metadata``: loading and bad input, each
problem naming its span (issue 28, "Bad input")."""

import json

import pytest

from ingestaudit.corpus import discover
from ingestaudit.truth import TruthError, load_truth

TEXT = "John Smith met Mary Jones of Acme Corp."


def corpus(tmp_path, labels):
    (tmp_path / "docs/c").mkdir(parents=True)
    (tmp_path / "docs/c/a.txt").write_text(TEXT, encoding="utf-8")
    (tmp_path / "truth/c").mkdir(parents=True)
    (tmp_path / "truth/c/a.json").write_text(json.dumps({"text": TEXT, "language": "en", **labels}), encoding="utf-8")
    c = discover(tmp_path)
    return c.documents[0], c.root


def test_entities_relations_and_metadata_load(tmp_path):
    t = load_truth(*corpus(tmp_path, {
        "entities": [{"start": 0, "end": 10, "type": "PER"}, {"start": 29, "end": 38, "type": "ORG"}],
        "entity_types": ["PER", "ORG", "LOC"],
        "relations": [{"head": 0, "tail": 1, "type": "met_at"}],
        "metadata": {"title": "A meeting", "authors": ["Ann Lee", "Bo Chen"], "date": "2023-05-03", "year": 2023}}))
    assert [(s.start, s.end, s.type) for s in t.entities] == [(0, 10, "PER"), (29, 38, "ORG")]
    assert t.entity_types == ("PER", "ORG", "LOC") and t.entities_labelled
    assert [(r.head, r.tail, r.type) for r in t.relations] == [(0, 1, "met_at")]
    assert t.metadata["authors"] == ["Ann Lee", "Bo Chen"]


@pytest.mark.parametrize("entities, field, message", [
    ([{"start": 30, "end": 45, "type": "ORG"}], "entities[0]", "span [30, 45) is outside the text (39 code points)"),
    ([{"start": 9, "end": 2, "type": "PER"}], "entities[0]", "end (2) is before start (9)"),
    ([{"start": 3, "end": 3, "type": "PER"}], "entities[0]", "span [3, 3) is empty"),
    ([{"start": 0, "end": 10, "type": "PER"}, {"start": 5, "end": 14, "type": "PER"}], "entities[1]",
     "span [5, 14) PER overlaps entities[0] [0, 10) of the same type"),
    ([{"start": 0, "end": 10, "type": "PER"}, {"start": 2, "end": 3, "type": "PER"},
      {"start": 5, "end": 6, "type": "PER"}], "entities[2]", "span [5, 6) PER overlaps entities[0] [0, 10)"),
    ([{"start": 0, "end": 10, "type": "PERSON"}], "entities[0].type",
     "span [0, 10) has type 'PERSON', not one of entity_types (PER, ORG)"),
])
def test_bad_entity_spans_are_named(tmp_path, entities, field, message):
    with pytest.raises(TruthError) as err:
        load_truth(*corpus(tmp_path, {"entities": entities, "entity_types": ["PER", "ORG"]}))
    assert [p.field for p in err.value.problems if p.field.startswith("entities")][-1] == field
    assert any(message in p.message for p in err.value.problems)
    partial = err.value.partial  # the document's other labels are kept; entities are left out with the problem
    assert partial is not None and partial.language == "en" and partial.entities == ()


def test_overlap_of_two_types_is_allowed_and_relation_index_checked(tmp_path):
    with pytest.raises(TruthError) as err:
        load_truth(*corpus(tmp_path, {
            "entities": [{"start": 0, "end": 10, "type": "PER"}, {"start": 5, "end": 10, "type": "LOC"}],
            "relations": [{"head": 0, "tail": 2, "type": "x"}]}))
    assert [(p.field, p.message) for p in err.value.problems] == [
        ("relations[0].tail", "2 is not an index of 'entities' (2 spans)")]
    assert err.value.partial.relations == ()


def test_reserved_entity_type_name(tmp_path):
    with pytest.raises(TruthError, match="'micro' is reserved"):
        load_truth(*corpus(tmp_path, {"entity_types": ["micro"]}))
