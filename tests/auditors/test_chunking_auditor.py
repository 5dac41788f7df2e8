"""The chunking auditor through its real code path: `run_chain` on a parsed document, then `ChunkingAuditor`.

Every value is worked by hand (issue 9's acceptance cases among them). Sentence vectors come from a stub embedder
(a table from sentence to vector); token counts from a word-count stub, except where the real all-MiniLM-L6-v2
tokenizer is the point.
"""

from __future__ import annotations

import numpy as np
import pytest

from ingestaudit.auditors.base import ItemArtefacts
from ingestaudit.auditors.chunking import BOUNDARY_KINDS, LABELLED_KINDS, ChunkingAuditor
from ingestaudit.chain import EvidenceRef, run_chain
from ingestaudit.measurement import State
from ingestaudit.metrics.chunking import random_split_labels
from ingestaudit.model import Block, ParsedDocument
from ingestaudit.stages.chunkers import load_chunker
from ingestaudit.stages.cleaners import load_cleaner
from ingestaudit.truth import Heading, Truth


class TableEmbedder:
    """Vectors looked up by text (sentences the test names), (1, 0) for any other text; one token per word."""

    def __init__(self, vectors: dict[str, tuple[float, ...]] | None = None, max_len: int = 512, special: int = 2):
        self.vectors = vectors or {}
        self.max_len, self.special = max_len, special
        self.embedded: list[list[str]] = []

    def count_tokens(self, texts):
        return [len(t.split()) for t in texts]

    def embed(self, texts):
        self.embedded.append(list(texts))
        out = np.array([self.vectors.get(t, (1.0, 0.0)) for t in texts], dtype=np.float32).reshape(len(texts), -1)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def max_seq_length(self):
        return self.max_len

    def special_tokens(self):
        return self.special


def chunk_dicts(text, intervals, sections=None):
    out = []
    for k, (s, e) in enumerate(intervals):
        item = {"text": text[s:e], "start": s, "end": e}
        if sections is not None and sections[k] is not None:
            item["section"] = sections[k]
        out.append(item)
    return out


def audit(parsed_text, chunks, *, reference=None, truth=None, evidence=(), embedder=None, blocks=(),
          min_span_coverage=0.5, seed=0, draws=20):
    """Run the chain with precomputed chunks (the `chunks` dicts) and the ``none`` cleaner, then the auditor.
    Returns (rows by (metric, label), chain output)."""
    parsed = ParsedDocument(text=parsed_text, pages=(parsed_text,), blocks=tuple(blocks), parser="precomputed",
                            extras={"chunks": chunks})
    truth = truth or Truth(text=reference)
    chain = run_chain(parsed, doc_id="c/d", doc_class="c", reference=truth.text, metadata=None,
                      cleaner=load_cleaner("none"), chunker=load_chunker("precomputed"),
                      embedder=embedder if embedder is not None else TableEmbedder(), evidence=tuple(evidence),
                      min_span_coverage=min_span_coverage)
    item = ItemArtefacts.of(truth, parsed, chain=chain, evidence=tuple(evidence))
    scores = ChunkingAuditor(coherence_draws=draws, seed=seed).audit(item)
    return {(s.metric, s.label): s for s in scores}, chain


# --- attribution (acceptance) ----------------------------------------------------------------------------------------

def test_attribution_is_three_quarters_with_the_first_occurrence_pointer_and_one_with_the_true_one():
    text = "A.\nB.\nA.\nC."
    rows, _ = audit(text, chunk_dicts(text, [(0, 2), (3, 5), (0, 2), (9, 11)]))
    att = rows["chunking.attribution", ""]
    assert (att.value, att.numerator, att.denominator) == (0.75, 3, 4)
    assert att.detail["failures"]["out_of_order"] == 1 and sum(att.detail["failures"].values()) == 1
    assert [(f["chunk"], f["kind"]) for f in att.detail["first_failing"]] == [(2, "out_of_order")]
    assert att.detail["no_page_claimed"] == 4 and att.detail["no_section_claimed"] == 4  # nothing else claimed
    rows, _ = audit(text, chunk_dicts(text, [(0, 2), (3, 5), (6, 8), (9, 11)]))
    assert rows["chunking.attribution", ""].value == 1.0


