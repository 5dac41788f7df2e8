"""Named-entity evaluation under the four schemes of SemEval-2013 task 9.1, as ``nervaluate`` 1.x computes them.

Spans are :class:`~ingestaudit.metrics.spans.Span` ``[start, end)`` in code points of one text. For one document,
each prediction (in order of ``(start, end, type)``) is put in exactly one category, then every truth span left
unmatched is *missed* (Segura-Bedmar et al., SemEval-2013 task 9, §4; David Batista's ``nervaluate``, strategies in
``nervaluate/strategies.py`` of release 1.2.1, whose loops are reproduced here rule for rule):

``strict``    COR: same boundaries and type. Else INC: overlaps an unmatched truth span. Else SPU.
``exact``     COR: same boundaries, any type. Else INC: overlaps an unmatched truth span. Else SPU.
``partial``   among overlapping unmatched truth spans, COR: same boundaries (any type); else PAR: the first overlap.
              Else SPU. Never INC.
``ent_type``  COR: overlaps an unmatched truth span of the same type (the one with the smallest
              |Δstart| + |Δend|). Else INC: overlaps an unmatched truth span of another type. Else SPU.

"Overlaps" means the shared characters are at least ``min_overlap`` percent of the truth span's length
(nervaluate's ``min_overlap_percentage``, default 1.0). A matched truth span is not matched again.

POS = COR + INC + PAR + MIS (truth spans), ACT = COR + INC + PAR + SPU (predictions).
``strict``, ``exact``: P = COR / ACT, R = COR / POS. ``partial``, ``ent_type``: P = (COR + 0.5·PAR) / ACT,
R = (COR + 0.5·PAR) / POS (PAR is always 0 for ``ent_type``).
F1 = 2·P·R / (P + R) = 2·(COR + 0.5·PAR) / (ACT + POS)
(the count form, defined whenever ACT + POS > 0). A rate with a zero denominator is ``None`` with a reason
(nervaluate prints 0).

Per type T (nervaluate's ``entities``): the same scheme on the truth and predicted spans of type T only, so a
prediction of the wrong type is SPU for its type and its truth span MIS for the truth's type. Micro
(nervaluate's ``overall``): the scheme on all spans at once, counts summed over documents. Macro: the mean of the
per-type rates over the types where the rate is defined.

The type vocabulary (``types``) is the truth's label set. Predicted types are first renamed through an optional
mapping (``{"PERSON": "PER"}``); a predicted span whose type is neither mapped nor in the vocabulary is counted
apart as *unmapped*, not as spurious (as nervaluate, which drops labels outside ``tags``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ingestaudit.metrics.rates import Rate
from ingestaudit.metrics.spans import Span, as_spans

SCHEMES: tuple[str, ...] = ("strict", "exact", "partial", "ent_type")
"""The SemEval-2013 task 9.1 schemes, in nervaluate's documentation order."""

HALF_CREDIT_SCHEMES = frozenset({"partial", "ent_type"})
"""Schemes whose precision and recall give PAR half credit (nervaluate's ``partial_or_type``)."""

DEFAULT_MIN_OVERLAP = 1.0
"""Minimum overlap, in percent of the truth span's length, for two spans to overlap (nervaluate's default)."""

RATES: tuple[str, ...] = ("precision", "recall", "f1")
"""The rates reported per scheme and type."""


