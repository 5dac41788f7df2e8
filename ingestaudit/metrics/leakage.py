"""Scrubber exposure on the output side: residual PII leakage, and false alarms on documents without PII.

Residual leakage (on a scrubbed text, i.e. what would be indexed):

    leakage = |{v ∈ V : norm(v) occurs in norm(scrubbed)}| / |V|

where V is the set of distinct ``(type, norm(value))`` pairs of the gold PII values of the document (a value
labelled twice counts once: a verbatim search cannot tell its occurrences apart), and ``norm`` is a named
normalization preset (:data:`NORMALIZATIONS`). Values that normalize to the empty string cannot be searched
and are listed as ``unchecked``, outside the denominator. With ``whole_word`` (default) an occurrence counts
only when it is not glued to a letter or digit on a side where the value itself starts/ends with one (so
"Ana" does not leak through "Banana").

False positives on negative documents (documents labelled as holding no PII):

    fp_per_1k = 1000 · (number of predicted spans) / (number of tokens)

tokens as in the ``token`` matching policy (maximal runs of non-whitespace characters); every predicted span
on such a document is a false positive. Counts add over documents (sum, then divide).
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ingestaudit.metrics.spans import Rate, as_spans, whitespace_tokens

_WS = re.compile(r"\s+")


def _nfkc_casefold(text: str) -> str:
    return _WS.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def _alnum(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).casefold() if ch.isalnum())


NORMALIZATIONS: Mapping[str, Callable[[str], str]] = MappingProxyType(
    {
        "none": lambda text: text,
        "nfkc_casefold": _nfkc_casefold,
        "alnum": _alnum,
    }
)
"""Named normalization presets applied to both the values and the scrubbed text before the search:

