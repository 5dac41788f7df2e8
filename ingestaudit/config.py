"""Run configuration: ``ingestaudit.toml`` in the corpus (or ``--config FILE``), overridden by command-line flags.

Example::

    [run]
    parsers = ["pymupdf", "unstructured"]   # default: ["pymupdf"]
    stages = []                             # default: every auditor whose truth or input is present
    seed = 0
    workers = 1
    doc_timeout_s = 300                     # per document x pipeline; a hang becomes an error row
    executor = "process"                    # serial | process | dask (scheduler = "tcp://HOST:PORT" for a cluster)
    worker_memory_mb = 4096                 # address space per worker (default: half the memory / workers; 0: none)
    min_span_coverage = 0.5                 # share of an evidence span one chunk must hold (printed in the report)
    context_budgets = [2000]                # characters of context for retrieval.span_recall@<B>ch

    [pipelines.small-chunks]                # a named pipeline; stages left out take their defaults
    parser = "pymupdf"                      # or by extension: { pdf = "pymupdf", html = "unstructured", default = ... }
    chunker = { use = "recursive", size = 500, overlap = 50 }

    [parser_options.pymupdf]
    sort = false

    [auditor_options.extraction]
    char_profile = "text-v1"

    [report]
    bootstrap_resamples = 1000
    confidence = 0.95

    [gate]                                  # regression budgets per metric (default: each metric's declaration)
    "extraction.cer" = 0.02                 # absolute: worse by more than 0.02
    "tables.teds" = "5%"                    # relative: worse by more than 5 % of the baseline value
    min_items = 10                          # items a row needs to fail on its budget alone (below: a warning)
    band_window = 20                        # accepted runs of the history behind a control band (>= 5 needed)
    bands = "warn"                          # a key value outside its control band: "warn" or "fail"

    [limits]                                # input size limits per item (see `Limits`; defaults shown)
    doc_bytes = 1073741824                  # a document file over it is never read nor hashed: its rows are skipped
    truth_bytes = 33554432                  # one truth file (.txt, .json, PAGE/ALTO XML, .tables.html)
    json_depth = 100                        # nesting of a truth JSON file or one questions.jsonl line
    spans = 100000                          # spans of one truth JSON file (pii, entities, boilerplate.spans)
    tables = 500                            # tables of one document (reference, and predicted: tables auditor)
    questions_bytes = 33554432              # questions.jsonl
    question_line_chars = 1048576           # one line of questions.jsonl, in code points
    pipelines = 64                          # pipelines of one run, --sweep variants counted
    output_bytes = 268435456                # one per-document output file of --outputs
    results_bytes = 536870912               # retrieval.jsonl, ann_results.jsonl, vector_ids.json of --outputs
    vectors_bytes = 8589934592              # vectors.npy of --outputs

A corpus's own ``ingestaudit.toml`` is untrusted input (issue 15): `untrusted_fields` lists what only the user may
set there (module paths, folders written to, model folders, a scheduler, limits above their defaults).
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, field_validator

from ingestaudit.errors import ConfigurationError
from ingestaudit.schema_keys import PAGES, unknown_key

CONFIG_NAME = "ingestaudit.toml"
CONFIG_BYTES = 1 << 20
"""The largest configuration file read (1 MiB; a corpus's own ``ingestaudit.toml`` or a ``--config`` file): a
bigger one is refused (`ingestaudit.inputs.read_input_text` reads no more than that), never parsed (issue 30). Not a ``[limits]`` key: the file holding
the limits cannot set its own."""


class ConfigError(ConfigurationError):
    """The configuration file is unreadable or invalid; the message names the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunConfig(_Strict):
    """The ``[run]`` table: what runs and how."""

    parsers: list[str] = Field(default_factory=lambda: ["pymupdf"], description="parsers to audit, one pipeline "
                               "each (--parser on the command line replaces the list)")
    stages: list[str] = Field(default=[], description="stages to audit (default: every stage whose labels or "
                                                      "input are present; --stage replaces the list)")
    seed: StrictInt = Field(default=0, description="seed of every sample and bootstrap: same corpus, config and "
                                                   "seed, same report")
    workers: StrictInt = Field(default=1, ge=1, description="worker processes (capped by the number of tasks)")
    doc_timeout_s: float = Field(default=300.0, gt=0, allow_inf_nan=False, description="time budget of one "
                                 "document x pipeline in seconds; a hang becomes an error row")
    min_span_coverage: float = Field(default=0.5, gt=0, le=1, allow_inf_nan=False, description="share of an "
                                     "evidence span's characters one chunk must hold to hold it (printed in the "
                                     "report)")
    context_budgets: list[Any] = Field(default_factory=lambda: [2000], description="context budgets in characters "
                                       "of retrieval.span_recall@<B>ch: ranked chunks read in order until B "
                                       "characters are spent, the last one cut to fit (distinct whole "
                                       "numbers from 1 to 10**9)")
    cache_dir: str | None = Field(default=None, description="cache folder of embeddings and step results (default: "
                                  "$INGESTAUDIT_CACHE or ~/.cache/ingestaudit/embeddings)")
    step_cache: StrictBool = Field(default=True, description="keep each document's parse (built-in parsers), "
                                   "language detection and sentence spans in <cache folder>/steps, keyed by the "
                                   "file's bytes or the text, the step's settings and every library version, and "
                                   "read them back on the next run; never changes the report (run --no-step-cache, "
                                   "or INGESTAUDIT_STEP_CACHE=off, turns it off)")
    executor: Literal["serial", "process", "dask"] = Field(default="process", description="how tasks run; never "
                                                                                         "changes the report")
    scheduler: str | None = Field(default=None, description="a Dask scheduler address for executor \"dask\" "
                                                            "(default: a local cluster on 127.0.0.1)")
    worker_memory_mb: StrictInt | None = Field(default=None, ge=0, description="address space of each worker "
                                               "process in MB (RLIMIT_AS; process executor and the local Dask "
                                               "cluster); default half the machine's memory / workers, at least "
                                               "4096; 0: no limit")


    @field_validator("context_budgets", mode="before")
    @classmethod
    def _budgets(cls, v: Any) -> list[int]:
        """See `context_budgets_problem`: anything it refuses is an error naming ``[run] context_budgets``."""
        problem = context_budgets_problem(v)
        if problem:
            raise ValueError(problem)
        return v


MAX_CONTEXT_BUDGET = 10**9
"""The largest context budget, in characters: a thousand times the largest LLM context windows (about a million
tokens, a few million characters), so a larger value is a typo; it also keeps every budget, and the character counts
summed against it, well inside int64 (``2**64`` would not be)."""


def context_budgets_problem(v: Any) -> str | None:
    """Why ``v`` is not a valid ``[run] context_budgets`` (the equal-budget option of ``retrieval.span_recall@<B>ch``),
    or None: it must be a non-empty list of whole numbers of characters in [1, `MAX_CONTEXT_BUDGET`], each once (a
    budget given twice would name the same metric twice). A bare number, 0, a negative, NaN or text is refused."""
    usage = (f"[run] context_budgets must be a non-empty list of distinct whole numbers of characters from 1 to "
             f"{MAX_CONTEXT_BUDGET:,}, got ")
    if not isinstance(v, (list, tuple)) or not v:
        return usage + repr(v)
    if any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in v):
        return usage + repr(list(v))
    over = [b for b in v if b > MAX_CONTEXT_BUDGET]
    if over:
        return usage + f"{list(v)!r}: {', '.join(str(b) for b in over)} above {MAX_CONTEXT_BUDGET:,}"
    twice = sorted({b for b in v if list(v).count(b) > 1})
    if twice:
        return usage + f"{list(v)!r}: {', '.join(str(b) for b in twice)} given more than once"
    return None


