"""Leak classes of entries that lost where they came from, each across its whole matrix.

An exemption covers exactly what it names: an operator's literal is not a value
the loader resolved from the host (a ``${NAME}`` reference, an ``envFile``, a
forwarded name); the provider's key exemption covers that key as the whole value;
a secret and its copy are compared as consumers read them (trimmed), keys as
they strip; the guard agrees with the factory whatever the host's options; a
key is never shown past its ``=``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envscope import ConfigFileError, Host, Reason, Surface, Trace
from envscope._guard import offences
from envscope.testing import assert_no_secrets
from tests.conftest import HostFactory, write_home

pytest.importorskip("mcp", reason="the MCP SDK is the [mcp] extra")

from envscope.mcp import load_server_parameters, stdio_server_parameters
from tests.test_mcp_formats import FORMATS, IDS

# A GitHub classic PAT whose CRC32 passes: a credential format, declared by no name.
PAT = "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"
OPENAI_KEY = (
    "sk-proj-EXAMPLEfakeEXAMPLEfake0123456789EXAMPLEfake0123456789EXAMPT3BlbkFJ"
    "EXAMPLEfakeEXAMPLEfake0123456789EXAMPLEfake0123456789EXAMP"
)
NOT_MCP = [s for s in Surface if s is not Surface.MCP]
ROUTED = [False, True]


def _bound(host: Host, homes: dict[str, Path], routed: bool) -> object:
    return host.routed(homes["B"] if routed else homes["A"])


# -- a ${NAME} reference is the host's value, never the operator's literal ----------


# A format without a reference syntax forwards the name (undecorated): a decorated copy
# there is the operator's literal, tested below.
REFERENCES = [
    (fmt, decoration)
    for fmt in IDS
    for decoration in ("{}", "Bearer {}", "https://x.invalid/{}/v1")
    if FORMATS[fmt].ref is not None or decoration == "{}"
]


@pytest.mark.parametrize(("fmt", "decoration"), REFERENCES)
@pytest.mark.parametrize("routed", ROUTED, ids=["launch", "routed"])
def test_a_reference_to_an_undeclared_credential_is_refused_until_granted(
    make_host: HostFactory,
    homes: dict[str, Path],
    tmp_path: Path,
    fmt: str,
    routed: bool,
    decoration: str,
) -> None:
    """``${MY_GH_PAT}`` (a PAT no rule declares) is refused in every format unless granted."""
    form = FORMATS[fmt]
    host = make_host({"PATH": "/usr/bin", "MY_GH_PAT": PAT})
    if routed:  # the routed profile's own scope holds it: still the host's, not a literal
        write_home(homes["root"], "B", {"MY_GH_PAT": PAT})
    env, forwarded, key = form.reference("MY_GH_PAT", decoration)
    path = form.write(tmp_path, env, forwarded)
    with _bound(host, homes, routed):  # type: ignore[attr-defined]
        with pytest.raises(ConfigFileError, match=form.field(key, bool(forwarded))) as refused:
            load_server_parameters(host, path, sdk_defaults="allow")
        assert PAT not in str(refused.value)
        assert "grant" in str(refused.value)
        params = load_server_parameters(host, path, grants={"srv": [key]}, sdk_defaults="allow")
    assert params["srv"].env is not None
    assert PAT in params["srv"].env[key]


@pytest.mark.parametrize("routed", ROUTED, ids=["launch", "routed"])
@pytest.mark.parametrize("fmt", IDS)
def test_the_same_credential_typed_as_a_literal_passes(
    make_host: HostFactory, homes: dict[str, Path], tmp_path: Path, fmt: str, routed: bool
) -> None:
    """The operator typing the token into the block is the operator's grant to that server.

    With name context on (the default) the host's ``MY_GH_PAT`` is a credential the host
    holds, so a literal equal to it is refused until granted, as one equal to a declared
    secret is (no oracle); with it off the host holds no such secret and the literal passes.
    """
    path = FORMATS[fmt].write(tmp_path, {"TOKEN": PAT}, [])
    plain = make_host({"PATH": "/usr/bin", "MY_GH_PAT": PAT}, name_context=False)
    with _bound(plain, homes, routed):  # type: ignore[attr-defined]
        params = load_server_parameters(plain, path, sdk_defaults="allow")
    assert params["srv"].env is not None
    assert params["srv"].env["TOKEN"] == PAT
    host = make_host({"PATH": "/usr/bin", "MY_GH_PAT": PAT})
    with _bound(host, homes, routed):  # type: ignore[attr-defined]
        with pytest.raises(ConfigFileError, match="grant") as refused:
            load_server_parameters(host, path, sdk_defaults="allow")
        assert PAT not in str(refused.value)
        params = load_server_parameters(host, path, grants={"srv": ["TOKEN"]}, sdk_defaults="allow")
    assert params["srv"].env is not None
    assert params["srv"].env["TOKEN"] == PAT


@pytest.mark.parametrize("resolved", [(), ("TOKEN",)], ids=["literal", "resolved"])
def test_stdio_server_parameters_takes_the_keys_the_host_resolved(
    make_host: HostFactory, resolved: tuple[str, ...]
) -> None:
    """A host with its own config loader says which block keys it resolved: those are refused."""
    host = make_host({"PATH": "/usr/bin"})
    trace = Trace()
    params = stdio_server_parameters(
        host, "server", env={"TOKEN": PAT}, resolved=resolved, trace=trace, sdk_defaults="allow"
    )
    assert params.env is not None
    assert ("TOKEN" in params.env) is (not resolved)
    decision = trace.final()["TOKEN"]
    assert decision.reason is (Reason.VALUE_SHAPE if resolved else Reason.OPERATOR_LITERAL)


@pytest.mark.parametrize("what", ["resolved", "own"])
@pytest.mark.parametrize("surface", NOT_MCP)
def test_resolved_and_own_keys_belong_to_an_mcp_block(
    make_host: HostFactory, surface: Surface, what: str
) -> None:
    """``resolved``/``own`` on another surface, naming a key extra lacks, or both: loud."""
    from envscope import ConfigurationError

    host = make_host()
    build = host.build_subprocess_env
    with pytest.raises(ConfigurationError, match="mcp only"):
        build(surface=surface, extra={"K": "v"}, **{what: ["K"]})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=f"{what}: 'GONE' is not a key of extra"):
        build(surface=Surface.MCP, extra={"K": "v"}, **{what: ["GONE"]})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="own: 'K' is also resolved"):
        build(surface=Surface.MCP, extra={"K": "v"}, resolved=["K"], own=["K"])


# -- an envFile reads from the bound home or the config's folder, never another home --


def _env_file_config(folder: Path, fmt: str, env_file: str) -> Path:
    """A Cursor or VS Code config in ``folder`` whose server reads ``env_file``."""
    import json

    kind = {
        "cursor": (".cursor", "mcpServers", {}),
        "vscode": (".vscode", "servers", {"type": "stdio"}),
    }
    sub, top, extra = kind[fmt]
    path = folder / sub / "mcp.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    server = {"command": "server", "envFile": env_file, **extra}
    path.write_text(json.dumps({top: {"srv": server}}))
    return path


@pytest.mark.parametrize("fmt", ["cursor", "vscode"])
@pytest.mark.parametrize(
    "target",
    ["../../A/.env", "../../C/.env", "link-to-launch.env", "/{root}/A/.env"],
    ids=["launch-relative", "other-profile", "symlink-to-launch", "launch-absolute"],
)
def test_a_routed_envfile_of_another_profile_is_refused(
    make_host: HostFactory, homes: dict[str, Path], fmt: str, target: str
) -> None:
    """Routed to B, an envFile in the launch home or another profile's is a ConfigFileError."""
    launch_value = "launch-only-value-0123456789"
    (homes["A"] / ".env").write_text(f"A_MARKER=a\nLAUNCH_ONLY={launch_value}\n")
    write_home(homes["root"], "C", {"C_ONLY": "c-only-value-0123456789"})
    os.symlink(homes["A"] / ".env", homes["B"] / "link-to-launch.env")
    host = make_host()
    host.load_launch_env()
    path = _env_file_config(homes["B"], fmt, target.format(root=str(homes["root"]).lstrip("/")))
    with host.routed(homes["B"]), pytest.raises(ConfigFileError, match=r"\.srv\.envFile") as err:
        load_server_parameters(host, path, sdk_defaults="allow")
    assert launch_value not in str(err.value)


