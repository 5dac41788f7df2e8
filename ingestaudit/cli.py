"""The ``ingestaudit`` command line (typer). Heavy libraries are imported inside commands, never at module level.

Exit codes: 0 ran (and every gate held); 1 a gate failed; 2 usage or corpus error (nothing audited), or an output
that cannot be written (the previous report unchanged); 3 the run finished but some documents failed (only with
``--strict``); 4 the run finished and its report was written, but it could not be recorded in ``--history``
(locked past `ingestaudit.report.history.LOCK_WAIT_S`, or damaged since the check before the audit; 1 and 3 take
precedence); 130 interrupted (SIGINT), 143 terminated (SIGTERM): nothing written. Payload goes to stdout, progress
to stderr; every name from the corpus is printed with its control characters made visible
(`ingestaudit.report.escape`).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from ingestaudit.errors import IngestAuditError
from ingestaudit.warning_lines import format_warning, run_scope


class _Commands(TyperGroup):
    """The command group. Its edge: an `ingestaudit.errors.IngestAuditError` out of any command (a bad corpus,
    config, report, history, plug-in...) is exit 2 with its message (and a `UsageError`'s hint), never a
    traceback. A command catches a family itself only where it adds a hint or context to the message, or where the
    error is not fatal (a problem `validate` lists, a history that could not be recorded: exit 4)."""

    def invoke(self, ctx):
        """Run the command of ``ctx`` (click's `Group.invoke`), an `IngestAuditError` out of it turned into exit 2,
        and the package's own warnings printed as ``warning: <message>`` lines, each named once per run in all its
        processes (`ingestaudit.warning_lines`)."""
        import warnings

        previous = warnings.formatwarning
        warnings.formatwarning = _format_warning(previous)
        try:
            with run_scope():
                return super().invoke(ctx)
        except IngestAuditError as exc:
            _fail(str(exc), getattr(exc, "hint", ""))
        finally:
            warnings.formatwarning = previous


_format_warning = format_warning  # the one-line format of the package's warnings (`ingestaudit.warning_lines`)


app = typer.Typer(cls=_Commands, add_completion=False, no_args_is_help=True,
                  help="Audit the ingestion half of a RAG system against human labels.")


def _version(value: bool) -> None:
    if value:
        from ingestaudit import __version__

        typer.echo(f"ingestaudit {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    """Audit the ingestion half of a RAG system against human labels."""

EXIT_OK, EXIT_GATE, EXIT_USAGE, EXIT_FAILURES, EXIT_NOT_RECORDED = 0, 1, 2, 3, 4


class UsageError(IngestAuditError):
    """A fatal problem with the command's input; printed with its ``hint`` (may be empty) and exit code 2."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint


def _stdout():
    """The payload console: ``COLUMNS`` wide when set, else the terminal's width, else 100 columns (CI logs)."""
    from rich.console import Console

    from ingestaudit.report.render import terminal_width

    return Console(width=terminal_width())


def _stderr():
    from rich.console import Console

    return Console(stderr=True)


def _fail(message: str, hint: str = "") -> None:
    from ingestaudit.report.escape import terminal_text

    console = _stderr()
    # soft_wrap: a long path stays whole on one line (the terminal wraps it), so it can be copied
    console.print("error: " + terminal_text(message, keep_newlines=True), style="red", highlight=False, markup=False,
                  soft_wrap=True)
    if hint:
        console.print(terminal_text(hint, keep_newlines=True), style="dim", highlight=False, markup=False,
                      soft_wrap=True)
    raise typer.Exit(EXIT_USAGE)


def _json_c1_escaped(text: str) -> str:
    """JSON text with DEL and the C1 controls (U+007F-U+009F) written as ``\\u`` escapes (they only occur inside
    strings, where the escape means the same character)."""
    import re

    return re.sub("[\x7f-\x9f]", lambda m: f"\\u{ord(m.group(0)):04x}", text)


def _echo(text: str) -> None:
    """One payload line on stdout, its control characters made visible (names come from the corpus)."""
    from ingestaudit.report.escape import terminal_text

    typer.echo(terminal_text(text, keep_newlines=True))


def _print_view(text: str) -> None:
    """A multi-line view (comparison, trends) on stdout, control characters made visible, newlines kept."""
    from ingestaudit.report.escape import terminal_text

    _stdout().print(terminal_text(text, keep_newlines=True), highlight=False, markup=False, soft_wrap=True)


EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143  # 128 + SIGINT, 128 + SIGTERM (the shell convention)


def _on_signal(signum: int, frame: object) -> None:
    import signal

    from ingestaudit.executors.base import request_stop

    if signum == signal.SIGTERM:  # once: a second SIGTERM must not break off the clean-up
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    request_stop(signum)


@contextmanager
def _interrupts_stop_the_run(out: Path, state: dict, console):
    """While the block runs, SIGINT (Ctrl-C) and SIGTERM stop the run (`ingestaudit.executors.base.request_stop`):
    the executors stop their workers (and the workers their children) as the exception passes, no report file is
    replaced unless ``state["committed"]``, and the command ends with one line and exit 130 (SIGINT) or 143
    (SIGTERM)."""
    import signal
    import threading

    from ingestaudit.executors.base import clear_stop

    clear_stop()
    main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)} if main else {}
    try:
        yield
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        what, code = (("terminated (SIGTERM)", EXIT_TERMINATED) if signum == signal.SIGTERM
                      else ("interrupted", EXIT_INTERRUPTED))
        from ingestaudit.report.escape import terminal_text

        where = (f"the report in {out} was already written" if state.get("committed")
                 else f"no report was written; the previous report in {out}, if any, is unchanged")
        console.print(terminal_text(f"{what}: the run stopped; {where}"), style="red", highlight=False, markup=False,
                      soft_wrap=True)
        raise typer.Exit(code) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        clear_stop()


