"""The guard reads the env a bare spawn really hands its child, and never breaks a spawn.

A bare spawn (``env=None``) passes the C environment: a raw ``os.putenv`` or
``os.unsetenv`` makes it differ from ``os.environ``. A spawn given
``os.environ`` itself passes what ``os.environ`` holds. And whatever goes
wrong while the guard checks, nothing but its own typed error leaves the hook.
"""

from __future__ import annotations

import errno
import logging
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import envscope
from envscope import GuardFailedError, Host, SpawnBlockedError
from envscope._c_environ import C_ENVIRON
from envscope._guard import _audit_hook, _env_of, offences
from tests.conftest import write_home

TOKEN = "fake-telegram-bot-token-0001"
TRUE = "/bin/true" if os.path.exists("/bin/true") else "/usr/bin/true"
CARRIER = "ENVSCOPE_TEST_CARRIER"


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Host]:
    """A guarded host whose launch .env declares a Tier 1 token (not in os.environ)."""
    home = write_home(tmp_path, "A", {"TELEGRAM_BOT_TOKEN": TOKEN})
    monkeypatch.delenv("TELEGRAM_BOT_TOKEN", raising=False)
    monkeypatch.delenv(CARRIER, raising=False)
    host = Host(home)
    host.load_launch_env()
    monkeypatch.delenv("TELEGRAM_BOT_TOKEN")  # the host keeps the launch value; the env not
    envscope.guard(host, mode="warn")  # installs the hook: raw writes are recorded from here
    yield host
    envscope.guard(host, mode="off")
    os.unsetenv(CARRIER)
    os.environ.pop(CARRIER, None)


def _carrier_key(host: Host, event: str, args: tuple[object, ...]) -> list[str]:
    env, implicit = _env_of(event, args)
    return [k for k in offences(host, env, implicit=implicit) if k.startswith(CARRIER)]


def _write(op: str, value: str = "") -> None:
    """One write to CARRIER, by the API a host might use."""
    if op == "os.environ":
        os.environ[CARRIER] = value
    elif op == "del os.environ":
        del os.environ[CARRIER]
    elif op == "putenv":
        os.putenv(CARRIER, value)
    elif op == "putenv bytes":
        os.putenv(CARRIER.encode(), value.encode())
    elif op == "putenv path":
        os.putenv(CARRIER, Path(value))
    else:
        assert op == "unsetenv"
        os.unsetenv(CARRIER)


# Each way a process can make its C environment and os.environ disagree about CARRIER
# (the writes, in order), and whether a bare spawn's child then holds the token under it.
WRITES: dict[str, tuple[list[tuple[str, str]], bool]] = {
    "putenv shadows an os.environ value": (
        [("os.environ", "harmless"), ("putenv", TOKEN)],
        True,
    ),
    "putenv of a name os.environ lacks": ([("putenv", TOKEN)], True),
    "putenv with bytes": ([("putenv bytes", TOKEN)], True),
    "putenv with a path-like value": ([("putenv path", TOKEN)], True),
    "putenv then os.environ writes the same name": (
        [("putenv", TOKEN), ("os.environ", "harmless")],
        False,
    ),
    "unsetenv under an os.environ secret": ([("os.environ", TOKEN), ("unsetenv", "")], False),
    "os.environ alone": ([("os.environ", TOKEN)], True),
    "os.environ deletes a putenv value": (
        [("putenv", TOKEN), ("os.environ", "x"), ("del os.environ", "")],
        False,
    ),
}


@pytest.mark.parametrize("write", sorted(WRITES))
@pytest.mark.parametrize(
    ("event", "args"),
    [
        ("subprocess.Popen", (TRUE, [TRUE], None, None)),
        ("os.system", (b"true",)),
        ("os.exec", (TRUE, [TRUE], None)),
        ("os.spawn", (0, TRUE, [TRUE], None)),
    ],
    ids=["subprocess", "system", "execv", "spawnv"],
)
def test_a_bare_spawn_is_checked_on_the_c_environment(
    host: Host, write: str, event: str, args: tuple[object, ...]
) -> None:
    """Every raw write is seen by every inherited-env event: flagged iff the child holds it."""
    steps, child_holds_token = WRITES[write]
    for op, value in steps:
        _write(op, value)
    holds = (
        subprocess.run(["sh", "-c", f'[ "${CARRIER}" = "{TOKEN}" ]'], check=False).returncode == 0
    )
    assert holds is child_holds_token  # the model agrees with a real child
    assert bool(_carrier_key(host, event, args)) is child_holds_token


