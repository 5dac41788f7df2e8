"""Projecting gold spans from a reference text onto extracted text through a Levenshtein character alignment."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestaudit.metrics.alignment import align_chars, project_spans
from ingestaudit.metrics.spans import Span


def test_hyphenated_name_projects_over_the_break():
    # reference: "Please contact " = [0,15), "Johanna" = [15,22), " " = 22, "Schmidt" = [23,30)
    # target:    "Johan" = [15,20), "-\n" inserted at [20,22), "na" = [22,24), " " = 24, "Schmidt" = [25,32)
    # all 15 characters kept; the inserted hyphen and line break fall inside -> [15, 32)
    ref = "Please contact Johanna Schmidt today."
    tgt = "Please contact Johan-\nna Schmidt today."
    assert ref[15:30] == "Johanna Schmidt"
    (p,) = project_spans(ref, tgt, [(15, 30, "PERSON")])
    assert p.state == "projected" and p.target == Span(15, 32, "PERSON") and p.kept == 15
    assert tgt[15:32] == "Johan-\nna Schmidt"


def test_dropped_line_loses_its_span_and_shifts_the_next():
    # reference lines: "Name: Ana Lima\n" [0,15) (PERSON [6,14)), "Email: ana@example.com\n" [15,38)
    # (EMAIL [22,37)), "Phone: 555-0100\n" [38,54) (PHONE [45,53)). The extracted text lacks the e-mail line
    # (23 characters), so PHONE moves to [22,30) and the e-mail keeps 0 of 15 characters: lost.
    ref = "Name: Ana Lima\nEmail: ana@example.com\nPhone: 555-0100\n"
    tgt = "Name: Ana Lima\nPhone: 555-0100\n"
    assert (ref[6:14], ref[22:37], ref[45:53]) == ("Ana Lima", "ana@example.com", "555-0100")
    person, email, phone = project_spans(
        ref, tgt, [(6, 14, "PERSON"), (22, 37, "EMAIL_ADDRESS"), (45, 53, "PHONE_NUMBER")]
    )
    assert person.target == Span(6, 14, "PERSON")
    assert email.state == "lost" and email.target is None and email.kept == 0 and "0 of 15" in email.reason
    assert phone.target == Span(22, 30, "PHONE_NUMBER") and tgt[22:30] == "555-0100"
    assert align_chars(ref, tgt).distance == 23


def test_ocr_confusion_keeps_the_span_and_covers_the_new_characters():
    # "Lima" read as "Lirna": one substitution and one insertion; 7 of 8 characters kept -> [5, 14)
    ref, tgt = "Call Ana Lima now", "Call Ana Lirna now"
    (p,) = project_spans(ref, tgt, [(5, 13, "PERSON")])
    assert p.target == Span(5, 14, "PERSON") and p.kept == 7 and p.kept_fraction == 7 / 8
    assert tgt[5:14] == "Ana Lirna"


def test_min_kept_rule_at_the_boundary():
    # "ID: AB12" -> "ID: AB99": span [4,8) keeps "AB" = 2 of 4 = 0.5
    ref, tgt = "ID: AB12", "ID: AB99"
    (at_half,) = project_spans(ref, tgt, [(4, 8, "ID")], min_kept=0.5)
    assert at_half.state == "projected" and at_half.target == Span(4, 8, "ID")
    (stricter,) = project_spans(ref, tgt, [(4, 8, "ID")], min_kept=0.75)
    assert stricter.state == "lost" and stricter.kept == 2
    # every character replaced: 0 kept -> lost whatever the threshold
    (garbled,) = project_spans("ID: ABCD", "ID: WXYZ", [(4, 8, "ID")], min_kept=0.01)
    assert garbled.state == "lost" and garbled.kept == 0


def test_errors():
    with pytest.raises(ValueError):
        project_spans("abc", "abc", [(0, 9, "X")])
    with pytest.raises(ValueError):
        project_spans("abc", "abc", [(0, 1, "X")], min_kept=0)
    with pytest.raises(ValueError):
        project_spans("abc", "abcd", [(0, 1, "X")], alignment=align_chars("abc", "abc"))
    with pytest.raises(TypeError):
        align_chars("abc", None)  # type: ignore[arg-type]


@st.composite
def text_and_spans(draw):
    text = draw(st.text(alphabet="ab \n", min_size=1, max_size=30))
    spans = []
    for _ in range(draw(st.integers(0, 4))):
        start = draw(st.integers(0, len(text) - 1))
        spans.append(Span(start, draw(st.integers(start + 1, len(text))), "X"))
    return text, spans


@settings(max_examples=200, deadline=None)
@given(text_and_spans())
def test_identity_projects_every_span_onto_itself(d):
    text, spans = d
    out = project_spans(text, text, spans)
    assert [p.target for p in out] == spans and all(p.kept == p.source.length for p in out)


@settings(max_examples=200, deadline=None)
@given(text_and_spans(), st.text(alphabet="XYZ", min_size=1, max_size=5))
def test_inserted_prefix_of_foreign_characters_shifts_every_span(d, prefix):
    # target = prefix + text with letters absent from text: the only optimal alignment inserts the prefix
    # (substituting a prefix letter would cost an extra edit), so every span moves right by len(prefix).
    text, spans = d
    out = project_spans(text, prefix + text, spans)
    k = len(prefix)
    assert [p.target for p in out] == [Span(s.start + k, s.end + k, s.type) for s in spans]


@settings(max_examples=200, deadline=None)
@given(text_and_spans(), st.text(alphabet="XYZ", min_size=1, max_size=6), st.data())
def test_deleted_block_of_foreign_characters(d, block, data):
    # reference = A + block + B, target = A + B, block letters absent from A and B: each block letter must be
    # deleted or substituted, and a substitution forces an extra edit elsewhere, so the only optimal alignment
    # deletes the block. Spans within A stay, spans within B shift left by len(block), spans in the block are lost.
    text, _ = d
    cut = data.draw(st.integers(0, len(text)))
    a, b = text[:cut], text[cut:]
    ref, tgt = a + block + b, a + b
    spans = []
    if a:
        s = data.draw(st.integers(0, len(a) - 1))
        spans.append(Span(s, data.draw(st.integers(s + 1, len(a))), "A"))
    s = data.draw(st.integers(0, len(block) - 1))
    spans.append(Span(len(a) + s, len(a) + data.draw(st.integers(s + 1, len(block))), "BLOCK"))
    if b:
        s = data.draw(st.integers(0, len(b) - 1))
        off = len(a) + len(block)
        spans.append(Span(off + s, off + data.draw(st.integers(s + 1, len(b))), "B"))
    assert align_chars(ref, tgt).distance == len(block)
    for p in project_spans(ref, tgt, spans):
        if p.source.type == "BLOCK":
            assert p.state == "lost" and p.kept == 0
        else:
            shift = -len(block) if p.source.type == "B" else 0
            assert p.target == Span(p.source.start + shift, p.source.end + shift, p.source.type)


def test_presidio_synth_spans_survive_whitespace_collapse(shared_data):
    # Real labels: project every span of the records whose text has newlines or repeated spaces onto the same
    # text with each whitespace run collapsed to one space; each span must land on its own value, collapsed
    # the same way (671 spans in 1,000 records are affected).
    records = json.loads((shared_data / "presidio-synth" / "synth_dataset_v2.first1000.json").read_text("utf-8"))
    n = 0
    for rec in records:
        text = rec["full_text"]
        flat = re.sub(r"\s+", " ", text)
        if flat == text:
            continue
        spans = [(s["start_position"], s["end_position"], s["entity_type"]) for s in rec["spans"]]
        for p in project_spans(text, flat, spans):
            n += 1
            assert p.state == "projected", p
            assert flat[p.target.start : p.target.end] == re.sub(r"\s+", " ", text[p.source.start : p.source.end])
    assert n == 671
