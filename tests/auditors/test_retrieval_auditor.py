"""The retrieval auditor on hand-built chunk artefacts (issue 10): waterfall attribution, the ANN split, filters,
latency and cost, abstention AUROC, intervals, and bad retrieval inputs. Vectors are 2-d unit vectors at chosen
angles, so every ranking and score below is worked by hand; no model runs."""

from __future__ import annotations

import json
import math

import pytest

from _retrievalkit import context, doc, held, pipeline, question, rows
from ingestaudit.auditors.retrieval import RetrievalAuditor, _latency_summary, _nearest_rank, auroc
from ingestaudit.measurement import State
from ingestaudit.auditors import metric_catalog as specs
from ingestaudit.report.aggregate import summarize_group
from ingestaudit.report.schema import Failure, MeasurementRow


def audit(ctx, **opts):
    return RetrievalAuditor(**opts).audit_pipeline(ctx)


def outcomes(result, k):
    """question id -> the outcome label holding its (single) evidence item at k."""
    return {item: s.label for item, _, _, s in result.item_scores
            if s.metric == f"retrieval.outcome@{k}" and s.state is State.OK and s.value == 1.0}


# ----------------------------------------------------------------------------------------------- waterfall


def test_an_empty_chunk_set_is_blamed_on_the_stage_that_emptied_it():
    docs = [doc("c/ok", [0, 90], evidence={("q_ok", 0): held(0)}),
            # the cleaner removed every character: no chunk, the trace says where the text went
            doc("c/cleaned", state=State.NO_PREDICTION, evidence={("q_clean", 0): held(cleaned=0.0)}),
            # the text survived cleaning, the chunker returned nothing
            doc("c/unchunked", state=State.NO_PREDICTION, evidence={("q_chunk", 0): held()}),
            # no output at all for the document (no trace): the parser lost it
            doc("c/nooutput", state=State.NO_PREDICTION)]
    qs = [question("q_ok", ["c/ok"]), question("q_clean", ["c/cleaned"]), question("q_chunk", ["c/unchunked"]),
          question("q_none", ["c/nooutput"])]
    result = audit(context(docs, qs, {"q_ok": 0, "q_clean": 0, "q_chunk": 0, "q_none": 0}))
    assert outcomes(result, 10) == {"q_ok": "retrieved", "q_clean": "lost_in_cleaning",
                                    "q_chunk": "split_by_chunking", "q_none": "lost_in_parsing"}
    recall = rows(result, "retrieval.recall@10")  # every question stays in the denominator, scoring 0
    assert {q: (s.numerator, s.denominator) for q, s in recall.items()} == {
        "q_ok": (1, 1), "q_clean": (0, 1), "q_chunk": (0, 1), "q_none": (0, 1)}


def test_a_chunkless_pipeline_scores_zero_and_keeps_every_question():
    docs = [doc("c/a", state=State.NO_PREDICTION, evidence={("q1", 0): held(cleaned=0.0)})]
    result = audit(context(docs, [question("q1", ["c/a"])], {"q1": 0}))
    assert rows(result, "retrieval.recall@5")["q1"].value == 0.0
    assert outcomes(result, 5) == {"q1": "lost_in_cleaning"}
    assert result.timings["source"].startswith("none")


