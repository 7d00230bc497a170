"""The MCP client config formats people already have, × the one secret rule (issue 21, item 5).

Every case goes through ``load_server_parameters`` with a real ``Host``; each
format writes the same server in its own shape and syntax (``FORMATS``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from envscope import ConfigFileError
from tests.conftest import HostFactory, write_home

pytest.importorskip("mcp", reason="the MCP SDK is the [mcp] extra")

from envscope.mcp import load_server_parameters

HOST_TOKEN = "ghp-host-own-token-0123456789"
LAUNCH_OPENAI = "sk-launch-openai-key-000000000"
B_OPENAI = "sk-b-own-openai-key-111111111"
LITERAL = "operator-literal-token-42424242"
PARENT = {"PATH": "/usr/bin", "GITHUB_TOKEN": HOST_TOKEN, "OPENAI_API_KEY": LAUNCH_OPENAI}


def _toml(value: str) -> str:
    return json.dumps(value)  # a JSON string is a TOML basic string for this text


def _dump_toml(server: dict[str, object]) -> str:
    """A Codex config.toml holding one ``[mcp_servers.srv]`` table (a small emitter)."""
    lines = ["[mcp_servers.srv]"]
    env = server.pop("env", {})
    for key, value in server.items():
        rendered = (
            "[" + ", ".join(_toml(v) for v in value) + "]"
            if isinstance(value, list)
            else _toml(str(value))
        )
        lines.append(f"{key} = {rendered}")
    lines.append("[mcp_servers.srv.env]")
    assert isinstance(env, dict)
    lines += [f"{_toml(k)} = {_toml(v)}" for k, v in env.items()]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class Format:
    """How one format writes a server: its file, its fields, its reference syntax."""

    file: str
    top: str
    command: str
    env: str
    ref: Callable[[str], str] | None  # how `${NAME}` is written; None: the format forwards names
    forwarded: str | None = None  # the list of names forwarded from the parent env
    extra: tuple[tuple[str, str], ...] = ()  # fields every stdio entry of the format carries
    dump: Callable[[dict[str, object]], str] = json.dumps

    def write(self, root: Path, env: dict[str, str], forwarded: list[str]) -> Path:
        """The config file with one server ``srv`` holding this env (and forwarded names)."""
        server: dict[str, object] = {self.command: "server", "args": [], **dict(self.extra)}
        server[self.env] = env
        if forwarded:
            assert self.forwarded is not None
            server[self.forwarded] = forwarded
        path = root / self.file
        path.parent.mkdir(parents=True, exist_ok=True)
        if self.top == "mcp_servers" and self.file.endswith(".toml"):
            path.write_text(_dump_toml(server))
        else:
            path.write_text(self.dump({self.top: {"srv": server}}))
        return path

    def reference(self, name: str, decoration: str = "{}") -> tuple[dict[str, str], list[str], str]:
        """``(env, forwarded, key)`` of a server that refers to the host's ``name``.

        With a syntax, ``API`` holds the reference (decorated); without one the
        name is forwarded (undecorated) or, decorated, a literal decorated copy.
        """
        if self.ref is not None:
            return {"API": decoration.format(self.ref(name))}, [], "API"
        if decoration == "{}":
            return {}, [name], name
        return {"API": decoration.format(PARENT[name])}, [], "API"

    def field(self, key: str, forwarded: bool) -> str:
        """The field path an error names for ``key`` of server ``srv``."""
        if forwarded:
            return rf"{self.top}\.srv\.{self.forwarded}\[0\]"
        return rf"{self.top}\.srv\.{self.env}\.{key}"


def _yaml(doc: dict[str, object]) -> str:
    return yaml.safe_dump(doc)


FORMATS = {
    "vscode": Format(".vscode/mcp.json", "servers", "command", "env", lambda n: f"${{env:{n}}}",
                     extra=(("type", "stdio"),)),
    "claude": Format(".mcp.json", "mcpServers", "command", "env", lambda n: f"${{{n}}}"),
    "cursor": Format(".cursor/mcp.json", "mcpServers", "command", "env",
                     lambda n: f"${{env:{n}}}"),
    "codex": Format("config.toml", "mcp_servers", "command", "env", None, "env_vars"),
    "goose": Format("config.yaml", "extensions", "cmd", "envs", None, "env_keys",
                    extra=(("type", "stdio"),), dump=_yaml),
    "agent": Format("config.yaml", "mcp_servers", "command", "env", lambda n: f"${{{n}}}",
                    dump=_yaml),
}  # fmt: skip
IDS = sorted(FORMATS)


@pytest.mark.parametrize("fmt", IDS)
def test_a_literal_token_reaches_the_server(
    make_host: HostFactory, tmp_path: Path, fmt: str
) -> None:
    """(a) An operator's literal token in the env block reaches the server, in every format."""
    path = FORMATS[fmt].write(tmp_path, {"GITHUB_PERSONAL_ACCESS_TOKEN": LITERAL}, [])
    params = load_server_parameters(make_host(dict(PARENT)), path, sdk_defaults="allow")
    assert params["srv"].env is not None
    assert params["srv"].env["GITHUB_PERSONAL_ACCESS_TOKEN"] == LITERAL
    assert HOST_TOKEN not in params["srv"].env.values()