@app.command()
def run(
    corpus: Annotated[Path, typer.Argument(help="Corpus folder (docs/, truth/, optional ingestaudit.toml).")],
    parser: Annotated[Optional[list[str]], typer.Option("--parser", "-p", envvar="INGESTAUDIT_PARSER",
                                                        help="A pipeline with this parser and default stages; "
                                                             "repeat for a bake-off.")] = None,
    pipeline: Annotated[Optional[list[str]], typer.Option("--pipeline", envvar="INGESTAUDIT_PIPELINE",
                                                          help="A \\[pipelines.NAME] table of the config; repeatable.")] = None,
    sweep: Annotated[Optional[list[str]], typer.Option("--sweep", envvar="INGESTAUDIT_SWEEP",
                                                       help="STAGE.OPTION=V1,V2,...: one pipeline variant per value "
                                                            "(e.g. chunker.size=256,512).")] = None,
    outputs: Annotated[Optional[Path], typer.Option(envvar="INGESTAUDIT_OUTPUTS",
                                                    help="Precomputed outputs: DIR/<pipeline>/<doc id>.<ext>.")] = None,
    stage: Annotated[Optional[list[str]], typer.Option("--stage", envvar="INGESTAUDIT_STAGE",
                                                       help="Stage to audit (default: every stage with truth).")] = None,
    out: Annotated[Path, typer.Option(envvar="INGESTAUDIT_OUT", help="Output folder.")] = Path("ingestaudit-report"),
    workers: Annotated[Optional[int], typer.Option(min=1, envvar="INGESTAUDIT_WORKERS",
                                                   help="Worker processes (reports are identical for any N).")] = None,
    seed: Annotated[Optional[int], typer.Option(envvar="INGESTAUDIT_SEED",
                                                help="Seed of the bootstrap intervals and seeded stages.")] = None,
    config: Annotated[Optional[Path], typer.Option(envvar="INGESTAUDIT_CONFIG",
                                                   help="Config file (default: CORPUS/ingestaudit.toml).")] = None,
    baseline: Annotated[Optional[str], typer.Option(envvar="INGESTAUDIT_BASELINE",
                                                    help="Baseline report.json, or history:DB (its last accepted "
                                                         "run): exit 1 on a regression.")] = None,
    budget: Annotated[Optional[list[str]], typer.Option("--budget", envvar="INGESTAUDIT_BUDGET",
                                                        help="METRIC=X: the gate's budget for METRIC, absolute "
                                                             "(0.02) or relative (5%); repeatable.")] = None,
    history: Annotated[Optional[Path], typer.Option(envvar="INGESTAUDIT_HISTORY",
                                                    help="Append this run's summary to a DuckDB history file (exit 4 "
                                                         "when it cannot be recorded after the audit; the report "
                                                         "is kept).")] = None,
    label: Annotated[str, typer.Option(envvar="INGESTAUDIT_LABEL",
                                       help="Label of this run in the history (e.g. a commit).")] = "",
    junit: Annotated[Optional[Path], typer.Option(envvar="INGESTAUDIT_JUNIT",
                                                  help="With --baseline: write the gate's result as JUnit XML "
                                                       "here (gate.json is always written beside the "
                                                       "report).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", envvar="INGESTAUDIT_VERBOSE",
                                          help="Print every row, not only the headline.")] = False,
    strict: Annotated[bool, typer.Option(envvar="INGESTAUDIT_STRICT",
                                         help="Exit 3 when any document failed.")] = False,
    executor: Annotated[Optional[str], typer.Option(envvar="INGESTAUDIT_EXECUTOR",
                                                    help="serial, process (default) or dask; the report is the "
                                                         "same on every executor.")] = None,
    scheduler: Annotated[Optional[str], typer.Option(envvar="INGESTAUDIT_SCHEDULER",
                                                     help="Dask scheduler ADDR (tcp://host:port) of an existing "
                                                          "cluster; implies --executor dask.")] = None,
    keep_vectors: Annotated[bool, typer.Option("--keep-vectors", envvar="INGESTAUDIT_KEEP_VECTORS",
                                               help="Keep each pipeline's chunk and question vectors in OUT "
                                                    "(vectors-*.npy): compare and --baseline then measure "
                                                    "embedding drift.")] = False,
    events: Annotated[Optional[Path], typer.Option(envvar="INGESTAUDIT_EVENTS",
                                                   help="JSON lines of {doc, committed_at, indexed_at} and "
                                                        "{query_at, doc}: index freshness rows.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", envvar="INGESTAUDIT_QUIET",
                                        help="No progress display on stderr (it shows only on a terminal).")] = False,
    profile: Annotated[bool, typer.Option("--profile", envvar="INGESTAUDIT_PROFILE",
                                          help="Print the 10 steps that took longest (timings.json "
                                               "step_seconds) at the end.")] = False,
    no_step_cache: Annotated[bool, typer.Option("--no-step-cache", envvar="INGESTAUDIT_NO_STEP_CACHE",
                                                help="Parse, detect languages and split sentences again instead of "
                                                     "reading the step cache (nothing is read or written; [run] "
                                                     "step_cache; INGESTAUDIT_STEP_CACHE=off does the same).")
                     ] = False,
) -> None:
    """Audit CORPUS with one or more pipelines; write OUT/report.json, OUT/report.md and OUT/report.html."""
    from ingestaudit.step_times import mark_start

    mark_start()
    from ingestaudit.config import CONFIG_NAME, load_config
    from ingestaudit.corpus import discover
    from ingestaudit.report.escape import terminal_text
    from ingestaudit.pipeline import PipelineError, Sweep, resolve
    from ingestaudit.runner import run as run_audit

    found = discover(corpus)
    own = corpus / CONFIG_NAME  # a FIFO or a device is read (and refused), never ignored (issue 30)
    cfg_path = config if config is not None else (own if os.path.lexists(own) else None)
    cfg = load_config(cfg_path, trusted=config is not None)  # a corpus's own toml is untrusted
    if workers is not None:
        cfg.run.workers = workers
    if seed is not None:
        cfg.run.seed = seed
    if executor is not None:
        from ingestaudit.executors import EXECUTORS

        if executor not in EXECUTORS:
            _fail(f"--executor {executor}: unknown executor; known: {', '.join(EXECUTORS)}")
        cfg.run.executor = executor  # type: ignore[assignment]
    if scheduler is not None:
        cfg.run.scheduler = scheduler
        if executor is None:
            cfg.run.executor = "dask"
    if cfg.run.scheduler is not None and cfg.run.executor != "dask":
        _fail(f"--scheduler {cfg.run.scheduler}: only the dask executor uses a scheduler", "add --executor dask")
    if stage:
        cfg.run.stages = list(stage)
    if no_step_cache:
        cfg.run.step_cache = False
    names = list(parser or [])
    if len(set(names)) != len(names):
        _fail(f"a parser is named twice: {', '.join(names)}", "each --parser once")
    if outputs is not None and not outputs.is_dir():
        _fail(f"--outputs {outputs}: no such folder")
    if events is not None:  # read after the audit: a wrong path is refused before it, saying what it is
        from ingestaudit.inputs import InputFileError, check_input_file

        try:
            check_input_file(events, max_bytes=cfg.limits.results_bytes, limit="limits.results_bytes")
        except InputFileError as exc:
            _fail(f"--events {exc}", "give a JSON lines file of {doc, committed_at, indexed_at}")
    try:
        sweeps = [Sweep.parse(s) for s in (sweep or [])]
        pipes = resolve(configured=cfg.pipelines, selected=list(pipeline or []), parsers=names, outputs=outputs,
                        sweeps=sweeps, default_parsers=list(cfg.run.parsers), limit=cfg.limits.pipelines)
    except PipelineError as exc:  # a line about a [pipelines.<name>] table names the file it is in, as validate's
        lines = [f"{cfg_path}: {line}" if cfg_path is not None and line.startswith("[pipelines.") else line
                 for line in str(exc).splitlines()]
        _fail("\n".join(lines), "see 'ingestaudit run --help'")
    from ingestaudit.config_check import config_problems

    problems = config_problems(cfg, str(cfg_path or "config"), pipes)  # what `validate` checks, the same way
    if problems:
        _fail("\n".join(problems), "see 'ingestaudit stages', 'ingestaudit parsers' and docs/config.md")
    from ingestaudit.io import check_output_file, check_output_folder, folder_ids

    corpus_ids = folder_ids(found.root)  # the corpus's folders by device and inode: a bind mount is no way in
    check_output_folder(out, corpus_root=found.root, root_ids=corpus_ids)
    if history is not None:
        check_output_file(history, corpus_root=found.root, root_ids=corpus_ids, flag="--history")
    # the gate's inputs, the history file and the output folder are checked before the audit: a bad one costs nothing
    base_report, base_label, budgets, out_warning = _gate_inputs(baseline, budget, cfg.gate, cfg_path, history, out,
                                                                 [p.name for p in pipes])
    gate_opts = _gate_options(baseline, cfg.gate, cfg_path, history, junit, found.root, corpus_ids, out)
    cfg.run.parsers = [name for p in pipes if p.precomputed_root is None for name in p.parsers()]
    if not found.documents:
        _fail(f"{found.root}: no documents under docs/<class>/")

    console = _stderr()
    for p in found.problems:
        console.print(terminal_text(f"warning: {p}"), style="yellow", highlight=False, markup=False)
    state = {"committed": False}
    from ingestaudit.io import describe, run_folder
    from ingestaudit.store import STORE_NAME, StoreWriteError

    with _interrupts_stop_the_run(out, state, console):
        with run_folder(out) as work:  # the run's spill files and store, beside the report they become
            from ingestaudit.run_progress import RunProgress

            with RunProgress(console, [p.name for p in pipes], enabled=not quiet) as progress:
                try:
                    report = run_audit(found, pipes, cfg, progress=progress, work_dir=work,
                                       keep_vectors=keep_vectors, events=events)
                except ValueError as exc:  # a bad stage selection or option found by the runner
                    _fail(str(exc))
                except OSError as exc:  # the store or a spill file (a full disk): nothing was replaced
                    what = out / STORE_NAME if isinstance(exc, StoreWriteError) else work
                    _fail(f"cannot write {what} ({describe(exc)}); the previous report in {out} is unchanged")
            drift = _attach_drift(report, baseline, base_report) if keep_vectors else []
            code = _finish_run(report, found, out, out_warning, base_report, base_label, budgets, history, label,
                               verbose, strict, console, state, gate_opts)
            from ingestaudit.step_cache import summary_line

            if summary_line(report.timings):
                console.print(terminal_text(summary_line(report.timings)), highlight=False, markup=False,
                              soft_wrap=True)  # the folder's path stays whole
            if profile:
                _print_profile(report.timings, console)
            if drift:
                from ingestaudit.embedding_drift import render_drift

                _print_view("\n".join(render_drift(drift)))
    raise typer.Exit(code)


