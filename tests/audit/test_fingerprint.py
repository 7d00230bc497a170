"""Keyed fingerprints: per-host key from the env or a 0600 file; never the value."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envscope import ConfigurationError
from envscope.audit._fingerprint import (
    FINGERPRINT_ENV,
    FINGERPRINT_FILE,
    MIN_KEY_CHARS,
    fingerprint,
    key_id,
    load_or_create_key,
)
from tests._privdrop import nobody_tree, run_as_nobody
from tests.conftest import HostFactory


def test_fingerprint_is_keyed_short_and_stable() -> None:
    """Same key, name and value → same 16-hex digest; another key, name or value → another."""
    a = fingerprint(b"k1", "NAME", "value")
    assert a == fingerprint(b"k1", "NAME", "value")
    assert len(a) == 16
    assert int(a, 16) >= 0
    assert a != fingerprint(b"k2", "NAME", "value")
    assert a != fingerprint(b"k1", "NAME", "value2")
    assert a != fingerprint(b"k1", "OTHER", "value")
    assert "value" not in a


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=12), st.text(max_size=12), st.text(max_size=12), st.text(max_size=12))
def test_fingerprint_encoding_is_unambiguous(n1: str, v1: str, n2: str, v2: str) -> None:
    """Two different (name, value) pairs never share an encoding (no "AB"+"C" == "A"+"BC")."""
    key = b"k" * 32
    if (n1, v1) != (n2, v2):
        assert fingerprint(key, n1, v1) != fingerprint(key, n2, v2)


def test_equal_values_under_two_names_have_unrelated_fingerprints(make_host: HostFactory) -> None:
    """A snapshot is no guessing oracle: a stripped secret and a kept copy differ in fingerprint."""
    secret = "launch-secret-value-123"
    host = make_host(
        {
            "ENVSCOPE_FINGERPRINT_KEY": "k-of-sixteen-chars",
            "TELEGRAM_BOT_TOKEN": secret,
            "MY_GUESS": secret,
        }
    )
    final = host.explain().final()
    assert final["TELEGRAM_BOT_TOKEN"].fingerprint is not None
    assert final["TELEGRAM_BOT_TOKEN"].fingerprint != final["MY_GUESS"].fingerprint


def test_key_id_names_the_key_without_revealing_it() -> None:
    """key_id is stable per key, differs between keys, and is not the key."""
    assert key_id(b"a" * 32) == key_id(b"a" * 32)
    assert key_id(b"a" * 32) != key_id(b"b" * 32)
    assert len(key_id(b"a" * 32)) == 16


def test_key_from_env_value(tmp_path: Path) -> None:
    """ENVSCOPE_FINGERPRINT_KEY wins; no file is created."""
    key = "an-env-key-long-enough"
    assert load_or_create_key(str(tmp_path), key) == load_or_create_key(str(tmp_path), key)
    assert not (tmp_path / FINGERPRINT_FILE).exists()


def test_key_file_created_0600_and_reused(tmp_path: Path) -> None:
    """Without the env value, a random key is created with mode 0600 and reused."""
    first = load_or_create_key(str(tmp_path), None)
    mode = stat.S_IMODE((tmp_path / FINGERPRINT_FILE).stat().st_mode)
    assert mode == 0o600
    assert load_or_create_key(str(tmp_path), None) == first
    other = tmp_path / "other"
    other.mkdir()
    assert load_or_create_key(str(other), None) != first


def _key_file(path: Path, data: bytes | None, mode: int = 0o600) -> None:
    """Create the key file with some bytes and a mode (or a directory when data is None)."""
    if data is None:
        path.mkdir()
        return
    path.write_bytes(data)
    os.chmod(path, mode)


@pytest.mark.parametrize(
    ("data", "mode", "needle"),
    [
        (b"k\n", 0o644, "must be private"),
        (b"", 0o600, "empty"),
        (b"  \n\t \n", 0o600, "empty"),
        (b"short-key\n", 0o600, f"shorter than {MIN_KEY_CHARS}"),
        (b"k" * 5000, 0o600, "larger than"),
        (None, 0o600, "not a regular file"),
        (b"\xff\xfe", 0o600, "not ASCII"),
    ],
)
def test_bad_key_file_is_an_error(
    tmp_path: Path, data: bytes | None, mode: int, needle: str
) -> None:
    """A shared, empty, blank, short, huge, non-regular or binary key file is refused, naming it."""
    path = tmp_path / FINGERPRINT_FILE
    _key_file(path, data, mode)
    with pytest.raises(ConfigurationError, match=needle) as info:
        load_or_create_key(str(tmp_path), None)
    assert str(path) in str(info.value)


def test_unwritable_home_is_an_error(tmp_path: Path) -> None:
    """A launch home where the key cannot be created is an error suggesting the env var."""
    with pytest.raises(ConfigurationError, match="ENVSCOPE_FINGERPRINT_KEY"):
        load_or_create_key(str(tmp_path / "missing-dir"), None)


def test_host_explain_fingerprints(make_host: HostFactory) -> None:
    """host.explain fingerprints values with the host's key; no decision holds a value."""
    host = make_host(
        {
            "PATH": "/bin",
            "ENVSCOPE_FINGERPRINT_KEY": "k-of-sixteen-chars",
            "SECRET_LOOKING": "s3cr3t-v",
        }
    )
    trace = host.explain()
    final = trace.final()
    assert final["SECRET_LOOKING"].fingerprint == host.fingerprint("SECRET_LOOKING", "s3cr3t-v")
    assert all("s3cr3t-v" not in repr(d) for d in trace)


