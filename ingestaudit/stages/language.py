"""Language detectors under audit, behind one interface, and the mixed-language analysis.

Built-in: ``lingua`` (`LinguaDetector`, lingua-language-detector 2.x, high-accuracy mode by default), restricted to a
set of candidate languages, abstaining below a minimum relative distance. A user's detector plugs in through the
entry-point group ``ingestaudit.language_detectors`` (name -> ``module:Class``, a `LanguageDetector` subclass), or as
``"module:Class"`` directly; a pipeline that already tagged its documents writes ``language`` into its precomputed
output (``ParsedDocument.extras["language"]``) and the auditor reads that instead of running a detector.

Labels are the project's language codes: ISO 639-1 where one exists, as `ingestaudit.truth.normalize_language`
(langcodes) maps them; every detector output goes through the same mapping, so truth and prediction agree on codes
(langcodes maps lingua's ``tl`` (Tagalog) to ``fil``, for instance, on both sides).

lingua is imported only when a `LinguaDetector` is built.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib.metadata import EntryPoint
from typing import Any, ClassVar

from ingestaudit.detections import MIXED_MIN_CONFIRMATION, MIXED_MIN_SHARE
from ingestaudit.errors import IngestAuditError
from ingestaudit.plugins import PluginUnavailable, UnknownPlugin, entry_points_of, plugin_class, plugin_names

GROUP = "ingestaudit.language_detectors"
"""Entry-point group of user language detectors."""

BUILTIN: dict[str, str] = {"lingua": "ingestaudit.stages.language:LinguaDetector"}
"""Built-in detectors by name (dotted path, imported on use)."""


class DetectorError(IngestAuditError):
    """Base error of the language detectors (the auditor turns it into ``error`` rows with the message)."""


class UnknownDetector(DetectorError, UnknownPlugin):
    """No detector of that name; the message lists the known ones."""


class DetectorUnavailable(DetectorError, PluginUnavailable):
    """The detector's library is not installed; the message names the package."""


class UnsupportedLanguages(DetectorError):
    """A requested candidate language is not supported by the detector, or too few candidates remain."""


@dataclass(frozen=True)
class Segment:
    """A stretch ``text[start:end]`` (code points, end exclusive) that a multi-language detector assigns to
    ``language``."""

    language: str
    start: int
    end: int


class LanguageDetector(ABC):
    """Assigns one language code (or None: abstained) to a text.

    Subclasses set ``name`` and implement `detect` and `version`; they take the candidate ``languages`` (project
    codes, or None for every language they support) and keyword options (from ``[auditor_options.language]
    detector_options``) in ``__init__``. Batch methods loop by default. Construction may be expensive (models); the
    auditor caches instances per process (`get_detector`).
    """

    name: ClassVar[str]

    def __init__(self, languages: Sequence[str] | None = None, **options: Any):
        self.languages = None if languages is None else tuple(sorted(set(languages)))
        self.options = options

    @abstractmethod
    def detect(self, text: str) -> str | None:
        """The language of ``text`` as a project code, or None when the detector abstains (too little evidence,
        no letters, empty text). Must not raise for any string."""

    def detect_many(self, texts: Sequence[str]) -> list[str | None]:
        """`detect` for every text, in order."""
        return [self.detect(t) for t in texts]

    def segments(self, text: str) -> list[Segment] | None:
        """Multi-language detection: the segments of ``text`` with their languages, or None when the detector
        cannot do it (the mixed-language flag is then not computed)."""
        return None

    def segments_many(self, texts: Sequence[str]) -> list[list[Segment] | None]:
        """`segments` for every text, in order."""
        return [self.segments(t) for t in texts]

    def confidences(self, text: str) -> dict[str, float] | None:
        """Probability per candidate language (summing to 1 over candidates, or all 0 for text without evidence), or
        None when the detector gives none."""
        return None

    def confidences_many(self, texts: Sequence[str]) -> list[dict[str, float] | None]:
        """`confidences` for every text, in order."""
        return [self.confidences(t) for t in texts]

    @classmethod
    def supported_languages(cls) -> tuple[str, ...] | None:
        """Every project code the detector can output, sorted; None when unknown (any code accepted)."""
        return None

    @abstractmethod
    def version(self) -> str:
        """Version of the underlying library.

        Raises:
            DetectorUnavailable: it is not installed.
        """

    def settings(self) -> dict[str, Any]:
        """Every option that changes the output, JSON-serialisable (printed in the report)."""
        return {"languages": list(self.languages) if self.languages is not None else "all", **self.options}


# --------------------------------------------------------------------------------------------------- lingua