class Limits(_Strict):
    """The ``[limits]`` table: input size limits, enforced for every item (issue 15).

    Sizes are checked with ``stat`` before a file is read; a file from outside the corpus (outputs; and, under fixed
    limits since no configuration is read before them, a report and its store read back and a configuration file:
    `ingestaudit.report.schema.REPORT_BYTES`, `ingestaudit.report.schema.STORE_BYTES`, `CONFIG_BYTES`) is read
    through `ingestaudit.inputs.read_input_bytes`, which also refuses what is not a regular file (a FIFO, a device, a
    folder), through links too, naming it. A document any of whose files is over a limit is not
    audited: each of its rows is ``skipped`` with a reason naming the file, the limit (``limits.<name>``) and the
    value, and the run lists it once among its failures (stage ``limits``); `ingestaudit validate` reports it as a
    problem. A questions.jsonl line over a limit is a problem of that line (the question is left out), and a
    predicted table count over ``tables`` skips the tables rows of that document. ``pipelines`` limits the run
    itself: more pipelines (``--sweep`` variants counted, before any is built) is exit 2 naming the count (issue 30).
    A corpus's own ``ingestaudit.toml`` may lower a limit, never raise it above its default (only a ``--config`` file
    may).
    """

    doc_bytes: StrictInt = Field(default=1 << 30, ge=1, description="bytes of one document file (never read "
                                 "nor hashed when over it)")
    truth_bytes: StrictInt = Field(default=32 << 20, ge=1, description="bytes of one truth file (.txt, .json, PAGE/"
                                   "ALTO XML, .tables.html)")
    json_depth: StrictInt = Field(default=100, ge=2, le=1000, description="nesting depth of a truth JSON file or "
                                  "one questions.jsonl line (objects and arrays; the top level is 1)")
    spans: StrictInt = Field(default=100_000, ge=1, description="spans of one truth JSON file (pii, entities and "
                             "boilerplate.spans)")
    tables: StrictInt = Field(default=500, ge=1, description="tables of one document, reference or predicted (the "
                              "tables auditor compares every reference table with every predicted one)")
    questions_bytes: StrictInt = Field(default=32 << 20, ge=1, description="bytes of questions.jsonl")
    question_line_chars: StrictInt = Field(default=1 << 20, ge=1, description="code points of one questions.jsonl "
                                           "line")
    pipelines: StrictInt = Field(default=64, ge=1, description="pipelines of one run, sweep variants counted "
                                 "(pipelines x the product of the --sweep value counts, counted before any is built); "
                                 "over it the run is refused (exit 2)")
    output_bytes: StrictInt = Field(default=256 << 20, ge=1, description="bytes of one per-document output file of "
                                    "--outputs (.json, .txt, .md, PAGE/ALTO XML): over it, that document's parse is "
                                    "an error")
    results_bytes: StrictInt = Field(default=512 << 20, ge=1, description="bytes of an outputs folder's "
                                     "retrieval.jsonl, ann_results.jsonl or vector_ids.json: over it, the stage's "
                                     "rows of that pipeline are errors")
    vectors_bytes: StrictInt = Field(default=8 << 30, ge=1, description="bytes of an outputs folder's vectors.npy "
                                     "(read into memory): over it, that pipeline's index rows are errors")


