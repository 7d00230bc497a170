"""MCP config errors name the file and the field, and never echo a default or a host value.

Tables over the reference syntaxes of each format (Claude Code's shell-style
defaults, VS Code's ``${env:…}`` and editor variables, agent-host YAML), the
fields a reference can sit in, and the mistakes a config holds: every error
is a ``ConfigFileError`` with the file and the field; none holds what an
operator typed as a default, nor a value the host resolved.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envscope import ConfigFileError, ConfigurationError, StaticSource
from envscope._mcp_formats import read_config
from envscope._mcp_syntax import shown
from tests.conftest import HostFactory

TOKEN = "tok-typed-as-a-default-0001"
HOST_SECRET = "ghp-host-secret-value-0123456789"
PARENT = {"PATH": "/usr/bin", "HOME": "/home/op", "GITHUB_TOKEN": HOST_SECRET}

# (a config file name, a document holding REF in a server's first argument, the field)
FORMATS: dict[str, tuple[str, str]] = {
    "claude": (".mcp.json", "mcpServers.srv.args[0]"),
    "vscode": (".vscode/mcp.json", "servers.srv.args[0]"),
    "agent": ("mcp.yaml", "mcp_servers.srv.args[0]"),
}


def _write(tmp_path: Path, fmt: str, arg: str, env: dict[str, str] | None = None) -> Path:
    name, _ = FORMATS[fmt]
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    server: dict[str, object] = {"command": "server", "args": [arg], "env": env or {}}
    if fmt == "vscode":
        server["type"] = "stdio"
    top = {"claude": "mcpServers", "vscode": "servers", "agent": "mcp_servers"}[fmt]
    text = json.dumps({top: {"srv": server}})  # JSON is YAML too
    path.write_text(text, encoding="utf-8")
    return path


def _read(path: Path, environ: dict[str, str]) -> object:
    import yaml

    text = path.read_text(encoding="utf-8")
    doc = yaml.safe_load(text) if path.suffix == ".yaml" else json.loads(text)
    return read_config(str(path), doc, environ)


# references whose error must show neither TOKEN nor anything past the name
BAD_REFERENCES: dict[str, list[str]] = {
    "claude": [
        f"${{NAME:={TOKEN}}}",
        f"${{NAME-{TOKEN}}}",
        f"${{NAME:?{TOKEN}}}",
        f"${{NAME:+{TOKEN}}}",
        f"${{NAME:-${{HOME}}/{TOKEN}}}",
    ],
    "vscode": [
        f"${{env:NAME:-{TOKEN}}}",
        f"${{env:NAME:={TOKEN}}}",
        f"${{env:NAME-{TOKEN}}}",
        f"${{config:{TOKEN}}}",
        f"${{input:{TOKEN}}}",
        f"${{command:{TOKEN}}}",
        f"${{{TOKEN}}}",
        f"${{env:NAME:-${{env:HOME}}/{TOKEN}}}",
    ],
    "agent": [
        f"${{NAME:-{TOKEN}}}",
        f"${{NAME:={TOKEN}}}",
        f"${{NAME-{TOKEN}}}",
        f"${{NAME:-${{HOME}}/{TOKEN}}}",
    ],
}
CASES = [(fmt, ref) for fmt, refs in BAD_REFERENCES.items() for ref in refs]


@pytest.mark.parametrize(("fmt", "reference"), CASES)
@pytest.mark.parametrize("name_set", [False, True], ids=["unset", "set"])
@pytest.mark.parametrize("position", ["whole", "inside"])
def test_a_bad_reference_names_the_field_and_never_echoes_its_default(
    tmp_path: Path, fmt: str, reference: str, name_set: bool, position: str
) -> None:
    """Every spelling a client does not resolve is an error without the default's text."""
    arg = reference if position == "whole" else f"--dir={reference}/sub"
    path = _write(tmp_path, fmt, arg)
    environ = {**PARENT, **({"NAME": "/srv/name"} if name_set else {})}
    with pytest.raises(ConfigFileError) as info:
        _read(path, environ)
    err = info.value
    assert (err.path, err.field) == (str(path), FORMATS[fmt][1])
    assert TOKEN not in str(err)
    assert TOKEN[:8] not in str(err)


@pytest.mark.parametrize("fmt", ["claude", "agent"])
@pytest.mark.parametrize("name_set", [False, True], ids=["unset", "set"])
def test_a_nested_default_is_refused_not_mangled(tmp_path: Path, fmt: str, name_set: bool) -> None:
    """``${AI_TOOLS_MCP_DIR:-${HOME}/.ai-tools-mcp}`` is refused, never ``….ai-tools-mcp}``."""
    path = _write(tmp_path, fmt, "${AI_TOOLS_MCP_DIR:-${HOME}/.ai-tools-mcp}")
    environ = {**PARENT, **({"AI_TOOLS_MCP_DIR": "/opt/mcp"} if name_set else {})}
    with pytest.raises(ConfigFileError, match="another") as info:
        _read(path, environ)
    assert info.value.field == FORMATS[fmt][1]


