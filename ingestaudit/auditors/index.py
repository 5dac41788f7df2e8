"""The ANN index auditor (stage ``index``): how much recall the approximate index costs against exact search, on the
pipeline's own vectors, at which setting, and why.

Per pipeline, over the chunk vectors of the run (or a user's ``vectors.npy``):

- **queries**: the labelled questions (embedded with the pipeline's embedder) plus a seeded sample of chunk vectors
  (``n_sample_queries``, default 200; ``numpy.random.default_rng(seed).choice`` without replacement). A chunk never
  counts as its own neighbour: for a sampled chunk both the exact and the ANN index are asked for ``k + 1`` results
  and the chunk's own row is removed by id (`ingestaudit.metrics.ann.drop_self`); its exact duplicates are other
  chunks and stay valid neighbours; its candidates are the other ``n - 1`` vectors. Without questions the sampled
  chunks are the only queries: the label-free corpus monitor (``ingestaudit run CORPUS --stage index``).
- **ground truth**: exact search with the index's own metric (FAISS brute force, the index step's ``knn``, batches
  of queries).
- **zero vectors**: a query whose neighbours are undefined is an ``error`` (left out of every recall, listed in
  ``details["queries"]["undefined"]`` and among the run's failures, each named): every query when every indexed
  vector is zero (every score ties, so any answer would score recall 1), and under cosine each zero query vector.
- **rows** (corpus level, per class and ``__all__``; label ``""`` = unfiltered queries, ``"filtered"`` = questions
  with a metadata filter and the sampled chunk queries under each sampled filter (below), searched with a FAISS
  ``IDSelectorBatch`` inside the ANN search against exact search among the rows that pass): ``index.recall@k``, ``index.recall_tie_aware@k`` (micro Σ hits / Σ min(k, n); seeded
  percentile bootstrap over queries in ``detail["ci"]``; ``detail["macro"]`` is the mean per-query recall),
  ``index.one_recall@r`` for ``k, r`` in ``k_list`` (Wilson over queries: one Bernoulli per query), and over the
  vectors ``index.duplicate_vectors`` and ``index.ip_dominated`` (inner-product metrics; Wilson over the sampled
  vectors). Rows are those of the pipeline's configured setting. A query's class is its question's class, or the
  class of the sampled chunk's document.
- **filtered recall** (graph indexes fail at low selectivity): besides the questions' own filters, a seeded sample of
  metadata filters (``n_sample_filters``, default 5, `sample_filters`: ``field = value`` pairs the chunks carry,
  drawn with ``numpy.random.default_rng(seed + 1)``, a filter passing every chunk left out) each applied to up to
  ``n_filter_queries`` (default 50) of the sampled chunk queries. ``details["filters"]`` lists every filter with its
  source (``question`` or ``sampled``), the chunks passing it, its selectivity (share passing) and the recall@k of its
  queries at the configured setting; for a sampled filter also the unfiltered recall@k of the same queries. The
  ``filtered`` rows' detail repeats the selectivities (min, median, max). Not with a user's ``ann_results.jsonl``.
- **details** (report.json, deterministic: identical for identical inputs and seed):
  ``settings``, ``queries`` (counts, sample, self-exclusion rule, questions without an answer), ``norms``,
  ``cosine_unnormalised`` (``flag``: cosine declared while some non-zero indexed vector is not unit norm; zero
  vectors are counted apart), ``duplicates``, ``sweep`` (``cells``: per efSearch or nprobe value the three recalls
  per k as ``{value, numerator, denominator, mean_per_query}``, per class and filtered, ``distances_per_query``: FAISS's
  count of distance computations, a deterministic cost), ``operating_point`` and ``frontier`` (below), and
  ``overview``: ``{"warnings": [str], "lines": [str]}``, the sentences the report views print (operating point with
  its interval, frontier, the cosine flag, zero vectors, unanswered questions, filter violations).
- **operating point**: the cheapest setting (smallest efSearch or nprobe) whose MEAN PER-QUERY recall@k at the
  largest k, over the unfiltered queries, reaches ``target_recall`` (default 0.95); its interval (``ci``) is a seeded
  percentile bootstrap over queries of that mean (1,000 resamples; the query is the sampling unit, not the result
  slot). The mean per-query recall equals the micro ``index.recall@k`` whenever every query has at least k
  candidates.
- **frontier** (report.json): the settings not dominated in (mean per-query recall@k, distance computations per
  query). The wall-clock frontier (recall against queries per second) is in ``timings``.
- **timings** (`PipelineResult.timings`, written to ``timings.json`` as ``timings[<pipeline>]["index"]``, never into
  report.json): ``build_seconds``, ``build_threads``, ``search_threads`` (1), ``cells``: one per sweep setting,
  ``{"label", "knob", "value", "queries", "qps", "p50_ms", "p95_ms", "mean_ms"}`` with ``label`` equal to the
  ``details["sweep"]["cells"][i]["label"]`` it times (single-threaded per-query search, wall clock, percentiles by
  nearest rank), ``configured`` (the same for the pipeline's own setting) and ``frontier``: the settings not dominated
  in (mean per-query recall@k, qps), ``{"label", "recall@k", "qps"}``. The index itself is built by the pipeline's
  index step, once for this audit and the retrieval audit alike (``timings[<pipeline>]["steps"]["index"]``).

A user's own index (DESIGN.md "precomputed outputs"): ``DIR/<pipeline>/vectors.npy`` + ``vector_ids.json`` (ids
``"<doc id>#<chunk index>"``, chunks of the run's chunker) replace the run's vectors, and ``ann_results.jsonl``
(``{"query": id, "results": [ids]}``, ids of vectors; a query id is a question id or a vector id, the latter a self
query) replaces the HNSW index: the auditor computes the exact ground truth itself and audits the user's answers, so
a production store is audited without ingestaudit knowing it (``ann_results.jsonl`` without ``vectors.npy`` is an
``error``, never ignored for the run's own index; so is any of these files that is not a regular file or is over
its ``[limits]`` size, read by `ingestaudit.inputs.read_input_bytes`). Ask the store for ``k + 1`` results on self
queries (the query's own id is dropped). A question absent from ``ann_results.jsonl`` is ``no_prediction``: left out of the
recall denominators and counted (``detail["no_prediction"]`` of the rows, ``details["queries"]["unanswered"]``),
never a recall of 0. A bad line never stops the audit of the others: a query whose answer cannot be audited (a
malformed line that still names it, a repeat, a result id not in ``vector_ids.json``; and, while some line cannot be
read at all, every question without a line) is an ``error``, left out of the denominators and counted
(``detail["errors"]``, ``details["queries"]["errors"]`` with file and line). When the run's only chain stage is ``index``, the runner does not embed the chunks of a
pipeline that has ``vectors.npy`` (the user's vectors are audited, the run's would be unused); questions are still
embedded with the pipeline's embedder, so its model must be the one that made the user's vectors (the dimension is
checked against the embedder's, with or without questions).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ingestaudit.auditors.base import CHAIN, Auditor, CorpusResult, PipelineContext, PipelineResult, Scope
from ingestaudit.config import Limits
from ingestaudit.errors import IndexingError
from ingestaudit.index_settings import IndexInputError, IndexSettings, check_vectors
from ingestaudit.inputs import InputFileError, open_input_file, read_input_text
from ingestaudit.jsonlimits import jsonl_lines
from ingestaudit.measurement import Score, State
from ingestaudit.metrics import ann
from ingestaudit.metrics.intervals import bootstrap_ratio, wilson
from ingestaudit.metrics.specs import MetricSpec, register
from ingestaudit.output_schemas import AnnResultsLine
from ingestaudit.schema_keys import PAGES, anchor, keys_of, unknown_keys

ALL = "__all__"
FILTERED = "filtered"
DEFAULT_K = (1, 5, 10)
DEFAULT_EF_SWEEP = (16, 32, 64, 128, 256)
DEFAULT_TARGET = 0.95
DEFAULT_SAMPLE = 200
DEFAULT_FILTERS = 5
DEFAULT_FILTER_QUERIES = 50
MAX_FILTER_LINES = 10
MAX_LISTED = 200
SELF_RULE = ("a chunk never counts as its own neighbour: for a sampled chunk vector, exact and ANN search return k+1 "
             "results and the chunk's own row is removed by id; exact duplicates of it are other chunks and stay "
             "valid neighbours; its candidates are the other n-1 vectors")
_SOURCES = ("intersection recall: FAISS knn_intersection_measure (faiss/contrib/evaluation.py) with a min(k, n) "
            "denominator and -1 never matching; 1-recall@R: FAISS benchmarks (faiss/benchs/bench_hnsw.py, 1-R@1); "
            "tie-aware recall: ann-benchmarks' knn threshold recall (Aumüller, Bernhardsson & Faithfull 2020; "
            "additive d_k + 1e-3 there) with a relative tolerance rtol instead")
OP_INTERVAL = ("percentile bootstrap over queries (1000 resamples, the run's seed) of the mean per-query recall@k of "
               "the unfiltered queries: the query is the sampling unit")


def _recall_spec(k: int) -> MetricSpec:
    return MetricSpec(
        f"index.recall@{k}",
        f"intersection recall (FAISS knn_intersection_measure, with a min(k, n) denominator): |ANN top-{k} ∩ exact "
        f"top-{k}| / min({k}, n) per query, micro over queries "
        "(Σ hits / Σ min(k, n)); exact = brute-force search with the index's own metric; -1 padding dropped, an id "
        "repeated in one result list counts once; queries = labelled questions + a seeded sample of chunk vectors, "
        "and a chunk never counts as its own neighbour (its own id is removed; its exact duplicates stay); label "
        "'filtered': questions with a metadata filter and sampled chunk queries under a seeded sample of metadata "
        "filters (n_sample_filters), filtered ANN (FAISS IDSelector inside the search) against filtered exact "
        "search, each filter's selectivity in the details; questions a user's ann_results.jsonl does not answer "
        "are no_prediction, left out and counted; corpus level, bootstrap over queries", True, ci="bootstrap",
        unit="results", seeded=True)


def _tie_spec(k: int) -> MetricSpec:
    return MetricSpec(
        f"index.recall_tie_aware@{k}",
        f"tie-aware recall: distinct ANN top-{k} ids whose TRUE score (recomputed exactly in float64, not the ANN's "
        f"reported one) ties (|s - s_k| <= 1e-5 |s_k|: relative tolerance 1e-5) or beats the {k}-th exact score "
        "s_k, divided by min(k, n) per query (ann-benchmarks' knn threshold recall, Aumüller et al. 2020, whose "
        "threshold is additive, d_k + 1e-3): "
        "tie-equivalent ids and exact duplicates are not misses; >= index.recall@k; same queries and self-exclusion "
        "as index.recall@k (a chunk never counts as its own neighbour)", True, ci="bootstrap", unit="results",
        seeded=True)


def _one_spec(r: int) -> MetricSpec:
    return MetricSpec(
        f"index.one_recall@{r}",
        f"1-recall@R at R={r} (FAISS benchmarks, faiss/benchs/bench_hnsw.py): queries whose exact nearest "
        f"neighbour (exact search's first id) is among the "
        f"first {r} ANN results / queries; an equally close different id is a miss here (see recall_tie_aware); a "
        "chunk never counts as its own neighbour; corpus level, Wilson over queries", True, ci="wilson",
        unit="queries", seeded=True)


VECTOR_METRICS = (
    MetricSpec("index.duplicate_vectors", "vectors that repeat an earlier vector byte for byte (n - distinct rows), "
               "per class within the class; duplicates make 'the' nearest neighbour ambiguous (ann-benchmarks issue "
               "#519 credited ten copies of one neighbour as 100 %); corpus level count", False, high=None,
               unit="vectors"),
    MetricSpec("index.ip_dominated", "share of the sampled vectors v for which another vector u has "
               "<u, v> > (1 + 1e-5) <v, v> (relative tolerance 1e-5, so float32 rounding of normalised near-"
               "duplicates is not counted; exact float64 sums where float32 is within rounding): v is never its own "
               "best inner-product match and "
               "parts of an HNSW graph built on inner product become unreachable whatever efSearch (milvus #51821); "
               "inner-product metrics (cosine, ip) only, 'skipped' for l2; Wilson over sampled vectors",
               False, ci="wilson", unit="vectors", seeded=True),
)


def specs_for(k_list: Sequence[int]) -> tuple[MetricSpec, ...]:
    """The `MetricSpec`s of the recall metrics at every k of ``k_list`` (sorted), then the vector metrics."""
    ks = sorted(set(int(k) for k in k_list))
    return (tuple(_recall_spec(k) for k in ks) + tuple(_tie_spec(k) for k in ks) + tuple(_one_spec(k) for k in ks)
            + VECTOR_METRICS)


METRICS = specs_for(DEFAULT_K)
register(*METRICS)


class UserIndexError(IndexingError, ValueError):
    """A user's vectors or ANN results cannot be read; the message names the file (and line)."""


