"""`ingestaudit eval-run` and ingestaudit.trec: trec_eval's published outputs, pytrec_eval as an oracle, bad input."""

import json
import random

import pytest
import typer
from typer.testing import CliRunner

from ingestaudit.evalrun import eval_run
from ingestaudit.trec import (
    TREC_EVAL,
    Profile,
    Run,
    TrecError,
    TrecFormatError,
    evaluate,
    rank,
    read_qrels,
    read_run,
)

app = typer.Typer()
app.command("eval-run")(eval_run)


@app.command("noop")
def _noop() -> None:  # a second command keeps typer from collapsing the app into eval-run itself
    """Unused."""


def invoke(*args):
    return CliRunner().invoke(app, ["eval-run", *map(str, args)])


def parse_trec_lines(text):
    values = {}
    for line in text.splitlines():
        name, topic, value = line.split("\t")
        values[(name.strip(), topic)] = value
    return values


@pytest.fixture(scope="module")
def trec_test(shared_dataset):
    return shared_dataset("trec-eval-test")


def test_reproduces_out_test_a(trec_test):
    result = invoke(trec_test / "qrels.test", trec_test / "results.test")
    assert result.exit_code == 0, result.output
    ours = parse_trec_lines(result.stdout)
    for name, value in {"map": "0.1785", "recip_rank": "0.4064", "P_5": "0.2667", "P_10": "0.3000",
                        "recall_5": "0.0173", "recall_10": "0.0317", "ndcg_cut_10": "0.3016"}.items():
        assert ours[(name, "all")] == value, name
    published = parse_trec_lines((trec_test / "out.test.a").read_text())
    assert set(ours) <= set(published)  # every measure we print is one trec_eval prints...
    assert len(ours) == 48  # runid, num_q and the 46 per-topic measures
    for key, value in ours.items():  # ...with the same text
        assert value == published[key], key


def test_reproduces_out_test_aq_per_topic(trec_test):
    result = invoke(trec_test / "qrels.test", trec_test / "results.test", "-q")
    assert result.exit_code == 0, result.output
    ours = parse_trec_lines(result.stdout)
    published = parse_trec_lines((trec_test / "out.test.aq").read_text())
    assert {t for _, t in ours} == {"301", "302", "303", "all"}
    assert len(ours) == 3 * 46 + 48
    for key, value in ours.items():
        assert value == published[key], key
    first = result.stdout.splitlines()[0]
    assert first == (trec_test / "out.test.aq").read_text().splitlines()[0]  # same layout, byte for byte


def test_json_output(trec_test, tmp_path):
    out = tmp_path / "scores.json"
    result = invoke(trec_test / "qrels.test", trec_test / "results.test", "--json", out)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert set(data) == {"all", "per_topic"}
    assert set(data["per_topic"]) == {"301", "302", "303"}
    assert round(data["all"]["map"], 4) == 0.1785 and data["all"]["num_q"] == 3
    assert data["all"]["num_rel_ret"] == 131
    assert round(data["per_topic"]["302"]["ndcg_cut_5"], 4) == 0.8304


def test_trec_test_agrees_with_pytrec_eval_to_1e12(trec_test):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels = read_qrels(trec_test / "qrels.test")
    run = read_run(trec_test / "results.test")
    ours = evaluate(qrels, run)
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"map", "recip_rank", "P", "recall", "ndcg_cut", "ndcg"}).evaluate(
        {t: dict(r) for t, r in run.results.items()})
    for topic, measures in ref.items():
        for name, value in measures.items():
            assert ours.per_topic[topic][name] == pytest.approx(value, abs=1e-12), (topic, name)


# ------------------------------------------------------------------------------------------- oracle: ties


