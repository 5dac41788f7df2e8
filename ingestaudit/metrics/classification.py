"""Single-label classification with abstention (language identification): counts, per-label rates, macro F1,
accuracy, coverage, confusion matrix and top confusions.

Input: one pair ``(true, predicted)`` per document, ``true`` a label (str) and ``predicted`` a label or ``None``
(the classifier *abstained*: it declined to answer). Everything is computed once into `ClassificationCounts`
(raw integers); every rate is a thin wrapper over those counts.

Counting rules, per label ``L`` over ``n`` documents:

* ``tp(L) = #{true = L, pred = L}``
* ``fp(L) = #{pred = L, true != L}``
* ``fn(L) = #{true = L, pred != L}`` (a wrong label **or an abstention**)

**How abstentions count**: an abstention on a document of label ``L`` is a miss for ``L`` (in ``fn(L)``, so it lowers
recall and F1 of ``L``, and accuracy) but it is **not a false positive of any label** (it lowers no precision). It is
the same as scikit-learn's ``precision_recall_fscore_support(y_true, y_pred, labels=LABELS)`` when abstentions are
given a sentinel prediction outside ``LABELS``.

Rates (van Rijsbergen, *Information Retrieval*, 2nd ed. 1979, ch. 7; scikit-learn 1.x definitions):

* ``precision(L) = tp / (tp + fp)``: undefined (``no_prediction``) when ``L`` was never predicted;
* ``recall(L) = tp / (tp + fn)``: undefined (``no_reference``) when no document has label ``L``;
* ``F1(L) = 2 tp / (2 tp + fp + fn)`` (the harmonic mean of P and R written on counts, so it exists, and is 0,
  when ``L`` is labelled but never predicted, or predicted but never labelled); undefined only when ``L`` occurs on
  neither side;
* ``macro F1 = (1/|T|) Σ_{L in T} F1(L)`` over ``T`` = the labels that occur in the *truth* (at least one
  document). Labels only ever predicted are not averaged in (their false positives already lower the recall of the
  true labels they were taken from). This equals scikit-learn's ``f1_score(..., labels=T, average="macro")``; it
  differs from its default ``labels=None``, which averages over the union of true and predicted labels;
* ``accuracy = #{pred = true} / n`` (abstentions in the denominator, as errors);
* ``coverage = #{pred is not None} / n``, the share not abstained;
* ``selective accuracy = #{pred = true} / #{pred is not None}``, accuracy over the answered documents.

An undefined value is ``None`` with a state and a reason, never NaN or a fake 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ingestaudit.metrics.rates import Rate  # re-exported: named rates whose terms are integer document counts

ABSTAIN_COLUMN = "__abstained__"
"""Name of the confusion-matrix column that counts abstentions (never a label)."""


@dataclass(frozen=True)
class LabelCounts:
    """Counts of one label (see the module docstring for tp, fp, fn).

    Attributes:
        label: the label.
        tp, fp, fn: non-negative document counts.
        abstained: documents of this label on which the classifier abstained (included in ``fn``).
    """

    label: str
    tp: int
    fp: int
    fn: int
    abstained: int = 0

    @property
    def support(self) -> int:
        """Documents whose true label is this one: ``tp + fn``."""
        return self.tp + self.fn

    @property
    def predicted(self) -> int:
        """Documents predicted as this label: ``tp + fp``."""
        return self.tp + self.fp


@dataclass(frozen=True)
class ClassificationCounts:
    """Raw counts of one set of ``(true, predicted)`` pairs.

    Attributes:
        labels: every label seen on either side, sorted (``true_labels`` first is *not* implied).
        true_labels: labels with at least one true document, sorted (the macro-F1 average runs over these).
        n: number of pairs.
        correct: pairs with ``pred == true``.
        abstained: pairs with ``pred is None``.
        per_label: `LabelCounts` per label in ``labels`` (read-only mapping).
        confusion: ``confusion[t][p]`` = number of documents with true label ``t`` and prediction ``p`` (a label or
            `ABSTAIN_COLUMN`); only non-zero cells are stored (read-only mappings).
    """

    labels: tuple[str, ...]
    true_labels: tuple[str, ...]
    n: int
    correct: int
    abstained: int
    per_label: Mapping[str, LabelCounts]
    confusion: Mapping[str, Mapping[str, int]]


def tally(pairs: Iterable[tuple[str, str | None]]) -> ClassificationCounts:
    """Count ``(true, predicted)`` pairs (``predicted`` None = abstained).

    Worked example: pairs ``(en, en), (en, es), (en, None), (de, de), (de, en)`` give ``tp(en) = 1``,
    ``fp(en) = 1`` (the German document called English), ``fn(en) = 2`` (one called Spanish, one abstention),
    ``tp(de) = 1, fp(de) = 0, fn(de) = 1``, ``tp(es) = 0, fp(es) = 1, fn(es) = 0``; n = 5, correct = 2, abstained 1.

    Raises:
        TypeError: a true label that is not a non-empty ``str``, or a prediction that is neither ``str`` nor None.
        ValueError: a label equal to `ABSTAIN_COLUMN` or an empty prediction string.
    """
    confusion: dict[str, dict[str, int]] = {}
    n = correct = abstained = 0
    for true, pred in pairs:
        if not isinstance(true, str) or not true:
            raise TypeError(f"true labels must be non-empty strings, got {true!r}")
        if pred is not None and (not isinstance(pred, str)):
            raise TypeError(f"predictions must be strings or None (abstained), got {pred!r}")
        if pred == "":
            raise ValueError("an empty prediction string is ambiguous; use None for an abstention")
        if ABSTAIN_COLUMN in (true, pred):
            raise ValueError(f"{ABSTAIN_COLUMN!r} is reserved for the abstention column")
        n += 1
        col = ABSTAIN_COLUMN if pred is None else pred
        row = confusion.setdefault(true, {})
        row[col] = row.get(col, 0) + 1
        correct += pred == true
        abstained += pred is None
    true_labels = tuple(sorted(confusion))
    predicted = {p for row in confusion.values() for p in row if p != ABSTAIN_COLUMN}
    labels = tuple(sorted(set(true_labels) | predicted))
    per_label = {}
    for lab in labels:
        row = confusion.get(lab, {})
        tp = row.get(lab, 0)
        fn = sum(row.values()) - tp
        fp = sum(r.get(lab, 0) for t, r in confusion.items() if t != lab)
        per_label[lab] = LabelCounts(lab, tp, fp, fn, row.get(ABSTAIN_COLUMN, 0))
    frozen = {t: MappingProxyType(dict(sorted(r.items()))) for t, r in sorted(confusion.items())}
    return ClassificationCounts(labels, true_labels, n, correct, abstained, MappingProxyType(per_label),
                                MappingProxyType(frozen))


def _label(c: ClassificationCounts, label: str) -> LabelCounts:
    return c.per_label.get(label, LabelCounts(label, 0, 0, 0))


def precision(c: ClassificationCounts, label: str) -> Rate:
    """``tp / (tp + fp)`` of ``label``; ``no_prediction`` when it was never predicted (also for unknown labels)."""
    lc = _label(c, label)
    return Rate.of(lc.tp, lc.predicted, if_zero="no_prediction", reason=f"{label!r} was never predicted",
                   name="precision")


def recall(c: ClassificationCounts, label: str) -> Rate:
    """``tp / (tp + fn)`` of ``label`` (abstentions are misses); ``no_reference`` when no document has it."""
    lc = _label(c, label)
    return Rate.of(lc.tp, lc.support, if_zero="no_reference", reason=f"no document is labelled {label!r}",
                   name="recall")


def f1(c: ClassificationCounts, label: str) -> Rate:
    """``2 tp / (2 tp + fp + fn)`` of ``label``; undefined (``no_reference``) only when ``label`` occurs on neither
    side. Equal to ``2 P R / (P + R)`` whenever P and R both exist and are not both 0."""
    lc = _label(c, label)
    return Rate.of(2 * lc.tp, 2 * lc.tp + lc.fp + lc.fn, if_zero="no_reference",
                   reason=f"{label!r} is neither labelled nor predicted", name="f1")


def accuracy(c: ClassificationCounts) -> Rate:
    """``correct / n`` (abstentions count as errors); ``no_reference`` for no pairs."""
    return Rate.of(c.correct, c.n, if_zero="no_reference", reason="no labelled documents", name="accuracy")


def coverage(c: ClassificationCounts) -> Rate:
    """``(n - abstained) / n``, the share of documents the classifier answered; ``no_reference`` for no pairs."""
    return Rate.of(c.n - c.abstained, c.n, if_zero="no_reference", reason="no labelled documents", name="coverage")


def selective_accuracy(c: ClassificationCounts) -> Rate:
    """``correct / (n - abstained)``, accuracy over answered documents; ``no_prediction`` when all abstained."""
    return Rate.of(c.correct, c.n - c.abstained, if_zero="no_prediction",
                   reason="the classifier abstained on every document", name="selective_accuracy")


@dataclass(frozen=True)
class MacroF1:
    """The macro-averaged F1 over the true labels.

    Attributes:
        value: ``(1/|T|) Σ_{L in T} F1(L)``, or None when ``T`` is empty.
        labels: ``T``, the labels averaged (sorted).
        state, reason: ``"ok"``/None, or ``"no_reference"`` with the reason.
    """

    value: float | None
    labels: tuple[str, ...]
    state: str = "ok"
    reason: str | None = None


def macro_f1(c: ClassificationCounts) -> MacroF1:
    """Macro F1 over the labels that occur in the truth (see the module docstring).

    Worked example (the pairs of `tally`): F1(en) = 2/(2+1+2) = 0.4, F1(de) = 2/(2+0+1) = 2/3; es is only
    predicted, so T = {de, en} and macro F1 = (0.4 + 2/3)/2 = 8/15.
    """
    if not c.true_labels:
        return MacroF1(None, (), "no_reference", "no labelled documents")
    vals = [f1(c, lab).value for lab in c.true_labels]
    return MacroF1(sum(vals) / len(vals), c.true_labels)  # type: ignore[arg-type]  # defined: support > 0


@dataclass(frozen=True, order=True)
class Confusion:
    """One off-diagonal cell of the confusion matrix: ``count`` documents of label ``true`` predicted ``predicted``
    (``None`` = abstained)."""

    count: int
    true: str
    predicted: str | None


def top_confusions(c: ClassificationCounts, k: int = 10, *, include_abstentions: bool = False) -> list[Confusion]:
    """The ``k`` most frequent errors ``true -> predicted`` (``predicted != true``), by count descending, ties by
    ``(true, predicted)`` ascending. Abstentions are left out unless ``include_abstentions``.

    Raises:
        ValueError: ``k < 0``.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    cells = []
    for t, row in c.confusion.items():
        for p, count in row.items():
            if p == t or (p == ABSTAIN_COLUMN and not include_abstentions):
                continue
            cells.append(Confusion(count, t, None if p == ABSTAIN_COLUMN else p))
    cells.sort(key=lambda x: (-x.count, x.true, x.predicted or ""))
    return cells[:k]


