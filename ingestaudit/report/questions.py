"""Every question's results (issue 25): ``questions/<pipeline>.jsonl`` and ``runs/<pipeline>.trec`` in the report
folder, and the side-by-side listing of ``ingestaudit questions``.

``questions/<pipeline>.jsonl``: one JSON object per searched question, in the store's order, unanswerable ones
(no evidence) included: ``id``, ``question`` (its text), ``class``, ``pipeline``, ``answerable``, ``evidence``
(each item ``{item, doc, kind, outcome}`` at the largest k, the waterfall's outcome; ``[]`` for an unanswerable
question), ``results`` (the top largest-k results ``{rank, doc, chunk, start, end, score, holds, hit}``:
``start``/``end`` the chunk's reference interval, ``holds`` the evidence items it holds, ``hit`` whether it holds
one, ``score`` the retriever's score of that result, None when the retriever gave none), ``latency_ms`` (from the
run's timings; None when the question was not searched or the report has no timings) and ``embedding_calls`` (query
embeddings computed for this question: 1, or 0 when its vector came from the cache or none was needed, a lexical
retriever or a user's results). A question the pipeline could not measure (an ``error``, ``skipped`` or
``no_prediction`` row) has a record with ``state``, ``reason`` and no ``results``. The file name is a readable slug of the pipeline's name
(`file_stems`): every character outside ``[A-Za-z0-9._=,+-]`` becomes ``_`` (``reference/size=300`` ->
``reference_size=300.jsonl``, a sweep's ``p/use=none`` -> ``p_use=none.jsonl``), and a slug that two pipelines
share (or that is empty or only dots) takes ``~2``, ``~3``... in report order. The mapping is in report.json's
``details`` (stage ``retrieval``, name ``question_files``: pipeline -> its three files), and each record names its
pipeline.

``runs/<pipeline>.trec``: TREC run format (``topic Q0 docno rank score tag``; `ingestaudit.trec` reads it): docno
``doc#start-end`` in reference code points (``doc#c<chunk>`` for a chunk without a reference interval; white space
in a document id percent-encoded); the score column is ``n - rank + 1`` (n results), not the retriever's score (kept in
the JSONL): trec_eval ranks by score and breaks ties by docno, so equal or missing scores would reorder the served
list; tag = the file's pipeline name.

``runs/<pipeline>.qrels``: TREC qrels (``topic 0 docno relevance``) of the pipeline's chunks: relevance 1 for every
chunk that holds an evidence item of the question (returned or not: the record's ``relevant``), 0 for a returned
chunk that holds none. Docnos are the pipeline's own chunks, so pipelines that chunk differently need their own
qrels; ``runs/qrels.txt`` is written too when every pipeline's qrels are the same (they chunk alike). trec_eval's
``recip_rank`` on a run equals the report's ``retrieval.rr``, and its ``recall_k`` the report's
``retrieval.recall@k``, when every evidence item is held by exactly one chunk and no chunk holds two (otherwise
trec_eval counts chunks where the report counts evidence items; a question whose evidence no chunk holds has no
relevant chunk and trec_eval leaves it out).
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

QUESTION_DIRS = ("questions", "runs")
"""Folders of the report folder this module writes (one file per pipeline)."""


_UNSAFE = re.compile(r"[^A-Za-z0-9._=,+-]")


def file_stems(pipelines: Sequence[str]) -> dict[str, str]:
    """Pipeline name -> the file name of its files without extension (module docstring): unique over
    ``pipelines`` (in their order), readable, never empty, ``.`` or ``..``."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for name in pipelines:
        base = _UNSAFE.sub("_", name)
        base = base if base.strip(".") else f"_{base}"
        stem, n = base, 1
        while stem.lower() in used:  # case-insensitive file systems: Foo and foo are one file
            n += 1
            stem = f"{base}~{n}"
        used.add(stem.lower())
        out[name] = stem
    return out


def question_files_detail(pipelines: Sequence[str]) -> dict[str, dict[str, str]]:
    """The ``question_files`` detail: pipeline -> ``{"questions": "questions/<stem>.jsonl", "run":
    "runs/<stem>.trec", "qrels": "runs/<stem>.qrels"}`` (`file_stems`; written for the pipelines with scored
    questions)."""
    return {p: {"questions": f"questions/{s}.jsonl", "run": f"runs/{s}.trec", "qrels": f"runs/{s}.qrels"}
            for p, s in file_stems(pipelines).items()}


