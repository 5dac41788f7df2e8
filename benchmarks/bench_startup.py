"""Start-up cost of a small run (issue 27, "Performance"): one document with every default stage and a warm embedding
cache, against the same document with ``--stage extraction`` only.

Corpus: the demo's ``born_digital/pump_field_note.pdf`` with its reference text, labels and the demo questions whose
evidence is in it, and the out-of-scope one (copied into a temporary folder; ``fixtures/demo`` is read in place). Both commands are
``python -m ingestaudit run CORPUS --out OUT --executor E`` in a fresh interpreter (as a user runs it), the cache
folder set by ``INGESTAUDIT_CACHE`` to a temporary folder warmed by one full run first (not timed).

- baseline: ``--stage extraction`` (parse and the extraction auditor only);
- measured: every default stage (the questions turn on chunking, retrieval, index and the waterfall), all
  embeddings answered by the cache.

Reported: wall-clock seconds (``time.perf_counter`` around the subprocess, best of --repeat, the two alternating),
their ratio (target <= 1.5), and the measured run's ten largest ``step_seconds`` from its timings.json. Run from the
project root:

    python benchmarks/bench_startup.py [--repeat 3] [--executor process] [--json benchmarks/results/bench_startup.json]
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
DOC = "born_digital/pump_field_note"


def make_corpus(folder: Path) -> Path:
    """The one-document corpus (see the module docstring) under ``folder``."""
    corpus = folder / "corpus"
    (corpus / "docs" / "born_digital").mkdir(parents=True)
    (corpus / "truth" / "born_digital").mkdir(parents=True)
    shutil.copyfile(DEMO / "docs" / f"{DOC}.pdf", corpus / "docs" / f"{DOC}.pdf")
    for truth in (DEMO / "truth" / "born_digital").glob("pump_field_note.*"):
        shutil.copyfile(truth, corpus / "truth" / "born_digital" / truth.name)
    lines = [line for line in (DEMO / "questions.jsonl").read_text(encoding="utf-8").splitlines()
             if line.strip() and all(r["doc"] == DOC for r in json.loads(line).get("relevant", [{"doc": DOC}]))]
    (corpus / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return corpus


def run_once(corpus: Path, out: Path, executor: str, cache: Path, *stages: str) -> float:
    """Wall seconds of one ``ingestaudit run`` in a fresh interpreter.

    Raises:
        RuntimeError: the command did not exit 0 (its stderr's end is in the message).
    """
    args = [sys.executable, "-m", "ingestaudit", "run", str(corpus), "--out", str(out), "--executor", executor,
            "--quiet", *[a for s in stages for a in ("--stage", s)]]
    env = {**os.environ, "INGESTAUDIT_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    res = subprocess.run(args, capture_output=True, text=True, env=env, cwd=out.parent)
    seconds = time.perf_counter() - t0
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {res.returncode}: {res.stderr[-2000:]}")
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--executor", default="process", choices=["serial", "process"])
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        folder = Path(tmp)
        corpus, cache = make_corpus(folder), folder / "cache"
        run_once(corpus, folder / "warm", args.executor, cache)  # fills the embedding cache
        full, extraction = [], []
        for _ in range(args.repeat):
            full.append(run_once(corpus, folder / "full", args.executor, cache))
            extraction.append(run_once(corpus, folder / "extraction", args.executor, cache, "extraction"))
        timings = json.loads((folder / "full" / "timings.json").read_text(encoding="utf-8"))["(run)"]
    steps = sorted(timings["step_seconds"].items(), key=lambda kv: -kv[1])[:10]
    result: dict[str, Any] = {
        "machine": f"{platform.machine()} {os.cpu_count()} CPU, Python {platform.python_version()}",
        "executor": args.executor, "repeat": args.repeat,
        "every_stage_s": min(full), "extraction_s": min(extraction), "ratio": min(full) / min(extraction),
        "all_runs": {"every_stage_s": full, "extraction_s": extraction},
        "top_steps_last_full_run": steps, "wall_s_last_full_run": timings.get("wall_s")}
    print(f"every default stage (warm cache): {result['every_stage_s']:.2f} s; --stage extraction: "
          f"{result['extraction_s']:.2f} s; ratio {result['ratio']:.2f} (target <= 1.5)")
    for key, sec in steps:
        print(f"  {key:<22} {sec:8.3f} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
