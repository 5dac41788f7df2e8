"""Start-up paid only when needed (issue 27 point 1): a run whose every embedding is in the cache never imports
sentence-transformers or torch, neither in the main process nor in the worker process that runs the document.

Each run is a fresh interpreter (a module imported by an earlier test would hide an import); the worker's modules
are read by wrapping the task function the executor sends (`_probe.After`), after the task ran. Every default
stage runs, the chunking auditor's spaCy sentencizer included (spaCy's thinc would import torch: it is imported
with torch hidden, `ingestaudit.metrics.chunking._sentencizer`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _tiny_corpus import write_tiny_corpus

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "sentence_transformers", "transformers")
OPTIONAL = ("ingestaudit.parsers.tesseract_parser", "pytesseract", "spacy", "presidio_analyzer", "lingua",
            "unstructured", "torch", "sentence_transformers", "transformers")
"""What an extraction-only run of a born-digital PDF has no use for."""

PROBE = f'''
import json, os, sys
HEAVY = {tuple(dict.fromkeys(HEAVY + OPTIONAL))!r}

def heavy():
    return sorted(m for m in HEAVY if m in sys.modules)

class After:
    """The executor's task function, then this process's heavy modules appended to ``out``."""
    def __init__(self, fn, out):
        self.fn, self.out = fn, out
    def __call__(self, task):
        try:
            return self.fn(task)
        finally:
            with open(self.out, "a") as fh:
                fh.write(json.dumps({{"pid": os.getpid(), "heavy": heavy()}}) + "\\n")
'''

DRIVER = '''
import json, sys
from pathlib import Path
import _probe
import ingestaudit.executors as executors

real = executors.make_executor

class Spy:
    def __init__(self, inner): self.inner = inner
    def __getattr__(self, name): return getattr(self.inner, name)
    def __enter__(self): self.inner.__enter__(); return self
    def __exit__(self, *exc): return self.inner.__exit__(*exc)
    def map(self, fn, tasks, timeout_s): return self.inner.map(_probe.After(fn, sys.argv[3]), tasks, timeout_s)

executors.make_executor = lambda *a, **k: Spy(real(*a, **k))
from ingestaudit.config import load_config
from ingestaudit.corpus import discover
from ingestaudit.pipeline import resolve
from ingestaudit.runner import run

if __name__ == "__main__":
    cfg = load_config(Path(sys.argv[1]), trusted=True)
    cfg.run.executor, cfg.run.workers = sys.argv[2], 1  # every default stage: the questions turn the chain on
    if len(sys.argv) > 5:
        cfg.run.stages = sys.argv[5].split(",")
    found = discover(Path(sys.argv[4]))
    pipes = resolve(configured=cfg.pipelines, selected=[], parsers=[], outputs=None, sweeps=[],
                    default_parsers=list(cfg.run.parsers), limit=cfg.limits.pipelines)
    report = run(found, pipes, cfg)
    values = {f"{r.metric}/{r.doc_class}": r.macro for r in report.summary
              if r.metric.startswith("retrieval.") and r.macro is not None}
    print(json.dumps({"main": _probe.heavy(), "retrieval_values": values}))
'''


def _run(tmp_path: Path, executor: str, *stages: str,
         corpus: str = "corpus") -> tuple[list[str], list[dict], dict[str, float]]:
    """One audit in a fresh interpreter; returns the main process's heavy modules, each task's worker report and
    the retrieval summary's values (metric/class -> macro)."""
    worker_log = tmp_path / f"worker-{executor}-{corpus}.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    out = subprocess.run([sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "cfg.toml"), executor,
                          str(worker_log), str(tmp_path / corpus), *([",".join(stages)] if stages else [])],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    workers = [json.loads(line) for line in worker_log.read_text().splitlines()] if worker_log.exists() else []
    return result["main"], workers, result["retrieval_values"]


