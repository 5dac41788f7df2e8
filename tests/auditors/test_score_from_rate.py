"""`score_from_rate`: one `Rate` -> one report row, shared by the PII, dedup and language auditors."""

from __future__ import annotations

from ingestaudit.auditors.rates import score_from_rate
from ingestaudit.measurement import Score, State
from ingestaudit.metrics.rates import Rate


def test_a_defined_rate_is_an_ok_row_with_its_terms():
    r = Rate.of(3, 4, if_zero="no_reference", reason="x", name="recall")  # 3/4
    detail = {"tp": 3}
    s = score_from_rate("pii.recall", r, label="exact", detail=detail)
    assert s == Score("pii.recall", 0.75, 3, 4, State.OK, "exact", {"tp": 3})
    assert s.detail is detail  # the caller's detail, not a copy


def test_an_undefined_rate_keeps_its_own_state_terms_and_reason():
    r = Rate.of(0, 0, if_zero="no_prediction", reason="nothing predicted")
    s = score_from_rate("pii.precision", r, detail={"tp": 0})
    assert s == Score("pii.precision", None, 0, 0, State.NO_PREDICTION, "", {"tp": 0, "reason": "nothing predicted"})
    enum = Rate.of(0, 0, if_zero=State.NO_REFERENCE, reason="no gold", ok=State.OK, as_float=True)
    assert score_from_rate("dedup.ari", enum).state is State.NO_REFERENCE


def test_a_rate_without_a_reason_says_undefined():
    r = Rate(value=None, numerator=0, denominator=0, state="skipped")
    assert score_from_rate("dedup.chained_pairs", r).detail == {"reason": "undefined"}
