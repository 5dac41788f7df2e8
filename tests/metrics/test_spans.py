"""Span matching under the exact / overlap / token policies, rates, macro/micro, label mapping, leakage."""

from __future__ import annotations

import itertools
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import precision_recall_fscore_support

from ingestaudit.metrics.leakage import (
    LeakageCounts,
    gold_values,
    negative_false_positives,
    residual_leakage,
)
from ingestaudit.metrics.spans import (
    MatchPolicy,
    Span,
    SpanCounts,
    as_span,
    iou,
    map_span_types,
    match_spans,
    score_spans,
    token_labels,
    whitespace_tokens,
)

POLICIES = ("exact", "overlap", "token")

# ---------------------------------------------------------------------------------------- acceptance case 1
# "Call Ana Lima at 555-0100"
#  0123456789012345678901234
#  C=0 ... "Ana" = [5,8), "Lima" = [9,13), "555-0100" = [17,25)
TEXT1 = "Call Ana Lima at 555-0100"
GOLD1 = [(5, 13, "PERSON"), (17, 25, "PHONE_NUMBER")]
PRED1 = [(5, 8, "PERSON"), (9, 13, "PERSON"), (17, 25, "PHONE_NUMBER")]


def test_case1_offsets_are_the_intended_words():
    assert TEXT1[5:13] == "Ana Lima" and TEXT1[5:8] == "Ana" and TEXT1[9:13] == "Lima"
    assert TEXT1[17:25] == "555-0100"


def test_case1_exact_person_is_zero_of_two_and_zero_of_one():
    person = score_spans(GOLD1, PRED1, "exact", text=TEXT1).per_type["PERSON"]
    p, r = person.precision(), person.recall()
    assert (p.value, p.numerator, p.denominator) == (0.0, 0, 2)
    assert (r.value, r.numerator, r.denominator) == (0.0, 0, 1)


def test_case1_token_person_is_perfect():
    # gold PERSON touches tokens {Ana, Lima}; predictions [5,8) and [9,13) touch {Ana}, {Lima}: tp 2, fp 0, fn 0
    person = score_spans(GOLD1, PRED1, "token", text=TEXT1).per_type["PERSON"]
    assert person == SpanCounts(2, 0, 0, "token")
    assert person.precision().value == 1.0 and person.recall().value == 1.0


@pytest.mark.parametrize("policy", POLICIES)
def test_case1_phone_is_perfect_under_every_policy(policy):
    phone = score_spans(GOLD1, PRED1, policy, text=TEXT1).per_type["PHONE_NUMBER"]
    for rate in (phone.precision(), phone.recall(), phone.f1(), phone.f2()):
        assert rate.value == 1.0 and rate.state == "ok"


def test_case1_overlap_pairs_gold_person_with_lima():
    # IoU([5,13), [9,13)) = 4 / 8 = 0.5 >= 0.5; IoU([5,13), [5,8)) = 3 / 8 = 0.375 < 0.5
    assert iou(Span(5, 13, "PERSON"), Span(9, 13, "PERSON")) == 0.5
    assert iou(Span(5, 13, "PERSON"), Span(5, 8, "PERSON")) == 0.375
    m = match_spans(GOLD1, PRED1, "overlap")
    assert m.policy.label == "overlap@0.5"
    assert m.pairs == ((0, 1, 0.5), (1, 2, 1.0))
    assert m.unmatched_gold == () and m.unmatched_pred == (0,)
    person = score_spans(GOLD1, PRED1, "overlap", text=TEXT1).per_type["PERSON"]
    assert person.precision().value == 0.5 and person.recall().value == 1.0