# --- reading a user's own index --------------------------------------------------------------------------------------

def read_user_vectors(folder: str | Path, limits: Any = None) -> tuple[np.ndarray, list[str]]:
    """Read a user's embeddings: ``folder/vectors.npy`` (a 2-D float array, ``numpy.load(allow_pickle=False)``) and
    ``folder/vector_ids.json`` (a JSON list of unique non-empty strings, one per row), each through
    `ingestaudit.inputs.open_input_file` with ``limits`` (`ingestaudit.config.Limits`, default its defaults:
    ``vectors_bytes``, ``results_bytes``).

    Returns:
        ``(vectors float32 (n, d), ids)``.

    Raises:
        UserIndexError: a missing or unreadable file, one that is not a regular file (a FIFO, a device) or is over
            its limit, a non-2-D or non-float array, NaN or infinity (first row named),
            ids that are not a list of unique non-empty strings, or a count that differs from the rows; the message
            names the file.
    """
    folder = Path(folder)
    limits = limits if limits is not None else Limits()
    vpath, ipath = folder / "vectors.npy", folder / "vector_ids.json"
    for p in (vpath, ipath):
        if not os.path.lexists(p):
            raise UserIndexError(f"{p}: missing (a user's vectors need vectors.npy and vector_ids.json)")
    try:
        with open_input_file(vpath, max_bytes=limits.vectors_bytes, limit="limits.vectors_bytes") as fh:
            raw = np.load(fh, allow_pickle=False)
    except InputFileError as exc:  # a FIFO, a device, a folder, over the size: named, never the run's vectors
        raise UserIndexError(str(exc)) from None
    except Exception as exc:
        raise UserIndexError(f"{vpath}: not a readable .npy array ({type(exc).__name__}: {exc})") from None
    if not isinstance(raw, np.ndarray) or not np.issubdtype(raw.dtype, np.floating):
        raise UserIndexError(f"{vpath}: expected a float array, got dtype {getattr(raw, 'dtype', type(raw))}")
    try:
        vectors = check_vectors(raw, name=str(vpath))
    except IndexInputError as exc:
        raise UserIndexError(str(exc)) from None
    try:
        ids = json.loads(read_input_text(ipath, max_bytes=limits.results_bytes, limit="limits.results_bytes"))
    except InputFileError as exc:
        raise UserIndexError(str(exc)) from None
    except (json.JSONDecodeError, RecursionError) as exc:
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


class AnnResults(dict):
    """A user's ANN answers (`read_ann_results`): ``query id -> result ids`` in file order, plus where each query was
    read (``path`` and ``lines``: query id -> 1-based line number), so that later errors name the file and line.

    ``errors``: query id -> why its answer cannot be audited (its line is malformed but still names it, or it is
    repeated); such a query is an ``error``, never a 0 and never absent. ``unreadable``: the messages of lines whose
    query cannot be told (invalid JSON, no string ``query``); while there are any, a question with no line is an
    ``error`` too (its answer may be on one of them)."""

    def __init__(self, items: Mapping[str, list[str]] | None = None, *, path: str | Path | None = None,
                 lines: Mapping[str, int] | None = None, errors: Mapping[str, str] | None = None,
                 unreadable: Sequence[str] = ()) -> None:
        super().__init__(items or {})
        self.path = None if path is None else str(path)
        self.lines = dict(lines or {})
        self.errors = dict(errors or {})
        self.unreadable = list(unreadable)

    def where(self, query: str) -> str:
        """``"<path> line <n>"`` of ``query``, or ``"ann_results"`` when unknown."""
        if self.path is None:
            return "ann_results"
        return f"{self.path} line {self.lines[query]}" if query in self.lines else self.path


def _where(ann_results: Mapping[str, Any], query: str) -> str:
    return ann_results.where(query) if isinstance(ann_results, AnnResults) else "ann_results"


def read_ann_results(path: str | Path, max_bytes: int | None = None) -> AnnResults:
    """Read a user's ANN answers, ``ann_results.jsonl``: one JSON object per line, ``{"query": str, "results":
    [str, ...]}`` (result ids best first, as the store returned them). Blank lines are skipped.

    A bad line never stops the audit of the others: a line that is not such an object (invalid JSON, missing or
    unknown key, wrong types) goes to ``errors`` under its query when it still names one (a string ``query``), else
    to ``unreadable``; a query repeated is an error of that query (its first answer is not used either). Every
    message names the file and the line number (1-based).

    Returns:
        `AnnResults`: ``query id -> result ids``, file order, with the line of every query, ``errors`` and
        ``unreadable``.

    Lines are split on ``"\n"`` only (`ingestaudit.jsonlimits.jsonl_lines`), so a U+2028 inside a string never
    shifts a line number; the file is read by `ingestaudit.inputs.read_input_text`, at most ``max_bytes`` (default
    ``[limits] results_bytes``).

    Raises:
        UserIndexError: the file cannot be read, is not a regular file (a FIFO, a device: never waited on nor read
            without end), is over the limit, or is not UTF-8.
    """
    path = Path(path)
    limit = Limits().results_bytes if max_bytes is None else max_bytes
    try:
        text = read_input_text(path, max_bytes=limit, limit="limits.results_bytes", bom=True)
    except InputFileError as exc:
        raise UserIndexError(str(exc)) from None
    lines = jsonl_lines(text)
    out = AnnResults(path=path)
    repeated: set[str] = set()  # queries already given twice: their first repeat's message stands
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path} line {no}"
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            out.unreadable.append(f"{where}: invalid JSON ({getattr(exc, 'msg', 'nested too deeply')})")
            continue
        q = obj.get("query") if isinstance(obj, dict) else None
        why = _line_problem(obj)
        if not isinstance(q, str) or not q:
            out.unreadable.append(f"{where}: {why}")  # never None here: the query is not a non-empty string
            continue
        if q in out.lines:  # an error of that query, keeping the first line's own problem
            if q not in repeated:
                repeated.add(q)
                earlier = out.errors.get(q)
                out.errors[q] = (f"{where}: query {q!r} repeated (first on line {out.lines[q]})"
                                 + (f"; {earlier}" if earlier else ""))
            out.pop(q, None)
            continue
        out.lines[q] = no
        if why is not None:
            out.errors[q] = f"{where}: {why}"
        else:
            out[q] = obj["results"]
    return out


