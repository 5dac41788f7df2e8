"""Metadata auditor (stage ``metadata``): the extracted document fields against the truth's ``metadata``.

Reads the pipeline's ``metadata`` step artefact (`ingestaudit.enrichment.MetadataExtraction`) and compares each
labelled field with `ingestaudit.metrics.fields.compare_field` after the named field profile (default
``field-v1``: NFKC, case folded, white space collapsed), printed in every row's detail and in the options.

Rows per document whose ``metadata`` labels an audited field (`DEFAULT_FIELDS`: title, authors, date, language,
year; or the ``fields`` option, ``"*"`` for every labelled field), one pair per such field, labelled by the field
name:

- ``metadata.exact_match``: 1 when the normalised values are equal (dates: equal as ISO 8601 after parsing), else 0;
  a field the extractor did not give is compared as an empty string (0), with ``missing`` in the detail;
- ``metadata.similarity``: 1 - Levenshtein distance / longer length of the normalised values, in [0, 1]; for a date
  or a year (`ingestaudit.metrics.fields.EXACT_ONLY_FIELDS`) the exact match, 1 or 0 (a wrong year is wrong, not
  0.75 similar; the option ``exact_only`` in every report says so); an extracted date that does not parse is
  ``no_prediction`` with the value named (and counted in the details' ``date_parse_failures``), its exact match 0.

A labelled value the metric cannot read (a date that does not parse, a nested object) is that field's ``error``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from ingestaudit.auditors.base import ArtefactItem, Auditor, CorpusResult, ItemArtefacts, Scope
from ingestaudit.auditors.reach import count_states, parse_state
from ingestaudit.enrichment import METADATA_STEP_DEFAULTS, MetadataExtraction, check_metadata_options
from ingestaudit.measurement import Score, State
from ingestaudit.metrics.fields import (DEFAULT_FIELD_PROFILE, EXACT_ONLY_FIELDS, FIELD_PROFILES, FieldComparison,
                                       compare_field)
from ingestaudit.metrics.specs import MetricSpec, register
from ingestaudit.truth import Truth

METRICS = (
    MetricSpec("metadata.exact_match", "1 when the extracted field equals the labelled one after the field profile "
               "(dates as ISO 8601 after parsing), else 0; per document and field (label = field); the mean is the "
               "exact match rate", higher_is_better=True, ci="wilson", unit="fields"),
    MetricSpec("metadata.similarity", "normalised Levenshtein similarity 1 - lev(a, b) / max(|a|, |b|) of the labelled "
               "and extracted field after the field profile (rapidfuzz); dates and years: the exact match, 1 or 0; "
               "per document and field (label = field)",
               higher_is_better=True, unit="fields"),
)
register(*METRICS)

METRIC_NAMES = tuple(s.name for s in METRICS)

DEFAULT_FIELDS = ("authors", "date", "language", "title", "year")
"""The fields audited by default: what a metadata extractor produces (``language`` from the pipeline's language step,
`ingestaudit.steps.metadata_extraction`; compared as text after the profile, so label it as the step gives it, an
ISO 639-1 code such as ``en``). Other truth ``metadata`` keys (``lang``, ``source``...) usually exist for question
filters only; ``fields = "*"`` audits every labelled field."""


@dataclass(frozen=True)
class MetadataArtefact:
    """What the metadata auditor keeps of one document x pipeline.

    Attributes:
        fields: the compared fields (labelled and selected), in name order.
        compared: field -> the comparison, or the error message for a labelled value the metric cannot read.
        missing: fields the extractor did not give.
        source: field -> where the extractor took it from.
        state, reason: the step's state when it produced nothing.
    """

    fields: tuple[str, ...]
    compared: dict[str, FieldComparison | str] | None = None
    missing: tuple[str, ...] = ()
    source: dict[str, str] | None = None
    state: str = ""
    reason: str = ""


class MetadataAuditor(Auditor):
    """Audits extracted metadata fields (see the module docstring) from the ``metadata`` step's artefacts.

    Args:
        extractor, prefer_precomputed: step defaults (`ingestaudit.enrichment`).
        profile: the field normalisation profile (`ingestaudit.metrics.fields.FIELD_PROFILES`).
        fields: the fields to audit, a list or ``"title, authors, date"``; None: `DEFAULT_FIELDS`; ``"*"``: every
            labelled field.

    Raises:
        ValueError: bad step options or an unknown profile.
    """

    stage = "metadata"
    scope = Scope.CORPUS
    reads = frozenset({"metadata"})
    metrics = METRICS

    def __init__(self, extractor: str = "parser", prefer_precomputed: bool = True,
                 profile: str = DEFAULT_FIELD_PROFILE, fields: list[str] | str | None = None):
        self.step_defaults = check_metadata_options({"extractor": extractor, "prefer_precomputed": prefer_precomputed})
        if profile not in FIELD_PROFILES:
            raise ValueError(f"unknown field profile {profile!r}; known: {', '.join(sorted(FIELD_PROFILES))}")
        self.profile = profile
        if isinstance(fields, str):
            fields = [f for f in fields.replace(",", " ").split() if f]
        fields = DEFAULT_FIELDS if fields is None else fields
        self.fields = None if list(fields) == ["*"] else tuple(sorted(set(fields)))

    def step_options(self) -> dict[str, Any]:
        """The step options set here that differ from the step's defaults."""
        return {k: v for k, v in self.step_defaults.items() if v != METADATA_STEP_DEFAULTS[k]}

    def options(self) -> dict[str, Any]:
        """Every option that changes the numbers (the profile by name and steps)."""
        return {**self.step_defaults, "profile": self.profile,
                "profile_description": FIELD_PROFILES[self.profile].description,
                "fields": "every labelled field" if self.fields is None else list(self.fields),
                "dates": "parsed (dateutil) and compared as ISO 8601 at the precision given",
                "exact_only": f"{', '.join(sorted(EXACT_ONLY_FIELDS))}: similarity = exact match (1 or 0)",
                "missing_field": "compared as an empty string"}

    def _selected(self, truth: Truth) -> tuple[str, ...]:
        labelled = sorted(truth.metadata or {})
        return tuple(f for f in labelled if self.fields is None or f in self.fields)

    def applies(self, truth: Truth) -> bool:
        """True when the truth labels at least one audited metadata field."""
        return bool(self._selected(truth))

    def artefact(self, item: ItemArtefacts, context: tuple[str, ...]) -> MetadataArtefact:
        """Each selected field compared (``item.steps["metadata"]`` absent or not run: the fields only)."""
        truth = item.truth
        detection: MetadataExtraction | None = item.steps.get("metadata")
        fields = self._selected(truth)
        if detection is None or not detection.ran:
            return MetadataArtefact(fields)
        if detection.state:
            return MetadataArtefact(fields, state=detection.state, reason=detection.reason)
        got = detection.fields or {}
        compared: dict[str, FieldComparison | str] = {}
        for f in fields:
            try:
                compared[f] = compare_field(f, truth.metadata[f], got.get(f, ""), self.profile)  # type: ignore[index]
            except ValueError as exc:
                compared[f] = str(exc)
        return MetadataArtefact(fields, compared, tuple(f for f in fields if f not in got), detection.source)

    def audit_artefacts(self, items: list[ArtefactItem], context: tuple[str, ...] = ()) -> CorpusResult:
        """Rows per document and field; details: parse failures and missing fields per field."""
        result = CorpusResult()
        failures: Counter[str] = Counter()
        missing: Counter[str] = Counter()
        left_out: list[tuple[str, State]] = []
        for it in items:
            a: MetadataArtefact = it.artefact
            rows = self._rows(it, a)
            result.doc_scores += [(it.doc_id, s) for s in rows]
            if a.fields and a.compared is None:
                left_out.append((it.doc_class, rows[0].state))
            for f, c in (a.compared or {}).items():
                failures[f] += isinstance(c, FieldComparison) and c.parse_failure
            missing.update(a.missing)
        result.unreached = count_states(left_out)
        result.details["metadata"] = {"profile": self.profile, "date_parse_failures": dict(sorted(failures.items())),
                                      "missing_fields": dict(sorted(missing.items()))}
        return result

    def _rows(self, it: ArtefactItem, a: MetadataArtefact) -> list[Score]:
        if not a.fields:
            return [Score.missing(m, State.NO_REFERENCE, "no metadata labels") for m in METRIC_NAMES]
        if it.state is not State.OK or a.compared is None:
            state = parse_state(it) if it.state is not State.OK else State(a.state or "no_prediction")
            reason = it.reason or a.reason or "the metadata step did not run"
            return [Score.missing(m, state, reason, label=f) for f in a.fields for m in METRIC_NAMES]
        out: list[Score] = []
        for f in a.fields:
            c = a.compared[f]
            if isinstance(c, str):
                out += [Score.missing(m, State.ERROR, c, label=f) for m in METRIC_NAMES]
                continue
            detail = {"truth": c.truth, "extracted": c.extracted, "profile": c.profile, "missing": f in a.missing,
                      "source": (a.source or {}).get(f, "")}
            out.append(Score("metadata.exact_match", float(c.exact_match), c.exact_match, 1, State.OK, f, detail))
            if c.similarity is None:
                out.append(Score.missing("metadata.similarity", State.NO_PREDICTION, "the extracted date does not "
                                         "parse", label=f, detail={**detail, "parse_failure": True}))
            else:
                out.append(Score("metadata.similarity", c.similarity, c.similarity, 1, State.OK, f, detail))
        return out
