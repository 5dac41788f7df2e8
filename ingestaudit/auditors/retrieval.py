"""The retrieval auditor (``retrieval.*``) and the loss waterfall, per labelled question x pipeline.

Per pipeline, the retrieve step (`ingestaudit.stages.retrieve_step`, handed in as ``PipelineContext.retrieve``) ranks
the chunks for each question: the embedded chunks of every document sit in an exact FAISS index (inner product on
L2-normalised vectors: cosine) and in the pipeline's approximate index (HNSW by default), both built once by the
pipeline's index step; each question, embedded with the same model, is searched in both among the chunks its
metadata ``filter`` lets through (a hard filter applied inside the search, as a vector store does). This auditor
only reads those results (`ingestaudit.retrieved.Retrieved`). The ranking metrics score the approximate index's
results (what the pipeline serves); the exact results tell ranking misses from ANN misses in the waterfall. A user's
own results (``retrieval.jsonl`` of a precomputed pipeline) or a user retriever (`ingestaudit.stages.retrievers`)
replace the search; their ranking is scored as returned.

Every convention that changes a number is a named entry of `CONVENTIONS`, printed in the report
(``config.auditors.retrieval``) and in docs/metrics.md.

Waterfall (DESIGN.md, "The loss waterfall"): each evidence item of an answerable question gets the first stage that
lost it, at every k: ``label_unmatched`` (a section item whose label matches no heading of the parsed text nor any
line of the reference text, with the layout audit's matcher and threshold, `ingestaudit.chain.trace_evidence`: the
label is at fault, not the parser), ``lost_in_parsing`` (under ``min_span_coverage`` of it survives in the parsed
text, or the pipeline produced no output for its document), ``lost_in_cleaning``, ``split_by_chunking`` (no single
chunk holds it, including a document whose chunk set is empty), ``excluded_by_enrichment`` (every holding chunk
fails the filter, and one would pass it with its document's labelled metadata in place of what the pipeline's
``metadata`` step extracted: the enrichment lost it), ``excluded_by_filter`` (every holding chunk fails the filter
as labelled), ``missed_by_ranking`` (exact search ranks no holding chunk within k), ``missed_by_ann`` (exact does,
the approximate index does not), ``retrieved``. An item a retriever returned within k is ``retrieved`` even when its
chunk fails the filter (a filter violation, counted by ``retrieval.filter_violation``), so the ``retrieved`` share
is micro recall@k.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ingestaudit.auditors.base import CHAIN, Auditor, PipelineContext, PipelineResult, Scope
from ingestaudit.config import context_budgets_problem
from ingestaudit.measurement import Score, State
from ingestaudit.metrics.specs import MetricSpec, register

OUTCOMES = ("label_unmatched", "lost_in_parsing", "lost_in_cleaning", "split_by_chunking", "excluded_by_enrichment",
            "excluded_by_filter",
            "missed_by_ranking", "missed_by_ann", "retrieved")
"""Waterfall outcomes, in chain order."""

DEFAULT_K = (1, 3, 5, 10)
DEFAULT_BUDGETS = (2000,)
"""Context budgets in characters (``[run] context_budgets``) of ``retrieval.span_recall@<B>ch``."""

CONVENTIONS: dict[str, str] = {
    "evidence_item": "an evidence item counts once however many chunks hold it (it is found at the first rank that "
                     "holds it); a chunk holds a span when it covers at least min_span_coverage of its characters, "
                     "a section when its section path ends with that heading or it contains the heading itself "
                     "(it starts under an earlier heading and runs into the section)",
    "section_matching": "a section item's label matches a heading when their similarity (1 - Levenshtein / longer "
                        "length, NFC + casefold + white space collapsed) reaches the layout audit's threshold "
                        "([auditor_options.layout] threshold, default 0.8), as the layout audit matches headings; a "
                        "label that no parsed heading and no line of the reference text matches is label_unmatched "
                        "in the waterfall, not lost_in_parsing",
    "multi_item_chunk": "a chunk holding several evidence items credits every item no earlier chunk held, at its "
                        "rank, in recall@k, ap and ndcg@k alike (trec_eval with each evidence item a relevant "
                        "document); nDCG discounts the j-th item found at rank max(r, j), never above its place in "
                        "the ideal ranking, so it stays <= 1 and equals trec_eval's when every chunk holds at most "
                        "one item: one chunk at rank 1 holding both items of a question gives recall 1, AP 1, nDCG 1",
    "ndcg_gain": "linear (gain = the evidence grade, default 1, as trec_eval); discount log2(rank + 1); ideal DCG: "
                 "every evidence item, best grade first, one per rank, cut at k",
    "rr_ap_depth": "rr and ap read the top `depth` results (option; default the largest k) of the ranking, the "
                   "same list the @k metrics read: trec_eval's recip_rank and map on a run cut at that depth (an "
                   "item first held below it contributes 0 to ap, a first relevant chunk below it gives rr 0)",
    "macro_means": "MRR = macro mean of retrieval.rr, MAP = macro mean of retrieval.ap, mean nDCG@k = macro mean of "
                   "retrieval.ndcg@k; their rows carry value / 1 (DCG and ideal DCG, or the precision sum and item "
                   "count, in the row's detail), so micro equals macro and the interval is a bootstrap of the mean",
    "ties": "the retriever's order is kept as returned (FAISS's order for the dense retriever); equal scores are "
            "never re-sorted",
    "empty_result": "a question the retriever returned nothing for scores 0 on every metric and stays in every "
                    "denominator",
    "repeated_result": "a chunk returned more than once for one question counts once, at its first rank (a "
                       "user's retrieval.jsonl or retriever can repeat one; the built-in search never does), so "
                       "ten copies of one relevant chunk are precision@10 0.1, not 1",
    "no_evidence": "a question without evidence (answerable: false) is no_reference for the ranking metrics and "
                   "feeds abstention_auroc",
    "page_evidence": "a page item is held by the chunks that start on that page; a page past the source document's "
                     "page count, or on a format without pages (.txt), is a label error (a validate problem; the "
                     "question is an error row, never lost_in_parsing); with the reference parser (one page, no page "
                     "breaks) a question with page evidence is skipped with that reason",
    "repeated_evidence": "an evidence item given twice in one question counts once (a validate problem): repeats "
                         "never add weight to a question in micro recall",
    "invalid_question": "a question that fails validation (unknown document, span outside the reference text) is "
                        "an error row in every pipeline, its message naming the file, line and field: never left "
                        "out of the counts",
    "failed_document": "a question one of whose evidence documents failed is an error row (skipped when the "
                       "pipeline's parser does not read that format), never a miss",
    "filter": "a hard filter applied inside the search; an item is excluded by the filter when chunks hold it and "
              "the filter excludes every one of them (the waterfall's excluded_by_filter); an item no chunk holds "
              "was lost upstream and is never counted as excluded; recall keeps the original evidence as its "
              "denominator (no option rebuilds it after filtering)",
    "filter_violation": "results a user's retriever returns against the question's filter are audited as returned "
                        "(a holding chunk counts as retrieved) and counted by retrieval.filter_violation",
    "abstention_score": "a question's confidence is its top-1 score as returned, negated for an L2 index (a "
                        "distance: lower is closer); a question with no result is the least confident (-inf); "
                        "ties count one half; error rows are left out and counted in the row's detail",
    "intervals": "Wilson over questions for hit@k and filter_false_exclusion (one Bernoulli per question); for "
                 "every other metric a seeded percentile bootstrap over questions, resampling each question's "
                 "numerator and denominator together (evidence items and positions cluster within questions)",
    "context_cost": "span_precision@k and iou@k are Chroma's precision and IoU (BaseEvaluation."
                    "_scores_from_dataset_and_retrievals, brandonstarxel/chunking_evaluation): covered evidence "
                    "characters (union) over the top-k chunks' characters summed as the model reads them (a chunk "
                    "of another document costs its length; two overlapping chunks cost both), IoU adding the "
                    "evidence characters not covered; a chunk's characters are its text's length",
    "evidence_overlap": "option evidence_overlap: 'union' (default) counts a character inside two overlapping "
                        "evidence spans once in span recall's denominator and in IoU's uncovered part; 'sum' counts "
                        "it once per span, as Chroma's evaluator does",
    "context_budget": "span_recall@<B>ch ([run] context_budgets, characters): ranked chunks are read in order until "
                      "B characters are spent, the last one cut to what fits (its first characters, counted from "
                      "its located start in the cleaned text); recall of the evidence characters inside that "
                      "context. It is the headline retrieval metric when a run's pipelines differ in chunking: "
                      "recall@k favours larger chunks, which hold more evidence and cost more context",
    "scored_results": "the pipeline's approximate index (what it serves); exact search only attributes waterfall "
                      "misses; a user's retrieval.jsonl or retriever is scored as returned and its misses are "
                      "missed_by_ranking",
}
"""Every convention of the retrieval metrics that changes a number: printed in the report and in docs/metrics.md."""


def metric_specs(ks: tuple[int, ...], budgets: tuple[int, ...] = DEFAULT_BUDGETS) -> tuple[MetricSpec, ...]:
    """The declarations of every retrieval metric for cutoffs ``ks`` and context budgets ``budgets`` (characters;
    registered when an auditor is built)."""
    specs = [
        MetricSpec("retrieval.rr", "reciprocal rank of the first chunk holding an evidence item within the top "
                   "`depth` results (0 when none; trec_eval's recip_rank on a run of that depth); its macro mean "
                   "is MRR (Voorhees, TREC-8 QA, 1999)", True, unit="questions"),
        MetricSpec("retrieval.ap", "average precision over all evidence items within the top `depth` results: sum "
                   "of precision at each rank where a new item is found / evidence items (trec_eval's map on a run "
                   "of that depth); its macro mean is MAP", True, unit="questions"),
        MetricSpec("retrieval.filter_false_exclusion", "questions whose filter excludes every evidence item (each "
                   "item held by chunks that all fail the filter: the waterfall's excluded_by_filter) / questions "
                   "with evidence and a filter", False, ci="wilson", unit="questions"),
        MetricSpec("retrieval.filter_excluded_items", "evidence items held by chunks that all fail the question's "
                   "filter / evidence items of questions with a filter (an item no chunk holds is not excluded)",
                   False, unit="evidence items"),
        MetricSpec("retrieval.filter_violation", "returned results that fail the question's filter / returned "
                   "results, questions with a filter (0 for the built-in search, which filters inside the index; "
                   "a user's retrieval.jsonl or retriever can violate it)", False, unit="results"),
        MetricSpec("retrieval.abstention_auroc", "probability that an answerable question's top-1 confidence "
                   "exceeds an out-of-scope question's (ties count one half; confidence = score, negated for L2 "
                   "distances; no result = least confident): can a score threshold tell them apart", True),
    ]
    for k in ks:
        specs += [
            MetricSpec(f"retrieval.hit@{k}", f"questions with a chunk holding evidence in the top {k} (success@{k})",
                       True, ci="wilson", unit="questions"),
            MetricSpec(f"retrieval.recall@{k}", f"evidence items held by a top-{k} chunk / evidence items (an item "
                       "counts once)", True, unit="evidence items"),
            MetricSpec(f"retrieval.precision@{k}", f"top-{k} positions holding evidence / {k} (unfilled positions "
                       "are misses)", True, unit="positions"),
            MetricSpec(f"retrieval.ndcg@{k}", f"DCG@{k} / ideal DCG@{k} per question: gain = evidence grade "
                       "(linear, as trec_eval), discount log2(rank + 1), ideal over all evidence items; a chunk "
                       "holding several items credits each (see the conventions)", True, unit="questions"),
            MetricSpec(f"retrieval.span_recall@{k}", f"evidence-span characters covered by the union of the top-{k} "
                       "chunks (reference coordinates) / evidence characters, both sides unions (Chroma's evaluator "
                       "unions the numerator but sums overlapping reference spans in the denominator)", True,
                       unit="chars"),
            MetricSpec(f"retrieval.outcome@{k}", f"share of evidence items per waterfall outcome at k = {k} (label: "
                       "the outcome; the shares of one pipeline and class sum to 1)", False, unit="evidence items"),
            MetricSpec(f"retrieval.span_precision@{k}", f"evidence characters covered by the top-{k} chunks (union) "
                       f"/ characters of the top-{k} chunks summed, as the model reads them (Chroma's precision, "
                       "Smith & Troynikov 2024): what share of the context is evidence", True, unit="chars"),
            MetricSpec(f"retrieval.iou@{k}", f"evidence characters covered by the top-{k} chunks / (top-{k} chunk "
                       "characters summed + evidence characters not covered) (Chroma's IoU)", True, unit="chars"),
            MetricSpec(f"retrieval.context_chars@{k}", f"characters of the top-{k} chunks summed, per question (the "
                       "context an LLM prompt would carry; its mean over questions)", False, high=None,
                       unit="chars", budget="5%"),
        ]
    for b in budgets:
        specs.append(MetricSpec(f"retrieval.span_recall@{b}ch", f"evidence characters inside a context of {b} "
                                "characters (ranked chunks read in order, the last one cut to fit) / evidence "
                                "characters: recall at an equal context budget, fair across chunk sizes", True,
                                unit="chars"))
    return tuple(specs)


METRICS = metric_specs(DEFAULT_K)
register(*METRICS)


class RetrievalAuditor(Auditor):
    """Scores retrieval on the labelled questions and builds the loss waterfall (see the module docstring).

    Args:
        k: the cutoffs (ints >= 1); the waterfall shown in the headline uses the largest.
        depth: results asked of the retriever and read by rr and ap (int >= the largest k); None = the largest k.
            With the dense retriever the approximate index is searched once for ``depth`` results (FAISS HNSW then
            explores ``max(ef_search, depth)`` candidates).
        seed: unused by the metrics (kept for the run's seed convention).
        context_budgets: budgets in characters of ``retrieval.span_recall@<B>ch`` (distinct ints in
            [1, `ingestaudit.config.MAX_CONTEXT_BUDGET`]; the runner passes ``[run] context_budgets``).
        evidence_overlap: ``"union"`` or ``"sum"`` (`ingestaudit.metrics.context`; the ``evidence_overlap``
            convention).

    Raises:
        ValueError: an empty or non-positive ``k``, ``depth`` below the largest k, a budget that is not an int in [1, 10**9]
            or is given twice (`ingestaudit.config.context_budgets_problem`; message names ``[run] context_budgets``) or an unknown ``evidence_overlap``.
    """

    stage = "retrieval"
    metrics = METRICS
    scope = Scope.PIPELINE
    reads = frozenset({CHAIN})
    conventions = CONVENTIONS

    def __init__(self, k: list[int] | tuple[int, ...] = DEFAULT_K, depth: int | None = None, seed: int = 0,
                 context_budgets: list[int] | tuple[int, ...] = DEFAULT_BUDGETS, evidence_overlap: str = "union"):
        from ingestaudit.metrics.context import EVIDENCE_OVERLAP

        try:
            ks = tuple(sorted({int(x) for x in k}))
        except (TypeError, ValueError):
            raise ValueError(f"retrieval k must be a list of integers >= 1, got {k!r}") from None
        if not ks or ks[0] < 1:
            raise ValueError("retrieval k must be a non-empty list of integers >= 1")
        if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < ks[-1]):
            raise ValueError(f"retrieval depth must be an integer >= the largest k ({ks[-1]}), got {depth!r}")
        budget_problem = context_budgets_problem(context_budgets)
        if budget_problem:
            raise ValueError(budget_problem)
        if evidence_overlap not in EVIDENCE_OVERLAP:
            raise ValueError(f"retrieval evidence_overlap must be one of {EVIDENCE_OVERLAP}, got {evidence_overlap!r}")
        self.k = ks
        self.depth = depth if depth is not None else ks[-1]
        self.seed = seed
        self.budgets = tuple(sorted(set(context_budgets)))
        self.evidence_overlap = evidence_overlap
        self.metrics = metric_specs(ks, self.budgets)
        register(*self.metrics)

    def options(self) -> dict[str, Any]:
        return {"k": list(self.k), "depth": self.depth, "context_budgets": list(self.budgets),
                "evidence_overlap": self.evidence_overlap, "conventions": dict(CONVENTIONS)}

    def audit_pipeline(self, ctx: PipelineContext) -> PipelineResult:
        return _Run(self, ctx).result()


class _Run:
    """One pipeline's retrieval audit."""

    def __init__(self, auditor: RetrievalAuditor, ctx: PipelineContext):
        self.a, self.ctx = auditor, ctx
        self.ks = auditor.k
        self.depth = auditor.depth
        self.docs = {d.doc_id: d for d in ctx.docs}
        self.sign = 1.0  # confidence = sign * top-1 score (-1 for L2 distances)
        self.questions_embedded = 0
        self.table: Any = None  # the retrieve step's chunk table (`ingestaudit.retrieved.ChunkTable`)

    def result(self) -> PipelineResult:
        out = PipelineResult()
        for qid, cls, message in getattr(self.ctx, "rejected_questions", ()) or ():  # listed under "questions"
            self._all_missing(out, qid, cls, State.ERROR, message, detail={"failure_listed": True})
        qs = self.ctx.questions
        if not qs:
            return out
        kmax = max(self.ks)
        if self.ctx.retrieve is None:
            raise ValueError("no retrieve step: PipelineContext.retrieve is None (the runner attaches it with "
                             "ingestaudit.stages.retrieve_step.with_index_steps)")
        got = self.ctx.retrieve(self.depth, kmax)  # the retrieve step's ranked results (`Retrieved`)
        self.table = got.table
        self.sign = 1.0 if got.higher_is_closer else -1.0
        self.questions_embedded = got.questions_embedded
        allowed = [self.table.allowed(q.filter) for q in qs]
        ranks, latencies, qstats = got.ranks, got.latencies_ms, got.embedding
        out.failures += got.failures
        out.timings = dict(got.timings)
        top1: dict[str, float] = {}
        unscored = {"failed": 0, "no_score": 0}  # left out of abstention_auroc
        waterfall: dict[str, dict[str, int]] = {}
        for qi, q in enumerate(qs):
            ann_rank, exact_rank, score = ranks[qi]
            cls = self.ctx.question_classes[q.id]
            served = got.scores[qi] if qi < len(got.scores) and got.scores[qi] is not None else None
            first_score: dict[int, float | None] | None = None
            if served is not None and not isinstance(ann_rank, str):  # each chunk's score at its first rank
                first_score = {}
                for row, sc in zip(ann_rank, served):
                    first_score.setdefault(row, sc)
            calls = got.embedding_calls[qi] if qi < len(got.embedding_calls) else 0
            if isinstance(ann_rank, str):
                self._all_missing(out, q.id, cls, State.ERROR, ann_rank,
                                  detail={"failure_listed": True} if ann_rank in out.failures else None)
                unscored["failed"] += 1
                continue
            ann_rank = list(dict.fromkeys(ann_rank))  # a repeated chunk counts once, at its first rank
            unknown = self._unknown_filter_field(q)
            if unknown is not None:  # listed in the run's failures once per question, the question named
                self._all_missing(out, q.id, cls, State.ERROR, unknown)
                unscored["failed"] += 1
                continue
            if not ann_rank:
                confidence: float | None = -np.inf  # nothing returned: the least confident answer possible
            else:
                confidence = None if score is None else self.sign * score
            if not q.answerable:
                self._note_confidence(top1, unscored, q.id, confidence)
                self._all_missing(out, q.id, cls, State.NO_REFERENCE, "out-of-scope question (answerable: false)",
                                  detail={"top1_score": score}, rr_detail=self._listing(
                                      q, [set()] * len(ann_rank), ann_rank[:self.depth], score, first_score, calls))
                continue
            failed = [(ev.doc, self.docs[ev.doc]) for ev in q.relevant
                      if ev.doc in self.docs and self.docs[ev.doc].state in (State.ERROR, State.SKIPPED)]
            if failed:  # an error stays an error (listed in failures); a format the parser does not read, skipped
                doc, d = next(((x, y) for x, y in failed if y.state is State.ERROR), failed[0])
                verb = "failed" if d.state is State.ERROR else "was skipped"
                self._all_missing(out, q.id, cls, d.state, f"evidence document {doc} {verb}: {d.reason}")
                unscored["failed"] += 1
                continue
            unchecked = self._unchecked_page(q)
            if unchecked is not None:  # never a parsing loss: the parsed text cannot show the page
                self._all_missing(out, q.id, cls, State.SKIPPED, unchecked)
                unscored["failed"] += 1
                continue
            self._note_confidence(top1, unscored, q.id, confidence)
            self._question(out, q, cls, ann_rank[:self.depth], exact_rank[:kmax], allowed[qi], waterfall, score,
                           first_score, calls)
        out.timings["query_latency_ms"] = _latency_summary(latencies)
        if "source" not in got.timings and len(latencies) == len(qs):  # this run timed every question, in order
            # (a user's retrieval.jsonl lists its latencies in file order, a failed query has none: not per question)
            out.timings["latency_by_question_ms"] = {q.id: float(v) for q, v in zip(qs, latencies) if np.isfinite(v)}
        out.timings["embedding"] = self._embedding_cost(qstats)
        out.corpus_scores += self._auroc(top1, unscored)
        out.details["waterfall"] = {"k": kmax, "outcomes": list(OUTCOMES),
                                    "by_class": {c: waterfall[c] for c in sorted(waterfall)}}
        return out

    def _unchecked_page(self, q: Any) -> str | None:
        """Why question ``q`` cannot be scored by this pipeline, or None: a page evidence item with the
        ``reference`` parser, whose text is the labelled reference text, one page without page breaks, so no page
        can be found lost or kept (issue 30)."""
        p = self.ctx.pipeline
        if p.precomputed_root is not None or p.stage("parser").use != "reference":
            return None
        item = next((i for i, ev in enumerate(q.relevant) if ev.kind == "page"), None)
        if item is None:
            return None
        return (f"relevant[{item}] is page evidence (page {q.relevant[item].page}), which the reference parser cannot "
                "check: the reference text has no page breaks (give a span or a section to score it with "
                "--parser reference)")

    def _unknown_filter_field(self, q: Any) -> str | None:
        """Why ``q``'s filter cannot be what its author meant: a field that none of this pipeline's chunks carry
        (truth metadata or the chunker's), so the filter would exclude every chunk and its misses would be charged
        to ``excluded_by_filter``; None when every field is carried, or when the pipeline has no chunk at all (the
        question then scores 0 like every other)."""
        if not q.filter or not self.table.meta:
            return None
        fields = self.table.fields
        missing = sorted(k for k in q.filter if k not in fields)
        if not missing:
            return None
        return (f"filter field {', '.join(map(repr, missing))} is carried by none of this pipeline's "
                f"{len(self.table.meta)} chunks (truth or chunker metadata): the filter would exclude every chunk")

    # ------------------------------------------------------------------------------------------- one question

    def _holding_rows(self, q: Any, i: int) -> list[int]:
        """Index rows of the chunks that hold evidence item ``i`` of ``q`` (empty: no chunk holds it)."""
        ev = q.relevant[i]
        d = self.docs.get(ev.doc)
        trace = d.evidence.get((q.id, i)) if d is not None else None
        if trace is None:
            return []
        return [self.table.row_of[(ev.doc, c)] for c in trace.holding if (ev.doc, c) in self.table.row_of]

    def _listing(self, q: Any, ranked: list[set[int]], ann_rank: list[int], top1: float | None,
                 scores: dict[int, float | None] | None = None, calls: int = 0) -> dict[str, Any]:
        """What ``questions/<pipeline>.jsonl`` shows of one question (the detail of its ``retrieval.rr`` row): its
        text, ``embedding_calls`` (query embeddings computed for it: 0 when cached or not needed) and the top
        (largest k) results ``{rank, doc, chunk, start, end, score, holds, hit}``, ``start`` and ``end`` the
        smallest reference interval holding the chunk's reference characters (None without one), ``score`` the
        retriever's for that result (``scores``: chunk row -> its score at its first rank; without them the top-1
        score at rank 1 only), ``holds`` the evidence items the chunk holds; and ``relevant``: every chunk of the
        pipeline that holds an evidence item ``{item, doc, chunk, start, end}`` (returned or not: the qrels of
        ``runs/``, `ingestaudit.report.questions`)."""
        def where(j: int) -> tuple[str, int, tuple[int, int] | None]:
            doc_id, c = self.table.rows[j]
            refs = self.docs[doc_id].ref_intervals
            return doc_id, c, refs[c] if c < len(refs) else None

        relevant = []  # every chunk of this pipeline that holds an evidence item (the qrels' relevant chunks)
        for i in range(len(q.relevant)):
            for j in self._holding_rows(q, i):
                doc_id, c, span = where(j)
                relevant.append({"item": i, "doc": doc_id, "chunk": c, "start": span[0] if span else None,
                                 "end": span[1] if span else None})
        results = []
        for rank, (j, held) in enumerate(zip(ann_rank[:max(self.ks)], ranked), 1):
            doc_id, c, span = where(j)
            results.append({"rank": rank, "doc": doc_id, "chunk": c, "start": span[0] if span else None,
                            "end": span[1] if span else None,
                            "score": scores.get(j) if scores is not None else top1 if rank == 1 else None,
                            "holds": sorted(held), "hit": bool(held)})
        return {"question": q.question, "results": results, "relevant": relevant, "embedding_calls": int(calls)}

    def _question(self, out: PipelineResult, q: Any, cls: str, ann_rank: list[int], exact_rank: list[int],
                  allowed: np.ndarray | None, waterfall: dict[str, dict[str, int]], top1: float | None = None,
                  scores: dict[int, float | None] | None = None, calls: int = 0) -> None:
        from ingestaudit.metrics.context import RankedChunk, budget_recall, context_scores
        from ingestaudit.metrics.ranking import ranking_metrics

        grades = {i: ev.grade for i, ev in enumerate(q.relevant)}
        held = [self._holding_rows(q, i) for i in range(len(q.relevant))]
        holds: dict[int, set[int]] = {}  # chunk row -> evidence items it holds
        for i, rows in enumerate(held):
            for j in rows:
                holds.setdefault(j, set()).add(i)
        ranked = [holds.get(j, set()) for j in ann_rank]
        rates = ranking_metrics(ranked, grades, self.ks)
        terms = {"ap": ("precision_sum", "evidence_items"), "ndcg": ("dcg", "ideal_dcg")}
        emit = [("rr", "retrieval.rr"), ("ap", "retrieval.ap")]
        emit += [(f"{m}@{k}", f"retrieval.{m}@{k}") for k in self.ks for m in ("hit", "recall", "precision", "ndcg")]
        for key, metric in emit:
            r = rates[key]
            base = key.split("@", 1)[0]
            if base in terms:  # a per-question value / 1: its mean over questions is MAP, mean nDCG (rr is already)
                num, den = terms[base]
                score = Score.ratio(metric, r.value, 1, detail={num: r.numerator, den: r.denominator})
            elif key == "rr":  # the question's results, for questions/<pipeline>.jsonl (ingestaudit.report.questions)
                score = Score.ratio(metric, r.numerator, r.denominator, detail=self._listing(q, ranked, ann_rank, top1,
                                                                                        scores, calls))
            else:
                score = Score.ratio(metric, r.numerator, r.denominator)
            out.item_scores.append((q.id, "question", cls, score))
        spans = [(ev.doc, ev.start, ev.end) for ev in q.relevant if ev.kind == "span"]
        pieces = [self._covered(q, j) for j in ann_rank]
        context = [RankedChunk(len(self.docs[self.table.rows[j][0]].texts[self.table.rows[j][1]]), tuple(p))
                   for j, p in zip(ann_rank, pieces)]
        for k in self.ks:
            scores = context_scores(context, spans, k, evidence_overlap=self.a.evidence_overlap)
            rows = [("span_recall", "recall"), ("span_precision", "precision"), ("iou", "iou")]
            for name, key in rows:
                r = scores[key]
                out.item_scores.append((q.id, "question", cls, Score.ratio(
                    f"retrieval.{name}@{k}", r.numerator, r.denominator) if spans else Score.missing(
                    f"retrieval.{name}@{k}", State.NO_REFERENCE, "no span evidence")))
            out.item_scores.append((q.id, "question", cls, Score.ratio(
                f"retrieval.context_chars@{k}", scores["chars"].numerator, 1)))
        for b in self.a.budgets:
            r = budget_recall(context, spans, b, evidence_overlap=self.a.evidence_overlap)
            out.item_scores.append((q.id, "question", cls, Score.ratio(
                f"retrieval.span_recall@{b}ch", r.numerator, r.denominator) if spans else Score.missing(
                f"retrieval.span_recall@{b}ch", State.NO_REFERENCE, "no span evidence")))
        allowed_set = None if allowed is None else set(allowed.tolist())
        self._filters(out, q, cls, held, ann_rank, allowed_set)
        exact_pos = {j: p for p, j in enumerate(exact_rank)}
        ann_pos = {j: p for p, j in enumerate(ann_rank)}
        for k in self.ks:
            counts = dict.fromkeys(OUTCOMES, 0)
            items = []
            for i, ev in enumerate(q.relevant):
                outcome = self._outcome(q, i, held[i], k, exact_pos, ann_pos, allowed_set)
                counts[outcome] += 1
                items.append({"item": i, "doc": ev.doc, "kind": ev.kind, "outcome": outcome})
            for o in OUTCOMES:
                out.item_scores.append((q.id, "question", cls, Score.ratio(
                    f"retrieval.outcome@{k}", counts[o], len(q.relevant), label=o,
                    detail={"evidence": items} if counts[o] else {})))
            if k == max(self.ks):
                by = waterfall.setdefault(cls, dict.fromkeys(OUTCOMES, 0))
                for o in OUTCOMES:
                    by[o] += counts[o]

    def _outcome(self, q: Any, i: int, rows: list[int], k: int, exact_pos: dict[int, int],
                 ann_pos: dict[int, int], allowed: set[int] | None) -> str:
        """The first stage that lost evidence item ``i`` at cutoff ``k`` (module docstring). A document whose chunk
        set is empty (the cleaner removed its text, the chunker returned nothing) keeps its evidence trace, so the
        loss goes to the stage that caused it, not to parsing."""
        thr = self.ctx.min_span_coverage
        ev = q.relevant[i]
        d = self.docs.get(ev.doc)
        trace = d.evidence.get((q.id, i)) if d is not None else None
        if trace is not None and trace.label_unmatched:  # no heading of the reference text matches the label either
            return "label_unmatched"
        if trace is None or trace.parsed < thr:  # no output for the document at all, or the text lost in parsing
            return "lost_in_parsing"
        if trace.cleaned < thr:
            return "lost_in_cleaning"
        if not rows:
            return "split_by_chunking"
        if any(ann_pos.get(j, k) < k for j in rows):  # as returned, even against the filter (a violation)
            return "retrieved"
        if allowed is not None and not any(j in allowed for j in rows):
            if any(self.table.passes_as_labelled(q.filter, j) for j in rows):
                return "excluded_by_enrichment"
            return "excluded_by_filter"
        if any(exact_pos.get(j, k) < k for j in rows):
            return "missed_by_ann"
        return "missed_by_ranking"

    def _covered(self, q: Any, row: int) -> list[tuple[str, int, int, int]]:
        """Reference intervals of the question's evidence spans that chunk ``row`` covers, each with where it
        starts in the chunk (`ingestaudit.metrics.context.Piece`)."""
        doc_id, c = self.table.rows[row]
        d = self.docs[doc_id]
        out = []
        for i, ev in enumerate(q.relevant):
            if ev.doc == doc_id and ev.kind == "span":
                trace = d.evidence.get((q.id, i))
                if trace is not None:
                    runs = trace.covered.get(c, [])
                    out += [(doc_id, s, e, off) for (s, e), off in zip(runs, trace.offsets[c] if runs else [])]
        return out

    def _filters(self, out: PipelineResult, q: Any, cls: str, held: list[list[int]], ann_rank: list[int],
                 allowed: set[int] | None) -> None:
        """False exclusion (question level and per item; the waterfall's notion) and filter violations."""
        names = ("retrieval.filter_false_exclusion", "retrieval.filter_excluded_items", "retrieval.filter_violation")
        if allowed is None:
            for n in names:
                out.item_scores.append((q.id, "question", cls, Score.missing(n, State.NO_REFERENCE, "no filter")))
            return
        excluded = [i for i, rows in enumerate(held) if rows and not any(j in allowed for j in rows)]
        unheld = [i for i, rows in enumerate(held) if not rows]
        detail = {"excluded_items": excluded, "items_no_chunk_holds": unheld, "filter": q.filter}
        out.item_scores.append((q.id, "question", cls, Score.ratio(
            names[0], 1 if len(excluded) == len(q.relevant) else 0, 1, detail=detail)))
        out.item_scores.append((q.id, "question", cls, Score.ratio(names[1], len(excluded), len(q.relevant),
                                                                   detail=detail)))
        violating = [p + 1 for p, j in enumerate(ann_rank) if j not in allowed]
        if ann_rank:
            out.item_scores.append((q.id, "question", cls, Score.ratio(
                names[2], len(violating), len(ann_rank), detail={"ranks": violating} if violating else {})))
        else:
            out.item_scores.append((q.id, "question", cls, Score.missing(
                names[2], State.NO_REFERENCE, "nothing returned")))

    def _all_missing(self, out: PipelineResult, qid: str, cls: str, state: State, reason: str,
                     detail: dict[str, Any] | None = None, rr_detail: dict[str, Any] | None = None) -> None:
        """Every row of question ``qid`` in ``state`` with ``reason`` (and ``detail``); ``rr_detail`` is added to the
        ``retrieval.rr`` row's (an out-of-scope question's results, for ``questions/<pipeline>.jsonl``)."""
        for spec in self.a.metrics:
            if spec.name == "retrieval.abstention_auroc":
                continue
            labels = OUTCOMES if spec.name.startswith("retrieval.outcome@") else ("",)
            if state is State.NO_REFERENCE and spec.name.startswith("retrieval.outcome@"):
                continue  # an out-of-scope question has no evidence item to place in the waterfall
            for label in labels:
                extra = {**(detail or {}), **rr_detail} if rr_detail and spec.name == "retrieval.rr" else detail
                out.item_scores.append((qid, "question", cls,
                                        Score.missing(spec.name, state, reason, label=label, detail=extra)))

    # ------------------------------------------------------------------------------------------- pipeline level

    @staticmethod
    def _note_confidence(top1: dict[str, float], unscored: dict[str, int], qid: str, conf: float | None) -> None:
        if conf is None:
            unscored["no_score"] += 1  # results without a score (a user's file may omit it)
        else:
            top1[qid] = conf

    def _auroc(self, top1: dict[str, float], unscored: dict[str, int]) -> list[tuple[str, Score, int]]:
        qs = self.ctx.questions
        pos = [top1[q.id] for q in qs if q.answerable and q.id in top1]
        neg = [top1[q.id] for q in qs if not q.answerable and q.id in top1]
        detail = {"answerable": len(pos), "out_of_scope": len(neg),
                  "no_result": sum(1 for v in top1.values() if v == -np.inf), "left_out": dict(unscored),
                  "confidence": "top-1 score" if self.sign > 0 else "minus the top-1 L2 distance"}
        if not pos or not neg:
            return [("__all__", Score.missing("retrieval.abstention_auroc", State.NO_REFERENCE,
                                              "needs answerable and out-of-scope questions", detail=detail), 0)]
        return [("__all__", Score("retrieval.abstention_auroc", auroc(pos, neg), detail=detail),
                 len(pos) + len(neg))]

    def _embedding_cost(self, qstats: dict[str, int]) -> dict[str, Any]:
        """What embedding cost this pipeline: chunk and question texts, and this run's model work (cache misses)."""
        embedded = [d for d in self.ctx.docs if d.vectors is not None]
        chunk_stats: dict[str, int] = {}
        for d in embedded:
            for key, v in (d.embed_stats or {}).items():
                chunk_stats[key] = chunk_stats.get(key, 0) + int(v)
        work = {key: chunk_stats.get(key, 0) + qstats.get(key, 0) for key in ("calls", "misses", "hits",
                                                                               "tokens_embedded")}
        return {"chunk_texts": int(sum(len(d.texts) for d in embedded)),
                "chunk_word_pieces": int(sum(sum(d.tokens) for d in embedded)),
                "question_texts": self.questions_embedded,
                "model_calls": work["calls"], "texts_embedded": work["misses"], "cache_hits": work["hits"],
                "tokens_embedded": work["tokens_embedded"],
                "method": "model_calls, texts_embedded and tokens_embedded count this run's embedding-cache misses "
                          "(word pieces the model read, cut to its window, special tokens excluded); "
                          "chunk_word_pieces counts every chunk, uncut"}


def auroc(positives: list[float], negatives: list[float]) -> float:
    """P(a positive scores above a negative) + 0.5 P(tie): the Mann-Whitney form of the area under the ROC curve
    (Hanley & McNeil 1982), in [0, 1]. Scores may be ``-inf`` (ties with each other count one half).

    Worked example: positives [0.9, 0.5], negatives [0.5, 0.1]: 3 wins and 1 tie of 4 pairs = 0.875.

    Raises:
        ValueError: an empty side, or a NaN score.
    """
    if not positives or not negatives:
        raise ValueError("auroc needs at least one positive and one negative")
    p = np.asarray(positives, dtype=np.float64)[:, None]
    n = np.asarray(negatives, dtype=np.float64)[None, :]
    if np.isnan(p).any() or np.isnan(n).any():
        raise ValueError("auroc scores must not be NaN")
    return float(((p > n).sum() + 0.5 * (p == n).sum()) / (p.size * n.size))


def _nearest_rank(values: list[float], pct: float) -> float | None:
    """The nearest-rank percentile of the finite ``values`` (the ceil(pct/100 * n)-th smallest, n >= 1; Hyndman &
    Fan's definition 1 without interpolation), None when none is finite. ``[5, 1, 4, 2, 3]``: p50 3, p95 5."""
    ordered = sorted(v for v in values if np.isfinite(v))
    if not ordered:
        return None
    return ordered[max(0, int(np.ceil(pct / 100 * len(ordered))) - 1)]


def _latency_summary(latencies: list[float]) -> dict[str, Any]:
    """p50 / p95 (nearest rank, milliseconds) over the queries that were searched; a query whose filter let nothing
    through was not searched (NaN from `timed_search`) and is counted apart, never a latency."""
    finite = [float(v) for v in latencies if np.isfinite(v)]
    return {"p50": _nearest_rank(finite, 50), "p95": _nearest_rank(finite, 95), "n": len(finite),
            "not_searched": len(latencies) - len(finite), "method": "nearest rank"}
