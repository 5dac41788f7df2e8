"""The ``bm25`` retriever: BM25 over the pipeline's chunk texts with the ``bm25s`` library (Lù 2024), no vectors.

Tokenisation: ``bm25s.tokenize`` (lower-cased, ``token_pattern`` ``(?u)\\b\\w\\w+\\b``: words of two or more word
characters, English stop words removed by default, no stemming); the question is tokenised the same way.

Scoring (Kamphuis, de Vries, Boytsov & Lin 2020, "Which BM25 do you mean?", the variants bm25s implements): a chunk's
score is ``sum over the question's terms t of idf(t) * tfc(t)``, with ``tf`` the term's count in the chunk, ``dl``
the chunk's length in tokens and ``avgdl`` the mean over chunks. ``method`` chooses the term-frequency component and,
unless ``idf_method`` says otherwise, the idf (`VARIANTS`). The default is bm25s's own, ``lucene``:
``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` (never negative) and ``tfc = tf / (tf + k1 (1 - b + b dl / avgdl))``
(Lucene drops the constant ``k1 + 1`` factor of the original, which leaves the ranking unchanged). The ``atire`` term
component with the ``robertson`` idf is rank_bm25's ``BM25Okapi`` exactly while no term occurs in more than half the
chunks (BM25Okapi then floors a negative idf at 0.25 x the mean idf, bm25s at 0): the tests compare the two.

Only chunks that share at least one term with the question (score > 0) are returned, as a lexical engine does; ties
are broken by chunk row. Scores are float64.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any, ClassVar

import numpy as np

from ingestaudit.stages.retrievers import ChunkView, Retriever

TOKEN_PATTERN = r"(?u)\b\w\w+\b"
"""bm25s's (and scikit-learn's) default token pattern: runs of two or more word characters."""

VARIANTS: dict[str, tuple[str, str]] = {
    "robertson": ("ln((N - df + 0.5) / (df + 0.5)), floored at 0", "tf / (tf + k1 (1 - b + b dl / avgdl))"),
    "lucene": ("ln(1 + (N - df + 0.5) / (df + 0.5))", "tf / (tf + k1 (1 - b + b dl / avgdl))"),
    "atire": ("ln(N / df)", "tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))"),
    "bm25l": ("ln((N + 1) / (df + 0.5))", "(k1 + 1) (c + delta) / (k1 + c + delta), c = tf / (1 - b + b dl / avgdl)"),
    "bm25+": ("ln((N + 1) / df)", "(k1 + 1) tf / (k1 (1 - b + b dl / avgdl) + tf) + delta"),
}
"""bm25s's variants (Kamphuis et al. 2020): method -> (its idf, its term-frequency component); N chunks, df the chunks
holding the term."""


def _number(name: str, value: Any, low: float, high: float = math.inf) -> float:
    """``value`` as a float when it is a finite number in ``[low, high]`` (NaN and infinity refused: TOML reads
    ``nan`` and ``inf``); else ValueError naming option ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not low <= value <= high:
        bound = f"finite, in [{low:g}, {high:g}]" if high != math.inf else f"finite and >= {low:g}"
        raise ValueError(f"bm25 option {name!r} must be a number {bound}, got {value!r}")
    return float(value)


