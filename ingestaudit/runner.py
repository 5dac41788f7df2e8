"""Orchestration: corpus -> pipelines (parser -> cleaner -> chunker -> embedder) -> auditors -> store -> report.

Each (document, pipeline) pair is one task, run by an executor (`ingestaudit.executors`: serial, a pebble process pool
or Dask) under a per-task time budget, so a hang or a crash in a parser becomes an ``error`` row for that document and
the run goes on. Memory stays flat in corpus size (issue 14): truths are loaded once and spilled to disk
(`ingestaudit.spill.TruthSpill`), tasks are built when an executor asks for them, each task's rows go to the
measurement store as soon as all pipelines of its document have reported (`ingestaudit.store.StoreWriter`, arrival
order, sorted at the end), corpus-level stages receive compact artefacts computed in the worker (signatures,
labels, counts: `ingestaudit.auditors.base.Auditor.artefact`, in `ingestaudit.document_steps`) and pipeline stages
their chunk vectors as views of one memory-mapped file in corpus order (`ingestaudit.spill.VectorSpill`). Summaries,
paired tests and the failure list are computed from the sorted store. Arrival order never reaches an output, so every executor and
worker count gives byte-identical ``report.json`` and ``measurements.parquet``.

Chunk and question embeddings run with `EMBED_THREADS` torch threads in every process (workers and the main
process alike), so the vectors, and every index and retrieval number, cannot depend on the executor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ingestaudit import __version__, step_times
from ingestaudit.auditors.base import ArtefactItem, Auditor, PipelineContext, Scope
from ingestaudit.auditors.registry import UnknownStage, load_auditor, stage_names
from ingestaudit.chain import DocChunks
from ingestaudit.config import Config, table_limit_problem
from ingestaudit.corpus import Corpus
from ingestaudit.document import Document
from ingestaudit.document_steps import (CHAIN_STAGES, EMBED_THREADS, Task, TaskResult, embedding_threads, failed,
                                        forget_last_parse, packed, run_task, skipped, stage_impl, worker_init)
from ingestaudit.document_steps import auditor as _auditor
from ingestaudit.measurement import Measurement, State
from ingestaudit.parsers.routing import parser_spec
from ingestaudit.pipeline import Pipeline
from ingestaudit.pipeline_provenance import environment, pipeline_info, stage_info
from ingestaudit.questions import QuestionSet
from ingestaudit.report.aggregate import Summarizer, corpus_summary_row
from ingestaudit.report.paired import paired_tests
from ingestaudit.report.schema import (CorpusInfo, Failure, MeasurementRow, ParseWarning, Report, StageDetail,
                                       StoreRef, SummaryRow, ToolInfo)
from ingestaudit.report.tables import all_headline_keys
from ingestaudit.stages.retrieve_step import with_index_steps
from ingestaudit.steps import with_step
from ingestaudit.truth import Truth
from ingestaudit.truth_pass import evidence_by_doc, load_question_set, load_truths

__all__ = ["CHAIN_STAGES", "EMBED_THREADS", "Task", "TaskResult", "release_memory", "run", "run_task",
           "select_stages"]


def _stream(tasks: Sequence[Task], executor: Any, timeout_s: float) -> Iterator[tuple[int, TaskResult]]:
    """``(index, result)`` of every task as the ``executor`` (started) finishes it; a timeout or a dead worker is
    `ingestaudit.document_steps.failed` for that task, the same on every executor."""
    from ingestaudit.executors import TaskFailure

    for j, res in executor.map(run_task, tasks, timeout_s):
        yield j, (failed(tasks[j], res.message) if isinstance(res, TaskFailure) else res)


class _Subset(Sequence[Task]):
    """The tasks at ``indices`` of a lazy task list, built when an executor asks for one."""

    def __init__(self, tasks: Sequence[Task], indices: Sequence[int]) -> None:
        self.tasks, self.indices = tasks, indices

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, j: int) -> Task:  # type: ignore[override]
        return self.tasks[self.indices[j]]

    def without_truth(self, j: int) -> Task:
        return self.tasks.without_truth(self.indices[j])  # type: ignore[attr-defined]


class _Tasks(Sequence[Task]):
    """Every document x pipeline task in canonical order (document-major, then pipeline order), built on demand:
    index ``i`` is document ``i // P`` with pipeline ``i % P``; its truth is read back from the truth spill."""

    def __init__(self, corpus: Corpus, pipelines: list[Pipeline], build: Callable[[Document, Pipeline, bool], Task]):
        self.docs, self.pipelines, self.build = corpus.documents, pipelines, build

    def __len__(self) -> int:
        return len(self.docs) * len(self.pipelines)

    def __getitem__(self, i: int) -> Task:  # type: ignore[override]
        d, p = divmod(i, len(self.pipelines))
        return self.build(self.docs[d], self.pipelines[p], True)

    def without_truth(self, i: int) -> Task:
        """Task ``i`` with an empty truth and no evidence, for what a result's bookkeeping reads of its task (the
        document, class and pipeline): the truth is not read back from the spill a second time."""
        d, p = divmod(i, len(self.pipelines))
        return self.build(self.docs[d], self.pipelines[p], False)


def _pickle_problem(obj: Any) -> str:
    """``"Type: message"`` when ``obj`` does not pickle (a structure nested too deeply, an object that does not
    pickle), else ``""``."""
    import pickle

    try:
        pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # RecursionError, PicklingError, TypeError, AttributeError...
        return f"{type(exc).__name__}: {exc}"
    return ""


