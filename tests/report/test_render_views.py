"""The terminal headline, Markdown and HTML views on hand-built reports: the best pipeline marked only when
significant, aggregates over the items every pipeline measured, the loss waterfall, failures grouped by cause,
terminal width, ``--verbose``, and deterministic plots."""

from __future__ import annotations

import re

import pytest
from _reportkit import Row, build

from ingestaudit.report import plots
from ingestaudit.report.render import render_html, render_markdown, render_terminal_text
from ingestaudit.report.schema import Failure, StageDetail, SummaryRow
from ingestaudit.report.tables import choose_keys, headline_keys, headlines

OUTCOMES = ["lost_in_parsing", "lost_in_cleaning", "split_by_chunking", "excluded_by_filter", "missed_by_ranking",
            "missed_by_ann", "retrieved"]


def bakeoff(n_big: int = 20, n_small: int = 4):
    """pymupdf beats unstructured by 0.05 CER on every document of 'invoices' (n_big) and 'memos' (n_small);
    unstructured alone reads the 3 scans."""
    rows = []
    for cls, n in (("invoices", n_big), ("memos", n_small)):
        for i in range(n):
            v = 0.02 + 0.003 * i
            rows.append(Row(f"{cls}/d{i:02d}", cls, "pymupdf", "extraction.cer_norm", v, v * 100, 100))
            rows.append(Row(f"{cls}/d{i:02d}", cls, "unstructured", "extraction.cer_norm", v + 0.05,
                            (v + 0.05) * 100, 100))
    for i in range(3):
        rows.append(Row(f"scans/s{i}", "scans", "pymupdf", "extraction.cer_norm", None, state="skipped",
                        reason="unsupported file type .png"))
        rows.append(Row(f"scans/s{i}", "scans", "unstructured", "extraction.cer_norm", 0.3, 30, 100))
    return rows


def waterfall_rows():
    """Ten questions; pymupdf loses the evidence of q0-q2 in parsing, unstructured misses q0 in ranking."""
    rows = []
    for q in range(10):
        for pipe, lost in (("pymupdf", {0: "lost_in_parsing", 1: "lost_in_parsing", 2: "lost_in_parsing"}),
                           ("unstructured", {0: "missed_by_ranking"})):
            outcome = lost.get(q, "retrieved")
            for o in OUTCOMES:
                rows.append(Row(f"q{q}", "invoices", pipe, "retrieval.outcome@10", float(o == outcome),
                                float(o == outcome), 1.0, label=o, kind="question"))
            rows.append(Row(f"q{q}", "invoices", pipe, "retrieval.recall@10", float(outcome == "retrieved"),
                            float(outcome == "retrieved"), 1.0, kind="question"))
    return rows


def waterfall_details():
    return [StageDetail(pipeline=p, stage="retrieval", name="waterfall",
                        data={"k": 10, "outcomes": OUTCOMES, "by_class": {}}) for p in ("pymupdf", "unstructured")]


FAILURES = [Failure(item=f"scans/s{i}", pipeline="pymupdf", stage="parse",
                    message=f"unsupported file type .png: no parser of this run reads s{i}.png") for i in range(3)]
FAILURES += [Failure(item="invoices/d03", pipeline="unstructured", stage="tables", message="TimeoutError: 300 s"),
             Failure(item="invoices/d03", pipeline="unstructured", stage="layout", message="TimeoutError: 300 s")]


@pytest.fixture(scope="module")
def report():
    return build(bakeoff() + waterfall_rows(), pipelines=["pymupdf", "unstructured"], failures=FAILURES,
                 details=waterfall_details(), questions=10)


def test_key_metrics_per_stage():
    keys = choose_keys([("extraction.cer", ""), ("extraction.cer_norm", ""), ("retrieval.recall@5", ""),
                        ("retrieval.recall@10", ""), ("retrieval.rr", ""), ("pii.f1", "PERSON"), ("pii.f1", ""),
                        ("index.recall@5", ""), ("chunking.evidence_held", ""), ("layout.order_located", "")])
    assert keys == {"extraction": ("extraction.cer_norm", ""), "layout": ("layout.order_located", ""),
                    "pii": ("pii.f1", ""), "chunking": ("chunking.evidence_held", ""),
                    "index": ("index.recall@5", ""), "retrieval": ("retrieval.recall@10", "")}
    # issue 25: chunking's key is boundary_splits[sentence] when the chunking audit measured it (evidence_held is 1
    # for nearly every chunker), evidence_held only without it
    keys = choose_keys([("chunking.evidence_held", ""), ("chunking.boundary_splits", "list"),
                        ("chunking.boundary_splits", "sentence"), ("chunking.boundary_splits", "table")])
    assert keys == {"chunking": ("chunking.boundary_splits", "sentence")}


