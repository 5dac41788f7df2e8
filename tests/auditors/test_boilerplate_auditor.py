"""BoilerplateAuditor: the acceptance values through the auditor, the three label forms, states, and runs of the CLI
on a small corpus.

The auditor reads the pipeline's clean step (`ingestaudit.chain.clean_step`); each test builds that step with the
cleaner a pipeline would have (``rows(cleaner, ...)``), so the values are those of a pipeline with that cleaner, as
the old auditor gave them for each cleaner it ran itself."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from ingestaudit.auditors.base import ItemArtefacts
from ingestaudit.auditors.boilerplate import METRICS, BoilerplateAuditor
from ingestaudit.chain import clean_step
from ingestaudit.measurement import State
from ingestaudit.auditors import metric_catalog as specs
from ingestaudit.model import ParsedDocument
from ingestaudit.parsers.base import Parser
from ingestaudit.stages.cleaners import Cleaner, CleanResult
from ingestaudit.stages.cleaners.registry import load_cleaner
from ingestaudit.truth import Boilerplate, Truth
from _rows import load_report, measurements

TEXT = "Home | About\nReal content here.\nPage 1 of 2"
SPANS = [{"start": 0, "end": 12, "type": "nav"}, {"start": 32, "end": 43, "type": "page_number"}]
FIXED = f"{__name__}:FixedOutput"


class FixedOutput(Cleaner):
    """Returns a fixed text whatever the input (to reproduce the acceptance cases)."""

    name = "fixed"

    def __init__(self, output: str = ""):
        self.output = output

    def clean(self, inp):
        return CleanResult(self.output, {"fixed": True})

    def version(self):
        return "1"


class Exploding(Cleaner):
    name = "exploding"

    def clean(self, inp):
        raise RuntimeError("boom")

    def version(self):
        return "1"


class WrongType(Cleaner):
    name = "wrong"

    def clean(self, inp):
        return "not a CleanResult"

    def version(self):
        return "1"


def spans_truth(text=TEXT, spans=SPANS) -> Truth:
    return Truth(boilerplate=Boilerplate.model_validate({"text": text, "spans": spans}))


def rows(cleaner, truth, parsed=None, auditor=None, **options):
    """The auditor's rows for one document of a pipeline whose cleaner is ``cleaner`` (a name, with ``options``),
    keyed by (metric, cleaner); every row's label is "" (the cleaner is the pipeline's); the clean step runs as the
    runner runs it."""
    auditor = auditor or BoilerplateAuditor()
    parsed = parsed or ParsedDocument(text="parser text")
    cleaning = clean_step(load_cleaner(cleaner, options or None), parsed, name=cleaner,
                          labelled_text=auditor.labelled_text(truth))
    out = auditor.audit(ItemArtefacts.of(truth, parsed, steps={"clean": cleaning}))
    for s in out:  # the row contract
        assert specs.get(s.metric) in METRICS
        assert s.value is None or (math.isfinite(s.value) and 0 <= s.value <= 1)
        assert s.label == ""
        json.dumps(s.detail)
    return {(s.metric, cleaner): s for s in out}


def fixed(output, truth):
    return rows(FIXED, truth, output=output)


# --- the acceptance cases through the auditor ----------------------------------------------------------------------
# TEXT: 34 non-whitespace characters, 18 inside the two labelled spans (see tests/metrics/test_boilerplate.py).

def test_only_the_content_left_is_perfect():
    r = fixed("Real content here.", spans_truth())
    p, rc, f = (r[f"boilerplate.{m}", FIXED] for m in ("precision", "recall", "f1"))
    assert (p.value, p.numerator, p.denominator) == (1.0, 18, 18)
    assert (rc.value, rc.numerator, rc.denominator) == (1.0, 18, 18)
    assert f.value == 1.0
    assert rc.detail["leaked"] == [] and p.detail["wrongly_removed"] == []
    assert p.detail["cleaner_detail"] == {"fixed": True}


def test_unchanged_text_recall_zero_precision_is_a_state():
    r = fixed(TEXT, spans_truth())
    p, rc = r["boilerplate.precision", FIXED], r["boilerplate.recall", FIXED]
    assert (rc.value, rc.numerator, rc.denominator) == (0.0, 0, 18)
    assert p.state is State.NO_PREDICTION and p.value is None
    assert "nothing removed" in p.detail["reason"]
    assert [s["text"] for s in rc.detail["leaked"]] == ["Home | About", "Page 1 of 2"]
    assert r["boilerplate.f1", FIXED].value == 0.0  # 2·0 / (0 + 18)


def test_cutting_content_gives_precision_18_of_22():
    r = fixed("content here.", spans_truth())
    p = r["boilerplate.precision", FIXED]
    assert (p.numerator, p.denominator) == (18, 22) and p.value == 18 / 22
    assert r["boilerplate.recall", FIXED].value == 1.0
    assert p.detail["wrongly_removed"] == [{"start": 13, "end": 17, "text": "Real", "chars": 4}]


def test_spans_form_has_no_segment_or_shingle_rows():
    r = fixed("x", spans_truth())
    assert {m for m, _ in r} == {"boilerplate.precision", "boilerplate.recall", "boilerplate.f1"}


# --- one pipeline per cleaner ---------------------------------------------------------------------------------------

def test_the_none_cleaner_on_a_plain_text_is_the_baseline():
    r = rows("none", spans_truth())
    assert set(r) == {(f"boilerplate.{m}", "none") for m in ("precision", "recall", "f1")}
    assert r["boilerplate.precision", "none"].state is State.NO_PREDICTION
    assert (r["boilerplate.recall", "none"].numerator, r["boilerplate.recall", "none"].denominator) == (0, 18)


def test_repeated_lines_on_a_paged_text():
    text = "Report 2023\nFirst page body.\n1\fReport 2023\nSecond page body.\n2"
    # offsets: "Report 2023" 0-11, "\n" 11, "First page body." 12-28, "\n" 28, "1" 29, "\f" 30, "Report 2023" 31-42,
    # "\n" 42, "Second page body." 43-60, "\n" 60, "2" 61; labelled: both running heads and both folios
    spans = [{"start": 0, "end": 11, "type": "header"}, {"start": 29, "end": 30, "type": "page_number"},
             {"start": 31, "end": 42, "type": "header"}, {"start": 61, "end": 62, "type": "page_number"}]
    assert text[0:11] == text[31:42] == "Report 2023" and text[29] == "1" and text[61] == "2"
    r = rows("repeated-lines", spans_truth(text, spans))
    # repeated-lines removes both heads ("report ####" on 2 pages) and both folios ("#" on 2 pages): 10+10+1+1 = 22
    assert (r["boilerplate.precision", "repeated-lines"].numerator,
            r["boilerplate.precision", "repeated-lines"].denominator) == (22, 22)
    assert r["boilerplate.recall", "repeated-lines"].value == 1.0
    assert rows("none", spans_truth(text, spans))["boilerplate.recall", "none"].value == 0.0


def test_a_cleaner_that_cannot_run_is_skipped():
    r = rows("trafilatura", spans_truth())  # boilerplate.text has no raw HTML
    t = r["boilerplate.recall", "trafilatura"]
    assert t.state is State.SKIPPED and "raw HTML" in t.detail["reason"]
    assert rows("repeated-lines", spans_truth())["boilerplate.recall", "repeated-lines"].state is State.SKIPPED
    assert rows("none", spans_truth())["boilerplate.recall", "none"].state is State.OK


def test_failing_cleaners_give_error_rows():
    name_x, name_w = f"{__name__}:Exploding", f"{__name__}:WrongType"
    r = rows(name_x, spans_truth())
    assert r["boilerplate.precision", name_x].state is State.ERROR
    assert "RuntimeError: boom" in r["boilerplate.precision", name_x].detail["reason"]
    assert "not a CleanResult" in rows(name_w, spans_truth())["boilerplate.f1", name_w].detail["reason"]


def test_precomputed_clean_text_is_the_precomputed_pipelines_output():
    truth = Truth(boilerplate=Boilerplate.model_validate({"with": ["Real content"], "without": ["Home"]}))
    parsed = ParsedDocument(text=TEXT, extras={"clean_text": "Real content here."})
    r = rows("precomputed", truth, parsed)
    assert r["boilerplate.content_retention", "precomputed"].value == 1.0
    assert r["boilerplate.removal_recall", "precomputed"].value == 1.0
    assert rows("none", truth, parsed)["boilerplate.removal_recall", "none"].value == 0.0
    # an output without clean_text: the precomputed pipeline keeps (and chunks) the parsed text
    r = rows("precomputed", truth, ParsedDocument(text=TEXT))
    assert r["boilerplate.removal_recall", "precomputed"].value == 0.0
    assert "no precomputed clean_text" in r["boilerplate.removal_recall", "precomputed"].detail["cleaner_detail"][
        "kept"]


def test_precomputed_clean_text_is_used_for_spans_only_on_the_same_text():
    same = ParsedDocument(text=TEXT, extras={"clean_text": "content here."})
    assert rows("precomputed", spans_truth(), same)["boilerplate.precision", "precomputed"].value == 18 / 22
    other = ParsedDocument(text="another text", extras={"clean_text": "content here."})
    r = rows("precomputed", spans_truth(), other)
    assert r["boilerplate.precision", "precomputed"].state is State.SKIPPED
    assert "no precomputed 'clean_text'" in r["boilerplate.precision", "precomputed"].detail["reason"]


# --- segments and the reference main text ---------------------------------------------------------------------------

def test_segments_on_the_parsed_text():
    truth = Truth(boilerplate=Boilerplate.model_validate(
        {"with": ["Real  content here.", "missing bit"], "without": ["Home | About", "Page 1 of 2", "Cookies"]}))
    r = rows("none", truth, ParsedDocument(text=TEXT))
    ret, rem = r["boilerplate.content_retention", "none"], r["boilerplate.removal_recall", "none"]
    # with: 1 of 2 present (whitespace normalized); without: only "Cookies" absent -> 1 of 3
    assert (ret.numerator, ret.denominator, rem.numerator, rem.denominator) == (1, 2, 1, 3)
    assert ret.detail["missing"] == ["missing bit"]
    assert rem.detail["leaked"] == ["Home | About", "Page 1 of 2"]


def test_only_the_label_forms_present_are_reported():
    truth = Truth(boilerplate=Boilerplate.model_validate({"with": ["Real content"]}))
    r = rows("none", truth, ParsedDocument(text=TEXT))
    assert set(r) == {("boilerplate.content_retention", "none")}


@pytest.mark.filterwarnings("ignore:A test tried to use socket.socket")  # urllib3's import-time IPv6 probe
def test_empty_parser_output_is_no_prediction_for_text_cleaners(tmp_path):
    page = tmp_path / "p.html"
    page.write_text("<html><body><article><p>" + "Main text of the page. " * 20 + "</p></article></body></html>")
    truth = Truth(boilerplate=Boilerplate.model_validate({"with": ["Main text of the page."]}))
    parsed = ParsedDocument(text="", parser="unstructured", source_path=str(page))
    assert rows("none", truth, parsed)["boilerplate.content_retention", "none"].state is State.NO_PREDICTION
    r = rows("unstructured", truth, parsed)
    assert r["boilerplate.content_retention", "unstructured"].state is State.NO_PREDICTION
    r = rows("trafilatura", truth, parsed)
    assert r["boilerplate.content_retention", "trafilatura"].value == 1.0  # reads the HTML, not the parser's text


def test_reference_main_text_shingles():
    truth = Truth(text="a b c d e")
    assert not BoilerplateAuditor().applies(truth)
    aud = BoilerplateAuditor(reference_is_main_text=True)
    assert aud.applies(truth)
    r = rows("none", truth, ParsedDocument(text="x, a b c d!"), aud)
    # output 4-shingles (x a b c), (a b c d); reference (a b c d), (b c d e): 1 matched of 2 and 2
    p, rc, f = (r[f"boilerplate.shingle_{m}", "none"] for m in ("precision", "recall", "f1"))
    assert (p.numerator, p.denominator, rc.numerator, rc.denominator, f.numerator, f.denominator) == (1, 2, 1, 2,
                                                                                                      2, 4)
    r = rows("none", truth, ParsedDocument(text=""), BoilerplateAuditor(reference_is_main_text=True, shingle_size=1))
    assert r["boilerplate.shingle_precision", "none"].state is State.NO_PREDICTION  # empty input


def test_a_main_text_field_in_the_truth_is_used():
    # stands in for the proposed schema field boilerplate.main_text (not in truth.py yet)
    bp = SimpleNamespace(text=None, spans=[], with_=[], without=[], main_text="one two three four")
    aud = BoilerplateAuditor()
    assert aud.applies(Truth(boilerplate=bp))  # type: ignore[arg-type]
    r = rows("none", Truth(boilerplate=bp), ParsedDocument(text="menu one two three four"))  # type: ignore[arg-type]
    # output shingles (menu one two three), (one two three four): 1 of 2; reference 1 of 1
    assert r["boilerplate.shingle_precision", "none"].value == 0.5
    assert r["boilerplate.shingle_recall", "none"].value == 1.0


# --- configuration -------------------------------------------------------------------------------------------------

def test_options_are_json_and_name_the_rules():
    opts = BoilerplateAuditor().options()
    json.dumps(opts)
    assert opts["shingle_size"] == 4 and opts["span_unit"] == "non-whitespace code points"
    assert "--sweep cleaner.use" in opts["cleaner"]


def test_bad_options():
    with pytest.raises(ValueError):
        BoilerplateAuditor(shingle_size=0)
    with pytest.raises(ValueError, match="true or false"):
        BoilerplateAuditor(reference_is_main_text="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):  # the cleaner is the pipeline's now
        BoilerplateAuditor(cleaners=["none"])  # type: ignore[call-arg]


def test_applies():
    aud = BoilerplateAuditor()
    assert not aud.applies(Truth())
    assert not aud.applies(Truth(text="reference only"))
    assert aud.applies(spans_truth())
    assert aud.applies(Truth(boilerplate=Boilerplate.model_validate({"without": ["x"]})))


# --- end to end through the CLI ------------------------------------------------------------------------------------

class TextParser(Parser):
    """A parser for the test corpus: .txt as is, .html as lxml's text_content() (navigation and footer included)."""

    name = "text"
    extensions = frozenset({".txt", ".html"})

    def parse(self, document):
        raw = document.path.read_text(encoding="utf-8")
        if document.suffix == ".html":
            import lxml.html

            raw = lxml.html.fromstring(raw).text_content()
        return ParsedDocument(text=raw, parser=self.name)

    def version(self):
        return "0"


