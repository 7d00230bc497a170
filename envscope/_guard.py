"""``envscope.guard``: a runtime guard against spawns that bypass the factory (docs/guard.md).

One ``sys.addaudithook`` hook, installed by the first ``guard(...)`` call
and never removed (audit hooks cannot be). The hook reads a switch:
``guard(host, mode=...)`` again replaces it, ``mode="off"`` turns it off.

For the events that start a process (``subprocess.Popen``, ``os.system``,
``os.exec``, ``os.posix_spawn``, ``os.spawn``, ``os.startfile``) the hook
checks the child's env (the explicit ``env``, else the process env) against
``Host.secret_rule()`` of the spawning context, the one rule the factory
applies. ``raise`` aborts the spawn with ``SpawnBlockedError``; ``warn`` logs
once per call site through the
logger ``envscope.guard``. Every other audit event (``open``, ``import``,
…) costs one set lookup of the event name: the hook looks at nothing else.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

from envscope._c_environ import C_ENVIRON, ENV_WRITE_EVENTS
from envscope._inputs import snapshot_env
from envscope.errors import (
    ConfigurationError,
    EnvscopeError,
    GuardFailedError,
    SpawnBlockedError,
)
from envscope.pipeline.decision import describe
from envscope.policy._cli_source import own_credentials
from envscope.policy._layers import Layer

if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import FrameType
    from typing import Literal

    from envscope.host import Host

__all__ = ["MULTIPROCESSING_EVENT", "SPAWN_EVENTS", "guard", "offences"]

LOGGER = "envscope.guard"
SPAWN_EVENTS = frozenset(
    {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.startfile"}
)
_WATCHED = SPAWN_EVENTS | ENV_WRITE_EVENTS
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
    """The audit hook: anything but a spawn or an env write returns after one set lookup."""
    if event in _WATCHED:
        if event in ENV_WRITE_EVENTS:
            C_ENVIRON.record(args)  # called from here: record() looks two frames up
        else:
            _on_spawn(event, args)


def _text(item: object) -> str | None:
    """A key or value as the child gets it: text, bytes and ``os.PathLike`` decoded."""
    if isinstance(item, os.PathLike):
        item = os.fspath(item)
    if isinstance(item, str):
        return item
    if isinstance(item, bytes):
        return os.fsdecode(item)
    return None


def _all_text(env: dict[object, object]) -> bool:
    """True when every key and value of ``env`` is a ``str`` (two C-level joins)."""
    try:
        "".join(env)  # type: ignore[arg-type]
        "".join(env.values())  # type: ignore[arg-type]
    except TypeError:
        return False
    return True


def _env_arg(event: str, args: tuple[object, ...]) -> object:
    """The env argument of a spawn event as the caller passed it (None: inherited)."""
    index = _ENV_ARG.get(event)
    return args[index] if index is not None and len(args) > index else None


def _env_of(event: str, args: tuple[object, ...]) -> tuple[Mapping[str, str], bool]:
    """The env the child gets and whether it is inherited implicitly (the process env).

    ``env=None`` is the C environment (``C_ENVIRON``: a value set with
    ``os.putenv`` is in it, one removed with ``os.unsetenv`` is not);
    ``env=os.environ`` (or ``os.environb``) is a snapshot of it, which is what
    the spawn converts; an explicit env has its ``os.PathLike`` and bytes items
    decoded.
    """
    env = _env_arg(event, args)
    if env is None:
        return C_ENVIRON.inherited(snapshot_env(os.environ, "os.environ")), True
    if env is os.environ or env is getattr(os, "environb", None):
        return snapshot_env(os.environ, "os.environ"), True
    if type(env) is dict and _all_text(env):
        return env, False  # a factory-built env: read as it is (the check only reads)
    items = getattr(env, "items", None)
    if items is None:
        return {}, False
    out: dict[str, str] = {}
    for key, value in list(items()):
        k, v = _text(key), _text(value)
        if k is not None and v is not None:
            out[k] = v
    return out, False


def offences(
    host: Host,
    env: Mapping[str, str],
    *,
    implicit: bool,
    source_own: frozenset[str] = frozenset(),
) -> list[str]:
    """The keys of ``env`` that carry what a spawn in this context may not, sorted.

    Asked of the context's ``SecretRule``: an explicit env may carry a Tier 2
    credential (some child inherits credentials) and whatever a build handed
    over as given; an inherited env may carry no declared name and no
    secret value at all. ``source_own`` (the exemption ``source-own``) are the
    credential names a secret source's own CLI call hands its client: passed in
    that one spawn, every other entry of it checked. Each entry is ``KEY`` or
    ``KEY (the value of NAME)``.
    """
    verdicts = host._context_verdicts(inherit_credentials=not implicit)  # kept per context
    # the process env is a base; an explicit env's names are the host code's own
    withheld = verdicts.withheld(env, Layer.BASE if implicit else Layer.SPAWN)
    admitted = host._admitted_here() if withheld and not implicit else ()
    found: list[str] = []
    for key, value, verdict in withheld:
        if not implicit and (key in source_own or (key, value) in admitted):
            continue  # a source's own CLI call, or a build handed it over as given
        found.append(describe(verdicts.rule, key, verdict))
    return sorted(found)


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


# What checking one spawn can raise: an envscope error (a manifest the host
# cannot read), a file or decoding error, and what a foreign mapping or a
# churning environ can throw while it is read. The hook turns each into a
# warning (mode="warn") or a GuardFailedError (mode="raise"): none escapes bare.
_CHECK_FAILURES = (
    EnvscopeError,
    OSError,
    ValueError,
    TypeError,
    RuntimeError,
    LookupError,
    AttributeError,
)


def _failure_reason(exc: BaseException) -> str:
    """What failed, never a value: an envscope error's message, else the error's type."""
    return str(exc) if isinstance(exc, EnvscopeError) else type(exc).__name__


def _on_spawn(event: str, args: tuple[object, ...]) -> None:
    active = _SWITCH.active
    if active is None:
        return
    try:
        env, implicit = _env_of(event, args)
        if not implicit and active.host._built_here(env):
            # factory-built: a child this context's build made, each entry decided
            logging.getLogger(LOGGER).debug("%s: a factory-built env (factory-built)", event)
            return
        own = own_credentials(_env_arg(event, args))
        keys = offences(active.host, env, implicit=implicit, source_own=own)
    except _CHECK_FAILURES as exc:
        _on_failure(active, event, exc)
        return
    exempted = sorted(name for name in own if name in env) if own and not implicit else ()
    if exempted:  # the exemption's record: the names it passed, never a value
        logging.getLogger(LOGGER).debug(
            "%s: %s passed to a secret source's own client (source-own)",
            event,
            ", ".join(exempted),
        )
    if not keys:
        return
    site = _call_site()
    if active.mode == "raise":
        raise SpawnBlockedError(site, event, keys)
    if _first_warning(active, site):
        logging.getLogger(LOGGER).warning(
            "%s: %s carries host secrets under %s (envscope.guard, mode=warn; docs/guard.md)",
            site,
            event,
            ", ".join(keys),
        )


def _first_warning(active: _Active, site: str) -> bool:
    """True the first time a call site is warned about under this ``guard(...)`` call."""
    with active.lock:
        if site in active.warned:
            return False
        active.warned.add(site)
        return True


def _on_failure(active: _Active, event: str, exc: BaseException) -> None:
    """A check that failed: refused with a typed error, or (warn) one warning and the spawn goes."""
    site = _call_site()
    reason = _failure_reason(exc)
    if active.mode == "raise":
        raise GuardFailedError(site, event, reason) from exc
    if _first_warning(active, f"{site} (failed)"):
        logging.getLogger(LOGGER).warning(
            "%s: %s was not checked: %s (envscope.guard, mode=warn; docs/guard.md)",
            site,
            event,
            reason,
        )


MULTIPROCESSING_EVENT = "multiprocessing.spawnv_passfds"
"""The pseudo-event of a multiprocessing ``spawn``/``forkserver`` start (no audit event exists)."""


def _guard_multiprocessing() -> None:
    """Check the process env where multiprocessing starts an interpreter (POSIX).

    The ``spawn`` and ``forkserver`` start methods (and the resource tracker)
    start their child with ``multiprocessing.util.spawnv_passfds``, which
    raises no audit event: the child inherits the process env. The guard
    wraps that one function, once, so the start is checked like ``os.system``.
    """
    if os.name != "posix":  # pragma: no cover - Windows starts them through CreateProcess
        return
    from multiprocessing import util

    original = util.spawnv_passfds
    if getattr(original, "envscope_guarded", False):
        return

    def spawnv_passfds(path: Any, args: Any, passfds: Any) -> int:
        _on_spawn(MULTIPROCESSING_EVENT, ())
        pid: int = original(path, args, passfds)
        return pid

    spawnv_passfds.envscope_guarded = True  # type: ignore[attr-defined]
    spawnv_passfds.__wrapped__ = original  # type: ignore[attr-defined]
    util.spawnv_passfds = spawnv_passfds


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
            C_ENVIRON.seed()  # after the hook: a write from now on is recorded by its event
            _guard_multiprocessing()
            _SWITCH.installed = True
    _SWITCH.active = _Active(host, mode)
