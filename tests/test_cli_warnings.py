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
