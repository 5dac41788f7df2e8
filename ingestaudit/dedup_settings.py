"""The near-duplicate detector's settings, with no datasketch: the normalization presets (`NORMALIZATIONS`) and
`DedupConfig`, every option of the default detector that changes its output. The detector itself is
`ingestaudit.stages.dedup` (which re-exports these); the dedup step (`ingestaudit.stages.dedup_step`) and the dedup
auditor read these types without loading it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from types import MappingProxyType
from typing import Any, Literal

from ingestaudit.metrics.lsh import lsh_params


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _nfkc_casefold(text: str) -> str:
    return _collapse(unicodedata.normalize("NFKC", text).casefold())


_NON_ALNUM = re.compile(r"[\W_]+")


def _nfkc_casefold_alnum(text: str) -> str:
    return _collapse(_NON_ALNUM.sub(" ", unicodedata.normalize("NFKC", text).casefold()))


NORMALIZATIONS: Mapping[str, Callable[[str], str]] = MappingProxyType({
    "none": lambda text: text,
    "whitespace": _collapse,
    "nfkc_casefold": _nfkc_casefold,
    "nfkc_casefold_alnum": _nfkc_casefold_alnum,
})
"""Named normalization presets applied before hashing and shingling:

- ``none``: the text as extracted;
- ``whitespace``: runs of Unicode whitespace (``str.split``) become one space, ends stripped;
- ``nfkc_casefold``: Unicode NFKC, then ``str.casefold``, then ``whitespace``;
- ``nfkc_casefold_alnum``: ``nfkc_casefold`` with every run of non-alphanumeric characters (``[\\W_]+``, Unicode)
  replaced by one space, then ``whitespace``.
