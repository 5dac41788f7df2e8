"""spaCy's named entities on the presidio-research synthetic records, scored per type under the four SemEval-2013
schemes, and the entity audit's cost against spaCy's own extraction time (issue 28).

Documents: the first ``--limit`` records of ../shared/data/presidio-synth (1,000 short English snippets). Truth: their
labelled PERSON, GPE, ORGANIZATION, DATE_TIME and NRP spans (the other labels, e-mail addresses, street addresses,
credit cards..., are left out, and so are the records' types from the vocabulary). Extractor: the ``entities`` step
(`ingestaudit.stages.entities_step.EntitiesStep`, spaCy ``en_core_web_sm``, ``ner`` only), one call per document as
in a run, on the reference text. Type map (`TYPE_MAP`): PERSON=PERSON, GPE=GPE, LOC=GPE, ORG=ORGANIZATION,
DATE=DATE_TIME, TIME=DATE_TIME, NORP=NRP; spaCy's other labels (CARDINAL, MONEY, FAC...) are counted apart
(unmapped), not spurious.

Cost: the auditor's work (`EntitiesAuditor.artefact` per document: the four schemes, micro and per type, and
`audit_artefacts` over the corpus) against the step's extraction time (spaCy model load excluded), CPU time of this
process, best of ``--repeat`` rounds of the audit. The corpus counts are checked against nervaluate 1.2.1 (equal, or
no number is printed).

Run from the project root:

    python benchmarks/bench_entities.py                     # ~1-2 min
    python benchmarks/bench_entities.py --json benchmarks/results/bench_entities.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHARED = Path(os.environ.get("INGESTAUDIT_SHARED_DATA", ROOT.parent / "shared" / "data"))
DATA = SHARED / "presidio-synth" / "synth_dataset_v2.first1000.json"
TYPES = ("DATE_TIME", "GPE", "NRP", "ORGANIZATION", "PERSON")
TYPE_MAP = {"PERSON": "PERSON", "GPE": "GPE", "LOC": "GPE", "ORG": "ORGANIZATION", "DATE": "DATE_TIME",
            "TIME": "DATE_TIME", "NORP": "NRP"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    from ingestaudit.auditors.base import ArtefactItem, ItemArtefacts
    from ingestaudit.auditors.entities import EntitiesAuditor
    from ingestaudit.metrics.entities import RATES, SCHEMES, empty_scores
    from ingestaudit.model import ParsedDocument
    from ingestaudit.stages.entities_step import EntitiesStep
    from ingestaudit.truth import Span, Truth

    records = json.loads(DATA.read_text(encoding="utf-8"))[:args.limit]
    truths = [Truth(text=r["full_text"], entities_labelled=True, entity_types=TYPES, entities=tuple(
        Span(start=s["start_position"], end=s["end_position"], type=s["entity_type"])
        for s in r["spans"] if s["entity_type"] in TYPES)) for r in records]
    step = EntitiesStep(extractor="spacy")
    t0 = time.process_time()
    step.nlp()
    load_s = time.process_time() - t0
    t0 = time.process_time()
    detections = [step.run(ParsedDocument(text=t.text), t.text) for t in truths]
    extract_s = time.process_time() - t0
    assert all(not d.state for d in detections), next(d.reason for d in detections if d.state)

    auditor = EntitiesAuditor(type_map=",".join(f"{k}={v}" for k, v in TYPE_MAP.items()))
    context = tuple(sorted({v for t in truths for v in auditor.corpus_values(t)} | set(TYPES)))
    audit_s = float("inf")
    for _ in range(args.repeat):
        t0 = time.process_time()
        items = [ArtefactItem(f"synth/{i}", "synth", auditor.artefact(ItemArtefacts.of(t, steps={"entities": d}), context))
                 for i, (t, d) in enumerate(zip(truths, detections))]
        auditor.audit_artefacts(items, context)
        audit_s = min(audit_s, time.process_time() - t0)
    total = empty_scores()
    for it in items:
        total = total + it.artefact.scores

    from nervaluate import Evaluator  # the reference implementation (test extra)

    def conv(spans):
        return [{"label": s.type, "start": s.start, "end": s.end - 1} for s in sorted(spans)]

    from ingestaudit.metrics.spans import Span as MSpan

    gold = [conv([MSpan(s.start, s.end, s.type) for s in t.entities]) for t in truths]
    pred = [conv([MSpan(a, b, TYPE_MAP[c]) for a, b, c in (s for s in d.spans if s) if c in TYPE_MAP])
            for d in detections]
    ref = Evaluator(gold, pred, tags=list(TYPES), loader="dict").evaluate()
    for scheme in SCHEMES:
        for t, c in [("micro", total.micro[scheme]), *total.per_type[scheme].items()]:
            r = ref["overall"][scheme] if t == "micro" else ref["entities"][t][scheme]
            assert (c.correct, c.incorrect, c.partial, c.missed, c.spurious) == (
                r.correct, r.incorrect, r.partial, r.missed, r.spurious), (scheme, t)

    table = {scheme: {t: {**c.as_dict(), **{k: c.rate(k).value for k in RATES}}
                      for t, c in [("micro", total.micro[scheme]), *sorted(total.per_type[scheme].items())]}
             for scheme in SCHEMES}
    out = {"documents": len(truths), "spacy_model": step.version(), "type_map": TYPE_MAP, "types": list(TYPES),
           "unmapped_predictions": dict(total.unmapped), "spacy_load_cpu_s": round(load_s, 3),
           "extraction_cpu_s": round(extract_s, 3), "audit_cpu_s": round(audit_s, 4),
           "audit_over_extraction": round(audit_s / extract_s, 4), "scores": table, "nervaluate_equal": True}
    print(f"{len(truths)} documents, {step.version()}; extraction {extract_s:.2f} s CPU, audit {audit_s:.3f} s "
          f"CPU: ratio {audit_s / extract_s:.2%}")
    print("| scheme | type | COR | INC | PAR | MIS | SPU | precision | recall | F1 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for scheme, rows in table.items():
        for t, v in rows.items():
            cells = [f"{v[k]:.3f}" if v[k] is not None else "—" for k in RATES]
            print(f"| {scheme} | {t} | {v['correct']} | {v['incorrect']} | {v['partial']} | {v['missed']} | "
                  f"{v['spurious']} | " + " | ".join(cells) + " |")
    print("unmapped (counted apart):", dict(total.unmapped))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
