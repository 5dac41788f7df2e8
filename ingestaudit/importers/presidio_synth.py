"""Import a presidio-research synthetic PII data set (microsoft/presidio-research JSON, as in
``../shared/data/presidio-synth``) as a corpus for the ``pii`` stage.

Source format: one JSON file holding a list of records ``{"full_text": str, "masked": str, "spans": [{"entity_type",
"entity_value", "start_position", "end_position"}], "template_id": int, "metadata": ...}``; offsets are Python
string indices (code points) into ``full_text``, end exclusive.

Corpus written (record ``i`` of ``n``, zero-padded to the width of ``n - 1``)::

    docs/synth/record-<i>.txt      the record's full_text (UTF-8, written: the records live inside one JSON file)
    truth/synth/record-<i>.json    {"text": full_text, "pii": [{"start", "end", "type"}, ...]} sorted by offset;
                                   a record without spans gets "pii": [] (a negative document, explicitly)
    ingestaudit.toml               [run] parsers = ["reference"] and [auditor_options.pii]: the label map from the
                                   data set's vocabulary to Presidio's (`LABEL_MAP`), the Presidio entity types the
                                   labels can be compared with (`ENTITIES`), negative_documents = "no_spans" (every
                                   record is labelled exhaustively)

Not imported (listed in ``import.json`` with the reason): a span whose ``entity_value`` differs from
``full_text[start:end]``, or whose offsets fall outside the text; a record that is not an object with a string
``full_text`` and a list of ``spans``. ``extra["template_id"]`` maps every document id to its record's template.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from ingestaudit.importers import (ImportSummary, SourceLayoutError, Unsupported, class_counts, finish,
                                   staged_corpus)

KIND = "presidio-synth"
DOC_CLASS = "synth"

LABEL_MAP: dict[str, str] = {"GPE": "LOCATION", "STREET_ADDRESS": "LOCATION", "DOMAIN_NAME": "URL"}
"""presidio-research labels -> Presidio Analyzer entity types where the names differ. Labels Presidio has no
recognizer for (ORGANIZATION: spaCy's ORG is ignored by Presidio's default configuration; TITLE, AGE, ZIP_CODE)
stay unmapped and are listed by the auditor, not dropped."""

ENTITIES: tuple[str, ...] = ("CREDIT_CARD", "DATE_TIME", "EMAIL_ADDRESS", "IBAN_CODE", "IP_ADDRESS", "LOCATION",
                             "NRP", "PERSON", "PHONE_NUMBER", "URL", "US_DRIVER_LICENSE", "US_SSN")
"""Presidio entity types that some label of the data set maps onto; predictions of other types (US_BANK_NUMBER,
UK_NHS, CRYPTO...) cannot be compared with these labels and are set aside by the auditor (counted)."""


def _data_file(src: Path) -> Path:
    if src.is_file():
        return src
    if not src.is_dir():
        raise SourceLayoutError(f"{src}: no such file or folder (expected a presidio-research JSON data set)")
    files = sorted(p for p in src.glob("*.json") if p.is_file())
    if len(files) != 1:
        names = ", ".join(p.name for p in files) or "none"
        raise SourceLayoutError(f"{src}: expected exactly one presidio-research *.json data file, found {names}; "
                                "pass the file itself")
    return files[0]


def _read_records(path: Path) -> list[Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceLayoutError(f"{path}: not a UTF-8 JSON file ({exc})") from None
    if not isinstance(data, list):
        raise SourceLayoutError(f"{path}: expected a JSON list of records, found {type(data).__name__}")
    return data


def _config_toml() -> str:
    mapping = ", ".join(f"{k}={v}" for k, v in sorted(LABEL_MAP.items()))
    entities = ", ".join(ENTITIES)
    return (
        "# Written by `ingestaudit import presidio-synth`: audit Presidio on the reference text (component level).\n"
        "[run]\n"
        'parsers = ["reference"]\n'
        "\n"
        "[auditor_options.pii]\n"
        "# presidio-research labels -> Presidio entity types; unmapped labels are listed in the report\n"
        f'label_map = "{mapping}"\n'
        "# Presidio types the labels can be compared with; predictions of other types are set aside (counted)\n"
        f'entities = "{entities}"\n'
        "# every record is labelled exhaustively: a record without spans holds no PII\n"
        'negative_documents = "no_spans"\n'
    )


def import_presidio_synth(src: Path, dest: Path, *, limit: int | None = None) -> ImportSummary:
    """Build a ``pii`` corpus from a presidio-research JSON data set (see the module docstring).

    Args:
        src: the data file, or a folder holding exactly one ``*.json`` data file.
        dest: the corpus folder to create (absent or empty).
        limit: import only the first ``limit`` records (None: all).

    Returns:
        `ImportSummary`: ``imported`` counts spans per entity type plus ``records`` and ``negative_records``;
        ``extra["template_id"]`` maps doc id -> template id.

    Raises:
        SourceLayoutError: no (or several) data files, invalid JSON, not a list, or no usable record.
        DestinationNotEmpty: ``dest`` exists and is not empty.
        ValueError: ``limit`` below 1.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    src = Path(src).absolute()
    path = _data_file(src)
    records = _read_records(path)
    if limit is not None:
        records = records[:limit]
    width = max(4, len(str(max(len(records) - 1, 0))))
    rel_src = path.name
    unsupported: list[Unsupported] = []
    plan: list[tuple[str, str, list[dict[str, Any]], Any]] = []
    types: Counter = Counter()
    for i, rec in enumerate(records):
        item = f"record {i}"
        if not isinstance(rec, dict) or not isinstance(rec.get("full_text"), str) \
                or not isinstance(rec.get("spans"), list):
            unsupported.append(Unsupported(item, "record", "not an object with a string full_text and a list of "
                                           "spans", rel_src))
            continue
        text = rec["full_text"]
        spans: list[dict[str, Any]] = []
        for j, s in enumerate(rec["spans"]):
            try:
                start, end, typ = int(s["start_position"]), int(s["end_position"]), str(s["entity_type"])
            except (KeyError, TypeError, ValueError):
                unsupported.append(Unsupported(f"{item} span {j}", "span", "missing or non-integer "
                                               "start_position/end_position or entity_type", rel_src))
                continue
            if not (0 <= start < end <= len(text)) or not typ:
                unsupported.append(Unsupported(f"{item} span {j}", typ or "span", f"offsets [{start}, {end}) "
                                               f"outside the text ({len(text)} code points)", rel_src))
                continue
            value = s.get("entity_value")
            if value is not None and text[start:end] != value:
                unsupported.append(Unsupported(f"{item} span {j}", typ, f"entity_value {value!r} differs from "
                                               f"full_text[{start}:{end}] = {text[start:end]!r}", rel_src))
                continue
            spans.append({"start": start, "end": end, "type": typ})
            types[typ] += 1
        spans.sort(key=lambda s: (s["start"], s["end"], s["type"]))
        plan.append((f"{DOC_CLASS}/record-{i:0{width}d}", text, spans, rec.get("template_id")))
    if not plan:
        raise SourceLayoutError(f"{path}: no usable record")

    negatives = sum(1 for _, _, spans, _ in plan if not spans)
    notes = [
        "documents are .txt files written from full_text (not links: the records live inside one JSON file)",
        f"{negatives} records without spans are negative documents ('pii': [])",
        "ingestaudit.toml maps the data set's labels to Presidio's entity types: "
        + ", ".join(f"{k} -> {v}" for k, v in sorted(LABEL_MAP.items()))
        + "; other labels without a Presidio recognizer stay unmapped and are listed by the auditor",
        "all PII values are synthetic (presidio-research data generator)",
    ]
    if limit is not None:
        notes.append(f"only the first {limit} records were imported (limit)")
    with staged_corpus(dest) as w:
        for doc_id, text, spans, _ in plan:
            w.text(f"docs/{doc_id}.txt", text)
            w.json(f"truth/{doc_id}.json", {"text": text, "pii": spans})
        w.text("ingestaudit.toml", _config_toml())
        doc_ids = [p[0] for p in plan]
        summary = ImportSummary(
            kind=KIND, source=str(path), dest=str(Path(dest).absolute()), documents=tuple(doc_ids),
            classes=class_counts(doc_ids), truth_files=len(plan), outputs={},
            imported={"records": len(plan), "negative_records": negatives,
                      **{f"span:{t}": n for t, n in sorted(types.items())}},
            unsupported=tuple(unsupported), notes=tuple(notes),
            extra={"template_id": {doc_id: tid for doc_id, _, _, tid in plan},
                   "label_map": dict(sorted(LABEL_MAP.items())), "entities": list(ENTITIES)})
        finish(w, summary)
    return summary