def test_size_distribution_in_characters_and_tokens():
    # chunk lengths 4, 9, 14, 19, 24 characters and 1..5 words (the stub's tokens)
    words = ["w" * 4, "w" * 4 + " " + "w" * 4]
    words += [" ".join(["w" * 4] * k) for k in (3, 4, 5)]
    text = "\n".join(words)
    bounds, pos = [], 0
    for w in words:
        bounds.append((pos, pos + len(w)))
        pos += len(w) + 1
    rows, _ = audit(text, chunk_dicts(text, bounds))
    sizes = rows["chunking.attribution", ""].detail["sizes"]
    assert sizes["chars"] == {"n": 5, "min": 4, "median": 14, "p95": 24, "max": 24}  # p95: ceil(4.75) = 5th value
    assert sizes["tokens"] == {"n": 5, "min": 1, "median": 3, "p95": 5, "max": 5}


# --- evidence (acceptance) -------------------------------------------------------------------------------------------

FEE = "The fee is 32 dollars. It drops to 8 dollars."


@pytest.mark.parametrize("threshold, held", [(0.5, 1.0), (0.9, 0.0)])
def test_evidence_held_at_half_and_split_at_nine_tenths(threshold, held):
    assert len(FEE) == 45
    span = EvidenceRef(("q1", 0), "span", 23, 45)
    rows, chain = audit(FEE, chunk_dicts(FEE, [(0, 30), (30, 45)]), reference=FEE, evidence=[span],
                        min_span_coverage=threshold)
    ev = rows["chunking.evidence_held", ""]
    assert (ev.value, ev.numerator, ev.denominator) == (held, int(held), 1)
    assert ev.detail["min_span_coverage"] == threshold
    trace = chain.doc.evidence["q1", 0]
    assert trace.best_chunk_coverage == pytest.approx(15 / 22)  # 0.682: chunk [30, 45) holds 15 of 22
    assert trace.covered == {0: [(23, 30)], 1: [(30, 45)]}
    if held:
        assert ev.detail["split"] == [] and trace.holding == [1]
    else:
        assert ev.detail["n_split"] == 1
        assert ev.detail["split"] == [{"question": "q1", "item": 0, "span": [23, 45],
                                       "best_chunk_coverage": round(15 / 22, 6), "chunks": [0, 1]}]


def test_every_split_span_is_named_and_lost_spans_are_counted_apart():
    # 25 spans of 2 characters each cut by the boundary at 1 + 2k; one more span lies in text the parser lost
    body = "ab" * 25
    reference = body + " LOST TEXT"
    spans = [EvidenceRef((f"q{k}", 0), "span", 2 * k, 2 * k + 2) for k in range(25)]
    spans.append(EvidenceRef(("gone", 0), "span", 51, 60))
    bounds = [(0, 1)] + [(1 + 2 * k, 3 + 2 * k) for k in range(24)] + [(49, 50)]
    rows, _ = audit(body, chunk_dicts(body, bounds), reference=reference, evidence=spans, min_span_coverage=0.9)
    ev = rows["chunking.evidence_held", ""]
    assert (ev.numerator, ev.denominator) == (0, 25)
    assert ev.detail["n_split"] == 25 and [s["question"] for s in ev.detail["split"]] == [f"q{k}" for k in range(25)]
    assert ev.detail["n_lost"] == 1
    assert ev.detail["lost_before_chunking"] == [{"question": "gone", "item": 0, "span": [51, 60], "stage": "parsing",
                                                  "survived": 0.0}]


# --- coherence (acceptance) and the random-split baseline --------------------------------------------------------

SENTS = ["Cats purr.", "Cats nap.", "Banks lend.", "Banks save."]
COH_TEXT = " ".join(SENTS)  # chunk 1 = the first two sentences, chunk 2 = the last two


@pytest.mark.parametrize("vectors, within, across, value", [
    ([(1, 0), (1, 0), (0, 1), (0, 1)], 1.0, 0.0, 1.0),
    ([(1, 0), (0, 1), (1, 0), (0, 1)], 0.0, 0.0, 0.0),
])
def test_coherence_acceptance_values_through_the_auditor(vectors, within, across, value):
    emb = TableEmbedder(dict(zip(SENTS, vectors)))
    cut = len(SENTS[0]) + 1 + len(SENTS[1])
    rows, _ = audit(COH_TEXT, chunk_dicts(COH_TEXT, [(0, cut), (cut + 1, len(COH_TEXT))]), embedder=emb)
    coh = rows["chunking.coherence", ""]
    assert coh.state == State.OK
    assert (coh.value, coh.detail["within"], coh.detail["across"]) == (value, within, across)
    assert (coh.detail["within_pairs"], coh.detail["across_pairs"]) == (2, 1)
    assert SENTS in emb.embedded  # the four sentences, segmented by spaCy, were embedded once


