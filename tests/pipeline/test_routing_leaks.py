"""Routing leak classes: the launch file under another name, launch-declared names, the home var."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envscope import (
    FORCE_PREFIX,
    Action,
    EnvValueError,
    Host,
    PassthroughRefusedError,
    Surface,
    Trace,
)
from tests.conftest import HostFactory, platform_plugin, write_home

LAUNCH_SECRET = "launch-signing-secret-0123"


@pytest.mark.parametrize("link", ["symlink", "hardlink", "symlinked-dir-file"])
def test_a_profile_env_that_is_the_launch_env_imports_nothing(
    make_host: HostFactory, homes: dict[str, Path], tmp_path: Path, link: str
) -> None:
    """A profile whose .env is the launch .env (symlink, hard link) gets none of its values."""
    (homes["A"] / ".env").write_text(f"A_MARKER=a\nTELEGRAM_BOT_TOKEN={LAUNCH_SECRET}\n")
    profile = write_home(tmp_path, "C")
    target = homes["A"] / ".env"
    if link == "symlink":
        (profile / ".env").symlink_to(target)
    elif link == "hardlink":
        os.link(target, profile / ".env")
    else:
        shared = tmp_path / "shared"
        shared.symlink_to(homes["A"])
        (profile / ".env").symlink_to(shared / ".env")
    host = make_host()
    host.load_launch_env()
    for surface in Surface:
        with host.routed(profile):
            env = host.build_subprocess_env(surface=surface)
        assert "A_MARKER" not in env, surface
        assert LAUNCH_SECRET not in env.values()


def test_a_copy_of_the_launch_env_is_the_profiles_own(
    make_host: HostFactory, homes: dict[str, Path], tmp_path: Path
) -> None:
    """A separate file with the same text is the profile's own file: its values are its scope."""
    profile = write_home(tmp_path, "C", "A_MARKER=c-own\n")
    host = make_host()
    host.load_launch_env()
    with host.routed(profile):
        assert host.build_subprocess_env()["A_MARKER"] == "c-own"


LAUNCH_PLUGIN = "name: chatx\nrequires_env:\n  - CHATX_SIGNING_SECRET\n  - CHATX_APP_TOKEN\n"


@pytest.mark.parametrize(
    ("how", "kwargs"),
    [
        ("extra", {"extra": {"CHATX_SIGNING_SECRET": LAUNCH_SECRET}}),
        ("extra-case", {"extra": {"chatx_signing_secret": LAUNCH_SECRET}}),
        ("force", {"extra": {f"{FORCE_PREFIX}CHATX_SIGNING_SECRET": LAUNCH_SECRET}}),
        ("force-case", {"extra": {"_envscope_force_Chatx_Signing_Secret": LAUNCH_SECRET}}),
        ("passthrough", {"passthrough": ["CHATX_SIGNING_SECRET"]}),
        ("mcp-extra", {"extra": {"CHATX_APP_TOKEN": LAUNCH_SECRET}, "surface": Surface.MCP}),
        ("credentialed", {"extra": {"CHATX_APP_TOKEN": LAUNCH_SECRET}, "surface": "credentialed"}),
    ],
)
def test_a_launch_declared_name_cannot_come_back_under_routing(
    make_host: HostFactory, homes: dict[str, Path], how: str, kwargs: dict[str, object]
) -> None:
    """Under routed(B), a name only the launch home declares is refused by every admitting path."""
    platform_plugin(homes["A"], "chatx", LAUNCH_PLUGIN)
    host = make_host({"PATH": "/b", "CHATX_SIGNING_SECRET": LAUNCH_SECRET})
    with host.routed(homes["B"], scope={"CHATX_SIGNING_SECRET_NOT": "x"}):
        # refused loudly: a passthrough that can never pass, a declared name in plain extra
        loud = {
            "passthrough": PassthroughRefusedError,
            "extra": EnvValueError,
            "extra-case": EnvValueError,
            "credentialed": EnvValueError,
        }.get(how)
        if loud is not None:
            with pytest.raises(loud, match=r"(?i)CHATX_"):
                host.build_subprocess_env(**kwargs)  # type: ignore[arg-type]
            return
        env = host.build_subprocess_env(**kwargs)  # type: ignore[arg-type]
    assert {k.upper() for k in env} & {"CHATX_SIGNING_SECRET", "CHATX_APP_TOKEN"} == set(), how
    assert LAUNCH_SECRET not in env.values()


