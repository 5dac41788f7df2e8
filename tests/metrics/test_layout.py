"""Layout metrics (ingestaudit.metrics.layout): values worked by hand (issue 12's acceptance cases) and oracles."""

from __future__ import annotations

import itertools
import random

import pytest

from ingestaudit.metrics import layout as lm

H = lm.HeadingLabel


# --- similarity ------------------------------------------------------------------------------------------------------

def test_introduction_vs_upper_case_is_1_with_the_processor_and_1_minus_11_over_12_without():
    assert lm.similarity("Introduction", "INTRODUCTION") == 1.0
    # raw: only the first "I" matches, 11 substitutions over max length 12
    assert lm.similarity("Introduction", "INTRODUCTION", processor=None) == pytest.approx(1 - 11 / 12)
    assert round(lm.similarity("Introduction", "INTRODUCTION", processor=None), 4) == 0.0833


def test_numbering_prefix_counts():
    # "2.1 Methods" -> "Methods": delete "2.1 " (4 edits) over max length 11
    assert lm.similarity("2.1 Methods", "Methods") == pytest.approx(1 - 4 / 11)
    assert round(lm.similarity("2.1 Methods", "Methods"), 4) == 0.6364


def test_processor_nfc_casefold_and_white_space():
    assert lm.process("  Caf\u0065\u0301\n\t Menu  ") == "caf\u00e9 menu"  # NFD e + combining acute -> NFC é
    assert lm.process("STRASSE") == lm.process("straße")  # full case folding: ß -> ss
    assert lm.similarity("", "") == 1.0
    assert lm.similarity("abc", "") == 0.0


# --- matching and the heading counts ---------------------------------------------------------------------------------

def test_issue_example_precision_recall_level_and_hierarchy():
    labelled = [H(1, "Scope"), H(2, "Terms"), H(2, "Fees"), H(1, "Annex")]
    predicted = [H(1, "Scope"), H(3, "Terms"), H(1, "Annex"), H(2, "Contact")]
    c = lm.heading_counts(labelled, predicted)
    assert (c.matched, c.predicted, c.labelled) == (3, 4, 4)  # precision 3/4, recall 3/4
    assert c.matched / c.predicted == 0.75 and c.matched / c.labelled == 0.75
    assert 2 * c.matched / (c.labelled + c.predicted) == 0.75
    assert (c.same_level, c.matched) == (2, 3)  # Terms labelled 2, predicted 3
    # Terms keeps its parent Scope (its predicted parent, Scope, is the match of Scope); Fees is unmatched
    assert (c.kept_parent, c.with_parent) == (1, 2)
    assert c.exact == 3 and c.similarity_sum == 3.0
    assert [(i, j) for i, j, _ in c.pairs] == [(0, 0), (1, 1), (3, 2)]


def test_pairs_below_the_threshold_are_never_matched():
    c = lm.heading_counts([H(1, "2.1 Methods")], [H(1, "Methods")])  # similarity 0.6364 < 0.8
    assert c.matched == 0
    c = lm.heading_counts([H(1, "2.1 Methods")], [H(1, "Methods")], threshold=0.6)
    assert c.matched == 1 and c.similarity_sum == pytest.approx(7 / 11) and c.exact == 0


def test_hungarian_assignment_maximises_the_summed_similarity():
    # greedy on the first labelled heading would take "Results" (1.0) and leave "Result" for nothing better;
    # the assignment pairs each with its identical text
    labelled = ["Result", "Results"]
    predicted = ["Results", "Result"]
    pairs, sim = lm.match_texts(labelled, predicted)
    assert pairs == [(0, 1), (1, 0)]
    assert sim.shape == (2, 2)


def test_unknown_predicted_level_is_never_the_same_level_nor_a_parent():
    c = lm.heading_counts([H(1, "Scope"), H(2, "Terms")], [H(None, "Scope"), H(None, "Terms")])
    assert c.matched == 2 and c.same_level == 0 and (c.kept_parent, c.with_parent) == (0, 1)


def test_parents_stack_rule():
    assert lm.parents([1, 2, 2, 1, 3]) == [None, 0, 0, None, 3]
    assert lm.parents([2, 1, 2]) == [None, None, 1]
    assert lm.parents([1, None, 2]) == [None, None, 0]


def test_threshold_is_validated():
    with pytest.raises(ValueError):
        lm.match_texts(["a"], ["a"], threshold=0.0)


# --- reading order ---------------------------------------------------------------------------------------------------

def test_p1_p3_p2_p4_is_one_discordant_pair_of_six():
    d = lm.kendall_discordance([0, 2, 1, 3])  # P2 found after P3
    assert (d.discordant, d.pairs) == (1, 6)
    assert d.discordant / d.pairs == pytest.approx(1 / 6)
    assert d.examples == ((1, 2),)


def test_reversed_order_is_1_and_ties_count_half():
    d = lm.kendall_discordance([3, 2, 1, 0])
    assert d.discordant / d.pairs == 1.0
    d = lm.kendall_discordance([0, 0, 1])
    assert (d.discordant, d.pairs) == (0.5, 3)


