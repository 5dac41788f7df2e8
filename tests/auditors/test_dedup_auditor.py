"""DedupAuditor (stage ``dedup``): the hand-worked acceptance example end to end through the CLI, empty documents,
precomputed clusters, user detectors, the sweep and the S-curve detail.

(File named ``test_dedup_auditor.py``: ``tests/metrics/test_dedup.py`` already owns the module name ``test_dedup``
and the test folders have no ``__init__.py``, so a second ``test_dedup.py`` would not collect.)

The acceptance example, worked by hand. Gold groups {a,b,c}, {d,e}, {f}; predicted clusters {a,b}, {c,d,e}, {f}.

- gold pairs ab, ac, bc, de (G = 4); predicted pairs ab, cd, ce, de (P = 4); both: ab, de (T = 2).
- false-merge rate (P-T)/P = 2/4; missed-merge rate (G-T)/G = 2/4; pairwise precision = recall = F1 = 2/4.
- B-cubed precision, per document |C(i)∩G(i)|/|C(i)|: a {a,b}∩{a,b,c} = 2/2, b 2/2, c {c,d,e}∩{a,b,c} = 1/3,
  d {c,d,e}∩{d,e} = 2/3, e 2/3, f 1/1; sum 14/3, over 6 documents = 7/9.
- B-cubed recall, |C(i)∩G(i)|/|G(i)|: a 2/3, b 2/3, c 1/3, d 2/2, e 2/2, f 1/1; sum 14/3, /6 = 7/9.
- ARI: C(6,2) = 15 pairs, E = G·P/15 = 16/15, M = (G+P)/2 = 4, ARI = (2 - 16/15)/(4 - 16/15) = (14/15)/(44/15) = 7/22.
- largest predicted cluster 3. Removal (first member in corpus order kept): b (kept a, same gold group: right),
  d and e (kept c, gold 'fund' vs 'law': wrong): removed 3 of 6, wrongly removed 2 of 6; a perfect detector removes
  b, c and e (gold_removable 3).
- Per class (a, b, c in class x; d, e, f in class y; partitions restricted to the class): x has gold pairs ab, ac, bc
  and predicted ab: false merges 0/1, missed 2/3; y has gold de and predicted de: 0/1 and 0/1.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from importlib.metadata import EntryPoint
from itertools import combinations
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ingestaudit.auditors.base import ItemArtefacts
from ingestaudit.auditors.dedup import METRICS, DedupAuditor, pairwise_jaccard
from ingestaudit.auditors.registry import load_auditor
from ingestaudit.cli import app
from ingestaudit.measurement import State
from ingestaudit.auditors import metric_catalog as specs
from ingestaudit.metrics.dedup import cluster_agreement, false_merge_rate, missed_merge_rate
from ingestaudit.metrics.jaccard import exact_jaccard, near_duplicate_pairs
from ingestaudit.metrics.lsh import candidate_rate_by_bucket
from ingestaudit.model import ParsedDocument
from ingestaudit.steps import audit_corpus, with_step
from ingestaudit.pipeline import make_pipeline
from ingestaudit.stages.dedup import DedupConfig, deduplicate
from ingestaudit.stages.dedup_step import DETECTOR_GROUP, DedupDetector, DetectorError, DetectorOutput
from ingestaudit.truth import Truth
from _rows import load_report, measurements

T1 = ("The quarterly fund report lists the management fee of the growth fund at one point two percent, charged "
      "monthly on the average net assets, with a performance fee of ten percent above the benchmark index and a "
      "redemption fee for holdings kept less than ninety days.")
T2 = ("This services agreement is governed by the laws of the State of New York, and the parties submit to the "
      "exclusive jurisdiction of the courts located in New York County for any dispute arising out of or relating "
      "to this agreement or its performance.")
T3 = ("Ripe tomatoes, a handful of basil leaves and good olive oil are all the sauce needs; simmer it gently for "
      "twenty minutes, season with salt, and toss it with the pasta while both are still hot.")
# a and b: the fund report with one word changed; c: the governing-law clause with one word changed, so the detector
# merges it with d and e although its gold group is the fund report (a false merge that drops a different fact).
HAND_TEXTS = {"x/a": T1, "x/b": T1.replace("monthly", "weekly"), "x/c": T2.replace("County", "city"),
              "y/d": T2, "y/e": T2.replace("dispute", "claim"), "y/f": T3}
HAND_GOLD = {"x/a": "fund", "x/b": "fund", "x/c": "fund", "y/d": "law", "y/e": "law", "y/f": None}


def dedup(**options):
    """The dedup auditor and the step its ``[auditor_options.dedup]`` options define for a pipeline without a
    ``dedup`` table, paired as a run pairs them (`ingestaudit.steps.with_step`)."""
    return with_step(DedupAuditor(**options), make_pipeline("p"))


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def make_corpus(root: Path, texts: dict[str, str], gold: dict[str, str | None], config: str = "") -> Path:
    """docs/<id>.txt and truth/<id>.txt (the same text, for the reference parser), truth/<id>.json with dup_group."""
    for doc_id, text in texts.items():
        write(root / "docs" / f"{doc_id}.txt", text)
        write(root / "truth" / f"{doc_id}.txt", text)
        if gold.get(doc_id) is not None:
            write(root / "truth" / f"{doc_id}.json", json.dumps({"dup_group": gold[doc_id]}))
    if config:
        write(root / "ingestaudit.toml", config)
    return root


def run_cli(args: list[str]) -> dict:
    result = CliRunner().invoke(app, ["run", *args])
    assert result.exit_code == 0, result.output
    out = Path(args[args.index("--out") + 1])
    report = load_report(out)
    report["_md"] = (out / "report.md").read_text(encoding="utf-8")
    return report


def unescape_md(md: str) -> str:
    """Markdown with its backslash escapes and HTML entities removed (``no\\_prediction`` -> ``no_prediction``)."""
    return html.unescape(re.sub(r"\\(.)", r"\1", md))


def corpus_rows(report: dict, parser: str, cls: str = "__all__") -> dict[tuple[str, str], dict]:
    return {(r["metric"], r["label"]): r for r in report["summary"]
            if r["pipeline"] == parser and r["doc_class"] == cls and r["stage"] == "dedup" and r["level"] == "corpus"}


def details(report: dict, parser: str) -> dict:
    return {d["name"]: d["data"] for d in report["details"] if d["pipeline"] == parser and d["stage"] == "dedup"}


def counts(det: dict, cls: str = "__all__") -> dict:
    return next(c for c in det["corpus_counts"] if c["doc_class"] == cls)


def char5(text: str) -> set[str]:
    """Independent shingling for the checks: NFKC, case folding, white space collapsed, code-point 5-grams."""
    t = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return {t[i:i + 5] for i in range(len(t) - 4)}


def item(doc_id: str, text: str | None, group: str | None = None, extras: dict | None = None,
         state: State = State.OK, reason: str = "") -> ItemArtefacts:
    parsed = None if text is None else ParsedDocument(text=text, extras=extras or {})
    return ItemArtefacts(doc_id, doc_id.split("/", 1)[0], Truth(dup_group=group), parsed, state=state, reason=reason)


def by_metric(result, cls: str = "__all__") -> dict[tuple[str, str], object]:
    return {(s.metric, s.label): s for c, s, _ in result.corpus_scores if c == cls}


# --- the acceptance example ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hand_report(tmp_path_factory) -> dict:
    root = make_corpus(tmp_path_factory.mktemp("hand") / "corpus", HAND_TEXTS, HAND_GOLD)
    out = tmp_path_factory.mktemp("hand-out")
    # no --stage: dedup is selected because some documents have a dup_group
    return run_cli([str(root), "--parser", "reference", "--out", str(out)])


def test_hand_example_predicted_clusters(hand_report):
    det = details(hand_report, "reference")
    assert det["detector"]["kind"] == "minhash"
    clusters = {frozenset(m["doc_id"] for m in c["members"]) for c in det["clusters"]["clusters"]}
    assert clusters == {frozenset({"x/a", "x/b"}), frozenset({"x/c", "y/d", "y/e"})}  # f stays alone
    assert det["clusters"]["total"] == 2
    impure = [c for c in det["clusters"]["clusters"] if not c["pure"]]
    assert [c["kept"] for c in impure] == ["x/c"]


def test_hand_example_rates_in_the_report(hand_report):
    rows = corpus_rows(hand_report, "reference")
    c = counts(details(hand_report, "reference"))
    assert (c["gold_pairs"], c["predicted_pairs"], c["true_pairs"]) == (4, 4, 2)
    assert (c["false_merges"], c["missed_merges"]) == (2, 2)
    assert rows["dedup.false_merge_rate", ""]["micro"] == 2 / 4
    assert rows["dedup.missed_merge_rate", ""]["micro"] == 2 / 4
    for m in ("dedup.pairwise_precision", "dedup.pairwise_recall", "dedup.pairwise_f1"):
        assert rows[m, ""]["micro"] == 0.5
    assert rows["dedup.bcubed_precision", ""]["micro"] == pytest.approx(7 / 9, abs=1e-12)
    assert rows["dedup.bcubed_recall", ""]["micro"] == pytest.approx(7 / 9, abs=1e-12)
    assert c["bcubed_precision_sum"] == pytest.approx(14 / 3) and c["bcubed_recall_sum"] == pytest.approx(14 / 3)
    assert rows["dedup.ari", ""]["micro"] == pytest.approx(7 / 22, abs=1e-12)
    assert rows["dedup.largest_cluster", ""]["micro"] == 3
    assert rows["dedup.removed_docs", ""]["micro"] == 3 / 6
    assert rows["dedup.wrongly_removed_docs", ""]["micro"] == 2 / 6
    assert (c["removed"], c["wrongly_removed"], c["gold_removable"]) == (3, 2, 3)
    assert all(r["n_docs"] == 6 for r in rows.values())
    md = unescape_md(hand_report["_md"])
    assert re.search(r"\| dedup\.false_merge_rate ↓ \| 0\.50*<br>corpus of 6 docs \|", md)
    assert re.search(r"\| dedup\.missed_merge_rate ↓ \| 0\.50*<br>corpus of 6 docs \|", md)


def test_hand_example_per_class(hand_report):
    det = details(hand_report, "reference")
    x, y = corpus_rows(hand_report, "reference", "x"), corpus_rows(hand_report, "reference", "y")
    cx, cy = counts(det, "x"), counts(det, "y")
    assert (cx["gold_pairs"], cx["predicted_pairs"], cx["true_pairs"]) == (3, 1, 1)
    assert x["dedup.false_merge_rate", ""]["micro"] == 0 and x["dedup.missed_merge_rate", ""]["micro"] == 2 / 3
    assert (cy["gold_pairs"], cy["predicted_pairs"], cy["true_pairs"]) == (1, 1, 1)
    assert y["dedup.false_merge_rate", ""]["micro"] == 0 and y["dedup.missed_merge_rate", ""]["micro"] == 0
    # removal is per document of the class: x drops b (right); y drops d and e (kept c is in class x: wrong)
    assert (cx["removed"], cx["wrongly_removed"]) == (1, 0) and (cy["removed"], cy["wrongly_removed"]) == (2, 2)


def test_hand_example_chained_pairs_against_exact_jaccard(hand_report):
    rows = corpus_rows(hand_report, "reference")
    within = [("x/a", "x/b"), ("x/c", "y/d"), ("x/c", "y/e"), ("y/d", "y/e")]
    jac = {p: len(char5(HAND_TEXTS[p[0]]) & char5(HAND_TEXTS[p[1]])) / len(char5(HAND_TEXTS[p[0]])
                                                                         | char5(HAND_TEXTS[p[1]])) for p in within}
    chained = sum(j < 0.8 for j in jac.values())
    c = counts(details(hand_report, "reference"))
    assert (c["chained_pairs"], c["within_cluster_pairs"]) == (chained, 4)
    assert rows["dedup.chained_pairs", ""]["micro"] == chained / 4


def test_hand_example_records_lsh_bands_and_rows(hand_report):
    # the detector's settings are the dedup step's, per pipeline (report.json pipelines[].stages.dedup)
    step = {p["name"]: p["stages"]["dedup"] for p in hand_report["pipelines"]}["reference"]
    assert step["implementation"] == "minhash"
    opts = step["settings"]
    assert (opts["num_perm"], opts["threshold"], opts["lsh_b"], opts["lsh_r"]) == (128, 0.8, 9, 13)
    assert opts["lsh_hash_values_used"] == 117
    assert (opts["shingling"], opts["k"], opts["normalization"]) == ("char", 5, "nfkc_casefold")
    lsh = details(hand_report, "reference")["lsh"]
    assert (lsh["b"], lsh["r"], lsh["hash_values_used"]) == (9, 13, 117)
    curve = {p["jaccard"]: p["probability"] for p in lsh["candidate_probability"]}
    assert round(curve[0.7], 3) == 0.084 and round(curve[0.8], 3) == 0.399 and round(curve[0.9], 3) == 0.929


def test_hand_example_document_rows(hand_report):
    rows = {m["item"]: m for m in measurements(hand_report) if m["metric"] == "dedup.excluded"}
    assert sorted(rows) == sorted(HAND_TEXTS)
    assert all(r["state"] == "ok" and r["value"] == 0 and r["denominator"] == 1 for r in rows.values())
    e = rows["y/e"]["detail"]
    assert (e["gold_group"], e["cluster_size"], e["kept_member"], e["removed"], e["wrongly_removed"]) == \
        ("law", 3, "x/c", True, True)
    assert rows["x/b"]["detail"]["removed"] and not rows["x/b"]["detail"]["wrongly_removed"]
    assert rows["y/f"]["detail"]["cluster_size"] == 1 and not rows["y/f"]["detail"]["removed"]


# --- empty documents -------------------------------------------------------------------------------------------------

def test_ten_empty_documents_merge_nothing_and_are_listed(tmp_path):
    blanks = ["", " ", "\n\n", "\t \u00a0 ", "\u2003", "   \n", "\r\n", "\t", "\u3000", "  \u2009 "]
    texts = {f"blank/doc{i}": t for i, t in enumerate(blanks)}
    root = make_corpus(tmp_path / "corpus", texts, {})
    report = run_cli([str(root), "--parser", "reference", "--stage", "dedup", "--out", str(tmp_path / "out")])
    det = details(report, "reference")
    assert det["clusters"]["total"] == 0
    assert det["excluded"]["total"] == 10
    assert [(d["doc_id"], d["reason"]) for d in det["excluded"]["documents"]] == \
        [(k, "empty") for k in sorted(texts)]
    rows = corpus_rows(report, "reference")
    assert rows["dedup.largest_cluster", ""]["micro"] == 1
    fm = rows["dedup.false_merge_rate", ""]
    # merged nothing: undefined, never 0; the states count the 10 documents behind the undefined value
    assert fm["micro"] is None and fm["n_docs"] == 10 and fm["states"]["no_prediction"] == 10
    assert rows["dedup.missed_merge_rate", ""]["states"]["no_reference"] == 10  # no labels
    assert rows["dedup.removed_docs", ""]["micro"] == 0
    per_doc = [m for m in measurements(report) if m["metric"] == "dedup.excluded"]
    assert len(per_doc) == 10 and all(m["value"] == 1 and m["detail"]["excluded"]["reason"] == "empty"
                                      for m in per_doc)
    assert re.search(r"\| dedup\.excluded ↓ \| 1(\.0+)? \(1(\.0+)?\)<br>\[", unescape_md(report["_md"]))


# --- precomputed clusters --------------------------------------------------------------------------------------------

def test_precomputed_dup_cluster_is_audited_instead_of_minhash(tmp_path):
    # texts share nothing: MinHash would merge nothing; the pipeline's own cluster ids force the hand clusters
    texts = {k: f"document {k} " + " ".join(f"w{k[-1]}{i}" for i in range(40)) for k in HAND_TEXTS}
    root = make_corpus(tmp_path / "corpus", texts, HAND_GOLD)
    outputs = tmp_path / "outputs" / "mypipe"
    cluster = {"x/a": "k1", "x/b": "k1", "x/c": 7, "y/d": "7", "y/e": 7}  # ids compared as strings; f: no key
    for k, t in texts.items():
        payload = {"text": t, **({"dup_cluster": cluster[k]} if k in cluster else {})}
        write(outputs / f"{k}.json", json.dumps(payload))
    report = run_cli([str(root), "--outputs", str(tmp_path / "outputs"), "--out", str(tmp_path / "out")])
    rows = corpus_rows(report, "mypipe")
    det = details(report, "mypipe")
    assert det["detector"]["kind"] == "precomputed"
    assert det["detector"]["without_dup_cluster"] == ["y/f"]
    assert rows["dedup.false_merge_rate", ""]["micro"] == 0.5 and rows["dedup.missed_merge_rate", ""]["micro"] == 0.5
    assert rows["dedup.ari", ""]["micro"] == pytest.approx(7 / 22)
    assert "lsh" not in det and "excluded" not in det
    excl = [m for m in measurements(report) if m["metric"] == "dedup.excluded"]
    assert {m["state"] for m in excl} == {"no_prediction"}  # a precomputed output says nothing about exclusions

    # the same outputs with use_precomputed = false: MinHash runs on the texts and merges nothing
    write(root / "ingestaudit.toml", "[auditor_options.dedup]\nuse_precomputed = false\n")
    report = run_cli([str(root), "--outputs", str(tmp_path / "outputs"), "--out", str(tmp_path / "out2")])
    rows = corpus_rows(report, "mypipe")
    assert details(report, "mypipe")["detector"]["kind"] == "minhash"
    assert rows["dedup.false_merge_rate", ""]["states"]["no_prediction"] == 6
    assert rows["dedup.missed_merge_rate", ""]["micro"] == 1.0  # 4 of 4 gold pairs missed


def test_documents_without_output_are_never_merged_nor_missed():
    items = [item("x/a", T1, "g"), item("x/b", None, "g", state=State.ERROR, reason="parser crashed"),
             item("x/c", T1, "g")]
    result = audit_corpus(dedup(), items)
    rows = by_metric(result)
    # b has no output: it is left out, so the gold pairs are ac only (not ab, bc); a and c are exact duplicates
    # (merged by hash): 0 of 1 missed. Counting b would give 2 of 3 missed, merges no parser could make.
    mm = rows["dedup.missed_merge_rate", ""]
    assert (mm.value, mm.numerator, mm.denominator) == (0.0, 0, 1)
    assert {n for c, _, n in result.corpus_scores} == {2}  # n = the two documents with output
    assert result.unreached == {"x": {"error": 1}, "__all__": {"error": 1}}
    assert result.details["corpus_counts"][0]["unreached"] == {"error": 1}
    doc = dict(result.doc_scores)
    assert doc["x/b"].state is State.ERROR and doc["x/b"].detail["reason"] == "parser crashed"
    assert result.details["no_output"]["documents"] == [{"doc_id": "x/b", "state": "error",
                                                         "reason": "parser crashed"}]


def test_a_class_without_any_output_has_no_ok_dedup_rate(tmp_path):
    """Issue 15 acceptance: class x (3 documents of one gold group) has no output at all; y (2 identical documents of
    one group) has. Before the fix x showed missed_merge_rate 1.0 in state ok and __all__ 3/4 (x's 3 gold pairs
    counted as missed merges). Now: x has no value (no_prediction, n 0, its 3 documents in the states), __all__ counts
    y's 1 gold pair only, found by the exact-hash step: 0/1 over n = 2, with the 3 documents without output in the
    states; the terminal shows n=2/5."""
    texts = {"x/a": T1, "x/b": T1, "x/c": T1, "y/d": T2, "y/e": T2}
    gold = {"x/a": "fund", "x/b": "fund", "x/c": "fund", "y/d": "law", "y/e": "law"}
    root = make_corpus(tmp_path / "corpus", texts, gold)
    for k in ("y/d", "y/e"):  # the pipeline wrote nothing for class x
        write(tmp_path / "outputs" / "mypipe" / f"{k}.json", json.dumps({"text": texts[k]}))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(root), "--outputs", str(tmp_path / "outputs"), "--stage", "dedup",
                                      "--out", str(out)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    report = load_report(out)
    x = corpus_rows(report, "mypipe", "x")
    assert x and all(r["micro"] is None and r["n_docs"] == 0 for r in x.values())
    assert {r["states"]["no_prediction"] for r in x.values()} == {3}
    assert all(r["states"]["ok"] == 0 for r in x.values())
    assert counts(details(report, "mypipe"), "x") == {"doc_class": "x", "n_docs": 0,
                                                       "unreached": {"no_prediction": 3}}
    every = corpus_rows(report, "mypipe")
    mm = every["dedup.missed_merge_rate", ""]
    assert (mm["micro"], mm["numerator"], mm["denominator"], mm["n_docs"]) == (0.0, 0, 1, 2)
    assert (mm["states"]["ok"], mm["states"]["no_prediction"]) == (2, 3)
    assert every["dedup.removed_docs", ""]["micro"] == 1 / 2  # e dropped (kept d), of the 2 documents with output
    assert report["config"]["auditors"]["dedup"]["documents"].startswith("with parser output")
    md = unescape_md((out / "report.md").read_text(encoding="utf-8"))
    assert re.search(r"\| dedup\.missed_merge_rate ↓ \| 0(\.0+)?<br>corpus of 2 docs; 3 no_prediction \|", md)
    assert "| dedup.missed_merge_rate ↓ | —<br>corpus of 0 docs; 3 no_prediction |" in md  # class x
    assert "dedup.pairwise_f1 ↑  1 n=2/5" in result.output


def test_no_output_at_all_gives_unreached_rows_for_the_sweep_too():
    items = [item("x/a", None, "g"), item("x/b", None, "g", state=State.SKIPPED, reason="too big"),
             item("y/c", None, "h")]
    result = audit_corpus(dedup(sweep_thresholds="0.5,0.8"), items)
    states = {(c, s.metric): (s.state, n) for c, s, n in result.corpus_scores}
    assert states["x", "dedup.missed_merge_rate"] == (State.NO_PREDICTION, 0)  # 1 no_prediction, 1 skipped: tie
    assert states["__all__", "dedup.sweep_best"] == (State.NO_PREDICTION, 0)
    assert all(s.value is None for _, s, _ in result.corpus_scores)
    assert result.unreached["__all__"] == {"no_prediction": 2, "skipped": 1}
    reason = next(s for c, s, _ in result.corpus_scores if c == "__all__").detail["reason"]
    assert reason == "no document reached this stage (2 no_prediction, 1 skipped)"
    assert [s.state for _, s in result.doc_scores] == [State.NO_PREDICTION, State.SKIPPED, State.NO_PREDICTION]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["g1", "g2", "g3", None]), min_size=1, max_size=8))
def test_predicting_the_gold_partition_is_perfect(groups):
    items = [item(f"c/d{i}", f"text {i}", g, extras={"dup_cluster": g} if g else {}) for i, g in enumerate(groups)]
    rows = by_metric(audit_corpus(dedup(), items))
    has_pairs = any(groups.count(g) > 1 for g in set(groups) if g)
    if has_pairs:
        for m in ("dedup.pairwise_precision", "dedup.pairwise_recall", "dedup.pairwise_f1", "dedup.bcubed_precision",
                  "dedup.bcubed_recall"):
            assert rows[m, ""].value == 1.0
        assert rows["dedup.false_merge_rate", ""].value == 0 and rows["dedup.missed_merge_rate", ""].value == 0
        assert rows["dedup.wrongly_removed_docs", ""].value == 0
    else:
        assert rows["dedup.false_merge_rate", ""].state is State.NO_PREDICTION
        assert rows["dedup.missed_merge_rate", ""].state is State.NO_REFERENCE
        assert rows["dedup.pairwise_f1", ""].state is State.NO_REFERENCE
    assert all(s.value is None or -1 <= s.value <= len(groups) for s in rows.values())


# --- user detectors --------------------------------------------------------------------------------------------------

class FirstWordDetector(DedupDetector):
    """Clusters documents by their first word (a deliberately crude user detector)."""

    name = "first-word"

    def __init__(self, lowercase: bool = True):
        self.lowercase = lowercase

    def options(self):
        return {"lowercase": self.lowercase}

    def detect(self, docs):
        first = {k: (t.split() or [""])[0] for k, t in docs}
        return DetectorOutput({k: (w.lower() if self.lowercase else w) or None for k, w in first.items()},
                              excluded={k: "empty" for k, w in first.items() if not w}, details={"rule": "word 1"})


class BrokenDetector(DedupDetector):
    def detect(self, docs):
        raise DetectorError("index server unreachable")


def _user_items():
    return [item("c/a", "Alpha one"), item("c/b", "alpha two", "g"), item("c/c", "beta", "g"), item("c/d", "  ")]


def test_user_detector_by_module_path():
    auditor = dedup(detector=f"{__name__}:FirstWordDetector", detector_options={"lowercase": True})
    result = audit_corpus(auditor, _user_items())
    rows = by_metric(result)
    # predicted {a, b} (alpha); gold {b, c}: P = 1, G = 1, T = 0
    assert rows["dedup.false_merge_rate", ""].value == 1.0 and rows["dedup.missed_merge_rate", ""].value == 1.0
    assert result.details["detector"] == {"kind": f"detector:{__name__}:FirstWordDetector",
                                          "detector_options": {"lowercase": True}, "rule": "word 1"}
    doc = dict(result.doc_scores)
    assert doc["c/d"].value == 1 and doc["c/d"].detail["excluded"] == {"reason": "empty"}
    assert doc["c/a"].value == 0


def test_user_detector_by_entry_point(monkeypatch):
    import importlib.metadata as md

    ep = EntryPoint(name="first-word", value=f"{__name__}:FirstWordDetector", group=DETECTOR_GROUP)
    real = md.entry_points
    monkeypatch.setattr(md, "entry_points", lambda **kw: [ep] if kw.get("group") == DETECTOR_GROUP else real(**kw))
    result = audit_corpus(dedup(detector="first-word"), _user_items())
    assert result.details["detector"]["kind"] == "detector:first-word"
    with pytest.raises(ValueError, match="known: minhash, first-word"):
        dedup(detector="nope")


def test_a_failing_detector_gives_error_rows_not_a_crash():
    result = audit_corpus(dedup(detector=f"{__name__}:BrokenDetector"), _user_items())
    assert result.corpus_scores and all(s.state is State.ERROR for _, s, _ in result.corpus_scores)
    assert all("index server unreachable" in s.detail["reason"] for _, s in result.doc_scores)


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match=r"auditor_options.dedup"):
        load_auditor("dedup", {"no_such_option": 1})
    with pytest.raises(ValueError):
        dedup(threshold=1.0)  # datasketch refuses it: exact duplicates go by hash
    with pytest.raises(ValueError):
        dedup(sweep_thresholds=[0.5, 1.0])
    with pytest.raises(ValueError, match="missed_merge_budget"):
        dedup(missed_merge_budget=1.5)
    with pytest.raises(ValueError, match="bad list option"):
        dedup(sweep_num_perm="64,many")
    with pytest.raises(ValueError, match="not a DedupDetector"):
        dedup(detector="ingestaudit.stages.dedup:DedupConfig")


def test_specs_are_registered():
    assert {s.name for s in METRICS} <= {s.name for s in specs.all_specs()}
    assert specs.get("dedup.ari").low == -1.0
    assert specs.get("dedup.false_merge_rate").higher_is_better is False


# --- the sweep and the S-curve ---------------------------------------------------------------------------------------

SWEEP_TOML = """[auditor_options.dedup]
sweep_num_perm = "64,128"
sweep_thresholds = "0.5,0.8,0.95"
missed_merge_budget = 0.5
"""


def test_sweep_in_one_run(tmp_path):
    root = make_corpus(tmp_path / "corpus", HAND_TEXTS, HAND_GOLD, SWEEP_TOML)
    report = run_cli([str(root), "--parser", "reference", "--out", str(tmp_path / "out")])
    rows = corpus_rows(report, "reference")
    sweep = details(report, "reference")["sweep"]
    assert [(c["num_perm"], c["threshold"]) for c in sweep["cells"]] == \
        [(64, 0.5), (64, 0.8), (64, 0.95), (128, 0.5), (128, 0.8), (128, 0.95)]
    docs = list(HAND_TEXTS.items())
    for cell in sweep["cells"]:
        label = f"num_perm={cell['num_perm']},threshold={cell['threshold']:g}"
        # independent re-run of the detector at that setting
        res = deduplicate(docs, DedupConfig(num_perm=cell["num_perm"], threshold=cell["threshold"]))
        c = cluster_agreement(HAND_GOLD, dict(res.cluster_of))
        fm, mm = false_merge_rate(c), missed_merge_rate(c)
        assert (cell["b"], cell["r"]) == (res.b, res.r)
        assert cell["false_merge_rate"]["value"] == fm.value and cell["missed_merge_rate"]["value"] == mm.value
        assert rows["dedup.sweep_missed_merge_rate", label]["micro"] == mm.value
        got = rows["dedup.sweep_false_merge_rate", label]
        assert got["micro"] == fm.value and got["states"][fm.state.value] == 6  # the 6 documents behind it
    best = details(report, "reference")["sweep_best"]
    fit = [c for c in sweep["cells"] if c["missed_merge_rate"]["value"] <= 0.5
           and c["false_merge_rate"]["state"] == "ok"]
    assert best["best"]["false_merge_rate"]["value"] == min(c["false_merge_rate"]["value"] for c in fit)
    label = f"missed_merge<=0.5/{best['best']['label']}"
    assert rows["dedup.sweep_best", label]["micro"] == best["best"]["false_merge_rate"]["value"]
    assert f"dedup.sweep_best[{label}]" in unescape_md(report["_md"])
    step = {p["name"]: p["stages"]["dedup"]["settings"] for p in report["pipelines"]}["reference"]
    assert [(x["num_perm"], x["threshold"], x["b"], x["r"]) for x in step["sweep_lsh"]
            if x["num_perm"] == 128] == [(128, 0.5, 25, 5), (128, 0.8, 9, 13), (128, 0.95, 3, 42)]


def test_best_setting_rule():
    def cell(p, t, fm, mm, fm_state="ok"):
        return {"num_perm": p, "threshold": t, "label": f"{p}/{t}",
                "false_merge_rate": {"value": fm if fm_state == "ok" else None, "state": fm_state},
                "missed_merge_rate": {"value": mm, "state": "ok"}}

    cells = [cell(64, 0.5, 0.30, 0.05), cell(128, 0.5, 0.20, 0.10), cell(256, 0.5, 0.20, 0.10),
             cell(128, 0.6, 0.20, 0.10), cell(128, 0.9, 0.00, 0.60), cell(64, 0.4, None, 0.0, "no_prediction")]
    best, why = DedupAuditor.best_setting(cells, 0.1)
    # 0.20 ties among (128,0.5), (256,0.5), (128,0.6) at missed 0.10: fewer permutations, then higher threshold
    assert (best["num_perm"], best["threshold"]) == (128, 0.6) and "4 of 6" in why
    best, why = DedupAuditor.best_setting(cells, 0.01)
    assert best is None and "lowest: 0.0500" in why


def test_list_and_string_sweep_options_are_the_same():
    a = dedup(sweep_num_perm=[64, 128], sweep_thresholds=[0.5, 0.8])
    b = dedup(sweep_num_perm="64, 128", sweep_thresholds="0.5,0.8")
    assert a.corpus_step.settings() == b.corpus_step.settings() and a.corpus_step.sweep == ((64, 128), (0.5, 0.8))
    assert dedup(sweep_thresholds=[0.7]).corpus_step.sweep == ((128,), (0.7,))


def test_s_curve_detail_equals_the_bucket_function_on_every_pair():
    pairs = near_duplicate_pairs(6, 0.8, union_size=100, seed=4) + near_duplicate_pairs(6, 0.5, union_size=100, seed=5)
    texts = [t for p in pairs for t in (p.text_a, p.text_b)] + [f"unrelated text number {i} " * 3 for i in range(5)]
    items = [item(f"s/d{i:02d}", t) for i, t in enumerate(texts)]
    result = audit_corpus(dedup(), items)
    curve = result.details["s_curve"]
    assert (curve["b"], curve["r"], curve["state"]) == (9, 13, "ok")
    # brute force: every pair of indexed documents, exact Jaccard from Python sets, no folding of zero pairs
    res = deduplicate([(i.doc_id, i.parsed.text) for i in items], DedupConfig())
    cfg = res.config
    keys = [k for k in res.keys if k not in {e.key for e in res.excluded}
            and k not in {m for g in res.exact_groups for m in g[1:]}]
    cand = {(c.a, c.b) for c in res.candidates}
    pairs_ = list(combinations(keys, 2))
    jac = [exact_jaccard(res.shingles(a), res.shingles(b)) for a, b in pairs_]
    expected = candidate_rate_by_bucket(jac, [p in cand for p in pairs_], res.b, res.r)
    assert sum(j == 0 for j in jac) > 0 and cfg.threshold == 0.8
    assert [(b["pairs"], b["candidates"]) for b in curve["buckets"]] == [(e.pairs, e.candidates) for e in expected]
    for got, exp in zip(curve["buckets"], expected):
        assert got["empirical"] == exp.empirical.value
        assert got["theoretical"] == pytest.approx(exp.theoretical, rel=1e-12, abs=1e-300) \
            if exp.theoretical is not None else got["theoretical"] is None
        assert (got["ci_low"], got["ci_high"]) == ((exp.interval.low, exp.interval.high) if exp.interval
                                                   else (None, None))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.frozensets(st.integers(0, 12), max_size=8), min_size=0, max_size=7))
def test_pairwise_jaccard_equals_set_arithmetic(sets):
    got = pairwise_jaccard(sets, 10**6)
    want = [exact_jaccard(a, b) or 0.0 for a, b in combinations(sets, 2)]
    assert got is not None and list(got) == pytest.approx(want, abs=1e-15)
    if len(sets) >= 3:
        assert pairwise_jaccard(sets, 2) is None  # over the pair budget: not computed


# --- dedup as a pipeline step -----------------------------------------------------------------------------------------

TWO_THRESHOLDS_TOML = """
[auditor_options.dedup]
k = 5

