"""The paths that keep a run linear and flat in memory (issue 14) give the numbers of the reference computations:
LSH banding = datasketch MinHashLSH, one-hash signatures = `signature_matrix`, vectorised S-curve buckets = the
pair-by-pair loop, blocked bootstrap = one draw, the streamed summary = the in-memory one, vectors in corpus order."""

from __future__ import annotations

import random

import numpy as np
import pytest

from ingestaudit.measurement import State


def test_band_candidates_are_the_pairs_minhashlsh_returns():
    from datasketch import MinHashLSH

    from ingestaudit.stages.lsh_bands import band_candidates
    from ingestaudit.stages.minhash import minhashes_from_signatures

    rng = np.random.default_rng(3)
    base = rng.integers(0, 2**32, size=(30, 128), dtype=np.uint64).astype(np.uint32)
    near = np.repeat(base, 4, axis=0)  # 4 near-copies of each row: a few values changed in each
    for row in near:
        row[rng.integers(0, 128, size=rng.integers(1, 40))] = rng.integers(0, 2**32, dtype=np.uint64)
    for sig, threshold in ((rng.integers(0, 4, size=(120, 128)).astype(np.uint32), 0.5), (near, 0.8), (near, 0.9)):
        lsh = MinHashLSH(threshold=threshold, num_perm=128)
        mh = minhashes_from_signatures(sig, seed=1, scheme="affine32")
        for i, m in enumerate(mh):
            lsh.insert(i, m, check_duplication=False)
        want = sorted({(i, j) for i, m in enumerate(mh) for j in lsh.query(m) if j > i})
        got = [tuple(map(int, p)) for p in band_candidates(sig, lsh.b, lsh.r)]
        assert got == want
    assert want  # the last grid had candidates to compare
    assert band_candidates(np.zeros((1, 8), dtype=np.uint32), 2, 4).shape == (0, 2)
    with pytest.raises(ValueError):
        band_candidates(np.zeros((3, 8), dtype=np.uint32), 3, 4)


@pytest.mark.parametrize("scheme", [None, "affine32", "affine64", "legacy"])
def test_signatures_from_one_sha1_per_shingle_equal_signature_matrix(scheme):
    from ingestaudit.stages.minhash import sha1_prefix64, signature_matrix, signature_of_hashes

    rng = random.Random(0)
    for n in (1, 7, 1500, 2500):  # 2500 > block_rows: reduced in pieces
        shingles = {bytes(rng.randrange(256) for _ in range(5)) for _ in range(n)}
        want = signature_matrix([shingles], num_perm=64, seed=3, scheme=scheme)[0]
        got = signature_of_hashes(sha1_prefix64(list(shingles)), num_perm=64, seed=3, scheme=scheme)
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_sorted_jaccard_is_the_jaccard_of_the_shingle_sets():
    from ingestaudit.metrics.jaccard import exact_jaccard
    from ingestaudit.stages.dedup import DedupConfig, normalize, shingle_set, sketch, sorted_jaccard

    cfg = DedupConfig()
    a, b = "the quick brown fox jumps over the lazy dog", "the quick brown fox leaps over the lazy dog"
    _, ha = sketch(a, cfg)
    _, hb = sketch(b, cfg)
    assert sorted_jaccard(ha, hb) == exact_jaccard(shingle_set(normalize(a, cfg), cfg),
                                                  shingle_set(normalize(b, cfg), cfg))
    assert sorted_jaccard(np.zeros(0, np.uint64), np.zeros(0, np.uint64)) is None


def test_bucket_rates_equal_the_pair_by_pair_definition():
    from ingestaudit.metrics.lsh import candidate_probability, candidate_rate_by_bucket

    rng = random.Random(1)
    for _ in range(10):
        jac = [rng.choice([0.0, 1.0, 0.5]) if rng.random() < 0.2 else rng.random() for _ in range(rng.randint(0, 2000))]
        cand = [rng.random() < j for j in jac]
        edges = sorted(rng.sample([i / 20 for i in range(21)], rng.randint(2, 8)))
        n = len(edges) - 1
        pairs, cands, theo = [0] * n, [0] * n, [0.0] * n
        for j, c in zip(jac, cand):  # the definition, pair by pair
            if edges[0] <= j <= edges[-1]:
                k = next((i for i in range(n) if j < edges[i + 1]), n - 1)
                pairs[k] += 1
                cands[k] += c
                theo[k] += candidate_probability(j, 9, 13)
        got = candidate_rate_by_bucket(jac, cand, 9, 13, edges)
        assert [g.pairs for g in got] == pairs and [g.candidates for g in got] == cands
        assert [g.theoretical for g in got] == [t / p if p else None for t, p in zip(theo, pairs)]  # same floats


