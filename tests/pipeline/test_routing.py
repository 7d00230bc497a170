"""Launch residue, routing, managed keys, gates, identity, multiplex."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Mapping
from pathlib import Path

import pytest

from envscope import Host, RoutingError, StaticSource, Surface
from tests.conftest import HostFactory, write_home

OPERATOR = {"PATH": "/usr/bin", "HOME": "/home/op", "LANG": "C.UTF-8"}


def launched(
    make_host: HostFactory, extra_env: Mapping[str, str] | None = None, **kw: object
) -> Host:
    """A host over A whose launch env has been loaded."""
    host = make_host({**OPERATOR, **(extra_env or {})}, **kw)
    host.load_launch_env()
    return host


def test_routed_child_drops_launch_dotenv_and_gets_own_scope(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """Routed to B, A's .env names are gone and B's are present; A's child keeps A's."""
    host = launched(make_host)
    with host.routed(homes["B"]):
        env_b = host.build_subprocess_env()
    assert "A_MARKER" not in env_b
    assert "SOME_MODEL" not in env_b
    assert env_b["B_MARKER"] == "b"
    with host.routed(homes["A"]) as binding:
        assert binding.routed is False
        env_a = host.build_subprocess_env()
    assert env_a["A_MARKER"] == "a"
    assert "B_MARKER" not in env_a


def test_key_removed_from_launch_dotenv_is_still_residue(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """A key A's .env held at launch and later lost is still residue."""
    host = launched(make_host)
    (homes["A"] / ".env").write_text("SOME_MODEL=gpt-a\n")
    assert "A_MARKER" in host.launch_dotenv_keys()
    with host.routed(homes["B"]):
        env = host.build_subprocess_env()
    assert "A_MARKER" not in env


