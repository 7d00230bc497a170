"""Every public object's repr/str holds keys, never values; the testing helper checks values."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType

import pytest

import envscope
from envscope import Host, StaticSource, Surface
from envscope.cli.config import load_config
from envscope.policy.surfaces import SurfacePolicy
from envscope.testing import assert_no_secrets

SECRETS = {
    "environ": "sv-environ-4f1c9a7e2b",
    "launch_env": "sv-launch-dotenv-83d1e0",
    "profile_env": "sv-profile-dotenv-5a2b7c",
    "managed": "sv-managed-value-9e8d7c",
    "source": "sv-source-value-1a2b3c4d",
    "surface_set": "sv-surface-set-6f5e4d3c",
    "extra": "sv-extra-value-2c3d4e5f",
}


def _objects(obj: object, seen: set[int], depth: int = 0) -> Iterator[object]:
    """``obj`` and everything reachable from it through attributes and containers."""
    if id(obj) in seen or depth > 12 or isinstance(obj, (str, bytes, int, float, bool)):
        return
    seen.add(id(obj))
    yield obj
    children: list[object] = []
    if isinstance(obj, Mapping):
        children.extend(obj.keys())
        children.extend(obj.values())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        children.extend(obj)
    elif not isinstance(obj, type):
        for klass in type(obj).__mro__:
            for name in getattr(klass, "__slots__", ()):
                if hasattr(obj, name):
                    children.append(getattr(obj, name))
        children.extend(getattr(obj, "__dict__", {}).values())
    for child in children:
        yield from _objects(child, seen, depth + 1)


def _envscope_objects(roots: list[object]) -> list[object]:
    """Every object of an envscope type (or an envscope class) reachable from ``roots``."""
    seen: set[int] = set()
    found = []
    for root in roots:
        for obj in _objects(root, seen):
            module = getattr(type(obj), "__module__", "") or ""
            if module.startswith("envscope") or isinstance(obj, type):
                found.append(obj)
    return found


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A config with a launch home, a profile, a managed file, a plugin and a surface `set`."""
    (tmp_path / "A").mkdir()
    (tmp_path / "A" / ".env").write_text(f"LAUNCH_BOT_TOKEN={SECRETS['launch_env']}\n")
    (tmp_path / "B").mkdir()
    (tmp_path / "B" / ".env").write_text(f"PROFILE_SETTING={SECRETS['profile_env']}\n")
    plugin = tmp_path / "A" / "plugins" / "platforms" / "chatx"
    plugin.mkdir(parents=True)
    (plugin / "plugin.yaml").write_text("name: chatx\nrequires_env: [CHATX_BOT_TOKEN]\n")
    (tmp_path / "managed.env").write_text(f"MANAGED_SETTING={SECRETS['managed']}\n")
    (tmp_path / "envscope.yaml").write_text(
        "launch_home: A\nhomes: {b: B}\nmanaged_env_file: managed.env\n"
        f"surfaces: {{script: {{set: {{TELEGRAM_BOT_TOKEN: {SECRETS['surface_set']}}}}}}}\n"
    )
    return tmp_path


def test_no_public_object_repr_holds_a_value(tree: Path) -> None:
    """Walk every object reachable from a real routed build: no repr/str shows a value."""
    config = load_config(str(tree / "envscope.yaml"))
    environ = {
        "PATH": "/bin",
        "OPENAI_API_KEY": SECRETS["environ"],
        "ENVSCOPE_FINGERPRINT_KEY": "fingerprint-key-of-the-test",
    }
    host = config.build_host(environ)
    host.add_secret_source(StaticSource("vault", {"*": {"VAULT_TOKEN": SECRETS["source"]}}))
    host.load_launch_env()
    host.register_adapter("acme", ["ACME_API_KEY"])
    roots: list[object] = [config, host, host.policy(), host.catalog]
    with host.routed(config.homes["b"]) as binding:
        env = host.build_subprocess_env(surface=Surface.SCRIPT, extra={"X": SECRETS["extra"]})
        trace = host.explain(surface=Surface.SCRIPT, extra={"X": SECRETS["extra"]})
        roots += [binding, host.policy(), trace, list(trace), trace.final(), trace.context]
    assert env  # the build ran
    roots += [getattr(envscope, name) for name in envscope.__all__]
    roots += _mcp_and_testing_records(tree, host)
    objects = _envscope_objects(roots)
    assert len(objects) > 50  # the walk reached the build's objects
    kinds = {type(o).__name__ for o in objects}
    assert {"Binding", "SurfacePolicy", "SecretPolicy", "Decision", "HostConfig"} <= kinds
    for obj in objects:
        for text in (repr(obj), str(obj)):
            for where, value in SECRETS.items():
                assert value not in text, f"{type(obj).__name__} shows the {where} value"


