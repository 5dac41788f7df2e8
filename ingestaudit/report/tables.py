"""The view model shared by the terminal, Markdown and HTML renderers: one table per class, metrics x pipelines."""

from __future__ import annotations

from dataclasses import dataclass

from ingestaudit.metrics import specs
from ingestaudit.report.schema import ALL_CLASSES, Report, SummaryRow


@dataclass(frozen=True)
class Cell:
    """One summary row as text: ``value`` = micro (macro), ``extra`` = interval, n and non-ok state counts."""

    value: str
    extra: str


@dataclass(frozen=True)
class ClassTable:
    """Rows of metric names (with label) by pipeline columns, for one document class."""

    doc_class: str
    pipelines: list[str]
    rows: list[tuple[str, list[Cell]]]


def fmt(x: float | None, digits: int = 4) -> str:
    """A value with ``digits`` decimals, or an em dash for None."""
    return "—" if x is None else f"{x:.{digits}f}"


def cell(row: SummaryRow | None, digits: int = 4) -> Cell:
    """Format one summary row (None when the pipeline has no row for that metric)."""
    if row is None:
        return Cell("", "")
    if row.micro is not None and row.macro is not None:
        value = f"{fmt(row.micro, digits)} ({fmt(row.macro, digits)})"
    else:  # a corpus-level value (macro None) or a metric without counts (micro None)
        value = fmt(row.micro if row.micro is not None else row.macro, digits)
    ci = f"[{fmt(row.ci_low)}, {fmt(row.ci_high)}] " if row.ci_low is not None else ""
    if row.level == "corpus":  # one value over the class's documents, not an aggregate of per-document rows
        state = next((s for s, n in row.states.items() if n), "ok")
        return Cell(value, f"{ci}corpus of {row.n_docs} docs" + ("" if state == "ok" else f"; {state}"))
    other = ", ".join(f"{n} {s}" for s, n in row.states.items() if n and s != "ok")
    return Cell(value, f"{ci}n={row.n_docs}" + (f"; {other}" if other else ""))


def class_tables(report: Report, digits: int = 4) -> list[ClassTable]:
    """One table per class (sorted, ``__all__`` last), rows ``metric[label]``, columns the report's pipelines; values
    with ``digits`` decimals."""
    pipelines = [p.name for p in report.pipelines]
    by_class: dict[str, dict[str, dict[str, SummaryRow]]] = {}
    for r in report.summary:
        name = r.metric + (f"[{r.label}]" if r.label else "")
        by_class.setdefault(r.doc_class, {}).setdefault(name, {})[r.pipeline] = r
    tables = []
    for cls in sorted(by_class, key=lambda c: (c == ALL_CLASSES, c)):
        rows = [(name, [cell(by_pipeline.get(p), digits) for p in pipelines]) for name, by_pipeline in sorted(by_class[cls].items())]
        tables.append(ClassTable(cls, pipelines, rows))
    return tables


def direction(metric: str) -> str:
    """``"↑"`` when higher is better, ``"↓"`` when lower is better, ``"→1"`` when the best value is 1 (an ideal
    inside the range), ``""`` for unregistered metrics."""
    try:
        spec = specs.get(metric.split("[", 1)[0])
    except KeyError:
        return ""
    if spec.ideal is not None:
        return f"→{spec.ideal:g}"
    return "↑" if spec.higher_is_better else "↓"
