"""``envscope.redact``: every value masked, whole or inside text, in one piece or streamed.

A table over the owning class, then two properties: the automaton's answer
equals a naive leftmost-longest scan (the reference), and a stream cut at any
points answers exactly what the whole text does, holding back less than the
longest value. Together: no value of 8 characters or more survives, and
nothing else changes.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envscope import ConfigurationError
from envscope.redact import FLOOR, Redactor

GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2


@pytest.mark.parametrize(
    ("secrets", "text", "expected"),
    [
        ({"GH_TOKEN": GH}, f"token: {GH}\n", "token: [REDACTED:GH_TOKEN]\n"),
        ({"GH_TOKEN": GH}, f"{GH}{GH}", "[REDACTED:GH_TOKEN][REDACTED:GH_TOKEN]"),
        ({"A": "short7!"}, "short7! stays: under the floor", "short7! stays: under the floor"),
        ({"A": "abcdefgh", "B": "abcdefghij"}, "xabcdefghijx", "x[REDACTED:B]x"),  # longest
        ({"A": "abcdefgh", "B": "defghijk"}, "abcdefghijk", "[REDACTED:A]ijk"),  # leftmost
        ({"Z": "same-value-1", "A": "same-value-1"}, "same-value-1", "[REDACTED:A]"),
        ({"P": "pässwörd-ünïcode"}, "x pässwörd-ünïcode y", "x [REDACTED:P] y"),
        ({}, "nothing to mask", "nothing to mask"),
    ],
    ids=["inside-text", "back-to-back", "floor", "longest-wins", "leftmost-wins",
         "first-name", "unicode", "no-values"],
)  # fmt: skip
def test_redact_table(secrets: dict[str, str], text: str, expected: str) -> None:
    redactor = Redactor(secrets)
    assert redactor.redact(text) == expected
    assert redactor.redact_bytes(text.encode()) == expected.encode()
    stream = redactor.stream()
    assert "".join([*(stream.feed(c) for c in text), stream.close()]) == expected


def test_a_utf8_value_split_inside_a_character_is_masked() -> None:
    redactor = Redactor({"P": "pässwörd-ünïcode"})
    data = "-> pässwörd-ünïcode <-".encode()
    stream = redactor.byte_stream()
    out = b"".join([*(stream.feed(data[i : i + 1]) for i in range(len(data))), stream.close()])
    assert out == b"-> [REDACTED:P] <-"


def test_no_value_in_its_repr_and_wrong_input_is_refused() -> None:
    assert GH not in repr(Redactor({"GH_TOKEN": GH}))
    with pytest.raises(ConfigurationError, match="string values"):
        Redactor({"A": 12345678})  # type: ignore[dict-item]
    stream = Redactor({"A": GH}).stream()
    stream.close()
    with pytest.raises(ConfigurationError, match="closed"):
        stream.feed("more")


def _reference(secrets: dict[str, str], text: str) -> str:
    """The naive scan: at each position the longest value starting there, else one character."""
    first: dict[str, str] = {}
    for name in sorted(secrets):
        if len(secrets[name]) >= FLOOR:
            first.setdefault(secrets[name], name)
    out, i = [], 0
    while i < len(text):
        found = [v for v in first if text.startswith(v, i)]
        if found:
            value = max(found, key=len)
            out.append(f"[REDACTED:{first[value]}]")
            i += len(value)
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


ALPHABET = "abcé€ -\n"
values = st.text(alphabet=ALPHABET, min_size=1, max_size=14)
names = st.from_regex(r"[A-Z][A-Z_]{0,5}", fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(
    secrets=st.dictionaries(names, values, max_size=6),
    pieces=st.lists(st.one_of(values, st.text(alphabet=ALPHABET, max_size=10)), max_size=12),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=8),
)
def test_a_stream_cut_anywhere_answers_as_the_reference(
    secrets: dict[str, str], pieces: list[str], cuts: list[int]
) -> None:
    """Texts built from the values and filler, cut at random points, str and bytes."""
    text = "".join(pieces)
    redactor = Redactor(secrets)
    expected = _reference(secrets, text)
    assert redactor.redact(text) == expected
    points = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    stream = redactor.stream()
    longest = max((len(v) for v in secrets.values() if len(v) >= FLOOR), default=0)
    out = []
    for a, b in itertools.pairwise(points):
        out.append(stream.feed(text[a:b]))
        assert stream.held <= max(longest - 1, 0)  # nothing held longer than needed
    assert "".join([*out, stream.close()]) == expected
    data = text.encode()
    byte_stream = redactor.byte_stream()
    step = max(1, len(data) // 7)
    chunks = [data[i : i + step] for i in range(0, len(data), step)]
    streamed = b"".join([*(byte_stream.feed(c) for c in chunks), byte_stream.close()])
    assert streamed == redactor.redact_bytes(data) == expected.encode()
    for value in secrets.values():  # masks hold "[", which no value here does
        assert len(value) < FLOOR or value not in expected
