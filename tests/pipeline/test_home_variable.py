"""The child's own home variable: nothing overrides or removes it, every checker treats it alike.

A table over the ways a caller or a profile could reach the name (a forced
key in any case, a passthrough of B's own ``ENVSCOPE_HOME``, a plain
``extra``, a case twin) × surfaces × routing: the child is told its pinned
home, in one spelling. A home whose path holds a declared value is kept by the
factory and passed by the guard and ``envscope.testing``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import FORCE_PREFIX, Surface
from envscope._guard import offences
from envscope.testing import assert_no_secrets
from tests.conftest import HostFactory, write_home

HOME_VAR = "ENVSCOPE_HOME"
ELSEWHERE = "/elsewhere/launch"

# how a build might try to change the home variable: (extra, passthrough)
ATTEMPTS: dict[str, tuple[dict[str, str], list[str]]] = {
    "forced": ({f"{FORCE_PREFIX}{HOME_VAR}": ELSEWHERE}, []),
    "forced lower case": ({f"{FORCE_PREFIX}{HOME_VAR}".lower(): ELSEWHERE}, []),
    "forced mixed case": ({"_Envscope_Force_Envscope_Home": ELSEWHERE}, []),
    "passthrough": ({}, [HOME_VAR]),
    "passthrough lower case": ({}, [HOME_VAR.lower()]),
    "extra": ({HOME_VAR: ELSEWHERE}, []),
    "extra twin": ({HOME_VAR.lower(): ELSEWHERE}, []),
    "nothing": ({}, []),
}


@pytest.mark.parametrize(
    ("attempt", "surface"),
    [(a, s) for a in sorted(ATTEMPTS) for s in Surface if s is not Surface.MCP]
    # an MCP server's block never carries the force prefix (a configuration error)
    + [(a, Surface.MCP) for a in sorted(ATTEMPTS) if not a.startswith("forced")],
)
def test_a_routed_child_is_told_its_own_home(
    make_host: HostFactory, homes: dict[str, Path], attempt: str, surface: Surface
) -> None:
    """Under routed(B) the child holds ENVSCOPE_HOME=B, in that one spelling, whatever was tried."""
    (homes["B"] / ".env").write_text(f"{HOME_VAR}={ELSEWHERE}\nB_MARKER=b\n")
    host = make_host({"PATH": "/usr/bin", HOME_VAR: str(homes["A"])})
    extra, passthrough = ATTEMPTS[attempt]
    with host.routed(homes["B"]):
        env = host.build_subprocess_env(surface=surface, extra=extra, passthrough=passthrough)
    assert env[HOME_VAR] == str(homes["B"])
    assert [k for k in env if k.upper() == HOME_VAR] == [HOME_VAR]
    assert ELSEWHERE not in env.values()


@pytest.mark.parametrize("attempt", sorted(ATTEMPTS))
def test_a_worker_is_told_its_own_home(
    make_host: HostFactory, homes: dict[str, Path], attempt: str
) -> None:
    """An unrouted worker is pinned to the launch home, whatever was tried."""
    host = make_host({"PATH": "/usr/bin"})
    extra, passthrough = ATTEMPTS[attempt]
    env = host.build_subprocess_env(surface=Surface.WORKER, extra=extra, passthrough=passthrough)
    assert env[HOME_VAR] == str(homes["A"])
    assert [k for k in env if k.upper() == HOME_VAR] == [HOME_VAR]


@pytest.mark.parametrize("surface", [s for s in Surface if s is not Surface.MCP])
def test_a_home_path_holding_a_declared_value_is_still_the_home(
    make_host: HostFactory, tmp_path: Path, surface: Surface
) -> None:
    """The factory keeps the home variable; the guard and envscope.testing agree."""
    secret = "secret-value-in-a-path-0001"
    profile = write_home(tmp_path / secret, "B")
    host = make_host({"PATH": "/usr/bin", "TELEGRAM_BOT_TOKEN": secret})
    with host.routed(profile):
        env = host.build_subprocess_env(surface=surface)
        assert env[HOME_VAR] == str(profile)
        assert offences(host, env, implicit=False) == []
        assert_no_secrets(env, host=host, inherit_credentials=True)
    # out of that context, the same entry is a path holding a secret like any other
    assert offences(host, {HOME_VAR: str(profile)}, implicit=False) != []


@pytest.mark.parametrize("spelling", [HOME_VAR, HOME_VAR.lower()])
@pytest.mark.parametrize("surface", list(Surface))
def test_a_grant_of_the_home_variable_is_refused(
    make_host: HostFactory, homes: dict[str, Path], spelling: str, surface: Surface
) -> None:
    """A grant hands a key over as given; the home variable is pinned: it can never pass."""
    from envscope import PassthroughRefusedError

    host = make_host({"PATH": "/usr/bin"})
    with host.routed(homes["B"]), pytest.raises(PassthroughRefusedError, match="home variable"):
        host.build_subprocess_env(surface=surface, extra={spelling: ELSEWHERE}, grant=[spelling])
