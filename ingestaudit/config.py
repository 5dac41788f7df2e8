"""Run configuration: ``ingestaudit.toml`` in the corpus (or ``--config FILE``), overridden by command-line flags.

Example::

    [run]
    parsers = ["pymupdf", "unstructured"]   # default: ["pymupdf"]
    stages = []                             # default: every auditor whose truth or input is present
    seed = 0
    workers = 1
    doc_timeout_s = 300                     # per document x pipeline; a hang becomes an error row
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
from typing import Any

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


def load_config(path: Path | None) -> Config:
    """Read a TOML configuration; None gives the defaults.

    Raises:
        ConfigError: unreadable file, invalid TOML, unknown key or bad value (file and field named).
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
        return Config.model_validate(raw)
    except ValidationError as exc:
        msgs = [f"{path}: {'.'.join(map(str, e['loc']))}: "
                + ("unknown key" if e["type"] == "extra_forbidden" else e["msg"]) for e in exc.errors()]
        raise ConfigError("; ".join(msgs)) from None