@dataclass(frozen=True)
class SchemeCounts:
    """COR/INC/PAR/MIS/SPU of one scheme (one type or all types; one document or summed over a corpus).

    Counts add with ``+`` (same scheme), so corpus rates are sum-then-divide.

    Raises:
        ValueError: unknown scheme, a negative count, or ``+`` across schemes.
    """

    scheme: str
    correct: int = 0
    incorrect: int = 0
    partial: int = 0
    missed: int = 0
    spurious: int = 0

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise ValueError(f"unknown scheme {self.scheme!r}; choose one of {', '.join(SCHEMES)}")
        if min(self.correct, self.incorrect, self.partial, self.missed, self.spurious) < 0:
            raise ValueError(f"counts must be >= 0: {self}")

    def __add__(self, other: SchemeCounts) -> SchemeCounts:
        if not isinstance(other, SchemeCounts):
            return NotImplemented
        if other.scheme != self.scheme:
            raise ValueError(f"cannot add {other.scheme} counts to {self.scheme} counts")
        return SchemeCounts(self.scheme, self.correct + other.correct, self.incorrect + other.incorrect,
                            self.partial + other.partial, self.missed + other.missed, self.spurious + other.spurious)

    @property
    def possible(self) -> int:
        """POS = COR + INC + PAR + MIS: the truth spans (recall denominator)."""
        return self.correct + self.incorrect + self.partial + self.missed

    @property
    def actual(self) -> int:
        """ACT = COR + INC + PAR + SPU: the predictions (precision denominator)."""
        return self.correct + self.incorrect + self.partial + self.spurious

    @property
    def credit(self) -> float:
        """The numerator: COR + 0.5·PAR under ``partial``/``ent_type``, COR otherwise (a half-integer: exact in a
        float)."""
        return float(self.correct) + (0.5 * self.partial if self.scheme in HALF_CREDIT_SCHEMES else 0.0)

    def precision(self) -> Rate:
        """credit / ACT in [0, 1] (correctly rounded); ``None`` (``no_prediction``) when nothing was predicted."""
        return Rate.of(self.credit, float(self.actual), if_zero="no_prediction", name="precision",
                       reason=f"{self.scheme}: no predicted entity, precision undefined")

    def recall(self) -> Rate:
        """credit / POS in [0, 1]; ``None`` (``no_reference``) when nothing is labelled."""
        return Rate.of(self.credit, float(self.possible), if_zero="no_reference", name="recall",
                       reason=f"{self.scheme}: no labelled entity, recall undefined")

    def f1(self) -> Rate:
        """2·credit / (ACT + POS) in [0, 1] (= 2PR / (P + R)); ``None`` only when ACT = POS = 0."""
        return Rate.of(2.0 * self.credit, float(self.actual + self.possible), if_zero="no_reference", name="f1",
                       reason=f"{self.scheme}: no labelled and no predicted entity, f1 undefined")

    def rate(self, name: str) -> Rate:
        """The rate called ``name`` (one of :data:`RATES`). Raises ValueError for another name."""
        if name not in RATES:
            raise ValueError(f"unknown rate {name!r}; choose one of {', '.join(RATES)}")
        return getattr(self, name)()

    def as_dict(self) -> dict[str, int]:
        """The five counts plus POS and ACT, keyed by nervaluate's names (for a row's detail)."""
        return {"correct": self.correct, "incorrect": self.incorrect, "partial": self.partial,
                "missed": self.missed, "spurious": self.spurious, "possible": self.possible, "actual": self.actual}


def _overlaps(pred: Span, true: Span, min_overlap: float) -> bool:
    """Shared characters >= ``min_overlap`` percent of ``true``'s length (nervaluate's overlap test)."""
    shared = min(pred.end, true.end) - max(pred.start, true.start)
    return shared > 0 and shared * 100.0 / true.length >= min_overlap


def _distance(pred: Span, true: Span) -> int:
    return abs(pred.start - true.start) + abs(pred.end - true.end)


def classify(truth: Sequence[Span], pred: Sequence[Span], scheme: str,
             min_overlap: float = DEFAULT_MIN_OVERLAP) -> SchemeCounts:
    """Counts of one scheme for one document's spans, in the given order (see the module docstring).

    Args:
        truth, pred: the spans, in the order nervaluate would see them (:func:`evaluate` sorts them).
        scheme: one of :data:`SCHEMES`.
        min_overlap: percent of the truth span's length in [1, 100].

    Raises:
        ValueError: unknown scheme or ``min_overlap`` outside [1, 100].
    """
    if not 1.0 <= min_overlap <= 100.0:
        raise ValueError(f"min_overlap must be in [1, 100] percent, got {min_overlap!r}")
    matched: set[int] = set()
    cor = inc = par = spu = 0
    for p in pred:
        hit: int | None = None  # the truth span a COR consumes
        fallback: int | None = None  # the first overlapping truth span (INC or PAR)
        best = math.inf
        for i, t in enumerate(truth):
            if i in matched:
                continue
            same_bounds = p.start == t.start and p.end == t.end
            if scheme == "ent_type":
                if _overlaps(p, t, min_overlap):
                    if p.type == t.type:
                        if _distance(p, t) < best:
                            hit, best = i, _distance(p, t)
                    elif fallback is None:
                        fallback = i
                continue
            if scheme == "partial":
                if _overlaps(p, t, min_overlap):
                    if same_bounds:
                        hit = i
                        break
                    if fallback is None:
                        fallback = i
                continue
            if same_bounds and (scheme == "exact" or p.type == t.type):
                hit = i
                break
            if fallback is None and _overlaps(p, t, min_overlap):
                fallback = i
        if hit is not None:
            cor += 1
            matched.add(hit)
        elif fallback is not None:
            matched.add(fallback)
            if scheme == "partial":
                par += 1
            else:
                inc += 1
        else:
            spu += 1
    return SchemeCounts(scheme, cor, inc, par, len(truth) - len(matched), spu)


