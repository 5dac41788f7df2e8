"""Exact ordered-tree edit distance (Zhang-Shasha), vectorised with numpy and interruptible by a deadline.

Definition (Zhang and Shasha, "Simple fast algorithms for the editing distance between trees and related
problems", SIAM J. Comput. 18(6), 1989; the same quantity APTED computes, Pawlik and Augsten, Inf. Syst. 56, 2016):

    TED(T1, T2) = min over edit scripts of  sum of costs,   del(v) = ins(w) = 1,   ren(v, w) = R[v, w] in [0, 1],

where a script deletes nodes of T1 (children move up to the parent), inserts nodes of T2 and renames mapped nodes;
equivalently the minimum over ordered mappings M (one-to-one, ancestor- and sibling-order-preserving) of
|T1| + |T2| - 2|M| + sum_{(v,w) in M} R[v, w]. Unit of the result: edit operations (a float, since renames cost
fractions).

Algorithm. Nodes are in postorder, ``l(i)`` is the leftmost leaf under ``i`` and the keyroots are the root and every
node with a left sibling. Zhang-Shasha fills, for every keyroot pair (k1, k2), the forest-distance table

    fd[i][j] = min( fd[i-1][j] + 1,  fd[i][j-1] + 1,
                    fd[i-1][j-1] + R[i, j]                 if l(i) = l(k1) and l(j) = l(k2)  (then td[i][j] = fd[i][j])
                    fd[l(i)-1][l(j)-1] + td[i][j]          otherwise )

Here the pairs are grouped by keyroot *level* (0 for a keyroot with no other keyroot below it, else one more than
the deepest level below). A pair only reads tree distances of pairs with a smaller level in T1, or the same level in
T1 and a smaller level in T2, so all pairs of one (level1, level2) group are independent and run as one batch of
numpy arrays, one row at a time. Each batch runs along whichever tree has the smaller subtrees there (the
recurrence is symmetric in the two trees because insertions and deletions both cost 1). Inside a row the
recurrence along the columns has unit insertion cost, so ``fd[i][j] = min_{j' <= j} (a[j'] + j - j')`` is a
running minimum (``np.minimum.accumulate`` on ``fd[i][j] - j``). Everything a row reads from earlier batches is
gathered once per batch. A table tree has about four levels, so a pair of 450-node tables takes about 1,800
numpy row steps instead of ~10^6 Python steps.

Exactness: the result is the exact optimum, as Zhang-Shasha is exact; it differs from other exact algorithms only
by floating-point summation order (~1e-15). It is tested against the textbook forest recursion with fractional
costs on every node pair. Note: apted 1.0.3 (the Python APTED used by PubTabNet's reference) returns non-optimal
(larger) distances on some random trees whose *internal* nodes have fractional rename costs (13 of 400 random pairs
of <= 25 nodes in our check); with fractional costs only between leaves, the TEDS cost model (td cells are leaves),
it agreed on all 1,500 pairs tried, and on every table pair tested.

Memory: two float64 matrices of |T1| x |T2| (rename costs and tree distances) plus one batch buffer of about
24 bytes per cell, at most ~max(``_BATCH_CELLS``, 2 (|T1| + 1)(|T2| + 1)) cells (groups are split to stay under
``_BATCH_CELLS`` unless a single keyroot's pairs are larger).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_BATCH_CELLS = 2_000_000  # cells per batch: ~24 bytes each (fd, gathered costs, source indices)
_SMALL_BATCH = 20_000  # below this many padded cells a batch is merged regardless of size spread


class DeadlineExceeded(Exception):
    """Raised inside `tree_edit_distance` when ``time.perf_counter()`` reaches the deadline."""


@dataclass(frozen=True)
class PostorderTree:
    """Shape of an ordered tree in postorder, as `tree_edit_distance` needs it.

    Attributes:
        leftmost: int64 array, ``leftmost[i]`` = postorder index of the leftmost leaf under node ``i``
            (the subtree of ``i`` is the index range ``leftmost[i] .. i``).
        keyroots: int64 array of keyroot indices (root and nodes with a left sibling), ascending.
        levels: int64 array, keyroot level of each entry of ``keyroots``.
    """

    leftmost: np.ndarray
    keyroots: np.ndarray
    levels: np.ndarray

    @property
    def size(self) -> int:
        """Number of nodes."""
        return int(self.leftmost.shape[0])

    @classmethod
    def from_parents(cls, parents: Sequence[int]) -> PostorderTree:
        """Build from postorder parent indices (``-1`` for the root, which must be last).

        Raises:
            ValueError: empty tree, or indices that are not a postorder (a parent before its child).
        """
        n = len(parents)
        if n == 0:
            raise ValueError("empty tree")
        leftmost = np.full(n, -1, dtype=np.int64)
        is_key = np.zeros(n, dtype=bool)
        inner = np.full(n, -1, dtype=np.int64)  # max keyroot level strictly below each node
        level = np.full(n, -1, dtype=np.int64)
        for i in range(n):
            if leftmost[i] < 0:
                leftmost[i] = i  # a leaf (no child seen before it)
            p = parents[i]
            if p < 0:
                if i != n - 1:
                    raise ValueError("the root must be the last node in postorder")
                is_key[i] = True
            else:
                if p <= i or p >= n:
                    raise ValueError(f"node {i} has parent {p}: not a postorder of {n} nodes")
                if leftmost[p] < 0:
                    leftmost[p] = leftmost[i]  # first child visited is the leftmost child
                else:
                    is_key[i] = True  # has a left sibling
            sub_max = inner[i]
            if is_key[i]:
                level[i] = inner[i] + 1
                sub_max = max(sub_max, level[i])
            if p >= 0 and sub_max > inner[p]:
                inner[p] = sub_max
        keyroots = np.flatnonzero(is_key).astype(np.int64)
        return cls(leftmost=leftmost, keyroots=keyroots, levels=level[keyroots])

def _groups(keyroots: np.ndarray, sizes: np.ndarray, other_cells: int) -> list[np.ndarray]:
    """Split keyroots of one level into batches: similar sizes (padding waste at most ~2x) unless the padded
    batch is small anyway (< `_SMALL_BATCH` cells, where numpy call overhead dominates), and never over
    `_BATCH_CELLS` cells. ``other_cells`` is the padded cell count per keyroot on the other side."""
    order = np.argsort(-sizes, kind="stable")
    ordered = sizes[order].tolist()
    out: list[np.ndarray] = []
    start = 0
    while start < len(order):
        top = ordered[start]
        per_key = (top + 1) * max(other_cells, 1)
        cap = max(1, _BATCH_CELLS // per_key)
        stop = start + 1
        while stop < len(order) and stop - start < cap and (
            2 * ordered[stop] + 8 >= top or (stop - start + 1) * per_key <= _SMALL_BATCH
        ):
            stop += 1
        out.append(keyroots[order[start:stop]])
        start = stop
    return out


def tree_edit_distance(
    t1: PostorderTree,
    t2: PostorderTree,
    rename: np.ndarray,
    deadline: float | None = None,
) -> float:
    """Tree edit distance with unit insert/delete costs and the rename cost matrix ``rename``.

    Args:
        t1, t2: the trees (see `PostorderTree`).
        rename: float64 array of shape (t1.size, t2.size), ``rename[i, j]`` = cost of mapping node i to node j,
            in [0, 1] for the TEDS cost model (any non-negative values are accepted).
        deadline: a ``time.perf_counter()`` value; checked before each row of each batch.

    Returns:
        TED(t1, t2) >= 0, in edit operations.

    Raises:
        DeadlineExceeded: the deadline passed (the computation is abandoned; nothing is left running).
        ValueError: ``rename`` has the wrong shape.
    """
    n1, n2 = t1.size, t2.size
    if rename.shape != (n1, n2):
        raise ValueError(f"rename matrix has shape {rename.shape}, expected {(n1, n2)}")
    rename = np.ascontiguousarray(rename, dtype=np.float64)
    td = np.zeros((n1, n2), dtype=np.float64)
    rename_t, td_t = rename.T, td.T  # views: a batch may run with T2 along the rows
    l1, l2 = t1.leftmost, t2.leftmost
    k1_all, k2_all = t1.keyroots, t2.keyroots
    size1 = k1_all - l1[k1_all] + 1
    size2 = k2_all - l2[k2_all] + 1
    for lev1 in range(int(t1.levels.max()) + 1):
        sel1 = t1.levels == lev1
        for lev2 in range(int(t2.levels.max()) + 1):
            sel2 = t2.levels == lev2
            if not sel1.any() or not sel2.any():
                continue
            for g2 in _groups(k2_all[sel2], size2[sel2], 1):
                n_max = int((g2 - l2[g2]).max()) + 1
                for g1 in _groups(k1_all[sel1], size1[sel1], (n_max + 1) * len(g2)):
                    m_max = int((g1 - l1[g1]).max()) + 1
                    # Rows are the sequential part: run along the tree whose subtrees are smaller here.
                    if m_max <= n_max:
                        _batch(g1, g2, l1, l2, rename, td, deadline)
                    else:
                        _batch(g2, g1, l2, l1, rename_t, td_t, deadline)
    return float(td[n1 - 1, n2 - 1])


def _batch(
    k1s: np.ndarray,
    k2s: np.ndarray,
    l1: np.ndarray,
    l2: np.ndarray,
    rename: np.ndarray,
    td: np.ndarray,
    deadline: float | None,
) -> None:
    """Forest-distance tables of every pair in k1s x k2s, written into ``td`` (see module docstring).

    All pairs are padded to the largest subtree sizes M x N; padding rows/columns read valid (clipped) nodes and
    are never stored. Everything that does not depend on the table being filled (node indices, the rename or
    earlier tree distance to add, the flat position of the fd cell to add it to) is gathered before the row loop,
    so each row costs a handful of numpy calls.
    """
    n1, n2 = td.shape
    a1 = l1[k1s]
    b2 = l2[k2s]
    count1, count2 = len(k1s), len(k2s)
    a = np.repeat(a1, count2)  # per pair: first (leftmost) node of the T1 subtree
    b = np.tile(b2, count1)
    m = np.repeat(k1s - a1 + 1, count2)  # subtree sizes per pair
    n = np.tile(k2s - b2 + 1, count1)
    pairs = a.shape[0]
    big_m, big_n = int(m.max()), int(n.max())
    width = big_n + 1
    plane = (big_m + 1) * width

    i = np.minimum(a[:, None] + np.arange(big_m), n1 - 1)  # (P, M): T1 node of row r = 1..M
    j = np.minimum(b[:, None] + np.arange(big_n), n2 - 1)  # (P, N): T2 node of column c = 1..N
    li, lj = l1[i], l2[j]
    row_path = li == a[:, None]
    col_path = lj == b[:, None]
    both = row_path[:, :, None] & col_path[:, None, :]  # (P, M, N): td[i][j] is computed here
    pair_base = (np.arange(pairs, dtype=np.int64) * plane)[:, None, None]
    rows_before = np.arange(big_m, dtype=np.int64)[None, :, None]  # r - 1
    cols_before = np.arange(big_n, dtype=np.int64)[None, None, :]  # c - 1
    row_fd = np.maximum(li - a[:, None], 0)[:, :, None]  # local row of l(i) - 1 (clamped for padding)
    col_fd = np.maximum(lj - b[:, None], 0)[:, None, :]
    # fd is stored shifted, g[p, r, c] = fd[p, r, c] - c, which turns the row recurrence into a plain running
    # minimum; the column shift of each read is folded into the precomputed addend.
    source_col = np.where(both, cols_before, col_fd)
    source = pair_base + np.where(both, rows_before, row_fd) * width + source_col
    ii, jj = i[:, :, None], j[:, None, :]
    add = np.where(both, rename[ii, jj], td[ii, jj]) + (source_col - (cols_before + 1))
    del row_fd, col_fd, rows_before, cols_before, source_col

    g = np.empty((pairs, big_m + 1, width), dtype=np.float64)
    flat = g.reshape(-1)
    g[:, 0, :] = 0.0  # fd[0][c] = c insertions
    for r in range(1, big_m + 1):
        if deadline is not None and time.perf_counter() >= deadline:
            raise DeadlineExceeded
        row = g[:, r, :]
        cells = row[:, 1:]
        np.add(flat.take(source[:, r - 1, :]), add[:, r - 1, :], out=cells)
        np.minimum(cells, g[:, r - 1, 1:] + 1.0, out=cells)
        row[:, 0] = r
        np.minimum.accumulate(row, axis=1, out=row)
    in_rows = np.arange(big_m)[None, :, None] < m[:, None, None]
    in_cols = np.arange(big_n)[None, None, :] < n[:, None, None]
    store = both & in_rows & in_cols
    p, r0, c0 = np.nonzero(store)
    td[i[p, r0], j[p, c0]] = g[p, r0 + 1, c0 + 1] + (c0 + 1)
