"""Rendering report.html (issue 27, "light reports"): its time as a ratio to the run that wrote the report, and its
size, for this tree and optionally an older one (``--baseline-src``: a folder holding an ``ingestaudit`` package,
e.g. ``git archive <commit> ingestaudit | tar -x -C DIR``), each in its own process on the same report.

    python benchmarks/bench_html.py --report OUT --run-seconds S [--baseline-src DIR] [--repeat 3] [--json FILE]

``OUT`` is a run's output folder (report.json, measurements.parquet, timings.json); ``S`` the wall time of that run
(e.g. ``/usr/bin/time`` around ``ingestaudit run``). The time is the best of ``--repeat`` renders after one warm-up
render (imports and font caches are start-up, not rendering).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_MEASURE = """
import json, sys, time
from pathlib import Path
from ingestaudit.report import render
from ingestaudit.report.integrity import read_checked_report
from ingestaudit.report.timings import attach_timings
path, repeat = Path(sys.argv[1]) / "report.json", int(sys.argv[2])
report = read_checked_report(path)
attach_timings(report, path)
page = render.render_html(report)
times = []
for _ in range(repeat):
    t0 = time.perf_counter()
    page = render.render_html(report)
    times.append(time.perf_counter() - t0)
print(json.dumps({"seconds": min(times), "bytes": len(page.encode("utf-8")), "module": render.__file__}))
"""


def measure(src: Path, report: Path, repeat: int) -> dict:
    """Render ``report`` with the ``ingestaudit`` package under ``src``, in a child process."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(report), str(repeat)], capture_output=True, text=True,
                         env=env, check=True, cwd=src)  # "-c" puts the working folder first on sys.path
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Print one row per tree: seconds, bytes, and seconds as a share of the run's wall time."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", type=Path, required=True)
    ap.add_argument("--run-seconds", type=float, required=True)
    ap.add_argument("--baseline-src", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = {}
    for name, src in (("baseline", args.baseline_src), ("this tree", ROOT)):
        if src is None:
            continue
        r = measure(src, args.report, args.repeat)
        r["share_of_run"] = r["seconds"] / args.run_seconds
        rows[name] = r
        print(f"{name:10} render {r['seconds']:.2f} s  {r['bytes']:,} bytes  {100 * r['share_of_run']:.1f}% of the "
              f"run's {args.run_seconds:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
