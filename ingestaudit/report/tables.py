"""View models shared by the terminal, Markdown and HTML renderers: the headline per class (each stage's key
metric per pipeline, with interval, n, the best pipeline where the difference is significant, and aggregates over
the items every pipeline measured), the loss waterfall, failures grouped by cause, and the full tables (every
metric x pipeline, one per class)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ingestaudit.auditors import metric_catalog as specs
from ingestaudit.report.schema import ALL_CLASSES, Failure, MeasurementRow, PairedTest, Report, SummaryRow

STAGE_ORDER = ("extraction", "normalization", "tables", "layout", "boilerplate", "language", "pii", "entities",
               "metadata", "relations", "dedup", "chunking", "index", "retrieval")
"""Stages in chain order (unknown stages follow, by name)."""

KEY_METRICS: dict[str, tuple[str, ...]] = {
    "extraction": ("extraction.cer_norm", "extraction.cer", "extraction.checks_pass"),
    "normalization": ("normalization.replacement_chars",),
    "tables": ("tables.teds",),
    "layout": ("layout.heading_f1",),
    "boilerplate": ("boilerplate.f1", "boilerplate.content_retention"),
    "language": ("language.macro_f1", "language.accuracy"),
    "pii": ("pii.f1",),
    "entities": ("entities.f1",),
    "metadata": ("metadata.exact_match",),
    "relations": ("relations.f1",),
    "dedup": ("dedup.pairwise_f1", "dedup.bcubed_precision"),
    "chunking": ("chunking.boundary_splits", "chunking.evidence_held"),
    "index": ("index.recall_tie_aware@10", "index.recall@10"),
}
"""Each stage's key metric for the headline, in order of preference (the first with a value, `choose_keys`; the
headline chooses per class, so a class labelled with olmOCR-style ``checks`` only, no reference text, shows
``extraction.checks_pass``, and a class whose boilerplate labels are trafilatura-style segments only, which give no
character-span F1, shows ``boilerplate.content_retention``: the share of the text that must stay that the cleaner
kept); ``retrieval`` takes ``recall@K`` at its largest K, and any stage falls back to its first metric by name.

The index's key is tie-aware recall (issue 11: "recall that ties, duplicates and normalisation cannot fool"): an ANN
result as close as the k-th exact neighbour is not a miss, so a corpus of repeated chunks (exact duplicate vectors,
whose order among themselves is arbitrary) does not read as lost recall. ``index.recall@10`` (FAISS's intersection
recall, which counts such a tie as a miss) stays in every row of the full tables; without k = 10 the index falls
back to ``recall_tie_aware@K`` at its largest K, then ``recall@K``."""

FALLBACK_FAMILIES = {"retrieval": ("recall",), "index": ("recall_tie_aware", "recall")}
"""A stage's key when none of `KEY_METRICS` is present: the first of these ``<stage>.<family>@K`` at its largest K."""

KEY_LABELS = {"chunking.boundary_splits": "sentence", "entities.f1": "strict/micro", "relations.f1": "strict/micro",
              "metadata.exact_match": "title"}
"""The label a key metric is read under when it has several (otherwise ``""``, then the first by name): chunking's
key is the share of chunk boundaries that cut a sentence, which differs between chunkers (``chunking.evidence_held``,
the share of evidence spans one chunk holds, is 1 for nearly every chunker of a sensible size, so it cannot tell
pipelines apart; it stays in every row and is the key only when boundary_splits is absent); the entity and relation
audits' key is the strict scheme's micro average over types. Metadata's key is the title's exact match rate: the
field-level number a user reads first (issue 28's "title accuracy"), the field every extractor gives (document
information or first heading) and a strict one (exact, not the Levenshtein similarity, which calls a near-miss 0.95
right); without the preference the first label by name, ``authors``, was the headline. A corpus without labelled
titles falls back to the first labelled field by name."""

WATERFALL_OUTCOMES = ("label_unmatched", "lost_in_parsing", "lost_in_cleaning", "split_by_chunking",
                      "excluded_by_enrichment",
                      "excluded_by_filter", "missed_by_ranking", "missed_by_ann", "retrieved")


def g4(x: float | None, signed: bool = False) -> str:
    """4 significant digits (``+`` sign when ``signed``), an em dash for None."""
    if x is None:
        return "—"
    if x == 0:
        return "0"
    return f"{x:+.4g}" if signed else f"{x:.4g}"


