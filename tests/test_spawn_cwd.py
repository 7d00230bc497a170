"""A child started elsewhere is told where it runs: with ``cwd=``, ``PWD`` is that directory.

The launcher's ``PWD`` is a global name a built env keeps; a child started in
a worktree that trusts ``$PWD`` would otherwise work in the launcher's
checkout. A matrix over every spawn helper, every surface, routed or not: the
real child reports ``PWD`` as the ``cwd`` given (or has none), never the
launcher's.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envscope import Action, Reason, Surface, Trace, spawn
from envscope.host import Host
from envscope.pipeline.stages import at_cwd
from tests.conftest import HostFactory

LAUNCHER_PWD = "/home/op/main-checkout"
PRINT_PWD = [sys.executable, "-c", "import os; print(os.environ.get('PWD', '<none>'))"]


def _out(result: Any) -> str:
    out: bytes = result if isinstance(result, bytes) else result.stdout
    return out.decode().strip()


def _run(host: Host, surface: Surface, cwd: object) -> str:
    return _out(spawn.run(host, PRINT_PWD, surface=surface, cwd=cwd, capture_output=True))


def _popen(host: Host, surface: Surface, cwd: object) -> str:
    with spawn.popen(host, PRINT_PWD, surface=surface, cwd=cwd, stdout=subprocess.PIPE) as proc:
        out: bytes = proc.communicate()[0]
    return out.decode().strip()


def _check_output(host: Host, surface: Surface, cwd: object) -> str:
    return _out(spawn.check_output(host, PRINT_PWD, surface=surface, cwd=cwd))


def _into_pipe(call: Callable[..., object]) -> Callable[[Host, Surface, object], str]:
    """A helper that returns no output (``call``, ``check_call``), its stdout read from a pipe."""

    def run(host: Host, surface: Surface, cwd: object) -> str:
        read, write = os.pipe()
        try:
            call(host, PRINT_PWD, surface=surface, cwd=cwd, stdout=write)
        finally:
            os.close(write)
        with os.fdopen(read) as fh:
            return fh.read().strip()

    return run


def _exec(host: Host, surface: Surface, cwd: object) -> str:
    async def go() -> str:
        proc = await spawn.create_subprocess_exec(
            host, *PRINT_PWD, surface=surface, cwd=cwd, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await proc.communicate()
        return out.decode().strip()

    return asyncio.run(go())


def _shell(host: Host, surface: Surface, cwd: object) -> str:
    async def go() -> str:
        command = shlex.join(PRINT_PWD)
        proc = await spawn.create_subprocess_shell(
            host, command, surface=surface, cwd=cwd, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await proc.communicate()
        return out.decode().strip()

    return asyncio.run(go())


HELPERS: dict[str, Callable[[Host, Surface, object], str]] = {
    "run": _run,
    "popen": _popen,
    "call": _into_pipe(spawn.call),
    "check_call": _into_pipe(spawn.check_call),
    "check_output": _check_output,
    "create_subprocess_exec": _exec,
    "create_subprocess_shell": _shell,
}


@pytest.mark.parametrize("helper", sorted(HELPERS))
@pytest.mark.parametrize("surface", list(Surface), ids=lambda s: s.value)
@pytest.mark.parametrize("routed", [False, True], ids=["launch", "routed"])
def test_the_child_is_told_where_it_runs(
    make_host: HostFactory,
    homes: dict[str, Path],
    tmp_path: Path,
    helper: str,
    surface: Surface,
    routed: bool,
) -> None:
    """Every helper, surface and binding: PWD is the cwd given, or absent; never the launcher's."""
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    host = make_host({"PATH": os.environ["PATH"], "HOME": "/home/op", "PWD": LAUNCHER_PWD})
    if routed:
        with host.routed(homes["B"]):
            seen = HELPERS[helper](host, surface, worktree)
    else:
        seen = HELPERS[helper](host, surface, worktree)
    assert seen != LAUNCHER_PWD
    assert seen in (str(worktree), "<none>")
    if surface is not Surface.MCP:  # the allowlist surface carries no PWD
        assert seen == str(worktree)


@pytest.mark.parametrize(
    "cwd",
    [
        pytest.param(lambda d: d, id="path"),
        pytest.param(str, id="str"),
        pytest.param(lambda d: os.fsencode(str(d)), id="bytes"),
        pytest.param(lambda d: os.path.relpath(d), id="relative"),
    ],
)
def test_at_cwd_spellings_and_trace(tmp_path: Path, cwd: Callable[[Path], object]) -> None:
    """Every spelling subprocess takes is made absolute; the trace names the rule."""
    trace = Trace()
    env = at_cwd({"PWD": LAUNCHER_PWD, "PATH": "/bin"}, cwd(tmp_path), trace)
    assert env == {"PWD": str(tmp_path), "PATH": "/bin"}
    (decision,) = trace.for_key("PWD")
    assert (decision.action, decision.reason) == (Action.OVERRIDDEN, Reason.SPAWN_CWD)


def test_without_cwd_or_pwd_nothing_changes(tmp_path: Path) -> None:
    """No cwd: the launcher's PWD is the child's own directory too. No PWD: none is added."""
    assert at_cwd({"PWD": LAUNCHER_PWD}, None) == {"PWD": LAUNCHER_PWD}
    assert at_cwd({"PATH": "/bin"}, tmp_path) == {"PATH": "/bin"}


def test_mcp_server_parameters_follow_their_cwd(make_host: HostFactory, tmp_path: Path) -> None:
    """The MCP helper's cwd= tells the server too (when its env carries PWD)."""
    pytest.importorskip("mcp", reason="the MCP SDK is an optional extra")
    from envscope.mcp import stdio_server_parameters

    host = make_host({"PATH": "/usr/bin", "PWD": LAUNCHER_PWD})
    params = stdio_server_parameters(
        host, "server", cwd=tmp_path, passthrough=["PWD"], sdk_defaults="allow"
    )
    assert params.env is not None
    assert params.env.get("PWD", str(tmp_path)) == str(tmp_path)