PAGE = (Path(__file__).resolve().parent.parent / "data" / "balcony_page.html").read_text(encoding="utf-8")
# the balcony page with two boilerplate lines inside its <article>, which trafilatura keeps
PAGE_WITH_SHARE = PAGE.replace("<article>", "<article><p>Share this article with your friends.</p>").replace(
    "</article>", "<p>Subscribe to our newsletter for more gardening tips every week.</p></article>")
WITHOUT = ["About us", "Copyright 2024", "Impressum", "Share this article with your friends.",
           "Subscribe to our newsletter for more gardening tips every week."]


def corpus(tmp_path, config: str | None = None) -> Path:
    """A web page with with/without segments and a plain text with labelled spans."""
    root = tmp_path / "corpus"
    for folder in ("docs/web", "docs/text", "truth/web", "truth/text"):
        (root / folder).mkdir(parents=True)
    (root / "docs/web/page.html").write_text(PAGE_WITH_SHARE, encoding="utf-8")
    (root / "truth/web/page.json").write_text(json.dumps({"boilerplate": {
        "with": ["Tomatoes need at least six hours", "shallow watering"], "without": WITHOUT}}), encoding="utf-8")
    (root / "docs/text/labelled.txt").write_text("anything", encoding="utf-8")
    (root / "truth/text/labelled.json").write_text(json.dumps({"boilerplate": {"text": TEXT, "spans": SPANS}}),
                                                   encoding="utf-8")
    if config is not None:
        (root / "ingestaudit.toml").write_text(config, encoding="utf-8")
    return root


