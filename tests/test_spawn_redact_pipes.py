"""``redact_output=True`` on ``spawn.popen`` and the asyncio helpers: masked while the child runs.

Real bash children print the token they were granted, whole or split across
two writes with a pause between (so the halves arrive in two reads). Every
way a caller reads a child's pipes is a row of one table: ``communicate()``
(which polls the file descriptors), line by line, bytes and text, stderr
merged, ``asyncio``'s ``communicate`` and ``readline``. Each row runs once
with ``redact_output=True`` (the mask, never the token) and once without
(the token), so each can fail.
"""

from __future__ import annotations

import asyncio
import errno
import gc
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envscope import Catalog, ConfigurationError, Host, _masked_output
from envscope.spawn import create_subprocess_exec, create_subprocess_shell, popen

TOKEN = "granted-deploy-token-0123456789"
MASK = "[REDACTED:DEPLOY_TOKEN]"
SPLIT = (
    "h=${DEPLOY_TOKEN:0:10}; t=${DEPLOY_TOKEN:10}; "
    'printf "out=%s" "$h"; sleep 0.1; printf "%s\\n" "$t"; '
    'printf "err=%s" "$h" >&2; sleep 0.1; printf "%s\\n" "$t" >&2'
)
GIVE = {"surface": "terminal", "extra": {"DEPLOY_TOKEN": TOKEN}, "grant": ["DEPLOY_TOKEN"]}
PIPES = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}


@pytest.fixture
def host(tmp_path: Path) -> Host:
    made = Host(tmp_path, environ={"PATH": os.defpath}, catalog=Catalog.default())
    made.load_launch_env()
    return made


def _text(data: object) -> str:
    if data is None:
        return ""
    assert isinstance(data, (str, bytes))
    return data if isinstance(data, str) else data.decode()


def _popen_communicate(host: Host, script: str, redact: bool) -> tuple[str, str]:
    child = popen(host, ["bash", "-c", script], redact_output=redact, **GIVE, **PIPES)  # type: ignore[arg-type]
    out, err = child.communicate(timeout=20)
    return _text(out), _text(err)


def _popen_text(host: Host, script: str, redact: bool) -> tuple[str, str]:
    child = popen(host, ["bash", "-c", script], redact_output=redact, text=True, **GIVE, **PIPES)  # type: ignore[arg-type]
    out, err = child.communicate(timeout=20)
    return out, err


def _popen_lines(host: Host, script: str, redact: bool) -> tuple[str, str]:
    child = popen(host, ["bash", "-c", script], redact_output=redact, stdout=subprocess.PIPE,
                  stderr=subprocess.STDOUT, **GIVE)  # type: ignore[arg-type]  # fmt: skip
    with child:
        assert child.stdout is not None
        lines = [_text(line) for line in child.stdout]
    child.wait(timeout=20)
    out = [line for line in lines if line.startswith("out=")]
    return "".join(out), "".join(line for line in lines if line not in out)


async def _exec_communicate(host: Host, script: str, redact: bool) -> tuple[str, str]:
    child = await create_subprocess_exec(host, "bash", "-c", script, redact_output=redact,
                                         **GIVE, **PIPES)  # type: ignore[arg-type]  # fmt: skip
    out, err = await asyncio.wait_for(child.communicate(), 20)
    return _text(out), _text(err)


async def _exec_readline(host: Host, script: str, redact: bool) -> tuple[str, str]:
    child = await create_subprocess_exec(host, "bash", "-c", script, redact_output=redact,
                                         **GIVE, **PIPES)  # type: ignore[arg-type]  # fmt: skip
    assert child.stdout is not None
    assert child.stderr is not None
    out = [_text(line) async for line in child.stdout]
    err = await child.stderr.read()
    await child.wait()
    return "".join(out), _text(err)


