"""`explain --show-values` masks every value a consulted policy or the alias rule protects."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from envscope.cli import main

LAUNCH_ONLY = "sv-launch-platform-secret-1"  # CHATX_BOT_TOKEN: declared by A's plugin only
CATALOG_T1 = "sv-telegram-token-value-2"  # TELEGRAM_BOT_TOKEN: catalog Tier 1
SHOWN = "plain-operator-setting"  # an undeclared value: shown


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A launch home A whose platform plugin declares CHATX_BOT_TOKEN, and a profile B."""
    plugin = tmp_path / "A" / "plugins" / "platforms" / "chatx"
    plugin.mkdir(parents=True)
    (plugin / "plugin.yaml").write_text("name: chatx\nrequires_env: [CHATX_BOT_TOKEN]\n")
    (tmp_path / "B").mkdir()
    (tmp_path / "B" / ".env").write_text("B_SETTING=b-value\n")
    path = tmp_path / "envscope.yaml"
    path.write_text("launch_home: A\nhomes: {b: B}\n")
    for key in list(os.environ):
        monkeypatch.delenv(key)
    for key, value in {
        "PATH": "/usr/bin:/bin",
        "ENVSCOPE_FINGERPRINT_KEY": "a-test-key-of-enough-length",
        "CHATX_BOT_TOKEN": LAUNCH_ONLY,
        "TELEGRAM_BOT_TOKEN": CATALOG_T1,
        "COPY_OF_TOKEN": CATALOG_T1,  # stripped as alias-of
        "COPY_OF_CHATX": LAUNCH_ONLY,  # a copy of a launch-only Tier 1 value
        "OPERATOR_SETTING": SHOWN,
    }.items():
        monkeypatch.setenv(key, value)
    return str(path)


@pytest.mark.parametrize("home", [None, "b"])
@pytest.mark.parametrize("surface", ["terminal", "credentialed", "mcp"])
@pytest.mark.parametrize("as_json", [False, True])
def test_show_values_masks_consulted_tier1_and_aliases(
    capsys: pytest.CaptureFixture[str],
    config: str,
    home: str | None,
    surface: str,
    as_json: bool,
) -> None:
    """Tier 1 of the target or launch policy, alias-of rows and copies: masked; others shown."""
    argv = ["--config", config, "explain", "--show-values", "--surface", surface]
    argv += ["--home", home] if home else []
    argv += ["--json"] if as_json else []
    assert main(argv) in (0, 1)
    out = capsys.readouterr().out
    for secret in (LAUNCH_ONLY, CATALOG_T1):
        assert secret not in out
    if as_json:
        values = json.loads(out)["values"]  # the child's env: a stripped key is not in it
        assert values.get("OPERATOR_SETTING") == (None if surface == "mcp" else SHOWN)
        for key in ("CHATX_BOT_TOKEN", "TELEGRAM_BOT_TOKEN", "COPY_OF_TOKEN", "COPY_OF_CHATX"):
            assert values.get(key, "********") == "********", key
    else:
        assert SHOWN in out


@pytest.mark.parametrize("home", [None, "b"])
def test_show_values_json_is_the_childs_env_with_case_twins(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    config: str,
    tmp_path: Path,
    home: str | None,
) -> None:
    """--json --show-values keys each spelling the child gets (both case twins): run -- env's."""
    monkeypatch.setenv("Mixed_Case", "lower-twin")
    monkeypatch.setenv("MIXED_CASE", "upper-twin")
    argv = ["--config", config, "explain", "--show-values", "--json"]
    argv += ["--home", home] if home else []
    assert main(argv) in (0, 1)
    values = json.loads(capsys.readouterr().out)["values"]
    assert (values["Mixed_Case"], values["MIXED_CASE"]) == ("lower-twin", "upper-twin")
    dump = tmp_path / "env.json"
    code = "import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], 'w'))"
    run = ["--config", config, "run", *(["--home", home] if home else [])]
    monkeypatch.setattr(os, "execvpe", lambda _f, _a, env: dump.write_text(json.dumps(env)))
    assert main([*run, "--", sys.executable, "-c", code, str(dump)]) == 0
    child = json.loads(dump.read_text())
    assert {k: v for k, v in values.items() if v != "********"} == {
        k: v for k, v in child.items() if values.get(k) != "********"
    }


B_OWN_PLATFORM = "b-own-chatx-value-123"  # B's value under a name A's plugin declares Tier 1


@pytest.mark.parametrize("copy_key", ["MY_COPY", "my_copy"])
@pytest.mark.parametrize("surface", ["terminal", "credentialed", "mcp"])
@pytest.mark.parametrize("as_json", [False, True])
def test_show_values_masks_a_routed_profiles_own_copies_of_launch_secrets(
    capsys: pytest.CaptureFixture[str],
    config: str,
    tmp_path: Path,
    copy_key: str,
    surface: str,
    as_json: bool,
) -> None:
    """B's own copy of a launch Tier 1 value, and its value under a launch Tier 1 name: masked.

    The routed child keeps both (they are B's own: compared with B's secrets
    only), but the auditor's view is the host's: a launch secret's value, or a
    value under a name the launch policy declares Tier 1, is never printed.
    """
    (tmp_path / "B" / ".env").write_text(
        f"B_SETTING=b-value\n{copy_key}={CATALOG_T1}\nCHATX_BOT_TOKEN={B_OWN_PLATFORM}\n"
    )
    argv = ["--config", config, "explain", "--show-values", "--home", "b", "--surface", surface]
    argv += ["--json"] if as_json else []
    assert main(argv) in (0, 1)
    out = capsys.readouterr().out
    for secret in (CATALOG_T1, B_OWN_PLATFORM, LAUNCH_ONLY):
        assert secret not in out, secret
    assert "b-value" in out or surface == "mcp"


def test_the_warning_on_a_routed_profiles_value_under_a_launch_declared_name(
    capsys: pytest.CaptureFixture[str], config: str, tmp_path: Path
) -> None:
    """B's own CHATX_BOT_TOKEN: kept, and the warning says the launch policy declares the name.

    On a credentialed child: a terminal child loses it by name context (a token's name, a
    token's value), as it loses B's own Tier 2 credentials."""
    (tmp_path / "B" / ".env").write_text(f"CHATX_BOT_TOKEN={B_OWN_PLATFORM}\n")
    argv = ["--config", config, "explain", "--home", "b", "--surface", "credentialed"]
    assert main(argv) in (0, 1)
    out = capsys.readouterr().out
    warning = next(line for line in out.splitlines() if line.startswith("warning: CHATX_BOT"))
    assert "launch home's policy declares the name" in warning
    assert "no rule declares it" not in warning
    assert B_OWN_PLATFORM not in out
