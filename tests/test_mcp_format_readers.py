"""The readers of envscope._mcp_formats: the fixtures on disk, each syntax, errors, JSONC."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envscope import ConfigFileError
from envscope._mcp_formats import McpFormat
from envscope._mcp_syntax import (
    ConfigField,
    expand_braces,
    expand_shell_default,
    expand_vscode,
    strip_jsonc,
)
from envscope.mcp import load_server_parameters, read_server_config
from tests.conftest import HostFactory

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "mcp"
TOKEN = "ghp-host-own-token-0123456789"
ENVIRON = {"PATH": "/usr/bin", "GITHUB_TOKEN": TOKEN, "GITHUB_PERSONAL_ACCESS_TOKEN": TOKEN}

# fixture -> (format, {server: env keys}, the github server's token field)
REALISTIC = {
    "vscode/.vscode/mcp.json": (
        McpFormat.VSCODE,
        {"github": ["GITHUB_PERSONAL_ACCESS_TOKEN", "GITHUB_TOOLSETS"],
         "filesystem": ["FS_LOG_LEVEL", "FS_READ_ONLY"]},
        "servers.github.env.GITHUB_PERSONAL_ACCESS_TOKEN",
    ),
    "claude/.mcp.json": (
        McpFormat.CLAUDE,
        {"github": ["GITHUB_PERSONAL_ACCESS_TOKEN"], "postgres": []},
        "mcpServers.github.env.GITHUB_PERSONAL_ACCESS_TOKEN",
    ),
    "cursor/.cursor/mcp.json": (
        McpFormat.CURSOR,
        {"github": ["GITHUB_PERSONAL_ACCESS_TOKEN"], "notes": ["NOTES_FORMAT"]},
        "mcpServers.github.env.GITHUB_PERSONAL_ACCESS_TOKEN",
    ),
    "codex/config.toml": (
        McpFormat.CODEX,
        {"github": ["GITHUB_PERSONAL_ACCESS_TOKEN", "GITHUB_TOOLSETS"], "context7": []},
        "mcp_servers.github.env_vars[0]",
    ),
    "goose/config.yaml": (
        McpFormat.GOOSE,
        {"github": ["GITHUB_PERSONAL_ACCESS_TOKEN", "GITHUB_TOOLSETS"]},
        "extensions.github.env_keys[0]",
    ),
    "agent/config.yaml": (
        McpFormat.AGENT,
        {"github": ["GITHUB_PERSONAL_ACCESS_TOKEN"], "time": []},
        "mcp_servers.github.env.GITHUB_PERSONAL_ACCESS_TOKEN",
    ),
}  # fmt: skip


@pytest.mark.parametrize("fixture", sorted(REALISTIC))
def test_each_realistic_config_reads_its_stdio_servers(fixture: str) -> None:
    """Each fixture: its format detected, its stdio servers (HTTP, builtin, disabled left out)."""
    fmt, servers, _ = REALISTIC[fixture]
    found = read_server_config(FIXTURES / fixture, ENVIRON)
    assert {name: sorted(s.env) for name, s in found.items()} == servers
    assert {s.format for s in found.values()} == {fmt}
    assert found["github"].env["GITHUB_PERSONAL_ACCESS_TOKEN"] == TOKEN


@pytest.mark.parametrize("fixture", sorted(REALISTIC))
def test_each_realistic_config_refuses_the_host_token_until_granted(
    make_host: HostFactory, fixture: str
) -> None:
    """Each fixture's github token is the host's: refused naming the field; granted, it passes."""
    _, servers, field = REALISTIC[fixture]
    host = make_host(dict(ENVIRON))
    with pytest.raises(ConfigFileError) as caught:
        load_server_parameters(host, FIXTURES / fixture, sdk_defaults="allow")
    assert caught.value.field == field
    grants = {"github": ["GITHUB_PERSONAL_ACCESS_TOKEN"]}
    params = load_server_parameters(host, FIXTURES / fixture, grants=grants, sdk_defaults="allow")
    assert sorted(params) == sorted(servers)
    assert params["github"].env is not None
    assert params["github"].env["GITHUB_PERSONAL_ACCESS_TOKEN"] == TOKEN


def test_vscode_paths_resolve_against_the_workspace_folder(tmp_path: Path) -> None:
    """${workspaceFolder} is the folder holding .vscode (or workspace=); the env block wins."""
    found = read_server_config(FIXTURES / "vscode/.vscode/mcp.json", ENVIRON)
    fs = found["filesystem"]
    assert fs.args[-1] == str(FIXTURES / "vscode")
    assert dict(fs.env) == {"FS_LOG_LEVEL": "warn", "FS_READ_ONLY": "1"}
    (tmp_path / ".env.mcp").write_text("FS_READ_ONLY=0\n")
    config = FIXTURES / "vscode/.vscode/mcp.json"
    other = read_server_config(config, ENVIRON, workspace=tmp_path)["filesystem"]
    assert (other.args[-1], dict(other.env)) == (
        str(tmp_path),
        {"FS_LOG_LEVEL": "warn", "FS_READ_ONLY": "0"},
    )


AT = ConfigField("cfg", "f")

SYNTAX = [
    # (syntax, value, environ, expected)
    ("braces", "${A}-${B}", {"A": "1", "B": "2"}, "1-2"),
    ("braces", "no refs, a lone $ and ${ unclosed", {}, "no refs, a lone $ and ${ unclosed"),
    ("shell", "${A}", {"A": "x"}, "x"),
    ("shell", "${A:-dflt}", {}, "dflt"),
    ("shell", "${A:-dflt}", {"A": ""}, "dflt"),
    ("shell", "${A:-dflt}", {"A": "set"}, "set"),
    ("shell", "pre ${A:-} post", {}, "pre  post"),
    ("vscode", "${env:A}/${workspaceFolder}", {"A": "a"}, "a//ws"),
    ("vscode", "$A ${ unclosed", {"A": "a"}, "$A ${ unclosed"),
    ("vscode", "${userHome}${/}x${pathSeparator}y", {"HOME": "/h"}, "/h/x/y"),
]  # fmt: skip

ERRORS = [
    # (syntax, value, message)
    ("braces", "${NOPE}", "is not set"),
    ("braces", "${}", "not a valid"),
    ("shell", "${NOPE}", "is not set"),
    ("shell", "${env:A}", "not a valid"),
    ("shell", "${:-x}", "not a valid"),
    ("vscode", "${env:NOPE}", "is not set"),
    ("vscode", "${input:key}", "prompted by the editor"),
    ("vscode", "${config:editor.tabSize}", "outside the editor"),
    ("vscode", "${A}", "outside the editor"),
    ("vscode", "${userHome}", "is not set"),
]


def _expand(syntax: str, value: str, environ: dict[str, str]) -> str:
    if syntax == "braces":
        return expand_braces(value, environ, AT)
    if syntax == "shell":
        return expand_shell_default(value, environ, AT)
    return expand_vscode(value, environ, AT, workspace="/ws")


@pytest.mark.parametrize(("syntax", "value", "environ", "expected"), SYNTAX)
def test_each_syntax_resolves_against_the_mapping_given(
    syntax: str, value: str, environ: dict[str, str], expected: str
) -> None:
    """Each format's syntax resolves its references from the mapping it is given, nothing else."""
    assert _expand(syntax, value, environ) == expected


