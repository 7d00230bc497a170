"""``BitwardenSource`` against a fake ``bws`` reproducing the CLI's documented shapes.

``bws secret get <id> --output json`` prints the secret as a JSON object whose
``value`` is the secret (https://bitwarden.com/help/secrets-manager-cli/), or an
``Error:`` line on stderr and a non-zero exit. The fake records the environment it
ran with: the child holds ``BWS_ACCESS_TOKEN`` and nothing of the host's.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from envscope import BitwardenSource, ConfigurationError, SourceError

TOKEN = "0.48b4774c-68ff-4a4b-9d45-1d2a3b4c5d6e.FAKEbwsACCESStoken0123456789:abcdEFGHijkl=="
SECRET_ID = "be8e0ad8-d545-4017-a55a-b02f014d4158"

FAKE = r"""#!{python}
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
json.dump(dict(os.environ), open(os.path.join(here, "env.json"), "w"))
mode = open(os.path.join(here, "mode")).read().strip()
if mode == "garbage":
    print("not json")
    sys.exit(0)
if sys.argv[1:3] != ["secret", "get"] or sys.argv[3] != "{secret_id}":
    sys.stderr.write("Error: \n   0: Received error message from server: [404 Not Found] "
                     + '{{"message":"Resource not found."}}\n')
    sys.exit(1)
print(json.dumps({{"object": "secret", "id": sys.argv[3], "key": "GH_TOKEN",
                  "value": "bw-value-0123456789", "note": ""}}, indent=2))
"""


def _fake_bws(where: Path, mode: str = "ok") -> Path:
    where.mkdir(parents=True, exist_ok=True)
    exe = where / "bws"
    exe.write_text(FAKE.format(python=sys.executable, secret_id=SECRET_ID))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    (where / "mode").write_text(mode)
    return exe


def _source(exe: Path, secret_id: str = SECRET_ID) -> BitwardenSource:
    environ = {"PATH": "/usr/bin", "BWS_ACCESS_TOKEN": TOKEN, "HOST_SECRET": "x" * 20}
    return BitwardenSource({"*": {"GH_TOKEN": secret_id}}, environ=environ, executable=str(exe))


def test_it_reads_the_value_and_its_child_holds_its_credential_only(tmp_path: Path) -> None:
    exe = _fake_bws(tmp_path / "bin")
    source = _source(exe)
    assert source.fetch("/home") == {"GH_TOKEN": "bw-value-0123456789"}
    seen = json.loads((tmp_path / "bin" / "env.json").read_text())
    assert set(seen) - {"PWD", "SHLVL", "_", "LC_CTYPE"} == {"PATH", "LANG", "BWS_ACCESS_TOKEN"}
    assert source.credential_names == ("BWS_ACCESS_TOKEN",)
    assert source.reference_of("/home", "GH_TOKEN") == f"secret {SECRET_ID}"


@pytest.mark.parametrize(
    ("mode", "secret_id", "said"),
    [
        ("ok", "00000000-0000-0000-0000-000000000000", "404 Not Found"),
        ("garbage", SECRET_ID, "bws printed no secret value"),
    ],
    ids=["unknown-secret", "not-json"],
)
def test_each_failure_is_a_source_error_without_a_value(
    tmp_path: Path, mode: str, secret_id: str, said: str
) -> None:
    exe = _fake_bws(tmp_path / "bin", mode)
    with pytest.raises(SourceError, match="bitwarden") as raised:
        _source(exe, secret_id).fetch("/home")
    assert said in str(raised.value)
    assert raised.value.reference == f"secret {secret_id}"
    assert TOKEN not in str(raised.value)
    assert raised.value.__context__ is None


@pytest.mark.parametrize("secret_id", ["not-a-uuid", "op://a/b/c", ""])
def test_an_entry_needs_a_secret_id(secret_id: str) -> None:
    with pytest.raises(ConfigurationError, match="secret id"):
        BitwardenSource({"*": {"GH_TOKEN": secret_id}})
