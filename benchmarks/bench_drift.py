"""Embedding drift between two runs at 100,000 chunk vectors x 384 (issue 29, Performance): the time of
`ingestaudit.embedding_drift.drift_between` against one exact search pass over the same vectors.

    python benchmarks/bench_drift.py [--n 100000] [--queries 10000] [--questions 1000] [--repeat 2]
                                     [--json benchmarks/results/bench_drift.json]

Data (seeded, the generator of ``bench_exact_search.py``): base = 100,000 float32 unit vectors of 384 dimensions
(seed 0), head = base + 0.01 isotropic noise, renormalised (a library change: every cosine just below 1), keys
``(doc i // 10, 100 (i % 10), 100 (i % 10) + 100)`` in both runs (every chunk unchanged); ``--questions`` question
vectors (seed 2) kept by both runs.

Timed (best of ``--repeat``, interleaved):

- **reference**: one exact search pass over the base: ``exact_search(base, queries, 10, "cosine")`` with
  ``--queries`` query vectors (seed 1), the pass ``bench_exact_search.py`` measures (10,000 x 100,000);
- **drift**: ``drift_between(base, head)`` with its defaults: k = 10, 200 sampled chunk probes + the questions,
  exact neighbours in base and head, cosines of all 100,000 unchanged chunks, and MMD on a seeded sample of 1,000
  items (the kernel matrix is quadratic) with B = 500 permutations.

The requirement is drift / reference < 2.
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
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--questions", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "bench_drift.json")
    args = ap.parse_args()

    import faiss
    from bench_exact_search import DIM, LATENT, vectors

    from ingestaudit.embedding_drift import drift_between
    from ingestaudit.kept_vectors import KeptRun
    from ingestaudit.stages.index import exact_search

    load0 = os.getloadavg()
    w = np.random.default_rng(42).standard_normal((LATENT, DIM)).astype(np.float32) / np.sqrt(LATENT)
    base, queries, qv = vectors(args.n, 0, w), vectors(args.queries, 1, w), vectors(args.questions, 2, w)
    head = base + 0.01 * np.random.default_rng(3).standard_normal(base.shape, dtype=np.float32)
    head /= np.linalg.norm(head, axis=1, keepdims=True)
    keys = [(f"doc{i // 10}", 100 * (i % 10), 100 * (i % 10) + 100) for i in range(args.n)]
    emb = {"implementation": "bench", "settings": {"model": "bench"}}
    qids = [f"q{i}" for i in range(args.questions)]
    b_run = KeptRun("p", base, keys, qids, qv, emb, DIM)
    h_run = KeptRun("p", head, keys, qids, qv, emb, DIM)
    times: dict[str, list[float]] = {"exact_search_pass": [], "drift": []}
    result = None
    for _ in range(args.repeat):
        t = time.perf_counter()
        exact_search(base, queries, 10, "cosine")
        times["exact_search_pass"].append(time.perf_counter() - t)
        t = time.perf_counter()
        result = drift_between(b_run, h_run)
        times["drift"].append(time.perf_counter() - t)
    best = {m: min(v) for m, v in times.items()}
    res = {
        "n": args.n, "dim": DIM, "queries": args.queries, "questions": args.questions, "repeat": args.repeat,
        "environment": {"python": platform.python_version(), "numpy": np.__version__, "faiss": faiss.__version__,
                        "cpus": os.cpu_count(), "faiss_omp_threads": faiss.omp_get_max_threads(),
                        "loadavg_start": [round(x, 2) for x in load0],
                        "loadavg_end": [round(x, 2) for x in os.getloadavg()]},
        "best_s": {m: round(v, 3) for m, v in best.items()},
        "all_s": {m: [round(x, 3) for x in v] for m, v in times.items()},
        "ratio_drift_to_exact_pass": round(best["drift"] / best["exact_search_pass"], 3),
        "drift": {"metrics": result["metrics"], "probes": result["probes"],
                  "mmd": {k: result["mmd"][k] for k in ("n", "items", "sampled", "permutations", "p_value")},
                  "cosine_min": result["cosine_unchanged"]["min"]},
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