@pytest.mark.parametrize("environ_arg", ["os.environ", "os.environb"])
def test_env_os_environ_is_what_os_environ_holds(host: Host, environ_arg: str) -> None:
    """``env=os.environ`` hands over the mapping: a raw putenv does not reach it."""
    os.environ[CARRIER] = "harmless"
    os.putenv(CARRIER, TOKEN)
    mapping = os.environ if environ_arg == "os.environ" else os.environb
    assert _carrier_key(host, "os.posix_spawn", (TRUE, [TRUE], mapping)) == []
    child = subprocess.run(
        ["sh", "-c", f'printf %s "${CARRIER}"'], env=mapping, capture_output=True, check=True
    )
    assert child.stdout == b"harmless"


def test_a_write_before_the_guard_is_installed_is_seeded(host: Host) -> None:
    """A putenv made before the hook existed is found by the one walk at install."""
    os.environ[CARRIER] = "harmless"
    os.putenv(CARRIER, TOKEN)
    C_ENVIRON.names.pop(CARRIER, None)  # as if the write preceded the hook
    assert _carrier_key(host, "os.system", (b"true",)) == []
    C_ENVIRON.reset()
    assert _carrier_key(host, "os.system", (b"true",)) == [
        f"{CARRIER} (the value of TELEGRAM_BOT_TOKEN)"
    ]


def test_a_write_event_with_no_python_caller_is_recorded(host: Host) -> None:
    """Recorded from a frame with nothing above it (a thread started from C): a raw write."""
    import _thread

    C_ENVIRON.names.pop(CARRIER, None)
    done = threading.Event()

    def record() -> None:  # the thread's only frame: record() finds no caller two up
        C_ENVIRON.record((CARRIER.encode(), TOKEN.encode()))
        done.set()

    _thread.start_new_thread(record, ())
    assert done.wait(10)
    assert CARRIER in C_ENVIRON.names


def test_the_putenv_shadow_blocks_a_real_spawn(host: Host) -> None:
    """``os.environ["NOTE"] = "harmless"; os.putenv("NOTE", token)``: subprocess.run is refused."""
    envscope.guard(host, mode="raise")
    os.environ[CARRIER] = "harmless"
    os.putenv(CARRIER, TOKEN)
    with pytest.raises(SpawnBlockedError) as info:
        subprocess.run([TRUE], check=False)
    assert f"{CARRIER} (the value of TELEGRAM_BOT_TOKEN)" in info.value.keys
    assert TOKEN not in str(info.value)


# -- a check that fails never breaks the spawn bare ----------------------------------

FAILURES: dict[str, BaseException] = {
    "a NULL read as a TypeError": TypeError("expected bytes, NoneType found"),
    "a churning mapping": RuntimeError("dictionary changed size during iteration"),
    "an unreadable manifest": envscope.ManifestError("plugins/x/plugin.yaml", "unreadable"),
    "an OSError": OSError(errno.EIO, "I/O error"),
    "a decoding error": UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
}


@pytest.mark.parametrize("failure", sorted(FAILURES))
@pytest.mark.parametrize("mode", ["raise", "warn"])
def test_a_failed_check_warns_or_refuses_typed(
    host: Host,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    failure: str,
    mode: str,
) -> None:
    """warn: one warning, the spawn runs; raise: GuardFailedError, never the bare error."""
    envscope.guard(host, mode=mode)  # type: ignore[arg-type]
    caplog.set_level(logging.WARNING, logger="envscope.guard")

    def fail(*_args: object, **_kwargs: object) -> list[str]:
        raise FAILURES[failure]

    monkeypatch.setattr("envscope._guard.offences", fail)
    if mode == "raise":
        with pytest.raises(GuardFailedError) as info:
            subprocess.run([TRUE], check=False)
        assert isinstance(info.value, SpawnBlockedError)
        assert info.value.__cause__ is FAILURES[failure]
        assert "could not check" in str(info.value)
        return
    for _ in range(2):
        assert subprocess.run([TRUE], check=False).returncode == 0
    warned = [r.getMessage() for r in caplog.records if r.name == "envscope.guard"]
    assert len(warned) == 1
    assert "was not checked" in warned[0]


