"""Paired tests for pipeline bake-offs: is the difference between two pipelines on the same items real?

Tests run on each stage's key metric (the headline's, `ingestaudit.report.tables.choose_keys`), per class and
``__all__``, for every pair of pipelines (report order), on the items both pipelines measured (state ``ok``):

* micro rows (every paired item carries counts): the exact two-sided sign test on the per-item values;
* macro rows: the two-sided Wilcoxon signed-rank test (``zero_method="wilcox"``) on the per-item differences;

with the difference of the headline value (``b - a``) and its paired bootstrap interval
(`ingestaudit.report.stats`). All tests of a report form one family: Tarone's rule leaves out the tests that cannot
reach ``alpha / K`` whatever the data (too few items differ), and Holm's correction runs over the rest;
``significant`` means Holm-adjusted p < alpha (0.05). A test on so few pairs that no outcome could reach the
family's level is ``underpowered``: "no difference found" there means "too few items to tell".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from itertools import combinations

from ingestaudit.metrics.significance import min_attainable_p
from ingestaudit.report.schema import ALL_CLASSES, MeasurementRow, PairedTest
from ingestaudit.report.stats import (ALPHA, Pairs, compare_pairs, family_adjust, pairs_of, row_seed,
                                      underpowered)
from ingestaudit.report.tables import choose_keys


def _pairs(va: dict[str, MeasurementRow], vb: dict[str, MeasurementRow]) -> Pairs:
    items = sorted(va.keys() & vb.keys())
    return pairs_of(items, [va[i] for i in items], [vb[i] for i in items])


def paired_tests(rows: Sequence[MeasurementRow], pipeline_order: Sequence[str], *, seed: int = 0,
                 n_resamples: int = 1000, confidence: float = 0.95, alpha: float = ALPHA) -> list[PairedTest]:
    """Paired tests between every two pipelines on each stage's key metric, per class and overall (see the module
    docstring). Differences are ``pipeline_b - pipeline_a``; groups with fewer than 2 paired items get no test."""
    if len(pipeline_order) < 2:
        return []
    keys = set(choose_keys({(r.metric, r.label) for r in rows if r.state == "ok"
                            and not r.metric.startswith("retrieval.outcome@")}).values())
    values: dict[tuple[str, str, str, str], dict[str, MeasurementRow]] = defaultdict(dict)
    for r in rows:
        if r.state == "ok" and r.value is not None and (r.metric, r.label) in keys:
            for cls in (r.doc_class, ALL_CLASSES):
                values[(cls, r.metric, r.label, r.pipeline)][r.item] = r
    groups = sorted({k[:3] for k in values}, key=lambda k: (k[0] == ALL_CLASSES, k))
    found = []
    copies: list[tuple[PairedTest, int]] = []  # (an __all__ test, the index of the class test on the same items)
    seen: dict[tuple[str, str, str, str, frozenset[str]], int] = {}
    for cls, metric, label in groups:
        for a, b in combinations(pipeline_order, 2):
            pairs = _pairs(values.get((cls, metric, label, a), {}), values.get((cls, metric, label, b), {}))
            if pairs.n < 2:
                continue
            key = (metric, label, a, b, frozenset(pairs.items))
            if cls == ALL_CLASSES and key in seen:  # the same items as one class's test: the same test, once in
                t = found[seen[key]][0]              # the family, reported under both names
                copies.append((t.model_copy(update={"doc_class": ALL_CLASSES}), seen[key]))
                continue
            seen[key] = len(found)
            stat = compare_pairs(pairs, seed=row_seed(seed, a, b, cls, metric, label), n_resamples=n_resamples,
                                 confidence=confidence)
            diffs = sorted(y - x for x, y in zip(pairs.a, pairs.b))
            mid = len(diffs) // 2
            median = diffs[mid] if len(diffs) % 2 else (diffs[mid - 1] + diffs[mid]) / 2
            found.append((PairedTest(doc_class=cls, metric=metric, label=label, pipeline_a=a, pipeline_b=b,
                                     n_pairs=pairs.n, mean_diff=sum(diffs) / len(diffs), median_diff=median,
                                     statistic=stat.statistic, p_value=stat.p_value, significant=False,
                                     method=f"{stat.method}; Holm over the family of tests that can reach "
                                            f"alpha/K (Tarone), alpha={alpha}",
                                     diff=stat.diff, diff_low=stat.low, diff_high=stat.high), stat.moved))
    k, adjusted = family_adjust([t.p_value for t, _ in found], [min_attainable_p(m) for _, m in found], alpha)
    def adjusted_copy(t: PairedTest, p_holm: float | None) -> PairedTest:
        return t.model_copy(update={"p_holm": p_holm, "significant": p_holm is not None and p_holm < alpha,
                                    "underpowered": underpowered(t.n_pairs, k, alpha)})

    out = [adjusted_copy(t, p_holm) for (t, _), p_holm in zip(found, adjusted)]
    out += [adjusted_copy(t, adjusted[i]) for t, i in copies]
    return out
