"""Property: no text formatter passes a non-printable character from its input to the terminal."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envscope.policy._declarations import Problem
from envscope.tools._report import (
    DiffEntry,
    Layout,
    ScanReport,
    format_diff,
    format_explain,
    format_scan,
    printable,
)

pytestmark = pytest.mark.property

TEXT = st.text(max_size=20)  # any code point: controls, ESC, bidi overrides, surrogates
OUR_COLORS = re.compile(r"\x1b\[(?:3[123]|0)m")  # the colour codes the explain table adds


def assert_terminal_safe(out: str) -> None:
    """Every line of the output is printable (our own colour codes aside)."""
    for line in OUR_COLORS.sub("", out).split("\n"):
        assert line.isprintable(), repr(line)


def _snapshot(keys: list[str], origin: str, home: str, problem: str) -> dict[str, object]:
    return {
        "home": home,
        "surface": "terminal",
        "routed": True,
        "policy": {"complete": False, "problems": [problem]},
        "child": keys[:1],
        "keys": {
            k: {
                "in_child": i == 0,
                "action": "kept" if i == 0 else "stripped",
                "stage": "sanitize",
                "reason": "inherited",
                "origin": origin,
            }
            for i, k in enumerate(keys)
        },
        "warnings": [problem],
    }


@given(keys=st.lists(TEXT, min_size=1, max_size=4), origin=TEXT, home=TEXT, problem=TEXT)
@pytest.mark.parametrize("color", [False, True])
def test_explain_escapes(
    keys: list[str], origin: str, home: str, problem: str, color: bool
) -> None:
    """explain: keys, origins, home, problems, warnings and values are escaped."""
    snapshot = _snapshot(keys, origin, home, problem)
    values = dict.fromkeys(keys, origin)
    out = format_explain(
        snapshot, values=values, is_tier1=lambda _k: False, layout=Layout(color=color)
    )
    assert_terminal_safe(out)


@given(key=TEXT, rule=TEXT, a=TEXT, b=TEXT)
def test_diff_escapes(key: str, rule: str, a: str, b: str) -> None:
    """diff: keys, rules and the two labels are escaped."""
    side = {"action": rule, "stage": rule, "reason": rule, "origin": rule}
    entries = [DiffEntry(key, "added", None, side), DiffEntry(key, "changed", side, side)]
    assert_terminal_safe(format_diff(entries, (a, b)))
    assert_terminal_safe(format_diff([], (a, b), comparable=False))


@given(label=TEXT, path=TEXT, names=st.lists(TEXT, max_size=3), message=TEXT, field=TEXT)
def test_scan_escapes(label: str, path: str, names: list[str], message: str, field: str) -> None:
    """scan: labels, manifest paths, names and problems are escaped."""
    report = ScanReport(label, {path: names}, [Problem(path, message, 3, field, label)])
    assert_terminal_safe(format_scan([report]))


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("EVIL\x1b[2J", "EVIL\\x1b[2J"),
        ("A\nB", "A\\x0aB"),
        ("RTL\u202eX", "RTL\\u202eX"),
        ("LONE\udc80", "LONE\\udc80"),
        ("OK_NAME", "OK_NAME"),
        ("naïve→ok", "naïve→ok"),
    ],
)
def test_printable_table(raw: str, shown: str) -> None:
    """Controls, newlines, bidi overrides and lone surrogates are escaped; printable text stays."""
    assert printable(raw) == shown


def test_ansi_key_from_a_profile_dotenv_reaches_no_terminal() -> None:
    """A key holding an ANSI clear-screen is shown escaped in an explain row."""
    out = format_explain(_snapshot(["X\x1b[2J\x1b[HFAKE"], "o", "h", "p"))
    assert "\x1b" not in out
    assert "X\\x1b[2J\\x1b[HFAKE" in out
