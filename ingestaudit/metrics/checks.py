"""olmOCR-style text checks: ``present``, ``absent`` and ``order`` with a ``max_diffs`` edit tolerance.

Definitions (ingestaudit, semantics ``"levenshtein"``, the default). Let O be the output and q a check string, both
after the same normalization profile (`run_checks`; default ``text-v1``: NFC, white space collapsed, invisible
characters removed, soft hyphen + line break rejoined, ligatures expanded, quotes and dashes folded), and let

    d(q, O) = min over substrings O[s:e] of Lev(q, O[s:e])

(approximate substring matching, Sellers 1980; computed with Myers' 1999 bit-parallel algorithm after an exact
pigeonhole filter: a match with at most k edits contains one of k + 1 pieces of q exactly). Lev counts
substitutions, insertions and deletions at cost 1, on code points. Then, with k = ``max_diffs``:

- ``present``: passes iff d(q, O) <= k.
- ``absent``: passes iff d(q, O) > k.
- ``order`` (before b, after a): passes iff some approximate match of b (<= k edits) starts before some
  approximate match of a starts: min{s : exists e, Lev(b, O[s:e]) <= k} < max{s : exists e, Lev(a, O[s:e]) <= k}.
  It fails when either string is not found.

Comparison with olmOCR-bench (allenai/olmocr ``olmocr/bench/tests.py``, TextPresenceTest / TextOrderTest):

- ``order`` is the same rule: olmOCR uses ``fuzzysearch.find_near_matches(max_l_dist=max_diffs)`` and passes when
  any "before" match starts before any "after" match. fuzzysearch consolidates overlapping matches, so its set of
  start positions can be a subset of ours; the two differ only when the texts overlap or sit within k characters
  of each other.
- ``present`` / ``absent`` differ by default: olmOCR compares ``rapidfuzz.fuzz.partial_ratio(q, O) / 100`` (an
  Indel similarity of the best window of length |q|) with the threshold 1 - k / |q|, after a length guard
  (|O| < |q| - k fails a present check and passes an absent check). For substitutions the two agree; with
  insertions or deletions partial_ratio can accept or reject where the edit distance does not. Semantics
  ``"olmocr"`` reproduces that rule (partial_ratio, threshold and guard) for present/absent; ``order`` is the same
  in both.
- Normalization: olmOCR's ``normalize_text`` also strips Markdown bold/italic markers and ``<br>``, maps U+00B5 to
  U+03BC and folds a fixed list of quotes and dashes; ingestaudit applies its named profile (default ``text-v1``)
  instead and strips no Markup. Case: olmOCR checks are case sensitive unless ``case_sensitive`` is false; so are
  ours (``case_sensitive=False`` lower-cases both sides, as olmOCR).
- Validation: olmOCR rejects an order check whose ``max_diffs`` exceeds half of either string; ingestaudit rejects
  any check whose ``max_diffs`` is >= the length of its (normalized) string, which would match the empty string
  and so pass (or fail) vacuously.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence

from ingestaudit.metrics.normalize import get_profile

Semantics = Literal["levenshtein", "olmocr"]
SEMANTICS: tuple[str, ...] = ("levenshtein", "olmocr")
CHECK_TYPES: tuple[str, ...] = ("present", "absent", "order")


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one check.

    Attributes:
        type: ``"present"``, ``"absent"`` or ``"order"``.
        passed: whether the check holds.
        message: why it failed (``""`` when passed).
        distance: for present/absent under ``"levenshtein"``: d(q, O) when it is <= ``max_diffs`` (a match was
            found), else None (a failing present check names the most similar output window in ``message``
            instead; `substring_distance` gives the exact d(q, O) at the cost of a full scan). None for ``"olmocr"``
            and for order checks.
        similarity: for present/absent under ``"olmocr"``: partial_ratio / 100 in [0, 1]; None otherwise.
    """

    type: str
    passed: bool
    message: str = ""
    distance: int | None = None
    similarity: float | None = None


def _peq(pattern: str) -> dict[str, int]:
    peq: dict[str, int] = {}
    for i, c in enumerate(pattern):
        peq[c] = peq.get(c, 0) | (1 << i)
    return peq


