"""The reference parser emits the labelled structure as blocks, so component-level chunking sees real sections."""

from __future__ import annotations

import json
from pathlib import Path

from ingestaudit.auditors.base import ItemArtefacts
from ingestaudit.auditors.chunking import ChunkingAuditor
from ingestaudit.chain import run_chain
from ingestaudit.corpus import discover
from ingestaudit.model import Block
from ingestaudit.parsers.reference import ReferenceParser, reference_blocks
from ingestaudit.stages.chunkers import load_chunker
from ingestaudit.stages.cleaners import load_cleaner
from ingestaudit.textlayout import TextLayout
from ingestaudit.truth import load_truth

TEXT = ("Contents: Scope, Fees\n\n1 Scope\n\nThe pump runs at forty litres per hour. It is quiet.\n\n"
        "1.1 Parts\n- inlet valve\n- outlet valve\n\n2 Fees\n\nThe fee is 32 dollars.")
HEADINGS = [{"level": 1, "text": "1 Scope"}, {"level": 2, "text": "1.1 Parts"}, {"level": 1, "text": "2 Fees"}]
LISTS = [["inlet valve", "outlet valve"]]


def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "docs" / "c").mkdir(parents=True)
    (root / "docs" / "c" / "a.txt").write_text("the source document is never read\n")
    (root / "truth" / "c").mkdir(parents=True)
    (root / "truth" / "c" / "a.json").write_text(json.dumps({"text": TEXT, "headings": HEADINGS, "lists": LISTS}))
    return root


def test_blocks_tile_the_text_in_order_with_headings_list_items_and_paragraphs():
    blocks = reference_blocks(TEXT, [(h["level"], h["text"]) for h in HEADINGS], LISTS)
    assert [(b.kind, b.text, b.level) for b in blocks] == [
        ("paragraph", "Contents: Scope, Fees", None),
        ("heading", "1 Scope", 1),
        ("paragraph", "The pump runs at forty litres per hour. It is quiet.", None),
        ("heading", "1.1 Parts", 2),
        ("list_item", "- inlet valve", None),  # the bullet is part of the item
        ("list_item", "- outlet valve", None),
        ("heading", "2 Fees", 1),
        ("paragraph", "The fee is 32 dollars.", None),
    ]
    assert [b.order for b in blocks] == list(range(8))
    # each block's text is its slice of the text: consumers that locate blocks in order find them where they were
    pos = 0
    for b in blocks:
        at = TEXT.index(b.text, pos)
        assert TEXT[pos:at].strip() == ""
        pos = at + len(b.text)


def test_a_list_item_overlapping_a_heading_yields_to_it():
    text = "A\nB\n- A"
    blocks = reference_blocks(text, [(1, "A")], [["A", "B"]])
    # the heading "A" is at 0; the list item "A" is located independently, also at 0: it overlaps the heading and is
    # left out; the item "B" is found after it
    assert [(b.kind, b.text) for b in blocks] == [("heading", "A"), ("list_item", "B"), ("paragraph", "- A")]


def test_reference_parser_output_and_its_layout(tmp_path):
    root = corpus(tmp_path)
    doc = discover(root).documents[0]
    parsed = ReferenceParser().parse(doc)
    assert parsed.text == TEXT and parsed.pages == (TEXT,)
    assert [b.text for b in parsed.blocks if b.kind == "heading"] == ["1 Scope", "1.1 Parts", "2 Fees"]
    # the parser's layout puts the headings exactly where the labelled layout does (not in the contents line)
    truth = load_truth(doc, root)
    labelled = TextLayout.from_reference_headings(TEXT, truth.headings)
    assert TextLayout.from_parsed(parsed).headings == labelled.headings
    assert labelled.headings[0].start == TEXT.index("1 Scope")


def test_structural_chunking_at_component_level_follows_the_labelled_sections(tmp_path):
    root = corpus(tmp_path)
    doc = discover(root).documents[0]
    parsed = ReferenceParser().parse(doc)
    truth = load_truth(doc, root)
    chain = run_chain(parsed, doc_id=doc.doc_id, doc_class="c", reference=truth.text, metadata=None,
                      cleaner=load_cleaner("none"), chunker=load_chunker("structural", {"size": 1000}),
                      embedder=None, evidence=(), min_span_coverage=0.5)
    assert [(c.text.split("\n")[0], c.section) for c in chain.chunks] == [
        ("Contents: Scope, Fees", ()),
        ("1 Scope", ("1 Scope",)),
        ("1.1 Parts", ("1 Scope", "1.1 Parts")),
        ("2 Fees", ("2 Fees",)),
    ]
    # the list run is a block span of the chunker's input (kept whole by the structural chunker)
    assert [k for _, _, k in chain.block_spans].count("list_item") == 2
    rows = {(s.metric, s.label): s for s in ChunkingAuditor().audit(ItemArtefacts.of(truth, parsed, chain=chain))}
    h = rows["chunking.hierarchy", ""]
    assert (h.value, h.numerator, h.denominator) == (1.0, 4, 4) and h.detail["unmapped"] == 0
    assert rows["chunking.attribution", ""].value == 1.0
    # small chunks cut the list: the labelled list and the parser's (reference) list units both see the cut
    small = run_chain(parsed, doc_id=doc.doc_id, doc_class="c", reference=truth.text, metadata=None,
                      cleaner=load_cleaner("none"), chunker=load_chunker("recursive", {"size": 20}),
                      embedder=None, evidence=(), min_span_coverage=0.5)
    rows = {(s.metric, s.label): s for s in ChunkingAuditor().audit(ItemArtefacts.of(truth, parsed, chain=small))}
    assert [c.text for c in small.chunks if "valve" in c.text] == ["- inlet valve", "- outlet valve"]
    assert rows["chunking.boundary_splits", "list"].numerator == 1
    assert rows["chunking.boundary_splits", "labelled_list"].numerator == 1


def test_a_document_without_structure_labels_gets_paragraph_blocks_only():
    assert reference_blocks("One.\n\nTwo.") == (Block("One.", order=0), Block("Two.", order=1))
