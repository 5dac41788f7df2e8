"""Pipelines: the named chains of stage implementations a report compares (DESIGN.md, "Pipelines and the stage
chain").

A pipeline is ``parser -> cleaner -> chunker -> embedder -> index -> retriever``; each stage is an implementation name with its
options (`StageChoice`). Pipelines come from ``[pipelines.<name>]`` in ``ingestaudit.toml``, from ``--parser NAME``
(a pipeline named NAME that differs from the defaults only in its parser) and from ``--outputs DIR`` (one
precomputed pipeline per subfolder). ``--sweep STAGE.OPTION=V1,V2`` expands every pipeline into one variant per value,
named ``<pipeline>/<option>=<value>`` so the value shows in every report column; the option ``use`` swaps the
implementation (``--sweep retriever.use=dense,bm25,hybrid``: a variant whose implementation changes takes that
implementation's default options, one that keeps it keeps its options). The variants are counted before
any is built: more than ``[limits] pipelines`` (`resolve`'s ``limit``) is a `PipelineError` naming the count.

Parser routing: a pipeline's ``parser`` may be a table keyed by file extension instead of one name,
``parser = { pdf = "pymupdf", html = "unstructured", default = "unstructured" }`` (`parser_routes`): each document is
read by the parser of its extension, else by ``default``. Keys are literal extensions, case-insensitive, with or
without the leading dot: ``htm`` and ``html``, ``jpg`` and ``jpeg``, ``tif`` and ``tiff`` are different keys, each
listed on its own. A table with ``use`` is one parser with options, as for every stage.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from itertools import product
from math import prod
from pathlib import Path
from typing import Any

from ingestaudit.errors import IngestAuditError

STAGES = ("parser", "cleaner", "chunker", "embedder", "index", "retriever")
"""The configurable stages of a pipeline, in the order data flows through them."""

DEFAULTS: dict[str, str] = {"parser": "pymupdf", "cleaner": "none", "chunker": "recursive", "embedder": "minilm",
                            "index": "hnsw", "retriever": "dense"}
"""The implementation a stage takes when a pipeline leaves it out."""

DETECTION_STEPS = ("language", "pii", "entities", "metadata", "relations", "dedup")
"""Optional steps a pipeline may name (``language = { use = "lingua", ... }``, ``pii = { use = "presidio", ... }``,
``dedup = { use = "minhash", threshold = 0.8 }``); they run when their stage is audited, with the options of
`ingestaudit.steps` (language, pii: per document; dedup: per document, then once per pipeline), the auditor options
as defaults and the pipeline's table over them. A pipeline that does not name one runs it with the defaults."""

DETECTION_DEFAULTS: dict[str, str] = {"language": "lingua", "pii": "presidio", "entities": "spacy",
                                      "metadata": "parser", "relations": "precomputed", "dedup": "minhash"}
"""The implementation a detection step takes when neither the pipeline nor ``[auditor_options]`` names one."""

PRECOMPUTED = "precomputed"

ROUTED = "routed"
"""The ``use`` of a parser stage routed by file extension (`StageChoice.routes` holds the table)."""

DEFAULT_ROUTE = "default"
"""The key of a routing table's route for every extension it does not list."""

_EXTENSION = re.compile(r"[a-z0-9][a-z0-9_+-]*")
"""A routing key once lower-cased and stripped of its dot: what `ingestaudit.document.Document.suffix` can be."""


class PipelineError(IngestAuditError, ValueError):
    """A pipeline definition or a ``--sweep`` is invalid; the message names the table or flag and the field."""


@dataclass(frozen=True)
class StageChoice:
    """One stage of a pipeline: the implementation's name and its options (sorted ``(key, value)`` pairs); a parser
    routed by extension has ``use`` `ROUTED`, no options and its ``routes`` (`parser_routes`)."""

    use: str
    options: tuple[tuple[str, Any], ...] = ()
    routes: tuple[tuple[str, str], ...] = ()

    def kwargs(self) -> dict[str, Any]:
        """The options as keyword arguments."""
        return dict(self.options)

    def with_option(self, key: str, value: Any) -> "StageChoice":
        """A copy with ``key`` set to ``value``."""
        return replace(self, options=tuple(sorted({**self.kwargs(), key: value}.items())))


