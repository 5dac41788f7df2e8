"""What changed between a gate's baseline and head, in words a person reads first: the configuration as dotted
paths (``chunker.size 500 -> 4000``, ``index.use hnsw -> ivf``, ``run.seed 0 -> 7``, a routed parser's route
``parser.routes.pdf.use pymupdf -> unstructured``) and the corpus (fingerprint, items added, removed, changed).

Order (`importance`): the implementations of the steps that move retrieval numbers most (`KEY_STEPS`: parser and
its routes, retriever, embedder, chunker), then other steps' implementations, then the key steps' settings, other
steps' settings, versions, and last the run and auditor settings. Every change is printed (wrapped, never cut)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ingestaudit.report.schema import PipelineInfo, Report

RUN_KEYS_SKIPPED = ("parsers", "stages", "cache_dir")
"""``config["run"]`` keys that say which run this was, not how it measured (the pipelines' parsers are compared
through the pipelines; ``stages`` selects what is audited, and a stage no longer audited shows as missing rows)."""


def flatten(value: Any, prefix: str) -> dict[str, Any]:
    """``{"a": {"b": 1}}`` as ``{"prefix.a.b": 1}``; a list or a scalar is one leaf."""
    if not isinstance(value, dict):
        return {prefix: value}
    out: dict[str, Any] = {}
    for k, v in value.items():
        out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


KEY_STEPS = ("parser", "retriever", "embedder", "chunker")
"""The steps whose changes are listed first, in this order."""


def _pipeline_paths(p: PipelineInfo | None) -> dict[str, Any]:
    """A pipeline's steps as dotted paths: ``STEP.use`` (the implementation), ``STEP.version`` and each setting;
    a parser routed by extension adds ``parser.routes.EXT.use``, ``.version`` and its settings per route."""
    if p is None:
        return {}
    out: dict[str, Any] = {}
    for step, info in p.stages.items():
        out[f"{step}.use"] = info.implementation
        out[f"{step}.version"] = info.version
        out.update(flatten(info.settings, step))
    for route in p.routes:
        at = f"parser.routes.{route.extension}"
        out[f"{at}.use"] = route.implementation
        out[f"{at}.version"] = route.version
        out.update(flatten(route.settings, at))
    return out


def importance(change: Mapping[str, Any]) -> tuple:
    """The sort key of a change (module docstring): ``(tier, key step's rank, pipeline, path)``, tiers 0 key step
    implementation, 1 other step implementation, 2 key step setting, 3 other step setting, 4 version, 5 run or
    auditor setting."""
    path = str(change["path"])
    step = path.split(".", 1)[0]
    rank = KEY_STEPS.index(step) if step in KEY_STEPS else len(KEY_STEPS)
    if not change.get("pipeline"):
        tier = 5
    elif path.endswith(".version"):
        tier = 4
    elif path.endswith(".use"):
        tier = 0 if step in KEY_STEPS else 1
    else:
        tier = 2 if step in KEY_STEPS else 3
    return tier, rank, str(change.get("pipeline", "")), path


def _run_paths(r: Report) -> dict[str, Any]:
    run = r.config.get("run") if isinstance(r.config.get("run"), dict) else {}
    out = flatten({k: v for k, v in run.items() if k not in RUN_KEYS_SKIPPED}, "run")
    auditors = r.config.get("auditors") if isinstance(r.config.get("auditors"), dict) else {}
    for stage, options in auditors.items():
        if isinstance(options, dict):  # the conventions are prose: a changed wording is not a change of setting
            out.update(flatten({k: v for k, v in options.items() if k != "conventions"}, f"auditors.{stage}"))
    return out


def config_changes(base: Report, head: Report, pairs: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """Every configuration difference between ``base`` and ``head``: per paired pipeline (``pairs``: baseline
    name, head name) its steps' implementations, versions and settings, then the run settings and the auditors'
    options. Each is ``{"path", "base", "head", "pipeline"}`` (``pipeline`` the head's name, ``""`` for a run
    setting); a value one side lacks is None. Sorted by `importance`."""
    out: list[dict[str, Any]] = []
    b_pipes = {p.name: p for p in base.pipelines}
    h_pipes = {p.name: p for p in head.pipelines}
    for pb, ph in pairs:
        out += _diff(_pipeline_paths(b_pipes.get(pb)), _pipeline_paths(h_pipes.get(ph)), ph)
    return sorted(out + _diff(_run_paths(base), _run_paths(head), ""), key=importance)


def _diff(a: Mapping[str, Any], b: Mapping[str, Any], pipeline: str) -> list[dict[str, Any]]:
    return [{"path": k, "base": a.get(k), "head": b.get(k), "pipeline": pipeline}
            for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]


def corpus_change(base: Report, head: Report, items: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """The two corpora's fingerprints and how many items were added, removed or changed (``items``: the
    comparison's lists)."""
    return {"base_fingerprint": base.corpus.fingerprint, "head_fingerprint": head.corpus.fingerprint,
            "same": base.corpus.fingerprint == head.corpus.fingerprint,
            **{k: len(items.get(k, ())) for k in ("added", "removed", "changed")}}


def value_text(v: Any, limit: int = 40) -> str:
    """A changed value as printed: ``(unset)``, a bare string, else JSON; cut at ``limit`` characters."""
    text = "(unset)" if v is None else v if isinstance(v, str) else json.dumps(v, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def change_lines(changes: Sequence[Mapping[str, Any]], corpus: Mapping[str, Any]) -> list[str]:
    """The first lines of a gate's verdict: ``what changed: chunker.size 500 -> 4000; ...`` (every path, in the
    order of `importance`; a pipeline named when several differ) and, when the corpora differ, ``corpus changed:
    ...``. The caller wraps the line; nothing is cut."""
    lines = []
    if changes:
        several = len({c["pipeline"] for c in changes if c["pipeline"]}) > 1
        shown = [(f"{c['pipeline']}: " if several and c["pipeline"] else "")
                 + f"{c['path']} {value_text(c['base'])} -> {value_text(c['head'])}"
                 for c in sorted(changes, key=importance)]
        lines.append("what changed: " + "; ".join(shown))
    if corpus and not corpus.get("same", True):
        counts = ", ".join(f"{corpus[k]} {k}" for k in ("added", "removed", "changed") if corpus.get(k))
        lines.append(f"corpus changed: fingerprint {corpus['base_fingerprint'][:12]} -> "
                     f"{corpus['head_fingerprint'][:12]}" + (f"; items {counts}" if counts else "")
                     + "; items pair by id and content hash")
    return lines
