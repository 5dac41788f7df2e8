"""The start-up check of a run's configuration, one function that ``ingestaudit validate`` and ``ingestaudit run``
both call, so that they accept and refuse the same things (issue 30: a misspelt ``[gate]`` metric passed
``validate`` and failed ``run``; an unknown chunker passed both and made every document an error row, exit 0).

`config_problems` checks, without reading a document or loading a model:

- ``[run] stages`` and every ``[auditor_options.<stage>]`` table: the stage exists and its auditor takes the options
  (`ingestaudit.runner.select_stages`); ``[auditor_options.tables] max_tables`` is ``[limits] tables``' to set;
- every ``[gate]`` metric is known and its budget well formed (`ingestaudit.report.compare.resolve_budgets`), and
  every ``[gate]`` setting known and in range (`ingestaudit.report.compare.gate_settings`);
- every pipeline's cleaner, chunker, embedder, index and retriever: the implementation exists (the message names the
  pipeline, the step and the valid names) and takes the options given; the embedder's class is found, its model is
  not loaded (`ingestaudit.runner` loads it once before the first document when a chain stage runs).

- every detection step a pipeline names (``language``, ``pii``): its options, over the auditor's step defaults, build
  the step (`step_problems`; no model is loaded);
- every pipeline's parser, or each parser of its routing table: the parser is registered, takes its options and is
  available on this machine (`parser_problems`; a precomputed pipeline has none).

The number of pipelines is checked by
`ingestaudit.pipeline.resolve` (``[limits] pipelines``); `default_pipelines` gives ``validate`` the pipelines a run
with no flags would audit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ingestaudit.config import Config, table_limit_problem
from ingestaudit.pipeline import STAGES, Pipeline, StageChoice, resolve


def config_problems(cfg: Config, source: str, pipelines: Sequence[Pipeline]) -> list[str]:
    """Every problem of ``cfg`` and ``pipelines`` that would stop a run or make each of its documents an error, one
    message each; empty when the run may start.

    Args:
        cfg: the effective configuration (command-line flags applied).
        source: the configuration file as messages name it (``ingestaudit.toml``, a ``--config`` path, ``config``).
        pipelines: the run's pipelines (`ingestaudit.pipeline.resolve`).
    """
    built = _build_auditors(cfg)  # once: both checks below read these auditors
    return [*_name_problems(source, pipelines), *_stage_problems(cfg, source, built),
            *_gate_problems(cfg, source, built),
            *parser_problems(pipelines, cfg.parser_options), *implementation_problems(pipelines),
            *step_problems(cfg, pipelines)]


def _name_problems(source: str, pipelines: Sequence[Pipeline]) -> list[str]:
    """A pipeline named like timings.json's run entry (`ingestaudit.step_times.RUN_KEY`, ``(run)``): its timings
    would be replaced by the run's totals."""
    from ingestaudit.step_times import RUN_KEY

    return [f"{source}: [pipelines.\"{RUN_KEY}\"]: the name {RUN_KEY} is reserved (timings.json's entry of the whole "
            "run); choose another" for p in pipelines if p.name == RUN_KEY]


def parser_problems(pipelines: Sequence[Pipeline], parser_options: dict[str, dict[str, Any]]) -> list[str]:
    """One message per pipeline parser (or route of a routing table) that is unknown, refuses its
    ``[parser_options]`` or is unavailable here (its ``available()`` says why: a missing binary or package)."""
    from ingestaudit.parsers.base import ParserUnavailable
    from ingestaudit.parsers.registry import UnknownParser
    from ingestaudit.parsers.routing import parser_spec

    problems = []
    for p in pipelines:
        if p.precomputed_root is not None:
            continue
        spec = parser_spec(p, parser_options)
        for key, route in spec.routes or (("", spec),):
            where = f"pipeline {p.name!r}" + (f", route {key!r}" if key else "")
            try:
                ok, why = route.build().available()
            except (UnknownParser, ParserUnavailable, ValueError) as exc:
                problems.append(f"{where}: {exc}" if key else f"{where}, parser: {exc}")
                continue
            if not ok:
                problems.append(f"{where}: parser {route.name!r} is unavailable: {why}")
    return problems


def default_pipelines(cfg: Config) -> list[Pipeline]:
    """The pipelines ``ingestaudit run CORPUS`` audits with no pipeline flag: the configured ones, else one per
    ``[run] parsers`` entry.

    Raises:
        PipelineError: a bad ``[pipelines.<name>]`` table, or more than ``[limits] pipelines``.
    """
    return resolve(configured=cfg.pipelines, selected=[], parsers=[], outputs=None, sweeps=[],
                   default_parsers=list(cfg.run.parsers), limit=cfg.limits.pipelines)


