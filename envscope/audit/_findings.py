"""Warnings for kept variables that look like credentials (their key and kind, never a value).

Two kinds of warning, each holding a key and a kind, never a value:

- **value shape** (``find_credential_values``): the value holds a well-known
  token format;
- **name shape** (``find_credential_names``): the name ends in a credential
  suffix (``_TOKEN _SECRET _KEY _PASSWORD _PASS _PWD _CREDENTIALS _API_KEY``)
  or contains ``SECRET``/``PASSWORD``, or the value is a URL with a password
  in its userinfo (``postgres://u:pw@h/db``).

Both skip names a rule declares; name shape also skips the names a host
says it passes knowingly (``Host(known_safe=...)``). Neither ever strips.

A policy decides by name. A child env can still carry a token under a name no
rule declares (``MY_APP_KEY=ghp_...``, ``DEPLOY=https://x:glpat-...@host``).
``find_credential_values`` flags such keys by the shape of the value: it
warns, it never strips (a name-based policy stays the one source of truth),
and a finding holds the key and the kind of credential, never the value.

The table is small and conservative: well-known, prefixed token formats
(AWS access key ids, GitHub, GitLab, OpenAI/Anthropic-style ``sk-`` keys,
Stripe live keys, Slack, Google API keys), PEM private key blocks and JWTs. Every pattern is
anchored on a literal prefix at the start of a run of token characters, and
no quantified part can match a separator that follows it, so a search is
linear in the length of the value (a 1 MiB value takes milliseconds).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from envscope.policy._secret_policy import SecretPolicy

__all__ = [
    "CREDENTIAL_KINDS",
    "NAME_KINDS",
    "CredentialFinding",
    "NameFinding",
    "credential_kind",
    "find_credential_names",
    "find_credential_values",
    "name_kind",
]

_ALNUM = "A-Za-z0-9"
_B64URL = r"A-Za-z0-9_\-"

# (kind, literals, pattern), tried in order: the first match names the kind. A
# pattern only runs when one of its literals occurs in the value (a fast
# substring test), so an ordinary value costs a few ``in`` checks.
_PATTERNS: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = (
    (
        "private-key",
        ("PRIVATE KEY",),
        re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    ),
    (
        "aws-access-key-id",
        ("AKIA", "ASIA"),
        re.compile(rf"(?<![{_ALNUM}])(?:AKIA|ASIA)[A-Z0-9]{{16}}(?![{_ALNUM}])"),
    ),
    (
        "github-token",
        ("ghp_", "gho_", "ghs_", "ghu_", "ghr_", "github_pat_"),
        re.compile(
            rf"(?<![{_ALNUM}_])(?:gh[pousr]_[{_ALNUM}]{{36,}}|github_pat_[{_ALNUM}_]{{36,}})"
        ),
    ),
    (
        "gitlab-token",
        ("glpat-",),
        re.compile(rf"(?<![{_B64URL}.])glpat-[{_B64URL}.]{{20,}}"),
    ),
    (
        "anthropic-api-key",
        ("sk-ant-",),
        re.compile(rf"(?<![{_B64URL}])sk-ant-[{_B64URL}]{{32,}}"),
    ),
    (
        "openai-api-key",
        ("sk-",),
        re.compile(rf"(?<![{_B64URL}])sk-(?!ant-)[{_B64URL}]{{32,}}"),
    ),
    (
        "stripe-secret-key",
        ("sk_live_", "rk_live_"),
        re.compile(rf"(?<![{_ALNUM}_])[sr]k_live_[{_ALNUM}]{{24,}}"),
    ),
    (
        "slack-token",
        ("xox",),
        re.compile(rf"(?<![{_ALNUM}-])xox[abpors]-[{_ALNUM}-]{{10,}}"),
    ),
    (
        "google-api-key",
        ("AIza",),
        re.compile(rf"(?<![{_B64URL}])AIza[{_B64URL}]{{35}}(?![{_B64URL}])"),
    ),
    (
        "jwt",
        ("eyJ",),
        re.compile(rf"(?<![{_B64URL}.])eyJ[{_B64URL}]{{5,}}\.[{_B64URL}]{{5,}}\.[{_B64URL}]{{5,}}"),
    ),
)

CREDENTIAL_KINDS: tuple[str, ...] = tuple(kind for kind, _, _ in _PATTERNS)

# Every literal of the table in one regex: an ordinary value costs one search.
_ANY_LITERAL = re.compile("|".join(re.escape(lit) for _, lits, _ in _PATTERNS for lit in lits))


@dataclass(frozen=True, slots=True)
class CredentialFinding:
    """A kept variable whose value looks like a credential: its key and kind, never the value."""

    key: str
    kind: str

    def __str__(self) -> str:
        return f"{self.key}: value looks like a {self.kind}"


def credential_kind(value: str) -> str | None:
    """The kind of credential ``value`` holds (anywhere in it), or None."""
    if _ANY_LITERAL.search(value) is None:
        return None
    for kind, literals, pattern in _PATTERNS:
        if any(literal in value for literal in literals) and pattern.search(value):
            return kind
    return None


def find_credential_values(
    env: Mapping[str, str], *, policy: SecretPolicy | None = None
) -> list[CredentialFinding]:
    """Keys of ``env`` whose value looks like a credential, sorted by key.

    With a ``policy``, names it declares (either tier) are skipped: the
    warning is for credentials no rule knows about.
    """
    findings: list[CredentialFinding] = []
    if _ANY_LITERAL.search("\x00".join(env.values())) is None:
        return findings  # the common case: no value holds any literal of the table
    for key in sorted(env):
        kind = credential_kind(env[key])
        if kind is not None and (policy is None or policy.tier_of(key) is None):
            findings.append(CredentialFinding(key, kind))
    return findings


_NAME_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_KEY", "_PASSWORD", "_PASS", "_PWD",
                  "_CREDENTIALS")  # fmt: skip
_NAME_WORDS = ("SECRET", "PASSWORD")
# scheme://user:password@ -- each part excludes the separator that ends it: linear.
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/@\s:]*:[^/@\s]+@")
# A proxy setting may leave the scheme out (curl, requests and npm read "user:pw@proxy:3128").
_BARE_PROXY_PASSWORD = re.compile(r"[^/@\s:]*:[^/@\s]+@")
NAME_KINDS: tuple[str, ...] = ("credential-suffix", "credential-word", "url-with-password")


@dataclass(frozen=True, slots=True)
class NameFinding:
    """A kept, undeclared variable whose name (or URL) looks like a credential: key and kind."""

    key: str
    kind: str

    def __str__(self) -> str:
        if self.kind == "url-with-password":
            what = "the value is a URL with a password in it"
        else:
            what = f"the name looks like a credential ({self.kind})"
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
    if "://" in value and _URL_PASSWORD.match(value.strip()):
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
