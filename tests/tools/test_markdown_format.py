"""``--format markdown`` renders as the tables the text prints, whatever a key holds.

Each command's markdown is rendered (markdown-it, CommonMark with GFM tables,
as a step summary is): one table row per row of the text report, every cell
renders to its text exactly, and a key holding markdown or HTML (a column
break, emphasis, a link, a tag, an entity) stays literal text.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from envscope.cli import main
from envscope.tools._markdown import md_text
from tests.cli.test_cli import CONFIG, clean_process_env  # noqa: F401 - autouse

MD = MarkdownIt("commonmark").enable("table")
EVIL = ["A|B", "*EM*", "_U_", "[L](http://x)", "<script>X</script>", "&amp;", "`C`", "~S~", "\\Z"]


def _cells(rendered: str) -> list[list[str]]:
    rows = re.findall(r"<tr>(.*?)</tr>", rendered, re.S)
    return [[html.unescape(c) for c in re.findall(r"<t[hd]>(.*?)</t[hd]>", r, re.S)] for r in rows]


@pytest.mark.parametrize("text", EVIL)
def test_a_cell_renders_to_its_text_exactly(text: str) -> None:
    rendered = MD.render(f"| H |\n| --- |\n| {md_text(text)} |\n")
    assert _cells(rendered) == [["H"], [text]]
    assert "<script" not in rendered
    assert "<em>" not in rendered
    assert "<a " not in rendered


def test_explain_markdown_has_a_row_per_decision(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for i, key in enumerate(EVIL):
        monkeypatch.setenv(f"K{i}{key}", "v")
    assert main(["--config", CONFIG, "explain", "--home", "work", "--json"]) == 0
    keys = json.loads(capsys.readouterr().out)["keys"]
    assert main(["--config", CONFIG, "explain", "--home", "work", "--format", "markdown"]) == 0
    rendered = MD.render(capsys.readouterr().out)
    header, *rows = _cells(rendered)
    assert header == ["KEY", "ACTION", "STAGE", "REASON", "ORIGIN"]
    assert [row[0] for row in rows] == list(keys)
    assert all(len(row) == 5 for row in rows)
    assert "<script" not in rendered


def test_diff_and_check_spawns_markdown_render_their_rows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--config", CONFIG, "diff", "home:work", "home:personal"]
    assert main([*argv, "--json"]) == 1
    differences = json.loads(capsys.readouterr().out)["differences"]
    assert main([*argv, "--format", "markdown"]) == 1
    header, *rows = _cells(MD.render(capsys.readouterr().out))
    assert header == ["KEY", "CHANGE", "WHY"]
    assert [(r[0], r[1]) for r in rows] == [(d["key"], d["change"]) for d in differences]
    spawns = str(Path(CONFIG).parents[1] / "spawns" / "terminal_tool.py")
    assert main(["check-spawns", spawns, "--json"]) == 1
    sites = json.loads(capsys.readouterr().out)["sites"]
    assert main(["check-spawns", spawns, "--format", "markdown"]) == 1
    header, *rows = _cells(MD.render(capsys.readouterr().out))
    assert header == ["WHERE", "CALL", "REASON"]
    assert [r[1] for r in rows] == [s["call"] for s in sites]


def test_no_differences_is_said_in_markdown_too(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--config", CONFIG, "diff", "home:work", "home:work", "--format", "markdown"]
    assert main(argv) == 0
    assert "no differences" in capsys.readouterr().out


@pytest.mark.parametrize("command", [["explain"], ["diff", "home:work", "home:work"]])
def test_json_and_markdown_disagree(capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    assert main(["--config", CONFIG, *command, "--json", "--format", "markdown"]) == 2
    assert "--json and --format markdown disagree" in capsys.readouterr().err