def test_missed_by_ann_when_the_approximate_index_misses_what_exact_search_ranks_first():
    # IVF with 2 lists and nprobe 1: k-means puts chunks at 0/5/-5 degrees in one list and 60/80/90/100 in the
    # other; a query at 38 degrees is nearer the first centroid (0) than the second (82.6), so only that list is
    # searched, while exact search ranks the 60-degree chunk first (22 degrees away, against 33 for the 5-degree one)
    docs = [doc("c/a", [0, 5, -5], evidence={("q_rank", 0): held(0)}),
            doc("c/b", [60, 80, 90, 100], evidence={("q_ann", 0): held(0)})]
    qs = [question("q_ann", ["c/b"]), question("q_rank", ["c/a"])]
    pipe = pipeline("ivf", nlist=2, nprobe=1)
    result = audit(context(docs, qs, {"q_ann": 38, "q_rank": 38}, pipe=pipe))
    # q_ann: exact ranks its chunk 1st, the IVF list never returns it; q_rank: its chunk is exact's 3rd and the
    # index's 2nd (exact 60, 5, 0; IVF 5, 0, -5)
    assert outcomes(result, 1) == {"q_ann": "missed_by_ann", "q_rank": "missed_by_ranking"}
    assert outcomes(result, 3) == {"q_ann": "missed_by_ann", "q_rank": "retrieved"}
    assert rows(result, "retrieval.rr")["q_rank"].value == 0.5
    assert result.details["waterfall"]["by_class"]["c"]["missed_by_ann"] == 1


# ----------------------------------------------------------------------------------------------- filters


def test_false_exclusion_uses_the_holding_chunks_and_ignores_documents_without_chunks():
    acme, globex = {"tenant": "acme"}, {"tenant": "globex"}
    docs = [doc("c/kept", [0], metadata=acme, evidence={("q1", 0): held(0)}),
            doc("c/fenced", [90], metadata=globex, evidence={("q2", 0): held(0)}),
            # the cleaner emptied it: not "excluded by the filter", whatever its metadata
            doc("c/empty", state=State.NO_PREDICTION, evidence={("q3", 0): held(cleaned=0.0)})]
    qs = [question(q, [d], filter={"tenant": "acme"}) for q, d in (("q1", "c/kept"), ("q2", "c/fenced"),
                                                                   ("q3", "c/empty"))]
    result = audit(context(docs, qs, {"q1": 0, "q2": 90, "q3": 0}))
    fx = rows(result, "retrieval.filter_false_exclusion")
    assert {q: s.value for q, s in fx.items()} == {"q1": 0.0, "q2": 1.0, "q3": 0.0}
    items = rows(result, "retrieval.filter_excluded_items")
    assert {q: (s.numerator, s.denominator) for q, s in items.items()} == {"q1": (0, 1), "q2": (1, 1), "q3": (0, 1)}
    assert items["q3"].detail["items_no_chunk_holds"] == [0]
    assert outcomes(result, 10) == {"q1": "retrieved", "q2": "excluded_by_filter", "q3": "lost_in_cleaning"}
    # the built-in search filters inside the index: no violation
    assert {s.value for s in rows(result, "retrieval.filter_violation").values()} == {0.0}


def test_a_filter_on_a_field_no_chunk_carries_is_an_error_never_excluded_by_filter():
    # "tennant" is a typo: no chunk carries it, so the filter would exclude everything and charge the miss to the
    # filter stage; the question is an error for this pipeline, listed once, and the others are audited
    docs = [doc("c/a", [0, 90], metadata={"tenant": "acme"}, evidence={(q, 0): held(0) for q in ("q1", "q2", "q3")})]
    qs = [question("q1", ["c/a"], filter={"tenant": "acme"}), question("q2", ["c/a"], filter={"tennant": "acme"}),
          question("q3", ["c/a"], filter={"tennant": "x", "tenant": "acme"})]
    result = audit(context(docs, qs, {"q1": 0, "q2": 0, "q3": 0}))
    rr = rows(result, "retrieval.rr")
    assert (rr["q1"].state, rr["q1"].value) == (State.OK, 1.0)
    msg = "filter field 'tennant' is carried by none of this pipeline's 2 chunks (truth or chunker metadata)"
    for q in ("q2", "q3"):  # each its own error row, which the run lists as a failure of that question
        assert rr[q].state is State.ERROR and rr[q].detail["reason"].startswith(msg)
        assert "failure_listed" not in rr[q].detail
    assert result.failures == []
    assert outcomes(result, 10) == {"q1": "retrieved"}  # no waterfall share for the errors


