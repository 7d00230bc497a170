"""MCP stdio servers: ``StdioServerParameters`` built by envscope (``pip install envscope[mcp]``).

``stdio_server_parameters`` builds the child env of one MCP server on the
``mcp`` surface (the safe base, the server's ``env:`` block as the operator's
grant, passthrough names, the names secret sources supplied) for the bound
home, and hands it to the SDK's ``StdioServerParameters``.
``load_server_parameters`` does the same for every stdio server of an MCP
client config file (``{"mcpServers": {name: {command, args, env, cwd}}}``,
JSON or YAML).

The SDK merges its own defaults underneath whatever env it is given
(``get_default_environment()``: ``HOME LOGNAME PATH SHELL TERM USER`` on
POSIX, read from the real ``os.environ``). envscope always passes the full
child env, so a default the child holds is the child's own value; a default
the child env leaves out (a surface policy excluded it, or the host's
``environ`` lacks it) would come back from ``os.environ``: that is refused
unless ``sdk_defaults="allow"`` (see docs/mcp.md).

Importing ``envscope`` never imports this module or the SDK; this module
imports the SDK on first use.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from envscope._inputs import valid_name
from envscope.audit.trace import Action, Decision, Reason, Stage, Trace
from envscope.errors import ConfigFileError, ConfigurationError
from envscope.pipeline.stages import FORCE_PREFIX
from envscope.policy._declarations import Origin, OriginKind
from envscope.policy.surfaces import Surface

if TYPE_CHECKING:
    from types import ModuleType

    from mcp.client.stdio import StdioServerParameters

    from envscope.host import Host

__all__ = [
    "McpServerConfig",
    "load_server_parameters",
    "read_server_config",
    "sdk_added_names",
    "stdio_server_parameters",
]

SdkDefaults = Literal["refuse", "allow"]
LOGGER = "envscope.mcp"
_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_MAX_CONFIG_BYTES = 1024 * 1024
_SDK_ORIGIN = Origin(OriginKind.SURFACE, "MCP SDK get_default_environment()")


def _sdk() -> ModuleType:
    """``mcp.client.stdio``, or a ``ConfigurationError`` saying how to install it."""
    try:
        from mcp.client import stdio
    except ImportError:
        raise ConfigurationError(
            "envscope.mcp needs the MCP SDK: pip install 'envscope[mcp]'"
        ) from None
    return stdio


def sdk_added_names(env: Mapping[str, str], *, windows: bool = os.name == "nt") -> list[str]:
    """The names the SDK would add to ``env`` from ``os.environ`` (its defaults ``env`` lacks)."""
    defaults: list[str] = list(_sdk().DEFAULT_INHERITED_ENV_VARS)
    have = {k.upper() for k in env} if windows else set(env)
    added = []
    for name in defaults:
        value = os.environ.get(name)
        if value is None or value.startswith("()"):  # the SDK skips shell functions
            continue
        if (name.upper() if windows else name) not in have:
            added.append(name)
    return added


def stdio_server_parameters(
    host: Host,
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, object] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    grant: Sequence[str] = (),
    passthrough: Sequence[str] = (),
    trace: Trace | None = None,
    sdk_defaults: SdkDefaults = "refuse",
) -> StdioServerParameters:
    """The SDK's ``StdioServerParameters`` for one server, its env built by ``host``.

    ``env`` is the server's configured env block (the operator's grant);
    ``grant`` names block keys whose value may equal a secret the host
    holds. Built for the home bound with ``host.routed(...)`` in this
    context, else the launch home.
    """
    stdio = _sdk()
    if not isinstance(command, str) or not command:
        raise ConfigurationError("command: must be a non-empty string")
    arguments = _arguments(args, "args")
    if sdk_defaults not in ("refuse", "allow"):
        raise ConfigurationError("sdk_defaults: must be 'refuse' or 'allow'")
    child = host.build_subprocess_env(
        surface=Surface.MCP, extra=env, grant=grant, passthrough=passthrough, trace=trace
    )
    added = sdk_added_names(child)
    if added and sdk_defaults == "refuse":
        raise ConfigurationError(
            f"the MCP SDK adds {', '.join(added)} from os.environ underneath any env, and this "
            "server's env leaves them out (a surface policy excluded them, or the host's environ "
            "lacks them); pass sdk_defaults='allow' to accept them (docs/mcp.md)"
        )
    if trace is not None:
        for name in added:
            trace.record(
                name,
                Action.ADDED,
                Stage.SANITIZE,
                Reason.MCP_SDK_DEFAULT,
                _SDK_ORIGIN,
                value=os.environ.get(name),
            )
    params: StdioServerParameters = _masked_parameters_class(stdio)(
        command=command, args=arguments, env=child, cwd=None if cwd is None else os.fspath(cwd)
    )
    return params


@functools.cache
def _masked_parameters_class(stdio: ModuleType) -> type[StdioServerParameters]:
    """The SDK's ``StdioServerParameters`` with a repr and str that show env keys, never values."""
    base: type[StdioServerParameters] = stdio.StdioServerParameters

    class MaskedStdioServerParameters(base):  # type: ignore[valid-type,misc]
        """``StdioServerParameters`` whose repr masks the env's values (they hold credentials)."""

        def __repr_args__(self) -> Any:
            for name, value in super().__repr_args__():
                if name == "env" and isinstance(value, Mapping):
                    yield name, _MaskedEnv(value)
                else:
                    yield name, value

    MaskedStdioServerParameters.__name__ = base.__name__
    MaskedStdioServerParameters.__qualname__ = base.__qualname__
    return MaskedStdioServerParameters