def _print_profile(timings: dict, console) -> None:
    """``--profile``: the 10 largest step times of the run (timings.json ``["(run)"]["step_seconds"]``) on
    stderr, with their share of the run's wall time."""
    from ingestaudit.step_times import RUN_KEY, top

    run = timings.get(RUN_KEY) or {}
    wall = float(run.get("wall_s") or 0.0)
    steps = run.get("step_seconds") or {}
    lines = [f"profile: the 10 longest steps (seconds, summed over documents and pipelines; wall {wall:.2f} s, "
             f"{run.get('workers', 1)} worker(s))"]
    lines += [f"  {key:<24} {sec:9.3f}" + (f"  {100 * sec / wall:5.1f} %" if wall > 0 else "")
              for key, sec in top(steps, 10)]
    console.print("\n".join(lines), highlight=False, markup=False, soft_wrap=True)


def _drift(base_spec: str, base_report, head_report, head_folder: Path, maps: list[str] | None = None) -> list:
    """Embedding drift between the baseline ``base_spec`` (a report.json; a history's run keeps no vectors) and the
    head's kept vectors in ``head_folder`` (`ingestaudit.embedding_drift.compare_kept`, the gate's pipeline pairs,
    the head's seed)."""
    from ingestaudit.embedding_drift import compare_kept
    from ingestaudit.report.compare import pipeline_pairs
    from ingestaudit.report.history import HISTORY_PREFIX

    pairs = pipeline_pairs(base_report, head_report, maps or [])
    seed = int((head_report.config.get("run") or {}).get("seed", 0))
    if base_spec.startswith(HISTORY_PREFIX):
        from ingestaudit.kept_vectors import has_kept_vectors

        if not has_kept_vectors(head_folder):
            return []
        return [{"base_pipeline": b, "head_pipeline": h, "state": "not_comparable",
                 "reason": "the baseline is a history's run, which keeps no vectors"} for b, h in pairs]
    return compare_kept(Path(base_spec).parent, head_folder, pairs, seed=seed)


