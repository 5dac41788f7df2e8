"""What ``ingestaudit validate CORPUS`` checks, without running anything: the corpus layout, its own
``ingestaudit.toml`` (and the pipelines of ``run CORPUS``, checked as ``run`` checks them), the documents' size
limits, every truth file (its reference tables and PII gold spans too) and the questions file."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ingestaudit.config import Limits
from ingestaudit.corpus import Corpus
from ingestaudit.truth import Truth


@dataclass
class CorpusCheck:
    """The result of `check_corpus`.

    ``found``: the discovered corpus; ``problems``: one line per problem, each naming its file (and field or line),
    in the order found (layout, config, size limits, then each document's truth, then the questions); ``warnings``:
    lines that do not fail the check (overlapping or Luhn-failing PII gold, filters no chunk can carry);
    ``n_questions``: the questions loaded (0 without a questions file).
    """

    found: Corpus
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    n_questions: int = 0


def check_corpus(corpus: Path, config: Path | None = None) -> CorpusCheck:
    """Check ``corpus`` as ``validate`` does; one broken file never stops the check (every problem is listed).

    Args:
        config: a configuration file the user names (``validate --config``, trusted as ``run --config`` trusts
            it), read instead of the corpus's own ``ingestaudit.toml``, as ``run`` reads it; None: the corpus's own.

    Raises:
        ingestaudit.corpus.CorpusError: the folder is not a corpus at all (no ``docs/``, not a folder...).
    """
    from ingestaudit.config import CONFIG_NAME, ConfigError, load_config
    from ingestaudit.corpus import discover

    found = discover(corpus)
    check = CorpusCheck(found, problems=[str(p) for p in found.problems])
    limits = Limits()  # the size limits (issue 15): the corpus's own [limits] may lower them
    path = config if config is not None else corpus / CONFIG_NAME
    if config is not None or os.path.lexists(path):  # a FIFO or a device is a problem, never ignored (issue 30)
        source = str(config) if config is not None else CONFIG_NAME
        try:
            cfg = load_config(path, trusted=config is not None)  # module paths are a problem (issue 15)
        except ConfigError as exc:
            check.problems.append(str(exc))
        else:
            limits = cfg.limits
            from ingestaudit.config_check import config_problems, default_pipelines, unrouted_documents
            from ingestaudit.pipeline import PipelineError

            try:  # the pipelines of `run CORPUS`, checked as `run` checks them
                pipes = default_pipelines(cfg)
            except PipelineError as exc:  # one problem per line (a routing table names each bad key on its own)
                check.problems += [f"{source}: {line}" for line in str(exc).splitlines() if line.strip()]
                pipes = []
            check.problems += config_problems(cfg, source, pipes)
            check.warnings += unrouted_documents(pipes, cfg.parser_options, found.documents)
    check.problems += [str(p) for p in found.over_limits(limits).values()]  # over limits.doc_bytes (stat only)
    truths = _check_truths(check, limits)
    if found.questions is not None:
        _check_questions(check, truths, limits)
    return check


def _check_truths(check: CorpusCheck, limits: Limits) -> dict[str, Truth]:
    """Every document's truth into ``check``; the truths by document id when the corpus has questions (for their
    evidence checks; a truth with problems counts as empty), else ``{}``: memory stays flat in corpus size."""
    from ingestaudit.auditors.pii import validate_pii_gold
    from ingestaudit.metrics.teds import parse_table
    from ingestaudit.truth import TruthError, load_truth

    found = check.found
    truths: dict[str, Truth] = {}
    keep = found.questions is not None
    for doc in found.documents:
        if keep:
            truths[doc.doc_id] = Truth()
        try:
            truth = load_truth(doc, found.root, limits)
        except TruthError as exc:
            check.problems += [str(p) for p in exc.problems]
            continue
        except Exception as exc:  # never a traceback: the document's labels are named
            check.problems.append(f"truth/{doc.doc_id}: {type(exc).__name__}: {exc}")
            continue
        if keep:
            truths[doc.doc_id] = truth
        rel_truth = doc.truth_json.relative_to(found.root).as_posix() if doc.truth_json else doc.doc_id
        for k, html in enumerate(truth.tables):  # a reference table the TEDS tree cannot be built from
            parsed = parse_table(html)
            if parsed.state is not None:
                check.problems.append(f"{rel_truth}: tables[{k}]: {parsed.message}")
        if truth.pii and truth.text is not None and doc.truth_json is not None:
            rel = doc.truth_json.relative_to(found.root).as_posix()
            for p in validate_pii_gold(truth.text, truth.pii):  # overlaps and Luhn failures warn, bad spans fail
                (check.problems if p.severity == "error" else check.warnings).append(
                    f"{rel}: pii[{p.index}]: {p.message}")
    return truths


def _check_questions(check: CorpusCheck, truths: dict[str, Truth], limits: Limits) -> None:
    """The questions file into ``check``: its problems, its filters no chunk can carry, and ``n_questions``."""
    from ingestaudit.questions import load_questions, unknown_filter_fields

    found = check.found
    try:
        qset = load_questions(found.questions, found.questions.name, truths, limits,
                              {d.doc_id: d for d in found.documents})
        check.n_questions = len(qset.questions)
        check.problems += [str(p) for p in qset.problems]
        check.warnings += [f"{p}; a question is an error for every pipeline none of whose chunks carry it"
                           for p in unknown_filter_fields(qset, truths, found.questions.name)]
    except OSError as exc:
        check.problems.append(f"{found.questions.name}: unreadable ({exc.strerror or exc})")
