"""Value aliases: a secret copied under another name does not survive."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envscope import (
    FORCE_PREFIX,
    Catalog,
    Host,
    Inherit,
    Reason,
    StaticSource,
    Surface,
    SurfacePolicy,
    Trace,
)
from tests.conftest import HostFactory

SECRET = "sk-live-0123456789abcdef"


@pytest.mark.parametrize(
    ("base", "kwargs", "expected"),
    [
        ({"OPENAI_API_KEY": SECRET, "FOO": SECRET}, {}, {}),
        ({"GH_TOKEN": SECRET, "COPY": SECRET, "OTHER": "x"}, {}, {"OTHER": "x"}),
        ({"OPENAI_API_KEY": SECRET, "FOO": SECRET}, {"surface": Surface.CREDENTIALED},
         {"OPENAI_API_KEY": SECRET, "FOO": SECRET}),
        # a declared name's value is a secret value whatever its shape (a base URL too)
        ({"OPENAI_BASE_URL": "https://api.example.com/v1", "MIRROR": "https://api.example.com/v1"},
         {}, {}),
        ({"OPENAI_BASE_URL": "https://api.example.com/v1", "MIRROR": "https://api.example.com/v1"},
         {"surface": Surface.CREDENTIALED},
         {"OPENAI_BASE_URL": "https://api.example.com/v1", "MIRROR": "https://api.example.com/v1"}),
        ({"OPENAI_API_KEY": "short", "FOO": "short"}, {}, {"FOO": "short"}),
        ({"OPENAI_API_KEY": SECRET}, {"extra": {"FROM_CALLER": SECRET}}, {}),
        ({"OPENAI_API_KEY": SECRET}, {"extra": {f"{FORCE_PREFIX}OPENAI_API_KEY": SECRET}},
         {"OPENAI_API_KEY": SECRET}),
    ],
)  # fmt: skip
def test_alias_table(
    make_host: HostFactory,
    base: dict[str, str],
    kwargs: dict[str, object],
    expected: dict[str, str],
) -> None:
    """A kept key equal to a secret value this child may not get (8+ chars) is stripped."""
    env = make_host().build_subprocess_env(base, **kwargs)  # type: ignore[arg-type]
    assert env == expected


def test_alias_names_the_secret_never_the_value(make_host: HostFactory) -> None:
    """The trace says alias-of and names which secret, by key only."""
    trace = Trace()
    make_host().build_subprocess_env({"TELEGRAM_BOT_TOKEN": SECRET, "BOT": SECRET}, trace=trace)
    decision = trace.final()["BOT"]
    assert decision.reason is Reason.ALIAS_OF
    assert decision.note == "same value as TELEGRAM_BOT_TOKEN"
    assert SECRET not in repr(list(trace))


def test_dotenv_interpolated_alias_is_stripped_when_routed(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """FOO=${OPENAI_API_KEY} in the launch .env, exported again by the operator: gone for B."""
    (homes["A"] / ".env").write_text("A_MARKER=a\nFOO=${OPENAI_API_KEY}\n")
    host = make_host({"PATH": "/b", "OPENAI_API_KEY": SECRET, "OPERATOR_COPY": SECRET})
    host.load_launch_env()
    assert host._environ["FOO"] == SECRET
    with host.routed(homes["B"]):
        env = host.build_subprocess_env(surface=Surface.CREDENTIALED)
    assert SECRET not in env.values()
    assert env["B_MARKER"] == "b"


def test_manifest_secret_without_suffix_counts(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """A name a manifest marks secret (no suffix) is a secret for the alias rule."""
    plugin = homes["B"] / "plugins" / "platforms" / "chatx"
    plugin.mkdir(parents=True)
    (plugin / "plugin.yaml").write_text("requires_env:\n  - {name: CHATX_SIGNING, secret: true}\n")
    host = make_host()
    with host.routed(homes["B"], scope={"CHATX_SIGNING": SECRET, "ALSO": SECRET}) as binding:
        assert host.build_subprocess_env({}) == {"ENVSCOPE_HOME": binding.home}


def test_opt_out(make_host: HostFactory) -> None:
    """strip_value_aliases=False keeps aliases (for the rare host where it over-strips)."""
    host = make_host(strip_value_aliases=False)
    assert host.build_subprocess_env({"OPENAI_API_KEY": SECRET, "FOO": SECRET}) == {"FOO": SECRET}


# -- the alias rule is decided by value, after every filter (issue 10, item 2) --

COPY = "COPY_OF_IT"


def _host_with(
    make_host: HostFactory, homes: dict[str, Path], how: str
) -> tuple[Host, dict[str, object]]:
    """A host whose child would keep ``COPY_OF_IT`` (= a Tier 1 value) by ``how``; build kwargs."""
    environ = {"PATH": "/b", "GITHUB_TOKEN": SECRET}
    kwargs: dict[str, object] = {}
    host_kwargs: dict[str, object] = {}
    if how == "base":
        environ[COPY] = SECRET
    elif how == "passthrough":
        environ[COPY] = SECRET
        kwargs["passthrough"] = [COPY]
    elif how == "mcp-passthrough":
        environ[COPY] = SECRET
        kwargs.update(passthrough=[COPY], surface=Surface.MCP)
    elif how == "mcp-extra":
        kwargs.update(extra={COPY: SECRET}, surface=Surface.MCP)
    elif how == "extra":
        kwargs["extra"] = {COPY: SECRET}
    elif how == "include":
        environ[COPY] = SECRET
        policy = SurfacePolicy(inherit=Inherit.NONE, include=(COPY,))
        host_kwargs["surface_policies"] = {Surface.SCRIPT: policy}
        kwargs["surface"] = Surface.SCRIPT
    elif how == "surface-set":
        policy = SurfacePolicy(set_env={COPY: SECRET})
        host_kwargs["surface_policies"] = {Surface.SCRIPT: policy}
        kwargs["surface"] = Surface.SCRIPT
    elif how == "popped-after-load":
        (homes["A"] / ".env").write_text(f"GITHUB_TOKEN={SECRET}\n{COPY}=${{GITHUB_TOKEN}}\n")
        del environ["GITHUB_TOKEN"]
    elif how == "mcp-supplied":
        environ[COPY] = SECRET
        kwargs["surface"] = Surface.MCP
    host = make_host(environ, **host_kwargs)
    if how == "mcp-supplied":
        host.add_secret_source(StaticSource("vault", {str(homes["A"]): {COPY: SECRET}}))
    host.load_launch_env()
    if how == "popped-after-load":
        assert host._environ.pop("GITHUB_TOKEN") == SECRET  # the host's own hardening
    return host, kwargs


KEEP_PATHS = [
    "base",
    "passthrough",
    "mcp-passthrough",
    "mcp-extra",
    "extra",
    "include",
    "surface-set",
    "popped-after-load",
    "mcp-supplied",
]


@pytest.mark.parametrize("routed", [False, True], ids=["launch", "routed"])
@pytest.mark.parametrize("how", KEEP_PATHS)
def test_copy_of_a_secret_never_survives_whatever_kept_it(
    make_host: HostFactory, homes: dict[str, Path], how: str, routed: bool
) -> None:
    """Whatever path keeps a copy (allowlist, include, passthrough, set, popped): it is stripped."""
    host, kwargs = _host_with(make_host, homes, how)
    trace = Trace()
    if routed:
        with host.routed(homes["B"]):
            env = host.build_subprocess_env(trace=trace, **kwargs)  # type: ignore[arg-type]
    else:
        env = host.build_subprocess_env(trace=trace, **kwargs)  # type: ignore[arg-type]
    assert SECRET not in env.values(), how
    assert COPY not in env
    untraced = host.build_subprocess_env(**kwargs)  # type: ignore[arg-type]
    assert SECRET not in untraced.values()


def test_launch_key_under_another_name_never_reaches_a_routed_credentialed_child(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """(c) B has its own OPENAI_API_KEY: the launch value under another name is still stripped."""
    launch_value = "sk-launch-aaaaaaaaaaaaaaaa"
    host = make_host({"PATH": "/b", "OPENAI_API_KEY": launch_value, "MY_COPY": launch_value})
    host.load_launch_env()
    with host.routed(homes["B"], scope={"OPENAI_API_KEY": "sk-b-own-bbbbbbbbbbbbbbbb"}):
        env = host.build_subprocess_env(surface=Surface.CREDENTIALED)
    assert env["OPENAI_API_KEY"] == "sk-b-own-bbbbbbbbbbbbbbbb"
    assert launch_value not in env.values()


def test_a_value_the_child_holds_under_its_declared_name_is_its_own(
    make_host: HostFactory,
) -> None:
    """A credentialed child keeps its key and a copy of it: the value is legitimately its own."""
    env = make_host({"OPENAI_API_KEY": SECRET, "ALSO": SECRET}).build_subprocess_env(
        surface=Surface.CREDENTIALED
    )
    assert env == {"OPENAI_API_KEY": SECRET, "ALSO": SECRET}


secret_text = st.text(alphabet="abcdefghijklmnop0123456789", min_size=8, max_size=16)


@settings(max_examples=60, deadline=None)
@given(
    launch=st.dictionaries(
        st.sampled_from(["OPENAI_API_KEY", "TELEGRAM_BOT_TOKEN", "GITHUB_TOKEN"]),
        secret_text,
        min_size=1,
    ),
    guesses=st.lists(secret_text, max_size=4),
    pick=st.integers(min_value=0, max_value=5),
)
def test_own_scope_values_are_no_oracle_and_launch_values_never_leak(
    tmp_path_factory: pytest.TempPathFactory,
    launch: dict[str, str],
    guesses: list[str],
    pick: int,
) -> None:
    """(c)+(d): B's own keys arrive whatever the launch secrets are; no launch secret leaks."""
    root = tmp_path_factory.mktemp("oracle")
    a, b = root / "A", root / "B"
    a.mkdir()
    b.mkdir()
    values = list(launch.values())
    own = {f"GUESS_{i}": g for i, g in enumerate(guesses)}
    own["GUESS_HIT"] = values[pick % len(values)]  # one guess equals a launch secret
    children = []
    for secrets in (launch, {k: v[::-1] + "zz" for k, v in launch.items()}):
        environ = {"PATH": "/b", **secrets, "OPERATOR_COPY": next(iter(secrets.values()))}
        host = Host(a, environ=environ, catalog=Catalog.default())
        host.load_launch_env()
        with host.routed(b, scope=own):
            env = host.build_subprocess_env(surface=Surface.CREDENTIALED)
        for key, value in env.items():
            if value in secrets.values():
                assert own.get(key) == value, f"launch secret leaked as {key}"
        children.append({k: v for k, v in env.items() if k in own})
    assert children[0] == children[1] == own  # the same own keys, whatever the launch holds


