"""The MCP client config formats people already have: one reader per format.

Each reader (``read_vscode``, ``read_mcp_servers`` for Claude Code, Cursor and
agent-host YAML, ``read_codex``, ``read_goose``) takes the parsed document and
returns the same ``McpServerConfig`` records, stdio servers only; ``read_config``
detects the format from the top key and, where that is shared, the file name
(docs/mcp.md has the table). Each format's interpolation (``_mcp_syntax``;
Codex and goose have none) resolves ``command``, ``args``, ``cwd`` and the env
against the mapping it is given (the loader passes ``Host.parent_env()``); an
unset name is an error. Errors are ``ConfigFileError`` naming the file and the field path in
that format (``servers.github.env.TOKEN``), never a value.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from envscope._inputs import DEFAULT_MAX_ENV_BYTES, WINDOWS, valid_name
from envscope._mcp_syntax import (
    ConfigField,
    Expand,
    expand_braces,
    expand_shell_default,
    expand_vscode,
    references,
)
from envscope.errors import ConfigFileError, DotenvError
from envscope.pipeline.stages import FORCE_PREFIX

__all__ = [
    "McpFormat",
    "McpServerConfig",
    "read_config",
]

MAX_CONFIG_BYTES = 1024 * 1024


class McpFormat(enum.Enum):
    """An MCP client config format (the value names it in messages and docs)."""

    VSCODE = "VS Code mcp.json (servers)"
    CLAUDE = "mcpServers (Claude Code .mcp.json)"
    CURSOR = "Cursor .cursor/mcp.json (mcpServers)"
    CODEX = "Codex config.toml (mcp_servers)"
    GOOSE = "goose config.yaml (extensions)"
    AGENT = "agent-host YAML (mcp_servers)"


class ServerEnv(dict[str, str]):
    """A server's resolved env block that carries which keys the host resolved.

    ``resolved`` and ``path`` (the config file it was read from) travel with the
    values: ``stdio_server_parameters(env=server.env)`` reads them, so a value
    the host resolved (a ``${NAME}`` reference, an ``envFile`` entry, a
    forwarded name) is never taken for the operator's literal on any path, and
    a literal of a config in the routed home is the profile's own. Its repr
    shows the keys, never a value.
    """

    __slots__ = ("path", "resolved")

    def __init__(
        self, values: Mapping[str, str], resolved: frozenset[str], path: str | None = None
    ) -> None:
        super().__init__(values)
        self.resolved = frozenset(k for k in resolved if k in values)
        self.path = path

    def __repr__(self) -> str:
        return f"ServerEnv(keys={sorted(self)!r}, resolved={sorted(self.resolved)!r})"


@dataclass(frozen=True, slots=True, repr=False)
class McpServerConfig:
    """One stdio server of an MCP client config file (its env already resolved).

    ``where`` is the server's field path in its format (``servers.github``),
    ``env_fields`` the field path each env key came from (the env block, an
    ``envFile``, ``env_vars``/``env_keys``), ``command_field`` that of the command.
    ``resolved`` holds the env keys whose value the reader resolved rather than
    the operator typed: a ``${…}`` reference anywhere in it, an ``envFile`` entry,
    a forwarded name; ``env`` (a ``ServerEnv``) carries it too. ``env_file`` is
    the ``envFile`` read (its absolute path). ``argv_resolved`` holds the field
    paths of the command, arguments and cwd that held a reference.
    """

    name: str
    command: str
    args: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str | None
    path: str
    top: str = "mcpServers"  # the key the servers live under in the file
    format: McpFormat = McpFormat.CLAUDE
    env_fields: Mapping[str, str] = field(default_factory=dict)
    command_field: str = ""
    resolved: frozenset[str] = frozenset()
    env_file: str | None = None
    argv_resolved: frozenset[str] = frozenset()

    def __repr__(self) -> str:
        # the env block's names; never a value, nor the resolved command, args or cwd (a
        # ${NAME} reference may have put a host value in them)
        keys = sorted(self.env)
        return f"McpServerConfig(name={self.name!r}, path={self.path!r}, env_keys={keys!r})"

    @property
    def where(self) -> str:
        """The server's field path in its file (``extensions.github``)."""
        return f"{self.top}.{self.name}"

    def field_of(self, key: str) -> str:
        """The field path an env key came from (``servers.github.envFile.TOKEN``)."""
        return self.env_fields.get(key, f"{self.where}.env.{key}")


