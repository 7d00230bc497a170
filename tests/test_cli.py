"""The first CLI command, ``plan``, on the demo fixtures (no value is ever printed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from envscope.cli import main

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo"
DEMO_ARGS = [
    "plan",
    "--clean-env",
    "--launch-home",
    str(DEMO / "launch"),
    "--managed",
    str(DEMO / "managed.env"),
    "--bundled",
    str(DEMO / "bundled"),
    "--home",
    str(DEMO / "profiles" / "work"),
]


def demo_values() -> list[str]:
    """Every value written in the demo's dotenv files."""
    values = []
    for path in DEMO.rglob("*"):
        if path.is_file() and (path.name == ".env" or path.suffix == ".env"):
            for line in path.read_text().splitlines():
                if "=" in line and not line.startswith("#"):
                    values.append(line.split("=", 1)[1])
    return values


@pytest.mark.parametrize("surface", ["terminal", "credentialed"])
def test_plan_on_demo(capsys: pytest.CaptureFixture[str], surface: str) -> None:
    """plan prints one row per key with its reason, the summary and the problems, no values."""
    assert main([*DEMO_ARGS, "--surface", surface]) == 0
    out = capsys.readouterr().out
    assert "TELEGRAM_BOT_TOKEN" in out
    assert "launch-residue" in out
    assert "CHATX_SIGNING_SECRET" in out
    assert "PARTIAL (failing closed)" in out
    assert "broken/plugin.yaml:3" in out
    for value in demo_values():
        if len(value) >= 8:
            assert value not in out
    openai = next(line for line in out.splitlines() if line.startswith("OPENAI_API_KEY "))
    assert openai.split()[1] == ("kept" if surface == "credentialed" else "stripped")


def test_plan_error_exit_code(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """An envscope error is printed to stderr with exit code 2."""
    args = ["plan", "--clean-env", "--launch-home", str(tmp_path), "--managed", str(tmp_path / "x")]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert str(tmp_path / "x") in captured.err


def test_module_entry_point() -> None:
    """``python -m envscope`` runs the CLI."""
    out = subprocess.run(
        [sys.executable, "-m", "envscope", *DEMO_ARGS], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("envscope plan: terminal child for")