@pytest.mark.parametrize("fmt", ["cursor", "vscode"])
@pytest.mark.parametrize("routed", ROUTED, ids=["launch", "routed"])
def test_an_envfile_of_the_bound_home_is_read_and_its_values_are_not_literals(
    make_host: HostFactory, homes: dict[str, Path], fmt: str, routed: bool
) -> None:
    """The bound home's own envFile is read; a credential format in it is refused until granted."""
    home = homes["B"] if routed else homes["A"]
    (home / "server.env").write_text(f"PLAIN=plain-value\nTOKEN={PAT}\n")
    path = _env_file_config(home, fmt, "../server.env")
    host = make_host()
    with host.routed(home):
        with pytest.raises(ConfigFileError, match=r"\.srv\.envFile\.TOKEN") as refused:
            load_server_parameters(host, path, sdk_defaults="allow")
        assert PAT not in str(refused.value)
        params = load_server_parameters(host, path, grants={"srv": ["TOKEN"]}, sdk_defaults="allow")
    assert params["srv"].env is not None
    assert params["srv"].env["PLAIN"] == "plain-value"
    assert params["srv"].env["TOKEN"] == PAT


# -- the provider's key exemption covers that key as the whole value -----------------

RIDERS = {
    "after": "{key} {other}",
    "before": "{other} {key}",
    "comma": "{key},{other}",
    "url": "https://x:{other}@h.invalid/?k={key}",
}


