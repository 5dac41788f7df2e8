"""Typed character-span matching (PII detection): counts and rates under named matching policies.

A *span* is ``[start, end)`` in Unicode code points of one text, with an entity type. Gold (labelled) spans are
compared with predicted (detector) spans under one of three named policies, and the result keeps raw counts
(tp, fp, fn) per entity type; every rate is a thin wrapper over those counts.

Policies (the name, e.g. ``overlap@0.5``, is printed next to every number):

``exact``
    A prediction matches a gold span iff start, end and type are all equal. One-to-one: duplicated identical
    predictions match at most as many identical gold spans (multiset intersection).
``overlap@t``
    A pair (g, p) of the same type is *eligible* iff IoU(g, p) >= t, with
    IoU = |g ∩ p| / |g ∪ p| over character positions (0 < t <= 1, default 0.5). Pairs are assigned one-to-one
    with ``scipy.optimize.linear_sum_assignment`` (Hungarian / Jonker-Volgenant solver) on the weights
    ``w = M + IoU`` for eligible pairs and ``0`` otherwise, ``M = min(n_gold, n_pred) + 1``: the assignment
    maximizes the number of matched pairs and, among those, the total IoU. tp = matched pairs; each
    prediction counts once in the precision denominator (tp + fp = n_pred) and each gold span once in the recall
    denominator (tp + fn = n_gold). IoU is an IEEE double quotient of two integers, correctly rounded, so a
    ratio equal to the decimal threshold (4/8 vs 0.5, 3/10 vs 0.3) compares equal and is matched.
``token``
    Token level. Tokens are the maximal runs of non-whitespace characters (Python ``re`` pattern ``\\S+``).
    A token carries type T on a side iff at least one span of type T on that side shares a character with it.
    Per type: tp = |G_T ∩ P_T|, fp = |P_T \\ G_T|, fn = |G_T \\ P_T| over token positions. A span lying
    wholly in whitespace touches no token and so contributes nothing.

The type-agnostic variant ("was it caught at all, whatever its type?") relabels every span with
:data:`ANY_TYPE` and applies the same policy.

Rates (P = tp / (tp + fp), R = tp / (tp + fn), F_beta) follow van Rijsbergen, *Information Retrieval*, 2nd ed.
(1979), ch. 7; per-type, micro (sum counts, then divide) and macro (mean of per-type values) averaging as in
scikit-learn's ``precision_recall_fscore_support`` (1.x). An undefined rate is ``None`` with a reason.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from ingestaudit.metrics.rates import Rate  # re-exported: named rates (terms as given: int counts, float F-beta terms)

POLICY_NAMES: tuple[str, ...] = ("exact", "overlap", "token")
"""Names of the matching policies, in documentation order."""

DEFAULT_IOU_THRESHOLD = 0.5
"""Default IoU threshold of the ``overlap`` policy."""

ANY_TYPE = "*"
"""Entity type given to every span in the type-agnostic variant."""

TOKEN_PATTERN = re.compile(r"\S+")
"""Tokenization of the ``token`` policy: maximal runs of non-whitespace characters."""

RATE_NAMES: tuple[str, ...] = ("precision", "recall", "f1", "f2")
"""Rates available per type and as macro averages."""


# --------------------------------------------------------------------------------------------------- spans


@dataclass(frozen=True, order=True)
class Span:
    """A typed character span ``[start, end)`` on one text.

    Attributes:
        start: first code point, ``0 <= start``.
        end: one past the last code point, ``start < end`` (empty spans are rejected: their IoU is 0/0).
        type: entity type, a non-empty string (e.g. ``"PERSON"``).

    Raises:
        TypeError: start/end not ``int`` (``bool`` rejected) or type not ``str``.
        ValueError: ``start < 0``, ``end <= start`` or an empty type.
    """

    start: int
    end: int
    type: str

    def __post_init__(self) -> None:
        for name in ("start", "end"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"span {name} must be an int, got {value!r}")
            object.__setattr__(self, name, int(value))
        if not isinstance(self.type, str):
            raise TypeError(f"span type must be a str, got {self.type!r}")
        if not self.type:
            raise ValueError("span type must be a non-empty string")
        if self.start < 0 or self.end <= self.start:
            raise ValueError(f"span [{self.start}, {self.end}) must satisfy 0 <= start < end")

    @property
    def length(self) -> int:
        """Number of code points, ``end - start`` (>= 1)."""
        return self.end - self.start


def as_span(obj: Any) -> Span:
    """Coerce ``obj`` into a :class:`Span`.

    Accepts a :class:`Span`, a ``(start, end, type)`` tuple/list, a mapping with keys ``start``, ``end``,
    ``type`` (the truth-file shape), or any object with those attributes.

    Raises:
        TypeError: ``obj`` has none of these shapes; errors of :class:`Span` for bad values.
    """
    if isinstance(obj, Span):
        return obj
    if isinstance(obj, Mapping):
        try:
            return Span(obj["start"], obj["end"], obj["type"])
        except KeyError as exc:
            raise TypeError(f"span mapping lacks key {exc.args[0]!r}: {obj!r}") from None
    if isinstance(obj, (tuple, list)):
        if len(obj) != 3:
            raise TypeError(f"span tuple must be (start, end, type), got {obj!r}")
        return Span(*obj)
    if all(hasattr(obj, a) for a in ("start", "end", "type")):
        return Span(obj.start, obj.end, obj.type)
    raise TypeError(f"cannot read a span from {obj!r}")


def as_spans(spans: Iterable[Any], text: str | None = None) -> tuple[Span, ...]:
    """Coerce every item with :func:`as_span`, keeping order; check ``end <= len(text)`` when text is given.

    Raises:
        ValueError: a span ends past the end of ``text``; plus the errors of :func:`as_span`.
    """
    out = tuple(as_span(s) for s in spans)
    if text is not None:
        for s in out:
            if s.end > len(text):
                raise ValueError(f"span [{s.start}, {s.end}) {s.type} ends past the text (length {len(text)})")
    return out


def iou(a: Span, b: Span) -> float:
    """Intersection over union of two spans' character sets, in [0, 1]; types are ignored.

    IoU(a, b) = |a ∩ b| / |a ∪ b| = i / (len(a) + len(b) - i), i = max(0, min(a.end, b.end) - max(a.start, b.start)).
    Jaccard index of the two position sets. Example: [5, 13) vs [9, 13) gives 4 / 8 = 0.5.
    """
    inter = max(0, min(a.end, b.end) - max(a.start, b.start))
    return inter / (a.length + b.length - inter)


# ------------------------------------------------------------------------------------------------ policies


@dataclass(frozen=True)
class MatchPolicy:
    """A named matching policy; its :attr:`label` is printed with every number and round-trips via :meth:`parse`.

    Attributes:
        name: one of :data:`POLICY_NAMES`.
        iou_threshold: for ``overlap`` only, ``0 < t <= 1`` (``None`` selects :data:`DEFAULT_IOU_THRESHOLD`);
            must be ``None`` for the other policies.

    Raises:
        ValueError: unknown name, threshold outside (0, 1], or a threshold given to a policy without one.
    """

    name: str
    iou_threshold: float | None = None

    def __post_init__(self) -> None:
        if self.name not in POLICY_NAMES:
            raise ValueError(f"unknown matching policy {self.name!r}; choose one of {', '.join(POLICY_NAMES)}")
        if self.name == "overlap":
            t = DEFAULT_IOU_THRESHOLD if self.iou_threshold is None else self.iou_threshold
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not (0.0 < float(t) <= 1.0):
                raise ValueError(f"overlap IoU threshold must be in (0, 1], got {t!r}")
            object.__setattr__(self, "iou_threshold", float(t))
        elif self.iou_threshold is not None:
            raise ValueError(f"policy {self.name!r} takes no IoU threshold")

    @property
    def label(self) -> str:
        """Canonical name: ``exact``, ``token`` or ``overlap@<t>`` (``repr`` of the float, e.g. ``overlap@0.5``)."""
        return f"overlap@{self.iou_threshold!r}" if self.name == "overlap" else self.name

    @property
    def description(self) -> str:
        """One-line human description of the rule, for reports."""
        if self.name == "exact":
            return "exact: same start, end and type; one-to-one"
        if self.name == "overlap":
            return (
                f"overlap: same type and IoU >= {self.iou_threshold!r}; one-to-one assignment maximizing the "
                "number of pairs, then total IoU"
            )
        return "token: token-level; tokens are maximal runs of non-whitespace characters"

    def __str__(self) -> str:
        return self.label

    @classmethod
    def parse(cls, text: str | MatchPolicy) -> MatchPolicy:
        """Read a policy from its label: ``"exact"``, ``"token"``, ``"overlap"`` or ``"overlap@0.3"``.

        Raises:
            ValueError: unknown name, malformed or out-of-range threshold.
        """
        if isinstance(text, MatchPolicy):
            return text
        name, sep, arg = str(text).strip().partition("@")
        if not sep:
            return cls(name)
        if name != "overlap":
            raise ValueError(f"policy {name!r} takes no parameter (got {text!r})")
        try:
            t = float(arg)
        except ValueError:
            raise ValueError(f"malformed IoU threshold in {text!r}") from None
        return cls("overlap", t)


def _policy(policy: str | MatchPolicy, iou_threshold: float | None) -> MatchPolicy:
    if isinstance(policy, MatchPolicy):
        if iou_threshold is not None and iou_threshold != policy.iou_threshold:
            raise ValueError(f"iou_threshold={iou_threshold!r} conflicts with policy {policy.label}")
        return policy
    parsed = MatchPolicy.parse(policy)
    if iou_threshold is None:
        return parsed
    if parsed.name != "overlap":
        raise ValueError(f"policy {parsed.name!r} takes no IoU threshold")
    if "@" in str(policy) and parsed.iou_threshold != float(iou_threshold):
        raise ValueError(f"iou_threshold={iou_threshold!r} conflicts with policy {policy!r}")
    return MatchPolicy("overlap", iou_threshold)


# -------------------------------------------------------------------------------------------- counts, rates


@dataclass(frozen=True)
class SpanCounts:
    """Raw counts of one comparison (one type or all types; one document or a corpus).

    Attributes:
        tp: matched gold/prediction pairs (``span`` unit) or tokens labelled on both sides (``token`` unit).
        fp: predictions (or predicted tokens) left unmatched.
        fn: gold spans (or gold tokens) left unmatched.
        unit: ``"span"`` or ``"token"``.

    Counts add with ``+`` (same unit), so corpus rates are sum-then-divide (micro over documents).

    Raises:
        ValueError: a negative count or an unknown unit; ``+`` across units.
    """

    tp: int = 0
    fp: int = 0
    fn: int = 0
    unit: str = "span"

    def __post_init__(self) -> None:
        if min(self.tp, self.fp, self.fn) < 0:
            raise ValueError(f"counts must be >= 0, got tp={self.tp} fp={self.fp} fn={self.fn}")
        if self.unit not in ("span", "token"):
            raise ValueError(f"unit must be 'span' or 'token', got {self.unit!r}")

    @property
    def n_predicted(self) -> int:
        """Precision denominator, tp + fp."""
        return self.tp + self.fp

    @property
    def n_gold(self) -> int:
        """Recall denominator, tp + fn."""
        return self.tp + self.fn

    def __add__(self, other: SpanCounts) -> SpanCounts:
        if not isinstance(other, SpanCounts):
            return NotImplemented
        if other.unit != self.unit:
            raise ValueError(f"cannot add {self.unit} counts to {other.unit} counts")
        return SpanCounts(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn, self.unit)

    def precision(self) -> Rate:
        """See :func:`precision`."""
        return precision(self)

    def recall(self) -> Rate:
        """See :func:`recall`."""
        return recall(self)

    def f_beta(self, beta: float) -> Rate:
        """See :func:`f_beta`."""
        return f_beta(self, beta)

    def f1(self) -> Rate:
        """See :func:`f1`."""
        return f_beta(self, 1.0)

    def f2(self) -> Rate:
        """See :func:`f2`."""
        return f_beta(self, 2.0)

    def rate(self, name: str) -> Rate:
        """The rate called ``name`` (one of :data:`RATE_NAMES`). Raises ValueError for another name."""
        if name not in RATE_NAMES:
            raise ValueError(f"unknown rate {name!r}; choose one of {', '.join(RATE_NAMES)}")
        return getattr(self, name)()


def precision(c: SpanCounts) -> Rate:
    """Precision P = tp / (tp + fp), in [0, 1].

    ``None`` with state ``no_prediction`` when tp + fp = 0 (nothing predicted). Example: one of two predictions
    matched gives 1/2.
    """
    return Rate.of(c.tp, c.n_predicted, if_zero="no_prediction", reason=f"no predicted {c.unit}s: precision undefined",
                   name="precision")


def recall(c: SpanCounts) -> Rate:
    """Recall R = tp / (tp + fn), in [0, 1].

    ``None`` with state ``no_reference`` when tp + fn = 0 (nothing labelled). Example: one of one gold span
    matched gives 1/1.
    """
    return Rate.of(c.tp, c.n_gold, if_zero="no_reference", reason=f"no gold {c.unit}s: recall undefined", name="recall")


def f_beta(c: SpanCounts, beta: float) -> Rate:
    """F-beta = (1 + β²)·tp / ((1 + β²)·tp + β²·fn + fp), in [0, 1]; β > 0 weighs recall β times as much as precision.

    Equal to (1 + β²)·P·R / (β²·P + R) whenever P and R are defined and not both 0; this is 1 - E for van
    Rijsbergen's (1979) effectiveness E = 1 - 1 / (α/P + (1 - α)/R) with α = 1 / (1 + β²). The count form is
    also defined when nothing was predicted
    (F = 0: every gold item missed) or nothing labelled (F = 0: every prediction false); it is ``None`` (state
    ``no_reference``) only when tp = fp = fn = 0. F2 (β = 2) is the recall-weighted score privacy teams use.

    Raises:
        ValueError: β not a finite number > 0.
    """
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not math.isfinite(beta) or beta <= 0:
        raise ValueError(f"beta must be a finite number > 0, got {beta!r}")
    b2 = float(beta) ** 2
    name = f"f{beta:g}"
    num = (1.0 + b2) * c.tp
    den = num + b2 * c.fn + c.fp
    return Rate.of(num, den, if_zero="no_reference", reason=f"no gold and no predicted {c.unit}s: {name} undefined",
                   name=name)


def f1(c: SpanCounts) -> Rate:
    """F1 = 2·tp / (2·tp + fn + fp): :func:`f_beta` with β = 1."""
    return f_beta(c, 1.0)


def f2(c: SpanCounts) -> Rate:
    """F2 = 5·tp / (5·tp + 4·fn + fp): :func:`f_beta` with β = 2 (recall-weighted)."""
    return f_beta(c, 2.0)


@dataclass(frozen=True)
class MacroRate:
    """Macro average: arithmetic mean of one rate over entity types where it is defined.

    macro = (1 / |L|) Σ_{t ∈ L} rate_t, L = the requested types whose rate is not ``None``. This is the
    "averaged F1" of Opitz & Burst (2019, arXiv:1911.03347), as scikit-learn's ``average="macro"``, except that
    undefined per-type values are left out (and listed) instead of being counted as 0.

    Attributes:
        name: rate name (one of :data:`RATE_NAMES`).
        value: the mean in [0, 1], or ``None`` when no type has the rate defined.
        labels: types averaged over (sorted).
        undefined: requested types whose rate is ``None`` (sorted), left out of the mean.
        state, reason: ``"ok"``/``None``, or ``"no_reference"`` with a reason when ``value is None``.
    """

    name: str
    value: float | None
    labels: tuple[str, ...]
    undefined: tuple[str, ...]
    state: str = "ok"
    reason: str | None = None


def macro_average(per_type: Mapping[str, SpanCounts], name: str, types: Collection[str] | None = None) -> MacroRate:
    """Macro average of rate ``name`` over ``types`` (default: every key of ``per_type``); see :class:`MacroRate`.

    A requested type absent from ``per_type`` has zero counts, so all its rates are undefined.

    Raises:
        ValueError: unknown rate name.
    """
    wanted = sorted(per_type) if types is None else sorted(set(types))
    values: dict[str, float] = {}
    undefined: list[str] = []
    for t in wanted:
        counts = per_type.get(t)
        rate = counts.rate(name) if counts is not None else SpanCounts().rate(name)
        if rate.value is None:
            undefined.append(t)
        else:
            values[t] = rate.value
    if not values:
        return MacroRate(name, None, (), tuple(undefined), "no_reference", f"{name} is undefined for every type")
    return MacroRate(name, math.fsum(values.values()) / len(values), tuple(sorted(values)), tuple(undefined))


# -------------------------------------------------------------------------------------------------- matching


@dataclass(frozen=True)
class SpanMatch:
    """The one-to-one pairing of an ``exact`` or ``overlap`` comparison (for attributing each miss).

    Attributes:
        policy: the policy used.
        type_agnostic: whether types were ignored when pairing.
        pairs: ``(gold index, predicted index, IoU)`` triples, indices into the inputs as given, sorted by gold
            index; IoU in [t, 1] (1.0 under ``exact``).
        unmatched_gold: gold indices with no partner (false negatives), ascending.
        unmatched_pred: predicted indices with no partner (false positives), ascending.
    """

    policy: MatchPolicy
    type_agnostic: bool
    pairs: tuple[tuple[int, int, float], ...]
    unmatched_gold: tuple[int, ...]
    unmatched_pred: tuple[int, ...]


def _match_exact(
    gold: Sequence[Span], pred: Sequence[Span], gi: list[int], pi: list[int]
) -> list[tuple[int, int, float]]:
    waiting: dict[tuple[int, int], list[int]] = defaultdict(list)
    for j in pi:
        waiting[(pred[j].start, pred[j].end)].append(j)
    pairs = []
    for i in gi:
        queue = waiting.get((gold[i].start, gold[i].end))
        if queue:
            pairs.append((i, queue.pop(0), 1.0))
    return pairs


def _match_overlap(
    gold: Sequence[Span], pred: Sequence[Span], gi: list[int], pi: list[int], t: float
) -> list[tuple[int, int, float]]:
    if not gi or not pi:
        return []
    gs = np.array([gold[i].start for i in gi], dtype=np.int64)[:, None]
    ge = np.array([gold[i].end for i in gi], dtype=np.int64)[:, None]
    ps = np.array([pred[j].start for j in pi], dtype=np.int64)[None, :]
    pe = np.array([pred[j].end for j in pi], dtype=np.int64)[None, :]
    inter = np.clip(np.minimum(ge, pe) - np.maximum(gs, ps), 0, None)
    ious = inter / ((ge - gs) + (pe - ps) - inter)  # union >= 1: spans are non-empty
    eligible = ious >= t
    if not eligible.any():
        return []
    big = float(min(len(gi), len(pi)) + 1)  # one more pair outweighs any total-IoU gain (total IoU <= min(n, m))
    weights = np.where(eligible, big + ious, 0.0)
    from scipy.optimize import linear_sum_assignment  # imported on use: 0.4 s of start-up

    rows, cols = linear_sum_assignment(weights, maximize=True)
    return [(gi[r], pi[c], float(ious[r, c])) for r, c in zip(rows, cols) if eligible[r, c]]


def match_spans(
    gold: Iterable[Any],
    pred: Iterable[Any],
    policy: str | MatchPolicy = "exact",
    *,
    iou_threshold: float | None = None,
    type_agnostic: bool = False,
) -> SpanMatch:
    """Pair gold and predicted spans one-to-one under ``exact`` or ``overlap`` (see the module docstring).

    Args:
        gold, pred: spans in any form :func:`as_span` reads; their order defines the indices in the result.
        policy: a :class:`MatchPolicy` or its label (``"exact"``, ``"overlap"``, ``"overlap@0.3"``).
        iou_threshold: shorthand for ``overlap@t`` when ``policy == "overlap"``.
        type_agnostic: pair across types ("caught at all, whatever its type").

    Raises:
        ValueError: the ``token`` policy (it has no span pairs; use :func:`token_labels`), or a bad policy/span.
    """
    pol = _policy(policy, iou_threshold)
    if pol.name == "token":
        raise ValueError("the token policy pairs tokens, not spans; use token_labels() or score_spans()")
    g, p = as_spans(gold), as_spans(pred)
    groups_g: dict[str, list[int]] = defaultdict(list)
    groups_p: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(g):
        groups_g[ANY_TYPE if type_agnostic else s.type].append(i)
    for j, s in enumerate(p):
        groups_p[ANY_TYPE if type_agnostic else s.type].append(j)
    pairs: list[tuple[int, int, float]] = []
    for typ in groups_g.keys() & groups_p.keys():
        if pol.name == "exact":
            pairs += _match_exact(g, p, groups_g[typ], groups_p[typ])
        else:
            pairs += _match_overlap(g, p, groups_g[typ], groups_p[typ], pol.iou_threshold)  # type: ignore[arg-type]
    pairs.sort()
    matched_g = {i for i, _, _ in pairs}
    matched_p = {j for _, j, _ in pairs}
    return SpanMatch(
        policy=pol,
        type_agnostic=type_agnostic,
        pairs=tuple(pairs),
        unmatched_gold=tuple(i for i in range(len(g)) if i not in matched_g),
        unmatched_pred=tuple(j for j in range(len(p)) if j not in matched_p),
    )


def whitespace_tokens(text: str) -> tuple[tuple[int, int], ...]:
    """Tokens of the ``token`` policy: ``(start, end)`` of every maximal run of non-whitespace characters.

    Whitespace is what Python's ``re`` ``\\s`` matches on ``str`` (Unicode whitespace). Example:
    ``"Ana Lima and Bo Chen"`` gives (0, 3), (4, 8), (9, 12), (13, 15), (16, 20).
    """
    return tuple(m.span() for m in TOKEN_PATTERN.finditer(text))


def token_labels(
    text: str, spans: Iterable[Any], *, type_agnostic: bool = False, tokens: Sequence[tuple[int, int]] | None = None
) -> dict[str, frozenset[int]]:
    """Token indices labelled with each type: token k carries type T iff a span of type T shares a character with it.

    Args:
        text: the text the spans refer to.
        spans: spans in any form :func:`as_span` reads.
        type_agnostic: label every touched token with :data:`ANY_TYPE` instead.
        tokens: precomputed :func:`whitespace_tokens` of ``text`` (to tokenize once for gold and predictions).

    Returns:
        ``{type: frozenset of token indices}``; a type whose spans touch no token maps to an empty set.

    Raises:
        ValueError: a span ends past the text; the errors of :func:`as_span`.
    """
    toks = whitespace_tokens(text) if tokens is None else tokens
    starts = [a for a, _ in toks]
    ends = [b for _, b in toks]
    out: dict[str, set[int]] = defaultdict(set)
    for s in as_spans(spans, text):
        # tokens k with start_k < s.end and end_k > s.start (tokens are sorted and disjoint)
        first = bisect.bisect_right(ends, s.start)
        last = bisect.bisect_left(starts, s.end)
        out[ANY_TYPE if type_agnostic else s.type].update(range(first, last))
    return {k: frozenset(v) for k, v in out.items()}


def _token_counts(gold: Mapping[str, frozenset[int]], pred: Mapping[str, frozenset[int]]) -> dict[str, SpanCounts]:
    empty: frozenset[int] = frozenset()
    out = {}
    for typ in sorted(gold.keys() | pred.keys()):
        g, p = gold.get(typ, empty), pred.get(typ, empty)
        out[typ] = SpanCounts(len(g & p), len(p - g), len(g - p), "token")
    return out


def _span_counts(match: SpanMatch, gold: Sequence[Span], pred: Sequence[Span], agnostic: bool) -> dict[str, SpanCounts]:
    tp: dict[str, int] = defaultdict(int)
    fp: dict[str, int] = defaultdict(int)
    fn: dict[str, int] = defaultdict(int)
    key = (lambda s: ANY_TYPE) if agnostic else (lambda s: s.type)
    for i, _, _ in match.pairs:
        tp[key(gold[i])] += 1
    for i in match.unmatched_gold:
        fn[key(gold[i])] += 1
    for j in match.unmatched_pred:
        fp[key(pred[j])] += 1
    types = set(key(s) for s in gold) | set(key(s) for s in pred)
    return {t: SpanCounts(tp[t], fp[t], fn[t], "span") for t in sorted(types)}


# ---------------------------------------------------------------------------------------------------- scores


@dataclass(frozen=True)
class SpanScores:
    """Counts of one comparison (a document, or a corpus after ``+``) under one policy.

    Attributes:
        policy: the policy; print ``policy.label`` next to every number.
        per_type: ``{entity type: SpanCounts}`` (read-only) over the union of gold and predicted types.
        any_type: counts of the type-agnostic variant (types ignored when matching).

    Derived: :attr:`micro` (per-type counts summed), :meth:`macro` (mean of per-type rates).
    ``a + b`` sums per-type and type-agnostic counts (same policy), for corpus-level micro averages.
    """

    policy: MatchPolicy
    per_type: Mapping[str, SpanCounts]
    any_type: SpanCounts

    def __post_init__(self) -> None:
        object.__setattr__(self, "per_type", MappingProxyType(dict(sorted(self.per_type.items()))))

    def __reduce__(self) -> tuple[Any, ...]:  # mappingproxy cannot be pickled; rebuild (process pools pickle results)
        return (type(self), (self.policy, dict(self.per_type), self.any_type))

    @property
    def unit(self) -> str:
        """``"token"`` under the token policy, else ``"span"``."""
        return "token" if self.policy.name == "token" else "span"

    @property
    def micro(self) -> SpanCounts:
        """Per-type counts summed: micro P = Σ tp / Σ (tp + fp), etc. (types must match to count)."""
        total = SpanCounts(unit=self.unit)
        for c in self.per_type.values():
            total = total + c
        return total

    def macro(self, name: str, types: Collection[str] | None = None) -> MacroRate:
        """Macro average of rate ``name`` over ``types`` (default: all types seen); see :func:`macro_average`."""
        return macro_average(self.per_type, name, types)

    def __add__(self, other: SpanScores) -> SpanScores:
        if not isinstance(other, SpanScores):
            return NotImplemented
        if other.policy != self.policy:
            raise ValueError(f"cannot add scores under {self.policy.label} and {other.policy.label}")
        merged = dict(self.per_type)
        for t, c in other.per_type.items():
            merged[t] = merged[t] + c if t in merged else c
        return SpanScores(self.policy, merged, self.any_type + other.any_type)


def score_spans(
    gold: Iterable[Any],
    pred: Iterable[Any],
    policy: str | MatchPolicy = "exact",
    *,
    text: str | None = None,
    iou_threshold: float | None = None,
) -> SpanScores:
    """Compare gold and predicted spans of one text under one policy; see the module docstring for the rules.

    Args:
        gold, pred: spans in any form :func:`as_span` reads, on the same text.
        policy: :class:`MatchPolicy` or label (``"exact"``, ``"overlap"``, ``"overlap@0.3"``, ``"token"``).
        text: the text; required for ``token``; when given, every span must end within it.
        iou_threshold: shorthand for ``overlap@t``.

    Returns:
        :class:`SpanScores` with per-type counts and the type-agnostic counts.

    Raises:
        ValueError: ``token`` without text, a span past the text, a bad policy or span.

    Example (``"Call Ana Lima at 555-0100"``): gold PERSON [5,13); predictions PERSON [5,8) and [9,13).
    ``exact``: tp 0, fp 2, fn 1. ``overlap@0.5``: IoUs 3/8 and 4/8, so [9,13) is matched: P = 1/2, R = 1/1.
    ``token``: both sides label tokens "Ana" and "Lima": P = R = 1.
    """
    pol = _policy(policy, iou_threshold)
    g, p = as_spans(gold, text), as_spans(pred, text)
    if pol.name == "token":
        if text is None:
            raise ValueError("the token policy needs the text")
        toks = whitespace_tokens(text)
        per_type = _token_counts(token_labels(text, g, tokens=toks), token_labels(text, p, tokens=toks))
        agnostic = _token_counts(
            token_labels(text, g, type_agnostic=True, tokens=toks),
            token_labels(text, p, type_agnostic=True, tokens=toks),
        )
        return SpanScores(pol, per_type, agnostic.get(ANY_TYPE, SpanCounts(unit="token")))
    per_type = _span_counts(match_spans(g, p, pol), g, p, agnostic=False)
    agnostic = _span_counts(match_spans(g, p, pol, type_agnostic=True), g, p, agnostic=True)
    return SpanScores(pol, per_type, agnostic.get(ANY_TYPE, SpanCounts(unit="span")))


# ------------------------------------------------------------------------------------------ label vocabulary


@dataclass(frozen=True)
class LabelMapResult:
    """Spans after mapping the label vocabulary onto the detector's; nothing is dropped silently.

    Attributes:
        spans: spans whose type was mapped or passed through, in input order, with their new type.
        unmapped_spans: spans whose type is neither in the mapping nor in ``target_types`` (input order).
        unmapped_types: the distinct types of ``unmapped_spans`` (sorted).
        excluded_types: types the mapping sends to ``None`` on purpose, that occurred (sorted).
        passed_through_types: types kept unchanged because they are not in the mapping (sorted).
    """

    spans: tuple[Span, ...]
    unmapped_spans: tuple[Span, ...]
    unmapped_types: tuple[str, ...]
    excluded_types: tuple[str, ...]
    passed_through_types: tuple[str, ...]


def map_span_types(
    spans: Iterable[Any], mapping: Mapping[str, str | None], *, target_types: Collection[str] | None = None
) -> LabelMapResult:
    """Rename span types through ``mapping`` (e.g. ``{"GPE": "LOCATION", "STREET_ADDRESS": "LOCATION"}``).

    Rule per span of type T: T in ``mapping`` -> type ``mapping[T]`` (``None``: excluded on purpose, listed in
    ``excluded_types``); else T in ``target_types`` (or ``target_types is None``) -> kept unchanged, listed in
    ``passed_through_types``; else -> set aside in ``unmapped_spans`` and listed in ``unmapped_types``.

    Raises:
        ValueError: a mapping value outside ``target_types`` (when given) or an empty string.
    """
    targets = None if target_types is None else set(target_types)
    for src, dst in mapping.items():
        if dst is None:
            continue
        if not isinstance(dst, str) or not dst:
            raise ValueError(f"mapping of {src!r} must be a non-empty type name or None, got {dst!r}")
        if targets is not None and dst not in targets:
            raise ValueError(f"mapping sends {src!r} to {dst!r}, which is not a target type")
    kept: list[Span] = []
    unmapped: list[Span] = []
    excluded: set[str] = set()
    passed: set[str] = set()
    for s in as_spans(spans):
        if s.type in mapping:
            dst = mapping[s.type]
            if dst is None:
                excluded.add(s.type)
            else:
                kept.append(Span(s.start, s.end, dst))
        elif targets is None or s.type in targets:
            passed.add(s.type)
            kept.append(s)
        else:
            unmapped.append(s)
    return LabelMapResult(
        spans=tuple(kept),
        unmapped_spans=tuple(unmapped),
        unmapped_types=tuple(sorted({s.type for s in unmapped})),
        excluded_types=tuple(sorted(excluded)),
        passed_through_types=tuple(sorted(passed)),
    )


DEFAULT_PLACEHOLDER = "<{type}>"
"""How `redact` writes a removed span (Presidio Anonymizer's ``replace`` operator default form)."""


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """Union of overlapping or touching spans, sorted; a merged region takes the type of its first span (by start,
    then longest)."""
    out: list[Span] = []
    for s in sorted(spans, key=lambda s: (s.start, -s.end, s.type)):
        if out and s.start <= out[-1].end:
            last = out[-1]
            out[-1] = Span(last.start, max(last.end, s.end), last.type)
        else:
            out.append(s)
    return out


def redact(text: str, spans: Iterable[Span], placeholder: str = DEFAULT_PLACEHOLDER) -> str:
    """The scrubbed text: every region of the union of ``spans`` (`merge_spans`) replaced by ``placeholder``
    formatted with ``type`` (default ``<{type}>``, as Presidio Anonymizer's ``replace`` operator).

    Example: ``redact("Call Ana Lima at 555-0100", [Span(5, 13, "PERSON")])`` is ``"Call <PERSON> at 555-0100"``.
    """
    parts: list[str] = []
    pos = 0
    for s in merge_spans(spans):
        parts.append(text[pos:s.start])
        parts.append(placeholder.format(type=s.type))
        pos = s.end
    parts.append(text[pos:])
    return "".join(parts)
