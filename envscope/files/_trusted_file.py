"""Read the small files envscope is told about (config, catalog, key file), and judge their trust.

Every such file is read through ``RealFileSystem.read_regular``: it never
blocks (a FIFO, a socket, a device or a directory is "not a regular file") and
never reads more than ``max_bytes + 1`` bytes, so an oversized file is refused,
never truncated.

The **trust rule** (like git's ``safe.directory`` and ssh's ``StrictModes``):
a file envscope was not explicitly given must be owned by the invoking user
(the effective uid) or root, and not writable by group or others; so must the
directory it sits in (the directory of the path as given and of its resolved
target). ``untrusted_reason`` says which rule a path breaks, or ``None``. The
check is POSIX only (Windows has no owner/mode bits to read this way).

Every error is raised outside the ``except`` block that saw the ``OSError``:
no envscope error carries another exception as its context.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import Protocol

from envscope.errors import FileError
from envscope.files._fs import RealFileSystem

__all__ = ["TRUST_RULE", "StatFn", "check_trusted", "read_file", "untrusted_reason"]

TRUST_RULE = "must be owned by you or root and not writable by group or others"


class _Stat(Protocol):
    @property
    def st_mode(self) -> int: ...
    @property
    def st_uid(self) -> int: ...


StatFn = Callable[[str], _Stat]
"""``os.stat`` (follows symlinks); a test passes a fake to play another owner."""


def _stat(path: str) -> _Stat:
    """``os.stat``: the one call the trust rule reads owners and modes with (a test seam)."""
    return os.stat(path)


def _euid() -> int:
    geteuid: Callable[[], int] | None = getattr(os, "geteuid", None)
    return geteuid() if geteuid is not None else 0


def _breaks(info: _Stat, euid: int) -> str | None:
    if info.st_uid not in (euid, 0):
        return f"owned by uid {info.st_uid}, not by you (uid {euid}) or root"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"writable by group or others (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def untrusted_reason(
    path: str, *, missing_ok: bool = False, euid: int | None = None, stat_fn: StatFn | None = None
) -> str | None:
    """Which trust rule ``path`` (or its directory) breaks; ``None`` if none.

    A path that cannot be stat-ed is untrusted too (the reason says why), except
    a missing file when ``missing_ok`` (its directories are still checked).
    """
    if "\x00" in path:  # no file has that name (``os.lstat`` raises ValueError): untrusted
        return "a path holding a NUL character"
    if os.name != "posix":  # pragma: no cover - no owner/mode bits on Windows
        return None
    uid = _euid() if euid is None else euid
    look: StatFn = _stat if stat_fn is None else stat_fn
    absolute = os.path.abspath(path)
    real = os.path.realpath(absolute)
    reason: str | None
    checks = [(real, "file")]
    for directory in dict.fromkeys((os.path.dirname(absolute), os.path.dirname(real))):
        checks.append((directory, "directory"))
    for where, what in checks:
        try:
            info = look(where)
        except FileNotFoundError:
            reason = None if missing_ok and what == "file" else "missing"
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
        else:
            reason = _breaks(info, uid)
        if reason is not None:
            return f"{what} {where} is {reason}" if what == "directory" else f"it is {reason}"
    return None


def read_file(
    path: str,
    *,
    max_bytes: int,
    error: Callable[[str, str], Exception],
    what: str,
) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``; ``error(path, message)`` otherwise.

    ``what`` names the file in messages ("config", "catalog", ...).
    """
    try:
        data = RealFileSystem().read_regular(path, max_bytes)
    except OSError as exc:
        reason: str | None = exc.strerror or type(exc).__name__
    else:
        reason = None
    if reason is not None:
        raise error(path, f"cannot read {what}: {reason}")
    if data is None:
        raise error(path, f"{what} is not a regular file")
    if len(data) > max_bytes:
        raise error(path, f"{what} is larger than {max_bytes} bytes")
    return data


def check_trusted(
    path: str, error: type[FileError], what: str, *, missing_ok: bool = False
) -> None:
    """Raise ``error`` naming the file and the rule when ``path`` is not trusted."""
    reason = untrusted_reason(path, missing_ok=missing_ok)
    if reason is not None:
        raise error(path, f"refusing a {what} that is not trusted: {reason} ({what} {TRUST_RULE})")