def test_case1_micro_macro_and_f2_overlap():
    s = score_spans(GOLD1, PRED1, "overlap@0.5", text=TEXT1)
    # micro: tp = 1 + 1, fp = 1 ([5,8)), fn = 0 -> P = 2/3, R = 1, F1 = 4/(4+0+1) = 0.8, F2 = 10/(10+0+1)
    assert s.micro == SpanCounts(2, 1, 0)
    assert s.micro.precision().value == pytest.approx(2 / 3, abs=1e-15)
    assert s.micro.f1().value == pytest.approx(0.8, abs=1e-15)
    assert s.micro.f2().value == pytest.approx(10 / 11, abs=1e-15)
    # PERSON F1 = 2/(2+0+1) = 2/3, F2 = 5/(5+0+1) = 5/6; PHONE 1 -> macro F1 = 5/6, macro F2 = 11/12
    assert s.macro("f1").value == pytest.approx(5 / 6, abs=1e-15)
    assert s.macro("f2").value == pytest.approx(11 / 12, abs=1e-15)
    assert s.macro("precision").labels == ("PERSON", "PHONE_NUMBER")
    # precision and recall must not be swapped: macro P = (1/2 + 1)/2, macro R = 1
    assert s.macro("precision").value == 0.75 and s.macro("recall").value == 1.0


# ---------------------------------------------------------------------------------------- acceptance case 2
# "Ana Lima and Bo Chen"
#  01234567890123456789
#  "Ana Lima" = [0,8), "Bo Chen" = [13,20); prediction [0,20) covers both names and "and"
TEXT2 = "Ana Lima and Bo Chen"
GOLD2 = [(0, 8, "PERSON"), (13, 20, "PERSON")]
PRED2 = [(0, 20, "PERSON")]


def test_case2_offsets():
    assert TEXT2[0:8] == "Ana Lima" and TEXT2[13:20] == "Bo Chen" and len(TEXT2) == 20


def test_case2_exact_is_zero():
    person = score_spans(GOLD2, PRED2, "exact", text=TEXT2).per_type["PERSON"]
    assert person == SpanCounts(0, 1, 2)
    assert person.precision().value == 0.0 and person.recall().value == 0.0


def test_case2_overlap_is_zero():
    # IoU = 8/20 = 0.40 and 7/20 = 0.35, both < 0.5
    assert iou(Span(0, 8, "P"), Span(0, 20, "P")) == 0.40
    assert iou(Span(13, 20, "P"), Span(0, 20, "P")) == 0.35
    person = score_spans(GOLD2, PRED2, "overlap", text=TEXT2).per_type["PERSON"]
    assert person == SpanCounts(0, 1, 2)
    assert person.precision().value == 0.0 and person.recall().value == 0.0


def test_case2_token_precision_08_recall_1():
    # tokens Ana(0) Lima(1) and(2) Bo(3) Chen(4); gold {0,1,3,4}; predicted {0,1,2,3,4}: tp 4, fp 1, fn 0
    assert whitespace_tokens(TEXT2) == ((0, 3), (4, 8), (9, 12), (13, 15), (16, 20))
    person = score_spans(GOLD2, PRED2, "token", text=TEXT2).per_type["PERSON"]
    assert person == SpanCounts(4, 1, 0, "token")
    assert person.precision().value == 0.8 and person.recall().value == 1.0


@pytest.mark.parametrize("policy", POLICIES)
def test_case2_no_policy_gives_perfect_precision_and_recall(policy):
    c = score_spans(GOLD2, PRED2, policy, text=TEXT2).per_type["PERSON"]
    assert not (c.precision().value == 1.0 and c.recall().value == 1.0)


# ------------------------------------------------------------------------------------------ undefined rates


def test_no_predictions_precision_is_none_with_reason():
    c = score_spans(GOLD1, [], "exact").per_type["PERSON"]
    p = c.precision()
    assert p.value is None and p.state == "no_prediction" and "no predicted" in p.reason
    assert c.recall().value == 0.0  # a genuine zero: the gold span was missed
    assert c.f1().value == 0.0  # 2·0 / (0 + 1 + 0)


def test_no_gold_recall_is_none_with_reason():
    c = score_spans([], PRED1, "overlap").per_type["PERSON"]
    r = c.recall()
    assert r.value is None and r.state == "no_reference" and "no gold" in r.reason
    assert c.precision().value == 0.0


