"""Presidio throughput and start-up: batched analysis (spaCy ``nlp.pipe`` through Presidio's BatchAnalyzerEngine)
against one ``AnalyzerEngine.analyze`` call per document, same spans asserted; and the one-off cost of loading the
engine (imports + spaCy model + recognizer registry), paid once per worker process.

Documents: the presidio-research synthetic records (../shared/data/presidio-synth, 1,000 short English snippets,
83 characters on average) and, for longer inputs, the same records joined 20 at a time into 50 "pages" of
~1,700 characters. Detector: `ingestaudit.stages.pii.PresidioDetector` with its defaults (en_core_web_sm 3.8.0,
all entities, threshold 0).

Baseline: ``detect(text)`` for each document in turn (``AnalyzerEngine.analyze``). Measured: ``detect_batch``
with batch sizes 8, 32 and 128. Methods are interleaved round by round and the best of ``--repeat`` rounds is
kept (wall clock and CPU time of this process), so a burst of load from other jobs hits them alike. No number is
reported unless every batched run returns exactly the spans of the baseline.

Start-up: measured in fresh child processes (``--startup-runs`` of them): time to import presidio_analyzer, then
to build the engine (the first `presidio_engine` call), then the first ``analyze`` call.

Run from the project root:

    python benchmarks/bench_pii.py                       # ~1-2 min
    python benchmarks/bench_pii.py --limit 200 --repeat 2
    python benchmarks/bench_pii.py --json benchmarks/results/bench_pii.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHARED = Path(os.environ.get("INGESTAUDIT_SHARED_DATA", ROOT.parent / "shared" / "data"))
DATA = SHARED / "presidio-synth" / "synth_dataset_v2.first1000.json"

STARTUP_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
t0 = time.perf_counter()
import presidio_analyzer, spacy  # noqa: F401
t1 = time.perf_counter()
from ingestaudit.stages.pii import PresidioDetector, presidio_engine
engine = presidio_engine()
t2 = time.perf_counter()
PresidioDetector().detect("Call Ana Lima at 212-555-0188 or ana.lima@example.com.")
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "engine_s": t2 - t1, "first_call_s": t3 - t2}))
"""


def startup(runs: int) -> dict:
    """Best and median of ``runs`` cold starts, each in a new interpreter."""
    results = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", STARTUP_CHILD, str(ROOT)], capture_output=True, text=True,
                             check=True)
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    keys = ("import_s", "engine_s", "first_call_s")
    med = {k: sorted(r[k] for r in results)[len(results) // 2] for k in keys}
    best = {k: min(r[k] for r in results) for k in keys}
    return {"runs": runs, "median": {k: round(v, 3) for k, v in med.items()},
            "best": {k: round(v, 3) for k, v in best.items()},
            "total_median_s": round(sum(med.values()), 3)}


def interleaved_best(methods: dict, repeat: int) -> tuple[dict, dict, dict]:
    """Best wall and CPU seconds of each method over ``repeat`` interleaved rounds, and its last output."""
    wall = dict.fromkeys(methods, float("inf"))
    cpu = dict.fromkeys(methods, float("inf"))
    out = {}
    for _ in range(repeat):
        for name, fn in methods.items():
            t, c = time.perf_counter(), time.process_time()
            out[name] = fn()
            wall[name] = min(wall[name], time.perf_counter() - t)
            cpu[name] = min(cpu[name], time.process_time() - c)
    return wall, cpu, out


def throughput(texts: list[str], repeat: int, batch_sizes: tuple[int, ...]) -> dict:
    from ingestaudit.stages.pii import PresidioDetector

    base = PresidioDetector()
    base.detect(texts[0])  # load outside the timings
    methods = {"one_at_a_time": lambda: [base.detect(t) for t in texts]}
    for b in batch_sizes:
        det = PresidioDetector(batch_size=b)
        methods[f"batch_{b}"] = (lambda d: lambda: d.detect_batch(texts))(det)
    wall, cpu, outs = interleaved_best(methods, repeat)
    same = all(outs[k] == outs["one_at_a_time"] for k in methods)
    if not same:
        raise SystemExit("batched spans differ from one-at-a-time spans: no numbers reported")
    n = len(texts)
    return {
        "docs": n, "chars": sum(map(len, texts)), "spans": sum(map(len, outs["one_at_a_time"])),
        "identical_spans": same,
        "docs_per_s_wall": {k: round(n / v, 1) for k, v in wall.items()},
        "docs_per_s_cpu": {k: round(n / v, 1) for k, v in cpu.items()},
        "speedup_wall_vs_one_at_a_time": {k: round(wall["one_at_a_time"] / v, 2) for k, v in wall.items()},
        "speedup_cpu_vs_one_at_a_time": {k: round(cpu["one_at_a_time"] / v, 2) for k, v in cpu.items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=1000, help="records used (default 1000)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--startup-runs", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args()
    if not DATA.is_file():
        raise SystemExit(f"needs {DATA} (set INGESTAUDIT_SHARED_DATA)")
    records = json.loads(DATA.read_text(encoding="utf-8"))[: args.limit]
    snippets = [r["full_text"] for r in records]
    pages = ["\n\n".join(snippets[i:i + 20]) for i in range(0, len(snippets), 20)]

    result = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_avg": [round(x, 2) for x in os.getloadavg()]},
        "startup": startup(args.startup_runs),
        "snippets": throughput(snippets, args.repeat, (8, 32, 128)),
        "pages": throughput(pages, args.repeat, (8, 32)),
    }
    from ingestaudit.stages.pii import PresidioDetector, package_version

    result["detector"] = {"presidio_analyzer": package_version("presidio_analyzer"), **PresidioDetector().settings()}
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
