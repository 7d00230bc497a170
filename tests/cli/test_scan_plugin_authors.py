"""What a plugin author sees from ``envscope scan``: every problem, a tab named, the file itself.

A manifest with several problems reports each (text and ``--json``, through
``--plugin`` and through a home's scan), each with its own line and field; a
tab where YAML wants spaces is named as a tab with its line and column;
``--plugin DIR/plugin.yaml`` is the same as ``--plugin DIR``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscope.cli import main
from envscope.errors import ManifestError
from envscope.manifests._schema import parse_manifest

# (manifest, the (line, field) of each problem, in the file's order)
MANY: dict[str, tuple[str, list[tuple[int, str]]]] = {
    "two bad entries": (
        'requires_env:\n  - name: "BAD NAME"\n    secret: maybe\n  - name: ""\n    secret: 3\n',
        [(2, "requires_env[0].name"), (3, "requires_env[0].secret"),
         (4, "requires_env[1].name"), (5, "requires_env[1].secret")],
    ),
    "a bad name among good ones": (
        "requires_env:\n  - GOOD_TOKEN\n  - name: A=B\n    secret: true\n  - OTHER_KEY\n",
        [(3, "requires_env[1].name")],
    ),
    "bad at the top and in a list": (
        "kind: 7\nrequires_env:\n  - name: X Y\n",
        [(1, "kind"), (3, "requires_env[0].name")],
    ),
}  # fmt: skip


def _write(where: Path, text: str) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    (where / "plugin.yaml").write_text(text)
    return where


@pytest.mark.parametrize("case", MANY)
def test_every_problem_of_a_manifest_is_an_error_of_its_own(case: str) -> None:
    text, expected = MANY[case]
    with pytest.raises(ManifestError) as raised:
        parse_manifest(text.encode(), "plugin.yaml")
    problems = raised.value.problems
    assert [(p.line, p.field) for p in problems] == expected
    assert all(p.more == () for p in problems[1:])
    assert all("more problem" not in p.message for p in problems)
    count = len(expected) - 1
    assert ("more problem" in str(raised.value)) == (count > 0)


@pytest.mark.parametrize("case", MANY)
def test_scan_reports_each_problem_in_text_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    text, expected = MANY[case]
    plugin = _write(tmp_path / "acme", text)
    assert main(["scan", "--plugin", str(plugin)]) == 1
    out = capsys.readouterr().out
    shown = [line for line in out.splitlines() if line.strip().startswith("problem:")]
    assert len(shown) == len(expected)
    for row, (line, field) in zip(shown, expected, strict=True):
        assert f":{line}: {field}:" in row
    assert "more problem" not in out
    assert main(["scan", "--plugin", str(plugin), "--json"]) == 1
    problems = json.loads(capsys.readouterr().out)["reports"][0]["problems"]
    assert [(p["line"], p["field"]) for p in problems] == expected


def test_a_homes_scan_reports_each_problem_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, expected = MANY["two bad entries"]
    home = tmp_path / "home"
    _write(home / "plugins" / "platforms" / "acme", text)
    (tmp_path / "envscope.yaml").write_text(f"launch_home: {home}\n")
    assert main(["scan", "--config", str(tmp_path / "envscope.yaml"), "--json"]) == 1
    problems = json.loads(capsys.readouterr().out)["reports"][0]["problems"]
    assert [(p["line"], p["field"]) for p in problems] == expected


TABS = {
    "an indented key": ("requires_env:\n  - name: A\n\t  secret: true\n", 3, 1),
    "a list under a key": ("requires_env:\n\t- A_TOKEN\n", 2, 1),
    "after a dash": ("requires_env:\n  - A_TOKEN\n  -\tB_TOKEN\n", 3, 4),
    "a key after a tab": ("name: demo\n\tkind: platform\n", 2, 1),
}


@pytest.mark.parametrize("case", TABS)
def test_a_tab_is_named_with_its_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    text, line, column = TABS[case]
    plugin = _write(tmp_path / "acme", text)
    assert main(["scan", "--plugin", str(plugin), "--json"]) == 1
    (problem,) = json.loads(capsys.readouterr().out)["reports"][0]["problems"]
    assert problem["line"] == line
    assert f"a tab character at column {column}" in problem["message"]


@pytest.mark.parametrize("name", ["plugin.yaml", "plugin.yml"])
@pytest.mark.parametrize("place", ["plugins/platforms/acme", "plugins/acme", "src/acme"])
def test_the_manifest_file_itself_scans_as_its_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, place: str
) -> None:
    plugin = tmp_path / place
    plugin.mkdir(parents=True)
    (plugin / name).write_text("kind: platform\nrequires_env:\n  - name: ACME_TOKEN\n")
    by_dir = main(["scan", "--plugin", str(plugin), "--json"]), capsys.readouterr().out
    by_file = main(["scan", "--plugin", str(plugin / name), "--json"]), capsys.readouterr().out
    assert by_file == by_dir
    assert by_dir[0] == 0
    assert "ACME_TOKEN" in by_dir[1]


def test_another_file_is_a_usage_error_naming_what_it_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "manifest.yaml").write_text("requires_env: [A_TOKEN]\n")
    assert main(["scan", "--plugin", str(tmp_path / "manifest.yaml")]) == 2
    err = capsys.readouterr().err
    assert "--plugin takes a plugin directory or its plugin.yaml" in err
