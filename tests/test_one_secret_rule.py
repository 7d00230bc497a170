"""The leak classes of the one secret rule (issue 18).

Each class is a matrix over surfaces, routing, spellings and positions, asked
of the public surfaces a host uses: ``build_subprocess_env``, the runtime guard
(``envscope._guard.offences``), the MCP config loader and ``envscope.testing``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import envscope
from envscope import (
    ConfigFileError,
    ConfigurationError,
    EnvscopeError,
    EnvValueError,
    PassthroughRefusedError,
    Reason,
    RoutingError,
    StaticSource,
    Surface,
    Trace,
)
from envscope._guard import offences
from envscope.testing import assert_no_secrets
from tests.conftest import HostFactory, build, platform_plugin, write_home

TOKEN = "fake-github-token-0123456789"  # GITHUB_TOKEN: Tier 1 in the default catalog
BOT = "fake-telegram-bot-0123456789"  # TELEGRAM_BOT_TOKEN: Tier 1
OPENAI = "sk-fake-launch-openai-0123456789"  # OPENAI_API_KEY: Tier 2
NOT_MCP = [s for s in Surface if s is not Surface.MCP]

# Where a secret sits inside a longer value (issue 18 item 3).
POSITIONS = {
    "url-userinfo": "https://x:{}@github.com/o/r.git",
    "url-path": "https://example.invalid/bot{}/send",
    "bearer": "Bearer {}",
    "single-quoted": "'{}'",
    "double-quoted": '"{}"',
    "whitespace": "  {}\n",
    "path-list": "/usr/bin:{}:/bin",
    "comma-list": "a,{},b",
    "json": '{{"token": "{}"}}',
}


# -- secret values by declaration, not by suffix -----------------------------------


@pytest.mark.parametrize(
    "name",
    ["AWS_BEARER_TOKEN_BEDROCK", "VERTEXAI_CREDENTIALS", "QIANFAN_SK", "DISCORD_WEBHOOK_URL"],
)
@pytest.mark.parametrize("surface", NOT_MCP)
@pytest.mark.parametrize("routed", [False, True], ids=["launch", "routed"])
def test_a_declared_value_is_a_secret_whatever_its_suffix(
    make_host: HostFactory,
    homes: dict[str, Path],
    name: str,
    surface: Surface,
    routed: bool,
) -> None:
    """The value of any declared name, copied under another name, is stripped with the name."""
    value = "https://discord.com/api/webhooks/1/abcdefgh" if "URL" in name else "declared-0123456"
    host = make_host({"PATH": "/b", name: value, "COPY_OF_IT": value})
    env = build(host, homes["B"] if routed else None, surface=surface)
    tier2_kept = surface is Surface.CREDENTIALED and not routed and name != "DISCORD_WEBHOOK_URL"
    assert ("COPY_OF_IT" in env) is tier2_kept
    assert (value in env.values()) is tier2_kept
    assert offences(host, {"COPY_OF_IT": value}, implicit=True) == [
        f"COPY_OF_IT (the value of {name})"
    ]


# -- inside a longer value ---------------------------------------------------------


@pytest.mark.parametrize("position", sorted(POSITIONS))
@pytest.mark.parametrize("surface", NOT_MCP)
@pytest.mark.parametrize("routed", [False, True], ids=["launch", "routed"])
def test_a_secret_inside_a_longer_value_strips_the_carrier(
    make_host: HostFactory, homes: dict[str, Path], position: str, surface: Surface, routed: bool
) -> None:
    """A Tier 1 secret inside a URL, Bearer, quotes, whitespace or a list: the carrier goes."""
    carrier = POSITIONS[position].format(TOKEN)
    host = make_host({"PATH": "/b", "GITHUB_TOKEN": TOKEN, "CARRIER": carrier})
    trace = Trace()
    if routed:
        with host.routed(homes["B"]):
            env = host.build_subprocess_env(surface=surface, trace=trace)
    else:
        env = host.build_subprocess_env(surface=surface, trace=trace)
    assert "CARRIER" not in env
    assert not [v for v in env.values() if TOKEN in v]
    decision = trace.final()["CARRIER"]
    assert decision.reason is Reason.ALIAS_OF
    # the secret's key, never its value; padding is no part of a value as consumers read it
    relation = "same value as" if position == "whitespace" else "holds the value of"
    assert decision.note == f"{relation} GITHUB_TOKEN"
    assert TOKEN not in repr(list(trace))


@pytest.mark.parametrize("position", sorted(POSITIONS))
def test_the_caller_extra_cannot_carry_a_secret_inside_a_value(
    make_host: HostFactory, position: str
) -> None:
    """The same through extra, and the guard refuses the same env built by hand."""
    carrier = POSITIONS[position].format(BOT)
    host = make_host({"PATH": "/b", "TELEGRAM_BOT_TOKEN": BOT})
    env = host.build_subprocess_env(extra={"CARRIER": carrier})
    assert "CARRIER" not in env
    relation = "the value" if position == "whitespace" else "holds the value"
    assert offences(host, {"CARRIER": carrier}, implicit=False) == [
        f"CARRIER ({relation} of TELEGRAM_BOT_TOKEN)"
    ]


def test_a_value_shorter_than_eight_characters_is_never_searched(make_host: HostFactory) -> None:
    """The 8-character floor: a short declared value is neither an alias nor a substring."""
    host = make_host({"PATH": "/b", "GITHUB_TOKEN": "abc1234", "SEARCH": "xxabc1234xx"})
    assert host.build_subprocess_env()["SEARCH"] == "xxabc1234xx"


@pytest.mark.parametrize("routed", [False, True], ids=["launch", "routed"])
def test_launch_dotenv_building_a_remote_from_the_token_leaks_neither(
    make_host: HostFactory, homes: dict[str, Path], routed: bool
) -> None:
    """GIT_REMOTE=https://x:${GITHUB_TOKEN}@... in the launch .env: neither reaches."""
    (homes["A"] / ".env").write_text(
        f"GITHUB_TOKEN={TOKEN}\nGIT_REMOTE=https://x:${{GITHUB_TOKEN}}@github.com/o/r.git\n"
    )
    host = make_host({"PATH": "/b"})
    host.load_launch_env()
    env = build(host, homes["B"] if routed else None, surface=Surface.TERMINAL)
    assert "GITHUB_TOKEN" not in env
    assert "GIT_REMOTE" not in env


