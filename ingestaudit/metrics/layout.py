"""Layout and structure metrics: heading matching, hierarchy, reading order and list integrity. Pure, no I/O.

Definitions (issue 12; the similarity is the title-accuracy measure of practitioners' RAG parsing guides, i.e. the
normalized Levenshtein similarity of the ANLS metric, Biten et al. 2019, "Scene Text Visual Question Answering",
ICCV, arXiv:1905.13648: NL(a, b) = d(a, b) / max(|a|, |b|), similarity 1 - NL, used here without ANLS's 0.5 cut-off):

* **Processor** `process` (named ``nfc-casefold-ws``): Unicode NFC, then ``str.casefold``, then every run of white
  space collapsed to one space and the ends stripped. Numbering prefixes are kept: "2.1 Methods" is not "Methods".
  Compatibility characters are not folded (NFC, not NFKC: a full-width "Ａ" stays), but Unicode full case folding
  expands some characters: "ß" -> "ss", the ligature "ﬁ" -> "fi".
* **Similarity** ``sim(a, b) = 1 - d(a, b) / max(|a|, |b|)`` with ``d`` the unit-cost Levenshtein distance over code
  points (``rapidfuzz.distance.Levenshtein.normalized_similarity``, RapidFuzz 3: distance normalised by the largest
  possible distance, max(len1, len2) for unit weights), on processed texts unless ``processor=None``; 1.0 when both
  are empty. "Introduction" vs "INTRODUCTION": 1.0 processed, 1 - 11/12 = 0.0833 raw; "2.1 Methods" vs "Methods":
  1 - 4/11 = 0.6364 (numbering prefixes count).
* **Matching** `match_texts` (used by `heading_counts`): a one-to-one assignment between labelled and predicted
  headings maximising the summed similarity (Hungarian algorithm, ``scipy.optimize.linear_sum_assignment``) over the pairs whose similarity reaches
  the threshold (default 0.8); pairs below it are never matched.
* **Parent** of heading i in a heading list: the nearest earlier heading with a strictly smaller level (None at the
  top, or when i's level is unknown; a heading of unknown level is never a parent).
* **Order discordance** `kendall_discordance`: over the located reference paragraphs, the share of pairs whose order
  in the parsed text is the reverse of their reference order (the normalized Kendall tau distance K/C(n, 2), Kendall
  1938, "A new measure of rank correlation", Biometrika 30: 0 = reference order, 1 = reversed); a tie in position
  counts 1/2 (Fagin et al. 2004, "Comparing and aggregating rankings with ties", PODS, penalty p = 1/2). Counted in
  O(n log n) (merge sort); the example pairs listed in the report, at most ``max_examples``, are found with a
  segment tree in O((n + max_examples) log n).
* **Locating paragraphs** `locate_paragraphs`: each reference paragraph on its own, where it begins (exact, else by
  its first 32 characters, else fuzzy >= 0.9); deliberately not through the extraction alignment (issue 12's first
  wording): an edit-distance alignment is monotone (it never crosses), so a paragraph the parser moved comes out of
  it as deleted text plus inserted text, never as out of order; through it the order metric would read 0 for every
  moved paragraph and the move would be counted as lost text by the extraction metrics instead.
* **List integrity** `list_integrity`: per labelled list, its items matched one to one to predicted list items (same
  matching as headings), and of those the largest subset whose predicted order follows the labelled order (longest
  increasing subsequence); the count of those items over the labelled items.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz.distance import Levenshtein

PROCESSOR_NAME = "nfc-casefold-ws"
"""Name of `process`, printed next to every heading number."""
DEFAULT_THRESHOLD = 0.8
"""Default minimum similarity for two headings (or list items) to be matched."""

_WS = re.compile(r"\s+")


def process(text: str) -> str:
    """The ``nfc-casefold-ws`` processor: NFC, casefold, white-space runs -> one space, ends stripped.

    Example: ``process(" Intro\\u00a0duction\\n") == "intro duction"``.
    """
    return _WS.sub(" ", unicodedata.normalize("NFC", text).casefold()).strip()


def similarity(a: str, b: str, processor: Callable[[str], str] | None = process) -> float:
    """``1 - d(a, b) / max(|a|, |b|)`` in [0, 1], d = Levenshtein distance over code points after ``processor``
    (None: raw texts). Both empty -> 1.0.

    Examples: ("Introduction", "INTRODUCTION") -> 1.0; with ``processor=None`` -> 0.08333 (1 - 11/12);
    ("2.1 Methods", "Methods") -> 0.63636 (1 - 4/11).
    """
    if processor is not None:
        a, b = processor(a), processor(b)
    return float(Levenshtein.normalized_similarity(a, b))


@dataclass(frozen=True)
class HeadingLabel:
    """A heading: ``level`` (1 = top; None = unknown) and ``text``."""

    level: int | None
    text: str


def heading_matches(label: str, heading: str, threshold: float = DEFAULT_THRESHOLD) -> bool:
    """Whether a labelled heading text and a found one match: ``similarity(label, heading) >= threshold`` on
    processed texts, the pair test of `match_texts` (the layout audit's heading matching). Section evidence items are
    matched to a parser's headings with it (`ingestaudit.chain.trace_evidence`), with the layout audit's
    ``threshold`` option (``[auditor_options.layout] threshold``, default `DEFAULT_THRESHOLD`): "5.2 Quantitative
    Results" matches "5.2 Quantitative results:" (similarity 1 - 1/25 = 0.96)."""
    return similarity(label, heading) >= threshold


def parents(levels: Sequence[int | None]) -> list[int | None]:
    """For each heading, the index of its parent (nearest earlier heading with a strictly smaller known level).

    A heading whose level is None has no parent and is no one's parent. O(n) with a stack.

    Example: levels [1, 2, 2, 1, 3] -> [None, 0, 0, None, 3].
    """
    out: list[int | None] = []
    stack: list[int] = []  # indices of headings with known levels, strictly increasing levels
    for i, lv in enumerate(levels):
        if lv is None:
            out.append(None)
            continue
        while stack and levels[stack[-1]] >= lv:  # type: ignore[operator]
            stack.pop()
        out.append(stack[-1] if stack else None)
        stack.append(i)
    return out


def match_texts(labelled: Sequence[str], predicted: Sequence[str], threshold: float = DEFAULT_THRESHOLD,
                processor: Callable[[str], str] | None = process) -> tuple[list[tuple[int, int]], np.ndarray]:
    """One-to-one matching of ``labelled`` to ``predicted`` texts maximising summed similarity among pairs with
    ``similarity >= threshold`` (Hungarian algorithm).

    Returns:
        ``(pairs, sim)``: matched ``(labelled index, predicted index)`` pairs sorted by labelled index, and the
        similarity matrix, float64 array of shape (len(labelled), len(predicted)).

    Raises:
        ValueError: ``threshold`` outside (0, 1].
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    la = [processor(t) for t in labelled] if processor else list(labelled)
    pr = [processor(t) for t in predicted] if processor else list(predicted)
    sim = np.zeros((len(la), len(pr)), dtype=np.float64)
    for i, a in enumerate(la):
        for j, b in enumerate(pr):
            sim[i, j] = Levenshtein.normalized_similarity(a, b)
    if not la or not pr:
        return [], sim
    from scipy.optimize import linear_sum_assignment

    weight = np.where(sim >= threshold, sim, 0.0)
    rows, cols = linear_sum_assignment(weight, maximize=True)
    pairs = sorted((int(i), int(j)) for i, j in zip(rows, cols) if sim[i, j] >= threshold)
    return pairs, sim


@dataclass(frozen=True)
class HeadingCounts:
    """Numerators and denominators of the heading metrics of one document.

    Attributes:
        labelled, predicted: numbers of labelled and predicted headings.
        matched: matched pairs (recall = matched / labelled, precision = matched / predicted,
            F1 = 2 matched / (labelled + predicted)).
        similarity_sum: sum of the matched pairs' similarities (heading_similarity = similarity_sum / matched).
        exact: matched pairs whose processed texts are equal (heading_exact = exact / labelled).
        same_level: matched pairs with equal levels (heading_level = same_level / matched).
        with_parent: labelled headings that have a parent; kept_parent: those of them that are matched and whose
            predicted heading's parent is the heading matched to their labelled parent (hierarchy = kept_parent /
            with_parent).
        pairs: the matched ``(labelled index, predicted index, similarity)`` triples.
    """

    labelled: int
    predicted: int
    matched: int
    similarity_sum: float
    exact: int
    same_level: int
    with_parent: int
    kept_parent: int
    pairs: tuple[tuple[int, int, float], ...]


def heading_counts(labelled: Sequence[HeadingLabel], predicted: Sequence[HeadingLabel],
                   threshold: float = DEFAULT_THRESHOLD) -> HeadingCounts:
    """Match ``predicted`` to ``labelled`` headings (both in document order) and count every heading metric.

    Example (issue 12): labelled [1 Scope, 2 Terms, 2 Fees, 1 Annex], predicted [1 Scope, 3 Terms, 1 Annex,
    2 Contact]: matched 3 (precision 3/4, recall 3/4), same level 2 of 3, with parent 2 (Terms, Fees), kept parent 1
    (Terms: its predicted parent Scope is the match of its labelled parent Scope) -> hierarchy 0.5.

    Raises:
        ValueError: ``threshold`` outside (0, 1].
    """
    pairs, sim = match_texts([h.text for h in labelled], [h.text for h in predicted], threshold)
    to_pred = dict(pairs)
    lab_parent = parents([h.level for h in labelled])
    pred_parent = parents([h.level for h in predicted])
    with_parent = kept = 0
    for i, p in enumerate(lab_parent):
        if p is None:
            continue
        with_parent += 1
        j = to_pred.get(i)
        if j is not None and p in to_pred and pred_parent[j] is not None and pred_parent[j] == to_pred[p]:
            kept += 1
    triples = tuple((i, j, float(sim[i, j])) for i, j in pairs)
    return HeadingCounts(
        labelled=len(labelled), predicted=len(predicted), matched=len(pairs),
        similarity_sum=float(sum(s for _, _, s in triples)),
        exact=sum(process(labelled[i].text) == process(predicted[j].text) for i, j in pairs),
        same_level=sum(labelled[i].level is not None and labelled[i].level == predicted[j].level for i, j in pairs),
        with_parent=with_parent, kept_parent=kept, pairs=triples)


# --- reading order ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Discordance:
    """Kendall tau distance of one order: ``discordant`` (ties count 1/2) over ``pairs`` = C(n, 2)."""

    discordant: float
    pairs: int
    examples: tuple[tuple[int, int], ...] = ()


def kendall_discordance(positions: Sequence[float], max_examples: int = 10) -> Discordance:
    """Discordant pairs of ``positions`` (the parsed-text positions of items listed in reference order).

    A pair (i, j), i < j, is discordant when ``positions[i] > positions[j]``, half discordant when equal.
    Exact O(n log n) count (merge sort for strict inversions, equal-value groups for ties).

    Returns:
        `Discordance` with ``examples``: up to ``max_examples`` discordant index pairs (i, j) for the report.

    Example: reference P1 P2 P3 P4 found in the order P1 P3 P2 P4, i.e. positions [0, 2, 1, 3] -> 1 discordant
    pair of 6 (P2, P3): 1/6.
    """
    pos = [float(p) for p in positions]
    n = len(pos)
    strict = _inversions(pos)
    ties = 0
    counts: dict[float, int] = {}
    for p in pos:
        counts[p] = counts.get(p, 0) + 1
    for c in counts.values():
        ties += c * (c - 1) // 2
    examples = discordant_pairs(pos, max_examples) if strict and max_examples > 0 else []
    return Discordance(strict + 0.5 * ties, n * (n - 1) // 2, tuple(examples))


def discordant_pairs(positions: Sequence[float], limit: int) -> list[tuple[int, int]]:
    """The first ``limit`` strictly discordant pairs ``(i, j)``, i < j, ``positions[i] > positions[j]``, in
    lexicographic order (by i, then j), as the nested loop over i and j would list them.

    A min segment tree over the positions finds, for each i, the next j > i below ``positions[i]`` in O(log n), so
    the cost is O((n + limit) log n) even when discordant pairs are rare (the nested loop is O(n^2) then).

    Example: [0, 2, 1, 3] -> [(1, 2)]; [3, 2, 1] with limit 2 -> [(0, 1), (0, 2)].
    """
    pos = [float(p) for p in positions]
    n = len(pos)
    if n < 2 or limit <= 0:
        return []
    size = 1
    while size < n:
        size *= 2
    inf = float("inf")
    tree = [inf] * (2 * size)
    tree[size:size + n] = pos
    for k in range(size - 1, 0, -1):
        tree[k] = min(tree[2 * k], tree[2 * k + 1])

    def first_below(lo: int, v: float) -> int:
        """Smallest index j >= lo with pos[j] < v, or -1."""
        if lo >= n:
            return -1
        k = lo + size
        while tree[k] >= v:  # climb to the next subtree to the right until one holds a smaller value
            while k & 1:
                k >>= 1
            if k == 0:
                return -1
            k += 1
        while k < size:  # descend to its leftmost leaf below v
            k = 2 * k if tree[2 * k] < v else 2 * k + 1
        return k - size

    out: list[tuple[int, int]] = []
    for i in range(n - 1):
        j = first_below(i + 1, pos[i])
        while j >= 0:
            out.append((i, j))
            if len(out) >= limit:
                return out
            j = first_below(j + 1, pos[i])
    return out


def _inversions(values: list[float]) -> int:
    """Number of pairs i < j with values[i] > values[j] (merge sort)."""
    def sort(a: list[float]) -> tuple[list[float], int]:
        if len(a) <= 1:
            return a, 0
        mid = len(a) // 2
        left, x = sort(a[:mid])
        right, y = sort(a[mid:])
        merged: list[float] = []
        inv = x + y
        i = j = 0
        while i < len(left) and j < len(right):
            if right[j] < left[i]:
                merged.append(right[j])
                inv += len(left) - i
                j += 1
            else:
                merged.append(left[i])
                i += 1
        merged += left[i:] + right[j:]
        return merged, inv

    return sort(values)[1]


@dataclass(frozen=True)
class Located:
    """Where the reference paragraphs were found in the parsed text.

    Attributes:
        positions: per eligible paragraph (reference order), its start offset in the processed parsed text, or None
            when not found.
        eligible: indices (into the input paragraphs) of the paragraphs that take part: long enough and whose
            processed text occurs once in the reference.
        too_short: paragraphs shorter than ``min_chars`` after processing (ambiguous: a heading "Aim" occurs inside
            body words).
        repeated: paragraphs whose processed text occurs more than once in the reference (cannot be ordered).
        by_head: eligible paragraphs found by their head only (the whole paragraph is not in the parsed text as
            one piece: the parser split it, e.g. interleaving two columns line by line, or changed its end).
        fuzzy: eligible paragraphs found by the fuzzy search, not as exact substrings.
    """

    positions: tuple[int | None, ...]
    eligible: tuple[int, ...]
    too_short: int
    repeated: int
    by_head: int
    fuzzy: int


def split_paragraphs(text: str, mode: str = "line") -> list[str]:
    """Reference paragraphs: ``"line"`` = every non-blank line; ``"blank_line"`` = runs of non-blank lines separated
    by blank lines (each run joined with a space).

    Raises:
        ValueError: unknown mode.
    """
    if mode == "line":
        return [ln.strip() for ln in text.splitlines() if ln.strip()]
    if mode == "blank_line":
        return [" ".join(b.split()) for b in re.split(r"\n[ \t\r\f\v]*\n", text) if b.strip()]
    raise ValueError(f"unknown paragraph mode {mode!r}; known: line, blank_line")


def locate_paragraphs(paragraphs: Sequence[str], parsed: str, *, min_chars: int = 20, head_chars: int = 32,
                      min_similarity: float = 0.9) -> Located:
    """Find where each reference paragraph begins in the parsed text, each independently of the others.

    Both sides go through `process`. A paragraph is located at, in this order: the start of its first exact
    occurrence in the processed parsed text; else the first exact occurrence of its head (its first ``head_chars``
    processed characters), so a paragraph the parser cut into pieces (two columns interleaved line by line) is placed
    where it begins; else the start of the best window of ``rapidfuzz.fuzz.partial_ratio_alignment`` (the substring of
    the parsed text most similar to the whole paragraph, scored by the Indel similarity, more lenient than the
    Levenshtein one) when that score reaches ``min_similarity`` x 100 (default 0.9: two template sentences sharing
    most words reach 0.8); else it is unlocated. The paragraphs are located independently because a Levenshtein
    alignment of the whole texts is monotone: it cannot express that a paragraph moved, it deletes it and inserts it
    again elsewhere.

    Raises:
        ValueError: ``min_similarity`` outside (0, 1], ``min_chars`` < 1 or ``head_chars`` < 1.
    """
    if not 0.0 < min_similarity <= 1.0:
        raise ValueError(f"min_similarity must be in (0, 1], got {min_similarity!r}")
    if min_chars < 1 or head_chars < 1:
        raise ValueError(f"min_chars and head_chars must be >= 1, got {min_chars!r}, {head_chars!r}")
    from rapidfuzz import fuzz

    target = process(parsed)
    procs = [process(p) for p in paragraphs]
    seen: dict[str, int] = {}
    for p in procs:
        seen[p] = seen.get(p, 0) + 1
    eligible, positions = [], []
    too_short = repeated = by_head = fuzzy = 0
    for i, p in enumerate(procs):
        if len(p) < min_chars:
            too_short += 1
            continue
        if seen[p] > 1:
            repeated += 1
            continue
        eligible.append(i)
        at = target.find(p)
        if at < 0 and len(p) > head_chars:
            at = target.find(p[:head_chars])
            by_head += at >= 0
        if at < 0 and target:
            res = fuzz.partial_ratio_alignment(p, target, score_cutoff=min_similarity * 100)
            if res is not None and res.score >= min_similarity * 100:
                at = res.dest_start if len(p) <= len(target) else 0
                fuzzy += 1
        positions.append(at if at >= 0 else None)
    return Located(tuple(positions), tuple(eligible), too_short, repeated, by_head, fuzzy)


# --- lists -----------------------------------------------------------------------------------------------------------

def longest_increasing(values: Sequence[int]) -> int:
    """Length of the longest strictly increasing subsequence (patience sorting, O(n log n))."""
    import bisect

    tails: list[int] = []
    for v in values:
        k = bisect.bisect_left(tails, v)
        if k == len(tails):
            tails.append(v)
        else:
            tails[k] = v
    return len(tails)


@dataclass(frozen=True)
class ListCounts:
    """``intact`` labelled list items (matched one to one to a predicted list item, in labelled order) of
    ``labelled`` items; ``matched`` = items matched regardless of order."""

    intact: int
    labelled: int
    matched: int


def list_integrity(lists: Sequence[Sequence[str]], predicted_items: Sequence[str],
                   threshold: float = DEFAULT_THRESHOLD) -> ListCounts:
    """Labelled list items returned as separate items, in order (see the module docstring).

    All labelled items of all lists are matched together to the predicted list items (one predicted item serves at
    most one labelled item); per list, the intact items are the longest subsequence whose matched predicted indices
    increase.

    Example: lists [["a x", "b x", "c x"]], predicted ["a x", "c x", "b x"] -> 3 matched, 2 intact, of 3.

    Raises:
        ValueError: ``threshold`` outside (0, 1].
    """
    flat = [(k, t) for k, items in enumerate(lists) for t in items]
    pairs, _ = match_texts([t for _, t in flat], list(predicted_items), threshold)
    to_pred = dict(pairs)
    intact = 0
    offset = 0
    for items in lists:
        seq = [to_pred[offset + i] for i in range(len(items)) if offset + i in to_pred]
        intact += longest_increasing(seq)
        offset += len(items)
    return ListCounts(intact, len(flat), len(pairs))