@given(
    name=st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True),
    operator=st.sampled_from([":-", ":=", "-", ":?", ":+", "=", "/", " ", "}", ".", "@"]),
    rest=st.text(min_size=1, max_size=30),
)
@pytest.mark.property
def test_shown_never_shows_past_the_name(name: str, operator: str, rest: str) -> None:
    """For any reference ``NAME<op><rest>``, what an error shows is the name and an ellipsis."""
    assert shown(f"{name}{operator}{rest}") == "${" + name + "…}"
    assert shown(f"env:{name}{operator}{rest}") == "${env:" + name + "…}"
    assert shown(f"config:{name}{operator}{rest}") == "${config:…}"
    assert shown(name) == "${" + name + "}"


def test_an_env_file_path_built_from_a_host_value_is_never_echoed(tmp_path: Path) -> None:
    """A missing envFile whose path came from ``${env:DIR}`` is named as written."""
    config = tmp_path / ".vscode" / "mcp.json"
    config.parent.mkdir()
    server = {"type": "stdio", "command": "s", "envFile": "${env:SECRET_DIR}/missing.env"}
    config.write_text(json.dumps({"servers": {"srv": server}}), encoding="utf-8")
    with pytest.raises(ConfigFileError) as info:
        read_config(
            str(config), json.loads(config.read_text()), {**PARENT, "SECRET_DIR": f"/x/{TOKEN}"}
        )
    assert info.value.field == "servers.srv.envFile"
    assert TOKEN not in str(info.value)
    assert "${env:SECRET_DIR}/missing.env" in str(info.value)


@pytest.mark.parametrize(
    ("value", "environ", "message"),
    [
        ("a\u0000b", {}, "NUL"),
        ("${env:NUL_HOLDER}", {"NUL_HOLDER": "x\u0000y"}, "NUL"),
        ("${env:BIG}${env:BIG}", {"BIG": "v" * 600_000}, "larger than"),
    ],
    ids=["literal-nul", "resolved-nul", "oversized"],
)
@pytest.mark.parametrize("where", ["env", "args"])
def test_a_value_no_child_can_carry_names_the_file_and_field(
    tmp_path: Path, value: str, environ: dict[str, str], message: str, where: str
) -> None:
    """A NUL or an oversized value, typed or resolved: a ConfigFileError at its field."""
    config = tmp_path / ".vscode" / "mcp.json"
    config.parent.mkdir()
    server: dict[str, object] = {"type": "stdio", "command": "s"}
    server["env" if where == "env" else "args"] = {"K": value} if where == "env" else [value]
    config.write_text(json.dumps({"servers": {"srv": server}}), encoding="utf-8")
    with pytest.raises(ConfigFileError, match=message) as info:
        read_config(str(config), json.loads(config.read_text()), {**PARENT, **environ})
    assert info.value.field == ("servers.srv.env.K" if where == "env" else "servers.srv.args[0]")
    assert "v" * 100 not in str(info.value)


# -- through load_server_parameters: the host's mistakes named with the file -------------

pytest.importorskip("mcp", reason="the MCP SDK is the [mcp] extra")

from envscope.mcp import load_server_parameters  # noqa: E402


def test_a_routed_reference_the_profile_lacks_says_so(
    make_host: HostFactory, homes: dict[str, Path], tmp_path: Path
) -> None:
    """Under routed(B) a missing ${NAME} is "not set in the env of the routed home B"."""
    path = _write(tmp_path, "claude", "${B_ONLY_DIR}")
    host = make_host({**PARENT})
    with pytest.raises(ConfigFileError) as launch_err:
        load_server_parameters(host, path, sdk_defaults="allow")
    assert "not set in the host environment" in str(launch_err.value)
    with host.routed(homes["B"]), pytest.raises(ConfigFileError) as routed_err:
        load_server_parameters(host, path, sdk_defaults="allow")
    assert f"the routed home {homes['B']}" in str(routed_err.value)
    assert routed_err.value.field == "mcpServers.srv.args[0]"


