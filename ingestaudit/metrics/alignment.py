"""Project character spans from a reference text onto another text (e.g. a parser's output) through an alignment.

The alignment is the minimum-cost Levenshtein alignment (unit-cost insert, delete, substitute) returned by
``rapidfuzz.distance.Levenshtein.opcodes`` (RapidFuzz 3.x). Each reference character i is then either

* *kept*: aligned to an identical target character (``equal`` block),
* *substituted*: aligned to a different target character (``replace`` block), or
* *deleted*: aligned to nothing (``delete`` block); target-only characters are ``insert`` blocks.

Projection rule for a span [s, e) of the reference, with k = number of kept characters in it and
f = k / (e - s):

* the span is **lost** iff k = 0 or f < ``min_kept`` (default 0.5): most of its text is gone or garbled;
* otherwise it projects to [j_first, j_last + 1), where j_first and j_last are the target positions of the
  first and last characters of the span that are kept or substituted. Target characters inserted inside the
  span (a hyphen and line break, say) fall inside the projection; characters inserted at its edges do not.

Levenshtein alignments are not unique; RapidFuzz picks one deterministically. A span whose text was dropped
may have a few characters aligned by chance to similar text nearby; the ``min_kept`` fraction guards against
counting such a span as projected.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from rapidfuzz.distance import Levenshtein

from ingestaudit.metrics.spans import Span, as_spans

DEFAULT_MIN_KEPT = 0.5
"""Default minimum fraction of a span's characters that must survive unchanged for it to project."""


@dataclass(frozen=True, eq=False)
class CharAlignment:
    """Character alignment of a reference text onto a target text; compute once, project many span sets.

    Attributes:
        source_len, target_len: lengths in code points.
        target_index: int64 array, shape (source_len,): target position aligned to each reference character
            (kept or substituted), or -1 when it was deleted.
        kept: bool array, shape (source_len,): True where the character is aligned to an identical one.
        distance: the Levenshtein distance (number of edits) of the alignment, >= 0.
    """

    source_len: int
    target_len: int
    target_index: np.ndarray
    kept: np.ndarray
    distance: int

    def kept_count(self, start: int, end: int) -> int:
        """Number of kept characters in reference positions [start, end)."""
        return int(self._kept_prefix[end] - self._kept_prefix[start])

    def __post_init__(self) -> None:
        prefix = np.zeros(self.source_len + 1, dtype=np.int64)
        np.cumsum(self.kept, out=prefix[1:])
        object.__setattr__(self, "_kept_prefix", prefix)


def align_chars(source: str, target: str) -> CharAlignment:
    """Align ``source`` (reference) onto ``target`` character by character; see the module docstring.

    Cost: RapidFuzz's bit-parallel Levenshtein (Hyyrö 2003), about O(⌈n/64⌉·m) time; per the RapidFuzz sources,
    Hirschberg's divide and conquer bounds the memory of the edit path for very long inputs.

    Raises:
        TypeError: an argument is not a ``str``.
    """
    if not isinstance(source, str) or not isinstance(target, str):
        raise TypeError("align_chars takes two str")
    index = np.full(len(source), -1, dtype=np.int64)
    kept = np.zeros(len(source), dtype=bool)
    distance = 0
    for op in Levenshtein.opcodes(source, target):
        n_src, n_dst = op.src_end - op.src_start, op.dest_end - op.dest_start
        if op.tag == "equal":
            index[op.src_start : op.src_end] = np.arange(op.dest_start, op.dest_end)
            kept[op.src_start : op.src_end] = True
        elif op.tag == "replace":
            n = min(n_src, n_dst)  # RapidFuzz replace blocks are 1:1 substitutions (n_src == n_dst)
            index[op.src_start : op.src_start + n] = np.arange(op.dest_start, op.dest_start + n)
            distance += max(n_src, n_dst)
        else:  # insert or delete: one side is empty
            distance += n_src + n_dst
    return CharAlignment(len(source), len(target), index, kept, distance)


@dataclass(frozen=True)
class ProjectedSpan:
    """One reference span carried onto the target text.

    Attributes:
        source: the span on the reference text.
        target: the projected span on the target text (same type), or ``None`` when lost.
        kept: characters of the source span aligned to identical target characters, 0..source.length.
        state: ``"projected"`` or ``"lost"``.
        reason: why the span is lost; ``None`` when projected.
    """

    source: Span
    target: Span | None
    kept: int
    state: str
    reason: str | None = None

    @property
    def kept_fraction(self) -> float:
        """kept / source.length, in [0, 1]."""
        return self.kept / self.source.length


def project_spans(
    source: str,
    target: str,
    spans: Iterable[Any],
    *,
    min_kept: float = DEFAULT_MIN_KEPT,
    alignment: CharAlignment | None = None,
) -> tuple[ProjectedSpan, ...]:
    """Project reference spans onto ``target``; a span that cannot be projected is reported ``lost``.

    Args:
        source: reference text the spans refer to.
        target: the other text (e.g. a parser's extracted text).
        spans: spans in any form :func:`ingestaudit.metrics.spans.as_span` reads, on ``source``.
        min_kept: minimum fraction f = kept / length, 0 < min_kept <= 1 (see the module docstring).
        alignment: a precomputed :func:`align_chars` of (source, target), to align once for many span sets.

    Returns:
        One :class:`ProjectedSpan` per input span, in input order.

    Raises:
        ValueError: ``min_kept`` outside (0, 1], a span past the end of ``source``, or an alignment of other
            lengths; the errors of ``as_span``.

    Example: reference "Call Ana Lima" and target "Call Ana\\nLima": PERSON [5, 13) keeps 7 of 8 characters
    (the space became a line break) and projects to [5, 13).
    """
    if isinstance(min_kept, bool) or not isinstance(min_kept, (int, float)) or not (0.0 < min_kept <= 1.0):
        raise ValueError(f"min_kept must be in (0, 1], got {min_kept!r}")
    items = as_spans(spans, source)
    al = align_chars(source, target) if alignment is None else alignment
    if (al.source_len, al.target_len) != (len(source), len(target)):
        raise ValueError("the alignment was computed for texts of other lengths")
    out = []
    for s in items:
        kept = al.kept_count(s.start, s.end)
        if kept == 0 or kept / s.length < min_kept:
            out.append(
                ProjectedSpan(
                    s, None, kept, "lost",
                    f"{kept} of {s.length} characters survive unchanged (< {min_kept:g} required)",
                )
            )
            continue
        mapped = al.target_index[s.start : s.end]
        mapped = mapped[mapped >= 0]
        out.append(ProjectedSpan(s, Span(int(mapped[0]), int(mapped[-1]) + 1, s.type), kept, "projected"))
    return tuple(out)
