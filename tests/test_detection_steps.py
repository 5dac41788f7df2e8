"""Detection steps (issue 24 point 2): the language detector and the PII scrubber are pipeline steps with options,
run once per labelled document x pipeline; the language and PII auditors only read the steps' artefacts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.pipeline import PipelineError, Sweep, expand, make_pipeline
from ingestaudit.steps import step_options
from _rows import load_report, measurements

ROOT = Path(__file__).resolve().parent.parent

AUDIT_HAND_MADE = r'''
import json, sys
from ingestaudit.auditors.base import ArtefactItem, ItemArtefacts
from ingestaudit.auditors.language import LanguageAuditor
from ingestaudit.detections import LanguageDetection
from ingestaudit.measurement import State
from ingestaudit.truth import Truth

cand = {"requested": "labels", "languages": ["de", "en"], "unsupported": [], "notes": []}
def det(pred, source="stub"):
    return LanguageDetection("stub", False, cand, True, pred, source if pred is not None else "stub")
a = LanguageAuditor(n_resamples=50)
docs = [("c/a", "en", det("en")), ("c/b", "en", det("de")), ("c/c", "de", det("de")), ("c/d", "de", det(None))]
items = [ArtefactItem(d, "c", a.artefact(ItemArtefacts.of(Truth(language=lab), steps={"language": x}), ("de", "en")))
         for d, lab, x in docs]
unran = ItemArtefacts.of(Truth(language="en"), steps={"language": LanguageDetection("stub", False, cand)})
items.append(ArtefactItem("c/e", "c", a.artefact(unran, ()),
                          State.NO_PREDICTION, "no output"))
res = a.audit_artefacts(items, ("de", "en"))
rows = {(c, s.metric, s.label): [s.value, s.numerator, s.denominator, n] for c, s, n in res.corpus_scores}
doc = {(d, s.metric): [s.state.value, s.value] for d, s in res.doc_scores}
from ingestaudit.auditors.pii import PiiAuditor
from ingestaudit.detections import PiiDetection
from ingestaudit.metrics.spans import Span

text = "Call Ana Lima at 555-0100"
truth = Truth(text=text, pii=(Span(5, 13, "PERSON"), Span(17, 25, "PHONE_NUMBER")))
pii = PiiAuditor()
found = PiiDetection("stub", True, "stub", text, (Span(5, 13, "PERSON"),))
art = pii.artefact(ItemArtefacts.of(truth, steps={"pii": found}), ("PERSON", "PHONE_NUMBER"))
pres = pii.audit_artefacts([ArtefactItem("c/p", "c", art)],
                           ("PERSON", "PHONE_NUMBER"))
pii_rows = {s.metric + "|" + s.label: [s.state.value, s.value, s.numerator, s.denominator] for _, s in pres.doc_scores}
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("lingua", "presidio_analyzer", "spacy")
                or m.startswith("ingestaudit.stages"))
print(json.dumps({"rows": {"|".join(k): v for k, v in rows.items()}, "doc": {"|".join(k): v for k, v in doc.items()},
                  "candidates": res.details["candidates"], "pii": pii_rows, "loaded": loaded}))
'''


def test_language_and_pii_auditors_read_hand_made_artefacts_and_load_no_detector():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", AUDIT_HAND_MADE], capture_output=True, text=True, env=env,
                         cwd=ROOT, check=True)
    got = json.loads(out.stdout)
    assert got["loaded"] == []  # no lingua, presidio, spaCy, nor any stage module
    rows, doc = got["rows"], got["doc"]
    # 4 scored: en->en, en->de, de->de, de->abstained; c/e has no output (left out, in the states)
    assert rows["__all__|language.accuracy|"][:3] == [0.5, 2, 4]
    assert rows["__all__|language.coverage|"][:3] == [0.75, 3, 4]
    assert rows["__all__|language.precision|en"][:3] == [1.0, 1, 1]  # tp 1, fp 0
    assert rows["__all__|language.recall|en"][:3] == [0.5, 1, 2]  # tp 1, fn 1
    assert rows["__all__|language.precision|de"][:3] == [0.5, 1, 2]  # c/b predicted de
    assert rows["__all__|language.recall|de"][:3] == [0.5, 1, 2]  # the abstention is a miss
    assert rows["__all__|language.f1|en"][0] == pytest.approx(2 / 3)  # 2tp / (2tp + fp + fn) = 2/3
    assert rows["__all__|language.f1|de"][0] == pytest.approx(0.5)  # 2 / (2 + 1 + 1)
    assert rows["__all__|language.macro_f1|"][0] == pytest.approx(7 / 12)  # (2/3 + 1/2) / 2
    assert rows["__all__|language.accuracy|"][3] == 4
    assert doc["c/d|language.abstained"] == ["ok", 1.0]
    assert doc["c/b|language.correct"] == ["ok", 0.0]
    assert doc["c/a|language.mixed"][0] == "skipped"  # the step ran without the mixed analysis
    assert doc["c/e|language.correct"] == ["no_prediction", None]
    assert got["candidates"]["detector"] == "stub" and got["candidates"]["languages"] == ["de", "en"]
    pii = got["pii"]
    # gold PERSON [5, 13) and PHONE_NUMBER [17, 25); predicted PERSON [5, 13): exact tp 1, fp 0, fn 1
    assert pii["pii.precision|exact"] == ["ok", 1.0, 1, 1]
    assert pii["pii.recall|exact"] == ["ok", 0.5, 1, 2]
    assert pii["pii.recall|exact/PHONE_NUMBER"] == ["ok", 0.0, 0, 1]
    # the input is the reference text: nothing lost; the scrubbed text keeps "555-0100": 1 of 2 values leaks
    assert pii["pii.lost_in_extraction|*"] == ["ok", 0.0, 0, 2]
    assert pii["pii.residual_leakage|*"] == ["ok", 0.5, 1, 2]


def test_pipeline_language_table_and_sweep():
    p = make_pipeline("x", {"parser": "reference", "language": {"use": "lingua", "min_relative_distance": 0.25}})
    assert p.step("language").kwargs() == {"min_relative_distance": 0.25}
    # the pipeline's table overrides the auditor's options one by one; its use replaces the auditor's detector
    assert step_options(p, "language", {"detector": "x:Y", "mixed": False, "min_relative_distance": 0.1}) == {
        "detector": "lingua", "mixed": False, "min_relative_distance": 0.25}
    plain = make_pipeline("y", {"parser": "reference"})
    assert plain.step("language") is None and step_options(plain, "language", {"mixed": False}) == {"mixed": False}
    variants = expand([plain], [Sweep.parse("language.min_relative_distance=0,0.5")])
    assert [v.name for v in variants] == ["y/min_relative_distance=0", "y/min_relative_distance=0.5"]
    # a swept step the pipeline does not name keeps the auditor's detector (use "")
    assert step_options(variants[1], "language", {"detector": "x:Y"}) == {"detector": "x:Y",
                                                                          "min_relative_distance": 0.5}
    with pytest.raises(PipelineError, match="language"):
        make_pipeline("z", {"language": 3})
    # pii: the same rule, its use replacing the auditor's scrubber
    (v0, v5) = expand([plain], [Sweep.parse("pii.score_threshold=0,0.5")])
    assert step_options(v5, "pii", {"scrubber": "presidio", "max_chars": 10}) == {
        "scrubber": "presidio", "max_chars": 10, "score_threshold": 0.5}
    own = make_pipeline("w", {"pii": {"use": "precomputed", "prefer_precomputed": False}})
    assert step_options(own, "pii", {"max_chars": 10}) == {"scrubber": "precomputed", "max_chars": 10,
                                                           "prefer_precomputed": False}


def _write(root: Path, doc_id: str, text: str, language: str) -> None:
    for sub, name, body in (("docs", f"{doc_id}.txt", text + "\n"),
                            ("truth", f"{doc_id}.json", json.dumps({"text": text, "language": language}))):
        (root / sub / name).parent.mkdir(parents=True, exist_ok=True)
        (root / sub / name).write_text(body, encoding="utf-8")


def _corpus(tmp_path: Path, config: str) -> Path:
    root = tmp_path / "corpus"
    _write(root, "notes/hello", "Hello", "en")
    _write(root, "notes/stamp", "2023-01-01 12:00", "en")
    _write(root, "notes/english", "The committee will publish its final report on the new railway line next "
           "Thursday morning.", "en")
    _write(root, "notes/german", "Die Stadtbibliothek bleibt wegen Umbauarbeiten bis Ende des Monats am Samstag "
           "geschlossen.", "de")
    _write(root, "notes/french", "Nous avons visité le musée avec nos enfants pendant les vacances d'été.", "fr")
    _write(root, "notes/spanish", "¿Dónde está la estación de tren más cercana a la plaza mayor?", "es")
    (root / "ingestaudit.toml").write_text(config)
    return root


def _abstained(report: dict) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for m in measurements(report):
        if m["metric"] == "language.abstained" and m["value"] == 1.0:
            out.setdefault(m["pipeline"], set()).add(m["item"])
    return out


def test_two_pipelines_with_two_detector_settings_are_two_columns_of_one_run(tmp_path):
    """Over the candidates de, en, es, fr lingua abstains on "Hello" only at a minimum relative distance of 0.25 (at
    0 it says es; as in test_language_auditor's CLI test); on the time stamp (no letters) always."""
    root = _corpus(tmp_path, '[pipelines.loose]\nparser = "reference"\n\n[pipelines.strict]\nparser = "reference"\n'
                             'language = { use = "lingua", min_relative_distance = 0.25 }\n')
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["run", str(root), "--stage", "language", "--out", str(out), "--workers", "1"])
    assert res.exit_code == 0, res.output
    report = load_report(out)
    assert _abstained(report) == {"loose": {"notes/stamp"}, "strict": {"notes/hello", "notes/stamp"}}
    stages = {p["name"]: p["stages"]["language"] for p in report["pipelines"]}
    assert stages["loose"]["implementation"] == stages["strict"]["implementation"] == "lingua"
    assert (stages["loose"]["settings"]["min_relative_distance"],
            stages["strict"]["settings"]["min_relative_distance"]) == (0.0, 0.25)
    assert stages["strict"]["version"][0].isdigit()