def test_coherence_gain_against_seeded_random_splits_worked_by_hand():
    emb = TableEmbedder(dict(zip(SENTS, [(1, 0), (1, 0), (0, 1), (0, 1)])))
    cut = len(SENTS[0]) + 1 + len(SENTS[1])
    rows, _ = audit(COH_TEXT, chunk_dicts(COH_TEXT, [(0, cut), (cut + 1, len(COH_TEXT))]), embedder=emb,
                    seed=7, draws=20)
    # a random split of a, a, b, b into 2 contiguous chunks cuts after sentence 1, 2 or 3:
    #   after 1: a | a b b -> within (0 + 0 + 1) / 3, across a.a = 1 -> -2/3
    #   after 2: a a | b b -> within 1, across 0 -> 1;  after 3: a a b | b -> 1/3 - 1 = -2/3
    by_cut = {1: -2 / 3, 2: 1.0, 3: -2 / 3}
    draws = random_split_labels(4, 2, seed=7, n_draws=20)
    expected_mean = np.mean([by_cut[int(np.flatnonzero(lab)[0])] for lab in draws])
    gain = rows["chunking.coherence_gain", ""]
    assert gain.detail["random_split_mean"] == pytest.approx(expected_mean)
    assert gain.value == pytest.approx(1.0 - expected_mean)
    assert gain.detail["chunks_with_sentences"] == 2 and gain.detail["random_split_draws"] == 20
    assert 0 < gain.value < 5 / 3  # the chunker beats chance, and some draw found the same cut


def test_one_chunk_has_no_coherence_and_says_why():
    rows, _ = audit(COH_TEXT, chunk_dicts(COH_TEXT, [(0, len(COH_TEXT))]))
    assert rows["chunking.coherence", ""].state == State.NO_REFERENCE
    assert "two located chunks" in rows["chunking.coherence", ""].detail["reason"]


# --- tokens ----------------------------------------------------------------------------------------------------------

def test_over_max_tokens_and_truncated_tokens_with_the_real_minilm_tokenizer():
    """A 300-word-piece chunk under all-MiniLM-L6-v2 (256 pieces with [CLS] and [SEP]): it is over the window and
    300 - 254 = 46 of its pieces are dropped. The tokenizer, window and special tokens are the real model's; vectors
    come from the stub (the real model's truncation of the vectors is `tests/stages/test_embedder.py`'s)."""
    from ingestaudit.stages.embedders.sentence_transformers_embedder import MiniLMEmbedder

    real = MiniLMEmbedder()

    class RealTokens(TableEmbedder):
        def count_tokens(self, texts):
            return real.count_tokens(texts)

        def max_seq_length(self):
            return real.max_seq_length()

        def special_tokens(self):
            return real.special_tokens()

    long_text = " ".join(["pump"] * 300)
    short = "The valve."
    text = long_text + "\n\n" + short
    assert real.count_tokens([long_text, short]) == [300, 3]
    rows, _ = audit(text, chunk_dicts(text, [(0, len(long_text)), (len(long_text) + 2, len(text))]),
                    embedder=RealTokens())
    over, trunc = rows["chunking.over_max_tokens", ""], rows["chunking.truncated_tokens", ""]
    assert (over.numerator, over.denominator) == (1, 2)
    assert over.detail["over"] == [0] and over.detail["max_seq_length"] == 256 and over.detail["special_tokens"] == 2
    assert (trunc.numerator, trunc.denominator) == (46, 303)
    assert rows["chunking.attribution", ""].detail["sizes"]["tokens"]["max"] == 300


def test_a_chunk_of_exactly_the_window_is_not_over():
    text = "a b c d\n\ne f"
    emb = TableEmbedder(max_len=6, special=2)  # room for 4 content tokens
    rows, _ = audit(text, chunk_dicts(text, [(0, 7), (9, 12)]), embedder=emb)
    assert rows["chunking.over_max_tokens", ""].numerator == 0
    assert rows["chunking.truncated_tokens", ""].numerator == 0


# --- boundary splits per kind, from the parser's blocks and from the labelled reference ----------------------------

