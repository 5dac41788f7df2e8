"""The per-document steps of one task (one document x one pipeline), in the worker: parse (through the pipeline's
parser routing), the detection steps its audited stages read (`ingestaudit.steps`), clean -> chunk -> embed
(`ingestaudit.chain`); the result is the document's `ingestaudit.auditors.base.ItemArtefacts`, which every
document-scope auditor reads and from which every corpus-scope auditor takes its compact artefact. The parsed
document never leaves the worker: a `TaskResult` holds rows, failures, compact artefacts and the chain's
`DocChunks`.

Auditors are dispatched on what they declare (`ingestaudit.auditors.base.Auditor.scope` and ``reads``), never on
their class. Steps and auditors are built once per worker process and options.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from ingestaudit.auditors.base import CHAIN, CLEAN, Auditor, ItemArtefacts, Scope, artefact_item
from ingestaudit.auditors.registry import load_auditor
from ingestaudit.chain import (DEFAULT_HEADING_THRESHOLD, DEFAULT_MIN_SPAN_COVERAGE, DocChunks, EvidenceRef,
                               clean_step, run_chain)
from ingestaudit.document import Document
from ingestaudit.executors.base import TaskTimeout, raised_message
from ingestaudit.measurement import Measurement, Score, State
from ingestaudit.model import ParsedDocument
from ingestaudit.parsers.base import NoOutput, Parser, ParserError, UnsupportedFormat
from ingestaudit.parsers.routing import ParserSpec, Unrouted
from ingestaudit.pipeline import Pipeline, StageChoice
from ingestaudit.stages.embedders.base import EMBED_THREADS, embed_threads  # noqa: F401 (EMBED_THREADS: the runner's)
from ingestaudit.step_times import restore, take, timed
from ingestaudit.steps import step_artefact, with_step
from ingestaudit.truth import Truth


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
    heading_threshold: float = DEFAULT_HEADING_THRESHOLD  # section items vs headings: the layout audit's threshold
    step_cache: str | None = None  # the step cache folder (`ingestaudit.step_cache`); None: off


@dataclass
class TaskResult:
    """What a task returns: its measurement rows and failures (stage, message), the parse state (and why there is
    no parsed document), for each corpus-scope stage its compact artefact and the message when computing it (or
    the step it reads) failed (`Auditor.artefact`; never the parsed document), and for the pipeline-scope stages
    the chain's `DocChunks`. ``measurements`` are `Measurement`s while the task runs and store records
    (`ingestaudit.store.record`) once `run_task` returns."""

    measurements: list[Any]
    failures: list[tuple[str, str]]
    parse_state: State = State.OK
    parse_reason: str = ""
    chunks: DocChunks | None = None
    warnings: tuple[str, ...] = ()  # the parser's warnings on this document (`kept_warnings`: capped)
    warning_count: int = 0  # how many it raised in all
    artefacts: dict[str, tuple[Any, str]] = field(default_factory=dict)
    unread: bool = False  # a routed pipeline has no route that reads the document (`Unrouted`)
    step_seconds: dict[str, float] = field(default_factory=dict)  # `ingestaudit.step_times` keys of this task
    cache_counts: dict[str, int] = field(default_factory=dict)  # `ingestaudit.step_cache.take_counts` of this task


CHAIN_STAGES = ("chunking", "retrieval", "index")
"""Stages that need the chain after parsing (clean -> chunk -> embed); they run by default only when the corpus has
questions or the config defines pipelines, since embedding every chunk is the costliest step of a run."""

_PARSERS: dict[str, Parser] = {}  # per worker process, keyed by repr(ParserSpec)
_AUDITORS: dict[tuple[str, str], Auditor] = {}
_STAGE_IMPLS: dict[tuple[str, str], Any] = {}  # per worker process: cleaners, chunkers, embedders by choice
_LAST_PARSE: dict[str, Any] = {}  # per worker process: the last document parsed, so sweep variants parse once
_IN_WORKER = False


def auditor(stage: str, options: tuple[tuple[str, Any], ...]) -> Auditor:
    """The auditor of ``stage`` with ``options`` (sorted pairs), built once per process."""
    key = (stage, repr(options))  # options may hold lists (TOML arrays), which do not hash
    if key not in _AUDITORS:
        _AUDITORS[key] = load_auditor(stage, dict(options))
    return _AUDITORS[key]


def _parser(spec: ParserSpec) -> Parser:
    key = repr(spec)
    if key not in _PARSERS:
        _PARSERS[key] = spec.build()
    return _PARSERS[key]


def stage_impl(stage: str, choice: StageChoice, cache_dir: str | None = None) -> Any:
    """The cleaner, chunker or embedder of a pipeline stage, built once per process."""
    key = (stage, repr(choice))
    if key not in _STAGE_IMPLS:
        if stage == "cleaner":
            from ingestaudit.stages.cleaners.registry import load_cleaner

            _STAGE_IMPLS[key] = load_cleaner(choice.use, choice.kwargs())
        elif stage == "chunker":
            from ingestaudit.stages.chunkers.registry import load_chunker

            _STAGE_IMPLS[key] = precomputed_or(choice) if choice.use == "precomputed" else load_chunker(
                choice.use, choice.kwargs())
        else:
            from ingestaudit.stages.embedders.registry import load_cached_embedder

            _STAGE_IMPLS[key] = load_cached_embedder(choice.use, choice.kwargs(), cache_dir)
    return _STAGE_IMPLS[key]


def precomputed_or(choice: StageChoice) -> Any:
    """The ``precomputed`` chunker of an ``--outputs`` pipeline: the chunks an output holds, and for an output without
    chunks the default chunker with the stage's other options (so ``--sweep chunker.size=...`` applies to it)."""
    from ingestaudit.pipeline import DEFAULTS
    from ingestaudit.stages.chunkers.registry import load_chunker

    opts = choice.kwargs()
    own = {k: opts.pop(k) for k in ("normalises_whitespace", "max_overlap") if k in opts}
    chunker = load_chunker("precomputed", own)
    chunker.fallback = load_chunker(DEFAULTS["chunker"], opts)
    return chunker