def test_a_sweep_over_the_language_step_and_bad_step_options(tmp_path):
    root = _corpus(tmp_path, "")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["run", str(root), "--parser", "reference", "--stage", "language", "--sweep",
                                   "language.min_relative_distance=0,0.25", "--out", str(out), "--workers", "1"])
    assert res.exit_code == 0, res.output
    assert _abstained(load_report(out)) == {"reference/min_relative_distance=0": {"notes/stamp"},
                                            "reference/min_relative_distance=0.25": {"notes/hello", "notes/stamp"}}
    (root / "ingestaudit.toml").write_text('[pipelines.bad]\nparser = "reference"\n'
                                           'language = { use = "lingua", mixed_share = 0.9 }\n')
    res = CliRunner().invoke(app, ["run", str(root), "--stage", "language", "--out", str(tmp_path / "o2")])
    assert res.exit_code == 2
    assert "[pipelines.bad] language" in res.output and "mixed_share" in res.output
    (root / "ingestaudit.toml").write_text('[pipelines.bad]\nparser = "reference"\n'
                                           'pii = { use = "presidio", score_threshold = 2 }\n')
    res = CliRunner().invoke(app, ["validate", str(root)])
    assert res.exit_code == 2
    assert "[pipelines.bad] pii: score_threshold must be in [0, 1], got 2" in res.output


