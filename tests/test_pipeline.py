"""Pipelines: [pipelines.<name>] tables, --parser shorthand, --pipeline, --outputs folders and --sweep variants."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingestaudit.pipeline import DEFAULTS, PipelineError, StageChoice, Sweep, expand, make_pipeline, resolve


def test_a_table_sets_stages_and_options_and_leaves_the_rest_at_the_defaults():
    p = make_pipeline("small", {"parser": "pymupdf", "chunker": {"use": "recursive", "size": 256, "overlap": 32}})
    assert p.stage("parser") == StageChoice("pymupdf")
    assert p.stage("chunker") == StageChoice("recursive", (("overlap", 32), ("size", 256)))
    assert p.stage("embedder") == StageChoice(DEFAULTS["embedder"]) and p.stage("cleaner") == StageChoice("none")
    assert p.precomputed_root is None and p.folder is None


def test_a_precomputed_pipeline_reads_its_folder_with_precomputed_stages(tmp_path):
    p = make_pipeline("mine", None, precomputed_root=tmp_path)
    assert [p.stage(s).use for s in ("parser", "cleaner", "chunker")] == ["precomputed"] * 3
    assert p.folder == tmp_path / "mine"


@pytest.mark.parametrize("table, message", [
    ({"chunkr": "fixed"}, "[pipelines.p]: unknown stage 'chunkr'"),
    ({"chunker": {"size": 3}}, "[pipelines.p].chunker: give an implementation name or a table with 'use'"),
    ({"embedder": ""}, "[pipelines.p].embedder: give an implementation name"),
])
def test_a_bad_table_names_the_table_and_the_field(table, message):
    with pytest.raises(PipelineError, match=message.replace("[", "\\[").replace("]", "\\]").replace(".", "\\.")):
        make_pipeline("p", table)


def test_sweep_values_parse_as_json_where_they_parse():
    s = Sweep.parse("chunker.size=128, 256")
    assert (s.stage, s.option, s.values) == ("chunker", "size", (128, 256))
    assert Sweep.parse("chunker.unit=tokens,chars").values == ("tokens", "chars")
    assert Sweep.parse("cleaner.include_tables=true,false").values == (True, False)
    for bad, message in [("chunker.size", "expected STAGE.OPTION=V1,V2"), ("size=1,2", "expected STAGE.OPTION"),
                         ("chunkr.size=1", "unknown stage 'chunkr'"), ("chunker.size=", "expected STAGE.OPTION"),
                         # regression: two variants named pymupdf/size=256 counted every document twice
                         ("chunker.size=256,128,256", "value given twice: 256"),
                         ('chunker.size=256,"256"', "value given twice: 256")]:
        with pytest.raises(PipelineError, match=message):
            Sweep.parse(bad)


def test_expand_names_each_variant_by_its_values():
    base = make_pipeline("pymupdf", {"parser": "pymupdf"})
    out = expand([base], [Sweep.parse("chunker.size=128,256"), Sweep.parse("chunker.unit=chars,tokens")])
    assert [p.name for p in out] == ["pymupdf/size=128,unit=chars", "pymupdf/size=128,unit=tokens",
                                     "pymupdf/size=256,unit=chars", "pymupdf/size=256,unit=tokens"]
    assert out[3].stage("chunker").kwargs() == {"size": 256, "unit": "tokens"}
    assert expand([base], []) == [base]


def test_a_use_sweep_swaps_the_implementation_and_keeps_its_options_only_when_it_stays():
    base = make_pipeline("p", {"parser": "pymupdf", "cleaner": {"use": "repeated-lines", "min_share": 0.6}})
    out = expand([base], [Sweep.parse("cleaner.use=none,trafilatura,repeated-lines")])
    # another implementation starts from its own defaults (repeated-lines' min_share would not fit trafilatura)
    assert [(p.name, p.stage("cleaner").use, p.stage("cleaner").kwargs()) for p in out] == [
        ("p/use=none", "none", {}), ("p/use=trafilatura", "trafilatura", {}),
        ("p/use=repeated-lines", "repeated-lines", {"min_share": 0.6})]
    assert [p.stage("chunker") for p in out] == [base.stage("chunker")] * 3
    with pytest.raises(PipelineError, match="'use' takes implementation names"):
        Sweep.parse("cleaner.use=none,3")


def test_resolve_orders_pipelines_and_refuses_unknown_or_repeated_names(tmp_path: Path):
    (tmp_path / "ext").mkdir()
    (tmp_path / ".hidden").mkdir()
    configured = {"small": {"parser": "pymupdf", "chunker": {"use": "fixed", "size": 64}}}
    got = resolve(configured=configured, selected=["small"], parsers=["tesseract"], outputs=tmp_path, sweeps=[],
                  default_parsers=["pymupdf"])
    assert [(p.name, p.stage("parser").use) for p in got] == [("small", "pymupdf"), ("tesseract", "tesseract"),
                                                              ("ext", "precomputed")]
    assert got[0].stage("chunker").kwargs() == {"size": 64}
    # nothing named: every configured pipeline, else the [run] parsers
    assert [p.name for p in resolve(configured=configured, selected=[], parsers=[], outputs=None, sweeps=[],
                                    default_parsers=["pymupdf"])] == ["small"]
    assert [p.name for p in resolve(configured={}, selected=[], parsers=[], outputs=None, sweeps=[],
                                    default_parsers=["pymupdf", "unstructured"])] == ["pymupdf", "unstructured"]
    with pytest.raises(PipelineError, match=r"--pipeline 'big': no \[pipelines.big\] in the config \(configured: "
                                            r"small\)"):
        resolve(configured=configured, selected=["big"], parsers=[], outputs=None, sweeps=[], default_parsers=[])
    with pytest.raises(PipelineError, match="pipeline name given twice: ext"):
        resolve(configured={}, selected=[], parsers=["ext"], outputs=tmp_path, sweeps=[], default_parsers=[])
    swept = resolve(configured=configured, selected=["small"], parsers=[], outputs=None,
                    sweeps=[Sweep.parse("chunker.size=128,256")], default_parsers=[])
    assert [p.name for p in swept] == ["small/size=128", "small/size=256"]
