"""TREC-format relevance judgements (qrels) and runs, scored with trec_eval's conventions and measure names.

Lets a user score a production run without a corpus, and is how ``ingestaudit.metrics.ranking`` is checked against
trec_eval (``../shared/data/trec-eval-test``: trec_eval 10.0's published ``out.test.a`` / ``out.test.aq``) and
pytrec_eval.

Formats (whitespace-separated fields; extra trailing fields are ignored; blank lines are skipped):

* qrels: ``topic iteration docno relevance`` — relevance an integer; ``relevance > 0`` is relevant and is the
  nDCG gain; 0 or negative is judged non-relevant (trec_eval reads negative values as "in the pool, unjudged";
  either way it is not relevant and has no gain).
* run: ``topic Q0 docno rank score tag`` — ``rank`` must be an integer but is ignored (trec_eval ranks by score);
  ``tag`` of the first line is the run id.

A malformed line, a duplicate ``(topic, docno)`` (trec_eval refuses both) or an undecodable line raises
`TrecFormatError` naming the file and the 1-based line number.

The ``trec_eval`` profile (:data:`TREC_EVAL`; trec_eval 10.0, ``form_res_rels.c`` and ``trec_eval.c``):

* ranking: score descending, ties broken by docno **descending** (``strcmp(p2->docno, p1->docno)``; Python's code
  point order equals strcmp's byte order on UTF-8); the rank column is ignored; no cap on results per topic
  (trec_eval's default ``-M`` is unlimited);
* topics: only topics that appear in the qrels are scored. A run topic with no qrels line is left out. A topic
  with qrels lines but no relevant document is **kept** and scores 0 on every measure (trec_eval and pytrec_eval
  do this; ``ingestaudit``'s own auditor instead marks such a question ``no_reference``). A qrels topic missing
  from the run is left out, unless ``complete`` (trec_eval ``-c``): then it is scored against an empty ranking
  (0 on every measure, its relevant documents counted in ``num_rel``);
* averages: ``all`` is the arithmetic mean over the scored topics; ``num_ret``, ``num_rel`` and ``num_rel_ret``
  are summed; ``num_q`` counts the scored topics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ingestaudit.errors import IngestAuditError
from ingestaudit.metrics.ranking import ranking_metrics

CUTOFFS: tuple[int, ...] = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
"""trec_eval's default cutoffs for ``P``, ``recall``, ``ndcg_cut`` and ``map_cut``."""

SUCCESS_CUTOFFS: tuple[int, ...] = (1, 5, 10)
"""trec_eval's default cutoffs for ``success``."""

COUNT_MEASURES: frozenset[str] = frozenset({"num_q", "num_ret", "num_rel", "num_rel_ret"})
"""Measures that are integer counts (summed, not averaged, in ``all``; printed without decimals)."""

TOPIC_MEASURES: tuple[str, ...] = (
    "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "recip_rank",
    *(f"P_{k}" for k in CUTOFFS), *(f"recall_{k}" for k in CUTOFFS), "ndcg",
    *(f"ndcg_cut_{k}" for k in CUTOFFS), *(f"map_cut_{k}" for k in CUTOFFS),
    *(f"success_{k}" for k in SUCCESS_CUTOFFS),
)
"""Per-topic measures, in trec_eval's print order, with trec_eval's names."""

ALL_MEASURES: tuple[str, ...] = ("num_q", *TOPIC_MEASURES)
"""Measures of the ``all`` row (``num_q`` only exists there, as in trec_eval's output)."""

_RATE_OF: dict[str, str] = {
    "map": "ap", "Rprec": "r_precision", "recip_rank": "rr", "ndcg": "ndcg",
    **{f"P_{k}": f"precision@{k}" for k in CUTOFFS}, **{f"recall_{k}": f"recall@{k}" for k in CUTOFFS},
    **{f"ndcg_cut_{k}": f"ndcg@{k}" for k in CUTOFFS}, **{f"map_cut_{k}": f"ap@{k}" for k in CUTOFFS},
    **{f"success_{k}": f"hit@{k}" for k in SUCCESS_CUTOFFS},
}


class TrecError(IngestAuditError, ValueError):
    """TREC input that cannot be scored (the CLI exits 2 with this message)."""


class TrecFormatError(TrecError):
    """A malformed line in a qrels or run file.

    Attributes:
        path: the file. line: 1-based line number (None for a whole-file problem). reason: what is wrong.
    """

    def __init__(self, path: Path | str, line: int | None, reason: str):
        self.path, self.line, self.reason = Path(path), line, reason
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {reason}")


@dataclass(frozen=True)
class Profile:
    """How a run is turned into rankings and which topics are scored.

    Attributes:
        name: printed with the results.
        tie_break: ``"docno_desc"`` (trec_eval: equal scores ordered by docno descending) or ``"file_order"``
            (equal scores keep their order in the run file).
    """

    name: str
    tie_break: str = "docno_desc"

    def __post_init__(self):
        if self.tie_break not in ("docno_desc", "file_order"):
            raise ValueError(f"tie_break must be 'docno_desc' or 'file_order', got {self.tie_break!r}")


