"""A verdict rests on every secret a value holds: none rides beside one an exemption keeps.

Values are built from pieces (secrets of each grade, a credential format, a
filler) in every order and with every separator, handed over through each
layer that carries an exemption (forced, granted, a credentialed child's
provider key, routed B's own value). The child holds the value exactly when
every secret in it is covered; the runtime guard and ``envscope.testing``
agree with the factory on every case.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from envscope import FORCE_PREFIX, PassthroughRefusedError, StaticSource, Surface
from envscope._guard import offences
from envscope.host import Host
from envscope.policy.formats import CredentialFormat, format_table
from envscope.testing import assert_no_secrets
from tests.conftest import HostFactory


def _example(pick: Callable[[CredentialFormat], bool]) -> str:
    return next(f.example for f in format_table().formats if pick(f))


TIER1 = "dashboard-secret-tier1-0001"  # TELEGRAM_BOT_TOKEN: Tier 1
TIER2 = "openai-key-tier2-value-0002"  # OPENAI_API_KEY: Tier 2 (no format)
SOURCE = "vault-credential-0003"  # VAULT_TOKEN: a secret source's credential
PAT = _example(lambda f: f.name == "github-classic-pat")  # undeclared, a format
OPENAI_FORMAT = _example(lambda f: f.provider == "openai")
FILLER = "plain-filler-text"
PARENT = {
    "PATH": "/usr/bin",
    "TELEGRAM_BOT_TOKEN": TIER1,
    "OPENAI_API_KEY": TIER2,
    "VAULT_TOKEN": SOURCE,
}
SEPARATORS = [":", " ", ",", "\n", "", "@"]


def _host(make_host: HostFactory, parent: dict[str, str] | None = None) -> Host:
    host = make_host(dict(PARENT if parent is None else parent))
    host.add_secret_source(StaticSource("vault", {}, credential_names=["VAULT_TOKEN"]))
    return host


def _agree(host: Host, env: dict[str, str], surface: Surface) -> None:
    """The guard and envscope.testing accept what the factory built."""
    assert offences(host, env, implicit=False) == []
    assert_no_secrets(env, host=host, inherit_credentials=surface is Surface.CREDENTIALED)


# (what rides beside the covered secret, whether the value may reach the child)
FORCED_TIER2 = [
    ([TIER2], True),
    ([TIER2, FILLER], True),
    ([TIER2, TIER1], False),
    ([TIER1, TIER2], False),
    ([TIER2, PAT], False),
    ([PAT, TIER2], False),
    ([TIER2, SOURCE], False),
]


@pytest.mark.parametrize(("pieces", "kept"), FORCED_TIER2)
@pytest.mark.parametrize("sep", SEPARATORS, ids=repr)
@pytest.mark.parametrize("surface", [Surface.TERMINAL, Surface.SCRIPT, Surface.WORKER])
def test_a_forced_tier2_key_never_carries_a_second_secret(
    make_host: HostFactory, pieces: list[str], kept: bool, sep: str, surface: Surface
) -> None:
    """Forcing OPENAI_API_KEY keeps the Tier 2 key alone; any other secret beside it is withheld."""
    if PAT in pieces and not sep:
        kept = True  # glued into one token run, the PAT is no longer of its format
    host = _host(make_host)
    value = sep.join(pieces)
    env = host.build_subprocess_env(
        {"PATH": "/usr/bin"}, surface=surface, extra={f"{FORCE_PREFIX}OPENAI_API_KEY": value}
    )
    assert ("OPENAI_API_KEY" in env) is kept
    for secret in (TIER1, SOURCE):
        assert not any(secret in v for v in env.values())
    _agree(host, env, Surface.CREDENTIALED)  # a forced hand-over is a credential's


@pytest.mark.parametrize("sep", [s for s in SEPARATORS if s], ids=repr)  # formats need a boundary
@pytest.mark.parametrize("order", ["provider-first", "other-first"])
def test_a_credentialed_childs_provider_key_keeps_nothing_beside_it(
    make_host: HostFactory, sep: str, order: str
) -> None:
    """OPENAI_API_KEY = "<openai key><sep><PAT>" on a credentialed child: withheld (PAT beside)."""
    pieces = [OPENAI_FORMAT, PAT] if order == "provider-first" else [PAT, OPENAI_FORMAT]
    host = _host(make_host, {"PATH": "/usr/bin"})
    surface = Surface.CREDENTIALED
    alone = host.build_subprocess_env({"OPENAI_API_KEY": OPENAI_FORMAT}, surface=surface)
    assert alone["OPENAI_API_KEY"] == OPENAI_FORMAT  # the provider's key, whole: kept
    env = host.build_subprocess_env({"OPENAI_API_KEY": sep.join(pieces)}, surface=surface)
    assert "OPENAI_API_KEY" not in env
    _agree(host, env, surface)


@pytest.mark.parametrize("sep", SEPARATORS, ids=repr)
@pytest.mark.parametrize("first", [True, False], ids=["token-first", "source-first"])
def test_a_grant_never_passes_a_source_credential_beside_a_token(
    make_host: HostFactory, sep: str, first: bool
) -> None:
    """A granted value holding a Tier 1 token and a (shorter) vault credential is refused."""
    host = _host(make_host)
    pieces = [TIER1, SOURCE] if first else [SOURCE, TIER1]
    with pytest.raises(PassthroughRefusedError, match="secret source"):
        host.build_subprocess_env(extra={"TOOL_KEY": sep.join(pieces)}, grant=["TOOL_KEY"])
    env = host.build_subprocess_env(extra={"TOOL_KEY": TIER1}, grant=["TOOL_KEY"])
    assert env["TOOL_KEY"] == TIER1  # a grant alone covers the token


@pytest.mark.parametrize("sep", SEPARATORS, ids=repr)
@pytest.mark.parametrize("order", ["own-first", "launch-first"])
def test_routed_b_own_key_never_carries_the_launch_key(
    make_host: HostFactory, homes: dict[str, Path], sep: str, order: str
) -> None:
    """Under routed(B), forcing B's own OPENAI key beside the launch profile's: never delivered."""
    b_key = "b-own-openai-key-value-0004"
    host = _host(make_host)
    pieces = [b_key, TIER2] if order == "own-first" else [TIER2, b_key]
    forced = {f"{FORCE_PREFIX}OPENAI_API_KEY": sep.join(pieces)}
    with host.routed(homes["B"], scope={"OPENAI_API_KEY": b_key}):
        env = host.build_subprocess_env(surface=Surface.CREDENTIALED, extra=forced)
        assert not any(TIER2 in v for v in env.values())
        assert env.get("OPENAI_API_KEY") in (None, b_key)
        assert_no_secrets(env, host=host, inherit_credentials=True)


@pytest.mark.parametrize(
    "pieces",
    [list(p) for n in (1, 2, 3) for p in itertools.permutations([TIER1, TIER2, PAT, FILLER], n)],
    ids=lambda p: "+".join(x[:6] for x in p),
)
def test_a_plain_value_reaches_a_child_only_without_any_secret(
    make_host: HostFactory, pieces: list[str]
) -> None:
    """Any pieces under an undeclared name of the parent: kept only when none is a secret."""
    host = _host(make_host)
    env = host.build_subprocess_env({"PATH": "/usr/bin", "CARRIER": " ".join(pieces)})
    assert ("CARRIER" in env) is (pieces == [FILLER])
    _agree(host, env, Surface.TERMINAL)


# a stricter secret inside a less strict declared value: (OPENAI_API_KEY's value, inner)
NESTED = {
    "tier1-inside-tier2": lambda sep: f"prefix{sep}{TIER1}{sep}suffix",
    "source-inside-tier2": lambda sep: f"prefix{sep}{SOURCE}{sep}suffix",
    "format-inside-tier2": lambda sep: f"prefix{sep}{PAT}{sep}suffix",
}


@pytest.mark.parametrize("nested", sorted(NESTED))
@pytest.mark.parametrize("sep", [s for s in SEPARATORS if s], ids=repr)
@pytest.mark.parametrize("forced_as", ["OPENAI_API_KEY", "NOTE"])
def test_a_stricter_secret_inside_a_forced_credential_is_withheld(
    make_host: HostFactory, nested: str, sep: str, forced_as: str
) -> None:
    """The Tier 2 key's own value holds a Tier 1 value, a source credential or a format:
    forcing that value (under its name or another) does not carry the inner secret."""
    value = NESTED[nested](sep)
    host = _host(make_host, {**PARENT, "OPENAI_API_KEY": value})
    env = host.build_subprocess_env(extra={f"{FORCE_PREFIX}{forced_as}": value})
    assert forced_as not in env
    assert not any(value in v for v in env.values())
    _agree(host, env, Surface.CREDENTIALED)


@pytest.mark.parametrize("routed", [False, True], ids=["launch", "routed"])
@pytest.mark.parametrize("wrap", ["{}", "x:{}@h", "Bearer {}", "{} tail"])
def test_forcing_a_value_holding_the_launch_credential_under_another_name(
    make_host: HostFactory, homes: dict[str, Path], routed: bool, wrap: str
) -> None:
    """Routed, a value holding the launch process's Tier 2 key never reaches B by forcing;
    unrouted, the key is this home's own credential and forcing hands it over."""
    host = _host(make_host)
    value = wrap.format(TIER2)
    extra = {f"{FORCE_PREFIX}NOTE": value}
    if routed:
        with host.routed(homes["B"]):
            env = host.build_subprocess_env(extra=extra)
            assert offences(host, env, implicit=False) == []
    else:
        env = host.build_subprocess_env(extra=extra)
    assert (env.get("NOTE") == value) is not routed
    if routed:
        assert not any(TIER2 in v for v in env.values())
