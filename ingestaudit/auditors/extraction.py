"""Extraction auditor: how much of the reference text a parser recovered, raw and after a named normalization.

Per (document, parser) it reports:

- ``extraction.cer`` / ``extraction.wer``: jiwer error rates on the raw texts (`ingestaudit.metrics.edit`).
- ``extraction.cer_norm`` / ``extraction.wer_norm``: the same after the character profile (CER) and the word
  profile (WER), both applied to reference and output (`ingestaudit.metrics.normalize`). The gap between raw and
  normalized is drift the normalization absorbs (ligatures, NFD, soft hyphens...).
- ``extraction.completeness``: non-white-space code points of the output / of the reference, both after the
  character profile. Above 1 the output holds more text than the reference: duplication (a doubled text layer,
  repeated running headers) or text the reference leaves out.
- ``extraction.checks_pass``: share of the document's ``checks`` that pass (`ingestaudit.metrics.checks`), label
  ``""`` over all checks and one row per check type (``present``, ``absent``, ``order``).

Diagnostics (in the ``extraction.cer`` row's detail): reference lines missing from the output, a duplicated text
layer flag, a glued-words flag, and ``empty_output``. Every row is emitted for every document; a metric without
its label is ``no_reference``.
"""

from __future__ import annotations

from typing import Any

import regex

from ingestaudit.auditors.base import Auditor, ItemArtefacts
from ingestaudit.measurement import Score, State
from ingestaudit.metrics import checks as checks_mod
from ingestaudit.metrics.edit import EditCounts, align
from ingestaudit.metrics.normalize import get_profile
from ingestaudit.metrics.specs import MetricSpec, register
from ingestaudit.truth import Truth

METRICS = (
    MetricSpec("extraction.cer", "character error rate (S+D+I)/N over Unicode code points of the raw texts "
               "(jiwer 4 cer_default: ends stripped, spaces and line breaks count); N = reference code points; "
               "per document", higher_is_better=False, high=None, unit="chars"),
    MetricSpec("extraction.wer", "word error rate (S+D+I)/N over white-space separated words of the raw texts "
               "(jiwer 4 alignment, str.split() tokens); N = reference words; per document",
               higher_is_better=False, high=None, unit="words"),
    MetricSpec("extraction.cer_norm", "character error rate as extraction.cer after the character normalization "
               "profile (default text-v1) on both sides", higher_is_better=False, high=None, unit="chars"),
    MetricSpec("extraction.wer_norm", "word error rate as extraction.wer after the word normalization profile "
               "(default words-v1: text-v1 + case folding + punctuation removed) on both sides",
               higher_is_better=False, high=None, unit="words"),
    MetricSpec("extraction.completeness", "non-white-space code points of the output / of the reference, both "
               "after the character profile; above 1 means duplicated or extra text", higher_is_better=True,
               high=None, unit="chars", ideal=1.0),
    MetricSpec("extraction.checks_pass", "passed checks / checks (olmOCR-style present, absent, order with "
               "max_diffs edit tolerance); label '' for all checks, or the check type",
               higher_is_better=True, ci="wilson", unit="checks"),
)
register(*METRICS)

MAX_LISTED = 20
"""At most this many missing lines, duplicated lines or failing checks are listed in a detail."""
MISSING_LINE_MIN_SIMILARITY = 80.0
"""A reference line counts as found when it is a substring of the output or when rapidfuzz
``fuzz.partial_ratio(line, output)`` (0-100) reaches this value (both after the character profile, and the output
at least as long as the line)."""
DUPLICATE_LINE_MIN_CHARS = 4
"""A back-to-back repeated output line is a duplicated-layer sign only with at least this many non-white-space
characters and one letter (so repeated table cells such as "0" or "--" do not count)."""
GLUED_MIN_WER = 0.20
GLUED_MAX_CER = 0.10
GLUED_MAX_WORD_RATIO = 0.90
"""Glued words: wer_norm >= GLUED_MIN_WER and cer_norm <= GLUED_MAX_CER and output words <= GLUED_MAX_WORD_RATIO x
reference words (word-profile tokens). Each lost space costs one character but two words (a substitution and a
deletion), so gluing raises WER far more than CER and lowers the word count; random character errors raise both
without changing the word count."""

_LETTER = regex.compile(r"\p{L}")


def _counts_detail(c: EditCounts, profile: str) -> dict[str, Any]:
    return {"unit": c.unit, "profile": profile, "substitutions": c.substitutions, "deletions": c.deletions,
            "insertions": c.insertions, "hits": c.hits, "hyp_len": c.hyp_len, "empty_output": c.empty_output}


