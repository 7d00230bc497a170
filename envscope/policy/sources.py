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
    "PassSource",
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
        return _per_home(self._values, home)


class _Named:
    """A name and ``credential_names`` to check before a ``StaticSource`` keeps them."""

    __slots__ = ("credential_names", "name")

    def __init__(self, name: str, credential_names: object) -> None:
        self.name = name
        self.credential_names = credential_names


def _per_home(entries: Mapping[str, Mapping[str, str]], home: str) -> dict[str, str]:
    """A home's entries laid over every home's (``"*"``): the one rule every source uses."""
    found = dict(entries.get("*", {}))
    found.update(entries.get(home, {}))
    return found


def _timeout(owner: str, timeout: object) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ConfigurationError(f"{owner}: timeout must be a positive number")
    return float(timeout)


class _EntrySource:
    """What every source over per-home ``{NAME: reference}`` entries shares.

    ``entries`` maps a home (``"*"``: every home; any other key is a path, kept
    as its home identity, so a relative or symlinked path still names the home
    the host passes) to ``{NAME: reference}``; each reference passes ``valid``
    or the constructor raises a ``ConfigurationError`` naming the entry.
    ``supplied_names`` and ``reference_of`` read them; ``_describe`` says how a
    reference appears in errors and traces (never a value).
    """

    credential_names: tuple[str, ...] = ()
    _needs = "a reference"

    def __init__(self, name: str, entries: Mapping[str, Mapping[str, str]]) -> None:
        from envscope._inputs import home_identity

        kind = type(self).__name__
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"{kind}: name must be a non-empty string")
        checked: dict[str, dict[str, str]] = {}
        for home, names in entries.items():
            for key, ref in names.items():
                if not portable_name(key) or not isinstance(ref, str) or not self._valid(ref):
                    raise ConfigurationError(
                        f"{kind} {name!r}: entry {key!r} of {home!r} needs a variable name "
                        f"and {self._needs}"
                    )
            checked[home if home == "*" else home_identity(home)] = dict(names)
        self._name = name
        self._entries = checked

    def _valid(self, reference: str) -> bool:
        return bool(reference)

    def _describe(self, reference: str) -> str:
        return reference

    @property
    def name(self) -> str:
        """The source's name (in traces and errors)."""
        return self._name

    def _for(self, home: str) -> dict[str, str]:
        return _per_home(self._entries, home)

    def supplied_names(self, home: str) -> frozenset[str]:
        """The names this source supplies for ``home``, whether or not a fetch answers."""
        return frozenset(self._for(home))

    def reference_of(self, home: str, name: str) -> str | None:
        """Where ``name`` comes from for ``home`` (traces show it; never a value), or None."""
        ref = self._for(home).get(name)
        return None if ref is None else self._describe(ref)


class KeyringSource(_EntrySource):
    """A secret source over the OS keyring (``pip install envscope[keyring]``).

    ``entries`` maps a home (``"*"``: every home) to ``{NAME: user}``: the value
    of ``NAME`` is ``keyring.get_password(service, user)`` (Secret Service on
    Linux, Keychain on macOS, Windows Credential Locker). ``missing`` says what
    an entry the keyring does not hold does: ``"raise"`` (the default) raises
    a ``SourceError``, ``"unset"`` leaves the name unset. A keyring that cannot
    answer (no backend, a locked collection, a D-Bus error) always raises a
    ``SourceError`` naming the service and user, never the backend's message
    (it may quote a value). ``keyring`` is imported on the first fetch, never
    at import. The OS session unlocks the keyring: no credential variable.
    """

    _needs = "a non-empty user"

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
        self.service = service
        self.missing = missing
        super().__init__(name, entries)

    def _describe(self, reference: str) -> str:
        return f"service {self.service!r}, user {reference!r}"

    def fetch(self, home: str) -> Mapping[str, str]:
        """Each entry's password from the keyring (see the class docstring for failures)."""
        import keyring  # optional dependency: on first use
        from keyring.errors import KeyringError

        values: dict[str, str] = {}
        for key, user in sorted(self._for(home).items()):
            failure: SourceError | None = None
            try:
                value = keyring.get_password(self.service, user)
            except KeyringError as exc:  # the backend's message may quote a value: not kept
                failure = SourceError(
                    self._name,
                    self._describe(user),
                    f"the keyring cannot answer ({type(exc).__name__})",
                )
                value = None
            if failure is not None:
                raise failure
            if value is None:
                if self.missing == "raise":
                    raise SourceError(self._name, self._describe(user), f"no entry for {key}")
                continue
            values[key] = value
        return values