def run_cli(root, out, *extra):
    from ingestaudit.cli import app

    return CliRunner().invoke(app, ["run", str(root), "--parser", f"{__name__}:TextParser", "--stage", "boilerplate",
                                    "--out", str(out), *extra])


@pytest.mark.filterwarnings("ignore:A test tried to use socket.socket")  # urllib3's import-time IPv6 probe
def test_a_sweep_over_the_pipelines_cleaner_compares_cleaners(tmp_path):
    out = tmp_path / "out"
    result = run_cli(corpus(tmp_path), out, "--sweep", "cleaner.use=none,trafilatura")
    assert result.exit_code == 0, result.output
    report = load_report(out)
    cleaner = {p["name"]: p["stages"]["cleaner"]["implementation"] for p in report["pipelines"]}
    got = {(m["item"], m["metric"], cleaner[m["pipeline"]]): (m["state"], m["value"]) for m in measurements(report)}
    # one pipeline per cleaner; the rows carry no cleaner label, so the sweep's pipelines share every row's key
    assert {m["label"] for m in measurements(report) if m["stage"] == "boilerplate"} == {""}
    # the page: trafilatura drops the nav and the footer (3 of 5 'without') and keeps both lines inside the article;
    # 0.6 = 3/5 is what the auditor gave at main (fbf6ec8) for trafilatura when it ran every cleaner itself
    assert got["web/page", "boilerplate.removal_recall", "trafilatura"] == ("ok", 0.6)
    assert got["web/page", "boilerplate.content_retention", "trafilatura"] == ("ok", 1.0)
    assert got["web/page", "boilerplate.content_retention", "none"] == ("ok", 1.0)
    assert got["web/page", "boilerplate.removal_recall", "none"] == ("ok", 0.0)
    # the labelled text: none removes nothing (precision a state), trafilatura cannot read a plain text (skipped)
    assert got["text/labelled", "boilerplate.precision", "none"] == ("no_prediction", None)
    assert got["text/labelled", "boilerplate.recall", "none"] == ("ok", 0.0)
    assert got["text/labelled", "boilerplate.recall", "trafilatura"] == ("skipped", None)
    summary = {(s["doc_class"], s["metric"], cleaner[s["pipeline"]]): s for s in report["summary"]}
    assert summary["__all__", "boilerplate.removal_recall", "trafilatura"]["micro"] == 0.6
    assert sorted(cleaner.values()) == ["none", "trafilatura"]
    # and so they are compared: the web class's verdict pairs the two cleaners on its boilerplate key (before, each
    # pipeline's rows had its own label and the verdict counted the class untestable)
    web = [v for v in report["verdict"] if v["class"] == "web" and v["metric"].startswith("boilerplate.")]
    assert web and all(v["n_shared"] == 1 for v in web), report["verdict"]