def _line_problem(obj: Any) -> str | None:
    """Why one parsed ``ann_results.jsonl`` line is not ``{"query": str, "results": [str, ...]}``, or None."""
    if not isinstance(obj, dict):
        return "expected an object {\"query\": id, \"results\": [ids]}"
    extra = [k for k in obj if k not in keys_of(AnnResultsLine)]  # the keys docs/outputs.md documents
    if extra:
        return unknown_keys(extra, keys_of(AnnResultsLine), f"{PAGES['outputs']}#{anchor(AnnResultsLine)}")
    if not isinstance(obj.get("query"), str) or not obj.get("query"):
        return "'query' must be a non-empty string"
    res = obj.get("results")
    if not isinstance(res, list) or not all(isinstance(r, str) for r in res):
        return "'results' must be a list of id strings"
    return None


# --- the audit -------------------------------------------------------------------------------------------------------

def _undefined_queries(keys: Sequence[str], q_vecs: Sequence[np.ndarray], idx_norms: Mapping[str, Any],
                       metric: str) -> dict[str, str]:
    """Queries whose nearest neighbours are undefined, each with why (issue 30): every query when every indexed
    vector is a zero vector (every score ties: any answer would score recall 1), and, under cosine, each query
    that is itself a zero vector (a sampled zero chunk or a question embedded as zeros: its cosine with anything is
    0/0). Such a query is an ``error``, left out of every recall and named, never a recall of 1."""
    if idx_norms.get("zero") and idx_norms["zero"] == idx_norms.get("n"):
        why = (f"every one of the {idx_norms['n']} indexed vectors is a zero vector: nearest neighbours are "
               "undefined (every score ties)")
        return {k: why for k in keys}
    if metric != "cosine":
        return {}
    return {k: "a zero vector: its cosine neighbours are undefined (0/0)" for k, v in zip(keys, q_vecs)
            if not np.any(v)}


@dataclass
class _Queries:
    """Every query of one audit, in order: sampled chunk rows first, then questions."""

    vectors: np.ndarray  # (m, d) float32, in the index's space
    keys: list[str]  # chunk id or question id
    classes: list[str]
    self_rows: np.ndarray  # (m,) int64; -1 for questions
    allowed: list[np.ndarray | None]  # sorted unique rows, or None (no filter)
    ncand: np.ndarray  # (m,) candidates per query
    answered: np.ndarray | None = None  # (m,) bool; False: a question a user's ann_results does not answer
    errored: np.ndarray | None = None  # (m,) bool; True: a query whose answer in a user's ann_results is unusable

    def __post_init__(self) -> None:
        if self.answered is None:
            self.answered = np.ones(len(self.keys), dtype=bool)
        if self.errored is None:
            self.errored = np.zeros(len(self.keys), dtype=bool)

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
    """An `Interval` as JSON; the bootstrap's resampled items are this auditor's queries (the intervals module
    calls them documents)."""
    if interval is None:
        return None
    return {"low": interval.low, "high": interval.high, "method": interval.method.replace(",docs,", ",queries,")}


def _exact(knn: Any, base: np.ndarray, q: _Queries, kmax: int, metric: str) -> _Truth:
    """Exact ground truth of every query with ``knn`` (the index step's brute-force search)."""
    m = q.vectors.shape[0]
    ids = np.full((m, kmax), -1, dtype=np.int64)
    selfq = np.flatnonzero((q.self_rows >= 0) & np.array([a is None for a in q.allowed], dtype=bool))
    plain = np.flatnonzero((q.self_rows < 0) & np.array([a is None for a in q.allowed], dtype=bool))
    if selfq.size:
        _, i_ = knn(base, q.vectors[selfq], kmax + 1, metric)
        ids[selfq] = ann.drop_self(i_, q.self_rows[selfq], kmax)
    if plain.size:
        _, ids[plain] = knn(base, q.vectors[plain], kmax, metric)
    for j, a in enumerate(q.allowed):
        if a is not None:
            _, i_ = knn(base, q.vectors[j:j + 1], kmax + (q.self_rows[j] >= 0), metric, allowed=a)
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
    answered: np.ndarray  # (m,) queries with an answer (False for questions missing from a user's results and errors)
    errored: np.ndarray  # (m,) queries whose answer in a user's results cannot be audited (a bad line)

    def counted(self, mask: np.ndarray) -> np.ndarray:
        """The queries of ``mask`` that enter a recall: a candidate exists and an answer was given."""
        return mask & self.valid & self.answered

    def per_query(self, k: int, mask: np.ndarray) -> np.ndarray:
        """Recall@k of each counted query of ``mask`` (hits / min(k, n))."""
        m = self.counted(mask)
        return self.hits[k][m] / self.den[k][m]


def _score(base: np.ndarray, q: _Queries, truth: _Truth, ann_ids: np.ndarray, ks: tuple[int, ...], metric: str,
           rtol: float) -> _Scored:
    hic = metric != "l2"
    ann_true = ann.true_scores(base, q.vectors, ann_ids, metric)
    valid = q.ncand > 0
    out = _Scored({}, {}, {}, {}, valid, np.asarray(q.answered, dtype=bool), np.asarray(q.errored, dtype=bool))
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
    m = s.counted(mask)
    cell: dict[str, Any] = {"queries": int(m.sum()), "no_prediction": int((mask & ~s.answered & ~s.errored).sum()),
                            "errors": int((mask & s.errored).sum())}
    for k in ks:
        den = s.den[k][m]
        for name, arr in ((f"recall@{k}", s.hits[k]), (f"recall_tie_aware@{k}", np.minimum(s.tie[k], s.den[k]))):
            num = arr[m]
            cell[name] = {"value": int(num.sum()) / int(den.sum()) if den.sum() else None,
                          "numerator": int(num.sum()), "denominator": int(den.sum()),
                          "mean_per_query": float(np.mean(num / den)) if m.any() else None}
        num = int(s.one[k][m].sum())
        cell[f"one_recall@{k}"] = {"value": num / int(m.sum()) if m.any() else None, "numerator": num,
                                   "denominator": int(m.sum())}
    return cell


def _empty_state(s: _Scored, mask: np.ndarray) -> tuple[State, str]:
    """Why a row has no counted query: some query is an error (an unusable answer: a bad line of a user's
    ann_results.jsonl; or no defined neighbours: a zero vector, `_undefined_queries`), every query with a candidate
    is unanswered (no_prediction), or none has a candidate (no_reference)."""
    if (mask & s.errored).any():
        return State.ERROR, (f"{int((mask & s.errored).sum())} query(ies) of this row have an unusable answer in "
                             "ann_results.jsonl or no defined neighbours (a zero vector; each listed in the index "
                             "details) and no other query is counted")
    if (mask & s.valid & ~s.answered).any():
        return State.NO_PREDICTION, "no answer: the questions of this row are absent from ann_results.jsonl"
    return State.NO_REFERENCE, "no query with a candidate"


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
            m = s.counted(mask)
            n_q = int(m.sum())  # the queries behind the value; the others are counted under their own states
            left_out = {"error": int((mask & s.errored).sum()),
                        "no_reference": int((mask & ~s.errored & ~s.valid).sum()),
                        "no_prediction": int((mask & ~s.errored & s.valid & ~s.answered).sum())}
            unreached = {"unreached": {k: v for k, v in left_out.items() if v}}
            base_detail = {"setting": setting, "queries": int(m.sum()), "sampled_chunks": int((m & is_self).sum()),
                           "questions": int((m & ~is_self).sum()),
                           "no_candidates": int((mask & ~s.valid).sum()),
                           "no_prediction": int((mask & ~s.answered & ~s.errored).sum()),
                           "errors": int((mask & s.errored).sum())}
            for k in ks:
                for metric, arr in ((f"index.recall@{k}", s.hits[k]),
                                    (f"index.recall_tie_aware@{k}", np.minimum(s.tie[k], s.den[k]))):
                    if not m.any():
                        rows.append((cls, Score.missing(metric, *_empty_state(s, mask), label=label,
                                                        detail=unreached), n_q))
                        continue
                    num, den = arr[m].astype(float), s.den[k][m].astype(float)
                    detail = {**base_detail, **unreached, "macro": float(np.mean(num / den)),
                              "ci": _ci(bootstrap_ratio(num, den, seed=seed))}
                    rows.append((cls, Score.ratio(metric, float(num.sum()), float(den.sum()), label=label,
                                                  detail=detail), n_q))
                metric = f"index.one_recall@{k}"
                if not m.any():
                    rows.append((cls, Score.missing(metric, *_empty_state(s, mask), label=label, detail=unreached),
                                 n_q))
                    continue
                hits = int(s.one[k][m].sum())
                rows.append((cls, Score.ratio(metric, hits, int(m.sum()), label=label,
                                              detail={**base_detail, **unreached,
                                                      "ci": _ci(wilson(hits, int(m.sum())))}), n_q))
    return rows


