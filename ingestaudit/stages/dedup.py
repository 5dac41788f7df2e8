"""The default near-duplicate detector under audit: datasketch MinHash + MinHashLSH, clustered by connected components.

Pipeline for a corpus of ``(key, text)`` documents, every step a named option of `DedupConfig`:

1. **normalize** the text with a named preset (`NORMALIZATIONS`);
2. **exclude** empty documents (nothing but whitespace) and documents with fewer than ``min_shingles`` shingles:
   every empty MinHash equals every other (the estimated Jaccard of two empty sets is 1.0), so blank pages would
   all merge. Excluded documents are listed with their reason, never silently dropped;
3. **exact duplicates**: documents with the same SHA-256 of the normalized text form an exact group (datasketch
   refuses ``threshold=1.0``, so exact duplicates are found by hash, not by LSH);
4. **shingle** the normalized text into character k-grams or word n-grams (`shingle_set`), hash each shingle
   into a MinHash of ``num_perm`` values (`ingestaudit.stages.minhash`, identical to datasketch's ``update``);
5. **candidates**: one representative per exact group is banded as ``datasketch.MinHashLSH(threshold, num_perm,
   weights)`` bands it (its ``b`` bands of ``r`` rows, recorded); a pair of representatives that agree on a whole
   band is a candidate pair, exactly the pairs that inserting every representative and querying each returns
   (`ingestaudit.stages.lsh_bands`, tested against MinHashLSH);
6. optional **verification**: a candidate pair is kept only if the exact Jaccard of its shingle sets is ``>=
   threshold``;
7. **clusters**: connected components (``scipy.sparse.csgraph.connected_components``) of the graph whose edges are
   the kept candidate pairs and the exact groups. Components are transitive: ``a~b``, ``b~c`` put ``a`` and ``c``
   together whatever ``J(a, c)`` is (see `ingestaudit.metrics.dedup.chained_pairs`).

The first member of each cluster in input order is the one kept; the others would be removed.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Literal

import numpy as np

from ingestaudit.dedup_settings import NORMALIZATIONS, DedupConfig  # re-exported: their home is below the stages
from ingestaudit.errors import IngestAuditError
from ingestaudit.metrics.jaccard import exact_jaccard, sorted_jaccard, word_ngrams  # noqa: F401 (re-exported)
from ingestaudit.stages.minhash import minhash_template, scheme_of, signature_matrix



class DuplicateKeyError(IngestAuditError, ValueError):
    """Two documents given to the deduplicator share a key; the message lists the repeated keys."""


def normalize(text: str, config: DedupConfig) -> str:
    """``text`` after the config's named normalization."""
    return NORMALIZATIONS[config.normalization](text)


def shingle_set(normalized: str, config: DedupConfig) -> frozenset[bytes]:
    """The shingles of an already normalized text, UTF-8 encoded (``surrogatepass``) for hashing.

    ``"char"``: ``{t[i:i+k] : 0 <= i <= len(t) - k}`` over code points (empty when ``len(t) < k``);
    ``"word"``: `ingestaudit.metrics.jaccard.word_ngrams` (``str.split``, n-grams joined by one space).
    """
    return _shingles(normalized, config.shingling, config.k)


def _shingles(normalized: str, shingling: str, k: int) -> frozenset[bytes]:
    if shingling == "char":
        if normalized.isascii():  # one code point = one byte: slice the encoded text, same shingles
            raw = normalized.encode("ascii")
            return frozenset([raw[i:i + k] for i in range(len(raw) - k + 1)])
        strs: Iterable[str] = {normalized[i:i + k] for i in range(len(normalized) - k + 1)}
    else:
        strs = word_ngrams(normalized, k)
    return frozenset(s.encode("utf-8", "surrogatepass") for s in strs)


@dataclass(frozen=True)
class ExcludedDocument:
    """A document kept out of LSH.

    Attributes:
        key: the document key. reason: ``"empty"`` (only whitespace after normalization) or ``"too_short"``.
        n_chars: characters after normalization. n_shingles: shingles (< ``min_shingles``).
    """

    key: str
    reason: Literal["empty", "too_short"]
    n_chars: int
    n_shingles: int


