"""``VaultSource`` against a fake Vault that answers with the documented shapes.

No Vault server runs here, so a local HTTP server reproduces what the docs say:
- KV v2 read, https://developer.hashicorp.com/vault/api-docs/secret/kv/kv-v2#read-secret-version:
  ``GET /v1/:mount/data/:path`` answers ``{"data": {"data": {...}, "metadata": {...}}}``;
  a KV v1 mount answers ``{"data": {...}}``.
- AppRole login, https://developer.hashicorp.com/vault/api-docs/auth/approle#login-with-approle:
  ``POST /v1/auth/approle/login`` answers ``{"auth": {"client_token": ...}}``.
- Errors, https://developer.hashicorp.com/vault/api-docs#error-response: a status
  and ``{"errors": [...]}`` (403 permission denied, 404 with an empty list, 503 sealed).
The source's real HTTP client runs against it: headers, bodies, timeouts.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from envscope import Catalog, ConfigurationError, Host, SourceError, Trace, VaultSource

TOKEN = "hvs.CAESIFakeVaultToken0123456789abcdefghijklmnopqrstuv"
ROLE_ID, SECRET_ID = "role-0123456789", "secret-id-0123456789abcdef"
SECRETS: dict[str, dict[str, Any]] = {
    "secret/github": {"token": "vault-gh-value-0123456789", "user": "bot"},
    "secret/b": {"key": "vault-b-value-0123456789", "port": 5432},
}


class FakeVault(BaseHTTPRequestHandler):
    """The documented answers; ``server.mode`` picks a failure, ``server.seen`` records calls."""

    def _answer(self, status: int, body: object) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _common(self) -> bool:
        server: Any = self.server
        server.seen.append((self.command, self.path, dict(self.headers)))
        mode = server.mode
        if mode == "hang":
            time.sleep(3)
        elif mode == "sealed":
            self._answer(503, {"errors": ["Vault is sealed"]})
        elif mode == "echo":
            self._answer(500, {"errors": [f"internal error for {self.headers['X-Vault-Token']}"]})
        elif mode == "garbage":
            self._answer(200, b"<html>proxy login</html>")
        elif mode == "cut-short":  # a Content-Length longer than the body, then the end
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b'{"data": {"data": {"token": "vault-gh-')
            self.close_connection = True
        else:
            return False
        return True

    def do_GET(self) -> None:
        if self._common():
            return
        if self.headers.get("X-Vault-Token") != TOKEN:
            self._answer(403, {"errors": ["permission denied"]})
            return
        mount, _, rest = self.path.removeprefix("/v1/").partition("/")
        if mount == "kv1":
            self._answer(200, {"data": {"token": "v1-shape"}})
            return
        found = SECRETS.get(f"{mount}/{rest.removeprefix('data/')}")
        if not rest.startswith("data/") or found is None:
            self._answer(404, {"errors": []})
            return
        self._answer(200, {"request_id": "r", "data": {"data": found, "metadata": {"version": 1}}})

    def do_POST(self) -> None:
        if self._common():
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/auth/approle/login" or body != {
            "role_id": ROLE_ID, "secret_id": SECRET_ID
        }:  # fmt: skip
            self._answer(400, {"errors": ["invalid role or secret ID"]})
            return
        self._answer(200, {"auth": {"client_token": TOKEN, "lease_duration": 60}})

    def log_message(self, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def vault() -> Iterator[Any]:
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), FakeVault)
    server.mode, server.seen = "ok", []
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    server.addr = f"http://127.0.0.1:{server.server_address[1]}"
    yield server
    server.shutdown()
    server.server_close()


def _source(vault: Any, entries: dict[str, str] | None = None, **env: str) -> VaultSource:
    environ = {"VAULT_ADDR": vault.addr, "VAULT_TOKEN": TOKEN, **env}
    named = entries or {"GH_TOKEN": "secret/github#token", "GH_USER": "secret/github#user"}
    return VaultSource({"*": named}, environ={k: v for k, v in environ.items() if v}, timeout=1)


def test_it_reads_each_secret_once_with_the_token(vault: Any) -> None:
    source = _source(vault, NAMESPACE="")
    assert source.fetch("/home") == {
        "GH_TOKEN": SECRETS["secret/github"]["token"],
        "GH_USER": "bot",
    }
    assert [(m, p) for m, p, _ in vault.seen] == [("GET", "/v1/secret/data/github")]
    assert vault.seen[0][2]["X-Vault-Token"] == TOKEN
    assert source.credential_names == ("VAULT_TOKEN", "VAULT_ROLE_ID", "VAULT_SECRET_ID")


def test_without_a_token_it_logs_in_with_approle(vault: Any) -> None:
    source = _source(vault, VAULT_TOKEN="", VAULT_ROLE_ID=ROLE_ID, VAULT_SECRET_ID=SECRET_ID)
    assert source.fetch("/home")["GH_TOKEN"] == SECRETS["secret/github"]["token"]
    assert [p for _, p, _ in vault.seen] == ["/v1/auth/approle/login", "/v1/secret/data/github"]


def test_a_namespace_is_sent_and_the_host_s_proxy_is_not_used(
    vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens: a proxy would fail
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    source = _source(vault, VAULT_NAMESPACE="team-a")
    assert source.fetch("/home")["GH_USER"] == "bot"
    assert vault.seen[0][2]["X-Vault-Namespace"] == "team-a"


@pytest.mark.parametrize(
    ("mode", "entries", "env", "said"),
    [
        ("ok", None, {"VAULT_TOKEN": "hvs.wrong"},
         "permission denied (403): the token cannot read it: permission denied"),
        ("ok", {"A": "secret/nope#token"}, {}, "no such secret (404)"),
        ("ok", {"A": "secret/github#nope"}, {}, "the secret has no field 'nope'"),
        ("ok", {"A": "secret/b#port"}, {}, "field 'port' is no string"),
        ("ok", {"A": "kv1/github#token"}, {}, "Vault's answer is no KV version 2 secret"),
        ("sealed", None, {}, "Vault is sealed or in maintenance (503): Vault is sealed"),
        ("echo", None, {}, "Vault answered 500: internal error for [masked]"),
        ("hang", None, {}, "did not answer within 1 s"),
        ("garbage", None, {}, "Vault's answer is no JSON object"),
        ("cut-short", None, {}, "gave a broken answer (IncompleteRead)"),
        ("ok", None, {"VAULT_ADDR": "http://127.0.0.1:9"}, "cannot reach Vault at http://127.0.0.1:9"),
        ("ok", None, {"VAULT_ADDR": "vault.internal:8200"}, "VAULT_ADDR is not an http(s) address"),
        ("ok", None, {"VAULT_TOKEN": ""}, "no VAULT_TOKEN, nor VAULT_ROLE_ID and VAULT_SECRET_ID"),
        ("ok", None, {"VAULT_TOKEN": "", "VAULT_ROLE_ID": ROLE_ID, "VAULT_SECRET_ID": "x" * 12},
         "Vault refused the request (400): invalid role or secret ID"),
        ("ok", None, {"VAULT_CACERT": "/no/such/ca.pem"},
         "VAULT_CACERT names no readable CA bundle"),
        ("ok", None, {"VAULT_CACERT": "/dev/null"}, "VAULT_CACERT names no readable CA bundle"),
        ("ok", None, {"VAULT_CACERT": __file__}, "VAULT_CACERT holds no PEM certificate"),
    ],
    ids=["wrong-token", "no-secret", "no-field", "not-a-string", "kv-v1-mount", "sealed",
         "error-echoes-the-token", "hang", "not-json", "cut-short", "refused", "no-scheme",
         "no-credentials", "bad-approle", "no-ca-bundle", "ca-bundle-not-a-file",
         "ca-bundle-not-pem"],
)  # fmt: skip
def test_each_failure_is_a_source_error_without_a_value(
    vault: Any, mode: str, entries: dict[str, str] | None, env: dict[str, str], said: str
) -> None:
    vault.mode = mode
    source = _source(vault, entries, **env)
    with pytest.raises(SourceError) as raised:
        source.fetch("/home")
    message = str(raised.value)
    assert said in message
    assert (
        raised.value.reference
        == next(iter(sorted((entries or {"GH_TOKEN": "secret/github#token"}).items())))[1]
    )
    for value in (TOKEN, SECRET_ID, "vault-gh-value", "vault-b-value"):
        assert value not in message
    assert raised.value.__context__ is None


def test_a_ca_bundle_that_is_a_fifo_never_hangs(vault: Any, tmp_path: Path) -> None:
    fifo = tmp_path / "ca.pem"
    os.mkfifo(fifo)
    with pytest.raises(SourceError, match="no readable CA bundle"):
        _source(vault, VAULT_CACERT=str(fifo)).fetch("/home")


def test_a_missing_field_may_stay_unset(vault: Any) -> None:
    source = VaultSource(
        {"*": {"A": "secret/github#nope", "B": "secret/github#user"}},
        environ={"VAULT_ADDR": vault.addr, "VAULT_TOKEN": TOKEN}, missing="unset",
    )  # fmt: skip
    assert source.fetch("/home") == {"B": "bot"}


def test_an_address_s_user_info_never_reaches_a_message() -> None:
    source = VaultSource(
        {"*": {"A": "secret/x#y"}},
        environ={"VAULT_ADDR": "http://admin:hunter2-pass@127.0.0.1:9", "VAULT_TOKEN": TOKEN},
        timeout=1,
    )
    with pytest.raises(SourceError, match=r"127\.0\.0\.1:9") as raised:
        source.fetch("/home")
    assert "hunter2" not in str(raised.value)


@pytest.mark.parametrize(
    "reference",
    ["secret/github", "secret#token", "/secret/github#token", "secret/github/#token",
     "secret/../sys#token", "secret/github#", "secret/a\nb#c", ""],
)  # fmt: skip
def test_a_reference_is_mount_path_and_field(reference: str) -> None:
    with pytest.raises(ConfigurationError, match="mount/path#field"):
        VaultSource({"*": {"A": reference}})


def test_a_host_declares_its_credentials_and_names_each_entry(vault: Any, tmp_path: Path) -> None:
    launch, routed = tmp_path / "launch", tmp_path / "routed"
    launch.mkdir()
    routed.mkdir()
    environ = {"PATH": "/usr/bin", "VAULT_ADDR": vault.addr, "VAULT_TOKEN": TOKEN}
    host = Host(launch, environ=environ, catalog=Catalog.default())
    host.add_secret_source(
        VaultSource({str(routed): {"B_SETTING": "secret/github#user"}}, environ=environ)
    )
    host.load_launch_env()
    trace = Trace()
    with host.routed(routed):
        child = host.build_subprocess_env(trace=trace)
    assert child["B_SETTING"] == "bot"
    assert "VAULT_TOKEN" not in child
    origin = trace.final()["B_SETTING"].origin
    assert origin is not None
    assert origin.detail == "vault (secret/github#user)"


def test_the_tls_context_is_made_again_only_when_the_ca_bundle_changes(
    vault: Any, tmp_path: Path
) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text(_a_pem())
    source = _source(vault, VAULT_CACERT=str(bundle))
    source.fetch("/home")
    first = source._tls_kept
    source.fetch("/home")
    assert source._tls_kept is first  # the same bundle: the same context
    bundle.write_text(_a_pem() + _a_pem())
    source.fetch("/home")
    assert source._tls_kept is not first
    assert source._tls_kept is not None
    assert source._tls_kept[0] == bundle.read_bytes()


def _a_pem() -> str:
    """A CA certificate from the system bundle (any PEM certificate will do)."""
    import ssl

    paths = ssl.get_default_verify_paths()
    text = Path(paths.cafile or "/etc/ssl/certs/ca-certificates.crt").read_text()
    start = text.index("-----BEGIN CERTIFICATE-----")
    end = text.index("-----END CERTIFICATE-----", start) + len("-----END CERTIFICATE-----")
    return text[start:end] + "\n"
