"""Keyed fingerprints of values: a trace can say "changed" without saying what.

A fingerprint is a keyed BLAKE2b (a MAC) over the variable's **name and
value**, unambiguously encoded (a domain label, the name's UTF-8 length as 8
bytes, the name, the value), truncated to 16 hex characters. Binding the name
means two variables holding the same value have unrelated fingerprints, so a
snapshot is no oracle for "this profile-controlled value equals that stripped
secret". ``key_id`` names a key without revealing it (a MAC of a fixed label),
so snapshots made under different keys can say so.

The key is per host: ``ENVSCOPE_FINGERPRINT_KEY`` from the host's environ when
set, else a random key kept in ``<launch home>/.envscope-fingerprint-key``
(created 0600 on first use). A key of fewer than ``MIN_KEY_CHARS``
non-blank characters is refused, from either place. The key file must be a
regular file owned by the invoking user or root with no group/other
permission bits, in a directory owned by the user or root that group and
others cannot write (``_trusted_file``'s rule); the file is read without
blocking. Called by ``Host`` only.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from collections.abc import Callable, Mapping

from envscope.errors import ConfigurationError
from envscope.files._trusted_file import read_file, untrusted_reason

__all__ = [
    "FINGERPRINT_ENV",
    "FINGERPRINT_FILE",
    "MEMO_ENTRIES",
    "MIN_KEY_CHARS",
    "HostKey",
    "fingerprint",
    "fingerprinter",
    "key_id",
    "load_or_create_key",
]

FINGERPRINT_ENV = "ENVSCOPE_FINGERPRINT_KEY"
FINGERPRINT_FILE = ".envscope-fingerprint-key"
MIN_KEY_CHARS = 16
"""The shortest key accepted (after stripping blanks); the generated key has 64."""
_MAX_KEY_FILE_BYTES = 4096
_DIGEST_BYTES = 8
_LABEL = b"envscope fingerprint v2\x00"
_KEY_ID_LABEL = b"envscope fingerprint key id v2\x00"


MEMO_ENTRIES = 4096
"""Fingerprints one fingerprinter remembers (then it starts over): a host's env, many times."""


def fingerprinter(key: bytes) -> Callable[[str, str], str]:
    """The fingerprint function of one key: keyed once, then cheap per value.

    The keyed BLAKE2b state with the domain label absorbed is made once; a new
    value costs a copy of that state, one update and the digest. A trace
    fingerprints every value it records, and ``Host.explain`` replays the same
    env again and again, so the function remembers the digests of the last
    ``MEMO_ENTRIES`` (name, value) pairs: a repeated value costs one dict
    lookup. The memo lives as long as the function (the host's; the build memo
    already holds the same values in the same process) and is never shown.
    """
    keyed = hashlib.blake2b(_LABEL, key=key[:64], digest_size=_DIGEST_BYTES).copy
    memo: dict[tuple[str, str], str] = {}

    def of(name: str, value: str) -> str:
        pair = (name, value)
        found = memo.get(pair)
        if found is not None:
            return found
        name_bytes = name.encode("utf-8", "surrogateescape")
        digest = keyed()
        digest.update(
            b"".join(
                (
                    len(name_bytes).to_bytes(8, "big"),
                    name_bytes,
                    value.encode("utf-8", "surrogateescape"),
                )
            )
        )
        found = digest.hexdigest()
        if len(memo) >= MEMO_ENTRIES:
            memo.clear()
        memo[pair] = found
        return found

    return of


def fingerprint(key: bytes, name: str, value: str) -> str:
    """A short keyed digest of ``name=value`` (hex, 16 characters)."""
    return fingerprinter(key)(name, value)


def key_id(key: bytes) -> str:
    """A short public name of a key (and of the fingerprint scheme): equal ids, same key."""
    return hashlib.blake2b(_KEY_ID_LABEL, key=key[:64], digest_size=_DIGEST_BYTES).hexdigest()


