"""The MCP (allowlist) surface."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import (
    Action,
    EnvValueError,
    PassthroughRefusedError,
    Reason,
    StaticSource,
    Surface,
    Trace,
)
from envscope.policy.surfaces import (
    MCP_SAFE_NAMES_POSIX,
    MCP_SAFE_NAMES_WINDOWS,
    MCP_SAFE_PREFIXES_POSIX,
    WINDOWS_DEFAULT_PATHEXT,
    WINDOWS_DEFAULT_SYSTEMROOT,
)
from tests.conftest import HostFactory

# what a Windows MCP child gets when its base lacks them (as under inherit: core)
WINDOWS_DEFAULTS = {"PATHEXT": WINDOWS_DEFAULT_PATHEXT, "SYSTEMROOT": WINDOWS_DEFAULT_SYSTEMROOT}

BASE = {
    "PATH": "/usr/bin",
    "HOME": "/home/op",
    "USER": "op",
    "LOGNAME": "op",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "xterm",
    "SHELL": "/bin/sh",
    "TMPDIR": "/tmp",
    "XDG_RUNTIME_DIR": "/run/user/1",
    "SECRET_KEY": "s",
    "AWS_ACCESS_KEY_ID": "a",
    "DATABASE_URL": "d",
    "GITHUB_TOKEN": "g",
    "EDITOR": "vi",
}


def test_safe_base_lists_are_pinned() -> None:
    """The safe base is pinned as literals: widening it is a visible decision."""
    assert (
        frozenset(
            {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "SHELL", "TMPDIR", "TZ"}
        )
        == MCP_SAFE_NAMES_POSIX
    )
    assert MCP_SAFE_PREFIXES_POSIX == ("XDG_",)
    assert frozenset(
        {
            "APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT",
            "PROCESSOR_ARCHITECTURE", "PROGRAMDATA", "PROGRAMFILES", "PROGRAMFILES(X86)",
            "PROGRAMW6432", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP", "USERNAME",
            "USERPROFILE", "WINDIR", "COMSPEC",
        }
    ) == MCP_SAFE_NAMES_WINDOWS  # fmt: skip


# The MCP Python SDK's DEFAULT_INHERITED_ENV_VARS for win32 (src/mcp/client/stdio/__init__.py,
# modelcontextprotocol/python-sdk), and the Program Files names its later versions and
# hermes-agent add.
MCP_SDK_WIN32 = (
    "APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE",
)  # fmt: skip
PROGRAM_FILES = ("PROGRAMFILES", "PROGRAMFILES(X86)", "ProgramW6432")


@pytest.mark.parametrize("name", MCP_SDK_WIN32 + PROGRAM_FILES)
def test_windows_safe_base_covers_the_sdk_list(make_host: HostFactory, name: str) -> None:
    """Each name the MCP SDK passes on win32, and ProgramW6432, reaches a Windows MCP child."""
    host = make_host(windows=True)
    env = host.build_subprocess_env({name: "C:\\x", "OTHER": "y"}, surface=Surface.MCP)
    assert env == {**WINDOWS_DEFAULTS, name: "C:\\x"}  # defaults fill what the base lacks


def test_mcp_child_gets_safe_base_env_block_and_passthrough(make_host: HostFactory) -> None:
    """Only the safe base, the env: block and passthrough names reach an MCP child."""
    env = make_host().build_subprocess_env(
        {**BASE, "TENOR_API_KEY": "t"},
        surface=Surface.MCP,
        extra={"SERVER_MODE": "fast", "PORT": 8080},
        passthrough=["TENOR_API_KEY"],
    )
    expected_base = {
        k: v for k, v in BASE.items() if k in MCP_SAFE_NAMES_POSIX or k.startswith("XDG_")
    }
    assert env == {**expected_base, "SERVER_MODE": "fast", "PORT": "8080", "TENOR_API_KEY": "t"}
    for name in ("SECRET_KEY", "AWS_ACCESS_KEY_ID", "DATABASE_URL", "GITHUB_TOKEN", "EDITOR"):
        assert name not in env


def test_mcp_windows_list_is_case_insensitive(make_host: HostFactory) -> None:
    """On Windows the safe base is matched case-insensitively."""
    host = make_host(windows=True)
    env = host.build_subprocess_env(
        {"SystemRoot": "C:\\Windows", "Path": "C:\\bin", "HOME": "/h"}, surface=Surface.MCP
    )
    assert env == {
        "SystemRoot": "C:\\Windows",
        "Path": "C:\\bin",
        "PATHEXT": WINDOWS_DEFAULTS["PATHEXT"],
    }


def test_a_windows_mcp_child_without_pathext_gets_the_default(make_host: HostFactory) -> None:
    """As under inherit: core, an MCP server on Windows gets PATHEXT (npx is a .cmd shim)."""
    host = make_host(windows=True)
    trace = Trace()
    env = host.build_subprocess_env({"Path": "C:\\bin"}, surface=Surface.MCP, trace=trace)
    assert env["PATHEXT"] == WINDOWS_DEFAULT_PATHEXT
    assert trace.final()["PATHEXT"].reason is Reason.SURFACE_SET
    kept = host.build_subprocess_env({"PathExt": ".EXE"}, surface=Surface.MCP)
    assert kept["PathExt"] == ".EXE"
    assert "PATHEXT" not in kept  # the parent's own spelling and value win
    posix = make_host().build_subprocess_env({"PATH": "/bin"}, surface=Surface.MCP)
    assert "PATHEXT" not in posix


HOST_TOKEN = "ghp_host0000000000000000000000"
LITERAL = "ghp_operator111111111111111111"


@pytest.mark.parametrize("routed", [False, True], ids=["launch", "routed"])
def test_mcp_env_block_is_the_operators_grant(
    make_host: HostFactory, homes: dict[str, Path], routed: bool
) -> None:
    """A literal token in the server's env block reaches it, Tier 1 name or not."""
    host = make_host({"PATH": "/b", "GITHUB_TOKEN": HOST_TOKEN})
    block = {"GITHUB_PERSONAL_ACCESS_TOKEN": LITERAL, "OPENAI_API_KEY": "sk-server-own-key"}
    trace = Trace()
    if routed:
        with host.routed(homes["B"]):
            env = host.build_subprocess_env(surface=Surface.MCP, extra=block, trace=trace)
    else:
        env = host.build_subprocess_env(surface=Surface.MCP, extra=block, trace=trace)
    assert env["GITHUB_PERSONAL_ACCESS_TOKEN"] == LITERAL
    assert env["OPENAI_API_KEY"] == "sk-server-own-key"
    assert "GITHUB_TOKEN" not in env
    decision = trace.final()["GITHUB_PERSONAL_ACCESS_TOKEN"]
    assert decision.reason is Reason.SERVER_GRANT
    assert decision.reason.sentence == "granted by the server's env block"