[pipelines.loose]
parser = "reference"
dedup = { use = "minhash", threshold = 0.5 }

[pipelines.strict]
parser = "reference"
dedup = { use = "minhash", threshold = 0.95 }
"""


def _expected_rates(threshold: float) -> tuple[float | None, float | None]:
    """False- and missed-merge rates of the hand corpus at ``threshold``, from an independent run of the detector."""
    res = deduplicate(list(HAND_TEXTS.items()), DedupConfig(threshold=threshold))
    c = cluster_agreement(HAND_GOLD, dict(res.cluster_of))
    return false_merge_rate(c).value, missed_merge_rate(c).value


def test_two_pipelines_with_two_dedup_thresholds_are_two_columns_of_one_run(tmp_path):
    root = make_corpus(tmp_path / "corpus", HAND_TEXTS, HAND_GOLD, TWO_THRESHOLDS_TOML)
    report = run_cli([str(root), "--stage", "dedup", "--out", str(tmp_path / "out")])
    loose, strict = _expected_rates(0.5), _expected_rates(0.95)
    assert loose != strict  # the corpus tells the two thresholds apart
    for name, (fm, mm), t in (("loose", loose, 0.5), ("strict", strict, 0.95)):
        rows = corpus_rows(report, name)
        assert (rows["dedup.false_merge_rate", ""]["micro"], rows["dedup.missed_merge_rate", ""]["micro"]) == (fm, mm)
        step = {p["name"]: p["stages"]["dedup"] for p in report["pipelines"]}[name]
        assert (step["implementation"], step["settings"]["threshold"], step["settings"]["k"]) == ("minhash", t, 5)
        assert details(report, name)["lsh"]["threshold"] == t


def test_sweep_over_the_dedup_step_threshold(tmp_path):
    root = make_corpus(tmp_path / "corpus", HAND_TEXTS, HAND_GOLD)
    report = run_cli([str(root), "--parser", "reference", "--stage", "dedup", "--sweep", "dedup.threshold=0.5,0.95",
                      "--out", str(tmp_path / "out")])
    for t in (0.5, 0.95):
        rows = corpus_rows(report, f"reference/threshold={t:g}")
        fm, mm = _expected_rates(t)
        assert (rows["dedup.false_merge_rate", ""]["micro"], rows["dedup.missed_merge_rate", ""]["micro"]) == (fm, mm)


def test_an_unknown_dedup_detector_of_a_pipeline_is_exit_2_before_any_document(tmp_path):
    toml = '[pipelines.p]\nparser = "reference"\ndedup = { use = "no-such-detector" }\n'
    root = make_corpus(tmp_path / "corpus", HAND_TEXTS, HAND_GOLD, toml)
    result = CliRunner().invoke(app, ["run", str(root), "--stage", "dedup", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "[pipelines.p] dedup: unknown dedup detector 'no-such-detector'" in result.output


def test_step_options_rule():
    """``[auditor_options.dedup]`` step keys are the defaults; the pipeline's table overrides them key by key; its
    ``use`` (unless ``default``) is the detector; the auditor's own keys never reach the step."""
    from ingestaudit.dedup_settings import step_options

    defaults = {"threshold": 0.7, "k": 3, "detector": "mine", "missed_merge_budget": 0.2}
    assert step_options(defaults, "default", {}) == {"threshold": 0.7, "k": 3, "detector": "mine"}
    assert step_options(defaults, "minhash", {"threshold": 0.9}) == {"threshold": 0.9, "k": 3, "detector": "minhash"}


