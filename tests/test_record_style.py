"""One record style (issue 13): every dataclass is frozen and slotted, read from the source."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "envscope"

NOT_FROZEN = {
    "DirEntry": "a value built once per listing entry on every spawn (files/_fs.py says why)",
    "Work": "the spawn check's step counter",
    "Scope": "one scope of the spawn check while it is analysed",
    "_Frame": "the YAML composer's stack frame",
    "_Entry": "a cache entry, its ticket advanced under the lock",
    "_Flight": "a home's single-flight lock and user count",
    "Built": "the CLI's build in progress",
}
"""Mutable state, not records: each is named with why it is not frozen."""

TUPLES = {"Signature"}
"""NamedTuples where a tuple is the point: a signature compares equal to a stat tuple."""


def _classes() -> list[tuple[str, ast.ClassDef]]:
    """Every class in the package, with the module it is in."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                found.append((str(path.relative_to(PACKAGE.parent)), node))
    return found


def _dataclass_options(node: ast.ClassDef) -> dict[str, object] | None:
    """The keyword options of a class's ``@dataclass``; None when it is not one."""
    for deco in node.decorator_list:
        call = deco if isinstance(deco, ast.Call) else None
        target = call.func if call is not None else deco
        if isinstance(target, ast.Name) and target.id == "dataclass":
            keywords = call.keywords if call is not None else []
            return {k.arg: ast.literal_eval(k.value) for k in keywords if k.arg}
    return None


def test_every_dataclass_is_frozen_and_slotted() -> None:
    """A ``@dataclass`` is slotted, and frozen unless it is named mutable state."""
    wrong = []
    for module, node in _classes():
        options = _dataclass_options(node)
        if options is None:
            continue
        frozen = options.get("frozen") is True or node.name in NOT_FROZEN
        if not (frozen and options.get("slots") is True):
            wrong.append(f"{module}: {node.name} {options}")
    assert wrong == []


def test_named_tuples_only_where_a_tuple_is_the_point() -> None:
    """No NamedTuple record but the documented ones."""
    found = {
        node.name
        for _, node in _classes()
        if any(isinstance(b, ast.Name) and b.id == "NamedTuple" for b in node.bases)
    }
    assert found == TUPLES


def test_no_type_checking_false_trick() -> None:
    """No module assigns ``TYPE_CHECKING`` itself (``typing.TYPE_CHECKING`` is the one flag)."""
    assigned = [
        str(path)
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "TYPE_CHECKING" for t in node.targets)
    ]
    assert assigned == []
