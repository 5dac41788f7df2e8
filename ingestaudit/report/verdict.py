"""The bake-off's verdict: which pipeline to use, per class and overall, by how much, on what basis (issue 25).

Per class (and ``__all__``) and per key metric (the headline's, `ingestaudit.report.tables.headline_keys`): the
pipelines are ranked by their value over the items **every** pipeline with values measured (micro when the rows
carry counts, else the mean), so that no pipeline wins on easier items; the best is compared with the runner-up on
the items both measured:

* the difference ``best - runner_up`` (micro, else the mean) with its paired bootstrap interval (`compare_pairs`,
  seeded per row, the report's resamples and confidence): an estimate, never the decision;
* the **deciding test**, one per comparison: the exact two-sided sign test on the per-item values
  (`ingestaudit.metrics.significance.sign_test_paired`, ties dropped). Why this one: it is exact at every n (the
  bootstrap's p is limited by its resamples, and a bootstrap on 5 items claims p 0.002 where an exact test gives
  0.0625), it assumes nothing about the shape of the differences (Wilcoxon assumes them symmetric, which
  per-question 0/1 and reciprocal-rank values are not), and it reads the unit a user compares: how many questions
  each pipeline does better on. The bootstrap and Wilcoxon tests of `ingestaudit.report.paired` stay in the
  report's ``paired_tests`` as measurements only;
* every testable comparison of the run forms one family, Holm-adjusted (`ingestaudit.metrics.significance.holm`):
  the best-vs-runner-up tests and, for each of them, the same pair on every other key metric of the class (the
  check that the best is not significantly worse elsewhere);
* ``decided``: Holm p < alpha, the per-item majority favours the best, and no other key metric of the class has
  the best significantly worse than the runner-up (Holm p < alpha, majority against it).

A comparison whose shared items all tie is untestable (no p; it never enters the family); renderers fold those into
one count.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ingestaudit.metrics.significance import holm, sign_test_paired
from ingestaudit.report.schema import ALL_CLASSES, MeasurementRow, Verdict
from ingestaudit.report.stats import ALPHA, compare_pairs, orientation_of, pairs_of, row_seed

DECIDING_TEST = "exact two-sided sign test on per-item values (ties dropped), Holm over the verdict's family"
"""The one test that decides a verdict comparison (printed in the views' legend)."""

UNTESTABLE = "untestable: identical values on every shared item"
WITHIN_NOISE = "differences within noise"


@dataclass
class _Cmp:
    cls: str
    metric: str
    label: str
    best: str
    other: str
    items: list[str]
    p: float | None  # the sign test's two-sided p (None: untestable)
    favours_best: bool  # the per-item majority favours `best`
    diff: float | None = None
    low: float | None = None
    high: float | None = None
    p_holm: float | None = None


def metric_name(metric: str, label: str) -> str:
    """``metric`` or ``metric[label]``."""
    return f"{metric}[{label}]" if label else metric


def direction_word(metric: str, label: str) -> str:
    """``"higher"``, ``"lower"`` or ``"closer to X"``: which way is better."""
    o = orientation_of(metric, label)
    if o.ideal is not None:
        return f"closer to {o.ideal:g}"
    return "lower" if o.lower_is_better else "higher"


def _value(rows: Sequence[MeasurementRow]) -> float:
    return pairs_of([r.item for r in rows], rows, rows).value("a")


def _sign(cls: str, metric: str, label: str, best: str, other: str, vb: dict[str, MeasurementRow],
          vo: dict[str, MeasurementRow]) -> _Cmp:
    """The sign test of ``best`` against ``other`` on their shared items, oriented so that a win is an item where
    ``best`` is better."""
    items = sorted(vb.keys() & vo.keys())
    orient = orientation_of(metric, label)
    bad_b = [float(orient.badness(vb[i].value)) for i in items]
    bad_o = [float(orient.badness(vo[i].value)) for i in items]
    t = sign_test_paired(bad_b, bad_o)  # a "win" is an item where other is worse: best better
    if t.wins + t.losses == 0:
        return _Cmp(cls, metric, label, best, other, items, None, False)
    return _Cmp(cls, metric, label, best, other, items, t.p_value, t.wins > t.losses)


def build_verdict(rows: Iterable[MeasurementRow], pipelines: Sequence[str], keys: Sequence[tuple[str, str]], *,
                  seed: int = 0, n_resamples: int = 1000, confidence: float = 0.95,
                  alpha: float = ALPHA) -> list[Verdict]:
    """The verdict rows of a run (module docstring), classes sorted with ``__all__`` last, keys in the given order.

    Args:
        rows: measurement rows of the key metrics; only rows in state ok are read. ``n_items`` counts the items
            some pipeline measured (an item every pipeline failed, skipped or had no reference for is in no
            verdict; one failed by some pipelines only makes ``n_shared`` smaller than ``n_items``).
        pipelines: the run's pipelines in report order (fewer than two: no verdict, ``[]``).
        keys: the ``(metric, label)`` key metrics (`ingestaudit.report.tables.headline_keys`).
    """
    if len(pipelines) < 2:
        return []
    wanted = set(keys)
    ok: dict[tuple[str, str, str, str], dict[str, MeasurementRow]] = defaultdict(dict)
    measured: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for r in rows:
        if (r.metric, r.label) not in wanted or r.pipeline not in pipelines:
            continue
        if r.state != "ok" or r.value is None:
            continue
        for cls in (r.doc_class, ALL_CLASSES):
            measured[(cls, r.metric, r.label)].add(r.item)
            ok[(cls, r.metric, r.label, r.pipeline)][r.item] = r
    classes = sorted({k[0] for k in measured}, key=lambda c: (c == ALL_CLASSES, c))
    primary: list[tuple[_Cmp | None, str, str, str, int, str]] = []  # (comparison, cls, metric, label, n, reason)
    checks: dict[int, list[_Cmp]] = {}
    for cls in classes:
        for metric, label in keys:
            if (cls, metric, label) not in measured:
                continue
            n_items = len(measured[(cls, metric, label)])
            own = {p: ok[(cls, metric, label, p)] for p in pipelines if ok.get((cls, metric, label, p))}
            if len(own) < 2:
                primary.append((None, cls, metric, label, n_items, "fewer than two pipelines have a value"))
                continue
            common = sorted(set.intersection(*(set(v) for v in own.values())))
            if not common:
                primary.append((None, cls, metric, label, n_items, "no item measured by every pipeline"))
                continue
            orient = orientation_of(metric, label)
            ranked = sorted(own, key=lambda p: (orient.badness(_value([own[p][i] for i in common])),
                                                list(pipelines).index(p)))
            best, other = ranked[0], ranked[1]
            cmp = _sign(cls, metric, label, best, other, own[best], own[other])
            pairs = pairs_of(cmp.items, [own[other][i] for i in cmp.items], [own[best][i] for i in cmp.items])
            stat = compare_pairs(pairs, orient, seed=row_seed(seed, "verdict", cls, metric, label),
                                 n_resamples=n_resamples, confidence=confidence)
            cmp.diff, cmp.low, cmp.high = stat.diff, stat.low, stat.high
            primary.append((cmp, cls, metric, label, n_items, ""))
            checks[len(primary) - 1] = [
                _sign(cls, m2, l2, best, other, ok.get((cls, m2, l2, best), {}), ok.get((cls, m2, l2, other), {}))
                for m2, l2 in keys if (m2, l2) != (metric, label)]
    tested = [c for c, *_ in primary if c is not None and c.p is not None]
    tested += [c for cs in checks.values() for c in cs if c.p is not None]
    family: dict[tuple[str, str, str, str, tuple[str, ...]], list[_Cmp]] = {}
    for c in tested:  # an __all__ comparison on one class's items is that class's test: once in the family
        family.setdefault((c.metric, c.label, c.best, c.other, tuple(c.items)), []).append(c)
    for same, p in zip(family.values(), holm([cs[0].p for cs in family.values()])):  # type: ignore[misc]
        for c in same:
            c.p_holm = p
    out = []
    for idx, (cmp, cls, metric, label, n_items, why) in enumerate(primary):
        name, word = metric_name(metric, label), direction_word(metric, label)
        if cmp is None:
            out.append(Verdict(doc_class=cls, metric=name, direction=word, best="", runner_up="", diff=None,
                               diff_low=None, diff_high=None, p_holm=None, n_shared=0, n_items=n_items,
                               decided=False, reason=why))
            continue
        worse = [c for c in checks[idx] if c.p_holm is not None and c.p_holm < alpha and not c.favours_best]
        if cmp.p is None:
            reason = UNTESTABLE
        elif cmp.p_holm is None or cmp.p_holm >= alpha:
            reason = WITHIN_NOISE
        elif not cmp.favours_best:
            reason = f"more items favour {cmp.other} than {cmp.best}: the difference and the majority disagree"
        elif worse:
            reason = "; ".join(f"{cmp.best} is significantly worse on {metric_name(c.metric, c.label)} "
                               f"(Holm p {c.p_holm:.3g})" for c in worse)
        else:
            reason = f"{DECIDING_TEST} < {alpha:g}; no other key metric of {cmp.best} significantly worse"
        decided = reason.startswith(DECIDING_TEST)
        out.append(Verdict(doc_class=cls, metric=name, direction=word, best=cmp.best, runner_up=cmp.other,
                           diff=cmp.diff, diff_low=cmp.low, diff_high=cmp.high, p_holm=cmp.p_holm,
                           n_shared=len(cmp.items), n_items=n_items, decided=decided, reason=reason))
    return out


# --- the lines the views open with -------------------------------------------------------------------------------

def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:+.2g}" if abs(x) < 0.01 and x != 0 else f"{x:+.2f}"


