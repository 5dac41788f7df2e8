"""Offset maps (output code point -> input code point): hand-built cases, repeated text, composition."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestaudit.metrics.alignment import align_chars
from ingestaudit.metrics.offsets import OffsetMap

REPEATED = "A.\nB.\nA.\nC."  # "A." at [0,2) and again at [6,8); "B." [3,5); "C." [9,11)


def test_identity():
    m = OffsetMap.identity(5)
    assert m.source.tolist() == [0, 1, 2, 3, 4] and m.input_len == 5 and m.output_len == 5 == len(m)
    assert m.source.dtype == np.int64 and m.monotone
    assert m.covered(1, 4, 0, 5) == 3 and m.covered(1, 4, 3, 5) == 1 and m.covered(1, 4, 4, 4) == 0
    assert m.project(1, 4) == (1, 4) and m.project(2, 2) is None
    assert m.covered_positions(3, 5).tolist() == [3, 4]
    assert m.output_at_or_after(3) == 3 and m.output_at_or_after(5) == 5
    with pytest.raises(ValueError):
        m.source[0] = 9  # read-only


def test_pieces_of_a_line_removal_cleaner_are_exact_on_repeated_text():
    # the cleaner drops the first two lines "A.\nB.\n" (input [0,6)) and keeps "A.\nC." = input [6,11)
    out = REPEATED[6:]
    m = OffsetMap.from_pieces(len(out), len(REPEATED), [(0, 6, 5)])
    assert m.source.tolist() == [6, 7, 8, 9, 10]
    # the kept "A." is the SECOND one: output [0,2) covers input [6,8), not [0,2) as str.find("A.") would say
    assert REPEATED.find(out[0:2]) == 0
    assert m.project(0, 2) == (6, 8) and m.covered(0, 2, 0, 2) == 0 and m.covered(0, 2, 6, 8) == 2


def test_pieces_with_an_inserted_separator_and_a_deletion():
    # input "Head\nBody one\nFooter\nBody two" ; output "Body one\n\nBody two": kept [5,13) and [21,29),
    # the cleaner joins them with "\n\n" (output [8,10)) that maps to -1
    inp = "Head\nBody one\nFooter\nBody two"
    out = "Body one\n\nBody two"
    m = OffsetMap.from_pieces(len(out), len(inp), [(0, 5, 8), (10, 21, 8)])
    assert inp[5:13] == "Body one" and inp[21:29] == "Body two"
    assert m.source[8:10].tolist() == [-1, -1] and m.mapped_count == 16
    assert m.project(0, len(out)) == (5, 29)
    assert m.covered(0, len(out), 0, len(inp)) == 16
    assert m.covered(6, 12, 0, len(inp)) == 4  # "ne" + "Bo"; the two separators map nowhere
    assert m.preimage(13, 21) is None  # "\nFooter\n" was dropped
    assert m.preimage(0, 9) == (0, 4)  # "Head\n" dropped, "Body" kept
    # a page starting at input 14 ("Footer") begins, in the output, where the next kept input character lies
    assert m.output_at_or_after(14) == 10


def test_pieces_are_validated():
    with pytest.raises(ValueError, match="overlaps"):
        OffsetMap.from_pieces(5, 10, [(0, 0, 3), (2, 5, 2)])
    with pytest.raises(ValueError, match="past"):
        OffsetMap.from_pieces(5, 4, [(0, 0, 5)])
    with pytest.raises(ValueError):
        OffsetMap([0, 7], 5)


def test_alignment_map_keeps_order_on_repeated_text():
    # deleting the first line "A.\n": a Levenshtein alignment is monotone, so "A." in the output is input [6,8)
    out = REPEATED[3:]  # "B.\nA.\nC."
    m = OffsetMap.from_alignment(out, REPEATED)
    assert m.source.tolist() == [3, 4, 5, 6, 7, 8, 9, 10]
    assert m.project(3, 5) == (6, 8)


def test_alignment_map_sends_substitutions_and_insertions_to_minus_one():
    # trafilatura-like rewrite: "Price: 10 EUR" -> "Price: 10 €!" ; "EUR" -> "€" and "!" appended.
    # Levenshtein: "Price: 10 " equal (10 chars), then "€" replaces "E", "UR" deleted, "!" inserted
    inp, out = "Price: 10 EUR", "Price: 10 €!"
    m = OffsetMap.from_alignment(out, inp)
    assert m.source.tolist() == list(range(10)) + [-1, -1]
    assert m.covered(0, len(out), 10, 13) == 0
    assert m.input_positions_reached().tolist() == list(range(10))


def test_alignment_with_an_insertion_inside():
    # a cleaner inserted a hyphen and line break: "Johanna" -> "Johan-\nna"
    inp, out = "Call Johanna now", "Call Johan-\nna now"
    m = OffsetMap.from_alignment(out, inp)
    assert m.source.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, -1, -1, 10, 11, 12, 13, 14, 15]
    assert m.project(5, 14) == (5, 12) and m.covered(5, 14, 5, 12) == 7


def test_from_char_alignment_inverts_reference_to_parsed():
    # reference "Ana Lima", parsed "Ana Lirna": "m" substituted by "r", "n" inserted
    ref, parsed = "Ana Lima", "Ana Lirna"
    m = OffsetMap.from_char_alignment(align_chars(ref, parsed))
    assert m.output_len == len(parsed) and m.input_len == len(ref)
    # parsed "Ana Li" -> ref 0..5; "r" substituted (-1), "n" inserted (-1), "a" -> ref 7
    assert m.source.tolist() == [0, 1, 2, 3, 4, 5, -1, -1, 7]
    assert m.covered(0, 9, 4, 8) == 3  # "L", "i", "a" of "Lima"


def test_compose_cleaned_to_parsed_to_reference():
    # reference R = "Intro. The fee is 32. End."; parsed P = "Page 1\nIntro. The fee is 32. End." (a header
    # inserted); cleaned C = "The fee is 32. End." (the cleaner kept P[14:33])
    ref = "Intro. The fee is 32. End."
    parsed = "Page 1\nIntro. The fee is 32. End."
    cleaned = parsed[14:]
    assert cleaned == "The fee is 32. End."
    c2p = OffsetMap.from_pieces(len(cleaned), len(parsed), [(0, 14, len(cleaned))])
    p2r = OffsetMap.from_char_alignment(align_chars(ref, parsed))
    assert p2r.source[:7].tolist() == [-1] * 7 and p2r.source[7:].tolist() == list(range(26))
    c2r = c2p.compose(p2r)
    assert c2r.source.tolist() == list(range(7, 26)) and c2r.input_len == len(ref)
    assert ref[7:21] == "The fee is 32."
    assert c2r.covered(0, 14, 7, 21) == 14 and c2r.project(0, 14) == (7, 21)
    with pytest.raises(ValueError, match="compose"):
        p2r.compose(c2p)


def test_compose_drops_characters_unmapped_in_either_map():
    outer = OffsetMap([0, -1, 2, 3], 4)
    inner = OffsetMap([5, 6, -1, 1], 7)
    assert outer.compose(inner).source.tolist() == [5, -1, -1, 1]
    assert outer.compose(inner).input_len == 7


def test_non_monotone_map_counts_distinct_positions():
    # a stage that repeated input [0,3) twice and then input [1,2): distinct positions count once
    m = OffsetMap.from_pieces(7, 5, [(0, 0, 3), (3, 0, 3), (6, 1, 1)])
    assert not m.monotone
    assert m.covered(0, 7, 0, 5) == 3 and m.covered_positions(0, 7).tolist() == [0, 1, 2]
    assert m.covered(2, 5, 0, 2) == 2  # output [2,5) -> input 2, 0, 1
    assert m.project(2, 5) == (0, 3)
    assert m.preimage(1, 2) == (1, 7)
    assert m.output_at_or_after(2) == 2 and m.output_at_or_after(3) == 7


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-1, 9), max_size=25), st.data())
def test_queries_match_brute_force(src, data):
    m = OffsetMap(src, 10)
    n = len(src)
    start = data.draw(st.integers(0, n))
    end = data.draw(st.integers(start, n))
    s = data.draw(st.integers(0, 10))
    e = data.draw(st.integers(s, 10))
    seg = [p for p in src[start:end] if p >= 0]
    assert m.covered(start, end, s, e) == len({p for p in seg if s <= p < e})
    assert m.covered_positions(start, end).tolist() == sorted(set(seg))
    assert m.project(start, end) == ((min(seg), max(seg) + 1) if seg else None)
    hits = [i for i, p in enumerate(src) if s <= p < e]
    assert m.preimage(s, e) == ((hits[0], hits[-1] + 1) if hits else None)
    after = [i for i, p in enumerate(src) if p >= s]
    assert m.output_at_or_after(s) == (after[0] if after else n)


@settings(max_examples=40, deadline=None)
@given(st.text("ab \n", max_size=30), st.text("ab \n", max_size=30))
def test_alignment_maps_only_identical_characters_in_order(out, inp):
    m = OffsetMap.from_alignment(out, inp)
    mapped = [(i, p) for i, p in enumerate(m.source.tolist()) if p >= 0]
    assert all(out[i] == inp[p] for i, p in mapped)
    assert m.monotone