def fmt(x: float | None, digits: int = 4) -> str:
    """A value to ``digits`` significant digits (as `g4` for 4), or an em dash for None (the full tables)."""
    if x is None:
        return "—"
    return "0" if x == 0 else f"{x:.{digits}g}"


def measurement_rows(report: Report, **filters: Any) -> Iterator[MeasurementRow]:
    """The report's per-item rows (`ingestaudit.report.rows.measurement_rows`: the store beside report.json, its
    SHA-256 checked, or the rows of an older report), in canonical order, filtered as that function says."""
    from ingestaudit.report.rows import measurement_rows as rows

    return rows(report, **filters)


def headline_value(row: SummaryRow | None) -> float | None:
    """The value a row is read by: micro when defined, else macro."""
    if row is None:
        return None
    return row.micro if row.micro is not None else row.macro


def direction(metric: str, label: str = "") -> str:
    """``"↑"`` when higher is better, ``"↓"`` when lower is better, ``"→1"`` when the best value is 1 (an ideal
    inside the range), ``""`` for unregistered metrics. The waterfall's ``retrieved`` share is ``↑``."""
    name = metric.split("[", 1)[0]
    if not label and "[" in metric:
        label = metric.split("[", 1)[1].rstrip("]")
    if name.startswith("retrieval.outcome@") and label == "retrieved":
        return "↑"
    try:
        spec = specs.get(name)
    except KeyError:
        return ""
    if spec.ideal is not None:
        return f"→{spec.ideal:g}"
    return "↑" if spec.higher_is_better else "↓"


def stage_rank(stage: str) -> tuple[int, str]:
    return (STAGE_ORDER.index(stage) if stage in STAGE_ORDER else len(STAGE_ORDER), stage)


def _at_k(metric: str) -> int:
    try:
        return int(metric.rsplit("@", 1)[1])
    except (IndexError, ValueError):
        return -1


def choose_keys(available: Iterable[tuple[str, str]],
                valued: set[tuple[str, str]] | None = None) -> dict[str, tuple[str, str]]:
    """Each stage's key ``(metric, label)`` among the ``(metric, label)`` pairs present (see `KEY_METRICS`);
    label ``""`` is preferred, else the first label by name; with ``valued`` (the pairs that have a value
    somewhere), a preferred metric with a value comes before one without (a class with ``checks`` only has
    valueless ``extraction.cer_norm`` rows and ``extraction.checks_pass`` values), and a label with a value before one
    without (PII's ``pii.f1`` has valueless ``""`` rows for unlabelled documents and its values under ``exact``...).
    Ordered by `STAGE_ORDER`."""
    by_metric: dict[str, set[str]] = {}
    for metric, label in available:
        by_metric.setdefault(metric, set()).add(label)
    stages = sorted({m.split(".", 1)[0] for m in by_metric}, key=stage_rank)
    out: dict[str, tuple[str, str]] = {}
    for stage in stages:
        names = sorted(m for m in by_metric if m.split(".", 1)[0] == stage)
        candidates = [m for m in KEY_METRICS.get(stage, ()) if m in by_metric]
        if valued is not None:
            has_value = {m for m, _ in valued}
            candidates.sort(key=lambda m: m not in has_value)  # stable: the preference order within each group
        choice = next(iter(candidates), None)
        for family in FALLBACK_FAMILIES.get(stage, ()):
            recall = [m for m in names if re.fullmatch(rf"{stage}\.{family}@\d+", m)]
            if choice is None and recall:
                choice = max(recall, key=_at_k)
        choice = choice or names[0]
        preferred = KEY_LABELS.get(choice, "")
        labels = sorted(by_metric[choice], key=lambda lab: (lab != preferred, lab != "", lab))  # preferred, "", name
        if valued is not None:
            labels.sort(key=lambda lab: (choice, lab) not in valued)  # stable: the order above within each group
        out[stage] = (choice, labels[0])
    return out


BUDGET_HEADLINE = ("the pipelines differ in chunking: retrieval's headline is span recall at an equal context "
                   "budget of characters (retrieval.span_recall@2000ch for 2,000), since recall@k favours larger "
                   "chunks, which hold more evidence and cost more context")
"""The legend line of a headline whose retrieval key is the budget recall (`headline_keys`)."""


