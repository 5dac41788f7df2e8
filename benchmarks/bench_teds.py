"""TEDS speed and agreement: ingestaudit.metrics.teds against a baseline built as the PubTabNet reference is.

Baseline (written here, independent of ingestaudit): the structure of ibm-aur-nlp/PubTabNet ``src/metric.py``:
lxml HTML parsing, a tree of table/section/row/cell nodes, ``apted.APTED`` (pure Python) with a rename cost that
runs a pure-Python Levenshtein on the cells' token lists on every call (the reference uses the pure-Python
``distance`` package, not installed here), divided by the larger element count.

Cases: the 20 PubTabNet sample tables (TEDS and TEDS-S; ../shared/data/pubtabnet) and synthetic grids of 10x5,
20x10 and 40x10 cells (first row in ``thead``, the rest in ``tbody``) where every predicted cell differs from the
reference cell by one character.

Run from the project root:

    python benchmarks/bench_teds.py                 # everything, baseline once per case (~1-2 min)
    python benchmarks/bench_teds.py --quick         # skips the 40x10 baseline
    python benchmarks/bench_teds.py --workers 1 2   # adds process-pool scaling of ingestaudit's TEDS
    python benchmarks/bench_teds.py --json out.json

Prints a Markdown table (CPU seconds per case, tables per CPU second, speed-up, largest |difference| of the
values). Single-process times are ``time.process_time`` (CPU time of this process, so other load on a shared
machine does not distort the ratio); the worker-scaling run is wall-clock time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from apted import APTED, Config  # noqa: E402
from lxml import html as lxml_html  # noqa: E402

from ingestaudit.metrics.teds import compare_tables  # noqa: E402

SHARED = Path(os.environ.get("INGESTAUDIT_SHARED_DATA", ROOT.parent / "shared" / "data"))


# ----------------------------------------------------------------------------------------------- baseline


def baseline_levenshtein(a: list[str], b: list[str]) -> int:
    """Plain dynamic-programming Levenshtein distance of two token lists (unit costs)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


class BaselineNode:
    """Tree node: tag, colspan, rowspan (td only), cell tokens (td only), children."""

    def __init__(self, tag, colspan=None, rowspan=None, content=None):
        self.tag, self.colspan, self.rowspan, self.content = tag, colspan, rowspan, content
        self.children = []


class BaselineConfig(Config):
    """apted cost model of the reference: rename 1 on tag/span change, normalised Levenshtein between td."""

    def children(self, node):
        return node.children

    def rename(self, a, b):
        if a.tag != b.tag or a.colspan != b.colspan or a.rowspan != b.rowspan:
            return 1.0
        if a.tag == "td" and (a.content or b.content):
            return baseline_levenshtein(a.content, b.content) / max(len(a.content), len(b.content))
        return 0.0


def _baseline_tokens(el, out):
    out.append(f"<{el.tag}>")
    if el.text is not None:
        out.extend(el.text)
    for child in el.getchildren():
        _baseline_tokens(child, out)
    if el.tag != "unk":
        out.append(f"</{el.tag}>")
    if el.tag != "td" and el.tail is not None:
        out.extend(el.tail)


def _baseline_tree(el, structure_only):
    if el.tag == "td":
        tokens = []
        if not structure_only:
            _baseline_tokens(el, tokens)
            tokens = tokens[1:-1]
        return BaselineNode("td", int(el.attrib.get("colspan", "1")), int(el.attrib.get("rowspan", "1")), tokens)
    node = BaselineNode(el.tag)
    node.children = [_baseline_tree(child, structure_only) for child in el.getchildren()]
    return node


def baseline_teds(true_html: str, pred_html: str, structure_only: bool = False) -> float:
    """TEDS as the reference computes it (returns 0.0 for empty input or a missing body/table, as it does)."""
    if not pred_html or not true_html:
        return 0.0
    parser = lxml_html.HTMLParser(remove_comments=True)
    pred = lxml_html.fromstring(pred_html, parser=parser)
    true = lxml_html.fromstring(true_html, parser=parser)
    pred_tables, true_tables = pred.xpath("body/table"), true.xpath("body/table")
    if not pred_tables or not true_tables:
        return 0.0
    pred, true = pred_tables[0], true_tables[0]
    n_nodes = max(len(pred.xpath(".//*")), len(true.xpath(".//*")))
    distance = APTED(
        _baseline_tree(pred, structure_only), _baseline_tree(true, structure_only), BaselineConfig()
    ).compute_edit_distance()
    return 1.0 - float(distance) / n_nodes


# ----------------------------------------------------------------------------------------------- cases


def grid_html(rows: int, cols: int, altered: bool) -> str:
    """A rows x cols table, row 0 in thead; ``altered`` changes one character of every cell."""
    body = []
    for i in range(rows):
        cells = "".join(f"<td>item {i}.{j} {'X' if altered else 'Y'}</td>" for j in range(cols))
        body.append(f"<tr>{cells}</tr>")
    return f"<html><body><table><thead>{body[0]}</thead><tbody>{''.join(body[1:])}</tbody></table></body></html>"


