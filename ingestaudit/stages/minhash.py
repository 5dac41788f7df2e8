"""Fast MinHash signatures for a whole corpus, identical to datasketch's.

`signature_matrix` computes, for many shingle sets at once, exactly the hash values that
``datasketch.MinHash(num_perm, seed, scheme, hashfunc).update(s)`` called once per shingle would hold, and
`fast_minhashes` wraps each row in a datasketch ``LeanMinHash`` (or ``MinHash``) usable with ``MinHashLSH``.

What is computed (datasketch 1.5-2.x, read from its ``minhash.py``; no code copied). For a set ``S`` of shingles,
``sig_k(S) = min_{s in S} π_k(H(s))`` for ``k = 1..num_perm`` where ``H`` is the hash function (default: the first
4 bytes of SHA-1, little-endian, as ``datasketch.hashfunc.sha1_hash32``; 8 bytes for ``affine64``) and ``π_k`` is:

- ``"affine32"`` / ``"affine64"`` (datasketch >= 2.0 default ``affine32``): ``π_k(h) = a_k·f(h) + b_k mod 2^w``
  with ``f`` the MurmurHash3 finalizer on ``w`` bits (Appleby, MurmurHash3, ``fmix32`` / ``fmix64``) and
  ``a_k`` odd;
- ``"legacy"`` (datasketch < 2.0): ``π_k(h) = ((a_k·h + b_k) mod 2^64 mod (2^61 - 1)) & (2^32 - 1)``.

``a_k, b_k`` are read from a datasketch ``MinHash`` built with the same ``num_perm``, ``seed`` and scheme, so the
permutations are datasketch's own. Speed comes from hashing every shingle with one ``hashlib`` call and no
per-shingle numpy work, a single template instead of one ``MinHash`` construction per document, and the
permutation and min-reduction done in numpy over blocks of many documents (``np.minimum.reduceat``). Each call
re-checks one small probe set against datasketch's own ``update_batch`` and raises if they ever disagree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Hashable, Sequence
from typing import Any

import numpy as np

_MERSENNE_61 = np.uint64((1 << 61) - 1)
_MASK_32 = np.uint64((1 << 32) - 1)
_SCHEMES = ("affine32", "affine64", "legacy")


def _fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3 32-bit finalizer (a bijection on uint32), element-wise; arithmetic wraps mod 2^32."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def _fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3 64-bit finalizer (a bijection on uint64), element-wise; arithmetic wraps mod 2^64."""
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


def minhash_template(num_perm: int = 128, seed: int = 1, scheme: str | None = None,
                     hashfunc: Callable[[Any], int] | None = None):
    """An empty ``datasketch.MinHash`` with these settings: the source of the permutations and of the empty state.

    Args:
        num_perm: number of permutations (>= 1).
        seed: datasketch's permutation seed.
        scheme: ``"affine32"``, ``"affine64"`` or ``"legacy"``; None = datasketch's default (``affine32`` from
            2.0, ``legacy`` before, where it is the only scheme).
        hashfunc: None = datasketch's default for the scheme (SHA-1 based).

    Raises:
        ValueError: an unknown scheme, or a non-legacy scheme with a datasketch older than 2.0.
    """
    from datasketch import MinHash

    if scheme is not None and scheme not in _SCHEMES:
        raise ValueError(f"scheme must be one of {_SCHEMES}, got {scheme!r}")
    kwargs: dict[str, Any] = {"num_perm": num_perm, "seed": seed}
    if hashfunc is not None:
        kwargs["hashfunc"] = hashfunc
    try:
        return MinHash(**kwargs, **({} if scheme is None else {"scheme": scheme}))
    except TypeError:  # datasketch < 2.0 has no scheme argument: legacy only
        if scheme not in (None, "legacy"):
            raise ValueError(f"scheme {scheme!r} needs datasketch >= 2.0") from None
        return MinHash(**kwargs)


def scheme_of(minhash) -> str:
    """The permutation scheme of a datasketch MinHash (``"legacy"`` for datasketch < 2.0, which has no attribute)."""
    return getattr(minhash, "scheme", "legacy")


