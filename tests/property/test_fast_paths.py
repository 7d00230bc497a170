"""Property tests: each fast path of a build decides exactly what its careful path decides.

``validate_block`` first checks a whole block in a few C-level passes and only
walks it entry by entry when that check says "look closer"; stage 1 decides
each name once per ``ResidueRule``. Both are compared here with a reference
written the plain way.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from envscope.audit.trace import Trace
from envscope.errors import EnvValueError
from envscope.pipeline import stages
from envscope.pipeline._residue_rule import ResidueRule
from envscope.pipeline.stages import MAX_VALUE_BYTES, strip_residue, to_entries, validate_block
from envscope.policy._secret_policy import build_policy
from envscope.policy.catalog import Catalog

pytestmark = pytest.mark.property

PIECES = st.sampled_from(["A", "b", "=", "\x00", "é", "\ud800", "\udc80", "😀", "_KEY", ""])
NAMES = st.one_of(st.text(max_size=12), st.lists(PIECES, max_size=6).map("".join))
VALUES = st.one_of(
    st.text(max_size=40),
    st.lists(PIECES, max_size=8).map("".join),
    st.integers(0, 3).map(lambda n: "v" * (MAX_VALUE_BYTES - 8 + n)),  # around the entry limit
)
ENVS = st.dictionaries(NAMES, VALUES, max_size=8)


def careful(env: dict[str, str], cap: int) -> dict[str, str] | str:
    """``validate_block`` with its whole-block check turned off: the entry-by-entry walk."""
    real = stages.block_bytes
    stages.block_bytes = lambda env: None
    try:
        return validate_block(dict(env), max_total_bytes=cap)
    except EnvValueError as exc:
        return str(exc)
    finally:
        stages.block_bytes = real


@given(ENVS, st.sampled_from([64, 4096, MAX_VALUE_BYTES + 64, 1 << 20]))
@example({"A": "v" * (MAX_VALUE_BYTES - 3)}, 1 << 20)
@example({"A": "é" * (MAX_VALUE_BYTES // 2)}, 1 << 20)
@example({"A=B": "v", "C": "d"}, 1 << 20)
@example({"": "v"}, 1 << 20)
@example({"A": "\ud800"}, 1 << 20)
def test_block_check_matches_the_entry_walk(env: dict[str, str], cap: int) -> None:
    """The fast whole-block check never passes a block the careful walk would change or refuse."""
    expected = careful(env, cap)
    try:
        got: dict[str, str] | str = validate_block(dict(env), max_total_bytes=cap)
    except EnvValueError as exc:
        got = str(exc)
    assert got == expected


@given(ENVS, st.data())
def test_a_block_resized_by_one_entry_is_what_the_entry_walk_counts(
    env: dict[str, str], data: st.DataObject
) -> None:
    """``block_bytes`` minus an entry's old ``entry_bytes`` plus its new one: the walk's size.

    What an incremental build checks a patched child with (``_delta``): when the
    block and the new entry pass as they are, the careful walk keeps every entry at
    exactly that cap and refuses the block one byte under it.
    """
    total = stages.block_bytes(env)
    if total is None or not env:  # nothing to resize
        return
    key = data.draw(st.sampled_from(sorted(env)), label="key")
    new = data.draw(VALUES, label="new value")
    grown, shrunk = stages.entry_bytes(key, new), stages.entry_bytes(key, env[key])
    assert shrunk is not None  # the block passed as it is: so did each of its entries
    patched = {**env, key: new}
    if grown is None:
        assert careful(patched, 1 << 30) != patched  # dropped or refused: never passed as is
        return
    size = total - shrunk + grown
    assert careful(patched, size) == patched
    assert isinstance(careful(patched, size - 1), str)


POLICY = build_policy(Catalog.default())
NAME_POOL = st.sampled_from(
    ["PATH", "HOME", "A_MARKER", "OPENAI_API_KEY", "openai_api_key", "DISCORD_ALLOWED_CHANNELS",
     "DEMO_ALLOWED_SENDER", "TELEGRAM_BOT_TOKEN", "MANAGED", "ORG", "X_TOKEN", "plain"]
)  # fmt: skip


@given(
    st.dictionaries(NAME_POOL, st.text(max_size=12), max_size=10),
    st.frozensets(NAME_POOL.map(str.upper), max_size=5),
    st.frozensets(NAME_POOL.map(str.upper), max_size=3),
)
def test_residue_rule_reused_matches_a_fresh_one(
    env: dict[str, str], residue: frozenset[str], keep: frozenset[str]
) -> None:
    """A rule whose memo was filled by other builds strips exactly what a fresh rule strips."""
    rule = ResidueRule(residue, keep, (POLICY,))
    strip_residue(
        to_entries({"OPENAI_API_KEY": "x", "PATH": "/b", "ORG": "o"}, fold=True), rule=rule
    )
    entries = to_entries(env, fold=True)
    warm_trace, fresh_trace = Trace(), Trace()
    warm = strip_residue(entries, rule=rule, trace=warm_trace)
    fresh = strip_residue(
        entries, residue=residue, keep=keep, policies=(POLICY,), trace=fresh_trace
    )
    assert warm == fresh
    assert list(warm_trace) == list(fresh_trace)