def test_a_key_label_with_a_value_comes_before_a_valueless_empty_label():
    """Regression (new-user trial): PII's ``pii.f1`` rows of unlabelled documents carry label ``""`` and no value,
    its measured values carry the policy (``exact``): the headline showed "no value in this class" beside a measured
    F1 of 0.6667."""
    pairs = [("pii.f1", ""), ("pii.f1", "exact"), ("pii.f1", "exact/PERSON"), ("pii.f1", "overlap@0.5"),
             ("extraction.cer", ""), ("extraction.cer", "x")]
    assert choose_keys(pairs, valued={("pii.f1", "exact"), ("pii.f1", "token"), ("extraction.cer", ""),
                                      ("extraction.cer", "x")}) == {"extraction": ("extraction.cer", ""),
                                                                     "pii": ("pii.f1", "exact")}
    assert choose_keys(pairs, valued=set())["pii"] == ("pii.f1", "")  # nothing measured: the states of ""
    rows = [SummaryRow(pipeline="p", doc_class="__all__", stage="pii", metric="pii.f1", label=label, n_docs=n,
                       micro=micro, macro=micro, ci_low=None, ci_high=None, ci_method="bootstrap",
                       states={"ok": n, "no_reference": 3 - n})
            for label, micro, n in (("", None, 0), ("exact", 2 / 3, 1), ("token", 0.5, 1))]
    assert headline_keys(rows) == {"pii": ("pii.f1", "exact")}


def test_the_best_pipeline_is_marked_only_where_significant(report):
    by_class = {h.doc_class: h for h in headlines(report)}
    (cer,) = [r for r in by_class["invoices"].rows if r.metric == "extraction.cer_norm"]
    assert [c.best for c in cer.cells] == [True, False]  # 20 documents all better: sign test, Holm
    (cer,) = [r for r in by_class["memos"].rows if r.metric == "extraction.cer_norm"]
    assert [c.best for c in cer.cells] == [False, False]  # 4 documents: p >= 0.125, cannot be significant
    tests = {(t.doc_class, t.metric): t for t in report.paired_tests}
    assert tests[("memos", "extraction.cer_norm")].underpowered
    assert tests[("memos", "extraction.cer_norm")].p_holm is None  # outside Tarone's family
    assert tests[("invoices", "extraction.cer_norm")].significant


def test_all_classes_also_shows_values_over_the_items_every_pipeline_measured(report):
    overall = next(h for h in headlines(report) if h.doc_class == "__all__")
    (cer,) = [r for r in overall.rows if r.metric == "extraction.cer_norm"]
    assert [c.n for c in cer.cells] == [24, 27]  # pymupdf skipped the 3 scans
    assert cer.common_n == 24 and cer.common[1] - cer.common[0] == pytest.approx(0.05)
    text = render_terminal_text(report, width=120)
    assert re.search(r"\n    same 24 items +0\.\d+ +0\.\d+\n", text)
    assert "| same 24 items |" in render_markdown(report)


def test_the_terminal_headline(report):
    text = render_terminal_text(report, width=120)
    lines = text.splitlines()
    assert "class: invoices — 20 documents, 10 questions" in lines
    row = next(line for line in lines[lines.index("class: invoices — 20 documents, 10 questions"):]
               if line.startswith("  extraction.cer_norm ↓"))
    # the intervals are seeded bootstraps (run seed, class, metric, label; not the pipeline's name since tuser #6)
    assert row == "  extraction.cer_norm ↓  0.0485 ★ n=20 [0.0411, 0.0556]  0.0985 n=20 [0.0912, 0.106]"
    assert "  retrieval.recall@10 ↑" in text
    assert ("  waterfall @10 · pymupdf: lost_in_parsing 30% · retrieved 70%" in lines
            and "  waterfall @10 · unstructured: missed_by_ranking 10% · retrieved 90%" in lines)
    # failures grouped by cause, one line each with a count and an example
    assert "failures: 4 in 2 causes (report.json 'failures' lists each)" in lines
    assert ("  3 × parse (pymupdf): unsupported file type .png: no parser of this run reads s0.png — e.g. scans/s0"
            in lines)
    assert "  1 × tables, layout (unstructured): TimeoutError: 300 s — e.g. invoices/d03" in lines
    assert len(lines) < 45


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_terminal_view_fits_the_width(report, width):
    for verbose in (False, True):
        text = render_terminal_text(report, width=width, verbose=verbose)
        too_long = [line for line in text.splitlines() if len(line) > width]
        assert too_long == []
        assert "…" not in text  # nothing cut: long labels and cells continue on the next line


