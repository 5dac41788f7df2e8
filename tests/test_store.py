"""The measurement store (issue 14): ``measurements.parquet`` from the sorted rows, byte-identical for identical
rows, every column of the report contract."""

from __future__ import annotations

import json
from pathlib import Path

from ingestaudit.report.schema import MeasurementRow
from ingestaudit.store import COLUMNS, read_measurements, sha256_of, write_measurements
from _rows import measurements


def rows(n: int) -> list[MeasurementRow]:
    return [MeasurementRow(item=f"c/doc{i:05d}", item_kind="document", doc_class="c", pipeline="pymupdf",
                           stage="extraction", metric="extraction.cer", label="", value=None if i % 7 == 0 else i / n,
                           numerator=float(i), denominator=float(n), state="error" if i % 7 == 0 else "ok",
                           detail={"reason": "boom"} if i % 7 == 0 else {"b": 1, "a": [1.5, "é"]})
            for i in range(n)]


def test_store_has_the_contract_columns_and_round_trips(tmp_path: Path):
    import pyarrow.parquet as pq

    src = rows(20)
    digest = write_measurements(src, tmp_path / "measurements.parquet")
    assert digest == sha256_of(tmp_path / "measurements.parquet") and len(digest) == 64
    assert tuple(pq.read_schema(tmp_path / "measurements.parquet").names) == COLUMNS
    back = read_measurements(tmp_path / "measurements.parquet")
    assert [r["item"] for r in back] == [r.item for r in src]
    assert back[0]["value"] is None and back[0]["state"] == "error" and back[0]["detail"] == {"reason": "boom"}
    assert back[1]["class"] == "c" and back[1]["value"] == 1 / 20 and back[1]["detail"] == {"a": [1.5, "é"], "b": 1}
    assert json.loads(pq.read_table(tmp_path / "measurements.parquet").column("detail")[1].as_py()) == \
        {"a": [1.5, "é"], "b": 1}


def test_store_bytes_are_identical_for_identical_rows_and_use_row_groups(tmp_path: Path):
    import pyarrow.parquet as pq

    a = write_measurements(rows(25), tmp_path / "a.parquet", row_group=10)
    b = write_measurements(iter(rows(25)), tmp_path / "b.parquet", row_group=10)
    assert a == b
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert pq.ParquetFile(tmp_path / "a.parquet").metadata.num_row_groups == 3
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_an_empty_store_is_a_valid_file(tmp_path: Path):
    write_measurements([], tmp_path / "m.parquet")
    assert read_measurements(tmp_path / "m.parquet") == []


def test_run_names_the_store_with_its_sha256(tmp_path):
    """`run` writes measurements.parquet next to report.json, which names it with its SHA-256 (issue 14)."""
    import hashlib
    import json
    from pathlib import Path

    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    from ingestaudit.cli import app

    demo = Path(__file__).resolve().parents[1] / "fixtures" / "demo"
    out = tmp_path / "r"
    res = CliRunner().invoke(app, ["run", str(demo), "-p", "pymupdf", "--stage", "extraction", "--out", str(out)])
    assert res.exit_code == 0, res.output
    report = json.loads((out / "report.json").read_text())
    data = (out / "measurements.parquet").read_bytes()
    table = pq.read_table(out / "measurements.parquet")
    assert report["schema_version"] == "2.2" and "measurements_store" not in report
    assert report["measurements"] == {"file": "measurements.parquet", "sha256": hashlib.sha256(data).hexdigest(),
                                      "rows": table.num_rows}
    rows = measurements(out)
    # 10 documents x 5 extraction metrics, and 22 checks_pass rows (one per check type of each document's labels)
    assert table.num_rows == len(rows) == 72 and len({r["item"] for r in rows}) == 10
    assert sum(r["metric"] == "extraction.checks_pass" for r in rows) == 22
    assert table.column("item").to_pylist() == [m["item"] for m in rows]


def test_a_store_spilled_in_shuffled_arrival_order_is_the_store_of_the_sorted_rows(tmp_path):
    """Rows streamed in any arrival order (tasks finishing out of order, corpus stages after them) and sorted by the
    writer give the very bytes of `write_measurements` of the rows in canonical order: a stable sort by (item kind,
    item, pipeline rank, stage, metric, label) of the rows in production order."""
    import random

    from ingestaudit.store import StoreWriter

    rng = random.Random(7)
    pipes = ["zeta", "alpha"]  # report order is not alphabetical: the rank decides
    producers = []  # (src, rows) in production order: one task per document x pipeline, then a corpus stage
    for d in range(60):
        for p in pipes:
            rows_ = []
            for metric in ("extraction.cer", "extraction.wer", "normalization.x"):
                for label in ("", "b", "a"):
                    ok = rng.random() > 0.2
                    rows_.append(MeasurementRow(
                        item=f"c{d % 3}/d{d:03d}é", item_kind=rng.choice(["document", "question"]),
                        doc_class=f"c{d % 3}", pipeline=p, stage=metric.split(".")[0], metric=metric, label=label,
                        value=rng.random() if ok else None, numerator=float(d), denominator=3.0,
                        state="ok" if ok else "error", detail={"k": d, "x": [1.5, "é"]}))
            producers.append((0, rows_))
    for p in pipes:  # a corpus stage: rows with the same keys as task rows keep coming after them
        producers.append((1, [MeasurementRow(item=f"c{d % 3}/d{d:03d}é", item_kind="document", doc_class=f"c{d % 3}",
                                             pipeline=p, stage="dedup", metric="dedup.excluded", label="", value=0.0,
                                             numerator=0.0, denominator=1.0, state="ok", detail={})
                              for d in range(60)]))
    rank = {p: i for i, p in enumerate(pipes)}
    produced = [r for _, rows_ in producers for r in rows_]
    canonical = sorted(produced, key=lambda r: (r.item_kind, r.item, rank[r.pipeline], r.stage, r.metric, r.label))
    want = write_measurements(canonical, tmp_path / "want.parquet", row_group=500)
    shuffled = list(producers)
    rng.shuffle(shuffled)
    writer = StoreWriter(tmp_path / "work", pipes, buffer_rows=333)
    for src, rows_ in shuffled:
        writer.append(rows_, src)
    got = writer.finalize(tmp_path / "got.parquet", row_group=500)
    assert writer.rows == len(produced) == 60 * 2 * 9 + 120
    assert got == want
    assert (tmp_path / "got.parquet").read_bytes() == (tmp_path / "want.parquet").read_bytes()
    assert not (tmp_path / "work" / "spill.parquet").exists()


def test_an_empty_spill_writes_the_empty_store(tmp_path):
    from ingestaudit.store import StoreWriter

    got = StoreWriter(tmp_path / "w", ["p"]).finalize(tmp_path / "m.parquet")
    assert got == write_measurements([], tmp_path / "e.parquet") and read_measurements(tmp_path / "m.parquet") == []
