"""Issue 13's acceptance list for the regression gate, each through the ``compare`` command on hand-built reports."""

from __future__ import annotations

import json

import pytest
from _reportkit import Row, build, cer_rows, write
from typer.testing import CliRunner

from ingestaudit.cli import app


def compare(tmp_path, base, head, *args):
    b = write(base, tmp_path / "base" / "report.json")
    h = write(head, tmp_path / "head" / "report.json")
    return CliRunner().invoke(app, ["compare", str(b), str(h), *args], env={"COLUMNS": "120"})


def test_two_identical_reports_give_one_verdict_line_and_exit_0(tmp_path):
    report = build(cer_rows("pymupdf", "invoices", [0.1 + 0.01 * i for i in range(30)])
                   + cer_rows("pymupdf", "letters", [0.2] * 5))
    result = compare(tmp_path, report, report)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().splitlines() == ["gate held: no regression in 3 compared rows"]


def test_every_document_of_30_worse_by_0_05_is_a_regression_listed_first_with_three_documents(tmp_path):
    base = build(cer_rows("pymupdf", "invoices", [0.10] * 30) + cer_rows("pymupdf", "letters", [0.10] * 30))
    head_values = [0.15] * 30
    head = build(cer_rows("pymupdf", "invoices", head_values) + cer_rows("pymupdf", "letters", [0.12] * 30))
    result = compare(tmp_path, base, head, "--budget", "extraction.cer=0.01")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("gate FAILED: 3 regressions")
    first = next(i for i, line in enumerate(lines) if line.strip().startswith("1."))
    assert "pymupdf · invoices · extraction.cer ↓  0.1 -> 0.15" in lines[first]
    # every resample is worse: one-sided bootstrap p = 1 / (1 + B), B = 20 K / alpha = 1200 for a family of K = 3
    # (invoices, letters, __all__); Holm's first step multiplies by 3: 3 / 1201 = 0.002498
    assert lines[first + 1].strip() == ("Δ +0.05 [+0.05, +0.05]  budget 0.01  p_holm 0.002498 (bootstrap, 1200 "
                                        "resamples, 30 pairs, 30 moved)")
    assert lines[first + 2].strip() == ("moved most: invoices/d00 0.1 -> 0.15, invoices/d01 0.1 -> 0.15, "
                                        "invoices/d02 0.1 -> 0.15")
    # letters (+0.02, two budgets) comes after invoices (+0.05, five budgets)
    assert result.stdout.index("· letters ·") > result.stdout.index("· invoices ·")
    assert len(lines) < 25  # fits on a screen


def test_one_document_of_30_worse_is_within_noise_and_counted_as_moved(tmp_path):
    # d00 weighs 1000 characters, the others 100: its CER going 0.10 -> 0.20 moves the micro CER by 100/3900 = 0.026,
    # beyond the 0.01 budget, but one document of 30 is no evidence of a regression: a bootstrap resample leaves d00
    # out (and so is not worse) with probability (29/30)^30 = 0.3616, the one-sided p
    dens = [1000.0] + [100.0] * 29
    base = build(cer_rows("pymupdf", "invoices", [0.10] * 30, den=dens))
    head = build(cer_rows("pymupdf", "invoices", [0.20] + [0.10] * 29, den=dens))
    result = compare(tmp_path, base, head, "--budget", "extraction.cer=0.01")
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "gate held: no regression in 1 compared rows"
    assert lines[1].startswith("within noise: 1 row (1 moved beyond the budget, not significant after Holm")
    # the row that moved beyond its budget is named, with the document that moved
    assert any(line.strip().startswith("- pymupdf · invoices · extraction.cer ↓  0.1 -> 0.1256") for line in lines)
    assert "moved most: invoices/d00 0.1 -> 0.2" in result.stdout
    data = json.loads(compare(tmp_path, base, head, "--json").stdout)
    (row,) = data["rows"]
    assert row["status"] == "within_noise" and row["worse"] == pytest.approx(100 / 3900)
    assert row["p_value"] == pytest.approx((29 / 30) ** 30, abs=0.05)  # 1000 resamples: sd 0.015


def test_three_documents_all_worse_are_underpowered_and_gated_by_the_budget(tmp_path):
    # [gate] min_items = 3: a row of 3 items may fail on its budget alone (the default, 10, warns: issue 26)
    base = build(cer_rows("pymupdf", "tiny", [0.10, 0.20, 0.30]))
    head = build(cer_rows("pymupdf", "tiny", [0.15, 0.25, 0.35]), gate={"min_items": 3})
    result = compare(tmp_path, base, head)
    assert result.exit_code == 1, result.output
    assert "1 regression (0 significant, 1 on the budget alone)" in result.stdout.splitlines()[0]
    assert "underpowered (3 pairs: one-sided p >= 0.125, the bar is 0.05): budget alone" in result.stdout
    data = json.loads(compare(tmp_path, base, head, "--json").stdout)
    (reg,) = data["regressions"]
    assert reg["underpowered"] is True and reg["p_holm"] is None and reg["diff"] == pytest.approx(0.05)


def test_a_document_from_ok_to_error_is_a_hard_regression(tmp_path):
    rows = cer_rows("pymupdf", "invoices", [0.1] * 10)
    base = build(rows)
    broken = [Row(r.item, r.doc_class, r.pipeline, r.metric, None, state="error",
                  reason="RuntimeError: cannot open file") if r.item == "invoices/d04" else r for r in rows]
    head = build(broken)
    result = compare(tmp_path, base, head)
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("gate FAILED: 1 hard regression")
    assert "  pymupdf · invoices/d04 · extraction: ok -> error: RuntimeError: cannot open file" in lines
    data = json.loads(compare(tmp_path, base, head, "--json").stdout)
    assert data["hard_regressions"] == [{"pipeline": "pymupdf", "item": "invoices/d04", "stages": ["extraction"],
                                         "state": "error", "message": "RuntimeError: cannot open file"}]


def test_a_changed_normalization_profile_makes_rows_not_comparable(tmp_path):
    base = build(cer_rows("pymupdf", "invoices", [0.10] * 30), auditors={"extraction": {"normalization": "text-v1"}})
    head = build(cer_rows("pymupdf", "invoices", [0.30] * 30), auditors={"extraction": {"normalization": "strict"}})
    result = compare(tmp_path, base, head)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "gate held: no regression in 1 compared rows"
    assert ('not comparable (1 row, not gated): extraction options changed (normalization: "text-v1" -> '
            '"strict")') in result.stdout


def test_pipelines_of_different_names_gate_with_map_and_exit_2_without(tmp_path):
    base = build(cer_rows("pymupdf", "invoices", [0.1] * 30))
    head = build(cer_rows("unstructured", "invoices", [0.15] * 30))
    same = build(cer_rows("unstructured", "invoices", [0.1] * 30))
    result = compare(tmp_path, base, same, "--map", "pymupdf=unstructured")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["gate held: no regression in 1 compared rows",
                                          "pipelines: pymupdf -> unstructured",
                                          "what changed: parser.use pymupdf -> unstructured"]
    result = compare(tmp_path, base, head, "--map", "pymupdf=unstructured")
    assert result.exit_code == 1 and "1. pymupdf -> unstructured · invoices · extraction.cer" in result.stdout
    result = compare(tmp_path, base, head)
    assert result.exit_code == 2
    assert ("no pipeline in common: the baseline has pymupdf; the head has unstructured. Pair them with --map "
            "BASE=HEAD (e.g. --map pymupdf=unstructured)") in " ".join(result.output.split())
