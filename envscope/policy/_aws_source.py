"""AWS Secrets Manager as a secret source (``pip install envscope[aws]``; exported by ``sources``).

``AwsSecretsSource`` reads each secret once per fetch with boto3's
``get_secret_value``. Its session is made from ``environ`` (read at each fetch;
default ``os.environ``): the keys ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY`` and ``AWS_SESSION_TOKEN`` when set (they are its
``credential_names``: Tier 1 for every child), else ``AWS_PROFILE`` and
boto3's own chain; the region from the source, ``AWS_REGION`` or
``AWS_DEFAULT_REGION``; the endpoint from the source or
``AWS_ENDPOINT_URL_SECRETSMANAGER``. Calls are bounded (``timeout`` seconds to
connect and to read, one retry).

Every failure is a ``SourceError`` naming the reference and, for an answer
from AWS, its error code (``ResourceNotFoundException``): never AWS's own
message, never boto3's exception (it carries the request).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from envscope.errors import SourceError
from envscope.policy._source_entries import _EntrySource, _missing, _timeout

__all__ = ["AWS_CREDENTIALS", "AwsSecretsSource"]

AWS_CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
"""What an AWS SDK authenticates with (Tier 1 for every child of a host using it)."""

_SECRET_ID = re.compile(r"(arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:)?[\w/+=.@-]+")

_CODES = {
    "ResourceNotFoundException": "no such secret",
    "AccessDeniedException": "access denied: the credentials cannot read it",
    "DecryptionFailure": "AWS cannot decrypt it with its KMS key",
    "InvalidRequestException": "AWS refused the request (the secret may be scheduled for deletion)",
    "UnrecognizedClientException": "the access key is not valid",
    "InvalidSignatureException": "the secret access key does not match",
    "ExpiredTokenException": "the session token has expired",
}
"""What an AWS error code means here; any other says ``AWS answered CODE``."""


def _split(reference: str) -> tuple[str, str | None] | None:
    """``secret-id`` or ``secret-id#json-key`` as its parts, or None when it is neither."""
    secret, sep, key = reference.partition("#")
    if _SECRET_ID.fullmatch(secret) is None or (sep and not key) or not reference.isprintable():
        return None
    return secret, key if sep else None


