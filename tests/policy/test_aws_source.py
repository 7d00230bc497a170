"""``AwsSecretsSource`` against moto's server mode: a real HTTP endpoint on localhost.

boto3 runs its real request path (signing, HTTP, parsing) against moto's
Secrets Manager. The error codes moto does not produce without an IAM setup
(access denied, a KMS failure, an expired token) come from botocore's own
``Stubber``, which raises them in the shape AWS documents
(https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_GetSecretValue.html#API_GetSecretValue_Errors).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envscope import AwsSecretsSource, Catalog, ConfigurationError, Host, SourceError, Trace

boto3 = pytest.importorskip("boto3", reason="needs boto3 (pip install envscope[aws])")
moto_server = pytest.importorskip("moto.server", reason="needs moto[server] (the dev extras)")

KEYS = {
    "AWS_ACCESS_KEY_ID": "AKIAFAKEFORMOTO00000",
    "AWS_SECRET_ACCESS_KEY": "moto-secret-key-0123",
}
SECRETS = {
    "dev/github": "aws-gh-value-0123456789",
    "dev/db": json.dumps({"password": "aws-db-pass-0123456789", "port": 5432}),
}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    client = boto3.client(
        "secretsmanager", region_name="eu-west-1", endpoint_url=url,
        aws_access_key_id=KEYS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=KEYS["AWS_SECRET_ACCESS_KEY"],
    )  # fmt: skip
    for name, value in SECRETS.items():
        client.create_secret(Name=name, SecretString=value)
    client.create_secret(Name="dev/binary", SecretBinary=b"\x00\x01binary-0123456789")
    yield url
    server.stop()


def _source(endpoint: str, entries: dict[str, str], **kwargs: Any) -> AwsSecretsSource:
    environ = {**KEYS, "AWS_REGION": "eu-west-1", **kwargs.pop("env", {})}
    return AwsSecretsSource({"*": entries}, endpoint_url=endpoint, environ=environ, timeout=2,
                            **kwargs)  # fmt: skip


def test_it_reads_a_string_and_a_json_key_each_secret_once(endpoint: str) -> None:
    source = _source(endpoint, {"GH": "dev/github", "DB_PW": "dev/db#password", "DB": "dev/db"})
    assert source.fetch("/home") == {
        "GH": SECRETS["dev/github"], "DB_PW": "aws-db-pass-0123456789", "DB": SECRETS["dev/db"]
    }  # fmt: skip
    assert source.credential_names == (
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"
    )  # fmt: skip


@pytest.mark.parametrize(
    ("entries", "kwargs", "said"),
    [
        ({"A": "dev/nope"}, {}, "no such secret (ResourceNotFoundException)"),
        ({"A": "dev/db#nope"}, {}, "the secret has no key 'nope'"),
        ({"A": "dev/db#port"}, {}, "key 'port' is no string"),
        ({"A": "dev/github#key"}, {}, "the secret is no JSON object"),
        ({"A": "dev/binary"}, {}, "the secret holds binary data"),
        ({"A": "dev/github"}, {"endpoint_url": "http://127.0.0.1:9"},
         "AWS could not be asked (EndpointConnectionError)"),
        ({"A": "dev/github"}, {"env": {"AWS_REGION": ""}}, "no AWS client (NoRegionError)"),
        ({"A": "dev/github"}, {"env": {"AWS_PROFILE": "no-such-profile"}},
         "no AWS client (ProfileNotFound)"),
    ],
    ids=["no-secret", "no-json-key", "json-key-not-a-string", "not-json", "binary", "unreachable",
         "no-region", "unknown-profile"],
)  # fmt: skip
def test_each_failure_against_moto_is_a_source_error_without_a_value(
    endpoint: str, entries: dict[str, str], kwargs: dict[str, Any], said: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    if "endpoint_url" in kwargs:
        endpoint = kwargs.pop("endpoint_url")
    source = _source(endpoint, entries, **kwargs)
    with pytest.raises(SourceError) as raised:
        source.fetch("/home")
    message = str(raised.value)
    assert said in message
    assert raised.value.reference == next(iter(entries.values()))
    for value in ("aws-gh-value", "aws-db-pass", "binary-0123", *KEYS.values()):
        assert value not in message
    assert raised.value.__context__ is None


@pytest.mark.parametrize(
    ("code", "said"),
    [
        ("AccessDeniedException", "access denied: the credentials cannot read it"),
        ("DecryptionFailure", "AWS cannot decrypt it with its KMS key"),
        ("InvalidRequestException", "scheduled for deletion"),
        ("ExpiredTokenException", "the session token has expired"),
        ("ThrottlingException", "AWS answered (ThrottlingException)"),
    ],
)
def test_each_documented_error_code_is_named_never_aws_s_message(
    endpoint: str, code: str, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from botocore.stub import Stubber

    source = _source(endpoint, {"A": "dev/github"})
    real_client = source._client
    stubbed: list[Stubber] = []

    def client(ref: str) -> Any:
        made = real_client(ref)
        stubber = Stubber(made)
        stubber.add_client_error(
            "get_secret_value", service_error_code=code,
            service_message="arn:aws:iam::1:user/x is not authorized: aws-gh-value-0123456789",
        )  # fmt: skip
        stubber.activate()
        stubbed.append(stubber)
        return made

    monkeypatch.setattr(source, "_client", client)
    with pytest.raises(SourceError) as raised:
        source.fetch("/home")
    assert said in str(raised.value)
    assert code in str(raised.value)
    assert "not authorized" not in str(raised.value)
    assert "aws-gh-value" not in str(raised.value)
    assert stubbed


@pytest.mark.parametrize(
    "reference",
    ["", "dev/github#", "has space", "dev/github\n", "arn:aws:secretsmanager:eu:12:secret:x y"],
)
def test_a_reference_is_a_secret_id_with_an_optional_key(reference: str) -> None:
    with pytest.raises(ConfigurationError, match="secret name or ARN"):
        AwsSecretsSource({"*": {"A": reference}})


def test_an_arn_is_a_reference() -> None:
    arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:dev/github-AbCdEf"
    assert AwsSecretsSource({"*": {"A": f"{arn}#token"}}).reference_of("/h", "A") == f"{arn}#token"


def test_without_boto3_a_fetch_is_a_source_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "boto3" else real(name, *a)
    )
    with pytest.raises(SourceError, match=r"pip install envscope\[aws\]"):
        AwsSecretsSource({"*": {"A": "dev/github"}}).fetch("/home")


def test_a_host_declares_the_keys_and_routes_a_value(endpoint: str, tmp_path: Path) -> None:
    launch, routed = tmp_path / "launch", tmp_path / "routed"
    launch.mkdir()
    routed.mkdir()
    environ = {"PATH": "/usr/bin", **KEYS, "AWS_REGION": "eu-west-1"}
    host = Host(launch, environ=environ, catalog=Catalog.default())
    host.add_secret_source(
        AwsSecretsSource(
            {str(routed): {"B_SETTING": "dev/db#password"}}, endpoint_url=endpoint, environ=environ
        )
    )
    host.load_launch_env()
    trace = Trace()
    with host.routed(routed):
        child = host.build_subprocess_env(trace=trace)
    assert child["B_SETTING"] == "aws-db-pass-0123456789"
    assert "AWS_SECRET_ACCESS_KEY" not in child
    origin = trace.final()["B_SETTING"].origin
    assert origin is not None
    assert origin.detail == "aws (dev/db#password)"


def test_the_client_is_made_again_only_when_its_inputs_change(endpoint: str) -> None:
    """A rotated key (the host's env changed) makes a new client; the same inputs reuse it."""
    environ = {**KEYS, "AWS_REGION": "eu-west-1"}
    source = AwsSecretsSource({"*": {"A": "dev/github"}}, endpoint_url=endpoint, environ=environ)
    source.fetch("/home")
    first = source._client_kept
    source.fetch("/home")
    assert source._client_kept is first
    environ["AWS_SECRET_ACCESS_KEY"] = "a-rotated-secret-key-0123"
    assert source.fetch("/home") == {"A": SECRETS["dev/github"]}
    assert source._client_kept is not first


def test_an_endpoint_that_is_no_url_is_a_source_error() -> None:
    """boto3 raises a bare ValueError for it: a SourceError, so on_failure can choose."""
    environ = {**KEYS, "AWS_REGION": "eu-west-1"}
    source = AwsSecretsSource({"*": {"A": "dev/github"}}, endpoint_url="not a url", environ=environ)
    with pytest.raises(SourceError, match=r"no AWS client \(ValueError\)") as raised:
        source.fetch("/home")
    assert raised.value.__context__ is None


def test_a_forked_child_makes_its_own_client(
    endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kept client's pooled connections are the parent's: another process makes a new one."""
    environ = {**KEYS, "AWS_REGION": "eu-west-1"}
    source = AwsSecretsSource({"*": {"A": "dev/github"}}, endpoint_url=endpoint, environ=environ)
    source.fetch("/home")
    first = source._client_kept
    assert first is not None
    source.fetch("/home")
    assert source._client_kept is first  # the same process, the same inputs: kept
    pid = os.getpid()
    monkeypatch.setattr(os, "getpid", lambda: pid + 1)  # what a forked child sees
    assert source.fetch("/home") == {"A": SECRETS["dev/github"]}
    assert source._client_kept is not first
