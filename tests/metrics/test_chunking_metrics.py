"""Chunk metrics: pointer verification, locating chunks, evidence coverage, coherence, boundaries, sizes, sentences."""

from __future__ import annotations

import numpy as np
import pytest

from ingestaudit.metrics.chunking import (
    FAILURE_KINDS, assign_sentences, boundary_splits, chunk_boundaries, coherence, evidence_coverage, locate_chunks,
    random_split_baseline, random_split_labels, sentence_spans, size_stats, verify_pointers,
)
from ingestaudit.metrics.offsets import OffsetMap
from ingestaudit.model import Chunk
from ingestaudit.textlayout import HeadingPos, TextLayout

REPEATED = "A.\nB.\nA.\nC."


# ----- attribution (issue 9 acceptance) ---------------------------------------------------------------------------

def test_attribution_first_occurrence_search_is_out_of_order():
    lay = TextLayout()
    chunks = [Chunk("A.", 0, 2), Chunk("B.", 3, 5), Chunk("A.", 0, 2), Chunk("C.", 9, 11)]
    res = verify_pointers(REPEATED, chunks, lay)
    assert (res.verified, res.total, res.rate) == (3, 4, 0.75)
    assert res.counts == {"missing": 0, "out_of_range": 0, "text_mismatch": 0, "out_of_order": 1,
                          "page_wrong": 0, "section_wrong": 0}
    assert res.first_failing == [{"chunk": 2, "kind": "out_of_order", "kinds": ["out_of_order"],
                                  "claimed": {"start": 0, "end": 2, "text": "A.", "page": None, "section": None},
                                  "found": {"previous_start": 3}}]


def test_attribution_true_pointers_verify():
    chunks = [Chunk("A.", 0, 2), Chunk("B.", 3, 5), Chunk("A.", 6, 8), Chunk("C.", 9, 11)]
    res = verify_pointers(REPEATED, chunks, TextLayout())
    assert (res.verified, res.total, res.rate) == (4, 4, 1.0) and res.first_failing == []


def test_attribution_failure_kinds():
    # two pages: "Intro\nOne. Two." [0, 15) and "\n\nMore\nThree." from 15, page 2 starting at 17
    text = "Intro\nOne. Two.\n\nMore\nThree."
    lay = TextLayout((0, 17), (HeadingPos(0, 5, 1, "Intro"), HeadingPos(17, 21, 2, "More")))
    chunks = [
        Chunk("Intro\nOne.", 0, 10, page=1, section=("Intro",)),           # verifies
        Chunk("Two.", None, None),                                        # missing
        Chunk("Three.", 22, 40),                                          # out_of_range (past the text)
        Chunk("More", 17, 21, page=1, section=("Intro", "More")),         # page_wrong (page 2), section ok
        Chunk("Three!", 22, 28),                                          # text_mismatch
        Chunk("Two.", 11, 15, page=1, section=("Other",)),                # out_of_order (11 < 17), section_wrong
    ]
    res = verify_pointers(text, chunks, lay, max_listed=3)
    assert res.verified == 1 and res.total == 6
    assert res.counts == {"missing": 1, "out_of_range": 1, "text_mismatch": 1, "out_of_order": 1,
                          "page_wrong": 1, "section_wrong": 1}
    assert [f["chunk"] for f in res.first_failing] == [1, 2, 3]
    assert res.first_failing[2]["found"] == {"page": 2}
    assert tuple(res.counts) == FAILURE_KINDS


def test_attribution_several_kinds_on_one_chunk_and_whitespace_normalising_chunker():
    text = "Intro\nOne.  Two."
    lay = TextLayout((0,), (HeadingPos(0, 5, 1, "Intro"),))
    bad = verify_pointers(text, [Chunk("One.", 6, 10, page=2, section=("Outro",))], lay)
    assert bad.first_failing[0]["kinds"] == ["page_wrong", "section_wrong"] and bad.verified == 0
    # the chunker collapsed "One.  Two." to "One. Two.": a mismatch unless it declares it normalises white space
    chunk = Chunk("One. Two.", 6, 16, section=("Intro",))
    assert verify_pointers(text, [chunk], lay).counts["text_mismatch"] == 1
    assert verify_pointers(text, [chunk], lay, normalises_whitespace=True).verified == 1
    # without a layout, page and section claims are not checked
    assert verify_pointers(text, [Chunk("One.", 6, 10, page=9)], None).verified == 1
    assert verify_pointers(text, [], lay).rate is None


# ----- locating ---------------------------------------------------------------------------------------------------

def test_locate_chunks_searches_from_the_previous_chunk_start():
    chunks = [Chunk("A."), Chunk("B."), Chunk("A."), Chunk("C.")]
    assert locate_chunks(REPEATED, chunks) == [(0, 2), (3, 5), (6, 8), (9, 11)]