def select_stages(requested: list[str], truths: list[Truth], options: dict[str, dict[str, Any]], *,
                  chain_default: bool = False) -> list[str]:
    """The stages to audit: ``requested`` when given (validated), else every stage that applies to some document;
    the chain stages (`CHAIN_STAGES`) by default only when ``chain_default`` (the corpus has questions or the run
    configures pipelines).

    Raises:
        UnknownStage: a requested stage does not exist.
    """
    auditors = _candidate_auditors(requested, options)  # fail early, in the main process, with the table named
    if requested:
        return [s for s in stage_names() if s in requested]
    return [s for s in stage_names() if (chain_default if s in CHAIN_STAGES
                                          else any(auditors[s].applies(t) for t in truths))]


def section_threshold(auditor_options: dict[str, dict[str, Any]]) -> float:
    """The similarity at which a section evidence item matches a heading: the layout audit's ``threshold``
    (``[auditor_options.layout] threshold``, validated with the layout auditor's other options; default
    `ingestaudit.metrics.layout.DEFAULT_THRESHOLD`), so both audits match headings alike."""
    from ingestaudit.auditors.layout import LayoutAuditor

    return LayoutAuditor(**{k: v for k, v in (auditor_options.get("layout") or {}).items()
                            if k == "threshold"}).threshold


def _with_seed(options: dict[str, dict[str, Any]], seed: int, stages: list[str] | None = None
               ) -> dict[str, dict[str, Any]]:
    """Give the run's seed to every auditor of ``stages`` (default: every stage) that takes a ``seed`` option and
    was not given one explicitly. Only those auditors' modules are imported."""
    from ingestaudit.auditors.registry import takes_run_seed

    out = {k: dict(v) for k, v in options.items()}
    for stage in (s for s in stage_names() if not stages or s in stages):
        if takes_run_seed(stage):
            out.setdefault(stage, {}).setdefault("seed", seed)
    return out


def _unsupported_everywhere(tasks: list[Task], results: list[TaskResult]) -> None:
    """A file type that no parser of the run reads is an error of that document (an unsupported file), not a skip:
    its rows turn from ``skipped`` to ``error`` and a failure names the file type; so do the questions whose
    evidence is on it (its chunk artefact's state), listed once among the failures and in no verdict. A type that
    only some parsers read stays ``skipped`` for the others (PyMuPDF on a PNG). A routed pipeline that cannot read
    the document is already an error (`Unrouted`) and counts as not reading it."""
    by_doc: dict[str, list[int]] = {}
    for i, t in enumerate(tasks):
        by_doc.setdefault(t.document.doc_id, []).append(i)
    for idx in by_doc.values():
        skipped = [i for i in idx if results[i].parse_state is State.SKIPPED]
        if not skipped or not all(results[i].parse_state is State.SKIPPED or results[i].unread for i in idx):
            continue
        for i in skipped:
            res, doc = packed(results[i]), tasks[i].document
            msg = f"unsupported file type {doc.suffix or '(none)'}: no parser of this run reads {doc.path.name}"
            res.measurements = [_with_state(r, State.ERROR, msg) if r[10] == State.SKIPPED.value else r
                                for r in res.measurements]
            res.failures = [*res.failures, ("parse", msg)]
            res.parse_state, res.parse_reason = State.ERROR, msg
            if res.chunks is not None:  # its questions are errors too (issue 25), never skipped
                res.chunks.state, res.chunks.reason = State.ERROR, msg


def _with_state(rec: tuple, state: State, reason: str) -> tuple:
    """A store record (`ingestaudit.store.record`) without its value, in ``state``, with ``reason`` in its detail (as
    `Measurement.with_state`)."""
    import json

    from ingestaudit.store import detail_json

    return (rec[:7] + (None,) + rec[8:10] + (state.value, detail_json({**json.loads(rec[11]), "reason": reason}))
            + rec[12:])


def _unreported_errors(rows: list[MeasurementRow], failures: list[Failure]) -> list[Failure]:
    """A failure for every error row whose document, parser and stage no failure names yet (an auditor that
    returned error rows instead of raising, e.g. an unavailable cleaner), so every renderer shows the cause."""
    known = {(f.item, f.pipeline, f.stage) for f in failures}
    unparsed = {(f.item, f.pipeline) for f in failures if f.stage == "parse"}  # one failure per unparsed document
    bad_truth = {f.item for f in failures if f.stage == "truth"}  # rows citing a label problem: reported there
    out: dict[tuple[str, str, str, str], Failure] = {}
    for r in rows:
        if (r.state != State.ERROR.value or (r.item, r.pipeline, r.stage) in known
                or (r.item, r.pipeline) in unparsed or (r.item in bad_truth and "label_problems" in r.detail)
                or r.detail.get("failure_listed")):  # its cause is a failure already (a whole-pipeline problem)
            continue
        message = str(r.detail.get("reason") or r.detail.get("message") or "error")
        out.setdefault((r.item, r.pipeline, r.stage, message),
                       Failure(item=r.item, pipeline=r.pipeline, stage=r.stage, message=message))
    return list(out.values())


def _row(m: Measurement) -> MeasurementRow:
    return MeasurementRow(item=m.item, item_kind=m.item_kind, doc_class=m.doc_class, pipeline=m.pipeline,
                          stage=m.stage, metric=m.metric,
                          label=m.label, value=m.value, numerator=m.numerator, denominator=m.denominator,
                          state=m.state.value, detail=m.detail, parser=m.parser)


ROW_SLICE = 2000
"""Rows of a corpus or pipeline stage converted and stored at a time."""


