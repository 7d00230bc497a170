"""envscope.mcp: StdioServerParameters built by envscope, checked against the real MCP SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envscope import (
    ConfigFileError,
    ConfigurationError,
    Host,
    Reason,
    SpawnBlockedError,
    Surface,
    Trace,
)
from envscope.mcp import (
    load_server_parameters,
    read_server_config,
    sdk_added_names,
    stdio_server_parameters,
)
from tests._mcp_client import PARENT_ENV, SAFE_KEYS, server_command, server_environments
from tests.conftest import HostFactory, write_home

LITERAL = "ghp_operator111111111111111111"
HOST_TOKEN = PARENT_ENV["GITHUB_TOKEN"]


@pytest.fixture
def parent_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process env is exactly PARENT_ENV for the test (restored afterwards)."""
    for key in list(os.environ):
        monkeypatch.delenv(key)
    for key, value in PARENT_ENV.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def real_host(parent_env: None, tmp_path: Path) -> Host:
    """A host over the real os.environ whose launch .env holds more secrets."""
    launch = write_home(
        tmp_path, "A", {"DISCORD_BOT_TOKEN": "fake-discord-bot-token-0", "A_X": "a"}
    )
    host = Host(launch)
    host.load_launch_env()
    return host


def test_importing_envscope_never_imports_the_sdk() -> None:
    """``import envscope``, a build, envscope.spawn and the guard load no ``mcp`` module."""
    code = (
        "import sys, envscope, envscope.spawn, envscope._guard\n"
        "h = envscope.Host('.', environ={'PATH': '/b'}); h.build_subprocess_env(surface='mcp')\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_parameters_carry_the_mcp_build(make_host: HostFactory) -> None:
    """The parameters' env is exactly the mcp-surface build; command, args and cwd pass through."""
    environ = {**PARENT_ENV}
    host = make_host(environ)
    block = {"GITHUB_PERSONAL_ACCESS_TOKEN": LITERAL}
    expected = host.build_subprocess_env(surface=Surface.MCP, extra=block)
    params = stdio_server_parameters(
        host, "npx", ["-y", "server"], env=block, cwd="/srv", sdk_defaults="allow"
    )
    assert params.env == expected
    assert (params.command, params.args, params.cwd) == ("npx", ["-y", "server"], "/srv")


@pytest.mark.parametrize(
    ("host_env", "added"),
    [
        (PARENT_ENV, []),
        ({k: v for k, v in PARENT_ENV.items() if k not in {"HOME", "USER"}}, ["HOME", "USER"]),
        ({"PATH": "/b"}, ["HOME", "LOGNAME", "SHELL", "TERM", "USER"]),
    ],
    ids=["all-present", "policy-dropped-two", "bare-environ"],
)
def test_sdk_defaults_a_build_leaves_out_are_refused_unless_allowed(
    parent_env: None, make_host: HostFactory, host_env: dict[str, str], added: list[str]
) -> None:
    """A default the SDK would add from os.environ is refused; ``allow`` keeps it, traced."""
    host = make_host(dict(host_env))
    child = host.build_subprocess_env(surface=Surface.MCP)
    assert sdk_added_names(child, windows=False) == added
    if added:
        with pytest.raises(ConfigurationError, match=", ".join(added)):
            stdio_server_parameters(host, "srv")
    trace = Trace()
    params = stdio_server_parameters(host, "srv", sdk_defaults="allow", trace=trace)
    assert params.env == child
    assert [k for k, d in trace.final().items() if d.reason is Reason.MCP_SDK_DEFAULT] == added


def test_shell_function_defaults_are_not_counted(
    parent_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK skips a ``()`` default value, so envscope does not count it as added."""
    monkeypatch.setenv("SHELL", "() { :; }")
    assert sdk_added_names({"PATH": "/b"}, windows=False) == ["HOME", "LOGNAME", "TERM", "USER"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"command": ""}, "command"),
        ({"command": "srv", "args": "-y server"}, "args"),
        ({"command": "srv", "args": ["ok", 3]}, "args"),
        ({"command": "srv", "sdk_defaults": "maybe"}, "sdk_defaults"),
    ],
    ids=["empty-command", "bare-string-args", "non-string-arg", "bad-sdk-defaults"],
)
def test_parameters_reject_bad_inputs(
    make_host: HostFactory, kwargs: dict[str, object], message: str
) -> None:
    """Bad inputs are ConfigurationErrors naming the parameter."""
    with pytest.raises(ConfigurationError, match=message):
        stdio_server_parameters(make_host(), **kwargs)  # type: ignore[arg-type]


def test_missing_sdk_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the SDK, the helpers raise a ConfigurationError naming the extra."""
    monkeypatch.setitem(sys.modules, "mcp.client", None)
    monkeypatch.setitem(sys.modules, "mcp.client.stdio", None)
    with pytest.raises(ConfigurationError, match=r"envscope\[mcp\]"):
        sdk_added_names({})


# -- the config file loader ---------------------------------------------------------

GITHUB_SERVER = {
    "command": "npx",
    "args": ["-y", "@modelcontextprotocol/server-github"],
    "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}", "GITHUB_TOOLSETS": "repos"},
}


def _write(tmp_path: Path, name: str, doc: object) -> Path:
    path = tmp_path / name
    if name.endswith(".json"):
        path.write_text(json.dumps(doc))
    else:
        import yaml

        path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize(
    ("name", "top"),
    [("mcp.json", "mcpServers"), ("mcp.yaml", "mcpServers"), ("config.yaml", "mcp_servers")],
)
def test_config_loader_reads_stdio_servers(tmp_path: Path, name: str, top: str) -> None:
    """JSON and YAML configs: stdio servers by name, ``${NAME}`` read from the given environ."""
    doc = {
        top: {
            "github": GITHUB_SERVER,
            "remote": {"url": "https://example.invalid/mcp"},
            "off": {"command": "x", "disabled": True},
            "off2": {"command": "x", "enabled": False},
            "plain": {"command": "srv", "cwd": "/srv", "env": {"PORT": 8080}},
        }
    }
    servers = read_server_config(_write(tmp_path, name, doc), {"GITHUB_TOKEN": HOST_TOKEN})
    assert sorted(servers) == ["github", "plain"]
    github = servers["github"]
    assert github.args == ("-y", "@modelcontextprotocol/server-github")
    assert github.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": HOST_TOKEN, "GITHUB_TOOLSETS": "repos"}
    assert HOST_TOKEN not in repr(github)
    assert (servers["plain"].cwd, servers["plain"].env) == ("/srv", {"PORT": "8080"})


def _srv(**entry: object) -> dict[str, object]:
    """A config holding one server ``s`` with these fields."""
    return {"mcpServers": {"s": entry}}


@pytest.mark.parametrize(
    ("doc", "field", "message"),
    [
        ([], None, "mapping"),
        ({"tools": {}}, None, "exactly one"),
        ({"servers": {}, "mcpServers": {}}, None, "exactly one"),
        ({"mcpServers": {}, "mcp_servers": {}}, None, "exactly one"),
        ({"mcpServers": []}, "mcpServers", "mapping"),
        ({"mcpServers": {"s": "npx"}}, "mcpServers.s", "mapping"),
        (_srv(args=[]), "mcpServers.s.command", "non-empty"),
        (_srv(command="x", args="y"), "mcpServers.s.args", "list"),
        (_srv(command="x", env=[]), "mcpServers.s.env", "mapping"),
        (_srv(command="x", env={"A=B": "v"}), "mcpServers.s.env", "name"),
        (_srv(command="x", env={"K": ["v"]}), "mcpServers.s.env.K", "list"),
        (_srv(command="x", env={"K": True}), "mcpServers.s.env.K", "bool"),
        (_srv(command="x", env={"K": "${NOPE}"}), "mcpServers.s.env.K", "NOPE"),
        (_srv(command="x", env={"K": "x${}"}), "mcpServers.s.env.K", "valid"),
        (_srv(command="x", cwd=3), "mcpServers.s.cwd", "string"),
    ],
)  # fmt: skip
def test_config_loader_errors_name_the_file_and_field(
    tmp_path: Path, doc: object, field: str | None, message: str
) -> None:
    """Every malformed entry is a ConfigFileError naming the file and the field, never a value."""
    path = _write(tmp_path, "mcp.json", doc)
    with pytest.raises(ConfigFileError, match=message) as info:
        read_server_config(path, {"SECRET": HOST_TOKEN})
    assert info.value.path == str(path)
    assert info.value.field == field
    assert HOST_TOKEN not in str(info.value)


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [("bad.json", '{"mcpServers":\n  {,}}', 2), ("bad.yaml", "mcpServers:\n  - [\n", 3),
     ("bad.json", b"{\"a\": \"\xff\"}", 1), ("absent.json", None, None)],
    ids=["json", "yaml", "not-utf8", "missing"],
)  # fmt: skip
def test_config_loader_unreadable_files(
    tmp_path: Path, name: str, text: str | bytes | None, line: int | None
) -> None:
    """Unparsable or unreadable files are ConfigFileErrors naming the file (and the line)."""
    path = tmp_path / name
    if isinstance(text, str):
        path.write_text(text)
    elif isinstance(text, bytes):
        path.write_bytes(text)
    with pytest.raises(ConfigFileError) as info:
        read_server_config(path, {})
    assert (info.value.path, info.value.line) == (str(path), line)


