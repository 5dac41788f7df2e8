"""Embedding drift between a baseline run and this run, from the vectors both kept (``--keep-vectors``,
`ingestaudit.kept_vectors`); computed by ``ingestaudit compare`` and ``ingestaudit run --baseline``.

Per pair of pipelines (the gate's pairing, `ingestaudit.report.compare.pipeline_pairs`):

- **items** are chunks named by ``(document, start, end)`` (located offsets in the cleaned text); an item *present in
  both runs* (an unchanged chunk) has the same key in both; a chunk that was not located (``-1``) is never one and,
  as a neighbour, never matches across runs.
- **probes**: the questions both runs embedded (by id) plus a seeded sample of ``chunk_probes`` (default 200) items
  present in both runs (``numpy.random.default_rng(seed).choice`` without replacement, sorted).
- **neighbours**: exact top-k by inner product on the kept (L2-normalised) vectors, i.e. cosine
  (`ingestaudit.stages.index.exact_search`, FAISS brute force); a chunk probe's own key is dropped (it never
  counts as its own neighbour; k + 1 are asked for).
- ``embedding.nn_stability@k`` (default k = 10): mean neighbour Jaccard over probes
  (`ingestaudit.metrics.embedding_drift.nn_stability`); the ten least stable probes are listed with their base and
  head neighbours.
- ``embedding.drift_mmd`` / ``embedding.drift_p``: MMD_b² with the RBF median-heuristic kernel between the base and
  head vectors of the items present in both runs, and its permutation p-value with ``permutations`` (B, default 500)
  seeded relabellings (`ingestaudit.metrics.embedding_drift.mmd_test`). Above ``mmd_sample`` (default 1,000) items a
  seeded sample of that many items is tested (the kernel matrix is quadratic); ``mmd.sampled`` says so. With fewer
  than 2 items present in both runs the test is ``not_computable`` with the reason (one item per side gives p = 1
  whatever the vectors), and both values are None, never MMD 0 with p = 1.
- ``embedding.cosine_unchanged``: per item present in both runs, the cosine of its base and head vectors; the mean is
  the value, the distribution (quantiles, a 20-bin histogram, the lowest ten items) its detail.

A baseline whose vectors are of another dimension or another model (embedder implementation or ``model`` setting)
is ``not_comparable`` with the reason, never a number; so is a pipeline either run kept no vectors for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ingestaudit.metrics.embedding_drift import MIN_MMD_ITEMS, least_stable, mmd_test, nn_stability, row_cosines
from ingestaudit.metrics.specs import MetricSpec, register

DEFAULT_K = 10
DEFAULT_CHUNK_PROBES = 200
DEFAULT_PERMUTATIONS = 500
DEFAULT_MMD_SAMPLE = 1000
LISTED = 10


def stability_spec(k: int) -> MetricSpec:
    """The spec of ``embedding.nn_stability@k``."""
    return MetricSpec(f"embedding.nn_stability@{k}", f"mean over probes (questions + a seeded sample of chunks present "
                      f"in both runs) of the Jaccard of the probe's exact cosine top-{k} neighbour sets in the base "
                      "and head runs, neighbours named by document and offsets (a re-chunked document's neighbours "
                      "no longer match); 1.0 = unchanged; kept vectors of both runs (--keep-vectors)", True,
                      unit="probes")


METRICS = (
    stability_spec(DEFAULT_K),
    MetricSpec("embedding.drift_mmd", "squared maximum mean discrepancy MMD_b^2 (Gretton et al. 2012, biased "
               "V-statistic) between the base and head vectors of the chunks present in both runs; RBF kernel "
               "exp(-||x-y||^2 / med) with med the median pooled squared distance (sigma^2 = med/2); 0 = same "
               "distribution", False, high=None, unit="items"),
    MetricSpec("embedding.drift_p", "permutation p-value of embedding.drift_mmd: (1 + #relabellings with MMD >= "
               "observed) / (1 + B), B seeded relabellings (Phipson & Smyth 2010); small = the vectors moved", True,
               unit="items"),
    MetricSpec("embedding.cosine_unchanged", "mean over chunks present in both runs (same document and offsets) of "
               "the cosine between the chunk's base and head vectors; 1.0 = same vectors (a model or library change "
               "shows here first)", True, low=-1.0, unit="chunks"),
)
register(*METRICS)


def model_identity(embedder: dict[str, Any]) -> tuple[str, str]:
    """``(implementation, settings.model)`` of a kept run's embedder (``""`` when absent): two runs whose identities
    differ made vectors in different spaces."""
    settings = embedder.get("settings") if isinstance(embedder.get("settings"), dict) else {}
    return str(embedder.get("implementation", "")), str(settings.get("model", ""))


def not_comparable_reason(base: Any, head: Any) -> str:
    """Why two kept runs (`ingestaudit.kept_vectors.KeptRun`) cannot be compared, or ``""``."""
    if base.dimension != head.dimension:
        return f"vectors of dimension {base.dimension} in the baseline, {head.dimension} in this run"
    if model_identity(base.embedder) != model_identity(head.embedder):
        b, h = model_identity(base.embedder), model_identity(head.embedder)
        return f"embedder {'/'.join(x for x in b if x)} in the baseline, {'/'.join(x for x in h if x)} in this run"
    if not base.vectors.shape[0] or not head.vectors.shape[0]:
        return "a run kept no chunk vectors"
    return ""


def _neighbour_keys(vectors: np.ndarray, keys: Sequence[tuple], queries: np.ndarray, k: int,
                    drop: Sequence[tuple | None]) -> list[list[tuple]]:
    """Top-k neighbour keys per query (own key ``drop[i]`` removed)."""
    from ingestaudit.stages.index import exact_search

    if not len(queries):
        return []
    _, ids = exact_search(np.ascontiguousarray(vectors, dtype=np.float32),
                          np.ascontiguousarray(queries, dtype=np.float32), min(k + 1, len(keys)), "ip")
    out = []
    for row, own in zip(ids, drop):
        got = []
        for i in row:
            if i < 0:
                continue
            key = keys[i]
            if own is not None and key == own:
                continue
            got.append(key)
        out.append(got[:k])
    return out


def _key_text(key: tuple) -> str:
    return f"{key[0]}[{key[1]}:{key[2]}]" if key[1] >= 0 else f"{key[0]} chunk {-1 - key[2]} (not located)"


def drift_between(base: Any, head: Any, *, k: int = DEFAULT_K, chunk_probes: int = DEFAULT_CHUNK_PROBES,
                  permutations: int = DEFAULT_PERMUTATIONS, mmd_sample: int = DEFAULT_MMD_SAMPLE, seed: int = 0
                  ) -> dict[str, Any]:
    """The drift of one pipeline pair (module docstring) as a JSON-ready dict: ``state`` ``"ok"`` with ``metrics``
    (name -> value), ``nn_stability``, ``mmd``, ``cosine_unchanged`` and ``least_stable``; or ``"not_comparable"``
    with ``reason`` and no number."""
    reason = not_comparable_reason(base, head)
    if reason:
        return {"state": "not_comparable", "reason": reason}
    head_row: dict[tuple, int] = {}
    for i, key in enumerate(head.keys):
        if key[1] >= 0:
            head_row.setdefault(key, i)
    common = []  # (base row, head row, key) of items present in both runs, base order
    seen: set[tuple] = set()
    for i, key in enumerate(base.keys):
        if key[1] >= 0 and key in head_row and key not in seen:
            seen.add(key)
            common.append((i, head_row[key], key))
    rng = np.random.default_rng(seed)
    picked = sorted(rng.choice(len(common), size=min(chunk_probes, len(common)), replace=False).tolist()) \
        if common else []
    q_head = {q: i for i, q in enumerate(head.question_ids)}
    q_pairs = [(i, q_head[q], q) for i, q in enumerate(base.question_ids) if q in q_head]
    names = [f"question {q}" for _, _, q in q_pairs] + [f"chunk {_key_text(common[j][2])}" for j in picked]
    b_queries = np.vstack([base.questions[[i for i, _, _ in q_pairs]], base.vectors[[common[j][0] for j in picked]]]) \
        if names else np.zeros((0, base.dimension), np.float32)
    h_queries = np.vstack([head.questions[[h for _, h, _ in q_pairs]], head.vectors[[common[j][1] for j in picked]]]) \
        if names else np.zeros((0, head.dimension), np.float32)
    own = [None] * len(q_pairs) + [common[j][2] for j in picked]
    b_nn = _neighbour_keys(base.vectors, base.keys, b_queries, k, own)
    h_nn = _neighbour_keys(head.vectors, head.keys, h_queries, k, own)
    stability, per = nn_stability(zip(b_nn, h_nn))
    listed = [{"probe": names[i], "stability": per[i], "base": [_key_text(x) for x in b_nn[i]],
               "head": [_key_text(x) for x in h_nn[i]]} for i in least_stable(per, LISTED)]
    out: dict[str, Any] = {
        "state": "ok", "k": k,
        "probes": {"questions": len(q_pairs), "chunks": len(picked), "seed": seed, "chunk_sample": chunk_probes,
                   "defined": sum(v is not None for v in per)},
        "items_in_both": len(common), "items_base": len(base.keys), "items_head": len(head.keys),
        "nn_stability": stability, "least_stable": listed,
    }
    metrics: dict[str, float | None] = {f"embedding.nn_stability@{k}": stability}
    if common:
        rows_b = np.array([b for b, _, _ in common])
        rows_h = np.array([h for _, h, _ in common])
        cos = row_cosines(base.vectors[rows_b], head.vectors[rows_h])
        defined = cos[~np.isnan(cos)]
        low = np.argsort(np.where(np.isnan(cos), np.inf, cos), kind="stable")[:LISTED]
        out["cosine_unchanged"] = {
            "n": int(len(cos)), "undefined_zero_vectors": int(np.isnan(cos).sum()),
            "mean": float(defined.mean()) if defined.size else None,
            "min": float(defined.min()) if defined.size else None,
            "quantiles": {q: float(np.quantile(defined, float(q) / 100, method="inverted_cdf"))
                          for q in ("1", "5", "50")} if defined.size else {},
            "below_0.9999": int((defined < 0.9999).sum()),
            "histogram": {"edges": np.linspace(-1, 1, 21).tolist(),
                          "counts": np.histogram(defined, bins=20, range=(-1, 1))[0].tolist()},
            "lowest": [{"item": _key_text(common[i][2]), "cosine": float(cos[i])} for i in low if not np.isnan(cos[i])],
        }
        metrics["embedding.cosine_unchanged"] = out["cosine_unchanged"]["mean"]
        if len(common) < MIN_MMD_ITEMS:
            out["mmd"] = {"state": "not_computable", "items": len(common),
                          "reason": f"{len(common)} chunk present in both runs; the MMD test needs at least "
                                    f"{MIN_MMD_ITEMS} (with one, every relabelling gives the same MMD: p = 1 "
                                    "whatever the vectors)"}
            metrics["embedding.drift_mmd"] = metrics["embedding.drift_p"] = None
        else:
            sample = np.arange(len(common))
            if len(common) > mmd_sample:
                sample = np.sort(np.random.default_rng(seed).choice(len(common), size=mmd_sample, replace=False))
            mmd = mmd_test(base.vectors[rows_b[sample]], head.vectors[rows_h[sample]], permutations=permutations,
                           seed=seed).to_dict()
            mmd["sampled"] = bool(len(common) > mmd_sample)
            mmd["items"] = int(len(common))
            out["mmd"] = mmd
            metrics["embedding.drift_mmd"] = mmd["mmd2"]
            metrics["embedding.drift_p"] = mmd["p_value"]
    else:
        out["cosine_unchanged"] = out["mmd"] = {"state": "no_reference", "reason": "no chunk is present in both runs"}
    out["metrics"] = metrics
    return out


def compare_kept(base_folder: Any, head_folder: Any, pairs: Sequence[tuple[str, str]], *, seed: int = 0,
                 limits: Any = None, **options: Any) -> list[dict[str, Any]]:
    """`drift_between` for each ``(base pipeline, head pipeline)`` of ``pairs``, each result with ``base_pipeline``
    and ``head_pipeline``; when a folder's kept vectors cannot be read (`ingestaudit.kept_vectors.read_kept`: a
    malformed file, a NaN or an infinity) every pair is ``not_comparable``, the reason naming the side (the
    baseline, this run), the file and the field; an empty list when neither run kept vectors."""
    from ingestaudit.kept_vectors import KeptVectorsError, has_kept_vectors, read_kept

    has_b, has_h = has_kept_vectors(base_folder), has_kept_vectors(head_folder)
    if not has_b and not has_h:
        return []
    runs: list[dict[str, Any]] = []
    reasons = []  # each side's, so that a broken file of this run is not blamed on the baseline
    for folder, present, side in ((base_folder, has_b, "the baseline"), (head_folder, has_h, "this run")):
        if not present:
            reasons.append(f"{side} kept no vectors (run it with --keep-vectors)")
            runs.append({})
            continue
        try:
            runs.append(read_kept(folder, limits))
        except KeptVectorsError as exc:
            reasons.append(f"{side}'s kept vectors are unusable: {exc}")
            runs.append({})
    why = "; ".join(reasons)
    out = []
    for b, h in pairs:
        head_of = {"base_pipeline": b, "head_pipeline": h}
        if why:
            out.append({**head_of, "state": "not_comparable", "reason": why})
        elif b not in runs[0] or h not in runs[1]:
            side = "the baseline" if b not in runs[0] else "this run"
            out.append({**head_of, "state": "not_comparable", "reason": f"{side} kept no vectors for this pipeline"})
        else:
            out.append({**head_of, **drift_between(runs[0][b], runs[1][h], seed=seed, **options)})
    return out


def render_drift(results: Sequence[dict[str, Any]], *, markdown: bool = False) -> list[str]:
    """Lines of the drift section (terminal text, or Markdown with ``markdown``): per pipeline pair the metrics or
    the reason, then the least stable probes with their base and head neighbours."""
    if not results:
        return []
    out = ["## Embedding drift" if markdown else "embedding drift (kept vectors of both runs)", ""]
    for r in results:
        pair = r["head_pipeline"] if r["base_pipeline"] == r["head_pipeline"] else \
            f"{r['base_pipeline']} -> {r['head_pipeline']}"
        if r.get("state") != "ok":
            out.append(f"- {pair}: not_comparable: {r.get('reason', '')}")
            continue
        m, mmd = r["metrics"], r.get("mmd", {})
        vals = ", ".join(f"{name} = {v:.4g}" if isinstance(v, float) else f"{name} = n/a" for name, v in m.items())
        out.append(f"- {pair}: {vals}")
        p = r["probes"]
        out.append(f"  probes: {p['questions']} questions + {p['chunks']} chunks (seed {p['seed']}); "
                   f"{r['items_in_both']} chunks in both runs")
        if mmd.get("state") in ("not_computable", "no_reference"):
            out.append(f"  MMD: {mmd['state'].replace('_', ' ')}: {mmd['reason']}")
        if "permutations" in mmd:
            out.append(f"  MMD: B = {mmd['permutations']} permutations, seed {mmd['seed']}, sigma^2 = "
                       f"{mmd['sigma2']:.4g} ({mmd['bandwidth_rule']}), {mmd['n']} items"
                       + (f" (a seeded sample of {mmd['items']})" if mmd.get("sampled") else ""))
        unstable = [x for x in r["least_stable"] if x["stability"] is not None and x["stability"] < 1.0]
        if unstable:
            out.append(f"  least stable probes (top-{r['k']} neighbours, base | head):")
            for x in unstable:
                out.append(f"  - {x['probe']}: {x['stability']:.3f}")
                out.append(f"    base: {', '.join(x['base'])}")
                out.append(f"    head: {', '.join(x['head'])}")
    if markdown:  # every line's text escaped (document ids are the user's), its indentation and bullet kept
        import re

        from ingestaudit.report.escape import md_text

        lead = re.compile(r"^(\s*(?:- )?)(.*)$")
        out = out[:2] + [m.group(1) + md_text(m.group(2)) if m.group(2) else m.group(1)
                         for m in (lead.match(x) for x in out[2:])]
    return out + [""]