@dataclass(frozen=True)
class CandidatePair:
    """A pair returned by the LSH index (keys in input order).

    Attributes:
        a, b: document keys (``a`` comes first in the input).
        jaccard: exact Jaccard of the two shingle sets when ``verify`` is on, else None (not computed).
        accepted: whether the pair became a clustering edge (always True without verification).
    """

    a: str
    b: str
    jaccard: float | None
    accepted: bool


@dataclass(frozen=True)
class DedupResult:
    """Output of the detector on one corpus.

    Attributes:
        config: the options used.
        keys: document keys in input order.
        cluster_of: ``key -> cluster id`` (ids numbered from 0 by first member in input order); ``None`` for a
            document that took part in no clustering (excluded). This is the ``predicted`` partition of
            `ingestaudit.metrics.dedup`.
        clusters: the merged clusters (2 or more members), members in input order.
        excluded: the excluded documents, in input order.
        exact_groups: groups (2 or more) with identical normalized text.
        candidates: LSH candidate pairs between exact-group representatives, sorted by input position.
        b, r: bands and rows of the ``MinHashLSH`` index that was built.
        n_shingles: ``key -> number of shingles``.
        scheme: datasketch permutation scheme of the signatures. datasketch_version: installed version.
        normalized_text: ``key -> normalized text`` (shingle sets are rebuilt from it on demand, which keeps
            memory at about one byte per character instead of ~100 bytes per shingle); not compared, not printed.
    """

    config: DedupConfig
    keys: tuple[str, ...]
    cluster_of: Mapping[str, int | None]
    clusters: tuple[tuple[str, ...], ...]
    excluded: tuple[ExcludedDocument, ...]
    exact_groups: tuple[tuple[str, ...], ...]
    candidates: tuple[CandidatePair, ...]
    b: int
    r: int
    n_shingles: Mapping[str, int]
    scheme: str
    datasketch_version: str
    normalized_text: Mapping[str, str] = field(repr=False, compare=False)

    def shingles(self, key: str) -> frozenset[bytes]:
        """The shingle set of one document (rebuilt from its normalized text; cached)."""
        return _cached_shingles(self.normalized_text[key], self.config.shingling, self.config.k)

    def exact_jaccard(self, a: str, b: str) -> float | None:
        """Exact Jaccard of two documents' shingle sets, in [0, 1] (None when both are empty)."""
        return exact_jaccard(self.shingles(a), self.shingles(b))

    @property
    def removed(self) -> tuple[str, ...]:
        """Keys deduplication would drop: every member of a merged cluster except its first, in input order."""
        drop = {k for c in self.clusters for k in c[1:]}
        return tuple(k for k in self.keys if k in drop)


@lru_cache(maxsize=256)
def _cached_shingles(normalized: str, shingling: str, k: int) -> frozenset[bytes]:
    return _shingles(normalized, shingling, k)


def _check_docs(docs: Mapping[str, str] | Iterable[tuple[str, str]]) -> tuple[list[str], list[str]]:
    items = list(docs.items()) if isinstance(docs, Mapping) else list(docs)
    keys = [k for k, _ in items]
    texts = [t for _, t in items]
    for k, t in items:
        if not isinstance(k, str) or not isinstance(t, str):
            raise TypeError(f"documents must be (str key, str text) pairs, got ({type(k).__name__}, "
                            f"{type(t).__name__}) for {k!r}")
    if len(set(keys)) != len(keys):
        repeated = sorted(k for k, count in Counter(keys).items() if count > 1)
        raise DuplicateKeyError(f"{len(repeated)} document key(s) given more than once: "
                                f"{', '.join(map(repr, repeated[:10]))}{' ...' if len(repeated) > 10 else ''}; "
                                "every document needs a unique key")
    return keys, texts


@dataclass(frozen=True, slots=True)
class DocSketch:
    """What the detector needs of one document, computed where the document is (a worker of the run): memory per
    document is one signature per ``num_perm``, never the text.

    Attributes:
        n_chars: code points after normalization. n_shingles: distinct shingles.
        blank: the normalized text is empty or white space only.
        digest: SHA-256 of the normalized text (UTF-8, ``surrogatepass``): exact duplicates share it.
        signatures: ``num_perm -> MinHash signature`` (`ingestaudit.stages.minhash.signature_matrix` row), for a
            document that may enter LSH (not blank, at least ``min_shingles`` shingles); empty otherwise.
    """

    n_chars: int
    n_shingles: int
    blank: bool
    digest: bytes
    signatures: Mapping[int, np.ndarray]