@pytest.mark.parametrize("policy", POLICIES)
def test_nothing_at_all_is_none_everywhere(policy):
    s = score_spans([], [], policy, text="no pii here")
    assert dict(s.per_type) == {}
    for name in ("precision", "recall", "f1", "f2"):
        assert s.micro.rate(name).value is None and s.micro.rate(name).reason
        assert s.any_type.rate(name).value is None
        m = s.macro(name)
        assert m.value is None and m.state == "no_reference" and m.reason


def test_macro_leaves_undefined_types_out_and_lists_them():
    # gold has EMAIL only, predictions have URL only: EMAIL P undefined, URL R undefined
    s = score_spans([(0, 3, "EMAIL")], [(5, 8, "URL")], "exact")
    p = s.macro("precision")
    assert p.value == 0.0 and p.labels == ("URL",) and p.undefined == ("EMAIL",)
    r = s.macro("recall", types=["EMAIL"])
    assert r.value == 0.0 and r.labels == ("EMAIL",)


# ----------------------------------------------------------------------------------------- matching details


def test_overlap_maximizes_number_of_pairs_before_total_iou():
    # g0=[0,10), g1=[0,30); p0=[0,9), p1=[0,3); threshold 0.3
    # IoU(g0,p0)=9/10, IoU(g0,p1)=3/10, IoU(g1,p0)=9/30=0.3, IoU(g1,p1)=3/30=0.1 (not eligible)
    # max total IoU alone would keep only g0-p0 (0.9 > 0.6); two pairs are possible: g0-p1, g1-p0
    gold = [(0, 10, "X"), (0, 30, "X")]
    pred = [(0, 9, "X"), (0, 3, "X")]
    m = match_spans(gold, pred, "overlap@0.3")
    assert m.pairs == ((0, 1, 0.3), (1, 0, 0.3))
    assert score_spans(gold, pred, "overlap", iou_threshold=0.3).per_type["X"] == SpanCounts(2, 0, 0)


def test_overlap_requires_same_type_but_any_type_variant_ignores_it():
    gold = [(0, 4, "PERSON")]
    pred = [(0, 4, "ORGANIZATION")]
    s = score_spans(gold, pred, "overlap")
    assert s.per_type["PERSON"] == SpanCounts(0, 0, 1) and s.per_type["ORGANIZATION"] == SpanCounts(0, 1, 0)
    assert s.any_type == SpanCounts(1, 0, 0)  # caught, under the wrong type
    assert match_spans(gold, pred, "exact", type_agnostic=True).pairs == ((0, 0, 1.0),)


def test_exact_duplicates_count_once_each():
    # two identical predictions for one gold span: one tp, one fp (each prediction counted once)
    c = score_spans([(0, 3, "A")], [(0, 3, "A"), (0, 3, "A")], "exact").per_type["A"]
    assert c == SpanCounts(1, 1, 0)


def test_token_span_inside_a_token_labels_the_whole_token():
    # "john.smith@x.org" is one token; a prediction on "smith" alone still labels it
    text = "mail john.smith@x.org now"
    s = score_spans([(5, 21, "EMAIL")], [(10, 15, "EMAIL")], "token", text=text)
    assert s.per_type["EMAIL"] == SpanCounts(1, 0, 0, "token")


def test_token_policy_needs_text_and_spans_inside_it():
    with pytest.raises(ValueError, match="needs the text"):
        score_spans(GOLD1, PRED1, "token")
    with pytest.raises(ValueError, match="past the text"):
        score_spans([(0, 99, "A")], [], "exact", text="short")
    with pytest.raises(ValueError, match="token"):
        match_spans(GOLD1, PRED1, "token")


def test_scores_add_over_documents():
    a = score_spans(GOLD1, PRED1, "exact", text=TEXT1)
    b = score_spans(GOLD2, PRED2, "exact", text=TEXT2)
    total = a + b
    # PERSON: (0,2,1) + (0,1,2) = (0,3,3); PHONE: (1,0,0)
    assert total.per_type["PERSON"] == SpanCounts(0, 3, 3)
    assert total.per_type["PHONE_NUMBER"] == SpanCounts(1, 0, 0)
    assert total.micro == SpanCounts(1, 3, 3)
    with pytest.raises(ValueError):
        a + score_spans(GOLD1, PRED1, "overlap")


# ----------------------------------------------------------------------------------------- policies, spans