# -- shared field checks -------------------------------------------------------------


def _mapping(doc: object, at: ConfigField, what: str) -> Mapping[str, Any]:
    if not isinstance(doc, Mapping):
        raise at.error(f"must be {what}")
    return doc


def _optional_string(doc: Mapping[str, Any], key: str, at: ConfigField) -> str | None:
    value = doc.get(key)
    if value is not None and not isinstance(value, str):
        raise at.child(key).error("must be a string")
    return value


def _names(doc: Mapping[str, Any], key: str, at: ConfigField) -> list[str]:
    """A list of variable names (Codex ``env_vars``, goose ``env_keys``)."""
    raw = doc.get(key)
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(n, str) and valid_name(n) for n in raw):
        raise at.child(key).error("must be a list of environment names")
    return raw


def _flags(doc: Mapping[str, Any], at: ConfigField) -> bool:
    """False when the entry is switched off (``disabled: true``, ``enabled: false``)."""
    for flag in ("disabled", "enabled"):
        if flag in doc and not isinstance(doc[flag], bool):
            raise at.child(flag).error("must be true or false")
    return not (doc.get("disabled") is True or doc.get("enabled") is False)


def _env_key(key: object, at: ConfigField) -> str:
    if not isinstance(key, str) or not valid_name(key):
        shown = repr(key.partition("=")[0]) if isinstance(key, str) else type(key).__name__
        raise at.error(f"{shown} is not a valid environment name")
    if key.upper().startswith(FORCE_PREFIX):
        raise at.child(key).error(f"an env block may not carry the force prefix {FORCE_PREFIX}")
    return key


@dataclass(frozen=True, slots=True)
class _Reading:
    """What a reader needs besides the document: the file, the environ, the syntax."""

    path: str
    environ: Mapping[str, str]  # where names fold (Windows): keyed upper-cased
    expand: Expand | None  # None: the format has no interpolation
    source: str = "the host environment"  # what the environ is, for errors
    fold: bool = False  # Windows: ${env:WINDIR} reads windir

    def resolve(self, value: str, at: ConfigField) -> str:
        return value if self.expand is None else self.expand(value, self.environ, at)

    def get(self, name: str) -> str | None:
        """A forwarded name's value (folded where names fold: ``environ`` is a ``_FoldedEnv``)."""
        return self.environ.get(name)

    def interpolates(self, value: str) -> bool:
        """True when ``resolve`` reads something into ``value`` (a ``${…}`` reference)."""
        return self.expand is not None and bool(references(value))


class _FoldedEnv(Mapping[str, str]):
    """An environ read as Windows reads it: a name in any case finds its value."""

    __slots__ = ("_upper",)

    def __init__(self, upper: dict[str, str]) -> None:
        self._upper = upper

    def __getitem__(self, name: str) -> str:
        return self._upper[name.upper()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._upper)

    def __len__(self) -> int:
        return len(self._upper)

    def __repr__(self) -> str:
        return f"_FoldedEnv(keys={sorted(self._upper)!r})"  # names only, never values


@dataclass(frozen=True, slots=True)
class _Shape:
    """The field names of one format's stdio entry."""

    fmt: McpFormat
    top: str
    command: str = "command"
    env: str = "env"
    forwarded: str | None = None  # a list of names read from the parent env (unset: an error)
    env_file: bool = False