def sketch(text: str, config: DedupConfig, num_perms: Sequence[int] | None = None) -> tuple[DocSketch, np.ndarray]:
    """The `DocSketch` of one raw text under ``config`` (signatures for each of ``num_perms``, default the
    config's), and the sorted distinct 64-bit hashes of its shingles (the first 8 bytes of each shingle's SHA-1,
    little-endian, as datasketch's ``sha1_hash64``), from which exact Jaccard similarities are computed
    (`sorted_jaccard`) without keeping shingle sets or texts."""
    from ingestaudit.stages.minhash import sha1_prefix64, signature_of_hashes

    norm = normalize(text, config)
    shingles = _shingles(norm, config.shingling, config.k)
    blank = not norm.strip()
    perms = tuple(dict.fromkeys(num_perms or (config.num_perm,)))
    h64 = sha1_prefix64(list(shingles))  # one SHA-1 per shingle: the signatures and the Jaccard hashes
    sigs: dict[int, np.ndarray] = {}
    if not blank and len(shingles) >= config.min_shingles:
        sigs = {p: signature_of_hashes(h64, num_perm=p, seed=config.seed, scheme=config.scheme) for p in perms}
    hashes = np.unique(h64)
    digest = hashlib.sha256(norm.encode("utf-8", "surrogatepass")).digest()
    return DocSketch(len(norm), len(shingles), blank, digest, sigs), hashes


class SketchColumns:
    """Many documents' sketches as columns: ``n_chars``, ``n_shingles``, ``blank`` and ``digests`` (one entry per
    document) and ``signatures`` (``num_perm -> (n, num_perm)`` matrix; rows of documents without signatures are
    zeros and never read). `prepare_sketches` reads these; `SketchTable` builds them without one Python object per
    document."""

    def __init__(self, n_chars: Sequence[int], n_shingles: Sequence[int], blank: Sequence[bool],
                 digests: Sequence[bytes], signatures: Mapping[int, np.ndarray]) -> None:
        self.n_chars, self.n_shingles, self.blank, self.digests = n_chars, n_shingles, blank, digests
        self.signatures = signatures

    def __len__(self) -> int:
        return len(self.n_chars)

    @classmethod
    def of(cls, sketches: Sequence[DocSketch], num_perms: Sequence[int], config: DedupConfig) -> SketchColumns:
        """The columns of a list of `DocSketch`es (every eligible one carrying each of ``num_perms``)."""
        sigs = {}
        for p in num_perms:
            width = np.asarray(minhash_template(p, config.seed, config.scheme).hashvalues).dtype
            mat = np.zeros((len(sketches), p), dtype=width)
            for i, sk in enumerate(sketches):
                if sk.signatures:
                    mat[i] = sk.signatures[p]
            sigs[p] = mat
        return cls([sk.n_chars for sk in sketches], [sk.n_shingles for sk in sketches],
                   [sk.blank for sk in sketches], [sk.digest for sk in sketches], sigs)


class SketchTable:
    """An append-only table of sketches (`add`), about ``41 + 4 x num_perm`` bytes per document for 32-bit
    signatures (no Python object per document), read back as `SketchColumns` of chosen rows (`columns`)."""

    def __init__(self, num_perms: Sequence[int], config: DedupConfig) -> None:
        from array import array

        self.num_perms = tuple(num_perms)
        self.widths = {p: np.asarray(minhash_template(p, config.seed, config.scheme).hashvalues).dtype
                       for p in self.num_perms}
        self._n_chars, self._n_shingles = array("q"), array("q")
        self._blank = bytearray()
        self._digests = bytearray()
        self._sigs = {p: bytearray() for p in self.num_perms}
        self.n = 0

    def add(self, sk: DocSketch) -> int:
        """Append one sketch; returns its row."""
        self._n_chars.append(sk.n_chars)
        self._n_shingles.append(sk.n_shingles)
        self._blank.append(1 if sk.blank else 0)
        self._digests += sk.digest
        for p in self.num_perms:
            w = self.widths[p]
            if sk.signatures:
                self._sigs[p] += np.ascontiguousarray(sk.signatures[p], dtype=w).tobytes()
            else:
                self._sigs[p] += bytes(p * w.itemsize)
        self.n += 1
        return self.n - 1

    def columns(self, rows: Sequence[int]) -> SketchColumns:
        """The sketches of ``rows`` (in that order) as `SketchColumns`."""
        idx = np.asarray(rows, dtype=np.int64)
        nc = np.frombuffer(self._n_chars, dtype=np.int64)[idx].tolist() if len(idx) else []
        ns = np.frombuffer(self._n_shingles, dtype=np.int64)[idx].tolist() if len(idx) else []
        blank = [bool(self._blank[i]) for i in idx.tolist()]
        digests = [bytes(self._digests[32 * i:32 * i + 32]) for i in idx.tolist()]
        sigs = {p: np.frombuffer(self._sigs[p], dtype=self.widths[p]).reshape(self.n, p)[idx] for p in self.num_perms}
        return SketchColumns(nc, ns, blank, digests, sigs)


