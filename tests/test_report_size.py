"""report.json stays small at corpus scale (issue 14): rows live in the store, failures are grouped by cause and
capped, item hashes keep 16 hex digits; and a failure is listed once per document, not once per pipeline variant."""

from __future__ import annotations

import hashlib

from ingestaudit.report.failures import bounded, group_failures, merge_pipelines
from ingestaudit.report.schema import (ITEM_HASH_DIGITS, MAX_FAILURES_LISTED, MAX_GROUP_EXAMPLES, CorpusInfo,
                                       Failure, PipelineInfo, Report, StageInfo, StoreRef, SummaryRow, ToolInfo)

N_ITEMS = 50_000
CLASSES = ("text", "web", "pdf")


def _summary() -> list[SummaryRow]:
    states = {"ok": N_ITEMS, "no_reference": 0, "no_prediction": 0, "error": 0, "skipped": 0}
    return [SummaryRow(pipeline="pipe", doc_class=cls, stage=m.split(".")[0], metric=m, label="", n_docs=N_ITEMS,
                       micro=0.1, macro=0.1, ci_low=0.09, ci_high=0.11, ci_method="bootstrap-percentile(micro,docs,"
                       "n=1000,seed=1,0.95)", states=states, numerator=1.0, denominator=10.0)
            for cls in (*CLASSES, "__all__") for m in (f"extraction.m{k}" for k in range(30))]


def test_report_json_of_50000_items_all_failing_stays_under_5_mb():
    items = [f"{CLASSES[i % 3]}/d{i:06d}" for i in range(N_ITEMS)]
    variants = ["pipe", "pipe/size=256"]  # two sweep variants of one parser: one failure per document
    failures = [Failure(item=it, pipeline=p, stage="parse",
                        message=f"docs/{it}.pdf: cannot open broken document (code {i % 7})")
                for i, it in enumerate(items) for p in variants]
    merged = merge_pipelines(failures, variants)
    assert len(merged) == N_ITEMS and merged[0].pipelines == variants and merged[0].pipeline == "pipe"
    groups = group_failures(merged)
    listed, total = bounded(merged)
    assert total == N_ITEMS and len(listed) == MAX_FAILURES_LISTED
    assert [g.count for g in groups] == [2 * N_ITEMS]  # one cause: item ids, file names and numbers blanked
    assert len(groups[0].examples) == MAX_GROUP_EXAMPLES and groups[0].stages == ["parse"]
    hashes = {it: hashlib.sha256(it.encode()).hexdigest()[:ITEM_HASH_DIGITS] for it in items}
    report = Report(
        tool=ToolInfo(name="ingestaudit", version="0"),
        corpus=CorpusInfo(path="/corpus", fingerprint="f" * 64, documents={c: N_ITEMS // 3 for c in CLASSES},
                          item_hashes=hashes),
        config={}, environment={}, summary=_summary(), failures=listed, failures_total=total, failure_groups=groups,
        pipelines=[PipelineInfo(name=p, kind="configured", stages={"parser": StageInfo(
            implementation="pymupdf", version="1", settings={})}) for p in variants],
        measurements=StoreRef(file="measurements.parquet", sha256="0" * 64, rows=20 * N_ITEMS))
    size = len(report.to_json().encode("utf-8"))
    assert size < 5_000_000, size
    assert size > 1_500_000  # the 50,000 hashes are in it (16 digits each), the rows are not


def test_the_same_failure_in_several_pipelines_is_one_failure_and_others_stay_apart():
    fs = [Failure(item="d/x", pipeline="b", stage="parse", message="boom"),
          Failure(item="d/x", pipeline="a", stage="parse", message="boom"),
          Failure(item="d/x", pipeline="a", stage="chunking", message="other"),
          Failure(item="", pipeline="a", stage="index", message="whole stage"),
          Failure(item="", pipeline="b", stage="index", message="whole stage")]
    got = merge_pipelines(fs, ["a", "b"])
    assert [(f.item, f.pipeline, f.pipelines, f.stage) for f in got] == [
        ("", "a", [], "index"), ("", "b", [], "index"), ("d/x", "a", [], "chunking"), ("d/x", "a", ["a", "b"], "parse")]
    groups = group_failures(got)
    assert [(g.cause, g.count) for g in groups] == [("boom", 2), ("whole stage", 2), ("other", 1)]


def test_a_cause_counts_each_problem_of_one_file_and_each_failure_without_an_item():
    """Regression: the count was distinct (item, pipeline) pairs, so three bad lines of questions.jsonl were "1" and
    two index failures without an item were "1", below failures_total; the same failure under two stages is one."""
    fs = [Failure(item="questions.jsonl", pipeline="", stage="questions", message=f"line {n}: id: missing")
          for n in (2, 5, 9)]
    fs += [Failure(item="", pipeline="a", stage="index", message=f"ann_results.jsonl line {n}: not JSON")
           for n in (1, 4)]
    fs += [Failure(item="d/x", pipeline="a", stage=s, message="timed out after 60 s") for s in ("parse", "chunking")]
    counts = {g.cause: g.count for g in group_failures(fs)}
    assert sorted(counts.values()) == [1, 2, 3] and sum(counts.values()) == len(fs) - 1
