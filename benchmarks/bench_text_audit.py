"""Cost of the text auditors (extraction + normalization) against the cost of parsing, and of the check engine
against a plain dynamic programme.

Part 1 (audit overhead): the one-page PDFs in ../shared/data/olmocr-bench-sample/pdfs (14 in the snapshot).
  - baseline: ``PyMuPDFParser().parse(document)`` (default settings), per document;
  - measured: ``ExtractionAuditor().audit`` with the document's present/absent/order checks from ``dataset.jsonl``
    and, as a stand-in reference text, olmOCR's own output for the page (``olmocr_pipeline/*.md``; the sample has
    no hand reference, but the cost depends only on the lengths), plus ``NormalizationAuditor().audit``.
  Reported: total seconds over the corpus (best of --repeat runs) and the ratio audit / parse.

Part 2 (check engine): approximate substring search of check strings (max_diffs 0, 2, 5) in a long text (the
sample's olmOCR outputs concatenated, repeated to ~50,000 characters):
  - baseline: textbook Sellers dynamic programme in pure Python (O(|q| |text|)), written here;
  - measured: ``ingestaudit.metrics.checks.fuzzy_ends`` (exact pigeonhole filter + Myers bit-parallel search).
  Both must return the same matches (asserted).

Run from the project root:

    python benchmarks/bench_text_audit.py [--repeat 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ingestaudit.auditors.base import ItemArtefacts  # noqa: E402
from ingestaudit.auditors.extraction import ExtractionAuditor  # noqa: E402
from ingestaudit.auditors.normalization import NormalizationAuditor  # noqa: E402
from ingestaudit.document import Document  # noqa: E402
from ingestaudit.metrics.checks import fuzzy_ends  # noqa: E402
from ingestaudit.parsers.pymupdf_parser import PyMuPDFParser  # noqa: E402
from ingestaudit.truth import OrderCheck, TextCheck, Truth  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "olmocr-bench-sample"


def load_checks() -> dict[str, list]:
    out: dict[str, list] = {}
    for line in (DATA / "dataset.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        k = row.get("max_diffs", 0)
        if row["type"] in ("present", "absent"):
            check = TextCheck(type=row["type"], text=row["text"], max_diffs=k)
        elif row["type"] == "order":
            check = OrderCheck(type="order", before=row["before"], after=row["after"], max_diffs=k)
        else:
            continue  # table and math checks are not text checks
        out.setdefault(row["pdf"], []).append(check)
    return out


def part1(repeat: int) -> dict:
    checks = load_checks()
    pdfs = sorted(DATA.glob("pdfs/*.pdf"))
    parser, ext, norm = PyMuPDFParser(), ExtractionAuditor(), NormalizationAuditor()
    docs = [Document(doc_id=f"olmocr/{p.stem}", doc_class="olmocr", path=p) for p in pdfs]
    parsed = [parser.parse(d) for d in docs]
    truths = []
    for p in pdfs:
        ref = DATA / "olmocr_pipeline" / f"{p.stem}_pg1_repeat1.md"
        truths.append(Truth(text=ref.read_text(encoding="utf-8") if ref.exists() else None,
                            checks=tuple(checks.get(p.name, ()))))

    def parse_all() -> None:
        for d in docs:
            parser.parse(d)

    def audit_all() -> None:
        for t, pd in zip(truths, parsed):
            ext.audit(ItemArtefacts.of(t, pd))
            norm.audit(ItemArtefacts.of(t, pd))

    def best(fn) -> float:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)

    audit_all()  # warm imports (ftfy, confusables tables)
    t_parse, t_audit = best(parse_all), best(audit_all)
    return {"documents": len(docs), "checks": sum(len(t.checks) for t in truths),
            "chars_parsed": sum(len(p.text) for p in parsed),
            "parse_s": t_parse, "audit_s": t_audit, "audit_over_parse": t_audit / t_parse}


def sellers(pattern: str, text: str, k: int) -> list[tuple[int, int]]:
    m = len(pattern)
    prev = list(range(m + 1))
    hits = []
    for j, c in enumerate(text, 1):
        cur = [0] * (m + 1)
        for i in range(1, m + 1):
            cur[i] = min(prev[i - 1] + (pattern[i - 1] != c), prev[i] + 1, cur[i - 1] + 1)
        if cur[m] <= k:
            hits.append((j, cur[m]))
        prev = cur
    return hits


def part2() -> list[dict]:
    base = "\n".join(p.read_text(encoding="utf-8") for p in sorted((DATA / "olmocr_pipeline").glob("*.md")))
    text = (base * (50_000 // max(1, len(base)) + 1))[:50_000]
    query = "The term corporate social responsibility is in vogue at the moment"
    rows = []
    for k in (0, 2, 5):
        t0 = time.perf_counter()
        expected = sellers(query, text, k)
        t_base = time.perf_counter() - t0
        t0 = time.perf_counter()
        got = fuzzy_ends(query, text, k)
        t_ours = time.perf_counter() - t0
        assert got == expected, (k, got[:5], expected[:5])
        rows.append({"max_diffs": k, "text_chars": len(text), "query_chars": len(query), "matches": len(got),
                     "baseline_s": t_base, "ours_s": t_ours, "speedup": t_base / t_ours})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not DATA.is_dir():
        sys.exit(f"needs {DATA}")
    p1, p2 = part1(args.repeat), part2()
    print(f"Python {platform.python_version()} on {platform.machine()}")
    print("\n| documents | checks | chars parsed | parse s (PyMuPDF, baseline) | audit s | audit / parse |")
    print("|---|---|---|---|---|---|")
    print(f"| {p1['documents']} | {p1['checks']} | {p1['chars_parsed']} | {p1['parse_s']:.4f} | "
          f"{p1['audit_s']:.4f} | {p1['audit_over_parse']:.2f} |")
    print("\n| max_diffs | text chars | matches | Sellers DP s (baseline) | fuzzy_ends s | speed-up |")
    print("|---|---|---|---|---|---|")
    for r in p2:
        print(f"| {r['max_diffs']} | {r['text_chars']} | {r['matches']} | {r['baseline_s']:.3f} | "
              f"{r['ours_s']:.5f} | {r['speedup']:.0f}x |")
    if args.json:
        args.json.write_text(json.dumps({"audit": p1, "checks": p2}, indent=2))


if __name__ == "__main__":
    main()
