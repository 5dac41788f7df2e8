"""PyMuPDF's text-extraction flags by name: the canonical ``TEXT_*`` spellings the PyMuPDF adapter accepts, their
aliases, and the decomposition of a flag integer into names (shared by the parser and its table finder)."""

from __future__ import annotations

from typing import Any

#: Text-extraction flags this adapter accepts, by PyMuPDF constant name (canonical spelling).
TEXT_FLAGS = (
    "TEXT_PRESERVE_LIGATURES", "TEXT_PRESERVE_WHITESPACE", "TEXT_PRESERVE_IMAGES", "TEXT_INHIBIT_SPACES",
    "TEXT_DEHYPHENATE", "TEXT_PRESERVE_SPANS", "TEXT_MEDIABOX_CLIP", "TEXT_CID_FOR_UNKNOWN_UNICODE",
    "TEXT_COLLECT_STRUCTURE", "TEXT_ACCURATE_BBOXES", "TEXT_COLLECT_VECTORS", "TEXT_IGNORE_ACTUALTEXT",
    "TEXT_SEGMENT", "TEXT_PARAGRAPH_BREAK", "TEXT_TABLE_HUNT", "TEXT_COLLECT_STYLES",
    "TEXT_USE_GID_FOR_UNKNOWN_UNICODE", "TEXT_CLIP_RECT", "TEXT_ACCURATE_ASCENDERS", "TEXT_ACCURATE_SIDE_BEARINGS",
    "TEXT_LAZY_VECTORS", "TEXT_FUZZY_VECTORS",
)
#: Other PyMuPDF spellings of the same bits.
FLAG_ALIASES = {
    "TEXT_CLIP": "TEXT_MEDIABOX_CLIP",
    "TEXT_USE_CID_FOR_UNKNOWN_UNICODE": "TEXT_CID_FOR_UNKNOWN_UNICODE",
    "TEXT_STEXT_SEGMENT": "TEXT_SEGMENT",
}


def canonical_flag(name: str) -> str:
    """The canonical ``TEXT_*`` name for ``name`` (case-insensitive, ``TEXT_`` prefix optional, aliases resolved).

    Raises:
        ValueError: not a known text-extraction flag; the message lists the known ones.
    """
    key = name.strip().upper()
    if not key.startswith("TEXT_"):
        key = "TEXT_" + key
    key = FLAG_ALIASES.get(key, key)
    if key not in TEXT_FLAGS:
        raise ValueError(f"unknown PyMuPDF text flag {name!r}; known: {', '.join(TEXT_FLAGS)}")
    return key


def flag_names(value: int, pymupdf: Any) -> list[str]:
    """Decompose a PyMuPDF text-flag integer into sorted canonical names (bits without a name are reported as
    ``"0x..."``)."""
    names, covered = [], 0
    for name in TEXT_FLAGS:
        bit = getattr(pymupdf, name, None)
        if isinstance(bit, int) and bit and value & bit == bit:
            names.append(name)
            covered |= bit
    if value & ~covered:
        names.append(hex(value & ~covered))
    return sorted(names)
