"""The runtime guard and a secret source's own CLI call: the one spawn that carries a credential.

A CLI source (``op``, ``bws``, ``pass``) hands its client the source's own
credentials, which the host declares Tier 1 for every child. Under
``envscope.guard`` that spawn must run (``source-own``), in each mode and on
each path that fetches (the launch load, a routed scope), and the exemption
must cover nothing else: not another name in the same env, not a copy of the
env, not another thread, not a spawn after the call.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import envscope
from envscope import BitwardenSource, Host, OnePasswordSource, PassSource, SpawnBlockedError
from envscope._guard import offences
from envscope.policy._cli_source import own_credentials, run_source_cli
from tests.conftest import write_home

SECRET_ID = "3c8f0a7e-1b2c-4d5e-8f90-a1b2c3d4e5f6"
VALUE = "fetched-value-0123456789"
OP_TOKEN = "ops_eyJfake" + "A1b2C3d4E5" * 6
BWS_TOKEN = "0.48b4774c-68ff-4a4b-9d45-1d2a3b4c5d6e.FAKEbwsACCESStoken0123456789:abcdEFGHijkl=="
TRUE = "/bin/true" if os.path.exists("/bin/true") else "/usr/bin/true"

# One fake for the three clients: it records its env and answers as each documents
# (op read: the value; bws secret get: JSON with "value"; pass show: the value first).
FAKE = r"""#!{python}
import json, os, sys
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "env.json"), "w") as out:
    json.dump(dict(os.environ), out)
if sys.argv[1] == "secret":
    print(json.dumps({{"id": sys.argv[3], "value": "{value}"}}))
elif sys.argv[1] == "show":
    print("{value}\nnotes")
else:
    sys.stdout.write("{value}")
"""

Made = tuple[object, dict[str, str]]  # the source, the credentials it hands over


def _fake(where: Path, name: str) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    exe = where / name
    exe.write_text(FAKE.format(python=sys.executable, value=VALUE))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def _op(tmp: Path) -> Made:
    exe = _fake(tmp / "bin", "op")
    source = OnePasswordSource({"*": {"GH_TOKEN": "op://dev/gh/token"}}, executable=str(exe))
    return source, {"OP_SERVICE_ACCOUNT_TOKEN": OP_TOKEN}


def _bws(tmp: Path) -> Made:
    exe = _fake(tmp / "bin", "bws")
    source = BitwardenSource({"*": {"GH_TOKEN": SECRET_ID}}, executable=str(exe))
    return source, {"BWS_ACCESS_TOKEN": BWS_TOKEN}


def _pass(tmp: Path) -> Made:
    exe = _fake(tmp / "bin", "pass")
    store = tmp / "store"
    (store / "dev").mkdir(parents=True)
    (store / "dev" / "gh.gpg").write_bytes(b"not read by the fake")
    source = PassSource({"*": {"GH_TOKEN": "dev/gh"}}, executable=str(exe))
    return source, {"PASSWORD_STORE_DIR": str(store)}  # settings: no credential


SOURCES: dict[str, Callable[[Path], Made]] = {"1password": _op, "bitwarden": _bws, "pass": _pass}


def _fetch_at_launch(host: Host, tmp: Path) -> None:
    host.load_launch_env()


def _fetch_routed(host: Host, tmp: Path) -> None:
    with host.routed(write_home(tmp, "B")):
        pass


FETCHES: dict[str, Callable[[Host, Path], None]] = {
    "load_launch_env": _fetch_at_launch,
    "routed": _fetch_routed,
}


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    envscope.guard(Host(str(tmp_path)), mode="off")


def _guarded_host(
    guarded: Path, monkeypatch: pytest.MonkeyPatch, kind: str, mode: str
) -> tuple[Host, dict[str, str]]:
    """A host with the ``kind`` source, its client's credentials in the process env, guarded."""
    source, handed = SOURCES[kind](guarded)
    for name, value in handed.items():
        monkeypatch.setenv(name, value)
    host = Host(write_home(guarded, "A"))
    host.add_secret_source(source)  # type: ignore[arg-type]
    envscope.guard(host, mode=mode)  # type: ignore[arg-type]
    return host, handed