class ReportConfig(_Strict):
    """The ``[report]`` table: aggregation settings."""

    bootstrap_resamples: int = Field(default=1000, ge=10, le=100_000,
                                     description="resamples of every bootstrap interval (at most 100,000)")
    confidence: float = Field(default=0.95, gt=0, lt=1, description="confidence level of every interval")


class Config(_Strict):
    """The whole configuration; echoed into ``report.json["config"]``."""

    run: RunConfig = Field(default=RunConfig(), description="[run]: what runs and how")
    pipelines: dict[str, dict[str, Any]] = Field(default={}, description="[pipelines.<name>]: stage -> "
                                                 "implementation or {use = ..., options}; parser also "
                                                 "{extension = parser, default = parser} (below)")
    parser_options: dict[str, dict[str, Any]] = Field(default={}, description="[parser_options.<parser>]: keyword "
                                                      "options of a parser (below)")
    auditor_options: dict[str, dict[str, Any]] = Field(default={}, description="[auditor_options.<stage>]: keyword "
                                                       "options of a stage's auditor (below)")
    report: ReportConfig = Field(default=ReportConfig(), description="[report]: aggregation settings")
    gate: dict[str, StrictInt | float | str] = Field(default={}, description="[gate]: metric -> regression budget, absolute "
                                         "(0.01) or relative (\"5%\"); default: each metric's declaration; and "
                                         "the settings min_items, band_window, bands (keys without a dot: "
                                         "ingestaudit.report.compare.GateSettings)")
    limits: Limits = Field(default=Limits(), description="[limits]: input size limits")

    @field_validator("gate", mode="before")
    @classmethod
    def _gate_values(cls, v: Any) -> Any:
        """A ``[gate]`` value is a number or a string as written: ``true`` would otherwise be read as the budget 1.0
        (and ``"10"`` / ``1e9`` as a count are refused by `ingestaudit.report.compare.GateSettings`, strict)."""
        if isinstance(v, dict):
            for key, value in v.items():
                if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                    raise ValueError(f"[gate] {key}: {value!r} is neither a budget (a number, or a percentage as "
                                     "\"5%\") nor a setting's value")
        return v


