"""A surface's ``set`` values are literal: one holding a ``${NAME}`` reference is refused.

The child would otherwise get ``${NAME}`` as written. The reference is found
by the dotenv reader's own scanner, so exactly the values a dotenv load would
expand are refused; the error names the key (and, from ``envscope.yaml``, the
file, line and field), never the value or a default.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import ConfigFileError, EnvValueError, Surface, SurfacePolicy
from envscope.cli.config import load_config
from envscope.files._dotenv import parse_dotenv, references

TOKEN = "tok-typed-as-a-default-0001"

# a value, and the names a dotenv load would expand in it
VALUES: list[tuple[str, list[str]]] = [
    ("${PATH}", ["PATH"]),
    ("/opt/bin:${PATH}", ["PATH"]),
    (f"${{PAGER_OPTS:-{TOKEN}}}", ["PAGER_OPTS"]),
    ("${A}${B}${A}", ["A", "B"]),
    ("${X:-}", ["X"]),
    ("${}", [""]),
    ("$PATH", []),
    ("cost: $5", []),
    ("${ unclosed", []),
    ("}{", []),
    ("$${", []),
    ("${X:+alt}", []),  # not a form python-dotenv expands: its ':' ends the name unread
    ("less -R", []),
]


@pytest.mark.parametrize(("value", "names"), VALUES)
def test_references_are_what_a_dotenv_load_expands(value: str, names: list[str]) -> None:
    """``references`` finds a name exactly when interpolation would replace it."""
    assert references(value) == names
    line = f'K="{value}"\n'
    expanded = parse_dotenv(line, path="x")["K"]
    literal = parse_dotenv(line, path="x", interpolate=False)["K"]
    assert (expanded != literal) is bool(names)


@pytest.mark.parametrize(("value", "names"), VALUES)
def test_a_python_surface_policy_refuses_a_reference(value: str, names: list[str]) -> None:
    """``SurfacePolicy(set_env=...)``: EnvValueError naming the key, never the value."""
    if not names:
        assert SurfacePolicy(set_env={"PAGER": value}).set_env["PAGER"] == value
        return
    with pytest.raises(EnvValueError) as info:
        SurfacePolicy(set_env={"PAGER": value})
    assert info.value.key == "PAGER"
    assert f"${{{names[0]}}}" in str(info.value)
    assert TOKEN not in str(info.value)


@pytest.mark.parametrize(("value", "names"), VALUES)
def test_envscope_yaml_refuses_a_reference_naming_file_line_and_field(
    tmp_path: Path, value: str, names: list[str]
) -> None:
    """From ``envscope.yaml``: ConfigFileError with the file, the line and ``surfaces.S.set.K``."""
    config = tmp_path / "envscope.yaml"
    quoted = value.replace("\\", "\\\\").replace('"', '\\"')
    config.write_text(
        f'launch_home: .\nsurfaces:\n  script:\n    set:\n      PAGER: "{quoted}"\n',
        encoding="utf-8",
    )
    if not names:
        host = load_config(str(config)).build_host({"PATH": "/usr/bin"})
        assert host.build_subprocess_env(surface=Surface.SCRIPT)["PAGER"] == value
        return
    with pytest.raises(ConfigFileError) as info:
        load_config(str(config))
    err = info.value
    assert (err.path, err.line, err.field) == (str(config), 5, "surfaces.script.set.PAGER")
    assert TOKEN not in str(err)


def test_a_glob_error_names_the_file_too(tmp_path: Path) -> None:
    """Any surface refusal from envscope.yaml names the file: a glob with whitespace too."""
    config = tmp_path / "envscope.yaml"
    config.write_text(
        'launch_home: .\nsurfaces:\n  script:\n    include: ["A B"]\n', encoding="utf-8"
    )
    with pytest.raises(ConfigFileError) as info:
        load_config(str(config))
    assert (info.value.line, info.value.field) == (4, "surfaces.script.include")
