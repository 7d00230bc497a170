"""A secret source's ``credential_names`` are Tier 1 for every child (issue 12)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path

import pytest

from envscope import (
    FORCE_PREFIX,
    ConfigurationError,
    EnvValueError,
    PassthroughRefusedError,
    SecretSource,
    StaticSource,
    Surface,
    Tier,
)
from tests.conftest import HostFactory


class VaultDouble:
    """A test double of a vault client that authenticates with two names the catalog lacks."""

    credential_names = ("ACME_VAULT_TOKEN", "acme_role_secret")

    def __init__(self) -> None:
        self.fetched: list[str] = []

    @property
    def name(self) -> str:
        """The source's name."""
        return "vault"

    def fetch(self, home: str) -> Mapping[str, str]:
        """One value per home, recording each call."""
        self.fetched.append(home)
        return {"DB_PASSWORD_FROM_VAULT": f"db-{Path(home).name}"}


CREDENTIALS = {"ACME_VAULT_TOKEN": "hvs.fake-vault-token", "ACME_ROLE_SECRET": "fake-role-secret"}
MODES = ["plain", "inherit", "passthrough", "force", "extra"]


@pytest.mark.parametrize("routed", [False, True], ids=["launch", "routed"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("surface", list(Surface))
def test_credential_names_never_reach_a_child(
    make_host: HostFactory, homes: dict[str, Path], surface: Surface, mode: str, routed: bool
) -> None:
    """On every surface, routed or not, plain, inherited, passed through or forced: stripped."""
    (homes["B"] / ".env").write_text("ACME_VAULT_TOKEN=hvs.b-own-token\nB_MARKER=b\n")
    host = make_host({"PATH": "/bin", **CREDENTIALS})
    host.add_secret_source(VaultDouble())
    host.load_launch_env()
    kwargs: dict[str, object] = {"surface": surface}
    if mode == "inherit":
        kwargs["inherit_credentials"] = True
    elif mode == "passthrough":
        kwargs["passthrough"] = list(CREDENTIALS)
    elif mode == "force":
        kwargs["extra"] = {f"{FORCE_PREFIX}{k}": v for k, v in CREDENTIALS.items()}
    elif mode == "extra":
        kwargs["extra"] = dict(CREDENTIALS)
    # refused loudly, nothing reaches a child: a passthrough of a declared name, a forced
    # key in an MCP server's block (a configuration error), a declared name in plain extra
    # (an MCP block's entry naming a source credential is dropped and traced)
    loud: tuple[type[Exception], ...] = (
        (ConfigurationError,)
        if mode == "force" and surface is Surface.MCP
        else (PassthroughRefusedError,)
        if mode == "passthrough"
        else (EnvValueError,)
        if mode == "extra" and surface is not Surface.MCP
        else ()
    )
    try:
        if routed:
            with host.routed(homes["B"]):
                env = host.build_subprocess_env(**kwargs)  # type: ignore[arg-type]
        else:
            env = host.build_subprocess_env(**kwargs)  # type: ignore[arg-type]
    except loud:
        return
    upper = {k.upper() for k in env}
    assert not upper & {"ACME_VAULT_TOKEN", "ACME_ROLE_SECRET"}
    assert not [v for v in env.values() if v in CREDENTIALS.values() or v == "hvs.b-own-token"]


def test_policy_says_tier1_and_names_the_source(make_host: HostFactory) -> None:
    """The policy declares each credential name Tier 1, with the source as the reason."""
    host = make_host()
    host.add_secret_source(VaultDouble())
    decl = host.policy().declaration("acme_vault_token")
    assert decl is not None
    assert decl.tier is Tier.TIER1
    assert "secret source vault" in decl.origin.detail


def test_a_cached_policy_is_rebuilt(make_host: HostFactory) -> None:
    """A policy (and a memoised build) from before the source was added is not reused."""
    host = make_host({"PATH": "/bin", "ACME_VAULT_TOKEN": "t"})
    assert host.build_subprocess_env()["ACME_VAULT_TOKEN"] == "t"  # undeclared so far
    before = host.policy()
    host.add_secret_source(StaticSource("vault", {}, credential_names=["ACME_VAULT_TOKEN"]))
    assert host.policy() is not before
    assert "ACME_VAULT_TOKEN" not in host.build_subprocess_env()


def test_a_source_without_the_attribute_still_works(make_host: HostFactory) -> None:
    """The attribute is optional: an old-style source declares nothing and still fetches."""

    class Plain:
        name = "plain"

        def fetch(self, home: str) -> Mapping[str, str]:
            return {"FROM_PLAIN": "1"}

    source = Plain()
    assert isinstance(source, SecretSource)
    host = make_host({"PATH": "/bin"})
    host.add_secret_source(source)
    host.load_launch_env()
    assert host.build_subprocess_env()["FROM_PLAIN"] == "1"


@pytest.mark.parametrize("names", ["ACME_VAULT_TOKEN", b"ACME_VAULT_TOKEN", [1], ["BAD NAME"], 7])
def test_malformed_credential_names_are_refused(make_host: HostFactory, names: object) -> None:
    """A bare string (it would declare its letters), a non-name or a non-list is an error."""

    class Odd:
        name = "odd"
        credential_names = names

        def fetch(self, home: str) -> Mapping[str, str]:
            return {}

    with pytest.raises(ConfigurationError, match="odd"):
        make_host().add_secret_source(Odd())


@pytest.mark.parametrize("routed", [False, True], ids=["launch", "routed"])
def test_credential_names_added_after_a_build_reach_the_cached_policies(
    make_host: HostFactory, homes: dict[str, Path], routed: bool
) -> None:
    """A source added after builds cached the policies: its credential names strip at once."""
    host = make_host({"PATH": "/bin", **CREDENTIALS})
    bound = host.routed(homes["B"]) if routed else contextlib.nullcontext()
    with bound:
        before = host.build_subprocess_env()
    assert set(CREDENTIALS) <= set(before)  # undeclared until the source says so
    host.add_secret_source(VaultDouble())
    with host.routed(homes["B"]) if routed else contextlib.nullcontext():
        after = host.build_subprocess_env()
    assert not set(CREDENTIALS) & set(after)
