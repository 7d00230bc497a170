"""A newcomer runs the README's command-line block as written: no traceback, an exit code
the docs define, and the demo's own commands succeed."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from envscope.cli import main

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> tuple[dict[str, str], list[list[str]]]:
    """The ``export``s and the ``envscope`` command lines of the README's command-line block."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## The command line", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None
    exports: dict[str, str] = {}
    commands = []
    for line in block.group(1).splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["export"]:
            name, _, value = words[1].partition("=")
            exports[name] = value
        elif words[:1] == ["envscope"]:
            commands.append(words[1:])
    return exports, commands


def test_the_block_is_found() -> None:
    exports, commands = readme_commands()
    assert "ENVSCOPE_CONFIG" in exports
    assert ["explain", "--home", "work", "--only", "removed"] in commands


@pytest.mark.parametrize("argv", readme_commands()[1], ids=" ".join)
def test_each_readme_command_runs_without_a_traceback(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    for name, value in readme_commands()[0].items():
        monkeypatch.setenv(name, value)
    try:
        code = main(argv)
    except SystemExit as exc:  # --version exits through argparse
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert code in (0, 1, 2)
    if argv[:1] in (["explain"], ["--version"]) and "--pid" not in argv:  # the demo's own
        assert code == 0, err
