"""Labelled near-duplicate groups built from ../shared/data by provenance (`ingestaudit import dedup-provenance`),
and the dedup sweep on them in one command (``ingestaudit run DEST``: the corpus's ingestaudit.toml selects the
reference parser, the dedup stage, a num_perm x threshold grid and a missed-merge budget of 0.1).

The group checks re-derive each group from the source files' names and structure (never from the texts), and the
sweep checks re-run the detector at the reported best setting and score it with the metric functions directly.
"""

from __future__ import annotations

import html
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.importers import DestinationNotEmpty, import_corpus
from ingestaudit.importers.dinglehopper import PAGES
from ingestaudit.metrics.dedup import cluster_agreement, false_merge_rate, missed_merge_rate
from ingestaudit.metrics.lsh import binomial_acceptance_region
from ingestaudit.stages.dedup import DedupConfig, deduplicate
from _rows import load_report, measurements


@pytest.fixture(scope="module")
def imported(shared_data: Path, tmp_path_factory):
    for sub in ("dinglehopper", "docling-pdf", "olmocr-bench-sample", "presidio-synth", "lingua-testdata"):
        if not (shared_data / sub).is_dir():
            pytest.skip(f"{shared_data / sub} not found")
    dest = tmp_path_factory.mktemp("dedup-prov") / "corpus"
    return dest, import_corpus("dedup-provenance", shared_data, dest)


@pytest.fixture(scope="module")
def report(imported, tmp_path_factory) -> dict:
    from ingestaudit.cli import app

    dest, _ = imported
    out = tmp_path_factory.mktemp("dedup-prov-report")
    result = CliRunner().invoke(app, ["run", str(dest), "--out", str(out)])  # one command: config from the corpus
    assert result.exit_code == 0, result.output
    rep = load_report(out)
    rep["_md"] = (out / "report.md").read_text(encoding="utf-8")
    return rep