class ScoredDetector:
    """A user detector (loaded as "module:Class") with a score threshold: "Ana Lima" scores 0.9, "555-0100" 0.4."""

    SPANS = ((5, 13, "PERSON", 0.9), (17, 25, "PHONE_NUMBER", 0.4))

    def __init__(self, min_score: float = 0.0):
        self.min_score = min_score

    def detect(self, text):
        return [{"start": a, "end": b, "type": t} for a, b, t, score in self.SPANS
                if score >= self.min_score and b <= len(text)]

    def supported_types(self):
        return ["PERSON", "PHONE_NUMBER"]


def test_two_pipelines_with_two_pii_thresholds_are_two_columns_of_one_run(tmp_path):
    root = tmp_path / "corpus"
    text = "Call Ana Lima at 555-0100"
    (root / "docs" / "notes").mkdir(parents=True)
    (root / "truth" / "notes").mkdir(parents=True)
    (root / "docs" / "notes" / "a.txt").write_text(text, encoding="utf-8")
    (root / "truth" / "notes" / "a.json").write_text(json.dumps({"text": text, "pii": [
        {"start": 5, "end": 13, "type": "PERSON"}, {"start": 17, "end": 25, "type": "PHONE_NUMBER"}]}))
    config = tmp_path / "pii.toml"  # a module path loads only from a --config the user passes
    detector = f"{__name__}:ScoredDetector"
    config.write_text(f'[pipelines.all]\nparser = "reference"\npii = {{ use = "{detector}" }}\n\n'
                      f'[pipelines.sure]\nparser = "reference"\n'
                      f'pii = {{ use = "{detector}", detector_options = {{ min_score = 0.5 }} }}\n')
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["run", str(root), "--config", str(config), "--stage", "pii", "--out", str(out),
                                   "--workers", "1"])
    assert res.exit_code == 0, res.output
    report = load_report(out)
    recall = {m["pipeline"]: (m["value"], m["numerator"], m["denominator"]) for m in measurements(report)
              if (m["metric"], m["label"]) == ("pii.recall", "exact")}
    # both spans found at threshold 0; at 0.5 the phone number (score 0.4) is not: recall 1/2
    assert recall == {"all": (1.0, 2, 2), "sure": (0.5, 1, 2)}
    stages = {p["name"]: p["stages"]["pii"] for p in report["pipelines"]}
    assert stages["all"]["implementation"] == stages["sure"]["implementation"] == detector
    assert stages["sure"]["settings"]["detector_options"] == {"min_score": 0.5}


def test_stages_lists_the_detection_steps():
    res = CliRunner().invoke(app, ["stages"])
    assert res.exit_code == 0
    assert "language (step, runs when its stage does; default lingua): lingua" in res.output
    assert "pii (step, runs when its stage does; default presidio): presidio, precomputed, redacted" in res.output
