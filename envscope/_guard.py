"""``envscope.guard``: a runtime guard against spawns that bypass the factory (docs/guard.md).

One ``sys.addaudithook`` hook, installed by the first ``guard(...)`` call
and never removed (audit hooks cannot be). The hook reads a switch:
``guard(host, mode=...)`` again replaces it, ``mode="off"`` turns it off.

For the events that start a process (``subprocess.Popen``, ``os.system``,
``os.exec``, ``os.posix_spawn``, ``os.spawn``, ``os.startfile``) the hook
checks the child's env (the explicit ``env``, else ``os.environ``) against
``Host.guard_rule()`` of the spawning context. ``raise`` aborts the spawn
with ``SpawnBlockedError``; ``warn`` logs once per call site through the
logger ``envscope.guard``. Every other audit event (``open``, ``import``,
…) costs one set lookup of the event name: the hook looks at nothing else.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import TYPE_CHECKING

from envscope.errors import ConfigurationError, SpawnBlockedError

if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import FrameType
    from typing import Literal

    from envscope.host import Host

__all__ = ["SPAWN_EVENTS", "guard"]

LOGGER = "envscope.guard"
SPAWN_EVENTS = frozenset(
    {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.startfile"}
)
_MODES = ("raise", "warn", "off")
_ENV_ARG = {"subprocess.Popen": 3, "os.exec": 2, "os.posix_spawn": 2, "os.spawn": 3}


class _Active:
    """The switch's state while the guard is on: the host, the mode, the sites warned about."""

    __slots__ = ("host", "lock", "mode", "warned")

    def __init__(self, host: Host, mode: str) -> None:
        self.host = host
        self.mode = mode
        self.warned: set[str] = set()
        self.lock = threading.Lock()


class _Switch:
    """What the hook reads; ``guard(host, mode="off")`` is the reset seam."""

    __slots__ = ("active", "installed", "skip_prefixes")

    def __init__(self) -> None:
        self.active: _Active | None = None
        self.installed = False
        self.skip_prefixes: tuple[str, ...] = ()


_SWITCH = _Switch()
_INSTALL_LOCK = threading.Lock()


def _audit_hook(event: str, args: tuple[object, ...]) -> None:
    """The audit hook: anything but a spawn event returns after one set lookup."""
    if event in SPAWN_EVENTS:
        _on_spawn(event, args)


def _text(item: object) -> str | None:
    if isinstance(item, str):
        return item
    if isinstance(item, bytes):
        return os.fsdecode(item)
    return None


def _env_of(event: str, args: tuple[object, ...]) -> tuple[Mapping[str, str], bool]:
    """The env the child gets and whether it is inherited implicitly (``os.environ``)."""
    index = _ENV_ARG.get(event)
    env = args[index] if index is not None and len(args) > index else None
    if env is None or env is os.environ or env is getattr(os, "environb", None):
        return os.environ, True
    items = getattr(env, "items", None)
    if items is None:
        return {}, False
    out: dict[str, str] = {}
    for key, value in items():
        k, v = _text(key), _text(value)
        if k is not None and v is not None:
            out[k] = v
    return out, False


def _is_library(filename: str) -> bool:
    """True for a frame of the standard library (not its site-packages) or of envscope."""
    stdlib, package = _SWITCH.skip_prefixes
    if filename.startswith(("<frozen", package)):
        return True
    return filename.startswith(stdlib) and "-packages" not in filename[len(stdlib) :]


def _call_site() -> str:
    """The innermost frame outside the standard library and envscope: ``file:line in func``."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if not _is_library(code.co_filename):
            return f"{code.co_filename}:{frame.f_lineno} in {code.co_name}"
        frame = frame.f_back
    return "<unknown>"  # pragma: no cover - a spawn always has a caller outside the library


def _on_spawn(event: str, args: tuple[object, ...]) -> None:
    active = _SWITCH.active
    if active is None:
        return
    env, implicit = _env_of(event, args)
    offences = active.host.guard_rule().offences(env, implicit=implicit)
    if not offences:
        return
    site = _call_site()
    keys = [str(o) for o in offences]
    if active.mode == "raise":
        raise SpawnBlockedError(site, event, keys)
    with active.lock:
        if site in active.warned:
            return
        active.warned.add(site)
    logging.getLogger(LOGGER).warning(
        "%s: %s carries host secrets under %s (envscope.guard, mode=warn; docs/guard.md)",
        site,
        event,
        ", ".join(keys),
    )


def guard(host: Host, *, mode: Literal["raise", "warn", "off"] = "raise") -> None:
    """Install (once) the runtime guard's audit hook and set its switch for ``host``.

    ``raise`` blocks a spawn whose env carries a secret the host knows this
    child may not get, ``warn`` logs it once per call site, ``off`` turns
    the hook into a no-op (it cannot be removed). Each call starts afresh.
    """
    if mode not in _MODES:
        raise ConfigurationError(f"guard: mode must be one of {', '.join(_MODES)}")
    if mode == "off":
        _SWITCH.active = None
        return
    with _INSTALL_LOCK:
        if not _SWITCH.installed:
            stdlib = os.path.dirname(os.__file__) + os.sep
            package = os.path.dirname(os.path.abspath(__file__)) + os.sep
            _SWITCH.skip_prefixes = (stdlib, package)
            sys.addaudithook(_audit_hook)
            _SWITCH.installed = True
    _SWITCH.active = _Active(host, mode)