RELEASE_ROWS = 100_000
"""Below this many rows a phase freed too little to be worth a full garbage collection (which costs up to a second
in a large process, such as a test session)."""


def release_memory(rows: int) -> None:
    """Collect garbage and hand the C heap's free pages back to the system (glibc ``malloc_trim``; elsewhere only
    the collection): a phase that freed many objects (the artefacts of a corpus stage, the summary's arrays) then
    leaves no peak behind for the next one. Does nothing when the phase handled fewer than `RELEASE_ROWS` rows
    (``rows``). Changes no result."""
    import ctypes
    import gc

    if rows < RELEASE_ROWS:
        return
    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


class _Collector:
    """Takes task results as they arrive and keeps only what the rest of the run needs: rows go to the store once
    every pipeline of their document has reported (`_unsupported_everywhere` needs them all), failures and parse
    warnings are listed, corpus-level artefacts (`Auditor.stow` may move parts of them to disk) and chunk
    artefacts (vectors spilled, `VectorSpill`) are kept per stage and pipeline with their document's position."""

    def __init__(self, store: Any, pipelines: list[Pipeline], stage_args: tuple, work: Path, *,
                 spill_vectors: bool) -> None:
        from ingestaudit.spill import VectorSpill

        self.store = store
        self.pipelines = pipelines
        self.n = len(pipelines)
        self.corpus = [(s, _auditor(s, o)) for s, o in stage_args if _auditor(s, o).scope is Scope.CORPUS]
        self.work = work
        self.pending: dict[int, dict[int, tuple[Task, TaskResult, bool]]] = {}
        self.failures: list[Failure] = []
        self.warned: list[ParseWarning] = []
        self.artefacts: dict[tuple[str, int], list[tuple[int, ArtefactItem]]] = {}
        self.chunks: dict[int, list[tuple[int, DocChunks]]] = {}
        self.vectors = [VectorSpill(work / "vectors", f"pipeline-{p}") for p in range(self.n)] if spill_vectors \
            else None
        self.step_seconds: dict[str, dict[str, float]] = {p.name: {} for p in pipelines}  # summed task times
        self.cache_counts: dict[str, dict[str, int]] = {p.name: {} for p in pipelines}  # step cache hits, misses

    def take_times(self, pipeline: str) -> None:
        """Add this process's `ingestaudit.step_times` totals (taken) to ``pipeline``'s."""
        step_times.add(self.step_seconds[pipeline], step_times.take())

    def add(self, index: int, task: Task, result: TaskResult, runnable: bool) -> None:
        """The result of task ``index`` (canonical position); ``runnable``: it was sent to the executor."""
        d, p = divmod(index, self.n)
        step_times.add(self.step_seconds[task.pipeline.name], result.step_seconds)
        counts = self.cache_counts[task.pipeline.name]
        for key, n in result.cache_counts.items():
            counts[key] = counts.get(key, 0) + n
        slot = self.pending.setdefault(d, {})
        slot[p] = (task, result, runnable)
        if len(slot) == self.n:
            self._finish(d, [slot[k] for k in range(self.n)])
            del self.pending[d]

    def _finish(self, d: int, done: list[tuple[Task, TaskResult, bool]]) -> None:
        if all(r for _, _, r in done):
            _unsupported_everywhere([t for t, _, _ in done], [res for _, res, _ in done])
        for p, (task, res, _) in enumerate(done):
            doc_id, pipe = task.document.doc_id, task.pipeline.name
            route = task.parser.route_label(task.document)  # the parser column: the route of this document
            self.store.append_records([r[:12] + (route,) for r in packed(res).measurements], 0)
            self.failures += [Failure(item=doc_id, pipeline=pipe, stage=stage, message=msg)
                              for stage, msg in res.failures]
            if res.warning_count:
                self.warned.append(ParseWarning(item=doc_id, pipeline=pipe, count=res.warning_count,
                                                messages=list(res.warnings)))
            for stage, auditor in self.corpus:
                art, msg = res.artefacts.get(stage, (None, ""))
                if res.parse_state is State.OK:
                    state, reason = (State.ERROR, msg) if msg else (State.OK, "")
                else:
                    state, reason = res.parse_state, res.parse_reason
                if state is State.OK:
                    art = with_step(auditor, self.pipelines[p]).stow(art, self.work / "stages" / f"{stage}-{p}")
                self.artefacts.setdefault((stage, p), []).append(
                    (d, ArtefactItem(doc_id, task.doc_class, art, state, reason)))
            if res.chunks is not None:
                chunks = self.vectors[p].add(d, res.chunks) if self.vectors is not None else res.chunks
                self.chunks.setdefault(p, []).append((d, chunks))

    def corpus_items(self, stage: str, p: int) -> list[ArtefactItem]:
        """The artefacts of one stage and pipeline in corpus order (handed over: the collector forgets them)."""
        return [it for _, it in sorted(self.artefacts.pop((stage, p), []), key=lambda t: t[0])]

    def doc_chunks(self, p: int) -> list[DocChunks]:
        """The chunk artefacts of one pipeline in corpus order, vectors as views of one memory-mapped file."""
        got = self.chunks.get(p, [])
        if self.vectors is not None:
            return self.vectors[p].canonical(got)
        return [c for _, c in sorted(got, key=lambda t: t[0])]