def chunking_differs(pipelines: Iterable[Any]) -> bool:
    """True when two of ``pipelines`` (`PipelineInfo`) chunk differently: their ``chunker`` stage's implementation
    or settings differ (a pipeline without a chunker stage, a precomputed one, counts as its own chunking)."""
    seen = {json.dumps([p.stages["chunker"].implementation, p.stages["chunker"].settings], sort_keys=True,
                       default=str) if "chunker" in p.stages else f"own:{p.name}" for p in pipelines}
    return len(seen) > 1


def budget_key(metrics: Iterable[str]) -> str | None:
    """The budget recall a headline shows: ``retrieval.span_recall@2000ch`` when present, else the smallest
    budget's; None without one."""
    found = sorted((int(m[len("retrieval.span_recall@"):-2]), m) for m in metrics
                   if re.fullmatch(r"retrieval\.span_recall@\d+ch", m))
    return next((m for b, m in found if b == 2000), found[0][1] if found else None)


def headline_keys(summary: Iterable[SummaryRow], pipelines: Iterable[Any] = (),
                  doc_class: str | None = None) -> dict[str, tuple[str, str]]:
    """Each stage's key ``(metric, label)`` among a report's summary rows (the loss waterfall's outcome rows left
    out; only ``doc_class``'s rows when given: the headline of that class). When ``pipelines`` (`PipelineInfo`)
    differ in chunking (`chunking_differs`), retrieval's key is the budget recall (`budget_key`,
    `BUDGET_HEADLINE`). The paired tests and the verdict run on every class's keys (`all_headline_keys`)."""
    rows = [r for r in summary if not r.metric.startswith("retrieval.outcome@")
            and (doc_class is None or r.doc_class == doc_class)]
    valued = {(r.metric, r.label) for r in rows if headline_value(r) is not None}
    keys = choose_keys([(r.metric, r.label) for r in rows], valued=valued)
    budget = budget_key(m for m, _ in valued)
    if "retrieval" in keys and budget is not None and chunking_differs(pipelines):
        keys["retrieval"] = (budget, "")
    return keys


def all_headline_keys(summary: Iterable[SummaryRow], pipelines: Iterable[Any] = ()) -> list[tuple[str, str]]:
    """Every class's headline keys (`headline_keys` per class, ``__all__`` first, then the classes sorted), each once:
    the rows the bake-off's paired tests and verdict run on (`ingestaudit.report.paired`,
    `ingestaudit.report.verdict`), so a class whose key differs from ``__all__``'s (``extraction.checks_pass`` of
    a class with checks only) is tested on its own key."""
    rows, infos = list(summary), list(pipelines)
    classes = sorted({r.doc_class for r in rows}, key=lambda c: (c != ALL_CLASSES, c))
    out: dict[tuple[str, str], None] = {}
    for cls in classes:
        out.update(dict.fromkeys(headline_keys(rows, infos, cls).values()))
    return list(out)


# --- headline -------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class HeadCell:
    """One pipeline's key value in a class: the headline value, its interval, n, other states, and ``best``: the
    pipeline better than every other one on the items both measured, each paired test significant after Holm in
    that direction (`significant_best`)."""

    value: float | None
    low: float | None
    high: float | None
    n: int
    note: str  # non-ok states, or "corpus of N" for corpus-level values
    best: bool = False
    total: int = 0  # items in any state (n of them ok)
    corpus: bool = False  # one value over the class (n = documents), not an aggregate of items
    missing: str = ""  # why there is no value: every state that is not ok, most frequent first, with counts
    failed: int = 0  # items in error, skipped or without a prediction (a label missing is not a failure)
    empty: int = 0  # documents whose parse returned no text where the reference has some (extraction only)

    @property
    def shown(self) -> str:
        """The value as the cell prints it: ``0.12``, with ``(1 empty)`` when parses returned no text (`empty`)."""
        return g4(self.value) + (f" ({self.empty} empty)" if self.empty else "")

    def text(self, with_interval: bool = True) -> str:
        """``value (k empty) ★ [low, high] n=N (notes)``: the Markdown and HTML cell."""
        if self.value is None:
            return self.note or self.missing or "—"
        ci = f" [{g4(self.low)}, {g4(self.high)}]" if with_interval and self.low is not None else ""
        star = " ★" if self.best else ""
        return f"{self.shown}{star}{ci} n={self.n}" + (f" ({self.note})" if self.note else "")

    def compact(self) -> tuple[str, str]:
        """``("value ★ n=k/N", "[low, high]")`` for the terminal: k items ok of N in any state, bounds to 3
        significant digits (a corpus-level value: ``n=`` the documents it was computed over); without a value
        ``("—", "6 skip, 4 no ref")``, the items' states."""
        if self.value is None:
            return "—", self.missing  # the states on the interval's line
        star = " ★" if self.best else ""
        n = f"n={self.n}" + (f"/{self.total}" if self.total > self.n else "")
        ci = f"[{self.low:.3g}, {self.high:.3g}]" if self.low is not None and self.high is not None else ""
        return f"{self.shown}{star} {n}", ci