@contextmanager
def embedding_threads(active: bool = True) -> Iterator[None]:
    """Run the block with `EMBED_THREADS` torch threads when torch is already imported (an embedder plug-in that
    imports it at module level); in the main process the previous count is restored after. Never imports torch
    itself: a run whose every vector is cached must not pay for it. The built-in embedders fix the count around
    each forward pass themselves (`SentenceTransformerEmbedder.embed`). Does nothing when not ``active``. Safe from
    several threads at once (`ingestaudit.stages.embedders.base.embed_threads`: a process-wide lock and counter)."""
    torch = sys.modules.get("torch") if active else None
    if torch is None or not hasattr(torch, "get_num_threads"):
        yield
        return
    with embed_threads(torch, restore=not _IN_WORKER):
        yield


def propagates(exc: BaseException) -> bool:
    """Whether a task re-raises ``exc`` instead of turning it into error rows: the ``serial`` executor's time
    budget, and an interrupt outside a worker process."""
    return isinstance(exc, TaskTimeout) or (isinstance(exc, KeyboardInterrupt) and not _IN_WORKER)


def worker_init() -> None:
    """Per-worker set-up: one OCR thread per worker (Tesseract's OpenMP threads would fight the pool for cores)."""
    import os

    global _IN_WORKER
    _IN_WORKER = True
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")


def forget_last_parse() -> None:
    """Drop this process's cached parse (the serial executor runs tasks in the main process: a new run must never
    reuse a parse of an earlier one)."""
    _LAST_PARSE.clear()


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
            parsed = cached_parse(parser, task.document)
        except UnsupportedFormat as exc:
            if task.parser.routes:
                raise task.parser.unrouted(task.document, parser, str(exc)) from None
            raise
        _LAST_PARSE["parsed"] = replace(parsed, source_path=str(task.document.path))
        _LAST_PARSE["key"] = key
    return _LAST_PARSE["parsed"]