def test_config_loader_empty_servers_and_oversized_file(tmp_path: Path) -> None:
    """``mcpServers: null`` is no server; a file over 1 MiB is refused."""
    assert read_server_config(_write(tmp_path, "e.yaml", {"mcpServers": None}), {}) == {}
    big = tmp_path / "big.json"
    big.write_text(" " * (1024 * 1024 + 1))
    with pytest.raises(ConfigFileError, match="larger"):
        read_server_config(big, {})


def test_grants_must_name_a_server(make_host: HostFactory, tmp_path: Path) -> None:
    """A grant for a server the file does not hold is a ConfigurationError naming it."""
    path = _write(tmp_path, "mcp.json", {"mcpServers": {"github": GITHUB_SERVER}})
    host = make_host({**PARENT_ENV})
    with pytest.raises(ConfigurationError, match="gitlab"):
        load_server_parameters(host, path, grants={"gitlab": ["X"]}, sdk_defaults="allow")


# -- the real SDK ---------------------------------------------------------------------


def test_real_server_sees_the_safe_base_and_its_block_on_the_launch_home(
    real_host: Host,
) -> None:
    """A real SDK server launched for the launch home sees exactly safe base + its env block."""
    command, args = server_command()
    block = {"GITHUB_PERSONAL_ACCESS_TOKEN": LITERAL, "SERVER_MODE": "fast"}
    params = stdio_server_parameters(real_host, command, args, env=block)
    (seen,) = server_environments(params)
    assert set(seen) == SAFE_KEYS | set(block)
    assert seen["GITHUB_PERSONAL_ACCESS_TOKEN"] == LITERAL


