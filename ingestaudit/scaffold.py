"""``ingestaudit init``: write a corpus layout with one example of each file."""

from __future__ import annotations

import json
from pathlib import Path

# The reference text is all visible text in reading order, one line per block (the convention of fixtures/demo).
_TEXT = ("Manage cookie settings here\nQuarterly report\nRevenue rose by 4% in the third quarter.\n"
         "Quarter Revenue\nQ3 +4%\nContact: Ana Lima, ana.lima@example.com\n")
_TRUTH = {
    "headings": [{"level": 1, "text": "Quarterly report"}],
    "checks": [
        {"type": "present", "text": "Revenue rose by 4%", "max_diffs": 0},
        {"type": "absent", "text": "Accept all cookies", "max_diffs": 2},
        {"type": "order", "before": "Quarterly report", "after": "Revenue rose", "max_diffs": 0},
    ],
    "tables": ["<table><tr><td>Quarter</td><td>Revenue</td></tr><tr><td>Q3</td><td>+4%</td></tr></table>"],
    "boilerplate": {"with": ["Revenue rose by 4% in the third quarter"], "without": ["Manage cookie settings here"]},
    "pii": [{"start": 118, "end": 126, "type": "PERSON"}, {"start": 128, "end": 148, "type": "EMAIL_ADDRESS"}],
    "language": "en",
    "dup_group": "q3-report",
}
_HTML = ("<!doctype html><html lang=\"en\"><body><nav>Manage cookie settings here</nav><h1>Quarterly report</h1>"
         "<p>Revenue rose by 4% in the third quarter.</p>"
         "<table><tr><td>Quarter</td><td>Revenue</td></tr><tr><td>Q3</td><td>+4%</td></tr></table>"
         "<p>Contact: Ana Lima, ana.lima@example.com</p></body></html>\n")
_CONFIG = """# ingestaudit configuration (all keys optional); see ingestaudit/config.py
[run]
parsers = ["unstructured"]   # --parser on the command line replaces this list
seed = 0
workers = 1
doc_timeout_s = 300
"""


def write_example_corpus(root: Path) -> list[Path]:
    """Create ``root`` with ``docs/``, ``truth/`` (a ``.txt`` and a ``.json`` of every key) and ``ingestaudit.toml``.

    Returns:
        The written paths, sorted.

    Raises:
        FileExistsError: ``root`` exists and is not empty (nothing is overwritten).
    """
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise FileExistsError(f"{root} exists and is not empty; init never overwrites")
    files = {
        root / "docs" / "reports" / "q3.html": _HTML,
        root / "truth" / "reports" / "q3.txt": _TEXT,
        root / "truth" / "reports" / "q3.json": json.dumps(_TRUTH, indent=2) + "\n",
        root / "ingestaudit.toml": _CONFIG,
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return sorted(files)
