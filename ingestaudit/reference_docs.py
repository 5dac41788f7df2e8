"""The reference pages of the input formats, generated from the schemas so they never drift from the code (issue 15).

``python -m ingestaudit.reference_docs`` rewrites ``docs/truth.md``, ``docs/questions.md``, ``docs/outputs.md`` and
``docs/config.md`` (``--check`` only compares); a test fails when one is stale. Every page is built from the pydantic
models the loaders validate with (field names as written in the files, types with their constraints, defaults, and
the ``Field(description=...)`` of every field, which is required here), and config.md adds the keyword options of
the built-in auditors and parsers from their constructors' signatures and docstrings (Google-style ``Args:``). The
unknown-key messages of the loaders (`ingestaudit.schema_keys`) list the same keys and point to these pages.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from ingestaudit.errors import IngestAuditError
from ingestaudit.schema_keys import PAGES, anchor, models_in

GENERATED = ("Generated from the schemas by `python -m ingestaudit.reference_docs` (do not edit by hand; a test "
             "fails when this page is stale).")


class MissingDescription(IngestAuditError, ValueError):
    """A documented model field has no ``Field(description=...)``; the message names the model and the field."""


# --- types ------------------------------------------------------------------------------------------------------------

_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def _constraints(metadata: list[Any]) -> list[str]:
    """``≥ 0``, ``at least 1 item``... from pydantic / annotated-types constraint objects."""
    out = []
    for m in metadata:
        for attr, fmt in (("ge", "≥ {}"), ("gt", "> {}"), ("le", "≤ {}"), ("lt", "< {}"),
                          ("min_length", "length ≥ {}"), ("max_length", "length ≤ {}")):
            v = getattr(m, attr, None)
            if v is not None and not isinstance(v, bool):
                out.append(fmt.format(v))
        if getattr(m, "allow_inf_nan", None) is False:
            out.append("finite")
    return out


def type_text(tp: Any, metadata: list[Any] | None = None) -> str:
    """A JSON-side description of a type annotation: ``integer ≥ 0``, ``list of [Span](#span)``, ``"serial" or
    "process"``, ``string or null``... (models link to their section on the same page)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:  # StrictInt, ListLabel...: the inner type with every constraint
        inner = [a for a in args[1:] if not isinstance(a, FieldInfo)]
        infos = [m for a in args[1:] if isinstance(a, FieldInfo) for m in a.metadata]
        return type_text(args[0], list(metadata or []) + inner + infos)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        text = f"[{tp.__name__}](#{anchor(tp)}) object"
    elif tp in _SCALARS:
        text = _SCALARS[tp]
    elif tp is Any:
        text = "any JSON value"
    elif origin is typing.Literal:
        text = " or ".join(json.dumps(a) for a in args)
    elif origin in (typing.Union, types.UnionType):
        parts = [type_text(a) for a in args if a is not type(None)]
        if "integer" in parts and "number" in parts:  # a JSON number, integer or not
            parts.remove("integer")
        text = " or ".join(dict.fromkeys(parts)) + (" or null" if type(None) in args else "")
    elif origin is list or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        text = f"list of {_group(type_text(args[0]))}"
    elif origin is tuple:
        text = "[" + ", ".join(type_text(a) for a in args) + "]"
    elif origin is dict:
        text = f"object (string → {type_text(args[1])})"
    else:
        text = getattr(tp, "__name__", str(tp))
    cons = _constraints(list(metadata or []))
    return text + (", " + ", ".join(cons) if cons else "")


def _group(text: str) -> str:
    """A union in parentheses when it is an item type (``list of (string or integer)``)."""
    return f"({text})" if " or " in text and not text.startswith("(") else text


def _default_text(f: FieldInfo) -> str:
    if f.is_required():
        return "required"
    value = f.default_factory() if f.default_factory is not None else f.default  # type: ignore[call-arg]
    if isinstance(value, BaseModel):
        return "its table's defaults"
    try:
        return f"`{json.dumps(value, ensure_ascii=False)}`"
    except TypeError:
        return f"`{value!r}`"


def _md(text: str) -> str:
    """Docstring text as a Markdown table cell: ``rst literals`` as `code`, one line, table pipes escaped, and ``<``,
    ``>``, ``&`` outside code spans written as entities (``<table>`` is text here, never markup)."""
    return _entities(" ".join(text.replace("``", "`").replace(" -> ", " → ").split())).replace("|", "\\|")


def _entities(text: str) -> str:
    """``&``, ``<``, ``>`` outside `code` spans as HTML entities."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # even parts lie outside `code`
        parts[i] = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def _doc(obj: Any) -> str:
    """An object's docstring as Markdown paragraphs (rst literals as code; Args/Raises sections dropped)."""
    text = inspect.cleandoc(obj.__doc__ or "")
    text = re.split(r"\n\s*(Args|Attributes|Raises|Returns):\n", text)[0]
    return "\n\n".join(_entities(" ".join(p.replace("``", "`").split())) for p in text.split("\n\n") if p.strip())


def model_section(model: type[BaseModel], title: str | None = None, level: int = 2) -> list[str]:
    """A model's section: heading (the class name, the anchor `ingestaudit.schema_keys.anchor` links to), its
    docstring, and one table row per key.

    Raises:
        MissingDescription: a field without a description.
    """
    out = [f"{'#' * level} {title or model.__name__}", ""]
    if title:
        out += [f'<a id="{anchor(model)}"></a>', ""]
    doc = _doc(model)
    if doc:
        out += [doc, ""]
    out += ["| key | type | default | description |", "|---|---|---|---|"]
    for name, f in model.model_fields.items():
        if not f.description:
            raise MissingDescription(f"{model.__module__}.{model.__name__}.{name} has no description: add "
                                     f"Field(description=...) (docs/ pages are generated from it)")
        typ = type_text(f.annotation)
        cons = _constraints(f.metadata)
        if cons:
            typ += ", " + ", ".join(cons)
        out.append(f"| `{f.alias or name}` | {_md(typ)} | {_default_text(f)} | {_md(f.description)} |")
    return out + [""]


def models_below(root: type[BaseModel]) -> list[type[BaseModel]]:
    """``root`` and every model reachable from its fields, breadth first, each once."""
    order = [root]
    for m in order:
        for f in m.model_fields.values():
            order += [x for x in models_in(f.annotation) if x not in order]
    return order


def schema_sections(root: type[BaseModel], root_title: str) -> list[str]:
    """The sections of ``root`` (titled ``root_title``) and of every model below it."""
    out: list[str] = []
    for m in models_below(root):
        out += model_section(m, root_title if m is root else None)
    return out


# --- keyword options of plug-ins (config.md) ------------------------------------------------------------------------

def _args_section(doc: str) -> dict[str, str]:
    """``name -> description`` from a Google-style ``Args:`` section (``a, b: text`` documents both names)."""
    lines = inspect.cleandoc(doc or "").splitlines()
    out: dict[str, str] = {}
    try:
        start = next(i for i, ln in enumerate(lines) if ln.strip() == "Args:")
    except StopIteration:
        return out
    base = len(lines[start]) - len(lines[start].lstrip())
    current: list[str] = []
    desc: list[str] = []

    def flush() -> None:
        for n in current:
            out[n] = " ".join(" ".join(desc).split())

    entry = None
    for ln in lines[start + 1:]:
        if not ln.strip():
            continue
        indent = len(ln) - len(ln.lstrip())
        if indent <= base:
            break
        m = re.match(r"\s*(\*{0,2}[\w]+(?:, \*{0,2}[\w]+)*):\s*(.*)$", ln)
        if m and (entry is None or indent <= entry):
            flush()
            entry = indent
            current = [n.lstrip("*") for n in m.group(1).split(", ")]
            desc = [m.group(2)]
        else:
            desc.append(ln.strip())
    flush()
    return out


def option_rows(cls: type) -> list[tuple[str, str, str]]:
    """``(option, default, description)`` of a plug-in class's keyword options: its ``__init__`` parameters, and for
    a ``**options`` parameter the fields of the dataclasses in the class's ``option_dataclasses`` attribute."""
    from ingestaudit.schema_keys import option_names  # the same names the error messages list

    docs = {**_args_section(cls.__doc__ or ""), **_args_section(cls.__init__.__doc__ or "")}
    rows = []
    params = inspect.signature(cls.__init__).parameters
    for name in option_names(cls):
        if name not in params:
            continue  # a dataclass field, below
        p = params[name]
        default = "required" if p.default is p.empty else f"`{_json(p.default)}`"
        rows.append((name, default, docs.get(name, "")))
    for dc in getattr(cls, "option_dataclasses", ()):
        dc_docs = _attributes_section(dc.__doc__ or "")
        for f in fields(dc):
            default = f.default if f.default is not MISSING else (
                f.default_factory() if f.default_factory is not MISSING else None)  # type: ignore[misc]
            rows.append((f.name, f"`{_json(default)}`", dc_docs.get(f.name, "")))
    return rows


def _attributes_section(doc: str) -> dict[str, str]:
    return _args_section(re.sub(r"(?m)^(\s*)Attributes:\s*$", r"\1Args:", doc))


def _json(value: Any) -> str:
    if isinstance(value, tuple):
        value = list(value)
    try:
        return json.dumps(value, ensure_ascii=False)
    except TypeError:
        return repr(value)


def _options_table(cls: type) -> list[str]:
    rows = option_rows(cls)
    if not rows:
        return ["no options", ""]
    out = ["| option | default | description |", "|---|---|---|"]
    out += [f"| `{n}` | {_md(d)} | {_md(t)} |" for n, d, t in rows]
    return out + [""]


def _builtin_parsers() -> Iterator[tuple[str, type]]:
    from ingestaudit.parsers.registry import GROUP
    from ingestaudit.plugins import entry_points_of

    for name, ep in sorted(entry_points_of(GROUP).items()):
        if ep.value.startswith("ingestaudit."):  # this package's parsers only: the page must not depend on plug-ins
            yield name, ep.load()


# --- the pages ------------------------------------------------------------------------------------------------------

def _header(title: str, lead: str) -> list[str]:
    return [f"# {title}", "", GENERATED, "", lead, ""]


def truth_page() -> str:
    from ingestaudit.truth import TruthFile

    out = _header("Truth files", (
        "A document's labels live under `truth/` with the document's path: `docs/<class>/<name>.<ext>` has "
        "`truth/<class>/<name>.txt` (the reference text: all visible text in reading order, UTF-8, read exactly as "
        "written; a leading byte-order mark is dropped) and `truth/<class>/<name>.json` (every other label, below). "
        "Both are optional. A reference text may instead come from the JSON `text` key or from a PAGE XML / ALTO "
        "ground-truth file, and tables from `truth/<class>/<name>.tables.html`. Offsets are Unicode code points of "
        "the text a span refers to, end exclusive. An unknown key is a problem of its file that names the valid "
        "keys; `ingestaudit validate` lists every problem with its file and field."))
    out += schema_sections(TruthFile, "Keys of truth JSON (TruthFile)")
    return "\n".join(out).rstrip() + "\n"


def questions_page() -> str:
    from ingestaudit.questions import Question

    out = _header("Labelled questions", (
        "`questions.jsonl` at the corpus root: one JSON object per line (lines end at \"\\n\" only: a U+2028 or "
        "U+0085 inside a string is text; blank lines are skipped), for the chunking, index and retrieval stages. "
        "Every problem names the line and the field; a bad line never hides the valid ones. An evidence item is a "
        "span of a document's reference text (`start` and `end`), a `section` (a heading's text), a `page`, or the "
        "whole document (only `doc`). An item given twice in one question is a problem and counts once."))
    out += schema_sections(Question, "Keys of a question line (Question)")
    return "\n".join(out).rstrip() + "\n"


def outputs_page() -> str:
    from ingestaudit.output_schemas import VECTOR_FILES, AnnResultsLine, RetrievalLine
    from ingestaudit.parsers.precomputed import OUTPUT_SUFFIXES, PAGE_SEPARATOR, OutputFile

    out = _header("Precomputed outputs", (
        "`ingestaudit run CORPUS --outputs DIR` audits what your own pipeline wrote: one pipeline per subfolder "
        "`DIR/<pipeline>/`, named after it in the report. An auditor audits the stage output it finds instead of "
        "running the default implementation."))
    out += ["## Per document: DIR/&lt;pipeline&gt;/&lt;doc id&gt;.&lt;ext&gt;", "",
            "`<doc id>` is `<class>/<name>` as under `docs/`. Endings, by precedence (when several exist the first "
            "is read and the others are named in the warnings): " + ", ".join(f"`{s}`" for s in OUTPUT_SUFFIXES)
            + ". `.txt` and `.md` are the text as is, the XML endings PAGE XML / ALTO page text, and `.json` the "
            f"object below (`text` defaults to the `pages` joined by {json.dumps(PAGE_SEPARATOR)}).", ""]
    out += schema_sections(OutputFile, "Keys of an output JSON (OutputFile)")
    out += ["## Retrieval results: DIR/&lt;pipeline&gt;/retrieval.jsonl", "",
            "Your retriever's results, one JSON object per line; they replace the run's search for that pipeline.",
            ""]
    out += [ln.replace("## ", "### ", 1) if ln.startswith("## ") else ln
            for ln in schema_sections(RetrievalLine, "Keys of a retrieval.jsonl line (RetrievalLine)")]
    out += ["## Embeddings: DIR/&lt;pipeline&gt;/vectors.npy + vector_ids.json", "", _doc_of_vector_files(), "",
            "| file | content |", "|---|---|"]
    out += [f"| `{name}` | {_md(text)} |" for name, text in VECTOR_FILES] + [""]
    out += ["## Vector-store answers: DIR/&lt;pipeline&gt;/ann_results.jsonl", "",
            "With `vectors.npy`: your vector store's answers, one JSON object per line; the `index` audit computes "
            "the exact neighbours itself and audits these answers against them.", ""]
    out += [ln.replace("## ", "### ", 1) if ln.startswith("## ") else ln
            for ln in schema_sections(AnnResultsLine, "Keys of an ann_results.jsonl line (AnnResultsLine)")]
    return "\n".join(out).rstrip() + "\n"


def _doc_of_vector_files() -> str:
    import ingestaudit.output_schemas as mod

    src = inspect.getsource(mod)
    m = re.search(r'VECTOR_FILES = \(.*?\)\n"""(.*?)"""', src, re.S)
    return " ".join((m.group(1) if m else "").replace("``", "`").split())


def config_page() -> str:
    from ingestaudit.auditors.registry import auditor_class, stage_names
    from ingestaudit.config import CONFIG_NAME, Config
    from ingestaudit.pipeline import DETECTION_STEPS, STAGES

    out = _header("Configuration", (
        f"`{CONFIG_NAME}` at the corpus root, or a file given with `--config FILE` (command-line flags override "
        "both). Every key is optional. A corpus's own file is untrusted input: it may name registered plug-ins "
        "only, never a `module:attr` path, a cache folder or a scheduler (`ingestaudit validate` reports them); a "
        "`--config` file you pass may."))
    out += schema_sections(Config, "Tables and keys (Config)")
    out += ["## [pipelines.&lt;name&gt;]", "",
            "A named pipeline, one column of the report. Keys are stages: " + ", ".join(f"`{s}`" for s in STAGES)
            + "; each an implementation name (`chunker = \"recursive\"`) or a table with `use` and that "
            "implementation's options (`chunker = { use = \"recursive\", size = 500, overlap = 50 }`). A stage left "
            "out takes its default; `ingestaudit stages` lists the implementations. `--sweep STAGE.use=A,B` swaps "
            "a stage's implementation (one pipeline per value, the stage's other options kept): `--sweep "
            "cleaner.use=none,trafilatura,repeated-lines` compares cleaners, since the `boilerplate` stage audits "
            "each pipeline's own cleaner (the former `[auditor_options.boilerplate]` `cleaners` and "
            "`cleaner_options` are an error).", "",
            "`parser` may also be a routing table keyed by file extension, with an optional `default`: `parser = { "
            "pdf = \"pymupdf\", html = \"unstructured\", png = \"tesseract\", default = \"unstructured\" }`. Each "
            "document is read by the parser of its extension, else by `default`. Keys are literal extensions, "
            "case-insensitive, with or without the dot (`PDF`, `.pdf` and `pdf` are one key, given once); `htm` and "
            "`html`, `jpg` and `jpeg`, `tif` and `tiff` are different keys, each listed. A route's options come from "
            "`[parser_options.<parser>]`. A document no route reads (no route for its extension and no default, or a "
            "parser that does not read that file type) is an `error` of that pipeline. The `parser` column of "
            "`measurements.parquet` names the parser each document went to; `ingestaudit stages` lists the "
            "extensions each parser reads. An unknown parser, an empty table, a value that is not a name or an "
            "extension given twice is an error (exit 2) before any document is read.", "",
            "Detection steps: " + ", ".join(f"`{s}`" for s in DETECTION_STEPS) + " (`language = { use = \"lingua\", "
            "min_relative_distance = 0.25 }`, `pii = { use = \"presidio\", score_threshold = 0.5 }`) run when their stage is audited. Their options: the step's defaults, "
            "then the options of `[auditor_options.<stage>]` that configure the detector (marked *step default* "
            "below: they apply to every pipeline), then the pipeline's own table and `--sweep <step>.<option>=...`, "
            "option by option (`use` replaces the auditor's `detector` or `scrubber`). The metric's options stay auditor options. "
            "`report.json`'s `pipelines[].stages` lists each step's implementation, version and settings.", "",
            "`dedup = { use = \"minhash\", threshold = 0.8, num_perm = 128 }` is the near-duplicate step the "
            "`dedup` stage audits (`use`: `minhash`, a registered detector or `module:Class`): per document in the "
            "workers (MinHash signatures), then once per pipeline (LSH clustering, and the `sweep_*` grid when "
            "asked); its options are the *step default* keys of `[auditor_options.dedup]` below, so a "
            "configuration written before the step existed audits the same detector, and two pipelines with two "
            "thresholds (or `--sweep dedup.threshold=0.7,0.9`) are two report columns of one run.", ""]
    out += ["## [parser_options.&lt;parser&gt;]", "",
            "Keyword options of a parser, by parser name. The built-in parsers (`ingestaudit parsers` lists every "
            "installed one):", ""]
    for name, cls in _builtin_parsers():
        out += [f"### parser_options.{name}", ""] + _options_table(cls)
    out += ["## [auditor_options.&lt;stage&gt;]", "",
            "Keyword options of a stage's auditor (every option that changes a number is printed in the report "
            "next to it):", ""]
    for stage in stage_names():
        out += [f"### auditor_options.{stage}", ""] + _options_table(auditor_class(stage))
    return "\n".join(out).rstrip() + "\n"


PAGE_BUILDERS: dict[str, Callable[[], str]] = {"truth": truth_page, "questions": questions_page,
                                               "outputs": outputs_page, "config": config_page}
"""Reference page name (a key of `ingestaudit.schema_keys.PAGES`) -> its generator."""


def write_pages(root: Path, *, check: bool = False) -> list[str]:
    """Write (or with ``check``, only compare) every page under ``root`` (the repository root).

    Returns:
        The pages that were (``check``: would be) changed, as paths relative to ``root``.
    """
    changed = []
    for name, build in PAGE_BUILDERS.items():
        path = root / PAGES[name]
        text = build()
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            changed.append(PAGES[name])
            if not check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    """``python -m ingestaudit.reference_docs [--check] [ROOT]`` (ROOT: the repository, default the one holding this
    package). Exit 1 with ``--check`` when a page is stale; exit 2 on an unknown option (argparse's usage error)."""
    parser = argparse.ArgumentParser(prog="python -m ingestaudit.reference_docs",
                                     description="Write (or with --check, compare) the generated reference pages.")
    parser.add_argument("--check", action="store_true", help="exit 1 when a page is stale; write nothing")
    parser.add_argument("root", nargs="?", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the repository (default: the one holding this package)")
    args = parser.parse_args(argv)
    changed = write_pages(args.root, check=args.check)
    for p in changed:
        print(("stale: " if args.check else "wrote ") + p)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
