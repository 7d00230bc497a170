"""The pure stages: tables of entries in → env out, inputs never mutated."""

from __future__ import annotations

import pytest

from envscope import Action, Catalog, Reason, Trace
from envscope.pipeline._sanitize import SanitizeOptions, sanitize
from envscope.pipeline.secret_rule import SecretRule
from envscope.pipeline.stages import (
    apply_managed,
    from_entries,
    overlay_scope,
    strip_residue,
    to_entries,
)
from envscope.policy._secret_policy import build_policy
from envscope.policy.surfaces import Allowlist, BaseFilter

POLICY = build_policy(Catalog.default())
RULE = SecretRule(POLICY)
INHERITING = SecretRule(POLICY, inherit_credentials=True)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"a": "1"}, {"a": "1"}),
        ({"a": "1", "A": "2"}, {"A": "2"}),
        ({"A": "2", "a": "1"}, {"A": "2"}),
        ({"a": "1", "aA": "2"}, {"a": "1", "aA": "2"}),
        ({"aa": "1", "Aa": "2"}, {"aa": "1"}),
    ],
)
def test_to_entries_collapses_case_twins(env: dict[str, str], expected: dict[str, str]) -> None:
    """Keys equal ignoring case collapse: the upper-case spelling wins, else the first."""
    trace = Trace()
    assert from_entries(to_entries(env, trace, fold=True)) == expected
    assert len(trace) == len(env) - len(expected)
    assert all(d.reason is Reason.CASE_DUPLICATE for d in trace)


@pytest.mark.parametrize("memo_size", [0, 1, 3, 1000])
def test_strip_residue_with_a_full_memo(monkeypatch: pytest.MonkeyPatch, memo_size: int) -> None:
    """A rule whose memo is full decides the rest per build: same result, same order, same trace."""
    import envscope.pipeline._residue_rule as residue_rule

    env = {"PATH": "/b", "A_MARKER": "a", "OPENAI_API_KEY": "k", "K": "v", "Z_TOKEN": "z"}
    residue, keep = frozenset({"A_MARKER", "PATH"}), frozenset({"PATH"})
    expected_trace = Trace()
    expected = strip_residue(
        to_entries(env, fold=True),
        residue=residue,
        keep=keep,
        policies=(POLICY,),
        trace=expected_trace,
    )
    monkeypatch.setattr(residue_rule, "MAX_MEMO", memo_size)
    rule = residue_rule.ResidueRule(residue, keep, (POLICY,))
    for _ in range(2):
        trace = Trace()
        out = strip_residue(to_entries(env, fold=True), rule=rule, trace=trace)
        assert list(out.items()) == list(expected.items())
        assert list(trace) == list(expected_trace)
    assert len(rule.memo) == min(memo_size, len(env))


def test_strip_residue_table() -> None:
    """Stage 1 drops residue, launch credentials and gates; keeps globals and managed keys."""
    entries = to_entries(
        {
            "PATH": "/b",
            "A_MARKER": "a",
            "OPENAI_API_KEY": "k",
            "DISCORD_ALLOWED_CHANNELS": "1",
            "ORG": "m",
            "OPERATOR": "o",
        },
        fold=True,
    )
    before = dict(entries)
    trace = Trace()
    out = strip_residue(
        entries,
        residue=frozenset({"A_MARKER", "PATH", "ORG"}),
        keep=frozenset({"PATH", "ORG"}),
        policies=(POLICY,),
        trace=trace,
    )
    assert from_entries(out) == {"PATH": "/b", "ORG": "m", "OPERATOR": "o"}
    assert entries == before
    assert {d.key: d.reason for d in trace} == {
        "A_MARKER": Reason.LAUNCH_RESIDUE,
        "OPENAI_API_KEY": Reason.LAUNCH_CREDENTIAL,
        "DISCORD_ALLOWED_CHANNELS": Reason.LAUNCH_GATE,
    }


def test_overlay_and_managed_replace_any_case() -> None:
    """Stages 2 and 3 replace a value whatever the case of the existing key."""
    entries = to_entries({"flag": "base", "X": "x"}, fold=True)
    trace = Trace()
    out = overlay_scope(entries, {"FLAG": "scope", "NEW": "n"}, trace=trace, fold=True)
    out = apply_managed(out, {"Flag": "managed"}, path="/m.env", trace=trace, fold=True)
    assert from_entries(out) == {"Flag": "managed", "X": "x", "NEW": "n"}
    assert [(d.key, d.action) for d in trace] == [
        ("FLAG", Action.OVERRIDDEN),
        ("NEW", Action.ADDED),
        ("Flag", Action.OVERRIDDEN),
    ]
    assert from_entries(entries) == {"flag": "base", "X": "x"}


@pytest.mark.parametrize(
    ("env", "options", "expected"),
    [
        ({"TELEGRAM_BOT_TOKEN": "t", "K": "v"}, SanitizeOptions(RULE, True), {"K": "v"}),
        (
            {"OPENAI_API_KEY": "k"},
            SanitizeOptions(INHERITING, True),
            {"OPENAI_API_KEY": "k"},
        ),
        (
            {"K": "v", "Z": "z"},
            SanitizeOptions(RULE, True, base_filter=BaseFilter(Allowlist(frozenset({"K"})))),
            {"K": "v"},
        ),
        ({}, SanitizeOptions(RULE, True, extra={"E": "e"}), {"E": "e"}),
        ({}, SanitizeOptions(RULE, True, pinned={"H": "/h"}), {"H": "/h"}),
        ({"F": "() {"}, SanitizeOptions(RULE, True, drop_shell_functions=True), {}),
        ({"F": "() {"}, SanitizeOptions(RULE, True), {"F": "() {"}),
        (
            {"P": "base"},
            SanitizeOptions(
                RULE,
                True,
                passthrough=("P",),
                passthrough_source=to_entries({"P": "scope"}, fold=True),
            ),
            {"P": "scope"},
        ),
        ({"P": "base"}, SanitizeOptions(RULE, True, passthrough=("P",), passthrough_source={}), {}),
        (
            {"P": "b"},
            SanitizeOptions(
                RULE, True, extra={"P": "e"}, passthrough=("P",), passthrough_source={}
            ),
            {"P": "e"},
        ),
    ],
)
def test_sanitize_table(
    env: dict[str, str], options: SanitizeOptions, expected: dict[str, str]
) -> None:
    """Stage 4 in isolation: each option does one thing."""
    entries = to_entries(env, fold=True)
    assert sanitize(entries, options) == expected
    assert from_entries(entries) == env


def test_sanitize_trace_records_kept_tier2() -> None:
    """A Tier 2 credential kept for a credentialed child is recorded as such."""
    trace = Trace()
    sanitize(
        to_entries({"OPENAI_API_KEY": "k"}, fold=True),
        SanitizeOptions(INHERITING, True),
        trace=trace,
    )
    assert [(d.key, d.action, d.reason) for d in trace] == [
        ("OPENAI_API_KEY", Action.KEPT, Reason.TIER2_INHERITED)
    ]
    assert trace.for_key("openai_api_key")[0].origin is not None
    assert "kept" in str(next(iter(trace)))
