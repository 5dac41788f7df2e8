"""Named text-normalization profiles, composed from small transforms (the design of jiwer's ``transformations.py``).

A profile is applied to *both* the reference and the parser output before a ``*_norm`` metric is computed; the
report prints the profile's name next to the number, so a profile's behaviour must never change under the same
name: a change gets a new name (``text-v2``...).

Profiles (see `PROFILES`):

``none``
    identity.
``text-v1`` (character profile, used for ``extraction.cer_norm``, completeness and checks), in this order:

    1. `rejoin_soft_hyphens`: U+00AD SOFT HYPHEN followed by a line break (and the horizontal white space around
       it) is removed, so ``"infor\\u00AD\\nmation"`` becomes ``"information"``.
    2. `remove_invisible`: every code point with the Unicode property ``Default_Ignorable_Code_Point`` is removed
       (U+00AD, U+034F, U+061C, U+115F-1160, U+17B4-17B5, U+180B-180F, U+200B-200F, U+202A-202E, U+2060-206F, U+3164,
       U+FE00-FE0F, U+FEFF, U+FFA0, U+1BCA0-1BCA3, U+1D173-1D17A, U+E0000-E0FFF...; Unicode Standard, section 5.21,
       property from the ``regex`` module's Unicode tables).
    3. `expand_ligatures`: U+FB00-U+FB06 (ff, fi, fl, ffi, ffl, long-s t, st) replaced by their NFKC expansion.
       Only these seven: full NFKC would also fold superscripts, fractions, full-width forms... which can be real
       content.
    4. `fold_quotes`: curly single quotes U+2018-U+201B and U+02BC become ``'``, curly double quotes U+201C-U+201F
       become ``"`` (ftfy's ``uncurl_quotes``).
    5. `fold_dashes`: every character of general category Pd (dash punctuation: hyphen U+2010, non-breaking
       hyphen U+2011, figure dash, en and em dash, horizontal bar, U+2E17, U+301C...) and U+2212 MINUS SIGN become
       ``-`` (U+002D).
    6. `nfc`: Unicode canonical composition (NFC, UAX #15). It runs after the steps that remove or replace
       characters, so a combining mark that ends up next to a new base is composed with it and the profile is
       idempotent (``p(p(x)) == p(x)``).
    7. `collapse_whitespace`: every run of Unicode white space (``str.split()`` semantics: includes line breaks,
       tabs, U+00A0, U+2000-U+200A, U+3000) becomes one space; leading and trailing white space is dropped.

``words-v1`` (word profile, used for ``extraction.wer_norm``): ``text-v1``, then `casefold` (``str.casefold``,
    Unicode full case folding: ``"Straße"`` -> ``"strasse"``), `remove_punctuation` (every character of general
    category P*, as jiwer's ``RemovePunctuation``; removed, not replaced by a space, so ``"well-known"`` becomes
    ``"wellknown"`` on both sides), `nfc` and `collapse_whitespace` again.

Source of the definitions: Unicode character properties: NFC/NFKC from the running Python's ``unicodedata`` (Unicode
14 on Python 3.11), general categories (Pd, P*) and ``Default_Ignorable_Code_Point`` from the ``regex`` module's
tables; ftfy 6 for quotes.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Callable

import regex

Transform = Callable[[str], str]

_SOFT_HYPHEN_BREAK = regex.compile(r"\u00AD[^\S\r\n\u2028\u2029\x0b\x0c\x85]*(?:\r\n|[\r\n\u2028\u2029\x0b\x0c\x85])"
                                   r"[^\S\r\n\u2028\u2029\x0b\x0c\x85]*")
_INVISIBLE = regex.compile(r"\p{Default_Ignorable_Code_Point}+")
_LIGATURES = {cp: unicodedata.normalize("NFKC", chr(cp)) for cp in range(0xFB00, 0xFB07)}
_LIGATURE_RE = regex.compile(r"[\uFB00-\uFB06]")
_DASHES = regex.compile(r"[\p{Pd}\u2212]")
_PUNCT = regex.compile(r"\p{P}+")


def rejoin_soft_hyphens(text: str) -> str:
    """Remove each U+00AD SOFT HYPHEN that is followed by a line break, together with that break and the
    horizontal white space around it: ``"infor\\u00AD\\nmation"`` -> ``"information"``. A soft hyphen not followed
    by a line break is left for `remove_invisible`."""
    return _SOFT_HYPHEN_BREAK.sub("", text) if "\u00ad" in text else text


def remove_invisible(text: str) -> str:
    """Remove every ``Default_Ignorable_Code_Point`` (format and invisible characters: soft hyphen, zero-width
    space/joiners, word joiner, BOM, bidi controls, variation selectors...). Length shrinks by the number removed."""
    return _INVISIBLE.sub("", text)


def nfc(text: str) -> str:
    """Unicode Normalization Form C (canonical decomposition then composition, UAX #15)."""
    return unicodedata.normalize("NFC", text)


def nfkc(text: str) -> str:
    """Unicode Normalization Form KC (compatibility decomposition then canonical composition, UAX #15)."""
    return unicodedata.normalize("NFKC", text)


def expand_ligatures(text: str) -> str:
    """Replace the Latin ligatures U+FB00-U+FB06 by their NFKC expansions (``"\\uFB03"`` -> ``"ffi"``)."""
    return text.translate(_LIGATURES) if _LIGATURE_RE.search(text) else text


def fold_quotes(text: str) -> str:
    """Straighten curly quotes with ftfy's ``uncurl_quotes``: U+2018-U+201B and U+02BC -> ``'``, U+201C-U+201F ->
    ``"``. Guillemets and primes are left alone."""
    from ftfy.fixes import uncurl_quotes

    return uncurl_quotes(text)


def fold_dashes(text: str) -> str:
    """Replace every dash-punctuation character (general category Pd) and U+2212 MINUS SIGN by U+002D."""
    return _DASHES.sub("-", text)


def collapse_whitespace(text: str) -> str:
    """Replace each run of white space (``str.split()`` semantics, line breaks included) by one space and strip
    the ends."""
    return " ".join(text.split())


def casefold(text: str) -> str:
    """Unicode full case folding (``str.casefold``): ``"Straße"`` -> ``"strasse"``."""
    return text.casefold()


def remove_punctuation(text: str) -> str:
    """Remove every character of general category P* (as jiwer's ``RemovePunctuation``)."""
    return _PUNCT.sub("", text)


@dataclass(frozen=True)
class Profile:
    """A named normalization pipeline: ``profile(text)`` applies ``transforms`` left to right.

    Attributes:
        name: the name the report prints next to every number computed after this profile (``"text-v1"``).
        transforms: the steps, each ``str -> str``.
        description: one line for the report and docs.
    """

    name: str
    transforms: tuple[Transform, ...]
    description: str = ""

    def __call__(self, text: str) -> str:
        for step in self.transforms:
            text = step(text)
        return text

    def lines(self, text: str) -> list[str]:
        """The non-empty lines of ``text`` after this profile, in order.

        Every step except `collapse_whitespace` runs once on the whole text (so a soft hyphen at a line end joins
        the two lines, as in ``__call__``); the text is then split with ``str.splitlines`` and, when the profile
        collapses white space, each line is collapsed. Lines that end up empty are dropped.
        """
        collapse = collapse_whitespace in self.transforms
        for step in self.transforms:
            if step is not collapse_whitespace:
                text = step(text)
        out = (" ".join(line.split()) if collapse else line for line in text.splitlines())
        return [line for line in out if line and not line.isspace()]

    @property
    def steps(self) -> tuple[str, ...]:
        """The transforms' function names, in order (printed in the report's options)."""
        return tuple(getattr(t, "__name__", repr(t)) for t in self.transforms)


_TEXT_V1 = (rejoin_soft_hyphens, remove_invisible, expand_ligatures, fold_quotes, fold_dashes, nfc,
            collapse_whitespace)

PROFILES: dict[str, Profile] = {}


def register_profile(profile: Profile) -> None:
    """Add a profile to the registry.

    Raises:
        ValueError: the name is already registered with other transforms (a changed profile needs a new name).
    """
    old = PROFILES.get(profile.name)
    if old is not None and old != profile:
        raise ValueError(f"normalization profile {profile.name!r} is already registered; use a new name")
    PROFILES[profile.name] = profile


register_profile(Profile("none", (), "identity: the text as the parser emitted it"))
register_profile(Profile("nfc", (nfc,), "Unicode NFC only"))
register_profile(Profile(
    "text-v1", _TEXT_V1,
    "soft hyphen + line break rejoined, default-ignorable characters removed, ligatures U+FB00-FB06 expanded, "
    "curly quotes and dashes folded, NFC, white space collapsed"))
register_profile(Profile(
    "words-v1", _TEXT_V1 + (casefold, remove_punctuation, nfc, collapse_whitespace),
    "text-v1, then case folded and punctuation (P*) removed"))


def get_profile(name: str) -> Profile:
    """The registered profile called ``name``.

    Raises:
        KeyError: unknown name; the message lists the registered names.
    """
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown normalization profile {name!r}; known: {', '.join(sorted(PROFILES))}") from None


def normalize(text: str, profile: str = "text-v1") -> str:
    """``text`` after the profile registered as ``profile``.

    Raises:
        KeyError: unknown profile name.
    """
    return get_profile(profile)(text)
