"""Which directories and files ``check-spawns`` leaves out: gitignore rules, in git's syntax.

Rules come from ``.gitignore`` files (each relative to its own directory:
the ones from the repository root, the nearest ancestor with a ``.git``,
down to a named directory, then every one met while walking) and from
``--exclude`` patterns (relative to each named directory). The syntax is
git's (gitignore(5)): blank lines and ``#`` comments skipped, ``!`` re-includes,
a trailing ``/`` matches directories only, a pattern holding another ``/`` is
anchored to its base, ``*``/``?``/``[...]`` never match ``/``, and ``**``
matches across directories. The last matching rule wins. An unreadable
``.gitignore`` is skipped: that only makes the check wider, never narrower.

Pure except ``read_gitignore``, which reads one file without blocking.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from envscope.files._fs import read_regular_file

__all__ = ["IgnoreRules", "read_gitignore", "repository_root"]

MAX_GITIGNORE_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class _Rule:
    base: str  # the directory the rule is relative to (normalised)
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def _class(glob: str, start: int) -> tuple[str, int]:
    """A ``[...]`` character class as a regex, and the index after it (or a literal ``[``)."""
    end = start + 1
    if end < len(glob) and glob[end] in "!^":
        end += 1
    if end < len(glob) and glob[end] == "]":
        end += 1
    end = glob.find("]", end)
    if end < 0:
        return re.escape("["), start + 1
    body = glob[start + 1 : end]
    if body[:1] in ("!", "^"):
        body = "^" + body[1:]
    return "[" + body.replace("\\", "\\\\") + "]", end + 1


def _translate(glob: str) -> str:
    """A gitignore glob (already split from its flags) as a regex over a relative path."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            piece, i = _class(glob, i)
            out.append(piece)
        elif c == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def _rule(line: str, base: str) -> _Rule | None:
    """One gitignore line as a rule, or None for a blank line or a comment."""
    line = line.rstrip("\r")
    while line.endswith(" ") and not line.endswith("\\ "):
        line = line[:-1]
    if not line or line.startswith("#"):
        return None
    negate = line.startswith("!")
    if negate or line.startswith("\\"):
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    pattern = _translate(line)
    if not anchored:
        pattern = "(?:.*/)?" + pattern
    return _Rule(base, re.compile(pattern + r"\Z", re.S), negate, dir_only)


@dataclass(frozen=True, slots=True)
class IgnoreRules:
    """An ordered set of gitignore rules; ``ignored`` answers for one path."""

    rules: tuple[_Rule, ...] = ()

    def extend(self, lines: Iterable[str], base: str) -> IgnoreRules:
        """These rules plus ``lines``, relative to ``base`` (later rules win)."""
        base = os.path.normpath(base)
        added = tuple(r for r in (_rule(line, base) for line in lines) if r is not None)
        return self if not added else IgnoreRules(self.rules + added)

    def ignored(self, path: str, *, is_dir: bool) -> bool:
        """Whether the last rule matching ``path`` (under its base) ignores it."""
        path = os.path.normpath(path)
        verdict = False
        for rule in self.rules:
            if rule.dir_only and not is_dir:
                continue
            rel = os.path.relpath(path, rule.base)
            if rel == "." or rel.startswith(".."):
                continue
            if rule.regex.match(rel.replace(os.sep, "/")):
                verdict = not rule.negate
        return verdict


def read_gitignore(directory: str) -> list[str]:
    """The lines of ``directory/.gitignore`` (none when it is missing or cannot be read)."""
    try:
        data = read_regular_file(os.path.join(directory, ".gitignore"), MAX_GITIGNORE_BYTES)
    except (OSError, ValueError):
        return []
    if data is None:
        return []
    return data.decode("utf-8", "surrogateescape").split("\n")


def repository_root(directory: str) -> str | None:
    """The nearest directory at or above ``directory`` holding ``.git``, or None."""
    current = os.path.abspath(directory)
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