@pytest.mark.filterwarnings("ignore:A test tried to use socket.socket")  # urllib3's import-time IPv6 probe
def test_a_default_run_audits_the_default_cleaner_only(tmp_path):
    out = tmp_path / "out"
    result = run_cli(corpus(tmp_path), out)
    assert result.exit_code == 0, result.output
    rows_ = [m for m in measurements(load_report(out)) if m["stage"] == "boilerplate"]
    assert {m["label"] for m in rows_} == {""}
    assert len(rows_) == 5  # page: retention, removal recall; text: precision, recall, f1
    assert {(m["item"], m["metric"]): m["value"] for m in rows_ if m["state"] == "ok"} == {
        ("web/page", "boilerplate.content_retention"): 1.0, ("web/page", "boilerplate.removal_recall"): 0.0,
        ("text/labelled", "boilerplate.recall"): 0.0, ("text/labelled", "boilerplate.f1"): 0.0}


@pytest.mark.parametrize("option", ['cleaners = ["trafilatura", "none"]',
                                    'cleaner_options = { trafilatura = { fast = true } }'])
def test_the_removed_cleaner_options_are_a_config_error(tmp_path, option):
    out = tmp_path / "out"
    root = corpus(tmp_path, f"[auditor_options.boilerplate]\n{option}\n")
    result = run_cli(root, out)
    assert result.exit_code == 2, result.output
    key = option.split(" ")[0]
    assert f"ingestaudit.toml: auditor_options.boilerplate.{key}: removed" in result.output
    assert "--sweep cleaner.use=" in result.output and "pipeline's `cleaner`" in result.output
    assert not out.exists()  # refused before any document is read


