"""Chunkers under audit: pointers computed from the split (verified on hand texts with repeated paragraphs), LangChain's
recursive rule worked by hand, sizes, pages and section paths, structural sections, semantic breakpoints (hand vectors),
precomputed chunks, the registry. No model is loaded here: token tests use all-MiniLM-L6-v2's tokenizer file only;
the real-model tests are in test_embedder.py."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestaudit.metrics.offsets import OffsetMap
from ingestaudit.model import Block, Chunk, ParsedDocument
from ingestaudit.stages.chunkers import (
    Chunker,
    ChunkerError,
    ChunkerInput,
    UnknownChunker,
    block_spans_from_parsed,
    chunker_names,
    load_chunker,
)
from ingestaudit.stages.chunkers import registry
from ingestaudit.stages.chunkers.semantic import breakpoints
from ingestaudit.textlayout import TextLayout


def texts(chunks):
    return [c.text for c in chunks]


def pointers(chunks):
    return [(c.start, c.end) for c in chunks]


def assert_pointers_verify(text, chunks):
    """Every pointer is exact and starts never go back (the attribution audit's text and order checks)."""
    for c in chunks:
        assert text[c.start:c.end] == c.text
        assert c.text and c.text == c.text.strip()
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)


class WordTokens:
    """A hand tokenizer: one token per run of non-space characters (offsets exact)."""

    def count_tokens(self, texts):
        return [len(t.split()) for t in texts]

    def token_offsets(self, text):
        import re
        return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


@pytest.fixture(scope="module")
def minilm_tokens():
    """all-MiniLM-L6-v2's own tokenizer (tokenizer.json through `tokenizers`; torch is not imported)."""
    from ingestaudit.stages.embedders import load_embedder

    return load_embedder("minilm")


# --- the recursive chunker: LangChain's rule by hand ---------------------------------------------------------------

PARAS = "Alpha beta.\n\nGamma delta epsilon.\n\nZeta."  # 0..11, 13..33, 35..40


def test_recursive_paragraphs_worked_by_hand():
    # pieces at "\n\n" (separator kept at the end): 13, 22, 5 chars. size 25: 13+22 > 25 -> emit; 22+5 > 25 -> emit.
    chunks = load_chunker("recursive", {"size": 25}).chunk(ChunkerInput(PARAS))
    assert texts(chunks) == ["Alpha beta.", "Gamma delta epsilon.", "Zeta."]
    assert pointers(chunks) == [(0, 11), (13, 33), (35, 40)]
    # size 40: 13 + 22 + 5 = 40 <= 40, one chunk (the whole text, 40 code points)
    assert pointers(load_chunker("recursive", {"size": 40}).chunk(ChunkerInput(PARAS))) == [(0, 40)]


def test_recursive_overlap_worked_by_hand():
    # word pieces "one "(4) "two "(4) "three "(6) "four "(5) "five "(5) "six"(3); size 10, overlap 4:
    # [one two] -> drop "one " (8 > 4), keep "two " (4) -> [two three] -> drop both (10 > 4, 6 > 4)
    # -> [four five] -> [six]
    chunks = load_chunker("recursive", {"size": 10, "overlap": 4}).chunk(ChunkerInput("one two three four five six"))
    assert texts(chunks) == ["one two", "two three", "four five", "six"]
    assert pointers(chunks) == [(0, 7), (4, 13), (14, 23), (24, 27)]


def test_recursive_keep_separator_start_is_langchains_default():
    text = "First one. Second one. Third."
    end = load_chunker("recursive", {"size": 15}).chunk(ChunkerInput(text))
    start = load_chunker("recursive", {"size": 15, "keep_separator": "start"}).chunk(ChunkerInput(text))
    assert texts(end) == ["First one.", "Second one.", "Third."]
    assert texts(start) == ["First one", ". Second one", ". Third."]
    assert_pointers_verify(text, end)
    assert_pointers_verify(text, start)


