"""Keyed fingerprints: per-host key from the env or a 0600 file; never the value."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from envscope import ConfigurationError
from envscope._fingerprint import FINGERPRINT_FILE, fingerprint, load_or_create_key
from tests.conftest import HostFactory


def test_fingerprint_is_keyed_short_and_stable() -> None:
    """Same key and value → same 16-hex digest; another key → another digest."""
    a = fingerprint(b"k1", "value")
    assert a == fingerprint(b"k1", "value")
    assert len(a) == 16
    assert int(a, 16) >= 0
    assert a != fingerprint(b"k2", "value")
    assert a != fingerprint(b"k1", "value2")
    assert "value" not in a


def test_key_from_env_value(tmp_path: Path) -> None:
    """ENVSCOPE_FINGERPRINT_KEY wins; no file is created."""
    assert load_or_create_key(str(tmp_path), "abc") == load_or_create_key(str(tmp_path), "abc")
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
        (None, 0o600, "not a regular file"),
        (b"\xff\xfe", 0o600, "not ASCII"),
    ],
)
def test_bad_key_file_is_an_error(
    tmp_path: Path, data: bytes | None, mode: int, needle: str
) -> None:
    """A shared, empty, non-regular or binary key file is refused, naming the file."""
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
        {"PATH": "/bin", "ENVSCOPE_FINGERPRINT_KEY": "k", "SECRET_LOOKING": "s3cr3t-v"}
    )
    trace = host.explain()
    final = trace.final()
    assert final["SECRET_LOOKING"].fingerprint == host.fingerprint("s3cr3t-v")
    assert all("s3cr3t-v" not in repr(d) for d in trace)
