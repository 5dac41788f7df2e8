"""The ``ingestaudit`` command line (typer). Heavy libraries are imported inside commands, never at module level.

Exit codes: 0 ran (and every gate held); 1 a gate failed; 2 usage or corpus error (nothing audited); 3 the run
finished but some documents failed (only with ``--strict``). Payload goes to stdout, progress to stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True,
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

EXIT_OK, EXIT_GATE, EXIT_USAGE, EXIT_FAILURES = 0, 1, 2, 3


class UsageError(Exception):
    """A fatal problem with the command's input; printed with a hint and exit code 2."""


def _stdout():
    """The payload console: at least 140 columns when not writing to a terminal (CI logs, files)."""
    import sys

    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 140)


def _stderr():
    from rich.console import Console

    return Console(stderr=True)


def _fail(message: str, hint: str = "") -> None:
    console = _stderr()
    console.print("error: " + message, style="red", highlight=False, markup=False)
    if hint:
        console.print(hint, style="dim", highlight=False, markup=False)
    raise typer.Exit(EXIT_USAGE)


@app.command()
def run(
    corpus: Annotated[Path, typer.Argument(help="Corpus folder (docs/, truth/, optional ingestaudit.toml).")],
    parser: Annotated[Optional[list[str]], typer.Option("--parser", "-p", envvar="INGESTAUDIT_PARSER",
                                                        help="A pipeline with this parser and default stages; "
                                                             "repeat for a bake-off.")] = None,
    pipeline: Annotated[Optional[list[str]], typer.Option("--pipeline", envvar="INGESTAUDIT_PIPELINE",
                                                          help="A [pipelines.NAME] of the config; repeatable.")] = None,
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
    baseline: Annotated[Optional[Path], typer.Option(envvar="INGESTAUDIT_BASELINE",
                                                     help="Baseline report.json: exit 1 on a regression.")] = None,
    strict: Annotated[bool, typer.Option(envvar="INGESTAUDIT_STRICT",
                                         help="Exit 3 when any document failed.")] = False,
) -> None:
    """Audit CORPUS with one or more pipelines; write OUT/report.json and OUT/report.md."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ingestaudit.auditors.registry import UnknownStage
    from ingestaudit.config import CONFIG_NAME, ConfigError, load_config
    from ingestaudit.corpus import CorpusError, discover
    from ingestaudit.io import write_atomic
    from ingestaudit.parsers.base import ParserUnavailable
    from ingestaudit.parsers.registry import PRECOMPUTED, UnknownParser
    from ingestaudit.report.render import render_markdown, render_terminal
    from ingestaudit.pipeline import PipelineError, Sweep, resolve
    from ingestaudit.runner import parser_spec, run as run_audit

    try:
        found = discover(corpus)
        cfg_path = config if config is not None else (corpus / CONFIG_NAME if (corpus / CONFIG_NAME).is_file() else None)
        cfg = load_config(cfg_path)
    except (CorpusError, ConfigError) as exc:
        _fail(str(exc))
    if workers is not None:
        cfg.run.workers = workers
    if seed is not None:
        cfg.run.seed = seed
    if stage:
        cfg.run.stages = list(stage)
    names = list(parser or [])
    if len(set(names)) != len(names):
        _fail(f"a parser is named twice: {', '.join(names)}", "each --parser once")
    if outputs is not None and not outputs.is_dir():
        _fail(f"--outputs {outputs}: no such folder")
    try:
        sweeps = [Sweep.parse(s) for s in (sweep or [])]
        pipes = resolve(configured=cfg.pipelines, selected=list(pipeline or []), parsers=names, outputs=outputs,
                        sweeps=sweeps, default_parsers=list(cfg.run.parsers))
    except PipelineError as exc:
        _fail(str(exc), "see 'ingestaudit run --help'")
    out_dir = out.resolve()
    if out_dir.exists() and not out_dir.is_dir():
        _fail(f"--out {out}: exists and is not a folder")
    if out_dir == found.root or found.root in out_dir.parents:
        _fail(f"--out {out}: inside the corpus {found.root}; the corpus is never written to",
              "choose an output folder outside the corpus")
    base_report = None
    if baseline is not None:
        from ingestaudit.report.schema import ReportError, read_report

        try:
            base_report = read_report(baseline)  # read before the audit: a bad baseline costs nothing
        except ReportError as exc:
            _fail(str(exc))
    cfg.run.parsers = [p.stage("parser").use for p in pipes if p.precomputed_root is None]
    try:
        for p in pipes:
            if p.precomputed_root is None:
                ok, why = parser_spec(p, cfg.parser_options).build().available()
                if not ok:
                    _fail(f"pipeline {p.name!r}: parser {p.stage('parser').use!r} is unavailable: {why}")
    except (UnknownParser, ParserUnavailable, ValueError) as exc:
        _fail(str(exc), "see 'ingestaudit parsers'")
    if not found.documents:
        _fail(f"{found.root}: no documents under docs/<class>/")

    console = _stderr()
    for p in found.problems:
        console.print(f"warning: {p}", style="yellow", highlight=False, markup=False)
    with Progress(TextColumn("auditing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        def progress(total: int):
            task = bar.add_task("audit", total=total)
            return lambda: bar.advance(task)

        try:
            report = run_audit(found, pipes, cfg, progress=progress)
        except (UnknownStage, ValueError) as exc:
            _fail(str(exc))
    write_atomic(out / "report.json", report.to_json())
    write_atomic(out / "report.md", render_markdown(report))
    if report.timings:
        import json as _json

        write_atomic(out / "timings.json", _json.dumps(report.timings, indent=1, sort_keys=True) + "\n")
    render_terminal(report, _stdout())
    console.print(f"wrote {out / 'report.json'} and {out / 'report.md'}", highlight=False, markup=False)
    code = EXIT_OK
    if base_report is not None:
        from ingestaudit.report.compare import compare_reports, render_comparison

        comparison = compare_reports(base_report, report)
        _stdout().print(render_comparison(comparison), highlight=False, markup=False)
        if comparison.regressions:
            code = EXIT_GATE
    if code == EXIT_OK and strict and report.failures:
        code = EXIT_FAILURES
    raise typer.Exit(code)


@app.command()
def validate(corpus: Annotated[Path, typer.Argument(help="Corpus folder to check.")]) -> None:
    """Check the corpus layout and every truth file without running anything; exit 2 if any problem is found."""
    from ingestaudit.config import CONFIG_NAME, ConfigError, load_config
    from ingestaudit.corpus import CorpusError, discover
    from ingestaudit.truth import TruthError, load_truth

    try:
        found = discover(corpus)
    except CorpusError as exc:
        _fail(str(exc))
    problems = [str(p) for p in found.problems]
    if (corpus / CONFIG_NAME).is_file():
        try:
            cfg = load_config(corpus / CONFIG_NAME)
        except ConfigError as exc:
            problems.append(str(exc))
        else:
            from ingestaudit.runner import select_stages

            try:  # every [auditor_options.X] table names a stage and its options build that auditor
                select_stages(cfg.run.stages, [], cfg.auditor_options)
            except ValueError as exc:
                problems.append(f"{CONFIG_NAME}: {exc}")
    from ingestaudit.auditors.pii import validate_pii_gold
    from ingestaudit.metrics.teds import parse_table

    warnings: list[str] = []
    for doc in found.documents:
        try:
            truth = load_truth(doc, found.root)
        except TruthError as exc:
            problems += [str(p) for p in exc.problems]
            continue
        rel_truth = doc.truth_json.relative_to(found.root).as_posix() if doc.truth_json else doc.doc_id
        for k, html in enumerate(truth.tables):  # a reference table the TEDS tree cannot be built from
            parsed = parse_table(html)
            if parsed.state is not None:
                problems.append(f"{rel_truth}: tables[{k}]: {parsed.message}")
        if truth.pii and truth.text is not None and doc.truth_json is not None:
            rel = doc.truth_json.relative_to(found.root).as_posix()
            for p in validate_pii_gold(truth.text, truth.pii):  # overlaps and Luhn failures warn, bad spans fail
                (problems if p.severity == "error" else warnings).append(f"{rel}: pii[{p.index}]: {p.message}")
    if found.questions is not None:
        from ingestaudit.questions import load_questions

        truths = {}
        for doc in found.documents:
            try:
                truths[doc.doc_id] = load_truth(doc, found.root)
            except TruthError:
                from ingestaudit.truth import Truth

                truths[doc.doc_id] = Truth()
        try:
            qset = load_questions(found.questions, found.questions.name, truths)
            problems += [str(p) for p in qset.problems]
        except OSError as exc:
            problems.append(f"{found.questions.name}: unreadable ({exc.strerror or exc})")
    for w in warnings:
        typer.echo(f"warning: {w}")
    for p in problems:
        typer.echo(p)
    if problems:
        _stderr().print(f"{len(problems)} problem(s) in {found.root}", style="red", highlight=False, markup=False)
        raise typer.Exit(EXIT_USAGE)
    classes = ", ".join(f"{c}: {n}" for c, n in found.classes().items())
    typer.echo(f"ok: {len(found.documents)} documents ({classes})")


@app.command()
def init(corpus: Annotated[Path, typer.Argument(help="Folder to create (must be absent or empty).")]) -> None:
    """Write the corpus layout with one example of each file."""
    from ingestaudit.scaffold import write_example_corpus

    try:
        written = write_example_corpus(corpus)
    except FileExistsError as exc:
        _fail(str(exc), "choose a new folder")
    for path in written:
        typer.echo(path)


@app.command()
def parsers() -> None:
    """List the registered parsers, whether each is available here, and its version."""
    from ingestaudit.parsers.registry import load_parser, parser_names

    for name in parser_names():
        try:
            ok, info = load_parser(name).available()
        except Exception as exc:  # a broken plug-in is listed, not fatal
            ok, info = False, f"{type(exc).__name__}: {exc}"
        typer.echo(f"{name}\t{'available' if ok else 'unavailable'}\t{info}")


@app.command()
def report(
    report_json: Annotated[Path, typer.Argument(help="A report.json written by 'ingestaudit run'.")],
    html: Annotated[Optional[Path], typer.Option(help="Write an HTML view here.")] = None,
    md: Annotated[Optional[Path], typer.Option(help="Write a Markdown view here.")] = None,
) -> None:
    """Re-render a report.json in the terminal, and optionally as HTML and Markdown."""
    from ingestaudit.io import write_atomic
    from ingestaudit.report.render import render_html, render_markdown, render_terminal
    from ingestaudit.report.schema import ReportError, read_report

    try:
        rep = read_report(report_json)
    except ReportError as exc:
        _fail(str(exc))
    render_terminal(rep, _stdout())
    if html:
        write_atomic(html, render_html(rep))
    if md:
        write_atomic(md, render_markdown(rep))


@app.command()
def compare(
    base: Annotated[Path, typer.Argument(help="Baseline report.json.")],
    head: Annotated[Path, typer.Argument(help="New report.json.")],
) -> None:
    """Compare two reports metric by metric; exit 1 when a metric regressed beyond its budget."""
    from ingestaudit.report.compare import compare_reports, render_comparison
    from ingestaudit.report.schema import ReportError, read_report

    try:
        comparison = compare_reports(read_report(base), read_report(head))
    except ReportError as exc:
        _fail(str(exc))
    _stdout().print(render_comparison(comparison), highlight=False, markup=False)
    raise typer.Exit(EXIT_GATE if comparison.regressions else EXIT_OK)


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
) -> None:
    """Build a corpus (documents linked, truth and precomputed outputs written) from a public labelled data set."""
    import inspect

    from ingestaudit.importers import ImporterError, get_importer

    try:
        importer = get_importer(kind)
        kwargs = {}
        if limit is not None:
            params = inspect.signature(importer).parameters
            name = next((n for n in ("limit_per_language", "limit") if n in params), None)
            if name is None:
                _fail(f"the {kind} importer has no --limit")
            kwargs[name] = limit
        summary = importer(src, dest, **kwargs)
    except ImporterError as exc:
        _fail(str(exc), "see 'ingestaudit import --help'")
    for line in summary.lines():
        typer.echo(line)


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
    from ingestaudit.stages.embedders.registry import embedder_names

    typer.echo("audited stages: " + ", ".join(stage_names()))
    for stage, names in (("cleaner", cleaner_names()), ("chunker", chunker_names()),
                         ("embedder", embedder_names()), ("index", ["hnsw", "ivf", "flat"])):
        typer.echo(f"{stage} (default {DEFAULTS[stage]}): " + ", ".join(names))


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