# ----------------------------------------------------------------------------------------------- latency, cost


def test_nearest_rank_percentiles_on_distinct_values():
    assert _nearest_rank([5.0, 1.0, 4.0, 2.0, 3.0], 50) == 3.0  # ceil(2.5) = 3rd smallest
    assert _nearest_rank([5.0, 1.0, 4.0, 2.0, 3.0], 95) == 5.0  # ceil(4.75) = 5th
    assert _nearest_rank([float(v) for v in range(1, 21)], 95) == 19.0  # ceil(19.0) = 19th of 20
    assert _nearest_rank([float("nan")], 50) is None
    summary = _latency_summary([1.0, float("nan"), 0.5, 2.0, 0.1])  # sorted finite: 0.1 0.5 1 2
    assert summary == {"p50": 0.5, "p95": 2.0, "n": 4, "not_searched": 1, "method": "nearest rank"}


def test_a_filter_that_lets_nothing_through_puts_no_nan_in_the_timings():
    docs = [doc("c/a", [0, 90], metadata={"tenant": "acme"}, evidence={("q1", 0): held(0), ("q2", 0): held(0)})]
    qs = [question("q1", ["c/a"]), question("q2", ["c/a"], filter={"tenant": "nobody"})]
    calls = {"n": 0}

    def stats():  # the question embedder's cache counters: one model call embedding 2 texts of 3 word pieces
        calls["n"] += 1
        return {} if calls["n"] == 1 else {"calls": 1, "misses": 2, "hits": 0, "tokens_embedded": 6}

    docs[0].embed_stats = {"calls": 1, "misses": 2, "hits": 0, "tokens_embedded": 8}
    result = audit(context(docs, qs, {"q1": 0, "q2": 0}, stats=stats))
    lat = result.timings["query_latency_ms"]
    assert (lat["n"], lat["not_searched"]) == (1, 1) and lat["p50"] == lat["p95"] and lat["p50"] >= 0
    json.dumps(result.timings, allow_nan=False)  # raises on NaN or infinity
    cost = result.timings["embedding"]
    assert {k: cost[k] for k in ("chunk_texts", "chunk_word_pieces", "question_texts", "model_calls",
                                 "texts_embedded", "tokens_embedded", "cache_hits")} == {
        "chunk_texts": 2, "chunk_word_pieces": 6, "question_texts": 2, "model_calls": 2, "texts_embedded": 4,
        "tokens_embedded": 14, "cache_hits": 0}
    assert set(result.timings["index_build_s"]) == {"exact", "approximate"}
    # the filtered-out question returned nothing: it scores 0 and stays in, never NaN
    assert rows(result, "retrieval.recall@10")["q2"].value == 0.0
    assert outcomes(result, 10)["q2"] == "excluded_by_filter"


# ----------------------------------------------------------------------------------------------- abstention


def test_auroc_counts_ties_one_half():
    assert auroc([0.9, 0.5], [0.5, 0.1]) == 0.875  # 3 wins + 1 tie of 4 pairs
    assert auroc([-math.inf], [-math.inf, 0.0]) == 0.25
    with pytest.raises(ValueError):
        auroc([], [0.1])


