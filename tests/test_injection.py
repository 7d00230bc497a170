"""Injection vectors: names that change how a child starts may not be introduced (issue 6.7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import FORCE_PREFIX, Action, Catalog, Reason, Surface, Trace
from tests.conftest import HostFactory

VECTORS = ["LD_PRELOAD", "DYLD_INSERT_LIBRARIES", "BASH_ENV", "ENV", "PYTHONSTARTUP",
           "PYTHONPATH", "NODE_OPTIONS", "PERL5OPT", "RUBYOPT", "JAVA_TOOL_OPTIONS",
           "GIT_SSH_COMMAND", "GIT_CONFIG_COUNT", "GCONV_PATH", "ld_library_path"]  # fmt: skip


@pytest.mark.parametrize("name", VECTORS)
def test_catalog_ships_the_table(name: str) -> None:
    """The default catalog knows each injection vector (any case), and not ordinary names."""
    assert Catalog.default().is_injection_vector(name)
    assert not Catalog.default().is_injection_vector("PATH")
    assert not Catalog.default().is_injection_vector("ENVIRONMENT")


@pytest.mark.parametrize("name", VECTORS)
def test_routed_scope_cannot_introduce(
    make_host: HostFactory, homes: dict[str, Path], name: str
) -> None:
    """A routed home's .env cannot put an injection vector into a child; the trace says why."""
    (homes["B"] / ".env").write_text(f"B_MARKER=b\n{name}=/tmp/evil\n")
    host = make_host({"PATH": "/bin"})
    trace = Trace()
    with host.routed(homes["B"]):
        env = host.build_subprocess_env(trace=trace)
    assert name not in env
    assert env["B_MARKER"] == "b"
    refused = trace.for_key(name)
    assert [(d.action, d.reason) for d in refused] == [(Action.REFUSED, Reason.INJECTION_VECTOR)]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"surface": Surface.MCP, "extra": {"NODE_OPTIONS": "--require /tmp/x.js"}},
        {"extra": {"LD_PRELOAD": "/tmp/x.so"}},
        {"extra": {f"{FORCE_PREFIX}BASH_ENV": "/tmp/x.sh"}},
        {"surface": Surface.MCP, "passthrough": ["PYTHONPATH"]},
    ],
    ids=["mcp-env-block", "extra", "force-prefix", "passthrough"],
)
def test_extra_force_and_passthrough_cannot_introduce(
    make_host: HostFactory, kwargs: dict[str, object]
) -> None:
    """An MCP env: block, an extra, a forced name or a passthrough cannot introduce one."""
    trace = Trace()
    env = make_host().build_subprocess_env(
        {"PATH": "/bin", "PYTHONPATH": "/launch"},
        trace=trace,
        **kwargs,  # type: ignore[arg-type]
    )
    assert not [k for k in env if Catalog.default().is_injection_vector(k) and k != "PYTHONPATH"]
    assert any(d.reason is Reason.INJECTION_VECTOR for d in trace)
    if kwargs.get("surface") is Surface.MCP:
        assert "PYTHONPATH" not in env


def test_launch_env_keeps_its_own_and_explain_warns(make_host: HostFactory) -> None:
    """The launch env's own vector is kept (not introduced) and explain warns about it."""
    host = make_host(
        {
            "PATH": "/bin",
            "LD_PRELOAD": "/opt/libfast.so",
            "ENVSCOPE_FINGERPRINT_KEY": "k-of-sixteen-chars",
        }
    )
    trace = host.explain()
    assert trace.final()["LD_PRELOAD"].action is Action.KEPT
    assert any(w.startswith("LD_PRELOAD: the launch env carries") for w in trace.context.warnings)


def test_host_can_allow_explicitly(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """Host(allow_injection=...) lets a scope or an extra set the named vector."""
    (homes["B"] / ".env").write_text("PYTHONPATH=/srv/b/lib\n")
    host = make_host({"PATH": "/bin"}, allow_injection=["pythonpath"])
    with host.routed(homes["B"]):
        assert host.build_subprocess_env()["PYTHONPATH"] == "/srv/b/lib"
    assert host.build_subprocess_env({}, extra={"PYTHONPATH": "/x"}) == {"PYTHONPATH": "/x"}
    assert "LD_PRELOAD" not in host.build_subprocess_env({}, extra={"LD_PRELOAD": "/x"})


def test_managed_and_surface_set_are_host_decisions(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """The administrator's managed file and the host's surface policy may set one."""
    from envscope import SurfacePolicy

    managed = homes["root"] / "managed.env"
    managed.write_text("NODE_OPTIONS=--max-old-space-size=512\n")
    policy = SurfacePolicy(set_env={"PYTHONSTARTUP": "/etc/agent/startup.py"})
    host = make_host(
        {"PATH": "/bin"}, managed_env_file=managed, surface_policies={"script": policy}
    )
    host.load_launch_env()
    with host.routed(homes["B"]):
        env = host.build_subprocess_env(surface=Surface.SCRIPT)
    assert env["NODE_OPTIONS"] == "--max-old-space-size=512"
    assert env["PYTHONSTARTUP"] == "/etc/agent/startup.py"
