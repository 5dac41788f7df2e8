"""Tables auditor: TEDS and TEDS-S of a parser's tables against the reference tables, and table detection.

Definitions (`ingestaudit.metrics.teds`; Zhong, ShafieiBavani and Jimeno Yepes, ECCV 2020, arXiv:1911.10683, eq. 3,
and the PubTabNet reference implementation ``src/metric.py``):

    TEDS(T_a, T_b) = 1 - EditDist(T_a, T_b) / max(n_a, n_b)            in [0, 1], 1 = identical

Per (document, parser), with R = the reference tables (reading order) and P = the predicted tables:

- Pairing: R and P are paired by optimal assignment maximising the summed TEDS (Hungarian algorithm,
  `ingestaudit.metrics.teds.match_tables`); min(|R|, |P|) pairs. TEDS-S is computed on the same pairs.
- ``tables.teds`` / ``tables.teds_s``, label ``""`` (per document):

      TEDS_doc = (sum over r in R of TEDS(r, pair(r))) / |R|,    TEDS(r, pair(r)) = 0 when r is unmatched

  numerator = that sum, denominator = |R|; so a dropped table costs its full weight. The report's micro value
  (sum of numerators / sum of denominators) is the mean TEDS per reference table over the corpus; the macro value
  is the mean over documents.
- ``tables.teds`` / ``tables.teds_s``, label ``"table/<k>"``: one row per reference table k (0-based, reading
  order, after splitting a truth string that holds several tables): its pair's value (numerator = value,
  denominator = 1), or 0.0 with ``"matched": false`` in the detail when no predicted table was paired with it.
  Summary rows per label then aggregate "the k-th table of each document".
- Detection at a named TEDS threshold tau (option ``detection_threshold``, default 0.5): TP = pairs with
  TEDS >= tau; ``tables.precision`` = TP / |P|, ``tables.recall`` = TP / |R|, ``tables.f1`` = 2 TP / (|R| + |P|)
  (= 2PR / (P + R), and defined as 0 when TP = 0 even if |P| = 0).

States, decided in this order (``no_reference`` documents never reach `audit`: `applies` is False without a
non-blank reference table):

1. The parser gave at least one predicted table: everything is scored as above.
2. It gave none, and it declares that it looked for tables in this input (``ParsedDocument.settings[
   "table_extraction"] is True``, see `TABLE_EXTRACTION`): TEDS, TEDS-S, recall and F1 are 0 (every reference table
   dropped); precision is ``no_prediction`` (TP / 0).
3. It gave none and declares ``False`` (unstructured's ``fast`` PDF strategy and text partitioner, PyMuPDF with
   ``tables = false``, a precomputed JSON without a ``tables`` key) or declares nothing (Tesseract, the reference
   parser, precomputed text files): under ``missing_table = "zero"`` (the default) scored as 2, every reference
   table a 0 (the detail names why the parser produced none), so a pipeline that extracts no table loses a table
   comparison instead of showing no value; under ``"skip"`` every row is ``no_prediction`` with the reason.

Convention ``missing_table`` (option of this auditor, printed in the report's conventions line; `MISSING_TABLE`):
``"zero"`` counts a reference table the pipeline did not extract (unmatched) as TEDS 0 in the document value, as
above; ``"skip"`` leaves it out: TEDS_doc = (sum over matched r of TEDS(r, pair(r))) / |matched|, its ``table/<k>``
rows ``no_prediction``, a document with no matched table ``no_prediction``. Detection (precision, recall, F1) is
the same under both for a parser that looks for tables; for one that does not (above), ``"zero"`` scores recall and
F1 0 and ``"skip"`` leaves every detection row ``no_prediction``.

A reference table the metric cannot use (unparseable, no ``<table>``, a span attribute that is not an integer:
``error``; over the node budget: ``skipped``), matched or not, and a pair it cannot score (the same problems on the
predicted side, or over the time budget) give that state to the ``table/<k>`` row and to the document row of the
same metric (the document value would be a guess); the detection rows then take the state of the TEDS rows. Nothing
raises out of `TablesAuditor.audit`.
"""

from __future__ import annotations

import math
from typing import Any

