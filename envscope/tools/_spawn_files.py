"""Which files ``check-spawns`` reads: named files, and ``*.py`` under named directories.

The walk follows directory symlinks, each directory once by identity (a loop
ends), and prunes what is not the host's own code: ``SKIP_DIRS`` by name, any
directory holding a ``pyvenv.cfg`` (a virtualenv of any name), what
``.gitignore`` ignores and ``--exclude`` patterns (``_ignore``). A file named
explicitly is always read. Errors are strings naming the path, never
exceptions: the caller reports each one and exits 2.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence

from envscope.tools._ignore import IgnoreRules, read_gitignore, repository_root

__all__ = ["SKIP_DIRS", "VENV_MARKER", "cannot", "printable", "python_files"]

SKIP_DIRS = frozenset(
    {".venv", "__pycache__", ".git", "node_modules", ".tox", ".nox", "site-packages", "build"}
)
VENV_MARKER = "pyvenv.cfg"  # a virtualenv of any name (PEP 405)


def printable(text: str) -> str:
    """``text`` with control characters, NUL and lone surrogates escaped (for a terminal)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def cannot(path: str, what: str, exc: OSError) -> str:
    return f"{printable(path)}: cannot {what}: {exc.strerror or type(exc).__name__}"


def _skipped_dir(path: str, name: str, rules: IgnoreRules) -> bool:
    """A directory pruned from the walk: a known name, a virtualenv, or an ignored one."""
    if name in SKIP_DIRS or rules.ignored(path, is_dir=True):
        return True
    return os.path.lexists(os.path.join(path, VENV_MARKER))


def _walk(
    top: str, seen_dirs: set[tuple[int, int]], errors: list[str], rules: IgnoreRules
) -> Iterator[str]:
    """``*.py`` under ``top``, following directory symlinks; each directory once (no loops).

    A ``*.py`` entry that cannot be stat'ed (a dangling or looping symlink) is
    an error, as is one that is not a regular file (reported when read).
    Each directory's ``.gitignore`` applies below it.
    """
    pending = [(top, rules.extend(read_gitignore(top), top))]
    while pending:
        directory, here = pending.pop()
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            errors.append(cannot(directory, "list", exc))
            continue
        subdirs: list[tuple[str, IgnoreRules]] = []
        for entry in entries:
            try:
                info = os.stat(entry.path)
            except OSError as exc:
                if entry.name.endswith(".py") and not here.ignored(entry.path, is_dir=False):
                    errors.append(cannot(entry.path, "read", exc))
                continue  # a broken link that is not Python source: nothing to check
            if stat.S_ISDIR(info.st_mode):
                identity = (info.st_dev, info.st_ino)
                if identity in seen_dirs or _skipped_dir(entry.path, entry.name, here):
                    continue
                seen_dirs.add(identity)
                subdirs.append((entry.path, here.extend(read_gitignore(entry.path), entry.path)))
            elif entry.name.endswith(".py") and not here.ignored(entry.path, is_dir=False):
                yield entry.path
        pending.extend(reversed(subdirs))


def _root_rules(top: str, exclude: Sequence[str]) -> IgnoreRules:
    """The ``.gitignore`` rules from the repository root down to ``top``'s parent, then
    ``--exclude`` (relative to ``top``)."""
    rules = IgnoreRules()
    root = repository_root(top)
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
    return rules.extend(exclude, top)


def python_files(
    paths: Sequence[str], errors: list[str], exclude: Sequence[str] = ()
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
            errors.append(f"{printable(path)}: cannot read: not a valid path")
            continue
        if not stat.S_ISDIR(info.st_mode):
            yield path
            continue
        identity = (info.st_dev, info.st_ino)
        if identity not in seen_dirs:
            seen_dirs.add(identity)
            yield from _walk(path, seen_dirs, errors, _root_rules(path, exclude))
