"""HashiCorp Vault's KV version 2 engine as a secret source (exported by ``policy.sources``).

``VaultSource`` reads each secret once per fetch over Vault's HTTP API
(https://developer.hashicorp.com/vault/api-docs/secret/kv/kv-v2#read-secret-version):
``GET {VAULT_ADDR}/v1/{mount}/data/{path}`` with the ``X-Vault-Token`` header
answers ``{"data": {"data": {field: value}, "metadata": …}}``. Without a
``VAULT_TOKEN`` it logs in with AppRole first
(https://developer.hashicorp.com/vault/api-docs/auth/approle#login-with-approle):
``POST /v1/auth/{approle_mount}/login`` with ``VAULT_ROLE_ID`` and
``VAULT_SECRET_ID`` answers ``{"auth": {"client_token": …}}``.

The request goes straight to Vault: no proxy from the host's env, TLS
verified (``VAULT_CACERT`` adds a CA bundle, read by the one non-blocking
file reader; ``VAULT_SKIP_VERIFY`` is not honoured), within ``timeout``
seconds. Every failure is a ``SourceError`` naming the reference; Vault's
``errors`` list is quoted only after the filter a CLI's stderr passes
through (credentials and credential formats masked).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from envscope.errors import ConfigurationError, SourceError
from envscope.policy._cli_source import filtered_stderr
from envscope.policy._source_entries import _EntrySource, _missing, _timeout

if TYPE_CHECKING:
    import ssl

__all__ = ["MAX_CA_BYTES", "VAULT_CREDENTIALS", "VaultSource"]

VAULT_CREDENTIALS = ("VAULT_TOKEN", "VAULT_ROLE_ID", "VAULT_SECRET_ID")
"""What a Vault client authenticates with (Tier 1 for every child of a host using it)."""

MAX_CA_BYTES = 4 * 1024 * 1024
"""The largest ``VAULT_CACERT`` bundle read (a system bundle is about 200 KiB)."""

_STATUS = {
    400: "Vault refused the request (400)",
    403: "permission denied (403): the token cannot read it",
    404: "no such secret (404)",
    503: "Vault is sealed or in maintenance (503)",
}
"""What an HTTP status means here; any other says ``Vault answered N``."""


def _split(reference: str) -> tuple[str, str, str] | None:
    """``mount/path#field`` as its three parts, or None when it is no such reference."""
    where, sep, field = reference.partition("#")
    mount, slash, path = where.partition("/")
    parts = (mount, path, field)
    if not sep or not slash or not all(parts) or where.startswith("/") or where.endswith("/"):
        return None
    if any(p in (".", "..") for p in where.split("/")) or not reference.isprintable():
        return None
    return parts