@pytest.mark.parametrize(("syntax", "value", "message"), ERRORS)
def test_each_syntax_refuses_what_a_host_cannot_resolve(
    syntax: str, value: str, message: str
) -> None:
    """An unset, invalid or editor-only reference is a ConfigFileError naming the field."""
    with pytest.raises(ConfigFileError, match=message) as caught:
        _expand(syntax, value, {"A": "secret-value-123456"})
    assert (caught.value.path, caught.value.field) == ("cfg", "f")
    assert "secret-value-123456" not in str(caught.value)


def _write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


READER_ERRORS = [
    # (file, text, field, message)
    (".vscode/mcp.json", '{"servers": {"s": {"type": "ws", "command": "x"}}}', "servers.s.type",
     "stdio, http or sse"),
    (".vscode/mcp.json", '{"servers": {"s": {"command": "x", "env": {"K": "${input:k}"}}}}',
     "servers.s.env.K", "prompted"),
    ("mcp.json", '{"servers": {"s": {"command": "x", "args": ["${workspaceFolder}"]}}}',
     "servers.s.args[0]", "workspaceFolder"),
    (".vscode/mcp.json", '{"servers": {"s": {"command": "x", "envFile": "absent.env"}}}',
     "servers.s.envFile", "file not found"),
    (".vscode/mcp.json", '{"inputs": {}, "servers": {}}', "inputs", "list"),
    (".vscode/mcp.json", '{"servers": {"s": {"command": "x", "envFile": 3}}}',
     "servers.s.envFile", "string"),
    ("config.toml", '[mcp_servers.s]\ncommand = "x"\nenv_vars = "GITHUB_TOKEN"\n',
     "mcp_servers.s.env_vars", "list of environment names"),
    ("config.toml", '[mcp_servers.s]\ncommand = "x"\nenv_vars = ["NOT_SET_ANYWHERE"]\n',
     "mcp_servers.s.env_vars[0]", "is not set"),
    ("config.toml", '[mcp_servers.s]\ncommand = "x"\nenabled = "no"\n', "mcp_servers.s.enabled",
     "true or false"),
    ("config.yaml", "extensions:\n  s: {cmd: x}\n", "extensions.s.type", "goose's types"),
    ("config.yaml", "extensions:\n  s: {type: stdio, command: x}\n", "extensions.s.cmd",
     "non-empty"),
    ("config.yaml", "extensions:\n  s: {type: stdio, cmd: x, envs: [a]}\n", "extensions.s.envs",
     "mapping"),
    ("config.yaml", "extensions:\n  s: {type: stdio, cmd: x, env_keys: [NOT_SET_ANYWHERE]}\n",
     "extensions.s.env_keys[0]", "is not set"),
    (".mcp.json", '{"mcpServers": {"s": {"command": "x", "args": ["${NOPE}"]}}}',
     "mcpServers.s.args[0]", "is not set"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "text", "field", "message"), READER_ERRORS)
