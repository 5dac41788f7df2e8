"""The README's main command shows the retrieval stage and the loss waterfall in the terminal headline (issue 10,
"Real data": "on the demo corpus, the README's main command shows the retrieval stage and the waterfall"). Run the
cheap way: one parser and the retrieval stage only; the headline's waterfall line must match report.json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo"


@pytest.mark.slow  # embeds the demo's chunks and questions with the real model (cached after the first run)
def test_the_demo_headline_shows_retrieval_and_the_waterfall(tmp_path):
    out = tmp_path / "r"
    res = CliRunner().invoke(app, ["run", str(DEMO), "--parser", "pymupdf", "--stage", "retrieval", "--out",
                                   str(out)])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("class: __all__")))
    block = " ".join(lines[start:start + 8])
    assert re.search(r"retrieval\.recall@10 ↑\s+\S+ n=\d+/16", block), block
    shown = dict(re.findall(r"([a-z_]+) (\d+)%", block.split("waterfall @10 · pymupdf:", 1)[1]))
    report = json.loads((out / "report.json").read_text())
    shares = {s["label"]: s["micro"] for s in report["summary"] if s["metric"] == "retrieval.outcome@10"
              and s["doc_class"] == "__all__" and s["micro"]}
    assert shown and {k: int(v) for k, v in shown.items()} == {k: round(100 * v) for k, v in shares.items()}
    assert sum(shares.values()) == pytest.approx(1.0)