@pytest.mark.parametrize("source", ["process", "scope"])
def test_mcp_env_block_copying_a_host_secret_is_refused_until_granted(
    make_host: HostFactory, homes: dict[str, Path], source: str
) -> None:
    """A block value equal to the host's own token is refused, naming it; grant= passes it."""
    environ = {"PATH": "/b", "GITHUB_TOKEN": HOST_TOKEN} if source == "process" else {"PATH": "/b"}
    host = make_host(environ)
    block = {"GITHUB_PERSONAL_ACCESS_TOKEN": HOST_TOKEN}
    with host.routed(homes["B"], scope={"GITHUB_TOKEN": HOST_TOKEN} if source == "scope" else None):
        trace = Trace()
        env = host.build_subprocess_env(surface=Surface.MCP, extra=block, trace=trace)
        assert HOST_TOKEN not in env.values()
        decision = trace.final()["GITHUB_PERSONAL_ACCESS_TOKEN"]
        assert decision.action is Action.STRIPPED
        assert decision.note == "the value is the host's GITHUB_TOKEN; grant it to pass"
        granted = host.build_subprocess_env(
            surface=Surface.MCP, extra=block, grant=["GITHUB_PERSONAL_ACCESS_TOKEN"]
        )
    assert granted["GITHUB_PERSONAL_ACCESS_TOKEN"] == HOST_TOKEN
    assert "GITHUB_TOKEN" not in granted


