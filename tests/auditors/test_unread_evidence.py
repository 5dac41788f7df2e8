"""Issue 25, bad input: a question whose evidence is on a document no pipeline read (a file type no parser of the
run reads) is an ``error`` in every pipeline, listed once among the failures, and in no verdict."""

from __future__ import annotations

from pathlib import Path

from _retrievalkit import context, doc, held, question
from ingestaudit.auditors.retrieval import RetrievalAuditor
from ingestaudit.chain import DocChunks
from ingestaudit.document import Document
from ingestaudit.document_steps import Task, TaskResult
from ingestaudit.measurement import State
from ingestaudit.parsers.routing import ParserSpec
from ingestaudit.pipeline import Pipeline
from ingestaudit.report.schema import MeasurementRow
from ingestaudit.report.verdict import build_verdict
from ingestaudit.runner import _unsupported_everywhere
from ingestaudit.truth import Truth


def test_a_document_no_parser_reads_makes_its_chunk_artefact_an_error():
    tasks = [Task(Document("a/y", "a", Path("/c/docs/a/y.xyz")), "a", Truth(), Pipeline(p, ()), ParserSpec("pymupdf"),
                  ()) for p in ("P", "Q")]
    results = [TaskResult([], [], parse_state=State.SKIPPED, chunks=DocChunks("a/y", "a", State.SKIPPED, "skip"))
               for _ in tasks]
    _unsupported_everywhere(tasks, results)
    msg = "unsupported file type .xyz: no parser of this run reads y.xyz"
    assert [(r.chunks.state, r.chunks.reason, r.failures) for r in results] == [
        (State.ERROR, msg, [("parse", msg)])] * 2


def test_its_questions_are_errors_and_out_of_the_verdict():
    msg = "unsupported file type .xyz: no parser of this run reads y.xyz"
    rows = []
    for p in ("P", "Q"):
        docs = [doc("c/x", [0, 90], evidence={("q1", 0): held(0), ("q3", 0): held(1)}),
                doc("c/y", state=State.ERROR)]
        docs[1].reason = msg
        qs = [question("q1", ["c/x"]), question("q2", ["c/y"]), question("q3", ["c/x"])]
        result = RetrievalAuditor(k=(1,)).audit_pipeline(context(docs, qs, {"q1": 0, "q2": 0, "q3": 80}))
        rows += [MeasurementRow(item=i, item_kind="question", doc_class=c, pipeline=p, stage="retrieval",
                                metric=s.metric, label=s.label, value=s.value, numerator=s.numerator,
                                denominator=s.denominator, state=s.state.value, detail=s.detail)
                 for i, _, c, s in result.item_scores if s.metric == "retrieval.recall@1"]
    q2 = [r for r in rows if r.item == "q2"]
    assert [(r.state, r.detail["reason"]) for r in q2] == [("error", f"evidence document c/y failed: {msg}")] * 2
    verdict = build_verdict(rows, ["P", "Q"], [("retrieval.recall@1", "")])
    assert {(v.doc_class, v.n_items, v.n_shared) for v in verdict} == {("c", 2, 2), ("__all__", 2, 2)}  # q1, q3