HEAD1, SENT = "1 Scope", "The pump runs. It is quiet."
TABLE = "| Pump model | Flow rate |\n| X200 | 40 l/h |"
LIST = "- inlet valve\n- outlet valve"
HEAD2, TAIL = "2 Costs", "Fees apply."
REFERENCE = "\n\n".join([HEAD1, SENT, TABLE, LIST, HEAD2, TAIL])
PARSED = "PAGE 1\n\n" + REFERENCE  # the parser added a running head: parsed = reference shifted by 8


def _boundary_case():
    off = 8
    mid_sentence = off + REFERENCE.index("It is quiet.") + 3  # inside "It is quiet."
    mid_table = off + REFERENCE.index("| X200")  # between the two table rows
    mid_list = off + REFERENCE.index("- outlet")  # between the two list items
    head2 = off + REFERENCE.index(HEAD2)
    cuts = [0, mid_sentence, mid_table, mid_list, head2, len(PARSED)]
    chunks = chunk_dicts(PARSED, list(zip(cuts, cuts[1:])))
    blocks = [Block("PAGE 1", kind="header"), Block(HEAD1, kind="heading", level=1), Block(SENT),
              Block(TABLE, kind="table"), Block(LIST), Block(HEAD2, kind="heading", level=1), Block(TAIL)]
    truth = Truth(text=REFERENCE, headings=(Heading(level=1, text=HEAD1), Heading(level=1, text=HEAD2)),
                  lists=(("inlet valve", "outlet valve"),),
                  tables=("<table><tr><td>Pump model</td><td>Flow rate</td></tr>"
                          "<tr><td>X200</td><td>40 l/h</td></tr></table>",))
    return chunks, blocks, truth, (mid_sentence, mid_table, mid_list, head2)


def test_boundary_splits_per_kind_from_the_parser_and_from_the_labelled_reference():
    chunks, blocks, truth, (mid_sentence, mid_table, mid_list, head2) = _boundary_case()
    rows, chain = audit(PARSED, chunks, truth=truth, blocks=blocks)
    got = {label: rows["chunking.boundary_splits", label] for label in BOUNDARY_KINDS + LABELLED_KINDS}
    # 5 contiguous chunks: 4 boundaries (mid sentence, mid table, mid list, the start of "2 Costs")
    assert {k: r.denominator for k, r in got.items() if r.state == State.OK} == dict.fromkeys(
        ["sentence", "table", "section", "labelled_table", "labelled_list", "labelled_section"], 4)
    # sentences (a blank line ends one): "It is quiet." is cut; the table's rows and the list's items are one
    # "sentence" each (no sentence punctuation between them), so those cuts split a sentence too; "2 Costs" starts one
    assert got["sentence"].numerator == 3
    assert got["table"].numerator == 1 and got["table"].detail["examples"][0]["boundary"] == mid_table
    # the parser emitted the list as a paragraph: no parser list unit, but the labelled list is cut once
    assert got["list"].state == State.NO_REFERENCE
    assert got["labelled_list"].numerator == 1
    assert got["labelled_list"].detail["examples"][0] == {"boundary": mid_list,
                                                          "unit": [mid_list - len("- inlet valve\n"),
                                                                   mid_list + len("- outlet valve")]}
    # numbered sections "1 Scope" [.., head2) and "2 Costs" [head2, end): the first three cuts are inside section 1
    assert got["section"].numerator == 3 and got["labelled_section"].numerator == 3
    # the labelled table (first cell to last cell, mapped through the alignment) holds the cut between its rows
    assert got["labelled_table"].numerator == 1
    table_unit = got["labelled_table"].detail["examples"][0]["unit"]
    assert PARSED[table_unit[0]:table_unit[1]] == "Pump model | Flow rate |\n| X200 | 40 l/h"
    assert got["labelled_table"].detail["labels"] == {"labelled": 1, "not_found": 0, "lost_before_chunking": 0}


def test_labelled_kinds_without_labels_say_so():
    rows, _ = audit(FEE, chunk_dicts(FEE, [(0, 30), (30, 45)]), reference=FEE)
    for kind in LABELLED_KINDS:
        r = rows["chunking.boundary_splits", kind]
        assert r.state == State.NO_REFERENCE and "no labelled" in r.detail["reason"]


# --- hierarchy: the chunk's own section claim against the labelled path at its reference position -----------------

H_REF = "1 Intro\nAlpha text here.\n1.1 Detail\nBeta text here.\n2 Fees\nGamma text here."
H_PARSED = "PAGE HEADER\n" + H_REF


