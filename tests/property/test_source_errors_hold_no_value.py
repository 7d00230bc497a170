"""No error, warning or report of any secret source holds a value it fetched or a credential.

One property over every source's failure paths. For any values (of the
8-character floor and up) and any credential, each source is driven into a
failure whose backend output echoes them: a CLI that quotes the token and the
answer it gave for an earlier entry of the same fetch, a Vault whose error
list does the same, an AWS error message that does the same (botocore's
Stubber), a keyring backend's exception, an
age "encrypted" file that is plaintext (age quotes its first line). Then:

- the ``SourceError`` (``str``, ``repr``, ``args``, notes) holds none of them
  and carries no context (a handler's exception may hold the input);
- a host that chose ``on_failure="unset"`` shows none of them in
  ``source_failures()``, in a traced build's warnings, in the snapshot JSON
  or in explain's text.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envscope import (
    AgeFileSource,
    BitwardenSource,
    Catalog,
    Host,
    KeyringSource,
    OnePasswordSource,
    SourceError,
    Trace,
    VaultSource,
)
from envscope.policy.sources import SecretSource
from envscope.tools import _report

pytestmark = pytest.mark.property

BWS_ID_A = "be8e0ad8-d545-4017-a55a-b02f014d4158"
BWS_ID_B = "0f3a1c2e-0000-4017-a55a-b02f014d4159"

FAKE_CLI = r"""#!{python}
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
answers = json.load(open(os.path.join(here, "answers.json")))
ref = sys.argv[-1] if sys.argv[1] == "read" else sys.argv[3]
if ref in answers:
    value = answers[ref]
    print(json.dumps({"value": value}) if sys.argv[1] == "secret" else value, end="")
    sys.exit(0)
token = os.environ.get("OP_SERVICE_ACCOUNT_TOKEN") or os.environ.get("BWS_ACCESS_TOKEN", "")
sys.stderr.write("[ERROR] cannot read " + ref + " with " + token + "; earlier answers: "
                 + ", ".join(answers.values()) + "\n")
sys.exit(1)
"""


def _fake_cli(where: Path, answers: dict[str, str]) -> str:
    exe = where / "client"
    exe.write_text(FAKE_CLI.replace("{python}", sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    (where / "answers.json").write_text(json.dumps(answers))
    return str(exe)


class _EchoingVault(BaseHTTPRequestHandler):
    """Answers ``secret/a``; anything else is a 500 whose errors echo the token and that answer."""

    def do_GET(self) -> None:
        server: Any = self.server
        body: dict[str, Any]
        if self.path == "/v1/secret/data/a":
            status, body = 200, {"data": {"data": {"x": server.value}}}
        else:
            echoed = f"token {self.headers.get('X-Vault-Token')} saw {server.value}"
            status, body = 500, {"errors": [echoed]}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        """Quiet."""


@pytest.fixture(scope="module")
def vault() -> Iterator[Any]:
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), _EchoingVault)
    server.daemon_threads = True
    server.value = ""
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


Case = Callable[[str, str, Path], SecretSource]
"""(a value, a credential, a scratch directory) -> a source whose fetch fails, echoing both."""


def _op(value: str, credential: str, where: Path) -> SecretSource:
    exe = _fake_cli(where, {"op://v/a/f": value})
    entries = {"*": {"A": "op://v/a/f", "B": "op://v/b/f"}}
    return OnePasswordSource(entries, executable=exe,
                             environ={"OP_SERVICE_ACCOUNT_TOKEN": credential})  # fmt: skip


def _bws(value: str, credential: str, where: Path) -> SecretSource:
    exe = _fake_cli(where, {BWS_ID_A: value})
    entries = {"*": {"A": BWS_ID_A, "B": BWS_ID_B}}
    return BitwardenSource(entries, executable=exe, environ={"BWS_ACCESS_TOKEN": credential})


def _age(value: str, credential: str, where: Path) -> SecretSource:
    (where / "plain.env.age").write_text(f"A={value}\n")  # not encrypted: age quotes it
    (where / "key.txt").write_text(f"# {credential}\n")
    return AgeFileSource({"*": {"A": str(where / "plain.env.age")}},
                         identities=str(where / "key.txt"))  # fmt: skip


def _keyring(value: str, credential: str, where: Path) -> SecretSource:
    from keyring.backend import KeyringBackend
    from keyring.errors import KeyringError

    class Echoing(KeyringBackend):
        priority = 1

        def __init__(self) -> None:
            super().__init__()  # type: ignore[no-untyped-call]

        def get_password(self, service: str, username: str) -> str | None:
            raise KeyringError(f"locked; it holds {value} under {credential}")

        def set_password(self, service: str, username: str, password: str) -> None:
            raise NotImplementedError

        def delete_password(self, service: str, username: str) -> None:
            raise NotImplementedError

    import keyring

    keyring.set_keyring(Echoing())
    return KeyringSource("svc", {"*": {"A": "user"}})


def _vault_case(server: Any) -> Case:
    def case(value: str, credential: str, where: Path) -> SecretSource:
        server.value = value
        addr = f"http://127.0.0.1:{server.server_address[1]}"
        entries = {"*": {"A": "secret/a#x", "B": "secret/b#x"}}
        return VaultSource(entries, environ={"VAULT_ADDR": addr, "VAULT_TOKEN": credential})

    return case


def _aws(value: str, credential: str, where: Path) -> SecretSource:
    """Entry A answers ``value``; B's error message echoes it and the secret key (stubbed)."""
    from botocore.stub import Stubber

    from envscope import AwsSecretsSource

    environ = {"AWS_ACCESS_KEY_ID": "AKIAPROPERTY00000000", "AWS_SECRET_ACCESS_KEY": credential,
               "AWS_REGION": "eu-west-1"}  # fmt: skip
    source = AwsSecretsSource({"*": {"A": "dev/a", "B": "dev/b"}}, environ=environ,
                              endpoint_url="http://127.0.0.1:9")  # fmt: skip
    made = source._client

    def client(ref: str) -> Any:
        real = made(ref)
        stubber = Stubber(real)
        stubber.add_response("get_secret_value", {"Name": "dev/a", "SecretString": value},
                             {"SecretId": "dev/a"})  # fmt: skip
        said = f"{credential} cannot read after {value}"
        stubber.add_client_error("get_secret_value", service_error_code="AccessDeniedException",
                                 service_message=said)  # fmt: skip
        stubber.activate()
        return real

    source._client = client  # type: ignore[method-assign]
    return source


