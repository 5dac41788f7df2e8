"""Entity schemes (SemEval-2013 task 9.1): a hand-worked sentence, nervaluate 1.2.1 and seqeval as references."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nervaluate import Evaluator
from seqeval.metrics import f1_score
from seqeval.scheme import IOB2

from ingestaudit.metrics.entities import SCHEMES, SchemeCounts, classify, empty_scores, evaluate
from ingestaudit.metrics.spans import Span

TEXT = "John Smith met Mary Jones of Acme Corp in Paris on 3 May 2023 at Google."
TYPES = ("PER", "ORG", "LOC", "DATE")
TRUTH = [Span(0, 10, "PER"), Span(15, 25, "PER"), Span(29, 38, "ORG"), Span(42, 47, "LOC"),
         Span(51, 61, "DATE"), Span(65, 71, "ORG")]
# spaCy-style labels, renamed through MAPPING: one of each category.
PRED = [Span(0, 10, "PERSON"),   # John Smith: correct
        Span(15, 25, "ORG"),     # Mary Jones: right boundaries, wrong type
        Span(29, 33, "ORG"),     # Acme (of Acme Corp): partial boundary, right type
        Span(53, 61, "GPE"),     # May 2023 (of 3 May 2023): partial boundary, wrong type
        Span(11, 14, "PERSON"),  # met: spurious
        Span(65, 71, "PRODUCT")]  # Google: a type outside the mapping and the truth -> unmapped; Paris, Google missed
MAPPING = {"PERSON": "PER", "GPE": "LOC"}

# (COR, INC, PAR, MIS, SPU), worked by hand from the comments above.
HAND = {
    "strict": (1, 3, 0, 2, 1),    # only John Smith is exact in bounds and type; three overlap a truth span
    "exact": (2, 2, 0, 2, 1),     # John Smith and Mary Jones have exact bounds
    "partial": (2, 0, 2, 2, 1),   # Acme and May 2023 overlap with other bounds: half credit
    "ent_type": (2, 2, 0, 2, 1),  # John Smith and Acme overlap with the right type
}
# (precision, recall): POS = 6 truth spans, ACT = 5 mapped predictions (PRODUCT is counted apart).
HAND_RATES = {"strict": (1 / 5, 1 / 6), "exact": (2 / 5, 2 / 6), "partial": (3 / 5, 3 / 6), "ent_type": (2 / 5, 2 / 6)}


def _nervaluate(truth_docs, pred_docs, tags):
    """nervaluate on [start, end) spans: its Entity ends are inclusive, so end - 1."""
    def conv(docs):
        return [[{"label": s.type, "start": s.start, "end": s.end - 1} for s in sorted(doc)] for doc in docs]
    return Evaluator(conv(truth_docs), conv(pred_docs), tags=list(tags), loader="dict").evaluate()


def _mapped(pred):
    return [Span(s.start, s.end, MAPPING.get(s.type, s.type)) for s in pred]


def test_hand_worked_counts_and_rates():
    scores = evaluate(TRUTH, PRED, types=TYPES, mapping=MAPPING)
    for scheme in SCHEMES:
        c = scores.micro[scheme]
        assert (c.correct, c.incorrect, c.partial, c.missed, c.spurious) == HAND[scheme], scheme
        assert (c.possible, c.actual) == (6, 5)
        p, r = HAND_RATES[scheme]
        assert c.precision().value == pytest.approx(p, abs=1e-15)
        assert c.recall().value == pytest.approx(r, abs=1e-15)
        assert c.f1().value == pytest.approx(2 * p * r / (p + r), abs=1e-15)
    assert scores.unmapped == {"PRODUCT": 1}
    # per type PER under strict: John Smith COR; Mary Jones (truth PER) MIS since its prediction is ORG; met SPU
    per = scores.per_type["strict"]["PER"]
    assert (per.correct, per.incorrect, per.partial, per.missed, per.spurious) == (1, 0, 0, 1, 1)
    # ORG under partial: Mary Jones (pred ORG) overlaps no ORG truth -> SPU; Acme PAR of Acme Corp; Google MIS
    org = scores.per_type["partial"]["ORG"]
    assert (org.correct, org.incorrect, org.partial, org.missed, org.spurious) == (0, 0, 1, 1, 1)
    assert org.precision().value == pytest.approx(0.25) and org.recall().value == pytest.approx(0.25)


def test_hand_worked_equals_nervaluate():
    scores = evaluate(TRUTH, PRED, types=TYPES, mapping=MAPPING)
    ref = _nervaluate([TRUTH], [_mapped(PRED)], TYPES)
    for scheme in SCHEMES:
        _assert_same(scores.micro[scheme], ref["overall"][scheme])
        for t in TYPES:
            _assert_same(scores.per_type[scheme][t], ref["entities"][t][scheme])
    assert scores.types == tuple(sorted(ref["entities"]))


def _assert_same(mine: SchemeCounts, theirs) -> None:
    assert (mine.correct, mine.incorrect, mine.partial, mine.missed, mine.spurious) == (
        theirs.correct, theirs.incorrect, theirs.partial, theirs.missed, theirs.spurious)
    assert (mine.possible, mine.actual) == (theirs.possible, theirs.actual)
    for name in ("precision", "recall", "f1"):
        value = mine.rate(name).value
        assert (0.0 if value is None else value) == pytest.approx(getattr(theirs, name), abs=1e-12), name


def _iob2(tokens: list[tuple[int, int]], spans: list[Span]) -> list[str]:
    tags = ["O"] * len(tokens)
    for s in spans:
        inside = [i for i, (a, b) in enumerate(tokens) if a >= s.start and b <= s.end]
        for k, i in enumerate(inside):
            tags[i] = ("B-" if k == 0 else "I-") + s.type
    return tags


def test_strict_f1_equals_seqeval_iob2_strict():
    tokens = [m.span() for m in re.finditer(r"\w+|[^\w\s]", TEXT)]
    second = "Acme Corp hired Jane Doe in Berlin ."
    tokens2 = [m.span() for m in re.finditer(r"\S+", second)]
    truth2, pred2 = [Span(0, 9, "ORG"), Span(16, 24, "PER"), Span(28, 34, "LOC")], [Span(0, 9, "ORG"),
                                                                                    Span(21, 24, "PER")]
    mapped = [s for s in _mapped(PRED) if s.type in TYPES]
    total = evaluate(TRUTH, PRED, types=TYPES, mapping=MAPPING) + evaluate(truth2, pred2, types=TYPES)
    ref = f1_score([_iob2(tokens, TRUTH), _iob2(tokens2, truth2)], [_iob2(tokens, mapped), _iob2(tokens2, pred2)],
                   mode="strict", scheme=IOB2)
    assert total.micro["strict"].f1().value == pytest.approx(ref, abs=1e-12)
    assert total.micro["strict"].f1().value == pytest.approx(2 * 2 / (7 + 9), abs=1e-15)  # COR 2, ACT 7, POS 9


@st.composite
def _documents(draw):
    """Token-aligned documents of 1-char tokens: non-overlapping spans on each side, types from a small set."""
    n = draw(st.integers(1, 12))

    def side():
        spans, i = [], 0
        while i < n:
            if draw(st.booleans()):
                end = draw(st.integers(i + 1, min(n, i + 3)))
                spans.append(Span(i, end, draw(st.sampled_from(("A", "B", "C")))))
                i = end
            else:
                i += 1
        return spans
    return n, side(), side()


@settings(max_examples=200, deadline=None)
@given(st.lists(_documents(), min_size=1, max_size=4))
def test_random_documents_equal_nervaluate_and_seqeval(docs):
    total = empty_scores()
    for _, truth, pred in docs:
        total = total + evaluate(truth, pred, types=("A", "B", "C"))
    ref = _nervaluate([d[1] for d in docs], [d[2] for d in docs], ("A", "B", "C"))
    for scheme in SCHEMES:
        _assert_same(total.micro[scheme], ref["overall"][scheme])
        for t in ref["entities"]:
            _assert_same(total.per_type[scheme][t], ref["entities"][t][scheme])
    tokens = [[(i, i + 1) for i in range(n)] for n, _, _ in docs]
    if any(d[1] or d[2] for d in docs):
        ref_f1 = f1_score([_iob2(tk, d[1]) for tk, d in zip(tokens, docs)],
                          [_iob2(tk, d[2]) for tk, d in zip(tokens, docs)], mode="strict", scheme=IOB2)
        assert total.micro["strict"].f1().value == pytest.approx(ref_f1, abs=1e-12)


def test_macro_is_mean_over_defined_types():
    scores = evaluate(TRUTH, PRED, types=TYPES, mapping=MAPPING)
    # strict recall per type: PER 1/2, ORG 0/2, LOC 0/1, DATE 0/1 -> mean 1/8
    assert scores.macro("strict", "recall").value == pytest.approx(1 / 8)
    # strict precision: PER 1/2 (John Smith, met), ORG 0/2, LOC 0/1, DATE undefined (no DATE predicted) -> 1/6
    assert scores.macro("strict", "precision").value == pytest.approx(1 / 6)


def test_excluded_mapping_and_bad_truth_type():
    scores = evaluate(TRUTH, [Span(0, 10, "NORP")], types=TYPES, mapping={"NORP": None})
    assert scores.excluded == {"NORP": 1} and scores.micro["strict"].actual == 0
    assert scores.micro["strict"].precision().value is None
    with pytest.raises(ValueError, match=r"\[0, 4\) has type 'XYZ'"):
        evaluate([Span(0, 4, "XYZ")], [], types=TYPES)
    with pytest.raises(ValueError, match="unknown scheme"):
        classify([], [], "lenient")
