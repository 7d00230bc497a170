"""Name context: an undeclared variable whose name says credential and whose value looks like one.

Inside an environment the variable's name is sharper context than any text
window around a value: ``ACME_API_TOKEN=<40 random characters>`` is a
credential nobody declared. ``name_context(name, value)`` answers with the
name's credential tokens when both halves hold, else None (plain functions
and tuples: nothing here costs at import, the patterns compile on first use):

- **the name.** It is split into tokens at ``_``, ``-`` and ``.``. A token is a
  credential word when it is one of ``TOKEN SECRET PASSWORD PASSWD PASSPHRASE
  APIKEY CREDENTIALS CREDENTIAL`` or ends in one (``AUTHTOKEN``, ``APITOKEN``,
  ``CLIENTSECRET``), or is exactly ``PWD PASS AUTH PAT SALT JWT``; ``KEY``
  counts only after a qualifier (``API SECRET ACCESS PRIVATE SIGNING CLIENT
  ENCRYPTION MASTER SESSION SERVICE ACCOUNT AUTH HMAC JWT WEBHOOK SHARED
  APP NONCE LICENSE``), as its own token or joined (``SECRETKEY``). Vetoes: a ``PUBLIC``,
  ``PUBLISHABLE`` or ``PUB`` token anywhere, a last token that names where or
  what rather than the secret (``FILE PATH DIR URL ID NAME HOST PORT USER …``,
  ``VETO_LAST``), a credential word right after ``SHORT`` (a token's first
  characters, an identifier: ``VETO_BEFORE``), and the shell's own
  ``PWD``/``OLDPWD``.
- **the value** (``looks_secret``). At least 8 characters after trimming,
  one line, no whitespace, and not a number, a boolean, a placeholder
  (``changeme``, ``<PASSWORD>``, ``${VAR}``, ``xxxxxx``: ``policy._placeholders``,
  the format table's rule too; ``…EXAMPLE``), a path,
  a URL, a host name or an e-mail address. A password word (``PASSWORD
  PASSWD PWD PASSPHRASE PASS``) asks nothing more: a human password is one.
  Any other word asks for a random-looking value: 16 characters or more, a
  letter and a digit, and at least 3 bits of Shannon entropy per character
  (a random hex or base64 key has 3.5 to 6).

Pure functions of their arguments; the decision that strips a match lives in
``envscope.pipeline.decision``.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter

from envscope.policy._placeholders import PLACEHOLDER

__all__ = [
    "KEY_QUALIFIERS",
    "PASSWORD_WORDS",
    "VETO_BEFORE",
    "VETO_LAST",
    "credential_tokens",
    "looks_secret",
    "name_context",
    "reset_tokens",
]

CREDENTIAL_SUFFIX_WORDS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "APIKEY",
    "CREDENTIALS",
    "CREDENTIAL",
)
"""Words that make a token a credential word alone or at its end (``AUTHTOKEN``)."""

EXACT_WORDS = frozenset({"PWD", "PASS", "AUTH", "PAT", "SALT", "JWT"})
"""Short words that count only as a whole token (``COMPASS``, ``OAUTH`` and ``PATH`` do not)."""

PASSWORD_WORDS = frozenset({"PASSWORD", "PASSWD", "PWD", "PASSPHRASE", "PASS"})
"""Words whose value needs no randomness: a human password is a password."""
_PASSWORD_ENDS = ("PASSWORD", "PASSWD", "PASSPHRASE")  # joined: ``DBPASSWORD``, ``GPGPASSPHRASE``

KEY_QUALIFIERS = frozenset(
    {
        "API",
        "SECRET",
        "ACCESS",
        "PRIVATE",
        "SIGNING",
        "CLIENT",
        "ENCRYPTION",
        "MASTER",
        "SESSION",
        "SERVICE",
        "ACCOUNT",
        "AUTH",
        "HMAC",
        "JWT",
        "WEBHOOK",
        "SHARED",
        "APP",
        "NONCE",
        "LICENSE",
    }
)
"""The tokens after which ``KEY`` is a credential word (a ``CACHE_KEY`` or ``SORT_KEY`` is not)."""

VETO_ANY = frozenset({"PUBLIC", "PUBLISHABLE", "PUB"})
VETO_LAST = frozenset(
    {
        "FILE",
        "FILES",
        "PATH",
        "DIR",
        "URL",
        "URI",
        "ID",
        "NAME",
        "HOST",
        "PORT",
        "USER",
        "USERNAME",
        "SOCK",
        "SOCKET",
        "ENDPOINT",
        "REGION",
        "TYPE",
        "MODE",
        "ENABLED",
        "DISABLED",
        "TTL",
        "TIMEOUT",
        "EXPIRY",
        "EXPIRES",
        "LENGTH",
        "SIZE",
        "COUNT",
        "HEADER",
        "PREFIX",
        "ALGORITHM",
        "VERSION",
        "FORMAT",
        "LOCATION",
        "SCOPE",
        "SCOPES",
        "AUDIENCE",
        "ISSUER",
    }
)
"""A last token that names where a secret is or what it is like, not the secret itself."""

VETO_NAMES = frozenset({"PWD", "OLDPWD"})  # the shell's working directories

VETO_BEFORE = frozenset({"SHORT"})
"""A credential word right after one of these names an identifier cut from a credential
(GitLab's ``CI_RUNNER_SHORT_TOKEN``, printed in every job log), not the credential."""

_NUMBER = r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?"
_BOOLEAN = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null", "nil"})
_NOT_A_CREDENTIAL = (
    PLACEHOLDER,  # policy._placeholders: one rule with the format table's filter
    r"(?i:.*example)",  # a provider's documented example key (AKIA…EXAMPLE)
    r"(/|~|\.{1,2}/|[A-Za-z]:[\\/]|\\\\).*",  # a path
    r"[A-Za-z][A-Za-z0-9+.\-]*://.*",  # a URL
    r"(?i:[a-z0-9-]+(\.[a-z0-9-]+)+)(:\d+)?",  # a host name (and port)
    r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}",  # an e-mail address
)
_MIN_LENGTH = 8
_RANDOM_LENGTH = 16
_RANDOM_BITS = 3.0