PROXY_PLUGIN = """name: corpnet
kind: platform
requires_env:
  - {name: CORPNET_PROXY_PASSWORD, secret: true}
"""


def test_a_launch_proxy_password_inside_https_proxy_never_reaches_a_routed_child(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """Network trust is never residue, but a launch secret inside HTTPS_PROXY still is one."""
    platform_plugin(homes["A"], "corpnet", PROXY_PLUGIN)
    password = "corp-proxy-password-123"
    proxy = f"http://svc:{password}@proxy.corp:3128"
    host = make_host({"PATH": "/b", "CORPNET_PROXY_PASSWORD": password, "HTTPS_PROXY": proxy})
    for surface in Surface:
        with host.routed(homes["B"]):
            env = host.build_subprocess_env(surface=surface)
        assert "HTTPS_PROXY" not in env, surface
    with host.routed(homes["B"]):
        plain = {"HTTPS_PROXY": "http://proxy.corp:3128"}
        assert host.build_subprocess_env(plain)["HTTPS_PROXY"] == plain["HTTPS_PROXY"]


# -- grants --------------------------------------------------------------------------


@pytest.mark.parametrize("surface", list(Surface))
@pytest.mark.parametrize("routed", [False, True], ids=["launch", "routed"])
def test_grant_hands_a_host_tool_its_key_on_every_surface(
    make_host: HostFactory, homes: dict[str, Path], surface: Surface, routed: bool
) -> None:
    """extra + grant → the child gets the tool's key as given; without the grant it goes."""
    key = "fake-browserbase-key-012345"
    host = make_host({"PATH": "/b", "BROWSERBASE_API_KEY": key})
    extra = {"BROWSERBASE_API_KEY": key}
    granted = build(host, homes["B"] if routed else None, surface=surface, extra=extra,
                    grant=["BROWSERBASE_API_KEY"])  # fmt: skip
    assert granted["BROWSERBASE_API_KEY"] == key
    where = homes["B"] if routed else None
    if surface is not Surface.MCP:  # without the grant: refused loudly, or (opted in) dropped
        with pytest.raises(EnvValueError, match="grant="):
            build(host, where, surface=surface, extra=extra)
    dropping = make_host({"PATH": "/b", "BROWSERBASE_API_KEY": key}, drop_refused_extra=True)
    plain = build(dropping, where, surface=surface, extra=extra)
    assert "BROWSERBASE_API_KEY" not in plain
    if routed:
        with host.routed(homes["B"]):
            assert offences(host, granted, implicit=False) == []
    else:
        assert offences(host, granted, implicit=False) == []


@pytest.mark.parametrize("surface", list(Surface))
def test_a_grant_names_one_exact_spelling(make_host: HostFactory, surface: Surface) -> None:
    """A grant of GH_TOKEN does not grant its case twin gh_token carrying another value."""
    parent = {"PATH": "/b", "GITHUB_TOKEN": TOKEN, "TELEGRAM_BOT_TOKEN": BOT}
    extra = {"GH_TOKEN": TOKEN, "gh_token": BOT}
    if surface is not Surface.MCP:  # the ungranted twin in plain extra is refused loudly
        with pytest.raises(EnvValueError) as info:
            make_host(parent).build_subprocess_env(surface=surface, extra=extra, grant=["GH_TOKEN"])
        assert info.value.key == "gh_token"
    host = make_host(parent, drop_refused_extra=True)
    env = host.build_subprocess_env(surface=surface, extra=extra, grant=["GH_TOKEN"])
    assert env.get("GH_TOKEN") == TOKEN
    assert "gh_token" not in env
    assert offences(host, {"gh_token": BOT}, implicit=False) == [
        "gh_token (the value of TELEGRAM_BOT_TOKEN)"
    ]  # the guard learnt GH_TOKEN=TOKEN only


@pytest.mark.parametrize("surface", list(Surface))
@pytest.mark.parametrize("key", ["VAULT_TOKEN", "ANOTHER_NAME"])
def test_a_source_credential_is_never_grantable(
    make_host: HostFactory, surface: Surface, key: str
) -> None:
    """a secret source's credential, by name or by value under another key: an error."""
    vault = "hvs.fake-vault-token-0000"
    host = make_host({"PATH": "/b", "VAULT_TOKEN": vault})
    host.add_secret_source(StaticSource("vault", {}, credential_names=["VAULT_TOKEN"]))
    with pytest.raises(PassthroughRefusedError, match=key):
        host.build_subprocess_env(surface=surface, extra={key: vault}, grant=[key])
    assert offences(host, {key: vault}, implicit=False) != []  # the guard never learnt it


def test_a_grant_that_can_never_pass_is_an_error(make_host: HostFactory) -> None:
    """A grant naming a key that extra does not hold is refused loudly."""
    with pytest.raises(PassthroughRefusedError, match="GH_TOKEN"):
        make_host().build_subprocess_env(extra={"OTHER": "x"}, grant=["GH_TOKEN"])


def test_the_guard_learns_a_grant_only_after_the_build_admitted_it(
    make_host: HostFactory,
) -> None:
    """Before the granted build the value offends; a refused build teaches the guard nothing."""
    host = make_host({"PATH": "/b", "GITHUB_TOKEN": TOKEN})
    block = {"GITHUB_PERSONAL_ACCESS_TOKEN": TOKEN}
    assert offences(host, block, implicit=False) != []
    with pytest.raises(PassthroughRefusedError):
        host.build_subprocess_env(surface=Surface.MCP, extra=block, grant=["NOT_IN_BLOCK"])
    assert offences(host, block, implicit=False) != []
    host.build_subprocess_env(surface=Surface.MCP, extra=block, grant=[*block])
    assert offences(host, block, implicit=False) == []


# -- the guard checks the env the child really gets ---------------------------------


def test_the_guard_reads_the_c_environment(make_host: HostFactory) -> None:
    """A secret set with os.putenv (not in os.environ) is inherited: the guard sees it."""
    host = make_host({"PATH": "/b", "TELEGRAM_BOT_TOKEN": BOT})
    name = "ENVSCOPE_TEST_PUTENV_CARRIER"
    envscope.guard(host, mode="off")
    envscope.guard(host, mode="warn")  # the hook records raw writes from its install on
    envscope.guard(host, mode="off")
    os.putenv(name, BOT)
    try:
        from envscope._guard import _env_of

        env, implicit = _env_of("os.system", ("true",))
        assert implicit
        assert env[name] == BOT
        assert f"{name} (the value of TELEGRAM_BOT_TOKEN)" in offences(host, env, implicit=True)
    finally:
        os.unsetenv(name)


def test_the_guard_decodes_pathlike_keys_and_values(make_host: HostFactory) -> None:
    """An explicit env with os.PathLike items is read as the child gets it."""
    from envscope._guard import _env_of

    host = make_host({"PATH": "/b", "TELEGRAM_BOT_TOKEN": BOT})
    env, _ = _env_of("subprocess.Popen", ("x", ["x"], None, {Path("K"): Path(BOT)}))
    assert env == {"K": BOT}
    assert offences(host, env, implicit=False) == ["K (the value of TELEGRAM_BOT_TOKEN)"]


# -- MCP configs ---------------------------------------------------------------------


def _config(tmp_path: Path, env: dict[str, str]) -> Path:
    path = tmp_path / "mcp.json"
    server = {"command": "server", "args": [], "env": env}
    path.write_text(json.dumps({"mcpServers": {"srv": server}}))
    return path


DECORATIONS = {
    "url": "https://x/${TOKEN}",
    "bearer": "Bearer ${TOKEN}",
    "quoted": "'${TOKEN}'",
    "newline": "${TOKEN}\n",
    "plain": "${TOKEN}",
}


@pytest.mark.parametrize("decoration", sorted(DECORATIONS))
@pytest.mark.parametrize("token", ["TELEGRAM_BOT_TOKEN", "GITHUB_TOKEN"])
@pytest.mark.parametrize("routed", [False, True], ids=["launch", "routed"])
def test_a_decorated_host_secret_in_a_config_is_refused_until_granted(
    make_host: HostFactory,
    homes: dict[str, Path],
    tmp_path: Path,
    decoration: str,
    token: str,
    routed: bool,
) -> None:
    """${TOKEN} decorated or embedded is refused like a plain copy, naming file/server/key."""
    pytest.importorskip("mcp", reason="the MCP SDK is the [mcp] extra")
    from envscope.mcp import load_server_parameters

    value = {"TELEGRAM_BOT_TOKEN": BOT, "GITHUB_TOKEN": TOKEN}[token]
    host = make_host({"PATH": "/b", token: value})
    path = _config(tmp_path, {"API": DECORATIONS[decoration].replace("TOKEN", token)})
    if routed:  # B's own scope holds the token: ${TOKEN} resolves to B's value
        write_home(homes["root"], "B", {token: value})
    bound = host.routed(homes["B"]) if routed else host.routed(homes["A"])
    with bound:
        with pytest.raises(ConfigFileError, match=r"mcpServers\.srv\.env\.API") as caught:
            load_server_parameters(host, path, sdk_defaults="allow")
        assert value not in str(caught.value)
        params = load_server_parameters(host, path, grants={"srv": ["API"]}, sdk_defaults="allow")
    assert params["srv"].env is not None
    assert value in params["srv"].env["API"]
    assert value not in repr(params["srv"])  # the parameters' repr masks every value


def test_a_routed_config_resolves_from_the_routed_scope_never_the_launch(
    make_host: HostFactory, homes: dict[str, Path], tmp_path: Path
) -> None:
    """routed(B), ${OPENAI_API_KEY} is B's (granted); when B has none, never the launch's."""
    pytest.importorskip("mcp", reason="the MCP SDK is the [mcp] extra")
    from envscope.mcp import load_server_parameters

    host = make_host({"PATH": "/b", "OPENAI_API_KEY": OPENAI})
    path = _config(tmp_path, {"OPENAI_API_KEY": "${OPENAI_API_KEY}"})
    grants = {"srv": ["OPENAI_API_KEY"]}
    write_home(homes["root"], "B", {"OPENAI_API_KEY": "sk-b-own-key-0000000000"})
    with host.routed(homes["B"]):
        params = load_server_parameters(host, path, grants=grants, sdk_defaults="allow")
    assert params["srv"].env is not None
    assert params["srv"].env["OPENAI_API_KEY"] == "sk-b-own-key-0000000000"
    write_home(homes["root"], "B", {"B_MARKER": "b"})
    with host.routed(homes["B"]), pytest.raises(ConfigFileError, match="is not set"):
        load_server_parameters(host, path, grants=grants, sdk_defaults="allow")


@pytest.mark.parametrize("key", ["_ENVSCOPE_FORCE_X", "_envscope_force_OPENAI_API_KEY"])
def test_a_block_never_carries_a_force_prefixed_key(
    make_host: HostFactory, tmp_path: Path, key: str
) -> None:
    """A config's force-prefixed key names file, server and key; so does the factory's error."""
    pytest.importorskip("mcp", reason="the MCP SDK is the [mcp] extra")
    from envscope.mcp import load_server_parameters, stdio_server_parameters

    host = make_host()
    with pytest.raises(ConfigFileError, match=rf"mcpServers\.srv\.env\.{key}"):
        load_server_parameters(host, _config(tmp_path, {key: "v"}))
    with pytest.raises(ConfigurationError, match=key):
        stdio_server_parameters(host, "server", env={key: "v"}, sdk_defaults="allow")


@pytest.mark.parametrize(
    ("server", "field"),
    [
        ({"command": "s", "disabled": "true"}, "disabled"),
        ({"command": "s", "enabled": 1}, "enabled"),
        ({"command": "s", "env": {"K": ["list"]}}, "env.K"),
    ],
)
def test_config_shapes_that_are_errors(
    make_host: HostFactory, tmp_path: Path, server: dict[str, object], field: str
) -> None:
    """A non-boolean disabled/enabled, a bad env value: errors naming the file and the field."""
    from envscope.mcp import read_server_config

    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"srv": server}}))
    with pytest.raises(ConfigFileError, match=rf"mcpServers\.srv\.{field}"):
        read_server_config(path, {})


