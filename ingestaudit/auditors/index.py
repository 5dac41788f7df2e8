"""The ANN index auditor (stage ``index``): how much recall the approximate index costs against exact search, on the
pipeline's own vectors, at which setting, and why.

Per pipeline, over the chunk vectors of the run (or a user's ``vectors.npy``):

- **queries**: the labelled questions (embedded with the pipeline's embedder) plus a seeded sample of chunk vectors
  (``n_sample_queries``, default 200; ``numpy.random.default_rng(seed).choice`` without replacement). A chunk never
  counts as its own neighbour: for a sampled chunk both the exact and the ANN index are asked for ``k + 1`` results
  and the chunk's own row is removed by id (`ingestaudit.metrics.ann.drop_self`); its exact duplicates are other
  chunks and stay valid neighbours; its candidates are the other ``n - 1`` vectors.
- **ground truth**: exact search with the index's own metric (FAISS brute force, `exact_search`, batches of queries).
- **rows** (corpus level, per class and ``__all__``; label ``""`` = unfiltered queries, ``"filtered"`` = questions
  with a metadata filter, searched with a FAISS ``IDSelectorBatch`` inside the ANN search against exact search among
  the rows that pass): ``index.recall@k``, ``index.recall_tie_aware@k`` (seeded bootstrap over queries in
  ``detail["ci"]``), ``index.one_recall@r`` for ``k, r`` in ``k_list`` (Wilson over queries), and over the vectors
  ``index.duplicate_vectors`` and ``index.ip_dominated`` (inner-product metrics; Wilson over the sampled vectors).
  Rows are those of the pipeline's configured setting. A query's class is its question's class, or the class of the
  sampled chunk's document.
- **details**: ``settings``, ``queries`` (counts, sample, self-exclusion rule), ``norms``, ``cosine_unnormalised``
  (flag: cosine declared on vectors that are not unit norm), ``duplicates``, ``sweep`` (per efSearch or nprobe value:
  the three recalls per k, per class and filtered; the index's memory), ``operating_point`` (the cheapest setting
  whose recall@k at the largest k reaches ``target_recall`` on unfiltered queries, with a Wilson interval), and
  ``timings``: build seconds, per setting queries per second and p50/p95 single-threaded latency by nearest rank. Only
  ``timings`` is wall-clock (non-deterministic); everything else is identical for identical inputs and seed.

A user's own index (DESIGN.md "precomputed outputs"): ``DIR/<pipeline>/vectors.npy`` + ``vector_ids.json`` (ids
``"<doc id>#<chunk index>"``) replace the run's vectors, and ``ann_results.jsonl`` (``{"query": id, "results":
[ids]}``, ids of vectors; a query id is a question id or a vector id, the latter a self query) replaces the HNSW
index: the auditor computes the exact ground truth itself and audits the user's answers, so a production store is
audited without ingestaudit knowing it. Ask the store for ``k + 1`` results on self queries (the query's own id is
dropped).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ingestaudit.auditors.base import CorpusResult, PipelineAuditor, PipelineContext, PipelineResult
from ingestaudit.measurement import Score, State
from ingestaudit.metrics import ann
from ingestaudit.metrics.intervals import bootstrap_ratio, wilson
from ingestaudit.metrics.specs import MetricSpec, register
from ingestaudit.stages.index import (IndexInputError, IndexSettings, build_ann, check_vectors, exact_search,
                                      l2_normalise, timed_search)

ALL = "__all__"
FILTERED = "filtered"
DEFAULT_K = (1, 5, 10)
DEFAULT_EF_SWEEP = (16, 32, 64, 128, 256)
DEFAULT_TARGET = 0.95
DEFAULT_SAMPLE = 200
MAX_LISTED = 200
SELF_RULE = ("a chunk never counts as its own neighbour: for a sampled chunk vector, exact and ANN search return k+1 "
             "results and the chunk's own row is removed by id; exact duplicates of it are other chunks and stay "
             "valid neighbours; its candidates are the other n-1 vectors")
_SOURCES = ("FAISS benchmarks' intersection recall and 1-recall@R (faiss/benchs), ann-benchmarks' distance-threshold "
            "recall (Aumüller, Bernhardsson & Faithfull 2020)")


def _recall_spec(k: int) -> MetricSpec:
    return MetricSpec(
        f"index.recall@{k}",
        f"FAISS intersection recall: |ANN top-{k} ∩ exact top-{k}| / min({k}, n) per query, micro over queries "
        "(Σ hits / Σ min(k, n)); exact = brute-force search with the index's own metric; -1 padding dropped, an id "
        "repeated in one result list counts once; queries = labelled questions + a seeded sample of chunk vectors, "
        "and a chunk never counts as its own neighbour (its own id is removed; its exact duplicates stay); label "
        "'filtered': questions with a metadata filter, filtered ANN (FAISS IDSelector inside the search) against "
        "filtered exact search; corpus level, bootstrap over queries", True, ci="bootstrap", unit="results")


def _tie_spec(k: int) -> MetricSpec:
    return MetricSpec(
        f"index.recall_tie_aware@{k}",
        f"tie-aware recall: distinct ANN top-{k} ids whose TRUE score (recomputed exactly in float64, not the ANN's "
        f"reported one) ties or beats the {k}-th exact score within relative tolerance 1e-5 / min({k}, n) "
        "(ann-benchmarks' distance-threshold recall, Aumüller et al. 2020, with a 1e-5 relative tolerance): "
        "tie-equivalent ids and exact duplicates are not misses; >= index.recall@k; same queries and self-exclusion "
        "as index.recall@k (a chunk never counts as its own neighbour)", True, ci="bootstrap", unit="results")


def _one_spec(r: int) -> MetricSpec:
    return MetricSpec(
        f"index.one_recall@{r}",
        f"FAISS 1-recall@R at R={r}: queries whose exact nearest neighbour (exact search's first id) is among the "
        f"first {r} ANN results / queries; an equally close different id is a miss here (see recall_tie_aware); a "
        "chunk never counts as its own neighbour; corpus level, Wilson over queries", True, ci="wilson",
        unit="queries")


VECTOR_METRICS = (
    MetricSpec("index.duplicate_vectors", "vectors that repeat an earlier vector byte for byte (n - distinct rows), "
               "per class within the class; duplicates make 'the' nearest neighbour ambiguous (ann-benchmarks issue "
               "#519 credited ten copies of one neighbour as 100 %); corpus level count", False, high=None,
               unit="vectors"),
    MetricSpec("index.ip_dominated", "share of the sampled vectors v for which another vector u has <u, v> > <v, v> "
               "(exact; float64 where float32 is within rounding): v is never its own best inner-product match and "
               "parts of an HNSW graph built on inner product become unreachable whatever efSearch (milvus #51821); "
               "inner-product metrics (cosine, ip) only, 'skipped' for l2; Wilson over sampled vectors",
               False, ci="wilson", unit="vectors"),
)


def specs_for(k_list: Sequence[int]) -> tuple[MetricSpec, ...]:
    """The `MetricSpec`s of the recall metrics at every k of ``k_list`` (sorted), then the vector metrics."""
    ks = sorted(set(int(k) for k in k_list))
    return (tuple(_recall_spec(k) for k in ks) + tuple(_tie_spec(k) for k in ks) + tuple(_one_spec(k) for k in ks)
            + VECTOR_METRICS)


METRICS = specs_for(DEFAULT_K)
register(*METRICS)


class UserIndexError(ValueError):
    """A user's vectors or ANN results cannot be read; the message names the file (and line)."""