def test_hierarchy_judges_the_chunks_own_section_claim_and_counts_unmapped_chunks_apart():
    at = {s: H_PARSED.index(s) for s in ("1 Intro", "1.1 Detail", "2 Fees", "Gamma")}
    intervals = [(0, 11), (at["1 Intro"], at["1.1 Detail"] - 1), (at["1.1 Detail"], at["2 Fees"] - 1),
                 (at["2 Fees"], at["Gamma"] - 1), (at["Gamma"], len(H_PARSED))]
    sections = [None, ["1 Intro"], ["1 Intro", "1.1 Detail"], ["1 Intro", "2 Fees"], None]
    truth = Truth(text=H_REF, headings=(Heading(level=1, text="1 Intro"), Heading(level=2, text="1.1 Detail"),
                                        Heading(level=1, text="2 Fees")))
    blocks = [Block("PAGE HEADER"), Block("1 Intro", kind="heading", level=1), Block("Alpha text here."),
              Block("1.1 Detail", kind="heading", level=2), Block("Beta text here."),
              Block("2 Fees", kind="heading", level=1), Block("Gamma text here.")]
    rows, _ = audit(H_PARSED, chunk_dicts(H_PARSED, intervals, sections), truth=truth, blocks=blocks)
    h = rows["chunking.hierarchy", ""]
    # chunk 0 ("PAGE HEADER") has no character in the reference: counted apart, not in the denominator;
    # chunks 1 and 2 claim the labelled paths; chunk 3 claims ("1 Intro", "2 Fees") where the label says ("2 Fees",);
    # chunk 4 claims nothing and is judged on the parser's heading path at its start, ("2 Fees",): right
    assert (h.value, h.numerator, h.denominator) == (0.75, 3, 4)
    assert h.detail["unmapped"] == 1 and h.detail["unmapped_chunks"] == [0]
    assert h.detail["claimed_by_layout"] == 1
    assert h.detail["first_wrong"] == [{"chunk": 3, "expected": ["2 Fees"], "claimed": ["1 Intro", "2 Fees"],
                                        "reference_position": H_REF.index("2 Fees")}]
    # the same chunks with true claims all match: the parser's own headings were never the thing judged
    sections[3] = ["2 Fees"]
    rows, _ = audit(H_PARSED, chunk_dicts(H_PARSED, intervals, sections), truth=truth, blocks=blocks)
    assert rows["chunking.hierarchy", ""].value == 1.0


def test_section_claims_are_unchecked_not_wrong_when_the_parse_has_no_headings():
    # an output without heading blocks: the chunks' true section claims cannot be checked, so they do not fail
    rows, _ = audit(H_PARSED, chunk_dicts(H_PARSED, [(0, 11), (12, len(H_PARSED))], [None, ["1 Intro"]]))
    att = rows["chunking.attribution", ""]
    assert (att.numerator, att.denominator) == (2, 2) and att.detail["failures"]["section_wrong"] == 0
    assert att.detail["section_claims_unchecked"] == 1


def test_a_chunk_that_runs_into_a_section_holds_it():
    # one chunk for the whole document starts under "1 Intro" and contains "2 Fees" and its text: it holds the
    # section item "2 Fees" (its path at its start is ("1 Intro",)); a second document chunked at the heading holds
    # it through its path
    truth = Truth(text=H_REF, headings=(Heading(level=1, text="1 Intro"), Heading(level=2, text="1.1 Detail"),
                                        Heading(level=1, text="2 Fees")))
    blocks = [Block("PAGE HEADER"), Block("1 Intro", kind="heading", level=1), Block("Alpha text here."),
              Block("1.1 Detail", kind="heading", level=2), Block("Beta text here."),
              Block("2 Fees", kind="heading", level=1), Block("Gamma text here.")]
    item = EvidenceRef(("q", 0), "section", section="  2 FEES ")
    start = H_PARSED.index("1 Intro")
    _, whole = audit(H_PARSED, chunk_dicts(H_PARSED, [(start, len(H_PARSED))]), truth=truth, blocks=blocks,
                     evidence=[item])
    assert whole.doc.sections == [("1 Intro",)] and whole.doc.evidence[("q", 0)].holding == [0]
    fees = H_PARSED.index("2 Fees")
    _, split = audit(H_PARSED, chunk_dicts(H_PARSED, [(start, fees - 1), (fees, len(H_PARSED))]), truth=truth,
                     blocks=blocks, evidence=[item])
    assert split.doc.evidence[("q", 0)].holding == [1]  # the first chunk ends before the heading


