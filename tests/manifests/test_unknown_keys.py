"""A manifest key that is a near miss of a known one is a warning naming the nearest key.

The build still reads what it knows (the key is not read, the rest is), and
the warning reaches every surface a plugin author or an auditor looks at:
``scan --plugin``, a home's ``scan`` (text and ``--json``) and ``explain``'s
warnings. A key far from every known one is another tool's field: silent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from envscope import Host, Trace
from envscope.cli import main
from envscope.manifests._schema import parse_manifest

# (the manifest, each warned (field, line, nearest key), in the file's order)
NEAR: dict[str, tuple[str, list[tuple[str, int, str]]]] = {
    "require_env": ("require_env:\n  - ACME_TOKEN\n", [("require_env", 1, "requires_env")]),
    "Requires-Env": ("Requires-Env:\n  - ACME_TOKEN\n", [("Requires-Env", 1, "requires_env")]),
    "optinal_env": ("optinal_env: []\n", [("optinal_env", 1, "optional_env")]),
    "Kind": ("Kind: platform\n", [("Kind", 1, "kind")]),
    "secert": (
        "requires_env:\n  - name: ACME_TOKEN\n    secert: false\n",
        [("requires_env[0].secert", 3, "secret")],
    ),
    "pasword and categroy": (
        "optional_env:\n  - name: A_KEY\n    pasword: true\n    categroy: x\n",
        [("optional_env[0].pasword", 3, "password"), ("optional_env[0].categroy", 4, "category")],
    ),
}
FAR = (
    "name: acme\nversion: 1.2\ndescription: d\nicon: x.png\n"
    "requires_env:\n  - name: A\n    default: 3\n"
)


@pytest.mark.parametrize("case", NEAR)
def test_a_near_miss_is_found_with_its_line_and_nearest_key(case: str) -> None:
    text, expected = NEAR[case]
    manifest = parse_manifest(text.encode(), "plugin.yaml")
    assert [(u.field, u.line, u.nearest) for u in manifest.unknown] == expected
    assert all(f"did you mean {u.nearest!r}" in u.message for u in manifest.unknown)


def test_a_key_far_from_every_known_one_is_silent() -> None:
    assert parse_manifest(FAR.encode(), "plugin.yaml").unknown == ()


def test_the_build_still_reads_what_it_knows(tmp_path: Path) -> None:
    """``secert: false`` is not read: ACME_TOKEN stays a secret by its suffix, and the
    build's warnings say why the author's intent did not apply."""
    home = tmp_path / "home"
    plugin = home / "plugins" / "platforms" / "acme"
    plugin.mkdir(parents=True)
    (plugin / "plugin.yaml").write_text(NEAR["secert"][0])
    host = Host(home, environ={"PATH": os.defpath, "ACME_TOKEN": "acme-value-0123456789"})
    host.load_launch_env()
    trace = Trace()
    child = host.build_subprocess_env(trace=trace)
    assert "ACME_TOKEN" not in child
    (warning,) = [w for w in trace.context.warnings if w.kind == "manifest-unknown-key"]
    assert warning.key == "requires_env[0].secert"
    assert "did you mean 'secret'" in warning.message
    assert f"{plugin / 'plugin.yaml'}:3" in warning.message


@pytest.mark.parametrize("how", ["plugin", "home"])
def test_scan_shows_each_warning_in_text_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    text, expected = NEAR["pasword and categroy"]
    home = tmp_path / "home"
    plugin = home / "plugins" / "platforms" / "acme"
    plugin.mkdir(parents=True)
    (plugin / "plugin.yaml").write_text(text)
    (tmp_path / "envscope.yaml").write_text(f"launch_home: {home}\n")
    argv = ["scan", "--plugin", str(plugin)] if how == "plugin" else [
        "scan", "--config", str(tmp_path / "envscope.yaml")]  # fmt: skip
    assert main(argv) == 0  # warnings are not problems
    out = capsys.readouterr().out
    shown = [line.strip() for line in out.splitlines() if line.strip().startswith("warning:")]
    assert len(shown) == len(expected)
    for row, (field, _, near) in zip(shown, expected, strict=True):
        assert f"{field}: unknown key (did you mean {near!r}?)" in row
    assert main([*argv, "--json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["reports"][0]["warnings"]
    assert [(w["field"], w["line"]) for w in warnings] == [(f, line) for f, line, _ in expected]
