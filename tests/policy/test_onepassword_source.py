"""``OnePasswordSource`` against a fake ``op`` that reproduces the CLI's documented shapes.

The fake (written per test) answers ``op read --no-newline op://vault/item/field``
as the CLI does (https://developer.1password.com/docs/cli/reference/commands/read/):
the field's value on stdout, or an ``[ERROR] <date> <time> …`` line on stderr and
exit 1. It records the environment it ran with, so the test asserts from inside
the child that it held its credential and nothing else. A table of failures
(an unknown item, stderr echoing the token, a hang, no client) and a property
that no error holds a value.
"""

from __future__ import annotations

import json
import os
import stat
import string
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envscope import Catalog, ConfigurationError, Host, OnePasswordSource, SourceError

TOKEN = "ops_eyJfake" + "A1b2C3d4E5" * 6
VALUES = {"op://dev/github/token": "gh-value-0123456789"}

FAKE = r"""#!{python}
import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "env.json"), "w") as out:
    json.dump(dict(os.environ), out)
mode = open(os.path.join(here, "mode")).read().strip()
values = json.load(open(os.path.join(here, "values.json")))
ref = sys.argv[-1]
if mode == "hang":
    time.sleep(30)
if mode == "echo":
    sys.stderr.write("[ERROR] 2024/05/01 10:00:00 authorization failed for token "
                     + os.environ.get("OP_SERVICE_ACCOUNT_TOKEN", "") + "\n")
    sys.exit(1)
if sys.argv[1:3] != ["read", "--no-newline"] or ref not in values:
    sys.stderr.write('[ERROR] 2024/05/01 10:00:00 could not read secret ' + repr(ref)
                     + ': "item" isn\'t an item in the "dev" vault\n')
    sys.exit(1)
sys.stdout.write(values[ref])
"""


def _fake_op(where: Path, mode: str = "ok", values: dict[str, str] | None = None) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    exe = where / "op"
    exe.write_text(FAKE.replace("{python}", sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    (where / "mode").write_text(mode)
    (where / "values.json").write_text(json.dumps(VALUES if values is None else values))
    return exe


def _source(exe: Path, **kwargs: object) -> OnePasswordSource:
    environ = {"PATH": "/usr/bin", "OP_SERVICE_ACCOUNT_TOKEN": TOKEN, "HOST_SECRET": "x" * 20}
    entries = {"*": {"GH_TOKEN": "op://dev/github/token"}}
    return OnePasswordSource(entries, environ=environ, executable=str(exe), **kwargs)  # type: ignore[arg-type]


def test_it_reads_each_reference_and_its_child_holds_its_credential_only(tmp_path: Path) -> None:
    exe = _fake_op(tmp_path / "bin")
    assert _source(exe).fetch("/home") == {"GH_TOKEN": "gh-value-0123456789"}
    seen = json.loads((tmp_path / "bin" / "env.json").read_text())
    assert set(seen) - {"PWD", "SHLVL", "_", "LC_CTYPE"} == {
        "PATH", "LANG", "OP_SERVICE_ACCOUNT_TOKEN"
    }  # fmt: skip
    assert seen["OP_SERVICE_ACCOUNT_TOKEN"] == TOKEN


@pytest.mark.parametrize(
    ("mode", "entries", "said"),
    [
        ("ok", {"GH_TOKEN": "op://dev/missing/token"}, "isn't an item"),
        ("echo", {"GH_TOKEN": "op://dev/github/token"}, "authorization failed for token [masked]"),
        ("hang", {"GH_TOKEN": "op://dev/github/token"}, "did not answer within 1 s"),
    ],
    ids=["unknown-item", "stderr-echoes-the-token", "hang"],
)
def test_each_failure_is_a_source_error_without_a_value(
    tmp_path: Path, mode: str, entries: dict[str, str], said: str
) -> None:
    exe = _fake_op(tmp_path / "bin", mode)
    environ = {"OP_SERVICE_ACCOUNT_TOKEN": TOKEN}
    source = OnePasswordSource({"*": entries}, environ=environ, executable=str(exe), timeout=1)
    with pytest.raises(SourceError, match="1password") as raised:
        source.fetch("/home")
    assert said in str(raised.value)
    assert raised.value.reference == entries["GH_TOKEN"]
    assert TOKEN not in str(raised.value)
    assert "gh-value" not in str(raised.value)


def test_a_client_that_is_not_installed(tmp_path: Path) -> None:
    source = _source(tmp_path / "no-such-op")
    with pytest.raises(SourceError, match="is not installed"):
        source.fetch("/home")


@pytest.mark.parametrize(
    "entries", [{"*": {"GH_TOKEN": "vault/item"}}, {"*": {"NOT A NAME": "op://a/b/c"}}]
)
def test_an_entry_needs_a_name_and_an_op_reference(entries: dict[str, dict[str, str]]) -> None:
    with pytest.raises(ConfigurationError, match="op://"):
        OnePasswordSource(entries)


def test_a_host_declares_its_credentials_and_loads_its_values(tmp_path: Path) -> None:
    """The 1Password credentials are Tier 1 for every child; a fetched value reaches the host."""
    exe = _fake_op(tmp_path / "bin")
    home = tmp_path / "home"
    home.mkdir()
    environ = {"PATH": "/usr/bin", "OP_SERVICE_ACCOUNT_TOKEN": TOKEN}
    host = Host(home, environ=environ, catalog=Catalog.default())
    host.add_secret_source(_source(exe))
    host.load_launch_env()
    assert environ["GH_TOKEN"] == "gh-value-0123456789"
    child = host.build_subprocess_env(surface="credentialed")
    assert "OP_SERVICE_ACCOUNT_TOKEN" not in child


@settings(max_examples=25, deadline=None)
@given(st.text(alphabet=string.ascii_letters + string.digits + "-_.:/+=", min_size=8, max_size=30))
def test_no_error_holds_the_credential_whatever_it_is(tmp_path_factory: pytest.TempPathFactory,
                                                       token: str) -> None:  # fmt: skip
    exe = _fake_op(tmp_path_factory.mktemp("op"), "echo")
    source = OnePasswordSource(
        {"*": {"GH_TOKEN": "op://dev/github/token"}},
        environ={"OP_SERVICE_ACCOUNT_TOKEN": token},
        executable=str(exe),
    )
    with pytest.raises(SourceError) as raised:
        source.fetch("/home")
    assert token not in str(raised.value)


def test_the_child_never_sees_the_host_env(tmp_path: Path) -> None:
    os.environ.setdefault("ENVSCOPE_TEST_HOST_SECRET", "must-not-reach-op")
    exe = _fake_op(tmp_path / "bin")
    OnePasswordSource({"*": {"GH_TOKEN": "op://dev/github/token"}}, executable=str(exe)).fetch("/h")
    seen = json.loads((tmp_path / "bin" / "env.json").read_text())
    assert "ENVSCOPE_TEST_HOST_SECRET" not in seen
    os.environ.pop("ENVSCOPE_TEST_HOST_SECRET", None)
