"""Scale (issue 14): documents per second and peak memory of ``ingestaudit run`` per executor, on seeded synthetic
corpora of 1,000 to 50,000 documents, with report and store sizes.

    python benchmarks/bench_scale.py [--sizes 1000 5000 10000 50000] [--configs serial process1 process2 dask2]
                                     [--parser unstructured] [--work DIR] [--json benchmarks/results/bench_scale.json]

The corpus (`make_corpus`, seeded, cached under ``--work`` and reused) has three classes in equal shares: ``text``
(plain .txt), ``web`` (.html with a navigation bar and a footer around the article) and ``pdf`` (one-page PDFs
written with PyMuPDF). Words are drawn from a fixed Zipf-distributed vocabulary; every document has its reference
text in ``truth/`` (all visible text in reading order); about 10 % of documents belong to duplicate groups of 2-4
near-copies (a few words replaced, ``dup_group`` in the truth JSON; the group label comes from the generator, not
from similarity); ``questions.jsonl`` holds one span question for about 1 % of the documents.

Each configuration runs ``python -m ingestaudit.cli run CORPUS --outputs OUT/pipeline --stage extraction --stage
normalization --stage dedup`` in a child process: the pipeline is the generator's own precomputed output (the
reference text with a seeded sprinkle of OCR-like errors), so the run measures ingestaudit itself, not a parser.
With ``--parser NAME`` the documents are parsed for real by that registered parser instead (``--parser NAME`` in
place of ``--outputs``; ``unstructured`` is the one that reads all three formats), as a user's run would.
Peak RSS of the main process is its own ``getrusage(RUSAGE_SELF).ru_maxrss``, written by the child at exit (exact;
``os.wait4``'s ``ru_maxrss`` would be the largest of the child and every descendant it reaped, the pool workers
included); the peak of the whole process tree (workers included) is sampled from /proc every 50 ms. Ratios are
taken within one run of this script.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

LAUNCHER = """
import atexit, os, resource, sys
def _record():
    with open(os.environ["BENCH_MAXRSS_FILE"], "w") as fh:
        fh.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
atexit.register(_record)
sys.argv[0] = "ingestaudit"
from ingestaudit.cli import main
main()
"""
"""The child: ``ingestaudit`` with its own peak RSS (KiB) written to ``$BENCH_MAXRSS_FILE`` at exit."""

CLASSES = ("text", "web", "pdf")
CONFIGS = {"serial": ("serial", 1), "process1": ("process", 1), "process2": ("process", 2), "dask2": ("dask", 2)}
STAGES = ("extraction", "normalization", "dedup")


def vocabulary(rng: random.Random, n: int = 4000) -> tuple[list[str], list[float]]:
    """Pseudo-words (2-4 syllables) with Zipf weights 1/rank."""
    syll = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"]
    words = sorted({"".join(rng.choice(syll) for _ in range(rng.randint(1, 3))) for _ in range(n * 2)})[:n]
    rng.shuffle(words)
    return words, [1.0 / (r + 1) for r in range(len(words))]


def paragraph(rng: random.Random, words: list[str], weights: list[float], n_words: int) -> str:
    out, sentence = [], []
    for w in rng.choices(words, weights, k=n_words):
        sentence.append(w)
        if len(sentence) >= rng.randint(6, 16):
            out.append(" ".join(sentence).capitalize() + ".")
            sentence = []
    if sentence:
        out.append(" ".join(sentence).capitalize() + ".")
    return " ".join(out)


def body(rng: random.Random, words: list[str], weights: list[float]) -> str:
    title = " ".join(rng.choices(words, weights, k=4)).title()
    paras = [paragraph(rng, words, weights, rng.randint(30, 70)) for _ in range(rng.randint(2, 4))]
    return title + "\n\n" + "\n\n".join(paras) + "\n"


def near_copy(rng: random.Random, text: str, words: list[str]) -> str:
    """The same text with about 3 % of its words replaced."""
    toks = text.split(" ")
    for i in rng.sample(range(len(toks)), max(1, len(toks) // 33)):
        toks[i] = rng.choice(words)
    return " ".join(toks)


def noisy(rng: random.Random, text: str) -> str:
    """A pipeline's output: the text with ~0.5 % of its letters swapped for look-alikes (OCR-like errors)."""
    swaps = {"l": "1", "o": "0", "e": "c", "a": "o", "i": "l"}
    chars = list(text)
    for i in range(len(chars)):
        if chars[i] in swaps and rng.random() < 0.01:
            chars[i] = swaps[chars[i]]
    return "".join(chars)


