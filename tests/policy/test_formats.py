"""Credential formats (issue 20): the table, its one-pass matcher, no false hits."""

from __future__ import annotations

import base64
import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envscope.errors import CatalogError
from envscope.policy._catalog_doc import FORMATS_DOC_PATH, render_formats
from envscope.policy.formats import (
    FILTERS,
    MAX_MATCH,
    TOKEN_CHARS,
    Checksum,
    CredentialFormat,
    FormatTable,
    filtered,
    find_format,
    format_table,
    github_checksum,
    reset_table,
    table_from_document,
)

TABLE = format_table()
ROWS = TABLE.formats
IDS = [f.name for f in ROWS]
REAL_ENVS = sorted((Path(__file__).parents[2] / "fixtures" / "real-envs").glob("*.json"))
B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

# Issuers the issue names: each has at least one row.
ISSUERS = ("GitHub", "GitLab", "Slack", "OpenAI", "Anthropic", "Amazon Web Services", "Google",
           "Stripe", "npm", "PyPI", "Hugging Face", "Telegram", "Discord", "SendGrid", "Twilio",
           "DigitalOcean", "Shopify", "Atlassian", "Microsoft Azure", "IETF (RFC 7468)",
           "IETF (RFC 3986)")  # fmt: skip
NAMES = ("github-classic-pat", "github-oauth-token", "github-app-installation-token",
         "github-app-user-token", "github-refresh-token", "github-fine-grained-pat",
         "slack-bot-token", "slack-user-token", "slack-app-token", "slack-webhook-url",
         "aws-access-key-id", "pem-private-key", "url-with-password")  # fmt: skip


def _is_token(fmt: CredentialFormat) -> bool:
    """A token row (not a URL, a PEM block or a connection string)."""
    return fmt.category != "structural" and "://" not in fmt.example and "=" not in fmt.example


# Where a credential sits inside a longer value, as hosts really write it.
CONTEXTS = {
    "bare": ("{}", "any"),
    "double-quotes": ('"{}"', "any"),
    "single-quotes": ("'{}'", "any"),
    "bearer": ("Bearer {}", "any"),
    "lines": ("first line\n{}\nlast line", "any"),
    "spaces": ("  {}  ", "any"),
    "comma-list": ("a,{},b", "any"),
    "url-userinfo": ("https://x-access-token:{}@github.com/o/r.git", "token"),
    "url-user": ("https://{}@example.invalid/x", "token"),
    "url-path": ("https://example.invalid/api/{}/status", "token"),
    "url-query": ("https://example.invalid/cb?token={}&x=1", "token"),
    "colon-list": ("/usr/bin:{}:/bin", "token"),
    "json": ('{{"key": "{}"}}', "token"),
}


def test_table_has_every_issuer_and_name() -> None:
    """At least every issuer and format the issue names has a row."""
    assert set(ISSUERS) <= {f.issuer for f in ROWS}
    assert set(NAMES) <= {f.name for f in ROWS}
    assert any(f.issuer == "Stripe" and "live" in f.name for f in ROWS)


@pytest.mark.parametrize("fmt", ROWS, ids=IDS)
def test_row_is_sourced_and_its_example_is_found(fmt: CredentialFormat) -> None:
    """Each row has an issuer, a category, an https source and a fake example of its own shape."""
    assert fmt.issuer.strip()
    assert re.fullmatch(r"[a-z][a-z-]*", fmt.category)
    assert fmt.source.startswith("https://")
    assert re.search(fmt.regex, fmt.example) is not None
    assert find_format(fmt.example) is fmt


@pytest.mark.parametrize("fmt", ROWS, ids=[f.name for f in ROWS])
def test_generated_corpus_is_found_in_every_context(fmt: CredentialFormat) -> None:
    """Every format is found inside URLs, quotes, Bearer, lists, lines, by its own name."""
    contexts = [c for c, (_, kind) in CONTEXTS.items() if kind == "any" or _is_token(fmt)]
    missed = [c for c in contexts if find_format(CONTEXTS[c][0].format(fmt.example)) is not fmt]
    assert missed == [], f"{fmt.name} is not found in these contexts"