def hash_shingles(shingles: Sequence[Hashable], hashfunc: Callable[[Any], int] | None = None,
                  scheme: str = "affine32") -> np.ndarray:
    """``H(s)`` for every shingle, as datasketch's ``hashfunc`` computes it, in one array.

    Args:
        shingles: shingles (``bytes`` for the default SHA-1 hash functions).
        hashfunc: None or ``datasketch.hashfunc.sha1_hash32`` / ``sha1_hash64`` use one ``hashlib.sha1`` call per
            shingle and read the digests with one ``numpy.frombuffer``; any other callable is called per shingle.
        scheme: decides the default hash width (64 bits for ``affine64``) and the dtype of the result.

    Returns:
        Array of shape ``(len(shingles),)``: uint32 for ``affine32``, uint64 otherwise.

    Raises:
        TypeError: a shingle is not bytes with a SHA-1 hash function.
        ValueError: a custom hash value does not fit the scheme's width.
    """
    from datasketch.hashfunc import sha1_hash32, sha1_hash64

    if hashfunc is None:
        hashfunc = sha1_hash64 if scheme == "affine64" else sha1_hash32
    dtype = np.uint32 if scheme == "affine32" else np.uint64
    n = len(shingles)
    if hashfunc is sha1_hash32 or hashfunc is sha1_hash64:
        sha1 = hashlib.sha1
        raw = np.frombuffer(b"".join([sha1(s).digest() for s in shingles]), dtype=np.uint8).reshape(n, 20)
        if hashfunc is sha1_hash32:
            return np.ascontiguousarray(raw[:, :4]).view("<u4").ravel().astype(dtype)
        return np.ascontiguousarray(raw[:, :8]).view("<u8").ravel().astype(dtype)
    values = [hashfunc(s) for s in shingles]
    try:
        return np.array(values, dtype=dtype).reshape(n)
    except OverflowError as err:
        raise ValueError(f"hashfunc returned a value out of range for scheme {scheme!r}: {err}") from err


def _permute_min(h: np.ndarray, starts: np.ndarray, a: np.ndarray, b: np.ndarray, scheme: str) -> np.ndarray:
    """Row-segment minima of ``π_k(h)``: ``out[d, k] = min over rows of segment d of π_k(h[row])``.

    ``h`` is already pre-mixed (``f(h)``) for the affine schemes. ``starts`` are the first rows of the (non-empty)
    segments, increasing.
    """
    if scheme == "legacy":
        phv = np.multiply.outer(h, a)
        phv += b
        phv %= _MERSENNE_61
        phv &= _MASK_32
    else:
        phv = np.multiply.outer(h, a)
        phv += b
    return np.minimum.reduceat(phv, starts, axis=0)


def _signatures(shingle_sets: Sequence[Collection[Hashable]], template, hashfunc, block_rows: int) -> np.ndarray:
    scheme = scheme_of(template)
    a, b = (np.asarray(x) for x in template.permutations)
    empty = np.asarray(template.hashvalues)
    n_docs = len(shingle_sets)
    out = np.empty((n_docs, len(empty)), dtype=empty.dtype)
    out[:] = empty
    lengths = np.fromiter((len(s) for s in shingle_sets), dtype=np.int64, count=n_docs)
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    doc = 0
    while doc < n_docs:
        first = doc
        rows = 0
        while doc < n_docs and (rows == 0 or rows + lengths[doc] <= block_rows):
            rows += int(lengths[doc])
            doc += 1
        if rows == 0:
            continue
        flat = [s for d in range(first, doc) for s in shingle_sets[d]]
        h = hash_shingles(flat, hashfunc, scheme)
        if scheme == "affine32":
            h = _fmix32(h)
        elif scheme == "affine64":
            h = _fmix64(h)
        nonempty = np.flatnonzero(lengths[first:doc] > 0)
        local = offsets[first:doc] - offsets[first]
        if len(nonempty) == 1 and rows > block_rows:  # one large document: reduce in pieces
            piece_mins = [_permute_min(h[i:i + block_rows], np.zeros(1, dtype=np.int64), a, b, scheme)[0]
                          for i in range(0, rows, block_rows)]
            out[first + nonempty[0]] = np.minimum.reduce(piece_mins)
        else:
            out[first + nonempty] = _permute_min(h, local[nonempty], a, b, scheme)
    return out