def _corpus_stages(collector: _Collector, pipelines: list[Pipeline], stage_args: tuple,
                   contexts: dict[str, tuple[str, ...]], store: Any,
                   parser_of: Callable[[Pipeline, str], str] = lambda p, d: ""
                   ) -> tuple[list[SummaryRow], list[StageDetail], list[Failure]]:
    """Run every corpus-level auditor once per pipeline over its documents' artefacts (`audit_artefacts`); the rows
    go to ``store`` (producer ``1 + stage index``), each with the parser ``parser_of(pipeline, doc_id)``."""
    summary: list[SummaryRow] = []
    details: list[StageDetail] = []
    failures: list[Failure] = []
    for si, (stage, opts) in enumerate(stage_args):
        auditor = _auditor(stage, opts)
        if auditor.scope is not Scope.CORPUS:
            continue
        for p, pipe in enumerate(pipelines):
            items = collector.corpus_items(stage, p)
            try:  # an auditor that reads a step (dedup): the pipeline's step runs here, once per pipeline
                with step_times.timed(f"auditor.{stage}"):
                    result = with_step(auditor, pipe).audit_artefacts(items, contexts.get(stage, ()))
            except Exception as exc:  # one stage failing never stops the report
                msg = f"{type(exc).__name__}: {exc}"
                failures.append(Failure(item="", pipeline=pipe.name, stage=stage, message=msg))
                continue
            finally:
                collector.take_times(pipe.name)
            classes = {i.doc_id: i.doc_class for i in items}
            del items
            first = 0
            while result.doc_scores:  # in slices, each freed once stored: never two copies of every row
                part = result.doc_scores[:ROW_SLICE]
                del result.doc_scores[:ROW_SLICE]
                store.append([Measurement.of(sc, item=doc_id, doc_class=classes[doc_id], pipeline=pipe.name,
                                             parser=parser_of(pipe, doc_id)) for doc_id, sc in part], 1 + si, first)
                first += len(part)
            release_memory(first)
            summary += [corpus_summary_row(sc, pipeline=pipe.name, doc_class=cls, n_docs=n,
                                           unreached=result.unreached.get(cls))
                        for cls, sc, n in result.corpus_scores]
            details += [StageDetail(pipeline=pipe.name, stage=stage, name=name, data=data)
                        for name, data in sorted(result.details.items())]
    return summary, details, failures


def _pipeline_stages(collector: _Collector, pipelines: list[Pipeline], stage_args: tuple, questions: QuestionSet,
                     question_classes: dict[str, str], config: Config, store: Any,
                     rejected: list[tuple[str, str, str]] | None = None, keeper: Any = None
                     ) -> tuple[list[SummaryRow], list[StageDetail], list[Failure], dict[str, Any]]:
    """Run the retrieval and index auditors once per pipeline over the chain artefacts the workers returned
    (``rejected``: the questions that failed validation, as `PipelineContext.rejected_questions`); an auditor's
    pipeline-wide problems (`PipelineResult.failures`) become one failure each. Rows go to ``store`` (producer
    ``1000 + stage index``). Both auditors of a pipeline read one context with its index and retrieve steps
    (`ingestaudit.stages.retrieve_step.with_index_steps`), so each index is built once per pipeline; the returned
    timings hold, per pipeline, each auditor's under its stage and ``["steps"]["index"]`` (``index_builds``,
    ``build_seconds``). ``keeper`` (`ingestaudit.kept_vectors.VectorKeeper`, ``--keep-vectors``): each pipeline's
    chunk and question vectors are written there after its auditors ran (no row nor detail of theirs changes)."""
    summary: list[SummaryRow] = []
    details: list[StageDetail] = []
    failures: list[Failure] = []
    timings: dict[str, Any] = {}
    stages = [(si, stage, _auditor(stage, opts)) for si, (stage, opts) in enumerate(stage_args)
              if _auditor(stage, opts).scope is Scope.PIPELINE]
    if not stages:
        return summary, details, failures, timings
    for p, pipe in enumerate(pipelines):
        step_times.begin("pipeline")  # reading the chunks back, the context; the stages' own keys nest in it
        docs = collector.doc_chunks(p)
        # one index step and one retrieve step per pipeline, read by every pipeline-level auditor
        ctx = with_index_steps(PipelineContext(pipe, docs, list(questions.questions), question_classes,
                                               _question_embedder(pipe, config.run.cache_dir),
                                               config.run.min_span_coverage, config.run.seed, list(rejected or ()),
                                               config.limits))
        for si, stage, auditor in stages:
            try:
                with step_times.timed(f"auditor.{stage}"):
                    result = auditor.audit_pipeline(ctx)
            except Exception as exc:  # one stage failing never stops the report
                msg = f"{type(exc).__name__}: {exc}"
                failures.append(Failure(item="", pipeline=pipe.name, stage=stage, message=msg))
                continue
            failures += [Failure(item="", pipeline=pipe.name, stage=stage, message=m) for m in result.failures]
            first = 0
            while result.item_scores:
                part = result.item_scores[:ROW_SLICE]
                del result.item_scores[:ROW_SLICE]
                store.append([Measurement.of(sc, item=item, doc_class=cls, pipeline=pipe.name, item_kind=kind)
                              for item, kind, cls, sc in part], 1000 + si, first)
                first += len(part)
            summary += [corpus_summary_row(sc, pipeline=pipe.name, doc_class=cls, n_docs=n)
                        for cls, sc, n in result.corpus_scores]
            details += [StageDetail(pipeline=pipe.name, stage=stage, name=name, data=data)
                        for name, data in sorted(result.details.items())]
            if result.timings:
                timings.setdefault(pipe.name, {})[stage] = result.timings
        timings.setdefault(pipe.name, {})["steps"] = {"index": ctx.index.timings()}
        if keeper is not None:
            try:  # a pipeline whose vectors cannot be kept is one failure; its rows and the run go on
                details.append(_keep_vectors(keeper, p, pipe, docs, questions, config))
            except Exception as exc:
                failures.append(Failure(item="", pipeline=pipe.name, stage="embedding",
                                        message=f"--keep-vectors: {type(exc).__name__}: {exc}"))
        del docs, ctx
        step_times.end("pipeline")
        collector.take_times(pipe.name)
    order = {p.name: i for i, p in enumerate(pipelines)}
    stage_pos = {stage: k for k, (_, stage, _) in enumerate(stages)}
    # the order the stages ran in before they ran pipeline by pipeline: stage, then pipeline
    summary.sort(key=lambda r: (stage_pos.get(r.stage, len(stage_pos)), order.get(r.pipeline, -1)))
    details.sort(key=lambda r: (stage_pos.get(r.stage, len(stage_pos)), order.get(r.pipeline, -1)))
    return summary, details, failures, timings


