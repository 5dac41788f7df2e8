"""Metric specifications: the canonical name, meaning, unit, range and interval method of every metric.

Specs are separate from implementations (as in ir_measures): the CLI, the config, the JSON report and the generated
docs all take names and descriptions from this registry. Looking a name up (which imports the built-in auditors that
declare it) is `ingestaudit.auditors.metric_catalog`'s job, so this module imports nothing else of the package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class MetricSpec:
    """Declaration of one metric.

    Attributes:
        name: ``stage.metric``, lower case, e.g. ``extraction.cer``.
        description: one line: what is counted, over what unit, and the definition's source.
        higher_is_better: direction used by regression gates and renderers.
        low, high: value range; ``high=None`` means unbounded above (e.g. CER can exceed 1).
        ci: ``"wilson"`` for proportions of integer counts, ``"bootstrap"`` (documents resampled) otherwise.
        unit: what the numerator and denominator count (``"chars"``, ``"words"``, ``"checks"``, ``"docs"``...).
        ideal: for metrics whose best value lies inside the range (completeness: 1.0), that value; gates then
            measure the distance ``|value - ideal|`` and ``higher_is_better`` is ignored.
        budget: the regression gate's default budget: the largest worsening of the headline value tolerated before
            a significant change counts as a regression, absolute (``0.01``) or relative to the baseline value
            (``"5%"``). None means `default_budget`. Overridden by ``[gate]`` in ``ingestaudit.toml`` and by
            ``--budget METRIC=X``.
        seeded: the value depends on the run's seed (a seeded random baseline, a seeded sample of queries or an
            index built with a seeded generator). A seed change makes only such rows ``not comparable`` in the
            gate; a metric whose seed only draws its bootstrap interval is not seeded (the gate compares values).
        needs: the optional run input without which the metric is not measured at all (``"--events"``), ``""``
            for none. A run given it records a detail whose data holds ``{"input": needs}``; a head run without it
            did not run the measurement, so the gate exempts the baseline's rows of it from the missing-rows check
            (`ingestaudit.report.compare.not_run`).
    """

    name: str
    description: str
    higher_is_better: bool
    low: float = 0.0
    high: float | None = 1.0
    ci: Literal["wilson", "bootstrap"] = "bootstrap"
    unit: str = ""
    ideal: float | None = None
    budget: float | str | None = None
    seeded: bool = False
    needs: str = ""

    @property
    def default_budget(self) -> float | str:
        """The declared ``budget``; else, by rule (`BUDGET_RULE`):

        * ``0.001`` for a defect share of characters or tokens (lower is better, in [0, 1], unit chars or tokens:
          replacement characters, truncated word pieces): such shares live near 0, where 0.01 would let a tenfold
          rise pass;
        * ``0.01`` (absolute) for any other bounded metric and for an edit rate (unit chars or words: CER and WER
          can exceed 1 but live near [0, 1]);
        * ``"5%"`` (of the baseline value) for an unbounded count or rate (documents in the largest cluster, false
          positives per 1,000 tokens), whose scale depends on the corpus.
        """
        if self.budget is not None:
            return self.budget
        if (not self.higher_is_better and self.ideal is None and self.low == 0.0 and self.high == 1.0
                and self.unit in ("chars", "tokens")):
            return 0.001
        return 0.01 if self.high is not None or self.unit in ("chars", "words") else "5%"

    def badness(self, value: float) -> float:
        """How far ``value`` is from best, oriented so that larger is worse (used by regression gates)."""
        if self.ideal is not None:
            return abs(value - self.ideal)
        return -value if self.higher_is_better else value

    @property
    def stage(self) -> str:
        """The stage prefix of ``name``."""
        return self.name.split(".", 1)[0]


BUDGET_RULE = ("a metric's declared budget, else 0.001 for a defect share of characters or tokens (lower is "
               "better, in [0, 1]), 0.01 for any other bounded metric or edit rate, and 5% of the baseline value "
               "for an unbounded count or rate")
"""The rule of `MetricSpec.default_budget` in words (printed in docs/metrics.md)."""

_REGISTRY: dict[str, MetricSpec] = {}


def register(*specs: MetricSpec) -> None:
    """Add specs to the registry.

    Raises:
        ValueError: a name is not ``stage.metric`` in lower case, or is registered twice with a different spec.
    """
    for spec in specs:
        stage, _, metric = spec.name.partition(".")
        if not stage or not metric or spec.name != spec.name.lower():
            raise ValueError(f"metric name {spec.name!r} must be 'stage.metric' in lower case")
        if _REGISTRY.get(spec.name, spec) != spec:
            raise ValueError(f"metric {spec.name!r} is already registered with a different spec")
        _REGISTRY[spec.name] = spec


def registered() -> dict[str, MetricSpec]:
    """The specs registered so far, by name (a read-only view is the caller's duty; built-in auditors' specs are
    loaded by `ingestaudit.auditors.metric_catalog`, which this module may not import: metrics/ is the bottom
    layer)."""
    return _REGISTRY
