"""Layout auditor: headings, hierarchy, reading order and lists of a parser's output against labels (issue 12).

Per (document, pipeline), with the labelled headings of the truth ``headings`` key (level + text, document order)
and the predicted headings = the parser's blocks of kind ``"heading"`` with non-blank text, in block order
(definitions in `ingestaudit.metrics.layout`; processor ``nfc-casefold-ws``: NFC, case folding, white-space collapse;
numbering prefixes count, so "2.1 Methods" vs "Methods" has similarity 0.6364):

- matching: one to one, Hungarian assignment maximising the summed similarity ``1 - d/max(|a|, |b|)`` (rapidfuzz
  Levenshtein on processed texts) over pairs reaching ``threshold`` (default 0.8);
- ``layout.heading_precision`` = matched / predicted, ``layout.heading_recall`` = matched / labelled,
  ``layout.heading_f1`` = 2 matched / (labelled + predicted);
- ``layout.heading_similarity`` = mean similarity over matched pairs; ``layout.heading_exact`` = matched pairs equal
  after the processor / labelled headings;
- ``layout.heading_level`` = matched pairs with the same level / matched pairs (an unknown predicted level is wrong);
- ``layout.hierarchy`` = labelled headings with a parent (nearest earlier heading of a smaller level) whose
  predicted heading's parent is the heading matched to that parent / labelled headings with a parent;
- ``layout.order_discordance``: the reference text's paragraphs (option ``paragraphs``: ``"line"``, one per
  non-blank line, the demo corpus's convention; or ``"blank_line"``) are located in the parsed text, each on its own
  and where it begins (`ingestaudit.metrics.layout.locate_paragraphs`): exact substring after the processor, else
  its first ``head_chars`` (32) characters exactly, so a paragraph cut into pieces by interleaved columns is placed
  where it begins, else rapidfuzz ``partial_ratio_alignment`` >= ``locate_similarity`` x 100 (default 0.9).
  Paragraphs shorter than ``min_paragraph_chars`` (20) processed characters or repeated in the reference are left
  out. Value = normalized Kendall tau distance of the located paragraphs' positions (discordant pairs / C(n, 2),
  ties 1/2): 0 = reference order, 1 = reversed;
- ``layout.order_located`` = located paragraphs / eligible paragraphs: the unlocated ones, counted apart (a parser
  that loses most of the text cannot show a good order by losing it);
- ``layout.list_integrity`` (truth ``lists``: each list an array of its item texts, in order) = labelled items
  matched one to one (same matching) to the parser's ``list_item`` blocks, in labelled order (the longest subsequence
  whose predicted order increases) / labelled items.

Why each paragraph is located on its own instead of through the extraction alignment (issue 12 says "through the
extraction alignment"; this is a deliberate change): a Levenshtein alignment is monotone, so a paragraph the parser
moved is aligned as deleted (and re-inserted elsewhere), never as out of order; with it the order metric would always
read 0 and the moved text would show up as lost.

**What the parser can do** (the rule behind ``no_prediction`` versus 0). Each parser declares, per document, where its
headings come from in ``ParsedDocument.settings["heading_source"]`` and its list items in
``settings["list_source"]`` (values in `HEADING_SOURCES` and `LIST_SOURCES`: ``outline``, ``font_heuristic``,
``title_elements``, ``structure_tree``; ``marker_patterns``, ``list_elements``, ``structure_tree``; or ``none``). A
parser that declares ``none`` cannot emit them (plain Tesseract OCR; PyMuPDF with ``headings = "none"``, or
``"outline"`` on a document without an outline): its heading (list) rows are ``no_prediction`` with that reason, never
a 0 that reads as "tried and missed". A parser that produced no text at all (PyMuPDF on an image-only PDF) gets
``no_prediction`` for every row, headings, lists and order alike. A parser that can and finds nothing gets its
honest 0 (recall and F1 0; precision ``no_prediction``: no predicted heading to be right). A parser that declares
nothing (a third-party or precomputed output) is judged by its blocks: no block at all is ``no_prediction``, blocks
without a heading a 0. ``heading_level`` and ``hierarchy`` are ``no_prediction`` when the parser gave no level for
any of its headings (unstructured's ``fast`` PDF strategy): a level it never states cannot be wrong.

**States**: no ``headings`` truth -> the heading rows are ``no_reference`` (never 0); no reference text -> the order
rows; no ``lists`` -> list integrity. A ``headings`` (``lists``) key of the truth that fails validation (a level
below 1, a missing text) gives ``error`` heading (list) rows carrying the validation message (file and field); the
document's other labels are still audited (`ingestaudit.truth.TruthError.partial`), and the run reports the message
once, as a ``truth`` failure. A ratio whose denominator is a number of predictions that is 0 is ``no_prediction``
(precision without predicted headings, similarity and level without a matched pair). Nothing raises out of
`LayoutAuditor.audit`.
"""