def _keep_vectors(keeper: Any, p: int, pipe: Pipeline, docs: list[DocChunks], questions: QuestionSet,
                  config: Config) -> StageDetail:
    """Write pipeline ``p``'s kept vectors (`ingestaudit.kept_vectors`) and return the report.json note (stage
    ``embedding``, name ``kept_vectors``); the questions are embedded by the pipeline's embedder (its cache answers
    texts the retrieval audit embedded already)."""
    qs = list(questions.questions)
    qv = _question_embedder(pipe, config.run.cache_dir)([q.question for q in qs]) if qs else None
    info = stage_info("embedder", pipe.stage("embedder"), config.run.cache_dir).model_dump(mode="json")
    entry = keeper.add(p, pipe.name, docs, [q.id for q in qs], qv, info)
    note = {k: v for k, v in entry.items() if k != "question_ids"}
    return StageDetail(pipeline=pipe.name, stage="embedding", name="kept_vectors",
                       data={**note, "questions_kept": len(entry["question_ids"])})


def _question_embedder(pipe: Pipeline, cache_dir: str | None) -> Callable[[list[str]], Any]:
    """Embeds question texts with the pipeline's embedder (loaded on first call)."""
    def embed(texts: list[str]) -> Any:
        with embedding_threads():
            return stage_impl("embedder", pipe.stage("embedder"), cache_dir).embed(texts)
    embed.dimension = lambda: stage_impl("embedder", pipe.stage("embedder"), cache_dir).dimension()  # no model load
    embed.stats = lambda: dict(getattr(stage_impl("embedder", pipe.stage("embedder"), cache_dir), "stats", dict)())

    def computes(texts: list[str]) -> list[int]:  # per text, 1 when embed(texts) computes its vector (not cached)
        impl = stage_impl("embedder", pipe.stage("embedder"), cache_dir)
        would = getattr(impl, "would_compute", None)
        return list(would(texts)) if would is not None else [1] * len(texts)
    embed.computes = computes
    return embed


def _check_corpus_steps(pipelines: list[Pipeline], stages: list[str], opts: dict[str, dict[str, Any]]) -> None:
    """Build every pipeline's step of the selected stages whose auditor reads one (dedup), before any document is
    read.

    Raises:
        ValueError: a step that cannot be built, naming the pipeline (an unknown detector, a bad option).
    """
    for stage in stages:
        auditor = _auditor(stage, tuple(sorted((opts.get(stage) or {}).items())))
        for pipe in pipelines:
            try:
                with_step(auditor, pipe)
            except ValueError as exc:
                raise ValueError(f"[pipelines.{pipe.name}] {stage}: {exc}") from None


def _check_embedders(pipelines: list[Pipeline], cache_dir: str | None) -> None:
    """Check each pipeline's embedder once before any document runs (`Embedder.preflight`: packages and model files,
    without loading the model, which loads only when a text is missing from the cache): a missing model or
    tokenizer is one clear error.

    Raises:
        ValueError: the embedder cannot be built or its model files are missing (the message names the set-up
            command).
    """
    for choice in {repr(p.stage("embedder")): p.stage("embedder") for p in pipelines}.values():
        try:
            embedder = stage_impl("embedder", choice, cache_dir)
            check = getattr(embedder, "preflight", None) or getattr(embedder, "check", None)
            if check is not None:
                check()
        except Exception as exc:
            raise ValueError(f"embedder {choice.use!r}: {exc}") from exc


def _check_steps(pipelines: list[Pipeline], stages: list[str], opts: dict[str, dict[str, Any]]) -> None:
    """Build every pipeline's detection steps of the audited ``stages`` (no model loads) before any document runs.

    Raises:
        ValueError: a step's options are invalid (the message names the pipeline and the step).
    """
    from ingestaudit.steps import STEP_OF_STAGE, check_step

    for stage in (s for s in stages if s in STEP_OF_STAGE):
        defaults = load_auditor(stage, opts.get(stage)).step_options()
        for p in pipelines:
            check_step(p, STEP_OF_STAGE[stage], defaults)


