#!/usr/bin/env python
"""Build ingestaudit corpora from the third-party labelled data in ../shared/data (read in place, never copied).

Usage::

    python scripts/build_real_corpora.py OUT [--data DIR]

writes OUT/olmocr-bench, OUT/dinglehopper and OUT/docling (each must not exist yet, or be empty) and prints, for each,
the summary and the command that audits it. DIR defaults to $INGESTAUDIT_SHARED_DATA or ../shared/data next to the
project. Documents are symbolic links into DIR, so keep DIR where it is. Exit code 2 when DIR or a data set is
missing or a destination is not empty.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {"olmocr-bench": "olmocr-bench-sample", "dinglehopper": "dinglehopper", "docling": "docling-pdf"}
PARSERS = {"olmocr-bench": "--parser pymupdf ", "dinglehopper": "", "docling": "--parser pymupdf "}


def main(argv: list[str] | None = None) -> int:
    """Build the three corpora; returns the process exit code."""
    sys.path.insert(0, str(ROOT))
    from ingestaudit.importers import ImporterError, import_corpus

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="folder that receives one corpus per data set")
    ap.add_argument("--data", type=Path,
                    default=Path(os.environ.get("INGESTAUDIT_SHARED_DATA", ROOT.parent / "shared" / "data")))
    args = ap.parse_args(argv)
    if not args.data.is_dir():
        print(f"error: {args.data}: no such folder (pass --data DIR)", file=sys.stderr)
        return 2
    for kind, folder in SOURCES.items():
        dest = args.out / kind
        try:
            summary = import_corpus(kind, args.data / folder, dest)
        except ImporterError as exc:
            print(f"error: {kind}: {exc}", file=sys.stderr)
            return 2
        print(f"== {kind}")
        print("\n".join(summary.lines()))
        print(f"audit: ingestaudit run {dest} {PARSERS[kind]}--outputs {dest / 'outputs'} --out {dest}-report\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
