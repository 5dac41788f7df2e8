"""The loss waterfall end to end (issue 10's acceptance): an authored corpus audited through precomputed outputs.

Six questions, one evidence span each: one span missing from the parsed text, one removed by the cleaner, one cut
between two chunks, one behind a metadata filter, one whose chunk the retriever ranks 7th (k = 5), one retrieved.
Each lands in its own outcome, so every outcome's share at k = 5 is 1/6.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app
from _rows import load_report, measurements

pytestmark = pytest.mark.slow

REF_A = "Alpha facts here. Beta facts here. Gamma one two three. Delta runs fast. Epsilon wins."
FILLER = [f"Filler sentence number {i} about nothing." for i in range(8)]


def _span(text: str, phrase: str) -> tuple[int, int]:
    i = text.index(phrase)
    return i, i + len(phrase)


def _write(path: Path, data: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data, encoding="utf-8")


def _chunks(text: str, pieces: list[str]) -> list[dict]:
    out, cursor = [], 0
    for p in pieces:
        i = text.index(p, cursor)
        out.append({"text": p, "start": i, "end": i + len(p)})
        cursor = i + len(p)
    return out


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "corpus"
    for name in ("a", "b", "filler"):
        _write(root / "docs" / "c" / f"{name}.txt", "source\n")
    _write(root / "truth" / "c" / "a.txt", REF_A)
    _write(root / "truth" / "c" / "a.json", json.dumps({"metadata": {"tenant": "acme"}}))
    ref_b = "Zeta is kept behind a filter."
    _write(root / "truth" / "c" / "b.txt", ref_b)
    _write(root / "truth" / "c" / "b.json", json.dumps({"metadata": {"tenant": "globex"}}))
    ref_f = " ".join(FILLER)
    _write(root / "truth" / "c" / "filler.txt", ref_f)
    _write(root / "truth" / "c" / "filler.json", json.dumps({"metadata": {"tenant": "acme"}}))

    def q(qid: str, doc: str, ref: str, phrase: str, **extra) -> dict:
        s, e = _span(ref, phrase)
        return {"id": qid, "question": f"question {qid}", "relevant": [{"doc": doc, "start": s, "end": e}], **extra}

    questions = [q("q1", "c/a", REF_A, "Alpha facts here."), q("q2", "c/a", REF_A, "Beta facts here."),
                 q("q3", "c/a", REF_A, "Gamma one two three."),
                 q("q4", "c/b", ref_b, "Zeta is kept behind a filter.", filter={"tenant": "acme"}),
                 q("q5", "c/a", REF_A, "Delta runs fast."), q("q6", "c/a", REF_A, "Epsilon wins.")]
    _write(root / "questions.jsonl", "\n".join(json.dumps(x) for x in questions) + "\n")

    out = tmp_path / "outputs" / "pipe"
    parsed_a = REF_A.replace("Alpha facts here. ", "")  # q1's evidence never reaches the parsed text
    clean_a = parsed_a.replace("Beta facts here. ", "")  # q2's evidence is removed by the cleaner
    chunks_a = _chunks(clean_a, ["Gamma one", "two", "three.", "Delta runs fast.", "Epsilon wins."])  # q3 cut: 9/20 at most
    _write(out / "c" / "a.json", json.dumps({"text": parsed_a, "clean_text": clean_a, "chunks": chunks_a}))
    _write(out / "c" / "b.json", json.dumps({"text": ref_b, "chunks": _chunks(ref_b, [ref_b])}))
    _write(out / "c" / "filler.json", json.dumps({"text": ref_f, "chunks": _chunks(ref_f, FILLER)}))

    def res(doc: str, idx: int) -> dict:
        return {"doc": doc, "chunk": idx, "score": 1.0}

    fill = [res("c/filler", i) for i in range(8)]
    results = {
        "q1": fill[:5], "q2": fill[:5], "q3": [res("c/a", 0)] + fill[:4], "q4": fill[:5],
        "q5": fill[:6] + [res("c/a", 3)],  # the holding chunk ranked 7th
        "q6": [res("c/a", 4)] + fill[:4],
    }
    _write(out / "retrieval.jsonl", "\n".join(json.dumps({"question": k, "results": v, "latency_ms": 1.5})
                                              for k, v in results.items()) + "\n")
    return root, tmp_path / "outputs"


def test_each_evidence_item_lands_in_its_own_outcome(corpus, tmp_path):
    root, outputs = corpus
    report_dir = tmp_path / "report"
    res = CliRunner().invoke(app, ["run", str(root), "--outputs", str(outputs), "--out", str(report_dir),
                                   "--stage", "chunking", "--stage", "retrieval"])
    assert res.exit_code == 0, res.output
    report = load_report(report_dir)
    shares = {s["label"]: s["micro"] for s in report["summary"]
              if s["metric"] == "retrieval.outcome@5" and s["doc_class"] == "__all__"}
    assert shares == {o: pytest.approx(1 / 6) for o in ("lost_in_parsing", "lost_in_cleaning", "split_by_chunking",
                                                         "excluded_by_filter", "missed_by_ranking", "retrieved")} | {
        "missed_by_ann": 0.0, "excluded_by_enrichment": 0.0,  # issue 28 added the enrichment outcome
        "label_unmatched": 0.0}  # issue 25: a section label no reference heading matches
    # the shares' intervals: a bootstrap over the 6 questions, around each share
    for s in report["summary"]:
        if s["metric"] == "retrieval.outcome@5" and s["doc_class"] == "__all__" and s["micro"]:
            assert s["ci_method"].startswith("bootstrap-percentile(micro,questions,"), s["ci_method"]
            assert 0.0 == s["ci_low"] < 1 / 6 < s["ci_high"] <= 0.5, (s["label"], s["ci_low"], s["ci_high"])
    outcome = {r["item"]: r["label"] for r in measurements(report)
               if r["metric"] == "retrieval.outcome@5" and r["value"] == 1.0}
    assert outcome == {"q1": "lost_in_parsing", "q2": "lost_in_cleaning", "q3": "split_by_chunking",
                       "q4": "excluded_by_filter", "q5": "missed_by_ranking", "q6": "retrieved"}
    # at k = 10 the 7th-ranked chunk is retrieved
    at10 = {r["item"]: r["label"] for r in measurements(report)
            if r["metric"] == "retrieval.outcome@10" and r["value"] == 1.0}
    assert at10["q5"] == "retrieved"
    recall = {s["metric"]: s["micro"] for s in report["summary"]
              if s["doc_class"] == "__all__" and s["metric"] in ("retrieval.recall@5", "retrieval.hit@5")}
    assert recall == {"retrieval.recall@5": pytest.approx(1 / 6), "retrieval.hit@5": pytest.approx(1 / 6)}
    fx = [s for s in report["summary"] if s["metric"] == "retrieval.filter_false_exclusion"
          and s["doc_class"] == "__all__"]
    assert fx[0]["micro"] == 1.0 and fx[0]["n_docs"] == 1
    timings = json.loads((report_dir / "timings.json").read_text())
    assert timings["pipe"]["retrieval"]["query_latency_ms"]["p50"] == 1.5


def _filtered_run(tmp_path: Path, texts: dict[str, str], truth: dict[str, dict], output: dict[str, dict],
                  flt: dict, step: str, stages: list[str]) -> list[dict]:
    """A precomputed corpus (class ``c``; the output's chunks: one per document, ``filler``'s eight sentences) whose
    pipeline names ``step = "precomputed"``; one question per document but ``filler``, filtered on ``flt``, its
    evidence the whole document, its results ``filler``'s first five chunks. Returns the run's rows."""
    root = tmp_path / "corpus"
    out = tmp_path / "outputs" / "pipe"
    for name, text in texts.items():
        _write(root / "docs" / "c" / f"{name}.txt", "source\n")
        _write(root / "truth" / "c" / f"{name}.txt", text)
        if name in truth:
            _write(root / "truth" / "c" / f"{name}.json", json.dumps(truth[name]))
        pieces = FILLER if name == "filler" else [text]
        _write(out / "c" / f"{name}.json", json.dumps({"text": text, "chunks": _chunks(text, pieces),
                                                       **output.get(name, {})}))
    asked = [q for q in texts if q != "filler"]
    questions = [{"id": q, "question": q, "filter": flt,
                  "relevant": [{"doc": f"c/{q}", "start": 0, "end": len(texts[q])}]} for q in asked]
    _write(root / "questions.jsonl", "\n".join(json.dumps(x) for x in questions) + "\n")
    _write(root / "ingestaudit.toml", f'[pipelines.pipe]\n{step} = "precomputed"\n')
    fill = [{"doc": "c/filler", "chunk": i, "score": 1.0} for i in range(5)]
    _write(out / "retrieval.jsonl", "\n".join(json.dumps({"question": q, "results": fill}) for q in asked) + "\n")
    report_dir = tmp_path / "report"
    res = CliRunner().invoke(app, ["run", str(root), "--outputs", str(tmp_path / "outputs"), "--out",
                                   str(report_dir), *[a for st in stages for a in ("--stage", st)]])
    assert res.exit_code == 0, res.output
    return measurements(load_report(report_dir))


def test_a_wrong_extracted_year_lands_in_excluded_by_enrichment(tmp_path):
    """Issue 28: the pipeline's metadata step (precomputed) extracts year 2022 for a document labelled 2023; its chunks
    carry the extracted year, so a question filtered on year 2023 loses its evidence to the enrichment. A document
    correctly extracted as 2022 behind the same filter stays excluded_by_filter."""
    texts = {"wrong": "The wrong year hides this sentence.", "right": "The right year keeps this one out.",
             "filler": " ".join(FILLER)}
    years = {"wrong": (2023, 2022), "right": (2022, 2022), "filler": (2023, 2023)}  # (labelled, extracted)
    rows = _filtered_run(tmp_path, texts, {n: {"metadata": {"year": y[0]}} for n, y in years.items()},
                         {n: {"metadata": {"year": y[1]}} for n, y in years.items()}, {"year": 2023}, "metadata",
                         ["chunking", "retrieval", "metadata"])
    outcome = {r["item"]: r["label"] for r in rows if r["metric"] == "retrieval.outcome@5" and r["value"] == 1.0}
    assert outcome == {"wrong": "excluded_by_enrichment", "right": "excluded_by_filter"}
    year = {r["item"]: r["value"] for r in rows if r["metric"] == "metadata.exact_match" and r["label"] == "year"}
    assert year == {"c/wrong": 0.0, "c/right": 1.0, "c/filler": 1.0}


def test_a_filter_on_an_extracted_entity_reads_the_chunks_entities(tmp_path):
    """Issue 28 point 2: a pipeline that names an entities step (precomputed) attaches each chunk's extracted
    entities as ``entities: {TYPE: [texts]}``; a question filtered on ``entities.ORG = Acme`` lets the Acme
    document's chunk through (its miss is the ranking's) and excludes the Globex document's (the filter meant it)."""
    texts = {"acme": "Acme hired Ann Lee in May.", "globex": "Globex hired Bob Ray in June.",
             "filler": " ".join(FILLER)}
    spans = {"acme": [(0, 4, "ORG"), (11, 18, "PERSON")], "globex": [(0, 6, "ORG")], "filler": []}
    rows = _filtered_run(tmp_path, texts, {}, {n: {"entities": [{"start": a, "end": b, "type": t} for a, b, t in s]}
                                               for n, s in spans.items()},
                         {"entities.ORG": "Acme"}, "entities", ["chunking", "retrieval"])
    assert not [r for r in rows if r["stage"] == "retrieval" and r["state"] != "ok"]  # the field is carried
    outcome = {r["item"]: r["label"] for r in rows if r["metric"] == "retrieval.outcome@5" and r["value"] == 1.0}
    assert outcome == {"acme": "missed_by_ranking", "globex": "excluded_by_filter"}