AUDIT_ON_HAND_MADE_OUTPUT = r'''
import json, sys
from types import SimpleNamespace
sys.modules["datasketch"] = None  # importing it raises: the auditor must not need it
import numpy as np
from ingestaudit.auditors.base import ArtefactItem
from ingestaudit.auditors.dedup import DedupArtefact, DedupAuditor
from ingestaudit.dedup_settings import DedupConfig

gold = {"c/a": "g1", "c/b": "g1", "c/c": "g1", "c/d": "g2", "c/e": None}
clusters = {"c/a": 1, "c/b": 1, "c/d": 1, "c/c": 2, "c/e": None}
sets = {"c/a": range(1, 11), "c/b": range(1, 11), "c/c": range(20, 30), "c/d": [*range(1, 6), *range(11, 16)],
        "c/e": [40]}
sets = {k: np.array(sorted(v), dtype=np.uint64) for k, v in sets.items()}

def jaccard(a, b):
    inter = len(np.intersect1d(sets[a], sets[b]))
    return inter / (len(sets[a]) + len(sets[b]) - inter)

output = SimpleNamespace(kind="precomputed", detector="minhash", config=DedupConfig(threshold=0.8),
                         cluster_of=clusters, excluded={"c/e": {"reason": "too_short"}}, details={}, result=None,
                         sweep=None, grid=None, grid_error="", error="", jaccard=jaccard)
items = [ArtefactItem(k, "c", DedupArtefact(g)) for k, g in gold.items()]
res = DedupAuditor().audit_step(items, output)
corpus = {s.metric: s.value for c, s, n in res.corpus_scores if c == "__all__"}
docs = {k: s.value for k, s in res.doc_scores}
loaded = sorted(m for m, mod in sys.modules.items()
                if mod is not None and m.startswith(("ingestaudit.stages", "datasketch", "ingestaudit.parsers")))
print(json.dumps({"corpus": corpus, "docs": docs, "loaded": loaded}))
'''


