"""``ingestaudit eval-run QRELS RUN``: score a TREC-format run against TREC qrels with trec_eval's conventions and
measure names (``ingestaudit.trec``), printing trec_eval-style lines and optionally writing JSON.

Registered by the CLI as ``app.command("eval-run")(eval_run)``. Exit codes: 0 scored; 2 unreadable or malformed
input (the message names the file and line), nothing written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

EXIT_USAGE = 2


def _fail(message: str) -> None:
    from rich.console import Console

    Console(stderr=True).print("error: " + message, style="red", highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(EXIT_USAGE)


def _note(message: str) -> None:
    from rich.console import Console

    Console(stderr=True).print(message, style="dim", highlight=False, markup=False, soft_wrap=True)


def eval_run(
    qrels: Annotated[Path, typer.Argument(help="TREC qrels: 'topic iteration docno relevance' per line.")],
    run: Annotated[Path, typer.Argument(help="TREC run: 'topic Q0 docno rank score tag' per line.")],
    q: Annotated[bool, typer.Option("-q", help="Print every topic's measures before the average "
                                               "(trec_eval -q).")] = False,
    complete: Annotated[bool, typer.Option("--complete", "-c",
                                           help="Score qrels topics missing from the run as 0 and average over "
                                                "every judged topic (trec_eval -c).")] = False,
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Also write {\"all\": {...}, \"per_topic\": "
                                                                    "{...}} to this file.")] = None,
) -> None:
    """Score a TREC run against qrels with trec_eval's conventions (ties: docno descending; rel > 0 relevant)."""
    from ingestaudit.trec import TREC_EVAL, TrecError, evaluate, format_trec, read_qrels, read_run, to_json

    try:
        judgements = read_qrels(qrels)
        results = read_run(run)
        evaluation = evaluate(judgements, results, complete=complete, profile=TREC_EVAL)
    except TrecError as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"cannot read {exc.filename or ''}: {exc.strerror or exc}")
    if evaluation.left_out_run_topics:
        _note(f"note: {len(evaluation.left_out_run_topics)} run topic(s) have no judgements and are left out "
              f"(trec_eval): {', '.join(evaluation.left_out_run_topics[:10])}")
    if evaluation.left_out_qrels_topics:
        _note(f"note: {len(evaluation.left_out_qrels_topics)} judged topic(s) are missing from the run and left "
              f"out of the average (use --complete to count them as 0): "
              f"{', '.join(evaluation.left_out_qrels_topics[:10])}")
    if json_out is not None:
        try:
            json_out.write_text(json.dumps(to_json(evaluation), indent=1, sort_keys=False) + "\n",
                                encoding="utf-8")
        except OSError as exc:
            _fail(f"cannot write {json_out}: {exc.strerror or exc}")
    typer.echo(format_trec(evaluation, per_topic=q), nl=False)
