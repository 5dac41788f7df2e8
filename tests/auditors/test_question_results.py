"""Issue 25, scope 6: every question's results (the retrieval.rr row's detail, `questions/<pipeline>.jsonl`) carry
the score of every rank, the query embedding calls and the chunks that hold evidence; unanswerable questions are
listed with no evidence; the TREC run and qrels written from them give trec_eval (pytrec_eval) the report's
recall@k and MRR. Hand-made: 2-d unit vectors at chosen angles, so every ranking and score is worked by hand."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from _retrievalkit import context, doc, held, question
from ingestaudit.auditors.retrieval import RetrievalAuditor
from ingestaudit.report.questions import listing, qrels, question_records, trec_run


def _records():
    # one document, chunks at 0, 30, 60 and 90 degrees, reference intervals [0, 10), [10, 20), [20, 30), [30, 40)
    d = doc("c/a", [0, 30, 60, 90], evidence={("q1", 0): held(1), ("q2", 0): held(3), ("q3", 0): held(0)})
    d.ref_intervals = [(0, 10), (10, 20), (20, 30), (30, 40)]
    qs = [question("q1", ["c/a"]), question("q2", ["c/a"]), question("q3", ["c/a"]),
          question("q4", answerable=False)]
    # q1 at 0 degrees ranks 0, 30, 60, 90 (evidence chunk 1 at rank 2); q2 at 90 ranks 90, 60, 30, 0 (rank 1);
    # q3 at 50 ranks 60 (10 away), 30 (20), 90 (40), 0 (50): its evidence chunk 0 at rank 4
    result = RetrievalAuditor(k=(1, 3, 5)).audit_pipeline(context([d], qs, {"q1": 0, "q2": 90, "q3": 50, "q4": 10}))
    rows = [SimpleNamespace(item=item, doc_class=cls, pipeline="p", metric=s.metric, state=s.state.value,
                            detail=s.detail, value=s.value) for item, _, cls, s in result.item_scores]
    return question_records(rows)["p"], {(r.item, r.metric): r.value for r in rows}


def test_every_rank_has_its_score_and_unanswerable_questions_are_listed():
    records, _ = _records()
    by = {r["id"]: r for r in records}
    assert list(by) == ["q1", "q2", "q3", "q4"]
    # cosine of the angle between question and chunk: cos 0, cos 30, cos 60, cos 90
    assert [x["score"] for x in by["q1"]["results"]] == pytest.approx([1.0, math.sqrt(3) / 2, 0.5, 0.0], abs=1e-6)
    assert [(x["rank"], x["doc"], x["start"], x["end"], x["holds"], x["hit"]) for x in by["q1"]["results"]] == [
        (1, "c/a", 0, 10, [], False), (2, "c/a", 10, 20, [0], True), (3, "c/a", 20, 30, [], False),
        (4, "c/a", 30, 40, [], False)]
    assert by["q1"]["relevant"] == [{"item": 0, "doc": "c/a", "chunk": 1, "start": 10, "end": 20}]
    assert all(r["embedding_calls"] == 1 for r in records)  # an embedder without a cache computes every query
    q4 = by["q4"]
    assert (q4["answerable"], q4["evidence"], q4["relevant"]) == (False, [], [])
    # q4 at 10 degrees: 0 (10 away), 30 (20), 60 (50), 90 (80)
    assert [x["start"] for x in q4["results"]] == [0, 10, 20, 30]
    assert q4["results"][0]["score"] == pytest.approx(math.cos(math.radians(10)), abs=1e-6)
    text = "\n".join(listing({"p": records}))
    assert "q4 [c] text of q4 (unanswerable: no evidence)" in text
    assert "p: 3 of 3 questions with a hit in the top results (misses: 0), 1 unanswerable" in text  # top 5
    assert text.endswith("; 4 query embedding calls")


def test_trec_run_and_qrels_give_pytrec_eval_the_reports_recall_and_mrr():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    records, values = _records()
    run: dict[str, dict[str, float]] = {}
    for line in trec_run("p", records).splitlines():
        topic, _, docno, _, score, _ = line.split()
        run.setdefault(topic, {})[docno] = float(score)
    qrel: dict[str, dict[str, int]] = {}
    for line in qrels(records).splitlines():
        topic, _, docno, rel = line.split()
        qrel.setdefault(topic, {})[docno] = int(rel)
    assert qrel["q1"] == {"c/a#0-10": 0, "c/a#10-20": 1, "c/a#20-30": 0, "c/a#30-40": 0}
    assert "q4" not in qrel  # unanswerable: the report scores it nowhere, so trec_eval must not average it in
    got = pytrec_eval.RelevanceEvaluator(qrel, {"recip_rank", "recall.1,3,5"}).evaluate(run)
    for q in ("q1", "q2", "q3"):
        assert got[q]["recip_rank"] == pytest.approx(values[(q, "retrieval.rr")])
        for k in (1, 3, 5):
            assert got[q][f"recall_{k}"] == pytest.approx(values[(q, f"retrieval.recall@{k}")])
    # by hand: rr 1/2, 1, 1/4 -> MRR 7/12; recall@1 (0 + 1 + 0) / 3, recall@3 (1 + 1 + 0) / 3, recall@5 1
    assert sum(got[q]["recip_rank"] for q in ("q1", "q2", "q3")) / 3 == pytest.approx(7 / 12)
    assert set(got) == {"q1", "q2", "q3"}  # trec_eval's mean is the report's: q4 (all zeros before) made it 7/16
    assert [sum(got[q][f"recall_{k}"] for q in ("q1", "q2", "q3")) / 3 for k in (1, 3, 5)] == pytest.approx(
        [1 / 3, 2 / 3, 1.0])


def test_a_cached_embedder_counts_only_the_queries_it_computes(tmp_path):
    from _retrievalkit import BagEmbedder
    from ingestaudit.stages.embedders.cache import CachedEmbedder, EmbeddingCache

    emb = CachedEmbedder(BagEmbedder(), EmbeddingCache(tmp_path / "cache"))
    assert emb.would_compute(["a b", "c d", "a b"]) == [1, 1, 0]  # the repeat is computed once
    emb.embed(["a b"])
    assert emb.would_compute(["a b", "c d"]) == [0, 1]  # "a b" now comes from the cache
    assert emb.stats()["misses"] == 1  # would_compute embeds nothing