def test_the_blocked_bootstrap_is_one_draw_of_every_resample(monkeypatch):
    from ingestaudit.metrics import intervals

    rng = np.random.default_rng(2)
    for n in (2, 333, 20_001):
        num, den = rng.random(n), rng.random(n) + 0.5
        blocked = (intervals.bootstrap_ratio(num, den, seed=5, n_resamples=1000),
                   intervals.bootstrap_ratio(num, None, seed=5, n_resamples=999))
        monkeypatch.setattr(intervals, "BLOCK_VALUES", 10**12)  # one (n_resamples, n) draw
        whole = (intervals.bootstrap_ratio(num, den, seed=5, n_resamples=1000),
                 intervals.bootstrap_ratio(num, None, seed=5, n_resamples=999))
        monkeypatch.undo()
        assert blocked == whole


def test_the_summary_streamed_from_a_store_equals_the_summary_of_the_rows(tmp_path):
    from ingestaudit.report.aggregate import Summarizer, summarize
    from ingestaudit.report.schema import MeasurementRow
    from ingestaudit.store import write_measurements

    rng = random.Random(4)
    rows = []
    for i in range(400):
        for metric, counts in (("extraction.cer", True), ("dedup.excluded", True),  # bootstrap, Wilson
                               ("normalization.replacement_chars", False)):  # mean of values
            state = rng.choice(["ok"] * 8 + ["error", "skipped"])
            ok = state == "ok"
            wilson = metric == "dedup.excluded"
            num = float(rng.randint(0, 1 if wilson else 50)) if counts and ok else None
            den = (1.0 if wilson else float(rng.randint(50, 200))) if num is not None else None
            rows.append(MeasurementRow(item=f"c{i % 4}/d{i:04d}", item_kind="document", doc_class=f"c{i % 4}",
                                       pipeline=rng.choice(["p", "q"]), stage=metric.split(".")[0], metric=metric,
                                       label="", value=(num / den if num is not None else rng.random()) if ok
                                       else None, numerator=num, denominator=den, state=state, detail={}))
    rows.sort(key=lambda r: (r.item_kind, r.item, r.pipeline, r.stage, r.metric, r.label))
    write_measurements(rows, tmp_path / "m.parquet", row_group=97)
    acc = Summarizer()
    acc.add_store(tmp_path / "m.parquet")
    streamed = acc.rows(["p", "q"], seed=3, n_resamples=200)
    assert streamed == summarize(rows, ["p", "q"], seed=3, n_resamples=200)
    assert any(s.ci_method.startswith("bootstrap") for s in streamed) and any(
        s.ci_method.startswith("wilson") for s in streamed)


def test_vectors_come_back_in_corpus_order_as_views_of_one_file(tmp_path):
    from ingestaudit.chain import DocChunks
    from ingestaudit.spill import VectorSpill

    spill = VectorSpill(tmp_path, "p")
    rng = np.random.default_rng(0)
    docs = {i: DocChunks(f"c/d{i}", "c", State.OK, vectors=rng.random((i + 1, 4)).astype(np.float32))
            for i in range(5)}
    docs[5] = DocChunks("c/none", "c", State.ERROR, "no chunks")
    arrived = [(i, spill.add(i, docs[i])) for i in (3, 0, 5, 4, 1, 2)]  # the order workers finished in
    assert all(d.vectors is None for _, d in arrived)
    back = spill.canonical(arrived)
    assert [d.doc_id for d in back] == [docs[i].doc_id for i in range(6)]
    for i, d in enumerate(back[:5]):
        assert np.array_equal(np.asarray(d.vectors), docs[i].vectors) and isinstance(d.vectors, np.memmap)
    assert back[5].vectors is None
    base = back[0].vectors.base
    assert all(d.vectors.base is base for d in back[:5])  # one contiguous file, corpus order


def test_the_run_seed_reaches_only_the_stages_that_may_run():
    """The seed goes to every auditor taking one (language, chunking, retrieval, index, by their signatures); with
    stages requested, only to those, so the other stages' auditor modules are not imported for a run that never
    uses them; an explicit seed is kept."""
    import subprocess
    import sys

    from ingestaudit.runner import _with_seed

    assert _with_seed({}, 7) == {"language": {"seed": 7}, "chunking": {"seed": 7}, "retrieval": {"seed": 7},
                                 "index": {"seed": 7}}
    assert _with_seed({"index": {"seed": 3}}, 7, ["index", "extraction"]) == {"index": {"seed": 3}}
    assert _with_seed({"pii": {"x": 1}}, 7, ["language"]) == {"pii": {"x": 1}, "language": {"seed": 7}}
    probe = ("import sys; from ingestaudit.runner import _with_seed; _with_seed({}, 7, ['extraction', 'dedup']); "
             "print(sorted(m for m in sys.modules if m.startswith('ingestaudit.auditors.')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "ingestaudit.auditors.language" not in loaded and "ingestaudit.auditors.index" not in loaded
    assert "ingestaudit.auditors.dedup" in loaded and "ingestaudit.auditors.extraction" in loaded