class _CliSource(_EntrySource):
    """A source that runs its vendor's CLI once per entry (``policy._cli_source``).

    The CLI gets ``PATH``, ``LANG``, its ``cli_settings`` (non-secret names such
    as ``PASSWORD_STORE_DIR``) and this source's ``credential_names`` from
    ``environ`` (read at each fetch; default ``os.environ``), nothing else,
    within ``timeout`` seconds. ``executable`` is a path, or a name looked up on
    ``environ``'s ``PATH``. Subclasses say how to ask (``_argv``) and read the
    answer (``_value``).
    """

    cli_settings: tuple[str, ...] = ()

    def __init__(
        self,
        name: str,
        entries: Mapping[str, Mapping[str, str]],
        *,
        environ: Mapping[str, str] | None,
        executable: str,
        timeout: float,
    ) -> None:
        super().__init__(name, entries)
        self._environ = environ
        self.executable = executable
        self.timeout = _timeout(type(self).__name__, timeout)

    def _argv(self, exe: str, reference: str) -> tuple[str, ...]:
        raise NotImplementedError

    def _value(self, out: str, reference: str) -> str:
        return out

    def _precheck(self, reference: str, said: str, settings: Mapping[str, str]) -> None:
        """Raise a ``SourceError`` before the CLI runs when the answer is known already."""

    def fetch(self, home: str) -> Mapping[str, str]:
        """One CLI call per entry for ``home`` (a ``SourceError`` at the first failure)."""
        import os
        import shutil

        from envscope.policy._cli_source import run_source_cli

        environ = os.environ if self._environ is None else self._environ
        credentials = {k: environ[k] for k in self.credential_names if environ.get(k)}
        settings = {k: environ[k] for k in self.cli_settings if environ.get(k)}
        exe = shutil.which(self.executable, path=environ.get("PATH")) or self.executable
        values: dict[str, str] = {}
        for key, ref in sorted(self._for(home).items()):
            said = self._describe(ref)
            self._precheck(ref, said, settings)
            out = run_source_cli(self._name, said, self._argv(exe, ref), credentials,
                                 timeout=self.timeout, settings=settings)  # fmt: skip
            values[key] = self._value(out, said)
        return values


OP_CREDENTIALS = ("OP_SERVICE_ACCOUNT_TOKEN", "OP_CONNECT_HOST", "OP_CONNECT_TOKEN")
"""What the 1Password CLI authenticates with (Tier 1 for every child of a host using it)."""


class OnePasswordSource(_CliSource):
    """A secret source over the 1Password CLI: ``op read op://vault/item/field`` per entry.

    ``entries`` maps a home (``"*"``: every home) to ``{NAME: "op://…"}``; the CLI
    runs as every ``_CliSource`` does, with the 1Password credentials
    (``OP_CREDENTIALS``). A reference the CLI cannot read is a ``SourceError``
    naming it, with the CLI's stderr filtered (credentials and credential
    formats masked).
    """

    credential_names: tuple[str, ...] = OP_CREDENTIALS
    _needs = "an op://vault/item/field reference"

    def __init__(
        self,
        entries: Mapping[str, Mapping[str, str]],
        *,
        name: str = "1password",
        environ: Mapping[str, str] | None = None,
        executable: str = "op",
        timeout: float = 10.0,
    ) -> None:
        super().__init__(name, entries, environ=environ, executable=executable, timeout=timeout)

    def _valid(self, reference: str) -> bool:
        return reference.startswith("op://")

    def _argv(self, exe: str, reference: str) -> tuple[str, ...]:
        return (exe, "read", "--no-newline", reference)


BWS_CREDENTIALS = ("BWS_ACCESS_TOKEN",)
"""What the Bitwarden Secrets Manager CLI authenticates with (Tier 1 for every child)."""