def html_page(text: str) -> str:
    title, *paras = [p for p in text.split("\n\n") if p.strip()]
    items = "".join(f"<p>{p.strip()}</p>" for p in paras)
    return ("<!doctype html><html><head><meta charset='utf-8'><title>" + title + "</title></head><body>"
            "<nav>Home | Archive | Contact</nav><main><h1>" + title + "</h1>" + items + "</main>"
            "<footer>All rights reserved.</footer></body></html>")


def html_reference(text: str) -> str:
    title, *paras = [p for p in text.split("\n\n") if p.strip()]
    return "\n".join(["Home | Archive | Contact", title, *[p.strip() for p in paras], "All rights reserved."]) + "\n"


def pdf_bytes(text: str) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=420, height=595)
    page.insert_textbox(pymupdf.Rect(36, 36, 384, 559), text, fontsize=8)
    data = doc.tobytes(deflate=True)
    doc.close()
    return data


def make_corpus(root: Path, n: int, seed: int = 0) -> Path:
    """Write (or reuse) the corpus of ``n`` documents under ``root/scale-<n>-<seed>``; returns its path.

    Layout: ``corpus/`` (docs, truth, questions.jsonl) and ``outputs/pipeline/<doc id>.txt`` (the precomputed
    pipeline output). A ``DONE`` marker makes an interrupted generation start again.
    """
    base = root / f"scale-{n}-{seed}"
    if (base / "DONE").exists():
        return base
    shutil.rmtree(base, ignore_errors=True)
    rng = random.Random(seed)
    words, weights = vocabulary(random.Random(12345))
    corpus, outputs = base / "corpus", base / "outputs" / "pipeline"
    questions = []
    i = 0
    group = 0
    while i < n:
        cls = CLASSES[i % len(CLASSES)]
        text = body(rng, words, weights)
        copies = 1
        if rng.random() < 0.04:  # ~10 % of documents end up in groups of 2-4
            copies = min(rng.randint(2, 4), n - i)
        gid = f"g{group:06d}" if copies > 1 else None
        group += copies > 1
        for c in range(copies):
            name = f"{cls}/d{i:06d}"
            doc_text = text if c == 0 else near_copy(rng, text, words)
            if cls == "web":
                ref, src, ext = html_reference(doc_text), html_page(doc_text).encode(), ".html"
            elif cls == "pdf":
                ref, src, ext = doc_text, pdf_bytes(doc_text), ".pdf"
            else:
                ref, src, ext = doc_text, doc_text.encode(), ".txt"
            (corpus / "docs" / cls).mkdir(parents=True, exist_ok=True)
            (corpus / "truth" / cls).mkdir(parents=True, exist_ok=True)
            (outputs / cls).mkdir(parents=True, exist_ok=True)
            (corpus / "docs" / f"{name}{ext}").write_bytes(src)
            (corpus / "truth" / f"{name}.txt").write_text(ref, encoding="utf-8")
            labels = {"language": "en"}
            if gid:
                labels["dup_group"] = gid
            (corpus / "truth" / f"{name}.json").write_text(json.dumps(labels), encoding="utf-8")
            (outputs / f"{name}.txt").write_text(noisy(rng, ref), encoding="utf-8")
            if rng.random() < 0.01:
                start = ref.find("\n") + 1
                end = min(len(ref), start + 120)
                questions.append({"id": f"q{len(questions):05d}", "question": f"What does {name} say first?",
                                  "relevant": [{"doc": name, "start": start, "end": end}]})
            i += 1
            if i >= n:
                break
    with (corpus / "questions.jsonl").open("w", encoding="utf-8") as fh:
        for q in questions:
            fh.write(json.dumps(q) + "\n")
    (base / "DONE").write_text("")
    return base


