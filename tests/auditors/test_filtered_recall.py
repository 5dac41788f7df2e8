"""Filtered ANN recall (issue 29 point 3): the ANN search with the filter applied inside FAISS (an IDSelectorBatch on
the search parameters) against exact search over the chunks that pass, beside the unfiltered value, with each
filter's selectivity; and the seeded sample of metadata filters."""

from __future__ import annotations

import numpy as np

from ingestaudit.auditors.index import audit_vectors, sample_filters
from ingestaudit.index_settings import IndexSettings
from ingestaudit.stages.index_step import IndexStep


def _intersection_recall(x: np.ndarray, step: IndexStep, settings: IndexSettings, queries: np.ndarray,
                         allowed: np.ndarray | None, k: int) -> tuple[int, int]:
    """Σ |ANN top-k ∩ exact top-k| and Σ min(k, candidates) over the self queries ``queries`` (rows of ``x``): the
    ANN answers from the audited index itself, the exact ones by numpy brute force (inner product), own row out."""
    index = step.ann(x, settings)  # the one the audit built (same vectors, same settings: not built again)
    hits = den = 0
    for r in queries:
        _, ids, _ = index.search(x[r:r + 1], k + 1, allowed=[allowed], params={"ef_search": settings.ef_search})
        got = [int(i) for i in ids[0] if i >= 0 and i != r][:k]
        cand = np.arange(len(x)) if allowed is None else allowed
        cand = cand[cand != r]
        order = np.argsort(-(x[cand] @ x[r]), kind="stable")[:k]
        hits += len(set(got) & set(cand[order].tolist()))
        den += min(k, cand.size)
    return hits, den


def test_a_planted_one_percent_filter_on_hnsw_is_measured_inside_faiss_against_exact_filtered_search():
    rng = np.random.default_rng(29)
    n, d = 10_000, 32
    x = rng.standard_normal((n, d)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    rare = np.sort(rng.choice(n, size=n // 100, replace=False))  # the planted filter passes 1 % of the vectors
    settings = IndexSettings(kind="hnsw", m=16, ef_search=16)
    step = IndexStep(settings)
    res = audit_vectors(x, [f"d#{i}" for i in range(n)], ["c"] * n, step=step, settings=settings, k_list=(10,),
                        sweep=(), n_sample_queries=40, seed=0, sampled_filters=[({"tenant": "rare"}, rare)],
                        n_filter_queries=40)
    row = {s.label: s for c, s, _ in res.corpus_scores if c == "__all__" and s.metric == "index.recall@10"}
    sample = np.sort(np.random.default_rng(0).choice(n, size=40, replace=False))  # the documented query sample
    f_hits, f_den = _intersection_recall(x, step, settings, sample, rare, 10)
    u_hits, u_den = _intersection_recall(x, step, settings, sample, None, 10)
    assert step.builds["approximate"] == 1
    assert (row["filtered"].numerator, row["filtered"].denominator) == (f_hits, f_den)
    assert (row[""].numerator, row[""].denominator) == (u_hits, u_den)
    assert f_den == 400 and row["filtered"].value != row[""].value
    [entry] = res.details["filters"]
    assert (entry["source"], entry["filter"], entry["passing"], entry["selectivity"], entry["queries"]) == (
        "sampled", {"tenant": "rare"}, 100, 0.01, 40)
    assert (entry["recall@10"], entry["unfiltered_recall@10"]) == (f_hits / f_den, u_hits / u_den)
    assert row["filtered"].detail["selectivity"] == {"min": 0.01, "median": 0.01, "max": 0.01, "filters": 1}


def test_sample_filters_draws_seeded_field_value_pairs_that_do_not_pass_everything():
    metas = [{"lang": "en", "year": 2020, "all": "x"}, {"lang": "de", "year": 2020, "all": "x"},
             {"lang": "en", "all": "x", "tags": ["a"]}]
    # candidate pairs, sorted: lang="de" (row 1), lang="en" (rows 0, 2); "all" passes every chunk, "tags" is a list
    # and year=2020 passes rows 0, 1: three candidates
    every = sample_filters(metas, 10, seed=0)
    assert [(f, r.tolist()) for f, r in every] == [({"lang": "de"}, [1]), ({"lang": "en"}, [0, 2]),
                                                   ({"year": 2020}, [0, 1])]
    picked = sample_filters(metas, 2, seed=5)
    want = np.sort(np.random.default_rng(6).choice(3, size=2, replace=False))
    assert [f for f, _ in picked] == [every[i][0] for i in want]
    assert sample_filters(metas, 0, seed=0) == [] and sample_filters([{}], 3, seed=0) == []