@dataclass
class _Prepared:
    """Everything that does not depend on the threshold (shared by the cells of a sweep)."""

    keys: list[str]
    normalized: list[str] | None  # None when prepared from sketches (no texts kept)
    n_shingles: list[int]
    excluded: list[ExcludedDocument]
    excluded_idx: set[int]
    exact_groups: list[list[int]]
    reps: list[int]  # indices that go into LSH: one per exact group, not excluded
    signatures: dict[int, tuple[np.ndarray, str]]  # num_perm -> (rows of `reps`, scheme)


_CHUNK_DOCS = 2048  # documents shingled and hashed at a time: shingle sets never exist for the whole corpus


def _chunk_signatures(normalized: list[str], shingling: str, k: int, min_shingles: int, num_perms: tuple[int, ...],
                      seed: int, schemes: tuple[str, ...]) -> tuple[list[int], list[int], list[np.ndarray]]:
    """Per-document work for one chunk (runs in a worker process when ``workers > 1``): shingle counts, the local
    indices of the LSH-eligible documents (non-empty, ``>= min_shingles`` shingles), and their signatures for each
    ``num_perm``."""
    sets = [_shingles(t, shingling, k) for t in normalized]
    counts = [len(x) for x in sets]
    eligible = [i for i, (t, c) in enumerate(zip(normalized, counts)) if t.strip() and c >= min_shingles]
    chosen = [sets[i] for i in eligible]
    return counts, eligible, [signature_matrix(chosen, num_perm=p, seed=seed, scheme=sch)
                              for p, sch in zip(num_perms, schemes)]


def _prepare(docs: Mapping[str, str] | Iterable[tuple[str, str]], config: DedupConfig,
             num_perms: tuple[int, ...], workers: int) -> _Prepared:
    keys, texts = _check_docs(docs)
    norm = [normalize(t, config) for t in texts]
    n = len(keys)
    schemes = tuple(scheme_of(minhash_template(p, config.seed, config.scheme)) for p in num_perms)
    chunks = [norm[lo:lo + _CHUNK_DOCS] for lo in range(0, n, _CHUNK_DOCS)]
    args = [(c, config.shingling, config.k, config.min_shingles, num_perms, config.seed, schemes) for c in chunks]
    if workers > 1 and len(chunks) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(min(workers, len(chunks)), mp_context=multiprocessing.get_context("spawn")) as pool:
            results = list(pool.map(_chunk_signatures, *zip(*args)))
    else:
        results = [_chunk_signatures(*a) for a in args]
    sketches: list[DocSketch] = []
    for lo, (counts, eligible, mats) in zip(range(0, n, _CHUNK_DOCS), results):
        rows = {i: r for r, i in enumerate(eligible)}
        for i, c in enumerate(counts):
            t = norm[lo + i]
            sigs = {p: m[rows[i]] for p, m in zip(num_perms, mats)} if i in rows else {}
            sketches.append(DocSketch(len(t), c, not t.strip(),
                                      hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest(), sigs))
    prep = prepare_sketches(keys, sketches, config, num_perms)
    prep.normalized = norm
    return prep


