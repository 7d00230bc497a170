"""A routed profile's own MCP config is no oracle for the launch profile's secrets.

Profile B writes guesses into the MCP config in its home, as env block
literals and as arguments. What B can observe (whether its server gets the
key, whether loading fails) must never depend on whether a guess equals a
launch secret: B's literals are compared with B's own secrets only. A config
outside B's home (the operator's) still has its literals compared with every
secret the host holds, and a reference (``${NAME}``) in B's config is the
host's value wherever it sits.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscope import ConfigFileError, Host
from envscope.mcp import load_server_parameters, read_server_config, stdio_server_parameters
from tests.conftest import HostFactory, platform_plugin

BOT = "launch-telegram-bot-0123456789"  # TELEGRAM_BOT_TOKEN (catalog Tier 1)
OAI = "sk-launch-openai-key-0123456789"  # OPENAI_API_KEY (catalog Tier 2)
PLUGIN = "launch-plugin-secret-0123456789"  # CHATX_APP_TOKEN: declared by A's plugin
PROXY = "launch-proxy-password-0123"  # inside HTTPS_PROXY (never residue)
B_OWN = "b-own-telegram-bot-98765432"  # B's own TELEGRAM_BOT_TOKEN: B's secret
GUESS = "a-guess-of-no-one-0123456789"  # equal to nothing
PARENT = {
    "PATH": "/usr/bin",
    "TELEGRAM_BOT_TOKEN": BOT,
    "OPENAI_API_KEY": OAI,
    "CHATX_APP_TOKEN": PLUGIN,
    "HTTPS_PROXY": f"http://op:{PROXY}@proxy.invalid:3128",
}
LAUNCH_GUESSES = {"tier1": BOT, "tier2": OAI, "plugin": PLUGIN, "nothing": GUESS}


def _config(folder: Path, env: dict[str, str], args: list[str]) -> Path:
    path = folder / ".mcp.json"
    path.write_text(
        json.dumps({"mcpServers": {"srv": {"command": "srv", "args": args, "env": env}}})
    )
    return path


def _host(make_host: HostFactory, homes: dict[str, Path]) -> Host:
    platform_plugin(homes["A"], "chatx", "name: chatx\nrequires_env: [CHATX_APP_TOKEN]\n")
    (homes["B"] / ".env").write_text(f"TELEGRAM_BOT_TOKEN={B_OWN}\n")
    return make_host(dict(PARENT))


def _observed(host: Host, home: Path, path: Path, two_step: bool) -> tuple[str, str | None]:
    """What B sees of one load: ``ok`` and the server's GUESSED value, or the error's field."""
    with host.routed(home):
        try:
            if two_step:
                (server,) = read_server_config(path, host.parent_env()).values()
                params = stdio_server_parameters(
                    host, server.command, list(server.args), env=server.env, sdk_defaults="allow"
                )
            else:
                params = load_server_parameters(host, path, sdk_defaults="allow")["srv"]
        except ConfigFileError as failed:
            return "error", failed.field
    assert params.env is not None
    return "ok", params.env.get("GUESSED")


@pytest.mark.parametrize("two_step", [False, True], ids=["load", "two-step"])
@pytest.mark.parametrize("where", ["env", "arg"])
def test_what_a_routed_profile_sees_never_depends_on_a_launch_secret(
    make_host: HostFactory, homes: dict[str, Path], where: str, two_step: bool
) -> None:
    """Every launch secret as a guess in B's own config is treated as a guess equal to nothing."""
    host = _host(make_host, homes)
    seen = {}
    for name, guess in LAUNCH_GUESSES.items():
        env = {"GUESSED": guess if where == "env" else "plain-value"}
        args = [guess] if where == "arg" else ["--stdio"]
        seen[name] = _observed(host, homes["B"], _config(homes["B"], env, args), two_step)
    # the server gets each guess as typed (env), or loads with no error (argv): as GUESS does
    assert seen == {
        name: ("ok", guess if where == "env" else "plain-value")
        for name, guess in LAUNCH_GUESSES.items()
    }


@pytest.mark.parametrize("where", ["env", "arg"])
def test_the_profiles_own_secret_is_still_its_secret(
    make_host: HostFactory, homes: dict[str, Path], where: str
) -> None:
    """B's literal equal to B's own Tier 1 value: refused, naming the field (B's own secret)."""
    host = _host(make_host, homes)
    env = {"GUESSED": B_OWN} if where == "env" else {}
    args = [B_OWN] if where == "arg" else []
    outcome = _observed(host, homes["B"], _config(homes["B"], env, args), False)
    field = "mcpServers.srv.env.GUESSED" if where == "env" else "mcpServers.srv.args[0]"
    assert outcome == ("error", field)


@pytest.mark.parametrize("where", ["env", "arg"])
def test_the_operators_config_outside_the_home_is_compared_with_every_secret(
    make_host: HostFactory, homes: dict[str, Path], where: str
) -> None:
    """A config outside B's home holding a launch secret: withheld or refused, as before."""
    host = _host(make_host, homes)
    folder = homes["root"] / "operator"
    folder.mkdir()
    env = {"GUESSED": BOT} if where == "env" else {}
    args = [BOT] if where == "arg" else []
    path = _config(folder, env, args)
    with host.routed(homes["B"]), pytest.raises(ConfigFileError):
        load_server_parameters(host, path, sdk_defaults="allow")


@pytest.mark.parametrize("where", ["env", "arg"])
def test_a_reference_in_the_profiles_config_is_the_hosts_value(
    make_host: HostFactory, homes: dict[str, Path], where: str
) -> None:
    """``${HTTPS_PROXY}`` (the launch proxy's password inside) in B's config: never B's own."""
    host = _host(make_host, homes)
    env = {"GUESSED": "${HTTPS_PROXY}"} if where == "env" else {}
    args = ["${HTTPS_PROXY}"] if where == "arg" else []
    path = _config(homes["B"], env, args)
    with host.routed(homes["B"]), pytest.raises(ConfigFileError) as refused:
        load_server_parameters(host, path, sdk_defaults="allow")
    assert PROXY not in str(refused.value)