@pytest.mark.parametrize("label", ["exact", "token", "overlap@0.5", "overlap@0.3", "overlap@1.0"])
def test_policy_label_round_trips(label):
    assert MatchPolicy.parse(label).label == label
    assert MatchPolicy.parse(MatchPolicy.parse(label).label) == MatchPolicy.parse(label)


def test_policy_defaults_and_errors():
    assert MatchPolicy.parse("overlap") == MatchPolicy("overlap", 0.5)
    for bad in ("fuzzy", "overlap@0", "overlap@1.5", "overlap@x", "exact@0.5"):
        with pytest.raises(ValueError):
            MatchPolicy.parse(bad)
    with pytest.raises(ValueError):
        score_spans(GOLD1, PRED1, "exact", iou_threshold=0.5)
    with pytest.raises(ValueError):
        score_spans(GOLD1, PRED1, "overlap@0.3", iou_threshold=0.5)


def test_span_forms_and_validation():
    assert as_span({"start": 1, "end": 2, "type": "A"}) == Span(1, 2, "A")
    assert as_span([1, 2, "A"]) == Span(1, 2, "A")
    for bad in [(2, 2, "A"), (-1, 2, "A"), (0, 1, "")]:
        with pytest.raises(ValueError):
            Span(*bad)
    with pytest.raises(TypeError):
        Span(True, 2, "A")
    with pytest.raises(TypeError):
        as_span({"start": 0, "end": 1})


# ------------------------------------------------------------------------------------------- label mapping


def test_map_span_types_lists_unmapped_types():
    spans = [(0, 5, "GPE"), (6, 20, "STREET_ADDRESS"), (21, 25, "PERSON"), (26, 30, "TITLE"), (31, 33, "NRP")]
    res = map_span_types(
        spans,
        {"GPE": "LOCATION", "STREET_ADDRESS": "LOCATION", "NRP": None},
        target_types={"LOCATION", "PERSON"},
    )
    assert res.spans == (Span(0, 5, "LOCATION"), Span(6, 20, "LOCATION"), Span(21, 25, "PERSON"))
    assert res.unmapped_spans == (Span(26, 30, "TITLE"),)
    assert res.unmapped_types == ("TITLE",)
    assert res.excluded_types == ("NRP",)
    assert res.passed_through_types == ("PERSON",)
    # every input span is accounted for exactly once
    assert len(res.spans) + len(res.unmapped_spans) + 1 == len(spans)


def test_map_span_types_without_target_vocabulary_passes_through_and_rejects_bad_targets():
    res = map_span_types([(0, 1, "GPE"), (1, 2, "X")], {"GPE": "LOCATION"})
    assert res.spans == (Span(0, 1, "LOCATION"), Span(1, 2, "X")) and res.passed_through_types == ("X",)
    with pytest.raises(ValueError, match="not a target type"):
        map_span_types([], {"GPE": "PLACE"}, target_types={"LOCATION"})


# ----------------------------------------------------------------------------------- independent cross-checks


def _brute_force_max_pairs(gold, pred, t):
    """Largest number of one-to-one same-type pairs with IoU >= t, by trying every injection (tiny inputs)."""
    best = 0
    for k in range(min(len(gold), len(pred)), 0, -1):
        for gs in itertools.combinations(range(len(gold)), k):
            for ps in itertools.permutations(range(len(pred)), k):
                if all(
                    gold[i].type == pred[j].type and iou(gold[i], pred[j]) >= t for i, j in zip(gs, ps)
                ):
                    return k
    return best


def _naive_token_sets(text, spans):
    """Tokens by scanning characters; a token is labelled when its character set meets a span's."""
    tokens, cur = [], []
    for i, ch in enumerate(text + " "):
        if ch.isspace():
            if cur:
                tokens.append(set(cur))
            cur = []
        else:
            cur.append(i)
    out = {}
    for s in spans:
        chars = set(range(s.start, s.end))
        out.setdefault(s.type, set()).update(k for k, tok in enumerate(tokens) if tok & chars)
    return tokens, out


TYPES = ("A", "B")


