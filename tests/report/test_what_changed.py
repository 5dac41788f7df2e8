"""What changed between base and head (`ingestaudit.report.changes`): a routed parser's routes are compared, changes
are sorted by importance (key steps' implementations first) and none is cut from the printed line."""

from __future__ import annotations

from _reportkit import build, cer_rows

from ingestaudit.report.changes import change_lines
from ingestaudit.report.compare import compare_reports
from ingestaudit.report.schema import ParserRoute, StageInfo


def _report(pdf_parser: str, retriever: str, size: int, seed: int):
    report = build(cer_rows("p", "c", [0.1] * 6), seed=seed)
    pipe = report.pipelines[0]
    pipe.stages["parser"] = StageInfo(implementation="routed", version="1", settings={})
    pipe.routes = [ParserRoute(extension="pdf", implementation=pdf_parser, version="1", settings={}),
                   ParserRoute(extension="txt", implementation="reference", version="1", settings={})]
    pipe.stages["retriever"] = StageInfo(implementation=retriever, version="1", settings={})
    pipe.stages["chunker"] = StageInfo(implementation="recursive", version="1",
                                       settings={f"opt{i}": size + i for i in range(9)})
    pipe.stages["cleaner"] = StageInfo(implementation="none", version="1", settings={"mode": size})
    return report


def test_a_route_change_is_listed_and_key_steps_come_first_and_nothing_is_cut():
    base, head = _report("pymupdf", "dense", 500, 0), _report("unstructured", "bm25", 4000, 7)
    changes = compare_reports(base, head).changes
    paths = [c["path"] for c in changes]
    # tier 0: key steps' implementations in KEY_STEPS order (parser routes, then retriever); tier 2: the chunker's 9
    # settings (sorted by path); tier 3: the cleaner's setting; tier 5: the run setting. 1 + 1 + 9 + 1 + 1 = 13.
    assert paths == (["parser.routes.pdf.use", "retriever.use"] + [f"chunker.opt{i}" for i in range(9)]
                     + ["cleaner.mode", "run.seed"])
    assert (changes[0]["base"], changes[0]["head"]) == ("pymupdf", "unstructured")
    (line,) = change_lines(changes, {})
    assert line.startswith("what changed: parser.routes.pdf.use pymupdf -> unstructured; retriever.use dense -> "
                           "bm25; chunker.opt0 500 -> 4000;")
    assert line.endswith("cleaner.mode 500 -> 4000; run.seed 0 -> 7") and "…" not in line
    assert line.count(" -> ") == 13


def test_changes_are_sorted_whatever_order_they_come_in():
    shuffled = [{"path": "run.seed", "base": 0, "head": 7, "pipeline": ""},
                {"path": "chunker.size", "base": 1, "head": 2, "pipeline": "p"},
                {"path": "index.use", "base": "hnsw", "head": "ivf", "pipeline": "p"},
                {"path": "embedder.version", "base": "1", "head": "2", "pipeline": "p"},
                {"path": "retriever.use", "base": "dense", "head": "bm25", "pipeline": "p"}]
    (line,) = change_lines(shuffled, {})
    assert line == ("what changed: retriever.use dense -> bm25; index.use hnsw -> ivf; chunker.size 1 -> 2; "
                    "embedder.version 1 -> 2; run.seed 0 -> 7")
