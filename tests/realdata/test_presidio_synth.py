"""presidio-research synthetic PII records (../shared/data/presidio-synth): import them as a corpus, audit Presidio
(en_core_web_sm) with the ``pii`` stage through the CLI, and recompute every per-type count of the report
independently.

The independent recomputation uses its own code, written here from the policy definitions: ``exact`` as a multiset
intersection of (start, end) per type, ``overlap@0.5`` as a brute-force maximum matching (most pairs, then largest
total IoU; IoU compared as exact fractions ``2·|a∩b| >= |a∪b|``), ``token`` as sets of whitespace-token indices.
Both sides use the same Presidio spans (run again here, same settings), so any difference is in the matching,
projection, label map or aggregation, not in Presidio. There are no published Presidio-with-en_core_web_sm numbers
for this file to compare with; the data set's own facts (record and span counts, every span's text) are checked
against the JSON.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import requests  # noqa: F401  imported at collection: urllib3's import-time IPv6 probe opens a local socket
from typer.testing import CliRunner

from ingestaudit.importers import DestinationNotEmpty, SourceLayoutError, get_importer, import_corpus

DATA = "presidio-synth/synth_dataset_v2.first1000.json"


def records(shared_data: Path) -> list[dict]:
    return json.loads((shared_data / DATA).read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------------- independent matching


def exact_counts(gold, pred):
    g, p = Counter((a, b) for a, b in gold), Counter((a, b) for a, b in pred)
    tp = sum((g & p).values())
    return tp, len(pred) - tp, len(gold) - tp


def overlap_counts(gold, pred):
    """Brute force: the matching of gold to predictions (IoU >= 0.5) with most pairs, then most total IoU."""
    def iou_ok(a, b):
        inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
        union = (a[1] - a[0]) + (b[1] - b[0]) - inter
        return 2 * inter >= union, inter / union

    best = (0, 0.0)

    def search(i, used, pairs, total):
        nonlocal best
        if i == len(gold):
            best = max(best, (pairs, total))
            return
        search(i + 1, used, pairs, total)
        for j, p in enumerate(pred):
            if j not in used:
                ok, v = iou_ok(gold[i], p)
                if ok:
                    search(i + 1, used | {j}, pairs + 1, total + v)

    search(0, frozenset(), 0, 0.0)
    tp = best[0]
    return tp, len(pred) - tp, len(gold) - tp


def token_counts(text, gold, pred):
    toks = [m.span() for m in re.finditer(r"\S+", text)]

    def touched(spans):
        return {k for k, (s, e) in enumerate(toks) for a, b in spans if s < b and e > a}

    g, p = touched(gold), touched(pred)
    return len(g & p), len(p - g), len(g - p)


def independent_counts(recs, preds, label_map, entities):
    """{(policy, type): [tp, fp, fn]} summed over records, typed matching after the label map."""
    out: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for rec, pred in zip(recs, preds):
        text = rec["full_text"]
        gold_by, pred_by = defaultdict(list), defaultdict(list)
        for s in rec["spans"]:
            typ = label_map.get(s["entity_type"], s["entity_type"])
            if typ in entities:
                gold_by[typ].append((s["start_position"], s["end_position"]))
        for s in pred:
            if s.type in entities:
                pred_by[s.type].append((s.start, s.end))
        for typ in set(gold_by) | set(pred_by):
            g, p = gold_by[typ], pred_by[typ]
            for pol, counts in (("exact", exact_counts(g, p)), ("overlap@0.5", overlap_counts(g, p)),
                                ("token", token_counts(text, g, p))):
                for k in range(3):
                    out[pol, typ][k] += counts[k]
    return out


# ------------------------------------------------------------------------------------------------ importer


def test_import_matches_the_json(shared_data, tmp_path):
    recs = records(shared_data)
    summary = import_corpus("presidio-synth", shared_data / "presidio-synth", tmp_path / "c")
    assert len(summary.documents) == 1000 and summary.classes == {"synth": 1000}
    assert summary.unsupported == ()  # every span's text equals its entity_value (SOURCE.txt says 0 mismatches)
    counts = Counter(s["entity_type"] for r in recs for s in r["spans"])
    assert {k[5:]: v for k, v in summary.imported.items() if k.startswith("span:")} == dict(counts)
    assert sum(counts.values()) == 1894 and len(counts) == 17
    negatives = sum(1 for r in recs if not r["spans"])
    assert summary.imported["negative_records"] == negatives == 74
    # one record, read back: text and spans as in the JSON, sorted by offset
    t = json.loads((tmp_path / "c" / "truth" / "synth" / "record-0000.json").read_text(encoding="utf-8"))
    assert t["text"] == recs[0]["full_text"]
    assert t["pii"] == sorted(({"start": s["start_position"], "end": s["end_position"], "type": s["entity_type"]}
                               for s in recs[0]["spans"]), key=lambda s: (s["start"], s["end"], s["type"]))
    assert (tmp_path / "c" / "docs" / "synth" / "record-0999.txt").read_text(encoding="utf-8") == \
        recs[999]["full_text"]
    neg = next(i for i, r in enumerate(recs) if not r["spans"])
    assert json.loads((tmp_path / "c" / "truth" / "synth" / f"record-{neg:04d}.json").read_text())["pii"] == []
    from ingestaudit.cli import app

    res = CliRunner().invoke(app, ["validate", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output


def test_importer_refusals(shared_data, tmp_path):
    imp = get_importer("presidio-synth")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(DestinationNotEmpty):
        imp(shared_data / "presidio-synth", tmp_path / "full")
    with pytest.raises(SourceLayoutError, match="exactly one"):
        imp(tmp_path / "full", tmp_path / "d")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([
        {"full_text": "Ana Lima", "spans": [
            {"entity_type": "PERSON", "entity_value": "Ana Lima", "start_position": 0, "end_position": 8},
            {"entity_type": "PERSON", "entity_value": "Bo", "start_position": 0, "end_position": 3},
            {"entity_type": "PERSON", "entity_value": "x", "start_position": 7, "end_position": 99}]},
        "not a record"]))
    s = imp(bad, tmp_path / "d")
    assert s.documents == ("synth/record-0000",)
    assert sorted(u.item for u in s.unsupported) == ["record 0 span 1", "record 0 span 2", "record 1"]
    assert not (tmp_path / "d2").exists()
    with pytest.raises(SourceLayoutError):
        bad.write_text("{}")
        imp(bad, tmp_path / "d2")


# ------------------------------------------------------------------------------------------------ the audit


def audit_and_check(shared_data: Path, tmp_path: Path, limit: int | None) -> None:
    from ingestaudit.cli import app
    from ingestaudit.importers.presidio_synth import ENTITIES, LABEL_MAP, import_presidio_synth
    from ingestaudit.stages.pii import PresidioDetector

    corpus, out = tmp_path / "corpus", tmp_path / "out"
    import_presidio_synth(shared_data / "presidio-synth", corpus, limit=limit)
    res = CliRunner().invoke(app, ["run", str(corpus), "--out", str(out), "--stage", "pii"])
    assert res.exit_code == 0, res.output
    rep = json.loads((out / "report.json").read_text(encoding="utf-8"))
    recs = records(shared_data)[:limit]

    # the report names the scrubber and its spaCy model
    cfg = rep["config"]["auditors"]["pii"]
    assert cfg["presidio"]["spacy_model"] == "en_core_web_sm"
    assert cfg["presidio"]["spacy_model_installed"] == cfg["presidio"]["spacy_model_version"] == "3.8.0"
    assert cfg["label_map"] == LABEL_MAP and cfg["entities"] == sorted(ENTITIES)

    summary = {(s["metric"], s["label"]): s for s in rep["summary"]
               if s["pipeline"] == "reference" and s["doc_class"] == "__all__"}
    preds = PresidioDetector(entities=list(ENTITIES)).detect_batch([r["full_text"] for r in recs])
    expected = independent_counts(recs, preds, LABEL_MAP, set(ENTITIES))

    # every (policy, type) with labels: precision, recall, F1, F2 rows, micro equal to the independent counts
    gold_types = {LABEL_MAP.get(s["entity_type"], s["entity_type"]) for r in recs for s in r["spans"]} & \
        set(ENTITIES)
    for pol in ("exact", "overlap@0.5", "token"):
        for typ in gold_types:
            for metric in ("pii.precision", "pii.recall", "pii.f1", "pii.f2"):
                assert (metric, f"{pol}/{typ}") in summary, (metric, pol, typ)
        for (p, typ), (tp, fp, fn) in expected.items():
            if p != pol:
                continue
            rec = summary["pii.recall", f"{pol}/{typ}"]["micro"] if tp + fn else None
            prec = summary["pii.precision", f"{pol}/{typ}"]["micro"] if tp + fp else None
            if tp + fn:
                assert rec == pytest.approx(tp / (tp + fn), abs=1e-12), (pol, typ, tp, fp, fn)
            if tp + fp:
                assert prec == pytest.approx(tp / (tp + fp), abs=1e-12), (pol, typ, tp, fp, fn)
            f2 = summary["pii.f2", f"{pol}/{typ}"]["micro"]
            assert f2 == pytest.approx(5 * tp / (5 * tp + 4 * fn + fp), abs=1e-12)
        tp, fp, fn = (sum(v[k] for (p, _), v in expected.items() if p == pol) for k in range(3))
        assert summary["pii.f1", pol]["micro"] == pytest.approx(2 * tp / (2 * tp + fn + fp), abs=1e-12)
        assert summary["pii.precision", f"{pol}/macro"]["level"] == "corpus"

    # unmapped labels are listed, not dropped: ORGANIZATION, TITLE, AGE, ZIP_CODE (no Presidio recognizer)
    details = {d["name"]: d["data"] for d in rep["details"] if d["stage"] == "pii"}
    unmapped = details["label_map"]["unmapped_types"]
    counts = Counter(s["entity_type"] for r in recs for s in r["spans"])
    assert unmapped == {t: counts[t] for t in ("AGE", "ORGANIZATION", "TITLE", "ZIP_CODE") if counts[t]}
    # component level: the reference parser loses nothing
    assert summary["pii.lost_in_extraction", "*"]["micro"] == 0.0
    # negative records: false positives per 1,000 tokens, recomputed
    neg = [(r, p) for r, p in zip(recs, preds) if not r["spans"]]
    tokens = sum(len(r["full_text"].split()) for r, _ in neg)
    fps = sum(1 for _, p in neg for s in p if s.type in ENTITIES)
    fp_row = summary["pii.fp_per_1k_tokens", "*"]
    assert fp_row["n_docs"] == len(neg) and fp_row["micro"] == pytest.approx(1000 * fps / tokens)


@pytest.mark.slow
def test_presidio_on_133_records(shared_data, tmp_path):
    """The first 133 of the file's 1,000 records: the shortest head holding every one of the file's 17 labelled
    types (the 133rd holds the first IP_ADDRESS). The whole file takes about 45 s and shows nothing more; 300 records
    made this the suite's fifth longest test."""
    audit_and_check(shared_data, tmp_path, 133)
