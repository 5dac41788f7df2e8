"""Corpus-level stages get compact artefacts computed in the worker, never the parsed documents (issue 14), and
the run's result is the one `audit_corpus` gives on the parsed documents themselves."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from typer.testing import CliRunner

from _rows import load_report, measurements
from ingestaudit.auditors.base import ArtefactItem, ItemArtefacts
from ingestaudit.auditors.dedup import DedupAuditor
from ingestaudit import steps
from ingestaudit.steps import StepAudit, audit_corpus, with_step
from ingestaudit.pipeline import make_pipeline
from ingestaudit.stages.dedup_step import DedupStep
from ingestaudit.auditors.language import LanguageAuditor
from ingestaudit.stages.language_step import LanguageStep
from ingestaudit.stages.pii_step import PiiStep
from ingestaudit.auditors.pii import PiiAuditor
from ingestaudit.cli import app
from ingestaudit.model import ParsedDocument
from ingestaudit.truth import Truth

TEXT = ("Alice Smith wrote to the council about the broken water main on Elm Street, and the council replied "
        "within a week that the repair crew would arrive on Monday morning.")


def _holds_parsed(obj, depth: int = 0) -> bool:
    """Whether ``obj`` is or holds a ParsedDocument (dataclass fields, mappings and sequences, recursively)."""
    if isinstance(obj, ParsedDocument):
        return True
    if depth > 6 or isinstance(obj, (str, bytes, int, float)) or obj is None:
        return False
    if dataclasses.is_dataclass(obj):
        return any(_holds_parsed(getattr(obj, f.name), depth + 1) for f in dataclasses.fields(obj))
    if isinstance(obj, dict):
        return any(_holds_parsed(v, depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return any(_holds_parsed(v, depth + 1) for v in obj)
    return False


def _corpus(root: Path) -> tuple[Path, Path]:
    docs = {"a/one": TEXT, "a/two": TEXT.replace("Monday", "Tuesday"), "b/three": "Ein ganz anderer Text über "
            "die Bibliothek und ihre Öffnungszeiten am Wochenende, die sich im Sommer ändern werden.",
            "b/four": TEXT[::-1]}
    labels = {"a/one": {"language": "en", "dup_group": "g", "pii": [{"start": 0, "end": 11, "type": "PERSON"}]},
              "a/two": {"language": "en", "dup_group": "g", "pii": [{"start": 0, "end": 11, "type": "PERSON"}]},
              "b/three": {"language": "de", "pii": []}, "b/four": {"language": "en"}}
    outputs = root / "outputs" / "pipe"
    for doc_id, text in docs.items():
        for folder, name, body in (("docs", f"{doc_id}.txt", text), ("truth", f"{doc_id}.txt", text),
                                   ("truth", f"{doc_id}.json", json.dumps(labels[doc_id]))):
            path = root / "corpus" / folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
        out = outputs / f"{doc_id}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        pii = [{"start": 0, "end": 11, "type": "PERSON"}] if doc_id.startswith("a/") else []
        out.write_text(json.dumps({"text": text, "pii": pii, "language": labels[doc_id]["language"]}),
                       encoding="utf-8")
    return root / "corpus", root / "outputs"


def test_no_corpus_level_auditor_receives_a_parsed_document(tmp_path, monkeypatch):
    corpus, outputs = _corpus(tmp_path)
    seen: list[tuple[str, int]] = []

    def refuse(*args, **kwargs):
        raise AssertionError("a run called audit_corpus (parsed documents) instead of audit_artefacts")

    monkeypatch.setattr(steps, "audit_corpus", refuse)
    for cls in (StepAudit, LanguageAuditor, PiiAuditor):  # dedup: its auditor with the pipeline's dedup step
        real = cls.audit_artefacts

        def spy(self, items, context=(), _real=real):
            assert all(isinstance(it, ArtefactItem) and not hasattr(it, "parsed") for it in items)
            assert not any(_holds_parsed(it.artefact) for it in items), f"{self.stage}: a parsed document"
            seen.append((self.stage, len(items)))
            return _real(self, items, context)

        monkeypatch.setattr(cls, "audit_artefacts", spy)
    r = CliRunner().invoke(app, ["run", str(corpus), "--outputs", str(outputs), "--stage", "dedup", "--stage",
                                 "language", "--stage", "pii", "--executor", "serial", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    assert sorted(seen) == [("dedup", 4), ("language", 4), ("pii", 4)]
    rows = {(m["item"], m["metric"], m["label"]): m for m in measurements(tmp_path / "o")}
    assert rows[("a/one", "language.correct", "")]["value"] == 1.0
    assert rows[("a/one", "pii.recall", "exact")]["value"] == 1.0
    assert rows[("a/two", "dedup.excluded", "")]["detail"]["kept_member"] == "a/one"  # one near-duplicate cluster
    pairs = {(s["metric"], s["doc_class"]): s for s in load_report(tmp_path / "o")["summary"]}
    assert pairs[("dedup.pairwise_recall", "__all__")]["micro"] == 1.0


def test_artefacts_pickle_small_and_carry_no_text_for_the_built_in_detectors():
    import pickle

    parsed = ParsedDocument(text=TEXT * 20, extras={"pii": [{"start": 0, "end": 11, "type": "PERSON"}]})
    truth = Truth(text=TEXT * 20, language="en", dup_group="g", pii=(), pii_labelled=True)
    dedup = DedupStep().document(parsed)  # the dedup step's part; the auditor's is the gold group only
    assert dedup.text is None and dedup.sketch is not None and len(dedup.sketch.signatures[128]) == 128
    detection = LanguageStep(mixed=False).run(ParsedDocument(text=TEXT, extras={"language": "en"}), truth.text, ("en",))
    lang = LanguageAuditor().artefact(ItemArtefacts.of(truth, steps={"language": detection}), ("en",))
    assert (lang.label, lang.predicted, lang.source) == ("en", "en", "precomputed")
    found = PiiStep(scrubber="precomputed").run(parsed, truth.text)
    pii = PiiAuditor(scrubber="precomputed").artefact(ItemArtefacts.of(truth, steps={"pii": found}), ())
    assert pii.scored and pii.redo is None and pii.doc.input_text == "" and pii.doc.item.truth.text is None
    for art in (lang, pii):
        assert TEXT not in pickle.dumps(art).decode("latin-1")


def test_a_run_equals_audit_corpus_on_the_parsed_documents():
    """`audit_corpus` (parsed documents, one process) and the run's split (artefacts, then audit_artefacts) are the
    same computation; a stowed artefact (shingles moved to disk) gives the same result as one kept in memory."""
    import tempfile

    texts = [TEXT, TEXT.replace("Monday", "Friday"), TEXT[::-1], "too short"]
    items = [ItemArtefacts(f"c/d{i}", "c", Truth(dup_group="g" if i < 2 else None), ParsedDocument(text=t))
             for i, t in enumerate(texts)]
    auditor = with_step(DedupAuditor(), make_pipeline("p"))
    direct = audit_corpus(auditor, items)
    with tempfile.TemporaryDirectory() as folder:
        arts = [ArtefactItem(i.doc_id, i.doc_class, auditor.stow(auditor.artefact(
            dataclasses.replace(i, steps={"dedup": auditor.corpus_step.document(i.parsed)}), ()), folder))
            for i in items]
        assert all(a.artefact[1].shingles is None and a.artefact[1].shingle_ref for a in arts)
        split = auditor.audit_artefacts(arts, ())
    assert split.doc_scores == direct.doc_scores and split.corpus_scores == direct.corpus_scores
    assert split.details == direct.details
