"""Spawn helpers: ``subprocess`` and ``asyncio`` with the env built by envscope.

Each helper builds the child env in the caller's context (the home bound
with ``host.routed(...)`` in this thread or task, else the launch home) and
hands it to the standard call. An ``env=`` keyword is refused: the env is
envscope's to build; pass ``extra=`` (explicit values) or ``passthrough=``.
``trace=`` (a ``Trace``) records the build's decisions, as
``host.build_subprocess_env(trace=...)`` does; it never reaches ``subprocess``.
With ``cwd=``, the child's ``PWD`` is that directory, not the launcher's.

Executor threads do not inherit context variables, so a routed binding is
lost in ``loop.run_in_executor(...)`` or ``executor.submit(...)``.
``in_context(fn)`` captures the caller's context and runs ``fn`` in it;
``run_in_executor`` and ``submit`` use it. (``asyncio.to_thread`` already
copies the context.) A process pool cannot carry a binding (a context does
not cross a process boundary): ``submit`` and ``run_in_executor`` refuse one
with a ``ConfigurationError``.
"""

from __future__ import annotations

import asyncio
import contextvars
import subprocess
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from envscope.audit.trace import NULL_TRACE
from envscope.errors import ConfigurationError
from envscope.pipeline.stages import at_cwd
from envscope.policy.surfaces import Surface

if TYPE_CHECKING:
    from concurrent.futures import Executor, Future

    from envscope.audit.trace import Trace
    from envscope.host import Host

    StrOrBytesPath = Any  # what subprocess accepts as a program or an argument

__all__ = [
    "call",
    "check_call",
    "check_output",
    "create_subprocess_exec",
    "create_subprocess_shell",
    "in_context",
    "popen",
    "run",
    "run_in_executor",
    "submit",
]

T = TypeVar("T")


def _env(
    host: Host,
    call: str,
    kwargs: Mapping[str, object],
    *,
    surface: Surface | str,
    extra: Mapping[str, object] | None,
    passthrough: Sequence[str],
    inherit_credentials: bool,
    grant: Sequence[str],
    trace: Trace | None,
) -> dict[str, str]:
    """The child env for one spawn; an ``env=`` keyword is a ``ConfigurationError``.

    With ``cwd=`` the child's ``PWD`` is that directory (``stages.at_cwd``).
    """
    if "env" in kwargs:
        raise ConfigurationError(
            f"envscope.spawn.{call}: env= is refused, the child env is built by envscope; "
            "pass extra= for explicit values or passthrough= for names"
        )
    env = host.build_subprocess_env(
        surface=surface,
        extra=extra,
        passthrough=passthrough,
        inherit_credentials=inherit_credentials,
        grant=grant,
        trace=trace,
    )
    return at_cwd(env, kwargs.get("cwd"), NULL_TRACE if trace is None else trace)