@dataclass(frozen=True)
class HeadRow:
    """One stage's key metric in a class, per pipeline, and (when the pipelines measured different items) the
    values over the items every pipeline measured."""

    stage: str
    metric: str
    label: str
    cells: list[HeadCell]
    common_n: int | None = None  # items every compared pipeline measured, when that differs from some n
    common: list[float | None] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.metric + (f"[{self.label}]" if self.label else "")


@dataclass(frozen=True)
class Headline:
    """The headline of one class."""

    doc_class: str
    documents: int
    questions: int
    pipelines: list[str]
    rows: list[HeadRow]
    waterfall: list[tuple[str, list[tuple[str, float]]]]  # (pipeline, [(outcome, share)]) at waterfall_k
    waterfall_k: int | None
    waterfall_errors: dict[str, int] = field(default_factory=dict)  # pipeline -> questions left out (`error`)


FAILED_STATES = ("error", "skipped", "no_prediction")
"""States of an item the run could not measure though it has labels: a headline row whose cells hold only these is
shown with their counts, never folded into "no value in this class" (issue 30)."""

STATE_SHORT = {"no_reference": "no ref", "no_prediction": "no pred", "skipped": "skip", "error": "err"}
"""How a cell without a value names the states of its items in the terminal (the headline legend spells them out)."""


CORPUS_COUNTS = {"index.freshness_lag": "events", "index.stale_query_share": "queries",
                 "index.duplicate_vectors": "vectors", "index.ip_dominated": "sampled vectors",
                 "index.recall": "queries", "index.recall_tie_aware": "queries", "index.one_recall": "queries"}
"""What ``n_docs`` counts in a corpus-level row computed over something else than documents, by metric name without
its ``@k`` (`ingestaudit.events`: the ``--events`` file's index events, its served queries; the index audit
(`ingestaudit.auditors.index`): the vectors, the sampled vectors of the domination check, the recall queries);
every other corpus-level row counts documents."""


def corpus_note(row: SummaryRow, noun: str = "docs") -> str:
    """``corpus of N docs`` (``N vectors``, ``N queries``...: `CORPUS_COUNTS`) for a corpus-level row; ``noun``
    is what N counts when the row is over documents (``""``: the headline's bare ``corpus of N``)."""
    what = CORPUS_COUNTS.get(row.metric.split("@", 1)[0], noun)
    return f"corpus of {row.n_docs}" + (f" {what}" if what else "")


def _note(row: SummaryRow) -> str:
    if row.level == "corpus":  # states count documents: those behind the value and those that never reached it
        bad = ", ".join(f"{n} {s}" for s, n in row.states.items() if n and s != "ok")
        return corpus_note(row, "") + (f"; {bad}" if bad else "")
    return ", ".join(f"{n} {s}" for s, n in row.states.items() if n and s != "ok")


def _cell(row: SummaryRow | None) -> HeadCell:
    if row is None:
        return HeadCell(None, None, None, 0, "")
    bad = sorted(((n, s) for s, n in row.states.items() if n and s != "ok"), key=lambda x: (-x[0], x[1]))
    return HeadCell(headline_value(row), row.ci_low, row.ci_high, row.n_docs, _note(row),
                    total=sum(row.states.values()), corpus=row.level == "corpus",
                    missing=", ".join(f"{n} {STATE_SHORT.get(st, st)}" for n, st in bad),
                    failed=sum(n for st, n in row.states.items() if st in FAILED_STATES))