def test_abstention_auroc_on_an_l2_index_reads_lower_distances_as_more_confident():
    # chunks at 0 and 90 degrees, squared L2 distance 2 - 2 cos(angle to the nearest chunk):
    # answerable q1 at 0 (distance 0), q2 at 45 (0.586); out-of-scope q3 at 45 (0.586, a tie with q2), q4 at 225
    # (3.414); q5 answerable whose filter lets nothing through: no result, least confident (-inf)
    docs = [doc("c/a", [0, 90], metadata={"tenant": "acme"},
                evidence={(q, 0): held(0, 1) for q in ("q1", "q2", "q5")})]
    qs = [question("q1", ["c/a"]), question("q2", ["c/a"]), question("q3"), question("q4"),
          question("q5", ["c/a"], filter={"tenant": "nobody"})]
    result = audit(context(docs, qs, {"q1": 0, "q2": 45, "q3": 45, "q4": 225, "q5": 0},
                           pipe=pipeline("flat", metric="l2")))
    (cls, score, n), = result.corpus_scores
    # confidences: answerable [0, -0.586, -inf], out-of-scope [-0.586, -3.414]; pairs won: q1 2, q2 1 + tie 0.5,
    # q5 0: 3.5 / 6 (reading the raw distances as scores would give 0.5 / 6)
    assert score.value == pytest.approx(3.5 / 6) and n == 5
    assert score.detail["no_result"] == 1 and score.detail["confidence"] == "minus the top-1 L2 distance"
    assert rows(result, "retrieval.recall@1")["q5"].value == 0.0


# ----------------------------------------------------------------------------------------------- intervals


def _qrow(i: int, metric: str, num: float, den: float) -> MeasurementRow:
    return MeasurementRow(item=f"q{i}", item_kind="question", doc_class="c", pipeline="p", stage="retrieval",
                          metric=metric, label="", value=num / den, numerator=num, denominator=den, state="ok",
                          detail={})


def test_intervals_follow_the_declaration_wilson_for_hits_bootstrap_over_questions_otherwise():
    RetrievalAuditor()  # registers the specs
    for name in ("recall@5", "precision@5", "outcome@5", "ndcg@5", "span_recall@5"):
        assert specs.get(f"retrieval.{name}").ci == "bootstrap", name
    for name in ("filter_excluded_items", "filter_violation", "ap", "rr"):
        assert specs.get(f"retrieval.{name}").ci == "bootstrap", name
    for name in ("hit@5", "filter_false_exclusion"):
        assert specs.get(f"retrieval.{name}").ci == "wilson", name
    # hit@5: 5 hits of 10 questions -> Wilson [0.237, 0.763]
    hits = [_qrow(i, "retrieval.hit@5", 1 if i < 5 else 0, 1) for i in range(10)]
    s = summarize_group(hits, pipeline="p", doc_class="c", seed=0)
    assert (round(s.ci_low, 3), round(s.ci_high, 3)) == (0.237, 0.763) and s.ci_method.startswith("wilson")
    # recall@5: 10 questions each finding 1 of 2 items: every resample of questions gives 10/20, so the bootstrap
    # interval is [0.5, 0.5]; a Wilson interval on 10 of 20 items would claim [0.299, 0.701]
    same = [_qrow(i, "retrieval.recall@5", 1, 2) for i in range(10)]
    s = summarize_group(same, pipeline="p", doc_class="c", seed=0)
    assert (s.micro, s.ci_low, s.ci_high) == (0.5, 0.5, 0.5)
    assert s.ci_method.startswith("bootstrap-percentile(micro,questions,")
    # two questions, 2/2 and 0/2: resamples give 1, 1/2 or 0 with probability 1/4, 1/2, 1/4 -> [0, 1]
    # (Wilson on 2 of 4 items: [0.150, 0.850])
    split = [_qrow(0, "retrieval.recall@5", 2, 2), _qrow(1, "retrieval.recall@5", 0, 2)]
    s = summarize_group(split, pipeline="p", doc_class="c", seed=0)
    assert (s.ci_low, s.ci_high) == (0.0, 1.0)