def prepare_sketches(keys: Sequence[str], sketches: Sequence[DocSketch] | SketchColumns, config: DedupConfig,
                     num_perms: Sequence[int] | None = None) -> _Prepared:
    """Steps 2, 3 and the signatures of step 4 (module docstring) from per-document sketches (`sketch`, as a list
    or as `SketchColumns`), for each of ``num_perms`` (default: the config's; every eligible sketch must carry
    them).

    Raises:
        DuplicateKeyError: a key appears twice.
        KeyError: a sketch lacks a signature for one of ``num_perms``.
    """
    keys = list(keys)
    if len(set(keys)) != len(keys):
        _check_docs([(k, "") for k in keys])
    perms = tuple(dict.fromkeys(num_perms or (config.num_perm,)))
    cols = sketches if isinstance(sketches, SketchColumns) else SketchColumns.of(sketches, perms, config)
    schemes = tuple(scheme_of(minhash_template(p, config.seed, config.scheme)) for p in perms)
    excluded: list[ExcludedDocument] = []
    excluded_idx: set[int] = set()
    short: set[int] = set()
    for i in range(len(keys)):
        if cols.blank[i]:
            excluded.append(ExcludedDocument(keys[i], "empty", cols.n_chars[i], cols.n_shingles[i]))
            excluded_idx.add(i)
        elif cols.n_shingles[i] < config.min_shingles:
            excluded.append(ExcludedDocument(keys[i], "too_short", cols.n_chars[i], cols.n_shingles[i]))
            short.add(i)
            if config.short_docs == "exclude":
                excluded_idx.add(i)
    by_hash: dict[bytes, list[int]] = {}
    for i in range(len(keys)):
        if i not in excluded_idx:
            by_hash.setdefault(cols.digests[i], []).append(i)
    exact_groups = [g for g in by_hash.values() if len(g) >= 2]
    reps = sorted(g[0] for g in by_hash.values() if g[0] not in short)
    signatures = {}
    for p, sch in zip(perms, schemes):
        signatures[p] = (cols.signatures[p][np.asarray(reps, dtype=np.int64)], sch)
    return _Prepared(keys, None, list(cols.n_shingles), excluded, excluded_idx, exact_groups, reps, signatures)