@dataclass(frozen=True)
class Pipeline:
    """A named chain of stage implementations.

    Attributes:
        name: the report column's name.
        stages: one `StageChoice` per name in `STAGES`.
        precomputed_root: for a precomputed pipeline, the ``--outputs`` folder (its outputs are under
            ``precomputed_root / source``); None for configured pipelines.
        source: the outputs' subfolder name (a swept variant keeps its base pipeline's folder).
        steps: the detection steps (`DETECTION_STEPS`) the pipeline's table or a ``--sweep`` names, sorted; a
            step's ``use`` is ``""`` when only swept (its implementation is then the default one).
    """

    name: str
    stages: tuple[tuple[str, StageChoice], ...]
    precomputed_root: Path | None = None
    source: str = ""
    steps: tuple[tuple[str, StageChoice], ...] = ()

    def step(self, name: str) -> StageChoice | None:
        """The `StageChoice` of detection step ``name`` when the pipeline names it, else None."""
        return dict(self.steps).get(name)

    def stage(self, name: str) -> StageChoice:
        """The `StageChoice` of stage ``name`` (one of `STAGES`)."""
        return dict(self.stages)[name]

    def parsers(self) -> list[str]:
        """The parser names this pipeline reads documents with: its routes' parsers (each once, in table order) or
        its one parser."""
        choice = self.stage("parser")
        return list(dict.fromkeys(name for _, name in choice.routes)) if choice.routes else [choice.use]

    @property
    def folder(self) -> Path | None:
        """The precomputed outputs' folder (``precomputed_root / source``), or None."""
        return None if self.precomputed_root is None else self.precomputed_root / (self.source or self.name)


def make_pipeline(name: str, table: dict[str, Any] | None = None, *, precomputed_root: Path | None = None,
                  where: str = "") -> Pipeline:
    """Build a pipeline from a ``[pipelines.<name>]`` table: each stage is a string (the implementation) or a table
    ``{use = "...", option = value, ...}``; stages left out take `DEFAULTS` (precomputed pipelines take the
    ``precomputed`` parser, cleaner and chunker, which read what the outputs hold).

    A ``parser`` table without ``use`` is a routing table (`parser_routes`).

    Raises:
        PipelineError: an unknown stage key, a stage that is neither a string nor a table with ``use``, or a bad
            routing table.
    """
    table = dict(table or {})
    where = where or f"[pipelines.{name}]"
    unknown = sorted(set(table) - set(STAGES) - set(DETECTION_STEPS))
    if unknown:
        raise PipelineError(f"{where}: unknown stage {', '.join(map(repr, unknown))}; stages are "
                            f"{', '.join(STAGES + DETECTION_STEPS)}")
    defaults = dict(DEFAULTS)
    if precomputed_root is not None:
        defaults.update(parser=PRECOMPUTED, cleaner=PRECOMPUTED, chunker=PRECOMPUTED)
    stages = []
    for stage in STAGES:
        raw = table.get(stage, defaults[stage])
        if isinstance(raw, str) and raw:
            choice = StageChoice(raw)
        elif stage == "parser" and isinstance(raw, dict) and "use" not in raw:
            choice = StageChoice(ROUTED, routes=parser_routes(raw, where))
        elif isinstance(raw, dict) and isinstance(raw.get("use"), str) and raw["use"]:
            opts = {k: v for k, v in raw.items() if k != "use"}
            choice = StageChoice(raw["use"], tuple(sorted(opts.items())))
        else:
            raise PipelineError(f"{where}.{stage}: give an implementation name or a table with 'use' "
                                f"(e.g. {stage} = {{ use = \"{DEFAULTS[stage]}\" }})")
        stages.append((stage, choice))
    steps = []
    for step in sorted(set(table) & set(DETECTION_STEPS)):
        raw = table[step]
        if isinstance(raw, str) and raw:
            steps.append((step, StageChoice(raw)))
        elif isinstance(raw, dict) and isinstance(raw.get("use"), str) and raw["use"]:
            steps.append((step, StageChoice(raw["use"], tuple(sorted((k, v) for k, v in raw.items() if k != "use")))))
        else:
            raise PipelineError(f"{where}.{step}: give an implementation name or a table with 'use' "
                                f"(e.g. {step} = {{ use = \"{DETECTION_DEFAULTS[step]}\" }})")
    return Pipeline(name, tuple(stages), precomputed_root, name if precomputed_root is not None else "",
                    tuple(steps))