UNMEASURED = ("error", "skipped", "no_prediction")
"""States of a question's ``retrieval.rr`` row that give a record with ``state`` and ``reason`` and no results."""


def question_records(rows: Iterable[Any], latency: dict[str, dict[str, float]] | None = None
                     ) -> dict[str, list[dict[str, Any]]]:
    """Per pipeline, the records of ``questions/<pipeline>.jsonl``. A question the pipeline could not measure (its
    ``retrieval.rr`` row ``error``, ``skipped`` or ``no_prediction``: a bad line of a user's results, a filter on a
    field its chunks lack...) has a record too, with ``state`` and ``reason`` and no results, so the listing counts
    and explains it.

    Args:
        rows: measurement rows of ``retrieval.rr`` (its detail carries the question's text and results) and of
            ``retrieval.outcome@K`` at the largest K (their detail carries the evidence outcomes), with details.
        latency: pipeline -> question id -> milliseconds (the run's ``timings[pipeline]["retrieval"]
            ["latency_by_question_ms"]``).
    """
    latency = latency or {}
    listed: dict[tuple[str, str], dict[str, Any]] = {}
    evidence: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r.metric == "retrieval.rr" and r.state in ("ok", "no_reference") and "results" in r.detail:
            listed[(r.pipeline, r.item)] = {
                "id": r.item, "question": r.detail.get("question", ""), "class": r.doc_class, "pipeline": r.pipeline,
                "answerable": r.state == "ok", "evidence": [], "results": r.detail["results"],
                "latency_ms": latency.get(r.pipeline, {}).get(r.item),
                "embedding_calls": r.detail.get("embedding_calls"), "relevant": r.detail.get("relevant", [])}
        elif r.metric == "retrieval.rr" and r.state in UNMEASURED:  # counted and said, never a silent gap
            listed[(r.pipeline, r.item)] = {
                "id": r.item, "question": r.detail.get("question", ""), "class": r.doc_class, "pipeline": r.pipeline,
                "answerable": True, "state": r.state, "reason": str(r.detail.get("reason", "")), "evidence": [],
                "results": [], "latency_ms": latency.get(r.pipeline, {}).get(r.item), "embedding_calls": None,
                "relevant": []}
        elif r.metric.startswith("retrieval.outcome@") and r.detail.get("evidence"):
            evidence[(r.pipeline, r.item)] = r.detail["evidence"]
    out: dict[str, list[dict[str, Any]]] = {}
    for key, rec in listed.items():
        rec["evidence"] = evidence.get(key, [])
        out.setdefault(key[0], []).append(rec)
    return out


def docno(result: dict[str, Any]) -> str:
    """A result's TREC docno: ``doc#start-end`` (module docstring)."""
    doc = "".join(quote(ch) if ch.isspace() else ch for ch in str(result["doc"]))
    if result.get("start") is None:
        return f"{doc}#c{result.get('chunk')}"
    return f"{doc}#{result['start']}-{result['end']}"


def trec_run(pipeline: str, records: Sequence[dict[str, Any]], tag: str | None = None) -> str:
    """The TREC run text of one pipeline's records (module docstring); topics with no result have no line; ``tag``:
    the run's tag (default: the pipeline's `file_stems` slug, which has no white space)."""
    tag = tag or file_stems([pipeline])[pipeline]
    lines = []
    for rec in records:
        n = len(rec["results"])
        lines += [f"{rec['id']} Q0 {docno(x)} {x['rank']} {n - x['rank'] + 1} {tag}" for x in rec["results"]]
    return "\n".join(lines) + ("\n" if lines else "")


def qrels(records: Sequence[dict[str, Any]]) -> str:
    """The TREC qrels text of one pipeline's records (module docstring): relevance 1 for each chunk that holds an
    evidence item (``relevant``), 0 for each returned chunk that holds none; one line per (question, docno), in
    question then docno order. An unanswerable question (no evidence: ``answerable`` false) has no line: the report
    scores it nowhere (its retrieval rows have no reference), and trec_eval would average its all-zero judgments in."""
    judged: dict[tuple[str, str], int] = {}
    for rec in records:
        if rec.get("answerable") is False:
            continue
        for x in rec.get("relevant") or ():
            judged[(str(rec["id"]), docno(x))] = 1
        for x in rec["results"]:
            judged.setdefault((str(rec["id"]), docno(x)), int(bool(x.get("holds"))))
    return "".join(f"{q} 0 {d} {rel}\n" for (q, d), rel in sorted(judged.items()))


