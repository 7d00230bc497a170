"""The context's rule outlives a build: kept while its inputs stay, its verdicts remembered,
each answer the one ``decide`` gives (what the runtime guard asks on every spawn)."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envscope import Catalog, Host
from envscope.pipeline import decision
from envscope.pipeline.decision import RuleVerdicts, decide
from envscope.pipeline.secret_rule import SecretRule
from envscope.policy import formats
from envscope.policy._layers import Layer
from envscope.policy._secret_policy import build_policy
from envscope.policy.formats import format_table, reset_table

POLICY = build_policy(Catalog.default())
LAUNCH = {"TELEGRAM_BOT_TOKEN": "launch-bot-token-0001"}
PAT = next(f.example for f in format_table().formats if f.example.startswith("ghp_"))
KEYS = ["TELEGRAM_BOT_TOKEN", "OPENAI_API_KEY", "NOTE", "ACME_API_TOKEN", "PATH"]
VALUES = ["launch-bot-token-0001", "x:launch-bot-token-0001@h", PAT, "plain", "short", ""]


@given(
    entries=st.lists(
        st.tuples(
            st.sampled_from(KEYS),
            st.sampled_from(VALUES) | st.text(max_size=12),
            st.sampled_from([Layer.BASE, Layer.SPAWN, Layer.EXTRA, Layer.SCOPE]),
        ),
        max_size=40,
    ),
    limit=st.integers(min_value=1, max_value=8),
)
def test_remembered_verdicts_are_decides(entries: list[tuple[str, str, Layer]], limit: int) -> None:
    """Asked in any order, again and again, past its bound: each answer is ``decide``'s."""
    rule = SecretRule(POLICY, launch_values=(LAUNCH,), formats=format_table())
    verdicts = RuleVerdicts(rule, limit)  # a small bound: the table starts over often
    for key, value, layer in entries * 2:
        assert verdicts.deciding(layer)(key, value) == decide(rule, key, value, layer)


@given(
    builds=st.lists(
        st.lists(
            st.tuples(
                st.sampled_from(KEYS),
                st.sampled_from(VALUES) | st.text(max_size=12),
                st.sampled_from([Layer.BASE, Layer.SPAWN, Layer.EXTRA, Layer.SCOPE]),
            ),
            max_size=12,
        ),
        min_size=1,
        max_size=4,
    ),
    kept=st.integers(min_value=1, max_value=8),
    routed=st.booleans(),
)
def test_known_verdicts_are_decides(
    builds: list[list[tuple[str, str, Layer]]], kept: int, routed: bool
) -> None:
    """A reused rule's known verdicts (``decide_all(..., known=...)``), build after build and
    past their bound: each answer is ``decide``'s, in order."""
    rule = SecretRule(POLICY, launch_values=(LAUNCH,), routed=routed, formats=format_table())
    known: decision.Known = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(decision, "KNOWN_KEPT", kept)  # a small bound: the table starts over often
        for entries in builds * 2:
            got = decision.decide_all(rule, entries, known=known)
            assert got == [decide(rule, key, value, layer) for key, value, layer in entries]
            assert len(known) <= max(kept, *(len(b) for b in builds))  # a build's new ones


@pytest.fixture
def host(tmp_path: Path) -> Host:
    (tmp_path / "launch").mkdir()
    (tmp_path / "launch" / ".env").write_text("TELEGRAM_BOT_TOKEN=launch-bot-token-0001\n")
    made = Host(tmp_path / "launch", environ={"PATH": "/usr/bin", "NOTE": "n"})
    made.load_launch_env()
    return made


def test_the_rule_is_kept_while_the_inputs_stay(host: Host) -> None:
    first = host.secret_rule()
    assert host.secret_rule() is first
    assert host.secret_rule(inherit_credentials=True) is not first  # another shape


def test_a_changed_process_env_makes_a_new_rule(host: Host) -> None:
    first = host.secret_rule()
    host._environ["NOTE"] = "changed"
    assert host.secret_rule() is not first


