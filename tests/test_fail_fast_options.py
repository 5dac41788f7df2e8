"""Issue 26 point 4, "fail fast on configuration": every plug-in's options are checked against its signature (names,
and annotated types) before any document is read; ``run`` and ``validate --config`` refuse a misspelt or mistyped
option with exit 2 naming the pipeline, the step, the option and the valid options."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from ingestaudit.config import Config
from ingestaudit.config_check import config_problems
from ingestaudit.model import ParsedDocument
from ingestaudit.parsers.base import Parser
from ingestaudit.pipeline import make_pipeline
from ingestaudit.plugin_options import declared_options, option_problems, valid_options
from ingestaudit.plugins import PluginOptionError, instantiate
from ingestaudit.stages.chunkers.recursive import RecursiveChunker

MARK = "INGESTAUDIT_TEST_PARSE_MARK"
CHUNKER_OPTIONS = "size, overlap, unit, separators, keep_separator"


class RecordingParser(Parser):
    """Appends the document's name to the file ``$INGESTAUDIT_TEST_PARSE_MARK`` each time it parses one (a worker
    process inherits the variable), so a test sees whether any document was read."""

    name = "recording"
    extensions = frozenset({".txt"})

    def parse(self, document):
        with open(os.environ[MARK], "a", encoding="utf-8") as fh:
            fh.write(document.path.name + "\n")
        return ParsedDocument(text=document.path.read_text(encoding="utf-8"), parser=self.name)

    def version(self):
        return "0"


def _corpus(root: Path) -> Path:
    for rel in ("docs/memo/n0.txt", "truth/memo/n0.txt"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("Note 0. The valve closes at dusk.\n", encoding="utf-8")
    return root


def _config(path: Path, chunker: str) -> Path:
    path.write_text(f'[pipelines.nightly]\nparser = "{__name__}:RecordingParser"\nchunker = {chunker}\n',
                    encoding="utf-8")
    return path


def _flat(text: str) -> str:
    return " ".join(text.split())


# --- the check itself ---------------------------------------------------------------------------------------------

def test_unknown_and_mistyped_options_are_named_against_the_signature():
    assert option_problems(RecursiveChunker, {"chunk_size": 500}) == ["unknown option 'chunk_size'"]
    assert option_problems(RecursiveChunker, {"size": "500"}) == [
        "option 'size' = '500': Input should be a valid integer (expected int)"]
    assert option_problems(RecursiveChunker, {"size": True}) == [  # a TOML boolean is not a size
        "option 'size' = True: Input should be a valid integer (expected int)"]
    # TOML's forms of the annotated types pass: a list for list[str] | tuple[str, ...], an int for an int
    assert option_problems(RecursiveChunker, {"size": 500, "overlap": 0, "separators": ["\n\n", " "]}) == []
    assert valid_options(RecursiveChunker) == CHUNKER_OPTIONS


def test_a_factory_function_and_an_open_ended_constructor():
    def factory(path: Path, *, depth: int = 3, **extra):
        return None

    names, open_ended = declared_options(factory)
    assert names == {"path": Path, "depth": int} and open_ended
    assert option_problems(factory, {"path": "/tmp/x", "anything": 1}) == []  # a string is a Path in TOML
    assert option_problems(factory, {"depth": 2.5}) == [
        "option 'depth' = 2.5: Input should be a valid integer (expected int)"]


def test_instantiate_refuses_a_mistyped_option_before_calling_the_constructor():
    calls = []

    class Thing:
        def __init__(self, *, size: int = 1):
            calls.append(size)

    with pytest.raises(PluginOptionError, match=r"^thing 't': bad option in \[x\] \(option 'size' = '2': Input "
                                                r"should be a valid integer \(expected int\)\); valid options: size "
                                                r"\(see docs/config.md\)$"):
        instantiate(Thing, {"size": "2"}, "thing 't'", section="[x]")
    assert calls == []
    instantiate(Thing, {"size": 2}, "thing 't'")
    assert calls == [2]


def test_trafilatura_declares_its_options_in_a_dataclass():
    from ingestaudit.stages.cleaners.registry import load_cleaner
    from ingestaudit.stages.cleaners.trafilatura_cleaner import DEFAULTS, TrafilaturaCleaner

    assert valid_options(TrafilaturaCleaner).split(", ") == list(DEFAULTS)
    assert DEFAULTS["include_tables"] is True and DEFAULTS["output_format"] == "txt"
    with pytest.raises(ValueError, match=r"unknown option 'favour_recall'\); valid options: fast, "):
        load_cleaner("trafilatura", {"favour_recall": True})
    with pytest.raises(ValueError, match=r"option 'output_format' = 'html': Input should be 'txt' or 'markdown'"):
        load_cleaner("trafilatura", {"output_format": "html"})
    assert load_cleaner("trafilatura", {"favor_recall": True}).options["favor_recall"] is True


@pytest.mark.parametrize("table, expected", [
    ({"chunker": {"use": "recursive", "chunk_size": 500}},
     f"pipeline 'p', chunker: chunker 'recursive': bad option (unknown option 'chunk_size'); valid options: "
     f"{CHUNKER_OPTIONS} (see docs/config.md)"),
    ({"embedder": {"use": "minilm", "batchsize": 8}},  # checked on the class: no model is loaded
     "pipeline 'p', embedder: embedder 'minilm': bad option (unknown option 'batchsize'); valid options: batch_size, "
     "device, cache_dir (see docs/config.md)"),
    ({"embedder": {"use": "minilm", "batch_size": "8"}},
     "pipeline 'p', embedder: embedder 'minilm': bad option (option 'batch_size' = '8': Input should be a valid "
     "integer (expected int)); valid options: batch_size, device, cache_dir (see docs/config.md)"),
    ({"retriever": {"use": "dense", "k": 5}},  # was ignored without a word
     "pipeline 'p', retriever: the dense retriever takes no options (got k); its depth and cut-offs are "
     "[auditor_options.retrieval]'s"),
    ({"cleaner": {"use": "repeated-lines", "min_share": "half"}},
     "pipeline 'p', cleaner: cleaner 'repeated-lines': bad option (option 'min_share' = 'half': Input should be a "
     "valid number (expected float)); valid options: edge_lines, min_share (see docs/config.md)"),
])
def test_each_step_is_checked_at_start_up(table, expected):
    assert config_problems(Config(), "cfg.toml", [make_pipeline("p", {"parser": "reference", **table})]) == [expected]


def test_a_pipeline_parser_option_names_the_pipeline():
    problems = config_problems(Config(), "cfg.toml", [make_pipeline("p", {"parser": {"use": "pymupdf",
                                                                                      "sort": "yes"}})])
    assert problems == ["pipeline 'p', parser: parser 'pymupdf': bad option in [parser_options.pymupdf] (option "
                        "'sort' = 'yes': Input should be a valid boolean (expected bool)); valid options: sort, flags, "
                        "password, tables, table_strategy, table_layout, table_refine, headings, lists, "
                        "heading_size_ratio (see docs/config.md)"]


def test_a_dedup_steps_config_fields_are_typed():
    from ingestaudit.stages.dedup_step import DedupStep

    problems = config_problems(Config(), "cfg.toml", [make_pipeline("p", {"parser": "reference", "dedup": {
        "use": "minhash", "threshold": "high"}})])
    # was "'<=' not supported between instances of 'float' and 'str'", naming no option
    assert problems == ["[pipelines.p] dedup: dedup step: option 'threshold' = 'high': Input should be a valid number "
                        f"(expected float); valid options: {valid_options(DedupStep)}"]
    assert valid_options(DedupStep).endswith("workers, shingling, k, normalization, num_perm, threshold, weights, "
                                             "seed, scheme, verify, min_shingles, short_docs")


def test_valid_options_pass():
    table = {"parser": "reference", "chunker": {"use": "recursive", "size": 400, "separators": ["\n"]},
             "embedder": {"use": "minilm", "batch_size": 8, "cache_dir": "/tmp/x"},
             "index": {"use": "hnsw", "m": 16}, "cleaner": {"use": "trafilatura", "fast": True},
             "dedup": {"use": "minhash", "threshold": 0.9, "weights": [0.3, 0.7], "sweep_thresholds": "0.5,0.8"}}
    assert config_problems(Config(), "cfg.toml", [make_pipeline("p", table)]) == []


# --- the commands ---------------------------------------------------------------------------------------------------

def test_run_with_a_misspelt_chunker_option_exits_2_before_reading_a_document(tmp_path, monkeypatch):
    corpus = _corpus(tmp_path / "corpus")
    mark = tmp_path / "parsed.txt"
    monkeypatch.setenv(MARK, str(mark))
    bad = _config(tmp_path / "bad.toml", '{ use = "recursive", chunk_size = 500 }')
    r = CliRunner().invoke(app, ["run", str(corpus), "--config", str(bad), "--out", str(tmp_path / "out")])
    assert r.exit_code == 2, r.output
    out = _flat(r.output)
    assert ("pipeline 'nightly', chunker: chunker 'recursive': bad option (unknown option 'chunk_size'); valid "
            f"options: {CHUNKER_OPTIONS}") in out
    assert not (tmp_path / "out").exists() and not mark.exists()  # no report, no document parsed
    good = _config(tmp_path / "good.toml", '{ use = "recursive", size = 500 }')  # the control: the parser is called
    r = CliRunner().invoke(app, ["run", str(corpus), "--config", str(good), "--stage", "extraction", "--executor",
                                 "serial", "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert mark.read_text(encoding="utf-8") == "n0.txt\n"


def test_a_misspelt_sweep_option_exits_2_naming_each_variant(tmp_path, monkeypatch):
    corpus = _corpus(tmp_path / "corpus")
    mark = tmp_path / "parsed.txt"
    monkeypatch.setenv(MARK, str(mark))
    cfg = _config(tmp_path / "good.toml", '"recursive"')
    r = CliRunner().invoke(app, ["run", str(corpus), "--config", str(cfg), "--sweep", "chunker.size=100,abc",
                                 "--out", str(tmp_path / "out")])
    assert r.exit_code == 2, r.output
    out = _flat(r.output)
    assert ("pipeline 'nightly/size=abc', chunker: chunker 'recursive': bad option (option 'size' = 'abc': Input "
            "should be a valid integer (expected int))") in out
    assert "nightly/size=100" not in out  # the good variant is not named
    assert not (tmp_path / "out").exists() and not mark.exists()


def test_validate_checks_the_corpus_with_the_config_given(tmp_path, monkeypatch):
    corpus = _corpus(tmp_path / "corpus")
    mark = tmp_path / "parsed.txt"
    monkeypatch.setenv(MARK, str(mark))
    bad = _config(tmp_path / "bad.toml", '{ use = "recursive", chunk_size = 500 }')
    r = CliRunner().invoke(app, ["validate", str(corpus), "--config", str(bad)])
    assert r.exit_code == 2, r.output
    assert ("pipeline 'nightly', chunker: chunker 'recursive': bad option (unknown option 'chunk_size'); valid "
            f"options: {CHUNKER_OPTIONS}") in _flat(r.output)
    assert not mark.exists()
    r = CliRunner().invoke(app, ["validate", str(corpus)])  # without --config the corpus has no config: ok
    assert r.exit_code == 0 and "ok: 1 document" in r.output
    good = _config(tmp_path / "good.toml", '{ use = "recursive", size = 500 }')
    r = CliRunner().invoke(app, ["validate", str(corpus), "--config", str(good)])
    assert r.exit_code == 0 and "ok: 1 document" in r.output, r.output
    r = CliRunner().invoke(app, ["validate", str(corpus), "--config", str(tmp_path / "missing.toml")])
    assert r.exit_code == 2 and "missing.toml" in r.output


def test_config_check_builds_each_candidate_auditor_once_when_the_gate_names_a_cutoff(monkeypatch):
    """`_stage_problems` and `_measured_cutoffs` each built every auditor (all stages twice per check)."""
    from collections import Counter

    import ingestaudit.runner as runner
    from ingestaudit.auditors.registry import stage_names

    built: Counter[str] = Counter()
    real = runner.load_auditor

    def counting(stage, options=None):
        built[stage] += 1
        return real(stage, options)

    monkeypatch.setattr(runner, "load_auditor", counting)
    cfg = Config(gate={"retrieval.recall@7": 0.01})
    problems = config_problems(cfg, "cfg.toml", [])
    assert problems == ["cfg.toml [gate] retrieval.recall@7: no such cutoff is measured by this run; measured: "
                        "retrieval.recall@1, retrieval.recall@3, retrieval.recall@5, retrieval.recall@10 (set by "
                        "[auditor_options] and [run] context_budgets)"]
    assert built == Counter({s: 1 for s in stage_names()})
