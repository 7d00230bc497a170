"""Surface policies from the config: inherit all|core|none, include/exclude globs, set."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from envscope import Host, Inherit, Reason, Surface, SurfacePolicy, Trace
from envscope.surfaces import CORE_NAMES_POSIX, CORE_NAMES_WINDOWS, MCP_SAFE_NAMES_WINDOWS
from tests.conftest import HostFactory

BASE = {
    "PATH": "/bin",
    "HOME": "/h",
    "EDITOR": "vi",
    "CI_JOB": "7",
    "ci_token_name": "x",
    "NOISY_DEBUG": "1",
    "TELEGRAM_BOT_TOKEN": "t",
    "OPENAI_API_KEY": "k",
}


def test_core_lists_are_pinned() -> None:
    """The core lists are literals: widening them is a visible decision."""
    assert frozenset(
        {"HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP",
         "LANG", "LC_ALL", "TERM", "TZ"}
    ) == CORE_NAMES_POSIX  # fmt: skip
    assert CORE_NAMES_WINDOWS == MCP_SAFE_NAMES_WINDOWS


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (SurfacePolicy(), {"PATH", "HOME", "EDITOR", "CI_JOB", "ci_token_name", "NOISY_DEBUG"}),
        (SurfacePolicy(inherit=Inherit.CORE), {"PATH", "HOME"}),
        (SurfacePolicy(inherit=Inherit.NONE), set()),
        (
            SurfacePolicy(inherit=Inherit.CORE, include=("ci_*",)),
            {"PATH", "HOME", "CI_JOB", "ci_token_name"},
        ),
        (SurfacePolicy(exclude=("*_DEBUG", "editor")), {"PATH", "HOME", "CI_JOB", "ci_token_name"}),
        (
            SurfacePolicy(include=("CI_*",), exclude=("CI_JOB",)),
            {"PATH", "HOME", "EDITOR", "ci_token_name", "NOISY_DEBUG"},
        ),
        (SurfacePolicy(inherit=Inherit.NONE, include=("TELEGRAM_*", "OPENAI_*")), set()),
    ],
)
def test_inherit_include_exclude(
    make_host: HostFactory, policy: SurfacePolicy, expected: set[str]
) -> None:
    """Each policy keeps exactly the expected keys; declared secrets never come back."""
    host = make_host(surface_policies={Surface.SCRIPT: policy})
    assert set(host.build_subprocess_env(BASE, surface=Surface.SCRIPT)) == expected
    assert "EDITOR" in host.build_subprocess_env(BASE)  # other surfaces are untouched


def test_set_values_survive_allowlist_but_not_tier1(make_host: HostFactory) -> None:
    """set values survive inherit none; a Tier 1 set is still stripped; caller extras win."""
    policy = SurfacePolicy(
        inherit=Inherit.NONE,
        set_env=MappingProxyType({"PAGER": "cat", "TELEGRAM_BOT_TOKEN": "x", "MODE": "a"}),
    )
    host: Host = make_host(surface_policies={"mcp": policy})
    trace = Trace()
    env = host.build_subprocess_env(BASE, surface=Surface.MCP, extra={"MODE": "b"}, trace=trace)
    assert env == {"PAGER": "cat", "MODE": "b"}
    reasons = {d.key: d.reason for d in trace.final().values()}
    assert reasons["PAGER"] is Reason.SURFACE_SET
    assert reasons["TELEGRAM_BOT_TOKEN"] is Reason.TIER1
    assert reasons["EDITOR"] is Reason.NOT_ALLOWLISTED
    assert reasons["PATH"] is Reason.NOT_INHERITED


def test_mcp_policy_include_extends_safe_base(make_host: HostFactory) -> None:
    """On the MCP surface, include adds names beyond the safe base; the trace says so."""
    host = make_host(surface_policies={Surface.MCP: SurfacePolicy(include=("EDITOR",))})
    trace = Trace()
    env = host.build_subprocess_env(BASE, surface=Surface.MCP, trace=trace)
    assert env == {"PATH": "/bin", "HOME": "/h", "EDITOR": "vi"}
    assert trace.final()["EDITOR"].reason is Reason.INCLUDED
    assert trace.final()["CI_JOB"].reason is Reason.NOT_ALLOWLISTED
