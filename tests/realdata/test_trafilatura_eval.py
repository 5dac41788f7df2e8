"""trafilatura's evaluation data (../shared/data/trafilatura-eval): import the 60 real pages, and report content
retention and removal recall per cleaner, ``none`` included (one pipeline per cleaner, as the imported
``ingestaudit.toml`` configures), end to end through the CLI.

Every number of the report is recomputed here independently: ``trafilatura.extract`` called directly with the
settings of trafilatura's evaluation (``tests/eval_common.py``: ``include_comments=False, include_tables=True,
include_formatting=False``, ``fast=False``), and the segment rule of that evaluation written out again
(``re.sub(r"\\s+", " ", s).strip()`` on both sides, then a substring test).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.auditors.base import ItemArtefacts
from ingestaudit.auditors.boilerplate import BoilerplateAuditor
from ingestaudit.chain import clean_step
from ingestaudit.importers import DestinationNotEmpty, SourceLayoutError, import_corpus
from ingestaudit.model import ParsedDocument
from ingestaudit.stages.cleaners.registry import load_cleaner
from ingestaudit.truth import load_truth
from _rows import load_report, measurements

pytestmark = pytest.mark.filterwarnings("ignore:A test tried to use socket.socket")  # urllib3's IPv6 probe

CLEANERS = ("none", "trafilatura", "unstructured")
SEGMENT_METRICS = ("boilerplate.content_retention", "boilerplate.removal_recall")


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def segment_values(output: str, item: dict) -> tuple[int, int, int, int]:
    """(with present, with, without absent, without) by trafilatura's evaluation rule."""
    out = norm(output)
    present = sum(norm(w) in out for w in item["with"])
    absent = sum(norm(w) not in out for w in item["without"])
    return present, len(item["with"]), absent, len(item["without"])


@pytest.fixture(scope="module")
def src(shared_dataset) -> Path:
    return shared_dataset("trafilatura-eval")