FIXED = [  # rows anchored by the default boundary (a run_before row checks its own run)
    f
    for f in ROWS
    if f.boundary and f.before is None and f.run_before is None and _is_token(f) and not f.checksum
]


@pytest.mark.parametrize("fmt", FIXED, ids=[f.name for f in FIXED])
def test_inside_a_longer_run_is_not_a_credential(fmt: CredentialFormat) -> None:
    """A prefix inside a run of token characters is no credential (xghp_…, task-sk-…)."""
    for lead in ("x", "0", "_", "-"):
        found = find_format(lead + fmt.example)
        assert found is not fmt, lead


@given(st.text(alphabet=B62, min_size=30, max_size=30), st.sampled_from(["ghp_", "gho_", "npm_"]))
def test_github_checksum_property(body: str, prefix: str) -> None:
    """A body with its CRC32 is found; the same body with any other checksum is not."""
    good = prefix + body + github_checksum(body)
    found = find_format(good)
    assert found is not None
    assert found.checksum is Checksum.GITHUB_CRC32
    bad = github_checksum(body[::-1] + "x")
    if bad != github_checksum(body):
        assert find_format(prefix + body + bad) is None


@pytest.mark.parametrize(
    ("body", "checksum"),
    [("0" * 30, github_checksum("0" * 30)), ("EXAMPLEfake0123456789EXAMPLEfa", None)],
)
def test_github_checksum_is_six_base62_digits(body: str, checksum: str | None) -> None:
    """The checksum is the base62 CRC32, left-padded to six digits."""
    import binascii

    digest = github_checksum(body)
    assert len(digest) == 6
    assert set(digest) <= set(B62)
    value = sum(B62.index(c) * 62**i for i, c in enumerate(reversed(digest)))
    assert value == binascii.crc32(body.encode())
    if checksum is not None:
        assert digest == checksum


STRUCTURAL_MISSES = [
    ("jwt-header-not-json", "eyJub3Rqc29u.eyJzdWIiOiJ4In0.c2lnbmF0dXJlX3g"),
    ("discord-id-not-digits", "TUlTU0lOR0lETk9UREXHSVRT.GfAkEx." + "a" * 30),
    ("telegram-id-too-short", "1234:AA" + "a" * 33),
    ("telegram-id-too-long", "12345678901234567:AA" + "a" * 33),
    ("azure-run-too-long", "xabc8Q~" + "a" * 34),
    ("url-user-only", "https://user@example.invalid/x"),
    ("url-empty-password", "postgres://u:@h/db"),
    ("url-placeholder", "postgres://u:${DB_PASSWORD}@h/db"),
    ("url-dollar-var", "postgres://u:$DB_PASSWORD@h/db"),
    ("url-masked", "https://u:****@h/x"),
    ("url-port-then-query", "http://host:8080?next=a@b"),
    ("pem-public", "-----BEGIN PUBLIC KEY-----"),
    ("pem-certificate", "-----BEGIN CERTIFICATE-----"),
    ("uuid", "123e4567-e89b-12d3-a456-426614174000"),
    ("sha1", "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3"),
    ("openai-compatible-placeholder", "sk-" + "0123456789abcdef" * 3),
]


@pytest.mark.parametrize("value", [pytest.param(v, id=i) for i, v in STRUCTURAL_MISSES])
def test_structural_checks_and_placeholders_are_not_credentials(value: str) -> None:
    """Failed structural checks, placeholders, public keys, ids and SHAs are no credential."""
    assert find_format(value) is None


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


HEX16 = "0123456789abcdef"
KEY43 = "Q2w3E4r5T6y7U8i9O0pAsDfGhJkLzXcVbNm12345678"  # 43 base64 characters
SIG43 = "Q2w3E4r5T6y7U8i9O0pA%2BDfGhJkLzXcVbNm12345678"  # 43, one of them URL-encoded

