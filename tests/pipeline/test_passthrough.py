"""Passthrough names."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import PassthroughRefusedError, Surface
from tests.conftest import HostFactory


@pytest.mark.parametrize("surface", [Surface.TERMINAL, Surface.MCP])
def test_undeclared_passthrough_is_accepted_and_empty_ignored(
    make_host: HostFactory, surface: Surface
) -> None:
    """An undeclared passthrough name is forwarded; an empty name is ignored."""
    env = make_host().build_subprocess_env(
        {"TENOR_API_KEY": "t", "OTHER": "o"}, surface=surface, passthrough=["TENOR_API_KEY", ""]
    )
    assert env["TENOR_API_KEY"] == "t"
    assert "" not in env


@pytest.mark.parametrize("name", ["TELEGRAM_BOT_TOKEN", "OPENAI_API_KEY", "openai_base_url"])
@pytest.mark.parametrize("surface", [Surface.TERMINAL, Surface.MCP])
def test_passthrough_of_declared_name_is_refused(
    make_host: HostFactory, name: str, surface: Surface
) -> None:
    """Passthrough of a Tier 1/2 name is a PassthroughRefusedError naming its rule."""
    with pytest.raises(PassthroughRefusedError, match=name) as caught:
        make_host().build_subprocess_env({name: "v"}, surface=surface, passthrough=[name])
    assert caught.value.key == name
    assert "catalog" in str(caught.value)  # where the rule came from
    assert "'v'" not in str(caught.value)  # never the value


def test_passthrough_stops_once_an_adapter_declares_it(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """An accepted passthrough name stops once an adapter of the bound home declares it."""
    host = make_host()
    base = {"TENOR_API_KEY": "t"}
    with host.routed(homes["B"], scope={"TENOR_API_KEY": "b"}):
        kw = {"surface": Surface.MCP, "passthrough": ["TENOR_API_KEY"]}
        assert host.build_subprocess_env(base, **kw)["TENOR_API_KEY"] == "b"  # type: ignore[arg-type]
        host.register_adapter("tenor", ["TENOR_API_KEY"])
        with pytest.raises(PassthroughRefusedError, match="TENOR_API_KEY"):
            host.build_subprocess_env(base, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("surface", [Surface.TERMINAL, Surface.MCP])
def test_routed_passthrough_takes_scope_value_only(
    make_host: HostFactory, homes: dict[str, Path], surface: Surface
) -> None:
    """Under routing a passthrough name takes the scope's value, never the launch process's."""
    host = make_host()
    base = {"TENOR_API_KEY": "launch", "PATH": "/bin"}
    with host.routed(homes["B"], scope={"TENOR_API_KEY": "routed"}):
        env = host.build_subprocess_env(base, surface=surface, passthrough=["TENOR_API_KEY"])
        assert env["TENOR_API_KEY"] == "routed"
    with host.routed(homes["B"], scope={}):
        env = host.build_subprocess_env(base, surface=surface, passthrough=["TENOR_API_KEY"])
        assert "TENOR_API_KEY" not in env
