"""PAGE XML / ALTO readers (ingestaudit.ocrxml): hand-made files, malformed input, and dinglehopper's real OCR data."""

from __future__ import annotations

import json
import unicodedata
from xml.sax.saxutils import escape, quoteattr

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Levenshtein

from ingestaudit.ocrxml import ocr_xml_format, parse_ocr_xml, read_ocr_xml

PAGE_2019 = "http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15"
ALTO_V3 = "http://www.loc.gov/standards/alto/ns-v3#"


def page(body: str, ns: str | None = PAGE_2019, reading_order: str = "") -> str:
    xmlns = f' xmlns="{ns}"' if ns else ""
    ro = f"<ReadingOrder>{reading_order}</ReadingOrder>" if reading_order else ""
    return f'<?xml version="1.0" encoding="UTF-8"?><PcGts{xmlns}><Page imageFilename="x.png">{ro}{body}</Page></PcGts>'


def te(text: str, **attrs: str) -> str:
    a = "".join(f" {k}={quoteattr(v)}" for k, v in attrs.items())
    return f"<TextEquiv{a}><Unicode>{escape(text)}</Unicode></TextEquiv>"


def region(rid: str, text: str | None = None, lines: list[str] | None = None) -> str:
    inner = "".join(f'<TextLine id="{rid}l{i}">{te(t)}</TextLine>' for i, t in enumerate(lines or []))
    own = te(text) if text is not None else ""
    return f'<TextRegion id="{rid}">{inner}{own}</TextRegion>'


def alto(lines: str, ns: str | None = ALTO_V3) -> str:
    xmlns = f' xmlns="{ns}"' if ns else ""
    return (f'<?xml version="1.0" encoding="UTF-8"?><alto{xmlns}><Layout><Page><PrintSpace><TextBlock>{lines}'
            "</TextBlock></PrintSpace></Page></Layout></alto>")


# ---------------------------------------------------------------- PAGE XML


def test_page_reading_order_sorts_by_index_not_document_order():
    # document order r1, r2, r3; ReadingOrder indices say r3 (0), r1 (1), r2 (2)
    ro = ('<OrderedGroup id="g"><RegionRefIndexed index="2" regionRef="r2"/><RegionRefIndexed index="0" '
          'regionRef="r3"/><RegionRefIndexed index="1" regionRef="r1"/></OrderedGroup>')
    xml = page(region("r1", "one") + region("r2", "two") + region("r3", "three"), reading_order=ro)
    assert parse_ocr_xml(xml) == "three\none\ntwo"


def test_page_nested_groups_and_unreferenced_regions_are_kept():
    # ordered: [r2, unordered{r3, r1}]; r4 is not referenced -> appended after, in document order; img is not text
    ro = ('<OrderedGroup id="g"><RegionRefIndexed index="0" regionRef="r2"/>'
          '<UnorderedGroupIndexed id="u" index="1"><RegionRef regionRef="r3"/><RegionRef regionRef="img"/>'
          '<RegionRef regionRef="r1"/></UnorderedGroupIndexed></OrderedGroup>')
    body = region("r1", "a") + region("r2", "b") + region("r3", "c") + region("r4", "d") + '<ImageRegion id="img"/>'
    assert parse_ocr_xml(page(body, reading_order=ro)) == "b\nc\na\nd"


def test_page_without_reading_order_uses_document_order_and_drops_empty_regions():
    xml = page(region("r1", "first") + region("r2", "") + region("r3", lines=["", ""]) + region("r4", "last"))
    assert parse_ocr_xml(xml) == "first\nlast"


def test_page_region_level_first_line_level_on_request():
    # The region's own TextEquiv and its lines disagree (as in dinglehopper's test-gt.page2018.xml).
    xml = page(region("r1", "line A\nline B", lines=["line B", "line A"]))
    assert parse_ocr_xml(xml) == "line A\nline B"
    assert parse_ocr_xml(xml, level="line") == "line B\nline A"


def test_page_falls_back_across_levels():
    # region without own text -> its lines; a line without own text -> its words joined by one space
    words = "".join(f'<Word id="w{i}">{te(w)}</Word>' for i, w in enumerate(["two", "words"]))
    body = f'<TextRegion id="r1"><TextLine id="l1">{te("own line")}</TextLine><TextLine id="l2">{words}</TextLine>' \
           f'</TextRegion>{region("r2", "region only")}'
    assert parse_ocr_xml(page(body)) == "own line\ntwo words\nregion only"
    assert parse_ocr_xml(page(body), level="line") == "own line\ntwo words\nregion only"