def _tree_rss_kb(pid: int) -> int:
    """RSS of ``pid`` and all its descendants, in KiB (from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
        except OSError:
            continue
        p = int(entry)
        children.setdefault(int(fields.get("PPid", "0").strip() or 0), []).append(p)
        rss[p] = int(fields.get("VmRSS", "0 kB").split()[0]) if "VmRSS" in fields else 0
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo += children.get(p, [])
    return total


def run_config(base: Path, name: str, out: Path, parser: str | None = None) -> dict:
    """One ``ingestaudit run`` in a child process: wall time, peak RSS (main exact, tree sampled), output sizes.
    The pipeline is the generator's precomputed output, or the registered ``parser`` run on the documents."""
    executor, workers = CONFIGS[name]
    shutil.rmtree(out, ignore_errors=True)
    rss_file = out.with_name(out.name + ".maxrss")
    rss_file.unlink(missing_ok=True)
    source = ["--parser", parser] if parser else ["--outputs", str(base / "outputs")]
    cmd = [sys.executable, "-c", LAUNCHER, "run", str(base / "corpus"), *source,
           "--executor", executor, "--workers", str(workers), "--out", str(out)]
    for s in STAGES:
        cmd += ["--stage", s]
    env = {**os.environ, "COLUMNS": "100", "BENCH_MAXRSS_FILE": str(rss_file)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    peak_tree = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak_tree[0] = max(peak_tree[0], _tree_rss_kb(proc.pid))
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    rc = os.waitstatus_to_exitcode(status)
    sizes = {f.name: f.stat().st_size for f in out.glob("*") if f.is_file()}
    own = int(rss_file.read_text()) if rss_file.is_file() else None
    return {"config": name, "executor": executor, "workers": workers, "exit_code": rc, "wall_s": wall,
            "peak_rss_main_mb": own / 1024 if own is not None else None,
            "peak_rss_main_and_reaped_mb": usage.ru_maxrss / 1024, "peak_rss_tree_mb": peak_tree[0] / 1024,
            "sizes_bytes": sizes, "stderr_tail": stderr[-600:] if rc else ""}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000, 50000])
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--only-50k", nargs="+", default=["process2"],
                    help="configurations run at sizes >= 50,000 (each takes long)")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ingestaudit-scale")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--parser", default=None,
                    help="parse the documents with this registered parser (one that reads .txt, .html and .pdf: "
                         "unstructured) instead of reading the generator's precomputed output")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run the configurations in turn this many times (the machine's speed drifts: ratios are "
                         "taken between neighbouring runs)")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    results = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                           "load_start": os.getloadavg()}, "runs": []}
    for n in args.sizes:
        t0 = time.perf_counter()
        base = make_corpus(args.work, n, args.seed)
        print(f"[scale] corpus {n}: {base} ({time.perf_counter() - t0:.1f} s)", flush=True)
        configs = args.configs if n < 50000 else [c for c in args.configs if c in args.only_50k]
        for repeat, name in ((k, c) for k in range(args.repeat) for c in configs):
            r = run_config(base, name, args.work / f"out-{n}-{name}", args.parser)
            r.update(documents=n, docs_per_s=n / r["wall_s"], repeat=repeat, parser=args.parser or "precomputed")
            results["runs"].append(r)
            print(f"[scale] {n} {name} ({r['parser']}): rc {r['exit_code']} {r['wall_s']:.1f} s, {r['docs_per_s']:.1f} docs/s, "
                  f"main peak {r['peak_rss_main_mb']:.0f} MB, tree peak {r['peak_rss_tree_mb']:.0f} MB, "
                  f"report.json {r['sizes_bytes'].get('report.json', 0) / 1e6:.2f} MB, "
                  f"store {r['sizes_bytes'].get('measurements.parquet', 0) / 1e6:.2f} MB", flush=True)
            if r["exit_code"] not in (0, 3):
                print(r["stderr_tail"], file=sys.stderr)
    results["machine"]["load_end"] = os.getloadavg()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
