"""Hand-built reports for the gate, history and renderer tests: measurement rows in, a full `Report` out (summary,
paired tests and item hashes computed the way a run computes them)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingestaudit.report.aggregate import summarize
from ingestaudit.report.paired import paired_tests
from ingestaudit.report.tables import all_headline_keys
from ingestaudit.report.schema import (CorpusInfo, Failure, MeasurementRow, PipelineInfo, Report, StageDetail,
                                       StageInfo, SummaryRow, ToolInfo)

STATES = ("ok", "no_reference", "no_prediction", "error", "skipped")


@dataclass
class Row:
    """One measurement: ``value = num / den`` when both are given."""

    item: str
    doc_class: str
    pipeline: str
    metric: str
    value: float | None
    num: float | None = None
    den: float | None = None
    state: str = "ok"
    label: str = ""
    kind: str = "document"
    reason: str = ""


def cer_rows(pipeline: str, doc_class: str, values: list[float], den: float | list[float] = 100.0,
             prefix: str | None = None, metric: str = "extraction.cer") -> list[Row]:
    """One CER row per document ``<class>/d00``, ``d01``...: value ``v``, counts ``v * den / den``."""
    dens = den if isinstance(den, list) else [den] * len(values)
    pre = prefix if prefix is not None else doc_class
    return [Row(f"{pre}/d{i:02d}", doc_class, pipeline, metric, v, v * d, d) for i, (v, d) in
            enumerate(zip(values, dens))]


def build(rows: list[Row], *, pipelines: list[str] | None = None, auditors: dict[str, Any] | None = None,
          seed: int = 0, failures: list[Failure] | None = None, details: list[StageDetail] | None = None,
          extra_summary: list[SummaryRow] | None = None, fingerprint: str = "f" * 64,
          hashes: dict[str, str] | None = None, gate: dict[str, Any] | None = None,
          questions: int = 0) -> Report:
    """A report over ``rows`` as `ingestaudit.runner.run` would build it."""
    names = pipelines or sorted({r.pipeline for r in rows})
    meas = [MeasurementRow(item=r.item, item_kind=r.kind, doc_class=r.doc_class, pipeline=r.pipeline,
                           stage=r.metric.split(".", 1)[0], metric=r.metric, label=r.label,
                           value=r.value if r.state == "ok" else None,
                           numerator=r.num if r.state == "ok" else None,
                           denominator=r.den if r.state == "ok" else None, state=r.state,
                           detail={"reason": r.reason} if r.reason else {}) for r in rows]
    meas.sort(key=lambda m: (m.item_kind, m.item, names.index(m.pipeline), m.stage, m.metric, m.label))
    docs: dict[str, int] = {}
    for item, cls in sorted({(r.item, r.doc_class) for r in rows if r.kind == "document"}):
        docs[cls] = docs.get(cls, 0) + 1
    items = sorted({r.item for r in rows})
    config = {"run": {"seed": seed, "parsers": names, "stages": sorted({m.stage for m in meas}),
                      "min_span_coverage": 0.5},
              "report": {"bootstrap_resamples": 1000, "confidence": 0.95},
              "auditors": auditors if auditors is not None else {"extraction": {"normalization": "text-v1"}},
              "gate": gate or {}}
    summary = summarize(meas, names, seed=seed, extra=extra_summary or [])
    return Report(
        tool=ToolInfo(name="ingestaudit", version="test"),
        corpus=CorpusInfo(path="/corpora/test", fingerprint=fingerprint, documents=dict(sorted(docs.items())),
                          questions=questions,
                          item_hashes=hashes if hashes is not None else
                          {i: hashlib.sha256(i.encode()).hexdigest() for i in items}),
        config=config, environment={"python": "3"},
        pipelines=[PipelineInfo(name=p, kind="configured",
                                stages={"parser": StageInfo(implementation=p, version="1", settings={})})
                   for p in names],
        measurements=meas,
        summary=summary, failures=failures or [], details=details or [],
        paired_tests=paired_tests(meas, names, seed=seed, keys=all_headline_keys(summary)))


def write(report: Report, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report.to_json(), encoding="utf-8")
    return path


def reload(report: Report) -> Report:
    """The report as a reader of its JSON sees it."""
    return Report.model_validate(json.loads(report.to_json()))
