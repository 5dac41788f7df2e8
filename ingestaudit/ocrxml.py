"""Readers for OCR XML: PAGE XML (PRImA, any ``pagecontent`` namespace version) and ALTO (v1 to v4).

Both formats serve as OCR ground truth and as OCR engine output; this module turns either into the page's plain text
in reading order, so CER/WER can compare them.

PAGE XML (Pletschacher & Antonacopoulos 2010, "The PAGE (Page Analysis and Ground-Truth Elements) Format Framework",
ICPR; schema https://github.com/PRImA-Research-Lab/PAGE-XML):

- Regions: every ``TextRegion`` of the page, ordered by the ``ReadingOrder`` when the page has one (``OrderedGroup``
  children sorted by ``@index``, ``UnorderedGroup`` children in document order, groups nested recursively), else in
  document order. Text regions that the reading order does not reference are appended after the ordered ones in
  document order, so no text disappears. Regions whose text is empty are dropped. Regions are joined with ``"\\n"``.
- Text of a region, ``level="region"`` (the default): the region's own ``TextEquiv/Unicode`` when it is non-empty,
  else its ``TextLine`` texts joined with ``"\\n"`` (lines with empty text skipped); a line's text is its own
  ``TextEquiv`` or, when that is missing or empty, its ``Word`` texts joined with ``" "``.
  ``level="line"``: the lines first (as above), falling back to the region's own ``TextEquiv`` when no line has text.
- Of several ``TextEquiv`` alternatives, the one with the lowest ``@index`` is used (PAGE: "the text content with the
  lowest index should be interpreted as the main text content"); without indices, the highest ``@conf``; else the first.
- The text is returned exactly as written (no Unicode normalization, no whitespace stripping).

Why ``region`` is the default: it is what the reference tool dinglehopper (qurator-spk/dinglehopper, ``page_text``
with its default ``textequiv_level="region"``, version 0.11.0) reads, and the two can disagree. In dinglehopper's
test page ``test-gt.page2018.xml`` and in region ``r9`` of ``actevedef_718448162/OCR-D-GT-PAGE/00000024.page.xml``
the ``TextLine`` elements are stored out of reading order inside their region, while the region-level
``TextEquiv`` holds the lines in reading order; a line-level reader therefore scrambles the line order (see
``tests/parsers/test_ocrxml.py``). Reading the region level reproduces dinglehopper's text on every file it ships.

ALTO (Library of Congress, https://www.loc.gov/standards/alto/, schema versions 1.x to 4.x):

- Lines: every ``TextLine`` under ``Layout`` in document order (ALTO has no region reading order in common use),
  joined with ``"\\n"``; lines without text are skipped. Blocks are not separated by blank lines (as in dinglehopper).
- Words: the ``String/@CONTENT`` values of a line joined with one ``" "``. ``SP`` marks the space between words; it
  is rendered as that single space whether or not the producer wrote it (several ``SP`` in a row still give one
  space).
- Hyphenation: the ``HYP/@CONTENT`` at a line end (the printed hyphen, e.g. ``"-"`` or ``"¬"``) is appended to the
  preceding word without a space, so the text shows the line as printed, like a PAGE transcription does. The
  ``SUBS_CONTENT`` of ``HypPart1``/``HypPart2`` words (the de-hyphenated form) is not used. dinglehopper 0.11.0
  ignores ``HYP`` elements; none of its test files contains one.

Malformed input raises ``ValueError`` whose message starts with the source (file name) and says what is wrong.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from lxml import etree

__all__ = ["OCR_XML_SUFFIXES", "ocr_xml_format", "parse_ocr_xml", "read_ocr_xml"]

#: File-name endings treated as OCR XML (longest first).
OCR_XML_SUFFIXES = (".page.xml", ".alto.xml", ".xml")

_PAGE_NS_PREFIX = "http://schema.primaresearch.org/PAGE/gts/pagecontent/"
_ALTO_NS_PREFIXES = ("http://www.loc.gov/standards/alto/", "http://schema.ccs-gmbh.com/ALTO")
_GROUPS = {"OrderedGroup", "OrderedGroupIndexed", "UnorderedGroup", "UnorderedGroupIndexed"}
_ORDERED = {"OrderedGroup", "OrderedGroupIndexed"}
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")

Level = Literal["region", "line"]


def _parser() -> etree.XMLParser:
    # No entity expansion, no network, no DTD: OCR files come from outside.
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def _root(data: bytes | str, source: str) -> etree._Element:
    if isinstance(data, str):
        data = _XML_DECL.sub("", data, count=1)  # lxml refuses str input that declares an encoding
    if not data or not data.strip():
        raise ValueError(f"{source}: empty file, expected PAGE XML or ALTO")
    try:
        return etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        raise ValueError(f"{source}: not well-formed XML ({exc})") from None


def _localname(el: etree._Element) -> str:
    return etree.QName(el).localname if isinstance(el.tag, str) else ""


def _detect(root: etree._Element, source: str) -> tuple[Literal["page", "alto"], str | None]:
    qn = etree.QName(root)
    ns = qn.namespace
    if qn.localname == "PcGts":
        if ns is None or ns.startswith(_PAGE_NS_PREFIX):
            return "page", ns
        raise ValueError(f"{source}: root <PcGts> has namespace {ns!r}, not a PAGE namespace ({_PAGE_NS_PREFIX}...)")
    if qn.localname.lower() == "alto":
        if ns is None or ns.startswith(_ALTO_NS_PREFIXES):
            return "alto", ns
        raise ValueError(f"{source}: root <alto> has namespace {ns!r}, not an ALTO namespace")
    raise ValueError(f"{source}: neither PAGE XML (root <PcGts>) nor ALTO (root <alto>); the root is <{qn.localname}>")


def ocr_xml_format(data: bytes | str, *, source: str = "<string>") -> Literal["page", "alto"]:
    """Which OCR XML format ``data`` is: ``"page"`` (root ``PcGts`` in a PAGE namespace or none) or ``"alto"``
    (root ``alto`` in an ALTO namespace or none).

    Raises:
        ValueError: not well-formed XML, or neither format (message starts with ``source``).
    """
    return _detect(_root(data, source), source)[0]


def parse_ocr_xml(data: bytes | str, *, source: str = "<string>", level: Level = "region") -> str:
    """The page text of PAGE XML or ALTO given as bytes or str, in reading order (rules in the module docstring).

    Args:
        data: the XML document (bytes are decoded per their XML declaration; str may keep its declaration).
        source: name used in error messages, e.g. the file path.
        level: PAGE only: ``"region"`` (default, as dinglehopper) or ``"line"``: which ``TextEquiv`` level is read
            first when both exist.

    Returns:
        The text, lines joined with ``"\\n"``; ``""`` for a page without text. Never normalized.

    Raises:
        ValueError: empty or not well-formed XML, unknown root or namespace, a PAGE file without ``Page``, an ALTO
            file without ``Layout``, a ``TextEquiv`` without ``Unicode``, a ``String`` without ``CONTENT``, or a
            non-numeric ``@index``/``@conf``; the message names ``source`` and, where it helps, the XML line.
    """
    if level not in ("region", "line"):
        raise ValueError(f"level must be 'region' or 'line', not {level!r}")
    root = _root(data, source)
    kind, ns = _detect(root, source)
    if kind == "page":
        return _PageReader(ns, source, level).text(root)
    return _alto_text(root, ns, source)


def read_ocr_xml(path: str | Path, *, level: Level = "region") -> str:
    """The page text of a PAGE XML or ALTO file, in reading order; see `parse_ocr_xml`.

    Raises:
        ValueError: the file is unreadable or malformed; the message starts with the path.
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ValueError(f"{p}: unreadable ({exc.strerror or exc})") from None
    return parse_ocr_xml(data, source=str(p), level=level)


