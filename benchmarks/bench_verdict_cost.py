"""What the bake-off verdict and the context-cost metrics add to a run's question scoring (issue 25's Performance
line: under 5 % of a run with 1,000 questions x 3 pipelines).

Data (seeded, synthetic, no model): 3 pipelines over the same 200 documents, each chunked into 20 chunks of 400-600
characters (4,000 chunks per pipeline, 64-d random unit vectors); 1,000 questions, each with one or two evidence
spans of 50-300 characters, each span held by one chunk (its trace carries the covered interval, as the chain
writes it). Question vectors are random: rankings come from the pipeline's flat index (exact cosine search).

Baseline (best of ``--repeat``, wall clock): per pipeline `RetrievalAuditor.audit_pipeline` (ranking, the ranking
metrics, the waterfall, the results listing) with the context metrics switched off (the pieces each result covers,
`ingestaudit.metrics.context.context_scores` and `budget_recall` replaced by constants: their rows are still
written, so the rows' own cost is in the baseline), then the paired tests of the run's key metrics
(`ingestaudit.report.paired.paired_tests` on retrieval.recall@10). Measured: the same with the context metrics on
(span_recall / span_precision / iou / context_chars at k = 1, 3, 5, 10 and span_recall@2000ch), plus the verdict
(`ingestaudit.report.verdict.build_verdict` on retrieval.span_recall@2000ch, the headline key when chunking
differs, and retrieval.recall@10). The question embedding and every document step of a real run are left out, so
the ratio overstates the share a real run sees.

Usage:
    python benchmarks/bench_verdict_cost.py [--questions 1000] [--repeat 3]
Results are printed as JSON and written to benchmarks/results/bench_verdict_cost.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np
import scipy.stats  # noqa: F401  imported up front: a run imports it anyway (the summary's intervals,
# ingestaudit.metrics.intervals), so its 1-2 s first import is no cost of the verdict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ingestaudit.auditors.base import PipelineContext  # noqa: E402
from ingestaudit.auditors.retrieval import RetrievalAuditor, _Run  # noqa: E402
from ingestaudit.chain import DocChunks, EvidenceTrace  # noqa: E402
from ingestaudit.measurement import State  # noqa: E402
from ingestaudit.metrics import context as ctx_mod  # noqa: E402
from ingestaudit.pipeline import Pipeline, StageChoice  # noqa: E402
from ingestaudit.questions import Question  # noqa: E402
from ingestaudit.report.paired import paired_tests  # noqa: E402
from ingestaudit.report.schema import MeasurementRow  # noqa: E402
from ingestaudit.report.verdict import build_verdict  # noqa: E402
from ingestaudit.stages.retrieve_step import with_index_steps  # noqa: E402

DOCS, CHUNKS, DIM, PIPELINES = 200, 20, 64, ("A", "B", "C")


def _pipeline(name: str) -> Pipeline:
    stages = {"parser": StageChoice("reference"), "cleaner": StageChoice("none"), "chunker": StageChoice("recursive"),
              "embedder": StageChoice("minilm"), "index": StageChoice("flat"), "retriever": StageChoice("dense")}
    return Pipeline(name, tuple(stages.items()))


def build(n_questions: int, seed: int) -> list[PipelineContext]:
    """The three pipelines' contexts (module docstring)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(400, 601, size=(DOCS, CHUNKS))
    starts = np.concatenate([np.zeros((DOCS, 1), dtype=np.int64), np.cumsum(lengths, axis=1)[:, :-1]], axis=1)
    evidence = []  # per question: [(doc index, chunk index, start, end)]
    raw = []
    for qi in range(n_questions):
        items = []
        for _ in range(int(rng.integers(1, 3))):
            d, c = int(rng.integers(DOCS)), int(rng.integers(CHUNKS))
            s = int(starts[d, c] + rng.integers(0, 100))
            e = s + int(rng.integers(50, min(300, int(starts[d, c] + lengths[d, c]) - s) + 1))
            items.append((d, c, s, e))
        evidence.append(items)
        raw.append({"id": f"q{qi}", "question": f"question {qi}",
                    "relevant": [{"doc": f"c/d{d}", "start": s, "end": e} for d, _, s, e in items]})
    questions = [Question.model_validate(r) for r in raw]
    qvec = rng.normal(size=(n_questions, DIM)).astype(np.float32)
    qvec /= np.linalg.norm(qvec, axis=1, keepdims=True)
    by_text = {q.question: qvec[i] for i, q in enumerate(questions)}

    def embed(texts: list[str]) -> np.ndarray:
        return np.stack([by_text[t] for t in texts])

    out = []
    for name in PIPELINES:
        docs = []
        for d in range(DOCS):
            vec = rng.normal(size=(CHUNKS, DIM)).astype(np.float32)
            vec /= np.linalg.norm(vec, axis=1, keepdims=True)
            ivs = [(int(starts[d, c]), int(starts[d, c] + lengths[d, c])) for c in range(CHUNKS)]
            doc = DocChunks(f"c/d{d}", "c", State.OK, "", texts=["x" * int(n) for n in lengths[d]],
                            pages=[1] * CHUNKS, sections=[()] * CHUNKS, metadata=[{} for _ in range(CHUNKS)],
                            vectors=vec, tokens=[100] * CHUNKS, intervals=ivs, ref_intervals=ivs)
            docs.append(doc)
        for qi, items in enumerate(evidence):
            for i, (d, c, s, e) in enumerate(items):
                docs[d].evidence[(f"q{qi}", i)] = EvidenceTrace(1.0, 1.0, [c], 1.0, covered={c: [(s, e)]},
                                                                offsets={c: [s - int(starts[d, c])]})
        ctx = PipelineContext(_pipeline(name), docs, questions, {q.id: "c" for q in questions}, embed, 0.5, seed)
        out.append(with_index_steps(ctx))
    return out