async def _shell_communicate(host: Host, script: str, redact: bool) -> tuple[str, str]:
    command = f"bash -c {shlex.quote(script)}"  # /bin/sh may not know ${VAR:0:10}
    child = await create_subprocess_shell(host, command, redact_output=redact, **GIVE, **PIPES)  # type: ignore[arg-type]
    out, err = await asyncio.wait_for(child.communicate(), 20)
    return _text(out), _text(err)


Reader = Callable[[Host, str, bool], object]
READERS: dict[str, Reader] = {
    "popen communicate": _popen_communicate,
    "popen text": _popen_text,
    "popen lines, stderr merged": _popen_lines,
    "asyncio exec communicate": _exec_communicate,
    "asyncio exec readline": _exec_readline,
    "asyncio shell communicate": _shell_communicate,
}


def _read(reader: str, host: Host, script: str, redact: bool) -> tuple[str, str]:
    got = READERS[reader](host, script, redact)
    if asyncio.iscoroutine(got):
        got = asyncio.run(got)
    assert isinstance(got, tuple)
    return got


@pytest.mark.parametrize("reader", READERS)
def test_a_token_split_across_writes_comes_out_masked(host: Host, reader: str) -> None:
    plain = _read(reader, host, SPLIT, False)
    assert plain == (f"out={TOKEN}\n", f"err={TOKEN}\n")
    assert _read(reader, host, SPLIT, True) == (f"out={MASK}\n", f"err={MASK}\n")


@pytest.mark.parametrize("reader", ["popen communicate", "asyncio exec communicate"])
def test_much_output_on_both_pipes_is_masked_without_a_deadlock(host: Host, reader: str) -> None:
    script = 'for i in $(seq 5000); do echo "o$i $DEPLOY_TOKEN"; echo "e$i $DEPLOY_TOKEN" >&2; done'
    out, err = _read(reader, host, script, True)
    assert TOKEN not in out + err
    assert out.count(MASK) == err.count(MASK) == 5000
    assert out.splitlines()[-1] == f"o5000 {MASK}"


@pytest.mark.parametrize("disposition", [signal.SIG_IGN, signal.SIG_DFL])
def test_a_caller_that_closes_its_end_stops_the_child(
    host: Host, disposition: signal.Handlers
) -> None:
    """The pump stops on EPIPE; a host whose SIGPIPE is the default is not killed."""
    before = signal.signal(signal.SIGPIPE, disposition)
    try:
        _close_early(host)
    finally:
        signal.signal(signal.SIGPIPE, before)


def _close_early(host: Host) -> None:
    child = popen(host, ["bash", "-c", 'exec yes "$DEPLOY_TOKEN"'], redact_output=True,
                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, **GIVE)  # type: ignore[arg-type]  # fmt: skip
    assert child.stdout is not None
    assert child.stdout.readline() == f"{MASK}\n".encode()
    child.stdout.close()
    assert child.wait(timeout=20) != 0  # SIGPIPE: the pump closed the child's pipe


NOT_CAPTURED: list[dict[str, object]] = [
    {},
    {"stdout": subprocess.PIPE},
    {"stderr": subprocess.PIPE},
    {"stdout": subprocess.STDOUT, "stderr": subprocess.PIPE},
]


@pytest.mark.parametrize("kwargs", NOT_CAPTURED)
def test_output_that_cannot_be_masked_is_refused(
    host: Host, tmp_path: Path, kwargs: dict[str, object]
) -> None:
    with pytest.raises(ConfigurationError, match="output captured"):
        popen(host, ["true"], redact_output=True, **GIVE, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="output captured"):
        asyncio.run(
            create_subprocess_exec(host, "true", redact_output=True, **GIVE, **kwargs)  # type: ignore[arg-type]
        )
    with (tmp_path / "out").open("wb") as file, pytest.raises(ConfigurationError):
        popen(host, ["true"], redact_output=True, stdout=file, stderr=subprocess.PIPE, **GIVE)  # type: ignore[arg-type]