def _refuse_a_link_out_of_the_corpus(path: Path) -> None:
    """A corpus's own ``ingestaudit.toml`` that is a link to a regular file outside the corpus (its folder) and
    outside ``$INGESTAUDIT_LINK_ROOTS`` is not read, as a document's link is not (`ingestaudit.inputs.unsafe_reason`);
    a link to what is not a regular file is the reader's to name.

    Raises:
        ConfigError: naming the file and where it leads.
    """
    import os

    from ingestaudit.inputs import allowed_link_roots, unsafe_reason

    if os.path.islink(path) and os.path.isfile(path):
        why = unsafe_reason(path, path.parent.resolve(), allowed_link_roots())
        if why is not None:
            raise ConfigError(f"{path}: {why}")


def load_config(path: Path | None, *, trusted: bool = False) -> Config:
    """Read a TOML configuration; None gives the defaults.

    Args:
        trusted: True for a file the user named (``--config``): it may load code by ``"module:attr"`` path. False
            (the default) for a corpus's own ``ingestaudit.toml``, which is untrusted input: `untrusted_fields`
            lists what it may not set (issue 15).

    Raises:
        ConfigError: unreadable file, over `CONFIG_BYTES`, invalid TOML, unknown key or bad value, a removed
            auditor option (`removed_options`), or (untrusted) a module path or another value only the user may give
            (file and field named).
    """
    if path is None:
        return Config()
    from ingestaudit.inputs import InputFileError, read_input_text

    if not trusted:
        _refuse_a_link_out_of_the_corpus(Path(path))
    try:
        raw = tomllib.loads(read_input_text(path, max_bytes=CONFIG_BYTES, limit="CONFIG_BYTES"))
    except InputFileError as exc:  # a FIFO, a device, a folder, over the size: named, never ignored
        raise ConfigError(str(exc)) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML ({exc})") from None
    try:
        cfg = Config.model_validate(raw)
    except ValidationError as exc:
        msgs = [f"{path}: {'.'.join(map(str, e['loc']))}: "
                + (unknown_key(Config, e["loc"], PAGES["config"]) if e["type"] == "extra_forbidden" else e["msg"])
                for e in exc.errors()]
        raise ConfigError("; ".join(msgs)) from None
    removed = removed_options(cfg)
    if removed:
        raise ConfigError("; ".join(f"{path}: {field}: {why}" for field, why in removed))
    refused = [] if trusted else untrusted_fields(cfg)
    if refused:
        raise ConfigError("; ".join(f"{path}: {field}: {why}" for field, why in refused))
    return cfg


_PLUGIN_OPTIONS = ("scrubber", "detector")
"""``[auditor_options.*]`` keys whose values name plug-ins (pii ``scrubber``; dedup and language ``detector``)."""

_PIPELINE_CLEANER = ("removed: the boilerplate stage audits each pipeline's own cleaner; set a pipeline's `cleaner` "
                     "([pipelines.<name>] cleaner = \"trafilatura\", with its options as {use = ..., option = value}) "
                     "or compare cleaners with --sweep cleaner.use=none,trafilatura,repeated-lines")
