"""JSON read from a corpus or an outputs folder, with limits a hostile file cannot get past (issue 15).

`json.loads` alone fails in ways that name no field or that surface far from the file: an integer of more than 4,300
digits raises a bare ``ValueError``, and a structure nested a few hundred levels deep loads but later breaks pickling
(the pool's scheduler) or any recursive walk. `loads_limited` turns both into `JsonLimit` problems that name the field,
so the caller can report the file and field and keep the other keys.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 100
"""Deepest nesting accepted (objects and arrays; the top level is depth 1). Labels and outputs need far less."""

MAX_INT_DIGITS = 4300
"""Longest integer accepted, in digits (Python's default ``sys.get_int_max_str_digits()``)."""


@dataclass(frozen=True)
class JsonLimit:
    """One value past a limit: ``field`` is its path (``sections[0].children``, ``""`` for the top level); ``kind``
    is ``"depth"`` (nested deeper than the ``max_depth`` asked for, a configurable size limit) or ``"integer"`` (an
    integer too long to convert: a bad value)."""

    field: str
    message: str
    kind: str = "integer"


class _HugeInt:
    """Stands for an integer literal too long to convert (kept as its digit count only)."""

    __slots__ = ("digits",)

    def __init__(self, digits: int):
        self.digits = digits


_FLAGGED = frozenset({dict, list, _HugeInt})


def _parse_int(text: str) -> int | _HugeInt:
    if len(text) <= MAX_INT_DIGITS:  # the common case first: one length test per integer
        return int(text)
    digits = len(text) - (text[0] == "-")
    return _HugeInt(digits) if digits > MAX_INT_DIGITS else int(text)


def _child(path: str, key: str | int) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else str(key))


def loads_limited(text: str, *, max_depth: int = MAX_DEPTH,
                  object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None
                  ) -> tuple[Any, list[JsonLimit]]:
    """Parse ``text`` and check it against the limits.

    Returns:
        The parsed value and the values past a limit, in document order: an integer longer than `MAX_INT_DIGITS`
        (replaced by None in the value) and a container deeper than ``max_depth`` (replaced by None). A value is
        returned even when problems are found, so a caller may keep the keys that have none.

    Raises:
        json.JSONDecodeError: not JSON; RecursionError: nested too deeply for the parser itself (thousands of levels);
        what ``object_pairs_hook`` raises.
    """
    raw = json.loads(text, parse_int=_parse_int, object_pairs_hook=object_pairs_hook)
    if isinstance(raw, _HugeInt):
        return None, [JsonLimit("", f"integer of {raw.digits} digits (more than {MAX_INT_DIGITS})")]
    problems: list[JsonLimit] = []
    # iterative walk over the containers only (a recursive one would fail on the very input it checks)
    stack: list[tuple[Any, str, int]] = [(raw, "", 1)] if isinstance(raw, (dict, list)) else []
    while stack:
        node, path, depth = stack.pop()
        if _FLAGGED.isdisjoint(map(type, node.values() if type(node) is dict else node)):
            continue  # only scalars below (the common case, tested at C speed)
        pairs = node.items() if isinstance(node, dict) else enumerate(node)
        nested = []
        for key, value in pairs:
            if isinstance(value, (dict, list)):
                nested.append((key, value))
            elif isinstance(value, _HugeInt):
                problems.append(JsonLimit(_child(path, key),
                                          f"integer of {value.digits} digits (more than {MAX_INT_DIGITS})"))
                node[key] = None
        for key, value in reversed(nested):
            if depth + 1 > max_depth:
                problems.append(JsonLimit(_short(_child(path, key)), f"nested more than {max_depth} levels deep",
                                              "depth"))
                node[key] = None
            else:
                stack.append((value, _child(path, key), depth + 1))
    return raw, sorted(problems, key=lambda p: _order(p.field))


def _short(field: str, keep: int = 60) -> str:
    """A deep field path cut to its first ``keep`` characters (a 100-level path says little more)."""
    return field if len(field) <= keep else field[:keep] + "..."


def _order(field: str) -> list[Any]:
    """Sort key of a field path that puts ``x[2]`` before ``x[10]``."""
    import re

    return [int(part) if part.isdigit() else part for part in re.split(r"\[(\d+)\]", field)]


def jsonl_lines(text: str) -> list[str]:
    """The lines of a JSON lines file (``questions.jsonl``, ``retrieval.jsonl``, ``ann_results.jsonl``), split on
    ``"\\n"`` only, each without its ``"\\r"`` of a CRLF end; line ``n`` (1-based) is ``[n - 1]``.

    Not `str.splitlines`: it also breaks at U+2028, U+2029, U+0085, U+000B, U+000C, U+001C-U+001E, characters a valid
    JSON string may hold unescaped, which cut a line in two and shifted every later line number (issue 30).
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no line
    return [line[:-1] if line.endswith("\r") else line for line in lines]
