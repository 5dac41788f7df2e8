"""Near-duplicate detection auditor (stage ``dedup``): false-merge and missed-merge rates against labelled groups.

Runs at corpus level, once per pipeline, on what the pipeline's **dedup step** (`ingestaudit.stages.dedup_step`)
made of each pipeline's extracted text (end to end) or, with ``--parser reference``, of the reference text (component
level). The auditor only reads the step's output (clusters, exclusions, candidate pairs, the shingle hashes of each
document, the sweep grid): it never runs a detector. Gold: the truth's ``dup_group``; documents sharing a value are
duplicates, a document without one is unique. The stage applies when some document has a ``dup_group``.

The step is configured per pipeline (``[pipelines.x] dedup = { use = "minhash", threshold = 0.8, ... }``, or
``--sweep dedup.threshold=0.7,0.9``); the step options given in ``[auditor_options.dedup]`` are every pipeline's
defaults (`ingestaudit.dedup_settings.step_options`). Which detector clusters, per pipeline (first that applies):

1. **precomputed clusters**: when some parsed document carries ``extras["dup_cluster"]`` (a precomputed output with
   a ``dup_cluster`` key) and ``use_precomputed`` is on, those cluster ids are audited and nothing runs. Cluster
   ids are compared as strings; a document whose output has no ``dup_cluster`` is in no cluster (unique);
2. a **user detector** (``use = "NAME"``, or ``detector = "NAME"``): a ``DedupDetector`` registered under the
   entry-point group ``ingestaudit.dedup_detectors`` (or given as ``"module:Class"``), built with
   ``detector_options``;
3. the **default detector** (``minhash``): datasketch MinHash + MinHashLSH, connected components
   (`ingestaudit.stages.dedup.deduplicate`), every `DedupConfig` field being an option of the step.

Only documents that reached the stage count (DESIGN.md, "Five states"): a document the parser produced nothing for
is left out of every corpus-level rate (its gold pairs are not missed merges, it is never removed), its
``dedup.excluded`` row carries the parser's state, and it is counted by that state in the ``states`` of its class's
corpus rows (`CorpusResult.unreached`), whose ``n`` is the documents with parser output. A class none of whose
documents has output gets no value: its corpus rows take the most frequent parser state (``no_prediction``,
``error``, ``skipped``) with ``n`` = 0.

Rows (metric definitions in `ingestaudit.metrics.dedup`; ``G`` gold pairs, ``P`` predicted pairs, ``T`` pairs in
both):

- corpus level, per class and ``__all__``: ``pairwise_precision`` T/P, ``pairwise_recall`` T/G, ``pairwise_f1``
  2T/(P+G), ``false_merge_rate`` (P-T)/P, ``missed_merge_rate`` (G-T)/G, ``bcubed_precision``, ``bcubed_recall``,
  ``ari``, ``largest_cluster``, ``chained_pairs`` (within-cluster pairs with exact Jaccard below the threshold /
  within-cluster pairs), ``removed_docs`` and ``wrongly_removed_docs`` (per class: documents dropped / documents
  with parser output).
  A class's values use both partitions restricted to that class's documents (only pairs inside the class count);
  ``__all__`` counts every pair, cross-class pairs included. Removal uses the whole partition (a document is removed
  when it is not the first member, in corpus order, of its predicted cluster, wherever that member lives).
- per document: ``dedup.excluded`` (1 when the detector kept the document out of LSH: empty or too short), with the
  document's predicted cluster, gold group and removal in its detail.
- sweep (``sweep_num_perm`` x ``sweep_thresholds``), ``__all__`` only: ``sweep_false_merge_rate`` and
  ``sweep_missed_merge_rate`` per setting (label ``num_perm=128,threshold=0.8``), and ``sweep_best`` (label
  ``missed_merge<=BUDGET/num_perm=..,threshold=..``): the setting with the lowest false-merge rate among those whose
  missed-merge rate is at most the budget.

``details`` (report.json): ``detector``, ``lsh`` (bands b, rows r, hash values used, error areas, S-curve points),
``excluded``, ``no_output``, ``clusters``, ``corpus_counts`` (every count behind the rates), ``chained_examples``,
``s_curve`` (empirical LSH candidate rate per exact-Jaccard bucket next to 1-(1-J^r)^b), ``sweep`` and
``sweep_best``. User-supplied names (classes, document ids) appear only as values, never as keys.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ingestaudit.auditors.base import ArtefactItem, Auditor, CorpusResult, ItemArtefacts, Scope
from ingestaudit.auditors.rates import score_from_rate
from ingestaudit.auditors.reach import parse_state as _parse_state
from ingestaudit.auditors.reach import unreached_counts, unreached_rows
from ingestaudit.measurement import Score, State
from ingestaudit.metrics import dedup as dm
from ingestaudit.metrics.dedup import Rate
from ingestaudit.metrics.intervals import wilson
from ingestaudit.metrics.lsh import candidate_rate_by_bucket
from ingestaudit.dedup_settings import BUILTIN_DETECTOR, DedupConfig, detector_settings, list_option, sweep_grid
from ingestaudit.metrics.specs import MetricSpec, register
from ingestaudit.truth import Truth

ALL = "__all__"

METRICS = (
    MetricSpec("dedup.pairwise_precision", "T/P: predicted duplicate pairs (same predicted cluster) that are gold "
               "duplicate pairs (same dup_group) / predicted pairs; unordered document pairs (Manning et al. 2008, "
               "IIR §16.3); corpus level, per class over pairs inside the class", higher_is_better=True,
               ci="wilson", unit="pairs"),
    MetricSpec("dedup.pairwise_recall", "T/G: gold duplicate pairs that were predicted / gold duplicate pairs; "
               "corpus level", higher_is_better=True, ci="wilson", unit="pairs"),
    MetricSpec("dedup.pairwise_f1", "2T/(P+G), harmonic mean of pairwise precision and recall in count form; corpus "
               "level", higher_is_better=True, unit="pairs"),
    MetricSpec("dedup.false_merge_rate", "(P-T)/P: predicted duplicate pairs that are not gold duplicates / predicted "
               "pairs (= 1 - pairwise precision); no_prediction when nothing merged; corpus level",
               higher_is_better=False, ci="wilson", unit="pairs"),
    MetricSpec("dedup.missed_merge_rate", "(G-T)/G: gold duplicate pairs not predicted / gold pairs (= 1 - pairwise "
               "recall); no_reference without gold pairs; corpus level", higher_is_better=False, ci="wilson",
               unit="pairs"),
    MetricSpec("dedup.bcubed_precision", "B-cubed precision (1/n) Σ_i |C(i)∩G(i)|/|C(i)|, equal weight per document "
               "(Bagga & Baldwin 1998; Amigó et al. 2009); numerator = sum of per-document precisions, denominator "
               "= n; corpus level", higher_is_better=True, unit="docs"),
    MetricSpec("dedup.bcubed_recall", "B-cubed recall (1/n) Σ_i |C(i)∩G(i)|/|G(i)| (Bagga & Baldwin 1998); corpus "
               "level", higher_is_better=True, unit="docs"),
    MetricSpec("dedup.ari", "adjusted Rand index (T-E)/(M-E), E = G·P/C(n,2), M = (G+P)/2 (Hubert & Arabie 1985; "
               "as sklearn adjusted_rand_score, but 0/0 is no_reference, not 1.0); corpus level",
               higher_is_better=True, low=-1.0, unit="pairs"),
    MetricSpec("dedup.largest_cluster", "documents in the largest predicted cluster (1 when nothing merged); a giant "
               "cluster is the sign of chaining through connected components; corpus level",
               higher_is_better=False, low=0.0, high=None, unit="docs"),
    MetricSpec("dedup.chained_pairs", "within-cluster pairs whose exact Jaccard of the detector's shingle sets is "
               "below the threshold / within-cluster pairs (pairs joined only through transitivity); "
               "no_prediction when nothing merged; corpus level", higher_is_better=False, ci="wilson",
               unit="pairs"),
    MetricSpec("dedup.removed_docs", "documents deduplication would drop (every member of a predicted cluster but "
               "its first in corpus order) / documents of the class with parser output; not a quality score by "
               "itself: the share a perfect detector drops is gold_removable in details corpus_counts",
               higher_is_better=False,
               ci="wilson", unit="docs"),
    MetricSpec("dedup.wrongly_removed_docs", "dropped documents whose gold group differs from the kept member's (or "
               "that have none): unique content lost from the index / documents of the class with parser output",
               higher_is_better=False, ci="wilson", unit="docs"),
    MetricSpec("dedup.excluded", "1 when the detector kept the document out of LSH (empty after normalization, or "
               "fewer shingles than min_shingles), else 0; per document, so the aggregate is the share excluded",
               higher_is_better=False, ci="wilson", unit="docs"),
    MetricSpec("dedup.sweep_false_merge_rate", "dedup.false_merge_rate of the default detector at one sweep setting; "
               "label 'num_perm=N,threshold=T' (two axes joined by ','); __all__ only", higher_is_better=False,
               ci="wilson", unit="pairs"),
    MetricSpec("dedup.sweep_missed_merge_rate", "dedup.missed_merge_rate of the default detector at one sweep "
               "setting; label 'num_perm=N,threshold=T'; __all__ only", higher_is_better=False, ci="wilson",
               unit="pairs"),
    MetricSpec("dedup.sweep_best", "false-merge rate of the sweep setting with the lowest false-merge rate among "
               "those whose missed-merge rate is <= the budget (ties: lower missed-merge rate, fewer permutations, "
               "higher threshold); label 'missed_merge<=B/num_perm=N,threshold=T' (budget / setting); __all__ only",
               higher_is_better=False, ci="wilson", unit="pairs"),
)
register(*METRICS)

MAX_LISTED = 200
"""At most this many clusters, excluded documents or documents without output are listed in a detail."""
DEFAULT_EDGES = tuple(i / 10 for i in range(11))
"""Default exact-Jaccard bucket edges of the S-curve detail: [0, 0.1), ..., [0.9, 1.0]."""
DOCUMENTS_COUNTED = ("with parser output: a document the parser produced nothing for is left out of every corpus "
                     "rate and counted by its state in the row's states")
"""The ``documents`` entry of `DedupAuditor.options`: the population of the corpus-level rates."""


def _rate_json(rate: Rate) -> dict[str, Any]:
    return {"value": rate.value, "numerator": rate.numerator, "denominator": rate.denominator,
            "state": rate.state.value, "reason": rate.reason}


def _cell_label(num_perm: int, threshold: float) -> str:
    return f"num_perm={num_perm},threshold={threshold:g}"


S_CURVE_SAMPLE_PAIRS = 20_000
"""Default ``s_curve_sample_pairs``: pairs sampled for the S-curve when the indexed documents have more pairs than
``max_exact_pairs``."""


@dataclass(frozen=True, slots=True)
class DedupArtefact:
    """What the dedup auditor keeps of one document x pipeline: the truth's ``dup_group`` (``gold``). What the
    pipeline's dedup step made of the document is in the step's output (`audit_step`)."""

    gold: str | None


def pairwise_jaccard(sets: Sequence[frozenset], max_pairs: int) -> np.ndarray | None:
    """Exact Jaccard ``J(A, B) = |A∩B| / |A∪B|`` (Jaccard 1901) of every pair of ``sets``.

    The intersections come from one sparse product ``X Xᵀ`` of the binary document x shingle matrix ``X``, the unions
    from ``|A∪B| = |A| + |B| - |A∩B|``; the same values as `ingestaudit.metrics.jaccard.exact_jaccard` pair by pair.

    Args:
        sets: ``n`` shingle sets (any hashable items).
        max_pairs: budget on ``n(n-1)/2``; memory is O(n²).

    Returns:
        float64 array of length ``n(n-1)/2``, the condensed upper triangle (pairs ``i < j`` in the order of
        ``numpy.triu_indices(n, 1)``), values in [0, 1]; a pair of two empty sets gets 0.0 (callers pass non-empty
        sets only); None when ``n(n-1)/2 > max_pairs`` (nothing computed).
    """
    from scipy.sparse import csr_matrix

    n = len(sets)
    if n * (n - 1) // 2 > max_pairs:
        return None
    vocab: dict[Any, int] = {}
    indptr = [0]
    indices: list[int] = []
    for s in sets:
        indices.extend(vocab.setdefault(x, len(vocab)) for x in s)
        indptr.append(len(indices))
    x = csr_matrix((np.ones(len(indices), dtype=np.int32), np.array(indices, dtype=np.int64),
                    np.array(indptr, dtype=np.int64)), shape=(n, max(len(vocab), 1)))
    return _condensed_jaccard(x, np.diff(np.array(indptr, dtype=np.int64)))


def _condensed_jaccard(x: Any, sizes: np.ndarray) -> np.ndarray:
    """Jaccard of every row pair ``i < j`` of the binary sparse matrix ``x`` (rows: sets, ``sizes`` their lengths):
    intersections from ``x xᵀ``, unions ``|A| + |B| - |A∩B|``, 0.0 for two empty rows; condensed upper triangle."""
    inter = (x @ x.T).toarray().astype(np.int64)
    iu, ju = np.triu_indices(x.shape[0], 1)
    i_ = inter[iu, ju]
    union = sizes[iu] + sizes[ju] - i_
    out = np.zeros(len(iu), dtype=np.float64)
    np.divide(i_, union, out=out, where=union > 0)
    return out


def pairwise_jaccard_sorted(sets: Sequence[np.ndarray], max_pairs: int) -> np.ndarray | None:
    """`pairwise_jaccard` of sets given as sorted distinct uint64 arrays (the artefacts' shingle hashes): the same
    sparse product ``X Xᵀ``, the vocabulary from one ``numpy.unique`` over all of them."""
    from scipy.sparse import csr_matrix

    n = len(sets)
    if n * (n - 1) // 2 > max_pairs:
        return None
    sizes = np.array([len(x) for x in sets], dtype=np.int64)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    flat = np.concatenate(list(sets)) if n else np.zeros(0, dtype=np.uint64)
    _, cols = np.unique(flat, return_inverse=True)
    x = csr_matrix((np.ones(len(flat), dtype=np.int32), cols.reshape(-1).astype(np.int64), indptr),
                   shape=(n, max(int(cols.max()) + 1 if len(flat) else 0, 1)))
    return _condensed_jaccard(x, sizes)


def _representatives(result: Any) -> list[str]:
    """Keys that went into the LSH index: not excluded, and first of their exact-duplicate group."""
    out_of_index = {e.key for e in result.excluded}
    out_of_index.update(k for g in result.exact_groups for k in g[1:])
    return [k for k in result.keys if k not in out_of_index]


# --- the auditor -----------------------------------------------------------------------------------------------------

class DedupAuditor(Auditor):
    """Audits a pipeline's dedup step against ``dup_group`` labels at corpus level (see the module docstring): it
    reads the step's output (`audit_step`), never runs a detector.

    The options marked *step default* are the dedup step's (`ingestaudit.stages.dedup_step.DedupStep`): given
    here, they are the defaults of every pipeline's ``dedup`` step, which a pipeline's ``dedup`` table overrides key
    by key (its ``use`` is the ``detector``).

    Args:
        detector: *step default*: ``"minhash"`` (default: `ingestaudit.stages.dedup`), an entry-point name of the
            group ``ingestaudit.dedup_detectors``, or ``"module:Class"`` of a ``DedupDetector``.
        detector_options: *step default*: keyword arguments of a user detector.
        use_precomputed: *step default*: cluster by the ``dup_cluster`` ids found in precomputed outputs instead
            of running a detector.
        sweep_num_perm, sweep_thresholds: *step default*: the sweep grid, as lists or comma-separated strings
            (``"0.5,0.8"``); either alone sweeps that axis at the other's configured value. Each setting builds its
            own MinHashLSH index over signatures computed once per ``num_perm``; the step computes the grid, the
            auditor scores it.
        workers: *step default*: kept so that configurations stay valid; shingling and hashing run in the run's
            workers (one document per task), so it has no effect.
        missed_merge_budget: the largest missed-merge rate a sweep setting may have to be "best", in [0, 1].
        jaccard_edges: bucket edges of the S-curve detail (increasing, within [0, 1]; a list or a
            comma-separated string).
        max_exact_pairs: budget on document pairs for exact Jaccard: chained pairs above it are ``skipped`` with
            the reason; an S-curve over more pairs is estimated from a sample (``s_curve_sample_pairs``).
        s_curve_sample_pairs: pairs sampled (numpy ``default_rng(seed)``, the step's MinHash ``seed``) for an
            S-curve over more than ``max_exact_pairs`` pairs; every candidate pair and every pair of one gold
            group is measured exactly, the other pairs are estimated from the sample (details say how). It changes
            a detail, never a metric value.
        **dedup_options: *step default*: `DedupConfig` fields (shingling, k, normalization, num_perm, threshold,
            weights, seed, scheme, verify, min_shingles, short_docs). The step's also define
            the exact Jaccard of chained pairs and of the S-curve for every detector.

    Raises:
        TypeError: an unknown option (the registry reports it as a bad ``[auditor_options.dedup]`` key).
        ValueError: a bad value (a threshold datasketch refuses in the grid, a budget outside [0, 1]...); an
            unknown detector is refused when the run builds its pipelines' steps, before any document is read.
    """

    stage = "dedup"
    metrics = METRICS
    scope = Scope.CORPUS
    reads = frozenset({"dedup"})
    option_dataclasses = (DedupConfig,)  # the fields behind **dedup_options (docs/config.md, unknown-option messages)

    def __init__(self, *, detector: str = BUILTIN_DETECTOR, detector_options: dict[str, Any] | None = None,
                 use_precomputed: bool = True, sweep_num_perm: Sequence[int] | str | None = None,
                 sweep_thresholds: Sequence[float] | str | None = None, missed_merge_budget: float = 0.1,
                 jaccard_edges: Sequence[float] | str = DEFAULT_EDGES, max_exact_pairs: int = 500_000,
                 s_curve_sample_pairs: int = S_CURVE_SAMPLE_PAIRS, workers: int = 1, **dedup_options: Any):
        given = {"detector": detector, "detector_options": detector_options, "use_precomputed": use_precomputed,
                 "sweep_num_perm": sweep_num_perm, "sweep_thresholds": sweep_thresholds, "workers": workers,
                 **dedup_options}
        defaults = {"detector": BUILTIN_DETECTOR, "detector_options": None, "use_precomputed": True,
                    "sweep_num_perm": None, "sweep_thresholds": None, "workers": 1}
        self._step_defaults = {k: v for k, v in given.items() if k not in defaults or v != defaults[k]}
        self.config = DedupConfig(**dedup_options)  # the defaults' detector settings, as the report prints them
        self.sweep = sweep_grid(self.config, sweep_num_perm, sweep_thresholds)  # bad values: refused here
        self.detector, self.detector_options = detector, dict(detector_options or {})
        self.use_precomputed = bool(use_precomputed)
        if workers < 1:
            raise ValueError("workers must be >= 1")
        if not 0.0 <= missed_merge_budget <= 1.0:
            raise ValueError(f"missed_merge_budget must be in [0, 1], got {missed_merge_budget}")
        self.budget = float(missed_merge_budget)
        edges = list_option(jaccard_edges, float)
        if len(edges) < 2 or any(a >= b for a, b in zip(edges, edges[1:])) or edges[0] < 0 or edges[-1] > 1:
            raise ValueError(f"jaccard_edges must be at least two increasing values in [0, 1], got {edges}")
        self.edges = tuple(edges)
        if max_exact_pairs < 0 or s_curve_sample_pairs < 1:
            raise ValueError("max_exact_pairs must be >= 0 and s_curve_sample_pairs >= 1")
        self.max_exact_pairs = int(max_exact_pairs)
        self.s_curve_sample_pairs = int(s_curve_sample_pairs)

    # -- report configuration ---------------------------------------------------------------------------------------

    def options(self) -> dict[str, Any]:
        """``documents`` (which documents the corpus rates count), the auditor's own options and the step defaults
        resolved: the detector, every `DedupConfig` field, the LSH bands ``b`` and rows ``r`` they imply and the
        sweep; the same keys and values as before the dedup step existed, so the definition fingerprints of the
        rows stay. A pipeline whose ``dedup`` table overrides them shows its own in ``pipelines[].stages.dedup``."""
        settings = detector_settings(self.detector, self.detector_options, self.use_precomputed, self.config,
                                     self.sweep)
        sweep = {k: settings.pop(k) for k in ("sweep_num_perm", "sweep_thresholds", "sweep_lsh") if k in settings}
        return {"documents": DOCUMENTS_COUNTED, **settings, "missed_merge_budget": self.budget,
                "jaccard_edges": list(self.edges), "max_exact_pairs": self.max_exact_pairs,
                "s_curve_sample_pairs": self.s_curve_sample_pairs, **sweep}

    def step_options(self) -> dict[str, Any]:
        """The dedup step options given to this auditor (`ingestaudit.dedup_settings.STEP_KEYS`): the defaults of
        every pipeline's dedup step (`ingestaudit.steps.with_step`)."""
        return dict(self._step_defaults)

    def applies(self, truth: Truth) -> bool:
        """True when the document has a ``dup_group`` (the stage runs when some document does)."""
        return truth.dup_group is not None

    def artefact(self, item: ItemArtefacts, context: tuple[str, ...]) -> DedupArtefact:
        """The document's `DedupArtefact`: its gold group (what the step made of the document is the step's,
        ``item.steps["dedup"]``)."""
        return DedupArtefact(item.truth.dup_group)

    # -- metrics ----------------------------------------------------------------------------------------------------

    def _class_scores(self, gold: dict, pred: dict, similarity: Callable[[str, str], float | None],
                      removal: dm.RemovalCounts, threshold: float) -> tuple[list[Score], dict[str, Any], list]:
        c = dm.cluster_agreement(gold, pred)
        ch = dm.chained_pairs(pred, similarity, threshold, max_pairs=self.max_exact_pairs)
        rows = [
            score_from_rate("dedup.pairwise_precision", dm.pairwise_precision(c)),
            score_from_rate("dedup.pairwise_recall", dm.pairwise_recall(c)),
            score_from_rate("dedup.pairwise_f1", dm.pairwise_f1(c)),
            score_from_rate("dedup.false_merge_rate", dm.false_merge_rate(c)),
            score_from_rate("dedup.missed_merge_rate", dm.missed_merge_rate(c)),
            score_from_rate("dedup.bcubed_precision", dm.bcubed_precision(c)),
            score_from_rate("dedup.bcubed_recall", dm.bcubed_recall(c)),
            score_from_rate("dedup.ari", dm.adjusted_rand_index(c)),
            (Score("dedup.largest_cluster", float(c.largest_predicted_cluster)) if c.n_items
             else Score.missing("dedup.largest_cluster", State.NO_REFERENCE, "no documents")),
            score_from_rate("dedup.chained_pairs", dm.chained_pair_rate(ch), detail={"threshold": threshold}),
            score_from_rate("dedup.removed_docs", dm.rate_of(removal.removed, removal.n_items,
                                                             if_zero=State.NO_REFERENCE, reason="no documents")),
            score_from_rate("dedup.wrongly_removed_docs", dm.rate_of(removal.wrongly_removed, removal.n_items,
                                                                     if_zero=State.NO_REFERENCE,
                                                                     reason="no documents")),
        ]
        counts = {"n_docs": c.n_items, "all_pairs": c.all_pairs, "gold_pairs": c.gold_pairs,
                  "predicted_pairs": c.predicted_pairs, "true_pairs": c.true_pairs, "false_merges": c.false_merges,
                  "missed_merges": c.missed_merges, "merged_clusters": c.merged_clusters,
                  "largest_predicted_cluster": c.largest_predicted_cluster, "largest_gold_group": c.largest_gold_group,
                  "bcubed_precision_sum": float(c.bcubed_precision_sum),
                  "bcubed_recall_sum": float(c.bcubed_recall_sum),
                  "within_cluster_pairs": ch.within_cluster_pairs, "chained_pairs": ch.chained,
                  "chained_state": ch.state.value, "chained_undefined": ch.undefined, "threshold": threshold,
                  "removed": removal.removed, "wrongly_removed": removal.wrongly_removed,
                  "gold_removable": removal.gold_removable}
        examples = [{"a": a, "b": b, "jaccard": j} for a, b, j in ch.examples]
        return rows, counts, examples

    def _s_curve(self, result: Any, shingles: Any, cache: dict[Any, Any],
                 gold: Mapping[str, Hashable | None]) -> dict[str, Any]:
        reps = _representatives(result)
        n = len(reps)
        total = n * (n - 1) // 2
        base = {"num_perm": result.config.num_perm, "threshold": result.config.threshold, "b": result.b,
                "r": result.r, "indexed_docs": n, "pairs": total,
                "definition": "pairs of documents in the LSH index (one per exact-duplicate group, empty and too-short "
                              "documents excluded), bucketed by the exact Jaccard of their shingle sets; empirical = "
                              "LSH candidates / pairs (Wilson 95% interval); theoretical = mean of 1-(1-J^r)^b over "
                              "the bucket's pairs"}
        pos = {k: i for i, k in enumerate(reps)}
        if total > self.max_exact_pairs:
            return {**base, **self._sampled_s_curve(result, reps, pos, shingles, cache, gold)}
        key = tuple(reps)
        if key not in cache:
            cache[key] = pairwise_jaccard_sorted([shingles(k) for k in reps], self.max_exact_pairs)
        jac = cache[key]
        mask = np.zeros(len(jac), dtype=bool)
        for c in result.candidates:
            i, j = sorted((pos[c.a], pos[c.b]))
            mask[n * i - i * (i + 1) // 2 + (j - i - 1)] = True
        # Pairs with J = 0 that are not candidates (most pairs of a corpus) add 1 pair, 0 candidates and P(0) = 0 each:
        # they are folded into the bucket holding 0 afterwards instead of looping over them one by one.
        keep = (jac > 0) | mask
        zeros = int(len(jac) - keep.sum()) if self.edges[0] == 0.0 else 0
        buckets = candidate_rate_by_bucket(jac[keep], mask[keep], result.b, result.r, self.edges)
        rows = []
        for k, bk in enumerate(buckets):
            pairs, theo = bk.pairs, bk.theoretical
            rate, interval = bk.empirical, bk.interval
            if k == 0 and zeros:
                theo = (theo or 0.0) * pairs / (pairs + zeros)
                pairs += zeros
                rate = dm.rate_of(bk.candidates, pairs, if_zero=State.NO_REFERENCE, reason="no pairs")
                interval = wilson(bk.candidates, pairs)
            rows.append({"low": bk.low, "high": bk.high, "pairs": pairs, "candidates": bk.candidates,
                         "empirical": rate.value, "empirical_state": rate.state.value,
                         "ci_low": interval.low if interval else None, "ci_high": interval.high if interval else None,
                         "theoretical": theo})
        return {**base, "state": State.OK.value, "buckets": rows}

    def _sampled_s_curve(self, result: Any, reps: list[str], pos: dict[str, int], shingles: Any,
                         cache: dict[Any, Any], gold: Mapping[str, Hashable | None]) -> dict[str, Any]:
        """The S-curve over more pairs than ``max_exact_pairs``, in linear time: every LSH candidate pair and every
        pair inside one gold group (stratum 1) is measured exactly; the other pairs (stratum 2, nearly all of them,
        almost all at Jaccard ~0) are represented by a uniform sample of ``s_curve_sample_pairs`` of them without
        replacement (numpy ``default_rng(seed)``, the config's seed), each standing for ``N2 / sample`` pairs. A
        bucket's pairs are stratum 1's count plus the weighted sample's (an unbiased estimate, so ``pairs`` is
        rounded and ``pairs_estimate`` kept); its candidates are exact; no Wilson interval (the counts are
        estimates)."""
        from ingestaudit.metrics.lsh import candidate_probability

        n = len(reps)
        total = n * (n - 1) // 2
        exact: set[int] = set()
        for c in result.candidates:
            i, j = sorted((pos[c.a], pos[c.b]))
            exact.add(i * n + j)
        cand = set(exact)
        groups: dict[Hashable, list[int]] = {}
        for k in reps:
            if gold.get(k) is not None:
                groups.setdefault(gold[k], []).append(pos[k])
        gold_pairs = sum(len(g) * (len(g) - 1) // 2 for g in groups.values())
        if gold_pairs <= self.max_exact_pairs:
            for g in groups.values():
                for a in range(len(g)):
                    for b in range(a + 1, len(g)):
                        exact.add(min(g[a], g[b]) * n + max(g[a], g[b]))
        rest = total - len(exact)
        want = min(self.s_curve_sample_pairs, rest)
        rng = np.random.default_rng(result.config.seed)
        chosen: list[int] = []
        seen: set[int] = set()
        while len(chosen) < want:
            draw = rng.integers(0, n, size=(2 * (want - len(chosen)) + 16, 2))
            for i, j in draw.tolist():
                if i == j:
                    continue
                code = min(i, j) * n + max(i, j)
                if code in exact or code in seen:
                    continue
                seen.add(code)
                chosen.append(code)
                if len(chosen) == want:
                    break
        memo = cache.setdefault("pairs", {})

        def jac(code: int) -> float:
            got = memo.get(code)
            if got is None:
                got = memo[code] = shingles.jaccard(reps[code // n], reps[code % n]) or 0.0
            return got

        weight = rest / want if want else 0.0
        edges = self.edges
        nb = len(edges) - 1
        pairs = [0.0] * nb
        exact_n = [0] * nb
        sampled_n = [0] * nb
        cands = [0] * nb
        theo = [0.0] * nb

        def bucket(j: float) -> int | None:
            if j < edges[0] or j > edges[-1]:
                return None
            return next((i for i in range(nb) if j < edges[i + 1]), nb - 1)

        for code in sorted(exact):
            j = jac(code)
            k = bucket(j)
            if k is None:
                continue
            exact_n[k] += 1
            pairs[k] += 1.0
            cands[k] += code in cand
            theo[k] += candidate_probability(j, result.b, result.r)
        for code in chosen:
            j = jac(code)
            k = bucket(j)
            if k is None:
                continue
            sampled_n[k] += 1
            pairs[k] += weight
            theo[k] += weight * candidate_probability(j, result.b, result.r)
        rows = []
        for k in range(nb):
            rate = dm.rate_of(cands[k], pairs[k], if_zero=State.NO_REFERENCE, reason="no pairs")
            rows.append({"low": edges[k], "high": edges[k + 1], "pairs": round(pairs[k]), "pairs_estimate": pairs[k],
                         "exact_pairs": exact_n[k], "sampled_pairs": sampled_n[k], "candidates": cands[k],
                         "empirical": rate.value, "empirical_state": rate.state.value, "ci_low": None,
                         "ci_high": None, "theoretical": theo[k] / pairs[k] if pairs[k] else None})
        return {"state": State.OK.value, "buckets": rows,
                "sample": {"method": "stratified: LSH candidates and same-gold-group pairs exact, the other pairs "
                                     "a uniform sample without replacement, each standing for N/sample pairs; no "
                                     "interval (estimated counts)",
                           "exact_pairs": len(exact), "other_pairs": rest, "sampled_pairs": want,
                           "seed": result.config.seed, "rng": "numpy.random.default_rng",
                           "gold_pairs_exact": gold_pairs <= self.max_exact_pairs,
                           "reason": f"{total} pairs exceed max_exact_pairs={self.max_exact_pairs}"}}

    def _run_sweep(self, items: list[ArtefactItem], gold: dict[str, Hashable | None],
                   output: Any, cache: dict
                   ) -> tuple[dict[str, Any], dict[str, Any], list[tuple[str, Score, int]]]:
        """The sweep's rows and details from the step's grid (``output.grid``: one clustering per setting)."""
        perms, ths = output.sweep
        keys = [i.doc_id for i in items]
        grid = output.grid
        shingles = output.shingles
        cells = []
        rows: list[tuple[str, Score, int]] = []
        n = len(keys)
        classes = sorted({i.doc_class for i in items})
        members = {cls: [i.doc_id for i in items if i.doc_class == cls] for cls in classes}
        for (p, t), res in grid.items():
            pred = dict.fromkeys(keys)
            pred.update(res.cluster_of)
            c = dm.cluster_agreement(gold, pred)
            fm, mm = dm.false_merge_rate(c), dm.missed_merge_rate(c)
            ch = dm.chained_pairs(pred, shingles.jaccard, t, max_pairs=self.max_exact_pairs)
            per_class = []
            for cls in classes:
                ids = members[cls]
                cc = dm.cluster_agreement({k: gold[k] for k in ids}, {k: pred[k] for k in ids})
                per_class.append({"doc_class": cls, "false_merge_rate": _rate_json(dm.false_merge_rate(cc)),
                                  "missed_merge_rate": _rate_json(dm.missed_merge_rate(cc))})
            label = _cell_label(p, t)
            cells.append({"num_perm": p, "threshold": t, "label": label, "b": res.b, "r": res.r,
                          "hash_values_used": res.b * res.r,
                          "false_merge_rate": _rate_json(fm), "missed_merge_rate": _rate_json(mm),
                          "pairwise_f1": _rate_json(dm.pairwise_f1(c)),
                          "predicted_pairs": c.predicted_pairs, "gold_pairs": c.gold_pairs,
                          "true_pairs": c.true_pairs, "largest_cluster": c.largest_predicted_cluster,
                          "chained_pairs": ch.chained, "within_cluster_pairs": ch.within_cluster_pairs,
                          "candidate_pairs": len(res.candidates),
                          "s_curve": self._s_curve(res, shingles, cache, gold), "per_class": per_class})
            rows.append((ALL, score_from_rate("dedup.sweep_false_merge_rate", fm, label=label,
                                              detail={"b": res.b, "r": res.r}), n))
            rows.append((ALL, score_from_rate("dedup.sweep_missed_merge_rate", mm, label=label,
                                              detail={"b": res.b, "r": res.r}), n))
        best, reason = self.best_setting(cells, self.budget)
        budget_label = f"missed_merge<={self.budget:g}"
        if best is None:
            rows.append((ALL, Score.missing("dedup.sweep_best", State.NO_PREDICTION, reason,
                                            label=f"{budget_label}/none"), n))
            best_detail: dict[str, Any] = {"budget": self.budget, "best": None, "reason": reason}
        else:
            fm = best["false_merge_rate"]
            rows.append((ALL, Score("dedup.sweep_best", fm["value"], fm["numerator"], fm["denominator"], State.OK,
                                    f"{budget_label}/{best['label']}",
                                    {"missed_merge_rate": best["missed_merge_rate"]["value"], "b": best["b"],
                                     "r": best["r"]}), n))
            best_detail = {"budget": self.budget, "reason": reason,
                           "best": {k: best[k] for k in ("num_perm", "threshold", "label", "b", "r",
                                                         "false_merge_rate", "missed_merge_rate", "pairwise_f1")}}
        sweep = {"num_perm": list(perms), "threshold": list(ths), "budget": self.budget,
                 "base_config": output.config.options(), "cells": cells}
        return sweep, best_detail, rows

    @staticmethod
    def best_setting(cells: Sequence[Mapping[str, Any]], budget: float) -> tuple[Mapping[str, Any] | None, str]:
        """The sweep cell with the lowest false-merge rate among those with missed-merge rate ``<= budget``.

        Only cells where both rates are defined (state ``ok``) compete. Ties: lower missed-merge rate, then fewer
        permutations, then the higher threshold (fewer candidates to verify).

        Returns:
            ``(cell, reason)``; ``(None, reason)`` when no cell qualifies.
        """
        ok = [c for c in cells if c["false_merge_rate"]["state"] == "ok" and c["missed_merge_rate"]["state"] == "ok"]
        fit = [c for c in ok if c["missed_merge_rate"]["value"] <= budget + 1e-12]
        if not fit:
            lowest = min((c["missed_merge_rate"]["value"] for c in ok), default=None)
            why = (f"no setting has a missed-merge rate <= {budget:g}" +
                   (f" (lowest: {lowest:.4f})" if lowest is not None else " (no setting has both rates defined)"))
            return None, why
        best = min(fit, key=lambda c: (c["false_merge_rate"]["value"], c["missed_merge_rate"]["value"],
                                       c["num_perm"], -c["threshold"]))
        return best, (f"lowest false-merge rate among the {len(fit)} of {len(cells)} settings with missed-merge "
                      f"rate <= {budget:g}")

    # -- entry point ------------------------------------------------------------------------------------------------

    def audit_artefacts(self, items: list[ArtefactItem], context: tuple[str, ...] = ()) -> CorpusResult:
        """Not the dedup auditor's entry point: it reads its pipeline's dedup step output (`audit_step`).

        Raises:
            TypeError: always (the run calls `audit_step` through `ingestaudit.steps`).
        """
        raise TypeError("the dedup auditor reads the output of the pipeline's dedup step: call audit_step(items, "
                        "output) (ingestaudit.steps.with_step builds both from a pipeline)")

    def audit_step(self, items: list[ArtefactItem], output: Any) -> CorpusResult:
        """Audit one pipeline's dedup step over the whole corpus (see the module docstring for rows and details).

        Args:
            items: every document of the pipeline in corpus order, each with its `DedupArtefact` and the state the
                parser left it in.
            output: the step's output over the documents with parser output (state ``ok``), read by attribute:
                ``kind``, ``detector``, ``config`` (threshold, shingling, k, normalization, seed), ``cluster_of``,
                ``excluded``, ``details``, ``result`` (candidate pairs and bands of the built-in detector, or None),
                ``sweep``, ``grid``, ``grid_error``, ``error`` and ``jaccard(a, b)`` (exact Jaccard of two
                documents' shingle sets); `ingestaudit.stages.dedup_step.DedupOutput`.

        Corpus-level rows count the documents with parser output only; the others are in ``result.unreached``.
        Never raises for bad step output: a detector that failed (``output.error``) gives ``error`` rows with its
        message.
        """
        reached = [i for i in items if i.state is State.OK]
        keys = [i.doc_id for i in reached]
        present = set(keys)
        gold: dict[str, Hashable | None] = {i.doc_id: i.artefact.gold for i in reached}
        classes = sorted({i.doc_class for i in items})
        members = {cls: [i.doc_id for i in reached if i.doc_class == cls] for cls in classes}
        unreached = unreached_counts(items)
        if output.error:
            return self._error_result(items, output, output.error)
        return self._audit(items, reached, keys, present, gold, classes, members, unreached, output)

    def _audit(self, items: list[ArtefactItem], reached: list[ArtefactItem], keys: list[str], present: set[str],
               gold: dict[str, Hashable | None], classes: list[str], members: dict[str, list[str]],
               unreached: dict[str, dict[str, int]], pred: Any) -> CorpusResult:
        def similarity(a: str, b: str) -> float | None:
            if a not in present or b not in present:
                return None
            return pred.jaccard(a, b)

        doc_class = {i.doc_id: i.doc_class for i in reached}
        removal = dm.removal_counts(gold, pred.cluster_of, doc_class)
        result = CorpusResult(unreached=unreached)
        counts_detail: list[dict[str, Any]] = []
        examples: list[dict[str, Any]] = []
        cfg = pred.config
        threshold = cfg.threshold
        for cls in classes + [ALL]:
            ids = keys if cls == ALL else members[cls]
            missing = unreached.get(cls, {})
            if not ids:  # no document of the class reached the stage: no value, in the parsers' state
                result.corpus_scores += [(cls, s, 0) for s in unreached_rows(self._corpus_metrics(pred), missing)]
                counts_detail.append({"doc_class": cls, "n_docs": 0, "unreached": missing})
                continue
            rem = (dm.RemovalCounts(*(sum(getattr(r, f) for r in removal.values())
                                      for f in ("n_items", "removed", "wrongly_removed", "gold_removable")))
                   if cls == ALL else removal[cls])
            rows, counts, ex = self._class_scores({k: gold[k] for k in ids}, {k: pred.cluster_of[k] for k in ids},
                                                  similarity, rem, threshold)
            result.corpus_scores += [(cls, s, len(ids)) for s in rows]
            counts_detail.append({"doc_class": cls, **counts, "unreached": missing})
            if cls == ALL:
                examples = ex
        result.doc_scores = self._doc_rows(items, pred, {i.doc_id: i.artefact.gold for i in items})

        details: dict[str, Any] = {
            "detector": {"kind": pred.kind, **{k: v for k, v in pred.details.items() if k != "lsh"}},
            "corpus_counts": counts_detail,
            "chained_examples": {"threshold": threshold, "shingling": cfg.shingling, "k": cfg.k,
                                 "normalization": cfg.normalization, "examples": examples},
            "clusters": self._clusters_detail(pred.cluster_of, gold, keys),
            "no_output": self._no_output_detail(items),
        }
        if "lsh" in pred.details:
            details["lsh"] = pred.details["lsh"]
        if pred.excluded is not None:
            excl = [{"doc_id": k, **v} for k, v in pred.excluded.items()]
            details["excluded"] = {"total": len(excl), "documents": excl[:MAX_LISTED]}
        cache: dict = {}
        if pred.result is not None:
            details["s_curve"] = self._s_curve(pred.result, pred.shingles, cache, gold)
        if pred.sweep is not None and not reached:
            rows = unreached_rows([m for m in self._corpus_metrics(pred) if ".sweep_" in m], unreached.get(ALL, {}))
            result.corpus_scores += [(ALL, r, 0) for r in rows]
            details["sweep"] = {"state": rows[0].state.value, "reason": rows[0].detail["reason"]}
        elif pred.sweep is not None:
            msg = pred.grid_error  # the step could not compute its grid: the sweep's rows are errors
            if not msg:
                try:
                    sweep, best, rows = self._run_sweep(reached, gold, pred, cache)
                    details["sweep"], details["sweep_best"] = sweep, best
                    result.corpus_scores += rows
                except Exception as exc:  # never a crash of the audit
                    msg = f"{type(exc).__name__}: {exc}"
            if msg:
                details["sweep"] = {"state": State.ERROR.value, "reason": msg}
                for m in ("dedup.sweep_false_merge_rate", "dedup.sweep_missed_merge_rate", "dedup.sweep_best"):
                    result.corpus_scores.append((ALL, Score.missing(m, State.ERROR, msg), len(keys)))
        result.details = details
        return result

    # -- rows and details -------------------------------------------------------------------------------------------

    def _doc_rows(self, items: list[ArtefactItem], pred: Any,
                  gold: dict[str, Hashable | None]) -> list[tuple[str, Score]]:
        order = [i.doc_id for i in items]
        by_cluster: dict[Hashable, list[str]] = {}
        for k in order:
            cid = pred.cluster_of.get(k)  # a document without parser output is in no cluster
            if cid is not None:
                by_cluster.setdefault(cid, []).append(k)
        rows = []
        for item in items:
            k = item.doc_id
            cid = pred.cluster_of.get(k)
            group = by_cluster.get(cid, [k]) if cid is not None else [k]
            kept = group[0]
            detail: dict[str, Any] = {
                "predicted_cluster": None if cid is None else str(cid), "cluster_size": len(group),
                "gold_group": gold[k], "removed": kept != k, "kept_member": kept,
                "wrongly_removed": kept != k and (gold[k] is None or gold[k] != gold[kept]),
                "detector": pred.kind,
            }
            if item.state is not State.OK:
                state = _parse_state(item)
                rows.append((k, Score("dedup.excluded", None, None, None, state, "",
                                      {**detail, "reason": item.reason or "the parser produced no output"})))
            elif pred.excluded is None:
                rows.append((k, Score("dedup.excluded", None, None, None, State.NO_PREDICTION, "",
                                      {**detail, "reason": f"the {pred.kind} detector does not report exclusions"})))
            else:
                ex = pred.excluded.get(k)
                rows.append((k, Score("dedup.excluded", float(ex is not None), float(ex is not None), 1.0,
                                      State.OK, "", {**detail, **({"excluded": ex} if ex else {})})))
        return rows

    @staticmethod
    def _clusters_detail(cluster_of: Mapping[str, Hashable | None], gold: Mapping[str, Hashable | None],
                         order: list[str]) -> dict[str, Any]:
        members: dict[Hashable, list[str]] = {}
        for k in order:
            if cluster_of[k] is not None:
                members.setdefault(cluster_of[k], []).append(k)
        position = {k: i for i, k in enumerate(order)}
        merged = [m for m in members.values() if len(m) >= 2]
        merged.sort(key=lambda m: (-len(m), position[m[0]]))
        listed = [{"size": len(m), "kept": m[0], "members": [{"doc_id": k, "gold_group": gold[k]} for k in m],
                   "pure": len({gold[k] for k in m}) == 1 and gold[m[0]] is not None} for m in merged[:MAX_LISTED]]
        return {"total": len(merged), "clusters": listed}

    @staticmethod
    def _no_output_detail(items: list[ArtefactItem]) -> dict[str, Any]:
        none = [{"doc_id": i.doc_id, "state": (i.state if i.state is not State.OK else State.NO_PREDICTION).value,
                 "reason": i.reason} for i in items if i.state is not State.OK]
        return {"total": len(none), "documents": none[:MAX_LISTED],
                "note": "documents without parser output are in no predicted cluster"}

    @staticmethod
    def _corpus_metrics(output: Any) -> list[str]:
        """The corpus-level metrics of a pipeline: the main ones, and the sweep's when its step has a sweep."""
        return [s.name for s in METRICS if s.name != "dedup.excluded"
                and (output.sweep is not None or ".sweep_" not in s.name)]

    def _error_result(self, items: list[ArtefactItem], output: Any, msg: str) -> CorpusResult:
        """The detector failed: ``error`` rows over the documents it was given (those with parser output)."""
        result = CorpusResult(unreached=unreached_counts(items))
        corpus_metrics = [m for m in self._corpus_metrics(output) if ".sweep_" not in m]
        classes = sorted({i.doc_class for i in items})
        for cls in classes + [ALL]:
            n = sum(i.state is State.OK and (cls == ALL or i.doc_class == cls) for i in items)
            result.corpus_scores += [(cls, Score.missing(m, State.ERROR, msg), n) for m in corpus_metrics]
        result.doc_scores = [(i.doc_id, Score.missing("dedup.excluded", State.ERROR, msg) if i.state is State.OK
                              else Score.missing("dedup.excluded", _parse_state(i), i.reason or "the parser "
                                                 "produced no output")) for i in items]
        result.details = {"detector": {"kind": output.detector, "state": State.ERROR.value, "reason": msg}}
        return result
