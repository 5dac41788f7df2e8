"""Entities auditor (stage ``entities``): named-entity extraction against the truth's ``entities`` spans.

Reads the pipeline's ``entities`` step artefact (`ingestaudit.enrichment.EntityExtraction`: predicted spans already
carried onto the reference text) and scores it with `ingestaudit.metrics.entities` under the four SemEval-2013 task
9.1 schemes as nervaluate computes them. It loads no model.

Rows per document with an ``entities`` key in its truth (every other document: ``no_reference``):

- ``entities.precision`` / ``entities.recall`` / ``entities.f1`` labelled ``<scheme>/micro`` (all types at once) and
  ``<scheme>/<TYPE>`` for every type the document labels or predicts (a type absent on both sides adds nothing to
  the corpus sums and has no row); numerator and denominator are the scheme's terms
  (COR + 0.5·PAR over ACT, over POS, 2·(COR + 0.5·PAR) over ACT + POS), so summing them over documents gives
  nervaluate's corpus figures; the counts (correct, incorrect, partial, missed, spurious, possible, actual) are in
  the detail;
- ``entities.unmapped_predictions``: predicted spans whose type, after ``type_map``, is not a labelled type of the
  document / all predicted spans; set apart, not spurious (detail: the types).

Corpus rows per class and ``__all__``: ``<scheme>/macro``, the mean over types of the per-type corpus rate.
A document whose ``entities`` labels are invalid (a span outside the text, reversed, overlapping one of its type,
of an undeclared type) gets ``error`` rows naming the span; the other documents are audited.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ingestaudit.auditors.base import ArtefactItem, Auditor, CorpusResult, ItemArtefacts, Scope
from ingestaudit.auditors.rates import score_from_rate
from ingestaudit.auditors.reach import count_states, parse_state
from ingestaudit.enrichment import ENTITIES_STEP_DEFAULTS, EntityExtraction, check_entities_options
from ingestaudit.measurement import Score, State
from ingestaudit.metrics.entities import DEFAULT_MIN_OVERLAP, RATES, SCHEMES, EntityScores, empty_scores, evaluate
from ingestaudit.metrics.specs import MetricSpec, register
from ingestaudit.truth import Truth

_LABELS = ("label '<scheme>/<TYPE>' per truth type, '<scheme>/micro' all types at once, '<scheme>/macro' (corpus) "
           "mean over types; schemes of SemEval-2013 task 9.1 as nervaluate 1.x computes them: strict (same "
           "boundaries and type), exact (same boundaries), partial (overlap, half credit), ent_type (overlap and "
           "type); predicted types renamed by type_map")
METRICS = (
    MetricSpec("entities.precision", "(COR + 0.5 PAR) / ACT (PAR only under partial) of the predicted entities on the "
               "reference text; " + _LABELS, higher_is_better=True, unit="entities"),
    MetricSpec("entities.recall", "(COR + 0.5 PAR) / POS of the labelled entities; " + _LABELS,
               higher_is_better=True, unit="entities"),
    MetricSpec("entities.f1", "2 (COR + 0.5 PAR) / (ACT + POS), i.e. 2PR / (P + R); " + _LABELS,
               higher_is_better=True, unit="entities"),
    MetricSpec("entities.unmapped_predictions", "predicted entities whose type (after type_map) the document does "
               "not label / predicted entities; set apart, not spurious", higher_is_better=False, ci="wilson",
               unit="entities"),
)
register(*METRICS)

RATE_METRICS = tuple(f"entities.{r}" for r in RATES)


def label_problems(truth: Truth, keys: tuple[str, ...]) -> list[str]:
    """The truth's label problems of the JSON keys ``keys`` (``entities``, ``relations``...), as text."""
    return [str(p) for p in truth.problems if p.field.split("[", 1)[0].split(".", 1)[0] in keys]


def unscored_rows(it: ArtefactItem, a: Any, scored: bool, labels: list[str], metrics: list[str] | tuple[str, ...],
                  step: str) -> list[Score] | None:
    """The rows of a document without counts, every ``metric`` x ``label``: ``no_reference`` (``a.applies`` False),
    ``error`` naming its label problems (``a.problems``), or the parser's or the step's state with its reason; None
    when the document is ``scored``. ``a`` has ``applies``, ``problems``, ``state`` and ``reason``."""
    if not a.applies:
        state, reason = State.NO_REFERENCE, f"no {step} labels"
    elif a.problems:
        state, reason = State.ERROR, "; ".join(a.problems)
    elif it.state is not State.OK or not scored:
        state = parse_state(it) if it.state is not State.OK else State(a.state or "no_prediction")
        reason = it.reason or a.reason or f"the {step} step did not run"
    else:
        return None
    return [Score.missing(m, state, reason, label=lab) for lab in labels for m in metrics]


