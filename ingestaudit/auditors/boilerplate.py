"""Boilerplate auditor: how well each cleaner keeps the main content and removes the rest, against three label forms.

For every document with ``boilerplate`` truth (or a reference main text) and every cleaner that runs, rows labelled
with the cleaner's name (definitions in `ingestaudit.metrics.boilerplate`):

- **spans** (``boilerplate.text`` + ``boilerplate.spans``), component level: the cleaner runs on that text, whatever
  the parser; ``boilerplate.precision``, ``boilerplate.recall``, ``boilerplate.f1`` over non-whitespace characters.
- **segments** (``boilerplate.with`` / ``boilerplate.without``), end to end: the cleaner runs on the parser's
  output (or on the raw HTML, for ``trafilatura``); ``boilerplate.content_retention`` (only when ``with`` is given)
  and ``boilerplate.removal_recall`` (only when ``without`` is given).
- **reference main text**, end to end: ``boilerplate.shingle_precision``, ``.shingle_recall``, ``.shingle_f1``.
  The main text is ``boilerplate.main_text`` when the truth schema has that field, or, with the option
  ``reference_is_main_text = true``, the document's reference text (``.txt`` / ``text``) for corpora whose
  reference is the hand-cleaned main content.

A metric family is reported only when its label form exists in the truth. States: nothing removed makes precision
``no_prediction`` (undefined, not 0); no labelled character makes recall ``no_reference``; an empty input (the
parser produced no text) makes every row of a text-reading cleaner ``no_prediction``; a cleaner that fails gives
``error`` rows with its message; a cleaner asked for by name that cannot run on the input gives ``skipped`` rows.

Cleaners (option ``cleaners``): by default every cleaner that supports the input (`Cleaner.supports`): ``none``
always, ``trafilatura`` on HTML sources, ``unstructured`` on the unstructured parser's blocks, ``repeated-lines`` on
documents of two pages or more, and user cleaners of the entry-point group ``ingestaudit.cleaners``; when the
parsed output carries a precomputed ``clean_text``, that output (label ``precomputed``) is audited instead of the
built-ins (DESIGN.md, "Precomputed outputs"). For the spans form the precomputed ``clean_text`` is used only when
the precomputed ``text`` equals ``boilerplate.text`` (then it is that text's cleaned form).
"""

from __future__ import annotations

from typing import Any

from ingestaudit.auditors.base import Auditor
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
from ingestaudit.model import ParsedDocument
from ingestaudit.stages.cleaners.base import Cleaner, CleanerError, CleanerInput, CleanResult, UnsupportedInput
from ingestaudit.stages.cleaners.registry import cleaner_names, load_cleaner
from ingestaudit.truth import Truth

METRICS = (
    MetricSpec("boilerplate.precision", "removed characters that are labelled boilerplate / removed characters, over "
               "non-whitespace code points of boilerplate.text, removal located by aligning the cleaner's output "
               "to its input; undefined (no_prediction) when nothing is removed; label = cleaner",
               higher_is_better=True, unit="chars"),
    MetricSpec("boilerplate.recall", "labelled boilerplate characters removed / labelled boilerplate characters, over "
               "non-whitespace code points of boilerplate.text; label = cleaner", higher_is_better=True, unit="chars"),
    MetricSpec("boilerplate.f1", "2·|removed ∩ labelled| / (|removed| + |labelled|) over non-whitespace code points "
               "of boilerplate.text (van Rijsbergen F1 from counts); label = cleaner", higher_is_better=True,
               unit="chars"),
    MetricSpec("boilerplate.content_retention", "'with' segments present in the cleaned output / 'with' segments; "
               "present = whitespace-normalized substring (trafilatura evaluation, tests/eval_common.py); label = "
               "cleaner", higher_is_better=True, unit="segments"),
    MetricSpec("boilerplate.removal_recall", "'without' segments absent from the cleaned output / 'without' "
               "segments; absent = not a whitespace-normalized substring (trafilatura evaluation); label = cleaner",
               higher_is_better=True, unit="segments"),
    MetricSpec("boilerplate.shingle_precision", "bag-of-shingles precision vs the reference main text: Σ min(counts) "
               "/ output shingles; shingles = 4 consecutive \\w+ tokens by default (Scrapinghub "
               "article-extraction-benchmark); label = cleaner", higher_is_better=True, unit="shingles"),
    MetricSpec("boilerplate.shingle_recall", "bag-of-shingles recall vs the reference main text: Σ min(counts) / "
               "reference shingles (4 \\w+ tokens by default); label = cleaner", higher_is_better=True,
               unit="shingles"),
    MetricSpec("boilerplate.shingle_f1", "bag-of-shingles F1 vs the reference main text: 2·Σ min(counts) / (output "
               "+ reference shingles); label = cleaner", higher_is_better=True, unit="shingles"),
)
register(*METRICS)

