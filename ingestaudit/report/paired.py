"""Paired tests for pipeline bake-offs: is the difference between two pipelines on the same documents real?

For every class (and ``__all__``), metric and label, and every pair of pipelines (in report order), the per-document
values of the documents where both pipelines are ``ok`` form pairs; the two-sided Wilcoxon signed-rank test
(Wilcoxon 1945; ``scipy.stats.wilcoxon``, ``zero_method="wilcox"``: zero differences are dropped, exact
distribution for small samples) says whether their median difference is zero. Documents, not characters, are the
sampling unit, as for every interval in the report.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from itertools import combinations

from ingestaudit.report.schema import ALL_CLASSES, MeasurementRow, PairedTest

ALPHA = 0.05  # the significance level of the `significant` flag


def _wilcoxon(diffs: list[float]) -> tuple[float, float]:
    from scipy.stats import wilcoxon

    if all(d == 0 for d in diffs):  # no evidence of any difference; scipy would divide by zero
        return 0.0, 1.0
    res = wilcoxon(diffs, zero_method="wilcox", alternative="two-sided")
    return float(res.statistic), float(res.pvalue)


def paired_tests(rows: Sequence[MeasurementRow], pipeline_order: Sequence[str]) -> list[PairedTest]:
    """Wilcoxon signed-rank tests between every pair of pipelines, per class and overall, metric and label.

    Differences are ``pipeline_b - pipeline_a``. Groups with fewer than 2 paired documents get no test.
    """
    values: dict[tuple[str, str, str, str], dict[str, float]] = defaultdict(dict)
    for r in rows:
        if r.state == "ok" and r.value is not None:
            for cls in (r.doc_class, ALL_CLASSES):
                values[(cls, r.metric, r.label, r.pipeline)][r.item] = r.value
    keys = sorted({k[:3] for k in values}, key=lambda k: (k[0] == ALL_CLASSES, k))
    out = []
    for cls, metric, label in keys:
        for a, b in combinations(pipeline_order, 2):
            va, vb = values.get((cls, metric, label, a), {}), values.get((cls, metric, label, b), {})
            docs = sorted(va.keys() & vb.keys())
            if len(docs) < 2:
                continue
            diffs = [vb[d] - va[d] for d in docs]
            stat, p = _wilcoxon(diffs)
            ordered = sorted(diffs)
            mid = len(ordered) // 2
            median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
            out.append(PairedTest(doc_class=cls, metric=metric, label=label, pipeline_a=a, pipeline_b=b,
                                  n_pairs=len(docs), mean_diff=sum(diffs) / len(diffs), median_diff=median,
                                  statistic=stat, p_value=p, significant=p < ALPHA,
                                  method=f"wilcoxon signed-rank, two-sided, zero_method=wilcox, alpha={ALPHA}"))
    return out