@pytest.mark.parametrize("stages", [("boilerplate", "chunking"), ("boilerplate",)])
def test_boilerplate_rows_read_the_clean_step_whatever_comes_after_it(tmp_path, stages):
    """The chunker fails on the document: the chunking rows are errors, the boilerplate rows (which read only the
    clean step) keep their values; with boilerplate alone the chunker never runs (no failure at all)."""
    root = tmp_path / "corpus"
    (root / "docs/text").mkdir(parents=True)
    (root / "truth/text").mkdir(parents=True)
    (root / "docs/text/boom.txt").write_text(TEXT + "\nBOOM", encoding="utf-8")
    (root / "truth/text/boom.json").write_text(json.dumps({"boilerplate": {
        "with": ["Real content here."], "without": ["Home | About", "Cookies"]}}), encoding="utf-8")
    config = tmp_path / "cfg.toml"
    config.write_text(f'[pipelines.p]\nparser = "{__name__}:TextParser"\nchunker = "_chain_stubs:BoomChunker"\n'
                      'embedder = "_chain_stubs:WordEmbedder"\n', encoding="utf-8")
    out = tmp_path / "out"
    from ingestaudit.cli import app

    args = ["run", str(root), "--config", str(config), "--executor", "serial", "--out", str(out)]
    result = CliRunner().invoke(app, args + [a for s in stages for a in ("--stage", s)])
    assert result.exit_code == 0, result.output
    report = load_report(out)
    got = {(m["stage"], m["metric"], m["label"]): m for m in measurements(report)}
    retention, removal = got["boilerplate", "boilerplate.content_retention", ""], \
        got["boilerplate", "boilerplate.removal_recall", ""]
    assert (retention["state"], retention["value"]) == ("ok", 1.0)
    assert (removal["numerator"], removal["denominator"]) == (1, 2)  # "Cookies" absent, the menu left in
    if "chunking" in stages:
        chunking = [m for m in measurements(report) if m["stage"] == "chunking"]
        assert chunking and {m["state"] for m in chunking} == {"error"}
        assert "BOOM" in chunking[0]["detail"]["reason"]
    else:
        assert report["failures"] == [] and {m["stage"] for m in measurements(report)} == {"boilerplate"}