from ingestaudit.auditors.base import Auditor, ItemArtefacts
from ingestaudit.config import Limits
from ingestaudit.measurement import Score, State
from ingestaudit.metrics.specs import MetricSpec, register
from ingestaudit.metrics.table_html import split_tables
from ingestaudit.metrics.teds import (DETECTION_TEDS_THRESHOLD, TableMatch, TedsBudget, TedsOptions, TedsResult,
                                      match_tables, parse_table)
from ingestaudit.truth import Truth

TABLE_EXTRACTION = "table_extraction"
"""Key of `ParsedDocument.settings` by which a parser declares, per document, whether it looked for tables in this
input: ``True`` (an empty ``tables`` then means "found none", scored 0) or ``False`` (it cannot: ``no_prediction``).
A parser that leaves it out and returns no table is treated as ``False``."""
TABLE_EXTRACTION_NOTE = "table_extraction_note"
"""Optional `ParsedDocument.settings` key: why the parser does not extract tables from this input (shown in the
``no_prediction`` reason)."""

DEFAULT_MAX_TABLES: int = Limits.model_fields["tables"].default
"""Default of ``max_tables``: the ``[limits] tables`` default (`ingestaudit.config.Limits`)."""

LABEL_PREFIX = "table/"
"""Per-reference-table rows carry the label ``table/<k>``."""

_DOC = ("tables.teds", "tables.teds_s")
_DETECTION = ("tables.precision", "tables.recall", "tables.f1")

METRICS = (
    MetricSpec("tables.teds", "TEDS = 1 - EditDist(T_ref, T_pred) / max(n_ref, n_pred) on the PubTabNet table tree "
               "(Zhong et al. 2020, eq. 3; PubTabNet src/metric.py); reference and predicted tables paired by "
               "Hungarian assignment on TEDS; label '' per document = sum of pair TEDS / reference tables "
               "(an unmatched reference table counts 0; left out under missing_table = skip), label 'table/<k>' per "
               "reference table k",
               higher_is_better=True, unit="tables"),
    MetricSpec("tables.teds_s", "TEDS-S: TEDS with cell content ignored (structure only: tags, colspan, rowspan), "
               "on the pairs chosen by TEDS; label '' per document = sum / reference tables (unmatched = 0, or left "
               "out under missing_table = skip), "
               "label 'table/<k>' per reference table k", higher_is_better=True, unit="tables"),
    MetricSpec("tables.precision", "detected / predicted tables; a detected table is a paired one with TEDS >= the "
               "detection threshold (default 0.5); per document", higher_is_better=True, ci="wilson",
               unit="tables"),
    MetricSpec("tables.recall", "detected / reference tables (detected: paired with TEDS >= the detection "
               "threshold, default 0.5); per document", higher_is_better=True, ci="wilson", unit="tables"),
    MetricSpec("tables.f1", "2 x detected / (reference + predicted tables) = 2PR/(P+R) of table detection at the "
               "TEDS threshold (default 0.5); per document", higher_is_better=True, unit="tables"),
)
register(*METRICS)


MISSING_TABLE = ("zero", "skip")
"""Values of the ``missing_table`` convention (module docstring); the first is the default."""


def reference_tables(truth: Truth) -> list[str]:
    """The document's reference tables in reading order: every non-blank truth string, split by `split_tables`."""
    return [t for html in truth.tables if html and html.strip() for t in split_tables(html)]


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"[auditor_options.tables] {name} must be true or false, not {value!r}")
    return value


