"""Issue 26: the gate's result as data (gate.json, report.json's ``gate``, JUnit XML), what changed named first,
seed-aware comparability, ``[gate] min_items``, control bands from the history, the history's verdict column and
terminal views at 80 columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _reportkit import Row, build, cer_rows, write
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.report.bands import XMR_FACTOR, xmr_band
from ingestaudit.report.compare import compare_reports
from ingestaudit.report.history import append_run, list_runs


def compare(tmp_path, base, head, *args, columns: int = 120):
    b = write(base, tmp_path / "base" / "report.json")
    h = write(head, tmp_path / "head" / "report.json")
    return CliRunner().invoke(app, ["compare", str(b), str(h), *args], env={"COLUMNS": str(columns)}), h


# --- control bands ---------------------------------------------------------------------------------------------------

def test_xmr_band_worked_by_hand():
    # mean (0.80 + 0.82 + 0.81 + 0.79 + 0.80) / 5 = 0.804; moving ranges 0.02, 0.01, 0.02, 0.01: mean 0.015;
    # limits 0.804 +/- 2.66 x 0.015 = 0.804 +/- 0.0399
    band = xmr_band([0.80, 0.82, 0.81, 0.79, 0.80])
    assert XMR_FACTOR == 2.66
    assert band.center == pytest.approx(0.804) and band.mr == pytest.approx(0.015)
    assert (band.low, band.high) == (pytest.approx(0.7641), pytest.approx(0.8439))
    assert band.outside(0.75) and not band.outside(0.78)
    assert xmr_band([0.80, 0.82, 0.81, 0.79]) is None  # fewer than 5 accepted runs: no band


def one_class(cer: float, n: int = 30):
    return build(cer_rows("pymupdf", "invoices", [cer] * n))


def banded_history(tmp_path: Path) -> Path:
    db = tmp_path / "h.duckdb"
    for night, cer in enumerate([0.80, 0.82, 0.81, 0.79, 0.80]):
        append_run(db, one_class(cer), label=f"commit-{night:07d}", time=f"2026-01-0{night + 1}T00:00:00+00:00",
                   accepted=True)
    return db


def test_a_head_outside_its_band_is_a_warning_and_inside_is_silent(tmp_path):
    db = banded_history(tmp_path)
    head = write(one_class(0.75), tmp_path / "head" / "report.json")  # better than the last accepted run (0.80)
    result = CliRunner().invoke(app, ["compare", f"history:{db}", str(head)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert ("band warning: pymupdf · invoices · extraction.cer 0.75 is outside its control band [0.7641, 0.8439] "
            "(center 0.804, last 5 accepted runs; better than usual)") in result.stdout
    gate = json.loads((head.parent / "gate.json").read_text())
    band = next(b for b in gate["bands"] if b["doc_class"] == "invoices")
    assert band["center"] == pytest.approx(0.804) and band["mean_moving_range"] == pytest.approx(0.015)
    assert (band["low"], band["high"], band["outside"], band["fails"]) == (pytest.approx(0.7641),
                                                                          pytest.approx(0.8439), "better", False)
    inside = write(one_class(0.78), tmp_path / "inside" / "report.json")
    result = CliRunner().invoke(app, ["compare", f"history:{db}", str(inside)], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "band" not in result.stdout
    assert [b["outside"] for b in json.loads((inside.parent / "gate.json").read_text())["bands"]] == ["", ""]


def test_bands_fail_fails_the_gate_on_a_worse_value_within_the_budget(tmp_path):
    db = banded_history(tmp_path)
    # 0.86 vs the accepted 0.80: +0.06 within the 0.1 budget, but above the band's 0.8439
    head = write(build(cer_rows("pymupdf", "invoices", [0.86] * 30), gate={"bands": "fail"}),
                 tmp_path / "head" / "report.json")
    result = CliRunner().invoke(app, ["compare", f"history:{db}", str(head), "--budget", "extraction.cer=0.1"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    assert "gate held: no regression in 1 compared rows" in result.stdout  # the two-run comparison held
    assert "band FAILED: pymupdf · invoices · extraction.cer 0.86 is outside its control band" in result.stdout
    assert json.loads((head.parent / "gate.json").read_text())["verdict"] == "fail"
    data = json.loads(CliRunner().invoke(app, ["compare", f"history:{db}", str(head), "--budget", "extraction.cer=0.1",
                                               "--json"]).stdout)
    assert data["verdict"] == "fail" and [b["fails"] for b in data["bands"]] == [True, True]


def test_compare_json_and_gate_json_say_the_verdict_in_one_vocabulary(tmp_path):
    """``compare --json`` said ``held``/``failed`` where gate.json says ``pass``/``fail`` for the same outcome:
    both now say gate.json's words (issue 26's ``verdict: pass|fail|first_run``)."""
    base = write(build(cer_rows("pymupdf", "invoices", [0.10] * 30)), tmp_path / "base" / "report.json")
    for name, cer, word in (("same", 0.10, "pass"), ("worse", 0.30, "fail")):
        head = write(build(cer_rows("pymupdf", "invoices", [cer] * 30)), tmp_path / name / "report.json")
        data = json.loads(CliRunner().invoke(app, ["compare", str(base), str(head), "--json"]).stdout)
        assert data["verdict"] == word == json.loads((head.parent / "gate.json").read_text())["verdict"]


# --- gate.json, report.json and JUnit -------------------------------------------------------------------------------

def test_gate_json_report_json_and_junit_name_one_failure_per_regression(tmp_path):
    from junitparser import Failure, JUnitXml

    base = build(cer_rows("pymupdf", "invoices", [0.10] * 30) + cer_rows("pymupdf", "letters", [0.10] * 30))
    head = build(cer_rows("pymupdf", "invoices", [0.15] * 30) + cer_rows("pymupdf", "letters", [0.10] * 30))
    junit = tmp_path / "ci" / "gate.xml"
    result, head_json = compare(tmp_path, base, head, "--junit", str(junit))
    assert result.exit_code == 1, result.output
    gate = json.loads((head_json.parent / "gate.json").read_text())
    assert gate["verdict"] == "fail" and gate["head"] == str(head_json)
    # invoices and __all__ regressed (letters is unchanged): 2 regressions, each significant
    assert [(r["doc_class"], r["kind"]) for r in gate["regressions"]] == [("invoices", "significant"),
                                                                        ("__all__", "significant")]
    assert json.loads(head_json.read_text())["gate"] == gate  # the same object inside report.json
    xml = JUnitXml.fromfile(str(junit))
    suites = {s.name: s for s in xml}
    assert sorted(suites) == ["__all__", "invoices", "letters"]
    assert (xml.tests, xml.failures) == (3, 2)  # one testcase per key metric x pipeline x class
    failed = [(s.name, c.name) for s in xml for c in s if any(isinstance(r, Failure) for r in c.result)]
    assert failed == [("invoices", "pymupdf · extraction.cer"), ("__all__", "pymupdf · extraction.cer")]
    message = next(r for c in suites["invoices"] for r in c.result).message
    assert message.startswith("pymupdf · invoices · extraction.cer: 0.1 -> 0.15, Δ +0.05 [+0.05, +0.05], "
                              "budget 0.01, p_holm")


def test_junit_has_testcases_only_for_rows_the_gate_compared(tmp_path):
    """A pipeline only in the head was never gated: no (passing) testcase; a metric the head no longer reports is
    missing in the head: a failed testcase of the gate suite, not a passing one of its class."""
    from junitparser import Failure, JUnitXml

    wer = cer_rows("pymupdf", "invoices", [0.20] * 12, metric="extraction.wer")
    base = build(cer_rows("pymupdf", "invoices", [0.10] * 12) + wer)
    head = build(cer_rows("pymupdf", "invoices", [0.10] * 12) + cer_rows("new", "invoices", [0.30] * 12))
    junit = tmp_path / "gate.xml"
    result, _ = compare(tmp_path, base, head, "--junit", str(junit))
    assert result.exit_code == 1, result.output  # extraction.wer is missing in the head
    assert "only in the head: new" in result.stdout
    xml = JUnitXml.fromfile(str(junit))
    cases = [(s.name, c.name, [r.type for r in c.result if isinstance(r, Failure)]) for s in xml for c in s]
    # invoices and __all__ hold the same 12 items: the row is gated once, in its class
    assert cases == [("invoices", "pymupdf · extraction.cer", []),
                     ("gate", "pymupdf · metric extraction.wer", ["missing in the head"])]
    assert (xml.tests, xml.failures) == (2, 1)


def test_compare_warns_when_it_cannot_write_beside_head_and_keeps_its_verdict(tmp_path):
    """gate.json cannot be written (a folder of that name is in the way: os.replace fails with EISDIR, also as
    root): a warning naming HEAD, report.json untouched, no temporary file left, the exit code the verdict's."""
    base = build(cer_rows("pymupdf", "invoices", [0.10] * 30))
    head = build(cer_rows("pymupdf", "invoices", [0.15] * 30))
    h = write(head, tmp_path / "head" / "report.json")
    (h.parent / "gate.json" / "in-the-way").mkdir(parents=True)
    before = h.read_bytes()
    result, _ = compare(tmp_path, base, head)
    assert result.exit_code == 1, result.output  # the regression still fails the gate
    warning = " ".join(result.stderr.split())
    assert warning.startswith(f"warning: the gate's result was not written beside {h} (")
    assert "gate FAILED: 1 regression" in result.stdout
    assert h.read_bytes() == before
    assert sorted(p.name for p in h.parent.iterdir()) == ["gate.json", "report.json"]
    assert [p.name for p in (h.parent / "gate.json").iterdir()] == ["in-the-way"]


