"""Secret sources: where a host fetches values that are in no file (a vault, 1Password).

A source may also have a ``credential_names`` attribute: the names it reads to
authenticate (``("VAULT_TOKEN",)``). The attribute is optional: a source
without it is still a ``SecretSource``. ``Host.add_secret_source`` makes those
names Tier 1 for every child of the host.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Protocol, runtime_checkable

from envscope._inputs import portable_name
from envscope.errors import ConfigurationError, SourceError

__all__ = [
    "BWS_CREDENTIALS",
    "OP_CREDENTIALS",
    "BitwardenSource",
    "KeyringSource",
    "OnePasswordSource",
    "SecretSource",
    "StaticSource",
    "check_source",
    "credential_names_of",
    "declared_names_of",
    "source_detail",
]


@runtime_checkable
class SecretSource(Protocol):
    """A named provider of secret values for a home (``credential_names`` is optional)."""

    @property
    def name(self) -> str:
        """A short name that says where values came from (it appears in traces)."""
        ...

    def fetch(self, home: str) -> Mapping[str, str]:
        """The values this source supplies for ``home`` (a resolved home path)."""
        ...


def check_source(source: object, what: str) -> None:
    """``source`` is a ``SecretSource`` with a non-empty ``str`` name; else a ConfigurationError."""
    name = getattr(source, "name", None)
    if not isinstance(source, SecretSource) or not isinstance(name, str) or not name:
        raise ConfigurationError(
            f"{what}: expected a SecretSource (a non-empty str name and a fetch(home) "
            f"method), got a {type(source).__name__}"
        )


def credential_names_of(source: object) -> tuple[str, ...]:
    """The names a source says it reads to authenticate (none when it has no such attribute).

    A bare string, a non-string item or an invalid name is a ``ConfigurationError``
    naming the source: ``"VAULT_TOKEN"`` would otherwise declare its letters.
    """
    names = getattr(source, "credential_names", None)
    if names is None:
        return ()
    label = getattr(source, "name", type(source).__name__)
    if isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
        raise ConfigurationError(
            f"secret source {label!r}: credential_names must be a list of names, not a string"
        )
    found = tuple(names)
    for i, name in enumerate(found):
        if not isinstance(name, str) or not portable_name(name):
            raise ConfigurationError(
                f"secret source {label!r}: credential_names item {i} is not a variable name"
            )
    return found


def declared_names_of(source: object, home: str) -> frozenset[str]:
    """The names a source says it supplies for ``home`` (``supplied_names``), fetched or not.

    Optional, like ``credential_names``: a source without it declares what it fetched.
    A name that could not be fetched is still the source's, so a value under it that came
    from elsewhere (a stale launch value) is never taken for an ordinary one. A bare
    string or an invalid name is a ``ConfigurationError`` naming the source.
    """
    supplied = getattr(source, "supplied_names", None)
    if supplied is None or not callable(supplied):
        return frozenset()
    names = supplied(home)
    label = getattr(source, "name", type(source).__name__)
    if isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
        raise ConfigurationError(
            f"secret source {label!r}: supplied_names must return names, not a string"
        )
    found = frozenset(names)
    for name in found:
        if not isinstance(name, str) or not portable_name(name):
            raise ConfigurationError(
                f"secret source {label!r}: supplied_names holds something that is no name"
            )
    return found


def source_detail(source: object, home: str, name: str) -> str:
    """How a trace names where a value came from: the source, and its entry when it says.

    A source's optional ``reference_of(home, name)`` gives the entry (a keyring service
    and user, an ``op://`` reference): ``keyring (service 'svc', user 'gh')``. Never a value.
    """
    label = str(getattr(source, "name", type(source).__name__))
    reference_of = getattr(source, "reference_of", None)
    reference = reference_of(home, name) if callable(reference_of) else None
    return label if not isinstance(reference, str) or not reference else f"{label} ({reference})"


class StaticSource:
    """A secret source over fixed per-home values (tests, and hosts with values in code)."""

    def __init__(
        self,
        name: str,
        values: Mapping[str, Mapping[str, str]],
        credential_names: Iterable[str] = (),
    ) -> None:
        self._name = name
        self._values = {k: dict(v) for k, v in values.items()}
        self.credential_names: tuple[str, ...] = ()
        self.credential_names = credential_names_of(_Named(name, credential_names))

    @property
    def name(self) -> str:
        """The source's name."""
        return self._name

    def fetch(self, home: str) -> Mapping[str, str]:
        """The values for ``home`` (``"*"`` applies to every home), as a new dict."""
        merged = dict(self._values.get("*", {}))
        merged.update(self._values.get(home, {}))
        return merged


class _Named:
    """A name and ``credential_names`` to check before a ``StaticSource`` keeps them."""

    __slots__ = ("credential_names", "name")

    def __init__(self, name: str, credential_names: object) -> None:
        self.name = name
        self.credential_names = credential_names


