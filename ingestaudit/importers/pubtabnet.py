"""Import PubTabNet's sample tables (ibm-aur-nlp/PubTabNet; Zhong, ShafieiBavani and Jimeno Yepes, ECCV 2020) as a
corpus for the tables audit.

Source layout (as in ``../shared/data/pubtabnet``, copied from the PubTabNet repository)::

    SRC/src/sample_gt.json          {"<image>.png": {"html": "<html><body><table>...</table></body></html>"}, ...}
    SRC/src/sample_pred.json        {"<image>.png": "<predicted HTML>", ...}  (one model's predictions)
    SRC/val_mini_images/<image>.png the 20 table images of sample_gt
    SRC/examples/PubTabNet_Examples.jsonl + <image>.png   optional: 20 annotations in PubTabNet's token format

Corpus written::

    docs/pubtabnet/<stem>.png                   symbolic link to the table image of each sample_gt entry
    truth/pubtabnet/<stem>.json                 {"tables": [<the ground-truth HTML string, unchanged>]}
    outputs/sample_pred/pubtabnet/<stem>.json   {"text": "", "tables": [<the predicted HTML, unchanged>]}
    docs/pubtabnet_examples/<stem>.png          each PubTabNet_Examples.jsonl record's image (when present)
    truth/pubtabnet_examples/<stem>.json        {"tables": [pubtabnet_to_html(record)]}

The HTML strings are copied byte for byte, so ``ingestaudit run DEST --outputs DEST/outputs --stage tables`` gives,
for the ``sample_pred`` parser, the per-image TEDS that PubTabNet's ``src/demo.ipynb`` prints (the values in
``expected_teds_from_demo_notebook.json``) and their mean as the ``pubtabnet`` class's ``tables.teds``. The
predicted files carry an empty ``text``: the predictions are HTML tables only, and no text is invented for them.
A sample_gt entry without its image, a prediction without a ground truth, and an example whose annotation does not
convert are listed in `ImportSummary.unsupported`; a ground truth without a prediction is imported (its
``sample_pred`` row is ``no_prediction``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ingestaudit.importers import (
    ImportSummary,
    SourceLayoutError,
    Unsupported,
    class_counts,
    finish,
    require_dir,
    require_file,
    staged_corpus,
)
from ingestaudit.metrics.table_html import pubtabnet_to_html

KIND = "pubtabnet"
DOC_CLASS = "pubtabnet"
EXAMPLES_CLASS = "pubtabnet_examples"
PARSER = "sample_pred"
EXAMPLES = "examples/PubTabNet_Examples.jsonl"


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SourceLayoutError(f"{path}: {what} is not valid UTF-8 JSON ({exc})") from None
    if not isinstance(data, dict):
        raise SourceLayoutError(f"{path}: {what} must be a JSON object keyed by image file name")
    return data


def _stem(name: str) -> str:
    return name[:-4] if name.lower().endswith(".png") else name


def import_pubtabnet(src: Path, dest: Path) -> ImportSummary:
    """Build the corpus described in the module docstring from PubTabNet's sample data at ``src``.

    Args:
        src: the folder with ``src/sample_gt.json``, ``src/sample_pred.json`` and ``val_mini_images/``.
        dest: the corpus folder to create (absent or empty).

    Returns:
        `ImportSummary`: ``imported`` counts reference tables per class (``tables``, ``example_tables``),
        ``outputs`` the predicted files of ``sample_pred``.

    Raises:
        SourceLayoutError: a required file or folder is missing, or a JSON file is malformed or of the wrong shape.
        DestinationNotEmpty: ``dest`` exists and is not empty.
    """
    src = Path(src).absolute()
    gt = _read_json(require_file(src / "src" / "sample_gt.json", "PubTabNet's ground-truth HTML"), "sample_gt.json")
    pred = _read_json(require_file(src / "src" / "sample_pred.json", "PubTabNet's predicted HTML"),
                      "sample_pred.json")
    images = require_dir(src / "val_mini_images", "the table images of sample_gt.json")
    unsupported: list[Unsupported] = []
    docs: list[str] = []
    n_pred = 0
    n_examples = 0
    with staged_corpus(dest) as w:
        for name in sorted(gt):
            entry = gt[name]
            html = entry.get("html") if isinstance(entry, dict) else None
            if not isinstance(html, str) or not html.strip():
                unsupported.append(Unsupported(name, "table", "ground truth has no 'html' string",
                                               "src/sample_gt.json"))
                continue
            image = images / name
            if not image.is_file():
                unsupported.append(Unsupported(name, "table", "no table image of that name in val_mini_images/",
                                               "src/sample_gt.json"))
                continue
            doc_id = f"{DOC_CLASS}/{_stem(name)}"
            w.link(f"docs/{doc_id}.png", image)
            w.json(f"truth/{doc_id}.json", {"tables": [html]})
            docs.append(doc_id)
            p = pred.get(name)
            if isinstance(p, str):
                w.json(f"outputs/{PARSER}/{doc_id}.json", {"text": "", "tables": [p]})
                n_pred += 1
        for name in sorted(set(pred) - set(gt)):
            unsupported.append(Unsupported(name, "prediction", "prediction without a ground truth",
                                           "src/sample_pred.json"))
        for name in sorted(n for n in set(pred) & set(gt) if not isinstance(pred[n], str)):
            unsupported.append(Unsupported(name, "prediction", "prediction is not an HTML string",
                                           "src/sample_pred.json"))
        jsonl = src / EXAMPLES
        if jsonl.is_file():
            n_examples = _import_examples(jsonl, w, docs, unsupported)
        notes = [
            f"outputs/{PARSER} holds the predicted HTML of src/sample_pred.json (one model's output, as shipped "
            "with PubTabNet's metric code), with an empty text; run with --outputs DEST/outputs --stage tables",
            "tables are copied unchanged; every tables.* value uses the published TEDS unless deviations are set in "
            "[auditor_options.tables]",
        ]
        if not jsonl.is_file():
            notes.append(f"{EXAMPLES} not found: no {EXAMPLES_CLASS} class")
        docs.sort()
        imported = {"tables": len(docs) - n_examples}
        if n_examples:
            imported["example_tables"] = n_examples
        summary = ImportSummary(
            kind=KIND, source=str(src), dest=str(Path(dest).absolute()), documents=tuple(docs),
            classes=class_counts(docs), truth_files=len(docs), outputs={PARSER: n_pred} if n_pred else {},
            imported=imported, unsupported=tuple(unsupported), notes=tuple(notes + w.copy_notes()))
        return finish(w, summary)


def _import_examples(jsonl: Path, w: Any, docs: list[str], unsupported: list[Unsupported]) -> int:
    """Import PubTabNet_Examples.jsonl records (token format) whose image exists; returns how many."""
    rel = EXAMPLES
    count = 0
    seen: set[str] = set()
    for lineno, line in enumerate(jsonl.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            name = record["filename"]
            html = pubtabnet_to_html(record)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            unsupported.append(Unsupported(f"line {lineno}", "table", f"annotation does not convert ({exc})",
                                           f"{rel}:{lineno}"))
            continue
        image = jsonl.parent / name
        if not image.is_file() or name in seen:
            why = "no image of that name next to the jsonl" if not image.is_file() else "duplicate file name"
            unsupported.append(Unsupported(name, "table", why, f"{rel}:{lineno}"))
            continue
        seen.add(name)
        doc_id = f"{EXAMPLES_CLASS}/{_stem(name)}"
        w.link(f"docs/{doc_id}.png", image)
        w.json(f"truth/{doc_id}.json", {"tables": [html]})
        docs.append(doc_id)
        count += 1
    return count
