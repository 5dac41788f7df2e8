"""Exact search for 10,000 questions over 100,000 chunks (issue 10, Performance): FAISS flat against a numpy
matrix-product baseline, same top-k.

    python benchmarks/bench_exact_search.py [--n 100000] [--queries 10000] [--k 10] [--repeat 3]
                                            [--json benchmarks/results/bench_exact_search.json]

Data (seeded): base and queries are 384-dimensional float32 unit vectors drawn independently from the same
embedding-like distribution as ``bench_ann.py`` (a 32-dimensional Gaussian latent through a fixed random 32 x 384
matrix plus 0.1 isotropic noise, L2-normalised; seed 0 for the base, seed 1 for the queries, sharing the matrix).
Pure Gaussian vectors would be near-orthogonal, with top-10 scores packed within float32 rounding of each other.

Methods (inner product = cosine on unit vectors; best of ``--repeat``, methods interleaved round by round):

- **baseline**: numpy, 1,000 queries at a time: ``scores = q_batch @ base.T`` (float32, BLAS), ``np.argpartition``
  for the top k per row, then ``np.argsort`` of those k by score (descending, stable).
- ``ingestaudit.stages.index.exact_search(base, queries, k, "cosine")``: ``faiss.knn`` over batches of queries, no
  index built (what the index auditor uses for ground truth).
- (context) the baseline's matrix products alone, without the top-k selection.
- ``build_exact(base, "cosine")`` + ``search(index, queries, k)``: FAISS ``IndexFlatIP`` (what the retrieval auditor
  searches); the build (a copy of the base) is timed apart.

Agreement: per query, same ids in the same order and same id sets as the baseline; where they differ, whether the
differing ids have scores within 1e-6 of the k-th score (a tie at float32 rounding, not an error).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DIM, LATENT = 384, 32


def vectors(n: int, seed: int, w: np.ndarray, block: int = 10_000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty((n, DIM), dtype=np.float32)
    for s in range(0, n, block):
        b = min(block, n - s)
        x = rng.standard_normal((b, LATENT), dtype=np.float32) @ w
        x += 0.1 * rng.standard_normal((b, DIM), dtype=np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        out[s:s + b] = x
    return out


def numpy_topk(base: np.ndarray, queries: np.ndarray, k: int, batch: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """Baseline: matrix product per batch of queries, argpartition, sort the k."""
    n_q = queries.shape[0]
    scores = np.empty((n_q, k), dtype=np.float32)
    ids = np.empty((n_q, k), dtype=np.int64)
    bt = base.T
    for s in range(0, n_q, batch):
        sc = queries[s:s + batch] @ bt
        part = np.argpartition(-sc, k - 1, axis=1)[:, :k]
        ps = np.take_along_axis(sc, part, axis=1)
        order = np.argsort(-ps, axis=1, kind="stable")
        scores[s:s + batch] = np.take_along_axis(ps, order, axis=1)
        ids[s:s + batch] = np.take_along_axis(part, order, axis=1)
    return scores, ids


def numpy_matmul_only(base: np.ndarray, queries: np.ndarray, batch: int = 1000) -> None:
    """The baseline's matrix products alone (no top-k selection): how much of the baseline is BLAS."""
    bt = base.T
    for s in range(0, queries.shape[0], batch):
        queries[s:s + batch] @ bt


def agreement(base: np.ndarray, queries: np.ndarray, ref_s: np.ndarray, ref_i: np.ndarray, ids: np.ndarray) -> dict:
    same_order = (ids == ref_i).all(axis=1)
    same_set = np.array([set(a) == set(b) for a, b in zip(ids.tolist(), ref_i.tolist())])
    tie_explained = 0
    for q in np.flatnonzero(~same_set):
        extra = set(ids[q].tolist()) - set(ref_i[q].tolist())
        true = (base[list(extra)].astype(np.float64) @ queries[q].astype(np.float64))
        kth = float(ref_s[q, -1])
        tie_explained += bool(np.all(true >= kth - 1e-6))
    return {"queries": int(len(ids)), "same_ids_in_order": int(same_order.sum()), "same_id_sets": int(same_set.sum()),
            "set_differences_explained_by_ties_1e-6": int(tie_explained),
            "overlap_at_k": float(np.mean([len(set(a) & set(b)) / len(b) for a, b in zip(ids.tolist(),
                                                                                      ref_i.tolist())]))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "bench_exact_search.json")
    args = ap.parse_args()

    import faiss

    from ingestaudit.stages.index import build_exact, exact_search, search

    load0 = os.getloadavg()
    w = np.random.default_rng(42).standard_normal((LATENT, DIM)).astype(np.float32) / np.sqrt(LATENT)
    base, queries = vectors(args.n, 0, w), vectors(args.queries, 1, w)
    k = args.k
    times: dict[str, list[float]] = {"numpy": [], "numpy_matmul_only": [], "exact_search": [], "flat_build": [],
                                     "flat_search": []}
    out_np = out_es = out_fs = None
    for _ in range(args.repeat):
        t = time.perf_counter()
        out_np = numpy_topk(base, queries, k)
        times["numpy"].append(time.perf_counter() - t)
        t = time.perf_counter()
        numpy_matmul_only(base, queries)
        times["numpy_matmul_only"].append(time.perf_counter() - t)
        t = time.perf_counter()
        out_es = exact_search(base, queries, k, "cosine")
        times["exact_search"].append(time.perf_counter() - t)
        t = time.perf_counter()
        index = build_exact(base, "cosine")
        times["flat_build"].append(time.perf_counter() - t)
        t = time.perf_counter()
        out_fs = search(index, queries, k)
        times["flat_search"].append(time.perf_counter() - t)
        del index
    best = {m: min(v) for m, v in times.items()}
    res = {
        "n": args.n, "queries": args.queries, "dim": DIM, "k": k, "repeat": args.repeat,
        "environment": {"python": platform.python_version(), "numpy": np.__version__, "faiss": faiss.__version__,
                        "cpus": os.cpu_count(), "faiss_omp_threads": faiss.omp_get_max_threads(),
                        "machine": platform.machine(), "loadavg_start": [round(x, 2) for x in load0],
                        "loadavg_end": [round(x, 2) for x in os.getloadavg()]},
        "best_s": {m: round(v, 3) for m, v in best.items()},
        "all_s": {m: [round(x, 3) for x in v] for m, v in times.items()},
        "speedup_vs_numpy": {"exact_search": round(best["numpy"] / best["exact_search"], 2),
                             "flat_search": round(best["numpy"] / best["flat_search"], 2),
                             "flat_build_plus_search": round(best["numpy"] / (best["flat_build"] + best["flat_search"]),
                                                             2)},
        "agreement_vs_numpy": {"exact_search": agreement(base, queries, *out_np, out_es[1]),
                               "flat_search": agreement(base, queries, *out_np, out_fs[1])},
        "max_abs_score_diff_vs_numpy": {"exact_search": float(np.abs(out_es[0] - out_np[0]).max()),
                                        "flat_search": float(np.abs(out_fs[0] - out_np[0]).max())},
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
