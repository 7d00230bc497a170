"""The command line: every command in text and --json, exit codes, no values by default."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envscope.cli import main

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "fixtures" / "demo"
CONFIG = str(DEMO / "envscope.yaml")
CLEAN_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/home/operator", "LANG": "C.UTF-8"}


def demo_values() -> list[str]:
    """Every value (8+ characters) written in the demo's dotenv files."""
    values = []
    for path in DEMO.rglob("*"):
        if path.is_file() and (path.name == ".env" or path.suffix == ".env"):
            for line in path.read_text().splitlines():
                if "=" in line and not line.startswith("#"):
                    value = line.split("=", 1)[1]
                    if len(value) >= 8:
                        values.append(value)
    return values


@pytest.fixture(autouse=True)
def clean_process_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI reads os.environ: give it a small fixed one with a fingerprint key."""
    for key in list(os.environ):
        monkeypatch.delenv(key)
    for key, value in {
        **CLEAN_ENV,
        "ENVSCOPE_FINGERPRINT_KEY": "test-key-for-the-cli-suite",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(ROOT)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run main() in process and return (exit code, stdout, stderr)."""
    code = main(["--config", CONFIG, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_no_values(text: str) -> None:
    """No demo value appears in some output."""
    for value in demo_values():
        assert value not in text


@pytest.mark.parametrize("surface", ["terminal", "credentialed", "mcp", "script", "worker"])
def test_explain_text(capsys: pytest.CaptureFixture[str], surface: str) -> None:
    """explain prints one row per key with action, stage, reason, origin, a summary, no values."""
    code, out, err = run_cli(capsys, "explain", "--home", "work", "--surface", surface)
    assert code == 0, err
    rows = {line.split()[0]: line.split() for line in out.splitlines()[3:] if line.strip()}
    assert rows["TELEGRAM_BOT_TOKEN"][1:4] == ["stripped", "residue", "launch-residue"]
    assert "fixtures/demo/launch/.env" in rows["TELEGRAM_BOT_TOKEN"][-1]
    openai = rows["OPENAI_API_KEY"][1]
    assert openai == ("kept" if surface == "credentialed" else "stripped")
    assert "PARTIAL (failing closed)" in out
    assert "broken/plugin.yaml:3: requires_env" in out
    assert "envscope removed" in out
    assert "\x1b[" not in out  # not a TTY: no colour
    assert_no_values(out + err)


def test_explain_script_surface_policy(capsys: pytest.CaptureFixture[str]) -> None:
    """The demo's script policy (inherit core, include DEFAULT_*, set PAGER) shows in the trace."""
    code, out, _ = run_cli(capsys, "explain", "--home", "work", "--surface", "script", "--json")
    keys = json.loads(out)["keys"]
    assert code == 0
    assert keys["PAGER"]["reason"] == "surface-set"
    assert keys["DEFAULT_MODEL"]["in_child"] is True
    assert keys["ENVSCOPE_FINGERPRINT_KEY"]["in_child"] is False


def test_explain_json_is_stable_and_valueless(capsys: pytest.CaptureFixture[str]) -> None:
    """explain --json is sorted, versioned, holds fingerprints and never a value."""
    code, out, _ = run_cli(capsys, "explain", "--home", "work", "--json")
    again = run_cli(capsys, "explain", "--home", "work", "--json")[1]
    data = json.loads(out)
    assert code == 0
    assert out == again
    assert data["envscope_snapshot"] == 2
    assert data["home"] == "work"
    assert data["routed"] is True
    assert data["policy"]["complete"] is False
    assert set(data["keys"]["CHATX_WORKSPACE"]) == {
        "in_child", "action", "stage", "reason", "origin", "fingerprint",
    }  # fmt: skip
    assert len(data["keys"]["CHATX_WORKSPACE"]["fingerprint"]) == 16
    assert "values" not in data
    assert_no_values(out)


def test_explain_show_values_masks_tier1(capsys: pytest.CaptureFixture[str]) -> None:
    """--show-values prints values, but Tier 1 values are masked even then."""
    code, out, _ = run_cli(capsys, "explain", "--home", "work", "--show-values")
    assert code == 0
    assert "acme-workspace-01" in out
    assert "fake-demo-telegram-token" not in out
    assert "fake-demo-chatx-signing" not in out
    line = next(x for x in out.splitlines() if x.startswith("TELEGRAM_BOT_TOKEN"))
    assert line.endswith("********")
    code, out, _ = run_cli(capsys, "explain", "--home", "work", "--show-values", "--json")
    values = json.loads(out)["values"]
    assert "TELEGRAM_BOT_TOKEN" not in values  # the child's env only: it does not get it
    assert values["CHATX_WORKSPACE"] == "acme-workspace-01"


def test_explain_strict_exits_1_on_problems(capsys: pytest.CaptureFixture[str]) -> None:
    """explain --strict exits 1 when the policy is partial."""
    assert run_cli(capsys, "explain", "--home", "work", "--strict")[0] == 1
    assert run_cli(capsys, "explain", "--home", "personal", "--strict")[0] == 0


def test_snapshot_and_diff(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """snapshot writes JSON; diff of two homes lists added/removed/changed with rules, exit 1."""
    a, b = tmp_path / "work.json", tmp_path / "personal.json"
    assert run_cli(capsys, "snapshot", "--home", "work", "-o", str(a))[0] == 0
    assert run_cli(capsys, "snapshot", "--home", "personal", "-o", str(b))[0] == 0
    assert_no_values(a.read_text() + b.read_text())
    code, out, _ = run_cli(capsys, "diff", str(a), str(b))
    assert code == 1
    rows = {line.split()[0]: line for line in out.splitlines()[3:-2] if line.strip()}
    assert rows["CHATX_WORKSPACE"].split()[1] == "removed"
    assert rows["DEFAULT_MODEL"].split()[1] == "changed"
    assert "scope-value" in rows["DEFAULT_MODEL"]
    assert rows["ENVSCOPE_HOME"].split()[1] == "changed"  # each child is told its own home
    assert out.splitlines()[-1] == "0 added, 1 removed, 2 changed"
    assert_no_values(out)
    code, out, _ = run_cli(capsys, "diff", str(a), str(a))
    assert (code, out.splitlines()[-1]) == (0, "no differences")


def test_diff_live_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    """diff builds home:NAME[/surface] live; --json lists differences."""
    code, out, _ = run_cli(capsys, "diff", "home:work/terminal", "home:work/credentialed", "--json")
    data = json.loads(out)
    assert code == 1
    assert [(d["key"], d["change"]) for d in data["differences"]] == [("OPENAI_API_KEY", "added")]
    sides = data["differences"][0]
    assert sides["a"]["reason"] == "tier2"
    assert sides["b"] == {
        "action": "kept", "stage": "sanitize", "reason": "tier2-inherited",
        "origin": {"kind": "catalog", "detail": "model-providers: OpenAI API key",
                   "path": "envscope/policy/data/catalog.yaml", "line": None},
    }  # fmt: skip


def test_diff_reads_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """diff - reads one snapshot from stdin."""
    snap = tmp_path / "s.json"
    run_cli(capsys, "snapshot", "--home", "work", "-o", str(snap))
    monkeypatch.setattr(sys, "stdin", io.StringIO(snap.read_text()))
    assert run_cli(capsys, "diff", "-", str(snap))[0] == 0


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["diff", "nope.json", "nope.json"], "cannot read snapshot"),
        (["diff", "home:work/bogus", "home:work"], "unknown surface"),
        (["explain", "--home", "work", "--surface", "bogus"], ""),
        (["run", "--home", "work"], "no command given"),
    ],
)
def test_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    """Usage and I/O errors exit 2 with a message on stderr."""
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    assert needle in err


