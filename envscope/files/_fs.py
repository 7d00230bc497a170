"""The file-system seam the manifest scanner reads through.

Everything the scanner learns about the disk goes through a ``FileSystem``:
one ``scandir`` per root, ``stat`` for each candidate manifest, and
``read_regular`` for the manifests it parses, plus the clock the file
timestamps are compared with. ``RealFileSystem`` is the real OS; tests use the
doubles in ``envscope.testing_fs`` (fault injection, call counting, a coarse
clock).

``read_regular_file`` is envscope's one reader of files: manifests (through
``RealFileSystem.read_regular``), dotenv files, ``envscope scan --plugin`` and
``check-spawns`` sources all read through it. It never blocks and never reads
what is not a regular file: it opens with ``O_RDONLY | O_NONBLOCK | O_NOCTTY |
O_CLOEXEC``, ``fstat``s the open descriptor, and returns ``None`` for a FIFO, a
directory, a device or a socket (opening a socket fails with ``ENXIO``, which
also means "not regular"). It reads at most ``max_bytes + 1`` bytes, so a
caller tells "too large" from "exactly the limit" by the length.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from dataclasses import dataclass
from typing import Protocol

__all__ = ["DirEntry", "FileSystem", "RealFileSystem", "StatResult", "read_regular_file"]

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_CHUNK = 64 * 1024


class StatResult(Protocol):
    """The part of ``os.stat_result`` the scanner uses (a fake may supply just these)."""

    @property
    def st_mode(self) -> int: ...
    @property
    def st_ino(self) -> int: ...
    @property
    def st_dev(self) -> int: ...
    @property
    def st_uid(self) -> int: ...
    @property
    def st_gid(self) -> int: ...
    @property
    def st_size(self) -> int: ...
    @property
    def st_mtime_ns(self) -> int: ...
    @property
    def st_ctime_ns(self) -> int: ...


@dataclass(slots=True, unsafe_hash=True)
class DirEntry:
    """One entry of a directory listing (a value: nothing assigns to one once built).

    ``is_dir`` follows symlinks (a symlink to a directory is a directory).
    The one record that is not ``frozen``: a listing makes one per entry on
    every stamped check, and a frozen dataclass costs 3.5x as much to build
    (625 ns against 173 ns, ``python -m timeit``); a NamedTuple costs 1.6x.
    """

    name: str
    path: str
    is_dir: bool
    is_symlink: bool


class SameFileError(OSError):
    """The file opened is the one the caller refused (the same device and inode)."""


def read_regular_file(
    path: str, max_bytes: int, *, refuse: os.stat_result | None = None
) -> bytes | None:
    """At most ``max_bytes + 1`` bytes of the regular file ``path``; ``None`` when it is not one.

    Never blocks: a FIFO, a directory, a device, a socket (or a symlink to one)
    is ``None``, found by ``fstat`` on the descriptor actually opened, so a
    file swapped after an earlier ``stat`` cannot fool it. When the file
    opened is ``refuse`` (same device and inode, however it was reached) it is
    a ``SameFileError``, decided on that same descriptor. Other failures
    raise ``OSError`` (``FileNotFoundError`` when ``path`` does not exist;
    ``EINVAL`` for a path holding NUL, where ``os.open`` raises ``ValueError``).
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket (or a device with no reader)
            return None
        raise
    except ValueError:  # "embedded null byte": no file has that name; fail as the OS would
        raise OSError(errno.EINVAL, "the path holds a NUL character", path) from None
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            return None
        if refuse is not None and os.path.samestat(opened, refuse):
            raise SameFileError(0, "the refused file", path)
        chunks: list[bytes] = []
        remaining = max_bytes + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, _CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class FileSystem(Protocol):
    """What the manifest scanner needs from a file system; errors are ``OSError`` with ``errno``."""

    def scandir(self, path: str) -> list[DirEntry]:
        """List a directory (one call per root)."""
        ...

    def stat(self, path: str, *, follow_symlinks: bool = True) -> StatResult:
        """``os.stat`` (``lstat`` when ``follow_symlinks`` is False)."""
        ...

    def read_regular(self, path: str, max_bytes: int) -> bytes | None:
        """At most ``max_bytes + 1`` bytes of a regular file; ``None`` when it is not one."""
        ...

    def now_ns(self) -> int:
        """The wall clock that file timestamps are compared with, in nanoseconds."""
        ...


class RealFileSystem:
    """The real OS, through ``os`` calls."""

    def scandir(self, path: str) -> list[DirEntry]:
        """One ``os.scandir``; an entry whose type cannot be read counts as a directory."""
        with os.scandir(path) as it:
            listed = list(it)
        listing = []
        for e in listed:
            try:
                is_symlink = e.is_symlink()
            except OSError:
                is_symlink = False
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = True  # fail closed: let the scanner try it and report what fails
            listing.append(DirEntry(e.name, e.path, is_dir, is_symlink))
        return listing

    def stat(self, path: str, *, follow_symlinks: bool = True) -> StatResult:
        """``os.stat`` (``lstat`` when ``follow_symlinks`` is False)."""
        return os.stat(path, follow_symlinks=follow_symlinks)

    def read_regular(self, path: str, max_bytes: int) -> bytes | None:
        """``read_regular_file``: ``None`` for anything but a regular file; ≤ max_bytes+1 bytes."""
        return read_regular_file(path, max_bytes)

    def now_ns(self) -> int:
        """``time.time_ns()``."""
        return time.time_ns()
