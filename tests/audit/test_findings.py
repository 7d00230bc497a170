"""Values that look like credentials under undeclared names: kinds, near-misses, no leaks."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from envscope import Host, Reason
from envscope.audit._findings import (
    CredentialFinding,
    credential_kind,
    credential_kinds,
    find_credential_values,
)
from envscope.policy.formats import find_format, github_checksum
from tests.conftest import HostFactory

# Test values are built from pieces so no literal here looks like a live token.
ALNUM36 = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
B64_48 = "Zx9_Yw8-Vu7tSr6qPo5nMl4kJi3hGf2eDc1bA0zYxWvUtSrQ"
BODY30 = ALNUM36[:30]
GH36 = BODY30 + github_checksum(BODY30)  # a GitHub body with its CRC32
JWT = ".".join(
    [
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
        "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkZha2UifQ",
        "c2lnbmF0dXJlLW5vdC1yZWFsLWF0LWFsbA",
    ]
)

POSITIVE: list[tuple[str, str, str]] = [
    ("aws-akia", "AKIA" + "Z7Q2W3E4R5T6Y7U2", "aws-access-key-id"),
    ("aws-asia", "ASIA" + "Q2W3E4R5T6Y7U2I3", "aws-access-key-id"),
    ("aws-in-text", "key=AKIA" + "Z7Q2W3E4R5T6Y7U2;", "aws-access-key-id"),
    ("github-ghp", "ghp_" + GH36, "github-classic-pat"),
    ("github-gho", "gho_" + GH36, "github-oauth-token"),
    ("github-ghs", "ghs_" + GH36, "github-app-installation-token"),
    ("github-ghu", "ghu_" + GH36, "github-app-user-token"),
    ("github-ghr", "ghr_" + GH36, "github-refresh-token"),
    ("github-pat", "github_pat_" + ALNUM36[:22] + "_" + ALNUM36 + ALNUM36[:23],
     "github-fine-grained-pat"),
    ("github-in-url", f"https://x:ghs_{GH36}@github.com/o/r.git", "github-app-installation-token"),
    ("gitlab", "glpat-" + B64_48[:20], "gitlab-pat"),
    ("openai-legacy", "sk-" + ALNUM36[:20] + "T3BlbkFJ" + ALNUM36[:20], "openai-api-key"),
    ("openai-project", "sk-proj-" + B64_48 + "T3BlbkFJ" + B64_48, "openai-api-key"),
    ("anthropic", "sk-ant-api03-" + (B64_48 * 2)[:93] + "AA", "anthropic-api-key"),
    ("stripe", "sk_live_" + ALNUM36[:24], "stripe-live-key"),
    ("slack-bot", "xoxb-" + "123456789012-1234567890123-" + ALNUM36[:24], "slack-bot-token"),
    ("google", "AIza" + B64_48[:35], "google-api-key"),
    ("pem", "-----BEGIN PRIVATE KEY-----\nMIIEvQ...\n-----END PRIVATE KEY-----", "pem-private-key"),
    ("pem-rsa", "-----BEGIN RSA PRIVATE KEY-----\nMIIE", "pem-private-key"),
    ("pem-openssh", "-----BEGIN OPENSSH PRIVATE KEY-----", "pem-private-key"),
    ("pem-encrypted", "-----BEGIN ENCRYPTED PRIVATE KEY-----", "pem-private-key"),
    ("pem-pgp", "-----BEGIN PGP PRIVATE KEY BLOCK-----", "pem-private-key"),
    ("pem-escaped-newlines", "-----BEGIN EC PRIVATE KEY-----\\nMHc\\n", "pem-private-key"),
    ("jwt", JWT, "jwt"),
    ("jwt-bearer", "Bearer " + JWT, "jwt"),
    ("url-password", "postgres://u:pw@h/db", "url-with-password"),
]  # fmt: skip

NEGATIVE: list[tuple[str, str]] = [
    ("empty", ""),
    ("path", "/usr/local/bin:/usr/bin:/bin"),
    ("uuid", "123e4567-e89b-12d3-a456-426614174000"),
    ("sha256", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
    ("aws-15", "AKIA" + "IOSFODNN7EXAMP"),
    ("aws-17-run", "AKIA" + "IOSFODNN7EXAMPLEX"),
    ("aws-lowercase", "AKIA" + "iosfodnn7example"),
    ("aws-inside-run", "X" + "AKIA" + "IOSFODNN7EXAMPLE"),
    ("aws-other-prefix", "AIDA" + "IOSFODNN7EXAMPLE"),
    ("aws-documented-example", "AKIA" + "IOSFODNN7EXAMPLE"),  # AWS's own docs: a stand-in
    ("url-template-braces", "postgres://app:{password}@db:5432/app"),
    ("url-template-angle", "postgres://app:<PASSWORD>@db/app"),
    ("url-template-words", "https://USER:PASSWORD@HOST/path"),
    ("url-template-printf", "mysql://root:%s@localhost/x"),
    ("github-35", "ghp_" + GH36[:35]),
    ("github-bad-checksum", "ghp_" + ALNUM36),
    ("github-bad-prefix", "ghx_" + GH36),
    ("github-inside-run", "xghp_" + GH36),
    ("github-pat-short", "github_pat_short"),
    ("gitlab-19", "glpat-" + B64_48[:19]),
    ("sk-1", "sk-1"),
    ("sk-31", "sk-" + ALNUM36[:31]),
    ("sk-no-signature", "sk-" + "0123456789abcdef" * 3),
    ("sk-inside-word", "task-" + ALNUM36[:20] + "T3BlbkFJ" + ALNUM36[:20]),
    ("sk-ant-short", "sk-ant-" + ALNUM36[:31]),
    ("stripe-test", "sk_test_" + ALNUM36),
    ("slack-bad-letter", "xoxz-" + "1234567890"),
    ("slack-short", "xoxb-123"),
    ("google-34", "AIza" + B64_48[:34]),
    ("google-36", "AIza" + B64_48[:36]),
    ("pem-public", "-----BEGIN PUBLIC KEY-----\nMIIB"),
    ("pem-certificate", "-----BEGIN CERTIFICATE-----\nMIIB"),
    ("pem-rsa-public", "-----BEGIN RSA PUBLIC KEY-----"),
    ("pem-no-dashes", "BEGIN PRIVATE KEY"),
    ("jwt-one-segment", JWT.split(".")[0]),
    ("jwt-two-segments", ".".join(JWT.split(".")[:2])),
    ("jwt-empty-signature", ".".join(JWT.split(".")[:2]) + "."),
    ("jwt-no-eyj", "abcdefgh.ijklmnop.qrstuvwx"),
    ("version", "1.22.333"),
    ("url-no-password", "https://user@example.invalid/x"),
    ("url-placeholder", "postgres://u:${DB_PASSWORD}@h/db"),
]


@pytest.mark.parametrize(("value", "kind"), [pytest.param(v, k, id=i) for i, v, k in POSITIVE])
def test_credential_kind_positive(value: str, kind: str) -> None:
    """Each known credential shape is recognised, by kind, anywhere in the value."""
    assert credential_kind(value) == kind


@pytest.mark.parametrize("value", [pytest.param(v, id=i) for i, v in NEGATIVE])
def test_credential_kind_negative(value: str) -> None:
    """Ordinary values and near-misses (too short, too long, wrong prefix, inside a word) pass."""
    assert credential_kind(value) is None


def test_kinds_are_the_format_table() -> None:
    """The kinds are the one table's format names (no second pattern list in this module)."""
    import envscope.audit._findings as findings

    assert {kind for _, _, kind in POSITIVE} <= set(credential_kinds())
    assert not [name for name in vars(findings) if name.startswith("_PATTERNS")]


