"""envscope.spawn: subprocess/asyncio helpers and the context-preserving executor helpers."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from envscope import ConfigurationError, Host, spawn
from tests.conftest import HostFactory

PRINT_ENV = [sys.executable, "-c", "import json, os; print(json.dumps(dict(os.environ)))"]
SECRETS = {"TELEGRAM_BOT_TOKEN": "fake-telegram-0000", "OPENAI_API_KEY": "sk-fake-000000000"}


def _host(make_host: HostFactory) -> Host:
    return make_host({"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "KEEP": "k", **SECRETS})


def _child_env(stdout: bytes | str) -> dict[str, str]:
    env: dict[str, str] = json.loads(stdout)
    env.pop("LC_CTYPE", None)  # the child's Python may coerce the locale (PEP 538)
    return env


def test_run_builds_the_env_in_the_callers_context(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """S57: spawn.run(surface=worker) inside routed(B) runs the child with B's env and home."""
    host = _host(make_host)
    with host.routed(homes["B"]):
        expected = host.build_subprocess_env(surface="worker")
        done = spawn.run(host, PRINT_ENV, surface="worker", capture_output=True, check=True)
    assert _child_env(done.stdout) == expected
    assert expected["ENVSCOPE_HOME"] == str(homes["B"])
    assert expected["B_MARKER"] == "b"
    assert not set(SECRETS) & set(expected)


def test_popen_extra_and_passthrough(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """spawn.popen passes extra= and passthrough= to the build, and the child gets them."""
    host = _host(make_host)
    with host.routed(homes["B"]):
        proc = spawn.popen(
            host, PRINT_ENV, surface="terminal", extra={"X_EXTRA": "1"},
            passthrough=["B_MARKER"], stdout=subprocess.PIPE,
        )  # fmt: skip
        out, _ = proc.communicate(timeout=60)
    env = _child_env(out)
    assert (env["X_EXTRA"], env["B_MARKER"], env["KEEP"]) == ("1", "b", "k")
    assert not set(SECRETS) & set(env)


def test_asyncio_helpers_build_the_env(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """create_subprocess_exec/shell run the child with the env built in the calling task."""
    host = _host(make_host)

    async def both() -> tuple[bytes, bytes, dict[str, str]]:
        with host.routed(homes["B"]):
            expected = host.build_subprocess_env(surface="script")
            proc = await spawn.create_subprocess_exec(
                host, *PRINT_ENV, surface="script", stdout=asyncio.subprocess.PIPE
            )
            out_exec, _ = await proc.communicate()
            shell = await spawn.create_subprocess_shell(
                host, f"{sys.executable} -c 'import json, os; print(json.dumps(dict(os.environ)))'",
                surface="script", stdout=asyncio.subprocess.PIPE,
            )  # fmt: skip
            out_shell, _ = await shell.communicate()
        return out_exec, out_shell, expected

    out_exec, out_shell, expected = asyncio.run(both())
    assert _child_env(out_exec) == expected
    shell_env = _child_env(out_shell)
    for key in ("PWD", "SHLVL", "_", "OLDPWD"):  # the shell sets these itself
        shell_env.pop(key, None)
    assert shell_env == expected


def _exec(host: Host) -> None:
    asyncio.run(spawn.create_subprocess_exec(host, "true", surface="terminal", env={}))


def _shell(host: Host) -> None:
    asyncio.run(spawn.create_subprocess_shell(host, "true", surface="terminal", env={}))


@pytest.mark.parametrize(
    "call",
    [
        lambda h: spawn.run(h, ["true"], surface="terminal", env={}),
        lambda h: spawn.popen(h, ["true"], surface="terminal", env=None),
        _exec,
        _shell,
    ],
    ids=["run", "popen", "create_subprocess_exec", "create_subprocess_shell"],
)
def test_env_keyword_is_refused(make_host: HostFactory, call: Callable[[Host], object]) -> None:
    """Every helper refuses env= (even env=None) with an error saying what to pass instead."""
    with pytest.raises(ConfigurationError, match=r"env= is refused.*extra="):
        call(make_host())


def test_binding_survives_into_executor_threads(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """S57: run_in_executor/submit keep the routed binding; a bare run_in_executor loses it."""
    host = _host(make_host)

    def worker_home() -> str | None:
        return host.build_subprocess_env(surface="worker").get("ENVSCOPE_HOME")

    async def in_loop(pool: ThreadPoolExecutor) -> tuple[str | None, str | None, str | None]:
        with host.routed(homes["B"]):
            kept = await spawn.run_in_executor(pool, worker_home)
            bare = await asyncio.get_running_loop().run_in_executor(pool, host.bound_home)
            submitted = spawn.submit(pool, worker_home).result(timeout=60)
        return kept, bare, submitted

    with ThreadPoolExecutor(max_workers=2) as pool:
        kept, bare, submitted = asyncio.run(in_loop(pool))
    assert kept == submitted == str(homes["B"])
    assert bare is None  # what the helper exists for


def test_in_context_runs_in_several_threads_at_once(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """One in_context wrapper runs concurrently in several threads, each with the binding."""
    host = _host(make_host)
    with host.routed(homes["B"]):
        bound = spawn.in_context(host.bound_home)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: bound(), range(16)))
    assert results == [str(homes["B"])] * 16


def test_worker_thread_child_gets_its_home(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """A kanban-style worker thread started through submit runs a child with home_env_var=B."""
    host = _host(make_host)

    def job() -> dict[str, str]:
        done = spawn.run(host, PRINT_ENV, surface="worker", capture_output=True, check=True)
        return _child_env(done.stdout)

    with host.routed(homes["B"]), ThreadPoolExecutor(max_workers=1) as pool:
        env = spawn.submit(pool, job).result(timeout=60)
    assert env["ENVSCOPE_HOME"] == str(homes["B"])


def test_run_passes_grant_to_an_mcp_build(make_host: HostFactory) -> None:
    """spawn.run forwards grant=: a host token copied into an MCP block passes only when granted."""
    token = "ghp_host0000000000000000000000"
    host = make_host({"PATH": os.environ["PATH"], "GITHUB_TOKEN": token})
    block = {"GITHUB_PERSONAL_ACCESS_TOKEN": token}
    probe = [
        sys.executable,
        "-c",
        "import os; print(os.environ.get('GITHUB_PERSONAL_ACCESS_TOKEN', ''))",
    ]
    refused = spawn.run(host, probe, surface="mcp", extra=block, capture_output=True, text=True)
    granted = spawn.run(
        host,
        probe,
        surface="mcp",
        extra=block,
        grant=["GITHUB_PERSONAL_ACCESS_TOKEN"],
        capture_output=True,
        text=True,
    )
    assert refused.stdout.strip() == ""
    assert granted.stdout.strip() == token
