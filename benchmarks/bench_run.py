"""Backbone benchmarks (issue 2): audit overhead versus parse time per parser, documents per second with 1 and 2
workers, and `ingestaudit --help` wall time. Every number is a ratio against a baseline measured in the same run.

    python benchmarks/bench_run.py [--repeat 3] [--json benchmarks/results/bench_run.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo"
OLMOCR = ROOT.parent / "shared" / "data" / "olmocr-bench-sample"


def best(fn, repeat: int) -> float:
    """Best wall time of ``repeat`` calls, in seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def overhead(corpus: Path, parser_name: str, repeat: int) -> dict:
    """Parse time (baseline) and audit time of the extraction + normalization auditors, same documents."""
    from ingestaudit.auditors.extraction import ExtractionAuditor
    from ingestaudit.auditors.base import ItemArtefacts
    from ingestaudit.auditors.normalization import NormalizationAuditor
    from ingestaudit.corpus import discover
    from ingestaudit.parsers.base import ParserError
    from ingestaudit.parsers.registry import load_parser
    from ingestaudit.truth import load_truth

    found = discover(corpus)
    parser = load_parser(parser_name)
    pairs = []
    for doc in found.documents:
        if not parser.supports(doc):
            continue
        try:
            pairs.append((doc, load_truth(doc, found.root), parser.parse(doc)))  # warm-up and inputs
        except ParserError:
            continue
    auditors = [ExtractionAuditor(), NormalizationAuditor()]
    parse_s = best(lambda: [parser.parse(d) for d, _, _ in pairs], repeat)
    items = [ItemArtefacts.of(t, p) for _, t, p in pairs]
    audit_s = best(lambda: [a.audit(i) for i in items for a in auditors if a.applies(i.truth)], repeat)
    return {"corpus": corpus.name, "parser": parser_name, "documents": len(pairs), "parse_s": parse_s,
            "audit_s": audit_s, "audit_over_parse": audit_s / parse_s if parse_s else None}


def throughput(workers: int, parsers: list[str]) -> dict:
    """Whole-run documents (x parsers) per second on the demo corpus through the runner."""
    from ingestaudit.config import Config
    from ingestaudit.corpus import discover
    from ingestaudit.pipeline import make_pipeline
    from ingestaudit.runner import run

    found = discover(DEMO)
    cfg = Config()
    cfg.run.workers = workers
    t0 = time.perf_counter()
    run(found, [make_pipeline(p, {"parser": p}) for p in parsers], cfg)
    elapsed = time.perf_counter() - t0
    n = len(found.documents) * len(parsers)
    return {"workers": workers, "parsers": parsers, "tasks": n, "seconds": elapsed, "tasks_per_s": n / elapsed}


def help_time(repeat: int) -> dict:
    """Wall time of `ingestaudit --help` against the interpreter's bare start-up (`python -c pass`)."""
    def cmd(args):
        return lambda: subprocess.run(args, check=True, capture_output=True)

    bare = best(cmd([sys.executable, "-c", "pass"]), repeat)
    import shutil

    script = shutil.which("ingestaudit")
    helped = best(cmd([script, "--help"] if script else [sys.executable, "-m", "ingestaudit.cli", "--help"]), repeat)
    return {"python_startup_s": bare, "help_s": helped, "help_over_startup": helped / bare}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    results: dict = {"overhead": [], "throughput": [], "help": help_time(max(5, args.repeat))}
    for corpus in (DEMO, OLMOCR):
        if not corpus.is_dir():
            continue
        if corpus == OLMOCR:  # importing links the PDFs into a temporary corpus with checks truth
            from ingestaudit.importers import import_corpus

            tmp = Path(tempfile.mkdtemp()) / "olmocr"
            import_corpus("olmocr-bench", corpus, tmp)
            corpus = tmp
        for p in ("pymupdf", "unstructured", "tesseract"):
            results["overhead"].append(overhead(corpus, p, args.repeat))
            print(json.dumps(results["overhead"][-1]), flush=True)
    for w in (1, 2):
        results["throughput"].append(throughput(w, ["pymupdf", "unstructured", "tesseract"]))
        print(json.dumps(results["throughput"][-1]), flush=True)
    print(json.dumps(results["help"]))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