def _build_auditors(cfg: Config) -> dict[str, Any] | Exception:
    """The run's candidate auditors (`ingestaudit.runner._candidate_auditors`), each built ONCE from
    ``[auditor_options]`` as the runner gives them (``[run] context_budgets`` passed to retrieval, `runner._run`),
    else the exception building them raised (`_stage_problems` names it)."""
    from ingestaudit.runner import _candidate_auditors

    opts = {k: dict(v) for k, v in cfg.auditor_options.items()}
    opts.setdefault("retrieval", {}).setdefault("context_budgets", list(cfg.run.context_budgets))
    try:
        return _candidate_auditors(cfg.run.stages, opts)
    except Exception as exc:  # every [auditor_options.X] table names a stage and its options build that auditor
        return exc


def _stage_problems(cfg: Config, source: str, built: dict[str, Any] | Exception) -> list[str]:
    """The ``[limits]`` table's problem and the error building the auditors (``built``, `_build_auditors`)."""
    problems = [f"{source}: {p}" for p in [table_limit_problem(cfg)] if p]
    if isinstance(built, ValueError):  # UnknownStage is one
        problems.append(f"{source}: {built}")
    elif isinstance(built, Exception):  # an option of the wrong type that an auditor did not expect: no traceback
        problems.append(f"{source}: auditor_options: {type(built).__name__}: {built}")
    return problems


def _measured_cutoffs(built: dict[str, Any] | Exception) -> dict[str, list[str]]:
    """The metrics with a cutoff (``retrieval.recall@10``) that the run's auditors (``built``, `_build_auditors`)
    measure, by family (``retrieval.recall@``); empty when they do not build (that is `_stage_problems`' to
    report)."""
    if isinstance(built, Exception):
        return {}
    out: dict[str, list[str]] = {}
    for auditor in built.values():
        for spec in getattr(auditor, "metrics", ()):
            if "@" in spec.name:
                out.setdefault(spec.name.split("@", 1)[0] + "@", []).append(spec.name)
    return out


def _gate_problems(cfg: Config, source: str, built: dict[str, Any] | Exception) -> list[str]:
    """One message per bad ``[gate]`` entry: an unknown metric or setting, a malformed budget or setting value, and
    a cutoff the run does not measure (``retrieval.recall@7`` when ``[auditor_options.retrieval] k`` is 1, 5, 10:
    its budget would gate nothing)."""
    from ingestaudit.report.compare import GateError, gate_settings, resolve_budgets

    problems = []
    cutoffs = _measured_cutoffs(built) if any("@" in m for m in cfg.gate) else {}
    for metric, value in cfg.gate.items():  # one at a time, so that every bad entry is named
        try:
            if "." in metric:
                resolve_budgets({metric: value}, [], config_source=f"{source} [gate]")
                measured = cutoffs.get(metric.split("@", 1)[0] + "@", []) if "@" in metric else []
                if measured and metric not in measured:
                    problems.append(f"{source} [gate] {metric}: no such cutoff is measured by this run; measured: "
                                    f"{', '.join(measured)} (set by [auditor_options] and [run] context_budgets)")
            else:  # a setting (min_items, band_window, bands)
                gate_settings({metric: value}, f"{source} [gate]")
        except GateError as exc:
            problems.append(str(exc))
    return problems


def unrouted_documents(pipelines: Sequence[Pipeline], parser_options: dict[str, dict[str, Any]],
                       documents: Sequence[Any]) -> list[str]:
    """One line per routed pipeline and file extension of ``documents`` (`ingestaudit.corpus.Document`) that the
    pipeline cannot read: no route and no default, or a route to a parser that does not read that type; each such
    document is that pipeline's ``error`` in a run (`ingestaudit.parsers.routing.ParserSpec.unrouted`), so
    ``validate`` says so first. A parser that does not load is `parser_problems`' to report."""
    from ingestaudit.parsers.routing import parser_spec

    lines = []
    for p in pipelines:
        if p.precomputed_root is not None or not p.stage("parser").routes:
            continue
        spec = parser_spec(p, parser_options)
        built: dict[str, Any] = {}
        missed: dict[str, list[str]] = {}
        for doc in documents:
            route = spec.route(doc)
            if route is not None and route.name not in built:
                try:
                    built[route.name] = route.build()
                except Exception:  # named by parser_problems
                    built[route.name] = None
            parser = built.get(route.name) if route is not None else None
            if route is None or (parser is not None and not parser.supports(doc)):
                why = (f"routed to {route.name!r}, which does not read it" if route is not None
                       else "no route and no default route")
                missed.setdefault(f"{doc.suffix.lstrip('.') or '(none)'}: {why}", []).append(doc.doc_id)
        for what, ids in sorted(missed.items()):
            more = f" and {len(ids) - 1} more" if len(ids) > 1 else ""
            lines.append(f"pipeline {p.name!r} cannot read {len(ids)} document(s) of extension {what} "
                         f"({ids[0]}{more}); they will be errors of that pipeline (routes: {spec.describe_routes()})")
    return lines


