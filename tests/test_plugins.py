"""The shared plugin loader (`ingestaudit.plugins`) and the plug points' error classes built on it."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from ingestaudit import plugins
from ingestaudit.plugins import (PluginError, PluginOptionError, PluginUnavailable, UnknownPlugin, instantiate,
                                 plugin_class, plugin_names)

GROUP = "ingestaudit.test_plugins"


class Base:
    """A stand-in plug-point base class."""


class Good(Base):
    def __init__(self, size: int = 1):
        if size < 0:
            raise ValueError("size must be >= 0")
        self.size = size


class Other(Base):
    pass


class NotABase:
    pass


def _eps(**names: str):
    """An entry-point hook returning ``name -> EntryPoint(value)`` for group `GROUP`."""
    return lambda: {n: EntryPoint(n, v, GROUP) for n, v in names.items()}


def _no_scan():
    raise AssertionError("the entry points were scanned")


BUILTIN = {"good": f"{__name__}:Good"}


def test_builtin_wins_over_an_entry_point_of_the_same_name():
    hook = _eps(good=f"{__name__}:Other", other=f"{__name__}:Other")
    assert plugin_class(GROUP, "good", BUILTIN, what="thing", entry_points=hook) is Good
    assert plugin_class(GROUP, "other", BUILTIN, what="thing", entry_points=hook) is Other


def test_a_name_with_a_colon_is_a_path_and_never_scans_the_entry_points():
    assert plugin_class(GROUP, f"{__name__}:Other", BUILTIN, what="thing", entry_points=_no_scan) is Other
    assert plugin_class(GROUP, "good", BUILTIN, what="thing", entry_points=_no_scan) is Good


def test_names_are_builtins_in_order_then_unshadowed_entry_points_sorted():
    hook = _eps(zeta="m:Z", good="m:G", alpha="m:A")
    assert plugin_names(GROUP, {"good": "x:Y", "beta": "x:B"}, entry_points=hook) == ["good", "beta", "alpha", "zeta"]
    assert plugin_names(GROUP, entry_points=_eps()) == []


def test_unknown_name_lists_the_known_ones():
    hook = _eps(other=f"{__name__}:Other")
    with pytest.raises(UnknownPlugin, match=r"unknown thing 'nope'; known: good, other \(or 'module:Class'; "
                                            r"plug-ins register in the 'ingestaudit.test_plugins'"):
        plugin_class(GROUP, "nope", BUILTIN, what="thing", entry_points=hook)
    with pytest.raises(UnknownPlugin, match="known: none"):
        plugin_class(GROUP, "nope", what="thing", entry_points=_eps())
    with pytest.raises(UnknownPlugin, match="known: b, a"):  # the caller's own listing, in its order
        plugin_class(GROUP, "nope", what="thing", entry_points=_eps(), known=lambda: ["b", "a"])


def test_import_failures_and_missing_attributes():
    hook = _eps(broken="no_such_module_xyz:Thing")
    with pytest.raises(PluginUnavailable, match=r"thing 'broken' could not be imported \(.*no_such_module_xyz"):
        plugin_class(GROUP, "broken", what="thing", entry_points=hook)
    with pytest.raises(PluginUnavailable, match="cannot load thing 'no_such_module_xyz:T'"):
        plugin_class(GROUP, "no_such_module_xyz:T", what="thing")
    with pytest.raises(UnknownPlugin, match="cannot load thing 'no_such_module_xyz:T'"):
        plugin_class(GROUP, "no_such_module_xyz:T", what="thing", unimportable=UnknownPlugin)
    with pytest.raises(UnknownPlugin, match="has no attribute 'Missing'"):
        plugin_class(GROUP, f"{__name__}:Missing", what="thing")


def test_the_plug_points_error_classes_are_raised():
    class Unknown(UnknownPlugin, KeyError):
        pass

    class Unavailable(PluginUnavailable):
        pass

    with pytest.raises(Unknown):
        plugin_class(GROUP, "nope", what="thing", entry_points=_eps(), unknown=Unknown, unavailable=Unavailable)
    with pytest.raises(Unavailable):
        plugin_class(GROUP, "b", what="thing", entry_points=_eps(b="no_such_module_xyz:T"), unknown=Unknown,
                     unavailable=Unavailable)


def test_base_class_check():
    with pytest.raises(UnknownPlugin, match=r"thing '.*:NotABase' is not a Base: <class '.*NotABase'> is not a "
                                            r"subclass of .*test_plugins\.Base$"):
        plugin_class(GROUP, f"{__name__}:NotABase", what="thing", base=Base)
    with pytest.raises(UnknownPlugin, match="is not a Base"):  # a built-in is checked too
        plugin_class(GROUP, "bad", {"bad": f"{__name__}:NotABase"}, what="thing", base=Base)
    with pytest.raises(UnknownPlugin, match="is not a Base"):  # a function is not a class at all
        plugin_class(GROUP, f"{__name__}:_no_scan", what="thing", base=Base)
    assert plugin_class(GROUP, f"{__name__}:Good", what="thing", base=Base) is Good


def test_instantiate_turns_a_bad_option_into_a_value_error():
    assert instantiate(Good, {"size": 3}, "thing 'good'").size == 3
    assert instantiate(Good, None, "thing 'good'").size == 1
    with pytest.raises(PluginOptionError, match=r"^thing 'good': bad option in \[x\] \(.*'colour'\); valid options: "
                                                r"size \(see docs/config.md\)$"):
        instantiate(Good, {"colour": 1}, "thing 'good'", section="[x]")
    with pytest.raises(ValueError, match=r"^thing 'good': bad option \("):
        instantiate(Good, {"colour": 1}, "thing 'good'")
    with pytest.raises(ValueError, match="size must be >= 0") as info:  # the constructor's own errors pass through
        instantiate(Good, {"size": -1}, "thing 'good'")
    assert not isinstance(info.value, PluginError)


def test_default_discovery_reads_importlib_metadata_at_call_time(monkeypatch):
    import importlib.metadata as md

    ep = EntryPoint("other", f"{__name__}:Other", GROUP)
    monkeypatch.setattr(md, "entry_points", lambda **kw: [ep] if kw.get("group") == GROUP else [])
    assert plugins.entry_points_of(GROUP) == {"other": ep}
    assert plugin_names(GROUP) == ["other"]
    assert plugin_class(GROUP, "other", what="thing") is Other


def test_every_plug_point_error_is_in_the_one_hierarchy():
    from ingestaudit.stages import dedup_step as dedup
    from ingestaudit.parsers.base import ParserError, ParserUnavailable
    from ingestaudit.parsers.registry import UnknownParser
    from ingestaudit.stages import language, pii
    from ingestaudit.stages.cleaners.base import CleanerError, CleanerUnavailable
    from ingestaudit.stages.cleaners.registry import UnknownCleaner

    pairs = [(UnknownParser, UnknownPlugin, KeyError), (ParserUnavailable, PluginUnavailable, Exception),
             (UnknownCleaner, UnknownPlugin, ValueError), (CleanerUnavailable, PluginUnavailable, CleanerError),
             (pii.UnknownDetector, UnknownPlugin, pii.PiiDetectorError),
             (pii.DetectorUnavailable, PluginUnavailable, pii.PiiDetectorError),
             (language.UnknownDetector, UnknownPlugin, language.DetectorError),
             (language.DetectorUnavailable, PluginUnavailable, language.DetectorError),
             (dedup.UnknownDetector, UnknownPlugin, ValueError),
             (dedup.DetectorUnavailable, PluginUnavailable, ValueError)]
    for cls, plugin_base, old_base in pairs:
        assert issubclass(cls, plugin_base) and issubclass(cls, old_base), cls
    assert not issubclass(ParserUnavailable, ParserError)
    assert str(UnknownParser("unknown parser 'x'")) == "unknown parser 'x'"  # not quoted as a KeyError would be
