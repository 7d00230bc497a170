"""The package's layers: which subpackage may import which (docs/concepts.md).

The graph is built from the source (every ``import`` and ``from ... import``,
module-level or inside a function), folded to one node per layer unit: a
subpackage (``envscope.pipeline``) or a top-level module (``envscope.host``).
The same edges, one node per module, must have no cycle either: inside a
unit, modules import each other one way.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "envscope"

# Layer of each unit, lowest first. A unit may import its own modules and any
# unit of a strictly lower layer; units in the same layer never import each
# other, except the front modules (the host and what is built on it).
LAYERS: dict[str, int] = {
    "errors": 0,
    "schemas": 0,
    "_inputs": 1,
    "_c_environ": 1,
    "_admissions": 1,
    "_lru": 1,
    "files": 2,
    "_mcp_syntax": 2,
    "policy": 3,
    "manifests": 4,
    "audit": 4,
    "pipeline": 5,
    "_launch": 6,
    "_host_options": 6,
    "_mcp_formats": 6,
    "host": 7,
    "spawn": 7,
    "redact": 7,
    "mcp": 7,
    "testing": 7,
    "testing_fs": 7,
    "_guard": 7,
    "_harden": 7,
    "_masked_output": 7,
    "__init__": 8,
    "tools": 8,
    "cli": 9,
    "__main__": 10,
}
FRONT = 7


def _unit(module: str) -> str:
    """The layer unit of a dotted module name (``envscope.pipeline.stages`` -> ``pipeline``)."""
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def _module_of(path: Path) -> str:
    """The dotted name of a source file of the package."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def _imports(path: Path) -> frozenset[str]:
    """Every envscope module a source file imports, at any depth of the file (parsed once)."""
    module = _module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return frozenset(_imports_of_tree(ast.parse(path.read_text(encoding="utf-8")), package))


def _imports_of_tree(tree: ast.AST, package: str) -> set[str]:
    """Every envscope module a parsed file in ``package`` imports."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "envscope")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "envscope":
                continue
            found.add(target)
            if target == "envscope":  # ``from envscope import stages`` names a module
                found.update(
                    f"envscope.{a.name}"
                    for a in node.names
                    if (PACKAGE / f"{a.name}.py").exists() or (PACKAGE / a.name).is_dir()
                )
    return found


def unit_graph() -> dict[str, set[str]]:
    """Which layer unit imports which (self-imports left out)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        source = _unit(_module_of(path))
        graph.setdefault(source, set()).update(
            _unit(target) for target in _imports(path) if _unit(target) != source
        )
    return graph


def module_graph() -> dict[str, set[str]]:
    """Which module of the package imports which (self-imports left out)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        source = _module_of(path)
        graph.setdefault(source, set()).update(t for t in _imports(path) if t != source)
    return graph


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Each edge that goes to the same or a higher layer (front modules may share one)."""
    return [
        f"{source} -> {target}"
        for source, targets in sorted(graph.items())
        for target in sorted(targets)
        if LAYERS[target] > LAYERS[source]
        or (LAYERS[target] == LAYERS[source] and LAYERS[source] != FRONT)
    ]


def cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of the graph as a path of units, or ``[]`` when it has none."""
    state: dict[str, int] = {}

    def visit(unit: str, path: list[str]) -> list[str]:
        if state.get(unit) == 1:
            return [*path, unit]
        if state.get(unit) == 2:
            return []
        state[unit] = 1
        for target in sorted(graph.get(unit, ())):
            found = visit(target, [*path, unit])
            if found:
                return found
        state[unit] = 2
        return []

    for unit in sorted(graph):
        found = visit(unit, [])
        if found:
            return found
    return []


def drawing(graph: dict[str, set[str]]) -> str:
    """The graph in text, highest layer first: ``unit -> imported units``."""
    order = sorted(graph, key=lambda u: (-LAYERS.get(u, -1), u))
    return "\n".join(
        f"{unit:<13} -> {', '.join(sorted(graph[unit], key=lambda u: (-LAYERS[u], u))) or '-'}"
        for unit in order
    )


def test_every_unit_has_a_layer() -> None:
    """Each subpackage and top-level module of envscope is placed in a layer."""
    assert set(unit_graph()) - set(LAYERS) == set()
    assert set(LAYERS) - set(unit_graph()) == set(), "a layer names a unit that is gone"


def test_imports_only_go_down_the_layers() -> None:
    """No unit imports one of its own or a higher layer (front modules excepted)."""
    graph = unit_graph()
    print("\n" + drawing(graph))
    assert upward(graph) == []


def test_the_docs_draw_the_graph_as_it_is() -> None:
    """docs/concepts.md's import drawing is the graph of the source (no stale unit or edge)."""
    text = (PACKAGE.parent / "docs" / "concepts.md").read_text(encoding="utf-8")
    assert f"```text\n{drawing(unit_graph())}\n```" in text


def test_no_cycle_between_units() -> None:
    """The unit graph is acyclic (a cycle would make the layers meaningless)."""
    assert cycle(unit_graph()) == []


def test_no_cycle_between_modules() -> None:
    """The module graph is acyclic: no two modules import each other, even inside a function."""
    assert cycle(module_graph()) == []


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("envscope.policy._catalog_records", "envscope.policy.catalog"),
        ("envscope.policy._declarations", "envscope.policy._secret_policy"),
        ("envscope.files._fs", "envscope.files._trusted_file"),
    ],
)
def test_the_check_sees_a_module_cycle_inside_a_unit(source: str, target: str) -> None:
    """An edge back up inside one unit closes a module cycle the unit graph cannot see."""
    graph = module_graph()
    assert source in graph[target]  # the real edge the added one reverses
    graph[source].add(target)
    assert cycle(graph) != []
    units = unit_graph()
    assert cycle(units) == []  # folded into units, the same edge is a self-import


@pytest.mark.parametrize(
    ("source", "target"),
    [("policy", "audit"), ("files", "policy"), ("manifests", "pipeline"), ("pipeline", "host")],
)
def test_the_checks_see_an_upward_import(source: str, target: str) -> None:
    """An upward edge added to the real graph is reported, and it closes a cycle."""
    graph = unit_graph()
    graph[source].add(target)
    assert f"{source} -> {target}" in upward(graph)
    graph[target].add(source)
    assert cycle(graph) != []


def test_a_function_level_import_is_an_edge(tmp_path: Path) -> None:
    """An import inside a function body counts as much as one at module level."""
    mod = tmp_path / "m.py"
    mod.write_text("def f() -> None:\n    from envscope.host import Host\n", encoding="utf-8")
    assert "envscope.host" in _imports_of_tree(
        ast.parse(mod.read_text(encoding="utf-8")), "envscope"
    )
