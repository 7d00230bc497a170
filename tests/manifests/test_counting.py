"""One rule decides which manifests declare secrets: the host and ``envscope scan`` agree.

A table of plugin layouts (flat and nested, each ``kind`` a plugin author may
write): for every row, ``envscope scan --plugin DIR`` lists the token exactly
when the host declares it, a child env loses it exactly then, and a near miss
of ``kind: platform`` is a problem in both, naming the file, line and field.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscope import Host
from envscope.cli.main import main
from envscope.manifests._counting import counting, near_platform
from envscope.manifests._probe import RootKind
from envscope.manifests._schema import parse_manifest
from tests.conftest import write_home

TOKEN = "fake-acme-token-0000000001"

# (where the plugin directory is, the kind line, whether the host declares its secrets)
LAYOUTS: dict[str, tuple[str, str, bool]] = {
    "flat, no kind": ("plugins/acme", "", False),
    "flat, kind: memory": ("plugins/acme", "kind: memory\n", False),
    "flat, kind: null": ("plugins/acme", "kind: null\n", False),
    "flat, kind: platform": ("plugins/acme", "kind: platform\n", True),
    "flat, wrong case": ("plugins/acme", "kind: Platform\n", True),
    "flat, upper case": ("plugins/acme", "kind: PLATFORM\n", True),
    "flat, padded": ("plugins/acme", "kind: ' platform'\n", True),
    "flat, misspelled": ("plugins/acme", "kind: platfrom\n", True),
    "flat, plural": ("plugins/acme", "kind: platforms\n", True),
    "flat, dot directory": ("plugins/.acme", "kind: platform\n", True),
    "nested, no kind": ("plugins/platforms/acme", "", True),
    "nested, kind: memory": ("plugins/platforms/acme", "kind: memory\n", True),
    "nested, misspelled": ("plugins/platforms/acme", "kind: platfrom\n", True),
}


def _near_miss(kind_line: str, where: str) -> bool:
    return where.startswith("plugins/platforms") is False and kind_line not in (
        "",
        "kind: memory\n",
        "kind: null\n",
        "kind: platform\n",
    )


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_scan_and_host_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: str
) -> None:
    """The scan lists the token iff the host declares it, says why, and the child agrees."""
    where, kind_line, declares = LAYOUTS[layout]
    home = write_home(tmp_path, "home")
    plugin = home / where
    plugin.mkdir(parents=True)
    (plugin / "plugin.yaml").write_text(
        f"name: acme\n{kind_line}requires_env:\n  - ACME_API_TOKEN\n", encoding="utf-8"
    )
    # the manifests' answer alone: name context would strip the token by its name
    host = Host(home, environ={"PATH": "/usr/bin", "ACME_API_TOKEN": TOKEN}, name_context=False)
    decl = host.manifest_declarations()
    assert ("ACME_API_TOKEN" in decl.secrets) is declares
    assert ("ACME_API_TOKEN" not in host.build_subprocess_env()) is declares

    code = main(["scan", "--plugin", str(plugin), "--json"])
    report = json.loads(capsys.readouterr().out)["reports"][0]
    listed = [name for names in report["secrets"].values() for name in names]
    assert ("ACME_API_TOKEN" in listed) is declares
    (note,) = report["notes"].values()
    assert ("its secrets are declared" in note) is declares
    if not declares:
        assert "not a platform plugin" in note
        assert str(plugin / "plugin.yaml") in decl.ignored

    near = _near_miss(kind_line, where)
    scan_kinds = [(p["line"], p["field"]) for p in report["problems"]]
    host_kinds = [(p.line, p.field) for p in decl.problems]
    assert scan_kinds == host_kinds == ([(2, "kind")] if near else [])
    assert code == (1 if near else 0)
    assert TOKEN not in json.dumps(report)


def test_the_home_scan_says_a_flat_plugin_declares_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``envscope scan HOME`` names a flat plugin without a platform kind, in words."""
    home = write_home(tmp_path, "home")
    (home / "plugins" / "acme").mkdir(parents=True)
    (home / "plugins" / "acme" / "plugin.yaml").write_text(
        "name: acme\nrequires_env: [ACME_API_TOKEN]\n"
    )
    config = tmp_path / "envscope.yaml"
    config.write_text(f"launch_home: {home}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["--config", str(config), "scan"]) == 0
    out = capsys.readouterr().out
    assert "plugins/acme/plugin.yaml: not a platform plugin (no kind)" in out


@pytest.mark.parametrize(
    ("kind", "near"),
    [
        ("platform", False),
        ("Platform", True),
        ("PLATFORM", True),
        ("platform ", True),
        ("platfrom", True),
        ("platforms", True),
        ("plattform", True),
        ("platfom", True),
        ("memory", False),
        ("tool", False),
        ("plat", False),
        ("", False),
        ("platform-plugin", False),
    ],
)
def test_near_platform_table(kind: str, near: bool) -> None:
    """A case, padding or one-or-two-edit typo of ``platform`` is a near miss; nothing else."""
    assert near_platform(kind) is near


@pytest.mark.parametrize("root", list(RootKind))
def test_a_platform_root_counts_every_kind(root: RootKind) -> None:
    """Under a platform root the kind is never read; under the flat root it decides."""
    for kind in ("", "kind: memory\n", "kind: platform\n", "kind: Platfrom\n"):
        manifest = parse_manifest(f"name: p\n{kind}".encode(), "plugin.yaml")
        verdict = counting(root, manifest)
        if root.is_platform:
            assert verdict.declares
            assert verdict.problem is None
        else:
            assert verdict.declares is (kind not in ("", "kind: memory\n"))
            assert (verdict.problem is not None) is (kind == "kind: Platfrom\n")