def _vector_rows(groups: np.ndarray, indexed: np.ndarray, classes: list[str], sample: np.ndarray, metric: str
                 ) -> tuple[list[tuple[str, Score, int]], dict[str, Any]]:
    """Duplicates count on the vectors as given (``groups`` = `ann.vector_groups` of them, taken before any
    normalisation); inner-product domination on the vectors as indexed."""
    rows: list[tuple[str, Score, int]] = []
    cls_arr = np.array(classes)
    uniq = sorted(set(classes))
    dup_detail = []
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
                                      detail={"ci": _ci(wilson(hits, n_s)), "sampled": n_s,
                                              "rtol": ann.DOMINATION_RTOL}), n_s))
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
                ) -> tuple[np.ndarray, np.ndarray, int | None]:
    """Every query, one at a time single-threaded, on ``index`` (the index step's `AnnIndex`): (raw ids
    (m, kmax + 1), latencies ms, distance computations)."""
    m = len(q.keys)
    raw = np.full((m, kmax + 1), -1, dtype=np.int64)
    lat = np.zeros(m)
    if m == 0:
        return raw, lat, 0
    selfq = q.self_rows >= 0
    with index.count_distances() as counted:
        for mask, kk in ((selfq, kmax + 1), (~selfq, kmax)):
            idx = np.flatnonzero(mask)
            if idx.size:
                _, i_, l_ = index.search(q.vectors[idx], kk, allowed=[q.allowed[j] for j in idx], params=params)
                raw[idx, :kk] = i_
                lat[idx] = l_
    return raw, lat, counted["distances"]


def _operating_point(cells: list[dict[str, Any]], runs: Mapping[Any, Any], q: _Queries, kmax: int, target: float,
                     seed: int) -> dict[str, Any]:
    """The cheapest cell (cells are in increasing knob order) whose mean per-query recall@kmax over the unfiltered
    queries reaches ``target``, with a seeded bootstrap over those queries of that mean."""
    key = f"recall@{kmax}"
    base = {"target": target, "k": kmax, "knob": cells[0]["knob"] if cells else None,
            "quantity": f"mean per-query recall@{kmax} of the unfiltered queries", "interval": OP_INTERVAL}
    if not cells:
        return {**base, "value": None,
                "reason": "no sweep ran (a flat index, or an empty sweep list): the configured setting is the only one"}
    ok = [c for c in cells if c["unfiltered"][key]["mean_per_query"] is not None]
    fit = [c for c in ok if c["unfiltered"][key]["mean_per_query"] >= target - 1e-12]
    if not fit:
        top = max(ok, key=lambda c: c["unfiltered"][key]["mean_per_query"], default=None)
        why = (f"no setting reaches mean recall@{kmax} >= {target:g}" +
               (f" (best: {top['unfiltered'][key]['mean_per_query']:.4f} at {top['label']})" if top else
                " (no query with a candidate)"))
        return {**base, "value": None, "reason": why}
    best = fit[0]
    sc = runs[best["value"]]
    per_query = sc.per_query(kmax, np.array(q.labels) == "")
    return {**base, "value": best["value"], "label": best["label"],
            "mean_recall": best["unfiltered"][key]["mean_per_query"], "queries": int(per_query.size),
            "recall": best["unfiltered"][key], "distances_per_query": best.get("distances_per_query"),
            "ci": _ci(bootstrap_ratio(per_query, None, seed=seed)),
            "reason": f"cheapest setting (smallest {best['knob']}) with mean recall@{kmax} >= {target:g}"}


def _pareto(points: list[tuple[str, float, float]], *, lower_cost_is_better: bool) -> list[tuple[str, float, float]]:
    """Points ``(label, recall, cost-or-speed)`` that no other point matches or beats on both axes and beats on one:
    higher recall is better; the second axis is better LOWER when ``lower_cost_is_better`` (distance computations)
    and HIGHER otherwise (queries per second)."""
    sign = -1.0 if lower_cost_is_better else 1.0

    def beats(o: tuple[str, float, float], p: tuple[str, float, float]) -> bool:
        return (o[1] >= p[1] and sign * o[2] >= sign * p[2]) and (o[1] > p[1] or sign * o[2] > sign * p[2])

    return [p for p in points if not any(beats(o, p) for o in points)]


def _frontier(cells: list[dict[str, Any]], kmax: int) -> list[dict[str, Any]]:
    """Deterministic frontier: settings not dominated in (mean per-query recall@kmax, distance computations per
    query), cheapest first."""
    key = f"recall@{kmax}"
    pts = [(c["label"], c["unfiltered"][key]["mean_per_query"], c["distances_per_query"]) for c in cells
           if c["unfiltered"][key]["mean_per_query"] is not None and c.get("distances_per_query") is not None]
    front = sorted(_pareto(pts, lower_cost_is_better=True), key=lambda p: p[2])
    return [{"label": lbl, f"mean_recall@{kmax}": r, "distances_per_query": dq} for lbl, r, dq in front]


def _qps_frontier(cells: list[dict[str, Any]], times: list[dict[str, Any]], kmax: int) -> list[dict[str, Any]]:
    """Wall-clock frontier (timings only): settings not dominated in (mean per-query recall@kmax, queries/s)."""
    key = f"recall@{kmax}"
    pts = [(c["label"], c["unfiltered"][key]["mean_per_query"], t["qps"]) for c, t in zip(cells, times)
           if c["unfiltered"][key]["mean_per_query"] is not None and t.get("qps") is not None]
    front = sorted(_pareto(pts, lower_cost_is_better=False), key=lambda p: -p[2])
    return [{"label": lbl, f"recall@{kmax}": r, "qps": v} for lbl, r, v in front]


def _g(x: Any) -> str:
    return "n/a" if x is None else f"{x:.4f}"


def _overview(details: dict[str, Any], kmax: int) -> dict[str, list[str]]:
    """The sentences the report views print for this pipeline's index audit (``details["overview"]``)."""
    warnings: list[str] = []
    lines: list[str] = []
    cos = details.get("cosine_unnormalised", {})
    if cos.get("flag"):
        extra = (f"; exact inner product on them shares {cos[f'ip_vs_cosine_recall@{kmax}']:.4f} of the exact "
                 f"cosine top-{kmax}" if f"ip_vs_cosine_recall@{kmax}" in cos else "")
        warnings.append(f"cosine declared on vectors that are not unit norm ({cos.get('not_unit_nonzero')} non-zero "
                        f"vectors off unit norm, norms {cos.get('min_norm'):.4g}..{cos.get('max_norm'):.4g}): FAISS "
                        f"has no cosine, this is inner product and ranks by length (FAISS #812, #1119){extra}")
    if cos.get("zero_vectors"):
        warnings.append(f"{cos['zero_vectors']} zero vector(s): cosine is undefined for them and no normalisation "
                        "makes them unit")
    q = details.get("queries", {})
    if q.get("unanswered_total"):
        warnings.append(f"{q['unanswered_total']} question(s) absent from ann_results.jsonl: no_prediction, left out "
                        "of the recall denominators")
    if q.get("errors_total"):
        warnings.append(f"{q['errors_total']} query(ies) with an unusable answer in ann_results.jsonl: error, left "
                        f"out of the recall denominators (first: {q['errors'][0]['reason']})")
    if q.get("undefined_total"):
        warnings.append(f"{q['undefined_total']} query(ies) without defined neighbours: error, left out of the recall "
                        f"denominators (first: {q['undefined'][0]['query']!r}: {q['undefined'][0]['reason']})")
    if q.get("ann_results_problems_total"):
        warnings.append(f"{q['ann_results_problems_total']} line(s) of ann_results.jsonl name no query of this audit "
                        f"(first: {q['ann_results_problems'][0]})")
    src = details.get("source", {})
    if src.get("filter_violations"):
        warnings.append(f"{src['filter_violations']} returned id(s) outside a question's filter (counted as misses)")
    lines.append(f"queries: {q.get('sampled_chunks', 0)} sampled chunks (never their own neighbour) + "
                 f"{q.get('questions', 0)} questions ({q.get('filtered', 0)} filtered); source: {src.get('kind')}"
                 + (f", configured {src['configured']}" if src.get("configured") else ""))
    op = details.get("operating_point")
    if op is not None:
        if op.get("value") is not None:
            ci = op.get("ci") or {}
            interval = f" [{_g(ci.get('low'))}, {_g(ci.get('high'))}]" if ci else ""
            lines.append(f"operating point (cheapest setting with mean recall@{op['k']} >= {op['target']:g}, "
                         f"unfiltered queries): {op['label']}: {_g(op['mean_recall'])}{interval} (95 % percentile "
                         f"bootstrap over {op['queries']} queries)")
        else:
            lines.append(f"operating point: none ({op.get('reason')})")
    front = details.get("frontier")
    if front:
        lines.append(f"frontier (mean recall@{kmax} against distance computations per query): " + "; ".join(
            f"{p['label']} {_g(p[f'mean_recall@{kmax}'])} at {p['distances_per_query']:.0f}" for p in front))
    for f in details.get("filters", [])[:MAX_FILTER_LINES]:
        sel = "?" if f["selectivity"] is None else f"{100 * f['selectivity']:.3g} %"
        plain = f.get(f"unfiltered_recall@{kmax}")
        lines.append(f"filter {json.dumps(f['filter'], ensure_ascii=False)} ({f['source']}, selectivity {sel}, "
                     f"{f['queries']} queries): recall@{kmax} {_g(f.get(f'recall@{kmax}'))}"
                     + (f" (the same queries unfiltered: {_g(plain)})" if f["source"] == "sampled" else ""))
    return {"warnings": warnings, "lines": lines}


