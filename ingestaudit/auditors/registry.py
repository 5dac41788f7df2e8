"""Built-in auditors by stage name, registered by dotted path and imported only when their stage runs."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from ingestaudit.auditors.base import Auditor
from ingestaudit.errors import IngestAuditError

BUILTIN: dict[str, str] = {
    "extraction": "ingestaudit.auditors.extraction:ExtractionAuditor",
    "normalization": "ingestaudit.auditors.normalization:NormalizationAuditor",
    "tables": "ingestaudit.auditors.tables:TablesAuditor",
    "layout": "ingestaudit.auditors.layout:LayoutAuditor",
    "boilerplate": "ingestaudit.auditors.boilerplate:BoilerplateAuditor",
    "language": "ingestaudit.auditors.language:LanguageAuditor",
    "pii": "ingestaudit.auditors.pii:PiiAuditor",
    "entities": "ingestaudit.auditors.entities:EntitiesAuditor",
    "metadata": "ingestaudit.auditors.metadata:MetadataAuditor",
    "relations": "ingestaudit.auditors.relations:RelationsAuditor",
    "dedup": "ingestaudit.auditors.dedup:DedupAuditor",
    "chunking": "ingestaudit.auditors.chunking:ChunkingAuditor",
    "retrieval": "ingestaudit.auditors.retrieval:RetrievalAuditor",
    "index": "ingestaudit.auditors.index:IndexAuditor",
}


class UnknownStage(IngestAuditError, ValueError):
    """No auditor exists for that stage name; the message lists the known stages."""


def stage_names() -> list[str]:
    """Every auditable stage, in pipeline order."""
    return list(BUILTIN)


def auditor_class(stage: str) -> type[Auditor]:
    """The auditor class of ``stage`` (imported on first use).

    Raises:
        UnknownStage: unknown stage name.
    """
    if stage not in BUILTIN:
        raise UnknownStage(f"unknown stage {stage!r}; known stages: {', '.join(BUILTIN)}")
    module, _, cls_name = BUILTIN[stage].partition(":")
    return getattr(import_module(module), cls_name)


def takes_run_seed(stage: str) -> bool:
    """Whether ``stage``'s auditor takes a ``seed`` option, which the runner fills with the run's seed (False for an
    unknown stage)."""
    import inspect

    try:
        return "seed" in inspect.signature(auditor_class(stage)).parameters
    except UnknownStage:
        return False


def load_auditor(stage: str, options: dict[str, Any] | None = None) -> Auditor:
    """Instantiate the auditor of ``stage`` with keyword ``options`` (from ``[auditor_options.STAGE]``).

    Raises:
        UnknownStage: unknown stage name.
        ValueError: an option the auditor does not take, or a value it refuses (the message names the table).
    """
    cls = auditor_class(stage)
    try:
        return cls(**(options or {}))
    except ValueError as exc:  # a value the auditor refuses: named with its table (``threshold must be ...``)
        table = f"[auditor_options.{stage}]"
        if table in str(exc) or type(exc) is not ValueError:  # named already, or a subclass callers catch by type
            raise
        raise ValueError(f"{table} {exc}") from exc
    except TypeError as exc:
        from ingestaudit.schema_keys import PAGES, option_names

        valid = ", ".join(option_names(cls)) or "none"
        raise ValueError(f"stage {stage!r}: bad option in [auditor_options.{stage}] ({exc}); valid options: {valid} "
                         f"(see {PAGES['config']})") from exc