def _random_case(rng):
    qrels, run = {}, {}
    for t in range(rng.randint(1, 8)):
        topic = f"t{t}"
        pool = list(dict.fromkeys(f"D{rng.randint(0, 80)}" for _ in range(60)))
        judged = rng.sample(pool, min(len(pool), rng.randint(1, 20)))
        qrels[topic] = {d: rng.choice([0, 0, 1, 1, 2, 3]) for d in judged}
        n = rng.randint(0, 40)
        if n:  # coarse scores: many ties, broken by docno
            run[topic] = {d: float(rng.randint(0, 6)) / 2 for d in rng.sample(pool, min(n, len(pool)))}
    run.setdefault("t0", {"D0": 0.5})  # at least one judged topic has results
    run["not-judged"] = {"D1": 1.0}
    return qrels, run


def test_random_runs_with_ties_match_pytrec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    measures = {"map", "recip_rank", "P", "recall", "ndcg_cut", "ndcg", "Rprec", "map_cut", "success",
                "num_ret", "num_rel", "num_rel_ret"}
    rng = random.Random(20240610)
    checked = 0
    for _ in range(150):
        qrels, run = _random_case(rng)
        ours = evaluate(qrels, Run({t: list(r.items()) for t, r in run.items()}, "r"))
        ref = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
        assert set(ours.per_topic) == set(ref)  # same topics scored (zero-relevant topics kept, unjudged dropped)
        for topic, values in ref.items():
            for name, value in values.items():
                assert ours.per_topic[topic][name] == pytest.approx(value, abs=1e-12), (topic, name)
                checked += 1
    assert checked > 10_000


def test_ties_are_broken_by_docno_descending():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels = {"1": {"a": 1, "b": 0}}
    scores = {"a": 1.0, "b": 1.0}
    assert rank(list(scores.items())) == ["b", "a"]
    ours = evaluate(qrels, Run({"1": list(scores.items())}, "r"))
    assert ours.per_topic["1"]["recip_rank"] == 0.5
    assert pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate({"1": scores})["1"]["recip_rank"] == 0.5
    file_order = evaluate(qrels, Run({"1": list(scores.items())}, "r"), profile=Profile("mine", "file_order"))
    assert file_order.per_topic["1"]["recip_rank"] == 1.0
    assert TREC_EVAL.tie_break == "docno_desc"


# ------------------------------------------------------------------------------------------- topics


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.fixture
def small(tmp_path):
    qrels = write(tmp_path / "qrels.txt", ["1 0 a 1", "1 0 b 0", "2 0 c 2", "3 0 z 0"])
    run = write(tmp_path / "run.txt", ["1 Q0 b 1 2.0 mine", "1 Q0 a 2 1.0 mine", "3 Q0 z 1 1.0 mine",
                                        "9 Q0 q 1 1.0 mine"])
    return qrels, run


def test_missing_topic_left_out_unless_complete(small):
    qrels, run = small
    result = invoke(qrels, run, "-q")
    assert result.exit_code == 0, result.output
    ours = parse_trec_lines(result.stdout)
    assert ours[("num_q", "all")] == "2"  # topics 1 and 3; topic 2 has no results, topic 9 no judgements
    assert ours[("map", "1")] == "0.5000" and ours[("map", "3")] == "0.0000"  # 3: judged, nothing relevant
    assert ours[("map", "all")] == "0.2500"
    assert ("map", "9") not in ours and ("map", "2") not in ours
    assert "left out" in result.stderr and "--complete" in result.stderr

    result = invoke(qrels, run, "-q", "-c")
    ours = parse_trec_lines(result.stdout)
    assert ours[("num_q", "all")] == "3"
    assert ours[("map", "2")] == "0.0000" and ours[("num_ret", "2")] == "0" and ours[("num_rel", "2")] == "1"
    assert ours[("map", "all")] == "0.1667"
    assert ours[("num_rel", "all")] == "2"
    assert parse_trec_lines(invoke(qrels, run, "--complete").stdout)[("num_q", "all")] == "3"


