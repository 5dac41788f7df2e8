"""PII auditor (stage ``pii``): per-entity-type precision, recall, F1 and F2 of a scrubber under three named matching
policies, losses attributed to extraction, residual leakage, and false alarms on documents without PII.

Truth: ``pii`` spans on the document's reference text (DESIGN.md, "Truth file fields"). Per (document, parser):

1. **Scrubber input** = the parser's extracted text. The scrubber is the pipeline's ``pii`` step
   (`ingestaudit.stages.pii_step`, run in the worker; this auditor only reads its predictions), per document:
   precomputed spans when the output carries ``pii`` (and ``prefer_precomputed``), else the configured one:
   ``presidio`` (default), a user detector, ``precomputed``, or ``redacted`` (a redacted text audited from the
   output side: `ingestaudit.stages.pii.redaction_spans` recovers the removed spans).
2. **Label map**: gold types are renamed into the detector's vocabulary (``label_map``, e.g. GPE and
   STREET_ADDRESS -> LOCATION; a type mapped to None is excluded on purpose); a gold type the detector cannot
   produce is *unmapped*: left out of the per-type and all-type rows, kept in the type-agnostic rows, the leakage
   and the extraction losses, and listed with its count in the details (never dropped silently).
3. **Projection** (`ingestaudit.metrics.alignment`): gold spans are carried from the reference text onto the
   extracted text through a character alignment. A span that cannot be projected is *lost in extraction*: it is
   counted in ``pii.lost_in_extraction`` and left out of the recall denominators (a detector cannot find what the
   parser dropped), never counted as a detector miss.
4. **Matching** (`ingestaudit.metrics.spans`) under ``exact``, ``overlap@t`` and ``token``, all in one run.

Rows (``label`` joins two axes with "/"): for every policy P (``exact``, ``overlap@0.5``, ``token``):

- ``P/<TYPE>``: one entity type (detector vocabulary, after the label map);
- ``P``: all types, typed matching, counts summed over types (micro over types);
- ``P/*``: type-agnostic, "caught at all, whatever its type" (unmapped gold types included);
- ``P/macro`` (corpus level only, per class and overall): mean over entity types of the per-type corpus rate.

The all-types recall row's detail lists the missed spans, the extraction losses, the unmapped and excluded
types, and ``gold_failing_luhn``: CREDIT_CARD labels whose digits fail the Luhn check (ISO/IEC 7812-1), which a
validating detector such as Presidio rightly skips. Each precision/recall/F row keeps its counts: precision tp / (tp + fp), recall tp / (tp + fn), F-beta
(1+β²)tp / ((1+β²)tp + β²fn + fp), so the summary's micro (Σ numerator / Σ denominator over documents) is the
corpus rate. ``pii.lost_in_extraction``, ``pii.residual_leakage`` and ``pii.fp_per_1k_tokens`` are labelled by
type, ``*`` for all types together.

**Types nobody labelled** (truth ``pii_types``, DESIGN.md): a truth file may list the entity types it labels
exhaustively. A prediction of another type (detector vocabulary: a declared type counts under its label-map target)
can be neither right nor wrong against these labels: it is set apart, left out of every precision, recall, F and
``fp_per_1k_tokens`` row, and counted in ``pii.unlabelled_type_predictions`` (label = its type, ``*`` all: set-apart
predictions / predictions of the audited types). A document without ``pii_types`` keeps the behaviour of earlier
versions, named by the option ``without_pii_types`` (printed with the options): ``"judge_all"`` (default) judges
every predicted type, so a DATE_TIME the corpus never labels is a false positive; ``"corpus_types"`` takes the types
of the corpus's gold spans as labelled exhaustively.

Corpus rows (``P/macro``) count the scored documents; the labelled documents left out (no parser output, a scrubber
error, over ``max_chars``) are in the rows' state counts (`CorpusResult.unreached`).

**Negative documents** (option ``negative_documents``): ``"labelled_empty"`` (default) counts a document as
holding no PII when its truth JSON has ``"pii": []`` (needs the truth loader to record that the key is present,
attribute ``Truth.pii_labelled``); ``"no_spans"`` counts every document with a reference text and no ``pii`` span
(for corpora labelled exhaustively, such as presidio-synth).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ingestaudit.auditors.base import ArtefactItem, Auditor, CorpusResult, ItemArtefacts, Scope
from ingestaudit.auditors.rates import score_from_rate
from ingestaudit.auditors.reach import count_states, parse_state, unreached_rows
from ingestaudit.detections import PII_STEP_DEFAULTS, REDACTED_FIELDS, PiiDetection, check_pii_options, parse_entities
from ingestaudit.measurement import Score, State
from ingestaudit.metrics.alignment import DEFAULT_MIN_KEPT, ProjectedSpan, align_chars, project_spans
from ingestaudit.metrics.leakage import (DEFAULT_NORMALIZATION, NORMALIZATIONS, gold_values, negative_false_positives,
                                         residual_leakage)
from ingestaudit.metrics.luhn import luhn_check
from ingestaudit.metrics.spans import (ANY_TYPE, RATE_NAMES, MatchPolicy, Span, SpanScores, map_span_types, match_spans,
                                       redact, score_spans)
from ingestaudit.metrics.specs import MetricSpec, register
from ingestaudit.truth import Truth

_LABELS = ("label '<policy>/<TYPE>' per entity type (detector vocabulary after the label map), '<policy>' all "
           "types with typed matching (counts summed over types), '<policy>/*' type-agnostic ('caught at all, "
           "whatever its type', unmapped gold types included), '<policy>/macro' (corpus level) mean over types of "
           "the per-type corpus rate; policy 'exact' (same start, end, type), 'overlap@t' (IoU >= t, one-to-one "
           "assignment), 'token' (whitespace tokens); gold spans lost in extraction are left out")

METRICS = (
    MetricSpec("pii.precision", "tp / (tp + fp) of the scrubber's spans against the gold pii spans projected onto "
               "the extracted text (ingestaudit.metrics.spans); " + _LABELS,
               higher_is_better=True, ci="wilson", unit="spans (tokens under 'token')"),
    MetricSpec("pii.recall", "tp / (tp + fn) of the gold pii spans projected onto the extracted text; " + _LABELS,
               higher_is_better=True, ci="wilson", unit="spans (tokens under 'token')"),
    MetricSpec("pii.f1", "F1 = 2tp / (2tp + fn + fp) (van Rijsbergen 1979); " + _LABELS,
               higher_is_better=True, unit="spans (tokens under 'token')"),
    MetricSpec("pii.f2", "F2 = 5tp / (5tp + 4fn + fp), recall-weighted (van Rijsbergen 1979, beta = 2); " + _LABELS,
               higher_is_better=True, unit="spans (tokens under 'token')"),
    MetricSpec("pii.lost_in_extraction", "gold pii spans that cannot be projected from the reference text onto the "
               "extracted text (fewer than min_kept of their characters survive the character alignment) / gold "
               "spans; label = entity type (after the label map), '*' all types; counted apart from detector misses",
               higher_is_better=False, ci="wilson", unit="spans"),
    MetricSpec("pii.residual_leakage", "distinct gold pii values (reference text, normalized) still found in the "
               "scrubbed text, i.e. what would be indexed / distinct gold values "
               "(ingestaudit.metrics.leakage); label = entity type, '*' all types",
               higher_is_better=False, ci="wilson", unit="values"),
    MetricSpec("pii.fp_per_1k_tokens", "predicted spans on negative documents (labelled as holding no PII) per "
               "1,000 whitespace tokens of the scrubber input: numerator = predicted spans, denominator = tokens / "
               "1000; label = predicted entity type, '*' all types", higher_is_better=False, high=None,
               unit="false positives per 1,000 tokens"),
    MetricSpec("pii.unlabelled_type_predictions", "predicted spans of entity types the document's truth does not "
               "label (not in its pii_types, after the label map) / predicted spans of the audited types; such "
               "predictions are set apart, neither true nor false positives (no_reference for a document without "
               "pii_types: every predicted type is then judged, see the option without_pii_types); label = "
               "predicted entity type, '*' all types", higher_is_better=False, ci="wilson", unit="spans"),
)
register(*METRICS)

METRIC_NAMES = tuple(s.name for s in METRICS)
NEGATIVE_MODES = ("labelled_empty", "no_spans")
WITHOUT_PII_TYPES = ("judge_all", "corpus_types")
"""What a document without ``pii_types`` declares labelled: ``judge_all`` every type (a prediction of a type the
corpus never labels is a false positive), ``corpus_types`` the types of the gold spans of the whole corpus."""
RESERVED_TYPES = (ANY_TYPE, "macro")
"""Entity-type names that would collide with the label scheme; gold spans of these types are set aside."""
MAX_LISTED = 20
"""At most this many missed spans, false positives or lost spans are listed in one detail."""
UNLABELLED_NOTE = {
    "judge_all": "a document's truth pii_types lists the types labelled exhaustively: predictions of other types are "
                 "set apart (pii.unlabelled_type_predictions), not false positives; a document without pii_types: "
                 "every predicted type is judged (a prediction of a type the corpus never labels is a false "
                 "positive)",
    "corpus_types": "a document's truth pii_types lists the types labelled exhaustively: predictions of other types "
                    "are set apart (pii.unlabelled_type_predictions), not false positives; a document without "
                    "pii_types: the types of the corpus's gold spans are taken as labelled exhaustively",
}
"""The ``unlabelled_types`` entry of `PiiAuditor.options`: how predictions of unlabelled types are counted."""
MAX_OVERLAPS_LISTED = 5
"""At most this many overlapping gold spans are listed by `validate_pii_gold`; the rest are counted."""


# ----------------------------------------------------------------------------------------------- validation


@dataclass(frozen=True)
class PiiGoldProblem:
    """One problem of a document's gold ``pii`` spans.

    Attributes:
        index: position of the span in the ``pii`` list.
        kind: ``"offsets"`` (outside the text or empty), ``"overlap"`` (shares characters with span ``other``),
            ``"overlap_count"`` (how many spans overlap, when more than are listed), ``"luhn"`` (a credit-card label
            that fails the Luhn check), ``"reserved_type"``.
        severity: ``"error"`` (the label cannot be used) or ``"warning"`` (usable, but a detector may rightly
            disagree: overlapping labels, card numbers that fail Luhn).
        message: human-readable, names the span.
        other: the other span's index for ``"overlap"``, else None.
    """

    index: int
    kind: str
    severity: str
    message: str
    other: int | None = None

    def __str__(self) -> str:
        return f"pii[{self.index}]: {self.severity}: {self.message}"


def validate_pii_gold(text: str, spans: Sequence[Any],
                      credit_card_types: Iterable[str] = ("CREDIT_CARD",)) -> list[PiiGoldProblem]:
    """Check gold PII spans against their reference text (pure function, no I/O).

    Checks, in span order: offsets inside the text (``0 <= start < end <= len(text)``, code points); reserved type
    names (`RESERVED_TYPES`); spans sharing a character with another (``max(starts) < min(ends)``); ``credit_card_types``
    labels whose text fails the Luhn check (ISO/IEC 7812-1 Annex B, `ingestaudit.metrics.luhn`: spaces and hyphens
    ignored), since a detector that validates card numbers is right to skip them.

    Overlaps: the spans are sorted once by ``(start, end, index)`` and swept; a span that starts before the furthest
    end seen so far overlaps that furthest-reaching span (``other``). Each such span is counted once (O(n log n), so
    100,000 identical spans cost one sort, not 5 x 10^9 pairs); the first `MAX_OVERLAPS_LISTED` by index are listed
    as ``overlap`` problems, and when there are more, one ``overlap_count`` problem (on the first one not listed)
    gives the total.

    Args:
        text: the reference text.
        spans: objects with ``start``, ``end``, ``type`` (truth ``Span``) or mappings with those keys.

    Returns:
        The problems, sorted by span index then kind; empty when the labels are clean.
    """
    cards = set(credit_card_types)
    problems: list[PiiGoldProblem] = []
    valid: list[tuple[int, int, int]] = []
    for i, s in enumerate(spans):
        start, end, typ = (s["start"], s["end"], s["type"]) if isinstance(s, dict) else (s.start, s.end, s.type)
        desc = f"[{start}, {end}) {typ}"
        if not (0 <= start < end <= len(text)):
            why = "is empty" if start == end else f"is outside the text ({len(text)} code points)"
            problems.append(PiiGoldProblem(i, "offsets", "error", f"span {desc} {why}"))
            continue
        if typ in RESERVED_TYPES:
            problems.append(PiiGoldProblem(i, "reserved_type", "error",
                                           f"span {desc}: type {typ!r} is reserved by the report's label scheme"))
        valid.append((start, end, i))
        if typ in cards:
            res = luhn_check(text[start:end])
            if not res.valid:
                shown = text[start:end] if end - start <= 40 else text[start:start + 40] + "…"
                problems.append(PiiGoldProblem(i, "luhn", "warning", f"span {desc} {shown!r} fails the "
                                               f"Luhn check ({res.reason}); a detector is right to skip it"))
    overlapping: list[tuple[int, int]] = []  # (span, the furthest-reaching span sorted before it)
    reach, far = -1, -1
    for start, end, i in sorted(valid):
        if start < reach:
            overlapping.append((i, far))
        if end > reach:
            reach, far = end, i
    overlapping.sort()
    for i, j in overlapping[:MAX_OVERLAPS_LISTED]:
        problems.append(PiiGoldProblem(i, "overlap", "warning", f"span pii[{i}] overlaps span pii[{j}]", other=j))
    if len(overlapping) > MAX_OVERLAPS_LISTED:
        problems.append(PiiGoldProblem(overlapping[MAX_OVERLAPS_LISTED][0], "overlap_count", "warning",
                                       f"{len(overlapping)} spans overlap a span that starts before them; the first "
                                       f"{MAX_OVERLAPS_LISTED} are listed"))
    return sorted(problems, key=lambda p: (p.index, p.kind, p.other if p.other is not None else -1))


# ------------------------------------------------------------------------------------------------ the options


def parse_label_map(value: dict[str, str | None] | str | None) -> dict[str, str | None]:
    """The label map as a dict: a mapping is copied; a string ``"A=X, B=Y, C="`` (pairs separated by commas or
    white space; an empty target maps to None, i.e. excluded on purpose) is parsed; None gives ``{}``.

    The string form exists because list- and table-valued auditor options cannot yet pass through the runner's
    auditor cache (see the report of issue 5).

    Raises:
        ValueError: a pair without ``=``, an empty source type, or a source given twice.
    """
    if value is None:
        return {}
    if not isinstance(value, str):
        return dict(value)
    out: dict[str, str | None] = {}
    for pair in value.replace(",", " ").split():
        src, sep, dst = pair.partition("=")
        if not sep or not src:
            raise ValueError(f"label_map entry {pair!r} is not SOURCE=TARGET")
        if src in out:
            raise ValueError(f"label_map gives {src!r} twice")
        out[src] = dst or None
    return out


# ------------------------------------------------------------------------------------------------ the auditor


@dataclass
class _Doc:
    """One document in the pipeline of `PiiAuditor.audit_corpus`."""

    item: ItemArtefacts
    source: str = ""
    input_text: str = ""
    scrubbed: str | None = None
    predicted: list[Span] | None = None
    rows: list[Score] = field(default_factory=list)
    typed: dict[str, SpanScores] = field(default_factory=dict)
    confusion: Counter = field(default_factory=Counter)
    lost: list[dict[str, Any]] = field(default_factory=list)
    unmapped: Counter = field(default_factory=Counter)
    ignored_predicted: Counter = field(default_factory=Counter)
    labelled_types: tuple[str, ...] | None = None  # detector types labelled exhaustively (None: every type judged)
    unlabelled: Counter = field(default_factory=Counter)  # predictions of other types, set apart, by type
    n_audited: int = 0  # predictions of the audited types (``entities``), judged or set apart
    neg: Any = None  # `negative_false_positives` of a negative document (its fp_per_1k_tokens rows need the vocabulary)


@dataclass(frozen=True)
class PiiArtefact:
    """What the PII auditor keeps of one document x pipeline (computed in the run's worker, `PiiAuditor.artefact`):
    its rows so far and the counts the corpus-level rows and details need, never its texts, except in ``redo``.

    Attributes:
        applies: the document has PII labels (`PiiAuditor.applies`).
        rows: the document's rows without its ``fp_per_1k_tokens`` and ``unlabelled_type_predictions`` rows (which
            depend on every document's predictions), or its rows in a non-ok state.
        predicted: the scrubber's predictions are known (the document counts in the details and the vocabulary).
        scored: they were scored without an error (``doc.typed`` holds the counts).
        used_detector: the configured detector produced this document's predictions.
        target: the detector vocabulary the document was scored with (`PiiAuditor._target`).
        detector_types, detector_error: the configured detector's declared vocabulary, when this document loaded it.
        predicted_types: the types of the predictions of the audited ``entities``.
        doc: the `_Doc` of the scoring (counts, confusion, losses; ``item`` without the parsed document).
        gold_types, has_pii_types: the truth's span types and whether it declares ``pii_types`` (details).
        detector_info: ``{"name", "version", "settings"}`` of the detector that ran, for the details.
        redo: for a document scored before the corpus's vocabulary is known (its predictions were precomputed while
            the scrubber is a detector), what re-scoring needs: ``(truth, input_text, predicted, scrubbed, source)``.
        scrubber: the pipeline's ``pii`` step's scrubber (``""``: the step did not run).
    """

    applies: bool
    rows: tuple[Score, ...] = ()
    predicted: bool = False
    scored: bool = False
    used_detector: bool = False
    target: tuple[str, ...] | None = None
    detector_types: tuple[str, ...] | None = None
    detector_error: str = ""
    predicted_types: tuple[str, ...] = ()
    doc: Any = None
    gold_types: tuple[str, ...] = ()
    has_pii_types: bool = False
    detector_info: dict[str, Any] | None = None
    redo: tuple | None = None
    scrubber: str = ""


def _span_dict(s: Span, text: str) -> dict[str, Any]:
    return {"start": s.start, "end": s.end, "type": s.type, "text": text[s.start:s.end]}


class PiiAuditor(Auditor):
    """Audits a PII scrubber against gold ``pii`` spans (see the module docstring for every row).

    A corpus-level auditor that loads no detector: it reads what each pipeline's ``pii`` step predicted
    (`ingestaudit.detections.PiiDetection`, `ingestaudit.stages.pii_step`), so two pipelines with two scrubbers or two
    thresholds are two report columns of one run, and macro averages over entity types exist. The options marked
    *step default* configure the scrubber: they are the default options of every pipeline's ``pii`` step
    (``scrubber`` is the step's ``use``); a pipeline's own ``pii`` table overrides them option by option
    (`ingestaudit.steps`). The others are the metric's.

    Args:
        scrubber: step default: ``"presidio"``, ``"precomputed"``, ``"redacted"``, a name in the ``ingestaudit.pii_detectors``
            entry-point group, or ``"module:Class"``.
        detector_options: step default: keyword options of a user detector.
        spacy_model, spacy_model_version, language, score_threshold, labels_to_ignore, batch_size: step defaults:
            Presidio's options (`ingestaudit.stages.pii.PresidioDetector`).
        entities: predicted entity types to audit (None: all); predictions of other types are set aside and
            counted in the details; also a step default, passed to Presidio as ``entities``; also accepted as a
            comma-separated string.
        label_map: gold type -> detector type (or None to exclude the type on purpose); also accepted as a string
            ``"GPE=LOCATION, STREET_ADDRESS=LOCATION, TITLE="`` (`parse_label_map`).
        iou_threshold: the ``overlap`` policy's IoU threshold, in (0, 1].
        min_kept: minimum fraction of a gold span's characters that must survive extraction for it to project.
        prefer_precomputed: step default: audit the ``pii`` spans an output carries instead of running the scrubber.
        redacted_field: step default: for ``scrubber="redacted"``: ``"clean_text"`` (the output's ``clean_text`` is the redacted
            version of its ``text``) or ``"text"`` (the output's text is the redacted reference text; extraction
            losses then count as redactions).
        placeholder: how a removed span is written in the scrubbed text (``"<{type}>"``).
        placeholder_pattern: step default: regex of a placeholder in a redacted text, type in group 1.
        leakage_normalization, leakage_whole_word: residual-leakage settings (`ingestaudit.metrics.leakage`).
        negative_documents: ``"labelled_empty"`` or ``"no_spans"`` (module docstring).
        without_pii_types: ``"judge_all"`` or ``"corpus_types"``: what a document without ``pii_types`` declares
            labelled (`WITHOUT_PII_TYPES`, module docstring).
        max_chars: step default: longer scrubber inputs are ``skipped`` (spaCy's default ``max_length`` is 1,000,000).

    Raises:
        ValueError: an unknown choice or an out-of-range number.
    """

    stage = "pii"
    scope = Scope.CORPUS
    reads = frozenset({"pii"})
    metrics = METRICS

    def __init__(self, scrubber: str = "presidio", detector_options: dict[str, Any] | None = None,
                 spacy_model: str = "en_core_web_sm", spacy_model_version: str | None = "3.8.0",
                 language: str = "en", score_threshold: float = 0.0, labels_to_ignore: list[str] | None = None,
                 batch_size: int = 32, entities: list[str] | str | None = None,
                 label_map: dict[str, str | None] | str | None = None, iou_threshold: float = 0.5,
                 min_kept: float = DEFAULT_MIN_KEPT, prefer_precomputed: bool = True,
                 redacted_field: str = "clean_text", placeholder: str = "<{type}>",
                 placeholder_pattern: str = r"<([A-Z][A-Z0-9_]*)>",
                 leakage_normalization: str = DEFAULT_NORMALIZATION, leakage_whole_word: bool = True,
                 negative_documents: str = "labelled_empty", max_chars: int = 1_000_000,
                 without_pii_types: str = "judge_all"):
        self.policies = (MatchPolicy("exact"), MatchPolicy("overlap", iou_threshold), MatchPolicy("token"))
        if not 0.0 < float(min_kept) <= 1.0:
            raise ValueError(f"min_kept must be in (0, 1], got {min_kept!r}")
        if redacted_field not in REDACTED_FIELDS:
            raise ValueError(f"redacted_field must be one of {', '.join(REDACTED_FIELDS)}, got {redacted_field!r}")
        if without_pii_types not in WITHOUT_PII_TYPES:
            raise ValueError(f"without_pii_types must be one of {', '.join(WITHOUT_PII_TYPES)}, "
                             f"got {without_pii_types!r}")
        if negative_documents not in NEGATIVE_MODES:
            raise ValueError(f"negative_documents must be one of {', '.join(NEGATIVE_MODES)}, "
                             f"got {negative_documents!r}")
        if leakage_normalization not in NORMALIZATIONS:
            raise ValueError(f"unknown leakage_normalization {leakage_normalization!r}; known: "
                             f"{', '.join(NORMALIZATIONS)}")
        if leakage_whole_word and leakage_normalization == "alnum":
            raise ValueError("leakage_whole_word has no meaning with the 'alnum' normalization; set it to false")
        if "{type}" not in placeholder:
            raise ValueError(f"placeholder must contain '{{type}}', got {placeholder!r}")
        if int(max_chars) < 1:
            raise ValueError(f"max_chars must be >= 1, got {max_chars!r}")
        label_map = parse_label_map(label_map)
        entities = parse_entities(entities)
        for src, dst in label_map.items():
            if dst is not None and (not isinstance(dst, str) or not dst):
                raise ValueError(f"label_map[{src!r}] must be a type name or null, got {dst!r}")
        self.step_defaults = check_pii_options({
            "scrubber": scrubber, "detector_options": detector_options, "spacy_model": spacy_model,
            "spacy_model_version": spacy_model_version, "language": language, "score_threshold": score_threshold,
            "labels_to_ignore": labels_to_ignore, "batch_size": batch_size, "entities": entities,
            "prefer_precomputed": prefer_precomputed, "redacted_field": redacted_field,
            "placeholder_pattern": placeholder_pattern, "max_chars": max_chars})
        self.scrubber = scrubber
        self.detector_options = dict(detector_options or {})
        self.presidio_options = {"spacy_model": spacy_model, "spacy_model_version": spacy_model_version,
                                 "language": language, "score_threshold": score_threshold,
                                 "labels_to_ignore": labels_to_ignore, "batch_size": batch_size,
                                 "entities": entities}
        self.entities = None if entities is None else sorted(set(entities))
        self.label_map = dict(sorted(label_map.items()))
        self.min_kept = float(min_kept)
        self.prefer_precomputed = bool(prefer_precomputed)
        self.redacted_field = redacted_field
        self.placeholder = placeholder
        self.placeholder_pattern = placeholder_pattern
        self.leakage_normalization = leakage_normalization
        self.leakage_whole_word = bool(leakage_whole_word)
        self.negative_documents = negative_documents
        self.without_pii_types = without_pii_types
        self.max_chars = int(max_chars)

    def step_options(self) -> dict[str, Any]:
        """The default options of the pipelines' ``pii`` step (those a pipeline's own table does not set)."""
        return {k: v for k, v in self.step_defaults.items() if v != PII_STEP_DEFAULTS[k]}

    # -- configuration -------------------------------------------------------------------------------------------

    def options(self) -> dict[str, Any]:
        """Every option that changes the numbers, with the policies' labels and, for Presidio, the spaCy model name,
        configured and installed versions (read from package metadata; nothing is loaded)."""
        from ingestaudit.plugins import package_version

        out: dict[str, Any] = {
            "scrubber": self.scrubber,
            "policies": [p.label for p in self.policies],
            "policy_descriptions": {p.label: p.description for p in self.policies},
            "label_map": self.label_map,
            "entities": self.entities,
            "min_kept": self.min_kept,
            "projection": "rapidfuzz Levenshtein alignment of reference text -> extracted text "
                          "(ingestaudit.metrics.alignment)",
            "prefer_precomputed": self.prefer_precomputed,
            "placeholder": self.placeholder,
            "leakage": {"normalization": self.leakage_normalization, "whole_word": self.leakage_whole_word},
            "negative_documents": self.negative_documents,
            "max_chars": self.max_chars,
            "without_pii_types": self.without_pii_types,
            "unlabelled_types": UNLABELLED_NOTE[self.without_pii_types],
        }
        if self.scrubber == "presidio":
            p = self.presidio_options
            out["presidio"] = {
                **p, "spacy_model_installed": package_version(p["spacy_model"]),
                "presidio_analyzer": package_version("presidio_analyzer"), "spacy": package_version("spacy"),
                "labels_to_ignore": p["labels_to_ignore"] if p["labels_to_ignore"] is not None
                else "presidio default (conf/default.yaml)",
                "public_suffix_list": f"tldextract {package_version('tldextract')} bundled snapshot (offline)"}
        elif self.scrubber == "redacted":
            out["redacted_field"] = self.redacted_field
            out["placeholder_pattern"] = self.placeholder_pattern
        elif self.scrubber != "precomputed":
            out["detector_options"] = self.detector_options
        return out

    def declared_types(self, truth: Truth, corpus_types: Sequence[str] = ()) -> tuple[str, ...] | None:
        """The gold types ``truth`` labels exhaustively: its ``pii_types``; else, with ``without_pii_types =
        "corpus_types"``, ``corpus_types``; else None (every predicted type is judged)."""
        if truth.pii_types is not None:
            return tuple(truth.pii_types)
        return tuple(corpus_types) if self.without_pii_types == "corpus_types" else None

    def is_negative(self, truth: Truth) -> bool:
        """True when ``truth`` declares a document without PII (see ``negative_documents``)."""
        if truth.pii or truth.text is None:
            return False
        if self.negative_documents == "no_spans":
            return True
        return bool(getattr(truth, "pii_labelled", False))

    def applies(self, truth: Truth) -> bool:
        """True when the document has a reference text and ``pii`` spans, or is a negative document."""
        return truth.text is not None and (bool(truth.pii) or self.is_negative(truth))

    # -- one document ------------------------------------------------------------------------------------------

    def _state_rows(self, state: State, reason: str) -> list[Score]:
        return [Score.missing(m, state, reason) for m in METRIC_NAMES]

    def _score(self, d: _Doc, target: tuple[str, ...] | None, vocab: list[str],
               corpus_types: tuple[str, ...] = ()) -> None:
        """All rows of one document whose predictions are known (``corpus_types``: the gold types of the corpus,
        used by ``without_pii_types="corpus_types"``)."""
        truth, text = d.item.truth, d.input_text
        reference = truth.text or ""
        gold_all: list[Span] = []
        invalid: list[dict[str, Any]] = []
        for s in truth.pii:
            if s.end <= s.start or s.end > len(reference) or s.type in RESERVED_TYPES:
                invalid.append({"start": s.start, "end": s.end, "type": s.type})
            else:
                gold_all.append(Span(s.start, s.end, s.type))
        mapping = {k: v for k, v in self.label_map.items() if v is None or target is None or v in target}
        lm = map_span_types(gold_all, mapping, target_types=target)
        d.unmapped = Counter(s.type for s in lm.unmapped_spans)

        # projection onto the scrubber input
        both = list(lm.spans) + list(lm.unmapped_spans)
        if text == reference:
            projected = [ProjectedSpan(s, s, s.length, "projected") for s in both]
        else:
            projected = list(project_spans(reference, text, both, min_kept=self.min_kept,
                                           alignment=align_chars(reference, text)))
        n_typed = len(lm.spans)
        typed_gold = [p.target for p in projected[:n_typed] if p.target is not None]
        any_gold = [p.target for p in projected if p.target is not None]
        lost = [p for p in projected if p.target is None]
        d.lost = [{"start": p.source.start, "end": p.source.end, "type": p.source.type,
                   "text": reference[p.source.start:p.source.end], "reason": p.reason} for p in lost]

        # predictions
        predicted = d.predicted or []
        if self.entities is not None:
            d.ignored_predicted = Counter(s.type for s in predicted if s.type not in self.entities)
            audited = [s for s in predicted if s.type in self.entities]
        else:
            audited = list(predicted)
        d.n_audited = len(audited)
        declared = self.declared_types(truth, corpus_types)
        if declared is not None:  # types nobody labelled here are set apart: neither true nor false positives
            d.labelled_types = tuple(sorted({mapping.get(t, t) for t in declared} - {None}))  # type: ignore[misc]
            d.unlabelled = Counter(s.type for s in audited if s.type not in d.labelled_types)
            audited = [s for s in audited if s.type in d.labelled_types]

        luhn_failures = sum(1 for s in gold_all if s.type == "CREDIT_CARD"
                            and not luhn_check(reference[s.start:s.end]).valid)
        base = {"scrubber": d.source}
        rows: list[Score] = []
        for pol in self.policies:
            typed = score_spans(typed_gold, audited, pol, text=text)
            agnostic = typed.any_type if len(any_gold) == len(typed_gold) else \
                score_spans(any_gold, audited, pol, text=text).any_type
            d.typed[pol.label] = typed
            detail = {"policy": pol.label, "unit": typed.unit}
            overall = typed.micro
            extra_p: dict[str, Any] = {}
            extra_r: dict[str, Any] = {
                "lost_in_extraction": len(lost), "unmapped": dict(sorted(d.unmapped.items())),
                "excluded_types": list(lm.excluded_types), "invalid_gold": invalid[:MAX_LISTED],
                "gold_failing_luhn": luhn_failures}
            if pol.name != "token":
                m = match_spans(typed_gold, audited, pol)
                missed = [typed_gold[i] for i in m.unmatched_gold]
                fps = [audited[j] for j in m.unmatched_pred]
                extra_r["missed"] = [_span_dict(s, text) for s in missed[:MAX_LISTED]]
                extra_r["missed_total"] = len(missed)
                extra_p["false_positives"] = [_span_dict(s, text) for s in fps[:MAX_LISTED]]
                extra_p["false_positives_total"] = len(fps)
                extra_p["unlabelled_type_predictions"] = sum(d.unlabelled.values())
                extra_p["labelled_types"] = None if d.labelled_types is None else list(d.labelled_types)
                if pol.name == "overlap":
                    ma = match_spans(any_gold, audited, pol, type_agnostic=True)
                    d.confusion = Counter((any_gold[i].type, audited[j].type) for i, j, _ in ma.pairs)
            for name in RATE_NAMES:
                extra = extra_p if name == "precision" else extra_r if name == "recall" else {}
                c = overall
                rows.append(score_from_rate(f"pii.{name}", c.rate(name), label=pol.label,
                                            detail={**base, **detail, "tp": c.tp, "fp": c.fp, "fn": c.fn, **extra}))
                rows.append(score_from_rate(f"pii.{name}", agnostic.rate(name), label=f"{pol.label}/{ANY_TYPE}",
                                            detail={"tp": agnostic.tp, "fp": agnostic.fp, "fn": agnostic.fn}))
                for typ, c in typed.per_type.items():
                    rows.append(score_from_rate(f"pii.{name}", c.rate(name), label=f"{pol.label}/{typ}",
                                                detail={"tp": c.tp, "fp": c.fp, "fn": c.fn}))

        # lost in extraction, per type and overall
        n_by_type = Counter(p.source.type for p in projected)
        lost_by_type = Counter(p.source.type for p in lost)
        rows.append(Score.ratio("pii.lost_in_extraction", len(lost), len(projected), label=ANY_TYPE, detail={
            "min_kept": self.min_kept, "identity": text == reference, "lost": d.lost[:MAX_LISTED],
            "lost_total": len(lost)}))
        for typ in sorted(n_by_type):
            rows.append(Score.ratio("pii.lost_in_extraction", lost_by_type[typ], n_by_type[typ], label=typ))

        # residual leakage in what would be indexed
        if d.scrubbed is None:  # every predicted span is redacted, whatever its type: this is what gets indexed
            d.scrubbed = redact(text, predicted, self.placeholder)
        leak = residual_leakage(d.scrubbed, gold_values(reference, both), normalization=self.leakage_normalization,
                                whole_word=self.leakage_whole_word)
        total = leak.total
        leak_detail = {"normalization": leak.normalization, "whole_word": leak.whole_word}
        rows.append(score_from_rate("pii.residual_leakage", total.rate(), label=ANY_TYPE, detail={
            **leak_detail, "leaked": [{"type": t, "value": v} for t, v in leak.leaked[:MAX_LISTED]],
            "leaked_total": len(leak.leaked), "unchecked": len(leak.unchecked)}))
        for typ, c in leak.per_type.items():
            rows.append(score_from_rate("pii.residual_leakage", c.rate(), label=typ, detail=leak_detail))

        # false positives on negative documents: rows by `_fp_rows`, once the corpus's vocabulary is known
        d.neg = negative_false_positives(text, audited) if self.is_negative(truth) else None
        d.rows = rows

    def _fp_rows(self, d: _Doc, vocab: Sequence[str]) -> list[Score]:
        """``pii.fp_per_1k_tokens`` of one scored document: per type of ``vocab`` and each type it falsely
        predicted, and ``*``, on a negative document; one ``no_reference`` row otherwise."""
        neg = d.neg
        if neg is None:
            return [Score.missing("pii.fp_per_1k_tokens", State.NO_REFERENCE,
                                  "not a negative document (it has gold pii spans)", label=ANY_TYPE)]
        rows = []
        for typ in [ANY_TYPE, *sorted(set(vocab) | set(neg.false_positives))]:
            fp = sum(neg.false_positives.values()) if typ == ANY_TYPE else neg.false_positives.get(typ, 0)
            if neg.n_tokens == 0:
                rows.append(Score("pii.fp_per_1k_tokens", None, fp, 0, State.NO_REFERENCE, typ,
                                  {"reason": "no tokens in the scrubber input", "false_positives": fp}))
            else:
                den = neg.n_tokens / 1000.0
                rows.append(Score("pii.fp_per_1k_tokens", fp / den, fp, den, State.OK, typ,
                                  {"false_positives": fp, "tokens": neg.n_tokens}))
        return rows

    # -- the corpus --------------------------------------------------------------------------------------------

    def corpus_values(self, truth: Truth) -> tuple[str, ...]:
        """The gold span types of a labelled document (``without_pii_types = "corpus_types"`` reads them)."""
        return tuple(sorted({s.type for s in truth.pii})) if self.applies(truth) else ()

    def _target(self, used_detector: bool, declared: tuple[str, ...] | None) -> tuple[str, ...] | None:
        """Detector types the label map may target: the detector's declared vocabulary (when some scored document
        used the detector) restricted to ``entities``; else ``entities``; else None (every gold type passes)."""
        types: set[str] | None = set(declared) if used_detector and declared is not None else None
        if self.entities is not None:
            types = set(self.entities) if types is None else types & set(self.entities)
        return None if types is None else tuple(sorted(types))

    def artefact(self, item: ItemArtefacts, context: tuple[str, ...]) -> PiiArtefact:
        """Score one labelled document's predictions (what the pipeline's ``pii`` step produced, ``detection``;
        absent: the step did not run) against its gold spans, under the vocabulary the corpus will have if this
        document's own scrubber decides it (`PiiArtefact.redo` keeps what re-scoring needs otherwise).
        ``context``: the corpus's gold types."""
        truth = item.truth
        detection: PiiDetection | None = item.steps.get("pii")
        if not self.applies(truth):
            return PiiArtefact(False)
        if detection is None or not detection.ran:
            return PiiArtefact(True, scrubber=detection.scrubber if detection is not None else "")
        d = _Doc(ItemArtefacts("", "", truth, None), detection.source, detection.input_text, detection.scrubbed,
                 None if detection.predicted is None else list(detection.predicted))
        if detection.state:
            d.rows = self._state_rows(State(detection.state), detection.reason)
        info = detection.detector_info
        gold_types = tuple(sorted({s.type for s in truth.pii}))
        common = {"gold_types": gold_types, "has_pii_types": truth.pii_types is not None, "detector_info": info,
                  "scrubber": detection.scrubber}
        if d.rows or d.predicted is None:
            return PiiArtefact(True, tuple(d.rows), **common)
        used = detection.used_detector
        declared, why = (detection.detector_types, detection.detector_error) if used else (None, "")
        target = None if used and why else self._target(used, declared)  # a failed vocabulary: no target
        redo = None
        if not used and detection.scrubber not in ("precomputed", "redacted"):  # another document may run it
            redo = (truth, d.input_text, list(d.predicted), d.scrubbed, d.source)
        predicted_types = tuple(sorted({s.type for s in d.predicted if self.entities is None
                                        or s.type in self.entities}))
        ok = True
        try:
            self._score(d, target, [], context)
        except Exception as exc:
            d.rows, d.typed, ok = self._state_rows(State.ERROR, f"{type(exc).__name__}: {exc}"), {}, False
        d.item = ItemArtefacts("", "", Truth(pii=truth.pii, pii_types=truth.pii_types), None)  # no texts from here on
        d.input_text, d.scrubbed, d.predicted = "", None, []
        return PiiArtefact(True, tuple(d.rows), True, ok, used, target, declared, why, predicted_types, d,
                           redo=redo, **common)

    def audit_artefacts(self, items: list[ArtefactItem], context: tuple[str, ...] = ()) -> CorpusResult:
        """Rows for every document of one pipeline from its artefacts, macro averages over types per class, and
        details (label map, unmapped types, type confusion, scrubber per document, extraction losses). Never raises
        for bad stage output; a missing detector gives ``error`` rows whose reason names the fix."""
        from dataclasses import replace as _replace

        result = CorpusResult()
        rows_of: dict[int, list[Score]] = {}
        known: list[int] = []  # documents whose predictions are known, corpus order
        for k, it in enumerate(items):
            a = it.artefact
            if not a.applies:
                rows_of[k] = self._state_rows(State.NO_REFERENCE, "no pii labels for this document")
            elif it.state is not State.OK:
                rows_of[k] = self._state_rows(parse_state(it), it.reason or "the parser produced nothing")
            else:
                rows_of[k] = list(a.rows)
                if a.predicted:
                    known.append(k)
        used = any(items[k].artefact.used_detector for k in known)
        declared = next((items[k].artefact.detector_types for k in known if items[k].artefact.used_detector), None)
        why = next((items[k].artefact.detector_error for k in known if items[k].artefact.detector_error), "")
        if why:  # the detector failed to report its vocabulary: audit without a target
            target = None
            result.details["vocabulary_error"] = why
        else:
            target = self._target(used, declared)
        docs: dict[int, _Doc] = {}
        for k in known:
            it, a = items[k], items[k].artefact
            d = _replace(a.doc, item=ItemArtefacts(it.doc_id, it.doc_class, a.doc.item.truth, None))
            if a.target != target and a.redo is not None:  # scored under another vocabulary: once more
                truth, text, predicted, scrubbed, source = a.redo
                d = _Doc(ItemArtefacts(it.doc_id, it.doc_class, truth, None), source, text, scrubbed, predicted)
                try:
                    self._score(d, target, [], context)
                except Exception as exc:
                    d.rows, d.typed = self._state_rows(State.ERROR, f"{type(exc).__name__}: {exc}"), {}
                rows_of[k] = list(d.rows)
            docs[k] = d
        vocab = sorted(set(target or ()) | {t for k in known for t in items[k].artefact.predicted_types})
        set_apart = sorted({t for d in docs.values() if d.typed for t in d.unlabelled})
        for k, d in docs.items():
            if d.typed:
                rows_of[k] += self._fp_rows(d, vocab) + self._unlabelled_rows(d, set_apart)
        for k, it in enumerate(items):
            result.doc_scores += [(it.doc_id, s) for s in rows_of[k]]
        result.unreached = count_states((it.doc_class, rows_of[k][0].state) for k, it in enumerate(items)
                                        if it.artefact.applies and not (k in docs and docs[k].typed) and rows_of[k])
        ordered = [docs[k] for k in sorted(docs)]
        result.corpus_scores = self._macro_rows([d for d in ordered if d.typed], result.unreached)
        info = next((it.artefact.detector_info for it in items if it.state is State.OK and it.artefact.applies
                     and it.artefact.detector_info), None)
        scrubber = next((it.artefact.scrubber for it in items if it.artefact.applies and it.artefact.scrubber),
                        self.scrubber)
        result.details.update(self._details(ordered, target, info, scrubber))
        return result

    def _unlabelled_rows(self, d: _Doc, types: Sequence[str]) -> list[Score]:
        """``pii.unlabelled_type_predictions`` of one scored document: ``*`` and one row per type in ``types`` (every
        type set apart somewhere in the corpus, so the per-type micro rate counts every document)."""
        name = "pii.unlabelled_type_predictions"
        if d.labelled_types is None:
            return [Score.missing(name, State.NO_REFERENCE, "the truth has no pii_types: every predicted type is "
                                  f"judged (without_pii_types = {self.without_pii_types})", label=ANY_TYPE)]
        detail = {"labelled_types": list(d.labelled_types), "set_apart": dict(sorted(d.unlabelled.items()))}
        if d.n_audited == 0:
            return [Score(name, None, 0, 0, State.NO_PREDICTION, label, {**detail, "reason": "nothing predicted"})
                    for label in (ANY_TYPE, *types)]
        return ([Score.ratio(name, sum(d.unlabelled.values()), d.n_audited, label=ANY_TYPE, detail=detail)]
                + [Score.ratio(name, d.unlabelled.get(t, 0), d.n_audited, label=t) for t in types])

    def _macro_rows(self, docs: list[_Doc], unreached: dict[str, dict[str, int]]) -> list[tuple[str, Score, int]]:
        """``P/macro`` rows per class and ``__all__`` over the scored documents; a class whose labelled documents
        were none scored gets them without a value, in the state that kept its documents out (``n`` = 0)."""
        by_class: dict[str, list[_Doc]] = defaultdict(list)
        for d in docs:
            by_class[d.item.doc_class].append(d)
        groups = sorted(by_class.items()) + ([("__all__", docs)] if docs else [])
        out: list[tuple[str, Score, int]] = []
        for cls in sorted(c for c in unreached if c not in by_class and (c != "__all__" or not docs)):
            for pol in self.policies:
                out += [(cls, s, 0) for s in unreached_rows([f"pii.{n}" for n in RATE_NAMES], unreached[cls],
                                                             label=f"{pol.label}/macro")]
        for cls, members in groups:
            for pol in self.policies:
                total = members[0].typed[pol.label]
                for d in members[1:]:
                    total = total + d.typed[pol.label]
                for name in RATE_NAMES:
                    m = total.macro(name)
                    label = f"{pol.label}/macro"
                    detail = {"policy": pol.label, "types": list(m.labels), "undefined": list(m.undefined),
                              "per_type": {t: c.rate(name).value for t, c in total.per_type.items()}}
                    if m.value is None:
                        score = Score(f"pii.{name}", None, None, None, State.NO_REFERENCE, label,
                                      {**detail, "reason": m.reason})
                    else:
                        score = Score(f"pii.{name}", m.value, None, None, State.OK, label, detail)
                    out.append((cls, score, len(members)))
        return out

    def _details(self, docs: list[_Doc], target: tuple[str, ...] | None,
                 info: dict[str, Any] | None = None, scrubber: str = "") -> dict[str, Any]:
        unmapped: Counter = Counter()
        ignored: Counter = Counter()
        confusion: Counter = Counter()
        sources: Counter = Counter()
        lost: list[dict[str, Any]] = []
        for d in docs:
            unmapped.update(d.unmapped)
            ignored.update(d.ignored_predicted)
            confusion.update(d.confusion)
            sources[d.source] += 1
            lost += [{"doc_id": d.item.doc_id, **x} for x in d.lost]
        gold_types = sorted({s.type for d in docs for s in d.item.truth.pii})
        unsupported_map = sorted(k for k, v in self.label_map.items()
                                 if v is not None and target is not None and v not in target)
        out: dict[str, Any] = {
            "label_map": {
                "map": self.label_map, "detector_types": list(target) if target is not None else None,
                "gold_types": gold_types, "unmapped_types": dict(sorted(unmapped.items())),
                "map_targets_not_in_detector": unsupported_map,
                "note": "unmapped gold types are left out of the typed rows, kept in '<policy>/*', leakage and "
                        "lost_in_extraction"},
            "scrubber_by_document": dict(sorted(sources.items())),
            "ignored_predicted_types": dict(sorted(ignored.items())),
            "unlabelled_types": {
                "without_pii_types": self.without_pii_types, "note": UNLABELLED_NOTE[self.without_pii_types],
                "documents_with_pii_types": sum(d.item.truth.pii_types is not None for d in docs),
                "documents_without_pii_types": sum(d.item.truth.pii_types is None for d in docs),
                "set_apart": dict(sorted(sum((d.unlabelled for d in docs), Counter()).items()))},
            "type_confusion": {
                "policy": self.policies[1].label, "note": "gold type -> predicted type of the type-agnostic pairs",
                "pairs": [{"gold": g, "predicted": p, "count": n} for (g, p), n in sorted(confusion.items())]},
            "lost_in_extraction": {"total": len(lost), "spans": lost[:MAX_LISTED * 5]},
        }
        if (scrubber or self.scrubber) not in ("precomputed", "redacted") and info is not None:
            out["detector"] = info  # as the worker that ran the detector recorded it
        return out
