"""Chroma chunking evaluation (issue 9 item 7, issue 10 item 9, issue 11's Chroma acceptance): every chunker at two
sizes on `../shared/data/chroma-chunking-eval`, stages chunking, retrieval and index, through the CLI.

    python benchmarks/bench_chroma.py [--json benchmarks/results/bench_chroma.json] [--cache-dir DIR] [--limit N]

What it does:

1. ``ingestaudit import chroma-chunking-eval DATA WORK/corpus`` (a temporary folder; the data set is only read). The
   corpus's documents are links into DATA, so ``$INGESTAUDIT_LINK_ROOTS`` is set to DATA for the runs.
2. One ``ingestaudit run WORK/corpus --config WORK/<run>.toml --stage chunking --stage retrieval --stage index
   --workers W --out WORK/out-<run>`` per run (see `RUNS`): each run configures two pipelines (one chunker at two
   sizes). The main runs use the ``reference`` parser (the corpus text itself: component-level numbers, no parsing
   loss). The reference parser emits no headings, so the structural chunker is also run on the ``unstructured``
   parser's output (its Title blocks become headings), with the recursive chunker on the same parser as control.
   A last run (``ann``, stages retrieval and index only) puts the recursive-800 chunks into deliberately weak indexes
   (HNSW with M 4 / efConstruction 8, IVF with nlist 32 / nprobe 1) so that the sweep and ``missed_by_ann`` show.
3. Reads every run's ``report.json`` and ``timings.json`` and writes one JSON file: per pipeline, the summary values
   (``chunking.evidence_held``, ``retrieval.recall@5`` / ``span_recall@5`` / ``hit@5``, MRR = ``retrieval.rr`` macro,
   ``retrieval.outcome@5`` and the waterfall at the largest k), chunk counts and sizes (from the
   ``chunking.attribution`` details), ``chunking.over_max_tokens`` / ``truncated_tokens``, and the index audit
   (``index.recall@10`` at the configured efSearch, the efSearch sweep with queries/s, the operating point), plus the
   wall time of each run.
4. `coverage_profile`: per pipeline, the best single-chunk coverage of every evidence span through
   `ingestaudit.chain.run_chain` (cached vectors, no new embedding), i.e. ``evidence_held`` at coverage 0.5, 0.9, 0.99
   and 1.0 (at the default 0.5 a span cut once is always held).

Each document x pipeline gets a time budget of `DOC_TIMEOUT_S` (the default 300 s is too short for pubmed on a
cold cache under load). The embedding cache goes to WORK/cache unless ``--cache-dir`` is given, so by default the
first run pays for every embedding (chunks, the chunking auditor's sentences, the questions) and the later runs reuse
the sentence and question vectors: run times are those of a cold cache for the first run only.
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

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "chroma-chunking-eval"

RUNS: list[tuple[str, str, list[tuple[str, dict]]]] = [
    # (run name, parser, [(pipeline name, {stage: table})]); stages chunking, retrieval, index unless said otherwise
    ("recursive", "reference", [("recursive-800c", {"chunker": {"use": "recursive", "size": 800}}),
                                ("recursive-1600c", {"chunker": {"use": "recursive", "size": 1600}})]),
    ("fixed", "reference", [("fixed-200t", {"chunker": {"use": "fixed", "size": 200, "unit": "tokens"}}),
                            ("fixed-400t", {"chunker": {"use": "fixed", "size": 400, "unit": "tokens"}})]),
    ("semantic", "reference", [("semantic-default", {"chunker": {"use": "semantic"}}),
                               ("semantic-cap800c", {"chunker": {"use": "semantic", "size": 800}})]),
    ("structural", "reference", [("structural-800c", {"chunker": {"use": "structural", "size": 800}}),
                                 ("structural-1600c", {"chunker": {"use": "structural", "size": 1600}})]),
    ("unstructured", "unstructured", [
        ("unstructured+structural-800c", {"chunker": {"use": "structural", "size": 800}}),
        ("unstructured+structural-1600c", {"chunker": {"use": "structural", "size": 1600}}),
        ("unstructured+recursive-800c", {"chunker": {"use": "recursive", "size": 800}})]),
    # weaker indexes on the recursive-800c chunks (cached vectors): the sweep and missed_by_ann with something to show
    ("ann", "reference", [
        ("recursive-800c+hnsw-m4", {"chunker": {"use": "recursive", "size": 800},
                                    "index": {"use": "hnsw", "m": 4, "ef_construction": 8, "ef_search": 16}}),
        ("recursive-800c+ivf32", {"chunker": {"use": "recursive", "size": 800},
                                  "index": {"use": "ivf", "nlist": 32, "nprobe": 1}})]),
]
RUN_STAGES = {"ann": ("retrieval", "index")}
DEFAULT_STAGES = ("chunking", "retrieval", "index")
DOC_TIMEOUT_S = 3600
"""Per document x pipeline. The default 300 s is too short for pubmed (500,000 characters: about 5,000 sentences and
1,000 chunks to embed on a cold cache) on a loaded 2-core machine: a timed-out document becomes error rows and the
numbers cover the other corpora only."""

HEADLINE = ("chunking.evidence_held", "retrieval.recall@5", "retrieval.span_recall@5", "retrieval.hit@5",
            "retrieval.rr", "retrieval.recall@10", "retrieval.span_recall@10", "chunking.over_max_tokens",
            "chunking.truncated_tokens", "chunking.coherence_gain", "chunking.attribution", "index.recall@10",
            "index.recall_tie_aware@10", "index.one_recall@1", "index.ip_dominated", "index.duplicate_vectors")


def toml_value(v) -> str:
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    return str(v)


def write_config(path: Path, parser: str, pipelines: list[tuple[str, dict]], cache_dir: Path,
                 stages: tuple[str, ...]) -> None:
    lines = ["[run]", f"stages = {json.dumps(list(stages))}", f"cache_dir = {json.dumps(str(cache_dir))}",
             f"doc_timeout_s = {DOC_TIMEOUT_S}", ""]
    for name, tables in pipelines:
        lines += [f"[pipelines.{json.dumps(name)}]", f"parser = {json.dumps(parser)}"]
        lines += [f"{stage} = {toml_value(table)}" for stage, table in tables.items()]
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")


def loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def summary_values(report: dict, pipeline: str) -> dict:
    """``{metric: {label: {class: row}}}`` of the summary rows of one pipeline (value fields only)."""
    out: dict = {}
    for s in report["summary"]:
        if s["pipeline"] != pipeline:
            continue
        keep = {k: s.get(k) for k in ("micro", "macro", "ci_low", "ci_high", "ci_method", "n_docs", "numerator",
                                      "denominator")}
        keep["states"] = {k: v for k, v in (s.get("states") or {}).items() if v}
        out.setdefault(s["metric"], {}).setdefault(s["label"], {})[s["doc_class"]] = keep
    return out


def chunk_stats(report: dict, pipeline: str) -> dict:
    """Per document: chunk count and size distribution (chars, word pieces) from the attribution detail."""
    docs = {}
    for m in report["measurements"]:
        if m["pipeline"] == pipeline and m["metric"] == "chunking.attribution" and m["item_kind"] == "document":
            d = m.get("detail") or {}
            docs[m["item"]] = {"chunks": d.get("chunks"), "sizes": d.get("sizes"), "state": m["state"]}
    total = sum(v["chunks"] or 0 for v in docs.values())
    return {"total_chunks": total, "per_document": docs}


def detail(report: dict, pipeline: str, stage: str, name: str):
    for d in report["details"]:
        if d["pipeline"] == pipeline and d["stage"] == stage and d["name"] == name:
            return d["data"]
    return None


def waterfall_shares(wf: dict | None) -> dict | None:
    if not wf:
        return None
    counts = {o: 0 for o in wf["outcomes"]}
    for cls in wf["by_class"].values():
        for o, n in cls.items():
            counts[o] += n
    n = sum(counts.values())
    return {"k": wf["k"], "items": n, "counts": counts,
            "shares": {o: (c / n if n else None) for o, c in counts.items()},
            "by_class": wf["by_class"]}


def index_sweep(report: dict, timings: dict, pipeline: str) -> dict:
    sweep = detail(report, pipeline, "index", "sweep") or {}
    op = detail(report, pipeline, "index", "operating_point")
    qps = {c["label"]: c for c in ((timings.get(pipeline) or {}).get("index") or {}).get("cells", [])}
    cells = []
    for c in sweep.get("cells", []):
        u = c.get("unfiltered") or {}
        t = qps.get(c["label"], {})
        cells.append({"label": c["label"], "value": c.get("value"), "queries": u.get("queries"),
                      "recall@10": (u.get("recall@10") or {}).get("value"),
                      "recall_tie_aware@10": (u.get("recall_tie_aware@10") or {}).get("value"),
                      "one_recall@1": (u.get("one_recall@1") or {}).get("value"),
                      "qps": t.get("qps"), "p50_ms": t.get("p50_ms"), "p95_ms": t.get("p95_ms")})
    settings = (detail(report, pipeline, "index", "settings") or {}).get("index")
    return {"settings": settings, "memory_bytes": sweep.get("memory_bytes"), "cells": cells,
            "operating_point": op,
            "build_s": ((timings.get(pipeline) or {}).get("index") or {}).get("build_seconds")}


def run_one(name: str, parser: str, pipelines: list[tuple[str, dict]], corpus: Path, work: Path, cache: Path,
            workers: int, env: dict) -> dict:
    cfg = work / f"{name}.toml"
    out = work / f"out-{name}"
    stages = RUN_STAGES.get(name, DEFAULT_STAGES)
    write_config(cfg, parser, pipelines, cache, stages)
    cmd = ["ingestaudit", "run", str(corpus), "--config", str(cfg), *[a for s in stages for a in ("--stage", s)],
           "--workers", str(workers), "--out", str(out)]
    load0 = loadavg()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    (work / f"{name}.stdout.txt").write_text(proc.stdout, encoding="utf-8")
    (work / f"{name}.stderr.txt").write_text(proc.stderr, encoding="utf-8")
    print(f"[{name}] exit {proc.returncode} in {wall:.1f} s (load {load0} -> {loadavg()})", flush=True)
    if proc.returncode != 0 or not (out / "timings.json").is_file():
        sys.stderr.write(proc.stderr[-3000:])
        if not (out / "report.json").is_file():
            raise SystemExit(f"run {name} failed with exit code {proc.returncode} (no report.json)")
        print(f"[{name}] warning: exit code {proc.returncode}; using the report.json it wrote", flush=True)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    tpath = out / "timings.json"
    timings = json.loads(tpath.read_text(encoding="utf-8")) if tpath.is_file() else {}
    res = {"run": name, "parser": parser, "wall_s": round(wall, 1), "exit_code": proc.returncode,
           "loadavg_start": load0, "loadavg_end": loadavg(), "command": " ".join(cmd),
           "failures_total": len(report.get("failures", [])),
           "failures": [f for f in report.get("failures", [])][:20], "pipelines": {}}
    if res["failures_total"]:
        print(f"[{name}] WARNING: {res['failures_total']} failures, e.g. {res['failures'][0]}", flush=True)
    for pname, tables in pipelines:
        summ = summary_values(report, pname)
        info = next((p for p in report["pipelines"] if p["name"] == pname), {})
        res["pipelines"][pname] = {
            "chunker": tables["chunker"], "index_config": tables.get("index", "hnsw (defaults)"),
            "stages": list(stages),
            "chunker_settings": ((info.get("stages") or {}).get("chunker") or {}).get("settings"),
            "summary": {m: summ[m] for m in HEADLINE if m in summ},
            "outcome@5": {lab: v.get("__all__") for lab, v in (summ.get("retrieval.outcome@5") or {}).items()},
            "waterfall": waterfall_shares(detail(report, pname, "retrieval", "waterfall")),
            "chunks": chunk_stats(report, pname),
            "index": index_sweep(report, timings, pname),
            "retrieval_timings": (timings.get(pname) or {}).get("retrieval"),
        }
    return res


def coverage_profile(corpus: Path, cache: Path, runs: list) -> dict:
    """Per pipeline, the best single-chunk coverage of every evidence span, from `ingestaudit.chain.run_chain` (the
    code the runner's workers run; same parser, chunker and cached embedder, so no new embedding is computed): the
    share of spans held at coverage thresholds 0.5 (the default ``min_span_coverage``), 0.9 and 1.0 (the whole span in
    one chunk). At 0.5 a span cut once by non-overlapping chunks is always held (one side has half of it), so the
    stricter thresholds show what the chunkers split."""
    from ingestaudit.chain import EvidenceRef, run_chain
    from ingestaudit.corpus import discover
    from ingestaudit.parsers.registry import load_parser
    from ingestaudit.questions import load_questions
    from ingestaudit.stages.chunkers.registry import load_chunker
    from ingestaudit.stages.cleaners.registry import load_cleaner
    from ingestaudit.stages.embedders.registry import load_cached_embedder
    from ingestaudit.truth import load_truth

    found = discover(corpus)
    truths = {d.doc_id: load_truth(d, found.root) for d in found.documents}
    qs = load_questions(found.questions, found.questions.name, truths)
    evidence: dict = {}
    for q in qs.questions:
        for i, ev in enumerate(q.relevant):
            evidence.setdefault(ev.doc, []).append(EvidenceRef((q.id, i), ev.kind, ev.start, ev.end, ev.section,
                                                               ev.page))
    embedder = load_cached_embedder("minilm", {}, str(cache))
    cleaner = load_cleaner("none", {})
    out: dict = {}
    parsed_by: dict = {}
    for run in runs:
        if run["run"] in RUN_STAGES:  # same chunks as another run
            continue
        parser = run["parser"]
        if parser not in parsed_by:
            p = load_parser(parser, {})
            parsed_by[parser] = {d.doc_id: p.parse(d) for d in found.documents}
        for pname, info in run["pipelines"].items():
            opts = {k: v for k, v in info["chunker"].items() if k != "use"}
            chunker = load_chunker(info["chunker"]["use"], opts)
            best = []
            for d in found.documents:
                t = truths[d.doc_id]
                chain = run_chain(parsed_by[parser][d.doc_id], doc_id=d.doc_id, doc_class=d.doc_class,
                                  reference=t.text, metadata=t.metadata, cleaner=cleaner, chunker=chunker,
                                  embedder=embedder, evidence=tuple(evidence.get(d.doc_id, ())),
                                  min_span_coverage=0.5)
                best += [(tr.best_chunk_coverage, tr.cleaned) for tr in chain.doc.evidence.values()]
            n = len(best)
            out[pname] = {"spans": n,
                          "survived_cleaning_0.5": sum(c >= 0.5 for _, c in best) / n,
                          **{f"held_at_{th}": sum(b >= th - 1e-12 for b, _ in best) / n
                             for th in (0.5, 0.9, 0.99, 1.0)},
                          "mean_best_coverage": sum(b for b, _ in best) / n}
            print(f"[coverage] {pname}: " + ", ".join(f"{k} {v:.3f}" for k, v in out[pname].items()
                                                      if k.startswith("held")), flush=True)
    return out


def val(p: dict, metric: str, field: str = "micro", cls: str = "__all__"):
    try:
        return p["summary"][metric][""][cls][field]
    except (KeyError, TypeError):
        return None


def fmt(x, nd=3):
    return "n/a" if x is None else f"{x:.{nd}f}"


def markdown(results: dict) -> str:
    lines = ["| pipeline | chunks | median chars (pubmed) | over 256 wp | evidence_held | held at 0.9 / 1.0 | "
             "recall@5 | "
             "span_recall@5 | hit@5 | MRR | missed_by_ranking / missed_by_ann / retrieved @10 | "
             "index recall@10 sweep (first -> last) | op. point |",
             "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---|---|"]
    cov = results.get("span_coverage") or {}
    for run in results["runs"]:
        for name, p in run["pipelines"].items():
            wf = p["waterfall"] or {"shares": {}}
            sh = wf["shares"]
            cells = p["index"]["cells"]
            sweep = (f"{cells[0]['label']} {fmt(cells[0]['recall@10'])} -> {cells[-1]['label']} "
                     f"{fmt(cells[-1]['recall@10'])}") if cells else "n/a"
            op = p["index"]["operating_point"] or {}
            med = ((p["chunks"]["per_document"].get("pubmed/pubmed") or {}).get("sizes") or {}).get("chars", {})
            c = cov.get(name, {})
            lines.append(
                f"| {name} | {p['chunks']['total_chunks']} | {med.get('median', 'n/a')} | "
                f"{fmt(val(p, 'chunking.over_max_tokens'), 2)} | {fmt(val(p, 'chunking.evidence_held'))} | "
                f"{fmt(c.get('held_at_0.9'))} / {fmt(c.get('held_at_1.0'))} | "
                f"{fmt(val(p, 'retrieval.recall@5', 'macro'))} | {fmt(val(p, 'retrieval.span_recall@5', 'macro'))} | "
                f"{fmt(val(p, 'retrieval.hit@5'))} | {fmt(val(p, 'retrieval.rr', 'macro'))} | "
                f"{fmt(sh.get('missed_by_ranking'))} / {fmt(sh.get('missed_by_ann'))} / {fmt(sh.get('retrieved'))} | "
                f"{sweep} | {op.get('label') or 'none reaches ' + str(op.get('target', ''))} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "bench_chroma.json")
    ap.add_argument("--cache-dir", type=Path, default=None,
                    help="embedding cache (default: a fresh one in the temporary folder, i.e. a cold first run)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None, help="import only N questions (default: all 319)")
    ap.add_argument("--runs", nargs="*", default=[r[0] for r in RUNS], help="subset of: " +
                    ", ".join(r[0] for r in RUNS))
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    args = ap.parse_args()

    data = args.data.resolve()
    work = Path(tempfile.mkdtemp(prefix="bench_chroma_"))
    cache = (args.cache_dir or work / "cache").resolve()
    env = dict(os.environ)
    env["INGESTAUDIT_LINK_ROOTS"] = os.pathsep.join(filter(None, [str(data), env.get("INGESTAUDIT_LINK_ROOTS")]))
    t_all = time.perf_counter()
    try:
        corpus = work / "corpus"
        cmd = ["ingestaudit", "import", "chroma-chunking-eval", str(data), str(corpus)]
        if args.limit:
            cmd += ["--limit", str(args.limit)]
        subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)
        imported = json.loads((corpus / "import.json").read_text(encoding="utf-8"))
        print(f"imported into {corpus}; embedding cache {cache}", flush=True)
        runs = [run_one(n, parser, pipes, corpus, work, cache, args.workers, env)
                for n, parser, pipes in RUNS if n in args.runs]
        os.environ["INGESTAUDIT_LINK_ROOTS"] = env["INGESTAUDIT_LINK_ROOTS"]
        t_cov = time.perf_counter()
        coverage = coverage_profile(corpus, cache, runs)
        coverage_s = round(time.perf_counter() - t_cov, 1)
        results = {
            "source": str(data), "questions": (imported.get("imported") or {}).get("questions"),
            "evidence_spans": (imported.get("imported") or {}).get("evidence_spans"),
            "environment": {"python": platform.python_version(), "machine": platform.machine(),
                            "cpus": os.cpu_count(), "workers": args.workers,
                            "cache": "given" if args.cache_dir else "fresh (cold for the first run)"},
            "total_wall_s": round(time.perf_counter() - t_all, 1),
            "published": {"source": "chunking_evaluation README (SOURCE.txt): 5 corpora, text-embedding-3-large, "
                                    "5 chunks retrieved; recall = reference characters covered / reference characters",
                          "fixed 1200-character chunker": {"iou_mean": 0.177, "recall_mean": 0.809},
                          "ClusterSemanticChunker(400)": {"iou_mean": 0.183, "recall_mean": 0.897}},
            "runs": runs,
            "span_coverage": coverage, "span_coverage_wall_s": coverage_s,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        print(markdown(results))
        print(f"total {results['total_wall_s']} s; wrote {args.json}")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