def test_repeated_paragraphs_point_at_their_own_copy():
    para = "The same paragraph appears again."
    text = "\n\n".join([para, "Something else.", para, para])
    for name, opts in [("recursive", {"size": 40}), ("structural", {"size": 40}),
                       ("fixed", {"size": 35, "unit": "chars"})]:
        chunks = load_chunker(name, opts).chunk(ChunkerInput(text))
        assert_pointers_verify(text, chunks)
        if name != "fixed":
            assert pointers(chunks) == [(0, 33), (35, 50), (52, 85), (87, 120)]
    # a first-occurrence search would have put all three copies at 0
    assert text.find(para) == 0


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab .\n\t,é中")), max_size=300),
       st.integers(min_value=1, max_value=60), st.integers(min_value=0, max_value=59))
def test_pointers_verify_and_sizes_hold_on_any_text(text, size, overlap):
    overlap = min(overlap, size - 1)
    for name, opts in [("recursive", {"size": size, "overlap": overlap}),
                       ("recursive", {"size": size, "keep_separator": "start"}),
                       ("fixed", {"size": size, "overlap": overlap, "unit": "chars"}),
                       ("structural", {"size": size})]:
        chunks = load_chunker(name, opts).chunk(ChunkerInput(text, page_starts=(len(text) // 2,)))
        assert_pointers_verify(text, chunks)
        assert all(len(c.text) <= size for c in chunks)
        if not overlap and name != "fixed":  # without overlap every non-space character is in exactly one chunk
            covered = "".join(c.text for c in chunks)
            assert "".join(covered.split()) == "".join(text.split())


def test_recursive_tokens_respect_size_with_the_model_tokenizer(minilm_tokens):
    sentence = "Retrieval-augmented generation splits documents into passages before indexing them. "
    text = "\n\n".join(sentence * k for k in (1, 3, 9, 2, 14)) + " " + "x" * 500
    chunks = load_chunker("recursive", {"size": 64, "unit": "tokens", "overlap": 8}).chunk(ChunkerInput(text),
                                                                                            minilm_tokens)
    assert_pointers_verify(text, chunks)
    counts = minilm_tokens.count_tokens(texts(chunks))
    assert max(counts) <= 64 and len(chunks) > 5


def test_tokens_unit_without_a_tokenizer_is_an_error():
    with pytest.raises(ChunkerError, match="tokenizer"):
        load_chunker("recursive", {"unit": "tokens"}).chunk(ChunkerInput("a b"))
    with pytest.raises(ChunkerError, match="tokenizer"):
        load_chunker("fixed").chunk(ChunkerInput("a b"))


def test_bad_options_are_value_errors():
    for name, opts in [("recursive", {"size": 0}), ("recursive", {"size": 10, "overlap": 10}),
                       ("recursive", {"unit": "words"}), ("recursive", {"keep_separator": "both"}),
                       ("fixed", {"size": 1.5}), ("semantic", {"percentile": 0}),
                       ("structural", {"keep_whole": "table"}),
                       ("recursive", {"nope": 1})]:
        with pytest.raises(ValueError):
            load_chunker(name, opts)


# --- pages and sections on every chunk --------------------------------------------------------------------------------

DOC = ("Guide\nIntro text here.\n\n"          # "Guide" 0..5 (H1)
       "Fees\nThe fee is 32 dollars.\n\n"     # "Fees" 24..28 (H2)
       "Refunds\nRefunds take a week.\n\n"    # "Refunds" 53..60 (H2)
       "Exceptions\nNone apply.")             # "Exceptions" 83..93 (H3)
HEADINGS = ((0, 5, 1, "Guide"), (24, 28, 2, "Fees"), (53, 60, 2, "Refunds"), (83, 93, 3, "Exceptions"))


def test_heading_offsets_of_the_hand_document():
    for s, e, _, label in HEADINGS:
        assert DOC[s:e] == label


def test_structural_one_chunk_per_section_with_its_path():
    inp = ChunkerInput(DOC, page_starts=(53,), headings=HEADINGS)
    chunks = load_chunker("structural", {"size": 200}).chunk(inp)
    assert texts(chunks) == ["Guide\nIntro text here.", "Fees\nThe fee is 32 dollars.", "Refunds\nRefunds take a week.",
                             "Exceptions\nNone apply."]
    assert [c.section for c in chunks] == [("Guide",), ("Guide", "Fees"), ("Guide", "Refunds"),
                                           ("Guide", "Refunds", "Exceptions")]
    assert [c.page for c in chunks] == [1, 1, 2, 2]
    assert_pointers_verify(DOC, chunks)


def test_every_chunker_fills_page_and_section_at_the_chunk_start():
    inp = ChunkerInput(DOC, page_starts=(0, 53), headings=HEADINGS)  # the TextLayout form (page 1 first) works too
    layout = TextLayout((0, 53), ())
    assert inp.page_starts == (0, 53)
    for name, opts in [("recursive", {"size": 12}), ("fixed", {"size": 7, "unit": "tokens"}),
                       ("structural", {"size": 15})]:
        chunks = load_chunker(name, opts).chunk(inp, WordTokens())
        assert_pointers_verify(DOC, chunks)
        for c in chunks:
            assert c.page == layout.page_at(c.start)
            assert c.section == inp.layout.section_path_at(c.start)
            assert c.section is not None and (c.start < 24 or len(c.section) >= 2)


def test_structural_splits_long_sections_inside_their_bounds():
    body = " ".join(f"Sentence number {i} of the fees section." for i in range(12))
    text = "Fees\n" + body + "\n\nNext\nShort."
    heads = ((0, 4, 1, "Fees"), (len(text) - 11, len(text) - 7, 1, "Next"))
    chunks = load_chunker("structural", {"size": 100}).chunk(ChunkerInput(text, headings=heads))
    assert_pointers_verify(text, chunks)
    assert all(len(c.text) <= 100 for c in chunks)
    assert chunks[0].text.startswith("Fees\n") and chunks[-1].text == "Next\nShort."
    assert all(c.section == ("Fees",) for c in chunks[:-1]) and chunks[-1].section == ("Next",)
    assert not any(c.start < heads[1][0] < c.end for c in chunks)  # no chunk straddles a heading


def test_structural_keeps_tables_and_list_runs_whole():
    intro = "Prices.\n\n"
    table = "| item | fee |\n| a | 1 |\n| b | 2 |\n| c | 3 |"        # 44 chars, longer than size
    gap = "\n\n"
    items = ["- first item here", "- second item here", "- third item here"]
    lst = "\n".join(items)
    text = intro + table + gap + lst + "\n\nThe end."
    t0 = len(intro)
    l0 = t0 + len(table) + len(gap)
    spans = [(t0, t0 + len(table), "table")]
    pos = l0
    for it in items:
        spans.append((pos, pos + len(it), "list_item"))
        pos += len(it) + 1
    inp = ChunkerInput(text, block_spans=tuple(spans))
    chunks = load_chunker("structural", {"size": 30}).chunk(inp)
    assert_pointers_verify(text, chunks)
    assert table in texts(chunks) and lst in texts(chunks)  # neither is cut, though both exceed size 30
    # the recursive chunker, which ignores blocks, cuts both
    plain = texts(load_chunker("recursive", {"size": 30}).chunk(inp))
    assert table not in plain and lst not in plain


def test_block_spans_from_parsed_through_a_cleaner_map():
    parsed = ParsedDocument("HEADER\nTitle\n| a | b |\n- x\n- y", pages=("",),
                            blocks=(Block("HEADER", kind="header"), Block("Title", kind="heading", level=1),
                                    Block("| a | b |", kind="table"), Block("- x", kind="list_item"),
                                    Block("- y", kind="list_item")))
    assert block_spans_from_parsed(parsed) == ((0, 6, "header"), (7, 12, "heading"), (13, 22, "table"),
                                               (23, 26, "list_item"), (27, 30, "list_item"))
    cleaned = parsed.text[7:]  # a cleaner dropped the running header
    cmap = OffsetMap(np.arange(7, len(parsed.text)), len(parsed.text))
    assert block_spans_from_parsed(parsed, cleaned, cmap) == ((0, 5, "heading"), (6, 15, "table"),
                                                              (16, 19, "list_item"), (20, 23, "list_item"))


# --- the fixed chunker ------------------------------------------------------------------------------------------------

def test_fixed_token_windows_on_the_offset_mapping(minilm_tokens):
    text = ("Tokenizers split unbelievable words into pieces. " * 20).strip()
    offsets = minilm_tokens.token_offsets(text)
    chunks = load_chunker("fixed", {"size": 50, "overlap": 10}).chunk(ChunkerInput(text), minilm_tokens)
    assert_pointers_verify(text, chunks)
    starts = [s for s, _ in offsets]
    ends = [e for _, e in offsets]
    for k, c in enumerate(chunks):  # window k holds pieces [40k, 40k + 50)
        first = starts.index(c.start)
        last = ends.index(c.end)
        assert first == 40 * k
        assert last - first + 1 == min(50, len(offsets) - first)
    assert (len(chunks) - 1) * 40 < len(offsets) <= (len(chunks) - 1) * 40 + 50


def test_fixed_hand_tokens_and_chars():
    text = "a bb ccc dddd eeeee"
    chunks = load_chunker("fixed", {"size": 2, "overlap": 1}).chunk(ChunkerInput(text), WordTokens())
    assert texts(chunks) == ["a bb", "bb ccc", "ccc dddd", "dddd eeeee"]
    chars = load_chunker("fixed", {"size": 5, "unit": "chars"}).chunk(ChunkerInput(text))
    assert texts(chars) == ["a bb", "ccc d", "ddd e", "eeee"]  # windows [0,5) [5,10) [10,15) [15,19), stripped
    assert pointers(chars) == [(0, 4), (5, 10), (10, 15), (15, 19)]


# --- the semantic chunker (hand vectors) ------------------------------------------------------------------------------

class TopicVectors:
    """Embeds a text as (1, 0) when it mentions cats, else (0, 1); records what it was asked."""

    def __init__(self):
        self.calls = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return np.array([[1.0, 0.0] if "cat" in t.lower() else [0.0, 1.0] for t in texts], dtype=np.float32)

    def count_tokens(self, texts):
        return [len(t.split()) for t in texts]


SEM = "Cats nap. A cat purrs. Rates rose. Yields fell."  # sentences 0..9, 10..22, 23..34, 35..47


def test_breakpoints_percentile_by_hand():
    # distances 0, 1, 0 -> numpy percentile 95 = 0 + 0.9 * (1 - 0) = 0.9; only d_1 = 1 > 0.9
    cuts, dist, threshold = breakpoints(np.array([[1, 0], [1, 0], [0, 1], [0, 1]]), 95)
    assert cuts == [1] and dist.tolist() == [0.0, 1.0, 0.0] and threshold == pytest.approx(0.9)
    # all distances equal: nothing exceeds the threshold, no cut
    assert breakpoints(np.array([[1, 0], [0, 1], [1, 0]]), 95)[0] == []


def test_semantic_splits_where_the_topic_changes():
    emb = TopicVectors()
    chunks = load_chunker("semantic").chunk(ChunkerInput(SEM), emb)
    assert texts(chunks) == ["Cats nap. A cat purrs.", "Rates rose. Yields fell."]
    assert pointers(chunks) == [(0, 22), (23, 47)]
    assert emb.calls == [["Cats nap.", "A cat purrs.", "Rates rose.", "Yields fell."]]


def test_semantic_buffer_embeds_neighbours_joined_by_a_space():
    emb = TopicVectors()
    load_chunker("semantic", {"buffer_size": 1}).chunk(ChunkerInput(SEM), emb)
    assert emb.calls == [["Cats nap. A cat purrs.", "Cats nap. A cat purrs. Rates rose.",
                          "A cat purrs. Rates rose. Yields fell.", "Rates rose. Yields fell."]]


def test_semantic_size_cap_and_errors():
    chunks = load_chunker("semantic", {"size": 12}).chunk(ChunkerInput(SEM), TopicVectors())
    assert texts(chunks) == ["Cats nap.", "A cat purrs.", "Rates rose.", "Yields fell."]
    assert_pointers_verify(SEM, chunks)
    with pytest.raises(ChunkerError, match="embedder"):
        load_chunker("semantic").chunk(ChunkerInput(SEM), None)
    assert load_chunker("semantic").chunk(ChunkerInput("  \n "), TopicVectors()) == []
    assert texts(load_chunker("semantic").chunk(ChunkerInput("One sentence only."), TopicVectors())) == [
        "One sentence only."]


# --- precomputed ------------------------------------------------------------------------------------------------------

def test_precomputed_chunks_come_back_unchanged():
    given_chunks = [{"text": "A.", "start": 0, "end": 2}, {"text": "B.", "start": 3, "end": 5, "page": 1},
                    {"text": "A.", "start": 0, "end": 2, "section": "Intro"},  # the first-occurrence-search bug
                    {"text": "C.", "start": 9, "end": 11, "section": ["Doc", "End"], "metadata": {"lang": "en"}},
                    {"text": "no pointer"}]
    inp = ChunkerInput("A.\nB.\nA.\nC.", extras={"chunks": given_chunks})
    chunks = load_chunker("precomputed").chunk(inp)
    assert chunks == [Chunk("A.", 0, 2), Chunk("B.", 3, 5, 1), Chunk("A.", 0, 2, None, ("Intro",)),
                      Chunk("C.", 9, 11, None, ("Doc", "End"), {"lang": "en"}), Chunk("no pointer")]
    assert load_chunker("precomputed", {"normalises_whitespace": True}).normalises_whitespace is True
    assert load_chunker("precomputed").normalises_whitespace is False


@pytest.mark.parametrize("extras, message", [
    ({}, "no 'chunks'"), ({"chunks": {}}, "must be a list"), ({"chunks": [{"start": 0}]}, "chunk 0: 'text'"),
    ({"chunks": [{"text": "a"}, {"text": "b", "start": "3"}]}, "chunk 1: 'start'"),
    ({"chunks": [{"text": "a", "section": 3}]}, "'section'"), ({"chunks": ["a"]}, "expected an object")])
def test_precomputed_bad_chunks_are_named(extras, message):
    with pytest.raises(ChunkerError, match=message):
        load_chunker("precomputed").chunk(ChunkerInput("abc", extras=extras))


# --- registry ---------------------------------------------------------------------------------------------------------

class EveryLine(Chunker):
    """A user chunker: one chunk per non-empty line."""

    name = "lines"

    def chunk(self, inp, tokens=None):
        out, pos = [], 0
        for line in inp.text.split("\n"):
            if line.strip():
                out.append(inp.chunk_at(pos, pos + len(line)))
            pos += len(line) + 1
        return out


def test_registry_builtins_paths_and_entry_points(monkeypatch):
    assert chunker_names()[:5] == ["recursive", "fixed", "structural", "semantic", "precomputed"]
    by_path = load_chunker(f"{__name__}:EveryLine")
    assert texts(by_path.chunk(ChunkerInput("a\n\nb"))) == ["a", "b"]
    eps = {"lines": EntryPoint("lines", f"{__name__}:EveryLine", registry.GROUP),
           "recursive": EntryPoint("recursive", f"{__name__}:EveryLine", registry.GROUP)}
    monkeypatch.setattr(registry, "_entry_points", lambda: eps)
    assert chunker_names()[-1] == "lines"
    assert isinstance(load_chunker("lines"), EveryLine)
    assert not isinstance(load_chunker("recursive"), EveryLine)  # the built-in wins
    with pytest.raises(UnknownChunker, match="unknown chunker 'nope'; known: recursive, fixed"):
        load_chunker("nope")
    with pytest.raises(UnknownChunker, match="not a Chunker"):
        load_chunker("ingestaudit.model:Chunk")
    ok, ver = load_chunker("recursive").available()
    assert ok and ver.startswith("ingestaudit ")
    assert load_chunker("semantic").version().split("; ")[1].startswith("spaCy ")
    assert load_chunker("recursive").settings()["size"] == 1000
    assert load_chunker("fixed").settings() | {"windows": None} == {"size": 256, "overlap": 0, "unit": "tokens",
                                                                     "windows": None}


def test_chunker_errors_are_in_the_plugin_hierarchy():
    from ingestaudit.plugins import PluginUnavailable, UnknownPlugin
    from ingestaudit.stages.chunkers import ChunkerUnavailable

    assert issubclass(UnknownChunker, UnknownPlugin) and issubclass(UnknownChunker, ValueError)
    assert issubclass(ChunkerUnavailable, PluginUnavailable) and issubclass(ChunkerUnavailable, ChunkerError)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["Title", "Intro text.", "More words here.", "| a | b |", "- item"]), max_size=25),
       st.integers(min_value=5, max_value=80), st.data())