class _PageReader:
    """PAGE XML text extraction for one namespace."""

    def __init__(self, ns: str | None, source: str, level: Level):
        self.ns, self.source, self.level = ns, source, level

    def q(self, local: str) -> str:
        return f"{{{self.ns}}}{local}" if self.ns else local

    def text(self, root: etree._Element) -> str:
        page = root.find(self.q("Page"))
        if page is None:
            raise ValueError(f"{self.source}: PAGE XML without a <Page> element")
        regions = list(page.iter(self.q("TextRegion")))
        ordered = regions
        ro = page.find(self.q("ReadingOrder"))
        if ro is not None:
            by_id = {r.get("id"): r for r in regions}
            ordered, seen = [], set()
            for ref in self._refs(ro):
                region = by_id.get(ref)
                if region is not None and ref not in seen:  # refs to image/graphic regions are normal
                    seen.add(ref)
                    ordered.append(region)
            ordered += [r for r in regions if r.get("id") not in seen]
        texts = [self._region_text(r) for r in ordered]
        return "\n".join(t for t in texts if t)

    def _refs(self, group: etree._Element) -> list[str]:
        out: list[str] = []
        for child in group:
            name = _localname(child)
            if name in _GROUPS:
                out += self._group(child)
        return out

    def _group(self, group: etree._Element) -> list[str]:
        out = [group.get("regionRef")] if group.get("regionRef") else []
        children = [c for c in group if _localname(c) in _GROUPS or c.get("regionRef") is not None]
        if _localname(group) in _ORDERED:
            # stable sort: children without @index keep their document order after the indexed ones
            keyed = [(self._number(c, "index", int), i, c) for i, c in enumerate(children)]
            keyed.sort(key=lambda t: (t[0] is None, t[0] if t[0] is not None else 0, t[1]))
            children = [c for _, _, c in keyed]
        for child in children:
            if _localname(child) in _GROUPS:
                out += self._group(child)
            else:
                out.append(child.get("regionRef"))
        return out

    def _number(self, el: etree._Element, attr: str, cast: type) -> float | int | None:
        raw = el.get(attr)
        if raw is None:
            return None
        try:
            return cast(raw)
        except ValueError:
            raise ValueError(f"{self.source}: line {el.sourceline}: <{_localname(el)}> has non-numeric "
                             f"@{attr}={raw!r}") from None

    def _equiv(self, el: etree._Element) -> str:
        """The chosen ``TextEquiv/Unicode`` text of ``el``; ``""`` when it has none."""
        tes = el.findall(self.q("TextEquiv"))
        if not tes:
            return ""
        te = tes[0]
        if len(tes) > 1:
            indexed = [(self._number(t, "index", int), i) for i, t in enumerate(tes)]
            if any(ix is not None for ix, _ in indexed):
                te = tes[min((ix, i) for ix, i in indexed if ix is not None)[1]]
            else:
                confs = [(c, i) for i, t in enumerate(tes) if (c := self._number(t, "conf", float)) is not None]
                if confs:
                    best = max(c for c, _ in confs)
                    te = tes[next(i for c, i in confs if c == best)]  # first of the most confident
        uni = te.find(self.q("Unicode"))
        if uni is None:
            raise ValueError(f"{self.source}: line {te.sourceline}: <TextEquiv> of <{_localname(el)} "
                             f"id={el.get('id')!r}> has no <Unicode>")
        return uni.text or ""

    def _line_text(self, line: etree._Element) -> str:
        own = self._equiv(line)
        if own:
            return own
        words = (self._equiv(w) for w in line.findall(self.q("Word")))
        return " ".join(w for w in words if w)

    def _lines_text(self, region: etree._Element) -> str:
        lines = (self._line_text(line) for line in region.findall(self.q("TextLine")))
        return "\n".join(t for t in lines if t)

    def _region_text(self, region: etree._Element) -> str:
        if self.level == "region":
            return self._equiv(region) or self._lines_text(region)
        return self._lines_text(region) or self._equiv(region)


def _alto_text(root: etree._Element, ns: str | None, source: str) -> str:
    def q(local: str) -> str:
        return f"{{{ns}}}{local}" if ns else local

    layout = root.find(q("Layout"))
    if layout is None:
        raise ValueError(f"{source}: ALTO without a <Layout> element")
    lines: list[str] = []
    for tl in layout.iter(q("TextLine")):
        words: list[str] = []
        for child in tl:
            name = _localname(child)
            if name == "String":
                content = child.get("CONTENT")
                if content is None:
                    raise ValueError(f"{source}: line {child.sourceline}: <String> without @CONTENT")
                if content:
                    words.append(content)
            elif name == "HYP":
                hyphen = child.get("CONTENT", "")
                if words:
                    words[-1] += hyphen
                elif hyphen:
                    words.append(hyphen)
        text = " ".join(words)
        if text:
            lines.append(text)
    return "\n".join(lines)
