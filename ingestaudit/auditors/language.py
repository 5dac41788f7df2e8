"""Language auditor (stage ``language``): language identification against the ``language`` label of each document.

A corpus-level auditor: it sees every document of one parser at once, so that (1) the default candidate set is the
set of languages in the corpus's labels (lingua loads only those models), (2) the detector runs as one batch, and
(3) precision, recall and F1 per language, which exist only over a set of documents, can be computed.

What is detected: the parser's text (``ParsedDocument.text``): with ``--parser reference`` that is the reference text
(component level: the detector alone), with a real parser the parser's output (end to end: parsing errors included).
When the parser's output carries a precomputed ``language`` (``extras["language"]``, from ``--outputs``), that tag is
the prediction and no detector runs for that document (``null`` or an empty tag = abstained).

Rows per document with a ``language`` label (every other document gets ``no_reference`` rows):

- ``language.correct``: 1 when the prediction equals the label, else 0 (an abstention is 0); detail has ``true``,
  ``predicted`` (None = abstained) and ``source`` (detector name or ``precomputed``);
- ``language.abstained``: 1 when the detector abstained, else 0;
- ``language.mixed``: 1 when the document is mixed-language (see below), else 0, with the shares in the detail.

Corpus rows, per class and over all classes (``__all__``), over the *scored* documents (labelled, with stage output,
not mixed), definitions in `ingestaudit.metrics.classification` (an abstention is a miss for recall but a false
positive of no label):

- ``language.precision`` / ``language.recall`` / ``language.f1`` with label = the language code, for every language
  labelled or predicted in that class;
- ``language.macro_f1`` (over the languages labelled in that class), ``language.accuracy``, ``language.coverage``.

The labelled documents left out (no stage output, a detector error, mixed) are counted by their row's state in the
``states`` of their class's corpus rows (`CorpusResult.unreached`); ``n`` is the scored documents. A class with
labelled documents none of which was scored gets ``macro_f1``, ``accuracy`` and ``coverage`` without a value, in the
most frequent of those states, ``n`` = 0.

Details: ``confusion_matrix`` (per class and ``__all__``; rows = true, columns = predicted + abstained),
``top_confusions``, ``mixed_documents``, ``candidates`` (the languages the detector chose from and why), and
``selective_accuracy``.

**Mixed-language documents**: multi-language detection (`ingestaudit.stages.language.mixed_language`) runs on the
document's *reference text* when it has one (the flag is then a property of the document, the same for every parser
that produced output, so parser comparisons stay paired), else on the parser's text. A document the parser produced
nothing for gets all three rows in the parser's state (``skipped``, ``no_prediction``, ``error``). A document whose second language covers at least
``mixed_share`` of the text (and is confirmed) is flagged: its ``language.correct`` and ``language.abstained`` rows are
``skipped`` with the reason, it is left out of the corpus rows, and it is listed in ``details["mixed_documents"]``
with its shares and whether the prediction is one of its languages. The analysis uses the detector under audit with
the same candidate languages (so, by default, it finds only languages that occur in the labels); documents with a
precomputed tag still need the detector for it (``mixed = false`` turns it off).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from dataclasses import dataclass

from ingestaudit.auditors.base import ArtefactItem, CorpusAuditor, CorpusResult
from ingestaudit.auditors.rates import score_from_rate
from ingestaudit.auditors.reach import count_states, parse_state, unreached_rows
from ingestaudit.model import ParsedDocument
from ingestaudit.measurement import Score, State
from ingestaudit.metrics import classification as cl
from ingestaudit.metrics.specs import MetricSpec, register
from ingestaudit.report.schema import ALL_CLASSES
from ingestaudit.stages.language import MIXED_MIN_CONFIRMATION, MIXED_MIN_SHARE
from ingestaudit.truth import Truth

METRICS = (
    MetricSpec("language.correct", "1 when the detected language (ISO 639-1) equals the document's label, else 0; an "
               "abstention counts 0; per document (micro over documents = accuracy)", higher_is_better=True,
               ci="wilson", unit="docs"),
    MetricSpec("language.abstained", "1 when the detector gave no language (lingua below its minimum relative "
               "distance, or text without letters), else 0; per document", higher_is_better=False, ci="wilson",
               unit="docs"),
    MetricSpec("language.mixed", "1 when multi-language detection finds a second language covering at least the "
               "mixed_share of the text's non-white-space characters (confirmed by re-scoring), else 0; per document; "
               "mixed documents are not scored as single-label errors", higher_is_better=False, ci="wilson",
               unit="docs"),
    MetricSpec("language.precision", "tp / (tp + fp) over scored documents for the language in label (ISO 639-1); "
               "abstentions are false positives of no language; corpus level", higher_is_better=True, ci="wilson",
               unit="docs"),
    MetricSpec("language.recall", "tp / (tp + fn) over scored documents of the language in label; an abstention is a "
               "miss (fn); corpus level", higher_is_better=True, ci="wilson", unit="docs"),
    MetricSpec("language.f1", "2tp / (2tp + fp + fn) for the language in label (van Rijsbergen F1 on counts); "
               "corpus level, bootstrap interval over documents", higher_is_better=True, unit="docs"),
    MetricSpec("language.macro_f1", "mean of language.f1 over the languages labelled in the class (scikit-learn "
               "f1_score(labels=true labels, average='macro')); corpus level", higher_is_better=True),
    MetricSpec("language.accuracy", "correct / scored documents, abstentions counted as errors; corpus level",
               higher_is_better=True, ci="wilson", unit="docs"),
    MetricSpec("language.coverage", "documents with a detected language / scored documents (share not abstained); "
               "corpus level", higher_is_better=True, ci="wilson", unit="docs"),
)
register(*METRICS)

LANGUAGE_SETS = ("labels", "all")
"""Named candidate sets: ``labels`` = the languages in the corpus's labels, ``all`` = every language the detector
supports. A list of codes is also accepted."""

MIXED_TEXTS = ("reference", "input")
"""Which text the mixed-language analysis reads: the reference text when the document has one (else the input), or
always the stage input (the parser's text)."""

DOC_METRICS = ("language.correct", "language.abstained", "language.mixed")
CORPUS_SUMMARY_METRICS = ("language.macro_f1", "language.accuracy", "language.coverage")
"""The corpus rows a class gets whatever its labels (per-language rows exist only for languages seen)."""


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class LanguageArtefact:
    """What the language auditor keeps of one document x pipeline (computed in the run's worker).

    Attributes:
        label: the truth's ``language`` (None: unlabelled, no detection runs).
        predicted: the detected or precomputed language (None: abstained, or nothing ran).
        source: the detector's name or ``precomputed`` (``""``: nothing predicted).
        error: why there is no prediction (a detector that raised or could not be built, a bad precomputed tag).
        mixed: the mixed-language analysis (`ingestaudit.stages.language.MixedResult`, or None).
        mixed_src: which text it read (``reference`` or ``input``; ``""``: no analysis ran).
        mixed_error: why the analysis failed.
        detector: ``{"detector_version", "detector_settings"}`` of the detector built for this document, or
            ``{"note": message}`` when it could not be built; None when no detector was needed.
    """

    label: str | None
    predicted: str | None = None
    source: str = ""
    error: str = ""
    mixed: Any = None
    mixed_src: str = ""
    mixed_error: str = ""
    detector: dict[str, Any] | None = None


class LanguageAuditor(CorpusAuditor):
    """Audits language identification per document and per language (see the module docstring).

    Args:
        detector: detector name (``lingua``, an entry point of ``ingestaudit.language_detectors``, or
            ``"module:Class"``).
        languages: candidate set: ``"labels"`` (default: the languages in the corpus labels), ``"all"``, or a list of
            codes (ISO 639-1/639-3/BCP 47, mapped with langcodes).
        min_relative_distance: lingua's minimum relative distance in [0, 0.99]; below it lingua abstains. 0 (lingua's
            default) abstains only on text without letters.
        low_accuracy: lingua's low-accuracy mode.
        detector_options: keyword options for a non-lingua detector.
        mixed: run the mixed-language analysis (False: every labelled document is scored as single-label).
        mixed_share: share of non-white-space characters a second language must cover for a document to be mixed,
            in (0, 0.5].
        mixed_confirmation: minimum ``p2 / (p1 + p2)`` when re-scoring the second language's segments (0 = off).
        mixed_text: ``"reference"`` or ``"input"`` (`MIXED_TEXTS`).
        use_precomputed: read ``extras["language"]`` of precomputed outputs as the prediction.
        top_k: number of top confusions in the details.
        seed, n_resamples, confidence: the percentile bootstrap of F1 and macro F1 (documents resampled).

    Raises:
        ValueError: an option out of range, an unknown language set or mixed_text, an invalid language code, or
            lingua-only options given with another detector.
    """

    stage = "language"
    metrics = METRICS

    def __init__(self, detector: str = "lingua", languages: str | Sequence[str] = "labels",
                 min_relative_distance: float = 0.0, low_accuracy: bool = False,
                 detector_options: dict[str, Any] | None = None, mixed: bool = True, mixed_share: float = MIXED_MIN_SHARE,
                 mixed_confirmation: float = MIXED_MIN_CONFIRMATION, mixed_text: str = "reference", use_precomputed: bool = True,
                 top_k: int = 10, seed: int = 0, n_resamples: int = 1000, confidence: float = 0.95):
        from ingestaudit.truth import normalize_language

        if isinstance(languages, str):
            if languages not in LANGUAGE_SETS:
                raise ValueError(f"languages must be one of {', '.join(LANGUAGE_SETS)} or a list of codes, got "
                                 f"{languages!r}")
            self.languages: str | tuple[str, ...] = languages
        else:
            self.languages = tuple(sorted({normalize_language(c) for c in languages}))
        if not 0.0 <= float(min_relative_distance) <= 0.99:
            raise ValueError(f"min_relative_distance must be in [0, 0.99], got {min_relative_distance}")
        if detector != "lingua" and (min_relative_distance or low_accuracy):
            raise ValueError("min_relative_distance and low_accuracy are lingua options; give other detectors their "
                             "options in detector_options")
        if not 0 < mixed_share <= 0.5:
            raise ValueError(f"mixed_share must be in (0, 0.5], got {mixed_share}")
        if not 0 <= mixed_confirmation <= 1:
            raise ValueError(f"mixed_confirmation must be in [0, 1], got {mixed_confirmation}")
        if mixed_text not in MIXED_TEXTS:
            raise ValueError(f"mixed_text must be one of {', '.join(MIXED_TEXTS)}, got {mixed_text!r}")
        if top_k < 0 or n_resamples < 1 or not 0 < confidence < 1:
            raise ValueError("top_k must be >= 0, n_resamples >= 1 and confidence in (0, 1)")
        self.detector = detector
        self.min_relative_distance = float(min_relative_distance)
        self.low_accuracy = bool(low_accuracy)
        self.detector_options = dict(detector_options or {})
        self.mixed = bool(mixed)
        self.mixed_share = float(mixed_share)
        self.mixed_confirmation = float(mixed_confirmation)
        self.mixed_text = mixed_text
        self.use_precomputed = bool(use_precomputed)
        self.top_k, self.seed, self.n_resamples, self.confidence = int(top_k), int(seed), int(n_resamples), confidence
        self._mixed_cache: dict[tuple, Any] = {}
        self._detectors: dict[tuple[str, ...] | None, Any] = {}  # per worker process: candidates -> detector or error
        self._chosen: dict[tuple[str, ...], tuple[str, ...] | None] = {}  # per worker process: labels -> candidates

    def options(self) -> dict[str, Any]:
        """Every option that changes the numbers."""
        return {
            "detector": self.detector,
            "languages": self.languages if isinstance(self.languages, str) else list(self.languages),
            "min_relative_distance": self.min_relative_distance,
            "low_accuracy": self.low_accuracy,
            "detector_options": self.detector_options,
            "mixed": self.mixed,
            "mixed_share": self.mixed_share,
            "mixed_confirmation": self.mixed_confirmation,
            "mixed_text": self.mixed_text,
            "mixed_share_unit": "non-white-space code points of the segments",
            "use_precomputed": self.use_precomputed,
            "abstention": "a miss (fn) for recall and accuracy, a false positive of no label",
            "macro_f1_over": "languages labelled in the class",
            "top_k": self.top_k,
            "bootstrap": {"seed": self.seed, "n_resamples": self.n_resamples, "confidence": self.confidence},
        }

    def applies(self, truth: Truth) -> bool:
        """True when the document has a ``language`` label."""
        return truth.language is not None

    # -- detector ------------------------------------------------------------------------------------------------

    def _candidates(self, labels: set[str]) -> tuple[tuple[str, ...] | None, dict[str, Any]]:
        """The candidate set for the detector and a description of how it was chosen."""
        from ingestaudit.stages.language import detector_class

        info: dict[str, Any] = {"requested": self.languages if isinstance(self.languages, str)
                                else list(self.languages), "notes": []}
        try:
            supported = detector_class(self.detector).supported_languages()
        except Exception as exc:  # reported when the detector is built
            supported = None
            info["notes"].append(f"supported languages unknown: {type(exc).__name__}: {exc}")
        if self.languages == "all":
            chosen = None if supported is None else tuple(supported)
        else:
            wanted = sorted(labels) if self.languages == "labels" else list(self.languages)
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

    def _build(self, chosen: tuple[str, ...] | None) -> Any:
        from ingestaudit.stages.language import get_detector

        if self.detector == "lingua":
            opts = {"min_relative_distance": self.min_relative_distance, "low_accuracy": self.low_accuracy}
        else:
            opts = self.detector_options
        return get_detector(self.detector, chosen, opts)

    def _mixed(self, detector: Any, texts: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
        """Mixed-language results per doc id (one batch; texts analysed before, e.g. the same reference text for
        another parser, come from this auditor's cache), and errors per doc id."""
        from ingestaudit.stages.language import mixed_language, mixed_languages

        keys = {d: (id(detector), _key(t), self.mixed_share, self.mixed_confirmation) for d, t in texts.items()}
        todo = {keys[d]: t for d, t in texts.items() if keys[d] not in self._mixed_cache}
        if len(self._mixed_cache) > 1024:  # a worker audits many documents: keep the cache small
            self._mixed_cache.clear()
        errors: dict[str, str] = {}
        if todo:
            opts = {"min_share": self.mixed_share, "min_confirmation": self.mixed_confirmation}
            try:
                self._mixed_cache.update(zip(todo, mixed_languages(detector, list(todo.values()), **opts)))
            except Exception:  # one by one, so one bad text fails alone
                for k, t in todo.items():
                    try:
                        self._mixed_cache[k] = mixed_language(detector, t, **opts)
                    except Exception as exc:
                        errors[k] = f"{type(exc).__name__}: {exc}"
        out = {d: self._mixed_cache[k] for d, k in keys.items() if k in self._mixed_cache}
        return out, {d: errors[k] for d, k in keys.items() if k in errors}

    # -- corpus --------------------------------------------------------------------------------------------------

    def corpus_values(self, truth: Truth) -> tuple[str, ...]:
        """The document's language label: the candidate set ``labels`` is the set of labels of the corpus."""
        return (truth.language,) if truth.language is not None else ()

    def _detector_for(self, chosen: tuple[str, ...] | None) -> tuple[Any, str]:
        """The detector over ``chosen`` (built once per process), or the message why it cannot be built."""
        if chosen not in self._detectors:
            try:
                self._detectors[chosen] = (self._build(chosen), "")
            except Exception as exc:  # a detector that cannot be built: error rows, named
                self._detectors[chosen] = (None, f"language detector {self.detector!r} could not be built: "
                                                 f"{type(exc).__name__}: {exc}")
        return self._detectors[chosen]

    def artefact(self, truth: Truth, parsed: ParsedDocument | None, context: tuple[str, ...]) -> LanguageArtefact:
        """Detect one labelled document's language (or read its precomputed tag) and run the mixed-language
        analysis, with the candidate set of the corpus's labels (``context``)."""
        from ingestaudit.truth import normalize_language

        label = truth.language
        if label is None or parsed is None:
            return LanguageArtefact(label)
        if context not in self._chosen:
            self._chosen[context] = self._candidates(set(context))[0]
        chosen = self._chosen[context]
        predicted: str | None = None
        source = error = ""
        to_detect = True
        if self.use_precomputed and "language" in parsed.extras:
            to_detect = False
            tag = parsed.extras["language"]
            source = "precomputed"
            if tag is not None and tag != "":
                try:
                    predicted = normalize_language(str(tag))
                except ValueError as exc:
                    error = f"precomputed language: {exc}"
        detector, why = (self._detector_for(chosen) if to_detect or self.mixed else (None, ""))
        info = None
        if to_detect or self.mixed:
            info = ({"note": why} if detector is None else
                    {"detector_version": detector.version(), "detector_settings": detector.settings()})
        if to_detect:
            if detector is None:
                error = why
            else:
                predicted, source, error = self._detect_one(detector, parsed.text or "")
        mixed = None
        mixed_src = mixed_err = ""
        if self.mixed and detector is not None:
            if self.mixed_text == "reference" and truth.text is not None:
                text, mixed_src = truth.text, "reference"
            else:
                text, mixed_src = parsed.text or "", "input"
            found, errs = self._mixed(detector, {"doc": text})
            mixed, mixed_err = found.get("doc"), errs.get("doc", "")
        return LanguageArtefact(label, predicted, source, error, mixed, mixed_src, mixed_err, info)

    def _detect_one(self, detector: Any, text: str) -> tuple[str | None, str, str]:
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

    def audit_artefacts(self, items: list[ArtefactItem], context: tuple[str, ...] = ()) -> CorpusResult:
        """Score one pipeline's corpus from its documents' artefacts (see the module docstring). Never raises for
        bad stage output; a detector that cannot be built gives ``error`` rows with its message."""
        result = CorpusResult()
        labelled = [it for it in items if it.artefact.label is not None]
        for it in items:
            if it.artefact.label is None:
                result.doc_scores += [(it.doc_id, Score.missing(m, State.NO_REFERENCE, "no language label"))
                                      for m in DOC_METRICS]
        labels = set(context) if labelled else set()
        chosen, cand_info = self._candidates(labels) if labelled else (None, {"notes": ["no labelled documents"]})
        cand_info["detector"] = self.detector
        predicted: dict[str, str | None] = {}
        source: dict[str, str] = {}
        errors: dict[str, str] = {}
        mixed: dict[str, Any] = {}
        mixed_src: dict[str, str] = {}
        mixed_err: dict[str, str] = {}
        built = None
        for it in labelled:
            a = it.artefact
            if it.state is not State.OK:
                continue
            if a.error:
                errors[it.doc_id] = a.error
            elif a.source:
                predicted[it.doc_id], source[it.doc_id] = a.predicted, a.source
            if a.mixed_src:
                mixed_src[it.doc_id] = a.mixed_src
                if a.mixed_error:
                    mixed_err[it.doc_id] = a.mixed_error
                else:
                    mixed[it.doc_id] = a.mixed
            if built is None and a.detector is not None:
                built = a.detector
        if built is not None:
            if "note" in built:
                cand_info["notes"].append(built["note"])
            else:
                cand_info.update(built)
        detector = built

        # per-document rows
        scored: list[ArtefactItem] = []
        mixed_docs: list[dict[str, Any]] = []
        unscored: dict[str, int] = {}
        left_out: list[tuple[str, State]] = []  # labelled documents not in the corpus rows, by their row's state
        for it in labelled:
            rows, is_scored = self._doc_rows(it, predicted, source, errors, mixed, mixed_src, mixed_err, detector)
            result.doc_scores += [(it.doc_id, s) for s in rows]
            if is_scored:
                scored.append(it)
            else:
                left_out.append((it.doc_class, rows[0].state))
                reason = ("mixed" if (m := mixed.get(it.doc_id)) is not None and m.mixed
                          else (parse_state(it).value if it.state is not State.OK else "error"))
                unscored[reason] = unscored.get(reason, 0) + 1
            m = mixed.get(it.doc_id)
            if m is not None and m.mixed:
                langs = [lang for lang, _ in m.shares]
                pred = predicted.get(it.doc_id)
                mixed_docs.append({"doc_id": it.doc_id, "doc_class": it.doc_class, "true": it.artefact.label,
                                   "predicted": pred, "predicted_in_found": pred in langs,
                                   "true_in_found": it.artefact.label in langs, "text": mixed_src[it.doc_id],
                                   **m.to_dict()})

        # corpus rows per class and over all
        pairs_by_class: dict[str, list[tuple[str, str | None]]] = {}
        for it in scored:
            pair = (it.artefact.label, predicted[it.doc_id])
            pairs_by_class.setdefault(it.doc_class, []).append(pair)  # type: ignore[arg-type]
        groups = {cls: pairs_by_class[cls] for cls in sorted(pairs_by_class)}
        groups[ALL_CLASSES] = [p for cls in sorted(pairs_by_class) for p in pairs_by_class[cls]]
        result.unreached = count_states(left_out)
        for cls, missing in result.unreached.items():  # a class none of whose labelled documents was scored
            if cls not in groups or (cls == ALL_CLASSES and not groups[cls]):
                result.corpus_scores += [(cls, s, 0) for s in unreached_rows(CORPUS_SUMMARY_METRICS, missing)]
        confusion: dict[str, Any] = {}
        selective: dict[str, Any] = {}
        for cls, pairs in groups.items():
            counts = cl.tally(pairs)
            if pairs or cls not in result.unreached:  # else: rows given above, in the state that kept them out
                result.corpus_scores += [(cls, s, counts.n) for s in self._corpus_rows(counts, pairs)]
            confusion[cls] = cl.confusion_table(counts)
            sel = cl.selective_accuracy(counts)
            selective[cls] = {"value": sel.value, "numerator": sel.numerator, "denominator": sel.denominator,
                              "reason": sel.reason}
        all_counts = cl.tally(groups[ALL_CLASSES])
        result.details = {
            "candidates": cand_info,
            "confusion_matrix": confusion,
            "top_confusions": [{"true": c.true, "predicted": c.predicted, "count": c.count}
                               for c in cl.top_confusions(all_counts, self.top_k)],
            "abstentions_by_label": {lab: lc.abstained for lab, lc in all_counts.per_label.items()
                                     if lc.abstained},
            "selective_accuracy": selective,
            "mixed_documents": mixed_docs,
            "unscored": dict(sorted(unscored.items())),
        }
        return result

    def _doc_rows(self, it: ArtefactItem, predicted: dict[str, str | None], source: dict[str, str],
                  errors: dict[str, str], mixed: dict[str, Any], mixed_src: dict[str, str],
                  mixed_err: dict[str, str], detector: Any) -> tuple[list[Score], bool]:
        """The three rows of one labelled document, and whether it is scored in the corpus rows."""
        names = ("language.correct", "language.abstained")
        if it.state is not State.OK:
            return [Score.missing(n, parse_state(it), it.reason or "no stage output") for n in DOC_METRICS], False
        # language.mixed
        m = mixed.get(it.doc_id)
        if not self.mixed:
            mixed_row = Score.missing("language.mixed", State.SKIPPED, "mixed-language detection is off "
                                      "(mixed = false)")
        elif it.doc_id in mixed_err:
            mixed_row = Score.missing("language.mixed", State.ERROR, mixed_err[it.doc_id])
        elif m is not None:
            mixed_row = Score.ratio("language.mixed", int(m.mixed), 1,
                                    detail={"text": mixed_src[it.doc_id], **m.to_dict()})
        elif it.doc_id in mixed_src:
            mixed_row = Score.missing("language.mixed", State.SKIPPED,
                                      f"detector {self.detector!r} does not do multi-language detection")
        else:
            mixed_row = Score.missing("language.mixed", State.ERROR, "no detector to segment the text")
        # language.correct / language.abstained
        if it.doc_id in errors:
            return [Score.missing(n, State.ERROR, errors[it.doc_id]) for n in names] + [mixed_row], False
        pred = predicted[it.doc_id]
        detail = {"true": it.artefact.label, "predicted": pred, "source": source[it.doc_id]}
        if m is not None and m.mixed:
            reason = (f"mixed-language document ({m.second} covers {m.second_share:.0%} of the "
                      f"{mixed_src[it.doc_id]} text): not scored as a single-label error")
            return [Score(n, None, None, None, State.SKIPPED, "", {**detail, "reason": reason})
                    for n in names] + [mixed_row], False
        return [Score.ratio("language.correct", int(pred == it.artefact.label), 1, detail=detail),
                Score.ratio("language.abstained", int(pred is None), 1, detail=detail), mixed_row], True

    def _corpus_rows(self, counts: cl.ClassificationCounts, pairs: list[tuple[str, str | None]]) -> list[Score]:
        from ingestaudit.metrics.intervals import wilson

        def ratio(metric: str, rate: cl.Rate, label: str = "", ci: Any = None) -> Score:
            if rate.value is None:
                return Score.missing(metric, State(rate.state), rate.reason or "", label=label)
            detail: dict[str, Any] = {}
            if ci == "wilson":
                iv = wilson(rate.numerator, rate.denominator, self.confidence)
                if iv is not None:
                    detail["ci"] = {"low": iv.low, "high": iv.high, "method": iv.method}
            elif ci is not None:
                detail["ci"] = ci
            return score_from_rate(metric, rate, label=label, detail=detail)

        if counts.n == 0:
            return [Score.missing(m, State.NO_REFERENCE, "no scored documents")
                    for m in ("language.macro_f1", "language.accuracy", "language.coverage")]
        boot = cl.bootstrap_f1(pairs, seed=self.seed, n_resamples=self.n_resamples, confidence=self.confidence)
        rows = []
        for lab in counts.labels:
            rows.append(ratio("language.precision", cl.precision(counts, lab), lab, "wilson"))
            rows.append(ratio("language.recall", cl.recall(counts, lab), lab, "wilson"))
            f1_ci = None
            if boot is not None and boot.per_label.get(lab) is not None:
                lo, hi = boot.per_label[lab]  # type: ignore[misc]
                f1_ci = {"low": lo, "high": hi, "method": boot.method}
            f1 = cl.f1(counts, lab)
            rows.append(ratio("language.f1", f1, lab, f1_ci))
        macro = cl.macro_f1(counts)
        detail: dict[str, Any] = {"labels": list(macro.labels)}
        if boot is not None and boot.macro is not None:
            detail["ci"] = {"low": boot.macro[0], "high": boot.macro[1], "method": boot.method}
        rows.append(Score("language.macro_f1", macro.value, None, None, State.OK, "", detail))
        rows.append(ratio("language.accuracy", cl.accuracy(counts), ci="wilson"))
        rows.append(ratio("language.coverage", cl.coverage(counts), ci="wilson"))
        return rows
