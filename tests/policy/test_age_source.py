"""``AgeFileSource`` against the real ``age`` (the Debian package ``.ci/run`` installs).

Each test encrypts dotenv files with a throw-away identity and reads them back
through the real client. Failures come from the real program (the wrong
identity, a file that is not encrypted, a missing file, a passphrase file with
no terminal) or from the parse (a malformed line): each is a ``SourceError``
naming the file, and none quotes the file's content, which age's own stderr
does for a plaintext file.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from envscope import AgeFileSource, Catalog, ConfigurationError, Host, SourceError, Trace

MISSING = [tool for tool in ("age", "age-keygen") if shutil.which(tool) is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason="needs age and age-keygen (Debian: age)")

PLAIN = 'GH_TOKEN=age-value-0123456789\nOTHER_SECRET="age-other-987654321"\nREF=${GH_TOKEN}-x\n'


def _identity(where: Path, name: str = "key.txt") -> tuple[Path, str]:
    key = where / name
    subprocess.run(["age-keygen", "-o", str(key)], check=True, capture_output=True)
    public = subprocess.run(["age-keygen", "-y", str(key)], check=True, capture_output=True)
    return key, public.stdout.decode().strip()


def _encrypt(path: Path, text: str, recipient: str) -> Path:
    subprocess.run(["age", "-r", recipient, "-o", str(path)], input=text.encode(), check=True)
    return path


def test_it_reads_the_listed_names_of_each_home_s_own_file(tmp_path: Path) -> None:
    key, public = _identity(tmp_path)
    a, b = tmp_path / "a", tmp_path / "b"
    for home, value in ((a, "a-value-0123456789"), (b, "b-value-0123456789")):
        home.mkdir()
        _encrypt(home / "secrets.env.age", PLAIN.replace("age-value-0123456789", value), public)
    source = AgeFileSource(
        {"*": {"GH_TOKEN": "secrets.env.age", "REF": "secrets.env.age"}}, identities=str(key)
    )
    assert source.fetch(str(a)) == {"GH_TOKEN": "a-value-0123456789", "REF": "a-value-0123456789-x"}
    assert source.fetch(str(b))["GH_TOKEN"] == "b-value-0123456789"
    assert source.supplied_names(str(a)) == {"GH_TOKEN", "REF"}  # OTHER_SECRET stays in the file
    assert source.credential_names == ()


def test_a_reference_resolves_against_the_file_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, public = _identity(tmp_path)
    _encrypt(tmp_path / "s.age", "X=${HOST_SECRET}\n", public)
    monkeypatch.setenv("HOST_SECRET", "host-secret-0123456789")
    source = AgeFileSource({"*": {"X": str(tmp_path / "s.age")}}, identities=[str(key)])
    assert source.fetch("/home") == {"X": ""}


@pytest.mark.parametrize(
    ("case", "said"),
    [
        ("wrong-identity", "no identity matches the file's recipients"),
        ("plaintext", "the file is not age-encrypted"),
        ("missing-file", "the file cannot be opened"),
        ("passphrase-file", "the file is encrypted to a passphrase"),
        ("passphrase-identity", "an identity needs a passphrase (no terminal to ask on)"),
        ("malformed", "no dotenv text (line 2)"),
        ("missing-name", "the file holds no ABSENT"),
    ],
)
def test_each_failure_is_a_source_error_naming_the_file_never_its_content(
    tmp_path: Path, case: str, said: str
) -> None:
    key, public = _identity(tmp_path)
    other, _ = _identity(tmp_path, "other.txt")
    path = tmp_path / "s.env.age"
    names = {"GH_TOKEN": str(path)}
    if case == "plaintext":
        path.write_text(PLAIN)
    elif case == "passphrase-file":
        path = _passphrase_encrypted(_plain(tmp_path))
        names = {"GH_TOKEN": str(path)}
    elif case != "missing-file":
        body = (
            "A=1\nthis line is 'no binding age-value-0123456789\n" if case == "malformed" else PLAIN
        )
        _encrypt(path, body, public)
    if case == "missing-name":
        names["ABSENT"] = str(path)
    identity = other if case == "wrong-identity" else key
    if case == "passphrase-identity":
        _encrypt(path, PLAIN, public)
        identity = _passphrase_encrypted(key)
    source = AgeFileSource({"*": names}, identities=str(identity), timeout=5)
    with pytest.raises(SourceError) as raised:
        source.fetch("/home")
    assert said in str(raised.value)
    assert raised.value.reference == str(path)
    assert "age-value" not in str(raised.value)
    assert raised.value.__context__ is None


def _passphrase_encrypted(plain: Path) -> Path:
    """``plain`` encrypted to a passphrase, typed on a pseudo-terminal (age reads no other)."""
    import os
    import pty

    path = plain.with_name(plain.name + ".age")
    pid, fd = pty.fork()
    if pid == 0:  # the child: age on the pty
        os.execvp("age", ["age", "--passphrase", "-o", str(path), str(plain)])
    for _ in range(2):  # "Enter passphrase", then "Confirm passphrase"
        _read_until(fd, b"passphrase")
        os.write(fd, b"correct horse battery staple\n")
    _read_until(fd, b"")
    os.waitpid(pid, 0)
    return path


def _plain(where: Path) -> Path:
    path = where / "p.env"
    path.write_text("GH_TOKEN=age-value-0123456789\n")
    return path


def _read_until(fd: int, marker: bytes) -> None:
    import os

    seen = b""
    while marker not in seen or not marker:
        try:
            chunk = os.read(fd, 1024)
        except OSError:  # the child closed the terminal
            return
        if not chunk:
            return
        seen += chunk


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [
        ({"identities": []}, "identities"),
        ({"identities": ""}, "identities"),
        ({"identities": "k", "missing": "skip"}, "missing"),
        ({"identities": "k", "timeout": 0}, "timeout"),
    ],
)
def test_a_misconfigured_source_is_refused(kwargs: dict[str, object], said: str) -> None:
    with pytest.raises(ConfigurationError, match=said):
        AgeFileSource({"*": {"A": "f.age"}}, **kwargs)  # type: ignore[arg-type]


def test_a_missing_name_may_stay_unset(tmp_path: Path) -> None:
    key, public = _identity(tmp_path)
    path = _encrypt(tmp_path / "s.age", PLAIN, public)
    source = AgeFileSource({"*": {"GH_TOKEN": str(path), "ABSENT": str(path)}},
                           identities=str(key), missing="unset")  # fmt: skip
    assert source.fetch("/home") == {"GH_TOKEN": "age-value-0123456789"}


def test_a_host_routes_a_file_value_and_names_its_file(tmp_path: Path) -> None:
    key, public = _identity(tmp_path)
    launch, routed = tmp_path / "launch", tmp_path / "routed"
    launch.mkdir()
    routed.mkdir()
    _encrypt(routed / "secrets.env.age", "B_SETTING=age-b-0123456789\n", public)
    host = Host(launch, environ={"PATH": "/usr/bin"}, catalog=Catalog.default())
    host.add_secret_source(
        AgeFileSource({"*": {"B_SETTING": "secrets.env.age"}}, identities=str(key)),
        on_failure="unset",  # the launch home has no file: its name stays unset
    )
    host.load_launch_env()
    assert [f.reference for f in host.source_failures()] == [str(launch / "secrets.env.age")]
    trace = Trace()
    with host.routed(routed):
        child = host.build_subprocess_env(trace=trace)
    assert child["B_SETTING"] == "age-b-0123456789"
    origin = trace.final()["B_SETTING"].origin
    assert origin is not None
    assert origin.detail == "age (secrets.env.age)"
