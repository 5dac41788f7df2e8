"""The precomputed parser: reading an external pipeline's outputs (JSON, text, Markdown, PAGE XML, ALTO)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ingestaudit.document import Document
from ingestaudit.model import Block
from ingestaudit.parsers.base import ParserError
from ingestaudit.parsers.precomputed import MissingOutput, PrecomputedParser


def document(doc_id: str) -> Document:
    return Document(doc_id=doc_id, doc_class=doc_id.split("/")[0], path=Path("/corpus/docs") / f"{doc_id}.pdf")


def put(root: Path, rel: str, content: str | dict) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content) if isinstance(content, dict) else content, encoding="utf-8")
    return path


def test_json_output_with_every_field(tmp_path):
    text = "Heading\n\nJane Doe wrote this."  # "Jane Doe" is code points 9..17
    put(tmp_path, "mypipe/invoices/a.json", {
        "text": text,
        "pages": ["Heading\n\nJane Doe wrote this."],
        "blocks": [{"text": "Heading", "kind": "heading", "level": 1, "bbox": [1, 2, 3, 4]},
                   {"text": "Jane Doe wrote this.", "page": 1, "order": 5}],
        "tables": ["<table><tr><td>1</td></tr></table>"],
        "parser_version": "mypipe 1.2",
        "settings": {"ocr": False},
        "warnings": ["page 1 rotated"],
        "clean_text": "Jane Doe wrote this.",
        "language": "en",
        "pii": [{"start": 9, "end": 17, "type": "PERSON"}],
        "dup_cluster": 7,
        "chunks": [{"text": "Heading", "start": 0, "end": 7, "page": 1, "section": ["Heading"], "metadata": {}}],
    })
    parser = PrecomputedParser(tmp_path, "mypipe")
    parsed = parser.parse(document("invoices/a"))
    assert text[9:17] == "Jane Doe"
    assert parsed.text == text and parsed.pages == (text,)
    assert parsed.blocks == (Block("Heading", 1, (1.0, 2.0, 3.0, 4.0), "heading", 1, 0),
                             Block("Jane Doe wrote this.", 1, None, "paragraph", None, 5))
    assert parsed.tables == ("<table><tr><td>1</td></tr></table>",)
    assert parsed.parser == "mypipe" and parsed.parser_version == "mypipe 1.2"
    assert parsed.warnings == ("page 1 rotated",)
    assert parsed.settings == {"outputs_folder": "mypipe", "suffixes": [".json", ".txt", ".md", ".page.xml",
                                                                       ".alto.xml", ".xml"],
                               "format": "json", "pipeline": {"ocr": False},
                               "table_extraction": True}  # a "tables" key: the pipeline looked for tables
    assert parsed.extras == {
        "clean_text": "Jane Doe wrote this.", "language": "en",
        "pii": [{"start": 9, "end": 17, "type": "PERSON"}], "dup_cluster": 7,
        "chunks": [{"text": "Heading", "start": 0, "end": 7, "page": 1, "section": ["Heading"], "metadata": {}}],
    }
    json.dumps(parsed.extras)  # plain JSON values, ready for the report


def test_pages_only_json_joins_pages(tmp_path):
    put(tmp_path, "p/c/d.json", {"pages": ["one", "two"]})
    parsed = PrecomputedParser(tmp_path, "p").parse(document("c/d"))
    assert parsed.text == "one\n\ntwo" and parsed.pages == ("one", "two") and parsed.extras == {}


@pytest.mark.parametrize("rel, content, expected, fmt", [
    ("p/web/page.txt", "plain text\n", "plain text\n", "text"),
    ("p/web/page.md", "# Title\n\nbody", "# Title\n\nbody", "markdown"),
    ("p/web/page.page.xml", '<PcGts xmlns="http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15">'
     '<Page><TextRegion id="r"><TextEquiv><Unicode>from PAGE</Unicode></TextEquiv></TextRegion></Page></PcGts>',
     "from PAGE", "page-xml"),
    ("p/web/page.alto.xml", '<alto xmlns="http://www.loc.gov/standards/alto/ns-v4#"><Layout><Page><PrintSpace>'
     '<TextBlock><TextLine><String CONTENT="from"/><SP/><String CONTENT="ALTO"/></TextLine></TextBlock>'
     '</PrintSpace></Page></Layout></alto>', "from ALTO", "alto"),
    ("p/web/page.xml", '<alto><Layout><TextLine><String CONTENT="plain"/></TextLine></Layout></alto>', "plain",
     "ocr-xml"),
])
def test_text_and_ocr_xml_outputs(tmp_path, rel, content, expected, fmt):
    put(tmp_path, rel, content)
    parsed = PrecomputedParser(tmp_path, "p").parse(document("web/page"))
    assert parsed.text == expected and parsed.pages == (expected,)
    assert parsed.settings["format"] == fmt


def test_deeper_doc_ids_and_precedence(tmp_path):
    put(tmp_path, "p/cls/sub/name.txt", "from txt")
    put(tmp_path, "p/cls/sub/name.json", {"text": "from json"})
    parsed = PrecomputedParser(tmp_path, "p").parse(document("cls/sub/name"))
    assert parsed.text == "from json"
    assert parsed.warnings == ("ignored name.txt (read name.json)",)


def test_missing_output_is_its_own_error(tmp_path):
    (tmp_path / "p").mkdir()
    parser = PrecomputedParser(tmp_path, "p")
    assert parser.supports(document("a/b"))
    with pytest.raises(MissingOutput, match="no output for a/b"):
        parser.parse(document("a/b"))
    assert issubclass(MissingOutput, ParserError)


@pytest.mark.parametrize("content, message", [
    # the 14th character, "}", is where a property name was expected after the comma
    ('{"text": "a",}', "invalid JSON: Expecting property name enclosed in double quotes at line 1 column 14"),
    ("[1, 2]", "must be a JSON object, not list"),
    ({"text": "a", "txet": "b"}, "txet: unknown key"),
    ({"blocks": []}, "needs 'text' or 'pages'"),
    ({"text": "a", "blocks": [{"text": "x", "kind": "banner"}]}, "blocks[0].kind: Input should be 'heading'"),
    ({"text": "a", "blocks": [{"text": "x", "bbox": [1, 2, 3]}]}, "blocks[0].bbox[3]: Field required"),
    ({"text": "abc", "pii": [{"start": 1, "end": 9, "type": "X"}]}, "pii[0]: span [1, 9) is outside the text (3"),
    ({"text": "abc", "pii": [{"start": 2, "end": 1, "type": "X"}]}, "pii[0]: end (1) is before start (2)"),
    ({"text": "abc", "dup_cluster": [1]}, "dup_cluster: Input should be a valid string or Input should be a valid "
                                          "integer"),
])
def test_bad_json_names_file_and_field(tmp_path, content, message):
    path = put(tmp_path, "p/a/b.json", content)
    with pytest.raises(ParserError) as err:
        PrecomputedParser(tmp_path, "p").parse(document("a/b"))
    assert str(err.value).startswith(f"{path}: ")
    assert message in str(err.value)


def test_bad_text_and_xml_files(tmp_path):
    (tmp_path / "p" / "a").mkdir(parents=True)
    (tmp_path / "p" / "a" / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    put(tmp_path, "p/a/broken.page.xml", "<PcGts><Page>")
    parser = PrecomputedParser(tmp_path, "p")
    with pytest.raises(ParserError, match=r"latin\.txt: not UTF-8"):
        parser.parse(document("a/latin"))
    with pytest.raises(ParserError, match=r"broken\.page\.xml: not well-formed XML"):
        parser.parse(document("a/broken"))


@pytest.mark.parametrize("name", ["", "a/b", "..", "."])
def test_name_must_be_one_folder(tmp_path, name):
    with pytest.raises(ValueError):
        PrecomputedParser(tmp_path, name)


def test_version_settings_available(tmp_path):
    parser = PrecomputedParser(tmp_path, "calamari")
    assert parser.name == "calamari" and PrecomputedParser.name == "precomputed"
    assert parser.available() == (True, "external")
    assert parser.settings()["outputs_folder"] == "calamari"


def test_dinglehopper_outputs_as_a_precomputed_corpus(shared_data, tmp_path):
    # How the real OCR outputs map to <parser>/<doc id>: copied (outside the project) under the layout the runner
    # reads, the ALTO output of the clean lorem-ipsum scan reads as exactly its PAGE ground truth (published: equal).
    src = shared_data / "dinglehopper"
    layout = {
        "tesseract-ocrd/lorem/lorem-ipsum-scan.alto.xml": "lorem-ipsum/lorem-ipsum-scan.ocr.tesseract.alto.xml",
        "tesseract-ocrd/lorem/lorem-ipsum-scan-bad.alto.xml": "lorem-ipsum/lorem-ipsum-scan-bad.ocr.tesseract.alto.xml",
        "calamari/historic/actevedef_718448162.page.xml":
            "actevedef_718448162/OCR-D-OCR-CALAMARI/OCR-D-OCR-CALAMARI_0001.xml",
    }
    for rel, origin in layout.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / origin, tmp_path / rel)
    from ingestaudit.ocrxml import read_ocr_xml

    tess = PrecomputedParser(tmp_path, "tesseract-ocrd")
    parsed = tess.parse(document("lorem/lorem-ipsum-scan"))
    assert parsed.text == read_ocr_xml(src / "lorem-ipsum" / "lorem-ipsum-scan.gt.page.xml")
    assert parsed.settings["format"] == "alto"
    calamari = PrecomputedParser(tmp_path, "calamari").parse(document("historic/actevedef_718448162"))
    assert calamari.settings["format"] == "page-xml" and calamari.text.startswith("20\n")
    with pytest.raises(MissingOutput):
        PrecomputedParser(tmp_path, "calamari").parse(document("lorem/lorem-ipsum-scan"))