def _answer_errors(ann_results: Mapping[str, Sequence[str]], q_ids: Sequence[str], row_of: Mapping[str, int]
                   ) -> tuple[dict[str, str], list[str]]:
    """The queries whose user answer cannot be audited, and the answers that name no query.

    Errors (query -> message naming file and line): those `read_ann_results` found (a malformed line that names its
    query, a repeat), an answer holding an id that is not in ``vector_ids.json``, and, while some line could not be
    read at all, every question with no line (its answer may be on such a line). Problems: the unreadable lines'
    messages and the queries that are neither a question nor a vector id (nothing to audit them against)."""
    errors = dict(getattr(ann_results, "errors", {}))
    unreadable = list(getattr(ann_results, "unreadable", ()))
    known = set(q_ids)
    problems = []
    for key in [*ann_results, *errors]:
        if key not in known and key not in row_of:
            problems.append(f"{_where(ann_results, key)}: query {key!r} is neither a question id nor a vector id "
                            "(vector_ids.json): not audited")
            errors.pop(key, None)
    for key, res in ann_results.items():
        bad = next((r for r in res if r not in row_of), None)
        if bad is not None and key not in errors and (key in known or key in row_of):
            errors[key] = (f"{_where(ann_results, key)}: query {key!r} returns {bad!r}, which is not an id of "
                           "vector_ids.json")
    if unreadable:
        for qid in q_ids:
            if qid not in ann_results and qid not in errors:
                errors[qid] = (f"no readable line names this question, and {len(unreadable)} line(s) of the file "
                               f"cannot be read (its answer may be on one of them; first: {unreadable[0]})")
    return errors, unreadable + problems


def _filter_key(source: str, flt: Mapping[str, Any] | None) -> str:
    return f"{source} " + json.dumps(flt, sort_keys=True, ensure_ascii=False, default=str)


def sample_filters(metas: Sequence[Mapping[str, Any]], n_filters: int, seed: int
                   ) -> list[tuple[dict[str, Any], np.ndarray]]:
    """A seeded sample of ``field = value`` metadata filters over chunks with metadata ``metas`` (row order), each
    with the rows it lets through (sorted int64): the distinct pairs of a scalar value (string, number, boolean) that
    some chunk carries and not every chunk passes, sorted by field and value, ``n_filters`` of them drawn without
    replacement by ``numpy.random.default_rng(seed + 1)`` (in that sorted order)."""
    rows_of: dict[tuple[str, str], list[int]] = {}
    value_of: dict[tuple[str, str], Any] = {}
    for r, m in enumerate(metas):
        for field_, v in m.items():
            if isinstance(v, (str, int, float, bool)) and not (isinstance(v, float) and not np.isfinite(v)):
                key = (str(field_), json.dumps(v))
                rows_of.setdefault(key, []).append(r)
                value_of[key] = v
    pairs = sorted(k for k, rows_ in rows_of.items() if len(rows_) < len(metas))
    if not pairs or n_filters <= 0:
        return []
    pick = np.sort(np.random.default_rng(seed + 1).choice(len(pairs), size=min(n_filters, len(pairs)), replace=False))
    return [({pairs[i][0]: value_of[pairs[i]]}, np.array(rows_of[pairs[i]], dtype=np.int64)) for i in pick]


def _filter_details(s: _Scored, q: _Queries, filter_of: Sequence[str | None], groups: Mapping[str, dict[str, Any]],
                    n: int, ks: tuple[int, ...], setting: str) -> list[dict[str, Any]]:
    """Per filter (``details["filters"]``): source, chunks passing, selectivity, and the recall@k (micro, at the
    configured ``setting``) of its queries; a sampled filter also gets the unfiltered recall@k of the same chunk
    queries."""
    fo = np.array([f if f is not None else "" for f in filter_of])
    unfiltered_self = {int(r): j for j, (r, a) in enumerate(zip(q.self_rows, q.allowed)) if a is None and r >= 0}
    out = []
    for key, g in groups.items():
        mask = fo == key
        cell = _sums(s, mask, ks)
        entry: dict[str, Any] = {"filter": g["filter"], "source": g["source"], "passing": g["passing"],
                                 "selectivity": g["passing"] / n if n else None, "setting": setting,
                                 "queries": cell["queries"]}
        for k in ks:
            entry[f"recall@{k}"] = cell[f"recall@{k}"]["value"]
        if g["source"] == "sampled":
            same = np.zeros(len(q.keys), dtype=bool)
            same[[unfiltered_self[int(r)] for r in q.self_rows[mask] if int(r) in unfiltered_self]] = True
            plain = _sums(s, same, ks)
            for k in ks:
                entry[f"unfiltered_recall@{k}"] = plain[f"recall@{k}"]["value"]
        out.append(entry)
    return sorted(out, key=lambda e: (e["source"], e["selectivity"] if e["selectivity"] is not None else 0.0))


