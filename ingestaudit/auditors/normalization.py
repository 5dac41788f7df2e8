"""Normalization drift auditor: Unicode forms and suspicious characters in every parser's output (no truth needed).

Each metric is a per-document ratio (numerator = a count from `ingestaudit.metrics.drift.drift_counts`,
denominator = the document's code points, tokens or 1), so the report's micro value is a corpus rate
(sum of counts / sum of units) and the macro value a mean over documents. An empty output gives
``no_prediction`` rows.
"""

from __future__ import annotations

from typing import Any

from ingestaudit.auditors.base import Auditor, ItemArtefacts
from ingestaudit.measurement import Score, State
from ingestaudit.metrics.drift import DriftCounts, drift_counts
from ingestaudit.metrics.specs import MetricSpec, register
from ingestaudit.truth import Truth

METRICS = (
    MetricSpec("normalization.nfkc_differs", "1 when NFC(text) != NFKC(text) (the output holds compatibility "
               "characters), else 0; per document, so the aggregate is the share of documents (UAX #15)",
               higher_is_better=False, ci="wilson", unit="docs"),
    MetricSpec("normalization.nfkc_changed_chars", "code points whose NFKC form differs from their NFC form "
               "(ligatures, full-width forms, superscripts, NBSP...) / code points of the output",
               higher_is_better=False, unit="chars"),
    MetricSpec("normalization.invisible_chars", "code points U+00AD, U+200B-U+200D, U+2060, U+FEFF / code points "
               "of the output", higher_is_better=False, unit="chars"),
    MetricSpec("normalization.ligatures", "code points U+FB00-U+FB06 (Latin ligatures) / code points of the output",
               higher_is_better=False, unit="chars"),
    MetricSpec("normalization.non_nfc_sequences", "extended grapheme clusters (UAX #29) that NFC changes / code "
               "points of the output", higher_is_better=False, unit="chars"),
    MetricSpec("normalization.replacement_chars", "U+FFFD REPLACEMENT CHARACTER code points / code points of the "
               "output", higher_is_better=False, unit="chars"),
    MetricSpec("normalization.mixed_script_tokens", "white-space tokens mixing Latin with Cyrillic or Greek "
               "look-alikes (confusable_homoglyphs, Unicode confusables.txt) / tokens of the output",
               higher_is_better=False, unit="tokens"),
    MetricSpec("normalization.mojibake_suspects", "ftfy badness sequences (typical of a wrong decoding, e.g. 'Ã©') "
               "/ code points of the output", higher_is_better=False, unit="chars"),
)
register(*METRICS)

_CHAR_COUNTS = ("nfkc_changed_chars", "invisible_chars", "ligatures", "non_nfc_sequences", "replacement_chars",
                "mojibake_suspects")


class NormalizationAuditor(Auditor):
    """Counts normalization drift in a parser's output (see `ingestaudit.metrics.drift` for the definitions).
    Needs no truth: `applies` is always True."""

    stage = "normalization"
    metrics = METRICS

    def options(self) -> dict[str, Any]:
        """No option changes these numbers; the definitions are fixed (see the metric descriptions)."""
        return {}

    def applies(self, truth: Truth) -> bool:
        """Always True: drift is a property of the output alone."""
        return True

    def audit(self, item: ItemArtefacts) -> list[Score]:
        """One row per metric in `METRICS`; ``no_prediction`` rows when the output is empty or only white space."""
        text = item.parsed.text or ""
        if not text.strip():
            return [Score.missing(s.name, State.NO_PREDICTION, "the parser produced no text (or only white space)")
                    for s in METRICS]
        c: DriftCounts = drift_counts(text)
        rows = [Score.ratio("normalization.nfkc_differs", int(c.nfkc_differs), 1,
                            detail={"examples": c.examples.get("nfkc_changed_chars", [])})]
        for name in _CHAR_COUNTS:
            detail: dict[str, Any] = {"examples": c.examples.get(name, [])}
            if name == "mojibake_suspects":
                detail["fix_encoding_changes"] = c.fix_encoding_changes
            rows.append(Score.ratio(f"normalization.{name}", getattr(c, name), c.n_chars, detail=detail))
        rows.append(Score.ratio("normalization.mixed_script_tokens", c.mixed_script_tokens, c.n_tokens,
                                detail={"examples": c.examples.get("mixed_script_tokens", [])}))
        order = {s.name: i for i, s in enumerate(METRICS)}
        return sorted(rows, key=lambda s: order[s.metric])
