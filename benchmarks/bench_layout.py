"""Layout results (issue 12): the layout.* metrics per parser on the demo corpus and on pdfplumber's tagged PDFs
(imported with ``ingestaudit import pdfplumber-tagged``), plus the layout audit's time as a ratio of the parse time.

    python benchmarks/bench_layout.py [--json benchmarks/results/layout_results.json] [--skip-tesseract]

Per corpus x parser x metric: ``micro`` (sum of numerators / sum of denominators over ``ok`` documents), ``macro``
(mean of the per-document values), ``n`` (``ok`` documents) and the count of every other state; per document the
value of the main metrics. Parsers: pymupdf (content-stream order), pymupdf with ``sort = true`` (columns interleaved
line by line), unstructured, tesseract (demo only: OCR is slow and the tagged PDFs are born digital), tagged,
reference (the reference text itself: order 0 by construction).

Also the cost of listing the discordant example pairs of ``layout.order_discordance`` on a long document with one
swapped pair: `ingestaudit.metrics.layout.discordant_pairs` (segment tree) against the nested loop it replaced
(baseline, re-implemented here), same positions, same output, one run each.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo"
TAGGED = ROOT.parent / "shared" / "data" / "pdfplumber-tagged"
PARSERS = [("pymupdf", "pymupdf", {}), ("pymupdf-sort", "pymupdf", {"sort": True}),
           ("unstructured", "unstructured", {}), ("tesseract", "tesseract", {}), ("tagged", "tagged", {}),
           ("reference", "reference", {})]
MAIN = ("layout.heading_f1", "layout.heading_level", "layout.hierarchy", "layout.order_discordance",
        "layout.order_located", "layout.list_integrity")


def audit_corpus(corpus: Path, label: str, parsers: list[tuple[str, str, dict]],
                 link_roots: tuple[Path, ...] = ()) -> list[dict]:
    """Parse every document with every parser and audit its layout; one result per parser. ``link_roots``: the
    folders the corpus's document links may point into (an imported corpus links to its source)."""
    from ingestaudit.auditors.base import ItemArtefacts
    from ingestaudit.auditors.layout import LayoutAuditor
    from ingestaudit.corpus import discover
    from ingestaudit.parsers.base import NoOutput, ParserError, UnsupportedFormat
    from ingestaudit.parsers.registry import load_parser
    from ingestaudit.truth import load_truth

    from ingestaudit.model import Block, ParsedDocument
    from ingestaudit.truth import Heading, Truth

    found = discover(corpus, link_roots=link_roots)
    if found.problems:
        raise SystemExit(f"{corpus}: {found.problems[0]}")
    auditor = LayoutAuditor()
    warm = "\n".join(f"warm-up paragraph number {k} of the bench" for k in range(3))
    auditor.audit(ItemArtefacts.of(Truth(text=warm, headings=(Heading(level=1, text="Warm up"),)),  # imports out
                                   ParsedDocument(text=warm, blocks=(Block("Warm up", kind="heading", level=1),))))
    out = []
    for name, parser_name, opts in parsers:
        parser = load_parser(parser_name, opts)
        rows: dict[str, list] = {}
        per_doc: dict[str, dict] = {}
        parse_s = audit_s = 0.0
        for doc in found.documents:
            truth = load_truth(doc, found.root)
            t0 = time.perf_counter()
            try:
                parsed = parser.parse(doc)
            except UnsupportedFormat:
                state = "skipped"
            except NoOutput:
                state = "no_prediction"
            except ParserError:
                state = "error"
            else:
                state = None
            parse_s += time.perf_counter() - t0
            if state is not None:
                for spec in auditor.metrics:
                    rows.setdefault(spec.name, []).append((state, None, None, None))
                per_doc[doc.doc_id] = {"parse": state}
                continue
            t0 = time.perf_counter()
            scores = auditor.audit(ItemArtefacts.of(truth, parsed))
            audit_s += time.perf_counter() - t0
            for s in scores:
                rows.setdefault(s.metric, []).append((s.state.value, s.value, s.numerator, s.denominator))
            per_doc[doc.doc_id] = {s.metric: (round(s.value, 4) if s.value is not None else s.state.value)
                                   for s in scores if s.metric in MAIN}
        metrics = {}
        for metric, items in sorted(rows.items()):
            ok = [(v, n, d) for st, v, n, d in items if st == "ok"]
            states: dict[str, int] = {}
            for st, *_ in items:
                if st != "ok":
                    states[st] = states.get(st, 0) + 1
            den = sum(d for _, _, d in ok if d is not None)
            metrics[metric] = {
                "micro": round(sum(n for _, n, _ in ok if n is not None) / den, 4) if den else None,
                "macro": round(sum(v for v, _, _ in ok) / len(ok), 4) if ok else None,
                "n": len(ok), "other_states": states}
        out.append({"corpus": label, "parser": name, "parser_options": opts, "metrics": metrics,
                    "documents": per_doc, "parse_s": round(parse_s, 3), "layout_audit_s": round(audit_s, 4),
                    "audit_over_parse": round(audit_s / parse_s, 4) if parse_s else None})
        print(f"{label:8s} {name:13s} " + " ".join(
            f"{m.split('.')[1]}={metrics[m]['micro']}" for m in MAIN if m in metrics), file=sys.stderr)
    return out