def write_question_files(stage: Any, report: Any) -> None:
    """Stage ``questions/<pipeline>.jsonl``, ``runs/<pipeline>.trec`` and ``runs/<pipeline>.qrels`` (and
    ``runs/qrels.txt`` when they are all the same) for every pipeline with retrieval results in
    the report's measurement store (nothing for a run without questions). ``stage`` is the report's
    `ingestaudit.io.StagedOutput`; the waterfall's cutoff is the largest of the retrieval auditor's ``k``."""
    from ingestaudit.report.rows import iter_store_rows

    ks = ((report.config.get("auditors") or {}).get("retrieval") or {}).get("k") or []
    if not ks or report.store_path is None:
        return
    metrics = {"retrieval.rr", f"retrieval.outcome@{max(ks)}"}
    latency = {p: (t.get("retrieval") or {}).get("latency_by_question_ms") or {}
               for p, t in (report.timings or {}).items()}
    found = question_records(iter_store_rows(report.store_path, metrics=metrics, item_kind="question"), latency)
    stems = file_stems([p.name for p in report.pipelines] + [p for p in found if p not in
                                                               {i.name for i in report.pipelines}])
    for pipeline, records in found.items():
        stem = stems[pipeline]
        stage.write_text(f"questions/{stem}.jsonl",
                         "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in records))
        stage.write_text(f"runs/{stem}.trec", trec_run(pipeline, records, stem))
        stage.write_text(f"runs/{stem}.qrels", qrels(records))
    texts = {qrels(records) for records in found.values()}
    if len(texts) == 1:  # every pipeline chunks alike: one qrels file serves every run
        stage.write_text("runs/qrels.txt", texts.pop())


def _record_problem(rec: Any) -> str | None:
    """Why a line's value is not a question record `listing` can show, or None: an object with a string ``id`` and
    a list ``results`` of objects, each with ``rank`` (a whole number), ``hit`` (true/false), ``doc``, and
    ``start``/``end`` both whole numbers or both null (a docno needs both)."""
    if not isinstance(rec, dict):
        return "not a question record (a JSON object)"
    if not isinstance(rec.get("id"), str):
        return "id: a question id (a string) expected"
    results = rec.get("results")
    if not isinstance(results, list):
        return "results: a list expected"
    def whole(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    for i, x in enumerate(results):
        if not isinstance(x, dict) or "doc" not in x or not isinstance(x.get("hit"), bool) or not whole(x.get("rank")):
            return f"results[{i}]: an object with rank (a whole number), hit (true/false) and doc expected"
        if not ((x.get("start") is None and x.get("end") is None) or (whole(x.get("start")) and whole(x.get("end")))):
            return f"results[{i}]: start and end both whole numbers, or both null"
    return None


def read_question_files(report_dir: Path, problems: list[str] | None = None, limits: Any = None
                        ) -> dict[str, list[dict[str, Any]]]:
    """pipeline -> records of every ``questions/*.jsonl`` in ``report_dir``, pipelines in the order of the folder's
    report.json (else by file name). Each file is read through `ingestaudit.inputs` (a regular file within
    ``limits.results_bytes``; default `ingestaudit.config.Limits`).

    Args:
        problems: when given, a bad line (not JSON, not a question record: `_record_problem`) or an unreadable file
            is appended to it as ``FILE:LINE: reason`` (``FILE: reason``) and skipped, the other lines kept; else
            the first one raises.

    Raises:
        ValueError: no ``questions`` folder, or no ``.jsonl`` file in it; with ``problems`` None, a bad line or file
            (file and line named).
    """
    from ingestaudit.config import Limits
    from ingestaudit.inputs import InputFileError, read_input_text
    from ingestaudit.jsonlimits import jsonl_lines

    limits = limits if limits is not None else Limits()
    folder = Path(report_dir) / "questions"
    if not folder.is_dir():
        raise ValueError(f"{folder}: no questions folder (a report of a run with labelled questions has one)")

    def bad(message: str) -> None:
        if problems is None:
            raise ValueError(message)
        problems.append(message)

    out: dict[str, list[dict[str, Any]]] = {}
    files = sorted(folder.glob("*.jsonl"))
    if not files:  # a listing of nothing would read as "no question to show" (exit 0)
        raise ValueError(f"{folder}: no <pipeline>.jsonl file (deleted, or not a report folder of a run with "
                         "questions)")
    for path in files:
        records = []
        try:
            lines = jsonl_lines(read_input_text(path, max_bytes=limits.results_bytes, limit="limits.results_bytes"))
        except InputFileError as exc:
            bad(str(exc))
            continue
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                bad(f"{path}:{n}: not JSON ({exc.msg})")
                continue
            except RecursionError:
                bad(f"{path}:{n}: JSON nested too deeply")
                continue
            why = _record_problem(rec)
            if why:
                bad(f"{path}:{n}: {why}")
                continue
            records.append(rec)
        out[str(records[0].get("pipeline")) if records else path.stem] = records
    try:
        order = [p["name"] for p in json.loads((Path(report_dir) / "report.json").read_text("utf-8"))["pipelines"]]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        order = []
    return dict(sorted(out.items(), key=lambda kv: (kv[0] not in order, order.index(kv[0]) if kv[0] in order else 0)))


def _nearest_rank(values: list[float], pct: float) -> float | None:
    from ingestaudit.auditors.retrieval import _nearest_rank as nearest

    return nearest(values, pct)


def _fold(text: str, col: int) -> list[str]:
    """``text`` in pieces of at most ``col`` characters, every character kept in order: broken before a docno's
    ``#start-end``, else after the last ``/``, ``-`` or ``_`` that fits, else at ``col``."""
    out = []
    while len(text) > col:
        cut = max(text.rfind("#", 6, col + 1), *(text.rfind(ch, 6, col) + 1 for ch in "/-_"))
        cut = cut if cut > 6 else col
        out.append(text[:cut])
        text = "     " + text[cut:] if len(text[cut:]) + 5 <= col else text[cut:]  # aligned under the docno
    return out + [text]


def _why_empty(rec: dict[str, Any] | None) -> str:
    """Why a pipeline's column of a question holds no result: the reason the listing prints in it."""
    if rec is None:
        return "not in this pipeline's file"
    if rec.get("state", "ok") != "ok":
        return f"{rec['state']}: {rec.get('reason') or 'no reason recorded'}"
    if not rec.get("answerable", True):
        return "no result (unanswerable: no evidence)"
    return "no result returned"


def listing(found: dict[str, list[dict[str, Any]]], *, qid: str | None = None, pipeline: str | None = None,
            misses: bool = False, width: int = 100) -> Iterator[str]:
    """The lines of ``ingestaudit questions``: per question its id, class and text, then one line per rank with
    each pipeline's result side by side (``HIT``/``MISS`` and the docno; a docno longer than its column is folded
    onto the next lines, never cut; a column with no result says why: `_why_empty`); then per pipeline the totals
    (questions with a hit in the top k, misses, questions in error or not measured, unanswerable ones) and p50/p95
    latency (nearest rank).

    Args:
        qid: only this question; pipeline: only this pipeline; misses: only questions some shown pipeline missed.

    Raises:
        ValueError: an unknown ``pipeline`` or ``qid`` (the known ones named).
    """
    if pipeline is not None:
        if pipeline not in found:
            raise ValueError(f"--pipeline {pipeline!r}: not in this report (pipelines: {', '.join(found)})")
        found = {pipeline: found[pipeline]}
    pipes = list(found)
    by_q: dict[str, dict[str, dict[str, Any]]] = {}
    for p in pipes:
        for rec in found[p]:
            by_q.setdefault(rec["id"], {})[p] = rec
    if qid is not None and qid not in by_q:
        raise ValueError(f"--id {qid!r}: no such scored question in this report")
    col = max(20, (width - 6) // max(1, len(pipes)) - 1)

    def rows(columns: list[list[str]], lead: str) -> Iterator[str]:
        for j in range(max(len(c) for c in columns)):
            yield ((lead if j == 0 else " " * len(lead))
                   + " ".join((c[j] if j < len(c) else "").ljust(col) for c in columns)).rstrip()

    shown = 0
    for q, recs in by_q.items():
        if qid is not None and q != qid:
            continue
        measured = {p: rec for p, rec in recs.items() if rec.get("state", "ok") == "ok"}
        answerable = all(rec.get("answerable", True) for rec in measured.values())
        missed = [p for p, rec in measured.items() if answerable and not any(x.get("hit") for x in rec["results"])]
        if misses and not missed:
            continue
        shown += 1
        first = next(iter(recs.values()))
        yield (f"{q} [{first.get('class', '')}] {first.get('question', '')}"
               + ("" if answerable else " (unanswerable: no evidence)"))
        yield from rows([_fold(p, col) for p in pipes], "  rank ")
        depth = max(1, max(len(rec["results"]) for rec in recs.values()))
        for i in range(depth):
            cells = []
            for p in pipes:
                res = recs.get(p, {}).get("results", [])
                if i < len(res):
                    mark = "HIT " if res[i]["hit"] else "MISS" if answerable else "-   "
                    cells.append(_fold(f"{mark} {docno(res[i])}", col))
                else:  # a column without any result says why on its first line
                    cells.append(textwrap.wrap(_why_empty(recs.get(p)), col) if i == 0 else [])
            yield from rows(cells, f"  {i + 1:>4} ")
        yield ""
    if shown == 0:
        yield "no question to show" + (" (every question has a hit)" if misses else "")
        yield ""
    for p in pipes:
        unmeasured = [rec for rec in found[p] if rec.get("state", "ok") != "ok"]
        kept = [rec for rec in found[p] if rec.get("state", "ok") == "ok"]
        recs = [rec for rec in kept if rec.get("answerable", True)]
        out_of_scope = len(kept) - len(recs)
        hits = sum(1 for rec in recs if any(x.get("hit") for x in rec["results"]))
        lat = [float(rec["latency_ms"]) for rec in kept if isinstance(rec.get("latency_ms"), (int, float))]
        p50, p95 = _nearest_rank(lat, 50), _nearest_rank(lat, 95)
        timing = (f"latency p50 {p50:.2f} ms, p95 {p95:.2f} ms (nearest rank, {len(lat)} queries)" if lat
                  else "latency: not recorded")
        calls = [rec["embedding_calls"] for rec in kept if isinstance(rec.get("embedding_calls"), int)]
        states = {st: sum(1 for rec in unmeasured if rec["state"] == st) for st in UNMEASURED}
        failed = ", ".join(f"{n} {'in error' if st == 'error' else st}" for st, n in states.items() if n)
        yield (f"{p}: {hits} of {len(recs)} questions with a hit in the top results (misses: {len(recs) - hits})"
               + (f", {out_of_scope} unanswerable" if out_of_scope else "")
               + (f"; {failed}, not measured ({len(found[p])} questions in all)" if unmeasured else "")
               + f"; {timing}" + (f"; {sum(calls)} query embedding calls" if calls else ""))


def question_table(found: dict[str, list[dict[str, Any]]], limit: int) -> list[dict[str, Any]]:
    """The HTML view's rows, one per question: ``{id, class, question, cells}`` with per pipeline (in ``found``'s
    order) the rank of its first hit, or 0 for a miss, or None when that pipeline has no record; questions some
    pipeline missed first (then by id), at most ``limit``."""
    pipes = list(found)
    by_q: dict[str, dict[str, dict[str, Any]]] = {}
    for p in pipes:
        for rec in found[p]:
            by_q.setdefault(rec["id"], {})[p] = rec
    rows = []
    for q, recs in by_q.items():
        first = next(iter(recs.values()))
        cells = [None if p not in recs or not recs[p].get("answerable", True)  # unanswerable: no hit to find
                 or recs[p].get("state", "ok") != "ok"  # not measured (an error): no miss either
                 else next((x["rank"] for x in recs[p]["results"] if x.get("hit")), 0) for p in pipes]
        rows.append({"id": q, "class": first.get("class", ""), "question": first.get("question", ""), "cells": cells})
    rows.sort(key=lambda r: (0 not in r["cells"], r["id"]))
    return rows[:limit]
