"""The ``pii`` step of a pipeline: the PII scrubber's predictions on one document.

Runs in the worker, once per labelled document x pipeline, after parsing (DESIGN.md, "Pipelines and the stage
chain": ``parse -> clean -> [scrub PII] -> ...``). Its options are `ingestaudit.detections.PII_STEP_DEFAULTS`; its
artefact, `ingestaudit.detections.PiiDetection`, is all the PII auditor reads.

The scrubber, per document: the spans a precomputed output carries (``extras["pii"]``, with
``prefer_precomputed``), else the configured one: ``presidio`` (`ingestaudit.stages.pii.PresidioDetector`), a user
detector, ``precomputed``, or ``redacted`` (a redacted text audited from the output side,
`ingestaudit.stages.pii.redaction_spans`). Inputs longer than ``max_chars`` are ``skipped``.
"""

from __future__ import annotations

from typing import Any

from ingestaudit.detections import PRESIDIO_OPTIONS, PiiDetection, check_pii_options
from ingestaudit.model import ParsedDocument


class PiiStep:
    """One pipeline's PII scrubber with its options (`ingestaudit.detections.check_pii_options`); the detector is
    built on first use (models load later still).

    Raises:
        ValueError: bad options (Presidio's included: they are checked here, nothing is loaded).
    """

    def __init__(self, **options: Any):
        self.opts = check_pii_options(options)
        self.scrubber = self.opts["scrubber"]
        self._detector: Any = None
        if self.scrubber == "presidio":
            from ingestaudit.stages.pii import PresidioDetector

            PresidioDetector(**self.detector_options())  # validates the options; loads nothing

    def detector_options(self) -> dict[str, Any]:
        """The keyword options the detector is built with (Presidio's, or ``detector_options``)."""
        if self.scrubber == "presidio":
            return {k: self.opts[k] for k in PRESIDIO_OPTIONS}
        return dict(self.opts["detector_options"])

    def settings(self) -> dict[str, Any]:
        """Every option, JSON-serialisable (``report.json["pipelines"][].stages["pii"].settings``)."""
        return {k: v for k, v in self.opts.items() if k != "scrubber"}

    def version(self) -> str:
        """presidio-analyzer's and the spaCy model's installed versions for Presidio (nothing is loaded);
        ``external`` for precomputed and redacted outputs; else the detector's ``version()``."""
        from ingestaudit.plugins import package_version

        if self.scrubber == "presidio":
            return (f"presidio-analyzer {package_version('presidio_analyzer') or 'not installed'}, "
                    f"{self.opts['spacy_model']} {package_version(self.opts['spacy_model']) or 'not installed'}")
        if self.scrubber in ("precomputed", "redacted"):
            return "external"
        try:
            return str(self.detector().version())
        except Exception as exc:
            return f"unavailable ({type(exc).__name__}: {exc})"

    def detector(self) -> Any:
        """The configured `ingestaudit.stages.pii.PiiDetector` (built on first use)."""
        if self._detector is None:
            from ingestaudit.stages.pii import load_detector

            self._detector = load_detector(self.scrubber, self.detector_options())
        return self._detector

    def _source(self, parsed: ParsedDocument) -> str:
        if self.scrubber == "redacted":
            return "redacted"
        if self.scrubber == "precomputed" or (self.opts["prefer_precomputed"] and parsed.extras.get("pii") is not None):
            return "precomputed"
        return "detector"

    def run(self, parsed: ParsedDocument | None, reference: str | None, context: tuple[str, ...] = ()
            ) -> PiiDetection:
        """The scrubber's predictions on one document (``parsed`` None: nothing to read, ``ran`` False;
        ``reference``: the reference text, the input of ``redacted_field = "text"``; ``context`` is not used: the
        steps share one call). Never raises for a scrubber problem: the state and message are in the artefact."""
        if parsed is None:
            return PiiDetection(self.scrubber)
        try:
            return self._run(parsed, reference)
        except Exception as exc:
            return PiiDetection(self.scrubber, True, state="error", reason=f"{type(exc).__name__}: {exc}")

    def _run(self, parsed: ParsedDocument, reference: str | None) -> PiiDetection:
        from ingestaudit.stages.pii import DetectorOutputError, precomputed_spans, redaction_spans

        source = self._source(parsed)
        if source == "redacted":
            if self.opts["redacted_field"] == "text":
                text, redacted = reference or "", parsed.text
            else:
                text, redacted = parsed.text or "", parsed.extras.get("clean_text")
                if redacted is None:
                    return PiiDetection(self.scrubber, True, state="no_prediction",
                                        reason="the output has no clean_text (redacted text)")
            rec = redaction_spans(text, redacted, self.opts["placeholder_pattern"])
            return PiiDetection(self.scrubber, True, f"redacted ({rec.method})", text, tuple(rec.spans), redacted)
        text = parsed.text or ""
        if len(text) > self.opts["max_chars"]:
            return PiiDetection(self.scrubber, True, input_text=text, state="skipped",
                                reason=f"scrubber input of {len(text)} code points exceeds "
                                       f"max_chars={self.opts['max_chars']}")
        if source == "precomputed":
            try:
                spans = precomputed_spans(parsed.extras, text)
            except DetectorOutputError as exc:
                return PiiDetection(self.scrubber, True, input_text=text, state="error",
                                    reason=f"precomputed pii spans: {exc}")
            if spans is None:
                return PiiDetection(self.scrubber, True, input_text=text, state="no_prediction",
                                    reason="the output carries no pii spans")
            return PiiDetection(self.scrubber, True, "precomputed", text, tuple(spans))
        return self._detect(text)

    def _detect(self, text: str) -> PiiDetection:
        """The configured detector on ``text``: its spans, vocabulary and description, or the error."""
        from ingestaudit.stages.pii import DetectorUnavailable, PiiDetectorError

        name = self.scrubber
        try:
            det = self.detector()
        except (PiiDetectorError, ValueError) as exc:
            return PiiDetection(name, True, input_text=text, state="error", reason=f"PII detector {name!r}: {exc}")
        spans = None
        try:
            (spans,) = det.detect_batch([text])
        except DetectorUnavailable as exc:
            return PiiDetection(name, True, input_text=text, state="error",
                                reason=f"PII detector {name!r} unavailable: {exc}", detector_info=self._info(det))
        except Exception:  # the single call, so the message is the document's own
            try:
                spans = det.detect(text)
            except Exception as exc:
                return PiiDetection(name, True, input_text=text, state="error", detector_info=self._info(det),
                                    reason=f"PII detector {name!r}: {type(exc).__name__}: {exc}")
        info = self._info(det)
        try:
            declared = det.supported_types()
            types, why = (None if declared is None else tuple(sorted(set(declared)))), ""
        except Exception as exc:
            types, why = None, f"{type(exc).__name__}: {exc}"
        return PiiDetection(name, True, name, text, None if spans is None else tuple(spans), detector_types=types,
                            detector_error=why, detector_info=info)

    def _info(self, det: Any) -> dict[str, Any] | None:
        try:
            return {"name": getattr(det, "name", self.scrubber), "version": det.version(), "settings": det.settings()}
        except Exception:
            return None