from __future__ import annotations

import re
from typing import Any

from ingestaudit.auditors.base import Auditor, ItemArtefacts
from ingestaudit.measurement import Score, State
from ingestaudit.metrics import layout as lm
from ingestaudit.metrics.specs import MetricSpec, register
from ingestaudit.model import ParsedDocument
from ingestaudit.truth import Truth

_PROC = "after the nfc-casefold-ws processor (NFC, case folding, white-space collapse; numbering prefixes count)"
METRICS = (
    MetricSpec("layout.heading_precision", "matched predicted headings / predicted headings (parser blocks of kind "
               "heading); one-to-one Hungarian matching on similarity 1 - d/max(|a|,|b|) (rapidfuzz Levenshtein) "
               f"{_PROC}, pairs below the threshold (default 0.8) never matched", higher_is_better=True,
               ci="wilson", unit="headings"),
    MetricSpec("layout.heading_recall", "matched labelled headings / labelled headings (truth headings); matching "
               "as layout.heading_precision; every heading metric is no_prediction (not 0) for a parser that "
               "declares heading_source = none (plain OCR) or produced no text, and 0 for one that tries and finds "
               "none", higher_is_better=True, ci="wilson", unit="headings"),
    MetricSpec("layout.heading_f1", "2 matched / (labelled + predicted headings) = harmonic mean of heading "
               "precision and recall", higher_is_better=True, unit="headings"),
    MetricSpec("layout.heading_similarity", "mean over matched heading pairs of 1 - d(a,b)/max(|a|,|b|) "
               "(Levenshtein over code points; the normalized Levenshtein similarity of ANLS, Biten et al. 2019, "
               "without its 0.5 cut-off; rapidfuzz Levenshtein.normalized_similarity) "
               f"{_PROC}: \"2.1 Methods\" vs \"Methods\" = 1 - 4/11 = 0.6364", higher_is_better=True, unit="pairs"),
    MetricSpec("layout.heading_exact", f"matched heading pairs whose texts are equal {_PROC} / labelled headings",
               higher_is_better=True, ci="wilson", unit="headings"),
    MetricSpec("layout.heading_level", "matched heading pairs with the same level / matched pairs (an unknown "
               "predicted level counts as different; no_prediction when the parser gives no level to any heading)",
               higher_is_better=True, ci="wilson", unit="pairs"),
    MetricSpec("layout.hierarchy", "labelled headings whose parent (nearest earlier heading of a strictly smaller "
               "level) is matched to their predicted heading's parent / labelled headings with a parent "
               "(no_prediction when the parser gives no level to any heading)",
               higher_is_better=True, ci="wilson", unit="headings"),
    MetricSpec("layout.order_discordance", "normalized Kendall tau distance between reference order and parsed-text "
               "order of the reference paragraphs located in the parsed text (each on its own, where it begins: "
               "exact substring after the processor, else its first 32 characters, else rapidfuzz "
               "partial_ratio_alignment >= 90; not through the extraction alignment, which is monotone and cannot "
               "show a move): discordant pairs / C(n,2) (Kendall 1938), ties 1/2 (Fagin et al. 2004, p = 1/2); "
               "0 = reference order, 1 = reversed; no_prediction without any parsed text", higher_is_better=False,
               unit="pairs"),
    MetricSpec("layout.order_located", "reference paragraphs located in the parsed text / eligible reference "
               "paragraphs (long enough, not repeated): the paragraphs layout.order_discordance could not place",
               higher_is_better=True, ci="wilson", unit="paragraphs"),
    MetricSpec("layout.list_integrity", "labelled list items (truth lists) matched one to one to the parser's "
               "list_item blocks (similarity >= threshold, as headings) and in labelled order (longest increasing "
               "subsequence per list) / labelled list items", higher_is_better=True, ci="wilson", unit="items"),
)
register(*METRICS)

