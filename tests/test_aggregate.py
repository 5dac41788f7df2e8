import pytest

from ingestaudit.report.aggregate import summarize, summarize_group
from ingestaudit.report.schema import MeasurementRow


def row(doc, value, num, den, state="ok", cls="c", parser="p", metric="extraction.cer"):
    return MeasurementRow(item=doc, item_kind="document", doc_class=cls, pipeline=parser,
                          stage=metric.split(".")[0], metric=metric, label="", value=value, numerator=num,
                          denominator=den, state=state, detail={})


def test_micro_and_macro_of_two_documents():
    # CER 10/100 and 30/200: micro = 40/300 = 0.1333, macro = (0.10 + 0.15) / 2 = 0.125
    s = summarize_group([row("a", 0.1, 10, 100), row("b", 0.15, 30, 200)], pipeline="p", doc_class="c", seed=0)
    assert s.micro == pytest.approx(40 / 300)
    assert s.macro == pytest.approx(0.125)
    assert s.n_docs == 2


def test_micro_and_macro_wer_differ_and_are_labelled():
    # references "a b c d e f g h i j" (10 words, output identical) and "x" (1 word, output "y"):
    # micro WER = (0 + 1) / (10 + 1) = 0.0909, macro = (0 + 1) / 2 = 0.5
    rows = [row("a", 0.0, 0, 10, metric="extraction.wer"), row("b", 1.0, 1, 1, metric="extraction.wer")]
    s = summarize_group(rows, pipeline="p", doc_class="c", seed=0)
    assert s.micro == pytest.approx(1 / 11)
    assert s.macro == pytest.approx(0.5)


def test_only_ok_rows_are_aggregated_and_all_states_are_counted():
    rows = [row("a", 0.1, 10, 100), row("b", None, None, None, state="error"),
            row("c", None, None, None, state="no_reference")]
    s = summarize_group(rows, pipeline="p", doc_class="c", seed=0)
    assert s.micro == pytest.approx(0.1)
    assert s.n_docs == 1
    assert s.states == {"ok": 1, "no_reference": 1, "no_prediction": 0, "error": 1, "skipped": 0}
    assert s.ci_low is None and s.ci_method == "none (too few documents)"


def test_no_ok_rows_gives_no_value_not_zero():
    s = summarize_group([row("a", None, None, None, state="error")], pipeline="p", doc_class="c", seed=0)
    assert (s.micro, s.macro, s.ci_low, s.ci_high) == (None, None, None, None)
    assert s.states["error"] == 1


def test_summary_is_stratified_per_class_and_overall_in_parser_order():
    rows = [row("x/1", 0.1, 1, 10, cls="x", parser="b"), row("y/1", 0.2, 2, 10, cls="y", parser="b"),
            row("x/1", 0.3, 3, 10, cls="x", parser="a")]
    out = summarize(rows, ["b", "a"], seed=0)
    assert [(s.pipeline, s.doc_class) for s in out] == [("b", "x"), ("b", "y"), ("b", "__all__"),
                                                      ("a", "x"), ("a", "__all__")]
    overall_b = out[2]
    assert overall_b.micro == pytest.approx(3 / 20)


def test_wilson_is_used_for_count_proportions():
    rows = [row("a", 0.5, 5, 10, metric="extraction.checks_pass"),
            row("b", None, None, None, state="no_reference", metric="extraction.checks_pass")]
    s = summarize_group(rows, pipeline="p", doc_class="c", seed=0)
    assert s.ci_method.startswith("wilson")
    assert s.ci_low == pytest.approx(0.237, abs=5e-4) and s.ci_high == pytest.approx(0.763, abs=5e-4)


def test_identical_data_in_two_pipelines_gives_identical_bootstrap_intervals():
    # CER 0/100, 10/100, 30/100, 60/100 in both pipelines: micro 100/400 = 0.25 in each; the percentile bootstrap
    # used to be seeded with the pipeline's name too, so the two intervals differed for the same numbers
    rows = [row(f"c/d{i}", e / 100, e, 100.0, parser=p)
            for i, e in enumerate((0.0, 10.0, 30.0, 60.0)) for p in ("alpha", "a-much-longer-name")]
    by = {(s.pipeline, s.doc_class): s for s in summarize(rows, ["alpha", "a-much-longer-name"], seed=3)}
    a, b = by["alpha", "c"], by["a-much-longer-name", "c"]
    assert a.micro == b.micro == 0.25 and a.ci_method.startswith("bootstrap")
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high) and a.ci_low < 0.25 < a.ci_high
    # the seed option still moves them: another run seed draws other resamples
    other = {(s.pipeline, s.doc_class): s for s in summarize(rows, ["alpha", "a-much-longer-name"], seed=4)}
    assert (other["alpha", "c"].ci_low, other["alpha", "c"].ci_high) == (other["a-much-longer-name", "c"].ci_low,
                                                                         other["a-much-longer-name", "c"].ci_high)