def _probe_check(shingle_sets: Sequence[Collection[Hashable]], template, hashfunc) -> None:
    """Compare one small probe set with datasketch's own ``update_batch``; raise if they differ."""
    probe = next((list(s)[:8] for s in shingle_sets if len(s)), None)
    if probe is None:
        return
    reference = template.copy()
    reference.update_batch(probe)
    mine = _signatures([probe], template, hashfunc, 64)[0]
    if not np.array_equal(mine, np.asarray(reference.hashvalues)):
        import datasketch

        raise RuntimeError(f"fast MinHash signatures differ from datasketch {getattr(datasketch, '__version__', '?')}"
                           f" (scheme {scheme_of(template)!r}); use datasketch's MinHash.update_batch instead")


def signature_matrix(shingle_sets: Sequence[Collection[Hashable]], *, num_perm: int = 128, seed: int = 1,
                     scheme: str | None = None, hashfunc: Callable[[Any], int] | None = None,
                     block_rows: int = 1024) -> np.ndarray:
    """MinHash signatures of many shingle sets, identical to datasketch's ``MinHash.update`` loop.

    ``sig[d, k] = min_{s in S_d} π_k(H(s))`` (symbols in the module docstring); an empty set gets datasketch's
    empty state (every value at the scheme's maximum, the same for all empty sets, so two empty sets "match").
    Repeated shingles in one set do not change the result (min is idempotent).

    Args:
        shingle_sets: one collection of shingles per document (``bytes`` for the default hash function).
        num_perm, seed, scheme, hashfunc: as in ``datasketch.MinHash`` (see `minhash_template`).
        block_rows: shingles per numpy block (memory ~ ``block_rows · num_perm · 8`` bytes; one larger document is
            split into blocks of this size).

    Returns:
        Array of shape ``(len(shingle_sets), num_perm)``, dtype uint32 (``affine32``) or uint64 (other schemes),
        equal to ``MinHash.hashvalues`` of each document.

    Raises:
        ValueError: bad scheme or hash values out of range; ``block_rows < 1``.
        TypeError: non-bytes shingles with the SHA-1 hash functions.
        RuntimeError: the probe check against datasketch failed (an incompatible datasketch release).
    """
    if block_rows < 1:
        raise ValueError("block_rows must be >= 1")
    template = minhash_template(num_perm, seed, scheme, hashfunc)
    _probe_check(shingle_sets, template, hashfunc)
    return _signatures(shingle_sets, template, hashfunc, block_rows)


def minhashes_from_signatures(signatures: np.ndarray, *, seed: int = 1, scheme: str | None = None,
                              lean: bool = True, hashfunc: Callable[[Any], int] | None = None) -> list:
    """Wrap rows of `signature_matrix` in datasketch objects usable with ``MinHashLSH``.

    Args:
        signatures: ``(n_docs, num_perm)`` array from `signature_matrix` with the same ``seed`` and ``scheme``.
        lean: True for ``LeanMinHash`` (no permutations stored, cannot be updated), False for ``MinHash``
            (sharing one permutation array).
        hashfunc: the hash function the ``MinHash`` objects keep for later updates (ignored when ``lean``).

    Returns:
        A list of ``n_docs`` datasketch objects; ``obj.hashvalues`` equals the row.
    """
    from datasketch import LeanMinHash, MinHash

    template = minhash_template(signatures.shape[1], seed, scheme, hashfunc)
    sch = scheme_of(template)
    has_scheme = hasattr(template, "scheme")
    extra = {"scheme": sch} if has_scheme else {}
    if lean:
        return [LeanMinHash(seed=seed, hashvalues=row, **extra) for row in signatures]
    perms = template.permutations
    return [MinHash(seed=seed, hashvalues=row, permutations=perms, hashfunc=template.hashfunc, **extra)
            for row in signatures]