HEADING_METRICS = ("layout.heading_precision", "layout.heading_recall", "layout.heading_f1",
                   "layout.heading_similarity", "layout.heading_exact", "layout.heading_level", "layout.hierarchy")
ORDER_METRICS = ("layout.order_discordance", "layout.order_located")
MAX_LISTED = 20
"""At most this many pairs, unmatched headings or discordant paragraph pairs are listed in a detail."""
PARSER_HEADING_SETTINGS = "headings"
"""Key of `ParsedDocument.settings` under which a parser describes, per document, how it found its headings (source,
thresholds, font statistics); copied into the heading rows' detail."""
HEADING_SOURCE = "heading_source"
"""Key of `ParsedDocument.settings` declaring, per document, where the parser's headings come from
(`HEADING_SOURCES`)."""
LIST_SOURCE = "list_source"
"""Key of `ParsedDocument.settings` declaring, per document, where the parser's list items come from
(`LIST_SOURCES`)."""
HEADING_SOURCES = {
    "outline": "the document's outline (bookmarks), e.g. PyMuPDF get_toc",
    "font_heuristic": "font size and weight statistics of the text spans (pymupdf fontstats-v1)",
    "title_elements": "a partitioner's Title / Section-header elements (unstructured)",
    "structure_tree": "a tagged PDF's structure tree (H1-H6)",
    "none": "the parser cannot emit headings: heading rows are no_prediction",
}
"""Declared heading sources of the built-in parsers; any other value counts as a parser that tries."""
LIST_SOURCES = {
    "marker_patterns": "bullet and numbering patterns at line starts (pymupdf)",
    "list_elements": "a partitioner's ListItem elements (unstructured)",
    "structure_tree": "a tagged PDF's LI elements",
    "none": "the parser cannot emit list items: list rows are no_prediction",
}
"""Declared list-item sources of the built-in parsers; any other value counts as a parser that tries."""