def test_locate_chunks_uses_true_pointers_and_falls_back():
    chunks = [
        Chunk("B.", 3, 5),          # true pointer
        Chunk("A.", 0, 2),          # textually true pointer, though out of order: kept
        Chunk("A.", 5, 7),          # wrong pointer: search from the previous start (0) -> first "A." at 0
        Chunk("B. A.", 1, 2),       # wrong pointer, white space differs: found at [3, 8) ("B.\nA.")
        Chunk("Z."),                # nowhere: None
        Chunk("   "),               # empty text without a pointer: None
        Chunk("C.\n", None, None),  # a trailing newline the text lacks: the white-space-insensitive search finds "C."
    ]
    assert locate_chunks(REPEATED, chunks) == [(3, 5), (0, 2), (0, 2), (3, 8), None, None, (9, 11)]
    assert locate_chunks(REPEATED, [Chunk("C.")]) == [(9, 11)]
    # a chunk before the cursor is still found by the search from the start
    assert locate_chunks(REPEATED, [Chunk("C.", 9, 11), Chunk("B.")]) == [(9, 11), (3, 5)]


# ----- evidence (issue 9 acceptance) ------------------------------------------------------------------------------

def test_evidence_held_and_split():
    text = "The fee is 32 dollars. It drops to 8 dollars."
    assert len(text) == 45 and text[23:45] == "It drops to 8 dollars."
    m = OffsetMap.identity(len(text))
    positions = [m.covered_positions(0, 30), m.covered_positions(30, 45)]
    held = evidence_coverage(23, 45, positions, min_span_coverage=0.5)
    assert held.shares == (7 / 22, 15 / 22) and held.best_chunk == 1 and held.held
    assert round(held.best, 3) == 0.682
    split = evidence_coverage(23, 45, positions, min_span_coverage=0.9)
    assert not split.held and split.best == 15 / 22


def test_evidence_through_a_composed_map_and_no_chunk():
    # a chunk whose characters map only partly into the span (an inserted marker maps nowhere)
    m = OffsetMap([-1, -1, 23, 24, 25, 26], 45)
    cov = evidence_coverage(23, 27, [m.covered_positions(0, 6)])
    assert cov.shares == (1.0,) and cov.held
    none = evidence_coverage(0, 5, [np.zeros(0, dtype=np.int64)])
    assert none.best == 0.0 and none.best_chunk is None and not none.held
    with pytest.raises(ValueError):
        evidence_coverage(5, 5, [])


# ----- coherence (issue 9 acceptance) -----------------------------------------------------------------------------

def test_coherence_acceptance_values():
    within, across, coh = coherence([(1, 0), (1, 0), (0, 1), (0, 1)], [0, 0, 1, 1])
    assert (within, across, coh) == (1.0, 0.0, 1.0)
    res = coherence([(1, 0), (0, 1), (1, 0), (0, 1)], [0, 0, 1, 1])
    assert (res.within, res.across, res.coherence) == (0.0, 0.0, 0.0)
    assert res.within_pairs == 2 and res.across_pairs == 1


def test_coherence_hand_worked_with_unnormalised_vectors():
    # vectors (3,4)->(0.6,0.8), (0,2)->(0,1), (1,0): chunks [0,1] | [2]
    # within: cos(v0, v1) = 0.8 (one pair); across: cos(v1, v2) = 0 -> coherence 0.8
    res = coherence([(3, 4), (0, 2), (1, 0)], [0, 0, 1])
    assert res.within == pytest.approx(0.8) and res.across == pytest.approx(0.0)
    assert res.coherence == pytest.approx(0.8)
    # three sentences in one chunk: pairs (0,1) 0.8, (0,2) 0.6, (1,2) 0.0 -> within 1.4/3; no boundary
    one = coherence([(3, 4), (0, 2), (1, 0)], [0, 0, 0])
    assert one.within == pytest.approx(1.4 / 3) and one.across is None and one.coherence is None
    assert "one chunk" in one.reason
    singles = coherence([(1, 0), (0, 1)], [0, 1])
    assert singles.within is None and singles.across == 0.0 and singles.coherence is None
    with pytest.raises(ValueError):
        coherence([(1, 0)], [0, 1])


def test_random_split_labels_and_baseline():
    labels = random_split_labels(5, 3, seed=7, n_draws=50)
    assert len(labels) == 50
    for lab in labels:  # contiguous, non-empty, labels 0..2 in order
        assert lab[0] == 0 and lab[-1] == 2 and set(np.diff(lab)) <= {0, 1}
    assert all(np.array_equal(a, b) for a, b in zip(labels, random_split_labels(5, 3, seed=7, n_draws=50)))
    # three sentences, two chunks: only [0]|[1,2] (coherence 0 - 1 = -1) and [0,1]|[2] (1 - 0 = 1)
    vecs = [(1, 0), (1, 0), (0, 1)]
    draws = random_split_labels(3, 2, seed=1, n_draws=40)
    firsts = sum(int(lab[1] == 1) for lab in draws)  # splits [0]|[1,2]
    assert 0 < firsts < 40
    assert random_split_baseline(vecs, 2, seed=1, n_draws=40) == pytest.approx(((40 - firsts) - firsts) / 40)
    # a split into as many chunks as sentences has no within pair; one chunk has no boundary
    assert random_split_baseline(vecs, 3, seed=1, n_draws=5) is None
    assert random_split_baseline(vecs, 1, seed=1, n_draws=5) is None
    assert random_split_labels(2, 3, seed=0, n_draws=3) == []