def test_reader_errors_name_the_field_in_the_format(
    tmp_path: Path, name: str, text: str, field: str, message: str
) -> None:
    """Each format's malformed entry is a ConfigFileError naming its field path in that format."""
    path = _write(tmp_path, name, text)
    with pytest.raises(ConfigFileError, match=message) as caught:
        read_server_config(path, {"GITHUB_TOKEN": TOKEN})
    assert (caught.value.path, caught.value.field) == (str(path), field)
    assert TOKEN not in str(caught.value)


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [("config.toml", '[mcp_servers.s]\ncommand = \n', 2),
     ("config.toml", b'[mcp_servers.s]\ncommand = "\xff"\n', 2),
     ("mcp.json", '{"mcpServers": {} /* never closed', None),
     ("mcp.json", '// a comment\n{"mcpServers": {,}}', 2)],
    ids=["toml", "toml-not-utf8", "open-comment", "jsonc-line"],
)  # fmt: skip
def test_unparsable_configs_name_the_line(
    tmp_path: Path, name: str, text: str | bytes, line: int | None
) -> None:
    """A TOML or JSON(C) syntax error is a ConfigFileError naming the file and the line."""
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(ConfigFileError) as caught:
        read_server_config(path, {})
    assert (caught.value.path, caught.value.line) == (str(path), line)


def test_a_codex_config_without_servers_is_no_server(tmp_path: Path) -> None:
    """A config.toml with no mcp_servers table (a plain Codex config) holds no server."""
    assert read_server_config(_write(tmp_path, "config.toml", 'model = "x"\n'), {}) == {}


# -- JSON with comments: a property against json.loads --------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet=st.sampled_from('a/*,"\\ \n}')),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet=st.sampled_from('k/*,"'), max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


def _jsonc(value: object, data: st.DataObject) -> str:
    """``value`` as JSON with comments between tokens and optional trailing commas."""

    def gap() -> str:
        return data.draw(st.sampled_from(["", " ", "\n", "// c, } ]\n", "/* c, */", "/**/ "]))

    def trailing() -> str:
        return data.draw(st.sampled_from(["", ",", ", ", ",\n"]))

    if isinstance(value, list):
        if not value:
            return "[" + gap() + "]"
        items = [gap() + _jsonc(v, data) + gap() for v in value]
        return "[" + ",".join(items) + trailing() + gap() + "]"
    if isinstance(value, dict):
        if not value:
            return "{" + gap() + "}"
        pairs = [
            gap() + json.dumps(k) + gap() + ":" + gap() + _jsonc(v, data) for k, v in value.items()
        ]
        return "{" + ",".join(pairs) + trailing() + gap() + "}"
    return json.dumps(value)


@pytest.mark.property
@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.data(), JSON_VALUES)
def test_jsonc_reads_as_the_json_it_holds(data: st.DataObject, value: object) -> None:
    """Any JSON is unchanged; the same value with comments and trailing commas parses equal."""
    plain = json.dumps(value)
    assert strip_jsonc(plain) == plain
    text = _jsonc(value, data)
    stripped = strip_jsonc(text)
    assert stripped is not None
    assert len(stripped) == len(text)
    assert stripped.count("\n") == text.count("\n")
    assert json.loads(stripped) == value


@pytest.mark.parametrize("text", ["[1,,]", "[,]", "{,}", '{"a": 1,,}'])
def test_jsonc_keeps_commas_that_follow_no_value(text: str) -> None:
    """Only a comma after a value is trailing: `[,]` and `[1,,]` stay invalid JSON."""
    stripped = strip_jsonc(text)
    assert stripped is not None
    with pytest.raises(json.JSONDecodeError):
        json.loads(stripped)
