"""A static check for spawn sites that bypass the envscope factory.

A host runs this in its own CI (``envscope check-spawns PATH...``): it parses
Python files with ``ast`` (never imports or runs them) and reports every call
that starts a child process whose environment does not come from an explicit
``env``:

- ``subprocess.Popen/run/call/check_call/check_output`` and
  ``asyncio.create_subprocess_exec/create_subprocess_shell`` (and
  ``pexpect.spawn/run``, ``pexpect.popen_spawn.PopenSpawn``,
  ``ptyprocess.PtyProcess.spawn``) without an ``env=`` argument, with an env
  that may be ``None`` (the default: the child inherits), or with one that
  may be ``os.environ`` or a copy or merge of it;
- a ``**kwargs`` splat without ``env=`` is reported too: it is not proof that
  ``env`` is set;
- calls that take no environment at all: ``os.system``, ``os.popen``,
  ``subprocess.getoutput/getstatusoutput``, ``pty.spawn``, and the ``os.exec*``
  and ``os.spawn*`` functions without the ``e`` suffix;
- ``os.exec*e``/``os.spawn*e``/``os.posix_spawn[p]`` are fine unless their env
  argument may be ``os.environ`` or a copy of it.

Names and values are resolved by ``_spawn_scope`` (imports, assignments,
tuple and walrus assignments, per scope, generously: a binding anywhere in a
scope counts everywhere in it). The exact list of covered and uncovered forms
is the table in docs/cli.md, each row a test.

Source is decoded exactly as Python decodes it (``tokenize.detect_encoding``:
the BOM, a PEP 263 coding cookie, else UTF-8), so a cookie such as utf-7
cannot hide a call from the check that Python would run.

A deliberate exception carries the comment ``# envscope: allow-inherit`` on
any line of the call; it is reported with ``allowed=True`` and is not a
finding.

Everything here is pure except ``check_paths``, which reads the files.
"""

from __future__ import annotations

import ast
import enum
import io
import os
import re
import tokenize
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from envscope.files._fs import read_regular_file
from envscope.tools._spawn_files import (
    SKIP_DIRS,
    CheckError,
    cannot,
    printable,
    python_files,
)
from envscope.tools._spawn_scope import (
    Scope,
    Work,
    analyse,
    may_hold_environ,
    may_hold_none,
    qualnames,
)

__all__ = [
    "ALLOW_COMMENT",
    "SKIP_DIRS",
    "SpawnSite",
    "check_paths",
    "check_source",
    "exit_status",
    "format_spawn_sites",
    "spawn_sites_json",
]

ALLOW_COMMENT = "# envscope: allow-inherit"

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


@dataclass(frozen=True, slots=True)
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
        return f"{printable(self.path)}:{self.line}:{self.col}: {self.call}: {self.reason}{tail}"


class _Rule(enum.Enum):
    ENV_KEYWORD = "env-keyword"  # must pass env= (keyword, or positionally at env_index)
    NO_ENV = "no-env"  # has no env parameter at all
    NO_VARIANT = "no-variant"  # os.exec*/spawn* without the e suffix
    ENV_VARIANT = "env-variant"  # env is the last positional (or env=)


@dataclass(frozen=True, slots=True)
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


def _reason(target: _Target, call: ast.Call, scope: Scope, work: Work) -> str | None:
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
    if may_hold_none(env, scope, work):
        return REASON_NONE
    if may_hold_environ(env, scope, work):
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


def check_source(source: str | bytes, path: str, *, work: Work | None = None) -> list[SpawnSite]:
    """The spawn sites in one Python source (text, or a file's bytes), in source order.

    Bytes are parsed by Python's own compiler, so the tree is exactly what
    Python would run whatever the encoding (see ``source_text``). Raises
    ``SyntaxError`` (``ValueError`` for NUL bytes before Python 3.12,
    ``UnicodeDecodeError``/``LookupError`` for bytes no codec reads,
    ``RecursionError`` or ``MemoryError`` for very deeply nested code) when
    the source does not parse; ``path`` only names it in the results. ``work``,
    when given, counts the analysis steps (linear in the size of the tree).
    """
    if isinstance(source, bytes):
        tree, source = _parse_bytes(source, path)
    else:
        tree = ast.parse(source, filename=path)
    counter = Work() if work is None else work
    allow = _allow_lines(source)
    lines = _LINE_BREAK.split(source)
    sites: list[SpawnSite] = []
    for node, scope in analyse(tree, _TARGETS, counter):
        site = _site(node, scope, counter, path, lines, allow)
        if site is not None:
            sites.append(site)
    sites.sort(key=lambda s: (s.line, s.col, s.call))
    return sites


def _site(
    node: ast.Call,
    scope: Scope,
    work: Work,
    path: str,
    lines: Sequence[str],
    allow: frozenset[int],
) -> SpawnSite | None:
    quals = sorted(q for q in qualnames(node.func, scope, work) if q in _TARGETS)
    if not quals:
        return None
    target = _TARGETS[quals[0]]
    reason = _reason(target, node, scope, work)
    if reason is None:
        return None
    end = node.end_lineno or node.lineno
    allowed = any(n in allow for n in range(node.lineno, end + 1))
    col = _column(lines, node.lineno, node.col_offset)
    return SpawnSite(path, node.lineno, col, target.call, reason, allowed)


MAX_SOURCE_BYTES = 16 * 1024 * 1024


