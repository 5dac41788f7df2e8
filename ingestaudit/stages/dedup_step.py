"""The dedup step: near-duplicate detection as a step a pipeline may contain (``[pipelines.x] dedup = { use =
"minhash", threshold = 0.8, ... }``), so that a bake-off compares two detectors or two thresholds like two chunkers.

Per document (in the run's worker, once per pipeline and document) `DedupStep.document` computes the `DedupDoc`: the
precomputed ``dup_cluster`` of the output, the built-in detector's sketch (`ingestaudit.stages.dedup.sketch`: one
MinHash signature per ``num_perm`` of the step and its sweep) and the sorted hashes of the shingle set, or the text
for a user detector. `DedupStep.stow` moves the large parts to disk as they reach the main process. Once per
pipeline `DedupStep.run` clusters the corpus (which detector, first that applies: the precomputed clusters when some
output carries one and ``use_precomputed`` is on; a user `DedupDetector` registered under `DETECTOR_GROUP`; the
built-in MinHash LSH detector) and, when a sweep is asked, every setting of the grid; the `DedupOutput` is what the
dedup auditor reads.

Options: `ingestaudit.dedup_settings.STEP_KEYS`; ``[auditor_options.dedup]`` gives every pipeline's defaults
(`ingestaudit.dedup_settings.step_options`).
"""

from __future__ import annotations

import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ingestaudit.errors import IngestAuditError
from ingestaudit.dedup_settings import BUILTIN_DETECTOR, DedupConfig, detector_settings, step_options, sweep_grid
from ingestaudit.metrics.jaccard import sorted_jaccard
from ingestaudit.metrics.lsh import lsh_params
from ingestaudit.model import ParsedDocument
from ingestaudit.plugins import PluginUnavailable, UnknownPlugin, instantiate, plugin_class, plugin_names
from ingestaudit.stages.dedup import DedupResult, DocSketch, SketchTable, deduplicate_sketches, sketch

DETECTOR_GROUP = "ingestaudit.dedup_detectors"
"""Entry-point group of user near-duplicate detectors (name -> ``module:Class`` of a `DedupDetector`)."""
MAX_LISTED = 200
"""At most this many documents without a ``dup_cluster`` are listed in the precomputed detector's details."""
CURVE_POINTS = tuple(i / 10 for i in range(1, 11))
"""Jaccard values at which the theoretical candidate probability is printed in the ``lsh`` detail."""


class DetectorError(IngestAuditError):
    """Base error of near-duplicate detectors: a detector raises it (or a subclass) when it cannot cluster a corpus.
    The step reports it (and any other exception from a user detector) as its output's ``error``; the auditor
    turns that into ``error`` rows with the message."""


@dataclass(frozen=True)
class DetectorOutput:
    """What a detector returns for one corpus.

    Attributes:
        cluster_of: ``doc key -> cluster id`` (any hashable; compared as given). A key that is absent or maps to None
            is in no cluster (unique). Keys that were not in the input are an error.
        excluded: ``doc key -> reason`` for documents the detector deliberately kept out (empty, too short), or
            None when the detector does not report exclusions (``dedup.excluded`` rows are then ``no_prediction``).
        details: JSON-serialisable facts to print in the report (the detector's own parameters...).
    """

    cluster_of: Mapping[str, Hashable | None]
    excluded: Mapping[str, str] | None = None
    details: dict[str, Any] = field(default_factory=dict)


class DedupDetector(ABC):
    """A near-duplicate detector under audit, plugged in through the entry-point group ``ingestaudit.dedup_detectors``.

    The dedup step builds it with the keyword arguments of its ``detector_options`` and calls `detect` once per
    pipeline with the whole corpus.
    """

    name: ClassVar[str] = ""

    def options(self) -> dict[str, Any]:
        """Every option that changes this detector's output, JSON-serialisable (printed in the report)."""
        return {}

    @abstractmethod
    def detect(self, docs: Sequence[tuple[str, str]]) -> DetectorOutput | Mapping[str, Hashable | None]:
        """Cluster ``docs`` (``(key, text)`` pairs, unique keys, corpus order).

        Returns:
            a `DetectorOutput`, or a plain ``key -> cluster id`` mapping (no exclusions reported).

        Raises:
            DetectorError: the corpus cannot be clustered (message kept in the report).
        """


class UnknownDetector(UnknownPlugin, ValueError):
    """`load_detector`: no detector is registered under that name (the message lists the known ones),
    ``"module:Class"`` does not load, or the class is not a `DedupDetector`. A ``ValueError`` (not a `DetectorError`,
    which a detector raises while clustering)."""