def _myers(pattern: str, text: str, k: int | None) -> tuple[list[tuple[int, int]], int]:
    """Myers (1999) bit-parallel Sellers search.

    Returns ``(hits, best)``: ``hits`` = every ``(end, D)`` with end in 1..len(text) (exclusive end index) and
    D = min over s of Lev(pattern, text[s:end]) <= k (no hits when k is None); ``best`` = min over all ends
    (including the empty prefix, whose distance is len(pattern)).
    """
    m = len(pattern)
    peq = _peq(pattern)
    mask = (1 << m) - 1
    high = 1 << (m - 1)
    pv, mv, score = mask, 0, m
    best = m
    hits: list[tuple[int, int]] = []
    get = peq.get
    for j, c in enumerate(text):
        eq = get(c, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | (~(xh | pv) & mask)
        mh = pv & xh
        if ph & high:
            score += 1
        elif mh & high:
            score -= 1
        ph = (ph << 1) & mask
        mh = (mh << 1) & mask
        pv = mh | (~(xv | ph) & mask)
        mv = ph & xv
        if score < best:
            best = score
        if k is not None and score <= k:
            hits.append((j + 1, score))
    return hits, best


def _windows(pattern: str, text: str, k: int) -> list[tuple[int, int]]:
    """Disjoint text windows that contain every approximate match (<= k edits) of ``pattern`` entirely.

    Pigeonhole: split the pattern into k + 1 non-empty pieces; a match with <= k edits leaves one piece intact. A
    piece at pattern offset o found at text position p bounds the match to text[p - o - k : p - o + m + k].
    """
    m, n = len(pattern), len(text)
    size = m // (k + 1)
    spans: list[tuple[int, int]] = []
    for i in range(k + 1):
        o = i * size
        piece = pattern[o:] if i == k else pattern[o:o + size]
        p = text.find(piece)
        while p != -1:
            spans.append((max(0, p - o - k), min(n, p - o + m + k)))
            p = text.find(piece, p + 1)
    spans.sort()
    merged: list[tuple[int, int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            if b > merged[-1][1]:
                merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    return merged


def fuzzy_ends(pattern: str, text: str, max_diffs: int) -> list[tuple[int, int]]:
    """Every end position of an approximate occurrence of ``pattern`` in ``text``.

    Returns:
        sorted ``(end, distance)`` pairs: ``end`` is an exclusive index into ``text`` (1..len(text)) and ``distance``
        = min over s of Lev(pattern, text[s:end]), listed only when it is <= ``max_diffs``.

    Raises:
        ValueError: ``pattern`` is empty, ``max_diffs`` < 0 or ``max_diffs`` >= len(pattern) (every position would
            match).
    """
    _validate(pattern, max_diffs)
    if max_diffs == 0:
        ends, p = [], text.find(pattern)
        while p != -1:
            ends.append((p + len(pattern), 0))
            p = text.find(pattern, p + 1)
        return ends
    hits: list[tuple[int, int]] = []
    for a, b in _windows(pattern, text, max_diffs):
        found, _ = _myers(pattern, text[a:b], max_diffs)
        hits.extend((a + e, d) for e, d in found)
    return hits


def fuzzy_starts(pattern: str, text: str, max_diffs: int) -> list[int]:
    """Every start position s (0-based) such that Lev(pattern, text[s:e]) <= ``max_diffs`` for some e, sorted.

    Computed as the ends of the reversed pattern in the reversed text. Raises as `fuzzy_ends`.
    """
    n = len(text)
    return sorted(n - e for e, _ in fuzzy_ends(pattern[::-1], text[::-1], max_diffs))


def substring_distance(pattern: str, text: str) -> int:
    """d(pattern, text) = min over substrings t of ``text`` of Lev(pattern, t), in [0, len(pattern)] (full scan)."""
    if not pattern:
        return 0
    return _myers(pattern, text, None)[1]


def _validate(pattern: str, max_diffs: int) -> None:
    if not pattern:
        raise ValueError("a check string is empty after normalization")
    if max_diffs < 0:
        raise ValueError(f"max_diffs must be >= 0, not {max_diffs}")
    if max_diffs >= len(pattern):
        raise ValueError(f"max_diffs={max_diffs} is not below the length of {pattern[:40]!r} ({len(pattern)}): "
                         "the check would match anywhere")


def _cut(s: str) -> str:
    return s if len(s) <= 60 else s[:57] + "..."


def _presence(kind: str, output: str, text: str, max_diffs: int, semantics: str) -> CheckResult:
    _validate(text, max_diffs)
    if semantics == "olmocr":
        from rapidfuzz import fuzz

        threshold = 1.0 - max_diffs / len(text)
        if len(output) < len(text) - max_diffs:
            found, sim = False, None
        else:
            sim = fuzz.partial_ratio(text, output) / 100.0
            found = sim >= threshold
        want = found if kind == "present" else not found
        msg = "" if want else (f"{'not found' if kind == 'present' else 'found'}: {_cut(text)!r} best partial_ratio "
                               f"{'n/a (output too short)' if sim is None else f'{sim:.3f}'} vs threshold "
                               f"{threshold:.3f}")
        return CheckResult(kind, want, msg, None, sim)
    if semantics != "levenshtein":
        raise ValueError(f"unknown semantics {semantics!r}; known: {', '.join(SEMANTICS)}")
    hits = fuzzy_ends(text, output, max_diffs)
    dist = min((d for _, d in hits), default=None)
    if kind == "present":
        if dist is not None:
            return CheckResult(kind, True, "", dist)
        from rapidfuzz import fuzz

        near = fuzz.partial_ratio_alignment(text, output)
        window = output[near.dest_start:near.dest_end] if near is not None else ""
        return CheckResult(kind, False, f"not found within {max_diffs} edits: {_cut(text)!r}; most similar output "
                                        f"window (rapidfuzz partial_ratio {near.score / 100 if near else 0:.2f}): "
                                        f"{_cut(window)!r}")
    if dist is None:
        return CheckResult(kind, True, "", None)
    return CheckResult(kind, False, f"found with {dist} edits (max_diffs {max_diffs}): {_cut(text)!r}", dist)


def present(output: str, text: str, max_diffs: int = 0, *, semantics: Semantics = "levenshtein") -> CheckResult:
    """``present`` check on already-normalized strings: passes iff ``text`` occurs in ``output`` within
    ``max_diffs`` edits (see the module docstring; ``"olmocr"`` uses partial_ratio instead).

    Raises:
        ValueError: empty ``text``, ``max_diffs`` out of [0, len(text)), unknown semantics.
    """
    return _presence("present", output, text, max_diffs, semantics)


def absent(output: str, text: str, max_diffs: int = 0, *, semantics: Semantics = "levenshtein") -> CheckResult:
    """``absent`` check on already-normalized strings: the negation of `present`. Raises as `present`."""
    return _presence("absent", output, text, max_diffs, semantics)


def order(output: str, before: str, after: str, max_diffs: int = 0) -> CheckResult:
    """``order`` check on already-normalized strings: passes iff the earliest start of an approximate match of
    ``before`` precedes the latest start of an approximate match of ``after`` (olmOCR's rule; the same in both
    semantics).

    Raises:
        ValueError: an empty string or ``max_diffs`` out of [0, len(string)).
    """
    _validate(before, max_diffs)
    _validate(after, max_diffs)
    b = fuzzy_starts(before, output, max_diffs)
    if not b:
        return CheckResult("order", False, f"'before' not found within {max_diffs} edits: {_cut(before)!r}")
    a = fuzzy_starts(after, output, max_diffs)
    if not a:
        return CheckResult("order", False, f"'after' not found within {max_diffs} edits: {_cut(after)!r}")
    if b[0] < a[-1]:
        return CheckResult("order", True)
    return CheckResult("order", False, f"{_cut(before)!r} (first at {b[0]}) does not start before {_cut(after)!r} "
                                       f"(last at {a[-1]})")


def run_check(check: Any, output: str, *, profile: str = "text-v1", semantics: Semantics = "levenshtein",
              normalized_output: str | None = None) -> CheckResult:
    """Run one truth check (``ingestaudit.truth.TextCheck`` or ``OrderCheck``, or any object with ``type``,
    ``text`` / ``before`` + ``after``, ``max_diffs`` and optionally ``case_sensitive``) against ``output`` after
    the normalization ``profile`` (applied to both sides).

    Args:
        check: the check.
        output: the parser's text.
        profile: name of a registered normalization profile.
        semantics: ``"levenshtein"`` (default) or ``"olmocr"``, see the module docstring.
        normalized_output: ``output`` already normalized with ``profile`` (saves work across many checks).

    Raises:
        ValueError: unknown check type or semantics, or an invalid check (see `present`, `order`).
        KeyError: unknown profile.
    """
    norm = get_profile(profile)
    out = norm(output) if normalized_output is None else normalized_output
    fold = (lambda s: s.lower()) if not getattr(check, "case_sensitive", True) else (lambda s: s)
    out = fold(out)
    k = int(getattr(check, "max_diffs", 0) or 0)
    if check.type in ("present", "absent"):
        return _presence(check.type, out, fold(norm(check.text)), k, semantics)
    if check.type == "order":
        return order(out, fold(norm(check.before)), fold(norm(check.after)), k)
    raise ValueError(f"unknown check type {check.type!r}; known: {', '.join(CHECK_TYPES)}")


def run_checks(checks: Sequence[Any], output: str, *, profile: str = "text-v1",
               semantics: Semantics = "levenshtein") -> list[CheckResult | ValueError]:
    """`run_check` for each check (the output is normalized once). An invalid check gives its ``ValueError`` in
    its place instead of raising, so one bad label does not hide the other results.

    Raises:
        KeyError: unknown profile.
    """
    normalized = get_profile(profile)(output)
    results: list[CheckResult | ValueError] = []
    for check in checks:
        try:
            results.append(run_check(check, output, profile=profile, semantics=semantics,
                                     normalized_output=normalized))
        except ValueError as exc:
            results.append(exc)
    return results
