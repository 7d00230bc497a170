"""Which files git tracks, from the index itself: git's rule that tracked files are not ignored.

``check-spawns`` leaves out what ``.gitignore`` matches, but git never ignores
a file it tracks (gitignore(5)): a tracked ``settings_local.py`` under an
ignore pattern is still the project's code. ``tracked(root)`` reads
``ROOT/.git/index`` (or the one a ``.git`` file points to: a worktree, a
submodule) without running git, in index versions 2, 3 and 4
(https://git-scm.com/docs/index-format), and answers the tracked paths and
the directories holding them. An index it cannot read (missing, another hash
size, a version it does not know, cut short) is None: the caller then knows
no tracked file, which only makes the check narrower where a pattern matched.

Pure except ``tracked``, which reads the ``.git`` file and the index without blocking.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from envscope.files._fs import read_regular_file

__all__ = ["Tracked", "parse_index", "tracked"]

MAX_INDEX_BYTES = 256 * 1024 * 1024
_HEADER = 12
_FIXED = 62  # ctime, mtime, dev, ino, mode, uid, gid, size (40), SHA-1 (20), flags (2)
_EXTENDED = 0x4000


@dataclass(frozen=True, slots=True)
class Tracked:
    """The tracked paths of one repository (``/``-separated, relative to ``root``)."""

    root: str
    files: frozenset[str]
    dirs: frozenset[str]  # every directory that holds a tracked file, at any depth

    def _relative(self, path: str) -> str | None:
        rel = os.path.relpath(os.path.abspath(path), self.root)
        return None if rel == "." or rel.startswith("..") else rel.replace(os.sep, "/")

    def holds(self, path: str) -> bool:
        """Whether git tracks the file ``path``."""
        rel = self._relative(path)
        return rel is not None and rel in self.files

    def holds_under(self, path: str) -> bool:
        """Whether git tracks a file under the directory ``path``."""
        rel = self._relative(path)
        return rel is not None and rel in self.dirs


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """Git's offset varint (index v4's prefix length), and the position after it."""
    byte = data[at]
    at += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[at]
        at += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, at


def parse_index(data: bytes) -> frozenset[str] | None:
    """The paths a git index (versions 2–4, SHA-1) lists; None for anything else."""
    if len(data) < _HEADER or data[:4] != b"DIRC":
        return None
    version = int.from_bytes(data[4:8], "big")
    count = int.from_bytes(data[8:12], "big")
    if version not in (2, 3, 4):
        return None
    paths: list[str] = []
    previous = b""
    at = _HEADER
    try:
        for _ in range(count):
            start = at
            flags = int.from_bytes(data[at + 60 : at + 62], "big")
            at += _FIXED
            if version >= 3 and flags & _EXTENDED:
                at += 2
            if version == 4:
                strip, at = _varint(data, at)
                end = data.index(b"\0", at)
                if strip > len(previous):
                    return None
                name = previous[: len(previous) - strip] + data[at:end]
                at = end + 1
            else:
                end = data.index(b"\0", at)
                name = data[at:end]
                at = start + ((end - start) // 8 + 1) * 8  # 1 to 8 NULs pad the entry
            if at > len(data):
                return None
            previous = name
            paths.append(os.fsdecode(name))
    except (IndexError, ValueError):  # cut short: no NUL where a path ends
        return None
    return frozenset(paths)


def _git_dir(root: str) -> str | None:
    """``ROOT/.git``, or where a ``.git`` file (``gitdir: PATH``) points."""
    dot_git = os.path.join(root, ".git")
    if os.path.isdir(dot_git):
        return dot_git
    try:
        text = (read_regular_file(dot_git, 64 * 1024) or b"").decode("utf-8", "replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("gitdir:"):
            return os.path.join(root, line[len("gitdir:") :].strip())
    return None


def tracked(root: str) -> Tracked | None:
    """What the repository at ``root`` tracks, or None when its index cannot be read."""
    git_dir = _git_dir(root)
    if git_dir is None:
        return None
    try:
        data = read_regular_file(os.path.join(git_dir, "index"), MAX_INDEX_BYTES)
    except OSError:
        return None
    files = parse_index(data or b"")
    if files is None:
        return None
    dirs = {
        "/".join(parts[:i]) for parts in (f.split("/") for f in files) for i in range(1, len(parts))
    }
    return Tracked(os.path.abspath(root), files, frozenset(dirs))