_SECRET_ID = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


class BitwardenSource(_CliSource):
    """A secret source over Bitwarden Secrets Manager: ``bws secret get ID --output json``.

    ``entries`` maps a home (``"*"``: every home) to ``{NAME: secret id}`` (a
    UUID); the CLI runs as every ``_CliSource`` does, with ``BWS_ACCESS_TOKEN``.
    The value is the ``value`` field of the JSON it prints; anything else is a
    ``SourceError`` naming the secret id.
    """

    credential_names: tuple[str, ...] = BWS_CREDENTIALS
    _needs = "a secret id (a UUID)"

    def __init__(
        self,
        entries: Mapping[str, Mapping[str, str]],
        *,
        name: str = "bitwarden",
        environ: Mapping[str, str] | None = None,
        executable: str = "bws",
        timeout: float = 10.0,
    ) -> None:
        super().__init__(name, entries, environ=environ, executable=executable, timeout=timeout)

    def _valid(self, reference: str) -> bool:
        return _SECRET_ID.fullmatch(reference) is not None

    def _describe(self, reference: str) -> str:
        return f"secret {reference}"

    def _argv(self, exe: str, reference: str) -> tuple[str, ...]:
        return (exe, "secret", "get", reference, "--output", "json")

    def _value(self, out: str, reference: str) -> str:
        import json

        try:
            value = json.loads(out).get("value")
        except (ValueError, AttributeError):  # not JSON, or not an object
            value = None
        if not isinstance(value, str):  # raised outside the handler: no context kept
            raise SourceError(self._name, reference, "bws printed no secret value")
        return value


class PassSource(_CliSource):
    """A secret source over ``pass``, the standard Unix password store: ``pass show NAME``.

    ``entries`` maps a home (``"*"``: every home) to ``{NAME: "path/in/store"}``;
    the value is the first line of what ``pass show`` prints (pass's own
    convention: the password first, notes after). The CLI runs as every
    ``_CliSource`` does, with ``HOME``, ``GNUPGHOME`` and ``PASSWORD_STORE_DIR``
    (where the store and the key are, ``cli_settings``): no variable holds a
    credential (gpg-agent holds the key), so ``credential_names`` is empty. A
    key that needs a passphrase the agent has not cached fails (stdin is
    closed) rather than waiting. A store path is never read as an option: it
    may not start with ``-`` nor hold a ``..`` segment, and a path that is no
    ``NAME.gpg`` file of the store (a folder, which ``pass show`` would list) is a
    ``SourceError`` before the CLI runs.
    """

    cli_settings: tuple[str, ...] = ("HOME", "GNUPGHOME", "PASSWORD_STORE_DIR")
    _needs = "a password-store path (no leading '-' or '/', no '..')"

    def __init__(
        self,
        entries: Mapping[str, Mapping[str, str]],
        *,
        name: str = "pass",
        environ: Mapping[str, str] | None = None,
        executable: str = "pass",
        timeout: float = 10.0,
    ) -> None:
        super().__init__(name, entries, environ=environ, executable=executable, timeout=timeout)

    def _valid(self, reference: str) -> bool:
        return (
            reference.isprintable()
            and reference[:1] not in ("", "-", "/", " ")
            and not reference.endswith("/")
            and ".." not in reference.split("/")
        )

    def _precheck(self, reference: str, said: str, settings: Mapping[str, str]) -> None:
        """An entry is a file ``NAME.gpg`` in the store: ``pass show`` on a folder lists it."""
        import os

        store = settings.get("PASSWORD_STORE_DIR") or os.path.join(
            settings.get("HOME", "~"), ".password-store"
        )
        if not os.path.isfile(os.path.join(store, reference + ".gpg")):
            raise SourceError(self._name, said, "the store holds no such entry")

    def _argv(self, exe: str, reference: str) -> tuple[str, ...]:
        return (exe, "show", "--", reference)

    def _value(self, out: str, reference: str) -> str:
        first = out.split("\n", 1)[0]
        if not first:  # raised outside any handler: no context kept
            raise SourceError(self._name, reference, "the entry's first line is empty")
        return first