class KeyringSource:
    """A secret source over the OS keyring (``pip install envscope[keyring]``).

    ``entries`` maps a home (``"*"``: every home) to ``{NAME: user}``: the value
    of ``NAME`` is ``keyring.get_password(service, user)`` (Secret Service on
    Linux, Keychain on macOS, Windows Credential Locker). ``missing`` says what
    an entry the keyring does not hold does: ``"raise"`` (the default) raises
    a ``SourceError``, ``"unset"`` leaves the name unset. A keyring that cannot
    answer (no backend, a locked collection, a D-Bus error) always raises a
    ``SourceError`` naming the service and user, never the backend's message
    (it may quote a value). ``supplied_names(home)`` are the names the source
    supplies for a home, fetched or not. ``keyring`` is imported on the first
    fetch, never at import.
    """

    credential_names: tuple[str, ...] = ()  # the OS session unlocks it: no variable

    def __init__(
        self,
        service: str,
        entries: Mapping[str, Mapping[str, str]],
        *,
        name: str = "keyring",
        missing: str = "raise",
    ) -> None:
        if not isinstance(service, str) or not service:
            raise ConfigurationError("KeyringSource: service must be a non-empty string")
        if missing not in ("raise", "unset"):
            raise ConfigurationError(
                f"KeyringSource: missing must be 'raise' or 'unset', not {missing!r}"
            )
        checked: dict[str, dict[str, str]] = {}
        for home, names in entries.items():
            for key, user in names.items():
                if not portable_name(key) or not isinstance(user, str) or not user:
                    raise ConfigurationError(
                        f"KeyringSource {name!r}: entry {key!r} of {home!r} needs a variable "
                        "name and a non-empty user"
                    )
            checked[home] = dict(names)
        self._name = name
        self.service = service
        self._entries = checked
        self.missing = missing

    @property
    def name(self) -> str:
        """The source's name (in traces and errors)."""
        return self._name

    def _for(self, home: str) -> dict[str, str]:
        found = dict(self._entries.get("*", {}))
        found.update(self._entries.get(home, {}))
        return found

    def supplied_names(self, home: str) -> frozenset[str]:
        """The names this source supplies for ``home``, whether or not a fetch answers."""
        return frozenset(self._for(home))

    def reference_of(self, home: str, name: str) -> str | None:
        """The keyring entry ``name`` comes from for ``home`` (traces show it), or None."""
        user = self._for(home).get(name)
        return None if user is None else f"service {self.service!r}, user {user!r}"

    def fetch(self, home: str) -> Mapping[str, str]:
        """Each entry's password from the keyring (see the class docstring for failures)."""
        import keyring  # optional dependency: on first use
        from keyring.errors import KeyringError

        values: dict[str, str] = {}
        for key, user in sorted(self._for(home).items()):
            reference = f"service {self.service!r}, user {user!r}"  # as reference_of says
            failure: SourceError | None = None
            try:
                value = keyring.get_password(self.service, user)
            except KeyringError as exc:  # the backend's message may quote a value: not kept
                failure = SourceError(
                    self._name, reference, f"the keyring cannot answer ({type(exc).__name__})"
                )
                value = None
            if failure is not None:
                raise failure
            if value is None:
                if self.missing == "raise":
                    raise SourceError(self._name, reference, f"no entry for {key}")
                continue
            values[key] = value
        return values


OP_CREDENTIALS = ("OP_SERVICE_ACCOUNT_TOKEN", "OP_CONNECT_HOST", "OP_CONNECT_TOKEN")
"""What the 1Password CLI authenticates with (Tier 1 for every child of a host using it)."""