def test_a_report_not_gated_has_no_gate_key():
    report = one_class(0.1)
    assert "gate" not in json.loads(report.to_json())  # the same keys, so the same bytes, as before issue 26


# --- min_items -------------------------------------------------------------------------------------------------------

def test_a_budget_alone_row_below_min_items_is_a_warning_in_one_sentence(tmp_path):
    base = build(cer_rows("pymupdf", "big", [0.10] * 30) + cer_rows("pymupdf", "tiny", [0.10, 0.20, 0.30]))
    head = build(cer_rows("pymupdf", "big", [0.15] * 30) + cer_rows("pymupdf", "tiny", [0.15, 0.25, 0.35]))
    result, head_json = compare(tmp_path, base, head)
    assert result.exit_code == 1, result.output
    # big and __all__ are significant; tiny (3 items, all worse by 0.05) would fail on its budget alone: a warning
    assert " ".join(result.stdout.split("\nregressions, most severe")[0].split()) == (
        "gate FAILED: 2 regressions (3 summary rows compared); 1 underpowered row with fewer than 10 items "
        "worsened beyond the budget: warning only")
    assert "budget warnings (beyond the budget, fewer than 10 items: [gate] min_items)" in result.stdout
    gate = json.loads((head_json.parent / "gate.json").read_text())
    assert [(r["doc_class"], r["kind"], r["n"]) for r in gate["budgets"]] == [("tiny", "budget_warning", 3)]
    alone = compare_reports(base, head, min_items=3)
    assert [(r.doc_class, r.underpowered) for r in alone.regressions] == [("big", False), ("__all__", False),
                                                                          ("tiny", True)]


