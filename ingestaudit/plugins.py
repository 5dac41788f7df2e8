"""Plugin discovery shared by every plug point (parsers, cleaners, PII, language and dedup detectors).

A plug point names its plugins in three ways (STYLE.md, "Plugins are lazy and explain themselves"):

1. a *built-in* name, mapped to a dotted path ``"package.module:attr"`` that is imported only when asked for;
2. a *literal path* ``"package.module:Class"`` (any name containing ``":"``; handy in tests and experiments);
3. an *entry point* of the plug point's group (``[project.entry-points."ingestaudit.parsers"]`` and the like),
   loaded only when asked for.

They are tried in that order: a built-in name wins over an entry point of the same name, and a name with ``":"`` is
always a path (never looked up among the entry points). Errors form one hierarchy, `PluginError` (under the package's
root `ingestaudit.errors.IngestAuditError`); each plug point raises its own subclasses (``UnknownParser``,
``CleanerUnavailable``...) so its callers keep catching what they did.

A path imports any code, so it is a trust decision (issue 15): a corpus's own ``ingestaudit.toml`` may name registered
plug-ins only (built-ins and entry points); paths come from the command line or a ``--config`` file the user passes
(`ingestaudit.config.load_config` refuses them in an untrusted file; `is_module_path` is the test).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Iterable, Mapping
from importlib.metadata import EntryPoint
from typing import Any

from ingestaudit.errors import IngestAuditError

EntryPoints = Callable[[], Mapping[str, EntryPoint]]
"""A zero-argument function returning ``entry-point name -> EntryPoint`` of one group (a plug point's hook, which
tests replace)."""


class PluginError(IngestAuditError):
    """Base error of plugin loading: every error this module raises is one (the plug points raise subclasses)."""


class UnknownPlugin(PluginError):
    """No plugin answers to that name, a path names no attribute of its module, or the object found is not of the
    plug point's kind; the message lists the known names or says what was found."""


class PluginUnavailable(PluginError):
    """The plugin exists but its module does not import here; the message names the cause (the package to install)."""


class PluginOptionError(PluginError, ValueError):
    """The plugin's constructor refused the options given (a ``TypeError``: an unknown or missing keyword). A
    ``ValueError`` so that configuration errors are caught together."""


def entry_points_of(group: str, source: Callable[..., Iterable[EntryPoint]] | None = None) -> dict[str, EntryPoint]:
    """``name -> EntryPoint`` for every entry point of ``group`` (nothing is imported).

    Args:
        group: the entry-point group, e.g. ``"ingestaudit.parsers"``.
        source: called as ``source(group=group)``; default `importlib.metadata.entry_points`, looked up at call time.
    """
    find = importlib.metadata.entry_points if source is None else source
    return {ep.name: ep for ep in find(group=group)}


def plugin_names(group: str, builtins: Iterable[str] = (), *, entry_points: EntryPoints | None = None) -> list[str]:
    """The built-in names (in the order of ``builtins``), then the entry-point names of ``group`` that no built-in
    shadows, sorted. ``entry_points`` overrides the discovery (default `entry_points_of` ``(group)``)."""
    eps = entry_points() if entry_points is not None else entry_points_of(group)
    builtin = list(builtins)
    return builtin + sorted(n for n in eps if n not in builtin)


def is_module_path(name: object) -> bool:
    """True when ``name`` is a literal ``"module:attr"`` path (a string holding ``":"``), which `plugin_class` imports
    as such: the names a corpus's own configuration may not give."""
    return isinstance(name, str) and ":" in name