def audit_vectors(vectors: np.ndarray, chunk_ids: Sequence[str], chunk_classes: Sequence[str], *, step: Any,
                  queries: np.ndarray | None = None, query_ids: Sequence[str] | None = None,
                  query_classes: Sequence[str] | None = None,
                  query_allowed: Sequence[np.ndarray | None] | None = None,
                  query_filters: Sequence[Mapping[str, Any] | None] | None = None,
                  declared_metric: str | None = None, normalised: bool = True,
                  settings: IndexSettings | None = None, k_list: Sequence[int] = DEFAULT_K,
                  sweep: Sequence[int] | None = None, target_recall: float = DEFAULT_TARGET,
                  n_sample_queries: int = DEFAULT_SAMPLE, seed: int = 0,
                  ann_results: Mapping[str, Sequence[str]] | None = None,
                  rtol: float = ann.DEFAULT_RTOL, normalise_in_place: bool = False,
                  sampled_filters: Sequence[tuple[Mapping[str, Any], np.ndarray]] = (),
                  n_filter_queries: int = DEFAULT_FILTER_QUERIES) -> CorpusResult:
    """Audit an approximate index over ``vectors`` against exact search (see the module docstring).

    Args:
        vectors: ``(n, d)`` chunk vectors as the pipeline produced them.
        chunk_ids: ``n`` unique ids (``"<doc id>#<chunk index>"`` in a run).
        chunk_classes: ``n`` classes (the chunk's document class).
        step: the pipeline's index step (`ingestaudit.stages.index_step.IndexStep`, or any object with its methods
            ``normalised(x, inplace=)``, ``knn(base, queries, k, metric, allowed=)`` and ``ann(vectors, settings)``
            returning an index with ``search``, ``count_distances``, ``build_seconds`` and ``memory_bytes``): the
            audit normalises, searches exactly and builds the approximate index through it, never by itself.
        queries: ``(m, d)`` labelled-question vectors, or None.
        query_ids: ``m`` question ids (default ``"q0".."q{m-1}"``); used to match ``ann_results``.
        query_classes: ``m`` classes (required when ``queries`` is given).
        query_allowed: ``m`` entries: the chunk rows a question's filter lets through (``np.ndarray`` of ints), or
            None (no filter). Filtered questions give the ``"filtered"`` rows.
        query_filters: ``m`` entries: the question's filter itself (for ``details["filters"]``), or None.
        declared_metric: the metric the pipeline claims (``cosine`` | ``ip`` | ``l2``); default ``settings.metric``.
            The index and the exact ground truth use it (cosine = inner product).
        normalised: True when the pipeline L2-normalises vectors (and questions) before indexing; the auditor then
            does it too. False: vectors are indexed as given, and declaring cosine while some non-zero vector is not
            unit norm (``| ||v|| - 1 | > 1e-3``) sets ``details["cosine_unnormalised"]["flag"]``.
        settings: the index under audit (default `IndexSettings()`: HNSW M=32, efConstruction 40, efSearch 64).
        k_list: cut-offs for recall@k, tie-aware recall@k and 1-recall@r.
        sweep: efSearch values (HNSW, default 16..256) or nprobe values (IVF, default 1, 2, 4, ... nlist); ``()``
            for none.
        target_recall: the operating point's target for the mean per-query recall@k (k = max of ``k_list``).
        n_sample_queries: chunk vectors drawn as self queries (seeded); 0 for none.
        seed: seeds the sample and the bootstrap intervals (the index uses ``settings.seed``).
        ann_results: a user's answers (`read_ann_results`) instead of an index: query id (question id, or chunk id
            for a self query) -> result chunk ids. No index is built, no sweep runs; a question absent from it is
            ``no_prediction`` (left out of every recall, counted in the rows' ``detail["no_prediction"]`` and in
            ``details["queries"]["unanswered"]``). A query whose answer cannot be audited (see `_answer_errors`) is an
            ``error``: left out of every recall, counted in the rows' ``detail["errors"]`` and listed in
            ``details["queries"]["errors"]``; a row whose every query is one is an ``error`` row.
        rtol: relative tolerance of tie-aware recall.
        normalise_in_place: when normalising, overwrite ``vectors`` instead of copying it (for a caller that owns
            the array, e.g. one just read from ``vectors.npy``): the audit then holds one copy of the vectors, not
            two. Facts about the vectors as given (norms, duplicates) are taken before.
        sampled_filters: ``(filter, rows passing it)`` pairs (`sample_filters`): each is applied to the first
            ``n_filter_queries`` sampled chunk queries, which give ``"filtered"`` rows beside their unfiltered ones
            (ignored with ``ann_results``).
        n_filter_queries: sampled chunk queries per sampled filter (int >= 0).

    Returns:
        A `CorpusResult` with ``corpus_scores`` and ``details`` (``details["timings"]`` is the only wall-clock part).

    Raises:
        IndexInputError: NaN/inf vectors or queries, dimension mismatch, empty base.
        ValueError: lengths that do not match, repeated chunk ids, bad k_list / target / sample size, an unknown
            metric or kind. (A user's bad answer is never raised: it is that query's error, see ``ann_results``.)
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

    # -- facts about the vectors as given, before any normalisation (which may overwrite them)
    raw_norms = ann.norm_stats(raw)
    groups = ann.vector_groups(raw)
    indexed = raw
    if normalised and not (abs(raw_norms["min"] - 1) <= 1e-6 and abs(raw_norms["max"] - 1) <= 1e-6):
        # in place when the caller allows it, or when check_vectors already made a float32 copy of the input
        copied = not (isinstance(vectors, np.ndarray) and np.may_share_memory(raw, vectors))
        indexed = step.normalised(raw, inplace=normalise_in_place or copied)
        raw = None if indexed is raw else raw  # overwritten in place: the vectors as given no longer exist
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
        q_flt = list(query_filters) if query_filters is not None else [None] * m_q
        if q_cls is None or len(q_ids) != m_q or len(q_cls) != m_q or len(q_all) != m_q:
            raise ValueError(f"{m_q} queries need as many query_ids, query_classes and query_allowed entries")
        if len(set(q_ids)) != m_q:
            raise ValueError("query ids must be unique")
        if normalised:
            qv = step.normalised(qv)
    else:
        qv, q_ids, q_cls, q_all, q_flt = np.zeros((0, d), np.float32), [], [], [], []

    unanswered: list[str] = []
    errors: dict[str, str] = {}  # query -> why its answer cannot be audited (an error, never a 0)
    problems: list[str] = []  # lines of the user's answers that name no query of this audit
    if ann_results is not None:
        errors, problems = _answer_errors(ann_results, q_ids, row_of)
        # the user's answers decide which queries exist: every question, plus the chunk ids they queried with
        q_index = {qid: i for i, qid in enumerate(q_ids)}
        self_keys = [k for k in (*ann_results, *errors) if k not in q_index and k in row_of]
        sample = np.array(sorted({row_of[k] for k in self_keys}), dtype=np.int64)
        unanswered = [qid for qid in q_ids if qid not in ann_results and qid not in errors]
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
    filter_of: list[str | None] = [None] * len(sample) + [None if a is None else _filter_key("question", f)
                                                           for a, f in zip(allowed[len(sample):], q_flt)]
    groups_of_filter: dict[str, dict[str, Any]] = {}
    for key, a, f in zip(filter_of[len(sample):], allowed[len(sample):], q_flt):
        if key is not None:
            groups_of_filter.setdefault(key, {"filter": f, "source": "question", "passing": int(a.size)})
    if ann_results is None:
        for flt, rows_ in sampled_filters:
            a = np.unique(np.asarray(rows_, dtype=np.int64).reshape(-1))
            fkey = _filter_key("sampled", flt)
            groups_of_filter.setdefault(fkey, {"filter": dict(flt), "source": "sampled", "passing": int(a.size)})
            for r in sample[:int(n_filter_queries)]:
                q_vecs.append(indexed[r])
                keys.append(f"{chunk_ids[r]} | filter {fkey.split(' ', 1)[1]}")
                classes.append(chunk_classes[r])
                self_rows.append(int(r))
                allowed.append(a)
                filter_of.append(fkey)
    undefined = _undefined_queries(keys, q_vecs, idx_norms, metric)  # zero vectors: no neighbours to recall
    for key in undefined:
        errors.pop(key, None)
    srows = np.array(self_rows, dtype=np.int64)
    ncand = np.array([(n - 1 if s >= 0 else n) if a is None else int(a.size) - int(s >= 0 and s in set(a.tolist()))
                      for s, a in zip(self_rows, allowed)], dtype=np.int64)
    missing = set(unanswered)
    errored = np.array([k in errors or k in undefined for k in keys], dtype=bool)
    qs = _Queries(np.stack(q_vecs).astype(np.float32) if q_vecs else np.zeros((0, d), np.float32), keys, classes,
                  srows, allowed, ncand,
                  np.array([k not in missing or s >= 0 for k, s in zip(keys, self_rows)], dtype=bool) & ~errored,
                  errored)

    # -- facts about the vectors (before any index exists, so that their scratch memory is not added to it)
    vec_rows, vec_detail = _vector_rows(groups, indexed, chunk_classes, sample if sample.size else
                                        np.sort(rng.choice(n, size=min(DEFAULT_SAMPLE, n), replace=False)), metric)
    del groups

    # -- exact ground truth
    truth = (_exact(step.knn, indexed, qs, kmax, metric) if keys
             else _Truth(np.zeros((0, kmax), np.int64), np.zeros((0, kmax))))
    details: dict[str, Any] = {}
    timings: dict[str, Any] = {}
    labels = np.array(qs.labels)
    unfiltered = labels == ""
    filtered = labels == FILTERED
    class_arr = np.array(classes)
    class_names = sorted(set(classes))

    def cell_of(scored: _Scored, label: str, knob: str | None, value: int | None, memory: int | None,
                distances: int | None = None) -> dict[str, Any]:
        searched = len(keys) - sum(1 for a in allowed if a is not None and a.size == 0)
        cell: dict[str, Any] = {"label": label, "knob": knob, "value": value, "memory_bytes": memory,
                                "distances_per_query": (distances / searched) if distances is not None and searched
                                else None,
                                "unfiltered": _sums(scored, unfiltered, ks),
                                "per_class": [{"class": c, **_sums(scored, unfiltered & (class_arr == c), ks)}
                                              for c in class_names if (unfiltered & (class_arr == c)).any()]}
        if filtered.any():
            cell["filtered"] = _sums(scored, filtered, ks)
        return cell

    if ann_results is not None:
        raw_ids = np.full((len(keys), kmax + 1), -1, dtype=np.int64)
        for j, key in enumerate(keys):
            if key in errors:
                continue
            for pos, rid in enumerate(ann_results.get(key, [])[:kmax + 1]):
                raw_ids[j, pos] = row_of[rid]
        ann_ids, violations = _clean_answers(raw_ids, qs, kmax)
        scored = _score(indexed, qs, truth, ann_ids, ks, metric, rtol)
        setting_label = "user ann_results"
        details["source"] = {"kind": "user ann_results", "queries_answered": len(ann_results),
                             "filter_violations": violations,
                             "note": "ids a filtered question's answer holds outside its filter count as misses"}
        details["sweep"] = {"knob": None, "cells": [cell_of(scored, setting_label, None, None, None)]}
    else:
        index = step.ann(indexed, settings)  # built once per pipeline by the step (shared with retrieval)
        build_s, memory = index.build_seconds, index.memory_bytes
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
        runs: dict[int | None, tuple[_Scored, np.ndarray, int, int | None]] = {}
        for v in sorted(set(values) | {configured}, key=lambda x: (x is None, x or 0)):
            params = {knob: v} if knob else None
            raw_ids, lat, ndis = _search_all(index, qs, kmax, params)
            ann_ids, violations = _clean_answers(raw_ids, qs, kmax)
            runs[v] = (_score(indexed, qs, truth, ann_ids, ks, metric, rtol), lat, violations, ndis)
        del index  # everything below works on the answers (the step keeps the index for the other auditors)
        cells = [cell_of(runs[v][0], f"{knob}={v}", knob, v, memory, runs[v][3]) for v in values]
        details["sweep"] = {"knob": knob, "values": list(values), "index": settings.options(),
                            "nlist": settings.resolved_nlist(n) if settings.kind == "ivf" else None,
                            "memory_bytes": memory, "cells": cells,
                            "note": "one index is built; the sweep varies a search-time parameter only; "
                                    "distances_per_query: FAISS's count of distance computations (deterministic)"}
        details["operating_point"] = _operating_point(cells, {v: r[0] for v, r in runs.items()}, qs, kmax,
                                                      target_recall, seed)
        details["frontier"] = _frontier(cells, kmax)
        scored = runs[configured][0]
        setting_label = f"{knob}={configured}" if knob else settings.kind
        timings = {"build_seconds": build_s, "build_threads": settings.build_threads,
                   "search_threads": 1,
                   "cells": [{"label": f"{knob}={v}", "knob": knob, "value": v, **_timing(runs[v][1])}
                             for v in values],
                   "configured": {"label": setting_label, "knob": knob, "value": configured,
                                  **_timing(runs[configured][1])},
                   "note": "wall clock, single-threaded per-query search; percentiles by nearest rank; cells[i] "
                           "times details.sweep.cells[i] (same label)"}
        timings["frontier"] = _qps_frontier(cells, timings["cells"], kmax)
        details["source"] = {"kind": f"faiss {settings.kind}", "configured": setting_label,
                             "filter_violations": runs[configured][2]}

    rows = (_recall_rows(scored, qs, ks, seed, setting_label) if keys else []) + vec_rows
    if groups_of_filter:
        details["filters"] = _filter_details(scored, qs, filter_of, groups_of_filter, n, ks, setting_label)
        sel = sorted(g["selectivity"] for g in details["filters"])
        spread = {"min": sel[0], "median": float(np.median(sel)), "max": sel[-1], "filters": len(sel)}
        rows = [(c, replace(sc, detail={**sc.detail, "selectivity": spread}) if sc.label == FILTERED else sc, m)
                for c, sc, m in rows]

    flag = metric == "cosine" and idx_norms["not_unit_nonzero"] > 0
    cos: dict[str, Any] = {"flag": bool(flag), "declared_metric": metric, "normalised": bool(normalised),
                           "unit_share": idx_norms["unit_share"], "not_unit_nonzero": idx_norms["not_unit_nonzero"],
                           "zero_vectors": idx_norms["zero"], "min_norm": idx_norms["min"],
                           "max_norm": idx_norms["max"],
                           "note": ("FAISS has no cosine: inner product on vectors that are not unit norm ranks by "
                                    "length as much as by angle (FAISS #812, #1119); zero vectors are counted "
                                    "apart and do not raise the flag")}
    if flag and sample.size:
        unit = step.normalised(indexed)  # not normalised here (the flag needs normalised=False): indexed is as given
        sq = _Queries(unit[sample], [chunk_ids[r] for r in sample], [chunk_classes[r] for r in sample], sample,
                      [None] * sample.size, np.full(sample.size, n - 1))
        ip_truth = truth.ids[:sample.size]  # self queries come first, searched on the indexed vectors
        cos_truth = _exact(step.knn, unit, sq, kmax, "cosine").ids
        del unit
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
                           "seed": seed, "tie_rtol": rtol, "ip_dominated_rtol": ann.DOMINATION_RTOL,
                           "operating_point_interval": OP_INTERVAL,
                           "ground_truth": "exact brute force (faiss.knn) with the index's own metric, batches of "
                                           "queries", "self_exclusion": SELF_RULE, "definitions": _SOURCES}
    per_class = [{"class": c, "queries": int((class_arr == c).sum()),
                  "sampled_chunks": int(((class_arr == c) & (srows >= 0)).sum())} for c in class_names]
    details["queries"] = {"total": len(keys), "sampled_chunks": int((srows >= 0).sum()),
                          "questions": int((srows < 0).sum()), "filtered": int((filtered & (srows < 0)).sum()),
                          "filtered_sampled_chunks": int((filtered & (srows >= 0)).sum()),
                          "no_candidates": [k for k, c in zip(keys, ncand) if c == 0][:MAX_LISTED],
                          "unanswered": unanswered[:MAX_LISTED], "unanswered_total": len(unanswered),
                          "unanswered_state": "no_prediction (left out of every recall denominator)",
                          "errors": [{"query": k, "reason": v} for k, v in list(errors.items())[:MAX_LISTED]],
                          "errors_total": len(errors),
                          "undefined": [{"query": k, "reason": v} for k, v in list(undefined.items())[:MAX_LISTED]],
                          "undefined_total": len(undefined),
                          "errors_state": "error (left out of every recall denominator, counted in the rows' "
                                          "detail.errors)",
                          "ann_results_problems": problems[:MAX_LISTED], "ann_results_problems_total": len(problems),
                          "sample_seed": seed, "per_class": per_class, "self_exclusion": SELF_RULE}
    details["overview"] = _overview(details, kmax)
    if timings:
        details["timings"] = timings
    return CorpusResult(corpus_scores=rows, details=details)


# --- the runner's entry point ----------------------------------------------------------------------------------------

def _answer_failures(queries: Mapping[str, Any]) -> list[str]:
    """The run's failure messages for a user's answers and for queries without neighbours: each query whose answer
    cannot be audited (named, with its file and line), each line that names no query, and each query that is a
    zero vector (`_undefined_queries`), as listed in ``details["queries"]`` (the first `MAX_LISTED` of each; the
    rest are counted in one more message each)."""
    out = [f"query {e['query']!r}: {e['reason']}" for e in queries.get("errors", [])]
    out += list(queries.get("ann_results_problems", []))
    more = (queries.get("errors_total", 0) - len(queries.get("errors", []))
            + queries.get("ann_results_problems_total", 0) - len(queries.get("ann_results_problems", [])))
    if more:
        out.append(f"{more} more unusable line(s) or answer(s) in ann_results.jsonl (see the index details)")
    out += [f"query {e['query']!r}: {e['reason']}" for e in queries.get("undefined", [])]
    more = queries.get("undefined_total", 0) - len(queries.get("undefined", []))
    if more:
        out.append(f"{more} more query(ies) without defined neighbours (see the index details)")
    return out


def has_user_vectors(folder: str | Path | None) -> bool:
    """True when ``folder`` (a precomputed pipeline's outputs) holds an entry ``vectors.npy``: the index audit then
    reads those vectors (a FIFO, a device or a broken link is refused, naming it: the run's own vectors are never
    audited in their place) and the run's own chunk vectors are not needed for it."""
    return folder is not None and os.path.lexists(Path(folder) / "vectors.npy")


class IndexAuditor(Auditor):
    """Audits one pipeline's ANN index against exact search (see the module docstring).

    Args:
        k_list: cut-offs (default 1, 5, 10).
        ef_search_sweep: efSearch values for HNSW (default 16, 32, 64, 128, 256).
        nprobe_sweep: nprobe values for IVF (default 1, 2, 4, ... nlist).
        target_recall: operating point target for the mean per-query recall@k (default 0.95).
        n_sample_queries: sampled chunk queries (default 200).
        n_sample_filters: seeded metadata filters applied to sampled chunk queries (default 5; 0 for none;
            `sample_filters`).
        n_filter_queries: sampled chunk queries searched under each sampled filter (default 50).
        use_user_results: audit ``DIR/<pipeline>/vectors.npy`` and ``ann_results.jsonl`` when present (default on).
        seed: the run's seed by default.

    The pipeline's index stage gives the index: its implementation (``hnsw``, ``ivf``, ``flat``) and options
    (`IndexSettings` fields, plus ``normalise``: default True, the pipeline L2-normalises before indexing). The index
    step handed in as ``PipelineContext.index`` builds and searches it (`ingestaudit.stages.index_step`); this
    auditor only reads it.

    Not a default stage without questions: like chunking and retrieval, ``index`` runs by default only when the
    corpus has questions or the run configures pipelines, because it needs every chunk embedded (the costliest step
    of a run). ``ingestaudit run CORPUS --stage index`` runs it on any corpus (the label-free corpus monitor: sampled
    chunk queries only); with a user's ``vectors.npy`` nothing is embedded but the questions.
    """

    stage = "index"
    metrics = METRICS
    scope = Scope.PIPELINE
    reads = frozenset({CHAIN})

    def __init__(self, k_list: Sequence[int] = DEFAULT_K, ef_search_sweep: Sequence[int] = DEFAULT_EF_SWEEP,
                 nprobe_sweep: Sequence[int] | None = None, target_recall: float = DEFAULT_TARGET,
                 n_sample_queries: int = DEFAULT_SAMPLE, use_user_results: bool = True, seed: int = 0,
                 n_sample_filters: int = DEFAULT_FILTERS, n_filter_queries: int = DEFAULT_FILTER_QUERIES):
        self.k_list = _check_k_list(k_list)
        self.ef_search_sweep = tuple(int(v) for v in ef_search_sweep)
        self.nprobe_sweep = None if nprobe_sweep is None else tuple(int(v) for v in nprobe_sweep)
        if not 0 < target_recall <= 1:
            raise ValueError(f"target_recall must be in (0, 1], got {target_recall}")
        self.target_recall = float(target_recall)
        self.n_sample_queries = int(n_sample_queries)
        for name, v in (("n_sample_filters", n_sample_filters), ("n_filter_queries", n_filter_queries)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"index option {name!r} must be an integer >= 0, got {v!r}")
        self.n_sample_filters, self.n_filter_queries = n_sample_filters, n_filter_queries
        self.use_user_results = bool(use_user_results)
        self.seed = int(seed)
        register(*specs_for(self.k_list))

    def options(self) -> dict[str, Any]:
        return {"k_list": list(self.k_list), "ef_search_sweep": list(self.ef_search_sweep),
                "nprobe_sweep": None if self.nprobe_sweep is None else list(self.nprobe_sweep),
                "target_recall": self.target_recall, "n_sample_queries": self.n_sample_queries,
                "n_sample_filters": self.n_sample_filters, "n_filter_queries": self.n_filter_queries,
                "use_user_results": self.use_user_results, "seed": self.seed, "tie_rtol": ann.DEFAULT_RTOL,
                "ip_dominated_rtol": ann.DOMINATION_RTOL, "operating_point_interval": OP_INTERVAL}

    def metric_names(self) -> list[str]:
        """Every metric this auditor writes, for its k_list."""
        return [s.name for s in specs_for(self.k_list)]

    def needs_chunk_vectors(self, pipeline: Any) -> bool:
        """False when this pipeline's vectors come from the user (``vectors.npy`` in its outputs folder and
        ``use_user_results`` on): the runner may then skip embedding its chunks for this stage."""
        return not (self.use_user_results and has_user_vectors(getattr(pipeline, "folder", None)))

    def audit_pipeline(self, ctx: PipelineContext) -> PipelineResult:
        """Audit one pipeline; never raises for bad stage output (``error`` rows with the message instead)."""
        try:
            inputs = self._inputs(ctx)
            if isinstance(inputs, str):
                return self._missing(State.NO_PREDICTION, inputs)
            user = inputs.pop("_user", None)
            result = audit_vectors(**inputs)
        except Exception as exc:
            return self._missing(State.ERROR, f"{type(exc).__name__}: {exc}")
        details = dict(result.details)
        if user is not None:
            details["source"] = {**details.get("source", {}), **user}
            if user["chunks_without_user_vector"]:
                details["overview"]["warnings"].append(
                    f"{user['chunks_without_user_vector']} chunk(s) of the run have no vector in "
                    f"{user['vectors']} (the audit covers the {user['user_vectors']} vectors given)")
        timings = details.pop("timings", {})
        return PipelineResult(corpus_scores=result.corpus_scores, details=details, timings=timings,
                              failures=_answer_failures(details.get("queries", {})))

    def _missing(self, state: State, reason: str) -> PipelineResult:
        """Every metric in ``state``; an ``error`` (a user's file that cannot be used, a failed build) is also the
        pipeline's failure, listed once like any other."""
        rows = [(ALL, Score.missing(m, state, reason), 0) for m in self.metric_names()]
        return PipelineResult(corpus_scores=rows, details={"state": {"state": state.value, "reason": reason},
                                                           "overview": {"warnings": [f"{state.value}: {reason}"],
                                                                        "lines": []}},
                              failures=[reason] if state is State.ERROR else [])

    def _inputs(self, ctx: PipelineContext) -> dict[str, Any] | str:
        """audit_vectors keyword arguments for ``ctx``, or the reason there is nothing to audit.

        Raises:
            UserIndexError, IndexInputError: a user's file that cannot be audited (named), vectors of different
                dimensions, or a dimension that differs from the embedder's.
        """
        from ingestaudit.questions import filter_passes

        if ctx.index is None:
            raise ValueError("no index step: PipelineContext.index is None (the runner attaches it with "
                             "ingestaudit.stages.retrieve_step.with_index_steps)")
        settings = ctx.index.pipeline_settings()
        normalise = ctx.index.normalise
        docs = [d for d in ctx.docs if d.state is State.OK and len(d.texts)]
        doc_class = {d.doc_id: d.doc_class for d in ctx.docs}
        meta: dict[str, dict[str, Any]] = {}
        for d in docs:  # every chunk of the run, embedded or not: a user's vector ids are checked against them
            for i in range(len(d.texts)):
                meta[f"{d.doc_id}#{i}"] = d.metadata[i] if i < len(d.metadata) else {}
        dim_of = getattr(ctx.embed_questions, "dimension", None)
        model_dim = int(dim_of()) if callable(dim_of) else None
        folder = ctx.pipeline.folder if self.use_user_results else None
        ann_results = None
        if has_user_vectors(folder):
            source = str(Path(folder) / "vectors.npy")
            vectors, ids = read_user_vectors(folder, ctx.input_limits())
            for pos, cid in enumerate(ids):
                if cid not in meta:
                    raise UserIndexError(f"{Path(folder) / 'vector_ids.json'}: id {cid!r} (position {pos}) does not "
                                         "match a chunk of the run (expected '<doc id>#<chunk index>' of a document "
                                         f"with chunks; {len(meta)} chunks in the run)")
            run_dims = {int(np.shape(d.vectors)[1]) for d in docs if d.vectors is not None and np.ndim(d.vectors) == 2}
            want = model_dim if model_dim is not None else (run_dims.pop() if len(run_dims) == 1 else None)
            if want is not None and vectors.shape[1] != want:
                raise IndexInputError(f"{source}: dimension {vectors.shape[1]} does not match the pipeline "
                                      f"embedder's dimension ({want})")
            if os.path.lexists(Path(folder) / "ann_results.jsonl"):  # a FIFO too: refused, never the HNSW instead
                ann_results = read_ann_results(Path(folder) / "ann_results.jsonl", ctx.input_limits().results_bytes)
            user = {"vectors": source, "user_vectors": len(ids), "chunks_without_user_vector": len(meta) - len(ids),
                    "chunks_embedded_by_the_run": sum(d.vectors is not None for d in docs) > 0}
        else:
            if folder is not None and os.path.lexists(Path(folder) / "ann_results.jsonl"):  # never ignored
                raise UserIndexError(f"{Path(folder) / 'ann_results.jsonl'}: needs the vectors it answers on, "
                                     f"{Path(folder) / 'vectors.npy'} and vector_ids.json (its result ids name their "
                                     "rows); without them the user's answers cannot be audited")
            source, user = "the chunk vectors", None
            embedded = [d for d in docs if d.vectors is not None]
            if not embedded:
                return "no chunk vectors for this pipeline (no document has embedded chunks)"
            ids, parts = [], []
            first_dim = None
            for d in embedded:
                v = np.asarray(d.vectors)
                if v.ndim != 2 or v.shape[0] != len(d.texts):
                    raise IndexInputError(f"document {d.doc_id!r}: {np.shape(v)} vectors for {len(d.texts)} chunks")
                if first_dim is None:
                    first_dim = (d.doc_id, v.shape[1])
                elif v.shape[1] != first_dim[1]:
                    raise IndexInputError(f"document {d.doc_id!r}: vectors of dimension {v.shape[1]}, but "
                                          f"{first_dim[0]!r} has {first_dim[1]}")
                ids += [f"{d.doc_id}#{i}" for i in range(len(d.texts))]
                parts.append(v)
            vectors = np.concatenate(parts)  # a copy the audit owns (normalised in place when needed)
            del parts
            if model_dim is not None and vectors.shape[1] != model_dim:
                raise IndexInputError(f"{source}: dimension {vectors.shape[1]} does not match the pipeline "
                                      f"embedder's dimension ({model_dim})")
        classes = [doc_class.get(c.rsplit("#", 1)[0], c.split("/", 1)[0]) for c in ids]
        metas = [meta[c] for c in ids]
        kw: dict[str, Any] = {"sampled_filters": sample_filters(metas, self.n_sample_filters, self.seed),
                              "n_filter_queries": self.n_filter_queries}
        if ctx.questions and ctx.embed_questions is not None:
            qv = np.asarray(ctx.embed_questions([q.question for q in ctx.questions]), dtype=np.float32)
            if qv.ndim != 2 or qv.shape[1] != vectors.shape[1]:
                raise IndexInputError(f"{source}: dimension {vectors.shape[1]} does not match the embedder's "
                                      f"question vectors ({qv.shape[-1] if qv.ndim else '?'})")
            allowed = [None if not q.filter else
                       np.array([r for r, md in enumerate(metas) if filter_passes(q.filter, md)], dtype=np.int64)
                       for q in ctx.questions]
            kw |= {"queries": qv, "query_ids": [q.id for q in ctx.questions],
                  "query_filters": [q.filter or None for q in ctx.questions],
                  "query_classes": [ctx.question_classes.get(q.id, "unclassified") for q in ctx.questions],
                  "query_allowed": allowed}
        sweep = self.ef_search_sweep if settings.kind == "hnsw" else self.nprobe_sweep
        return {"vectors": vectors, "chunk_ids": ids, "chunk_classes": classes, **kw,
                "declared_metric": settings.metric, "normalised": bool(normalise), "settings": settings,
                "k_list": self.k_list, "sweep": sweep, "target_recall": self.target_recall,
                "n_sample_queries": self.n_sample_queries, "seed": self.seed, "ann_results": ann_results,
                "normalise_in_place": True, "step": ctx.index, "_user": user}