def test_extra_trailing_fields_and_blank_lines_are_ignored(tmp_path):
    qrels = write(tmp_path / "q", ["1 0 a 1 extra stuff", "", "1 0 b 1"])
    run = write(tmp_path / "r", ["1 Q0 a 1 0.9 tag more", "   ", "1\tQ0\tx\t2\t0.5\ttag"])
    ev = evaluate(read_qrels(qrels), read_run(run))
    assert ev.per_topic["1"]["recall_5"] == 0.5 and ev.runid == "tag"


# ------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(("which", "lines", "line_no", "message"), [
    ("run", ["1 Q0 a 1 0.9 t", "1 Q0 b 2 0.8 t", "1 Q0 c 3 0.7"], 3, "expected 'topic Q0 docno rank score tag'"),
    ("run", ["1 Q0 a 1 high t"], 1, "score must be a number"),
    ("run", ["1 Q0 a 1 0.5 t", "1 Q0 b x 0.5 t"], 2, "rank must be an integer"),
    ("run", ["1 Q0 a 1 nan t"], 1, "NaN"),
    ("run", ["1 Q0 a 1 0.5 t", "1 Q0 a 2 0.4 t"], 2, "retrieved twice"),
    ("qrels", ["1 0 a 1", "1 0 b yes"], 2, "relevance must be an integer"),
    ("qrels", ["1 0 a"], 1, "expected 'topic iteration docno relevance'"),
    ("qrels", ["1 0 a 1", "1 0 a 0"], 2, "duplicate judgement"),
])
def test_malformed_line_is_named_with_its_number(tmp_path, which, lines, line_no, message):
    good_qrels = ["1 0 a 1"]
    good_run = ["1 Q0 a 1 0.9 t"]
    qrels = write(tmp_path / "qrels.txt", lines if which == "qrels" else good_qrels)
    run = write(tmp_path / "run.txt", lines if which == "run" else good_run)
    bad = run if which == "run" else qrels
    result = invoke(qrels, run)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert f"{bad}:{line_no}:" in result.stderr.replace("\n", "")
    assert message in result.stderr.replace("\n", "")
    with pytest.raises(TrecFormatError) as info:
        (read_run if which == "run" else read_qrels)(bad)
    assert info.value.line == line_no and info.value.path == bad


def test_not_utf8_is_named_with_its_line(tmp_path):
    run = tmp_path / "run.txt"
    run.write_bytes(b"1 Q0 a 1 0.9 t\n1 Q0 \xff 2 0.8 t\n")
    with pytest.raises(TrecFormatError) as info:
        read_run(run)
    assert info.value.line == 2


def test_empty_missing_and_disjoint_inputs_exit_2(tmp_path):
    qrels = write(tmp_path / "qrels.txt", ["1 0 a 1"])
    empty = write(tmp_path / "empty.txt", [])
    other = write(tmp_path / "other.txt", ["7 Q0 a 1 0.9 t"])
    for args, text in [((empty, other), "no judgements"), ((qrels, empty), "no results"),
                       ((qrels, tmp_path / "absent.txt"), "cannot read"),
                       ((qrels, other), "no topic has both results and judgements")]:
        result = invoke(*args)
        assert result.exit_code == 2, args
        assert text in result.stderr.replace("\n", " "), (args, result.stderr)
    with pytest.raises(TrecError):
        evaluate(read_qrels(qrels), read_run(other))
    # with --complete the judged topic is scored against an empty ranking instead
    assert parse_trec_lines(invoke(qrels, other, "-c").stdout)[("map", "all")] == "0.0000"


def test_unwritable_json_exits_2(tmp_path):
    qrels = write(tmp_path / "qrels.txt", ["1 0 a 1"])
    run = write(tmp_path / "run.txt", ["1 Q0 a 1 0.9 t"])
    result = invoke(qrels, run, "--json", tmp_path / "no" / "such" / "dir.json")
    assert result.exit_code == 2 and "cannot write" in result.stderr