class OnePasswordSource:
    """A secret source over the 1Password CLI: ``op read op://vault/item/field`` per entry.

    ``entries`` maps a home (``"*"``: every home) to ``{NAME: "op://…"}``. The
    CLI runs with ``PATH``, ``LANG`` and the 1Password credentials of ``environ``
    (``OP_CREDENTIALS``, read at each fetch; default ``os.environ``) and nothing
    else, bounded by ``timeout`` seconds (``policy._cli_source``). A reference
    the CLI cannot read is a ``SourceError`` naming it, with the CLI's stderr
    filtered (credentials and credential formats masked). ``executable`` is the
    ``op`` to run (a path, or a name looked up on ``environ``'s ``PATH``).
    """

    credential_names: tuple[str, ...] = OP_CREDENTIALS

    def __init__(
        self,
        entries: Mapping[str, Mapping[str, str]],
        *,
        name: str = "1password",
        environ: Mapping[str, str] | None = None,
        executable: str = "op",
        timeout: float = 10.0,
    ) -> None:
        checked: dict[str, dict[str, str]] = {}
        for home, names in entries.items():
            for key, ref in names.items():
                if (
                    not portable_name(key)
                    or not isinstance(ref, str)
                    or not ref.startswith("op://")
                ):
                    raise ConfigurationError(
                        f"OnePasswordSource {name!r}: entry {key!r} of {home!r} needs a variable "
                        "name and an op://vault/item/field reference"
                    )
            checked[home] = dict(names)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ConfigurationError("OnePasswordSource: timeout must be a positive number")
        self._name = name
        self._entries = checked
        self._environ = environ
        self.executable = executable
        self.timeout = float(timeout)

    @property
    def name(self) -> str:
        """The source's name (in traces and errors)."""
        return self._name

    def _for(self, home: str) -> dict[str, str]:
        found = dict(self._entries.get("*", {}))
        found.update(self._entries.get(home, {}))
        return found

    def supplied_names(self, home: str) -> frozenset[str]:
        """The names this source supplies for ``home``, whether or not a fetch answers."""
        return frozenset(self._for(home))

    def reference_of(self, home: str, name: str) -> str | None:
        """The ``op://`` reference ``name`` comes from for ``home`` (traces show it), or None."""
        return self._for(home).get(name)

    def fetch(self, home: str) -> Mapping[str, str]:
        """``op read`` of each entry for ``home`` (a ``SourceError`` for the first that fails)."""
        import os
        import shutil

        from envscope.policy._cli_source import run_source_cli

        environ = os.environ if self._environ is None else self._environ
        credentials = {k: environ[k] for k in OP_CREDENTIALS if environ.get(k)}
        exe = shutil.which(self.executable, path=environ.get("PATH")) or self.executable
        values: dict[str, str] = {}
        for key, ref in sorted(self._for(home).items()):
            argv = (exe, "read", "--no-newline", ref)
            values[key] = run_source_cli(self._name, ref, argv, credentials, timeout=self.timeout)
        return values


BWS_CREDENTIALS = ("BWS_ACCESS_TOKEN",)
"""What the Bitwarden Secrets Manager CLI authenticates with (Tier 1 for every child)."""

_SECRET_ID = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


class BitwardenSource:
    """A secret source over Bitwarden Secrets Manager: ``bws secret get ID --output json``.

    ``entries`` maps a home (``"*"``: every home) to ``{NAME: secret id}`` (a
    UUID). The CLI runs with ``PATH``, ``LANG`` and ``BWS_ACCESS_TOKEN`` from
    ``environ`` (default ``os.environ``) and nothing else, bounded by ``timeout``
    seconds; the value is the ``value`` field of the JSON it prints. Failures
    are a ``SourceError`` naming the secret id (stderr filtered, as for every CLI).
    """

    credential_names: tuple[str, ...] = BWS_CREDENTIALS

    def __init__(
        self,
        entries: Mapping[str, Mapping[str, str]],
        *,
        name: str = "bitwarden",
        environ: Mapping[str, str] | None = None,
        executable: str = "bws",
        timeout: float = 10.0,
    ) -> None:
        for home, names in entries.items():
            for key, ref in names.items():
                if (
                    not portable_name(key)
                    or not isinstance(ref, str)
                    or not _SECRET_ID.fullmatch(ref)
                ):
                    raise ConfigurationError(
                        f"BitwardenSource {name!r}: entry {key!r} of {home!r} needs a variable "
                        "name and a secret id (a UUID)"
                    )
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ConfigurationError("BitwardenSource: timeout must be a positive number")
        self._name = name
        self._entries = {home: dict(names) for home, names in entries.items()}
        self._environ = environ
        self.executable = executable
        self.timeout = float(timeout)

    @property
    def name(self) -> str:
        """The source's name (in traces and errors)."""
        return self._name

    def _for(self, home: str) -> dict[str, str]:
        found = dict(self._entries.get("*", {}))
        found.update(self._entries.get(home, {}))
        return found

    def supplied_names(self, home: str) -> frozenset[str]:
        """The names this source supplies for ``home``, whether or not a fetch answers."""
        return frozenset(self._for(home))

    def reference_of(self, home: str, name: str) -> str | None:
        """The secret id ``name`` comes from for ``home`` (traces show it), or None."""
        secret_id = self._for(home).get(name)
        return None if secret_id is None else f"secret {secret_id}"

    def fetch(self, home: str) -> Mapping[str, str]:
        """``bws secret get`` of each entry for ``home`` (a ``SourceError`` at a failure)."""
        import json
        import os
        import shutil

        from envscope.policy._cli_source import run_source_cli

        environ = os.environ if self._environ is None else self._environ
        credentials = {k: environ[k] for k in BWS_CREDENTIALS if environ.get(k)}
        exe = shutil.which(self.executable, path=environ.get("PATH")) or self.executable
        values: dict[str, str] = {}
        for key, secret_id in sorted(self._for(home).items()):
            reference = f"secret {secret_id}"
            argv = (exe, "secret", "get", secret_id, "--output", "json")
            out = run_source_cli(self._name, reference, argv, credentials, timeout=self.timeout)
            try:
                value = json.loads(out).get("value")
            except (ValueError, AttributeError):  # not JSON, or not an object
                value = None
            if not isinstance(value, str):  # raised outside the handler: no context kept
                raise SourceError(self._name, reference, "bws printed no secret value")
            values[key] = value
        return values
