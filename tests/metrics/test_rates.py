"""The shared `Rate` result (`ingestaudit.metrics.rates`) and its constructor `Rate.of`."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingestaudit.measurement import State
from ingestaudit.metrics import classification, dedup, spans
from ingestaudit.metrics.rates import Rate


def test_a_defined_rate_keeps_its_terms_as_given():
    r = Rate.of(1, 4, if_zero="no_reference", reason="unused", name="recall")  # 1/4 = 0.25
    assert r == Rate(value=0.25, numerator=1, denominator=4, state="ok", reason=None, name="recall")
    assert type(r.numerator) is int and type(r.denominator) is int


def test_a_zero_denominator_gives_none_in_the_state_asked_for():
    r = Rate.of(0, 0, if_zero="no_prediction", reason="nothing predicted")
    assert (r.value, r.state, r.reason, r.numerator, r.denominator) == (None, "no_prediction", "nothing predicted", 0, 0)
    assert Rate.of(3, 0, if_zero="no_reference", reason="x").value is None  # 3/0 is undefined too, never inf


def test_float_terms_and_enum_states():
    # ARI-style exact terms: (1/3) / (2/3) = 1/2 exactly; the terms are stored as floats
    r = Rate.of(Fraction(1, 3), Fraction(2, 3), if_zero=State.NO_REFERENCE, reason="x", ok=State.OK, as_float=True)
    assert r.value == 0.5 and r.numerator == 1 / 3 and r.denominator == 2 / 3 and r.state is State.OK
    z = Rate.of(0, 0, if_zero=State.NO_REFERENCE, reason="none", ok=State.OK, as_float=True)
    assert z.state is State.NO_REFERENCE and type(z.numerator) is float


def test_a_big_int_over_a_float_is_divided_exactly():
    # (2**53 + 1) / 3 = 9007199254740993 / 3 = 3002399751580331 exactly. Converting the int to a float first would
    # give 2**53 / 3 = 3002399751580330.67, rounded to 3002399751580330.5 (float spacing 0.5 there).
    r = Rate.of(2**53 + 1, 3.0, if_zero="no_reference", reason="x")
    assert r.value == 3002399751580331.0


def test_construction_is_keyword_only():
    with pytest.raises(TypeError):
        Rate(0.5, 1, 2)  # type: ignore[misc]  # two historical field orders: positional use is refused


def test_the_metric_modules_reexport_the_one_rate():
    assert spans.Rate is classification.Rate is dedup.Rate is Rate


@given(st.integers(0, 10**30), st.integers(1, 10**30))
def test_int_rates_are_the_correctly_rounded_quotient(num, den):
    r = Rate.of(num, den, if_zero="no_reference", reason="x")
    assert r.value == float(Fraction(num, den)) == num / den


@given(st.floats(0, 1e12), st.floats(1e-9, 1e12))
def test_float_rates_are_the_correctly_rounded_quotient(num, den):
    assert Rate.of(num, den, if_zero="no_reference", reason="x").value == float(Fraction(num) / Fraction(den))


@given(st.integers(0, 10**6), st.integers(0, 10**6))
def test_value_is_none_exactly_when_the_denominator_is_zero(num, den):
    r = Rate.of(num, den, if_zero="no_reference", reason="x")
    assert (r.value is None) == (den == 0) == (r.state != "ok") == (r.reason is not None)
