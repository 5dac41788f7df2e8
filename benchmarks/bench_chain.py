"""The demo's wall time with this checkout against a baseline commit, in one session (issue 24, "Performance": the
stage chain runs each step once, so a run is no slower than before), and whether their measurement rows agree.

Each repeat runs ``ingestaudit run fixtures/demo -p pymupdf -p unstructured -p tesseract`` once from a git worktree
of ``--base`` (made in a temporary folder, removed after) and once from this checkout, alternating which goes first,
each in a fresh interpreter whose ``PYTHONPATH`` is that tree. Each tree has its own embedding cache
(``$INGESTAUDIT_CACHE`` in the temporary folder: the cache format may differ between the commits), warmed by one run
of each first, so both read every vector from it. The ratio is head / base wall time (best of the repeats, and the median).

    python benchmarks/bench_chain.py --base 7816b8e [--repeat 3] [--json benchmarks/results/bench_chain.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo"
PARSERS = ("pymupdf", "unstructured", "tesseract")
ROW_KEY = ("item", "pipeline", "stage", "metric", "label")


def run_demo(tree: Path, out: Path, cache: Path) -> float:
    """Wall seconds of one demo run with the package of ``tree`` and the embedding cache folder ``cache``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "INGESTAUDIT_CACHE": str(cache)}
    args = [sys.executable, "-m", "ingestaudit.cli", "run", str(DEMO), "--out", str(out)]
    for p in PARSERS:
        args += ["-p", p]
    t0 = time.perf_counter()
    subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=out.parent)
    return time.perf_counter() - t0


def rows(out: Path) -> dict[tuple, dict]:
    """The run's measurement rows by key, without the ``parser`` column (added by parser routing)."""
    import pyarrow.parquet as pq

    table = pq.read_table(out / "measurements.parquet").to_pylist()
    return {tuple(r[k] for k in ROW_KEY): {k: v for k, v in r.items() if k != "parser"}
            for r in table}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the baseline commit (e.g. the previous release)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-chain-") as tmp:
        base_tree = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base_tree), args.base],
                       check=True, capture_output=True)
        try:
            trees = {"base": base_tree, "head": ROOT}
            for name, tree in trees.items():  # warm the embedding cache and the OS file cache
                run_demo(tree, Path(tmp) / f"warm-{name}", Path(tmp) / f"cache-{name}")
            times: dict[str, list[float]] = {"base": [], "head": []}
            for i in range(args.repeat):
                order = ("base", "head") if i % 2 == 0 else ("head", "base")
                for name in order:
                    times[name].append(run_demo(trees[name], Path(tmp) / f"{name}-{i}", Path(tmp) / f"cache-{name}"))
            same = rows(Path(tmp) / "base-0") == rows(Path(tmp) / "head-0")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base_tree)],
                           capture_output=True)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    result = {"base": args.base, "head": head, "repeat": args.repeat, "seconds": times,
              "best_ratio_head_over_base": min(times["head"]) / min(times["base"]),
              "median_ratio_head_over_base": statistics.median(times["head"]) / statistics.median(times["base"]),
              "measurement_rows_equal": same}
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
