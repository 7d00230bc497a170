"""Packaging: the metadata PyPI shows, the license, the extras the docs need, the hook, the demo.

``tools/check-dist.sh`` builds the sdist and the wheel, runs ``twine check``, and
runs the wheel (no extras) in a fresh venv; this module pins what can be read here.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from envscope.cli._parser import parser

tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the metadata is the same on 3.10

ROOT = Path(__file__).resolve().parent.parent
PROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_version_is_one_number() -> None:
    """`envscope --version` (envscope.__version__) is the version the package metadata says."""
    import envscope

    assert envscope.__version__ == PROJECT["version"]


def test_license_file_matches_the_metadata() -> None:
    """LICENSE is the MIT text pyproject.toml declares, and it is shipped as a license file."""
    text = (ROOT / "LICENSE").read_text()
    assert PROJECT["license"] == "MIT"
    assert text.startswith("MIT License")
    assert "Permission is hereby granted, free of charge" in text
    assert PROJECT["license-files"] == ["LICENSE"]


@pytest.mark.parametrize("name", ["Homepage", "Documentation", "Source", "Issues", "Changelog"])
def test_project_urls(name: str) -> None:
    """Each project URL PyPI lists is an absolute https URL."""
    assert PROJECT["urls"][name].startswith("https://")


def test_classifiers_follow_requires_python() -> None:
    """The Python classifiers start at requires-python's floor; the package says it is typed."""
    floor = re.fullmatch(r">=3\.(\d+)", PROJECT["requires-python"])
    assert floor is not None
    minors = sorted(
        int(m[1]) for c in PROJECT["classifiers"] if (m := re.fullmatch(r".* :: 3\.(\d+)", c))
    )
    assert minors[0] == int(floor[1])
    assert "Typing :: Typed" in PROJECT["classifiers"]
    assert "License :: OSI Approved :: MIT License" not in PROJECT["classifiers"]  # PEP 639


def test_readme_links_are_absolute() -> None:
    """README links survive on PyPI: no relative link into the repository."""
    links = re.findall(r"\]\(([^)]+)\)", (ROOT / "README.md").read_text())
    assert links
    relative = [link for link in links if not re.match(r"https://|#", link)]
    assert relative == []


def test_mcp_extra_floor_matches_the_docs() -> None:
    """The mcp extra allows no SDK the docs' examples cannot run on (mcp.server.mcpserver: 2.0)."""
    assert "from mcp.server.mcpserver import MCPServer" in (ROOT / "docs/spawning.md").read_text()
    extras = PROJECT["optional-dependencies"]
    assert extras["mcp"] == ["mcp>=2.0"]
    assert "mcp>=2.0" in extras["dev"]


def test_pre_commit_hook_runs_check_spawns() -> None:
    """.pre-commit-hooks.yaml's hook is `envscope check-spawns` over Python files, as the README
    says, and the command line accepts its entry with the file names pre-commit appends."""
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = hooks
    assert (hook["id"], hook["language"], hook["types"]) == (
        "envscope-check-spawns", "python", ["python"],
    )  # fmt: skip
    program, *args = shlex.split(hook["entry"])
    assert program in PROJECT["scripts"]
    parsed = parser("0").parse_args([*args, "a.py", "b.py"])
    assert (parsed.command, parsed.paths) == ("check-spawns", ["a.py", "b.py"])
    assert f"id: {hook['id']}" in (ROOT / "README.md").read_text()


def test_demo_installs_no_dev_toolchain() -> None:
    """`make demo` installs envscope alone (its runtime deps), not the `[dev]` extras."""
    makefile = (ROOT / "Makefile").read_text()
    demo = re.search(r"^demo: (?P<deps>.*)$", makefile, re.M)
    assert demo is not None
    stamp = demo["deps"].strip()
    assert stamp == "$(DEMO_STAMP)"
    rule = re.search(r"^\$\(DEMO_STAMP\):.*\n((?:\t.*\n)+)", makefile, re.M)
    assert rule is not None
    assert "pip install" in rule[1]
    assert "[dev]" not in rule[1]


def test_sdist_carries_the_test_suite() -> None:
    """MANIFEST.in grafts what `make test` needs (tools/check-dist.sh compares the files)."""
    manifest = (ROOT / "MANIFEST.in").read_text().split()
    for tree in ("tests", "fixtures", "docs", "benchmarks", "fuzz"):
        assert tree in manifest


def test_schemas_are_package_data() -> None:
    """The JSON Schemas are shipped in the wheel (package data of envscope.schemas)."""
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "envscope.schemas" in tool["packages"]
    assert tool["package-data"]["envscope.schemas"] == ["*.json"]