def doc_vocabulary(truth: Truth, context: tuple[str, ...]) -> tuple[str, ...]:
    """The types a document labels: its ``entity_types``, else the types of the corpus's entity spans."""
    return truth.entity_types if truth.entity_types is not None else context


@dataclass(frozen=True)
class EntitiesArtefact:
    """What the entities auditor keeps of one document x pipeline: the scheme counts, never the text.

    Attributes:
        applies: the truth has ``entities`` (or invalid ones).
        problems: the label problems of ``entities`` (the document's rows are then ``error``).
        scores: the counts (None: no prediction known; ``state``/``reason`` say why).
        n_predicted: predicted spans, all types; lost: those without a place on the reference text.
        source: the extractor that produced them.
        types: the document's vocabulary; labelled: the types of its truth spans (rows of a document without
            scores: ``<scheme>/micro`` and these).
    """

    applies: bool
    problems: tuple[str, ...] = ()
    scores: EntityScores | None = None
    state: str = ""
    reason: str = ""
    n_predicted: int = 0
    lost: int = 0
    source: str = ""
    types: tuple[str, ...] = field(default=())
    labelled: tuple[str, ...] = ()


class EntitiesAuditor(Auditor):
    """Audits named entities per scheme and type (see the module docstring) from the ``entities`` step's artefacts.

    Args:
        extractor, spacy_model, prefer_precomputed, max_chars: step defaults (`ingestaudit.enrichment`), under a
            pipeline's own ``entities`` table.
        type_map: predicted type -> truth type, a table or ``"PERSON=PER, GPE=LOC, CARDINAL="`` (an empty target
            excludes the type on purpose); printed in the report.
        min_overlap: percent of a truth span's length two spans must share to overlap (nervaluate's
            ``min_overlap_percentage``), in [1, 100].

    Raises:
        ValueError: bad step options, a bad type_map or min_overlap outside [1, 100].
    """

    stage = "entities"
    scope = Scope.CORPUS
    reads = frozenset({"entities"})
    metrics = METRICS

    def __init__(self, extractor: str = "spacy", spacy_model: str = "en_core_web_sm", prefer_precomputed: bool = True,
                 max_chars: int = 1_000_000, type_map: dict[str, str | None] | str | None = None,
                 min_overlap: float = DEFAULT_MIN_OVERLAP):
        from ingestaudit.auditors.pii import parse_label_map

        self.step_defaults = check_entities_options({"extractor": extractor, "spacy_model": spacy_model,
                                                     "prefer_precomputed": prefer_precomputed,
                                                     "max_chars": max_chars})
        self.type_map = parse_label_map(type_map)
        if not 1.0 <= float(min_overlap) <= 100.0:
            raise ValueError(f"min_overlap must be in [1, 100] percent, got {min_overlap!r}")
        self.min_overlap = float(min_overlap)

    def step_options(self) -> dict[str, Any]:
        """The step options set here that differ from the step's defaults."""
        return {k: v for k, v in self.step_defaults.items() if v != ENTITIES_STEP_DEFAULTS[k]}

    def options(self) -> dict[str, Any]:
        """Every option that changes the numbers."""
        return {**self.step_defaults, "type_map": dict(sorted(self.type_map.items())), "schemes": list(SCHEMES),
                "min_overlap_percent": self.min_overlap, "definition": "nervaluate 1.2.1 (SemEval-2013 task 9.1)",
                "offsets": "predicted spans carried onto the reference text through the extraction alignment"}

    def applies(self, truth: Truth) -> bool:
        """True when the truth has an ``entities`` key (valid or not)."""
        return truth.entities_labelled or bool(label_problems(truth, ("entities",)))

    def corpus_values(self, truth: Truth) -> tuple[str, ...]:
        """The types the document labels (declared or used): the corpus vocabulary is their union."""
        return tuple(truth.entity_types or ()) + tuple(s.type for s in truth.entities)

    def artefact(self, item: ItemArtefacts, context: tuple[str, ...]) -> EntitiesArtefact:
        """The document's counts under every scheme (``item.steps["entities"]`` absent: the step did not run for it)."""
        truth = item.truth
        detection: EntityExtraction | None = item.steps.get("entities")
        if not self.applies(truth):
            return EntitiesArtefact(False)
        problems = tuple(label_problems(truth, ("entities",)))
        types, labelled = doc_vocabulary(truth, context), tuple(sorted({s.type for s in truth.entities}))
        if problems or detection is None or not detection.ran:
            return EntitiesArtefact(True, problems, types=types, labelled=labelled)
        if detection.state:
            return EntitiesArtefact(True, state=detection.state, reason=detection.reason, types=types,
                                    labelled=labelled)
        placed = [s for s in detection.spans if s is not None]
        scores = evaluate(truth.entities, placed, types=types, mapping=self.type_map, min_overlap=self.min_overlap)
        return EntitiesArtefact(True, (), scores, n_predicted=len(detection.spans), lost=detection.lost,
                                source=detection.source, types=types, labelled=labelled)

    def audit_artefacts(self, items: list[ArtefactItem], context: tuple[str, ...] = ()) -> CorpusResult:
        """Rows per document, ``<scheme>/macro`` per class, details (type map, unmapped types, corpus counts)."""
        result = CorpusResult()
        vocab = sorted(set(context))
        scored: dict[str, list[EntityScores]] = defaultdict(list)
        left_out: list[tuple[str, State]] = []
        unmapped: dict[str, int] = defaultdict(int)
        for it in items:
            a: EntitiesArtefact = it.artefact
            rows = self._rows(it, a)
            result.doc_scores += [(it.doc_id, s) for s in rows]
            if a.applies and a.scores is not None and it.state is State.OK:
                scored[it.doc_class].append(a.scores)
                for t, n in a.scores.unmapped.items():
                    unmapped[t] += n
            elif a.applies:
                left_out.append((it.doc_class, rows[0].state))
        result.unreached = count_states(left_out)
        totals: dict[str, tuple[EntityScores, int]] = {}
        for cls in sorted(scored):
            total = empty_scores()
            for s in scored[cls]:
                total = total + s
            totals[cls] = (total, len(scored[cls]))
        if scored:
            everything = empty_scores()
            for total, _ in totals.values():
                everything = everything + total
            totals["__all__"] = (everything, sum(n for _, n in totals.values()))
        counts: dict[str, Any] = {}
        for cls, (total, n_docs) in totals.items():
            for scheme in SCHEMES:
                for rate in RATES:
                    m = total.macro(scheme, rate)
                    score = score_from_rate(f"entities.{rate}", m, label=f"{scheme}/macro",
                                            detail={"types": sorted(total.per_type[scheme])})
                    result.corpus_scores.append((cls, score, n_docs))
            if cls == "__all__":
                counts = {scheme: {"micro": total.micro[scheme].as_dict(),
                                   **{t: c.as_dict() for t, c in total.per_type[scheme].items()}}
                          for scheme in SCHEMES}
        result.details["entities"] = {"type_map": dict(sorted(self.type_map.items())), "vocabulary": vocab,
                                      "unmapped_types": dict(sorted(unmapped.items())), "counts": counts}
        return result

    def _rows(self, it: ArtefactItem, a: EntitiesArtefact) -> list[Score]:
        labels = [f"{s}/{t}" for s in SCHEMES for t in ("micro", *a.labelled)]
        unscored = unscored_rows(it, a, a.scores is not None, labels, RATE_METRICS, "entities")
        if unscored is not None:
            return unscored
        out: list[Score] = []
        for scheme in SCHEMES:
            micro = a.scores.micro[scheme]
            detail = {**micro.as_dict(), "unmapped": dict(a.scores.unmapped), "excluded": dict(a.scores.excluded),
                      "lost_predictions": a.lost, "source": a.source}
            out += [score_from_rate(f"entities.{r}", micro.rate(r), label=f"{scheme}/micro", detail=detail)
                    for r in RATES]
            for t, c in a.scores.per_type[scheme].items():
                out += [score_from_rate(f"entities.{r}", c.rate(r), label=f"{scheme}/{t}", detail=c.as_dict())
                        for r in RATES]
        n_unmapped, n_judged = sum(a.scores.unmapped.values()), a.n_predicted - a.lost
        if n_judged == 0:
            out.append(Score("entities.unmapped_predictions", None, 0, 0, State.NO_PREDICTION, "*",
                             {"reason": "nothing predicted"}))
        else:
            out.append(Score.ratio("entities.unmapped_predictions", n_unmapped, n_judged, label="*",
                                   detail={"types": dict(a.scores.unmapped)}))
        return out
