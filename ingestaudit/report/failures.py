"""A run's failure list as report.json keeps it: each failure once per item and cause, grouped by cause, capped.

* `merge_pipelines`: the same failure of one item in several pipelines (the sweep variants of one parser parse a
  document once and fail once; two parsers failing on an unreadable file) becomes one `Failure` naming every
  pipeline (``pipelines``), the first of them in report order as ``pipeline``.
* `group_failures`: failures grouped by cause (`ingestaudit.report.tables.failure_cause`: the message with what
  varies per item blanked out), most frequent first, each with a count and its first examples.
* `bounded`: the list report.json holds: the first `MAX_FAILURES_LISTED` in canonical order, and the total; every
  item's rows stay in the measurement store (state ``error``, the message in ``detail.reason``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ingestaudit.report.schema import MAX_FAILURES_LISTED, MAX_GROUP_EXAMPLES, Failure, FailureGroup


def merge_pipelines(failures: Sequence[Failure], pipeline_order: Sequence[str]) -> list[Failure]:
    """One failure per (item, stage, message) of an item (``item != ""``) across pipelines, sorted by item,
    pipeline rank, stage and message; failures without an item or a pipeline are kept as they are."""
    rank = {p: i for i, p in enumerate(pipeline_order)}
    merged: dict[tuple[str, str, str], list[Failure]] = {}
    out: list[Failure] = []
    for f in failures:
        if f.item and f.pipeline:
            merged.setdefault((f.item, f.stage, f.message), []).append(f)
        else:
            out.append(f)
    for (item, stage, message), fs in merged.items():
        names = sorted({p for f in fs for p in (f.pipelines or [f.pipeline])}, key=lambda p: (rank.get(p, len(rank)),
                                                                                               p))
        out.append(Failure(item=item, pipeline=names[0], stage=stage, message=message,
                           pipelines=names if len(names) > 1 else []))
    out.sort(key=lambda f: (f.item, rank.get(f.pipeline, -1), f.stage, f.message))
    return out


def group_failures(failures: Sequence[Failure]) -> list[FailureGroup]:
    """Failures grouped by cause, most frequent first (ties by cause): ``count`` is the distinct (item, pipeline,
    message) triples of the group (the same failure listed under two stages counts once; two problems of one file,
    such as two bad lines of questions.jsonl, count twice; a failure without an item counts once), examples its
    first `MAX_GROUP_EXAMPLES` failures."""
    from ingestaudit.report.tables import failure_cause, stage_rank

    groups: dict[str, list[Failure]] = {}
    for f in failures:
        groups.setdefault(failure_cause(f), []).append(f)
    out = []
    for cause, fs in groups.items():
        distinct = {(f.item, p, f.message) if f.item else i for i, f in enumerate(fs)
                    for p in (f.pipelines or [f.pipeline])}
        out.append(FailureGroup(cause=cause, count=len(distinct),
                                stages=sorted({f.stage for f in fs}, key=stage_rank),
                                pipelines=sorted({p for f in fs for p in (f.pipelines or [f.pipeline]) if p}),
                                examples=list(fs[:MAX_GROUP_EXAMPLES])))
    return sorted(out, key=lambda g: (-g.count, g.cause))


def bounded(failures: Sequence[Failure]) -> tuple[list[Failure], int]:
    """The failures report.json lists (the first `MAX_FAILURES_LISTED`) and how many there are in all."""
    return list(failures[:MAX_FAILURES_LISTED]), len(failures)