def test_columns_is_honoured_when_piped(report, monkeypatch):
    from ingestaudit.report.render import terminal_width

    monkeypatch.setenv("COLUMNS", "77")
    assert terminal_width() == 77
    monkeypatch.delenv("COLUMNS")
    assert terminal_width() == 100  # not a terminal (pytest captures stdout)


def test_verbose_prints_every_row(report):
    text = render_terminal_text(report, width=200, verbose=True)
    names = {r.metric + (f"[{r.label}]" if r.label else "") for r in report.summary}
    for name in names:
        assert name in text
    assert text.count("retrieval.outcome@10[") == 7 * 2  # invoices and __all__


def test_the_waterfall_in_markdown_and_html(report):
    md = render_markdown(report)
    assert ("- waterfall @10 `pymupdf`: lost_in_parsing 30.0%, lost_in_cleaning 0.0%, split_by_chunking 0.0%, "
            "excluded_by_filter 0.0%, missed_by_ranking 0.0%, missed_by_ann 0.0%, retrieved 70.0%") in md
    page = render_html(report)
    assert 'alt="loss waterfall of invoices"' in page and 'alt="loss waterfall of memos"' not in page


def test_markdown_states_the_correction(report):
    md = render_markdown(report)
    assert "Holm family (Tarone)" in md and "significant after Holm at alpha = 0.05" in md
    assert re.search(r"\| memos \| extraction\.cer\\?_norm \| pymupdf \| unstructured \| 4 \| \+0\.0500 \| [0-9.]+ \| "
                     r"— \| .* \| underpowered \|", md)


def test_plots_are_deterministic_svg_without_dates():
    panels = [("extraction.cer ↓", "↓", [("a", 0.1, 0.05, 0.15, True), ("b", 0.2, 0.15, 0.25, False)])]
    first = plots.interval_plot("c", panels)
    assert first == plots.interval_plot("c", panels)
    assert first.startswith("<?xml") and "<dc:date>" not in first and "matplotlib" not in first.split("<svg")[0]
    bars = [("a", [("lost_in_parsing", 0.3), ("retrieved", 0.7)])]
    assert plots.waterfall_plot("w", bars) == plots.waterfall_plot("w", bars)
    assert plots.interval_plot("c", []) == "" and plots.waterfall_plot("w", []) == ""
    assert render_html(build(bakeoff())) == render_html(build(bakeoff()))


def test_verbose_tables_give_4_significant_digits():
    rows = [Row(f"c/d{i}", "c", "p", "extraction.cer", v, v * 1000, 1000) for i, v in
            enumerate([0.0123456, 0.0123456, 0.00001234])]
    text = render_terminal_text(build(rows), width=100, verbose=True)
    assert "0.008235 (0.008235) [1.234e-05, 0.01235] n=3" in " ".join(text.split())  # 24.70 / 3000 = 0.0082346
    assert "0.0000" not in text
    wide = build([Row(f"c/d{i}", "c", "p", "normalization.replacement_chars", 0.0, 0, 100) for i in range(3)])
    lines = render_terminal_text(wide, width=40, verbose=True).splitlines()
    assert any(line.startswith("  normalization.") for line in lines)
    assert any(line.strip().startswith("replacement_chars ↓") for line in lines), lines


def bakeoff_teds(b_values):
    """21 tables: pipeline a scores 0.9 on each; b the given values (TEDS is a mean, higher is better)."""
    return build([Row(f"c/d{i:02d}", "c", p, "tables.teds", v) for i, vb in enumerate(b_values)
                  for p, v in (("a", 0.9), ("b", vb))], pipelines=["a", "b"])


