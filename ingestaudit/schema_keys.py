"""Unknown keys in an input file (truth JSON, a questions line, a precomputed output, the configuration): the message
names the key, the keys valid at that place and the reference page that documents them (issue 15).

The reference pages (``docs/truth.md``, ``docs/questions.md``, ``docs/outputs.md``, ``docs/config.md``) are generated
from the same pydantic models by `ingestaudit.reference_docs`, so the keys a message lists and the keys a page
documents are one list. This module imports only pydantic: every loader may use it.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel

PAGES = {"truth": "docs/truth.md", "questions": "docs/questions.md", "outputs": "docs/outputs.md",
         "config": "docs/config.md"}
"""Reference page of each input kind, relative to the repository root (generated: `ingestaudit.reference_docs`)."""


def keys_of(model: type[BaseModel]) -> list[str]:
    """The keys a model accepts, as written in the files (aliases: ``class``, ``with``), in declaration order."""
    return [f.alias or name for name, f in model.model_fields.items()]


def models_in(annotation: Any) -> list[type[BaseModel]]:
    """Every pydantic model reachable inside a type annotation (through ``list``, ``dict`` values, unions, ``Optional``,
    ``Annotated``, tuples), in order of appearance, without repeats."""
    out: list[type[BaseModel]] = []
    stack = [annotation]
    while stack:
        tp = stack.pop(0)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp not in out:
                out.append(tp)
            continue
        args = typing.get_args(tp)
        if typing.get_origin(tp) is dict and len(args) == 2:
            args = (args[1],)
        stack.extend(a for a in args if not isinstance(a, (str, int, float, bool)) and a is not type(None))
    return out


def _tags(model: type[BaseModel]) -> set[str]:
    """The literal values of a model's fields (the tags pydantic puts into the location of a discriminated union)."""
    tags = {model.__name__}
    for f in model.model_fields.values():
        if typing.get_origin(f.annotation) is typing.Literal:
            tags.update(str(a) for a in typing.get_args(f.annotation))
    return tags


def models_at(root: type[BaseModel], loc: Sequence[Any]) -> list[type[BaseModel]]:
    """The model(s) whose object holds the last key of a pydantic error location ``loc`` (list indexes and union tags
    are stepped over); ``[root]`` for a top-level key. Several models when the place is a union (e.g. a check is a
    ``present``/``absent`` or an ``order`` check) and the location does not tell them apart."""
    current = [root]
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        nxt: list[type[BaseModel]] = []
        for m in current:
            field = next((f for n, f in m.model_fields.items() if part in (n, f.alias)), None)
            if field is not None:
                nxt += [x for x in models_in(field.annotation) if x not in nxt]
        if nxt:
            current = nxt
            continue
        tagged = [m for m in current if str(part) in _tags(m)]  # a union member's tag: keep that member
        if tagged:
            current = tagged
    return current


def unknown_key(root: type[BaseModel], loc: Sequence[Any], page: str) -> str:
    """``unknown key 'x'; valid keys: a, b, c (see docs/truth.md#span)`` for the pydantic error location ``loc`` of
    an ``extra_forbidden`` error under ``root`` (the anchor names the nested object's section)."""
    keys: list[str] = []
    models = models_at(root, loc)
    for m in models:
        keys += [k for k in keys_of(m) if k not in keys]
    if len(models) == 1 and models[0] is not root:
        page = f"{page}#{anchor(models[0])}"
    return unknown_keys([str(loc[-1]) if loc else ""], keys, page)


def anchor(model: type[BaseModel]) -> str:
    """The anchor of a model's section on its reference page (its heading is the class name)."""
    return model.__name__.lower()


def unknown_keys(found: Iterable[str], valid: Sequence[str], page: str) -> str:
    """The message for keys ``found`` that are not in ``valid`` (for loaders that check keys by hand)."""
    found = list(found)
    what = "unknown key " + ", ".join(map(repr, found)) if len(found) == 1 else \
        "unknown keys " + ", ".join(map(repr, found))
    return f"{what}; valid keys: {', '.join(valid)} (see {page})"


def option_names(cls: type) -> list[str]:
    """The keyword options a plug-in class (auditor, parser...) takes: its ``__init__`` parameters, and for a
    ``**options`` parameter the fields of the dataclasses in its ``option_dataclasses`` attribute (the dedup
    auditor's `ingestaudit.stages.dedup.DedupConfig`)."""
    import inspect
    from dataclasses import fields

    params = inspect.signature(cls.__init__).parameters
    names = [n for n, p in params.items() if n != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        names += [f.name for dc in getattr(cls, "option_dataclasses", ()) for f in fields(dc) if f.name not in names]
    return names
