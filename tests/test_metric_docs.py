from pathlib import Path

from ingestaudit.auditors import metric_catalog as specs

DOC = Path(__file__).resolve().parent.parent / "docs" / "metrics.md"


def test_docs_metrics_md_is_generated_from_the_registry():
    """The documented command in a fresh interpreter: an auditor built with other cutoffs (retrieval k = 2 in another
    test) registers its metrics in this process, and the page lists the default ones."""
    import subprocess
    import sys

    fresh = subprocess.run([sys.executable, "-m", "ingestaudit.report.metric_docs"], capture_output=True,
                           text=True, encoding="utf-8", check=True).stdout
    assert DOC.read_text(encoding="utf-8") == fresh, (
        "docs/metrics.md is stale: python -m ingestaudit.report.metric_docs > docs/metrics.md")


def test_every_registered_metric_has_a_stage_prefixed_lower_case_name_and_a_description():
    for s in specs.all_specs():
        stage, _, metric = s.name.partition(".")
        assert stage and metric and s.name == s.name.lower()
        assert len(s.description) > 20, s.name
