"""The metric reference (docs/metrics.md), generated from the registry so that it never drifts from the code."""

from __future__ import annotations

from ingestaudit.metrics import specs


def metrics_markdown() -> str:
    """Markdown table of every registered metric: name, direction, range, unit, interval method, description."""
    out = ["# Metrics", "",
           "Generated from the metric registry by `python -m ingestaudit.report.metric_docs > docs/metrics.md`; "
           "a test fails when this file is stale.", "",
           "| metric | best | range | unit | interval | definition |", "|---|---|---|---|---|---|"]
    for s in specs.all_specs():
        best = f"{s.ideal:g}" if s.ideal is not None else ("higher" if s.higher_is_better else "lower")
        rng = f"[{s.low:g}, {'∞' if s.high is None else format(s.high, 'g')}]"
        desc = s.description.replace("|", "\\|").replace("\n", " ")
        out.append(f"| `{s.name}` | {best} | {rng} | {s.unit} | {s.ci} | {desc} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(metrics_markdown(), end="")