def groups_on_disk(dest: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for path in (dest / "truth").rglob("*.json"):
        doc_id = path.relative_to(dest / "truth").with_suffix("").as_posix()
        out[json.loads(path.read_text())["dup_group"]].add(doc_id)
    return dict(out)


def details(report: dict) -> dict:
    return {d["name"]: d["data"] for d in report["details"] if d["stage"] == "dedup"}


# --- the groups ------------------------------------------------------------------------------------------------------

def test_ocr_groups_are_pages(imported):
    dest, _ = imported
    groups = groups_on_disk(dest)
    for page in PAGES:
        expected = {f"ocr/{page.name}/gt"} | {f"ocr/{page.name}/{engine}" for engine, _ in page.ocr}
        source = "lorem-ipsum" if page.name.startswith("lorem-ipsum") else page.name
        assert expected <= groups[f"ocr:{source}"]
    # the clean and the degraded scan of the same printed page: one source, one group of 4
    assert len(groups["ocr:lorem-ipsum"]) == 4


def test_pdf_and_olmocr_groups_follow_the_files(imported, shared_data):
    dest, _ = imported
    groups = groups_on_disk(dest)
    for pdf in sorted((shared_data / "docling-pdf/sources").glob("*.pdf")):
        assert groups[f"pdf:{pdf.stem}"] == {f"pdf/{pdf.stem}/pymupdf", f"pdf/{pdf.stem}/docling"}
    md = {p.name for p in (shared_data / "olmocr-bench-sample/olmocr_pipeline").glob("*.md")}
    assert "earnings_pg1_repeat1.md" in md
    assert groups["olmocr:earnings-p1"] == {"olmocr/earnings-p1/pymupdf", "olmocr/earnings-p1/olmocr-r1"}
    assert groups["olmocr:mattsnotes-p2"] == {"olmocr/mattsnotes-p2/pymupdf", "olmocr/mattsnotes-p2/olmocr-r1"}
    assert groups["olmocr:mathfuncs-p1"] == {"olmocr/mathfuncs-p1/pymupdf", "olmocr/mathfuncs-p1/olmocr-r1",
                                             "olmocr/mathfuncs_colswitch-p1/pymupdf",
                                             "olmocr/mathfuncs_colswitch-p1/olmocr-r1"}
    # docling's picture_classification page quotes lorem-ipsum filler, but it is another document: another group
    pc = next(g for g, m in groups.items() if "pdf/picture_classification/docling" in m)
    assert pc == "pdf:picture_classification"


def test_templated_records_and_sentences(imported, shared_data):
    dest, summary = imported
    groups = groups_on_disk(dest)
    records = json.loads((shared_data / "presidio-synth/synth_dataset_v2.first1000.json").read_text())[:150]
    in_group = {m: g for g, ms in groups.items() for m in ms}
    for i, rec in enumerate(records):
        doc = f"templated/record-{i:03d}"
        if not rec["full_text"].strip():
            continue
        assert (dest / "docs" / f"{doc}.txt").read_text(encoding="utf-8") == rec["full_text"]
        if rec["spans"]:
            assert doc not in in_group  # filled slots: its own facts, unique
        else:
            assert in_group[doc] == f"presidio:template-{rec['template_id']}"
    sentences = list((dest / "docs/sentences").glob("*.txt"))
    assert len(sentences) == 40 and not any("sentences/" in m for m in in_group)
    assert summary.imported["gold_pairs"] == sum(len(m) * (len(m) - 1) // 2 for m in groups.values())


def test_synthetic_pairs_have_the_stated_exact_jaccard(imported):
    dest, summary = imported
    assert len(summary.extra["synthetic"]) == 20
    for fact in summary.extra["synthetic"]:
        a = set((dest / "docs" / f"{fact['a']}.txt").read_text().split())
        b = set((dest / "docs" / f"{fact['b']}.txt").read_text().split())
        assert (len(a & b), len(a | b)) == (fact["intersection"], fact["union"])
        level = fact["a"].split("/")[1].split("-")[0][1:]
        assert fact["jaccard"] == float(level)


def test_blank_texts_have_no_group_and_the_importer_never_overwrites(imported, shared_data):
    dest, summary = imported
    blanks = sorted((dest / "docs/blank").glob("*.txt"))
    assert blanks and all(not p.read_text().strip() for p in blanks)
    assert not list((dest / "truth/blank").glob("*.json"))
    assert summary.classes["blank"] == len(blanks)
    with pytest.raises(DestinationNotEmpty):
        import_corpus("dedup-provenance", shared_data, dest)


# --- the sweep -------------------------------------------------------------------------------------------------------

def test_the_report_shows_the_best_setting_at_the_budget(report, imported):
    dest, _ = imported
    det = details(report)
    sweep, best = det["sweep"], det["sweep_best"]
    assert len(sweep["cells"]) == 3 * 7 and best["budget"] == 0.1
    fit = [c for c in sweep["cells"] if c["missed_merge_rate"]["state"] == "ok"
           and c["missed_merge_rate"]["value"] <= 0.1 and c["false_merge_rate"]["state"] == "ok"]
    assert fit, "some setting must reach the budget on this corpus"
    lowest = min(c["false_merge_rate"]["value"] for c in fit)
    b = best["best"]
    assert b["false_merge_rate"]["value"] == lowest and b["missed_merge_rate"]["value"] <= 0.1
    line = f"| dedup.sweep_best[missed_merge<=0.1/num_perm={b['num_perm']},threshold={b['threshold']:g}] ↓ | " \
           f"{lowest:.4f}<br>corpus of "
    md = html.unescape(re.sub(r"\\(.)", r"\1", report["_md"]))  # Markdown escapes names: undo to compare
    assert line.replace(f"{lowest:.4f}", f"{lowest:.4g}") in md or line in md

    # independent re-run of the detector at the best setting, scored against the gold groups on disk
    docs = sorted((p.relative_to(dest / "docs").with_suffix("").as_posix(), p.read_text(encoding="utf-8"))
                  for p in (dest / "docs").rglob("*.txt"))
    gold = dict.fromkeys(k for k, _ in docs)
    for g, members in groups_on_disk(dest).items():
        gold.update(dict.fromkeys(members, g))
    res = deduplicate(docs, DedupConfig(num_perm=b["num_perm"], threshold=b["threshold"]))
    c = cluster_agreement(gold, dict(res.cluster_of))
    assert false_merge_rate(c).value == lowest
    assert missed_merge_rate(c).value == b["missed_merge_rate"]["value"]
    assert (b["b"], b["r"]) == (res.b, res.r)


def test_main_rows_and_excluded_blanks(report):
    rows = {(r["doc_class"], r["metric"]): r for r in report["summary"] if r["stage"] == "dedup"}
    for cls in ("ocr", "pdf", "olmocr", "templated", "synthetic", "sentences", "blank", "__all__"):
        assert ("__all__" if cls == "__all__" else cls, "dedup.false_merge_rate") in rows
    det = details(report)
    excluded = {d["doc_id"]: d["reason"] for d in det["excluded"]["documents"]}
    assert all(excluded.get(p) == "empty" for p in
               [m["item"] for m in measurements(report) if m["doc_class"] == "blank"])
    # sentences and templated records with filled slots have no gold pair: nothing to miss there
    sentences = rows["sentences", "dedup.missed_merge_rate"]  # states count the documents behind the value
    assert sentences["states"]["no_reference"] == sentences["n_docs"] > 0 and sentences["micro"] is None
    assert (det["lsh"]["b"], det["lsh"]["r"]) == (9, 13)


def test_s_curve_counts_fall_in_the_binomial_region(report):
    """In each Jaccard bucket with pairs, the number of LSH candidates lies in the central 99% region of
    Binomial(pairs, theoretical mean of 1-(1-J^r)^b): the S-curve holds on real texts (pairs of one bucket have
    different J, so the count is Poisson-binomial with the same mean and no larger variance than the binomial)."""
    curve = details(report)["s_curve"]
    assert curve["state"] == "ok" and sum(b["pairs"] for b in curve["buckets"]) == curve["pairs"]
    for bucket in curve["buckets"]:
        if bucket["pairs"] and bucket["theoretical"] is not None:
            lo, hi = binomial_acceptance_region(bucket["theoretical"], bucket["pairs"], 0.99)
            assert lo <= bucket["candidates"] <= hi, bucket


def test_a_missing_source_is_named_and_nothing_is_written(tmp_path):
    from ingestaudit.importers import SourceLayoutError

    (tmp_path / "data").mkdir()
    with pytest.raises(SourceLayoutError, match="dinglehopper"):
        import_corpus("dedup-provenance", tmp_path / "data", tmp_path / "corpus")
    assert not (tmp_path / "corpus").exists()
