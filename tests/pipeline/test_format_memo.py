"""The memo owner's clean values: a build searches only the values its last build did not
find clean of credential formats, and decides exactly what a full search decides.

Counts, never times: ``searched`` records every string the format table searches.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import pytest

from envscope import Surface
from envscope.pipeline._memo import CleanValues, FormatMemo
from envscope.pipeline.secret_rule import SecretMatch
from envscope.policy import formats
from envscope.policy.formats import CredentialFormat, FormatTable, format_table, reset_table
from tests._format_rules import BuildView
from tests.conftest import HostFactory


def _example(pick: Callable[[CredentialFormat], bool]) -> str:
    return next(f.example for f in format_table().formats if pick(f))


GITHUB = _example(lambda f: f.name == "github-classic-pat")
OPENAI = _example(lambda f: f.provider == "openai")
CLEAN = {f"SETTING_{i}": f"an-ordinary-value-{i:03d}" for i in range(20)}
PLAIN = {"PATH": "/usr/bin", "HOME": "/home/op", "LANG": "C.UTF-8", **CLEAN}


@pytest.fixture
def searched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every string the format table searches, in order (a wrapper round ``FormatTable.find``)."""
    seen: list[str] = []
    real = FormatTable.find

    def counting(self: FormatTable, value: str) -> CredentialFormat | None:
        seen.append(value)
        return real(self, value)

    monkeypatch.setattr(FormatTable, "find", counting)
    return seen


@pytest.fixture
def own_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache of the table for this test alone: its ``reset_table()`` leaves the shared one be."""
    monkeypatch.setattr(formats, "format_table", functools.cache(formats.format_table.__wrapped__))


def _rule(
    owner: FormatMemo | None,
    *,
    inherit: bool = False,
    known_safe: frozenset[str] = frozenset(),
    launch: dict[str, str] | None = None,
) -> BuildView:
    """A rule over the default policy, with ``owner``'s clean values (None: without any)."""
    return BuildView(owner, inherit=inherit, known_safe=known_safe, launch=launch)


def _both(
    owner: FormatMemo, items: list[tuple[str, str]], **kwargs: object
) -> list[tuple[SecretMatch, ...]]:
    """``find_in`` with the owner's clean values, checked equal to a rule without them."""
    got = _rule(owner, **kwargs).find_in(items)  # type: ignore[arg-type]
    assert got == _rule(None, **kwargs).find_in(items)  # type: ignore[arg-type]
    return got


@pytest.mark.parametrize(
    ("first", "first_kwargs", "second", "second_kwargs"),
    [
        # kept under a known_safe name (an exempt match), then under another name
        (("SAFE_TOKEN", GITHUB), {"known_safe": frozenset({"SAFE_TOKEN"})}, ("NOTE", GITHUB), {}),
        # kept as a credentialed child's own provider key, then under another name
        (("OPENAI_API_KEY", OPENAI), {"inherit": True}, ("NOTE", OPENAI), {"inherit": True}),
        # clean under one name, then the value of a declared secret under another
        (
            ("NOTE", "a-long-clean-value-01"),
            {},
            ("COPY", "a-long-clean-value-01"),
            {"launch": {"TELEGRAM_BOT_TOKEN": "a-long-clean-value-01"}},
        ),
    ],
    ids=["known-safe-then-other-name", "own-provider-then-other-name", "clean-then-declared"],
)
def test_a_value_seen_under_one_key_gets_its_verdict_under_another(
    first: tuple[str, str],
    first_kwargs: dict[str, object],
    second: tuple[str, str],
    second_kwargs: dict[str, object],
) -> None:
    """A value the last build let through under one key is judged afresh under another key."""
    owner = FormatMemo()
    kept = _both(owner, [first, *CLEAN.items()], **first_kwargs)[0]
    assert all(m.exemption is not None for m in kept)  # let through: clean, or exemptions
    found = _both(owner, [second, *CLEAN.items()], **second_kwargs)[0]
    assert found
    assert any(m.exemption is None for m in found)


@pytest.mark.parametrize("new", [1, 2], ids=["one-new-value", "two-new-values"])
def test_a_value_newly_holding_a_credential_is_found(searched: list[str], new: int) -> None:
    """Among remembered clean values a new credential is found; only the new values are searched."""
    owner = FormatMemo()
    _both(owner, list(CLEAN.items()))
    # one new value is searched alone; two are searched joined, then each
    changed = dict(CLEAN, SETTING_0=f"token {GITHUB}")
    if new == 2:
        changed["SETTING_1"] = "another-ordinary-value"
    searched.clear()
    matches = _rule(owner).find_in(list(changed.items()))
    assert [m.name for m in matches[0]] == ["github-classic-pat"]
    assert matches[1:] == [()] * (len(changed) - 1)
    if new == 1:
        assert searched == [f"token {GITHUB}"]
    else:
        both = [f"token {GITHUB}", "another-ordinary-value"]
        assert searched == ["\x00".join(both), *both]
    assert f"token {GITHUB}" not in owner.held