def test_own_case_twins_are_no_oracle_on_posix(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """On POSIX both spellings of B's own name arrive, whichever equals a launch secret."""
    host = make_host({"PATH": "/b", "TELEGRAM_BOT_TOKEN": SECRET}, windows=False)
    host.load_launch_env()
    for scope in (
        {"guess": SECRET, "GUESS": "other-value-1"},
        {"guess": "other-1", "GUESS": SECRET},
    ):
        with host.routed(homes["B"], scope=scope):
            env = host.build_subprocess_env()
        assert {k: env[k] for k in scope} == scope


def _examples() -> list[str]:
    from envscope.policy.formats import format_table

    return [f.example for f in format_table().formats]


@settings(max_examples=200)
@given(
    items=st.lists(
        st.tuples(
            st.sampled_from(["OPENAI_API_KEY", "MY_THING", "GITHUB_TOKEN", "NOTE", "LANG"]),
            st.one_of(
                st.sampled_from([SECRET, "plain-value", "short", "x"]),
                st.sampled_from(_examples()),
                st.builds(
                    lambda a, b, c: a + b + c,
                    st.sampled_from(["", "Bearer ", "https://h/", "a:", "'"]),
                    st.sampled_from([SECRET, *_examples()[:20], "ordinary"]),
                    st.sampled_from(["", "'", "@h", ":b", "\n"]),
                ),
            ),
        ),
        max_size=8,
    ),
    inherit=st.booleans(),
)
def test_find_in_equals_secret_in_value_by_value(
    items: list[tuple[str, str]], inherit: bool
) -> None:
    """The one-pass search over a build's values finds exactly what asking value by value finds."""
    from envscope import Catalog
    from envscope.pipeline.secret_rule import SecretRule
    from envscope.policy._secret_policy import build_policy
    from envscope.policy.formats import format_table

    rule = SecretRule(
        build_policy(Catalog.default()),
        inherit_credentials=inherit,
        launch_values=({"OPENAI_API_KEY": SECRET, "GITHUB_TOKEN": "ghp_fake-host-token-0001"},),
        formats=format_table(),
    )
    assert rule.find_in(items) == [rule.secret_in(k, v) for k, v in items]
