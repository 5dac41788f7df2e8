"""Single-label classification with abstention: counts, rates, macro F1, confusions, bootstrap intervals."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import f1_score, precision_recall_fscore_support

from ingestaudit.metrics import classification as cl

# The worked example of the module: five documents.
#   true  pred
#   en    en      tp(en)
#   en    es      fn(en), fp(es)
#   en    None    fn(en) (abstained: no false positive)
#   de    de      tp(de)
#   de    en      fn(de), fp(en)
PAIRS = [("en", "en"), ("en", "es"), ("en", None), ("de", "de"), ("de", "en")]


def test_worked_example_counts():
    c = cl.tally(PAIRS)
    assert c.labels == ("de", "en", "es")
    assert c.true_labels == ("de", "en")
    assert (c.n, c.correct, c.abstained) == (5, 2, 1)
    assert c.per_label["en"] == cl.LabelCounts("en", tp=1, fp=1, fn=2, abstained=1)
    assert c.per_label["de"] == cl.LabelCounts("de", tp=1, fp=0, fn=1, abstained=0)
    assert c.per_label["es"] == cl.LabelCounts("es", tp=0, fp=1, fn=0, abstained=0)


def test_worked_example_rates():
    c = cl.tally(PAIRS)
    # en: P = 1/(1+1) = 1/2, R = 1/(1+2) = 1/3, F1 = 2/(2+1+2) = 2/5 (= 2PR/(P+R) = (1/3)/(5/6) = 2/5)
    assert (cl.precision(c, "en").numerator, cl.precision(c, "en").denominator) == (1, 2)
    assert (cl.recall(c, "en").numerator, cl.recall(c, "en").denominator) == (1, 3)
    assert (cl.f1(c, "en").numerator, cl.f1(c, "en").denominator) == (2, 5)
    # de: P = 1/1, R = 1/2, F1 = 2/(2+0+1) = 2/3
    assert cl.precision(c, "de").value == 1.0
    assert cl.recall(c, "de").value == 0.5
    assert cl.f1(c, "de").value == pytest.approx(2 / 3, abs=1e-15)
    # es: predicted once, never true: P = 0/1, recall undefined, F1 = 0/(0+1+0) = 0
    assert cl.precision(c, "es").value == 0.0
    r = cl.recall(c, "es")
    assert (r.value, r.state) == (None, "no_reference")
    assert cl.f1(c, "es").value == 0.0
    # macro over the true labels {de, en}: (2/5 + 2/3) / 2 = 8/15
    m = cl.macro_f1(c)
    assert m.labels == ("de", "en")
    assert Fraction(m.value).limit_denominator(1000) == Fraction(8, 15)
    # accuracy 2/5, coverage 4/5, selective accuracy 2/4
    assert (cl.accuracy(c).numerator, cl.accuracy(c).denominator) == (2, 5)
    assert (cl.coverage(c).numerator, cl.coverage(c).denominator) == (4, 5)
    assert cl.selective_accuracy(c).value == 0.5


def test_abstention_is_a_miss_but_no_false_positive():
    with_abstention = cl.tally([("en", "en"), ("en", None)])
    assert with_abstention.per_label["en"] == cl.LabelCounts("en", 1, 0, 1, 1)
    assert cl.precision(with_abstention, "en").value == 1.0  # the abstention costs no precision
    assert cl.recall(with_abstention, "en").value == 0.5  # but it is a miss
    wrong = cl.tally([("en", "en"), ("en", "de")])
    assert cl.recall(wrong, "en").value == 0.5
    assert cl.precision(wrong, "de").value == 0.0  # a wrong label is a false positive of that label


def test_agrees_with_scikit_learn_when_abstentions_get_a_sentinel():
    c = cl.tally(PAIRS)
    y_true = [t for t, _ in PAIRS]
    y_pred = ["<abstained>" if p is None else p for _, p in PAIRS]
    labels = list(c.labels)
    p, r, f, _ = precision_recall_fscore_support(y_true, y_pred, labels=labels, zero_division=0)
    for i, lab in enumerate(labels):
        assert (cl.precision(c, lab).value or 0.0) == pytest.approx(p[i], abs=1e-12)
        assert (cl.recall(c, lab).value or 0.0) == pytest.approx(r[i], abs=1e-12)
        assert cl.f1(c, lab).value == pytest.approx(f[i], abs=1e-12)
    assert cl.macro_f1(c).value == pytest.approx(
        f1_score(y_true, y_pred, labels=list(c.true_labels), average="macro", zero_division=0), abs=1e-12)


def test_undefined_values_are_states_not_numbers():
    empty = cl.tally([])
    assert (empty.n, empty.labels) == (0, ())
    for rate in (cl.accuracy(empty), cl.coverage(empty)):
        assert (rate.value, rate.state) == (None, "no_reference")
    assert (cl.macro_f1(empty).value, cl.macro_f1(empty).state) == (None, "no_reference")
    all_abstained = cl.tally([("en", None), ("de", None)])
    sel = cl.selective_accuracy(all_abstained)
    assert (sel.value, sel.state) == (None, "no_prediction")
    p = cl.precision(all_abstained, "en")
    assert (p.value, p.state) == (None, "no_prediction")
    assert cl.f1(all_abstained, "en").value == 0.0  # labelled, never found: a real 0, 0/(0+0+1)
    assert cl.f1(all_abstained, "fr").state == "no_reference"  # on neither side


def test_top_confusions_and_table():
    pairs = [("ms", "id")] * 3 + [("bs", "hr")] * 2 + [("hr", "bs")] * 2 + [("en", None)] * 5 + [("en", "en")]
    c = cl.tally(pairs)
    top = cl.top_confusions(c, 2)
    # count desc, then (true, predicted) asc: (3, ms->id), then the tie 2 bs->hr / 2 hr->bs -> bs first
    assert top == [cl.Confusion(3, "ms", "id"), cl.Confusion(2, "bs", "hr")]
    assert cl.top_confusions(c, 1, include_abstentions=True) == [cl.Confusion(5, "en", None)]
    table = cl.confusion_table(c)
    assert table["rows"] == ["bs", "en", "hr", "ms"]
    assert table["columns"] == ["bs", "en", "hr", "id", "ms", cl.ABSTAIN_COLUMN]
    assert table["counts"] == [[0, 0, 2, 0, 0, 0], [0, 1, 0, 0, 0, 5], [2, 0, 0, 0, 0, 0], [0, 0, 0, 3, 0, 0]]
    with pytest.raises(ValueError):
        cl.top_confusions(c, -1)


def test_bad_input_is_refused():
    with pytest.raises(TypeError):
        cl.tally([(None, "en")])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        cl.tally([("en", "")])
    with pytest.raises(ValueError):
        cl.tally([(cl.ABSTAIN_COLUMN, "en")])


def test_bootstrap_is_seeded_and_perfect_classification_has_a_point_interval():
    perfect = [("en", "en")] * 10 + [("de", "de")] * 10
    iv = cl.bootstrap_f1(perfect, seed=3, n_resamples=200)
    assert iv.macro == (1.0, 1.0)
    assert iv.per_label["en"] == (1.0, 1.0)
    a = cl.bootstrap_f1(PAIRS * 4, seed=1, n_resamples=300)
    b = cl.bootstrap_f1(PAIRS * 4, seed=1, n_resamples=300)
    assert a == b
    assert a.macro[0] <= cl.macro_f1(cl.tally(PAIRS * 4)).value <= a.macro[1]
    assert cl.bootstrap_f1([("en", "en")], seed=0) is None


def test_bootstrap_matches_a_plain_loop():
    # independent recount of the same resamples with Counter, for one label and the macro value
    import numpy as np
    from collections import Counter

    pairs = PAIRS * 3
    iv = cl.bootstrap_f1(pairs, seed=7, n_resamples=50)
    draws = np.random.default_rng(7).integers(0, len(pairs), size=(50, len(pairs)))
    en, macro = [], []
    for row in draws:
        sample = [pairs[i] for i in row]
        tp, true, pred = Counter(), Counter(), Counter()
        for t, p in sample:
            true[t] += 1
            if p is not None:
                pred[p] += 1
            tp[t] += t == p
        f = {lab: (2 * tp[lab] / (true[lab] + pred[lab]) if true[lab] + pred[lab] else 0.0) for lab in ("de", "en")}
        en.append(f["en"])
        macro.append((f["de"] + f["en"]) / 2)
    assert iv.per_label["en"] == pytest.approx(tuple(np.quantile(en, [0.025, 0.975])), abs=1e-12)
    assert iv.macro == pytest.approx(tuple(np.quantile(macro, [0.025, 0.975])), abs=1e-12)


labels = st.sampled_from(["en", "de", "fr", "es"])
pairs_st = st.lists(st.tuples(labels, st.one_of(st.none(), labels)), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(pairs_st)
def test_properties(pairs):
    c = cl.tally(pairs)
    assert sum(sum(r.values()) for r in c.confusion.values()) == c.n
    assert sum(lc.tp for lc in c.per_label.values()) == c.correct
    for lab in c.labels:
        for rate in (cl.precision(c, lab), cl.recall(c, lab), cl.f1(c, lab)):
            assert rate.value is None or 0.0 <= rate.value <= 1.0
        lc = c.per_label[lab]
        p, r = cl.precision(c, lab).value, cl.recall(c, lab).value
        if p is not None and r is not None and p + r > 0:  # F1 on counts = harmonic mean of P and R
            assert cl.f1(c, lab).value == pytest.approx(2 * p * r / (p + r), abs=1e-12)
        assert lc.abstained <= lc.fn
    assert 0.0 <= cl.macro_f1(c).value <= 1.0
    assert cl.accuracy(c).value <= cl.coverage(c).value
    # order of documents does not matter
    assert cl.tally(list(reversed(pairs))) == c


@settings(max_examples=100, deadline=None)
@given(st.lists(labels, min_size=1, max_size=30))
def test_identity_is_perfect(truth):
    c = cl.tally([(t, t) for t in truth])
    assert cl.macro_f1(c).value == 1.0
    assert cl.accuracy(c).value == 1.0 and cl.coverage(c).value == 1.0
    assert all(cl.f1(c, lab).value == 1.0 for lab in c.labels)