@pytest.mark.parametrize("position", sorted(RIDERS))
@pytest.mark.parametrize("routed", ROUTED, ids=["launch", "routed"])
@pytest.mark.parametrize("inherit", ["credentialed", "inherit_credentials"])
def test_a_second_credential_beside_the_provider_key_is_stripped(
    make_host: HostFactory, homes: dict[str, Path], position: str, routed: bool, inherit: str
) -> None:
    """OPENAI_API_KEY holding its own key plus a PAT, in any order: stripped from the child."""
    value = RIDERS[position].format(key=OPENAI_KEY, other=PAT)
    kwargs: dict[str, object] = (
        {"surface": Surface.CREDENTIALED}
        if inherit == "credentialed"
        else {"surface": Surface.TERMINAL, "inherit_credentials": True}
    )
    if routed:
        write_home(homes["root"], "B", {"OPENAI_API_KEY": value})
        host = make_host({"PATH": "/usr/bin"})
    else:
        host = make_host({"PATH": "/usr/bin", "OPENAI_API_KEY": value})
    trace = Trace()
    with _bound(host, homes, routed):  # type: ignore[attr-defined]
        env = host.build_subprocess_env(trace=trace, **kwargs)  # type: ignore[arg-type]
    assert "OPENAI_API_KEY" not in env
    assert trace.final()["OPENAI_API_KEY"].reason is Reason.VALUE_SHAPE


@pytest.mark.parametrize("padding", ["", "\n", "\r\n", "  "])
@pytest.mark.parametrize("routed", ROUTED, ids=["launch", "routed"])
def test_the_provider_key_alone_still_reaches_a_credentialed_child(
    make_host: HostFactory, homes: dict[str, Path], padding: str, routed: bool
) -> None:
    """The exemption itself: the provider's key as the whole (trimmed) value is kept."""
    value = OPENAI_KEY + padding
    if routed:
        (homes["root"] / "B" / ".env").write_text(f'OPENAI_API_KEY="{value}"\n')
        host = make_host({"PATH": "/usr/bin"})
    else:
        host = make_host({"PATH": "/usr/bin", "OPENAI_API_KEY": value})
    with _bound(host, homes, routed):  # type: ignore[attr-defined]
        env = host.build_subprocess_env(surface=Surface.CREDENTIALED)
    assert env["OPENAI_API_KEY"].strip() == OPENAI_KEY


# -- values compared as consumers read them -------------------------------------------

SECRET = "dashboard-secret-0123456789"
PADS = ["\n", "\r\n", "  ", "\t", " \n"]


