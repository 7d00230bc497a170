"""Warnings for kept variables that look like credentials (their key and kind, never a value).

Two kinds of warning, each holding a key and a kind, never a value:

- **value shape** (``find_credential_values``): the value holds a credential
  format of the package's one table (``envscope.policy.formats``, the
  researched rows of ``credential_formats.yaml``); the kind is the format's
  name (``github-classic-pat``, ``aws-access-key-id``, ``url-with-password``…);
- **name shape** (``find_credential_names``): the name ends in a credential
  suffix (``_TOKEN _SECRET _KEY _PASSWORD _PASS _PWD _CREDENTIALS _API_KEY``)
  or contains ``SECRET``/``PASSWORD``, or its tokens are a credential name of
  the name-context rule (``credential-name``: ``NGROK_AUTHTOKEN``,
  ``REDISCLI_AUTH``, ``GH_PAT``, ``APP_SALT``, a bare ``TOKEN``), or the value
  is a URL with a password in its userinfo (``postgres://u:pw@h/db``).

Both skip names a rule declares; name shape also skips the names a host
says it passes knowingly (``Host(known_safe=...)``). Neither ever strips:
whether a value of a credential format is stripped is the secret rule's
decision, made with the same table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from envscope.policy._name_context import credential_tokens
from envscope.policy.formats import find_format, format_table

if TYPE_CHECKING:
    from envscope.policy._secret_policy import SecretPolicy

__all__ = [
    "NAME_KINDS",
    "CredentialFinding",
    "NameFinding",
    "credential_kind",
    "credential_kinds",
    "find_credential_names",
    "find_credential_values",
    "name_kind",
]


def credential_kinds() -> tuple[str, ...]:
    """Every kind ``credential_kind`` can answer: the names of the table's formats."""
    return tuple(f.name for f in format_table().formats)


@dataclass(frozen=True, slots=True)
class CredentialFinding:
    """A kept variable whose value looks like a credential: its key and kind, never the value."""

    key: str
    kind: str

    def __str__(self) -> str:
        return f"{self.key}: value looks like a {self.kind}"


def credential_kind(value: str) -> str | None:
    """The name of the credential format ``value`` holds (anywhere in it), or None."""
    found = find_format(value)
    return None if found is None else found.name


def find_credential_values(
    env: Mapping[str, str], *, policy: SecretPolicy | None = None
) -> list[CredentialFinding]:
    """Keys of ``env`` whose value looks like a credential, sorted by key.

    With a ``policy``, names it declares (either tier) are skipped: the
    warning is for credentials no rule knows about.
    """
    findings: list[CredentialFinding] = []  # a URL with a password: see find_credential_names
    if find_format("\x00".join(env.values())) is None:
        return findings  # the common case: one pass over every value finds nothing
    for key in sorted(env):
        kind = credential_kind(env[key])
        undeclared = policy is None or policy.tier_of(key) is None
        if kind is not None and kind != URL_FORMAT and undeclared:
            findings.append(CredentialFinding(key, kind))
    return findings


_NAME_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_KEY", "_PASSWORD", "_PASS", "_PWD",
                  "_CREDENTIALS")  # fmt: skip
_NAME_WORDS = ("SECRET", "PASSWORD")
# The credential format of a URL whose userinfo holds a password: reported once, as a
# name-shape warning ("the value is a URL with a password"), never twice.
URL_FORMAT = "url-with-password"
# A proxy setting may leave the scheme out (curl, requests and npm read "user:pw@proxy:3128").
_BARE_PROXY_PASSWORD = re.compile(r"[^/@\s:]*:[^/@\s]+@")
NAME_KINDS: tuple[str, ...] = (
    "credential-suffix",
    "credential-word",
    "credential-name",
    "url-with-password",
)


@dataclass(frozen=True, slots=True)
class NameFinding:
    """A kept, undeclared variable whose name (or URL) looks like a credential: key and kind.

    ``launch_declared``: routed, the launch home's policy declares the name,
    but the value is the routed profile's own, which answers to its own policy.
    """

    key: str
    kind: str
    launch_declared: bool = False

    def __str__(self) -> str:
        if self.kind == "url-with-password":
            what = "the value is a URL with a password in it"
        else:
            what = f"the name looks like a credential ({self.kind})"
        if self.launch_declared:
            return (
                f"{self.key}: {what}; the launch home's policy declares the name, but the "
                "value is the routed profile's own, which answers to its own policy only "
                "(kept; declare it in this home's manifests if it is a secret)"
            )
        return (
            f"{self.key}: {what} but no rule declares it (kept; declare it if it is a "
            "secret, or list it in known_safe if the host passes it knowingly)"
        )


def name_kind(key: str, value: str) -> str | None:
    """Why ``key`` (with ``value``) looks like a credential by its shape, or None."""
    up = key.upper()
    if up.endswith(_NAME_SUFFIXES):
        return "credential-suffix"
    if any(word in up for word in _NAME_WORDS):
        return "credential-word"
    if credential_tokens(up):  # the name-context rule's tokens: NGROK_AUTHTOKEN, GH_PAT, …
        return "credential-name"
    if "://" in value and (found := find_format(value)) is not None and found.name == URL_FORMAT:
        return "url-with-password"
    if up.endswith("PROXY") and "@" in value and _BARE_PROXY_PASSWORD.match(value.strip()):
        return "url-with-password"  # a scheme-less proxy URL: user:password@host
    return None


def find_credential_names(
    env: Mapping[str, str],
    *,
    policy: SecretPolicy | None = None,
    known_safe: frozenset[str] = frozenset(),
) -> list[NameFinding]:
    """Keys of ``env`` whose name or URL looks like a credential, sorted by key.

    Skipped: empty values, upper-cased names in ``known_safe``, and (with a
    ``policy``) names it declares in either tier.
    """
    findings = []
    for key in sorted(env):
        value = env[key]
        if not value or key.upper() in known_safe:
            continue
        kind = name_kind(key, value)
        if kind is not None and (policy is None or policy.tier_of(key) is None):
            findings.append(NameFinding(key, kind))
    return findings
