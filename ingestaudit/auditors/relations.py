"""Relations auditor (stage ``relations``): precomputed relation triples against the truth's ``relations``.

Reads the pipeline's ``relations`` step artefact (`ingestaudit.enrichment.EntityExtraction` of a precomputed output:
its ``entities`` carried onto the reference text and the ``relations`` indexing them) and scores it with
`ingestaudit.metrics.relations` under ``strict`` (relation type, both arguments' boundaries and entity types) and
``boundaries`` (relation type and argument boundaries) (Taillé et al. 2020).

Rows per document with labelled relations: ``relations.precision`` / ``relations.recall`` / ``relations.f1``
labelled ``<scheme>/micro`` and ``<scheme>/<TYPE>`` for each relation type of the corpus, numerator and denominator
the counts (tp over tp + fp, over tp + fn, 2tp over 2tp + fp + fn), so sums over documents are micro figures.
Invalid ``entities`` or ``relations`` labels make the document's rows ``error`` with the problems named.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ingestaudit.auditors.base import ArtefactItem, Auditor, CorpusResult, ItemArtefacts, Scope
from ingestaudit.auditors.entities import label_problems, unscored_rows
from ingestaudit.auditors.rates import score_from_rate
from ingestaudit.auditors.reach import count_states
from ingestaudit.enrichment import EntityExtraction
from ingestaudit.measurement import Score, State
from ingestaudit.metrics.relations import RELATION_SCHEMES, score_relations
from ingestaudit.metrics.spans import SpanCounts
from ingestaudit.metrics.specs import MetricSpec, register
from ingestaudit.truth import Truth

_LABELS = ("label '<scheme>/<TYPE>' per relation type, '<scheme>/micro' all types; schemes: strict (relation type, "
           "argument boundaries and entity types after type_map), boundaries (relation type and argument "
           "boundaries) (Taillé et al. 2020)")
METRICS = (
    MetricSpec("relations.precision", "tp / (tp + fp) of the predicted relations; " + _LABELS,
               higher_is_better=True, ci="wilson", unit="relations"),
    MetricSpec("relations.recall", "tp / (tp + fn) of the labelled relations; " + _LABELS,
               higher_is_better=True, ci="wilson", unit="relations"),
    MetricSpec("relations.f1", "2tp / (2tp + fp + fn); " + _LABELS, higher_is_better=True, unit="relations"),
)
register(*METRICS)

RATES = ("precision", "recall", "f1")


@dataclass(frozen=True)
class RelationsArtefact:
    """Counts per scheme and relation type of one document x pipeline (None: no prediction; ``state`` says why)."""

    applies: bool
    problems: tuple[str, ...] = ()
    counts: dict[str, dict[str, SpanCounts]] | None = None
    state: str = ""
    reason: str = ""


class RelationsAuditor(Auditor):
    """Audits relation triples per scheme and relation type (see the module docstring).

    Args:
        type_map: predicted entity type -> truth type (as the entities auditor's), for the ``strict`` scheme.

    Raises:
        ValueError: a bad type_map.
    """

    stage = "relations"
    scope = Scope.CORPUS
    reads = frozenset({"relations"})
    metrics = METRICS

    def __init__(self, type_map: dict[str, str | None] | str | None = None):
        from ingestaudit.auditors.pii import parse_label_map

        self.type_map = parse_label_map(type_map)

    def options(self) -> dict[str, Any]:
        """Every option that changes the numbers."""
        return {"type_map": dict(sorted(self.type_map.items())), "schemes": list(RELATION_SCHEMES),
                "definition": "Taillé et al. 2020, strict and boundaries evaluation"}

    def applies(self, truth: Truth) -> bool:
        """True when the truth labels relations (or its relation labels are invalid)."""
        return bool(truth.relations) or bool(label_problems(truth, ("relations",)))

    def corpus_values(self, truth: Truth) -> tuple[str, ...]:
        """The document's relation types: the corpus's are their union."""
        return tuple(r.type for r in truth.relations)

    def artefact(self, item: ItemArtefacts, context: tuple[str, ...]) -> RelationsArtefact:
        """The document's counts (``item.steps["relations"]`` absent: the step did not run for it)."""
        truth = item.truth
        detection: EntityExtraction | None = item.steps.get("relations")
        if not self.applies(truth):
            return RelationsArtefact(False)
        problems = tuple(label_problems(truth, ("entities", "relations")))
        if problems or detection is None or not detection.ran:
            return RelationsArtefact(True, problems)
        if detection.state:
            return RelationsArtefact(True, state=detection.state, reason=detection.reason)
        gold = [r.model_dump() for r in truth.relations]
        counts = {s: score_relations(gold, truth.entities, list(detection.relations or ()), list(detection.spans), s,
                                     self.type_map) for s in RELATION_SCHEMES}
        return RelationsArtefact(True, (), counts)

    def audit_artefacts(self, items: list[ArtefactItem], context: tuple[str, ...] = ()) -> CorpusResult:
        """Rows per document (see the module docstring)."""
        result = CorpusResult()
        types = sorted(set(context))
        left_out: list[tuple[str, State]] = []
        for it in items:
            rows = self._rows(it, it.artefact, types)
            result.doc_scores += [(it.doc_id, s) for s in rows]
            if it.artefact.applies and (it.artefact.counts is None or it.state is not State.OK):
                left_out.append((it.doc_class, rows[0].state))
        result.unreached = count_states(left_out)
        result.details["relations"] = {"type_map": dict(sorted(self.type_map.items())), "types": types}
        return result

    def _rows(self, it: ArtefactItem, a: RelationsArtefact, types: list[str]) -> list[Score]:
        labels = [f"{s}/{t}" for s in RELATION_SCHEMES for t in ("micro", *types)]
        unscored = unscored_rows(it, a, a.counts is not None, labels, [f"relations.{r}" for r in RATES], "relations")
        if unscored is not None:
            return unscored
        out: list[Score] = []
        for scheme in RELATION_SCHEMES:
            by_type = a.counts[scheme]
            micro = sum(by_type.values(), SpanCounts())
            for t, c in (("micro", micro), *((t, by_type.get(t, SpanCounts())) for t in types)):
                detail = {"tp": c.tp, "fp": c.fp, "fn": c.fn}
                out += [score_from_rate(f"relations.{r}", c.rate(r), label=f"{scheme}/{t}", detail=detail)
                        for r in RATES]
        return out