@lru_cache(maxsize=1)
def _lingua_codes() -> dict[str, str]:
    """project code -> lingua ``IsoCode639_1`` member name, for every lingua language."""
    try:
        from lingua import Language
    except ImportError as exc:  # pragma: no cover - lingua is a dependency
        raise DetectorUnavailable("lingua is not installed: pip install lingua-language-detector") from exc
    from ingestaudit.truth import normalize_language

    return {normalize_language(lang.iso_code_639_1.name.lower()): lang.iso_code_639_1.name
            for lang in Language.all()}


_LINGUA_BUILT: dict[tuple, Any] = {}
"""Built lingua detectors of this process, keyed by (candidate codes, min relative distance, low accuracy)."""


def _lingua_detector(codes: tuple[str, ...], min_relative_distance: float, low_accuracy: bool) -> Any:
    key = (codes, min_relative_distance, low_accuracy)
    if key not in _LINGUA_BUILT:
        from lingua import IsoCode639_1, LanguageDetectorBuilder

        names = _lingua_codes()
        builder = LanguageDetectorBuilder.from_iso_codes_639_1(*(getattr(IsoCode639_1, names[c]) for c in codes))
        builder = builder.with_minimum_relative_distance(min_relative_distance)
        if low_accuracy:
            builder = builder.with_low_accuracy_mode()
        _LINGUA_BUILT[key] = builder.build()
    return _LINGUA_BUILT[key]


class LinguaDetector(LanguageDetector):
    """lingua-language-detector (pemistahl/lingua-py 2.x, Rust core), restricted to candidate languages.

    lingua scores every candidate with character n-gram models (1- to 5-grams in high-accuracy mode, trigrams only
    in low-accuracy mode) and returns the most likely one. With a *minimum relative distance* ``d > 0`` it returns
    None (abstains) unless the top candidate beats the runner-up by at least ``d`` in lingua's normalised
    log-probability distance (lingua's ``with_minimum_relative_distance``; the distance grows with text length, so
    short texts abstain first). Text without letters gives None at any ``d``.

    Args:
        languages: candidate project codes; None = all 75 lingua languages (about 1 GB of models in high-accuracy
            mode, loaded lazily per language on first use).
        min_relative_distance: ``d`` in ``[0, 0.99]``; 0 = lingua's default (never abstains on text with letters).
        low_accuracy: lingua's low-accuracy mode (faster, less memory, worse on short text).

    Raises:
        UnsupportedLanguages: a candidate lingua does not know, or fewer than two candidates (lingua needs two).
        ValueError: ``min_relative_distance`` outside ``[0, 0.99]``.
        DetectorUnavailable: lingua is not installed.
    """

    name = "lingua"

    def __init__(self, languages: Sequence[str] | None = None, min_relative_distance: float = 0.0,
                 low_accuracy: bool = False):
        if not 0.0 <= float(min_relative_distance) <= 0.99:
            raise ValueError(f"min_relative_distance must be in [0, 0.99], got {min_relative_distance}")
        super().__init__(languages, min_relative_distance=float(min_relative_distance),
                         low_accuracy=bool(low_accuracy))
        names = _lingua_codes()
        codes = tuple(sorted(names)) if self.languages is None else self.languages
        unknown = [c for c in codes if c not in names]
        if unknown:
            raise UnsupportedLanguages(f"lingua does not know {', '.join(unknown)}; it supports "
                                       f"{', '.join(sorted(names))}")
        if len(codes) < 2:
            raise UnsupportedLanguages(f"lingua needs at least two candidate languages, got {list(codes)}")
        self.codes = codes
        self._to_code = {v: k for k, v in names.items()}  # IsoCode639_1 member name -> project code
        self._detector = _lingua_detector(codes, float(min_relative_distance), bool(low_accuracy))

    def _code(self, language: Any) -> str:
        return self._to_code[language.iso_code_639_1.name]

    def detect(self, text: str) -> str | None:
        """lingua's ``detect_language_of``, as a project code (None = abstained)."""
        lang = self._detector.detect_language_of(text)
        return None if lang is None else self._code(lang)

    def detect_many(self, texts: Sequence[str]) -> list[str | None]:
        """lingua's ``detect_languages_in_parallel_of`` (all cores), same results as `detect` one by one."""
        return [None if lang is None else self._code(lang)
                for lang in self._detector.detect_languages_in_parallel_of(list(texts))]

    def segments(self, text: str) -> list[Segment]:
        """lingua's ``detect_multiple_languages_of`` (experimental in lingua; noisy on short text and between close
        languages, see `mixed_language`). lingua's indices are code points."""
        return [Segment(self._code(r.language), r.start_index, r.end_index)
                for r in self._detector.detect_multiple_languages_of(text)]

    def segments_many(self, texts: Sequence[str]) -> list[list[Segment] | None]:
        """lingua's ``detect_multiple_languages_in_parallel_of`` (all cores)."""
        return [[Segment(self._code(r.language), r.start_index, r.end_index) for r in res]
                for res in self._detector.detect_multiple_languages_in_parallel_of(list(texts))]

    def confidences(self, text: str) -> dict[str, float]:
        """lingua's ``compute_language_confidence_values``: probabilities over the candidates (all 0 without
        evidence)."""
        return {self._code(cv.language): float(cv.value)
                for cv in self._detector.compute_language_confidence_values(text)}

    def confidences_many(self, texts: Sequence[str]) -> list[dict[str, float] | None]:
        """lingua's ``compute_language_confidence_values_in_parallel`` (all cores)."""
        return [{self._code(cv.language): float(cv.value) for cv in res}
                for res in self._detector.compute_language_confidence_values_in_parallel(list(texts))]

    @classmethod
    def supported_languages(cls) -> tuple[str, ...]:
        """The 75 lingua languages as project codes, sorted."""
        return tuple(sorted(_lingua_codes()))

    def version(self) -> str:
        """The installed lingua-language-detector version."""
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("lingua-language-detector")
        except PackageNotFoundError as exc:  # pragma: no cover
            raise DetectorUnavailable("pip install lingua-language-detector") from exc

    def settings(self) -> dict[str, Any]:
        """Candidates, minimum relative distance and accuracy mode."""
        return {"languages": list(self.codes), **self.options}