"""


@dataclass(frozen=True)
class DedupConfig:
    """Every option of the default detector that changes its output (printed in the report).

    Attributes:
        shingling: ``"char"`` (character k-grams, in code points) or ``"word"`` (word n-grams over ``str.split``).
        k: k-gram / n-gram size (>= 1).
        normalization: a key of `NORMALIZATIONS`.
        num_perm: MinHash permutations (>= 2).
        threshold: Jaccard threshold of ``MinHashLSH`` in [0, 1); the index derives ``(b, r)`` from it.
        weights: ``(false positive, false negative)`` weights of datasketch's ``(b, r)`` optimiser; sum 1.
        seed: MinHash permutation seed (datasketch's ``seed``).
        scheme: datasketch permutation scheme (None = the installed datasketch's default).
        verify: keep an LSH candidate pair only if the exact Jaccard of the shingle sets is ``>= threshold``.
        min_shingles: documents with fewer shingles are excluded from LSH (reason ``"too_short"``).
        short_docs: ``"exclude"``: too-short documents are never merged; ``"exact_only"``: they still merge with
            exact (normalized-hash) duplicates. Empty documents are never merged.

    Raises:
        ValueError: an unknown choice, a size below 1, or a threshold/num_perm/weights combination that
            ``MinHashLSH`` refuses (threshold 1.0 among them).
    """

    shingling: Literal["char", "word"] = "char"
    k: int = 5
    normalization: str = "nfkc_casefold"
    num_perm: int = 128
    threshold: float = 0.8
    weights: tuple[float, float] = (0.5, 0.5)
    seed: int = 1
    scheme: str | None = None
    verify: bool = False
    min_shingles: int = 10
    short_docs: Literal["exclude", "exact_only"] = "exclude"

    def __post_init__(self) -> None:
        if self.shingling not in ("char", "word"):
            raise ValueError(f"shingling must be 'char' or 'word', got {self.shingling!r}")
        if self.normalization not in NORMALIZATIONS:
            raise ValueError(f"unknown normalization {self.normalization!r}; known: {', '.join(NORMALIZATIONS)}")
        if self.short_docs not in ("exclude", "exact_only"):
            raise ValueError(f"short_docs must be 'exclude' or 'exact_only', got {self.short_docs!r}")
        if self.k < 1 or self.min_shingles < 1:
            raise ValueError("k and min_shingles must be >= 1")
        if self.scheme not in (None, "affine32", "affine64", "legacy"):
            raise ValueError(f"scheme must be None, 'affine32', 'affine64' or 'legacy', got {self.scheme!r}")
        object.__setattr__(self, "weights", tuple(self.weights))
        lsh_params(self.threshold, self.num_perm, self.weights)  # raises what MinHashLSH would raise

    def options(self) -> dict:
        """The options as a JSON-serialisable dict."""
        out = asdict(self)
        out["weights"] = list(self.weights)
        return out


BUILTIN_DETECTOR = "minhash"
"""The default detector: datasketch MinHash + MinHashLSH (`ingestaudit.stages.dedup`)."""
DEFAULT_USE = "default"
"""The ``use`` of a pipeline's ``dedup`` step that leaves the detector to ``[auditor_options.dedup] detector``
(``minhash`` unless set): what a pipeline without a ``dedup`` table takes."""
STEP_KEYS = ("detector", "detector_options", "use_precomputed", "sweep_num_perm", "sweep_thresholds", "workers",
             *DedupConfig.__dataclass_fields__)
"""The options of the dedup step (`ingestaudit.stages.dedup_step.DedupStep`); in ``[auditor_options.dedup]`` they
are every pipeline's defaults."""


def step_options(defaults: Mapping[str, Any], use: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options of one pipeline's dedup step: the step keys (`STEP_KEYS`) of ``[auditor_options.dedup]``
    (``defaults``), overridden key by key by the pipeline's ``dedup`` table (``options``); a ``use`` other than
    `DEFAULT_USE` is the ``detector``.

    >>> step_options({"threshold": 0.8, "k": 3, "missed_merge_budget": 0.2}, "minhash", {"threshold": 0.7})
    {'threshold': 0.7, 'k': 3, 'detector': 'minhash'}
    """
    out = {k: v for k, v in defaults.items() if k in STEP_KEYS}
    out.update(options)
    if use != DEFAULT_USE:
        out["detector"] = use
    return out


def list_option(value: Sequence[Any] | str | None, cast: Callable[[Any], Any]) -> list[Any]:
    """A list option given as a list or as a comma-separated string (``"64,128,256"``), each item cast.

    Raises:
        ValueError: an item that ``cast`` refuses.
    """
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    try:
        return [cast(str(v).strip()) if isinstance(v, str) else cast(v) for v in items if str(v).strip()]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bad list option {value!r}: {exc}") from None


def sweep_grid(config: DedupConfig, sweep_num_perm: Sequence[int] | str | None,
               sweep_thresholds: Sequence[float] | str | None) -> tuple[tuple[int, ...], tuple[float, ...]] | None:
    """The sweep's ``(num_perm values, threshold values)``, each axis defaulting to ``config``'s value; None when
    neither is given.

    Raises:
        ValueError: an empty list, an item that is not a number, or a setting MinHashLSH would refuse.
    """
    if sweep_num_perm is None and sweep_thresholds is None:
        return None
    perms = tuple(dict.fromkeys(list_option(sweep_num_perm, int) or [config.num_perm]))
    ths = tuple(dict.fromkeys(list_option(sweep_thresholds, float) or [config.threshold]))
    if not perms or not ths:
        raise ValueError("sweep_num_perm and sweep_thresholds must not be empty lists")
    for p in perms:
        for t in ths:
            replace(config, num_perm=p, threshold=t)  # raises what MinHashLSH would refuse
    return perms, ths


def detector_settings(detector: str, detector_options: Mapping[str, Any], use_precomputed: bool,
                      config: DedupConfig, sweep: tuple[tuple[int, ...], tuple[float, ...]] | None) -> dict[str, Any]:
    """The settings of a dedup step as the report prints them: the detector, every `DedupConfig` field, the
    MinHashLSH bands ``b`` and rows ``r`` they imply (`ingestaudit.metrics.lsh.lsh_params`), and the sweep with each
    setting's bands and rows."""
    p = lsh_params(config.threshold, config.num_perm, config.weights)
    out: dict[str, Any] = {
        "detector": detector,
        "detector_options": dict(detector_options),
        "use_precomputed": use_precomputed,
        **config.options(),
        "lsh_b": p.b, "lsh_r": p.r, "lsh_hash_values_used": p.hash_values_used,
        "clustering": "connected components of LSH candidate pairs and exact (normalized SHA-256) groups",
    }
    if sweep is not None:
        out["sweep_num_perm"] = list(sweep[0])
        out["sweep_thresholds"] = list(sweep[1])
        out["sweep_lsh"] = [{"num_perm": q, "threshold": t, "b": lsh_params(t, q, config.weights).b,
                             "r": lsh_params(t, q, config.weights).r} for q in sweep[0] for t in sweep[1]]
    return out