class _FailingOs:
    """``os`` for ``_masked_output``, whose ``nth`` ``pipe()`` fails as with no descriptor left."""

    def __init__(self, nth: int) -> None:
        self.nth, self.calls = nth, 0

    def pipe(self) -> tuple[int, int]:
        self.calls += 1
        if self.calls == self.nth:
            raise OSError(errno.EMFILE, "Too many open files")
        return os.pipe()

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


class _FailingThreading:
    """``threading`` for ``_masked_output``, whose ``nth`` thread cannot start."""

    def __init__(self, nth: int) -> None:
        self.nth, self.calls = nth, 0
        outer = self

        class Thread(threading.Thread):
            def start(self) -> None:
                outer.calls += 1
                if outer.calls == outer.nth:
                    raise RuntimeError("can't start new thread")
                super().start()

        self.Thread = Thread

    def __getattr__(self, name: str) -> Any:
        return getattr(threading, name)


FAULTS: dict[str, tuple[Callable[[int], object], int, type[BaseException]]] = {
    "no descriptor for stdout's pipe": (_FailingOs, 1, OSError),
    "no descriptor for stderr's pipe": (_FailingOs, 2, OSError),
    "no thread for stdout's pump": (_FailingThreading, 1, RuntimeError),
    "no thread for stderr's pump": (_FailingThreading, 2, RuntimeError),
}


def _open_fds() -> set[str]:
    gc.collect()  # earlier tests' pipes, closed when collected: not this test's
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
@pytest.mark.parametrize("case", FAULTS)
def test_a_pipe_or_pump_that_cannot_be_made_leaves_no_child_running(
    host: Host, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """The child already started is killed and waited for, every descriptor closed, the
    error raised: the caller is never left without the process while it runs unread."""
    fault, nth, error = FAULTS[case]
    started: list[subprocess.Popen[Any]] = []

    class Recorded(subprocess.Popen):  # type: ignore[type-arg]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            started.append(self)

    host.build_subprocess_env(surface="terminal")  # the host's own descriptors (its gate) first
    before = _open_fds()
    monkeypatch.setattr(subprocess, "Popen", Recorded)
    name = "os" if fault is _FailingOs else "threading"
    monkeypatch.setattr(_masked_output, name, fault(nth))
    with pytest.raises(error):
        popen(host, ["sleep", "30"], redact_output=True, **GIVE, **PIPES)  # type: ignore[arg-type]
    (child,) = started
    assert child.returncode == -signal.SIGKILL  # killed and waited for
    for pump in [t for t in threading.enumerate() if t.name == "envscope-redact-pump"]:
        pump.join(timeout=10)  # a pump started before the fault ends with the child's pipe
    assert _open_fds() <= before  # none opened by the failed spawn is left open


def _fork_holding(seconds: float) -> int:
    """A bare ``os.fork`` child that sleeps (holding whatever it inherited), then exits."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked child (coverage does not follow it)
        time.sleep(seconds)
        os._exit(0)
    return pid


def test_a_bare_fork_does_not_keep_a_masked_pipe_open(host: Host) -> None:
    """A child forked (no exec) while a pump runs closes its copy of the pump's write end,
    so the caller sees the masked pipe's end of file when the spawned child ends, not when
    the forked one does."""
    script = ["bash", "-c", "sleep 0.3; echo $DEPLOY_TOKEN"]
    child = popen(host, script, redact_output=True, **GIVE, **PIPES)  # type: ignore[arg-type]
    forked = _fork_holding(6)
    try:
        out, _ = child.communicate(timeout=4)  # the forked child sleeps past this
    finally:
        os.kill(forked, signal.SIGKILL)
        os.waitpid(forked, 0)
    assert _text(out) == MASK + "\n"
    for pump in [t for t in threading.enumerate() if t.name == "envscope-redact-pump"]:
        pump.join(timeout=10)
    assert not _masked_output.PUMP_ENDS.held()  # each pump closed its own end
