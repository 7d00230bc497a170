"""A static check for spawn sites that bypass the envscope factory.

A host runs this in its own CI (``envscope check-spawns PATH...``): it parses
Python files with ``ast`` (never imports or runs them) and reports every call
that starts a child process whose environment does not come from an explicit
``env``:

- ``subprocess.Popen/run/call/check_call/check_output`` and
  ``asyncio.create_subprocess_exec/create_subprocess_shell`` (and
  ``pexpect.spawn/run``, ``pexpect.popen_spawn.PopenSpawn``,
  ``ptyprocess.PtyProcess.spawn``) without an ``env=`` argument, with
  ``env=None`` (the default: the child inherits), or with ``env=os.environ``
  or an obvious copy of it (``os.environ.copy()``, ``dict(os.environ)``,
  ``{**os.environ, ...}``, ``os.environ | {...}``);
- a ``**kwargs`` splat without ``env=`` is reported too: it is not proof that
  ``env`` is set;
- calls that take no environment at all: ``os.system``, ``os.popen``,
  ``subprocess.getoutput/getstatusoutput``, ``pty.spawn``, and the ``os.exec*``
  and ``os.spawn*`` functions without the ``e`` suffix;
- ``os.exec*e``/``os.spawn*e``/``os.posix_spawn[p]`` are fine unless their env
  argument is ``os.environ`` or a copy of it.

Names are resolved through imports (``import subprocess as sp``, ``from os
import system``, ``import asyncio.subprocess``, ``from os import *``) and
plain assignments (``run = subprocess.run``), per scope: a function sees its
module's imports and its own. The resolution is deliberately generous: a name
bound to a spawn function anywhere in a scope counts everywhere in it (so a
``try: import pty / except ImportError: pty = None`` fallback still counts).

A deliberate exception carries the comment ``# envscope: allow-inherit`` on
any line of the call; it is reported with ``allowed=True`` and is not a
finding. Not covered: ``loop.subprocess_exec``, ``multiprocessing``,
``os.fork``, calls through ``getattr`` or ``functools.partial``.

Everything here is pure except ``check_paths``, which reads the files.
"""

from __future__ import annotations

import ast
import enum
import io
import os
import re
import stat
import tokenize
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from envscope._fs import read_regular_file

__all__ = [
    "ALLOW_COMMENT",
    "SKIP_DIRS",
    "SpawnSite",
    "check_paths",
    "check_source",
    "exit_status",
    "format_spawn_sites",
]

ALLOW_COMMENT = "# envscope: allow-inherit"
SKIP_DIRS = frozenset({".venv", "__pycache__", ".git", "node_modules", ".tox", ".nox"})

_ALLOW_RE = re.compile(r"#\s*envscope:\s*allow-inherit\b")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")

REASON_MISSING = "no env=: the child inherits the whole parent environment"
REASON_NONE = "env=None: the child inherits the whole parent environment"
REASON_SPLAT = "env= only maybe set via **{src}, which is not proof: pass env= explicitly"
REASON_ENVIRON = "env= is os.environ or a copy of it: the child gets the whole parent environment"
REASON_NO_PARAM = "takes no env: the child always inherits the parent environment"
REASON_NO_VARIANT = (
    "takes no env: the child inherits the parent environment (use {call}e with a factory env)"
)


@dataclass(frozen=True)
class SpawnSite:
    """One spawn call that bypasses the factory (or is allowed to, when ``allowed``).

    ``line`` and ``col`` are 1-based; ``col`` counts characters.
    """

    path: str
    line: int
    col: int
    call: str
    reason: str
    allowed: bool

    def __str__(self) -> str:
        tail = " (allowed)" if self.allowed else ""
        return f"{self.path}:{self.line}:{self.col}: {self.call}: {self.reason}{tail}"


class _Rule(enum.Enum):
    ENV_KEYWORD = "env-keyword"  # must pass env= (keyword, or positionally at env_index)
    NO_ENV = "no-env"  # has no env parameter at all
    NO_VARIANT = "no-variant"  # os.exec*/spawn* without the e suffix
    ENV_VARIANT = "env-variant"  # env is the last positional (or env=)


@dataclass(frozen=True)
class _Target:
    call: str
    rule: _Rule
    env_index: int | None = None


_POPEN_ENV_INDEX = 10  # Popen(args, bufsize, executable, stdin, stdout, stderr,
#                              preexec_fn, close_fds, shell, cwd, env, ...)


