"""The artefacts of the detection steps (language detection, later the PII scrubber), and their option checks.

A type module below the auditors and the steps: the step (`ingestaudit.stages.language_step`) builds these in the
worker, the auditor (`ingestaudit.auditors.language`) only reads them, so an auditor never imports a detector.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

MIXED_MIN_SHARE = 0.25
"""Default share of a document's non-white-space code points that a second language must cover for the document to
be flagged mixed."""

MIXED_MIN_CONFIRMATION = 0.9
"""Default confirmation threshold: the second language's segments, joined and scored again as one text, must give
it a probability of at least this much *relative to the main language*, ``p2 / (p1 + p2)``. Multi-language
segmentation confuses close languages inside single-language text (Bosnian/Croatian, Indonesian/Malay,
Czech/Slovak); re-scoring the pooled segments removes most of those (measured on lingua-testdata with all 75
candidates, share 0.25: single-language sentences flagged fall from 12.9 % to 4.3 %, while the two-language
paragraphs found stay found, 88.7 % with or without the check; see benchmarks/README.md)."""

LANGUAGE_SETS = ("labels", "all")
"""Named candidate sets: ``labels`` = the languages in the corpus's labels, ``all`` = every language the detector
supports. A list of codes is also accepted."""

MIXED_TEXTS = ("reference", "input")
"""Which text the mixed-language analysis reads: the reference text when the document has one (else the input), or
always the stage input (the parser's text)."""

LANGUAGE_STEP_DEFAULTS: dict[str, Any] = {
    "detector": "lingua", "languages": "labels", "min_relative_distance": 0.0, "low_accuracy": False,
    "detector_options": {}, "mixed": True, "mixed_share": MIXED_MIN_SHARE,
    "mixed_confirmation": MIXED_MIN_CONFIRMATION, "mixed_text": "reference", "use_precomputed": True}
"""The ``language`` step's options and their defaults (``detector`` is the step's ``use``): the options of
``[auditor_options.language]`` that configure the detector rather than the metric."""


def with_defaults(step: str, opts: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """``defaults`` overridden by ``opts``: a step's complete options before its own checks.

    Raises:
        ValueError: an option ``defaults`` does not have; the message names the step and lists its options.
    """
    unknown = sorted(set(opts) - set(defaults))
    if unknown:
        raise ValueError(f"unknown {step} step option {', '.join(map(repr, unknown))}; options are "
                         f"{', '.join(defaults)}")
    return {**defaults, **opts}


def check_language_options(opts: dict[str, Any]) -> dict[str, Any]:
    """The ``language`` step's options, complete (`LANGUAGE_STEP_DEFAULTS` filled in) and checked.

    ``languages`` becomes ``"labels"``, ``"all"`` or a sorted tuple of project codes (ISO 639-1/639-3/BCP 47 mapped
    with langcodes, `ingestaudit.truth.normalize_language`).

    Raises:
        ValueError: an unknown option, an option out of range, an unknown language set or mixed_text, an invalid
            language code, or lingua-only options given with another detector.
    """
    from ingestaudit.truth import normalize_language

    o = with_defaults("language", opts, LANGUAGE_STEP_DEFAULTS)
    languages = o["languages"]
    if isinstance(languages, str):
        if languages not in LANGUAGE_SETS:
            raise ValueError(f"languages must be one of {', '.join(LANGUAGE_SETS)} or a list of codes, got "
                             f"{languages!r}")
    else:
        o["languages"] = tuple(sorted({normalize_language(c) for c in languages}))
    if not 0.0 <= float(o["min_relative_distance"]) <= 0.99:
        raise ValueError(f"min_relative_distance must be in [0, 0.99], got {o['min_relative_distance']}")
    if o["detector"] != "lingua" and (o["min_relative_distance"] or o["low_accuracy"]):
        raise ValueError("min_relative_distance and low_accuracy are lingua options; give other detectors their "
                         "options in detector_options")
    if not 0 < o["mixed_share"] <= 0.5:
        raise ValueError(f"mixed_share must be in (0, 0.5], got {o['mixed_share']}")
    if not 0 <= o["mixed_confirmation"] <= 1:
        raise ValueError(f"mixed_confirmation must be in [0, 1], got {o['mixed_confirmation']}")
    if o["mixed_text"] not in MIXED_TEXTS:
        raise ValueError(f"mixed_text must be one of {', '.join(MIXED_TEXTS)}, got {o['mixed_text']!r}")
    o.update(min_relative_distance=float(o["min_relative_distance"]), low_accuracy=bool(o["low_accuracy"]),
             detector_options=dict(o["detector_options"] or {}), mixed=bool(o["mixed"]),
             mixed_share=float(o["mixed_share"]), mixed_confirmation=float(o["mixed_confirmation"]),
             use_precomputed=bool(o["use_precomputed"]))
    return o


def language_settings(opts: dict[str, Any]) -> dict[str, Any]:
    """The JSON form of checked step options (`check_language_options`): ``languages`` as a string or a list."""
    langs: str | Sequence[str] = opts["languages"]
    return {**opts, "languages": langs if isinstance(langs, str) else list(langs)}


@dataclass(frozen=True)
class LanguageDetection:
    """What the ``language`` step produced for one labelled document x pipeline (`ingestaudit.stages.language_step`).

    Attributes:
        detector: the step's detector name (its ``use``).
        mixed_on: the step runs the mixed-language analysis (option ``mixed``).
        candidates: how the candidate languages were chosen (``requested``, ``languages``, ``unsupported``,
            ``notes``), the same for every document of the run's pipeline.
        ran: the step had text to read (False: the pipeline produced nothing for the document; nothing below is
            set).
        predicted: the detected or precomputed language (None: abstained, or nothing ran).
        source: the detector's name or ``precomputed`` (``""``: nothing predicted).
        error: why there is no prediction (a detector that raised or could not be built, a bad precomputed tag).
        mixed: the mixed-language analysis (an object with ``mixed``, ``shares``, ``second``, ``second_share`` and
            ``to_dict()``: `ingestaudit.stages.language.MixedResult`), or None.
        mixed_src: which text it read (``reference`` or ``input``; ``""``: no analysis ran).
        mixed_error: why the analysis failed.
        detector_info: ``{"detector_version", "detector_settings"}`` of the detector built for this document, or
            ``{"note": message}`` when it could not be built; None when no detector was needed.
    """

    detector: str
    mixed_on: bool
    candidates: dict[str, Any] = field(default_factory=dict)
    ran: bool = False
    predicted: str | None = None
    source: str = ""
    error: str = ""
    mixed: Any = None
    mixed_src: str = ""
    mixed_error: str = ""
    detector_info: dict[str, Any] | None = None


# ----------------------------------------------------------------------------------------------------- PII

REDACTED_FIELDS = ("clean_text", "text")
"""Where a ``redacted`` scrubber's output is: the output's ``clean_text`` (the redacted version of its ``text``) or its
``text`` (the redacted reference text)."""

PII_STEP_DEFAULTS: dict[str, Any] = {
    "scrubber": "presidio", "detector_options": {}, "spacy_model": "en_core_web_sm", "spacy_model_version": "3.8.0",
    "language": "en", "score_threshold": 0.0, "labels_to_ignore": None, "batch_size": 32, "entities": None,
    "prefer_precomputed": True, "redacted_field": "clean_text", "placeholder_pattern": r"<([A-Z][A-Z0-9_]*)>",
    "max_chars": 1_000_000}
"""The ``pii`` step's options and their defaults (``scrubber`` is the step's ``use``): the options of
``[auditor_options.pii]`` that configure the scrubber rather than the metric."""

PRESIDIO_OPTIONS = ("spacy_model", "spacy_model_version", "language", "score_threshold", "labels_to_ignore",
                    "batch_size", "entities")
"""The step options Presidio takes (`ingestaudit.stages.pii.PresidioDetector`)."""


def parse_entities(value: Sequence[str] | str | None) -> list[str] | None:
    """The ``entities`` option as a list: a sequence is copied, a string is split at commas and white space, None
    stays None (all types)."""
    if value is None:
        return None
    if isinstance(value, str):
        return [v for v in value.replace(",", " ").split() if v]
    return list(value)


def check_pii_options(opts: dict[str, Any]) -> dict[str, Any]:
    """The ``pii`` step's options, complete (`PII_STEP_DEFAULTS` filled in) and checked (Presidio's own checks run
    when the step builds its detector).

    Raises:
        ValueError: an unknown option, ``redacted_field`` not in `REDACTED_FIELDS`, ``max_chars`` < 1, a
            ``score_threshold`` outside [0, 1] or a ``batch_size`` < 1.
    """
    o = with_defaults("pii", opts, PII_STEP_DEFAULTS)
    if o["redacted_field"] not in REDACTED_FIELDS:
        raise ValueError(f"redacted_field must be one of {', '.join(REDACTED_FIELDS)}, got {o['redacted_field']!r}")
    if int(o["max_chars"]) < 1:
        raise ValueError(f"max_chars must be >= 1, got {o['max_chars']!r}")
    if not 0.0 <= float(o["score_threshold"]) <= 1.0:
        raise ValueError(f"score_threshold must be in [0, 1], got {o['score_threshold']!r}")
    if int(o["batch_size"]) < 1:
        raise ValueError(f"batch_size must be >= 1, got {o['batch_size']!r}")
    o.update(detector_options=dict(o["detector_options"] or {}), entities=parse_entities(o["entities"]),
             prefer_precomputed=bool(o["prefer_precomputed"]), max_chars=int(o["max_chars"]))
    return o


@dataclass(frozen=True)
class PiiDetection:
    """What the ``pii`` step produced for one labelled document x pipeline (`ingestaudit.stages.pii_step`).

    Attributes:
        scrubber: the step's scrubber (its ``use``): ``presidio``, a detector name, ``precomputed`` or ``redacted``.
        ran: the step had output to read (False: the pipeline produced nothing for the document; nothing below is
            set).
        source: where the predictions come from: ``precomputed``, ``redacted (<method>)`` or the detector's name
            (``""`` when there are none).
        input_text: the scrubber's input (the parser's text; the reference text for ``redacted_field = "text"``):
            the predicted spans' coordinates. The auditor maps the gold spans onto it through a character alignment
            with the reference text (`ingestaudit.metrics.alignment`).
        predicted: the predicted spans on ``input_text`` (None: no prediction, ``state`` says why).
        scrubbed: the redacted text a ``redacted`` scrubber wrote (None: the auditor redacts ``predicted``).
        state, reason: ``""`` when the predictions are known, else the rows' state (``no_prediction``,
            ``skipped``, ``error``) and why.
        detector_types: the detector's declared vocabulary (None: unknown or no detector ran).
        detector_error: why the vocabulary could not be read.
        detector_info: ``{"name", "version", "settings"}`` of the detector that was built for the document.
    """

    scrubber: str
    ran: bool = False
    source: str = ""
    input_text: str = ""
    predicted: tuple[Any, ...] | None = None
    scrubbed: str | None = None
    state: str = ""
    reason: str = ""
    detector_types: tuple[str, ...] | None = None
    detector_error: str = ""
    detector_info: dict[str, Any] | None = None

    @property
    def used_detector(self) -> bool:
        """The configured detector produced the predictions (not a precomputed or redacted output)."""
        return self.source == self.scrubber and self.source not in ("precomputed", "redacted")