def test_a_grant_naming_a_missing_key_names_the_server_and_file(
    make_host: HostFactory, tmp_path: Path
) -> None:
    """grants={srv: [KEY]} where the block lacks KEY: the file, the server's env field."""
    path = _write(tmp_path, "claude", "x", env={"GITHUB_TOKEN": "${GITHUB_TOKEN}"})
    host = make_host({**PARENT})
    with pytest.raises(ConfigFileError) as info:
        load_server_parameters(host, path, grants={"srv": ["GITHUB_TOKN"]}, sdk_defaults="allow")
    err = info.value
    assert (err.path, err.field) == (str(path), "mcpServers.srv.env")
    assert "GITHUB_TOKN" in err.message
    with pytest.raises(ConfigurationError, match=str(path)):
        load_server_parameters(host, path, grants={"nosuch": ["X"]}, sdk_defaults="allow")


def test_a_refused_grant_names_the_file_and_the_key_field(
    make_host: HostFactory, tmp_path: Path
) -> None:
    """A grant the build refuses (a source credential) is a ConfigFileError at the key's field."""
    path = _write(tmp_path, "claude", "x", env={"VAULT_TOKEN": "literal-vault-token-0001"})
    host = make_host({**PARENT})
    host.add_secret_source(StaticSource("vault", {}, credential_names=["VAULT_TOKEN"]))
    with pytest.raises(ConfigFileError) as info:
        load_server_parameters(host, path, grants={"srv": ["VAULT_TOKEN"]}, sdk_defaults="allow")
    assert (info.value.path, info.value.field) == (str(path), "mcpServers.srv.env.VAULT_TOKEN")
    assert "literal-vault-token" not in str(info.value)


@pytest.mark.parametrize("spelling", ["WINDIR", "windir", "WinDir"])
def test_windows_references_fold(make_host: HostFactory, tmp_path: Path, spelling: str) -> None:
    """On Windows ``${env:WINDIR}`` reads ``windir`` (names fold); on POSIX it does not."""
    config = tmp_path / ".vscode" / "mcp.json"
    config.parent.mkdir()
    server = {"type": "stdio", "command": "s", "args": [f"${{env:{spelling}}}\\\\x"]}
    config.write_text(json.dumps({"servers": {"srv": server}}), encoding="utf-8")
    doc = json.loads(config.read_text())
    environ = {**PARENT, "windir": "C:\\\\Windows"}
    (server_config,) = read_config(str(config), doc, environ, fold=True).values()
    assert server_config.args == ("C:\\\\Windows\\\\x",)
    if spelling != "windir":
        with pytest.raises(ConfigFileError, match="not set"):
            read_config(str(config), doc, environ, fold=False)
    host = make_host({**PARENT, "windir": "C:\\\\Windows"}, windows=True)
    params = load_server_parameters(host, config, sdk_defaults="allow")
    assert params["srv"].args == ["C:\\\\Windows\\\\x"]


def test_reprs_hold_no_value(make_host: HostFactory, tmp_path: Path) -> None:
    """McpServerConfig and envscope.testing's HostTree show names, never values."""
    from envscope.testing import build_host_tree

    path = _write(tmp_path, "claude", "${GITHUB_TOKEN}", env={"TOKEN_COPY": "${GITHUB_TOKEN}"})
    (server,) = _read(path, PARENT).values()  # type: ignore[attr-defined]
    assert HOST_SECRET in server.args[0]  # resolved
    assert HOST_SECRET not in repr(server)
    assert "TOKEN_COPY" in repr(server)
    tree = build_host_tree(tmp_path / "tree", environ={"PATH": "/bin", "X_TOKEN": HOST_SECRET})
    assert HOST_SECRET not in repr(tree)
    assert "X_TOKEN" in repr(tree)


def test_the_two_step_api_carries_what_the_host_resolved(
    make_host: HostFactory, tmp_path: Path
) -> None:
    """read_server_config then stdio_server_parameters(env=server.env): a resolved format
    is the host's value, never the operator's literal (it used to pass as typed)."""
    from envscope.mcp import read_server_config, stdio_server_parameters
    from envscope.policy.formats import format_table

    pat = next(f.example for f in format_table().formats if f.name == "github-classic-pat")
    # the host's copy under a plain name: a credential by its format only (under a credential
    # name, name context makes it a secret the host holds, and the literal is refused too)
    path = _write(tmp_path, "claude", "x", env={"TOOL_PAT": "${HOST_VALUE}", "TYPED": pat})
    host = make_host({**PARENT, "HOST_VALUE": pat})
    (server,) = read_server_config(path, host.parent_env()).values()
    assert server.env.resolved == {"TOOL_PAT"}  # type: ignore[attr-defined]
    params = stdio_server_parameters(
        host, server.command, list(server.args), env=server.env, sdk_defaults="allow"
    )
    assert params.env is not None
    assert "TOOL_PAT" not in params.env  # the host's value: a format, withheld
    assert params.env["TYPED"] == pat  # typed by the operator: passes
    assert pat not in repr(server.env)