class DetectorUnavailable(PluginUnavailable, ValueError):
    """`load_detector`: an entry-point detector's module does not import (the message names the cause). A
    ``ValueError``."""


def detector_names() -> list[str]:
    """``"minhash"`` and every name registered under `DETECTOR_GROUP`, sorted after it."""
    return [BUILTIN_DETECTOR] + plugin_names(DETECTOR_GROUP)


def load_detector(name: str, options: Mapping[str, Any] | None = None) -> DedupDetector:
    """Instantiate the user detector ``name`` (an entry-point name of `DETECTOR_GROUP`, or ``"module:Class"``).

    Raises:
        ValueError: unknown name (the message lists the registered detectors), an import failure, a class that is
            not a `DedupDetector` (`UnknownDetector`, `DetectorUnavailable`), or options it does not take.
    """
    cls = plugin_class(DETECTOR_GROUP, name, what="dedup detector", base=DedupDetector, known=detector_names,
                       unknown=UnknownDetector, unavailable=DetectorUnavailable, unimportable=UnknownDetector)
    return instantiate(cls, options, f"dedup detector {name!r}", section="detector_options")


@dataclass(frozen=True, slots=True)
class DedupDoc:
    """The dedup step's output for one document x pipeline (`DedupStep.document`, computed in the run's worker).

    Attributes:
        has_cluster: the output carries a ``dup_cluster`` key (a precomputed output); cluster: its value as a string,
            None when absent or null.
        sketch: the built-in detector's input (`ingestaudit.stages.dedup.DocSketch`: sizes, digest, signatures);
            None with a user detector and no sweep.
        text: the parsed text, for a user detector only (it needs the texts: memory is then not flat in corpus size).
        shingles: the sorted 64-bit hashes of the document's shingle set (exact Jaccard of chained pairs and of the
            S-curve), until `DedupStep.stow` moves them to disk; shingle_ref: ``(file, first, count)`` there.
        sketch_row: the row of ``sketch`` in the step's `ingestaudit.stages.dedup.SketchTable` of its pipeline once
            `DedupStep.stow` has moved it there (``sketch`` is then None).
    """

    has_cluster: bool = False
    cluster: str | None = None
    sketch: DocSketch | None = None
    text: str | None = None
    shingles: np.ndarray | None = None
    shingle_ref: tuple[str, int, int] | None = None
    sketch_row: tuple[str, int] | None = None


@dataclass
class DedupOutput:
    """The dedup step's output over one pipeline's documents (those with parser output), read by the auditor.

    Attributes:
        kind: the detector that clustered: ``"minhash"``, ``"precomputed"`` or ``"detector:<name>"``.
        detector: the step's configured detector name.
        config: the step's `DedupConfig` (the threshold, shingling and seed the auditor's exact Jaccard and sampling
            use for every detector).
        cluster_of: ``doc key -> cluster id`` for every key given (None: in no cluster).
        excluded: ``key -> {"reason", ...}`` of documents kept out of clustering; None when the detector does not
            report exclusions.
        details: the detector's facts for the report (``lsh``: bands and rows; candidate pair counts...).
        result: the built-in detector's `ingestaudit.stages.dedup.DedupResult` (candidate pairs, bands), else None.
        sweep: the grid ``(num_perm values, threshold values)`` when a sweep was asked, else None.
        grid: ``(num_perm, threshold) -> DedupResult`` of every sweep setting (None without a sweep or on error).
        grid_error: why the grid could not be computed (``""`` when it was).
        error: why the corpus could not be clustered (``""`` when it was; the other fields are then empty).
        shingles: the documents' shingle hashes (`ShingleStore`); `close` releases its files.
    """

    kind: str
    detector: str
    config: DedupConfig
    shingles: ShingleStore
    cluster_of: dict[str, Hashable | None] = field(default_factory=dict)
    excluded: dict[str, dict[str, Any]] | None = None
    details: dict[str, Any] = field(default_factory=dict)
    result: DedupResult | None = None
    sweep: tuple[tuple[int, ...], tuple[float, ...]] | None = None
    grid: dict[tuple[int, float], DedupResult] | None = None
    grid_error: str = ""
    error: str = ""

    def jaccard(self, a: str, b: str) -> float | None:
        """Exact Jaccard of the shingle sets of documents ``a`` and ``b`` (None when both are empty)."""
        return self.shingles.jaccard(a, b)

    def close(self) -> None:
        """Release the shingle files (the output is read no more)."""
        self.shingles.close()