REMOVED_OPTIONS = {("boilerplate", "cleaners"): _PIPELINE_CLEANER,
                   ("boilerplate", "cleaner_options"): _PIPELINE_CLEANER}
"""``[auditor_options.<stage>]`` keys an auditor no longer takes -> what to use instead (`removed_options`)."""


def removed_options(cfg: Config) -> list[tuple[str, str]]:
    """``(field, what to use instead)`` for every removed auditor option the configuration sets (`REMOVED_OPTIONS`:
    the boilerplate ``cleaners`` and ``cleaner_options``, now a pipeline's ``cleaner``); `load_config` refuses them
    before any document is read."""
    return [(f"auditor_options.{_table_key(stage)}.{key}", why) for (stage, key), why in REMOVED_OPTIONS.items()
            if key in (cfg.auditor_options.get(stage) or {})]

_PATH_REFUSED = ("is a module path, which imports code: only the command line or a --config file may give one (a "
                 "corpus's own ingestaudit.toml names registered plug-ins only, built-ins and entry points)")


def _table_key(key: str) -> str:
    return key if key.replace("-", "").replace("_", "").isalnum() else f'"{key}"'


_PATH_KEY = re.compile(r"(?:.*_)?(?:dir|dirs|directory|path|paths|file|files|filename|folder|folders|root|cache|"
                       r"output|out|log|logfile)", re.IGNORECASE)
"""Option keys that name a file or folder (``cache_dir``, ``tessdata_dir``, ``model_path``, ``log_file``...): a
place a plug-in reads code or data from, or writes to, is the user's choice."""

_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_][\w.]*")
"""An option value shaped like ``package.module:attr``, wherever it sits (a plug-in may import it)."""

_NOT_PATHS = frozenset({"password"})
"""Option keys whose values are never module paths, though they may hold ``:`` (a PDF password)."""

_WRITE_REFUSED = ("names a file or folder (a plug-in may read code from it or write to it): only the command line "
                  "or a --config file may give one")


def _walk_options(field: str, value: object, out: dict[str, str]) -> None:
    """Every file/folder key (`_PATH_KEY`) and every value shaped like a module path (`_DOTTED`) at any depth of one
    plug-in's options, into ``out`` (field -> why)."""
    if isinstance(value, dict):
        for key, item in value.items():
            sub = f"{field}.{_table_key(str(key))}"
            if isinstance(key, str) and _PATH_KEY.fullmatch(key):
                out.setdefault(sub, _WRITE_REFUSED)
            elif str(key) not in _NOT_PATHS:
                _walk_options(sub, item, out)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _walk_options(f"{field}[{i}]", item, out)
    elif isinstance(value, str) and _DOTTED.fullmatch(value.strip()):
        out.setdefault(field, f"{value!r} {_PATH_REFUSED}")


