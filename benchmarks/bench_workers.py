"""Worker scaling (issue 27, "Performance"): ``--workers 2`` against ``--workers 1`` on 20 documents with every
default stage.

Corpus: the demo's 10 documents (3 born-digital PDFs, 4 scanned, 3 web pages) and a renamed copy of each (``<name>_b``,
same labels), with the demo's questions: 20 documents, every default stage (extraction, tables, layout,
language, PII, boilerplate, chunking, retrieval, index, the waterfall), pipelines ``pymupdf``, ``unstructured`` and
``tesseract`` (as the README's demo command). Each run is ``python -m ingestaudit run`` in a fresh interpreter with
the ``process`` executor and ``--no-step-cache`` (parsing, OCR and detection are real work in every run); the
embedding cache is warmed by one untimed run first (the vectors are the same for both worker counts). Reported:
wall seconds of each run (best of --repeat, the two worker counts alternating), the speed-up ``t1 / t2`` (target
>= 1.5) and each run's ``step_seconds`` totals. Run from the project root:

    python benchmarks/bench_workers.py [--repeat 2] [--json benchmarks/results/bench_workers.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo"
PARSERS = ("pymupdf", "unstructured", "tesseract")


def make_corpus(folder: Path) -> Path:
    """The demo and a renamed copy of each document (20 documents) under ``folder``."""
    corpus = folder / "corpus"
    shutil.copytree(DEMO, corpus)
    for doc in sorted((corpus / "docs").rglob("*")):
        if doc.is_file():
            shutil.copyfile(doc, doc.with_name(f"{doc.stem}_b{doc.suffix}"))
    for truth in sorted((corpus / "truth").rglob("*")):
        if truth.is_file():
            stem, _, rest = truth.name.partition(".")
            shutil.copyfile(truth, truth.with_name(f"{stem}_b.{rest}"))
    return corpus


def run_once(corpus: Path, out: Path, workers: int, cache: Path) -> tuple[float, dict[str, Any]]:
    """Wall seconds of one run and its timings.json ``(run)`` entry.

    Raises:
        RuntimeError: the command did not exit 0 (its stderr's end is in the message).
    """
    args = [sys.executable, "-m", "ingestaudit", "run", str(corpus), "--out", str(out), "--executor", "process",
            "--workers", str(workers), "--quiet", "--no-step-cache", *[a for p in PARSERS for a in ("--parser", p)]]
    env = {**os.environ, "INGESTAUDIT_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    res = subprocess.run(args, capture_output=True, text=True, env=env, cwd=out.parent)
    seconds = time.perf_counter() - t0
    if res.returncode not in (0, 1):  # 1: a failed check of the demo's labels is still a complete run
        raise RuntimeError(f"{' '.join(args)} exited {res.returncode}: {res.stderr[-2000:]}")
    return seconds, json.loads((out / "timings.json").read_text(encoding="utf-8"))["(run)"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp:
        folder = Path(tmp)
        corpus, cache = make_corpus(folder), folder / "cache"
        n_docs = sum(1 for p in (corpus / "docs").rglob("*") if p.is_file())
        run_once(corpus, folder / "warm", 1, cache)  # fills the embedding cache
        times: dict[int, list[float]] = {1: [], 2: []}
        runs: dict[int, dict[str, Any]] = {}
        for i in range(args.repeat):
            for workers in ((1, 2) if i % 2 == 0 else (2, 1)):
                seconds, runs[workers] = run_once(corpus, folder / f"w{workers}", workers, cache)
                times[workers].append(seconds)
    result: dict[str, Any] = {
        "machine": f"{platform.machine()} {os.cpu_count()} CPU, Python {platform.python_version()}",
        "documents": n_docs, "parsers": list(PARSERS), "repeat": args.repeat,
        "workers_1_s": min(times[1]), "workers_2_s": min(times[2]), "speedup": min(times[1]) / min(times[2]),
        "all_runs": {str(k): v for k, v in times.items()},
        "step_seconds": {str(k): dict(sorted(v["step_seconds"].items(), key=lambda kv: -kv[1])[:8])
                         for k, v in runs.items()}}
    print(f"{n_docs} documents x {len(PARSERS)} pipelines: --workers 1 {result['workers_1_s']:.1f} s, --workers 2 "
          f"{result['workers_2_s']:.1f} s; speed-up {result['speedup']:.2f} (target >= 1.5)")
    for k, steps in result["step_seconds"].items():
        print(f"  workers {k}: " + ", ".join(f"{key} {sec:.1f}" for key, sec in steps.items()))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