class BM25Retriever(Retriever):
    """BM25 over chunk texts (module docstring).

    Options:
        k1: term-frequency saturation, >= 0 (default 1.5, bm25s's).
        b: length normalisation, in [0, 1] (default 0.75).
        method: ``lucene`` (default), ``robertson``, ``atire``, ``bm25l`` or ``bm25+`` (`VARIANTS`).
        idf_method: the idf of another variant (default: ``method``'s).
        delta: the ``bm25l`` / ``bm25+`` constant (default 0.5; ignored by the others).
        stopwords: a bm25s stop-word language (``"english"``, default) or ``"none"``.
        lower: lower-case before tokenising (default True).
        token_pattern: the token regular expression (default `TOKEN_PATTERN`).

    Raises (constructor):
        ValueError: an option out of range or unknown (the message names it).
    """

    name: ClassVar[str] = "bm25"
    needs_vectors: ClassVar[bool] = False

    def __init__(self, *, k1: float = 1.5, b: float = 0.75, method: str = "lucene", idf_method: str | None = None,
                 delta: float = 0.5, stopwords: str = "english", lower: bool = True,
                 token_pattern: str = TOKEN_PATTERN) -> None:
        self.k1 = _number("k1", k1, 0.0)
        self.b = _number("b", b, 0.0, 1.0)
        self.delta = _number("delta", delta, 0.0)
        for key, m in (("method", method), ("idf_method", idf_method)):
            if not (m is None and key == "idf_method") and m not in VARIANTS:
                raise ValueError(f"bm25 option {key!r}: unknown variant {m!r}; valid: {', '.join(VARIANTS)}")
        self.method, self.idf_method = method, idf_method or method
        if not isinstance(lower, bool):
            raise ValueError(f"bm25 option 'lower' must be true or false, got {lower!r}")
        self.lower = lower
        try:
            re.compile(token_pattern)
        except (TypeError, re.error) as exc:
            raise ValueError(f"bm25 option 'token_pattern': not a regular expression ({exc})") from None
        self.token_pattern = token_pattern
        if not isinstance(stopwords, str):
            raise ValueError(f"bm25 option 'stopwords' must be a language name or 'none', got {stopwords!r}")
        if stopwords != "none":
            from bm25s.tokenization import _infer_stopwords

            try:
                _infer_stopwords(stopwords)
            except ValueError as exc:
                raise ValueError(f"bm25 option 'stopwords': {exc}") from None
        self.stopwords = stopwords
        self._model: Any = None
        self._n = 0

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        """The tokens of each text, as the index and the questions are tokenised (``bm25s.tokenize``)."""
        import bm25s

        return bm25s.tokenize(list(texts), lower=self.lower, token_pattern=self.token_pattern,
                              stopwords=None if self.stopwords == "none" else self.stopwords,
                              return_ids=False, show_progress=False)

    def index(self, chunks: Sequence[ChunkView], vectors: np.ndarray | None) -> None:
        """Tokenise every chunk's text and build the bm25s index (rows ``0..n-1``); ``vectors`` are not read."""
        import bm25s

        self.chunks, self.vectors = list(chunks), None
        self._n = len(self.chunks)
        tokens = self.tokenize([c.text for c in self.chunks])
        self._model = None
        if any(tokens):  # bm25s cannot index a corpus without a single token: every score is then 0
            self._model = bm25s.BM25(k1=self.k1, b=self.b, delta=self.delta, method=self.method,
                                     idf_method=self.idf_method, dtype="float64")
            self._model.index(tokens, show_progress=False)

    def scores(self, question: str) -> np.ndarray:
        """float64 ``(n,)``: every chunk's BM25 score for ``question`` (0 for a chunk sharing no term).

        Raises:
            RuntimeError: `index` was not called.
        """
        if self._model is None:
            if not hasattr(self, "chunks"):
                raise RuntimeError("bm25: index() must be called before search")
            return np.zeros(self._n)
        return np.asarray(self._model.get_scores(self.tokenize([question])[0]), dtype=np.float64)

    def search(self, question: str, vector: np.ndarray | None, k: int,
               allowed: np.ndarray | None) -> list[tuple[int, float]]:
        """The ``k`` best-scoring chunks among ``allowed`` (all when None) with a score > 0, best first, ties by
        row."""
        s = self.scores(question)
        rows = np.arange(s.size) if allowed is None else np.asarray(allowed, dtype=np.int64)
        keep = rows[s[rows] > 0]
        order = np.lexsort((keep, -s[keep]))[:k]
        return [(int(keep[i]), float(s[keep[i]])) for i in order]

    def settings(self) -> dict[str, Any]:
        """Library, variant (its idf and term component, by formula), k1, b, delta and the tokenizer."""
        return {"library": "bm25s", "method": self.method, "idf_method": self.idf_method,
                "idf": VARIANTS[self.idf_method][0], "tf_component": VARIANTS[self.method][1],
                "k1": self.k1, "b": self.b, "delta": self.delta,
                "tokenizer": {"function": "bm25s.tokenize", "lower": self.lower, "token_pattern": self.token_pattern,
                              "stopwords": self.stopwords, "stemmer": None},
                "returned": "chunks sharing at least one term with the question (score > 0); ties by chunk row",
                "source": "Kamphuis, de Vries, Boytsov & Lin 2020, Which BM25 do you mean? (ECIR)"}

    def version(self) -> str:
        """bm25s's version (package metadata), or ``"not installed"``."""
        try:
            return version("bm25s")
        except PackageNotFoundError:
            return "not installed"
