"""Property tests: the fast manifest paths agree with the reference paths on generated input.

Documents are generated as block YAML from manifest-like pieces (keys that YAML
reads as booleans or null, numbers, dates, quotes, comments, odd indentation,
empty and pending values), then sometimes mangled by one edit. For each, the
block reader either gives up or reads exactly the careful composer's document
(and libyaml's event count); and ``parse_manifest`` gives the same manifest or
the same error with the fast paths on and off. Marked ``property``; run under
the profile chosen in ``conftest.py``.
"""

from __future__ import annotations

import re

import pytest
import yaml
from hypothesis import event, example, given
from hypothesis import strategies as st
from pydantic import ValidationError

import envscope._manifest_schema as manifest_schema
import envscope._manifest_yaml as manifest_yaml
from tests.test_manifest_parse_fast import (
    PLANTED,
    TRICKY_SCALARS,
    assert_same_outcome,
    check_block_reader,
    checked_repr,
    workload_manifest,
)

pytestmark = [
    pytest.mark.property,
    pytest.mark.skipif(
        not yaml.__with_libyaml__, reason="the block reader is checked against libyaml"
    ),
]

GOOD_KEYS = st.sampled_from(
    ["name", "kind", "requires_env", "optional_env", "secret", "password", "category",
     "description", "url", "prompt", "version", "yes", "No", "on", "OFF", "true", "False",
     "null", "Null", "y", "n", "a-b", "_x", "x_1", "k"]
)  # fmt: skip
ODD_KEYS = st.sampled_from(["ke:y", "key ", "<<", "1", "~", "a b", "'q'"])
GOOD_VALUES = st.one_of(
    st.sampled_from(["A_TOKEN", "B_SECRET", "c_key", "platform", "messaging", "X Y", "1.2.0"]),
    st.sampled_from(["yes", "No", "on", "~", "null", "true", "0x1F", "1e3", "2001-12-14", "[]"]),
    st.sampled_from(["'q: #'", '"d q"', "''", "https://x.example/a?b", "a  b", "(x)", "+1"]),
    st.from_regex(
        r"[A-Za-z0-9_.][A-Za-z0-9_./=-]{0,8}(?:[ :][A-Za-z0-9_./=-]{1,5}){0,2}", fullmatch=True
    ),
)
ODD_VALUES = st.one_of(
    st.sampled_from(TRICKY_SCALARS),
    st.from_regex(r"[A-Za-z0-9_ .:/#'\"=-]{0,12}", fullmatch=True),
)
GOOD_COMMENTS = st.sampled_from(["", "", "", "", " # c", "  # c:", " #", "   "])
ODD_COMMENTS = st.sampled_from(["#c", " #c #", "\t# c"])


class Pieces:
    """What a generated manifest is made of: clean block pieces, or odd ones mixed in."""

    def __init__(self, odd: bool) -> None:
        def mixed(
            good: st.SearchStrategy[str], bad: st.SearchStrategy[str]
        ) -> st.SearchStrategy[str]:
            return st.one_of(good, good, good, bad) if odd else good

        self.keys = mixed(GOOD_KEYS, ODD_KEYS)
        self.values = mixed(GOOD_VALUES, ODD_VALUES)
        self.comments = mixed(GOOD_COMMENTS, ODD_COMMENTS)


@st.composite
def block_lines(draw: st.DrawFn, p: Pieces, col: int, depth: int, mapping: bool) -> list[str]:
    """The lines of one block mapping or sequence whose entries start at column ``col``."""
    lines: list[str] = []
    pad = " " * col
    if mapping:
        for key in draw(st.lists(p.keys, min_size=1, max_size=4, unique=True)):
            shape = draw(st.integers(0, 7)) if depth < 3 else 7
            if shape <= 1:  # a block under the key: deeper, or a sequence at the same column
                lines.append(f"{pad}{key}:{draw(p.comments)}")
                nested_map = shape == 0
                step = draw(st.sampled_from([1, 2, 2, 4] if nested_map else [0, 0, 2, 3]))
                lines += draw(block_lines(p, col + step, depth + 1, nested_map))
            elif shape == 2:
                lines.append(f"{pad}{key}:{draw(p.comments)}")  # no value
            else:
                lines.append(f"{pad}{key}: {draw(p.values)}{draw(p.comments)}")
        return lines
    for _ in range(draw(st.integers(1, 4))):
        dash = "-" + " " * draw(st.sampled_from([1, 1, 1, 2, 3]))
        shape = draw(st.integers(0, 9)) if depth < 3 else 9
        inner = col + len(dash)
        if shape <= 1:  # a nested collection: its first line goes on the dash's line
            nested = draw(block_lines(p, inner, depth + 1, shape == 0))
            lines.append(f"{pad}{dash}{nested[0][inner:]}")
            lines += nested[1:]
        elif shape <= 5:  # an entry mapping
            lines.append(f"{pad}{dash}name: {draw(p.values)}{draw(p.comments)}")
            for field in draw(st.lists(st.sampled_from(FIELDS), max_size=3, unique=True)):
                lines.append(f"{' ' * inner}{field}: {draw(p.values)}{draw(p.comments)}")
        else:
            lines.append(f"{pad}{dash}{draw(p.values)}{draw(p.comments)}")
    return lines