def nested_loop_examples(pos: list[float], limit: int) -> list[tuple[int, int]]:
    """Baseline: the first ``limit`` discordant pairs by a scan of all pairs (the code before the segment tree)."""
    out: list[tuple[int, int]] = []
    for i in range(len(pos)):
        for j in range(i + 1, len(pos)):
            if pos[i] > pos[j]:
                out.append((i, j))
                if len(out) >= limit:
                    return out
    return out


def bench_examples(sizes: tuple[int, ...] = (1_000, 2_000, 4_000), big: int = 200_000) -> list[dict]:
    """Time the example-pair listing with one swapped pair in the middle (the nested loop's worst case)."""
    from ingestaudit.metrics.layout import discordant_pairs

    out = []
    for n in (*sizes, big):
        pos = [float(k) for k in range(n)]
        pos[n // 2], pos[n // 2 + 1] = pos[n // 2 + 1], pos[n // 2]
        t0 = time.perf_counter()
        fast = discordant_pairs(pos, 20)
        fast_s = time.perf_counter() - t0
        row = {"n": n, "segment_tree_s": round(fast_s, 4)}
        if n != big:
            t0 = time.perf_counter()
            slow = nested_loop_examples(pos, 20)
            row["nested_loop_s"] = round(time.perf_counter() - t0, 4)
            row["nested_over_tree"] = round(row["nested_loop_s"] / fast_s, 1) if fast_s else None
            assert slow == fast
        out.append(row)
        print(f"examples n={n}: {row}", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "layout_results.json")
    ap.add_argument("--skip-tesseract", action="store_true", help="leave out the slow OCR parser")
    args = ap.parse_args(argv)
    parsers = [p for p in PARSERS if not (args.skip_tesseract and p[0] == "tesseract")]
    results = audit_corpus(DEMO, "demo", parsers)
    if TAGGED.is_dir():
        from ingestaudit.importers import import_corpus

        with tempfile.TemporaryDirectory() as tmp:
            dest = Path(tmp) / "tagged"
            import_corpus("pdfplumber-tagged", TAGGED, dest)
            results += audit_corpus(dest, "tagged", [p for p in parsers if p[0] != "tesseract"], (TAGGED,))
    from ingestaudit.auditors.layout import LayoutAuditor

    payload = {"benchmark": "layout", "auditor_options": LayoutAuditor().options(), "results": results,
               "discordant_examples": bench_examples()}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
