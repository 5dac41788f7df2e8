"""Escaping of user-supplied strings (class, document, pipeline and label names, messages) for each view (issue 15).

A corpus is untrusted input, and so is every name taken from it: a folder called ``<img src=x onerror=alert(1)>`` or
a file name holding a terminal escape sequence must reach the reader as text, never as markup or a terminal command.

* `terminal_text`: control characters (C0 including ESC, NUL and CR; DEL; C1, which some terminals read as 8-bit
  escape sequences; the bidirectional overrides U+202A-U+202E and U+2066-U+2069, which reorder what a terminal
  shows) become visible escapes (``\\x1b``, ``\\u202e``); ``keep_newlines`` keeps ``\\n`` (and ``\\t``) for
  multi-line views of our own making.
* `md_text`: Markdown text (CommonMark 0.31 / GitHub-flavoured Markdown): ``&``, ``<`` and ``>`` become entity
  references, the inline Markdown punctuation ``\\ ` * _ [ ] | ! ~ # $`` is backslash-escaped (CommonMark section
  2.4, "Backslash escapes": any ASCII punctuation may be; ``|`` for GFM table cells), line breaks become spaces,
  control characters become visible escapes. Names are never placed at the start of a line, so list and heading
  markers there need no escape.
* `md_code`: a code span (CommonMark section 6.1). A code span shows its content literally (no escape works inside
  it), so a name that a code span cannot hold as plain text (it has ``<``, ``>`` or ``&``, which some renderers
  still read as markup, a backtick, or ``|``, which splits a table cell even inside a span) is written as
  `md_text` instead; other names get a code span.
* `safe_for_terminal`: a copy of a pydantic model (a `Report`) with `terminal_text` applied to every string in it,
  so a terminal view built from it prints no control character and no line a name could forge.
"""

from __future__ import annotations

import re
from typing import Any

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_CONTROL_NL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_MD_PUNCT = re.compile(r"([\\`*_\[\]|!~#$])")
# emphasis, code, links and images, table cells, strikethrough, heading marks, GitHub math; names never start a line
# (they follow '### ', '- ' or a cell's '| '), so the line-start marks ('-', '+', '1.', '=') need no escape
_MD_NEEDS_TEXT = re.compile("[<>&`|\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def _visible(match: re.Match[str]) -> str:
    ch = match.group(0)
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def terminal_text(text: Any, *, keep_newlines: bool = False) -> str:
    """``text`` (any value, made a string) with every control character replaced by a visible escape.

    Args:
        keep_newlines: keep ``\\n`` and ``\\t`` (a multi-line view); otherwise they are escaped too (a name).

    Returns a string without C0/C1 control characters, DEL or bidirectional overrides (besides kept newlines/tabs).
    """
    s = str(text)
    if keep_newlines:
        return _CONTROL.sub(_visible, s)
    return _CONTROL_NL.sub(_visible, s)


def md_text(text: Any) -> str:
    """``text`` as inline Markdown text that renders to exactly that text and never to markup (see the module
    doc): entity references for ``& < >``, backslash escapes for Markdown punctuation, spaces for line breaks."""
    s = str(text).replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    s = _CONTROL_NL.sub(_visible, s)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_PUNCT.sub(r"\\\1", s)


def md_code(text: Any) -> str:
    """``text`` as a Markdown code span, or as `md_text` when a code span cannot show it literally and safely
    (``<``, ``>``, ``&``, a backtick or a control character in it)."""
    s = str(text)
    if not s or _MD_NEEDS_TEXT.search(s) or s != s.strip():  # CommonMark strips one space at each end of a span
        return md_text(s)
    return f"`{s}`"


def safe_for_terminal(obj: Any) -> Any:
    """A copy of ``obj`` (pydantic models, dataclasses left as they are, lists, tuples, dicts, strings) with
    `terminal_text` applied to every string, dictionary keys included; parts without a control character are
    shared, not copied."""
    from pydantic import BaseModel

    if isinstance(obj, str):
        return terminal_text(obj) if _CONTROL_NL.search(obj) else obj
    if isinstance(obj, BaseModel):
        changed = {}
        for name in type(obj).model_fields:
            value = getattr(obj, name)
            new = safe_for_terminal(value)
            if new is not value:
                changed[name] = new
        extra = getattr(obj, "__pydantic_extra__", None) or {}
        for name, value in extra.items():
            new = safe_for_terminal(value)
            if new is not value:
                changed[name] = new
        return obj.model_copy(update=changed) if changed else obj
    if isinstance(obj, (list, tuple)):
        items = [safe_for_terminal(v) for v in obj]
        if all(a is b for a, b in zip(items, obj)):
            return obj
        return type(obj)(items) if isinstance(obj, list) else tuple(items)
    if isinstance(obj, dict):
        pairs = [(safe_for_terminal(k), safe_for_terminal(v)) for k, v in obj.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, obj.items())):
            return obj
        return dict(pairs)
    return obj