def significant_best(tests: Sequence[PairedTest], pipelines: Sequence[str], metric: str, label: str,
                     doc_class: str) -> str | None:
    """The pipeline that is significantly better than every other pipeline with a test in this class and metric:
    each of its paired tests significant after Holm, and better in the direction of the metric both by the test's
    side and by the headline difference on the paired items (`PairedTest.better`; for older reports without it,
    None, the sign of the difference under the metric's direction). It needs a test against every other pipeline
    with a test in the group (the tests run from the best pipeline to each other one, `ingestaudit.report.paired`:
    a pipeline that beats the best has only that one test, not one against each other pipeline). None when no
    pipeline is."""
    mine = [t for t in tests if t.doc_class == doc_class and t.metric == metric and t.label == label]
    tested = {p for t in mine for p in (t.pipeline_a, t.pipeline_b)}
    for best in pipelines:
        vs = {o: next((t for t in mine if {t.pipeline_a, t.pipeline_b} == {best, o}), None)
              for o in pipelines if o != best and o in tested}
        if best not in tested or not vs or None in vs.values():
            continue
        if all(_wins(t, best, metric, label) for t in vs.values()):  # type: ignore[arg-type]
            return best
    return None


def _wins(t: PairedTest, best: str, metric: str, label: str) -> bool:
    if not t.significant or t.p_holm is None:
        return False
    if t.better is not None:
        return t.better == best
    diff = t.diff if t.diff is not None else t.mean_diff  # b - a
    spec_dir = direction(metric, label)
    if diff == 0 or spec_dir not in ("↑", "↓"):
        return False
    b_better = (diff > 0) == (spec_dir == "↑")
    return (t.pipeline_b == best) == b_better


def common_items(rows: Sequence[MeasurementRow], doc_class: str, metric: str, label: str,
                 pipelines: Sequence[str]) -> tuple[int, dict[str, float | None]] | None:
    """Over the items every pipeline with an ok row measured (``None`` when that is every item of every pipeline
    already): ``(n, {pipeline: micro or mean over those items})``."""
    ok: dict[str, dict[str, MeasurementRow]] = {p: {} for p in pipelines}
    for r in rows:
        if r.metric == metric and r.label == label and r.state == "ok" and r.pipeline in ok \
                and (doc_class == ALL_CLASSES or r.doc_class == doc_class):
            ok[r.pipeline][r.item] = r
    measured = [p for p in pipelines if ok[p]]
    if len(measured) < 2:
        return None
    common = set.intersection(*(set(ok[p]) for p in measured))
    if all(len(ok[p]) == len(common) for p in measured):
        return None
    out: dict[str, float | None] = {}
    for p in pipelines:
        sel = [ok[p][i] for i in sorted(common)] if p in measured else []  # sums in a fixed order
        if not sel:
            out[p] = None
        elif all(r.numerator is not None and r.denominator is not None for r in sel) \
                and sum(r.denominator for r in sel):  # type: ignore[misc]
            out[p] = sum(r.numerator for r in sel) / sum(r.denominator for r in sel)  # type: ignore[misc]
        else:
            out[p] = sum(r.value for r in sel) / len(sel)  # type: ignore[misc]
    return len(common), out


def waterfall_k(report: Report) -> int | None:
    """The cutoff of the waterfall: the ``retrieval/waterfall`` detail's ``k``, else the largest outcome@K."""
    for d in report.details:
        if d.stage == "retrieval" and d.name == "waterfall" and isinstance(d.data, dict) and d.data.get("k"):
            return int(d.data["k"])
    ks = [_at_k(r.metric) for r in report.summary if r.metric.startswith("retrieval.outcome@")]
    return max(ks) if ks else None


def waterfall_outcomes(report: Report) -> list[str]:
    for d in report.details:
        if d.stage == "retrieval" and d.name == "waterfall" and isinstance(d.data, dict) \
                and isinstance(d.data.get("outcomes"), list):
            return [str(o) for o in d.data["outcomes"]]
    return list(WATERFALL_OUTCOMES)


def waterfall_shares(report: Report, doc_class: str) -> list[tuple[str, list[tuple[str, float]]]]:
    """Per pipeline, the share of evidence items per outcome (chain order, zeros kept) in ``doc_class``."""
    k = waterfall_k(report)
    if k is None:
        return []
    metric = f"retrieval.outcome@{k}"
    outcomes = waterfall_outcomes(report)
    by_pipe: dict[str, dict[str, float]] = {}
    for r in report.summary:
        if r.metric == metric and r.doc_class == doc_class and headline_value(r) is not None:
            by_pipe.setdefault(r.pipeline, {})[r.label] = headline_value(r)  # type: ignore[assignment]
    order = [p.name for p in report.pipelines]
    out = []
    for p in sorted(by_pipe, key=lambda p: (order.index(p) if p in order else len(order), p)):
        shares = by_pipe[p]
        names = outcomes + sorted(set(shares) - set(outcomes))
        out.append((p, [(o, shares.get(o, 0.0)) for o in names]))
    return out


