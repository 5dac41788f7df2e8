"""Is a difference between two pipelines real? Paired tests over labelled questions, and the sweep curve.

For every class (and ``__all__``) and key retrieval metric, the best pipeline (the highest mean of its per-question
values; the first in report order on a tie) is compared with each other pipeline (`ingestaudit.report.paired.
pairs_against_best`: ``P - 1`` comparisons for ``P`` pipelines, not one per pair of pipelines; issue 30); the
questions both pipelines scored (state ``ok``) form pairs. Two tests per compared pair: the exact two-sided sign test
on the questions where they disagree (ties dropped; `ingestaudit.metrics.significance.sign_test_paired`) and the
Wilcoxon signed-rank test on the per-question values (``scipy.stats.wilcoxon``, ``zero_method="wilcox"``).

The family Holm's step-down correction runs over: every distinct test of the run, i.e. one per key metric x compared
pair of pipelines x set of paired questions. An ``__all__`` test on exactly the questions of one class's test (a corpus
with a single class) is the same test: it is reported under both names (``same_as`` names the class) and enters the
family once. Sign tests and Wilcoxon tests are corrected as two separate families of that size. Raw and adjusted
p-values are both reported, with the smallest p a test on that many pairs can reach (``min_attainable_p``) so an
underpowered comparison is visible as such.

The sweep curve: pipelines named ``<base>/<option>=<value>`` (from ``--sweep``) are grouped by base; per value, the
macro recall@k (largest k: the mean of the per-question values) over questions; the best value; and the smallest
swept value whose recall@k is not significantly worse than the best's (sign test, Holm-adjusted over the group,
alpha 0.05).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ingestaudit.metrics.significance import holm, min_attainable_p, sign_test_paired
from ingestaudit.report.paired import PAIRING, pairs_against_best
from ingestaudit.report.stats import orientation_of
from ingestaudit.report.schema import ALL_CLASSES, MeasurementRow, StageDetail

ALPHA = 0.05


def _per_question(rows: Sequence[MeasurementRow], metric: str) -> dict[tuple[str, str], dict[str, float]]:
    """(pipeline, class) -> question -> value, over ok question rows of ``metric`` (classes and ``__all__``)."""
    out: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for r in rows:
        if r.item_kind == "question" and r.metric == metric and r.label == "" and r.state == "ok":
            out[(r.pipeline, r.doc_class)][r.item] = float(r.value)  # type: ignore[arg-type]
            out[(r.pipeline, ALL_CLASSES)][r.item] = float(r.value)  # type: ignore[arg-type]
    return out


def _wilcoxon(diffs: list[float]) -> float:
    from scipy.stats import wilcoxon

    if all(d == 0 for d in diffs):
        return 1.0
    return float(wilcoxon(diffs, zero_method="wilcox", alternative="two-sided").pvalue)


def key_metrics(ks: Sequence[int]) -> list[str]:
    """The retrieval metrics compared between pipelines: hit@k and recall@k at the largest k, and rr."""
    k = max(ks)
    return [f"retrieval.hit@{k}", f"retrieval.recall@{k}", "retrieval.rr"]


def paired_question_tests(rows: Sequence[MeasurementRow], pipelines: Sequence[str],
                          metrics: Sequence[str]) -> list[dict[str, Any]]:
    """One entry per compared pipeline pair (the class's best against each other pipeline, module docstring) x
    class x metric with at least one paired question: n, wins/losses/ties of B over A, mean difference (B - A),
    sign-test and Wilcoxon p-values, their Holm adjustments over the run's family (module docstring: an ``__all__``
    test on the same questions as a class test is that test, ``same_as`` set), the minimum attainable p, and
    ``significant`` (Holm-adjusted sign test < alpha)."""
    tests: list[dict[str, Any]] = []
    family: list[dict[str, Any]] = []  # the distinct tests, in report order
    for metric in metrics:
        values = _per_question(rows, metric)
        classes = sorted({c for _, c in values}, key=lambda c: (c == ALL_CLASSES, c))
        seen: dict[tuple[str, str, tuple[str, ...]], dict[str, Any]] = {}
        for cls in classes:
            orient = orientation_of(metric)
            own = {p: values[(p, cls)] for p in pipelines if values.get((p, cls))}
            for a, b in pairs_against_best(pipelines, {p: orient.badness(sum(v.values()) / len(v))
                                                       for p, v in own.items()}):
                va, vb = values.get((a, cls), {}), values.get((b, cls), {})
                qs = sorted(va.keys() & vb.keys())
                if not qs:
                    continue
                same = seen.get((a, b, tuple(qs))) if cls == ALL_CLASSES else None
                if same is not None:  # one class holds every paired question: the same test, once in the family
                    tests.append({"copy_of": same, "class": cls})
                    continue
                xa, xb = [va[q] for q in qs], [vb[q] for q in qs]
                sign = sign_test_paired(xa, xb)
                diffs = [y - x for x, y in zip(xa, xb)]
                t = {"class": cls, "metric": metric, "pipeline_a": a, "pipeline_b": b, "n": len(qs),
                     "wins_b": sign.wins, "losses_b": sign.losses, "ties": sign.ties,
                     "mean_diff": sum(diffs) / len(diffs), "sign_p": sign.p_value,
                     "wilcoxon_p": _wilcoxon(diffs) if len(qs) >= 2 else 1.0,
                     "min_attainable_p": min_attainable_p(sign.wins + sign.losses)}
                seen[(a, b, tuple(qs))] = t
                tests.append(t)
                family.append(t)
    for key in ("sign_p", "wilcoxon_p"):
        for t, adj in zip(family, holm([t[key] for t in family])):
            t[key + "_holm"] = adj
    for t in family:
        t["significant"] = t["sign_p_holm"] < ALPHA
        t["underpowered"] = t["min_attainable_p"] >= ALPHA
    return [{**t["copy_of"], "class": t["class"], "same_as": t["copy_of"]["class"]} if "copy_of" in t else t
            for t in tests]  # a copy carries its original's values, adjusted ones included


def sweep_curves(rows: Sequence[MeasurementRow], pipelines: Sequence[str], k: int) -> list[dict[str, Any]]:
    """Per swept base pipeline: recall@k per value, the best value, and the smallest value not significantly worse
    than the best (see the module docstring). Values are compared as numbers when they all parse as numbers."""
    groups: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for name in pipelines:
        base, slash, label = name.rpartition("/")
        if slash and "=" in label and "," not in label:
            option, _, value = label.partition("=")
            groups[(base, option)].append((value, name))
    if not groups:
        return []
    metric = f"retrieval.recall@{k}"
    values = _per_question(rows, metric)
    hits = _per_question(rows, f"retrieval.hit@{k}")
    out = []
    for (base, option), variants in sorted(groups.items()):
        if len(variants) < 2:
            continue
        variants.sort(key=lambda v: _as_number(v[0]))
        per = {name: values.get((name, ALL_CLASSES), {}) for _, name in variants}
        recall = {name: (sum(v.values()) / len(v) if v else None) for name, v in per.items()}
        scored = [(val, name) for val, name in variants if recall[name] is not None]
        if not scored:
            continue
        best_val, best = max(scored, key=lambda v: (recall[v[1]], -_as_number(v[0])))
        others = [(val, name) for val, name in scored if name != best]
        ps = []
        for _, name in others:
            qs = sorted(per[name].keys() & per[best].keys())
            ps.append(sign_test_paired([per[best][q] for q in qs], [per[name][q] for q in qs]).p_value)
        adjusted = dict(zip([n for _, n in others], holm(ps)))
        ok = [val for val, name in scored if name == best or (adjusted[name] >= ALPHA)]
        out.append({"base": base, "option": option, "metric": metric, "alpha": ALPHA,
                    "points": [{"value": val, "pipeline": name, "recall": recall[name],
                                "hit": (sum(hits.get((name, ALL_CLASSES), {}).values())
                                        / max(1, len(hits.get((name, ALL_CLASSES), {})))),
                                "p_vs_best_holm": adjusted.get(name)} for val, name in variants],
                    "best": best_val, "smallest_not_worse": ok[0] if ok else best_val})
    return out


def _as_number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("inf")


def retrieval_comparison_details(rows: Sequence[MeasurementRow], pipelines: Sequence[str],
                                 ks: Sequence[int]) -> list[StageDetail]:
    """The run-level details of the retrieval stage: ``paired_question_tests`` (two or more pipelines) and
    ``sweep`` curves (swept pipelines), as `StageDetail` rows with ``pipeline`` ``""`` (they span pipelines)."""
    out = []
    if len(pipelines) >= 2:
        tests = paired_question_tests(rows, pipelines, key_metrics(ks))
        if tests:
            out.append(StageDetail(pipeline="", stage="retrieval", name="paired_question_tests",
                                   data={"alpha": ALPHA, "correction": "Holm over the family: every distinct test "
                                         "of the run (metric x compared pipeline pair x paired questions; an __all__ "
                                         "test on one class's questions is that test, same_as); sign and Wilcoxon "
                                         "separately", "pairs": PAIRING + " (highest mean)", "tests": tests}))
        curves = sweep_curves(rows, pipelines, max(ks))
        if curves:
            out.append(StageDetail(pipeline="", stage="retrieval", name="sweep", data=curves))
    return out