def _rate_score(metric: str, c: EditCounts, profile: str) -> Score:
    if c.state != "ok":
        return Score(metric, None, None, None, State.NO_REFERENCE, "", {"reason": c.message, "profile": profile})
    return Score.ratio(metric, c.errors, c.ref_len, detail=_counts_detail(c, profile))


def missing_lines(ref_lines: list[str], output_norm: str,
                  min_similarity: float = MISSING_LINE_MIN_SIMILARITY) -> tuple[list[str], int]:
    """Reference lines not found in the output.

    Args:
        ref_lines: the reference's non-empty lines after the character profile (`Profile.lines`); repeated lines
            are considered once.
        output_norm: the output after the same profile.
        min_similarity: see `MISSING_LINE_MIN_SIMILARITY`.

    Returns:
        ``(missing, n_lines)``: the missing lines in reference order, and the number of distinct lines.
    """
    from rapidfuzz import fuzz

    lines = list(dict.fromkeys(ref_lines))
    missing = []
    for line in lines:
        if line in output_norm:
            continue
        if len(output_norm) >= len(line) and fuzz.partial_ratio(line, output_norm) >= min_similarity:
            continue
        missing.append(line)
    return missing, len(lines)


def duplicated_lines(out_lines: list[str], ref_lines: list[str],
                     min_chars: int = DUPLICATE_LINE_MIN_CHARS) -> list[str]:
    """Output lines repeated back to back that the reference does not repeat back to back; only lines with at
    least ``min_chars`` non-white-space characters and a letter.

    Args:
        out_lines, ref_lines: non-empty lines after the character profile (`Profile.lines`), so blank lines between
            the repeats do not hide them.

    Returns:
        the repeated lines, in output order, each once.
    """
    def pairs(ls: list[str]) -> list[str]:
        return [a for a, b in zip(ls, ls[1:]) if a == b]

    ref_pairs = set(pairs(ref_lines))
    out = []
    for line in pairs(out_lines):
        if line in ref_pairs or len("".join(line.split())) < min_chars or not _LETTER.search(line):
            continue
        out.append(line)
    return list(dict.fromkeys(out))


def _check_desc(check: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"type": check.type, "max_diffs": int(getattr(check, "max_diffs", 0) or 0)}
    if check.type == "order":
        d["before"], d["after"] = check.before, check.after
    else:
        d["text"] = check.text
    return d