def _clip(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


class LayoutAuditor(Auditor):
    """Audits headings, hierarchy, reading order and lists (see the module docstring for the definitions).

    Args:
        threshold: minimum similarity for a heading (or list item) pair to be matched, in (0, 1].
        paragraphs: how the reference text splits into paragraphs for the order metrics: ``"line"`` or
            ``"blank_line"``.
        min_paragraph_chars: paragraphs shorter than this (processed code points) are left out of the order metrics.
        head_chars: length of the head by which a paragraph that is not found whole is located.
        locate_similarity: minimum ``partial_ratio`` / 100 for a paragraph found fuzzily, in (0, 1].
        max_order_chars: the order metrics are ``skipped`` when the reference or the parsed text is longer (code
            points): the fuzzy search costs about (paragraph length x text length) per unlocated paragraph.

    Raises:
        ValueError: an option out of range or an unknown paragraph mode.
    """

    stage = "layout"
    metrics = METRICS

    def __init__(self, threshold: float = lm.DEFAULT_THRESHOLD, paragraphs: str = "line",
                 min_paragraph_chars: int = 20, head_chars: int = 32, locate_similarity: float = 0.9,
                 max_order_chars: int = 2_000_000):
        for name, v in (("threshold", threshold), ("locate_similarity", locate_similarity)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 < v <= 1.0:
                raise ValueError(f"{name} must be in (0, 1], got {v!r}")
        if paragraphs not in ("line", "blank_line"):
            raise ValueError(f"paragraphs must be 'line' or 'blank_line', not {paragraphs!r}")
        if isinstance(min_paragraph_chars, bool) or not isinstance(min_paragraph_chars, int) or min_paragraph_chars < 1:
            raise ValueError(f"min_paragraph_chars must be an integer >= 1, got {min_paragraph_chars!r}")
        if isinstance(head_chars, bool) or not isinstance(head_chars, int) or head_chars < 1:
            raise ValueError(f"head_chars must be an integer >= 1, got {head_chars!r}")
        if isinstance(max_order_chars, bool) or not isinstance(max_order_chars, int) or max_order_chars < 1:
            raise ValueError(f"max_order_chars must be an integer >= 1, got {max_order_chars!r}")
        self.threshold = float(threshold)
        self.paragraphs = paragraphs
        self.min_paragraph_chars = min_paragraph_chars
        self.locate_similarity = float(locate_similarity)
        self.head_chars = head_chars
        self.max_order_chars = max_order_chars

    def options(self) -> dict[str, Any]:
        """The processor, the matching threshold and the paragraph options."""
        return {"processor": lm.PROCESSOR_NAME, "similarity": "1 - levenshtein / max(len)",
                "matching": "hungarian (scipy linear_sum_assignment), max summed similarity",
                "threshold": self.threshold, "paragraphs": self.paragraphs,
                "min_paragraph_chars": self.min_paragraph_chars, "head_chars": self.head_chars,
                "locate_similarity": self.locate_similarity, "kendall_ties": 0.5,
                "max_order_chars": self.max_order_chars,
                "capability": "parser settings heading_source / list_source: 'none', or no parsed text -> "
                              "no_prediction; a parser that tries and finds none -> 0; undeclared -> no_prediction "
                              "only without any block",
                "no_levels": "no_prediction for heading_level and hierarchy when no predicted heading has a level"}

    def applies(self, truth: Truth) -> bool:
        """True when the document has labelled headings, labelled lists or a reference text, or a ``headings`` or
        ``lists`` label that failed validation (its rows carry the message)."""
        return (bool(truth.headings) or bool(getattr(truth, "lists", ())) or truth.text is not None
                or bool(_label_problems(truth, "headings")) or bool(_label_problems(truth, "lists")))

    def audit(self, item: ItemArtefacts) -> list[Score]:
        """Ten rows: the seven heading metrics, the two order metrics and list integrity. Never raises."""
        truth, parsed = item.truth, item.parsed
        return (self._heading_scores(truth, parsed) + self._order_scores(truth, parsed)
                + self._list_scores(truth, parsed))

    # -- headings -----------------------------------------------------------------------------------------------

    def _heading_scores(self, truth: Truth, parsed: ParsedDocument) -> list[Score]:
        bad = _label_problems(truth, "headings")
        if bad:
            return _label_error_rows(HEADING_METRICS, "headings", bad)
        if not truth.headings:
            return [Score.missing(m, State.NO_REFERENCE, "no headings truth for this document")
                    for m in HEADING_METRICS]
        cannot = _cannot_emit(parsed, HEADING_SOURCE, "headings")
        if cannot:
            return [Score(m, None, None, None, State.NO_PREDICTION, "",
                          {"reason": cannot, HEADING_SOURCE: _declared(parsed, HEADING_SOURCE)})
                    for m in HEADING_METRICS]
        labelled = [lm.HeadingLabel(h.level, h.text) for h in truth.headings]
        predicted = [lm.HeadingLabel(b.level, " ".join(b.text.split())) for b in parsed.blocks
                     if b.kind == "heading" and b.text.strip()]
        c = lm.heading_counts(labelled, predicted, self.threshold)
        matched_l = {i for i, _, _ in c.pairs}
        matched_p = {j for _, j, _ in c.pairs}
        detail: dict[str, Any] = {
            "processor": lm.PROCESSOR_NAME, "threshold": self.threshold,
            "labelled": c.labelled, "predicted": c.predicted, "matched": c.matched,
            "pairs": [{"labelled": _clip(labelled[i].text), "predicted": _clip(predicted[j].text),
                       "similarity": round(s, 6), "labelled_level": labelled[i].level,
                       "predicted_level": predicted[j].level} for i, j, s in c.pairs[:MAX_LISTED]],
            "unmatched_labelled": [_clip(labelled[i].text) for i in range(len(labelled))
                                   if i not in matched_l][:MAX_LISTED],
            "unmatched_predicted": [_clip(predicted[j].text) for j in range(len(predicted))
                                    if j not in matched_p][:MAX_LISTED],
        }
        detail[HEADING_SOURCE] = _declared(parsed, HEADING_SOURCE)
        how = parsed.settings.get(PARSER_HEADING_SETTINGS) if isinstance(parsed.settings, dict) else None
        if how is not None:
            detail["parser_headings"] = how

        def ratio(metric: str, num: float, den: float, empty: State, why: str, extra: dict | None = None) -> Score:
            if den == 0:
                return Score(metric, None, num, den, empty, "", {**detail, **(extra or {}), "reason": why})
            return Score.ratio(metric, num, den, detail={**detail, **(extra or {})})

        none_pred = f"the parser {parsed.parser or '?'} emitted no heading block"
        level = ratio("layout.heading_level", c.same_level, c.matched, State.NO_PREDICTION,
                      "no heading pair reached the threshold")
        hierarchy = ratio("layout.hierarchy", c.kept_parent, c.with_parent, State.NO_REFERENCE,
                          "no labelled heading has a parent (all at the top level)",
                          {"with_parent": c.with_parent, "kept_parent": c.kept_parent})
        if c.predicted and all(h.level is None for h in predicted):  # no level stated: none can be wrong
            why = f"the parser {parsed.parser or '?'} gave no level for any of its {c.predicted} heading(s)"
            if level.state is State.OK:
                level = Score("layout.heading_level", None, None, None, State.NO_PREDICTION, "",
                              {**detail, "reason": why})
            if hierarchy.state is State.OK:
                hierarchy = Score("layout.hierarchy", None, None, None, State.NO_PREDICTION, "",
                                  {**detail, "with_parent": c.with_parent, "reason": why})
        return [
            ratio("layout.heading_precision", c.matched, c.predicted, State.NO_PREDICTION, none_pred),
            ratio("layout.heading_recall", c.matched, c.labelled, State.NO_REFERENCE, "no labelled heading"),
            ratio("layout.heading_f1", 2 * c.matched, c.labelled + c.predicted, State.NO_REFERENCE,
                  "no heading on either side"),
            ratio("layout.heading_similarity", c.similarity_sum, c.matched, State.NO_PREDICTION,
                  "no heading pair reached the threshold"),
            ratio("layout.heading_exact", c.exact, c.labelled, State.NO_REFERENCE, "no labelled heading"),
            level,
            hierarchy,
        ]

    # -- reading order ------------------------------------------------------------------------------------------

    def _order_scores(self, truth: Truth, parsed: ParsedDocument) -> list[Score]:
        if truth.text is None:
            return [Score.missing(m, State.NO_REFERENCE, "no reference text for this document") for m in ORDER_METRICS]
        output = parsed.text or ""
        if not output.strip():
            return [Score.missing(m, State.NO_PREDICTION, "the parser produced no text") for m in ORDER_METRICS]
        if max(len(truth.text), len(output)) > self.max_order_chars:
            return [Score.missing(m, State.SKIPPED, f"text longer than max_order_chars = {self.max_order_chars}")
                    for m in ORDER_METRICS]
        paras = lm.split_paragraphs(truth.text, self.paragraphs)
        loc = lm.locate_paragraphs(paras, output, min_chars=self.min_paragraph_chars, head_chars=self.head_chars,
                                   min_similarity=self.locate_similarity)
        located = [(k, p) for k, p in zip(loc.eligible, loc.positions) if p is not None]
        base = {"paragraphs": self.paragraphs, "reference_paragraphs": len(paras), "eligible": len(loc.eligible),
                "located": len(located), "unlocated": len(loc.eligible) - len(located), "by_head": loc.by_head,
                "fuzzy": loc.fuzzy, "head_chars": self.head_chars,
                "too_short": loc.too_short, "repeated": loc.repeated,
                "min_paragraph_chars": self.min_paragraph_chars, "locate_similarity": self.locate_similarity}
        located_row = Score.ratio("layout.order_located", len(located), len(loc.eligible), detail={
            **base, "unlocated_paragraphs": [_clip(paras[k]) for k, p in zip(loc.eligible, loc.positions)
                                             if p is None][:MAX_LISTED]})
        if len(loc.eligible) < 2:
            order = Score.missing("layout.order_discordance", State.NO_REFERENCE,
                                  f"{len(loc.eligible)} eligible reference paragraph(s); an order needs 2")
        elif len(located) < 2:
            order = Score("layout.order_discordance", None, None, None, State.NO_PREDICTION, "",
                          {**base, "reason": f"{len(located)} reference paragraph(s) located in the parsed text; "
                                             "an order needs 2"})
        else:
            d = lm.kendall_discordance([p for _, p in located], max_examples=MAX_LISTED)
            order = Score.ratio("layout.order_discordance", d.discordant, d.pairs, detail={
                **base, "discordant_examples": [[_clip(paras[located[i][0]], 60), _clip(paras[located[j][0]], 60)]
                                                for i, j in d.examples]})
        return [order, located_row]

    # -- lists --------------------------------------------------------------------------------------------------

    def _list_scores(self, truth: Truth, parsed: ParsedDocument) -> list[Score]:
        metric = "layout.list_integrity"
        lists = [list(x) for x in getattr(truth, "lists", ()) if x]
        bad = _label_problems(truth, "lists")
        if bad:
            return _label_error_rows((metric,), "lists", bad)
        if not lists:
            return [Score.missing(metric, State.NO_REFERENCE, "no lists truth for this document")]
        cannot = _cannot_emit(parsed, LIST_SOURCE, "list items")
        if cannot:
            return [Score(metric, None, None, None, State.NO_PREDICTION, "",
                          {"reason": cannot, LIST_SOURCE: _declared(parsed, LIST_SOURCE)})]
        items = [" ".join(b.text.split()) for b in parsed.blocks if b.kind == "list_item" and b.text.strip()]
        c = lm.list_integrity(lists, items, self.threshold)
        return [Score.ratio(metric, c.intact, c.labelled, detail={
            "processor": lm.PROCESSOR_NAME, "threshold": self.threshold, "lists": len(lists),
            "labelled_items": c.labelled, "predicted_items": len(items), "matched": c.matched, "in_order": c.intact,
            LIST_SOURCE: _declared(parsed, LIST_SOURCE)})]


def _declared(parsed: ParsedDocument, key: str) -> str | None:
    """The parser's declared ``settings[key]`` (`HEADING_SOURCE`, `LIST_SOURCE`) as a string, None when absent."""
    value = parsed.settings.get(key) if isinstance(parsed.settings, dict) else None
    return None if value is None else str(value)


def _cannot_emit(parsed: ParsedDocument, key: str, what: str) -> str | None:
    """Why the parser's output holds no ``what`` by design or holds nothing at all (the rows are then
    ``no_prediction``), or None when it could have and its count is a result (module docstring)."""
    name = parsed.parser or "?"
    declared = _declared(parsed, key)
    if declared == "none":
        return f"the parser {name} does not emit {what} for this document ({key} = none)"
    if not (parsed.text or "").strip() and not any(b.text.strip() for b in parsed.blocks):
        return f"the parser {name} produced no text"
    if declared is None and not parsed.blocks:
        return f"the parser {name} emits no layout blocks and declares no {key}"
    return None


def _label_problems(truth: Truth, key: str) -> list[str]:
    """The validation messages of the truth's ``key`` label (``headings``, ``lists``) that left it out."""
    return [str(p) for p in getattr(truth, "problems", ()) if re.split(r"[.\[]", p.field, maxsplit=1)[0] == key]


def _label_error_rows(metrics: tuple[str, ...], key: str, problems: list[str]) -> list[Score]:
    """``error`` rows for a ``key`` label that failed validation, with its messages (``label_problems``: the run
    reports them once, under the ``truth`` stage)."""
    shown = problems[:MAX_LISTED]
    reason = f"the {key} truth is invalid: " + "; ".join(shown) + ("; ..." if len(problems) > len(shown) else "")
    return [Score(m, None, None, None, State.ERROR, "", {"reason": reason, "label_problems": shown})
            for m in metrics]
