"""Boilerplate auditor: how well the pipeline's cleaner keeps the main content and removes the rest, against three
label forms.

The auditor reads the pipeline's clean step (`ingestaudit.chain.Cleaning`, computed once per document x pipeline by
`ingestaudit.chain.clean_step`); it loads no cleaner. To compare cleaners, run one pipeline per cleaner:
``--sweep cleaner.use=none,trafilatura,repeated-lines`` or ``[pipelines.<name>] cleaner = ...``.

For every document with ``boilerplate`` truth (or a reference main text), rows with label ``""`` (definitions in
`ingestaudit.metrics.boilerplate`). The cleaner is the pipeline's (its name and settings are in the report's
pipelines): a cleaner sweep's pipelines then share every row's key, so the headline, the paired tests and the
verdict compare them (rows labelled with each pipeline's cleaner could never be paired across a sweep; stop 34, a
change from earlier reports, whose rows carried the cleaner's name as their label):

- **spans** (``boilerplate.text`` + ``boilerplate.spans``), component level: the clean step also runs the cleaner on
  that text, whatever the parser; ``boilerplate.precision``, ``boilerplate.recall``, ``boilerplate.f1`` over
  non-whitespace characters.
- **segments** (``boilerplate.with`` / ``boilerplate.without``), end to end: the cleaner's output on the parser's
  output (``trafilatura`` reads the raw HTML of the source); ``boilerplate.content_retention`` (only when ``with``
  is given) and ``boilerplate.removal_recall`` (only when ``without`` is given).
- **reference main text**, end to end: ``boilerplate.shingle_precision``, ``.shingle_recall``, ``.shingle_f1``.
  The main text is ``boilerplate.main_text`` when the truth schema has that field, or, with the option
  ``reference_is_main_text = true``, the document's reference text (``.txt`` / ``text``) for corpora whose
  reference is the hand-cleaned main content.

A metric family is reported only when its label form exists in the truth. States: nothing removed makes precision
``no_prediction`` (undefined, not 0); no labelled character makes recall ``no_reference``; an empty input (the
parser produced no text) makes every row of a text-reading cleaner ``no_prediction``; a cleaner that fails gives
``error`` rows with its message; a cleaner that cannot run on the input (`Cleaner.supports`: ``trafilatura``
without raw HTML, ``repeated-lines`` on one page...) gives ``skipped`` rows with the reason.

Precomputed outputs (DESIGN.md, "Precomputed outputs"): a precomputed pipeline's cleaner is ``precomputed``: its output is the ``clean_text`` the parsed output carries, or the parsed text unchanged when it
carries none (what the chain then chunks). For the spans form the precomputed ``clean_text`` is used only when the
precomputed ``text`` equals ``boilerplate.text`` (then it is that text's cleaned form); otherwise those rows are
``skipped``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ingestaudit.auditors.base import CLEAN, Auditor, ItemArtefacts, Scope
from ingestaudit.measurement import Score, State
from ingestaudit.metrics.boilerplate import (
    CHAR_DIFFLIB_MAX,
    DEFAULT_SHINGLE_SIZE,
    SEGMENT_WS,
    SHINGLE_TOKEN,
    align_removal,
    segment_counts,
    shingle_counts,
    span_counts_from_removal,
)
from ingestaudit.metrics.specs import MetricSpec, register
from ingestaudit.truth import Truth

METRICS = (
    MetricSpec("boilerplate.precision", "removed characters that are labelled boilerplate / removed characters, over "
               "non-whitespace code points of boilerplate.text, removal located by aligning the cleaner's output "
               "to its input; undefined (no_prediction) when nothing is removed",
               higher_is_better=True, unit="chars"),
    MetricSpec("boilerplate.recall", "labelled boilerplate characters removed / labelled boilerplate characters, over "
               "non-whitespace code points of boilerplate.text", higher_is_better=True, unit="chars"),
    MetricSpec("boilerplate.f1", "2·|removed ∩ labelled| / (|removed| + |labelled|) over non-whitespace code points "
               "of boilerplate.text (van Rijsbergen F1 from counts)", higher_is_better=True,
               unit="chars"),
    MetricSpec("boilerplate.content_retention", "'with' segments present in the cleaned output / 'with' segments; "
               "present = whitespace-normalized substring (trafilatura evaluation, tests/eval_common.py)",
               higher_is_better=True, unit="segments"),
    MetricSpec("boilerplate.removal_recall", "'without' segments absent from the cleaned output / 'without' "
               "segments; absent = not a whitespace-normalized substring (trafilatura evaluation)",
               higher_is_better=True, unit="segments"),
    MetricSpec("boilerplate.shingle_precision", "bag-of-shingles precision vs the reference main text: Σ min(counts) "
               "/ output shingles; shingles = 4 consecutive \\w+ tokens by default (Scrapinghub "
               "article-extraction-benchmark)", higher_is_better=True, unit="shingles"),
    MetricSpec("boilerplate.shingle_recall", "bag-of-shingles recall vs the reference main text: Σ min(counts) / "
               "reference shingles (4 \\w+ tokens by default)", higher_is_better=True,
               unit="shingles"),
    MetricSpec("boilerplate.shingle_f1", "bag-of-shingles F1 vs the reference main text: 2·Σ min(counts) / (output "
               "+ reference shingles)", higher_is_better=True, unit="shingles"),
)
register(*METRICS)

SPAN_METRICS = ("boilerplate.precision", "boilerplate.recall", "boilerplate.f1")
SEGMENT_METRICS = ("boilerplate.content_retention", "boilerplate.removal_recall")
SHINGLE_METRICS = ("boilerplate.shingle_precision", "boilerplate.shingle_recall", "boilerplate.shingle_f1")

MAX_LISTED = 20
"""At most this many leaked spans, wrongly removed runs or failing segments are listed in a row's detail."""