TREC_EVAL = Profile("trec_eval", "docno_desc")
"""trec_eval 10.0's conventions (module docstring)."""


@dataclass(frozen=True)
class Run:
    """A parsed run: ``results[topic]`` = ``[(docno, score), ...]`` in file order; ``runid`` = first line's tag."""

    results: dict[str, list[tuple[str, float]]]
    runid: str


@dataclass(frozen=True)
class TrecEvaluation:
    """Scores of a run. ``per_topic[topic][measure]`` (topics in trec_eval's order: sorted by string) and
    ``all[measure]``; counts are ``int``, every other value a ``float`` in [0, 1]."""

    runid: str
    per_topic: dict[str, dict[str, float | int]]
    all: dict[str, float | int]
    profile: Profile = TREC_EVAL
    complete: bool = False
    left_out_run_topics: tuple[str, ...] = field(default=())  # run topics without qrels
    left_out_qrels_topics: tuple[str, ...] = field(default=())  # qrels topics without results (not complete)


# ------------------------------------------------------------------------------------------------ reading


TREC_BYTES = 4 << 30
"""Largest qrels or run file read, in bytes (read a line at a time; a fixed limit: ``eval`` reads no configuration)."""


def _lines(path: Path):
    """Yield ``(line number, fields)`` of the non-blank lines of ``path`` (UTF-8; a BOM is dropped), opened by
    `ingestaudit.inputs.open_input_file`: a FIFO, a device or a folder is a whole-file `TrecFormatError`, never waited
    on nor read without end."""
    from ingestaudit.inputs import InputFileError, open_input_file

    try:
        with open_input_file(path, max_bytes=TREC_BYTES, limit="TREC_BYTES") as fh:
            for number, raw in enumerate(fh, start=1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise TrecFormatError(path, number, f"not UTF-8 text ({exc.reason} at byte {exc.start})"
                                          ) from None
                if number == 1:
                    text = text.removeprefix("\ufeff")
                fields = text.split()
                if fields:
                    yield number, fields
    except InputFileError as exc:  # only the open raises it
        if exc.oserror is not None:  # missing, no permission: as any unreadable file
            raise exc.oserror from None
        raise TrecFormatError(path, None, exc.reason) from None


def read_qrels(path: Path | str) -> dict[str, dict[str, int]]:
    """Read a TREC qrels file: ``{topic: {docno: relevance}}``.

    Raises:
        TrecFormatError: fewer than 4 fields, a non-integer relevance, a duplicate ``(topic, docno)``, a line that
            is not UTF-8, or no judgement at all.
        OSError: the file cannot be read.
    """
    path = Path(path)
    qrels: dict[str, dict[str, int]] = {}
    seen: dict[tuple[str, str], int] = {}
    for number, f in _lines(path):
        if len(f) < 4:
            raise TrecFormatError(path, number, f"expected 'topic iteration docno relevance', found {len(f)} "
                                                f"field(s): {' '.join(f)!r}")
        topic, docno, rel_text = f[0], f[2], f[3]
        try:
            rel = int(rel_text)
        except ValueError:
            raise TrecFormatError(path, number, f"relevance must be an integer, found {rel_text!r}") from None
        if (topic, docno) in seen:
            raise TrecFormatError(path, number, f"duplicate judgement of document {docno!r} for topic {topic!r} "
                                                f"(first on line {seen[topic, docno]})")
        seen[topic, docno] = number
        qrels.setdefault(topic, {})[docno] = rel
    if not qrels:
        raise TrecFormatError(path, None, "no judgements (the qrels file is empty)")
    return qrels


def read_run(path: Path | str) -> Run:
    """Read a TREC run file into a `Run` (results in file order per topic).

    Raises:
        TrecFormatError: fewer than 6 fields, a non-integer rank, a score that is not a number (or NaN), a docno
            retrieved twice for one topic, a line that is not UTF-8, or no result at all.
        OSError: the file cannot be read.
    """
    path = Path(path)
    results: dict[str, list[tuple[str, float]]] = {}
    seen: dict[tuple[str, str], int] = {}
    runid = None
    for number, f in _lines(path):
        if len(f) < 6:
            raise TrecFormatError(path, number, f"expected 'topic Q0 docno rank score tag', found {len(f)} "
                                                f"field(s): {' '.join(f)!r}")
        topic, docno, rank_text, score_text = f[0], f[2], f[3], f[4]
        try:
            int(rank_text)
        except ValueError:
            raise TrecFormatError(path, number, f"rank must be an integer, found {rank_text!r}") from None
        try:
            score = float(score_text)
        except ValueError:
            raise TrecFormatError(path, number, f"score must be a number, found {score_text!r}") from None
        if math.isnan(score):
            raise TrecFormatError(path, number, "score is NaN (it cannot be ranked)")
        if (topic, docno) in seen:
            raise TrecFormatError(path, number, f"document {docno!r} retrieved twice for topic {topic!r} "
                                                f"(first on line {seen[topic, docno]})")
        seen[topic, docno] = number
        if runid is None:
            runid = f[5]
        results.setdefault(topic, []).append((docno, score))
    if runid is None:
        raise TrecFormatError(path, None, "no results (the run file is empty)")
    return Run(results, runid)


# ------------------------------------------------------------------------------------------------ scoring


def rank(results: Sequence[tuple[str, float]], profile: Profile = TREC_EVAL) -> list[str]:
    """The docnos of one topic's ``(docno, score)`` results, best first: score descending, equal scores by
    ``profile.tie_break`` (trec_eval: docno descending, ``comp_sim_docno`` in trec_eval 10's ``form_res_rels.c``)."""
    if profile.tie_break == "docno_desc":
        return [d for d, _ in sorted(results, key=lambda x: (x[1], x[0]), reverse=True)]
    return [d for d, _ in sorted(results, key=lambda x: -x[1])]  # stable: file order among equal scores


def evaluate_topic(ranked_docnos: Sequence[str], judgements: Mapping[str, int]) -> dict[str, float | int]:
    """trec_eval's measures (:data:`TOPIC_MEASURES`) for one topic's ranking against its judgements.

    Each document with relevance > 0 is one evidence item whose grade is its relevance; the ranking metrics come
    from ``ingestaudit.metrics.ranking.ranking_metrics``. A topic without relevant documents scores 0 (trec_eval).
    """
    grades = {d: r for d, r in judgements.items() if r > 0}
    ranked = [(d,) if d in grades else () for d in ranked_docnos]
    ks = sorted(set(CUTOFFS) | set(SUCCESS_CUTOFFS))
    rates = ranking_metrics(ranked, grades, ks)
    out: dict[str, float | int] = {
        "num_ret": len(ranked_docnos),
        "num_rel": len(grades),
        "num_rel_ret": sum(1 for items in ranked if items),
    }
    for name in TOPIC_MEASURES:
        if name in out:
            continue
        value = rates[_RATE_OF[name]].value
        out[name] = 0.0 if value is None else float(value)
    return {name: out[name] for name in TOPIC_MEASURES}


def _some(names: Sequence[str], n: int = 5) -> str:
    return ", ".join(names[:n]) + (f", ... ({len(names)} in all)" if len(names) > n else "")


def evaluate(qrels: Mapping[str, Mapping[str, int]], run: Run, *, complete: bool = False,
             profile: Profile = TREC_EVAL) -> TrecEvaluation:
    """Score ``run`` against ``qrels`` per topic and on average (module docstring: which topics count).

    Raises:
        TrecError: no topic is both judged and in the run (and not ``complete``), as trec_eval refuses.
    """
    judged = sorted(qrels)
    in_run = [t for t in judged if t in run.results]
    scored = judged if complete else in_run
    if not scored:
        raise TrecError("no topic has both results and judgements (topics of the run: "
                        f"{_some(sorted(run.results))}; of the qrels: {_some(judged)})")
    per_topic = {t: evaluate_topic(rank(run.results.get(t, []), profile), qrels[t]) for t in scored}
    all_row: dict[str, float | int] = {"num_q": len(scored)}
    for name in TOPIC_MEASURES:
        total = 0 if name in COUNT_MEASURES else 0.0
        for t in scored:  # trec_eval sums in topic order, then divides
            total += per_topic[t][name]
        all_row[name] = total if name in COUNT_MEASURES else total / len(scored)
    return TrecEvaluation(
        runid=run.runid, per_topic=per_topic, all=all_row, profile=profile, complete=complete,
        left_out_run_topics=tuple(sorted(t for t in run.results if t not in qrels)),
        left_out_qrels_topics=() if complete else tuple(t for t in judged if t not in run.results))


def format_trec(evaluation: TrecEvaluation, per_topic: bool = False) -> str:
    """trec_eval's text output: ``measure<TAB>topic|all<TAB>value`` lines, the measure name left-justified in 22
    characters, counts as integers and other values with 4 decimals; with ``per_topic`` every topic's block comes
    first (trec_eval ``-q``), then ``runid`` and the ``all`` block."""

    def line(name: str, topic: str, value: float | int | str) -> str:
        if isinstance(value, str):
            text = value
        elif name in COUNT_MEASURES:
            text = str(int(value))
        else:
            text = f"{value:.4f}"
        return f"{name:<22}\t{topic}\t{text}"

    out = []
    if per_topic:
        for topic, values in evaluation.per_topic.items():
            out.extend(line(n, topic, values[n]) for n in TOPIC_MEASURES)
    out.append(line("runid", "all", evaluation.runid))
    out.extend(line(n, "all", evaluation.all[n]) for n in ALL_MEASURES)
    return "\n".join(out) + "\n"


def to_json(evaluation: TrecEvaluation) -> dict:
    """``{"all": {measure: value}, "per_topic": {topic: {measure: value}}}`` with trec_eval's measure names and
    full-precision values (counts as ints)."""
    return {"all": dict(evaluation.all), "per_topic": {t: dict(v) for t, v in evaluation.per_topic.items()}}
