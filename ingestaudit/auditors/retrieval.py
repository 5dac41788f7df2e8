"""The retrieval auditor (``retrieval.*``) and the loss waterfall, per labelled question x pipeline.

Per pipeline, the embedded chunks of every document go into an exact FAISS index (inner product on L2-normalised
vectors: cosine) and into the pipeline's approximate index (HNSW by default). Each question is embedded with the same
model and searched in both, among the chunks its metadata ``filter`` lets through (a hard filter applied inside the
search, as a vector store does). The ranking metrics score the approximate index's results (what the pipeline
serves); the exact results tell ranking misses from ANN misses in the waterfall.

Policies (printed in the report through `RetrievalAuditor.options` and stated in docs/metrics.md):

* one evidence item counts once however many chunks hold it; ties keep the index's order;
* a question the retriever returned nothing for scores 0 and stays in every denominator;
* a question without evidence (``answerable: false``) is ``no_reference`` for ranking metrics and feeds
  ``retrieval.abstention_auroc``;
* a question one of whose evidence documents failed is an ``error`` row, never a miss (one whose document the
  pipeline's parser does not read is ``skipped``);
  a document the pipeline produced nothing for (``no_prediction``) lost its evidence in parsing;
* recall keeps the original evidence as its denominator, filtered or not.

Waterfall (DESIGN.md, "The loss waterfall"): each evidence item of an answerable question gets the first stage that
lost it, at every k: ``lost_in_parsing`` (under ``min_span_coverage`` of it survives in the parsed text),
``lost_in_cleaning``, ``split_by_chunking`` (no single chunk holds it), ``excluded_by_filter`` (every holding chunk
fails the filter), ``missed_by_ranking`` (exact search ranks no holding chunk within k), ``missed_by_ann`` (exact
does, the approximate index does not), ``retrieved``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ingestaudit.auditors.base import PipelineAuditor, PipelineContext, PipelineResult
from ingestaudit.measurement import Score, State
from ingestaudit.metrics.specs import MetricSpec, register

OUTCOMES = ("lost_in_parsing", "lost_in_cleaning", "split_by_chunking", "excluded_by_filter", "missed_by_ranking",
            "missed_by_ann", "retrieved")
"""Waterfall outcomes, in chain order."""

DEFAULT_K = (1, 3, 5, 10)


def metric_specs(ks: tuple[int, ...]) -> tuple[MetricSpec, ...]:
    """The declarations of every retrieval metric for cutoffs ``ks`` (registered when an auditor is built)."""
    specs = [
        MetricSpec("retrieval.rr", "reciprocal rank of the first chunk holding an evidence item (0 when none); its "
                   "macro mean is MRR (Voorhees, TREC-8 QA, 1999)", True, unit="questions"),
        MetricSpec("retrieval.ap", "average precision over all evidence items: sum of precision at each rank where a "
                   "new item is found / evidence items (trec_eval's map); its macro mean is MAP", True,
                   unit="evidence items"),
        MetricSpec("retrieval.filter_false_exclusion", "questions whose filter excludes every chunk of every evidence "
                   "document / questions with evidence and a filter", False, ci="wilson", unit="questions"),
        MetricSpec("retrieval.filter_excluded_items", "evidence items whose document has no chunk passing the "
                   "question's filter / evidence items of questions with a filter", False, ci="wilson",
                   unit="evidence items"),
        MetricSpec("retrieval.abstention_auroc", "probability that an answerable question's top-1 score exceeds an "
                   "out-of-scope question's (ties count one half): can a score threshold tell them apart", True),
    ]
    for k in ks:
        specs += [
            MetricSpec(f"retrieval.hit@{k}", f"questions with a chunk holding evidence in the top {k} (success@{k})",
                       True, ci="wilson", unit="questions"),
            MetricSpec(f"retrieval.recall@{k}", f"evidence items held by a top-{k} chunk / evidence items (an item "
                       "counts once)", True, ci="wilson", unit="evidence items"),
            MetricSpec(f"retrieval.precision@{k}", f"top-{k} positions holding evidence / {k} (unfilled positions "
                       "are misses)", True, ci="wilson", unit="positions"),
            MetricSpec(f"retrieval.ndcg@{k}", f"DCG@{k} / ideal DCG@{k}: gain = evidence grade (linear, as "
                       "trec_eval), discount log2(rank + 1), ideal over all evidence items", True, unit="gain"),
            MetricSpec(f"retrieval.span_recall@{k}", f"evidence-span characters covered by the union of the top-{k} "
                       "chunks (reference coordinates) / evidence characters; overlaps count once, unlike Chroma's "
                       "evaluator", True, unit="chars"),
            MetricSpec(f"retrieval.outcome@{k}", f"share of evidence items per waterfall outcome at k = {k} (label: "
                       "the outcome; the shares of one pipeline and class sum to 1)", False, ci="wilson",
                       unit="evidence items"),
        ]
    return tuple(specs)


METRICS = metric_specs(DEFAULT_K)
register(*METRICS)


class RetrievalAuditor(PipelineAuditor):
    """Scores retrieval on the labelled questions and builds the loss waterfall (see the module docstring).

    Args:
        k: the cutoffs (ints >= 1); the waterfall shown in the headline uses the largest.
        seed: unused by the metrics (kept for the run's seed convention).

    Raises:
        ValueError: an empty or non-positive ``k``.
    """

    stage = "retrieval"
    metrics = METRICS

    def __init__(self, k: list[int] | tuple[int, ...] = DEFAULT_K, seed: int = 0):
        ks = tuple(sorted({int(x) for x in k}))
        if not ks or ks[0] < 1:
            raise ValueError("retrieval k must be a non-empty list of integers >= 1")
        self.k = ks
        self.seed = seed
        self.metrics = metric_specs(ks)
        register(*self.metrics)

    def options(self) -> dict[str, Any]:
        return {"k": list(self.k), "policies": {
            "evidence_item": "counts once however many chunks hold it",
            "ties": "the index's order is kept",
            "empty_result": "scores 0 and stays in every denominator",
            "no_evidence": "no_reference (out-of-scope questions feed abstention_auroc)",
            "failed_document": "questions on a document that failed are error rows, not misses",
            "scored_results": "the pipeline's approximate index; exact search only attributes waterfall misses"}}

    def audit_pipeline(self, ctx: PipelineContext) -> PipelineResult:
        return _Run(self, ctx).result()


class _Run:
    """One pipeline's retrieval audit."""

    def __init__(self, auditor: RetrievalAuditor, ctx: PipelineContext):
        self.a, self.ctx = auditor, ctx
        self.ks = auditor.k
        self.docs = {d.doc_id: d for d in ctx.docs}
        rows, vectors, meta = [], [], []
        for d in ctx.docs:
            if d.state is State.OK and d.vectors is not None:
                for i in range(len(d.texts)):
                    rows.append((d.doc_id, i))
                    meta.append(d.metadata[i] if i < len(d.metadata) else {})
                vectors.append(np.asarray(d.vectors, dtype=np.float32))
        self.rows = rows
        self.meta = meta
        self.row_of = {r: j for j, r in enumerate(rows)}
        self.vectors = np.concatenate(vectors) if vectors else np.zeros((0, 1), dtype=np.float32)

    def result(self) -> PipelineResult:
        out = PipelineResult()
        qs = self.ctx.questions
        if not qs:
            return out
        if not self.rows:
            for q in qs:
                self._all_missing(out, q, State.NO_PREDICTION, "the pipeline produced no chunk for any document")
            return out
        user = self._user_results()
        if isinstance(user, str):  # a malformed retrieval.jsonl: every question is an error, with the file named
            for q in qs:
                self._all_missing(out, q, State.ERROR, user)
            return out
        kmax = max(self.ks)
        top1: dict[str, float] = {}
        waterfall: dict[str, dict[str, int]] = {}
        allowed = [self._allowed(q) for q in qs]
        retriever = self.ctx.pipeline.stage("retriever")
        if user is None and retriever.use != "dense":
            ranks, latencies = self._plugin(retriever, qs, allowed, kmax)
            out.timings = {"retriever": retriever.use}
        elif user is None:
            ranks, latencies, out.timings = self._search(qs, allowed, kmax)
        else:
            ranks, latencies = user["ranks"], user["latency_ms"]
            out.timings = {"source": user["path"]}
        for qi, q in enumerate(qs):
            ann_rank, exact_rank, score = ranks[qi]
            if isinstance(ann_rank, str):
                self._all_missing(out, q, State.ERROR, ann_rank)
                continue
            if score is not None:
                top1[q.id] = score
            if not q.answerable:
                self._all_missing(out, q, State.NO_REFERENCE, "out-of-scope question (answerable: false)",
                                  detail={"top1_score": top1.get(q.id)})
                continue
            failed = [(ev.doc, self.docs[ev.doc]) for ev in q.relevant
                      if ev.doc in self.docs and self.docs[ev.doc].state in (State.ERROR, State.SKIPPED)]
            if failed:  # an error stays an error (listed in failures); a format the parser does not read, skipped
                doc, d = next(((x, y) for x, y in failed if y.state is State.ERROR), failed[0])
                verb = "failed" if d.state is State.ERROR else "was skipped"
                self._all_missing(out, q, d.state, f"evidence document {doc} {verb}: {d.reason}")
                continue
            self._question(out, q, self.ctx.question_classes[q.id], ann_rank[:kmax], exact_rank[:kmax],
                           allowed[qi], waterfall)
        out.timings["query_latency_ms"] = {"p50": _nearest_rank(latencies, 50), "p95": _nearest_rank(latencies, 95),
                                           "n": len(latencies), "method": "nearest rank"}
        out.corpus_scores += self._auroc(top1)
        out.details["waterfall"] = {"k": kmax, "outcomes": list(OUTCOMES),
                                    "by_class": {c: waterfall[c] for c in sorted(waterfall)}}
        return out

    def _search(self, qs: list[Any], allowed: list[np.ndarray | None], kmax: int
                ) -> tuple[list[tuple[Any, list[int], float | None]], list[float], dict[str, Any]]:
        """Per question: the approximate index's ranked chunk rows, the exact ranking and the top-1 score."""
        from ingestaudit.stages.index import IndexSettings, build_ann, build_exact, search, timed_search

        choice = self.ctx.pipeline.stage("index")
        opts = {k: v for k, v in choice.kwargs().items() if k != "normalise"}
        settings = IndexSettings.from_options(choice.use, {"seed": self.ctx.seed, **opts})
        exact = build_exact(self.vectors, settings.metric)
        ann, build_s, mem = build_ann(self.vectors, settings)
        t0 = time.perf_counter()
        qvec = np.asarray(self.ctx.embed_questions([q.question for q in qs]), dtype=np.float32)
        embed_s = time.perf_counter() - t0
        ranks, latencies = [], []
        for qi in range(len(qs)):
            _, ex_ids = search(exact, qvec[qi:qi + 1], kmax, allowed=allowed[qi])
            an_scores, an_ids, lat = timed_search(ann, qvec[qi:qi + 1], kmax, allowed=[allowed[qi]])
            latencies += [float(x) for x in lat]
            ann_rank = [int(i) for i in an_ids[0] if i >= 0]
            ranks.append((ann_rank, [int(i) for i in ex_ids[0] if i >= 0],
                          float(an_scores[0][0]) if ann_rank else None))
        timings = {"index_build_s": build_s, "index_memory_bytes": mem, "question_embedding_s": embed_s,
                   "chunks_embedded": int(sum(len(d.texts) for d in self.ctx.docs if d.vectors is not None)),
                   "tokens_embedded": int(sum(sum(d.tokens) for d in self.ctx.docs))}
        return ranks, latencies, timings

    def _plugin(self, choice: Any, qs: list[Any], allowed: list[np.ndarray | None], kmax: int
                ) -> tuple[list[tuple[Any, Any, float | None]], list[float]]:
        """Rankings from a user retriever (`ingestaudit.stages.retrievers`): its order is the pipeline's, for both
        sides of the waterfall's exact/approximate split. A retriever that raises or returns unknown rows makes
        that question an ``error`` with the message."""
        from ingestaudit.stages.retrievers import ChunkView, load_retriever

        retriever = load_retriever(choice.use, choice.kwargs())
        views = [ChunkView(j, doc, self.docs[doc].texts[i], self.docs[doc].pages[i], self.docs[doc].sections[i],
                           self.meta[j]) for j, (doc, i) in enumerate(self.rows)]
        retriever.index(views, self.vectors)
        qvec = np.asarray(self.ctx.embed_questions([q.question for q in qs]), dtype=np.float32)
        ranks, latencies = [], []
        for qi, q in enumerate(qs):
            t0 = time.perf_counter()
            try:
                found = list(retriever.search(q.question, qvec[qi], kmax, allowed[qi]))
                rows = [int(r) for r, _ in found]
                bad = [r for r in rows if not 0 <= r < len(self.rows)]
                if bad:
                    raise ValueError(f"unknown chunk row {bad[0]} ({len(self.rows)} chunks)")
            except Exception as exc:  # one question's failure never stops the others
                msg = f"retriever {choice.use!r}: {type(exc).__name__}: {exc}"
                ranks.append((msg, msg, None))
                continue
            latencies.append((time.perf_counter() - t0) * 1000)
            ranks.append((rows, rows, float(found[0][1]) if found else None))
        return ranks, latencies

    def _user_results(self) -> dict[str, Any] | str | None:
        """A precomputed pipeline's ``retrieval.jsonl`` (DESIGN.md): per question its ranked chunks, as rows of this
        run's chunks; None when the pipeline has none, a message naming the file and line when it is malformed.
        Its ranking is the retriever's: exact and approximate are not told apart (misses are ``missed_by_ranking``)."""
        import json

        folder = self.ctx.pipeline.folder
        if folder is None or not (folder / "retrieval.jsonl").is_file():
            return None
        path = folder / "retrieval.jsonl"
        by_q: dict[str, tuple[Any, list[int], float | None]] = {}
        latency: list[float] = []
        known = {q.id for q in self.ctx.questions}
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            return f"{path}: unreadable ({exc})"
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                qid, results = rec["question"], rec["results"]
                if not isinstance(qid, str) or not isinstance(results, list):
                    raise TypeError("'question' must be a string and 'results' a list")
            except (ValueError, KeyError, TypeError) as exc:
                return f"{path}: line {n}: {exc}"
            if qid not in known:
                return f"{path}: line {n}: unknown question {qid!r}"
            rows: list[int] = []
            problem = None
            for j, r in enumerate(results):
                row = self._user_row(r)
                if isinstance(row, str):
                    problem = f"{path}: line {n}: results[{j}]: {row}"
                    break
                rows.append(row)
            score = results[0].get("score") if results and isinstance(results[0], dict) else None
            by_q[qid] = (problem or rows, problem or rows, float(score) if isinstance(score, (int, float)) else None)
            if isinstance(rec.get("latency_ms"), (int, float)):
                latency.append(float(rec["latency_ms"]))
        ranks = [by_q.get(q.id, ([], [], None)) for q in self.ctx.questions]
        return {"ranks": ranks, "latency_ms": latency, "path": str(path)}

    def _user_row(self, r: Any) -> int | str:
        """The chunk row a user's result names (``{"doc", "chunk": index or {"start", "end"}}``), or why not."""
        if not isinstance(r, dict) or not isinstance(r.get("doc"), str) or "chunk" not in r:
            return "needs 'doc' and 'chunk'"
        doc, chunk = r["doc"], r["chunk"]
        d = self.docs.get(doc)
        if d is None:
            return f"unknown document {doc!r}"
        if isinstance(chunk, int) and not isinstance(chunk, bool):
            idx = chunk
        elif isinstance(chunk, dict) and isinstance(chunk.get("start"), int) and isinstance(chunk.get("end"), int):
            hits = [i for i, iv in enumerate(d.intervals) if iv == (chunk["start"], chunk["end"])]
            if not hits:
                return f"no chunk of {doc!r} at [{chunk['start']}, {chunk['end']})"
            idx = hits[0]
        else:
            return "'chunk' must be an index or {\"start\", \"end\"}"
        if (doc, idx) not in self.row_of:
            return f"unknown chunk {chunk!r} of {doc!r} ({len(d.texts)} chunks)"
        return self.row_of[(doc, idx)]

    def _allowed(self, q: Any) -> np.ndarray | None:
        """The chunk rows a question's filter lets through (None: no filter)."""
        from ingestaudit.questions import filter_passes

        if not q.filter:
            return None
        return np.array([j for j, m in enumerate(self.meta) if filter_passes(q.filter, m)], dtype=np.int64)

    def _question(self, out: PipelineResult, q: Any, cls: str, ann_rank: list[int], exact_rank: list[int],
                  allowed: np.ndarray | None, waterfall: dict[str, dict[str, int]]) -> None:
        from ingestaudit.metrics.ranking import ranking_metrics, span_recall_at_k

        grades = {i: ev.grade for i, ev in enumerate(q.relevant)}
        holds: dict[int, set[int]] = {}  # chunk row -> evidence items it holds
        traces = []
        for i, ev in enumerate(q.relevant):
            d = self.docs.get(ev.doc)
            trace = d.evidence.get((q.id, i)) if d is not None else None
            traces.append(trace)
            if trace is not None and d.state is State.OK:
                for c in trace.holding:
                    if (ev.doc, c) in self.row_of:
                        holds.setdefault(self.row_of[(ev.doc, c)], set()).add(i)
        ranked = [holds.get(j, set()) for j in ann_rank]
        rates = ranking_metrics(ranked, grades, self.ks)
        emit = [("rr", "retrieval.rr"), ("ap", "retrieval.ap")]
        emit += [(f"{m}@{k}", f"retrieval.{m}@{k}") for k in self.ks for m in ("hit", "recall", "precision", "ndcg")]
        for key, metric in emit:
            r = rates[key]
            out.item_scores.append((q.id, "question", cls, Score.ratio(metric, r.numerator, r.denominator)))
        spans = [(ev.doc, ev.start, ev.end) for ev in q.relevant if ev.kind == "span"]
        covered = [self._covered(q, j) for j in ann_rank]
        for k in self.ks:
            if spans:
                r = span_recall_at_k(covered, spans, k)
                out.item_scores.append((q.id, "question", cls,
                                        Score.ratio(f"retrieval.span_recall@{k}", r.numerator, r.denominator)))
            else:
                out.item_scores.append((q.id, "question", cls, Score.missing(
                    f"retrieval.span_recall@{k}", State.NO_REFERENCE, "no span evidence")))
        self._filters(out, q, cls)
        exact_pos = {j: p for p, j in enumerate(exact_rank)}
        ann_pos = {j: p for p, j in enumerate(ann_rank)}
        allowed_set = None if allowed is None else set(allowed.tolist())
        for k in self.ks:
            counts = dict.fromkeys(OUTCOMES, 0)
            items = []
            for i, ev in enumerate(q.relevant):
                outcome = self._outcome(q, i, traces[i], k, exact_pos, ann_pos, allowed_set)
                counts[outcome] += 1
                items.append({"item": i, "doc": ev.doc, "kind": ev.kind, "outcome": outcome})
            for o in OUTCOMES:
                out.item_scores.append((q.id, "question", cls, Score.ratio(
                    f"retrieval.outcome@{k}", counts[o], len(q.relevant), label=o,
                    detail={"evidence": items} if o == "retrieved" else {})))
            if k == max(self.ks):
                by = waterfall.setdefault(cls, dict.fromkeys(OUTCOMES, 0))
                for o in OUTCOMES:
                    by[o] += counts[o]

    def _outcome(self, q: Any, i: int, trace: Any, k: int, exact_pos: dict[int, int], ann_pos: dict[int, int],
                 allowed: set[int] | None) -> str:
        thr = self.ctx.min_span_coverage
        ev = q.relevant[i]
        d = self.docs.get(ev.doc)
        if trace is None or d is None or d.state is not State.OK or trace.parsed < thr:
            return "lost_in_parsing"
        if trace.cleaned < thr:
            return "lost_in_cleaning"
        if not trace.holding:
            return "split_by_chunking"
        rows = [self.row_of[(ev.doc, c)] for c in trace.holding if (ev.doc, c) in self.row_of]
        if allowed is not None:
            rows = [j for j in rows if j in allowed]
            if not rows:
                return "excluded_by_filter"
        if any(ann_pos.get(j, k) < k for j in rows):
            return "retrieved"
        if any(exact_pos.get(j, k) < k for j in rows):
            return "missed_by_ann"
        return "missed_by_ranking"

    def _covered(self, q: Any, row: int) -> list[tuple[str, int, int]]:
        """Reference intervals of the question's evidence spans that chunk ``row`` covers."""
        doc_id, c = self.rows[row]
        d = self.docs[doc_id]
        out = []
        for i, ev in enumerate(q.relevant):
            if ev.doc == doc_id and ev.kind == "span":
                trace = d.evidence.get((q.id, i))
                if trace is not None:
                    out += [(doc_id, s, e) for s, e in trace.covered.get(c, [])]
        return out

    def _filters(self, out: PipelineResult, q: Any, cls: str) -> None:
        from ingestaudit.questions import filter_passes

        names = ("retrieval.filter_false_exclusion", "retrieval.filter_excluded_items")
        if not q.filter:
            for n in names:
                out.item_scores.append((q.id, "question", cls, Score.missing(n, State.NO_REFERENCE, "no filter")))
            return
        excluded = []
        for i, ev in enumerate(q.relevant):
            d = self.docs.get(ev.doc)
            metas = d.metadata if d is not None and d.metadata else []
            if not any(filter_passes(q.filter, m) for m in metas):
                excluded.append(i)
        detail = {"excluded_items": excluded, "filter": q.filter}
        out.item_scores.append((q.id, "question", cls, Score.ratio(
            names[0], 1 if len(excluded) == len(q.relevant) else 0, 1, detail=detail)))
        out.item_scores.append((q.id, "question", cls, Score.ratio(names[1], len(excluded), len(q.relevant),
                                                                   detail=detail)))

    def _all_missing(self, out: PipelineResult, q: Any, state: State, reason: str,
                     detail: dict[str, Any] | None = None) -> None:
        cls = self.ctx.question_classes[q.id]
        for spec in self.a.metrics:
            if spec.name == "retrieval.abstention_auroc":
                continue
            labels = OUTCOMES if spec.name.startswith("retrieval.outcome@") else ("",)
            if state is State.NO_REFERENCE and spec.name.startswith("retrieval.outcome@"):
                continue  # an out-of-scope question has no evidence item to place in the waterfall
            for label in labels:
                s = Score.missing(spec.name, state, reason, label=label)
                if detail:
                    s = Score(s.metric, None, None, None, state, label, {**s.detail, **detail})
                out.item_scores.append((q.id, "question", cls, s))

    def _auroc(self, top1: dict[str, float]) -> list[tuple[str, Score, int]]:
        qs = self.ctx.questions
        pos = [top1[q.id] for q in qs if q.answerable and q.id in top1]
        neg = [top1[q.id] for q in qs if not q.answerable and q.id in top1]
        if not pos or not neg:
            return [("__all__", Score.missing("retrieval.abstention_auroc", State.NO_REFERENCE,
                                              "needs answerable and out-of-scope questions with results"), 0)]
        return [("__all__", Score("retrieval.abstention_auroc", auroc(pos, neg),
                                  detail={"answerable": len(pos), "out_of_scope": len(neg)}), len(pos) + len(neg))]


def auroc(positives: list[float], negatives: list[float]) -> float:
    """P(a positive scores above a negative) + 0.5 P(tie): the Mann-Whitney form of the area under the ROC curve
    (Hanley & McNeil 1982), in [0, 1].

    Raises:
        ValueError: an empty side.
    """
    if not positives or not negatives:
        raise ValueError("auroc needs at least one positive and one negative")
    p = np.asarray(positives, dtype=np.float64)[:, None]
    n = np.asarray(negatives, dtype=np.float64)[None, :]
    return float(((p > n).sum() + 0.5 * (p == n).sum()) / (p.size * n.size))


def _nearest_rank(values: list[float], pct: float) -> float | None:
    """The nearest-rank percentile (the ceil(pct/100 * n)-th smallest value), None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, int(np.ceil(pct / 100 * len(ordered))) - 1)]