def waterfall_errors(report: Report, doc_class: str) -> dict[str, int]:
    """Per pipeline with any, the questions of ``doc_class`` whose waterfall rows are ``error`` (a bad line of the
    pipeline's results, a filter on a field its chunks lack): they are in no share, so the shares are over the other
    questions' evidence items. Read from the ``error`` count of the first outcome's summary row."""
    k = waterfall_k(report)
    if k is None:
        return {}
    metric, first = f"retrieval.outcome@{k}", waterfall_outcomes(report)[0]
    return {r.pipeline: r.states["error"] for r in report.summary
            if r.metric == metric and r.doc_class == doc_class and r.label == first and r.states.get("error")}


def empty_outputs(report: Report) -> dict[tuple[str, str], int]:
    """``(class, pipeline) -> documents`` whose parse returned no text where the reference has some (the
    ``extraction.cer`` row's ``empty_output`` detail, `ingestaudit.metrics.edit`), each class and ``__all__``; the
    headline's extraction cell shows the count (``0.12 (1 empty)``), the failures list each document."""
    out: dict[tuple[str, str], int] = {}
    for r in measurement_rows(report, metrics=("extraction.cer",), states=("ok",)):
        if r.label == "" and r.detail.get("empty_output") is True:
            for cls in (r.doc_class, ALL_CLASSES):
                out[(cls, r.pipeline)] = out.get((cls, r.pipeline), 0) + 1
    return out


def headlines(report: Report) -> list[Headline]:
    """The headline of every class (sorted, ``__all__`` last)."""
    pipelines = [p.name for p in report.pipelines] or sorted({r.pipeline for r in report.summary})
    by_class: dict[str, dict[tuple[str, str, str], SummaryRow]] = {}
    for r in report.summary:
        by_class.setdefault(r.doc_class, {})[(r.metric, r.label, r.pipeline)] = r
    wk = waterfall_k(report)
    empty = empty_outputs(report) if any(r.metric == "extraction.cer" for r in report.summary) else {}
    docs_per_class = dict(report.corpus.documents)
    q_per_class: dict[str, set[str]] = {}
    for m in measurement_rows(report, item_kind="question", detail=False):
        q_per_class.setdefault(m.doc_class, set()).add(m.item)
        q_per_class.setdefault(ALL_CLASSES, set()).add(m.item)
    out = []
    for cls in sorted(by_class, key=lambda c: (c == ALL_CLASSES, c)):
        rows = []
        for stage, (metric, label) in headline_keys(report.summary, report.pipelines, cls).items():
            found = {p: by_class[cls].get((metric, label, p)) for p in pipelines}
            if not any(found.values()):
                continue
            cells = [_cell(found[p]) for p in pipelines]
            if stage == "extraction":
                cells = [replace(c, empty=empty.get((cls, p), 0)) for p, c in zip(pipelines, cells)]
            values = [p for p, c in zip(pipelines, cells) if c.value is not None]
            best = significant_best(report.paired_tests, values, metric, label, cls) if len(values) >= 2 else None
            if best is not None:
                cells = [replace(c, best=p == best) for p, c in zip(pipelines, cells)]
            common = (common_items(measurement_rows(report, metrics=(metric,), states=("ok",), detail=False), cls,
                                   metric, label, pipelines) if len(pipelines) > 1 else None)
            if common and sum(1 for v in common[1].values() if v is not None) < 2:
                common = None  # fewer than two pipelines have a value over the common items: nothing to compare
            rows.append(HeadRow(stage, metric, label, cells, common[0] if common else None,
                                [common[1][p] for p in pipelines] if common else []))
        n_docs = sum(docs_per_class.values()) if cls == ALL_CLASSES else docs_per_class.get(cls, 0)
        out.append(Headline(cls, n_docs, len(q_per_class.get(cls, ())), pipelines, rows,
                            waterfall_shares(report, cls) if wk else [], wk, waterfall_errors(report, cls)))
    return out