FIELDS = ["secret", "password", "category", "description", "url", "extra", "name"]
EDITS = st.sampled_from(["none"] * 6 + ["indent", "dedent", "duplicate", "drop", "insert"])
JUNK = st.sampled_from(
    ["\t", "\r", ":", "#", "- ", "'", '"', "&a ", "*a", "!!str ", "{", "[", "é", " "]
)


@st.composite
def manifests(draw: st.DrawFn, odd: bool) -> str:
    """A generated block manifest; when ``odd``, with odd pieces and sometimes one line edited."""
    lines = draw(block_lines(Pieces(odd), 0, 0, mapping=True))
    edit = draw(EDITS) if odd else "none"
    where = draw(st.integers(0, len(lines) - 1))
    if edit == "indent":
        lines[where] = " " + lines[where]
    elif edit == "dedent":
        lines[where] = lines[where].removeprefix(" ")
    elif edit == "duplicate":
        lines.insert(where, lines[where])
    elif edit == "drop":
        del lines[where]
    elif edit == "insert":
        at = draw(st.integers(0, len(lines[where])))
        lines[where] = lines[where][:at] + draw(JUNK) + lines[where][at:]
    for _ in range(draw(st.integers(0, 2))):
        blank = draw(st.sampled_from(["", "  ", "# note", "   # x"]))
        lines.insert(draw(st.integers(0, len(lines))), blank)
    head = draw(st.sampled_from(["", "", "", "---\n", "# head\n"]))
    end = draw(st.sampled_from(["\n", "\n", ""]))
    return head + "\n".join(lines) + end


@given(manifests(odd=False))
@example(workload_manifest("chat-0042"))
@example("k:\n- a\n-  b: 1\n   c: 2\n- d\n")
def test_block_reader_reads_clean_manifests_as_the_composer_does(text: str) -> None:
    """Clean block manifests: the block reader's document is the composer's, event for event."""
    event("block reader" if check_block_reader(text) else "composer")


@given(manifests(odd=True))
@example("requires_env:\n- A\n  - B\n")
def test_block_reader_reads_odd_manifests_as_the_composer_does(text: str) -> None:
    """With odd pieces and edits: the block reader gives up, or reads what the composer reads."""
    event("block reader" if check_block_reader(text) else "composer")


@given(st.one_of(manifests(odd=False), manifests(odd=True)))
def test_fast_and_reference_paths_agree(text: str) -> None:
    """parse_manifest gives the same manifest or the same error with the fast paths on or off."""
    event(str(assert_same_outcome(text.encode())[0]))


ENTRY_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.floats(allow_nan=False),
    st.sampled_from(
        ["A_TOKEN", "", "A B", "A=B", "x\x00", "\u00a0X", "É", "1X", "messaging", PLANTED]
    ),
    st.lists(st.just("A"), max_size=1),
    st.dictionaries(st.just("name"), st.just("A"), max_size=1),
)
ENTRY_KEYS = st.sampled_from(
    ["name", "name", "secret", "password", "category", "description", "url", "prompt", "extra"]
)
ENTRIES = st.one_of(
    st.sampled_from(["A_TOKEN", "b_key", "", "A B", "A=B", "É_KEY", "1X"]),
    st.dictionaries(ENTRY_KEYS, ENTRY_VALUES, max_size=5),
    ENTRY_VALUES,
)
ROOTS = st.dictionaries(
    st.one_of(
        st.sampled_from(["name", "kind", "requires_env", "optional_env", "extra"]),
        st.none(),
        st.integers(0, 2),
    ),
    st.one_of(ENTRY_VALUES, st.lists(ENTRIES, max_size=4)),
    max_size=5,
)


@given(ROOTS)
def test_fast_check_never_accepts_what_the_models_reject(root: dict[object, object]) -> None:
    """On any root mapping, the fast check answers only as the pydantic models do."""
    fast = manifest_schema._fast_check(root)
    try:
        slow = manifest_schema._validator()(root)
    except ValidationError:
        event("models reject")
        assert fast is None
        return
    event(
        "models accept, fast check too" if fast is not None else "models accept, fast check defers"
    )
    if fast is not None:
        assert checked_repr(fast) == checked_repr(slow)


# The line pattern with every possessive quantifier made greedy again: the plain
# backtracking form the block reader's grammar was first written in.
BACKTRACKING_LINES = re.compile(
    manifest_yaml._LINES.pattern.replace("*+", "*").replace("++", "+").replace("}+", "}"),
    re.MULTILINE,
)
LINE_TEXT = st.text(st.sampled_from(" -:#'\"[]{}aZ_0.~(+,!*\n"), max_size=40)


@given(st.one_of(LINE_TEXT, manifests(odd=False), manifests(odd=True)))
def test_possessive_line_pattern_matches_as_backtracking_would(text: str) -> None:
    """The possessive quantifiers in ``_LINES`` never change what a line matches."""
    assert "*+" not in BACKTRACKING_LINES.pattern
    assert manifest_yaml._LINES.findall(text) == BACKTRACKING_LINES.findall(text)
