"""Renderers: views of a `Report`. Each takes the report and returns a string (the terminal one prints).

* terminal: by default a headline per class (each stage's key metric per pipeline with interval and n, the best
  pipeline marked where significant, the loss waterfall), failures grouped by cause, and where the full report is;
  ``verbose`` prints every row. Plain text laid out for the given width.
* Markdown (``report.md``) and HTML (``report.html``): the headline, paired tests with their correction, every
  row, every setting, failures; the HTML adds plots and a drill-down per item. The HTML page carries no script and
  a Content-Security-Policy that forbids any; every user-supplied string is escaped (jinja2 autoescape).
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

from ingestaudit.report.schema import ALL_CLASSES, Report
from ingestaudit.report.tables import Headline, class_tables, direction, failure_groups, g4, headlines

LEGEND = ("Cells: micro (macro) over documents in state ok; [CI] and n = documents aggregated; "
          "other states counted after n; 'corpus of N docs' = one value computed over the class. "
          "↓ lower is better, ↑ higher is better, →1 best at 1.")
HEADLINE_LEGEND = ("value = micro over items in state ok (else the mean) [95% interval] n = items ok (/ all); ★ = "
                   "best pipeline, its paired test against every other significant after Holm; 'same N items' = "
                   "the values over the items every pipeline measured; ↓ lower is better, ↑ higher is better")
MAX_DRILL_ITEMS = 500  # items with a <details> drill-down in the HTML page; the rest are in report.json


def terminal_width(default: int = 100) -> int:
    """``COLUMNS`` when set, else the terminal's width when stdout is a terminal, else ``default``."""
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    if sys.stdout.isatty():
        return shutil.get_terminal_size((default, 24)).columns
    return default


def _header(report: Report) -> list[str]:
    pipelines = ", ".join(p.name for p in report.pipelines)
    docs = ", ".join(f"{c}: {n}" for c, n in report.corpus.documents.items())
    questions = f"; {report.corpus.questions} questions" if report.corpus.questions else ""
    return [f"corpus {report.corpus.path} ({docs}{questions}); fingerprint {report.corpus.fingerprint[:12]}",
            f"pipelines: {pipelines}; seed {report.config.get('run', {}).get('seed')}"]


# --- plain-text grid -------------------------------------------------------------------------------------------------