def _stdio_entry(name: str, doc: Mapping[str, Any], shape: _Shape, r: _Reading) -> McpServerConfig:
    """One stdio entry of any format, checked and resolved."""
    at = ConfigField(r.path, f"{shape.top}.{name}", r.source)
    command = doc.get(shape.command)
    if not isinstance(command, str) or not command:
        raise at.child(shape.command).error("must be a non-empty string")
    argv_resolved = {at.child(shape.command).field} if r.interpolates(command) else set()
    command = _carried(r.resolve(command, at.child(shape.command)), at.child(shape.command))
    raw_args = doc.get("args", [])
    if not isinstance(raw_args, list) or not all(isinstance(a, str) for a in raw_args):
        raise at.child("args").error("must be a list of strings")
    where_args = [(at.at(f"{at.field}.args[{i}]"), a) for i, a in enumerate(raw_args)]
    argv_resolved |= {here.field for here, a in where_args if r.interpolates(a)}
    args = tuple(_carried(r.resolve(a, here), here) for here, a in where_args)
    cwd = _optional_string(doc, "cwd", at)
    if cwd is not None and r.interpolates(cwd):
        argv_resolved.add(at.child("cwd").field)
    cwd = None if cwd is None else _carried(r.resolve(cwd, at.child("cwd")), at.child("cwd"))
    env: dict[str, str] = {}
    fields: dict[str, str] = {}
    resolved: set[str] = set()  # the keys whose value the operator did not type
    env_file = None
    if shape.env_file:
        given_file = _optional_string(doc, "envFile", at)
        if given_file is not None:
            env_file = _env_file_path(r.resolve(given_file, at.child("envFile")), r)
            # a path built from a reference may hold a host value: errors show it as written
            named = given_file if r.interpolates(given_file) else env_file
            loaded = _read_env_file(env_file, named, r, at)
            for key, value in loaded.items():
                env[_env_key(key, at.child("envFile"))] = value
                fields[key] = f"{at.field}.envFile.{key}"
                resolved.add(key)
    if shape.forwarded is not None:
        for i, key in enumerate(_names(doc, shape.forwarded, at)):
            where = at.at(f"{at.field}.{shape.forwarded}[{i}]")
            if key.upper().startswith(FORCE_PREFIX):
                raise where.error(f"{key}: an env block may not carry the force prefix")
            forwarded = r.get(key)
            if forwarded is None:
                raise where.error(f"{key} is not set in {r.source}")
            env[key] = _carried(forwarded, where)
            fields[key] = where.field
            resolved.add(key)
    raw_env = doc.get(shape.env)
    block = _mapping({} if raw_env is None else raw_env, at.child(shape.env), "a mapping")
    for key, value in block.items():
        here = at.child(shape.env)
        key = _env_key(key, here)
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise here.child(key).error(f"must be a string or a number, not {type(value).__name__}")
        text = str(value)
        env[key] = _carried(r.resolve(text, here.child(key)), here.child(key))  # beats envFile
        fields[key] = here.child(key).field
        if r.interpolates(text):
            resolved.add(key)
        else:
            resolved.discard(key)  # the operator's literal replaces an envFile's value
    return McpServerConfig(
        name, command, args, ServerEnv(env, frozenset(resolved), r.path), cwd, r.path, shape.top,
        shape.fmt,
        MappingProxyType(fields), at.child(shape.command).field, frozenset(resolved), env_file,
        frozenset(argv_resolved),
    )  # fmt: skip


MAX_VALUE_BYTES = DEFAULT_MAX_ENV_BYTES
"""The most bytes one value read from a config may hold (a whole child env's default budget)."""


def _carried(text: str, at: ConfigField) -> str:
    """``text`` when a child's argv or env can carry it; else an error naming the field.

    A NUL cannot cross ``execve``; a value past a whole env's default budget
    would fail the spawn. Checked after ``${…}`` resolution, so the error comes
    from the config's field, never a value.
    """
    if "\x00" in text:
        raise at.error("holds a NUL character, which a child process cannot receive")
    if len(text) > MAX_VALUE_BYTES // 4 and len(text.encode("utf-8", "surrogateescape")) > (
        MAX_VALUE_BYTES
    ):
        raise at.error(f"is larger than {MAX_VALUE_BYTES} bytes after resolution")
    return text