CASES = ["1password", "bitwarden", "vault", "keyring", "age", "aws"]

values = st.text(
    alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="\\\"'~"),
    min_size=8,
    max_size=40,
).map(lambda v: v[:4] + "~" + v[4:])  # a "~": no message's own words can hold the value


def _case(name: str, vault: Any) -> Case:
    if name == "age" and shutil.which("age") is None:
        pytest.skip("needs age (Debian: age)")
    if name == "aws":
        pytest.importorskip("boto3", reason="needs boto3 (pip install envscope[aws])")
    cases: dict[str, Case] = {
        "1password": _op, "bitwarden": _bws, "vault": _vault_case(vault),
        "keyring": _keyring, "age": _age, "aws": _aws,
    }  # fmt: skip
    return cases[name]


def _held_nowhere(text: str, secrets: tuple[str, ...]) -> None:
    for secret in secrets:
        assert secret not in text


@pytest.mark.parametrize("name", CASES)
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=values, credential=values)
def test_no_failure_of_any_source_holds_a_value_or_a_credential(
    name: str, vault: Any, value: str, credential: str
) -> None:
    if value in credential or credential in value:
        return  # one inside the other: masking one could leave the other's letters, by design
    make = _case(name, vault)
    import keyring

    before = keyring.get_keyring()  # the keyring case sets a backend: put it back after
    try:
        _check(make, value, credential)
    finally:
        keyring.set_keyring(before)


def _check(make: Case, value: str, credential: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        where = Path(scratch)
        source = make(value, credential, where)
        with pytest.raises(SourceError) as raised:
            source.fetch("/home")
        err = raised.value
        assert err.__context__ is None
        assert err.__cause__ is None
        shown = [str(err), repr(err), *map(str, err.args), *getattr(err, "__notes__", [])]
        _held_nowhere("\n".join(shown), (value, credential))

        launch = where / "launch"
        launch.mkdir()
        host = Host(launch, environ={"PATH": os.defpath}, catalog=Catalog.default())
        host.add_secret_source(make(value, credential, where), on_failure="unset")
        host.load_launch_env()
        trace = Trace()
        host.build_subprocess_env(trace=trace)
        snapshot = _report.snapshot_of(trace, home="launch", relative_to=None, key_id=None)
        reports = [
            *map(str, host.source_failures()),
            *(w.message for w in trace.context.warnings),
            json.dumps(snapshot),
            _report.format_explain(snapshot),
        ]
        _held_nowhere("\n".join(reports), (value, credential))
        assert any(w.kind == "source-unset" for w in trace.context.warnings)


def test_the_cli_fake_does_echo_what_the_property_hides(tmp_path: Path) -> None:
    """The property can fail: the fake's stderr holds the token and the earlier answer."""
    exe = _fake_cli(tmp_path, {"op://v/a/f": "an-answer-0123456789"})
    done = subprocess.run([exe, "read", "--no-newline", "op://v/b/f"], capture_output=True,
                          text=True, env={"OP_SERVICE_ACCOUNT_TOKEN": "a-token-0123456789"},
                          check=False)  # fmt: skip
    assert "an-answer-0123456789" in done.stderr
    assert "a-token-0123456789" in done.stderr