def test_structural_sections_on_random_documents(lines, size, data):
    text = "\n".join(lines)
    heads, pos = [], 0
    for line in lines:
        if line == "Title":
            heads.append((pos, pos + 5, data.draw(st.integers(1, 3)), f"Title@{pos}"))
        pos += len(line) + 1
    inp = ChunkerInput(text, headings=tuple(heads))
    chunks = load_chunker("structural", {"size": size}).chunk(inp)
    assert_pointers_verify(text, chunks)
    starts = {c.start for c in chunks}
    assert all(h[0] in starts for h in heads)  # every heading starts a chunk
    for c in chunks:
        assert c.section == inp.layout.section_path_at(c.start)
        assert not any(c.start < h[0] < c.end for h in heads)


def _langchain_samples():
    import random

    rng = random.Random(0)
    words = "alpha beta. gamma\n delta\n\nepsilon zeta. eta theta  iota\tkappa".split(" ")
    return [" ".join(rng.choice(words) + rng.choice(["", "\n", ". ", "\n\n", "x" * 29]) for _ in range(150))
            for _ in range(20)]


def test_recursive_equals_langchain_with_a_token_like_length_function():
    """The oracle in the chunker's ``tokens`` unit: LangChain's length_function applied to the same pieces (here a
    word count standing in for the tokenizer, so the test needs no model)."""
    import langchain_text_splitters as lc  # the test extra's oracle: never skipped

    def words(t):
        return len(t.split())

    class WordCounter:
        def count_tokens(self, texts):
            return [words(t) for t in texts]

    for size, overlap in [(8, 0), (8, 3), (30, 5)]:
        splitter = lc.RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap, keep_separator="end",
                                                     separators=["\n\n", "\n", ". ", " ", ""], length_function=words)
        ours = load_chunker("recursive", {"size": size, "overlap": overlap, "unit": "tokens"})
        for text in _langchain_samples()[:8]:
            chunks = ours.chunk(ChunkerInput(text), WordCounter())
            assert texts(chunks) == splitter.split_text(text)
            assert_pointers_verify(text, chunks)


def test_recursive_equals_langchain():
    """An independent implementation as the oracle: langchain-text-splitters 1.1.3 (the ``test`` extra), never
    skipped."""
    import random

    import langchain_text_splitters as lc

    rng = random.Random(0)
    words = "alpha beta. gamma\n delta\n\nepsilon zeta. eta theta  iota\tkappa".split(" ")
    samples = [" ".join(rng.choice(words) + rng.choice(["", "\n", ". ", "\n\n", "x" * 29]) for _ in range(150))
               for _ in range(20)]
    for keep in ("start", "end"):
        for size, overlap in [(37, 5), (100, 0), (100, 20), (300, 50)]:
            splitter = lc.RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap, keep_separator=keep,
                                                         separators=["\n\n", "\n", ". ", " ", ""])
            ours = load_chunker("recursive", {"size": size, "overlap": overlap, "keep_separator": keep})
            for text in samples:
                assert texts(ours.chunk(ChunkerInput(text))) == splitter.split_text(text)