def test_the_routed_profiles_own_value_of_a_launch_declared_name_passes(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """B's own CHATX_SIGNING_SECRET is B's (the launch plugin's secret is not B's)."""
    platform_plugin(homes["A"], "chatx", LAUNCH_PLUGIN)
    host = make_host({"PATH": "/b", "CHATX_SIGNING_SECRET": LAUNCH_SECRET})
    with host.routed(homes["B"], scope={"CHATX_SIGNING_SECRET": "b-own-value"}):
        env = host.build_subprocess_env()
    assert env["CHATX_SIGNING_SECRET"] == "b-own-value"


@pytest.mark.parametrize("surface", list(Surface))
@pytest.mark.parametrize("multiplex", [False, True])
def test_a_routed_child_is_told_its_own_home_on_every_surface(
    make_host: HostFactory, homes: dict[str, Path], surface: Surface, multiplex: bool
) -> None:
    """Every routed child gets home_env_var = its own home, never the process's launch value."""
    host = make_host(
        {"PATH": "/b", "AGENT_HOME": str(homes["A"])},
        home_env_var="AGENT_HOME",
        multiplex=multiplex,
    )
    host.load_launch_env()
    with host.routed(homes["B"]) as binding:
        env = host.build_subprocess_env(surface=surface)
    assert env["AGENT_HOME"] == binding.home == str(homes["B"])


def test_a_launch_child_is_not_told_a_home_except_a_worker(make_host: HostFactory) -> None:
    """Not routed: the child equals the base; only a worker is told its home."""
    host = make_host({"PATH": "/b"})
    assert host.build_subprocess_env() == {"PATH": "/b"}
    assert host.build_subprocess_env(surface=Surface.WORKER)["ENVSCOPE_HOME"] == host.launch_home


@pytest.mark.parametrize(
    ("extra", "scope", "expected"),
    [
        ({"TENOR_API_KEY": "launch-tenor"}, {"TENOR_API_KEY": "b-tenor"}, "b-tenor"),
        ({"TENOR_API_KEY": "launch-tenor"}, {}, None),
        ({"tenor_api_key": "launch-tenor"}, {"TENOR_API_KEY": "b-tenor"}, "b-tenor"),
        ({"TENOR_API_KEY": "caller-own"}, {"TENOR_API_KEY": "b-tenor"}, "caller-own"),
        ({}, {"TENOR_API_KEY": "b-tenor"}, "b-tenor"),
        ({}, {}, None),
    ],
)
def test_passthrough_under_routing_takes_the_scope_value_over_a_repeated_launch_value(
    make_host: HostFactory,
    homes: dict[str, Path],
    extra: dict[str, str],
    scope: dict[str, str],
    expected: str | None,
) -> None:
    """An extra that repeats the launch value does not beat the routed scope (a new value does)."""
    host = make_host({"PATH": "/b", "TENOR_API_KEY": "launch-tenor"})
    with host.routed(homes["B"], scope=scope):
        trace = Trace()
        env = host.build_subprocess_env(extra=extra, passthrough=["TENOR_API_KEY"], trace=trace)
    got = {k.upper(): v for k, v in env.items()}.get("TENOR_API_KEY")
    assert got == expected
    if expected is None:
        assert any(d.action is Action.STRIPPED for d in trace if d.key.upper() == "TENOR_API_KEY")


def test_home_env_var_cannot_carry_the_force_prefix(homes: dict[str, Path]) -> None:
    """A force-prefixed home_env_var is refused at construction (it could never reach a child)."""
    from envscope import ConfigurationError

    with pytest.raises(ConfigurationError, match="force prefix"):
        Host(homes["A"], environ={}, home_env_var=f"{FORCE_PREFIX}HOME")


def test_a_swap_to_the_launch_env_after_any_stat_is_still_caught(
    make_host: HostFactory, homes: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Identity comes from the descriptor read: a stat that saw another file decides nothing."""
    (homes["A"] / ".env").write_text(f"A_MARKER=a\nLAUNCH_ONLY={LAUNCH_SECRET}\n")
    profile = write_home(tmp_path, "C")
    decoy = tmp_path / "decoy.env"
    decoy.write_text("C_MARKER=c\n")
    (profile / ".env").symlink_to(homes["A"] / ".env")
    real_stat = os.stat

    def stat_as_if_not_swapped_yet(path: object, *args: object, **kwargs: object) -> object:
        if path == str(profile / ".env"):
            return real_stat(decoy)  # what a check before the swap would have seen
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", stat_as_if_not_swapped_yet)
    host = make_host()
    with host.routed(profile):
        env = host.build_subprocess_env()
    assert "A_MARKER" not in env
    assert LAUNCH_SECRET not in env.values()
