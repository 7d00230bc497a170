"""What a caller hands a build, checked and copied: homes, ``extra`` values, the parent env."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping

from envscope.errors import (
    ConfigurationError,
    EnvscopeError,
    EnvValueError,
    PassthroughRefusedError,
)

__all__ = [
    "DEFAULT_MAX_ENV_BYTES",
    "ENVIRON_COPIES",
    "WINDOWS",
    "EnvironCopies",
    "build_arguments",
    "check_env",
    "check_flags",
    "coerce_extra",
    "config_entry_error",
    "copy_env",
    "encodable",
    "env_entries",
    "home_identity",
    "name_list",
    "portable_name",
    "snapshot_env",
    "text_path",
    "valid_name",
]

WINDOWS = sys.platform == "win32"
DEFAULT_MAX_ENV_BYTES = 1024 * 1024  # half of Linux's usual ARG_MAX, leaving room for argv


def valid_name(name: str) -> bool:
    """True for a name a child env can carry: not empty, no ``=``, no NUL.

    The one name rule of envscope: ``execve`` takes ``NAME=value`` strings, so
    nothing else about a name is checked (POSIX shells are stricter; children
    that are not shells read any such name).
    """
    return bool(name) and "=" not in name and "\x00" not in name


def portable_name(name: str) -> bool:
    """``valid_name`` in the portable form ``[A-Za-z_][A-Za-z0-9_]*`` (POSIX's portable names).

    The stricter form the catalog's names and a secret source's
    ``credential_names`` must take: they name variables a shell can export.
    """
    return (
        valid_name(name)
        and name.isascii()
        and not name[0].isdigit()
        and name.replace("_", "a").isalnum()
    )


def name_list(
    names: Iterable[str] | None, parameter: str, *, allow_empty: bool = False
) -> tuple[str, ...]:
    """The names a caller passed for ``parameter``, checked; a bare string is refused.

    Iterating a string would declare its letters (``"ACME_TOKEN"`` → ``A``,
    ``C``, …), so every API that takes names refuses one with a
    ``ConfigurationError`` saying how to pass a single name. ``None`` is no
    names. ``allow_empty`` lets an empty name through (passthrough ignores it).
    """
    if names is None or names == ():
        return ()
    if isinstance(names, (str, bytes, bytearray)):
        raise ConfigurationError(
            f"{parameter}: expected a list of names, got a bare {type(names).__name__}; "
            "pass one name as a one-item list"
        )
    if isinstance(names, Mapping) or not isinstance(names, Iterable):
        raise ConfigurationError(
            f"{parameter}: expected a list of names, got a {type(names).__name__}"
        )
    out: list[str] = []
    for name in names:
        if not isinstance(name, str):
            raise ConfigurationError(
                f"{parameter}: every name must be a string, got a {type(name).__name__}"
            )
        if not valid_name(name) and not (allow_empty and name == ""):
            raise ConfigurationError(f"{parameter}: {name!r} is not a valid environment name")
        out.append(name)
    return tuple(out)


def text_path(path: object, what: str) -> str:
    """``path`` as a ``str`` (a ``str`` or ``os.PathLike[str]``): non-empty, no NUL.

    Else a ``ConfigurationError`` saying ``what`` it is (a NUL cannot be in a
    path the OS opens: ``os.open`` would raise a bare ``ValueError``).
    """
    raw = os.fspath(path) if isinstance(path, (str, os.PathLike)) else path
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        if isinstance(raw, str):
            got = "a NUL-holding path" if raw else "an empty path"
        else:
            got = f"a value of type {type(path).__name__}"
        raise ConfigurationError(f"{what} must be a non-empty text path without NUL, got {got}")
    return raw


def home_identity(path: str | os.PathLike[str]) -> str:
    """A home's identity: its resolved real path (case-folded on Windows).

    ``os.path.realpath``'s answer. For a path that exists, the kernel's own
    resolution answers it (``kernel_realpath``: an ``O_PATH`` descriptor and
    its ``/proc/thread-self/fd`` link, three C-level calls against a ``lstat``
    and a Python step per component); anything it cannot answer takes ``realpath``.
    """
    text = text_path(path, "a home")
    return _identity(kernel_realpath(text) or os.path.realpath(text))


def home_directory(path: str | os.PathLike[str]) -> tuple[str, bool]:
    """``home_identity(path)``, and whether it names a directory (``os.path.isdir``).

    One kernel resolution answers both for a directory (``kernel_realpath``
    asked for one); anything else (a file, a missing path, no ``/proc``) takes
    ``realpath`` and a ``stat``, the kernel not asked twice.
    """
    text = text_path(path, "a home")
    found = kernel_realpath(text, directory=True)
    if found is not None:
        return _identity(found), True
    identity = _identity(os.path.realpath(text))
    return identity, os.path.isdir(identity)


def _identity(resolved: str) -> str:
    """A resolved path as a home's identity: case-folded on Windows."""
    return os.path.normcase(resolved) if WINDOWS else resolved


_O_PATH = getattr(os, "O_PATH", 0)  # Linux; elsewhere no kernel answer
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
PROC_FD = "/proc/thread-self/fd/"  # the calling thread's table; the tests point it elsewhere


def kernel_realpath(path: str, *, directory: bool = False) -> str | None:
    """``os.path.realpath(path)`` as the kernel resolves it, for a path that exists (else None).

    The path is opened ``O_PATH`` (no read, no search of the target itself)
    and its descriptor's link read in ``/proc/thread-self/fd``, the calling
    thread's descriptor table (a thread that unshared its table holds numbers
    the process's main table gives other files): the path the kernel reached.
    None (``realpath`` answers) where the path does not resolve (missing, a
    loop, no permission), ``/proc`` (or ``thread-self``, Linux 3.17) is not there, or the link is
    not a plain absolute path (a pipe's or a deleted directory's). ``directory``:
    None too for a path that is no directory (``O_DIRECTORY``).
    ``tests/test_home_identity.py`` pins it to ``realpath`` over a table of paths.
    """
    if not _O_PATH:
        return None
    flags = _O_PATH | os.O_CLOEXEC | (_O_DIRECTORY if directory else 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        link = os.readlink(f"{PROC_FD}{fd}")
    except OSError:
        return None
    finally:
        os.close(fd)
    if not link.startswith("/") or link.endswith(" (deleted)"):
        return None
    return link


def check_flags(flags: Mapping[str, object]) -> None:
    """Each keyword's value is ``True`` or ``False``; else a ``ConfigurationError`` naming it.

    A truthy string (``"false"``) or a falsy number (``scrub=0``) is a mistake
    that would fail open: credentials inherited, a child left unscrubbed.
    """
    for keyword, flag in flags.items():
        if not isinstance(flag, bool):
            raise ConfigurationError(f"{keyword}: must be True or False")


_EMPTY: tuple[str, ...] = ()
_NONE: frozenset[str] = frozenset()


def build_arguments(
    extra: Mapping[str, object] | None,
    passthrough: Iterable[str],
    grant: Iterable[str],
    flags: Mapping[str, object],
    resolved: Iterable[str] = (),
    own: Iterable[str] = (),
) -> tuple[tuple[str, ...], frozenset[str], dict[str, str], frozenset[str], frozenset[str]]:
    """A build's arguments checked: flags, passthrough, grants, ``extra``, ``resolved``, ``own``.

    A grant names an exact key of ``extra``: one ``extra`` does not hold is a
    ``PassthroughRefusedError`` (whether the key may pass is the build's secret
    rule's to say, at stage 4). ``resolved`` and ``own`` name exact keys of
    ``extra`` too (an MCP block's entries the host resolved, and those the
    routed profile typed into its own config): one ``extra`` lacks, or a key
    in both, is a ``ConfigurationError``.
    """
    check_flags(flags)
    # the signatures' defaults (CPython's one empty tuple): nothing to check; any other
    # value, however empty or odd, takes the checks below
    if passthrough is grant is resolved is own is _EMPTY:  # only ``extra``: nothing names its keys
        return _EMPTY, _NONE, coerce_extra(extra), _NONE, _NONE
    names = name_list(passthrough, "passthrough", allow_empty=True)
    granted = frozenset(name_list(grant, "grant"))
    references = frozenset(name_list(resolved, "resolved"))
    typed = frozenset(name_list(own, "own"))
    extras = coerce_extra(extra)
    if granted:
        missing = sorted(granted - set(extras))
        if missing:
            raise PassthroughRefusedError(
                missing[0], "grant names a key that extra does not hold (it can never pass)"
            )
    for what, keys in (("resolved", references), ("own", typed)):
        stray = sorted(keys - set(extras))
        if stray:
            raise ConfigurationError(f"{what}: {stray[0]!r} is not a key of extra")
    both = sorted(references & typed)
    if both:
        raise ConfigurationError(
            f"own: {both[0]!r} is also resolved (a value the host resolved is never typed)"
        )
    return names, granted, extras, references, typed


def coerce_extra(extra: Mapping[str, object] | None) -> dict[str, str]:
    """Validate the caller's explicit values (an MCP ``env:`` block): scalars only."""
    if extra is None:
        return {}
    return env_entries(extra, "extra", EnvValueError, numbers=True)


EntryError = Callable[[str, str], EnvscopeError]
"""Builds the error for a bad entry from the key (as it may be shown) and the reason."""


def env_entries(
    mapping: object,
    what: str,
    error: EntryError,
    *,
    numbers: bool = False,
    parent: bool = False,
) -> dict[str, str]:
    """A mapping of valid names to string values, checked and copied: the one entry checker.

    ``what`` names the mapping in errors (``extra``, ``secret source 'vault'``,
    ``base``); ``error(key, reason)`` builds the error for a bad entry, the key
    shown safely (what precedes an ``=`` of an invalid name, never what follows:
    a docker-style ``NAME=value`` entry holds a value; a lone surrogate escaped),
    never a value. ``numbers`` turns an int or float value into its text (an
    MCP ``env:`` block). ``parent`` is a parent env (``base``, ``environ``, a
    scope): any string name and a NUL-holding value pass here, because the
    sanitize stage drops what ``execve`` cannot carry and records it.
    """
    if type(mapping) is not dict and not isinstance(mapping, Mapping):  # a dict: no ABC check
        raise ConfigurationError(
            f"{what} must be a mapping of names to values, not a {type(mapping).__name__}"
        )
    out: dict[str, str] = {}
    for key, value in mapping.items():
        if not isinstance(key, str):
            raise error(f"<a {type(key).__name__}>", "a name must be a string")
        # the key as shown (``shown_key``, made only for an error): cut at its first "=",
        # escaped when it holds a lone surrogate
        if not encodable(key):
            escaped = key.encode("utf-8", "backslashreplace").decode()
            raise error(
                shown_key(escaped), "the name holds a lone surrogate (no child env can carry it)"
            )
        if not parent and not valid_name(key):
            raise error(shown_key(key), "not a valid environment variable name")
        if isinstance(value, str):
            text = value
        elif numbers and isinstance(value, (int, float)) and not isinstance(value, bool):
            text = str(value)
        else:
            kinds = "a string or a number" if numbers else "a string"
            raise error(shown_key(key), f"must be {kinds}, not {type(value).__name__}")
        if not parent and "\x00" in text:
            raise error(shown_key(key), "value holds a NUL byte")
        if not encodable(text):
            raise error(shown_key(key), "value holds a lone surrogate (no child env can carry it)")
        out[key] = text
    return out


def shown_key(key: str) -> str:
    """A key as a message or a trace may show it: cut at its first ``=`` (``NAME=…``).

    A name that holds ``=`` is no environment name; what follows the ``=`` of
    a docker-style ``NAME=value`` entry is a value, and a value is never shown.
    """
    name, sep, _ = key.partition("=")
    return f"{name}=…" if sep else key


def encodable(text: str) -> bool:
    """True when ``text`` can be encoded for a child env (a lone surrogate cannot)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return True


def snapshot_env(environ: Mapping[str, str], what: str = "base") -> dict[str, str]:
    """One consistent, checked copy of a (possibly live, possibly churning) mapping of strings.

    ``copy_env`` then ``check_env``: anything but a mapping of strings to
    strings is a ``ConfigurationError`` naming ``what`` (and the key, never a value).
    """
    copy = copy_env(environ, what)
    return copy if environ is os.environ else check_env(copy, what)  # os.environ: strings only


def copy_env(environ: Mapping[str, str], what: str = "base") -> dict[str, str]:
    """One consistent copy of a (possibly live, possibly churning) mapping, not yet checked.

    A build copies its parent envs here and checks them only when the build
    runs (``pipeline.build``): a memo hit hands back the child of an equal,
    already checked env, so a warm spawn skips the check.
    """
    if environ is os.environ:
        return ENVIRON_COPIES.copy(environ)  # strings only: os.environ refuses anything else
    if type(environ) is dict:
        return environ.copy()  # atomic under the GIL
    if isinstance(environ, Mapping):
        return _copy_live(environ)
    raise ConfigurationError(
        f"{what} must be a mapping of names to values, not a {type(environ).__name__}"
    )


def current_env(environ: Mapping[str, str], last: dict[str, str] | None) -> dict[str, str]:
    """A snapshot of ``environ`` now, to be read only: ``last`` itself while it still equals it.

    ``os.environ`` through ``EnvironCopies.shared`` (one object while its
    encoded store is equal); a plain dict compared with ``last`` in one C-level
    comparison (atomic under the GIL) and copied only when it differs; any
    other mapping copied. Not checked (``check_env``). The caller compares the
    answer with ``last`` by identity: an unchanged env costs no copy.
    """
    if environ is os.environ:
        return ENVIRON_COPIES.shared(environ)
    if last is not None and type(environ) is dict and environ == last:
        return last
    return copy_env(environ, "environ")


def check_env(env: dict[str, str], what: str) -> dict[str, str]:
    """``env`` itself when every name and value is a string a child env can carry.

    Otherwise a ``ConfigurationError`` naming ``what`` and the key (never a
    value): ``env_entries``' rule for a parent env, walked only when the two
    joins below find a problem.
    """
    joined = _joined(env)
    if joined is None or not (encodable(joined[0]) and encodable(joined[1])):
        env_entries(env, what, config_entry_error(what), parent=True)  # raises, naming the key
    return env


def config_entry_error(what: str) -> EntryError:
    """``error`` for ``env_entries``: a ``ConfigurationError`` naming ``what`` and the key."""

    def error(key: str, reason: str) -> EnvscopeError:
        return ConfigurationError(f"{what}: {key!r}: {reason}")

    return error


def _joined(env: dict[str, str]) -> tuple[str, str] | None:
    """Every key and every value joined, or None when one is not a string.

    Two C-level joins: this runs per build, and the joined text is checked for
    lone surrogates at once (``encodable``: ASCII text costs one ``isascii``).
    """
    try:
        return "".join(env), "".join(env.values())
    except TypeError:
        return None


def _copy_live(environ: Mapping[str, str]) -> dict[str, str]:
    """``dict(environ)``, retried while another thread changes its size."""
    for _ in range(8):
        try:
            return dict(environ)
        except RuntimeError:  # changed size during iteration: another thread wrote it
            continue
    raise EnvscopeError("the environ mapping kept changing while it was copied")


class EnvironCopies:
    """Copies of ``os.environ`` that decode its variables only when they changed.

    ``os.environ`` keeps every name and value encoded and decodes each one on
    every read, so ``dict(os.environ)`` decodes the whole environment (about
    0.6 µs a variable, over 100 µs for 185 variables on a 2-core VM), and a
    host copies it on every build. A copy here takes the encoded dict (one
    C-level copy, atomic under the GIL), compares it with the one decoded
    last (one C-level comparison) and decodes again only when they differ, so
    a copy is always of ``os.environ`` as it is now. Pinned against
    ``dict(os.environ)`` by ``tests/test_environ_copies.py``.
    """

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: tuple[dict[object, object], dict[str, str]] | None = None

    def copy(self, environ: Mapping[str, str]) -> dict[str, str]:
        """``dict(environ)`` for ``os.environ`` (any ``os._Environ``); other mappings copied."""
        return self.shared(environ).copy()

    def shared(self, environ: Mapping[str, str]) -> dict[str, str]:
        """``copy``'s dict itself, never to be changed: the same object while ``environ`` is."""
        encoded = getattr(environ, "_data", None)
        if not isinstance(environ, os._Environ) or type(encoded) is not dict:
            return _copy_live(environ)  # not CPython's os._Environ: read it the plain way
        raw = encoded.copy()  # one consistent copy: another thread's write is before or after
        last = self._last
        if last is None or last[0] != raw:
            decode_key, decode_value = environ.decodekey, environ.decodevalue
            last = (raw, {decode_key(k): decode_value(v) for k, v in raw.items()})
            self._last = last  # one assignment: a racing thread sees the old pair or this one
        return last[1]

    def clear(self) -> None:
        """Forget the last decoded copy (a reset seam for tests; nothing else needs it)."""
        self._last = None


ENVIRON_COPIES = EnvironCopies()
"""The process's one ``os.environ`` reader (``os.environ`` is one per process too)."""
