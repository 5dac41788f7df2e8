"""Renderers: views of a `Report`. Each takes the report and returns a string (the terminal one prints).

* terminal: by default a headline per class (each stage's key metric per pipeline with interval and n, the best
  pipeline marked where significant, the loss waterfall), failures grouped by cause, and where the full report is;
  ``verbose`` prints every row. Plain text laid out for the given width.
* Markdown (``report.md``) and HTML (``report.html``): the headline, paired tests with their correction, every
  row, every setting, failures; the HTML adds plots and a drill-down per item. The HTML page carries no script and
  a Content-Security-Policy that forbids any; every user-supplied string is escaped (jinja2 autoescape).

Names come from an untrusted corpus (`ingestaudit.report.escape`): the terminal view makes every control character
in them visible (`safe_for_terminal`), Markdown escapes markup in every name and message (`md_text`, `md_code`), and
the HTML page makes control characters visible before jinja2 escapes the markup (`_html_value`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ingestaudit.report.escape import md_code, md_text, safe_for_terminal, terminal_text
from ingestaudit.report.paired import PAIRING
from ingestaudit.report.schema import ALL_CLASSES, Report
from ingestaudit.report.rows import distinct, item_keys
from ingestaudit.report.tables import (BUDGET_HEADLINE, STAGE_ORDER, Headline, budget_key, chunking_differs,
                                      class_tables, direction, failure_groups, g4, headline_value, headlines,
                                      measurement_rows)
from ingestaudit.report.questions import question_records, question_table
from ingestaudit.report.verdict import DECIDING_TEST, verdict_lines

LEGEND = ("Cells: micro (macro) over documents in state ok; [CI] and n = documents aggregated; "
          "other states counted after n; 'corpus of N docs' = one value computed over the class (the index "
          "audit's N counts vectors or queries, as its cells say). ↓ lower is better, ↑ higher is better, →1 best at 1.")
HEADLINE_LEGEND = ("value = micro over items in state ok (else the mean) [95% interval] n = items ok (/ all); ★ = "
                   "better than every other pipeline on the items both measured, each paired test significant "
                   "after Holm in that direction (corpus-level values have no paired test); 'same N items' = the "
                   "values over the items every pipeline measured; ↓ lower is better, ↑ higher is better; "
                   "'—' = no value, with the items' states below it: no ref(erence), no pred(iction), skip(ped), "
                   "err(or); '(k empty)' = k documents whose parse returned no text though the reference has "
                   "some (scored CER 1, listed as empty_output failures)")
MAX_DRILL_ITEMS = 500  # items with a <details> drill-down in the HTML page; the rest are in measurements.parquet
DRILL_PER_CLASS = 8
"""Items of one class the HTML drill-down opens (failing ones first): the page grows with classes x pipelines, not
with the corpus (a document's drill-down holds every metric of every pipeline, about 18 KB on the demo; issue 27);
every row is in measurements.parquet."""


def terminal_width(default: int = 100) -> int:
    """``COLUMNS`` when set, else the terminal's width when stdout is a terminal, else ``default``."""
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    if sys.stdout.isatty():
        return shutil.get_terminal_size((default, 24)).columns
    return default


def _verdict(report: Report) -> list[str]:
    """The verdict's lines (`ingestaudit.report.verdict.verdict_lines`), none for a single-pipeline report."""
    return verdict_lines(report.verdict, STAGE_ORDER) if report.verdict else []


def _verdict_legend(report: Report) -> str:
    """How the verdict decides, and why retrieval's headline is budget recall when it is."""
    text = (f"verdict: the best pipeline against the runner-up on each class's key metrics, over the items both "
            f"measured; decided by the {DECIDING_TEST}, only when no other key metric of the best is significantly "
            "worse; [95% paired bootstrap interval of the difference]; every comparison in report.json 'verdict'")
    if any(v.metric.startswith("retrieval.span_recall@") and v.metric.endswith("ch") for v in report.verdict or ()):
        text += "; " + BUDGET_HEADLINE
    return text


def _headline_legend(report: Report) -> str:
    """The headline's legend, with `BUDGET_HEADLINE` only when retrieval's key can be the budget recall: the
    pipelines chunk differently and a budget recall was measured (a run without retrieval said it too)."""
    budget = budget_key(s.metric for s in report.summary if headline_value(s) is not None) is not None
    if budget and len(report.pipelines) > 1 and chunking_differs(report.pipelines):
        return HEADLINE_LEGEND + "; " + BUDGET_HEADLINE
    return HEADLINE_LEGEND


def _questions_note(report: Report) -> str:
    """``; N questions`` for the header: the questions with rows, as the class headlines count them, and when some
    of those are questions validation rejected (their rows are ``error``, `CorpusInfo.questions` leaves them out)
    how many, so the header and the ``__all__`` headline say the same N."""
    from ingestaudit.report.rows import item_keys

    valid = report.corpus.questions
    listed = sum(1 for kind, _ in item_keys(report) if kind == "question")
    if listed <= valid:
        return f"; {valid} questions" if valid else ""
    return f"; {listed} questions ({listed - valid} rejected by validation: error rows)"


def _header(report: Report) -> list[str]:
    pipelines = ", ".join(p.name for p in report.pipelines)
    docs = ", ".join(f"{c}: {n}" for c, n in report.corpus.documents.items())
    questions = _questions_note(report)
    lines = [f"corpus {report.corpus.path} ({docs}{questions}); fingerprint {report.corpus.fingerprint[:12]}",
             f"pipelines: {pipelines}; seed {report.config.get('run', {}).get('seed')}"]
    warned = [f"{p.name} {p.documents_with_warnings}" for p in report.pipelines if p.documents_with_warnings]
    if warned:  # documents whose parse raised warnings (MuPDF's own messages on a damaged PDF...), per pipeline
        lines.append(f"documents whose parse raised warnings: {', '.join(warned)} of "
                     f"{sum(report.corpus.documents.values())} (report.json 'parse_warnings' lists them)")
    return lines


# --- plain-text grid -------------------------------------------------------------------------------------------------

def _layout(first: Sequence[list[str]], columns: Sequence[Sequence[list[str]]], heads: Sequence[str],
            first_head: str, width: int, first_max: int | None = None) -> tuple[int, list[int], list[list[int]]]:
    """``(label width, column widths, blocks of column indices)`` of `_grid`: columns that do not fit ``width``
    beside the labels go to a further block."""
    def w(cells: Sequence[list[str]], head: str) -> int:
        return max([len(head)] + [len(line) for c in cells for line in c])

    first_w = min(w(first, first_head), first_max or max(24, width * 2 // 5))
    widths = [min(w(col, h), max(8, width - first_w - 2)) for col, h in zip(columns, heads)]
    blocks: list[list[int]] = [[]]
    used = first_w
    for j, cw in enumerate(widths):
        if blocks[-1] and used + 2 + cw > width:
            blocks.append([])
            used = first_w
        blocks[-1].append(j)
        used += 2 + cw
    return first_w, widths, blocks


def _split(text: str, w: int) -> list[str]:
    """A cell line too long for its column as several lines (the later ones indented two spaces), broken after
    ``.``, ``_``, ``/``, ``,`` or a space where possible: nothing is cut off."""
    out, prefix = [], ""
    while len(prefix) + len(text) > w and w > 4:
        room = w - len(prefix)
        cut = max(text.rfind(ch, 1, room) for ch in "._/, ")
        cut = cut + 1 if cut > 0 else room
        out.append(prefix + text[:cut].rstrip())
        text, prefix = text[cut:].lstrip(), "  "
    return out + [prefix + text]


def _grid(first: Sequence[list[str]], columns: Sequence[Sequence[list[str]]], heads: Sequence[str],
          first_head: str, width: int, first_max: int | None = None) -> list[str]:
    """Lay out rows of multi-line cells: ``first`` (row labels) and ``columns`` (one list of cells per column).
    Columns that do not fit ``width`` go to a further block with the labels repeated; a label or cell wider than
    its column continues on the next line (`_split`) rather than being cut."""
    first_w, widths, blocks = _layout(first, columns, heads, first_head, width, first_max)

    def lines(cell: list[str], cw: int) -> list[str]:
        return [part for line in cell for part in _split(line, cw)]

    out: list[str] = []
    for b, cols in enumerate(blocks):
        if b:
            out.append("")
        out.append(_fit(first_head, first_w) + "".join("  " + _fit(heads[j], widths[j]) for j in cols).rstrip())
        for i, label in enumerate(first):
            cells = [lines(label, first_w)] + [lines(columns[j][i], widths[j]) for j in cols]
            for k in range(max(len(c) for c in cells)):
                line = "".join(("  " if n else "") + (c[k] if k < len(c) else "").ljust(cw)
                               for n, (c, cw) in enumerate(zip(cells, [first_w] + [widths[j] for j in cols])))
                out.append(line.rstrip())
    return [_clip(line, width) for line in out]


def _wrap(text: str, width: int) -> list[str]:
    """Wrap at spaces; a word longer than the width (a path) stays whole."""
    return textwrap.wrap(text, width=width, break_long_words=False, break_on_hyphens=False,
                         subsequent_indent="  ") or [""]


def _fit(text: str, w: int) -> str:
    return (text if len(text) <= w else text[: max(1, w - 1)] + "…").ljust(w)


def _clip(line: str, width: int) -> str:
    return line if len(line) <= width else line[: max(1, width - 1)] + "…"


def _headline_block(h: Headline, width: int) -> list[str]:
    """One class: a row per stage's key metric (rows where no pipeline has a value and no item failed, only labels
    missing, are named in one line), a column per pipeline; each cell ``value ★ n=k/N`` and its interval, on one
    line when the width allows, else the interval on a second line (a cell without a value: ``—`` and its items'
    states, e.g. ``3 err``); then the waterfall."""
    what = (f"{h.documents} document{'s' * (h.documents != 1)}"
            + (f", {h.questions} question{'s' * (h.questions != 1)}" if h.questions else ""))
    out = [f"class: {h.doc_class} — {what}"]
    rows = [r for r in h.rows if any(c.value is not None or c.failed for c in r.cells)]
    empty = [r.name for r in h.rows if r not in rows]
    if rows:
        def layout(one_line: bool) -> tuple[list[list[str]], list[list[list[str]]]]:
            labels: list[list[str]] = []
            cols: list[list[list[str]]] = [[] for _ in h.pipelines]
            for r in rows:
                labels.append([f"{r.name} {direction(r.metric, r.label)}"])
                for j, c in enumerate(r.cells):
                    value, ci = c.compact()
                    cols[j].append([f"{value} {ci}".rstrip()] if one_line else [value] + ([ci] if ci else []))
                if r.common_n is not None:
                    labels.append([f"  same {r.common_n} item{'s' * (r.common_n != 1)}"])
                    for j, v in enumerate(r.common):
                        cols[j].append([g4(v)])
            return labels, cols

        labels, cols = layout(True)
        if len(_layout(labels, cols, h.pipelines, "key metric", width - 2, first_max=24)[2]) > 1:
            labels, cols = layout(False)  # did not fit on one line: the interval under the value
        grid = _grid(labels, cols, h.pipelines, "key metric", width - 2, first_max=24)
        out += [("  " + line).rstrip() for line in grid]
    if empty:
        out += _wrap("  no value in this class: " + ", ".join(empty), width)
    for pipe, shares in h.waterfall:
        parts = [f"{o} {s * 100:.0f}%" for o, s in shares if s > 0]
        text = f"waterfall @{h.waterfall_k} · {pipe}: " + " · ".join(parts) + _errored(h, pipe)
        out += textwrap.wrap(text, width=max(20, width - 2), initial_indent="  ", subsequent_indent="      ")
    return out


def _errored(h: Any, pipe: str) -> str:
    """`` · N questions errored, not counted`` when some of the pipeline's questions are in no waterfall share."""
    n = h.waterfall_errors.get(pipe, 0)
    return f" · {n} question{'s' * (n != 1)} errored, not counted" if n else ""


def _failures_total(report: Report) -> int:
    """Every failure of the report (``failures_total``; the list's length in reports older than schema 2.1)."""
    return report.failures_total if report.failures_total is not None else len(report.failures)


def _failure_lines(report: Report, width: int) -> list[str]:
    groups = failure_groups(report)
    if not groups:
        return []
    total = sum(g.count for g in groups)
    listed = ("report.json 'failures' lists each" if _failures_total(report) == len(report.failures)
              else f"report.json lists the first {len(report.failures)} and every cause; each item's rows are in "
                   "measurements.parquet")
    out = [f"failures: {total} in {len(groups)} cause{'s' * (len(groups) != 1)} ({listed})"]
    for g in groups[:8]:
        where = ", ".join(g.stages) + (f" ({', '.join(g.pipelines)})" if g.pipelines else "")
        text = f"{g.count} × {where}: {g.example}" + (f" — e.g. {g.example_item}" if g.example_item else "")
        wrapped = textwrap.wrap(text, width=max(20, width), initial_indent="  ", subsequent_indent="      ",
                                break_long_words=True)
        if len(wrapped) > 2:  # two lines at most per cause: report.json keeps the whole message
            wrapped = [wrapped[0], _clip(wrapped[1] + " " + " ".join(w.strip() for w in wrapped[2:]), width)]
        out += wrapped
    if len(groups) > 8:
        out.append(f"  … and {len(groups) - 8} more causes")
    return out


def _index_overviews(report: Report) -> list[tuple[str, list[str], list[str]]]:
    """``(pipeline, warnings, lines)`` of every index audit: the ``overview`` detail of stage ``index``
    (``{"warnings": [str], "lines": [str]}``, written by `ingestaudit.auditors.index`)."""
    out = []
    for d in report.details:
        if d.stage == "index" and d.name == "overview" and isinstance(d.data, dict):
            out.append((d.pipeline, [str(x) for x in d.data.get("warnings", [])],
                        [str(x) for x in d.data.get("lines", [])]))
    return out


def _drift_lines(report: Report, *, markdown: bool = False) -> list[str]:
    """The embedding drift section (`ingestaudit.embedding_drift.render_drift`) of the ``drift`` detail of stage
    ``embedding`` (``run --baseline`` when both runs kept their vectors); none without it."""
    found = [d.data for d in report.details if d.stage == "embedding" and d.name == "drift"
             and isinstance(d.data, list)]
    if not found:
        return []
    from ingestaudit.embedding_drift import render_drift

    return render_drift(found[0], markdown=markdown)


def render_terminal_text(report: Report, *, width: int = 100, verbose: bool = False,
                         out_dir: Path | None = None, written: Sequence[str] = ()) -> str:
    """The terminal view as text (see the module docstring); every user-supplied string in it has its control
    characters made visible (`ingestaudit.report.escape.safe_for_terminal`)."""
    report = safe_for_terminal(report)
    lines = [w for line in _verdict(report) for w in _wrap(line, width)]
    lines += [w for line in _header(report) for w in _wrap(line, width)]
    if verbose:
        lines += textwrap.wrap(LEGEND, width=width)
        for t in class_tables(report, digits=4):
            lines += ["", f"class: {t.doc_class}"]
            labels = [[f"{name} {direction(name)}"] for name, _ in t.rows]
            cols = [[[c.value, c.extra] if c.value else [""] for c in (cells[j] for _, cells in t.rows)]
                    for j in range(len(t.pipelines))]
            lines += [("  " + line).rstrip() for line in _grid(labels, cols, t.pipelines, "metric", width - 2)]
    else:
        for h in headlines(report):
            lines += [""] + _headline_block(h, width)
        lines += [""] + textwrap.wrap(_headline_legend(report), width=width)
        if report.verdict:
            lines += textwrap.wrap(_verdict_legend(report), width=width)
    lines += [w for line in run_conventions(report) for w in _wrap(line, width)]
    fails = _failure_lines(report, width)
    if fails:
        lines += [""] + fails
    for pipe, warns, _ in _index_overviews(report):  # the index audit's warnings (cosine on unnormalised vectors...)
        lines += [w for x in warns for w in _wrap(f"index · {pipe}: {x}", width)]
    if out_dir is not None:
        main_file = next((f for f in ("report.html", "report.md", "report.json") if f in written), "report.json")
        others = list(dict.fromkeys(f.split("/", 1)[0] + "/" if "/" in f else f for f in written if f != main_file))
        lines += [""] + _wrap(f"full report: {Path(out_dir) / main_file}"
                              + (f" (also {', '.join(others)})" if others else "")
                              + ("" if verbose else "; --verbose prints every row"), width)
    elif not verbose:
        lines += ["", "every row: --verbose; plots and drill-down: --html FILE"]
    return "\n".join(lines)


def render_terminal(report: Report, console: Any = None, *, verbose: bool = False, out_dir: Path | None = None,
                    written: Sequence[str] = (), width: int | None = None) -> None:
    """Print the terminal view; ``console`` is a ``rich.console.Console`` (its width is used) or None (stdout)."""
    if width is None:
        width = console.width if console is not None else terminal_width()
    text = render_terminal_text(report, width=width, verbose=verbose, out_dir=out_dir, written=written)
    text = terminal_text(text, keep_newlines=True)  # the output folder's name too
    if console is None:
        print(text)
    else:
        console.print(text, highlight=False, markup=False, soft_wrap=True)


# --- Markdown --------------------------------------------------------------------------------------------------------

def _md(text: str) -> str:
    """User-supplied or computed text as Markdown text (`ingestaudit.report.escape.md_text`)."""
    return md_text(text)


def render_markdown(report: Report) -> str:
    """The report as GitHub-flavoured Markdown: header, headline per class, paired tests, one full table per class,
    settings, failures."""
    out = ["# ingestaudit report", ""]
    if report.verdict:
        out += ["## Verdict", "", *(f"- {_md(line)}" for line in _verdict(report)), "", _md(_verdict_legend(report)),
                ""]
    out += [*(f"- {_md(line)}" for line in _header(report)), ""]
    out += ["## Headline", "", _headline_legend(report), ""]
    out += [*(f"- {_md(line)}" for line in run_conventions(report)), ""] if run_conventions(report) else []
    for h in headlines(report):
        out += [f"### {_md(h.doc_class)}", ""]
        if h.rows:
            out += ["| key metric | " + " | ".join(_md(p) for p in h.pipelines) + " |",
                    "|---|" + "---|" * len(h.pipelines)]
            for r in h.rows:
                out.append(f"| {_md(r.name)} {direction(r.metric, r.label)} | "
                           + " | ".join(_md(c.text()) for c in r.cells) + " |")
                if r.common_n is not None:
                    out.append(f"| same {r.common_n} item{'s' * (r.common_n != 1)} | "
                               + " | ".join(g4(v) for v in r.common) + " |")
            out.append("")
        for pipe, shares in h.waterfall:
            out.append(f"- waterfall @{h.waterfall_k} {md_code(pipe)}: "
                       + ", ".join(f"{o} {s * 100:.1f}%" for o, s in shares) + _errored(h, pipe))
        if h.waterfall:
            out.append("")
    out += ["## Every row", "", LEGEND, ""]
    out += _settings_markdown(report)
    for t in class_tables(report):
        out += [f"### {_md(t.doc_class)}", "", "| metric | " + " | ".join(_md(p) for p in t.pipelines) + " |",
                "|---|" + "---|" * len(t.pipelines)]
        for name, cells in t.rows:
            out.append(f"| {_md(name)} {direction(name)} | "
                       + " | ".join(f"{_md(c.value)}<br>{_md(c.extra)}" if c.value else "" for c in cells) + " |")
        out.append("")
    out += _paired_markdown(report)
    notes = _index_overviews(report)
    if notes:
        out += ["## Index audit", ""]
        for pipe, warns, lines in notes:
            out += [f"- {md_code(pipe)}:"] + [f"  - **warning**: {_md(x)}" for x in warns]
            out += [f"  - {_md(x)}" for x in lines]
        out.append("")
    out += _drift_lines(report, markdown=True)
    if report.details:
        out += ["## Details", "", "Tables too rich for rows, in report.json `details`:", ""]
        out += [f"- {_md(d.stage)} / {_md(d.pipeline) or '(all pipelines)'}: {md_code(d.name)}"
                for d in report.details] + [""]
    if report.parse_warnings:
        out += [f"## Parser warnings ({len(report.parse_warnings)} documents)", ""]
        out += [f"- {md_code(w.item)} {_md(w.pipeline)} ({w.count}): {_md('; '.join(w.messages))}"
                + (" …" if w.count > len(w.messages) else "") for w in report.parse_warnings] + [""]
    groups = failure_groups(report)
    out += [f"## Failures ({_failures_total(report)})", ""]
    if groups:
        out += ["By cause:", ""]
        out += [f"- {g.count} × {_md(', '.join(g.stages))}"
                + (f" ({_md(', '.join(g.pipelines))})" if g.pipelines else "")
                + f": {_md(g.example)}" + (f" (e.g. {md_code(g.example_item)})" if g.example_item else "")
                for g in groups] + ["", "Each failure" + (f" (the first {len(report.failures)}; every item's "
                                                          "rows are in measurements.parquet)"
                                                          if _failures_total(report) > len(report.failures)
                                                          else "") + ":", ""]
    out += [f"- {md_code(f.item) if f.item else '-'} {_md(', '.join(f.pipelines) or f.pipeline or '-')} "
            f"{_md(f.stage)}: {_md(f.message)}" for f in report.failures] or ["none"]
    return "\n".join(out) + "\n"


RUN_CONVENTIONS = {"min_span_coverage": "a chunk holds an evidence span when it covers at least this share of the "
                                        "span's characters"}
"""What each run setting of `ingestaudit.report.schema.RUN_SETTINGS_BY_STAGE` means, printed with its value."""


AUDITOR_CONVENTIONS = {("tables", "missing_table"): "a reference table the pipeline did not extract counts TEDS 0 "
                                                    "(zero) or is left out of the document's mean (skip)"}
"""Auditor options that change a stage's numbers and are printed with their value in the conventions line (read from
``report.config["auditors"][stage][option]``), with what they mean."""


def run_conventions(report: Report) -> list[str]:
    """One line per run setting that changes the numbers of a stage this report measured (the settings of
    `RUN_SETTINGS_BY_STAGE`: ``min_span_coverage`` for chunking and retrieval; the auditor options of
    `AUDITOR_CONVENTIONS`: ``missing_table`` for tables), with its value and meaning."""
    from ingestaudit.report.schema import RUN_SETTINGS_BY_STAGE

    run = report.config.get("run") if isinstance(report.config.get("run"), dict) else {}
    stages = set(distinct(report, "stage"))
    auditors = report.config.get("auditors") if isinstance(report.config.get("auditors"), dict) else {}
    out = []
    for (stage, key), meaning in AUDITOR_CONVENTIONS.items():
        opts = auditors.get(stage)
        if stage in stages and isinstance(opts, dict) and opts.get(key) is not None:  # older reports: absent
            out.append(f"convention ({stage}): {key} = {opts[key]}: {meaning}")
    if "retrieval" in stages and isinstance(report.config.get("auditor_options"), dict):  # absent: older reports
        from ingestaudit.metrics.layout import DEFAULT_THRESHOLD

        layout = report.config["auditor_options"].get("layout") or {}
        out.append(f"convention (retrieval): section evidence matches a heading at similarity >= "
                   f"{layout.get('threshold', DEFAULT_THRESHOLD)} ([auditor_options.layout] threshold, the layout "
                   "audit's heading matching); a label no reference line matches is label_unmatched")
    for key in sorted({k for st, keys in RUN_SETTINGS_BY_STAGE.items() if st in stages for k in keys}):
        if run.get(key) is None:  # a report written before the setting existed
            continue
        which = ", ".join(st for st, keys in RUN_SETTINGS_BY_STAGE.items() if key in keys and st in stages)
        out.append(f"convention ({which}): {key} = {run.get(key)}"
                   + (f": {RUN_CONVENTIONS[key]}" if key in RUN_CONVENTIONS else ""))
    return out


def _settings_markdown(report: Report) -> list[str]:
    """Every option that changes the numbers: pipeline settings, auditor options and the run conventions, printed
    beside the tables."""
    out = ["<details><summary>Settings that change the numbers</summary>", ""]
    out += [f"- {_md(line)}" for line in run_conventions(report)]
    for p in report.pipelines:
        out.append(f"- pipeline {md_code(p.name)} ({_md(p.kind)}):")
        out += [f"  - {_md(stage)}: {md_code(s.implementation)} {_md(s.version)} "
                f"{md_code(json.dumps(s.settings, sort_keys=True, ensure_ascii=False))}"
                for stage, s in p.stages.items()]
        out += [f"  - parser route {md_code(r.extension)}: {md_code(r.implementation)} {_md(r.version)} "
                f"{md_code(json.dumps(r.settings, sort_keys=True, ensure_ascii=False))}" for r in p.routes]
    for stage, opts in (report.config.get("auditors") or {}).items():
        out.append(f"- stage {md_code(stage)}: {md_code(json.dumps(opts, sort_keys=True, ensure_ascii=False))}")
    return out + ["", "</details>", ""]


def _paired_summary(report: Report) -> str:
    tests = report.paired_tests
    corrected = any(t.p_holm is not None for t in tests) or any("Holm" in t.method for t in tests)
    sig = sum(1 for t in tests if t.significant)
    if not corrected:
        return (f"{len(tests)} paired tests over items measured by both pipelines; {sig} significant at alpha = 0.05 "
                "(not corrected for multiple comparisons: a version-1 report).")
    family = sum(1 for t in tests if t.p_holm is not None)
    under = sum(1 for t in tests if t.underpowered)
    pairs = f" ({PAIRING})" if all(PAIRING in t.method for t in tests) else ""  # older reports: every two pipelines
    return (f"{len(tests)} paired tests{pairs} on each stage's key metric over the items both pipelines measured "
            f"(two-sided: a paired bootstrap of the micro value, resampling numerators and denominators, for micro "
            f"values; Wilcoxon signed-rank for means); {family} could reach significance and form "
            f"the Holm family (Tarone), {len(tests) - family} could not (too few items differ); {sig} significant "
            f"after Holm at alpha = 0.05; {under} underpowered (too few pairs for any outcome to reach the family's "
            "level: no difference found there means too few items to tell).")


def _paired_markdown(report: Report) -> list[str]:
    if not report.paired_tests:
        return []
    out = ["## Paired tests between pipelines", "", _paired_summary(report), "",
           "| class | metric | a | b | n | mean b−a | p | p (Holm) | b−a [interval] | verdict |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for t in report.paired_tests:
        verdict = ((f"significant: {_md(t.better)} better" if t.better else "significant" if t.better is None
                    else "significant, no winner: the test's side and the difference disagree") if t.significant
                   else "underpowered" if t.underpowered else "not significant")
        ci = (f"{g4(t.diff, True)} [{g4(t.diff_low, True)}, {g4(t.diff_high, True)}]" if t.diff_low is not None
              else g4(t.diff, True))
        name = _md(t.metric + (f"[{t.label}]" if t.label else ""))
        out.append(f"| {_md(t.doc_class)} | {name} | "
                   f"{_md(t.pipeline_a)} | {_md(t.pipeline_b)} | {t.n_pairs} | {t.mean_diff:+.4f} | {t.p_value:.4g} | "
                   f"{g4(t.p_holm) if t.p_holm is not None else '—'} | {ci} | {verdict} |")
    return out + [""]


# --- HTML ------------------------------------------------------------------------------------------------------------

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
"""No script of any kind; images only as data: URIs (the plots); inline styles only. (``frame-ancestors`` is
ignored in a ``<meta>`` policy, and browsers log a console warning about it, so it is left out.)"""

_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{ csp }}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ingestaudit report</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{background:#243447;color:#fff;padding:1em 2em}header h1{margin:0 0 .3em 0;font-size:1.4em}
header p{margin:.15em 0;font-size:.9em;opacity:.9}
nav{padding:.5em 2em;background:#e8edf3;font-size:.9em}nav a{margin-right:1.2em;color:#243447}
main{padding:0 2em 2em 2em}section{margin-top:1.5em}
h2{border-bottom:2px solid #243447;padding-bottom:.2em}h3{margin-bottom:.3em}
table{border-collapse:collapse;margin:.5em 0 1.2em 0;background:#fff;font-size:.88em}
td,th{border:1px solid #d0d7de;padding:4px 8px;vertical-align:top;text-align:left}
th{background:#f0f3f6}td.num{font-variant-numeric:tabular-nums}
td.best{background:#e6f4ea;font-weight:600}tr.common td{color:#555;font-style:italic}
small,.muted{color:#666}.state-error{color:#b42318}.state-ok{color:#1a7f37}.state-other{color:#9a6700}
.sig{color:#1a7f37;font-weight:600}.under{color:#9a6700}
img.plot{max-width:100%;background:#fff;border:1px solid #e1e4e8;margin:.3em 0}
details{margin:.3em 0}summary{cursor:pointer}pre{background:#f6f8fa;padding:.6em;overflow:auto;font-size:.85em}
.cards{display:flex;flex-wrap:wrap;gap:1em}.card{flex:1 1 520px}
section.lead{margin:0;padding:.6em 2em;background:#fff8e1;border-bottom:1px solid #e1d5a6}section.lead h2{border:0;margin:.2em 0}p.verdict{font-weight:600;margin:.2em 0}
</style></head><body>
<header><h1>ingestaudit report</h1>
{% for line in header %}<p>{{ line }}</p>{% endfor %}
<p>ingestaudit {{ tool_version }} · report schema {{ schema_version }}</p></header>
{% if verdict %}<section id="verdict" class="lead"><h2>Verdict</h2>
{% for line in verdict %}<p class="verdict">{{ line }}</p>{% endfor %}
<p class="muted">{{ verdict_legend }}</p></section>{% endif %}
<nav>{% if verdict %}<a href="#verdict">Verdict</a>{% endif %}<a href="#headline">Headline</a>{% if sweeps %}<a href="#sweeps">Sweeps</a>{% endif %}{% if trends %}<a href="#trends">Trends</a>{% endif %}<a href="#paired">Paired tests</a><a href="#rows">Every row</a><a href="#failures">Failures ({{ n_failures }})</a><a href="#settings">Settings</a>{% if questions %}<a href="#questions">Questions</a>{% endif %}<a href="#items">Items</a></nav>
<main>
<section id="headline"><h2>Headline per class</h2>
<p class="muted">{{ headline_legend }}</p>
{% for c in conventions %}<p class="muted convention">{{ c }}</p>{% endfor %}
{% for h in headlines %}<h3>{{ h.doc_class }} <small>{{ h.documents }} documents{% if h.questions %}, {{ h.questions }} questions{% endif %}</small></h3>
<div class="cards"><div class="card">
{% if h.rows %}<table><tr><th>key metric</th>{% for p in h.pipelines %}<th>{{ p }}</th>{% endfor %}</tr>
{% for r in h.rows %}<tr><td>{{ r.name }} {{ direction(r.metric, r.label) }}</td>
{% for c in r.cells %}<td class="num{% if c.best %} best{% endif %}">{% if c.value is none %}<span class="muted">{{ c.note or "—" }}</span>{% else %}{{ c.shown }}{% if c.best %} ★{% endif %}{% if c.low is not none %} <small>[{{ g4(c.low) }}, {{ g4(c.high) }}]</small>{% endif %} <small>n={{ c.n }}{% if c.note %}; {{ c.note }}{% endif %}</small>{% endif %}</td>{% endfor %}</tr>
{% if r.common_n is not none %}<tr class="common"><td>same {{ r.common_n }} item{{ "s" if r.common_n != 1 else "" }}</td>{% for v in r.common %}<td class="num">{{ g4(v) }}</td>{% endfor %}</tr>{% endif %}
{% endfor %}</table>{% endif %}
</div><div class="card">
{% if plots.interval[h.doc_class] %}<img class="plot" alt="key metrics of {{ h.doc_class }} with intervals" src="{{ plots.interval[h.doc_class] }}">{% endif %}
{% if plots.waterfall[h.doc_class] %}<img class="plot" alt="loss waterfall of {{ h.doc_class }}" src="{{ plots.waterfall[h.doc_class] }}">{% endif %}
{% for p, n in h.waterfall_errors.items() %}<p class="muted">waterfall, {{ p }}: {{ n }} question{{ "s" if n != 1 else "" }} errored, not counted</p>{% endfor %}
</div></div>
{% endfor %}</section>
{% if sweeps %}<section id="sweeps"><h2>Sweeps</h2>
{% for s in sweeps %}{% if s.uri %}<figure><img class="plot" alt="{{ s.title }}" src="{{ s.uri }}"><figcaption class="muted">{{ s.caption }}</figcaption></figure>{% else %}<p class="muted flat">{{ s.caption }}</p>{% endif %}{% endfor %}
</section>{% endif %}
{% if drift %}<section id="drift"><h2>Embedding drift</h2><pre>{{ drift }}</pre></section>{% endif %}
{% if index_notes %}<section id="index"><h2>Index audit</h2>
{% for pipe, warns, lines in index_notes %}<h3>{{ pipe }}</h3><ul>{% for x in warns %}<li><strong>warning</strong>: {{ x }}</li>{% endfor %}{% for x in lines %}<li>{{ x }}</li>{% endfor %}</ul>{% endfor %}
</section>{% endif %}
{% if trends %}<section id="trends"><h2>Trends</h2><p class="muted">{{ trends_caption }}</p>
{% for s in trends %}{% if s.uri %}<img class="plot" alt="{{ s.title }}" src="{{ s.uri }}">{% else %}<p class="muted flat">{{ s.caption }}</p>{% endif %}{% endfor %}
</section>{% endif %}
<section id="paired"><h2>Paired tests between pipelines</h2>
{% if paired %}<p>{{ paired_summary }}</p>
<table><tr><th>class</th><th>metric</th><th>a</th><th>b</th><th>n</th><th>b − a [interval]</th><th>p</th><th>p (Holm)</th><th>verdict</th><th>test</th></tr>
{% for t in paired %}<tr><td>{{ t.doc_class }}</td><td>{{ t.metric }}{% if t.label %}[{{ t.label }}]{% endif %}</td><td>{{ t.pipeline_a }}</td><td>{{ t.pipeline_b }}</td><td class="num">{{ t.n_pairs }}</td>
<td class="num">{{ g4(t.diff if t.diff is not none else t.mean_diff, true) }}{% if t.diff_low is not none %} <small>[{{ g4(t.diff_low, true) }}, {{ g4(t.diff_high, true) }}]</small>{% endif %}</td>
<td class="num">{{ g4(t.p_value) }}</td><td class="num">{{ g4(t.p_holm) if t.p_holm is not none else "—" }}</td>
<td>{% if t.significant %}<span class="sig">significant{% if t.better %}: {{ t.better }} better{% elif t.better is not none %}, no winner (the test's side and the difference disagree){% endif %}</span>{% elif t.underpowered %}<span class="under">underpowered</span>{% else %}not significant{% endif %}</td><td><small>{{ "bootstrap" if t.method.startswith("paired bootstrap") else "sign test" if t.method.startswith("sign") else "Wilcoxon" if t.method.startswith("Wilcoxon") else t.method }}</small></td></tr>
{% endfor %}</table>
<p class="muted">{% for m in paired_methods %}{{ m }}{% if not loop.last %}<br>{% endif %}{% endfor %}</p>{% else %}<p class="muted">One pipeline: no paired test.</p>{% endif %}
{% for q in question_tests %}<h3>Retrieval: paired tests over questions <small>({{ q.correction }}, alpha {{ q.alpha }})</small></h3>
<table><tr><th>class</th><th>metric</th><th>a</th><th>b</th><th>n</th><th>wins b / losses b / ties</th><th>mean b − a</th><th>sign p (Holm)</th><th>Wilcoxon p (Holm)</th><th>verdict</th></tr>
{% for t in q.tests %}<tr><td>{{ t["class"] }}</td><td>{{ t.metric }}</td><td>{{ t.pipeline_a }}</td><td>{{ t.pipeline_b }}</td><td class="num">{{ t.n }}</td><td class="num">{{ t.wins_b }} / {{ t.losses_b }} / {{ t.ties }}</td><td class="num">{{ g4(t.mean_diff, true) }}</td><td class="num">{{ g4(t.sign_p) }} ({{ g4(t.sign_p_holm) }})</td><td class="num">{{ g4(t.wilcoxon_p) }} ({{ g4(t.wilcoxon_p_holm) }})</td><td>{% if t.significant %}<span class="sig">significant</span>{% elif t.underpowered %}<span class="under">underpowered</span>{% else %}not significant{% endif %}</td></tr>
{% endfor %}</table>{% endfor %}
</section>
<section id="rows"><h2>Every row</h2><p class="muted">{{ legend }}</p>
{% for t in tables %}<details{% if loop.first %} open{% endif %}><summary><strong>{{ t.doc_class }}</strong> <small>{{ t.rows|length }} rows</small></summary>
<table><tr><th>metric</th>{% for p in t.pipelines %}<th>{{ p }}</th>{% endfor %}</tr>
{% for name, cells in t.rows %}<tr><td>{{ name }} {{ direction(name) }}</td>
{% for c in cells %}<td class="num">{{ c.value }}<br><small>{{ c.extra }}</small></td>{% endfor %}</tr>
{% endfor %}</table></details>{% endfor %}
</section>
<section id="failures"><h2>Failures ({{ n_failures }})</h2>
{% if groups %}<table><tr><th>count</th><th>stages</th><th>pipelines</th><th>example</th></tr>
{% for g in groups %}<tr><td class="num">{{ g.count }}</td><td>{{ g.stages|join(", ") }}</td><td>{{ g.pipelines|join(", ") }}</td><td><code>{{ g.example_item }}</code> {{ g.example }}</td></tr>{% endfor %}
</table>{% endif %}
<details><summary>Each failure</summary>
<ul>{% for f in failures %}<li><code>{{ f.item }}</code> {{ f.pipelines|join(", ") or f.pipeline or "-" }} {{ f.stage }}: {{ f.message }}</li>
{% else %}<li>none</li>{% endfor %}</ul></details>
</section>
{% if parse_warnings %}<section id="parse-warnings"><h2>Parser warnings ({{ parse_warnings|length }} documents)</h2>
<details><summary>Each document</summary><ul>{% for w in parse_warnings %}<li><code>{{ w.item }}</code> {{ w.pipeline }} ({{ w.count }}): {{ w.messages|join("; ") }}{% if w.count > w.messages|length %} …{% endif %}</li>{% endfor %}</ul></details>
</section>{% endif %}
<section id="settings"><h2>Settings</h2>
{% for p in pipelines %}<h3>pipeline {{ p.name }} <small>{{ p.kind }}</small></h3>
<table><tr><th>stage</th><th>implementation</th><th>version</th><th>settings</th></tr>
{% for stage, s in p.stages.items() %}<tr><td>{{ stage }}</td><td>{{ s.implementation }}</td><td>{{ s.version }}</td><td><code>{{ tojson(s.settings) }}</code></td></tr>{% endfor %}
{% for r in p.routes %}<tr><td>parser route {{ r.extension }}</td><td>{{ r.implementation }}</td><td>{{ r.version }}</td><td><code>{{ tojson(r.settings) }}</code></td></tr>{% endfor %}
</table>{% endfor %}
<h3>Auditor options</h3>
<table><tr><th>stage</th><th>options</th></tr>
{% for stage, opts in auditors %}<tr><td>{{ stage }}</td><td><code>{{ tojson(opts) }}</code></td></tr>{% endfor %}
</table>
<details><summary>Whole configuration</summary><pre>{{ config_json }}</pre></details>
<details><summary>Environment</summary><pre>{{ env_json }}</pre></details>
</section>
{% if questions %}<section id="questions"><h2>Questions</h2><p class="muted">{{ questions_caption }}</p>
<table><tr><th>question</th><th>class</th>{% for p in questions_pipelines %}<th>{{ p }}</th>{% endfor %}</tr>
{% for q in questions %}<tr><td><code>{{ q.id }}</code> <small>{{ q.question }}</small></td><td>{{ q["class"] }}</td>{% for c in q.cells %}<td class="num">{% if c is none %}—{% elif c == 0 %}<span class="state-error">MISS</span>{% else %}<span class="state-ok">HIT @{{ c }}</span>{% endif %}</td>{% endfor %}</tr>
{% endfor %}</table></section>{% endif %}
<section id="items"><h2>Items</h2><p class="muted">{{ items_caption }}</p>
{% for it in items %}<details><summary><code>{{ it.item }}</code> <small>{{ it.kind }} · {{ it.doc_class }} · {{ it.summary }}</small></summary>
<table><tr><th>metric</th>{% for p in it.pipelines %}<th>{{ p }}</th>{% endfor %}</tr>
{% for name, cells in it.rows %}<tr><td>{{ name }}</td>{% for c in cells %}<td class="num">{% if c is none %}{% elif c.state == "ok" %}{{ g4(c.value) }}{% if c.counts %} <small>{{ c.counts }}</small>{% endif %}{% else %}<span class="{{ 'state-error' if c.state == 'error' else 'state-other' }}">{{ c.state }}</span>{% if c.reason %} <small>{{ c.reason }}</small>{% endif %}{% endif %}</td>{% endfor %}</tr>
{% endfor %}</table></details>
{% endfor %}</section>
</main></body></html>
"""


def _plots(report: Report, hls: Sequence[Headline]) -> dict[str, dict[str, str]]:
    from ingestaudit.report import plots

    interval: dict[str, str] = {}
    waterfall: dict[str, str] = {}
    for h in hls:
        panels = [(r.name, direction(r.metric, r.label),
                   [(p, c.value, c.low, c.high, c.best) for p, c in zip(h.pipelines, r.cells)]) for r in h.rows]
        svg = plots.interval_plot(f"{h.doc_class}: key metrics, value and interval per pipeline", panels)
        interval[h.doc_class] = plots.data_uri(svg) if svg else ""
        svg = plots.waterfall_plot(f"{h.doc_class}: where the evidence was lost (k = {h.waterfall_k})",
                                   h.waterfall) if h.waterfall else ""
        waterfall[h.doc_class] = plots.data_uri(svg) if svg else ""
    return {"interval": interval, "waterfall": waterfall}


def _sweeps(report: Report) -> list[dict[str, str]]:
    """Sweep curves: recall@k against the swept option (retrieval ``sweep`` detail) and the index's recall against
    queries per second (or the search knob when no timing was recorded)."""
    from ingestaudit.report import plots

    out = []
    for d in report.details:
        if d.stage == "retrieval" and d.name == "sweep" and isinstance(d.data, list):
            for curve in d.data:
                if not isinstance(curve, dict):
                    continue
                pts = []
                ticks = []
                for i, p in enumerate(curve.get("points", [])):
                    if p.get("recall") is None:
                        continue
                    try:
                        x = float(p["value"])
                    except (TypeError, ValueError):
                        x = float(i)
                        ticks.append((x, str(p["value"])))
                    pts.append((x, float(p["recall"]), None, None))
                svg = plots.curve_plot(f"{curve.get('base', '')}: {curve.get('metric', '')} against "
                                       f"{curve.get('option', '')}", str(curve.get("option", "")),
                                       str(curve.get("metric", "")), [(str(curve.get("base", "")), pts)],
                                       xticks=ticks)
                if pts:
                    out.append({"title": f"sweep {curve.get('base')} {curve.get('option')}",
                                "uri": plots.data_uri(svg) if svg else "",
                                "caption": (f"best {curve.get('option')} = {curve.get('best')}; smallest value not "
                                            f"significantly worse = {curve.get('smallest_not_worse')} (sign test, "
                                            f"Holm, alpha {curve.get('alpha', 0.05)})" if svg else
                                            _flat(f"{curve.get('base', '')}: {curve.get('metric', '')}", pts,
                                                  f"at every {curve.get('option', '')}"))})
    out += _index_sweeps(report)
    return out


def _index_sweeps(report: Report) -> list[dict[str, str]]:
    """The index's recall at its largest k (mean per query when recorded, as its operating point uses, else the
    micro value) per sweep setting, against queries per second when the run's wall-clock timings are at hand
    (``timings.json`` beside report.json: ``timings[<pipeline>]["index"]["cells"]``, one ``{"label", "qps"}`` per
    sweep cell), else against the search parameter; log x, the target recall as a line, each point labelled with
    its setting. Speed depends on the machine, so a page drawn with timings is not byte-identical from run to
    run (report.json stays so)."""
    from ingestaudit.report import plots

    found, target, knob, kind, k = [], None, "", "recall", None
    for d in report.details:
        if d.stage != "index" or d.name != "sweep" or not isinstance(d.data, dict):
            continue
        knob = str(d.data.get("knob") or knob)
        timing = (report.timings.get(d.pipeline) or {}).get("index") if isinstance(report.timings, dict) else None
        qps = {c.get("label"): c.get("qps") for c in (timing or {}).get("cells", []) if isinstance(c, dict)}
        op = next((o.data for o in report.details if o.stage == "index" and o.name == "operating_point"
                   and o.pipeline == d.pipeline and isinstance(o.data, dict)), {})
        if isinstance(op.get("target"), (int, float)):
            target = float(op["target"])
        cells = []  # (search parameter value, qps or None, recall, label)
        for cell in d.data.get("cells", []):
            unf = cell.get("unfiltered", {}) if isinstance(cell, dict) else {}
            ks = sorted(int(x.split("@")[1]) for x in unf if x.startswith("recall@") and x.split("@")[1].isdigit())
            if not ks or not isinstance(unf[f"recall@{ks[-1]}"], dict):
                continue
            k, rec_cell = ks[-1], unf[f"recall@{ks[-1]}"]
            rec = rec_cell.get("mean_per_query")
            if isinstance(rec, (int, float)):
                kind = "mean per-query recall"
            else:
                rec = rec_cell.get("value")
            speed = qps.get(cell.get("label"))
            if isinstance(rec, (int, float)) and isinstance(cell.get("value"), (int, float)):
                cells.append((float(cell["value"]), float(speed) if isinstance(speed, (int, float)) else None,
                              float(rec), str(cell.get("label", ""))))
        if cells:
            found.append((d.pipeline, cells))
    if not found:
        return []
    by_qps = all(c[1] is not None and c[1] > 0 for _, cells in found for c in cells)
    # against qps each point is labelled with its setting's value; against the knob the x axis already says it
    series = [(name, [((c[1], c[2], None, None, c[3].split("=", 1)[-1]) if by_qps else (c[0], c[2], None, None))
                      for c in cells]) for name, cells in found]
    log_x = all(p[0] > 0 for _, pts in series for p in pts)
    scale = " (log scale)" if log_x else ""
    xlabel = (f"queries per second, one thread{scale}; wall clock, depends on the machine" if by_qps
              else f"{knob or 'search parameter'}{scale}")
    ylabel = f"index {kind}@{k}" if k else f"index {kind}"
    svg = plots.curve_plot("index recall against " + ("queries per second" if by_qps else knob or "the search parameter"),
                           xlabel, ylabel,
                           series, log_x=log_x, sort_x=not by_qps,
                           hline=(target, f"target {target:g}") if target is not None else None,
                           note=("speed measured on the machine that ran the audit (timings.json): compare "
                                 "settings, not machines") if by_qps else "", x_is_value=by_qps)
    if not svg:
        points = [p for _, pts in series for p in pts]
        return [{"title": "index sweep", "uri": "", "caption": _flat(ylabel, points,
                                                                    f"at every {knob or 'search parameter'}")}]
    caption = (f"one point per setting of {knob or 'the search parameter'}"
               + (" (labelled with its value)" if by_qps else "") + "; recall against exact search"
               + (f"; the line is the target recall {target:g} of the operating point" if target is not None else "")
               + ("; queries per second from timings.json (wall clock, machine-dependent)" if by_qps
                  else "; no timings.json beside the report: drawn against the search parameter"))
    return [{"title": "index sweep", "uri": plots.data_uri(svg), "caption": caption}]


def _trend_plots(report: Report, history: Any) -> list[dict[str, str]]:
    from ingestaudit.report import plots

    if not history:
        return []
    runs, series = history
    labels = [(r.label or r.time[:10]) for r in runs]
    out = []
    by_metric: dict[str, list[Any]] = {}
    for t in series:
        if t.doc_class == ALL_CLASSES:
            by_metric.setdefault(t.name, []).append(t)
    order = [p.name for p in report.pipelines]  # the report's order, so a pipeline keeps its colour across plots
    for name, ts in by_metric.items():
        ts = sorted(ts, key=lambda t: (order.index(t.pipeline) if t.pipeline in order else len(order), t.pipeline))
        data = [(t.pipeline, [(float(i), v, None, None) for i, v in enumerate(t.values) if v is not None]) for t in ts]
        ticks = [(float(i), lab) for i, lab in enumerate(labels)]
        if len(ticks) > 12:
            step = (len(ticks) + 11) // 12
            ticks = ticks[::step]
        svg = plots.curve_plot(f"{name} {direction(name)} over the last {len(runs)} runs (all classes)", "run",
                               name, data, xticks=ticks)
        if any(pts for _, pts in data):
            out.append({"title": f"trend {name}", "uri": plots.data_uri(svg) if svg else "",
                        "caption": "" if svg else _flat(f"{name} {direction(name)}",
                                                        [p for _, pts in data for p in pts],
                                                        f"in each of the last {len(runs)} runs")})
    return out


def _flat(what: str, points: Sequence[tuple[Any, ...]], where: str) -> str:
    """The line that stands for a plot not drawn because its values are all equal (`ingestaudit.report.plots.
    constant`): ``"<what>: <value> <where> (a flat line: not drawn)"``; ``points`` are ``(x, y, ...)``."""
    return f"{what}: {g4(points[0][1])} {where} (a flat line: not drawn)"


def _drill_choice(report: Report) -> tuple[list[str], int]:
    """The items the HTML drill-down shows, failing ones first (each group in canonical order: kind, then id), at
    most `DRILL_PER_CLASS` of each class and `MAX_DRILL_ITEMS` in all, and how many items the report has; one
    streaming pass over the kind, item and class columns."""
    failing = {f.item for f in report.failures} | set(distinct(report, "item", states=("error",)))
    first: dict[str, list[str]] = {}
    rest: dict[str, list[str]] = {}
    n = 0
    for _, item, doc_class in item_keys(report, with_class=True):
        n += 1
        group = (first if item in failing else rest).setdefault(doc_class, [])
        if len(group) < DRILL_PER_CLASS:
            group.append(item)
    chosen = []
    for cls in sorted(set(first) | set(rest)):  # a class's failing items fill its share first
        chosen += (first.get(cls, []) + rest.get(cls, []))[:DRILL_PER_CLASS]
    chosen.sort(key=lambda item: item not in failing)  # stable: failing items first, each group as read
    return chosen[:MAX_DRILL_ITEMS], n


def _drill_items(report: Report) -> tuple[list[dict[str, Any]], str]:
    from ingestaudit.report.tables import waterfall_k

    pipelines = [p.name for p in report.pipelines]
    chosen, n_items = _drill_choice(report)
    items: dict[str, dict[str, Any]] = {}
    wk = waterfall_k(report)
    for m in measurement_rows(report, items=set(chosen)):
        if wk is not None and m.metric.startswith("retrieval.outcome@") and m.metric != f"retrieval.outcome@{wk}":
            continue  # the waterfall's outcomes at its own cutoff only (9 rows per k): the others are in the store
        it = items.setdefault(m.item, {"item": m.item, "kind": m.item_kind, "doc_class": m.doc_class, "cells": {},
                                       "states": {}})
        name = m.metric + (f"[{m.label}]" if m.label else "")
        counts = (f"{g4(m.numerator)}/{g4(m.denominator)}" if m.numerator is not None and m.denominator is not None
                  else "")
        reason = str(m.detail.get("reason") or m.detail.get("message") or "") if m.state != "ok" else ""
        it["cells"].setdefault(name, {})[m.pipeline] = {"state": m.state, "value": m.value, "counts": counts,
                                                         "reason": " ".join(reason.split())[:200]}
        it["states"][m.state] = it["states"].get(m.state, 0) + 1
    failing = {f.item for f in report.failures}
    ordered = sorted(items.values(), key=lambda it: (it["item"] not in failing and not it["states"].get("error"),
                                                     it["kind"], it["item"]))
    out = []
    for it in ordered[:MAX_DRILL_ITEMS]:
        rows = [(name, [by.get(p) for p in pipelines]) for name, by in sorted(it["cells"].items())]
        summary = ", ".join(f"{n} {s}" for s, n in sorted(it["states"].items()))
        out.append({"item": it["item"], "kind": it["kind"], "doc_class": it["doc_class"], "summary": summary,
                    "pipelines": pipelines, "rows": rows})
    shown = len(out)
    only = f"; a question's waterfall outcomes at k = {wk} only" if wk is not None else ""
    caption = (f"{n_items} items; each opens to its rows per pipeline (failing items first, at most "
               f"{DRILL_PER_CLASS} per class{only})" + (f"; {shown} are shown, {n_items - shown} more in "
                                                       "measurements.parquet" if n_items > shown else ""))
    return out, caption


def _question_records(report: Report) -> dict[str, list[dict[str, Any]]]:
    """Per pipeline (report order) the question records of `ingestaudit.report.questions.question_records`, from
    the report's retrieval.rr rows (none without questions)."""
    found = question_records(measurement_rows(report, metrics=("retrieval.rr",), item_kind="question"))
    return {p.name: found[p.name] for p in report.pipelines if p.name in found}


def _html_value(value: Any) -> Any:
    """Every value the HTML template prints, before jinja2 escapes it: control characters made visible (they are
    invalid in HTML, and a terminal that shows the page's source would obey them); newlines and tabs kept."""
    return terminal_text(value, keep_newlines=True) if isinstance(value, str) else value


def render_html(report: Report, *, history: Any = None) -> str:
    """The report as one self-contained HTML page: no script, a Content-Security-Policy forbidding scripts, plots as
    SVG data: images, every user-supplied string escaped (jinja2 autoescape).

    Args:
        history: ``(runs, trends)`` from `ingestaudit.report.history.trends` to draw trend plots.
    """
    from jinja2 import Environment

    def tojson(v: Any) -> str:
        return json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)

    hls = headlines(report)
    question_tests = [d.data for d in report.details if d.stage == "retrieval" and d.name == "paired_question_tests"
                      and isinstance(d.data, dict) and isinstance(d.data.get("tests"), list)]
    items, items_caption = _drill_items(report)
    found = _question_records(report)
    trends = _trend_plots(report, history)
    env = Environment(autoescape=True, finalize=_html_value)
    return env.from_string(_HTML).render(
        csp=CSP, header=_header(report), tool_version=report.tool.version, schema_version=report.schema_version,
        verdict=_verdict(report), verdict_legend=_verdict_legend(report) if report.verdict else "",
        headline_legend=_headline_legend(report), conventions=run_conventions(report), headlines=hls,
        plots=_plots(report, hls), sweeps=_sweeps(report),
        index_notes=_index_overviews(report), drift="\n".join(_drift_lines(report)[2:]),
        trends=trends, trends_caption=(f"the last {len(history[0])} runs of the history, headline values over all "
                                       "classes" if history else ""),
        paired=report.paired_tests, paired_methods=sorted({t.method for t in report.paired_tests}),
        paired_summary=_paired_summary(report) if report.paired_tests else "",
        question_tests=question_tests, legend=LEGEND, tables=class_tables(report), groups=failure_groups(report),
        failures=report.failures, n_failures=_failures_total(report), pipelines=report.pipelines,
        parse_warnings=report.parse_warnings,
        auditors=sorted((report.config.get("auditors") or {}).items()),
        config_json=json.dumps(report.config, indent=1, sort_keys=True, ensure_ascii=False, default=str),
        env_json=json.dumps(report.environment, indent=1, sort_keys=True, ensure_ascii=False, default=str),
        items=items, items_caption=items_caption, questions_pipelines=list(found),
        questions=question_table(found, MAX_DRILL_ITEMS),
        questions_caption=(f"each question's first hit in the top results per pipeline (misses first; the first "
                           f"{MAX_DRILL_ITEMS}); every result in questions/<pipeline>.jsonl"), direction=direction, g4=g4, tojson=tojson)