class _MaskedEnv:
    """Shows a child env as its keys with masked values (``{'K': ********}``)."""

    __slots__ = ("_keys",)

    def __init__(self, env: Mapping[str, str]) -> None:
        self._keys = list(env)

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{key!r}: ********" for key in self._keys) + "}"


def _arguments(args: object, field: str) -> list[str]:
    """A command's arguments: a sequence of strings, never a bare string."""
    if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
        raise ConfigurationError(f"{field}: must be a list of strings")
    if not all(isinstance(a, str) for a in args):
        raise ConfigurationError(f"{field}: every argument must be a string")
    return list(args)


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One stdio server of an MCP client config file (``env`` already interpolated)."""

    name: str
    command: str
    args: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str | None
    path: str
    top: str = "mcpServers"  # the key the servers live under in the file

    def __repr__(self) -> str:
        keys = sorted(self.env)  # the env block's names, never its values
        return f"McpServerConfig(name={self.name!r}, command={self.command!r}, env_keys={keys!r})"


def _read(path: str) -> Any:
    """The parsed document of a JSON (``.json``) or YAML (anything else) config file.

    Read through envscope's one non-blocking reader with its size limit; YAML
    through the one YAML reader (duplicates, depth and size refused, like a
    manifest); JSON with duplicate keys and deep nesting refused too.
    """
    from envscope.files._trusted_file import read_file

    data = read_file(path, max_bytes=_MAX_CONFIG_BYTES, error=ConfigFileError, what="MCP config")
    if not path.endswith(".json"):
        from envscope.files._yaml import read_document

        kind = "MCP config"
        return read_document(
            data, path, error=ConfigFileError, kind=kind, max_bytes=_MAX_CONFIG_BYTES
        ).root
    from envscope.files._json import decode_json

    value, problem, line = decode_json(data)
    if problem is not None:
        raise ConfigFileError(path, problem, line=line)
    return value


def _field(path: str, where: str, message: str) -> ConfigFileError:
    return ConfigFileError(path, message, field=where)


def _interpolate(value: str, environ: Mapping[str, str], path: str, where: str) -> str:
    """``${NAME}`` replaced by the host environ's value; an unset or invalid name is an error."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if not valid_name(name):
            raise _field(path, where, f"${{{name}}} is not a valid variable reference")
        found = environ.get(name)
        if found is None:
            raise _field(path, where, f"${{{name}}} is not set in the host environment")
        return found

    return _REFERENCE.sub(one, value)


def _server(
    name: str, doc: object, environ: Mapping[str, str], path: str, top: str
) -> McpServerConfig | None:
    """One server entry, checked; ``None`` for an HTTP server or a disabled one."""
    where = f"{top}.{name}"
    if not isinstance(doc, Mapping):
        raise _field(path, where, "must be a mapping")
    for flag in ("disabled", "enabled"):
        if flag in doc and not isinstance(doc[flag], bool):
            raise _field(path, f"{where}.{flag}", "must be true or false")
    if doc.get("disabled") is True or doc.get("enabled") is False:
        return None
    command = doc.get("command")
    if command is None and "url" in doc:
        return None  # an HTTP transport: not a stdio server
    if not isinstance(command, str) or not command:
        raise _field(path, f"{where}.command", "must be a non-empty string")
    raw_args = doc.get("args", [])
    if not isinstance(raw_args, list) or not all(isinstance(a, str) for a in raw_args):
        raise _field(path, f"{where}.args", "must be a list of strings")
    raw_env = doc.get("env")
    raw_env = {} if raw_env is None else raw_env
    if not isinstance(raw_env, Mapping):
        raise _field(path, f"{where}.env", "must be a mapping of names to values")
    env: dict[str, str] = {}
    for key, value in raw_env.items():
        at = f"{where}.env.{key}"
        if not isinstance(key, str) or not valid_name(key):
            shown = repr(key.partition("=")[0]) if isinstance(key, str) else type(key).__name__
            raise _field(path, f"{where}.env", f"{shown} is not a valid environment name")
        if key.upper().startswith(FORCE_PREFIX):
            raise _field(path, at, f"an env block may not carry the force prefix {FORCE_PREFIX}")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise _field(path, at, f"must be a string or a number, not {type(value).__name__}")
        env[key] = _interpolate(str(value), environ, path, at)
    cwd = doc.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise _field(path, f"{where}.cwd", "must be a string")
    return McpServerConfig(name, command, tuple(raw_args), env, cwd, path, top)


