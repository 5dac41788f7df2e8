"""The auditor plug point: an auditor measures one stage of one document against its truth."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ingestaudit.measurement import Score, State
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


@dataclass(frozen=True)
class CorpusItem:
    """One document as a corpus-level auditor sees it, for one parser.

    ``parsed`` is None when the parser produced nothing for it; ``state`` and ``reason`` then say why
    (``no_prediction``, ``error``, ``skipped``).
    """

    doc_id: str
    doc_class: str
    truth: Truth
    parsed: ParsedDocument | None
    state: State = State.OK
    reason: str = ""


@dataclass
class CorpusResult:
    """What a corpus-level auditor returns for one parser.

    Attributes:
        doc_scores: per-document rows, as ``(doc_id, Score)``.
        corpus_scores: corpus-level rows as ``(doc_class or "__all__", Score, n_docs)``: a value computed over the
            documents of that class (pairwise dedup rates, per-language F1...), with ``n_docs`` documents behind it.
        details: JSON-serialisable tables too rich for rows (confusion matrices, sweeps), keyed by name.
    """

    doc_scores: list[tuple[str, Score]] = field(default_factory=list)
    corpus_scores: list[tuple[str, Score, int]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


class CorpusAuditor(Auditor):
    """An auditor that needs every document of a parser at once (near-duplicate detection, language confusion).

    The runner collects each parser's `ParsedDocument`s and calls `audit_corpus` once per parser in the main process.
    `audit` is not used for these auditors.
    """

    def audit(self, truth: Truth, parsed: ParsedDocument) -> list[Score]:  # pragma: no cover - not called
        raise NotImplementedError("corpus-level auditors implement audit_corpus")

    @abstractmethod
    def audit_corpus(self, items: list[CorpusItem]) -> CorpusResult:
        """Audit one parser's output over the whole corpus. Must not raise for bad stage output."""
