"""Context-cost metrics (ingestaudit.metrics.context) against Chroma's definitions and hand-worked budgets."""

from __future__ import annotations

import pytest

from ingestaudit.metrics.context import RankedChunk, budget_cut, budget_recall, context_scores

# One question of document "A": two overlapping reference spans, five ranked chunks (one of document "B", two
# overlapping each other). Worked by hand:
#   references [100, 200) and [150, 300): union 200 characters, sum 250
#   1. A [40, 160)   120 chars, covers [100, 160)
#   2. B [0, 400)    400 chars, another document
#   3. A [120, 150)   30 chars, covers [120, 150) (inside chunk 1)
#   4. A [500, 600)  100 chars, nothing
#   5. A [220, 330)  110 chars, covers [220, 300)
#   covered (union) = 60 + 80 = 140; top-5 chars summed = 760
#   uncovered: union [160, 220) = 60; per reference [160, 200) + [160, 220) = 100 (Chroma's)
REFS = [("A", 100, 200), ("A", 150, 300)]
CHUNKS = [("A", 40, 160), ("B", 0, 400), ("A", 120, 150), ("A", 500, 600), ("A", 220, 330)]


def _ranked(chunks):
    out = []
    for doc, s, e in chunks:
        runs = sorted({(max(s, rs), min(e, re_)) for d, rs, re_ in REFS if d == doc and min(e, re_) > max(s, rs)})
        merged = []
        for a, b in runs:
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        out.append(RankedChunk(e - s, tuple((doc, a, b, a - s) for a, b in merged)))
    return out


def _chroma(chunks, refs):
    """Chroma's recall, precision and IoU for one question (the formula of
    ``BaseEvaluation._scores_from_dataset_and_retrievals``, written out: numerator = union of chunk-reference
    intersections over the question's document, recall / sum of reference lengths, precision / sum of chunk
    lengths, IoU / (sum of chunk lengths + each reference's own uncovered length))."""
    doc = refs[0][0]
    inter = sorted((max(s, rs), min(e, re_)) for d, s, e in chunks if d == doc for _, rs, re_ in refs
                   if min(e, re_) >= max(s, rs))
    union, covered = [], 0
    for a, b in inter:
        if union and a <= union[-1][1]:
            union[-1] = (union[-1][0], max(union[-1][1], b))
        else:
            union.append((a, b))
    covered = sum(b - a for a, b in union)

    def own_uncovered(rs, re_):
        left = set(range(rs, re_))
        for d, s, e in chunks:
            if d == doc:
                left -= set(range(s, e))
        return len(left)

    ref_sum = sum(e - s for _, s, e in refs)
    chars = sum(e - s for _, s, e in chunks)
    unused = sum(own_uncovered(s, e) for _, s, e in refs)
    return covered / ref_sum, covered / chars, covered / (chars + unused)


def test_chroma_definitions_on_a_hand_worked_question():
    got = context_scores(_ranked(CHUNKS), REFS, 5)
    assert got["recall"].value == pytest.approx(140 / 200, abs=1e-12)  # union convention (ours)
    assert got["precision"].value == pytest.approx(140 / 760, abs=1e-12)
    assert got["iou"].value == pytest.approx(140 / (760 + 60), abs=1e-12)
    assert got["chars"].value == 760
    c_recall, c_precision, c_iou = _chroma(CHUNKS, REFS)
    assert (c_recall, c_precision, c_iou) == pytest.approx((140 / 250, 140 / 760, 140 / 860), abs=1e-12)
    assert got["precision"].value == pytest.approx(c_precision, abs=1e-12)  # the same whatever the convention
    summed = context_scores(_ranked(CHUNKS), REFS, 5, evidence_overlap="sum")  # Chroma's summed denominators
    assert summed["recall"].value == pytest.approx(c_recall, abs=1e-12)
    assert summed["precision"].value == pytest.approx(c_precision, abs=1e-12)
    assert summed["iou"].value == pytest.approx(c_iou, abs=1e-12)


def test_chroma_definitions_at_a_smaller_k():
    for k in (1, 2, 3, 4):
        got = context_scores(_ranked(CHUNKS), REFS, k, evidence_overlap="sum")
        assert (got["recall"].value, got["precision"].value, got["iou"].value) == pytest.approx(
            _chroma(CHUNKS[:k], REFS), abs=1e-12)
    top3 = context_scores(_ranked(CHUNKS), REFS, 3)  # covered [100, 160) = 60 of 550 chars; uncovered 140
    assert (top3["recall"].value, top3["precision"].value, top3["iou"].value) == pytest.approx(
        (60 / 200, 60 / 550, 60 / 690), abs=1e-12)


def test_no_evidence_and_no_result():
    got = context_scores([], REFS, 3)
    assert got["recall"].value == 0 and got["precision"].state == "no_reference" and got["iou"].value == 0
    assert context_scores(_ranked(CHUNKS), [], 3)["recall"].state == "no_reference"
    with pytest.raises(ValueError, match="evidence_overlap"):
        context_scores([], REFS, 3, evidence_overlap="mean")


def test_budget_recall_hand_worked():
    # chunks of 800, 1,200 and 600 characters in that order, budget 1,500: the context is 800 + the first 700 of
    # the second. Evidence [0, 100) in chunk 1; [1000, 1300) starts 200 characters into chunk 2 (doc [800, 2000)),
    # so the cut keeps its first 500 characters, [1000, 1300) whole; [1900, 2000) starts 1,100 into chunk 2: cut
    # off; [2000, 2050) is in chunk 3: not read. Recall = (100 + 300) / (100 + 300 + 100 + 50) = 400 / 550.
    assert budget_cut([800, 1200, 600], 1500) == [800, 700, 0]
    chunks = [RankedChunk(800, (("d", 0, 100, 0),)),
              RankedChunk(1200, (("d", 1000, 1300, 200), ("d", 1900, 2000, 1100))),
              RankedChunk(600, (("d", 2000, 2050, 0),))]
    evidence = [("d", 0, 100), ("d", 1000, 1300), ("d", 1900, 2000), ("d", 2000, 2050)]
    r = budget_recall(chunks, evidence, 1500)
    assert (r.numerator, r.denominator) == (400, 550)
    assert r.value == pytest.approx(400 / 550, abs=1e-12)
    part = budget_recall(chunks, evidence, 1000)  # 800 + first 200 of chunk 2: [1000, 1300) starts at 200: none
    assert part.numerator == 100
    cut_inside = budget_recall(chunks, evidence, 1100)  # first 300 of chunk 2: [1000, 1100) kept
    assert cut_inside.numerator == 200


@pytest.mark.parametrize("bad", [0, -5, 1.5, "2000", True])
def test_budget_must_be_a_positive_int(bad):
    with pytest.raises(ValueError, match="context budget"):
        budget_cut([10], bad)
