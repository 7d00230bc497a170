"""What the command line audits: the host (config file or the host's own factory) and its env.

An auditor audits the host that runs, not a shell that resembles it:

- ``--pid PID`` takes the parent env from ``/proc/PID/environ``: the env the
  host process was started with (what its service manager gave it), before
  the host loaded its launch ``.env``; the build loads that on top, as the
  host does.
- ``--host MODULE:ATTR`` builds the ``Host`` from the host's own code, as
  ``uvicorn app:app`` and ``flask --app`` do: ``ATTR`` is a ``Host`` or a
  callable that returns one (a factory called with no arguments). The
  current directory is importable, as for ``python -m``. With ``--pid``, the
  module is imported under the process's env (this command's own
  ``os.environ`` is replaced by it first), so a factory that reads its env
  sees what the host saw.

Without either, the host comes from ``envscope.yaml`` and the parent env is
this command's own (the auditor's shell): docs/audit.md says to pin it.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterable, MutableMapping
from dataclasses import dataclass

from envscope.errors import ConfigurationError, EnvscopeError, FileError
from envscope.files._fs import read_regular_file
from envscope.host import Host

__all__ = ["HostSource", "load_host_factory", "read_process_environ"]

MAX_ENVIRON_BYTES = 8 * 1024 * 1024
"""The largest ``/proc/PID/environ`` read (Linux caps a process's env far below this)."""


def _parse_pid(pid: str) -> int:
    if not pid.isascii() or not pid.isdigit() or int(pid) <= 0:
        raise ConfigurationError(f"--pid: {pid!r} is not a process id (a positive integer)")
    return int(pid)


def read_process_environ(pid: str, *, proc_root: str = "/proc") -> dict[str, str]:
    """The env process ``pid`` was started with, from ``PROC_ROOT/PID/environ``.

    A process that does not exist, an environ this user may not read (another
    user's process: run as that user or root; this user's process made not
    dumpable: as root), or an empty one (a kernel thread, a zombie) is a
    ``FileError`` naming the file and saying why. Names and values are decoded
    as ``os.environ`` decodes them (the file system encoding,
    ``surrogateescape``); a name the block holds twice is its first entry, the
    one the process sees.
    """
    path = os.path.join(proc_root, str(_parse_pid(pid)), "environ")
    if not os.path.isdir(proc_root):
        raise FileError(path, f"cannot read the env of process {pid}: no {proc_root} here (Linux)")
    try:
        data = read_regular_file(path, MAX_ENVIRON_BYTES)
    except FileNotFoundError:
        raise FileError(path, f"cannot read the env of process {pid}: no such process") from None
    except PermissionError:
        raise FileError(path, _denied(pid, proc_root)) from None
    except OSError as exc:
        raise FileError(path, f"cannot read the env of process {pid}: {exc.strerror}") from None
    if data is None:
        raise FileError(path, f"cannot read the env of process {pid}: not a regular file")
    if len(data) > MAX_ENVIRON_BYTES:
        raise FileError(path, f"larger than {MAX_ENVIRON_BYTES} bytes: not read")
    if not data:
        raise FileError(
            path, f"process {pid} shows an empty env (a kernel thread or a zombie?): not audited"
        )
    environ: dict[str, str] = {}
    for entry in data.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and name:  # a process may rewrite its env block: skip what is not NAME=VALUE
            # a name twice: the first entry is what getenv() and os.environ see
            environ.setdefault(os.fsdecode(name), os.fsdecode(value))
    return environ


def _denied(pid: str, proc_root: str) -> str:
    """Why this user may not read the process's environ: another user's, or not dumpable.

    ``/proc/PID/status`` (readable by anyone) names the process's real uid. A
    process of this very user is refused only when it is not dumpable: it
    called ``envscope.harden_process()`` (``prctl(PR_SET_DUMPABLE, 0)``), after
    which only root reads its env.
    """
    from envscope.files._fs import read_regular_file as read

    owner: int | None = None
    try:
        status = read(os.path.join(proc_root, str(_parse_pid(pid)), "status"), 64 * 1024) or b""
    except OSError:
        status = b""
    for line in status.splitlines():
        if line.startswith(b"Uid:") and len(line.split()) > 1 and line.split()[1].isdigit():
            owner = int(line.split()[1])
    head = f"cannot read the env of process {pid}: permission denied"
    if owner is not None and owner == os.getuid():
        return (
            f"{head} (it is this user's, but not dumpable: it called "
            "envscope.harden_process() or prctl(PR_SET_DUMPABLE, 0); only root reads its env)"
        )
    return f"{head} (it belongs to another user: run envscope as the host's user or as root)"


# What the host's own code (its module's import, its factory) may raise: every family of
# Python's built-in exceptions, envscope's, and the exception classes its own modules define
# (``_classes_of``). Each is one error line naming the type and where, never the exception's
# message (it may quote a value) nor a traceback.
_HOST_CODE_FAILURES: tuple[type[BaseException], ...] = (
    ArithmeticError,
    AssertionError,
    AttributeError,
    BufferError,
    EOFError,
    EnvscopeError,
    ImportError,
    LookupError,
    NameError,
    OSError,
    ReferenceError,
    RuntimeError,
    StopIteration,
    SyntaxError,
    SystemError,
    TypeError,
    ValueError,
    Warning,
)


def _failure_of(spec: str, doing: str, exc: BaseException) -> ConfigurationError:
    """One line for an exception of the host's code: its type and where, never its message."""
    if isinstance(exc, SyntaxError):  # its text is a source line: the file and line only
        where = f"{exc.filename or '?'}, line {exc.lineno or '?'}"
        return ConfigurationError(
            f"--host: {spec}: {doing} failed: {type(exc).__name__} at {where}"
        )
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return ConfigurationError(f"--host: {spec}: {doing} failed: no module named {exc.name!r}")
    return ConfigurationError(
        f"--host: {spec}: {doing} raised {type(exc).__name__} "
        "(its message is not shown: it may hold a value)"
    )


def _classes_of(modules: Iterable[object]) -> tuple[type[BaseException], ...]:
    """The exception classes the ``modules`` define (not import) at their top level.

    These are the host's own errors: a factory's ``class ConfigMissing(Exception)``, or its
    package's errors module. Naming them keeps the catch to the host's code's families,
    not every ``Exception``.
    """
    found = []
    for module in modules:
        try:  # the namespace as it is: a lazily loaded module is not loaded by reading it
            namespace = object.__getattribute__(module, "__dict__")
        except AttributeError:  # an object in sys.modules with no namespace of its own
            continue
        name = namespace.get("__name__")
        for value in list(namespace.values()):
            if (
                issubclass(type(value), type)  # not isinstance: a lazy module is not loaded
                and issubclass(value, Exception)
                and value.__module__ == name
            ):
                found.append(value)
    return tuple(found)


def _needs_arguments(factory: Callable[..., object]) -> list[str]:
    """The parameters ``factory`` cannot be called without (none: a no-argument factory)."""
    import inspect

    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a builtin): called as it is
        return []
    required = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [
        p.name
        for p in parameters
        if p.default is inspect.Parameter.empty
        and (p.kind in required or p.kind is inspect.Parameter.KEYWORD_ONLY)
    ]


