"""The default near-duplicate detector (datasketch MinHash + MinHashLSH) and the fast MinHash signatures."""

from __future__ import annotations

import numpy as np
import pytest
from datasketch import LeanMinHash, MinHash, MinHashLSH
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestaudit.measurement import State
from ingestaudit.metrics.dedup import chained_pairs, cluster_agreement, false_merge_rate, missed_merge_rate
from ingestaudit.metrics.jaccard import near_duplicate_pairs, word_ngrams
from ingestaudit.metrics.lsh import binomial_acceptance_region, candidate_probability, lsh_params
from ingestaudit.stages.dedup import (
    DedupConfig,
    DuplicateKeyError,
    deduplicate,
    deduplicate_grid,
    normalize,
    shingle_set,
)
from ingestaudit.stages.minhash import fast_minhashes, signature_matrix


def _update_loop(shingles, num_perm=128, seed=1, scheme=None, hashfunc=None):
    """datasketch's reference: one MinHash.update call per shingle."""
    kwargs = {"num_perm": num_perm, "seed": seed}
    if scheme:
        kwargs["scheme"] = scheme
    if hashfunc:
        kwargs["hashfunc"] = hashfunc
    m = MinHash(**kwargs)
    for s in shingles:
        m.update(s)
    return m


# --- fast signatures ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("scheme", ["affine32", "affine64", "legacy"])
@pytest.mark.parametrize(("num_perm", "seed"), [(1, 1), (128, 1), (64, 42)])
def test_signatures_identical_to_update_loop(scheme, num_perm, seed):
    rng = np.random.default_rng(0)
    sets = [{f"w{i}".encode() for i in rng.integers(0, 10**6, size)} for size in rng.integers(0, 60, 40)]
    sets += [set(), {b"x"}, {f"big{i}".encode() for i in range(3000)}]  # empty, singleton, split across blocks
    sig = signature_matrix(sets, num_perm=num_perm, seed=seed, scheme=scheme, block_rows=500)
    for row, s in zip(sig, sets):
        ref = _update_loop(s, num_perm, seed, scheme)
        assert row.dtype == ref.hashvalues.dtype
        assert np.array_equal(row, ref.hashvalues)


def test_signatures_with_custom_hashfunc_and_objects():
    def h(b: bytes) -> int:  # a deterministic 32-bit hash other than SHA-1
        return int.from_bytes(b[:4].ljust(4, b"\0"), "little") ^ len(b)

    sets = [{b"alpha", b"beta"}, {b"gamma"}, set()]
    sig = signature_matrix(sets, num_perm=16, hashfunc=h)
    for row, s in zip(sig, sets):
        assert np.array_equal(row, _update_loop(s, 16, hashfunc=h).hashvalues)
    lean = fast_minhashes(sets, num_perm=16, hashfunc=h)
    assert all(isinstance(m, LeanMinHash) for m in lean)
    assert lean[0] == LeanMinHash(_update_loop(sets[0], 16, hashfunc=h))
    full = fast_minhashes(sets, num_perm=16, lean=False)
    assert type(full[0]) is MinHash and full[0] == _update_loop(sets[0], 16)
    full[1].update(b"delta")  # a full MinHash can still be updated, exactly like datasketch's
    assert full[1] == _update_loop({b"gamma", b"delta"}, 16)


@given(st.lists(st.sets(st.binary(min_size=0, max_size=12), max_size=30), max_size=8),
       st.sampled_from(["affine32", "affine64", "legacy"]))
@settings(max_examples=40, deadline=None)
def test_signatures_property(sets, scheme):
    sig = signature_matrix(sets, num_perm=8, seed=5, scheme=scheme, block_rows=7)
    assert sig.shape == (len(sets), 8)
    for row, s in zip(sig, sets):
        assert np.array_equal(row, _update_loop(s, 8, 5, scheme).hashvalues)


def test_fast_minhashes_index_like_datasketch():
    pairs = near_duplicate_pairs(20, 0.8, seed=3)
    sets = [word_ngrams(t, 1) for p in pairs for t in (p.text_a, p.text_b)]
    encoded = [{s.encode() for s in x} for x in sets]
    ours, theirs = MinHashLSH(threshold=0.8, num_perm=128), MinHashLSH(threshold=0.8, num_perm=128)
    mine = fast_minhashes(encoded)
    ref = [_update_loop(s) for s in encoded]
    for i, (a, b) in enumerate(zip(mine, ref)):
        ours.insert(i, a)
        theirs.insert(i, b)
    for a, b in zip(mine, ref):
        assert sorted(ours.query(a)) == sorted(theirs.query(b))


# --- the detector ------------------------------------------------------------------------------------------------