def _targets() -> dict[str, _Target]:
    table: dict[str, _Target] = {}
    for name in ("Popen", "run", "call", "check_call", "check_output"):
        table[f"subprocess.{name}"] = _Target(
            f"subprocess.{name}", _Rule.ENV_KEYWORD, _POPEN_ENV_INDEX
        )
    for name in ("create_subprocess_exec", "create_subprocess_shell"):
        target = _Target(f"asyncio.{name}", _Rule.ENV_KEYWORD)
        table[f"asyncio.{name}"] = target
        table[f"asyncio.subprocess.{name}"] = target
    for qual, index in (
        ("pexpect.spawn", 7),
        ("pexpect.pty_spawn.spawn", 7),
        ("pexpect.run", 7),
        ("pexpect.popen_spawn.PopenSpawn", 6),
        ("ptyprocess.PtyProcess.spawn", 2),
    ):
        table[qual] = _Target(qual, _Rule.ENV_KEYWORD, index)
    for qual in ("os.system", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput"):
        table[qual] = _Target(qual, _Rule.NO_ENV)
    table["pty.spawn"] = _Target("pty.spawn", _Rule.NO_ENV)
    for name in ("execv", "execl", "execvp", "execlp", "spawnv", "spawnl", "spawnvp", "spawnlp"):
        table[f"os.{name}"] = _Target(f"os.{name}", _Rule.NO_VARIANT)
    for name in ("execve", "execle", "execvpe", "execlpe", "spawnve", "spawnle", "spawnvpe"):
        table[f"os.{name}"] = _Target(f"os.{name}", _Rule.ENV_VARIANT, -1)
    for name in ("spawnlpe", "posix_spawn", "posix_spawnp"):  # env is the last positional
        table[f"os.{name}"] = _Target(f"os.{name}", _Rule.ENV_VARIANT, -1)
    return table


_TARGETS: Mapping[str, _Target] = _targets()
_MODULE_ALIASES = {"posix": "os", "nt": "os"}
_PARENT_ENVIRON = frozenset({"os.environ", "os.environb"})

_Bindings = dict[str, frozenset[str]]
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _canonical(qual: str) -> str:
    head, _, rest = qual.partition(".")
    if head in _MODULE_ALIASES and rest:
        return f"{_MODULE_ALIASES[head]}.{rest}"
    return qual


def _qualnames(expr: ast.expr, bindings: _Bindings) -> frozenset[str]:
    """The dotted names an expression may denote (``sp.run`` → ``subprocess.run``)."""
    attrs: list[str] = []
    node = expr
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return frozenset()
    bases = bindings.get(node.id, frozenset())
    suffix = "".join(f".{attr}" for attr in reversed(attrs))
    return frozenset(_canonical(base + suffix) for base in bases)


def _scope_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of one scope, in source order, not descending into nested scopes."""
    stack = list(reversed(list(ast.iter_child_nodes(scope))))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _bind(local: dict[str, set[str]], name: str, qual: str) -> None:
    local.setdefault(name, set()).add(qual)


def _bind_import(node: ast.Import | ast.ImportFrom, local: dict[str, set[str]]) -> None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                _bind(local, alias.asname, alias.name)
            else:
                head = alias.name.split(".", 1)[0]
                _bind(local, head, head)
        return
    if node.level or not node.module:
        return  # a relative import is never the standard library
    module = node.module
    for alias in node.names:
        if alias.name == "*":
            for qual in _TARGETS:
                tail = qual[len(module) + 1 :]
                if qual.startswith(f"{module}.") and "." not in tail:
                    _bind(local, tail, qual)
        else:
            _bind(local, alias.asname or alias.name, f"{module}.{alias.name}")


def _scope_bindings(scope: ast.AST, parent: _Bindings) -> _Bindings:
    """``parent`` overlaid with what ``scope`` itself binds (a local name shadows)."""
    local: dict[str, set[str]] = {}
    assigns: list[tuple[list[ast.expr], ast.expr]] = []
    for node in _scope_nodes(scope):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            _bind_import(node, local)
        elif isinstance(node, ast.Assign):
            assigns.append((node.targets, node.value))
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            assigns.append(([node.target], node.value))
    merged: _Bindings = {**parent, **{k: frozenset(v) for k, v in local.items()}}
    for targets, value in assigns:
        quals = _qualnames(value, merged)
        if not quals:
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                merged[target.id] = merged.get(target.id, frozenset()) | quals
    return merged


def _is_parent_environ(expr: ast.expr, bindings: _Bindings) -> bool:
    """True for ``os.environ`` and its obvious copies and merges (iterative: no recursion)."""
    pending = [expr]
    while pending:
        node = pending.pop()
        if _qualnames(node, bindings) & _PARENT_ENVIRON:
            return True
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "copy" and not node.args:
                pending.append(func.value)
            elif isinstance(func, ast.Name) and func.id == "dict" and node.args:
                pending.append(node.args[0])
        elif isinstance(node, ast.Dict):
            pending.extend(v for k, v in zip(node.keys, node.values, strict=True) if k is None)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            pending.extend((node.left, node.right))
    return False


def _env_argument(call: ast.Call, index: int | None) -> ast.expr | None:
    """The ``env`` argument: the ``env=`` keyword, else the positional at ``index``."""
    for keyword in call.keywords:
        if keyword.arg == "env":
            return keyword.value
    if index is None or any(isinstance(arg, ast.Starred) for arg in call.args):
        return None
    if index == -1:
        return call.args[-1] if call.args else None
    return call.args[index] if len(call.args) > index else None


def _short(expr: ast.expr) -> str:
    try:
        text = ast.unparse(expr)
    except RecursionError:  # a pathologically deep expression
        return "..."
    return text if len(text) <= 40 else f"{text[:37]}..."


def _reason(target: _Target, call: ast.Call, bindings: _Bindings) -> str | None:
    """Why a call to ``target`` bypasses the factory, or None when it does not."""
    if target.rule is _Rule.NO_ENV:
        return REASON_NO_PARAM
    if target.rule is _Rule.NO_VARIANT:
        return REASON_NO_VARIANT.format(call=target.call)
    env = _env_argument(call, target.env_index)
    if env is None:
        if target.rule is _Rule.ENV_VARIANT:
            return None  # a splat or an odd call: the env is there, just not visible
        splats = [k.value for k in call.keywords if k.arg is None]
        if splats:
            return REASON_SPLAT.format(src=_short(splats[0]))
        return REASON_MISSING
    if isinstance(env, ast.Constant) and env.value is None:
        return REASON_NONE
    if _is_parent_environ(env, bindings):
        return REASON_ENVIRON
    return None


def _allow_lines(source: str) -> frozenset[int]:
    """The lines holding an ``# envscope: allow-inherit`` comment."""
    if "allow-inherit" not in source:
        return frozenset()
    found: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT and _ALLOW_RE.search(token.string):
                found.add(token.start[0])
    except (tokenize.TokenError, SyntaxError):  # pragma: no cover - ast accepted the source
        return frozenset(
            n for n, line in enumerate(_LINE_BREAK.split(source), 1) if _ALLOW_RE.search(line)
        )
    return frozenset(found)


def _column(lines: Sequence[str], line: int, col_offset: int) -> int:
    """A 1-based character column from ast's UTF-8 byte offset."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    if text.isascii():
        return col_offset + 1
    return len(text.encode("utf-8")[:col_offset].decode("utf-8", errors="replace")) + 1


def check_source(source: str, path: str) -> list[SpawnSite]:
    """The spawn sites in one Python source text, in source order.

    Raises ``SyntaxError`` (``ValueError`` for NUL bytes before Python 3.12,
    ``RecursionError`` or ``MemoryError`` for very deeply nested code) when
    the source does not parse; ``path`` only names it in the results.
    """
    tree = ast.parse(source, filename=path)
    allow = _allow_lines(source)
    lines = _LINE_BREAK.split(source)
    sites: list[SpawnSite] = []
    stack: list[tuple[ast.AST, _Bindings]] = [(tree, _scope_bindings(tree, {}))]
    while stack:
        node, bindings = stack.pop()
        if isinstance(node, ast.Call):
            site = _site(node, bindings, path, lines, allow)
            if site is not None:
                sites.append(site)
        for child in ast.iter_child_nodes(node):
            inner = _scope_bindings(child, bindings) if isinstance(child, _SCOPES) else bindings
            stack.append((child, inner))
    sites.sort(key=lambda s: (s.line, s.col, s.call))
    return sites


def _site(
    node: ast.Call,
    bindings: _Bindings,
    path: str,
    lines: Sequence[str],
    allow: frozenset[int],
) -> SpawnSite | None:
    quals = sorted(q for q in _qualnames(node.func, bindings) if q in _TARGETS)
    if not quals:
        return None
    target = _TARGETS[quals[0]]
    reason = _reason(target, node, bindings)
    if reason is None:
        return None
    end = node.end_lineno or node.lineno
    allowed = any(n in allow for n in range(node.lineno, end + 1))
    col = _column(lines, node.lineno, node.col_offset)
    return SpawnSite(path, node.lineno, col, target.call, reason, allowed)


def _python_files(paths: Sequence[str], errors: list[str]) -> Iterator[str]:
    """Named files as given; directories walked for ``*.py`` (pruning ``SKIP_DIRS``)."""

    def on_error(exc: OSError) -> None:
        errors.append(f"{exc.filename}: cannot list: {exc.strerror or type(exc).__name__}")

    for path in paths:
        try:
            mode = os.stat(path).st_mode
        except OSError as exc:
            errors.append(f"{path}: cannot read: {exc.strerror or type(exc).__name__}")
            continue
        if not stat.S_ISDIR(mode):
            yield path
            continue
        for root, dirnames, filenames in os.walk(path, onerror=on_error):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            for name in sorted(filenames):
                full = os.path.join(root, name)
                if name.endswith(".py") and os.path.isfile(full):
                    yield full


MAX_SOURCE_BYTES = 64 * 1024 * 1024
"""Largest Python source ``check-spawns`` reads (a bigger file is an error naming it)."""


def _read_source(path: str) -> str:
    """A source file through envscope's one non-blocking reader (never hangs on a FIFO)."""
    data = read_regular_file(path, MAX_SOURCE_BYTES)
    if data is None:
        raise OSError(0, "not a regular file", path)
    if len(data) > MAX_SOURCE_BYTES:
        raise OSError(0, f"larger than {MAX_SOURCE_BYTES} bytes", path)
    text = data.decode("utf-8-sig")
    return text.replace("\r\n", "\n").replace("\r", "\n")  # as open()'s universal newlines


def check_paths(paths: Sequence[str]) -> tuple[list[SpawnSite], list[str]]:
    """Check files and directory trees; returns the sites and one error per unchecked file.

    A file that cannot be read, is not UTF-8 or does not parse is an error
    string naming it (and the line, for a syntax error), never an exception.
    """
    sites: list[SpawnSite] = []
    errors: list[str] = []
    seen: set[str] = set()
    for path in _python_files(paths, errors):
        key = os.path.normpath(path)
        if key in seen:
            continue
        seen.add(key)
        try:
            sites.extend(check_source(_read_source(path), path))
        except SyntaxError as exc:
            where = path if exc.lineno is None else f"{path}:{exc.lineno}"
            errors.append(f"{where}: cannot parse: {exc.msg}")
        except UnicodeDecodeError as exc:
            errors.append(f"{path}: not valid UTF-8 at byte {exc.start}")
        except OSError as exc:
            errors.append(f"{path}: cannot read: {exc.strerror or type(exc).__name__}")
        except ValueError as exc:  # NUL bytes, on Pythons before 3.12
            errors.append(f"{path}: cannot parse: {exc}")
        except (RecursionError, MemoryError) as exc:  # how the parser refuses very deep code
            errors.append(f"{path}: cannot parse: too deeply nested ({type(exc).__name__})")
    sites.sort(key=lambda s: (s.path, s.line, s.col))
    return sites, errors


def _plural(count: int, one: str, many: str) -> str:
    return one if count == 1 else many


def format_spawn_sites(
    sites: Sequence[SpawnSite], errors: Sequence[str], *, show_allowed: bool = False
) -> str:
    """The report: one ``path:line:col: call: reason`` line per finding, errors, a summary."""
    lines = [str(site) for site in sites if show_allowed or not site.allowed]
    lines.extend(f"error: {error}" for error in errors)
    bypass = sum(1 for site in sites if not site.allowed)
    allowed = len(sites) - bypass
    summary = (
        f"{bypass} spawn {_plural(bypass, 'site bypasses', 'sites bypass')} the factory "
        f"({allowed} allowed)"
    )
    if errors:
        summary += f"; {len(errors)} {_plural(len(errors), 'file', 'files')} could not be checked"
    lines.append(summary)
    return "\n".join(lines) + "\n"


def exit_status(sites: Sequence[SpawnSite], errors: Sequence[str]) -> int:
    """The recommended exit code: 2 when a file could not be checked, 1 on a finding, else 0."""
    if errors:
        return 2
    return 1 if any(not site.allowed for site in sites) else 0
