"""The auditor plug point: an auditor measures one stage of one document against its truth."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from ingestaudit.measurement import Score
from ingestaudit.metrics.specs import MetricSpec
from ingestaudit.model import ParsedDocument
from ingestaudit.truth import Truth


class Auditor(ABC):
    """Measures one stage for one (document, parser) pair.

    Subclasses set ``stage`` and ``metrics`` (their `MetricSpec`s, registered on import) and implement `applies` and
    `audit`. Options that change numbers (normalization profile...) come in through ``__init__`` and are returned by
    `options` so the report prints them next to the numbers.
    """

    stage: ClassVar[str]
    metrics: ClassVar[tuple[MetricSpec, ...]]

    def options(self) -> dict[str, Any]:
        """Every option that changes this auditor's numbers, JSON-serialisable."""
        return {}

    @abstractmethod
    def applies(self, truth: Truth) -> bool:
        """True when ``truth`` holds what this auditor measures against (auditors needing no truth return True)."""

    @abstractmethod
    def audit(self, truth: Truth, parsed: ParsedDocument) -> list[Score]:
        """Scores for one document. Must not raise for bad stage output: return rows in a non-``ok`` state instead.
        The runner turns any exception that escapes into ``error`` rows for this stage."""