def read_server_config(
    path: str | os.PathLike[str], environ: Mapping[str, str]
) -> dict[str, McpServerConfig]:
    """The stdio servers of an MCP client config file, by name (``${NAME}`` from ``environ``).

    The servers live under ``mcpServers`` (the MCP clients' JSON) or
    ``mcp_servers`` (agent-host YAML). An entry with a ``url`` and no
    ``command`` (an HTTP server), ``disabled: true`` or ``enabled: false``
    is left out. Errors are ``ConfigFileError`` naming the file and field.
    """
    where = os.fspath(path)
    doc = _read(where)
    if not isinstance(doc, Mapping):
        raise ConfigFileError(where, "must be a mapping with mcpServers (or mcp_servers)")
    tops = [key for key in ("mcpServers", "mcp_servers") if key in doc]
    if len(tops) != 1:
        raise ConfigFileError(where, "must hold exactly one of mcpServers and mcp_servers")
    top = tops[0]
    servers = doc[top]
    if servers is None:
        return {}
    if not isinstance(servers, Mapping):
        raise _field(where, top, "must be a mapping of server names to servers")
    out: dict[str, McpServerConfig] = {}
    seen: set[str] = set()
    for name, entry in servers.items():
        label = str(name)
        if label in seen:
            raise _field(where, f"{top}.{label}", "two servers share this name")
        seen.add(label)
        server = _server(label, entry, environ, where, top)
        if server is not None:
            out[server.name] = server
    return out


def load_server_parameters(
    host: Host,
    path: str | os.PathLike[str],
    *,
    grants: Mapping[str, Sequence[str]] | None = None,
    passthrough: Sequence[str] = (),
    sdk_defaults: SdkDefaults = "refuse",
    trace: Trace | None = None,
    lenient: bool = False,
) -> dict[str, StdioServerParameters]:
    """``StdioServerParameters`` per stdio server of a config file, built for the bound home.

    ``grants`` maps a server name to the block keys whose value may hold a
    secret the host holds (``stdio_server_parameters``'s ``grant``).
    ``${NAME}`` references in a block resolve against the env a child's build
    starts from (``Host.parent_env``): under ``routed(home)`` the home's scope
    over the process env with the launch residue stripped, never a launch
    profile's value. A block entry the build refuses (it holds a host secret
    and is not granted, it is an injection vector, an exported shell function)
    is a ``ConfigFileError`` naming the file, the server and the key; with
    ``lenient=True`` it is logged (logger ``envscope.mcp``) and left out.
    """
    grants = {} if grants is None else grants
    where = os.fspath(path)
    servers = read_server_config(where, host.parent_env())
    unknown = sorted(set(grants) - set(servers))
    if unknown:
        raise ConfigurationError(f"grants: no stdio server named {', '.join(unknown)}")
    out: dict[str, StdioServerParameters] = {}
    for name, server in servers.items():
        record = Trace() if trace is None else trace
        start = len(record)
        params = stdio_server_parameters(
            host,
            server.command,
            server.args,
            env=server.env,
            cwd=server.cwd,
            grant=grants.get(name, ()),
            passthrough=passthrough,
            sdk_defaults=sdk_defaults,
            trace=record,
        )
        _check_refusals(list(record)[start:], server, lenient=lenient)
        out[name] = params
    return out


_REFUSING_STAGES = frozenset({Stage.EXTRA, Stage.SANITIZE})


def _check_refusals(
    decisions: Sequence[Decision], server: McpServerConfig, *, lenient: bool
) -> None:
    """Each block entry the build kept from the server: an error naming file, server and key."""
    final = {d.key: d for d in decisions}
    for key in server.env:
        decision = final.get(key)
        if decision is None or not decision.removed or decision.stage not in _REFUSING_STAGES:
            continue
        message = f"refused ({decision.reason.sentence})"
        if decision.reason is Reason.ALIAS_OF:
            message = (
                "refused: the value holds a secret the host holds; grant the key to this "
                "server to pass it (load_server_parameters(grants=...))"
            )
        field = f"{server.top}.{server.name}.env.{key}"
        if not lenient:
            raise ConfigFileError(server.path, message, field=field)
        logging.getLogger(LOGGER).warning("%s: %s: %s (left out)", server.path, field, message)
