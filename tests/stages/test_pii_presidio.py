"""The PII scrubbers under audit (ingestaudit.stages.pii): Presidio offline, lazily loaded and cached; detector loading;
redaction and its inverse.

The suite runs under pytest-socket's --disable-socket. On top of that, the offline tests replace
``requests.adapters.HTTPAdapter.send`` (the door through which tldextract fetches the Public Suffix List over
http(s)) with a recorder that fails the test, and a control test shows that the recorder does see the
fetch of tldextract's default extractor, so the offline tests cannot pass by accident.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import EntryPoint

import pytest
import requests.adapters  # imported at collection: urllib3's import-time IPv6 probe opens a (local) socket
import tldextract
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestaudit.metrics.spans import Span
from ingestaudit.stages import pii as stage
from ingestaudit.stages.pii import (DetectorOutputError, DetectorUnavailable, PresidioDetector, UnknownDetector,
                                    coerce_span, load_detector, merge_spans, offline_tld_extractor, redact,
                                    redaction_spans)


@pytest.fixture
def no_http(monkeypatch):
    """Every HTTP(S)/file fetch through requests fails the test; the attempted URLs are recorded."""
    attempts: list[str] = []

    def send(self, request, *args, **kwargs):
        attempts.append(request.url)
        raise AssertionError(f"network fetch attempted: {request.url}")

    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", send)
    return attempts


@pytest.fixture(scope="module")
def presidio():
    det = PresidioDetector()
    ok, why = det.available()
    if not ok:
        pytest.fail(f"presidio must be installed for this suite: {why}")
    return det


# ------------------------------------------------------------------------------------------ offline suffix list


def test_control_default_tldextract_tries_the_network(no_http, tmp_path):
    # tldextract's default extractor, with an empty cache, fetches the Public Suffix List on first use: the
    # recorder sees it (the fetch fails, tldextract swallows the error and falls back to its snapshot, which is
    # exactly why a test without the recorder could not tell)
    ext = tldextract.TLDExtract(cache_dir=str(tmp_path))
    try:
        ext("ana.lima@example.com")
    except AssertionError:
        pass
    assert any("public_suffix_list" in url or "publicsuffix" in url for url in no_http), no_http


def test_offline_extractor_uses_the_bundled_snapshot_without_fetching(no_http):
    ext = offline_tld_extractor()
    assert ext.suffix_list_urls == () and not ext._cache.enabled
    r = ext("ana.lima@example.co.uk")
    assert (r.domain, r.suffix) == ("example", "co.uk")
    assert ext("ana.lima@example.zzzz").suffix == ""  # not a public suffix
    assert no_http == []


def test_presidio_email_recognizer_is_offline(no_http, presidio):
    text = "Please write to ana.lima@example.com today."
    spans = presidio.detect(text)
    emails = [s for s in spans if s.type == "EMAIL_ADDRESS"]
    # "ana.lima@example.com" = text[16:36]
    assert emails == [Span(16, 36, "EMAIL_ADDRESS")] and text[16:36] == "ana.lima@example.com"
    # the same address with a top-level domain that is not in the suffix list fails validation: the suffix list
    # is really consulted (offline), not bypassed
    assert not [s for s in presidio.detect("Please write to ana.lima@example.zzzz today.") if s.type == "EMAIL_ADDRESS"]
    recs = [r for r in presidio.engine.registry.recognizers if "EMAIL_ADDRESS" in r.supported_entities]
    assert [type(r).__name__ for r in recs] == ["OfflineEmailRecognizer"]
    assert recs[0].tld_extractor.suffix_list_urls == ()
    assert no_http == []


# ---------------------------------------------------------------------------------------------- loading, cache


def test_imports_are_lazy():
    code = ("import sys\n"
            "import ingestaudit.stages.pii, ingestaudit.auditors.pii\n"
            "from ingestaudit.auditors.pii import PiiAuditor\n"
            "a = PiiAuditor()\n"
            "o = a.options()\n"
            "assert o['presidio']['spacy_model'] == 'en_core_web_sm', o\n"
            "heavy = [m for m in ('presidio_analyzer', 'spacy', 'tldextract') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_engine_is_built_once_per_process(presidio):
    assert presidio.engine is stage.presidio_engine()
    assert PresidioDetector(score_threshold=0.5).engine is presidio.engine  # threshold is applied per call


def test_missing_model_names_the_setup_script():
    det = PresidioDetector(spacy_model="xx_no_such_pipeline_sm")
    ok, why = det.available()
    assert not ok and "bash scripts/setup.sh" in why
    with pytest.raises(DetectorUnavailable, match="bash scripts/setup.sh"):
        det.detect("Ana Lima")


def test_wrong_model_version_is_refused():
    with pytest.raises(DetectorUnavailable, match="0.0.1"):
        PresidioDetector(spacy_model_version="0.0.1").detect("Ana Lima")


def test_settings_name_the_model(presidio):
    s = presidio.settings()
    assert (s["spacy_model"], s["spacy_model_version"], s["spacy_model_installed"]) == \
        ("en_core_web_sm", "3.8.0", "3.8.0")
    assert "bundled snapshot" in s["public_suffix_list"]
    assert presidio.version().startswith("2.2.")
    assert {"PERSON", "EMAIL_ADDRESS", "CREDIT_CARD", "LOCATION"} <= set(presidio.supported_types())


def test_bad_options():
    with pytest.raises(ValueError):
        PresidioDetector(score_threshold=1.5)
    with pytest.raises(ValueError):
        PresidioDetector(batch_size=0)


# ------------------------------------------------------------------------------------------ detections, batch


def test_credit_cards_are_luhn_validated(presidio):
    # 4111 1111 1111 1111 passes the Luhn check (sum 30) and is found; 1234-5678-1234-5678 (sum 68) is not a
    # CREDIT_CARD for Presidio: the gold-validation flag of the auditor exists for this case
    good = "Card 4111 1111 1111 1111 was charged."
    assert Span(5, 24, "CREDIT_CARD") in presidio.detect(good)
    bad = "Card 1234-5678-1234-5678 was charged."
    assert not [s for s in presidio.detect(bad) if s.type == "CREDIT_CARD"]


def test_entities_restrict_the_output():
    det = PresidioDetector(entities=["EMAIL_ADDRESS"])
    spans = det.detect("Please write to ana.lima@example.com today.")
    assert spans == [Span(16, 36, "EMAIL_ADDRESS")]
    assert det.supported_types() == ("EMAIL_ADDRESS",)


def test_batch_equals_one_at_a_time(presidio, shared_data):
    import json

    records = json.loads((shared_data / "presidio-synth" / "synth_dataset_v2.first1000.json").read_text())
    texts = [r["full_text"] for r in records[:40]] + ["", "   "]
    batched = PresidioDetector(batch_size=8).detect_batch(texts)
    single = [presidio.detect(t) for t in texts]
    assert batched == single
    assert batched[-2] == [] and sum(map(len, batched)) > 20


# ------------------------------------------------------------------------------------------- detector loading


class ListDetector:
    """A duck-typed user detector (no base class): every occurrence of each word, typed."""

    def __init__(self, words=None):
        self.words = dict(words or {"Ana": "PERSON"})

    def detect(self, text):
        out = []
        for word, typ in self.words.items():
            i = text.find(word)
            while i >= 0:
                out.append({"start": i, "end": i + len(word), "entity_type": typ})
                i = text.find(word, i + 1)
        return out


class BrokenDetector:
    def detect(self, text):
        return [(0, len(text) + 5, "PERSON")]


def test_module_class_detector():
    det = load_detector(f"{__name__}:ListDetector", {"words": {"Lima": "LOCATION"}})
    assert det.detect("Ana Lima, Lima") == [Span(4, 8, "LOCATION"), Span(10, 14, "LOCATION")]
    assert det.detect_batch(["Lima", "x"]) == [[Span(0, 4, "LOCATION")], []]
    assert det.supported_types() is None


def test_entry_point_detector(monkeypatch):
    ep = EntryPoint(name="words", value=f"{__name__}:ListDetector", group=stage.GROUP)
    monkeypatch.setattr(stage, "entry_points", lambda group: [ep] if group == stage.GROUP else [])
    assert stage.detector_names() == ["presidio", "words"]
    assert load_detector("words").detect("Ana") == [Span(0, 3, "PERSON")]


def test_unknown_and_bad_detectors(monkeypatch):
    monkeypatch.setattr(stage, "entry_points", lambda group: [])
    with pytest.raises(UnknownDetector, match="presidio"):
        load_detector("nope")
    with pytest.raises(UnknownDetector):
        load_detector(f"{__name__}:NoSuchClass")
    with pytest.raises(DetectorUnavailable):
        load_detector("no_such_module_xyz:Cls")
    with pytest.raises(ValueError, match="bad option"):
        load_detector(f"{__name__}:ListDetector", {"colour": 1})
    with pytest.raises(DetectorOutputError, match="past the text"):
        load_detector(f"{__name__}:BrokenDetector").detect("abc")


def test_coerce_span_shapes():
    class Result:  # Presidio's RecognizerResult shape
        start, end, entity_type = 1, 3, "PERSON"

    assert coerce_span(Result(), 5) == Span(1, 3, "PERSON")
    assert coerce_span({"start": 0, "end": 2, "type": "X"}, 5) == Span(0, 2, "X")
    assert coerce_span((0, 2, "X"), 2) == Span(0, 2, "X")
    with pytest.raises(DetectorOutputError):
        coerce_span({"start": 2, "end": 2, "type": "X"}, 5)
    with pytest.raises(DetectorOutputError):
        coerce_span("PERSON", 5)


def test_precomputed_spans():
    assert stage.precomputed_spans({}, "abc") is None
    assert stage.precomputed_spans({"pii": []}, "abc") == []
    assert stage.precomputed_spans({"pii": [{"start": 0, "end": 1, "type": "P"}]}, "abc") == [Span(0, 1, "P")]


# ------------------------------------------------------------------------------------------ redaction, inverse


TEXT = "Call Ana Lima at 555-0100"  # "Ana Lima" = [5, 13), "555-0100" = [17, 25)


def test_redact_and_merge():
    assert redact(TEXT, [Span(5, 13, "PERSON")]) == "Call <PERSON> at 555-0100"
    # [5,8) and [9,13) are separate; [5,13) swallows both: one placeholder, type of the first (longest) span
    assert redact(TEXT, [Span(5, 8, "PERSON"), Span(9, 13, "PERSON")]) == "Call <PERSON> <PERSON> at 555-0100"
    assert merge_spans([Span(9, 13, "B"), Span(5, 13, "A"), Span(13, 16, "C")]) == [Span(5, 16, "A")]
    assert redact(TEXT, [Span(17, 25, "PHONE_NUMBER")], "[{type}]") == "Call Ana Lima at [PHONE_NUMBER]"
    assert redact(TEXT, []) == TEXT


def test_redaction_spans_anchored():
    rec = redaction_spans(TEXT, "Call <PERSON> at <PHONE_NUMBER>")
    assert rec.method == "anchored" and rec.placeholders == 2
    assert rec.spans == (Span(5, 13, "PERSON"), Span(17, 25, "PHONE_NUMBER"))
    # leftmost-shortest on an ambiguous separator: "<P> and <P>" over "Ana Lima and Bo Chen"
    rec = redaction_spans("Ana Lima and Bo Chen", "<P> and <P>", r"<([A-Z]+)>")
    assert rec.spans == (Span(0, 8, "P"), Span(13, 20, "P"))
    assert redaction_spans(TEXT, TEXT) == stage.RedactionRecovery((), "identical", 0)


def test_redaction_spans_alignment_fallback():
    # masks keep the length: the alignment recovers both values exactly, type unknown
    rec = redaction_spans(TEXT, "Call ******** at ********")
    assert rec.method == "alignment"
    assert rec.spans == (Span(5, 13, "REDACTED"), Span(17, 25, "REDACTED"))
    # the scrubber also changed other text ("Call" -> "call"): anchoring fails, the alignment still finds the value
    rec = redaction_spans(TEXT, "call <PERSON> at 555-0100")
    assert rec.method == "alignment" and Span(0, 1, "REDACTED") in rec.spans
    assert any(s.type == "PERSON" and 5 <= s.start and s.end <= 13 for s in rec.spans)
    with pytest.raises(ValueError):
        redaction_spans(TEXT, "x", r"<[A-Z]+>")


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="ab .-\n", min_size=1, max_size=40), st.data())
def test_redaction_roundtrip(text, data):
    # property: for any spans, the recovered spans re-redact to the same text (exact when anchored), and every
    # recovered span covers only characters that were redacted
    n = len(text)
    raw = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(1, 5),
                                       st.sampled_from(["PERSON", "LOCATION"])), max_size=4))
    spans = [Span(a, min(n, a + k), t) for a, k, t in raw]
    redacted = redact(text, spans)
    rec = redaction_spans(text, redacted)
    merged = merge_spans(spans)
    if not merged:
        assert rec.spans == () and rec.method == "identical"
        return
    assert rec.method == "anchored"
    assert redact(text, rec.spans) == redacted
    assert len(rec.spans) == len(merged)