class AwsSecretsSource(_EntrySource):
    """A secret source over AWS Secrets Manager: ``{NAME: "secret-id[#json-key]"}`` per home.

    A reference is a secret's name or ARN; with ``#key`` the secret's string is
    a JSON object and the value is its ``key`` (the shape the console's
    key/value editor writes). ``missing``: a JSON key the secret lacks raises
    a ``SourceError`` (``"raise"``) or stays unset (``"unset"``). See the
    module docstring for the session and the failures.
    """

    credential_names: tuple[str, ...] = AWS_CREDENTIALS
    _needs = "a secret name or ARN, with an optional #json-key"

    def __init__(
        self,
        entries: Mapping[str, Mapping[str, str]],
        *,
        name: str = "aws",
        region: str | None = None,
        endpoint_url: str | None = None,
        environ: Mapping[str, str] | None = None,
        timeout: float = 10.0,
        missing: str = "raise",
    ) -> None:
        _missing("AwsSecretsSource", missing)
        super().__init__(name, entries)
        self.region = region
        self.endpoint_url = endpoint_url
        self._environ = environ
        self.timeout = _timeout("AwsSecretsSource", timeout)
        self.missing = missing
        self._client_kept: tuple[tuple[object, ...], Any] | None = None

    def _valid(self, reference: str) -> bool:
        return _split(reference) is not None

    def fetch(self, home: str) -> Mapping[str, str]:
        """Each entry's secret (or JSON key), each secret read once (a ``SourceError`` else)."""
        wanted = sorted(self._for(home).items())
        if not wanted:
            return {}
        client = self._client(wanted[0][1])
        strings: dict[str, str] = {}
        values: dict[str, str] = {}
        for key, ref in wanted:
            secret, json_key = _split(ref) or (ref, None)
            if secret not in strings:
                strings[secret] = self._secret_string(client, secret, ref)
            if json_key is None:
                values[key] = strings[secret]
                continue
            value = _json_key(strings[secret], json_key)
            if value is _NOT_JSON:
                raise SourceError(self._name, ref, "the secret is no JSON object")
            if value is None:
                if self.missing == "raise":
                    raise SourceError(self._name, ref, f"the secret has no key {json_key!r}")
                continue
            if not isinstance(value, str):
                raise SourceError(self._name, ref, f"key {json_key!r} is no string")
            values[key] = value
        return values

    def _client(self, ref: str) -> Any:
        """A Secrets Manager client over a session made from ``environ`` alone.

        The last client is kept while its inputs (the keys, the region, the endpoint,
        the profile) and the process are the same; any change, or a fork, makes a
        new one.
        """
        import importlib.util

        if importlib.util.find_spec("boto3") is None:
            raise SourceError(self._name, ref, "boto3 is not installed (pip install envscope[aws])")
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError

        environ = os.environ if self._environ is None else self._environ
        keys = {
            "aws_access_key_id": environ.get("AWS_ACCESS_KEY_ID"),
            "aws_secret_access_key": environ.get("AWS_SECRET_ACCESS_KEY"),
            "aws_session_token": environ.get("AWS_SESSION_TOKEN"),
        }
        region = self.region or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
        endpoint = self.endpoint_url or environ.get("AWS_ENDPOINT_URL_SECRETSMANAGER")
        config = Config(
            connect_timeout=self.timeout, read_timeout=self.timeout,
            retries={"total_max_attempts": 2, "mode": "standard"},
        )  # fmt: skip
        # the process too: a forked child must not share its parent's pooled connections
        key = (os.getpid(), tuple(keys.values()), region, endpoint, environ.get("AWS_PROFILE"))
        kept = self._client_kept
        if kept is not None and kept[0] == key:
            return kept[1]  # a session and client cost ~40 ms: kept while the inputs hold
        failure: SourceError | None = None
        try:
            session = boto3.session.Session(
                **{k: v for k, v in keys.items() if v},
                region_name=region, profile_name=environ.get("AWS_PROFILE") or None,
            )  # fmt: skip
            client = session.client("secretsmanager", endpoint_url=endpoint, config=config)
        except (BotoCoreError, ValueError) as exc:  # no region, an unknown profile, a bad URL
            failure = SourceError(self._name, ref, f"no AWS client ({type(exc).__name__})")
        if failure is not None:
            raise failure
        self._client_kept = (key, client)  # one tuple, replaced whole: safe across threads
        return client

    def _secret_string(self, client: Any, secret: str, ref: str) -> str:
        from botocore.exceptions import BotoCoreError, ClientError

        failure: SourceError | None = None
        answer: dict[str, Any] = {}
        try:
            answer = client.get_secret_value(SecretId=secret)
        except ClientError as exc:  # AWS answered: its code, never its message
            code = str(exc.response.get("Error", {}).get("Code", "unknown"))
            said = _CODES.get(code, "AWS answered")
            failure = SourceError(self._name, ref, f"{said} ({code})")
        except BotoCoreError as exc:  # no credentials, unreachable, timed out
            failure = SourceError(self._name, ref, f"AWS could not be asked ({type(exc).__name__})")
        if failure is not None:  # raised outside the handler: no context kept
            raise failure
        value = answer.get("SecretString")
        if not isinstance(value, str):
            raise SourceError(self._name, ref, "the secret holds binary data, no string")
        return value


_NOT_JSON = object()


def _json_key(text: str, key: str) -> object:
    """``key`` of the JSON object ``text`` (None when absent), or ``_NOT_JSON``."""
    try:
        data = json.loads(text)
    except ValueError:
        return _NOT_JSON
    return data.get(key) if isinstance(data, dict) else _NOT_JSON
