"""The measurement store (issue 14): ``measurements.parquet`` from the sorted rows, byte-identical for identical
rows, every column of the report contract."""

from __future__ import annotations

import json
from pathlib import Path

from ingestaudit.report.schema import MeasurementRow
from ingestaudit.store import COLUMNS, read_measurements, sha256_of, write_measurements


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
    assert report["measurements_store"] == {"file": "measurements.parquet", "sha256": hashlib.sha256(data).hexdigest()}
    table = pq.read_table(out / "measurements.parquet")
    assert table.num_rows == len(report["measurements"])
    assert table.column("item").to_pylist() == [m["item"] for m in report["measurements"]]