def untrusted_fields(cfg: Config) -> list[tuple[str, str]]:
    """``(field, why)`` for every value an untrusted configuration (a corpus's own ``ingestaudit.toml``) may not
    set:

    - a ``"module:attr"`` path wherever a plug-in is named (``run.parsers``, a pipeline stage or its ``use``, a
      route of a parser routing table, the keys of ``[parser_options]``, ``[auditor_options.*]`` ``scrubber`` /
      ``detector``), and any option value shaped like one
      (``pkg.mod:attr``) at any depth of a plug-in's options;
    - a file or folder: ``run.cache_dir``, a pipeline embedder's ``model`` folder (loading a model may run its
      code) and, at any depth of any plug-in's options (pipeline stages, ``[parser_options.*]``,
      ``[auditor_options.*]``), a key naming one (`_PATH_KEY`: ``cache_dir``, ``*_dir``, ``*_path``, ``*_file``,
      ``*_folder``...), since a plug-in writes there (the embedding cache) or reads code from it;
    - ``run.scheduler`` (tasks sent to a cluster carry the corpus's truth), ``run.worker_memory_mb`` (the
      memory limit of the workers), ``run.executor = "serial"`` (no workers, so no memory limit) and
      ``run.workers`` above the machine's cores;
    - a ``[limits]`` value or ``run.doc_timeout_s`` above its default (a corpus may lower a limit, never raise it).
    """
    from ingestaudit.plugins import is_module_path

    found: dict[str, str] = {}

    def name(field: str, value: object) -> None:
        if is_module_path(value):
            found.setdefault(field, f"{value!r} {_PATH_REFUSED}")

    for i, parser in enumerate(cfg.run.parsers):
        name(f"run.parsers[{i}]", parser)
    if cfg.run.scheduler is not None:
        found["run.scheduler"] = ("tasks sent to a Dask cluster carry the corpus's truth: give the scheduler on the "
                                  "command line or in a --config file")
    if cfg.run.worker_memory_mb is not None:
        found["run.worker_memory_mb"] = ("the memory limit protects this machine from the corpus: give it in a "
                                         "--config file")
    if cfg.run.executor == "serial":
        found["run.executor"] = ("serial runs the corpus's documents in this process, without the workers' memory "
                                 "limit: give --executor serial on the command line or in a --config file")
    if cfg.run.workers > (os.cpu_count() or 1):
        found["run.workers"] = (f"{cfg.run.workers} worker processes on a machine with {os.cpu_count()} cores: give "
                                "more workers than cores on the command line or in a --config file")
    if cfg.run.cache_dir is not None:
        found["run.cache_dir"] = ("a folder written to is the user's choice: give it in a --config file or "
                                  "$INGESTAUDIT_CACHE")
    for key, options in cfg.parser_options.items():
        name(f"parser_options.{_table_key(key)}", key)
        _walk_options(f"parser_options.{_table_key(key)}", options, found)
    for pipe, table in cfg.pipelines.items():
        for stage, choice in table.items():
            field = f"pipelines.{_table_key(pipe)}.{stage}"
            if stage == "parser" and isinstance(choice, dict) and "use" not in choice:  # a routing table: ext -> name
                for ext, route in choice.items():
                    name(f"{field}.{_table_key(str(ext))}", route)
            elif isinstance(choice, dict):
                name(f"{field}.use", choice.get("use"))
                if stage == "embedder" and "model" in choice:
                    found[f"{field}.model"] = "a model folder may run code when loaded: give it in a --config file"
                _walk_options(field, {k: v for k, v in choice.items() if k != "use"}, found)
            else:
                name(field, choice)
    for stage, options in cfg.auditor_options.items():
        for key in _PLUGIN_OPTIONS:
            value = options.get(key)
            values = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else []
            for i, item in enumerate(values):
                item = item.strip() if isinstance(item, str) else item
                name(f"auditor_options.{_table_key(stage)}.{key}" + (f"[{i}]" if isinstance(value, list) else ""),
                     item)
        _walk_options(f"auditor_options.{_table_key(stage)}", options, found)
    budget = RunConfig.model_fields["doc_timeout_s"].default
    if cfg.run.doc_timeout_s > budget:  # the time budget is a limit too: lowered freely, raised by the user only
        found["run.doc_timeout_s"] = (f"{cfg.run.doc_timeout_s:g} s is above the default {budget:g} s: a corpus's "
                                      "own configuration may lower the time budget, never raise it (give a higher "
                                      "one in a --config file)")
    defaults = Limits()
    for key in Limits.model_fields:
        value, default = getattr(cfg.limits, key), getattr(defaults, key)
        if value > default:
            found[f"limits.{key}"] = (f"{value} is above the default {default}: a corpus's own configuration may "
                                      "lower a limit, never raise it (give a higher one in a --config file)")
    return list(found.items())


def table_limit_problem(cfg: Config) -> str:
    """The problem of an ``[auditor_options.tables] max_tables`` that differs from ``[limits] tables`` (the limit
    is set there, once), else ``""``."""
    given = (cfg.auditor_options.get("tables") or {}).get("max_tables", cfg.limits.tables)
    if given != cfg.limits.tables:
        return ("[auditor_options.tables] max_tables: the tables per document are limited by [limits] tables; set "
                "it there")
    return ""
