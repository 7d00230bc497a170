"""Managed keys win on every surface policy (docs/concepts.md), routed or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import Action, Inherit, Reason, Surface, SurfacePolicy, Trace
from tests.conftest import HostFactory, build

POLICIES = [
    SurfacePolicy(inherit=Inherit.CORE),
    SurfacePolicy(inherit=Inherit.NONE),
    SurfacePolicy(exclude=("ORG_*",)),
]


@pytest.mark.parametrize("policy", POLICIES, ids=["core", "none", "exclude"])
@pytest.mark.parametrize("surface", [s for s in Surface if s is not Surface.MCP])
@pytest.mark.parametrize("routed", [False, True], ids=["launch", "routed"])
def test_a_managed_key_survives_every_surface_policy(
    make_host: HostFactory,
    homes: dict[str, Path],
    policy: SurfacePolicy,
    surface: Surface,
    routed: bool,
) -> None:
    """inherit: core|none and an exclude glob never drop the administrator's managed key."""
    managed = homes["root"] / "managed.env"
    managed.write_text("ORG_POLICY_FLAG=managed-value\n")
    (homes["B"] / ".env").write_text("ORG_POLICY_FLAG=user-value\n")
    host = make_host(managed_env_file=managed, surface_policies={surface: policy})
    host.load_launch_env()
    trace = Trace()
    env = build(host, homes["B"] if routed else None, surface=surface, trace=trace)
    assert env["ORG_POLICY_FLAG"] == "managed-value"
    assert not [d for d in trace.for_key("ORG_POLICY_FLAG") if d.action is Action.STRIPPED], (
        "a surface policy stripped a managed key"
    )
    assert any(d.reason is Reason.MANAGED_KEY for d in trace.for_key("ORG_POLICY_FLAG"))


@pytest.mark.parametrize(
    "lines",
    [
        "CHATX_SIGNING_SECRET=\nchatx_signing_secret=sk-shared-0000000001\n",
        "chatx_signing_secret=sk-shared-0000000001\nCHATX_SIGNING_SECRET=\n",
        "CHATX_SIGNING_SECRET=managed-one-value\nchatx_signing_secret=managed-two-value\n",
    ],
    ids=["empty first", "empty last", "two values"],
)
def test_every_spelling_of_a_managed_credential_reaches_a_credentialed_routed_child(
    make_host: HostFactory, homes: dict[str, Path], lines: str
) -> None:
    """POSIX twins in the managed file: each value is the administrator's, none a launch one.

    ``make fuzz`` found the first spelling's value taken for a launch credential (the
    twins collapsed into one value per name) and stripped from a routed child.
    """
    managed = homes["root"] / "managed.env"
    managed.write_text(lines)
    host = make_host(managed_env_file=managed)
    host.register_adapter("chatx", ["CHATX_SIGNING_SECRET"], home=homes["B"])
    host.load_launch_env()
    with host.routed(homes["B"]):
        env = host.build_subprocess_env(surface=Surface.CREDENTIALED)
    expected = dict(line.split("=", 1) for line in lines.splitlines())
    assert {k: v for k, v in env.items() if k.upper() == "CHATX_SIGNING_SECRET"} == expected