def _rows(name: str, result) -> list[MeasurementRow]:
    return [MeasurementRow(item=item, item_kind=kind, doc_class=cls, pipeline=name, stage="retrieval",
                           metric=s.metric, label=s.label, value=s.value, numerator=s.numerator,
                           denominator=s.denominator, state=s.state.value, detail={})
            for item, kind, cls, s in result.item_scores
            if s.metric in ("retrieval.recall@10", "retrieval.span_recall@2000ch")]


def one_pass(n_questions: int, seed: int, context_on: bool) -> dict[str, float]:
    """Seconds of the audit of three pipelines, of the paired tests and (``context_on``) of the verdict; fresh
    contexts so no ranking is reused between passes."""
    ctxs = build(n_questions, seed)
    patches = [] if context_on else [
        mock.patch.object(_Run, "_covered", lambda self, q, row: []),
        mock.patch.object(ctx_mod, "context_scores", lambda *a, **k: dict.fromkeys(
            ("recall", "precision", "iou", "chars"), ctx_mod._rate(0, 1, "stub"))),
        mock.patch.object(ctx_mod, "budget_recall", lambda *a, **k: ctx_mod._rate(0, 1, "stub"))]
    for p in patches:
        p.start()
    try:
        t0 = time.perf_counter()
        rows = []
        for ctx in ctxs:
            rows += _rows(ctx.pipeline.name, RetrievalAuditor().audit_pipeline(ctx))
        audit_s = time.perf_counter() - t0
    finally:
        for p in patches:
            p.stop()
    t0 = time.perf_counter()
    paired_tests(rows, list(PIPELINES), seed=seed, keys=[("retrieval.recall@10", "")])
    paired_s = time.perf_counter() - t0
    verdict_s = 0.0
    if context_on:
        t0 = time.perf_counter()
        build_verdict(rows, list(PIPELINES), [("retrieval.span_recall@2000ch", ""), ("retrieval.recall@10", "")],
                      seed=seed)
        verdict_s = time.perf_counter() - t0
    return {"audit_s": audit_s, "paired_s": paired_s, "verdict_s": verdict_s,
            "total_s": audit_s + paired_s + verdict_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "bench_verdict_cost.json")
    args = ap.parse_args()
    base, full = [], []
    for r in range(args.repeat):  # interleaved, so machine load hits both alike
        base.append(one_pass(args.questions, args.seed + r, context_on=False))
        full.append(one_pass(args.questions, args.seed + r, context_on=True))
    b = min(x["total_s"] for x in base)
    f = min(x["total_s"] for x in full)
    out = {"questions": args.questions, "pipelines": len(PIPELINES), "chunks_per_pipeline": DOCS * CHUNKS,
           "repeat": args.repeat, "baseline_s": b, "with_verdict_and_context_s": f, "ratio": f / b,
           "verdict_s": min(x["verdict_s"] for x in full), "baseline_runs": base, "measured_runs": full,
           "python": platform.python_version(), "machine": platform.machine()}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in out.items() if not k.endswith("_runs")}, indent=1))


if __name__ == "__main__":
    main()
