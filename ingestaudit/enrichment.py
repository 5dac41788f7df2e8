"""The artefacts of the enrichment steps (``entities``, ``metadata``; DESIGN.md "Pipelines and the stage chain":
``... -> [enrich: entities, metadata] -> chunk``) and their option checks.

A type module below the auditors and the steps, as `ingestaudit.detections` is for language and PII: the steps
(`ingestaudit.stages.entities_step`, `ingestaudit.stages.metadata_step`) build these in the worker, the auditors
(`ingestaudit.auditors.entities`, `.metadata`, `.relations`) only read them, so no auditor imports spaCy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

ENTITY_EXTRACTORS = ("spacy", "presidio", "precomputed")
"""Built-in entity extractors: spaCy's statistical NER, Presidio's analyzer (its defaults over the same spaCy model:
PERSON, LOCATION, NRP, DATE_TIME and pattern types; ORG ignored as Presidio does), or the spans of a precomputed
output (``--outputs``)."""

ENTITIES_STEP_DEFAULTS: dict[str, Any] = {
    "extractor": "spacy", "spacy_model": "en_core_web_sm", "prefer_precomputed": True, "max_chars": 1_000_000}
"""The ``entities`` step's options and defaults (``extractor`` is the step's ``use``): ``spacy_model`` the installed
spaCy pipeline whose ``ner`` runs; ``prefer_precomputed`` reads an output's ``entities`` instead of running spaCy;
inputs longer than ``max_chars`` code points are ``skipped``."""

METADATA_EXTRACTORS = ("parser", "precomputed")
"""Built-in metadata extractors: what the parsed document says (PDF document information, first heading), or the
``metadata`` of a precomputed output."""

METADATA_STEP_DEFAULTS: dict[str, Any] = {"extractor": "parser", "prefer_precomputed": True}
"""The ``metadata`` step's options and defaults (``extractor`` is the step's ``use``)."""


def _check(step: str, opts: dict[str, Any], defaults: dict[str, Any], choices: tuple[str, ...]) -> dict[str, Any]:
    from ingestaudit.detections import with_defaults

    o = with_defaults(step, opts, defaults)
    if o["extractor"] not in choices:
        raise ValueError(f"{step} extractor must be one of {', '.join(choices)}, got {o['extractor']!r}")
    o["prefer_precomputed"] = bool(o["prefer_precomputed"])
    return o


def check_entities_options(opts: dict[str, Any]) -> dict[str, Any]:
    """The ``entities`` step's options, complete (`ENTITIES_STEP_DEFAULTS` filled in) and checked.

    Raises:
        ValueError: an unknown option or extractor, ``max_chars`` < 1, or a blank ``spacy_model``.
    """
    o = _check("entities", opts, ENTITIES_STEP_DEFAULTS, ENTITY_EXTRACTORS)
    if isinstance(o["max_chars"], bool) or int(o["max_chars"]) < 1:
        raise ValueError(f"max_chars must be >= 1, got {o['max_chars']!r}")
    if not isinstance(o["spacy_model"], str) or not o["spacy_model"].strip():
        raise ValueError(f"spacy_model must name an installed spaCy pipeline, got {o['spacy_model']!r}")
    o["max_chars"] = int(o["max_chars"])
    return o


def check_metadata_options(opts: dict[str, Any]) -> dict[str, Any]:
    """The ``metadata`` step's options, complete (`METADATA_STEP_DEFAULTS` filled in) and checked.

    Raises:
        ValueError: an unknown option or extractor.
    """
    return _check("metadata", opts, METADATA_STEP_DEFAULTS, METADATA_EXTRACTORS)


@dataclass(frozen=True)
class EntityExtraction:
    """What the ``entities`` step produced for one document x pipeline.

    Attributes:
        extractor: the step's extractor (its ``use``).
        ran: the step had output to read (False: the pipeline produced nothing; nothing below is set).
        source: ``spacy <model> <version>`` or ``precomputed`` (``""``: nothing predicted).
        spans: the predicted entities as ``(start, end, type)`` on the *reference* text (mapped from the step's input
            through the extraction alignment, as chunks are), in the extractor's order and vocabulary; ``None`` for
            a span none of whose characters maps onto the reference text (counted as ``lost``). Without a reference
            text the input offsets are kept.
        relations: predicted relations ``{"head", "tail", "type"}`` indexing ``spans`` (precomputed only).
        state, reason: ``""`` when the predictions are known, else the rows' state (``no_prediction``, ``skipped``,
            ``error``) and why.
    """

    extractor: str
    ran: bool = False
    source: str = ""
    spans: tuple[tuple[int, int, str] | None, ...] = ()
    relations: tuple[dict[str, Any], ...] | None = None
    state: str = ""
    reason: str = ""

    @property
    def lost(self) -> int:
        """Predicted spans that did not map onto the reference text."""
        return sum(1 for s in self.spans if s is None)


@dataclass(frozen=True)
class MetadataExtraction:
    """What the ``metadata`` step produced for one document x pipeline.

    Attributes:
        extractor: the step's extractor (its ``use``).
        ran: the step had output to read.
        source: where each field came from, field -> ``pdf_info``, ``first_heading`` or ``precomputed``.
        fields: the extracted fields (title, authors, date...), JSON values.
        state, reason: as `EntityExtraction`.
    """

    extractor: str
    ran: bool = False
    source: dict[str, str] | None = None
    fields: dict[str, Any] | None = None
    state: str = ""
    reason: str = ""


def chunk_entities(spans: Sequence[tuple[int, int, str] | None], reference: str,
                   intervals: Sequence[tuple[int, int] | None]) -> list[dict[str, list[str]] | None]:
    """The entities each chunk carries as metadata: per chunk reference interval ``[start, end)`` (None: the chunk
    could not be placed on the reference text, and carries nothing), ``{TYPE: [text, ...]}`` of the ``spans`` (on the
    reference text, `EntityExtraction.spans`; None spans skipped) that overlap it by at least one character, each
    text the whole entity's ``reference[start:end]``, once per type in text order; types sorted; ``{}`` for a chunk
    without any.

    Worked example: spans (0, 4, "ORG"), (10, 13, "PER") on "Acme hired Ann ..." and intervals (0, 8), (8, 20):
    ``[{"ORG": ["Acme"]}, {"PER": ["Ann"]}]``; an entity across the boundary is in both chunks.
    """
    placed = sorted(s for s in spans if s is not None)
    out: list[dict[str, list[str]] | None] = []
    for iv in intervals:
        if iv is None:
            out.append(None)
            continue
        lo, hi = iv
        found: dict[str, list[str]] = {}
        for start, end, typ in placed:
            if start >= hi:
                break
            texts = found.setdefault(typ, []) if end > lo else None
            if texts is not None and reference[start:end] not in texts:
                texts.append(reference[start:end])
        out.append({t: found[t] for t in sorted(found)})
    return out
