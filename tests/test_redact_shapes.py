"""``Redactor(shapes=True)``: credentials masked by their format, whole, in bytes and streamed.

A table over every row of the credential format table (its documented fake
example, in text), then properties over texts built from examples, host
values and filler cut at random points: a stream answers exactly what the
whole text does, bytes what text does, each piece is masked as it would be
alone (nothing else changes), and no example or value survives.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envscope import Catalog, Host
from envscope.policy.formats import format_table
from envscope.redact import SHAPE_HOLD, Redactor, _Shapes, for_host
from envscope.spawn import run

FORMATS = format_table().formats
EXAMPLES = [fmt.example for fmt in FORMATS]
GH = next(fmt.example for fmt in FORMATS if fmt.example.startswith("ghp_"))


def _streamed(redactor: Redactor, text: str, size: int) -> str:
    stream = redactor.stream()
    parts = [stream.feed(text[i : i + size]) for i in range(0, len(text), size)]
    return "".join([*parts, stream.close()])


@pytest.mark.parametrize("fmt", FORMATS, ids=[fmt.name for fmt in FORMATS])
def test_each_formats_example_is_masked_whole_in_bytes_and_streamed(fmt: object) -> None:
    example = fmt.example  # type: ignore[attr-defined]
    text = f"before {example} after\n"
    shaped = Redactor({}, shapes=True)
    out = shaped.redact(text)
    assert example not in out
    assert out.startswith("before ")
    assert out.endswith(" after\n")
    assert "[REDACTED:" in out
    assert shaped.redact_bytes(text.encode()) == out.encode()
    assert _streamed(shaped, text, 1) == _streamed(shaped, text, 7) == out
    assert Redactor({}).redact(text) == text  # without shapes: unchanged
    assert shaped.names_in(text)
    assert Redactor({}).names_in(text) == []


RUN_BEFORE = [fmt for fmt in FORMATS if fmt.run_before is not None]


@pytest.mark.parametrize("fmt", RUN_BEFORE, ids=[fmt.name for fmt in RUN_BEFORE])
def test_a_token_that_begins_before_its_prefix_is_masked_from_its_start(fmt: object) -> None:
    """A Telegram bot id, a Mailchimp key's hex: the run before the prefix is the token's."""
    from envscope.policy._cli_source import filtered_stderr

    example = fmt.example  # type: ignore[attr-defined]
    run = example.split(fmt.prefix)[0][-fmt.run_before.min :]  # type: ignore[attr-defined]
    text = f"before {example} after"
    assert run not in Redactor({}, shapes=True).redact(text)
    assert run not in filtered_stderr(text.encode(), {})  # a source CLI's quoted stderr


def test_a_stream_searches_from_a_lines_start_so_a_tokens_left_context_is_kept() -> None:
    """A long value's hold-back ends inside a line: the release goes back to the line's start."""
    mailchimp = next(fmt.example for fmt in FORMATS if fmt.name == "mailchimp-api-key")
    redactor = Redactor({"LONG": "long-host-secret-value-" + "x" * 40}, shapes=True)
    text = f"{mailchimp} and more words here\nnext line\n"
    stream = redactor.stream()
    out = stream.feed(text) + stream.close()
    assert out == redactor.redact(text)
    assert mailchimp[:32] not in out


def test_every_formats_longest_match_fits_in_what_a_stream_holds() -> None:
    sre_parse = importlib.import_module("re._parser")  # the regex's (min, max) width
    widths = {fmt.name: sre_parse.parse(fmt.regex).getwidth()[1] for fmt in FORMATS}
    assert max(widths.values()) <= SHAPE_HOLD


def test_a_value_and_a_credential_that_overlap_are_masked_as_one() -> None:
    """Their union is masked: no part of either survives."""
    value = GH[:10]  # a host value that is the token's first part
    shaped = Redactor({"HEAD": value}, shapes=True)
    out = shaped.redact(f"x {GH} y")
    assert out == "x [REDACTED:HEAD] y"
    assert Redactor({"HEAD": value}).redact(f"x {GH} y") == f"x [REDACTED:HEAD]{GH[10:]} y"


def test_a_stream_releases_each_ended_line_and_holds_a_credential_in_progress() -> None:
    stream = Redactor({}, shapes=True).stream()
    assert stream.feed("first line\nsecond ") == "first line\n"
    assert stream.held == len("second ")
    assert stream.feed(GH[:12]) == ""  # no line ended: a credential may be arriving
    assert stream.feed(GH[12:] + "\nthird") == f"second [REDACTED:{_name(GH)}]\n"
    assert stream.close() == "third"


def test_a_line_longer_than_the_hold_is_released_and_a_credential_at_the_end_is_held() -> None:
    stream = Redactor({}, shapes=True).stream()
    filler = "word " * (SHAPE_HOLD // 5 + 10)  # one line longer than the hold, no newline
    released = stream.feed(filler)
    assert released
    assert stream.held <= SHAPE_HOLD
    assert stream.feed(" " + GH[:20]) == "" or stream.held >= 20
    out = released + "".join([stream.feed(GH[20:] + " end"), stream.close()])
    assert GH not in out
    assert out.endswith(f"[REDACTED:{_name(GH)}] end")


def _name(example: str) -> str:
    return next(fmt.name for fmt, _, _ in format_table().spans(example))


FILLER = st.text(alphabet="abc xyz-=:/\n", max_size=12)
VALUES = ["host-secret-value-0001", "pässwörd-ünïcode-0002"]


@settings(max_examples=150, deadline=None)
@given(
    pieces=st.lists(
        st.one_of(st.sampled_from(EXAMPLES), st.sampled_from(VALUES), FILLER), max_size=10
    ),
    separators=st.lists(st.sampled_from([" ", "\n", "\t", " | "]), min_size=10, max_size=10),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=8),
)
def test_examples_values_and_filler_cut_anywhere(
    pieces: list[str], separators: list[str], cuts: list[int]
) -> None:
    redactor = Redactor({"A": VALUES[0], "B": VALUES[1]}, shapes=True)
    text = "".join(p + s for p, s in zip(pieces, separators, strict=False))
    whole = redactor.redact(text)
    # each piece is masked as it would be alone: nothing else changes
    assert whole == "".join(
        redactor.redact(p) + s for p, s in zip(pieces, separators, strict=False)
    )
    for piece in pieces:
        if piece in EXAMPLES or piece in VALUES:
            assert piece not in whole
    points = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    stream = redactor.stream()
    out = []
    for a, b in itertools.pairwise(points):
        out.append(stream.feed(text[a:b]))
        assert stream.held <= SHAPE_HOLD
    assert "".join([*out, stream.close()]) == whole
    data = text.encode()
    assert redactor.redact_bytes(data) == whole.encode()
    byte_stream = redactor.byte_stream()
    step = max(1, len(data) // 5)
    chunks = [data[i : i + step] for i in range(0, len(data), step)]
    assert b"".join([*(byte_stream.feed(c) for c in chunks), byte_stream.close()]) == (
        whole.encode()
    )


def test_for_host_masks_a_credential_no_env_holds_and_a_child_printing_one(
    tmp_path: Path,
) -> None:
    host = Host(tmp_path, environ={"PATH": os.defpath}, catalog=Catalog.default())
    host.load_launch_env()
    text = f"fetched {GH} at run time\n"
    assert GH not in for_host(host).redact(text)
    assert for_host(host, shapes=False).redact(text) == text
    script = f"print('token: {GH}')"
    done = run(host, ["python3", "-c", script], surface="terminal", capture_output=True,
               text=True, redact_output=True)  # fmt: skip
    assert done.stdout == f"token: [REDACTED:{_name(GH)}]\n"
    plain = run(host, ["python3", "-c", script], surface="terminal", stdout=subprocess.PIPE,
                text=True)  # fmt: skip
    assert plain.stdout == f"token: {GH}\n"


PIECES = st.one_of(
    st.sampled_from(EXAMPLES),
    st.sampled_from(EXAMPLES).map(lambda e: e[: len(e) // 2]),  # a credential cut short
    st.sampled_from([fmt.prefix for fmt in FORMATS]),  # a prefix alone, overlapping others
    st.text(alphabet="AKIAghp_sk-xoxb.=:/@ é€\n0123456789abcdef", max_size=20),
)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(PIECES, max_size=12))
def test_spans_at_the_automatons_prefixes_answer_as_the_regex_search(pieces: list[str]) -> None:
    """The fast search (regex tried where a prefix begins) ≡ the regex's own search."""
    table = format_table()
    shapes = _Shapes(table)
    text = "".join(pieces)
    assert list(shapes.spans(text)) == list(table.spans(text))
    data = text.encode()
    assert list(shapes.spans(data)) == list(table.spans(data.decode("latin-1")))


def test_the_format_automata_are_kept_per_table_and_follow_a_reset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a table cache of its own: the worker's shared table stays the one it has."""
    import envscope.policy.formats as formats
    from envscope.redact import _shapes_of

    monkeypatch.setattr(formats, "format_table", functools.cache(formats.format_table.__wrapped__))
    first = _shapes_of(formats.format_table())
    assert _shapes_of(formats.format_table()) is first  # the next redactor builds nothing
    formats.reset_table()
    again = _shapes_of(formats.format_table())
    assert again is not first
    assert again.table is formats.format_table()
    assert Redactor({}, shapes=True).redact(f"x {GH} y") == f"x [REDACTED:{_name(GH)}] y"
