"""Normalization drift of one text: Unicode forms and suspicious characters a parser leaves in its output.

Nothing here needs a reference: these are properties of the parser's text alone. Every count is an integer and
comes with its unit (code points or tokens) so an auditor can divide by the matching denominator.

Definitions (for a text T of n code points; "token" = maximal run of non-white-space, ``str.split()``):

- ``nfkc_differs``: NFC(T) != NFKC(T) (UAX #15): the text holds compatibility characters.
- ``nfkc_changed_chars``: number of code points x of T with NFKC(x) != NFC(x), i.e. characters that only a
  compatibility normalization folds (ligatures, full-width forms, superscripts, U+00B5 MICRO SIGN, NBSP...).
  Canonical-only differences (a decomposed "é") are not counted here but in ``non_nfc_sequences``.
- ``invisible_chars``: code points in {U+00AD, U+200B, U+200C, U+200D, U+2060, U+FEFF}.
- ``ligatures``: code points in U+FB00-U+FB06.
- ``non_nfc_sequences``: extended grapheme clusters g of T (UAX #29, ``regex`` ``\\X``) with NFC(g) != g: one per
  decomposed or non-canonical character sequence ("cafe" + U+0301 has one).
- ``replacement_chars``: code points equal to U+FFFD REPLACEMENT CHARACTER (bytes the parser could not decode).
- ``mixed_script_tokens``: tokens whose letters come from Latin and from Cyrillic or Greek (script aliases from
  ``confusable_homoglyphs``, Unicode ``Scripts.txt``) and which contain a character that ``confusable_homoglyphs``
  (Unicode ``confusables.txt``, UTS #39) lists as confusable with a letter of the token's majority script (ties go
  to Latin). Catches "Рhobos" with a Cyrillic Р; also counts scientific tokens such as "α-helix", whose α is a
  listed look-alike of Latin a.
- ``mojibake_suspects``: ``ftfy.badness.badness(T)``: the number of character sequences ftfy's heuristics consider
  typical of text decoded with the wrong codec ("CafÃ©" has one); ``fix_encoding_changes`` says whether
  ``ftfy.fix_encoding`` would change T.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass, field

import regex

INVISIBLE = ("\u00ad", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff")
LIGATURES = tuple(chr(cp) for cp in range(0xFB00, 0xFB07))
REPLACEMENT = "\ufffd"

_GRAPHEME = regex.compile(r"\X")
_LATIN = regex.compile(r"\p{Script=Latin}")
_CYR_GREEK = regex.compile(r"[\p{Script=Cyrillic}\p{Script=Greek}]")
_LATIN_AND_OTHER_TOKEN = regex.compile(r"(?<!\S)(?=\S*\p{Script=Latin})(?=\S*[\p{Script=Cyrillic}\p{Script=Greek}])\S+")


@dataclass(frozen=True)
class DriftCounts:
    """Drift counts of one text (see the module docstring for each definition).

    Attributes:
        n_chars: code points of the text (denominator of the character counts).
        n_tokens: white-space separated tokens (denominator of ``mixed_script_tokens``).
        nfkc_differs: NFC(T) != NFKC(T).
        nfkc_changed_chars, invisible_chars, ligatures, replacement_chars, mojibake_suspects: counts, in code points
            (mojibake: in ftfy "badness" sequences).
        non_nfc_sequences: grapheme clusters that NFC changes.
        mixed_script_tokens: tokens mixing Latin with Cyrillic/Greek look-alikes.
        fix_encoding_changes: ``ftfy.fix_encoding`` would change the text.
        examples: up to a few examples per count (JSON-serialisable), keyed like the counts.
    """

    n_chars: int
    n_tokens: int
    nfkc_differs: bool
    nfkc_changed_chars: int
    invisible_chars: int
    ligatures: int
    non_nfc_sequences: int
    replacement_chars: int
    mixed_script_tokens: int
    mojibake_suspects: int
    fix_encoding_changes: bool
    examples: dict[str, list[str]] = field(default_factory=dict)


def _codepoint(c: str) -> str:
    return f"U+{ord(c):04X}"


def _is_confusable_mix(token: str) -> bool:
    from confusable_homoglyphs import confusables

    latin = len(_LATIN.findall(token))
    other_letters = _CYR_GREEK.findall(token)
    if latin >= len(other_letters):
        preferred = ["LATIN"]
    else:
        cyr = sum(1 for c in other_letters if regex.match(r"\p{Script=Cyrillic}", c))
        preferred = ["CYRILLIC" if cyr >= len(other_letters) - cyr else "GREEK"]
    return bool(confusables.is_confusable(token, preferred_aliases=preferred))


def drift_counts(text: str, *, max_examples: int = 5) -> DriftCounts:
    """Count normalization drift in ``text`` (pure, no I/O).

    Args:
        text: a parser's output.
        max_examples: how many examples to keep per count.

    Returns:
        `DriftCounts`; all counts are 0 for an empty text.
    """
    import ftfy
    from ftfy import badness

    hist = Counter(text)
    examples: dict[str, list[str]] = {}

    def note(key: str, items) -> None:
        items = list(items)[:max_examples]
        if items:
            examples[key] = items

    nfc_text = unicodedata.normalize("NFC", text)
    nfkc_differs = unicodedata.normalize("NFKC", nfc_text) != nfc_text
    changed = [c for c in hist if unicodedata.normalize("NFKC", c) != unicodedata.normalize("NFC", c)]
    note("nfkc_changed_chars", sorted(_codepoint(c) for c in changed))
    invisible = [c for c in INVISIBLE if hist.get(c)]
    note("invisible_chars", [_codepoint(c) for c in invisible])
    ligs = [c for c in LIGATURES if hist.get(c)]
    note("ligatures", [_codepoint(c) for c in ligs])

    non_nfc: list[str] = []
    if not unicodedata.is_normalized("NFC", text):
        non_nfc = [g for g in _GRAPHEME.findall(text) if not unicodedata.is_normalized("NFC", g)]
    note("non_nfc_sequences", [" ".join(_codepoint(c) for c in g) for g in non_nfc])

    mixed: list[str] = []
    if _CYR_GREEK.search(text) and _LATIN.search(text):
        mixed = [m.group() for m in _LATIN_AND_OTHER_TOKEN.finditer(text) if _is_confusable_mix(m.group())]
    note("mixed_script_tokens", mixed)

    moji = badness.badness(text) if text else 0
    fix_changes = bool(moji) and ftfy.fix_encoding(text) != text
    return DriftCounts(
        n_chars=len(text),
        n_tokens=len(text.split()),
        nfkc_differs=nfkc_differs,
        nfkc_changed_chars=sum(hist[c] for c in changed),
        invisible_chars=sum(hist[c] for c in invisible),
        ligatures=sum(hist[c] for c in ligs),
        non_nfc_sequences=len(non_nfc),
        replacement_chars=hist.get(REPLACEMENT, 0),
        mixed_script_tokens=len(mixed),
        mojibake_suspects=moji,
        fix_encoding_changes=fix_changes,
        examples=examples,
    )
