"""The index stage (ingestaudit.stages.index) and the ANN index auditor (ingestaudit.auditors.index), with the
acceptance values of issue 11."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ingestaudit.auditors.base import PipelineContext
from ingestaudit.auditors.index import IndexAuditor, UserIndexError, read_ann_results, read_user_vectors
from ingestaudit.auditors.index import audit_vectors as _audit_vectors
from ingestaudit.chain import DocChunks
from ingestaudit.measurement import State
from ingestaudit.auditors.metric_catalog import get
from ingestaudit.pipeline import make_pipeline
from ingestaudit.questions import Question
from ingestaudit.stages.index import (IndexInputError, IndexSettings, build_ann, build_exact, exact_search,
                                      index_memory_bytes, l2_normalise, search, timed_search)
from ingestaudit.stages.index_step import IndexStep
from ingestaudit.stages.retrieve_step import with_index_steps



def audit_vectors(*args, **kw):
    """The audit with a fresh FAISS index step (audit_vectors reads its indexes through the step, issue 24)."""
    return _audit_vectors(*args, step=IndexStep(), **kw)


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

def _per_query_recall_at(base, settings, sample, ef, k):
    """Oracle for the operating point: each sampled chunk's recall@k at efSearch ``ef``, from the public building
    blocks (a fresh, identically seeded index; exact search; the own id dropped)."""
    from ingestaudit.metrics import ann

    index, _, _ = build_ann(base, settings)
    _, got = search(index, base[sample], k + 1, params={"ef_search": ef})
    _, exact = exact_search(base, base[sample], k + 1, settings.metric)
    got, exact = ann.drop_self(got, sample, k), ann.drop_self(exact, sample, k)
    return ann.intersection_recall(got, exact, k, len(base) - 1)


def test_sweep_rises_with_ef_search_and_the_operating_point_is_the_first_setting_reaching_the_target():
    from ingestaudit.metrics.intervals import bootstrap_ratio, wilson

    base = l2_normalise(random_vectors(3000, 24, seed=9))
    settings = IndexSettings(m=4, ef_construction=8)
    res = audit_vectors(base, [f"c{i}" for i in range(3000)], ["a", "b", "c"] * 1000, settings=settings,
                        n_sample_queries=150, target_recall=0.8, seed=3)
    cells = res.details["sweep"]["cells"]
    assert [c["value"] for c in cells] == [16, 32, 64, 128, 256]
    means = [c["unfiltered"]["recall@10"]["mean_per_query"] for c in cells]
    assert means[-1] > means[0] and means == sorted(means)
    # every query has n - 1 >= 10 candidates: the mean per query equals the micro value
    assert means == pytest.approx([c["unfiltered"]["recall@10"]["value"] for c in cells], abs=1e-12)
    assert means[0] < 0.8 <= means[-1]  # the target is reached, but not by the cheapest setting
    first = next(i for i, v in enumerate(means) if v >= 0.8)
    op = res.details["operating_point"]
    assert op["value"] == cells[first]["value"] and op["label"] == f"ef_search={cells[first]['value']}"
    assert op["mean_recall"] == means[first] and op["queries"] == 150 and op["k"] == 10
    # the interval: a seeded percentile bootstrap over the 150 QUERIES of their mean recall, reproduced here
    sample = np.sort(np.random.default_rng(3).choice(3000, size=150, replace=False))
    per_query = _per_query_recall_at(base, settings, sample, op["value"], 10)
    assert per_query.mean() == pytest.approx(op["mean_recall"], abs=1e-12)
    ref = bootstrap_ratio(per_query, None, seed=3)
    assert (op["ci"]["low"], op["ci"]["high"]) == (ref.low, ref.high)
    assert "queries" in op["ci"]["method"] and "mean" in op["ci"]["method"] and "docs" not in op["ci"]["method"]
    # ... wider than the old Wilson interval over the 1,500 pooled result slots, which treated slots as independent
    slots = wilson(cells[first]["unfiltered"]["recall@10"]["numerator"], 1500)
    assert op["ci"]["high"] - op["ci"]["low"] > slots.high - slots.low
    t = res.details["timings"]
    assert [c["label"] for c in t["cells"]] == [c["label"] for c in cells]
    assert [(c["knob"], c["value"]) for c in t["cells"]] == [("ef_search", v) for v in (16, 32, 64, 128, 256)]
    assert all(c["p50_ms"] <= c["p95_ms"] and c["qps"] > 0 and c["queries"] == 150 for c in t["cells"])
    assert t["build_seconds"] > 0 and t["search_threads"] == 1
    assert {"a", "b", "c"} <= {c for c, _, _ in res.corpus_scores}


def test_frontier_is_the_non_dominated_settings_by_distance_computations():
    base = l2_normalise(random_vectors(2000, 16, seed=19))
    kw = dict(settings=IndexSettings(m=4, ef_construction=8), n_sample_queries=100, sweep=(8, 16, 32, 64, 128))
    res = audit_vectors(base, [f"c{i}" for i in range(2000)], ["x"] * 2000, **kw)
    cells = res.details["sweep"]["cells"]
    dist = [c["distances_per_query"] for c in cells]
    assert all(d > 0 for d in dist) and dist == sorted(dist)  # a wider beam computes more distances
    pts = {c["label"]: (c["unfiltered"]["recall@10"]["mean_per_query"], c["distances_per_query"]) for c in cells}
    dominated = {a for a, (ra, da) in pts.items()
                 if any(rb >= ra and db <= da and (rb > ra or db < da) for b, (rb, db) in pts.items())}
    front = res.details["frontier"]
    assert [p["label"] for p in front] == [c["label"] for c in cells if c["label"] not in dominated]
    assert [p["distances_per_query"] for p in front] == sorted(p["distances_per_query"] for p in front)
    assert front[0]["mean_recall@10"] == pts[front[0]["label"]][0]
    # deterministic: a second run gives the same counts (they are in report.json, unlike queries per second)
    again = audit_vectors(base, [f"c{i}" for i in range(2000)], ["x"] * 2000, **kw)
    assert again.details["frontier"] == front and [c["distances_per_query"] for c in
                                                   again.details["sweep"]["cells"]] == dist
    qps_front = res.details["timings"]["frontier"]
    assert qps_front and {p["label"] for p in qps_front} <= set(pts)
    lines = res.details["overview"]["lines"]
    assert any(x.startswith("frontier (mean recall@10 against distance computations per query)") for x in lines)
    assert any(x.startswith("operating point") for x in lines)


def test_operating_point_not_reached_says_so():
    base = l2_normalise(random_vectors(3000, 24, seed=9))
    res = audit_vectors(base, [f"c{i}" for i in range(3000)], ["x"] * 3000,
                        settings=IndexSettings(m=4, ef_construction=8), n_sample_queries=100, sweep=(16, 32),
                        target_recall=0.99)
    op = res.details["operating_point"]
    assert op["value"] is None and "no setting reaches mean recall@10 >= 0.99" in op["reason"]
    assert "ci" not in op
    assert any("operating point: none" in x for x in res.details["overview"]["lines"])


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

    # a bad line of ann_results.jsonl is that query's error (or, when its query cannot be told, unreadable)
    path = tmp_path / "ann_results.jsonl"
    path.write_text('{"query": "q1", "results": ["d/a#0"]}\n\n{"query": "q2", "results": "d/a#1"}\n')
    got = read_ann_results(path)
    assert dict(got) == {"q1": ["d/a#0"]} and got.unreadable == []
    assert got.errors == {"q2": f"{path} line 3: 'results' must be a list of id strings"}
    path.write_text('{"query": "q1", "results": []}\n{"query": "q1", "results": []}\n{"query": "q1", "results": []}\n')
    got = read_ann_results(path)
    assert dict(got) == {} and got.errors == {"q1": f"{path} line 2: query 'q1' repeated (first on line 1)"}
    path.write_text('{"query": "q1", "results": ["x", "y"]}\nnot json\n[1]\n{"query": 3, "results": []}\n')
    got = read_ann_results(path)
    assert dict(got) == {"q1": ["x", "y"]} and got.errors == {}
    assert got.unreadable == [f"{path} line 2: invalid JSON (Expecting value)",
                              f"{path} line 3: expected an object {{\"query\": id, \"results\": [ids]}}",
                              f"{path} line 4: 'query' must be a non-empty string"]
    (tmp_path / "gone.jsonl").mkdir()
    with pytest.raises(UserIndexError, match="gone.jsonl: a folder, not a regular file"):
        read_ann_results(tmp_path / "gone.jsonl")


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
    # an answer naming nothing is not audited and said; an unknown result id is that query's error, never a 0
    odd = audit_vectors(base, ids, ["x"] * 30, declared_metric="l2", normalised=False, k_list=(3,),
                        ann_results={**results, "zz": [], "c2": ["c3", "nope"]})
    r = rows(odd, "index.recall@3")
    assert (r.numerator, r.denominator, r.detail["errors"]) == (5.0, 6.0, 1)
    q = odd.details["queries"]
    assert q["ann_results_problems"] == ["ann_results: query 'zz' is neither a question id nor a vector id "
                                         "(vector_ids.json): not audited"]
    assert q["errors"] == [{"query": "c2", "reason": "ann_results: query 'c2' returns 'nope', which is not an id "
                                                     "of vector_ids.json"}]
    assert any(w.startswith("1 query(ies) with an unusable answer") for w in odd.details["overview"]["warnings"])


# --- the runner's entry point ----------------------------------------------------------------------------------------

def ctx_for(docs, questions=(), classes=None, embed=None, table=None, root=None):
    pipe = make_pipeline("p", table or {"index": {"use": "hnsw", "m": 8}}, precomputed_root=root)
    return with_index_steps(PipelineContext(pipe, list(docs), list(questions), classes or {}, embed, 0.5, 0))


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
    # issue 29: q2 (10 results) and, under each of the two sampled filters (lang = de, lang = en), the 20 sampled
    # chunk queries (10 results each): 10 + 2 x 20 x 10
    assert filt and filt[0].state is State.OK and filt[0].denominator == 410
    assert filt[0].detail["selectivity"] == {"min": 0.5, "median": 0.5, "max": 0.5, "filters": 3}
    assert res.details["queries"]["questions"] == 2
    assert [(f["source"], f["filter"], f["passing"], f["selectivity"], f["queries"]) for f in res.details["filters"]] \
        == [("question", {"lang": "de"}, 60, 0.5, 1), ("sampled", {"lang": "de"}, 60, 0.5, 20),
            ("sampled", {"lang": "en"}, 60, 0.5, 20)]
    assert all("unfiltered_recall@10" in f for f in res.details["filters"] if f["source"] == "sampled")


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
    (folder / "ann_results.jsonl").write_text('{"query": "a/x#0", "results": ["a/x#0", "a/x#1", "a/x#2"]}\n'
                                              '{"query": "a/x#1", "results": ["a/x#7"]}\n')  # one bad line
    res = IndexAuditor(n_sample_queries=4, k_list=(1,)).audit_pipeline(ctx_for(docs, root=tmp_path))
    assert res.details["source"]["kind"] == "user ann_results"
    r = [s for c, s, _ in res.corpus_scores if s.metric == "index.recall@1" and c == "__all__"][0]
    assert (r.state, r.detail["queries"], r.detail["errors"]) == (State.OK, 1, 1)  # the good line is still audited
    assert res.details["queries"]["errors"][0]["reason"].endswith(
        "ann_results.jsonl line 2: query 'a/x#1' returns 'a/x#7', which is not an id of vector_ids.json")
    assert res.failures == [f"query 'a/x#1': {res.details['queries']['errors'][0]['reason']}"]  # listed once
    # the left-out query is counted under its own state in the summary, not as an ok item
    assert r.detail["unreached"] == {"error": 1}
    from ingestaudit.report.aggregate import corpus_summary_row

    row = corpus_summary_row(r, pipeline="p", doc_class="__all__", n_docs=1)
    assert (row.states["ok"], row.states["error"]) == (1, 1)


def with_dimension(embed, d):
    """An ``embed_questions`` callable that also tells the model's dimension, as the runner's does."""
    embed.dimension = lambda: d
    return embed


def user_folder(tmp_path, vectors, ids, results=None):
    folder = tmp_path / "p"
    folder.mkdir(exist_ok=True)
    np.save(folder / "vectors.npy", vectors)
    (folder / "vector_ids.json").write_text(json.dumps(ids))
    if results is not None:
        (folder / "ann_results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    return folder


def reason_of(res):
    states = {s.state for _, s, _ in res.corpus_scores}
    assert states == {State.ERROR}, states
    return res.corpus_scores[0][1].detail["reason"]


def test_audit_pipeline_names_the_users_file_on_a_dimension_mismatch(tmp_path):
    user_folder(tmp_path, random_vectors(2, 3, seed=2), ["a/x#0", "a/x#1"])
    docs = [doc("a/x", "a", random_vectors(2, 5, seed=3))]
    qs = [Question(id="q1", question="x", relevant=[{"doc": "a/x"}])]
    embed = with_dimension(lambda t: np.ones((len(t), 5), np.float32), 5)
    res = IndexAuditor().audit_pipeline(ctx_for(docs, qs, {"q1": "a"}, embed, root=tmp_path))
    assert "p/vectors.npy: dimension 3 does not match the pipeline embedder's dimension (5)" in reason_of(res)


def test_dimension_is_checked_against_the_model_without_questions(tmp_path):
    # a user's vectors, no question, chunks not embedded by the run: the embedder's dimension decides
    user_folder(tmp_path, random_vectors(2, 3, seed=2), ["a/x#0", "a/x#1"])
    docs = [DocChunks("a/x", "a", State.OK, texts=["t0", "t1"], metadata=[{}, {}])]
    res = IndexAuditor().audit_pipeline(ctx_for(docs, embed=with_dimension(lambda t: None, 384), root=tmp_path))
    assert "p/vectors.npy: dimension 3 does not match the pipeline embedder's dimension (384)" in reason_of(res)
    # the run's own vectors against the model
    res = IndexAuditor().audit_pipeline(ctx_for([doc("a/x", "a", random_vectors(4, 6, seed=1))],
                                                embed=with_dimension(lambda t: None, 8)))
    assert "the chunk vectors: dimension 6 does not match the pipeline embedder's dimension (8)" in reason_of(res)
    # documents of different dimensions: a clear error naming both, not numpy's concatenate message
    res = IndexAuditor().audit_pipeline(ctx_for([doc("a/x", "a", random_vectors(3, 4, seed=1)),
                                                 doc("b/y", "b", random_vectors(3, 5, seed=1))]))
    assert "document 'b/y': vectors of dimension 5, but 'a/x' has 4" in reason_of(res)
    # matching dimensions audit fine
    ok = IndexAuditor(n_sample_queries=3, k_list=(1,)).audit_pipeline(
        ctx_for([doc("a/x", "a", random_vectors(4, 6, seed=1))], embed=with_dimension(lambda t: None, 6)))
    assert rows(ok, "index.recall@1").state is State.OK


def test_a_users_nan_vectors_are_error_rows_naming_the_file(tmp_path):
    bad = random_vectors(3, 4, seed=1)
    bad[2, 3] = np.inf
    user_folder(tmp_path, bad, ["a/x#0", "a/x#1", "a/x#2"])
    docs = [DocChunks("a/x", "a", State.OK, texts=["t0", "t1", "t2"], metadata=[{}] * 3)]
    reason = reason_of(IndexAuditor().audit_pipeline(ctx_for(docs, root=tmp_path)))
    assert "p/vectors.npy: 1 vector(s) hold NaN or infinity (first: row 2)" in reason


def test_a_users_vectors_need_no_run_vectors_and_unembedded_chunks_are_counted(tmp_path):
    v = random_vectors(6, 4, seed=8)
    user_folder(tmp_path, v, [f"a/x#{i}" for i in range(6)])
    docs = [DocChunks("a/x", "a", State.OK, texts=[f"t{i}" for i in range(8)], metadata=[{}] * 8)]  # no vectors
    auditor = IndexAuditor(n_sample_queries=6, k_list=(1,))
    assert auditor.needs_chunk_vectors(make_pipeline("p", {}, precomputed_root=tmp_path)) is False
    assert auditor.needs_chunk_vectors(make_pipeline("p", {})) is True
    assert IndexAuditor(use_user_results=False).needs_chunk_vectors(
        make_pipeline("p", {}, precomputed_root=tmp_path)) is True
    res = auditor.audit_pipeline(ctx_for(docs, table={"index": {"use": "flat"}}, root=tmp_path))
    r = rows(res, "index.recall@1")
    assert (r.value, r.denominator) == (1.0, 6.0)
    assert res.details["source"]["chunks_without_user_vector"] == 2
    assert res.details["source"]["chunks_embedded_by_the_run"] is False
    assert any("2 chunk(s) of the run have no vector" in w for w in res.details["overview"]["warnings"])


def test_k_larger_than_the_index_through_hnsw_and_a_users_results():
    base = l2_normalise(random_vectors(4, 3, seed=6))
    ids = ["a", "b", "c", "d"]
    res = audit_vectors(base, ids, ["x"] * 4, settings=IndexSettings(m=4), k_list=(10,), n_sample_queries=4,
                        sweep=(16,))
    r = rows(res, "index.recall@10")
    assert (r.value, r.numerator, r.denominator) == (1.0, 12.0, 12.0)  # 4 queries x min(10, n - 1 = 3)
    _, exact = exact_search(base, base[:1], 4, "cosine")
    user = audit_vectors(base, ids, ["x"] * 4, k_list=(10,), ann_results={"a": [ids[i] for i in exact[0]]})
    r = rows(user, "index.recall@10")
    assert (r.value, r.numerator, r.denominator) == (1.0, 3.0, 3.0)
    short = audit_vectors(base, ids, ["x"] * 4, k_list=(10,), ann_results={"a": [ids[i] for i in exact[0, :2]]})
    assert rows(short, "index.recall@10").value == pytest.approx(1 / 3)  # one neighbour (after the own id) of 3


def test_a_question_missing_from_ann_results_is_no_prediction_not_zero(tmp_path):
    base = random_vectors(30, 4, seed=3)
    ids = [f"c{i}" for i in range(30)]
    q = base[:3] + 0.01
    _, exact = exact_search(base, q, 3, "l2")
    answered = {"q1": [ids[i] for i in exact[0]], "q2": [ids[i] for i in exact[1, :2]]}  # q3 missing
    kw = dict(queries=q, query_ids=["q1", "q2", "q3"], query_classes=["x", "y", "y"], declared_metric="l2",
              normalised=False, k_list=(3,), n_sample_queries=0)
    res = audit_vectors(base, ids, ["x"] * 30, ann_results=answered, **kw)
    r = rows(res, "index.recall@3")
    assert (r.numerator, r.denominator) == (5.0, 6.0)  # q1 3/3 + q2 2/3; q3 is not a 0/3
    assert r.detail["no_prediction"] == 1 and r.detail["questions"] == 2
    assert res.details["queries"]["unanswered"] == ["q3"] and res.details["queries"]["unanswered_total"] == 1
    assert rows(res, "index.recall@3", cls="y").detail["no_prediction"] == 1
    # a row whose every question is unanswered is no_prediction, not 0 and not no_reference
    only = audit_vectors(base, ids, ["x"] * 30, ann_results={"q1": answered["q1"]}, **kw)
    y = rows(only, "index.recall@3", cls="y")
    assert y.state is State.NO_PREDICTION and y.value is None and "ann_results.jsonl" in y.detail["reason"]
    assert rows(only, "index.one_recall@3", cls="y").state is State.NO_PREDICTION
    assert any("2 question(s) absent from ann_results.jsonl" in w for w in only.details["overview"]["warnings"])

    # one bad line is that question's error: the others are audited, and the message names the file and the line
    path = tmp_path / "ann_results.jsonl"
    lines = [json.dumps({"query": "q1", "results": answered["q1"]}), "",
             json.dumps({"query": "q2", "results": [ids[exact[1, 0]], "nope"]}),
             json.dumps({"query": "q3", "results": [ids[i] for i in exact[2]], "extra": 1})]
    path.write_text("\n".join(lines) + "\n")
    res = audit_vectors(base, ids, ["x"] * 30, ann_results=read_ann_results(path), **kw)
    r = rows(res, "index.recall@3")
    assert (r.state, r.numerator, r.denominator, r.detail["errors"], r.detail["no_prediction"]) == (
        State.OK, 3.0, 3.0, 2, 0)  # q1 alone is counted: 3/3
    y = rows(res, "index.recall@3", cls="y")  # q2 and q3 both errors: an error row, not 0 and not no_prediction
    assert y.state is State.ERROR and "2 query(ies) of this row have an unusable answer" in y.detail["reason"]
    reasons = {e["query"]: e["reason"] for e in res.details["queries"]["errors"]}
    assert reasons["q2"] == f"{path} line 3: query 'q2' returns 'nope', which is not an id of vector_ids.json"
    assert reasons["q3"].startswith(f"{path} line 4: unknown key 'extra'")
    # a line whose query cannot be told: a question with no line may have been on it, so it is an error too
    path.write_text("\n".join([lines[0], '{"query": "q2", "resu']) + "\n")
    res = audit_vectors(base, ids, ["x"] * 30, ann_results=read_ann_results(path), **kw)
    reasons = {e["query"]: e["reason"] for e in res.details["queries"]["errors"]}
    assert set(reasons) == {"q2", "q3"} and res.details["queries"]["unanswered_total"] == 0
    assert reasons["q3"].startswith("no readable line names this question, and 1 line(s) of the file cannot be read "
                                    f"(its answer may be on one of them; first: {path} line 2: invalid JSON")


def test_normalising_in_place_gives_the_same_audit_without_a_second_copy():
    raw = random_vectors(500, 8, seed=40) * 3.0  # not unit norm
    kw = dict(settings=IndexSettings(m=8), n_sample_queries=50, sweep=(16,), k_list=(5,))
    ids, cls = [f"c{i}" for i in range(500)], ["x"] * 500
    keep = raw.copy()
    copied = audit_vectors(raw, ids, cls, **kw)
    assert (raw == keep).all()  # the default never touches the caller's array
    owned = raw.copy()
    in_place = audit_vectors(owned, ids, cls, normalise_in_place=True, **kw)
    assert np.allclose(np.linalg.norm(owned, axis=1), 1.0, atol=1e-6)  # overwritten: no second copy was made
    strip = lambda r: json.dumps({k: v for k, v in r.details.items() if k != "timings"}, sort_keys=True)
    assert strip(copied) == strip(in_place)
    assert copied.details["norms"]["vectors"]["median"] == pytest.approx(in_place.details["norms"]["vectors"]["median"])
    assert in_place.details["norms"]["vectors"]["min"] > 1.5  # the facts about the input were taken before
    # a float64 input is converted (a copy the audit owns, normalised in place), and stays untouched itself
    raw64 = raw.astype(np.float64)
    keep64 = raw64.copy()
    as64 = audit_vectors(raw64, ids, cls, normalise_in_place=True, **kw)
    assert (raw64 == keep64).all() and strip(as64) == strip(copied)


def test_zero_vectors_are_counted_apart_and_the_flag_is_shown():
    base = np.array([[0.6, 0.8], [1, 0], [0, 1], [0, 0]], dtype=np.float32)
    res = audit_vectors(base, list("abcd"), ["x"] * 4, settings=IndexSettings(kind="flat"), k_list=(1,),
                        n_sample_queries=4)
    cos = res.details["cosine_unnormalised"]
    assert (cos["flag"], cos["zero_vectors"], cos["not_unit_nonzero"]) == (False, 1, 0)
    assert res.details["overview"]["warnings"] == [
        "1 zero vector(s): cosine is undefined for them and no normalisation makes them unit",
        "1 query(ies) without defined neighbours: error, left out of the recall denominators (first: 'd': a zero "
        "vector: its cosine neighbours are undefined (0/0))"]
    # the zero chunk's self query is an error, never a recall: the 3 others are counted (issue 30)
    top = {(s.metric, c): (s.state, n) for c, s, n in res.corpus_scores}
    assert top[("index.recall@1", "__all__")] == (State.OK, 3)
    assert res.details["queries"]["undefined_total"] == 1
    flagged = audit_vectors(IP_BASE, ["a", "b", "c"], ["x"] * 3, declared_metric="cosine", normalised=False,
                            settings=IndexSettings(kind="flat"), n_sample_queries=3, k_list=(1,))
    warn = flagged.details["overview"]["warnings"][0]
    assert warn.startswith("cosine declared on vectors that are not unit norm (2 non-zero vectors off unit norm")
    assert "FAISS #812, #1119" in warn
    # by hand, each row against the other two: inner-product top-1 is 1, 0 (a 10 = 10 tie with row 2, lower id),
    # 1; cosine top-1 is 2, 2, 0: exact inner product agrees with cosine on none of the three rows
    assert flagged.details["cosine_unnormalised"]["ip_vs_cosine_recall@1"] == 0.0


def test_index_audit_writes_nothing_into_the_corpus(tmp_path):
    folder = user_folder(tmp_path, random_vectors(5, 4, seed=1), [f"a/x#{i}" for i in range(5)],
                         [{"query": "a/x#0", "results": ["a/x#0", "a/x#1"]}])
    before = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in tmp_path.rglob("*")}
    docs = [DocChunks("a/x", "a", State.OK, texts=[f"t{i}" for i in range(5)], metadata=[{}] * 5)]
    res = IndexAuditor(k_list=(1,)).audit_pipeline(ctx_for(docs, root=tmp_path))
    assert res.details["source"]["kind"] == "user ann_results"
    after = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in tmp_path.rglob("*")}
    assert before == after and len(before) == 4  # the folder and its three files, untouched
    assert folder.is_dir()


# --- unlabelled mode through the CLI ---------------------------------------------------------------------------------

from _chain_stubs import HashEmbedder  # noqa: E402


class NoChunkEmbedding(HashEmbedder):
    """Fails if asked to embed anything: proves that a pipeline with a user's vectors.npy is not embedded."""

    def embed(self, texts):
        raise RuntimeError(f"embed() called on {len(texts)} text(s)")


