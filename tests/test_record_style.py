"""One record style: every dataclass is frozen and slotted and plain, read from the source.

Plain: a frozen dataclass has the constructor ``@dataclass`` writes (checks and
derived fields in ``__post_init__``), and ``object.__setattr__`` (or an alias
of it) is called nowhere else.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "envscope"

NOT_FROZEN = {
    "DirEntry": "a value built once per listing entry on every spawn (files/_fs.py says why)",
    "Work": "the spawn check's step counter",
    "Scope": "one scope of the spawn check while it is analysed",
    "_Frame": "the YAML composer's stack frame",
    "_Entry": "a cache entry, its ticket advanced under the lock",
    "_Flight": "a home's single-flight lock and user count",
    "Built": "the CLI's build in progress",
    "CatalogMemo": "a catalog's lookup answers and compiled patterns, filled on the spawn path",
    "BuildRequest": "made on every spawn, then only read (tests/pipeline/test_request.py)",
    "Evidence": "what a full build hands an incremental one, filled while the build runs",
    "Template": "made per incremental build, then only read (tests/pipeline/test_incremental.py)",
}
"""Mutable state, not records: each is named with why it is not frozen."""

PENDING: dict[str, str] = {}
"""Frozen records not yet plain, each with the work that makes it so (none is new)."""

TUPLES = {"Signature"}
"""NamedTuples where a tuple is the point: a signature compares equal to a stat tuple."""


@functools.cache
def _trees() -> tuple[tuple[Path, ast.Module], ...]:
    """Every source file of the package, parsed once for the module (the checks only read)."""
    return tuple(
        (path, ast.parse(path.read_text(), str(path))) for path in sorted(PACKAGE.rglob("*.py"))
    )


def _classes() -> list[tuple[str, ast.ClassDef]]:
    """Every class in the package, with the module it is in."""
    found = []
    for path, tree in _trees():
        for node in ast.walk(tree):
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
        for path, tree in _trees()
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "TYPE_CHECKING" for t in node.targets)
    ]
    assert assigned == []


def _setattr_aliases(tree: ast.AST) -> set[str]:
    """Names a module binds to ``object.__setattr__`` (``_set = object.__setattr__``)."""
    return {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and _is_object_setattr(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _is_object_setattr(node: ast.AST) -> bool:
    """True for the expression ``object.__setattr__``."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "__setattr__"
        and isinstance(node.value, ast.Name)
        and node.value.id == "object"
    )


def setattr_outside_post_init(tree: ast.AST) -> list[str]:
    """Each call of ``object.__setattr__`` (or an alias) outside a ``__post_init__``."""
    found: list[str] = []

    def visit(node: ast.AST, function: str, aliases: set[str]) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
            aliases = aliases | _setattr_aliases(node)
        if (
            isinstance(node, ast.Call)
            and (
                _is_object_setattr(node.func)
                or (isinstance(node.func, ast.Name) and node.func.id in aliases)
            )
            and function != "__post_init__"
        ):
            found.append(f"line {node.lineno} in {function or '<module>'}")
        for child in ast.iter_child_nodes(node):
            visit(child, function, aliases)

    module_aliases = {
        t.id
        for node in getattr(tree, "body", [])
        if isinstance(node, ast.Assign) and _is_object_setattr(node.value)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    visit(tree, "", module_aliases)
    return found


def hand_written_init(node: ast.ClassDef) -> bool:
    """True for a frozen dataclass that defines its own ``__init__``."""
    options = _dataclass_options(node)
    if options is None or options.get("frozen") is not True:
        return False
    return any(isinstance(item, ast.FunctionDef) and item.name == "__init__" for item in node.body)


def _pending(tree: ast.AST) -> set[str]:
    """The lines of ``PENDING`` classes in a module (their calls are not reported yet)."""
    return {
        f"line {sub.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name in PENDING
        for sub in ast.walk(node)
        if isinstance(sub, ast.Call)
    }


def test_frozen_dataclasses_have_the_generated_constructor() -> None:
    """No frozen dataclass writes its own ``__init__`` (checks go in ``__post_init__``)."""
    wrong = [
        f"{module}: {node.name}"
        for module, node in _classes()
        if hand_written_init(node) and node.name not in PENDING
    ]
    assert wrong == []


def test_object_setattr_only_in_post_init() -> None:
    """``object.__setattr__`` (or an alias of it) is called only inside ``__post_init__``."""
    wrong = []
    for path, tree in _trees():
        pending = _pending(tree)
        for where in setattr_outside_post_init(tree):
            if where.split(" in ")[0] not in pending:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}: {where}")
    assert wrong == []


SOURCES = {
    "a hand-written __init__ storing fields": (
        "@dataclass(frozen=True, slots=True)\n"
        "class R:\n"
        "    a: int\n"
        "    def __init__(self, a: int) -> None:\n"
        "        object.__setattr__(self, 'a', a)\n",
        True,
        ["line 5 in __init__"],
    ),
    "an alias called from a method (a cache slot)": (
        "_set = object.__setattr__\n"
        "@dataclass(frozen=True, slots=True)\n"
        "class R:\n"
        "    a: int\n"
        "    def get(self) -> int:\n"
        "        _set(self, 'a', 1)\n"
        "        return self.a\n",
        False,
        ["line 6 in get"],
    ),
    "a local alias in a helper": (
        "def fill(r: object) -> None:\n    store = object.__setattr__\n    store(r, 'a', 1)\n",
        False,
        ["line 3 in fill"],
    ),
    "the generated constructor and __post_init__": (
        "_set = object.__setattr__\n"
        "@dataclass(frozen=True, slots=True)\n"
        "class R:\n"
        "    a: int\n"
        "    def __post_init__(self) -> None:\n"
        "        _set(self, 'a', int(self.a))\n",
        False,
        [],
    ),
}


@pytest.mark.parametrize("label", sorted(SOURCES))
def test_the_style_checks_see_a_non_plain_record(label: str) -> None:
    """A hand-written ``__init__`` and a store outside ``__post_init__`` are each reported."""
    source, has_init, stores = SOURCES[label]
    tree = ast.parse(source)
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    assert any(hand_written_init(c) for c in classes) is has_init
    assert setattr_outside_post_init(tree) == stores