SPAN_METRICS = ("boilerplate.precision", "boilerplate.recall", "boilerplate.f1")
SEGMENT_METRICS = ("boilerplate.content_retention", "boilerplate.removal_recall")
SHINGLE_METRICS = ("boilerplate.shingle_precision", "boilerplate.shingle_recall", "boilerplate.shingle_f1")

MAX_LISTED = 20
"""At most this many leaked spans, wrongly removed runs or failing segments are listed in a row's detail."""

PRECOMPUTED = "precomputed"


def _parse_cleaners(value: list[str] | tuple[str, ...] | str | None) -> list[str] | None:
    if value is None:
        return None
    names = [v.strip() for v in value.split(",")] if isinstance(value, str) else list(value)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"boilerplate: cleaners must be a non-empty list of cleaner names, not {value!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"boilerplate: cleaner listed twice in {names}")
    return names


class BoilerplateAuditor(Auditor):
    """Audits boilerplate removal (see the module docstring for the rows, forms and states).

    Args:
        cleaners: names of the cleaners to run (a list, or one comma-separated string); None runs every cleaner
            that supports the input.
        cleaner_options: cleaner name -> keyword options of that cleaner (e.g. ``{"trafilatura": {"fast": true}}``).
        shingle_size: tokens per shingle for the reference-main-text metrics, >= 1.
        reference_is_main_text: treat the document's reference text as the hand-cleaned main content.

    Raises:
        ValueError: an unknown cleaner name, a cleaner that does not load or rejects its options, options for a
            cleaner not run, or ``shingle_size < 1``.
    """

    stage = "boilerplate"
    metrics = METRICS

    def __init__(self, cleaners: list[str] | str | None = None,
                 cleaner_options: dict[str, dict[str, Any]] | None = None, shingle_size: int = DEFAULT_SHINGLE_SIZE,
                 reference_is_main_text: bool = False):
        if not isinstance(shingle_size, int) or isinstance(shingle_size, bool) or shingle_size < 1:
            raise ValueError(f"boilerplate: shingle_size must be an integer >= 1, not {shingle_size!r}")
        if not isinstance(reference_is_main_text, bool):
            raise ValueError("boilerplate: reference_is_main_text must be true or false")
        self.explicit = _parse_cleaners(cleaners)
        self.cleaner_options = {k: dict(v) for k, v in (cleaner_options or {}).items()}
        names = self.explicit if self.explicit is not None else cleaner_names()
        stray = sorted(set(self.cleaner_options) - set(names))
        if stray:
            raise ValueError(f"boilerplate: cleaner_options for cleaner(s) not run: {', '.join(stray)}")
        self.cleaners: dict[str, Cleaner] = {}
        self.broken: dict[str, str] = {}  # default mode: entry-point cleaners that do not load
        for name in names:
            try:
                self.cleaners[name] = load_cleaner(name, self.cleaner_options.get(name))
            except CleanerError as exc:  # an entry point whose module does not import
                if self.explicit is not None:
                    raise ValueError(f"boilerplate: {exc}") from exc
                self.broken[name] = str(exc)
            except ValueError as exc:
                raise ValueError(f"boilerplate: {exc}") from exc
        self.shingle_size = shingle_size
        self.reference_is_main_text = reference_is_main_text

    # -- configuration ------------------------------------------------------------------------------------------

    def options(self) -> dict[str, Any]:
        """The cleaners (with their versions and settings) and every rule behind the numbers."""
        versions = {}
        for name, c in self.cleaners.items():
            ok, what = c.available()
            versions[name] = what if ok else f"unavailable: {what}"
        versions.update({name: f"unavailable: {msg}" for name, msg in self.broken.items()})
        return {
            "cleaners": self.explicit if self.explicit is not None else "default: every cleaner that supports the "
                        "input; a precomputed clean_text replaces the built-ins",
            "cleaner_versions": versions,
            "cleaner_settings": {name: c.settings() for name, c in self.cleaners.items()},
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
        """True when the truth has boilerplate spans on a text, segments, or a reference main text."""
        bp = truth.boilerplate
        if bp is not None and (bp.text is not None or bp.with_ or bp.without):
            return True
        return self.main_text(truth) is not None

    # -- running the cleaners -----------------------------------------------------------------------------------

    def _plan(self, inp: CleanerInput) -> list[tuple[str, Cleaner | None, str | None]]:
        """``(name, cleaner, why_not)`` for every cleaner to report on this input; ``why_not`` None means run."""
        if self.explicit is not None:
            return [(n, self.cleaners[n], self.cleaners[n].supports(inp)) for n in self.explicit]
        plan: list[tuple[str, Cleaner | None, str | None]] = []
        pre = self.cleaners.get(PRECOMPUTED)
        if pre is not None and pre.supports(inp) is None:
            plan.append((PRECOMPUTED, pre, None))
        else:
            plan += [(n, c, None) for n, c in self.cleaners.items() if n != PRECOMPUTED and c.supports(inp) is None]
        plan += [(n, None, None) for n in self.broken]
        return plan

    def _run(self, name: str, cleaner: Cleaner | None, why_not: str | None,
             inp: CleanerInput) -> tuple[CleanResult | None, State, str]:
        """The cleaner's result, or why there is none (state and message)."""
        if cleaner is None:
            return None, State.ERROR, f"cleaner {name!r} does not load: {self.broken.get(name, '')}"
        if why_not is not None:
            return None, State.SKIPPED, f"{name}: {why_not}"
        if cleaner.reads in ("text", "pages", "blocks") and not inp.text.strip():
            return None, State.NO_PREDICTION, "the input text is empty (the parser produced no text to clean)"
        try:
            result = cleaner.clean(inp)
        except UnsupportedInput as exc:
            return None, State.SKIPPED, str(exc)
        except Exception as exc:  # a cleaner's failure is a row, never a crash of the audit
            return None, State.ERROR, f"{name}: {type(exc).__name__}: {exc}"
        if not isinstance(result, CleanResult) or not isinstance(result.text, str):
            return None, State.ERROR, f"{name}: clean() returned {type(result).__name__}, not a CleanResult"
        return result, State.OK, ""

    # -- audit --------------------------------------------------------------------------------------------------

    def audit(self, truth: Truth, parsed: ParsedDocument) -> list[Score]:
        """Rows for every cleaner that runs and every label form present (module docstring). Never raises for bad
        cleaner output."""
        bp = truth.boilerplate
        rows: list[Score] = []
        if bp is not None and bp.text is not None:
            extras = parsed.extras if parsed.text == bp.text else {}
            inp = CleanerInput.from_text(bp.text, extras=extras)
            for name, cleaner, why_not in self._plan(inp):
                result, state, msg = self._run(name, cleaner, why_not, inp)
                if result is None:
                    rows += [Score.missing(m, state, msg, label=name) for m in SPAN_METRICS]
                else:
                    rows += self._span_scores(name, bp.text, bp.spans, result)
        seg_metrics = ([SEGMENT_METRICS[0]] if bp is not None and bp.with_ else []) + \
                      ([SEGMENT_METRICS[1]] if bp is not None and bp.without else [])
        main = self.main_text(truth)
        if seg_metrics or main is not None:
            inp = CleanerInput.from_parsed(parsed)
            for name, cleaner, why_not in self._plan(inp):
                result, state, msg = self._run(name, cleaner, why_not, inp)
                if result is None:
                    names = seg_metrics + (list(SHINGLE_METRICS) if main is not None else [])
                    rows += [Score.missing(m, state, msg, label=name) for m in names]
                    continue
                if seg_metrics:
                    rows += self._segment_scores(name, bp, result, seg_metrics)  # type: ignore[arg-type]
                if main is not None:
                    rows += self._shingle_scores(name, main, result)
        return rows

    def _span_scores(self, name: str, text: str, spans: Any, result: CleanResult) -> list[Score]:
        c = span_counts_from_removal(text, align_removal(text, result.text), spans)
        base = {"input": "boilerplate.text", "unit": "non-whitespace code points", "total": c.total,
                "removed": c.removed, "labelled": c.labelled, "removed_labelled": c.removed_labelled,
                "inserted": c.inserted}
        if c.removed == 0:
            precision = Score("boilerplate.precision", None, None, None, State.NO_PREDICTION, name,
                              {**base, "reason": "nothing removed: precision is undefined",
                               "cleaner_detail": result.detail})
        else:
            precision = Score.ratio("boilerplate.precision", c.removed_labelled, c.removed, label=name, detail={
                **base, "wrongly_removed": list(c.wrongly_removed[:MAX_LISTED]),
                "wrongly_removed_total": len(c.wrongly_removed), "cleaner_detail": result.detail})
        if c.labelled == 0:
            recall = Score("boilerplate.recall", None, None, None, State.NO_REFERENCE, name,
                           {**base, "reason": "no labelled non-whitespace character"})
        else:
            recall = Score.ratio("boilerplate.recall", c.removed_labelled, c.labelled, label=name, detail={
                **base, "leaked": list(c.leaked[:MAX_LISTED]), "leaked_total": len(c.leaked),
                "by_type": {t: {"removed": r, "labelled": n} for t, (r, n) in c.by_type.items()}})
        if c.removed + c.labelled == 0:
            f1 = Score("boilerplate.f1", None, None, None, State.NO_REFERENCE, name,
                       {**base, "reason": "nothing labelled and nothing removed"})
        else:
            f1 = Score.ratio("boilerplate.f1", 2 * c.removed_labelled, c.removed + c.labelled, label=name,
                             detail=base)
        return [precision, recall, f1]

    def _segment_scores(self, name: str, bp: Any, result: CleanResult, metrics: list[str]) -> list[Score]:
        c = segment_counts(result.text, bp.with_, bp.without)
        base = {"input": "parsed output", "ignored_empty_segments": len(c.ignored), "cleaner_detail": result.detail}
        rows = []
        if SEGMENT_METRICS[0] in metrics:
            if c.with_total == 0:
                rows.append(Score.missing(SEGMENT_METRICS[0], State.NO_REFERENCE,
                                          "every 'with' segment is empty after whitespace normalization", label=name))
            else:
                rows.append(Score.ratio(SEGMENT_METRICS[0], c.with_present, c.with_total, label=name, detail={
                    **base, "missing": list(c.missing[:MAX_LISTED]), "missing_total": len(c.missing)}))
        if SEGMENT_METRICS[1] in metrics:
            if c.without_total == 0:
                rows.append(Score.missing(SEGMENT_METRICS[1], State.NO_REFERENCE,
                                          "every 'without' segment is empty after whitespace normalization",
                                          label=name))
            else:
                rows.append(Score.ratio(SEGMENT_METRICS[1], c.without_absent, c.without_total, label=name, detail={
                    **base, "leaked": list(c.leaked[:MAX_LISTED]), "leaked_total": len(c.leaked)}))
        return rows

    def _shingle_scores(self, name: str, main: str, result: CleanResult) -> list[Score]:
        c = shingle_counts(result.text, main, self.shingle_size)
        base = {"n": c.n, "tokens": SHINGLE_TOKEN.pattern, "matched": c.matched, "output_shingles": c.output_shingles,
                "reference_shingles": c.reference_shingles}
        p, r, f = SHINGLE_METRICS
        rows = [
            Score(p, None, None, None, State.NO_PREDICTION, name, {**base, "reason": "the output has no shingle"})
            if c.output_shingles == 0 else Score.ratio(p, c.matched, c.output_shingles, label=name, detail=base),
            Score(r, None, None, None, State.NO_REFERENCE, name, {**base, "reason": "the main text has no shingle"})
            if c.reference_shingles == 0 else Score.ratio(r, c.matched, c.reference_shingles, label=name,
                                                          detail=base),
        ]
        den = c.output_shingles + c.reference_shingles
        rows.append(Score(f, None, None, None, State.NO_REFERENCE, name, {**base, "reason": "no shingle on "
                                                                           "either side"})
                    if den == 0 else Score.ratio(f, 2 * c.matched, den, label=name, detail=base))
        return rows
