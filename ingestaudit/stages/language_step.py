"""The ``language`` step of a pipeline: language detection and the mixed-language analysis of one document.

Runs in the worker, once per labelled document x pipeline, after parsing (DESIGN.md, "Pipelines and the stage
chain": ``parse -> clean -> [scrub PII] -> [detect language] -> ...``). Its options are
`ingestaudit.detections.LANGUAGE_STEP_DEFAULTS`; its artefact, `ingestaudit.detections.LanguageDetection`, is all the
language auditor reads.

What is detected: the parser's text (``ParsedDocument.text``); a precomputed ``language`` tag of the output
(``extras["language"]``) is the prediction instead when ``use_precomputed`` (``null`` or ``""`` = abstained). The
mixed-language analysis (`ingestaudit.stages.language.mixed_languages`) reads the reference text when the document
has one and ``mixed_text = "reference"``, else the parser's text, with the same detector and candidate languages.
"""

from __future__ import annotations

from typing import Any

from ingestaudit.detections import LanguageDetection, check_language_options, language_settings
from ingestaudit.model import ParsedDocument

_MIXED_CACHE: dict[tuple, Any] = {}  # per process: (detector, text hash, thresholds) -> MixedResult
_MIXED_CACHE_SIZE = 1024


def language_to_json(det: LanguageDetection) -> dict[str, Any]:
    """``det`` as JSON-able data (`language_from_json` reads it back equal); the step cache's form
    (`ingestaudit.step_cache`).

    Raises:
        TypeError: a field JSON cannot hold (the caller does not cache then).
    """
    mixed = det.mixed
    if mixed is not None:
        mixed = {"mixed": mixed.mixed, "shares": [list(s) for s in mixed.shares], "main": mixed.main,
                 "second": mixed.second, "second_share": mixed.second_share, "confirmation": mixed.confirmation,
                 "min_share": mixed.min_share, "min_confirmation": mixed.min_confirmation,
                 "notes": list(mixed.notes)}
    return {"detector": det.detector, "mixed_on": det.mixed_on, "candidates": det.candidates, "ran": det.ran,
            "predicted": det.predicted, "source": det.source, "error": det.error, "mixed": mixed,
            "mixed_src": det.mixed_src, "mixed_error": det.mixed_error, "detector_info": det.detector_info}


def language_from_json(data: dict[str, Any]) -> LanguageDetection:
    """The `LanguageDetection` of `language_to_json`'s data.

    Raises:
        KeyError, TypeError, ValueError: data of another shape.
    """
    from ingestaudit.stages.language import MixedResult

    if not isinstance(data["predicted"], (str, type(None))) or not isinstance(data["error"], str):
        raise TypeError("a language detection's predicted is a string or null and its error a string")
    mixed = data["mixed"]
    if mixed is not None:
        mixed = MixedResult(**{**mixed, "shares": tuple((str(lang), share) for lang, share in mixed["shares"]),
                               "notes": tuple(mixed["notes"])})
    return LanguageDetection(**{**data, "mixed": mixed})