@pytest.mark.parametrize("value", ["", " ", "\t\n  ", "x" * (MIN_KEY_CHARS - 1), " abc "])
def test_weak_env_key_is_refused(tmp_path: Path, value: str) -> None:
    """An empty, blank or too-short ENVSCOPE_FINGERPRINT_KEY is an error naming the variable."""
    with pytest.raises(ConfigurationError, match=FINGERPRINT_ENV) as info:
        load_or_create_key(str(tmp_path), value)
    assert not (tmp_path / FINGERPRINT_FILE).exists()
    assert info.value.__context__ is None


ROOT_ONLY = pytest.mark.skipif(
    os.name != "posix" or os.geteuid() != 0, reason="chown to another uid needs root"
)


@ROOT_ONLY
@pytest.mark.parametrize(
    ("fault", "needle"),
    [
        ("file-owned-by-nobody", "owned by uid 65534"),
        ("dir-owned-by-nobody", "directory"),
        ("dir-group-writable", "writable by group or others"),
        ("dir-world-writable-sticky", "writable by group or others"),
        ("file-is-symlink", "not a regular file"),
    ],
)
def test_key_file_trust_matrix(tmp_path: Path, fault: str, needle: str) -> None:
    """The key file must be ours or root's, 0600, regular, in a directory only we can write."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    load_or_create_key(str(home), None)  # a healthy key first
    path = home / FINGERPRINT_FILE
    if fault == "file-owned-by-nobody":
        os.chown(path, 65534, 65534)
    elif fault == "dir-owned-by-nobody":
        os.chown(home, 65534, 65534)
    elif fault == "dir-group-writable":
        home.chmod(0o770)
    elif fault == "dir-world-writable-sticky":
        home.chmod(0o1777)
    else:
        target = tmp_path / "elsewhere"
        path.rename(target)
        path.symlink_to(target)
    with pytest.raises(ConfigurationError, match=needle) as info:
        load_or_create_key(str(home), None)
    assert str(path) in str(info.value)


@ROOT_ONLY
def test_key_not_created_in_an_untrusted_directory(tmp_path: Path) -> None:
    """No key file is created in a launch home others can write (it could be swapped)."""
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o1777)
    with pytest.raises(ConfigurationError, match="refusing to create"):
        load_or_create_key(str(home), None)
    assert not (home / FINGERPRINT_FILE).exists()


PLANT_KEY = r"""
import os, sys
for d in sys.argv[1:]:
    fd = os.open(os.path.join(d, ".envscope-fingerprint-key"), os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"a-key-the-attacker-knows-0123456789\n")
    os.close(fd)
print("planted")
"""


@pytest.mark.privdrop
def test_key_planted_by_another_user_is_refused() -> None:
    """uid 65534 plants a 0600 key (in a 1777 dir and in its own dir): root's host refuses it."""
    with nobody_tree() as top:
        shared = top / "shared"
        shared.mkdir()
        shared.chmod(0o1777)
        own = top / "own"
        proc = run_as_nobody(
            "import os, sys; os.mkdir(sys.argv[1], 0o755)\n" + PLANT_KEY,
            str(own),
            str(shared),
        )
        assert proc.returncode == 0, proc.stderr
        assert "planted" in proc.stdout
        for home in (shared, own):
            path = home / FINGERPRINT_FILE
            assert path.stat().st_uid == 65534
            with pytest.raises(ConfigurationError, match="owned by uid 65534") as info:
                load_or_create_key(str(home), None)
            assert str(path) in str(info.value)