def _import_path(path: str) -> Any:
    """The attribute ``attr`` of module ``module`` for ``path = "module:attr"`` (raises ImportError, AttributeError)."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def plugin_class(group: str, name: str, builtins: Mapping[str, str] | None = None, *, what: str,
                 base: type | None = None, entry_points: EntryPoints | None = None,
                 known: Callable[[], Iterable[str]] | None = None,
                 unknown: type[Exception] = UnknownPlugin, unavailable: type[Exception] = PluginUnavailable,
                 unimportable: type[Exception] | None = None) -> Any:
    """The plugin object (normally a class) called ``name``, imported now; see the module docstring for the order.

    Args:
        group: the entry-point group searched for names that are neither built-in nor paths.
        name: a key of ``builtins``, ``"module:attr"``, or an entry-point name.
        builtins: built-in name -> ``"module:attr"``.
        what: the plug point in messages (``"parser"``, ``"PII detector"``...).
        base: when given, the object must be a subclass of it (else ``unknown``).
        entry_points: the discovery hook (default `entry_points_of` ``(group)``).
        known: the names listed when ``name`` is unknown (default `plugin_names`).
        unknown, unavailable: the error classes raised (the plug point's own subclasses of `UnknownPlugin` and
            `PluginUnavailable`, or classes its callers already catch).
        unimportable: the error for a built-in or literal path whose module does not import (default
            ``unavailable``); an entry point whose module does not import always raises ``unavailable``.

    Raises:
        unknown: no such name; a path naming no attribute; an object that is not a ``base`` subclass.
        unavailable: the module does not import (``unimportable`` for a built-in or literal path, when given).
    """
    builtins = builtins or {}
    if name in builtins or ":" in name:
        try:
            obj = _import_path(builtins.get(name, name))
        except ImportError as exc:
            raise (unimportable or unavailable)(f"cannot load {what} {name!r}: {exc}") from exc
        except AttributeError as exc:
            raise unknown(f"cannot load {what} {name!r}: {exc}") from exc
    else:
        hook = entry_points if entry_points is not None else (lambda: entry_points_of(group))
        eps = hook()
        if name not in eps:
            names = known() if known is not None else plugin_names(group, builtins, entry_points=hook)
            raise unknown(f"unknown {what} {name!r}; known: {', '.join(names) or 'none'} "
                          f"(or 'module:Class'; plug-ins register in the {group!r} entry-point group)")
        try:
            obj = eps[name].load()
        except ImportError as exc:
            raise unavailable(f"{what} {name!r} could not be imported ({exc}); install its package") from exc
    if base is not None and not (isinstance(obj, type) and issubclass(obj, base)):
        raise unknown(f"{what} {name!r} is not a {base.__name__}: {obj!r} is not a subclass of "
                      f"{base.__module__}.{base.__qualname__}")
    return obj


def instantiate(cls: Callable[..., Any], options: Mapping[str, Any] | None, what: str, *,
                section: str | None = None) -> Any:
    """``cls(**options)``, with a constructor's ``TypeError`` (an option it does not take) made a clear error.

    Args:
        what: the plugin in the message, e.g. ``"parser 'pymupdf'"``.
        section: where the options came from, e.g. ``"[parser_options.pymupdf]"`` (added to the message).

    Raises:
        PluginOptionError: (a ``ValueError``) an option ``cls`` does not take or of another type than its annotation
            (`ingestaudit.plugin_options.option_problems`, checked before ``cls`` is called), or the constructor
            raised ``TypeError``; the message is ``"<what>: bad option[ in <section>] (<why>); valid options:
            ..."``. Other errors of the constructor propagate.
    """
    from ingestaudit.plugin_options import option_problems

    problems = option_problems(cls, options)
    if problems:
        raise PluginOptionError(_bad_option(cls, what, section, "; ".join(problems)))
    try:
        return cls(**dict(options or {}))
    except TypeError as exc:
        raise PluginOptionError(_bad_option(cls, what, section, str(exc))) from exc


def _bad_option(cls: Callable[..., Any], what: str, section: str | None, why: str) -> str:
    """The message of `PluginOptionError`: the plug-in, where its options came from, why, and the valid options (with
    their types where annotated; docs/config.md documents the built-in ones)."""
    from ingestaudit.plugin_options import valid_options
    from ingestaudit.schema_keys import PAGES

    where = f" in {section}" if section else ""
    valid = f"; valid options: {valid_options(cls)} (see {PAGES['config']})" if isinstance(cls, type) else ""
    return f"{what}: bad option{where} ({why}){valid}"


def package_version(name: str) -> str | None:
    """Installed version of distribution ``name``, or None (never imports the package)."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None