def test_ap_and_ndcg_rows_are_per_question_values_so_micro_is_map():
    # q1: one item at rank 2 (ap 0.5); q2: three items, one found at rank 1 (ap 1/3)
    docs = [doc("c/a", [0, 10, 20, 170, 180], evidence={("q1", 0): held(1), ("q2", 0): held(0),
                                                       ("q2", 1): held(4), ("q2", 2): held(3)})]
    qs = [question("q1", ["c/a"]),
          question("q2", relevant=[{"doc": "c/a"}, {"doc": "c/a", "page": 1}, {"doc": "c/a", "page": 2}])]
    result = audit(context(docs, qs, {"q1": 2, "q2": 0}), k=[1, 2])  # depth 2: ranks 0, 1 (q1), 0, 1 (q2)
    ap = rows(result, "retrieval.ap")
    assert (ap["q1"].value, ap["q1"].numerator, ap["q1"].denominator) == (0.5, 0.5, 1)
    assert ap["q2"].value == pytest.approx(1 / 3) and ap["q2"].denominator == 1
    assert ap["q2"].detail == {"precision_sum": 1.0, "evidence_items": 3}
    group = [MeasurementRow(item=q, item_kind="question", doc_class="c", pipeline="p", stage="retrieval",
                            metric="retrieval.ap", label="", value=s.value, numerator=s.numerator,
                            denominator=s.denominator, state="ok", detail={}) for q, s in ap.items()]
    s = summarize_group(group, pipeline="p", doc_class="c", seed=0)
    assert s.micro == pytest.approx(s.macro) == pytest.approx((0.5 + 1 / 3) / 2)  # MAP
    nd = rows(result, "retrieval.ndcg@2")["q2"]
    assert nd.denominator == 1 and nd.detail["ideal_dcg"] == pytest.approx(1 + 1 / math.log2(3))


# ----------------------------------------------------------------------------------------------- bad input


def test_rejected_questions_are_error_rows_reported_once():
    docs = [doc("c/a", [0], evidence={("q1", 0): held(0)})]
    msg = "questions.jsonl: line 2: relevant[0].doc: unknown document 'c/zz' (no docs/c/zz.*)"
    result = audit(context(docs, [question("q1", ["c/a"])], {"q1": 0}, rejected=[("q2", "c", msg)]))
    bad = [s for item, _, _, s in result.item_scores if item == "q2"]
    assert bad and {s.state for s in bad} == {State.ERROR}
    assert {s.detail["reason"] for s in bad} == {msg} and all(s.detail["failure_listed"] for s in bad)
    assert rows(result, "retrieval.recall@10")["q1"].value == 1.0


def test_error_rows_already_listed_as_failures_are_not_reported_again():
    from ingestaudit.runner import _unreported_errors

    def err(item: str, reason: str, **detail) -> MeasurementRow:
        return MeasurementRow(item=item, item_kind="question", doc_class="c", pipeline="p", stage="retrieval",
                              metric="retrieval.rr", label="", value=None, numerator=None, denominator=None,
                              state="error", detail={"reason": reason, **detail})

    listed = [Failure(item="", pipeline="p", stage="retrieval", message="retriever 'x' failed at load: boom")]
    found = _unreported_errors([err("q1", "retriever 'x' failed at load: boom", failure_listed=True),
                                err("q2", "retriever 'x' failed at load: boom", failure_listed=True),
                                err("q3", "retriever 'x': RuntimeError: one question")], listed)
    assert [(f.item, f.message) for f in found] == [("q3", "retriever 'x': RuntimeError: one question")]


