"""Offset maps: where each character of a stage's output came from in its input (DESIGN.md, "Offsets compose").

An `OffsetMap` from an OUTPUT text of length n to an INPUT text of length m is an int64 array ``source`` of shape (n,):
``source[i]`` is the input code-point position that output character i was kept from, or -1 when the character does
not come from the input (inserted or rewritten). Maps compose: a chunk's characters in the cleaned text map through
the cleaner's map to the parsed text, and through the extraction alignment to the reference text, so labels written
once on the reference text judge every stage.

Constructors:

* `OffsetMap.identity` — the output is the input.
* `OffsetMap.from_pieces` — exact, for stages that keep or drop spans (a line-removal cleaner knows the runs it kept).
* `OffsetMap.from_alignment` — for stages that rewrite text (trafilatura): the minimum-cost Levenshtein alignment
  (unit costs) of RapidFuzz 3.x ``Levenshtein.opcodes``; only characters in ``equal`` blocks map, substituted and
  inserted output characters map to -1. Levenshtein alignments are not unique on repeated text; RapidFuzz picks one
  deterministically, and any alignment is monotone, so text repeated in the input is never mapped out of order.
* `OffsetMap.from_char_alignment` — inverts the reference -> parsed `CharAlignment` of
  `ingestaudit.metrics.alignment` into a parsed -> reference map (kept characters only).

A map is *monotone* when its mapped positions strictly increase with the output position (every constructor above
except `from_pieces` with reordered or repeated pieces gives one, and composition keeps it); queries on monotone maps
are O(log n) binary searches, otherwise vectorised numpy scans.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property

import numpy as np
from rapidfuzz.distance import Levenshtein

from ingestaudit.metrics.alignment import CharAlignment

_EMPTY = np.zeros(0, dtype=np.int64)


class OffsetMap:
    """Output code point -> input code point (or -1); see the module docstring.

    Args:
        source: int array-like, shape (output_len,), values in ``[-1, input_len)``; copied to a read-only int64 array.
        input_len: length of the input text in code points (>= 0).

    Raises:
        ValueError: ``source`` is not one-dimensional, or holds a value outside ``[-1, input_len)``.
    """

    def __init__(self, source: np.ndarray | Iterable[int], input_len: int):
        arr = np.array(source, dtype=np.int64)
        if arr.ndim != 1:
            raise ValueError(f"an offset map is one-dimensional, got shape {arr.shape}")
        input_len = int(input_len)
        if input_len < 0:
            raise ValueError(f"input_len must be >= 0, got {input_len}")
        if arr.size and (arr.min() < -1 or arr.max() >= input_len):
            raise ValueError(f"offset map values must lie in [-1, {input_len}), got [{arr.min()}, {arr.max()}]")
        arr.flags.writeable = False
        self.source = arr
        self.input_len = input_len

    # ----- constructors -------------------------------------------------------------------------------------------

    @classmethod
    def identity(cls, n: int) -> "OffsetMap":
        """The map of a stage that returns its input unchanged: ``source[i] = i`` for i < n."""
        return cls(np.arange(int(n), dtype=np.int64), n)

    @classmethod
    def from_pieces(cls, output_len: int, input_len: int,
                    pieces: Iterable[tuple[int, int, int]]) -> "OffsetMap":
        """An exact map from the runs a stage kept: each piece ``(out_start, in_start, length)`` says that output
        ``[out_start, out_start + length)`` is input ``[in_start, in_start + length)`` character for character;
        output characters in no piece (a separator the stage inserted) map to -1.

        Raises:
            ValueError: a negative value, a piece past either text's end, or two pieces sharing output characters.
        """
        src = np.full(int(output_len), -1, dtype=np.int64)
        used = np.zeros(int(output_len), dtype=bool)
        for out_start, in_start, length in pieces:
            out_start, in_start, length = int(out_start), int(in_start), int(length)
            if min(out_start, in_start, length) < 0:
                raise ValueError(f"piece {(out_start, in_start, length)} has a negative value")
            if out_start + length > output_len or in_start + length > input_len:
                raise ValueError(f"piece {(out_start, in_start, length)} runs past the output ({output_len}) "
                                 f"or input ({input_len}) text")
            if used[out_start:out_start + length].any():
                raise ValueError(f"piece {(out_start, in_start, length)} overlaps another piece in the output")
            used[out_start:out_start + length] = True
            src[out_start:out_start + length] = np.arange(in_start, in_start + length)
        return cls(src, input_len)

    @classmethod
    def from_alignment(cls, output: str, input: str) -> "OffsetMap":  # noqa: A002 - the input text
        """The map of a rewriting stage from a Levenshtein alignment of its ``output`` onto its ``input``.

        Only output characters aligned to an identical input character (RapidFuzz ``equal`` opcodes) map; substituted
        and inserted ones map to -1. Cost: RapidFuzz's bit-parallel Levenshtein, about O(n·m/64).

        Raises:
            TypeError: an argument is not a ``str``.
        """
        if not isinstance(output, str) or not isinstance(input, str):
            raise TypeError("from_alignment takes two str")
        if output == input:
            return cls.identity(len(output))
        src = np.full(len(output), -1, dtype=np.int64)
        for op in Levenshtein.opcodes(output, input):
            if op.tag == "equal":
                src[op.src_start:op.src_end] = np.arange(op.dest_start, op.dest_end)
        return cls(src, len(input))

    @classmethod
    def from_char_alignment(cls, alignment: CharAlignment) -> "OffsetMap":
        """The target -> reference map of a reference -> target `CharAlignment` (``align_chars(reference, parsed)``
        gives parsed -> reference): target position ``alignment.target_index[r]`` maps to reference position r for
        every KEPT reference character r (identical characters); every other target character maps to -1."""
        src = np.full(alignment.target_len, -1, dtype=np.int64)
        ref_pos = np.flatnonzero(alignment.kept)
        src[alignment.target_index[ref_pos]] = ref_pos
        return cls(src, alignment.source_len)

    # ----- basic properties ---------------------------------------------------------------------------------------

    @property
    def output_len(self) -> int:
        """Length of the output text in code points."""
        return int(self.source.size)

    def __len__(self) -> int:
        return self.output_len

    def __repr__(self) -> str:
        return f"OffsetMap(output_len={self.output_len}, input_len={self.input_len}, mapped={self.mapped_count})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, OffsetMap) and self.input_len == other.input_len
                and np.array_equal(self.source, other.source))

    __hash__ = None  # type: ignore[assignment]

    @cached_property
    def _mapped_out(self) -> np.ndarray:
        """Output positions that map (source >= 0), increasing."""
        return np.flatnonzero(self.source >= 0).astype(np.int64)

    @cached_property
    def _mapped_in(self) -> np.ndarray:
        """The input positions of `_mapped_out`, in output order."""
        return self.source[self._mapped_out]

    @cached_property
    def monotone(self) -> bool:
        """True when mapped input positions strictly increase with the output position (so the map is injective)."""
        return bool(np.all(np.diff(self._mapped_in) > 0))

    @cached_property
    def _prefix_max(self) -> np.ndarray:
        """``max(source[:i + 1])`` for each i (non-decreasing), for `output_at_or_after`."""
        return np.maximum.accumulate(self.source) if self.source.size else _EMPTY

    @property
    def mapped_count(self) -> int:
        """Number of output characters that come from the input (source >= 0)."""
        return int(self._mapped_out.size)

    # ----- composition --------------------------------------------------------------------------------------------

    def compose(self, inner: "OffsetMap") -> "OffsetMap":
        """``self`` (C -> B) then ``inner`` (B -> A): the map C -> A; a character maps when it maps in both.

        Raises:
            ValueError: ``self.input_len != inner.output_len`` (the maps do not share text B).
        """
        if self.input_len != inner.output_len:
            raise ValueError(f"cannot compose: this map's input has {self.input_len} code points, the inner map's "
                             f"output {inner.output_len}")
        out = np.full(self.output_len, -1, dtype=np.int64)
        out[self._mapped_out] = inner.source[self._mapped_in]
        return OffsetMap(out, inner.input_len)

    # ----- queries ------------------------------------------------------------------------------------------------

    def _check_output_range(self, start: int, end: int) -> tuple[int, int]:
        start, end = int(start), int(end)
        if not 0 <= start <= end <= self.output_len:
            raise ValueError(f"output interval [{start}, {end}) is not inside [0, {self.output_len}]")
        return start, end

    def _mapped_slice(self, start: int, end: int) -> tuple[int, int]:
        """Indexes [a, b) into `_mapped_out` of the mapped output characters in [start, end)."""
        a, b = np.searchsorted(self._mapped_out, (start, end), side="left")
        return int(a), int(b)

    def covered_positions(self, start: int, end: int) -> np.ndarray:
        """Sorted distinct input positions reached from output ``[start, end)``; int64, shape (k,), k <= end - start.

        Raises:
            ValueError: the interval is not inside ``[0, output_len]`` or ``start > end``.
        """
        start, end = self._check_output_range(start, end)
        a, b = self._mapped_slice(start, end)
        if self.monotone:
            return self._mapped_in[a:b].copy()
        return np.unique(self._mapped_in[a:b])

    def covered(self, start: int, end: int, span_start: int, span_end: int) -> int:
        """Number of DISTINCT input positions inside ``[span_start, span_end)`` reached from output ``[start, end)``.

        O(log n) on a monotone map, O(end - start) otherwise. An empty or inverted input span gives 0.

        Raises:
            ValueError: the output interval is not inside ``[0, output_len]`` or ``start > end``.
        """
        start, end = self._check_output_range(start, end)
        span_start, span_end = int(span_start), int(span_end)
        if span_end <= span_start:
            return 0
        a, b = self._mapped_slice(start, end)
        if self.monotone:
            c, d = np.searchsorted(self._mapped_in, (span_start, span_end), side="left")
            return max(0, int(min(b, d)) - int(max(a, c)))
        seg = self._mapped_in[a:b]
        return int(np.unique(seg[(seg >= span_start) & (seg < span_end)]).size)

    def project(self, start: int, end: int) -> tuple[int, int] | None:
        """The smallest input interval ``(lo, hi)`` holding every input position reached from output ``[start, end)``
        (``hi`` exclusive), or None when no character of the interval comes from the input.

        Raises:
            ValueError: the interval is not inside ``[0, output_len]`` or ``start > end``.
        """
        start, end = self._check_output_range(start, end)
        a, b = self._mapped_slice(start, end)
        if a == b:
            return None
        if self.monotone:
            return int(self._mapped_in[a]), int(self._mapped_in[b - 1]) + 1
        seg = self._mapped_in[a:b]
        return int(seg.min()), int(seg.max()) + 1

    def preimage(self, in_start: int, in_end: int) -> tuple[int, int] | None:
        """The smallest output interval ``(lo, hi)`` holding every output character that maps into input
        ``[in_start, in_end)`` (``hi`` exclusive), or None when none does (the stage dropped that input text)."""
        in_start, in_end = int(in_start), int(in_end)
        if in_end <= in_start:
            return None
        if self.monotone:
            c, d = np.searchsorted(self._mapped_in, (in_start, in_end), side="left")
            if c == d:
                return None
            return int(self._mapped_out[c]), int(self._mapped_out[d - 1]) + 1
        hits = self._mapped_out[(self._mapped_in >= in_start) & (self._mapped_in < in_end)]
        return (int(hits[0]), int(hits[-1]) + 1) if hits.size else None

    def output_at_or_after(self, input_pos: int) -> int:
        """The first output position i whose ``source[i] >= input_pos``, or ``output_len`` when there is none.

        On a monotone map this is where input position ``input_pos`` (or, when the stage dropped it, the next input
        character it kept) lies in the output: the way to move a page start or a heading into output coordinates.
        """
        return int(np.searchsorted(self._prefix_max, int(input_pos), side="left"))

    def outputs_at_or_after(self, input_positions: Iterable[int]) -> np.ndarray:
        """`output_at_or_after` for many positions at once; int64, same shape as the input."""
        return np.searchsorted(self._prefix_max, np.asarray(list(input_positions), dtype=np.int64),
                               side="left").astype(np.int64)

    def input_positions_reached(self) -> np.ndarray:
        """Sorted distinct input positions reached by any output character; int64."""
        return self.covered_positions(0, self.output_len)