def load_host_factory(spec: str) -> Host:
    """The ``Host`` named by ``MODULE:ATTR`` (an instance, or a no-argument factory).

    Any failure is a ``ConfigurationError`` (one line, exit 2): a module that
    cannot be imported or has a syntax error, an attribute it lacks, a factory
    that needs arguments or raises, or an object that is no ``Host``.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigurationError(f"--host: {spec!r} is not MODULE:ATTR (e.g. myhost.app:host)")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` and uvicorn do
    failure: ConfigurationError | None = None
    loaded_before = set(sys.modules)

    def loaded_by_host() -> list[object]:
        return [module for name, module in list(sys.modules.items()) if name not in loaded_before]

    try:
        module = importlib.import_module(module_name)
    except (*_HOST_CODE_FAILURES, *_classes_of(loaded_by_host())) as exc:
        failure = _failure_of(spec, f"importing {module_name!r}", exc)
    if failure is not None:  # raised outside the handler: no traceback, no context
        raise failure
    target: object = module
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ConfigurationError(f"--host: {module_name!r} has no attribute {attr!r}") from None
    if not isinstance(target, Host) and callable(target):
        needs = _needs_arguments(target)
        if needs:
            raise ConfigurationError(
                f"--host: {spec} needs arguments ({', '.join(needs)}): name a Host, "
                "or a factory that takes none"
            )
        factory: Callable[[], object] = target
        own = [module, sys.modules.get(getattr(factory, "__module__", "") or ""), *loaded_by_host()]
        try:
            target = factory()
        except (*_HOST_CODE_FAILURES, *_classes_of(m for m in own if m is not None)) as exc:
            failure = _failure_of(spec, "the factory", exc)
        if failure is not None:
            raise failure
    if not isinstance(target, Host):
        raise ConfigurationError(
            f"--host: {spec} is a {type(target).__name__}, not an envscope Host "
            "(or a factory returning one)"
        )
    return target


@dataclass(frozen=True, slots=True)
class HostSource:
    """The ``--host`` and ``--pid`` choices of one command."""

    host_spec: str | None = None
    pid: str | None = None
    proc_root: str = "/proc"

    def parent_env(self) -> dict[str, str] | None:
        """The pinned parent env (``--pid``), or None: this command's own env."""
        if self.pid is None:
            return None
        return read_process_environ(self.pid, proc_root=self.proc_root)

    def factory_host(self, environ: MutableMapping[str, str]) -> Host:
        """The host's own ``Host``, its module imported under ``environ``.

        ``environ`` is the pinned parent env (or ``os.environ`` itself): this
        process's ``os.environ`` is replaced by it first, because a factory
        reads ``os.environ`` as the host process did.
        """
        if self.host_spec is None:  # pragma: no cover - callers check
            raise ConfigurationError("--host: not given")
        if environ is not os.environ:
            os.environ.clear()
            os.environ.update(environ)
        return load_host_factory(self.host_spec)
