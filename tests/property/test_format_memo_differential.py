"""Property: a rule that skips its memo owner's clean values finds what a full search finds.

Over random sequences of builds for one owner (values from the shipped format
examples, random text, either inside URLs, quotes and lists, and repeated across
builds; credential inheritance and ``known_safe`` changing per build), the
matches of ``find_in`` with the owner's ``CleanValues`` equal those of a rule
without them and those of ``secret_in`` asked value by value, build after build.
The owner holds only values of its last build, none of which holds a format.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from envscope.pipeline._memo import FormatMemo
from envscope.policy.formats import format_table
from tests._format_rules import BuildView

pytestmark = pytest.mark.property

EXAMPLES = [f.example for f in format_table().formats]
OPENAI = next(f.example for f in format_table().formats if f.provider == "openai")
DECLARED = "a-declared-secret-value-01"
LAUNCH = {"TELEGRAM_BOT_TOKEN": DECLARED, "OPENAI_API_KEY": OPENAI}
KEYS = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "NOTE", "MY_THING", "SAFE", "LANG"]

atoms = st.one_of(
    st.sampled_from(EXAMPLES),
    st.sampled_from([DECLARED, "plain-value-0001", "short", "x", ""]),
    st.text(max_size=24),
)
wrapped = st.one_of(
    atoms,
    st.builds(
        lambda pre, atom, post: pre + atom + post,
        st.sampled_from(["", "Bearer ", "https://u:", "https://h/", "a:", "'", '"', "x,", "k="]),
        atoms,
        st.sampled_from(["", "'", '"', "@h", "@h/p", ":b", "\n", ",y"]),
    ),
)


@st.composite
def histories(draw: st.DrawFn) -> list[tuple[list[tuple[str, str]], bool, frozenset[str]]]:
    """Builds for one owner: each its items, whether credentials are inherited, its known_safe."""
    pool = draw(st.lists(wrapped, min_size=1, max_size=10))
    values = st.one_of(st.sampled_from(pool), wrapped)  # repeats across builds, and new values
    build = st.tuples(
        st.lists(st.tuples(st.sampled_from(KEYS), values), max_size=10),
        st.booleans(),
        st.frozensets(st.sampled_from(KEYS), max_size=2),
    )
    return draw(st.lists(build, min_size=1, max_size=6))


def _rule(inherit: bool, known_safe: frozenset[str], owner: FormatMemo | None) -> BuildView:
    return BuildView(owner, inherit=inherit, known_safe=known_safe, launch=LAUNCH)


NONE: frozenset[str] = frozenset()
SAFE_THEN_NOT = [
    ([("SAFE", EXAMPLES[0])], False, frozenset({"SAFE"})),
    ([("NOTE", EXAMPLES[0])], False, NONE),
]
OWN_THEN_NOT = [([("OPENAI_API_KEY", OPENAI)], True, NONE), ([("NOTE", OPENAI)], True, NONE)]
REPEATED = [([("NOTE", "plain-value-0001"), ("MY_THING", f"a:{EXAMPLES[1]}")], False, NONE)] * 3


@given(histories())
@example(SAFE_THEN_NOT)
@example(OWN_THEN_NOT)
@example(REPEATED)
def test_remembered_clean_values_change_no_match(
    history: list[tuple[list[tuple[str, str]], bool, frozenset[str]]],
) -> None:
    """Build after build, the owner's clean values leave every match as a full search has it."""
    owner = FormatMemo()
    table = format_table()
    for items, inherit, known_safe in history:
        plain = _rule(inherit, known_safe, None)
        expected = [plain.secret_in(key, value) for key, value in items]
        assert plain.find_in(items) == expected
        assert _rule(inherit, known_safe, owner).find_in(items) == expected
        held = owner.held
        assert held <= {value for _, value in items}
        assert all(table.find(value) is None for value in held)