def _key_bytes(text: str, where: str) -> bytes:
    stripped = text.strip()
    if len(stripped) < MIN_KEY_CHARS:
        what = "empty" if not stripped else f"shorter than {MIN_KEY_CHARS} characters"
        raise ConfigurationError(f"{where}: the fingerprint key is {what}; use a random key")
    return hashlib.blake2b(stripped.encode("utf-8", "surrogateescape"), digest_size=32).digest()


def load_or_create_key(launch_home: str, env_value: str | None) -> bytes:
    """The host's fingerprint key: from the env value, else the key file (created 0600)."""
    if env_value is not None:
        return _key_bytes(env_value, FINGERPRINT_ENV)
    path = os.path.join(launch_home, FINGERPRINT_FILE)
    directory_problem = untrusted_reason(path, missing_ok=True)
    if directory_problem is not None and not os.path.lexists(path):
        raise ConfigurationError(
            f"{path}: refusing to create the fingerprint key: {directory_problem}; "
            f"set {FINGERPRINT_ENV} instead"
        )
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        fd = -1
        reason = None
    except OSError as exc:
        fd = -1
        reason = exc.strerror or type(exc).__name__
    else:
        reason = None
    if reason is not None:
        raise ConfigurationError(
            f"{path}: cannot create the fingerprint key file ({reason}); "
            f"set {FINGERPRINT_ENV} instead"
        )
    if fd < 0:
        return _read_key(path)
    try:
        text = secrets.token_hex(32)
        os.write(fd, text.encode("ascii") + b"\n")
    finally:
        os.close(fd)
    return _key_bytes(text, path)


def _key_file_error(path: str, message: str) -> ConfigurationError:
    return ConfigurationError(f"{path}: {message}")


def _read_key(path: str) -> bytes:
    try:
        info = os.lstat(path)
    except OSError as exc:
        reason: str | None = exc.strerror or type(exc).__name__
    else:
        reason = None
    if reason is not None:
        raise ConfigurationError(f"{path}: cannot read the fingerprint key ({reason})")
    if not stat.S_ISREG(info.st_mode):
        raise ConfigurationError(f"{path}: the fingerprint key is not a regular file")
    if os.name == "posix":
        if info.st_mode & 0o077:
            raise ConfigurationError(
                f"{path}: the fingerprint key file must be private (mode 0600), "
                f"it is {stat.S_IMODE(info.st_mode):04o}"
            )
        problem = untrusted_reason(path)
        if problem is not None:
            raise ConfigurationError(
                f"{path}: refusing the fingerprint key: {problem} "
                "(it must be owned by you or root, in a directory only you or root can write)"
            )
    data = read_file(
        path, max_bytes=_MAX_KEY_FILE_BYTES, error=_key_file_error, what="the fingerprint key"
    )
    if not data.isascii():
        raise ConfigurationError(f"{path}: cannot read the fingerprint key (not ASCII text)")
    return _key_bytes(data.decode("ascii"), path)


class HostKey:
    """A host's fingerprint key (read on first use, then kept) and its fingerprint function."""

    __slots__ = ("_environ", "_function", "_key", "_launch_home")

    def __init__(self, launch_home: str, environ: Mapping[str, str]) -> None:
        self._launch_home = launch_home
        self._environ = environ
        self._key: bytes | None = None
        self._function: Callable[[str, str], str] | None = None

    def key(self) -> bytes:
        """The key: ``ENVSCOPE_FINGERPRINT_KEY`` from the host's environ, else the key file."""
        key = self._key
        if key is None:  # a racing first use reads the same key: one assignment either way
            key = self._key = load_or_create_key(
                self._launch_home, self._environ.get(FINGERPRINT_ENV)
            )
        return key

    def function(self) -> Callable[[str, str], str]:
        """The key's fingerprint function, made once (keyed once, cheap per value)."""
        found = self._function
        if found is None:
            found = self._function = fingerprinter(self.key())
        return found

    def key_id(self) -> str:
        """The key's public id (snapshots carry it)."""
        return key_id(self.key())
