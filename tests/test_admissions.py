"""Admissions belong to their build's home: bounded, reset, never another home's.

A grant (or an MCP block entry) a build for home A handed over lets that exact
pair pass the runtime guard and ``envscope.testing`` in A's context only; in
B's context the same pair is the leak it looks like.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import Surface
from envscope._admissions import MAX_HOMES, MAX_PAIRS_PER_HOME, Admissions
from envscope._guard import offences
from envscope.testing import assert_no_secrets
from tests.conftest import HostFactory

TOKEN = "fake-telegram-bot-token-0001"


@pytest.mark.parametrize("granted_in", ["launch", "B"])
@pytest.mark.parametrize("surface", [Surface.TERMINAL, Surface.MCP], ids=lambda s: s.value)
def test_a_grant_in_one_home_never_passes_in_another(
    make_host: HostFactory, homes: dict[str, Path], granted_in: str, surface: Surface
) -> None:
    """Grant in A (or B): the pair passes there; in the other home's context it is flagged."""
    host = make_host({"PATH": "/usr/bin", "TELEGRAM_BOT_TOKEN": TOKEN})
    extra = {"TOOL_TOKEN": TOKEN}
    grant = ["TOOL_TOKEN"]  # a block entry holding a host secret needs the grant too

    def build() -> None:
        host.build_subprocess_env(surface=surface, extra=extra, grant=grant)

    other = homes["B"] if granted_in == "launch" else None
    if granted_in == "B":
        with host.routed(homes["B"]):
            build()
    else:
        build()
    pair_env = {"TOOL_TOKEN": TOKEN}
    here = homes["B"] if granted_in == "B" else None
    assert host.admitted("TOOL_TOKEN", TOKEN, here)
    assert not host.admitted("TOOL_TOKEN", TOKEN, other)
    assert_no_secrets(pair_env, host=host, home=here)
    with pytest.raises(AssertionError, match="TOOL_TOKEN"):
        assert_no_secrets(pair_env, host=host, home=other)
    if other is None:
        assert offences(host, pair_env, implicit=False) != []
        with host.routed(homes["B"]):
            assert offences(host, pair_env, implicit=False) == []
    else:
        assert offences(host, pair_env, implicit=False) == []
        with host.routed(homes["B"]):
            assert offences(host, pair_env, implicit=False) != []
    host.reset_admissions()
    assert not host.admitted("TOOL_TOKEN", TOKEN, here)


def test_admissions_are_bounded() -> None:
    """At most MAX_HOMES homes and MAX_PAIRS_PER_HOME pairs each; the oldest go first."""
    held = Admissions()
    for i in range(MAX_PAIRS_PER_HOME + 10):
        held.admit("/home/a", [("K", f"value-{i}")])
    assert not held.admitted("/home/a", "K", "value-0")
    assert held.admitted("/home/a", "K", f"value-{MAX_PAIRS_PER_HOME + 9}")
    for i in range(MAX_HOMES + 1):
        held.admit(f"/home/{i}", [("K", "v")])
    assert not held.admitted("/home/a", "K", f"value-{MAX_PAIRS_PER_HOME + 9}")
    assert held.admitted(f"/home/{MAX_HOMES}", "K", "v")
    assert "value" not in repr(held)
    held.reset()
    assert not held.admitted(f"/home/{MAX_HOMES}", "K", "v")
