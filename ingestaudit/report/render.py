"""Renderers: views of a `Report`. Each takes the report and returns a string (the terminal one prints)."""

from __future__ import annotations

from ingestaudit.report.schema import Report
from ingestaudit.report.tables import class_tables, direction

LEGEND = ("Cells: micro (macro) over documents in state ok; [CI] and n = documents aggregated; "
          "other states counted after n; 'corpus of N docs' = one value computed over the class. "
          "↓ lower is better, ↑ higher is better, →1 best at 1.")
TERMINAL_LEGEND = LEGEND.replace("[CI] and n", "n").replace("; 'corpus", " (intervals: report.md); 'corpus")


def _header(report: Report) -> list[str]:
    pipelines = ", ".join(p.name for p in report.pipelines)
    docs = ", ".join(f"{c}: {n}" for c, n in report.corpus.documents.items())
    questions = f"; {report.corpus.questions} questions" if report.corpus.questions else ""
    return [f"corpus {report.corpus.path} ({docs}{questions}); fingerprint {report.corpus.fingerprint[:12]}",
            f"pipelines: {pipelines}; seed {report.config.get('run', {}).get('seed')}"]


def render_markdown(report: Report) -> str:
    """The report as GitHub-flavoured Markdown: header, legend, one table per class, failures."""
    out = ["# ingestaudit report", "", *(f"- {line}" for line in _header(report)), "", LEGEND, ""]
    out += _settings_markdown(report)
    for t in class_tables(report):
        out += [f"## {t.doc_class}", "", "| metric | " + " | ".join(t.pipelines) + " |",
                "|---|" + "---|" * len(t.pipelines)]
        for name, cells in t.rows:
            out.append(f"| {name} {direction(name)} | "
                       + " | ".join(f"{c.value}<br>{c.extra}" if c.value else "" for c in cells) + " |")
        out.append("")
    out += _paired_markdown(report)
    if report.details:
        out += ["## Details", "", "Tables too rich for rows, in report.json `details`:", ""]
        out += [f"- {d.stage} / {d.pipeline}: `{d.name}`" for d in report.details] + [""]
    out += [f"## Failures ({len(report.failures)})", ""]
    out += [f"- `{f.item}` {f.pipeline or '-'} {f.stage}: {f.message}" for f in report.failures] or ["none"]
    return "\n".join(out) + "\n"


def _settings_markdown(report: Report) -> list[str]:
    """Every option that changes the numbers: pipeline settings and auditor options, printed beside the tables."""
    import json

    out = ["<details><summary>Settings that change the numbers</summary>", ""]
    for p in report.pipelines:
        out.append(f"- pipeline `{p.name}` ({p.kind}):")
        out += [f"  - {stage}: `{s.implementation}` {s.version} `{json.dumps(s.settings, sort_keys=True)}`"
                for stage, s in p.stages.items()]
    for stage, opts in (report.config.get("auditors") or {}).items():
        out.append(f"- stage `{stage}`: `{json.dumps(opts, sort_keys=True)}`")
    return out + ["", "</details>", ""]


def _paired_markdown(report: Report) -> list[str]:
    tests = [t for t in report.paired_tests if t.significant]
    if not report.paired_tests:
        return []
    out = ["## Paired tests between pipelines", "",
           f"{len(report.paired_tests)} Wilcoxon signed-rank tests over documents measured by both pipelines; "
           f"{len(tests)} significant at alpha = 0.05 (not corrected for multiple comparisons)"
           + (":" if tests else "."), ""]
    if tests:
        out += ["| class | metric | a | b | n | mean b−a | p |", "|---|---|---|---|---|---|---|"]
        out += [f"| {t.doc_class} | {t.metric}{f'[{t.label}]' if t.label else ''} | {t.pipeline_a} | {t.pipeline_b} "
                f"| {t.n_pairs} | {t.mean_diff:+.4f} | {t.p_value:.4g} |" for t in tests]
    return out + [""]


def render_terminal(report: Report, console) -> None:
    """Print one rich table per class to ``console`` (a ``rich.console.Console``), rows grouped by stage, then the
    failure count. Intervals are left to the Markdown/HTML views to keep the table narrow."""
    from rich.markup import escape
    from rich.table import Table

    for line in _header(report):
        console.print(line, highlight=False, markup=False)
    for t in class_tables(report, digits=3):
        table = Table(title=escape(f"class: {t.doc_class}"), title_justify="left", show_lines=False)
        table.add_column("metric", no_wrap=True)
        for p in t.pipelines:
            table.add_column(escape(p))
        stage = None
        for name, cells in t.rows:
            if name.split(".", 1)[0] != stage:
                stage = name.split(".", 1)[0]
                table.add_section()
                table.add_row(f"[bold]{escape(stage)}[/bold]")
            short = name.split(".", 1)[1]
            table.add_row(escape(f" {short} {direction(name)}"),
                          *(f"{escape(c.value)}\n[dim]{escape(c.extra.split('] ', 1)[-1])}[/dim]" if c.value else ""
                            for c in cells))
        console.print(table)
    console.print(TERMINAL_LEGEND, style="dim", highlight=False, markup=False)
    if report.failures:
        console.print(f"{len(report.failures)} failure(s); see report.json 'failures' or report.md", style="yellow")


_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ingestaudit report</title>
<style>body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:2em}
td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}small{color:#666}</style></head><body>
<h1>ingestaudit report</h1>
<ul>{% for line in header %}<li>{{ line }}</li>{% endfor %}</ul>
<p><small>{{ legend }}</small></p>
{% for t in tables %}<h2>{{ t.doc_class }}</h2>
<table><tr><th>metric</th>{% for p in t.pipelines %}<th>{{ p }}</th>{% endfor %}</tr>
{% for name, cells in t.rows %}<tr><td>{{ name }} {{ direction(name) }}</td>
{% for c in cells %}<td>{{ c.value }}<br><small>{{ c.extra }}</small></td>{% endfor %}</tr>
{% endfor %}</table>{% endfor %}
<h2>Failures ({{ failures|length }})</h2>
<ul>{% for f in failures %}<li><code>{{ f.item }}</code> {{ f.pipeline or "-" }} {{ f.stage }}: {{ f.message }}</li>
{% else %}<li>none</li>{% endfor %}</ul>
</body></html>
"""


def render_html(report: Report) -> str:
    """The report as a standalone HTML page (jinja2, autoescaped: user-supplied names cannot inject markup)."""
    from jinja2 import Environment

    env = Environment(autoescape=True)
    return env.from_string(_HTML).render(header=_header(report), legend=LEGEND, tables=class_tables(report),
                                         direction=direction, failures=report.failures)