PLUGINS = '''
from ingestaudit.stages.retrievers import Retriever


class BreaksAtIndex(Retriever):
    name = "breaks"

    def index(self, chunks, vectors):
        raise RuntimeError("cannot build")

    def search(self, question, vector, k, allowed):
        return []


class IgnoresFilter(Retriever):
    name = "ignores"

    def search(self, question, vector, k, allowed):
        if "explode" in question:
            raise RuntimeError("boom")
        return [(1, 0.9), (0, 0.8)][:k]  # rows 1 (globex) and 0 (acme), whatever the filter
'''


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    (tmp_path / "retrieval_test_plugins.py").write_text(PLUGINS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "retrieval_test_plugins"


def _two_tenants():
    docs = [doc("c/a", [0], metadata={"tenant": "acme"}, evidence={("q1", 0): held(0), ("q2", 0): held(0)}),
            doc("c/b", [90], metadata={"tenant": "globex"}, evidence={("q3", 0): held(0)})]
    qs = [question("q1", ["c/a"], filter={"tenant": "acme"}), question("q2", ["c/a"], question="explode"),
          question("q3", ["c/b"], filter={"tenant": "acme"})]
    return docs, qs


@pytest.mark.parametrize("use, step", [("BreaksAtIndex", "index"), ("NoSuchClass", "load")])
def test_a_retriever_failing_at_load_or_index_gives_every_question_an_error_row_and_one_failure(plugins, use, step):
    docs, qs = _two_tenants()
    result = audit(context(docs, qs, {}, pipe=pipeline(retriever=f"{plugins}:{use}")))
    assert len(result.failures) == 1 and f"failed at {step}" in result.failures[0]
    rr = rows(result, "retrieval.rr")
    assert set(rr) == {"q1", "q2", "q3"}
    assert {(s.state, s.detail["reason"], s.detail["failure_listed"]) for s in rr.values()} == {
        (State.ERROR, result.failures[0], True)}


def test_results_against_the_filter_are_audited_as_returned_and_counted(plugins):
    docs, qs = _two_tenants()
    result = audit(context(docs, qs, {}, pipe=pipeline(retriever=f"{plugins}:IgnoresFilter")), k=[1, 2])
    viol = rows(result, "retrieval.filter_violation")
    # q1 (filter acme): rows 1 (globex, rank 1) and 0 (acme): 1 of 2 violate; q3: same list, 1 of 2
    assert (viol["q1"].numerator, viol["q1"].denominator, viol["q1"].detail) == (1, 2, {"ranks": [1]})
    # q3's evidence sits in the globex chunk, which the filter excludes, but the retriever returned it at rank 1:
    # audited as returned (retrieved, recall 1), the violation counted above
    assert outcomes(result, 1) == {"q3": "retrieved", "q1": "missed_by_ranking"}
    assert rows(result, "retrieval.recall@1")["q3"].value == 1.0
    assert rows(result, "retrieval.filter_false_exclusion")["q3"].value == 1.0  # the filter would have hidden it
    # the question whose search raised is an error row for this pipeline only, not a listed failure
    q2 = rows(result, "retrieval.rr")["q2"]
    assert q2.state is State.ERROR and "boom" in q2.detail["reason"] and "failure_listed" not in q2.detail
    assert result.failures == []


def _user_file(tmp_path, lines):
    folder = tmp_path / "outputs" / "p"
    folder.mkdir(parents=True)
    (folder / "retrieval.jsonl").write_text("\n".join(lines) + "\n")
    return pipeline(folder=folder)


def test_a_malformed_line_in_retrieval_jsonl_is_named_and_the_valid_lines_are_audited(tmp_path):
    ev = {(q, 0): held(1 if q == "q1" else 0) for q in ("q1", "q2", "q3", "q4")}
    docs = [doc("c/a", [0, 90], evidence=ev)]
    qs = [question(q, ["c/a"]) for q in ("q1", "q2", "q3", "q4")]
    pipe = _user_file(tmp_path, [json.dumps({"question": "q1", "results": [{"doc": "c/a", "chunk": 0},
                                                                            {"doc": "c/a", "chunk": 1}]}),
                                 '{"question": "q2", "results": [',  # line 2: cut short, its question unknown
                                 json.dumps({"question": "q3", "results": [{"doc": "c/a", "chunk": 7}]}),
                                 json.dumps({"question": "q4", "results": {"doc": "c/a"}})])  # names q4
    result = audit(context(docs, qs, {}, pipe=pipe))
    rr = rows(result, "retrieval.rr")
    assert rr["q1"].value == 0.5  # its line is valid: audited
    # q2 has no readable line and line 2 cannot be read: it may have been q2's, so an error, never a silent 0
    assert rr["q2"].state is State.ERROR
    assert "no readable line of" in rr["q2"].detail["reason"] and "1 line(s) cannot be read (its results may " \
        "be on one of them; first: line 2: " in rr["q2"].detail["reason"]
    assert rr["q3"].state is State.ERROR
    assert "line 3: results[0]: unknown chunk 7 of 'c/a' (2 chunks)" in rr["q3"].detail["reason"]
    # line 4 still names its question: q4's own error, not a listed failure
    assert rr["q4"].state is State.ERROR and "failure_listed" not in rr["q4"].detail
    assert "line 4: 'question' must be a string and 'results' a list" in rr["q4"].detail["reason"]
    assert len(result.failures) == 1 and "line 2:" in result.failures[0]


def test_without_an_unreadable_line_a_question_with_no_line_scores_0(tmp_path):
    docs = [doc("c/a", [0], evidence={("q1", 0): held(0), ("q2", 0): held(0)})]
    pipe = _user_file(tmp_path, [json.dumps({"question": "q1", "results": {"doc": "c/a"}})])
    result = audit(context(docs, [question("q1", ["c/a"]), question("q2", ["c/a"])], {}, pipe=pipe))
    rr = rows(result, "retrieval.rr")
    assert rr["q1"].state is State.ERROR  # its malformed line names it
    assert (rr["q2"].state, rr["q2"].value) == (State.OK, 0.0)  # no line at all: the retriever returned nothing
    assert result.failures == []


def test_a_question_repeated_in_retrieval_jsonl_is_an_error_of_that_question(tmp_path):
    docs = [doc("c/a", [0], evidence={("q1", 0): held(0), ("q2", 0): held(0), ("q3", 0): held(0)})]
    line = json.dumps({"question": "q1", "results": [{"doc": "c/a", "chunk": 0, "score": 1.0}], "latency_ms": 2.0})
    bad = json.dumps({"question": "q3", "results": [{"doc": "c/zz", "chunk": 0}]})
    pipe = _user_file(tmp_path, [line, line, json.dumps({"question": "q2", "results": [], "latency_ms": 4.0}),
                                 bad, json.dumps({"question": "q3", "results": []})])
    qs = [question("q1", ["c/a"]), question("q2", ["c/a"]), question("q3", ["c/a"])]
    result = audit(context(docs, qs, {}, pipe=pipe))
    rr = rows(result, "retrieval.rr")
    assert rr["q1"].state is State.ERROR and "line 2: question 'q1' repeated (first on line 1)" in \
        rr["q1"].detail["reason"]
    assert rr["q2"].value == 0.0  # an empty result list: 0, kept
    # the repeat does not hide the first line's own problem
    assert rr["q3"].detail["reason"].endswith("line 5: question 'q3' repeated (first on line 4); "
                                              "line 4: results[0]: unknown document 'c/zz'")
    assert result.timings["query_latency_ms"]["p50"] == 2.0 and result.timings["query_latency_ms"]["n"] == 2


def test_a_chunk_repeated_in_one_result_list_counts_once_and_bad_scores_and_latencies_are_named(tmp_path):
    docs = [doc("c/a", [0, 90], evidence={("q1", 0): held(0), ("q2", 0): held(0), ("q3", 0): held(0)})]
    same = {"doc": "c/a", "chunk": 0, "score": 0.9}
    pipe = _user_file(tmp_path, [json.dumps({"question": "q1", "results": [same] * 10, "latency_ms": 3.0}),
                                 json.dumps({"question": "q2", "results": [{"doc": "c/a", "chunk": 0, "score": "high"}],
                                             "latency_ms": -1e9}),
                                 json.dumps({"question": "q3", "results": [same], "latency_ms": True})])
    qs = [question(q, ["c/a"]) for q in ("q1", "q2", "q3")]
    result = audit(context(docs, qs, {}, pipe=pipe), k=[10])
    p10 = rows(result, "retrieval.precision@10")["q1"]
    assert (p10.numerator, p10.denominator) == (1, 10)  # ten copies of one relevant chunk: 1 of 10, not 10 of 10
    assert rows(result, "retrieval.recall@10")["q1"].value == 1.0
    q2 = rows(result, "retrieval.rr")["q2"]
    assert q2.state is State.ERROR and "line 2: results[0]: score 'high' is not a finite number" in q2.detail["reason"]
    lat = result.timings["query_latency_ms"]
    assert (lat["n"], lat["p50"]) == (1, 3.0)  # -1e9 and true are never percentiles; each named once
    assert [f.split(": ", 1)[1] for f in result.failures] == [
        "line 2: latency_ms -1000000000.0 is not a finite number >= 0: not counted in the latency percentiles",
        "line 3: latency_ms True is not a finite number >= 0: not counted in the latency percentiles"]


def test_depth_below_the_largest_k_is_rejected():
    with pytest.raises(ValueError, match="depth"):
        RetrievalAuditor(k=[5, 10], depth=5)
    assert RetrievalAuditor(k=[5, 10]).options()["depth"] == 10
    assert "multi_item_chunk" in RetrievalAuditor().options()["conventions"]


def test_rr_and_ap_read_the_top_depth_results():
    # the only holding chunk is 3rd: at depth 2 (the largest k) rr and ap are 0, at depth 3 they are 1/3
    docs = [doc("c/a", [0, 10, 20], evidence={("q1", 0): held(2)})]
    ctx = context(docs, [question("q1", ["c/a"])], {"q1": 0})
    assert rows(audit(ctx, k=[2]), "retrieval.rr")["q1"].value == 0.0
    at3 = audit(ctx, k=[2], depth=3)
    assert rows(at3, "retrieval.rr")["q1"].value == pytest.approx(1 / 3)
    assert rows(at3, "retrieval.ap")["q1"].value == pytest.approx(1 / 3)
    assert rows(at3, "retrieval.recall@2")["q1"].value == 0.0


def test_every_convention_is_printed_in_the_report_and_in_docs_metrics_md():
    from pathlib import Path

    from ingestaudit.auditors.retrieval import CONVENTIONS

    docs = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text(encoding="utf-8")
    printed = RetrievalAuditor().options()["conventions"]
    for name, text in CONVENTIONS.items():
        assert printed[name] == text and f"- **{name}**: {text}" in docs, name


def test_a_byte_order_mark_before_the_first_line_of_retrieval_jsonl_and_ann_results_jsonl_is_not_text(tmp_path):
    """Regression: files written by Windows tools (PowerShell's Out-File, Notepad) start with a UTF-8 byte-order
    mark, which made line 1 unreadable: its question became an error, and the others errors too."""
    from ingestaudit.auditors.index import read_ann_results

    docs = [doc("c/a", [0, 90], evidence={("q1", 0): held(1), ("q2", 0): held(0)})]
    pipe = _user_file(tmp_path, ["\ufeff" + json.dumps({"question": "q1", "results": [{"doc": "c/a", "chunk": 0},
                                                                                       {"doc": "c/a", "chunk": 1}]}),
                                 json.dumps({"question": "q2", "results": [{"doc": "c/a", "chunk": 0}]})])
    qs = [question("q1", ["c/a"]), question("q2", ["c/a"])]
    rr = rows(audit(context(docs, qs, {}, pipe=pipe)), "retrieval.rr")
    assert (rr["q1"].state, rr["q1"].value, rr["q2"].value) == (State.OK, 0.5, 1.0)
    path = tmp_path / "ann_results.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"query": "q", "results": ["3", "1"]}).encode() + b"\n")
    got = read_ann_results(path)
    assert (got.errors, got.unreadable) == ({}, [])
    assert dict(got) == {"q": ["3", "1"]} and got.lines == {"q": 1}