def run(corpus: Corpus, pipelines: list[Pipeline], config: Config, *,
        progress: Callable[[int], Callable[..., None]] | None = None, work_dir: Path | None = None,
        keep_vectors: bool = False, events: Path | None = None) -> Report:
    """Audit ``corpus`` with ``pipelines`` and build the report.

    Args:
        corpus: a discovered corpus; a document whose truth has problems keeps the labels that loaded (a problem in
            one key of its JSON truth leaves that key out, `ingestaudit.truth.TruthError.partial`; a problem of a whole
            file leaves it an empty truth, stages needing truth give ``no_reference``), and its truth problems are
            listed in ``failures`` (stage ``truth``, once); questions with problems
            are left out and listed in ``failures`` (stage ``questions``), and a well-formed one rejected for its
            evidence (unknown document, span outside the reference text) gets ``error`` rows in the retrieval stage of
            every pipeline, so the counts show it; a document over a size limit
            (``config.limits``: its source file by ``stat``, its truth files) is never read nor sent to a worker: its
            rows are ``skipped`` with the limit named, listed once in ``failures`` (stage ``limits``).
        pipelines: the pipelines, in report order (see `ingestaudit.pipeline.resolve`).
        config: effective configuration (stages, seed, workers, budgets, options).
        progress: called once with the number of document tasks; returns ``tick``, called as ``tick(pipeline)``
            after each task of that pipeline and ``tick(None, step)`` when the run moves on to ``step`` after the
            documents (`ingestaudit.run_progress`).
        work_dir: a private folder for the run's spill files and its measurement store; default: a new temporary
            folder, removed when the returned report is garbage-collected (the report reads its rows from the
            store there, `Report.store_path`, until `ingestaudit.io.write_report` copies it beside report.json).
        keep_vectors: write each pipeline's chunk and question vectors into ``work_dir/kept-vectors``
            (`ingestaudit.kept_vectors`; `Report.kept_vectors` names it, `ingestaudit.io.write_report` moves the
            files beside report.json) and note them in ``details`` (stage ``embedding``, name ``kept_vectors``).
        events: a freshness events file (``--events``, `ingestaudit.events`): ``index.freshness_lag`` and
            ``index.stale_query_share`` rows for every pipeline, its bad lines listed in ``failures`` (stage
            ``events``); an unreadable file is one failure, never a stopped run.

    Returns:
        The report; its ``measurements`` name the store (`StoreRef`) at ``report.store_path``.

    Raises:
        UnknownStage, ValueError: bad stage or option (before anything runs).
        ExecutorError: the executor cannot start (a scheduler that does not answer), before the corpus is read; or
            no worker process could start.
        OSError: the work folder cannot be written (a full disk).
    """
    import shutil
    import tempfile
    import weakref

    from ingestaudit.executors import make_executor

    step_times.begin_run()
    own = work_dir is None
    work = Path(tempfile.mkdtemp(prefix="ingestaudit-run-")) if own else Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    try:
        n_tasks = max(1, len(corpus.documents) * len(pipelines))  # workers are capped by it
        with make_executor(config.run.executor, config.run.workers, n_tasks, scheduler=config.run.scheduler,
                           initializer=worker_init, memory_mb=config.run.worker_memory_mb) as executor:
            executor.start()  # a dead scheduler is an error within seconds, before any truth file is read
            report = _run(corpus, pipelines, config, progress, executor, work, keep_vectors, events)
    except BaseException:
        if own:
            shutil.rmtree(work, ignore_errors=True)
        raise
    if own:
        weakref.finalize(report, shutil.rmtree, str(work), True)
    return report


def _run(corpus: Corpus, pipelines: list[Pipeline], config: Config, progress: Any, executor: Any,
         work: Path, keep_vectors: bool = False, events: Path | None = None) -> Report:
    """`run` on a started ``executor``, with ``work`` as its private folder."""
    from ingestaudit.spill import TruthSpill

    forget_last_parse()  # the serial executor runs tasks in this process: never reuse a parse of an earlier run
    opts = _with_seed(config.auditor_options, config.run.seed, config.run.stages)  # the stages that may run
    opts.setdefault("retrieval", {}).setdefault("context_budgets", list(config.run.context_budgets))
    if table_limit_problem(config):
        raise ValueError(table_limit_problem(config))
    opts.setdefault("tables", {})["max_tables"] = config.limits.tables  # the predicted side, checked in the worker
    over = {doc_id: str(p) for doc_id, p in corpus.over_limits(config.limits).items()}  # source files: stat only
    over_truth: dict[str, str] = {}  # labels over a limit: the whole document is skipped
    truths = TruthSpill(work / "truths.pickle")
    try:
        candidates = _candidate_auditors(config.run.stages, opts)
        doc_classes, failures, examples, contexts, unsendable = load_truths(corpus, config.limits, over_truth,
                                                                             truths, candidates)
        return _audit(corpus, pipelines, config, progress, executor, work, opts, over, over_truth, truths,
                      doc_classes, failures, examples, contexts, unsendable, keep_vectors, events)
    finally:
        truths.close()