def _attach_drift(report, baseline: str | None, base_report) -> list:
    """``run --baseline --keep-vectors``: the drift against the baseline's kept vectors, added to ``report.details``
    (stage ``embedding``, name ``drift``: report.md and report.html show it) and returned for the terminal."""
    if baseline is None or base_report is None or report.kept_vectors is None:
        return []
    from ingestaudit.report.schema import StageDetail

    drift = _drift(baseline, base_report, report, report.kept_vectors)
    if drift:
        report.details.append(StageDetail(pipeline="", stage="embedding", name="drift", data=drift))
    return drift


@app.command()
def validate(corpus: Annotated[Path, typer.Argument(help="Corpus folder to check.")],
             config: Annotated[Optional[Path], typer.Option(envvar="INGESTAUDIT_CONFIG",
                                                            help="Config file to check the corpus with, as 'run "
                                                                 "--config' reads it (default: "
                                                                 "CORPUS/ingestaudit.toml).")] = None) -> None:
    """Check the corpus layout, every truth file and the configuration (each pipeline's steps and their options)
    without running anything; exit 2 if any problem is found."""
    from ingestaudit.corpus_check import check_corpus
    from ingestaudit.report.escape import terminal_text

    check = check_corpus(corpus, config)
    found, problems, warnings, n_questions = check.found, check.problems, check.warnings, check.n_questions
    for w in warnings:
        _echo(f"warning: {terminal_text(w)}")
    for p in problems:
        _echo(terminal_text(p))
    if problems:
        _stderr().print(terminal_text(f"{len(problems)} problem(s) in {found.root}"), style="red", highlight=False,
                        markup=False)
        raise typer.Exit(EXIT_USAGE)
    classes = ", ".join(f"{c}: {n}" for c, n in found.classes().items())
    asked = f", {n_questions} question{'s' * (n_questions != 1)} ({found.questions.name})" if found.questions else ""
    n_docs = len(found.documents)
    noted = f"; {len(warnings)} warning{'s' * (len(warnings) != 1)} above" if warnings else ""
    _echo(terminal_text(f"ok: {n_docs} document{'s' * (n_docs != 1)} ({classes}){asked}{noted}"))


@app.command()
def init(corpus: Annotated[Path, typer.Argument(help="Folder to create (must be absent or empty).")]) -> None:
    """Write the corpus layout with one example of each file."""
    from ingestaudit.scaffold import reference_lines, write_example_corpus

    try:
        written = write_example_corpus(corpus)
    except FileExistsError as exc:
        _fail(str(exc), "choose a new folder")
    for path in written:
        _echo(str(path))
    for line in reference_lines():  # where every key of these files is documented
        _echo(line)


@app.command()
def parsers() -> None:
    """List the registered parsers, whether each is available here, its version and the file extensions it reads
    (the routes it can take in a pipeline's ``parser = { ext = "name" }`` table)."""
    from ingestaudit.parsers.registry import load_parser, parser_extensions, parser_names

    for name in parser_names():
        try:
            ok, info = load_parser(name).available()
        except Exception as exc:  # a broken plug-in is listed, not fatal
            ok, info = False, f"{type(exc).__name__}: {exc}"
        _echo(f"{name}\t{'available' if ok else 'unavailable'}\t{info}\t{parser_extensions(name)}")


def _gate_inputs(baseline: str | None, budget_flags: list[str] | None, config_gate: dict, cfg_path: Path | None,
                 history: Path | None, out: Path, pipelines: list[str]) -> tuple:
    """Read and check, before any audit: the baseline (a report.json or ``history:DB``, which must share a pipeline
    with this run), the budgets of ``[gate]`` and ``--budget``, the history file and the output folder. Exits 2
    naming the flag or file on a bad one."""
    from ingestaudit.report.compare import resolve_budgets
    from ingestaudit.report.escape import terminal_text
    from ingestaudit.report.provenance import check_out_folder

    base_report, base_label = None, ""
    if baseline is not None:
        base_report, base_label = _read_baseline(baseline, "--baseline", first_night=True)
    if baseline is not None and base_report is None:  # history:DB with no run yet: warn, run ungated
        same = history is not None and Path(baseline[len("history:"):]).resolve() == history.resolve()
        _stderr().print(terminal_text(
            f"warning: --baseline {baseline}: no run recorded yet, so this run is not gated (exit 0 unless it "
            + ("fails otherwise); it starts the history and is accepted as its first baseline"
               if same else "fails otherwise); add --history with the same file to start the history")),
            style="yellow", highlight=False, markup=False)
    elif baseline is not None:
        from ingestaudit.report.baseline import pipeline_names

        base_names = pipeline_names(base_report)
        shared = set(base_names) & set(pipelines)
        if not shared:
            _fail(f"--baseline {baseline}: no pipeline in common: the baseline has {', '.join(base_names) or 'none'};"
                  f" this run has {', '.join(pipelines)}", "name the run's pipelines as the baseline's, or compare "
                  "the two reports with 'ingestaudit compare BASE HEAD --map OLD=NEW'")
        from ingestaudit.report.compare import has_summary_for

        if not has_summary_for(base_report, shared):  # the gate would refuse it after the audit
            _fail(f"--baseline {baseline}: nothing to gate against: the baseline has no summary row for "
                  f"{', '.join(sorted(shared))}; nothing was audited")
    budgets = resolve_budgets(config_gate, list(budget_flags or []), config_source=f"{cfg_path or 'config'} [gate]",
                              report_metrics=sorted({r.metric for r in base_report.summary}) if base_report else ())
    if history is not None:
        from ingestaudit.report.history import HistoryError, check_history

        try:
            check_history(history)
        except HistoryError as exc:
            _fail(str(exc), "--history needs an ingestaudit history file (or a new path)")
    warning = check_out_folder(out.resolve())
    return base_report, base_label, budgets, warning


