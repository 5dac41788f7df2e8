"""Cleaners under audit: the interface, each built-in cleaner's rule by hand, the registry and entry points."""

from __future__ import annotations

import socket
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from ingestaudit.metrics.boilerplate import align_removal
from ingestaudit.metrics.offsets import OffsetMap
from ingestaudit.model import Block, ParsedDocument
from ingestaudit.stages.cleaners import (
    Cleaner,
    CleanerInput,
    CleanResult,
    UnsupportedInput,
    cleaner_names,
    load_cleaner,
)
from ingestaudit.stages.cleaners import registry
from ingestaudit.stages.cleaners.repeated_lines import RepeatedLinesCleaner, is_page_number, line_key
from ingestaudit.stages.cleaners.trafilatura_cleaner import DEFAULTS, TrafilaturaCleaner
from ingestaudit.stages.cleaners.unstructured_cleaner import UnstructuredCleaner


class UpperCleaner(Cleaner):
    """A user cleaner (loaded by module path and through a fake entry point)."""

    name = "upper"

    def clean(self, inp):
        return CleanResult(inp.text.upper())

    def version(self):
        return "1"


# --- interface -----------------------------------------------------------------------------------------------------

def test_inputs_from_text_parsed_and_html(tmp_path):
    inp = CleanerInput.from_text("p1\fp2\fp3")
    assert inp.pages == ("p1", "p2", "p3") and inp.page_separator == "\f" and not inp.has_html()
    page = tmp_path / "page.HTML"
    page.write_bytes(b"<html><body><p>x</p></body></html>")
    parsed = ParsedDocument(text="t", pages=("a", "b"), parser="unstructured", source_path=str(page),
                            extras={"clean_text": "c"})
    inp = CleanerInput.from_parsed(parsed)
    assert inp.pages == ("a", "b") and inp.parser == "unstructured" and inp.extras == {"clean_text": "c"}
    assert inp.has_html() and inp.raw_html() == page.read_bytes()
    assert CleanerInput.from_parsed(ParsedDocument(text="t")).pages == ("t",)
    assert CleanerInput.from_html("<p>x</p>").raw_html() == "<p>x</p>"
    with pytest.raises(UnsupportedInput):
        CleanerInput.from_text("x").raw_html()


def test_none_and_precomputed():
    none = load_cleaner("none")
    assert none.clean(CleanerInput.from_text(" a\nb ")).text == " a\nb "
    pre = load_cleaner("precomputed")
    assert pre.supports(CleanerInput.from_text("x")) is not None
    with pytest.raises(UnsupportedInput):
        pre.clean(CleanerInput.from_text("x"))
    assert pre.clean(CleanerInput.from_text("x", extras={"clean_text": "y"})).text == "y"


# --- repeated-lines ------------------------------------------------------------------------------------------------

UNIQUE = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]


def six_pages() -> tuple[list[str], list[str], list[str]]:
    """Six pages of eight lines; returns (pages, expected cleaned pages, removed lines)."""
    pages, expected, removed = [], [], []
    for i, word in enumerate(UNIQUE):
        n = i + 1
        lines = [
            "ACME Annual Report 2023",  # running head on all six pages: repeated (6 >= max(2, ceil(0.5*6)) = 3)
            "Chapter One: Growth" if n in (1, 3) else f"Overview of {word} markets",  # on pages 1 and 3 only:
            # 2 < 3 overall, but 2 >= max(2, ceil(0.5*3)) of the three odd pages: repeated by the parity rule
            f"The {word} region grew.",
            "Revenue rose by 12 percent.",  # on every page but in the middle (line 4 of 8): never an edge line
            f"Costs in {word} were stable.",
            f"Staff in {word} stayed.",
            "Seite 2 von 6" if n == 2 else f"Outlook for {word} is good.",  # a page-number line on one page
            str(n),  # bare folio: key "#" on all six pages, repeated
        ]
        drop = {0, 7} | ({1} if n in (1, 3) else set()) | ({6} if n == 2 else set())
        pages.append("\n".join(lines) + "\n")
        expected.append("".join(line + "\n" for k, line in enumerate(lines) if k not in drop))
        removed += [lines[k] for k in sorted(drop)]
    return pages, expected, removed


