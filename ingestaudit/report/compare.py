"""Compare two reports summary row by summary row: the gate of nightly regression jobs.

A row regresses when its headline value (micro when defined, else macro) moves in the bad direction by more than the
budget, or when fewer documents were measured (``n_docs`` dropped: a document that now fails must not hide behind a
better-looking average), or when a row of the baseline is missing from the new report.
"""

from __future__ import annotations

from dataclasses import dataclass

from ingestaudit.metrics import specs
from ingestaudit.report.schema import Report, SummaryRow

DEFAULT_BUDGET = 0.01  # absolute change of the headline value tolerated before a row counts as regressed


@dataclass(frozen=True)
class RowChange:
    """One compared row: key, baseline and new headline values, and why it regressed (``""`` if it did not)."""

    key: str
    base: float | None
    head: float | None
    reason: str


@dataclass(frozen=True)
class Comparison:
    """All compared rows, and the regressed ones."""

    changes: list[RowChange]
    budget: float
    same_corpus: bool = True

    @property
    def regressions(self) -> list[RowChange]:
        """Rows that regressed."""
        return [c for c in self.changes if c.reason]


def headline(row: SummaryRow) -> float | None:
    """The value a gate compares: micro when defined, else macro."""
    return row.micro if row.micro is not None else row.macro


def _key(r: SummaryRow) -> str:
    return f"{r.pipeline} {r.doc_class} {r.metric}" + (f"[{r.label}]" if r.label else "")


def compare_reports(base: Report, head: Report, budget: float = DEFAULT_BUDGET) -> Comparison:
    """Compare ``head`` with ``base``; rows are matched on pipeline, class, metric and label.

    Args:
        budget: largest tolerated change of the headline value in the bad direction (absolute, >= 0).

    Raises:
        ValueError: negative budget.
    """
    if budget < 0:
        raise ValueError("budget must be >= 0")
    new = {_key(r): r for r in head.summary}
    changes = []
    for b in base.summary:
        key = _key(b)
        h = new.get(key)
        if h is None:
            had_value = headline(b) is not None
            changes.append(RowChange(key, headline(b), None, "missing from the new report" if had_value else ""))
            continue
        bv, hv = headline(b), headline(h)
        reason = ""
        if h.n_docs < b.n_docs:
            reason = f"fewer documents measured ({b.n_docs} -> {h.n_docs}); states {h.states}"
        elif bv is not None and hv is None:
            reason = "no value in the new report"
        elif bv is not None and hv is not None:
            try:
                spec = specs.get(b.metric)
                worse = spec.badness(hv) - spec.badness(bv)
            except KeyError:  # a plug-in's metric we have no spec for: assume higher is better
                worse = bv - hv
            if worse > budget:
                reason = f"worse by {worse:.4f} (budget {budget:g})"
        changes.append(RowChange(key, bv, hv, reason))
    return Comparison(changes, budget, base.corpus.fingerprint == head.corpus.fingerprint)


def render_comparison(c: Comparison) -> str:
    """Plain-text list of the regressed rows (or a one-line all-clear)."""
    regs = c.regressions
    note = "" if c.same_corpus else "note: the two reports audited different corpora (fingerprints differ)\n"
    return note + _render_rows(c, regs)


def _render_rows(c: Comparison, regs: list[RowChange]) -> str:
    if not regs:
        return f"no regression in {len(c.changes)} compared rows (budget {c.budget:g})"
    lines = [f"{len(regs)} regression(s) in {len(c.changes)} compared rows:"]
    worse_first = sorted(regs, key=lambda r: (not r.reason.startswith("worse"), r.reason.startswith("missing")))
    lines += [f"  {r.key}: {r.base} -> {r.head}: {r.reason}" for r in worse_first]
    return "\n".join(lines)