# --------------------------------------------------------------------------------------------------- registry

def _entry_points() -> dict[str, EntryPoint]:
    return entry_points_of(GROUP)


def detector_names() -> list[str]:
    """Built-in and entry-point detector names, sorted."""
    return sorted(plugin_names(GROUP, BUILTIN, entry_points=_entry_points))


def detector_class(name: str) -> type[LanguageDetector]:
    """The class of detector ``name`` (built-in, entry point, or ``"module:Class"``), imported on use.

    Raises:
        UnknownDetector: nothing of that name, or a path naming no class.
        DetectorUnavailable: its module does not import (the message names the cause).
    """
    return plugin_class(GROUP, name, BUILTIN, what="language detector", entry_points=_entry_points,
                        known=detector_names, unknown=UnknownDetector, unavailable=DetectorUnavailable)


_BUILT: dict[tuple, LanguageDetector] = {}


def get_detector(name: str, languages: Sequence[str] | None, options: dict[str, Any] | None = None
                 ) -> LanguageDetector:
    """A detector instance, built once per process per (name, candidate set, options).

    Raises:
        what `detector_class` and the detector's constructor raise (`DetectorError`, ValueError, TypeError for an
        unknown option).
    """
    langs = None if languages is None else tuple(sorted(set(languages)))
    opts = dict(options or {})
    key = (name, langs, tuple(sorted((k, repr(v)) for k, v in opts.items())))
    if key not in _BUILT:
        _BUILT[key] = detector_class(name)(langs, **opts)
    return _BUILT[key]


# --------------------------------------------------------------------------------------------------- mixed

# MIXED_MIN_SHARE and MIXED_MIN_CONFIRMATION live in ingestaudit.detections (the auditor reads them too).


@dataclass(frozen=True)
class MixedResult:
    """The mixed-language analysis of one text.

    Attributes:
        mixed: True when a second language covers at least the share threshold and is confirmed.
        shares: ``(language, share)`` for every language found, share = its segments' non-white-space code points /
            all segments' non-white-space code points; by share descending, then code.
        main, second: the two largest languages (None when absent).
        second_share: the second language's share (0.0 when there is none).
        confirmation: ``p2 / (p1 + p2)`` for the pooled second-language segments, or None when not computed (no
            second language, below the share threshold, or a detector without confidences).
        min_share, min_confirmation: the thresholds used.
        notes: what could not be checked (no language found, a detector without confidences).
    """

    mixed: bool
    shares: tuple[tuple[str, float], ...]
    main: str | None
    second: str | None
    second_share: float
    confirmation: float | None
    min_share: float
    min_confirmation: float
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """JSON form (shares rounded to 4 decimals)."""
        return {"mixed": self.mixed, "shares": [[lang, round(s, 4)] for lang, s in self.shares],
                "main": self.main, "second": self.second, "second_share": round(self.second_share, 4),
                "confirmation": None if self.confirmation is None else round(self.confirmation, 4),
                "min_share": self.min_share, "min_confirmation": self.min_confirmation, "notes": list(self.notes)}