def test_mcp_env_block_cannot_grant_a_secret_sources_credential(make_host: HostFactory) -> None:
    """A vault's bootstrap token never reaches a child; granting it is an error."""
    host = make_host()
    host.add_secret_source(StaticSource("vault", {}, credential_names=["VAULT_TOKEN"]))
    block = {"VAULT_TOKEN": "hvs.operator-literal-0000", "OTHER_TOKEN": "literal-000000"}
    env = host.build_subprocess_env(surface=Surface.MCP, extra=block)
    assert "VAULT_TOKEN" not in env
    assert env["OTHER_TOKEN"] == "literal-000000"
    with pytest.raises(PassthroughRefusedError, match="VAULT_TOKEN"):
        host.build_subprocess_env(surface=Surface.MCP, extra=block, grant=["VAULT_TOKEN"])


@pytest.mark.parametrize("name", ["LD_PRELOAD", "BASH_FUNC_ls%%", "DYLD_INSERT_LIBRARIES"])
def test_mcp_env_block_cannot_introduce_an_injection_vector(
    make_host: HostFactory, name: str
) -> None:
    """An injection vector in the block is refused unless the host allows it."""
    env = make_host().build_subprocess_env(surface=Surface.MCP, extra={name: "/tmp/x.so"})
    assert name not in env
    allowed = make_host(allow_injection=[name]).build_subprocess_env(
        surface=Surface.MCP, extra={name: "/tmp/x.so"}
    )
    assert allowed[name] == "/tmp/x.so"


@pytest.mark.parametrize("surface", [s for s in Surface if s is not Surface.MCP])
def test_other_surfaces_keep_the_extra_rule(make_host: HostFactory, surface: Surface) -> None:
    """Elsewhere a Tier 1 extra is refused (or, opted in, stripped) unless granted.

    A grant must name extra.
    """
    extra = {"TELEGRAM_BOT_TOKEN": LITERAL}
    with pytest.raises(EnvValueError, match="grant="):
        make_host().build_subprocess_env(surface=surface, extra=extra)
    env = make_host(drop_refused_extra=True).build_subprocess_env(surface=surface, extra=extra)
    assert "TELEGRAM_BOT_TOKEN" not in env
    granted = make_host().build_subprocess_env(
        surface=surface, extra=extra, grant=["TELEGRAM_BOT_TOKEN"]
    )
    assert granted["TELEGRAM_BOT_TOKEN"] == LITERAL
    with pytest.raises(PassthroughRefusedError, match="grant"):
        make_host().build_subprocess_env(surface=surface, grant=["TELEGRAM_BOT_TOKEN"])


def test_source_supplied_names_reach_mcp_with_scope_value(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """Names a secret source supplied reach MCP children with the routed scope's value."""
    host = make_host()
    source = StaticSource(
        "vault",
        {str(homes["A"]): {"VAULT_DB_URL": "a-db"}, str(homes["B"]): {"VAULT_DB_URL": "b-db"}},
    )
    host.add_secret_source(source)
    host.load_launch_env()
    assert host.build_subprocess_env(surface=Surface.MCP)["VAULT_DB_URL"] == "a-db"
    with host.routed(homes["B"]):
        assert host.build_subprocess_env(surface=Surface.MCP)["VAULT_DB_URL"] == "b-db"


@pytest.mark.parametrize("value", [None, ["a"], {"k": "v"}, True, b"bytes"])
def test_non_scalar_env_block_value_is_an_error(make_host: HostFactory, value: object) -> None:
    """A non-scalar value in an env: block is a clear error naming the key, never the value."""
    with pytest.raises(EnvValueError, match="SERVER_OPT") as info:
        make_host().build_subprocess_env({}, surface=Surface.MCP, extra={"SERVER_OPT": value})
    assert info.value.key == "SERVER_OPT"


@pytest.mark.parametrize("key", ["", "A=B", "NUL\x00"])
def test_invalid_extra_key_is_an_error(make_host: HostFactory, key: str) -> None:
    """An extra key that cannot be an env name is an error."""
    with pytest.raises(EnvValueError):
        make_host().build_subprocess_env({}, extra={key: "v"})


def test_shell_functions_never_reach_mcp(make_host: HostFactory) -> None:
    """Values starting with '()' never reach an MCP child (base, block or passthrough)."""
    env = make_host().build_subprocess_env(
        {"PATH": "() { :; }; echo pwned", "FN": "() { x; }", "HOME": "/h"},
        surface=Surface.MCP,
        extra={"BLOCK_FN": "() { y; }", "OK": "(not a function)"},
        passthrough=["FN"],
    )
    assert env == {"HOME": "/h", "OK": "(not a function)"}
