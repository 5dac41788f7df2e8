"""Issue 24 point 2 (acceptance): one auditor interface. A document-, a corpus- and a pipeline-scope auditor run on
hand-made artefacts (`ItemArtefacts`, a `PipelineContext` with ranked results) in a fresh interpreter, through the
same calls the run makes (`Auditor.audit`; `artefact_item` then `Auditor.audit_artefacts`; `Auditor.audit_pipeline`),
and no parser, stage, embedder, step or run module, nor any heavy library, is imported. The values are worked by
hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ingestaudit.auditors.base import CHAIN, CLEAN, PARSED, Auditor, ItemArtefacts, Scope
from ingestaudit.auditors.registry import auditor_class, stage_names
from ingestaudit.measurement import State
from ingestaudit.truth import Truth

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r'''
import json, sys

import numpy as np

from ingestaudit.auditors.base import ItemArtefacts, PipelineContext, Scope, artefact_item
from ingestaudit.auditors.extraction import ExtractionAuditor
from ingestaudit.auditors.language import LanguageAuditor
from ingestaudit.auditors.retrieval import RetrievalAuditor
from ingestaudit.chain import DocChunks, EvidenceTrace
from ingestaudit.detections import LanguageDetection
from ingestaudit.measurement import State
from ingestaudit.model import ParsedDocument
from ingestaudit.pipeline import make_pipeline
from ingestaudit.questions import Question
from ingestaudit.retrieved import ChunkTable, Retrieved
from ingestaudit.truth import Truth

out = {}

# --- DOCUMENT: one substituted letter in three words
ext = ExtractionAuditor()
assert ext.scope is Scope.DOCUMENT
rows = ext.audit(ItemArtefacts.of(Truth(text="the cat sat"), ParsedDocument(text="the bat sat")))
out["document"] = {s.metric + "|" + s.label: [s.state.value, s.numerator, s.denominator, s.value] for s in rows}

# --- CORPUS: the language step's detections as the pipeline produced them, three labelled documents
cand = {"requested": "labels", "languages": ["de", "en"], "unsupported": [], "notes": []}
lang = LanguageAuditor(n_resamples=50, mixed=False)
assert lang.scope is Scope.CORPUS and lang.reads_step() == "language"
context = ("de", "en")
items = []
for doc_id, label, predicted in (("c/a", "en", "en"), ("c/b", "en", "de"), ("c/c", "de", "de")):
    detection = LanguageDetection("stub", False, cand, True, predicted, "stub")
    item = ItemArtefacts(doc_id, "c", Truth(language=label), ParsedDocument(text="x"), steps={"language": detection})
    items.append(artefact_item(lang, item, context)[0])
res = lang.audit_artefacts(items, context)
out["corpus"] = {c + "|" + s.metric + "|" + s.label: [s.numerator, s.denominator, s.value, n]
                 for c, s, n in res.corpus_scores}
out["corpus_docs"] = {d + "|" + s.metric: [s.state.value, s.value] for d, s in res.doc_scores
                      if s.metric == "language.correct"}


# --- PIPELINE: two documents of two chunks; q1's evidence is c/a's chunk 0 (row 0), q2's c/b's chunk 0 (row 2)
def doc(doc_id, evidence):
    return DocChunks(doc_id, "c", State.OK, texts=[doc_id + " 0", doc_id + " 1"], pages=[1, 1], sections=[(), ()],
                     metadata=[{}, {}], vectors=np.eye(2, dtype=np.float32), evidence=evidence, tokens=[2, 2],
                     intervals=[(0, 4), (5, 9)])


held = EvidenceTrace(1.0, 1.0, [0], 1.0)
docs = [doc("c/a", {("q1", 0): held}), doc("c/b", {("q2", 0): held})]
qs = [Question.model_validate({"id": q, "question": q, "relevant": [{"doc": d}]}) for q, d in (("q1", "c/a"),
                                                                                             ("q2", "c/b"))]
ranked = Retrieved(ChunkTable.of(docs), [([0, 2, 1], [0, 2, 1], 0.9), ([0, 2, 1], [0, 2, 1], 0.8)],
                   latencies_ms=[1.0, 1.0])
ctx = PipelineContext(make_pipeline("p", {"index": {"use": "flat"}}), docs, qs, {"q1": "c", "q2": "c"}, None, 0.5, 0,
                      retrieve=lambda depth, k: ranked)
ret = RetrievalAuditor(k=[1, 3])
assert ret.scope is Scope.PIPELINE
pres = ret.audit_pipeline(ctx)
out["pipeline"] = {item + "|" + s.metric: [s.numerator, s.denominator, s.value] for item, _, _, s in pres.item_scores
                   if s.metric in ("retrieval.recall@1", "retrieval.recall@3", "retrieval.rr")}

top = ("fitz", "pymupdf", "unstructured", "pytesseract", "sentence_transformers", "torch", "transformers", "faiss",
       "presidio_analyzer", "lingua", "spacy")
ours = ("ingestaudit.parsers", "ingestaudit.stages", "ingestaudit.executors", "ingestaudit.runner",
        "ingestaudit.document_steps", "ingestaudit.steps")
out["loaded"] = sorted(m for m in sys.modules if m.split(".")[0] in top or m.startswith(ours))
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def got() -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_no_parser_stage_step_or_heavy_library_is_loaded(got):
    assert got["loaded"] == []


def test_a_document_auditor_reads_the_parsed_text_of_its_item(got):
    rows = got["document"]
    # "the cat sat" (11 code points, 3 words) -> "the bat sat": one substitution
    assert rows["extraction.cer|"] == ["ok", 1, 11, pytest.approx(1 / 11)]
    assert rows["extraction.wer|"] == ["ok", 1, 3, pytest.approx(1 / 3)]


def test_a_corpus_auditor_reads_its_steps_artefact(got):
    rows = got["corpus"]
    # en->en, en->de, de->de: 2 of 3 correct; en: tp 1, fp 0, fn 1; de: tp 1, fp 1, fn 0
    assert rows["__all__|language.accuracy|"][:3] == [2, 3, pytest.approx(2 / 3)]
    assert rows["__all__|language.precision|en"][:3] == [1, 1, 1.0]
    assert rows["__all__|language.recall|en"][:3] == [1, 2, 0.5]
    assert rows["__all__|language.precision|de"][:3] == [1, 2, 0.5]
    assert rows["__all__|language.recall|de"][:3] == [1, 1, 1.0]
    assert rows["__all__|language.accuracy|"][3] == 3
    assert got["corpus_docs"] == {"c/a|language.correct": ["ok", 1.0], "c/b|language.correct": ["ok", 0.0],
                                  "c/c|language.correct": ["ok", 1.0]}


def test_a_pipeline_auditor_reads_the_ranked_results(got):
    rows = got["pipeline"]
    # both questions are served rows [0, 2, 1]: q1's evidence (row 0) first, q2's (row 2) second
    assert rows["q1|retrieval.recall@1"] == [1, 1, 1.0]
    assert rows["q1|retrieval.rr"][2] == 1.0
    assert rows["q2|retrieval.recall@1"] == [0, 1, 0.0]
    assert rows["q2|retrieval.recall@3"] == [1, 1, 1.0]
    assert rows["q2|retrieval.rr"][2] == 0.5


def test_every_built_in_auditor_declares_its_scope_and_what_it_reads():
    declared = {s: (auditor_class(s).scope, auditor_class(s).reads) for s in stage_names()}
    assert declared == {
        "extraction": (Scope.DOCUMENT, {PARSED}), "normalization": (Scope.DOCUMENT, {PARSED}),
        "tables": (Scope.DOCUMENT, {PARSED}), "layout": (Scope.DOCUMENT, {PARSED}),
        "boilerplate": (Scope.DOCUMENT, {CLEAN}), "language": (Scope.CORPUS, {"language"}),
        "pii": (Scope.CORPUS, {"pii"}), "dedup": (Scope.CORPUS, {"dedup"}), "chunking": (Scope.DOCUMENT, {CHAIN}),
        "retrieval": (Scope.PIPELINE, {CHAIN}), "index": (Scope.PIPELINE, {CHAIN}),
            "entities": (Scope.CORPUS, {"entities"}), "metadata": (Scope.CORPUS, {"metadata"}),
            "relations": (Scope.CORPUS, {"relations"})}


def test_item_artefacts_of_and_without_output():
    truth = Truth(text="t")
    item = ItemArtefacts.of(truth, None, steps={"language": 1}, evidence=[("q", 0)])
    assert (item.doc_id, item.doc_class, item.evidence, dict(item.steps), item.state) == (
        "doc", "doc", (("q", 0),), {"language": 1}, State.OK)
    bare = item.without_output()
    assert (bare.parsed, bare.chain, dict(bare.steps), bare.truth) == (None, None, {}, truth)


def test_an_auditor_called_outside_its_scope_says_so():
    class Probe(Auditor):
        stage = "probe"
        metrics = ()
        scope = Scope.PIPELINE

    with pytest.raises(NotImplementedError, match="probe auditor has scope pipeline, not document"):
        Probe().audit(ItemArtefacts.of(Truth()))
    assert Probe().reads_step() == ""
