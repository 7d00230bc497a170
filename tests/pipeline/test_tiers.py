"""Tiers on the default (terminal) surface, extras, force prefix, opt-out."""

from __future__ import annotations

import pytest

from envscope import FORCE_PREFIX, Action, Catalog, EnvValueError, Reason, Surface, Tier, Trace
from tests.conftest import HostFactory, fake_env

CATALOG = Catalog.default()
TIER1 = sorted(k for k, d in CATALOG.names.items() if d.tier is Tier.TIER1)
TIER2 = sorted(k for k, d in CATALOG.names.items() if d.tier is Tier.TIER2)
OPERATOR = {"PATH": "/usr/bin", "MY_TOOL_FLAG": "1"}


def test_catalog_is_not_trivially_small() -> None:
    """The default catalog declares a real set of Tier 1 and Tier 2 names."""
    assert len(TIER1) >= 40
    assert len(TIER2) >= 24
    for name in ("TELEGRAM_BOT_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "DISCORD_BOT_TOKEN"):
        assert name in TIER1
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "MISTRAL_API_KEY"):
        assert name in TIER2


def test_every_declared_name_is_stripped_and_inputs_untouched(make_host: HostFactory) -> None:
    """No catalog Tier 1/2 name reaches a terminal child; base and environ are unchanged."""
    base = {**OPERATOR, **fake_env(TIER1 + TIER2)}
    environ = dict(base)
    host = make_host(environ)
    before_base, before_env = dict(base), dict(environ)
    env = host.build_subprocess_env(base)
    assert env == OPERATOR
    assert base == before_base
    assert environ == before_env
    assert host.build_subprocess_env() == OPERATOR  # base=None snapshots environ
    assert environ == before_env


@pytest.mark.parametrize(
    "name",
    [
        "MY_APP_KEY",
        "DEPLOY_WEBHOOK_SECRET",
        "SLACK_USER_TOKEN",
        "LOCAL_LLM_API_KEY",
        "GATEWAY_API_KEY",
    ],
)
def test_operator_look_alikes_pass(make_host: HostFactory, name: str) -> None:
    """Operator names that merely look like secrets pass unchanged."""
    env = make_host().build_subprocess_env({name: "v", "PATH": "/bin"})
    assert env == {name: "v", "PATH": "/bin"}


@pytest.mark.parametrize(
    "name", ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"]
)
def test_aws_credential_chain_passes(make_host: HostFactory, name: str) -> None:
    """The general AWS credential chain is not declared by the default catalog."""
    assert make_host().build_subprocess_env({name: "v"}) == {name: "v"}


@pytest.mark.parametrize(
    ("kwargs", "label"),
    [({"inherit_credentials": True}, "flag"), ({"surface": Surface.CREDENTIALED}, "surface")],
)
def test_credentialed_keeps_tier2_strips_tier1(
    make_host: HostFactory, kwargs: dict[str, object], label: str
) -> None:
    """Inheriting credentials keeps Tier 2 provider keys; Tier 1 is still stripped."""
    base = {**fake_env(TIER1 + TIER2), "PATH": "/bin"}
    env = make_host().build_subprocess_env(base, **kwargs)  # type: ignore[arg-type]
    assert env["OPENAI_API_KEY"] == "fake-OPENAI_API_KEY", label
    assert env["ANTHROPIC_API_KEY"] == "fake-ANTHROPIC_API_KEY"
    assert set(env) == {*TIER2, "PATH"}


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("AUXILIARY_VISION_API_KEY", False),
        ("AUXILIARY_VISION_BASE_URL", False),
        ("GATEWAY_RELAY_SECRET", False),
        ("GATEWAY_RELAY_EU_TOKEN", False),
        ("AUXILIARY_VISION_MODEL", True),
        ("GATEWAY_RELAY_URL", True),
    ],
)
def test_pattern_rules(make_host: HostFactory, name: str, kept: bool) -> None:
    """Pattern rules strip dynamic names and keep their harmless neighbours."""
    env = make_host().build_subprocess_env({name: "v"})
    assert (name in env) is kept


@pytest.mark.parametrize(
    "name", ["openai_api_key", "Telegram_Bot_Token", "gh_token", "Auxiliary_x_Api_Key"]
)
def test_matching_is_case_insensitive(make_host: HostFactory, name: str) -> None:
    """Declared names are matched in any case."""
    assert make_host().build_subprocess_env({name: "v", "KEEP": "1"}) == {"KEEP": "1"}


TWINS = {"Foo": "1", "FOO": "2", "foo": "3", "bar": "x", "Bar": "y"}


def test_windows_output_never_holds_case_twins(make_host: HostFactory) -> None:
    """On Windows, keys equal ignoring case collapse to one (the upper-case spelling wins)."""
    env = make_host(windows=True).build_subprocess_env(TWINS)
    assert env == {"FOO": "2", "bar": "x"}
    assert len({k.upper() for k in env}) == len(env)


@pytest.mark.parametrize("windows", [False, True])
def test_proxy_case_twins(make_host: HostFactory, windows: bool) -> None:
    """POSIX keeps http_proxy and HTTP_PROXY both; Windows keeps one."""
    base = {"http_proxy": "http://lower:3128", "HTTP_PROXY": "http://upper:3128"}
    env = make_host(windows=windows).build_subprocess_env({**base, "PATH": "/b"})
    assert env == ({"HTTP_PROXY": "http://upper:3128"} if windows else base) | {"PATH": "/b"}