def _cluster(prep: _Prepared, config: DedupConfig,
             jaccard: Callable[[int, int], float | None] | None = None) -> DedupResult:
    """Steps 5-7 (module docstring) on a prepared corpus; ``jaccard(i, j)`` gives the exact Jaccard of documents
    ``i`` and ``j`` for ``verify`` (default: from the normalized texts, which a sketch-prepared corpus lacks)."""
    import datasketch
    from datasketch import MinHashLSH
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from ingestaudit.stages.lsh_bands import band_candidates

    signatures, scheme = prep.signatures[config.num_perm]
    lsh = MinHashLSH(threshold=config.threshold, num_perm=config.num_perm, weights=config.weights)  # its (b, r)
    reps = np.asarray(prep.reps, dtype=np.int64)
    found = band_candidates(signatures, lsh.b, lsh.r)  # the pairs MinHashLSH.query returns, as row pairs
    pairs = [(int(reps[a]), int(reps[b])) for a, b in found]
    if jaccard is None and config.verify:
        assert prep.normalized is not None, "verify needs the texts or a jaccard function"
        norm = prep.normalized

        def jaccard(i: int, j: int) -> float | None:
            return exact_jaccard(_cached_shingles(norm[i], config.shingling, config.k),
                                 _cached_shingles(norm[j], config.shingling, config.k))
    candidates = []
    src: list[int] = []
    dst: list[int] = []
    for i, j in pairs:
        jac = jaccard(i, j) if config.verify else None  # type: ignore[misc]
        ok = (not config.verify) or (jac is not None and jac >= config.threshold)
        candidates.append(CandidatePair(prep.keys[i], prep.keys[j], jac, ok))
        if ok:
            src.append(i)
            dst.append(j)
    for g in prep.exact_groups:
        src.extend([g[0]] * (len(g) - 1))
        dst.extend(g[1:])
    n = len(prep.keys)
    graph = coo_matrix((np.ones(len(src), dtype=np.int8), (np.array(src, dtype=np.int64),
                                                            np.array(dst, dtype=np.int64))), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    renumber: dict[int, int] = {}
    cluster_of: dict[str, int | None] = {}
    members: dict[int, list[str]] = {}
    for i, key in enumerate(prep.keys):
        if i in prep.excluded_idx:
            cluster_of[key] = None
            continue
        cid = renumber.setdefault(int(labels[i]), len(renumber))
        cluster_of[key] = cid
        members.setdefault(cid, []).append(key)
    return DedupResult(
        config=config,
        keys=tuple(prep.keys),
        cluster_of=MappingProxyType(cluster_of),
        clusters=tuple(tuple(m) for m in members.values() if len(m) >= 2),
        excluded=tuple(prep.excluded),
        exact_groups=tuple(tuple(prep.keys[i] for i in g) for g in prep.exact_groups),
        candidates=tuple(candidates),
        b=lsh.b,
        r=lsh.r,
        n_shingles=MappingProxyType(dict(zip(prep.keys, prep.n_shingles))),
        scheme=scheme,
        datasketch_version=getattr(datasketch, "__version__", "unknown"),
        normalized_text=MappingProxyType(dict(zip(prep.keys, prep.normalized)) if prep.normalized is not None
                                         else {}),
    )


def deduplicate_sketches(keys: Sequence[str], sketches: Sequence[DocSketch] | SketchColumns, config: DedupConfig,
                         num_perms: Sequence[int] | None = None, thresholds: Sequence[float] | None = None, *,
                         jaccard: Callable[[int, int], float | None] | None = None
                         ) -> dict[tuple[int, float], DedupResult]:
    """`deduplicate_grid` from per-document sketches (`sketch`, computed where the documents are): the same
    results as the text path for the same documents, without their texts (``DedupResult.normalized_text`` is
    empty). ``jaccard(i, j)``: exact Jaccard of documents ``i`` and ``j`` (by position), needed with ``verify``.
    Default grid: the config's own ``num_perm`` and ``threshold``."""
    from dataclasses import replace

    perms = tuple(dict.fromkeys(num_perms or (config.num_perm,)))
    ths = tuple(thresholds or (config.threshold,))
    cells = {(p, t): replace(config, num_perm=p, threshold=t) for p in perms for t in ths}
    prep = prepare_sketches(keys, sketches, config, perms)
    return {cell: _cluster(prep, cfg, jaccard) for cell, cfg in cells.items()}


def deduplicate(docs: Mapping[str, str] | Iterable[tuple[str, str]],
                config: DedupConfig = DedupConfig(), *, workers: int = 1) -> DedupResult:
    """Run the detector on a corpus (see the module docstring for each step).

    Args:
        docs: ``{key: text}`` or an iterable of ``(key, text)`` pairs; keys must be unique.
        config: the detector's options.
        workers: processes for the per-document work (shingling and hashing, in chunks of 2,048 documents);
            1 runs everything in this process. The result does not depend on it.

    Returns:
        `DedupResult`. Deterministic: same documents in the same order and same config give the same result.
        Memory: the normalized texts, one ``num_perm``-value signature per document, and the shingle sets of at most
        2,048 documents at a time.

    Raises:
        DuplicateKeyError: a key appears twice (a ``ValueError``).
        TypeError: a key or text is not a ``str``.
    """
    return _cluster(_prepare(docs, config, (config.num_perm,), workers), config)


def deduplicate_grid(docs: Mapping[str, str] | Iterable[tuple[str, str]], config: DedupConfig,
                     num_perms: Sequence[int], thresholds: Sequence[float], *,
                     workers: int = 1) -> dict[tuple[int, float], DedupResult]:
    """Run the detector for every ``num_perm x threshold`` of a sweep, sharing the work that does not change.

    Normalization, shingling, exclusion and exact hashing run once, and each document's shingles are hashed once
    for every ``num_perm``; each grid cell builds its own LSH index. Other options come from ``config``;
    ``workers`` as in `deduplicate`.

    Returns:
        ``{(num_perm, threshold): DedupResult}`` in grid order; each equals ``deduplicate`` with that cell's config.

    Raises:
        What `deduplicate` and `DedupConfig` raise (a grid cell that ``MinHashLSH`` refuses raises ``ValueError``
        before any work is done).
    """
    from dataclasses import replace

    cells = {(p, t): replace(config, num_perm=p, threshold=t) for p in num_perms for t in thresholds}
    prep = _prepare(docs, config, tuple(dict.fromkeys(num_perms)), workers)
    return {cell: _cluster(prep, cfg) for cell, cfg in cells.items()}
