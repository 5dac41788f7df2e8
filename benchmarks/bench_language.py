"""Language stage: detector throughput, model load time and memory (5 vs 75 languages), the mixed-language flag on
real sentences, and the whole ``ingestaudit run`` on lingua-testdata.

Needs ../shared/data/lingua-testdata. Every configuration runs in a fresh child process, so load time and peak memory
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``) belong to that configuration alone.

Part 1 (detector): ``LinguaDetector`` (lingua 2.x, high-accuracy mode unless noted) with
  - 5 candidates {de, en, es, fr, it}, ``detect`` one text at a time            [baseline]
  - 5 candidates, ``detect_many`` (lingua's ``detect_languages_in_parallel_of``, all cores)
  - 75 candidates, one at a time / batch, on the *same* texts (the 5 languages' sentences)
  - 75 candidates in low-accuracy mode, batch
  - 5 candidates, the mixed-language analysis (``mixed_languages``: multi-language detection + re-scoring)
Load time = building the adapter plus the first detection of one sentence per candidate language (lingua loads a
language's models lazily, on first use); RSS is read before and after.

Part 2 (mixed flag): on 20 sentences per language (1,500 single-language sentences, all 75 candidates), how many are
flagged mixed at share 0.25 for several confirmation thresholds; and on 150 seeded two-language paragraphs (4
sentences of language A, then 2-4 of language B), how many are found.

Part 3 (runner): ``ingestaudit run`` (``--parser reference --stage language``, 2 workers) on the imported corpus,
with 20 sentences per language (1,500 documents) and with all 11,250; the time until the last document task
returned (process pool: parse + load truth) and the rest (the language auditor in the main process: model loading,
detection, metrics, plus building the report).

Usage:
    python benchmarks/bench_language.py                 # everything (about 5 minutes on 2 cores)
    python benchmarks/bench_language.py --parts 1       # only the detector
Results are printed and written to benchmarks/results/bench_language.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = Path(os.environ.get("INGESTAUDIT_SHARED_DATA", ROOT.parent / "shared" / "data")) / "lingua-testdata"
FIVE = ["de", "en", "es", "fr", "it"]


def sentences(codes: list[str], per_language: int | None = None) -> list[tuple[str, str]]:
    out = []
    for c in codes:
        lines = (DATA / "sentences" / f"{c}.txt").read_text(encoding="utf-8").splitlines()
        out += [(c, s) for s in lines[:per_language]]
    return out


def all_codes() -> list[str]:
    return sorted(p.stem for p in (DATA / "sentences").glob("*.txt"))


def rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --------------------------------------------------------------------------------------------------- children

def child_detector(cfg: dict) -> dict:
    """One detector configuration in this (fresh) process."""
    from ingestaudit.stages.language import LinguaDetector, mixed_languages
    from ingestaudit.truth import normalize_language

    rss0 = rss_mb()
    texts = [s for _, s in sentences(FIVE)]
    candidates = FIVE if cfg["languages"] == 5 else None
    t0 = time.perf_counter()
    det = LinguaDetector(candidates, low_accuracy=cfg.get("low_accuracy", False))
    warm = [s for _, s in sentences(FIVE if candidates else all_codes(), 1)]
    det.detect_many(warm) if cfg["mode"] != "one" else [det.detect(t) for t in warm]
    if cfg["mode"] == "mixed":
        mixed_languages(det, warm[:2])
    load_s = time.perf_counter() - t0
    rss_loaded = rss_mb()
    t0 = time.perf_counter()
    if cfg["mode"] == "one":
        preds = [det.detect(t) for t in texts]
    elif cfg["mode"] == "batch":
        preds = det.detect_many(texts)
    else:
        res = mixed_languages(det, texts)
        preds = [r.main for r in res]
    elapsed = time.perf_counter() - t0
    truth = [normalize_language(c) for c, _ in sentences(FIVE)]
    return {"texts": len(texts), "load_s": load_s, "seconds": elapsed, "docs_per_s": len(texts) / elapsed,
            "rss_before_mb": rss0, "rss_after_load_mb": rss_loaded, "rss_peak_mb": rss_mb(),
            "accuracy": sum(p == t for p, t in zip(preds, truth)) / len(texts)}


def child_mixed(_: dict) -> dict:
    """Mixed-flag rates on single sentences and on two-language paragraphs (all 75 candidates)."""
    import random

    from ingestaudit.stages.language import LinguaDetector, mixed_languages

    codes = all_codes()
    det = LinguaDetector(None)
    single = [s for _, s in sentences(codes, 20)]
    rng = random.Random(1)
    paragraphs = []
    for _ in range(150):
        a, b = rng.sample(codes, 2)
        la = sentences([a], 4)
        lb = sentences([b], rng.randint(2, 4))
        paragraphs.append(" ".join(s for _, s in la + lb))
    t0 = time.perf_counter()
    r_single = mixed_languages(det, single, min_share=0.25, min_confirmation=0.9)
    r_para = mixed_languages(det, paragraphs, min_share=0.25, min_confirmation=0.9)
    elapsed = time.perf_counter() - t0

    def rate(results, threshold):
        # a candidate (second share >= 0.25) is mixed when its confirmation reaches the threshold (0 = no check)
        return sum(r.second_share >= 0.25 and (threshold == 0 or (r.confirmation or 0) >= threshold)
                   for r in results) / len(results)

    return {"single_sentences": len(single), "paragraphs": len(paragraphs), "seconds": elapsed,
            "flagged": {str(c): {"single": rate(r_single, c), "paragraphs": rate(r_para, c)}
                        for c in (0, 0.5, 0.9, 0.99)}}


def child_runner(cfg: dict) -> dict:
    """``ingestaudit run`` on an imported lingua-testdata corpus, timed by phase."""
    from ingestaudit.config import load_config
    from ingestaudit.corpus import discover
    from ingestaudit.importers import get_importer
    from ingestaudit.pipeline import make_pipeline
    from ingestaudit.runner import run

    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        t0 = time.perf_counter()
        get_importer("lingua-testdata")(DATA, corpus, limit_per_language=cfg["limit"])
        import_s = time.perf_counter() - t0
        config = load_config(corpus / "ingestaudit.toml")
        config.run.workers = 2
        marks: dict[str, float] = {}

        def progress(n: int):
            marks["tasks"] = n

            def tick(*_: object) -> None:
                marks["last_task"] = time.perf_counter()
            return tick

        t0 = time.perf_counter()
        found = discover(corpus)
        report = run(found, [make_pipeline("reference", {"parser": "reference"})], config, progress=progress)
        total = time.perf_counter() - t0
        acc = [s.micro for s in report.summary if s.metric == "language.accuracy" and s.doc_class == "__all__"][0]
    pool = marks["last_task"] - t0
    return {"documents": marks["tasks"], "import_s": import_s, "run_s": total, "pool_s": pool,
            "auditor_and_report_s": total - pool, "docs_per_s": marks["tasks"] / total, "accuracy": acc,
            "rss_peak_mb": rss_mb()}


CHILDREN = {"detector": child_detector, "mixed": child_mixed, "runner": child_runner}


def in_child(kind: str, cfg: dict) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", kind, json.dumps(cfg)], capture_output=True,
                         text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------------------- main

DETECTOR_CONFIGS = [
    ("lingua 5 languages, one at a time [baseline]", {"languages": 5, "mode": "one"}),
    ("lingua 5 languages, batch", {"languages": 5, "mode": "batch"}),
    ("lingua 75 languages, one at a time", {"languages": 75, "mode": "one"}),
    ("lingua 75 languages, batch", {"languages": 75, "mode": "batch"}),
    ("lingua 75 languages, low accuracy, batch", {"languages": 75, "mode": "batch", "low_accuracy": True}),
    ("lingua 5 languages, mixed-language analysis", {"languages": 5, "mode": "mixed"}),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", nargs="*", type=int, default=[1, 2, 3])
    ap.add_argument("--child", nargs=2, metavar=("KIND", "CONFIG"))
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "bench_language.json")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child[0]](json.loads(args.child[1]))))
        return
    if not DATA.is_dir():
        sys.exit(f"{DATA} not found")
    from importlib.metadata import version

    results: dict = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                 "lingua": version("lingua-language-detector")}}
    if 1 in args.parts:
        rows = []
        for name, cfg in DETECTOR_CONFIGS:
            r = in_child("detector", cfg)
            rows.append({"config": name, **r})
            print(f"{name}: {r['docs_per_s']:.0f} docs/s, load {r['load_s']:.2f} s, RSS after load "
                  f"{r['rss_after_load_mb']:.0f} MB, accuracy {r['accuracy']:.4f}", flush=True)
        base = rows[0]["docs_per_s"]
        for r in rows:
            r["speed_vs_baseline"] = r["docs_per_s"] / base
        results["detector"] = rows
    if 2 in args.parts:
        results["mixed"] = in_child("mixed", {})
        print("mixed:", json.dumps(results["mixed"]), flush=True)
    if 3 in args.parts:
        results["runner"] = []
        for limit in (20, None):
            r = in_child("runner", {"limit": limit})
            results["runner"].append({"limit_per_language": limit, **r})
            print(f"runner limit={limit}: {r['documents']} docs, {r['run_s']:.1f} s "
                  f"(pool {r['pool_s']:.1f} s, auditor+report {r['auditor_and_report_s']:.1f} s), "
                  f"{r['docs_per_s']:.0f} docs/s, RSS {r['rss_peak_mb']:.0f} MB", flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
