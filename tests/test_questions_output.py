"""Every question's results in the report folder (questions/<pipeline>.jsonl, runs/<pipeline>.trec) and the
`ingestaudit questions` command, on the demo corpus with the reference parser at two chunk sizes (issue 25)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from ingestaudit.cli import app

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("questions") / "out"
    result = CliRunner().invoke(app, ["run", str(DEMO), "--out", str(out), "-p", "reference", "--sweep",
                                      "chunker.size=300,1200", "--stage", "retrieval"])
    assert result.exit_code == 0, result.output
    return out, result


def _union(iv):
    out = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def test_question_ranges_scored_with_chromas_formula_give_the_reports_span_recall(sweep):
    out, _ = sweep
    spans = {}
    for line in (DEMO / "questions.jsonl").read_text().splitlines():
        q = json.loads(line)
        spans[q["id"]] = [(e["doc"], e["start"], e["end"]) for e in q.get("relevant", []) if "start" in e]
    got = {(i, p): (n, d) for i, p, n, d in duckdb.sql(
        f"select item, pipeline, numerator, denominator from '{out / 'measurements.parquet'}' "
        "where metric = 'retrieval.span_recall@10' and state = 'ok'").fetchall()}
    checked = 0
    for path in sorted((out / "questions").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            ev = spans[rec["id"]]
            if not ev:
                continue
            num = den = 0
            for doc in {d for d, _, _ in ev}:  # Chroma: union of (chunk range x reference) intersections
                refs = _union([(s, e) for d, s, e in ev if d == doc])
                den += sum(b - a for a, b in refs)
                num += sum(b - a for a, b in _union(
                    (max(a, x["start"]), min(b, x["end"])) for x in rec["results"] if x["doc"] == doc
                    for a, b in refs if min(b, x["end"]) > max(a, x["start"])))
            assert (num, den) == got[(rec["id"], rec["pipeline"])], rec["id"]
            checked += 1
    assert checked == 22  # 11 questions with span evidence x 2 pipelines


def test_trec_runs_read_back_and_the_verdict_covers_every_item(sweep):
    from ingestaudit.trec import rank, read_run

    out, result = sweep
    # readable slugs, not percent-encoding (reference%2Fsize=300), mapped in report.json's details
    recs = [json.loads(x) for x in (out / "questions" / "reference_size=300.jsonl").read_text().splitlines()]
    run = read_run(out / "runs" / "reference_size=300.trec")
    first = recs[0]
    want = [f"{x['doc']}#{x['start']}-{x['end']}" for x in first["results"]]
    assert rank(run.results[first["id"]]) == want  # trec_eval's order (score, then docno) is the served order
    assert run.runid == "reference_size=300"
    assert all(isinstance(r["latency_ms"], float) for r in recs)
    report = json.loads((out / "report.json").read_text())
    (files,) = [d["data"] for d in report["details"] if d["name"] == "question_files"]
    assert files == {f"reference/size={n}": {"questions": f"questions/reference_size={n}.jsonl",
                                              "run": f"runs/reference_size={n}.trec",
                                              "qrels": f"runs/reference_size={n}.qrels"} for n in (300, 1200)}
    assert all((out / f).is_file() for v in files.values() for f in v.values())
    assert report["verdict"] and all(v["n_shared"] == v["n_items"] for v in report["verdict"])
    assert result.output.lstrip("\n").startswith("no decision [born_digital]: reference/size=300 vs reference/size=1200 "
                                    "(retrieval.span_recall@2000ch")
    assert "questions/, runs/" in " ".join(result.output.split())


def test_questions_command_side_by_side(sweep):
    out, _ = sweep
    r = CliRunner().invoke(app, ["questions", str(out), "--id", "demo-01"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("demo-01 [born_digital] How long does it take to replace the tube cartridge")
    assert "reference/size=300" in lines[1] and "reference/size=1200" in lines[1]
    assert lines[1].index("reference/size=300") < lines[1].index("reference/size=1200")  # report order
    assert "3 HIT  born_digital/pump_field_note#3099-3374    MISS born_digital/pump_field_note#0-1132" in r.output
    assert any(x.startswith("reference/size=300: 13 of 14 questions with a hit") and "p50" in x for x in lines)
    misses = CliRunner().invoke(app, ["questions", str(out), "--misses"])
    assert misses.output.splitlines()[0].startswith("demo-14 ")
    bad = CliRunner().invoke(app, ["questions", str(out), "--pipeline", "nope"])
    assert bad.exit_code == 2 and "nope" in bad.output


def test_a_report_folders_question_files_are_replaced_and_stale_ones_removed(tmp_path):
    from ingestaudit.io import StagedOutput

    out = tmp_path / "out"
    with StagedOutput(out, ()) as stage:
        stage.write_text("questions/a.jsonl", "1\n")
        stage.write_text("questions/b.jsonl", "2\n")
        stage.commit(last="questions/a.jsonl")
    with StagedOutput(out, ("questions/a.jsonl", "questions/b.jsonl")) as stage:
        stage.write_text("questions/a.jsonl", "3\n")
        stage.commit(last="questions/a.jsonl")
    assert sorted(p.name for p in (out / "questions").iterdir()) == ["a.jsonl"]
    assert (out / "questions" / "a.jsonl").read_text() == "3\n"


def test_report_html_has_a_question_view_misses_first(sweep):
    out, _ = sweep
    html = (out / "report.html").read_text()
    view = html.split('<section id="questions">', 1)[1].split("</section>", 1)[0]
    rows = view.split("<tr>")[2:]
    assert rows[0].startswith("<td><code>demo-14</code>") and rows[0].count("MISS") == 2
    demo01 = next(r for r in rows if r.startswith("<td><code>demo-01</code>"))
    assert "HIT @3" in demo01 and "HIT @4" in demo01  # size=300 holds it at rank 3, size=1200 at rank 4
    assert html.index('id="verdict"') < html.index("<nav>") < html.index('id="headline"')  # the page opens with it
    assert '<a href="#questions">Questions</a>' in html


def test_file_stems_are_readable_unique_and_never_dots():
    from ingestaudit.report.questions import file_stems

    # "/" and " " become "_"; "a/b" and "a_b" would share a slug: the second in order takes ~2; Foo vs foo clash
    # on a case-insensitive file system: ~2 too; "." and ".." are no file names
    assert file_stems(["p/use=none", "a/b", "a_b", "x y", "Foo", "foo", ".", ".."]) == {
        "p/use=none": "p_use=none", "a/b": "a_b", "a_b": "a_b~2", "x y": "x_y", "Foo": "Foo", "foo": "foo~2",
        ".": "_.", "..": "_.."}


def test_listing_folds_long_docnos_says_why_a_column_is_empty_and_counts_errors():
    """At 50 columns (col = max(20, (50 - 6) // 2 - 1) = 21) a docno was cut mid-offset (``...name.pd``); a
    pipeline's column for a question it could not measure was blank; and the totals left errored questions out."""
    from ingestaudit.report.questions import listing

    def res(rank, doc, start, end, hit):
        return {"rank": rank, "doc": doc, "start": start, "end": end, "hit": hit}

    long_doc = "invoices/a-very-long-document-name.pdf"
    found = {
        "pymupdf": [{"id": "q1", "question": "What total?", "class": "invoices", "answerable": True,
                     "results": [res(1, long_doc, 1200, 1450, True), res(2, "invoices/b.pdf", 0, 10, False)]},
                    {"id": "q2", "question": "Due date?", "class": "invoices", "answerable": True, "state": "error",
                     "reason": "retrieval.jsonl line 3: score is not a number", "results": []}],
        "unstructured": [{"id": "q1", "question": "What total?", "class": "invoices", "answerable": True,
                          "results": [res(1, "invoices/b.pdf", 0, 10, False)]}],
    }
    lines = list(listing(found, width=50))
    assert all(len(line) <= 50 for line in lines if not line.startswith(("pymupdf:", "unstructured:")))
    left = "".join(line[7:28].strip() for line in lines[2:5]).replace(" ", "")  # pymupdf, rank 1, on 3 lines
    assert left == f"HIT {long_doc}#1200-1450".replace(" ", "")  # every character, in order: nothing cut
    assert any(line[7:28].strip() == "name.pdf#1200-1450" for line in lines)  # the offsets stay on one line
    q2 = list(listing(found, width=50, qid="q2"))
    assert q2[2].split()[1:3] == ["error:", "not"]  # pymupdf: the reason; unstructured: no record for q2
    column = [" ".join(line[7:28].strip() for line in q2[2:6]), " ".join(line[29:].strip() for line in q2[2:4])]
    assert column == ["error: retrieval.jsonl line 3: score is not a number", "not in this pipeline's file"]
    assert lines[-2] == ("pymupdf: 1 of 1 questions with a hit in the top results (misses: 0); 1 in error, not "
                         "measured (2 questions in all); latency: not recorded")


def test_an_errored_question_gets_a_record_with_its_reason_and_no_miss_in_the_html_table():
    """A question whose retrieval.rr row is ``error`` had no record in questions/<pipeline>.jsonl, so the listing's
    totals left it out; its record now carries state and reason, no results (nothing in the TREC run), and the HTML
    table's cell is None (not measured), not 0 (a miss)."""
    from ingestaudit.report.questions import qrels, question_records, question_table, trec_run
    from ingestaudit.report.schema import MeasurementRow

    def rr(item, state, detail):
        return MeasurementRow(item=item, item_kind="question", doc_class="c", pipeline="p", stage="retrieval",
                              metric="retrieval.rr", label="", value=1.0 if state == "ok" else None,
                              numerator=None, denominator=None, state=state, detail=detail)

    ok = {"question": "A?", "results": [{"rank": 1, "doc": "c/a", "start": 0, "end": 5, "hit": True,
                                         "holds": ["c/a"]}]}
    recs = question_records([rr("q1", "ok", ok), rr("q2", "error", {"reason": "bad line 3"})])["p"]
    assert [(r["id"], r.get("state", "ok"), r.get("reason")) for r in recs] == [("q1", "ok", None),
                                                                                 ("q2", "error", "bad line 3")]
    assert trec_run("p", recs) == "q1 Q0 c/a#0-5 1 1 p\n" and "q2" not in qrels(recs)
    assert [row["cells"] for row in question_table({"p": recs}, 10)] == [[1], [None]]
