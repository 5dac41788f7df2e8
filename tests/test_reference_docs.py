"""The reference pages of the input formats (docs/truth.md, questions.md, outputs.md, config.md) are generated from the
schemas and fresh; an unknown key anywhere names the valid keys and the page documenting them; ``init`` points to the
pages (issue 15, scope 7)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, Field, StrictInt
from typer.testing import CliRunner

from ingestaudit import reference_docs as rd
from ingestaudit.cli import app
from ingestaudit.schema_keys import PAGES, keys_of, option_names

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", sorted(PAGES))
def test_reference_page_is_generated_from_the_schemas(name):
    page = ROOT / PAGES[name]
    assert page.read_text(encoding="utf-8") == rd.PAGE_BUILDERS[name](), (
        f"{PAGES[name]} is stale: python -m ingestaudit.reference_docs")


def test_check_mode_reports_stale_pages_and_writes_nothing(tmp_path):
    assert rd.main(["--check", str(tmp_path)]) == 1
    assert not (tmp_path / "docs").exists()
    assert rd.main([str(tmp_path)]) == 0 and rd.main(["--check", str(tmp_path)]) == 0
    assert sorted(p.name for p in (tmp_path / "docs").iterdir()) == ["config.md", "outputs.md", "questions.md",
                                                                     "truth.md"]


def test_help_prints_usage_and_writes_no_folder_named_after_it(tmp_path, monkeypatch, capsys):
    # regression: `python -m ingestaudit.reference_docs --help` wrote the pages into a folder named `--help`
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        rd.main(["--help"])
    assert stop.value.code == 0 and "usage:" in capsys.readouterr().out
    with pytest.raises(SystemExit) as stop:
        rd.main(["--chek"])
    assert stop.value.code == 2
    assert list(tmp_path.iterdir()) == []


class _Inner(BaseModel):
    """An inner object."""

    n: StrictInt = Field(default=0, ge=0, le=9, description="a digit")


class _Toy(BaseModel):
    """A toy. Uses ``code`` and <b>markup</b>."""

    kind: Literal["a", "b"] = Field(description="which | one")
    inner: list[_Inner] = Field(default=[], description="x -> y")
    maybe: str | None = Field(default=None, description="text or null")
    score: float | StrictInt = Field(default=1.0, description="a number")


def test_a_model_section_by_hand():
    assert rd.model_section(_Toy) == [
        "## _Toy", "",
        "A toy. Uses `code` and &lt;b&gt;markup&lt;/b&gt;.", "",
        "| key | type | default | description |", "|---|---|---|---|",
        '| `kind` | "a" or "b" | required | which \\| one |',
        "| `inner` | list of [_Inner](#_inner) object | `[]` | x → y |",
        "| `maybe` | string or null | `null` | text or null |",
        "| `score` | number | `1.0` | a number |",
        ""]
    assert rd.model_section(_Inner)[-2] == "| `n` | integer, ≥ 0, ≤ 9 | `0` | a digit |"
    assert rd.models_below(_Toy) == [_Toy, _Inner]


def test_a_field_without_a_description_stops_the_generator():
    class Bare(BaseModel):
        x: int = 0

    with pytest.raises(rd.MissingDescription, match=r"Bare\.x has no description"):
        rd.model_section(Bare)


def test_google_style_args_are_read_per_name():
    doc = """Thing.

    Args:
        a, b: shared text
            over two lines.
        c: ``code`` here.

    Raises:
        ValueError: never read.
    """
    assert rd._args_section(doc) == {"a": "shared text over two lines.", "b": "shared text over two lines.",
                                     "c": "``code`` here."}


def test_dedup_options_include_the_detector_config_fields():
    from ingestaudit.auditors.dedup import DedupAuditor

    names = option_names(DedupAuditor)
    assert names[:2] == ["detector", "detector_options"] and {"num_perm", "threshold", "shingling"} <= set(names)
    rows = {n: (d, t) for n, d, t in rd.option_rows(DedupAuditor)}
    assert rows["threshold"][0] == "`0.8`" and rows["threshold"][1]


# --- unknown keys name the valid ones and the page --------------------------------------------------------------------

def page_keys(page: str, heading: str) -> list[str]:
    """The keys the table under ``heading`` documents on a reference page."""
    text = (ROOT / page).read_text(encoding="utf-8")
    section = text.split(f"{heading}\n", 1)[1].split("\n#", 1)[0]
    return re.findall(r"^\| `([^`]+)` \|", section, re.M)


def valid_listed(message: str) -> list[str]:
    return re.search(r"valid keys: (.*?) \(see ", message).group(1).split(", ")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_unknown_truth_keys_top_level_and_nested(tmp_path):
    from ingestaudit.truth import Boilerplate, TruthFile

    root = tmp_path / "c"
    write(root / "docs/a/x.txt", "Hello world.\n")
    write(root / "truth/a/x.json", json.dumps({"lenguage": "en", "boilerplate": {"keep": ["Hello"]},
                                               "checks": [{"type": "present", "text": "Hello", "tol": 1}]}))
    res = CliRunner().invoke(app, ["validate", str(root)])
    assert res.exit_code == 2
    lines = {ln.split(": ")[1]: ln for ln in res.output.splitlines() if ln.startswith("truth/a/x.json")}
    top = lines["lenguage"]
    assert "unknown key 'lenguage'; valid keys:" in top and top.endswith("(see docs/truth.md)")
    assert valid_listed(top) == keys_of(TruthFile) == page_keys("docs/truth.md", "## Keys of truth JSON (TruthFile)")
    nested = lines["boilerplate.keep"]
    assert nested.endswith("(see docs/truth.md#boilerplate)")
    assert valid_listed(nested) == ["text", "spans", "with", "without", "main_text"] == \
        page_keys("docs/truth.md", "## Boilerplate") == keys_of(Boilerplate)
    check = lines["checks[0].tol"]
    assert valid_listed(check) == ["type", "text", "max_diffs"] and check.endswith("(see docs/truth.md#textcheck)")


def test_unknown_question_key(tmp_path):
    from ingestaudit.questions import load_questions
    from ingestaudit.truth import Truth

    path = write(tmp_path / "questions.jsonl",
                 json.dumps({"id": "q", "question": "?", "relevant": [{"doc": "a/x", "weight": 2}]}) + "\n")
    (p,) = load_questions(path, "questions.jsonl", {"a/x": Truth(text="t")}).problems
    assert p.field == "line 1: relevant[0].weight"
    assert p.message.endswith("(see docs/questions.md#evidence)")
    assert valid_listed(p.message) == page_keys("docs/questions.md", "## Evidence")


def test_unknown_output_key(tmp_path):
    from ingestaudit.parsers.base import ParserError
    from ingestaudit.parsers.precomputed import OutputFile, read_output_json

    path = write(tmp_path / "p/a/x.json", json.dumps({"text": "t", "chunks": [{"text": "t", "offset": 0}],
                                                      "txet": "b"}))
    with pytest.raises(ParserError) as err:
        read_output_json(path)
    msg = str(err.value)
    assert "txet: unknown key 'txet'; valid keys: " + ", ".join(keys_of(OutputFile)) + " (see docs/outputs.md)" in msg
    assert "chunks[0]: unknown key 'offset'; valid keys: text, start, end, page, section, metadata (see " \
        "docs/outputs.md#outputchunk)" in msg
    assert keys_of(OutputFile) == page_keys("docs/outputs.md", "## Keys of an output JSON (OutputFile)")


def test_unknown_retrieval_and_ann_results_keys(tmp_path):
    from ingestaudit.auditors.index import read_ann_results
    from ingestaudit.output_schemas import check_retrieval_keys

    with pytest.raises(TypeError) as err:
        check_retrieval_keys({"question": "q", "results": [{"doc": "a/x", "chunk": 0, "rank": 1}]})
    assert str(err.value) == ("results[0]: unknown key 'rank'; valid keys: doc, chunk, score "
                              "(see docs/outputs.md#retrievedchunk)")
    assert page_keys("docs/outputs.md", "### RetrievedChunk") == ["doc", "chunk", "score"]
    check_retrieval_keys({"question": "q", "results": [{"doc": "a/x", "chunk": {"start": 0, "end": 3}}],
                          "latency_ms": 2})  # valid: no error
    path = write(tmp_path / "ann_results.jsonl", '{"query": "q", "results": [], "k": 10}\n')
    assert read_ann_results(path).errors == {"q": f"{path} line 1: unknown key 'k'; valid keys: query, results (see "
                                                  "docs/outputs.md#annresultsline)"}  # that query's error
    assert page_keys("docs/outputs.md", "### Keys of an ann_results.jsonl line (AnnResultsLine)") == \
        ["query", "results"]


def test_unknown_config_keys_and_options(tmp_path):
    from ingestaudit.auditors.registry import load_auditor
    from ingestaudit.config import ConfigError, RunConfig, load_config
    from ingestaudit.parsers.registry import load_parser

    path = write(tmp_path / "ingestaudit.toml", "[run]\nworkres = 2\n[reprot]\nx = 1\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    msg = str(err.value)
    assert "run.workres: unknown key 'workres'; valid keys: " + ", ".join(keys_of(RunConfig)) + \
        " (see docs/config.md#runconfig)" in msg
    assert "reprot: unknown key 'reprot'; valid keys: run, pipelines" in msg and "(see docs/config.md)" in msg
    assert keys_of(RunConfig) == page_keys("docs/config.md", "## RunConfig")
    with pytest.raises(ValueError, match=r"\[auditor_options.layout\].*; valid options: threshold, paragraphs, .* "
                                         r"\(see docs/config.md\)$"):
        load_auditor("layout", {"treshold": 0.5})
    assert page_keys("docs/config.md", "### auditor_options.layout")[0] == "threshold"
    with pytest.raises(ValueError, match=r"\[parser_options.pymupdf\].*; valid options: sort, flags, "):
        load_parser("pymupdf", {"srot": True})


def test_init_points_to_the_reference_pages_not_to_source_files(tmp_path):
    res = CliRunner().invoke(app, ["init", str(tmp_path / "c")])
    assert res.exit_code == 0
    for page in PAGES.values():
        assert page in res.output and (ROOT / page).is_file()
    toml = (tmp_path / "c" / "ingestaudit.toml").read_text()
    assert "docs/config.md" in toml
    assert ".py" not in res.output + toml
    assert CliRunner().invoke(app, ["validate", str(tmp_path / "c")]).exit_code == 0  # pii_types example is valid


def test_the_readme_links_every_reference_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Your own corpus", 1)[1].split("\n## ", 1)[0]
    for page in PAGES.values():
        assert f"]({page})" in section, page