def source_text(data: bytes) -> tuple[str, UnicodeDecodeError | None]:
    """The text of a source file as Python decodes it: BOM, PEP 263 cookie, else UTF-8.

    Used for the allow comments and the columns; the tree itself always comes
    from the compiler. Bytes the codec rejects are replaced (CPython accepts
    some in comments) and the decoding error is returned beside the text.
    Raises ``SyntaxError`` for a bad or unknown cookie and ``LookupError`` for
    a codec that is not a text encoding, where ``compile`` refuses too.
    """
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    try:
        return data.decode(encoding), None
    except UnicodeDecodeError as exc:
        return data.decode(encoding, errors="replace"), exc


def _parse_bytes(data: bytes, path: str) -> tuple[ast.Module, str]:
    """The compiler's tree of ``data`` and the text for comments and columns."""
    try:
        tree = ast.parse(data, filename=path)
    except SyntaxError:  # say why in our words where the decoding is the cause
        _, undecodable = source_text(data)  # may raise the cookie's SyntaxError/LookupError
        if undecodable is not None:
            raise undecodable from None
        raise
    try:
        text, _ = source_text(data)
    except SyntaxError:  # the stdlib refuses an undecodable first line that CPython accepts
        text = data.decode("utf-8", errors="replace")
    return tree, text


def _read_source(path: str) -> bytes:
    """The bytes of a regular file (never blocks on a FIFO or a device)."""
    data = read_regular_file(path, MAX_SOURCE_BYTES)
    if data is None:
        raise OSError(0, "not a regular file", path)
    if len(data) > MAX_SOURCE_BYTES:
        raise OSError(0, f"larger than {MAX_SOURCE_BYTES} bytes", path)
    return data


def _identity(path: str) -> tuple[int, int] | str:
    try:
        info = os.stat(path)
    except OSError:
        return os.path.normpath(path)
    return (info.st_dev, info.st_ino)


def _decode_error(path: str, exc: UnicodeDecodeError) -> CheckError:
    codec = "UTF-8" if exc.encoding.replace("_", "-").startswith("utf-8") else exc.encoding
    return CheckError(path, f"not valid {codec} at byte {exc.start}")


def check_paths(
    paths: Sequence[str], *, exclude: Sequence[str] = ()
) -> tuple[list[SpawnSite], list[CheckError]]:
    """Check files and directory trees; returns the sites and one error per unchecked file.

    A file that cannot be read, decoded or parsed is an error string naming it
    (and the line, for a syntax error), never an exception. A file reached by
    two paths (a symlink, a symlinked directory) is checked once. Under a
    directory, virtualenvs (a ``pyvenv.cfg``), ``SKIP_DIRS``, what
    ``.gitignore`` ignores and ``exclude`` patterns are left out; a file
    named explicitly is always checked.
    """
    sites: list[SpawnSite] = []
    errors: list[CheckError] = []
    seen: set[tuple[int, int] | str] = set()
    for path in python_files(paths, errors, exclude):
        key = _identity(path)
        if key in seen:
            continue
        seen.add(key)
        try:
            sites.extend(check_source(_read_source(path), path))
        except SyntaxError as exc:
            message = f"cannot parse: {printable(str(exc.msg))}"
            errors.append(CheckError(path, message, exc.lineno or None))
        except UnicodeDecodeError as exc:
            errors.append(_decode_error(path, exc))
        except LookupError:  # a coding cookie naming a codec that is not a text encoding
            errors.append(
                CheckError(path, "cannot decode: its coding cookie names no text encoding")
            )
        except OSError as exc:
            errors.append(cannot(path, "read", exc))
        except ValueError as exc:  # NUL bytes, on Pythons before 3.12
            errors.append(CheckError(path, f"cannot parse: {printable(str(exc))}"))
        except (RecursionError, MemoryError) as exc:  # how the parser refuses very deep code
            errors.append(
                CheckError(path, f"cannot parse: too deeply nested ({type(exc).__name__})")
            )
    sites.sort(key=lambda s: (s.path, s.line, s.col))
    return sites, errors


def _plural(count: int, one: str, many: str) -> str:
    return one if count == 1 else many


def format_spawn_sites(
    sites: Sequence[SpawnSite], errors: Sequence[str], *, show_allowed: bool = False
) -> str:
    """The report: one ``path:line:col: call: reason`` line per finding, and a summary.

    The errors are counted here; the command line prints each on stderr.
    """
    lines = [str(site) for site in sites if show_allowed or not site.allowed]
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


def _error_json(error: str) -> dict[str, object]:
    """A file not checked as ``{path, line, message}`` (a plain string: its text as message)."""
    if isinstance(error, CheckError):
        return error.as_json()
    return {"path": None, "line": None, "message": error}


def spawn_sites_json(
    sites: Sequence[SpawnSite], errors: Sequence[str], *, show_allowed: bool = False
) -> dict[str, object]:
    """The report as JSON: ``sites`` (path, line, col, call, reason, allowed) and ``errors``."""
    shown = [site for site in sites if show_allowed or not site.allowed]
    return {
        "sites": [
            {
                "path": s.path,
                "line": s.line,
                "col": s.col,
                "call": s.call,
                "reason": s.reason,
                "allowed": s.allowed,
            }
            for s in shown
        ],
        "errors": [_error_json(e) for e in errors],
        "bypassing": sum(1 for site in sites if not site.allowed),
        "allowed": sum(1 for site in sites if site.allowed),
    }
