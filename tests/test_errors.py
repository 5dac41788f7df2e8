"""One error root (issue 24 point 5): every exception the package raises for a user-facing problem derives from
`ingestaudit.errors.IngestAuditError`, each plug point's base from its family, and the command line turns any of
them into exit 2 with its message, never a traceback."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import typer
from typer.testing import CliRunner

import ingestaudit
from ingestaudit import errors
from ingestaudit.errors import IngestAuditError

# control flow, never shown as an error (errors.py's docstring says why for each)
INTERNAL = {"ingestaudit.executors.base.TaskTimeout", "ingestaudit.executors.base.Interrupted",
            "ingestaudit.metrics.tree_edit.DeadlineExceeded", "ingestaudit.truth._DuplicateKey"}

# plug point -> (module, its base class, the family in errors.py)
PLUG_POINTS = {
    "parser": ("ingestaudit.parsers.base", "ParserError", errors.ParsingError),
    "cleaner": ("ingestaudit.stages.cleaners.base", "CleanerError", errors.CleaningError),
    "chunker": ("ingestaudit.stages.chunkers.base", "ChunkerError", errors.ChunkingError),
    "chunker output": ("ingestaudit.chain", "ChunkOutputError", errors.ChunkingError),
    "embedder": ("ingestaudit.stages.embedders.base", "EmbedderError", errors.EmbeddingError),
    "index": ("ingestaudit.stages.index", "IndexInputError", errors.IndexingError),
    "user index": ("ingestaudit.auditors.index", "UserIndexError", errors.IndexingError),
    "retriever": ("ingestaudit.stages.retrievers", "RetrieverUnavailable", errors.RetrievalError),
    "truth": ("ingestaudit.truth", "TruthError", errors.TruthFileError),
    "config": ("ingestaudit.config", "ConfigError", errors.ConfigurationError),
    "output": ("ingestaudit.io", "OutputError", errors.WritingError),
}

# the other families derive from the root directly
FAMILIES = [("ingestaudit.corpus", "CorpusError"), ("ingestaudit.inputs", "InputFileError"),
            ("ingestaudit.report.schema", "ReportError"), ("ingestaudit.report.history", "HistoryError"),
            ("ingestaudit.report.compare", "GateError"), ("ingestaudit.report.provenance", "OutFolderError"),
            ("ingestaudit.importers", "ImporterError"), ("ingestaudit.plugins", "PluginError"),
            ("ingestaudit.pipeline", "PipelineError"), ("ingestaudit.executors.base", "ExecutorError"),
            ("ingestaudit.trec", "TrecError"), ("ingestaudit.store", "StoreWriteError"),
            ("ingestaudit.auditors.registry", "UnknownStage"), ("ingestaudit.stages.pii", "PiiDetectorError"),
            ("ingestaudit.stages.language", "DetectorError"), ("ingestaudit.stages.dedup_step", "DetectorError"),
            ("ingestaudit.cli", "UsageError")]

# the builtin bases each class had before the root (callers catch them): kept
BUILTIN_BASES = [("ingestaudit.trec", "TrecError", ValueError), ("ingestaudit.chain", "ChunkOutputError", ValueError),
                 ("ingestaudit.metrics.table_tree", "TableHtmlError", ValueError),
                 ("ingestaudit.parsers.structtree", "StructTreeError", ValueError),
                 ("ingestaudit.parsers.structtree", "NotTagged", ValueError),
                 ("ingestaudit.parsers.registry", "UnknownParser", KeyError),
                 ("ingestaudit.plugins", "PluginOptionError", ValueError),
                 ("ingestaudit.stages.embedders.registry", "UnknownEmbedder", ValueError),
                 ("ingestaudit.stages.retrievers", "UnknownRetriever", ValueError),
                 ("ingestaudit.stages.chunkers.registry", "UnknownChunker", ValueError),
                 ("ingestaudit.stages.cleaners.registry", "UnknownCleaner", ValueError),
                 ("ingestaudit.stages.dedup", "DuplicateKeyError", ValueError),
                 ("ingestaudit.stages.index", "IndexInputError", ValueError),
                 ("ingestaudit.auditors.index", "UserIndexError", ValueError),
                 ("ingestaudit.auditors.registry", "UnknownStage", ValueError),
                 ("ingestaudit.stages.dedup_step", "UnknownDetector", ValueError),
                 ("ingestaudit.stages.dedup_step", "DetectorUnavailable", ValueError),
                 ("ingestaudit.executors.base", "ExecutorError", ValueError),
                 ("ingestaudit.pipeline", "PipelineError", ValueError),
                 ("ingestaudit.reference_docs", "MissingDescription", ValueError),
                 ("ingestaudit.store", "StoreWriteError", OSError)]


def _cls(module: str, name: str) -> type:
    return getattr(importlib.import_module(module), name)


def _package_exceptions() -> dict[str, type]:
    """Every exception class defined in the package, by ``module.QualName`` (each module imported)."""
    found = {}
    for info in pkgutil.walk_packages(ingestaudit.__path__, "ingestaudit."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__ == info.name:
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return found


def test_every_exception_of_the_package_derives_from_the_root_but_the_internal_ones():
    found = _package_exceptions()
    outside = {name for name, cls in found.items() if not issubclass(cls, IngestAuditError)}
    assert outside == INTERNAL  # a new internal one must be listed here and in errors.py's docstring
    assert len(found) - len(INTERNAL) >= 70  # the walk saw the package (75 public ones at the time of writing)
    doc = errors.__doc__
    assert all(name.rsplit(".", 1)[1] in doc for name in INTERNAL)


@pytest.mark.parametrize("point", sorted(PLUG_POINTS))
def test_each_plug_points_base_derives_from_its_family(point):
    module, name, family = PLUG_POINTS[point]
    cls = _cls(module, name)
    assert family in cls.__bases__, (point, cls.__bases__)
    assert family.__bases__ == (IngestAuditError,)


def test_the_other_families_derive_from_the_root_directly():
    for module, name in FAMILIES:
        assert IngestAuditError in _cls(module, name).__bases__, (module, name)


def test_the_builtin_bases_callers_catch_are_kept():
    for module, name, base in BUILTIN_BASES:
        cls = _cls(module, name)
        assert issubclass(cls, base) and issubclass(cls, IngestAuditError), (module, name)


def test_errors_imports_nothing_of_the_package():
    tree = ast.parse(Path(errors.__file__).read_text(encoding="utf-8"))
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    imported += [n.module or "." for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert imported == ["__future__"]
    # and loading it loads no other module of the package (ingestaudit/__init__ aside)
    code = "import sys, ingestaudit.errors; print(sorted(m for m in sys.modules if m.startswith('ingestaudit')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['ingestaudit', 'ingestaudit.errors']"


def test_the_command_groups_edge_turns_the_root_into_exit_2_with_message_and_hint():
    from ingestaudit.cli import UsageError, _Commands
    from ingestaudit.parsers.base import ParserError

    app = typer.Typer(cls=_Commands)

    @app.command()
    def usage():
        raise UsageError("the thing is wrong", "try the other thing")

    @app.command()
    def parser():
        raise ParserError("plug-in parser: cannot start")

    @app.command()
    def bug():
        raise KeyError("not ours")

    r = CliRunner().invoke(app, ["usage"])
    assert r.exit_code == 2
    assert r.output.splitlines() == ["error: the thing is wrong", "try the other thing"]
    r = CliRunner().invoke(app, ["parser"])
    assert r.exit_code == 2 and r.output.splitlines() == ["error: plug-in parser: cannot start"]
    r = CliRunner().invoke(app, ["bug"])  # anything else is a bug: not turned into a usage error
    assert r.exit_code == 1 and isinstance(r.exception, KeyError)


PLUGIN = '''
from ingestaudit.parsers.base import ParserError


class BrokenParser:
    """A plug-in parser whose start-up check fails with its plug point's error."""

    name = "broken"
    extensions = frozenset({".txt"})

    def supports(self, document):
        return True

    def parse(self, document):
        raise AssertionError("never reached")

    def version(self):
        return "0"

    def settings(self):
        return {}

    def available(self):
        raise ParserError("broken: the licence file /opt/broken/licence is missing")