def fast_minhashes(shingle_sets: Sequence[Collection[Hashable]], *, num_perm: int = 128, seed: int = 1,
                   scheme: str | None = None, hashfunc: Callable[[Any], int] | None = None,
                   lean: bool = True, block_rows: int = 1024) -> list:
    """`signature_matrix` then `minhashes_from_signatures`: one datasketch (Lean)MinHash per shingle set.

    ``fast_minhashes(sets)[d] == LeanMinHash(m_d)`` where ``m_d = MinHash(num_perm, seed)`` updated with every
    shingle of ``sets[d]``. Raises what `signature_matrix` raises.
    """
    template = minhash_template(num_perm, seed, scheme, hashfunc)
    sig = signature_matrix(shingle_sets, num_perm=num_perm, seed=seed, scheme=scheme, hashfunc=hashfunc,
                           block_rows=block_rows)
    return minhashes_from_signatures(sig, seed=seed, scheme=scheme_of(template), lean=lean, hashfunc=hashfunc)


_TEMPLATES: dict[tuple[int, int, str | None], Any] = {}  # per process: (num_perm, seed, scheme) -> checked template


def signature_rows(shingle_sets: Sequence[Collection[Hashable]], *, num_perm: int = 128, seed: int = 1,
                   scheme: str | None = None) -> np.ndarray:
    """`signature_matrix` with datasketch's default hash function, for a few documents at a time (one per task
    of a run): the template is built, and checked against datasketch's own ``update_batch`` on a probe set, once
    per process and setting instead of once per call. Same values as `signature_matrix`."""
    key = (num_perm, seed, scheme)
    template = _TEMPLATES.get(key)
    if template is None:
        template = minhash_template(num_perm, seed, scheme)
        probe = [f"probe shingle {i}".encode() for i in range(8)]
        _probe_check([probe], template, None)
        _TEMPLATES[key] = template
    return _signatures(shingle_sets, template, None, 1024)


def sha1_prefix64(shingles: Sequence[bytes]) -> np.ndarray:
    """The first 8 bytes of each shingle's SHA-1 as a little-endian uint64: datasketch's ``sha1_hash64``; its low
    32 bits are ``sha1_hash32``. One digest per shingle serves the signatures of every scheme and the exact-Jaccard
    hashes."""
    n = len(shingles)
    if not n:
        return np.zeros(0, dtype=np.uint64)
    sha1 = hashlib.sha1
    raw = np.frombuffer(b"".join([sha1(s).digest() for s in shingles]), dtype=np.uint8).reshape(n, 20)
    return np.ascontiguousarray(raw[:, :8]).view("<u8").ravel()


def signature_of_hashes(h64: np.ndarray, *, num_perm: int = 128, seed: int = 1, scheme: str | None = None,
                        block_rows: int = 1024) -> np.ndarray:
    """The MinHash signature of one shingle set from its `sha1_prefix64` hashes (datasketch's default hash
    function): the same values as `signature_matrix` of the set (checked once per process and setting against
    datasketch's own ``update_batch``, as `signature_rows`). An empty set gets the empty state."""
    key = (num_perm, seed, scheme)
    template = _TEMPLATES.get(key)
    if template is None:
        signature_rows([[b"probe"]], num_perm=num_perm, seed=seed, scheme=scheme)  # builds and checks it
        template = _TEMPLATES[key]
    sch = scheme_of(template)
    a, b = (np.asarray(x) for x in template.permutations)
    empty = np.asarray(template.hashvalues)
    if not len(h64):
        return empty.copy()
    if sch == "affine32":
        h = _fmix32((h64 & np.uint64(0xFFFFFFFF)).astype(np.uint32))
    elif sch == "affine64":
        h = _fmix64(h64.astype(np.uint64))
    else:  # legacy: sha1_hash32 values in uint64 arithmetic
        h = (h64 & np.uint64(0xFFFFFFFF)).astype(np.uint64)
    start = np.zeros(1, dtype=np.int64)
    mins = [_permute_min(h[i:i + block_rows], start, a, b, sch)[0] for i in range(0, len(h), block_rows)]
    return np.minimum.reduce(mins).astype(empty.dtype) if len(mins) > 1 else mins[0].astype(empty.dtype)
