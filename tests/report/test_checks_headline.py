"""Issue 25, scope 4: a class labelled with olmOCR-style checks only (no reference text) shows
``extraction.checks_pass`` as its extraction headline metric, and the paired tests run on it; a class with reference
text keeps ``extraction.cer_norm``."""

from __future__ import annotations

from _reportkit import Row, build

from ingestaudit.report.render import render_markdown
from ingestaudit.report.tables import all_headline_keys, headline_keys, headlines


def mixed_report():
    rows = []
    for i, (a, b) in enumerate(((0.10, 0.20), (0.30, 0.40))):  # class prose: CER per document, 100 chars each
        rows += [Row(f"prose/d{i}", "prose", "A", "extraction.cer_norm", a, a * 100, 100),
                 Row(f"prose/d{i}", "prose", "B", "extraction.cer_norm", b, b * 100, 100)]
    for i, (a, b) in enumerate(((3, 1), (4, 2))):  # class scans: checks passed of 4 per document, no reference text
        for p, passed in (("A", a), ("B", b)):
            rows += [Row(f"scans/s{i}", "scans", p, "extraction.cer_norm", None, state="no_reference"),
                     Row(f"scans/s{i}", "scans", p, "extraction.checks_pass", passed / 4, passed, 4)]
    return build(rows, pipelines=["A", "B"])


def test_a_checks_only_class_shows_checks_pass():
    report = mixed_report()
    assert headline_keys(report.summary, doc_class="scans")["extraction"] == ("extraction.checks_pass", "")
    assert headline_keys(report.summary, doc_class="prose")["extraction"] == ("extraction.cer_norm", "")
    assert headline_keys(report.summary)["extraction"] == ("extraction.cer_norm", "")  # __all__ has CER values
    assert all_headline_keys(report.summary) == [("extraction.cer_norm", ""), ("extraction.checks_pass", "")]
    by_class = {h.doc_class: h for h in headlines(report)}
    scans = by_class["scans"].rows
    assert [r.metric for r in scans] == ["extraction.checks_pass"]
    # micro: A (3 + 4) / (4 + 4) = 0.875, B (1 + 2) / 8 = 0.375
    assert [c.value for c in scans[0].cells] == [0.875, 0.375]
    prose = by_class["prose"].rows
    assert [r.metric for r in prose] == ["extraction.cer_norm"]
    assert prose[0].cells[0].value == (10 + 30) / 200  # 0.2
    assert any(t.metric == "extraction.checks_pass" and t.doc_class == "scans" for t in report.paired_tests)
    assert "| extraction.checks\\_pass ↑ | 0.875 " in render_markdown(report)


def test_a_class_with_segment_labels_only_shows_content_retention_not_a_bare_dash():
    # the demo's web class: pipeline A cannot read the pages (every boilerplate row skipped, label ""), B's cleaner
    # `none` is measured on trafilatura-style segments: content retention 27/28 and 26/28 (no character-span F1)
    rows = []
    for i, kept in enumerate((27, 26)):
        rows += [Row(f"web/w{i}", "web", "A", m, None, state="skipped", reason="unsupported file type .html")
                 for m in ("boilerplate.f1", "boilerplate.content_retention")]
        rows += [Row(f"web/w{i}", "web", "B", "boilerplate.content_retention", kept / 28, kept, 28)]
    report = build(rows, pipelines=["A", "B"])
    assert headline_keys(report.summary, doc_class="web")["boilerplate"] == ("boilerplate.content_retention", "")
    (web,) = [h for h in headlines(report) if h.doc_class == "web"]
    assert [c.value for c in web.rows[0].cells] == [None, (27 + 26) / 56]  # B: micro 53/56


def test_the_budget_legend_only_where_a_budget_recall_was_measured():
    """The legend said "the pipelines differ in chunking: retrieval's headline is span recall..." in a run of two
    parsers with no chunking and no retrieval at all (the new-user trial)."""
    from ingestaudit.report.tables import BUDGET_HEADLINE

    assert BUDGET_HEADLINE not in " ".join(render_markdown(mixed_report()).split())
    rows = [Row(f"q{i}", "c", p, "retrieval.span_recall@2000ch", v, v * 10, 10, kind="question")
            for i in range(3) for p, v in (("A", 0.5), ("B", 0.7))]
    assert BUDGET_HEADLINE in " ".join(render_markdown(build(rows, pipelines=["A", "B"])).split())
