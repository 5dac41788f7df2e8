"""Luhn check of card numbers (ISO/IEC 7812-1 Annex B): hand-worked values, properties, real labels."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestaudit.metrics.luhn import is_luhn_valid, luhn_check


def _check_digit(payload: str) -> str:
    """The digit that makes payload + digit pass, computed independently of luhn_check (weights from the left)."""
    total = 0
    # with the check digit appended, payload digit k (from the right, 0-based) is doubled iff k is even
    for k, ch in enumerate(reversed(payload)):
        d = int(ch)
        if k % 2 == 0:
            d = sum(divmod(2 * d, 10))  # digit sum of 2d
        total += d
    return str((10 - total % 10) % 10)


@pytest.mark.parametrize(
    "number, luhn_sum",
    [
        # 4111111111111111: doubled (2nd, 4th, ... from the right): seven 1s -> 14 and the leading 4 -> 8;
        # undoubled: eight 1s -> 8; S = 30
        ("4111111111111111", 30),
        # 2221000000000009: undoubled 9 + 2 + 1 = 12; doubled 2 -> 4, 2 -> 4; S = 20
        ("2221000000000009", 20),
        # 6011577631711174, from the right: undoubled 4,1,1,1,6,7,1,0 -> 21;
        # doubled 7,1,7,3,7,5,1,6 -> 5,2,5,6,5,1,2,3 -> 29; S = 50
        ("6011577631711174", 50),
    ],
)
def test_published_test_numbers_pass(number, luhn_sum):
    res = luhn_check(number)
    assert res.valid and res.checksum == 0 and res.reason is None and res.digits == number
    assert luhn_sum % 10 == 0
    assert is_luhn_valid(number)


def test_sequential_number_with_hyphens_is_flagged():
    # 1234567812345678, from the right: undoubled 8,6,4,2 twice -> 40; doubled 7,5,3,1 -> 5,1,6,2 = 14, twice -> 28
    # S = 68, 68 mod 10 = 8
    res = luhn_check("1234-5678-1234-5678")
    assert not res.valid
    assert res.digits == "1234567812345678" and res.checksum == 8 and "68" in res.reason
    assert not is_luhn_valid("1234-5678-1234-5678")


def test_separators_and_malformed_input():
    assert is_luhn_valid("4111 1111 1111 1111") and is_luhn_valid("4111-1111-1111-1111")
    assert not is_luhn_valid("4111.1111.1111.1111")  # '.' is not a default separator
    assert is_luhn_valid("4111.1111.1111.1111", separators=".")
    bad = luhn_check("4111 1111 1111 111x")
    assert not bad.valid and bad.checksum is None and "'x'" in bad.reason and "18" in bad.reason
    assert not luhn_check("7").valid and "at least 2" in luhn_check("7").reason
    assert not luhn_check("").valid
    assert not is_luhn_valid("４１１１１１１１１１１１１１１１")  # fullwidth digits are not ASCII digits
    with pytest.raises(TypeError):
        luhn_check(4111111111111111)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789", min_size=1, max_size=18))
def test_appending_the_check_digit_passes(payload):
    assert is_luhn_valid(payload + _check_digit(payload))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789", min_size=1, max_size=18), st.data())
def test_every_single_digit_error_is_detected(payload, data):
    number = payload + _check_digit(payload)
    pos = data.draw(st.integers(0, len(number) - 1))
    new = data.draw(st.sampled_from([d for d in "0123456789" if d != number[pos]]))
    assert not is_luhn_valid(number[:pos] + new + number[pos + 1 :])


def test_presidio_synth_credit_cards_all_pass(shared_data):
    # presidio-research generates CREDIT_CARD values with Faker's credit_card_number, which appends a Luhn
    # check digit; all 97 CREDIT_CARD labels of the first 1,000 records must pass, and each flips to a failure
    # when its check digit is changed.
    records = json.loads((shared_data / "presidio-synth" / "synth_dataset_v2.first1000.json").read_text("utf-8"))
    cards = [s["entity_value"] for r in records for s in r["spans"] if s["entity_type"] == "CREDIT_CARD"]
    assert len(cards) == 97
    assert [c for c in cards if not is_luhn_valid(c)] == []
    flipped = [c[:-1] + str((int(c[-1]) + 1) % 10) for c in cards]
    assert not any(is_luhn_valid(c) for c in flipped)
