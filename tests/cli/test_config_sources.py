"""``sources:`` in ``envscope.yaml`` and ``envscope sources check``.

A config names its sources by type; the host it builds registers them, each
reading its client's credentials from the host's env. A table of mistakes, each
a ``ConfigFileError`` naming the file, line and field. The command runs against
the real ``age`` (cheap to set up here): it reports answered and unanswered
names and failures, exits 1 on anything short of a full answer, and never
prints a value.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from envscope import (
    AgeFileSource,
    AwsSecretsSource,
    BitwardenSource,
    ConfigFileError,
    KeyringSource,
    OnePasswordSource,
    PassSource,
    Trace,
    VaultSource,
)
from envscope.cli import main
from envscope.cli.config import load_config

SECRET_ID = "be8e0ad8-d545-4017-a55a-b02f014d4158"


def _write(where: Path, text: str) -> str:
    (where / "launch").mkdir(exist_ok=True)
    (where / "work").mkdir(exist_ok=True)
    path = where / "envscope.yaml"
    path.write_text("launch_home: launch\nhomes: {work: work}\n" + text)
    return str(path)


def test_each_type_makes_its_source_with_homes_and_paths_resolved(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    config = load_config(
        _write(
            tmp_path,
            "sources:\n"
            "  - {type: keyring, service: agent, entries: {'*': {A: a-user}}, missing: unset}\n"
            "  - {type: pass, entries: {work: {B: dev/b}}, on_failure: unset, ttl: 300}\n"
            "  - {type: age, identities: keys/k.txt, entries: {launch: {C: s.env.age}}}\n"
            "  - {type: 1password, name: op-dev, timeout: 3, entries: {elsewhere: {D: 'op://v/i/f'}}}\n"
            f"  - {{type: bitwarden, executable: bin/bws, entries: {{'*': {{E: {SECRET_ID}}}}}}}\n"
            "  - {type: vault, missing: unset, approle_mount: ci, entries: {'*': {F: 'kv/a#b'}}}\n"
            "  - {type: aws, region: eu-west-1, entries: {'*': {G: 'dev/db#password'}}}\n",
        )
    )
    made = [spec.make({}) for spec in config.sources]
    assert [type(s) for s in made] == [
        KeyringSource, PassSource, AgeFileSource, OnePasswordSource, BitwardenSource, VaultSource,
        AwsSecretsSource,
    ]  # fmt: skip
    keyring, pass_, age, op, bws, vault, aws = made
    assert keyring.missing == "unset"  # type: ignore[attr-defined]
    assert pass_.supplied_names(str(tmp_path / "work")) == {"B"}  # type: ignore[attr-defined]
    assert config.sources[1].on_failure == "unset"
    assert config.sources[1].ttl == 300
    assert age.identities == (str(tmp_path / "keys" / "k.txt"),)  # type: ignore[attr-defined]
    assert age.supplied_names(str(tmp_path / "launch")) == {"C"}  # type: ignore[attr-defined]
    assert op.name == "op-dev"
    assert op.timeout == 3  # type: ignore[attr-defined]
    assert op.supplied_names(str(tmp_path / "elsewhere")) == {"D"}  # type: ignore[attr-defined]
    assert bws.executable == str(tmp_path / "bin" / "bws")  # type: ignore[attr-defined]
    assert (vault.missing, vault.approle_mount) == ("unset", "ci")  # type: ignore[attr-defined]
    assert (aws.region, aws.endpoint_url) == ("eu-west-1", None)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("item", "field", "said"),
    [
        ("{type: consul, entries: {}}", "sources[0]", "type"),
        ("{type: pass, identities: k, entries: {}}", "sources[0].identities", "Extra"),
        ("{type: keyring, entries: {}}", "sources[0].service", "required"),
        ("{type: age, entries: {}}", "sources[0].identities", "required"),
        ("{type: pass, entries: {wrok: {A: a}}}", "sources[0].entries.wrok",
         "neither a configured"),
        ("{type: 1password, entries: {'*': {A: vault/item}}}", "sources[0]", "op://"),
        ("{type: pass, entries: {'*': {A: ../x}}}", "sources[0]", "password-store path"),
        ("{type: pass, ttl: 0, entries: {}}", "sources[0].ttl", "greater than 0"),
        ("{type: pass, on_failure: ignore, entries: {}}", "sources[0].on_failure", "raise"),
        ("{type: vault, executable: v, entries: {}}", "sources[0].executable", "Extra"),
    ],
    ids=["unknown-type", "another-type-s-option", "keyring-without-service",
         "age-without-identities", "misspelt-home", "bad-op-reference", "pass-path-leaves-store",
         "ttl-zero", "unknown-failure-choice", "vault-runs-no-executable"],
)  # fmt: skip
def test_a_mistake_names_the_file_line_and_field(
    tmp_path: Path, item: str, field: str, said: str
) -> None:
    path = _write(tmp_path, f"name_context: true\nsources:\n  - {item}\n")
    with pytest.raises(ConfigFileError) as raised:
        load_config(path)
    assert raised.value.path == path
    assert raised.value.line == 5
    assert raised.value.field == field
    assert said in str(raised.value)


needs_age = pytest.mark.skipif(
    shutil.which("age") is None or shutil.which("age-keygen") is None,
    reason="needs age and age-keygen (Debian: age)",
)


def _age_setup(tmp_path: Path) -> str:
    """A config whose age source reads each home's secrets.env.age (work's is missing)."""
    key = tmp_path / "key.txt"
    subprocess.run(["age-keygen", "-o", str(key)], check=True, capture_output=True)
    public = subprocess.run(["age-keygen", "-y", str(key)], check=True, capture_output=True)
    path = _write(
        tmp_path,
        "sources:\n"
        "  - type: age\n"
        "    identities: key.txt\n"
        "    on_failure: unset\n"
        "    missing: unset\n"
        "    entries: {'*': {GH_TOKEN: secrets.env.age, ABSENT: secrets.env.age}}\n",
    )
    target = str(tmp_path / "launch" / "secrets.env.age")
    subprocess.run(
        ["age", "-r", public.stdout.decode().strip(), "-o", target],
        input=b"GH_TOKEN=age-launch-0123456789\n", check=True,
    )  # fmt: skip
    return path


@needs_age
def test_a_configured_host_fetches_from_its_sources(tmp_path: Path) -> None:
    config = load_config(_age_setup(tmp_path))
    environ: dict[str, str] = {"PATH": "/usr/bin"}
    host = config.build_host(environ)
    host.load_launch_env()
    assert environ["GH_TOKEN"] == "age-launch-0123456789"
    assert [f.reference for f in host.source_failures()] == []
    trace = Trace()
    with host.routed(config.resolve_home("work")):
        host.build_subprocess_env(trace=trace)
    assert [f.source for f in host.source_failures()] == ["age"]  # work has no file: unset


@needs_age
@pytest.mark.parametrize("as_json", [False, True])
def test_sources_check_reports_each_home_and_never_a_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    path = _age_setup(tmp_path)
    code = main(["--config", path, "sources", "check", *(["--json"] if as_json else [])])
    out, err = capsys.readouterr()
    assert code == 1
    assert "age-launch" not in out + err
    if as_json:
        checks = {c["home"]: c for c in json.loads(out)["checks"]}
        assert checks["launch"]["answered"] == ["GH_TOKEN"]
        assert checks["launch"]["unanswered"] == ["ABSENT"]
        assert "the file cannot be opened" in checks["work"]["failure"]
        assert not checks["work"]["ok"]
    else:
        assert "age (age) launch: answered GH_TOKEN; not answered: ABSENT" in out
        assert "age (age) work: failed:" in out
        assert "2 checked, 2 not answering in full" in out


@needs_age
def test_sources_check_exits_0_when_every_name_is_answered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _age_setup(tmp_path)
    text = Path(path).read_text().replace(", ABSENT: secrets.env.age", "")
    Path(path).write_text(text)
    assert main(["--config", path, "sources", "check", "--home", "launch"]) == 0
    out, _ = capsys.readouterr()
    assert out == "age (age) launch: ok: GH_TOKEN\n1 checked, 0 not answering in full\n"


def test_sources_check_takes_no_host_factory(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sources", "check", "--host", "mod:attr"]) == 2
    assert "pass --config, not --host" in capsys.readouterr().err


def test_two_keys_naming_one_home_are_an_error(tmp_path: Path) -> None:
    """launch and its path: one key's entries would replace the other's in silence."""
    path = _write(
        tmp_path, "sources:\n  - {type: pass, entries: {launch: {A: a/x}, ./launch: {B: b/x}}}\n"
    )
    with pytest.raises(ConfigFileError, match="another key of these entries") as raised:
        load_config(path)
    assert raised.value.field == "sources[0].entries../launch"