def test_page_textequiv_alternatives():
    # lowest @index wins even when listed later; without indices the highest @conf; else the first
    by_index = f'<TextRegion id="r">{te("second", index="2")}{te("first", index="1")}</TextRegion>'
    by_conf = f'<TextRegion id="r">{te("low", conf="0.2")}{te("high", conf="0.9")}{te("mid", conf="0.5")}</TextRegion>'
    plain = f'<TextRegion id="r">{te("a")}{te("b")}</TextRegion>'
    assert parse_ocr_xml(page(by_index)) == "first"
    assert parse_ocr_xml(page(by_conf)) == "high"
    assert parse_ocr_xml(page(plain)) == "a"


@pytest.mark.parametrize("ns", [
    "http://schema.primaresearch.org/PAGE/gts/pagecontent/2010-03-19",
    "http://schema.primaresearch.org/PAGE/gts/pagecontent/2013-07-15",
    "http://schema.primaresearch.org/PAGE/gts/pagecontent/2017-07-15",
    "http://schema.primaresearch.org/PAGE/gts/pagecontent/2018-07-15",
    PAGE_2019,
    None,
])
def test_page_any_namespace_version(ns):
    xml = page(region("r1", "Text"), ns=ns)
    assert ocr_xml_format(xml) == "page"
    assert parse_ocr_xml(xml) == "Text"


def test_text_is_returned_unnormalized():
    nfd = unicodedata.normalize("NFD", "café")  # 5 code points
    xml = page(region("r1", f"  {nfd} \ufb01  "))
    assert parse_ocr_xml(xml) == f"  {nfd} \ufb01  "


def test_bytes_str_and_declared_encoding():
    latin1 = page(region("r1", "Grüße")).replace('encoding="UTF-8"', 'encoding="ISO-8859-1"')
    assert parse_ocr_xml(latin1.encode("latin-1")) == "Grüße"
    assert parse_ocr_xml(latin1) == "Grüße"  # a str keeps its characters whatever it declares


# ---------------------------------------------------------------- ALTO


@pytest.mark.parametrize("ns", [
    "http://www.loc.gov/standards/alto/ns-v2#", ALTO_V3, "http://www.loc.gov/standards/alto/ns-v4#",
    "http://schema.ccs-gmbh.com/ALTO", None,
])
def test_alto_words_spaces_and_lines(ns):
    lines = ('<TextLine><String CONTENT="Hello"/><SP/><String CONTENT="world,"/><SP/><SP/><String CONTENT="again"/>'
             '</TextLine><TextLine><String CONTENT="no"/><String CONTENT="SP"/></TextLine><TextLine/>')
    xml = alto(lines, ns)
    assert ocr_xml_format(xml) == "alto"
    # two SP in a row are one space; Strings without SP are still separate words; the empty line is skipped
    assert parse_ocr_xml(xml) == "Hello world, again\nno SP"


def test_alto_hyphen_kept_as_printed():
    lines = ('<TextLine><String CONTENT="the"/><SP/><String CONTENT="hyphen" SUBS_TYPE="HypPart1" '
             'SUBS_CONTENT="hyphenated"/><HYP CONTENT="-"/></TextLine>'
             '<TextLine><String CONTENT="ated" SUBS_TYPE="HypPart2" SUBS_CONTENT="hyphenated"/><SP/>'
             '<String CONTENT="word"/></TextLine>')
    assert parse_ocr_xml(alto(lines)) == "the hyphen-\nated word"


def test_alto_blocks_are_joined_by_single_newlines_in_document_order():
    xml = alto('<TextLine><String CONTENT="a"/></TextLine></TextBlock><TextBlock>'
               '<TextLine><String CONTENT="b"/></TextLine>')
    assert parse_ocr_xml(xml) == "a\nb"


XML_CHARS = st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Cn"))  # what XML 1.0 can carry
words = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Cn", "Z")), min_size=1,
                max_size=8)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(words, min_size=1, max_size=5), min_size=0, max_size=5))
def test_alto_round_trip(lines):
    xml = alto("".join("<TextLine>" + "<SP/>".join(f"<String CONTENT={quoteattr(w)}/>" for w in line) + "</TextLine>"
                       for line in lines))
    assert parse_ocr_xml(xml) == "\n".join(" ".join(line) for line in lines)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=XML_CHARS, min_size=1, max_size=20).filter(lambda s: "\r" not in s), min_size=1,
                max_size=5))
def test_page_round_trip(texts):
    body = "".join(region(f"r{i}", t) for i, t in enumerate(texts))
    assert parse_ocr_xml(page(body)) == "\n".join(texts)


# ---------------------------------------------------------------- malformed input