# --- seeds and what changed -----------------------------------------------------------------------------------------

def chunk_report(seed: int, truncated: float, gain: float, size: int):
    rows = [Row(f"c/d{i:02d}", "c", "p", "chunking.truncated_tokens", truncated, truncated * 100, 100)
            for i in range(20)]
    rows += [Row(f"c/d{i:02d}", "c", "p", "chunking.coherence_gain", gain) for i in range(20)]
    report = build(rows, seed=seed, auditors={"chunking": {"coherence_draws": 20, "seed": seed}})
    report.pipelines[0].stages["chunker"] = report.pipelines[0].stages["parser"].model_copy(
        update={"implementation": "recursive", "settings": {"size": size}})
    return report


def test_a_seed_change_leaves_only_seeded_metrics_not_comparable():
    c = compare_reports(chunk_report(0, 0.0, 0.1, 500), chunk_report(7, 0.5, 0.1, 4000))
    status = {(r.doc_class, r.metric): r.status for r in c.rows}
    assert status[("c", "chunking.truncated_tokens")] == "regression"
    assert status[("c", "chunking.coherence_gain")] == "not_comparable"
    assert {r.reason for r in c.rows if r.status == "not_comparable"} == {
        "seed-dependent metrics, seed changed (0 -> 7)"}
    assert ("chunker.size", 500, 4000) in [(ch["path"], ch["base"], ch["head"]) for ch in c.changes]
    assert ("run.seed", 0, 7) in [(ch["path"], ch["base"], ch["head"]) for ch in c.changes]
    # an option other than the seed still makes every chunking row not comparable
    other = chunk_report(0, 0.0, 0.1, 500)
    other.config["auditors"]["chunking"]["coherence_draws"] = 50
    for row in other.summary:
        row.definition = ""
    other.model_post_init(None)
    assert {r.status for r in compare_reports(chunk_report(0, 0.0, 0.1, 500), other).rows} == {"not_comparable"}