def parse_identity(parser: Parser, document: Document) -> dict[str, Any] | None:
    """The step cache identity of ``parser`` on ``document`` (`ingestaudit.step_cache`): the parser's
    `Parser.cache_identity`, the file's suffix and the sha256 of its bytes (not its path: a corpus copied to a new
    folder, a CI job's new workspace, reads its parses back); None (not cached) for a parser without one, a file
    that is not a regular non-empty file (the parser reports it), or one that cannot be read."""
    import os
    import stat

    from ingestaudit.step_cache import file_hash

    try:
        own = parser.cache_identity()
        if own is None or not parser.supports(document):
            return None
        st = os.stat(document.path)
        if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
            return None
        return {**own, "suffix": document.suffix, "sha256": file_hash(document.path)}
    except Exception:  # an unavailable parser or unreadable file: parsing says what is wrong
        return None


def cached_parse(parser: Parser, document: Document) -> ParsedDocument:
    """``parser.parse(document)``, or the parse the step cache holds for the same file bytes, parser and
    environment (`ingestaudit.step_cache.cached`). Raises what the parser raises."""
    from ingestaudit.model import parsed_from_json, parsed_to_json
    from ingestaudit.step_cache import cached

    here = str(document.path)

    def encode(parsed: ParsedDocument) -> dict[str, Any]:
        return {**parsed_to_json(parsed), "source": here}

    def decode(data: dict[str, Any]) -> ParsedDocument:
        parsed = parsed_from_json(data)
        source = data.get("source")
        if not isinstance(source, str) or source == here or not source:
            return parsed
        # the same bytes parsed at another path: the parser's warnings name this document's path
        return replace(parsed, warnings=tuple(w.replace(source, here) for w in parsed.warnings))

    def unchanged(identity: dict[str, Any]) -> bool:  # the file was not rewritten while it was parsed
        from ingestaudit.step_cache import file_hash

        try:
            return file_hash(document.path) == identity["sha256"]
        except OSError:
            return False

    return cached("parse", lambda: parse_identity(parser, document), lambda: parser.parse(document), encode, decode,
                  unchanged)


# --- what each auditor of a task is, from its declarations ---------------------------------------------------------

def _document_auditors(auditors: list[Auditor]) -> tuple[list[Auditor], list[Auditor]]:
    """The document-scope auditors that read the parsed document, and those that read the chain's output."""
    doc = [a for a in auditors if a.scope is Scope.DOCUMENT]
    return [a for a in doc if CHAIN not in a.reads], [a for a in doc if CHAIN in a.reads]


def _wants_chain(auditors: list[Auditor]) -> bool:
    """Whether any auditor reads the chain (clean -> chunk -> embed) of this task."""
    return any(CHAIN in a.reads for a in auditors)


def _needs_chunk_vectors(auditor: Auditor, pipeline: Pipeline) -> bool:
    """Whether ``auditor`` reads ``pipeline``'s chunk vectors: the retrieval audit when the pipeline's retriever does
    (`ingestaudit.stages.retrieve_step.needs_chunk_vectors`: not ``bm25``), another auditor unless its
    ``needs_chunk_vectors`` says no."""
    from ingestaudit.stages.retrieve_step import needs_chunk_vectors

    if auditor.stage == "retrieval":
        return needs_chunk_vectors(pipeline)
    return auditor.needs_chunk_vectors(pipeline)


def rows_in_state(task: Task, auditors: list[Auditor], state: State, reason: str) -> list[Measurement]:
    """A row in ``state`` for every metric of ``auditors`` whose scope is not the corpus (corpus-scope ones get
    theirs from `Auditor.audit_artefacts`)."""
    return [Measurement.of(Score.missing(spec.name, state, reason), item=task.document.doc_id,
                           doc_class=task.doc_class, pipeline=task.pipeline.name)
            for a in auditors if a.scope is not Scope.CORPUS for spec in a.metrics]


# --- the artefacts of one document ---------------------------------------------------------------------------------