def test_current_launch_dotenv_keys_are_residue(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """Residue includes keys added to the launch .env after launch (and set by hand in the env)."""
    host = launched(make_host)
    (homes["A"] / ".env").write_text("A_MARKER=a\nLATE_KEY=x\n")
    host._environ["LATE_KEY"] = "x"
    with host.routed(homes["B"]):
        env = host.build_subprocess_env()
    assert "LATE_KEY" not in env


def test_secret_source_applied_and_skipped_names_are_residue(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """Names a source applied and names it supplied but skipped are both absent when routed."""
    host = make_host({**OPERATOR, "VAULT_SKIPPED": "ambient"})
    a = str(homes["A"])
    host.add_secret_source(StaticSource("vault", {a: {"VAULT_APPLIED": "1", "VAULT_SKIPPED": "2"}}))
    host.load_launch_env()
    assert host.source_applied_names() == {"VAULT_APPLIED"}
    assert host.source_supplied_names() == {"VAULT_APPLIED", "VAULT_SKIPPED"}
    with host.routed(homes["B"]):
        env = host.build_subprocess_env()
    assert "VAULT_APPLIED" not in env
    assert "VAULT_SKIPPED" not in env


def test_ambient_launch_credential_never_reaches_routed_credentialed_child(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """An ambient OPENAI_API_KEY reaches A's credentialed child but never B's."""
    host = launched(make_host, {"OPENAI_API_KEY": "ambient-a"})
    env_a = host.build_subprocess_env(surface=Surface.CREDENTIALED)
    assert env_a["OPENAI_API_KEY"] == "ambient-a"
    with host.routed(homes["B"]):
        env_b = host.build_subprocess_env(surface=Surface.CREDENTIALED)
    assert "OPENAI_API_KEY" not in env_b


def test_routed_credentialed_child_gets_routed_credentials(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """A routed credentialed child gets the routed profile's own credentials."""
    (homes["B"] / ".env").write_text("B_MARKER=b\nOPENAI_API_KEY=key-of-b\n")
    host = launched(make_host, {"OPENAI_API_KEY": "ambient-a"})
    with host.routed(homes["B"]):
        assert (
            host.build_subprocess_env(surface=Surface.CREDENTIALED)["OPENAI_API_KEY"] == "key-of-b"
        )
        assert "OPENAI_API_KEY" not in host.build_subprocess_env(surface=Surface.TERMINAL)


def test_managed_keys_beat_routed_scope_and_are_never_residue(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """The managed value beats B's own, and a managed key is never stripped as residue."""
    managed = homes["root"] / "managed.env"
    managed.write_text("ORG_POLICY_FLAG=managed-value\nA_MARKER=pinned\n")
    (homes["B"] / ".env").write_text("B_MARKER=b\nORG_POLICY_FLAG=user-value\n")
    host = launched(make_host, managed_env_file=managed)
    assert host.managed_keys() == {"ORG_POLICY_FLAG", "A_MARKER"}
    assert host._environ["A_MARKER"] == "pinned"
    with host.routed(homes["B"]):
        env = host.build_subprocess_env()
    assert env["ORG_POLICY_FLAG"] == "managed-value"
    assert env["A_MARKER"] == "pinned"


def test_managed_file_missing_is_an_error(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """A configured managed file that does not exist fails loudly, naming the file."""
    from envscope import DotenvError

    host = make_host(managed_env_file=homes["root"] / "nope.env")
    with pytest.raises(DotenvError, match=r"nope\.env"):
        host.load_launch_env()


@pytest.mark.parametrize("name", ["PATH", "HOME", "LANG", "TZ", "LC_ALL", "TMPDIR"])
def test_global_names_are_never_residue(
    make_host: HostFactory, homes: dict[str, Path], name: str
) -> None:
    """A global name set by A's .env still reaches a routed child."""
    (homes["A"] / ".env").write_text(f"A_MARKER=a\n{name}=from-a\n")
    host = launched(make_host, {})
    with host.routed(homes["B"]):
        env = host.build_subprocess_env()
    assert name in env


def test_operator_export_survives_routing(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """An operator's own export that A's .env never set survives routing."""
    host = launched(make_host, {"OPERATOR_SETTING": "mine"})
    with host.routed(homes["B"]):
        assert host.build_subprocess_env()["OPERATOR_SETTING"] == "mine"


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("DISCORD_ALLOWED_CHANNELS", False),
        ("TELEGRAM_GROUP_ALLOWED_CHATS", False),
        ("GATEWAY_ALLOW_ALL_USERS", False),
        ("WHATSAPP_GROUP_ALLOW_FROM", False),
        ("DEMO_ALLOWED_SENDER", True),
        ("ACCESS_ALLOWED_CALLBACK_ACE_TYPE", True),
        ("DISCORD_HOME_CHANNEL", False),  # a gate by shape
        ("MYAPP_HOME_CHANNEL", True),
    ],
)
def test_launch_authorization_gates(
    make_host: HostFactory, homes: dict[str, Path], name: str, kept: bool
) -> None:
    """Platform gates from the launch env are stripped when routed; look-alikes are kept."""
    host = launched(make_host, {name: "123"})
    with host.routed(homes["B"]):
        env = host.build_subprocess_env()
    assert (name in env) is kept
    assert name in host.build_subprocess_env()  # not routed: untouched


GATES_BY_SHAPE = [
    "DISCORD_ALLOWED_CHANNELS", "DISCORD_IGNORED_CHANNELS", "DISCORD_NO_THREAD_CHANNELS",
    "DISCORD_FREE_RESPONSE_CHANNELS", "DISCORD_BACKFILL_CHANNELS", "DISCORD_HOME_CHANNEL",
    "DISCORD_REQUIRE_MENTION", "DISCORD_PEER_BOT_IDS", "DISCORD_ALLOW_BOTS",
    "SLACK_ALLOWED_USERS", "SLACK_HOME_CHANNEL", "TELEGRAM_ALLOWED_USERS",
    "TELEGRAM_HOME_CHANNEL", "TELEGRAM_GROUP_ALLOWED_CHATS", "WHATSAPP_ALLOWED_USERS",
    "WHATSAPP_GROUP_ALLOW_FROM", "SIGNAL_ALLOWED_USERS", "SIGNAL_GROUP_ALLOWED_USERS",
    "MATRIX_ALLOWED_USERS", "MATRIX_HOME_ROOM_ALLOWED", "MATRIX_ROOMS", "MATTERMOST_ALLOWED_USERS",
    "MATTERMOST_HOME_CHANNEL", "FEISHU_ALLOWED_USERS", "DINGTALK_ALLOWED_USERS",
    "WECOM_HOME_CHANNEL", "QQ_ALLOWED_USERS", "LINE_ALLOWED_USERS", "EMAIL_ALLOWED_USERS",
    "SMS_ALLOWED_USERS", "HASS_ALLOWED_USERS", "GATEWAY_ALLOW_ALL_USERS", "TEAMS_ALLOWED_USERS",
    "discord_ignored_channels", "Slack_Home_Channel", "CHATX_HOME_CHANNEL",
]  # fmt: skip
NOT_GATES = [
    "DEMO_ALLOWED_SENDER", "ACCESS_ALLOWED_CALLBACK_ACE_TYPE", "MYAPP_HOME_CHANNEL",
    "MYAPP_ALLOWED_USERS", "CHANNEL_SURF", "SLACK_USER_TOKEN", "DISCORD_AUTO_THREAD",
    "DISCORD_REPLY_TO_MODE", "TELEGRAM_PROXY", "GATEWAY_PORT", "HOME", "DISCORDANT_CHANNELS",
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "gate"), [(n, True) for n in GATES_BY_SHAPE] + [(n, False) for n in NOT_GATES]
)
def test_gates_are_recognised_by_shape(
    make_host: HostFactory, homes: dict[str, Path], name: str, gate: bool
) -> None:
    """A platform prefix plus a channel/user/chat setting is a gate; look-alikes are not."""
    host = launched(make_host, {name: "123"})
    host.register_adapter("chatx", ["CHATX_SIGNING_SECRET"])  # an adapter's prefix counts too
    policy = host.policy()
    assert policy.is_gate(name) is gate
    with host.routed(homes["B"]):
        env = host.build_subprocess_env()
    assert (name in env) is not gate or policy.tier_of(name) is not None
    assert name in host.build_subprocess_env() or policy.tier_of(name) is not None


def test_routed_gate_from_own_scope_is_kept(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """B's own gate (from its scope) replaces the stripped launch gate."""
    (homes["B"] / ".env").write_text("DISCORD_ALLOWED_CHANNELS=b-chan\n")
    host = launched(make_host, {"DISCORD_ALLOWED_CHANNELS": "a-chan"})
    with host.routed(homes["B"]):
        assert host.build_subprocess_env()["DISCORD_ALLOWED_CHANNELS"] == "b-chan"


def test_not_routed_not_multiplexed_is_base_minus_secrets(make_host: HostFactory) -> None:
    """Stages 1–3 are no-ops; the child is the base minus declared secrets, byte for byte."""
    host = launched(make_host)
    base = {"A_MARKER": "a", "SOME_MODEL": "m", "TELEGRAM_BOT_TOKEN": "t", "X": "é\u2603", "E": ""}
    env = host.build_subprocess_env(base)
    assert env == {"A_MARKER": "a", "SOME_MODEL": "m", "X": "é\u2603", "E": ""}
    assert list(env) == ["A_MARKER", "SOME_MODEL", "X", "E"]


def test_launch_home_identity_is_pinned(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """Mirroring B into environ[home_env_var] does not make B the launch home."""
    host = launched(make_host)
    host._environ["ENVSCOPE_HOME"] = str(homes["B"])
    assert host.launch_home == str(homes["A"])
    with host.routed(homes["B"]) as binding:
        assert binding.routed is True
        assert "A_MARKER" not in host.build_subprocess_env()


def test_symlink_aliases_are_one_home(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """A symlink alias of A is A (not routed); an alias of B is B."""
    alias_a = homes["root"] / "alias-a"
    alias_b = homes["root"] / "alias-b"
    os.symlink(homes["A"], alias_a)
    os.symlink(homes["B"], alias_b)
    host = launched(make_host)
    with host.routed(alias_a) as binding:
        assert binding.routed is False
        assert binding.home == str(homes["A"])
    with host.routed(alias_b) as binding:
        assert binding.routed is True
        assert binding.home == str(homes["B"])
        assert host.build_subprocess_env()["B_MARKER"] == "b"
    assert host.policy(alias_b) is host.policy(homes["B"])


@pytest.mark.parametrize("surface", [Surface.CREDENTIALED, Surface.WORKER])
def test_multiplex_without_routed_home_refuses(make_host: HostFactory, surface: Surface) -> None:
    """Under multiplex with no routed home, a credentialed (or worker) build raises."""
    host = launched(make_host, {"OPENAI_API_KEY": "k"}, multiplex=True)
    with pytest.raises(RoutingError, match="routed home"):
        host.build_subprocess_env(surface=surface)


def test_multiplex_unbound_terminal_strips_residue(make_host: HostFactory) -> None:
    """Under multiplex with no binding, a terminal child still loses launch residue."""
    host = launched(make_host, multiplex=True)
    env = host.build_subprocess_env()
    assert "A_MARKER" not in env
    assert env["PATH"] == "/usr/bin"


def test_multiplex_routes_even_the_launch_home(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """Under multiplex every spawn is routed, the launch home's included (its scope is re-read)."""
    host = launched(make_host, multiplex=True)
    with host.routed(homes["A"]) as binding:
        assert binding.routed is True
        assert host.build_subprocess_env()["A_MARKER"] == "a"


def test_worker_child_carries_home_var(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """A worker child for B carries home_env_var=B; for the launch home, A."""
    host = launched(make_host, home_env_var="AGENT_HOME")
    with host.routed(homes["B"]):
        assert host.build_subprocess_env(surface=Surface.WORKER)["AGENT_HOME"] == str(homes["B"])
    assert host.build_subprocess_env(surface=Surface.WORKER)["AGENT_HOME"] == str(homes["A"])


def test_binding_is_thread_local(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """A binding in one thread is invisible to another (contextvars)."""
    host = launched(make_host)
    seen: dict[str, str | None] = {}
    inside = threading.Event()
    done = threading.Event()

    def worker() -> None:
        with host.routed(homes["B"]):
            inside.set()
            done.wait(5)
            seen["worker"] = host.bound_home()

    t = threading.Thread(target=worker)
    t.start()
    inside.wait(5)
    seen["main"] = host.bound_home()
    done.set()
    t.join(5)
    assert seen == {"worker": str(homes["B"]), "main": None}


def test_binding_is_task_local(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """Concurrent asyncio tasks each see their own binding."""
    host = launched(make_host)

    async def child(home: Path) -> str:
        with host.routed(home):
            await asyncio.sleep(0.01)
            return host.build_subprocess_env().get("B_MARKER", "none")

    async def main() -> list[str]:
        return list(await asyncio.gather(child(homes["B"]), child(homes["A"])))

    assert asyncio.run(main()) == ["b", "none"]


def test_explicit_scope_replaces_home_dotenv(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """routed(home, scope=...) uses the given scope instead of reading the home's files."""
    host = launched(make_host)
    with host.routed(homes["B"], scope={"GIVEN": "1"}):
        env = host.build_subprocess_env()
    assert env["GIVEN"] == "1"
    assert "B_MARKER" not in env
    assert "A_MARKER" not in env


def test_strip_launch_profile_false_keeps_residue(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """strip_launch_profile=False skips stage 1 but still overlays the scope."""
    host = launched(make_host)
    with host.routed(homes["B"]):
        env = host.build_subprocess_env(strip_launch_profile=False)
    assert env["A_MARKER"] == "a"
    assert env["B_MARKER"] == "b"


def test_routed_scope_interpolates_only_file_and_globals(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """B's .env cannot pull a launch value through ${VAR}; globals and its own keys resolve."""
    (homes["B"] / ".env").write_text("OWN=x\nCOPY=${OPENAI_API_KEY}\nREF=${OWN}-${HOME}\n")
    host = launched(make_host, {"OPENAI_API_KEY": "launch-secret"})
    with host.routed(homes["B"]) as binding:
        assert binding.scope["COPY"] == ""
        assert binding.scope["REF"] == "x-/home/op"


def test_write_home_helper(tmp_path: Path) -> None:
    """The fixture helper writes a parsable .env."""
    home = write_home(tmp_path, "H", {"K": "v"})
    assert (home / ".env").read_text() == "K=v\n"
