"""Stratified aggregation of measurement rows into summary rows (DESIGN.md, "Documents are the sampling unit").

For each pipeline x class (and ``__all__``) x metric x label, over the rows in state ``ok``:

* ``micro = Σ numerator / Σ denominator`` (None when any ok row has no counts, or ``Σ denominator == 0``);
* ``macro = (1/n) Σ value`` (mean over documents);
* a confidence interval chosen by the metric's declaration (`MetricSpec.ci`): Wilson on the micro counts for metrics
  declared ``ci="wilson"`` with integer counts (one proportion of independent items: a hit per question, a flag per
  document), else a percentile bootstrap over the items (documents, or questions for retrieval rows: each item's
  numerator and denominator resampled together) of the micro ratio (or of the mean when there are no counts),
  seeded from the run seed and the row's class, metric and label (`ingestaudit.report.stats.row_seed`; never the
  pipeline's name: identical data in two pipelines gives identical intervals) so a row's interval does not depend
  on which other rows exist; the
  method, with the resampled unit, is the row's ``ci_method``;
* ``states``: the count of rows in every state, zeros included.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from ingestaudit.measurement import Score, State
from ingestaudit.auditors import metric_catalog as specs
from ingestaudit.metrics.intervals import Interval, bootstrap_ratio, wilson
from ingestaudit.report.schema import ALL_CLASSES, MeasurementRow, SummaryRow
from ingestaudit.report.stats import row_seed


def _interval_of(metric: str, nums: Sequence[float] | None, dens: Sequence[float] | None, values: Sequence[float],
                 k: float | None, n: float | None, questions: bool, *, seed: int, n_resamples: int,
                 confidence: float) -> Interval | None:
    """The interval of one group of ok rows from what `_Group` keeps: the per-item numerators and denominators (None
    when some row has no counts), the values, the count sums ``k``/``n``, and whether every item is a question."""
    try:
        kind = specs.get(metric).ci
    except KeyError:
        kind = "bootstrap"
    has_counts = nums is not None
    if kind == "wilson" and has_counts:
        if float(k).is_integer() and float(n).is_integer() and 0 <= k <= n:  # type: ignore[arg-type]
            return wilson(int(k), int(n), confidence)  # type: ignore[arg-type]
    unit = "questions" if questions else "docs"  # the sampling unit
    if has_counts:  # each item's numerator and denominator are resampled together
        return bootstrap_ratio(nums, dens, seed=seed, n_resamples=n_resamples,  # type: ignore[arg-type]
                               confidence=confidence, unit=unit)
    return bootstrap_ratio(values, None, seed=seed, n_resamples=n_resamples, confidence=confidence, unit=unit)


def _interval(metric: str, rows: list[MeasurementRow], *, seed: int, n_resamples: int,
              confidence: float) -> Interval | None:
    has_counts = all(r.numerator is not None and r.denominator is not None for r in rows)
    nums = [r.numerator for r in rows] if has_counts else None
    dens = [r.denominator for r in rows] if has_counts else None
    return _interval_of(metric, nums, dens, [r.value for r in rows],  # type: ignore[misc]
                        sum(nums) if nums is not None else None, sum(dens) if dens is not None else None,
                        bool(rows) and all(r.item_kind == "question" for r in rows), seed=seed,
                        n_resamples=n_resamples, confidence=confidence)


class _Group:
    """One pipeline x class x metric x label, fed rows in canonical order (`add`): the state counts, the sums in
    row order (the same floats as summing a list of the rows), and the per-item values, numerators and
    denominators of the ok rows that the bootstrap resamples (16-24 bytes per ok row, nothing else per row).

    The ``__all__`` group of a pipeline x metric x label keeps only each ok row's class index (``classes``) and
    rebuilds its arrays from its class groups (`arrays`), so a row's numbers are stored once."""

    __slots__ = ("stage", "metric", "label", "states", "n", "vsum", "nsum", "dsum", "counts", "questions",
                 "values", "nums", "dens", "classes")

    def __init__(self, stage: str, metric: str, label: str, *, keep: bool) -> None:
        self.stage, self.metric, self.label = stage, metric, label
        self.states = {s.value: 0 for s in State}
        self.n = 0
        self.vsum: float = 0
        self.nsum: float = 0
        self.dsum: float = 0
        self.counts = True  # every ok row so far has a numerator and a denominator
        self.questions = True  # every ok row so far is a question
        self.values = array("d") if keep else None
        self.nums = array("d") if keep else None
        self.dens = array("d") if keep else None
        self.classes = None if keep else array("H")

    def add(self, state: str, value: Any, num: Any, den: Any, question: bool, cls: int = 0) -> None:
        self.states[state] += 1
        if state != "ok":
            return
        self.n += 1
        self.vsum += value
        self.questions = self.questions and question
        if self.counts and num is not None and den is not None:
            self.nsum += num
            self.dsum += den
            if self.nums is not None:
                self.nums.append(num)
                self.dens.append(den)  # type: ignore[union-attr]
        elif self.counts:
            self.counts = False
            self.nums = self.dens = None
        if self.values is not None:
            self.values.append(value)
        else:
            self.classes.append(cls)  # type: ignore[union-attr]

    def arrays(self, parts: Sequence[_Group]) -> tuple[Any, Any, Any]:
        """(values, numerators or None, denominators or None) of the ok rows, in canonical order."""
        import numpy as np

        if self.values is not None:
            return self.values, (self.nums if self.counts else None), (self.dens if self.counts else None)
        ids = np.frombuffer(self.classes, dtype=np.uint16) if len(self.classes) else np.zeros(0, np.uint16)
        out = [np.empty(self.n), np.empty(self.n) if self.counts else None, np.empty(self.n) if self.counts else None]
        for c, part in enumerate(parts):
            if part is None or not part.n:
                continue
            where = ids == c
            out[0][where] = np.frombuffer(part.values, dtype=np.float64)  # type: ignore[index]
            if self.counts:
                out[1][where] = np.frombuffer(part.nums, dtype=np.float64)  # type: ignore[index]
                out[2][where] = np.frombuffer(part.dens, dtype=np.float64)  # type: ignore[index]
        return out[0], out[1], out[2]

    def row(self, pipeline: str, doc_class: str, parts: Sequence[_Group], *, seed: int, n_resamples: int,
            confidence: float) -> SummaryRow:
        micro = macro = num = den = None
        ci = None
        if self.n:
            macro = self.vsum / self.n
            if self.counts:
                num, den = self.nsum, self.dsum
                micro = num / den if den else None
            values, nums, dens = self.arrays(parts)
            ci = _interval_of(self.metric, nums, dens, values, num, den, self.questions,
                              seed=row_seed(seed, doc_class, self.metric, self.label),  # not the pipeline
                              n_resamples=n_resamples, confidence=confidence)
        return SummaryRow(
            pipeline=pipeline, doc_class=doc_class, stage=self.stage, metric=self.metric, label=self.label,
            n_docs=self.n, micro=micro, macro=macro,
            ci_low=ci.low if ci else None, ci_high=ci.high if ci else None,
            ci_method=ci.method if ci else ("none (no ok rows)" if not self.n else "none (too few documents)"),
            states=dict(self.states), numerator=num, denominator=den)