@pytest.mark.parametrize("surface", list(Surface))
@pytest.mark.parametrize("routed", [False, True], ids=["launch", "routed"])
@pytest.mark.parametrize("name", ["CC", "LD_PRELOAD", "PYTHONPATH"])
def test_a_managed_injection_vector_a_launch_source_also_supplied_is_kept(
    make_host: HostFactory, homes: dict[str, Path], surface: Surface, routed: bool, name: str
) -> None:
    """The launch's source put the name in first (introduced), the managed file pins it: kept.

    A vector a launch secret source introduced is dropped from every child, but the
    administrator's value of that name is the managed file's, not the source's.
    """
    from envscope.policy.sources import StaticSource

    managed = homes["root"] / "managed.env"
    managed.write_text(f"{name}=/opt/admin/{name.lower()}\n")
    host = make_host(managed_env_file=managed)
    host.add_secret_source(StaticSource("vault", {str(homes["A"]): {name: "/tmp/from-source"}}))
    host.load_launch_env()
    assert name in host.source_applied_names()
    supplied = {"PATH": "/usr/bin"} if surface is Surface.MCP else None
    kwargs: dict[str, object] = {"surface": surface}
    if supplied is not None:
        kwargs["extra"] = supplied
    env = build(host, homes["B"] if routed else None, **kwargs)
    if surface is Surface.MCP:
        assert env.get(name) in (None, f"/opt/admin/{name.lower()}")  # the allowlist decides
    else:
        assert env.get(name) == f"/opt/admin/{name.lower()}"
    assert "/tmp/from-source" not in env.values()


@pytest.mark.parametrize("name", ["CC", "LD_PRELOAD"])
def test_an_injection_vector_a_launch_source_introduced_is_dropped(
    make_host: HostFactory, name: str
) -> None:
    """Without a managed pin, the vector the source put into the process env reaches no child."""
    from envscope.policy.sources import StaticSource

    host = make_host()
    host.add_secret_source(StaticSource("vault", {host.launch_home: {name: "/tmp/from-source"}}))
    host.load_launch_env()
    assert host.environ_snapshot().get(name) == "/tmp/from-source"
    assert name not in host.build_subprocess_env()


@pytest.mark.parametrize(
    ("windows", "spelling"),
    [(False, "cc"), (False, "CC"), (True, "CC"), (True, "cc")],
    ids=["posix-twin", "posix-same", "windows-same", "windows-twin"],
)
def test_the_source_value_of_an_introduced_vector_never_reaches_a_child(
    make_host: HostFactory, homes: dict[str, Path], windows: bool, spelling: str
) -> None:
    """Source-applied ``CC``, managed ``cc`` or ``CC``: the managed entry arrives, never the source.

    POSIX twins are two variables (the source's dropped, the managed one kept). Where names
    fold, a parent holding both spellings keeps one of them; stage 3 lays the managed entry
    over it in every build, routed or not, so the administrator's value arrives either way.
    """
    from envscope.policy.sources import StaticSource

    managed = homes["root"] / "managed.env"
    managed.write_text(f"{spelling}=/opt/admin/cc\n")
    host = make_host(managed_env_file=managed, windows=windows)
    host.add_secret_source(StaticSource("vault", {str(homes["A"]): {"CC": "/tmp/from-source"}}))
    host.load_launch_env()
    env = host.build_subprocess_env()
    assert "/tmp/from-source" not in env.values()
    got = {k: v for k, v in env.items() if k.upper() == "CC"}
    assert got == {spelling: "/opt/admin/cc"}


@pytest.mark.parametrize("surface", list(Surface), ids=lambda s: s.value)
@pytest.mark.parametrize("routed", [False, True], ids=["launch", "routed"])
def test_a_managed_file_never_loaded_is_a_loud_error(
    make_host: HostFactory, homes: dict[str, Path], surface: Surface, routed: bool
) -> None:
    """Forgetting load_launch_env() with a managed file configured: no build skips the pins."""
    from envscope import ConfigurationError

    managed = homes["root"] / "managed.env"
    managed.write_text("CORP_POLICY_URL=https://proxy.corp/v1\n")
    host = make_host(managed_env_file=managed)

    def build() -> dict[str, str]:
        if not routed:
            return host.build_subprocess_env(surface=surface)
        with host.routed(homes["B"]):
            return host.build_subprocess_env(surface=surface)

    with pytest.raises(ConfigurationError) as info:
        build()
    assert str(managed) in str(info.value)
    assert "load_launch_env()" in str(info.value)
    assert "proxy.corp" not in str(info.value)
    host.load_launch_env()
    env = build()
    if surface is not Surface.MCP:
        assert env["CORP_POLICY_URL"] == "https://proxy.corp/v1"
