"""LSH banding of MinHash signatures in numpy: the candidate pairs ``datasketch.MinHashLSH`` returns, without its
per-document index objects.

``MinHashLSH(threshold, num_perm, weights)`` splits each signature into ``b`` bands of ``r`` consecutive values
(``hashvalues[i*r:(i+1)*r]``, the first ``b*r`` values; datasketch 1.5-2.x ``lsh.py``, ``hashranges``), keys one hash
table per band by the band's bytes, and ``query(m)`` returns every key that shares a bucket with ``m`` in some
band. Inserting every document and querying each gives the pairs of documents whose signatures agree on all ``r``
values of at least one band: `band_candidates` computes exactly that set with one sort per band (a test compares
it with MinHashLSH on random signatures). Memory is the signature matrix plus one band (``n x r`` values) at a
time, instead of datasketch's dictionaries (about 3 KB per document at 9 bands).
"""

from __future__ import annotations

import numpy as np


def band_candidates(signatures: np.ndarray, b: int, r: int) -> np.ndarray:
    """Row pairs ``(i, j)``, ``i < j``, whose signatures are equal on every value of at least one of the ``b`` bands
    of ``r`` values.

    Args:
        signatures: ``(n, num_perm)`` array with ``num_perm >= b*r`` (one row per document).
        b, r: bands and rows per band (``MinHashLSH.b`` and ``.r``).

    Returns:
        ``(m, 2)`` int64 array of the distinct pairs, sorted (by ``i``, then ``j``).

    Raises:
        ValueError: ``b*r`` exceeds the signature width, or ``b`` or ``r`` is below 1.
    """
    sig = np.asarray(signatures)
    n = sig.shape[0] if sig.ndim == 2 else 0
    if b < 1 or r < 1 or (sig.ndim == 2 and b * r > sig.shape[1]):
        raise ValueError(f"b={b}, r={r} do not fit signatures of shape {sig.shape}")
    codes: list[np.ndarray] = []
    for band in range(b):
        block = np.ascontiguousarray(sig[:, band * r:(band + 1) * r])
        keys = block.view(np.dtype((np.void, block.dtype.itemsize * r))).ravel()
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        if n < 2:
            continue
        same = ordered[1:] == ordered[:-1]
        if not same.any():
            continue
        starts = np.flatnonzero(np.concatenate(([True], ~same)))
        ends = np.append(starts[1:], n)
        for lo, hi in zip(starts[ends - starts >= 2], ends[ends - starts >= 2]):
            members = np.sort(order[lo:hi])
            i, j = np.triu_indices(len(members), 1)
            codes.append(members[i].astype(np.int64) * n + members[j])
    if not codes:
        return np.zeros((0, 2), dtype=np.int64)
    flat = np.unique(np.concatenate(codes))
    return np.stack([flat // n, flat % n], axis=1)
