"""``PassSource`` against the real ``pass`` and ``gpg`` (Debian packages ``.ci/run`` installs).

Each module run makes a throw-away ``GNUPGHOME`` with a key that needs no
passphrase and a store initialised for it, then reads entries through the real
client. A wrapper around ``pass`` records the environment it ran with, so a
test asserts from inside the child that it held the store's settings and
nothing of the host's. Failures come from the real programs: an entry that is
not in the store, a folder (``pass show`` would list it), a file gpg cannot
decrypt, a key whose passphrase no agent holds (closed stdin: no prompt waits).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from envscope import Catalog, ConfigurationError, Host, PassSource, SourceError, Trace

NEEDED = ("pass", "gpg", "gpgconf")
MISSING = [tool for tool in NEEDED if shutil.which(tool) is None]
pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"needs {', '.join(MISSING)} (Debian packages pass and gnupg)"
)

VALUES = {"dev/github": "pass-value-0123456789", "b/api key": "pass-b-value-987654"}
HOST_SECRET = "host-secret-that-must-not-reach-pass"


def _run(argv: list[str], env: dict[str, str], stdin: str | None = None) -> None:
    subprocess.run(argv, env=env, input=stdin, text=True, check=True, capture_output=True)


def _key(env: dict[str, str], uid: str, passphrase: str) -> None:
    _run(["gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", passphrase,
          "--quick-gen-key", uid, "future-default", "default", "never"], env)  # fmt: skip


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A store of ``VALUES`` (plus notes lines), a folder, a garbage entry and a locked one."""
    root = tmp_path_factory.mktemp("pass")
    env = {
        "PATH": os.defpath,
        "HOME": str(root),
        "GNUPGHOME": str(root / "g"),
        "PASSWORD_STORE_DIR": str(root / "store"),
    }
    (root / "g").mkdir(mode=0o700)
    _key(env, "envscope test <open@example.invalid>", "")
    _key(env, "envscope locked <locked@example.invalid>", "a passphrase no agent holds")
    _run(["pass", "init", "open@example.invalid"], env)
    for name, value in VALUES.items():
        _run(["pass", "insert", "--multiline", name], env, f"{value}\nuser: someone\n")
    _run(["pass", "init", "--path", "locked", "locked@example.invalid"], env)
    _run(["pass", "insert", "--multiline", "locked/token"], env, "pass-locked-value-0001\n")
    _run(["gpgconf", "--kill", "gpg-agent"], env)  # the locked key's passphrase is cached nowhere
    (root / "store" / "garbage.gpg").write_text("not an OpenPGP message\n")
    yield env
    subprocess.run(["gpgconf", "--kill", "all"], env=env, check=False, capture_output=True)


def _wrapper(where: Path) -> Path:
    """An executable that records its environment, then runs the real ``pass``."""
    where.mkdir(parents=True, exist_ok=True)
    exe = where / "pass"
    exe.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "here = os.path.dirname(os.path.abspath(__file__))\n"
        "json.dump(dict(os.environ), open(os.path.join(here, 'env.json'), 'w'))\n"
        f"os.execv({shutil.which('pass')!r}, ['pass'] + sys.argv[1:])\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def _environ(store: dict[str, str]) -> dict[str, str]:
    return {**store, "HOST_SECRET": HOST_SECRET, "OTHER": "x"}


def test_it_reads_the_first_line_and_its_child_holds_the_store_settings_only(
    tmp_path: Path, store: dict[str, str]
) -> None:
    exe = _wrapper(tmp_path / "bin")
    entries = {"*": {"GH_TOKEN": "dev/github"}, "/srv/b": {"B_KEY": "b/api key"}}
    source = PassSource(entries, environ=_environ(store), executable=str(exe))
    assert source.fetch("/srv/a") == {"GH_TOKEN": VALUES["dev/github"]}
    assert source.fetch("/srv/b") == {
        "GH_TOKEN": VALUES["dev/github"],
        "B_KEY": VALUES["b/api key"],
    }
    seen = json.loads((tmp_path / "bin" / "env.json").read_text())
    assert set(seen) - {"PWD", "SHLVL", "_", "LC_CTYPE"} == {
        "PATH", "LANG", "HOME", "GNUPGHOME", "PASSWORD_STORE_DIR"
    }  # fmt: skip
    assert source.credential_names == ()


@pytest.mark.parametrize(
    ("reference", "said"),
    [
        ("dev/missing", "the store holds no such entry"),
        ("dev", "the store holds no such entry"),  # a folder: pass show would list it
        ("garbage", "pass exited 2: gpg: no valid OpenPGP data found"),
        ("locked/token", "pass exited 2: gpg: decryption failed"),
    ],
    ids=["missing", "folder", "not-openpgp", "passphrase-not-cached"],
)
def test_each_failure_of_the_real_client_is_a_source_error_without_a_value(
    store: dict[str, str], reference: str, said: str
) -> None:
    source = PassSource({"*": {"TOKEN": reference}}, environ=_environ(store), timeout=5)
    with pytest.raises(SourceError) as raised:
        source.fetch("/home")
    assert said in str(raised.value)
    assert (raised.value.source, raised.value.reference) == ("pass", reference)
    for value in (*VALUES.values(), "pass-locked-value-0001", HOST_SECRET):
        assert value not in str(raised.value)


def test_a_client_that_is_not_installed(store: dict[str, str], tmp_path: Path) -> None:
    source = PassSource({"*": {"T": "dev/github"}}, environ=store, executable=str(tmp_path / "no"))
    with pytest.raises(SourceError, match="is not installed"):
        source.fetch("/home")


@pytest.mark.parametrize(
    "reference", ["", "-c", "--clip=dev/github", "/etc/passwd", "dev/../../x", "dev/", "a\nb"]
)
def test_a_reference_is_never_an_option_nor_outside_the_store(reference: str) -> None:
    with pytest.raises(ConfigurationError, match="password-store path"):
        PassSource({"*": {"TOKEN": reference}})


def test_a_host_routes_a_store_value_and_names_its_entry(
    tmp_path: Path, store: dict[str, str]
) -> None:
    launch, routed = tmp_path / "launch", tmp_path / "routed"
    launch.mkdir()
    routed.mkdir()
    environ = {"PATH": "/usr/bin"}
    host = Host(launch, environ=environ, catalog=Catalog.default())
    host.add_secret_source(PassSource({str(routed): {"B_SETTING": "dev/github"}}, environ=store))
    host.load_launch_env()
    assert "B_SETTING" not in environ
    trace = Trace()
    with host.routed(routed):
        child = host.build_subprocess_env(trace=trace)
    assert child["B_SETTING"] == VALUES["dev/github"]
    origin = trace.final()["B_SETTING"].origin
    assert origin is not None
    assert origin.detail == "pass (dev/github)"
