"""Every metric the package declares, looked up by name: the built-in auditors register their specs on import, so a
lookup that misses imports them once (`ingestaudit.auditors.registry.BUILTIN`) and tries again."""

from __future__ import annotations

from importlib import import_module

from ingestaudit.auditors.registry import BUILTIN
from ingestaudit.metrics.specs import MetricSpec, registered


EXTRA_SPECS = ("ingestaudit.embedding_drift", "ingestaudit.events")
"""Modules that declare metrics outside an auditor (embedding drift between runs, index freshness)."""


def _load_builtin() -> None:
    """Import every built-in auditor module once, so their specs are registered (they register on import), and
    `EXTRA_SPECS`."""
    for target in BUILTIN.values():
        import_module(target.partition(":")[0])
    for module in EXTRA_SPECS:
        import_module(module)


def get(name: str) -> MetricSpec:
    """The spec registered as ``name`` (built-in auditors' specs are loaded on first miss).

    Raises:
        KeyError: unknown name; the message lists the registered names.
    """
    specs = registered()
    if name not in specs:
        _load_builtin()
    try:
        return specs[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known: {', '.join(sorted(specs))}") from None


def all_specs() -> list[MetricSpec]:
    """Every registered spec (built-in ones included), sorted by name."""
    _load_builtin()
    specs = registered()
    return [specs[k] for k in sorted(specs)]
