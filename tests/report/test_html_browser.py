"""The HTML report in a real headless Chromium (Debian's ``chromium``, installed by scripts/setup.sh): user text with
``<script>`` stays text, no script runs, nothing is logged to the console, the plots are there, and a screenshot is
saved for the developer to look at. Skipped when Chromium is absent."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from _reportkit import Row, build

from ingestaudit.report.render import render_html
from ingestaudit.report.schema import Failure, StageDetail

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCREENSHOT = Path("/tmp/ingestaudit-report-screenshot.png")
PAYLOAD = "<script>document.title='PWNED'</script>"
OUTCOMES = ["lost_in_parsing", "lost_in_cleaning", "split_by_chunking", "excluded_by_filter", "missed_by_ranking",
            "missed_by_ann", "retrieved"]


def hostile_report():
    """A bake-off whose document id, class folder and pipeline name carry a script tag."""
    evil_class = f"inv{PAYLOAD}"
    evil_pipe = f"mine{PAYLOAD}"
    rows = []
    for i in range(12):
        item = f"{evil_class}/d{i:02d}" if i else f"{evil_class}/{PAYLOAD}"
        v = 0.02 + 0.004 * i
        rows += [Row(item, evil_class, "pymupdf", "extraction.cer_norm", v, v * 100, 100),
                 Row(item, evil_class, evil_pipe, "extraction.cer_norm", v + 0.03, (v + 0.03) * 100, 100),
                 Row(item, evil_class, "pymupdf", "tables.teds", 0.9 - 0.01 * i),
                 Row(item, evil_class, evil_pipe, "tables.teds", 0.85 - 0.01 * i)]
    for q in range(8):
        for pipe, lost in (("pymupdf", {0: "lost_in_parsing", 1: "split_by_chunking"}), (evil_pipe, {0: "missed_by_ann"})):
            outcome = lost.get(q, "retrieved")
            for o in OUTCOMES:
                rows.append(Row(f"q{q}", evil_class, pipe, "retrieval.outcome@10", float(o == outcome),
                                float(o == outcome), 1.0, label=o, kind="question"))
    details = [StageDetail(pipeline=p, stage="retrieval", name="waterfall",
                           data={"k": 10, "outcomes": OUTCOMES, "by_class": {}}) for p in ("pymupdf", evil_pipe)]
    failures = [Failure(item=f"{evil_class}/{PAYLOAD}", pipeline=evil_pipe, stage="parse",
                        message=f"ParserError: bad token {PAYLOAD}")]
    return build(rows, pipelines=["pymupdf", evil_pipe], details=details, failures=failures, questions=8)


def test_user_text_is_escaped_in_the_page():
    page = render_html(hostile_report())
    assert "<script" not in page.lower()
    assert "&lt;script&gt;document.title=&#39;PWNED&#39;&lt;/script&gt;" in page
    assert re.search(r'<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:;',
                     page.replace("&#39;", "'"))


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (scripts/setup.sh installs Debian's chromium)")
def test_headless_chromium_renders_the_page_without_running_a_script(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render_html(hostile_report()), encoding="utf-8")
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
            "--enable-logging=stderr", "--v=0", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*base, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert "<title>ingestaudit report</title>" in html and "PWNED</title>" not in html
    assert not re.search(r"<script\b", html, re.I)  # the payload is text, not an element
    assert html.count("&lt;script&gt;") >= 3  # document id, class and pipeline names, shown as text
    assert len(re.findall(r'<img class="plot"[^>]+src="data:image/svg\+xml;base64,', html)) >= 3
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []  # no CSP violation, no error
    shot = subprocess.run([*base, "--hide-scrollbars", "--window-size=1400,2400", f"--screenshot={SCREENSHOT}",
                           page.as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert SCREENSHOT.stat().st_size > 20_000


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (scripts/setup.sh installs Debian's chromium)")
def test_a_raw_script_injected_into_the_page_is_blocked_by_its_csp(tmp_path):
    """Escaping aside, the page's own Content-Security-Policy stops a script that got in raw: Chromium refuses to run
    it and logs the violation. The same injection into the page without its CSP meta does run (the control)."""
    page = render_html(hostile_report())
    raw = ("<script>document.title='PWNED'</script>"
           "<img src=\"data:,\" onerror=\"document.body.setAttribute('data-pwned', '1')\">")
    injected = page.replace("</body>", raw + "</body>")
    assert injected.count("<script>") == 1
    control = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", injected)
    assert control != injected
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
            "--disable-background-networking", "--enable-logging=stderr", "--v=0"]
    out = {}
    for name, text in (("csp", injected), ("control", control)):
        path = tmp_path / f"{name}.html"
        path.write_text(text, encoding="utf-8")
        out[name] = subprocess.run([*base, f"--user-data-dir={tmp_path / name}", "--dump-dom", path.as_uri()],
                                   capture_output=True, text=True, timeout=120)
        assert out[name].returncode == 0, out[name].stderr[-2000:]
    assert "<title>ingestaudit report</title>" in out["csp"].stdout and 'data-pwned="1"' not in out["csp"].stdout
    violations = [line for line in out["csp"].stderr.splitlines()
                  if ":CONSOLE" in line and "Content Security Policy" in line and "blocked" in line]
    assert len(violations) >= 2, out["csp"].stderr[-3000:]  # the inline script and the inline event handler
    assert "<title>PWNED</title>" in out["control"].stdout and 'data-pwned="1"' in out["control"].stdout