TEXT_READERS = ("text", "pages", "blocks")
"""`Cleaner.reads` values of cleaners that read the parser's text (an empty text gives them nothing to clean)."""


class BoilerplateAuditor(Auditor):
    """Audits the pipeline's boilerplate removal from its clean step (see the module docstring for the rows, forms
    and states).

    Args:
        shingle_size: tokens per shingle for the reference-main-text metrics, >= 1.
        reference_is_main_text: treat the document's reference text as the hand-cleaned main content.

    Raises:
        ValueError: ``shingle_size < 1`` or a non-boolean ``reference_is_main_text``.
    """

    stage = "boilerplate"
    metrics = METRICS
    scope = Scope.DOCUMENT
    reads: ClassVar[frozenset[str]] = frozenset({CLEAN})
    """The clean step's artefact (`ingestaudit.chain.Cleaning`); the clean step runs alone when no other stage
    needs the chunks."""

    def __init__(self, shingle_size: int = DEFAULT_SHINGLE_SIZE, reference_is_main_text: bool = False):
        if not isinstance(shingle_size, int) or isinstance(shingle_size, bool) or shingle_size < 1:
            raise ValueError(f"boilerplate: shingle_size must be an integer >= 1, not {shingle_size!r}")
        if not isinstance(reference_is_main_text, bool):
            raise ValueError("boilerplate: reference_is_main_text must be true or false")
        self.shingle_size = shingle_size
        self.reference_is_main_text = reference_is_main_text

    # -- configuration ------------------------------------------------------------------------------------------

    def options(self) -> dict[str, Any]:
        """Every rule behind the numbers (the cleaner, its version and settings are the pipeline's, in the
        report's pipelines)."""
        return {
            "cleaner": "the pipeline's cleaner (rows labelled ''; the cleaner is in the report's pipelines); compare "
                       "cleaners with --sweep cleaner.use=...",
            "span_unit": "non-whitespace code points",
            "alignment": f"patience diff over \\S+ words, LCS (rapidfuzz Indel) where no unique word anchors, "
                         f"difflib longest-block-first over characters of unmatched words (<= {CHAR_DIFFLIB_MAX} "
                         "chars a side, else LCS)",
            "segment_rule": f"present iff re.sub({SEGMENT_WS.pattern!r}, ' ', s).strip() is a substring of the same "
                            "normalization of the output",
            "shingle_size": self.shingle_size,
            "shingle_tokens": SHINGLE_TOKEN.pattern,
            "reference_is_main_text": self.reference_is_main_text,
        }

    def main_text(self, truth: Truth) -> str | None:
        """The reference main text: ``boilerplate.main_text`` if the schema has it, else the reference text when
        ``reference_is_main_text``; None otherwise."""
        text = getattr(truth.boilerplate, "main_text", None) if truth.boilerplate is not None else None
        if text is None and self.reference_is_main_text:
            text = truth.text
        return text

    def applies(self, truth: Truth) -> bool:
        """True when the truth has boilerplate spans on a text, segments, or a reference main text (other documents
        get ``no_reference`` rows from the runner)."""
        bp = truth.boilerplate
        if bp is not None and (bp.text is not None or bp.with_ or bp.without):
            return True
        return self.main_text(truth) is not None

    def labelled_text(self, truth: Truth) -> str | None:
        """The text the clean step also cleans for the spans form: the truth's ``boilerplate.text``, or None."""
        return truth.boilerplate.text if truth.boilerplate is not None else None

    # -- reading the clean step ---------------------------------------------------------------------------------

    @staticmethod
    def _outcome(cleaning: Any, attempt: Any, input_text: str) -> tuple[Any, State, str]:
        """The cleaner's result on one input, or why there is none (state and message)."""
        name = cleaning.cleaner
        if cleaning.reads in TEXT_READERS and not input_text.strip():
            return None, State.NO_PREDICTION, "the input text is empty (the parser produced no text to clean)"
        if attempt.error is not None:
            if attempt.unsupported:
                return None, State.SKIPPED, str(attempt.error)
            return None, State.ERROR, f"{name}: {type(attempt.error).__name__}: {attempt.error}"
        if not attempt.valid:
            return None, State.ERROR, f"{name}: clean() returned {type(attempt.result).__name__}, not a CleanResult"
        return attempt.result, State.OK, ""

    # -- audit --------------------------------------------------------------------------------------------------

    def audit(self, item: ItemArtefacts) -> list[Score]:
        """Rows for every label form present (module docstring), with label ``""`` (the cleaner is the pipeline's).

        Args:
            item: the document's artefacts; it reads ``item.steps["clean"]`` (`ingestaudit.chain.Cleaning`, from
                `ingestaudit.chain.clean_step` with ``labelled_text=self.labelled_text(truth)``), the truth and the
                parsed document.

        Raises:
            KeyError: ``item`` has no clean step artefact. Never raises for bad cleaner output.
        """
        cleaning = item.steps[CLEAN]
        truth, parsed = item.truth, item.parsed
        bp = truth.boilerplate
        rows: list[Score] = []
        if bp is not None and bp.text is not None:
            if cleaning.labelled is None:
                rows += [Score.missing(m, State.ERROR, "the clean step did not clean boilerplate.text")
                         for m in SPAN_METRICS]
            else:
                result, state, msg = self._outcome(cleaning, cleaning.labelled, bp.text)
                if result is None:
                    rows += [Score.missing(m, state, msg) for m in SPAN_METRICS]
                else:
                    rows += self._span_scores(bp.text, bp.spans, result)
        seg_metrics = ([SEGMENT_METRICS[0]] if bp is not None and bp.with_ else []) + \
                      ([SEGMENT_METRICS[1]] if bp is not None and bp.without else [])
        main = self.main_text(truth)
        if seg_metrics or main is not None:
            result, state, msg = self._outcome(cleaning, cleaning.parsed, parsed.text or "")
            if result is None:
                names = seg_metrics + (list(SHINGLE_METRICS) if main is not None else [])
                rows += [Score.missing(m, state, msg) for m in names]
            else:
                if seg_metrics:
                    rows += self._segment_scores(bp, result, seg_metrics)
                if main is not None:
                    rows += self._shingle_scores(main, result)
        return rows

    def _span_scores(self, text: str, spans: Any, result: Any) -> list[Score]:
        c = span_counts_from_removal(text, align_removal(text, result.text), spans)
        base = {"input": "boilerplate.text", "unit": "non-whitespace code points", "total": c.total,
                "removed": c.removed, "labelled": c.labelled, "removed_labelled": c.removed_labelled,
                "inserted": c.inserted}
        if c.removed == 0:
            precision = Score("boilerplate.precision", None, None, None, State.NO_PREDICTION, "",
                              {**base, "reason": "nothing removed: precision is undefined",
                               "cleaner_detail": result.detail})
        else:
            precision = Score.ratio("boilerplate.precision", c.removed_labelled, c.removed, detail={
                **base, "wrongly_removed": list(c.wrongly_removed[:MAX_LISTED]),
                "wrongly_removed_total": len(c.wrongly_removed), "cleaner_detail": result.detail})
        if c.labelled == 0:
            recall = Score("boilerplate.recall", None, None, None, State.NO_REFERENCE, "",
                           {**base, "reason": "no labelled non-whitespace character"})
        else:
            recall = Score.ratio("boilerplate.recall", c.removed_labelled, c.labelled, detail={
                **base, "leaked": list(c.leaked[:MAX_LISTED]), "leaked_total": len(c.leaked),
                "by_type": {t: {"removed": r, "labelled": n} for t, (r, n) in c.by_type.items()}})
        if c.removed + c.labelled == 0:
            f1 = Score("boilerplate.f1", None, None, None, State.NO_REFERENCE, "",
                       {**base, "reason": "nothing labelled and nothing removed"})
        else:
            f1 = Score.ratio("boilerplate.f1", 2 * c.removed_labelled, c.removed + c.labelled,
                             detail=base)
        return [precision, recall, f1]

    def _segment_scores(self, bp: Any, result: Any, metrics: list[str]) -> list[Score]:
        c = segment_counts(result.text, bp.with_, bp.without)
        base = {"input": "parsed output", "ignored_empty_segments": len(c.ignored), "cleaner_detail": result.detail}
        rows = []
        if SEGMENT_METRICS[0] in metrics:
            if c.with_total == 0:
                rows.append(Score.missing(SEGMENT_METRICS[0], State.NO_REFERENCE,
                                          "every 'with' segment is empty after whitespace normalization"))
            else:
                rows.append(Score.ratio(SEGMENT_METRICS[0], c.with_present, c.with_total, detail={
                    **base, "missing": list(c.missing[:MAX_LISTED]), "missing_total": len(c.missing)}))
        if SEGMENT_METRICS[1] in metrics:
            if c.without_total == 0:
                rows.append(Score.missing(SEGMENT_METRICS[1], State.NO_REFERENCE,
                                          "every 'without' segment is empty after whitespace normalization"))
            else:
                rows.append(Score.ratio(SEGMENT_METRICS[1], c.without_absent, c.without_total, detail={
                    **base, "leaked": list(c.leaked[:MAX_LISTED]), "leaked_total": len(c.leaked)}))
        return rows

    def _shingle_scores(self, main: str, result: Any) -> list[Score]:
        c = shingle_counts(result.text, main, self.shingle_size)
        base = {"n": c.n, "tokens": SHINGLE_TOKEN.pattern, "matched": c.matched, "output_shingles": c.output_shingles,
                "reference_shingles": c.reference_shingles}
        p, r, f = SHINGLE_METRICS
        rows = [
            Score(p, None, None, None, State.NO_PREDICTION, "", {**base, "reason": "the output has no shingle"})
            if c.output_shingles == 0 else Score.ratio(p, c.matched, c.output_shingles, detail=base),
            Score(r, None, None, None, State.NO_REFERENCE, "", {**base, "reason": "the main text has no shingle"})
            if c.reference_shingles == 0 else Score.ratio(r, c.matched, c.reference_shingles,
                                                          detail=base),
        ]
        den = c.output_shingles + c.reference_shingles
        rows.append(Score(f, None, None, None, State.NO_REFERENCE, "", {**base, "reason": "no shingle on "
                                                                           "either side"})
                    if den == 0 else Score.ratio(f, 2 * c.matched, den, detail=base))
        return rows
