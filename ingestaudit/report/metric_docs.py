"""The metric reference (docs/metrics.md), generated from the registry so that it never drifts from the code."""

from __future__ import annotations

from ingestaudit.auditors import metric_catalog as specs
from ingestaudit.metrics.specs import BUDGET_RULE


def metrics_markdown() -> str:
    """Markdown table of every registered metric: name, direction, range, unit, interval method, description; then
    each stage's named conventions (ties, empty results, depth...) where its auditor declares them."""
    out = ["# Metrics", "",
           "Generated from the metric registry by `python -m ingestaudit.report.metric_docs > docs/metrics.md`; "
           "a test fails when this file is stale.", "",
           "**budget** is the regression gate's default: the largest worsening of the headline value tolerated "
           "(absolute, or `%` of the baseline value): " + BUDGET_RULE + ". `[gate]` in `ingestaudit.toml` "
           "(`\"extraction.cer\" = 0.02`, `\"tables.teds\" = \"5%\"`) and `--budget METRIC=X` override it; a "
           "budget naming a metric that is not listed here is an error (exit 2).", "",
           "**seeded** metrics depend on the run's seed (`MetricSpec.seeded`): when base and head of the gate ran "
           "with different seeds, only their rows are `not comparable`, every other row is gated: "
           + ", ".join(f"`{s.name}`" for s in specs.all_specs() if s.seeded) + ".", "",
           "| metric | best | range | unit | interval | budget | definition |", "|---|---|---|---|---|---|---|"]
    for s in specs.all_specs():
        best = f"{s.ideal:g}" if s.ideal is not None else ("higher" if s.higher_is_better else "lower")
        rng = f"[{s.low:g}, {'∞' if s.high is None else format(s.high, 'g')}]"
        desc = s.description.replace("|", "\\|").replace("\n", " ")
        budget = s.default_budget if isinstance(s.default_budget, str) else format(s.default_budget, "g")
        out.append(f"| `{s.name}` | {best} | {rng} | {s.unit} | {s.ci} | {budget} | {desc} |")
    out += _conventions()
    return "\n".join(out) + "\n"


def _conventions() -> list[str]:
    """One section per stage whose auditor declares ``conventions`` (name -> text; the same named options its
    ``options()`` prints in the report), in pipeline order."""
    from ingestaudit.auditors.registry import auditor_class, stage_names

    out: list[str] = []
    for stage in stage_names():
        conventions = getattr(auditor_class(stage), "conventions", None)
        if not conventions:
            continue
        out += ["", f"## Conventions: {stage}", "",
                f"Printed in every report under `config.auditors.{stage}.conventions`.", ""]
        out += [f"- **{name}**: {text}" for name, text in conventions.items()]
    return out


if __name__ == "__main__":
    print(metrics_markdown(), end="")