def _gate_options(baseline: str | None, config_gate: dict, cfg_path: Path | None, history: Path | None,
                  junit: Path | None, corpus_root: Path, root_ids, out: Path) -> dict:
    """The gate's settings (`ingestaudit.report.compare.gate_settings`), the history its control bands come from
    (the baseline's ``history:DB``, else ``--history``), the ``--junit`` file (checked before the audit: not one of
    the report's own files in ``out``, not the history) and the baseline as given. Exits 2 naming the setting or
    file on a bad one."""
    from ingestaudit.io import check_output_file
    from ingestaudit.report.provenance import REPORT_FILES
    from ingestaudit.report.compare import gate_settings
    from ingestaudit.report.history import HISTORY_PREFIX

    settings = gate_settings(config_gate, f"{cfg_path or 'config'} [gate]")
    if junit is not None:
        if baseline is None:
            _fail(f"--junit {junit}: only a gated run writes a gate result", "add --baseline REPORT or history:DB")
        check_output_file(junit, corpus_root=corpus_root, root_ids=root_ids, flag="--junit",
                          own=[out / name for name in REPORT_FILES] + ([history] if history is not None else []),
                          report_folders=[out])
    bands_from = Path(baseline[len(HISTORY_PREFIX):]) if baseline and baseline.startswith(HISTORY_PREFIX) \
        else history
    return {"settings": settings, "junit": junit, "bands_from": bands_from, "baseline": baseline}


def _write_gate_files(result, junit: Path | None, key_rows: list) -> None:
    """``--junit`` beside the report: exit 2 naming the file when it cannot be written."""
    if junit is None:
        return
    from ingestaudit.io import describe, write_atomic
    from ingestaudit.report.gate_result import junit_xml

    try:
        write_atomic(junit, junit_xml(result, key_rows))
    except OSError as exc:
        _fail(f"--junit {junit}: cannot write ({describe(exc)})")


def _read_baseline(spec: str, flag: str, first_night: bool = False):
    """`ingestaudit.report.baseline.read_baseline`, a history's error prefixed with ``flag``."""
    from ingestaudit.report.baseline import read_baseline
    from ingestaudit.report.history import HistoryError

    try:
        return read_baseline(spec, first_night=first_night)
    except HistoryError as exc:
        _fail(f"{flag}: {exc}")


def _finish_run(report, found, out: Path, out_warning: str, base_report, base_label: str, budgets: dict,
                history: Path | None, label: str, verbose: bool, strict: bool, console, state: dict,
                gate_opts: dict) -> int:
    """Everything after the audit: item hashes, the output folder (report.json, report.md, report.html,
    measurements.parquet, timings.json, written together by `ingestaudit.io.write_report`), the history, the
    terminal view and the gate (its result in report.json, gate.json and ``--junit``). Returns the exit code; a file
    that cannot be written is exit 2 with its path."""
    from ingestaudit.io import OutputError, write_report
    from ingestaudit.report.compare import render_comparison
    from ingestaudit.report.gate_result import band_lines, evaluate_gate, first_run_result, key_rows
    from ingestaudit.report.escape import terminal_text
    from ingestaudit.report.provenance import check_out_folder, item_hashes
    from ingestaudit.report.render import render_terminal, terminal_width

    report.corpus.item_hashes = item_hashes(found)
    out_warning = check_out_folder(out.resolve(), report.corpus.fingerprint) or out_warning  # changed meanwhile?
    if out_warning:
        console.print("warning: " + terminal_text(out_warning), style="yellow", highlight=False, markup=False)
    history_error, recorded = "", False
    notes: list[str] = []  # lines printed after the headline and the gate's verdict (the history's)
    comparison = None
    if base_report is not None:  # gated before the report is written: its result goes into report.json
        comparison, report.gate = evaluate_gate(base_report, report, budgets=budgets,
                                                settings=gate_opts["settings"], base_label=base_label,
                                                head_label="this run", bands_from=gate_opts["bands_from"])
    elif gate_opts["baseline"] is not None:  # history:DB with no run yet
        report.gate = first_run_result(gate_opts["baseline"], "this run")

    def record() -> object:  # the history, once report.json and report.md are staged; its trends go into the HTML
        nonlocal history_error, recorded
        if history is None:  # checked before the audit; a lock taken since is reported after the report is saved
            return None
        from ingestaudit.report.history import HistoryError, append_run, trends
        from ingestaudit.report.tables import all_headline_keys

        try:
            run_id = append_run(history, report, label=label,
                                verdict=report.gate.verdict if report.gate is not None else None)
            recorded = True
            keys = all_headline_keys(report.summary, report.pipelines)  # every class's keys, as the gate bands them
            found_trend = trends(history, metrics=keys)
            notes.append(f"history: run {run_id} appended to {history}")  # printed after the verdict
            return found_trend
        except HistoryError as exc:
            history_error = str(exc)
            return None

    try:
        committed = write_report(out, report, trend=record)
    except OutputError as exc:
        _fail(str(exc) + (f"; the run was recorded in the history {history}" if recorded else ""))
    state["committed"] = True
    written = ["report.json", "report.md", "report.html", "measurements.parquet"]
    written += [n for n in committed if n not in written]
    render_terminal(report, _stdout(), verbose=verbose, out_dir=out, written=written)
    code = EXIT_OK
    if report.gate is not None:
        _write_gate_files(report.gate, gate_opts["junit"], key_rows(comparison, report))
    if comparison is not None:
        _print_view("\n".join([render_comparison(comparison, width=terminal_width(), verbose=verbose),
                               *band_lines(report.gate)]))
        if report.gate.verdict == "fail":
            code = EXIT_GATE
    for note in notes:  # the verdict first, then where the run was recorded
        console.print(terminal_text(note), highlight=False, markup=False)
    if code == EXIT_OK and strict and report.failures:
        code = EXIT_FAILURES
    if history_error:  # the report is kept: exit 4, unless a failed gate or --strict failures say more (1, 3)
        kept = f"the run was not recorded in the history; its report in {out} was written"
        also = {EXIT_GATE: "; the gate FAILED: exit 1", EXIT_FAILURES: "; documents failed (--strict): exit 3"}
        console.print(terminal_text(f"error: {history_error}; {kept}{also.get(code, '')}"), style="red",
                      highlight=False, markup=False)
        code = code or EXIT_NOT_RECORDED
    return code