def _env_file_path(where: str, r: _Reading) -> str:
    """An ``envFile``'s absolute path, relative to the config's directory."""
    return os.path.join(os.path.dirname(os.path.abspath(r.path)), os.path.expanduser(where))


def _read_env_file(target: str, named: str, r: _Reading, at: ConfigField) -> dict[str, str]:
    """An ``envFile`` through envscope's one dotenv reader (``${VAR}`` read from ``r.environ``).

    An error names the file as ``named`` (as the operator wrote it, when the
    path was built from a reference), its line, and the ``envFile`` field.
    """
    from envscope.files._dotenv import read_dotenv

    failure: ConfigFileError | None = None
    try:
        return read_dotenv(target, environ=r.environ, missing_ok=False)
    except DotenvError as exc:  # its message names no value; its path may (a resolved one)
        line = "" if exc.line is None else f":{exc.line}"
        failure = at.child("envFile").error(f"{named}{line}: {exc.message}")
    raise failure


_Entry = tuple[str, Mapping[str, Any], ConfigField]


def _servers(doc: Mapping[str, Any], top: str, path: str) -> list[_Entry]:
    """``(name, entry, where)`` under ``top``, named as text (names that collide: an error)."""
    servers = doc[top]
    if servers is None:
        return []
    entries = _mapping(servers, ConfigField(path, top), "a mapping of server names to servers")
    out: list[_Entry] = []
    seen: set[str] = set()
    for name, entry in entries.items():
        at = ConfigField(path, f"{top}.{name}")
        if str(name) in seen:
            raise at.error("two servers share this name")
        seen.add(str(name))
        out.append((str(name), _mapping(entry, at, "a mapping"), at))
    return out


_NOT_STDIO = frozenset({"http", "sse", "streamable-http", "streamable_http", "streamableHttp"})


def _stdio(doc: Mapping[str, Any], at: ConfigField, *, typed: bool = True) -> bool:
    """True for a stdio entry that is on; False for HTTP/SSE or off (left out); else an error.

    ``typed``: the format has a ``type`` field (Codex has none).
    """
    if not _flags(doc, at):
        return False
    kind = doc.get("type") if typed else None
    if kind is None:
        return not ("command" not in doc and "url" in doc)
    if kind == "stdio":
        return True
    if isinstance(kind, str) and kind in _NOT_STDIO:
        return False
    raise at.child("type").error("must be stdio, http or sse")


# -- one reader per format -----------------------------------------------------------


def read_mcp_servers(doc: Mapping[str, Any], r: _Reading, fmt: McpFormat) -> list[McpServerConfig]:
    """``mcpServers`` (Claude Code, Cursor, MCP clients' JSON) or agent-host ``mcp_servers``."""
    top = "mcp_servers" if fmt is McpFormat.AGENT else "mcpServers"
    shape = _Shape(fmt, top, env_file=fmt is McpFormat.CURSOR)
    entries = _servers(doc, top, r.path)
    return [_stdio_entry(n, e, shape, r) for n, e, at in entries if _stdio(e, at)]


def read_vscode(doc: Mapping[str, Any], r: _Reading) -> list[McpServerConfig]:
    """VS Code ``servers``: ``type: stdio`` entries (``http``/``sse`` are left out)."""
    shape = _Shape(McpFormat.VSCODE, "servers", env_file=True)
    inputs = doc.get("inputs")
    if inputs is not None and not isinstance(inputs, list):
        raise ConfigField(r.path, "inputs").error("must be a list")
    entries = _servers(doc, "servers", r.path)
    return [_stdio_entry(n, e, shape, r) for n, e, at in entries if _stdio(e, at)]


def read_codex(doc: Mapping[str, Any], r: _Reading) -> list[McpServerConfig]:
    """Codex ``[mcp_servers.NAME]``; an entry with a ``url`` is streamable HTTP (left out)."""
    shape = _Shape(McpFormat.CODEX, "mcp_servers", forwarded="env_vars")
    entries = _servers(doc, "mcp_servers", r.path)
    return [_stdio_entry(n, e, shape, r) for n, e, at in entries if _stdio(e, at, typed=False)]