def test_two_servers_whose_names_collide_are_an_error(tmp_path: Path) -> None:
    """Server names 1 and '1' collide once read as text: an error, not a silent overwrite."""
    from envscope.mcp import read_server_config

    path = tmp_path / "mcp.yaml"
    path.write_text("mcp_servers:\n  1: {command: a}\n  '1': {command: b}\n")
    with pytest.raises(ConfigFileError, match="share this name"):
        read_server_config(path, {})


# -- loud mistakes and leftovers ------------------------------------------------


def test_routing_to_a_missing_home_is_an_error(make_host: HostFactory, tmp_path: Path) -> None:
    """routed('/…/typo') raises RoutingError naming the path."""
    typo = tmp_path / "profiles" / "typo"
    with pytest.raises(RoutingError, match="typo"), make_host().routed(typo):
        pass  # pragma: no cover - never entered


@pytest.mark.parametrize("value", ["\ud800x-0123456789", "\udfff-token-0123456"])
@pytest.mark.parametrize("where", ["extra", "declared"])
def test_a_lone_surrogate_stays_in_the_error_tree(
    make_host: HostFactory, value: str, where: str
) -> None:
    """A lone surrogate in extra or a declared value: explain returns or raises EnvscopeError."""
    environ = {"PATH": "/b", "ENVSCOPE_FINGERPRINT_KEY": "k" * 16}
    if where == "declared":
        environ["TELEGRAM_BOT_TOKEN"] = value
    host = make_host(environ)
    extra = {"SURR": value} if where == "extra" else None
    carrier = "SURR" if where == "extra" else "TELEGRAM_BOT_TOKEN"
    try:
        trace = host.explain(extra=extra)
    except EnvscopeError as refused:
        assert value not in str(refused)  # noqa: PT017 - the error names the key, never the value
        return
    assert carrier not in trace.context.child_keys  # no child env can carry it


