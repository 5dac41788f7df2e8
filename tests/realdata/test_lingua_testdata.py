"""lingua's language test data (../shared/data/lingua-testdata): import it (one document per sentence), run the
language stage through the CLI at component level (``--parser reference``), and check every per-language value
against an independent recount: lingua called directly (its own builder, not ingestaudit's adapter) and precision,
recall and F1 counted here by hand.

The fast test uses a subset (six languages, including two close pairs, 30 sentences each); the slow one runs all
75 languages x 4 sentences in one run, in this process (every label and the detector's 75 candidates are what it
shows; 20 sentences a language and two workers, each loading lingua's 75 models, made it the suite's second
longest test; the whole 75 x 150 takes about 80 s on a 2-core machine; its throughput is measured in benchmarks/,
see benchmarks/README.md).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.importers import get_importer

SUBSET = ["bs", "de", "en", "hr", "id", "ms"]  # Bosnian/Croatian and Indonesian/Malay are lingua's hardest pairs
LIMIT = 30
ALL_LIMIT = 4  # sentences per language in the 75-language run (300 documents)


@pytest.fixture(scope="module")
def src(shared_dataset) -> Path:
    return shared_dataset("lingua-testdata")


def source_lines(src: Path, code: str) -> list[str]:
    return (src / "sentences" / f"{code}.txt").read_text(encoding="utf-8").splitlines()


def label(code: str) -> str:
    """The label the truth schema gives a file name: langcodes maps ISO 639-1 'tl' (Tagalog) to 'fil'."""
    return "fil" if code == "tl" else code


def independent_scores(pairs: list[tuple[str, str | None]]) -> dict[str, dict[str, tuple[int, int]]]:
    """(numerator, denominator) of precision, recall, F1 per label, counted directly."""
    tp, true, pred = Counter(), Counter(), Counter()
    for t, p in pairs:
        true[t] += 1
        if p is not None:
            pred[p] += 1
        if t == p:
            tp[t] += 1
    out = {}
    for lab in set(true) | set(pred):
        out[lab] = {"precision": (tp[lab], pred[lab]), "recall": (tp[lab], true[lab]),
                    "f1": (2 * tp[lab], true[lab] + pred[lab])}
    return out


def lingua_direct(codes: list[str], texts: list[str]) -> list[str | None]:
    from lingua import IsoCode639_1, LanguageDetectorBuilder

    det = LanguageDetectorBuilder.from_iso_codes_639_1(*(getattr(IsoCode639_1, c.upper()) for c in codes)).build()
    return [None if r is None else label(r.iso_code_639_1.name.lower())
            for r in det.detect_languages_in_parallel_of(texts)]


def run_cli(corpus: Path, out: Path, *placement: str) -> dict:
    """``placement``: executor options (default two process workers)."""
    res = CliRunner().invoke(app, ["run", str(corpus), "--out", str(out), *(placement or ("--workers", "2"))])
    assert res.exit_code == 0, res.output
    return json.loads((out / "report.json").read_text())


def check_against_direct_lingua(report: dict, codes: list[str], pairs: list[tuple[str, str | None]]) -> None:
    rows = {(s["metric"], s["label"]): s for s in report["summary"]
            if s["doc_class"] == "__all__" and s["pipeline"] == "reference" and s["stage"] == "language"}
    expected = independent_scores(pairs)
    # a row for every language labelled or predicted, each with exactly the direct counts
    assert {lab for (m, lab) in rows if m == "language.f1"} == set(expected)
    for lab, metrics in expected.items():
        for name, (num, den) in metrics.items():
            row = rows[(f"language.{name}", lab)]
            if den == 0:
                assert row["micro"] is None, (name, lab)
            else:
                assert row["micro"] == num / den, (name, lab)
    correct = sum(t == p for t, p in pairs)
    assert rows[("language.accuracy", "")]["micro"] == correct / len(pairs)
    assert rows[("language.coverage", "")]["micro"] == sum(p is not None for _, p in pairs) / len(pairs)
    truth_labels = sorted({t for t, _ in pairs})
    macro = sum(expected[t]["f1"][0] / expected[t]["f1"][1] for t in truth_labels) / len(truth_labels)
    assert rows[("language.macro_f1", "")]["micro"] == pytest.approx(macro, abs=1e-12)
    # the detector loaded only the languages of the labels
    (cand,) = [d["data"] for d in report["details"] if d["name"] == "candidates"]
    assert cand["languages"] == sorted(label(c) for c in codes)


def test_import_layout(src, tmp_path):
    dest = tmp_path / "corpus"
    summary = get_importer("lingua-testdata")(src, dest, limit_per_language=3, languages=["de", "tl"])
    assert summary.documents == ("sentences/de/0001", "sentences/de/0002", "sentences/de/0003",
                                 "sentences/tl/0001", "sentences/tl/0002", "sentences/tl/0003")
    assert summary.classes == {"sentences": 6} and summary.imported == {"de": 3, "tl": 3}
    assert summary.extra["label_map"] == {"tl": "fil"}
    assert any("'tl'" in n and "'fil'" in n for n in summary.notes)
    for code in ("de", "tl"):
        for i, line in enumerate(source_lines(src, code)[:3], 1):
            doc = dest / "docs" / "sentences" / code / f"{i:04d}.txt"
            assert doc.read_text(encoding="utf-8") == line + "\n"
            truth = json.loads((dest / "truth" / "sentences" / code / f"{i:04d}.json").read_text(encoding="utf-8"))
            assert truth == {"text": line, "language": code}
    toml = (dest / "ingestaudit.toml").read_text()
    assert 'parsers = ["reference"]' in toml and "mixed = false" in toml
    assert json.loads((dest / "import.json").read_text())["kind"] == "lingua-testdata"
    res = CliRunner().invoke(app, ["validate", str(dest)])
    assert res.exit_code == 0, res.output


def test_subset_per_language_f1_matches_lingua_called_directly(src, tmp_path):
    corpus = tmp_path / "corpus"
    summary = get_importer("lingua-testdata")(src, corpus, limit_per_language=LIMIT, languages=SUBSET)
    assert len(summary.documents) == LIMIT * len(SUBSET)
    report = run_cli(corpus, tmp_path / "out")
    texts, truths = [], []
    for code in SUBSET:
        for line in source_lines(src, code)[:LIMIT]:
            texts.append(line)
            truths.append(label(code))
    pairs = list(zip(truths, lingua_direct(SUBSET, texts)))
    check_against_direct_lingua(report, SUBSET, pairs)
    # the close pairs really are confused (the subset is not trivially easy)
    (top,) = [d["data"] for d in report["details"] if d["name"] == "top_confusions"]
    assert {(c["true"], c["predicted"]) for c in top} & {("bs", "hr"), ("ms", "id"), ("id", "ms"), ("hr", "bs")}


@pytest.mark.slow
def test_all_75_languages_in_one_run(src, tmp_path):
    corpus = tmp_path / "corpus"
    summary = get_importer("lingua-testdata")(src, corpus, limit_per_language=ALL_LIMIT)
    codes = sorted(p.stem for p in (src / "sentences").glob("*.txt"))
    assert len(codes) == 75
    assert len(summary.documents) == 75 * ALL_LIMIT
    report = run_cli(corpus, tmp_path / "out", "--executor", "serial")
    f1_labels = {s["label"] for s in report["summary"] if s["metric"] == "language.f1" and s["doc_class"] == "__all__"}
    assert len(f1_labels) == 75
    texts = [line for c in codes for line in source_lines(src, c)[:ALL_LIMIT]]
    truths = [label(c) for c in codes for _ in source_lines(src, c)[:ALL_LIMIT]]
    check_against_direct_lingua(report, codes, list(zip(truths, lingua_direct(codes, texts))))