def document_item(task: Task, auditors: list[Auditor], parsed: ParsedDocument | None,
                  state: State = State.OK, reason: str = "") -> tuple[ItemArtefacts, dict[str, str]]:
    """The document's `ItemArtefacts` before the chain: ``parsed`` (None: ``state`` and ``reason`` say why) and the
    artefact of every step a corpus-scope auditor reads (`ingestaudit.steps.step_artefact`), and per stage the
    message of a step that raised on this document (its artefact is then absent)."""
    context = dict(task.context)
    steps: dict[str, Any] = {}
    failed: dict[str, str] = {}
    for a in auditors:
        step = a.reads_step() if a.scope is Scope.CORPUS else ""
        if not step:
            continue
        try:
            got = step_artefact(a, task.pipeline, parsed, task.truth, context.get(a.stage, ()))
        except BaseException as exc:  # a step failing on one document: an error of that document for this stage
            if propagates(exc):
                raise
            failed[a.stage] = raised_message(exc)
            continue
        if got is not None:
            steps[step] = got
    return ItemArtefacts(task.document.doc_id, task.doc_class, task.truth, parsed, None, task.evidence, steps,
                         state, reason), failed


def corpus_artefacts(task: Task, auditors: list[Auditor], item: ItemArtefacts,
                     step_failures: dict[str, str]) -> dict[str, tuple[Any, str]]:
    """Each corpus-scope stage's artefact of this document x pipeline (`Auditor.artefact` of ``item``, through the
    pipeline's corpus-level step, `ingestaudit.steps.with_step`) and the message when its step or its artefact
    could not be computed from the document (the artefact then holds the truth's part only)."""
    context = dict(task.context)
    out: dict[str, tuple[Any, str]] = {}
    for a in auditors:
        if a.scope is Scope.CORPUS:
            with timed(f"auditor.{a.stage}"):
                got, msg = artefact_item(with_step(a, task.pipeline), item, context.get(a.stage, ()))
            out[a.stage] = (got.artefact, step_failures.get(a.stage, "") or msg)
    return out


def _without_output_artefacts(task: Task, auditors: list[Auditor], state: State,
                              reason: str) -> dict[str, tuple[Any, str]]:
    """`corpus_artefacts` of a document the pipeline produced nothing for."""
    item, failed = document_item(task, auditors, None, state, reason)
    return corpus_artefacts(task, auditors, item, failed)