def test_repeated_lines_rule_by_hand():
    pages, expected, removed = six_pages()
    source = "\f".join(pages)
    result = RepeatedLinesCleaner().clean(CleanerInput.from_text(source))
    assert result.text == "\f".join(expected)
    d = result.detail
    assert d["removed_lines"] == len(removed) == 6 * 2 + 2 + 1
    assert d["by_rule"] == {"page_number": 1, "repeated": 14}
    assert d["thresholds"] == {"pages": 3, "odd_pages": 2, "even_pages": 2}
    # cross-check with the alignment: what it finds removed is exactly the removed lines
    r = align_removal(source, result.text)
    assert r.inserted == 0
    assert r.removed_count == sum(len("".join(line.split())) for line in removed)


def test_repeated_lines_on_parsed_pages_joins_with_a_blank_line():
    parsed = ParsedDocument(text="", pages=("Head\nBody one\nFoot 1", "Head\nBody two\nFoot 2"), parser="pymupdf")
    out = RepeatedLinesCleaner(edge_lines=1).clean(CleanerInput.from_parsed(parsed))
    # "Head" and "Foot #" repeat on both pages (need max(2, ceil(0.5*2)) = 2)
    # page 1 -> "Body one\n" ("Foot 1" had no line break), page 2 -> "Body two\n", joined by "\n\n"
    assert out.text == "Body one\n" + "\n\n" + "Body two\n"


def test_numeric_lines_other_than_folios_are_never_repeated():
    # table cells at the foot of every page ("5,391" -> key "#,#") are content; a bare folio ("7" -> "#") is not
    pages = tuple(f"{n + 6}\nBody {w}\n{n},391" for n, w in enumerate(["a", "b", "c"], start=1))
    out = RepeatedLinesCleaner(edge_lines=1).clean(CleanerInput.from_text("\f".join(pages)))
    # top lines "7", "8", "9": key "#" on 3 pages -> removed; bottom lines "1,391"... : key "#,#" has no letter -> kept
    assert out.text == "Body a\n1,391\fBody b\n2,391\fBody c\n3,391"


def test_repeated_lines_needs_pages_and_valid_options():
    c = RepeatedLinesCleaner()
    assert "not a paged document" in c.supports(CleanerInput.from_text("one page only"))
    with pytest.raises(UnsupportedInput):
        c.clean(CleanerInput.from_text("one page only"))
    for bad in ({"edge_lines": 0}, {"edge_lines": True}, {"min_share": 0}, {"min_share": 1.5}):
        with pytest.raises(ValueError):
            RepeatedLinesCleaner(**bad)


@pytest.mark.parametrize("line", ["Page 3", "page 3 of 10", "Seite 3 von 10", "Página 3 de 10", "3 of 10", "3/10",
                                  " - 3 - ", "— iv —", "Page xii", "[Page 7]", "p. 12", "Strona 2 z 9"])
def test_page_number_lines(line):
    assert is_page_number(line)


@pytest.mark.parametrize("line", ["3", "2023", "Page layout", "Chapter 3", "of 10", "mix", "Pages 3-4 of 10",
                                  "page 3 is blank"])
def test_not_page_number_lines(line):
    assert not is_page_number(line)


def test_line_key():
    assert line_key("  PAGE 4\u00a0of 12 ") == line_key("Page 3 of 12") == "page # of #"
    assert line_key("ﬁle") == "file"  # NFKC


# --- unstructured --------------------------------------------------------------------------------------------------

def blocks(*spec):
    return tuple(Block(text=t, kind=k, page=p, order=i) for i, (t, k, p) in enumerate(spec))


