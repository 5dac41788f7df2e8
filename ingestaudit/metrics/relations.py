"""Relation extraction: precision, recall and F1 per relation type under the ``strict`` and ``boundaries`` schemes.

A relation is ``(head, tail, type)`` with head and tail indexes into the same side's entity list. Following
Taillé et al. (2020), "Let's Stop Incorrect Comparisons in End-to-end Relation Extraction", §2:

``strict``      a predicted relation is correct iff its type, and both arguments' boundaries and entity types,
                equal those of a labelled relation.
``boundaries``  the same with the arguments' boundaries only (entity types ignored).

One-to-one (multiset) matching: per relation type, tp = |G ∩ P| over the relations' keys, fp = |P| - tp,
fn = |G| - tp; P, R and F1 as :class:`~ingestaudit.metrics.spans.SpanCounts` (micro: counts summed over types
and documents).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ingestaudit.metrics.spans import Span, SpanCounts, as_span, as_spans

RELATION_SCHEMES: tuple[str, ...] = ("strict", "boundaries")
"""The relation schemes, strictest first."""


def _keys(relations: Sequence[Mapping[str, Any]], entities: Sequence[Span | None], scheme: str,
          side: str) -> Counter[tuple]:
    keys: Counter[tuple] = Counter()
    for i, rel in enumerate(relations):
        try:
            head, tail, kind = entities[rel["head"]], entities[rel["tail"]], rel["type"]
        except (KeyError, IndexError, TypeError):
            raise ValueError(f"{side} relation {i} {rel!r}: head/tail must index the {side} entities "
                             f"(0..{len(entities) - 1}) and type must be given") from None
        if head is None or tail is None:  # an argument with no place on the reference text: matches nothing
            keys[(kind, "unplaced", side, i)] += 1
        elif scheme == "strict":
            keys[(kind, head.start, head.end, head.type, tail.start, tail.end, tail.type)] += 1
        else:
            keys[(kind, head.start, head.end, tail.start, tail.end)] += 1
    return keys


def score_relations(truth: Sequence[Mapping[str, Any]], truth_entities: Sequence[object],
                    pred: Sequence[Mapping[str, Any]], pred_entities: Sequence[object], scheme: str,
                    mapping: Mapping[str, str | None] | None = None) -> dict[str, SpanCounts]:
    """Counts per relation type for one document under ``scheme``.

    Args:
        truth, pred: relations ``{"head": int, "tail": int, "type": str}``.
        truth_entities, pred_entities: the spans the indexes point into; a predicted entity may be ``None`` (it has
            no place on the reference text), and a relation with such an argument matches nothing.
        mapping: predicted entity type -> truth type (as for entities), applied before ``strict`` compares types.

    Raises:
        ValueError: unknown scheme, or a relation whose head/tail is not an index of its side's entities.
    """
    if scheme not in RELATION_SCHEMES:
        raise ValueError(f"unknown relation scheme {scheme!r}; choose one of {', '.join(RELATION_SCHEMES)}")
    mapping = mapping or {}
    guessed = [None if s is None else Span(s.start, s.end, mapping.get(s.type) or s.type)
               for s in (None if e is None else as_span(e) for e in pred_entities)]
    gold_keys = _keys(truth, as_spans(truth_entities), scheme, "truth")
    pred_keys = _keys(pred, guessed, scheme, "predicted")
    out: dict[str, SpanCounts] = {}
    for kind in sorted({k[0] for k in gold_keys} | {k[0] for k in pred_keys}):
        g = Counter({k: n for k, n in gold_keys.items() if k[0] == kind})
        p = Counter({k: n for k, n in pred_keys.items() if k[0] == kind})
        tp = sum((g & p).values())
        out[kind] = SpanCounts(tp, sum(p.values()) - tp, sum(g.values()) - tp)
    return out
