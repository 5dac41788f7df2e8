"""Language auditor (stage ``language``): language identification against the ``language`` label of each document.

A corpus-level auditor: it sees every document of one parser at once, so that (1) the default candidate set is the
set of languages in the corpus's labels (lingua loads only those models), (2) the detector runs as one batch, and
(3) precision, recall and F1 per language, which exist only over a set of documents, can be computed.

The detection itself is the pipeline's ``language`` step (`ingestaudit.stages.language_step`, run in the worker
once per labelled document x pipeline); this auditor only reads its artefacts (`ingestaudit.detections`), so two
pipelines with two detectors or two settings are two report columns of one run.

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

**Mixed-language documents**: multi-language detection (the step's `ingestaudit.stages.language.mixed_language`) runs
on the document's *reference text* when it has one (the flag is then a property of the document, the same for every parser
that produced output, so parser comparisons stay paired), else on the parser's text. A document the parser produced
nothing for gets all three rows in the parser's state (``skipped``, ``no_prediction``, ``error``), and one whose
parsed text is empty gets them ``no_prediction`` (`NO_TEXT`; it is left out of the corpus rows). A document whose
second language covers at least ``mixed_share`` of the text (and is confirmed) is flagged: its ``language.correct`` and ``language.abstained`` rows are
``skipped`` with the reason, it is left out of the corpus rows, and it is listed in ``details["mixed_documents"]``
with its shares and whether the prediction is one of its languages. The analysis uses the detector under audit with
the same candidate languages (so, by default, it finds only languages that occur in the labels); documents with a
precomputed tag still need the detector for it (``mixed = false`` turns it off).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ingestaudit.auditors.base import ArtefactItem, Auditor, CorpusResult, ItemArtefacts, Scope
from ingestaudit.auditors.rates import score_from_rate
from ingestaudit.auditors.reach import count_states, parse_state, unreached_rows
from ingestaudit.measurement import Score, State
from ingestaudit.metrics import classification as cl
from ingestaudit.metrics.specs import MetricSpec, register
from ingestaudit.report.schema import ALL_CLASSES
from ingestaudit.detections import (LANGUAGE_STEP_DEFAULTS, MIXED_MIN_CONFIRMATION, MIXED_MIN_SHARE, LanguageDetection,
                                    check_language_options, language_settings)
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

DOC_METRICS = ("language.correct", "language.abstained", "language.mixed")
CORPUS_SUMMARY_METRICS = ("language.macro_f1", "language.accuracy", "language.coverage")
"""The corpus rows a class gets whatever its labels (per-language rows exist only for languages seen)."""


@dataclass(frozen=True)
class LanguageArtefact:
    """What the language auditor keeps of one document x pipeline (computed in the run's worker from the
    ``language`` step's `ingestaudit.detections.LanguageDetection`).

    Attributes:
        label: the truth's ``language`` (None: unlabelled, no detection runs).
        predicted, source, error, mixed, mixed_src, mixed_error: as the detection's.
        detector: the detection's ``detector_info``.
        detector_name: the pipeline's language step's detector (``""``: no step output).
        mixed_on: the step ran the mixed-language analysis (option ``mixed``).
        candidates: how the step chose its candidate languages (None: no step output).
        no_text: the detector ran on the parser's text and it is empty (white space only): the document's rows are
            ``no_prediction`` (`NO_TEXT`), never a wrong or abstained prediction counted against the parser twice
            (its extraction rows already say it; a 0 here read as a language failure).
    """

    label: str | None
    predicted: str | None = None
    source: str = ""
    error: str = ""
    mixed: Any = None
    mixed_src: str = ""
    mixed_error: str = ""
    detector: dict[str, Any] | None = None
    detector_name: str = ""
    mixed_on: bool = True
    candidates: dict[str, Any] | None = None
    no_text: bool = False


NO_TEXT = "the parser returned no text (white space only): no language to detect"
"""The reason of a document's rows when its parsed text is empty (`LanguageArtefact.no_text`)."""


class LanguageAuditor(Auditor):
    """Audits language identification per document and per language (see the module docstring) from what each
    pipeline's ``language`` step detected (`ingestaudit.detections.LanguageDetection`); it loads no detector.

    The options up to ``use_precomputed`` configure the detector, not the metric: they are the default options of
    every pipeline's ``language`` step (``detector`` is the step's ``use``), checked by
    `ingestaudit.detections.check_language_options`; a pipeline's own ``language`` table overrides them option by
    option (`ingestaudit.steps`).

    Args:
        detector: step default: detector name (``lingua``, an entry point of ``ingestaudit.language_detectors``, or
            ``"module:Class"``).
        languages: step default: candidate set: ``"labels"`` (default: the languages in the corpus labels),
            ``"all"``, or a list of codes (ISO 639-1/639-3/BCP 47, mapped with langcodes).
        min_relative_distance: step default: lingua's minimum relative distance in [0, 0.99]; below it lingua
            abstains. 0 (lingua's default) abstains only on text without letters.
        low_accuracy: step default: lingua's low-accuracy mode.
        detector_options: step default: keyword options for a non-lingua detector.
        mixed: step default: run the mixed-language analysis (False: every labelled document is scored as
            single-label).
        mixed_share: step default: share of non-white-space characters a second language must cover for a document
            to be mixed, in (0, 0.5].
        mixed_confirmation: step default: minimum ``p2 / (p1 + p2)`` when re-scoring the second language's segments
            (0 = off).
        mixed_text: step default: ``"reference"`` or ``"input"`` (`ingestaudit.detections.MIXED_TEXTS`).
        use_precomputed: step default: read ``extras["language"]`` of precomputed outputs as the prediction.
        top_k: number of top confusions in the details.
        seed, n_resamples, confidence: the percentile bootstrap of F1 and macro F1 (documents resampled).

    Raises:
        ValueError: an option out of range, an unknown language set or mixed_text, an invalid language code, or
            lingua-only options given with another detector.
    """

    stage = "language"
    scope = Scope.CORPUS
    reads = frozenset({"language"})
    metrics = METRICS

    def __init__(self, detector: str = "lingua", languages: str | Sequence[str] = "labels",
                 min_relative_distance: float = 0.0, low_accuracy: bool = False,
                 detector_options: dict[str, Any] | None = None, mixed: bool = True, mixed_share: float = MIXED_MIN_SHARE,
                 mixed_confirmation: float = MIXED_MIN_CONFIRMATION, mixed_text: str = "reference", use_precomputed: bool = True,
                 top_k: int = 10, seed: int = 0, n_resamples: int = 1000, confidence: float = 0.95):
        self.step_defaults = check_language_options({
            "detector": detector, "languages": languages, "min_relative_distance": min_relative_distance,
            "low_accuracy": low_accuracy, "detector_options": detector_options, "mixed": mixed,
            "mixed_share": mixed_share, "mixed_confirmation": mixed_confirmation, "mixed_text": mixed_text,
            "use_precomputed": use_precomputed})
        if top_k < 0 or n_resamples < 1 or not 0 < confidence < 1:
            raise ValueError("top_k must be >= 0, n_resamples >= 1 and confidence in (0, 1)")
        self.top_k, self.seed, self.n_resamples, self.confidence = int(top_k), int(seed), int(n_resamples), confidence

    def step_options(self) -> dict[str, Any]:
        """The default options of the pipelines' ``language`` step (those a pipeline's own table does not set)."""
        return {k: v for k, v in language_settings(self.step_defaults).items() if v != LANGUAGE_STEP_DEFAULTS[k]}

    def options(self) -> dict[str, Any]:
        """Every option that changes the numbers (the step's defaults among them, as configured here)."""
        step = language_settings(self.step_defaults)
        return {
            **{k: step[k] for k in ("detector", "languages", "min_relative_distance", "low_accuracy",
                                    "detector_options", "mixed", "mixed_share", "mixed_confirmation", "mixed_text")},
            "mixed_share_unit": "non-white-space code points of the segments",
            "use_precomputed": step["use_precomputed"],
            "abstention": "a miss (fn) for recall and accuracy, a false positive of no label",
            "macro_f1_over": "languages labelled in the class",
            "top_k": self.top_k,
            "bootstrap": {"seed": self.seed, "n_resamples": self.n_resamples, "confidence": self.confidence},
        }

    def applies(self, truth: Truth) -> bool:
        """True when the document has a ``language`` label."""
        return truth.language is not None

    # -- corpus --------------------------------------------------------------------------------------------------

    def corpus_values(self, truth: Truth) -> tuple[str, ...]:
        """The document's language label: the candidate set ``labels`` is the set of labels of the corpus."""
        return (truth.language,) if truth.language is not None else ()

    def artefact(self, item: ItemArtefacts, context: tuple[str, ...]) -> LanguageArtefact:
        """What the audit keeps of one document: its label and what the pipeline's ``language`` step detected
        (``item.steps["language"]``, a `LanguageDetection`; absent: the step did not run for it)."""
        truth = item.truth
        detection: LanguageDetection | None = item.steps.get("language")
        label = truth.language
        if label is None or detection is None:
            return LanguageArtefact(label)
        step = {"detector_name": detection.detector, "mixed_on": detection.mixed_on,
                "candidates": detection.candidates}
        if not detection.ran:
            return LanguageArtefact(label, **step)
        no_text = (detection.source != "precomputed" and item.parsed is not None
                   and not (item.parsed.text or "").strip())
        return LanguageArtefact(label, detection.predicted, detection.source, detection.error, detection.mixed,
                                detection.mixed_src, detection.mixed_error, detection.detector_info, **step,
                                no_text=no_text)

    def audit_artefacts(self, items: list[ArtefactItem], context: tuple[str, ...] = ()) -> CorpusResult:
        """Score one pipeline's corpus from its documents' artefacts (see the module docstring). Never raises for
        bad stage output; a detector that cannot be built gives ``error`` rows with its message."""
        result = CorpusResult()
        labelled = [it for it in items if it.artefact.label is not None]
        for it in items:
            if it.artefact.label is None:
                result.doc_scores += [(it.doc_id, Score.missing(m, State.NO_REFERENCE, "no language label"))
                                      for m in DOC_METRICS]
        step = next((it.artefact for it in labelled if it.artefact.candidates is not None), None)
        if step is None:
            cand_info = {"notes": ["no labelled documents" if not labelled else "the language step did not run"]}
        else:
            cand_info = {**step.candidates, "notes": list(step.candidates.get("notes", ()))}
        cand_info["detector"] = step.detector_name if step is not None else self.step_defaults["detector"]
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
                          else State.NO_PREDICTION.value if it.artefact.no_text
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
        if it.artefact.no_text:
            return [Score.missing(n, State.NO_PREDICTION, NO_TEXT) for n in DOC_METRICS], False
        # language.mixed
        m = mixed.get(it.doc_id)
        if not it.artefact.mixed_on:
            mixed_row = Score.missing("language.mixed", State.SKIPPED, "mixed-language detection is off "
                                      "(mixed = false)")
        elif it.doc_id in mixed_err:
            mixed_row = Score.missing("language.mixed", State.ERROR, mixed_err[it.doc_id])
        elif m is not None:
            mixed_row = Score.ratio("language.mixed", int(m.mixed), 1,
                                    detail={"text": mixed_src[it.doc_id], **m.to_dict()})
        elif it.doc_id in mixed_src:
            mixed_row = Score.missing("language.mixed", State.SKIPPED,
                                      f"detector {it.artefact.detector_name!r} does not do multi-language "
                                      "detection")
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
