"""Name and value resolution for the spawn check, in one linear pass.

``analyse(tree)`` walks a module once, gives every function, lambda and class
its own ``Scope`` (a link to its parent, never a copy of it), records what
each scope binds, and returns every call with the scope it sits in. A name is
then resolved by walking up the chain of scopes, so the work is the size of
the tree times the nesting depth (which Python's parser bounds), never the
number of scopes times the number of names. ``Work`` counts the steps so a
test can pin that.

What a name may hold is a set of *abstract values*:

- dotted names of functions and modules (``subprocess.run``), from imports,
  plain, annotated, chained, tuple-pairwise and walrus assignments;
- ``os.environ`` when it may hold the parent environment or a copy of it
  (``os.environ.copy()``, ``dict(os.environ)``, ``{**os.environ}``, a
  comprehension over it, ``copy.copy``, a conditional, ``env.update(...)``,
  ``env |= ...``, its items through ``sorted``/``list``/``tuple``, a
  ``ChainMap``/``OrderedDict``/``MappingProxyType`` over it);
- ``NONE`` when it may hold ``None``.

The analysis is deliberately generous ("may", not "must"): every binding of a
name anywhere in its scope counts everywhere in that scope, whatever the
order or the branch. Everything here is pure.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

__all__ = ["ENVIRON", "NONE", "Scope", "Work", "analyse", "may_hold_environ", "may_hold_none"]

ENVIRON = "os.environ"
NONE = "<None>"
_PARENT_ENVIRON = frozenset({"os.environ", "os.environb"})
_COPIES = frozenset({"copy.copy", "copy.deepcopy"})
# builtins that hand on the same items (``dict(sorted(os.environ.items()))``)
_ITEMS_KEPT = frozenset({"sorted", "list", "tuple", "reversed", "iter", "set", "frozenset"})
# builtins and itertools over several iterables: any of them may hand the items on
# (``dict(zip(os.environ, os.environ.values()))``, ``dict(filter(f, os.environ.items()))``)
_ITEMS_MERGED = frozenset({"zip", "filter", "map"})
_ITERTOOLS = frozenset({"itertools.chain", "itertools.islice", "itertools.filterfalse"})
# mappings over their arguments: a spawn reads the parent environment through them
_MAPPINGS = frozenset(
    {
        "collections.OrderedDict",
        "collections.ChainMap",
        "collections.UserDict",
        "types.MappingProxyType",
    }
)
_VIEW_METHODS = frozenset({"copy", "items", "keys", "values"})
_MODULE_ALIASES = {"posix": "os", "nt": "os"}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.DictComp, ast.GeneratorExp, ast.ListComp, ast.SetComp)
_EMPTY: frozenset[str] = frozenset()


@dataclass(slots=True)
class Work:
    """How many steps an analysis took: AST nodes visited, scope links followed, values tried."""

    steps: int = 0


@dataclass(slots=True, eq=False)
class Scope:
    """One module, function, lambda or class body: what it binds, and its parent."""

    parent: Scope | None
    is_class: bool = False
    names: dict[str, frozenset[str]] = field(default_factory=dict)
    events: list[ast.AST] = field(default_factory=list)

    def lookup(self, name: str, work: Work) -> frozenset[str]:
        """What ``name`` may hold here: the innermost binding scope wins (class bodies
        are not seen from the functions inside them, as in Python)."""
        scope: Scope | None = self
        while scope is not None:
            work.steps += 1
            if (scope is self or not scope.is_class) and name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return _EMPTY

    def bind(self, name: str, values: frozenset[str]) -> None:
        """Add ``values`` to what ``name`` may hold in this scope."""
        if values:
            self.names[name] = self.names.get(name, _EMPTY) | values


def _canonical(qual: str) -> str:
    head, _, rest = qual.partition(".")
    if head in _MODULE_ALIASES and rest:
        return f"{_MODULE_ALIASES[head]}.{rest}"
    return qual


def qualnames(expr: ast.expr, scope: Scope, work: Work) -> frozenset[str]:
    """The dotted names an expression may denote (``sp.run`` → ``subprocess.run``)."""
    attrs: list[str] = []
    node = expr
    while True:
        work.steps += 1
        if isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        elif isinstance(node, ast.NamedExpr):
            node = node.value
        else:
            break
    if not isinstance(node, ast.Name):
        return _EMPTY
    bases = scope.lookup(node.id, work)
    if not attrs:
        return bases
    suffix = "".join(f".{attr}" for attr in reversed(attrs))
    return frozenset(_canonical(base + suffix) for base in bases if not base.startswith("<"))


def _splats(call: ast.Call) -> Iterator[ast.expr]:
    return (k.value for k in call.keywords if k.arg is None)


def _environ_sources(node: ast.expr, scope: Scope, work: Work) -> Iterable[ast.expr]:
    """The sub-expressions whose environ-ness ``node`` passes on."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _VIEW_METHODS and not node.args:
            return [func.value]
        if isinstance(func, ast.Name) and func.id == "dict":
            return [*node.args[:1], *_splats(node)]
        if isinstance(func, ast.Name) and func.id in _ITEMS_KEPT:
            return node.args[:1]
        if isinstance(func, ast.Name) and func.id in _ITEMS_MERGED:
            return node.args
        named = qualnames(func, scope, work) if node.args else _EMPTY
        if named & _COPIES:
            return node.args[:1]
        if named & (_MAPPINGS | _ITERTOOLS):
            return node.args
        return ()
    if isinstance(node, ast.Dict):
        return [v for k, v in zip(node.keys, node.values, strict=True) if k is None]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return (node.left, node.right)
    if isinstance(node, ast.IfExp):
        return (node.body, node.orelse)
    if isinstance(node, ast.BoolOp):
        return node.values
    if isinstance(node, ast.NamedExpr):
        return (node.value,)
    if isinstance(node, _COMPREHENSIONS):
        return (node.generators[0].iter,)
    return ()