def test_auditor_on_hand_made_step_output_without_datasketch():
    """Five documents, gold {a, b, c} and {d} (e: none), predicted {a, b, d} and {c}, e excluded: G = 3 gold pairs,
    P = 3 predicted pairs, T = 1 ((a, b)) out of C(5, 2) = 10 pairs; values worked by hand."""
    import os
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", AUDIT_ON_HAND_MADE_OUTPUT], capture_output=True, text=True,
                         env={**os.environ}, check=True)
    got = json.loads(out.stdout)
    assert got["loaded"] == []  # no stage, parser or datasketch module was imported
    c = got["corpus"]
    assert c["dedup.pairwise_precision"] == pytest.approx(1 / 3) and c["dedup.pairwise_recall"] == pytest.approx(1 / 3)
    assert c["dedup.pairwise_f1"] == pytest.approx(2 * 1 / (3 + 3))
    assert c["dedup.false_merge_rate"] == pytest.approx(2 / 3) and c["dedup.missed_merge_rate"] == pytest.approx(2 / 3)
    # ARI: E = G*P/10 = 0.9, M = (G+P)/2 = 3 -> (1 - 0.9) / (3 - 0.9)
    assert c["dedup.ari"] == pytest.approx(0.1 / 2.1)
    # B-cubed precision: a, b 2/3 each, d 1/3, c 1, e 1 -> (11/3)/5; recall: a, b 2/3, c 1/3, d 1, e 1
    assert c["dedup.bcubed_precision"] == pytest.approx(11 / 15) and c["dedup.bcubed_recall"] == pytest.approx(11 / 15)
    assert c["dedup.largest_cluster"] == 3.0
    # a kept; b and d removed; d's gold group differs from a's: wrongly removed
    assert c["dedup.removed_docs"] == pytest.approx(2 / 5) and c["dedup.wrongly_removed_docs"] == pytest.approx(1 / 5)
    # within-cluster pairs (a,b) J=1, (a,d) and (b,d) J=5/15 < 0.8: chained 2 of 3
    assert c["dedup.chained_pairs"] == pytest.approx(2 / 3)
    assert got["docs"] == {"c/a": 0.0, "c/b": 0.0, "c/c": 0.0, "c/d": 0.0, "c/e": 1.0}