def test_real_server_routed_gets_its_own_home_and_scope(real_host: Host, tmp_path: Path) -> None:
    """Routed to B: safe base + block + passthrough from B's scope + the home variable, exactly."""
    home_b = write_home(tmp_path, "B", {"B_SETTING": "from-b", "OPENAI_API_KEY": "sk-b-own-key-99"})
    command, args = server_command()
    with real_host.routed(home_b):
        params = stdio_server_parameters(
            real_host, command, args, env={"SERVER_MODE": "fast"}, passthrough=["B_SETTING"]
        )
    (seen,) = server_environments(params)
    assert set(seen) == SAFE_KEYS | {"SERVER_MODE", "B_SETTING", "ENVSCOPE_HOME"}
    assert (seen["B_SETTING"], seen["ENVSCOPE_HOME"]) == ("from-b", str(home_b))


def test_real_github_config_copying_the_host_token_is_refused_until_granted(
    real_host: Host, tmp_path: Path
) -> None:
    """A GitHub-MCP config with ``${GITHUB_TOKEN}``: an error naming the entry; lenient drops it."""
    command, args = server_command()
    server = {**GITHUB_SERVER, "command": command, "args": args}
    path = _write(tmp_path, "mcp.json", {"mcpServers": {"github": server}})
    with pytest.raises(ConfigFileError, match=r"github\.env\.GITHUB_PERSONAL_ACCESS_TOKEN"):
        load_server_parameters(real_host, path)
    refused = load_server_parameters(real_host, path, lenient=True)["github"]
    granted = load_server_parameters(
        real_host, path, grants={"github": ["GITHUB_PERSONAL_ACCESS_TOKEN"]}
    )["github"]
    trace = real_host.explain(
        surface=Surface.MCP, extra=read_server_config(path, os.environ)["github"].env
    )
    decision = trace.final()["GITHUB_PERSONAL_ACCESS_TOKEN"]
    assert decision.note == "the value is the host's GITHUB_TOKEN; grant it to pass"
    seen_refused, seen_granted = server_environments(refused, granted)
    assert set(seen_refused) == SAFE_KEYS | {"GITHUB_TOOLSETS"}
    assert set(seen_granted) == SAFE_KEYS | {"GITHUB_TOOLSETS", "GITHUB_PERSONAL_ACCESS_TOKEN"}
    assert seen_granted["GITHUB_PERSONAL_ACCESS_TOKEN"] == HOST_TOKEN


def test_guard_passes_an_sdk_rebuilt_granted_env_and_blocks_a_raw_copy(
    real_host: Host, tmp_path: Path
) -> None:
    """Under guard(raise) the SDK's rebuilt env of a granted server runs; a raw copy is blocked."""
    from mcp import StdioServerParameters

    import envscope

    command, args = server_command()
    server = {**GITHUB_SERVER, "command": command, "args": args}
    path = _write(tmp_path, "mcp.json", {"mcpServers": {"github": server}})
    envscope.guard(real_host, mode="raise")
    try:
        granted = load_server_parameters(
            real_host, path, grants={"github": ["GITHUB_PERSONAL_ACCESS_TOKEN"]}
        )["github"]
        (seen,) = server_environments(granted)
        assert seen["GITHUB_PERSONAL_ACCESS_TOKEN"] == HOST_TOKEN
        raw = StdioServerParameters(command=command, args=args, env={"GH_TOKEN": HOST_TOKEN})
        with pytest.raises(SpawnBlockedError) as info:
            server_environments(raw)
        assert info.value.keys == ["GH_TOKEN (the value of GITHUB_TOKEN)"]
    finally:
        envscope.guard(real_host, mode="off")