@pytest.mark.slow
def test_run_stage_index_on_a_corpus_without_questions(tmp_path):
    """``ingestaudit run --stage index`` with no questions.jsonl: the corpus monitor. Pipeline ``monitor`` embeds its
    chunks (HNSW over the run's vectors); pipeline ``user`` has a user's vectors.npy, is never embedded (its embedder
    raises), declares cosine without normalising and holds two exact duplicates."""
    from typer.testing import CliRunner

    from ingestaudit.cli import app

    corpus, outputs = tmp_path / "corpus", tmp_path / "outputs"
    sentences = [f"Sentence {i} tells about topic {i % 7} in words." for i in range(60)]
    n_chunks = 0
    for name in ("a", "b", "c"):
        (corpus / "docs" / "c").mkdir(parents=True, exist_ok=True)
        (corpus / "docs" / "c" / f"{name}.txt").write_text("source\n")
        text = " ".join(sentences[:20] if name != "c" else sentences[20:]) + f" Doc {name}."
        chunks, pos = [], 0
        while pos < len(text):
            chunks.append({"text": text[pos:pos + 60], "start": pos, "end": min(pos + 60, len(text))})
            pos += 60
        n_chunks += len(chunks)
        for pipe in ("monitor", "user"):
            (outputs / pipe / "c").mkdir(parents=True, exist_ok=True)
            (outputs / pipe / "c" / f"{name}.json").write_text(json.dumps({"text": text, "chunks": chunks}))
    ids = [f"c/{name}#{i}" for name in ("a", "b", "c")
           for i in range(len(json.loads((outputs / "user" / "c" / f"{name}.json").read_text())["chunks"]))]
    vecs = random_vectors(len(ids), 8, seed=77) * 3.0
    vecs[5], vecs[9] = vecs[0], vecs[1]  # two exact duplicates
    np.save(outputs / "user" / "vectors.npy", vecs)
    (outputs / "user" / "vector_ids.json").write_text(json.dumps(ids))
    mod = __name__
    (tmp_path / "run.toml").write_text(
        f'[run]\nexecutor = "serial"\ncache_dir = "{tmp_path / "cache"}"\n\n'
        f'[pipelines.monitor]\nembedder = {{ use = "_chain_stubs:HashEmbedder" }}\nindex = {{ use = "hnsw", m = 8 }}\n\n'
        f'[pipelines.user]\nembedder = {{ use = "{mod}:NoChunkEmbedding" }}\n'
        'index = { use = "flat", normalise = false }\n')
    before = {p: (p.stat().st_mtime_ns, p.stat().st_size) for root in (corpus, outputs) for p in root.rglob("*")}
    out = tmp_path / "report"
    res = CliRunner().invoke(app, ["run", str(corpus), "--outputs", str(outputs), "--config",
                                   str(tmp_path / "run.toml"), "--stage", "index", "--out", str(out)])
    assert res.exit_code == 0, res.output
    after = {p: (p.stat().st_mtime_ns, p.stat().st_size) for root in (corpus, outputs) for p in root.rglob("*")}
    assert before == after  # nothing written into the corpus or the user's outputs

    report = json.loads((out / "report.json").read_text())
    assert report["corpus"]["questions"] == 0 and report["config"]["run"]["stages"] == ["index"]
    summ = {(s["pipeline"], s["metric"]): s for s in report["summary"] if s["doc_class"] == "__all__"
            and s["label"] == ""}
    # user: a flat index is exact; every chunk is a sampled query with min(10, n - 1) = 10 candidates
    u = summ[("user", "index.recall@10")]
    assert (u["micro"], u["numerator"], u["denominator"]) == (1.0, 10.0 * len(ids), 10.0 * len(ids))
    assert summ[("user", "index.duplicate_vectors")]["micro"] == 2.0
    m = summ[("monitor", "index.recall@10")]
    assert m["denominator"] == 10.0 * n_chunks and 0 < m["micro"] <= 1
    details = {(d["pipeline"], d["name"]): d["data"] for d in report["details"] if d["stage"] == "index"}
    assert details[("monitor", "queries")]["questions"] == 0
    assert details[("monitor", "queries")]["sampled_chunks"] == n_chunks
    assert details[("user", "source")]["chunks_embedded_by_the_run"] is False
    assert details[("user", "cosine_unnormalised")]["flag"] is True
    op = details[("monitor", "operating_point")]
    assert op["value"] is not None and op["queries"] == n_chunks and op["ci"]["low"] <= op["mean_recall"]
    # the views: the flag, the operating point and the frontier are printed, not only stored
    md = (out / "report.md").read_text().replace("\\", "").replace("&gt;", ">")  # Markdown escapes undone
    assert "## Index audit" in md and "**warning**: cosine declared on vectors that are not unit norm" in md
    assert (f"operating point (cheapest setting with mean recall@10 >= 0.95, unfiltered queries): {op['label']}: "
            f"{op['mean_recall']:.4f} [{op['ci']['low']:.4f}, {op['ci']['high']:.4f}]") in md
    assert "frontier (mean recall@10 against distance computations per query): ef_search=16" in md
    assert "index · user: cosine declared on vectors that are not unit norm" in " ".join(res.stdout.split())
    html = (out / "report.html").read_text()
    assert '<section id="index"><h2>Index audit</h2>' in html and "cosine declared on vectors" in html
    timings = json.loads((out / "timings.json").read_text())
    cells = timings["monitor"]["index"]["cells"]
    assert [c["label"] for c in cells] == [c["label"] for c in details[("monitor", "sweep")]["cells"]]
    assert all(c["qps"] > 0 and c["p50_ms"] <= c["p95_ms"] for c in cells)
