"""Embedding drift between two runs' kept vectors (issue 29 acceptance): identical runs, one document re-chunked,
another model, and the kept files written and read back."""

import numpy as np
import pytest

from ingestaudit.chain import DocChunks
from ingestaudit.embedding_drift import compare_kept, drift_between, render_drift
from ingestaudit.kept_vectors import KeptRun, VectorKeeper, read_kept
from ingestaudit.measurement import State

EMB = {"implementation": "minilm", "version": "1", "settings": {"model": "all-MiniLM-L6-v2"}}
DOCS = ["a", "b", "c", "d"]


def _unit(x):
    x = np.asarray(x, dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _doc_chunks(doc_index, spans, rng):
    """Chunks of one document: vectors near the document's own axis (16-D, axis 4 * doc_index), so every chunk's
    nearest neighbours are chunks of its own document; the vector depends only on (doc, start, end)."""
    vecs = []
    for s, e in spans:
        v = np.zeros(16)
        v[4 * doc_index] = 10.0
        local = np.random.default_rng(1000 * doc_index + 7 * s + e).normal(size=3)
        v[4 * doc_index + 1: 4 * doc_index + 4] = local
        vecs.append(v)
    return _unit(vecs)


def _run(spans_of, questions=True):
    rng = np.random.default_rng(0)
    vectors, keys = [], []
    for i, doc in enumerate(DOCS):
        spans = spans_of[doc]
        vectors.append(_doc_chunks(i, spans, rng))
        keys += [(doc, s, e) for s, e in spans]
    q = np.zeros((4, 16))
    for i in range(4):
        q[i, 4 * i] = 10.0
        q[i, 4 * i + 1] = 1.0
    qv = _unit(q) if questions else np.zeros((0, 16), np.float32)
    qids = [f"q-{d}" for d in DOCS] if questions else []
    return KeptRun("p", np.vstack(vectors), keys, qids, qv, EMB, 16)


SPANS = {d: [(100 * j, 100 * j + 100) for j in range(6)] for d in DOCS}


def test_identical_runs_are_stable():
    res = drift_between(_run(SPANS), _run(SPANS), k=3, chunk_probes=10, permutations=200)
    assert res["state"] == "ok"
    assert res["nn_stability"] == 1.0
    assert res["probes"] == {"questions": 4, "chunks": 10, "seed": 0, "chunk_sample": 10, "defined": 14}
    assert abs(res["mmd"]["mmd2"]) < 1e-12 and res["mmd"]["p_value"] >= 0.05 and res["mmd"]["permutations"] == 200
    assert res["cosine_unchanged"]["n"] == 24
    assert abs(res["cosine_unchanged"]["mean"] - 1.0) < 1e-12 and res["cosine_unchanged"]["below_0.9999"] == 0
    assert res["least_stable"] and all(x["stability"] == 1.0 for x in res["least_stable"])


def test_rechunking_one_document_lowers_stability_only_near_it():
    # d re-chunked: d[0:100] kept, the rest cut at other offsets; a, b, c unchanged
    head_spans = dict(SPANS, d=[(0, 100), (100, 250), (250, 400), (400, 600)])
    res = drift_between(_run(SPANS), _run(head_spans), k=3, chunk_probes=100, permutations=50)
    assert res["items_in_both"] == 19 and res["probes"]["questions"] == 4 and res["probes"]["chunks"] == 19
    per = {x["probe"]: x["stability"] for x in res["least_stable"]}
    unstable = {name: v for name, v in per.items() if v < 1.0}
    # only probes of d move: its question (3 neighbours, at most d[0:100] shared) and maybe d[0:100] itself
    assert "question q-d" in unstable and unstable["question q-d"] <= 0.5
    assert set(unstable) <= {"question q-d", "chunk d[0:100]"}
    # the 21 or more other probes are exactly 1.0: the mean is (23 - sum of the losses) / 23
    assert res["nn_stability"] == pytest.approx((23 - sum(1 - v for v in unstable.values())) / 23, abs=1e-12)
    assert res["nn_stability"] < 1.0


def test_other_dimension_or_model_is_not_comparable():
    base = _run(SPANS)
    other = KeptRun("p", np.zeros((3, 8), np.float32), [("a", 0, 1)] * 3, [], np.zeros((0, 8), np.float32), EMB, 8)
    res = drift_between(base, other)
    assert res == {"state": "not_comparable", "reason": "vectors of dimension 16 in the baseline, 8 in this run"}
    mpnet = KeptRun("p", base.vectors, base.keys, base.question_ids, base.questions,
                    {"implementation": "sentence-transformers", "settings": {"model": "mpnet"}}, 16)
    res = drift_between(base, mpnet)
    assert res["state"] == "not_comparable" and "mpnet" in res["reason"] and "metrics" not in res


def test_kept_files_round_trip_and_compare(tmp_path):
    docs = [DocChunks("a", "c1", State.OK, vectors=_unit(np.eye(3)[:2] + 0.1), intervals=[(0, 10), None]),
            DocChunks("b", "c1", State.ERROR, "broken"),
            DocChunks("c", "c1", State.OK, vectors=_unit(np.eye(3)[2:] + 0.1), intervals=[(5, 9)])]
    for side in ("base", "head"):
        keeper = VectorKeeper(tmp_path / side)
        keeper.add(0, "p", docs, ["q1"], _unit([[1.0, 0.0, 0.0]]), EMB)
        keeper.finish()
    kept = read_kept(tmp_path / "base")["p"]
    assert kept.keys == [("a", 0, 10), ("a", -1, -2), ("c", 5, 9)]  # a's chunk 1 not located
    assert isinstance(kept.vectors, np.memmap) and kept.vectors.dtype == np.float32 and kept.vectors.shape == (3, 3)
    assert kept.question_ids == ["q1"] and kept.dimension == 3
    res = compare_kept(tmp_path / "base", tmp_path / "head", [("p", "p")], k=1, permutations=20)
    assert res[0]["state"] == "ok" and res[0]["nn_stability"] == 1.0 and res[0]["items_in_both"] == 2
    assert any("embedding.nn_stability@1" in line for line in render_drift(res))
    missing = compare_kept(tmp_path / "base", tmp_path / "nothing", [("p", "p")])
    assert missing[0]["state"] == "not_comparable" and "--keep-vectors" in missing[0]["reason"]


def test_unusable_kept_vectors_are_not_comparable_naming_the_file(tmp_path):
    docs = [DocChunks("a", "c1", State.OK, vectors=_unit(np.eye(3)[:2] + 0.1), intervals=[(0, 10), (10, 20)])]
    for side in ("base", "head"):
        keeper = VectorKeeper(tmp_path / side)
        keeper.add(0, "p", docs, [], None, EMB)
        keeper.finish()
    (tmp_path / "base" / "vectors.json").write_text("{not json")
    res = compare_kept(tmp_path / "base", tmp_path / "head", [("p", "p")])
    assert res[0]["state"] == "not_comparable" and "vectors.json" in res[0]["reason"] and "metrics" not in res[0]
    np.save(tmp_path / "head" / "vectors-0.npy", np.zeros((5, 3), np.float32))  # 5 rows, the key table has 2
    with pytest.raises(Exception, match="vectors-0.npy"):
        read_kept(tmp_path / "head")


def test_vectors_of_several_dimensions_are_not_kept(tmp_path):
    docs = [DocChunks("a", "c1", State.OK, vectors=_unit(np.eye(3)[:1] + 0.1), intervals=[(0, 10)]),
            DocChunks("b", "c1", State.OK, vectors=_unit(np.eye(4)[:1] + 0.1), intervals=[(0, 10)])]
    with pytest.raises(ValueError, match=r"several dimensions \[3, 4\]"):
        VectorKeeper(tmp_path).add(0, "p", docs, [], None, EMB)


def test_mmd_over_one_chunk_in_both_runs_is_not_computable():
    # base and head share one chunk (c, 0, 5), with different vectors; a test over one item per side has p = 1
    # whatever the vectors (the only relabelling of two points swaps them and gives the same MMD): no number
    v = _unit(np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]], np.float32))
    base = KeptRun("p", v[:1], [("c", 0, 5)], [], np.zeros((0, 4), np.float32), EMB, 4)
    head = KeptRun("p", v[1:], [("c", 0, 5)], [], np.zeros((0, 4), np.float32), EMB, 4)
    res = drift_between(base, head, k=1, chunk_probes=1, permutations=50)
    assert res["state"] == "ok" and res["mmd"]["state"] == "not_computable" and res["mmd"]["items"] == 1
    assert "needs at least 2" in res["mmd"]["reason"]
    assert res["metrics"]["embedding.drift_mmd"] is None and res["metrics"]["embedding.drift_p"] is None
    assert res["metrics"]["embedding.cosine_unchanged"] == 0.0  # orthogonal unit vectors: cos = 0
    lines = render_drift([{"base_pipeline": "p", "head_pipeline": "p", **res}])
    assert "embedding.drift_mmd = n/a" in lines[2] and "embedding.drift_p = n/a" in lines[2]
    assert any(x.startswith("  MMD: not computable: 1 chunk present in both runs") for x in lines)