def test_unstructured_drops_header_footer_and_page_number_blocks():
    bl = blocks(("ACME report", "header", 1), ("Intro", "heading", 1), ("Body text.", "paragraph", 1),
                ("", "paragraph", 1), ("1", "page_number", 1), ("ACME report", "header", 2),
                ("More text.", "paragraph", 2), ("Confidential", "footer", 2))
    parsed = ParsedDocument(text="ignored", blocks=bl, parser="unstructured")
    out = UnstructuredCleaner().clean(CleanerInput.from_parsed(parsed))
    assert out.text == "Intro\n\nBody text.\n\nMore text."
    assert out.detail["removed_blocks"] == {"footer": 1, "header": 2, "page_number": 1}


def test_unstructured_supports_only_unstructured_categories():
    c = UnstructuredCleaner()
    assert c.supports(CleanerInput.from_parsed(ParsedDocument(text="", parser="unstructured"))) is None
    other = ParsedDocument(text="x", blocks=blocks(("x", "paragraph", 1)), parser="pymupdf")
    assert "no header/footer/page_number" in c.supports(CleanerInput.from_parsed(other))
    tagged = ParsedDocument(text="x", blocks=blocks(("x", "footer", 1)), parser="precomputed-run")
    assert c.supports(CleanerInput.from_parsed(tagged)) is None
    assert c.supports(CleanerInput.from_text("plain")) is not None


# --- exact offset maps of the line- and block-removal cleaners -------------------------------------------------------

def test_unstructured_map_points_at_the_copy_it_kept_where_an_alignment_picks_the_first():
    # "Header\n\nA" twice; page 1's copy is a header and a footer, page 2's is content: the output is page 2's copy
    text = "Header\n\nA\n\nHeader\n\nA"
    bl = blocks(("Header", "header", 1), ("A", "footer", 1), ("Header", "paragraph", 2), ("A", "paragraph", 2))
    out = UnstructuredCleaner().clean(CleanerInput.from_parsed(ParsedDocument(text=text, blocks=bl,
                                                                              parser="unstructured")))
    assert out.text == "Header\n\nA"
    assert out.pieces == ((0, 11, 9),)  # the kept blocks and the blank line between them are input [11, 20)
    assert OffsetMap.from_pieces(9, len(text), out.pieces).source.tolist() == list(range(11, 20))
    # what the chain did before: a Levenshtein alignment maps the output onto the FIRST copy
    assert OffsetMap.from_alignment(out.text, text).source.tolist() == list(range(0, 9))


def test_unstructured_map_leaves_an_inserted_separator_unmapped_and_gives_up_on_a_missing_block():
    text = "Intro\n\nACME\n\nBody."
    bl = blocks(("Intro", "heading", 1), ("ACME", "header", 1), ("Body.", "paragraph", 1))
    out = UnstructuredCleaner().clean(CleanerInput.from_parsed(ParsedDocument(text=text, blocks=bl,
                                                                              parser="unstructured")))
    assert out.text == "Intro\n\nBody."
    # "Intro" = input [0, 5); the blank line joins blocks that were not adjacent in the input: inserted, unmapped
    assert out.pieces == ((0, 0, 5), (7, 13, 5))
    moved = UnstructuredCleaner().clean(CleanerInput.from_parsed(ParsedDocument(text="other text", blocks=bl,
                                                                                parser="unstructured")))
    assert moved.pieces is None  # a block not in the input text: no exact map (the chain aligns instead)


def test_repeated_lines_map_keeps_a_running_head_on_the_page_where_it_is_content():
    # edge_lines 1: "Header" heads all 3 pages and "A" ends pages 1 and 2, so both are removed there; on page 3 "A"
    # is not an edge line and is kept: the output "A" must map to page 3's copy (input 25), not page 1's (7)
    source = "Header\nA\fHeader\nA\fHeader\nA\nmore"
    out = RepeatedLinesCleaner(edge_lines=1).clean(CleanerInput.from_text(source))
    assert out.text == "\f\fA\nmore"
    assert out.pieces == ((0, 8, 1), (1, 17, 1), (2, 25, 6))  # the two page separators, then page 3's "A\nmore"
    assert OffsetMap.from_pieces(len(out.text), len(source), out.pieces).source.tolist() == [8, 17, *range(25, 31)]