``none``: unchanged (verbatim). ``nfkc_casefold`` (default): Unicode NFKC, ``str.casefold``, every whitespace run
to one space, stripped. ``alnum``: NFKC, casefold, then only letters and digits kept (``str.isalnum``), so
"4111 1111-1111 1111" matches "4111111111111111"; it also matches across word boundaries, hence
``whole_word`` must be off with it.
"""

DEFAULT_NORMALIZATION = "nfkc_casefold"


@dataclass(frozen=True)
class LeakageCounts:
    """Residual-leakage counts of one entity type (or of all types).

    Attributes:
        n_checked: distinct normalized gold values searched (the denominator), >= 0.
        n_leaked: of those, values found in the normalized scrubbed text, 0..n_checked.
    """

    n_checked: int = 0
    n_leaked: int = 0

    def __post_init__(self) -> None:
        if not (0 <= self.n_leaked <= self.n_checked):
            raise ValueError(f"need 0 <= n_leaked <= n_checked, got {self.n_leaked}, {self.n_checked}")

    def __add__(self, other: LeakageCounts) -> LeakageCounts:
        if not isinstance(other, LeakageCounts):
            return NotImplemented
        return LeakageCounts(self.n_checked + other.n_checked, self.n_leaked + other.n_leaked)

    def rate(self) -> Rate:
        """Leakage = n_leaked / n_checked in [0, 1]; ``None`` (state ``no_reference``) when nothing was checked (then
        n_leaked = 0 too)."""
        return Rate.of(self.n_leaked, self.n_checked, if_zero="no_reference", reason="no gold PII value to search for",
                       name="leakage")


@dataclass(frozen=True)
class LeakageResult:
    """Residual leakage of one scrubbed text.

    Attributes:
        normalization: preset name used (print it next to the number).
        whole_word: whether occurrences glued to letters/digits were ignored.
        per_type: ``{type: LeakageCounts}`` (read-only, sorted by type).
        leaked: ``(type, original value)`` of each leaked distinct value, in input order.
        unchecked: ``(type, original value)`` of values empty after normalization, in input order.
    """

    normalization: str
    whole_word: bool
    per_type: Mapping[str, LeakageCounts]
    leaked: tuple[tuple[str, str], ...]
    unchecked: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "per_type", MappingProxyType(dict(sorted(self.per_type.items()))))

    def __reduce__(self) -> tuple[Any, ...]:  # mappingproxy cannot be pickled; rebuild (process pools pickle results)
        return (type(self), (self.normalization, self.whole_word, dict(self.per_type), self.leaked, self.unchecked))

    @property
    def total(self) -> LeakageCounts:
        """Counts summed over types."""
        out = LeakageCounts()
        for c in self.per_type.values():
            out = out + c
        return out


def gold_values(text: str, spans: Iterable[Any]) -> tuple[tuple[str, str], ...]:
    """``(type, text[start:end])`` for each gold span on the reference ``text``, in input order.

    Raises:
        ValueError: a span ends past the text; the errors of ``as_span``.
    """
    return tuple((s.type, text[s.start : s.end]) for s in as_spans(spans, text))


def _occurs(needle: str, hay: str, whole_word: bool) -> bool:
    if not whole_word:
        return needle in hay
    check_left, check_right = needle[0].isalnum(), needle[-1].isalnum()
    pos = hay.find(needle)
    while pos >= 0:
        end = pos + len(needle)
        left_ok = not check_left or pos == 0 or not hay[pos - 1].isalnum()
        right_ok = not check_right or end == len(hay) or not hay[end].isalnum()
        if left_ok and right_ok:
            return True
        pos = hay.find(needle, pos + 1)
    return False


def residual_leakage(
    scrubbed: str,
    values: Iterable[tuple[str, str]],
    *,
    normalization: str = DEFAULT_NORMALIZATION,
    whole_word: bool = True,
) -> LeakageResult:
    """Share of gold PII values still present in a scrubbed text (see the module docstring for the formula).

    Args:
        scrubbed: the scrubber's output text (what would be indexed).
        values: ``(type, value)`` pairs, e.g. from :func:`gold_values` on the reference text.
        normalization: a key of :data:`NORMALIZATIONS`.
        whole_word: ignore occurrences glued to a letter or digit (see the module docstring).

    Returns:
        :class:`LeakageResult`. Example: values PERSON "Ana Lima", PHONE_NUMBER "555-0100" and scrubbed text
        "Call <PERSON> at 555-0100": PERSON 0/1, PHONE_NUMBER 1/1, total 1/2.

    Raises:
        ValueError: unknown normalization, or ``whole_word`` with ``alnum``.
    """
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"unknown normalization {normalization!r}; choose one of {', '.join(NORMALIZATIONS)}")
    if whole_word and normalization == "alnum":
        raise ValueError("whole_word has no meaning after 'alnum' normalization (no separators left)")
    norm = NORMALIZATIONS[normalization]
    hay = norm(scrubbed)
    seen: set[tuple[str, str]] = set()
    checked: dict[str, int] = defaultdict(int)
    leaked_n: dict[str, int] = defaultdict(int)
    leaked: list[tuple[str, str]] = []
    unchecked: list[tuple[str, str]] = []
    for typ, value in values:
        needle = norm(value)
        if not needle:
            unchecked.append((typ, value))
            continue
        if (typ, needle) in seen:
            continue
        seen.add((typ, needle))
        checked[typ] += 1
        if _occurs(needle, hay, whole_word):
            leaked_n[typ] += 1
            leaked.append((typ, value))
    per_type = {t: LeakageCounts(checked[t], leaked_n[t]) for t in checked}
    return LeakageResult(normalization, whole_word, per_type, tuple(leaked), tuple(unchecked))


@dataclass(frozen=True)
class NegativeDocCounts:
    """False positives on documents labelled as holding no PII, with the token count for the rate.

    Attributes:
        n_tokens: whitespace tokens of the document(s), >= 0.
        false_positives: ``{type: number of predicted spans}`` (read-only, sorted).
    """

    n_tokens: int = 0
    false_positives: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.n_tokens < 0 or any(v < 0 for v in self.false_positives.values()):
            raise ValueError("counts must be >= 0")
        object.__setattr__(self, "false_positives", MappingProxyType(dict(sorted(self.false_positives.items()))))

    def __reduce__(self) -> tuple[Any, ...]:  # mappingproxy cannot be pickled; rebuild (process pools pickle results)
        return (type(self), (self.n_tokens, dict(self.false_positives)))

    def __add__(self, other: NegativeDocCounts) -> NegativeDocCounts:
        if not isinstance(other, NegativeDocCounts):
            return NotImplemented
        merged = dict(self.false_positives)
        for t, n in other.false_positives.items():
            merged[t] = merged.get(t, 0) + n
        return NegativeDocCounts(self.n_tokens + other.n_tokens, merged)

    def rate(self, entity_type: str | None = None) -> Rate:
        """False positives per 1,000 tokens, 1000 · fp / n_tokens, >= 0 (unbounded above).

        ``entity_type=None`` counts every type; a type never predicted has rate 0 (there were tokens to flag).
        ``None`` (state ``no_reference``) when there are no tokens.
        """
        fp = sum(self.false_positives.values()) if entity_type is None else self.false_positives.get(entity_type, 0)
        name = "fp_per_1k_tokens"
        if self.n_tokens == 0:
            return Rate(value=None, numerator=fp, denominator=0, state="no_reference",
                        reason="no tokens in the negative document(s)", name=name)
        return Rate(value=1000.0 * fp / self.n_tokens, numerator=fp, denominator=self.n_tokens, name=name)


def negative_false_positives(text: str, predicted: Iterable[Any]) -> NegativeDocCounts:
    """Count predicted spans per type on a document labelled as holding no PII, and its whitespace tokens.

    The caller decides that the document is negative (no gold PII); every prediction on it is a false positive.
    Example: "Meeting notes for Monday" (4 tokens) with one DATE_TIME prediction gives 1000 · 1/4 = 250.

    Raises:
        ValueError: a span ends past the text; the errors of ``as_span``.
    """
    fps: dict[str, int] = defaultdict(int)
    for s in as_spans(predicted, text):
        fps[s.type] += 1
    return NegativeDocCounts(len(whitespace_tokens(text)), fps)
