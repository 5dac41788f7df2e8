"""The built-in retrievers (issue 29 point 1): ``bm25`` against rank_bm25 and the formula by hand, reciprocal rank
fusion by hand, ``hybrid`` lanes in the retrieve step, and bad options named before any document is read."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from ingestaudit.pipeline import Pipeline, PipelineError, StageChoice, Sweep, expand, make_pipeline
from ingestaudit.stages.bm25_retriever import BM25Retriever
from ingestaudit.stages.fusion import rrf
from ingestaudit.stages.hybrid_retriever import HybridRetriever
from ingestaudit.stages.retrieve_step import needs_chunk_vectors
from ingestaudit.stages.retrievers import ChunkView, UnknownRetriever, load_retriever, retriever_names

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "auditors"))
from _retrievalkit import context, doc, pipeline, question  # noqa: E402

# five documents; no term is in more than two of them, so the Robertson idf is positive everywhere and rank_bm25's
# floor for negative idf (epsilon x mean idf) never applies
CORPUS = ["Invoices are due within thirty days of receipt.",
          "The office opens at nine and closes at five; invoices go to accounting.",
          "Parking permits are issued by the facilities desk.",
          "Thirty parking spaces are reserved for visitors near the office.",
          "Accounting closes the books on the fifth working day."]
QUERIES = ["when are invoices due", "office parking for visitors", "accounting books", "nothing matches zebra"]


def _views(texts):
    return [ChunkView(i, f"d{i}", t, None, (), {}) for i, t in enumerate(texts)]


def _indexed(**opts) -> BM25Retriever:
    r = BM25Retriever(**opts)
    r.index(_views(CORPUS), None)
    return r


@pytest.mark.parametrize("k1, b", [(1.5, 0.75), (1.2, 0.5), (0.9, 1.0)])
def test_bm25_atire_with_robertson_idf_equals_rank_bm25_okapi_to_1e_9(k1, b):
    from rank_bm25 import BM25Okapi

    r = _indexed(k1=k1, b=b, method="atire", idf_method="robertson")
    tokens = r.tokenize(CORPUS)
    assert tokens[0] == ["invoices", "due", "within", "thirty", "days", "receipt"]  # lower-cased, stop words out
    oracle = BM25Okapi(tokens, k1=k1, b=b)
    for query in QUERIES:
        ours = r.scores(query)
        theirs = oracle.get_scores(r.tokenize([query])[0])
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9)
    assert r.scores("invoices")[0] > 0 and r.scores("zebra").tolist() == [0.0] * 5


def test_bm25_default_is_lucene_and_equals_the_formula_by_hand():
    r = _indexed()  # k1 1.5, b 0.75, lucene
    docs = r.tokenize(CORPUS)
    n, avgdl = len(docs), sum(map(len, docs)) / len(docs)
    for query in QUERIES:
        want = []
        for d in docs:
            s = 0.0
            for t in r.tokenize([query])[0]:
                df = sum(t in x for x in docs)
                tf = d.count(t)
                if df:
                    s += math.log(1 + (n - df + 0.5) / (df + 0.5)) * tf / (tf + 1.5 * (1 - 0.75 + 0.75 * len(d) / avgdl))
            want.append(s)
        np.testing.assert_allclose(r.scores(query), want, rtol=0, atol=1e-9)
    s = r.settings()
    assert (s["method"], s["idf"], s["k1"], s["b"]) == ("lucene", "ln(1 + (N - df + 0.5) / (df + 0.5))", 1.5, 0.75)
    assert s["tokenizer"] == {"function": "bm25s.tokenize", "lower": True, "token_pattern": r"(?u)\b\w\w+\b",
                              "stopwords": "english", "stemmer": None}


def test_bm25_search_keeps_matching_allowed_rows_best_first_ties_by_row():
    r = BM25Retriever()
    r.index(_views(["alpha beta", "gamma", "alpha beta", "alpha"]), None)
    # rows 0 and 2 are the same text: a tie, broken by row; row 1 shares no term: never returned
    got = r.search("alpha beta", None, 10, None)
    assert [row for row, _ in got] == [0, 2, 3] and got[0][1] == got[1][1] > got[2][1] > 0
    assert [row for row, _ in r.search("alpha beta", None, 10, np.array([1, 2, 3]))] == [2, 3]
    assert [row for row, _ in r.search("alpha beta", None, 1, None)] == [0]
    assert r.search("alpha", None, 5, np.array([], dtype=np.int64)) == []


def test_rrf_by_hand():
    fused = rrf([["a", "b", "c"], ["c", "a", "d"]], k=60)
    assert fused == [("a", 1 / 61 + 1 / 62), ("c", 1 / 63 + 1 / 61), ("b", 1 / 62), ("d", 1 / 63)]
    weighted = rrf([["a", "b", "c"], ["c", "a", "d"]], k=60, weights=[1.0, 3.0])
    assert weighted == [("c", 1 / 63 + 3 / 61), ("a", 1 / 61 + 3 / 62), ("d", 3 / 63), ("b", 1 / 62)]
    assert rrf([["x", "x", "y"]], k=1) == [("x", 1 / 2), ("y", 1 / 4)]  # a repeat counts at its first rank


@pytest.mark.parametrize("opts, words", [
    ({"lanes": ["dense", "bm52"]}, ["'lanes'[1]", "bm52", "bm25"]),
    ({"lanes": ["hybrid"]}, ["'lanes'[0]", "a hybrid cannot be a lane"]),
    ({"lanes": []}, ["'lanes'", "non-empty"]),
    ({"k": 0}, ["'k'", "> 0"]),
    ({"k": -60}, ["'k'"]),
    ({"weights": [1.0]}, ["'weights'", "one weight per lane (2: dense, bm25)"]),
    ({"weights": [1.0, -1.0]}, ["'weights'", ">= 0"]),
    ({"lanes": [{"use": "bm25", "b": 2}]}, ["'lanes'[0]", "'b'", "[0, 1]"]),
])
def test_bad_hybrid_options_are_named(opts, words):
    with pytest.raises(ValueError) as err:
        load_retriever("hybrid", opts)
    for w in words:
        assert w in str(err.value)


def test_bad_bm25_options_are_named():
    for opts, word in (({"k1": -1}, "'k1'"), ({"method": "okapi"}, "'method'"), ({"stopwords": "klingon"},
                                                                                 "'stopwords'")):
        with pytest.raises(ValueError, match=word):
            load_retriever("bm25", opts)
    with pytest.raises(UnknownRetriever):
        load_retriever("bm52")


def test_names_and_which_pipelines_need_chunk_vectors():
    assert retriever_names()[:3] == ["dense", "bm25", "hybrid"]
    need = {use: needs_chunk_vectors(make_pipeline("p", {"retriever": use})) for use in ("dense", "bm25", "hybrid")}
    assert need == {"dense": True, "bm25": False, "hybrid": True}
    assert needs_chunk_vectors(make_pipeline("p", {"retriever": {"use": "hybrid", "lanes": ["bm25"]}})) is False


def test_a_sweep_over_use_is_a_bake_off_of_implementations():
    base = make_pipeline("p", {"retriever": {"use": "hybrid", "k": 30}})
    out = expand([base], [Sweep.parse("retriever.use=dense,bm25,hybrid")])
    assert [p.name for p in out] == ["p/use=dense", "p/use=bm25", "p/use=hybrid"]
    assert [p.stage("retriever") for p in out] == [StageChoice("dense"), StageChoice("bm25"),
                                                   StageChoice("hybrid", (("k", 30),))]
    with pytest.raises(PipelineError, match="'use' takes implementation names"):
        Sweep.parse("retriever.use=dense,1")


def _pipe(retriever: StageChoice) -> Pipeline:
    p = pipeline()
    return Pipeline(p.name, tuple((s, retriever if s == "retriever" else c) for s, c in p.stages))


def test_bm25_in_the_retrieve_step_reads_texts_only():
    d = doc("c/a", [0, 90, 45])
    d.texts[:] = ["invoices are due in thirty days", "the office opens at nine", "parking permits"]
    d.vectors = None  # the runner did not embed the chunks: bm25 needs none

    def no_embedding(texts):
        raise AssertionError("bm25 must not embed questions")

    ctx = context([d], [question("q1", ["c/a"], question="when does the office open")], {},
                  pipe=_pipe(StageChoice("bm25")))
    ctx.embed_questions = no_embedding
    got = ctx.retrieve(3, 3)
    assert got.failures == [] and got.questions_embedded == 0
    served, exact, top = got.ranks[0]
    assert served == exact == [1] and top == pytest.approx(_bm25_top("when does the office open", d.texts))


def _bm25_top(query, texts):
    r = BM25Retriever()
    r.index(_views(texts), None)
    return float(r.scores(query).max())


def test_hybrid_in_the_retrieve_step_fuses_the_dense_index_and_bm25_by_hand():
    d = doc("c/a", [0, 30, 60, 90])
    d.texts[:] = ["apples", "pears and apples", "plums", "apples apples apples and more"]
    # dense: the question at 80 degrees: rows by angle distance 3 (90), 2 (60), 1 (30), 0 (0)
    # bm25 "apples": rows 3 (tf 3), 0 (short), 1; row 2 shares no term
    q = question("q1", ["c/a"], question="apples")
    ctx = context([d], [q], {"q1": 80.0}, pipe=_pipe(StageChoice("hybrid")))
    got = ctx.retrieve(4, 4)
    assert got.failures == [] and got.questions_embedded == 1
    lexical = BM25Retriever()
    lexical.index(_views(d.texts), None)
    bm25_rows = [r for r, _ in lexical.search("apples", None, 100, None)]
    assert bm25_rows == [3, 0, 1]
    want = rrf([[3, 2, 1, 0], bm25_rows])  # 3: 1/61+1/61; 0: 1/64+1/62; 1: 1/63+1/63; 2: 1/62
    assert [r for r, _ in want] == [3, 0, 1, 2]
    served, exact, top = got.ranks[0]
    assert served == exact == [3, 0, 1, 2] and top == 2 / 61


def test_bad_retriever_options_exit_2_naming_pipeline_step_and_option_before_reading_documents(tmp_path):
    from typer.testing import CliRunner

    from ingestaudit.cli import app

    root = tmp_path / "corpus"
    (root / "docs" / "c").mkdir(parents=True)
    (root / "docs" / "c" / "a.txt").write_text("x\n")
    cfg = tmp_path / "cfg.toml"
    for table, words in (('{ use = "hybrid", k = 0 }', ["'k'"]),
                         ('{ use = "hybrid", lanes = ["dense", "bm25"], weights = [1.0] }', ["'weights'"]),
                         ('{ use = "hybrid", lanes = ["dense", "lexical"] }', ["'lanes'[1]", "'lexical'"]),
                         ('"lexical"', ["'lexical'"])):
        cfg.write_text(f"[pipelines.p]\nparser = \"reference\"\nretriever = {table}\n")
        res = CliRunner().invoke(app, ["run", str(root), "--config", str(cfg), "--out", str(tmp_path / "r"),
                                       "--stage", "retrieval"])
        assert res.exit_code == 2, res.output
        for w in ["pipeline 'p'", "retriever", *words]:
            assert w in res.output
        assert not (tmp_path / "r").exists()