@st.composite
def doc(draw, max_spans=4):
    text = draw(st.text(alphabet="ab -", min_size=1, max_size=24))
    n = len(text)

    def span():
        start = draw(st.integers(0, n - 1))
        end = draw(st.integers(start + 1, n))
        return Span(start, end, draw(st.sampled_from(TYPES)))

    gold = [span() for _ in range(draw(st.integers(0, max_spans)))]
    pred = [span() for _ in range(draw(st.integers(0, max_spans)))]
    return text, gold, pred


@settings(max_examples=150, deadline=None)
@given(doc(), st.sampled_from([0.2, 0.3, 0.5, 0.75, 1.0]))
def test_overlap_tp_equals_brute_force_maximum(d, t):
    text, gold, pred = d
    s = score_spans(gold, pred, MatchPolicy("overlap", t), text=text)
    assert s.micro.tp == _brute_force_max_pairs(gold, pred, t)
    assert s.micro.n_predicted == len(pred) and s.micro.n_gold == len(gold)


@settings(max_examples=150, deadline=None)
@given(doc(max_spans=6))
def test_token_counts_agree_with_naive_sets_and_sklearn(d):
    text, gold, pred = d
    s = score_spans(gold, pred, "token", text=text)
    tokens, g = _naive_token_sets(text, gold)
    _, p = _naive_token_sets(text, pred)
    assert {k: set(v) for k, v in token_labels(text, gold).items()} == g
    for typ in set(g) | set(p):
        gs, ps = g.get(typ, set()), p.get(typ, set())
        assert s.per_type[typ] == SpanCounts(len(gs & ps), len(ps - gs), len(gs - ps), "token")
    # sklearn, multilabel indicator over tokens: micro P/R where both are defined
    if tokens and s.micro.n_predicted and s.micro.n_gold:
        y_true = np.array([[k in g.get(t, ()) for t in TYPES] for k in range(len(tokens))], dtype=int)
        y_pred = np.array([[k in p.get(t, ()) for t in TYPES] for k in range(len(tokens))], dtype=int)
        sp, sr, sf, _ = precision_recall_fscore_support(y_true, y_pred, average="micro", beta=2, zero_division=0)
        assert s.micro.precision().value == pytest.approx(sp, abs=1e-12)
        assert s.micro.recall().value == pytest.approx(sr, abs=1e-12)
        assert s.micro.f2().value == pytest.approx(sf, abs=1e-12)


# ------------------------------------------------------------------------------------------------ properties


@settings(max_examples=150, deadline=None)
@given(doc(), st.sampled_from(POLICIES))
def test_rates_are_bounded_or_none_never_nan(d, policy):
    text, gold, pred = d
    s = score_spans(gold, pred, policy, text=text)
    for c in [*s.per_type.values(), s.micro, s.any_type]:
        for name in ("precision", "recall", "f1", "f2"):
            v = c.rate(name).value
            assert v is None or (0.0 <= v <= 1.0 and not math.isnan(v))


@settings(max_examples=150, deadline=None)
@given(doc(), st.sampled_from(POLICIES))
def test_identity_is_perfect(d, policy):
    text, gold, _ = d
    s = score_spans(gold, gold, policy, text=text)
    for c in [*s.per_type.values(), s.any_type]:
        assert c.fp == 0 and c.fn == 0
        assert c.precision().value in (1.0, None) and c.recall().value in (1.0, None)  # None: no token touched
    if gold and policy != "token":
        assert s.micro.f1().value == 1.0 and s.any_type.f2().value == 1.0


@settings(max_examples=150, deadline=None)
@given(doc(), st.sampled_from(POLICIES))
def test_swapping_gold_and_prediction_swaps_precision_and_recall(d, policy):
    text, gold, pred = d
    ab = score_spans(gold, pred, policy, text=text)
    ba = score_spans(pred, gold, policy, text=text)
    assert set(ab.per_type) == set(ba.per_type)
    for typ, c in ab.per_type.items():
        assert ba.per_type[typ] == SpanCounts(c.tp, c.fn, c.fp, c.unit)
    assert ab.micro.precision().value == ba.micro.recall().value


