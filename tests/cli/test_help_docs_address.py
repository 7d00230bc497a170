"""Every ``--help`` ends with the documentation's address: a pip install has no docs/."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from envscope.cli._parser import DOCS_URL, parser

ROOT = Path(__file__).resolve().parents[2]


def _parsers(top: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The command line's parsers by their command path: the top, each command, each sub."""
    found = {"envscope": top}
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                for path, inner in _parsers(sub).items():
                    found[f"{path.replace('envscope', 'envscope ' + name, 1)}"] = inner
    return found


PARSERS = _parsers(parser("0"))


def test_the_address_is_the_packages_documentation_url() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()  # no tomllib on 3.10
    assert re.search(r'^Documentation = "(.*)"$', pyproject, re.M)[1] == DOCS_URL  # type: ignore[index]


@pytest.mark.parametrize("path", sorted(PARSERS))
def test_each_help_ends_with_the_docs_address(
    path: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "60")  # wrapped: the address is never cut
    with pytest.raises(SystemExit):
        PARSERS[path].parse_args(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert out.endswith(f"Documentation: {DOCS_URL}/cli.md"), out[-200:]
    assert "See docs/" not in out


def test_the_commands_are_all_there() -> None:
    assert {"envscope", "envscope explain", "envscope sources check"} <= set(PARSERS)
    assert len(PARSERS) >= 9, sorted(PARSERS)