def confusion_table(c: ClassificationCounts) -> dict[str, Any]:
    """The confusion matrix as JSON: ``{"rows": true labels (sorted), "columns": labels + [ABSTAIN_COLUMN],
    "counts": list of rows of ints}``; ``counts[i][j]`` = documents of ``rows[i]`` predicted ``columns[j]``.
    Rows are the true labels only; a label only predicted has a column but no row."""
    cols = list(c.labels) + [ABSTAIN_COLUMN]
    return {"rows": list(c.true_labels), "columns": cols,
            "counts": [[c.confusion[t].get(p, 0) for p in cols] for t in c.true_labels]}


@dataclass(frozen=True)
class F1Intervals:
    """Percentile-bootstrap intervals for per-label F1 and macro F1 (documents resampled).

    Attributes:
        per_label: label -> ``(low, high)``, or None where a resample leaves F1 undefined.
        macro: ``(low, high)`` of macro F1 over the labels true in the *full* sample (a resampled document set that
            misses a label scores F1 = 0 for it: it is still a true label of the corpus), or None.
        method: description printed next to the interval.
    """

    per_label: Mapping[str, tuple[float, float] | None]
    macro: tuple[float, float] | None
    method: str


def bootstrap_f1(pairs: Sequence[tuple[str, str | None]], *, seed: int, n_resamples: int = 1000,
                 confidence: float = 0.95) -> F1Intervals | None:
    """Percentile bootstrap over documents (Efron & Tibshirani 1993, ch. 13) of F1 per label and of macro F1.

    Each resample draws ``len(pairs)`` documents with replacement (``numpy.random.default_rng(seed)``), recounts
    tp, fp, fn per label and computes ``F1 = 2tp / (2tp + fp + fn)``; bounds are the ``(1-confidence)/2`` and
    ``(1+confidence)/2`` quantiles. A label whose F1 is undefined in some resample (it occurs on neither side)
    gets no interval.

    Returns:
        `F1Intervals`, or None with fewer than 2 pairs.

    Raises:
        ValueError: ``n_resamples < 1`` or ``confidence`` outside (0, 1); bad labels as in `tally`.
    """
    import numpy as np

    if n_resamples < 1 or not 0 < confidence < 1:
        raise ValueError("n_resamples must be >= 1 and confidence in (0, 1)")
    c = tally(pairs)
    if c.n < 2:
        return None
    index = {lab: i for i, lab in enumerate(c.labels)}
    k = len(c.labels)
    t_idx = np.array([index[t] for t, _ in pairs])
    p_idx = np.array([k if p is None else index[p] for _, p in pairs])  # k = abstained
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, c.n, size=(n_resamples, c.n))
    f1s = np.zeros((n_resamples, k))
    defined = np.ones((n_resamples, k), dtype=bool)
    for r in range(n_resamples):
        t, p = t_idx[draws[r]], p_idx[draws[r]]
        hit = t == p
        tp = np.bincount(t[hit], minlength=k + 1)[:k]
        support = np.bincount(t, minlength=k + 1)[:k]
        predicted = np.bincount(p, minlength=k + 1)[:k]
        den = support + predicted  # 2tp + fp + fn
        defined[r] = den > 0
        f1s[r] = np.divide(2 * tp, den, out=np.zeros(k), where=den > 0)
    alpha = (1 - confidence) / 2
    per_label: dict[str, tuple[float, float] | None] = {}
    for lab, i in index.items():
        if defined[:, i].all():
            lo, hi = np.quantile(f1s[:, i], [alpha, 1 - alpha])
            per_label[lab] = (float(lo), float(hi))
        else:
            per_label[lab] = None
    true_cols = [index[lab] for lab in c.true_labels]
    macro = None
    if true_cols:
        lo, hi = np.quantile(f1s[:, true_cols].mean(axis=1), [alpha, 1 - alpha])
        macro = (float(lo), float(hi))
    method = f"bootstrap-percentile(f1,docs,n={n_resamples},seed={seed},{confidence:g})"
    return F1Intervals(MappingProxyType(per_label), macro, method)