def test_kendall_count_matches_brute_force_oracle():
    rng = random.Random(12)
    for _ in range(200):
        n = rng.randint(0, 12)
        pos = [rng.randint(0, 6) for _ in range(n)]
        brute = sum(1.0 if pos[i] > pos[j] else 0.5 if pos[i] == pos[j] else 0.0
                    for i, j in itertools.combinations(range(n), 2))
        assert lm.kendall_discordance(pos, max_examples=0).discordant == brute


def test_discordant_example_pairs_match_the_nested_loop_oracle():
    rng = random.Random(4)
    for _ in range(300):
        n = rng.randint(0, 14)
        pos = [rng.randint(0, 7) for _ in range(n)]
        limit = rng.randint(1, 25)
        nested = [(i, j) for i, j in itertools.combinations(range(n), 2) if pos[i] > pos[j]][:limit]
        assert lm.discordant_pairs(pos, limit) == nested, (pos, limit)
        assert list(lm.kendall_discordance(pos, max_examples=limit).examples) == nested
    assert lm.discordant_pairs([3, 2, 1], 2) == [(0, 1), (0, 2)]
    assert lm.discordant_pairs([0, 0, 0], 5) == []  # ties are half discordant, never listed as examples


def test_one_swap_in_a_long_document_is_found_without_the_quadratic_scan():
    # 60,000 paragraphs in order but for one adjacent swap: the nested loop would scan 1.8e9 pairs to list it
    n = 60_000
    pos = list(range(n))
    pos[30_000], pos[30_001] = pos[30_001], pos[30_000]
    d = lm.kendall_discordance(pos, max_examples=20)
    assert (d.discordant, d.pairs) == (1, n * (n - 1) // 2)
    assert d.examples == ((30_000, 30_001),)


def test_locate_paragraphs_in_order_swapped_and_lost():
    paras = ["Paragraph one talks about pumps.", "Paragraph two talks about valves.",
             "Paragraph three is about hoses.", "Paragraph four closes the note."]
    parsed = "\n".join([paras[0], paras[2], paras[1], paras[3]])
    loc = lm.locate_paragraphs(paras, parsed)
    assert loc.eligible == (0, 1, 2, 3) and None not in loc.positions
    d = lm.kendall_discordance(loc.positions)
    assert d.discordant / d.pairs == pytest.approx(1 / 6)
    lost = lm.locate_paragraphs(paras, paras[0] + "\n" + paras[3])
    assert lost.positions[1] is None and lost.positions[2] is None


def test_locate_paragraphs_by_head_when_two_columns_are_interleaved_line_by_line():
    left = ["The left column starts here and runs", "on for a second line of text."]
    right = ["The right column has its own words", "and a second line of them too."]
    paras = [" ".join(left), " ".join(right)]
    interleaved = f"{left[0]}      {right[0]}\n{left[1]}      {right[1]}"
    loc = lm.locate_paragraphs(paras, interleaved)
    assert loc.by_head == 2 and loc.positions[0] < loc.positions[1]
    # a 3-paragraph reference where the interleaving puts the right column's start before the left's second
    # paragraph: discordant
    paras3 = ["Left one first line goes here and on", "Left two starts below it in the column",
              "Right one starts at the top of column two"]
    parsed = (f"{paras3[0][:30]}   {paras3[2][:30]}\n{paras3[0][30:]}   {paras3[2][30:]}\n{paras3[1]}")
    d = lm.kendall_discordance(lm.locate_paragraphs(paras3, parsed, head_chars=20).positions)
    assert d.discordant == 1


def test_locate_paragraphs_leaves_out_short_and_repeated_paragraphs_and_finds_fuzzy_ones():
    paras = ["Aim", "Header repeated on pages", "Header repeated on pages", "A paragraph with one typo here."]
    loc = lm.locate_paragraphs(paras, "A paragraph with one typp here. Aim")
    assert (loc.too_short, loc.repeated, loc.eligible) == (1, 2, (3,))
    assert loc.fuzzy == 1 and loc.positions == (0,)


def test_split_paragraphs_modes():
    text = "Title\nline one\nline two\n\nnext block\n"
    assert lm.split_paragraphs(text) == ["Title", "line one", "line two", "next block"]
    assert lm.split_paragraphs(text, "blank_line") == ["Title line one line two", "next block"]
    with pytest.raises(ValueError):
        lm.split_paragraphs(text, "sentence")


# --- lists -----------------------------------------------------------------------------------------------------------

def test_list_integrity_counts_items_returned_separately_in_order():
    c = lm.list_integrity([["apples and pears", "bread and butter", "cheese and wine"]],
                          ["apples and pears", "cheese and wine", "bread and butter"])
    assert (c.intact, c.matched, c.labelled) == (2, 3, 3)
    # two items glued into one predicted item: only one of them can match it
    c = lm.list_integrity([["apples and pears", "bread and butter"]], ["apples and pears bread and butter"])
    assert (c.intact, c.labelled) == (0, 2)
    c = lm.list_integrity([["first item text", "second item text"], ["nested item text"]],
                          ["first item text", "second item text", "nested item text"])
    assert (c.intact, c.labelled) == (3, 3)


def test_longest_increasing():
    assert lm.longest_increasing([]) == 0
    assert lm.longest_increasing([3, 1, 2, 5, 4]) == 3
    assert lm.longest_increasing([1, 1, 1]) == 1