class VaultSource(_EntrySource):
    """A secret source over Vault's KV v2 engine: ``{NAME: "mount/path#field"}`` per home.

    ``entries`` maps a home (``"*"``: every home) to ``{NAME: "secret/github#token"}``:
    the field ``token`` of the secret ``github`` in the KV v2 engine mounted at
    ``secret``. Each secret is read once per fetch. The address, namespace and
    CA bundle come from ``VAULT_ADDR``, ``VAULT_NAMESPACE`` and ``VAULT_CACERT``
    in ``environ`` (read at each fetch; default ``os.environ``); the token from
    ``VAULT_TOKEN``, else an AppRole login with ``VAULT_ROLE_ID`` and
    ``VAULT_SECRET_ID``. ``missing``: a field the secret does not hold raises
    a ``SourceError`` (``"raise"``) or stays unset (``"unset"``).
    """

    credential_names: tuple[str, ...] = VAULT_CREDENTIALS
    _needs = "a mount/path#field reference"

    def __init__(
        self,
        entries: Mapping[str, Mapping[str, str]],
        *,
        name: str = "vault",
        environ: Mapping[str, str] | None = None,
        timeout: float = 10.0,
        missing: str = "raise",
        approle_mount: str = "approle",
    ) -> None:
        _missing("VaultSource", missing)
        if not isinstance(approle_mount, str) or not approle_mount.strip("/"):
            raise ConfigurationError("VaultSource: approle_mount must name a mount")
        super().__init__(name, entries)
        self._environ = environ
        self.timeout = _timeout("VaultSource", timeout)
        self.missing = missing
        self.approle_mount = approle_mount.strip("/")
        self._tls_kept: tuple[bytes | None, ssl.SSLContext] | None = None

    def _valid(self, reference: str) -> bool:
        return _split(reference) is not None

    def fetch(self, home: str) -> Mapping[str, str]:
        """Each entry's field, each secret read once (a ``SourceError`` at the first failure)."""
        environ = os.environ if self._environ is None else self._environ
        wanted = sorted(self._for(home).items())
        if not wanted:
            return {}
        secrets: dict[tuple[str, str], dict[str, Any]] = {}
        token: str | None = None
        values: dict[str, str] = {}
        for key, ref in wanted:
            mount, path, field = _split(ref) or ("", "", "")
            if (mount, path) not in secrets:
                if token is None:
                    token = self._token(environ, ref)
                seen = [v for fields in secrets.values() for v in fields.values()]
                secrets[mount, path] = self._read(environ, token, mount, path, ref, seen)
            value = secrets[mount, path].get(field)
            if value is None:
                if self.missing == "raise":
                    raise SourceError(self._name, ref, f"the secret has no field {field!r}")
                continue
            if not isinstance(value, str):
                raise SourceError(self._name, ref, f"field {field!r} is no string")
            values[key] = value
        return values

    def _token(self, environ: Mapping[str, str], ref: str) -> str:
        """``VAULT_TOKEN``, else the client token of an AppRole login."""
        if environ.get("VAULT_TOKEN"):
            return environ["VAULT_TOKEN"]
        role, secret = environ.get("VAULT_ROLE_ID"), environ.get("VAULT_SECRET_ID")
        if not role or not secret:
            raise SourceError(
                self._name, ref, "no VAULT_TOKEN, nor VAULT_ROLE_ID and VAULT_SECRET_ID"
            )
        body = json.dumps({"role_id": role, "secret_id": secret}).encode()
        answer = self._request(environ, f"auth/{self.approle_mount}/login", None, body, ref)
        auth = answer.get("auth")
        token = auth.get("client_token") if isinstance(auth, dict) else None
        if not isinstance(token, str) or not token:
            raise SourceError(self._name, ref, "the AppRole login answered no client token")
        return token

    def _read(
        self,
        environ: Mapping[str, str],
        token: str,
        mount: str,
        path: str,
        ref: str,
        seen: list[Any],
    ) -> dict[str, Any]:
        """A secret's fields; ``seen`` (fields read before) are masked in an error quoted."""
        answer = self._request(environ, f"{mount}/data/{path}", token, None, ref, seen)
        data = answer.get("data")
        fields = data.get("data") if isinstance(data, dict) else None
        if not isinstance(fields, dict):  # a KV v1 mount answers data without data.data
            raise SourceError(self._name, ref, "Vault's answer is no KV version 2 secret")
        return fields

    def _tls(self, environ: Mapping[str, str], ref: str) -> ssl.SSLContext:
        """The default TLS context, plus ``VAULT_CACERT``'s bundle read by the one reader.

        The bundle is read at each fetch; the context is made again only when its
        bytes changed (the last one is kept).
        """
        import ssl

        from envscope.files._fs import read_regular_file

        cafile = environ.get("VAULT_CACERT")
        failure: SourceError | None = None
        pem: bytes | None = None
        if cafile:
            try:
                pem = read_regular_file(cafile, MAX_CA_BYTES)
            except OSError:
                pem = None
            if pem is None or len(pem) > MAX_CA_BYTES:
                raise SourceError(self._name, ref, "VAULT_CACERT names no readable CA bundle")
        kept = self._tls_kept
        if kept is not None and kept[0] == pem:
            return kept[1]  # loading the system CA store costs ~20 ms: once per bundle
        try:
            context = ssl.create_default_context(
                cadata=None if pem is None else pem.decode("latin-1")
            )
        except (ssl.SSLError, ValueError):
            failure = SourceError(self._name, ref, "VAULT_CACERT holds no PEM certificate")
        if failure is not None:
            raise failure
        self._tls_kept = (pem, context)  # one tuple, replaced whole: safe across threads
        return context

    def _request(
        self,
        environ: Mapping[str, str],
        api_path: str,
        token: str | None,
        body: bytes | None,
        ref: str,
        seen: Sequence[object] = (),
    ) -> dict[str, Any]:
        """One call to Vault's API: its JSON object, or a ``SourceError`` naming ``ref``."""
        import http.client
        import urllib.error
        import urllib.parse
        import urllib.request

        address = environ.get("VAULT_ADDR", "").rstrip("/")
        parts = urllib.parse.urlsplit(address)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SourceError(self._name, ref, "VAULT_ADDR is not an http(s) address")
        shown = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        headers = {"Accept": "application/json"}
        if token is not None:
            headers["X-Vault-Token"] = token
        if environ.get("VAULT_NAMESPACE"):
            headers["X-Vault-Namespace"] = environ["VAULT_NAMESPACE"]
        request = urllib.request.Request(
            f"{address}/v1/{urllib.parse.quote(api_path)}", data=body, headers=headers,
            method="POST" if body is not None else "GET",
        )  # fmt: skip
        credentials = {k: environ[k] for k in VAULT_CREDENTIALS if environ.get(k)}
        if token is not None:
            credentials["token"] = token
        for i, value in enumerate(v for v in seen if isinstance(v, str)):
            credentials[f"seen {i}"] = value
        context = self._tls(environ, ref)
        failure: SourceError | None = None
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
        )
        raw = b""
        try:
            with opener.open(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:  # a status: say what it means, filtered
            said = _STATUS.get(exc.code, f"Vault answered {exc.code}")
            errors = _errors_of(exc.read(), credentials)
            failure = SourceError(self._name, ref, f"{said}: {errors}" if errors else said)
        except (urllib.error.URLError, OSError) as exc:  # refused, unresolved, TLS, timed out
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError) or isinstance(exc, TimeoutError):
                said = f"Vault at {shown} did not answer within {self.timeout:g} s"
            else:
                kind = type(reason).__name__ if isinstance(reason, BaseException) else "error"
                said = f"cannot reach Vault at {shown} ({kind})"
            failure = SourceError(self._name, ref, said)
        except http.client.HTTPException as exc:  # a reply cut short or not HTTP: no OSError
            said = f"Vault at {shown} gave a broken answer ({type(exc).__name__})"
            failure = SourceError(self._name, ref, said)
        if failure is not None:  # raised outside the handler: no context kept
            raise failure
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise SourceError(self._name, ref, "Vault's answer is no JSON object")
        return answer


def _errors_of(body: bytes, credentials: Mapping[str, str]) -> str:
    """Vault's ``errors`` list from an error body, joined and filtered ("" when none)."""
    try:
        data = json.loads(body)
    except ValueError:
        return ""
    errors = data.get("errors") if isinstance(data, dict) else None
    if not isinstance(errors, list):
        return ""
    text = "; ".join(str(e) for e in errors if isinstance(e, str))
    return filtered_stderr(text.encode(), credentials)
