"""Run configuration: ``ingestaudit.toml`` in the corpus (or ``--config FILE``), overridden by command-line flags.

Example::

    [run]
    parsers = ["pymupdf", "unstructured"]   # default: ["pymupdf"]
    stages = []                             # default: every auditor whose truth or input is present
    seed = 0
    workers = 1
    doc_timeout_s = 300                     # per document x pipeline; a hang becomes an error row
    executor = "process"                    # serial | process | dask (scheduler = "tcp://HOST:PORT" for a cluster)
    min_span_coverage = 0.5                 # share of an evidence span one chunk must hold (printed in the report)

    [pipelines.small-chunks]                # a named pipeline; stages left out take their defaults
    parser = "pymupdf"
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
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

CONFIG_NAME = "ingestaudit.toml"


class ConfigError(Exception):
    """The configuration file is unreadable or invalid; the message names the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunConfig(_Strict):
    """The ``[run]`` table: what runs and how."""

    parsers: list[str] = Field(default_factory=lambda: ["pymupdf"])
    stages: list[str] = []
    seed: StrictInt = 0
    workers: StrictInt = Field(default=1, ge=1)
    doc_timeout_s: float = Field(default=300.0, gt=0, allow_inf_nan=False)
    min_span_coverage: float = Field(default=0.5, gt=0, le=1, allow_inf_nan=False)  # a chunk holds a span
    cache_dir: str | None = None  # embedding cache (default: $INGESTAUDIT_CACHE or ~/.cache/ingestaudit/embeddings)
    executor: Literal["serial", "process", "dask"] = "process"  # how tasks run; never changes the report
    scheduler: str | None = None  # a Dask scheduler address (executor "dask"); default: a local cluster on 127.0.0.1


class ReportConfig(_Strict):
    """The ``[report]`` table: aggregation settings."""

    bootstrap_resamples: int = Field(default=1000, ge=10)
    confidence: float = Field(default=0.95, gt=0, lt=1)


class Config(_Strict):
    """The whole configuration; echoed into ``report.json["config"]``."""

    run: RunConfig = RunConfig()
    pipelines: dict[str, dict[str, Any]] = {}  # [pipelines.<name>]: stage -> implementation or {use=..., options}
    parser_options: dict[str, dict[str, Any]] = {}
    auditor_options: dict[str, dict[str, Any]] = {}
    report: ReportConfig = ReportConfig()
    gate: dict[str, float | str] = {}  # [gate]: metric -> budget, absolute (0.01) or relative ("5%")


def load_config(path: Path | None, *, trusted: bool = False) -> Config:
    """Read a TOML configuration; None gives the defaults.

    Args:
        trusted: True for a file the user named (``--config``): it may load code by ``"module:attr"`` path. False
            (the default) for a corpus's own ``ingestaudit.toml``, which is untrusted input: `untrusted_fields`
            lists what it may not set (issue 15).

    Raises:
        ConfigError: unreadable file, invalid TOML, unknown key or bad value, or (untrusted) a module path or another
            value only the user may give (file and field named).
    """
    if path is None:
        return Config()
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: unreadable ({exc.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML ({exc})") from None
    try:
        cfg = Config.model_validate(raw)
    except ValidationError as exc:
        msgs = [f"{path}: {'.'.join(map(str, e['loc']))}: "
                + ("unknown key" if e["type"] == "extra_forbidden" else e["msg"]) for e in exc.errors()]
        raise ConfigError("; ".join(msgs)) from None
    refused = [] if trusted else untrusted_fields(cfg)
    if refused:
        raise ConfigError("; ".join(f"{path}: {field}: {why}" for field, why in refused))
    return cfg


_PLUGIN_OPTIONS = ("scrubber", "detector", "cleaners")
"""``[auditor_options.*]`` keys whose values name plug-ins (pii ``scrubber``; dedup and language ``detector``;
boilerplate ``cleaners``, a list or a comma-separated string)."""

_PATH_REFUSED = ("is a module path, which imports code: only the command line or a --config file may give one (a "
                 "corpus's own ingestaudit.toml names registered plug-ins only, built-ins and entry points)")


def _table_key(key: str) -> str:
    return key if key.replace("-", "").replace("_", "").isalnum() else f'"{key}"'


def untrusted_fields(cfg: Config) -> list[tuple[str, str]]:
    """``(field, why)`` for every value an untrusted configuration (a corpus's own ``ingestaudit.toml``) may not
    set: a ``"module:attr"`` path wherever a plug-in is named (``run.parsers``, a pipeline stage or its ``use``, the
    keys of ``[parser_options]`` and of boilerplate ``cleaner_options``, ``[auditor_options.*]`` ``scrubber`` /
    ``detector`` / ``cleaners``), a pipeline embedder's ``model`` folder (loading a model may run its code) and
    ``run.cache_dir`` (a folder written to)."""
    from ingestaudit.plugins import is_module_path

    out: list[tuple[str, str]] = []

    def name(field: str, value: object) -> None:
        if is_module_path(value):
            out.append((field, f"{value!r} {_PATH_REFUSED}"))

    for i, parser in enumerate(cfg.run.parsers):
        name(f"run.parsers[{i}]", parser)
    if cfg.run.scheduler is not None:
        out.append(("run.scheduler", "tasks sent to a Dask cluster carry the corpus's truth: give the scheduler on "
                                     "the command line or in a --config file"))
    if cfg.run.cache_dir is not None:
        out.append(("run.cache_dir", "a folder written to is the user's choice: give it in a --config file or "
                                     "$INGESTAUDIT_CACHE"))
    for key in cfg.parser_options:
        name(f"parser_options.{_table_key(key)}", key)
    for pipe, table in cfg.pipelines.items():
        for stage, choice in table.items():
            field = f"pipelines.{_table_key(pipe)}.{stage}"
            if isinstance(choice, dict):
                name(f"{field}.use", choice.get("use"))
                if stage == "embedder" and "model" in choice:
                    out.append((f"{field}.model", "a model folder may run code when loaded: give it in a --config "
                                                  "file"))
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
        if isinstance(options.get("cleaner_options"), dict):
            for key in options["cleaner_options"]:
                name(f"auditor_options.{_table_key(stage)}.cleaner_options.{_table_key(key)}", key)
    return out