def test_a_corpus_toml_may_not_name_a_dedup_detector_by_module_path(tmp_path):
    """A pipeline's dedup step loads code by ``module:Class`` like any plug-in: a corpus's own configuration
    (untrusted) may not name one, as ``use`` or as its ``detector`` option."""
    from ingestaudit.config import ConfigError, load_config

    path = tmp_path / "ingestaudit.toml"
    path.write_text('[pipelines.p]\ndedup = { use = "a.b:Dedup" }\n[pipelines.q]\ndedup = { detector = "c.d:Dedup" }\n',
                    encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    msg = str(err.value)
    assert f"{path}: pipelines.p.dedup.use:" in msg and f"{path}: pipelines.q.dedup.detector:" in msg
    assert load_config(path, trusted=True).pipelines["p"]["dedup"] == {"use": "a.b:Dedup"}


def test_validate_names_a_pipelines_bad_dedup_option(tmp_path):
    """``validate`` builds each pipeline's dedup step: threshold 1.0 (MinHashLSH refuses it; exact duplicates go by
    hash) is exit 2 naming the pipeline and the step; a good pipeline beside it is not named. (A bad
    ``[auditor_options.dedup]`` default is refused by the auditor itself, `test_bad_options_are_refused`.)"""
    toml = ('[pipelines.bad]\nparser = "reference"\ndedup = { use = "minhash", threshold = 1.0 }\n'
            '[pipelines.good]\nparser = "reference"\ndedup = { use = "minhash", threshold = 0.9 }\n')
    root = make_corpus(tmp_path / "corpus", HAND_TEXTS, HAND_GOLD, toml)
    res = CliRunner().invoke(app, ["validate", str(root)])
    assert res.exit_code == 2
    assert "[pipelines.bad] dedup:" in res.output and "threshold" in res.output
    assert "[pipelines.good]" not in res.output