@pytest.mark.parametrize("content, fragment", [
    (b"", "empty file"),
    (b"<PcGts><Page>", "not well-formed XML"),
    (b"<html><body/></html>", "neither PAGE XML"),
    (b'<PcGts xmlns="urn:other"><Page/></PcGts>', "not a PAGE namespace"),
    (b'<alto xmlns="urn:other"><Layout/></alto>', "not an ALTO namespace"),
    (page("").replace("<Page imageFilename=\"x.png\">", "<Metadata>").replace("</Page>", "</Metadata>").encode(),
     "without a <Page>"),
    (b"<alto><Description/></alto>", "without a <Layout>"),
    (page('<TextRegion id="r1"><TextEquiv><PlainText>x</PlainText></TextEquiv></TextRegion>').encode(),
     "has no <Unicode>"),
    (page(f'<TextRegion id="r">{te("a", index="one")}{te("b", index="2")}</TextRegion>').encode(),
     "non-numeric @index='one'"),
    (page(region("r1", "x"), reading_order='<OrderedGroup id="g"><RegionRefIndexed index="x" regionRef="r1"/>'
                                           '</OrderedGroup>').encode(), "non-numeric @index='x'"),
    (alto("<TextLine><String/></TextLine>").encode(), "<String> without @CONTENT"),
])
def test_malformed_input_names_file_and_problem(tmp_path, content, fragment):
    path = tmp_path / "bad.page.xml"
    path.write_bytes(content)
    with pytest.raises(ValueError) as err:
        read_ocr_xml(path)
    assert str(err.value).startswith(str(path))
    assert fragment in str(err.value)


def test_missing_file_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="unreadable"):
        read_ocr_xml(tmp_path / "nope.xml")


def test_entities_are_not_expanded():
    xml = ('<?xml version="1.0"?><!DOCTYPE PcGts [<!ENTITY e "EXPANDED">]>'
           f'<PcGts xmlns="{PAGE_2019}"><Page><TextRegion id="r"><TextEquiv><Unicode>a&e;b</Unicode></TextEquiv>'
           '</TextRegion></Page></PcGts>')
    assert "EXPANDED" not in parse_ocr_xml(xml)


def test_bad_level():
    with pytest.raises(ValueError, match="level"):
        parse_ocr_xml(page(region("r", "x")), level="word")  # type: ignore[arg-type]


# ---------------------------------------------------------------- dinglehopper's real OCR files


def clusters(text: str) -> list[str]:
    """Extended grapheme clusters (UAX #29), the unit dinglehopper counts."""
    return regex.findall(r"\X", text)


def test_dinglehopper_lorem_ipsum_page_equals_alto(shared_data):
    # Published (expected_from_dinglehopper_tests.json): texts_equal true, edit distance 0.
    d = shared_data / "dinglehopper" / "lorem-ipsum"
    gt = read_ocr_xml(d / "lorem-ipsum-scan.gt.page.xml")
    assert gt == read_ocr_xml(d / "lorem-ipsum-scan.ocr.tesseract.alto.xml")
    assert gt.startswith("Lorem ipsum dolor sit amet, consetetur sadipscing elitr")


def test_dinglehopper_lorem_ipsum_bad_published_counts(shared_data):
    # Published: edit distance 8 over 591 ground-truth grapheme clusters, 100 ground-truth words. The text is ASCII, so
    # dinglehopper's normalization changes nothing and our extracted text must give exactly these counts.
    d = shared_data / "dinglehopper"
    published = json.loads((d / "expected_cer_wer_dinglehopper-0.11.0.json").read_text())["lorem_bad"]
    gt = clusters(read_ocr_xml(shared_data / published["gt"]))
    ocr = clusters(read_ocr_xml(shared_data / published["ocr"]))
    assert len(gt) == published["n_characters"] == 591
    assert Levenshtein.distance(gt, ocr) == round(published["cer"] * published["n_characters"]) == 8
    assert len("".join(gt).split()) == published["n_words"] == 100


def test_dinglehopper_fake_ocr_two_edits(shared_data):
    # Published: 2 edits ("2 characters changed, one fi ligature replaced by 'fi' which does not count").
    # Folding compatibility characters (NFKC: U+FB01 -> "fi", long s -> s) on both sides leaves exactly those 2.
    d = shared_data / "dinglehopper"
    gt = unicodedata.normalize("NFKC", read_ocr_xml(d / "test-gt.page2018.xml"))
    ocr = unicodedata.normalize("NFKC", read_ocr_xml(d / "test-fake-ocr.page2018.xml"))
    assert Levenshtein.distance(clusters(gt), clusters(ocr)) == 2


def test_dinglehopper_line_level_scrambles_reading_order(shared_data):
    # test-gt.page2018.xml, region r0: its TextLine elements are stored out of order (l5, l6, l7...: l6 is the
    # region's last line). The region-level TextEquiv, which dinglehopper reads, has them in reading order.
    path = shared_data / "dinglehopper" / "test-gt.page2018.xml"
    region_lines = read_ocr_xml(path).split("\n")
    line_lines = read_ocr_xml(path, level="line").split("\n")
    assert region_lines[1] == "Hartkopf, der Frau Amtm\ue42cnnin das ver⸗"
    assert line_lines[1] == "ihr do\uf502 no\uf502 an a\uf4f9em. —"
    assert sorted(region_lines) == sorted(line_lines)  # same lines, different order
