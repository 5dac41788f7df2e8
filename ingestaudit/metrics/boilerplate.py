"""Boilerplate removal scores: what a cleaner removed, measured against three forms of labels.

Pure functions, no I/O. Each family has one function that returns a frozen dataclass of raw counts; the rates are
thin properties over those counts, and an undefined rate is ``None`` (never NaN, never a fake 0).

**1. Spans** (`span_counts`): labelled boilerplate spans ``[start, end)`` (code points) on a text ``T`` that the
cleaner ran on; its output ``O``. Counting unit: the *non-whitespace* code points of ``T`` (``not c.isspace()``);
whitespace is never counted, so a cleaner that re-flows lines or collapses blank lines is neither rewarded nor
punished. With

* ``R`` = non-whitespace characters of ``T`` that are *removed* (not matched to an identical character of ``O`` by
  `align_removal`),
* ``B`` = non-whitespace characters of ``T`` inside at least one labelled span (overlapping spans count once),

precision ``P = |R ∩ B| / |R|`` (share of removed characters that were boilerplate), recall
``Rc = |R ∩ B| / |B|`` (share of boilerplate characters removed) and ``F1 = 2|R ∩ B| / (|R| + |B|)``, which equals
``2TP / (2TP + FP + FN)`` with ``TP = |R ∩ B|``, ``FP = |R \\ B|``, ``FN = |B \\ R|`` (van Rijsbergen,
*Information Retrieval*, 2nd ed. 1979, ch. 7; the count form scikit-learn 1.3+ uses). ``P`` is undefined when
nothing was removed (``|R| = 0``), ``Rc`` when nothing is labelled (``|B| = 0``), ``F1`` when both are 0.

Worked example (the issue's acceptance case). ``T = "Home | About\\nReal content here.\\nPage 1 of 2"``, spans
"Home | About" and "Page 1 of 2": ``T`` has 10 + 16 + 8 = 34 non-whitespace characters and ``|B| = 10 + 8 = 18``.
Output "Real content here." removes exactly the 18 labelled ones: P = 18/18, Rc = 18/18. Output ``T`` unchanged
removes nothing: Rc = 0/18, P undefined. Output "content here." also removes "Real" (4): ``|R| = 22``,
P = 18/22, Rc = 18/18.

**2. Segments** (`segment_counts`), as in trafilatura's evaluation (``tests/eval_common.py`` ``count_item``,
trafilatura commit e90b0ef): a ``with`` segment must be in the output, a ``without`` segment must not. A segment is
*present* iff ``norm(segment)`` is a substring of ``norm(output)``, where ``norm`` replaces every run of whitespace
(Python ``re`` ``\\s+``, Unicode-aware, so NBSP counts) by one space and strips the ends. Case and punctuation
count. ``content_retention = |with present| / |with|``; ``removal_recall = |without absent| / |without|``. A segment
that is empty after ``norm`` is not scored (it is in every text) and is reported as ignored.

**3. Reference main text** (`shingle_counts`): bag-of-shingles precision/recall/F1 of the output against a
hand-cleaned main text, as in the Scrapinghub article-extraction-benchmark (``evaluate.py``
``string_shingle_matching``, ``ngram_n=4``). Tokens are the matches of the Python ``re`` pattern ``\\w+``
(Unicode letters, digits and underscore; case kept, punctuation dropped); a shingle is ``n`` consecutive tokens
(default ``n = 4``); a text with ``1 <= k < n`` tokens has one shingle of its ``k`` tokens, an empty text none.
With multisets ``S_out`` and ``S_ref``: ``m = Σ_s min(count_out(s), count_ref(s))``, ``P = m / |S_out|``,
``Rc = m / |S_ref|``, ``F1 = 2m / (|S_out| + |S_ref|)``. The benchmark also rescales each document's counts to sum
to 1 before averaging; here that role is played by the report's macro average over documents, and the micro
average pools the raw counts.
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rapidfuzz.distance import Indel, LCSseq

WORD_PATTERN = re.compile(r"\S+")
"""Alignment tokens: maximal runs of non-whitespace characters."""

CHAR_DIFFLIB_MAX = 1000
"""In a stretch the word alignment left unmatched on both sides, characters are aligned with difflib's
longest-block-first matcher when both sides have at most this many non-whitespace characters, else with an exact
longest common subsequence (rapidfuzz ``Indel``)."""

SEGMENT_WS = re.compile(r"\s+")
"""Whitespace runs that `normalize_segment` collapses (Python ``re``, Unicode-aware: NBSP and U+2028 included)."""

SHINGLE_TOKEN = re.compile(r"\w+")
"""Shingle tokens (Python ``re`` ``\\w+`` on ``str``: Unicode word characters), as in the Scrapinghub benchmark."""

DEFAULT_SHINGLE_SIZE = 4
"""Default number of tokens per shingle (the Scrapinghub benchmark's ``ngram_n``)."""

EXCERPT_CHARS = 80
"""Excerpts of leaked spans and wrongly removed runs are cut to this many code points."""


# ---------------------------------------------------------------------------------------------------------------
# 1. alignment: which characters of the cleaner's input survive in its output
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Removal:
    """Which non-whitespace characters of a cleaner's input ``T`` survive in its output ``O``.

    Attributes:
        source_len: ``len(T)`` in code points.
        nonspace: bool array, shape ``(source_len,)``: True where ``T[i]`` is not whitespace.
        kept: bool array, shape ``(source_len,)``: True where ``T[i]`` is non-whitespace and matched to an identical
            character of ``O``. A non-whitespace character that is not kept was *removed* (deleted, or rewritten
            into another character: a cleaner that straightens quotes "removes" the curly ones).
        output_nonspace: non-whitespace characters of ``O``.
        inserted: non-whitespace characters of ``O`` matched to nothing in ``T`` (text the cleaner added or
            rewrote), ``>= 0``.
    """

    source_len: int
    nonspace: np.ndarray
    kept: np.ndarray
    output_nonspace: int
    inserted: int

    @property
    def removed(self) -> np.ndarray:
        """bool array, shape ``(source_len,)``: non-whitespace characters that are not kept."""
        return self.nonspace & ~self.kept

    @property
    def removed_count(self) -> int:
        """``|R|``: number of removed non-whitespace characters."""
        return int(self.nonspace.sum() - self.kept.sum())


def _tokens(text: str) -> tuple[list[str], list[int]]:
    words, starts = [], []
    for m in WORD_PATTERN.finditer(text):
        words.append(m.group())
        starts.append(m.start())
    return words, starts


def _cover(length: int, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """bool array of ``length``: True inside the disjoint intervals ``[starts[k], ends[k])``."""
    delta = np.zeros(length + 1, dtype=np.int64)
    np.add.at(delta, starts, 1)
    np.add.at(delta, ends, -1)
    return np.cumsum(delta[:-1]) > 0


def _lis(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Longest strictly increasing subsequence by the second element of ``pairs`` (sorted by the first);
    patience sorting, O(k log k); ties resolved toward the earliest pairs."""
    tails: list[int] = []  # tails[k] = smallest j ending an increasing run of length k+1
    tail_idx: list[int] = []
    prev = [-1] * len(pairs)
    for idx, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_idx.append(idx)
        else:
            tails[k] = j
            tail_idx[k] = idx
        prev[idx] = tail_idx[k - 1] if k else -1
    out = []
    idx = tail_idx[-1] if tail_idx else -1
    while idx >= 0:
        out.append(pairs[idx])
        idx = prev[idx]
    return out[::-1]


def _patience(a: Sequence[str], b: Sequence[str]) -> tuple[list[tuple[int, int, int]],
                                                            list[tuple[int, int, int, int]]]:
    """Patience diff (Bram Cohen's, as in Bazaar and ``git diff --patience``) over word lists.

    Returns:
        ``(runs, rest)``: matched runs ``(i, j, n)`` meaning ``a[i:i+n] == b[j:j+n]`` are aligned, and the ranges
        ``(a0, a1, b0, b1)`` left with words on both sides and no word occurring exactly once on each side.
    """
    runs: list[tuple[int, int, int]] = []
    rest: list[tuple[int, int, int, int]] = []
    stack = [(0, len(a), 0, len(b))]
    while stack:
        a0, a1, b0, b1 = stack.pop()
        n = 0
        while a0 + n < a1 and b0 + n < b1 and a[a0 + n] == b[b0 + n]:
            n += 1
        if n:
            runs.append((a0, b0, n))
            a0, b0 = a0 + n, b0 + n
        n = 0
        while a1 - n > a0 and b1 - n > b0 and a[a1 - n - 1] == b[b1 - n - 1]:
            n += 1
        if n:
            runs.append((a1 - n, b1 - n, n))
            a1, b1 = a1 - n, b1 - n
        if a0 == a1 or b0 == b1:
            continue
        ca = Counter(a[a0:a1])
        cb = Counter(b[b0:b1])
        where_b = {b[j]: j for j in range(b0, b1) if cb[b[j]] == 1}
        anchors = [(i, where_b[a[i]]) for i in range(a0, a1) if ca[a[i]] == 1 and a[i] in where_b]
        if not anchors:
            rest.append((a0, a1, b0, b1))
            continue
        pi, pj = a0, b0
        for i, j in _lis(anchors):
            runs.append((i, j, 1))
            stack.append((pi, i, pj, j))
            pi, pj = i + 1, j + 1
        stack.append((pi, a1, pj, b1))
    return runs, rest


def _char_blocks(sa: str, sb: str) -> list[tuple[int, int, int]]:
    """Matched character runs ``(i, j, n)``: difflib's longest-block-first matching when both strings are short
    (`CHAR_DIFFLIB_MAX`) and it matches as many characters as a longest common subsequence, else an exact LCS."""
    if len(sa) <= CHAR_DIFFLIB_MAX and len(sb) <= CHAR_DIFFLIB_MAX:
        blocks = [b for b in difflib.SequenceMatcher(None, sa, sb, autojunk=False).get_matching_blocks() if b[2]]
        if sum(b[2] for b in blocks) == LCSseq.similarity(sa, sb):
            return [(i, j, n) for i, j, n in blocks]
    return _lcs_blocks(sa, sb)


def _lcs_blocks(sa: str, sb: str) -> list[tuple[int, int, int]]:
    """Matched runs of an exact longest common subsequence (rapidfuzz ``Indel.opcodes``)."""
    return [(op.src_start, op.dest_start, op.src_end - op.src_start)
            for op in Indel.opcodes(sa, sb) if op.tag == "equal"]


def align_removal(source: str, output: str) -> Removal:
    """Locate the characters of ``source`` (a cleaner's input) that survive in ``output`` (its output).

    Alignment, deterministic and insensitive to whitespace:

    1. both texts are cut into words (`WORD_PATTERN`, maximal non-whitespace runs);
    2. words are aligned by patience diff: common leading and trailing words of a range are matched; words that
       occur exactly once on each side of the range are anchors, the longest increasing subsequence of anchors is
       matched, and the ranges between anchors are treated the same way;
    3. a range left with no unique common word is aligned by a longest common subsequence of words (rapidfuzz
       ``Indel.opcodes``, i.e. insertions and deletions only);
    4. where words are still unmatched on both sides (a word the cleaner altered or cut), their non-whitespace
       characters are aligned, longest block first (difflib, see `CHAR_DIFFLIB_MAX`), or by an exact longest
       common subsequence when difflib's greedy blocks match fewer characters;
    5. if some output characters are still unmatched and a longest common subsequence of the two non-whitespace
       strings (rapidfuzz ``LCSseq``) is longer than what steps 1-4 kept, that LCS (rapidfuzz ``Indel.opcodes``)
       replaces them. So the number of kept characters is always the maximum possible, ``|LCS|`` of the
       non-whitespace strings, and ``|R| = |T|_nonspace - |LCS|``.

    A cleaner only deletes in the common case, so its output is a subsequence of its input and every output
    character is matched; when the same text occurs twice in the input (a repeated heading), the alignment
    prefers long contiguous matches and unique words, so the copy next to the surrounding kept text is the one
    kept. Ties that remain are genuinely ambiguous (the output does not say which copy it kept).

    Args:
        source: the text the cleaner ran on.
        output: the cleaner's output.

    Returns:
        `Removal` (non-whitespace characters kept / removed, characters inserted).

    Raises:
        TypeError: an argument is not a ``str``.
    """
    if not isinstance(source, str) or not isinstance(output, str):
        raise TypeError("align_removal takes two str")
    a, a_starts = _tokens(source)
    b, _ = _tokens(output)
    starts = np.asarray(a_starts, dtype=np.int64)
    ends = starts + np.fromiter(map(len, a), dtype=np.int64, count=len(a))
    nonspace = _cover(len(source), starts, ends)
    word_kept = np.zeros(len(a), dtype=bool)
    runs, rest = _patience(a, b)
    for i, _j, n in runs:
        word_kept[i:i + n] = True
    gaps: list[tuple[int, int, int, int]] = []
    for a0, a1, b0, b1 in rest:
        pi, pj = a0, b0
        for op in Indel.opcodes(a[a0:a1], b[b0:b1]):
            if op.tag != "equal":
                continue
            i, j, n = a0 + op.src_start, b0 + op.dest_start, op.src_end - op.src_start
            word_kept[i:i + n] = True
            if pi < i and pj < j:
                gaps.append((pi, i, pj, j))
            pi, pj = i + n, j + n
        if pi < a1 and pj < b1:
            gaps.append((pi, a1, pj, b1))
    kept = _cover(len(source), starts[word_kept], ends[word_kept])
    matched_out = int((ends[word_kept] - starts[word_kept]).sum())
    for a0, a1, b0, b1 in gaps:
        positions = [a_starts[k] + c for k in range(a0, a1) for c in range(len(a[k]))]
        for i, _j, n in _char_blocks("".join(a[a0:a1]), "".join(b[b0:b1])):
            kept[positions[i:i + n]] = True
            matched_out += n
    out_nonspace = sum(len(w) for w in b)
    if matched_out < out_nonspace:  # some output characters unmatched: make sure no alignment keeps more
        src_ns, out_ns = "".join(a), "".join(b)
        if matched_out < LCSseq.similarity(src_ns, out_ns):
            positions = np.flatnonzero(nonspace)
            kept[:] = False
            matched_out = 0
            for i, _j, n in _lcs_blocks(src_ns, out_ns):
                kept[positions[i:i + n]] = True
                matched_out += n
    return Removal(source_len=len(source), nonspace=nonspace, kept=kept, output_nonspace=out_nonspace,
                   inserted=out_nonspace - matched_out)


# ---------------------------------------------------------------------------------------------------------------
# 2. span-based character precision / recall
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SpanCounts:
    """Character counts of one cleaner run against labelled boilerplate spans (see the module docstring, form 1).

    Attributes:
        total: non-whitespace characters of the input text.
        removed: ``|R|``, non-whitespace characters removed.
        labelled: ``|B|``, non-whitespace characters inside labelled spans.
        removed_labelled: ``|R ∩ B|`` (true positives).
        inserted: non-whitespace output characters matched to nothing in the input.
        leaked: labelled spans with at least one non-whitespace character kept, in input order: ``{"start",
            "end", "type", "text" (excerpt), "kept_chars", "chars"}``.
        wrongly_removed: maximal runs of removed, unlabelled non-whitespace characters (whitespace between them
            does not break a run), in input order: ``{"start", "end", "text" (excerpt), "chars"}``.
        by_type: per span type, ``(removed labelled characters, labelled characters)``.
    """

    total: int
    removed: int
    labelled: int
    removed_labelled: int
    inserted: int
    leaked: tuple[dict[str, Any], ...] = ()
    wrongly_removed: tuple[dict[str, Any], ...] = ()
    by_type: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def precision(self) -> float | None:
        """``|R ∩ B| / |R|`` in [0, 1]; None when nothing was removed."""
        return self.removed_labelled / self.removed if self.removed else None

    @property
    def recall(self) -> float | None:
        """``|R ∩ B| / |B|`` in [0, 1]; None when no non-whitespace character is labelled."""
        return self.removed_labelled / self.labelled if self.labelled else None

    @property
    def f1(self) -> float | None:
        """``2|R ∩ B| / (|R| + |B|)`` in [0, 1]; None when ``|R| + |B| = 0``."""
        den = self.removed + self.labelled
        return 2 * self.removed_labelled / den if den else None


def _excerpt(text: str) -> str:
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS - 1] + "…"


def span_counts_from_removal(source: str, removal: Removal, spans: Iterable[Any]) -> SpanCounts:
    """`SpanCounts` of an already computed `Removal` of ``source``.

    Args:
        source: the cleaner's input text (the text the spans index).
        removal: ``align_removal(source, output)``.
        spans: objects with ``start``, ``end`` (code points, end exclusive) and ``type``.

    Raises:
        ValueError: a span lies outside ``source`` or has ``end < start``; ``removal`` is not of ``source``.
    """
    n = len(source)
    if removal.source_len != n:
        raise ValueError(f"removal is of a text of {removal.source_len} code points, source has {n}")
    spans = list(spans)
    labelled = np.zeros(n, dtype=bool)
    for s in spans:
        if not 0 <= s.start <= s.end <= n:
            raise ValueError(f"span [{s.start}, {s.end}) is outside the text ({n} code points)")
        labelled[s.start:s.end] = True
    labelled &= removal.nonspace
    removed = removal.removed
    hit = removed & labelled

    leaked = []
    by_type: dict[str, list[int]] = {}
    for s in spans:
        ns = int(removal.nonspace[s.start:s.end].sum())
        kept = int(removal.kept[s.start:s.end].sum())
        t = by_type.setdefault(str(s.type), [0, 0])
        t[0] += ns - kept
        t[1] += ns
        if kept:
            leaked.append({"start": s.start, "end": s.end, "type": s.type, "text": _excerpt(source[s.start:s.end]),
                           "kept_chars": kept, "chars": ns})

    wrong = removed & ~labelled
    runs = []
    idx = np.flatnonzero(removal.nonspace)  # positions of non-whitespace characters, in order
    flags = wrong[idx]
    if flags.any():
        edges = np.diff(np.concatenate(([0], flags.astype(np.int8), [0])))
        for lo, hi in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)):
            start, end = int(idx[lo]), int(idx[hi - 1]) + 1
            runs.append({"start": start, "end": end, "text": _excerpt(source[start:end]), "chars": int(hi - lo)})
    return SpanCounts(total=int(removal.nonspace.sum()), removed=int(removed.sum()), labelled=int(labelled.sum()),
                      removed_labelled=int(hit.sum()), inserted=removal.inserted, leaked=tuple(leaked),
                      wrongly_removed=tuple(runs), by_type={k: (v[0], v[1]) for k, v in sorted(by_type.items())})


def span_counts(source: str, output: str, spans: Iterable[Any]) -> SpanCounts:
    """Character counts of a cleaner that turned ``source`` into ``output``, against boilerplate ``spans`` on
    ``source`` (module docstring, form 1; alignment by `align_removal`).

    Raises:
        TypeError: ``source`` or ``output`` is not a ``str``.
        ValueError: a span lies outside ``source``.
    """
    return span_counts_from_removal(source, align_removal(source, output), spans)


# ---------------------------------------------------------------------------------------------------------------
# 3. segments (trafilatura's evaluation format)
# ---------------------------------------------------------------------------------------------------------------

def normalize_segment(text: str) -> str:
    """Every whitespace run (`SEGMENT_WS`) replaced by one space, ends stripped (trafilatura's ``norm``)."""
    return SEGMENT_WS.sub(" ", text).strip()


@dataclass(frozen=True)
class SegmentCounts:
    """Segment counts of one output (module docstring, form 2).

    Attributes:
        with_total, with_present: scored ``with`` segments, and how many are present.
        without_total, without_absent: scored ``without`` segments, and how many are absent.
        missing: ``with`` segments absent from the output (content wrongly removed), in label order.
        leaked: ``without`` segments present in the output (boilerplate kept), in label order.
        ignored: segments not scored because they are empty after normalization.
    """

    with_total: int
    with_present: int
    without_total: int
    without_absent: int
    missing: tuple[str, ...] = ()
    leaked: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()

    @property
    def content_retention(self) -> float | None:
        """``with present / with``, in [0, 1]; None without scored ``with`` segments."""
        return self.with_present / self.with_total if self.with_total else None

    @property
    def removal_recall(self) -> float | None:
        """``without absent / without``, in [0, 1]; None without scored ``without`` segments."""
        return self.without_absent / self.without_total if self.without_total else None


def segment_counts(output: str, with_: Iterable[str], without: Iterable[str]) -> SegmentCounts:
    """Count ``with`` segments present in ``output`` and ``without`` segments absent from it (whitespace-normalized
    substring test, `normalize_segment`).

    Raises:
        TypeError: ``output`` is not a ``str``.
    """
    if not isinstance(output, str):
        raise TypeError("output must be a str")
    out = normalize_segment(output)
    ignored: list[str] = []
    present, missing = 0, []
    n_with = 0
    for seg in with_:
        norm = normalize_segment(seg)
        if not norm:
            ignored.append(seg)
            continue
        n_with += 1
        if norm in out:
            present += 1
        else:
            missing.append(seg)
    absent, leaked = 0, []
    n_without = 0
    for seg in without:
        norm = normalize_segment(seg)
        if not norm:
            ignored.append(seg)
            continue
        n_without += 1
        if norm in out:
            leaked.append(seg)
        else:
            absent += 1
    return SegmentCounts(n_with, present, n_without, absent, tuple(missing), tuple(leaked), tuple(ignored))


# ---------------------------------------------------------------------------------------------------------------
# 4. bag of shingles against a reference main text
# ---------------------------------------------------------------------------------------------------------------

def shingles(text: str, n: int = DEFAULT_SHINGLE_SIZE) -> Counter[tuple[str, ...]]:
    """Multiset of the ``n``-token shingles of ``text`` (tokens: `SHINGLE_TOKEN`); a text of ``1 <= k < n`` tokens
    gives one shingle of ``k`` tokens, an empty one none.

    Raises:
        ValueError: ``n < 1``.
    """
    if n < 1:
        raise ValueError(f"shingle size must be >= 1, got {n}")
    tokens = SHINGLE_TOKEN.findall(text)
    if not tokens:
        return Counter()
    return Counter(tuple(tokens[i:i + n]) for i in range(max(1, len(tokens) - n + 1)))


@dataclass(frozen=True)
class ShingleCounts:
    """Bag-of-shingles counts of an output against a reference main text (module docstring, form 3).

    Attributes:
        n: shingle size in tokens.
        matched: ``m = Σ_s min(count_out(s), count_ref(s))``.
        output_shingles: ``|S_out|`` (with repetitions).
        reference_shingles: ``|S_ref|`` (with repetitions).
    """

    n: int
    matched: int
    output_shingles: int
    reference_shingles: int

    @property
    def precision(self) -> float | None:
        """``m / |S_out|`` in [0, 1]; None when the output has no shingle."""
        return self.matched / self.output_shingles if self.output_shingles else None

    @property
    def recall(self) -> float | None:
        """``m / |S_ref|`` in [0, 1]; None when the reference has no shingle."""
        return self.matched / self.reference_shingles if self.reference_shingles else None

    @property
    def f1(self) -> float | None:
        """``2m / (|S_out| + |S_ref|)`` in [0, 1]; None when both are empty."""
        den = self.output_shingles + self.reference_shingles
        return 2 * self.matched / den if den else None


def shingle_counts(output: str, reference: str, n: int = DEFAULT_SHINGLE_SIZE) -> ShingleCounts:
    """Bag-of-shingles counts of ``output`` against the reference main text ``reference`` (see `shingles`).

    Raises:
        ValueError: ``n < 1``.
    """
    so, sr = shingles(output, n), shingles(reference, n)
    matched = sum((so & sr).values())
    return ShingleCounts(n=n, matched=matched, output_shingles=sum(so.values()),
                         reference_shingles=sum(sr.values()))
