"""envscope.guard: the audit-hook runtime guard, with real spawns in each mode."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import envscope
from envscope import ConfigurationError, Host, SpawnBlockedError, Surface
from envscope._guard import _SWITCH, SPAWN_EVENTS, _audit_hook, _env_of, offences
from tests.conftest import HostFactory, write_home

BOT = "fake-telegram-bot-token-0001"
OPENAI = "sk-fake-openai-key-0000000001"
TRUE = "/bin/true" if os.path.exists("/bin/true") else "/usr/bin/true"


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Host]:
    """A host over the real os.environ holding a Tier 1 and a Tier 2 secret; guard off after."""
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", BOT)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI)
    yield Host(write_home(tmp_path, "A"))
    envscope.guard(Host(str(tmp_path)), mode="off")


def _run(env: dict[str, str] | None) -> int:
    return subprocess.run([TRUE], env=env, check=False).returncode


def _system(env: dict[str, str] | None) -> int:
    assert env is None
    return os.waitstatus_to_exitcode(os.system(TRUE))


def _posix_spawn(env: dict[str, str] | None) -> int:
    pid = os.posix_spawn(TRUE, [TRUE], os.environ if env is None else env)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


class _PipeHandler(logging.Handler):
    """Writes each record's message to a pipe (the forked child's log reaches the parent)."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd

    def emit(self, record: logging.LogRecord) -> None:
        os.write(self.fd, (record.getMessage() + "\n").encode())


def _execve_in_fork(env: dict[str, str] | None) -> int:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked child (coverage does not follow it)
        os.close(read)
        logging.getLogger("envscope.guard").addHandler(_PipeHandler(write))
        try:
            if env is None:
                os.execv(TRUE, [TRUE])
            os.execve(TRUE, [TRUE], env)
        except SpawnBlockedError as exc:
            os.write(write, f"blocked: {exc}\n".encode())
            os._exit(70)
        os._exit(71)
    os.close(write)
    status = os.waitpid(pid, 0)[1]
    with os.fdopen(read) as fh:
        for line in fh:  # replay what the child logged, so the test asserts one way
            if line.startswith("blocked: "):
                raise SpawnBlockedError("forked child", "os.exec", [line.strip()])
            logging.getLogger("envscope.guard").warning(line.strip())
    return os.waitstatus_to_exitcode(status)


SPAWNS: dict[str, Callable[[dict[str, str] | None], int]] = {
    "subprocess.run": _run,
    "os.system": _system,
    "os.posix_spawn": _posix_spawn,
    "os.execve-in-fork": _execve_in_fork,
}


@pytest.mark.parametrize("spawn", sorted(SPAWNS))
@pytest.mark.parametrize("mode", ["raise", "warn", "off"])
def test_inherited_env_with_a_host_secret(
    host: Host, caplog: pytest.LogCaptureFixture, spawn: str, mode: str
) -> None:
    """An inherited env holding a Tier 1 secret is blocked (raise), warned once, or runs."""
    envscope.guard(host, mode=mode)  # type: ignore[arg-type]
    caplog.set_level(logging.WARNING, logger="envscope.guard")
    if mode == "raise":
        with pytest.raises(SpawnBlockedError) as info:
            SPAWNS[spawn](None)
        assert "TELEGRAM_BOT_TOKEN" in str(info.value)
        assert "OPENAI_API_KEY" in str(info.value)
        assert BOT not in str(info.value)
        assert OPENAI not in str(info.value)
        return
    assert SPAWNS[spawn](None) == 0
    warned = [r for r in caplog.records if r.name == "envscope.guard"]
    assert len(warned) == (1 if mode == "warn" else 0)
    if warned:
        assert "TELEGRAM_BOT_TOKEN" in warned[0].getMessage()
        assert BOT not in warned[0].getMessage()