# -- churn: a thread writing the environment while spawns run ------------------------


def _churn(stop: threading.Event) -> None:
    """Set, overwrite, putenv, unsetenv and delete names as fast as the GIL allows."""
    i = 0
    while not stop.is_set():
        name = f"ENVSCOPE_CHURN_{i % 40}"
        os.environ[name] = "v" * (i % 9)
        os.putenv(f"ENVSCOPE_CHURN_RAW_{i % 13}", "r" * (i % 5))
        if i % 3 == 0:
            os.environ.pop(f"ENVSCOPE_CHURN_{(i * 7) % 40}", None)
            os.unsetenv(f"ENVSCOPE_CHURN_RAW_{(i * 5) % 13}")
        i += 1


@pytest.fixture
def churning() -> Iterator[None]:
    stop = threading.Event()
    thread = threading.Thread(target=_churn, args=(stop,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        for i in range(40):
            os.environ.pop(f"ENVSCOPE_CHURN_{i}", None)
        for i in range(13):
            os.unsetenv(f"ENVSCOPE_CHURN_RAW_{i}")


@pytest.mark.no_cover
@pytest.mark.parametrize("mode", ["raise", "warn"])
def test_no_exception_escapes_the_guard_under_churn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, churning: None, mode: str
) -> None:
    """Thousands of guarded spawn events and hundreds of real bare spawns beside a writer thread.

    The parent env is clean (nothing to block): any exception out of the hook is
    the guard breaking a spawn. A real bare spawn can still fail with EFAULT in
    the child's ``execve``: libc's ``setenv`` racing ``fork`` corrupts the
    inherited array with or without the guard (docs/guard.md, "Limits").
    """
    for name in list(os.environ):
        if name.endswith(("_TOKEN", "_KEY", "_SECRET")):
            monkeypatch.delenv(name)
    host = Host(write_home(tmp_path, "A", {"TELEGRAM_BOT_TOKEN": TOKEN}))
    host.load_launch_env()
    monkeypatch.delenv("TELEGRAM_BOT_TOKEN")
    envscope.guard(host, mode=mode)  # type: ignore[arg-type]
    every = 1 if mode == "warn" else 10  # warn: 700 real bare spawns; raise: 300 and events
    try:
        deadline = time.monotonic() + 30
        for n in range(700 if mode == "warn" else 3000):
            _audit_hook("subprocess.Popen", (TRUE, [TRUE], None, None))
            if n % every == 0:
                try:
                    subprocess.run([TRUE], check=False)
                except OSError as exc:  # the child's execve, never the hook
                    failed_exec = exc.errno
                    assert failed_exec == errno.EFAULT
            if time.monotonic() > deadline:
                break
        assert n > 500, "the churn starved the spawns"
    finally:
        envscope.guard(host, mode="off")


@pytest.mark.parametrize(
    ("args", "recorded"),
    [
        ((b"ENVSCOPE_TEST_RAW", b"v"), "ENVSCOPE_TEST_RAW"),
        (("ENVSCOPE_TEST_RAW",), "ENVSCOPE_TEST_RAW"),
        ((42, b"v"), None),
        ((), None),
    ],
)
def test_record_takes_a_name_as_putenv_got_it(
    args: tuple[object, ...], recorded: str | None
) -> None:
    """Called from a frame that is not os.environ's: bytes or text names are recorded, else none."""
    view = type(C_ENVIRON)()
    view.record(args)  # what the hook does (CPython does not trace audit hooks)
    assert list(view.names) == ([] if recorded is None else [recorded])
    assert "v" not in repr(view.names)