def implementation_problems(pipelines: Sequence[Pipeline]) -> list[str]:
    """One message per distinct stage choice (implementation and options) that cannot be built, naming the
    pipelines that use it, the step and the error (for an unknown name, the valid names); parsers are `parser_problems`'."""
    users: dict[tuple[str, str], list[str]] = {}
    errors: dict[tuple[str, str], str] = {}
    for p in pipelines:
        for stage in STAGES[1:]:
            choice = p.stage(stage)
            key = (stage, repr(choice))
            if key not in errors:
                errors[key] = _build_error(stage, choice)
            users.setdefault(key, []).append(p.name)
    return [f"{_named(users[key])}, {key[0]}: {error}" for key, error in errors.items() if error]


def step_problems(cfg: Config, pipelines: Sequence[Pipeline]) -> list[str]:
    """One message per pipeline whose own ``language``, ``pii`` or ``dedup`` (`ingestaudit.steps`) table does not
    build, with ``[auditor_options.<stage>]``'s step options as its
    defaults (a bad auditor table is `_stage_problems`')."""
    from ingestaudit.auditors.registry import load_auditor
    from ingestaudit.steps import CORPUS_STEP_OF_STAGE, STEP_OF_STAGE, build_step, check_step

    problems = []
    for stage, step in {**STEP_OF_STAGE, **CORPUS_STEP_OF_STAGE}.items():
        named = [p for p in pipelines if p.step(step) is not None]
        if not named:
            continue
        try:
            defaults = load_auditor(stage, cfg.auditor_options.get(stage)).step_options()
        except Exception:  # named by _stage_problems
            continue
        for p in named:
            try:
                if stage in CORPUS_STEP_OF_STAGE:
                    build_step(stage, p.step(step), defaults)
                else:
                    check_step(p, step, defaults)
            except ValueError as exc:
                problems.append(str(exc) if stage not in CORPUS_STEP_OF_STAGE
                                else f"[pipelines.{p.name}] {step}: {exc}")
    return problems


def _named(names: list[str]) -> str:
    shown = ", ".join(map(repr, names[:3])) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"pipeline{'s' * (len(names) > 1)} {shown}"


def _build_error(stage: str, choice: StageChoice) -> str:
    """The error building ``choice`` as stage ``stage`` raises (``"Type: message"`` unless the error is a plug-in's
    own, which names itself), or ``""``."""
    try:
        _BUILDERS[stage](choice)
    except Exception as exc:
        from ingestaudit.plugins import PluginError

        return str(exc) if isinstance(exc, (PluginError, ValueError)) else f"{type(exc).__name__}: {exc}"
    return ""


def _cleaner(choice: StageChoice) -> Any:
    from ingestaudit.stages.cleaners.registry import load_cleaner

    return load_cleaner(choice.use, choice.kwargs())


def _chunker(choice: StageChoice) -> Any:
    from ingestaudit.document_steps import precomputed_or as _precomputed_or
    from ingestaudit.stages.chunkers.registry import load_chunker

    return _precomputed_or(choice) if choice.use == "precomputed" else load_chunker(choice.use, choice.kwargs())


def _embedder(choice: StageChoice) -> Any:
    from ingestaudit.plugin_options import option_problems, valid_options
    from ingestaudit.plugins import PluginOptionError
    from ingestaudit.schema_keys import PAGES

    from ingestaudit.stages.embedders.registry import embedder_class

    cls = embedder_class(choice.use)  # the model loads before the first document, when a chain stage runs
    options = {k: v for k, v in choice.kwargs().items() if k != "cache_dir"}  # the cache's, not the embedder's
    problems = option_problems(cls, options)  # what `instantiate` would refuse, without building it
    if not problems and hasattr(cls, "option_value_problems"):  # a model folder that is not one (no model loaded)
        problems = cls.option_value_problems(options)
        if problems:
            raise PluginOptionError(f"embedder {choice.use!r}: {'; '.join(problems)}")
    if problems:
        raise PluginOptionError(f"embedder {choice.use!r}: bad option ({'; '.join(problems)}); valid options: "
                                f"{valid_options(cls)}, cache_dir (see {PAGES['config']})")
    return cls


def _index(choice: StageChoice) -> Any:
    from ingestaudit.stages.index import IndexSettings

    return IndexSettings.from_options(choice.use, choice.kwargs())


def _retriever(choice: StageChoice) -> Any:
    from ingestaudit.stages.retrievers import DENSE, load_retriever

    if choice.use == DENSE and choice.options:  # the auditor's own search: its depth is [auditor_options.retrieval]'s
        raise ValueError(f"the dense retriever takes no options (got {', '.join(choice.kwargs())}); its depth and "
                         "cut-offs are [auditor_options.retrieval]'s")
    return None if choice.use == DENSE else load_retriever(choice.use, choice.kwargs())


_BUILDERS: dict[str, Callable[[StageChoice], Any]] = {"cleaner": _cleaner, "chunker": _chunker,
                                                      "embedder": _embedder, "index": _index,
                                                      "retriever": _retriever}
"""How each pipeline step after the parser is built for the check: the way `ingestaudit.runner` and the auditors
build it."""