def headline_verdicts(verdict: Sequence[Verdict], stage_order: Sequence[str]) -> list[Verdict]:
    """One verdict row per class: the key metric of the latest stage in chain order (``stage_order``; retrieval
    before index before chunking...), classes in the verdict's order."""
    def rank(v: Verdict) -> int:
        stage = v.metric.split(".", 1)[0]
        return -stage_order.index(stage) if stage in stage_order else 1

    out: dict[str, Verdict] = {}
    for v in verdict:
        if v.doc_class not in out or rank(v) < rank(out[v.doc_class]):
            out[v.doc_class] = v
    return list(out.values())


def verdict_line(v: Verdict) -> str:
    """``verdict: B (metric +0.11 [+0.06, +0.16], Holm p 0.004, 235/235 questions)`` or ``no decision: ...
    (reason)``; the class is named unless it is ``__all__``; items are questions for retrieval metrics, else
    documents."""
    unit = "questions" if v.metric.startswith("retrieval.") else "documents"
    where = "" if v.doc_class == ALL_CLASSES else f" [{v.doc_class}]"
    if not v.best:
        return f"no decision{where}: {v.metric} ({v.reason})"
    interval = f" [{_num(v.diff_low)}, {_num(v.diff_high)}]" if v.diff_low is not None else ""
    p = "untestable" if v.p_holm is None else f"Holm p {v.p_holm:.3g}"
    body = f"{v.metric} {_num(v.diff)}{interval}, {p}, {v.n_shared}/{v.n_items} {unit}"
    if v.decided:
        return f"verdict{where}: {v.best} ({body})"
    return f"no decision{where}: {v.best} vs {v.runner_up} ({body}; {v.reason})"


def verdict_lines(verdict: Sequence[Verdict], stage_order: Sequence[str]) -> list[str]:
    """The lines a view opens with: one per class (`headline_verdicts`), untestable ones folded into one count."""
    rows = headline_verdicts(verdict, stage_order)
    lines = [verdict_line(v) for v in rows if v.reason != UNTESTABLE]
    folded = sum(1 for v in rows if v.reason == UNTESTABLE)
    if folded:
        lines.append(f"no decision: {folded} class{'es' if folded > 1 else ''} untestable (identical values on "
                     "every shared item)")
    return lines