def may_hold_environ(expr: ast.expr, scope: Scope, work: Work) -> bool:
    """True when ``expr`` may be the parent environment or a copy or merge of it."""
    pending = [expr]
    while pending:
        node = pending.pop()
        work.steps += 1
        if isinstance(node, (ast.Name, ast.Attribute)):
            if qualnames(node, scope, work) & _PARENT_ENVIRON:
                return True
            continue
        pending.extend(_environ_sources(node, scope, work))
    return False


def may_hold_none(expr: ast.expr, scope: Scope, work: Work) -> bool:
    """True when ``expr`` may be ``None`` (a constant, a name bound to it, a branch of it)."""
    pending = [expr]
    while pending:
        node = pending.pop()
        work.steps += 1
        if isinstance(node, ast.Constant):
            if node.value is None:
                return True
        elif isinstance(node, ast.Name):
            if NONE in scope.lookup(node.id, work):
                return True
        elif isinstance(node, ast.IfExp):
            pending.extend((node.body, node.orelse))
        elif isinstance(node, ast.BoolOp):  # `a or b` is None only through b; `a and b` either
            pending.extend(node.values[-1:] if isinstance(node.op, ast.Or) else node.values)
        elif isinstance(node, ast.NamedExpr):
            pending.append(node.value)
    return False


def _values(expr: ast.expr, scope: Scope, work: Work) -> frozenset[str]:
    """Everything an assigned expression may hold: names, ``ENVIRON``, ``NONE``."""
    found = set(qualnames(expr, scope, work))
    if may_hold_environ(expr, scope, work):
        found.add(ENVIRON)
    if may_hold_none(expr, scope, work):
        found.add(NONE)
    return frozenset(found)


def _bind_import(
    node: ast.Import | ast.ImportFrom, scope: Scope, star_targets: Iterable[str]
) -> None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                scope.bind(alias.asname, frozenset({alias.name}))
            else:
                head = alias.name.split(".", 1)[0]
                scope.bind(head, frozenset({head}))
        return
    if node.level or not node.module:
        return  # a relative import is never the standard library
    module = node.module
    for alias in node.names:
        if alias.name == "*":
            for qual in star_targets:
                tail = qual[len(module) + 1 :]
                if qual.startswith(f"{module}.") and "." not in tail:
                    scope.bind(tail, frozenset({qual}))
        else:
            scope.bind(alias.asname or alias.name, frozenset({f"{module}.{alias.name}"}))


def _bind_target(target: ast.expr, value: ast.expr, scope: Scope, work: Work) -> None:
    """Bind a name, or the names of a tuple/list pairwise with an equally long tuple/list."""
    pending = [(target, value)]
    while pending:
        work.steps += 1
        tgt, val = pending.pop()
        if isinstance(tgt, ast.Name):
            scope.bind(tgt.id, _values(val, scope, work))
        elif (
            isinstance(tgt, (ast.Tuple, ast.List))
            and isinstance(val, (ast.Tuple, ast.List))
            and len(tgt.elts) == len(val.elts)
            and not any(isinstance(e, ast.Starred) for e in (*tgt.elts, *val.elts))
        ):
            pending.extend(zip(tgt.elts, val.elts, strict=True))


def _bind_event(node: ast.AST, scope: Scope, work: Work) -> None:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            _bind_target(target, node.value, scope, work)
    elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
        _bind_target(node.target, node.value, scope, work)
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        if isinstance(node.op, ast.BitOr) and may_hold_environ(node.value, scope, work):
            scope.bind(node.target.id, frozenset({ENVIRON}))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        owner = node.func.value  # env.update(os.environ): env now holds the parent env
        if isinstance(owner, ast.Name) and any(
            may_hold_environ(arg, scope, work) for arg in (*node.args, *_splats(node))
        ):
            scope.bind(owner.id, frozenset({ENVIRON}))


def _is_event(node: ast.AST) -> bool:
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "update"
    )


def analyse(tree: ast.AST, star_targets: Iterable[str], work: Work) -> list[tuple[ast.Call, Scope]]:
    """Every call in ``tree`` with the (resolved) scope it sits in, in walk order.

    ``star_targets`` are the dotted names a ``from M import *`` may bind.
    """
    stars = tuple(star_targets)
    module = Scope(None)
    scopes = [module]
    calls: list[tuple[ast.Call, Scope]] = []
    stack: list[tuple[ast.AST, Scope]] = [(tree, module)]
    while stack:
        node, scope = stack.pop()
        work.steps += 1
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            _bind_import(node, scope, stars)  # imports count before any assignment
        elif _is_event(node):
            scope.events.append(node)
        if isinstance(node, ast.Call):
            calls.append((node, scope))
        children = list(ast.iter_child_nodes(node))
        for child in reversed(children):
            if isinstance(child, _SCOPES):
                inner = Scope(scope, is_class=isinstance(child, ast.ClassDef))
                scopes.append(inner)
                stack.append((child, inner))
            else:
                stack.append((child, scope))
    for each in scopes:  # parents before children: a child's lookups see its parents' names
        for event in each.events:
            _bind_event(event, each, work)
        each.events.clear()
    return calls
