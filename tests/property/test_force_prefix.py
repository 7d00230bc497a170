"""No force-prefixed key reaches a child, whatever put it in, in any case or nesting."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envscope import (
    FORCE_PREFIX,
    Catalog,
    ConfigurationError,
    Host,
    PassthroughRefusedError,
    StaticSource,
    Surface,
    SurfacePolicy,
)

pytestmark = pytest.mark.property


def spellings(prefix: str) -> st.SearchStrategy[str]:
    """The prefix in any mix of cases."""
    return st.tuples(*(st.sampled_from([c.lower(), c.upper()]) for c in prefix)).map("".join)


names = st.sampled_from(["X", "OPENAI_BASE_URL", "TELEGRAM_BOT_TOKEN", "MY_VAR", "PATH", ""])
forced = st.builds(
    lambda prefixes, name: "".join(prefixes) + name,
    st.lists(spellings(FORCE_PREFIX), min_size=1, max_size=3),
    names,
)
block = st.dictionaries(forced, st.just("forced-value-123"), max_size=3)


@given(
    base=block,
    extra=block,
    scope=block,
    set_env=block,
    supplied=block,
    passthrough=st.lists(forced, max_size=2),
    surface=st.sampled_from(list(Surface)),
    routed=st.booleans(),
)
def test_no_force_prefixed_key_reaches_a_child(
    tmp_path_factory: pytest.TempPathFactory,
    base: dict[str, str],
    extra: dict[str, str],
    scope: dict[str, str],
    set_env: dict[str, str],
    supplied: dict[str, str],
    passthrough: list[str],
    surface: Surface,
    routed: bool,
) -> None:
    """Base, extra, scope, a surface set, a source, passthrough: no key keeps the prefix."""
    root = tmp_path_factory.mktemp("force")
    a, b = root / "A", root / "B"
    a.mkdir()
    b.mkdir()
    policies: dict[Surface | str, SurfacePolicy] = {
        s: SurfacePolicy(set_env=set_env) for s in Surface if s is not Surface.MCP
    }
    host = Host(
        a,
        environ={"PATH": "/b", **base},
        catalog=Catalog.default(),
        surface_policies=policies,
        allow_injection=(),
    )
    host.add_secret_source(StaticSource("vault", {"*": supplied}))
    host.load_launch_env()
    # Loud refusals reach no child: a forced passthrough name, a forced key in an MCP block.
    loud: tuple[type[Exception], ...] = (PassthroughRefusedError,)
    if surface is Surface.MCP and extra:
        loud = (PassthroughRefusedError, ConfigurationError)
    try:
        if routed:
            with host.routed(b, scope=scope):
                env = host.build_subprocess_env(
                    surface=surface, extra=extra, passthrough=passthrough
                )
        else:
            env = host.build_subprocess_env(surface=surface, extra=extra, passthrough=passthrough)
    except loud:
        assert passthrough or (surface is Surface.MCP and extra)
        return
    assert not [k for k in env if k.upper().startswith(FORCE_PREFIX)]


def test_a_nested_force_key_is_refused_and_recorded(tmp_path: Path) -> None:
    """``_ENVSCOPE_FORCE__ENVSCOPE_FORCE_X`` leaves neither X nor the inner key."""
    host = Host(tmp_path, environ={}, catalog=Catalog.default())
    env = host.build_subprocess_env(extra={f"{FORCE_PREFIX}{FORCE_PREFIX}X": "v"})
    assert env == {}
    trace = host.explain({}, extra={f"{FORCE_PREFIX}{FORCE_PREFIX}X": "v"})
    assert any(d.key == f"{FORCE_PREFIX}X" and d.action.value == "refused" for d in trace)