def test_repeated_lines_map_on_pymupdf_pages_whose_trailing_newline_the_text_dropped():
    pages = ("Head\nBody one\nFoot 1\n", "Head\nBody two\nFoot 2\n")
    text = "\n\n".join(p.rstrip("\n") for p in pages)  # the pymupdf parser's convention
    out = RepeatedLinesCleaner(edge_lines=1).clean(CleanerInput.from_parsed(ParsedDocument(text=text, pages=pages)))
    assert out.text == "Body one\n\n\nBody two\n"
    # "Body one\n" = input [5, 14), "Body two\n" = input [27, 36); the separator between the pages is the cleaner's
    # own (page 1's trailing newline is not in the input text there), so it maps nowhere
    assert out.pieces == ((0, 5, 9), (11, 27, 9))


def test_the_none_cleaner_map_is_the_identity():
    assert load_cleaner("none").clean(CleanerInput.from_text("a\nb")).pieces == ((0, 0, 3),)


# --- trafilatura ---------------------------------------------------------------------------------------------------

# urllib3 (imported by trafilatura for its downloader) probes IPv6 support at import by creating a socket bound to ::1;
# pytest-socket blocks it and warns, urllib3 falls back. test_trafilatura_never_opens_a_connection checks that this
# probe is the only socket ever made.
URLLIB3_PROBE = pytest.mark.filterwarnings("ignore:A test tried to use socket.socket")


PAGE = (Path(__file__).resolve().parent.parent / "data" / "balcony_page.html").read_text(encoding="utf-8")


@URLLIB3_PROBE
def test_trafilatura_keeps_the_article_and_drops_navigation_and_footer(tmp_path):
    page = tmp_path / "page.html"
    page.write_text(PAGE, encoding="utf-8")
    c = TrafilaturaCleaner()
    # from the source file (as the runner sets it) and from a string give the same text
    out = c.clean(CleanerInput.from_parsed(ParsedDocument(text="parser text", source_path=str(page)))).text
    assert out == c.clean(CleanerInput.from_html(PAGE)).text
    assert "Tomatoes need at least six hours" in out and "shallow watering" in out
    for boilerplate in ("About us", "Copyright 2024", "Impressum"):
        assert boilerplate not in out


def test_trafilatura_settings_and_errors():
    c = TrafilaturaCleaner(fast=True)
    assert c.settings()["extract"] == {**DEFAULTS, "fast": True}
    assert c.settings()["extract"]["include_comments"] is False  # trafilatura's evaluation settings
    assert c.version().count(".") >= 1
    assert "raw HTML" in c.supports(CleanerInput.from_text("no html"))
    with pytest.raises(ValueError, match="unknown option"):
        TrafilaturaCleaner(colour=True)
    with pytest.raises(ValueError):
        TrafilaturaCleaner(fast="yes")
    with pytest.raises(ValueError):
        TrafilaturaCleaner(output_format="xml")


def test_trafilatura_none_result_is_an_empty_output():
    out = TrafilaturaCleaner().clean(CleanerInput.from_html("<html><body></body></html>"))
    assert out.text == "" and out.detail == {"extract_returned_none": True}