def test_what_changed_is_printed_right_under_the_verdict(tmp_path):
    result, _ = compare(tmp_path, chunk_report(0, 0.0, 0.1, 500), chunk_report(0, 0.5, 0.1, 4000))
    lines = result.stdout.splitlines()
    assert lines[0] == "gate FAILED: 1 regression (2 summary rows compared)"  # __all__ is c: gated once
    assert lines[1] == "what changed: chunker.size 500 -> 4000"


def test_a_corpus_change_is_named_with_its_fingerprints_and_items():
    base = build(cer_rows("p", "c", [0.1] * 20), fingerprint="a" * 64)
    head = build(cer_rows("p", "c", [0.1] * 19) + [Row("c/new", "c", "p", "extraction.cer", 0.1, 10, 100)],
                 fingerprint="b" * 64)
    from ingestaudit.report.compare import render_comparison

    text = render_comparison(compare_reports(base, head), width=200)
    assert ("corpus changed: fingerprint aaaaaaaaaaaa -> bbbbbbbbbbbb; items 1 added, 1 removed; items pair by id "
            "and content hash") in text.splitlines()


# --- history ---------------------------------------------------------------------------------------------------------

def test_an_old_history_without_the_verdict_column_reads_and_gains_it(tmp_path):
    import duckdb

    db = tmp_path / "old.duckdb"
    append_run(db, one_class(0.1), label="before")
    con = duckdb.connect(str(db))
    con.execute("ALTER TABLE runs DROP COLUMN verdict")  # as a history written before issue 26
    con.close()
    assert [(r.label, r.verdict) for r in list_runs(db)] == [("before", None)]
    append_run(db, one_class(0.1), label="after", verdict="pass")
    assert [(r.label, r.verdict) for r in list_runs(db)] == [("before", None), ("after", "pass")]