def _audit(corpus: Corpus, pipelines: list[Pipeline], config: Config, progress: Any, executor: Any, work: Path,
           opts: dict, over: dict[str, str], over_truth: dict[str, str], truths: Any, doc_classes: dict[str, str],
           failures: list[Failure], examples: list[Truth], contexts: dict[str, tuple[str, ...]],
           unsendable: dict[str, str], keep_vectors: bool = False, events: Path | None = None) -> Report:
    """The audit once the truths are loaded: tasks, corpus and pipeline stages, the store, the report."""
    from ingestaudit.report.failures import bounded, group_failures, merge_pipelines
    from ingestaudit.store import STORE_NAME, StoreWriter

    skip = {d: ("; ".join(m for m in (over.get(d), over_truth.get(d)) if m), d in over_truth)
            for d in sorted(over.keys() | over_truth.keys())}
    failures += [Failure(item=d, pipeline="", stage="limits", message=m) for d, (m, _) in sorted(skip.items())]
    failures += [Failure(item=p.file, pipeline="", stage="corpus", message=p.message) for p in corpus.problems]
    questions = load_question_set(corpus, truths, config.limits)
    failures += [Failure(item=p.file, pipeline="", stage="questions", message=f"{p.field}: {p.message}")
                 for p in questions.problems]
    question_classes = {q.id: questions.question_class(q, doc_classes) for q in questions.questions}
    chain_default = bool(questions.questions) or bool(config.pipelines) or any(
        p.precomputed_root is None and p.stages != _default_stages(p) for p in pipelines)
    stages = select_stages(config.run.stages, examples, opts, chain_default=chain_default)
    config.run.stages = stages
    if any(s in CHAIN_STAGES for s in stages):
        _check_embedders(pipelines, config.run.cache_dir)
    _check_steps(pipelines, stages, opts)
    _check_corpus_steps(pipelines, stages, opts)
    stage_args = tuple((s, tuple(sorted((opts.get(s) or {}).items()))) for s in stages)
    context = tuple((s, contexts.get(s, ())) for s, _ in stage_args if s in contexts)
    evidence = evidence_by_doc(questions)
    specs = {p.name: parser_spec(p, config.parser_options, config.limits) for p in pipelines}
    heading_threshold = section_threshold(config.auditor_options)
    from ingestaudit.step_cache import StepCacheWarning, enabled_by_env, env_problem, step_cache_folder

    if config.run.step_cache and env_problem():
        import warnings

        warnings.warn(env_problem(), StepCacheWarning, stacklevel=2)
    on = config.run.step_cache and enabled_by_env()
    step_cache = str(step_cache_folder(config.run.cache_dir)) if on else None
    unsendable_pipes = {}
    for p in pipelines:  # what every task of a pipeline shares: pickled once (the truths were, as they spilled)
        probe = Task(Document("", "", Path(".")), "", Truth(), p, specs[p.name], stage_args, (),
                     config.run.min_span_coverage, config.run.cache_dir, context, heading_threshold, step_cache)
        why = _pickle_problem(probe)
        if why:
            unsendable_pipes[p.name] = why

    def build(doc: Document, pipe: Pipeline, truth: bool) -> Task:
        return Task(doc, doc_classes[doc.doc_id], truths[doc.doc_id] if truth else Truth(), pipe, specs[pipe.name],
                    stage_args, tuple(evidence.get(doc.doc_id, ())) if truth else (), config.run.min_span_coverage,
                    config.run.cache_dir, context, heading_threshold, step_cache)

    tasks = _Tasks(corpus, pipelines, build)
    n_pipes = len(pipelines)
    store = StoreWriter(work, [p.name for p in pipelines])
    wants_chunks = any(_auditor(s, o).scope is Scope.PIPELINE for s, o in stage_args)
    collector = _Collector(store, pipelines, stage_args, work, spill_vectors=wants_chunks)
    from array import array

    sendable = array("q")
    n_runnable = 0
    for d, doc in enumerate(corpus.documents):
        if doc.doc_id in skip:
            for p in range(n_pipes):
                task = tasks[d * n_pipes + p]  # built once: each build reads the truth back from the spill
                collector.add(d * n_pipes + p, task, skipped(task, *skip[doc.doc_id]), False)
            continue
        n_runnable += n_pipes
        for p, pipe in enumerate(pipelines):
            why = unsendable.get(doc.doc_id) or unsendable_pipes.get(pipe.name)
            if why:
                continue
            sendable.append(d * n_pipes + p)
    tick = progress(n_runnable) if progress else None
    run_seconds = {"startup": step_times.since_run_start()}  # the run-level keys of `ingestaudit.step_times`
    step_times.take()
    for d, doc in enumerate(corpus.documents):  # tasks that cannot be pickled: error rows, on every executor
        if doc.doc_id in skip:
            continue
        for p, pipe in enumerate(pipelines):
            why = unsendable.get(doc.doc_id) or unsendable_pipes.get(pipe.name)
            if why:
                task = tasks[d * n_pipes + p]
                collector.add(d * n_pipes + p, task, failed(task, _unsendable_message(doc.doc_id, why)), True)
                if tick:
                    tick(pipe.name)
    if sendable:
        order = sendable
        view = _Subset(tasks, order)
        for j, res in _stream(view, executor, config.run.doc_timeout_s):
            with step_times.timed("collect"):
                collector.add(order[j], view.without_truth(j), res, True)
            if tick:
                tick(pipelines[order[j] % n_pipes].name)
    step_times.add(run_seconds, step_times.take())
    failures += collector.failures
    if tick:
        tick(None, "corpus-level stages, index and retrieval")
    docs = {d.doc_id: d for d in corpus.documents}
    corpus_summary, details, corpus_failures = _corpus_stages(
        collector, pipelines, stage_args, contexts, store,
        lambda pipe, doc_id: specs[pipe.name].route_label(docs[doc_id]) if doc_id in docs else "")
    rejected = [(q.id, questions.question_class(q, doc_classes), msg) for q, msg in questions.rejected]
    keeper = None
    if keep_vectors:
        from ingestaudit.kept_vectors import VectorKeeper

        keeper = VectorKeeper(work / "kept-vectors")
    p_summary, p_details, p_failures, timings = _pipeline_stages(
        collector, pipelines, stage_args, questions, question_classes, config, store, rejected, keeper)
    if keeper is not None:
        keeper.finish()
    summary_started = step_times.now()
    if tick:
        tick(None, "summary: aggregates, intervals, paired tests")
    if events is not None:
        from ingestaudit.events import freshness_rows

        e_summary, e_details, e_failures = freshness_rows(events, [p.name for p in pipelines], doc_classes,
                                                          config.limits)
        p_summary += e_summary
        p_details += e_details
        p_failures += e_failures
    details += p_details
    failures += corpus_failures + p_failures
    warned = collector.warned
    collector_times = collector.step_seconds
    cache_counts = collector.cache_counts
    del collector
    release_memory(store.rows)
    path = work / STORE_NAME
    digest = store.finalize(path)
    from ingestaudit.report.rows import remember_verified

    remember_verified(path, digest)  # just written and hashed: readers and write_report need not hash it again
    release_memory(store.rows)
    errors = _store_rows(path, states=("error",))
    failures += _unreported_errors(errors, failures)
    order_of = {p.name: i for i, p in enumerate(pipelines)}
    failures = merge_pipelines(failures, [p.name for p in pipelines])
    groups = group_failures(failures)
    listed, total = bounded(failures)

    names = [p.name for p in pipelines]
    if "retrieval" in stages:
        from ingestaudit.pipeline_tests import retrieval_comparison_details

        ks = _auditor("retrieval", dict(stage_args)["retrieval"]).k
        details += retrieval_comparison_details(list(_store_rows(path, item_kind="question", detail=False)),
                                                names, ks)
        if questions.questions:  # where questions/<p>.jsonl and runs/<p>.trec are (readable slugs of the names)
            from ingestaudit.report.questions import question_files_detail

            details.append(StageDetail(pipeline="", stage="retrieval", name="question_files",
                                       data=question_files_detail(names)))
    infos = [pipeline_info(p, specs[p.name], config) for p in pipelines]
    warned.sort(key=lambda w: (w.item, order_of[w.pipeline]))
    for info in infos:
        info.documents_with_warnings = sum(w.pipeline == info.name for w in warned)
    effective = config.model_dump(mode="json")
    for key in ("workers", "executor", "scheduler", "worker_memory_mb", "step_cache"):  # change speed (and the limit, named in
        # the message of a row it ends), never numbers: reports stay identical on every executor and worker count
        del effective["run"][key]
    effective["auditors"] = {s: _auditor(s, a).options() for s, a in stage_args}
    acc = Summarizer()
    acc.add_store(path)
    summary = acc.rows(names, seed=config.run.seed, n_resamples=config.report.bootstrap_resamples,
                       confidence=config.report.confidence, extra=corpus_summary + p_summary)
    del acc
    release_memory(store.rows)
    tests, verdict = [], None
    if len(names) >= 2:
        from ingestaudit.report.verdict import build_verdict

        keys = all_headline_keys(summary, infos)
        rows = list(_store_rows(path, metrics={m for m, _ in keys}, states=("ok",), detail=False))
        tests = paired_tests(rows, names, seed=config.run.seed, n_resamples=config.report.bootstrap_resamples,
                             confidence=config.report.confidence, keys=keys)
        verdict = build_verdict(rows, names, keys, seed=config.run.seed,
                                n_resamples=config.report.bootstrap_resamples, confidence=config.report.confidence)
        del rows
    report = Report(
        tool=ToolInfo(name="ingestaudit", version=__version__),
        corpus=CorpusInfo(path=str(corpus.root), fingerprint=corpus.fingerprint(config.limits),
                          documents=corpus.classes(),
                          questions=len(questions.questions)),
        config=effective, environment=environment(), pipelines=infos,
        measurements=StoreRef(file=STORE_NAME, sha256=digest, rows=store.rows), summary=summary,
        failures=listed, failures_total=total, failure_groups=groups, details=details, parse_warnings=warned,
        paired_tests=tests, verdict=verdict)
    report.store_path = path
    report.store_owned = True
    run_seconds["summary"] = step_times.now() - summary_started
    report.timings = step_times.with_step_seconds(timings, collector_times, run_seconds, config.run.workers,
                                                  config.run.executor)
    from ingestaudit.step_cache import with_cache_counts

    report.timings = with_cache_counts(report.timings, cache_counts, step_cache)
    report.kept_vectors = keeper.folder if keeper is not None else None
    return report