@dataclass(frozen=True)
class EntityScores:
    """Counts of every scheme, micro and per type, for one document or summed over a corpus.

    Attributes:
        micro: scheme -> counts over all types.
        per_type: scheme -> type -> counts (types seen in the truth or the mapped predictions).
        unmapped: predicted types outside the mapping and the vocabulary -> number of spans (not spurious).
        excluded: predicted types the mapping sends to ``None`` on purpose -> number of spans.
    """

    micro: Mapping[str, SchemeCounts]
    per_type: Mapping[str, Mapping[str, SchemeCounts]]
    unmapped: Mapping[str, int] = field(default_factory=dict)
    excluded: Mapping[str, int] = field(default_factory=dict)

    @property
    def types(self) -> tuple[str, ...]:
        """Every type with a per-type row, sorted."""
        return tuple(sorted({t for by_type in self.per_type.values() for t in by_type}))

    def __add__(self, other: EntityScores) -> EntityScores:
        per_type: dict[str, dict[str, SchemeCounts]] = {}
        for s in SCHEMES:
            mine, theirs = self.per_type.get(s, {}), other.per_type.get(s, {})
            per_type[s] = {t: mine.get(t, SchemeCounts(s)) + theirs.get(t, SchemeCounts(s))
                           for t in sorted(set(mine) | set(theirs))}
        return EntityScores(
            micro={s: self.micro.get(s, SchemeCounts(s)) + other.micro.get(s, SchemeCounts(s)) for s in SCHEMES},
            per_type=per_type,
            unmapped=dict(sorted((Counter(self.unmapped) + Counter(other.unmapped)).items())),
            excluded=dict(sorted((Counter(self.excluded) + Counter(other.excluded)).items())))

    def macro(self, scheme: str, rate: str) -> Rate:
        """Mean of the per-type ``rate`` under ``scheme`` over the types where it is defined.

        Terms: numerator = the sum of the defined per-type values, denominator = their number. ``None`` with
        state ``no_reference`` when no type has it defined.
        """
        values = [c.rate(rate).value for c in self.per_type.get(scheme, {}).values()]
        defined = [v for v in values if v is not None]
        total = math.fsum(defined)
        return Rate(value=total / len(defined) if defined else None, numerator=total, denominator=len(defined),
                    state="ok" if defined else "no_reference", name=rate,
                    reason=None if defined else f"{scheme}: {rate} undefined for every type")


def empty_scores() -> EntityScores:
    """Scores of nothing: zero counts for every scheme, no types (the start of a corpus sum)."""
    return EntityScores(micro={s: SchemeCounts(s) for s in SCHEMES}, per_type={s: {} for s in SCHEMES})


def evaluate(truth: Iterable[object], pred: Iterable[object], *, types: Iterable[str] | None = None,
             mapping: Mapping[str, str | None] | None = None,
             min_overlap: float = DEFAULT_MIN_OVERLAP) -> EntityScores:
    """Score one document's predicted entities against its truth under every scheme.

    Args:
        truth, pred: spans (anything :func:`~ingestaudit.metrics.spans.as_span` reads); both sorted by
            ``(start, end, type)`` before matching, so the result does not depend on input order.
        types: the truth's type vocabulary (default: the types present in ``truth``). Every truth type must be in it.
        mapping: predicted type -> truth type (``None``: excluded on purpose); a type not in it keeps its name. A
            predicted span whose type (after the mapping) is not in ``types`` is counted in ``unmapped`` under its
            predicted type, not matched.
        min_overlap: see :func:`classify`.

    Raises:
        ValueError: a truth span whose type is outside ``types``, or the
            errors of :func:`classify` and :class:`~ingestaudit.metrics.spans.Span`.
    """
    gold = sorted(as_spans(truth))
    vocabulary = {s.type for s in gold} if types is None else set(types)
    for s in gold:
        if s.type not in vocabulary:
            raise ValueError(f"truth entity [{s.start}, {s.end}) has type {s.type!r}, not one of the types "
                             f"{sorted(vocabulary)}")
    mapping = mapping or {}
    guess: list[Span] = []
    unmapped: Counter[str] = Counter()
    excluded: Counter[str] = Counter()
    for p in as_spans(pred):
        dst = mapping.get(p.type, p.type)
        if dst is None:
            excluded[p.type] += 1
        elif dst in vocabulary:
            guess.append(Span(p.start, p.end, dst))
        else:
            unmapped[p.type] += 1
    guess.sort()
    present = sorted({s.type for s in gold} | {s.type for s in guess})
    micro = {s: classify(gold, guess, s, min_overlap) for s in SCHEMES}
    per_type = {s: {t: classify([g for g in gold if g.type == t], [p for p in guess if p.type == t], s, min_overlap)
                    for t in present} for s in SCHEMES}
    return EntityScores(micro=micro, per_type=per_type, unmapped=dict(sorted(unmapped.items())),
                        excluded=dict(sorted(excluded.items())))


def onto_reference(spans: Iterable[object], to_ref: object) -> tuple[Span | None, ...]:
    """Carry spans on a stage's text onto the reference text through an offset map (``OffsetMap.project``).

    Args:
        spans: spans on the stage's text (``[start, end)`` code points).
        to_ref: an `ingestaudit.metrics.offsets.OffsetMap` from that text to the reference text.

    Returns:
        Per span, in order: the smallest reference interval holding every position its characters map to, same
        type; ``None`` when none of its characters maps (the span's text is not in the reference).

    Raises:
        ValueError: a span past the end of the mapped text (the errors of ``OffsetMap.project``).
    """
    out: list[Span | None] = []
    for s in as_spans(spans):
        hit = to_ref.project(s.start, s.end)  # type: ignore[attr-defined]
        out.append(None if hit is None else Span(hit[0], hit[1], s.type))
    return tuple(out)