def test_find_credential_values_sorted_by_key() -> None:
    """Findings come back sorted by key, one per flagged key, ordinary values skipped."""
    env = {
        "ZED_URL": f"https://ghs_{GH36}@github.com/o/r.git",
        "EDITOR": "vim",
        "MY_APP_KEY": "AKIA" + "Z7Q2W3E4R5T6Y7U2",
        "A_JWT": JWT,
    }
    assert find_credential_values(env) == [
        CredentialFinding("A_JWT", "jwt"),
        CredentialFinding("MY_APP_KEY", "aws-access-key-id"),
        CredentialFinding("ZED_URL", "github-app-installation-token"),
    ]


def test_declared_names_are_skipped_with_a_policy(tmp_path: Path) -> None:
    """With a policy, names any rule declares are not warned about; undeclared ones still are."""
    policy = Host(tmp_path, environ={}).policy()
    assert policy.tier_of("OPENAI_API_KEY") is not None
    assert policy.tier_of("MY_LLM_KEY") is None
    key = "sk-" + ALNUM36[:20] + "T3BlbkFJ" + ALNUM36[:20]
    env = {"OPENAI_API_KEY": key, "MY_LLM_KEY": key}
    assert [f.key for f in find_credential_values(env)] == ["MY_LLM_KEY", "OPENAI_API_KEY"]
    assert find_credential_values(env, policy=policy) == [
        CredentialFinding("MY_LLM_KEY", "openai-api-key")
    ]