def test_the_star_follows_the_direction_of_the_test_and_of_the_difference():
    better = bakeoff_teds([0.92 + 0.001 * i for i in range(21)])  # b better on every table, by distinct amounts
    (t,) = [t for t in better.paired_tests if t.doc_class == "c"]
    assert t.significant and t.better == "b" and t.p_value == pytest.approx(2 * 0.5 ** 21)  # exact Wilcoxon
    (row,) = next(h for h in headlines(better) if h.doc_class == "c").rows
    assert [c.best for c in row.cells] == [False, True]
    worse = bakeoff_teds([0.85] * 21)
    (row,) = next(h for h in headlines(worse) if h.doc_class == "c").rows
    assert [c.best for c in row.cells] == [True, False]
    # 20 tables a little better with b, one much worse: Wilcoxon is significant for b (ranks), the mean is better
    # for a (0.9 against 0.8771): the two disagree, so nobody gets a star
    mixed = bakeoff_teds([0.901] * 20 + [0.4])
    (t,) = [t for t in mixed.paired_tests if t.doc_class == "c"]
    assert t.significant and t.better == "" and t.diff == pytest.approx(-0.48 / 21)
    (row,) = next(h for h in headlines(mixed) if h.doc_class == "c").rows
    assert [c.best for c in row.cells] == [False, False]


def test_the_paired_tests_run_on_the_headlines_key_metrics():
    from ingestaudit.report.schema import SummaryRow
    from ingestaudit.report.tables import headline_keys

    rows = [Row(f"c/d{i:02d}", "c", p, "language.abstained", float(p == "b" and i < 15), float(p == "b" and i < 15),
                1) for i in range(20) for p in ("a", "b")]
    rows += [Row(f"c/d{i:02d}", "c", p, "extraction.cer", 0.1 + 0.05 * (p == "b"), (0.1 + 0.05 * (p == "b")) * 100,
                 100) for i in range(20) for p in ("a", "b")]
    corpus = [SummaryRow(pipeline=p, doc_class=c, stage="language", metric="language.macro_f1", label="", n_docs=20,
                         micro=v, macro=None, ci_low=None, ci_high=None, ci_method="bootstrap", states={"ok": 20},
                         level="corpus") for p, v in (("a", 0.9), ("b", 0.6)) for c in ("c", "__all__")]
    report = build(rows, pipelines=["a", "b"], extra_summary=corpus)
    keys = headline_keys(report.summary)
    assert keys["language"] == ("language.macro_f1", "") and keys["extraction"] == ("extraction.cer", "")
    assert {(t.metric, t.label) for t in report.paired_tests} == {("extraction.cer", "")}  # macro_f1: no items
    (cer,) = [r for r in next(h for h in headlines(report) if h.doc_class == "c").rows if r.stage == "extraction"]
    assert [c.best for c in cer.cells] == [True, False]


def test_the_index_sweep_is_drawn_against_qps_from_the_timings_else_against_the_knob():
    cells = [{"label": f"ef_search={v}", "knob": "ef_search", "value": v,
              "unfiltered": {"queries": 50, "recall@10": {"value": r, "numerator": 1, "denominator": 1,
                                                          "mean_per_query": r}}}
             for v, r in ((16, 0.8), (32, 0.9), (64, 0.97))]
    details = [StageDetail(pipeline="pymupdf", stage="index", name="sweep", data={"knob": "ef_search", "cells": cells}),
               StageDetail(pipeline="pymupdf", stage="index", name="operating_point", data={"target": 0.95, "k": 10})]
    report = build([r for r in bakeoff(6, 0) if r.doc_class == "invoices"], pipelines=["pymupdf", "unstructured"],
                   details=details)
    plain = render_html(report)
    assert 'alt="index sweep"' in plain and "drawn against the search parameter" in plain
    assert plain == render_html(report)  # without timings the page is deterministic
    svg = _svg_of(plain, "index sweep")
    assert "ef_search (log scale)" in svg and "target 0.95" in svg and "queries per second" not in svg
    report.timings = {"pymupdf": {"index": {"cells": [{"label": f"ef_search={v}", "qps": q}
                                                      for v, q in ((16, 9000.0), (32, 5000.0), (64, 2500.0))]}}}
    timed = render_html(report)
    svg = _svg_of(timed, "index sweep")
    assert "queries per second, one thread (log scale); wall clock, depends on the machine" in svg
    assert "speed measured on the machine that ran the audit" in svg and "target 0.95" in svg
    assert "5,000" in svg  # plain tick labels on the log axis
    assert "queries per second from timings.json (wall clock, machine-dependent)" in timed


