"""Exact Jaccard similarity of shingle sets, and a seeded generator of text pairs with a known exact Jaccard.

The generator feeds the S-curve checks of MinHash LSH (`ingestaudit.metrics.lsh`): it builds pairs whose word n-gram
sets have exactly the requested Jaccard, so the empirical LSH candidate rate can be compared with
``1 - (1 - J^r)^b`` at a known ``J``.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass
from fractions import Fraction

import numpy as np


def jaccard_counts(a: Set, b: Set) -> tuple[int, int]:
    """``(|A ∩ B|, |A ∪ B|)`` of two sets."""
    inter = len(a & b) if len(a) <= len(b) else len(b & a)
    return inter, len(a) + len(b) - inter


def exact_jaccard(a: Set, b: Set) -> float | None:
    """Exact Jaccard similarity ``J(A, B) = |A ∩ B| / |A ∪ B|`` (Jaccard 1901), in [0, 1].

    Returns:
        None when both sets are empty (0/0). MinHash reports 1.0 for two empty sets, which is why empty documents
        must be kept out of LSH; here the value is simply undefined.
    """
    inter, union = jaccard_counts(a, b)
    if union == 0:
        return None
    return inter / union


def word_ngrams(text: str, n: int) -> set[str]:
    """Word n-grams of ``text``: ``text.split()`` then each run of ``n`` consecutive words joined by one space.

    The same definition as the ``"word"`` shingling of `ingestaudit.stages.dedup` (the tests check they agree).

    Raises:
        ValueError: ``n < 1``.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    words = text.split()
    return {" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


@dataclass(frozen=True)
class NearDuplicatePair:
    """Two texts whose word ``n``-gram sets have exactly ``intersection / union`` Jaccard similarity.

    Attributes:
        text_a, text_b: lower-case ASCII words separated by single spaces (unchanged by NFKC, case folding and
            whitespace normalization).
        n: the word n-gram size the Jaccard refers to.
        intersection, union: ``|A ∩ B|`` and ``|A ∪ B|`` of the two n-gram sets.
    """

    text_a: str
    text_b: str
    n: int
    intersection: int
    union: int

    @property
    def jaccard(self) -> Fraction:
        """The exact Jaccard ``intersection / union``."""
        return Fraction(self.intersection, self.union)


def near_duplicate_pairs(n_pairs: int, jaccard: Fraction | float | str, *, union_size: int = 250, n: int = 1,
                         seed: int = 0, word_length: int = 8) -> tuple[NearDuplicatePair, ...]:
    """Generate ``n_pairs`` text pairs whose word n-gram sets have exactly Jaccard ``jaccard``; seeded.

    Construction: every word is a distinct random string of ``word_length`` lower-case letters (distinct across the
    whole batch, so different pairs share no n-gram). With ``I = J·U`` shared and ``D = U - I`` differing n-grams,
    text A is ``S + X_A`` and text B is ``S + X_B`` where ``S`` has ``I + n - 1`` words and ``X_A``, ``X_B`` have
    ``⌊D/2⌋`` and ``⌈D/2⌉`` words. The shared n-grams are the ``I`` inside ``S``; each text has one n-gram of its own
    per word of ``X`` (the n-grams starting at positions ``I .. I + |X| - 1`` each hold a word of ``X``), so
    ``|A ∪ B| = I + D = U`` and ``J = I / U`` exactly. Every pair is re-checked with `word_ngrams` before it is
    returned.

    Args:
        n_pairs: number of pairs (>= 1).
        jaccard: target ``J`` in [0, 1]; ``J·union_size`` must be an integer (0.8 with 250 gives 200 shared n-grams).
        union_size: ``U = |A ∪ B|``.
        n: word n-gram size (>= 1).
        seed: seed of ``numpy.random.default_rng``.
        word_length: letters per word (>= 4, so that collisions are rare; any collision is redrawn).

    Raises:
        ValueError: ``J·U`` is not an integer, ``J`` outside [0, 1], ``n < 1``, ``n_pairs < 1``, ``union_size < 1``
            or ``word_length < 4``.
    """
    import numpy as np

    target = Fraction(jaccard).limit_denominator(10**9) if not isinstance(jaccard, Fraction) else jaccard
    if not 0 <= target <= 1:
        raise ValueError(f"jaccard must be in [0, 1], got {jaccard}")
    shared = target * union_size
    if shared.denominator != 1:
        raise ValueError(f"jaccard {target} x union_size {union_size} = {shared} is not an integer number of n-grams")
    if n < 1 or n_pairs < 1 or union_size < 1 or word_length < 4:
        raise ValueError("need n >= 1, n_pairs >= 1, union_size >= 1 and word_length >= 4")
    n_shared = int(shared)
    diff = union_size - n_shared
    len_xa, len_xb = diff // 2, diff - diff // 2
    rng = np.random.default_rng(seed)
    alphabet = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    seen: set[str] = set()

    def words(k: int) -> list[str]:
        out: list[str] = []
        while len(out) < k:
            for letters in rng.choice(alphabet, size=(k - len(out), word_length)):
                w = "".join(letters)
                if w not in seen:
                    seen.add(w)
                    out.append(w)
        return out

    pairs = []
    for _ in range(n_pairs):
        s = words(n_shared + n - 1)
        text_a = " ".join(s + words(len_xa))
        text_b = " ".join(s + words(len_xb))
        inter, union = jaccard_counts(word_ngrams(text_a, n), word_ngrams(text_b, n))
        if (inter, union) != (n_shared, union_size):  # pragma: no cover - the construction guarantees it
            raise AssertionError(f"generator broke its own guarantee: {inter}/{union} != {n_shared}/{union_size}")
        pairs.append(NearDuplicatePair(text_a, text_b, n, inter, union))
    return tuple(pairs)


def sorted_jaccard(a: np.ndarray, b: np.ndarray) -> float | None:
    """Exact Jaccard ``|A∩B| / |A∪B|`` of two sets given as sorted distinct arrays (the dedup step's shingle hashes);
    None when both are empty (as `ingestaudit.metrics.jaccard.exact_jaccard`). Equal to the Jaccard of the shingle
    sets unless two distinct shingles of the pair share a 64-bit hash (probability about n²/2^65 for n shingles)."""
    if not len(a) and not len(b):
        return None
    inter = int(np.intersect1d(a, b, assume_unique=True).size)
    return inter / (len(a) + len(b) - inter)
