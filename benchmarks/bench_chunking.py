"""Chunking auditor cost per document against PyMuPDF's parse time on the same documents (issue 9, Performance).

    python benchmarks/bench_chunking.py [--repeat 3] [--json benchmarks/results/bench_chunking.json]

Documents: the born-digital PDFs of ``fixtures/demo`` (with reference text and the demo's questions, so the evidence
trace and the offset maps to the reference run), and the PDFs of ``../shared/data/docling-pdf`` and
``../shared/data/olmocr-bench-sample`` (imported into a temporary folder with ``ingestaudit import``; no reference
text, so no alignment and no evidence).

Per document, each measured as the best of ``--repeat`` (methods interleaved round by round, so load bursts hit all):

- **baseline**: ``PyMuPDFParser().parse(doc)`` (default settings, table detection on), as `ingestaudit.document_steps`'
  ``run_task`` calls it.
- **audit without the model**: ``run_chain(parsed, cleaner=none, chunker=recursive (default, 1000 chars), embedder=E,
  ...)`` + ``ChunkingAuditor().audit(ItemArtefacts.of(..., chain=...))``, where E is the real MiniLM embedder's
  tokenizer (token counts, max_seq_length) but whose ``embed`` returns seeded random unit vectors: everything the
  chain and the auditor do except the model's forward passes (cleaning, chunking, offset maps, extraction alignment
  to the reference, pointer checks, sentence segmentation, boundaries, coherence arithmetic and its random-split
  baseline, evidence).
- **audit with the model**: the same with the real embedder and no cache (chunks embedded by the chain, sentences by
  the coherence metric).

Results: per corpus sums and ratios (audit / parse), written to ``--json``.
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

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"


class NoForwardEmbedder:
    """The real embedder's tokenizer without its model: ``embed`` returns seeded random unit vectors."""

    def __init__(self, real):
        self.real = real
        self.rng = np.random.default_rng(0)
        self.name = real.name

    def count_tokens(self, texts):
        return self.real.count_tokens(texts)

    def token_offsets(self, text):
        return self.real.token_offsets(text)

    def max_seq_length(self):
        return self.real.max_seq_length()

    def special_tokens(self):
        return self.real.special_tokens()

    def embed(self, texts):
        v = self.rng.standard_normal((len(texts), 384)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def corpora(work: Path, env: dict) -> list[tuple[str, Path]]:
    out = [("demo (born-digital)", ROOT / "fixtures" / "demo")]
    for kind, name in (("docling", "docling-pdf"), ("olmocr-bench", "olmocr-bench-sample")):
        src = DATA / name
        if src.is_dir():
            dest = work / name
            subprocess.run(["ingestaudit", "import", kind, str(src), str(dest)], check=True, env=env,
                           capture_output=True, text=True)
            out.append((name, dest))
    return out


def evidence_by_doc(corpus, truths):
    from ingestaudit.chain import EvidenceRef
    from ingestaudit.questions import load_questions

    if corpus.questions is None:
        return {}
    qs = load_questions(corpus.questions, corpus.questions.name, truths)
    out: dict = {}
    for q in qs.questions:
        for i, ev in enumerate(q.relevant):
            out.setdefault(ev.doc, []).append(EvidenceRef((q.id, i), ev.kind, ev.start, ev.end, ev.section, ev.page))
    return out


def bench_corpus(label: str, root: Path, repeat: int, real, stub) -> dict:
    from ingestaudit.auditors.base import ItemArtefacts
    from ingestaudit.auditors.chunking import ChunkingAuditor
    from ingestaudit.chain import run_chain
    from ingestaudit.corpus import discover
    from ingestaudit.parsers.pymupdf_parser import PyMuPDFParser
    from ingestaudit.stages.chunkers.registry import load_chunker
    from ingestaudit.stages.cleaners.registry import load_cleaner
    from ingestaudit.truth import load_truth

    found = discover(root)
    parser = PyMuPDFParser()
    docs = [d for d in found.documents if d.suffix.lower() == ".pdf" and parser.supports(d)]
    if label.startswith("demo"):
        docs = [d for d in docs if d.doc_id.startswith("born_digital/")]
    truths = {d.doc_id: load_truth(d, found.root) for d in found.documents}
    evidence = evidence_by_doc(found, truths)
    cleaner, chunker, auditor = load_cleaner("none", {}), load_chunker("recursive", {}), ChunkingAuditor()

    def parse(d):
        return parser.parse(d)

    def audit(d, parsed, emb):
        t = truths[d.doc_id]
        ev = tuple(evidence.get(d.doc_id, ()))
        chain = run_chain(parsed, doc_id=d.doc_id, doc_class=d.doc_class, reference=t.text, metadata=t.metadata,
                          cleaner=cleaner, chunker=chunker, embedder=emb, evidence=ev, min_span_coverage=0.5)
        auditor.audit(ItemArtefacts.of(t, parsed, chain=chain, evidence=ev))
        return chain

    rows = []
    for d in docs:
        parsed = parse(d)  # warm-up (imports, fonts)
        chain = audit(d, parsed, stub)  # warm-up of the no-model path (the model itself was loaded and called once)
        times = {"parse": [], "audit_no_model": [], "audit_with_model": []}
        for _ in range(repeat):
            t0 = time.perf_counter()
            parse(d)
            t1 = time.perf_counter()
            audit(d, parsed, stub)
            t2 = time.perf_counter()
            audit(d, parsed, real)
            t3 = time.perf_counter()
            times["parse"].append(t1 - t0)
            times["audit_no_model"].append(t2 - t1)
            times["audit_with_model"].append(t3 - t2)
        from ingestaudit.metrics.chunking import sentence_spans
        rows.append({"doc": d.doc_id, "pages": len(parsed.pages), "chars": len(parsed.text),
                     "chunks": len(chain.chunks), "sentences": len(sentence_spans(chain.cleaned)),
                     "reference": truths[d.doc_id].text is not None,
                     "evidence_items": len(evidence.get(d.doc_id, ())),
                     **{k + "_s": min(v) for k, v in times.items()}})
    tot = {k: sum(r[k + "_s"] for r in rows) for k in ("parse", "audit_no_model", "audit_with_model")}
    n = len(rows)
    return {"corpus": label, "documents": n, "pages": sum(r["pages"] for r in rows),
            "chars": sum(r["chars"] for r in rows), "chunks": sum(r["chunks"] for r in rows),
            "sentences": sum(r["sentences"] for r in rows),
            "parse_s": tot["parse"], "audit_no_model_s": tot["audit_no_model"],
            "audit_with_model_s": tot["audit_with_model"],
            "per_doc_ms": {k: 1000 * v / n for k, v in tot.items()} if n else {},
            "ratio_no_model": tot["audit_no_model"] / tot["parse"] if tot["parse"] else None,
            "ratio_with_model": tot["audit_with_model"] / tot["parse"] if tot["parse"] else None,
            "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "bench_chunking.json")
    args = ap.parse_args()
    from ingestaudit.stages.embedders.registry import load_embedder

    env = dict(os.environ)
    env["INGESTAUDIT_LINK_ROOTS"] = os.pathsep.join(filter(None, [str(DATA.resolve()),
                                                                  env.get("INGESTAUDIT_LINK_ROOTS")]))
    os.environ["INGESTAUDIT_LINK_ROOTS"] = env["INGESTAUDIT_LINK_ROOTS"]
    import torch

    real = load_embedder("minilm", {})
    real.check()
    real.embed(["warm-up sentence."] * 8)  # first-call initialisation is in no timing
    stub = NoForwardEmbedder(real)
    work = Path(tempfile.mkdtemp(prefix="bench_chunking_"))
    load0 = os.getloadavg()
    try:
        results = [bench_corpus(label, root, args.repeat, real, stub) for label, root in corpora(work, env)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
           "torch_threads": torch.get_num_threads(), "repeat": args.repeat,
           "loadavg_start": [round(x, 2) for x in load0], "loadavg_end": [round(x, 2) for x in os.getloadavg()],
           "chunker": "recursive (default: 1000 chars, overlap 0)", "cleaner": "none", "embedder": "minilm, no cache",
           "corpora": results}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print("| corpus | docs | pages | chunks | parse s | audit no model s | ratio | audit with model s | ratio |")
    for r in results:
        print(f"| {r['corpus']} | {r['documents']} | {r['pages']} | {r['chunks']} | {r['parse_s']:.3f} | "
              f"{r['audit_no_model_s']:.3f} | {r['ratio_no_model']:.2f} | {r['audit_with_model_s']:.3f} | "
              f"{r['ratio_with_model']:.2f} |")
    print(f"load {out['loadavg_start']} -> {out['loadavg_end']}; wrote {args.json}")


if __name__ == "__main__":
    main()
