"""The gate's cost (issue 26, "Performance"): ``ingestaudit compare`` of two 10,000-document reports, wall time and
peak memory, as a ratio to reading the two stores (``pyarrow.parquet.read_table`` of both measurements.parquet).

    python benchmarks/bench_compare.py [--docs 10000] [--work DIR] [--repeat 3] [--json FILE]

The two reports are synthetic, written through the package's own writer (`ingestaudit.io.write_report`: the
store, report.json with the summary and paired tests computed as a run computes them). Seeded: ``--docs``
documents in three classes (text, web, pdf), two pipelines (``fast``, ``careful``), per document and pipeline the
extraction rows (cer, wer, cer_norm, wer_norm with counts; completeness), six normalization counts and chunking's
boundary_splits under two labels: 13 rows per document and pipeline. The head is the base with 2 % of the
``fast`` pipeline's CER rows worse by 0.05 and 1 % of its documents in ``error`` (so the gate finds
regressions, hard regressions and within-noise rows, as a nightly job would). Reports are cached under ``--work``.

Each measurement runs in a fresh child process (``python -m ingestaudit.cli compare BASE HEAD --json``; the reader
``pyarrow.parquet.read_table`` of both stores) and reports its wall time and its own peak RSS
(``VmHWM`` at exit); the best of ``--repeat`` runs is kept for each.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLASSES = ("text", "web", "pdf")
PIPELINES = ("fast", "careful")
EXTRACTION = ("extraction.cer", "extraction.wer", "extraction.cer_norm", "extraction.wer_norm")
NORMALIZATION = ("normalization.invisible_chars", "normalization.ligatures", "normalization.mojibake_suspects",
                 "normalization.nfkc_changed_chars", "normalization.non_nfc_sequences",
                 "normalization.replacement_chars")

LAUNCHER = """
import atexit, os, sys, time
t0 = time.perf_counter()
def _record():
    seconds = time.perf_counter() - t0
    hwm = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    with open(os.environ["BENCH_OUT"], "w") as fh:
        fh.write(hwm + " " + str(seconds))
atexit.register(_record)
if sys.argv[1] == "read":
    import pyarrow.parquet as pq
    tables = [pq.read_table(p) for p in sys.argv[2:]]
    print(sum(t.num_rows for t in tables))
else:
    sys.argv = ["ingestaudit", *sys.argv[2:]]
    from ingestaudit.cli import main
    main()
