"""Paired tests for pipeline bake-offs: is the difference between two pipelines on the same items real, and which
way does it go?

Tests run on each stage's key metric, the headline's (`ingestaudit.report.tables.headline_keys` of the summary;
a key that is a corpus-level value has no items to pair and so no test), per class and ``__all__``, between the
best pipeline of that class and metric and each other pipeline (`pairs_against_best`: ``P - 1`` tests for ``P``
pipelines, not one per pair of pipelines, whose ``P (P - 1) / 2`` made 80 pipelines 3.7 MB of tests; issue 30), on
the items both pipelines measured (state ``ok``), with the same statistics as the regression gate
(`ingestaudit.report.stats`), made two-sided because a bake-off fixes no direction in advance:

* micro rows (every paired item carries counts): the paired bootstrap over items of the micro value's worsening,
  ``p = min(1, 2 * min(p_worse, p_better))``;
* macro rows: the Wilcoxon signed-rank test on the per-item worsenings, two-sided the same way;

with the difference of the headline value (``b - a``) and its paired bootstrap interval. All tests of a report form
one family: Tarone's rule leaves out the tests that cannot reach ``alpha / K`` whatever the data, and Holm's
correction runs over the rest; ``significant`` means Holm-adjusted p < alpha (0.05). ``better`` names the pipeline
that is better when the test is significant **and** its side (the smaller one-sided p) agrees with the headline
difference on the paired items under the metric's direction, else ``""``; the headline's ★ goes to a pipeline that
is ``better`` than every other one, which is what the tests against the best answer. A test on so few pairs that no
outcome could reach the family's level is ``underpowered``: "no difference found" there means "too few items to
tell".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from ingestaudit.report.schema import ALL_CLASSES, MeasurementRow, PairedTest
from ingestaudit.report.stats import (ALPHA, Pairs, attainable_p, compare_pairs, family_adjust, family_size,
                                      orientation_of, pairs_of, resamples_for_family, row_seed, underpowered)
from ingestaudit.report.tables import choose_keys


def _pairs(va: dict[str, MeasurementRow], vb: dict[str, MeasurementRow]) -> Pairs:
    items = sorted(va.keys() & vb.keys())
    return pairs_of(items, [va[i] for i in items], [vb[i] for i in items])


PAIRING = "the class's best pipeline against each other one"
"""How the pairs of a report's tests are chosen (`pairs_against_best`), in each test's ``method`` and in the views."""


def pairs_against_best(order: Sequence[str], badness: Mapping[str, float]) -> list[tuple[str, str]]:
    """The pipeline pairs tested in one group (a class x metric): the best pipeline against each other one.

    Args:
        order: the pipelines in report order.
        badness: pipeline -> its value in the group over its own items, oriented so that smaller is better
            (`ingestaudit.report.stats.Orientation.badness`); a pipeline without values is left out.

    Returns:
        ``(a, b)`` pairs in report order within each pair, one per pipeline of ``badness`` other than the best (the
        smallest badness; the first in report order on a tie): ``P - 1`` pairs for ``P`` pipelines, none for fewer
        than two.
    """
    present = [p for p in order if p in badness]
    if len(present) < 2:
        return []
    best = min(present, key=lambda p: badness[p])  # min keeps the first of equal values: report order
    at = present.index(best)
    return [(p, best) if i < at else (best, p) for i, p in enumerate(present) if p != best]


def paired_tests(rows: Sequence[MeasurementRow], pipeline_order: Sequence[str], *, seed: int = 0,
                 n_resamples: int = 1000, confidence: float = 0.95, alpha: float = ALPHA,
                 keys: Iterable[tuple[str, str]] | None = None) -> list[PairedTest]:
    """Paired tests between the best pipeline and each other one on each stage's key metric, per class and overall
    (see the module docstring; `pairs_against_best`, the best by its headline value over its own items: micro,
    else the mean). Differences are ``pipeline_b - pipeline_a``; pairs with fewer than 2 paired items get no test.

    Args:
        keys: the ``(metric, label)`` pairs to test, normally the headline's keys
            (`ingestaudit.report.tables.headline_keys` of the report's summary); default: each stage's key among
            the rows' own metrics.
    """
    if len(pipeline_order) < 2:
        return []
    if keys is None:
        keys = choose_keys({(r.metric, r.label) for r in rows if r.state == "ok"
                            and not r.metric.startswith("retrieval.outcome@")}).values()
    wanted = set(keys)
    values: dict[tuple[str, str, str, str], dict[str, MeasurementRow]] = defaultdict(dict)
    for r in rows:
        if r.state == "ok" and r.value is not None and (r.metric, r.label) in wanted:
            for cls in (r.doc_class, ALL_CLASSES):
                values[(cls, r.metric, r.label, r.pipeline)][r.item] = r
    groups = sorted({k[:3] for k in values}, key=lambda k: (k[0] == ALL_CLASSES, k))
    todo: list[tuple[str, str, str, str, str, Pairs]] = []
    copies: list[tuple[tuple[str, str, str, str, str], int]] = []  # an __all__ test on one class's items
    seen: dict[tuple[str, str, str, str, frozenset[str]], int] = {}
    for cls, metric, label in groups:
        orient = orientation_of(metric, label)
        own = {p: values[(cls, metric, label, p)] for p in pipeline_order if (cls, metric, label, p) in values}
        badness = {p: orient.badness(pairs_of(list(v), list(v.values()), list(v.values())).value("a"))
                   for p, v in own.items()}  # each pipeline's headline value over its own items
        for a, b in pairs_against_best(pipeline_order, badness):
            pairs = _pairs(values.get((cls, metric, label, a), {}), values.get((cls, metric, label, b), {}))
            if pairs.n < 2:
                continue
            key = (metric, label, a, b, frozenset(pairs.items))
            if cls == ALL_CLASSES and key in seen:  # the same items as one class's test: the same test, once in
                copies.append(((cls, metric, label, a, b), seen[key]))  # the family, reported under both names
                continue
            seen[key] = len(todo)
            todo.append((cls, metric, label, a, b, pairs))
    min_ps = [attainable_p(p.n, p.moved, p.micro, sides=2) for *_, p in todo]
    k = family_size(min_ps, alpha)
    n_test = resamples_for_family(k, alpha / 2, n_resamples)
    found: list[tuple[PairedTest, float | None]] = []  # the test and the worsening of b (None: no direction)
    for cls, metric, label, a, b, pairs in todo:
        orient = orientation_of(metric, label)
        stat = compare_pairs(pairs, orient, seed=row_seed(seed, cls, metric, label), n_resamples=n_resamples,
                             confidence=confidence, test_resamples=n_test, refine_below=alpha / 2)
        diffs = sorted(y - x for x, y in zip(pairs.a, pairs.b))
        mid = len(diffs) // 2
        median = diffs[mid] if len(diffs) % 2 else (diffs[mid - 1] + diffs[mid]) / 2
        statistic = stat.statistic  # Wilcoxon's W+ (rank sum of the items where b is worse): report min(W+, W-)
        if not pairs.micro:
            m = sum(1 for x, y in zip(pairs.a, pairs.b) if orient.badness(y) != orient.badness(x))
            statistic = min(statistic, m * (m + 1) / 2 - statistic)
        side = 0.0 if stat.p_worse == stat.p_better else (1.0 if stat.p_worse < stat.p_better else -1.0)
        agree = stat.worse is not None and stat.worse * side > 0
        method = (f"{stat.method}, two-sided (2 x the smaller one-sided p); Holm over the family of tests that can "
                  f"reach alpha/K (Tarone), alpha={alpha}; {PAIRING}")
        found.append((PairedTest(doc_class=cls, metric=metric, label=label, pipeline_a=a, pipeline_b=b,
                                 n_pairs=pairs.n, mean_diff=sum(diffs) / len(diffs), median_diff=median,
                                 statistic=statistic, p_value=stat.p_two_sided, significant=False,
                                 method=method, diff=stat.diff, diff_low=stat.low, diff_high=stat.high),
                      side if agree else None))
    _, adjusted = family_adjust([t.p_value for t, _ in found], min_ps, alpha)

    def adjusted_copy(t: PairedTest, side: float | None, p_holm: float | None, cls: str | None = None) -> PairedTest:
        significant = p_holm is not None and p_holm < alpha
        better = ""  # no pipeline is better ("": decided; None would mean an older report that did not say)
        if significant and side is not None:
            better = t.pipeline_a if side > 0 else t.pipeline_b  # b worse: a is better
        update = {"p_holm": p_holm, "significant": significant, "better": better,
                  "underpowered": underpowered(t.n_pairs, k, alpha, sides=2)}
        if cls is not None:
            update["doc_class"] = cls
        return t.model_copy(update=update)

    out = [adjusted_copy(t, side, p_holm) for (t, side), p_holm in zip(found, adjusted)]
    out += [adjusted_copy(found[i][0], found[i][1], adjusted[i], ALL_CLASSES) for _, i in copies]
    return out