def _svg_of(page: str, alt: str) -> str:
    import base64

    m = re.search(rf'<img class="plot" alt="{alt}" src="data:image/svg\+xml;base64,([^"]+)"', page)
    assert m, alt
    return base64.b64decode(m.group(1)).decode()


def test_sweep_curves_are_drawn_when_present():
    rows = [r for r in bakeoff(6, 0) if r.doc_class == "invoices"]
    retrieval = StageDetail(pipeline="", stage="retrieval", name="sweep", data=[{
        "base": "pymupdf", "option": "size", "metric": "retrieval.recall@10", "alpha": 0.05,
        "points": [{"value": v, "pipeline": f"pymupdf/size={v}", "recall": r, "hit": r, "p_vs_best_holm": None}
                   for v, r in (("128", 0.5), ("256", 0.8), ("512", 0.85))],
        "best": "512", "smallest_not_worse": "256"}])
    cells = [{"label": f"efSearch={v}", "knob": "efSearch", "value": v,
              "unfiltered": {"queries": 50, "recall@10": {"value": r, "numerator": 1, "denominator": 1}}}
             for v, r in ((16, 0.8), (32, 0.9), (64, 0.97))]
    index = StageDetail(pipeline="pymupdf", stage="index", name="sweep", data={"knob": "efSearch", "cells": cells})
    page = render_html(build(rows, pipelines=["pymupdf", "unstructured"], details=[retrieval, index]))
    assert 'alt="sweep pymupdf size"' in page and 'alt="index sweep"' in page
    assert "best size = 512; smallest value not significantly worse = 256" in page
    assert '<a href="#sweeps">Sweeps</a>' in page
    plain = render_html(build(rows, pipelines=["pymupdf", "unstructured"]))
    assert 'href="#sweeps"' not in plain and 'alt="index sweep"' not in plain


def test_a_cell_without_a_value_names_every_state_of_its_items():
    """Regression: the terminal showed only the most frequent state, so two documents without a reference table and
    one whose table the parser missed read '— (no reference)'; the cell now lists them all, most frequent first."""
    from ingestaudit.report.schema import SummaryRow
    from ingestaudit.report.tables import _cell

    row = SummaryRow(pipeline="p", doc_class="born_digital", stage="tables", metric="tables.teds", label="", n_docs=0,
                     micro=None, macro=None, ci_low=None, ci_high=None, ci_method="bootstrap",
                     states={"ok": 0, "no_reference": 2, "no_prediction": 1})
    assert _cell(row).compact() == ("—", "2 no ref, 1 no pred")
    skipped = row.model_copy(update={"states": {"skipped": 3, "error": 3, "no_prediction": 1}})
    assert _cell(skipped).compact() == ("—", "3 err, 3 skip, 1 no pred")  # ties by state name


def test_the_waterfall_says_how_many_questions_errored():
    """Two of unstructured's questions errored (a bad results line): the shares are over the other 8 questions'
    evidence (missed 1, retrieved 7), and every view says that 2 questions are not in them."""
    rows = [r for r in waterfall_rows() if r.pipeline == "pymupdf" or r.item not in ("q8", "q9")]
    for q in ("q8", "q9"):
        rows += [Row(q, "invoices", "unstructured", "retrieval.outcome@10", None, state="error",
                     reason="retrieval.jsonl line 9: not JSON", label=o, kind="question") for o in OUTCOMES]
        rows.append(Row(q, "invoices", "unstructured", "retrieval.recall@10", None, state="error",
                        reason="retrieval.jsonl line 9: not JSON", kind="question"))
    rep = build(rows, pipelines=["pymupdf", "unstructured"], details=waterfall_details(), questions=10)
    lines = render_terminal_text(rep, width=120).splitlines()
    assert "  waterfall @10 · pymupdf: lost_in_parsing 30% · retrieved 70%" in lines
    assert ("  waterfall @10 · unstructured: missed_by_ranking 12% · retrieved 88% · 2 questions errored, not "
            "counted") in lines
    assert "retrieved 87.5% · 2 questions errored, not counted" in render_markdown(rep)
    assert "waterfall, unstructured: 2 questions errored, not counted" in render_html(rep)