@pytest.mark.parametrize("pad", PADS, ids=repr)
@pytest.mark.parametrize("padded", ["secret", "copy"])
@pytest.mark.parametrize("via", ["parent", "extra"])
@pytest.mark.parametrize("surface", NOT_MCP)
@pytest.mark.parametrize("routed", ROUTED, ids=["launch", "routed"])
def test_a_secret_and_its_copy_match_trimmed(
    make_host: HostFactory,
    homes: dict[str, Path],
    pad: str,
    padded: str,
    via: str,
    surface: Surface,
    routed: bool,
) -> None:
    """``DASHBOARD_SECRET="tok\\n"`` and a copy ``tok`` (or the reverse): the copy is stripped."""
    secret = SECRET + pad if padded == "secret" else SECRET
    copy = SECRET + pad if padded == "copy" else SECRET
    parent = {"PATH": "/usr/bin", "DASHBOARD_SECRET": secret}
    extra = None
    if via == "parent":
        parent["COPY"] = copy
    else:
        extra = {"COPY": copy}
    host = make_host(parent)
    with _bound(host, homes, routed):  # type: ignore[attr-defined]
        env = host.build_subprocess_env(surface=surface, extra=extra)
    assert "COPY" not in env
    assert offences(host, {"COPY": copy}, implicit=False) == [
        "COPY (the value of DASHBOARD_SECRET)"
    ]


@pytest.mark.parametrize("pad", PADS, ids=repr)
def test_the_eight_character_floor_applies_to_the_trimmed_value(
    make_host: HostFactory, pad: str
) -> None:
    """A 7-character secret padded past 8 is still short: neither an alias nor a substring."""
    host = make_host({"PATH": "/usr/bin", "DASHBOARD_SECRET": "abc1234" + pad, "S": "xxabc1234xx"})
    assert host.build_subprocess_env()["S"] == "xxabc1234xx"


@pytest.mark.parametrize(
    "key", [" TELEGRAM_BOT_TOKEN", "TELEGRAM_BOT_TOKEN ", "\tTELEGRAM_BOT_TOKEN"]
)
@pytest.mark.parametrize("surface", list(Surface))
def test_a_padded_scope_key_still_declares_its_copies(
    make_host: HostFactory, homes: dict[str, Path], key: str, surface: Surface
) -> None:
    """A routed scope key padded with whitespace is the name it spells: its copies go too."""
    value = "scope-bot-token-0123456789"
    host = make_host()
    with host.routed(homes["B"], scope={key: value, "COPY": value}):
        env = host.build_subprocess_env(surface=surface, passthrough=["COPY"])
    assert value not in env.values()


# -- the guard agrees with the factory, whatever the host's options --------------------


@pytest.mark.parametrize("aliases", [True, False], ids=["aliases-stripped", "aliases-kept"])
@pytest.mark.parametrize("surface", NOT_MCP)
@pytest.mark.parametrize("routed", ROUTED, ids=["launch", "routed"])
def test_every_env_the_factory_built_passes_the_guard(
    make_host: HostFactory, homes: dict[str, Path], aliases: bool, surface: Surface, routed: bool
) -> None:
    """With Host(strip_value_aliases=False) too: a built env is never an offence."""
    bot = "bot-token-value-0123456789"
    parent = {"PATH": "/usr/bin", "TELEGRAM_BOT_TOKEN": bot, "COPY": bot, "HOLDS": f"x{bot}"}
    parent["UNDECLARED_PAT"] = PAT
    host = make_host(parent, strip_value_aliases=aliases)
    with _bound(host, homes, routed):  # type: ignore[attr-defined]
        env = host.build_subprocess_env(surface=surface)
        assert offences(host, env, implicit=False) == []
        assert_no_secrets(env, host=host, inherit_credentials=surface is Surface.CREDENTIALED)
    assert ("COPY" in env) is (not aliases)  # an ambient export, no launch residue
    assert "TELEGRAM_BOT_TOKEN" not in env


# -- a key is never shown past its "=" --------------------------------------------------


@pytest.mark.parametrize("surface", list(Surface))
@pytest.mark.parametrize("routed", ROUTED, ids=["launch", "routed"])
def test_a_parent_key_holding_name_equals_value_is_traced_without_the_value(
    make_host: HostFactory, homes: dict[str, Path], surface: Surface, routed: bool
) -> None:
    """A docker-style ``FOO=value`` key: every decision, note and warning stops at the ``=``."""
    host = make_host(
        {"PATH": "/usr/bin", "FOO=hidden-part-0123": "x", "ENVSCOPE_FINGERPRINT_KEY": "k" * 16}
    )
    with _bound(host, homes, routed):  # type: ignore[attr-defined]
        trace = host.explain(surface=surface)
    shown = repr(list(trace)) + repr(trace.context.warnings)
    assert "hidden-part" not in shown
    if surface is not Surface.MCP:  # the allowlist drops it before any other stage sees it
        assert "FOO=…" in [d.key for d in trace]