@pytest.mark.parametrize("spawn", ["subprocess.run", "os.posix_spawn", "os.execve-in-fork"])
@pytest.mark.parametrize("surface", ["terminal", "credentialed", "mcp"])
def test_env_built_by_envscope_runs_under_raise(
    host: Host, caplog: pytest.LogCaptureFixture, spawn: str, surface: str
) -> None:
    """The same spawn with an env built by envscope runs, on every surface, unlogged."""
    envscope.guard(host, mode="raise")
    assert SPAWNS[spawn](host.build_subprocess_env(surface=surface)) == 0
    assert not [r for r in caplog.records if r.name == "envscope.guard"]


def test_a_copied_secret_under_another_name_is_named(host: Host) -> None:
    """A host secret under any name is caught by value; the error names key and secret, site."""
    envscope.guard(host, mode="raise")
    with pytest.raises(SpawnBlockedError) as info:
        _run({"PATH": "/usr/bin", "NOT_A_SECRET_NAME": BOT})
    err = info.value
    assert err.keys == ["NOT_A_SECRET_NAME (the value of TELEGRAM_BOT_TOKEN)"]
    assert err.event == "subprocess.Popen"
    assert err.site.startswith(f"{__file__}:")
    assert err.site.endswith("in _run")
    assert BOT not in str(err)


def test_warn_logs_once_per_call_site(host: Host, caplog: pytest.LogCaptureFixture) -> None:
    """warn logs each call site once: a loop at one line logs once, another line logs again."""
    envscope.guard(host, mode="warn")
    caplog.set_level(logging.WARNING, logger="envscope.guard")
    for _ in range(3):
        subprocess.run([TRUE], check=True)
    subprocess.run([TRUE], check=True)
    sites = [r.getMessage().split(": ")[0] for r in caplog.records if r.name == "envscope.guard"]
    assert len(sites) == 2
    assert len(set(sites)) == 2


