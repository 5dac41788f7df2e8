"""Near-duplicate detection scored against labelled duplicate groups: pairwise, B-cubed and adjusted Rand.

Both sides are *partitions* of the same items (documents), given as a mapping ``item -> group`` where ``None`` means
"in no group" (a singleton). Gold groups come from the ``dup_group`` labels; predicted groups are the detector's
clusters. Everything is computed once by `cluster_agreement` from the contingency table of the two partitions,
``n_gc = |{items in gold group g and predicted cluster c}|``, with gold sizes ``a_g = Σ_c n_gc`` and predicted sizes
``b_c = Σ_g n_gc``. The rates are thin wrappers over that one frozen result, and each keeps its numerator and
denominator (DESIGN.md, "Documents are the sampling unit").

Pair counts (Manning, Raghavan & Schütze 2008, *Introduction to Information Retrieval*, §16.3, "pairwise" view):

- gold pairs ``G = Σ_g C(a_g, 2)``; predicted pairs ``P = Σ_c C(b_c, 2)``; true pairs ``T = Σ_gc C(n_gc, 2)``
  (predicted pairs that are also gold pairs). ``C(x, 2) = x(x-1)/2``.
- false merges ``P - T`` (predicted duplicate pairs that are not gold duplicates);
  missed merges ``G - T`` (gold duplicate pairs that were not predicted).

Undefined values are ``None`` with a state and a reason, never 0, NaN or infinity.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from ingestaudit.measurement import State
from ingestaudit.metrics.rates import Rate

Partition = Mapping[Hashable, Hashable | None]
"""``item -> group`` (gold) or ``item -> cluster id`` (predicted); ``None`` = a singleton."""


def rate_of(numerator: float | Fraction, denominator: float | Fraction, *, if_zero: State, reason: str) -> Rate:
    """A `Rate` with the dedup conventions: ``numerator / denominator`` (exact for Fractions), both terms stored as
    floats, the state a `State` (``State.OK``, or ``if_zero`` with ``reason`` for a zero denominator).

    The terms are integer pair counts for the pairwise rates, sums of per-item fractions over an item count for
    B-cubed, and ``index - expected`` over ``max - expected`` for the adjusted Rand index.
    """
    return Rate.of(numerator, denominator, if_zero=if_zero, reason=reason, ok=State.OK, as_float=True)


def _pairs(x: int) -> int:
    """``C(x, 2) = x(x-1)/2``: the number of unordered pairs among ``x`` items."""
    return x * (x - 1) // 2


class _Singleton:
    """A label that equals nothing but itself: stands for ``None`` (each unlabelled item is its own group)."""

    __slots__ = ()


def _labels(partition: Partition) -> dict[Hashable, Hashable]:
    return {item: (_Singleton() if group is None else ("g", group)) for item, group in partition.items()}


@dataclass(frozen=True)
class ClusterAgreement:
    """Raw counts comparing a predicted partition with a gold partition of the same ``n_items`` items.

    Attributes:
        n_items: number of items (documents) in both partitions.
        gold_pairs: ``G = Σ_g C(a_g, 2)``, unordered item pairs in a common gold group.
        predicted_pairs: ``P = Σ_c C(b_c, 2)``, unordered item pairs in a common predicted cluster.
        true_pairs: ``T = Σ_gc C(n_gc, 2)``, pairs both predicted and gold.
        bcubed_precision_sum: ``Σ_i |C(i) ∩ G(i)| / |C(i)|`` over items ``i``, exact (``C(i)``: the predicted cluster
            of ``i``, ``G(i)``: its gold group; a singleton counts as a cluster of one).
        bcubed_recall_sum: ``Σ_i |C(i) ∩ G(i)| / |G(i)|``, exact.
        largest_predicted_cluster: size of the largest predicted cluster (1 when nothing merged, 0 with no items).
        merged_clusters: number of predicted clusters with 2 or more items.
        largest_gold_group: size of the largest gold group (1 when no gold duplicates, 0 with no items).
    """

    n_items: int
    gold_pairs: int
    predicted_pairs: int
    true_pairs: int
    bcubed_precision_sum: Fraction
    bcubed_recall_sum: Fraction
    largest_predicted_cluster: int
    merged_clusters: int
    largest_gold_group: int

    @property
    def false_merges(self) -> int:
        """``P - T``: predicted duplicate pairs that are not gold duplicates."""
        return self.predicted_pairs - self.true_pairs

    @property
    def missed_merges(self) -> int:
        """``G - T``: gold duplicate pairs that were not predicted."""
        return self.gold_pairs - self.true_pairs

    @property
    def all_pairs(self) -> int:
        """``C(n, 2)``: every unordered pair of items."""
        return _pairs(self.n_items)


def cluster_agreement(gold: Partition, predicted: Partition) -> ClusterAgreement:
    """Compare two partitions of the same items once; every `dedup` rate is a thin wrapper over the result.

    Args:
        gold: ``item -> gold group`` for every item; ``None`` = the item is in no group (it is unique).
        predicted: ``item -> predicted cluster id`` for the same items; ``None`` = not merged with anything
            (for example a document excluded from deduplication).

    Returns:
        `ClusterAgreement`, computed from the contingency table in O(n) time and memory.

    Raises:
        ValueError: the two mappings do not hold the same items (the message names a few of the differences).
    """
    if gold.keys() != predicted.keys():
        only_gold = [k for k in gold if k not in predicted][:5]
        only_pred = [k for k in predicted if k not in gold][:5]
        raise ValueError(f"gold and predicted partitions differ in items: only in gold {only_gold!r}, "
                         f"only in predicted {only_pred!r}")
    g_of = _labels(gold)
    c_of = _labels(predicted)
    cells = Counter((g_of[i], c_of[i]) for i in g_of)
    a = Counter(g_of.values())
    b = Counter(c_of.values())
    p_sum = sum((Fraction(n * n, b[c]) for (_, c), n in cells.items()), Fraction(0))
    r_sum = sum((Fraction(n * n, a[g]) for (g, _), n in cells.items()), Fraction(0))
    return ClusterAgreement(
        n_items=len(g_of),
        gold_pairs=sum(_pairs(x) for x in a.values()),
        predicted_pairs=sum(_pairs(x) for x in b.values()),
        true_pairs=sum(_pairs(x) for x in cells.values()),
        bcubed_precision_sum=p_sum,
        bcubed_recall_sum=r_sum,
        largest_predicted_cluster=max(b.values(), default=0),
        merged_clusters=sum(1 for x in b.values() if x >= 2),
        largest_gold_group=max(a.values(), default=0),
    )


_NO_PRED = "no predicted duplicate pairs: the share of predicted pairs is 0/0"
_NO_GOLD = "no gold duplicate pairs: the share of gold pairs is 0/0"


def pairwise_precision(c: ClusterAgreement) -> Rate:
    """Pairwise precision ``T / P``: share of predicted duplicate pairs that are gold duplicates. Range [0, 1].

    Undefined (``None``, ``NO_PREDICTION``) when nothing was merged (``P = 0``).
    """
    return rate_of(c.true_pairs, c.predicted_pairs, if_zero=State.NO_PREDICTION, reason=_NO_PRED)


def pairwise_recall(c: ClusterAgreement) -> Rate:
    """Pairwise recall ``T / G``: share of gold duplicate pairs that were predicted. Range [0, 1].

    Undefined (``None``, ``NO_REFERENCE``) when the gold labels hold no duplicate pair (``G = 0``).
    """
    return rate_of(c.true_pairs, c.gold_pairs, if_zero=State.NO_REFERENCE, reason=_NO_GOLD)


def pairwise_f1(c: ClusterAgreement) -> Rate:
    """Pairwise F1 ``2T / (P + G)`` (the harmonic mean of pairwise precision and recall, written with counts). [0, 1].

    With the count form it is defined whenever ``P + G > 0``: it is 0 when pairs exist on one side only. Undefined
    (``None``, ``NO_REFERENCE``) when there are neither predicted nor gold pairs.
    """
    return rate_of(2 * c.true_pairs, c.predicted_pairs + c.gold_pairs, if_zero=State.NO_REFERENCE,
                   reason="no predicted and no gold duplicate pairs: F1 = 0/0")


def false_merge_rate(c: ClusterAgreement) -> Rate:
    """``dedup.false_merge_rate = (P - T) / P``: share of predicted duplicate pairs that are not gold duplicates.

    Equals ``1 - pairwise precision``. Range [0, 1], lower is better. Undefined (``None``, ``NO_PREDICTION``, never 0)
    when the detector merged nothing (``P = 0``): a detector that merges nothing has no false merges to rate.
    """
    return rate_of(c.false_merges, c.predicted_pairs, if_zero=State.NO_PREDICTION, reason=_NO_PRED)


def missed_merge_rate(c: ClusterAgreement) -> Rate:
    """``dedup.missed_merge_rate = (G - T) / G``: share of gold duplicate pairs that were not predicted.

    Equals ``1 - pairwise recall``. Range [0, 1], lower is better. Undefined (``None``, ``NO_REFERENCE``) when the gold
    labels hold no duplicate pair (``G = 0``).
    """
    return rate_of(c.missed_merges, c.gold_pairs, if_zero=State.NO_REFERENCE, reason=_NO_GOLD)


def bcubed_precision(c: ClusterAgreement) -> Rate:
    """B-cubed precision ``(1/n) Σ_i |C(i) ∩ G(i)| / |C(i)|`` with equal weight per item. Range (0, 1].

    ``C(i)`` is the predicted cluster holding item ``i`` and ``G(i)`` its gold group (a singleton when unlabelled or
    unmerged). Definition: Bagga & Baldwin (1998), "Entity-based cross-document coreferencing using the vector space
    model", COLING-ACL, with the uniform item weights used by Amigó, Gonzalo, Artiles & Verdejo (2009), "A comparison
    of extrinsic clustering evaluation metrics based on formal constraints", Information Retrieval 12(4):461-486.
    Numerator: the sum of per-item precisions; denominator: ``n``. Undefined (``NO_REFERENCE``) with no items.
    """
    return rate_of(c.bcubed_precision_sum, c.n_items, if_zero=State.NO_REFERENCE, reason="no items")


def bcubed_recall(c: ClusterAgreement) -> Rate:
    """B-cubed recall ``(1/n) Σ_i |C(i) ∩ G(i)| / |G(i)|`` (symbols and sources as in `bcubed_precision`). (0, 1].

    Undefined (``NO_REFERENCE``) with no items.
    """
    return rate_of(c.bcubed_recall_sum, c.n_items, if_zero=State.NO_REFERENCE, reason="no items")


def adjusted_rand_index(c: ClusterAgreement) -> Rate:
    """Adjusted Rand index of Hubert & Arabie (1985), "Comparing partitions", J. Classification 2:193-218.

    ``ARI = (T - E) / (M - E)`` with ``E = G·P / C(n, 2)`` (expected ``T`` under random labelling with fixed cluster
    sizes) and ``M = (G + P) / 2``. Range [-1, 1] (0 = chance, 1 = identical partitions); the same value as
    ``sklearn.metrics.adjusted_rand_score``. Numerator ``T - E`` and denominator ``M - E`` are kept as floats.

    ``M - E = 0`` only when both partitions are all singletons or both are a single cluster (or ``n < 2``): ARI is
    then 0/0, returned as ``None`` with state ``NO_REFERENCE`` (scikit-learn returns 1.0 there by convention).
    """
    total = c.all_pairs
    if total == 0:
        return Rate(value=None, numerator=0.0, denominator=0.0, state=State.NO_REFERENCE,
                    reason="fewer than 2 items: ARI is 0/0")
    expected = Fraction(c.gold_pairs * c.predicted_pairs, total)
    maximum = Fraction(c.gold_pairs + c.predicted_pairs, 2)
    return rate_of(c.true_pairs - expected, maximum - expected, if_zero=State.NO_REFERENCE,
                   reason="both partitions are trivial (all singletons, or one cluster): ARI is 0/0 "
                          "(scikit-learn returns 1.0 by convention)")


def partition_from_clusters(clusters: Iterable[Iterable[Hashable]], items: Iterable[Hashable]) -> dict:
    """Build a partition ``item -> cluster index`` from a list of clusters; items in no cluster map to ``None``.

    Args:
        clusters: groups of items, e.g. ``[{"a", "b"}, {"c", "d", "e"}]``; cluster ``k`` gets id ``k``.
        items: every item of the corpus (defines the order of the returned mapping).

    Raises:
        ValueError: an item appears in two clusters, or a cluster holds an item not in ``items``.
    """
    out: dict = dict.fromkeys(items)
    seen: set = set()
    for k, cluster in enumerate(clusters):
        for item in cluster:
            if item in seen:
                raise ValueError(f"item {item!r} appears in more than one cluster")
            if item not in out:
                raise ValueError(f"cluster {k} holds {item!r}, which is not one of the items")
            seen.add(item)
            out[item] = k
    return out


def _groups(partition: Partition) -> list[list[Hashable]]:
    """The clusters of size >= 2, members in the mapping's iteration order."""
    members: dict[Hashable, list[Hashable]] = {}
    for item, group in partition.items():
        if group is not None:
            members.setdefault(group, []).append(item)
    return [m for m in members.values() if len(m) >= 2]