_GOOSE_NOT_STDIO = frozenset(
    {"builtin", "platform", "sse", "streamable_http", "frontend", "inline_python"}
)


def read_goose(doc: Mapping[str, Any], r: _Reading) -> list[McpServerConfig]:
    """goose ``extensions``: ``type: stdio`` entries; builtin, platform, HTTP ones left out."""
    shape = _Shape(McpFormat.GOOSE, "extensions", command="cmd", env="envs", forwarded="env_keys")
    out = []
    for name, entry, at in _servers(doc, "extensions", r.path):
        kind = entry.get("type")
        if not isinstance(kind, str) or (kind != "stdio" and kind not in _GOOSE_NOT_STDIO):
            raise at.child("type").error("must be stdio, builtin, platform, sse, … (goose's types)")
        if _flags(entry, at) and kind == "stdio":
            out.append(_stdio_entry(name, entry, shape, r))
    return out


# -- detection -----------------------------------------------------------------------

_TOPS = ("servers", "mcpServers", "mcp_servers", "extensions")


def _workspace(path: str) -> str | None:
    """``${workspaceFolder}``: the folder holding the config's ``.vscode``/``.cursor`` directory."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.basename(folder) in (".vscode", ".cursor"):
        return os.path.dirname(folder)
    return None


def detect(path: str, doc: Mapping[str, Any]) -> McpFormat:
    """The format of a parsed document: its top key, and the file name where that is shared."""
    if path.endswith(".toml"):
        return McpFormat.CODEX
    tops = [key for key in _TOPS if key in doc]
    if len(tops) != 1:
        raise ConfigFileError(
            path, "must hold exactly one of servers, mcpServers, mcp_servers and extensions"
        )
    top = tops[0]
    if top == "servers":
        return McpFormat.VSCODE
    if top == "extensions":
        return McpFormat.GOOSE
    if top == "mcp_servers":
        return McpFormat.AGENT
    in_cursor = os.path.basename(os.path.dirname(os.path.abspath(path))) == ".cursor"
    return McpFormat.CURSOR if in_cursor else McpFormat.CLAUDE


def read_config(
    path: str,
    doc: object,
    environ: Mapping[str, str],
    *,
    workspace: str | None = None,
    source: str = "the host environment",
    fold: bool = WINDOWS,
) -> dict[str, McpServerConfig]:
    """The stdio servers of a parsed config document, by name, in its detected format.

    ``source`` says in errors what ``environ`` is (a routed home's env);
    ``fold`` reads names case-insensitively, as Windows does.
    """
    if not isinstance(doc, Mapping):
        raise ConfigFileError(path, "must be a mapping with mcpServers (or another servers key)")
    fmt = detect(path, doc)
    folder = _workspace(path) if workspace is None else os.fspath(workspace)

    def vscode(value: str, env: Mapping[str, str], at: ConfigField) -> str:
        return expand_vscode(value, env, at, workspace=folder)

    syntax: dict[McpFormat, Expand | None] = {
        McpFormat.VSCODE: vscode,
        McpFormat.CURSOR: vscode,
        McpFormat.CLAUDE: expand_shell_default,
        McpFormat.AGENT: expand_braces,
        McpFormat.CODEX: None,
        McpFormat.GOOSE: None,
    }
    if fold:  # Windows: ${env:WINDIR} is windir (the first spelling of a name)
        folded: dict[str, str] = {}
        for key, value in environ.items():
            folded.setdefault(key.upper(), value)
        environ = _FoldedEnv(folded)
    reading = _Reading(path, environ, syntax[fmt], source, fold)
    if fmt is McpFormat.VSCODE:
        servers = read_vscode(doc, reading)
    elif fmt is McpFormat.CODEX:
        servers = [] if "mcp_servers" not in doc else read_codex(doc, reading)
    elif fmt is McpFormat.GOOSE:
        servers = read_goose(doc, reading)
    else:
        servers = read_mcp_servers(doc, reading, fmt)
    return {server.name: server for server in servers}
