"""A plug-in's options checked against its signature before it is built (issue 26, "fail fast on configuration").

The options a plug-in takes are its constructor's (or factory's) keyword parameters, ``inspect.signature``; a
plug-in whose constructor takes ``**options`` declares them as the fields of the dataclasses in its
``option_dataclasses`` attribute (the convention `ingestaudit.schema_keys.option_names` and docs/config.md already
follow), else any name is accepted and its constructor decides. Where a parameter (or field) is annotated, the value
must be of that type as TOML and ``--sweep`` give it: pydantic's `TypeAdapter` validates the value's JSON form in
strict mode, so ``"500"`` is not an ``int`` and ``true`` not an ``int``, while a list is a ``tuple`` and a string a
``Path``. An annotation that does not resolve or that pydantic cannot validate, and a value with no JSON form (an
object a test passes), are left to the constructor.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Mapping
from dataclasses import fields, is_dataclass
from functools import lru_cache
from typing import Any

_EMPTY = inspect.Parameter.empty


def declared_options(target: Callable[..., Any]) -> tuple[dict[str, Any], bool]:
    """The keyword options ``target`` (a class or a factory) takes, ``name -> annotation`` (`inspect.Parameter.empty`
    when not annotated or not resolvable), and whether it accepts other names too (a ``**options`` parameter with
    no ``option_dataclasses`` to declare them). Positional-only and ``*args`` parameters are not options."""
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):  # a builtin with no signature: nothing to check
        return {}, True
    names = {n: p.annotation for n, p in params.items()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and n != "self"}
    hints = _hints(getattr(target, "__init__", target) if isinstance(target, type) else target)
    out = {n: hints.get(n, _EMPTY) if isinstance(a, str) else a for n, a in names.items()}
    open_ended = any(p.kind is p.VAR_KEYWORD for p in params.values())
    declared = [dc for dc in getattr(target, "option_dataclasses", ()) if is_dataclass(dc)]
    if open_ended and declared:
        for dc in declared:
            dc_hints = _hints(dc)
            out.update({f.name: dc_hints.get(f.name, _EMPTY) for f in fields(dc) if f.name not in out})
        open_ended = False
    return out, open_ended


def option_problems(target: Callable[..., Any], options: Mapping[str, Any] | None) -> list[str]:
    """One message per option of ``options`` that ``target`` does not take (``unknown option 'chunk_size'``) or
    whose value is not of its annotated type (``option 'size' = '500': Input should be a valid integer``); empty when
    every option may be passed. See the module docstring for the rules."""
    declared, open_ended = declared_options(target)
    problems = []
    for name, value in (options or {}).items():
        if name not in declared:
            if not open_ended:
                problems.append(f"unknown option {name!r}")
            continue
        error = _type_error(declared[name], value)
        if error:
            problems.append(f"option {name!r} = {value!r}: {error}")
    return problems


def valid_options(target: Callable[..., Any]) -> str:
    """The names of the options ``target`` takes, comma-separated, for messages (``none`` when it takes none; its
    types are docs/config.md's and each type error's)."""
    declared, _ = declared_options(target)
    return ", ".join(declared) or "none"


def _type_name(annotation: Any) -> str:
    return annotation.__name__ if isinstance(annotation, type) else str(annotation).replace("typing.", "")


def _hints(obj: Any) -> dict[str, Any]:
    """``obj``'s resolved annotations, one at a time (one that names a type only imported for type checking does
    not hide the others)."""
    raw = getattr(obj, "__annotations__", {}) or {}
    space = dict(getattr(inspect.unwrap(obj), "__globals__", None) or vars(inspect.getmodule(obj) or typing))
    out = {}
    for name, ann in raw.items():
        try:
            out[name] = eval(ann, space) if isinstance(ann, str) else ann  # noqa: S307 (the plug-in's own code)
        except Exception:
            out[name] = _EMPTY
    return out


@lru_cache(maxsize=256)
def _adapter(annotation: Any) -> Any:
    from pydantic import TypeAdapter

    try:
        return TypeAdapter(annotation)
    except Exception:  # a type pydantic cannot validate (a plug-in's own class): the constructor decides
        return None


def _type_error(annotation: Any, value: Any) -> str:
    """Why ``value`` is not of type ``annotation`` (pydantic's first message and the type), or ``""``."""
    if annotation is _EMPTY or annotation is Any:
        return ""
    try:
        adapter = _adapter(annotation)
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError):  # unhashable annotation or a value with no JSON form
        return ""
    if adapter is None:
        return ""
    from pydantic import ValidationError

    try:
        adapter.validate_json(text, strict=True)
    except ValidationError as exc:
        return f"{exc.errors()[0]['msg']} (expected {_type_name(annotation)})"
    return ""
