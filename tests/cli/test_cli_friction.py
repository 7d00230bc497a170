"""CLI friction: unknown homes are errors; --config before or after."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envscope.cli import main
from tests.cli.test_cli import CONFIG, ROOT, clean_process_env  # noqa: F401 - the autouse fixture


@pytest.mark.parametrize(
    "argv",
    [
        ["explain", "--home", "nosuch"],
        ["snapshot", "--home", "nosuch", "-o", "-"],
        ["run", "--home", "nosuch", "--", "true"],
        ["diff", "home:nosuch", "home:work"],
        ["scan", "nosuch"],
    ],
    ids=["explain", "snapshot", "run", "diff", "scan"],
)
def test_unknown_home_is_a_usage_error_naming_both(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """A home that is neither configured nor a directory exits 2 naming the homes and the path."""
    code = main(["--config", CONFIG, *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert "'nosuch' is neither a home of" in err
    assert "(launch, personal, work)" in err
    assert f"nor an existing directory ({ROOT / 'nosuch'})" in err


@pytest.mark.parametrize("home", ["launch", "work", "fixtures/demo/profiles/work"])
def test_known_homes_and_directories_resolve(capsys: pytest.CaptureFixture[str], home: str) -> None:
    """A configured name, ``launch`` and an existing directory all build."""
    assert main(["--config", CONFIG, "explain", "--home", home, "--json"]) == 0
    capsys.readouterr()


def _exec_stub(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    ran: list[str] = []
    monkeypatch.setattr(os, "execvpe", lambda file, args, env: ran.append(file))
    return ran


@pytest.mark.parametrize(
    "command",
    [
        ["explain", "--home", "work", "--json"],
        ["snapshot", "--home", "work", "-o", "-"],
        ["run", "--home", "work", "--", "true"],
        ["diff", "home:work", "home:personal"],
        ["scan", "work"],
    ],
    ids=["explain", "snapshot", "run", "diff", "scan"],
)
def test_config_before_or_after_the_subcommand(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    """``--config`` before the subcommand and right after it give the same result."""
    ran = _exec_stub(monkeypatch)
    before = main(["--config", CONFIG, *command]), capsys.readouterr()
    after = main([command[0], "--config", CONFIG, *command[1:]]), capsys.readouterr()
    assert before == after
    assert before[0] in (0, 1)  # diff and scan exit 1 on findings
    assert len(ran) == (2 if command[0] == "run" else 0)


def test_config_after_the_subcommand_wins(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Given in both places, the subcommand's ``--config`` is the one read."""
    missing = str(tmp_path / "absent.yaml")
    assert main(["--config", missing, "explain", "--config", CONFIG, "--json"]) == 0
    capsys.readouterr()
    assert main(["--config", CONFIG, "explain", "--config", missing, "--json"]) == 2
    assert "absent.yaml" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "missing"),
    [
        (["diff", "-", "--", "--"], "B"),
        (["diff", "--", "-", "--"], "B"),
        (["diff", "--", "--", "--"], "B"),
    ],
    ids=["after-the-first", "after-the-separator", "all-separators"],
)
def test_a_lone_separator_is_not_an_operand(
    capsys: pytest.CaptureFixture[str], argv: list[str], missing: str
) -> None:
    """``diff - -- --`` (argparse fills B with ``[]``): exit 2 naming the operand, no traceback."""
    code = main(["--config", CONFIG, *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert f"diff: the operand {missing} is missing" in err
    assert "Traceback" not in err


def test_an_operand_after_the_separator_is_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``diff -- A B``: the operands after ``--`` are read as given (a missing file: exit 2)."""
    code = main(["--config", CONFIG, "diff", "--", str(tmp_path / "a"), str(tmp_path / "b")])
    err = capsys.readouterr().err
    assert code == 2
    assert str(tmp_path / "a") in err
    assert "is missing" not in err