class LanguageStep:
    """One pipeline's language detector with its options (`ingestaudit.detections.check_language_options`).

    Built once per process and options (`ingestaudit.steps`); the detector itself is built on first use, once per
    candidate set (`ingestaudit.stages.language.get_detector` caches it).

    Raises:
        ValueError: bad options (see `check_language_options`).
    """

    def __init__(self, **options: Any):
        self.opts = check_language_options(options)
        self.detector = self.opts["detector"]
        self._chosen: dict[tuple[str, ...], tuple[tuple[str, ...] | None, dict[str, Any]]] = {}

    def settings(self) -> dict[str, Any]:
        """Every option, JSON-serialisable (``report.json["pipelines"][].stages["language"].settings``)."""
        return {k: v for k, v in language_settings(self.opts).items() if k != "detector"}

    def version(self) -> str:
        """The detector library's version, or ``unavailable (...)`` when its class cannot be imported."""
        from ingestaudit.stages.language import detector_class

        try:
            cls = detector_class(self.detector)
            if self.detector == "lingua":
                from importlib.metadata import version

                return version("lingua-language-detector")
            return getattr(cls, "__version__", "") or "unknown"
        except Exception as exc:
            return f"unavailable ({type(exc).__name__}: {exc})"

    def candidates(self, labels: set[str]) -> tuple[tuple[str, ...] | None, dict[str, Any]]:
        """The candidate set for the detector (None: every language it supports) and how it was chosen: ``labels``
        (the languages of the corpus's labels), ``all``, or the listed codes, without the unsupported ones; lingua
        with fewer than two candidates loads every language instead (a one-language detector is always right)."""
        from ingestaudit.stages.language import detector_class

        languages = self.opts["languages"]
        info: dict[str, Any] = {"requested": languages if isinstance(languages, str) else list(languages),
                                "notes": []}
        try:
            supported = detector_class(self.detector).supported_languages()
        except Exception as exc:  # reported when the detector is built
            supported = None
            info["notes"].append(f"supported languages unknown: {type(exc).__name__}: {exc}")
        if languages == "all":
            chosen = None if supported is None else tuple(supported)
        else:
            wanted = sorted(labels) if languages == "labels" else list(languages)
            unsupported = [c for c in wanted if supported is not None and c not in supported]
            chosen = tuple(c for c in wanted if c not in unsupported)
            info["unsupported"] = unsupported
            if unsupported:
                info["notes"].append(f"{self.detector} does not know {', '.join(unsupported)}: documents labelled "
                                     "so can never be detected correctly (they still count)")
            if self.detector == "lingua" and len(chosen) < 2:
                info["notes"].append(f"fewer than two supported candidate languages ({list(chosen)}): a one-language "
                                     "detector is always right, so every lingua language is loaded instead")
                chosen = None if supported is None else tuple(supported)
        info["languages"] = "all supported" if chosen is None else list(chosen)
        return chosen, info

    def _chosen_for(self, context: tuple[str, ...]) -> tuple[tuple[str, ...] | None, dict[str, Any]]:
        if context not in self._chosen:
            self._chosen[context] = self.candidates(set(context))
        return self._chosen[context]

    def _detector_for(self, chosen: tuple[str, ...] | None) -> tuple[Any, str]:
        """The detector over ``chosen``, or the message why it cannot be built."""
        from ingestaudit.stages.language import get_detector

        opts = self.opts
        if self.detector == "lingua":
            kwargs = {"min_relative_distance": opts["min_relative_distance"], "low_accuracy": opts["low_accuracy"]}
        else:
            kwargs = opts["detector_options"]
        try:
            return get_detector(self.detector, chosen, kwargs), ""
        except Exception as exc:  # a detector that cannot be built: error rows, named
            return None, f"language detector {self.detector!r} could not be built: {type(exc).__name__}: {exc}"

    def cache_identity(self, parsed: ParsedDocument, reference: str | None, context: tuple[str, ...]
                       ) -> dict[str, Any] | None:
        """What `run` reads, for the step cache (`ingestaudit.step_cache`): the options, lingua's version, the
        candidate languages of ``context``, and sha256 of the parsed text, of the reference text and of a
        precomputed ``language`` tag; None (never cached) for a detector other than the built-in lingua."""
        from ingestaudit.step_cache import canonical, text_hash

        if self.detector != "lingua":
            return None
        tag = parsed.extras.get("language") if self.opts["use_precomputed"] else None
        return {"step": "language", "detector": self.detector, "version": self.version(),
                "settings": self.settings(), "context": list(context), "text": text_hash(parsed.text or ""),
                "reference": text_hash(reference), "precomputed": text_hash(canonical(tag))}

    encode = staticmethod(language_to_json)
    decode = staticmethod(language_from_json)

    def run(self, parsed: ParsedDocument | None, reference: str | None, context: tuple[str, ...]
            ) -> LanguageDetection:
        """Detect the language of ``parsed`` (or read its precomputed tag) and run the mixed-language analysis, with
        the candidates of ``context`` (the corpus's labelled languages). ``parsed`` None: the candidates only
        (``ran`` False). Never raises for a detector problem: the message is in ``error`` / ``mixed_error``."""
        from ingestaudit.truth import normalize_language

        chosen, info = self._chosen_for(context)
        base = {"detector": self.detector, "mixed_on": self.opts["mixed"], "candidates": info}
        if parsed is None:
            return LanguageDetection(**base)
        predicted: str | None = None
        source = error = ""
        to_detect = True
        if self.opts["use_precomputed"] and "language" in parsed.extras:
            to_detect = False
            tag = parsed.extras["language"]
            source = "precomputed"
            if tag is not None and tag != "":
                try:
                    predicted = normalize_language(str(tag))
                except ValueError as exc:
                    error = f"precomputed language: {exc}"
        mixed_on = self.opts["mixed"]
        detector, why = self._detector_for(chosen) if to_detect or mixed_on else (None, "")
        detector_info = None
        if to_detect or mixed_on:
            detector_info = ({"note": why} if detector is None else
                             {"detector_version": detector.version(), "detector_settings": detector.settings()})
        if to_detect:
            if detector is None:
                error = why
            else:
                predicted, source, error = _detect_one(detector, parsed.text or "")
        mixed = None
        mixed_src = mixed_err = ""
        if mixed_on and detector is not None:
            if self.opts["mixed_text"] == "reference" and reference is not None:
                text, mixed_src = reference, "reference"
            else:
                text, mixed_src = parsed.text or "", "input"
            mixed, mixed_err = self._mixed(detector, text)
        return LanguageDetection(**base, ran=True, predicted=predicted, source=source, error=error, mixed=mixed,
                                 mixed_src=mixed_src, mixed_error=mixed_err, detector_info=detector_info)

    def _mixed(self, detector: Any, text: str) -> tuple[Any, str]:
        """The mixed-language analysis of ``text`` (a text analysed before in this process, e.g. the same reference
        text for another parser, comes from the cache), or the message of its failure."""
        from ingestaudit.stages.language import mixed_language

        from ingestaudit.step_cache import text_hash

        key = (id(detector), text_hash(text), self.opts["mixed_share"], self.opts["mixed_confirmation"])
        if key not in _MIXED_CACHE:
            if len(_MIXED_CACHE) > _MIXED_CACHE_SIZE:  # a worker audits many documents: keep the cache small
                _MIXED_CACHE.clear()
            try:
                _MIXED_CACHE[key] = mixed_language(detector, text, min_share=self.opts["mixed_share"],
                                                   min_confirmation=self.opts["mixed_confirmation"])
            except Exception as exc:
                return None, f"{type(exc).__name__}: {exc}"
        return _MIXED_CACHE[key], ""


def _detect_one(detector: Any, text: str) -> tuple[str | None, str, str]:
    """``(predicted, source, error)`` of one text: ``detect_many`` (the batch call), else ``detect``."""
    try:
        out = detector.detect_many([text])
        if len(out) != 1:
            raise ValueError(f"detect_many returned {len(out)} results for 1 texts")
        lang = out[0]
    except Exception:  # the single call, so the message is the document's own
        try:
            lang = detector.detect(text)
        except Exception as exc:
            return None, "", f"{type(exc).__name__}: {exc}"
    if lang is not None and not isinstance(lang, str):
        return None, "", f"detector returned {lang!r}, not a language code"
    return lang, detector.name, ""