@pytest.mark.parametrize("fetch", FETCHES)
@pytest.mark.parametrize("mode", ["raise", "warn"])
@pytest.mark.parametrize("kind", SOURCES)
def test_a_sources_own_cli_call_runs_under_the_guard(
    guarded: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    kind: str,
    mode: str,
    fetch: str,
) -> None:
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "fake-telegram-bot-token-0001")  # a host secret
    host, handed = _guarded_host(guarded, monkeypatch, kind, mode)
    with caplog.at_level(logging.WARNING, logger="envscope.guard"):
        FETCHES[fetch](host, guarded)
    assert not [r for r in caplog.records if r.name == "envscope.guard"]
    seen = json.loads((guarded / "bin" / "env.json").read_text())
    assert {k: seen.get(k) for k in handed} == handed  # from inside the child
    assert "TELEGRAM_BOT_TOKEN" not in seen
    assert host.source_failures() == ()


@pytest.mark.parametrize("kind", ["1password", "bitwarden"])
def test_the_exemption_leaves_a_record_naming_what_it_passed(
    guarded: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    """Each spawn the exemption passes is recorded at DEBUG on ``envscope.guard``: the event
    and the credential names, never a value."""
    host, handed = _guarded_host(guarded, monkeypatch, kind, "raise")
    with caplog.at_level(logging.DEBUG, logger="envscope.guard"):
        host.load_launch_env()
    (record,) = [r for r in caplog.records if "source-own" in r.getMessage()]
    assert record.levelno == logging.DEBUG
    for name, value in handed.items():
        assert name in record.getMessage()
        assert value not in record.getMessage()


@pytest.mark.parametrize("kind", ["1password", "bitwarden"])
def test_the_exemption_ends_with_the_call(
    guarded: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """After the fetch, the host's own spawn carrying the same credential is blocked."""
    host, handed = _guarded_host(guarded, monkeypatch, kind, "raise")
    host.load_launch_env()
    with pytest.raises(SpawnBlockedError, match=next(iter(handed))):
        subprocess.run([TRUE], env={"PATH": os.defpath, **handed}, check=False)


def test_the_exemption_covers_the_sources_own_names_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the source's own env, any other secret is still an offence (another source's too)."""
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "fake-telegram-bot-token-0001")
    monkeypatch.setenv("OP_SERVICE_ACCOUNT_TOKEN", OP_TOKEN)
    monkeypatch.setenv("BWS_ACCESS_TOKEN", BWS_TOKEN)
    host = Host(write_home(tmp_path, "A"))
    host.add_secret_source(_op(tmp_path)[0])  # type: ignore[arg-type]
    host.add_secret_source(_bws(tmp_path)[0])  # type: ignore[arg-type]
    own = frozenset({"OP_SERVICE_ACCOUNT_TOKEN"})
    env = {
        "PATH": os.defpath,
        "OP_SERVICE_ACCOUNT_TOKEN": OP_TOKEN,
        "BWS_ACCESS_TOKEN": BWS_TOKEN,
        "X": "fake-telegram-bot-token-0001",
    }
    found = offences(host, env, implicit=False, source_own=own)
    assert [k.split(" ")[0] for k in found] == ["BWS_ACCESS_TOKEN", "X"]
    assert offences(host, {"PATH": os.defpath, "OP_SERVICE_ACCOUNT_TOKEN": OP_TOKEN},
                    implicit=False, source_own=own) == []  # fmt: skip


def test_own_credentials_answers_for_that_very_env_in_that_thread_during_the_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, frozenset[str]] = {}

    class Probe:
        """Stands in for ``subprocess.Popen``: asks ``own_credentials`` as the guard would."""

        def __init__(self, argv: list[str], *, env: dict[str, str], **kwargs: object) -> None:
            seen["the env"] = own_credentials(env)
            seen["a copy"] = own_credentials(dict(env))
            other = threading.Thread(target=lambda: seen.update(thread=own_credentials(env)))
            other.start()
            other.join()
            self.returncode = 0

        def communicate(self, timeout: float | None = None) -> tuple[bytes, bytes]:
            return b"value\n", b""

    monkeypatch.setattr(subprocess, "Popen", Probe)
    creds = {"OP_SERVICE_ACCOUNT_TOKEN": OP_TOKEN}
    assert run_source_cli("1password", "op://a/b/c", ["op"], creds, timeout=1) == "value"
    assert seen == {"the env": frozenset(creds), "a copy": frozenset(), "thread": frozenset()}
    assert own_credentials(None) == frozenset()
