"""The step cache (`ingestaudit.step_cache`, issue 27 "pay for what is used"): a second run over an unchanged
document reads its parse, language detection and sentence spans back, with the same rows as computing them; a cache
file that is damaged, of another identity or not a regular file is never used (one warning naming it, moved aside);
``--no-step-cache`` reads and writes nothing."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from ingestaudit import step_cache
from ingestaudit.cli import app
from ingestaudit.model import Block, ParsedDocument, parsed_from_json, parsed_to_json

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo"
DOC = "born_digital/pump_field_note"


@pytest.fixture(autouse=True)
def _step_cache_on(monkeypatch):
    """The suite turns the step cache off (conftest); these tests are about it."""
    monkeypatch.delenv("INGESTAUDIT_STEP_CACHE", raising=False)
    step_cache.take_counts()


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    """The demo's pump field note alone (a PDF, English), with its reference text and labels."""
    root = tmp_path / "corpus"
    (root / "docs" / "born_digital").mkdir(parents=True)
    (root / "truth" / "born_digital").mkdir(parents=True)
    shutil.copyfile(DEMO / "docs" / f"{DOC}.pdf", root / "docs" / f"{DOC}.pdf")
    for truth in (DEMO / "truth" / "born_digital").glob("pump_field_note.*"):
        shutil.copyfile(truth, root / "truth" / "born_digital" / truth.name)
    return root


def _run(corpus: Path, out: Path, cache: Path, monkeypatch, *extra: str):
    """``ingestaudit run`` (serial, extraction + language; two candidate languages keep lingua small) with
    ``cache`` as the cache folder; returns (exit code, stderr, timings.json, the rows of measurements.parquet)."""
    config = corpus.parent / "cfg.toml"
    config.write_text('[auditor_options.language]\nlanguages = ["en", "de"]\n', encoding="utf-8")
    monkeypatch.setenv("INGESTAUDIT_CACHE", str(cache))
    res = CliRunner().invoke(app, ["run", str(corpus), "--out", str(out), "--executor", "serial", "--quiet",
                                   "--config", str(config), "--stage", "extraction", "--stage", "language", *extra])
    timings = json.loads((out / "timings.json").read_text(encoding="utf-8")) if res.exit_code == 0 else {}
    rows = pq.read_table(out / "measurements.parquet").to_pylist() if res.exit_code == 0 else []
    return res.exit_code, res.stderr, timings, rows


def _counts(timings: dict) -> dict:
    return timings["(run)"]["step_cache"]