@settings(max_examples=150, deadline=None)
@given(doc())
def test_looser_policies_never_match_fewer(d):
    text, gold, pred = d
    exact = score_spans(gold, pred, "exact", text=text)
    o5 = score_spans(gold, pred, "overlap@0.5", text=text)
    o2 = score_spans(gold, pred, "overlap@0.2", text=text)
    assert exact.micro.tp <= o5.micro.tp <= o2.micro.tp
    for s in (exact, o5, o2):
        assert s.micro.tp <= s.any_type.tp  # ignoring types can only add pairs
        assert s.any_type.n_gold == len(gold) and s.any_type.n_predicted == len(pred)


# --------------------------------------------------------------------------------------- leakage and negatives


def test_residual_leakage_worked_example():
    ref = "Call Ana Lima at 555-0100"
    values = gold_values(ref, GOLD1)
    assert values == (("PERSON", "Ana Lima"), ("PHONE_NUMBER", "555-0100"))
    res = residual_leakage("Call <PERSON> at 555-0100", values)
    # PERSON 0/1 leaked, PHONE 1/1 leaked -> 1/2
    assert res.per_type["PERSON"] == LeakageCounts(1, 0)
    assert res.per_type["PHONE_NUMBER"] == LeakageCounts(1, 1)
    assert res.total.rate().value == 0.5 and res.leaked == (("PHONE_NUMBER", "555-0100"),)


def test_leakage_normalization_whole_word_and_dedup():
    values = [("PERSON", "Ana"), ("PERSON", "ANA"), ("CREDIT_CARD", "4111 1111 1111 1111")]
    # nfkc_casefold: "ana" and "ana" are one value; "Banana" does not leak "ana" with whole_word
    res = residual_leakage("Banana bread; card 4111-1111-1111-1111", values)
    assert res.total == LeakageCounts(2, 0)
    assert residual_leakage("BANANA", values, whole_word=False).per_type["PERSON"] == LeakageCounts(1, 1)
    # case and fullwidth digits fold away under NFKC + casefold
    assert residual_leakage("hello ＡＮＡ", values).per_type["PERSON"].n_leaked == 1
    # alnum: separators differ but digits are the same -> leaked
    alnum = residual_leakage("card 4111-1111-1111-1111", values, normalization="alnum", whole_word=False)
    assert alnum.per_type["CREDIT_CARD"] == LeakageCounts(1, 1)
    with pytest.raises(ValueError):
        residual_leakage("x", values, normalization="alnum")


def test_leakage_undefined_without_values_and_unchecked_listed():
    res = residual_leakage("anything", [("PERSON", "  ")])
    assert res.unchecked == (("PERSON", "  "),)
    r = res.total.rate()
    assert r.value is None and r.state == "no_reference" and r.reason


def test_false_positives_per_1000_tokens():
    # 4 tokens, one DATE_TIME span -> 1000 * 1 / 4 = 250; PERSON never predicted -> a real 0
    a = negative_false_positives("Meeting notes for Monday", [(18, 24, "DATE_TIME")])
    assert a.rate().value == 250.0 and a.rate("DATE_TIME").value == 250.0 and a.rate("PERSON").value == 0.0
    # add a 6-token document with two PERSON spans: totals 3 fps over 10 tokens -> 300; PERSON 2/10 -> 200
    b = negative_false_positives("the cat sat on the mat", [(0, 3, "PERSON"), (4, 7, "PERSON")])
    total = a + b
    assert total.n_tokens == 10 and total.rate().value == 300.0 and total.rate("PERSON").value == 200.0
    empty = negative_false_positives("   ", [])
    assert empty.rate().value is None and empty.rate().reason



def test_results_survive_pickling_for_process_pools():
    s = score_spans(GOLD1, PRED1, "token", text=TEXT1)
    assert pickle.loads(pickle.dumps(s)) == s
    leak = residual_leakage("Call Ana Lima", gold_values(TEXT1, GOLD1))
    assert pickle.loads(pickle.dumps(leak)) == leak
    neg = negative_false_positives("a b", [(0, 1, "X")])
    assert pickle.loads(pickle.dumps(neg)) == neg
