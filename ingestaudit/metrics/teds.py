"""TEDS and TEDS-S: tree-edit-distance similarity of HTML tables, exactly as PubTabNet publishes it.

Definition (Zhong, ShafieiBavani and Jimeno Yepes, "Image-based table recognition: data, model, and evaluation",
ECCV 2020, arXiv:1911.10683, eq. 3; reference implementation ``src/metric.py`` of ibm-aur-nlp/PubTabNet,
Apache-2.0, whose printed outputs in ``src/demo.ipynb`` this module reproduces to 1e-9):

    TEDS(T_a, T_b) = 1 - EditDist(T_a, T_b) / max(n_a, n_b)

- T_a, T_b: the table trees of `ingestaudit.metrics.table_tree` (table, thead/tbody, tr, td leaves with
  colspan/rowspan and character tokens; inline tags as tokens).
- EditDist: ordered tree edit distance (`ingestaudit.metrics.tree_edit`, equal to what APTED computes for this cost
  model) with insertion and deletion cost 1 and rename cost
      ren(v, w) = 1                                   if tag, colspan or rowspan differ,
                = Lev(c_v, c_w) / max(|c_v|, |c_w|)   if both are td and at least one has content,
                = 0                                   otherwise,
  where c_v is the token list of cell v and Lev the Levenshtein distance on token lists (rapidfuzz).
- n_a, n_b: number of element descendants of each ``<table>`` (``len(table.xpath(".//*"))`` in the reference:
  ``table`` excluded, inline elements inside cells included). Unit of TEDS: none; range [0, 1], 1 = identical.
- TEDS-S (structure only): the same with every cell's content emptied, so only tags and spans count.

Decisions where the reference has no defined or no sensible value (all documented in `TedsResult.state`):

- Reference HTML empty or None: state ``no_reference``, value None (the reference returns 0.0).
- Prediction empty or None: state ``no_prediction``, value None (the reference returns 0.0, a fake zero).
- Either side unparseable, without a ``<table>``, or with a ``td`` span that ``int()`` rejects (the reference
  raises): state ``error``, value None, the message names the side and the reason.
- Both tables empty (``<table></table>`` twice; n_a = n_b = 0, the reference divides by zero): value 1.0
  (identical trees), state ``ok``, with a message. One empty table against a non-empty one uses the formula.
- 1 - d/n below 0 (possible only for trees unlike tables, e.g. a chain of divs against a row of cells): clamped to
  0.0 with a message; the reference returns the negative number.
- Unescaped ``<`` or ``&`` in cell text, a ragged grid, several tables in one string: scored as parsed (exactly as
  the reference parses them), state ``ok``, with a message (see `ingestaudit.metrics.table_tree`).
- Over the budget (`TedsBudget`): state ``skipped``, value None, the sizes in the message.

Nothing here raises for bad HTML; only programming errors (wrong argument types for options/budget) raise.

Budget and why the run never hangs: a table whose tree has more than ``max_nodes`` nodes is skipped right after
lxml's parse (one C-level XPath count), before any per-cell work; memory is then bounded by two |T_a| x |T_b|
float64 matrices (32 MB at 1000 x 2000 nodes). Within the pair, the deadline ``time_s`` is checked between tiles
of rename costs (each at most ~5e7 machine-word Levenshtein operations) and before every row of the vectorised
tree-edit-distance loops (each a numpy operation over at most 2e6 cells), so an over-budget pair stops within
milliseconds of its deadline and is reported ``skipped``; nothing runs in a thread or subprocess, so nothing is
left behind. The one step that cannot be interrupted is the Levenshtein distance of a *single* pair of cells:
~ len_a * len_b / 64 word operations, about a second for two cells of ~250,000 characters each.

Speed: identical trees short-cut to d = 0 (exact); otherwise rename costs come from ``rapidfuzz.process.cdist``
on the cells (tokens mapped one-to-one to code points) and the distance from the batched Zhang-Shasha of
`ingestaudit.metrics.tree_edit`. ``benchmarks/bench_teds.py`` measures it against an apted baseline.

Note on the reference's parser call: its current ``src/metric.py`` passes ``HTMLParser(remove_comments=True)``
as the second positional argument of ``lxml.html.fromstring``, which is ``base_url``; lxml 6.1 rejects that with
``TypeError``. The parse here uses that parser as intended (comments removed); the earlier version that produced
the published demo values used lxml's default parser, which differs only when the HTML holds comments.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from ingestaudit.metrics.table_tree import TableHtmlError, TableTree, TedsOptions, parse_table_html
from ingestaudit.metrics.tree_edit import DeadlineExceeded, PostorderTree, tree_edit_distance

__all__ = [
    "DETECTION_TEDS_THRESHOLD",
    "ParsedTable",
    "TableMatch",
    "TablePair",
    "TedsBudget",
    "TedsOptions",
    "TedsResult",
    "compare_parsed",
    "compare_tables",
    "match_tables",
    "parse_table",
    "teds",
    "teds_s",
]

DETECTION_TEDS_THRESHOLD = 0.5
"""Default TEDS at or above which a matched (reference, predicted) pair counts as a detected table."""

_LEV_TILE_WORDS = 1_000  # reference-side 64-character words per rapidfuzz.cdist tile
_LEV_TILE_CHARS = 50_000  # prediction-side characters per tile (tile work <= 5e7 word operations)


@dataclass(frozen=True)
class TedsBudget:
    """Per-pair limits; a pair over either is ``skipped`` (never an error, never a hang).

    Attributes:
        max_nodes: largest tree (nodes, ``table`` included) compared; larger -> skipped before any work.
            Memory ~ 16 * n_a * n_b bytes (32 MB at 1000 x 2000).
        time_s: wall-clock seconds for one pair (parsing excluded), None for no limit.
    """

    max_nodes: int = 2000
    time_s: float | None = 30.0


@dataclass(frozen=True)
class TedsResult:
    """TEDS (or TEDS-S) of one reference/predicted table pair.

    Attributes:
        value: similarity in [0, 1], or None when ``state`` is not ``ok``.
        state: ``ok``, ``no_reference``, ``no_prediction``, ``error`` or ``skipped``.
        message: why the value is missing, or diagnostics worth reporting ("" when none).
        n_nodes_true, n_nodes_pred: the denominators' candidates (element descendants of each ``<table>``),
            None when that side has no table.
        edit_distance: the tree edit distance d (edit operations), None when not computed.
        structure_only: True for TEDS-S.
        options: the deviations in force (`TedsOptions.describe` prints them).
    """

    value: float | None
    state: str
    message: str = ""
    n_nodes_true: int | None = None
    n_nodes_pred: int | None = None
    edit_distance: float | None = None
    structure_only: bool = False
    options: TedsOptions = field(default_factory=TedsOptions)

    @property
    def metric(self) -> str:
        """``"teds"`` or ``"teds_s"``."""
        return "teds_s" if self.structure_only else "teds"


@dataclass(frozen=True)
class ParsedTable:
    """One side of a comparison, parsed once (reused for TEDS, TEDS-S and for many pairs in `match_tables`).

    Attributes:
        tree: the `TableTree`, or None when the HTML yields no table.
        shape: `PostorderTree` of ``tree`` (None with it).
        state: None when parsed; ``"empty"``, ``"no_table"``, ``"parse"``, ``"span"`` or ``"too_large"``.
        message: parse failure reason or "".
    """

    tree: TableTree | None
    shape: PostorderTree | None
    state: str | None
    message: str = ""


def parse_table(html: str | None, options: TedsOptions | None = None, budget: TedsBudget | None = None) -> ParsedTable:
    """Parse one HTML table for TEDS; never raises for bad HTML (the failure is kept in ``state``).

    A table over ``budget.max_nodes`` stops right after lxml's parse with state ``"too_large"``.
    """
    budget = budget or TedsBudget()
    try:
        tree = parse_table_html(html, options, max_nodes=budget.max_nodes)
    except TableHtmlError as exc:
        return ParsedTable(None, None, exc.kind, str(exc))
    return ParsedTable(tree, PostorderTree.from_parents(tree.parents), None)


def _token_strings(t1: TableTree, t2: TableTree, idx1: np.ndarray, idx2: np.ndarray) -> tuple[list[str], list[str]]:
    """Cell token lists as strings, one code point per token, injectively over both tables (for rapidfuzz)."""
    cells1 = [t1.contents[i] for i in idx1]
    cells2 = [t2.contents[j] for j in idx2]
    multi = sorted({tok for cell in (*cells1, *cells2) for tok in cell if len(tok) != 1})
    if not multi:
        return ["".join(c) for c in cells1], ["".join(c) for c in cells2]
    used = {tok for cell in (*cells1, *cells2) for tok in cell if len(tok) == 1 and ord(tok) >= 0xF0000}
    code, mapping = 0xF0000, {}
    for tok in multi:
        while chr(code) in used:
            code += 1
        mapping[tok] = chr(code)
        code += 1

    def encode(cell: tuple[str, ...]) -> str:
        return "".join(mapping.get(tok, tok) for tok in cell)

    return [encode(c) for c in cells1], [encode(c) for c in cells2]


def _rename_costs(t1: TableTree, t2: TableTree, structure_only: bool, deadline: float | None) -> np.ndarray:
    """ren(v, w) for every node pair (see module docstring), float64 array (t1.size, t2.size)."""
    keys: dict[tuple, int] = {}
    lab1 = np.array([keys.setdefault((t, c, r), len(keys)) for t, c, r in zip(t1.tags, t1.colspans, t1.rowspans)])
    lab2 = np.array([keys.setdefault((t, c, r), len(keys)) for t, c, r in zip(t2.tags, t2.colspans, t2.rowspans)])
    ren = (lab1[:, None] != lab2[None, :]).astype(np.float64)
    if structure_only:
        return ren
    td1 = np.flatnonzero(np.array([c is not None for c in t1.contents], dtype=bool))
    td2 = np.flatnonzero(np.array([c is not None for c in t2.contents], dtype=bool))
    if td1.size == 0 or td2.size == 0:
        return ren
    s1, s2 = _token_strings(t1, t2, td1, td2)
    len1 = np.array([len(s) for s in s1], dtype=np.int64)
    len2 = np.array([len(s) for s in s2], dtype=np.int64)
    same = lab1[td1][:, None] == lab2[td2][None, :]
    # Tiles of bounded Levenshtein work (bit-parallel: ~ ceil(len_a / 64) * len_b word operations per pair), so
    # the deadline is checked every few tens of milliseconds however long the cells are.
    row_tiles = _tiles((len1 + 63) // 64 + 1, _LEV_TILE_WORDS)
    col_tiles = _tiles(len2 + 1, _LEV_TILE_CHARS)
    for r0, r1 in row_tiles:
        for c0, c1 in col_tiles:
            if deadline is not None and time.perf_counter() >= deadline:
                raise DeadlineExceeded
            dist = process.cdist(s1[r0:r1], s2[c0:c1], scorer=Levenshtein.distance, dtype=np.int64, workers=1)
            longest = np.maximum(len1[r0:r1, None], len2[None, c0:c1])
            norm = np.divide(dist, longest, out=np.zeros(dist.shape, dtype=np.float64), where=longest > 0)
            ren[np.ix_(td1[r0:r1], td2[c0:c1])] = np.where(same[r0:r1, c0:c1], norm, 1.0)
    return ren


def _tiles(weights: np.ndarray, cap: int) -> list[tuple[int, int]]:
    """Consecutive index ranges whose weights sum to at most ``cap`` (a heavier single item is its own range)."""
    out: list[tuple[int, int]] = []
    start, acc = 0, 0
    for k, w in enumerate(weights.tolist()):
        if acc and acc + w > cap:
            out.append((start, k))
            start, acc = k, 0
        acc += w
    if start < len(weights):
        out.append((start, len(weights)))
    return out


def _identical(t1: TableTree, t2: TableTree, structure_only: bool) -> bool:
    """Same shape and labels (and cell tokens unless structure only): the distance is 0 without any search."""
    return (
        t1.parents == t2.parents
        and t1.tags == t2.tags
        and t1.colspans == t2.colspans
        and t1.rowspans == t2.rowspans
        and (structure_only or t1.contents == t2.contents)
    )


def compare_parsed(
    true: ParsedTable,
    pred: ParsedTable,
    *,
    structure_only: bool = False,
    options: TedsOptions | None = None,
    budget: TedsBudget | None = None,
) -> TedsResult:
    """TEDS (or TEDS-S) of two tables parsed by `parse_table` (with the same ``options``); see module docstring.

    Args:
        true, pred: the parsed reference and predicted tables (parse once, compare many times).
        structure_only: True for TEDS-S.
        options: recorded in the result (the tables were already built with them).
        budget: node budget (checked again on the tree sizes) and time budget for this pair.

    Returns:
        A `TedsResult` (value in [0, 1] or a state); never raises for bad tables.
    """
    options = options or TedsOptions()
    budget = budget or TedsBudget()
    base = {"structure_only": structure_only, "options": options}
    if true.state == "empty":
        return TedsResult(None, "no_reference", "reference table is empty", **base)
    n_true = true.tree.n_nodes if true.tree is not None else None
    n_pred = pred.tree.n_nodes if pred.tree is not None else None
    base.update(n_nodes_true=n_true, n_nodes_pred=n_pred)
    if true.state == "too_large" or pred.state == "too_large":
        sides = (("reference", true), ("prediction", pred))
        why = [f"{side}: {t.message}" for side, t in sides if t.state == "too_large"]
        return TedsResult(None, "skipped", "over the node budget: " + "; ".join(why), **base)
    if true.state is not None:
        return TedsResult(None, "error", f"reference: {true.message}", **base)
    if pred.state == "empty":
        return TedsResult(None, "no_prediction", "prediction is empty", **base)
    if pred.state is not None:
        return TedsResult(None, "error", f"prediction: {pred.message}", **base)
    t1, t2 = true.tree, pred.tree
    assert t1 is not None and t2 is not None and true.shape is not None and pred.shape is not None
    notes = [f"reference: {n}" for n in t1.notes] + [f"prediction: {n}" for n in t2.notes]
    if max(t1.size, t2.size) > budget.max_nodes:
        return TedsResult(
            None,
            "skipped",
            f"over the node budget: reference tree {t1.size} nodes, prediction tree {t2.size} nodes "
            f"(max_nodes={budget.max_nodes})",
            **base,
        )
    start = time.perf_counter()
    deadline = None if budget.time_s is None else start + budget.time_s
    try:
        if _identical(t1, t2, structure_only):
            distance = 0.0  # exact: every rename on the identity mapping costs 0, and d >= 0
        else:
            ren = _rename_costs(t1, t2, structure_only, deadline)
            distance = tree_edit_distance(true.shape, pred.shape, ren, deadline)
    except DeadlineExceeded:
        return TedsResult(
            None,
            "skipped",
            f"over the time budget of {budget.time_s} s: reference tree {t1.size} nodes, prediction tree "
            f"{t2.size} nodes",
            **base,
        )
    n = max(t1.n_nodes, t2.n_nodes)
    if n == 0:
        notes.insert(0, "both tables are empty; defined as 1.0 (the reference divides by zero)")
        return TedsResult(1.0, "ok", "; ".join(notes), edit_distance=distance, **base)
    value = 1.0 - distance / n
    if value < 0.0:
        notes.insert(0, f"1 - d/n = {value:.6g} clamped to 0.0 (the reference returns the negative value)")
        value = 0.0
    return TedsResult(value, "ok", "; ".join(notes), edit_distance=distance, **base)


def compare_tables(
    true_html: str | None,
    pred_html: str | None,
    *,
    structure_only: bool = False,
    options: TedsOptions | None = None,
    budget: TedsBudget | None = None,
) -> TedsResult:
    """TEDS (``structure_only=False``) or TEDS-S of one reference table and one predicted table.

    Args:
        true_html: reference (ground-truth) HTML holding one ``<table>`` (fragment or full document).
        pred_html: predicted HTML.
        structure_only: True for TEDS-S.
        options: named deviations (default: none, the published metric).
        budget: per-pair node and time budget (default `TedsBudget()`).

    Returns:
        `TedsResult` with value in [0, 1] or a state (see module docstring). Never raises for bad HTML.
    """
    options = options or TedsOptions()
    return compare_parsed(
        parse_table(true_html, options, budget),
        parse_table(pred_html, options, budget),
        structure_only=structure_only,
        options=options,
        budget=budget,
    )


def teds(
    true_html: str | None,
    pred_html: str | None,
    options: TedsOptions | None = None,
    budget: TedsBudget | None = None,
) -> float | None:
    """TEDS in [0, 1] (None when undefined; use `compare_tables` for the state and message)."""
    return compare_tables(true_html, pred_html, options=options, budget=budget).value


def teds_s(
    true_html: str | None,
    pred_html: str | None,
    options: TedsOptions | None = None,
    budget: TedsBudget | None = None,
) -> float | None:
    """TEDS-S (structure only) in [0, 1] (None when undefined; see `compare_tables`)."""
    return compare_tables(true_html, pred_html, structure_only=True, options=options, budget=budget).value


@dataclass(frozen=True)
class TablePair:
    """One matched pair of `match_tables`.

    Attributes:
        true_index, pred_index: positions in the input lists.
        teds, teds_s: the pair's `TedsResult` for TEDS and TEDS-S.
        detected: True when ``teds.value >= threshold`` (a true positive of detection).
    """

    true_index: int
    pred_index: int
    teds: TedsResult
    teds_s: TedsResult
    detected: bool


@dataclass(frozen=True)
class TableMatch:
    """Document-level table fidelity: optimal pairing, TEDS per pair and per document, detection P/R/F1.

    Document TEDS (and likewise TEDS-S, on the same pairs):

        TEDS_doc = (1 / N_true) * sum over reference tables t of TEDS(t, pred matched to t)   (0 if unmatched)

    Detection: TP = matched pairs with TEDS >= threshold; precision = TP / N_pred, recall = TP / N_true,
    F1 = 2PR / (P + R) (0.0 when P + R = 0).

    Attributes:
        pairs: matched pairs, ordered by ``true_index``.
        unmatched_true, unmatched_pred: indices left without a partner (more tables on one side).
        n_true, n_pred: table counts.
        true_positives: detected pairs.
        threshold: the TEDS threshold used for detection.
        teds, teds_s: document values in [0, 1], None unless ``state`` is ``ok``.
        state: ``ok``; ``no_reference`` (no reference table); ``no_prediction`` (no predicted table while the
            reference has some: the stage produced nothing, not a zero); ``error`` or ``skipped`` when a
            matched pair could not be scored (then the document value would be a guess).
        message: reasons and per-pair diagnostics.
        options: the deviations in force.
    """

    pairs: tuple[TablePair, ...]
    unmatched_true: tuple[int, ...]
    unmatched_pred: tuple[int, ...]
    n_true: int
    n_pred: int
    true_positives: int
    threshold: float
    teds: float | None
    teds_s: float | None
    state: str
    message: str = ""
    options: TedsOptions = field(default_factory=TedsOptions)

    @property
    def precision(self) -> float | None:
        """TP / N_pred in [0, 1]; None when there is no predicted table."""
        return self.true_positives / self.n_pred if self.n_pred else None

    @property
    def recall(self) -> float | None:
        """TP / N_true in [0, 1]; None when there is no reference table."""
        return self.true_positives / self.n_true if self.n_true else None

    @property
    def f1(self) -> float | None:
        """2PR / (P + R) in [0, 1]; 0.0 when P + R = 0; None when P or R is None."""
        p, r = self.precision, self.recall
        if p is None or r is None:
            return None
        return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def match_tables(
    true_htmls: Sequence[str],
    pred_htmls: Sequence[str],
    options: TedsOptions | None = None,
    *,
    threshold: float = DETECTION_TEDS_THRESHOLD,
    budget: TedsBudget | None = None,
) -> TableMatch:
    """Pair a document's reference and predicted tables by optimal assignment on TEDS, then score them.

    Pairing: the assignment maximising the sum of TEDS over pairs (Hungarian algorithm,
    ``scipy.optimize.linear_sum_assignment``), min(N_true, N_pred) pairs; a pair whose TEDS is undefined
    (error/skipped) counts 0 in the assignment; ties are broken by scipy's (deterministic) implementation.
    Empty or None HTML in either list is not a table: it is ignored with a note in ``message`` (indices in the
    result still refer to the input lists, and N_true / N_pred count the non-empty entries).

    Args:
        true_htmls: reference tables in reading order (one ``<table>`` each).
        pred_htmls: predicted tables.
        options: deviations applied to every comparison.
        threshold: TEDS at or above which a matched pair is a detected table (default
            `DETECTION_TEDS_THRESHOLD` = 0.5).
        budget: per-pair budget.

    Returns:
        `TableMatch` (see there for the formulas and states). Never raises for bad HTML.
    """
    options = options or TedsOptions()
    budget = budget or TedsBudget()
    parsed_true = [parse_table(h, options, budget) for h in true_htmls]
    parsed_pred = [parse_table(h, options, budget) for h in pred_htmls]
    problems: list[str] = []
    for side, items in (("reference", parsed_true), ("predicted", parsed_pred)):
        blank = [k for k, t in enumerate(items) if t.state == "empty"]
        if blank:
            problems.append(f"empty {side} HTML at index {blank} ignored (not a table)")
    true_ids = [k for k, t in enumerate(parsed_true) if t.state != "empty"]
    pred_ids = [k for k, t in enumerate(parsed_pred) if t.state != "empty"]
    n_true, n_pred = len(true_ids), len(pred_ids)
    empty = {"options": options, "threshold": threshold, "true_positives": 0, "pairs": (), "teds_s": None}
    if n_true == 0:
        return TableMatch(
            unmatched_true=(), unmatched_pred=tuple(pred_ids), n_true=0, n_pred=n_pred, teds=None,
            state="no_reference", message="; ".join(["no reference table", *problems]), **empty,
        )
    if n_pred == 0:
        return TableMatch(
            unmatched_true=tuple(true_ids), unmatched_pred=(), n_true=n_true, n_pred=0, teds=None,
            state="no_prediction", message="; ".join(["no predicted table", *problems]), **empty,
        )
    results: dict[tuple[int, int], TedsResult] = {}
    score = np.zeros((n_true, n_pred), dtype=np.float64)
    for x, a in enumerate(true_ids):
        for y, b in enumerate(pred_ids):
            res = compare_parsed(parsed_true[a], parsed_pred[b], options=options, budget=budget)
            results[a, b] = res
            score[x, y] = res.value if res.value is not None else 0.0
    from scipy.optimize import linear_sum_assignment  # imported on use: 0.4 s of start-up

    rows, cols = linear_sum_assignment(score, maximize=True)
    pairs: list[TablePair] = []
    total = total_s = 0.0
    for a, b in sorted((true_ids[x], pred_ids[y]) for x, y in zip(rows.tolist(), cols.tolist())):
        res = results[a, b]
        res_s = compare_parsed(parsed_true[a], parsed_pred[b], structure_only=True, options=options, budget=budget)
        detected = res.value is not None and res.value >= threshold
        pairs.append(TablePair(a, b, res, res_s, detected))
        for r in (res, res_s):
            if r.state != "ok":
                problems.append(f"reference table {a} vs predicted table {b} ({r.metric}): {r.state}: {r.message}")
        total += res.value or 0.0
        total_s += res_s.value or 0.0
    matched_true = {p.true_index for p in pairs}
    matched_pred = {p.pred_index for p in pairs}
    unmatched_true = tuple(i for i in true_ids if i not in matched_true)
    unmatched_pred = tuple(j for j in pred_ids if j not in matched_pred)
    tp = sum(p.detected for p in pairs)
    states = {r.state for p in pairs for r in (p.teds, p.teds_s)} - {"ok"}
    state = "error" if "error" in states else ("skipped" if states else "ok")
    ok = state == "ok"
    return TableMatch(
        pairs=tuple(pairs),
        unmatched_true=unmatched_true,
        unmatched_pred=unmatched_pred,
        n_true=n_true,
        n_pred=n_pred,
        true_positives=tp,
        threshold=threshold,
        teds=total / n_true if ok else None,
        teds_s=total_s / n_true if ok else None,
        state=state,
        message="; ".join(problems),
        options=options,
    )
