from pathlib import Path

from ingestaudit.metrics import specs
from ingestaudit.report.metric_docs import metrics_markdown

DOC = Path(__file__).resolve().parent.parent / "docs" / "metrics.md"


def test_docs_metrics_md_is_generated_from_the_registry():
    assert DOC.read_text(encoding="utf-8") == metrics_markdown(), (
        "docs/metrics.md is stale: python -m ingestaudit.report.metric_docs > docs/metrics.md")


def test_every_registered_metric_has_a_stage_prefixed_lower_case_name_and_a_description():
    for s in specs.all_specs():
        stage, _, metric = s.name.partition(".")
        assert stage and metric and s.name == s.name.lower()
        assert len(s.description) > 20, s.name
