"""The package's layers import downward only (issue 24 point 6, DESIGN.md "Package layout").

The graph counts every import statement of the package, at module level or inside a function (a lazy import is still
a dependency), read with `ast` so that nothing is imported to check it.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "ingestaudit"

# issue 24 point 2: auditors that still run their stage's default implementation instead of reading what a pipeline
# step produced. Empty since the boilerplate auditor reads the pipeline's clean step (`ingestaudit.chain.Cleaning`);
# the test fails when an auditor imports a stage again.
AUDITORS_STILL_LOADING_STEPS: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _targets(module: str, path: Path, node: ast.Import | ast.ImportFrom, known: dict[str, Path]) -> list[str]:
    """The package modules one import statement names (``from a import b`` is ``a.b`` when that is a module)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    out = []
    for name in names:
        while name not in known and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in known and name != module and name.startswith("ingestaudit"):
            out.append(name)
    return out


def _graph() -> dict[str, set[str]]:
    known = _modules()
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                deps.update(_targets(module, path, node, known))
        graph[module] = deps
    return graph


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _edges(graph: dict[str, set[str]], source_layer: str, banned: set[str]) -> set[tuple[str, str]]:
    return {(m, d) for m, deps in graph.items() if _layer(m) == source_layer for d in deps if _layer(d) in banned}


def test_the_graph_sees_lazy_imports():
    graph = _graph()
    # ingestaudit/cli.py imports the runner inside its commands only: the walk must still find it
    assert "ingestaudit.runner" in graph["ingestaudit.cli"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle():
    assert _cycles(_graph()) == []


def test_metrics_import_only_metrics_and_the_bottom_types():
    """metrics/ holds pure functions; the only other modules it may use are the types below everything (and the
    error root, `ingestaudit.errors`, which every layer may raise from)."""
    graph = _graph()
    bottom = {"ingestaudit.model", "ingestaudit.measurement", "ingestaudit.errors"}
    assert {(m, d) for m, deps in graph.items() if _layer(m) == "metrics"
            for d in deps if _layer(d) != "metrics" and d not in bottom} == set()
    assert {(m, d) for m in bottom for d in graph[m]} == set()


def test_executors_import_no_parser_stage_or_auditor():
    assert _edges(_graph(), "executors", {"parsers", "stages", "auditors"}) == set()


def test_auditors_import_no_parser_or_executor_and_only_the_listed_stages():
    assert _edges(_graph(), "auditors", {"parsers", "executors"}) == set()
    assert _edges(_graph(), "auditors", {"stages"}) == AUDITORS_STILL_LOADING_STEPS


def _auditor_class_names() -> set[str]:
    """Every class of the package that is an auditor: `Auditor`, the names of its former shapes, and every class
    whose base is one of them (transitively), read with `ast`."""
    names = {"Auditor", "ChainAuditor", "CorpusAuditor", "PipelineAuditor"}
    classes = [node for path in PACKAGE.rglob("*.py") for node in ast.walk(ast.parse(path.read_text("utf-8")))
               if isinstance(node, ast.ClassDef)]
    grew = True
    while grew:
        grew = False
        for c in classes:
            bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in c.bases}
            if c.name not in names and bases & names:
                names.add(c.name)
                grew = True
    return names


def _isinstance_names(path: Path) -> set[str]:
    """The class names the ``isinstance`` calls of one module test against."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            out |= {k.id if isinstance(k, ast.Name) else getattr(k, "attr", "") for k in kinds}
    return out


def test_the_runner_dispatches_auditors_on_their_declarations_not_their_class():
    """Issue 24 point 2: the runner and the per-document steps read an auditor's ``scope`` and ``reads``; no
    ``isinstance`` names an auditor class."""
    auditors = _auditor_class_names()
    assert {"ExtractionAuditor", "StepAudit", "RetrievalAuditor", "LanguageAuditor"} <= auditors
    assert _isinstance_names(PACKAGE / "auditors" / "reach.py") & {"ArtefactItem"}  # the walk sees isinstance
    for module in ("runner.py", "document_steps.py", "truth_pass.py", "pipeline_provenance.py"):
        assert _isinstance_names(PACKAGE / module) & auditors == set(), module