class DedupStep:
    """The near-duplicate detection step of a pipeline (see the module docstring).

    Args:
        detector: ``"minhash"`` (default: `ingestaudit.stages.dedup`), an entry-point name of `DETECTOR_GROUP`, or
            ``"module:Class"`` of a `DedupDetector`.
        detector_options: keyword arguments of a user detector.
        use_precomputed: cluster by the ``dup_cluster`` ids found in precomputed outputs instead of running a
            detector.
        sweep_num_perm, sweep_thresholds: the sweep grid, as lists or comma-separated strings (``"0.5,0.8"``);
            either alone sweeps that axis at the other's configured value. Each setting builds its own MinHashLSH
            index over signatures computed once per ``num_perm`` (`ingestaudit.stages.dedup.deduplicate_sketches`).
        workers: kept so that configurations stay valid; shingling and hashing run in the run's workers (one
            document per task), so it has no effect.
        **dedup_options: `DedupConfig` fields (shingling, k, normalization, num_perm, threshold, weights, seed,
            scheme, verify, min_shingles, short_docs).

    Raises:
        TypeError: an unknown option.
        ValueError: a bad value (an unknown detector, a threshold datasketch refuses in the grid...).
    """

    name = "dedup"
    option_dataclasses = (DedupConfig,)  # the names and types behind **dedup_options (`ingestaudit.plugin_options`)

    def __init__(self, *, detector: str = BUILTIN_DETECTOR, detector_options: dict[str, Any] | None = None,
                 use_precomputed: bool = True, sweep_num_perm: Sequence[int] | str | None = None,
                 sweep_thresholds: Sequence[float] | str | None = None, workers: int = 1, **dedup_options: Any):
        self.config = DedupConfig(**dedup_options)
        self.detector = detector
        self.detector_options = dict(detector_options or {})
        if detector != BUILTIN_DETECTOR:
            load_detector(detector, self.detector_options)  # fail early, in the main process
        self.use_precomputed = bool(use_precomputed)
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.workers = int(workers)
        self.sweep = sweep_grid(self.config, sweep_num_perm, sweep_thresholds)
        self._stowed: dict[str, Any] = {}  # stow files open for appending (main process), closed before reading
        self._tables: dict[str, Any] = {}  # folder -> SketchTable of the stowed sketches (main process)

    @classmethod
    def of(cls, use: str, options: Mapping[str, Any], defaults: Mapping[str, Any]) -> "DedupStep":
        """The step of a pipeline's ``dedup`` choice (``use`` and its options) over the ``[auditor_options.dedup]``
        defaults (`ingestaudit.dedup_settings.step_options`).

        Raises:
            ValueError: an option the step does not take (named), or a bad value.
        """
        from ingestaudit.plugin_options import option_problems, valid_options

        merged = step_options(defaults, use, options)
        problems = option_problems(cls, merged)  # names and annotated types, before anything is built
        try:
            if problems:
                raise TypeError("; ".join(problems))
            return cls(**merged)
        except TypeError as exc:
            raise ValueError(f"dedup step: {exc}; valid options: {valid_options(cls)}") from None

    # -- report configuration ---------------------------------------------------------------------------------------

    def lsh(self, num_perm: int, threshold: float) -> dict[str, Any]:
        """The MinHashLSH bands ``b``, rows ``r`` and error areas of one setting, with candidate probabilities at
        `CURVE_POINTS` (`ingestaudit.metrics.lsh.lsh_params`)."""
        p = lsh_params(threshold, num_perm, self.config.weights)
        return {"num_perm": num_perm, "threshold": threshold, "b": p.b, "r": p.r,
                "hash_values_used": p.hash_values_used, "weights": list(p.weights),
                "false_positive_area": p.false_positive_area, "false_negative_area": p.false_negative_area,
                "candidate_probability": [{"jaccard": j, "probability": p.candidate_probability(j)}
                                          for j in CURVE_POINTS]}

    def settings(self) -> dict[str, Any]:
        """The detector, every `DedupConfig` field, the LSH bands ``b`` and rows ``r`` they imply and the sweep
        (the report's ``pipelines[].stages.dedup.settings``)."""
        return detector_settings(self.detector, self.detector_options, self.use_precomputed, self.config,
                                 self.sweep)

    def version(self) -> str:
        """The installed datasketch's version (the built-in detector follows its banding), or ``"unavailable"``."""
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("datasketch")
        except PackageNotFoundError:
            return "unavailable"

    # -- per document (in the worker) ------------------------------------------------------------------------------

    def _num_perms(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys((self.config.num_perm, *(self.sweep[0] if self.sweep else ()))))

    def document(self, parsed: ParsedDocument) -> DedupDoc:
        """The document's `DedupDoc`: precomputed cluster, the built-in detector's sketch (one signature per
        ``num_perm`` of the step and its sweep) or the text for a user detector, and its shingle hashes."""
        text = parsed.text or ""
        sk, hashes = sketch(text, self.config, self._num_perms())
        cid = parsed.extras.get("dup_cluster")
        return DedupDoc("dup_cluster" in parsed.extras, None if cid is None else str(cid),
                        sk if self.detector == BUILTIN_DETECTOR or self.sweep is not None else None,
                        text if self.detector != BUILTIN_DETECTOR else None, hashes)

    def stow(self, doc: DedupDoc, folder: Any) -> DedupDoc:
        """Move the shingle hashes of a `DedupDoc` that reached the main process to ``folder/shingles.u64`` (one file
        per pipeline) and its sketch into the pipeline's `SketchTable`, so only the signatures stay in memory, in
        one block (a few dozen bytes per document besides them)."""
        if doc.shingles is None and doc.sketch is None:
            return doc
        key = sys.intern(str(folder))
        row = None
        if doc.sketch is not None:
            table = self._tables.get(key)
            if table is None:
                table = self._tables[key] = SketchTable(self._num_perms(), self.config)
            row = (key, table.add(doc.sketch))
        if doc.shingles is None:
            return replace(doc, sketch=None, sketch_row=row)
        name = sys.intern(str(Path(folder) / "shingles.u64"))  # one string object shared by the documents
        fh = self._stowed.get(name)
        if fh is None:
            Path(folder).mkdir(parents=True, exist_ok=True)
            fh = self._stowed[name] = open(name, "ab", buffering=1 << 16)
        first = fh.tell() // 8
        fh.write(np.ascontiguousarray(doc.shingles, dtype=np.uint64).tobytes())
        return replace(doc, shingles=None, shingle_ref=(name, first, len(doc.shingles)),
                       sketch=None if row is not None else doc.sketch, sketch_row=row)

    def _sketches(self, docs: Sequence[DedupDoc]) -> Any:
        """The documents' sketches for `deduplicate_sketches`: columns of the stowed table when every document is in
        one, else the sketches themselves (None when some document carries none: a user detector's)."""
        refs = [d.sketch_row for d in docs]
        if docs and all(r is not None for r in refs) and len({r[0] for r in refs}) == 1:
            return self._tables[refs[0][0]].columns([r[1] for r in refs])
        out: list[DocSketch] = []
        for d, ref in zip(docs, refs):
            if d.sketch is not None:
                out.append(d.sketch)
            elif ref is not None:
                cols = self._tables[ref[0]].columns([ref[1]])
                out.append(DocSketch(cols.n_chars[0], cols.n_shingles[0], cols.blank[0], cols.digests[0],
                                     {p: m[0] for p, m in cols.signatures.items()}
                                     if cols.n_shingles[0] >= self.config.min_shingles and not cols.blank[0] else {}))
            else:
                return None
        return out

    # -- once per pipeline (main process) ---------------------------------------------------------------------------

    def run(self, docs: Sequence[tuple[str, DedupDoc]]) -> DedupOutput:
        """Cluster one pipeline's documents (``(key, DedupDoc)`` pairs of the documents with parser output, corpus
        order) and, with a sweep, every setting of the grid. Never raises for a detector's failure: it is the
        output's ``error`` (``grid_error`` for the grid)."""
        for fh in self._stowed.values():  # every document has arrived: what was stowed is read from here on
            fh.close()
        self._stowed.clear()
        keys = [k for k, _ in docs]
        arts = [d for _, d in docs]
        out = DedupOutput(self.detector if self.detector == BUILTIN_DETECTOR else f"detector:{self.detector}",
                          self.detector, self.config, ShingleStore(dict(docs)), sweep=self.sweep)
        try:
            try:
                self._predict(keys, arts, out)
            except Exception as exc:  # a detector's failure is the output's error, never a crash
                out.error = f"{type(exc).__name__}: {exc}"
                return out
            if self.sweep is not None and keys:
                try:
                    sketches = self._sketches(arts)
                    if sketches is None:  # a user detector's documents carry no signatures
                        raise ValueError(f"the sweep runs the built-in minhash detector; detector "
                                         f"{self.detector!r} was audited")
                    out.grid = deduplicate_sketches(keys, sketches, self.config, *self.sweep,
                                                    jaccard=lambda i, j: out.jaccard(keys[i], keys[j]))
                except Exception as exc:
                    out.grid_error = f"{type(exc).__name__}: {exc}"
            return out
        finally:
            for ref in {d.sketch_row[0] for d in arts if d.sketch_row is not None}:
                self._tables.pop(ref, None)  # a pipeline is clustered once: its table is done with

    def _predict(self, keys: list[str], arts: list[DedupDoc], out: DedupOutput) -> None:
        if self.use_precomputed and any(a.has_cluster for a in arts):
            cluster_of: dict[str, Hashable | None] = dict.fromkeys(keys)
            missing = []
            for k, a in zip(keys, arts):
                if a.cluster is None:
                    missing.append(k)
                else:
                    cluster_of[k] = a.cluster
            out.kind, out.cluster_of, out.excluded = "precomputed", cluster_of, None
            out.details = {"source": "ParsedDocument.extras['dup_cluster'] of the precomputed outputs (ids compared "
                                     "as strings)",
                           "without_dup_cluster": missing[:MAX_LISTED], "without_dup_cluster_total": len(missing)}
            return
        if self.detector == BUILTIN_DETECTOR:
            result = next(iter(deduplicate_sketches(keys, self._sketches(arts), self.config,
                                                    jaccard=lambda i, j: out.jaccard(keys[i], keys[j])).values()))
            out.cluster_of = dict.fromkeys(keys)
            out.cluster_of.update(result.cluster_of)
            out.excluded = {e.key: {"reason": e.reason, "n_chars": e.n_chars, "n_shingles": e.n_shingles}
                            for e in result.excluded}
            lsh = {**self.lsh(self.config.num_perm, self.config.threshold), "b": result.b, "r": result.r,
                   "scheme": result.scheme, "datasketch_version": result.datasketch_version}
            out.details = {"lsh": lsh, "candidate_pairs": len(result.candidates),
                           "accepted_candidate_pairs": sum(c.accepted for c in result.candidates),
                           "exact_groups": len(result.exact_groups)}
            out.result = result
            return
        det = load_detector(self.detector, self.detector_options)
        known = set(keys)
        got = det.detect([(k, a.text or "") for k, a in zip(keys, arts)])
        if not isinstance(got, DetectorOutput):
            got = DetectorOutput(dict(got))
        unknown = [k for k in got.cluster_of if k not in known]
        if unknown:
            raise DetectorError(f"detector {self.detector!r} returned clusters for {len(unknown)} key(s) that were "
                                f"not in its input, e.g. {unknown[:3]!r}")
        out.cluster_of = dict.fromkeys(keys)
        out.cluster_of.update(got.cluster_of)
        out.excluded = None if got.excluded is None else {k: {"reason": str(v)} for k, v in got.excluded.items()}
        out.details = {"detector_options": det.options(), **got.details}