# The structural forms of issue 30 (and Doppler's config-named service tokens): each found in
# the shape its issuer documents, and each near miss not (or found only as another row).
STRUCTURAL_ROWS = [
    ("json-escaped-url", '{"dsn": "postgres:\\/\\/app:s3cr3t-V4lue@db:5432\\/app"}',
     "url-with-password-json-escaped"),
    ("json-escaped-url-slot", '{"dsn": "postgres:\\/\\/app:{password}@db\\/app"}', None),
    ("json-escaped-url-no-password", '{"dsn": "https:\\/\\/user@example.invalid\\/x"}', None),
    ("azure-shared-access-key", f"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=r;"
     f"SharedAccessKey={KEY43}=", "azure-shared-access-key"),
    ("azure-shared-access-key-short", f"SharedAccessKey={KEY43[:-1]}=", None),
    ("azure-shared-access-key-name", "SharedAccessKeyName=RootManageSharedAccessKey", None),
    ("sas-sig", f"https://a.blob.core.windows.net/c/b?sv=2022-11-02&sig={SIG43}%3D",
     "azure-sas-signature"),
    ("sas-sig-not-a-parameter", f"https://a.example.invalid/xsig={SIG43}%3D", None),
    ("sas-sig-short", f"https://a.example.invalid/b?sig={SIG43[:-1]}%3D", None),
    ("ado-net-password", "Server=db;Database=app;User ID=app;Password=s3cr3t-V4lue;",
     "connection-string-password"),
    ("jdbc-password", "jdbc:mysql://db:3306/app?user=app&password=s3cr3t-V4lue",
     "connection-string-password"),
    ("password-reference", "Server=db;Password=${DB_PASSWORD};", None),
    ("password-template", "Server=db;Password=<your password>;", None),
    ("password-stand-in", "Server=db;Password=changeme;", None),
    ("reset-password-flag", "https://app.example.invalid/?reset_password=true", None),
    ("db-password-name", "DBPassword=s3cr3t-V4lue", None),
    ("npmrc-auth-token", "//registry.npmjs.org/:_authToken=0123abcd-4567-89ef-0123-456789abcdef",
     "npmrc-auth-token"),
    ("npmrc-auth-token-reference", "//registry.npmjs.org/:_authToken=${NPM_TOKEN}", None),
    ("doppler-config-service-token", "dp.st.prd_us." + "A1b2C3d4E5" * 4, "doppler-token"),
    ("doppler-service-token", "dp.st." + "A1b2C3d4E5" * 4, "doppler-token"),
    ("doppler-config-too-short", "dp.st.dev." + "A1b2C3d4E5" * 3, None),
    ("basic-auth", "Authorization: Basic " + _b64("app:s3cr3t-V4lue"), "basic-auth-credentials"),
    ("basic-in-prose", "Basic authentication is enabled", None),
    ("basic-no-colon", "Basic " + _b64("just-a-token-value"), None),
    ("basic-empty-password", "Basic " + _b64("app:"), None),
    ("basic-binary", "Basic " + _b64("\x00\x01:\x02\x03"), None),
    ("docker-auth", '{"auths": {"r.example": {"auth": "' + _b64("app:s3cr3t") + '"}}}',
     "docker-config-auth"),
    ("docker-auth-no-colon", '{"auths": {"r.example": {"auth": "' + _b64("tokenonly") + '"}}}',
     None),
    ("docker-auths-empty", '{"auths": {}}', None),
    ("pem-base64", _b64("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n"), "pem-private-key-base64"),
    ("pem-base64-public", _b64("-----BEGIN PUBLIC KEY-----\nMIIB\n"), None),
    ("pem-base64-certificate", _b64("-----BEGIN CERTIFICATE-----\nMIIB\n"), None),
    ("sa-json-base64", _b64('{\n  "type": "service_account",\n  "private_key": "k"\n}'),
     "gcp-service-account-key-base64"),
    ("sa-json-base64-compact", _b64('{"type":"service_account","private_key":"k","x":"y"}'),
     "gcp-service-account-key-base64-compact"),
    ("adc-json-base64", _b64('{\n  "type": "authorized_user",\n  "client_id": "x.apps"\n}'),
     None),
    ("json-base64-other", _b64('{"name":"a long enough document","kind":"no key in it"}'), None),
    ("langsmith-short", "lsv2_pt_" + "0123456789abcdef" * 2 + "_fedcba987", None),
    ("langsmith-other-kind", "lsv2_xx_" + "0123456789abcdef" * 2 + "_fedcba9876", None),
    ("langfuse-public-key", "pk-lf-0123abcd-4567-89ef-0123-456789abcdef", None),
    ("e2b-short", "e2b_" + "0123456789abcdef" * 2 + "0123456", None),
    ("tailscale-unknown-kind", "tskey-other-kEXfake1CNTRL-" + "A1b2C3d4E5" * 3, None),
    ("google-access-short", "ya29." + "A1b2C3d4E5" * 4, None),
    ("supabase-publishable", "sb_publishable_" + "A1b2C3d4E5" * 3, None),
    ("clickhouse-short", "4b1d" + "A1b2C3d4E5" * 3 + "A1b2C3d", None),
    ("octopus-lowercase", "API-" + "a1b2c3d4e5" * 2 + "a1b2c3", None),
    ("cloudflare-origin-bad-length", "v1.0-" + HEX16 * 2 + "-" + HEX16 * 9, None),
    ("gitlab-session-too-long", "_gitlab_session=" + HEX16 * 2 + "0", None),
    ("flutterwave-no-x", "FLWSECK_TEST-" + "0123456789abcdef" * 2, None),
    ("jwt-base64", _b64("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"), "jwt-base64"),
    ("jwt-base64-no-dots", _b64("eyJhbGciOiJIUzI1NiJ9eyJzdWIiOiJ4In0c2lnbmF0dXJl"), None),
    ("jwt-base64-no-alg", _b64("eyJ0eXAiOiJKV1QifQ.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"), None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("value", "expected"), [pytest.param(v, e, id=i) for i, v, e in STRUCTURAL_ROWS]
)
def test_structural_forms_and_their_near_misses(value: str, expected: str | None) -> None:
    assert len(KEY43) == 43
    assert len(re.findall(r"%2[BF]|.", SIG43)) == 43
    found = find_format(value)
    assert (None if found is None else found.name) == expected


# Each named filter: values it takes for a stand-in (its name), and near misses it leaves a
# credential (the format named).
FILTER_ROWS = [
    ("AKIA" + "IOSFODNN7EXAMPLE", "documented-example", None),
    ("key=AKIA" + "IOSFODNN7EXAMPLE;", "documented-example", None),
    ("AKIA" + "IOSFODNN7EXAMPLX", None, "aws-access-key-id"),
    ("AKIA" + "EXAMPLEIOSFODNN7", None, "aws-access-key-id"),  # EXAMPLE, not at the end
    ("postgres://app:{password}@db:5432/app", "placeholder", None),
    ("postgres://app:{{db_password}}@db/app", "placeholder", None),
    ("postgres://app:<PASSWORD>@db/app", "placeholder", None),
    ("https://USER:PASSWORD@HOST/path", "placeholder", None),
    ("mysql://root:%s@localhost/x", "placeholder", None),
    ("mysql://root:%(password)s@localhost/x", "placeholder", None),
    ("redis://:xxxxxx@cache:6379/0", "placeholder", None),
    ("amqp://user:changeme@mq/", "placeholder", None),
    ("amqp://guest:guest@localhost:5672/", None, "url-with-password"),  # a real default
    ("postgres://app:password1@db/app", None, "url-with-password"),
    ("postgres://app:{password}x@db/app", None, "url-with-password"),  # not all a slot
]


@pytest.mark.parametrize(("value", "filter_name", "found"), FILTER_ROWS)
def test_each_named_filter_takes_its_stand_ins_and_no_near_miss(
    value: str, filter_name: str | None, found: str | None
) -> None:
    """The raw match is the filter's (by name); found, the value is no credential. A near miss
    passes every filter and is found as its format."""
    m = TABLE.regex.search(value)
    assert m is not None
    assert m.lastgroup is not None
    raw = TABLE.formats[int(m.lastgroup[1:])]
    assert filtered(raw, m.group()) == filter_name
    fmt = find_format(value)
    assert (None if fmt is None else fmt.name) == found


def test_the_filters_are_named() -> None:
    assert [name for name, _, _ in FILTERS] == ["documented-example", "placeholder"]


@pytest.mark.parametrize("path", REAL_ENVS, ids=[p.stem for p in REAL_ENVS])
def test_real_environments_hold_no_false_positive(path: Path) -> None:
    """False positives are bugs: no value of a real environment matches any format."""
    env = json.loads(path.read_text(encoding="utf-8"))
    assert len(env) >= 40
    assert {k: f.name for k, v in env.items() if (f := find_format(v)) is not None} == {}


def test_telegram_token_in_its_api_url_is_found() -> None:
    """Telegram's own URL form (https://api.telegram.org/bot<token>/getMe) is found."""
    found = find_format("https://api.telegram.org/bot1234567890:AA" + "b" * 33 + "/getMe")
    assert found is not None
    assert found.name == "telegram-bot-token"


def test_a_url_names_the_token_inside_it() -> None:
    """A URL whose userinfo holds a token is reported as the token's format, not only a URL."""
    gh = next(f for f in ROWS if f.name == "github-classic-pat")
    assert find_format(f"https://x:{gh.example}@github.com/o/r") is gh
    assert find_format("postgres://app:pw@db/app").name == "url-with-password"  # type: ignore[union-attr]


# -- one pass, linear --------------------------------------------------------------------


class _Counting:
    """A compiled regex that counts its searches (the matcher's only use of it)."""

    def __init__(self, regex: re.Pattern[str]) -> None:
        self.regex, self.calls = regex, 0

    def search(self, value: str, pos: int = 0) -> re.Match[str] | None:
        self.calls += 1
        return self.regex.search(value, pos)


MIB = 1 << 20
ADVERSARIAL = {
    "plain": "a" * MIB,
    "prefixes": ("".join(f.prefix + " " for f in ROWS) * MIB)[:MIB],
    "prefix-runs": ("ghp_" * MIB)[:MIB],
    "eyJ-segments": ("eyJaaaaa." * MIB)[:MIB],
    "url-colons": ("a://" + ":" * MIB)[:MIB],
    "dots": ("a" * 30 + ".") * (MIB // 31),
    "digits-colon-AA": ("1234567:AA" * MIB)[:MIB],
    "bad-checksums": (("ghp_" + "A" * 36 + " ") * MIB)[:MIB],
}


@pytest.mark.parametrize("value", ADVERSARIAL.values(), ids=list(ADVERSARIAL))
def test_one_mib_value_is_one_pass(value: str) -> None:
    """A 1 MiB value costs one search, plus one per candidate whose checksum failed (linear)."""
    counting = _Counting(TABLE.regex)
    table = FormatTable(TABLE.formats, counting)  # type: ignore[arg-type]
    table.find(value)
    candidates = value.count("ghp_" + "A" * 36)
    assert counting.calls <= 1 + candidates


@pytest.mark.parametrize("fmt", ROWS, ids=IDS)
def test_every_row_has_a_bounded_width(fmt: CredentialFormat) -> None:
    """No row can match more than ``MAX_MATCH`` characters: each search attempt is bounded."""
    from re import _parser  # type: ignore[attr-defined]  # the regex parser (3.11+)

    low, high = _parser.parse(fmt.regex).getwidth()
    assert 0 < low <= high <= MAX_MATCH, (fmt.name, low, high)


def test_a_credential_after_a_mebibyte_is_found() -> None:
    """A credential at the end of a huge value is still found."""
    gh = next(f for f in ROWS if f.name == "github-classic-pat")
    assert find_format("x " * MIB + gh.example) is gh


def test_rows_use_the_token_alphabet_boundary() -> None:
    """The boundary is the documented token alphabet."""
    assert TOKEN_CHARS == "A-Za-z0-9_\\-"


# -- loading -------------------------------------------------------------------------------


def test_table_loads_once_and_resets(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table is read once and shared; reset_table() makes the next call read it again.

    On a cache of its own: the worker's shared table (``TABLE``, compared by identity
    in this file) stays the one read at import, whatever order the tests run in.
    """
    import envscope.policy.formats as formats

    monkeypatch.setattr(formats, "format_table", functools.cache(formats.format_table.__wrapped__))
    first = formats.format_table()
    assert first is formats.format_table()
    assert first is not TABLE
    reset_table()
    again = formats.format_table()
    assert again is not first
    assert again is formats.format_table()
    assert [f.name for f in again.formats] == IDS
    assert format_table() is TABLE


def test_import_reads_nothing() -> None:
    """Importing the module reads no file and loads no YAML (no I/O at import)."""
    code = (
        "import sys, envscope.policy.formats as f\n"
        "print('yaml' in sys.modules, f.format_table.cache_info().currsize)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "0"]


ROW = {"name": "x-token", "issuer": "X", "category": "tool", "prefix": "xt_",
       "pattern": "[a-z]{8}", "source": "https://x.invalid", "example": "xt_abcdefgh"}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"name": "X Token"}, "formats.0.name"),
        ({"pattern": "([a-z]{8})"}, "formats.0.pattern"),
        ({"pattern": "[a-z"}, "formats.0.pattern"),
        ({"checksum": "luhn"}, "formats.0.checksum"),
        ({"colour": "red"}, "formats.0.colour"),
        ({"source": ""}, "formats.0.source"),
        ({"run_before": {"chars": "0-9"}}, "formats.0.run_before"),
        ({"run_before": {"chars": "0-9", "min": "two", "max": 4}}, "formats.0.run_before"),
        ({"run_before": {"chars": "0-9", "min": 1, "max": None}}, "formats.0.run_before"),
    ],
    ids=[
        "slug",
        "capture",
        "broken",
        "checksum",
        "unknown",
        "source",
        "run-before",
        "run-before-text",
        "run-before-none",
    ],
)
def test_invalid_row_names_the_field(change: dict[str, object], field: str) -> None:
    """A malformed row is a CatalogError naming the file and the field, never a value."""
    with pytest.raises(CatalogError) as info:
        table_from_document({"version": 1, "formats": [ROW | change]}, "formats.yaml")
    assert f"formats.yaml: {field}" in str(info.value)


def test_a_name_twice_and_an_empty_table_are_errors() -> None:
    """Two rows of one name, a missing version or no rows: a CatalogError."""
    with pytest.raises(CatalogError, match=r"formats\.1\.name"):
        table_from_document({"version": 1, "formats": [ROW, ROW]}, "f.yaml")
    with pytest.raises(CatalogError, match="version: 1"):
        table_from_document({"formats": [ROW]}, "f.yaml")


def test_docs_credential_formats_md_is_current() -> None:
    """docs/credential-formats.md is exactly what the generator renders (regenerate, never edit)."""
    assert FORMATS_DOC_PATH.read_text(encoding="utf-8") == render_formats(TABLE), (
        "docs/credential-formats.md is stale: run python -m envscope.policy._catalog_doc"
    )
    text = render_formats(TABLE)
    for fmt in ROWS:
        assert f"## {fmt.name}" in text
        assert fmt.source in text


def test_cross_checks_name_real_peer_rules() -> None:
    """Each row's cross_checks name a rule of gitleaks, detect-secrets or trufflehog."""
    import yaml

    path = Path(__file__).parents[2] / "benchmarks" / "peer_rules.yaml"
    peers = yaml.safe_load(path.read_text(encoding="utf-8"))
    peer_names = ("gitleaks", "detect-secrets", "trufflehog")
    rules = {f"{p}:{r}" for p in peer_names for r in peers[p]["rules"]}
    assert set(peers["trufflehog"]["keyword_context"]) <= set(peers["trufflehog"]["rules"])
    for fmt in ROWS:
        assert set(fmt.cross_checks) <= rules, fmt.name
    assert set(peers["not_formats"]) <= rules
    assert not set(peers["not_formats"]) & {c for f in ROWS for c in f.cross_checks}


@given(st.text(max_size=64), st.text(max_size=64), st.sampled_from(ROWS))
def test_any_text_around_a_spaced_credential(
    before: str, after: str, fmt: CredentialFormat
) -> None:
    """Any text never makes the matcher raise, and a credential set off by spaces is found."""
    found = find_format(before + after)
    assert found is None or found in ROWS
    assert find_format(f"{before} {fmt.example} {after}") is not None


def test_docs_format_coverage_md_is_current() -> None:
    """docs/format-coverage.md is generated (``python -m benchmarks.formats --page``)."""
    from benchmarks.formats import COVERAGE_PAGE, coverage_page

    assert COVERAGE_PAGE.read_text(encoding="utf-8") == coverage_page(), (
        "docs/format-coverage.md drifted: run python -m benchmarks.formats --page"
    )