def test_ten_blank_documents_merge_nothing():
    docs = {f"blank{i}": ["", " ", "\n\n", "\t \u00a0 ", "\u2003"][i % 5] for i in range(10)}
    result = deduplicate(docs)
    assert result.clusters == ()
    assert all(result.cluster_of[k] is None for k in docs)
    assert [(e.key, e.reason) for e in result.excluded] == [(k, "empty") for k in docs]
    assert result.candidates == () and result.removed == ()
    c = cluster_agreement(dict.fromkeys(docs), dict(result.cluster_of))
    assert c.predicted_pairs == 0 and false_merge_rate(c).state is State.NO_PREDICTION
    # the failure mode the exclusion prevents: empty MinHashes are all equal, so LSH returns every one of them
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    for k in docs:
        lsh.insert(k, MinHash(num_perm=128))
    assert len(lsh.query(MinHash(num_perm=128))) == 10


def test_repeated_keys_are_rejected():
    with pytest.raises(DuplicateKeyError, match="'a', 'b'"):
        deduplicate([("a", "x"), ("a", "y"), ("b", "z"), ("c", "z"), ("b", "")])
    with pytest.raises(TypeError):
        deduplicate([("a", None)])


def test_exact_duplicates_and_removal():
    text = "The fund's total annual operating expenses are 0.45 percent of net assets. " * 3
    docs = {"a": text, "b": "  " + text.upper().replace(" ", "\n"), "c": "Governing law: the State of Delaware. " * 3,
            "d": text}
    result = deduplicate(docs)  # nfkc_casefold: case and whitespace differences vanish
    assert result.exact_groups == (("a", "b", "d"),)
    assert result.clusters == (("a", "b", "d"),)
    assert result.removed == ("b", "d")
    assert result.cluster_of["c"] is not None and result.cluster_of["c"] != result.cluster_of["a"]
    assert deduplicate(docs, DedupConfig(normalization="none")).exact_groups == (("a", "d"),)


def test_lsh_parameters_are_recorded():
    docs = {"a": "some text long enough to shingle " * 2}
    assert (deduplicate(docs).b, deduplicate(docs).r) == (9, 13)
    assert (deduplicate(docs, DedupConfig(threshold=0.9)).b, deduplicate(docs, DedupConfig(threshold=0.9)).r) \
        == (5, 25)
    with pytest.raises(ValueError):
        DedupConfig(threshold=1.0)  # datasketch refuses it; exact duplicates go through the hash instead
    with pytest.raises(ValueError, match="unknown normalization"):
        DedupConfig(normalization="nfc")
    with pytest.raises(ValueError, match="scheme"):
        DedupConfig(scheme="affine16")
    legacy = deduplicate(docs, DedupConfig(scheme="legacy"))
    assert legacy.scheme == "legacy" and legacy.config.options()["scheme"] == "legacy"


def test_normalizations_and_shingles():
    # NFKC folds the fullwidth letters and the ligature; casefold lowers; whitespace runs collapse.
    assert normalize("\uff26\uff49\ufb01le\u00a0 Name\n", DedupConfig()) == "fifile name"
    assert normalize("Fee-table: 1.5%", DedupConfig(normalization="nfkc_casefold_alnum")) == "fee table 1 5"
    assert normalize(" a  b ", DedupConfig(normalization="whitespace")) == "a b"
    assert normalize(" a  b ", DedupConfig(normalization="none")) == " a  b "
    # char 2-grams of "abcab": ab, bc, ca, ab -> {ab, bc, ca}
    assert shingle_set("abcab", DedupConfig(k=2)) == {b"ab", b"bc", b"ca"}
    assert shingle_set("a", DedupConfig(k=2)) == frozenset()
    assert shingle_set("x y z y", DedupConfig(shingling="word", k=2)) == {b"x y", b"y z", b"z y"}
    text = near_duplicate_pairs(1, 0.8, n=3)[0].text_a
    assert shingle_set(text, DedupConfig(shingling="word", k=3)) == {s.encode() for s in word_ngrams(text, 3)}


def test_short_documents():
    docs = {"a": "Page 1", "b": "page 1", "c": "Page 2", "d": ""}
    excluded = deduplicate(docs)
    assert excluded.clusters == () and [e.reason for e in excluded.excluded] == ["too_short"] * 3 + ["empty"]
    exact = deduplicate(docs, DedupConfig(short_docs="exact_only"))
    assert exact.clusters == (("a", "b"),) and len(exact.excluded) == 4
    assert exact.cluster_of["d"] is None


@pytest.mark.parametrize("target", [0.7, 0.8, 0.9])
def test_empirical_candidate_rate_follows_the_s_curve(target):
    # 200 pairs with exact word-unigram Jaccard `target` (generator seed 0), one corpus of 400 documents.
    # At b=9, r=13: P(0.7) = 0.084, P(0.8) = 0.399, P(0.9) = 0.929; with n = 200 independent pairs the number of
    # candidate pairs lies in the central 99 % region of Binomial(200, P) (for J=0.8: [62, 98], mean 79.8).
    pairs = near_duplicate_pairs(200, target, seed=0)
    docs = [(f"{i}{side}", text) for i, p in enumerate(pairs) for side, text in (("a", p.text_a), ("b", p.text_b))]
    result = deduplicate(docs, DedupConfig(shingling="word", k=1, threshold=0.8))
    assert (result.b, result.r) == (9, 13)
    found = {(c.a, c.b) for c in result.candidates}
    hits = sum((f"{i}a", f"{i}b") in found for i in range(200))
    assert len(found) == hits  # no candidate between different pairs (they share no word)
    p = candidate_probability(target, 9, 13)
    low, high = binomial_acceptance_region(p, 200, 0.99)
    assert low <= hits <= high, (hits, p, (low, high))
    if target == 0.8:
        assert (low, high) == (62, 98)


