"""Keyed fingerprints of values: a trace can say "changed" without saying what.

A fingerprint is a keyed BLAKE2b digest of the value, truncated to 16 hex
characters. The key is per host: ``ENVSCOPE_FINGERPRINT_KEY`` from the host's
environ when set, else a random key kept in ``<launch home>/.envscope-fingerprint-key``
(created with mode 0600 on first use). Snapshots of one host compare across
runs; a fingerprint means nothing to anyone without the key. Called by
``Host`` only.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat

from envscope.errors import ConfigurationError

__all__ = ["FINGERPRINT_ENV", "FINGERPRINT_FILE", "fingerprint", "load_or_create_key"]

FINGERPRINT_ENV = "ENVSCOPE_FINGERPRINT_KEY"
FINGERPRINT_FILE = ".envscope-fingerprint-key"
_DIGEST_BYTES = 8


def fingerprint(key: bytes, value: str) -> str:
    """A short keyed digest of ``value`` (hex, 16 characters)."""
    data = value.encode("utf-8", "surrogateescape")
    return hashlib.blake2b(data, key=key[:64], digest_size=_DIGEST_BYTES).hexdigest()


def _key_bytes(text: str) -> bytes:
    raw = text.strip().encode("utf-8")
    return hashlib.blake2b(raw, digest_size=32).digest()


def load_or_create_key(launch_home: str, env_value: str | None) -> bytes:
    """The host's fingerprint key: from the env value, else the key file (created 0600)."""
    if env_value:
        return _key_bytes(env_value)
    path = os.path.join(launch_home, FINGERPRINT_FILE)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        return _read_key(path)
    except OSError as exc:
        raise ConfigurationError(
            f"{path}: cannot create the fingerprint key file ({exc.strerror}); "
            f"set {FINGERPRINT_ENV} instead"
        ) from None
    try:
        text = secrets.token_hex(32)
        os.write(fd, text.encode("ascii") + b"\n")
    finally:
        os.close(fd)
    return _key_bytes(text)


def _read_key(path: str) -> bytes:
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigurationError(f"{path}: the fingerprint key is not a regular file")
        if os.name == "posix" and info.st_mode & 0o077:
            raise ConfigurationError(
                f"{path}: the fingerprint key file must be private (mode 0600), "
                f"it is {stat.S_IMODE(info.st_mode):04o}"
            )
        with open(path, encoding="ascii") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not ASCII text"
        raise ConfigurationError(f"{path}: cannot read the fingerprint key ({reason})") from None
    if not text.strip():
        raise ConfigurationError(f"{path}: the fingerprint key file is empty")
    return _key_bytes(text)