def summarize_group(rows: Sequence[MeasurementRow], *, pipeline: str, doc_class: str, seed: int,
                    n_resamples: int = 1000, confidence: float = 0.95) -> SummaryRow:
    """One summary row over ``rows`` (all of one pipeline, metric and label).

    Worked example: two ok rows with CER 10/100 and 30/200 give micro 40/300 = 0.1333 and macro 0.125.
    """
    first = rows[0]
    g = _Group(first.stage, first.metric, first.label, keep=True)
    for r in rows:
        g.add(r.state, r.value, r.numerator, r.denominator, r.item_kind == "question")
    return g.row(pipeline, doc_class, (), seed=seed, n_resamples=n_resamples, confidence=confidence)


def corpus_summary_row(score: Score, *, pipeline: str, doc_class: str, n_docs: int,
                       unreached: dict[str, int] | None = None) -> SummaryRow:
    """A summary row for a corpus-level value (``level="corpus"``): ``micro`` is the value, ``macro`` None; an
    interval is taken from ``score.detail["ci"]`` (``{"low", "high", "method"}``) when the auditor computed one.

    ``states`` counts items, as for document rows: the ``n_docs`` items behind the value under the value's state
    (once when ``n_docs`` is 0 and nothing else is counted, so an undefined value over nothing keeps its state), and
    ``unreached`` (``state -> count``: items the stage applies to that never reached it, e.g. documents without
    parser output) under their own states. Worked example: a rate over 4 parsed documents of a class of 10 whose
    other 6 have no output: ``n_docs`` 4, ``states`` ``{"ok": 4, "no_prediction": 6, ...}``. Without ``unreached``
    the score's own ``detail["unreached"]`` is used (an auditor whose rows each leave out different items, e.g. the
    index audit's queries with an unusable answer)."""
    if unreached is None:
        unreached = score.detail.get("unreached")
    states = {s.value: 0 for s in State}
    states[score.state.value] = n_docs
    for state, count in (unreached or {}).items():
        states[State(state).value] += int(count)
    if not any(states.values()):
        states[score.state.value] = 1
    ci = score.detail.get("ci") or {}
    return SummaryRow(pipeline=pipeline, doc_class=doc_class, stage=score.metric.split(".", 1)[0], metric=score.metric,
                      label=score.label, n_docs=n_docs, micro=score.value, macro=None, ci_low=ci.get("low"),
                      ci_high=ci.get("high"), ci_method=ci.get("method", "none (corpus-level value)"),
                      states=states, level="corpus", numerator=score.numerator, denominator=score.denominator)


