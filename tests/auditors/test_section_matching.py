"""Issue 25, scope 5: section evidence is matched to headings with the layout audit's matcher and threshold
(`ingestaudit.metrics.layout.heading_matches`), and a label that no heading of the reference text matches either is
``label_unmatched`` in the waterfall, not ``lost_in_parsing``."""

from __future__ import annotations

import numpy as np
import pytest

from _retrievalkit import context, doc, question
from ingestaudit.auditors.retrieval import OUTCOMES, RetrievalAuditor
from ingestaudit.chain import EvidenceRef, EvidenceTrace, section_in_reference, trace_evidence
from ingestaudit.measurement import State
from ingestaudit.metrics.layout import DEFAULT_THRESHOLD, heading_matches, similarity
from ingestaudit.model import ParsedDocument
from ingestaudit.textlayout import HeadingPos, TextLayout

REFERENCE = "Results\n\n5.2 Quantitative results:\nThe model wins.\n"


def trace(label: str, parsed_headings: list[str], reference: str | None = REFERENCE,
          threshold: float = DEFAULT_THRESHOLD) -> EvidenceTrace:
    heads = tuple(HeadingPos(i * 10, i * 10 + 5, 1, h) for i, h in enumerate(parsed_headings))
    layout = TextLayout((0,), heads)
    sections = [(h,) for h in parsed_headings]  # one chunk starting under each heading
    return trace_evidence(
        EvidenceRef(("q", 0), "section", section=label), parsed_to_ref=None, cleaned_to_ref=None,
        chunk_positions=[np.zeros(0, dtype=np.int64)] * len(sections), chunk_sections=sections,
        chunk_pages=[1] * len(sections), parsed_layout=layout, cleaned_text="some text",
        parsed=ParsedDocument(text="some text"), min_span_coverage=0.5, reference=reference,
        heading_threshold=threshold)


def test_a_label_matches_a_parsed_heading_fuzzily_as_the_layout_audit_does():
    # processed (NFC, casefold, white space): "5.2 quantitative results" vs "5.2 quantitative results:":
    # Levenshtein 1 over max length 25 -> similarity 1 - 1/25 = 0.96 >= 0.8
    assert similarity("5.2 Quantitative Results", "5.2 Quantitative results:") == pytest.approx(0.96)
    assert heading_matches("5.2 Quantitative Results", "5.2 Quantitative results:")
    t = trace("5.2 Quantitative Results", ["Results", "5.2 Quantitative results:"])
    assert (t.parsed, t.cleaned, t.holding, t.label_unmatched) == (1.0, 1.0, [1], False)
    # the layout audit's threshold is the one option: at 0.97 the same pair no longer matches
    t = trace("5.2 Quantitative Results", ["5.2 Quantitative results:"], threshold=0.97)
    assert (t.parsed, t.holding) == (0.0, [])


def test_a_label_no_reference_heading_matches_is_label_unmatched():
    # "Qualitative analysis" vs the reference lines: best is "5.2 quantitative results:" far below 0.8
    assert not section_in_reference("Qualitative analysis", REFERENCE)
    t = trace("Qualitative analysis", ["Results"])
    assert (t.parsed, t.label_unmatched) == (0.0, True)
    # the reference has the heading but the parser dropped it: lost in parsing, not the label's fault
    assert section_in_reference("5.2 Quantitative Results", REFERENCE)
    t = trace("5.2 Quantitative Results", ["Results"])
    assert (t.parsed, t.label_unmatched) == (0.0, False)
    # without a reference text nothing can be said about the label
    assert trace("Qualitative analysis", ["Results"], reference=None).label_unmatched is False


def test_waterfall_outcome_label_unmatched_comes_before_lost_in_parsing():
    assert OUTCOMES[:2] == ("label_unmatched", "lost_in_parsing")
    unmatched = EvidenceTrace(0.0, 0.0, label_unmatched=True)
    lost = EvidenceTrace(0.0, 0.0)
    docs = [doc("c/a", [0], evidence={("q1", 0): unmatched}), doc("c/b", [90], evidence={("q2", 0): lost})]
    qs = [question("q1", relevant=[{"doc": "c/a", "section": "Qualitative analysis"}]),
          question("q2", relevant=[{"doc": "c/b", "section": "5.2 Quantitative Results"}])]
    result = RetrievalAuditor().audit_pipeline(context(docs, qs, {"q1": 0, "q2": 90}))
    got = {item: s.label for item, _, _, s in result.item_scores
           if s.metric == "retrieval.outcome@10" and s.state is State.OK and s.value == 1.0}
    assert got == {"q1": "label_unmatched", "q2": "lost_in_parsing"}


def test_the_section_threshold_is_printed_in_the_conventions():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "report"))
    from _reportkit import Row, build

    from ingestaudit.report.render import run_conventions
    from ingestaudit.runner import section_threshold

    report = build([Row("q1", "c", "A", "retrieval.recall@10", 1.0, 1, 1, kind="question")])
    report.config["auditor_options"] = {"layout": {"threshold": 0.9}}
    assert ("convention (retrieval): section evidence matches a heading at similarity >= 0.9 ([auditor_options.layout] "
            "threshold, the layout audit's heading matching); a label no reference line matches is label_unmatched"
            ) in run_conventions(report)
    assert section_threshold({"layout": {"threshold": 0.9, "paragraphs": "line"}}) == 0.9
    assert section_threshold({}) == DEFAULT_THRESHOLD == 0.8


def test_a_sibling_heading_is_not_the_labelled_section():
    """Similarity alone matched siblings ("5.1 Results" / "5.2 Results" 0.91, "Appendix A" / "Appendix B" 0.9), so
    a chunk under 5.2 held 5.1's evidence (the review of stop 34); the numbering must agree too."""
    from ingestaudit.chain import numbering, section_matches

    assert similarity("5.1 Results", "5.2 Results") == pytest.approx(1 - 1 / 11)  # one substitution in 11
    assert numbering("5.1 Results") == ["5", "1"] and numbering("Appendix B") == ["b"]
    assert not section_matches("5.1 Results", "5.2 Results")
    assert not section_matches("Appendix A", "Appendix B")
    assert section_matches("5.2 Quantitative Results", "5.2 Quantitative results:")
    t = trace("5.1 Results", ["5.1 Results", "5.2 Results"])
    assert (t.parsed, t.holding) == (1.0, [0])  # only the chunk under 5.1 (it held both before)
    t = trace("Appendix A", ["Appendix B"])  # the parser dropped Appendix A: lost, not held by its sibling
    assert (t.parsed, t.holding) == (0.0, [])