def enriched_metadata(task: Task, parsed: ParsedDocument) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The metadata every chunk of the document carries, and the labelled values of the fields the enrichment changed.

    Without a ``metadata`` step in the pipeline's own table: the truth's ``metadata``, and None. With one
    (``metadata = { use = "parser" }`` or ``"precomputed"``): the truth's metadata overridden by the fields the step
    extracted (``language`` from the pipeline's language step when it names one,
    `ingestaudit.steps.metadata_extraction`), so a question's filter tests what the pipeline extracted, and
    ``{field: labelled value or None}`` for each field whose extracted value differs from the label (the waterfall's
    ``excluded_by_enrichment``). A step that produced nothing leaves the truth's metadata.

    Raises:
        Whatever the metadata step raises on this document (the chain's failure, as a chunker's would be).
    """
    truth_meta = task.truth.metadata
    if task.pipeline.step("metadata") is None:
        return truth_meta, None
    from ingestaudit.steps import metadata_extraction, step_options

    got = metadata_extraction(task.pipeline, step_options(task.pipeline, "metadata", {}), parsed, task.truth.text)
    if got.state or not got.fields:
        return truth_meta, None
    labelled = {k: (truth_meta or {}).get(k) for k, v in got.fields.items() if (truth_meta or {}).get(k) != v}
    return {**(truth_meta or {}), **got.fields}, labelled


def attach_entities(task: Task, parsed: ParsedDocument, doc: Any) -> None:
    """When the pipeline names an ``entities`` step: each chunk of ``doc`` (`ingestaudit.chain.DocChunks`) gets the
    metadata field ``entities``, ``{TYPE: [text, ...]}`` of the extracted entities over its reference interval
    (`ingestaudit.enrichment.chunk_entities`, the extractor's types), so a question's filter can name them
    (``"filter": {"entities.ORG": "Acme"}``, `ingestaudit.questions.filter_passes`). The step runs with the
    pipeline's own options; a step that produced nothing (no reference text, a state) attaches nothing.

    Raises:
        Whatever the entities step raises on this document (the chain's failure, as the metadata step's).
    """
    if task.pipeline.step("entities") is None or task.truth.text is None:
        return
    from ingestaudit.enrichment import chunk_entities
    from ingestaudit.steps import run_step, step_options

    got = run_step("entities", step_options(task.pipeline, "entities", {}), parsed, task.truth.text, ())
    if not got.ran or got.state:
        return
    per_chunk = chunk_entities(got.spans, task.truth.text, doc.ref_intervals)
    doc.metadata = [{**m, "entities": e} if e is not None else m for m, e in zip(doc.metadata, per_chunk)]


def kept_warnings(warnings: Any) -> tuple[tuple[str, ...], int]:
    """A parser's warnings as the report keeps them: the first `MAX_PARSE_WARNINGS` messages, each cut to
    `MAX_WARNING_CHARS` characters, and how many there were (a damaged PDF may raise thousands)."""
    from ingestaudit.report.schema import MAX_PARSE_WARNINGS, MAX_WARNING_CHARS

    items = [str(w) for w in (warnings or ())] if isinstance(warnings, (list, tuple)) else [str(warnings)]
    kept = tuple(w if len(w) <= MAX_WARNING_CHARS else w[:MAX_WARNING_CHARS - 1] + "…"
                 for w in items[:MAX_PARSE_WARNINGS])
    return kept, len(items)


# --- one task ------------------------------------------------------------------------------------------------------

def run_task(task: Task) -> TaskResult:
    """`_run_task` with its rows in store form (`ingestaudit.store.record`: serialised here, in the worker, so the
    main process only moves them to the store)."""
    from ingestaudit import step_cache

    outer = take()  # the serial executor runs tasks in the main process: its own totals are put back after
    step_cache.take_counts()
    try:
        with timed("task"), step_cache.active(task.step_cache):
            res = _run_task(task)
        res.step_seconds = take()
        res.cache_counts = step_cache.take_counts()
    finally:
        take()  # a task that raised: its partial times are dropped, never counted for the next one
        restore(outer)
    return packed(res)


def packed(res: TaskResult) -> TaskResult:
    """``res`` with its rows as store records (unchanged when they already are)."""
    from ingestaudit.store import record

    if res.measurements and not isinstance(res.measurements[0], tuple):
        res.measurements = [record(m) for m in res.measurements]
    return res


def _run_task(task: Task) -> TaskResult:
    """Parse one document with its pipeline's parser, run the steps its corpus-scope auditors read and (when an
    auditor reads the chain) clean, chunk and embed it; then every document-scope auditor reads the document's
    `ItemArtefacts` and every corpus-scope auditor takes its compact artefact from it.

    Never raises for document problems: parser errors become ``error`` rows, an unsupported format ``skipped`` rows
    (``error`` rows for a routed pipeline: `Unrouted`), a missing output ``no_prediction`` rows; an auditor or
    step that raises gives ``error`` rows for its stage only. The retrieval and index stages get the chain's
    `DocChunks`; the parsed document itself never leaves this function.
    """
    auditors = [auditor(stage, opts) for stage, opts in task.stages]
    on_parsed, on_chain = _document_auditors(auditors)
    corpus_level = any(a.scope is Scope.CORPUS for a in auditors)
    wants_chain = _wants_chain(auditors)
    # a pipeline whose only vector consumer reads the user's vectors (index + vectors.npy) is not embedded
    embed_chunks = any(_needs_chunk_vectors(a, task.pipeline) for a in auditors if CHAIN in a.reads)
    applicable = [a for a in on_parsed if a.applies(task.truth)] + on_chain
    rows = rows_in_state(task, [a for a in on_parsed if a not in applicable], State.NO_REFERENCE,
                         "no truth for this stage")
    if not applicable and not corpus_level and not wants_chain:
        return TaskResult(rows, [])

    def without_output(state: State, msg: str, fails: list[tuple[str, str]]) -> TaskResult:
        doc = DocChunks(task.document.doc_id, task.doc_class, state, msg) if wants_chain else None
        return TaskResult(rows + rows_in_state(task, applicable, state, msg), fails, parse_state=state,
                          parse_reason=msg, chunks=doc,
                          artefacts=_without_output_artefacts(task, auditors, State.NO_PREDICTION, ""))

    try:
        with timed("parse"):
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
        if propagates(exc):
            raise
        msg = raised_message(exc)  # a MemoryError names the worker limit
        return without_output(State.ERROR, msg, [("parse", msg)])
    item, step_failures = document_item(task, auditors, parsed)
    # the clean step alone, for auditors that read it (boilerplate), whatever the later steps do
    clean_readers = [a for a in applicable if CLEAN in a.reads]
    cleaning, clean_failure = None, ""
    chain_failure = ""
    doc_chunks = None
    if clean_readers or wants_chain:
        try:
            cleaner = stage_impl("cleaner", task.pipeline.stage("cleaner"))
            if clean_readers:
                cleaning = clean_step(cleaner, parsed, name=task.pipeline.stage("cleaner").use,
                                      labelled_text=clean_readers[0].labelled_text(task.truth))
                item = replace(item, steps={**item.steps, CLEAN: cleaning})
        except BaseException as exc:  # a cleaner that does not build
            if propagates(exc):
                raise
            clean_failure = chain_failure = raised_message(exc)
    if wants_chain and not chain_failure:
        try:
            metadata, labelled = enriched_metadata(task, parsed)
            with embedding_threads(embed_chunks):
                chain = run_chain(
                    parsed, doc_id=task.document.doc_id, doc_class=task.doc_class, reference=task.truth.text,
                    metadata=metadata, cleaner=cleaner,
                    chunker=stage_impl("chunker", task.pipeline.stage("chunker")),
                    embedder=stage_impl("embedder", task.pipeline.stage("embedder"), task.cache_dir),
                    evidence=task.evidence, min_span_coverage=task.min_span_coverage, embed_chunks=embed_chunks,
                    cleaning=cleaning, heading_threshold=task.heading_threshold)
        except BaseException as exc:  # a cleaner, chunker or embedder failing on one document
            if propagates(exc):
                raise
            chain_failure = raised_message(exc)  # a MemoryError names the worker limit
        else:
            doc_chunks = chain.doc
            doc_chunks.labelled = labelled
            attach_entities(task, parsed, doc_chunks)
            item = replace(item, chain=chain)
    if wants_chain and chain_failure:
        doc_chunks = DocChunks(task.document.doc_id, task.doc_class, State.ERROR, chain_failure)
    failures: list[tuple[str, str]] = []

    def audited(group: list[Auditor]) -> list[Measurement]:
        out: list[Measurement] = []
        for a in group:
            try:
                with timed(f"auditor.{a.stage}"):
                    out += [Measurement.of(s, item=task.document.doc_id, doc_class=task.doc_class,
                                           pipeline=task.pipeline.name) for s in a.audit(item)]
            except BaseException as exc:  # an auditor failing on one document gives error rows for that stage only
                if propagates(exc):
                    raise
                msg = raised_message(exc)  # a MemoryError names the worker limit
                out += rows_in_state(task, [a], State.ERROR, msg)
                failures.append((a.stage, msg))
        return out

    if clean_failure:
        rows += rows_in_state(task, clean_readers, State.ERROR, clean_failure)
        if not wants_chain:
            failures.append((clean_readers[0].stage, clean_failure))
    rows += audited([a for a in applicable if CHAIN not in a.reads and not (clean_failure and a in clean_readers)])
    artefacts = corpus_artefacts(task, auditors, item, step_failures)
    failures += [(stage, msg) for stage, (_, msg) in artefacts.items() if msg]
    if wants_chain and chain_failure:
        rows += rows_in_state(task, on_chain, State.ERROR, chain_failure)
        failures.append(("chunking", chain_failure))
    elif wants_chain:
        rows += audited(on_chain)
    warnings = parsed.warnings
    note = getattr(item.chain, "passed_through", "") if wants_chain and not chain_failure else ""
    if note:  # a cleaner that could not handle the document: said first, before the parser's (capped) warnings
        warnings = [note, *(warnings if isinstance(warnings, (list, tuple)) else [warnings] if warnings else [])]
    kept, count = kept_warnings(warnings)
    empty = (empty_output_failure(task, parsed, kept_warnings(parsed.warnings)[0])  # the parser's own warnings
             if any(a.stage == "extraction" for a in applicable) else "")
    if empty:
        failures.append(("extraction", empty))
    return TaskResult(rows, failures, chunks=doc_chunks, warnings=kept, warning_count=count, artefacts=artefacts)


EMPTY_OUTPUT = "empty_output"
"""The first word of the failure of a parse that returned no text where the reference has some
(`empty_output_failure`); the headline's extraction cell counts these documents (`ingestaudit.report.tables`)."""