'''


def _corpus(root: Path) -> Path:
    (root / "docs" / "a").mkdir(parents=True)
    (root / "docs" / "a" / "x.txt").write_text("hello", encoding="utf-8")
    (root / "truth" / "a").mkdir(parents=True)
    (root / "truth" / "a" / "x.txt").write_text("hello", encoding="utf-8")
    return root


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "plugins"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "ingestaudit", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_a_plugin_parser_raising_parser_error_at_start_up_exits_2_without_traceback(tmp_path):
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "broken_plugin.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    c = _corpus(tmp_path / "c")
    r = _cli(tmp_path, "run", str(c), "-p", "broken_plugin:BrokenParser", "--out", str(tmp_path / "o"))
    assert r.returncode == 2, r.stderr
    assert "error: broken: the licence file /opt/broken/licence is missing" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    assert not (tmp_path / "o").exists()  # nothing was audited


def test_a_bad_config_exits_2_with_its_message(tmp_path):
    c = _corpus(tmp_path / "c")
    (tmp_path / "bad.toml").write_text("[run]\nworkerz = 2\n", encoding="utf-8")
    r = _cli(tmp_path, "run", str(c), "--config", str(tmp_path / "bad.toml"), "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert r.stderr.startswith(f"error: {tmp_path / 'bad.toml'}") and "workerz" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout


def test_check_corpus_lists_the_problems_validate_prints(tmp_path):
    from ingestaudit.corpus import CorpusError
    from ingestaudit.corpus_check import check_corpus

    c = _corpus(tmp_path / "c")
    (c / "truth" / "a" / "x.json").write_text('{"headings": 3}', encoding="utf-8")
    check = check_corpus(c)
    assert check.n_questions == 0 and check.warnings == []
    assert len(check.problems) == 1 and check.problems[0].startswith("truth/a/x.json: headings")
    with pytest.raises(CorpusError):
        check_corpus(tmp_path / "absent")


def test_attach_timings_sets_them_or_warns_naming_the_file(tmp_path):
    from ingestaudit.report.timings import attach_timings

    report = SimpleNamespace(timings={})
    assert attach_timings(report, tmp_path / "report.json") == "" and report.timings == {}  # no file: unchanged
    (tmp_path / "timings.json").write_text('{"p": {"index": {"build_s": 1.5}}}', encoding="utf-8")
    assert attach_timings(report, tmp_path / "report.json") == ""
    assert report.timings == {"p": {"index": {"build_s": 1.5}}}
    (tmp_path / "timings.json").write_text("{not json", encoding="utf-8")
    warning = attach_timings(report, tmp_path / "report.json")
    assert warning.startswith(f"{tmp_path / 'timings.json'}: not read (") and warning.endswith("not shown")
    assert report.timings == {"p": {"index": {"build_s": 1.5}}}  # a bad file changes nothing


@pytest.mark.parametrize("text, why", [
    ('{"pymupdf": 5}', "pymupdf: an object expected"),
    ('{"pymupdf": {"index": "x"}}', "pymupdf.index: an object expected"),
    ('{"p": {"index": {"cells": [1]}}}', "p.index.cells: a list of objects expected"),
    ('{"p": {"retrieval": {"latency_by_question_ms": {"q": "slow"}}}}',
     "p.retrieval.latency_by_question_ms: an object of numbers expected"),
    ("[1]", "an object of pipelines expected")])
def test_a_hand_edited_timings_file_is_not_shown_never_a_traceback(tmp_path, text, why):
    """`ingestaudit report` crashed (AttributeError in render) on timings.json edited to {"pymupdf": 5} (trial)."""
    from ingestaudit.report.timings import attach_timings

    report = SimpleNamespace(timings={})
    (tmp_path / "timings.json").write_text(text, encoding="utf-8")
    assert attach_timings(report, tmp_path / "report.json") == (
        f"{tmp_path / 'timings.json'}: not read ({why}); the timings are not shown")
    assert report.timings == {}