class Summarizer:
    """Summary rows computed in one streaming pass over the rows in canonical order (`add`, or `add_store` for a
    measurement store), holding per group only the state counts, the sums and the ok rows' numbers (`_Group`).

    The result is the same floats as `summarize` of the same rows in the same order (the sums run row by row in
    that order, the bootstrap resamples the same arrays)."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str, str, str], _Group] = {}
        self.classes: dict[str, int] = {}
        self.by_class: dict[tuple[str, str, str], dict[int, _Group]] = {}

    def add(self, pipeline: str, doc_class: str, stage: str, metric: str, label: str, state: str, value: Any,
            num: Any, den: Any, item_kind: str) -> None:
        """One row."""
        key = (pipeline, doc_class, metric, label)
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = _Group(stage, metric, label, keep=True)
            cls = self.classes.setdefault(doc_class, len(self.classes))
            self.by_class.setdefault((pipeline, metric, label), {})[cls] = g
        all_key = (pipeline, ALL_CLASSES, metric, label)
        a = self.groups.get(all_key)
        if a is None:
            a = self.groups[all_key] = _Group(stage, metric, label, keep=False)
        question = item_kind == "question"
        g.add(state, value, num, den, question)
        a.add(state, value, num, den, question, self.classes[doc_class])

    def add_store(self, path: Any) -> None:
        """Every row of a measurement store (`ingestaudit.store`), in file order; ``detail`` is never read."""
        from ingestaudit.store import iter_batches

        cols = ("pipeline", "class", "stage", "metric", "label", "state", "value", "numerator", "denominator",
                "item_kind")
        for batch in iter_batches(path, cols):
            for row in zip(*(batch.column(i).to_pylist() for i in range(len(cols)))):
                self.add(*row)

    def rows(self, pipeline_order: Sequence[str], *, seed: int, n_resamples: int = 1000, confidence: float = 0.95,
             extra: Sequence[SummaryRow] = ()) -> list[SummaryRow]:
        """The summary rows (as `summarize` orders them), ``extra`` corpus-level rows merged in."""
        rank = {p: i for i, p in enumerate(pipeline_order)}

        def order(r: SummaryRow) -> tuple:
            return (rank.get(r.pipeline, len(rank)), r.pipeline, r.doc_class == ALL_CLASSES, r.doc_class, r.metric,
                    r.label)

        out = []
        for (pipeline, cls, metric, label), g in self.groups.items():
            parts: list[Any] = []
            if cls == ALL_CLASSES:
                by = self.by_class.get((pipeline, metric, label), {})
                parts = [by.get(i) for i in range(len(self.classes))]
            out.append(g.row(pipeline, cls, parts, seed=seed, n_resamples=n_resamples, confidence=confidence))
        out += extra
        return sorted(out, key=order)


def summarize(rows: Iterable[MeasurementRow], pipeline_order: Sequence[str], *, seed: int, n_resamples: int = 1000,
              confidence: float = 0.95, extra: Sequence[SummaryRow] = ()) -> list[SummaryRow]:
    """Summary rows for every pipeline x class (sorted, then ``__all__``) x metric x label.

    Args:
        rows: measurement rows of the run, in canonical order (the bootstrap resamples them in this order).
        pipeline_order: pipelines in the order they were asked for; the summary keeps it.
        extra: corpus-level rows computed by corpus auditors, merged into the same order.
    """
    acc = Summarizer()
    for r in rows:
        acc.add(r.pipeline, r.doc_class, r.stage, r.metric, r.label, r.state, r.value, r.numerator, r.denominator,
                r.item_kind)
    return acc.rows(pipeline_order, seed=seed, n_resamples=n_resamples, confidence=confidence, extra=extra)
