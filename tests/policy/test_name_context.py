"""The name-context rule: tables over its two halves (the name's tokens, the value test).

Every credential name of issue 30's list is caught with a random value; every
veto (a public key, a path-, URL- or id-naming last token, an unqualified
``KEY``, a longer word that only contains a short one) and every value that is
a path, URL, host, number, boolean or placeholder is not. A property: whatever
the name, a value that is a path, a URL or a number never matches.
"""

from __future__ import annotations

import secrets
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envscope.policy._name_context import credential_tokens, looks_secret, name_context

RANDOM = "q7Vt2Lm9Xc4Rp8Kd1Wz6Hy3Nb5Gf0Js"  # 32 characters, letters and digits

CREDENTIAL_NAMES = {
    "ACME_API_TOKEN": ("TOKEN",),
    "NGROK_AUTHTOKEN": ("AUTHTOKEN",),
    "REDISCLI_AUTH": ("AUTH",),
    "DB_PASSWD": ("PASSWD",),
    "GPG_PASSPHRASE": ("PASSPHRASE",),
    "GH_PAT": ("PAT",),
    "AZURE_DEVOPS_EXT_PAT": ("PAT",),
    "ACME_APIKEY": ("APIKEY",),
    "WORDPRESS_AUTH_SALT": ("AUTH", "SALT"),
    "BASIC_AUTH": ("AUTH",),
    "TOKEN": ("TOKEN",),
    "MYSQL_PWD": ("PWD",),
    "DB_PASS": ("PASS",),
    "STRIPE_SECRET_KEY": ("SECRET", "SECRET_KEY"),
    "AWS_SECRET_ACCESS_KEY": ("SECRET", "ACCESS_KEY"),
    "OAUTH_CLIENT_SECRET": ("SECRET",),
    "JWT_SIGNING_KEY": ("JWT", "SIGNING_KEY"),
    "CI_JOB_JWT": ("JWT",),
    "WORDPRESS_NONCE_KEY": ("NONCE_KEY",),
    "NEW_RELIC_LICENSE_KEY": ("LICENSE_KEY",),
    "ACME_ACCESS_KEY": ("ACCESS_KEY",),
    "ACME_PRIVATE_KEY": ("PRIVATE_KEY",),
    "ACME_SECRETKEY": ("SECRETKEY",),
    "ENCRYPTION_KEY": ("ENCRYPTION_KEY",),
    "ACME_CREDENTIALS": ("CREDENTIALS",),
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": ("TOKEN", "TOKEN"),
    "acme-api-token": ("TOKEN",),
    "npm.config.password": ("PASSWORD",),
    "SHORT_LIVED_TOKEN": ("TOKEN",),  # SHORT vetoes only the word right after it
}

NOT_CREDENTIAL_NAMES = [
    "CACHE_KEY",  # KEY without a qualifier
    "SORT_KEY",
    "KEY",
    "PRIMARY_KEY",
    "MONKEY",
    "STRIPE_PUBLISHABLE_KEY",  # vetoed anywhere
    "SSH_PUBLIC_KEY",
    "ACME_PUB_KEY",
    "ACTIONS_ID_TOKEN_REQUEST_URL",  # the last token names where, not what
    "NPM_TOKEN_FILE",
    "TOKEN_PATH",
    "PASSWORD_MIN_LENGTH",
    "OAUTH_CLIENT_ID",
    "SSH_AUTH_SOCK",
    "AUTH_TYPE",
    "SECRET_NAME",
    "VAULT_TOKEN_TTL",
    "CI_RUNNER_SHORT_TOKEN",  # a token's first characters: an identifier
    "TOKENIZER",  # longer words holding a short one
    "AUTHOR",
    "COMPASS",
    "PATH",
    "SECRETARY",
    "KEYBOARD",
    "PWD",  # the shell's
    "OLDPWD",
    "HOME",
    "",
]


@pytest.mark.parametrize("name", sorted(CREDENTIAL_NAMES))
def test_credential_names_and_their_tokens(name: str) -> None:
    assert credential_tokens(name) == CREDENTIAL_NAMES[name]
    assert name_context(name, RANDOM) == CREDENTIAL_NAMES[name]


@pytest.mark.parametrize("name", NOT_CREDENTIAL_NAMES)
def test_names_that_are_not_credential_names(name: str) -> None:
    assert credential_tokens(name) == ()
    assert name_context(name, RANDOM) is None


VALUES = [
    # (value, a password word, looks like a secret)
    (RANDOM, False, True),
    ("9f86d081884c7d659a2feaa0c55ad015", False, True),  # hex, letters and digits
    ("ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", False, True),
    ("hunter22!", True, True),  # a human password under a password word
    ("hunter22!", False, False),  # too short and too plain for a token
    ("correcthorsebatterystaple", False, False),  # no digit
    ("aaaaaaaaaaaaaaaa1111", False, False),  # low entropy
    ("short", True, False),
    ("changeme", True, False),
    ("<PASSWORD>", True, False),
    ("${DB_PASSWORD}", True, False),
    ("{password}", True, False),
    ("xxxxxxxxxxxx", True, False),
    ("********", True, False),
    ("your-api-token-here", True, False),
    ("AKIAIOSFODNN7EXAMPLE", False, False),  # a provider's documented example key
    ("/run/secrets/db_password", True, False),
    ("~/.config/acme/token", True, False),
    ("C:\\secrets\\token.txt", True, False),
    ("https://token.actions.githubusercontent.com/abc", True, False),
    ("sts.amazonaws.com", True, False),
    ("db.internal:5432", True, False),
    ("ops@example.org", True, False),
    ("1234567890123456", False, False),
    ("3.14159265358979", True, False),
    ("true", True, False),
    ("two words here", True, False),
    ("line\nbreak-value-1234", True, False),
    ("  padded-but-fine-Q7x9  ", True, True),
]


@pytest.mark.parametrize(("value", "password", "secret"), VALUES)
def test_the_value_test(value: str, password: bool, secret: bool) -> None:
    assert looks_secret(value, password=password) is secret


def test_random_tokens_of_every_common_alphabet_are_secrets() -> None:
    """40 random characters of a letters-and-digits alphabet, base64url or hex: a secret."""
    for alphabet in (string.ascii_letters + string.digits, string.hexdigits, "-_" + string.digits):
        for _ in range(50):
            value = "".join(secrets.choice(alphabet) for _ in range(40))
            if any(c.isalpha() for c in value) and any(c.isdigit() for c in value):
                assert looks_secret(value), value


@given(
    st.sampled_from(sorted(CREDENTIAL_NAMES)),
    st.one_of(
        st.from_regex(r"/[a-z0-9_./-]{7,40}", fullmatch=True),
        st.from_regex(r"https?://[a-z0-9.-]{3,20}(/[A-Za-z0-9_-]{0,30})?", fullmatch=True),
        st.integers(min_value=10_000_000).map(str),
        st.floats(allow_nan=False, allow_infinity=False).map(repr),
    ),
)
def test_a_path_url_or_number_never_matches(name: str, value: str) -> None:
    """Whatever the credential name, such a value is not a credential by name context."""
    assert name_context(name, value) is None


def test_a_long_name_is_read_alike_but_never_cached() -> None:
    """The token cache holds short names only: a huge name is split every time, same answer."""
    from envscope.policy import _name_context

    before = _name_context._cached_tokens.cache_info().currsize
    long_name = "A" * 300 + "_API_TOKEN"
    assert credential_tokens(long_name) == ("TOKEN",)
    assert name_context(long_name, RANDOM) == ("TOKEN",)
    assert _name_context._cached_tokens.cache_info().currsize == before