def pubtabnet_pairs() -> list[tuple[str, str]]:
    """(true, pred) HTML of the 20 PubTabNet samples, in the expected-values file's order."""
    base = SHARED / "pubtabnet"
    gt = json.loads((base / "src" / "sample_gt.json").read_text(encoding="utf-8"))
    pred = json.loads((base / "src" / "sample_pred.json").read_text(encoding="utf-8"))
    return [(gt[k]["html"], pred.get(k, "")) for k in sorted(gt)]


def ours(true_html: str, pred_html: str, structure_only: bool = False) -> float:
    """ingestaudit's value (no budget, so nothing is skipped)."""
    from ingestaudit.metrics.teds import TedsBudget

    result = compare_tables(
        true_html, pred_html, structure_only=structure_only, budget=TedsBudget(max_nodes=10**6, time_s=None)
    )
    assert result.value is not None, result
    return result.value


def _time(fn, pairs, structure_only, repeat):
    """Best CPU seconds of this process (``time.process_time``: robust to other load on a shared machine)."""
    best, values = float("inf"), []
    for _ in range(repeat):
        start = time.process_time()
        values = [fn(t, p, structure_only) for t, p in pairs]
        best = min(best, time.process_time() - start)
    return best, values


def _ours_job(args):
    true_html, pred_html, structure_only = args
    return ours(true_html, pred_html, structure_only)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="skip the baseline on the 40x10 grid")
    ap.add_argument("--repeat", type=int, default=3, help="repeats for ingestaudit (best time kept)")
    ap.add_argument("--workers", type=int, nargs="*", default=[], help="process-pool sizes for a scaling run")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args()

    cases: list[tuple[str, list[tuple[str, str]], bool]] = []
    if (SHARED / "pubtabnet").is_dir():
        pairs = pubtabnet_pairs()
        cases += [("PubTabNet 20 samples, TEDS", pairs, False), ("PubTabNet 20 samples, TEDS-S", pairs, True)]
    else:
        print(f"(PubTabNet samples not found under {SHARED}; grids only)", file=sys.stderr)
    for r, c in [(10, 5), (20, 10), (40, 10)]:
        pair = (grid_html(r, c, False), grid_html(r, c, True))
        cases.append((f"grid {r}x{c}, one char off per cell, TEDS", [pair], False))

    rows = []
    for name, pairs, structure_only in cases:
        t_ours, v_ours = _time(ours, pairs, structure_only, args.repeat)
        if args.quick and "40x10" in name:
            t_base, v_base = None, None
        else:
            t_base, v_base = _time(baseline_teds, pairs, structure_only, 1)
        diff = max(abs(a - b) for a, b in zip(v_ours, v_base)) if v_base else None
        row = {
            "case": name,
            "tables": len(pairs),
            "baseline_s": t_base,
            "ours_s": t_ours,
            "baseline_tables_per_s": len(pairs) / t_base if t_base else None,
            "ours_tables_per_s": len(pairs) / t_ours,
            "speedup": t_base / t_ours if t_base else None,
            "max_abs_diff": diff,
            "mean_value": sum(v_ours) / len(v_ours),
        }
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)

    scaling = []
    if args.workers:
        jobs = [(t, p, s) for _, pairs, s in cases for t, p in pairs] * 5
        for n in args.workers:
            with ProcessPoolExecutor(max_workers=n) as pool:
                list(pool.map(_ours_job, jobs[:4]))  # warm the workers (imports)
                start = time.perf_counter()
                list(pool.map(_ours_job, jobs, chunksize=4))
                elapsed = time.perf_counter() - start
            scaling.append({"workers": n, "tables": len(jobs), "seconds": elapsed, "tables_per_s": len(jobs) / elapsed})

    env = f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs"
    print(f"\n{env}\n")
    print(
        "| case | tables | baseline CPU s | ingestaudit CPU s | baseline tables/s | ingestaudit tables/s "
        "| speed-up | max abs diff |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        fmt = lambda v, spec: "n/a" if v is None else format(v, spec)  # noqa: E731
        print(
            f"| {r['case']} | {r['tables']} | {fmt(r['baseline_s'], '.3f')} | {r['ours_s']:.4f} | "
            f"{fmt(r['baseline_tables_per_s'], '.2f')} | {r['ours_tables_per_s']:.1f} | "
            f"{fmt(r['speedup'], '.0f') + ('x' if r['speedup'] else '')} | "
            f"{fmt(r['max_abs_diff'], '.1e')} |"
        )
    if scaling:
        print("\n| workers | tables | wall seconds | tables/s |\n|---:|---:|---:|---:|")
        for s in scaling:
            print(f"| {s['workers']} | {s['tables']} | {s['seconds']:.2f} | {s['tables_per_s']:.1f} |")
    if args.json:
        args.json.write_text(json.dumps({"environment": env, "cases": rows, "scaling": scaling}, indent=2))


if __name__ == "__main__":
    main()