def test_verification_and_chaining():
    # Four documents of 70 distinct words, each shifted by 10 words: J(neighbours) = 60/80 = 0.75,
    # J(a, c) = 50/90 = 0.556, J(a, d) = 40/100 = 0.4. Threshold 0.5 (b=25, r=5): P(0.75) = 0.9989, so the
    # neighbours become candidates; a-d may be a candidate (P(0.4) = 0.227) but verification drops it
    # (0.4 < 0.5). Components still chain a-b-c-d, and (a, d) is the one chained pair below 0.5.
    words = [f"w{i:03d}" for i in range(100)]
    docs = {name: " ".join(words[10 * k:10 * k + 70]) for k, name in enumerate("abcd")}
    config = DedupConfig(shingling="word", k=1, threshold=0.5, verify=True)
    assert lsh_params(0.5, 128).b == 25
    result = deduplicate(docs, config)
    assert result.clusters == (("a", "b", "c", "d"),)
    assert result.exact_jaccard("a", "d") == pytest.approx(0.4)
    for c in result.candidates:
        assert c.accepted == (c.jaccard >= 0.5)
    chain = chained_pairs(dict(result.cluster_of), result.exact_jaccard, 0.5)
    assert (chain.within_cluster_pairs, chain.chained) == (6, 1)
    assert chain.examples[0][:2] == ("a", "d")
    gold = {"a": "g1", "b": "g1", "c": "g2", "d": "g2"}  # by provenance: a,b one source; c,d another
    c = cluster_agreement(gold, dict(result.cluster_of))
    assert (false_merge_rate(c).numerator, false_merge_rate(c).denominator) == (4, 6)  # ac, ad, bc, bd
    assert missed_merge_rate(c).value == 0.0


def test_grid_equals_single_runs():
    pairs = near_duplicate_pairs(15, 0.8, seed=4)
    docs = {f"{i}{s}": t for i, p in enumerate(pairs) for s, t in (("a", p.text_a), ("b", p.text_b))}
    base = DedupConfig(shingling="word", k=1)
    grid = deduplicate_grid(docs, base, [64, 128], [0.5, 0.8])
    assert list(grid) == [(64, 0.5), (64, 0.8), (128, 0.5), (128, 0.8)]
    for (p, t), result in grid.items():
        single = deduplicate(docs, DedupConfig(shingling="word", k=1, num_perm=p, threshold=t))
        assert result == single
        assert (result.b, result.r) == (lsh_params(t, p).b, lsh_params(t, p).r)


def test_detector_is_datasketch():
    # The same candidates as datasketch's own pipeline: MinHash.update per shingle, MinHashLSH insert + query.
    pairs = near_duplicate_pairs(30, 0.8, seed=9) + near_duplicate_pairs(30, 0.9, seed=10)
    texts = [t for p in pairs for t in (p.text_a, p.text_b)]
    config = DedupConfig(shingling="char", k=5, threshold=0.8)
    result = deduplicate({str(i): t for i, t in enumerate(texts)}, config)
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    ms = [_update_loop(shingle_set(normalize(t, config), config)) for t in texts]
    for i, m in enumerate(ms):
        lsh.insert(i, m)
    expected = sorted({(i, j) for i, m in enumerate(ms) for j in lsh.query(m) if j > i})
    assert [(int(c.a), int(c.b)) for c in result.candidates] == expected


def test_workers_and_chunks_do_not_change_the_result(monkeypatch):
    import ingestaudit.stages.dedup as stage

    pairs = near_duplicate_pairs(12, 0.9, seed=11)
    docs = {f"{i}{s}": t for i, p in enumerate(pairs) for s, t in (("a", p.text_a), ("b", p.text_b))}
    docs.update({"empty": " ", "short": "a b", "copy": pairs[0].text_a})
    config = DedupConfig(shingling="word", k=1, verify=True)
    whole = deduplicate(docs, config)
    monkeypatch.setattr(stage, "_CHUNK_DOCS", 5)  # 27 documents -> 6 chunks
    assert deduplicate(docs, config) == whole
    assert deduplicate(docs, config, workers=2) == whole
    assert whole.exact_groups == (("0a", "copy"),) and [e.key for e in whole.excluded] == ["empty", "short"]


@given(st.text(max_size=40), st.integers(1, 6))
@settings(max_examples=200, deadline=None)
def test_char_shingles_are_code_point_kgrams(text, k):
    # the ASCII fast path (slicing the encoded text) and the general path give the code-point k-grams, UTF-8 encoded
    expected = {text[i:i + k].encode("utf-8", "surrogatepass") for i in range(len(text) - k + 1)}
    assert shingle_set(text, DedupConfig(k=k)) == expected
    assert shingle_set("été", DedupConfig(k=2)) == {"ét".encode(), "té".encode()}