def test_hierarchy_treats_a_heading_without_a_level_as_layout_hierarchy_does():
    # the parser marks "A" a heading without a level: it is no one's parent, so the path under "B" (level 2) is
    # ("B",), while the labels say ("A", "B"); the old rule (an unknown level taken as 1) would have said ("A", "B")
    ref = "A\nfirst part.\nB\nsecond part."
    truth = Truth(text=ref, headings=(Heading(level=1, text="A"), Heading(level=2, text="B")))
    blocks = [Block("A", kind="heading", level=None), Block("first part."), Block("B", kind="heading", level=2),
              Block("second part.")]
    rows, _ = audit(ref, chunk_dicts(ref, [(0, 14), (15, len(ref))]), truth=truth, blocks=blocks)
    h = rows["chunking.hierarchy", ""]
    assert (h.numerator, h.denominator) == (1, 2)
    assert h.detail["first_wrong"][0]["expected"] == ["A", "B"] and h.detail["first_wrong"][0]["claimed"] == ["B"]


def test_hierarchy_needs_labelled_headings():
    rows, _ = audit(FEE, chunk_dicts(FEE, [(0, 45)]), reference=FEE)
    assert rows["chunking.hierarchy", ""].state == State.NO_REFERENCE


# --- states ----------------------------------------------------------------------------------------------------------

def test_no_chunk_gives_no_prediction_rows_for_every_metric_and_kind():
    rows, _ = audit(FEE, [], reference=FEE)
    assert {s.state for s in rows.values()} == {State.NO_PREDICTION}
    assert {label for metric, label in rows if metric == "chunking.boundary_splits"} == set(
        BOUNDARY_KINDS + LABELLED_KINDS)


# --- the cleaner's exact map reaches the evidence (the repeated running head) --------------------------------------

class KeepLastPage:
    """A line-removal cleaner that drops page 1 and says which input span it kept (or, with ``exact=False``, gives
    only its output, so the chain aligns)."""

    name = "keep-last-page"

    def __init__(self, exact=True, pieces=None):
        self.exact, self.pieces = exact, pieces

    def clean(self, inp):
        from ingestaudit.stages.cleaners.base import CleanResult

        start = len(inp.pages[0]) + 1  # pages joined by "\n"
        pieces = self.pieces if self.pieces is not None else ((0, start, len(inp.text) - start),)
        return CleanResult(inp.text[start:], pieces=pieces if self.exact else None)


def _repeated_head_chain(cleaner):
    text = "Header\nA\nHeader\nA"  # page 2 = [9, 17)
    parsed = ParsedDocument(text=text, pages=("Header\nA", "Header\nA"), parser="precomputed")
    span = EvidenceRef(("q", 0), "span", 9, 17)
    return run_chain(parsed, doc_id="c/d", doc_class="c", reference=text, metadata=None, cleaner=cleaner,
                     chunker=load_chunker("recursive", {"size": 100}), embedder=TableEmbedder(), evidence=(span,),
                     min_span_coverage=0.5)


def test_a_line_removal_cleaners_exact_map_keeps_the_evidence_on_the_copy_it_kept():
    chain = _repeated_head_chain(KeepLastPage())
    assert chain.cleaned == "Header\nA"
    assert chain.clean_to_parsed.source.tolist() == list(range(9, 17))
    trace = chain.doc.evidence["q", 0]
    assert (trace.parsed, trace.cleaned, trace.holding, trace.best_chunk_coverage) == (1.0, 1.0, [0], 1.0)
    # the same output without the pieces is aligned onto page 1's copy: the evidence looks removed by the cleaner
    aligned = _repeated_head_chain(KeepLastPage(exact=False))
    assert aligned.clean_to_parsed.source.tolist() == list(range(0, 8))
    assert aligned.doc.evidence["q", 0].cleaned == 0.0


def test_pieces_that_claim_other_text_or_run_past_it_are_an_error_of_the_document():
    with pytest.raises(ValueError, match="piece \\(0, 1, 8\\) maps output text to different input text"):
        _repeated_head_chain(KeepLastPage(pieces=((0, 1, 8),)))  # "eader\nA\n" is not "Header\nA"
    with pytest.raises(ValueError, match="offset pieces do not fit the texts"):
        _repeated_head_chain(KeepLastPage(pieces=((0, 10, 8),)))  # input [10, 18) runs past its 17 code points
    _repeated_head_chain(KeepLastPage(pieces=((0, 0, 8),)))  # page 1's identical copy: a true (if odd) claim