def test_history_at_80_columns_keeps_every_label_the_accepted_marker_and_the_verdicts(tmp_path):
    db = tmp_path / "h.duckdb"
    verdicts = ["first_run", "pass", "fail", "pass", "pass", "pass", "fail", "pass"]
    for night, verdict in enumerate(verdicts):
        append_run(db, one_class(0.1 + night / 1000), label=f"release-2026.01.{night:02d}",
                   time=f"2026-01-0{night + 1}T00:00:00+00:00", verdict=verdict)
    result = CliRunner().invoke(app, ["history", str(db)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), result.stdout
    text = " ".join(result.stdout.split())
    assert "#1 release-2026.01.00" in text  # the accepted run stays in view, its full label in the legend
    assert "release-2026.01.07" in text and "…" not in result.stdout
    heads = next(line for line in lines if "trend" in line).split()
    assert heads == ["#1*", "#5", "#6", "#7", "#8", "trend", "change"]
    gate = next(line for line in lines if line.split() and set(line.split()) <= {"pass", "fail", "first_run"}).split()
    # 80 columns hold 5 run columns: the accepted run #1, then the last four
    assert gate == ["first_run", "pass", "pass", "fail", "pass"]
    assert "pymupdf · invoices · extraction.cer ↓" in result.stdout


def test_history_shows_the_band_of_the_accepted_runs(tmp_path):
    db = banded_history(tmp_path)
    result = CliRunner().invoke(app, ["history", str(db), "--class", "invoices"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert "band [0.7641, 0.8439] center 0.804 (X-mR, 5 accepted runs) (last run inside)" in result.stdout


def test_compare_help_shows_the_literal_gate_table():
    result = CliRunner().invoke(app, ["compare", "--help"], env={"COLUMNS": "100"})
    assert "overrides [gate]." in " ".join(result.stdout.replace("│", " ").split())
    assert "Read [gate] budgets" in " ".join(result.stdout.replace("│", " ").split())


def test_a_misspelt_gate_setting_stops_run_before_the_audit(tmp_path):
    root = tmp_path / "corpus"
    (root / "docs" / "c").mkdir(parents=True)
    (root / "docs" / "c" / "a.txt").write_text("x\n")
    cfg = tmp_path / "cfg.toml"
    cfg.write_text("[gate]\nmin_itms = 3\n")
    result = CliRunner().invoke(app, ["run", str(root), "--config", str(cfg), "--out", str(tmp_path / "out")],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert (f"{cfg} [gate] min_itms: unknown setting; a budget is named by its metric (stage.metric), the settings "
            "are min_items, band_window, bands") in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()


def test_a_gate_setting_with_a_bad_value_is_exit_2_naming_it(tmp_path):
    base = one_class(0.1)
    result, _ = compare(tmp_path, base, build(cer_rows("pymupdf", "invoices", [0.1] * 30),
                                              gate={"band_window": 3}))
    assert result.exit_code == 2
    assert "[gate]: band_window: Input should be greater than or equal to 5" in " ".join(result.output.split())


# --- end to end: a chunk-size regression through `run --baseline` (issue 26's acceptance) ----------------------------

WORDS = "pump valve seal gauge hose tap pressure flow litre hour night motor filter tank pipe".split()


def chunk_corpus(root: Path) -> Path:
    """12 text documents (the reference parser reads the truth text), each 60 twelve-word sentences: 500-character
    chunks fit the embedder's 256 word pieces, 4000-character ones do not."""
    import random

    rng = random.Random(1)
    for i in range(12):
        text = " ".join(" ".join(rng.choice(WORDS) for _ in range(12)).capitalize() + "." for _ in range(60))
        for sub, content in (("docs", "x\n"), ("truth", text + "\n")):
            (root / sub / "c").mkdir(parents=True, exist_ok=True)
            (root / sub / "c" / f"d{i:02d}.txt").write_text(content)
    return root


@pytest.fixture(scope="module")
def chunk_runs(tmp_path_factory):
    work = tmp_path_factory.mktemp("chunks")
    corpus = chunk_corpus(work / "corpus")
    out = {}
    for name, size in (("small", 500), ("large", 4000)):
        (work / f"{name}.toml").write_text(f'[pipelines.p]\nparser = "reference"\nchunker = {{ use = "recursive", '
                                           f'size = {size} }}\n')
    base = CliRunner().invoke(app, ["run", str(corpus), "--config", str(work / "small.toml"), "--stage", "chunking",
                                    "--executor", "serial", "--out", str(work / "base")])
    assert base.exit_code == 0, base.output
    for name, extra in (("head", []), ("seed7", ["--seed", "7"])):
        out[name] = CliRunner().invoke(app, ["run", str(corpus), "--config", str(work / "large.toml"), "--stage",
                                             "chunking", "--executor", "serial", "--out", str(work / name),
                                             "--baseline", str(work / "base" / "report.json"),
                                             "--junit", str(work / f"{name}.xml"), *extra],
                                       env={"COLUMNS": "100"})
    return work, out


@pytest.mark.slow
def test_a_chunk_size_change_fails_the_gate_with_the_change_named(chunk_runs):
    from junitparser import Failure, JUnitXml

    work, out = chunk_runs
    assert out["head"].exit_code == 1, out["head"].output
    gate = json.loads((work / "head" / "gate.json").read_text())
    assert gate["verdict"] == "fail"
    assert [c for c in gate["config_changes"] if c["path"] == "chunker.size"] == [
        {"path": "chunker.size", "base": 500, "head": 4000, "pipeline": "p"}]
    assert json.loads((work / "head" / "report.json").read_text())["gate"] == gate
    assert {r["metric"] for r in gate["regressions"]} >= {"chunking.truncated_tokens"}
    xml = JUnitXml.fromfile(str(work / "head.xml"))
    failures = [r for s in xml for c in s for r in c.result if isinstance(r, Failure)]
    assert len(failures) == len(gate["regressions"]) == xml.failures
    assert "what changed: chunker.size 500 -> 4000" in out["head"].stdout


@pytest.mark.slow
def test_a_seed_change_on_the_head_still_gates_the_chunk_size_regression(chunk_runs):
    work, out = chunk_runs
    assert out["seed7"].exit_code == 1, out["seed7"].output
    gate = json.loads((work / "seed7" / "gate.json").read_text())
    truncated = [r for r in gate["regressions"] if r["metric"] == "chunking.truncated_tokens"]
    assert truncated and truncated[0]["base"] == 0 and truncated[0]["head"] > 0.5
    from ingestaudit.report.compare import is_seeded

    assert gate["not_comparable"] and all(is_seeded(r["metric"]) for r in gate["not_comparable"])
    assert {r["metric"] for r in gate["not_comparable"]} == {"chunking.coherence_gain"}
    changes = {c["path"]: (c["base"], c["head"]) for c in gate["config_changes"]}
    assert changes["chunker.size"] == (500, 4000) and changes["run.seed"] == (0, 7)


def test_a_pass_is_written_and_a_later_ungated_run_into_the_folder_drops_the_old_gate_json(tmp_path):
    root = tmp_path / "corpus"
    for name in ("a", "b"):
        for sub, content in (("docs", "x\n"), ("truth", f"The {name} pump runs at night.\n")):
            (root / sub / "c").mkdir(parents=True, exist_ok=True)
            (root / sub / "c" / f"{name}.txt").write_text(content)

    def run(*args):
        return CliRunner().invoke(app, ["run", str(root), "-p", "reference", "--stage", "extraction", "--executor",
                                        "serial", *args], env={"COLUMNS": "120"})

    assert run("--out", str(tmp_path / "base")).exit_code == 0
    gated = run("--out", str(tmp_path / "head"), "--baseline", str(tmp_path / "base" / "report.json"))
    assert gated.exit_code == 0, gated.output
    gate = json.loads((tmp_path / "head" / "gate.json").read_text())
    assert (gate["verdict"], gate["regressions"], gate["config_changes"]) == ("pass", [], [])
    assert "gate" not in json.loads((tmp_path / "base" / "report.json").read_text())
    again = run("--out", str(tmp_path / "head"))
    assert again.exit_code == 0, again.output
    assert not (tmp_path / "head" / "gate.json").exists()  # a result of an earlier run is never left behind
    assert "gate" not in json.loads((tmp_path / "head" / "report.json").read_text())
