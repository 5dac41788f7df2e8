"""The index stage (ingestaudit.stages.index) and the ANN index auditor (ingestaudit.auditors.index), with the
acceptance values of issue 11."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ingestaudit.auditors.base import PipelineContext
from ingestaudit.auditors.index import (IndexAuditor, UserIndexError, audit_vectors, read_ann_results,
                                        read_user_vectors)
from ingestaudit.chain import DocChunks
from ingestaudit.measurement import State
from ingestaudit.metrics.specs import get
from ingestaudit.pipeline import make_pipeline
from ingestaudit.questions import Question
from ingestaudit.stages.index import (IndexInputError, IndexSettings, build_ann, build_exact, exact_search,
                                      index_memory_bytes, l2_normalise, search, timed_search)

IP_BASE = np.array([[1, 0], [10, 10], [0.9, 0.1]], dtype=np.float32)
Q10 = np.array([[1, 0]], dtype=np.float32)


@pytest.fixture(autouse=True)
def _restore_metric_registry():
    """audit_vectors registers the specs of non-default k values (index.recall@2...); keep them out of the global
    registry that docs/metrics.md is generated from (the defaults registered on import stay)."""
    from ingestaudit.metrics import specs

    saved = dict(specs._REGISTRY)
    yield
    specs._REGISTRY.clear()
    specs._REGISTRY.update(saved)


def rows(result, metric, label="", cls="__all__"):
    found = [s for c, s, _ in result.corpus_scores if c == cls and s.metric == metric and s.label == label]
    assert len(found) == 1, (metric, label, cls, found)
    return found[0]


def random_vectors(n, d, seed):
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


# --- acceptance ------------------------------------------------------------------------------------------------------

def test_inner_product_ranks_by_length_and_normalisation_restores_cosine():
    _, ids = search(build_exact(IP_BASE, "ip"), Q10, 3)
    assert ids.tolist() == [[1, 0, 2]]
    _, ids = search(build_exact(l2_normalise(IP_BASE), "cosine"), l2_normalise(Q10), 3)
    assert ids.tolist() == [[0, 2, 1]]


def test_declared_cosine_without_normalising_is_flagged_and_ip_dominated_is_two_thirds():
    ids, classes = ["a", "b", "c"], ["x"] * 3
    raw = audit_vectors(IP_BASE, ids, classes, declared_metric="cosine", normalised=False,
                        settings=IndexSettings(kind="flat"), n_sample_queries=3, k_list=(1,))
    assert raw.details["cosine_unnormalised"]["flag"] is True
    dom = rows(raw, "index.ip_dominated")
    assert (dom.value, dom.numerator, dom.denominator) == (pytest.approx(2 / 3), 2, 3)
    assert dom.detail["ci"]["method"].startswith("wilson")
    fixed = audit_vectors(IP_BASE, ids, classes, declared_metric="cosine", normalised=True,
                          settings=IndexSettings(kind="flat"), n_sample_queries=3, k_list=(1,))
    assert fixed.details["cosine_unnormalised"]["flag"] is False
    assert rows(fixed, "index.ip_dominated").value == 0.0


def test_three_vectors_and_k5_give_three_ids_two_paddings_and_recall_one():
    scores, ids = exact_search(IP_BASE, Q10, 5, "ip")
    assert ids.tolist() == [[1, 0, 2, -1, -1]]
    assert np.isneginf(scores[0, 3:]).all()
    _, ids_flat = search(build_exact(IP_BASE, "ip"), Q10, 5)
    assert ids_flat.tolist() == [[1, 0, 2, -1, -1]]
    res = audit_vectors(IP_BASE, ["a", "b", "c"], ["x"] * 3, queries=Q10, query_classes=["x"],
                        declared_metric="ip", normalised=False, settings=IndexSettings(kind="flat", metric="ip"),
                        k_list=(5,), n_sample_queries=0)
    r = rows(res, "index.recall@5")
    assert (r.value, r.numerator, r.denominator) == (1.0, 3.0, 3.0)


def tie_case(answer):
    """Query at the origin; a at squared distance 0.01, b and c both at 0.04 (L2): an exact tie."""
    base = np.array([[0.1, 0], [0.2, 0], [0, 0.2]], dtype=np.float32)
    q = np.zeros((1, 2), dtype=np.float32)
    _, exact = exact_search(base, q, 2, "l2")
    assert exact[0, 0] == 0 and set(exact[0].tolist()) < {0, 1, 2}
    other = ({1, 2} - {int(exact[0, 1])}).pop()  # the tied id exact search left out
    ids = ["a", "b", "c"]
    results = {"q1": [ids[i] for i in answer(other)]}
    return audit_vectors(base, ids, ["x"] * 3, queries=q, query_ids=["q1"], query_classes=["x"], declared_metric="l2",
                         normalised=False, k_list=(2,), n_sample_queries=0, ann_results=results)


def test_ties_user_answer_a_c_scores_half_and_tie_aware_one():
    res = tie_case(lambda other: [0, other])
    assert rows(res, "index.recall@2").value == 0.5
    assert rows(res, "index.recall_tie_aware@2").value == 1.0


def test_ties_user_answer_a_a_counts_the_repeat_once():
    res = tie_case(lambda other: [0, 0])
    assert rows(res, "index.recall@2").value == 0.5
    assert rows(res, "index.recall_tie_aware@2").value == 0.5


def test_fifty_vectors_repeated_forty_times():
    base = np.repeat(random_vectors(50, 32, seed=7), 40, axis=0)
    res = audit_vectors(base, [f"c{i}" for i in range(len(base))], ["x"] * len(base),
                        settings=IndexSettings(m=16, ef_search=16), k_list=(10,), sweep=(), n_sample_queries=100)
    assert rows(res, "index.duplicate_vectors").value == 1950
    rec, tie = rows(res, "index.recall@10"), rows(res, "index.recall_tie_aware@10")
    assert tie.value >= rec.value
    # here strictly: a returned copy of a neighbour that exact search did not list is a tie, not a miss
    assert tie.numerator > rec.numerator


def test_nan_vectors_and_dimension_mismatch_give_clear_errors():
    bad = IP_BASE.copy()
    bad[2, 1] = np.nan
    with pytest.raises(IndexInputError, match=r"NaN or infinity \(first: row 2\)"):
        audit_vectors(bad, ["a", "b", "c"], ["x"] * 3)
    with pytest.raises(IndexInputError, match="NaN or infinity"):
        build_ann(np.array([[1, np.inf]], dtype=np.float32), IndexSettings())
    with pytest.raises(IndexInputError, match="dimension 3 does not match the index dimension 2"):
        audit_vectors(IP_BASE, ["a", "b", "c"], ["x"] * 3, queries=np.ones((1, 3), np.float32),
                      query_classes=["x"])
    with pytest.raises(IndexInputError, match="dimension 3 does not match"):
        search(build_exact(IP_BASE, "ip"), np.ones((1, 3), np.float32), 1)
    with pytest.raises(IndexInputError, match="empty"):
        build_exact(np.zeros((0, 4), np.float32), "l2")


# --- the stage -------------------------------------------------------------------------------------------------------

def test_filtered_search_returns_only_allowed_rows_for_every_kind():
    base = random_vectors(400, 8, seed=1)
    q = random_vectors(3, 8, seed=2)
    allowed = np.arange(0, 400, 5)
    _, exact = exact_search(base, q, 10, "l2", allowed=allowed)
    assert np.isin(exact, allowed).all()
    ref = allowed[np.argsort(((q[:, None] - base[allowed][None]) ** 2).sum(-1), axis=1)[:, :10]]
    assert (exact == ref).all()
    for kind in ("hnsw", "ivf", "flat"):
        index, _, _ = build_ann(base, IndexSettings(kind=kind, metric="l2", nprobe=20))
        _, ids = search(index, q, 10, allowed=allowed)
        assert np.isin(ids[ids >= 0], allowed).all(), kind
    _, none = search(index, q, 4, allowed=np.array([], dtype=np.int64))
    assert (none == -1).all()


def test_build_ann_memory_matches_faiss_serialisation_and_build_is_reproducible():
    import faiss

    base = random_vectors(1500, 16, seed=4)
    for kind in ("hnsw", "ivf", "flat"):
        index, seconds, memory = build_ann(base, IndexSettings(kind=kind))
        assert seconds >= 0 and memory == index_memory_bytes(index)
        assert abs(len(faiss.serialize_index(index)) - memory) < 2048, kind
    a, _, _ = build_ann(base, IndexSettings(m=8))
    b, _, _ = build_ann(base, IndexSettings(m=8))
    assert (faiss.vector_to_array(a.hnsw.neighbors) == faiss.vector_to_array(b.hnsw.neighbors)).all()


def test_timed_search_is_single_threaded_and_restores_the_thread_count():
    import faiss

    base = random_vectors(300, 8, seed=5)
    index, _, _ = build_ann(base, IndexSettings(m=8, metric="l2"))
    before = faiss.omp_get_max_threads()
    scores, ids, lat = timed_search(index, base[:5], 3, allowed=[None, np.arange(10), None, None,
                                                                 np.array([], np.int64)])
    assert faiss.omp_get_max_threads() == before
    assert ids.shape == (5, 3) and (lat[:4] >= 0).all() and np.isnan(lat[4]) and (ids[4] == -1).all()
    assert np.isin(ids[1], np.arange(10)).all()
    _, ref = search(index, base[:1], 3)
    assert (ids[0] == ref[0]).all()


def test_settings_defaults_and_validation():
    s = IndexSettings()
    assert (s.kind, s.metric, s.m, s.ef_construction, s.ef_search) == ("hnsw", "cosine", 32, 40, 64)
    assert IndexSettings(kind="ivf").resolved_nlist(10_000) == 100
    assert IndexSettings.from_options("hnsw", {"M": 16, "efSearch": 8, "normalise": True}).m == 16
    with pytest.raises(ValueError, match="unknown index kind"):
        IndexSettings(kind="annoy")
    with pytest.raises(ValueError, match="ef_search"):
        IndexSettings(ef_search=0)
    with pytest.raises(ValueError, match="unknown option.*ef_serch"):
        IndexSettings.from_options("hnsw", {"ef_serch": 8})


# --- the auditor ---------------------------------------------------------------------------------------------------

def test_sweep_rises_with_ef_search_and_names_an_operating_point():
    base = random_vectors(3000, 24, seed=9)
    res = audit_vectors(base, [f"c{i}" for i in range(3000)], ["a", "b", "c"] * 1000,
                        settings=IndexSettings(m=4, ef_construction=8), n_sample_queries=150, target_recall=0.9)
    cells = res.details["sweep"]["cells"]
    assert [c["value"] for c in cells] == [16, 32, 64, 128, 256]
    recalls = [c["unfiltered"]["recall@10"]["value"] for c in cells]
    assert recalls[-1] > recalls[0] and recalls == sorted(recalls)
    op = res.details["operating_point"]
    if op["value"] is not None:
        assert op["recall"]["value"] >= 0.9 and op["ci"]["low"] <= op["recall"]["value"] <= op["ci"]["high"]
        earlier = [c for c in cells if c["value"] < op["value"]]
        assert all(c["unfiltered"]["recall@10"]["value"] < 0.9 for c in earlier)
    t = res.details["timings"]
    assert {c["label"] for c in t["cells"]} == {c["label"] for c in cells}
    assert all(c["p50_ms"] <= c["p95_ms"] for c in t["cells"]) and t["build_seconds"] > 0
    assert {"a", "b", "c"} <= {c for c, _, _ in res.corpus_scores}


def test_ivf_sweep_reaches_exact_recall_when_every_list_is_probed():
    base = random_vectors(900, 8, seed=12)
    res = audit_vectors(base, [f"c{i}" for i in range(900)], ["x"] * 900,
                        settings=IndexSettings(kind="ivf", metric="l2", nlist=30), normalised=False,
                        n_sample_queries=60)
    cells = res.details["sweep"]["cells"]
    assert [c["value"] for c in cells] == [1, 2, 4, 8, 16, 30]
    assert cells[-1]["unfiltered"]["recall_tie_aware@10"]["value"] == 1.0


def test_filtered_questions_are_reported_apart_and_details_are_deterministic():
    base = random_vectors(800, 16, seed=21)
    q = random_vectors(6, 16, seed=22)
    allowed = [None, None, None, np.arange(0, 800, 9), np.arange(0, 800, 9), np.array([], np.int64)]
    kw = dict(queries=q, query_ids=[f"q{i}" for i in range(6)], query_classes=["a", "b", "a", "a", "b", "b"],
              query_allowed=allowed, settings=IndexSettings(m=8), n_sample_queries=40, sweep=(16, 64))
    ids, classes = [f"c{i}" for i in range(800)], ["a", "b"] * 400
    one = audit_vectors(base, ids, classes, **kw)
    two = audit_vectors(base, ids, classes, **kw)
    f = rows(one, "index.recall@10", label="filtered")
    assert f.denominator == 20 and f.detail["questions"] == 2 and f.detail["no_candidates"] == 1
    u = rows(one, "index.recall@10")
    assert u.detail["sampled_chunks"] == 40 and u.detail["questions"] == 3
    assert "ci" in u.detail and u.detail["ci"]["low"] <= u.value <= u.detail["ci"]["high"]
    assert one.details["queries"]["no_candidates"] == ["q5"]
    strip = lambda r: json.dumps({k: v for k, v in r.details.items() if k != "timings"}, sort_keys=True)
    assert strip(one) == strip(two)
    assert [(c, s) for c, s, _ in one.corpus_scores] == [(c, s) for c, s, _ in two.corpus_scores]


def test_flat_index_has_recall_one_and_no_sweep():
    base = random_vectors(200, 6, seed=8)
    res = audit_vectors(base, [f"c{i}" for i in range(200)], ["x"] * 200, settings=IndexSettings(kind="flat"),
                        n_sample_queries=30)
    assert rows(res, "index.recall_tie_aware@10").value == 1.0
    assert res.details["sweep"]["cells"] == [] and res.details["operating_point"]["value"] is None
    assert "no sweep ran" in res.details["operating_point"]["reason"]


def test_a_chunk_is_never_its_own_neighbour_but_its_copies_are():
    base = np.array([[1, 0], [1, 0], [0, 1]], dtype=np.float32)
    res = audit_vectors(base, ["a", "b", "c"], ["x"] * 3, settings=IndexSettings(kind="flat"), k_list=(1,),
                        n_sample_queries=3)
    r = rows(res, "index.recall@1")
    assert (r.value, r.denominator) == (1.0, 3.0)  # every sampled chunk has n - 1 = 2 candidates, k = 1
    # a store that answers "a" with itself then its copy "b": the own id is dropped, the copy is the neighbour
    user = audit_vectors(base, ["a", "b", "c"], ["x"] * 3, k_list=(1,), ann_results={"a": ["a", "b"]})
    r = rows(user, "index.recall@1")
    assert (r.value, r.numerator, r.denominator) == (1.0, 1.0, 1.0)
    # answering with only itself leaves nothing after the own id is dropped
    user = audit_vectors(base, ["a", "b", "c"], ["x"] * 3, k_list=(1,), ann_results={"a": ["a"]})
    assert rows(user, "index.recall@1").value == 0.0


def test_metric_specs_are_registered_with_sources():
    for name in ("index.recall@10", "index.recall_tie_aware@5", "index.one_recall@1", "index.duplicate_vectors",
                 "index.ip_dominated"):
        assert get(name).stage == "index"
    assert "FAISS" in get("index.recall@10").description
    assert "never counts as its own neighbour" in get("index.recall@10").description
    assert "ann-benchmarks" in get("index.recall_tie_aware@10").description
    assert "1-recall@R" in get("index.one_recall@1").description


# --- a user's own index ----------------------------------------------------------------------------------------------

def test_read_user_vectors_and_results(tmp_path):
    np.save(tmp_path / "vectors.npy", IP_BASE)
    (tmp_path / "vector_ids.json").write_text(json.dumps(["d/a#0", "d/a#1", "d/b#0"]))
    vectors, ids = read_user_vectors(tmp_path)
    assert vectors.dtype == np.float32 and ids == ["d/a#0", "d/a#1", "d/b#0"]
    (tmp_path / "vector_ids.json").write_text(json.dumps(["d/a#0", "d/a#0", "d/b#0"]))
    with pytest.raises(UserIndexError, match=r"vector_ids.json: id 'd/a#0' repeated"):
        read_user_vectors(tmp_path)
    (tmp_path / "vector_ids.json").write_text(json.dumps(["d/a#0"]))
    with pytest.raises(UserIndexError, match=r"vector_ids.json: 1 ids for 3 rows"):
        read_user_vectors(tmp_path)
    bad = IP_BASE.copy()
    bad[1, 0] = np.inf
    np.save(tmp_path / "vectors.npy", bad)
    with pytest.raises(UserIndexError, match=r"vectors.npy.*row 1"):
        read_user_vectors(tmp_path)

    path = tmp_path / "ann_results.jsonl"
    path.write_text('{"query": "q1", "results": ["d/a#0"]}\n\n{"query": "q2", "results": "d/a#1"}\n')
    with pytest.raises(UserIndexError, match=r"ann_results.jsonl line 3: 'results' must be a list"):
        read_ann_results(path)
    path.write_text('{"query": "q1", "results": []}\n{"query": "q1", "results": []}\n')
    with pytest.raises(UserIndexError, match="line 2: query 'q1' repeated"):
        read_ann_results(path)
    path.write_text('{"query": "q1", "results": ["x", "y"]}\nnot json\n')
    with pytest.raises(UserIndexError, match="line 2: invalid JSON"):
        read_ann_results(path)


def test_user_results_with_self_queries_and_unknown_ids():
    base = random_vectors(30, 4, seed=3)
    ids = [f"c{i}" for i in range(30)]
    _, exact = exact_search(base, base[:2], 5, "l2")
    assert exact[:, 0].tolist() == [0, 1]
    results = {"c0": [ids[i] for i in exact[0, :4]], "c1": [ids[i] for i in exact[1, [0, 1, 2, 4]]]}
    res = audit_vectors(base, ids, ["x"] * 30, declared_metric="l2", normalised=False, k_list=(3,),
                        ann_results=results)
    # c0 returned its own exact list (own id first, dropped) -> 3/3; c1 returned its 4th neighbour, not the 3rd -> 2/3
    r = rows(res, "index.recall@3")
    assert (r.numerator, r.denominator) == (5.0, 6.0)
    assert "timings" not in res.details and res.details["source"]["kind"] == "user ann_results"
    with pytest.raises(ValueError, match="'zz' is neither a question id nor a vector id"):
        audit_vectors(base, ids, ["x"] * 30, ann_results={"zz": []})
    with pytest.raises(ValueError, match="returns 'nope'"):
        audit_vectors(base, ids, ["x"] * 30, ann_results={"c0": ["nope"]})


# --- the runner's entry point ----------------------------------------------------------------------------------------

def ctx_for(docs, questions=(), classes=None, embed=None, table=None, root=None):
    pipe = make_pipeline("p", table or {"index": {"use": "hnsw", "m": 8}}, precomputed_root=root)
    return PipelineContext(pipe, list(docs), list(questions), classes or {}, embed, 0.5, 0)


def doc(doc_id, cls, vectors, metadata=None):
    return DocChunks(doc_id, cls, State.OK, texts=[f"t{i}" for i in range(len(vectors))], vectors=vectors,
                     metadata=metadata or [{} for _ in vectors])


def test_audit_pipeline_rows_details_timings_and_filters():
    v = l2_normalise(random_vectors(120, 8, seed=30))
    docs = [doc("a/one", "a", v[:60], [{"lang": "en"}] * 60), doc("b/two", "b", v[60:], [{"lang": "de"}] * 60)]
    qs = [Question(id="q1", question="x", relevant=[{"doc": "a/one"}]),
          Question(id="q2", question="y", relevant=[{"doc": "b/two"}], filter={"lang": "de"})]
    qv = l2_normalise(random_vectors(2, 8, seed=31))
    auditor = IndexAuditor(n_sample_queries=20, ef_search_sweep=(16, 64))
    res = auditor.audit_pipeline(ctx_for(docs, qs, {"q1": "a", "q2": "b"}, lambda texts: qv[:len(texts)]))
    assert "timings" not in res.details and res.timings["build_seconds"] >= 0
    filt = [s for c, s, _ in res.corpus_scores if s.label == "filtered" and c == "__all__"
            and s.metric == "index.recall@10"]
    assert filt and filt[0].state is State.OK and filt[0].denominator == 10
    assert res.details["queries"]["questions"] == 2


def test_audit_pipeline_turns_bad_vectors_into_error_rows():
    bad = random_vectors(5, 4, seed=1)
    bad[3, 0] = np.nan
    res = IndexAuditor().audit_pipeline(ctx_for([doc("a/x", "a", bad)]))
    assert {s.state for _, s, _ in res.corpus_scores} == {State.ERROR}
    assert "row 3" in res.corpus_scores[0][1].detail["reason"]
    empty = IndexAuditor().audit_pipeline(ctx_for([DocChunks("a/x", "a", State.ERROR, "parse failed")]))
    assert {s.state for _, s, _ in empty.corpus_scores} == {State.NO_PREDICTION}


def test_audit_pipeline_reads_a_users_vectors_and_names_a_bad_id(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    v = random_vectors(4, 3, seed=2)
    np.save(folder / "vectors.npy", v)
    (folder / "vector_ids.json").write_text(json.dumps(["a/x#0", "a/x#1", "a/x#2", "a/x#9"]))
    docs = [doc("a/x", "a", v[:3])]
    res = IndexAuditor(n_sample_queries=4).audit_pipeline(ctx_for(docs, root=tmp_path))
    reason = res.corpus_scores[0][1].detail["reason"]
    assert "vector_ids.json" in reason and "'a/x#9'" in reason
    (folder / "vector_ids.json").write_text(json.dumps(["a/x#0", "a/x#1", "a/x#2", "a/x#1b"]))
    docs = [doc("a/x", "a", np.vstack([v[:3], v[:1]]))]
    docs[0].texts.append("t")  # four chunks: ids a/x#0..3; '#1b' is still no chunk
    res = IndexAuditor(n_sample_queries=4).audit_pipeline(ctx_for(docs, root=tmp_path))
    assert res.corpus_scores[0][1].state is State.ERROR
    (folder / "vector_ids.json").write_text(json.dumps(["a/x#0", "a/x#1", "a/x#2", "a/x#3"]))
    (folder / "ann_results.jsonl").write_text('{"query": "a/x#0", "results": ["a/x#0", "a/x#1", "a/x#2"]}\n')
    res = IndexAuditor(n_sample_queries=4, k_list=(1,)).audit_pipeline(ctx_for(docs, root=tmp_path))
    assert res.details["source"]["kind"] == "user ann_results"
    assert [s for c, s, _ in res.corpus_scores if s.metric == "index.recall@1" and c == "__all__"][0].state \
        is State.OK


def test_audit_pipeline_names_the_users_file_on_a_dimension_mismatch(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    np.save(folder / "vectors.npy", random_vectors(2, 3, seed=2))
    (folder / "vector_ids.json").write_text(json.dumps(["a/x#0", "a/x#1"]))
    docs = [doc("a/x", "a", random_vectors(2, 5, seed=3))]
    qs = [Question(id="q1", question="x", relevant=[{"doc": "a/x"}])]
    res = IndexAuditor().audit_pipeline(ctx_for(docs, qs, {"q1": "a"}, lambda t: np.ones((len(t), 5), np.float32),
                                                root=tmp_path))
    reason = res.corpus_scores[0][1].detail["reason"]
    assert "vectors.npy: dimension 3 does not match the embedder's question vectors (5)" in reason