def test_a_docker_style_entry_as_a_key_never_echoes_its_value(make_host: HostFactory) -> None:
    """extra={'OPENAI_API_KEY=sk-…': 'x'} is refused naming only what precedes the '='."""
    with pytest.raises(EnvscopeError) as caught:
        make_host().build_subprocess_env(extra={f"OPENAI_API_KEY={OPENAI}": "x"})
    assert OPENAI not in str(caught.value)
    assert "OPENAI_API_KEY" in str(caught.value)


def test_a_bare_string_of_credential_names_is_refused() -> None:
    """StaticSource(credential_names='ONE_STRING') is refused like every other names parameter."""
    with pytest.raises(ConfigurationError, match="credential_names"):
        StaticSource("vault", {}, credential_names="VAULT_TOKEN")


def test_assert_no_secrets_asks_the_hosts_rule(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """A popped launch secret copied elsewhere and the launch key in a routed child: both caught."""
    (homes["A"] / ".env").write_text(f"TELEGRAM_BOT_TOKEN={BOT}\n")
    environ = {"PATH": "/b", "OPENAI_API_KEY": OPENAI}
    host = make_host(environ)
    host.load_launch_env()
    environ.pop("TELEGRAM_BOT_TOKEN")  # the host popped it after the load
    with pytest.raises(AssertionError, match="COPY"):
        assert_no_secrets({"COPY": BOT}, host=host)
    with host.routed(homes["B"]), pytest.raises(AssertionError, match="OPENAI_API_KEY"):
        assert_no_secrets({"OPENAI_API_KEY": OPENAI}, host=host, inherit_credentials=True)
    with host.routed(homes["B"]):
        child = host.build_subprocess_env(surface=Surface.CREDENTIALED)
        assert_no_secrets(child, host=host, inherit_credentials=True)


# -- secrets nobody declared: credential formats ----------------------------------


def _formats() -> list[tuple[str, str]]:
    """(format name, example value) of every row of the shipped table."""
    from envscope.policy.formats import format_table

    return [(f.name, f.example) for f in format_table().formats]


@pytest.mark.parametrize(("name", "example"), _formats(), ids=lambda v: str(v)[:40])
def test_every_credential_format_is_stripped_from_every_surface(
    make_host: HostFactory, homes: dict[str, Path], name: str, example: str
) -> None:
    """An undeclared MY_THING holding any format, bare or inside a URL, never reaches a child;
    the trace says value-shape and the format, never the value; the guard agrees."""
    environ = {"PATH": "/b", "MY_THING": example, "MY_URL": f"https://h/x?k={example}"}
    host = make_host(environ)
    for surface in Surface:
        for routed in (False, True):
            trace = Trace()
            with host.routed(homes["B"] if routed else homes["A"]):
                env = host.build_subprocess_env(surface=surface, trace=trace)
                assert offences(host, env, implicit=False) == []
            assert "MY_THING" not in env, (surface, routed)
            assert "MY_URL" not in env, (surface, routed)
            if surface is not Surface.MCP:  # the MCP allowlist drops it first
                decision = trace.final()["MY_THING"]
                assert decision.reason is Reason.VALUE_SHAPE
                assert decision.note is not None
                assert name.split("-")[0] in decision.note
            assert example not in repr(list(trace))
    assert offences(host, {"MY_THING": example}, implicit=False) != []


def test_the_exemptions_of_credential_formats(make_host: HostFactory, tmp_path: Path) -> None:
    """known_safe keeps one; an MCP block literal and a grant pass; a credentialed child keeps
    its provider's key under the provider's name, and only there."""
    from envscope.policy.formats import format_table

    openai = next(f.example for f in format_table().formats if f.provider == "openai")
    github = next(f.example for f in format_table().formats if f.name == "github-classic-pat")
    host = make_host({"PATH": "/b", "MY_THING": github}, known_safe=["MY_THING"])
    assert host.build_subprocess_env()["MY_THING"] == github
    host = make_host({"PATH": "/b", "OPENAI_API_KEY": openai, "OTHER_KEY": openai})
    credentialed = host.build_subprocess_env(surface=Surface.CREDENTIALED)
    assert credentialed.get("OPENAI_API_KEY") == openai
    assert "OTHER_KEY" not in credentialed
    assert "OPENAI_API_KEY" not in host.build_subprocess_env()  # Tier 2: not inherited
    forced = host.build_subprocess_env(extra={"_ENVSCOPE_FORCE_OPENAI_API_KEY": openai})
    assert forced["OPENAI_API_KEY"] == openai  # the caller's hand-over of its provider's key
    literal = make_host().build_subprocess_env(surface=Surface.MCP, extra={"GH": github})
    assert literal["GH"] == github  # the operator's literal in a server's block
    granted = make_host().build_subprocess_env(extra={"GH": github}, grant=["GH"])
    assert granted["GH"] == github
    assert "GH" not in make_host().build_subprocess_env(extra={"GH": github})


@pytest.mark.parametrize("value", ["short1", "a-launch-key-0123456789"])
@pytest.mark.parametrize("surface", NOT_MCP)
def test_the_force_prefix_never_hands_a_routed_child_a_launch_credential(
    make_host: HostFactory, homes: dict[str, Path], value: str, surface: Surface
) -> None:
    """A forced OPENAI_API_KEY holding the launch process's own value: refused, short or long."""
    host = make_host({"PATH": "/b", "OPENAI_API_KEY": value})
    with host.routed(homes["B"]):
        env = host.build_subprocess_env(
            surface=surface, extra={"_ENVSCOPE_FORCE_OPENAI_API_KEY": value}
        )
        assert "OPENAI_API_KEY" not in env
        own = host.build_subprocess_env(
            surface=surface, extra={"_ENVSCOPE_FORCE_OPENAI_API_KEY": "b-chosen-key-000"}
        )
        assert own["OPENAI_API_KEY"] == "b-chosen-key-000"


@pytest.mark.parametrize("surface", list(Surface))
@pytest.mark.parametrize("name", ["NODE_OPTIONS", "LD_PRELOAD", "PYTHONSTARTUP"])
def test_a_launch_secret_sources_injection_vector_reaches_no_child(
    make_host: HostFactory, homes: dict[str, Path], surface: Surface, name: str
) -> None:
    """A vector a launch secret source put into the process env was introduced: refused; the
    same name the launch process inherited (the source skipped it) is kept."""
    source = StaticSource("vault", {"*": {name: "--require /tmp/x.js"}})
    introduced = make_host({"PATH": "/b"})
    introduced.add_secret_source(source)
    introduced.load_launch_env()
    assert name not in introduced.build_subprocess_env(surface=surface)
    inherited = make_host({"PATH": "/b", name: "/opt/launch-own"})
    inherited.add_secret_source(source)
    inherited.load_launch_env()
    env = inherited.build_subprocess_env(surface=surface)
    assert env.get(name) == "/opt/launch-own"  # a supplied name reaches MCP children too


@pytest.mark.parametrize("surface", list(Surface))
@pytest.mark.parametrize(
    ("extra", "grant"),
    [
        ({"_ENVSCOPE_FORCE_GH_TOKEN": TOKEN}, "_ENVSCOPE_FORCE_GH_TOKEN"),  # unwrapped, not given
        ({"LD_PRELOAD": "/tmp/x.so"}, "LD_PRELOAD"),  # an injection vector the host refuses
        ({"  LD_PRELOAD": "/tmp/x.so"}, "  LD_PRELOAD"),  # the same, spaced
        ({"VAULT_TOKEN": "hvs.fake-vault-token-0000"}, "VAULT_TOKEN"),  # a source's credential
    ],
    ids=["force-prefixed", "vector", "spaced-vector", "source-credential"],
)
def test_a_grant_that_the_build_cannot_honour_is_an_error(
    make_host: HostFactory, surface: Surface, extra: dict[str, str], grant: str
) -> None:
    """Every grant the build would drop in silence is a PassthroughRefusedError naming the key."""
    host = make_host({"PATH": "/b"})
    host.add_secret_source(StaticSource("vault", {}, credential_names=["VAULT_TOKEN"]))
    if surface is Surface.MCP and grant.startswith("_ENVSCOPE_FORCE_"):
        with pytest.raises(ConfigurationError, match="force prefix"):  # a block never holds one
            host.build_subprocess_env(surface=surface, extra=extra, grant=[grant])
        return
    with pytest.raises(PassthroughRefusedError) as caught:
        host.build_subprocess_env(surface=surface, extra=extra, grant=[grant])
    assert caught.value.key == grant
    assert "/tmp/x.so" not in str(caught.value)


def test_a_grant_of_a_folded_away_spelling_is_an_error(make_host: HostFactory) -> None:
    """Where names fold (Windows), a grant of the spelling the fold dropped can never pass."""
    host = make_host({"PATH": "/b"}, windows=True)
    extra = {"gh_token": "lower-spelling-value", "GH_TOKEN": "upper-spelling-value"}
    with pytest.raises(PassthroughRefusedError, match="gh_token"):
        host.build_subprocess_env(extra=extra, grant=["gh_token"])
    assert host.build_subprocess_env(extra=extra, grant=["GH_TOKEN"])["GH_TOKEN"] == (
        "upper-spelling-value"
    )


@pytest.mark.parametrize("spelling", [" {}", "{} ", "\t{}", "{}\n", "\u00a0{}"])
@pytest.mark.parametrize("name", ["OPENAI_BASE_URL", "TELEGRAM_BOT_TOKEN"])
@pytest.mark.parametrize("surface", NOT_MCP)
def test_a_declared_name_with_surrounding_whitespace_is_still_declared(
    make_host: HostFactory, spelling: str, name: str, surface: Surface
) -> None:
    """Whitespace around a declared name (in extra or the base) does not slip it past the rule."""
    key = spelling.format(name)
    tier2_kept = surface is Surface.CREDENTIALED and name == "OPENAI_BASE_URL"
    if not tier2_kept:  # in plain extra, a declared name this child may not get is refused
        with pytest.raises(EnvValueError):
            make_host().build_subprocess_env(surface=surface, extra={key: "caller-value-x"})
    for env in (
        make_host(drop_refused_extra=True).build_subprocess_env(
            surface=surface, extra={key: "caller-value-x"}
        ),
        make_host().build_subprocess_env({"PATH": "/b", key: "base-value-xx"}, surface=surface),
    ):
        assert (key in env) is tier2_kept