def _grid(first: Sequence[list[str]], columns: Sequence[Sequence[list[str]]], heads: Sequence[str],
          first_head: str, width: int, first_max: int | None = None) -> list[str]:
    """Lay out rows of multi-line cells: ``first`` (row labels) and ``columns`` (one list of cells per column).
    Columns that do not fit ``width`` go to a further block with the labels repeated."""
    def w(cells: Sequence[list[str]], head: str) -> int:
        return max([len(head)] + [len(line) for c in cells for line in c])

    first_w = min(w(first, first_head), first_max or max(24, width * 2 // 5))
    widths = [w(col, h) for col, h in zip(columns, heads)]
    blocks: list[list[int]] = [[]]
    used = first_w
    for j, cw in enumerate(widths):
        if blocks[-1] and used + 2 + cw > width:
            blocks.append([])
            used = first_w
        blocks[-1].append(j)
        used += 2 + cw
    out: list[str] = []
    for b, cols in enumerate(blocks):
        if b:
            out.append("")
        out.append(_fit(first_head, first_w) + "".join("  " + _fit(heads[j], widths[j]) for j in cols).rstrip())
        for i, label in enumerate(first):
            height = max([len(label)] + [len(columns[j][i]) for j in cols])
            for k in range(height):
                text = label[k] if k < len(label) else ""
                line = _fit(text, first_w) + "".join(
                    "  " + _fit(columns[j][i][k] if k < len(columns[j][i]) else "", widths[j]) for j in cols)
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
    """One class: a row per stage's key metric (rows where no pipeline has a value are named in one line), a
    column per pipeline; each cell ``value ★ n=k/N`` and its interval, on one line when the width allows, else the
    interval on a second line; then the waterfall."""
    what = (f"{h.documents} document{'s' * (h.documents != 1)}"
            + (f", {h.questions} question{'s' * (h.questions != 1)}" if h.questions else ""))
    out = [f"class: {h.doc_class} — {what}"]
    rows = [r for r in h.rows if any(c.value is not None for c in r.cells)]
    empty = [r.name for r in h.rows if r not in rows]
    if rows:
        def layout(one_line: bool) -> list[str]:
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
            return _grid(labels, cols, h.pipelines, "key metric", width - 2, first_max=24)

        grid = layout(True)
        if len(grid) > len(rows) + sum(r.common_n is not None for r in rows) + 1:  # did not fit: split columns
            grid = layout(False)
        out += [("  " + line).rstrip() for line in grid]
    if empty:
        out += _wrap("  no value in this class: " + ", ".join(empty), width)
    for pipe, shares in h.waterfall:
        parts = [f"{o} {s * 100:.0f}%" for o, s in shares if s > 0]
        text = f"waterfall @{h.waterfall_k} · {pipe}: " + " · ".join(parts)
        out += textwrap.wrap(text, width=max(20, width - 2), initial_indent="  ", subsequent_indent="      ")
    return out


def _failure_lines(report: Report, width: int) -> list[str]:
    groups = failure_groups(report)
    if not groups:
        return []
    total = sum(g.count for g in groups)
    out = [f"failures: {total} in {len(groups)} cause{'s' * (len(groups) != 1)} (report.json 'failures' lists each)"]
    for g in groups[:8]:
        where = ", ".join(g.stages) + (f" ({', '.join(g.pipelines)})" if g.pipelines else "")
        out.append(_clip(f"  {g.count} × {where}: {g.example}" + (f" — e.g. {g.example_item}" if g.example_item
                                                                  else ""), width))
    if len(groups) > 8:
        out.append(f"  … and {len(groups) - 8} more causes")
    return out


def render_terminal_text(report: Report, *, width: int = 100, verbose: bool = False,
                         out_dir: Path | None = None, written: Sequence[str] = ()) -> str:
    """The terminal view as text (see the module docstring)."""
    lines = [w for line in _header(report) for w in _wrap(line, width)]
    if verbose:
        lines.append(_clip(LEGEND, width))
        for t in class_tables(report, digits=4):
            lines += ["", f"class: {t.doc_class}"]
            labels = [[f"{name} {direction(name)}"] for name, _ in t.rows]
            cols = [[[c.value, c.extra] if c.value else [""] for c in (cells[j] for _, cells in t.rows)]
                    for j in range(len(t.pipelines))]
            lines += [("  " + line).rstrip() for line in _grid(labels, cols, t.pipelines, "metric", width - 2)]
    else:
        for h in headlines(report):
            lines += [""] + _headline_block(h, width)
        lines += [""] + textwrap.wrap(HEADLINE_LEGEND, width=width)
    fails = _failure_lines(report, width)
    if fails:
        lines += [""] + fails
    if out_dir is not None:
        main_file = next((f for f in ("report.html", "report.md", "report.json") if f in written), "report.json")
        others = [f for f in written if f != main_file]
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
    if console is None:
        print(text)
    else:
        console.print(text, highlight=False, markup=False, soft_wrap=True)


# --- Markdown --------------------------------------------------------------------------------------------------------

def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report) -> str:
    """The report as GitHub-flavoured Markdown: header, headline per class, paired tests, one full table per class,
    settings, failures."""
    out = ["# ingestaudit report", "", *(f"- {line}" for line in _header(report)), ""]
    out += ["## Headline", "", HEADLINE_LEGEND, ""]
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
            out.append(f"- waterfall @{h.waterfall_k} `{_md(pipe)}`: "
                       + ", ".join(f"{o} {s * 100:.1f}%" for o, s in shares))
        if h.waterfall:
            out.append("")
    out += ["## Every row", "", LEGEND, ""]
    out += _settings_markdown(report)
    for t in class_tables(report):
        out += [f"### {_md(t.doc_class)}", "", "| metric | " + " | ".join(_md(p) for p in t.pipelines) + " |",
                "|---|" + "---|" * len(t.pipelines)]
        for name, cells in t.rows:
            out.append(f"| {_md(name)} {direction(name)} | "
                       + " | ".join(f"{c.value}<br>{c.extra}" if c.value else "" for c in cells) + " |")
        out.append("")
    out += _paired_markdown(report)
    if report.details:
        out += ["## Details", "", "Tables too rich for rows, in report.json `details`:", ""]
        out += [f"- {d.stage} / {_md(d.pipeline) or '(all pipelines)'}: `{d.name}`" for d in report.details] + [""]
    groups = failure_groups(report)
    out += [f"## Failures ({len(report.failures)})", ""]
    if groups:
        out += ["By cause:", ""]
        out += [f"- {g.count} × {', '.join(g.stages)}"
                + (f" ({_md(', '.join(g.pipelines))})" if g.pipelines else "")
                + f": {_md(g.example)}" + (f" (e.g. `{_md(g.example_item)}`)" if g.example_item else "")
                for g in groups] + ["", "Each failure:", ""]
    out += [f"- `{f.item}` {f.pipeline or '-'} {f.stage}: {_md(f.message)}" for f in report.failures] or ["none"]
    return "\n".join(out) + "\n"


def _settings_markdown(report: Report) -> list[str]:
    """Every option that changes the numbers: pipeline settings and auditor options, printed beside the tables."""
    out = ["<details><summary>Settings that change the numbers</summary>", ""]
    for p in report.pipelines:
        out.append(f"- pipeline `{p.name}` ({p.kind}):")
        out += [f"  - {stage}: `{s.implementation}` {s.version} `{json.dumps(s.settings, sort_keys=True)}`"
                for stage, s in p.stages.items()]
    for stage, opts in (report.config.get("auditors") or {}).items():
        out.append(f"- stage `{stage}`: `{json.dumps(opts, sort_keys=True)}`")
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
    return (f"{len(tests)} paired tests on each stage's key metric over the items both pipelines measured (sign "
            f"test for micro values, Wilcoxon signed-rank for means); {family} could reach significance and form "
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
        verdict = ("significant" if t.significant else "underpowered" if t.underpowered
                   else "not significant")
        ci = (f"{g4(t.diff, True)} [{g4(t.diff_low, True)}, {g4(t.diff_high, True)}]" if t.diff_low is not None
              else g4(t.diff, True))
        out.append(f"| {_md(t.doc_class)} | {t.metric}{f'[{_md(t.label)}]' if t.label else ''} | "
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
</style></head><body>
<header><h1>ingestaudit report</h1>
{% for line in header %}<p>{{ line }}</p>{% endfor %}
<p>ingestaudit {{ tool_version }} · report schema {{ schema_version }}</p></header>
<nav><a href="#headline">Headline</a>{% if sweeps %}<a href="#sweeps">Sweeps</a>{% endif %}{% if trends %}<a href="#trends">Trends</a>{% endif %}<a href="#paired">Paired tests</a><a href="#rows">Every row</a><a href="#failures">Failures ({{ n_failures }})</a><a href="#settings">Settings</a><a href="#items">Items</a></nav>
<main>
<section id="headline"><h2>Headline per class</h2>
<p class="muted">{{ headline_legend }}</p>
{% for h in headlines %}<h3>{{ h.doc_class }} <small>{{ h.documents }} documents{% if h.questions %}, {{ h.questions }} questions{% endif %}</small></h3>
<div class="cards"><div class="card">
{% if h.rows %}<table><tr><th>key metric</th>{% for p in h.pipelines %}<th>{{ p }}</th>{% endfor %}</tr>
{% for r in h.rows %}<tr><td>{{ r.name }} {{ direction(r.metric, r.label) }}</td>
{% for c in r.cells %}<td class="num{% if c.best %} best{% endif %}">{% if c.value is none %}<span class="muted">{{ c.note or "—" }}</span>{% else %}{{ g4(c.value) }}{% if c.best %} ★{% endif %}{% if c.low is not none %} <small>[{{ g4(c.low) }}, {{ g4(c.high) }}]</small>{% endif %} <small>n={{ c.n }}{% if c.note %}; {{ c.note }}{% endif %}</small>{% endif %}</td>{% endfor %}</tr>
{% if r.common_n is not none %}<tr class="common"><td>same {{ r.common_n }} item{{ "s" if r.common_n != 1 else "" }}</td>{% for v in r.common %}<td class="num">{{ g4(v) }}</td>{% endfor %}</tr>{% endif %}
{% endfor %}</table>{% endif %}
</div><div class="card">
{% if plots.interval[h.doc_class] %}<img class="plot" alt="key metrics of {{ h.doc_class }} with intervals" src="{{ plots.interval[h.doc_class] }}">{% endif %}
{% if plots.waterfall[h.doc_class] %}<img class="plot" alt="loss waterfall of {{ h.doc_class }}" src="{{ plots.waterfall[h.doc_class] }}">{% endif %}
</div></div>
{% endfor %}</section>
{% if sweeps %}<section id="sweeps"><h2>Sweeps</h2>
{% for s in sweeps %}<figure><img class="plot" alt="{{ s.title }}" src="{{ s.uri }}"><figcaption class="muted">{{ s.caption }}</figcaption></figure>{% endfor %}
</section>{% endif %}
{% if trends %}<section id="trends"><h2>Trends</h2><p class="muted">{{ trends_caption }}</p>
{% for s in trends %}<img class="plot" alt="{{ s.title }}" src="{{ s.uri }}">{% endfor %}
</section>{% endif %}
<section id="paired"><h2>Paired tests between pipelines</h2>
{% if paired %}<p>{{ paired_summary }}</p>
<table><tr><th>class</th><th>metric</th><th>a</th><th>b</th><th>n</th><th>b − a [interval]</th><th>p</th><th>p (Holm)</th><th>verdict</th><th>test</th></tr>
{% for t in paired %}<tr><td>{{ t.doc_class }}</td><td>{{ t.metric }}{% if t.label %}[{{ t.label }}]{% endif %}</td><td>{{ t.pipeline_a }}</td><td>{{ t.pipeline_b }}</td><td class="num">{{ t.n_pairs }}</td>
<td class="num">{{ g4(t.diff if t.diff is not none else t.mean_diff, true) }}{% if t.diff_low is not none %} <small>[{{ g4(t.diff_low, true) }}, {{ g4(t.diff_high, true) }}]</small>{% endif %}</td>
<td class="num">{{ g4(t.p_value) }}</td><td class="num">{{ g4(t.p_holm) if t.p_holm is not none else "—" }}</td>
<td>{% if t.significant %}<span class="sig">significant</span>{% elif t.underpowered %}<span class="under">underpowered</span>{% else %}not significant{% endif %}</td><td><small>{{ "sign test" if t.method.startswith("sign") else "Wilcoxon" if t.method.startswith("Wilcoxon") else t.method }}</small></td></tr>
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
<ul>{% for f in failures %}<li><code>{{ f.item }}</code> {{ f.pipeline or "-" }} {{ f.stage }}: {{ f.message }}</li>
{% else %}<li>none</li>{% endfor %}</ul></details>
</section>
<section id="settings"><h2>Settings</h2>
{% for p in pipelines %}<h3>pipeline {{ p.name }} <small>{{ p.kind }}</small></h3>
<table><tr><th>stage</th><th>implementation</th><th>version</th><th>settings</th></tr>
{% for stage, s in p.stages.items() %}<tr><td>{{ stage }}</td><td>{{ s.implementation }}</td><td>{{ s.version }}</td><td><code>{{ tojson(s.settings) }}</code></td></tr>{% endfor %}
</table>{% endfor %}
<h3>Auditor options</h3>
<table><tr><th>stage</th><th>options</th></tr>
{% for stage, opts in auditors %}<tr><td>{{ stage }}</td><td><code>{{ tojson(opts) }}</code></td></tr>{% endfor %}
</table>
<details><summary>Whole configuration</summary><pre>{{ config_json }}</pre></details>
<details><summary>Environment</summary><pre>{{ env_json }}</pre></details>
</section>
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
                if svg:
                    out.append({"title": f"sweep {curve.get('base')} {curve.get('option')}", "uri": plots.data_uri(svg),
                                "caption": f"best {curve.get('option')} = {curve.get('best')}; smallest value not "
                                           f"significantly worse = {curve.get('smallest_not_worse')} (sign test, "
                                           f"Holm, alpha {curve.get('alpha', 0.05)})"})
    series = []
    by_qps = True
    for d in report.details:
        if d.stage != "index" or d.name != "sweep" or not isinstance(d.data, dict):
            continue
        timing = next((t.data for t in report.details if t.stage == "index" and t.name == "timings"
                       and t.pipeline == d.pipeline and isinstance(t.data, dict)), None)
        qps = {c.get("label"): c.get("qps") for c in (timing or {}).get("cells", []) if isinstance(c, dict)}
        pts = []
        for cell in d.data.get("cells", []):
            unf = cell.get("unfiltered", {}) if isinstance(cell, dict) else {}
            ks = sorted(int(k.split("@")[1]) for k in unf if k.startswith("recall@") and k.split("@")[1].isdigit())
            if not ks:
                continue
            rec = unf[f"recall@{ks[-1]}"].get("value")
            x = qps.get(cell.get("label"))
            if x is None:
                by_qps = False
                x = cell.get("value")
            if rec is not None and isinstance(x, (int, float)):
                pts.append((float(x), float(rec), None, None))
        if pts:
            series.append((d.pipeline, pts))
    if series:
        xlabel = "queries per second (one thread, wall clock)" if by_qps else "search parameter"
        svg = plots.curve_plot("index: recall of the approximate index against " + xlabel.split(" (")[0], xlabel,
                               "index recall@k", series, log_x=by_qps)
        if svg:
            out.append({"title": "index sweep", "uri": plots.data_uri(svg),
                        "caption": "one point per setting of the search parameter; recall against exact search"})
    return out


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
    for name, ts in by_metric.items():
        data = [(t.pipeline, [(float(i), v, None, None) for i, v in enumerate(t.values) if v is not None]) for t in ts]
        ticks = [(float(i), lab) for i, lab in enumerate(labels)]
        if len(ticks) > 12:
            step = (len(ticks) + 11) // 12
            ticks = ticks[::step]
        svg = plots.curve_plot(f"{name} {direction(name)} over the last {len(runs)} runs (all classes)", "run",
                               name, data, xticks=ticks)
        if svg:
            out.append({"title": f"trend {name}", "uri": plots.data_uri(svg)})
    return out


def _drill_items(report: Report) -> tuple[list[dict[str, Any]], str]:
    pipelines = [p.name for p in report.pipelines]
    items: dict[str, dict[str, Any]] = {}
    for m in report.measurements:
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
    caption = (f"{len(items)} items; each opens to its rows per pipeline (failing items first)"
               + (f"; the first {MAX_DRILL_ITEMS} are shown, every item is in report.json"
                  if len(items) > MAX_DRILL_ITEMS else ""))
    return out, caption


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
    trends = _trend_plots(report, history)
    env = Environment(autoescape=True)
    return env.from_string(_HTML).render(
        csp=CSP, header=_header(report), tool_version=report.tool.version, schema_version=report.schema_version,
        headline_legend=HEADLINE_LEGEND, headlines=hls, plots=_plots(report, hls), sweeps=_sweeps(report),
        trends=trends, trends_caption=(f"the last {len(history[0])} runs of the history, headline values over all "
                                       "classes" if history else ""),
        paired=report.paired_tests, paired_methods=sorted({t.method for t in report.paired_tests}),
        paired_summary=_paired_summary(report) if report.paired_tests else "",
        question_tests=question_tests, legend=LEGEND, tables=class_tables(report), groups=failure_groups(report),
        failures=report.failures, n_failures=len(report.failures), pipelines=report.pipelines,
        auditors=sorted((report.config.get("auditors") or {}).items()),
        config_json=json.dumps(report.config, indent=1, sort_keys=True, ensure_ascii=False, default=str),
        env_json=json.dumps(report.environment, indent=1, sort_keys=True, ensure_ascii=False, default=str),
        items=items, items_caption=items_caption, direction=direction, g4=g4, tojson=tojson)
