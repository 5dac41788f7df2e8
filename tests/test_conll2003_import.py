"""CoNLL-2003 importer (issue 28): -DOCSTART- documents, one token per line, IOB1 and IOB2 tags."""

import json

import pytest

from ingestaudit.importers import SourceLayoutError
from ingestaudit.importers.conll2003 import import_conll2003
from ingestaudit.corpus import discover
from ingestaudit.truth import load_truth

# the first sentence of CoNLL-2003 eng.train (IOB1: I- starts an entity), then a document in IOB2 style
IOB1 = """-DOCSTART- -X- O O

EU NNP I-NP I-ORG
rejects VBZ I-VP O
German JJ I-NP I-MISC
call NN I-NP O
. . O O

Peter NNP I-NP I-PER
Blackburn NNP I-NP I-PER

-DOCSTART- -X- O O

Smith NNP I-NP I-PER
Jones NNP I-NP B-PER
visited VBD I-VP O
New NNP I-NP I-LOC
York NNP I-NP I-LOC
"""


def test_iob1_documents_texts_and_spans(tmp_path):
    src = tmp_path / "eng.train"
    src.write_text(IOB1, encoding="utf-8")
    summary = import_conll2003(src, tmp_path / "corpus")
    assert summary.documents == ("eng/doc-0000", "eng/doc-0001")
    first = json.loads((tmp_path / "corpus/truth/eng/doc-0000.json").read_text("utf-8"))
    assert first["text"] == "EU rejects German call .\nPeter Blackburn"
    assert first["entities"] == [{"start": 0, "end": 2, "type": "ORG"}, {"start": 11, "end": 17, "type": "MISC"},
                                 {"start": 25, "end": 40, "type": "PER"}]
    second = json.loads((tmp_path / "corpus/truth/eng/doc-0001.json").read_text("utf-8"))
    # B-PER after I-PER: two touching entities; New York one LOC
    assert second["entities"] == [{"start": 0, "end": 5, "type": "PER"}, {"start": 6, "end": 11, "type": "PER"},
                                  {"start": 20, "end": 28, "type": "LOC"}]
    assert first["entity_types"] == ["LOC", "MISC", "ORG", "PER"]
    assert summary.imported["entity:PER"] == 3 and summary.imported["sentences"] == 3
    c = discover(tmp_path / "corpus")
    assert [len(load_truth(d, c.root).entities) for d in c.documents] == [3, 3]  # the truth loader accepts them
    assert 'type_map = "' in (tmp_path / "corpus/ingestaudit.toml").read_text("utf-8")


def test_iob2_rejects_a_document_whose_i_tag_starts_an_entity(tmp_path):
    src = tmp_path / "mixed.txt"
    src.write_text("-DOCSTART- O\n\nAnn B-PER\nLee I-PER\n\n-DOCSTART- O\n\nBo I-PER\n", encoding="utf-8")
    summary = import_conll2003(src, tmp_path / "corpus", scheme="iob2")
    assert summary.documents == ("mixed/doc-0000",)
    (bad,) = summary.unsupported
    assert bad.reason == "line 8: I-PER does not continue an entity of type PER (iob2)"
    iob1 = import_conll2003(src, tmp_path / "corpus1")  # read as IOB1, the same file gives both documents
    assert len(iob1.documents) == 2 and not iob1.unsupported


def test_bad_tag_and_empty_source(tmp_path):
    src = tmp_path / "bad.txt"
    src.write_text("Ann X-PER\n", encoding="utf-8")
    with pytest.raises(SourceLayoutError, match="no usable document"):
        import_conll2003(src, tmp_path / "corpus")
    with pytest.raises(ValueError, match="scheme must be one of iob1, iob2"):
        import_conll2003(src, tmp_path / "corpus", scheme="bilou")


def test_the_import_command_takes_the_scheme(tmp_path):
    """``ingestaudit import conll2003 --scheme iob2``: the importer reads IOB2 (a document whose I- tag starts an
    entity is listed unsupported); iob1 reads the same file whole; an unknown scheme, or --scheme for an importer
    without one, is exit 2 naming it, nothing written."""
    from typer.testing import CliRunner

    from ingestaudit.cli import app

    src = tmp_path / "mixed.txt"
    src.write_text("-DOCSTART- O\n\nAnn B-PER\nLee I-PER\n\n-DOCSTART- O\n\nBo I-PER\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["import", "conll2003", str(src), str(tmp_path / "iob2"), "--scheme", "iob2"])
    assert res.exit_code == 0, res.output
    manifest = json.loads((tmp_path / "iob2" / "import.json").read_text("utf-8"))
    assert manifest["extra"]["scheme"] == "iob2" and manifest["documents"] == ["mixed/doc-0000"]
    res = CliRunner().invoke(app, ["import", "conll2003", str(src), str(tmp_path / "iob1"), "--scheme", "iob1"])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "iob1" / "import.json").read_text("utf-8"))["documents"] == [
        "mixed/doc-0000", "mixed/doc-0001"]
    res = CliRunner().invoke(app, ["import", "conll2003", str(src), str(tmp_path / "bad"), "--scheme", "bio"])
    assert res.exit_code == 2 and "--scheme 'bio': the conll2003 importer reads iob1, iob2" in res.stderr
    (tmp_path / "data").mkdir()
    res = CliRunner().invoke(app, ["import", "docling", str(tmp_path / "data"), str(tmp_path / "none"), "--scheme",
                                   "iob2"])
    assert res.exit_code == 2 and "the docling importer has no --scheme" in res.stderr
    assert not (tmp_path / "bad").exists() and not (tmp_path / "none").exists()
