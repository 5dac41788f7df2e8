"""The ``entities`` step of a pipeline: named entities (and precomputed relations) of one document.

Runs in the worker, once per labelled document x pipeline, after parsing (DESIGN.md, "Pipelines and the stage
chain": ``... -> [enrich: entities, metadata] -> chunk``). Its options are
`ingestaudit.enrichment.ENTITIES_STEP_DEFAULTS`; its artefact, `ingestaudit.enrichment.EntityExtraction`, is all the
entities and relations auditors read.

The extractor reads the parser's text (``ParsedDocument.text``): with ``--parser reference`` that is the reference
text (the extractor alone), with a real parser its output (parsing errors included). The predicted spans are then
carried onto the reference text through the extraction alignment (``align_chars(reference, parsed.text)`` as an
`ingestaudit.metrics.offsets.OffsetMap`, the map chunks and evidence use), so they are judged against labels written
on the reference text. A precomputed output's ``entities`` (on its ``text``) and ``relations`` are read instead of
running spaCy (``prefer_precomputed``, or ``use = "precomputed"``).
"""

from __future__ import annotations

from typing import Any

from ingestaudit.enrichment import EntityExtraction, check_entities_options
from ingestaudit.model import ParsedDocument

_NER_ONLY = ("tagger", "parser", "attribute_ruler", "lemmatizer", "senter")
"""spaCy components not needed for named entities (en_core_web_* ``ner`` reads ``tok2vec`` only)."""


class EntitiesStep:
    """One pipeline's entity extractor with its options (`ingestaudit.enrichment.check_entities_options`); spaCy
    loads on first use.

    Raises:
        ValueError: bad options.
    """

    def __init__(self, **options: Any):
        self.opts = check_entities_options(options)
        self._nlp: Any = None

    def settings(self) -> dict[str, Any]:
        """Every option but the extractor, JSON-serialisable (``report.json["pipelines"][].stages``)."""
        return {k: v for k, v in self.opts.items() if k != "extractor"}

    def version(self) -> str:
        """spaCy's and the model's installed versions (nothing is loaded); ``external`` for precomputed."""
        from ingestaudit.plugins import package_version

        if self.opts["extractor"] == "precomputed":
            return "external"
        model = self.opts["spacy_model"]
        if self.opts["extractor"] == "presidio":
            return (f"presidio-analyzer {package_version('presidio_analyzer') or 'not installed'}, "
                    f"{model} {package_version(model) or 'not installed'}")
        return (f"spacy {package_version('spacy') or 'not installed'}, "
                f"{model} {package_version(model) or 'not installed'}")

    def nlp(self) -> Any:
        """The spaCy pipeline, ``ner`` and what it needs only (loaded once per process and options)."""
        if self._nlp is None:
            import spacy

            from ingestaudit.metrics.chunking import SPACY_SETUP_LOCK

            with SPACY_SETUP_LOCK:  # spaCy's factory entry points are on (the sentencizer switches them off meanwhile)
                self._nlp = spacy.load(self.opts["spacy_model"], disable=list(_NER_ONLY))
        return self._nlp

    def presidio(self) -> Any:
        """Presidio's analyzer over ``spacy_model`` (`ingestaudit.stages.pii.PresidioDetector` with its defaults, any
        installed model version), built once."""
        if self._nlp is None:
            from ingestaudit.stages.pii import PresidioDetector

            self._nlp = PresidioDetector(spacy_model=self.opts["spacy_model"], spacy_model_version=None)
        return self._nlp

    def run(self, parsed: ParsedDocument | None, reference: str | None, context: tuple[str, ...] = ()
            ) -> EntityExtraction:
        """The extractor's entities on one document, on the reference text (``parsed`` None: nothing to read, ``ran``
        False). Never raises for an extractor problem: the state and message are in the artefact."""
        name = self.opts["extractor"]
        if parsed is None:
            return EntityExtraction(name)
        try:
            return self._run(parsed, reference)
        except Exception as exc:
            return EntityExtraction(name, True, state="error", reason=f"{type(exc).__name__}: {exc}")

    def _run(self, parsed: ParsedDocument, reference: str | None) -> EntityExtraction:
        name, text = self.opts["extractor"], parsed.text or ""
        given = parsed.extras.get("entities")
        relations = parsed.extras.get("relations")
        if name == "precomputed" or (self.opts["prefer_precomputed"] and given is not None):
            if given is None:
                return EntityExtraction(name, True, state="no_prediction", reason="the output carries no entities")
            raw, source = [(int(s["start"]), int(s["end"]), str(s["type"])) for s in given], "precomputed"
            empty = next((i for i, (a, b, _) in enumerate(raw) if a == b), None)
            if empty is not None:
                raise ValueError(f"precomputed entities[{empty}]: span [{raw[empty][0]}, {raw[empty][1]}) is empty")
        elif len(text) > self.opts["max_chars"]:
            return EntityExtraction(name, True, state="skipped", reason=f"input of {len(text)} code points exceeds "
                                                                       f"max_chars={self.opts['max_chars']}")
        elif name == "presidio":
            raw = [(s.start, s.end, s.type) for s in self.presidio().detect(text)]
            source, relations = f"presidio ({self.version()})", None
        else:
            doc = self.nlp()(text)
            raw, source = [(e.start_char, e.end_char, e.label_) for e in doc.ents], f"spacy ({self.version()})"
            relations = None
        spans = _to_reference(raw, text, reference)
        rels = None if relations is None else tuple(
            {"head": int(r["head"]), "tail": int(r["tail"]), "type": str(r["type"])} for r in relations)
        return EntityExtraction(name, True, source, spans, rels)


def _to_reference(raw: list[tuple[int, int, str]], text: str, reference: str | None
                  ) -> tuple[tuple[int, int, str] | None, ...]:
    """``raw`` spans on ``text`` carried onto ``reference`` (kept as they are when there is none, or when the texts
    are equal)."""
    if reference is None or reference == text:
        return tuple(raw)
    from ingestaudit.metrics.alignment import align_chars
    from ingestaudit.metrics.entities import onto_reference
    from ingestaudit.metrics.offsets import OffsetMap

    to_ref = OffsetMap.from_char_alignment(align_chars(reference, text))
    return tuple(None if s is None else (s.start, s.end, s.type) for s in onto_reference(raw, to_ref))


class RelationsStep(EntitiesStep):
    """The ``relations`` step: a precomputed output's ``relations`` with the ``entities`` they index, carried onto
    the reference text (no built-in relation extractor runs); its only option is ``extractor = "precomputed"``.

    Raises:
        ValueError: another option or extractor.
    """

    def __init__(self, **options: Any):
        if set(options) - {"extractor"} or options.get("extractor", "precomputed") != "precomputed":
            raise ValueError(f"the relations step reads precomputed outputs only (use = \"precomputed\", no other "
                             f"option), got {options!r}")
        super().__init__(extractor="precomputed")

    def settings(self) -> dict[str, Any]:
        """No settings: the output is read as it is."""
        return {}

    def run(self, parsed: ParsedDocument | None, reference: str | None, context: tuple[str, ...] = ()
            ) -> EntityExtraction:
        """As `EntitiesStep.run`; an output without ``relations`` is ``no_prediction``."""
        out = super().run(parsed, reference, context)
        if out.ran and not out.state and out.relations is None:
            return EntityExtraction("precomputed", True, state="no_prediction",
                                    reason="the output carries no relations")
        return out