def _store_rows(path: Path, **filters: Any) -> Iterator[MeasurementRow]:
    """Rows of the run's sorted store (`ingestaudit.report.rows.iter_store_rows`)."""
    from ingestaudit.report.rows import iter_store_rows

    return iter_store_rows(path, **filters)


def _unsendable_message(doc_id: str, why: str) -> str:
    return (f"{doc_id}: the task cannot be sent to a worker process ({why}); its labels or options hold a value "
            "nested too deeply or that cannot be pickled")


def _candidate_auditors(requested: list[str], options: dict[str, dict[str, Any]]) -> dict[str, Auditor]:
    """The auditors of the stages the run may select (the requested ones, else every stage), loaded the way
    `select_stages` loads them, so the truth pass can ask which documents each applies to.

    Raises:
        UnknownStage, ValueError: as `select_stages`.
    """
    for stage in options:
        if stage not in stage_names():
            raise UnknownStage(f"[auditor_options.{stage}]: unknown stage; known stages: {', '.join(stage_names())}")
    out = {}
    for s in (requested or stage_names()):
        try:
            out[s] = load_auditor(s, options.get(s))
        except (UnknownStage, ValueError):
            raise
        except Exception as exc:
            raise ValueError(f"[auditor_options.{s}]: {type(exc).__name__}: {exc}") from exc
    return out


def _default_stages(p: Pipeline) -> tuple:
    from ingestaudit.pipeline import make_pipeline

    # the dedup step is not part of the chain: a pipeline that differs only in it does not turn the chain on
    return tuple((s, p.stage("dedup") if s == "dedup" else c)
                 for s, c in make_pipeline(p.name, {"parser": p.stage("parser").use}).stages)