def test_a_run_whose_embeddings_are_all_cached_imports_neither_sentence_transformers_nor_torch(tmp_path: Path):
    (tmp_path / "_probe.py").write_text(PROBE)
    (tmp_path / "driver.py").write_text(DRIVER)
    corpus = tmp_path / "corpus"
    write_tiny_corpus(corpus)
    (tmp_path / "cfg.toml").write_text(f'[run]\ncache_dir = "{tmp_path / "cache"}"\n\n'
                                       '[pipelines.p]\nparser = "reference"\n')
    # cold: the model loads (in the main process with the serial executor), which shows the probe sees imports
    main, _, values = _run(tmp_path, "serial")
    assert "sentence_transformers" in main and "torch" in main and values.get("retrieval.recall@1/__all__") == 1.0
    # warm, with a worker process: every text is in the cache, nothing heavy anywhere
    main, workers, values_warm = _run(tmp_path, "process")
    assert values_warm == values
    assert len(workers) == 1 and workers[0]["pid"] != os.getpid()
    assert set(main) & set(HEAVY) == set() and set(workers[0]["heavy"]) & set(HEAVY) == set()


def test_an_extraction_run_imports_no_ocr_nlp_or_model_package(tmp_path: Path):
    """``--stage extraction`` on one born-digital PDF of the demo (the default parsers), with a worker process:
    neither ingestaudit's Tesseract wrapper nor spaCy, Presidio, lingua, unstructured or torch is imported."""
    (tmp_path / "_probe.py").write_text(PROBE)
    (tmp_path / "driver.py").write_text(DRIVER)
    demo = ROOT / "fixtures" / "demo"
    corpus = tmp_path / "pdf"
    (corpus / "docs" / "born_digital").mkdir(parents=True)
    (corpus / "truth" / "born_digital").mkdir(parents=True)
    for src, dst in ((demo / "docs/born_digital/pump_field_note.pdf", corpus / "docs/born_digital/note.pdf"),
                     (demo / "truth/born_digital/pump_field_note.txt", corpus / "truth/born_digital/note.txt")):
        dst.write_bytes(src.read_bytes())
    (tmp_path / "cfg.toml").write_text(f'[run]\ncache_dir = "{tmp_path / "cache"}"\n')
    main, workers, _ = _run(tmp_path, "process", "extraction", corpus="pdf")
    assert len(workers) >= 1
    assert main == [] and all(w["heavy"] == [] for w in workers), (main, workers)


def test_the_chunking_sentencizer_imports_neither_torch_nor_presidio_and_splits_as_spacy_does():
    """The chunking auditor's sentencizer (`ingestaudit.metrics.chunking.sentence_spans`) in a fresh interpreter:
    spaCy without torch (thinc's optional layers) and without the Presidio factory entry point; its sentences are
    those of spaCy's usual ``spacy.blank("en")`` + sentencizer (the oracle, built afterwards in the same process),
    and torch still imports afterwards."""
    text = "Dr. Smith went to e.g. Paris. He left! Did he? Yes.\n\nA heading\nwith no stop"
    code = f'''
import json, sys
from ingestaudit.metrics.chunking import sentence_spans
spans = sentence_spans({text!r})
heavy = sorted(m for m in ("torch", "transformers", "presidio_analyzer") if m in sys.modules)
import spacy
nlp = spacy.blank("en"); nlp.add_pipe("sentencizer")
oracle = [[s.start_char, s.end_char] for s in nlp({text.split(chr(10) * 2)[0]!r}).sents]
import torch
print(json.dumps([spans, heavy, oracle, torch.__version__ != ""]))
'''
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-3000:]
    spans, heavy, oracle, torch_imports = json.loads(out.stdout.strip().splitlines()[-1])
    assert heavy == [] and torch_imports
    # the first paragraph as spaCy splits it; the blank line then ends a sentence, trailing blanks trimmed
    assert [list(s) for s in spans[:4]] == oracle == [[0, 29], [30, 38], [39, 46], [47, 51]]
    assert [list(s) for s in spans[4:]] == [[53, 75]]  # "A heading\nwith no stop"