# --- reading a user's own index --------------------------------------------------------------------------------------

def read_user_vectors(folder: str | Path) -> tuple[np.ndarray, list[str]]:
    """Read a user's embeddings: ``folder/vectors.npy`` (a 2-D float array, ``numpy.load(allow_pickle=False)``) and
    ``folder/vector_ids.json`` (a JSON list of unique non-empty strings, one per row).

    Returns:
        ``(vectors float32 (n, d), ids)``.

    Raises:
        UserIndexError: a missing or unreadable file, a non-2-D or non-float array, NaN or infinity (first row named),
            ids that are not a list of unique non-empty strings, or a count that differs from the rows; the message
            names the file.
    """
    folder = Path(folder)
    vpath, ipath = folder / "vectors.npy", folder / "vector_ids.json"
    for p in (vpath, ipath):
        if not p.is_file():
            raise UserIndexError(f"{p}: missing (a user's vectors need vectors.npy and vector_ids.json)")
    try:
        raw = np.load(vpath, allow_pickle=False)
    except Exception as exc:
        raise UserIndexError(f"{vpath}: not a readable .npy array ({type(exc).__name__}: {exc})") from None
    if not isinstance(raw, np.ndarray) or not np.issubdtype(raw.dtype, np.floating):
        raise UserIndexError(f"{vpath}: expected a float array, got dtype {getattr(raw, 'dtype', type(raw))}")
    try:
        vectors = check_vectors(raw, name=str(vpath))
    except IndexInputError as exc:
        raise UserIndexError(str(exc)) from None
    try:
        ids = json.loads(ipath.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserIndexError(f"{ipath}: not readable JSON ({exc})") from None
    if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
        raise UserIndexError(f"{ipath}: expected a JSON list of non-empty strings, one id per row of vectors.npy")
    if len(ids) != vectors.shape[0]:
        raise UserIndexError(f"{ipath}: {len(ids)} ids for {vectors.shape[0]} rows of {vpath.name}")
    seen: set[str] = set()
    for pos, i in enumerate(ids):
        if i in seen:
            raise UserIndexError(f"{ipath}: id {i!r} repeated (position {pos})")
        seen.add(i)
    return vectors, ids


def read_ann_results(path: str | Path) -> dict[str, list[str]]:
    """Read a user's ANN answers, ``ann_results.jsonl``: one JSON object per line, ``{"query": str, "results":
    [str, ...]}`` (result ids best first, as the store returned them). Blank lines are skipped.

    Returns:
        ``query id -> result ids``, file order.

    Raises:
        UserIndexError: unreadable file, invalid JSON, a line that is not such an object (missing or unknown key,
            wrong types), or a query repeated; the message names the file and the line number (1-based).
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserIndexError(f"{path}: unreadable ({exc})") from None
    out: dict[str, list[str]] = {}
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path} line {no}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserIndexError(f"{where}: invalid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise UserIndexError(f"{where}: expected an object {{\"query\": id, \"results\": [ids]}}")
        extra = set(obj) - {"query", "results"}
        if extra:
            raise UserIndexError(f"{where}: unknown key(s) {sorted(extra)}; expected 'query' and 'results'")
        q, res = obj.get("query"), obj.get("results")
        if not isinstance(q, str) or not q:
            raise UserIndexError(f"{where}: 'query' must be a non-empty string")
        if not isinstance(res, list) or not all(isinstance(r, str) for r in res):
            raise UserIndexError(f"{where}: 'results' must be a list of id strings")
        if q in out:
            raise UserIndexError(f"{where}: query {q!r} repeated")
        out[q] = res
    return out


# --- the audit -------------------------------------------------------------------------------------------------------

@dataclass
class _Queries:
    """Every query of one audit, in order: sampled chunk rows first, then questions."""

    vectors: np.ndarray  # (m, d) float32, in the index's space
    keys: list[str]  # chunk id or question id
    classes: list[str]
    self_rows: np.ndarray  # (m,) int64; -1 for questions
    allowed: list[np.ndarray | None]  # sorted unique rows, or None (no filter)
    ncand: np.ndarray  # (m,) candidates per query

    @property
    def labels(self) -> list[str]:
        return [FILTERED if a is not None else "" for a in self.allowed]


@dataclass
class _Truth:
    ids: np.ndarray  # (m, kmax) exact ids, -1 padded
    true: np.ndarray  # (m, kmax) recomputed scores of ids


def _check_k_list(k_list: Sequence[int]) -> tuple[int, ...]:
    ks = []
    for k in k_list:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k_list must hold integers >= 1, got {k!r}")
        ks.append(int(k))
    if not ks:
        raise ValueError("k_list is empty")
    return tuple(sorted(set(ks)))


def _ci(interval: Any) -> dict[str, Any] | None:
    return None if interval is None else {"low": interval.low, "high": interval.high, "method": interval.method}


def _exact(base: np.ndarray, q: _Queries, kmax: int, metric: str) -> _Truth:
    m = q.vectors.shape[0]
    ids = np.full((m, kmax), -1, dtype=np.int64)
    selfq = np.flatnonzero((q.self_rows >= 0) & np.array([a is None for a in q.allowed], dtype=bool))
    plain = np.flatnonzero((q.self_rows < 0) & np.array([a is None for a in q.allowed], dtype=bool))
    if selfq.size:
        _, i_ = exact_search(base, q.vectors[selfq], kmax + 1, metric)
        ids[selfq] = ann.drop_self(i_, q.self_rows[selfq], kmax)
    if plain.size:
        _, ids[plain] = exact_search(base, q.vectors[plain], kmax, metric)
    for j, a in enumerate(q.allowed):
        if a is not None:
            _, i_ = exact_search(base, q.vectors[j:j + 1], kmax + (q.self_rows[j] >= 0), metric, allowed=a)
            ids[j] = ann.drop_self(i_, q.self_rows[j:j + 1], kmax)[0]
    return _Truth(ids, ann.true_scores(base, q.vectors, ids, metric))


def _clean_answers(raw: np.ndarray, q: _Queries, kmax: int) -> tuple[np.ndarray, int]:
    """Self rows dropped, cut to kmax, ids outside a query's filter replaced by -1 (a user's store may return them);
    returns the cleaned ids and how many ids violated a filter."""
    out = ann.drop_self(raw, np.where(q.self_rows >= 0, q.self_rows, -2), kmax)
    violations = 0
    for j, a in enumerate(q.allowed):
        if a is not None:
            row = out[j]
            bad = (row >= 0) & ~np.isin(row, a)
            violations += int(bad.sum())
            row[bad] = -1
    return out, violations


@dataclass
class _Scored:
    """Per-query counts of one ANN answer set, for every k."""

    hits: dict[int, np.ndarray]
    tie: dict[int, np.ndarray]
    one: dict[int, np.ndarray]
    den: dict[int, np.ndarray]
    valid: np.ndarray  # (m,) queries with at least one candidate


def _score(base: np.ndarray, q: _Queries, truth: _Truth, ann_ids: np.ndarray, ks: tuple[int, ...], metric: str,
           rtol: float) -> _Scored:
    hic = metric != "l2"
    ann_true = ann.true_scores(base, q.vectors, ann_ids, metric)
    valid = q.ncand > 0
    out = _Scored({}, {}, {}, {}, valid)
    for k in ks:
        out.hits[k] = ann.intersection_hits(ann_ids, truth.ids, k)
        kth = ann.kth_scores(truth.true, truth.ids, k, higher_is_closer=hic)
        out.tie[k] = ann.tie_aware_hits(ann_ids, ann_true, kth, k, higher_is_closer=hic, rtol=rtol)
        out.den[k] = ann.denominators(k, q.ncand, len(q.keys))
        one = np.zeros(len(q.keys))
        if valid.any():
            one[valid] = ann.one_recall_at(ann_ids[valid], truth.ids[valid, 0], k)
        out.one[k] = one
    return out


def _sums(s: _Scored, mask: np.ndarray, ks: tuple[int, ...]) -> dict[str, Any]:
    m = mask & s.valid
    cell: dict[str, Any] = {"queries": int(m.sum())}
    for k in ks:
        den = int(s.den[k][m].sum())
        for name, arr in ((f"recall@{k}", s.hits[k]), (f"recall_tie_aware@{k}", np.minimum(s.tie[k], s.den[k]))):
            num = int(arr[m].sum())
            cell[name] = {"value": num / den if den else None, "numerator": num, "denominator": den}
        num = int(s.one[k][m].sum())
        cell[f"one_recall@{k}"] = {"value": num / int(m.sum()) if m.any() else None, "numerator": num,
                                   "denominator": int(m.sum())}
    return cell


def _recall_rows(s: _Scored, q: _Queries, ks: tuple[int, ...], seed: int, setting: str
                 ) -> list[tuple[str, Score, int]]:
    rows: list[tuple[str, Score, int]] = []
    labels = np.array(q.labels)
    classes = np.array(q.classes)
    is_self = q.self_rows >= 0
    for label in ("", FILTERED):
        in_label = labels == label
        if not in_label.any():
            continue
        for cls in sorted(set(classes[in_label].tolist())) + [ALL]:
            mask = in_label & ((classes == cls) if cls != ALL else True)
            m = mask & s.valid
            n_q = int(mask.sum())
            base_detail = {"setting": setting, "queries": int(m.sum()), "sampled_chunks": int((m & is_self).sum()),
                           "questions": int((m & ~is_self).sum()),
                           "no_candidates": int((mask & ~s.valid).sum())}
            for k in ks:
                for metric, arr in ((f"index.recall@{k}", s.hits[k]),
                                    (f"index.recall_tie_aware@{k}", np.minimum(s.tie[k], s.den[k]))):
                    if not m.any():
                        rows.append((cls, Score.missing(metric, State.NO_REFERENCE, "no query with a candidate",
                                                        label=label), n_q))
                        continue
                    num, den = arr[m].astype(float), s.den[k][m].astype(float)
                    detail = {**base_detail, "macro": float(np.mean(num / den)),
                              "ci": _ci(bootstrap_ratio(num, den, seed=seed))}
                    rows.append((cls, Score.ratio(metric, float(num.sum()), float(den.sum()), label=label,
                                                  detail=detail), n_q))
                metric = f"index.one_recall@{k}"
                if not m.any():
                    rows.append((cls, Score.missing(metric, State.NO_REFERENCE, "no query with a candidate",
                                                    label=label), n_q))
                    continue
                hits = int(s.one[k][m].sum())
                rows.append((cls, Score.ratio(metric, hits, int(m.sum()), label=label,
                                              detail={**base_detail, "ci": _ci(wilson(hits, int(m.sum())))}), n_q))
    return rows


def _vector_rows(raw: np.ndarray, indexed: np.ndarray, classes: list[str], sample: np.ndarray, metric: str
                 ) -> tuple[list[tuple[str, Score, int]], dict[str, Any]]:
    """Duplicates count on the vectors as given (``raw``); inner-product domination on the vectors as indexed."""
    rows: list[tuple[str, Score, int]] = []
    cls_arr = np.array(classes)
    uniq = sorted(set(classes))
    dup_detail = []
    groups = ann.vector_groups(raw)
    for cls in uniq + [ALL]:
        rows_of = np.flatnonzero(cls_arr == cls) if cls != ALL else np.arange(len(classes))
        dups = int(rows_of.size - np.unique(groups[rows_of]).size)  # within the class
        rows.append((cls, Score("index.duplicate_vectors", float(dups), detail={"vectors": int(rows_of.size)}),
                     int(rows_of.size)))
        dup_detail.append({"class": cls, "duplicates": dups, "vectors": int(rows_of.size)})
    if metric == "l2":
        for cls in uniq + [ALL]:
            rows.append((cls, Score.missing("index.ip_dominated", State.SKIPPED,
                                            "l2 index: inner-product domination does not apply"),
                         int(sample.size)))
        return rows, {"duplicates": dup_detail}
    flags = ann.ip_dominated_flags(indexed, sample) if sample.size else np.zeros(0, dtype=bool)
    sample_cls = cls_arr[sample] if sample.size else np.array([], dtype=str)
    examples = [int(r) for r in sample[flags][:20]]
    for cls in uniq + [ALL]:
        mask = (sample_cls == cls) if cls != ALL else np.ones(sample.size, dtype=bool)
        n_s = int(mask.sum())
        if n_s == 0:
            rows.append((cls, Score.missing("index.ip_dominated", State.NO_REFERENCE, "no sampled vector"), 0))
            continue
        hits = int(flags[mask].sum())
        rows.append((cls, Score.ratio("index.ip_dominated", hits, n_s,
                                      detail={"ci": _ci(wilson(hits, n_s)), "sampled": n_s}), n_s))
    return rows, {"duplicates": dup_detail, "ip_dominated_rows": examples}


def _default_sweep(settings: IndexSettings, n: int) -> tuple[int, ...]:
    if settings.kind == "hnsw":
        return DEFAULT_EF_SWEEP
    if settings.kind == "ivf":
        nlist = settings.resolved_nlist(n)
        vals = {1 << i for i in range(nlist.bit_length()) if (1 << i) <= nlist} | {nlist}
        return tuple(sorted(vals))
    return ()


def _timing(lat: np.ndarray) -> dict[str, Any]:
    lat = lat[np.isfinite(lat)]
    if lat.size == 0:
        return {"queries": 0}
    total = float(lat.sum())
    return {"queries": int(lat.size), "qps": (lat.size / (total / 1000.0)) if total > 0 else None,
            "p50_ms": ann.nearest_rank(lat, 50), "p95_ms": ann.nearest_rank(lat, 95), "mean_ms": float(lat.mean())}


def _search_all(index: Any, q: _Queries, kmax: int, params: Mapping[str, int] | None
                ) -> tuple[np.ndarray, np.ndarray]:
    """Every query, one at a time single-threaded: (raw ids (m, kmax + 1), latencies ms)."""
    m = len(q.keys)
    raw = np.full((m, kmax + 1), -1, dtype=np.int64)
    lat = np.zeros(m)
    if m == 0:
        return raw, lat
    selfq = q.self_rows >= 0
    for mask, kk in ((selfq, kmax + 1), (~selfq, kmax)):
        idx = np.flatnonzero(mask)
        if idx.size:
            _, i_, l_ = timed_search(index, q.vectors[idx], kk, allowed=[q.allowed[j] for j in idx], params=params)
            raw[idx, :kk] = i_
            lat[idx] = l_
    return raw, lat


def _best(cells: list[dict[str, Any]], kmax: int, target: float) -> tuple[dict[str, Any] | None, str]:
    key = f"recall@{kmax}"
    ok = [c for c in cells if c["unfiltered"][key]["value"] is not None]
    fit = [c for c in ok if c["unfiltered"][key]["value"] >= target - 1e-12]
    if not fit:
        top = max(ok, key=lambda c: c["unfiltered"][key]["value"], default=None)
        why = (f"no setting reaches recall@{kmax} >= {target:g}" +
               (f" (best: {top['unfiltered'][key]['value']:.4f} at {top['label']})" if top else
                " (no query with a candidate)"))
        return None, why
    return fit[0], f"cheapest setting (smallest {fit[0]['knob']}) with recall@{kmax} >= {target:g}"


def audit_vectors(vectors: np.ndarray, chunk_ids: Sequence[str], chunk_classes: Sequence[str], *,
                  queries: np.ndarray | None = None, query_ids: Sequence[str] | None = None,
                  query_classes: Sequence[str] | None = None,
                  query_allowed: Sequence[np.ndarray | None] | None = None,
                  declared_metric: str | None = None, normalised: bool = True,
                  settings: IndexSettings | None = None, k_list: Sequence[int] = DEFAULT_K,
                  sweep: Sequence[int] | None = None, target_recall: float = DEFAULT_TARGET,
                  n_sample_queries: int = DEFAULT_SAMPLE, seed: int = 0,
                  ann_results: Mapping[str, Sequence[str]] | None = None,
                  rtol: float = ann.DEFAULT_RTOL) -> CorpusResult:
    """Audit an approximate index over ``vectors`` against exact search (see the module docstring).

    Args:
        vectors: ``(n, d)`` chunk vectors as the pipeline produced them.
        chunk_ids: ``n`` unique ids (``"<doc id>#<chunk index>"`` in a run).
        chunk_classes: ``n`` classes (the chunk's document class).
        queries: ``(m, d)`` labelled-question vectors, or None.
        query_ids: ``m`` question ids (default ``"q0".."q{m-1}"``); used to match ``ann_results``.
        query_classes: ``m`` classes (required when ``queries`` is given).
        query_allowed: ``m`` entries: the chunk rows a question's filter lets through (``np.ndarray`` of ints), or
            None (no filter). Filtered questions give the ``"filtered"`` rows.
        declared_metric: the metric the pipeline claims (``cosine`` | ``ip`` | ``l2``); default ``settings.metric``.
            The index and the exact ground truth use it (cosine = inner product).
        normalised: True when the pipeline L2-normalises vectors (and questions) before indexing; the auditor then
            does it too. False: vectors are indexed as given, and declaring cosine on vectors that are not unit norm
            (``| ||v|| - 1 | > 1e-3`` for some v) sets ``details["cosine_unnormalised"]["flag"]``.
        settings: the index under audit (default `IndexSettings()`: HNSW M=32, efConstruction 40, efSearch 64).
        k_list: cut-offs for recall@k, tie-aware recall@k and 1-recall@r.
        sweep: efSearch values (HNSW, default 16..256) or nprobe values (IVF, default 1, 2, 4, ... nlist); ``()``
            for none.
        target_recall: the operating point's recall@k target (k = max of ``k_list``).
        n_sample_queries: chunk vectors drawn as self queries (seeded); 0 for none.
        seed: seeds the sample and the bootstrap intervals (the index uses ``settings.seed``).
        ann_results: a user's answers (`read_ann_results`) instead of an index: query id (question id, or chunk id
            for a self query) -> result chunk ids. No index is built, no sweep runs; a question absent from it is
            answered with nothing (recall 0, counted in ``details["queries"]["unanswered"]``).
        rtol: relative tolerance of tie-aware recall.

    Returns:
        A `CorpusResult` with ``corpus_scores`` and ``details`` (``details["timings"]`` is the only wall-clock part).

    Raises:
        IndexInputError: NaN/inf vectors or queries, dimension mismatch, empty base.
        ValueError: lengths that do not match, repeated chunk ids, bad k_list / target / sample size, an unknown
            metric or kind, an ``ann_results`` query or result id that names nothing.
    """
    ks = _check_k_list(k_list)
    kmax = ks[-1]
    settings = settings or IndexSettings()
    metric = declared_metric or settings.metric
    settings = replace(settings, metric=metric)
    if not 0 < target_recall <= 1:
        raise ValueError(f"target_recall must be in (0, 1], got {target_recall}")
    if isinstance(n_sample_queries, bool) or int(n_sample_queries) != n_sample_queries or n_sample_queries < 0:
        raise ValueError(f"n_sample_queries must be an integer >= 0, got {n_sample_queries!r}")
    register(*specs_for(ks))

    raw = check_vectors(vectors)
    n, d = raw.shape
    chunk_ids, chunk_classes = list(chunk_ids), list(chunk_classes)
    if len(chunk_ids) != n or len(chunk_classes) != n:
        raise ValueError(f"{n} vectors but {len(chunk_ids)} chunk ids and {len(chunk_classes)} chunk classes")
    row_of = {c: i for i, c in enumerate(chunk_ids)}
    if len(row_of) != n:
        raise ValueError("chunk ids must be unique")

    raw_norms = ann.norm_stats(raw)
    indexed = raw
    if normalised and not (abs(raw_norms["min"] - 1) <= 1e-6 and abs(raw_norms["max"] - 1) <= 1e-6):
        indexed = l2_normalise(raw)
    idx_norms = raw_norms if indexed is raw else ann.norm_stats(indexed)

    # -- queries
    q_vecs: list[np.ndarray] = []
    keys: list[str] = []
    classes: list[str] = []
    self_rows: list[int] = []
    allowed: list[np.ndarray | None] = []
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.choice(n, size=min(int(n_sample_queries), n), replace=False)).astype(np.int64)
    if queries is not None:
        qv = check_vectors(queries, name="queries", dim=d, allow_empty=True)
        m_q = qv.shape[0]
        q_ids = list(query_ids) if query_ids is not None else [f"q{i}" for i in range(m_q)]
        q_cls = list(query_classes) if query_classes is not None else None
        q_all = list(query_allowed) if query_allowed is not None else [None] * m_q
        if q_cls is None or len(q_ids) != m_q or len(q_cls) != m_q or len(q_all) != m_q:
            raise ValueError(f"{m_q} queries need as many query_ids, query_classes and query_allowed entries")
        if len(set(q_ids)) != m_q:
            raise ValueError("query ids must be unique")
        if normalised:
            qv = l2_normalise(qv)
    else:
        qv, q_ids, q_cls, q_all = np.zeros((0, d), np.float32), [], [], []

    unanswered: list[str] = []
    if ann_results is not None:
        # the user's answers decide which queries exist: every question, plus the chunk ids they queried with
        q_index = {qid: i for i, qid in enumerate(q_ids)}
        self_keys = []
        for key in ann_results:
            if key in q_index:
                continue
            if key not in row_of:
                raise ValueError(f"ann_results: query {key!r} is neither a question id nor a vector id")
            self_keys.append(key)
        sample = np.array(sorted(row_of[k] for k in self_keys), dtype=np.int64)
        unanswered = [qid for qid in q_ids if qid not in ann_results]
    for r in sample:
        q_vecs.append(indexed[r])
        keys.append(chunk_ids[r])
        classes.append(chunk_classes[r])
        self_rows.append(int(r))
        allowed.append(None)
    for i in range(len(q_ids)):
        q_vecs.append(qv[i])
        keys.append(q_ids[i])
        classes.append(str(q_cls[i]))
        self_rows.append(-1)
        a = q_all[i]
        if a is not None:
            a = np.unique(np.asarray(a, dtype=np.int64).reshape(-1))
            if a.size and (a.min() < 0 or a.max() >= n):
                raise ValueError(f"query {q_ids[i]!r}: allowed rows outside [0, {n})")
        allowed.append(a)
    srows = np.array(self_rows, dtype=np.int64)
    ncand = np.array([(n - 1 if s >= 0 else n) if a is None else int(a.size) for s, a in zip(self_rows, allowed)],
                     dtype=np.int64)
    qs = _Queries(np.stack(q_vecs).astype(np.float32) if q_vecs else np.zeros((0, d), np.float32), keys, classes,
                  srows, allowed, ncand)

    # -- facts about the vectors (before any index exists, so that their scratch memory is not added to it)
    vec_rows, vec_detail = _vector_rows(raw, indexed, chunk_classes, sample if sample.size else
                                        np.sort(rng.choice(n, size=min(DEFAULT_SAMPLE, n), replace=False)), metric)

    # -- exact ground truth
    truth = _exact(indexed, qs, kmax, metric) if keys else _Truth(np.zeros((0, kmax), np.int64),
                                                                    np.zeros((0, kmax)))
    details: dict[str, Any] = {}
    timings: dict[str, Any] = {}
    labels = np.array(qs.labels)
    unfiltered = labels == ""
    filtered = labels == FILTERED
    class_arr = np.array(classes)
    class_names = sorted(set(classes))

    def cell_of(scored: _Scored, label: str, knob: str | None, value: int | None, memory: int | None
                ) -> dict[str, Any]:
        cell: dict[str, Any] = {"label": label, "knob": knob, "value": value, "memory_bytes": memory,
                                "unfiltered": _sums(scored, unfiltered, ks),
                                "per_class": [{"class": c, **_sums(scored, unfiltered & (class_arr == c), ks)}
                                              for c in class_names if (unfiltered & (class_arr == c)).any()]}
        if filtered.any():
            cell["filtered"] = _sums(scored, filtered, ks)
        return cell

    if ann_results is not None:
        raw_ids = np.full((len(keys), kmax + 1), -1, dtype=np.int64)
        for j, key in enumerate(keys):
            res = ann_results.get(key, [])
            for pos, rid in enumerate(res[:kmax + 1]):
                if rid not in row_of:
                    raise ValueError(f"ann_results: query {key!r} returns {rid!r}, which is not a vector id")
                raw_ids[j, pos] = row_of[rid]
        ann_ids, violations = _clean_answers(raw_ids, qs, kmax)
        scored = _score(indexed, qs, truth, ann_ids, ks, metric, rtol)
        setting_label = "user ann_results"
        details["source"] = {"kind": "user ann_results", "queries_answered": len(ann_results),
                             "filter_violations": violations,
                             "note": "ids a filtered question's answer holds outside its filter count as misses"}
        details["sweep"] = {"knob": None, "cells": [cell_of(scored, setting_label, None, None, None)]}
    else:
        index, build_s, memory = build_ann(indexed, settings)
        knob = settings.knob
        values = tuple(sweep) if sweep is not None else _default_sweep(settings, n)
        if knob == "nprobe":
            values = tuple(sorted({min(int(v), settings.resolved_nlist(n)) for v in values}))
        elif knob is not None:
            values = tuple(sorted({int(v) for v in values}))
        else:
            values = ()
        configured = getattr(settings, knob) if knob else None
        if knob == "nprobe":
            configured = min(configured, settings.resolved_nlist(n))
        runs: dict[int | None, tuple[_Scored, np.ndarray, int]] = {}
        for v in sorted(set(values) | {configured}, key=lambda x: (x is None, x or 0)):
            params = {knob: v} if knob else None
            raw_ids, lat = _search_all(index, qs, kmax, params)
            ann_ids, violations = _clean_answers(raw_ids, qs, kmax)
            runs[v] = (_score(indexed, qs, truth, ann_ids, ks, metric, rtol), lat, violations)
        del index  # everything below works on the answers; free the index before the intervals' scratch memory
        cells = [cell_of(runs[v][0], f"{knob}={v}", knob, v, memory) for v in values]
        best, reason = _best(cells, kmax, target_recall) if cells else (
            None, "no sweep ran (a flat index, or an empty sweep list): the configured setting is the only one")
        details["sweep"] = {"knob": knob, "values": list(values), "index": settings.options(),
                            "nlist": settings.resolved_nlist(n) if settings.kind == "ivf" else None,
                            "memory_bytes": memory, "cells": cells,
                            "note": "one index is built; the sweep varies a search-time parameter only"}
        if best is not None:
            rk = best["unfiltered"][f"recall@{kmax}"]
            mask = unfiltered & runs[best["value"]][0].valid
            sc = runs[best["value"]][0]
            boot = bootstrap_ratio(sc.hits[kmax][mask].astype(float), sc.den[kmax][mask].astype(float), seed=seed)
            details["operating_point"] = {
                "target": target_recall, "k": kmax, "knob": knob, "value": best["value"], "label": best["label"],
                "recall": rk, "reason": reason,
                "ci": {**(_ci(wilson(rk["numerator"], rk["denominator"])) or {}),
                       "unit": "result slots (hits of min(k, n) per query, pooled over queries)"},
                "bootstrap": _ci(boot)}
        else:
            details["operating_point"] = {"target": target_recall, "k": kmax, "knob": knob, "value": None,
                                          "reason": reason}
        scored = runs[configured][0]
        setting_label = f"{knob}={configured}" if knob else settings.kind
        timings = {"build_seconds": build_s, "build_threads": settings.build_threads,
                   "search_threads": 1, "cells": [{"label": f"{knob}={v}", **_timing(runs[v][1])} for v in values],
                   "configured": {"label": setting_label, **_timing(runs[configured][1])},
                   "note": "wall clock, single-threaded per-query search; percentiles by nearest rank"}
        timings["frontier"] = _frontier(cells, timings["cells"], kmax)
        details["source"] = {"kind": f"faiss {settings.kind}", "configured": setting_label,
                             "filter_violations": runs[configured][2]}

    rows = (_recall_rows(scored, qs, ks, seed, setting_label) if keys else []) + vec_rows

    flag = metric == "cosine" and idx_norms["unit_share"] < 1.0
    cos: dict[str, Any] = {"flag": bool(flag), "declared_metric": metric, "normalised": bool(normalised),
                           "unit_share": idx_norms["unit_share"], "zero_vectors": idx_norms["zero"],
                           "min_norm": idx_norms["min"],
                           "max_norm": idx_norms["max"],
                           "note": ("FAISS has no cosine: inner product on vectors that are not unit norm ranks by "
                                    "length as much as by angle (FAISS #812, #1119)")}
    if flag and sample.size:
        unit = l2_normalise(raw)
        sq = _Queries(unit[sample], [chunk_ids[r] for r in sample], [chunk_classes[r] for r in sample], sample,
                      [None] * sample.size, np.full(sample.size, n - 1))
        ip_truth = truth.ids[:sample.size]  # self queries come first, searched on the indexed vectors
        cos_truth = _exact(unit, sq, kmax, "cosine").ids
        hits = ann.intersection_hits(ip_truth, cos_truth, kmax)
        den = ann.denominators(kmax, n - 1, sample.size)
        if den.sum():
            cos[f"ip_vs_cosine_recall@{kmax}"] = float(hits.sum() / den.sum())
            cos["ip_vs_cosine_note"] = (f"share of the exact cosine top-{kmax} that exact inner product on the "
                                        "unnormalised vectors also returns (sampled chunk queries)")
    details["cosine_unnormalised"] = cos
    details["norms"] = {"vectors": raw_norms, "indexed": idx_norms}
    details.update(vec_detail)
    details["settings"] = {"index": settings.options(), "declared_metric": metric, "normalised": bool(normalised),
                           "k_list": list(ks), "target_recall": target_recall, "n_sample_queries": n_sample_queries,
                           "seed": seed, "tie_rtol": rtol,
                           "ground_truth": "exact brute force (faiss.knn) with the index's own metric, batches of "
                                           "queries", "self_exclusion": SELF_RULE, "definitions": _SOURCES}
    per_class = [{"class": c, "queries": int((class_arr == c).sum()),
                  "sampled_chunks": int(((class_arr == c) & (srows >= 0)).sum())} for c in class_names]
    details["queries"] = {"total": len(keys), "sampled_chunks": int((srows >= 0).sum()),
                          "questions": int((srows < 0).sum()), "filtered": int(filtered.sum()),
                          "no_candidates": [k for k, c in zip(keys, ncand) if c == 0][:MAX_LISTED],
                          "unanswered": unanswered[:MAX_LISTED], "unanswered_total": len(unanswered),
                          "sample_seed": seed, "per_class": per_class, "self_exclusion": SELF_RULE}
    if timings:
        details["timings"] = timings
    return CorpusResult(corpus_scores=rows, details=details)


def _frontier(cells: list[dict[str, Any]], times: list[dict[str, Any]], kmax: int) -> list[dict[str, Any]]:
    """Settings not dominated in (recall@kmax on unfiltered queries, qps): no other setting is at least as good in
    both and better in one."""
    pts = []
    for c, t in zip(cells, times):
        r = c["unfiltered"][f"recall@{kmax}"]["value"]
        if r is not None and t.get("qps") is not None:
            pts.append((c["label"], r, t["qps"]))
    front = [p for p in pts if not any((o[1] >= p[1] and o[2] >= p[2]) and (o[1] > p[1] or o[2] > p[2])
                                       for o in pts)]
    return [{"label": lbl, f"recall@{kmax}": r, "qps": q} for lbl, r, q in front]


# --- the runner's entry point ----------------------------------------------------------------------------------------

class IndexAuditor(PipelineAuditor):
    """Audits one pipeline's ANN index against exact search (see the module docstring).

    Args:
        k_list: cut-offs (default 1, 5, 10).
        ef_search_sweep: efSearch values for HNSW (default 16, 32, 64, 128, 256).
        nprobe_sweep: nprobe values for IVF (default 1, 2, 4, ... nlist).
        target_recall: operating point target (default 0.95).
        n_sample_queries: sampled chunk queries (default 200).
        use_user_results: audit ``DIR/<pipeline>/vectors.npy`` and ``ann_results.jsonl`` when present (default on).
        seed: the run's seed by default.

    The pipeline's index stage gives the index: its implementation (``hnsw``, ``ivf``, ``flat``) and options
    (`IndexSettings` fields, plus ``normalise``: default True, the pipeline L2-normalises before indexing).
    """

    stage = "index"
    metrics = METRICS

    def __init__(self, k_list: Sequence[int] = DEFAULT_K, ef_search_sweep: Sequence[int] = DEFAULT_EF_SWEEP,
                 nprobe_sweep: Sequence[int] | None = None, target_recall: float = DEFAULT_TARGET,
                 n_sample_queries: int = DEFAULT_SAMPLE, use_user_results: bool = True, seed: int = 0):
        self.k_list = _check_k_list(k_list)
        self.ef_search_sweep = tuple(int(v) for v in ef_search_sweep)
        self.nprobe_sweep = None if nprobe_sweep is None else tuple(int(v) for v in nprobe_sweep)
        if not 0 < target_recall <= 1:
            raise ValueError(f"target_recall must be in (0, 1], got {target_recall}")
        self.target_recall = float(target_recall)
        self.n_sample_queries = int(n_sample_queries)
        self.use_user_results = bool(use_user_results)
        self.seed = int(seed)
        register(*specs_for(self.k_list))

    def options(self) -> dict[str, Any]:
        return {"k_list": list(self.k_list), "ef_search_sweep": list(self.ef_search_sweep),
                "nprobe_sweep": None if self.nprobe_sweep is None else list(self.nprobe_sweep),
                "target_recall": self.target_recall, "n_sample_queries": self.n_sample_queries,
                "use_user_results": self.use_user_results, "seed": self.seed, "tie_rtol": ann.DEFAULT_RTOL}

    def metric_names(self) -> list[str]:
        """Every metric this auditor writes, for its k_list."""
        return [s.name for s in specs_for(self.k_list)]

    def audit_pipeline(self, ctx: PipelineContext) -> PipelineResult:
        """Audit one pipeline; never raises for bad stage output (``error`` rows with the message instead)."""
        try:
            inputs = self._inputs(ctx)
            if isinstance(inputs, str):
                return self._missing(State.NO_PREDICTION, inputs)
            result = audit_vectors(**inputs)
        except Exception as exc:
            return self._missing(State.ERROR, f"{type(exc).__name__}: {exc}")
        details = dict(result.details)
        timings = details.pop("timings", {})
        return PipelineResult(corpus_scores=result.corpus_scores, details=details, timings=timings)

    def _missing(self, state: State, reason: str) -> PipelineResult:
        rows = [(ALL, Score.missing(m, state, reason), 0) for m in self.metric_names()]
        return PipelineResult(corpus_scores=rows, details={"state": {"state": state.value, "reason": reason}})

    def _inputs(self, ctx: PipelineContext) -> dict[str, Any] | str:
        """audit_vectors keyword arguments for ``ctx``, or the reason there is nothing to audit."""
        from ingestaudit.questions import filter_passes

        choice = ctx.pipeline.stage("index")
        opts = choice.kwargs()
        normalise = opts.pop("normalise", True)
        settings = IndexSettings.from_options(choice.use, {"seed": ctx.seed, **opts})
        docs = [d for d in ctx.docs if d.state is State.OK and d.vectors is not None and len(d.texts)]
        meta: dict[str, dict[str, Any]] = {}
        doc_class = {d.doc_id: d.doc_class for d in ctx.docs}
        ids: list[str] = []
        parts = []
        for d in docs:
            for i in range(len(d.texts)):
                cid = f"{d.doc_id}#{i}"
                ids.append(cid)
                meta[cid] = d.metadata[i] if i < len(d.metadata) else {}
            parts.append(np.asarray(d.vectors))
        folder = ctx.pipeline.folder if self.use_user_results else None
        ann_results = None
        source = "the chunk vectors"
        if folder is not None and (Path(folder) / "vectors.npy").exists():
            source = str(Path(folder) / "vectors.npy")
            vectors, ids = read_user_vectors(folder)
            for cid in ids:
                if cid not in meta:
                    raise UserIndexError(f"{Path(folder) / 'vector_ids.json'}: id {cid!r} does not match a chunk of "
                                         "the run (expected '<doc id>#<chunk index>')")
            if (Path(folder) / "ann_results.jsonl").exists():
                ann_results = read_ann_results(Path(folder) / "ann_results.jsonl")
        elif parts:
            vectors = np.concatenate(parts)
        else:
            return "no chunk vectors for this pipeline (no document has embedded chunks)"
        classes = [doc_class.get(c.rsplit("#", 1)[0], c.split("/", 1)[0]) for c in ids]
        kw: dict[str, Any] = {}
        if ctx.questions and ctx.embed_questions is not None:
            qv = np.asarray(ctx.embed_questions([q.question for q in ctx.questions]), dtype=np.float32)
            if qv.ndim != 2 or qv.shape[1] != vectors.shape[1]:
                raise IndexInputError(f"{source}: dimension {vectors.shape[1]} does not match the embedder's "
                                      f"question vectors ({qv.shape[-1] if qv.ndim else '?'})")
            metas = [meta[c] for c in ids]
            allowed = [None if not q.filter else
                       np.array([r for r, md in enumerate(metas) if filter_passes(q.filter, md)], dtype=np.int64)
                       for q in ctx.questions]
            kw = {"queries": qv, "query_ids": [q.id for q in ctx.questions],
                  "query_classes": [ctx.question_classes.get(q.id, "unclassified") for q in ctx.questions],
                  "query_allowed": allowed}
        sweep = self.ef_search_sweep if settings.kind == "hnsw" else self.nprobe_sweep
        return {"vectors": vectors, "chunk_ids": ids, "chunk_classes": classes, **kw,
                "declared_metric": settings.metric, "normalised": bool(normalise), "settings": settings,
                "k_list": self.k_list, "sweep": sweep, "target_recall": self.target_recall,
                "n_sample_queries": self.n_sample_queries, "seed": self.seed, "ann_results": ann_results}