def parser_routes(table: dict[str, Any], where: str) -> tuple[tuple[str, str], ...]:
    """The routes of a ``parser = { ext = "name", ..., default = "name" }`` table: ``(extension, parser)`` pairs in
    table order, `DEFAULT_ROUTE` last. A key is lower-cased and loses one leading dot (``".PDF"`` is ``pdf``); a
    parser is a registered name (`ingestaudit.parsers.registry.parser_names`) or a ``"module:Class"`` path.

    Args:
        where: the table in messages (``[pipelines.<name>]``).

    Raises:
        PipelineError: an empty table, a value that is not a non-empty string, a key with white space around it
            (``" txt "``), a key that is not an extension (``.default`` included), an extension given twice (``pdf`` and ``PDF``, ``.pdf`` and ``pdf``), or an
            unknown parser; one line per bad key, each naming the pipeline, the key and the valid parsers.
    """
    from ingestaudit.parsers.registry import parser_names
    from ingestaudit.plugins import is_module_path

    valid = parser_names()
    known = f"valid parsers: {', '.join(valid)}"
    if not table:
        raise PipelineError(f"{where} parser: empty routing table; give extension = parser pairs, e.g. parser = "
                            f"{{ pdf = \"pymupdf\", default = \"unstructured\" }} ({known})")
    keys: dict[str, str] = {}
    routes = []
    problems = []  # every bad key of the table, one line each
    for key, name in table.items():
        raw = str(key).strip().lower()
        ext = raw[1:] if raw.startswith(".") else raw
        if not isinstance(name, str) or not name.strip():
            problems.append(f"{where} parser, key {key!r}: {name!r} is not a parser name; give a string ({known})")
        elif str(key) != str(key).strip():
            problems.append(f"{where} parser, key {key!r}: white space around the extension; write {raw!r}")
        elif raw == "." + DEFAULT_ROUTE:
            problems.append(f"{where} parser, key {key!r}: the fallback route is {DEFAULT_ROUTE!r}, without a dot "
                            f"(a dot marks an extension) ({known})")
        elif not _EXTENSION.fullmatch(ext):
            problems.append(f"{where} parser, key {key!r}: not a file extension (letters, digits, _ + -, "
                            f"optionally after one dot) nor {DEFAULT_ROUTE!r} ({known})")
        elif ext in keys:
            problems.append(f"{where} parser, key {key!r}: extension {ext!r} given twice ({keys[ext]!r} and "
                            f"{key!r}; keys are case-insensitive, with or without the dot) ({known})")
        elif name not in valid and not is_module_path(name):
            problems.append(f"{where} parser, key {key!r}: unknown parser {name!r}; {known}")
        else:
            keys[ext] = str(key)
            routes.append((ext, name))
    if problems:
        raise PipelineError("\n".join(problems))
    return tuple(sorted(routes, key=lambda r: r[0] == DEFAULT_ROUTE))


@dataclass(frozen=True)
class Sweep:
    """``--sweep STAGE.OPTION=V1,V2,...``: values are parsed as JSON where they parse (``256`` is a number,
    ``true`` a boolean), else kept as strings."""

    stage: str
    option: str
    values: tuple[Any, ...] = field(default_factory=tuple)

    @classmethod
    def parse(cls, text: str) -> "Sweep":
        """Parse one ``--sweep`` flag.

        Raises:
            PipelineError: not ``STAGE.OPTION=V1,...``, an unknown stage, no value, a value given twice (its two
                variants would have the same name and every document would count twice), or a ``use`` value that is
                not a name.
        """
        key, eq, vals = text.partition("=")
        stage, dot, option = key.strip().partition(".")
        if not eq or not dot or not option or not vals.strip():
            raise PipelineError(f"--sweep {text!r}: expected STAGE.OPTION=V1,V2,... (e.g. chunker.size=256,512)")
        if stage not in STAGES + DETECTION_STEPS:
            raise PipelineError(f"--sweep {text!r}: unknown stage {stage!r}; stages are "
                                f"{', '.join(STAGES + DETECTION_STEPS)}")
        values = []
        for v in vals.split(","):
            v = v.strip()
            try:
                values.append(json.loads(v))
            except ValueError:
                values.append(v)
        if option.strip() == "use" and not all(isinstance(v, str) and v for v in values):
            raise PipelineError(f"--sweep {text!r}: 'use' takes implementation names (e.g. retriever.use=dense,bm25)")
        twice = sorted(v for v, n in Counter(_show(v) for v in values).items() if n > 1)
        if twice:
            raise PipelineError(f"--sweep {text!r}: value given twice: {', '.join(twice)} (each variant is a pipeline "
                                "named after its value)")
        return cls(stage, option.strip(), tuple(values))


