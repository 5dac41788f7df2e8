"""Relation extraction schemes (Taillé et al. 2020): strict and boundaries, per relation type."""

import pytest

from ingestaudit.metrics.relations import score_relations
from ingestaudit.metrics.spans import Span

# "John Smith works for Acme Corp in Paris."
TRUTH_ENTS = [Span(0, 10, "PER"), Span(21, 30, "ORG"), Span(34, 39, "LOC")]
TRUTH = [{"head": 0, "tail": 1, "type": "works_for"}, {"head": 1, "tail": 2, "type": "located_in"}]
PRED_ENTS = [Span(0, 10, "PERSON"), Span(21, 30, "GPE"), Span(34, 39, "GPE")]
PRED = [{"head": 0, "tail": 1, "type": "works_for"},      # Acme typed GPE: boundaries only
        {"head": 1, "tail": 2, "type": "located_in"},     # Acme GPE again: boundaries only
        {"head": 0, "tail": 2, "type": "located_in"}]     # not labelled: false positive
MAPPING = {"PERSON": "PER", "GPE": "LOC"}


def test_strict_and_boundaries_by_hand():
    strict = score_relations(TRUTH, TRUTH_ENTS, PRED, PRED_ENTS, "strict", MAPPING)
    # strict: Acme is LOC after mapping, truth ORG -> neither relation matches
    assert (strict["works_for"].tp, strict["works_for"].fp, strict["works_for"].fn) == (0, 1, 1)
    assert (strict["located_in"].tp, strict["located_in"].fp, strict["located_in"].fn) == (0, 2, 1)
    bounds = score_relations(TRUTH, TRUTH_ENTS, PRED, PRED_ENTS, "boundaries", MAPPING)
    assert (bounds["works_for"].tp, bounds["works_for"].fp, bounds["works_for"].fn) == (1, 0, 0)
    located = bounds["located_in"]
    assert (located.tp, located.fp, located.fn) == (1, 1, 0)
    assert located.precision().value == 0.5 and located.recall().value == 1.0
    assert located.f1().value == pytest.approx(2 / 3)
    micro = bounds["works_for"] + bounds["located_in"]
    assert micro.f1().value == pytest.approx(2 * 2 / (2 * 2 + 1))  # tp 2, fp 1, fn 0


def test_bad_index_names_the_relation():
    with pytest.raises(ValueError, match="predicted relation 0 .* index the predicted entities"):
        score_relations([], TRUTH_ENTS, [{"head": 5, "tail": 0, "type": "x"}], PRED_ENTS, "strict")
    with pytest.raises(ValueError, match="unknown relation scheme"):
        score_relations([], [], [], [], "loose")


def test_relation_with_an_unplaced_argument_matches_nothing():
    counts = score_relations(TRUTH, TRUTH_ENTS, PRED[:1], [None, PRED_ENTS[1]], "boundaries", MAPPING)
    assert (counts["works_for"].tp, counts["works_for"].fp, counts["works_for"].fn) == (0, 1, 1)
