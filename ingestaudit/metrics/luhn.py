"""Luhn (mod 10) check of a payment-card number, used to flag CREDIT_CARD gold labels a detector may rightly skip.

Definition: ISO/IEC 7812-1, Annex B (the Luhn formula, H. P. Luhn, US patent 2,950,048, 1960). With the digits
d_1 ... d_n read from the right (d_1 = check digit), double every second digit (d_2, d_4, ...), replace a
doubled value v > 9 by v - 9 (its digit sum), and add everything:

    S = Σ_{i odd} d_i + Σ_{i even} g(2·d_i),   g(v) = v - 9 if v > 9 else v.

The number passes iff S ≡ 0 (mod 10). Example: 4111 1111 1111 1111 gives 8 + 7·2 + 8·1 = 30, so it passes;
1234-5678-1234-5678 gives 68 and is flagged. Detectors such as Presidio's credit-card recognizer validate
candidates with this checksum, so a label failing it is a gold problem, not necessarily a detector miss.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_SEPARATORS = " -"
"""Characters ignored between digit groups: space and hyphen-minus (as printed on cards and forms)."""


@dataclass(frozen=True)
class LuhnResult:
    """Outcome of :func:`luhn_check`.

    Attributes:
        valid: True iff the string is well formed and its Luhn sum S ≡ 0 (mod 10).
        digits: the digits with separators removed (``""`` when malformed).
        checksum: S mod 10 in 0..9 (0 for a pass), or ``None`` when malformed.
        reason: why the number fails (malformed or bad checksum); ``None`` when valid.
    """

    valid: bool
    digits: str
    checksum: int | None
    reason: str | None = None


def luhn_check(number: str, separators: str = DEFAULT_SEPARATORS) -> LuhnResult:
    """Luhn-check a card number written with optional separators (see the module docstring for the formula).

    Args:
        number: e.g. ``"4111 1111 1111 1111"`` or ``"1234-5678-1234-5678"``. Only ASCII digits 0-9 count as
            digits; any other character not in ``separators`` makes the string malformed (not valid).
        separators: characters removed before checking (default: space and hyphen).

    Returns:
        :class:`LuhnResult`; fewer than 2 digits is malformed (a lone check digit has nothing to check). Card
        length (12 to 19 digits for ISO/IEC 7812 numbers) is not checked here.

    Raises:
        TypeError: ``number`` is not a ``str``.
    """
    if not isinstance(number, str):
        raise TypeError(f"card number must be a str, got {type(number).__name__}")
    digits = []
    for pos, ch in enumerate(number):
        if ch in separators:
            continue
        if not ("0" <= ch <= "9"):
            return LuhnResult(False, "", None, f"character {ch!r} at position {pos} is neither a digit nor a separator")
        digits.append(ord(ch) - 48)
    if len(digits) < 2:
        return LuhnResult(False, "", None, f"{len(digits)} digit(s): at least 2 are needed")
    total = 0
    for i, d in enumerate(reversed(digits)):  # i = 0 is the check digit d_1
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    checksum = total % 10
    text = "".join(map(str, digits))
    if checksum:
        return LuhnResult(False, text, checksum, f"Luhn sum {total} is not a multiple of 10")
    return LuhnResult(True, text, 0)


def is_luhn_valid(number: str, separators: str = DEFAULT_SEPARATORS) -> bool:
    """True iff :func:`luhn_check` passes; a thin wrapper. Raises TypeError for a non-``str``."""
    return luhn_check(number, separators).valid