class ShingleStore:
    """The shingle hashes of a pipeline's documents, read from the step's `DedupDoc` s (memory or disk), a few
    thousand cached; calling it with a key gives that document's sorted uint64 hashes, `jaccard` the exact Jaccard
    of two documents' shingle sets."""

    def __init__(self, docs: Mapping[str, DedupDoc]) -> None:
        self.arts = dict(docs)
        self._fds: dict[str, int] = {}
        self._cache: dict[str, np.ndarray] = {}

    def __call__(self, key: str) -> np.ndarray:
        got = self._cache.get(key)
        if got is not None:
            return got
        art = self.arts[key]
        if art.shingles is not None:
            got = art.shingles
        elif art.shingle_ref is not None:
            path, first, count = art.shingle_ref
            fd = self._fds.get(path)
            if fd is None:
                fd = self._fds[path] = os.open(path, os.O_RDONLY)
            got = np.frombuffer(os.pread(fd, count * 8, first * 8), dtype=np.uint64)
        else:
            got = np.zeros(0, dtype=np.uint64)
        if len(self._cache) >= 4096:
            self._cache.clear()
        self._cache[key] = got
        return got

    def jaccard(self, a: str, b: str) -> float | None:
        """Exact Jaccard of two documents' shingle sets (None when both are empty)."""
        return sorted_jaccard(self(a), self(b))

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
