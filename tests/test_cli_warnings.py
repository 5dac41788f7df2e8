"""The package's own warnings (an embedding cache shard not used, ...) reach the user as one ``warning:`` line naming
their file, without Python's ``cache.py:195: EmbeddingCacheWarning:`` prefix and the source line under it (seen on
the demo after the cache format changed)."""

from __future__ import annotations

import warnings

from ingestaudit.cli import _format_warning
from ingestaudit.stages.embedders.cache import EmbeddingCacheWarning


def test_an_own_warning_is_one_line_and_any_other_keeps_pythons_format():
    fmt = _format_warning(warnings.formatwarning)
    text = "embedding cache: /c/shard-1.npz: it records no model identity; not used, its texts are embedded again"
    assert fmt(text, EmbeddingCacheWarning, "/pkg/cache.py", 195, "index = self._refresh()") == f"warning: {text}\n"
    other = fmt("deprecated", DeprecationWarning, "/lib/x.py", 7, "call()")
    assert other == warnings.formatwarning("deprecated", DeprecationWarning, "/lib/x.py", 7, "call()")
    assert other.startswith("/lib/x.py:7: DeprecationWarning: deprecated")


def test_the_cli_restores_pythons_formatter_after_a_command():
    from typer.testing import CliRunner

    from ingestaudit.cli import app

    before = warnings.formatwarning
    CliRunner().invoke(app, ["parsers"])
    assert warnings.formatwarning is before


# --- an unwritable cache folder: one line naming the folder and the OS error, once per run in all processes -------

def _unwritable_folder(tmp_path):
    """A cache folder under a regular file: mkdir fails with NotADirectoryError even for root (chmod would not)."""
    (tmp_path / "file").write_text("x")
    return tmp_path / "file" / "cache"


def test_an_unwritable_cache_folder_is_one_warning_naming_it_and_the_error(tmp_path, monkeypatch):
    from ingestaudit.stages.embedders.cache import CachedEmbedder, EmbeddingCache
    from ingestaudit.warning_lines import run_scope
    from tests.stages.test_embedder import HashVectors

    folder = _unwritable_folder(tmp_path)
    with run_scope(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cached = CachedEmbedder(HashVectors(), EmbeddingCache(folder))
        first = cached.embed(["a b", "c d"])
        second = cached.embed(["e f"])
        # a worker process of the same run: a new cache over the same folder (it shares the run's scope)
        CachedEmbedder(HashVectors(), EmbeddingCache(folder)).embed(["g h"])
    assert first.shape == (2, 8) and second.shape == (1, 8)  # vectors computed, not cached
    assert cached.stats()["cache_write_errors"] == 2
    lines = [_format_warning(warnings.formatwarning)(w.message, w.category, w.filename, w.lineno) for w in caught]
    mdir = cached.cache.model_dir(cached.model_id(), cached.library_versions())  # the folder mkdir failed on
    assert lines == [f"warning: embedding cache: {folder}: cannot be written (NotADirectoryError: Not a directory "
                     f"({mdir})); vectors are computed but not cached, so the next run embeds them again\n"]


def test_each_run_names_the_unwritable_folder_again(tmp_path):
    from ingestaudit.stages.embedders.cache import CachedEmbedder, EmbeddingCache
    from ingestaudit.warning_lines import run_scope
    from tests.stages.test_embedder import HashVectors

    folder = _unwritable_folder(tmp_path)
    counts = []
    for _ in range(2):
        with run_scope(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            CachedEmbedder(HashVectors(), EmbeddingCache(folder)).embed(["a b"])
        counts.append(len(caught))
    assert counts == [1, 1]


def test_a_key_is_new_once_across_processes_of_a_run(tmp_path):
    """Two processes of one run (the second sees the first's marker file) name a file once."""
    import multiprocessing

    from ingestaudit.warning_lines import first_in_run, run_scope

    with run_scope():
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(1) as pool:
            in_worker = pool.apply(first_in_run, ("cache-shard:/c/shard-1.npz",))
        assert in_worker is True
        assert first_in_run("cache-shard:/c/shard-1.npz") is False  # this process comes second
        assert first_in_run("cache-shard:/c/shard-2.npz") is True
        assert first_in_run("cache-shard:/c/shard-2.npz") is False


def test_a_worker_prints_the_packages_warnings_as_one_line():
    """The pool's worker set-up installs the one-line format (a worker writes its own warnings to the terminal)."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        line = pool.apply(_worker_formats)
    assert line == "warning: embedding cache: /c: cannot be written\n"


def _worker_formats() -> str:
    import os

    from ingestaudit.executors.process import _init_worker

    _init_worker(None, 1, dict(os.environ))
    return warnings.formatwarning("embedding cache: /c: cannot be written", EmbeddingCacheWarning, "/pkg/cache.py",
                                  195, "x")
