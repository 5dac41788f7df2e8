"""TextLayout: page and section path at an offset, built from a parsed document or truth headings, moved by a map."""

from __future__ import annotations

import pytest

from ingestaudit.metrics.offsets import OffsetMap
from ingestaudit.model import Block, ParsedDocument
from ingestaudit.textlayout import HeadingPos, TextLayout, find_text

# page 1: "Report\n\nIntro text.\n\nDetails" = [0, 28); separator [28, 30);
# page 2: "More text.\n\nSummary\n\nEnd." = [30, 55)
PAGE1 = "Report\n\nIntro text.\n\nDetails"
PAGE2 = "More text.\n\nSummary\n\nEnd."
TEXT = PAGE1 + "\n\n" + PAGE2
BLOCKS = (
    Block("Report", page=1, kind="heading", level=1),
    Block("Intro text.", page=1),
    Block("Details", page=1, kind="heading", level=3),
    Block("More text.", page=2),
    Block("Summary", page=2, kind="heading", level=2),
    Block("End.", page=2),
)
PARSED = ParsedDocument(text=TEXT, pages=(PAGE1 + "\n", PAGE2), blocks=BLOCKS)


def test_from_parsed_locates_pages_and_headings():
    lay = TextLayout.from_parsed(PARSED)
    assert lay.page_starts == (0, 30) and lay.n_pages == 2
    assert lay.headings == (HeadingPos(0, 6, 1, "Report"), HeadingPos(21, 28, 3, "Details"),
                            HeadingPos(42, 49, 2, "Summary"))
    assert TEXT[21:28] == "Details" and TEXT[42:49] == "Summary"
    assert lay.headings_not_found == 0 and lay.pages_not_found == 0
    assert [lay.page_at(o) for o in (0, 29, 30, 54, 100)] == [1, 1, 2, 2, 2]


def test_section_path_with_level_jumps():
    # H1 "Report", H3 "Details", H2 "Summary": after Details the path is (Report, Details); after Summary the
    # H3 is no ancestor (its level is not smaller), so the path is (Report, Summary)
    lay = TextLayout.from_parsed(PARSED)
    assert lay.section_path_at(0) == ("Report",)
    assert lay.section_path_at(10) == ("Report",)
    assert lay.section_path_at(21) == ("Report", "Details")
    assert lay.section_path_at(35) == ("Report", "Details")
    assert lay.section_path_at(42) == ("Report", "Summary")
    assert lay.section_path_at(54) == ("Report", "Summary")
    assert lay.heading_at(41).text == "Details"


def test_path_before_any_heading_is_empty_and_deeper_nesting():
    lay = TextLayout((0,), (HeadingPos(5, 6, 2, "B"), HeadingPos(10, 11, 3, "C"), HeadingPos(20, 21, 1, "D"),
                            HeadingPos(30, 31, 2, "E"), HeadingPos(40, 41, 2, "F")))
    assert lay.section_path_at(4) == ()
    assert lay.section_path_at(12) == ("B", "C")
    assert lay.section_path_at(25) == ("D",)
    assert lay.section_path_at(35) == ("D", "E")
    assert lay.section_path_at(45) == ("D", "F")


def test_repeated_heading_text_is_located_in_order():
    # "Notes" occurs twice in a contents line first; every block advances the cursor, so the two heading blocks
    # land on the real headings at 24 and 37, not inside the contents line (10 and 17, where str.find would put them)
    text = "Contents: Notes, Notes\n\nNotes\nfirst\n\nNotes\nsecond"
    parsed = ParsedDocument(text=text, pages=(text,), blocks=(
        Block("Contents: Notes, Notes"), Block("Notes", kind="heading", level=None), Block("first"),
        Block("Notes", kind="heading", level=None), Block("second")))
    lay = TextLayout.from_parsed(parsed)
    assert text.find("Notes") == 10
    assert [(h.start, h.end, h.level) for h in lay.headings] == [(24, 29, None), (37, 42, None)]  # level unknown


def test_a_heading_without_a_level_has_no_parent_and_is_no_ones_parent():
    # the layout.hierarchy rule (ingestaudit.metrics.layout.parents): H1 A, X (no level), H2 B, Y (no level), H3 C
    lay = TextLayout((0,), (HeadingPos(0, 1, 1, "A"), HeadingPos(10, 11, None, "X"), HeadingPos(20, 21, 2, "B"),
                            HeadingPos(30, 31, None, "Y"), HeadingPos(40, 41, 3, "C")))
    assert lay.section_path_at(15) == ("X",)
    assert lay.section_path_at(25) == ("A", "B")  # X is not B's parent: the old "None is level 1" rule gave (X, B)
    assert lay.section_path_at(35) == ("Y",)
    assert lay.section_path_at(45) == ("A", "B", "C")
    from ingestaudit.metrics.layout import parents

    assert parents([1, None, 2, None, 3]) == [None, None, 0, None, 2]  # the same parents


