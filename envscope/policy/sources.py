"""Secret sources: where a host fetches values that are in no file (a vault, 1Password).

A source may also have a ``credential_names`` attribute: the names it reads to
authenticate (``("VAULT_TOKEN",)``). The attribute is optional: a source
without it is still a ``SecretSource``. ``Host.add_secret_source`` makes those
names Tier 1 for every child of the host.

This module is the sources' public face: the protocol, ``StaticSource`` and the
helpers the host uses to read a source's declarations. The sources that reach a
real backend live in private modules, exported here and loaded on first use
(importing envscope loads no vendor module): the keyring
(``_source_entries``), the sources over a vendor's CLI (``_cli_source``),
age-encrypted files (``_age_source``), Vault's KV engine (``_vault_source``)
and AWS Secrets Manager (``_aws_source``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from envscope._inputs import portable_name
from envscope.errors import ConfigurationError
from envscope.policy._source_entries import _per_home

if TYPE_CHECKING:  # loaded on first use (below): no vendor module at import
    from envscope.policy._age_source import AgeFileSource as AgeFileSource
    from envscope.policy._aws_source import AWS_CREDENTIALS as AWS_CREDENTIALS
    from envscope.policy._aws_source import AwsSecretsSource as AwsSecretsSource
    from envscope.policy._cli_source import BWS_CREDENTIALS as BWS_CREDENTIALS
    from envscope.policy._cli_source import OP_CREDENTIALS as OP_CREDENTIALS
    from envscope.policy._cli_source import BitwardenSource as BitwardenSource
    from envscope.policy._cli_source import OnePasswordSource as OnePasswordSource
    from envscope.policy._cli_source import PassSource as PassSource
    from envscope.policy._source_entries import KeyringSource as KeyringSource
    from envscope.policy._vault_source import VAULT_CREDENTIALS as VAULT_CREDENTIALS
    from envscope.policy._vault_source import VaultSource as VaultSource

_VENDOR = {
    "AgeFileSource": "_age_source",
    "AWS_CREDENTIALS": "_aws_source",
    "AwsSecretsSource": "_aws_source",
    "BWS_CREDENTIALS": "_cli_source",
    "OP_CREDENTIALS": "_cli_source",
    "BitwardenSource": "_cli_source",
    "OnePasswordSource": "_cli_source",
    "PassSource": "_cli_source",
    "KeyringSource": "_source_entries",
    "VAULT_CREDENTIALS": "_vault_source",
    "VaultSource": "_vault_source",
}
"""Each source over a real backend, and the private module it loads from on first use."""


def __getattr__(name: str) -> object:
    """A source class from its private module, imported when first asked for."""
    module = _VENDOR.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"envscope.policy.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "AWS_CREDENTIALS",
    "BWS_CREDENTIALS",
    "OP_CREDENTIALS",
    "VAULT_CREDENTIALS",
    "AgeFileSource",
    "AwsSecretsSource",
    "BitwardenSource",
    "KeyringSource",
    "OnePasswordSource",
    "PassSource",
    "SecretSource",
    "StaticSource",
    "VaultSource",
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
