"""Speed of the boilerplate cleaners (documents per second) and of the span metric's alignment, each against a named
baseline measured in the same run.

Part 1, HTML: the 60 pages of ../shared/data/trafilatura-eval/html.
  - baseline: ``lxml.html.fromstring(raw).text_content()`` (parse the page and take all of its text: the cheapest
    HTML-to-text there is);
  - measured: the ``trafilatura`` cleaner with its default settings (``fast=False``) and with ``fast=True``, both on
    the raw bytes; the ``unstructured`` and ``none`` cleaners on the unstructured parser's output (parsed once,
    outside the timing; the parse itself is reported too, for scale).
Part 2, PDF: the multi-page PDFs of ../shared/data/docling-pdf/sources and icdar2013-tables (two pages or more).
  - baseline: ``PyMuPDFParser().parse`` of each document;
  - measured: the ``repeated-lines`` and ``none`` cleaners on those parsed pages.
Part 3, span metric: ``align_removal(input, output)`` for every PDF of part 2 (input = its pages joined by form
  feeds, output = repeated-lines' result), and for one synthetic 300,000-character text with every fifth line
  deleted.
  - baseline: a plain character LCS alignment, ``rapidfuzz.distance.Indel.opcodes(input, output)``;
  - measured: ``ingestaudit.metrics.boilerplate.align_removal`` (word patience diff, then characters).

Times are best of --repeat passes over the whole set (``time.perf_counter``). Run from the project root:

    python benchmarks/bench_cleaners.py [--repeat 3] [--json benchmarks/results/bench_cleaners.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ingestaudit.document import Document  # noqa: E402
from ingestaudit.metrics.boilerplate import align_removal  # noqa: E402
from ingestaudit.stages.cleaners import CleanerInput, load_cleaner  # noqa: E402

DATA = ROOT.parent / "shared" / "data"


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def row(name: str, n: int, seconds: float, baseline: float) -> dict[str, Any]:
    return {"name": name, "docs": n, "seconds": float(f"{seconds:.4g}"), "docs_per_s": float(f"{n / seconds:.4g}"),
            "ratio_to_baseline": float(f"{seconds / baseline:.3g}")}


def html_part(repeat: int) -> list[dict[str, Any]]:
    import lxml.html

    from ingestaudit.parsers.unstructured_parser import UnstructuredParser

    pages = sorted((DATA / "trafilatura-eval" / "html").glob("*.html"))
    raw = [p.read_bytes() for p in pages]
    parser = UnstructuredParser()
    t0 = time.perf_counter()
    parsed = [parser.parse(Document(f"web/{p.stem}", "web", p)) for p in pages]
    parse_s = time.perf_counter() - t0
    html_inputs = [CleanerInput.from_html(r) for r in raw]
    parsed_inputs = [CleanerInput.from_parsed(pd) for pd in parsed]
    n = len(pages)

    base = best(lambda: [lxml.html.fromstring(r).text_content() for r in raw], repeat)
    out = [row("baseline: lxml text_content", n, base, base)]
    for name, opts, inputs in (("trafilatura", {}, html_inputs), ("trafilatura", {"fast": True}, html_inputs),
                               ("unstructured", {}, parsed_inputs), ("none", {}, parsed_inputs)):
        cleaner = load_cleaner(name, opts)
        label = name + (" (fast=True)" if opts else "")
        out.append(row(label, n, best(lambda: [cleaner.clean(i) for i in inputs], repeat), base))
    out.append(row("(context) unstructured parse, once", n, parse_s, base))
    return out


def pdf_docs() -> list[Path]:
    import pymupdf

    paths = sorted((DATA / "docling-pdf" / "sources").glob("*.pdf"))
    paths += sorted((DATA / "icdar2013-tables" / "competition-dataset-us").glob("*.pdf"))
    out = []
    for p in paths:
        with pymupdf.open(p) as d:
            if d.page_count >= 2:
                out.append(p)
    return out


def pdf_part(repeat: int) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    from ingestaudit.parsers.pymupdf_parser import PyMuPDFParser

    docs = pdf_docs()
    parser = PyMuPDFParser()
    documents = [Document(f"pdf/{p.stem}", "pdf", p) for p in docs]
    base = best(lambda: [parser.parse(d) for d in documents], repeat)
    parsed = [parser.parse(d) for d in documents]
    inputs = [CleanerInput.from_parsed(pd) for pd in parsed]
    n = len(docs)
    out = [row("baseline: PyMuPDF parse", n, base, base)]
    for name in ("repeated-lines", "none"):
        cleaner = load_cleaner(name)
        out.append(row(name, n, best(lambda: [cleaner.clean(i) for i in inputs], repeat), base))
    rl = load_cleaner("repeated-lines")
    pairs = [("\f".join(pd.pages), rl.clean(CleanerInput.from_text("\f".join(pd.pages))).text) for pd in parsed]
    return out, pairs


def synthetic_pair() -> tuple[str, str]:
    rng = random.Random(0)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(20000)]
    common = ["the", "a", "of", "and", "to", "in", "is", "for"]
    words = [rng.choice(common) if rng.random() < 0.3 else rng.choice(vocab) for _ in range(48000)]
    lines = [" ".join(words[i:i + 12]) for i in range(0, len(words), 12)]
    return "\n".join(lines), "\n".join(line for i, line in enumerate(lines) if i % 5)


def metric_part(pairs: list[tuple[str, str]], repeat: int) -> list[dict[str, Any]]:
    from rapidfuzz.distance import Indel

    out = []
    for label, ps in (("PDF pages, repeated-lines output", pairs), ("synthetic 300k chars", [synthetic_pair()])):
        base = best(lambda: [Indel.opcodes(a, b) for a, b in ps], repeat)
        ours = best(lambda: [align_removal(a, b) for a, b in ps], repeat)
        chars = sum(len(a) for a, _ in ps)
        out.append({"case": label, "pairs": len(ps), "input_chars": chars,
                    "baseline_indel_s": round(base, 4), "align_removal_s": round(ours, 4),
                    "ratio_to_baseline": float(f"{ours / base:.3g}")})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    html = html_part(args.repeat)
    pdf, pairs = pdf_part(args.repeat)
    metric = metric_part(pairs, args.repeat)
    result = {"python": platform.python_version(), "machine": platform.machine(), "repeat": args.repeat,
              "html": html, "pdf": pdf, "span_metric": metric}
    for part in ("html", "pdf"):
        print(f"\n{part}: | cleaner | docs | best s | docs/s | x baseline |")
        for r in result[part]:
            print(f"| {r['name']} | {r['docs']} | {r['seconds']} | {r['docs_per_s']} | {r['ratio_to_baseline']} |")
    print("\nspan metric: | case | pairs | chars | Indel s | align_removal s | x baseline |")
    for r in metric:
        print(f"| {r['case']} | {r['pairs']} | {r['input_chars']} | {r['baseline_indel_s']} | "
              f"{r['align_removal_s']} | {r['ratio_to_baseline']} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