@pytest.mark.parametrize("decoration", ["{}", "Bearer {}", "https://x.invalid/{}/v1"])
@pytest.mark.parametrize("fmt", IDS)
def test_a_reference_to_a_host_secret_is_refused_lenient_or_granted(
    make_host: HostFactory,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    fmt: str,
    decoration: str,
) -> None:
    """(b, c) A host secret, plain or decorated: an error naming the field; lenient; granted."""
    form = FORMATS[fmt]
    env, forwarded, key = form.reference("GITHUB_TOKEN", decoration)
    path = form.write(tmp_path, env, forwarded)
    host = make_host(dict(PARENT))
    with pytest.raises(ConfigFileError, match=form.field(key, bool(forwarded))) as caught:
        load_server_parameters(host, path, sdk_defaults="allow")
    assert caught.value.path == str(path)
    assert HOST_TOKEN not in str(caught.value)
    with caplog.at_level(logging.WARNING, logger="envscope.mcp"):
        lenient = load_server_parameters(host, path, sdk_defaults="allow", lenient=True)
    assert lenient["srv"].env is not None
    assert key not in lenient["srv"].env
    assert [r.name for r in caplog.records] == ["envscope.mcp"]
    assert key in caplog.text
    assert HOST_TOKEN not in caplog.text
    granted = load_server_parameters(host, path, grants={"srv": [key]}, sdk_defaults="allow")
    assert granted["srv"].env is not None
    assert granted["srv"].env[key] == decoration.format(HOST_TOKEN)


@pytest.mark.parametrize("fmt", IDS)
def test_a_routed_reference_resolves_from_the_routed_scope(
    make_host: HostFactory, homes: dict[str, Path], tmp_path: Path, fmt: str
) -> None:
    """(d) Under routed(B) a reference is B's own value (granted), never the launch profile's."""
    form = FORMATS[fmt]
    env, forwarded, key = form.reference("OPENAI_API_KEY")
    path = form.write(tmp_path, env, forwarded)
    host = make_host(dict(PARENT))
    write_home(homes["root"], "B", {"OPENAI_API_KEY": B_OPENAI})
    with host.routed(homes["B"]):
        params = load_server_parameters(host, path, grants={"srv": [key]}, sdk_defaults="allow")
    assert params["srv"].env is not None
    assert params["srv"].env[key] == B_OPENAI
    assert LAUNCH_OPENAI not in params["srv"].env.values()


