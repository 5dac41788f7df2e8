"""BM25 indexing and querying: bm25s (what the ``bm25`` retriever runs) against rank_bm25 (issue 29, Performance).

    python benchmarks/bench_bm25.py [--words 60] [--synthetic 0] [--k 10] [--repeat 3]
                                    [--json benchmarks/results/bench_bm25.json]

Corpus: the three texts of ``../shared/data/chroma-chunking-eval/corpora`` cut into passages of ``--words``
whitespace words (default 60), queried with the 319 questions of its ``questions_df.csv``; with ``--synthetic N``,
N synthetic passages instead (Zipf words, `bench_minhash.synthetic_corpus`, seed 3) queried with the real questions.
Tokens: `ingestaudit.stages.bm25_retriever.BM25Retriever.tokenize` (``bm25s.tokenize``, lower-cased, English stop
words out), computed once and handed to both libraries (timed apart).

Both libraries score the same variant: rank_bm25 ``BM25Okapi(k1=1.5, b=0.75)`` and bm25s ``BM25(method="atire",
idf_method="robertson", dtype="float64")`` (the ATIRE term component with the Robertson idf: BM25Okapi's formula,
which differs only where a term is in more than half the passages: BM25Okapi floors that idf at 0.25 x the mean idf,
bm25s at 0). Phases, best of ``--repeat``, libraries interleaved round by round:

- **index**: ``BM25Okapi(tokens)`` against ``bm25s.BM25(...).index(tokens)``;
- **query**: every question, ``get_scores(question tokens)`` then the top ``k`` (``np.argsort``, stable) of the
  passage scores, for both libraries alike;
- (context) the ``bm25`` retriever end to end (default ``lucene`` variant, tokenising included): ``index`` of every
  passage, then ``search`` of every question.

Agreement: per question, the same top-k ids in the same order, and the largest absolute score difference over all
passages and questions.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

DATA = ROOT.parent / "shared" / "data" / "chroma-chunking-eval"


def passages(words: int) -> list[str]:
    """The chroma corpora cut into passages of ``words`` whitespace words (the last of each text may be shorter)."""
    out = []
    for path in sorted((DATA / "corpora").glob("*.md")):
        w = path.read_text(encoding="utf-8").split()
        out += [" ".join(w[i:i + words]) for i in range(0, len(w), words)]
    return out


def questions() -> list[str]:
    with open(DATA / "questions_df.csv", newline="", encoding="utf-8") as fh:
        return [row["question"] for row in csv.DictReader(fh)]


def top_k(scores: np.ndarray, k: int) -> list[int]:
    return np.argsort(-scores, kind="stable")[:k].tolist()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--words", type=int, default=60)
    ap.add_argument("--synthetic", type=int, default=0)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "bench_bm25.json"))
    args = ap.parse_args()

    import bm25s
    from rank_bm25 import BM25Okapi

    from bench_minhash import interleaved_best as best_of  # best of repeat, the methods interleaved
    from bench_minhash import synthetic_corpus

    from ingestaudit.stages.bm25_retriever import BM25Retriever
    from ingestaudit.stages.retrievers import ChunkView

    if args.synthetic:
        texts = synthetic_corpus(args.synthetic, seed=3, mean_words=args.words)
    else:
        texts = passages(args.words)
    qs = questions()
    tok = BM25Retriever()
    t = time.perf_counter()
    corpus_tokens = tok.tokenize(texts)
    query_tokens = tok.tokenize(qs)
    tokenise_s = time.perf_counter() - t

    def okapi_index():
        return BM25Okapi(corpus_tokens, k1=1.5, b=0.75)

    def bm25s_index():
        m = bm25s.BM25(k1=1.5, b=0.75, method="atire", idf_method="robertson", dtype="float64")
        m.index(corpus_tokens, show_progress=False)
        return m

    index_s, built = best_of({"rank_bm25": okapi_index, "bm25s": bm25s_index}, args.repeat)
    okapi, fast = built["rank_bm25"], built["bm25s"]
    query_s, answers = best_of({
        "rank_bm25": lambda: [okapi.get_scores(q) for q in query_tokens],
        "bm25s": lambda: [np.asarray(fast.get_scores(q)) for q in query_tokens]}, args.repeat)
    same_top = sum(top_k(a, args.k) == top_k(b, args.k) for a, b in zip(answers["rank_bm25"], answers["bm25s"]))
    max_diff = max(float(np.max(np.abs(a - b))) for a, b in zip(answers["rank_bm25"], answers["bm25s"]))

    views = [ChunkView(i, "d", t_, None, (), {}) for i, t_ in enumerate(texts)]
    retriever = BM25Retriever()
    t = time.perf_counter()
    retriever.index(views, None)
    ret_index_s = time.perf_counter() - t
    t = time.perf_counter()
    for q in qs:
        retriever.search(q, None, args.k, None)
    ret_query_s = time.perf_counter() - t

    result = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()},
        "versions": {"bm25s": bm25s.__version__, "rank_bm25": "0.2.2"},
        "corpus": {"passages": len(texts), "tokens": sum(map(len, corpus_tokens)), "questions": len(qs),
                   "source": f"synthetic {args.synthetic}" if args.synthetic else f"chroma corpora, {args.words} words"},
        "tokenise_s": tokenise_s,
        "index_s": index_s, "index_speedup": index_s["rank_bm25"] / index_s["bm25s"],
        "query_s": query_s, "query_speedup": query_s["rank_bm25"] / query_s["bm25s"],
        "agreement": {"same_top_k": same_top, "questions": len(qs), "max_abs_score_diff": max_diff},
        "retriever_end_to_end_s": {"index": ret_index_s, "query": ret_query_s},
    }
    print(json.dumps(result, indent=2))
    Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