"""
"""The child: reads both stores or runs ``ingestaudit``; writes ``peak_rss_kib seconds`` to ``$BENCH_OUT`` at exit:
the peak is ``VmHWM`` of /proc/self/status (reset by exec, unlike ``ru_maxrss``, which a child forked from this
generator would inherit), the seconds run from the start of the script (imports included, interpreter start-up
not)."""


def make_rows(n_docs: int, *, head: bool, seed: int = 0) -> list:
    """The measurement rows of one synthetic report (see the module docstring), canonical order."""
    from ingestaudit.report.schema import MeasurementRow

    rng = random.Random(seed)
    worse = random.Random(seed + 1)
    rows = []
    for i in range(n_docs):
        item, cls = f"{CLASSES[i % 3]}/doc{i:06d}", CLASSES[i % 3]
        for p in PIPELINES:
            failed = head and p == "fast" and worse.random() < 0.01
            den = float(rng.randint(800, 4000))
            cells = []
            for m in EXTRACTION:
                v = rng.betavariate(1.2, 30.0)
                if head and p == "fast" and m == "extraction.cer" and worse.random() < 0.02:
                    v = min(1.0, v + 0.05)
                cells.append((m, "", round(v * den) / den * 1.0, round(v * den), den))
            cells.append(("extraction.completeness", "", 1.0 - rng.random() * 0.02, None, None))
            cells += [(m, "", c / den, float(c), den) for m in NORMALIZATION for c in [rng.randint(0, 2)]]
            for label in ("sentence", "section"):
                k = rng.randint(0, 6)
                cells.append(("chunking.boundary_splits", label, k / 6, float(k), 6.0))
            for metric, label, value, num, d in cells:
                state = "error" if failed and metric.startswith("extraction.") else "ok"
                rows.append(MeasurementRow(
                    item=item, item_kind="document", doc_class=cls, pipeline=p, stage=metric.split(".", 1)[0],
                    metric=metric, label=label, value=value if state == "ok" else None,
                    numerator=num if state == "ok" else None, denominator=d if state == "ok" else None, state=state,
                    detail={"reason": "parser raised ValueError"} if state != "ok" else {}))
    rows.sort(key=lambda m: (m.item_kind, m.item, PIPELINES.index(m.pipeline), m.stage, m.metric, m.label))
    return rows


def make_report(out: Path, n_docs: int, *, head: bool) -> Path:
    """Write one synthetic report into ``out`` with `ingestaudit.io.write_report`; returns its report.json."""
    import hashlib

    from ingestaudit.io import write_report
    from ingestaudit.report.aggregate import summarize
    from ingestaudit.report.paired import paired_tests
    from ingestaudit.report.schema import (CorpusInfo, Failure, PipelineInfo, Report, StageInfo, ToolInfo)
    from ingestaudit.report.tables import headline_keys

    rows = make_rows(n_docs, head=head)
    names = list(PIPELINES)
    docs = {c: sum(1 for i in range(n_docs) if CLASSES[i % 3] == c) for c in CLASSES}
    items = sorted({r.item for r in rows})
    config = {"run": {"seed": 0, "parsers": names, "stages": ["chunking", "extraction", "normalization"]},
              "report": {"bootstrap_resamples": 1000, "confidence": 0.95},
              "auditors": {"extraction": {"normalization": "text-v1"}}, "gate": {}}
    summary = summarize(rows, names, seed=0)
    failures = [Failure(item=r.item, pipeline=r.pipeline, stage="extraction", message="parser raised ValueError")
                for r in rows if r.state == "error" and r.metric == "extraction.cer"]
    report = Report(
        tool=ToolInfo(name="ingestaudit", version="bench"),
        corpus=CorpusInfo(path="/corpora/synthetic", fingerprint="f" * 64, documents=docs, questions=0,
                          item_hashes={i: hashlib.sha256(i.encode()).hexdigest()[:16] for i in items}),
        config=config, environment={"python": sys.version.split()[0]},
        pipelines=[PipelineInfo(name=p, kind="configured",
                                stages={"parser": StageInfo(implementation=p, version="1", settings={})})
                   for p in names],
        measurements=rows, summary=summary, failures=failures, details=[],
        paired_tests=paired_tests(rows, names, seed=0, keys=headline_keys(summary).values()))
    write_report(out, report)
    return out / "report.json"


def child(args: list[str], env_extra: dict[str, str] | None = None) -> dict:
    """One child process: its exit code, seconds and peak RSS (MiB)."""
    with tempfile.NamedTemporaryFile(suffix=".rss", delete=False) as fh:
        record = fh.name
    env = {**os.environ, "BENCH_OUT": record, **(env_extra or {})}
    proc = subprocess.run([sys.executable, "-c", LAUNCHER, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=env)
    rss, seconds = Path(record).read_text().split()
    os.unlink(record)
    return {"exit_code": proc.returncode, "seconds": float(seconds), "peak_rss_mb": int(rss) / 1024,
            "stdout_bytes": len(proc.stdout), "stderr_tail": proc.stderr.decode(errors="replace")[-300:]}


def best(runs: list[dict]) -> dict:
    """The fastest of ``runs``, with every run's seconds and the largest peak."""
    top = min(runs, key=lambda r: r["seconds"])
    return top | {"all_seconds": [r["seconds"] for r in runs], "max_peak_rss_mb": max(r["peak_rss_mb"] for r in runs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ingestaudit-bench-compare")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    folders = {}
    for name in ("base", "head"):
        out = args.work / f"{name}-{args.docs}"
        if not (out / "report.json").is_file():
            t0 = time.perf_counter()
            make_report(out, args.docs, head=name == "head")
            print(f"wrote {out} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        folders[name] = out
    stores = [str(folders[n] / "measurements.parquet") for n in ("base", "head")]
    compare_args = ["compare", str(folders["base"] / "report.json"), str(folders["head"] / "report.json"), "--json"]
    read = best([child(["read", *stores]) for _ in range(args.repeat)])
    gate = best([child(["cli", *compare_args]) for _ in range(args.repeat)])
    import pyarrow.parquet as pq

    result = {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0], "load": os.getloadavg()},
        "documents": args.docs, "rows_per_store": [pq.ParquetFile(s).metadata.num_rows for s in stores],
        "store_bytes": [os.path.getsize(s) for s in stores],
        "report_json_bytes": [os.path.getsize(folders[n] / "report.json") for n in ("base", "head")],
        "read_stores": read, "compare": gate,
        "ratio_seconds": gate["seconds"] / read["seconds"], "ratio_peak_rss": gate["peak_rss_mb"] / read["peak_rss_mb"],
    }
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