def test_a_new_format_table_makes_a_new_rule(host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a cache of its own: the worker's shared table stays the one read at import."""
    monkeypatch.setattr(formats, "format_table", functools.cache(formats.format_table.__wrapped__))
    first = host.secret_rule()
    assert host.secret_rule() is first
    reset_table()
    assert host.secret_rule() is not first
    assert host.secret_rule().formats is formats.format_table()


@given(
    envs=st.lists(
        st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=5),
        min_size=1,
        max_size=5,
    ),
    layer=st.sampled_from([Layer.BASE, Layer.SPAWN]),
)
def test_the_withheld_entries_are_decides(envs: list[dict[str, str]], layer: Layer) -> None:
    """Each env asked (again, or after another): the entries ``decide`` withholds, in order."""
    rule = SecretRule(POLICY, launch_values=(LAUNCH,), formats=format_table())
    verdicts = RuleVerdicts(rule)
    for env in envs + envs[::-1]:
        want = []
        for key, value in env.items():
            verdict = decide(rule, key, value, layer)
            if verdict is not None and verdict.withheld:
                want.append((key, value, verdict))
        assert verdicts.withheld(env, layer) == want


class _Churning(Mapping[str, str]):
    """A live env another thread writes: each walk over it sees the next version."""

    def __init__(self, *versions: dict[str, str]) -> None:
        self._versions = list(versions)
        self._walks = 0
        self._at = 0

    def __iter__(self) -> Iterator[str]:
        self._at = min(self._walks, len(self._versions) - 1)
        self._walks += 1
        return iter(self._versions[self._at])

    def __getitem__(self, key: str) -> str:
        return self._versions[self._at][key]

    def __len__(self) -> int:
        return len(self._versions[self._at])


def test_the_last_env_remembered_is_the_env_decided() -> None:
    """A live env that changes while it is checked: what is remembered is what was decided,
    so the env it changed to is decided again, never answered with the earlier verdicts."""
    rule = SecretRule(POLICY, launch_values=(LAUNCH,), formats=format_table())
    verdicts = RuleVerdicts(rule)
    holding = {"PATH": "/usr/bin", "NOTE": "launch-bot-token-0001"}
    plain = {"PATH": "/usr/bin", "NOTE": "plain"}
    first = verdicts.withheld(_Churning(plain, holding), Layer.SPAWN)
    assert [key for key, _, _ in first] == []  # it read the plain version
    again = verdicts.withheld(holding, Layer.SPAWN)
    assert [key for key, _, _ in again] == ["NOTE"]


@given(
    pairs=st.lists(
        st.tuples(
            st.sampled_from([*KEYS, "TASK_ID", "MY_SERVICE_PASSWORD", "acme_api_token", "X"]),
            st.sampled_from(VALUES) | st.text(max_size=24),
        ),
        max_size=20,
    ),
    name_context=st.booleans(),
    known_safe=st.sampled_from([frozenset(), frozenset({"ACME_API_TOKEN"})]),
)
def test_reads_pair_remembers_plain_names_without_changing_an_answer(
    pairs: list[tuple[str, str]], name_context: bool, known_safe: frozenset[str]
) -> None:
    """A name the rule can never read a value under (undeclared, no credential token) is
    remembered as such: asked again with any value, the answer is the uncached one."""
    rule = SecretRule(
        POLICY,
        launch_values=(LAUNCH,),
        formats=format_table(),
        name_context=name_context,
        known_safe=known_safe,
    )
    for key, value in pairs * 2:
        uncached = rule.declaration(key) is not None or rule._by_context(key, value) is not None
        assert rule.reads_pair(key, value) is uncached


def test_a_rules_name_memos_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long-lived rule (the guard's) asked about many names keeps at most ``NAMES_KEPT``
    of each memo, and its answers do not change when a memo starts over."""
    from envscope.pipeline import secret_rule

    monkeypatch.setattr(secret_rule, "NAMES_KEPT", 8)
    launch_policy = build_policy(Catalog.default())
    rule = SecretRule(POLICY, launch_policy=launch_policy, routed=True, formats=format_table())
    fresh = SecretRule(POLICY, launch_policy=launch_policy, routed=True, formats=format_table())
    names = [f"NAME_{i}_TOKEN" for i in range(30)] + KEYS * 3
    for name in names:
        assert rule.declaration(name) == fresh.declaration(name)
        assert rule.reads_pair(name, "Zx9Qw2Er7Ty4Ui1Op3As6Df8") is fresh.reads_pair(
            name, "Zx9Qw2Er7Ty4Ui1Op3As6Df8"
        )
        assert len(rule._declared) <= 8
        assert len(rule._plain) <= 8
