"""Dask runs two tasks per worker process, on two threads: the process-wide sections of a task must not break the
other thread (issue: thread safety under Dask). Both tests pause one thread inside its section with events, so the
interleaving is the same on every run (no sleeps)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WAIT_S = 60  # a deadlock guard only: every wait is released by the other thread


class FakeTorch:
    """``get_num_threads``/``set_num_threads`` of a process whose torch starts with ``n`` threads."""

    def __init__(self, n: int) -> None:
        self.n = n

    def get_num_threads(self) -> int:
        return self.n

    def set_num_threads(self, n: int) -> None:
        self.n = n


def test_two_threads_interleaving_keep_one_torch_thread_inside_and_restore_the_first_count(monkeypatch):
    """A enters (8 -> 1), B enters, A leaves while B still embeds, B leaves. Each section saved and restored its own
    count: B embedded with 8 threads after A left, and the process ended with B's saved 1."""
    import ingestaudit.document_steps as steps
    from ingestaudit.stages.embedders.base import EMBED_THREADS, embed_threads

    torch = FakeTorch(8)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(steps, "_IN_WORKER", False)
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, int] = {}

    def a() -> None:  # the embedder's forward pass (`SentenceTransformerEmbedder.embed`)
        with embed_threads(torch):
            a_in.set()
            assert b_in.wait(WAIT_S)
            seen["a"] = torch.n
        a_out.set()

    def b() -> None:  # a task's embedding step (`embedding_threads`)
        assert a_in.wait(WAIT_S)
        with steps.embedding_threads():
            b_in.set()
            assert a_out.wait(WAIT_S)
            seen["b_after_a_left"] = torch.n

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S)
    assert seen == {"a": EMBED_THREADS, "b_after_a_left": EMBED_THREADS} and EMBED_THREADS == 1
    assert torch.n == 8  # the count before the first section


def test_a_worker_keeps_the_embedding_thread_count(monkeypatch):
    import ingestaudit.document_steps as steps

    torch = FakeTorch(4)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(steps, "_IN_WORKER", True)
    with steps.embedding_threads():
        assert torch.n == 1
    assert torch.n == 1


def test_import_torch_in_another_thread_while_spacy_is_imported_without_torch(tmp_path):
    """Thread A is paused inside ``import spacy`` (a stand-in ``spacy`` package first on the path, whose import waits
    for thread B) with torch hidden (`_import_spacy_without_torch`); thread B then imports torch: it gets torch
    (``sys.modules["torch"] = None`` made it raise ImportError in every thread), while torch stays hidden from A. A
    fresh interpreter: neither spaCy nor torch imported yet. (A finder cannot pause A: Python calls finders under
    its global import lock, which would block B's import as well.)"""
    stand_in = tmp_path / "spacy"
    stand_in.mkdir()
    (stand_in / "__init__.py").write_text(f"""
import sys
main = sys.modules["__main__"]
try:
    import torch  # as thinc does
    TORCH_IN_A = True
except ImportError:
    TORCH_IN_A = False
main.inside.set()
main.go.wait({WAIT_S})
""", encoding="utf-8")
    code = f'''
import json, sys, threading
from ingestaudit.metrics import chunking
assert not any(m in sys.modules for m in ("torch", "spacy", "thinc"))
inside, go = threading.Event(), threading.Event()
out = {{}}

def a():
    out["torch_in_a"] = chunking._import_spacy_without_torch().TORCH_IN_A

def b():
    inside.wait({WAIT_S})
    try:
        import torch
        out["torch_in_b"] = type(torch).__name__ + " " + torch.__name__
    except ImportError as exc:
        out["torch_in_b"] = repr(exc)
    go.set()

threads = [threading.Thread(target=a), threading.Thread(target=b)]
for t in threads:
    t.start()
for t in threads:
    t.join()
out["hider_left"] = not any(type(f).__name__ == "_HideTorch" for f in sys.meta_path)
print(json.dumps(out))
'''
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}, timeout=2 * WAIT_S)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"torch_in_a": False, "torch_in_b": "module torch",
                                                             "hider_left": True}


def test_the_spacy_entry_point_switch_and_other_spacy_loads_hold_one_lock(monkeypatch):
    """While the sentencizer is built, spaCy's factory entry points are off process-wide: that happens holding
    `SPACY_SETUP_LOCK`, and the entities step's spaCy load (which needs them) holds it too, so neither runs while
    the other thread is inside."""
    import spacy

    from ingestaudit.metrics import chunking
    from ingestaudit.stages.entities_step import EntitiesStep

    held: dict[str, bool] = {}
    real_blank = spacy.blank

    def blank(*args, **kwargs):
        held["sentencizer"] = chunking.SPACY_SETUP_LOCK._is_owned()
        return real_blank(*args, **kwargs)

    def load(*args, **kwargs):
        held["entities"] = chunking.SPACY_SETUP_LOCK._is_owned()
        return object()

    monkeypatch.setattr(spacy, "blank", blank)
    monkeypatch.setattr(spacy, "load", load)
    chunking._sentencizer.cache_clear()
    try:
        chunking._sentencizer()
    finally:
        chunking._sentencizer.cache_clear()
    EntitiesStep().nlp()
    assert held == {"sentencizer": True, "entities": True}
