"""One document (reference parser) and one question about it: the smallest corpus that runs every default stage,
for the start-up and timings tests."""

from __future__ import annotations

import json
from pathlib import Path

PUMP = ("The pump runs at forty litres per hour. It is quiet.\n\n"
        "The valve opens slowly and closes fast when the pressure drops.")


def write_tiny_corpus(corpus: Path) -> Path:
    """Write ``corpus``: ``docs/c/a.txt`` (read by the reference parser, which returns the truth text), its truth
    `PUMP`, and ``questions.jsonl`` with q1, whose evidence is `PUMP`'s first sentence [0, 39). Returns ``corpus``."""
    (corpus / "docs" / "c").mkdir(parents=True)
    (corpus / "truth" / "c").mkdir(parents=True)
    (corpus / "docs" / "c" / "a.txt").write_text("x\n")
    (corpus / "truth" / "c" / "a.txt").write_text(PUMP)
    (corpus / "questions.jsonl").write_text(json.dumps({"id": "q1", "question": "How fast does the pump run?",
                                                        "relevant": [{"doc": "c/a", "start": 0, "end": 39}]}) + "\n")
    return corpus
