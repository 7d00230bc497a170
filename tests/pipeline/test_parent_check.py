"""A build's parent envs are checked when it runs: a memo hit never skips a bad entry."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envscope import Catalog, Host, Surface
from envscope.errors import ConfigurationError
from tests.conftest import HostFactory

SECRET = "hunter2-never-shown-value"
GOOD = {"PATH": "/usr/bin", "HOME": "/home/op", "LANG": "C.UTF-8"}

# an entry no child env can carry: (label, key, value)
BAD: list[tuple[str, object, object]] = [
    ("a number value", "COUNT", 3),
    ("a None value", "NOTHING", None),
    ("a bytes name", b"RAW", "1"),
    ("a bytes value", "RAW", b"1"),
    ("surrogate value", "TEXT", f"{SECRET}\ud800"),
    ("surrogate name", "TEXT\ud800", "1"),
]
# how the memo stands when the bad env arrives
WARMTH = ["cold", "warm-same-keys", "warm-good-env"]


def _bad_env(key: object, value: object) -> dict[str, str]:
    return {**GOOD, key: value}  # type: ignore[dict-item]


@pytest.mark.parametrize("routed", [False, True], ids=["launch", "routed"])
@pytest.mark.parametrize("surface", [Surface.TERMINAL, Surface.MCP, Surface.CREDENTIALED])
@pytest.mark.parametrize("warmth", WARMTH)
@pytest.mark.parametrize("where", ["base", "environ"])
@pytest.mark.parametrize(("label", "key", "value"), BAD, ids=[b[0] for b in BAD])
def test_bad_parent_entry_raises_however_warm_the_memo(
    make_host: HostFactory,
    homes: dict[str, Path],
    label: str,
    key: object,
    value: object,
    where: str,
    warmth: str,
    surface: Surface,
    routed: bool,
) -> None:
    """A bad name or value in base or environ is a ConfigurationError on a cold or warm memo."""
    bad = _bad_env(key, value)
    environ = dict(GOOD)
    host = make_host(environ)
    bound = host.routed(homes["B"]) if routed else contextlib.nullcontext()
    with bound:
        if warmth != "cold":  # valid builds of the same shape first
            warm_env = dict(GOOD) if warmth == "warm-good-env" else {**GOOD, "COUNT": "3"}
            environ.update(warm_env)
            for _ in range(2):
                host.build_subprocess_env(warm_env if where == "base" else None, surface=surface)
        if where == "environ":
            environ.clear()
            environ.update(bad)
        with pytest.raises(ConfigurationError) as info:
            host.build_subprocess_env(bad if where == "base" else None, surface=surface)
    message = str(info.value)
    assert (where if where == "base" else "environ") in message
    assert SECRET not in message


@pytest.mark.parametrize("where", ["base", "environ"])
def test_scrub_false_checks_the_parent_envs(make_host: HostFactory, where: str) -> None:
    """``scrub=False`` builds no memo entry and still refuses a bad parent entry."""
    bad = _bad_env("COUNT", 3)
    host = make_host(dict(GOOD) if where == "base" else bad)
    with pytest.raises(ConfigurationError, match=where):
        host.build_subprocess_env(bad if where == "base" else None, scrub=False)


_VALUES = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=6),
    st.sampled_from([3, None, b"x", "v\ud800"]),
)
_ENVS = st.dictionaries(st.sampled_from(["A", "B", "PATH", "TOKEN"]), _VALUES, max_size=4)


@pytest.mark.property
@settings(deadline=None)
@given(envs=st.lists(_ENVS, min_size=1, max_size=6))
def test_memoised_host_agrees_with_a_fresh_host(
    tmp_path_factory: pytest.TempPathFactory, envs: list[dict[str, str]]
) -> None:
    """Over any sequence of parent envs, a warm host raises or builds exactly as a fresh one."""
    root = tmp_path_factory.mktemp("parents")
    warm = Host(root, catalog=Catalog.default(), environ=dict(GOOD))
    for env in envs:
        fresh = Host(root, catalog=Catalog.default(), environ=dict(GOOD))
        outcomes: list[object] = []
        for host in (warm, fresh):
            try:
                outcomes.append(host.build_subprocess_env(env))
            except ConfigurationError as error:
                outcomes.append(type(error))
        assert outcomes[0] == outcomes[1]
