"""Which files ``check-spawns`` reads: named files, and ``*.py`` under named directories.

The walk follows directory symlinks, each directory once by identity (a loop
ends), and prunes what is not the host's own code: ``SKIP_DIRS`` by name, any
directory holding a ``pyvenv.cfg`` (a virtualenv of any name), what
``.gitignore`` ignores (``_ignore``) unless git tracks it (git's own rule:
``_git_index``), and ``--exclude`` patterns (tracked or not: the user said
so). A file named explicitly is always read. Errors are strings naming the
path, never exceptions: the caller reports each one and exits 2.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from envscope.tools._git_index import Tracked, tracked
from envscope.tools._ignore import IgnoreRules, read_gitignore, repository_root

__all__ = ["SKIP_DIRS", "VENV_MARKER", "CheckError", "cannot", "printable", "python_files"]

SKIP_DIRS = frozenset(
    {".venv", "__pycache__", ".git", "node_modules", ".tox", ".nox", "site-packages", "build"}
)
VENV_MARKER = "pyvenv.cfg"  # a virtualenv of any name (PEP 405)


def printable(text: str) -> str:
    """``text`` with control characters, NUL and lone surrogates escaped (for a terminal)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


class CheckError(str):
    """A file the check could not read, decode or parse: its text, with its parts.

    The text is ``PATH[:LINE]: MESSAGE`` (the path made printable), what the
    command line prints; ``path``, ``line`` and ``message`` are what ``--json``
    and the CI formats give as an object. A ``str``, so it reads as before.
    """

    path: str
    line: int | None
    message: str

    def __new__(cls, path: str, message: str, line: int | None = None) -> CheckError:
        where = printable(path) if line is None else f"{printable(path)}:{line}"
        made = super().__new__(cls, f"{where}: {message}")
        made.path, made.line, made.message = path, line, message
        return made

    def as_json(self) -> dict[str, object]:
        """``{path, line, message}``."""
        return {"path": self.path, "line": self.line, "message": self.message}


def cannot(path: str, what: str, exc: OSError) -> CheckError:
    return CheckError(path, f"cannot {what}: {exc.strerror or type(exc).__name__}")


@dataclass(frozen=True, slots=True)
class _Outside:
    """What a walk leaves out besides ``.gitignore``: ``--exclude``, and what git tracks."""

    exclude: IgnoreRules
    tracked: Tracked | None

    def file(self, path: str, ignores: IgnoreRules, inside: bool) -> bool:
        """A ``*.py`` file left out: excluded, or ignored (``inside`` an ignored directory,
        or matched itself) and not tracked."""
        if self.exclude.ignored(path, is_dir=False):
            return True
        if not (inside or ignores.ignored(path, is_dir=False)):
            return False
        return self.tracked is None or not self.tracked.holds(path)

    def ignored_dir(self, path: str, ignores: IgnoreRules, inside: bool) -> bool:
        """Whether git ignores the directory: matched itself, or ``inside`` an ignored one."""
        return inside or ignores.ignored(path, is_dir=True)

    def directory(self, path: str, name: str, ignored: bool) -> bool:
        """A directory pruned: a known name, a virtualenv, excluded, or ignored and holding
        no tracked file."""
        if name in SKIP_DIRS or self.exclude.ignored(path, is_dir=True):
            return True
        if os.path.lexists(os.path.join(path, VENV_MARKER)):
            return True
        return ignored and (self.tracked is None or not self.tracked.holds_under(path))


def _walk(
    top: str,
    seen_dirs: set[tuple[int, int]],
    errors: list[CheckError],
    rules: IgnoreRules,
    outside: _Outside,
) -> Iterator[str]:
    """``*.py`` under ``top``, following directory symlinks; each directory once (no loops).

    A ``*.py`` entry that cannot be stat'ed (a dangling or looping symlink) is
    an error, as is one that is not a regular file (reported when read).
    Each directory's ``.gitignore`` applies below it.
    """
    # (directory, the rules in force there, whether it lies in a directory git ignores:
    # walked only for the tracked files it holds)
    pending = [(top, rules.extend(read_gitignore(top), top), False)]
    while pending:
        directory, here, inside = pending.pop()
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            errors.append(cannot(directory, "list", exc))
            continue
        subdirs: list[tuple[str, IgnoreRules, bool]] = []
        for entry in entries:
            try:
                info = os.stat(entry.path)
            except OSError as exc:
                if entry.name.endswith(".py") and not outside.file(entry.path, here, inside):
                    errors.append(cannot(entry.path, "read", exc))
                continue  # a broken link that is not Python source: nothing to check
            if stat.S_ISDIR(info.st_mode):
                identity = (info.st_dev, info.st_ino)
                ignored = outside.ignored_dir(entry.path, here, inside)
                if identity in seen_dirs or outside.directory(entry.path, entry.name, ignored):
                    continue
                seen_dirs.add(identity)
                rules_there = here.extend(read_gitignore(entry.path), entry.path)
                subdirs.append((entry.path, rules_there, ignored))
            elif entry.name.endswith(".py") and not outside.file(entry.path, here, inside):
                yield entry.path
        pending.extend(reversed(subdirs))


def _root_rules(top: str, exclude: Sequence[str]) -> tuple[IgnoreRules, _Outside]:
    """The ``.gitignore`` rules from the repository root down to ``top``'s parent, and
    ``--exclude`` (relative to ``top``) with what the repository tracks."""
    rules = IgnoreRules()
    root = repository_root(top)
    outside = _Outside(IgnoreRules().extend(exclude, top), None if root is None else tracked(root))
    if root is not None:
        chain: list[str] = []
        current = os.path.dirname(os.path.abspath(top))
        while len(current) >= len(root):
            chain.append(current)
            if current == root:
                break
            current = os.path.dirname(current)
        for directory in reversed(chain):
            rules = rules.extend(read_gitignore(directory), directory)
    return rules, outside


def python_files(
    paths: Sequence[str], errors: list[CheckError], exclude: Sequence[str] = ()
) -> Iterator[str]:
    """Named files as given; directories walked for ``*.py`` (pruning what is skipped)."""
    seen_dirs: set[tuple[int, int]] = set()
    for path in paths:
        try:
            info = os.stat(path)
        except OSError as exc:
            errors.append(cannot(path, "read", exc))
            continue
        except ValueError:  # NUL, or text the file system encoding cannot hold
            errors.append(CheckError(path, "cannot read: not a valid path"))
            continue
        if not stat.S_ISDIR(info.st_mode):
            yield path
            continue
        identity = (info.st_dev, info.st_ino)
        if identity not in seen_dirs:
            seen_dirs.add(identity)
            yield from _walk(path, seen_dirs, errors, *_root_rules(path, exclude))
