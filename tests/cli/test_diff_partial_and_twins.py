"""``envscope diff`` never says "no differences" for what it could not compare.

A POSIX case twin is its own variable (a changed ``http_proxy`` beside an
unchanged ``HTTP_PROXY`` is a change, in every spelling pair and position),
and a side holding part of a build (``explain --json --key/--only``, or a
snapshot whose ``child`` outruns its ``keys``) is a usage error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from envscope.cli import main
from tests.cli.test_cli import CONFIG, clean_process_env  # noqa: F401 - autouse

TWINS = [("http_proxy", "HTTP_PROXY"), ("HTTP_PROXY", "http_proxy"), ("Api_Url", "API_URL")]


def _snapshot(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / name
    assert main(["--config", CONFIG, "snapshot", "-o", str(path)]) == 0
    capsys.readouterr()
    return path


@pytest.mark.parametrize(("changed", "steady"), TWINS)
def test_a_changed_case_twin_is_a_change(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    changed: str,
    steady: str,
) -> None:
    monkeypatch.setenv(steady, "http://steady.example:3128")
    monkeypatch.setenv(changed, "http://one.example:3128")
    a = _snapshot(tmp_path, "a.json", capsys)
    monkeypatch.setenv(changed, "http://two.example:3128")
    b = _snapshot(tmp_path, "b.json", capsys)
    snap = json.loads(a.read_text())
    assert {changed, steady} <= set(snap["keys"])  # two variables, two decisions
    assert snap["names_fold"] is False
    assert main(["diff", str(a), str(b), "--json"]) == 1
    differences = json.loads(capsys.readouterr().out)["differences"]
    assert [(d["key"], d["change"]) for d in differences] == [(changed, "changed")]
    monkeypatch.setenv(changed, "http://one.example:3128")
    c = _snapshot(tmp_path, "c.json", capsys)
    assert main(["diff", str(a), str(c)]) == 0
    assert "no differences" in capsys.readouterr().out


def test_where_names_fold_twins_are_one_variable(tmp_path: Path) -> None:
    """Snapshots that say names_fold compare by the name in any case."""
    base = {
        "envscope_snapshot": 2, "fingerprint_key_id": "0" * 16, "home": "h",
        "surface": "terminal", "routed": False, "names_fold": True,
        "policy": {"complete": True, "problems": []}, "warnings": [],
    }  # fmt: skip
    decision = {"in_child": True, "action": "kept", "stage": "sanitize", "reason": "inherited",
                "origin": None, "fingerprint": "1" * 16}  # fmt: skip
    a = {**base, "child": ["Path"], "keys": {"Path": decision}}
    b = {**base, "child": ["PATH"], "keys": {"PATH": decision}}
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    assert main(["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0


@pytest.mark.parametrize(
    "flags", [["--key", "PATH"], ["--only", "removed"], ["--only", "kept"], ["--key", "nope"]]
)
@pytest.mark.parametrize("side", ["a", "b"])
def test_a_filtered_explain_output_is_refused_on_either_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], side: str
) -> None:
    full = _snapshot(tmp_path, "full.json", capsys)
    part = tmp_path / "part.json"
    assert main(["--config", CONFIG, "explain", "--json", *flags]) == 0
    text = capsys.readouterr().out
    part.write_text(text)
    assert json.loads(text)["filtered"]["key" if flags[0] == "--key" else "only"]
    operands = [str(part), str(full)] if side == "a" else [str(full), str(part)]
    assert main(["diff", *operands]) == 2
    out, err = capsys.readouterr()
    assert f"diff: {part} is filtered" in err
    assert "no differences" not in out


def test_a_snapshot_whose_child_outruns_its_keys_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An older filtered output (no marker), or an edit: the child names keys it never decided."""
    full = _snapshot(tmp_path, "full.json", capsys)
    snap = json.loads(full.read_text())
    snap["keys"] = {k: v for k, v in snap["keys"].items() if not v["in_child"]}
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(snap))
    assert main(["diff", str(edited), str(full)]) == 2
    assert "child key(s) it has no decision for" in capsys.readouterr().err
    assert os.path.exists(full)