def test_a_second_run_reads_parse_and_language_back_with_the_same_rows(corpus, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    code, err, timings, first = _run(corpus, tmp_path / "a", cache, monkeypatch)
    assert code == 0, err
    assert _counts(timings) == {"folder": str(cache / "steps"), "parse": {"hits": 0, "misses": 1},
                                "language": {"hits": 0, "misses": 1}}
    assert "step cache:" not in err
    assert len(list((cache / "steps" / "parse").glob("*.json"))) == 1
    code, err, timings, second = _run(corpus, tmp_path / "b", cache, monkeypatch)
    assert code == 0, err
    assert _counts(timings) == {"folder": str(cache / "steps"), "parse": {"hits": 1, "misses": 0},
                                "language": {"hits": 1, "misses": 0}}
    assert timings["pymupdf"]["step_cache"] == {"parse": {"hits": 1, "misses": 0},
                                                "language": {"hits": 1, "misses": 0}}
    assert f"step cache: 1 of 1 parse, 1 of 1 language results reused from {cache / 'steps'} (" in err
    assert second == first  # every row and column: reading back changes no number
    assert any(r["metric"] == "language.correct" and r["value"] == 1.0 for r in second)


def test_a_damaged_cache_file_is_named_once_moved_aside_and_recomputed(corpus, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    _, _, _, first = _run(corpus, tmp_path / "a", cache, monkeypatch)
    entry = next((cache / "steps" / "parse").glob("*.json"))
    entry.write_bytes(entry.read_bytes()[:100])  # truncated
    with pytest.warns(step_cache.StepCacheWarning) as said:
        code, err, timings, second = _run(corpus, tmp_path / "b", cache, monkeypatch)
    assert code == 0, err
    assert len(said) == 1
    assert f"{entry}: unreadable, truncated or corrupt (JSONDecodeError" in str(said[0].message)
    assert str(said[0].message).endswith(f"not used (moved to unused-{entry.name}), the step runs again")
    assert (entry.parent / f"unused-{entry.name}").is_file() and entry.is_file()  # aside, then written anew
    assert _counts(timings)["parse"] == {"hits": 0, "misses": 1}
    assert second == first
    code, err, timings, _ = _run(corpus, tmp_path / "c", cache, monkeypatch)  # the new entry is used, no warning
    assert "warning" not in err and _counts(timings)["parse"] == {"hits": 1, "misses": 0}


def test_a_corpus_copied_to_another_folder_reads_its_parses_back(corpus, tmp_path, monkeypatch):
    """The key is the file's bytes, not its path: a CI job's new workspace reuses the parses."""
    cache = tmp_path / "cache"
    _, _, _, first = _run(corpus, tmp_path / "a", cache, monkeypatch)
    moved = shutil.copytree(corpus, tmp_path / "elsewhere" / "corpus")
    code, err, timings, second = _run(moved, tmp_path / "b", cache, monkeypatch)
    assert code == 0, err
    assert _counts(timings)["parse"] == {"hits": 1, "misses": 0}
    assert second == first


def test_a_parse_read_back_for_another_path_names_that_path_in_its_warnings(tmp_path):
    from ingestaudit.document import Document
    from ingestaudit.document_steps import cached_parse

    class Fake:
        name = "fake"

        def __init__(self) -> None:
            self.calls = 0

        def supports(self, document):
            return True

        def cache_identity(self):
            return {"parser": "fake"}

        def parse(self, document):
            self.calls += 1
            return ParsedDocument(text="x", pages=("x",), warnings=(f"{document.path}: page 2 failed",))

    old, new = tmp_path / "a" / "d.pdf", tmp_path / "b" / "d.pdf"
    for path in (old, new):
        path.parent.mkdir()
        path.write_bytes(b"%PDF same bytes")
    parser = Fake()
    with step_cache.active(str(tmp_path / "steps")):
        first = cached_parse(parser, Document("d", "c", old))
        second = cached_parse(parser, Document("d", "c", new))
    assert parser.calls == 1
    assert first.warnings == (f"{old}: page 2 failed",) and second.warnings == (f"{new}: page 2 failed",)


def test_no_step_cache_reads_and_writes_nothing(corpus, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    code, err, timings, _ = _run(corpus, tmp_path / "a", cache, monkeypatch, "--no-step-cache")
    assert code == 0, err
    assert _counts(timings) == {"folder": None}
    assert not (cache / "steps").exists()
    monkeypatch.setenv("INGESTAUDIT_STEP_CACHE", "off")  # the environment switch says so in timings.json too
    code, err, timings, _ = _run(corpus, tmp_path / "b", cache, monkeypatch)
    assert code == 0, err
    assert _counts(timings) == {"folder": None} and not (cache / "steps").exists()


def _cache_with_entry(tmp_path: Path) -> tuple[step_cache.StepCache, dict, Path]:
    cache = step_cache.StepCache(tmp_path / "steps")
    identity = {"kind": "parse", "step": {"parser": "x"}, "environment": {"e": 1}}
    assert cache.put("parse", identity, [1, 2], list, list)
    return cache, identity, cache.path("parse", identity)


def test_an_entry_of_another_identity_is_not_used(tmp_path):
    cache, identity, path = _cache_with_entry(tmp_path)
    other = {**identity, "environment": {"e": 2}}  # e.g. another library version
    shutil.copyfile(path, cache.path("parse", other))  # copied in under the other key
    with pytest.warns(step_cache.StepCacheWarning, match="records another identity"):
        assert cache.get("parse", other, list) is None
    assert cache.get("parse", identity, list) == ([1, 2],)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_or_a_link_in_the_cache_is_never_opened(tmp_path):
    cache, identity, path = _cache_with_entry(tmp_path)
    path.unlink()
    os.mkfifo(path)  # opening it for reading would block the run forever
    with pytest.warns(step_cache.StepCacheWarning, match="named pipe"):
        assert cache.get("parse", identity, list) is None
    assert (path.parent / f"unused-{path.name}").exists()  # moved aside
    linked, identity, path = _cache_with_entry(tmp_path / "other")  # a name is warned about once per run
    path.unlink()
    os.symlink(tmp_path / "other" / "elsewhere.json", path)
    with pytest.warns(step_cache.StepCacheWarning, match="symbolic link"):
        assert linked.get("parse", identity, list) is None


def test_a_value_that_does_not_read_back_equal_is_not_written(tmp_path):
    cache = step_cache.StepCache(tmp_path / "steps")
    identity = {"kind": "k"}
    assert not cache.put("k", identity, (1, 2), list, list)  # a tuple reads back as a list: not equal
    assert not cache.put("k", identity, float("nan"), float, float)  # NaN: JSON cannot hold it
    assert not cache.path("k", identity).exists()


def test_an_unwritable_folder_warns_once_and_the_value_is_still_returned(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    cache = step_cache.StepCache(blocker / "steps")  # a folder under a file cannot be made
    with pytest.warns(step_cache.StepCacheWarning, match="cannot be written"):
        assert not cache.put("k", {"a": 1}, [1], list, list)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not cache.put("k", {"a": 2}, [2], list, list)  # once per process
    with step_cache.active(str(blocker / "steps2")):
        with pytest.warns(step_cache.StepCacheWarning):
            assert step_cache.cached("k", lambda: {"a": 3}, lambda: [3], list, list) == [3]
    assert step_cache.take_counts() == {"k.miss": 1}


def test_a_parsed_document_reads_back_equal():
    parsed = ParsedDocument(text="A\n\nB", pages=("A", "B"), tables=("<table></table>",), parser="pymupdf",
                            parser_version="1.0", settings={"sort": True, "flags": ["a"]}, elapsed_s=0.25,
                            warnings=("w",), extras={},
                            blocks=(Block("A", 1, (0.0, 1.5, 2.0, 3.0), "heading", 1, 0), Block("B", 2, None)))
    assert parsed_from_json(json.loads(json.dumps(parsed_to_json(parsed)))) == parsed
    with pytest.raises(TypeError):
        parsed_from_json({**parsed_to_json(parsed), "text": 5})


def test_sentence_spans_from_the_cache_are_the_computed_ones(tmp_path):
    from ingestaudit.metrics.chunking import sentence_spans as computed
    from ingestaudit.sentences import sentence_spans

    text = "First sentence. Second one!\n\nA heading\n\nLast line?"
    with step_cache.active(str(tmp_path / "steps")):
        first = sentence_spans(text)
        second = sentence_spans(text)
    assert first == second == computed(text) == [(0, 15), (16, 27), (29, 38), (40, 50)]
    assert step_cache.take_counts() == {"sentences.miss": 1, "sentences.hit": 1}


def test_an_entry_of_the_right_identity_but_another_shape_is_corrupt(tmp_path):
    """Valid JSON whose value lacks a field the decoder reads: named as corrupt with the missing key, not used."""
    cache = step_cache.StepCache(tmp_path / "steps")
    identity = {"kind": "parse", "step": {"parser": "x"}}
    doc = ParsedDocument(text="a", pages=("a",))
    assert cache.put("parse", identity, doc, parsed_to_json, parsed_from_json)
    path = cache.path("parse", identity)
    entry = json.loads(path.read_text(encoding="ascii"))
    del entry["value"]["text"]
    path.write_text(json.dumps(entry), encoding="ascii")
    with pytest.warns(step_cache.StepCacheWarning, match=r"unreadable, truncated or corrupt \(KeyError: 'text'\)"):
        assert cache.get("parse", identity, parsed_from_json) is None


def test_a_pdf_password_is_part_of_the_parse_identity_and_never_written():
    """A cached parse of an encrypted PDF opened with one password must not answer for another password (or none):
    that run must fail as PyMuPDF does. The identity holds the password's sha256, never the password."""
    import hashlib

    from ingestaudit.parsers.pymupdf_parser import PyMuPDFParser

    secret = PyMuPDFParser(password="secret").cache_identity()
    assert secret["password_sha256"] == hashlib.sha256(b"secret").hexdigest()
    assert "secret" not in json.dumps(secret)
    assert PyMuPDFParser(password="wrong").cache_identity() != secret
    assert PyMuPDFParser().cache_identity()["password_sha256"] is None


def test_an_entry_too_large_to_read_back_is_never_written(tmp_path, monkeypatch):
    cache = step_cache.StepCache(tmp_path / "steps")
    monkeypatch.setattr(step_cache, "MAX_ENTRY_BYTES", 200)
    assert not cache.put("k", {"a": 1}, ["x" * 300], list, list)  # else every later run would warn and rewrite it
    assert cache.put("k", {"a": 2}, ["x"], list, list)


def test_a_cache_folder_that_is_a_file_is_named_once_per_run(tmp_path):
    blocker = tmp_path / "steps"
    blocker.write_text("", encoding="utf-8")
    cache = step_cache.StepCache(blocker)
    with pytest.warns(step_cache.StepCacheWarning) as said:
        for n in range(3):  # three documents
            assert cache.get("parse", {"n": n}, list) is None
            cache.put("parse", {"n": n}, [n], list, list)
    assert sorted(str(w.message).split(" (")[0] for w in said) == [f"step cache: {blocker} cannot be read",
                                                                   f"step cache: {blocker} cannot be written"]


def test_a_file_rewritten_while_it_is_parsed_is_not_cached(tmp_path):
    from ingestaudit.document import Document
    from ingestaudit.document_steps import cached_parse

    path = tmp_path / "d.pdf"
    path.write_bytes(b"%PDF old bytes")

    class Rewriting:
        name = "rewriting"

        def supports(self, document):
            return True

        def cache_identity(self):
            return {"parser": "rewriting"}

        def parse(self, document):
            path.write_bytes(b"%PDF new bytes")  # after the hash, before the read: the parse is of the new bytes
            return ParsedDocument(text="new", pages=("new",))

    with step_cache.active(str(tmp_path / "steps")):
        cached_parse(Rewriting(), Document("d", "c", path))
    assert step_cache.take_counts() == {"parse.miss": 1}
    assert not list((tmp_path / "steps").rglob("*.json"))  # nothing stored under the old bytes' hash


@pytest.mark.parametrize("value, on, problem", [("", True, False), ("on", True, False), ("OFF", False, False),
                                                 (" no ", False, False), ("disabled", False, True)])
def test_the_environment_switch(monkeypatch, value, on, problem):
    monkeypatch.setenv("INGESTAUDIT_STEP_CACHE", value)
    assert step_cache.enabled_by_env() is on
    assert bool(step_cache.env_problem()) is problem
