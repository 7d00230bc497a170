"""envscope.spawn: subprocess/asyncio helpers and the context-preserving executor helpers."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import pytest

from envscope import ConfigurationError, Host, Trace, spawn
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
    """spawn.run(surface=worker) inside routed(B) runs the child with B's env and home."""
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
        lambda h: spawn.call(h, ["true"], surface="terminal", env={}),
        lambda h: spawn.check_call(h, ["true"], surface="terminal", env={}),
        lambda h: spawn.check_output(h, ["true"], surface="terminal", env={}),
        _exec,
        _shell,
    ],
    ids=[
        "run",
        "popen",
        "call",
        "check_call",
        "check_output",
        "create_subprocess_exec",
        "create_subprocess_shell",
    ],
)
def test_env_keyword_is_refused(make_host: HostFactory, call: Callable[[Host], object]) -> None:
    """Every helper refuses env= (even env=None) with an error saying what to pass instead."""
    with pytest.raises(ConfigurationError, match=r"env= is refused.*extra="):
        call(make_host())


def test_binding_survives_into_executor_threads(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """run_in_executor/submit keep the routed binding; a bare run_in_executor loses it."""
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


def _popen_out(host: Host, trace: Trace) -> bytes:
    proc = spawn.popen(host, PRINT_ENV, surface="worker", trace=trace, stdout=subprocess.PIPE)
    out, _ = proc.communicate(timeout=60)
    return bytes(out)


def _async_exec_out(host: Host, trace: Trace) -> bytes:
    async def go() -> bytes:
        proc = await spawn.create_subprocess_exec(
            host, *PRINT_ENV, surface="worker", trace=trace, stdout=asyncio.subprocess.PIPE
        )
        return (await proc.communicate())[0]

    return asyncio.run(go())


def _async_shell_out(host: Host, trace: Trace) -> bytes:
    async def go() -> bytes:
        proc = await spawn.create_subprocess_shell(
            host, f"exec {PRINT_ENV[0]} -c 'import json, os; print(json.dumps(dict(os.environ)))'",
            surface="worker", trace=trace, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        return (await proc.communicate())[0]

    return asyncio.run(go())


def _sync(name: str) -> Callable[[Host, Trace], bytes]:
    """Run PRINT_ENV through spawn.<name> with its output in a file (call/check_call have none)."""

    def go(host: Host, trace: Trace) -> bytes:
        if name == "check_output":
            return bytes(spawn.check_output(host, PRINT_ENV, surface="worker", trace=trace))
        if name == "run":
            done = spawn.run(host, PRINT_ENV, surface="worker", trace=trace, capture_output=True)
            return bytes(done.stdout)
        helper = getattr(spawn, name)
        with open(os.devnull, "wb") as sink:
            status = helper(host, [PRINT_ENV[0], "-c", "import sys; sys.exit(3)"],
                            surface="worker", trace=trace, stdout=sink)  # fmt: skip
        return json.dumps({"status": status}).encode()

    return go


SPAWNERS: dict[str, Callable[[Host, Trace], bytes]] = {
    "run": _sync("run"),
    "popen": _popen_out,
    "check_output": _sync("check_output"),
    "create_subprocess_exec": _async_exec_out,
    "create_subprocess_shell": _async_shell_out,
}


@pytest.mark.parametrize("name", sorted(SPAWNERS))
def test_trace_is_recorded_not_passed_to_subprocess(
    name: str, make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """trace= on every helper records the build (one decision per key) and never reaches Popen."""
    host = _host(make_host)
    trace = Trace()
    with host.routed(homes["B"]):
        expected = host.build_subprocess_env(surface="worker")
        out = SPAWNERS[name](host, trace)
    env = _child_env(out)
    for key in ("PWD", "SHLVL", "_", "OLDPWD"):  # a shell sets these itself
        env.pop(key, None)
    assert env == expected
    decided = {d.key for d in trace.final().values()}
    assert set(SECRETS) <= decided
    assert set(trace.context.child_keys) == set(expected)


@pytest.mark.parametrize(
    ("name", "expected"),
    [("call", 3), ("check_call", subprocess.CalledProcessError)],
)
def test_call_mirrors_return_or_raise_like_subprocess(
    name: str, expected: object, make_host: HostFactory
) -> None:
    """call returns the exit status and check_call raises CalledProcessError, as subprocess does."""
    host = _host(make_host)
    trace = Trace()
    if isinstance(expected, int):
        assert json.loads(_sync(name)(host, trace)) == {"status": expected}
    else:
        with pytest.raises(subprocess.CalledProcessError):
            _sync(name)(host, trace)
    assert trace.context.child_keys  # the build was traced


def _submit(pool: Executor, fn: Callable[[], object]) -> object:
    return spawn.submit(pool, fn)


def _in_executor(pool: Executor, fn: Callable[[], object]) -> object:
    return asyncio.run(spawn.run_in_executor(pool, fn))


@pytest.mark.parametrize("helper", [_submit, _in_executor], ids=["submit", "run_in_executor"])
def test_process_pool_is_a_configuration_error(
    helper: Callable[[Executor, Callable[[], object]], object], make_host: HostFactory
) -> None:
    """A process pool is refused inside envscope's error tree, before any pickling is tried."""
    host = _host(make_host)
    with (
        ProcessPoolExecutor(max_workers=1) as pool,
        pytest.raises(ConfigurationError, match="process pool cannot carry the routed"),
    ):
        helper(pool, host.bound_home)


@pytest.mark.parametrize("name", ["spawn", "mcp"])
def test_submodules_reachable_from_the_package(name: str) -> None:
    """``import envscope`` then ``envscope.spawn``/``envscope.mcp`` works (loaded on first use)."""
    code = (
        "import sys, envscope; "
        f"loaded = 'envscope.{name}' in sys.modules; "
        f"module = envscope.{name}; "
        f"print(loaded, module.__name__, 'pydantic' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split()[:2] == ["False", f"envscope.{name}"]
