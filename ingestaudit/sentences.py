"""Sentence segmentation through the step cache: `ingestaudit.metrics.chunking.sentence_spans` (spaCy's rule-based
sentencizer) on a text, read back from the step cache (`ingestaudit.step_cache`, kind ``sentences``) when the same
text was split before with the same spaCy version, so a warm run never imports spaCy (about 0.7 s)."""

from __future__ import annotations

from typing import Any


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """`ingestaudit.metrics.chunking.sentence_spans` of ``text`` (code-point intervals ``[start, end)`` in text
    order), from the step cache of the running task when it holds them; outside a task (no cache active) it is
    computed."""
    from ingestaudit.step_cache import cached

    if not text.strip():
        return []
    return cached("sentences", lambda: _identity(text), lambda: _computed(text), _to_json, _from_json)


def _computed(text: str) -> list[tuple[int, int]]:
    from ingestaudit.metrics.chunking import sentence_spans as computed

    return computed(text)


def _identity(text: str) -> dict[str, Any]:
    """spaCy's version (package metadata, no import), the segmentation rules' name and the text's sha256."""
    from importlib.metadata import version

    from ingestaudit.step_cache import text_hash

    return {"step": "sentences", "spacy": version("spacy"), "rules": "blank-en-sentencizer+paragraph-breaks",
            "text": text_hash(text)}


def _to_json(spans: list[tuple[int, int]]) -> list[list[int]]:
    return [[s, e] for s, e in spans]


def _from_json(data: Any) -> list[tuple[int, int]]:
    """Intervals read back. Raises TypeError unless every one is two whole numbers ``0 <= start < end``."""
    out = [(s, e) for s, e in data]
    if not all(type(s) is int and type(e) is int and 0 <= s < e for s, e in out):
        raise TypeError("sentence intervals are pairs of whole numbers 0 <= start < end")
    return out