GUARD = """
import socket, sys, traceback
attempts = []
class Guarded(socket.socket):
    def __init__(self, *a, **k):
        attempts.append(traceback.extract_stack()[-2])
        super().__init__(*a, **k)
    def connect(self, *a):
        raise AssertionError(f"network connect to {a!r}")
socket.socket = Guarded
socket.create_connection = lambda *a, **k: (_ for _ in ()).throw(AssertionError(f"create_connection {a!r}"))
from ingestaudit.model import ParsedDocument
from ingestaudit.stages.cleaners.base import CleanerInput
from ingestaudit.stages.cleaners.trafilatura_cleaner import TrafilaturaCleaner
out = TrafilaturaCleaner().clean(CleanerInput.from_parsed(ParsedDocument(text="", source_path=sys.argv[1])))
print(len(out.text) > 0)
for frame in attempts:
    print(frame.filename.split("site-packages/")[-1], frame.name)
"""


def test_trafilatura_never_opens_a_connection(shared_data):
    """Run the cleaner on a real page in a fresh interpreter where every socket is recorded and any connect raises.
    The only socket ever made is urllib3's import-time IPv6 probe (``urllib3/util/connection.py`` ``_has_ipv6``
    binds to ::1 and closes; trafilatura imports urllib3 for its downloader, which the cleaner never calls)."""
    import subprocess
    import sys

    page = shared_data / "trafilatura-eval" / "html" / "anarc.at.cdpath.html"
    out = subprocess.run([sys.executable, "-c", GUARD, str(page)], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "True"
    assert all(line == "urllib3/util/connection.py _has_ipv6" for line in lines[1:]), lines


@URLLIB3_PROBE
def test_trafilatura_matches_a_direct_call_on_a_real_page(shared_data):
    import trafilatura

    with pytest.raises(Exception, match="[Ss]ocket"):  # pytest runs with --disable-socket
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    page = shared_data / "trafilatura-eval" / "html" / "anarc.at.cdpath.html"
    out = TrafilaturaCleaner().clean(CleanerInput.from_parsed(ParsedDocument(text="", source_path=str(page))))
    direct = trafilatura.extract(page.read_bytes(), fast=False, include_comments=False, include_tables=True,
                                 include_formatting=False)
    assert out.text == direct and "I figured I might as well bite the" in out.text


# --- registry ------------------------------------------------------------------------------------------------------

def test_registry_names_and_loading(monkeypatch):
    assert cleaner_names()[:5] == ["trafilatura", "unstructured", "repeated-lines", "none", "precomputed"]
    with pytest.raises(registry.UnknownCleaner, match="unknown cleaner 'nope'"):
        load_cleaner("nope")
    assert isinstance(load_cleaner(f"{__name__}:UpperCleaner"), UpperCleaner)
    with pytest.raises(registry.UnknownCleaner, match="not a subclass"):
        load_cleaner("pathlib:Path")
    with pytest.raises(ValueError, match="bad option"):
        load_cleaner("none", {"x": 1})
    with pytest.raises(ValueError):
        load_cleaner("repeated-lines", {"edge_lines": -1})


def test_entry_point_cleaners(monkeypatch):
    eps = {"upper": EntryPoint("upper", f"{__name__}:UpperCleaner", registry.GROUP),
           "none": EntryPoint("none", f"{__name__}:UpperCleaner", registry.GROUP),
           "broken": EntryPoint("broken", "no_such_module_xyz:Cleaner", registry.GROUP)}
    monkeypatch.setattr(registry, "_entry_points", lambda: eps)
    assert cleaner_names()[-2:] == ["broken", "upper"]
    assert load_cleaner("upper").clean(CleanerInput.from_text("ab")).text == "AB"
    assert load_cleaner("none").name == "none"  # a built-in name is never shadowed by an entry point
    from ingestaudit.stages.cleaners import CleanerUnavailable

    with pytest.raises(CleanerUnavailable, match="broken"):
        load_cleaner("broken")


def test_importing_the_package_imports_no_heavy_library():
    import subprocess
    import sys

    code = ("import sys, ingestaudit.stages.cleaners, ingestaudit.auditors.boilerplate; "
            "print(any(m in sys.modules for m in ('trafilatura', 'unstructured', 'lxml.html')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "False"