def _mcp_and_testing_records(tree: Path, host: Host) -> list[object]:
    """An MCP server read from a config whose references pull host values, and a HostTree."""
    import json

    from envscope._mcp_formats import read_config
    from envscope.testing import build_host_tree

    config = tree / ".mcp.json"
    server = {
        "command": "${OPENAI_API_KEY}",
        "args": ["--token=${OPENAI_API_KEY}"],
        "env": {"COPY": "${OPENAI_API_KEY}", "LIT": SECRETS["extra"]},
    }
    config.write_text(json.dumps({"mcpServers": {"srv": server}}), encoding="utf-8")
    servers = read_config(str(config), json.loads(config.read_text()), host.parent_env())
    assert SECRETS["environ"] in servers["srv"].command  # resolved: the repr must hide it
    hosted = build_host_tree(
        tree / "testing-tree",
        launch_env={"LAUNCH_BOT_TOKEN": SECRETS["launch_env"]},
        environ={"PATH": "/bin", "OPENAI_API_KEY": SECRETS["environ"]},
    )
    return [servers, hosted]


def test_masked_fields_still_show_keys(tree: Path) -> None:
    """The repr of a binding and of a surface policy names the keys it holds."""
    config = load_config(str(tree / "envscope.yaml"))
    assert "TELEGRAM_BOT_TOKEN" in repr(config.surfaces[Surface.SCRIPT])
    assert "TELEGRAM_BOT_TOKEN" in repr(config)
    host = config.build_host({"PATH": "/bin"})
    with host.routed(config.homes["b"]) as binding:
        assert "PROFILE_SETTING" in repr(binding)


# -- envscope.testing.assert_no_secrets checks values and every consulted policy ------------


def _host(tmp_path: Path, environ: dict[str, str]) -> tuple[Host, Path]:
    launch, other = tmp_path / "A", tmp_path / "B"
    plugin = launch / "plugins" / "platforms" / "chatx"
    plugin.mkdir(parents=True)
    other.mkdir()
    (plugin / "plugin.yaml").write_text("name: chatx\nrequires_env: [CHATX_BOT_TOKEN]\n")
    return Host(launch, environ=environ), other


@pytest.mark.parametrize(
    ("child", "home", "needle"),
    [
        ({"COPY": "tg-secret-value-123"}, None, "COPY (the value of TELEGRAM_BOT_TOKEN)"),
        ({"COPY": "oa-secret-value-456"}, None, "COPY (the value of OPENAI_API_KEY)"),
        ({"CHATX_BOT_TOKEN": "x"}, "B", "CHATX_BOT_TOKEN (Tier 1"),
        # routed, a launch secret is never named (the one wording: SecretRule.describe)
        ({"COPY": "chatx-secret-789xyz"}, "B", "COPY (holds a launch profile's secret)"),
        ({"TELEGRAM_BOT_TOKEN": "x"}, "B", "TELEGRAM_BOT_TOKEN (Tier 1"),
    ],
)
def test_assert_no_secrets_checks_values_and_every_policy(
    tmp_path: Path, child: dict[str, str], home: str | None, needle: str
) -> None:
    """A copied secret value, or a launch-declared Tier 1 name under home=B, fails the helper."""
    host, other = _host(
        tmp_path,
        {
            "TELEGRAM_BOT_TOKEN": "tg-secret-value-123",
            "OPENAI_API_KEY": "oa-secret-value-456",
            "CHATX_BOT_TOKEN": "chatx-secret-789xyz",
        },
    )
    target = None if home is None else other
    with pytest.raises(AssertionError) as info:
        assert_no_secrets(child, host=host, home=target)
    assert needle in str(info.value)
    for value in child.values():
        assert value not in str(info.value)


def test_assert_no_secrets_passes_a_clean_child(tmp_path: Path) -> None:
    """Short or undeclared values pass; a credentialed child may hold Tier 2 values."""
    host, other = _host(tmp_path, {"OPENAI_API_KEY": "oa-secret-value-456", "FLAG": "1"})
    assert_no_secrets({"FLAG": "1", "PATH": "/bin"}, host=host)
    assert_no_secrets(
        {"OPENAI_API_KEY": "oa-secret-value-456"}, host=host, inherit_credentials=True
    )
    with host.routed(other):
        assert_no_secrets({"FLAG": "1"}, host=host)
    assert os.path.isdir(other)


@pytest.mark.parametrize("surface", [Surface.SCRIPT, Surface.TERMINAL, Surface.WORKER])
def test_surface_set_copy_of_a_tier1_value_is_stripped(tmp_path: Path, surface: Surface) -> None:
    """A surface policy's `set` value that copies a Tier 1 value never reaches the child."""
    policy = SurfacePolicy(set_env=MappingProxyType({"COPY": "tg-secret-value-123"}))
    host = Host(
        tmp_path,
        environ={"TELEGRAM_BOT_TOKEN": "tg-secret-value-123", "PATH": "/bin"},
        surface_policies={surface.value: policy},
    )
    child = host.build_subprocess_env(surface=surface)
    assert "COPY" not in child
    assert_no_secrets(child, host=host)