@app.command()
def report(
    report_json: Annotated[Path, typer.Argument(help="A report.json written by 'ingestaudit run'.")],
    html: Annotated[Optional[Path], typer.Option(help="Write an HTML view here.")] = None,
    md: Annotated[Optional[Path], typer.Option(help="Write a Markdown view here.")] = None,
    history: Annotated[Optional[Path], typer.Option(help="A history file: the HTML view draws its trends.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Print every row, not only the headline.")] = False,
) -> None:
    """Re-render a report.json: its headline in the terminal, and optionally the HTML and Markdown views."""
    from ingestaudit.io import check_output_file, describe, folder_ids, write_atomic
    from ingestaudit.report.escape import terminal_text
    from ingestaudit.report.integrity import read_checked_report
    from ingestaudit.report.render import render_html, render_markdown, render_terminal
    from ingestaudit.report.timings import attach_timings, timings_path

    rep = read_checked_report(report_json)  # its store and summary checked too
    warning = attach_timings(rep, report_json)
    if warning:
        _stderr().print(terminal_text(f"warning: {warning}"), style="yellow", highlight=False, markup=False,
                        soft_wrap=True)
    trend = None
    if history is not None:
        from ingestaudit.report.history import trends
        from ingestaudit.report.tables import choose_keys

        trend = trends(history, metrics=list(choose_keys((r.metric, r.label) for r in rep.summary).values()))
    targets = [(flag, path) for flag, path in (("--html", html), ("--md", md)) if path is not None]
    if len(targets) == 2 and Path(os.path.abspath(html)) == Path(os.path.abspath(md)):
        _fail(f"--html and --md name the same file {html}")
    corpus_root = Path(rep.corpus.path) if rep.corpus.path else None  # the report knows its corpus
    ids = folder_ids(corpus_root) if corpus_root is not None else None
    never = [report_json, timings_path(report_json), *([history] if history is not None else [])]
    for flag, path in targets:
        check_output_file(path, corpus_root=corpus_root, root_ids=ids, flag=flag, never=never)
    render_terminal(rep, _stdout(), verbose=verbose)
    views = [(flag, path, render_html(rep, history=trend) if flag == "--html" else render_markdown(rep))
             for flag, path in targets]
    for flag, path, text in views:
        try:
            write_atomic(path, text)
        except OSError as exc:
            _fail(f"{flag} {path}: cannot write ({describe(exc)})" + ("; nothing was written" if flag == views[0][0]
                                                                      else f"; {views[0][1]} was written"))
        _stderr().print(terminal_text(f"wrote {path}"), highlight=False, markup=False)


@app.command()
def questions(
    report_dir: Annotated[Path, typer.Argument(help="A report folder written by 'ingestaudit run' (with questions).")],
    id_: Annotated[Optional[str], typer.Option("--id", help="Only this question.")] = None,
    pipeline: Annotated[Optional[str], typer.Option("--pipeline", help="Only this pipeline.")] = None,
    misses: Annotated[bool, typer.Option("--misses", help="Only questions some pipeline missed.")] = False,
) -> None:
    """Every question's top results with HIT or MISS, the pipelines side by side, then per pipeline the totals and
    p50/p95 latency (nearest rank): from the report folder's questions/<pipeline>.jsonl."""
    from ingestaudit.report.questions import listing, read_question_files
    from ingestaudit.report.render import terminal_width

    from ingestaudit.report.escape import terminal_text

    problems: list[str] = []  # bad lines: named (file:line) and skipped, the other questions listed
    try:
        found = read_question_files(report_dir, problems)
        lines = list(listing(found, qid=id_, pipeline=pipeline, misses=misses, width=terminal_width()))
    except (ValueError, OSError) as exc:
        _fail(str(exc))
    for problem in problems:
        _stderr().print(terminal_text(f"warning: {problem}; skipped (not in the listing or its totals)"),
                        style="yellow", highlight=False, markup=False, soft_wrap=True)
    _print_view("\n".join(lines))