def expand(pipelines: list[Pipeline], sweeps: list[Sweep], limit: int | None = None) -> list[Pipeline]:
    """One variant per combination of sweep values for every pipeline, named ``<name>/<option>=<value>[,...]``.

    Example: ``pymupdf`` swept over ``chunker.size=128,256`` gives ``pymupdf/size=128`` and ``pymupdf/size=256``.
    ``STAGE.use`` swaps the implementation (``cleaner.use=none,trafilatura``: one pipeline per cleaner; the stage's
    other options are kept when the implementation stays the same, else it starts from its own defaults).

    Raises:
        PipelineError: a ``parser.*`` sweep over a pipeline whose parser is routed by extension; a ``use`` value
            that is not a name; one
            ``STAGE.OPTION`` swept twice (only its last value would run, while the variant's name showed both);
            more than ``limit`` variants (``len(pipelines)`` x the product of the sweeps' value counts, counted before
            any variant is built).
    """
    keys = Counter(f"{s.stage}.{s.option}" for s in sweeps)
    twice = sorted(k for k, n in keys.items() if n > 1)
    if twice:
        raise PipelineError(f"--sweep {', '.join(twice)}: the same option swept twice; give its values in one "
                            "--sweep (e.g. chunker.size=128,256,512)")
    total = len(pipelines) * prod(len(s.values) for s in sweeps)
    if limit is not None and total > limit:
        counts = "".join(f" x {len(s.values)} ({s.stage}.{s.option})" for s in sweeps)
        raise PipelineError(f"{total:,} pipelines to audit ({len(pipelines)} pipeline{'s' * (len(pipelines) != 1)}"
                            f"{counts}): over [limits] pipelines = {limit}; "
                            + ("sweep fewer values, " if sweeps else "") + "name fewer pipelines (--pipeline), or "
                            "raise the limit in a --config file")
    if not sweeps:
        return list(pipelines)
    out = []
    for p in pipelines:
        for s in sweeps:
            if s.stage == "parser" and p.stage("parser").routes:
                raise PipelineError(f"--sweep parser.{s.option}: pipeline {p.name!r} routes its parser by file "
                                    "extension; set each parser's options in [parser_options.<parser>]")
        for combo in product(*(s.values for s in sweeps)):
            stages, steps = dict(p.stages), dict(p.steps)
            for s, v in zip(sweeps, combo):
                if s.stage in DETECTION_STEPS:  # a step the pipeline does not name keeps its default implementation
                    steps[s.stage] = _swept(steps.get(s.stage, StageChoice("")), s.option, v)
                else:
                    stages[s.stage] = _swept(stages[s.stage], s.option, v)
            label = ",".join(f"{s.option}={_show(v)}" for s, v in zip(sweeps, combo))
            out.append(replace(p, name=f"{p.name}/{label}", stages=tuple(stages.items()),
                               steps=tuple(sorted(steps.items()))))
    return out


def _swept(choice: StageChoice, option: str, value: Any) -> StageChoice:
    """``choice`` with one swept value: ``use`` swaps the implementation (its options kept only when it stays the
    same: another implementation's options would not fit), any other option is set."""
    if option == "use":
        return choice if choice.use == value else StageChoice(value)
    return choice.with_option(option, value)


def _show(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def resolve(*, configured: dict[str, dict[str, Any]], selected: list[str], parsers: list[str],
            outputs: Path | None, sweeps: list[Sweep], default_parsers: list[str],
            limit: int | None = None) -> list[Pipeline]:
    """The pipelines of a run, in report order.

    Args:
        configured: the ``[pipelines]`` tables of the config.
        selected: ``--pipeline`` names (each must be configured).
        parsers: ``--parser`` names: each a pipeline of that name with the defaults and that parser (a configured
            pipeline of the same name is used as is).
        outputs: ``--outputs`` folder: one precomputed pipeline per subfolder (hidden folders skipped).
        sweeps: ``--sweep`` flags, applied to every pipeline.
        default_parsers: ``[run] parsers``, used when nothing else names a pipeline and no pipeline is configured.
        limit: the most pipelines of a run, sweep variants counted (``[limits] pipelines``); None: no limit.

    Raises:
        PipelineError: an unknown ``--pipeline``, a name given twice, no pipeline at all, or (`expand`) an option
            swept twice or more than ``limit`` pipelines.
    """
    out: list[Pipeline] = []
    for name in selected:
        if name not in configured:
            known = ", ".join(sorted(configured)) or "none"
            raise PipelineError(f"--pipeline {name!r}: no [pipelines.{name}] in the config (configured: {known})")
        out.append(make_pipeline(name, configured[name]))
    for name in parsers:
        if name == PRECOMPUTED:
            continue  # stands for every folder of --outputs
        out.append(make_pipeline(name, configured.get(name, {"parser": name})))
    if outputs is not None:
        for sub in sorted(p for p in outputs.iterdir() if p.is_dir() and not p.name.startswith(".")):
            out.append(make_pipeline(sub.name, configured.get(sub.name), precomputed_root=outputs.resolve(),
                                     where=f"--outputs {outputs}/{sub.name}"))
    if not out and not selected and not parsers and outputs is None:
        if configured:
            out = [make_pipeline(n, t) for n, t in configured.items()]
        else:
            out = [make_pipeline(n, {"parser": n}) for n in default_parsers]
    names = [p.name for p in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise PipelineError(f"pipeline name given twice: {', '.join(twice)} (a --parser and an --outputs folder "
                            "or a --pipeline of the same name?)")
    if not out:
        raise PipelineError("no pipeline to audit: pass --parser NAME, --pipeline NAME or --outputs DIR")
    return expand(out, sweeps, limit)