def run(
    host: Host,
    args: StrOrBytesPath | Sequence[StrOrBytesPath],
    *,
    surface: Surface | str,
    extra: Mapping[str, object] | None = None,
    passthrough: Sequence[str] = (),
    inherit_credentials: bool = False,
    grant: Sequence[str] = (),
    trace: Trace | None = None,
    redact_output: bool = False,
    **subprocess_kwargs: Any,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run(args, env=<built>, **subprocess_kwargs)``.

    ``redact_output=True``: the captured stdout and stderr come back with every
    secret value the host holds masked (``envscope.redact.for_host`` over the
    child's env), in the result and in a ``CalledProcessError`` or
    ``TimeoutExpired`` it raises; output that is not captured (a child writing
    to the caller's terminal) is refused, as it could not be masked.
    """
    env = _env(
        host,
        "run",
        subprocess_kwargs,
        surface=surface,
        extra=extra,
        passthrough=passthrough,
        inherit_credentials=inherit_credentials,
        grant=grant,
        trace=trace,
    )
    if not redact_output:
        return subprocess.run(args, env=env, **subprocess_kwargs)
    return _redacted_run(host, args, env, surface, "run", subprocess_kwargs)


def _redacted_run(
    host: Host,
    args: Any,
    env: dict[str, str],
    surface: Surface | str,
    call: str,
    kwargs: dict[str, Any],
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` with its captured output masked, its errors' output too."""
    from envscope.redact import for_host

    _check_captured(call, kwargs)
    redactor = for_host(host, env, surface=surface)
    check = bool(kwargs.pop("check", False))

    def masked(output: Any) -> Any:
        if isinstance(output, bytes):
            return redactor.redact_bytes(output)
        return redactor.redact(output) if isinstance(output, str) else output

    timed_out: subprocess.TimeoutExpired | None = None
    try:
        done = subprocess.run(args, env=env, check=False, **kwargs)
    except subprocess.TimeoutExpired as exc:  # its output so far is the child's: masked
        timed_out = subprocess.TimeoutExpired(
            exc.cmd, exc.timeout, output=masked(exc.output), stderr=masked(exc.stderr)
        )
    if timed_out is not None:  # raised outside the handler: no unmasked context kept
        raise timed_out
    done.stdout, done.stderr = masked(done.stdout), masked(done.stderr)
    if check and done.returncode != 0:
        raise subprocess.CalledProcessError(
            done.returncode, done.args, output=done.stdout, stderr=done.stderr
        )
    return done


def _check_captured(call: str, kwargs: Mapping[str, Any]) -> None:
    """``redact_output`` needs both streams captured (or sent nowhere): else refused."""
    if kwargs.get("capture_output"):
        return
    taken = (subprocess.PIPE, subprocess.DEVNULL)
    if kwargs.get("stdout") in taken and kwargs.get("stderr") in (*taken, subprocess.STDOUT):
        return
    raise ConfigurationError(
        f"envscope.spawn.{call}: redact_output=True needs the output captured "
        "(stdout and stderr as subprocess.PIPE, DEVNULL or STDOUT, or capture_output=True "
        "for run): output written to the caller's terminal or a file cannot be masked"
    )


def popen(
    host: Host,
    args: StrOrBytesPath | Sequence[StrOrBytesPath],
    *,
    surface: Surface | str,
    extra: Mapping[str, object] | None = None,
    passthrough: Sequence[str] = (),
    inherit_credentials: bool = False,
    grant: Sequence[str] = (),
    trace: Trace | None = None,
    redact_output: bool = False,
    **subprocess_kwargs: Any,
) -> subprocess.Popen[Any]:
    """``subprocess.Popen(args, env=<built>, **subprocess_kwargs)``.

    ``redact_output=True``: ``process.stdout`` and ``process.stderr`` are pipes
    that carry what the child writes with every secret value the host holds
    masked while it runs (``communicate()``, ``readline()`` and iteration
    alike; ``envscope._masked_output``); both streams must be piped or sent
    nowhere (``subprocess.PIPE``, ``DEVNULL``, ``STDOUT`` for stderr).
    """
    env = _env(
        host,
        "popen",
        subprocess_kwargs,
        surface=surface,
        extra=extra,
        passthrough=passthrough,
        inherit_credentials=inherit_credentials,
        grant=grant,
        trace=trace,
    )
    if not redact_output:
        return subprocess.Popen(args, env=env, **subprocess_kwargs)
    from envscope._masked_output import mask_popen
    from envscope.redact import for_host

    _check_captured("popen", subprocess_kwargs)
    redactor = for_host(host, env, surface=surface)
    process = subprocess.Popen(args, env=env, **subprocess_kwargs)
    mask_popen(process, redactor)
    return process


def call(
    host: Host,
    args: StrOrBytesPath | Sequence[StrOrBytesPath],
    *,
    surface: Surface | str,
    extra: Mapping[str, object] | None = None,
    passthrough: Sequence[str] = (),
    inherit_credentials: bool = False,
    grant: Sequence[str] = (),
    trace: Trace | None = None,
    **subprocess_kwargs: Any,
) -> int:
    """``subprocess.call(args, env=<built>, **subprocess_kwargs)``: the exit status."""
    env = _env(
        host,
        "call",
        subprocess_kwargs,
        surface=surface,
        extra=extra,
        passthrough=passthrough,
        inherit_credentials=inherit_credentials,
        grant=grant,
        trace=trace,
    )
    return subprocess.call(args, env=env, **subprocess_kwargs)


def check_call(
    host: Host,
    args: StrOrBytesPath | Sequence[StrOrBytesPath],
    *,
    surface: Surface | str,
    extra: Mapping[str, object] | None = None,
    passthrough: Sequence[str] = (),
    inherit_credentials: bool = False,
    grant: Sequence[str] = (),
    trace: Trace | None = None,
    **subprocess_kwargs: Any,
) -> int:
    """``subprocess.check_call(args, env=<built>, **subprocess_kwargs)``."""
    env = _env(
        host,
        "check_call",
        subprocess_kwargs,
        surface=surface,
        extra=extra,
        passthrough=passthrough,
        inherit_credentials=inherit_credentials,
        grant=grant,
        trace=trace,
    )
    return subprocess.check_call(args, env=env, **subprocess_kwargs)


def check_output(
    host: Host,
    args: StrOrBytesPath | Sequence[StrOrBytesPath],
    *,
    surface: Surface | str,
    extra: Mapping[str, object] | None = None,
    passthrough: Sequence[str] = (),
    inherit_credentials: bool = False,
    grant: Sequence[str] = (),
    trace: Trace | None = None,
    redact_output: bool = False,
    **subprocess_kwargs: Any,
) -> Any:
    """``subprocess.check_output(args, env=<built>, **subprocess_kwargs)``: the output.

    ``redact_output=True``: the output (and a ``CalledProcessError``'s) with every
    secret value the host holds masked, as ``run`` does; stderr must be captured
    too (``stderr=subprocess.PIPE``, ``STDOUT`` or ``DEVNULL``).
    """
    env = _env(
        host,
        "check_output",
        subprocess_kwargs,
        surface=surface,
        extra=extra,
        passthrough=passthrough,
        inherit_credentials=inherit_credentials,
        grant=grant,
        trace=trace,
    )
    if not redact_output:
        return subprocess.check_output(args, env=env, **subprocess_kwargs)
    kwargs = {"stdout": subprocess.PIPE, **subprocess_kwargs, "check": True}
    return _redacted_run(host, args, env, surface, "check_output", kwargs).stdout


async def create_subprocess_exec(
    host: Host,
    program: StrOrBytesPath,
    *args: StrOrBytesPath,
    surface: Surface | str,
    extra: Mapping[str, object] | None = None,
    passthrough: Sequence[str] = (),
    inherit_credentials: bool = False,
    grant: Sequence[str] = (),
    trace: Trace | None = None,
    redact_output: bool = False,
    **kwargs: Any,
) -> asyncio.subprocess.Process:
    """``asyncio.create_subprocess_exec(program, *args, env=<built>, **kwargs)``.

    ``redact_output=True``: ``process.stdout`` and ``process.stderr`` receive what
    the child writes with every secret value the host holds masked, as ``popen``'s.
    """
    env = _env(
        host,
        "exec",
        kwargs,
        surface=surface,
        extra=extra,
        passthrough=passthrough,
        inherit_credentials=inherit_credentials,
        grant=grant,
        trace=trace,
    )
    if not redact_output:
        return await asyncio.create_subprocess_exec(program, *args, env=env, **kwargs)
    return await _masked_process(host, env, surface, "exec", (program, *args), kwargs)


async def create_subprocess_shell(
    host: Host,
    cmd: str | bytes,
    *,
    surface: Surface | str,
    extra: Mapping[str, object] | None = None,
    passthrough: Sequence[str] = (),
    inherit_credentials: bool = False,
    grant: Sequence[str] = (),
    trace: Trace | None = None,
    redact_output: bool = False,
    **kwargs: Any,
) -> asyncio.subprocess.Process:
    """``asyncio.create_subprocess_shell(cmd, env=<built>, **kwargs)``.

    ``redact_output=True``: the output masked while the child runs, as
    ``create_subprocess_exec``'s.
    """
    env = _env(
        host,
        "shell",
        kwargs,
        surface=surface,
        extra=extra,
        passthrough=passthrough,
        inherit_credentials=inherit_credentials,
        grant=grant,
        trace=trace,
    )
    if not redact_output:
        return await asyncio.create_subprocess_shell(cmd, env=env, **kwargs)
    return await _masked_process(host, env, surface, "shell", cmd, kwargs)


async def _masked_process(
    host: Host,
    env: dict[str, str],
    surface: Surface | str,
    call: str,
    command: Any,
    kwargs: dict[str, Any],
) -> asyncio.subprocess.Process:
    """What ``asyncio.create_subprocess_exec`` (``_shell``) does, through ``MaskingProtocol``.

    ``command`` is the program and its arguments (``exec``) or the shell text.
    """
    from envscope._masked_output import MaskingProtocol
    from envscope.redact import for_host

    _check_captured(call, kwargs)
    redactor = for_host(host, env, surface=surface)
    loop = asyncio.get_running_loop()
    limit = kwargs.pop("limit", 2**16)  # asyncio.streams' default

    def protocol() -> MaskingProtocol:
        return MaskingProtocol(redactor, limit, loop)

    if call == "exec":
        transport, made = await loop.subprocess_exec(protocol, *command, env=env, **kwargs)
    else:
        transport, made = await loop.subprocess_shell(protocol, command, env=env, **kwargs)
    return asyncio.subprocess.Process(transport, made, loop)


def in_context(fn: Callable[..., T]) -> Callable[..., T]:
    """``fn`` bound to a copy of the caller's context (its routed binding included).

    Each call runs in a fresh copy of the captured context, so one wrapper
    can run in several threads at once.
    """
    captured = contextvars.copy_context()

    def call(*args: Any, **kwargs: Any) -> T:
        return captured.copy().run(fn, *args, **kwargs)

    return call


def _threads_only(executor: Executor | None, call: str) -> None:
    """A process pool is a ``ConfigurationError``: a routed binding cannot cross processes."""
    if isinstance(executor, ProcessPoolExecutor):
        raise ConfigurationError(
            f"envscope.spawn.{call}: a process pool cannot carry the routed binding "
            "(a context does not cross a process boundary, and a spawn in the worker "
            "would be built for the launch home); use a ThreadPoolExecutor, or enter "
            "host.routed(home) inside the worker function"
        )


async def run_in_executor(executor: Executor | None, fn: Callable[..., T], *args: Any) -> T:
    """``loop.run_in_executor(executor, fn, *args)`` with the caller's context (binding) kept."""
    _threads_only(executor, "run_in_executor")
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(executor, in_context(fn), *args)


def submit(executor: Executor, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
    """``executor.submit(fn, *args, **kwargs)`` with the caller's context (binding) kept."""
    _threads_only(executor, "submit")
    return executor.submit(in_context(fn), *args, **kwargs)
