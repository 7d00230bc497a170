"""A ``BuildRequest`` is written once: the host makes it, and nothing rebinds a field after."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import Surface, Trace
from envscope.pipeline._request import BuildRequest
from tests._write_once import rebinds_of
from tests.conftest import HostFactory

BASE = {"PATH": "/usr/bin", "K": "v", "OPENAI_API_KEY": "sk-host-value-1234567890"}


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[BuildRequest]:
    """Every request made while the test runs."""
    found: list[BuildRequest] = []
    real = BuildRequest.__init__

    def keeping(self: BuildRequest, *args: object, **kwargs: object) -> None:
        real(self, *args, **kwargs)  # type: ignore[arg-type]
        found.append(self)

    monkeypatch.setattr(BuildRequest, "__init__", keeping)
    return found


@pytest.fixture
def rebinds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every field a build sets on a request that already holds it (none, if write-once)."""
    return rebinds_of(monkeypatch, BuildRequest)


@pytest.mark.parametrize("surface", list(Surface), ids=lambda s: s.value)
@pytest.mark.parametrize("routed", [False, True], ids=["unbound", "routed"])
@pytest.mark.parametrize("traced", [False, True], ids=["untraced", "traced"])
def test_no_build_rebinds_a_request_field(
    make_host: HostFactory,
    homes: dict[str, Path],
    rebinds: list[str],
    made: list[BuildRequest],
    surface: Surface,
    routed: bool,
    traced: bool,
) -> None:
    """Over every surface, routed or not, traced or not, a miss then a memo hit: no rebinding."""
    host = make_host()
    for _ in range(2):  # a miss, then a hit
        trace = Trace() if traced else None
        extra = {"E": "e"}
        if routed:
            with host.routed(homes["B"]):
                host.build_subprocess_env(BASE, surface=surface, extra=extra, trace=trace)
                host.explain(BASE, surface=surface, extra=extra)
        else:
            host.build_subprocess_env(BASE, surface=surface, extra=extra, trace=trace)
            host.explain(BASE, surface=surface, extra=extra)
    assert len(made) == 4
    assert rebinds == []


def test_the_guard_sees_a_rebinding(
    make_host: HostFactory, rebinds: list[str], made: list[BuildRequest]
) -> None:
    """The fixture can fail: a field set twice on one request is reported."""
    make_host().build_subprocess_env(BASE)
    made[0].surface = Surface.TERMINAL
    assert rebinds == ["surface"]