def _nonspace(text: str) -> int:
    return sum(not ch.isspace() for ch in text)


def _check_thresholds(min_share: float, min_confirmation: float) -> None:
    if not 0 < min_share <= 0.5:
        raise ValueError(f"min_share must be in (0, 0.5], got {min_share}")
    if not 0 <= min_confirmation <= 1:
        raise ValueError(f"min_confirmation must be in [0, 1], got {min_confirmation}")


def mixed_language(detector: LanguageDetector, text: str, *, min_share: float = MIXED_MIN_SHARE,
                   min_confirmation: float = MIXED_MIN_CONFIRMATION) -> MixedResult | None:
    """Whether ``text`` is mixed-language.

    1. ``detector.segments(text)`` (multi-language detection); each language's share is the non-white-space code
       points of its segments over those of all segments: ``s(L) = Σ_{seg of L} |seg|_ns / Σ_seg |seg|_ns``.
    2. With languages ranked by share (ties by code), ``main`` = first, ``second`` = second.
    3. Mixed iff ``s(second) >= min_share`` and the confirmation ``p2 / (p1 + p2) >= min_confirmation``, where
       ``p1, p2`` are ``detector.confidences`` of main and second on the second language's segments joined by a
       space (``p2 / (p1 + p2)`` is 0 when both are 0; the check is skipped, with a note, when the detector gives no
       confidences, and when ``min_confirmation`` is 0).

    Args:
        min_share: in (0, 0.5]; a second language cannot cover more than half.
        min_confirmation: in [0, 1]; 0 turns the confirmation off.

    Returns:
        `MixedResult`, or None when the detector cannot segment text.

    Raises:
        ValueError: a threshold out of range.
    """
    return mixed_languages(detector, [text], min_share=min_share, min_confirmation=min_confirmation)[0]


def mixed_languages(detector: LanguageDetector, texts: Sequence[str], *, min_share: float = MIXED_MIN_SHARE,
                    min_confirmation: float = MIXED_MIN_CONFIRMATION) -> list[MixedResult | None]:
    """`mixed_language` for every text, with the detector's batch methods (`segments_many`, `confidences_many`).

    Raises:
        ValueError: a threshold out of range, or a batch method returning the wrong number of results.
    """
    _check_thresholds(min_share, min_confirmation)
    all_segs = detector.segments_many(texts)
    if len(all_segs) != len(texts):
        raise ValueError(f"segments_many returned {len(all_segs)} results for {len(texts)} texts")
    out: list[MixedResult | None] = []
    pending: list[tuple[int, str, str, str]] = []  # (index, main, second, pooled second-language text)
    for i, (text, segs) in enumerate(zip(texts, all_segs)):
        if segs is None:
            out.append(None)
            continue
        size: dict[str, int] = {}
        pieces: dict[str, list[str]] = {}
        for s in segs:
            piece = text[s.start:s.end]
            size[s.language] = size.get(s.language, 0) + _nonspace(piece)
            pieces.setdefault(s.language, []).append(piece.strip())
        total = sum(size.values())
        if total == 0:
            out.append(MixedResult(False, (), None, None, 0.0, None, min_share, min_confirmation,
                                   ("no language found",)))
            continue
        ranked = sorted(size.items(), key=lambda kv: (-kv[1], kv[0]))
        shares = tuple((lang, n / total) for lang, n in ranked)
        main = ranked[0][0]
        second, second_share = shares[1] if len(shares) > 1 else (None, 0.0)
        candidate = second is not None and second_share >= min_share
        out.append(MixedResult(candidate, shares, main, second, second_share, None, min_share, min_confirmation))
        if candidate and min_confirmation > 0:
            pending.append((i, main, second, " ".join(pieces[second])))  # type: ignore[arg-type]
    if pending:
        confs = detector.confidences_many([p[3] for p in pending])
        if len(confs) != len(pending):
            raise ValueError(f"confidences_many returned {len(confs)} results for {len(pending)} texts")
        for (i, main, second, _), conf in zip(pending, confs):
            r = out[i]
            assert r is not None
            if conf is None:
                out[i] = replace(r, notes=("the detector gives no confidences: second language not confirmed",))
                continue
            p1, p2 = conf.get(main, 0.0), conf.get(second, 0.0)
            confirmation = p2 / (p1 + p2) if p1 + p2 > 0 else 0.0
            out[i] = replace(r, mixed=confirmation >= min_confirmation, confirmation=confirmation)
    return out