@pytest.mark.parametrize(
    "value", [pytest.param(v, id=i) for i, v, k in POSITIVE if k != "url-with-password"]
)
def test_finding_never_shows_the_value(value: str) -> None:
    """A finding holds only the key and the kind: its repr and str show nothing of the value."""
    (finding,) = find_credential_values({"SOME_VAR": value})
    assert [f.name for f in dataclasses.fields(finding)] == ["key", "kind"]
    assert repr(finding) == f"CredentialFinding(key='SOME_VAR', kind='{finding.kind}')"
    assert str(finding) == f"SOME_VAR: value looks like a {finding.kind}"
    core = value[len(value) // 2 : len(value) // 2 + 8]  # a piece from the middle of the value
    assert core not in repr(finding) + str(finding)


MIB = 1 << 20


def test_credential_at_the_end_of_a_huge_value() -> None:
    """A credential after 1 MiB of filler is still found."""
    assert credential_kind("x " * MIB + "ghp_" + GH36) == "github-classic-pat"


def test_import_envscope_does_not_load_findings() -> None:
    """``import envscope`` stays cheap: the regex table compiles only when this module is used."""
    code = "import sys, envscope\nprint('envscope.audit._findings' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- name-shape warnings ----------------------------------------------------------------

NAME_SHAPES = [
    ("MY_APP_KEY", "v", "credential-suffix"),
    ("DEPLOY_WEBHOOK_SECRET", "v", "credential-suffix"),
    ("SLACK_USER_TOKEN", "v", "credential-suffix"),
    ("AWS_SECRET_ACCESS_KEY", "v", "credential-suffix"),
    ("LOCAL_LLM_API_KEY", "v", "credential-suffix"),
    ("mysql_pass", "v", "credential-suffix"),
    ("FTP_PWD", "v", "credential-suffix"),
    ("GCP_CREDENTIALS", "v", "credential-suffix"),
    ("CLIENT_SECRET_FILE", "v", "credential-word"),
    ("DB_PASSWORD_HINT", "v", "credential-word"),
    ("NGROK_AUTHTOKEN", "v", "credential-name"),  # the name-context rule's tokens
    ("REDISCLI_AUTH", "v", "credential-name"),
    ("DB_PASSWD", "v", "credential-name"),
    ("GPG_PASSPHRASE", "v", "credential-name"),
    ("GH_PAT", "v", "credential-name"),
    ("ACME_APIKEY", "v", "credential-name"),
    ("WORDPRESS_AUTH_SALT", "v", "credential-name"),
    ("BASIC_AUTH", "v", "credential-name"),
    ("TOKEN", "v", "credential-name"),
    ("SSH_AUTH_SOCK", "/run/ssh", None),
    ("OAUTH_CLIENT_ID", "v", None),
    ("DATABASE_URL", "postgres://u:pw@h/db", "url-with-password"),
    ("DATABASE_URL", "postgres://u:${DB_PASSWORD}@h/db", None),
    ("HTTP_PROXY", "http://user:p%40ss@proxy:8080", "url-with-password"),
    ("https_proxy", "http://user:pw@proxy:3128", "url-with-password"),
    ("ALL_PROXY", "socks5h://u:pw@proxy:1080", "url-with-password"),
    ("HTTPS_PROXY", "user:pw@proxy:3128", "url-with-password"),
    ("npm_config_proxy", ":pw@proxy:3128", "url-with-password"),
    ("HTTPS_PROXY", "proxy.corp:3128", None),
    ("HTTPS_PROXY", "http://user@proxy:3128", None),
    ("NO_PROXY", "localhost,.corp", None),
    ("NOTE", "user:pw@host", None),
    ("REDIS", " redis://:hunter2@cache:6379/0", "url-with-password"),
    ("DATABASE_URL", "postgres://h/db", None),
    ("DATABASE_URL", "postgres://u@h/db", None),
    ("DATABASE_URL", "postgres://u:@h/db", None),
    ("MONKEY", "v", None),
    ("KEYBOARD_LAYOUT", "v", None),
    ("TOKENIZER_PATH", "v", None),
    ("PATH", "/usr/bin:/bin", None),
    ("NOTE", "see https://example.com/a:b@c", None),
]


@pytest.mark.parametrize(("key", "value", "kind"), NAME_SHAPES)
def test_name_kind_table(key: str, value: str, kind: str | None) -> None:
    """Suffixes, SECRET/PASSWORD words and URLs with a password are named; others are not."""
    from envscope.audit._findings import name_kind

    assert name_kind(key, value) == kind


def test_name_shape_search_is_linear() -> None:
    """A long URL-like value with no password is searched without backtracking blow-up."""
    from envscope.audit._findings import name_kind

    assert name_kind("X", "a://" + ":" * 200_000) is None
    assert name_kind("X", "a://" + "u" * 200_000 + ":" + "p" * 200_000) is None


@pytest.mark.parametrize(
    ("key", "value", "kind"), [r for r in NAME_SHAPES if r[2] and find_format(r[1]) is None]
)
def test_name_shape_warning_in_trace_never_strips(
    make_host: HostFactory, key: str, value: str, kind: str
) -> None:
    """A kept undeclared look-alike is warned about (key and kind, no value) and kept."""
    host = make_host({"PATH": "/bin", key: value, "ENVSCOPE_FINGERPRINT_KEY": "k-of-sixteen-chars"})
    trace = host.explain()
    assert host.build_subprocess_env()[key] == value
    mine = [w for w in trace.context.warnings if w.key == key]
    assert len(mine) == 1
    assert mine[0].kind == kind
    assert mine[0].message.startswith(f"{key}: ")
    assert value.strip() not in mine[0].message
    assert "pw" not in mine[0].message


@pytest.mark.parametrize(
    ("key", "value"), [r[:2] for r in NAME_SHAPES if r[2] and find_format(r[1]) is not None]
)
def test_a_url_with_a_password_is_a_credential_unless_known_safe(
    make_host: HostFactory, key: str, value: str
) -> None:
    """A URL whose userinfo holds a password is stripped (value-shape); known_safe
    keeps it without a warning."""
    environ = {"PATH": "/bin", key: value, "ENVSCOPE_FINGERPRINT_KEY": "k-of-sixteen-chars"}
    trace = make_host(environ).explain()
    assert key not in trace.context.child_keys
    assert trace.final()[key].reason is Reason.VALUE_SHAPE
    assert value.strip() not in repr(list(trace))
    kept = make_host(environ, known_safe=[key.strip() or key]).explain()
    assert key in kept.context.child_keys
    assert not [w for w in kept.context.warnings if w.key == key]


def test_declared_and_known_safe_names_are_not_warned(make_host: HostFactory) -> None:
    """Names a rule declares (kept Tier 2) and names the host lists in known_safe are silent."""
    base = {"PATH": "/bin", "OPENAI_API_KEY": "k", "DEPLOY_WEBHOOK_SECRET": "s", "MY_APP_KEY": "m",
            "ENVSCOPE_FINGERPRINT_KEY": "k-of-sixteen-chars"}  # fmt: skip
    host = make_host(base, known_safe=["deploy_webhook_secret"])
    trace = host.explain(surface="credentialed")
    warned = {w.key for w in trace.context.warnings}
    assert warned == {"MY_APP_KEY"}


def test_known_safe_rejects_a_bare_string(make_host: HostFactory) -> None:
    """Host(known_safe="X_KEY") would name letters: it is a ConfigurationError."""
    from envscope import ConfigurationError

    with pytest.raises(ConfigurationError, match="known_safe"):
        make_host(known_safe="X_KEY")