@pytest.mark.parametrize("fmt", IDS)
def test_a_routed_reference_b_lacks_is_never_the_launch_value(
    make_host: HostFactory, homes: dict[str, Path], tmp_path: Path, fmt: str
) -> None:
    """(d) When B has no value, the launch profile's is never used: an error naming the field."""
    form = FORMATS[fmt]
    env, forwarded, key = form.reference("OPENAI_API_KEY")
    path = form.write(tmp_path, env, forwarded)
    host = make_host(dict(PARENT))
    with host.routed(homes["B"]), pytest.raises(ConfigFileError, match="is not set") as caught:
        load_server_parameters(host, path, grants={"srv": [key]}, sdk_defaults="allow")
    assert caught.value.field is not None
    assert caught.value.field.startswith(f"{form.top}.srv.")
    assert LAUNCH_OPENAI not in str(caught.value)


@pytest.mark.parametrize("key", ["_ENVSCOPE_FORCE_OPENAI_API_KEY", "_envscope_force_X"])
@pytest.mark.parametrize("fmt", IDS)
def test_a_force_prefixed_key_is_an_error(
    make_host: HostFactory, tmp_path: Path, fmt: str, key: str
) -> None:
    """(e) A force-prefixed env key is a ConfigFileError naming the format's field path."""
    form = FORMATS[fmt]
    path = form.write(tmp_path, {key: "v"}, [])
    with pytest.raises(ConfigFileError, match=form.field(key, False)):
        load_server_parameters(make_host(dict(PARENT)), path, sdk_defaults="allow")


@pytest.mark.parametrize("fmt", ["codex", "goose"])
def test_a_forwarded_force_prefixed_name_is_an_error(
    make_host: HostFactory, tmp_path: Path, fmt: str
) -> None:
    """(e) A force-prefixed name in env_vars / env_keys is an error naming that list's entry."""
    form = FORMATS[fmt]
    path = form.write(tmp_path, {}, ["_ENVSCOPE_FORCE_X"])
    with pytest.raises(ConfigFileError, match=form.field("_ENVSCOPE_FORCE_X", True)):
        load_server_parameters(make_host(dict(PARENT)), path, sdk_defaults="allow")


@pytest.mark.parametrize("fmt", ["vscode", "claude", "cursor", "agent"])
def test_an_argument_holding_a_host_secret_is_an_error(
    make_host: HostFactory, tmp_path: Path, fmt: str
) -> None:
    """A reference in args resolves, but an argument holding a host secret is always an error."""
    form = FORMATS[fmt]
    assert form.ref is not None
    path = tmp_path / form.file
    path.parent.mkdir(parents=True, exist_ok=True)
    server = {form.command: "server", "args": ["--token", form.ref("GITHUB_TOKEN")],
              **dict(form.extra)}  # fmt: skip
    path.write_text(form.dump({form.top: {"srv": server}}))
    with pytest.raises(ConfigFileError, match=rf"{form.top}\.srv\.args\[1\]") as caught:
        load_server_parameters(make_host(dict(PARENT)), path, sdk_defaults="allow")
    assert "GITHUB_TOKEN" in str(caught.value)
    assert HOST_TOKEN not in str(caught.value)


def test_a_vscode_env_file_entry_is_refused_like_the_block(
    make_host: HostFactory, tmp_path: Path
) -> None:
    """A host secret copied into a VS Code envFile is refused naming servers.srv.envFile.KEY."""
    (tmp_path / ".env.mcp").write_text(f"API={HOST_TOKEN}\nLEVEL=info\n")
    server = {"type": "stdio", "command": "s", "envFile": "${workspaceFolder}/.env.mcp"}
    path = tmp_path / ".vscode" / "mcp.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"servers": {"srv": server}}))
    host = make_host(dict(PARENT))
    with pytest.raises(ConfigFileError, match=r"servers\.srv\.envFile\.API"):
        load_server_parameters(host, path, sdk_defaults="allow")
    granted = load_server_parameters(host, path, grants={"srv": ["API"]}, sdk_defaults="allow")
    assert granted["srv"].env is not None
    assert (granted["srv"].env["API"], granted["srv"].env["LEVEL"]) == (HOST_TOKEN, "info")
