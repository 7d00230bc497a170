"""The runtime adapter census."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import PassthroughRefusedError, Surface, Tier
from tests.conftest import HostFactory

NAME = "ACME_CHAT_SIGNING_SECRET"


def test_adapter_declares_for_its_home_only(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """An adapter for B strips and refuses its secret under B only, until unregistered."""
    host = make_host()
    base = {NAME: "s", "ACME_CHAT_URL": "u"}
    host.register_adapter("acme_chat", [NAME, "ACME_CHAT_URL"], home=homes["B"])
    assert host.policy(homes["B"]).tier_of(NAME) is Tier.TIER2
    assert host.policy(homes["B"]).tier_of("ACME_CHAT_URL") is None
    with host.routed(homes["B"], scope=base):
        assert NAME not in host.build_subprocess_env(base)
        with pytest.raises(PassthroughRefusedError, match=NAME):
            host.build_subprocess_env(base, surface=Surface.MCP, passthrough=[NAME])
        assert host.build_subprocess_env(base)["ACME_CHAT_URL"] == "u"
    assert host.build_subprocess_env(base)[NAME] == "s"
    host.unregister_adapter("acme_chat", home=homes["B"])
    host.unregister_adapter("never-registered", home=homes["B"])
    with host.routed(homes["B"], scope=base):
        assert host.build_subprocess_env(base)[NAME] == "s"


def test_adapter_never_promotes_catalog_tier2(make_host: HostFactory) -> None:
    """An adapter naming OPENAI_API_KEY does not strip it from credentialed children."""
    host = make_host()
    host.register_adapter("openai_compat", ["OPENAI_API_KEY", "TELEGRAM_BOT_TOKEN"])
    env = host.build_subprocess_env(
        {"OPENAI_API_KEY": "k", "TELEGRAM_BOT_TOKEN": "t"}, surface=Surface.CREDENTIALED
    )
    assert env == {"OPENAI_API_KEY": "k"}
    assert host.policy().tier_of("TELEGRAM_BOT_TOKEN") is Tier.TIER1


def test_adapter_prefix_counts_as_platform_gate(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """An adapter's prefix is a platform prefix for the gate rule of routed children."""
    host = make_host({"ACME_CHAT_ALLOWED_USERS": "1", "PATH": "/bin"})
    host.register_adapter("acme-chat", ["ACME_CHAT_BOT_TOKEN"])
    with host.routed(homes["B"], scope={}):
        assert "ACME_CHAT_ALLOWED_USERS" not in host.build_subprocess_env()


def test_adapter_default_home_is_the_bound_home(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """register_adapter without home= registers for the bound home."""
    host = make_host()
    with host.routed(homes["B"], scope={}):
        host.register_adapter("acme_chat", [NAME])
    assert host.policy(homes["B"]).tier_of(NAME) is Tier.TIER2
    assert host.policy(homes["A"]).tier_of(NAME) is None
