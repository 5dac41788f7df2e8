import pytest

from ingestaudit.report.paired import paired_tests
from ingestaudit.report.schema import MeasurementRow


def row(doc, parser, value, state="ok"):
    return MeasurementRow(item=doc, item_kind="document", doc_class="c", pipeline=parser, stage="extraction",
                          metric="extraction.cer", label="", value=value if state == "ok" else None,
                          numerator=None, denominator=None, state=state, detail={})


def test_wilcoxon_on_paired_documents_by_hand():
    # b - a differences: +0.1, +0.05, +0.2, +0.15, +0.3 (all positive, 5 pairs): W- = 0, exact two-sided p = 2/2^5
    a = [0.1, 0.2, 0.1, 0.3, 0.0]
    b = [0.2, 0.25, 0.3, 0.45, 0.3]
    rows = [row(f"d{i}", "a", x) for i, x in enumerate(a)] + [row(f"d{i}", "b", x) for i, x in enumerate(b)]
    rows.append(row("d9", "a", 0.5))  # only one parser measured it: not a pair
    rows.append(row("d9", "b", None, state="error"))
    tests = [t for t in paired_tests(rows, ["a", "b"]) if t.doc_class == "c"]
    assert len(tests) == 1
    t = tests[0]
    assert t.n_pairs == 5
    assert t.p_value == pytest.approx(2 / 32)
    assert t.statistic == 0.0
    assert t.mean_diff == pytest.approx(0.16)
    assert t.median_diff == pytest.approx(0.15)
    assert t.significant is False  # 0.0625 > 0.05: five documents cannot show it


def test_identical_parsers_have_p_one():
    rows = [row(f"d{i}", p, 0.1 * i) for i in range(4) for p in ("a", "b")]
    t = paired_tests(rows, ["a", "b"])[0]
    assert (t.p_value, t.significant, t.mean_diff) == (1.0, False, 0.0)


def test_one_parser_gives_no_tests():
    assert paired_tests([row("d1", "a", 0.1), row("d2", "a", 0.2)], ["a"]) == []


def counted(doc, parser, value, den):
    return MeasurementRow(item=doc, item_kind="document", doc_class="c", pipeline=parser, stage="extraction",
                          metric="extraction.cer", label="", value=value, numerator=value * den, denominator=den,
                          state="ok", detail={})


def test_micro_values_are_compared_by_the_bootstrap_of_the_micro_value_not_by_signs():
    # b doubles the CER of 15 long documents and zeroes 15 tiny ones: as many items better as worse (a sign test
    # sees nothing), but b's micro CER is 0.198 against a's 0.1: a is better on every resample
    dens = [1000.0] * 15 + [10.0] * 15
    rows = [counted(f"d{i:02d}", "a", 0.1, d) for i, d in enumerate(dens)]
    rows += [counted(f"d{i:02d}", "b", 0.2 if i < 15 else 0.0, d) for i, d in enumerate(dens)]
    (t,) = [t for t in paired_tests(rows, ["a", "b"]) if t.doc_class == "c"]
    assert t.method.startswith("paired bootstrap") and t.diff == pytest.approx(3000 / 15150 - 1515 / 15150)
    assert t.p_value == pytest.approx(2 / 1001) and t.significant and t.better == "a"  # two-sided: 2 / (1 + B)


def test_the_tests_run_on_the_keys_given():
    rows = [row(f"d{i}", p, 0.1 * i + (p == "b")) for i in range(8) for p in ("a", "b")]
    assert paired_tests(rows, ["a", "b"], keys=[("tables.teds", "")]) == []
    assert {t.metric for t in paired_tests(rows, ["a", "b"], keys=[("extraction.cer", "")])} == {"extraction.cer"}