@dataclass(frozen=True)
class ChainedPairs:
    """Pairs inside a predicted cluster whose exact similarity is below the detector's threshold.

    Union-find / connected components over LSH candidates is transitive: ``a~b`` and ``b~c`` put ``a, c`` together
    even when ``J(a, c)`` is far below the threshold. This counts such pairs.

    Attributes:
        within_cluster_pairs: ``P``, all unordered pairs inside predicted clusters.
        chained: pairs with similarity ``< threshold`` (None when ``state`` is ``SKIPPED``).
        undefined: pairs whose similarity is undefined (the function returned None, e.g. two empty shingle sets);
            they are not counted as chained.
        threshold: the similarity threshold used.
        examples: up to ``max_examples`` chained pairs ``(a, b, similarity)``, lowest similarity first.
        state: ``OK``, or ``SKIPPED`` when ``P`` exceeds the ``max_pairs`` budget (nothing is computed then).
        reason: why it was skipped.
    """

    within_cluster_pairs: int
    chained: int | None
    undefined: int
    threshold: float
    examples: tuple[tuple[Hashable, Hashable, float], ...]
    state: State
    reason: str | None = None


def chained_pairs(predicted: Partition, similarity: Callable[[Hashable, Hashable], float | None], threshold: float,
                  *, max_pairs: int = 2_000_000, max_examples: int = 10) -> ChainedPairs:
    """Count the within-cluster pairs whose exact similarity (normally the exact Jaccard of the shingle sets) is below
    ``threshold``.

    ``chained = |{(i, j) : C(i) = C(j), i ≠ j, s(i, j) < threshold}|`` over unordered pairs. O(P) calls to
    ``similarity``: the count is skipped (state ``SKIPPED``) when ``P > max_pairs``, which only happens when a giant
    cluster formed (its size is in `ClusterAgreement.largest_predicted_cluster`).

    Args:
        predicted: ``item -> cluster id`` (``None`` = singleton).
        similarity: exact similarity of two items in [0, 1], or None when undefined.
        threshold: the detector's Jaccard threshold in [0, 1].
        max_pairs: budget on ``P``.
        max_examples: how many chained pairs to keep as examples.

    Raises:
        ValueError: ``threshold`` outside [0, 1] or a similarity outside [0, 1].
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    groups = _groups(predicted)
    total = sum(_pairs(len(g)) for g in groups)
    if total > max_pairs:
        return ChainedPairs(total, None, 0, threshold, (), State.SKIPPED,
                            f"{total} within-cluster pairs exceed the budget of {max_pairs}")
    chained: list[tuple[Hashable, Hashable, float]] = []
    undefined = 0
    for g in groups:
        for x in range(len(g)):
            for y in range(x + 1, len(g)):
                s = similarity(g[x], g[y])
                if s is None:
                    undefined += 1
                    continue
                if not 0.0 <= s <= 1.0:
                    raise ValueError(f"similarity({g[x]!r}, {g[y]!r}) = {s} is outside [0, 1]")
                if s < threshold:
                    chained.append((g[x], g[y], float(s)))
    examples = tuple(sorted(chained, key=lambda t: t[2])[:max_examples])
    return ChainedPairs(total, len(chained), undefined, threshold, examples, State.OK)


def chained_pair_rate(c: ChainedPairs) -> Rate:
    """``chained / within-cluster pairs``; ``NO_PREDICTION`` when nothing merged, ``SKIPPED`` over budget."""
    if c.state is not State.OK or c.chained is None:
        return Rate(value=None, numerator=0.0, denominator=float(c.within_cluster_pairs), state=c.state,
                    reason=c.reason)
    return rate_of(c.chained, c.within_cluster_pairs, if_zero=State.NO_PREDICTION, reason=_NO_PRED)


@dataclass(frozen=True)
class RemovalCounts:
    """Documents a deduplicator would drop, for one document class.

    Attributes:
        n_items: documents of the class.
        removed: documents of the class that are not the kept member of their predicted cluster.
        wrongly_removed: removed documents whose gold group differs from the kept member's gold group (or that have
            no gold group): each one is content lost from the index.
        gold_removable: documents of the class that are not the kept member of their gold group (what a perfect
            detector removes).
    """

    n_items: int
    removed: int
    wrongly_removed: int
    gold_removable: int


def removal_counts(gold: Partition, predicted: Partition,
                   doc_class: Mapping[Hashable, str]) -> dict[str, RemovalCounts]:
    """Per class, how many documents deduplication removes, and how many of those it should not have removed.

    Keep rule: in each predicted cluster (and each gold group) the first member in the iteration order of
    ``predicted`` is kept and every other member is removed. A removed item ``i`` kept-by ``k`` is *wrongly removed*
    when ``gold[i] is None or gold[i] != gold[k]``.

    Args:
        gold, predicted: partitions over the same items (see `cluster_agreement`).
        doc_class: ``item -> class`` for every item.

    Returns:
        ``class -> RemovalCounts``, classes sorted by name.

    Raises:
        ValueError: the partitions or ``doc_class`` do not cover the same items.
    """
    if gold.keys() != predicted.keys() or doc_class.keys() != predicted.keys():
        raise ValueError("gold, predicted and doc_class must hold the same items")
    order = list(predicted)
    tallies: dict[str, list[int]] = {cls: [0, 0, 0, 0] for cls in sorted(set(doc_class.values()))}
    for item in order:
        tallies[doc_class[item]][0] += 1
    ordered_gold = {i: gold[i] for i in order}
    for members in _groups(predicted):
        keep = members[0]
        for item in members[1:]:
            t = tallies[doc_class[item]]
            t[1] += 1
            if gold[item] is None or gold[item] != gold[keep]:
                t[2] += 1
    for members in _groups(ordered_gold):
        for item in members[1:]:
            tallies[doc_class[item]][3] += 1
    return {cls: RemovalCounts(*t) for cls, t in tallies.items()}