@app.command()
def compare(
    base: Annotated[str, typer.Argument(help="Baseline report.json, or history:DB (its last accepted run).")],
    head: Annotated[Path, typer.Argument(help="New report.json.")],
    map_: Annotated[Optional[list[str]], typer.Option("--map", help="OLD=NEW: gate the baseline's pipeline OLD "
                                                                    "against the head's NEW; repeatable.")] = None,
    budget: Annotated[Optional[list[str]], typer.Option("--budget", envvar="INGESTAUDIT_BUDGET",
                                                        help="METRIC=X: budget for METRIC, absolute (0.02) or "
                                                             "relative (5%); repeatable; overrides \\[gate].")] = None,
    config: Annotated[Optional[Path], typer.Option(envvar="INGESTAUDIT_CONFIG",
                                                   help="Read \\[gate] budgets and settings from this file "
                                                        "(default: the head report's config).")] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print the result as JSON (for other tools).")] = False,
    junit: Annotated[Optional[Path], typer.Option(envvar="INGESTAUDIT_JUNIT",
                                                  help="Write the gate's result as JUnit XML here.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="List every compared row.")] = False,
) -> None:
    """Gate HEAD against BASE: exit 1 when a metric worsened beyond its budget and beyond noise (one-sided paired
    test, Holm correction), an item that was ok now fails, or a row of BASE is missing in HEAD; exit 2 on bad input
    or when no pipeline is in common. The result is written as gate.json beside HEAD and as the "gate" object of
    HEAD's report.json; with BASE history:DB, key metrics are checked against their control bands."""
    import json as _json

    from ingestaudit.report.compare import gate_settings, render_comparison, resolve_budgets
    from ingestaudit.report.gate_result import band_lines, evaluate_gate, key_rows
    from ingestaudit.report.history import HISTORY_PREFIX
    from ingestaudit.report.integrity import read_checked_report
    from ingestaudit.report.render import terminal_width

    base_report, base_label = _read_baseline(base, "BASE")
    head_report = read_checked_report(head)  # its store and summary checked too
    gate = head_report.config.get("gate") if isinstance(head_report.config.get("gate"), dict) else {}
    source = f"{head} config [gate]"
    if config is not None:
        from ingestaudit.config import load_config

        gate, source = load_config(config, trusted=True).gate, f"{config} [gate]"
    metrics = sorted({r.metric for r in base_report.summary} | {r.metric for r in head_report.summary})
    budgets = resolve_budgets(gate, list(budget or []), config_source=source, report_metrics=metrics)
    settings = gate_settings(gate, source)
    if junit is not None:
        from ingestaudit.io import check_output_file

        from ingestaudit.report.gate_result import GATE_FILE

        check_output_file(junit, corpus_root=None, root_ids=None, flag="--junit",
                          never=[Path(base[len(HISTORY_PREFIX):]) if base.startswith(HISTORY_PREFIX) else Path(base)],
                          own=[head, head.parent / GATE_FILE], report_folders=[head.parent] + (
                              [] if base.startswith(HISTORY_PREFIX) else [Path(base).parent]))
    bands_from = Path(base[len(HISTORY_PREFIX):]) if base.startswith(HISTORY_PREFIX) else None
    comparison, result = evaluate_gate(base_report, head_report, budgets=budgets, settings=settings,
                                       maps=list(map_ or []), base_label=base_label, head_label=str(head),
                                       bands_from=bands_from)
    drift = _drift(base, base_report, head_report, head.parent, list(map_ or []))  # kept vectors of both
    _record_gate(head, result)
    _write_gate_files(result, junit, key_rows(comparison, head_report))
    if json_:
        data = comparison.to_dict() | {"bands": [b.model_dump() for b in result.bands]}
        data["verdict"] = result.verdict  # gate.json's word (pass, fail): a band with bands = "fail" fails it too
        if drift:
            data["embedding_drift"] = drift
        text = _json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False)
        typer.echo(_json_c1_escaped(text))  # JSON escapes C0 itself; C1 and DEL too, for a terminal reading it
    else:
        _print_view("\n".join([render_comparison(comparison, width=terminal_width(), verbose=verbose),
                               *band_lines(result)]))
        if drift:
            from ingestaudit.embedding_drift import render_drift

            _print_view("\n".join(render_drift(drift)))
    raise typer.Exit(EXIT_GATE if result.verdict == "fail" else EXIT_OK)


def _record_gate(head: Path, result) -> None:
    """``compare``'s result beside HEAD: gate.json, and the ``gate`` object of HEAD's report.json (its other keys
    and their order unchanged). A folder that cannot be written is a warning (the verdict still decides the exit
    code): compare also reads reports it may not change."""
    import json as _json

    from ingestaudit.io import OutputError, describe, write_atomic
    from ingestaudit.report.escape import terminal_text
    from ingestaudit.report.gate_result import GATE_FILE

    try:
        raw = _json.loads(head.read_text(encoding="utf-8"))
        raw["gate"] = result.model_dump(mode="json")
        write_atomic(head.parent / GATE_FILE, result.to_json())
        write_atomic(head, _json.dumps(raw, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    except (OSError, OutputError) as exc:  # OutputError: a link or a FIFO there, never replaced
        why = describe(exc) if isinstance(exc, OSError) else str(exc)
        _stderr().print(terminal_text(f"warning: the gate's result was not written beside {head} ({why})"),
                        style="yellow", highlight=False, markup=False, soft_wrap=True)


@app.command("history")
def history_(
    db: Annotated[Path, typer.Argument(help="A history file written by 'ingestaudit run --history'.")],
    metric: Annotated[Optional[str], typer.Option(help="A metric, or a stage (e.g. extraction): its series "
                                                       "(default: each stage's key metric).")] = None,
    class_: Annotated[Optional[str], typer.Option("--class", help="Only this class (__all__: overall).")] = None,
    pipeline: Annotated[Optional[str], typer.Option(help="Only this pipeline.")] = None,
    last: Annotated[int, typer.Option(min=1, help="The last N runs.")] = 20,
    accept: Annotated[Optional[str], typer.Option(help="Mark a run (label, run id, '#ID' or 'last') accepted: "
                                                       "the baseline of --baseline history:DB; a number that is one "
                                                       "run's id and another's label is refused.")] = None,
    items: Annotated[bool, typer.Option("--items", help="Per item: --metric M (or M[LABEL]) in each run, the "
                                                        "items that got worse most since the accepted run "
                                                        "first.")] = False,
    force: Annotated[bool, typer.Option("--force", help="With --accept: accept a run whose gate failed (refused "
                                                        "otherwise).")] = False,
) -> None:
    """Print trend tables from a history file, or accept a run as the gate's baseline (a run whose gate failed only
    with --force)."""
    from ingestaudit.report.escape import terminal_text
    from ingestaudit.report.history import (accept as accept_run, item_trends, list_runs, render_item_trends,
                                            render_trends, trends)
    from ingestaudit.report.render import terminal_width
    from ingestaudit.report.tables import choose_keys

    if accept is not None:
        run = accept_run(db, accept, force=force)
        failed = " (its gate FAILED: accepted with --force)" if run.verdict == "fail" else ""
        _echo(terminal_text(f"accepted run {run.run_id} ({run.label or run.time}) of {db}{failed}"))
        return
    if items:
        if not metric or "." not in metric:
            _fail("--items needs --metric STAGE.METRIC (e.g. --metric extraction.cer, or pii.f1[PERSON])")
        name, _, lab = metric.partition("[")
        runs, per_item, ref = item_trends(db, name, label=lab.rstrip("]"), doc_class=class_,
                                          pipeline=pipeline, last=last)
        _print_view(render_item_trends(runs, per_item, ref, metric, width=terminal_width()))
        return
    keys = None
    if metric is None:
        runs_all = list_runs(db)
        if runs_all:
            _, everything = trends(db, doc_class=class_, pipeline=pipeline, last=last)
            keys = list(choose_keys((t.metric, t.label) for t in everything).values())
    runs, series = trends(db, metric=metric, doc_class=class_, pipeline=pipeline, last=last, metrics=keys)
    _print_view(render_trends(runs, series, width=terminal_width()))


def _importer_names() -> list[str]:
    from ingestaudit.importers import importer_names  # standard library only: cheap at start-up

    return importer_names()


@app.command("import")
def import_(
    kind: Annotated[str, typer.Argument(help="Data set format: " + ", ".join(_importer_names()) + ".")],
    src: Annotated[Path, typer.Argument(help="The data set folder (only read).")],
    dest: Annotated[Path, typer.Argument(help="Corpus folder to create (absent or empty).")],
    limit: Annotated[Optional[int], typer.Option(min=1, help="Import at most N items (per language for "
                                                 "lingua-testdata), where the importer supports it.")] = None,
    scheme: Annotated[Optional[str], typer.Option(help="The tagging scheme of the source, where the importer reads "
                                                  "one (conll2003: iob1, as distributed, or iob2).")] = None,
) -> None:
    """Build a corpus (documents linked, truth and precomputed outputs written) from a public labelled data set."""
    import inspect
    import sys

    from ingestaudit.importers import ImporterError, get_importer

    from ingestaudit.io import check_output_folder

    # the data set is only read: DEST may not lie in it, by path or through a mount
    check_output_folder(dest, corpus_root=src if src.is_dir() else None, flag="DEST", within="data set")
    try:
        importer = get_importer(kind)
        kwargs = {}
        if limit is not None:
            params = inspect.signature(importer).parameters
            name = next((n for n in ("limit_per_language", "limit") if n in params), None)
            if name is None:
                _fail(f"the {kind} importer has no --limit")
            kwargs[name] = limit
        if scheme is not None:
            known = getattr(sys.modules[importer.__module__], "SCHEMES", None)
            if "scheme" not in inspect.signature(importer).parameters or known is None:
                _fail(f"the {kind} importer has no --scheme")
            if scheme not in known:
                _fail(f"--scheme {scheme!r}: the {kind} importer reads {', '.join(known)}")
            kwargs["scheme"] = scheme
        summary = importer(src, dest, **kwargs)
    except ImporterError as exc:
        _fail(str(exc), "see 'ingestaudit import --help'")
    for line in summary.lines():
        _echo(line)


def _register_eval_run() -> None:
    from ingestaudit.evalrun import eval_run

    app.command("eval-run", help="Score a TREC-format run against qrels with trec_eval's conventions "
                                 "(no corpus needed).")(eval_run)


_register_eval_run()


@app.command()
def stages() -> None:
    """List the stages that can be audited, and the implementations of each pipeline stage."""
    from ingestaudit.auditors.registry import stage_names
    from ingestaudit.pipeline import DEFAULTS
    from ingestaudit.stages.chunkers.registry import chunker_names
    from ingestaudit.stages.cleaners.registry import cleaner_names
    from ingestaudit.stages.dedup_step import detector_names
    from ingestaudit.stages.embedders.registry import embedder_names
    from ingestaudit.stages.retrievers import retriever_names

    from ingestaudit.parsers.registry import parser_extensions, parser_names

    typer.echo("audited stages: " + ", ".join(stage_names()))
    typer.echo(f"parser (default {DEFAULTS['parser']}; routes: the extensions each reads): "
               + "; ".join(f"{n} ({parser_extensions(n)})" for n in parser_names()))
    for stage, names in (("cleaner", cleaner_names()), ("chunker", chunker_names()),
                         ("embedder", embedder_names()), ("index", ["hnsw", "ivf", "flat"]),
                         ("retriever", retriever_names())):
        typer.echo(f"{stage} (default {DEFAULTS[stage]}): " + ", ".join(names))
    from ingestaudit.pipeline import DETECTION_DEFAULTS
    from ingestaudit.stages.language import detector_names as language_detectors
    from ingestaudit.stages.pii import detector_names as pii_detectors

    from ingestaudit.enrichment import ENTITY_EXTRACTORS, METADATA_EXTRACTORS

    for step, names in (("language", language_detectors()), ("pii", [*pii_detectors(), "precomputed", "redacted"]),
                        ("entities", list(ENTITY_EXTRACTORS)), ("metadata", list(METADATA_EXTRACTORS)),
                        ("relations", ["precomputed"]), ("dedup", detector_names())):
        typer.echo(f"{step} (step, runs when its stage does; default {DETECTION_DEFAULTS[step]}): " + ", ".join(names))


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
