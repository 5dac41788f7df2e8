"""Stratified aggregation of measurement rows into summary rows (DESIGN.md, "Documents are the sampling unit").

For each pipeline x class (and ``__all__``) x metric x label, over the rows in state ``ok``:

* ``micro = Σ numerator / Σ denominator`` (None when any ok row has no counts, or ``Σ denominator == 0``);
* ``macro = (1/n) Σ value`` (mean over documents);
* a confidence interval: Wilson on the micro counts for metrics declared ``ci="wilson"`` with integer counts, else a
  percentile bootstrap over documents of the micro ratio (or of the mean when there are no counts), seeded from the
  run seed and the row's key so a row's interval does not depend on which other rows exist;
* ``states``: the count of rows in every state, zeros included.
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Iterable, Sequence

from ingestaudit.measurement import Score, State
from ingestaudit.metrics import specs
from ingestaudit.metrics.intervals import Interval, bootstrap_ratio, wilson
from ingestaudit.report.schema import ALL_CLASSES, MeasurementRow, SummaryRow


def _interval(metric: str, rows: list[MeasurementRow], *, seed: int, n_resamples: int,
              confidence: float) -> Interval | None:
    try:
        kind = specs.get(metric).ci
    except KeyError:
        kind = "bootstrap"
    has_counts = all(r.numerator is not None and r.denominator is not None for r in rows)
    if kind == "wilson" and has_counts:
        k = sum(r.numerator for r in rows)  # type: ignore[misc]
        n = sum(r.denominator for r in rows)  # type: ignore[misc]
        if float(k).is_integer() and float(n).is_integer() and 0 <= k <= n:
            return wilson(int(k), int(n), confidence)
    if has_counts:
        return bootstrap_ratio([r.numerator for r in rows], [r.denominator for r in rows],  # type: ignore[misc]
                               seed=seed, n_resamples=n_resamples, confidence=confidence)
    return bootstrap_ratio([r.value for r in rows], None, seed=seed,  # type: ignore[misc]
                           n_resamples=n_resamples, confidence=confidence)


def summarize_group(rows: Sequence[MeasurementRow], *, pipeline: str, doc_class: str, seed: int,
                    n_resamples: int = 1000, confidence: float = 0.95) -> SummaryRow:
    """One summary row over ``rows`` (all of one pipeline, metric and label).

    Worked example: two ok rows with CER 10/100 and 30/200 give micro 40/300 = 0.1333 and macro 0.125.
    """
    first = rows[0]
    states = {s.value: 0 for s in State}
    for r in rows:
        states[r.state] += 1
    ok = [r for r in rows if r.state == State.OK.value]
    micro = macro = num = den = None
    ci = None
    if ok:
        macro = sum(r.value for r in ok) / len(ok)  # type: ignore[misc]
        if all(r.numerator is not None and r.denominator is not None for r in ok):
            num = sum(r.numerator for r in ok)  # type: ignore[misc]
            den = sum(r.denominator for r in ok)  # type: ignore[misc]
            micro = num / den if den else None
        key = f"{pipeline}\0{doc_class}\0{first.metric}\0{first.label}"
        ci = _interval(first.metric, ok, seed=(seed * 1_000_003 + zlib.crc32(key.encode())) % 2**32,
                       n_resamples=n_resamples, confidence=confidence)
    return SummaryRow(
        pipeline=pipeline, doc_class=doc_class, stage=first.stage, metric=first.metric, label=first.label,
        n_docs=len(ok), micro=micro, macro=macro,
        ci_low=ci.low if ci else None, ci_high=ci.high if ci else None,
        ci_method=ci.method if ci else ("none (no ok rows)" if not ok else "none (too few documents)"),
        states=states, numerator=num, denominator=den)


def corpus_summary_row(score: Score, *, pipeline: str, doc_class: str, n_docs: int) -> SummaryRow:
    """A summary row for a corpus-level value (``level="corpus"``): ``micro`` is the value, ``macro`` None; an
    interval is taken from ``score.detail["ci"]`` (``{"low", "high", "method"}``) when the auditor computed one."""
    states = {s.value: 0 for s in State}
    states[score.state.value] = 1
    ci = score.detail.get("ci") or {}
    return SummaryRow(pipeline=pipeline, doc_class=doc_class, stage=score.metric.split(".", 1)[0], metric=score.metric,
                      label=score.label, n_docs=n_docs, micro=score.value, macro=None, ci_low=ci.get("low"),
                      ci_high=ci.get("high"), ci_method=ci.get("method", "none (corpus-level value)"),
                      states=states, level="corpus", numerator=score.numerator, denominator=score.denominator)


def summarize(rows: Iterable[MeasurementRow], pipeline_order: Sequence[str], *, seed: int, n_resamples: int = 1000,
              confidence: float = 0.95, extra: Sequence[SummaryRow] = ()) -> list[SummaryRow]:
    """Summary rows for every pipeline x class (sorted, then ``__all__``) x metric x label.

    Args:
        rows: measurement rows of the run.
        pipeline_order: pipelines in the order they were asked for; the summary keeps it.
        extra: corpus-level rows computed by corpus auditors, merged into the same order.
    """
    groups: dict[tuple[str, str, str, str], list[MeasurementRow]] = defaultdict(list)
    for r in rows:
        groups[(r.pipeline, r.doc_class, r.metric, r.label)].append(r)
        groups[(r.pipeline, ALL_CLASSES, r.metric, r.label)].append(r)
    rank = {p: i for i, p in enumerate(pipeline_order)}

    def order(key: tuple[str, str, str, str]) -> tuple:
        pipeline, cls, metric, label = key
        return (rank.get(pipeline, len(rank)), pipeline, cls == ALL_CLASSES, cls, metric, label)

    out = [summarize_group(groups[k], pipeline=k[0], doc_class=k[1], seed=seed, n_resamples=n_resamples,
                           confidence=confidence) for k in groups]
    out += extra
    return sorted(out, key=lambda r: order((r.pipeline, r.doc_class, r.metric, r.label)))
