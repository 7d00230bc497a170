"""MCP stdio servers: ``StdioServerParameters`` built by envscope (``pip install envscope[mcp]``).

``stdio_server_parameters`` builds the child env of one MCP server on the
``mcp`` surface (the safe base, the server's ``env:`` block as the operator's
grant, passthrough names, the names secret sources supplied) for the bound
home, and hands it to the SDK's ``StdioServerParameters``.
``load_server_parameters`` does the same for every stdio server of an MCP
client config file in the format its client writes (VS Code ``servers``,
``mcpServers`` of Claude Code and Cursor, Codex TOML, goose ``extensions``,
agent-host YAML ``mcp_servers``: ``envscope._mcp_formats`` reads them).

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
from typing import TYPE_CHECKING, Any, Literal

from envscope._mcp_formats import (
    MAX_CONFIG_BYTES,
    McpFormat,
    McpServerConfig,
    read_config,
)
from envscope._mcp_syntax import strip_jsonc
from envscope.audit.trace import NULL_TRACE, Action, Decision, Reason, Stage, Trace
from envscope.errors import ConfigFileError, ConfigurationError, EnvValueError
from envscope.pipeline.decision import decide
from envscope.pipeline.stages import at_cwd
from envscope.policy._declarations import Origin, OriginKind
from envscope.policy._layers import Layer
from envscope.policy.surfaces import Surface

if TYPE_CHECKING:
    from types import ModuleType

    from mcp.client.stdio import StdioServerParameters

    from envscope.host import Host
    from envscope.pipeline.secret_rule import SecretRule

__all__ = [
    "McpFormat",
    "McpServerConfig",
    "load_server_parameters",
    "read_server_config",
    "sdk_added_names",
    "stdio_server_parameters",
]

SdkDefaults = Literal["refuse", "allow"]
LOGGER = "envscope.mcp"
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
    resolved: Sequence[str] = (),
) -> StdioServerParameters:
    """The SDK's ``StdioServerParameters`` for one server, its env built by ``host``.

    ``env`` is the server's configured env block (the operator's grant);
    ``grant`` names block keys whose value may equal a secret the host
    holds; ``resolved`` names block keys whose value the host resolved (a
    ``${NAME}`` reference, an ``envFile``), not the operator's literal. Built
    for the home bound with ``host.routed(...)`` in this context, else the
    launch home.
    """
    stdio = _sdk()
    # a config's env block carries the keys the host resolved: never the operator's literal
    resolved = (*resolved, *getattr(env, "resolved", ()))
    own = _typed_by_profile(host, env, resolved)
    if not isinstance(command, str) or not command:
        raise ConfigurationError("command: must be a non-empty string")
    arguments = _arguments(args, "args")
    if sdk_defaults not in ("refuse", "allow"):
        raise ConfigurationError("sdk_defaults: must be 'refuse' or 'allow'")
    child = host.build_subprocess_env(
        surface=Surface.MCP,
        extra=env,
        grant=grant,
        passthrough=passthrough,
        trace=trace,
        resolved=resolved,
        own=own,
    )
    at_cwd(child, cwd, NULL_TRACE if trace is None else trace)
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


def _typed_by_profile(
    host: Host, env: Mapping[str, object] | None, resolved: Sequence[str]
) -> tuple[str, ...]:
    """The block keys the routed profile typed into its own config, as ``build``'s ``own``.

    A config file read by ``read_server_config`` (its env block carries its
    path) that lies in the bound home of a routed build is that profile's: its
    literals are compared with the profile's own secrets only, so what the
    server gets never tells the profile whether a guess equals a launch secret.
    """
    if env is None or not _in_routed_home(host, getattr(env, "path", None)):
        return ()
    return tuple(key for key in env if key not in resolved)


def _in_routed_home(host: Host, path: str | None) -> bool:
    """True when a config file lies in the bound home of a routed build (the profile's own)."""
    bound = host.bound_home()
    if path is None or bound is None or bound == host.launch_home:
        return False
    return _inside(os.path.realpath(path), bound)


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


def _read(path: str) -> Any:
    """The parsed document of a config file: TOML (``.toml``), JSON (``.json``) or YAML.

    Read through envscope's one non-blocking reader with its size limit; YAML
    through the one YAML reader (duplicates, depth and size refused, like a
    manifest); JSON with comments and trailing commas allowed (VS Code writes
    JSONC) and duplicate keys and deep nesting refused; TOML with ``tomllib``.
    """
    from envscope.files._trusted_file import read_file

    data = read_file(path, max_bytes=MAX_CONFIG_BYTES, error=ConfigFileError, what="MCP config")
    if path.endswith(".toml"):
        return _read_toml(data, path)
    if not path.endswith(".json"):
        from envscope.files._yaml import read_document

        kind = "MCP config"
        return read_document(
            data, path, error=ConfigFileError, kind=kind, max_bytes=MAX_CONFIG_BYTES
        ).root
    from envscope.files._json import decode_json

    text = _text(data, path)
    plain = strip_jsonc(text)
    if plain is None:
        raise ConfigFileError(path, "not JSON: a /* comment is never closed")
    value, problem, line = decode_json(plain.encode("utf-8"))
    if problem is not None:
        raise ConfigFileError(path, problem, line=line)
    return value


def _text(data: bytes, path: str) -> str:
    """UTF-8 text (a BOM allowed), or a ``ConfigFileError`` naming the line (never the text)."""
    failure: ConfigFileError | None = None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        failure = ConfigFileError(path, f"not valid UTF-8 at byte {exc.start}", line=line)
    raise failure


_TOML_LINE = re.compile(r"\(at line (\d+), column \d+\)")


def _tomllib() -> ModuleType:
    """``tomllib`` (Python 3.11+), or a ``ConfigurationError`` saying what reading TOML needs."""
    try:
        import tomllib  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # Python 3.10
        raise ConfigurationError(
            "reading a TOML MCP config (Codex's config.toml) needs Python 3.11 or later"
        ) from None
    module: ModuleType = tomllib
    return module


def _read_toml(data: bytes, path: str) -> Any:
    """A TOML document (Codex's config.toml) through ``tomllib``; errors name the line."""
    toml = _tomllib()
    text = _text(data, path)
    failure: ConfigFileError | None = None
    try:
        return toml.loads(text)
    except toml.TOMLDecodeError as exc:  # its message names line and column, not the text
        found = _TOML_LINE.search(str(exc))
        failure = ConfigFileError(path, "not TOML", line=int(found[1]) if found else None)
    except RecursionError:
        failure = ConfigFileError(path, "not TOML: nested too deeply")
    raise failure


def read_server_config(
    path: str | os.PathLike[str],
    environ: Mapping[str, str],
    *,
    workspace: str | os.PathLike[str] | None = None,
) -> dict[str, McpServerConfig]:
    """The stdio servers of an MCP client config file, by name, references read from ``environ``.

    The format is detected from the document (docs/mcp.md has the table):
    VS Code ``servers``, ``mcpServers`` (Claude Code, Cursor in ``.cursor/``),
    Codex TOML ``mcp_servers``, goose ``extensions``, agent-host YAML
    ``mcp_servers``. HTTP/SSE servers and disabled ones are left out.
    ``workspace`` is VS Code's ``${workspaceFolder}`` (default: the folder
    holding the config's ``.vscode``/``.cursor`` directory). Errors are
    ``ConfigFileError`` naming the file and the field.
    """
    where = os.fspath(path)
    folder = None if workspace is None else os.fspath(workspace)
    return read_config(where, _read(where), environ, workspace=folder)


def load_server_parameters(
    host: Host,
    path: str | os.PathLike[str],
    *,
    grants: Mapping[str, Sequence[str]] | None = None,
    passthrough: Sequence[str] = (),
    sdk_defaults: SdkDefaults = "refuse",
    trace: Trace | None = None,
    lenient: bool = False,
    workspace: str | os.PathLike[str] | None = None,
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
    ``lenient=True`` it is logged (logger ``envscope.mcp``) and left out. A
    command, argument or cwd that holds such a secret is always an error
    (argv is readable by every local user; an env entry can be granted).
    """
    grants = {} if grants is None else grants
    where = os.fspath(path)
    bound = host.bound_home()
    source = (
        "the host environment"
        if bound is None or bound == host.launch_home
        else f"the env of the routed home {bound} (its .env and secret sources over the "
        "process env; never a launch profile's value)"
    )
    folder = None if workspace is None else os.fspath(workspace)
    servers = read_config(
        where, _read(where), host.parent_env(), workspace=folder, source=source, fold=host.windows
    )
    unknown = sorted(set(grants) - set(servers))
    if unknown:  # the caller's argument, about this file
        raise ConfigurationError(f"grants: no stdio server named {', '.join(unknown)} in {where}")
    rule = host.secret_rule(surface=Surface.MCP)
    out: dict[str, StdioServerParameters] = {}
    for name, server in servers.items():
        _check_env_file(host, server)
        _check_argv(rule, server, own=_in_routed_home(host, server.path))
        granted = _grants_of(server, grants.get(name, ()))
        record = Trace() if trace is None else trace
        start = len(record)
        try:
            params = stdio_server_parameters(
                host,
                server.command,
                server.args,
                env=server.env,
                cwd=server.cwd,
                grant=granted,
                passthrough=passthrough,
                sdk_defaults=sdk_defaults,
                trace=record,
                resolved=tuple(server.resolved),
            )
        except EnvValueError as exc:  # names a key: this file and field say where it is
            failure: ConfigFileError | None = ConfigFileError(
                server.path, exc.reason, field=server.field_of(exc.key)
            )
        else:
            failure = None
        if failure is not None:
            raise failure
        _check_refusals(list(record)[start:], server, lenient=lenient)
        out[name] = params
    return out


def _grants_of(server: McpServerConfig, grant: Sequence[str]) -> tuple[str, ...]:
    """A server's grants, each naming a key of its env block; else an error naming file and server.

    A grant of a key the block does not hold can never pass (a typo, a key
    removed from the config): said here with the server and the file.
    """
    if isinstance(grant, str) or not isinstance(grant, Sequence):
        raise ConfigFileError(
            server.path, "must be a list of env block keys", field=f"grants.{server.name}"
        )
    for key in grant:
        if key not in server.env:
            raise ConfigFileError(
                server.path,
                f"grant of {key!r}: the server's env block has no such key (nothing to grant)",
                field=f"{server.where}.env",
            )
    return tuple(grant)


def _inside(path: str, folder: str) -> bool:
    """True when ``path`` is ``folder`` or below it (both real paths)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _check_env_file(host: Host, server: McpServerConfig) -> None:
    """An ``envFile`` is read from the bound home or the config's folder, never another home.

    Compared as real paths (a symlink is where it points): a file inside the
    launch home, when the build is for another home, is that profile's and is
    refused; so is one outside both the bound home and the config's own folder
    (the folder holding its ``.vscode``/``.cursor`` directory, or the file).
    """
    if server.env_file is None:
        return
    real = os.path.realpath(server.env_file)
    target = host.bound_home() or host.launch_home
    config = os.path.dirname(os.path.realpath(server.path))
    if os.path.basename(config) in (".vscode", ".cursor"):
        config = os.path.dirname(config)
    refused = None
    if target != host.launch_home and _inside(real, host.launch_home):
        refused = "is in the launch home; a routed server never reads the launch profile's files"
    elif not (_inside(real, target) or _inside(real, config)):
        refused = "is outside the bound home and the config's folder (another profile's file?)"
    if refused is not None:
        raise ConfigFileError(
            server.path, f"refused: the envFile {real} {refused}", field=f"{server.where}.envFile"
        )


def _check_argv(rule: SecretRule, server: McpServerConfig, *, own: bool) -> None:
    """A command, argument or cwd holding a secret this child may not get: an error.

    ``own``: the config is the routed profile's (in its home), so what it typed
    (a field without a reference) is compared with its own secrets only.
    """
    values = [(server.command_field, server.command)]
    values += [(f"{server.where}.args[{i}]", arg) for i, arg in enumerate(server.args)]
    if server.cwd is not None:
        values.append((f"{server.where}.cwd", server.cwd))
    for field, value in values:
        typed = own and field not in server.argv_resolved
        verdict = decide(rule, field, value, Layer.ARGV, own=typed)
        if verdict is not None and verdict.withheld and verdict.match is not None:
            raise ConfigFileError(
                server.path,
                f"refused: holds the value of {rule.public(verdict.match)}; a command line "
                "is readable by every local user: pass the secret in the env block and grant "
                "it there",
                field=field,
            )


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
        elif decision.reason is Reason.VALUE_SHAPE:
            message = (
                f"refused: the value {decision.note or 'holds a credential format'}, read from "
                "the host (a reference, an envFile, a forwarded name), not typed in the config; "
                "grant the key to this server to pass it (load_server_parameters(grants=...))"
            )
        field = server.field_of(key)
        if not field.endswith(f".{key}"):  # a forwarded name (env_vars[0]): say which
            message = f"{key} {message}"
        if not lenient:
            raise ConfigFileError(server.path, message, field=field)
        logging.getLogger(LOGGER).warning("%s: %s: %s (left out)", server.path, field, message)