@pytest.fixture(scope="module")
def annotations(src: Path) -> dict:
    return json.loads((src / "evaldata_subset.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def by_doc(annotations: dict) -> dict[str, dict]:
    return {f"web/{Path(item['file']).stem}": item for item in annotations.values()}


@pytest.fixture(scope="module")
def imported(src: Path, tmp_path_factory):
    dest = tmp_path_factory.mktemp("trafilatura-eval") / "corpus"
    return dest, import_corpus("trafilatura-eval", src, dest)


@pytest.fixture(scope="module")
def direct(src: Path, by_doc: dict) -> dict[str, tuple[int, int, int, int]]:
    """Independent values for the trafilatura cleaner: extract called directly, segments counted again."""
    import trafilatura

    out = {}
    for doc_id, item in by_doc.items():
        text = trafilatura.extract((src / "html" / item["file"]).read_bytes(), fast=False, include_comments=False,
                                   include_tables=True, include_formatting=False)
        out[doc_id] = segment_values(text or "", item)
    return out


# --- importer ------------------------------------------------------------------------------------------------------

def test_import_writes_every_page_with_its_segments(src, annotations, by_doc, imported):
    dest, summary = imported
    assert len(summary.documents) == len(annotations) == 60
    assert summary.classes == {"web": 60}
    assert summary.imported == {"documents": 60,
                                "with_segments": sum(len(i["with"]) for i in annotations.values()),
                                "without_segments": sum(len(i["without"]) for i in annotations.values())}
    for doc_id, item in by_doc.items():
        page = dest / "docs" / f"{doc_id}.html"
        assert page.is_symlink() and page.resolve() == (src / "html" / item["file"]).resolve()
        truth = json.loads((dest / "truth" / f"{doc_id}.json").read_text(encoding="utf-8"))
        assert truth == {"boilerplate": {"with": item["with"], "without": item["without"]}}
    # every metadata label is listed as not imported, with its reason; no page is missing
    n_meta = sum(len(set(i) - {"file", "with", "without"}) for i in annotations.values())
    assert len(summary.unsupported) == n_meta and all(u.kind.startswith("metadata.") for u in summary.unsupported)
    assert summary.extra["urls"] == {f"web/{Path(i['file']).stem}": url for url, i in annotations.items()}
    assert (dest / "ingestaudit.toml").is_file()


def test_imported_truth_loads(imported):
    from ingestaudit.corpus import discover

    dest, _ = imported
    corpus = discover(dest)
    truths = [load_truth(d, corpus.root) for d in corpus.documents]
    assert len(truths) == 60 and all(t.boilerplate.with_ and t.boilerplate.without for t in truths)


def test_import_refuses_bad_sources_and_existing_dest(src, imported, tmp_path):
    with pytest.raises(SourceLayoutError, match="evaldata"):
        import_corpus("trafilatura-eval", tmp_path, tmp_path / "x")
    dest, _ = imported
    with pytest.raises(DestinationNotEmpty):
        import_corpus("trafilatura-eval", src, dest)


# --- the trafilatura cleaner, in process (fast) --------------------------------------------------------------------

def test_trafilatura_values_match_an_independent_computation(src, by_doc, direct):
    auditor, cleaner = BoilerplateAuditor(), load_cleaner("trafilatura")  # a pipeline whose cleaner is trafilatura
    from ingestaudit.truth import Boilerplate, Truth

    totals = [0, 0, 0, 0]
    for doc_id, item in by_doc.items():
        truth = Truth(boilerplate=Boilerplate.model_validate({"with": item["with"], "without": item["without"]}))
        parsed = ParsedDocument(text="", source_path=str(src / "html" / item["file"]))
        rows = {s.metric: s for s in auditor.audit(ItemArtefacts.of(truth, parsed,
                                                                    steps={"clean": clean_step(cleaner, parsed)}))}
        ret, rem = rows["boilerplate.content_retention"], rows["boilerplate.removal_recall"]
        assert (ret.numerator, ret.denominator, rem.numerator, rem.denominator) == direct[doc_id], doc_id
        totals = [t + v for t, v in zip(totals, direct[doc_id])]
    # trafilatura keeps most content and drops most boilerplate; the exact totals are the recomputed ones above
    assert totals[0] / totals[1] > 0.9 and totals[2] / totals[3] > 0.8


# --- end to end through the CLI (unstructured parses the HTML) -----------------------------------------------------

SAMPLE = 12
"""Pages of the end-to-end run (the first by name): unstructured's HTML partitioner runs spaCy's sentence splitter
on every text block (about 0.7 s a page here), so all 60 took 45-60 s; the values of every page are checked
against the direct computation by `test_trafilatura_values_match_an_independent_computation`."""


@pytest.fixture(scope="module")
def sample(imported, by_doc, tmp_path_factory) -> tuple[Path, list[str]]:
    """A copy of the imported corpus holding the first `SAMPLE` pages, and their ids."""
    import shutil

    dest, _ = imported
    keep = sorted(by_doc)[:SAMPLE]
    small = tmp_path_factory.mktemp("trafilatura-sample") / "corpus"
    shutil.copytree(dest, small, symlinks=True)
    for path in [*(small / "docs" / "web").iterdir(), *(small / "truth" / "web").iterdir()]:
        if f"web/{path.name.rsplit('.', 1)[0]}" not in keep:
            path.unlink()
    return small, keep


@pytest.mark.slow
def test_cli_reports_every_cleaner_on_each_sampled_page(sample, direct, tmp_path):
    from ingestaudit.cli import app

    dest, pages = sample
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["run", str(dest), "--out", str(out), "--executor", "serial"])
    assert result.exit_code == 0, result.output
    report = load_report(out)
    assert [p["name"] for p in report["pipelines"]] == ["none", "trafilatura", "unstructured"]  # one per cleaner
    assert {p["stages"]["parser"]["implementation"] for p in report["pipelines"]} == {"unstructured"}
    rows = {(m["item"], m["metric"], m["pipeline"]): m for m in measurements(report)  # a pipeline per cleaner
            if m["stage"] == "boilerplate"}
    for doc_id in pages:
        for cleaner in CLEANERS:
            for metric in SEGMENT_METRICS:
                row = rows[doc_id, metric, cleaner]  # every page gets a value or a state, per cleaner
                assert (row["state"] == "ok") == (row["value"] is not None)
                if row["state"] != "ok":
                    assert row["state"] == "no_prediction" and cleaner != "trafilatura"
        got = rows[doc_id, SEGMENT_METRICS[0], "trafilatura"], rows[doc_id, SEGMENT_METRICS[1], "trafilatura"]
        assert (got[0]["numerator"], got[0]["denominator"], got[1]["numerator"], got[1]["denominator"]) == \
            direct[doc_id]
        # unstructured 0.27's partition_html never categorizes Header/Footer/PageNumber: its cleaner equals none
        for metric in SEGMENT_METRICS:
            assert rows[doc_id, metric, "unstructured"]["value"] == rows[doc_id, metric, "none"]["value"]
    summary = {(s["metric"], s["pipeline"]): s for s in report["summary"] if s["doc_class"] == "__all__"}
    for cleaner in CLEANERS:
        for metric in SEGMENT_METRICS:
            s = summary[metric, cleaner]
            assert s["micro"] is not None and sum(s["states"].values()) == SAMPLE
    micro = {c: summary["boilerplate.removal_recall", c]["micro"] for c in CLEANERS}
    total = [sum(direct[d][i] for d in pages) for i in range(4)]
    assert micro["trafilatura"] == total[2] / total[3]
    assert micro["none"] < micro["trafilatura"]  # the baseline leaves far more boilerplate in
