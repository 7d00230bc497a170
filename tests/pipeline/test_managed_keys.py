"""Managed keys win on every surface policy (DESIGN.md §3), routed or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import Action, Inherit, Reason, Surface, SurfacePolicy, Trace
from tests.conftest import HostFactory

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
    if routed:
        with host.routed(homes["B"]):
            env = host.build_subprocess_env(surface=surface, trace=trace)
    else:
        env = host.build_subprocess_env(surface=surface, trace=trace)
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
