"""The network-trust family (proxies, CA bundles) is one catalog set.

Never launch residue, forwarded to MCP children unless the host turns that
off, matched in any case, and a proxy URL carrying a password is warned about.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import Catalog, CatalogError, Host, Surface
from envscope.cli.config import load_config
from tests.conftest import HostFactory

NETWORK_TRUST_NAMES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
)
SPELLINGS = [name for upper in NETWORK_TRUST_NAMES for name in (upper, upper.lower())]
FAMILY = sorted(Catalog.default().network_trust)


def test_the_family_is_one_catalog_set() -> None:
    """Every NETWORK_TRUST_NAMES name is in the default catalog's network_trust, none a secret."""
    catalog = Catalog.default()
    assert set(NETWORK_TRUST_NAMES) <= catalog.network_trust
    assert all(catalog.lookup(name) is None for name in catalog.network_trust)
    assert not catalog.network_trust & catalog.global_names  # one list per concept


@pytest.mark.parametrize("name", SPELLINGS + FAMILY)
def test_never_launch_residue(make_host: HostFactory, homes: dict[str, Path], name: str) -> None:
    """A network-trust name from A's .env (any case) still reaches a child routed to B."""
    (homes["A"] / ".env").write_text(f"A_MARKER=a\n{name}=from-a\n")
    host = make_host({"PATH": "/usr/bin"})
    host.load_launch_env()
    with host.routed(homes["B"]):
        env = host.build_subprocess_env()
    assert env.get(name) == "from-a"
    assert "A_MARKER" not in env


@pytest.mark.parametrize("name", SPELLINGS + FAMILY)
@pytest.mark.parametrize("windows", [False, True])
def test_reaches_mcp_children_by_default(make_host: HostFactory, name: str, windows: bool) -> None:
    """The MCP allowlist forwards the family (any case) on both platforms."""
    env = make_host({"PATH": "/b", name: "v", "DATABASE_URL": "d"}, windows=windows)
    child = env.build_subprocess_env(surface=Surface.MCP)
    defaults = {"PATHEXT", "SYSTEMROOT"} if windows else set()  # Windows' own, as under core
    assert {k: v for k, v in child.items() if k not in defaults} == {"PATH": "/b", name: "v"}
    assert set(child) - {"PATH", name} == defaults


@pytest.mark.parametrize("name", SPELLINGS)
def test_a_host_can_turn_mcp_forwarding_off(make_host: HostFactory, name: str) -> None:
    """Host(mcp_network_trust=False) keeps the family from MCP children, nowhere else."""
    host = make_host({"PATH": "/b", name: "v"}, mcp_network_trust=False)
    assert host.build_subprocess_env(surface=Surface.MCP) == {"PATH": "/b"}
    assert host.build_subprocess_env(surface=Surface.TERMINAL) == {"PATH": "/b", name: "v"}


@pytest.mark.parametrize(("text", "forwarded"), [("", True), ("mcp_network_trust: false\n", False)])
def test_config_file_switch(tmp_path: Path, text: str, forwarded: bool) -> None:
    """envscope.yaml's mcp_network_trust (default true) reaches the Host it builds."""
    (tmp_path / "a").mkdir()
    path = tmp_path / "envscope.yaml"
    path.write_text(f"launch_home: ./a\n{text}")
    config = load_config(str(path))
    assert config.mcp_network_trust is forwarded
    host = config.build_host({"PATH": "/b", "HTTPS_PROXY": "http://proxy:3128"})
    env = host.build_subprocess_env(surface=Surface.MCP)
    assert ("HTTPS_PROXY" in env) is forwarded


def test_posix_mcp_child_gets_both_proxy_spellings(make_host: HostFactory) -> None:
    """On POSIX curl's http_proxy and the upper-case twin both reach an MCP child."""
    base = {"PATH": "/b", "http_proxy": "http://lower:3128", "HTTP_PROXY": "http://upper:3128"}
    assert make_host(base, windows=False).build_subprocess_env(surface=Surface.MCP) == base


@pytest.mark.parametrize("surface", [Surface.MCP, Surface.TERMINAL])
@pytest.mark.parametrize(
    ("value", "stripped"),
    [("http://user:hunter2@proxy:3128", True), ("user:hunter2@proxy:3128", False),
     ("socks5://u:p@h:1", True)],
)  # fmt: skip
def test_proxy_password_is_a_credential_or_warned(
    make_host: HostFactory, surface: Surface, value: str, stripped: bool
) -> None:
    """A proxy URL carrying a password is a credential format (stripped; known_safe
    keeps it); a scheme-less one is kept with the URL-shape warning. Never the value."""
    environ = {"PATH": "/b", "https_proxy": value, "ENVSCOPE_FINGERPRINT_KEY": "k" * 16}
    trace = make_host(environ).explain(surface=surface)
    assert ("https_proxy" not in trace.context.child_keys) is stripped
    mine = [w for w in trace.context.warnings if w.key == "https_proxy"]
    assert len(mine) == (0 if stripped else 1)
    assert all(w.kind == "url-with-password" and "URL with a password" in w.message for w in mine)
    assert "hunter2" not in " ".join(map(str, trace.context.warnings))
    kept = make_host(environ, known_safe=["https_proxy"]).explain(surface=surface)
    assert "https_proxy" in kept.context.child_keys


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ("network_trust: HTTP_PROXY\n", "network_trust"),
        ("network_trust: ['HTTP PROXY']\n", "network_trust"),
        ("network_trust: [1]\n", "network_trust[0]"),
    ],
)
def test_catalog_network_trust_is_strict(doc: str, field: str) -> None:
    """A catalog's network_trust must be a list of environment names (error names the field)."""
    with pytest.raises(CatalogError) as caught:
        Catalog.from_yaml(doc, source="host.yaml")
    assert caught.value.field == field


def test_catalog_extension_merges_network_trust() -> None:
    """A host catalog's network_trust adds to the default family."""
    extended = Catalog.default().extend(Catalog.from_yaml("network_trust: [corp_ca]\n"))
    assert "CORP_CA" in extended.network_trust
    assert set(NETWORK_TRUST_NAMES) <= extended.network_trust


def test_a_host_with_its_own_global_names_keeps_the_family(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """Host(global_names=...) replaces the global names, never the network-trust family."""
    (homes["A"] / ".env").write_text("CURL_CA_BUNDLE=/etc/ca.pem\n")
    host: Host = make_host({"PATH": "/usr/bin"}, global_names=["PATH"])
    host.load_launch_env()
    with host.routed(homes["B"]):
        assert host.build_subprocess_env()["CURL_CA_BUNDLE"] == "/etc/ca.pem"