def test_guard_switch_and_modes(host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook is added once; later calls only move the switch; a bad mode is an error."""
    envscope.guard(host, mode="warn")
    added: list[object] = []
    monkeypatch.setattr(sys, "addaudithook", added.append)
    envscope.guard(host, mode="raise")
    assert getattr(_SWITCH.active, "mode", None) == "raise"
    envscope.guard(host, mode="off")
    assert getattr(_SWITCH.active, "mode", None) is None
    assert _run(None) == 0  # off: the inherited secret passes
    with pytest.raises(ConfigurationError, match="mode"):
        envscope.guard(host, mode="block")  # type: ignore[arg-type]
    assert added == []


class _Untouchable:
    """Counts every attribute access (and fails it): the hook must not look."""

    touched = 0

    def __getattribute__(self, name: str) -> object:
        type(self).touched += 1
        raise AssertionError(f"the hook looked at {name}")

    def __len__(self) -> int:  # pragma: no cover - the assertion is that it is never called
        type(self).touched += 1
        raise AssertionError("the hook looked at len(args)")


@pytest.mark.parametrize(
    "event", ["open", "import", "exec", "compile", "os.listdir", "socket.connect", "os.kill"]
)
def test_non_spawn_events_look_at_nothing_but_the_name(
    monkeypatch: pytest.MonkeyPatch, event: str
) -> None:
    """For a non-spawn event the hook reads neither its arguments nor the guard's switch."""
    monkeypatch.setattr("envscope._guard._SWITCH", _Untouchable())
    args = _Untouchable()
    _audit_hook(event, args)  # type: ignore[arg-type]
    assert _Untouchable.touched == 0
    assert event not in SPAWN_EVENTS


@pytest.mark.parametrize(
    ("event", "args", "env", "implicit"),
    [
        ("subprocess.Popen", ("x", ["x"], None, None), os.environ, True),
        ("subprocess.Popen", ("x", ["x"], None, os.environ), os.environ, True),
        ("subprocess.Popen", ("x", ["x"], None, {"K": "v"}), {"K": "v"}, False),
        ("os.exec", ("x", ["x"], {b"K": b"v", "J": 3}), {"K": "v"}, False),
        ("os.exec", ("x", ["x"], None), os.environ, True),
        ("os.posix_spawn", ("x", ["x"], {"K": "v"}), {"K": "v"}, False),
        ("os.spawn", (0, "x", ["x"], {"K": "v"}), {"K": "v"}, False),
        ("os.system", ("true",), os.environ, True),
        ("os.startfile", ("x", "open"), os.environ, True),
        ("os.posix_spawn", ("x", ["x"], ["not", "a", "mapping"]), {}, False),
    ],
)  # fmt: skip
def test_env_of_each_spawn_event(
    event: str, args: tuple[object, ...], env: object, implicit: bool
) -> None:
    """Each spawn event's env: the explicit mapping (text only), else a process-env snapshot."""
    got, got_implicit = _env_of(event, args)
    assert got_implicit is implicit
    if env is os.environ:
        assert got is not os.environ
        assert dict(os.environ).items() <= got.items()  # a snapshot, the C environment joined
    else:
        assert got == env


@pytest.mark.parametrize(
    ("routed", "env", "implicit", "offending"),
    [
        (False, {"K": BOT}, False, ["K (the value of TELEGRAM_BOT_TOKEN)"]),
        (False, {"OPENAI_API_KEY": OPENAI}, False, []),  # a credentialed child's own key
        (False, {"OPENAI_API_KEY": OPENAI}, True,
         ["OPENAI_API_KEY (Tier 2, child does not inherit credentials)"]),
        (False, {"TELEGRAM_BOT_TOKEN": "short"}, True, ["TELEGRAM_BOT_TOKEN (Tier 1)"]),  # by name
        (False, {"TELEGRAM_BOT_TOKEN": "short"}, False, []),  # an explicit env: values only
        (False, {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_literal_0000000"}, False, []),
        (True, {"OPENAI_API_KEY": OPENAI}, False, ["OPENAI_API_KEY"]),  # a launch credential
        (True, {"OPENAI_API_KEY": "sk-b-own-key-000000"}, False, []),  # B's own
        (True, {"B_TOKEN_COPY": "fake-b-bot-token-000"}, False,
         ["B_TOKEN_COPY (the value of TELEGRAM_BOT_TOKEN)"]),  # B's own Tier 1
    ],
)  # fmt: skip
def test_guard_offences_table(
    make_host: HostFactory,
    homes: dict[str, Path],
    routed: bool,
    env: dict[str, str],
    implicit: bool,
    offending: list[str],
) -> None:
    """The rule by value (any name), Tier 2 only when inherited, launch credentials when routed."""
    write_home(
        homes["root"], "B", {"OPENAI_API_KEY": "sk-b-own-key-000000",
                             "TELEGRAM_BOT_TOKEN": "fake-b-bot-token-000"}
    )  # fmt: skip
    host = make_host({"PATH": "/b", "TELEGRAM_BOT_TOKEN": BOT, "OPENAI_API_KEY": OPENAI})
    if routed:
        with host.routed(homes["B"]):
            found = offences(host, env, implicit=implicit)
    else:
        found = offences(host, env, implicit=implicit)
    assert found == offending


def test_granted_values_pass(make_host: HostFactory) -> None:
    """A host secret granted to an MCP server's block key passes the guard afterwards."""
    host = make_host({"PATH": "/b", "GITHUB_TOKEN": "ghp_host0000000000000000"})
    block = {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_host0000000000000000"}
    assert offences(host, block, implicit=False) != []
    env = host.build_subprocess_env(surface=Surface.MCP, extra=block, grant=[*block])
    assert offences(host, env, implicit=False) == []
    copy = {"GH_TOKEN": block["GITHUB_PERSONAL_ACCESS_TOKEN"]}
    assert offences(host, copy, implicit=False) == ["GH_TOKEN (the value of GITHUB_TOKEN)"]
    other_host = make_host({"GITHUB_TOKEN": block["GITHUB_PERSONAL_ACCESS_TOKEN"]})
    assert offences(other_host, block, implicit=False) == [
        "GITHUB_PERSONAL_ACCESS_TOKEN (the value of GITHUB_TOKEN)"
    ]  # granted by one host only


@pytest.mark.parametrize("mode", ["raise", "warn", "off"])
def test_hook_called_directly(host: Host, caplog: pytest.LogCaptureFixture, mode: str) -> None:
    """The hook's own decisions, called in-process (CPython does not trace audit hooks)."""
    envscope.guard(host, mode=mode)  # type: ignore[arg-type]
    caplog.set_level(logging.WARNING, logger="envscope.guard")
    popen = ("x", ["x"], None, None)
    clean = ("x", ["x"], None, host.build_subprocess_env())
    _audit_hook("subprocess.Popen", clean)
    if mode == "raise":
        with pytest.raises(SpawnBlockedError, match=r"subprocess\.Popen blocked"):
            _audit_hook("subprocess.Popen", popen)
        return
    for _ in range(2):
        _audit_hook("subprocess.Popen", popen)
    assert len(caplog.records) == (1 if mode == "warn" else 0)


def _child() -> None:
    """A multiprocessing target (the test only checks whether it may start)."""


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_multiprocessing_spawn_and_forkserver_starts_are_guarded(
    make_host: HostFactory, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    """No audit event exists for these starts: the guard checks the inherited process env."""
    import multiprocessing

    monkeypatch.setenv("ENVSCOPE_TEST_MP_BOT", "fake-mp-bot-token-0123456")
    host = make_host({"PATH": "/b", "TELEGRAM_BOT_TOKEN": "fake-mp-bot-token-0123456"})
    envscope.guard(host, mode="raise")
    try:
        process = multiprocessing.get_context(method).Process(target=_child)  # type: ignore[attr-defined]
        with pytest.raises(SpawnBlockedError, match="ENVSCOPE_TEST_MP_BOT") as info:
            process.start()
        assert info.value.event == "multiprocessing.spawnv_passfds"
    finally:
        envscope.guard(host, mode="off")


FIRST_DECISION = """
import os, sys, tempfile
import envscope
SECRET = {"TELEGRAM_BOT_TOKEN": "fake-bot-0123456789"}
events = []
sys.addaudithook(lambda event, args: events.append(event) if event in EVENTS else None)
host = envscope.Host(tempfile.mkdtemp(), environ={"PATH": "/b", **SECRET})
envscope.guard(host, mode="raise")
try:
    os.execve(TRUE, [TRUE], SECRET)
except envscope.SpawnBlockedError:
    print(events)
"""


def test_the_guards_first_decision_spawns_nothing() -> None:
    """Deciding a spawn (the host's first policy, its change gate) starts no child of its own.

    A child started inside the decision would re-enter the guard while the host's
    cache lock is held: the process would hang on its first guarded spawn.
    """
    code = f"EVENTS = {sorted(SPAWN_EVENTS)!r}\nTRUE = {TRUE!r}\n{FIRST_DECISION}"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "['os.exec']"


_ITEM = st.one_of(
    st.text(max_size=6),
    st.binary(max_size=6),
    st.builds(Path, st.text(min_size=1, max_size=6).filter(lambda t: "\0" not in t)),
    st.integers(),
)


@given(env=st.dictionaries(_ITEM, _ITEM, max_size=6))
def test_a_dict_env_is_read_as_the_item_by_item_path_reads_it(env: dict[object, object]) -> None:
    """The fast path for a dict of text (read as it is) gives what the item-by-item decoding
    gives the same pairs through another mapping type, in order; any other dict takes that path."""
    args = (["/bin/true"], ["/bin/true"], None, env)
    wrapped = (["/bin/true"], ["/bin/true"], None, types.MappingProxyType(env))
    (fast, implicit), (slow, _) = (
        _env_of("subprocess.Popen", args),
        _env_of("subprocess.Popen", wrapped),
    )
    assert not implicit
    assert list(fast.items()) == list(slow.items())
