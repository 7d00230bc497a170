"""The C environment an inherited spawn hands its child, read without racing ``setenv``.

A spawn with ``env=None`` (``subprocess``, ``os.system``, ``os.execv``) passes
the C ``environ`` array, not ``os.environ``: ``os.putenv`` and ``os.unsetenv``
change the first and not the second. Walking ``environ`` through ``ctypes``
while another thread calls ``setenv`` races (an entry read twice can be NULL
the second time, an array moved by ``realloc`` is freed under the reader), so
the guard never walks it per spawn. Instead:

- ``os.environ`` is the source of truth for every name whose C value cannot
  differ from it: Python keeps the two equal for every write made through
  ``os.environ``.
- The names that can differ are recorded: every raw ``os.putenv`` and
  ``os.unsetenv`` (their audit events, from a caller other than
  ``os.environ`` itself), and the names that already differed when the guard
  was installed (one walk, at install).
- For those names alone, the value is read with ``getenv`` called through
  ``ctypes.pythonapi``, which holds the GIL: no Python thread can run
  ``setenv`` during the read, so the value is the C value as it stands, the
  first entry of the name (what the child's libc returns).

The limit: a C extension calling ``setenv`` itself raises no audit event and
is seen only if it ran before the guard was installed (docs/guard.md).
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["C_ENVIRON", "ENV_WRITE_EVENTS", "CEnviron"]

ENV_WRITE_EVENTS = frozenset({"os.putenv", "os.unsetenv"})

# the functions through which os.environ writes the C environment itself
_ENVIRON_WRITERS = frozenset({os._Environ.__setitem__.__code__, os._Environ.__delitem__.__code__})


def _name(item: object) -> str | None:
    """A name as ``os.putenv`` got it (``bytes`` after its file-system conversion)."""
    if isinstance(item, bytes):
        return os.fsdecode(item)
    return item if isinstance(item, str) else None


def _walk_environ() -> dict[str, str]:
    """One walk of the C ``environ`` array, first entry of each name (install time only).

    Each entry is read once (a second read could see another thread's change);
    a NULL ends the walk. Racing a ``setenv`` here can miss a name, which the
    audit events then record from the install on.
    """
    try:
        entries = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.pythonapi, "environ")
    except (OSError, ValueError):  # pragma: no cover - a libc without an exported environ
        return {}
    out: dict[str, str] = {}
    i = 0
    while True:
        entry = entries[i]
        if not isinstance(entry, bytes):
            return out
        key, sep, value = os.fsdecode(entry).partition("=")
        if sep:
            out.setdefault(key, value)
        i += 1


def _getenv_holding_the_gil() -> Callable[[bytes], bytes | None] | None:
    """libc's ``getenv`` called with the GIL held (``ctypes.pythonapi`` is a ``PyDLL``)."""
    try:
        getenv = ctypes.pythonapi.getenv
    except AttributeError:  # pragma: no cover - a libc without getenv in the global namespace
        return None
    getenv.argtypes = [ctypes.c_char_p]
    getenv.restype = ctypes.c_char_p
    return getenv


class CEnviron:
    """The names whose C value may differ from ``os.environ``, and their C values.

    ``seed()`` records the names that differ now (the guard calls it once,
    right after installing its hook, so no write falls between the two);
    ``reset()`` is the seam: it forgets every recorded name and seeds again.
    A recorded name is never forgotten otherwise: it costs one ``getenv`` per
    inherited spawn and is always read exactly.
    """

    __slots__ = ("_getenv", "names")

    def __init__(self) -> None:
        self.names: dict[str, None] = {}  # insertion-ordered set; dict ops are atomic
        self._getenv: Callable[[bytes], bytes | None] | None = None

    def seed(self) -> None:
        """Record the names that differ now (one walk) and start reading with ``getenv``."""
        if os.name != "posix":  # pragma: no cover - Windows: os.environ is the process env
            return
        self._getenv = _getenv_holding_the_gil()
        c_env = _walk_environ()
        python_env = dict(os.environ)
        differ = {k for k, v in c_env.items() if python_env.get(k) != v}
        differ.update(k for k in python_env if k not in c_env)
        for name in sorted(differ):
            self.names[name] = None

    def reset(self) -> None:
        """Forget every recorded name, then ``seed()`` again (the test seam)."""
        self.names = {}
        self.seed()

    def record(self, args: tuple[object, ...]) -> None:
        """An ``os.putenv``/``os.unsetenv`` event: a raw write records its name."""
        try:
            caller = sys._getframe(2).f_code
        except ValueError:  # called from C with no Python caller: a raw write
            caller = None
        if caller in _ENVIRON_WRITERS:
            return  # os.environ's own write: the two stay equal
        name = _name(args[0]) if args else None
        if name is not None:
            self.names[name] = None

    def inherited(self, python_env: dict[str, str]) -> dict[str, str]:
        """The env an ``env=None`` child gets: ``python_env`` with each recorded name's C value."""
        getenv = self._getenv
        if getenv is None or not self.names:
            return python_env
        child = dict(python_env)
        for name in list(self.names):
            value = getenv(os.fsencode(name)) if "\0" not in name else None
            if value is None:
                child.pop(name, None)
            else:
                child[name] = os.fsdecode(value)
        return child


C_ENVIRON = CEnviron()
