"""Ranking metrics over 10,000 questions x 100 results: ingestaudit against pytrec_eval and ranx on the same data.

Data (seeded): per question a pool of 300 documents; 1-20 of them judged relevant with grades 1-3 and as many judged
non-relevant; a run of 100 documents drawn from the pool with continuous random scores (no tied scores, so every
library ranks the same way whatever its tie-break; ties are checked against pytrec_eval in tests/test_evalrun.py).

Measured (wall clock, best of ``--repeat``):
  - ``ingestaudit.metrics.ranking.ranking_metrics`` per question (ranking by score with trec_eval's tie-break
    included; cutoffs 5, 10, 100; every metric it has: hit, recall, precision, nDCG, AP at each cutoff, rr, AP,
    nDCG, R-precision);
  - ``ingestaudit.trec.evaluate`` (all 46 trec_eval measures per topic plus the averages, from parsed data);
  - ``pytrec_eval.RelevanceEvaluator(...).evaluate`` for the compared measures (and, apart, the evaluator's
    construction, which parses the qrels);
  - ``ranx.evaluate`` (numba; its first call compiles, reported apart as ``cold``; ``warm`` is a later call; the
    Qrels/Run construction, also compiled on first use, is reported apart, cold and warm).
Compared per question, |difference| <= 1e-12 required: map, recip_rank/mrr, P_k/precision@k, recall_k/recall@k,
ndcg_cut_k/ndcg@k for k in 5, 10, 100.

Usage:
    python benchmarks/bench_ranking.py                     # 10,000 x 100
    python benchmarks/bench_ranking.py --questions 1000    # quick
Results are printed as JSON and written to benchmarks/results/bench_ranking.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

KS = (5, 10, 100)
TOLERANCE = 1e-12


def make_data(n_questions: int, depth: int, seed: int = 0):
    """``qrels {q: {doc: grade}}`` and ``run {q: {doc: score}}`` (module docstring)."""
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i in range(n_questions):
        q = f"q{i}"
        pool = [f"d{j}" for j in rng.choice(100_000, size=300, replace=False)]
        n_rel = int(rng.integers(1, 21))
        judged = rng.choice(300, size=2 * n_rel, replace=False)
        qrels[q] = {pool[j]: (int(rng.integers(1, 4)) if m < n_rel else 0) for m, j in enumerate(judged)}
        # half the relevant documents are boosted into the candidate set so the metrics are not all ~0
        rel_docs = [pool[j] for j in judged[:n_rel]]
        candidates = list(dict.fromkeys(rel_docs[: n_rel // 2 + 1] + [pool[j] for j in rng.permutation(300)]))
        docs = candidates[:depth]
        scores = rng.random(len(docs))
        run[q] = {d: float(s) for d, s in zip(docs, scores)}
        if len(set(scores.tolist())) != len(scores):
            raise SystemExit("tied scores drawn; change the seed")
    return qrels, run


def best_of(fn, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def ours_core(qrels, run):
    from ingestaudit.metrics.ranking import ranking_metrics
    from ingestaudit.trec import rank

    out = {}
    for q, scores in run.items():
        judgements = qrels[q]
        grades = {d: r for d, r in judgements.items() if r > 0}
        ranked = [(d,) if d in grades else () for d in rank(list(scores.items()))]
        m = ranking_metrics(ranked, grades, KS)
        row = {"map": m["ap"].value, "recip_rank": m["rr"].value}
        for k in KS:
            row[f"P_{k}"] = m[f"precision@{k}"].value
            row[f"recall_{k}"] = m[f"recall@{k}"].value
            row[f"ndcg_cut_{k}"] = m[f"ndcg@{k}"].value
        out[q] = row
    return out


def ours_trec(qrels, run):
    from ingestaudit.trec import Run, evaluate

    return evaluate(qrels, Run({q: list(s.items()) for q, s in run.items()}, "bench")).per_topic


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=10_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "bench_ranking.json")
    args = ap.parse_args()

    qrels, run = make_data(args.questions, args.depth, args.seed)
    names = ["map", "recip_rank", *(f"{m}_{k}" for m in ("P", "recall", "ndcg_cut") for k in KS)]
    result: dict = {"questions": args.questions, "results_per_question": args.depth, "seed": args.seed,
                    "cutoffs": list(KS), "compared_measures": names, "tolerance": TOLERANCE,
                    "python": platform.python_version(), "machine": platform.machine(),
                    "processor": platform.processor(), "timings_s": {}, "max_abs_diff": {}}
    t = result["timings_s"]

    t["ingestaudit_ranking_metrics"], ours = best_of(lambda: ours_core(qrels, run), args.repeat)
    t["ingestaudit_trec_evaluate_all_46_measures"], ours_all = best_of(lambda: ours_trec(qrels, run), args.repeat)

    import pytrec_eval

    measures = {"map", "recip_rank", "P." + ",".join(map(str, KS)), "recall." + ",".join(map(str, KS)),
                "ndcg_cut." + ",".join(map(str, KS))}
    t["pytrec_eval_construct"], evaluator = best_of(lambda: pytrec_eval.RelevanceEvaluator(qrels, measures),
                                                    args.repeat)
    t["pytrec_eval_evaluate"], ref = best_of(lambda: evaluator.evaluate(run), args.repeat)

    diff_pytrec = max(abs(ours[q][n] - ref[q][n]) for q in ref for n in names)
    diff_trec = max(abs(ours_all[q][n] - ref[q][n]) for q in ref for n in names)
    result["max_abs_diff"]["ingestaudit_vs_pytrec_eval"] = diff_pytrec
    result["max_abs_diff"]["ingestaudit_trec_evaluate_vs_pytrec_eval"] = diff_trec

    try:
        import ranx
    except ImportError:
        result["ranx"] = "not installed"
    else:
        from importlib.metadata import version

        result["ranx_version"] = version("ranx")
        ranx_metrics = ["map", "mrr", *(f"{m}@{k}" for m in ("precision", "recall", "ndcg") for k in KS)]
        to_trec = {"map": "map", "mrr": "recip_rank",
                   **{f"{m}@{k}": f"{n}_{k}" for m, n in (("precision", "P"), ("recall", "recall"),
                                                         ("ndcg", "ndcg_cut")) for k in KS}}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numba type-safety warnings
            t0 = time.perf_counter()
            ranx.Qrels(qrels), ranx.Run(run)
            t["ranx_construct_cold"] = time.perf_counter() - t0
            t["ranx_construct_warm"], (rq, rr) = best_of(lambda: (ranx.Qrels(qrels), ranx.Run(run)), args.repeat)
            t0 = time.perf_counter()
            ranx.evaluate(rq, rr, ranx_metrics, return_mean=False)
            t["ranx_evaluate_cold"] = time.perf_counter() - t0
            t["ranx_evaluate_warm"], per_q = best_of(
                lambda: ranx.evaluate(rq, rr, ranx_metrics, return_mean=False), args.repeat)
        ids = list(rr.keys())
        diff_ranx = 0.0
        for metric, values in per_q.items():
            n = to_trec[metric]
            for q, v in zip(ids, values):
                diff_ranx = max(diff_ranx, abs(float(v) - ours[q][n]))
        result["max_abs_diff"]["ingestaudit_vs_ranx"] = diff_ranx

    result["values_equal_to_tolerance"] = all(v <= TOLERANCE for v in result["max_abs_diff"].values())
    base = t["ingestaudit_ranking_metrics"]
    result["time_ratio_vs_ingestaudit_ranking_metrics"] = {k: round(v / base, 4) for k, v in t.items()}
    result["means"] = {n: sum(ours[q][n] for q in ours) / len(ours) for n in names}
    text = json.dumps(result, indent=1)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    if not result["values_equal_to_tolerance"]:
        raise SystemExit("values differ by more than the tolerance")


if __name__ == "__main__":
    main()
