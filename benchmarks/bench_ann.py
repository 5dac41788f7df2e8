"""Cost of the ANN index audit (ingestaudit.auditors.index.audit_vectors) at corpus scale, exact ground truth
(FAISS brute force, `ingestaudit.stages.index.exact_search`) against a numpy matrix-product baseline, and (``--chroma``)
the index audit on the Chroma corpora with MiniLM vectors.

For each size three child processes (so that each peak RSS is its own):

1. draws ``n`` synthetic vectors, 384 dimensions, float32, seeded: a 32-dimensional Gaussian latent mapped through
   a fixed random 32 x 384 matrix plus isotropic noise (0.1), L2-normalised (embedding-like: low intrinsic
   dimension; pure Gaussian vectors are near-orthogonal and make every ANN index look bad);
2. ``exact``: exact top-10 for 1,000 queries (1,000 of the vectors, sampled with the seed) with ``exact_search`` and
   with the numpy baseline (``base_block @ queries.T`` over blocks of 100,000 rows, ``argpartition`` per block,
   merged, then sorted), best of ``--repeat``; the two answers are compared id for id;
3. ``audit`` (twice: ``in_place`` and ``copy``): the whole index audit on UNNORMALISED vectors (each unit vector
   scaled by a seeded factor uniform in [0.5, 2], so the audit has to L2-normalise them, as for a user's
   ``vectors.npy``): ``audit_vectors(..., n_sample_queries=1000)``: norms and duplicates, normalisation, exact ground
   truth, HNSW build (M 32, efConstruction 40, single-threaded for reproducibility, FAISS's default threads with
   ``--parallel-build``), the five-point efSearch sweep 16..256 with single-threaded per-query search, every recall.
   ``in_place`` passes ``normalise_in_place=True`` (what the runner does: it owns the array it concatenated or read
   from ``vectors.npy``); ``copy`` is the default for a caller's array (one normalised copy). Wall time under
   ``time.perf_counter``, peak traced Python/numpy memory under ``tracemalloc`` (FAISS's C++ allocations are not
   traced) and the process's peak RSS from ``resource.getrusage`` (ru_maxrss, KiB on Linux), compared with the
   vectors plus the index (`index_memory_bytes`). The RSS baseline is taken after importing numpy, faiss, scipy.stats
   and ingestaudit (libraries are not the audit's memory) and the vectors are generated in blocks of 2,000 rows.

``--chroma``: imports ../shared/data/chroma-chunking-eval into a temporary folder and runs ``ingestaudit run CORPUS
--stage index`` on the recursive-800 chunks (reference parser, all-MiniLM-L6-v2) with the default HNSW, the starved
HNSW (M 4, efConstruction 8, efSearch 16) and IVF (nlist 32, nprobe 1) of `bench_chroma.py`; prints each pipeline's
sweep, operating point with its interval (bootstrap over queries) and frontier.

Usage:
    python benchmarks/bench_ann.py                       # 100,000 vectors
    python benchmarks/bench_ann.py --sizes 100000 1000000 --parallel-build-from 1000000   # as recorded
    python benchmarks/bench_ann.py --chroma [--cache-dir DIR]
Results are printed as JSON and written to benchmarks/results/bench_ann.json (``--chroma``: bench_ann_chroma.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DIM = 384
LATENT = 32
QUERIES = 1000
K = 10


def synthetic_vectors(n: int, seed: int = 0, block: int = 2_000) -> np.ndarray:
    """``(n, 384)`` float32 unit vectors: latent N(0, I_32) @ W (fixed, seeded) + 0.1 N(0, I_384), normalised;
    built ``block`` rows at a time so that no float64 copy of the whole array exists."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((LATENT, DIM)).astype(np.float32) / np.sqrt(LATENT)
    out = np.empty((n, DIM), dtype=np.float32)
    for s in range(0, n, block):
        b = min(block, n - s)
        x = rng.standard_normal((b, LATENT), dtype=np.float32) @ w
        x += 0.1 * rng.standard_normal((b, DIM), dtype=np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        out[s:s + b] = x
    return out


def numpy_topk(base: np.ndarray, queries: np.ndarray, k: int, block: int = 100_000) -> tuple[np.ndarray, np.ndarray]:
    """Baseline exact top-k by inner product: one matrix product per block of base rows, argpartition, merge."""
    best_s = np.full((queries.shape[0], 0), -np.inf, dtype=np.float32)
    best_i = np.zeros((queries.shape[0], 0), dtype=np.int64)
    for s in range(0, base.shape[0], block):
        sc = queries @ base[s:s + block].T  # (q, b)
        kk = min(k, sc.shape[1])
        part = np.argpartition(-sc, kk - 1, axis=1)[:, :kk]
        cand_s = np.concatenate([best_s, np.take_along_axis(sc, part, axis=1)], axis=1)
        cand_i = np.concatenate([best_i, part + s], axis=1)
        keep = np.argsort(-cand_s, axis=1, kind="stable")[:, :k]
        best_s, best_i = np.take_along_axis(cand_s, keep, axis=1), np.take_along_axis(cand_i, keep, axis=1)
    return best_s, best_i


def child_exact(n: int, repeat: int) -> dict:
    """Exact top-10 of 1,000 queries: FAISS brute force (`exact_search`) vs the numpy baseline, best of ``repeat``."""
    from ingestaudit.stages.index import exact_search

    x = synthetic_vectors(n)
    q = x[np.sort(np.random.default_rng(1).choice(n, size=QUERIES, replace=False))]
    faiss_s, numpy_s = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        _, fi = exact_search(x, q, K, "cosine")
        faiss_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        _, ni = numpy_topk(x, q, K)
        numpy_s.append(time.perf_counter() - t)
    return {"faiss_exact_search_s": round(min(faiss_s), 3), "numpy_matmul_topk_s": round(min(numpy_s), 3),
            "speedup_faiss_vs_numpy": round(min(numpy_s) / min(faiss_s), 2),
            "queries_same_ids_in_order": int((fi == ni).all(axis=1).sum()),
            "queries_same_id_sets": int(sum(set(a) == set(b) for a, b in zip(fi.tolist(), ni.tolist()))),
            "repeat": repeat}


def unnormalise(x: np.ndarray, seed: int = 5) -> np.ndarray:
    """Scale each row (in place) by a seeded factor uniform in [0.5, 2]: the norms a raw embedding store holds."""
    x *= np.random.default_rng(seed).uniform(0.5, 2.0, size=(x.shape[0], 1)).astype(np.float32)
    return x


def child_audit(n: int, parallel_build: bool, mode: str) -> dict:
    """The whole index audit on ``n`` unnormalised vectors, in a process of its own (peak RSS is the audit's)."""
    import faiss
    import scipy.stats  # noqa: F401  (imported by the intervals; a library, not the audit's memory)

    from ingestaudit.auditors.index import audit_vectors
    from ingestaudit.stages.index_step import IndexStep
    from ingestaudit.stages.index import IndexSettings

    rss_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t = time.perf_counter()
    x = unnormalise(synthetic_vectors(n))
    gen_s = time.perf_counter() - t
    ids = [f"d{i // 10}#{i % 10}" for i in range(n)]
    classes = ["c%d" % (i % 4) for i in range(n)]
    rss_vectors = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    vectors_bytes = x.nbytes
    settings = IndexSettings(build_threads=None if parallel_build else 1)
    tracemalloc.start()
    t = time.perf_counter()
    res = audit_vectors(x, ids, classes, step=IndexStep(), settings=settings, n_sample_queries=QUERIES, seed=0,
                        normalise_in_place=(mode == "in_place"))
    audit_s = time.perf_counter() - t
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    sweep, timings = res.details["sweep"], res.details["timings"]
    index_bytes = sweep["memory_bytes"]
    cells = [{"label": c["label"], "recall@10": c["unfiltered"]["recall@10"]["value"],
              "recall_tie_aware@10": c["unfiltered"]["recall_tie_aware@10"]["value"],
              "one_recall@1": c["unfiltered"]["one_recall@1"]["value"],
              "distances_per_query": round(c["distances_per_query"], 1),
              **{k: round(tc[k], 4) for k in ("qps", "p50_ms", "p95_ms")}}
             for c, tc in zip(sweep["cells"], timings["cells"])]
    search_s = sum(c["queries"] / c["qps"] for c in timings["cells"] if c.get("qps"))
    op = res.details["operating_point"]
    return {
        "mode": mode,
        "generate_s": round(gen_s, 2),
        "input_norms": {k: round(v, 4) for k, v in res.details["norms"]["vectors"].items()
                        if k in ("min", "median", "max", "unit_share")},
        "audit": {"wall_s": round(audit_s, 2), "build_s": round(timings["build_seconds"], 2),
                  "build_threads": settings.build_threads or faiss.omp_get_max_threads(),
                  "sweep_search_s_single_thread": round(search_s, 2),
                  "rest_s": round(audit_s - timings["build_seconds"] - search_s, 2),
                  "operating_point": {"label": op.get("label"), "mean_recall@10": op.get("mean_recall"),
                                      "ci": op.get("ci"), "queries": op.get("queries")},
                  "frontier": res.details["frontier"], "sweep": cells},
        "memory": {"vectors_bytes": vectors_bytes, "index_bytes": index_bytes,
                   "rss_at_start": rss_start, "rss_peak_before_audit": rss_vectors, "rss_peak": rss_peak,
                   "tracemalloc_peak_during_audit": traced_peak,
                   "audit_rss_increase_over_index": round((rss_peak - rss_vectors) / index_bytes, 3),
                   "peak_over_vectors_plus_index": round((rss_peak - rss_start) / (vectors_bytes + index_bytes), 3),
                   "note": "rss_at_start: interpreter + numpy + faiss + scipy.stats + ingestaudit imported; "
                           "peak_over_vectors_plus_index = (rss_peak - rss_at_start) / (vectors + index); tracemalloc "
                           "sees numpy/Python allocations made during the audit, not FAISS's C++ ones (the HNSW "
                           "index)"},
    }


CHROMA_PIPELINES = [
    ("recursive-800c", {"chunker": {"use": "recursive", "size": 800}}),
    ("recursive-800c+hnsw-m4", {"chunker": {"use": "recursive", "size": 800},
                                "index": {"use": "hnsw", "m": 4, "ef_construction": 8, "ef_search": 16}}),
    ("recursive-800c+ivf32", {"chunker": {"use": "recursive", "size": 800},
                              "index": {"use": "ivf", "nlist": 32, "nprobe": 1}}),
]


def chroma(cache_dir: Path | None) -> dict:
    """``ingestaudit run --stage index`` on the Chroma corpora (see the module docstring)."""
    import shutil
    import tempfile

    data = ROOT.parent / "shared" / "data" / "chroma-chunking-eval"
    if not data.is_dir():
        raise SystemExit(f"{data} not found")
    work = Path(tempfile.mkdtemp(prefix="bench-ann-chroma-"))
    try:
        corpus = work / "corpus"
        env = {**os.environ, "INGESTAUDIT_LINK_ROOTS": str(data.resolve())}
        subprocess.run(["ingestaudit", "import", "chroma-chunking-eval", str(data), str(corpus)], env=env,
                       check=True, capture_output=True)
        cache = cache_dir or (work / "cache")
        lines = ["[run]", 'stages = ["index"]', f"cache_dir = {json.dumps(str(cache))}", "doc_timeout_s = 3600", ""]
        for name, tables in CHROMA_PIPELINES:
            lines += [f"[pipelines.{json.dumps(name)}]", 'parser = "reference"']
            for stage, table in tables.items():
                lines.append(f"{stage} = {{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in table.items())
                             + " }")
            lines.append("")
        (work / "run.toml").write_text("\n".join(lines), encoding="utf-8")
        out = work / "out"
        t0 = time.perf_counter()
        proc = subprocess.run(["ingestaudit", "run", str(corpus), "--config", str(work / "run.toml"), "--stage",
                               "index", "--out", str(out)], env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if not (out / "report.json").is_file():
            raise SystemExit(f"run failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        report = json.loads((out / "report.json").read_text(encoding="utf-8"))
        timings = json.loads((out / "timings.json").read_text(encoding="utf-8"))
        res: dict = {"wall_s": round(wall, 1), "exit_code": proc.returncode, "questions": report["corpus"]["questions"],
                     "pipelines": {}}
        for name, _ in CHROMA_PIPELINES:
            det = {d["name"]: d["data"] for d in report["details"] if d["pipeline"] == name and d["stage"] == "index"}
            tcells = {c["label"]: c for c in timings.get(name, {}).get("index", {}).get("cells", [])}
            rows = {(s["metric"], s["label"]): s for s in report["summary"]
                    if s["pipeline"] == name and s["doc_class"] == "__all__"}
            res["pipelines"][name] = {
                "vectors": det.get("norms", {}).get("vectors", {}).get("n"),
                "queries": det.get("queries", {}).get("total"),
                "configured": det.get("source", {}).get("configured"),
                "recall@10_configured": rows.get(("index.recall@10", ""), {}).get("micro"),
                "recall@10_configured_ci": [rows.get(("index.recall@10", ""), {}).get("ci_low"),
                                            rows.get(("index.recall@10", ""), {}).get("ci_high")],
                "sweep": [{"label": c["label"], "recall@10": c["unfiltered"]["recall@10"]["value"],
                           "mean_recall@10": c["unfiltered"]["recall@10"]["mean_per_query"],
                           "recall_tie_aware@10": c["unfiltered"]["recall_tie_aware@10"]["value"],
                           "distances_per_query": c.get("distances_per_query"),
                           "qps": tcells.get(c["label"], {}).get("qps")}
                          for c in det.get("sweep", {}).get("cells", [])],
                "operating_point": det.get("operating_point"), "frontier": det.get("frontier"),
                "overview": det.get("overview")}
        return res
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--parallel-build", action="store_true", help="HNSW build with FAISS's default threads")
    ap.add_argument("--parallel-build-from", type=int, default=None, metavar="N",
                    help="build with FAISS's default threads for sizes >= N only (single-threaded below)")
    ap.add_argument("--modes", nargs="+", choices=("in_place", "copy"), default=["in_place", "copy"],
                    help="audit runs: normalise_in_place=True (the runner's path) and/or the copying default")
    ap.add_argument("--chroma", action="store_true", help="the index audit on the Chroma corpora (MiniLM)")
    ap.add_argument("--cache-dir", type=Path, default=None, help="embedding cache for --chroma")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--part", choices=("exact", "in_place", "copy"), help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.child:
        out = (child_exact(args.child, args.repeat) if args.part == "exact"
               else child_audit(args.child, args.parallel_build, args.part))
        print(json.dumps(out))
        return
    if args.chroma:
        t = time.perf_counter()
        result = {"loadavg_1min_at_start": round(os.getloadavg()[0], 2), **chroma(args.cache_dir),
                  "loadavg_1min_at_end": round(os.getloadavg()[0], 2), "total_s": round(time.perf_counter() - t, 1)}
        path = args.out or ROOT / "benchmarks" / "results" / "bench_ann_chroma.json"
        path.write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps(result, indent=1))
        return
    args.out = args.out or ROOT / "benchmarks" / "results" / "bench_ann.json"
    import faiss

    result = {"environment": {"python": platform.python_version(), "numpy": np.__version__,
                              "faiss": faiss.__version__, "cpus": os.cpu_count(), "machine": platform.machine(),
                              "loadavg_1min_at_start": round(os.getloadavg()[0], 2)},
              "runs": []}
    for n in args.sizes:
        run: dict = {"n": n, "dim": DIM, "queries": QUERIES, "k": K, "audits": {}}
        for part in ("exact", *args.modes):
            cmd = [sys.executable, __file__, "--child", str(n), "--part", part, "--repeat", str(args.repeat)]
            if args.parallel_build or (args.parallel_build_from is not None and n >= args.parallel_build_from):
                cmd.append("--parallel-build")
            t = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise SystemExit(f"child {part} for n={n} failed:\n{proc.stderr}")
            out = json.loads(proc.stdout.strip().splitlines()[-1])
            if part == "exact":
                run["exact"] = out
            else:
                run["audits"][part] = out
            run[f"{part}_child_wall_s"] = round(time.perf_counter() - t, 1)
        result["runs"].append(run)
        print(json.dumps(run, indent=1), file=sys.stderr)
    result["environment"]["loadavg_1min_at_end"] = round(os.getloadavg()[0], 2)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
