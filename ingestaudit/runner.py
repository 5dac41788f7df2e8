"""Orchestration: corpus -> parsers -> auditors -> report.

Each (document, parser) pair is one task, run in a process pool (pebble) under a per-task time budget, so a hang or a
crash in a parser becomes an ``error`` row for that document and the run goes on. Results are sorted before the report
is built, so ``--workers 1`` and ``--workers N`` give byte-identical reports.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ingestaudit import __version__
from ingestaudit.auditors.base import Auditor, CorpusAuditor, CorpusItem
from ingestaudit.auditors.registry import UnknownStage, load_auditor, stage_names
from ingestaudit.config import Config
from ingestaudit.corpus import Corpus
from ingestaudit.document import Document
from ingestaudit.measurement import Measurement, Score, State
from ingestaudit.model import ParsedDocument
from ingestaudit.parsers.base import NoOutput, Parser, ParserError, UnsupportedFormat
from ingestaudit.report.aggregate import corpus_summary_row, summarize
from ingestaudit.report.paired import paired_tests
from ingestaudit.report.schema import (CorpusInfo, Failure, MeasurementRow, ParserInfo, Report, StageDetail,
                                       SummaryRow, ToolInfo)
from ingestaudit.truth import Truth, TruthError, load_truth

ENV_PACKAGES = ("ingestaudit", "pymupdf", "pymupdf-layout", "jiwer", "rapidfuzz", "unstructured", "pytesseract",
                "apted", "datasketch", "numpy", "scipy", "pydantic", "ftfy", "confusable-homoglyphs", "regex",
                "presidio-analyzer", "spacy", "en-core-web-sm", "trafilatura", "lingua-language-detector",
                "scikit-learn", "langcodes")


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


@dataclass(frozen=True)
class Task:
    """One document x parser, with the truth already loaded and the stages to audit."""

    document: Document
    doc_class: str
    truth: Truth
    parser: ParserSpec
    stages: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]  # (stage, sorted options)


@dataclass
class TaskResult:
    """What a task returns: its measurement rows and failures (stage, message); for corpus-level stages also the
    parsed document, or the state and reason why there is none."""

    measurements: list[Measurement]
    failures: list[tuple[str, str]]
    parsed: ParsedDocument | None = None
    parse_state: State = State.OK
    parse_reason: str = ""


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
    return [Measurement.of(Score.missing(spec.name, state, reason), doc_id=task.document.doc_id,
                           doc_class=task.doc_class, parser=task.parser.name)
            for a in auditors if not isinstance(a, CorpusAuditor) for spec in a.metrics]


def run_task(task: Task) -> TaskResult:
    """Parse one document with one parser and run every selected per-document auditor on it (in a worker process).

    Never raises for document problems: parser errors become ``error`` rows, an unsupported format ``skipped``
    rows, a missing output ``no_prediction`` rows; an auditor that raises gives ``error`` rows for its stage only.
    When corpus-level stages are selected, the parsed document (or why there is none) is returned for them.
    """
    auditors = [_auditor(stage, opts) for stage, opts in task.stages]
    corpus_level = any(isinstance(a, CorpusAuditor) for a in auditors)
    per_doc = [a for a in auditors if not isinstance(a, CorpusAuditor)]
    applicable = [a for a in per_doc if a.applies(task.truth)]
    rows = _rows_in_state(task, [a for a in per_doc if a not in applicable], State.NO_REFERENCE,
                          "no truth for this stage")
    if not applicable and not corpus_level:
        return TaskResult(rows, [])

    def without_output(state: State, msg: str, fails: list[tuple[str, str]]) -> TaskResult:
        return TaskResult(rows + _rows_in_state(task, applicable, state, msg), fails, parse_state=state,
                          parse_reason=msg)

    try:
        parsed = replace(_parser(task.parser).parse(task.document), source_path=str(task.document.path))
    except UnsupportedFormat as exc:
        return without_output(State.SKIPPED, str(exc), [])
    except NoOutput as exc:
        return without_output(State.NO_PREDICTION, str(exc), [])
    except ParserError as exc:
        return without_output(State.ERROR, str(exc), [("parse", str(exc))])
    except BaseException as exc:  # a parser bug (even SystemExit from a plug-in) must not stop the run
        if isinstance(exc, KeyboardInterrupt) and not _IN_WORKER:
            raise
        msg = f"{type(exc).__name__}: {exc}"
        return without_output(State.ERROR, msg, [("parse", msg)])
    failures: list[tuple[str, str]] = []
    for a in applicable:
        try:
            scores = a.audit(task.truth, parsed)
            rows += [Measurement.of(s, doc_id=task.document.doc_id, doc_class=task.doc_class,
                                    parser=task.parser.name) for s in scores]
        except BaseException as exc:  # an auditor failing on one document gives error rows for that stage only
            if isinstance(exc, KeyboardInterrupt) and not _IN_WORKER:
                raise
            msg = f"{type(exc).__name__}: {exc}"
            rows += _rows_in_state(task, [a], State.ERROR, msg)
            failures.append((a.stage, msg))
    return TaskResult(rows, failures, parsed=parsed if corpus_level else None)


_IN_WORKER = False


def _worker_init() -> None:
    """Per-worker set-up: one OCR thread per worker (Tesseract's OpenMP threads would fight the pool for cores)."""
    import os

    global _IN_WORKER
    _IN_WORKER = True
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")


def _execute(tasks: list[Task], workers: int, timeout_s: float,
             progress: Callable[[], None] | None) -> list[TaskResult]:
    """Run tasks in a pebble process pool; a timeout or a dead worker becomes error rows for that task."""
    from pebble import ProcessExpired, ProcessPool

    results: list[TaskResult] = []
    with ProcessPool(max_workers=workers, initializer=_worker_init) as pool:
        futures = [pool.schedule(run_task, args=(t,), timeout=timeout_s) for t in tasks]
        for task, fut in zip(tasks, futures):
            try:
                results.append(fut.result())
            except FutureTimeout:
                msg = f"exceeded the per-document time budget of {timeout_s:g} s"
                results.append(_failed(task, msg))
            except ProcessExpired as exc:
                results.append(_failed(task, f"worker process died (exit code {exc.exitcode})"))
            except Exception as exc:
                results.append(_failed(task, f"{type(exc).__name__}: {exc}"))
            if progress:
                progress()
    return results


def _failed(task: Task, msg: str) -> TaskResult:
    auditors = [_auditor(stage, opts) for stage, opts in task.stages]
    applicable = [a for a in auditors if a.applies(task.truth)]
    rows = _rows_in_state(task, [a for a in auditors if a not in applicable], State.NO_REFERENCE,
                          "no truth for this stage")
    return TaskResult(rows + _rows_in_state(task, applicable, State.ERROR, msg), [("parse", msg)],
                      parse_state=State.ERROR, parse_reason=msg)


def _environment() -> dict[str, Any]:
    packages = {}
    for name in ENV_PACKAGES:
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = "not installed"
    return {"python": platform.python_version(), "packages": packages}


def select_stages(requested: list[str], truths: list[Truth], options: dict[str, dict[str, Any]]) -> list[str]:
    """The stages to audit: ``requested`` when given (validated), else every stage that applies to some document.

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
    return [s for s in stage_names() if any(auditors[s].applies(t) for t in truths)]


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
            failures += [Failure(doc_id=doc.doc_id, parser="", stage="truth", message=str(p)) for p in exc.problems]
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
    known = {(f.doc_id, f.parser, f.stage) for f in failures} | {(f.doc_id, f.parser, "parse") for f in failures}
    out: dict[tuple[str, str, str, str], Failure] = {}
    for r in rows:
        if r.state != State.ERROR.value or (r.doc_id, r.parser, r.stage) in known:
            continue
        message = str(r.detail.get("reason") or r.detail.get("message") or "error")
        out.setdefault((r.doc_id, r.parser, r.stage, message),
                       Failure(doc_id=r.doc_id, parser=r.parser, stage=r.stage, message=message))
    return list(out.values())


def _row(m: Measurement) -> MeasurementRow:
    return MeasurementRow(doc_id=m.doc_id, doc_class=m.doc_class, parser=m.parser, stage=m.stage, metric=m.metric,
                          label=m.label, value=m.value, numerator=m.numerator, denominator=m.denominator,
                          state=m.state.value, detail=m.detail)


def _corpus_stages(tasks: list[Task], results: list[TaskResult], parsers: list[ParserSpec],
                   stage_args: tuple) -> tuple[list[MeasurementRow], list[SummaryRow], list[StageDetail],
                                               list[Failure]]:
    """Run every corpus-level auditor once per parser over the documents the workers parsed."""
    rows: list[MeasurementRow] = []
    summary: list[SummaryRow] = []
    details: list[StageDetail] = []
    failures: list[Failure] = []
    for stage, opts in stage_args:
        auditor = _auditor(stage, opts)
        if not isinstance(auditor, CorpusAuditor):
            continue
        for spec in parsers:
            items = [CorpusItem(t.document.doc_id, t.doc_class, t.truth, r.parsed, r.parse_state, r.parse_reason)
                     for t, r in zip(tasks, results) if t.parser == spec]
            try:
                result = auditor.audit_corpus(items)
            except Exception as exc:  # one stage failing never stops the report
                msg = f"{type(exc).__name__}: {exc}"
                failures.append(Failure(doc_id="", parser=spec.name, stage=stage, message=msg))
                continue
            classes = {i.doc_id: i.doc_class for i in items}
            rows += [_row(Measurement.of(sc, doc_id=doc_id, doc_class=classes[doc_id], parser=spec.name))
                     for doc_id, sc in result.doc_scores]
            summary += [corpus_summary_row(sc, parser=spec.name, doc_class=cls, n_docs=n)
                        for cls, sc, n in result.corpus_scores]
            details += [StageDetail(parser=spec.name, stage=stage, name=name, data=data)
                        for name, data in sorted(result.details.items())]
    return rows, summary, details, failures


def run(corpus: Corpus, parsers: list[ParserSpec], config: Config, *,
        progress: Callable[[int], Callable[[], None]] | None = None) -> Report:
    """Audit ``corpus`` with ``parsers`` and build the report.

    Args:
        corpus: a discovered corpus; documents whose truth fails to load are audited with empty truth (stages needing
            truth give ``no_reference``) and their truth problems are listed in ``failures``.
        parsers: parser specs, in report order.
        config: effective configuration (stages, seed, workers, budgets, options).
        progress: called once with the number of tasks; returns a callback invoked after each task.

    Raises:
        UnknownStage, ValueError: bad stage or option (before anything runs).
    """
    truths, failures = _load_truths(corpus)
    failures += [Failure(doc_id=p.file, parser="", stage="corpus", message=p.message) for p in corpus.problems]
    opts = _with_seed(config.auditor_options, config.run.seed)
    stages = select_stages(config.run.stages, list(truths.values()), opts)
    stage_args = tuple((s, tuple(sorted((opts.get(s) or {}).items()))) for s in stages)
    tasks = [Task(doc, truths[doc.doc_id].doc_class or doc.doc_class, truths[doc.doc_id], p, stage_args)
             for doc in corpus.documents for p in parsers]
    tick = progress(len(tasks)) if progress else None
    results = _execute(tasks, config.run.workers, config.run.doc_timeout_s, tick)

    _unsupported_everywhere(tasks, results)
    rows: list[MeasurementRow] = []
    for task, res in zip(tasks, results):
        rows += [_row(m) for m in res.measurements]
        failures += [Failure(doc_id=task.document.doc_id, parser=task.parser.name, stage=stage, message=msg)
                     for stage, msg in res.failures]
    corpus_rows, corpus_summary, details, corpus_failures = _corpus_stages(tasks, results, parsers, stage_args)
    rows += corpus_rows
    failures += corpus_failures
    failures += _unreported_errors(rows, failures)
    order = {p.name: i for i, p in enumerate(parsers)}
    rows.sort(key=lambda r: (r.doc_id, order[r.parser], r.stage, r.metric, r.label))
    failures.sort(key=lambda f: (f.doc_id, order.get(f.parser, -1), f.stage, f.message))

    infos = []
    for p in parsers:
        built = p.build()
        ok, ver = built.available()
        infos.append(ParserInfo(name=p.name, kind="precomputed" if p.precomputed_root else "registered",
                                version=ver if ok else "unavailable", settings=built.settings()))
    effective = config.model_dump(mode="json")
    effective["run"]["stages"] = stages
    del effective["run"]["workers"]  # changes speed, never numbers: keep reports of 1 and N workers identical
    effective["auditors"] = {s: _auditor(s, a).options() for s, a in stage_args}
    summary = summarize(rows, [p.name for p in parsers], seed=config.run.seed,
                        n_resamples=config.report.bootstrap_resamples, confidence=config.report.confidence,
                        extra=corpus_summary)
    return Report(
        tool=ToolInfo(name="ingestaudit", version=__version__),
        corpus=CorpusInfo(path=str(corpus.root), fingerprint=corpus.fingerprint(), documents=corpus.classes()),
        config=effective, environment=_environment(), parsers=infos, measurements=rows, summary=summary,
        failures=failures, details=details, paired_tests=paired_tests(rows, [p.name for p in parsers]))