def empty_output_failure(task: Task, parsed: ParsedDocument, warnings: tuple[str, ...] = ()) -> str:
    """The failure message of a parse whose text is empty after stripping white space while the document's reference
    text is not (its extraction rows score all deletions, CER 1, `ingestaudit.metrics.edit`): ``"empty_output: ..."``
    naming the parser, the document's file, the reference length in code points and the parser's first warning
    (``warnings``, `kept_warnings`), else that it raised none; ``""`` for any other parse (no reference text, an
    empty reference, some output)."""
    ref = (task.truth.text or "").strip()
    if not ref or (parsed.text or "").strip():
        return ""
    said = f"parser warning: {warnings[0]}" if warnings else "the parser raised no warning"
    return (f"{EMPTY_OUTPUT}: {parsed.parser or task.parser.name} returned no text for {task.document.path.name} "
            f"(the reference has {len(ref)} characters); {said}")


def skipped(task: Task, msg: str, every_stage: bool) -> TaskResult:
    """The rows of a task that is never run because its document is over a size limit: ``skipped`` with ``msg`` for
    every document-scope stage (``every_stage``: its labels are over a limit, so none can be trusted) or for the
    stages its truth applies to (its source file is over a limit; the others are ``no_reference`` as always)."""
    auditors = [auditor(stage, opts) for stage, opts in task.stages]
    on_parsed, on_chain = _document_auditors(auditors)
    hit = on_parsed if every_stage else [a for a in on_parsed if a.applies(task.truth)]
    rows = rows_in_state(task, [a for a in on_parsed if a not in hit], State.NO_REFERENCE, "no truth for this stage")
    rows += rows_in_state(task, hit + on_chain, State.SKIPPED, msg)
    chunks = DocChunks(task.document.doc_id, task.doc_class, State.SKIPPED, msg) if _wants_chain(auditors) else None
    return TaskResult(rows, [], parse_state=State.SKIPPED, parse_reason=msg, chunks=chunks,
                      artefacts=_without_output_artefacts(task, auditors, State.NO_PREDICTION, ""))


def failed(task: Task, msg: str) -> TaskResult:
    """The rows of a task that did not finish (a timeout, a dead worker, a task that cannot be sent): ``error``
    with ``msg`` for every stage its truth applies to (pipeline-scope stages included), ``no_reference`` for the
    others."""
    auditors = [auditor(stage, opts) for stage, opts in task.stages]
    applicable = [a for a in auditors if a.applies(task.truth)]
    rows = rows_in_state(task, [a for a in auditors if a not in applicable], State.NO_REFERENCE,
                         "no truth for this stage")
    chunks = DocChunks(task.document.doc_id, task.doc_class, State.ERROR, msg) if _wants_chain(auditors) else None
    return TaskResult(rows + rows_in_state(task, applicable, State.ERROR, msg), [("parse", msg)],
                      parse_state=State.ERROR, parse_reason=msg, chunks=chunks,
                      artefacts=_without_output_artefacts(task, auditors, State.NO_PREDICTION, ""))
