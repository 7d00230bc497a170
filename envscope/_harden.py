"""Opt-in hardening of the host process itself: ``harden_process()``.

envscope keeps secrets out of a child's *environment*. A child running as the
same user can still read the host's own environment and memory through
``/proc/<host pid>/environ`` and ``/proc/<host pid>/mem``, or attach with
``ptrace``, unless the host is marked non-dumpable. ``harden_process()`` does
that on Linux with ``prctl(PR_SET_DUMPABLE, 0)``:

- other processes of the same (non-root) user can no longer open the host's
  ``/proc/<pid>/environ``, ``mem``, ``maps`` … or ``ptrace`` it (root, or a
  process with ``CAP_SYS_PTRACE``, still can);
- the process writes no core dump.

The flag belongs to the process and is reset by ``execve`` of a normal
binary, so children are not affected: a child's environment is whatever
envscope built for it. Call it once, early (before secrets are loaded), in
the host process; it is never called implicitly.

Outcomes (decision: quiet where the feature does not exist, loud where it
failed):

- Linux: returns ``True`` once the flag is set; raises ``OSError`` (with the
  ``errno`` of ``prctl``) if the kernel refused — the host asked for
  hardening, and carrying on unhardened without saying so would fail open.
- any other platform: a documented no-op that returns ``False``.

``process_dumpable()`` reads the flag back (``None`` off Linux).
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Protocol

__all__ = ["harden_process", "process_dumpable"]

PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4


class _Prctl(Protocol):
    def __call__(self, option: int, arg2: int, arg3: int, arg4: int, arg5: int, /) -> int: ...


@functools.cache
def _prctl() -> _Prctl:
    """libc's ``prctl``, loaded once, with errno captured by ctypes."""
    import ctypes  # on first use: keeps ``import envscope`` cheap

    libc = ctypes.CDLL(None, use_errno=True)
    fn = libc.prctl
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl: _Prctl = fn
    return prctl


def _is_linux() -> bool:
    return sys.platform.startswith("linux")


def _call(option: int, arg2: int = 0) -> int:
    import ctypes

    ctypes.set_errno(0)
    result = _prctl()(option, arg2, 0, 0, 0)
    if result == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}) failed: {os.strerror(err)}")
    return result


def harden_process() -> bool:
    """Mark this process non-dumpable (Linux); True when done, False where unsupported.

    Raises ``OSError`` when Linux refuses ``prctl(PR_SET_DUMPABLE, 0)``.
    """
    if not _is_linux():
        return False
    _call(PR_SET_DUMPABLE, 0)
    return True


def process_dumpable() -> bool | None:
    """Whether this process is dumpable (``PR_GET_DUMPABLE``); None off Linux."""
    if not _is_linux():
        return None
    return _call(PR_GET_DUMPABLE) != 0
