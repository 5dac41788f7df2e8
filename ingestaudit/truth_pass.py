"""The run's one pass over the corpus's labels: every document's truth (a problem in one document's labels is that
document's failure, never the run's), what the run keeps of them, and the questions with their evidence items."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ingestaudit.auditors.base import Auditor, Scope
from ingestaudit.chain import EvidenceRef
from ingestaudit.corpus import Corpus
from ingestaudit.document import Document
from ingestaudit.questions import QuestionSet, load_questions
from ingestaudit.report.schema import Failure
from ingestaudit.truth import Truth, TruthError, load_truth


def load_one_truth(doc: Document, root: Path, limits: Any, over: dict[str, str] | None
                    ) -> tuple[Truth, list[Failure]]:
    """One document's truth, and a failure per label problem (stage ``truth``). Nothing raised while loading its
    labels stops the run: any exception is a problem of that document. Labels over a size limit (``limits``) add
    the document to ``over`` (id -> the limit problems) instead: the run skips it."""
    failures: list[Failure] = []
    try:
        return load_truth(doc, root, limits), failures
    except TruthError as exc:  # the labels that did load stay usable (`TruthError.partial`)
        truth = exc.partial if exc.partial is not None else Truth()
        past = [p for p in exc.problems if p.limit]
        if past and over is not None:
            over[doc.doc_id] = "; ".join(map(str, past))
        failures += [Failure(item=doc.doc_id, pipeline="", stage="truth", message=str(p)) for p in exc.problems
                     if not (p.limit and over is not None)]
        return truth, failures
    except Exception as exc:  # a bug or an odd value in one label file: that document's problem, never the run's
        return Truth(), [Failure(item=doc.doc_id, pipeline="", stage="truth",
                                 message=f"truth/{doc.doc_id}.*: {type(exc).__name__}: {exc}")]


def load_truths(corpus: Corpus, limits: Any = None, over: dict[str, str] | None = None, spill: Any = None,
                 auditors: dict[str, Auditor] | None = None
                 ) -> tuple[dict[str, str], list[Failure], list[Truth], dict[str, tuple[str, ...]], dict[str, str]]:
    """One pass over every document's truth (`load_one_truth`), keeping only what the run needs of them: each
    truth goes to ``spill`` (`ingestaudit.spill.TruthSpill`, read back when its tasks are built).

    Returns:
        ``(doc_classes, failures, examples, contexts, unsendable)``: each document's class (its truth's ``class``,
        else its folder), the label problems, one truth per stage of ``auditors`` that applies to some document (so
        `ingestaudit.runner.select_stages` decides as it would over every truth), each corpus-scope auditor's context
        (the sorted union of `Auditor.corpus_values`), and the documents whose truth does not pickle (why).
    """
    import sys

    doc_classes: dict[str, str] = {}
    failures: list[Failure] = []
    examples: dict[str, Truth] = {}
    values: dict[str, set[str]] = {s: set() for s, a in (auditors or {}).items() if a.scope is Scope.CORPUS}
    unsendable: dict[str, str] = {}
    for doc in corpus.documents:
        truth, problems = load_one_truth(doc, corpus.root, limits, over)
        failures += problems
        doc_classes[doc.doc_id] = sys.intern(truth.doc_class or doc.doc_class)  # a few class strings, shared
        for s, a in (auditors or {}).items():
            if s not in examples:
                try:
                    if a.applies(truth):
                        examples[s] = truth
                except Exception:  # select_stages raises it, with the stage named
                    examples[s] = truth
            if s in values:
                values[s].update(a.corpus_values(truth))
        if spill is not None:
            why = spill.add(doc.doc_id, truth)
            if why:
                unsendable[doc.doc_id] = why
    seen: list[Truth] = []
    for t in examples.values():
        if not any(t is u for u in seen):
            seen.append(t)
    return doc_classes, failures, seen, {s: tuple(sorted(v)) for s, v in values.items()}, unsendable


def load_question_set(corpus: Corpus, truths: dict[str, Truth], limits: Any = None) -> QuestionSet:
    """The corpus's questions (none without ``questions.jsonl``); an unreadable file is one problem."""
    if corpus.questions is None:
        return QuestionSet()
    try:
        return load_questions(corpus.questions, corpus.questions.name, truths, limits,
                              {d.doc_id: d for d in corpus.documents})
    except OSError as exc:
        from ingestaudit.truth import Problem

        return QuestionSet((), (Problem(corpus.questions.name, "", f"unreadable: {exc.strerror or exc}"),))


def evidence_by_doc(questions: QuestionSet) -> dict[str, list[EvidenceRef]]:
    """Document id -> the evidence items of the questions that point into it (question id, position), file order."""
    out: dict[str, list[EvidenceRef]] = {}
    for q in questions.questions:
        for i, ev in enumerate(q.relevant):
            out.setdefault(ev.doc, []).append(EvidenceRef((q.id, i), ev.kind, ev.start, ev.end, ev.section, ev.page))
    return out