class ExtractionAuditor(Auditor):
    """Audits extracted text against the reference text and the ``checks`` of a document (see the module
    docstring for every metric's definition).

    Args:
        char_profile: normalization profile for ``cer_norm``, completeness, missing lines and checks.
        word_profile: normalization profile for ``wer_norm``.
        check_semantics: ``"levenshtein"`` (default) or ``"olmocr"`` for present/absent checks
            (`ingestaudit.metrics.checks`).

    Raises:
        KeyError: an unknown profile name.
        ValueError: unknown check semantics.
    """

    stage = "extraction"
    metrics = METRICS

    def __init__(self, char_profile: str = "text-v1", word_profile: str = "words-v1",
                 check_semantics: str = "levenshtein"):
        self.char_profile = get_profile(char_profile)
        self.word_profile = get_profile(word_profile)
        if check_semantics not in checks_mod.SEMANTICS:
            raise ValueError(f"unknown check semantics {check_semantics!r}; known: "
                             f"{', '.join(checks_mod.SEMANTICS)}")
        self.check_semantics = check_semantics

    def options(self) -> dict[str, Any]:
        """The profiles, check semantics and the thresholds behind the flags."""
        return {
            "char_profile": self.char_profile.name,
            "word_profile": self.word_profile.name,
            "cer_unit": "code point",
            "wer_tokens": "str.split()",
            "check_semantics": self.check_semantics,
            "missing_line_min_similarity": MISSING_LINE_MIN_SIMILARITY,
            "duplicate_line_min_chars": DUPLICATE_LINE_MIN_CHARS,
            "glued_words": {"min_wer_norm": GLUED_MIN_WER, "max_cer_norm": GLUED_MAX_CER,
                            "max_word_ratio": GLUED_MAX_WORD_RATIO},
        }

    def applies(self, truth: Truth) -> bool:
        """True when the document has a reference text or checks."""
        return truth.text is not None or bool(truth.checks)

    def audit(self, item: ItemArtefacts) -> list[Score]:
        """Nine rows: cer, wer, cer_norm, wer_norm, completeness, and checks_pass for labels '', present, absent,
        order. Never raises for bad parser output."""
        truth, parsed = item.truth, item.parsed
        output = parsed.text or ""
        out_char = self.char_profile(output)
        scores = self._text_scores(truth.text, output, out_char)
        scores += self._check_scores(truth.checks, output, out_char)
        return scores

    # -- text ---------------------------------------------------------------------------------------------------

    def _text_scores(self, reference: str | None, output: str, out_char: str) -> list[Score]:
        names = ("extraction.cer", "extraction.wer", "extraction.cer_norm", "extraction.wer_norm",
                 "extraction.completeness")
        if reference is None:
            return [Score.missing(n, State.NO_REFERENCE, "no reference text for this document") for n in names]
        cp, wp = self.char_profile, self.word_profile
        ref_char = cp(reference)
        raw_c = align(reference, output, "char")
        raw_w = align(reference, output, "word")
        norm_c = align(ref_char, out_char, "char")
        norm_w = align(wp(reference), wp(output), "word")

        cer = _rate_score("extraction.cer", raw_c, "none")
        wer = _rate_score("extraction.wer", raw_w, "none")
        cer_n = _rate_score("extraction.cer_norm", norm_c, cp.name)
        wer_n = _rate_score("extraction.wer_norm", norm_w, wp.name)

        ref_n = len("".join(ref_char.split()))
        out_n = len("".join(out_char.split()))
        comp = Score.ratio("extraction.completeness", out_n, ref_n, detail={
            "profile": cp.name, "duplication": ref_n > 0 and out_n > ref_n,
            "empty_output": raw_c.empty_output,
            "note": "above 1: the output has more characters than the reference (duplicated text layer, repeated "
                    "headers/footers, or text the reference leaves out)"})

        if cer.state is State.OK:
            ref_lines = cp.lines(reference)
            missing, n_lines = missing_lines(ref_lines, out_char)
            dups = duplicated_lines(cp.lines(output), ref_lines)
            glued = None
            if norm_c.state == "ok" and norm_w.state == "ok":
                glued = (norm_w.rate >= GLUED_MIN_WER and norm_c.rate <= GLUED_MAX_CER  # type: ignore[operator]
                         and norm_w.hyp_len <= GLUED_MAX_WORD_RATIO * norm_w.ref_len)
            cer = Score(cer.metric, cer.value, cer.numerator, cer.denominator, cer.state, "", {
                **cer.detail,
                "missing_lines": missing[:MAX_LISTED],
                "missing_lines_total": len(missing),
                "reference_lines": n_lines,
                "duplicate_layer": bool(dups),
                "duplicated_lines": dups[:MAX_LISTED],
                "glued_words": glued,
                "glued_words_rule": (f"wer_norm >= {GLUED_MIN_WER} and cer_norm <= {GLUED_MAX_CER} and output "
                                     f"words <= {GLUED_MAX_WORD_RATIO} x reference words"),
            })
        return [cer, wer, cer_n, wer_n, comp]

    # -- checks -------------------------------------------------------------------------------------------------

    def _check_scores(self, checks: tuple[Any, ...], output: str, out_char: str) -> list[Score]:
        metric = "extraction.checks_pass"
        if not checks:
            return [Score.missing(metric, State.NO_REFERENCE, "no checks for this document", label=label)
                    for label in ("",) + checks_mod.CHECK_TYPES]
        passed = {t: 0 for t in checks_mod.CHECK_TYPES}
        total = {t: 0 for t in checks_mod.CHECK_TYPES}
        failing: dict[str, list[dict[str, Any]]] = {t: [] for t in checks_mod.CHECK_TYPES}
        invalid: list[dict[str, Any]] = []
        for i, check in enumerate(checks):
            try:
                res = checks_mod.run_check(check, output, profile=self.char_profile.name,
                                           semantics=self.check_semantics,  # type: ignore[arg-type]
                                           normalized_output=out_char)
            except ValueError as exc:
                invalid.append({"index": i, **_check_desc(check), "message": str(exc)})
                continue
            total[res.type] += 1
            if res.passed:
                passed[res.type] += 1
            else:
                failing[res.type].append({"index": i, **_check_desc(check), "message": res.message})
        base = {"profile": self.char_profile.name, "semantics": self.check_semantics}
        all_failing = sorted((f for fs in failing.values() for f in fs), key=lambda f: f["index"])
        rows = [Score.ratio(metric, sum(passed.values()), sum(total.values()), detail={
            **base, "failing": all_failing[:MAX_LISTED], "failing_total": len(all_failing),
            "invalid": invalid[:MAX_LISTED], "invalid_total": len(invalid)})]
        for t in checks_mod.CHECK_TYPES:
            if total[t] == 0:
                rows.append(Score.missing(metric, State.NO_REFERENCE, f"no valid {t} checks for this document",
                                          label=t))
            else:
                rows.append(Score.ratio(metric, passed[t], total[t], label=t, detail={
                    **base, "failing": failing[t][:MAX_LISTED], "failing_total": len(failing[t])}))
        return rows