class TablesAuditor(Auditor):
    """TEDS / TEDS-S per reference table and per document, and detection precision / recall / F1 (see the module
    docstring for every definition and state).

    Args:
        detection_threshold: TEDS at or above which a paired table counts as detected, in [0, 1] (default 0.5).
        th_as_td, strip_inline_tags, unicode, collapse_whitespace, wrap_bare_rows: the named deviations of
            `ingestaudit.metrics.teds.TedsOptions`, all off by default (= the published metric).
        max_nodes: largest table tree compared (nodes); a larger pair is ``skipped`` (default 2000).
        time_s: wall-clock seconds per table pair (> 0), None for no limit (default 30); over it -> ``skipped``.
        max_tables: most reference or predicted tables of one document (the run's ``[limits] tables``, default
            `DEFAULT_MAX_TABLES`): the pairing compares every reference table with every predicted one (|R| x |P|
            TEDS and a matrix of that size), so a document over it has its tables rows ``skipped`` with the limit
            and the counts named (no ``table/<k>`` rows when the reference side is over).
        missing_table: ``"zero"`` (default) or ``"skip"``: how a reference table the pipeline did not extract
            counts (module docstring, `MISSING_TABLE`).

    Raises:
        ValueError: an option of the wrong type or out of range (the message names the option).
    """

    stage = "tables"
    metrics = METRICS

    def __init__(self, detection_threshold: float = DETECTION_TEDS_THRESHOLD, th_as_td: bool = False,
                 strip_inline_tags: bool = False, unicode: str | None = None, collapse_whitespace: bool = False,
                 wrap_bare_rows: bool = False, max_nodes: int = TedsBudget.max_nodes,
                 time_s: float | None = TedsBudget.time_s, max_tables: int | None = None,
                 missing_table: str = MISSING_TABLE[0]):
        if missing_table not in MISSING_TABLE:
            raise ValueError(f"[auditor_options.tables] missing_table must be one of "
                             f"{', '.join(repr(v) for v in MISSING_TABLE)}, not {missing_table!r}")
        self.missing_table = missing_table
        if isinstance(detection_threshold, bool) or not isinstance(detection_threshold, (int, float)) \
                or not 0.0 <= detection_threshold <= 1.0:
            raise ValueError(f"[auditor_options.tables] detection_threshold must be a number in [0, 1], not "
                             f"{detection_threshold!r}")
        if isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1:
            raise ValueError(f"[auditor_options.tables] max_nodes must be a positive integer, not {max_nodes!r}")
        if time_s is not None and (isinstance(time_s, bool) or not isinstance(time_s, (int, float))
                                   or not math.isfinite(time_s) or time_s <= 0):
            raise ValueError(f"[auditor_options.tables] time_s must be a positive number of seconds, not {time_s!r}")
        max_tables = DEFAULT_MAX_TABLES if max_tables is None else max_tables
        if isinstance(max_tables, bool) or not isinstance(max_tables, int) or max_tables < 1:
            raise ValueError(f"[auditor_options.tables] max_tables must be a positive integer, not {max_tables!r}")
        self.max_tables = max_tables
        if unicode is not None and unicode not in ("NFC", "NFKC"):
            raise ValueError(f"[auditor_options.tables] unicode must be 'NFC' or 'NFKC' (or absent), not {unicode!r}")
        self.threshold = float(detection_threshold)
        self.teds_options = TedsOptions(
            th_as_td=_bool("th_as_td", th_as_td), strip_inline_tags=_bool("strip_inline_tags", strip_inline_tags),
            unicode=unicode,  # type: ignore[arg-type]
            collapse_whitespace=_bool("collapse_whitespace", collapse_whitespace),
            wrap_bare_rows=_bool("wrap_bare_rows", wrap_bare_rows))
        self.budget = TedsBudget(max_nodes=max_nodes, time_s=None if time_s is None else float(time_s))

    def options(self) -> dict[str, Any]:
        """The definition in force: deviations (each named), detection threshold, budget, pairing and the document
        value's formula."""
        o = self.teds_options
        return {
            "definition": "TEDS, PubTabNet reference metric (Zhong et al. 2020)",
            "deviations": o.describe(),
            "th_as_td": o.th_as_td,
            "strip_inline_tags": o.strip_inline_tags,
            "unicode": o.unicode,
            "collapse_whitespace": o.collapse_whitespace,
            "wrap_bare_rows": o.wrap_bare_rows,
            "detection_threshold": self.threshold,
            "budget": {"max_nodes": self.budget.max_nodes, "time_s": self.budget.time_s,
                       "max_tables": self.max_tables},
            "pairing": "Hungarian assignment maximising summed TEDS (scipy linear_sum_assignment)",
            "missing_table": self.missing_table,
            "document_value": ("sum of pair values / reference tables; an unmatched reference table counts 0"
                               if self.missing_table == "zero" else
                               "sum of pair values / matched reference tables; an unmatched one is left out"),
            "no_tables_found": ("0" if self.missing_table == "zero" else
                                f"0 when the parser declares settings[{TABLE_EXTRACTION!r}] = true, else "
                                "no_prediction"),
        }

    def applies(self, truth: Truth) -> bool:
        """True when the document has at least one non-blank reference table."""
        return any(t and t.strip() for t in truth.tables)

    # -- audit --------------------------------------------------------------------------------------------------

    def audit(self, item: ItemArtefacts) -> list[Score]:
        """Five document rows (label ``""``) plus ``tables.teds`` and ``tables.teds_s`` rows per reference table
        (label ``table/<k>``). Never raises for bad parser output or bad HTML."""
        truth, parsed = item.truth, item.parsed
        refs = reference_tables(truth)
        preds = [t for html in parsed.tables if isinstance(html, str) and html.strip() for t in split_tables(html)]
        blank = len(parsed.tables) - sum(1 for h in parsed.tables if isinstance(h, str) and h.strip())
        if not refs:  # applies() was False; the runner does not call audit then
            return [Score.missing(m, State.NO_REFERENCE, "no reference table") for m in _DOC + _DETECTION]
        if len(refs) > self.max_tables or len(preds) > self.max_tables:  # |R| x |P| pairs: bounded before any work
            over = [f"{n} {side} tables" for side, n in (("reference", len(refs)), ("predicted", len(preds)))
                    if n > self.max_tables]
            reason = f"{' and '.join(over)}, over limits.tables = {self.max_tables}: not compared"
            return self._all_missing(refs if len(refs) <= self.max_tables else [], State.SKIPPED, reason)
        settings = parsed.settings if isinstance(parsed.settings, dict) else {}
        declared = settings.get(TABLE_EXTRACTION)
        if not preds and declared is not True:
            if declared is False:
                reason = f"parser {parsed.parser or '?'} does not extract tables from this input"
            else:
                reason = (f"parser {parsed.parser or '?'} returned no table and does not declare table extraction "
                          f"(settings[{TABLE_EXTRACTION!r}])")
            if settings.get(TABLE_EXTRACTION_NOTE):
                reason += f" ({settings[TABLE_EXTRACTION_NOTE]})"
            if self.missing_table == "skip":
                return self._all_missing(refs, State.NO_PREDICTION, reason + "; missing_table = skip")
            try:
                problems = self._reference_problems(refs)
            except Exception as exc:  # noqa: BLE001 - a metric bug must become error rows, never escape
                return self._all_missing(refs, State.ERROR, f"TEDS failed: {type(exc).__name__}: {exc}")
            return self._scored(refs, None, problems, blank, not_extracted=reason)
        try:
            problems = self._reference_problems(refs)
            match = None
            if preds:
                match = match_tables(refs, preds, self.teds_options, threshold=self.threshold, budget=self.budget)
        except Exception as exc:  # noqa: BLE001 - a metric bug must become error rows, never escape
            return self._all_missing(refs, State.ERROR, f"TEDS failed: {type(exc).__name__}: {exc}")
        return self._scored(refs, match, problems, blank)

    def _reference_problems(self, refs: list[str]) -> dict[int, tuple[State, str]]:
        """Reference tables the metric cannot use (unparseable, no <table>, a non-integer span: error; over the node
        budget: skipped), by index."""
        out: dict[int, tuple[State, str]] = {}
        for k, ref in enumerate(refs):
            parsed = parse_table(ref, self.teds_options, self.budget)
            if parsed.state is not None:
                state = State.SKIPPED if parsed.state == "too_large" else State.ERROR
                out[k] = (state, f"reference table {k}: {parsed.message}")
        return out

    def _all_missing(self, refs: list[str], state: State, reason: str) -> list[Score]:
        rows = [Score.missing(m, state, reason) for m in _DOC + _DETECTION]
        rows += [Score.missing(m, state, reason, label=f"{LABEL_PREFIX}{k}") for m in _DOC for k in range(len(refs))]
        return rows

    def _scored(self, refs: list[str], match: TableMatch | None, problems: dict[int, tuple[State, str]],
                blank: int, not_extracted: str = "") -> list[Score]:
        """Rows from the pairing (``match`` None: the parser found no table, every reference table unmatched;
        ``not_extracted``: why, when it did not look). A reference table in ``problems`` gives its state to its rows
        and to the document rows; an unmatched one counts 0 or is left out (`missing_table`)."""
        skip = self.missing_table == "skip"
        n_true = len(refs)
        n_pred = match.n_pred if match is not None else 0
        pairs = match.pairs if match is not None else ()
        by_ref = {p.true_index: p for p in pairs}
        common: dict[str, Any] = {"reference_tables": n_true, "predicted_tables": n_pred,
                                  "pairs": {str(p.true_index): p.pred_index for p in pairs},
                                  "unmatched_reference": [k for k in range(n_true) if k not in by_ref],
                                  "unmatched_predicted": list(match.unmatched_pred) if match is not None else [],
                                  "deviations": self.teds_options.describe()}
        if match is None:
            common["note"] = (f"{not_extracted}: every reference table counts 0 (missing_table = zero)"
                              if not_extracted else
                              "the parser looked for tables and found none: every reference table counts 0")
        common["missing_table"] = self.missing_table
        if blank:
            common["blank_predicted_strings"] = blank
        rows: list[Score] = []
        per_table: list[Score] = []
        bad_states: dict[str, set[State]] = {}
        for metric in _DOC:
            total, counted = 0.0, 0
            bad: list[str] = []
            for k in range(n_true):
                label = f"{LABEL_PREFIX}{k}"
                pair = by_ref.get(k)
                if k in problems:
                    state, reason = problems[k]
                    detail: dict[str, Any] = {"matched": pair is not None, "reason": reason}
                elif pair is None and skip:
                    per_table.append(Score(metric, None, None, None, State.NO_PREDICTION, label, {
                        "matched": False, "reason": "not extracted: left out (missing_table = skip)"}))
                    continue
                elif pair is None:
                    counted += 1
                    per_table.append(Score.ratio(metric, 0.0, 1, label=label, detail={"matched": False}))
                    continue
                else:
                    res: TedsResult = pair.teds if metric == "tables.teds" else pair.teds_s
                    detail = _pair_detail(pair.pred_index, res)
                    if res.state == "ok" and res.value is not None:
                        total += res.value
                        counted += 1
                        per_table.append(Score.ratio(metric, res.value, 1, label=label, detail=detail))
                        continue
                    state = State.SKIPPED if res.state == "skipped" else State.ERROR
                    reason = f"table {k} vs predicted {pair.pred_index}: {res.state}: {res.message or res.state}"
                    detail["reason"] = res.message or res.state
                per_table.append(Score(metric, None, None, None, state, label, detail))
                bad.append(reason)
                bad_states.setdefault(metric, set()).add(state)
            if bad:
                state = State.ERROR if State.ERROR in bad_states[metric] else State.SKIPPED
                rows.append(Score(metric, None, None, None, state, "", {**common, "reason": "; ".join(bad)}))
            elif counted == 0:  # missing_table = skip and no reference table was extracted
                rows.append(Score(metric, None, None, None, State.NO_PREDICTION, "", {
                    **common, "reason": "no reference table was extracted: each is left out (missing_table = skip)"}))
            else:
                rows.append(Score.ratio(metric, total, counted, detail=dict(common)))
        tp = match.true_positives if match is not None else 0
        det = {"threshold": self.threshold, "detected": tp, "reference_tables": n_true, "predicted_tables": n_pred}
        if "tables.teds" in bad_states:
            state = State.ERROR if State.ERROR in bad_states["tables.teds"] else State.SKIPPED
            reason = "a reference table or a paired table could not be scored with TEDS, so detection is unknown"
            rows += [Score(m, None, None, None, state, "", {**det, "reason": reason}) for m in _DETECTION]
        else:
            if n_pred:
                rows.append(Score.ratio("tables.precision", tp, n_pred, detail=det))
            else:
                rows.append(Score(_DETECTION[0], None, 0, 0, State.NO_PREDICTION, "",
                                  {**det, "reason": "no predicted table: precision TP / 0 is undefined"}))
            rows.append(Score.ratio("tables.recall", tp, n_true, detail=det))
            rows.append(Score.ratio("tables.f1", 2 * tp, n_true + n_pred, detail=det))
        return rows + per_table


def _pair_detail(pred_index: int, res: TedsResult) -> dict[str, Any]:
    d: dict[str, Any] = {"matched": True, "predicted_index": pred_index, "n_nodes_reference": res.n_nodes_true,
                         "n_nodes_predicted": res.n_nodes_pred, "edit_distance": res.edit_distance}
    if res.message:
        d["message"] = res.message
    return d
