"""The retrieve step of one pipeline: the ranked results of every labelled question, computed once and handed to
the retrieval auditor (`ingestaudit.retrieved.Retrieved`).

Sources, first that applies: a precomputed pipeline's ``retrieval.jsonl`` (DESIGN.md, "precomputed outputs"; an
unreadable one makes every question an ``error``, never the search in its place); nothing to search (no chunk:
every question returns nothing); a retriever other than ``dense`` (`ingestaudit.stages.retrievers`, the pipeline's
``retriever``: ``bm25``, ``hybrid`` or a user's; a hybrid's ``dense`` lanes search the index step's approximate
index; questions are embedded only when the retriever reads vectors, and its chunks only when some auditor needs
them: `needs_chunk_vectors`); the built-in ``dense`` retriever: each question embedded with the pipeline's embedder and searched in the exact and
the approximate index of the pipeline's index step (`ingestaudit.stages.index_step`), among the chunks its metadata
filter lets through (a filter applied inside the search, as a vector store does).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from ingestaudit.inputs import InputFileError, read_input_text
from ingestaudit.jsonlimits import jsonl_lines
from ingestaudit.output_schemas import check_retrieval_keys
from ingestaudit.retrieved import ChunkTable, Rank, Retrieved
from ingestaudit.stages.index_step import IndexStep


def needs_chunk_vectors(pipeline: Any) -> bool:
    """Whether ``pipeline``'s retrieve step reads chunk vectors: False for a retriever that reads texts only
    (``bm25``, a hybrid of such lanes), so the runner need not embed the chunks for the retrieval audit."""
    from ingestaudit.stages.retrievers import retriever_needs_vectors

    choice = pipeline.stage("retriever")
    return retriever_needs_vectors(choice.use, choice.kwargs())


def user_results_file(folder: Path | None) -> Path | None:
    """A precomputed pipeline's ``retrieval.jsonl`` when its outputs folder holds an entry of that name (a FIFO or
    a broken link too: reading it then fails, naming it, and the search is never run in its place); else None."""
    if folder is None or not os.path.lexists(folder / "retrieval.jsonl"):
        return None
    return folder / "retrieval.jsonl"


class RetrieveStep:
    """One pipeline's retrieve step: ``step(depth, exact_k)`` is the `Retrieved` of its questions, computed on the
    first call for those cut-offs (module docstring).

    Args:
        ctx: the pipeline's `ingestaudit.auditors.base.PipelineContext` (pipeline, documents, questions, question
            embedder, limits).
        index: the pipeline's `IndexStep` (shared with the index audit).
    """

    def __init__(self, ctx: Any, index: IndexStep):
        self.ctx, self.index = ctx, index
        self.docs = {d.doc_id: d for d in ctx.docs}
        self._table: ChunkTable | None = None
        self._done: dict[tuple[int, int], Retrieved] = {}
        self.depth = 0
        self.higher_is_closer = True
        self.questions_embedded = 0

    @property
    def table(self) -> ChunkTable:
        """The pipeline's chunk table (built on first use)."""
        if self._table is None:
            self._table = ChunkTable.of(self.ctx.docs, with_vectors=needs_chunk_vectors(self.ctx.pipeline))
        return self._table

    def __call__(self, depth: int, exact_k: int) -> Retrieved:
        """The ranked results: ``depth`` served results per question and ``exact_k`` exact ones (dense only).
        Never raises for a bad source: a retriever or index that fails makes every question an ``error`` (its
        message in ``failures`` once)."""
        key = (int(depth), int(exact_k))
        if key not in self._done:
            from ingestaudit.step_times import timed

            with timed("retrieve"):
                self._done[key] = self._run(*key)
        return self._done[key]

    def _run(self, depth: int, kmax: int) -> Retrieved:
        self.depth, self.higher_is_closer, self.questions_embedded = depth, True, 0
        qs = self.ctx.questions
        self.scores: list[list[float | None] | None] = [None] * len(qs)  # served scores per question
        self.calls = [0] * len(qs)  # query embeddings computed per question
        allowed = [self.table.allowed(q.filter) for q in qs]
        retriever = self.ctx.pipeline.stage("retriever")
        user = self._user_results()
        qstats: dict[str, int] = {}
        failures: list[str] = []
        if isinstance(user, str):  # an unreadable retrieval.jsonl: every question is an error, the file named
            failures.append(user)
            ranks: list[Rank] = [(user, user, None)] * len(qs)
            latencies: list[float] = []
            timings: dict[str, Any] = {"source": "retrieval.jsonl (unreadable)"}
        elif user is not None:
            ranks, latencies = user["ranks"], user["latency_ms"]
            failures += user["problems"]
            timings = {"source": user["path"], "index_build_s": None}
        elif not self.table.rows:  # nothing to search: every question returns nothing and scores 0, never dropped
            ranks, latencies = [([], [], None)] * len(qs), []
            timings = {"source": "none: the pipeline produced no chunk for any document", "index_build_s": None}
        else:
            try:
                if retriever.use != "dense":
                    ranks, latencies, timings, qstats = self._plugin(retriever, qs, allowed, failures)
                else:
                    ranks, latencies, timings, qstats = self._search(qs, allowed, kmax)
            except Exception as exc:  # an index that cannot be built or searched: every question an error, once
                msg = f"retriever {retriever.use!r}: {type(exc).__name__}: {exc}"
                failures.append(msg)
                ranks, latencies, timings = [(msg, msg, None)] * len(qs), [], {"retriever": retriever.use}
        return Retrieved(self.table, ranks, latencies, timings, failures, qstats, self.questions_embedded,
                         self.higher_is_closer, self.scores, self.calls)

    def _embed_questions(self, qs: list[Any]) -> tuple[np.ndarray, dict[str, int], float]:
        """Question vectors with the pipeline's embedder, the embedder's counter increments and the wall time."""
        stats = getattr(self.ctx.embed_questions, "stats", None)
        computes = getattr(self.ctx.embed_questions, "computes", None)
        self.calls = list(computes([q.question for q in qs])) if computes is not None else [1] * len(qs)
        before = stats() if stats is not None else {}
        from ingestaudit.step_times import timed

        t0 = time.perf_counter()
        with timed("embed"):
            qvec = np.asarray(self.ctx.embed_questions([q.question for q in qs]), dtype=np.float32)
        seconds = time.perf_counter() - t0
        self.questions_embedded = len(qs)
        after = stats() if stats is not None else {}
        return qvec, {k: int(after.get(k, 0) - before.get(k, 0)) for k in after}, seconds

    def _search(self, qs: list[Any], allowed: list[np.ndarray | None], kmax: int
                ) -> tuple[list[Rank], list[float], dict[str, Any], dict[str, int]]:
        """Per question: the approximate index's ranked chunk rows (``depth`` of them), the exact ranking (``kmax``)
        and the approximate top-1 score; the latencies of the searched queries; timings; question embedding counts.
        Both indexes come from the pipeline's index step (built there once)."""
        settings = self.index.pipeline_settings()
        self.higher_is_closer = settings.higher_is_closer
        exact = self.index.exact(self.table.vectors, settings.metric)
        ann = self.index.ann(self.table.vectors, settings)
        qvec, qstats, embed_s = self._embed_questions(qs)
        ranks, latencies = [], []
        for qi in range(len(qs)):
            _, ex_ids = exact.search(qvec[qi:qi + 1], kmax, allowed=allowed[qi])
            an_scores, an_ids, lat = ann.search(qvec[qi:qi + 1], self.depth, allowed=[allowed[qi]])
            latencies += [float(x) for x in lat]  # NaN: a filter that passes nothing (no search ran)
            ann_rank = [int(i) for i in an_ids[0] if i >= 0]
            self.scores[qi] = [float(x) for x, i in zip(an_scores[0], an_ids[0]) if i >= 0]
            ranks.append((ann_rank, [int(i) for i in ex_ids[0] if i >= 0],
                          float(an_scores[0][0]) if ann_rank else None))
        timings = {"retriever": "dense", "metric": settings.metric,
                   "index_build_s": {"exact": exact.build_seconds, "approximate": ann.build_seconds},
                   "index_memory_bytes": ann.memory_bytes, "question_embedding_s": embed_s}
        return ranks, latencies, timings, qstats

    def _plugin(self, choice: Any, qs: list[Any], allowed: list[np.ndarray | None], failures: list[str]
                ) -> tuple[list[Rank], list[float], dict[str, Any], dict[str, int]]:
        """Rankings from a user retriever (`ingestaudit.stages.retrievers`): its order is the pipeline's, for both
        sides of the waterfall's exact/approximate split. A retriever that fails to load or to index makes every
        question an ``error`` with that message (one failure); one that raises or returns unknown rows in
        ``search`` makes that question an ``error``."""
        from ingestaudit.stages.retrievers import ChunkView, load_retriever

        timings: dict[str, Any] = {"retriever": choice.use, "index_build_s": None}
        step = "load"
        try:
            retriever = load_retriever(choice.use, choice.kwargs())
            step = "index"
            dense = getattr(retriever, "dense_lanes", lambda: [])()
            if dense:  # a hybrid's dense lanes search the index step's approximate index, built once
                search, build_s = self._dense_lane()
                for lane in dense:
                    lane.bind(search)
                timings["dense_lane_index_build_s"] = build_s
            views = [ChunkView(j, doc, self.docs[doc].texts[i], self.docs[doc].pages[i], self.docs[doc].sections[i],
                               self.table.meta[j]) for j, (doc, i) in enumerate(self.table.rows)]
            t0 = time.perf_counter()
            retriever.index(views, self.table.vectors)
            timings["index_build_s"] = {"retriever": time.perf_counter() - t0}
        except Exception as exc:  # every question of this pipeline becomes an error row, reported once
            msg = f"retriever {choice.use!r} failed at {step}: {type(exc).__name__}: {exc}"
            failures.append(msg)
            return [(msg, msg, None)] * len(qs), [], timings, {}
        qvec: Any = [None] * len(qs)
        qstats: dict[str, int] = {}
        if retriever.uses_vectors():
            qvec, qstats, timings["question_embedding_s"] = self._embed_questions(qs)
        ranks, latencies = [], []
        for qi, q in enumerate(qs):
            t0 = time.perf_counter()
            try:
                found = list(retriever.search(q.question, qvec[qi], self.depth, allowed[qi]))
                latencies.append((time.perf_counter() - t0) * 1000)
                rows = [int(r) for r, _ in found]
                bad = [r for r in rows if not 0 <= r < len(self.table.rows)]
                if bad:
                    raise ValueError(f"unknown chunk row {bad[0]} ({len(self.table.rows)} chunks)")
                score = float(found[0][1]) if found else None
                if score is not None and not np.isfinite(score):
                    raise ValueError(f"top-1 score {score!r} is not finite")
            except Exception as exc:  # one question's failure never stops the others
                msg = f"retriever {choice.use!r}: {type(exc).__name__}: {exc}"
                ranks.append((msg, msg, None))
                continue
            ranks.append((rows, rows, score))
            self.scores[qi] = [_finite(s) for _, s in found]
        return ranks, latencies, timings, qstats

    def _dense_lane(self) -> tuple[Any, float]:
        """The search a hybrid's ``dense`` lane runs (the pipeline's approximate index, from the index step) and the
        index's build seconds.

        Raises:
            ValueError, IndexInputError: bad index settings or vectors (the hybrid then fails at ``index``).
        """
        settings = self.index.pipeline_settings()
        ann = self.index.ann(self.table.vectors, settings)

        def search(vector: np.ndarray, k: int, allowed: np.ndarray | None) -> list[tuple[int, float]]:
            scores, ids, _ = ann.search(np.asarray(vector, dtype=np.float32)[None, :], k, allowed=[allowed])
            return [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i >= 0]

        return search, ann.build_seconds

    def _user_results(self) -> dict[str, Any] | str | None:
        """A precomputed pipeline's ``retrieval.jsonl`` (DESIGN.md): per question its ranked chunks (the first
        ``depth``), as rows of this run's chunks, its top-1 score and latency. None when the pipeline has none; a
        message naming the file when it cannot be read (every question is then an ``error``).

        A line that is not a result record (invalid JSON, missing keys, wrong types) makes its question an ``error``
        when the line still names a known question; a line whose question cannot be told, or that names an unknown
        question, is a problem named with its line number (``problems``, each reported once). The valid lines are
        audited; a question that no line names is an ``error`` when some line could not be read (that line may have
        been its own: the message says so and names the first such line), else an empty result (scores 0). A result
        naming an unknown document or chunk, a score that is not a finite number, or a question given twice makes
        that question an ``error`` (message with file and line; a repeat keeps the first line's own problem in its
        message); a ``latency_ms`` that is not a finite number >= 0 is a problem and never a percentile. Exact
        and approximate are not told apart: the ranking is the retriever's, its misses are ``missed_by_ranking``."""
        import json

        path = user_results_file(self.ctx.pipeline.folder)
        if path is None:
            return None
        by_q: dict[str, tuple[Any, Any, float | None]] = {}
        first_line: dict[str, int] = {}
        repeated: set[str] = set()  # questions already given twice: their first repeat's message stands
        latency: list[float] = []
        problems: list[str] = []
        malformed: list[str] = []
        line_scores: dict[str, list[float | None]] = {}
        known = {q.id for q in self.ctx.questions}
        try:  # a FIFO, a device, a file over limits.results_bytes: every question an error, never the dense search
            text = read_input_text(path, max_bytes=self.ctx.input_limits().results_bytes,
                                   limit="limits.results_bytes", bom=True)
        except InputFileError as exc:
            return str(exc)
        lines = jsonl_lines(text)  # on "\n" only: U+2028 inside a string is not a line break
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            rec: Any = None
            try:
                rec = json.loads(line)
                if not isinstance(rec, dict):
                    raise TypeError(f"a line must be a JSON object, not {type(rec).__name__}")
                check_retrieval_keys(rec)  # an unknown key names the valid ones and docs/outputs.md
                qid, results = rec["question"], rec["results"]
                if not isinstance(qid, str) or not isinstance(results, list):
                    raise TypeError("'question' must be a string and 'results' a list")
            except (KeyError, ValueError, TypeError, RecursionError) as exc:
                why = f"{path}: line {n}: " + (f"missing key {exc}" if isinstance(exc, KeyError) else str(exc))
                qid = rec.get("question") if isinstance(rec, dict) else None
                if isinstance(qid, str) and qid in known:  # the line names its question: that question's error
                    self._put(by_q, first_line, repeated, qid, n, (why, why, None), path)
                else:  # whose results these were cannot be told
                    malformed.append(why)
                continue
            if qid not in known:
                problems.append(f"{path}: line {n}: unknown question {qid!r}")
                continue
            rows: list[int] = []
            problem = None
            for j, r in enumerate(results[:self.depth]):
                row = self._user_row(r)
                if isinstance(row, str):
                    problem = f"{path}: line {n}: results[{j}]: {row}"
                    break
                rows.append(row)
            score = results[0].get("score") if results and isinstance(results[0], dict) else None
            if problem is None and score is not None and (isinstance(score, bool) or not isinstance(
                    score, (int, float)) or not np.isfinite(score)):
                problem = f"{path}: line {n}: results[0]: score {score!r} is not a finite number"
            score = float(score) if problem is None and score is not None else None
            first = self._put(by_q, first_line, repeated, qid, n, (problem or rows, problem or rows, score), path)
            if first and problem is None:
                line_scores[qid] = [_finite(r.get("score")) for r in results[:len(rows)]]
            lat = rec.get("latency_ms")
            if lat is not None and (isinstance(lat, bool) or not isinstance(lat, (int, float))
                                    or not np.isfinite(lat) or lat < 0):
                problems.append(f"{path}: line {n}: latency_ms {lat!r} is not a finite number >= 0: not counted "
                                "in the latency percentiles")
            elif lat is not None and first:  # a repeat's is not counted
                latency.append(float(lat))
        missing: tuple[Any, Any, float | None] = ([], [], None)
        if malformed:
            why = (f"no readable line of {path} names this question, and {len(malformed)} line(s) cannot be read "
                   f"(its results may be on one of them; first: {malformed[0].removeprefix(f'{path}: ')})")
            missing = (why, why, None)
        ranks = [by_q.get(q.id, missing) for q in self.ctx.questions]
        self.scores = [line_scores.get(q.id) for q in self.ctx.questions]
        return {"ranks": ranks, "latency_ms": latency, "path": str(path), "problems": malformed + problems}

    @staticmethod
    def _put(by_q: dict[str, tuple[Any, Any, float | None]], first_line: dict[str, int], repeated: set[str],
             qid: str, n: int, rank: tuple[Any, Any, float | None], path: Path) -> bool:
        """Record line ``n``'s result for ``qid``; True when it is the question's first line. A question given twice
        is an error whose message keeps the first line's own problem, if it had one; a later repeat changes
        nothing."""
        if qid not in first_line:
            first_line[qid] = n
            by_q[qid] = rank
            return True
        if qid in repeated:
            return False
        repeated.add(qid)
        msg = f"{path}: line {n}: question {qid!r} repeated (first on line {first_line[qid]})"
        earlier = by_q[qid][0]
        if isinstance(earlier, str):
            msg += f"; line {first_line[qid]}: {earlier.removeprefix(f'{path}: line {first_line[qid]}: ')}"
        by_q[qid] = (msg, msg, None)
        return False

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
        if (doc, idx) not in self.table.row_of:
            return f"unknown chunk {chunk!r} of {doc!r} ({len(d.texts)} chunks)"
        return self.table.row_of[(doc, idx)]


def with_index_steps(ctx: Any) -> Any:
    """``ctx`` (a `PipelineContext`) with its pipeline's index step (``ctx.index``) and retrieve step
    (``ctx.retrieve``) attached, one of each per pipeline: what the runner hands the index and retrieval auditors.
    Nothing is built until an auditor asks."""
    ctx.index = IndexStep.for_pipeline(ctx.pipeline, ctx.seed)
    ctx.retrieve = RetrieveStep(ctx, ctx.index)
    return ctx


def _finite(x: Any) -> float | None:
    """A result's score as a float, None when it is absent or not a finite number (it is then never shown)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not np.isfinite(x):
        return None
    return float(x)