@functools.cache
def _not_a_credential() -> tuple[re.Pattern[str], ...]:
    """A number and each not-a-credential shape, compiled on first use (not at import)."""
    return tuple(re.compile(p) for p in (_NUMBER, *_NOT_A_CREDENTIAL))


def _credential_word(token: str, previous: str | None) -> bool:
    if token in EXACT_WORDS or token.endswith(CREDENTIAL_SUFFIX_WORDS):
        return True
    if token == "KEY":
        return previous in KEY_QUALIFIERS
    return token.endswith("KEY") and token[:-3] in KEY_QUALIFIERS


_CACHED_NAME = 128  # longer names are split every time: the cache never holds a huge key


def credential_tokens(name: str) -> tuple[str, ...]:
    """The tokens of ``name`` that make it a credential name; () when none or vetoed."""
    return _cached_tokens(name) if len(name) <= _CACHED_NAME else _tokens(name)


@functools.lru_cache(maxsize=4096)  # names repeat build after build; reset_tokens() resets it
def _cached_tokens(name: str) -> tuple[str, ...]:
    return _tokens(name)


def reset_tokens() -> None:
    """Forget the names' tokens remembered (a reset seam: ``testing.reset_process_caches``)."""
    _cached_tokens.cache_clear()


def _tokens(name: str) -> tuple[str, ...]:
    upper = name.strip().upper()
    if upper in VETO_NAMES:
        return ()
    tokens = [t for t in upper.replace("-", "_").replace(".", "_").split("_") if t]
    if not tokens or tokens[-1] in VETO_LAST or any(t in VETO_ANY for t in tokens):
        return ()
    found = []
    for i, token in enumerate(tokens):
        previous = tokens[i - 1] if i else None
        if _credential_word(token, previous) and previous not in VETO_BEFORE:
            found.append(f"{previous}_{token}" if token == "KEY" else token)
    return tuple(found)


def _bits_per_char(value: str) -> float:
    counts = Counter(value)
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def looks_secret(value: str, *, password: bool = False) -> bool:
    """True when ``value`` could be a credential (``password``: a human password will do).

    Never a number, boolean, placeholder, path, URL, host name or e-mail
    address, nor anything shorter than 8 characters or holding whitespace.
    """
    text = value.strip()
    if len(text) < _MIN_LENGTH or any(c.isspace() for c in text):
        return False
    if text.lower() in _BOOLEAN or any(p.fullmatch(text) for p in _not_a_credential()):
        return False
    if password:
        return True
    return (
        len(text) >= _RANDOM_LENGTH
        and any(c.isdigit() for c in text)
        and any(c.isalpha() for c in text)
        and _bits_per_char(text) >= _RANDOM_BITS
    )


def name_context(name: str, value: str) -> tuple[str, ...] | None:
    """The name's credential tokens when it is a credential name and ``value`` looks like one."""
    tokens = credential_tokens(name)
    if not tokens:
        return None
    password = any(t in PASSWORD_WORDS or t.endswith(_PASSWORD_ENDS) for t in tokens)
    return tokens if looks_secret(value, password=password) else None
