"""The administrator's value is the only value of a managed name, in every spelling.

On POSIX ``http_proxy`` and ``HTTP_PROXY`` are two variables: a table over how
a twin could arrive (the launch ``.env``, the process env, the routed
profile's ``.env`` through a passthrough, a forced hand-over, a plain
``extra``) × surfaces (``inherit: none`` included) × routing. The child holds
the managed entry and no other value of the name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import FORCE_PREFIX, Host, Inherit, PassthroughRefusedError, Surface, SurfacePolicy
from tests.conftest import HostFactory, build

MANAGED = "http://proxy.corp:3128"
TWIN = "http://twin.example:8080"

# how the twin arrives: (parent env additions, launch .env, B's .env, extra, passthrough)
ARRIVALS: dict[str, tuple[dict[str, str], str, str, dict[str, str], list[str]]] = {
    "process env": ({"http_proxy": TWIN}, "", "", {}, []),
    "launch .env": ({}, f"http_proxy={TWIN}\n", "", {}, []),
    "routed passthrough": ({}, "", f"http_proxy={TWIN}\n", {}, ["http_proxy"]),
    "routed scope": ({}, "", f"http_proxy={TWIN}\n", {}, []),
    "forced": ({}, "", "", {f"{FORCE_PREFIX}http_proxy": TWIN}, []),
    "forced same spelling": ({}, "", "", {f"{FORCE_PREFIX}HTTP_PROXY": TWIN}, []),
    "passthrough absent": ({}, "", "", {}, ["http_proxy"]),
    "passthrough absent same spelling": ({}, "", "", {}, ["HTTP_PROXY"]),
    "extra": ({}, "", "", {"HTTP_PROXY": TWIN}, []),
    "extra twin": ({}, "", "", {"http_proxy": TWIN}, []),
}
# the arrivals an MCP server's env block can carry (the block is the caller's extra)
BLOCK_ARRIVALS = ["process env", "launch .env", "routed scope", "routed passthrough", "extra",
                  "extra twin", "passthrough absent"]  # fmt: skip
POLICIES = {
    "default": None,
    "inherit none": SurfacePolicy(inherit=Inherit.NONE),
    "inherit core": SurfacePolicy(inherit=Inherit.CORE),
}


@pytest.mark.parametrize(
    ("arrival", "surface"),
    [(a, s) for a in sorted(ARRIVALS) for s in Surface if s is not Surface.MCP]
    + [(a, Surface.MCP) for a in BLOCK_ARRIVALS],
)
@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("routed", [False, True], ids=["launch", "routed"])
def test_the_managed_value_is_the_only_value_of_its_name(
    make_host: HostFactory,
    homes: dict[str, Path],
    arrival: str,
    policy: str,
    surface: Surface,
    routed: bool,
) -> None:
    """Whatever brought a twin or another value, the child holds HTTP_PROXY=<managed> alone."""
    parent, launch_env, b_env, extra, passthrough = ARRIVALS[arrival]
    managed = homes["root"] / "managed.env"
    managed.write_text(f"HTTP_PROXY={MANAGED}\n")
    (homes["A"] / ".env").write_text(f"A_MARKER=a\n{launch_env}")
    (homes["B"] / ".env").write_text(f"B_MARKER=b\n{b_env}")
    chosen = POLICIES[policy]
    host = make_host(
        {"PATH": "/usr/bin", **parent},
        managed_env_file=managed,
        surface_policies={} if chosen is None else {surface: chosen},
    )
    host.load_launch_env()
    kwargs = {"surface": surface, "extra": extra, "passthrough": passthrough}
    env = build(host, homes["B"] if routed else None, **kwargs)
    assert {k: v for k, v in env.items() if k.upper() == "HTTP_PROXY"} == {"HTTP_PROXY": MANAGED}


@pytest.mark.parametrize("spelling", ["HTTP_PROXY", "http_proxy"])
@pytest.mark.parametrize("surface", list(Surface))
@pytest.mark.parametrize("routed", [False, True], ids=["launch", "routed"])
def test_a_grant_of_a_managed_name_is_refused(
    make_host: HostFactory, homes: dict[str, Path], spelling: str, surface: Surface, routed: bool
) -> None:
    """A grant hands a key over as given; the administrator's value wins: a grant of another
    value of a managed name can never pass, and says so."""
    managed = homes["root"] / "managed.env"
    managed.write_text(f"HTTP_PROXY={MANAGED}\n")
    host = make_host({"PATH": "/usr/bin"}, managed_env_file=managed)
    host.load_launch_env()
    with pytest.raises(PassthroughRefusedError, match="managed"):
        build(host, homes["B"] if routed else None, surface=surface,
              extra={spelling: TWIN}, grant=[spelling])  # fmt: skip


@pytest.mark.parametrize("surface", [s for s in Surface if s is not Surface.MCP])
def test_a_managed_pin_equal_to_a_launch_credential_reaches_a_routed_child(
    make_host: HostFactory, homes: dict[str, Path], surface: Surface
) -> None:
    """The launch .env holds the managed URL under another declared name: the pin still goes.

    The entry's layer says it is the administrator's; the launch copy under the
    other name stays a launch credential and never reaches the routed child.
    """
    url = "https://llm-proxy.corp.example/v1"
    managed = homes["root"] / "managed.env"
    managed.write_text(f"OPENAI_BASE_URL={url}\n")
    (homes["A"] / ".env").write_text(f"ANTHROPIC_BASE_URL={url}\n")
    host = make_host({"PATH": "/usr/bin"}, managed_env_file=managed)
    host.load_launch_env()
    with host.routed(homes["B"]):
        env = host.build_subprocess_env(surface=surface, inherit_credentials=True)
    assert env["OPENAI_BASE_URL"] == url
    assert "ANTHROPIC_BASE_URL" not in env


def _host_changing_its_managed_value(
    make_host: HostFactory, homes: dict[str, Path], spelling: str
) -> Host:
    """A host whose managed file pins HTTP_PROXY, its environ given ``spelling`` after the load."""
    managed = homes["root"] / "managed.env"
    managed.write_text(f"HTTP_PROXY={MANAGED}\n")
    environ = {"PATH": "/usr/bin"}
    host = make_host(environ, managed_env_file=managed)
    host.load_launch_env()
    environ[spelling] = TWIN  # the host's own value, set after the load
    return host


@pytest.mark.parametrize("spelling", ["HTTP_PROXY", "http_proxy"])
@pytest.mark.parametrize("surface", [s for s in Surface if s is not Surface.MCP])
def test_a_managed_value_the_host_changed_after_the_load_is_restored(
    make_host: HostFactory, homes: dict[str, Path], spelling: str, surface: Surface
) -> None:
    """The host sets its own value of a managed name after the load: the child gets the pin."""
    host = _host_changing_its_managed_value(make_host, homes, spelling)
    env = host.build_subprocess_env(surface=surface)
    assert {k: v for k, v in env.items() if k.upper() == "HTTP_PROXY"} == {"HTTP_PROXY": MANAGED}


@pytest.mark.parametrize("spelling", ["HTTP_PROXY", "http_proxy"])
@pytest.mark.parametrize("routed", [False, True], ids=["launch", "routed"])
def test_what_a_reference_resolves_against_holds_the_pin_too(
    make_host: HostFactory, homes: dict[str, Path], spelling: str, routed: bool
) -> None:
    """``parent_env()`` (what an MCP ``${HTTP_PROXY}`` reads) agrees with the build's pin."""
    host = _host_changing_its_managed_value(make_host, homes, spelling)
    parent = host.parent_env() if not routed else None
    if routed:
        with host.routed(homes["B"]):
            parent = host.parent_env()
    assert parent is not None
    assert {k: v for k, v in parent.items() if k.upper() == "HTTP_PROXY"} == {"HTTP_PROXY": MANAGED}