@pytest.mark.parametrize("windows", [False, True])
def test_posix_keeps_undeclared_case_twins(make_host: HostFactory, windows: bool) -> None:
    """On POSIX every undeclared twin survives as spelled, declared ones never."""
    base = {**TWINS, "openai_api_key": "a", "OPENAI_API_KEY": "b", "Telegram_Bot_Token": "c"}
    env = make_host(windows=windows).build_subprocess_env(base)
    assert env == ({"FOO": "2", "bar": "x"} if windows else TWINS)


def test_caller_extra_reaches_child_but_declared_extra_does_not(make_host: HostFactory) -> None:
    """An undeclared extra reaches the child; a declared one is stripped after merging."""
    env = make_host(drop_refused_extra=True).build_subprocess_env(
        {}, extra={"MY_CUSTOM_VAR": "caller-value", "OPENAI_BASE_URL": "x"}
    )
    assert env == {"MY_CUSTOM_VAR": "caller-value"}


# (the name in extra, the surface, the grant, how the build answers: None = it is kept)
REFUSED_EXTRAS = [
    ("TELEGRAM_BOT_TOKEN", Surface.TERMINAL, (), "Tier 1"),
    ("TELEGRAM_BOT_TOKEN", Surface.CREDENTIALED, (), "Tier 1"),
    ("telegram_bot_token", Surface.SCRIPT, (), "Tier 1"),
    ("OPENAI_API_KEY", Surface.TERMINAL, (), "Tier 2"),
    ("OPENAI_API_KEY", Surface.WORKER, (), "Tier 2"),
    ("OPENAI_API_KEY", Surface.TERMINAL, ("OPENAI_API_KEY",), None),
    ("OPENAI_API_KEY", Surface.CREDENTIALED, (), None),
    ("MY_CUSTOM_VAR", Surface.TERMINAL, (), None),
]


@pytest.mark.parametrize(("name", "surface", "grant", "tier"), REFUSED_EXTRAS)
def test_a_declared_name_in_extra_is_a_loud_error(
    make_host: HostFactory, name: str, surface: Surface, grant: tuple[str, ...], tier: str | None
) -> None:
    """A name the build would drop for want of a grant is an EnvValueError naming key and fix.

    ``drop_refused_extra=True`` drops it instead, with the trace's reason.
    """
    value = "caller-value-0000000001"
    kwargs = {"surface": surface, "extra": {name: value}, "grant": list(grant)}
    if tier is None:
        assert make_host().build_subprocess_env({}, **kwargs)[name] == value  # type: ignore[arg-type]
        return
    with pytest.raises(EnvValueError) as info:
        make_host().build_subprocess_env({}, **kwargs)  # type: ignore[arg-type]
    assert info.value.key == name
    assert tier in str(info.value)
    assert f"grant=[{name!r}]" in str(info.value)
    assert ("inherit_credentials" in str(info.value)) is (tier == "Tier 2")
    assert value not in str(info.value)
    trace = Trace()
    dropped = make_host(drop_refused_extra=True).build_subprocess_env(
        {},
        trace=trace,
        **kwargs,  # type: ignore[arg-type]
    )
    assert name not in dropped
    assert trace.for_key(name)[-1].reason in (Reason.TIER1, Reason.TIER2)


@pytest.mark.parametrize(
    ("base", "extra", "expected"),
    [
        ({}, {f"{FORCE_PREFIX}OPENAI_BASE_URL": "v"}, {"OPENAI_BASE_URL": "v"}),
        ({}, {f"{FORCE_PREFIX}TELEGRAM_BOT_TOKEN": "v"}, {}),
        ({"TELEGRAM_BOT_TOKEN": "t"}, {f"{FORCE_PREFIX}TELEGRAM_BOT_TOKEN": "v"}, {}),
        ({f"{FORCE_PREFIX}OPENAI_BASE_URL": "v"}, {}, {}),
        ({f"{FORCE_PREFIX.lower()}openai_base_url": "v"}, {}, {}),
        ({}, {f"{FORCE_PREFIX}MY_VAR": "v"}, {"MY_VAR": "v"}),
        ({}, {FORCE_PREFIX: "v"}, {}),
    ],
)
def test_force_prefix(
    make_host: HostFactory, base: dict[str, str], extra: dict[str, str], expected: dict[str, str]
) -> None:
    """The force prefix unwraps caller extras, never to Tier 1, never from the base."""
    env = make_host().build_subprocess_env(base, extra=extra)
    assert env == expected
    assert not any(k.upper().startswith(FORCE_PREFIX) for k in env)


def test_scrub_false_returns_base_plus_extras(make_host: HostFactory) -> None:
    """scrub=False gives the base byte for byte plus extras, minus force-prefixed keys."""
    base = {"TELEGRAM_BOT_TOKEN": "t", "openai_api_key": "k", f"{FORCE_PREFIX}X": "f", "PATH": "/b"}
    trace = Trace()
    extra = {"E": "1", f"{FORCE_PREFIX.lower()}Y": "g"}
    env = make_host().build_subprocess_env(base, extra=extra, scrub=False, trace=trace)
    assert env == {"TELEGRAM_BOT_TOKEN": "t", "openai_api_key": "k", "PATH": "/b", "E": "1"}
    assert env is not base
    final = trace.final()
    assert final["TELEGRAM_BOT_TOKEN"].reason is Reason.UNSCRUBBED
    assert final[f"{FORCE_PREFIX}X"].action is Action.STRIPPED
    assert final[f"{FORCE_PREFIX.lower()}Y"].reason is Reason.FORCE_PREFIX_IN_BASE