def test_not_a_snapshot(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A JSON file that is not a snapshot is a usage error naming it."""
    bad = tmp_path / "x.json"
    bad.write_text('{"hello": 1}')
    code, _, err = run_cli(capsys, "diff", str(bad), str(bad))
    assert code == 2
    assert str(bad) in err


def test_missing_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Without --config, $ENVSCOPE_CONFIG or ./envscope.yaml, commands exit 2."""
    os.chdir(tmp_path)
    assert main(["explain"]) == 2
    assert "no host config" in capsys.readouterr().err


def test_scan_homes(capsys: pytest.CaptureFixture[str]) -> None:
    """scan lists declared secrets per manifest and each problem with file:line; exit 1."""
    code, out, _ = run_cli(capsys, "scan")
    assert code == 1
    assert "work:" in out
    assert "chatx/plugin.yaml: CHATX_BOT_TOKEN, CHATX_SIGNING_SECRET" in out
    assert "telegram/plugin.yaml: TELEGRAM_BOT_TOKEN" in out
    assert "broken/plugin.yaml:3: requires_env: must be a list" in out
    assert out.splitlines()[-1] == "1 problem"
    code, out, _ = run_cli(capsys, "scan", "personal", "--json")
    data = json.loads(out)
    assert code == 0
    assert data["reports"][0]["problems"] == []


def test_scan_plugin_dir(capsys: pytest.CaptureFixture[str]) -> None:
    """scan --plugin lints one plugin directory without a config."""
    good = DEMO / "profiles" / "work" / "plugins" / "platforms" / "chatx"
    bad = DEMO / "profiles" / "work" / "plugins" / "broken"
    assert main(["scan", "--plugin", str(good)]) == 0
    assert "CHATX_SIGNING_SECRET" in capsys.readouterr().out
    assert main(["scan", "--plugin", str(bad), "--json"]) == 1
    problem = json.loads(capsys.readouterr().out)["reports"][0]["problems"][0]
    assert (problem["line"], problem["field"]) == (3, "requires_env")
    assert main(["scan", "--plugin", str(DEMO)]) == 2


def test_run_execs_with_child_env(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """run execs the command with exactly the env a child would get."""
    seen: dict[str, object] = {}

    def fake_exec(file: str, args: list[str], env: dict[str, str]) -> None:
        seen.update(file=file, args=args, env=env)

    monkeypatch.setattr(os, "execvpe", fake_exec)
    code, _, _ = run_cli(capsys, "run", "--home", "work", "--", "printenv", "X")
    assert code == 0
    assert seen["file"] == "printenv"
    assert seen["args"] == ["printenv", "X"]
    env = seen["env"]
    assert isinstance(env, dict)
    assert env["CHATX_WORKSPACE"] == "acme-workspace-01"
    assert "TELEGRAM_BOT_TOKEN" not in env
    assert "OPENAI_API_KEY" not in env


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    """--help exits 0 and names every command."""
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("explain", "snapshot", "diff", "scan", "run", "check-spawns"):
        assert command in out


def test_console_script_end_to_end(tmp_path: Path) -> None:
    """The installed console script runs a real child through `envscope run`."""
    script = shutil.which("envscope", path=str(Path(sys.executable).parent))
    assert script is not None
    env = {**CLEAN_ENV, "ENVSCOPE_FINGERPRINT_KEY": "k-of-sixteen-chars", "ENVSCOPE_CONFIG": CONFIG}
    probe = "import os, json; print(json.dumps(sorted(os.environ)))"
    out = subprocess.run(
        [script, "run", "--home", "work", "--", sys.executable, "-c", probe],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    keys = set(json.loads(out.stdout))
    assert "CHATX_WORKSPACE" in keys
    assert "TELEGRAM_BOT_TOKEN" not in keys
    assert "ENVSCOPE_FINGERPRINT_KEY" not in keys
    assert_no_values(out.stdout + out.stderr)


def test_module_entry_point() -> None:
    """``python -m envscope`` runs the CLI."""
    env = {**CLEAN_ENV, "ENVSCOPE_FINGERPRINT_KEY": "k-of-sixteen-chars"}
    out = subprocess.run(
        [sys.executable, "-m", "envscope", "--config", CONFIG, "explain", "--home", "work"],
        capture_output=True, text=True, check=False, env=env, cwd=ROOT,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("envscope explain: terminal child for work (routed)")


def test_check_spawns(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """check-spawns lists bypassing spawn sites with file:line (exit 1), clean code exits 0."""
    spawns = ROOT / "fixtures" / "spawns"
    assert main(["check-spawns", str(spawns / "clean.py")]) == 0
    capsys.readouterr()
    assert main(["check-spawns", str(spawns)]) == 1
    out = capsys.readouterr().out
    assert "legacy_cron.py:" in out
    assert "bypass the factory" in out.splitlines()[-1]
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    assert main(["check-spawns", str(broken)]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("envscope: error: ")
    assert "broken.py:1: cannot parse" in err
    assert "broken.py" not in out


def test_explain_strips_credential_formats_unless_known_safe(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An undeclared variable holding a credential format is stripped (value-shape), its
    format named, never its value; the config's known_safe keeps it."""
    from envscope.policy.formats import github_checksum

    body = ("a1B2c3D4e5F6g7H8i9J0" * 2)[:30]  # a classic PAT's body and its CRC32
    monkeypatch.setenv("DEPLOY_HELPER", "ghp_" + body + github_checksum(body))
    code, out, _ = run_cli(capsys, "explain", "--home", "work", "--json")
    data = json.loads(out)
    assert code == 0
    row = data["keys"]["DEPLOY_HELPER"]
    assert row["in_child"] is False
    assert row["reason"] == "value-shape"
    assert "github-classic-pat" in row["origin"]["detail"]
    assert "ghp_" not in out
    config = tmp_path / "envscope.yaml"
    config.write_text(
        (DEMO / "envscope.yaml").read_text().replace("./", f"{DEMO}/")
        + "known_safe: [DEPLOY_HELPER]\n"
    )
    assert main(["--config", str(config), "explain", "--home", "work", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["keys"]["DEPLOY_HELPER"]["in_child"] is True


def test_explain_name_shape_warnings_strict_and_silencing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A kept look-alike is warned in text and JSON (key, kind); --strict exits 1;
    the config's known_safe silences it. A password name with a password's value is no
    look-alike: name context strips it (and the config's known_safe keeps it, warned no more)."""
    monkeypatch.setenv("MY_APP_KEY", "plain-operator-value")
    monkeypatch.setenv("SERVICE_PASSWORD", "pw-of-db")
    code, out, _ = run_cli(capsys, "explain", "--home", "personal", "--json")
    warnings = json.loads(out)["warnings"]
    assert code == 0
    found = {(w["key"], w["kind"]) for w in warnings}
    assert ("MY_APP_KEY", "credential-suffix") in found
    assert "SERVICE_PASSWORD" not in {key for key, _ in found}
    assert "plain-operator-value" not in out
    assert "pw-of-db" not in out
    code, text, _ = run_cli(capsys, "explain", "--home", "personal")
    assert "MY_APP_KEY: the name looks like a credential (credential-suffix)" in text
    assert re.search(
        r"SERVICE_PASSWORD +stripped +sanitize +name-context +name-context: PASSWORD", text
    )
    assert "pw-of-db" not in text
    assert run_cli(capsys, "explain", "--home", "personal", "--strict")[0] == 1
    config = tmp_path / "envscope.yaml"
    config.write_text(
        (DEMO / "envscope.yaml").read_text().replace("./", f"{DEMO}/")
        + "known_safe: [my_app_key, SERVICE_PASSWORD]\n"
    )
    assert main(["--config", str(config), "explain", "--home", "personal", "--strict"]) == 0
    assert "looks like a credential" not in capsys.readouterr().out