def test_an_anchor_block_missing_from_the_text_does_not_move_the_cursor():
    page1, page2 = "Title\nbody one", "Next\nbody two"
    text = page1 + "\n\n" + page2
    parsed = ParsedDocument(text=text, pages=(page1, page2), blocks=(
        Block("Next", page=1, kind="header"),  # found only on page 2: not trusted as an anchor for page 1
        Block("Title", page=1, kind="heading", level=1), Block("Next", page=2, kind="heading", level=2)))
    lay = TextLayout.from_parsed(parsed)
    assert [(h.start, h.text) for h in lay.headings] == [(0, "Title"), (16, "Next")]


def test_heading_page_bounds_the_search_and_missing_heading_is_counted():
    page1, page2 = "Contents\nMethods ... 2", "Methods\nWe did it."
    text = page1 + "\n\n" + page2
    parsed = ParsedDocument(text=text, pages=(page1, page2), blocks=(
        Block("Methods", page=2, kind="heading", level=1), Block("Absent", page=2, kind="heading", level=2)))
    lay = TextLayout.from_parsed(parsed)
    assert lay.page_starts == (0, 24)
    assert lay.headings == (HeadingPos(24, 31, 1, "Methods"),)  # not the "Methods" of the contents page
    assert lay.headings_not_found == 1


def test_whitespace_insensitive_heading_and_empty_page():
    text = "Big\nTitle\n\nbody\n\n\n\nnext page"
    parsed = ParsedDocument(text=text, pages=("Big\nTitle\n\nbody", "", "next page"),
                            blocks=(Block("Big Title", kind="heading", level=1),))
    lay = TextLayout.from_parsed(parsed)
    assert lay.headings == (HeadingPos(0, 9, 1, "Big Title"),)
    assert lay.page_starts == (0, 15, 19)  # the empty page 2 starts where page 1 ended and holds nothing
    assert lay.page_at(16) == 2 and lay.page_at(19) == 3
    assert find_text("a  b", "a b") == (0, 4) and find_text("x", "  ") is None


def test_through_an_offset_map_moves_pages_and_drops_removed_headings():
    lay = TextLayout.from_parsed(PARSED)
    # a cleaner removed "Details" (parsed [21,28)) and the separator before it: kept [0,19) and [28,55)
    cleaned = TEXT[:19] + TEXT[28:]
    m = OffsetMap.from_pieces(len(cleaned), len(TEXT), [(0, 0, 19), (19, 28, 27)])
    moved = lay.through(m)
    assert moved.page_starts == (0, 21)  # parsed 30 -> 30 - 9
    assert cleaned[21:31] == "More text."
    assert moved.headings == (HeadingPos(0, 6, 1, "Report"), HeadingPos(33, 40, 2, "Summary"))
    assert cleaned[33:40] == "Summary"
    assert moved.headings_not_found == 1
    assert moved.section_path_at(25) == ("Report",) and moved.section_path_at(35) == ("Report", "Summary")


def test_through_identity_is_the_same_layout():
    lay = TextLayout.from_parsed(PARSED)
    assert lay.through(OffsetMap.identity(len(TEXT))) == lay


def test_from_reference_headings():
    ref = "1 Scope\ntext\n1.1 Terms\nmore\n2 Fees\nfee text"
    lay = TextLayout.from_reference_headings(ref, [(1, "1 Scope"), (2, "1.1 Terms"), (2, "Missing"), (1, "2 Fees")])
    assert [(h.start, h.end, h.level, h.text) for h in lay.headings] == [
        (0, 7, 1, "1 Scope"), (13, 22, 2, "1.1 Terms"), (28, 34, 1, "2 Fees")]
    assert lay.headings_not_found == 1
    assert lay.section_path_at(25) == ("1 Scope", "1.1 Terms") and lay.section_path_at(40) == ("2 Fees",)


def test_a_reference_heading_is_its_own_line_before_a_sentence_naming_it():
    """Regression: a heading was placed at the first occurrence of its words, here inside the intro sentence, so its
    section started 38 code points early and the chunk holding that sentence was credited with the section."""
    ref = "Intro\nThe Results section below has numbers.\n## Results\nAccuracy 0.9.\nResults are final"
    lay = TextLayout.from_reference_headings(ref, [(1, "Intro"), (2, "Results")])
    assert [(h.start, h.end) for h in lay.headings] == [(0, 5), (48, 55)]  # "## " is a Markdown mark
    assert lay.section_path_at(20) == ("Intro",) and lay.section_path_at(60) == ("Intro", "Results")
    only_in_text = TextLayout.from_reference_headings("see Results here", [(1, "Results")])
    assert [(h.start, h.end) for h in only_in_text.headings] == [(4, 11)]  # no line of its own: the first one


def test_bad_input():
    with pytest.raises(ValueError):
        TextLayout((3, 5))
    with pytest.raises(ValueError):
        TextLayout().page_at(-1)
    with pytest.raises(ValueError):
        TextLayout().through("not a map")  # type: ignore[arg-type]
    assert TextLayout().page_at(0) == 1 and TextLayout.from_parsed(ParsedDocument(text="")).page_starts == (0,)
