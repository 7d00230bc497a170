"""The envscope exception tree.

Every error envscope raises derives from one root, so a host can catch
``EnvscopeError`` around a spawn and know it failed *closed*::

    EnvscopeError
    ├── ConfigurationError        a host or call set up wrongly
    │   ├── NotConfiguredError    module-level build with no default host
    │   └── RoutingError          a routed home that does not exist; a credentialed child
    │                             under multiplex with no routed home
    ├── FileError                 anything about a file: always names the path (and line/field)
    │   ├── ConfigFileError       an invalid host config file (envscope.yaml)
    │   ├── CatalogError          an invalid catalog YAML
    │   ├── ManifestError         an unreadable, unparsable or invalid plugin manifest
    │   ├── DotenvError           an unreadable or malformed dotenv file
    │   └── SnapshotError         an unreadable or malformed snapshot (``envscope diff``)
    ├── SourceError               a secret source that cannot answer (names the source and
    │                             the reference, never a value)
    ├── EnvValueError             a value that cannot go into a child env (names the key)
    │   └── PassthroughRefusedError  a passthrough or a grant that can never pass
    └── SpawnBlockedError         the runtime guard stopped a spawn carrying host secrets
        └── GuardFailedError      the guard could not check a spawn (mode="raise" refuses it)

No message ever holds a variable's *value*: only keys, paths, lines and fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "CatalogError",
    "ConfigFileError",
    "ConfigurationError",
    "DotenvError",
    "EnvValueError",
    "EnvscopeError",
    "FileError",
    "GuardFailedError",
    "ManifestError",
    "NotConfiguredError",
    "PassthroughRefusedError",
    "RoutingError",
    "SnapshotError",
    "SourceError",
    "SpawnBlockedError",
]


class EnvscopeError(Exception):
    """Root of every error envscope raises."""


class ConfigurationError(EnvscopeError):
    """A host, a call or a config file is set up in a way envscope refuses."""


class NotConfiguredError(ConfigurationError):
    """The module-level ``build_subprocess_env`` was called before ``configure(host)``."""


class RoutingError(ConfigurationError):
    """Routing that cannot be right: a home that does not exist, or none bound where needed."""


class FileError(EnvscopeError):
    """An error about a file; ``path``, ``line`` and ``field`` say where.

    ``more`` are the file's other problems (each an error of its own, found in
    the same read: a schema reports every field it rejects); the message counts
    them, and ``problems`` is this one and the rest, in the file's order.
    """

    def __init__(
        self,
        path: str,
        message: str,
        *,
        line: int | None = None,
        field: str | None = None,
        more: Sequence[FileError] = (),
    ) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        self.message = message
        self.more = tuple(more)
        super().__init__(self._render())

    @property
    def problems(self) -> tuple[FileError, ...]:
        """Every problem of the read: this one first, then ``more``."""
        return (self, *self.more)

    def _render(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        field = f"{self.field}: " if self.field else ""
        count = len(self.more)
        more = f" (and {count} more problem{'s' if count > 1 else ''})" if count else ""
        text = f"{where}: {field}{self.message}{more}"
        # A control character (a newline, a NUL, an escape), in the path or in a path the
        # message quotes, is shown escaped: a message is one line and writes no terminal control.
        return text if text.isprintable() else _escaped(text)


def _escaped(text: str) -> str:
    """``text`` with each non-printable character as a backslash escape (``\\x00``, ``\\n``)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class ConfigFileError(FileError):
    """An invalid host config file (names the file and the field)."""


class CatalogError(FileError):
    """An invalid catalog file (names the file and the field)."""


class ManifestError(FileError):
    """A plugin manifest that cannot be read, parsed or validated."""


class DotenvError(FileError):
    """A dotenv file that cannot be read or holds a malformed line."""


class SnapshotError(FileError):
    """A snapshot that cannot be read, is not JSON or has the wrong shape (names the field)."""


class SourceError(EnvscopeError):
    """A secret source that cannot answer: ``source`` and ``reference`` name what failed.

    ``reference`` is where the value was asked for (a keyring service and user,
    an ``op://`` reference): never a value, and never a backend's raw message,
    which may quote one.
    """

    def __init__(self, source: str, reference: str, message: str) -> None:
        self.source = source
        self.reference = reference
        self.reason = message
        super().__init__(f"secret source {source!r}: {reference}: {message}")


class EnvValueError(EnvscopeError):
    """A key or value that cannot go into a child env; ``key`` names it (never the value)."""

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        self.reason = message
        super().__init__(f"{key!r}: {message}")


class PassthroughRefusedError(EnvValueError):
    """A passthrough or a grant that can never pass (``key`` names it, never its value).

    A passthrough of a declared, force-prefixed or injection-vector name; a
    grant of a key ``extra`` does not hold, or of a secret source's credential
    (by name, or by a value that holds it).
    """


class SpawnBlockedError(EnvscopeError):
    """The runtime guard (``envscope.guard``) stopped a spawn whose env carries host secrets.

    ``site`` is the call site (``file:line in function``), ``event`` the
    audit event, ``keys`` the offending keys (a key, or ``KEY (the value of
    NAME)`` when it holds another declared name's value). Never a value.
    """

    def __init__(self, site: str, event: str, keys: list[str]) -> None:
        self.site = site
        self.event = event
        self.keys = keys
        super().__init__(
            f"{site}: {event} blocked by envscope.guard: the child env carries host secrets "
            f"under {', '.join(keys)}; build it with envscope (docs/guard.md)"
        )


class GuardFailedError(SpawnBlockedError):
    """The runtime guard could not check a spawn, so ``mode="raise"`` refused it.

    ``reason`` names what failed (an envscope error's own message, which holds
    no value, or the type of any other error); the cause is chained. In
    ``mode="warn"`` the same failure is a warning and the spawn goes ahead.
    """

    def __init__(self, site: str, event: str, reason: str) -> None:
        self.reason = reason
        EnvscopeError.__init__(
            self,
            f"{site}: {event} refused by envscope.guard: it could not check the child env "
            f"({reason}); the spawn fails closed (docs/guard.md)",
        )
        self.site = site
        self.event = event
        self.keys: list[str] = []