# --- failures --------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FailureGroup:
    """Failures that share a cause: count, the stages and pipelines they hit, one example."""

    cause: str
    count: int
    stages: list[str]
    pipelines: list[str]
    example_item: str
    example: str


def _cause(f: Failure) -> str:
    """The message with what varies per item (the id, file names, numbers, quoted text) blanked out."""
    text = " ".join(f.message.split())
    if f.item:
        text = text.replace(f.item, "…")
        text = text.replace(f.item.rsplit("/", 1)[-1], "…")
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    text = re.sub(r"\b[\w.-]+\.(pdf|png|jpe?g|tiff?|html?|txt|md|docx|json|xml)\b", "…", text, flags=re.I)
    text = re.sub(r"\d+(\.\d+)?", "N", text)
    return text[:120]


failure_cause = _cause


def failure_groups(report: Report) -> list[FailureGroup]:
    """Failures grouped by cause (never one line per stage): most frequent first; a report of schema 2.1 holds them
    (`Report.failure_groups`, over every failure, also those past the listed ones)."""
    if report.failure_groups:
        return [FailureGroup(g.cause, g.count, list(g.stages), list(g.pipelines),
                             g.examples[0].item if g.examples else "",
                             " ".join(g.examples[0].message.split()) if g.examples else "")
                for g in report.failure_groups]
    groups: dict[str, list[Failure]] = {}
    for f in report.failures:
        groups.setdefault(_cause(f), []).append(f)
    out = []
    for cause, fs in groups.items():
        first = fs[0]
        out.append(FailureGroup(cause, len({(f.item, f.pipeline) for f in fs}) or len(fs),
                                sorted({f.stage for f in fs}, key=stage_rank),
                                sorted({f.pipeline for f in fs if f.pipeline}), first.item,
                                " ".join(first.message.split())))
    return sorted(out, key=lambda g: (-g.count, g.cause))


# --- full tables -----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cell:
    """One summary row as text: ``value`` = micro (macro), ``extra`` = interval, n and non-ok state counts."""

    value: str
    extra: str


@dataclass(frozen=True)
class ClassTable:
    """Rows of metric names (with label) by pipeline columns, for one document class."""

    doc_class: str
    pipelines: list[str]
    rows: list[tuple[str, list[Cell]]]


def cell(row: SummaryRow | None, digits: int = 4) -> Cell:
    """Format one summary row (None when the pipeline has no row for that metric)."""
    if row is None:
        return Cell("", "")
    if row.micro is not None and row.macro is not None:
        value = f"{fmt(row.micro, digits)} ({fmt(row.macro, digits)})"
    else:  # a corpus-level value (macro None) or a metric without counts (micro None)
        value = fmt(row.micro if row.micro is not None else row.macro, digits)
    ci = f"[{fmt(row.ci_low)}, {fmt(row.ci_high)}] " if row.ci_low is not None else ""
    if row.level == "corpus":  # one value over the class's documents, not an aggregate of per-document rows
        bad = ", ".join(f"{n} {s}" for s, n in row.states.items() if n and s != "ok")
        return Cell(value, f"{ci}{corpus_note(row)}" + (f"; {bad}" if bad else ""))
    other = ", ".join(f"{n} {s}" for s, n in row.states.items() if n and s != "ok")
    return Cell(value, f"{ci}n={row.n_docs}" + (f"; {other}" if other else ""))


def class_tables(report: Report, digits: int = 4) -> list[ClassTable]:
    """One table per class (sorted, ``__all__`` last), rows ``metric[label]`` in stage order, columns the report's
    pipelines; values with ``digits`` decimals."""
    pipelines = [p.name for p in report.pipelines]
    by_class: dict[str, dict[tuple[str, str], dict[str, SummaryRow]]] = {}
    for r in report.summary:
        by_class.setdefault(r.doc_class, {}).setdefault((r.metric, r.label), {})[r.pipeline] = r
    tables = []
    for cls in sorted(by_class, key=lambda c: (c == ALL_CLASSES, c)):
        keys = sorted(by_class[cls], key=lambda k: (stage_rank(k[0].split(".", 1)[0]), k))
        rows = [(m + (f"[{lab}]" if lab else ""), [cell(by_class[cls][(m, lab)].get(p), digits) for p in pipelines])
                for m, lab in keys]
        tables.append(ClassTable(cls, pipelines, rows))
    return tables