def test_assign_sentences_to_the_chunk_holding_most():
    sentences = [(0, 10), (11, 20), (21, 30), (10, 20), (40, 45)]
    chunks = [(0, 15), (15, 30)]
    # (11,20): 4 chars in chunk 0, 5 in chunk 1; (10,20): 5 and 5, the tie goes to the lower index
    assert assign_sentences(sentences, chunks) == [0, 1, 1, 0, None]
    assert assign_sentences([], chunks) == [] and assign_sentences([(0, 1)], []) == [None]


# ----- boundaries ---------------------------------------------------------------------------------------------------

def test_boundaries_and_splits_per_kind():
    chunks = [(10, 20), (0, 10), (15, 30)]  # any order: sorted by start
    assert chunk_boundaries(chunks) == [10, 15, 20]
    res = boundary_splits(chunks, {"sentence": [(5, 12), (12, 14)], "table": [(15, 25)], "list": [(10, 15)],
                                   "section": [(0, 30), (0, 16)]})
    assert res.boundaries == 3
    # sentence: 10 inside (5,12); table: 15 at its start does not split, 20 does; list (10,15): 10 and 15 are its
    # edges; section: 10, 15 and 20 all inside (0,30) — 10 and 15 also inside (0,16) but count once
    assert res.splits == {"sentence": 1, "table": 1, "list": 0, "section": 3}
    assert res.examples["table"] == [{"boundary": 20, "unit": [15, 25]}]
    assert res.examples["section"][0] == {"boundary": 10, "unit": [0, 16]}


def test_boundaries_with_a_gap_count_both_edges():
    # "One. Two. Three." chunks [0,4) "One." and [5,16): boundaries 4 (end, the next starts at 5) and 5
    assert chunk_boundaries([(0, 4), (5, 16)]) == [4, 5]
    res = boundary_splits([(0, 4), (5, 16)], {"sentence": [(0, 4), (5, 9), (10, 16)], "table": []})
    assert res.boundaries == 2 and res.splits == {"sentence": 0, "table": 0}
    cut = boundary_splits([(0, 7), (7, 16)], {"sentence": [(0, 4), (5, 9), (10, 16)]})
    assert cut.boundaries == 1 and cut.splits == {"sentence": 1}
    assert boundary_splits([(0, 16)], {"sentence": [(0, 4)]}).boundaries == 0


# ----- sizes and sentences ------------------------------------------------------------------------------------------

def test_size_stats():
    assert size_stats([5, 1, 3, 2, 4]) == {"n": 5, "min": 1, "median": 3, "p95": 5, "max": 5}
    # n = 20: median (10 + 11) / 2; p95 = the ceil(0.95 * 20) = 19th smallest
    assert size_stats(range(1, 21)) == {"n": 20, "min": 1, "median": 10.5, "p95": 19, "max": 20}
    assert size_stats([]) == {"n": 0, "min": None, "median": None, "p95": None, "max": None}


def test_sentence_spans():
    text = "Intro\n\nThis is one. This is two.\n\nNew para.  Next  one\n"
    spans = sentence_spans(text)
    assert [text[s:e] for s, e in spans] == ["Intro", "This is one.", "This is two.", "New para.", "Next  one"]
    assert spans[1] == (7, 19)
    assert sentence_spans("") == [] and sentence_spans(" \n ") == []
    # code points, not bytes or UTF-16 units
    emoji = "Café 😀 ok. Next."
    assert [emoji[s:e] for s, e in sentence_spans(emoji)] == ["Café 😀 ok.", "Next."]


def test_coherence_matches_a_pairwise_loop():
    rng = np.random.default_rng(3)
    v = rng.normal(size=(9, 4))
    labels = [0, 0, 0, 1, 1, 2, 3, 3, 3]
    u = v / np.linalg.norm(v, axis=1, keepdims=True)
    within = [u[i] @ u[j] for i in range(9) for j in range(i + 1, 9) if labels[i] == labels[j]]
    across = [u[i] @ u[i + 1] for i in range(8) if labels[i] != labels[i + 1]]
    res = coherence(v, labels)
    assert (res.within_pairs, res.across_pairs) == (len(within), len(across)) == (7, 3)
    assert res.within == pytest.approx(np.mean(within)) and res.across == pytest.approx(np.mean(across))
    assert res.coherence == pytest.approx(np.mean(within) - np.mean(across))


def test_a_boundary_position_reached_twice_counts_once():
    # windows [0,10), [5,15), [10,20): starts 5 and 10, ends 10 and 15 -> positions 5, 10, 15
    assert chunk_boundaries([(0, 10), (5, 15), (10, 20)]) == [5, 10, 15]
    assert boundary_splits([(0, 10), (5, 15), (10, 20)], {"sentence": [(8, 12)]}).splits == {"sentence": 1}