def test_the_same_values_again_search_nothing(searched: list[str]) -> None:
    """A second rule over values the owner found clean makes no search; one new value, one."""
    owner = FormatMemo()
    _rule(owner).find_in(list(CLEAN.items()))
    assert searched == ["\x00".join(CLEAN.values())]
    searched.clear()
    assert _rule(owner).find_in(list(CLEAN.items())) == [()] * len(CLEAN)
    assert searched == []
    _rule(owner).find_in([*CLEAN.items(), ("NEW", "a-new-value")])
    assert searched == ["a-new-value"]


def test_a_set_remembered_under_another_table_is_ignored() -> None:
    """The clean values are keyed on the table object: an equal table made anew knows none."""
    owner = FormatMemo()
    table = format_table()
    owner.remember(table, frozenset({"v"}))
    assert owner.under(table).known_clean == {"v"}
    assert owner.under(FormatTable.of(table.formats)).known_clean == frozenset()


def test_find_in_ignores_a_view_under_another_table(searched: list[str]) -> None:
    """A build's view of clean values made under another table than the rule searches with
    skips nothing: every value is searched."""
    owner = FormatMemo()
    owner.remember(FormatTable.of(format_table().formats), frozenset(CLEAN.values()))
    stale = CleanValues(frozenset(CLEAN.values()), FormatTable.of(format_table().formats), owner)
    rule = _rule(None).rule
    assert rule.find_in(list(CLEAN.items()), (), stale) == [()] * len(CLEAN)
    assert searched == ["\x00".join(CLEAN.values())]


def test_reset_table_invalidates_what_was_remembered(
    make_host: HostFactory, searched: list[str], own_table: None
) -> None:
    """After ``reset_table()`` a build (its memo missed) searches every value again."""
    host = make_host(dict(PLAIN))
    host.build_subprocess_env()
    searched.clear()
    host.build_subprocess_env(surface=Surface.SCRIPT)  # another shape: a miss, the same values
    assert searched == []
    reset_table()
    host.build_subprocess_env(surface=Surface.WORKER)
    assert len(searched) == 1
    assert all(v in searched[0] for v in CLEAN.values())


def test_a_build_keeps_only_its_own_clean_values(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """The owner holds the last build's clean values: an old value goes, a credential never."""
    environ = dict(PLAIN, OLD_ONLY="a-value-of-the-first-env", NOTE=GITHUB)
    host = make_host(environ)
    with host.routed(homes["B"]) as binding:
        first = host.build_subprocess_env()
        held = binding.memo.formats.held
        assert "a-value-of-the-first-env" in held
        del environ["OLD_ONLY"]
        environ["NEW_ONLY"] = "a-value-of-the-second-env"
        second = host.build_subprocess_env()
        held = binding.memo.formats.held
    assert "NOTE" not in first
    assert "NOTE" not in second
    assert GITHUB not in held  # ...and never remembered
    assert "a-value-of-the-first-env" not in held
    assert "a-value-of-the-second-env" in held
    assert held <= set(second.values())  # nothing the child (which the memo keeps) lacks


def test_an_unbound_multiplexed_build_uses_no_memo(
    make_host: HostFactory, searched: list[str]
) -> None:
    """Unbound under multiplex, every build searches all its values and nothing is remembered."""
    host = make_host(dict(PLAIN), multiplex=True)
    for surface in (Surface.TERMINAL, Surface.SCRIPT, Surface.TERMINAL):
        host.build_subprocess_env(surface=surface)
    assert len(searched) == 3
    assert all(v in s for s in searched for v in CLEAN.values())
    assert host._memo.formats.held == frozenset()


def test_strip_value_aliases_off_searches_nothing(
    make_host: HostFactory, searched: list[str]
) -> None:
    """``strip_value_aliases=False``: no format search at all, and nothing remembered."""
    host = make_host(dict(PLAIN, NOTE=GITHUB), strip_value_aliases=False)
    env = host.build_subprocess_env()
    host.build_subprocess_env(surface=Surface.SCRIPT)
    assert searched == []
    assert env["NOTE"] == GITHUB
    assert host._memo.formats.held == frozenset()


def test_the_memo_shows_counts_never_values() -> None:
    """The owner's and a build's view's reprs give how many values, never one of them."""
    owner = FormatMemo()
    owner.remember(format_table(), frozenset({"a-held-value-0001"}))
    shown = repr(owner) + repr(owner.under(format_table()))
    assert "a-held-value-0001" not in shown
    assert "1 values" in shown


def test_a_host_build_decides_what_a_fresh_host_decides(make_host: HostFactory) -> None:
    """Builds after builds with a warm owner give the child a host without history gives."""
    envs = [
        dict(PLAIN, NOTE=GITHUB),
        dict(PLAIN, NOTE="clean-now-000001", OTHER=GITHUB),
        dict(PLAIN, NOTE=f"x:{GITHUB}@h", OPENAI_API_KEY=OPENAI),
        dict(PLAIN, NOTE="clean-now-000001"),
    ]
    environ: dict[str, str] = {}
    warm = make_host(environ)
    for env in envs:
        environ.clear()
        environ.update(env)
        for inherit in (False, True):
            fresh = make_host(dict(env)).build_subprocess_env(inherit_credentials=inherit)
            assert warm.build_subprocess_env(inherit_credentials=inherit) == fresh
